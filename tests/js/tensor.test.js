// Tensor creation, shapes, dtypes and toArray values.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';
import { assertClose } from './_ref.mjs';

const live0 = tp.liveTensors();

test('the core loaded and reports its version and ops', () => {
  assert.match(tp.version, /^\d+\.\d+\.\d+/);
  assert.equal(typeof tp.isa, 'string');
  assert.ok(tp.opNames.includes('add'));
  assert.ok(tp.opNames.includes('layer_norm'));
});

test('tensor() from nested arrays infers shape, float32 by default', () => {
  const t = tp.tensor([[1, 2, 3], [4, 5, 6]]);
  assert.deepEqual(t.shape, [2, 3]);
  assert.equal(t.ndim, 2);
  assert.equal(t.size, 6);
  assert.equal(t.dtype, 'float32');
  const a = t.toArray();
  assert.ok(a instanceof Float32Array);
  assert.deepEqual(Array.from(a), [1, 2, 3, 4, 5, 6]);
  assert.deepEqual(t.toList(), [[1, 2, 3], [4, 5, 6]]);
  t.dispose();
});

test('toArray returns a copy', () => {
  const t = tp.tensor([1, 2, 3]);
  const a = t.toArray();
  a[0] = 100;
  assert.equal(t.toArray()[0], 1);
  t.dispose();
});

test('tensor() from typed arrays infers the dtype', () => {
  const cases = [
    [new Float32Array([1.5, -2]), 'float32', Float32Array],
    [new Float64Array([1.5, -2]), 'float32', Float32Array],
    [new Int32Array([7, -8]), 'int32', Int32Array],
    [new BigInt64Array([7n, -8n]), 'int64', BigInt64Array],
    [new Uint8Array([1, 0]), 'bool', Uint8Array],
  ];
  for (const [data, dtype, Ctor] of cases) {
    const t = tp.tensor(data);
    assert.equal(t.dtype, dtype);
    assert.deepEqual(t.shape, [2]);
    const a = t.toArray();
    assert.ok(a instanceof Ctor, `${dtype}: ${a.constructor.name}`);
    assert.deepEqual(Array.from(a), Array.from(data, (v) => (Ctor === BigInt64Array ? BigInt(v) : Ctor === Float32Array ? Math.fround(Number(v)) : Number(v))));
    t.dispose();
  }
});

test('tensor() with dtype and shape options', () => {
  const t = tp.tensor([1, 2, 3, 4, 5, 6], { dtype: 'int32', shape: [3, 2] });
  assert.deepEqual(t.shape, [3, 2]);
  assert.equal(t.dtype, 'int32');
  assert.deepEqual(Array.from(t.toArray()), [1, 2, 3, 4, 5, 6]);
  const b = tp.tensor([[true, false], [false, true]]);
  assert.equal(b.dtype, 'bool');
  assert.deepEqual(Array.from(b.toArray()), [1, 0, 0, 1]);
  assert.deepEqual(b.toList(), [[true, false], [false, true]]);
  const l = tp.tensor([1, 2], { dtype: 'int64' });
  assert.deepEqual(Array.from(l.toArray()), [1n, 2n]);
  for (const x of [t, b, l]) x.dispose();
});

test('tensor() from a number is 0-d; item()', () => {
  const t = tp.tensor(3.5);
  assert.deepEqual(t.shape, []);
  assert.equal(t.ndim, 0);
  assert.equal(t.size, 1);
  assert.equal(t.item(), 3.5);
  t.dispose();
  const i = tp.tensor(7, { dtype: 'int32' });
  assert.equal(i.item(), 7);
  i.dispose();
  const b = tp.tensor(true);
  assert.equal(b.dtype, 'bool');
  assert.equal(b.item(), true);
  b.dispose();
});

test('tensor() rejects ragged data', () => {
  assert.throws(() => tp.tensor([[1, 2], [3]]), (e) => e instanceof tp.TensorPlayError && /rectangular/.test(e.message));
  assert.throws(() => tp.tensor([[1, 2], 3]), (e) => e instanceof tp.TensorPlayError && /rectangular/.test(e.message));
  assert.throws(() => tp.tensor([1, 2, 3], { shape: [2, 2] }), (e) => e instanceof tp.TensorPlayError && /4/.test(e.message));
});

test('zeros, ones, full', () => {
  const z = tp.zeros([2, 3]);
  assert.deepEqual(z.shape, [2, 3]);
  assert.equal(z.dtype, 'float32');
  assert.deepEqual(Array.from(z.toArray()), [0, 0, 0, 0, 0, 0]);
  const o = tp.ones([4], { dtype: 'int32' });
  assert.equal(o.dtype, 'int32');
  assert.deepEqual(Array.from(o.toArray()), [1, 1, 1, 1]);
  const f = tp.full([2, 2], 2.5);
  assert.deepEqual(Array.from(f.toArray()), [2.5, 2.5, 2.5, 2.5]);
  const fl = tp.full([3], 9, { dtype: 'int64' });
  assert.deepEqual(Array.from(fl.toArray()), [9n, 9n, 9n]);
  const fb = tp.full([2], 1, { dtype: 'bool' });
  assert.deepEqual(Array.from(fb.toArray()), [1, 1]);
  const e = tp.zeros([0, 3]);
  assert.equal(e.size, 0);
  assert.equal(e.toArray().length, 0);
  for (const x of [z, o, f, fl, fb, e]) x.dispose();
});

test('arange', () => {
  const a = tp.arange(5);
  assert.deepEqual(Array.from(a.toArray()), [0, 1, 2, 3, 4]);
  assert.equal(a.dtype, 'float32');
  const b = tp.arange(2, 8, 2, { dtype: 'int32' });
  assert.equal(b.dtype, 'int32');
  assert.deepEqual(Array.from(b.toArray()), [2, 4, 6]);
  const c = tp.arange(0, 1, 0.25);
  assert.deepEqual(Array.from(c.toArray()), [0, 0.25, 0.5, 0.75]);
  const d = tp.arange(3, { dtype: 'int64' });
  assert.deepEqual(Array.from(d.toArray()), [0n, 1n, 2n]);
  for (const x of [a, b, c, d]) x.dispose();
});

test('randn / rand are reproducible from the seed', () => {
  const a = tp.randn([1000], { seed: 42 });
  const b = tp.randn([1000], { seed: 42 });
  const c = tp.randn([1000], { seed: 43 });
  assert.equal(a.dtype, 'float32');
  assert.deepEqual(a.toArray(), b.toArray());
  assert.notDeepEqual(a.toArray(), c.toArray());
  const v = a.toArray();
  const mean = v.reduce((s, x) => s + x, 0) / v.length;
  const sd = Math.sqrt(v.reduce((s, x) => s + (x - mean) ** 2, 0) / v.length);
  assert.ok(Math.abs(mean) < 0.15, `mean ${mean}`);
  assert.ok(Math.abs(sd - 1) < 0.15, `sd ${sd}`);
  const ut = tp.rand([2000], { seed: 7 });
  const u = ut.toArray();
  ut.dispose();
  assert.ok(u.every((x) => x >= 0 && x < 1));
  const um = u.reduce((s, x) => s + x, 0) / u.length;
  assert.ok(Math.abs(um - 0.5) < 0.05, `uniform mean ${um}`);
  const big = tp.randn([3], { seed: 2n ** 40n + 5n });
  assert.deepEqual(big.shape, [3]);
  for (const x of [a, b, c, big]) x.dispose();
});

test('values survive a round trip through cast', () => {
  const t = tp.tensor([1.75, -2.5, 0]);
  const i = t.cast('int32');
  assert.equal(i.dtype, 'int32');
  assert.deepEqual(Array.from(i.toArray()), [1, -2, 0]);
  const bl = t.cast('bool');
  assert.deepEqual(Array.from(bl.toArray()), [1, 1, 0]);
  const l = i.cast('int64');
  assert.deepEqual(Array.from(l.toArray()), [1n, -2n, 0n]);
  const f = l.cast('float32');
  assertClose(f.toArray(), [1, -2, 0]);
  for (const x of [t, i, bl, l, f]) x.dispose();
});

test('toString names shape and dtype', () => {
  const t = tp.zeros([2, 3]);
  assert.equal(String(t), 'Tensor(shape=[2, 3], dtype=float32)');
  t.dispose();
  assert.equal(String(t), 'Tensor(<disposed>)');
});

test('no tensors leaked by this file', () => {
  assert.equal(tp.liveTensors(), live0);
});
