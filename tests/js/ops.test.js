// Every operator against a plain-JS reference (tests/js/_ref.mjs),
// broadcasting, views and scalar operands.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';
import * as R from './_ref.mjs';

const live0 = tp.liveTensors();

/** A float32 tensor and its reference twin. */
function pair(shape, seed, lo = -2, hi = 2) {
  const data = R.seq(R.numel(shape), seed, lo, hi);
  return [tp.tensor(data, { shape }), R.arr(shape, data)];
}

const check = (t, ref, msg) => R.assertTensor(t, ref, { msg });

test('binary elementwise ops with broadcasting', () => {
  tp.scope(() => {
    const shapes = [
      [[2, 3], [2, 3]],
      [[2, 3], [3]],
      [[4, 1], [1, 5]],
      [[2, 1, 3], [4, 1]],
      [[], [3]],
    ];
    const fns = {
      add: (a, b) => a + b,
      sub: (a, b) => a - b,
      mul: (a, b) => a * b,
      div: (a, b) => a / b,
    };
    for (const [sa, sb] of shapes) {
      const [a, ra] = pair(sa, 3);
      const [b, rb] = pair(sb, 5, 0.5, 3);
      for (const [name, fn] of Object.entries(fns)) {
        check(tp[name](a, b), R.nary(fn, ra, rb), `${name} [${sa}] [${sb}]`);
        check(a[name](b), R.nary(fn, ra, rb), `${name} method`);
      }
    }
  });
});

test('comparisons give bool', () => {
  tp.scope(() => {
    const a = tp.tensor([1, 2, 3, 4]);
    const b = tp.tensor([4, 2, 1, 5]);
    const cases = { eq: [0, 1, 0, 0], lt: [1, 0, 0, 1], gt: [0, 0, 1, 0] };
    for (const [name, want] of Object.entries(cases)) {
      const r = tp[name](a, b);
      assert.equal(r.dtype, 'bool', name);
      assert.deepEqual(Array.from(r.toArray()), want, name);
    }
    assert.deepEqual(Array.from(a.gt(2).toArray()), [0, 0, 1, 1]);
  });
});

test('where, with tensors and scalars', () => {
  tp.scope(() => {
    const c = tp.tensor([true, false, true]);
    const a = tp.tensor([1, 2, 3]);
    const b = tp.tensor([10, 20, 30]);
    assert.deepEqual(Array.from(tp.where(c, a, b).toArray()), [1, 20, 3]);
    assert.deepEqual(Array.from(a.where(c, b).toArray()), [1, 20, 3]);
    assert.deepEqual(Array.from(tp.where(c, a, 0).toArray()), [1, 0, 3]);
    // broadcast cond [3,1] against [3]
    const c2 = tp.tensor([[true], [false]]);
    const w = tp.where(c2, a, b);
    assert.deepEqual(w.shape, [2, 3]);
    assert.deepEqual(Array.from(w.toArray()), [1, 2, 3, 10, 20, 30]);
    const x = tp.tensor([-1, 2, -3]);
    assert.deepEqual(Array.from(tp.where(x.lt(0), 0, x).toArray()), [0, 2, 0]);
  });
});

test('unary ops', () => {
  tp.scope(() => {
    const [x, rx] = pair([3, 4], 11);
    const [p, rp] = pair([3, 4], 12, 0.1, 4);
    const cases = [
      ['neg', x, rx, (v) => -v],
      ['abs', x, rx, Math.abs],
      ['exp', x, rx, Math.exp],
      ['log', p, rp, Math.log],
      ['sqrt', p, rp, Math.sqrt],
      ['rsqrt', p, rp, (v) => 1 / Math.sqrt(v)],
      ['tanh', x, rx, Math.tanh],
      ['sigmoid', x, rx, (v) => 1 / (1 + Math.exp(-v))],
      ['relu', x, rx, (v) => Math.max(v, 0)],
    ];
    for (const [name, t, r, fn] of cases) {
      check(tp[name](t), R.map(r, fn), name);
      check(t[name](), R.map(r, fn), `${name} method`);
    }
    check(x.gelu(), R.map(rx, (v) => 0.5 * v * (1 + R.erf(v / Math.SQRT2))), 'gelu');
    check(tp.gelu(x, { approximate: 'none' }), R.map(rx, (v) => 0.5 * v * (1 + R.erf(v / Math.SQRT2))), 'gelu none');
    const k = Math.sqrt(2 / Math.PI);
    check(x.gelu({ approximate: 'tanh' }),
      R.map(rx, (v) => 0.5 * v * (1 + Math.tanh(k * (v + 0.044715 * v ** 3)))), 'gelu tanh');
  });
});

test('integer ops keep or promote dtypes', () => {
  tp.scope(() => {
    const a = tp.tensor([1, -2, 3], { dtype: 'int32' });
    const b = tp.tensor([2, 2, 2], { dtype: 'int32' });
    const s = a.add(b);
    assert.equal(s.dtype, 'int32');
    assert.deepEqual(Array.from(s.toArray()), [3, 0, 5]);
    const d = a.div(b);
    assert.equal(d.dtype, 'float32');
    R.assertClose(d.toArray(), [0.5, -1, 1.5]);
    assert.equal(a.abs().dtype, 'int32');
    assert.deepEqual(Array.from(a.relu().toArray()), [1, 0, 3]);
    assert.equal(a.exp().dtype, 'float32');
    const l = tp.tensor([5n, 6n]);
    assert.equal(l.dtype, 'int64');
    assert.deepEqual(Array.from(l.mul(l).toArray()), [25n, 36n]);
  });
});

test('scalars as operands follow the tensor dtype', () => {
  tp.scope(() => {
    const x = tp.tensor([1, 2, 3]);
    R.assertClose(tp.add(x, 2).toArray(), [3, 4, 5]);
    R.assertClose(tp.add(2, x).toArray(), [3, 4, 5]);
    R.assertClose(x.mul(0.5).toArray(), [0.5, 1, 1.5]);
    R.assertClose(tp.sub(10, x).toArray(), [9, 8, 7]);
    R.assertClose(tp.div(x, 4).toArray(), [0.25, 0.5, 0.75]);
    assert.equal(x.add(2).dtype, 'float32');
    const i = tp.tensor([1, 2, 3], { dtype: 'int32' });
    assert.equal(i.add(1).dtype, 'int32');
    assert.deepEqual(Array.from(i.add(1).toArray()), [2, 3, 4]);
    const f = i.add(1.5);
    assert.equal(f.dtype, 'float32');
    R.assertClose(f.toArray(), [2.5, 3.5, 4.5]);
    const sc = tp.scalar(3);
    assert.deepEqual(sc.shape, []);
  });
});

test('matmul: 2-D, vector, batched with broadcast', () => {
  tp.scope(() => {
    const [a, ra] = pair([3, 4], 21);
    const [b, rb] = pair([4, 5], 22);
    check(tp.matmul(a, b), R.matmul2(ra, rb), 'matmul 2d');
    check(a.matmul(b), R.matmul2(ra, rb), 'matmul method');
    // matrix @ vector
    const [v, rv] = pair([4], 23);
    const mv = a.matmul(v);
    const ref = R.matmul2(ra, { shape: [4, 1], data: rv.data });
    check(mv, { shape: [3], data: ref.data }, 'matmul mv');
    // batched [2,3,4] @ [4,5]
    const [ba, rba] = pair([2, 3, 4], 24);
    const out = ba.matmul(b);
    assert.deepEqual(out.shape, [2, 3, 5]);
    const want = [];
    for (let i = 0; i < 2; i++) {
      want.push(...R.matmul2({ shape: [3, 4], data: rba.data.slice(i * 12, i * 12 + 12) }, rb).data);
    }
    R.assertClose(out.toArray(), want);
  });
});

test('linear with and without bias', () => {
  tp.scope(() => {
    const [x, rx] = pair([5, 4], 31);
    const [w, rw] = pair([3, 4], 32);
    const [b, rb] = pair([3], 33);
    const y0 = R.matmul2(rx, R.transpose2(rw));
    check(tp.linear(x, w), y0, 'linear no bias');
    check(x.linear(w, b), R.nary((p, q) => p + q, y0, rb), 'linear bias');
  });
});

test('conv2d: dense, strided, depthwise, grouped, dilated, same padding; eager and stax', () => {
  tp.scope(() => {
    const cases = [
      // x shape, w shape, options, reference window
      [[1, 3, 7, 9], [4, 3, 3, 3], { padding: 1 }, { pads: [1, 1, 1, 1] }],
      [[2, 4, 8, 8], [6, 4, 3, 3], { stride: 2, padding: [1, 1, 0, 0] }, { stride: [2, 2], pads: [1, 1, 0, 0] }],
      [[1, 6, 9, 11], [6, 1, 3, 3], { padding: 'same', groups: 6 }, { pads: [1, 1, 1, 1], groups: 6 }],
      [[1, 4, 10, 13], [8, 1, 5, 5], { stride: [2, 1], padding: 2, groups: 4 }, { stride: [2, 1], pads: [2, 2, 2, 2], groups: 4 }],
      [[1, 6, 9, 9], [8, 3, 3, 2], { dilation: [2, 1], groups: 2 }, { dilation: [2, 1], groups: 2 }],
      [[1, 16, 6, 5], [24, 16, 1, 1], {}, {}],
      [[1, 3, 8, 8], [2, 3, 4, 4], { padding: 'same' }, { pads: [1, 1, 2, 2] }],
    ];
    let seed = 70;
    for (const [xs, ws, opts, win] of cases) {
      const [x, rx] = pair(xs, seed++);
      const [w, rw] = pair(ws, seed++);
      const [b, rb] = pair([ws[0]], seed++);
      const want = R.conv2d(rx, rw, rb, win);
      const label = `conv2d x [${xs}] w [${ws}] ${JSON.stringify(opts)}`;
      check(tp.conv2d(x, w, b, opts), want, label);
      check(x.conv2d(w, null, opts), R.conv2d(rx, rw, null, win), `${label} method, no bias`);
      const f = tp.compile((a) => tp.relu(tp.conv2d(a, w, b, opts)), { backend: 'stax', name: 'conv_relu' });
      // the first call's result comes from stax's plan (tests/js/compiled_path.test.js)
      check(f(x), R.nary((v) => Math.max(v, 0), want), `${label} stax`);
      assert.ok(f.explain().backend_plans[0]?.kernels >= 1, `${label}: stax built a plan`);
      f.dispose();
    }
  });
});

test('conv2d: bad input names the problem and the runtime stays usable', () => {
  tp.scope(() => {
    const x = tp.zeros([1, 3, 5, 5]), w = tp.zeros([2, 3, 3, 3]);
    assert.throws(() => tp.conv2d(tp.zeros([3, 5, 5]), w), /conv2d: input \[3,5,5\] and weight \[2,3,3,3\] must both have rank 4/);
    assert.throws(() => tp.conv2d(x, tp.zeros([2, 2, 3, 3])), /conv2d: groups 1 does not fit input \[1,3,5,5\]/);
    assert.throws(() => tp.conv2d(x, w, tp.zeros([3])), /conv2d: bias \[3\] does not match weight/);
    assert.throws(() => tp.conv2d(x, tp.zeros([2, 3, 7, 7])), /kernel extent 7x7 is larger than the padded input 5x5/);
    assert.throws(() => tp.conv2d(x, w, null, { stride: 0 }), /conv2d: stride must be an integer >= 1/);
    assert.throws(() => tp.conv2d(x, w, null, { stride: 2, padding: 'same' }), /padding 'same' needs stride 1/);
    assert.throws(() => tp.conv2d(x, w, null, { groups: 1.5 }), /conv2d: groups must be an integer >= 1/);
    assert.throws(() => tp.conv2d(x, w, null, { padding: [1, -1] }), /conv2d: padding/);
    assert.throws(() => tp.conv2d(tp.zeros([1, 3, 5, 5], { dtype: 'int32' }), w), /conv2d: input has dtype int32/);
    // a bias that is not a Tensor is an operand error, not silently taken as options
    assert.throws(() => tp.conv2d(x, w, [0.1, 0.2]), /conv2d: operand 2 must be a Tensor/);
    assert.throws(() => tp.conv2d(x, w, new Float32Array(2)), /conv2d: operand 2 must be a Tensor/);
    // im2col of one output row beyond what wasm32 (or memory) can hold: a clear error, not a wrapped size
    assert.throws(() => tp.conv2d(tp.ones([1, 1024, 1, 1]), tp.ones([1, 1024, 1, 1]), null, { padding: [0, 2 ** 20, 0, 2 ** 20] }),
      (e) => e.status === 'OUT_OF_MEMORY' && /conv2d/.test(e.message));
    const y = tp.conv2d(tp.ones([1, 3, 5, 5]), tp.ones([2, 3, 3, 3]), null, { padding: 1 });
    assert.deepEqual(y.shape, [1, 2, 5, 5]);
    assert.equal(y.toArray()[0], 12); // corner: 2x2 window in bounds x 3 channels
    assert.equal(y.toArray()[6], 27); // interior
  });
});

test('maxPool2d / avgPool2d against a JS reference, eager and stax; bad input', () => {
  tp.scope(() => {
    const cases = [
      [[1, 2, 6, 6], 2, {}, [2, 2], [2, 2], [0, 0, 0, 0]],
      [[2, 3, 7, 9], 3, { stride: 2, padding: 1 }, [3, 3], [2, 2], [1, 1, 1, 1]],
      [[1, 1, 5, 11], [3, 2], { stride: [1, 3], padding: [2, 0, 0, 1] }, [3, 2], [1, 3], [2, 0, 0, 1]],
    ];
    let seed = 90;
    for (const [xs, k, opts, kk, st, pads] of cases) {
      const [x, rx] = pair(xs, seed++);
      const label = `pool x [${xs}] k ${JSON.stringify(k)} ${JSON.stringify(opts)}`;
      check(tp.maxPool2d(x, k, opts), R.pool2d(rx, 'max', kk, st, pads), `max ${label}`);
      check(x.avgPool2d(k, opts), R.pool2d(rx, 'avg', kk, st, pads, true), `avg ${label}`);
      check(tp.avgPool2d(x, k, { ...opts, countIncludePad: false }), R.pool2d(rx, 'avg', kk, st, pads, false), `avg excl ${label}`);
      const f = tp.compile((a) => tp.maxPool2d(a.relu(), k, opts).add(tp.avgPool2d(a, k, opts)), { backend: 'stax', name: 'pools' });
      const want = R.nary((p, q) => p + q, R.pool2d(R.nary((v) => Math.max(v, 0), rx), 'max', kk, st, pads), R.pool2d(rx, 'avg', kk, st, pads, true));
      check(f(x), want, `stax ${label}`); // computed by stax's plan, the first call included
      assert.ok(f.explain().backend_plans[0]?.kernels >= 1, `${label}: stax built a plan`);
      f.dispose();
    }
    const x = tp.zeros([1, 1, 4, 4]);
    assert.throws(() => tp.maxPool2d(tp.zeros([4, 4]), 2), /max_pool2d: input \[4,4\] must have rank 4/);
    assert.throws(() => tp.maxPool2d(x, 5), /max_pool2d: kernel 5x5 is larger than the padded input 4x4/);
    assert.throws(() => tp.maxPool2d(x, 2, { padding: 2 }), /padding must be smaller than the kernel/);
    assert.throws(() => tp.avgPool2d(x, 0), /avgPool2d: kernelSize must be an integer >= 1/);
    assert.throws(() => tp.avgPool2d(x, 2, { countIncludePad: 1 }), /countIncludePad must be a boolean/);
  });
});

test('reductions: sum, mean, max, min over dims with keepdim', () => {
  tp.scope(() => {
    const [x, rx] = pair([2, 3, 4], 41);
    const fns = {
      sum: (v) => v.reduce((a, b) => a + b, 0),
      mean: (v) => v.reduce((a, b) => a + b, 0) / v.length,
      max: (v) => Math.max(...v),
      min: (v) => Math.min(...v),
    };
    const dimsCases = [undefined, 0, 1, -1, [0, 2], [1, -1]];
    for (const [name, fn] of Object.entries(fns)) {
      for (const dim of dimsCases) {
        for (const keepdim of [false, true]) {
          const dims = dim === undefined ? [] : Array.isArray(dim) ? dim : [dim];
          const ref = R.reduce(rx, dims, keepdim, fn);
          const opts = dim === undefined ? { keepdim } : { dim, keepdim };
          check(x[name](opts), ref, `${name} dim=${JSON.stringify(dim)} keepdim=${keepdim}`);
        }
      }
      // no options: all dims, 0-d result
      const all = tp[name](x);
      assert.deepEqual(all.shape, []);
      R.assertClose([all.item()], [fn(rx.data)], { msg: `${name} all` });
    }
    // sum(dim) shorthand
    check(x.sum(1), R.reduce(rx, [1], false, fns.sum), 'sum shorthand');
  });
});

test('softmax and logSoftmax', () => {
  tp.scope(() => {
    const [x, rx] = pair([3, 5], 51, -4, 4);
    for (const dim of [0, 1, -1]) {
      check(x.softmax(dim), R.alongDim(rx, dim, R.softmaxVec), `softmax ${dim}`);
      check(tp.logSoftmax(x, dim), R.alongDim(rx, dim, (v) => R.softmaxVec(v).map(Math.log)), `logSoftmax ${dim}`);
    }
  });
});

test('layerNorm with and without affine parameters', () => {
  tp.scope(() => {
    const [x, rx] = pair([4, 6], 61);
    const [w, rw] = pair([6], 62);
    const [b, rb] = pair([6], 63);
    const norm = (eps) => (v) => {
      const m = v.reduce((a, c) => a + c, 0) / v.length;
      const var_ = v.reduce((a, c) => a + (c - m) ** 2, 0) / v.length;
      return v.map((c) => (c - m) / Math.sqrt(var_ + eps));
    };
    const plain = R.alongDim(rx, -1, norm(1e-5));
    check(x.layerNorm([6]), plain, 'layerNorm plain');
    check(tp.layerNorm(x, 6), plain, 'layerNorm number shape');
    const affine = R.nary((v, p, q) => v * p + q, plain, rw, rb);
    check(x.layerNorm([6], w, b), affine, 'layerNorm affine');
    check(x.layerNorm([6], null, null, { eps: 0.5 }), R.alongDim(rx, -1, norm(0.5)), 'layerNorm eps');
    // normalize over the last two dims
    const all = x.layerNorm([4, 6]);
    R.assertClose(all.toArray(), norm(1e-5)(rx.data));
  });
});

test('views: reshape, transpose, permute, slice then toArray', () => {
  tp.scope(() => {
    const [x, rx] = pair([2, 3, 4], 71);
    const r = x.reshape([6, 4]);
    assert.deepEqual(r.shape, [6, 4]);
    R.assertClose(r.toArray(), rx.data);
    assert.deepEqual(x.reshape(4, -1).shape, [4, 6]);
    assert.deepEqual(tp.reshape(x, [-1]).shape, [24]);

    const t = x.transpose(0, 2);
    check(t, R.permute(rx, [2, 1, 0]), 'transpose(0,2)');
    check(x.transpose(-1, -2), R.permute(rx, [0, 2, 1]), 'transpose(-1,-2)');
    check(x.permute([1, 2, 0]), R.permute(rx, [1, 2, 0]), 'permute');
    check(x.permute(2, 0, 1), R.permute(rx, [2, 0, 1]), 'permute spread');

    // a view of a view, then an op on it
    const tt = t.transpose(0, 1).reshape([-1]);
    R.assertClose(tt.toArray(), R.permute(rx, [1, 2, 0]).data);
    check(t.add(1), R.map(R.permute(rx, [2, 1, 0]), (v) => v + 1), 'op on a view');

    const m = tp.arange(10);
    assert.deepEqual(Array.from(m.slice(0, 2, 5).toArray()), [2, 3, 4]);
    assert.deepEqual(Array.from(m.slice(0, 1, null, 3).toArray()), [1, 4, 7]);
    assert.deepEqual(Array.from(m.slice(0, -3).toArray()), [7, 8, 9]);
    assert.deepEqual(Array.from(m.slice(0, 0, -8).toArray()), [0, 1]);
    assert.deepEqual(Array.from(m.slice(0, 8, 100).toArray()), [8, 9]);
    const s2 = x.slice(2, 1, 3);
    assert.deepEqual(s2.shape, [2, 3, 2]);
    const want = [];
    for (let i = 0; i < 6; i++) want.push(rx.data[i * 4 + 1], rx.data[i * 4 + 2]);
    R.assertClose(s2.toArray(), want);
    const s3 = x.slice(1, 0, 3, 2);
    assert.deepEqual(s3.shape, [2, 2, 4]);
  });
});

test('concat', () => {
  tp.scope(() => {
    const a = tp.tensor([[1, 2], [3, 4]]);
    const b = tp.tensor([[5, 6]]);
    const c = tp.concat([a, b], 0);
    assert.deepEqual(c.shape, [3, 2]);
    assert.deepEqual(Array.from(c.toArray()), [1, 2, 3, 4, 5, 6]);
    const d = tp.concat([a, a, a], -1);
    assert.deepEqual(d.shape, [2, 6]);
    assert.deepEqual(Array.from(d.toArray()), [1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4]);
    const e = tp.concat([a.transpose(0, 1), b.reshape([2, 1])], 1);
    assert.deepEqual(Array.from(e.toArray()), [1, 3, 5, 2, 4, 6]);
  });
});

test('the ops table lists every operator', () => {
  for (const name of ['add', 'sub', 'mul', 'div', 'matmul', 'linear', 'conv2d', 'maxPool2d', 'avgPool2d', 'sum', 'softmax', 'layerNorm', 'concat', 'cast', 'where']) {
    assert.equal(typeof tp.ops[name], 'function', name);
  }
});

test('no tensors leaked by this file', () => {
  assert.equal(tp.liveTensors(), live0);
});
