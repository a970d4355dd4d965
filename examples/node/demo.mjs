// examples/node/demo.mjs - a small MLP run eagerly and compiled in Node.
// Writes build/demo/mlp.tpg (graph text with data), x.npy (the input) and
// y_node.npy (the output) so examples/cli/demo.sh can run the same graph
// natively with tpc and compare.
//
//   node examples/node/demo.mjs [--runs N] [--backend stax|eager|reference]
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import * as tp from '../../js/index.js';

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : dflt;
};
const RUNS = Number(opt('runs', 20));
const BACKEND = opt('backend', 'stax'); // the default backend
const outDir = fileURLToPath(new URL('../../build/demo/', import.meta.url));

// Parameters: 784 -> 512 -> 10, weights scaled by 1/sqrt(fan_in).
const x = tp.randn([64, 784], { seed: 1 });
const w1 = tp.scope(() => tp.randn([512, 784], { seed: 2 }).mul(1 / Math.sqrt(784)));
const b1 = tp.zeros([512]);
const w2 = tp.scope(() => tp.randn([10, 512], { seed: 3 }).mul(1 / Math.sqrt(512)));
const b2 = tp.full([10], 0.1);

function mlp(x) {
  const h = tp.relu(tp.linear(x, w1, b1));
  return tp.linear(h, w2, b2);
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[s.length >> 1];
}

function time(fn) {
  const ms = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    tp.scope(() => {
      fn();
    });
    ms.push(performance.now() - t0);
  }
  return median(ms);
}

console.log(`tensorplay-wasm ${tp.version} (${tp.isa}), backend ${BACKEND}`);

const yEager = tp.scope(() => mlp(x));
const g = tp.compiler.compile(mlp, { backend: BACKEND, name: 'mlp' });
const t0 = performance.now();
const yComp = g(x);
const firstMs = performance.now() - t0;

const a = yEager.toArray();
const c = yComp.toArray();
let maxDiff = 0;
for (let i = 0; i < a.length; i++) maxDiff = Math.max(maxDiff, Math.abs(a[i] - c[i]));
const fmt = (v) => Array.from(v.slice(0, 5), (n) => n.toFixed(5)).join(', ');
console.log(`output shape [${yComp.shape.join(', ')}]`);
console.log(`eager    y[0, :5] = ${fmt(a)}`);
console.log(`compiled y[0, :5] = ${fmt(c)}`);
console.log(`max |eager - compiled| = ${maxDiff.toExponential(3)}`);

const eagerMs = time(() => mlp(x));
const compMs = time(() => g(x));
console.log(`first compiled call (capture, which computes the result, + lowering + code generation): ${firstMs.toFixed(2)} ms`);
console.log(`median of ${RUNS} runs: eager ${eagerMs.toFixed(2)} ms, compiled (${BACKEND}) ${compMs.toFixed(2)} ms; captures: ${g.numCaptures}`);
const report = g.explain();
console.log(`explain: ${report.graphs.length} graph(s), ${report.graphs[0]?.ops} ops, backend ${report.backend}`);

const text = g.graph({ withData: true });
await mkdir(outDir, { recursive: true });
if (text) {
  await writeFile(`${outDir}mlp.tpg`, text);
} else {
  console.log('no graph captured (graph break?); mlp.tpg not written');
}
await writeFile(`${outDir}x.npy`, tp.npy.encode(x));
await writeFile(`${outDir}y_node.npy`, tp.npy.encode(yComp));
console.log(`wrote ${outDir}mlp.tpg, x.npy, y_node.npy`);

for (const t of [x, w1, b1, w2, b2, yEager, yComp]) t.dispose();
g.dispose();
if (maxDiff > 1e-3) {
  console.error('demo: eager and compiled outputs differ');
  process.exit(1);
}
