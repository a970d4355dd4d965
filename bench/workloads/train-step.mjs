// train-step.mjs - one training step (forward, backward, Adam update)
// in Node, one thread: tensorplay eager autograd and compiled training
// (tp.compile of the loss: AOT autograd, stax compiles the forward and the
// backward graph; the Wasm core) against
// TensorFlow.js 4.22 with its wasm backend (SIMD, no threads;
// optimizer.minimize inside tf.tidy), interleaved sample by sample, both
// starting from the same weights (the first losses must agree: a check
// that both compute the same step; the compiled loss must equal the eager
// one). Our eager and compiled forward passes (under noGrad) are anchors.
// Cases (BENCH_CASES, default "W2 W4"):
//   W2  MLP 64x784-512-512-10, cross-entropy on fixed labels
//   W4  pre-LN encoder block, 128 tokens x 256, 4 heads, FFN 1024 (tanh
//       GELU), MSE against a fixed target
// Prints one JSON object per case (bench/run.sh) and a summary on stderr.
//   node bench/workloads/train-step.mjs [--clock wall|cpu]     BENCH_REPS (21) steps per impl after 3 warm-up
// --clock cpu times by the process's CPU time (user + system) instead of the
// wall clock: on a loaded host it leaves out the time other processes run.
import { readFileSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { register } from 'node:module';
import * as tp from '../../js/index.js';
import { clockOf } from '../lib/model_cache.mjs';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const REPS = Math.max(5, Number(process.env.BENCH_REPS ?? 21));
const CASES = (process.env.BENCH_CASES ?? 'W2 W4').split(/\s+/).filter(Boolean);
// BENCH_PROFILE=1: compile with 'stax.profile' and print both plans' kernel
// tables (slowest first) after the timed steps (times then include the clock reads)
const PROFILE = !!Number(process.env.BENCH_PROFILE ?? 0);
const ci = process.argv.indexOf('--clock');
const now = clockOf(ci > 0 ? process.argv[ci + 1] : 'wall');
const log = (s) => process.stderr.write(s + '\n');
const median = (v) => { const s = [...v].sort((a, b) => a - b); const n = s.length; return n % 2 ? s[n >> 1] : 0.5 * (s[n / 2 - 1] + s[n / 2]); };
const quantile = (v, q) => { const s = [...v].sort((a, b) => a - b); const i = (s.length - 1) * q, lo = Math.floor(i); return s[lo] + (s[Math.min(lo + 1, s.length - 1)] - s[lo]) * (i - lo); };

// ---- the same numbers for both libraries ----
let seed = 1;
const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
const uniform = (n, bound) => Float32Array.from({ length: n }, () => (rnd() * 2 - 1) * bound);

// ---- tfjs-wasm (optional: bench/setup.sh installs it) ----
let tf = null, tfVersion = null;
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
} catch (e) {
  tf = null;
  log(`train-step: tfjs-wasm not available (${e.message}); run bench/setup.sh for the comparison`);
}

/** weights: [{shape, data}] -> tp leaves that require grad, tf variables */
function params(specs) {
  const tpw = specs.map((s) => tp.tensor(s.data, { shape: s.shape }).requiresGrad_());
  const tfw = tf ? specs.map((s) => tf.variable(tf.tensor(s.data, s.shape))) : null;
  return { tpw, tfw };
}

function caseW2() {
  const B = 64, S = [784, 512, 512, 10];
  const specs = [];
  for (let i = 0; i + 1 < S.length; i++) {
    const b = 1 / Math.sqrt(S[i]);
    specs.push({ shape: [S[i + 1], S[i]], data: uniform(S[i] * S[i + 1], b) }, { shape: [S[i + 1]], data: uniform(S[i + 1], b) });
  }
  const xd = uniform(B * S[0], 1), yd = Int32Array.from({ length: B }, () => Math.floor(rnd() * S[3]));
  const { tpw, tfw } = params(specs);
  const x = tp.tensor(xd, { shape: [B, S[0]] }), y = tp.tensor(yd, { dtype: 'int32' });
  const tpLoss = (xin = x) => {
    let h = xin;
    for (let i = 0; i < tpw.length; i += 2) {
      h = tp.linear(h, tpw[i], tpw[i + 1]);
      if (i + 2 < tpw.length) h = tp.relu(h);
    }
    return tp.nn.crossEntropy(h, y);
  };
  let tfLoss = null;
  if (tf) {
    const tx = tf.tensor2d(xd, [B, S[0]]), ty = tf.oneHot(tf.tensor1d(yd, 'int32'), S[3]);
    tfLoss = () => {
      let h = tx;
      for (let i = 0; i < tfw.length; i += 2) {
        h = tf.add(tf.matMul(h, tfw[i], false, true), tfw[i + 1]);
        if (i + 2 < tfw.length) h = tf.relu(h);
      }
      return tf.neg(tf.mean(tf.sum(tf.mul(ty, tf.logSoftmax(h)), 1)));
    };
  }
  return { name: `W2 MLP ${B}x${S.join('-')} training step (cross-entropy, Adam)`, tpw, tfw, tpLoss, tfLoss, x };
}

function caseW4() {
  const S = 128, D = 256, H = 4, Dh = D / H, F = 1024, eps = 1e-5;
  const specs = [];
  const add = (shape, bound, base = 0) => specs.push({ shape, data: uniform(shape.reduce((a, b) => a * b, 1), bound).map((v) => v + base) });
  add([D], 0.1, 1), add([D], 0.1); // ln1 gamma, beta
  for (let i = 0; i < 4; i++) add([D, D], 1 / Math.sqrt(D)), add([D], 0.02); // q k v o
  add([D], 0.1, 1), add([D], 0.1); // ln2
  add([D, F], 1 / Math.sqrt(D)), add([F], 0.02), add([F, D], 1 / Math.sqrt(F)), add([D], 0.02);
  const xd = uniform(S * D, 1), td = uniform(S * D, 1);
  const { tpw, tfw } = params(specs);
  const x = tp.tensor(xd, { shape: [1, S, D] }), target = tp.tensor(td, { shape: [1, S, D] });
  const scale = 1 / Math.sqrt(Dh);
  const tpLoss = (xin = x) => {
    const [g1, b1, Wq, bq, Wk, bk, Wv, bv, Wo, bo, g2, b2, W1, c1, W2, c2] = tpw;
    const a = tp.layerNorm(xin, [D], g1, b1, { eps });
    const heads = (t) => t.reshape(1, S, H, Dh).permute(0, 2, 1, 3);
    const q = heads(tp.matmul(a, Wq).add(bq));
    const kT = tp.matmul(a, Wk).add(bk).reshape(1, S, H, Dh).permute(0, 2, 3, 1);
    const v = heads(tp.matmul(a, Wv).add(bv));
    const p = tp.softmax(tp.matmul(q, kT).mul(scale), -1);
    const o = tp.matmul(p, v).permute(0, 2, 1, 3).reshape(1, S, D);
    const hh = xin.add(tp.matmul(o, Wo).add(bo));
    const cc = tp.layerNorm(hh, [D], g2, b2, { eps });
    const u = tp.gelu(tp.matmul(cc, W1).add(c1), { approximate: 'tanh' });
    return tp.nn.mseLoss(hh.add(tp.matmul(u, W2).add(c2)), target);
  };
  let tfLoss = null;
  if (tf) {
    const tx = tf.tensor3d(xd, [1, S, D]), tt = tf.tensor3d(td, [1, S, D]);
    const ln = (t, g, b) => {
      const { mean, variance } = tf.moments(t, -1, true);
      return tf.add(tf.mul(tf.mul(tf.sub(t, mean), tf.rsqrt(tf.add(variance, eps))), g), b);
    };
    const mm = (t, W) => tf.reshape(tf.matMul(tf.reshape(t, [-1, t.shape[t.shape.length - 1]]), W), [...t.shape.slice(0, -1), W.shape[1]]);
    const gelu = (t) => tf.mul(tf.mul(t, 0.5), tf.add(1, tf.tanh(tf.mul(Math.sqrt(2 / Math.PI), tf.add(t, tf.mul(0.044715, tf.pow(t, 3)))))));
    tfLoss = () => {
      const [g1, b1, Wq, bq, Wk, bk, Wv, bv, Wo, bo, g2, b2, W1, c1, W2, c2] = tfw;
      const a = ln(tx, g1, b1);
      const heads = (t) => tf.transpose(tf.reshape(t, [1, S, H, Dh]), [0, 2, 1, 3]);
      const q = heads(tf.add(mm(a, Wq), bq));
      const kT = tf.transpose(tf.reshape(tf.add(mm(a, Wk), bk), [1, S, H, Dh]), [0, 2, 3, 1]);
      const v = heads(tf.add(mm(a, Wv), bv));
      const p = tf.softmax(tf.mul(tf.matMul(q, kT), scale));
      const o = tf.reshape(tf.transpose(tf.matMul(p, v), [0, 2, 1, 3]), [1, S, D]);
      const hh = tf.add(tx, tf.add(mm(o, Wo), bo));
      const cc = ln(hh, g2, b2);
      const u = gelu(tf.add(mm(cc, W1), c1));
      return tf.mean(tf.square(tf.sub(tf.add(hh, tf.add(mm(u, W2), c2)), tt)));
    };
  }
  return { name: `W4 pre-LN encoder block ${S}x${D}, ${H} heads, FFN ${F} training step (MSE, Adam)`, tpw, tfw, tpLoss, tfLoss, x };
}

for (const which of CASES) {
  const c = which === 'W2' ? caseW2() : which === 'W4' ? caseW4() : null;
  if (!c) throw new Error(`unknown case ${which} (W2, W4)`);
  // the first losses, before any update, must agree
  const l0 = tp.scope(() => tp.noGrad(() => c.tpLoss().item()));
  if (tf) {
    const t0 = tf.tidy(() => c.tfLoss().dataSync()[0]);
    if (!(Math.abs(l0 - t0) <= 1e-3 * (1 + Math.abs(t0)))) throw new Error(`${which}: first losses differ: ours ${l0}, tfjs ${t0}`);
    log(`train-step: ${which}: first loss ours ${l0.toFixed(6)}, tfjs ${t0.toFixed(6)}`);
  }
  const opt = new tp.optim.Adam(c.tpw, { lr: 1e-4 });
  const compiledLoss = tp.compile((xin) => c.tpLoss(xin), { name: `${which}_loss`, ...(PROFILE ? { options: { 'stax.profile': true } } : {}) });
  const compiled = () => compiledLoss(c.x);
  const lc0 = tp.scope(() => {
    const l = compiled();
    if (!l.requiresGrad) throw new Error(`${which}: the compiled loss does not require grad`);
    return l.item();
  });
  if (!(Math.abs(lc0 - l0) <= 1e-4 * (1 + Math.abs(l0)))) throw new Error(`${which}: compiled loss ${lc0} vs eager ${l0}`);
  const impls = {
    'tensorplay eager step': () => tp.scope(() => {
      opt.zeroGrad();
      const loss = c.tpLoss();
      loss.backward();
      opt.step();
      return loss.item();
    }),
    'tensorplay eager forward': () => tp.scope(() => tp.noGrad(() => c.tpLoss().item())),
    'tensorplay compiled step': () => tp.scope(() => {
      opt.zeroGrad();
      const loss = compiled();
      loss.backward();
      opt.step();
      return loss.item();
    }),
    'tensorplay compiled forward': () => tp.scope(() => tp.noGrad(() => compiled().item())),
  };
  if (tf) {
    const tfOpt = tf.train.adam(1e-4);
    impls['tfjs-wasm step'] = () => {
      const l = tf.tidy(() => tfOpt.minimize(c.tfLoss, true));
      const v = l.dataSync()[0];
      l.dispose();
      return v;
    };
  }
  const times = Object.fromEntries(Object.keys(impls).map((k) => [k, []]));
  for (const f of Object.values(impls)) for (let w = 0; w < 3; w++) f();
  for (let r = 0; r < REPS; r++) {
    for (const [name, f] of Object.entries(impls)) {
      const t0 = now();
      f();
      times[name].push(now() - t0);
    }
  }
  // peak memory of one step (tensor storage: parameters, Adam state, the
  // input, gradients, saved tensors, every intermediate; the compiled plans'
  // arenas are added from explain() below)
  const mem = {};
  for (const name of ['tensorplay eager step', 'tensorplay compiled step']) {
    const before = tp.memoryStats({ resetPeak: true }).liveBytes;
    impls[name]();
    mem[name] = { live_before_bytes: before, peak_bytes: tp.memoryStats().peakBytes };
  }
  const rows = Object.entries(times).map(([name, t]) => ({
    name, median_ms: +median(t).toFixed(3), min_ms: +Math.min(...t).toFixed(3),
    p10_ms: +quantile(t, 0.1).toFixed(3), p90_ms: +quantile(t, 0.9).toFixed(3), reps: t.length,
  }));
  console.log(JSON.stringify({ case: `${c.name}, eager and compiled, 1 thread`, isa: tp.isa, reps: REPS, impls: rows, baseline: tf ? 'tfjs-wasm step' : 'tensorplay eager forward',
    versions: { node: process.versions.node, tfjs: tfVersion, isa: tp.isa } }));
  const byName = Object.fromEntries(rows.map((r) => [r.name, r]));
  for (const r of rows) log(`train-step: ${which}: ${r.name}: median ${r.median_ms} ms (p10 ${r.p10_ms}, p90 ${r.p90_ms}, min ${r.min_ms})`);
  const step = byName['tensorplay eager step'].median_ms, fwd = byName['tensorplay eager forward'].median_ms;
  const cstep = byName['tensorplay compiled step'].median_ms, cfwd = byName['tensorplay compiled forward'].median_ms;
  log(`train-step: ${which}: eager step / eager forward = ${(step / fwd).toFixed(2)}x; compiled step / compiled forward = ` +
    `${(cstep / cfwd).toFixed(2)}x; eager step / compiled step = ${(step / cstep).toFixed(2)}x` +
    (tf ? `; tfjs-wasm step / our eager step = ${(byName['tfjs-wasm step'].median_ms / step).toFixed(2)}x, ` +
      `/ our compiled step = ${(byName['tfjs-wasm step'].median_ms / cstep).toFixed(2)}x` : ''));
  const ex = compiledLoss.explain();
  if (ex.eager_for_autograd !== 0 || ex.training.length !== 1) throw new Error(`${which}: the compiled step did not compile for training`);
  const tr = ex.training[0];
  const arenas = (tr.forward_plan?.arena_bytes ?? 0) + (tr.backward_plan?.arena_bytes ?? 0);
  const MB = (b) => (b / 1048576).toFixed(2);
  const em = mem['tensorplay eager step'], cm = mem['tensorplay compiled step'];
  log(`train-step: ${which}: peak memory of a step (tensor storage): eager ${MB(em.peak_bytes)} MB ` +
    `(${MB(em.peak_bytes - em.live_before_bytes)} MB above the ${MB(em.live_before_bytes)} MB live before), compiled ` +
    `${MB(cm.peak_bytes)} MB (${MB(cm.peak_bytes - cm.live_before_bytes)} MB above) + ${MB(arenas)} MB of plan arenas ` +
    `= ${MB(cm.peak_bytes + arenas)} MB`);
  console.log(JSON.stringify({ case: `${which} peak memory of a step`, eager: em, compiled: { ...cm, plan_arena_bytes: arenas } }));
  log(`train-step: ${which}: compiled: forward ${tr.forward_ops} ops, backward ${tr.backward_ops} ops, ${tr.saved.length} saved, ` +
    `${tr.recomputed.length} recomputed; kernels forward ${tr.forward_plan?.kernels} (gemm ${tr.forward_plan?.gemm}), ` +
    `backward ${tr.backward_plan?.kernels} (gemm ${tr.backward_plan?.gemm})`);
  if (PROFILE) {
    for (const k of ['forward_profile', 'backward_profile']) log(`train-step: ${which}: ${k}:\n${tr[k]}`);
  }
  compiledLoss.dispose();
  opt.dispose();
  for (const t of c.tpw) t.dispose();
  if (c.tfw) for (const v of c.tfw) v.dispose();
}
