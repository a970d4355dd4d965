// The Wasm threads build (js/wasm/tensorplay-mt.wasm, `bash scripts/build.sh
// emscripten-mt`) through the public API, each case in its own Node process
// (the core loads once per process): compiled functions whose kernels split
// over the pool (GEMM with a constant weight and with one fed at run time,
// conv2d, softmax and layer_norm rows, a pointwise chain, a linear + gelu,
// attention over 4 heads (batched GEMMs over run-time operands, checked
// against a double-precision reference too), and bench/lib/models_wasm_defs.mjs's
// W1 (at 256 x 384 x 512), W2 and W4, whose constant-weight GEMMs are
// generated code split over the workers) give the same bits with 1, 2 and 3
// threads and as the single-threaded wasi core, and their GEMM matches a
// double-precision reference; the workers ran chunks of the generated GEMMs
// and of the generated row and pointwise kernels (the module installed in
// their tables); a worker that traps fails its
// call with an error naming it and leaves the runtime on one thread with
// the same results; explain() names the threads; without
// SharedArrayBuffer a threads request falls back to the one-thread core and
// explain() says why; loading the threads core there fails naming the
// reason.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('../..', import.meta.url));
const MT = `${repo}js/wasm/tensorplay-mt.wasm`;
const haveMt = existsSync(MT);
const skip = haveMt ? false : 'js/wasm/tensorplay-mt.wasm is not built (bash scripts/build.sh emscripten-mt)';

// Prints {hashes, explain threads, worst GEMM error over its bound}.
const CHILD = `
const tp = await import(${JSON.stringify(`${repo}js/index.js`)});
if (process.env.CHILD_THREADS) tp.config.threads = Number(process.env.CHILD_THREADS);
const { getCore } = await import(${JSON.stringify(`${repo}js/src/tensor.js`)});
const { workerChunks } = await import(${JSON.stringify(`${repo}js/src/threads.js`)});
const hash = (t) => { const u = new Uint32Array(t.toArray().buffer); let h = 2166136261; for (const x of u) h = Math.imul(h ^ x, 16777619) >>> 0; return h; };
const x = tp.randn([256, 512], { seed: 1 }), w = tp.randn([512, 384], { seed: 2 }), wc = tp.randn([512, 384], { seed: 3 });
const img = tp.randn([1, 16, 64, 64], { seed: 4 }), k = tp.randn([32, 16, 3, 3], { seed: 5 }), rows = tp.randn([512, 1024], { seed: 6 });
const bias = tp.randn([384], { seed: 7 });
const q = tp.randn([1, 4, 128, 64], { seed: 8 }), kT = tp.randn([1, 4, 64, 128], { seed: 9 }), v = tp.randn([1, 4, 128, 64], { seed: 10 });
const D = await import(${JSON.stringify(`${repo}bench/lib/models_wasm_defs.mjs`)});
const W = { W1: D.makeW1(tp, 256, 384, 512), W2: D.makeW2(tp), W4: D.makeW4(tp) };
const fns = {
  gemm_input: tp.compile((a, b) => tp.matmul(a, b)),
  gemm_const: tp.compile((a) => tp.matmul(a, wc)),
  linear_gelu: tp.compile((a) => tp.gelu(tp.matmul(a, wc).add(bias))),
  conv: tp.compile((a) => tp.conv2d(a, k, null, [1, 1], [1, 1])),
  softmax: tp.compile((a) => tp.softmax(a, -1)),
  pointwise: tp.compile((a) => tp.tanh(a.mul(a)).sub(a)),
  layer_norm: tp.compile((a) => tp.layerNorm(a, [1024])),
  attention: tp.compile((a, b, c) => tp.matmul(tp.softmax(tp.matmul(a, b).mul(0.125), -1), c)),
  W1: tp.compile((a) => W.W1.f(a)),
  W2: tp.compile((a) => W.W2.f(a)),
  W4: tp.compile((a) => W.W4.f(a)),
};
const args = { gemm_input: [x, w], gemm_const: [x], linear_gelu: [x], conv: [img], softmax: [rows], pointwise: [rows], layer_norm: [rows], attention: [q, kT, v], W1: [W.W1.x], W2: [W.W2.x], W4: [W.W4.x] };
const out = {};
const chunks = {};
for (const [n, f] of Object.entries(fns)) {
  f(...args[n]);
  const c0 = workerChunks(getCore());
  out[n] = hash(f(...args[n]));
  for (let i = 0; i < 4; i++) f(...args[n]).dispose(); // (a sleeping worker may wake after the caller took every chunk)
  chunks[n] = workerChunks(getCore()) - c0;
}
// the generated GEMMs' chunks reached a worker (a busy machine may leave
// a call's chunks to the caller: up to 200 calls)
let genChunks = 0;
for (let i = 0; i < 200 && genChunks === 0; i++) {
  const c0 = workerChunks(getCore());
  fns.gemm_const(x).dispose();
  genChunks = workerChunks(getCore()) - c0;
}
const genGemm = tp.explain((a) => tp.matmul(a, wc), x).backend_plans[0].generated;
// the generated row kernel (softmax) and pointwise kernel split their rows
// over the workers too (split_rows: the pointwise one viewed as rows)
const mapChunks = {};
for (const n of ['softmax', 'pointwise']) {
  mapChunks[n] = 0;
  for (let i = 0; i < 200 && mapChunks[n] === 0; i++) {
    const c0 = workerChunks(getCore());
    fns[n](rows).dispose();
    mapChunks[n] = workerChunks(getCore()) - c0;
  }
}
const genMap = tp.explain((a) => tp.tanh(a.mul(a)).sub(a), rows).backend_plans[0].generated;
// the GEMM against a double-precision reference on sampled entries
const y = fns.gemm_input(x, w).toArray(), xa = x.toArray(), wa = w.toArray();
let worst = 0;
for (let s = 0; s < 400; s++) {
  const i = (s * 37) % 256, j = (s * 101) % 384;
  let ref = 0, mag = 0;
  for (let q = 0; q < 512; q++) { const v = xa[i * 512 + q] * wa[q * 384 + j]; ref += v; mag += Math.abs(v); }
  worst = Math.max(worst, Math.abs(y[i * 384 + j] - ref) / (1e-6 + 1e-5 * mag));
}
// attention (batched GEMMs over run-time operands, split by heads) against
// a double-precision reference on sampled rows
const att = fns.attention(q, kT, v).toArray(), qa = q.toArray(), ka = kT.toArray(), va = v.toArray();
let attWorst = 0;
for (let s = 0; s < 24; s++) {
  const h = s % 4, i = (s * 53) % 128, sc = new Float64Array(128);
  let mx = -Infinity, den = 0;
  for (let j = 0; j < 128; j++) {
    let d = 0;
    for (let c = 0; c < 64; c++) d += qa[(h * 128 + i) * 64 + c] * ka[(h * 64 + c) * 128 + j];
    sc[j] = d * 0.125, mx = Math.max(mx, sc[j]);
  }
  for (let j = 0; j < 128; j++) den += (sc[j] = Math.exp(sc[j] - mx));
  for (let c = 0; c < 64; c++) {
    let ref = 0, mag = 0;
    for (let j = 0; j < 128; j++) { const t = (sc[j] / den) * va[(h * 128 + j) * 64 + c]; ref += t; mag += Math.abs(t); }
    attWorst = Math.max(attWorst, Math.abs(att[(h * 128 + i) * 64 + c] - ref) / (1e-6 + 1e-4 * mag));
  }
}
const threads = tp.explain((a, b) => tp.matmul(a, b), x, w).threads;
console.log(JSON.stringify({ out, threads, worst, attWorst, chunks, genChunks, genGemm, mapChunks, genMap }));
process.exit(0);
`;

function run(env, pre = '') {
  const e = { ...process.env, ...env };
  for (const k of Object.keys(e)) if (e[k] === undefined) delete e[k];
  const text = execFileSync(process.execPath, ['--input-type=module', '-e', pre + CHILD], { env: e, encoding: 'utf8' });
  return JSON.parse(text.trim().split('\n').pop());
}

const one = { TP_WASM: undefined, TP_WASM_THREADS: undefined, CHILD_THREADS: undefined };

test('the threads core gives the same bits with 1, 2 and 3 threads', { skip }, () => {
  const ref = run({ TP_WASM: MT, TP_WASM_THREADS: '2', CHILD_THREADS: '1' });
  assert.equal(ref.threads, 'Wasm threads: 1 thread (config.threads; 1 worker running)');
  assert.ok(ref.worst <= 1, `one-thread GEMM error ${ref.worst} x the bound`);
  assert.ok(ref.attWorst <= 1, `one-thread attention error ${ref.attWorst} x the bound`);
  for (const k of Object.keys(ref.chunks)) assert.equal(ref.chunks[k], 0, `${k} ran on a worker with config.threads = 1`);
  for (const n of ['2', '3']) {
    const r = run({ TP_WASM: MT, TP_WASM_THREADS: n, CHILD_THREADS: undefined });
    assert.equal(r.threads, `Wasm threads: ${n} threads (workers; ${n - 1} worker${n === '2' ? '' : 's'} running)`);
    assert.deepEqual(r.out, ref.out, `${n} threads`);
    // the workers ran part of the work (the bits alone would not show it).
    // Not per kernel: a worker the OS does not schedule in time (a busy
    // machine) leaves a kernel's chunks to the caller, which is correct
    const total = Object.values(r.chunks).reduce((a, b) => a + b, 0);
    assert.ok(total > 0, `no chunk ran on a worker with ${n} threads: ${JSON.stringify(r.chunks)}`);
    assert.ok(r.worst <= 1, `GEMM error ${r.worst} x the bound`);
    assert.ok(r.attWorst <= 1, `attention error ${r.attWorst} x the bound`);
    // the constant-weight GEMM is generated code, and its panels ran on a worker
    assert.equal(r.genGemm, 1, 'the constant-weight GEMM is generated code on the threads core');
    assert.ok(r.genChunks > 0, `no chunk of the generated GEMM ran on a worker with ${n} threads`);
    assert.equal(r.genMap, 1, 'the pointwise chain is one generated kernel');
    for (const k of ['softmax', 'pointwise'])
      assert.ok(r.mapChunks[k] > 0, `no row of the generated ${k} kernel ran on a worker with ${n} threads`);
  }
  assert.equal(ref.genChunks, 0);
  // the one-thread core runs the same kernels (generated GEMMs included):
  // the same bits
  const st = run(one);
  assert.match(st.threads, /^single-threaded Wasm build: 1 thread$/);
  assert.deepEqual(st.out, ref.out);
});

// A worker that traps in a chunk: the call fails naming it, the pool is off
// from then on (explain() says so) and later calls give the right bits on
// the calling thread. The trap: the worker's table loses the generated
// GEMM's slots (an unload posted to it alone, as jit.js would post one), so
// its next chunk calls a null table entry.
const TRAP = `
const tp = await import(${JSON.stringify(`${repo}js/index.js`)});
const { getCore } = await import(${JSON.stringify(`${repo}js/src/tensor.js`)});
const { workerChunks } = await import(${JSON.stringify(`${repo}js/src/threads.js`)});
const hash = (t) => { const u = new Uint32Array(t.toArray().buffer); let h = 2166136261; for (const x of u) h = Math.imul(h ^ x, 16777619) >>> 0; return h; };
const x = tp.randn([256, 512], { seed: 1 }), wc = tp.randn([512, 384], { seed: 3 });
const img = tp.randn([1, 16, 64, 64], { seed: 4 }), k = tp.randn([32, 16, 3, 3], { seed: 5 });
const f = tp.compile((a) => tp.matmul(a, wc)), conv = tp.compile((a) => tp.conv2d(a, k, null, [1, 1], [1, 1]));
const want = hash(f(x)), wantConv = hash(conv(img));
const core = getCore();
const gen = (core.exports.tpw_pool_jit_gen() + 1) | 0;
for (const w of core.poolWorkers) for (const m of core.jitLive.values()) w.postMessage({ unload: { base: m.base, n: m.n }, gen });
core.exports.tpw_pool_jit_published();
await new Promise((r) => setTimeout(r, 50)); // the workers take the message
let error = null, calls = 0;
for (; calls < 200 && !error; calls++) {
  try { f(x).dispose(); } catch (e) { error = e.message; }
}
// the worker's report reaches the main thread (explain() names its error)
let threads = '';
for (let i = 0; i < 500 && !threads.includes('(pool worker 1 trapped ('); i++) {
  await new Promise((r) => setTimeout(r, 10));
  threads = tp.explain((a) => tp.matmul(a, wc), x).threads;
}
const c0 = workerChunks(core);
const after = hash(f(x)), afterConv = hash(conv(img));
console.log(JSON.stringify({ error, calls, threads, same: after === want, sameConv: afterConv === wantConv, chunksAfter: workerChunks(core) - c0 }));
process.exit(0);
`;

test('a worker that traps fails its call with a clear error and leaves the runtime on one thread', { skip }, () => {
  const text = execFileSync(process.execPath, ['--input-type=module', '-e', TRAP],
    { env: { ...process.env, TP_WASM: MT, TP_WASM_THREADS: '2' }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const r = JSON.parse(text.trim().split('\n').pop());
  assert.match(String(r.error), /pool worker 1 trapped while running a chunk of this call's parallel work .*the runtime goes on with 1 thread/);
  assert.match(r.threads, /^Wasm threads: 1 thread \(a pool worker trapped; every call runs on the calling thread\) \(pool worker 1 trapped \(/);
  assert.ok(r.same, 'the generated GEMM after the trap');
  assert.ok(r.sameConv, 'the executor\'s conv2d after the trap');
  assert.equal(r.chunksAfter, 0, 'no chunk reaches a worker after the trap');
});

test('without SharedArrayBuffer a threads request runs on the one-thread core and explain() says so', () => {
  const r = run({ TP_WASM: undefined, TP_WASM_THREADS: '2' }, 'delete globalThis.SharedArrayBuffer;\n');
  assert.match(r.threads, /^single-threaded Wasm build: 1 thread \(threads requested, but SharedArrayBuffer is unavailable/);
  assert.ok(r.worst <= 1);
});

test('loading the threads core without SharedArrayBuffer fails naming the reason', { skip }, () => {
  assert.throws(() => run({ TP_WASM: MT, TP_WASM_THREADS: undefined }, 'delete globalThis.SharedArrayBuffer;\n'),
    /this core is the Wasm threads build, which cannot run here: SharedArrayBuffer is unavailable/);
});

test('a bad thread count is an error naming it', { skip }, () => {
  assert.throws(() => run({ TP_WASM: MT, TP_WASM_THREADS: 'lots' }),
    /threads=lots is not a thread count: give a whole number from 1 to 256/);
});
