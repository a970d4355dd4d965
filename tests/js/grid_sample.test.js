// tp.gridSample against the hand-computed values of
// tests/c/ops/test_ops_sample.c, its argument checks, and ONNX GridSample /
// RoiAlign models against onnxruntime-node (the independent reference),
// and MaxUnpool by hand.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';
import { makeModel } from './_onnx_pb.mjs';

import { ort, needOrt } from './_ort.mjs';

const close = (got, want, tol = 1e-5, what = '') => {
  assert.equal(got.length, want.length);
  got.forEach((g, i) => assert.ok(Math.abs(g - want[i]) <= tol * (1 + Math.abs(want[i])), `${what}${i}: ${g} vs ${want[i]}`));
};

test('gridSample: hand-computed bilinear, nearest and bicubic values in every padding mode', () => {
  tp.scope(() => {
    const x = tp.tensor([1, 2, 3, 4, 5, 6], { shape: [1, 1, 2, 3] });
    const g = tp.tensor([0, 0, -1, -1, 0.5, 1, 1.5, 0], { shape: [1, 1, 4, 2] });
    // align_corners: px = gx + 1, py = (gy + 1) / 2; (2.5, .5) is outside on the right
    close([...tp.gridSample(x, g, { alignCorners: true }).toArray()], [3.5, 1, 5.5, 2.25]);
    close([...x.gridSample(g, { alignCorners: true, paddingMode: 'border' }).toArray()], [3.5, 1, 5.5, 4.5]);
    close([...tp.gridSample(x, g, { alignCorners: true, paddingMode: 'reflection' }).toArray()], [3.5, 1, 5.5, 4]);
    // nearest, align_corners false: half to even; (2, 2) and (3, 0) are outside
    const near = tp.gridSample(x, g, { mode: 'nearest' });
    assert.deepEqual(near.shape, [1, 1, 1, 4]);
    assert.deepEqual([...near.toArray()], [2, 1, 0, 0]);
    assert.deepEqual([...tp.gridSample(x, g, { mode: 'nearest', paddingMode: 'border' }).toArray()], [2, 1, 6, 3]);
    // Keys cubic at t = .5: -0.09375, 0.59375, 0.59375, -0.09375 over columns -1..2
    const gc = tp.tensor([-0.5, -1, 0, -1], { shape: [1, 1, 2, 2] });
    close([...tp.gridSample(x, gc, { mode: 'bicubic', alignCorners: true, paddingMode: 'border' }).toArray()], [1.40625, 2]);
    close([...tp.gridSample(x, gc, { mode: 'bicubic', alignCorners: true }).toArray()], [1.5, 2]);
    // bicubic with border padding clamps a coordinate outside [-0.5, W - 0.5]
    // to [0, W - 1] before its taps (ONNX's reference): px = -0.75 reads x[0]
    // exactly. onnxruntime, like PyTorch, clamps only the taps (0.99...).
    const row = tp.tensor([1, 2, 3, 4], { shape: [1, 1, 1, 4] });
    close([...tp.gridSample(row, tp.tensor([-1.125, 0], { shape: [1, 1, 1, 2] }), { mode: 'bicubic', paddingMode: 'border' }).toArray()], [1], 1e-7);
    // 3-D: the centre of a 2x2x2 cube is the mean of 1..8
    const v = tp.tensor([1, 2, 3, 4, 5, 6, 7, 8], { shape: [1, 1, 2, 2, 2] });
    close([...tp.gridSample(v, tp.tensor([0, 0, 0, 1, -1, 1], { shape: [1, 1, 1, 2, 3] }), { alignCorners: true }).toArray()], [4.5, 6]);
  });
});

test('gridSample: bad options and shapes throw naming the problem', () => {
  tp.scope(() => {
    const x = tp.zeros([1, 1, 2, 2]), g = tp.zeros([1, 1, 1, 2]);
    assert.throws(() => tp.gridSample(x, g, { mode: 'linear2' }), /mode must be bilinear, nearest or bicubic/);
    assert.throws(() => tp.gridSample(x, g, { paddingMode: 'wrap' }), /paddingMode must be zeros, border or reflection/);
    assert.throws(() => tp.gridSample(x, g, { alignCorners: 1 }), /alignCorners must be a boolean/);
    assert.throws(() => tp.gridSample(x, tp.zeros([1, 1, 1, 3])), /grid_sample: grid must be \[1, oH, oW, 2\]/);
    assert.throws(() => tp.gridSample(tp.zeros([2, 2]), g), /grid_sample: x must be/);
    close([...tp.gridSample(tp.ones([1, 1, 2, 2]), g).toArray()], [1]); // still usable
  });
});

function lcg(n, seed, scale) {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = ((s / 2 ** 32) * 2 - 1) * scale;
  }
  return out;
}

test('GridSample models match onnxruntime-node, eager and compiled', async () => {
  needOrt();
  const xs = [2, 3, 5, 4], gs = [2, 6, 7, 2];
  const xd = lcg(2 * 3 * 5 * 4, 7, 2), gd = lcg(2 * 6 * 7 * 2, 11, 1.4);
  for (const mode of ['bilinear', 'nearest', 'bicubic'])
    for (const padding_mode of ['zeros', 'border', 'reflection'])
      for (const align_corners of [0, 1]) {
        if (mode === 'bicubic' && padding_mode === 'border') continue; // ORT differs from ONNX there: see the first test
        const bytes = makeModel({ nodes: [['GridSample', ['x', 'g'], ['y'], { mode, padding_mode, align_corners }]],
          inputs: [['x', 1, xs], ['g', 1, gs]], outputs: [['y', 1, null]] });
        const session = await ort.InferenceSession.create(bytes);
        const want = (await session.run({ x: new ort.Tensor('float32', xd, xs), g: new ort.Tensor('float32', gd, gs) })).y;
        const m = tp.onnx.load(bytes);
        try {
          tp.scope(() => {
            const [y] = m.run(tp.tensor(xd, { shape: xs }), tp.tensor(gd, { shape: gs }));
            assert.deepEqual(y.shape, [...want.dims]);
            close([...y.toArray()], [...want.data], 2e-5, `${mode} ${padding_mode} ${align_corners}: `);
          });
        } finally {
          m.dispose();
        }
      }
});

test('MaxUnpool: run-time indices place x by hand; an index outside the output is an error', () => {
  const m = tp.onnx.load(makeModel({ nodes: [['MaxUnpool', ['x', 'i'], ['y'], { kernel_shape: [2, 2], strides: [2, 2] }]],
    inputs: [['x', 1, [1, 1, 2, 2]], ['i', 7, [1, 1, 2, 2]]], outputs: [['y', 1, null]] }));
  try {
    tp.scope(() => {
      const x = tp.tensor([5, 6, 7, 8], { shape: [1, 1, 2, 2] });
      const [y] = m.run(x, tp.tensor([5, 7, 13, 15], { shape: [1, 1, 2, 2], dtype: 'int64' }));
      assert.deepEqual(y.shape, [1, 1, 4, 4]);
      assert.deepEqual([...y.toArray()], [0, 0, 0, 0, 0, 5, 0, 6, 0, 0, 0, 0, 0, 7, 0, 8]);
      assert.throws(() => m.run(x, tp.tensor([5, 7, 13, 16], { shape: [1, 1, 2, 2], dtype: 'int64' })), /index 16 \(at position 3 of the indices\) is out of range/);
      assert.throws(() => m.run(x, tp.tensor([-1, 7, 13, 15], { shape: [1, 1, 2, 2], dtype: 'int64' })), /out of range/);
      const [z] = m.run(x, tp.tensor([0, 1, 2, 3], { shape: [1, 1, 2, 2], dtype: 'int64' }));
      assert.deepEqual([...z.toArray()].slice(0, 5), [5, 6, 7, 8, 0]);
    });
  } finally {
    m.dispose();
  }
});

test('roiAlign: hand-computed values (tests/c/ops/test_ops_sample.c) and argument checks', () => {
  tp.scope(() => {
    const x = tp.tensor([1, 2, 3, 4], { shape: [1, 1, 2, 2] });
    const rois = tp.tensor([0, 0, 1, 1, 0, 0, 2, 2, 5, 5, 6, 6], { shape: [3, 4] }), bi = tp.tensor([0, 0, 0], { dtype: 'int32' });
    const y = tp.roiAlign(x, rois, bi, { samplingRatio: 1, halfPixel: false });
    assert.deepEqual(y.shape, [3, 1, 1, 1]);
    close([...y.toArray()], [2.5, 4, 0]);
    close([...tp.roiAlign(x, rois, bi, { samplingRatio: 1, halfPixel: false, mode: 'max' }).toArray()], [1, 4, 0]);
    close([...tp.roiAlign(x, rois, bi, { halfPixel: false }).toArray()], [2.5, 3.25, 0]);
    close([...tp.roiAlign(x, rois, bi, { samplingRatio: 1, spatialScale: 0.5, halfPixel: false }).toArray()], [2.5, 2.5, 0]);
    assert.throws(() => tp.roiAlign(x, rois, bi, { mode: 'sum' }), /mode must be avg or max/);
    assert.throws(() => tp.roiAlign(x, rois, bi, { outputHeight: 0 }), /outputHeight and outputWidth must be >= 1/);
    assert.throws(() => tp.roiAlign(x, rois, tp.tensor([0, 0, 3], { dtype: 'int32' })), /batch index 3 of region 2 is out of range/);
  });
});

test('RoiAlign models match onnxruntime-node (avg and max, both coordinate modes); a bad batch index is an error', async () => {
  needOrt();
  const xs = [2, 3, 7, 6], xd = lcg(2 * 3 * 7 * 6, 5, 3);
  const rois = new Float32Array([0, 0, 4, 5, 1.5, 0.5, 3.2, 2.9, -2, -1, 7, 8, 0.3, 2.2, 5.9, 6.4]);
  const bi = new BigInt64Array([0n, 1n, 1n, 0n]);
  for (const mode of ['avg', 'max'])
    for (const coordinate_transformation_mode of ['half_pixel', 'output_half_pixel'])
      for (const sampling_ratio of [0, 2]) {
        const bytes = makeModel({ nodes: [['RoiAlign', ['x', 'r', 'b'], ['y'],
          { mode, coordinate_transformation_mode, sampling_ratio, output_height: 3, output_width: 2 }]],
        inputs: [['x', 1, xs], ['r', 1, [4, 4]], ['b', 7, [4]]], outputs: [['y', 1, null]] });
        const session = await ort.InferenceSession.create(bytes);
        const want = (await session.run({ x: new ort.Tensor('float32', xd, xs), r: new ort.Tensor('float32', rois, [4, 4]),
          b: new ort.Tensor('int64', bi, [4]) })).y;
        const m = tp.onnx.load(bytes);
        try {
          tp.scope(() => {
            const args = [tp.tensor(xd, { shape: xs }), tp.tensor(rois, { shape: [4, 4] }), tp.tensor([0, 1, 1, 0], { dtype: 'int64' })];
            const [y] = m.run(...args);
            assert.deepEqual(y.shape, [...want.dims]);
            close([...y.toArray()], [...want.data], 2e-5, `${mode} ${coordinate_transformation_mode} ${sampling_ratio}: `);
            args[2] = tp.tensor([0, 1, 2, 0], { dtype: 'int64' });
            assert.throws(() => m.run(...args), /batch index 2 of region 2 is out of range for 2 images/);
          });
        } finally {
          m.dispose();
        }
      }
});

test('gridSample and roiAlign inside tp.compile (stax: op kernels between fused ones) match eager', () => {
  tp.scope(() => {
    const x = tp.randn([1, 2, 5, 4], { seed: 1 }), g = tp.randn([1, 3, 3, 2], { seed: 2 });
    const rois = tp.tensor([0, 0, 2, 2, 1, 1, 3, 4], { shape: [2, 4] }), bi = tp.tensor([0, 0], { dtype: 'int32' });
    const f = (x, g) => tp.gridSample(x.mul(2), g, { mode: 'bicubic', paddingMode: 'reflection' }).relu()
      .add(tp.roiAlign(x, rois, bi, { outputHeight: 3, outputWidth: 3 }).sum());
    const want = [...f(x, g).toArray()];
    const c = tp.compile(f);
    close([...c(x, g).toArray()], want, 1e-6);
  });
});
