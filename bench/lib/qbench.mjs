// bench/lib/qbench.mjs - what bench/qmodels.mjs (the quantized W4 block) and
// bench/qconvnet.mjs (the QDQ conv net) share: one model file per variant
// run by ours (the Wasm core in Node, stax), onnxruntime-web (wasm EP,
// SIMD, 1 thread) and onnxruntime-node (1 intra-op thread) in one process;
// the samples interleaved round by round after 3 warm-up rounds; medians,
// min and max per configuration; accuracy of each output against another.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import * as tp from '../../js/index.js';
import { clockOf } from './model_cache.mjs';
import * as ortWeb from 'onnxruntime-web';

const require = createRequire(import.meta.url);
const ortNode = require('onnxruntime-node');
const ROOT = join(dirname(new URL(import.meta.url).pathname), '..', '..');
ortWeb.env.wasm.numThreads = 1;
ortWeb.env.wasm.simd = true;
ortWeb.env.wasm.proxy = false;
ortWeb.env.wasm.wasmPaths = join(ROOT, 'node_modules', 'onnxruntime-web') + '/dist/';

export const median = (v) => { const s = [...v].sort((a, b) => a - b); const n = s.length; return n % 2 ? s[n >> 1] : 0.5 * (s[n / 2 - 1] + s[n / 2]); };
export const maxAbs = (a, b) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);
export const rms = (a) => Math.sqrt(a.reduce((s, v) => s + v * v, 0) / a.length);

/* files: { variant: ONNX bytes } with one float32 input `input` of dims and
 * one output `output`: runners ours-<v>, ortweb-<v>, ortnode-<v>, each
 * returning the output's data (ours copied out of the core, as a user reads it). */
export async function makeRunners(files, input, output, xData, dims) {
  const runners = {};
  const opts = { graphOptimizationLevel: 'all', executionMode: 'sequential', intraOpNumThreads: 1, interOpNumThreads: 1 };
  for (const [k, bytes] of Object.entries(files)) {
    const m = tp.onnx.load(bytes, { backend: 'stax' });
    const x = tp.tensor(xData, { shape: dims });
    runners[`ours-${k}`] = () => { const y = m.run({ [input]: x })[output]; const a = y.toArray(); y.dispose(); return a; };
    const sw = await ortWeb.InferenceSession.create(bytes, { executionProviders: ['wasm'], ...opts });
    const xw = new ortWeb.Tensor('float32', xData, dims);
    runners[`ortweb-${k}`] = async () => (await sw.run({ [input]: xw }))[output].data;
    const sn = await ortNode.InferenceSession.create(bytes, opts);
    const xn = new ortNode.Tensor('float32', xData, dims);
    runners[`ortnode-${k}`] = async () => (await sn.run({ [input]: xn }))[output].data;
  }
  return runners;
}

export async function firstOutputs(runners) {
  const outs = {};
  for (const [k, f] of Object.entries(runners)) outs[k] = Float32Array.from(await f());
  return outs;
}

/* rounds (after 3 warm-up rounds), each configuration once per round: { config: { median, min, max } }.
 * BENCH_CLOCK=cpu times each call by the process's CPU time (model_cache.mjs's clockOf: on a
 * shared machine the time this process computed, onnxruntime-node's one intra-op thread
 * included), else the wall clock. */
export async function timeRounds(runners, rounds) {
  const now = clockOf(process.env.BENCH_CLOCK || 'wall');
  const times = Object.fromEntries(Object.keys(runners).map((k) => [k, []]));
  for (let r = -3; r < rounds; r++) {
    for (const [k, f] of Object.entries(runners)) {
      const t0 = now();
      await f();
      const t1 = now();
      if (r >= 0) times[k].push(t1 - t0);
    }
  }
  return Object.fromEntries(Object.entries(times).map(([k, v]) => [k, { median: median(v), min: Math.min(...v), max: Math.max(...v) }]));
}

/* the quantized model against its float32 original and both against onnxruntime-node's outputs */
export function accuracy(outs, extra = {}) {
  return {
    'ours-q8 vs ours-f32 (quantization error)': maxAbs(outs['ours-q8'], outs['ours-f32']),
    'ort-node-q8 vs ort-node-f32 (its quantization error)': maxAbs(outs['ortnode-q8'], outs['ortnode-f32']),
    'ours-q8 vs ort-node-q8': maxAbs(outs['ours-q8'], outs['ortnode-q8']),
    'ours-f32 vs ort-node-f32': maxAbs(outs['ours-f32'], outs['ortnode-f32']),
    ...extra,
    'rms of the f32 output': rms(outs['ours-f32']),
  };
}

export function report(title, stats, acc, rounds) {
  console.log(`${title}; ${rounds} rounds, isa ${tp.isa}`);
  console.log('config          median ms   min ms   max ms');
  for (const [k, s] of Object.entries(stats)) console.log(`${k.padEnd(15)} ${s.median.toFixed(3).padStart(9)} ${s.min.toFixed(3).padStart(8)} ${s.max.toFixed(3).padStart(8)}`);
  const ratio = (a, b) => (stats[b].median / stats[a].median).toFixed(2);
  console.log(`speedup of ours-q8: vs ort-web-q8 ${ratio('ours-q8', 'ortweb-q8')}x, vs ort-node-q8 ${ratio('ours-q8', 'ortnode-q8')}x, vs ours-f32 ${ratio('ours-q8', 'ours-f32')}x`);
  console.log(`speedup of ours-f32: vs ort-web-f32 ${ratio('ours-f32', 'ortweb-f32')}x, vs ort-node-f32 ${ratio('ours-f32', 'ortnode-f32')}x`);
  for (const [k, v] of Object.entries(acc)) console.log(`accuracy: ${k}: ${v.toExponential(3)}`);
  console.log(JSON.stringify({ rounds, stats, accuracy: acc }));
}
