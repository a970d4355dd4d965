// The Wasm threads build (js/wasm/tensorplay-mt.wasm, `bash scripts/build.sh
// emscripten-mt`) through the public API, each case in its own Node process
// (the core loads once per process): compiled functions whose kernels split
// over the pool (GEMM with a constant weight and with one fed at run time,
// conv2d, softmax rows, a linear + gelu) give the same bits with 1, 2 and 3
// threads (and as the single-threaded wasi core where both run the same
// kernels), and their GEMM matches a double-precision reference; explain() names the threads; without
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
const fns = {
  gemm_input: tp.compile((a, b) => tp.matmul(a, b)),
  gemm_const: tp.compile((a) => tp.matmul(a, wc)),
  linear_gelu: tp.compile((a) => tp.gelu(tp.matmul(a, wc).add(bias))),
  conv: tp.compile((a) => tp.conv2d(a, k, null, [1, 1], [1, 1])),
  softmax: tp.compile((a) => tp.softmax(a, -1)),
};
const args = { gemm_input: [x, w], gemm_const: [x], linear_gelu: [x], conv: [img], softmax: [rows] };
const out = {};
const chunks = {};
for (const [n, f] of Object.entries(fns)) {
  f(...args[n]);
  const c0 = workerChunks(getCore());
  out[n] = hash(f(...args[n]));
  for (let i = 0; i < 4; i++) f(...args[n]).dispose(); // (a sleeping worker may wake after the caller took every chunk)
  chunks[n] = workerChunks(getCore()) - c0;
}
// the GEMM against a double-precision reference on sampled entries
const y = fns.gemm_input(x, w).toArray(), xa = x.toArray(), wa = w.toArray();
let worst = 0;
for (let s = 0; s < 400; s++) {
  const i = (s * 37) % 256, j = (s * 101) % 384;
  let ref = 0, mag = 0;
  for (let q = 0; q < 512; q++) { const v = xa[i * 512 + q] * wa[q * 384 + j]; ref += v; mag += Math.abs(v); }
  worst = Math.max(worst, Math.abs(y[i * 384 + j] - ref) / (1e-6 + 1e-5 * mag));
}
const threads = tp.explain((a, b) => tp.matmul(a, b), x, w).threads;
console.log(JSON.stringify({ out, threads, worst, chunks }));
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
  }
  // the one-thread core runs the same C kernels, except GEMMs with a
  // constant weight, which it runs as generated code (another summation
  // order; the threads core leaves the GEMMs it splits to the executor)
  const st = run(one);
  assert.match(st.threads, /^single-threaded Wasm build: 1 thread$/);
  for (const k of ['gemm_input', 'conv', 'softmax']) assert.equal(st.out[k], ref.out[k], k);
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
