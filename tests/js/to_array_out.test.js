// toArray(out): reads into the caller's typed array (no allocation per call).
// Values are checked against hand-computed ones; views (transposed, sliced)
// take the gather path, contiguous tensors the direct copy.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';

const live0 = tp.liveTensors();

test('toArray(out) fills and returns the caller\'s buffer, every dtype', () => {
  const f = tp.tensor([[1.5, -2], [3, 4.25]]);
  const out = new Float32Array(4).fill(99);
  assert.equal(f.toArray(out), out);
  assert.deepEqual(Array.from(out), [1.5, -2, 3, 4.25]);

  const i = tp.tensor([7, -8, 9], { dtype: 'int32' });
  assert.deepEqual(Array.from(i.toArray(new Int32Array(3))), [7, -8, 9]);
  const l = tp.tensor([2 ** 40, -3, 5], { dtype: 'int64' });
  assert.deepEqual(Array.from(l.toArray(new BigInt64Array(3))), [2n ** 40n, -3n, 5n]);
  const b = tp.scope(() => tp.gt(tp.tensor([1, 5, 2]), 2));
  assert.deepEqual(Array.from(b.toArray(new Uint8Array(3))), [0, 1, 0]);
  for (const t of [f, i, l, b]) t.dispose();
});

test('toArray(out) on the result of an op, read again into the same buffer', () => {
  const x = tp.tensor([1, 2, 3, 4, 5, 6], { shape: [2, 3] });
  const out = new Float32Array(6);
  tp.scope(() => x.mul(2).add(1).toArray(out));
  assert.deepEqual(Array.from(out), [3, 5, 7, 9, 11, 13]);
  tp.scope(() => x.neg().toArray(out)); // the same buffer, overwritten
  assert.deepEqual(Array.from(out), [-1, -2, -3, -4, -5, -6]);
  x.dispose();
});

test('toArray(out) on views: transposed and sliced (C order of the view)', () => {
  const x = tp.tensor([1, 2, 3, 4, 5, 6], { shape: [2, 3] });
  const t = x.transpose(0, 1); // [[1,4],[2,5],[3,6]]
  assert.deepEqual(Array.from(t.toArray(new Float32Array(6))), [1, 4, 2, 5, 3, 6]);
  const s = x.slice(1, 1, 3); // [[2,3],[5,6]]
  assert.deepEqual(Array.from(s.toArray(new Float32Array(4))), [2, 3, 5, 6]);
  const r = x.slice(0, 1, 2); // the second row: contiguous, at an offset
  assert.deepEqual(Array.from(r.toArray(new Float32Array(3))), [4, 5, 6]);
  for (const v of [t, s, r, x]) v.dispose();
});

test('toArray(out) into a subarray writes only that window', () => {
  const x = tp.tensor([1, 2, 3]);
  const big = new Float32Array(7).fill(-1);
  x.toArray(big.subarray(2, 5));
  assert.deepEqual(Array.from(big), [-1, -1, 1, 2, 3, -1, -1]);
  x.dispose();
});

test('toArray(out) of an empty tensor accepts an empty buffer', () => {
  const e = tp.zeros([0, 3]);
  const out = new Float32Array(0);
  assert.equal(e.toArray(out), out);
  e.dispose();
});

test('toArray(out) after a compiled call: the stax result is read into the buffer', () => {
  const w = tp.tensor([[1, 0, 2], [0, 1, -1]]); // [2,3]
  const g = tp.compiler.compile((x) => tp.relu(tp.matmul(x, w)).add(0.5));
  const x = tp.tensor([[1, 2], [3, -4]]);
  const out = new Float32Array(6);
  for (let k = 0; k < 3; k++) {
    out.fill(NaN);
    tp.scope(() => g(x).toArray(out));
    // x@w = [[1,2,0],[3,-4,10]] -> relu -> +0.5
    assert.deepEqual(Array.from(out), [1.5, 2.5, 0.5, 3.5, 0.5, 10.5]);
  }
  g.dispose();
  for (const t of [w, x]) t.dispose();
});

test('toArray(out) errors: wrong type, wrong length, not a typed array, disposed; the runtime stays usable', () => {
  const x = tp.tensor([1, 2, 3]);
  assert.throws(() => x.toArray(new Float64Array(3)),
    (e) => e instanceof TypeError && /out must be a Float32Array for a float32 tensor, got Float64Array/.test(e.message));
  assert.throws(() => x.toArray(new Int32Array(3)), (e) => e instanceof TypeError && /got Int32Array/.test(e.message));
  assert.throws(() => x.toArray([0, 0, 0]), (e) => e instanceof TypeError && /got object/.test(e.message));
  assert.throws(() => x.toArray(null), (e) => e instanceof TypeError && /got null/.test(e.message));
  assert.throws(() => x.toArray(new Float32Array(4)),
    (e) => e instanceof tp.TensorPlayError && e.status === 'INVALID_ARG' && /out has 4 elements, the tensor has 3 \(shape \[3\]\)/.test(e.message));
  const i = tp.tensor([1, 2], { dtype: 'int64' });
  assert.throws(() => i.toArray(new Int32Array(2)), /out must be a BigInt64Array for a int64 tensor/);
  const out = new Float32Array(3);
  x.dispose();
  assert.throws(() => x.toArray(out), (e) => e instanceof tp.DisposedError);
  const y = tp.tensor([4, 5, 6]);
  assert.deepEqual(Array.from(y.toArray(out)), [4, 5, 6]);
  for (const t of [i, y]) t.dispose();
});

test('toArray(out) inside a captured function is a graph break, as toArray()', () => {
  const f = (x) => {
    const buf = new Float32Array(2);
    const t = x.add(1);
    try { t.toArray(buf); } finally { t.dispose(); }
    return x.mul(buf[1]);
  };
  const gf = tp.compile(f, { fullgraph: true });
  const x = tp.tensor([1, 2]);
  assert.throws(() => gf(x), (e) => e instanceof tp.GraphCaptureError && /toArray/.test(e.message));
  const g = tp.compile(f); // falls back: same values as eager
  assert.deepEqual(Array.from(tp.scope(() => g(x).toArray())), [3, 6]);
  gf.dispose();
  g.dispose();
  x.dispose();
});

test('toArray(out) for the low-precision dtypes: float16/bfloat16 bit patterns, int8, uint8', () => {
  tp.scope(() => {
    const h = tp.tensor(tp.float32ToFloat16([1, -2, 0.5]), { dtype: 'float16' });
    assert.deepEqual(Array.from(tp.float16ToFloat32(h.toArray(new Uint16Array(3)))), [1, -2, 0.5]);
    const b = tp.tensor(tp.float32ToBfloat16([3, -0.25]), { dtype: 'bfloat16' });
    assert.deepEqual(Array.from(tp.bfloat16ToFloat32(b.toArray(new Uint16Array(2)))), [3, -0.25]);
    const i8 = tp.tensor(Int8Array.from([-128, 127, -3]), { dtype: 'int8' });
    assert.deepEqual(Array.from(i8.toArray(new Int8Array(3))), [-128, 127, -3]);
    const u8 = tp.tensor(Uint8Array.from([0, 255]), { dtype: 'uint8' });
    assert.deepEqual(Array.from(u8.toArray(new Uint8Array(2))), [0, 255]);
    assert.throws(() => i8.toArray(new Uint8Array(3)), (e) => e instanceof TypeError && /Int8Array for a int8 tensor/.test(e.message));
    assert.throws(() => h.toArray(new Float32Array(3)), (e) => e instanceof TypeError && /Uint16Array for a float16 tensor/.test(e.message));
  });
});

test('no tensors leak', () => {
  assert.equal(tp.liveTensors(), live0);
});
