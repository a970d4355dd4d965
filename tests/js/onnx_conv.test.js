// ONNX convolution rewrites against onnxruntime-node (the independent
// reference), weights and inputs fed at run time, eager and compiled (stax):
// ConvTranspose whose kernel equals its stride as one GEMM plus a permuted
// copy (src/onnx/onnx_conv.c: convtranspose_gemm), with the activation after
// it fused into that copy (short rows: src/lower/executor.c), and the general
// zero-upsampling path for the cases the rewrite leaves alone.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';
import { makeModel } from './_onnx_pb.mjs';

import { ort, needOrt } from './_ort.mjs';

function lcg(n, seed, scale) {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = ((s / 2 ** 32) * 2 - 1) * scale;
  }
  return out;
}

const numel = (d) => d.reduce((a, b) => a * b, 1);

// [name, x dims, w dims, attrs, bias?, activation after it]
const CASES = [
  ['2x2 stride 2, bias, relu', [1, 5, 4, 6], [5, 3, 2, 2], { strides: [2, 2] }, true, 'Relu'],
  ['3x2 stride 3x2, pads crop, batch 2', [2, 4, 3, 5], [4, 6, 3, 2], { strides: [3, 2], pads: [1, 0, 1, 1] }, false, null],
  ['2x2 stride 2, 17 outputs (not a vector width), sigmoid', [1, 9, 5, 3], [9, 17, 2, 2], { strides: [2, 2] }, true, 'Sigmoid'],
  ['1-D kernel 4 stride 4, bias', [1, 3, 7], [3, 5, 4], { strides: [4] }, true, null],
  ['2x2 stride 2, SAME_UPPER', [1, 2, 3, 3], [2, 2, 2, 2], { strides: [2, 2], auto_pad: 'SAME_UPPER' }, true, null],
  // left to the general path (overlap, groups, output_padding, dilation)
  ['3x3 stride 2 (overlapping windows)', [1, 3, 4, 5], [3, 2, 3, 3], { strides: [2, 2] }, true, 'Relu'],
  ['2x2 stride 2, 2 groups', [1, 4, 3, 3], [4, 3, 2, 2], { strides: [2, 2], group: 2 }, true, null],
  ['2x2 stride 2, output_padding 1', [1, 2, 3, 3], [2, 2, 2, 2], { strides: [2, 2], output_padding: [1, 1] }, true, null],
  ['2x2 stride 2, dilation 2', [1, 2, 3, 3], [2, 2, 2, 2], { strides: [2, 2], dilations: [2, 2] }, false, null],
];

test('ConvTranspose models match onnxruntime-node, eager and stax', async () => {
  needOrt();
  for (const [name, xs, ws, attrs, bias, act] of CASES) {
    const M = ws[1] * (attrs.group ?? 1);
    const xd = lcg(numel(xs), 3, 1.5), wd = lcg(numel(ws), 5, 1), bd = lcg(M, 9, 0.5);
    const nodes = [['ConvTranspose', bias ? ['x', 'w', 'b'] : ['x', 'w'], [act ? 't' : 'y'], attrs]];
    if (act) nodes.push([act, ['t'], ['y']]);
    const inputs = [['x', 1, xs], ['w', 1, ws]];
    if (bias) inputs.push(['b', 1, [M]]);
    const bytes = makeModel({ nodes, inputs, outputs: [['y', 1, null]] });
    const session = await ort.InferenceSession.create(bytes);
    const feeds = { x: new ort.Tensor('float32', xd, xs), w: new ort.Tensor('float32', wd, ws) };
    if (bias) feeds.b = new ort.Tensor('float32', bd, [M]);
    const want = (await session.run(feeds)).y;
    for (const backend of ['eager', 'stax']) {
      const m = tp.onnx.load(bytes, { backend });
      try {
        tp.scope(() => {
          const args = [tp.tensor(xd, { shape: xs }), tp.tensor(wd, { shape: ws })];
          if (bias) args.push(tp.tensor(bd, { shape: [M] }));
          const [y] = m.run(...args);
          assert.deepEqual(y.shape, [...want.dims], `${name} (${backend}): shape`);
          const got = y.toArray();
          let worst = 0;
          want.data.forEach((v, i) => { worst = Math.max(worst, Math.abs(got[i] - v) / (1 + Math.abs(v))); });
          assert.ok(worst < 2e-5, `${name} (${backend}): max relative error ${worst}`);
        });
      } finally {
        m.dispose();
      }
    }
  }
});

// Resize nearest by whole factors (the upsampling of detection heads) is a
// broadcast, not a gather (src/onnx/onnx_resize.c); other factors and
// modes keep the gather. Scales and sizes are constants of the model.
test('Resize nearest (integer factors as broadcasts, others as gathers) matches onnxruntime-node', async () => {
  needOrt();
  const f32 = (a) => new Float32Array(a);
  const cases = [
    ['x2 both axes, then add', [1, 3, 4, 5], f32([1, 1, 2, 2]), {}, true],
    ['x4 rows, x2 columns, asymmetric floor', [2, 2, 3, 3], f32([1, 1, 4, 2]), { coordinate_transformation_mode: 'asymmetric', nearest_mode: 'floor' }, false],
    ['x1.5 (a gather)', [1, 2, 4, 4], f32([1, 1, 1.5, 1.5]), {}, false],
    ['x3 last axis only', [1, 2, 3, 5], f32([1, 1, 1, 3]), {}, true],
  ];
  for (const [name, xs, scales, attrs, add] of cases) {
    const ys = xs.map((d, i) => Math.floor(d * scales[i]));
    const nodes = [['Constant', [], ['sc'], { value_floats: scales }], ['Resize', ['x', '', 'sc'], [add ? 't' : 'y'], { mode: 'nearest', ...attrs }]];
    if (add) nodes.push(['Add', ['t', 'z'], ['y']]);
    const inputs = [['x', 1, xs]];
    if (add) inputs.push(['z', 1, ys]);
    const bytes = makeModel({ nodes, inputs, outputs: [['y', 1, null]] });
    const xd = lcg(numel(xs), 13, 2), zd = lcg(numel(ys), 17, 1);
    const session = await ort.InferenceSession.create(bytes);
    const feeds = { x: new ort.Tensor('float32', xd, xs) };
    if (add) feeds.z = new ort.Tensor('float32', zd, ys);
    const want = (await session.run(feeds)).y;
    for (const backend of ['eager', 'stax']) {
      const m = tp.onnx.load(bytes, { backend });
      try {
        tp.scope(() => {
          const args = [tp.tensor(xd, { shape: xs })];
          if (add) args.push(tp.tensor(zd, { shape: ys }));
          const [y] = m.run(...args);
          assert.deepEqual(y.shape, [...want.dims], `${name} (${backend}): shape`);
          assert.deepEqual([...y.toArray()], [...want.data], `${name} (${backend})`);
        });
      } finally {
        m.dispose();
      }
    }
  }
});
