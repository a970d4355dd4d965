// The operand limits of the ONNX import (issue 14: "the 64-operand limit";
// docs/onnx.md "How unsupported things fail"). A node's operand list holds
// at most 64 values (TP_MAX_OPERANDS), but Concat, Split, Sum and Max take
// any number: Concat joins in chunks of 64, each Split output is a slice,
// Sum and Max combine pairwise. Checked
// against onnxruntime-node with every input fed at run time, eager and
// stax. A model of more than 64 graph inputs or outputs is refused with an
// error naming the limit, and the runtime stays usable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';
import { makeModel } from './_onnx_pb.mjs';

const ort = await import('onnxruntime-node');
const N = 70;

// y = Concat(x, x*2, ..., x*70) along axis 0 (70 values, from one input);
// Split(w) into 70 pieces of 2, outputs 0, 35 and 69 (of 70) kept; Sum and
// Max of the 70 products.
const model = makeModel({
  opset: 13,
  nodes: [
    ...Array.from({ length: N }, (_, i) => ['Mul', ['x', `c${i}`], [`v${i}`]]),
    ['Concat', Array.from({ length: N }, (_, i) => `v${i}`), ['y'], { axis: 0 }],
    ['Split', ['w'], Array.from({ length: N }, (_, i) => `s${i}`), { axis: 0 }],
    ['Sum', Array.from({ length: N }, (_, i) => `v${i}`), ['sum']],
    ['Max', Array.from({ length: N }, (_, i) => `v${i}`), ['max']],
  ],
  inputs: [['x', 1, [3]], ['w', 1, [2 * N]]],
  initializers: Array.from({ length: N }, (_, i) => [`c${i}`, 1, [1], Float32Array.of(i + 1)]),
  outputs: [['y', 1, null], ['s0', 1, null], ['s35', 1, null], ['s69', 1, null], ['sum', 1, null], ['max', 1, null]],
});

test('Concat, Sum and Max of 70 inputs and Split into 70 outputs match onnxruntime-node, eager and stax', async () => {
  const x = Float32Array.of(0.5, -1, 2), w = Float32Array.from({ length: 2 * N }, (_, i) => Math.sin(i));
  const sess = await ort.InferenceSession.create(model);
  const want = await sess.run({ x: new ort.Tensor('float32', x, [3]), w: new ort.Tensor('float32', w, [2 * N]) });
  await sess.release();
  for (const backend of ['', 'stax']) {
    const m = tp.onnx.load(model, { backend });
    try {
      tp.scope(() => {
        const got = m.run({ x: tp.tensor(x), w: tp.tensor(w) });
        for (const o of ['y', 's0', 's35', 's69', 'sum', 'max']) {
          assert.deepEqual(got[o].shape, [...want[o].dims].map(Number), `${o} shape (${backend || 'eager'})`);
          const g = got[o].toArray();
          want[o].data.forEach((w, i) => assert.ok(Math.abs(g[i] - w) <= 1e-5 * (1 + Math.abs(w)), `${o}[${i}] ${g[i]} vs ${w}`));
        }
      });
    } finally {
      m.dispose();
    }
  }
});

test('more than 64 graph inputs or outputs: a clear error naming the limit; the runtime stays usable', () => {
  const names = Array.from({ length: N }, (_, i) => `x${i}`);
  const manyIn = makeModel({ nodes: [['Sum', names, ['y']]], inputs: names.map((n) => [n, 1, [2]]), outputs: [['y', 1, null]] });
  assert.throws(() => tp.onnx.load(manyIn), /70 graph inputs \(at most 64\)/);
  const manyOut = makeModel({ nodes: names.map((n) => ['Neg', ['x'], [n]]), inputs: [['x', 1, [2]]], outputs: names.map((n) => [n, 1, null]) });
  assert.throws(() => tp.onnx.load(manyOut), /70 graph outputs \(at most 64\)/);
  const m = tp.onnx.load(makeModel({ nodes: [['Neg', ['x'], ['y']]], inputs: [['x', 1, [2]]], outputs: [['y', 1, null]] }));
  try {
    tp.scope(() => assert.deepEqual([...m.run({ x: tp.tensor([1, -2]) }).y.toArray()], [-1, 2]));
  } finally {
    m.dispose();
  }
});

test('a model listing 66 initializers as graph inputs before its runtime inputs: a shape input after them still becomes a value input', async () => {
  /* value inputs are numbered by runtime input (the inputs without an
   * initializer), not by their place among all 68 graph inputs */
  const K = 66;
  const ws = Array.from({ length: K }, (_, i) => `w${i}`);
  const bytes = makeModel({
    opset: 13,
    nodes: [['Sum', ws, ['s']], ['Mul', ['x', 's'], ['xs']], ['Reshape', ['xs', 'shape'], ['y']]],
    initializers: ws.map((n, i) => [n, 1, [1], Float32Array.of((i % 3) * 0.5)]),
    inputs: [...ws.map((n) => [n, 1, [1]]), ['x', 1, [6]], ['shape', 7, [2]]],
    outputs: [['y', 1, null]],
  });
  const x = Float32Array.of(1, 2, 3, 4, 5, 6), sum = Array.from({ length: K }, (_, i) => (i % 3) * 0.5).reduce((a, b) => a + b, 0);
  const sess = await ort.InferenceSession.create(bytes);
  for (const backend of ['', 'stax']) {
    const m = tp.onnx.load(bytes, { backend });
    try {
      assert.deepEqual(m.inputNames, ['x', 'shape']);
      for (const shape of [[2, 3], [3, 2], [2, 3]]) {
        const want = await sess.run({ x: new ort.Tensor('float32', x, [6]), shape: new ort.Tensor('int64', BigInt64Array.from(shape.map(BigInt)), [2]) });
        tp.scope(() => {
          const y = m.run({ x: tp.tensor(x), shape: tp.tensor(shape, { dtype: 'int64' }) }).y;
          assert.deepEqual(y.shape, shape);
          assert.deepEqual([...y.toArray()], [...x].map((v) => v * sum));
          assert.deepEqual([...y.toArray()], [...want.y.data]);
        });
      }
      assert.equal(m.specializations(), 2, 'one per shape value');
      assert.match(m.explain(), /input 'shape'.*value guard/);
    } finally {
      m.dispose();
    }
  }
  await sess.release();
});
