// tp.compiler.compile: capture a JS function, replay it, graph breaks,
// exceptions, output structures, and no leaks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';
import { assertClose } from './_ref.mjs';

const live0 = tp.liveTensors();

test('the README example gives the same numbers as f(x)', () => {
  const x = tp.randn([64, 784], { seed: 1 });
  const w = tp.randn([512, 784], { seed: 2 });
  const b = tp.zeros([512]);
  const f = (x) => tp.relu(tp.linear(x, w, b)).sum({ dim: 1 });
  const g = tp.compiler.compile(f, { backend: 'eager' });
  const want = tp.scope(() => f(x));
  const got = g(x);
  assert.deepEqual(got.shape, [64]);
  assertClose(got.toArray(), want.toArray(), { rtol: 1e-5, atol: 1e-3 });
  // second call: replayed from the cache
  const again = g(x);
  assertClose(again.toArray(), want.toArray(), { rtol: 1e-5, atol: 1e-3 });
  assert.equal(g.numCaptures, 1);
  const text = g.graph();
  assert.equal(typeof text, 'string');
  assert.match(text, /linear/);
  assert.match(text, /relu/);
  for (const t of [x, w, b, want, got, again]) t.dispose();
  g.dispose();
  assert.equal(tp.liveTensors(), live0);
});

test('caching: one capture per input shape', () => {
  const before = tp.liveTensors();
  const f = (a, b) => a.mul(b).add(1);
  const g = tp.compile(f);
  tp.scope(() => {
    const a = tp.tensor([1, 2, 3]);
    const b = tp.tensor([4, 5, 6]);
    assert.deepEqual(Array.from(g(a, b).toArray()), [5, 11, 19]);
    assert.equal(g.numCaptures, 1);
    const c = tp.tensor([7, 8, 9]);
    assert.deepEqual(Array.from(g(a, c).toArray()), [8, 17, 28]);
    assert.equal(g.numCaptures, 1, 'same shapes: no new capture');
    const d = tp.tensor([[1, 2], [3, 4]]);
    assert.deepEqual(Array.from(g(d, d).toArray()), [2, 5, 10, 17]);
    assert.equal(g.numCaptures, 2, 'new shape: a new capture');
    assert.deepEqual(Array.from(g(a, b).toArray()), [5, 11, 19]);
    assert.equal(g.numCaptures, 2);
  });
  g.dispose();
  assert.equal(tp.liveTensors(), before);
});

test('toArray inside the function: fullgraph throws GraphCaptureError naming toArray', () => {
  const before = tp.liveTensors();
  const f = (x) => {
    const v = x.toArray();
    return x.mul(v[0]);
  };
  const g = tp.compile(f, { fullgraph: true });
  const x = tp.tensor([2, 3]);
  assert.throws(() => g(x), (e) => {
    assert.ok(e instanceof tp.GraphCaptureError, `${e.constructor.name}: ${e.message}`);
    assert.equal(e.code, 4);
    assert.match(e.message, /toArray/);
    return true;
  });
  g.dispose();
  x.dispose();
  assert.equal(tp.liveTensors(), before);
});

test('toArray inside the function without fullgraph gives correct results', () => {
  const before = tp.liveTensors();
  const f = (x) => {
    const v = x.toArray();
    return x.mul(v[0]).add(1);
  };
  const g = tp.compile(f);
  tp.scope(() => {
    const x = tp.tensor([2, 3]);
    assert.deepEqual(Array.from(g(x).toArray()), [5, 7]);
    assert.deepEqual(Array.from(g(x).toArray()), [5, 7]);
    const y = tp.tensor([3, 1]);
    assert.deepEqual(Array.from(g(y).toArray()), [10, 4], 'data-dependent: runs f again');
  });
  g.dispose();
  assert.equal(tp.liveTensors(), before);
});

test('an exception thrown inside fn reaches the caller as the same object', () => {
  const before = tp.liveTensors();
  const err = new RangeError('inside fn');
  let calls = 0;
  const g = tp.compile((x) => {
    calls++;
    x.add(1); // an intermediate that must be freed
    throw err;
  });
  const x = tp.ones([2]);
  assert.throws(() => g(x), (e) => e === err);
  assert.equal(calls, 1);
  // and the runtime still works
  tp.scope(() => assert.deepEqual(Array.from(x.add(1).toArray()), [2, 2]));
  // a TensorPlayError raised by an op inside fn also arrives as itself
  const g2 = tp.compile((a) => a.matmul(tp.zeros([5, 5])));
  let inner;
  assert.throws(() => g2(x), (e) => {
    inner = e;
    return e instanceof tp.TensorPlayError && /matmul/.test(e.message);
  });
  assert.notEqual(inner.code, 8);
  g.dispose();
  g2.dispose();
  x.dispose();
  assert.equal(tp.liveTensors(), before);
});

test('output structures: arrays, objects, inputs and repeats', () => {
  const before = tp.liveTensors();
  const g = tp.compile((a, b) => {
    const s = a.add(b);
    return { s, pair: [s, a], d: a.sub(b), k: 3 };
  });
  tp.scope(() => {
    const a = tp.tensor([1, 2]);
    const b = tp.tensor([10, 20]);
    for (let i = 0; i < 2; i++) {
      const r = g(a, b);
      assert.deepEqual(Array.from(r.s.toArray()), [11, 22]);
      assert.deepEqual(Array.from(r.pair[0].toArray()), [11, 22]);
      assert.deepEqual(Array.from(r.pair[1].toArray()), [1, 2]);
      assert.deepEqual(Array.from(r.d.toArray()), [-9, -18]);
      assert.equal(r.k, 3);
    }
    assert.equal(g.numCaptures, 1);
    assert.equal(a.disposed, false, 'returning an input does not dispose it');
    assert.deepEqual(Array.from(a.toArray()), [1, 2]);
  });
  g.dispose();
  assert.equal(tp.liveTensors(), before);
});

test('isCompiling is true only during capture', () => {
  const seen = [];
  const g = tp.compile((x) => {
    seen.push(tp.compiler.isCompiling());
    return x.neg();
  });
  assert.equal(tp.compiler.isCompiling(), false);
  const x = tp.ones([1]);
  tp.scope(() => {
    g(x);
  });
  assert.equal(seen[0], true);
  x.dispose();
  g.dispose();
});

test('compile options: decorator form, validation, dispose', () => {
  const before = tp.liveTensors();
  const deco = tp.compiler.compile({ backend: 'eager', name: 'double' });
  const g = deco((x) => x.mul(2));
  assert.equal(g.name, 'double');
  const x = tp.tensor([1.5]);
  tp.scope(() => assert.equal(g(x).item(), 3));
  assert.throws(() => tp.compile((v) => v, { mode: 'max', options: {} }), tp.RuntimeError);
  assert.throws(() => tp.compile((v) => v, { recompileLimit: 0 }), tp.ValueError);
  assert.throws(() => tp.compile(42), TypeError);
  // non-tensor arguments are bound in the host closure (no TypeError)
  tp.scope(() => assert.equal(g(x, 1).item(), 3));
  g.dispose();
  g.dispose();
  assert.throws(() => g(x), tp.DisposedError);
  x.dispose();
  assert.equal(tp.liveTensors(), before);
});

test('an unknown backend is reported by the core', () => {
  const before = tp.liveTensors();
  const x = tp.ones([1]);
  assert.throws(() => {
    const g = tp.compile((v) => v.add(1), { backend: 'no-such-backend' });
    try {
      g(x);
    } finally {
      g.dispose();
    }
  }, (e) => e instanceof tp.TensorPlayError && /no-such-backend/.test(e.message));
  x.dispose();
  assert.equal(tp.liveTensors(), before);
});

test('disable runs the function eagerly', () => {
  const before = tp.liveTensors();
  const f = (v) => v.add(1);
  const g = tp.compile(f, { disable: true });
  assert.equal(g, f, 'compile(fn, { disable: true }) returns fn itself (the seed)');
  const x = tp.ones([2]);
  tp.scope(() => assert.deepEqual(Array.from(g(x).toArray()), [2, 2]));
  x.dispose();
  assert.equal(tp.liveTensors(), before);
});

test('graph placeholders take the parameter names, or inputNames', () => {
  const before = tp.liveTensors();
  const x = tp.ones([2, 3]);
  const w = tp.ones([3, 3]);
  const g1 = tp.compile((inp, weight) => inp.matmul(weight));
  const g2 = tp.compile((inp, weight) => inp.matmul(weight), { inputNames: ['a', 'b'] });
  const g3 = tp.compile(({ length }, ...rest) => rest[0]);
  tp.scope(() => {
    g1(x, w);
    g2(x, w);
  });
  assert.match(g1.graph(), /%inp = placeholder/);
  assert.match(g1.graph(), /%weight = placeholder/);
  assert.match(g2.graph(), /%a = placeholder/);
  assert.equal(g3.graph(), null, 'nothing captured yet');
  for (const g of [g1, g2, g3]) g.dispose();
  x.dispose();
  w.dispose();
  assert.equal(tp.liveTensors(), before);
});

test('no tensors leaked by this file', () => {
  assert.equal(tp.liveTensors(), live0);
});
