// scope / dispose / liveTensors: no leaks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import v8 from 'node:v8';
import vm from 'node:vm';
import * as tp from '../../js/index.js';

test('scope disposes intermediates and keeps the result', () => {
  const before = tp.liveTensors();
  const x = tp.tensor([1, 2, 3]);
  const y = tp.scope(() => {
    const a = x.mul(2);
    const b = a.add(1);
    return b.relu();
  });
  assert.equal(tp.liveTensors(), before + 2); // x and y
  assert.deepEqual(Array.from(y.toArray()), [3, 5, 7]);
  y.dispose();
  x.dispose();
  assert.equal(tp.liveTensors(), before);
});

test('scope keeps every tensor in a returned array or object', () => {
  const before = tp.liveTensors();
  const out = tp.scope(() => {
    const a = tp.ones([2]);
    const b = tp.zeros([2]);
    tp.full([2], 3); // dropped
    return { a, list: [b, 5], nested: { again: a } };
  });
  assert.equal(tp.liveTensors(), before + 2);
  assert.equal(out.list[1], 5);
  assert.equal(out.nested.again, out.a);
  out.a.dispose();
  out.list[0].dispose();
  assert.equal(tp.liveTensors(), before);
});

test('nested scopes: the inner result belongs to the outer scope', () => {
  const before = tp.liveTensors();
  let inner;
  const r = tp.scope(() => {
    inner = tp.scope(() => tp.ones([3]).mul(2));
    assert.equal(inner.disposed, false);
    return inner.sum();
  });
  assert.equal(inner.disposed, true, 'the outer scope disposed the inner result');
  assert.equal(r.item(), 6);
  r.dispose();
  assert.equal(tp.liveTensors(), before);
});

test('scope disposes everything when fn throws', () => {
  const before = tp.liveTensors();
  const err = new Error('boom');
  assert.throws(() => tp.scope(() => {
    tp.ones([4]);
    tp.zeros([4]);
    throw err;
  }), (e) => e === err);
  assert.equal(tp.liveTensors(), before);
});

test('scope rejects async functions', () => {
  const before = tp.liveTensors();
  assert.throws(() => tp.scope(async () => tp.ones([1])), TypeError);
  assert.equal(tp.liveTensors(), before);
});

test('tensors made outside a scope are not touched by it', () => {
  const before = tp.liveTensors();
  const x = tp.ones([2]);
  tp.scope(() => {
    x.add(1);
  });
  assert.equal(x.disposed, false);
  assert.deepEqual(Array.from(x.toArray()), [1, 1]);
  x.dispose();
  assert.equal(tp.liveTensors(), before);
});

test('dispose is idempotent and scalar operands do not leak', () => {
  const before = tp.liveTensors();
  const x = tp.ones([2]);
  const a = x.add(3);
  const y = a.mul(2);
  x.dispose();
  x.dispose();
  assert.deepEqual(Array.from(y.toArray()), [8, 8]);
  assert.equal(tp.liveTensors(), before + 2);
  a.dispose();
  y.dispose();
  assert.equal(tp.liveTensors(), before);
});

test('the FinalizationRegistry frees leaked handles', async () => {
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc');
  const before = tp.liveTensors();
  (() => {
    for (let i = 0; i < 100; i++) tp.ones([16]);
  })();
  assert.equal(tp.liveTensors(), before + 100);
  for (let i = 0; i < 50 && tp.liveTensors() > before; i++) {
    gc();
    await new Promise((r) => setTimeout(r, 10));
  }
  assert.equal(tp.liveTensors(), before);
});
