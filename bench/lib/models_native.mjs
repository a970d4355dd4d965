// bench/lib/models_native.mjs - W2, W3, W4 of issue 4, natively, one thread:
// our stax plan and eager runner (bench/models_bench.c, a child process
// driven over a pipe) against onnxruntime-node (CPU EP, in this process),
// interleaved sample by sample. Run by bench/workloads/models-native.sh.
//
//   node models_native.mjs BENCH_BIN GRAPH_DIR
//
// Prints one JSON object per workload on stdout (bench/run.sh contract),
// a human table on stderr. Knobs: BENCH_REPS (31, at least 15),
// BENCH_SAMPLE_MS (10), BENCH_MODELS ("W2 W3 W4 R1"; R1 = ultraface-rfb-320).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import ort from 'onnxruntime-node';

const [bin, dir] = process.argv.slice(2);
const REPS = Math.min(201, Math.max(15, Number(process.env.BENCH_REPS ?? 31)));
const SAMPLE_MS = Number(process.env.BENCH_SAMPLE_MS ?? 10);
const MODELS = (process.env.BENCH_MODELS ?? 'W2 W3 W4 R1').split(/\s+/).filter(Boolean);
const meta = JSON.parse(readFileSync(join(dir, 'models.json'), 'utf8'));
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
function compare(ref, y) {
  let maxAbs = 0, maxRef = 0, maxRel = 0;
  for (let i = 0; i < ref.length; i++) {
    const e = Math.abs(y[i] - ref[i]);
    if (!(e <= maxAbs)) maxAbs = Number.isNaN(e) ? Infinity : e;
    maxRef = Math.max(maxRef, Math.abs(ref[i]));
    const r = e / Math.max(Math.abs(ref[i]), 1e-2);
    if (!(r <= maxRel)) maxRel = Number.isNaN(r) ? Infinity : r;
  }
  return { max_abs_err: +maxAbs.toExponential(3), max_abs_err_over_max_ref: +(maxAbs / maxRef).toExponential(3), max_rel_err: +maxRel.toExponential(3) };
}

const TITLES = {
  W2: 'W2 MLP x[64,784] -> 512 ReLU -> 512 ReLU -> 10',
  W3: 'W3 y = tanh(1.5x - 0.25) * sigmoid(x), 4,194,304 f32',
  W4: 'W4 pre-LN encoder block, seq 128, d 256, 4 heads, FFN 1024',
  R1: 'R1 ultraface-rfb-320 (ONNX, 37 convs), x[1,3,240,320]',
};

let failed = false;
const sessOpts = { intraOpNumThreads: 1, interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential' };
log(`models-native: onnxruntime-node ${ort.env.versions?.node ?? '?'}, ${REPS} interleaved samples of ~${SAMPLE_MS} ms per impl`);
for (const id of MODELS) {
  const m = meta[id];
  if (!m) { log(`models-native: ${id} skipped (not generated: see models_gen above)`); continue; }
  const loadInfo = Object.fromEntries((await ask(`load ${id} ${join(dir, id + '.tpg')} ${join(dir, id + '.x.bin')}`))
    .split(' ').slice(1).map((kv) => kv.split('=')).map(([k, v]) => [k, Number.isNaN(Number(v)) ? v : Number(v)]));
  const x = f32(join(dir, `${id}.x.bin`));
  const ref = f32(join(dir, `${id}.ref.bin`));
  const sess = await ort.InferenceSession.create(join(dir, `${id}.onnx`), sessOpts);
  const feeds = { [sess.inputNames[0]]: new ort.Tensor('float32', x, m.x_shape) };

  // correctness first: every implementation against the JS (Wasm) eager output
  const verify = {};
  const yo = (await sess.run(feeds))[sess.outputNames[0]].data;
  verify.onnxruntime = compare(ref, yo);
  for (const impl of ['stax', 'eager']) {
    const p = join(dir, `${id}.${impl}.out.bin`);
    await ask(`dump ${id} ${impl} ${p}`);
    verify[`ours-${impl}`] = compare(ref, f32(p));
  }
  for (const [k, v] of Object.entries(verify)) {
    log(`  ${id} check ${k.padEnd(12)} max abs err ${v.max_abs_err} (/max|ref| ${v.max_abs_err_over_max_ref}), max rel err ${v.max_rel_err}`);
    if (!(v.max_abs_err_over_max_ref <= 1e-4)) { log(`  ${id}: ${k} does not match the reference`); failed = true; }
  }

  // implementations: C ones through the pipe, ORT here
  const runOrt = async (inner) => {
    const t0 = performance.now();
    for (let k = 0; k < inner; k++) await sess.run(feeds);
    return performance.now() - t0;
  };
  const impls = [
    { name: 'ours-stax', calib: async () => Number(await ask(`calib ${id} stax`)), run: async (n) => Number(await ask(`time ${id} stax ${n}`)) },
    { name: 'ours-eager', calib: async () => Number(await ask(`calib ${id} eager`)), run: async (n) => Number(await ask(`time ${id} eager ${n}`)) },
    {
      name: 'onnxruntime',
      calib: async () => { await runOrt(3); let c = 0; const t0 = performance.now(); do { await runOrt(1); c++; } while (performance.now() - t0 < 20 && c < 1000); return (performance.now() - t0) / c; },
      run: runOrt,
    },
  ];
  if (id === 'W3') impls.push({ name: 'memcpy', calib: async () => Number(await ask(`calib ${id} memcpy`)), run: async (n) => Number(await ask(`time ${id} memcpy ${n}`)) });

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
    workload: id, case: TITLES[id], isa: loadInfo.isa, reps: REPS, inner, baseline: 'onnxruntime',
    baseline_variant: `onnxruntime-node ${ort.env.versions?.node ?? '?'}, CPU EP, 1 thread, optimization 'all'`,
    impls: impls.map((im) => ({
      name: im.name, median_ms: +med[im.name].toFixed(5), min_ms: +Math.min(...im.samples).toFixed(5),
      samples_ms: im.samples.map((s) => +s.toFixed(5)),
    })),
    stax_over_ort: +(med['ours-stax'] / med.onnxruntime).toFixed(4),
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
  const notes = [`stax/ORT ${out.stax_over_ort.toFixed(3)}`, `eager/stax ${out.eager_over_stax.toFixed(3)}`];
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
