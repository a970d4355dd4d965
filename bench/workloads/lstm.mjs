// bench/workloads/lstm.mjs - a larger recurrent layer than the VAD's: one
// ONNX LSTM (forward, biases, initial states; W, R, B initializers as a
// trained model ships them) at hidden 128 and 256, 100 steps, batch 1 and
// 8, input size = hidden; in Node with one thread: tensorplay (stax and
// eager; tp.onnx.load) against onnxruntime-web (wasm, numThreads 1) and
// onnxruntime-node (intraOpNumThreads 1), same inputs, runtimes taking
// turns in REPS rounds of CALLS calls (after one warm-up round). Each call is end to end (a JS
// Float32Array in, Y read back into a JS typed array). Per case and
// runtime: the median per-call time over every call after the first of
// each round, with the spread of the rounds' medians (min-max); the
// outputs are checked against onnxruntime-node once per runtime
// (|err| <= 1e-4 + 1e-3 |ref|). One JSON line per case, then a table.
//
//   node bench/workloads/lstm.mjs [--calls N] [--reps R] [--case h128b1,h256b8,...]
import * as tp from '../../js/index.js';
import * as ortw from 'onnxruntime-web';
import * as ortn from 'onnxruntime-node';
import { makeModel } from '../../tests/js/_onnx_pb.mjs';

const argv = process.argv.slice(2);
const arg = (k, d) => (argv.includes(k) ? argv[argv.indexOf(k) + 1] : d);
const CALLS = Number(arg('--calls', 10)), REPS = Number(arg('--reps', 3)), ONLY = arg('--case', null);
ortw.env.wasm.numThreads = 1;
const S = 100;
const CASES = [[128, 1], [128, 8], [256, 1], [256, 8]].filter(([h, b]) => !ONLY || ONLY.split(',').includes(`h${h}b${b}`));

const rng = (seed) => () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32) * 2 - 1;
function model(H, N) {
  const r = rng(H + N), fill = (n, s) => Float32Array.from({ length: n }, () => r() * s), I = H;
  const k = 1 / Math.sqrt(H); // PyTorch's init range
  const init = [['W', 1, [1, 4 * H, I], fill(4 * H * I, k)], ['R', 1, [1, 4 * H, H], fill(4 * H * H, k)],
    ['B', 1, [1, 8 * H], fill(8 * H, k)]];
  const bytes = makeModel({
    opset: 14,
    nodes: [['LSTM', ['X', 'W', 'R', 'B', '', 'H0', 'C0'], ['Y', 'Yh', 'Yc'], { hidden_size: H }]],
    inputs: [['X', 1, [S, N, I]], ['H0', 1, [1, N, H]], ['C0', 1, [1, N, H]]],
    initializers: init,
    outputs: [['Y', 1, null], ['Yh', 1, null], ['Yc', 1, null]],
  });
  const feeds = { X: [fill(S * N * I, 1), [S, N, I]], H0: [fill(N * H, 0.5), [1, N, H]], C0: [fill(N * H, 0.5), [1, N, H]] };
  return { bytes, feeds };
}

const runtimes = {
  async 'tensorplay stax'(bytes) { return tpRun(bytes, 'stax'); },
  async 'tensorplay eager'(bytes) { return tpRun(bytes, ''); },
  async 'onnxruntime-web'(bytes) {
    const s = await ortw.InferenceSession.create(bytes, { executionProviders: ['wasm'] });
    return { run: async (f) => (await s.run(Object.fromEntries(Object.entries(f).map(([n, [d, dims]]) => [n, new ortw.Tensor('float32', d, dims)])))).Y.data, close: () => s.release() };
  },
  async 'onnxruntime-node'(bytes) {
    const s = await ortn.InferenceSession.create(bytes, { intraOpNumThreads: 1, interOpNumThreads: 1 });
    return { run: async (f) => (await s.run(Object.fromEntries(Object.entries(f).map(([n, [d, dims]]) => [n, new ortn.Tensor('float32', d, dims)])))).Y.data, close: () => s.release() };
  },
};
function tpRun(bytes, backend) {
  const m = tp.onnx.load(bytes, backend ? { backend } : {});
  return {
    run: async (f) => tp.scope(() => m.run(Object.fromEntries(Object.entries(f).map(([n, [d, dims]]) => [n, tp.tensor(d, { shape: dims })]))).Y.toArray()),
    close: () => m.dispose(),
  };
}

const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[s.length >> 1]; };
const table = [];
for (const [H, N] of CASES) {
  const { bytes, feeds } = model(H, N);
  const per = {}, rounds = {};
  let ref = null;
  for (let rep = -1; rep < REPS; rep++) { // round -1 warms up (Wasm tiers up, caches fill): not recorded
    for (const [name, make] of Object.entries(runtimes)) {
      const rt = await make(bytes);
      const t = [];
      for (let c = 0; c < CALLS + 1; c++) {
        const t0 = performance.now();
        const y = await rt.run(feeds);
        t.push(performance.now() - t0);
        if (c === 0 && name === 'onnxruntime-node' && !ref) ref = Float32Array.from(y);
        if (c === 0 && rep === REPS - 1) (per[name] ??= {}).y = Float32Array.from(y);
      }
      await rt.close();
      if (rep < 0) continue;
      (rounds[name] ??= []).push(...t.slice(1));
      ((per[name] ??= {}).medians ??= []).push(median(t.slice(1)));
    }
  }
  const rows = Object.keys(runtimes).map((name) => {
    const y = per[name].y;
    let maxErr = 0, ok = true;
    for (let i = 0; i < ref.length; i++) {
      const e = Math.abs(y[i] - ref[i]);
      maxErr = Math.max(maxErr, e);
      if (!(e <= 1e-4 + 1e-3 * Math.abs(ref[i]))) ok = false;
    }
    const m = per[name].medians;
    return { name, median_ms: +median(rounds[name]).toFixed(3), min_ms: +Math.min(...rounds[name]).toFixed(3), round_medians_ms: [Math.min(...m), Math.max(...m)].map((x) => +x.toFixed(3)), max_err: +maxErr.toExponential(2), matches_ort_node: ok };
  });
  const caseName = `lstm hidden ${H}, input ${H}, seq ${S}, batch ${N}`;
  console.log(JSON.stringify({ case: caseName, calls: CALLS, reps: REPS, impls: rows, baseline: 'onnxruntime-web' }));
  const base = rows.find((r) => r.name === 'onnxruntime-web').median_ms;
  for (const r of rows) table.push(`${caseName} | ${r.name} | ${r.median_ms} ms (rounds ${r.round_medians_ms.join('-')}) | ${(r.median_ms / base).toFixed(2)}x ort-web | ${r.matches_ort_node ? 'matches' : 'DIFFERS'}`);
}
for (const l of table) console.error(l);
