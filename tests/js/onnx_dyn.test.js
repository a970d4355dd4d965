// The ops with data-dependent output shapes (NonZero, Compress, Unique,
// NonMaxSuppression: value specializations) and TfIdfVectorizer (run time),
// every input fed at run time, eager and stax, against onnxruntime-node on
// seeded random inputs; plus hand-computed NMS ties and bad-input errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';
import { makeModel } from './_onnx_pb.mjs';

import { ort, needOrt } from './_ort.mjs';

let seed = 12345;
const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);

/* inputs: [[name, dtype, shape, values]]; our eager and stax results must equal ORT's. */
async function vsOrt(name, bytes, inputs) {
  needOrt();
  const sess = await ort.InferenceSession.create(bytes);
  const feeds = {};
  for (const [n, dt, shape, v] of inputs) {
    const data = dt === 'int64' ? BigInt64Array.from(v.map(BigInt)) : dt === 'bool' ? Uint8Array.from(v) : Float32Array.from(v);
    feeds[n] = new ort.Tensor(dt, data, shape);
  }
  const want = await sess.run(feeds);
  const wantList = sess.outputNames.map((o) => want[o]);
  for (const backend of ['eager', 'stax']) {
    const m = tp.onnx.load(bytes, { backend });
    try {
      tp.scope(() => {
        const ins = inputs.map(([, dt, shape, v]) => tp.tensor(dt === 'bool' ? v.map(Boolean) : v, { dtype: dt, shape }));
        const got = m.run(...ins);
        assert.equal(got.length, wantList.length);
        got.forEach((g, i) => {
          const w = wantList[i];
          assert.deepEqual(g.shape, Array.from(w.dims, Number), `${name} (${backend}) output ${i}: shape`);
          const gv = Array.from(g.toArray(), Number), wv = Array.from(w.data, Number);
          for (let k = 0; k < wv.length; k++)
            assert.ok(Math.abs(gv[k] - wv[k]) <= 1e-5 * (1 + Math.abs(wv[k])), `${name} (${backend}) output ${i}[${k}]: ${gv[k]} vs ${wv[k]}`);
        });
      });
    } finally {
      m.dispose();
    }
  }
}

test('NonMaxSuppression matches onnxruntime-node (both box formats, two batches and classes)', async () => {
  const B = 2, C = 2, N = 24;
  for (const center of [0, 1]) {
    const boxes = [];
    for (let i = 0; i < B * N; i++) {
      const a = rand() * 10, b = rand() * 10, w = 0.5 + rand() * 3, h = 0.5 + rand() * 3;
      boxes.push(...(center ? [a, b, w, h] : [a, b, a + w, b + h]));
    }
    /* coarse scores make ties, which ONNX breaks by the lower box index */
    const scores = Array.from({ length: B * C * N }, () => Math.round(rand() * 10) / 10);
    const bytes = makeModel({ nodes: [['NonMaxSuppression', ['boxes', 'scores', 'maxo', 'iou', 'sthr'], ['sel'], { center_point_box: center }]],
      inputs: [['boxes', 1, [B, N, 4]], ['scores', 1, [B, C, N]], ['maxo', 7, [1]], ['iou', 1, [1]], ['sthr', 1, [1]]],
      outputs: [['sel', 7, null]] });
    await vsOrt(`NMS center_point_box ${center}`, bytes, [['boxes', 'float32', [B, N, 4], boxes], ['scores', 'float32', [B, C, N], scores],
      ['maxo', 'int64', [1], [20]], ['iou', 'float32', [1], [0.3]], ['sthr', 'float32', [1], [0.25]]]);
  }
});

test('NonZero, Compress and Unique match onnxruntime-node', async () => {
  const x = Array.from({ length: 24 }, () => (rand() < 0.4 ? 0 : Math.round(rand() * 5)));
  await vsOrt('NonZero', makeModel({ nodes: [['NonZero', ['x'], ['y']]], inputs: [['x', 1, [2, 3, 4]]], outputs: [['y', 7, null]] }),
    [['x', 'float32', [2, 3, 4], x]]);
  const cond = [1, 0, 1, 1];
  await vsOrt('Compress axis 2', makeModel({ nodes: [['Compress', ['x', 'c'], ['y'], { axis: 2 }]],
    inputs: [['x', 1, [2, 3, 4]], ['c', 9, [4]]], outputs: [['y', 1, null]] }), [['x', 'float32', [2, 3, 4], x], ['c', 'bool', [4], cond]]);
  await vsOrt('Compress flattened', makeModel({ nodes: [['Compress', ['x', 'c'], ['y']]],
    inputs: [['x', 1, [2, 3, 4]], ['c', 9, [4]]], outputs: [['y', 1, null]] }), [['x', 'float32', [2, 3, 4], x], ['c', 'bool', [4], cond]]);
  for (const sorted of [0, 1]) {
    await vsOrt(`Unique sorted=${sorted}`, makeModel({ nodes: [['Unique', ['x'], ['y', 'i', 'inv', 'cnt'], { sorted }]],
      inputs: [['x', 1, [24]]], outputs: [['y', 1, null], ['i', 7, null], ['inv', 7, null], ['cnt', 7, null]] }), [['x', 'float32', [24], x]]);
  }
  const rows = [1, 2, 0, 1, 1, 2, 3, 0, 0, 1];
  await vsOrt('Unique axis 0', makeModel({ nodes: [['Unique', ['x'], ['y', 'i', 'inv', 'cnt'], { axis: 0 }]],
    inputs: [['x', 1, [5, 2]]], outputs: [['y', 1, null], ['i', 7, null], ['inv', 7, null], ['cnt', 7, null]] }), [['x', 'float32', [5, 2], rows]]);
});

test('TfIdfVectorizer matches onnxruntime-node (TF, IDF, TFIDF; uni-, bi- and trigrams; skips)', async () => {
  const X = Array.from({ length: 2 * 16 }, () => Math.floor(rand() * 5));
  const pool = [0, 3, 4, /* bigrams */ 1, 2, 2, 2, 0, 4, /* trigrams */ 1, 1, 2, 3, 0, 1];
  for (const [mode, lo, hi, skip] of [['TF', 1, 3, 2], ['IDF', 2, 3, 1], ['TFIDF', 1, 2, 0], ['TFIDF', 1, 3, 3]]) {
    const attrs = { mode, min_gram_length: lo, max_gram_length: hi, max_skip_count: skip, pool_int64s: pool,
      ngram_counts: [0, 3, 9], ngram_indexes: [0, 1, 2, 3, 4, 5, 6, 7], weights: new Float32Array([0.5, 1, 2, 0.25, 3, 1.5, 2, 4]) };
    await vsOrt(`TfIdf ${mode} ${lo}..${hi} skip ${skip}`, makeModel({ nodes: [['TfIdfVectorizer', ['x'], ['y'], attrs]],
      inputs: [['x', 7, [2, 16]]], outputs: [['y', 1, null]] }), [['x', 'int64', [2, 16], X]]);
  }
});

test('bad input is a clear error and the model stays usable', () => {
  const nms = tp.onnx.load(makeModel({ nodes: [['NonMaxSuppression', ['boxes', 'scores'], ['sel']]],
    inputs: [['boxes', 1, [1, 'n', 'k']], ['scores', 1, [1, 1, 'n']]], outputs: [['sel', 7, null]] }));
  try {
    tp.scope(() => {
      assert.throws(() => nms.run(tp.tensor([0, 0, 1], { shape: [1, 1, 3] }), tp.tensor([1], { shape: [1, 1, 1] })),
        (e) => e instanceof tp.TensorPlayError && /boxes must be float32 \[batches, boxes, 4\]/.test(e.message));
      /* no max_output_boxes_per_class: 0 boxes per class */
      const [s] = nms.run(tp.tensor([0, 0, 1, 1], { shape: [1, 1, 4] }), tp.tensor([1], { shape: [1, 1, 1] }));
      assert.deepEqual(s.shape, [0, 3]);
    });
  } finally {
    nms.dispose();
  }
  const tf = tp.onnx.load(makeModel({ nodes: [['TfIdfVectorizer', ['x'], ['y'], { mode: 'TF', min_gram_length: 1, max_gram_length: 1,
    max_skip_count: 0, pool_int64s: [1], ngram_counts: [0], ngram_indexes: [0] }]], inputs: [['x', 1, ['n']]], outputs: [['y', 1, null]] }));
  try {
    assert.throws(() => tp.scope(() => tf.run(tp.tensor([1, 2]))), /X must be int32 or int64 tokens, got float32/);
  } finally {
    tf.dispose();
  }
});
