// examples/web/onnx_inputs.js: the inputs the web example makes for an
// ONNX model from its declared inputs (tp.onnx.load(...).inputs) and the
// form's edits. Defaults worked out by hand from the rules in that file;
// bad edits refused naming the field; the tensors made for a real model's
// declared inputs run it (tests/browser/web_onnx.test.mjs drives the page).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';
import { resolveInputs, makeInputs } from '../../examples/web/onnx_inputs.js';
import { OnnxGraph } from '../../bench/lib/onnx_write.mjs';

// Silero VAD v5's declared inputs, as tp.onnx.load reports them
const SILERO = [
  { name: 'input', dtype: 'float32', dims: [null, null], dimNames: ['?', '?'] },
  { name: 'state', dtype: 'float32', dims: [2, null, 128], dimNames: [null, '?', null] },
  { name: 'sr', dtype: 'int64', dims: [], dimNames: [] },
];
// PP-OCR detection's
const DET = [{ name: 'x', dtype: 'float32', dims: [null, 3, null, null], dimNames: ['p2o.DynamicDimension.0', null, 'p2o.DynamicDimension.1', 'p2o.DynamicDimension.2'] }];

test('defaults: batch-like axes 1, image sides 64, a sequence 512, sr 16000', () => {
  const s = resolveInputs(SILERO);
  assert.deepEqual(s.map((r) => r.dims), [[1, 512], [2, 1, 128], []]);
  assert.deepEqual(s[2].values, [16000]);
  assert.deepEqual(s.flatMap((r) => r.fields.map((f) => f.key)), ['dim:input:0', 'dim:input:1', 'dim:state:1', 'value:sr']);
  const d = resolveInputs(DET);
  assert.deepEqual(d[0].dims, [1, 3, 64, 64]);
  assert.deepEqual(d[0].fields.map((f) => [f.key, f.value]),
    [['dim:p2o.DynamicDimension.0', 1], ['dim:p2o.DynamicDimension.1', 64], ['dim:p2o.DynamicDimension.2', 64]]);
});

test('edits: a named dim is shared by every input that declares it; values parsed', () => {
  const decl = [
    { name: 'a', dtype: 'float32', dims: [null, 4], dimNames: ['T', null] },
    { name: 'b', dtype: 'float32', dims: [4, null], dimNames: [null, 'T'] },
    { name: 'k', dtype: 'int32', dims: [2], dimNames: [null] },
  ];
  const r = resolveInputs(decl, { 'dim:T': '7', 'value:k': ' 3, -2 ' });
  assert.deepEqual(r.map((x) => x.dims), [[7, 4], [4, 7], [2]]);
  assert.deepEqual(r[2].values, [3, -2]);
  assert.deepEqual(resolveInputs(decl)[2].values, [0, 0]);
});

test('bad edits are refused, naming the field', () => {
  assert.throws(() => resolveInputs(SILERO, { 'dim:input:1': '0' }), /input axis 1 \(dim:input:1\) must be a positive integer, got "0"/);
  assert.throws(() => resolveInputs(SILERO, { 'dim:input:1': '2.5' }), /must be a positive integer, got "2.5"/);
  assert.throws(() => resolveInputs(SILERO, { 'value:sr': 'abc' }), /sr \(value:sr\) must be integers separated by commas, got "abc"/);
  assert.throws(() => resolveInputs(SILERO, { 'value:sr': '8000, 16000' }), /sr \(value:sr\) needs 1 value for shape \[\], got 2/);
});

test('makeInputs: the tensors run a model with a symbolic dim and an int64 scalar input (y = x * k)', () => {
  const g = new OnnxGraph('xk');
  g.op('Mul', [g.input('x', ['N', 3]), g.op('Cast', [g.input('k', [], 'int64')], { to: 1 })], {}, 'y');
  g.output('y', ['N', 3]);
  const m = tp.onnx.load(g.model({ opset: 17 }));
  try {
    tp.scope(() => {
      const r = resolveInputs(m.inputs, { 'dim:N': 2, 'value:k': '3' });
      const [x, k] = makeInputs(tp, r);
      assert.deepEqual(x.shape, [2, 3]);
      assert.equal(k.dtype, 'int64');
      assert.deepEqual([...tp.randn([2, 3], { seed: 1 }).toArray()], [...x.toArray()], 'float input 0: randn seed 1');
      const [y] = m.run([x, k]);
      const xv = x.toArray(), yv = y.toArray();
      for (let i = 0; i < 6; i++) assert.ok(Math.abs(yv[i] - 3 * xv[i]) <= 1e-6 * Math.abs(xv[i]) + 1e-7, `y[${i}] = ${yv[i]}, 3 x[${i}] = ${3 * xv[i]}`);
    });
  } finally {
    m.dispose();
  }
});
