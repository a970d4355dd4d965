// train-step.mjs - one eager training step (forward, backward, Adam update)
// of the W2 MLP (64x784-512-512-10, cross-entropy on random labels) in
// Node, one thread: tensorplay eager autograd (the Wasm core) against
// TensorFlow.js 4.22 with its wasm backend (SIMD, no threads: tf.variableGrads
// + tf.train.adam inside tf.tidy), interleaved sample by sample; our eager
// forward pass alone is the anchor the ratios are read against. Prints one
// JSON object (bench/run.sh) and a readable summary on stderr.
//   node bench/workloads/train-step.mjs        BENCH_REPS (21) steps per impl after 3 warm-up
// Compiled training (AOT autograd) is not built yet: no "stax" row.
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { register } from 'node:module';
import * as tp from '../../js/index.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const REPS = Math.max(5, Number(process.env.BENCH_REPS ?? 21));
const log = (s) => process.stderr.write(s + '\n');
const median = (v) => { const s = [...v].sort((a, b) => a - b); const n = s.length; return n % 2 ? s[n >> 1] : 0.5 * (s[n / 2 - 1] + s[n / 2]); };
const quantile = (v, q) => { const s = [...v].sort((a, b) => a - b); const i = (s.length - 1) * q, lo = Math.floor(i); return s[lo] + (s[Math.min(lo + 1, s.length - 1)] - s[lo]) * (i - lo); };
const B = 64, SIZES = [784, 512, 512, 10];

// ---- data (the same numbers for both libraries) ----
let seed = 1;
const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
const xData = Float32Array.from({ length: B * SIZES[0] }, () => rnd() * 2 - 1);
const yData = Int32Array.from({ length: B }, () => Math.floor(rnd() * SIZES[3]));

// ---- tensorplay eager ----
const model = tp.nn.mlp(SIZES, { seed: 3 });
const opt = new tp.optim.Adam(model, { lr: 1e-3 });
const x = tp.tensor(xData, { shape: [B, SIZES[0]] }), y = tp.tensor(yData, { dtype: 'int32' });
const tpStep = () => tp.scope(() => {
  opt.zeroGrad();
  const loss = tp.nn.crossEntropy(model.forward(x), y);
  loss.backward();
  opt.step();
  return loss.item();
});
const tpForward = () => tp.scope(() => tp.noGrad(() => tp.nn.crossEntropy(model.forward(x), y).item()));

// ---- tfjs-wasm (optional: bench/setup.sh installs it) ----
let tf = null, tfStep = null, tfVersion = null;
try {
  tf = await import('@tensorflow/tfjs-core');
  // tfjs-core's node bundle has no gradients: register them from its ESM dist files
  register(new URL('../lib/esm_ext_hook.mjs', import.meta.url));
  await import('@tensorflow/tfjs-core/dist/register_all_gradients.js');
  const { setWasmPaths } = await import('@tensorflow/tfjs-backend-wasm');
  setWasmPaths(join(ROOT, 'node_modules', '@tensorflow', 'tfjs-backend-wasm', 'dist') + '/');
  tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', false);
  if (!(await tf.setBackend('wasm'))) throw new Error('setBackend("wasm") failed');
  await tf.ready();
  tfVersion = JSON.parse(readFileSync(join(ROOT, 'node_modules', '@tensorflow', 'tfjs-backend-wasm', 'package.json'), 'utf8')).version;
  const vars = [];
  for (let i = 0; i + 1 < SIZES.length; i++) {
    const bound = 1 / Math.sqrt(SIZES[i]);
    vars.push(tf.variable(tf.randomUniform([SIZES[i], SIZES[i + 1]], -bound, bound, 'float32', 10 + i)));
    vars.push(tf.variable(tf.randomUniform([SIZES[i + 1]], -bound, bound, 'float32', 20 + i)));
  }
  const tx = tf.tensor2d(xData, [B, SIZES[0]]), ty = tf.oneHot(tf.tensor1d(yData, 'int32'), SIZES[3]);
  const tfOpt = tf.train.adam(1e-3);
  const lossFn = () => {
    let h = tx;
    for (let i = 0; i < vars.length; i += 2) {
      h = tf.add(tf.matMul(h, vars[i]), vars[i + 1]);
      if (i + 2 < vars.length) h = tf.relu(h);
    }
    return tf.neg(tf.mean(tf.sum(tf.mul(ty, tf.logSoftmax(h)), 1)));
  };
  tfStep = () => {
    const l = tf.tidy(() => tfOpt.minimize(lossFn, true));
    const v = l.dataSync()[0];
    l.dispose();
    return v;
  };
} catch (e) {
  log(`train-step: tfjs-wasm not available (${e.message}); run bench/setup.sh for the comparison`);
}

const impls = { 'tensorplay eager step': tpStep, 'tensorplay eager forward': tpForward };
if (tfStep) impls['tfjs-wasm step'] = tfStep;
const times = Object.fromEntries(Object.keys(impls).map((k) => [k, []]));
for (const f of Object.values(impls)) for (let w = 0; w < 3; w++) f();
for (let r = 0; r < REPS; r++) {
  for (const [name, f] of Object.entries(impls)) {
    const t0 = performance.now();
    f();
    times[name].push(performance.now() - t0);
  }
}
const rows = Object.entries(times).map(([name, t]) => ({
  name, median_ms: +median(t).toFixed(3), min_ms: +Math.min(...t).toFixed(3),
  p10_ms: +quantile(t, 0.1).toFixed(3), p90_ms: +quantile(t, 0.9).toFixed(3), reps: t.length,
}));
const caseName = `W2 MLP ${B}x${SIZES.join('-')} training step (cross-entropy, Adam), eager, 1 thread`;
console.log(JSON.stringify({ case: caseName, impls: rows, baseline: tfStep ? 'tfjs-wasm step' : 'tensorplay eager forward',
  versions: { node: process.versions.node, tfjs: tfVersion, isa: tp.isa } }));
const byName = Object.fromEntries(rows.map((r) => [r.name, r]));
for (const r of rows) log(`train-step: ${r.name}: median ${r.median_ms} ms (p10 ${r.p10_ms}, p90 ${r.p90_ms}, min ${r.min_ms})`);
const step = byName['tensorplay eager step'].median_ms, fwd = byName['tensorplay eager forward'].median_ms;
log(`train-step: our step / our forward = ${(step / fwd).toFixed(2)}x` +
  (tfStep ? `; tfjs-wasm step / our step = ${(byName['tfjs-wasm step'].median_ms / step).toFixed(2)}x` : ''));
