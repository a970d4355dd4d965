// tp.cond and tp.whileLoop (js/src/control.js, src/capture/control.c):
// eager vs compiled (stax, eager backend) vs hand-computed values; one
// capture serves every predicate value and trip count; mismatched branches
// are errors naming the mismatch; an ONNX model whose If condition is a
// run-time input (built with makeModel) matches onnxruntime-node in both
// branches, eager and stax; a compiled cond exports to ONNX If that
// onnxruntime-node runs with the same results.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';
import { makeModel } from './_onnx_pb.mjs';

const ort = await import('onnxruntime-node');

const xv = [0.5, -1, 2], yv = [1, 0.25, -0.5];
// f(p, x, y) = cond(p, exp(x*y) + 1, x - y) * 2
const want = (take) => xv.map((x, i) => 2 * (take ? Math.exp(x * yv[i]) + 1 : x - yv[i]));
let thenCalls = 0, elseCalls = 0;
function f(p, x, y) {
  const r = tp.cond(p, (a, b) => (thenCalls++, a.mul(b).exp().add(1)), (a, b) => (elseCalls++, a.sub(b)), [x, y]);
  return r.mul(2);
}

function close(got, exp, what) {
  assert.equal(got.length, exp.length, what);
  exp.forEach((w, i) => assert.ok(Math.abs(got[i] - w) <= 1e-5 + 1e-5 * Math.abs(w), `${what}[${i}]: ${got[i]} vs ${w}`));
}

test('tp.cond: eager, compiled (stax and eager backends) and hand-computed agree; one capture for both branches', () => {
  tp.scope(() => {
    const x = tp.tensor(xv), y = tp.tensor(yv);
    thenCalls = elseCalls = 0;
    for (const take of [true, false]) close([...f(tp.tensor(take), x, y).toArray()], want(take), `eager ${take}`);
    assert.deepEqual([thenCalls, elseCalls], [1, 1], 'eager runs only the chosen branch');
    for (const backend of ['stax', 'eager']) {
      const g = tp.compile(f, { backend });
      thenCalls = elseCalls = 0;
      for (const take of [true, false, true, false])
        close([...g(tp.tensor(take), x, y).toArray()], want(take), `${backend} ${take}`);
      assert.deepEqual([thenCalls, elseCalls], [1, 1], `${backend}: both branches traced once, then the graph chooses`);
      const ex = g.explain();
      assert.equal(ex.captures, 1, `${backend}: one capture`);
      assert.match(g.graph(), /= cond\(/);
      if (backend === 'stax') {
        const bp = ex.backend_plans[0];
        assert.equal(bp.op, 2, 'the cond and its getitem are op kernels');
        assert.equal(bp.subplans, 2, 'both branches compiled as sub-plans');
        // on a Wasm host with SIMD128 each branch's fused kernel is generated code
        if (tp.isa === 'wasm-simd128') assert.equal(bp.subplan_generated, 2, 'generated kernels in the branches');
      }
      g.dispose();
    }
    // an int predicate of shape [1] and a boolean pred (chosen in JS)
    close([...tp.cond(tp.tensor([3], { dtype: 'int64' }), (a) => a.add(1), (a) => a.sub(1), [x]).toArray()],
      xv.map((v) => v + 1), 'int64 pred');
    close([...tp.cond(false, (a) => a.add(1), (a) => a.sub(1), [x]).toArray()], xv.map((v) => v - 1), 'boolean pred');
    // several results, as a structure
    const r = tp.compile((p, a) => tp.cond(p, (u) => ({ s: u.add(1), t: [u.mul(2)] }), (u) => ({ s: u.sub(1), t: [u.mul(3)] }), [a]))(
      tp.tensor(false), x);
    close([...r.s.toArray()], xv.map((v) => v - 1), 'structure s');
    close([...r.t[0].toArray()], xv.map((v) => v * 3), 'structure t');
  });
});

test('tp.cond: bad inputs are errors naming the problem; the runtime stays usable', () => {
  tp.scope(() => {
    const x = tp.tensor(xv);
    const g = tp.compile((p, a) => tp.cond(p, (u) => u.add(1), (u) => u.sum(), [a]));
    assert.throws(() => g(tp.tensor(true), x), /cond: output 0 is f32\[3\] in the then function but f32\[\] in the else function/);
    g.dispose();
    assert.throws(() => tp.cond(tp.tensor([true, false]), (u) => u, (u) => u, [x]),
      /cond: the predicate is b8\[2\]; it must be one bool or integer value/);
    assert.throws(() => tp.cond(tp.tensor(1.5), (u) => u, (u) => u, [x]), /cond: the predicate is f32\[\]/);
    assert.throws(() => tp.cond(tp.tensor(true), 'no', (u) => u, [x]), /cond: thenFn must be a function/);
    assert.throws(() => tp.cond(tp.tensor(true), (u) => u, (u) => u, [1]), /cond: operands\[0\] must be a Tensor/);
    const k = tp.compile((p, a, b) => tp.cond(p, (u) => u.add(b), (u) => u, [a]));
    assert.throws(() => k(tp.tensor(true), x, x),
      /cond: the then function reads a traced value that is not one of its operands; pass it as an operand/);
    k.dispose();
    const h = tp.compile((p, a) => tp.cond(p, (u) => [u, u], (u) => u, [a]));
    assert.throws(() => h(tp.tensor(true), x), /cond: the then function returns 2 tensors, the else function 1/);
    h.dispose();
    // a branch that returns no tensor: the same error eagerly (a tensor or a JS boolean predicate) as compiled
    assert.throws(() => tp.cond(true, () => 3, (u) => u, [x]), /cond: the then function returns no tensor/);
    assert.throws(() => tp.cond(false, (u) => u, () => 'no', [x]), /cond: the else function returns no tensor/);
    assert.throws(() => tp.cond(tp.tensor(true), () => 3, (u) => u, [x]), /cond: the then function returns no tensor/);
    const nt = tp.compile((p, a) => tp.cond(p, () => 3, (u) => u, [a]));
    assert.throws(() => nt(tp.tensor(true), x), /cond: the then function returns no tensor/);
    nt.dispose();
    close([...tp.cond(tp.tensor(true), (u) => u.add(1), (u) => u, [x]).toArray()], xv.map((v) => v + 1), 'usable');
  });
});

// while i < n: (i, a) = (i + 1, a * w + 1); n and w read by every step
function loop(n, a, w) {
  const [, out] = tp.whileLoop((i, _a, nn) => i.lt(nn), (i, acc, _n, ww) => [i.add(1), acc.mul(ww).add(1)],
    [tp.tensor(0, { dtype: 'int64' }), a], [n, w]);
  return out;
}
const a0 = [0, 1, -1], wv = [0.5, 2, -1];
const wantLoop = (n) => a0.map((v, k) => {
  for (let t = 0; t < n; t++) v = v * wv[k] + 1;
  return v;
});

test('tp.whileLoop: eager and compiled (trip count from data, one capture) match hand-computed values', () => {
  tp.scope(() => {
    const a = tp.tensor(a0), w = tp.tensor(wv);
    for (const n of [0, 3]) close([...loop(tp.tensor(n, { dtype: 'int64' }), a, w).toArray()], wantLoop(n), `eager ${n}`);
    for (const backend of ['stax', 'eager']) {
      const g = tp.compile(loop, { backend });
      for (const n of [3, 0, 5, 1]) close([...g(tp.tensor(n, { dtype: 'int64' }), a, w).toArray()], wantLoop(n), `${backend} ${n}`);
      assert.equal(g.explain().captures, 1, `${backend}: one capture for every trip count`);
      assert.match(g.graph(), /= while_loop\(/);
      g.dispose();
    }
    assert.throws(() => tp.whileLoop((i) => i.sum().lt(3), (i) => i.sum().add(1), [tp.tensor([0, 0], { dtype: 'int64' })]),
      /while_loop: output 0 is i64\[\] in the body function's result but i64\[2\]/);
    assert.throws(() => tp.whileLoop((i) => i.add(0.5), (i) => i, [tp.tensor(0.5)]), /while_loop: the cond function's result is f32\[\]/);
  });
});

// An If whose condition is a run-time input (issue 14: a VAD export's
// `sr == 16000`): then exp(x * w), else x - w, both reading the outer x
// and w; out = If + x.
const ifModel = makeModel({
  nodes: [['Equal', ['sr', 'k'], ['c']],
    ['If', ['c'], ['y'], {
      then_branch: { nodes: [['Mul', ['x', 'w'], ['t']], ['Exp', ['t'], ['t2']]], inputs: [], outputs: [['t2', 1, [3]]] },
      else_branch: { nodes: [['Sub', ['x', 'w'], ['e']]], inputs: [], outputs: [['e', 1, [3]]] },
    }],
    ['Add', ['y', 'x'], ['out']]],
  inputs: [['sr', 7, []], ['k', 7, []], ['x', 1, [3]], ['w', 1, [3]]],
  outputs: [['out', 1, null]],
});

test('ONNX If on a run-time condition: both branches match onnxruntime-node, eager and stax, one specialization', async () => {
  const sess = await ort.InferenceSession.create(ifModel);
  const x = Float32Array.from(xv), w = Float32Array.from(yv);
  for (const backend of ['', 'stax']) {
    const m = tp.onnx.load(ifModel, { backend });
    try {
      for (const sr of [16000n, 8000n, 16000n]) {
        const ref = await sess.run({ sr: new ort.Tensor('int64', [sr], []), k: new ort.Tensor('int64', [16000n], []),
          x: new ort.Tensor('float32', x, [3]), w: new ort.Tensor('float32', w, [3]) });
        tp.scope(() => {
          const got = m.run({ sr: tp.tensor(Number(sr), { dtype: 'int64' }), k: tp.tensor(16000, { dtype: 'int64' }),
            x: tp.tensor(xv), w: tp.tensor(yv) });
          close([...got.out.toArray()], [...ref.out.data], `${backend || 'eager'} sr=${sr}`);
        });
      }
      assert.equal(m.numSpecializations ?? 1, 1);
      assert.match(m.graph.print(), /= cond\(/);
      // the same model exported again: If, which onnxruntime runs
      const bytes = tp.onnx.saveGraph(m.graph);
      const s2 = await ort.InferenceSession.create(bytes);
      for (const sr of [16000n, 8000n]) {
        const feeds = { sr: new ort.Tensor('int64', [sr], []), k: new ort.Tensor('int64', [16000n], []),
          x: new ort.Tensor('float32', x, [3]), w: new ort.Tensor('float32', w, [3]) };
        const [a, b] = [await sess.run(feeds), await s2.run(feeds)];
        close([...b[s2.outputNames[0]].data], [...a.out.data], `exported sr=${sr}`);
      }
      await s2.release();
    } finally {
      m.dispose();
    }
  }
  await sess.release();
});

test('a compiled tp.cond exports to ONNX If that onnxruntime-node runs in both branches', async () => {
  const bytes = tp.scope(() => tp.onnx.save(f, [tp.tensor(true), tp.tensor(xv), tp.tensor(yv)]));
  const sess = await ort.InferenceSession.create(bytes);
  const [pn, xn, yn] = sess.inputNames;
  for (const take of [true, false]) {
    const r = await sess.run({ [pn]: new ort.Tensor('bool', [take], []), [xn]: new ort.Tensor('float32', Float32Array.from(xv), [3]),
      [yn]: new ort.Tensor('float32', Float32Array.from(yv), [3]) });
    close([...r[sess.outputNames[0]].data], want(take), `onnxruntime ${take}`);
  }
  await sess.release();
  // and back into tensorplay: an If on a run-time input imports as cond
  const m = tp.onnx.load(bytes, { backend: 'stax' });
  try {
    for (const take of [false, true])
      tp.scope(() => close([...m(tp.tensor(take), tp.tensor(xv), tp.tensor(yv))[0].toArray()], want(take), `re-imported ${take}`));
  } finally {
    m.dispose();
  }
});

// A Loop that exits on float data (y_{i+1} = y_i * 1.5 + x while y < lim,
// at most M steps; no scan outputs): one while_loop node, the body compiled
// once; compared with onnxruntime-node for several limits and counts.
const loopOnData = makeModel({
  nodes: [['Loop', ['M', '', 'y0'], ['y'], {
    body: {
      nodes: [['Mul', ['y_in', 'k'], ['h']], ['Add', ['h', 'x'], ['y_out']], ['Less', ['y_out', 'lim'], ['c2']],
        ['Squeeze', ['c2'], ['c_out']]],
      inputs: [['i', 7, []], ['c_in', 9, []], ['y_in', 1, [1]]],
      outputs: [['c_out', 9, []], ['y_out', 1, [1]]],
    },
  }]],
  inputs: [['M', 7, []], ['y0', 1, [1]], ['x', 1, [1]], ['k', 1, [1]], ['lim', 1, [1]]],
  outputs: [['y', 1, null]],
});

test('ONNX Loop exiting on float data runs as one while_loop and matches onnxruntime-node', async () => {
  const sess = await ort.InferenceSession.create(loopOnData);
  for (const backend of ['', 'stax']) {
    const m = tp.onnx.load(loopOnData, { backend });
    try {
      for (const [M, lim] of [[100n, 10], [100n, 1000], [2n, 1000], [0n, 5], [100n, -1]]) {
        const ref = await sess.run({ M: new ort.Tensor('int64', [M], []), y0: new ort.Tensor('float32', [0.5], [1]),
          x: new ort.Tensor('float32', [1], [1]), k: new ort.Tensor('float32', [1.5], [1]),
          lim: new ort.Tensor('float32', [lim], [1]) });
        tp.scope(() => {
          const got = m.run({ M: tp.tensor(Number(M), { dtype: 'int64' }), y0: tp.tensor([0.5]), x: tp.tensor([1]),
            k: tp.tensor([1.5]), lim: tp.tensor([lim]) });
          close([...got.y.toArray()], [...ref.y.data], `${backend || 'eager'} M=${M} lim=${lim}`);
        });
      }
      assert.match(m.graph.print(), /= while_loop\(/);
    } finally {
      m.dispose();
    }
  }
  await sess.release();
});

// A Scan (opset 11) with a state, two scan inputs (the second read from
// the last step) and two scan outputs (one stacked along axis 1, one
// written from the last row): s_t = s_{t-1} + x_t * r_t, y1_t = s_t * k,
// y2_t = x_t - r_t. Past 256 steps it imports as one while_loop (the body
// imported once, whatever T); shorter, it is unrolled (fused across steps);
// compared with onnxruntime-node, eager and stax, at 5, 300 and 5000 steps
// (more than unrolling allowed), and exported back to ONNX (a Loop) that
// onnxruntime runs.
const scanModel = makeModel({
  opset: 11,
  nodes: [['Scan', ['s0', 'x', 'r'], ['s', 'y1', 'y2'], {
    body: {
      nodes: [['Mul', ['x_t', 'r_t'], ['p']], ['Add', ['s_in', 'p'], ['s_out']], ['Mul', ['s_out', 'k'], ['y1_t']],
        ['Sub', ['x_t', 'r_t'], ['y2_t']]],
      inputs: [['s_in', 1, [2]], ['x_t', 1, [2]], ['r_t', 1, [2]]],
      outputs: [['s_out', 1, [2]], ['y1_t', 1, [2]], ['y2_t', 1, [2]]],
    },
    num_scan_inputs: 2, scan_input_directions: [0, 1], scan_output_axes: [1, 0], scan_output_directions: [0, 1],
  }]],
  inputs: [['s0', 1, [2]], ['x', 1, ['T', 2]], ['r', 1, ['T', 2]], ['k', 1, [1]]],
  outputs: [['s', 1, null], ['y1', 1, null], ['y2', 1, null]],
});

test('ONNX Scan: unrolled at 5 steps, one while_loop at 300 and 5000, matching onnxruntime-node; its export runs there too', async () => {
  const sess = await ort.InferenceSession.create(scanModel);
  const wave = (T, a) => Float32Array.from({ length: 2 * T }, (_, i) => Math.sin(i * a) * 0.5);
  for (const backend of ['', 'stax']) {
    let m = null;
    try {
      for (const T of [5, 300, 5000]) {
        // a fresh load per length: on stax, other lengths are served by the
        // first specialization's runner, and model.graph is that one's
        if (m) m.dispose();
        m = tp.onnx.load(scanModel, { backend });
        const x = wave(T, 0.37), r = wave(T, 0.11);
        const feeds = { s0: new ort.Tensor('float32', [0.25, -1], [2]), x: new ort.Tensor('float32', x, [T, 2]),
          r: new ort.Tensor('float32', r, [T, 2]), k: new ort.Tensor('float32', [1.5], [1]) };
        const ref = await sess.run(feeds);
        tp.scope(() => {
          const got = m.run({ s0: tp.tensor([0.25, -1]), x: tp.tensor(x, { shape: [T, 2] }),
            r: tp.tensor(r, { shape: [T, 2] }), k: tp.tensor([1.5]) });
          for (const o of ['s', 'y1', 'y2']) {
            assert.deepEqual(got[o].shape, ref[o].dims.map(Number), `${backend || 'eager'} T=${T} ${o} shape`);
            close([...got[o].toArray()], [...ref[o].data], `${backend || 'eager'} T=${T} ${o}`);
          }
        });
        const text = m.graph.print();
        if (T > 256) {
          assert.match(text, /= while_loop\(/);
          assert.ok(text.split('\n').length < 80, `the body is imported once (${text.split('\n').length} lines)`);
        } else {
          assert.doesNotMatch(text, /while_loop/, 'a short Scan is unrolled');
        }
      }
      // exported (the 5000-step specialization, first of a fresh load): the
      // while_loop as an ONNX Loop, which onnxruntime runs
      const T = 5000, x = wave(T, 0.37), r = wave(T, 0.11);
      const m2 = tp.onnx.load(scanModel, { backend });
      tp.scope(() => m2.run({ s0: tp.tensor([0.25, -1]), x: tp.tensor(x, { shape: [T, 2] }), r: tp.tensor(r, { shape: [T, 2] }),
        k: tp.tensor([1.5]) }));
      const bytes = tp.onnx.saveGraph(m2.graph);
      m2.dispose();
      const s2 = await ort.InferenceSession.create(bytes);
      const feeds = { s0: new ort.Tensor('float32', [0.25, -1], [2]), x: new ort.Tensor('float32', x, [T, 2]),
        r: new ort.Tensor('float32', r, [T, 2]), k: new ort.Tensor('float32', [1.5], [1]) };
      const [a, b] = [await sess.run(feeds), await s2.run(feeds)];
      s2.outputNames.forEach((on, i) => close([...b[on].data], [...a[['s', 'y1', 'y2'][i]].data], `exported ${on}`));
      await s2.release();
    } finally {
      if (m) m.dispose();
    }
  }
  await sess.release();
});

test('a compiled tp.whileLoop exports to ONNX Loop that onnxruntime-node runs for several trip counts', async () => {
  const bytes = tp.scope(() => tp.onnx.save(loop, [tp.tensor(3, { dtype: 'int64' }), tp.tensor(a0), tp.tensor(wv)]));
  const sess = await ort.InferenceSession.create(bytes);
  const [nn, an, wn] = sess.inputNames;
  for (const n of [0, 1, 4]) {
    const r = await sess.run({ [nn]: new ort.Tensor('int64', [BigInt(n)], []),
      [an]: new ort.Tensor('float32', Float32Array.from(a0), [3]), [wn]: new ort.Tensor('float32', Float32Array.from(wv), [3]) });
    close([...r[sess.outputNames[0]].data], wantLoop(n), `onnxruntime n=${n}`);
  }
  await sess.release();
  // back into tensorplay: the Loop's count comes from data, so it is a while_loop again
  const m = tp.onnx.load(bytes, { backend: 'stax' });
  try {
    for (const n of [2, 0, 5])
      tp.scope(() => close([...m(tp.tensor(n, { dtype: 'int64' }), tp.tensor(a0), tp.tensor(wv))[0].toArray()], wantLoop(n),
        `re-imported n=${n}`));
    assert.match(m.graph.print(), /= while_loop\(/);
  } finally {
    m.dispose();
  }
});

test('gradients through tp.cond: a compiled function with an input that requires grad matches eager', () => {
  tp.scope(() => {
    const fn = (p, x) => tp.cond(p, (u) => u.mul(u).sum(), (u) => u.exp().sum(), [x]);
    const g = tp.compile(fn);
    for (const take of [true, false]) {
      const xe = tp.tensor(xv).requiresGrad_(), xc = tp.tensor(xv).requiresGrad_();
      fn(tp.tensor(take), xe).backward();
      const lc = g(tp.tensor(take), xc);
      assert.ok(lc.requiresGrad, 'the compiled result requires grad');
      lc.backward();
      const want = xv.map((v) => (take ? 2 * v : Math.exp(v)));
      close([...xe.grad.toArray()], want, `eager grad ${take}`);
      close([...xc.grad.toArray()], want, `compiled grad ${take}`);
    }
    g.dispose();
  });
});
