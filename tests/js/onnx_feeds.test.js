// Feeds by name and outputs by name (onnxruntime's calling convention) next
// to the positional form, on a two-input, two-output model made with
// tp.onnx.save; values checked by hand.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';

function twoByTwo() {
  const a = tp.tensor([1, 2, 3]), b = tp.tensor([10, 20, 30]);
  const bytes = tp.onnx.save((a, b) => [a.add(b), a.mul(b)], [a, b], { inputNames: ['a', 'b'] });
  a.dispose(), b.dispose();
  return tp.onnx.load(bytes);
}

test('model.run takes feeds by name and returns outputs by name', () => {
  const m = twoByTwo();
  try {
    assert.deepEqual(m.inputNames, ['a', 'b']);
    assert.equal(m.outputNames.length, 2);
    tp.scope(() => {
      const a = tp.tensor([1, 2, 3]), b = tp.tensor([4, 5, 6]);
      // keys in any order
      const out = m.run({ b, a });
      assert.deepEqual(Object.keys(out), m.outputNames);
      assert.deepEqual([...out[m.outputNames[0]].toArray()], [5, 7, 9]);
      assert.deepEqual([...out[m.outputNames[1]].toArray()], [4, 10, 18]);
      // the positional forms are unchanged
      const [s, p] = m.run(a, b);
      assert.deepEqual([...s.toArray()], [5, 7, 9]);
      assert.deepEqual([...p.toArray()], [4, 10, 18]);
      const [s2] = m([a, b]);
      assert.deepEqual([...s2.toArray()], [5, 7, 9]);
      const byCall = m({ a, b });
      assert.deepEqual([...byCall[m.outputNames[1]].toArray()], [4, 10, 18]);
    });
  } finally {
    m.dispose();
  }
});

test('feeds by name: unknown, missing and non-tensor feeds are clear errors, and the model still runs', () => {
  const m = twoByTwo();
  try {
    tp.scope(() => {
      const a = tp.tensor([1, 2, 3]), b = tp.tensor([4, 5, 6]);
      assert.throws(() => m.run({ a, b, c: a }), /no input named 'c' \(the model's inputs: a, b\)/);
      assert.throws(() => m.run({ a }), /input 'b' is missing from the feeds/);
      assert.throws(() => m.run({ a, b: [4, 5, 6] }), /input 1 must be a Tensor/);
      const out = m.run({ a, b });
      assert.deepEqual([...out[m.outputNames[0]].toArray()], [5, 7, 9]);
    });
  } finally {
    m.dispose();
  }
});
