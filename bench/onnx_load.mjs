// onnx_load.mjs - cold-path timing of an ONNX model in Node (the Wasm core):
// tp.onnx.load (import) + stax compile + first run (tp.compile is lazy: the
// first call traces, lowers, generates the Wasm kernels and runs), and the
// eager first run, each repetition on a fresh load; prints every repetition
// and the medians. The Wasm core itself is loaded once, before timing.
//
//   node bench/onnx_load.mjs [MODEL.onnx] [--reps N] [--no-cache]   (default: ultraface-rfb-320, 5)
//
// --no-cache sets tp.config.forceDisableCaches, so every repetition also
// compiles the generated Wasm modules in the engine (otherwise repetitions
// after the first reuse them from jit.js's cache, keyed by their bytes).
// Repetition 0 of a fresh process also pays V8's first compile and tier-up
// of the core's own code; run the script several times with --reps 1 for
// the cold-process figure.
//   TP_WASM=build/emscripten/tensorplay.wasm node bench/onnx_load.mjs
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import * as tp from '../js/index.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
let reps = 5, path = join(root, '..', 'shared', 'conformance', 'models', 'ultraface-rfb-320', 'model.onnx');
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--reps') reps = Number(args[++i]);
  else if (args[i] === '--no-cache') tp.config.forceDisableCaches = true;
  else path = args[i];
}
if (!(reps >= 1)) throw new Error('--reps expects a positive number');
const bytes = readFileSync(path); // file read outside the timing, as in tpc bench (which times the import only)
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const rows = [];
for (let r = 0; r < reps; r++) {
  const t0 = performance.now();
  const model = tp.onnx.load(bytes);
  const t1 = performance.now();
  const f = tp.compile((...xs) => model.run(xs), { backend: 'stax', name: 'onnx_bench' });
  const shapes = inputShapes(model);
  const xs = shapes.map((s, i) => tp.randn(s, { seed: i + 1 }));
  const t2 = performance.now();
  const out = [f(...xs)].flat();
  const t3 = performance.now();
  const eo = model.run(xs);
  const t4 = performance.now();
  for (const t of [...xs, ...out, ...eo]) t.dispose();
  f.dispose();
  model.dispose();
  rows.push({ load: t1 - t0, compileRun: t3 - t2, total: t1 - t0 + t3 - t2, eagerFirst: t4 - t3 });
  console.log(`rep ${r}: load ${(t1 - t0).toFixed(1)} ms, stax compile + first run ${(t3 - t2).toFixed(1)} ms, ` +
    `total ${(t1 - t0 + t3 - t2).toFixed(1)} ms (eager run ${(t4 - t3).toFixed(1)} ms)`);
}
const m = (k) => median(rows.map((x) => x[k])).toFixed(1);
console.log(`${path}: median of ${reps}${tp.config.forceDisableCaches ? ', caches off' : ''} (core ${process.env.TP_WASM || 'js/wasm/tensorplay.wasm'}, isa ${tp.isa}): ` +
  `load ${m('load')} ms + stax compile and first run ${m('compileRun')} ms = ${m('total')} ms; eager run ${m('eagerFirst')} ms`);

// The declared input shapes: from the graph text's placeholders.
function inputShapes(model) {
  const text = model.graph.print();
  return [...text.matchAll(/^%\S+ = placeholder : \w+\[([\d,]*)\]/gm)].map((mm) => mm[1] ? mm[1].split(',').map(Number) : []);
}
