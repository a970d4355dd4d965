// The integer ops (mod, fmod, bitwiseAnd/Or/Xor/Not) and det from JS, with
// hand-computed values and errors; and an ONNX DFT model (dft_length fed at
// run time) against onnxruntime-node, eager and stax.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';
import { needOrt } from './_ort.mjs';
import { makeModel } from './_onnx_pb.mjs';

const live0 = tp.liveTensors();
const vals = (t) => [...t.toArray()].map(Number);

test('mod / fmod: the divisor\'s and the dividend\'s sign, broadcast, scalars, a zero divisor is an error', () => {
  tp.scope(() => {
    const a = tp.tensor([7, -7, 7, -7, 6], { dtype: 'int32' });
    const b = tp.tensor([3, 3, -3, -3, -3], { dtype: 'int32' });
    assert.deepEqual(vals(tp.mod(a, b)), [1, 2, -2, -1, 0]);
    assert.deepEqual(vals(a.fmod(b)), [1, -1, 1, -1, 0]);
    assert.equal(tp.mod(a, b).dtype, 'int32');
    assert.deepEqual(vals(a.mod(4)), [3, 1, 3, 1, 2]);
    const c = tp.tensor([10, -10], { dtype: 'int64', shape: [2, 1] });
    const d = tp.tensor([4, -4, 3], { dtype: 'int64' });
    const y = c.mod(d);
    assert.deepEqual(y.shape, [2, 3]);
    assert.deepEqual(vals(y), [2, -2, 1, 2, -2, 2]);
    assert.deepEqual(vals(tp.fmod(c, d)), [2, 2, 1, -2, -2, -1]);
    /* INT32_MIN by -1: 0, never a trap */
    assert.deepEqual(vals(tp.mod(tp.tensor([-2147483648], { dtype: 'int32' }), -1)), [0]);
    assert.throws(() => tp.mod(a, tp.tensor([1, 0, 1, 1, 1], { dtype: 'int32' })), /mod: integer division by zero.*\[1\]/);
    assert.throws(() => tp.mod(tp.tensor([1.5]), tp.tensor([2])), /mod: .*float32.*int32 or int64/);
    assert.throws(() => a.fmod(1.5), /fmod: .*int32 or int64/);
    /* the runtime stays usable */
    assert.deepEqual(vals(a.mod(5)), [2, 3, 2, 3, 1]);
  });
});

test('bitwiseAnd / Or / Xor / Not on int32 and int64', () => {
  tp.scope(() => {
    const a = tp.tensor([12, -1, -8], { dtype: 'int32' });
    const b = tp.tensor([10, 5, 7], { dtype: 'int32' });
    assert.deepEqual(vals(tp.bitwiseAnd(a, b)), [8, 5, 0]);
    assert.deepEqual(vals(a.bitwiseOr(b)), [14, -1, -1]);
    assert.deepEqual(vals(a.bitwiseXor(b)), [6, -6, -1]);
    assert.deepEqual(vals(tp.bitwiseNot(a)), [-13, 0, 7]);
    assert.deepEqual(vals(a.bitwiseAnd(3)), [0, 3, 0]);
    const e = tp.tensor([-9223372036854775808n, 9223372036854775807n, 0n], { dtype: 'int64' });
    assert.deepEqual([...e.bitwiseNot().toArray()], [9223372036854775807n, -9223372036854775808n, -1n]);
    assert.throws(() => tp.bitwiseNot(tp.tensor([1])), /bitwise_not: .*float32/);
  });
});

test('det: 2x2, 3x3 with a row swap, batched, singular; non-square refused', () => {
  tp.scope(() => {
    assert.deepEqual(vals(tp.det(tp.tensor([1, 2, 3, 4], { shape: [2, 2] }))), [-2]);
    const d3 = tp.tensor([0, 1, 2, 3, 4, 5, 6, 7, 9], { shape: [3, 3] }).det();
    assert.deepEqual(d3.shape, []);
    assert.ok(Math.abs(vals(d3)[0] + 3) < 1e-5);
    const bt = tp.det(tp.tensor([2, 0, 0, 3, 1, 1, 1, 1, 0, 1, 1, 0], { shape: [3, 2, 2] }));
    assert.deepEqual(bt.shape, [3]);
    assert.deepEqual(vals(bt), [6, 0, -1]);
    assert.throws(() => tp.det(tp.tensor([1, 2, 3, 4, 5, 6], { shape: [2, 3] })), /det: .*square.*\[2,3\]/);
  });
});

test('DFT (opset 17) with dft_length fed at run time matches onnxruntime-node, eager and stax', async () => {
  const ort = needOrt();
  const cases = [
    { attrs: { axis: 1 }, n: 16 },
    { attrs: { axis: 1, onesided: 1 }, n: 12 }, /* truncated, one-sided */
    { attrs: { axis: 1 }, n: 20 }, /* zero-padded */
    { attrs: { axis: 1, inverse: 1 }, n: 16 },
  ];
  const L = 16;
  const data = Float32Array.from({ length: 2 * L }, (_, i) => Math.sin(0.7 * i) + 0.25 * ((i * 7) % 5));
  for (const { attrs, n } of cases) {
    const bytes = makeModel({ nodes: [['DFT', ['x', 'n'], ['y'], attrs]],
      inputs: [['x', 1, [2, L, 1]], ['n', 7, []]], outputs: [['y', 1, null]] });
    const session = await ort.InferenceSession.create(bytes);
    const res = await session.run({ x: new ort.Tensor('float32', data, [2, L, 1]),
      n: new ort.Tensor('int64', BigInt64Array.from([BigInt(n)]), []) });
    const want = res[session.outputNames[0]];
    const scale = Math.max(...Array.from(want.data, Math.abs));
    for (const backend of [null, 'stax']) {
      const m = tp.onnx.load(bytes, backend ? { backend } : {});
      try {
        tp.scope(() => {
          const [y] = m.run(tp.tensor(data, { shape: [2, L, 1] }), tp.tensor([n], { dtype: 'int64', shape: [] }));
          const label = `DFT ${JSON.stringify(attrs)} n=${n} ${backend ?? 'eager'}`;
          assert.deepEqual(y.shape, Array.from(want.dims), `${label}: shape`);
          const g = y.toArray();
          for (let i = 0; i < g.length; i++)
            assert.ok(Math.abs(g[i] - want.data[i]) <= 1e-5 * scale + 1e-6, `${label}[${i}]: ${g[i]} vs ${want.data[i]}`);
        });
      } finally {
        m.dispose();
      }
    }
    if (session.release) await session.release();
  }
});

test('export: mod, fmod and det as ONNX Mod / Det run in onnxruntime-node; bitwise ops refused naming opset 18', async () => {
  const ort = needOrt();
  const a = tp.tensor([7, -7, 7, -7, 2147483647], { dtype: 'int32' });
  const b = tp.tensor([3, 3, -3, -3, -2], { dtype: 'int32' });
  const m = tp.tensor([2, 1, 2, 6, 0, 1, 2, 3], { shape: [2, 2, 2] });
  try {
    const fn = (x, y, z) => [tp.mod(x, y), tp.fmod(x, y), tp.det(z)];
    const bytes = tp.onnx.save(fn, [a, b, m]);
    const session = await ort.InferenceSession.create(bytes);
    const feeds = {};
    [a, b, m].forEach((t, k) => { feeds[session.inputNames[k]] = new ort.Tensor(t.dtype, t.toArray(), t.shape); });
    const res = await session.run(feeds);
    const outs = session.outputNames.map((n) => Array.from(res[n].data, Number));
    /* by hand: Python's %, C's %, det([[2,1],[2,6]]) = 12 - 2 = 10, det([[0,1],[2,3]]) = -2 */
    assert.deepEqual(outs[0], [1, 2, -2, -1, -1]);
    assert.deepEqual(outs[1], [1, -1, 1, -1, 1]);
    assert.ok(Math.abs(outs[2][0] - 10) < 1e-4 && Math.abs(outs[2][1] + 2) < 1e-4, `det ${outs[2]}`);
    assert.throws(() => tp.onnx.save((x, y) => tp.bitwiseAnd(x, y), [a, b]), /bitwise_and.*opset 18/);
    if (session.release) await session.release();
  } finally {
    a.dispose(), b.dispose(), m.dispose();
  }
});

test('DFT / STFT / MelWeightMatrix: bad parameters are clear errors, at load or at run time, and the model stays usable', () => {
  const bad = (nodes, inputs, re) => assert.throws(() => {
    const m = tp.onnx.load(makeModel({ nodes, inputs, outputs: [['y', 1, null]] }));
    try {
      tp.scope(() => m.run(...inputs.map(([, e, d]) => (e === 7 ? tp.tensor([0], { dtype: 'int64', shape: d }) : tp.zeros(d)))));
    } finally {
      m.dispose();
    }
  }, re);
  bad([['DFT', ['x'], ['y'], { axis: 2 }]], [['x', 1, [2, 4, 1]]], /axis 2 is out of range for a signal of rank 3/);
  bad([['DFT', ['x'], ['y'], {}]], [['x', 1, [2, 4, 3]]], /last dim of 1 \(real\) or 2 \(complex\)/);
  bad([['DFT', ['x'], ['y'], { onesided: 1 }]], [['x', 1, [2, 4, 2]]], /onesided needs a real signal/);
  bad([['STFT', ['x', 's'], ['y'], {}]], [['x', 1, [1, 8, 1]], ['s', 7, []]], /frame_step must be at least 1, got 0/);
  bad([['MelWeightMatrix', ['a', 'b', 'c', 'd', 'e'], ['y'], {}]], [['a', 7, []], ['b', 7, []], ['c', 7, []], ['d', 7, []], ['e', 7, []]],
    /num_mel_bins must be an integer in 1\.\./);
  /* dft_length fed at run time: 0 is refused, then a good value runs */
  const m = tp.onnx.load(makeModel({ nodes: [['DFT', ['x', 'n'], ['y'], {}]], inputs: [['x', 1, [1, 4, 1]], ['n', 7, []]],
    outputs: [['y', 1, null]] }));
  try {
    tp.scope(() => {
      const x = tp.tensor([1, 2, 3, 4], { shape: [1, 4, 1] });
      assert.throws(() => m.run(x, tp.tensor([0], { dtype: 'int64', shape: [] })), /dft_length must be at least 1, got 0/);
      /* by hand: X0 = 10, X1 = -2 + 2i, X2 = -2, X3 = -2 - 2i */
      const [y] = m.run(x, tp.tensor([4], { dtype: 'int64', shape: [] }));
      assert.deepEqual(y.shape, [1, 4, 2]);
      const want = [10, 0, -2, 2, -2, 0, -2, -2];
      y.toArray().forEach((v, i) => assert.ok(Math.abs(v - want[i]) < 1e-5, `X[${i}] ${v} vs ${want[i]}`));
    });
  } finally {
    m.dispose();
  }
});

test('opset 1: Not loads (unchanged since), an op whose meaning changed names the opset floor', () => {
  const m = tp.onnx.load(makeModel({ nodes: [['Not', ['x'], ['y']]], inputs: [['x', 9, [3]]], outputs: [['y', 9, null]], opset: 1 }));
  try {
    tp.scope(() => {
      const [y] = m.run(tp.tensor([1, 0, 1], { dtype: 'bool' }));
      assert.deepEqual([...y.toArray()].map(Number), [0, 1, 0]);
    });
  } finally {
    m.dispose();
  }
  assert.throws(() => tp.onnx.load(makeModel({ nodes: [['Relu', ['x'], ['y']]], inputs: [['x', 1, [3]]],
    outputs: [['y', 1, null]], opset: 5 })), /\(Relu\) is not supported at opset 5 \(its meaning changed since; opset 7 or newer is required\)/);
});

test('no tensors leak', () => {
  assert.equal(tp.liveTensors(), live0);
});
