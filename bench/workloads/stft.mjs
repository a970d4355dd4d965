// bench/workloads/stft.mjs - issue 16's "an STFT-like 1-D conv runs within
// 1.3x of the equivalent matmul": a 1-D convolution with one input channel,
// 257 filters of 512 taps and stride 160 (the mel front end of
// openwakeword's melspectrogram.onnx: x [1, 1, 1, L], w [257, 1, 1, 512]),
// against the matmul that computes the same numbers from frames that are
// already cut ([F, 512] @ [512, 257], F = floor((L - 512) / 160) + 1: the framing
// copy is not counted, which favours the matmul). Both compiled with stax
// (tp.compile, the weight a closure constant, packed once per plan), in Node
// with one thread, end to end per call (a JS Float32Array in, the result
// read back), taking turns in REPS rounds of CALLS calls after a warm-up.
// L = 1280 (one streaming chunk, F = 5) and L = 16000 (one second at 16
// kHz, F = 97). The results are checked against each other (the same
// numbers up to float32 rounding) before timing. Prints one JSON line per
// size (bench/run.sh's form) and a table on stderr: medians of the rounds' medians with their min-max, and
// conv / matmul.
//
//   node bench/workloads/stft.mjs [--calls N] [--reps R] [--clock wall|cpu]
import * as tp from '../../js/index.js';

const argv = process.argv.slice(2);
const arg = (k, d) => (argv.includes(k) ? argv[argv.indexOf(k) + 1] : d);
const CALLS = Number(arg('--calls', 200)), REPS = Number(arg('--reps', 5)), CLOCK = arg('--clock', 'wall');
const K = 512, HOP = 160, C = 257;
const now = CLOCK === 'cpu' ? () => { const u = process.cpuUsage(); return (u.user + u.system) / 1000; } : () => performance.now();
const rng = (seed) => () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32) * 2 - 1;
const median = (a) => { const s = [...a].sort((p, q) => p - q); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };

const rows = [];
for (const L of [1280, 16000]) {
  const F = Math.floor((L - K) / HOP) + 1;
  const r = rng(L);
  const sig = Float32Array.from({ length: L }, r);
  const wdata = Float32Array.from({ length: C * K }, () => r() / 16);
  const frames = new Float32Array(F * K);
  for (let f = 0; f < F; f++) frames.set(sig.subarray(f * HOP, f * HOP + K), f * K);
  const w4 = tp.tensor(wdata, { shape: [C, 1, 1, K] });
  const wtd = new Float32Array(K * C); // [K, C]
  for (let c = 0; c < C; c++) for (let k = 0; k < K; k++) wtd[k * C + c] = wdata[c * K + k];
  const wt = tp.tensor(wtd, { shape: [K, C] });
  const conv = tp.compile((x) => tp.conv2d(x, w4, { stride: [1, HOP] }), { backend: 'stax', name: 'stft_conv' });
  const mm = tp.compile((x) => tp.matmul(x, wt), { backend: 'stax', name: 'stft_matmul' });
  const impls = {
    conv: () => tp.scope(() => conv(tp.tensor(sig, { shape: [1, 1, 1, L] })).toArray()),
    matmul: () => tp.scope(() => mm(tp.tensor(frames, { shape: [F, K] })).toArray()),
  };
  // the same numbers: conv y [1, C, 1, F] vs matmul [F, C]
  const yc = impls.conv(), ym = impls.matmul();
  let worst = 0;
  for (let c = 0; c < C; c++) for (let f = 0; f < F; f++) worst = Math.max(worst, Math.abs(yc[c * F + f] - ym[f * C + c]) / (1e-4 + 1e-3 * Math.abs(ym[f * C + c])));
  if (worst > 1) throw new Error(`L=${L}: the conv and the matmul differ (|err| <= 1e-4 + 1e-3 |ref| fails by ${worst}x)`);
  const med = { conv: [], matmul: [] };
  for (let rep = 0; rep < REPS; rep++) {
    for (const [name, fn] of Object.entries(impls)) {
      for (let i = 0; i < 5; i++) fn(); // warm
      const t = [];
      for (let i = 0; i < CALLS; i++) {
        const t0 = now();
        fn();
        t.push(now() - t0);
      }
      med[name].push(median(t));
    }
  }
  const row = { L, frames: F, mflop: (2 * F * K * C) / 1e6, clock: CLOCK, calls: CALLS, reps: REPS };
  for (const k of ['conv', 'matmul']) row[k] = { median_ms: median(med[k]), min_ms: Math.min(...med[k]), max_ms: Math.max(...med[k]), rounds: med[k] };
  row.ratio = row.conv.median_ms / row.matmul.median_ms;
  row.ratio_per_round = med.conv.map((v, i) => v / med.matmul[i]);
  // bench/run.sh's form: one JSON object per case on stdout
  console.log(JSON.stringify({
    case: `STFT-like conv (L ${L}, ${F} frames) vs the matmul on cut frames, Node, stax, 1 thread`,
    impls: ['conv', 'matmul'].map((k) => ({ name: `tensorplay stax ${k}`, ...row[k] })),
    baseline: 'tensorplay stax matmul', ...row,
  }));
  rows.push(row);
  conv.dispose(), mm.dispose(), w4.dispose(), wt.dispose();
}
console.error('\n| L | frames | MFLOP | conv ms (min-max) | matmul ms (min-max) | conv / matmul (per round) |');
console.error('|---:|---:|---:|---:|---:|---|');
for (const r of rows) {
  const f = (x) => `${x.median_ms.toFixed(3)} (${x.min_ms.toFixed(3)}-${x.max_ms.toFixed(3)})`;
  console.error(`| ${r.L} | ${r.frames} | ${r.mflop.toFixed(2)} | ${f(r.conv)} | ${f(r.matmul)} | ${r.ratio.toFixed(2)} (${r.ratio_per_round.map((v) => v.toFixed(2)).join(', ')}) |`);
}
