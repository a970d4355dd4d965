// Errors: each asserts the class, a message substring, and that the runtime
// still works afterwards (no leaked tensors).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';

const live0 = tp.liveTensors();

function stillWorks() {
  tp.scope(() => {
    const y = tp.tensor([1, 2]).add(tp.tensor([3, 4]));
    assert.deepEqual(Array.from(y.toArray()), [4, 6]);
  });
  assert.equal(tp.liveTensors(), live0, 'live tensors back to the start value');
}

function isErr(Cls, re, code) {
  return (e) => {
    assert.ok(e instanceof Cls, `expected ${Cls.name}, got ${e && e.constructor && e.constructor.name}: ${e && e.message}`);
    assert.ok(e instanceof Error);
    assert.match(e.message, re);
    if (code !== undefined) {
      assert.equal(e.code, code);
      assert.equal(e.status, tp.STATUS_NAMES[code]);
    }
    return true;
  };
}

test('error classes carry code and status', () => {
  const e = new tp.TensorPlayError('x', 1);
  assert.equal(e.code, 1);
  assert.equal(e.status, 'INVALID_ARG');
  assert.equal(new tp.GraphCaptureError('y').status, 'CAPTURE');
  assert.equal(new tp.DisposedError().code, 7);
  assert.ok(new tp.GraphCaptureError('y') instanceof tp.TensorPlayError);
  assert.equal(tp.errors.GraphCaptureError, tp.GraphCaptureError);
});

test('wrong shapes: the message mentions the shapes', () => {
  tp.scope(() => {
    const a = tp.zeros([2, 3]);
    const b = tp.zeros([4]);
    assert.throws(() => tp.add(a, b), isErr(tp.TensorPlayError, /\[2, ?3\][\s\S]*\[4\]/, 1));
    const m = tp.zeros([4, 3]);
    const n = tp.zeros([5, 2]);
    assert.throws(() => tp.matmul(m, n), isErr(tp.TensorPlayError, /\[4, ?3\][\s\S]*\[5, ?2\]/, 1));
    assert.throws(() => a.reshape([5]), isErr(tp.TensorPlayError, /reshape/, 1));
    assert.throws(() => a.transpose(0, 5), isErr(tp.TensorPlayError, /transpose|dim/, 1));
    assert.throws(() => tp.concat([a, b], 0), isErr(tp.TensorPlayError, /concat/, 1));
  });
  stillWorks();
});

test('disposed tensor', () => {
  const t = tp.tensor([1, 2, 3]);
  t.dispose();
  t.dispose(); // idempotent
  assert.equal(t.disposed, true);
  assert.throws(() => t.toArray(), isErr(tp.DisposedError, /tensor was disposed/, 7));
  assert.throws(() => t.shape, isErr(tp.DisposedError, /tensor was disposed/, 7));
  assert.throws(() => t.add(1), isErr(tp.DisposedError, /tensor was disposed/, 7));
  const u = tp.tensor([1]);
  assert.throws(() => tp.add(u, t), isErr(tp.DisposedError, /tensor was disposed/, 7));
  u.dispose();
  stillWorks();
});

test('bad dtype name', () => {
  assert.throws(() => tp.zeros([2], { dtype: 'float64' }), isErr(tp.TensorPlayError, /dtype.*float64/, 1));
  assert.throws(() => tp.tensor([1], { dtype: 'complex' }), isErr(tp.TensorPlayError, /complex/, 1));
  const t = tp.tensor([1]);
  assert.throws(() => t.cast('double'), isErr(tp.TensorPlayError, /double/, 1));
  t.dispose();
  stillWorks();
});

test('bad handle: the core rejects it with DISPOSED', () => {
  const bogus = tp.Tensor._fromHandle(0x7ff00 | (5 << 20));
  assert.throws(() => bogus.shape, isErr(tp.DisposedError, /disposed or never existed/, 7));
  assert.throws(() => bogus.toArray(), isErr(tp.DisposedError, /disposed or never existed/, 7));
  assert.throws(() => tp.add(bogus, 1), isErr(tp.DisposedError, /disposed or never existed/, 7));
  assert.throws(() => bogus.dispose(), isErr(tp.DisposedError, /disposed or never existed/, 7));
  // a stale handle: freed, then reused by its slot with another generation
  const t = tp.tensor([1]);
  const h = t.handle;
  t.dispose();
  const t2 = tp.tensor([2]);
  const stale = tp.Tensor._fromHandle(h);
  assert.throws(() => stale.toArray(), isErr(tp.DisposedError, /disposed or never existed/, 7));
  assert.throws(() => stale.dispose(), tp.DisposedError);
  assert.deepEqual(Array.from(t2.toArray()), [2]);
  t2.dispose();
  stillWorks();
});

test('bad arguments are type errors or INVALID_ARG', () => {
  const t = tp.tensor([1, 2]);
  assert.throws(() => tp.add(t, 'x'), TypeError);
  assert.throws(() => t.sum({ dim: 0.5 }), TypeError);
  assert.throws(() => t.gelu({ approximate: 'fast' }), isErr(tp.TensorPlayError, /approximate/, 1));
  assert.throws(() => tp.zeros([1, 1, 1, 1, 1, 1, 1, 1, 1]), isErr(tp.TensorPlayError, /dims/, 1));
  assert.throws(() => new tp.Tensor(), TypeError);
  t.dispose();
  stillWorks();
});

test('graph text that does not parse gives PARSE', () => {
  assert.throws(() => tp.graph.parse('this is not a graph'), (e) => e instanceof tp.TensorPlayError && e.code === 5);
  stillWorks();
});
