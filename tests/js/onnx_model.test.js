// ONNX models as shipped, run as applications run them (tp.onnx.load):
// symbolic dims (a specialization per shape), an input that sets a
// Reshape's shape (a specialization per value), declared types checked on
// every call, explain(), model.graph, the stax backend, dispose. Models are
// built by tests/js/_onnx_pb.mjs; values are checked by hand.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';
import { makeModel } from './_onnx_pb.mjs';

const relu = makeModel({
  nodes: [['Relu', ['x'], ['y']]],
  inputs: [['x', 1, ['batch', 3]]],
  outputs: [['y', 1, ['batch', 3]]],
});
const reshape = makeModel({
  nodes: [['Reshape', ['x', 'shape'], ['y']]],
  inputs: [['x', 1, [6]], ['shape', 7, [2]]],
  outputs: [['y', 1, null]],
});

for (const backend of ['', 'stax']) {
  test(`symbolic dims: one specialization per shape (${backend || 'eager'})`, () => {
    const m = tp.onnx.load(relu, { backend });
    try {
      assert.deepEqual(m.inputs, [{ name: 'x', dtype: 'float32', dims: [null, 3], dimNames: ['batch', null] }]);
      assert.throws(() => m.graph, /no graph yet/);
      tp.scope(() => {
        for (let rep = 0; rep < 2; rep++) {
          const [a] = m(tp.tensor([[-1, 2, -3], [4, -5, 6]]));
          assert.deepEqual(a.shape, [2, 3]);
          assert.deepEqual([...a.toArray()], [0, 2, 0, 4, 0, 6]);
          const { y } = m.run({ x: tp.tensor([[1, -1, 1]]) });
          assert.deepEqual([...y.toArray()], [1, 0, 1]);
        }
      });
      // stax: batch 1 is the first specialization's plan specialized (the
      // 0/1 rule), not a second import (docs/kernel-ir.md "Dynamic extents")
      assert.equal(m.specializations(), backend === 'stax' ? 1 : 2);
      const text = m.explain();
      assert.match(text, /input 'x': float32\[batch,3\] \(1 dynamic dim/);
      if (backend === 'stax') assert.match(text, /"specializations": 1, "last_specialization": "a dim changed to 0 or 1: sizes 0 and 1 are specialized/);
      else assert.match(text, /input 'x': f32\[1,3\], was f32\[2,3\]/);
      assert.match(m.graph.print(), /relu/);
      assert.throws(() => m.run(tp.tensor([[1, 2, 3, 4]])), /input 'x' dim 1 must be 3, got shape \[1,4\]/);
      assert.throws(() => m.run(tp.tensor([1, 2, 3])), /input 'x' must have rank 2/);
      assert.throws(() => m.run(tp.tensor([[1, 2, 3]], { dtype: 'int32' })), /input 'x' must be float32, got int32/);
      tp.scope(() => assert.deepEqual([...m(tp.tensor([[-7, 8, 9]]))[0].toArray()], [0, 8, 9]));
      m.setSpecializationLimit(1);
      assert.equal(m.specializations(), 1);
      assert.throws(() => m.setSpecializationLimit(0), /at least 1/);
    } finally {
      m.dispose();
    }
    assert.throws(() => m.run(tp.tensor([[1, 2, 3]])), tp.DisposedError);
    m.dispose(); // twice is fine
  });

  test(`an input that sets a shape: one specialization per value (${backend || 'eager'})`, () => {
    const m = tp.onnx.load(reshape, { backend });
    try {
      tp.scope(() => {
        const x = tp.tensor([1, 2, 3, 4, 5, 6]);
        for (const s of [[2, 3], [3, 2], [2, 3]]) {
          const [y] = m(x, tp.tensor(s, { dtype: 'int64' }));
          assert.deepEqual(y.shape, s);
          assert.deepEqual([...y.toArray()], [1, 2, 3, 4, 5, 6]);
        }
      });
      assert.equal(m.specializations(), 2);
      assert.match(m.explain(), /input 'shape': int64\[2\]; its value sets a shape or parameter/);
      assert.match(m.explain(), /the value of input 'shape' changed/);
    } finally {
      m.dispose();
    }
  });
}

test('load: unsupported ops are refused naming the node; bad options are TypeErrors', () => {
  const bad = makeModel({ nodes: [['FancyOp', ['x'], ['y']]], inputs: [['x', 1, ['n']]], outputs: [['y', 1, null]] });
  assert.throws(() => tp.onnx.load(bad), (e) => e instanceof tp.TensorPlayError && e.status === 'UNSUPPORTED'
    && /node 'y' \(FancyOp\) is not supported yet/.test(e.message));
  assert.throws(() => tp.onnx.load(relu, { backend: 42 }), TypeError);
  assert.throws(() => tp.onnx.load(relu, { backend: 'nope' }), /nope/);
  assert.throws(() => tp.onnx.load(new Uint8Array([0x0a, 0xff, 0xff])), (e) => e.status === 'PARSE');
});

test('LpPool and IsNaN: hand-computed results for a run-time input; a bad p is refused naming it', () => {
  const lp = (p) => makeModel({ nodes: [['LpPool', ['x'], ['y'], { kernel_shape: [2], strides: [2], p }]],
    inputs: [['x', 1, ['n', 1, 4]]], outputs: [['y', 1, null]] });
  for (const backend of ['eager', 'stax']) {
    const m = tp.onnx.load(lp(3), { backend });
    try {
      tp.scope(() => {
        /* windows {1, -2} and {0, 3}: (1 + 8)^(1/3), 27^(1/3) = 3 */
        const [y] = m.run(tp.tensor([1, -2, 0, 3], { shape: [1, 1, 4] }));
        assert.deepEqual(y.shape, [1, 1, 2]);
        const v = y.toArray();
        assert.ok(Math.abs(v[0] - Math.cbrt(9)) < 1e-5 && Math.abs(v[1] - 3) < 1e-5, `${backend}: ${[...v]}`);
      });
    } finally {
      m.dispose();
    }
  }
  /* the dim 'n' is symbolic, so the import (and its check of p) runs at the first call */
  const bad = tp.onnx.load(lp(0));
  assert.throws(() => tp.scope(() => bad.run(tp.tensor([1, 2, 3, 4], { shape: [1, 1, 4] }))), (e) => e instanceof tp.TensorPlayError && e.status === 'INVALID_ARG'
    && /p is 0; it must be 1 to 64/.test(e.message));
  bad.dispose();
  const isnan = tp.onnx.load(makeModel({ nodes: [['IsNaN', ['x'], ['y']]], inputs: [['x', 1, ['n']]], outputs: [['y', 9, null]] }));
  try {
    tp.scope(() => {
      const [y] = isnan.run(tp.tensor([NaN, 1, Infinity, -0]));
      assert.equal(y.dtype, 'bool');
      assert.deepEqual([...y.toArray()].map(Boolean), [true, false, false, false]);
    });
  } finally {
    isnan.dispose();
  }
});

test('CenterCropPad: the target shape is a value input; crop and pad by hand; a wrong length is refused', () => {
  const m = tp.onnx.load(makeModel({ nodes: [['CenterCropPad', ['x', 's'], ['y']]],
    inputs: [['x', 1, ['h', 'w']], ['s', 7, ['k']]], outputs: [['y', 1, null]] }));
  try {
    tp.scope(() => {
      const x = tp.tensor([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], { shape: [4, 3] });
      /* rows 4 -> 2: start 1 (rows 1..2); columns 3 -> 4: 0 before, 1 after */
      const [y] = m.run(x, tp.tensor([2, 4], { dtype: 'int64' }));
      assert.deepEqual(y.shape, [2, 4]);
      assert.deepEqual([...y.toArray()], [4, 5, 6, 0, 7, 8, 9, 0]);
      /* rows 4 -> 5: 0 before, 1 after; columns 3 -> 1: the middle one */
      const [z] = m.run(x, tp.tensor([5, 1], { dtype: 'int64' }));
      assert.deepEqual(z.shape, [5, 1]);
      assert.deepEqual([...z.toArray()], [2, 5, 8, 11, 0]);
      assert.throws(() => m.run(x, tp.tensor([2, 2, 2], { dtype: 'int64' })), /input 'shape' has 3 values for 2 axes/);
      assert.throws(() => m.run(x, tp.tensor([-1, 2], { dtype: 'int64' })), /target size -1 on axis 0 is out of range/);
      const [w] = m.run(x, tp.tensor([4, 3], { dtype: 'int64' }));
      assert.deepEqual([...w.toArray()], [...x.toArray()]);
    });
  } finally {
    m.dispose();
  }
});

test('LRN: hand-computed window sums over channels (defaults alpha 1e-4, beta 0.75, bias 1); size 0 is refused', () => {
  const lrn = (size) => makeModel({ nodes: [['LRN', ['x'], ['y'], { size }]],
    inputs: [['x', 1, ['n', 3, 1, 1]]], outputs: [['y', 1, null]] });
  const m = tp.onnx.load(lrn(3));
  try {
    tp.scope(() => {
      const [y] = m.run(tp.tensor([1, 2, 3], { shape: [1, 3, 1, 1] }));
      /* channel windows {0,1}, {0,1,2}, {1,2}: sums of squares 5, 14, 13 */
      const want = [[1, 5], [2, 14], [3, 13]].map(([x, s]) => x / Math.pow(1 + (1e-4 / 3) * s, 0.75));
      const got = y.toArray();
      for (let i = 0; i < 3; i++) assert.ok(Math.abs(got[i] - want[i]) < 1e-6, `${i}: ${got[i]} vs ${want[i]}`);
    });
  } finally {
    m.dispose();
  }
  const bad = tp.onnx.load(lrn(0));
  assert.throws(() => tp.scope(() => bad.run(tp.tensor([1, 2, 3], { shape: [1, 3, 1, 1] }))),
    (e) => e.status === 'INVALID_ARG' && /size is 0; it must be 1 to 4096/.test(e.message));
  bad.dispose();
});

test('ReverseSequence: run-time lengths reverse each batch entry by hand; a length outside 0..T is an error', () => {
  const m = tp.onnx.load(makeModel({ nodes: [['ReverseSequence', ['x', 'len'], ['y'], { time_axis: 0, batch_axis: 1 }]],
    inputs: [['x', 1, ['t', 2]], ['len', 7, [2]]], outputs: [['y', 1, null]] }));
  try {
    tp.scope(() => {
      /* x[t][b]: column 0 = 1 2 3, column 1 = 10 20 30 */
      const x = tp.tensor([1, 10, 2, 20, 3, 30], { shape: [3, 2] });
      const [y] = m.run(x, tp.tensor([2, 3], { dtype: 'int64' }));
      assert.deepEqual([...y.toArray()], [2, 30, 1, 20, 3, 10]);
      const [z] = m.run(x, tp.tensor([0, 1], { dtype: 'int64' }));
      assert.deepEqual([...z.toArray()], [...x.toArray()]);
      assert.throws(() => m.run(x, tp.tensor([4, 1], { dtype: 'int64' })), /out of range for dim 0 of size 3/);
      assert.throws(() => m.run(x, tp.tensor([-1, 1], { dtype: 'int64' })), /out of range for dim 0 of size 3/);
      const [w] = m.run(x, tp.tensor([3, 3], { dtype: 'int64' }));
      assert.deepEqual([...w.toArray()], [3, 30, 2, 20, 1, 10]);
    });
  } finally {
    m.dispose();
  }
});

test('inside tp.compile a model whose input sets a shape is a graph break, and the results stay right', () => {
  const m = tp.onnx.load(reshape);
  try {
    const f = tp.compile((x, s) => m.run(x, s)[0].mul(2));
    tp.scope(() => {
      const x = tp.tensor([1, 2, 3, 4, 5, 6]);
      for (const s of [[2, 3], [3, 2]]) {
        const y = f(x, tp.tensor(s, { dtype: 'int64' }));
        assert.deepEqual(y.shape, s);
        assert.deepEqual([...y.toArray()], [2, 4, 6, 8, 10, 12]);
      }
    });
    f.dispose && f.dispose();
    const g = tp.compile((x, s) => m.run(x, s)[0], { fullgraph: true });
    tp.scope(() => {
      assert.throws(() => g(tp.tensor([1, 2, 3, 4, 5, 6]), tp.tensor([2, 3], { dtype: 'int64' })),
        (e) => e instanceof tp.GraphCaptureError && /ONNX input 'shape'/.test(e.message));
    });
  } finally {
    m.dispose();
  }
});
