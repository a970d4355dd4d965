// ONNX control flow (Scan and Loop as loops in the plan or unrolled at import; docs/onnx.md
// "Control flow") loaded with tp.onnx.load and run with every input fed at
// run time, checked against onnxruntime-node on the same model bytes (built
// by tests/js/_onnx_pb.mjs), eager and stax; the unroll bound and the
// refused data-dependent Loop exit are clear errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';
import { makeModel } from './_onnx_pb.mjs';

const ort = await import('onnxruntime-node');

// s_t = s_{t-1} + x_t (scanned from the last step); y_t = tanh(s_t) * k,
// k from the outer scope; y stacked along axis 1.
const scanBody = {
  nodes: [['Add', ['s_in', 'x_t'], ['s_out']], ['Tanh', ['s_out'], ['th']], ['Mul', ['th', 'k'], ['y_t']]],
  inputs: [['s_in', 1, null], ['x_t', 1, null]],
  outputs: [['s_out', 1, null], ['y_t', 1, null]],
};
const scanModel = (T) => makeModel({
  nodes: [['Scan', ['s0', 'x'], ['s', 'ys'], {
    body: scanBody, num_scan_inputs: 1, scan_input_directions: [1], scan_output_axes: [1],
  }]],
  inputs: [['s0', 1, [3]], ['x', 1, [T, 3]], ['k', 1, [1]]],
  outputs: [['s', 1, null], ['ys', 1, null]],
});

// y_i = y_{i-1} * 0.5 + x for M iterations (M an int64 input), stacked.
const loopModel = makeModel({
  nodes: [['Loop', ['M', '', 'y0'], ['y', 'ys'], {
    body: {
      nodes: [['Mul', ['y_in', 'half'], ['h']], ['Add', ['h', 'x'], ['y_out']], ['Identity', ['c_in'], ['c_out']],
        ['Identity', ['y_out'], ['scan']]],
      inputs: [['i', 7, []], ['c_in', 9, []], ['y_in', 1, null]],
      outputs: [['c_out', 9, []], ['y_out', 1, null], ['scan', 1, null]],
    },
  }]],
  inputs: [['M', 7, []], ['y0', 1, [2]], ['x', 1, [2]], ['half', 1, [1]]],
  outputs: [['y', 1, null], ['ys', 1, null]],
});

// while (i < n): no trip count, the body's condition reads the int64 input n
// (a value input); y_i = y_{i-1} * 0.5 + x.
const whileModel = makeModel({
  nodes: [['Loop', ['', '', 'y0'], ['y', 'ys'], {
    body: {
      nodes: [['Mul', ['y_in', 'half'], ['h']], ['Add', ['h', 'x'], ['y_out']], ['Less', ['i', 'n'], ['c_out']],
        ['Identity', ['y_out'], ['scan']]],
      inputs: [['i', 7, []], ['c_in', 9, []], ['y_in', 1, null]],
      outputs: [['c_out', 9, []], ['y_out', 1, null], ['scan', 1, null]],
    },
  }]],
  inputs: [['n', 7, []], ['y0', 1, [2]], ['x', 1, [2]], ['half', 1, [1]]],
  outputs: [['y', 1, null], ['ys', 1, null]],
});

function rand(n, seed) {
  const a = new Float32Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) s = (s * 1103515245 + 12345) % 2147483648, a[i] = (s / 2147483648) * 2 - 1;
  return a;
}

async function compare(bytes, feeds, shapes, emptyRows) {
  const sess = await ort.InferenceSession.create(bytes);
  const ortFeeds = {};
  for (const [n, v] of Object.entries(feeds))
    ortFeeds[n] = new ort.Tensor(v instanceof BigInt64Array ? 'int64' : 'float32', v, shapes[n]);
  const want = await sess.run(ortFeeds);
  await sess.release();
  for (const backend of ['', 'stax']) {
    const m = tp.onnx.load(bytes, { backend });
    try {
      tp.scope(() => {
        const ins = {};
        for (const [n, v] of Object.entries(feeds))
          ins[n] = v instanceof BigInt64Array ? tp.tensor(v[0], { dtype: 'int64' }) : tp.tensor(v).reshape(shapes[n]);
        const got = m.run(ins);
        for (const n of Object.keys(want)) {
          // an empty stack: onnxruntime gives [0] (it has no step to take the
          // row shape from); ONNX's rank is the body's + 1, which we keep
          const wdims = want[n].data.length === 0 && emptyRows?.[n] ? emptyRows[n] : [...want[n].dims];
          assert.deepEqual(got[n].shape, wdims, `${n} shape (${backend || 'eager'})`);
          const g = got[n].toArray();
          want[n].data.forEach((w, i) =>
            assert.ok(Math.abs(g[i] - w) <= 1e-5 + 1e-5 * Math.abs(w), `${n}[${i}]: ${g[i]} vs onnxruntime ${w}`));
        }
      });
    } finally {
      m.dispose();
    }
  }
}

test('Scan (reversed input, output stacked on axis 1, outer-scope value) matches onnxruntime-node', async () => {
  for (const T of [1, 5]) {
    await compare(scanModel(T), { s0: rand(3, 1), x: rand(T * 3, T), k: new Float32Array([1.5]) },
      { s0: [3], x: [T, 3], k: [1] });
  }
});

test('Loop with the trip count fed at run time matches onnxruntime-node (0 and negative counts: empty stacks; 5000: the loop form)', async () => {
  for (const M of [1n, 4n, 0n, -2n, 5000n]) {
    await compare(loopModel, { M: new BigInt64Array([M]), y0: rand(2, 3), x: rand(2, 4), half: new Float32Array([0.5]) },
      { M: [], y0: [2], x: [2], half: [1] }, { ys: [0, 2] });
  }
});

test('Loop while i < n (n an int64 input) matches onnxruntime-node', async () => {
  for (const n of [0n, 3n]) {
    await compare(whileModel, { n: new BigInt64Array([n]), y0: rand(2, 5), x: rand(2, 6), half: new Float32Array([0.5]) },
      { n: [], y0: [2], x: [2], half: [1] });
  }
});

test('a Scan of 0 steps: the final state is the initial one, the stack empty of shape [3, 0] (onnxruntime-node refuses it)', () => {
  const s0 = rand(3, 1);
  for (const backend of ['', 'stax']) {
    const m = tp.onnx.load(scanModel(0), { backend });
    try {
      tp.scope(() => {
        const got = m.run({ s0: tp.tensor(s0), x: tp.zeros([0, 3]), k: tp.tensor([1.5]) });
        assert.deepEqual([...got.s.toArray()], [...s0], `s (${backend || 'eager'})`);
        assert.deepEqual(got.ys.shape, [3, 0], `ys shape (${backend || 'eager'})`);
      });
    } finally {
      m.dispose();
    }
  }
});

test('a Scan of 5000 steps (beyond the unroll bound) runs in the plan and matches onnxruntime-node', async () => {
  const T = 5000;
  await compare(scanModel(T), { s0: rand(3, 1), x: rand(T * 3, 7), k: new Float32Array([1.5]) },
    { s0: [3], x: [T, 3], k: [1] });
});

test('a Loop that ends on its condition i < n (n an int64 input) runs in the plan: 5000 steps, no value input', () => {
  for (const backend of ['', 'stax']) {
    const l = tp.onnx.load(whileModel, { backend });
    try {
      const run = (n) => tp.scope(() => {
        const r = l.run({ n: tp.tensor(n, { dtype: 'int64' }), y0: tp.zeros([2]), x: tp.ones([2]), half: tp.tensor([0.5]) });
        return { y: [...r.y.toArray()], ys: r.ys.shape };
      });
      // i = 0 .. n run (n + 1 steps): y -> 2 - 2^-(n+1), exactly 2 in float32 after 25 steps
      assert.deepEqual(run(5000), { y: [2, 2], ys: [5001, 2] });
      assert.deepEqual(run(1), { y: [1.5, 1.5], ys: [2, 2] }); // 0 -> 1 -> 1.5
      assert.equal(l.specializations(), 1, 'one plan for every n');
    } finally {
      l.dispose();
    }
  }
});

// Two scan inputs of different lengths (distinct symbolic dims T and U, so
// only the Scan can tell): a clear error naming the node and the counts,
// at the loop-form lengths, the unrolled ones and 0; the model stays usable.
test('Scan inputs of mismatched lengths are a clear error; the model stays usable', () => {
  const model = makeModel({
    opset: 11,
    nodes: [['Scan', ['s0', 'x', 'r'], ['s', 'y'], {
      body: {
        nodes: [['Mul', ['x_t', 'r_t'], ['p']], ['Add', ['s_in', 'p'], ['s_out']], ['Identity', ['s_out'], ['y_t']]],
        inputs: [['s_in', 1, [2]], ['x_t', 1, [2]], ['r_t', 1, [2]]],
        outputs: [['s_out', 1, [2]], ['y_t', 1, [2]]],
      },
      num_scan_inputs: 2,
    }]],
    inputs: [['s0', 1, [2]], ['x', 1, ['T', 2]], ['r', 1, ['U', 2]]],
    outputs: [['s', 1, null], ['y', 1, null]],
  });
  for (const backend of ['', 'stax']) {
    const m = tp.onnx.load(model, { backend });
    try {
      for (const [t, u] of [[300, 301], [3, 4], [0, 2]]) {
        assert.throws(() => tp.scope(() => m.run({ s0: tp.zeros([2]), x: tp.zeros([t, 2]), r: tp.zeros([u, 2]) })),
          new RegExp(`\\(Scan\\): scan input 1 has ${u} steps along axis 0, scan input 0 has ${t}`));
      }
      tp.scope(() => {
        const got = m.run({ s0: tp.ones([2]), x: tp.ones([3, 2]), r: tp.ones([3, 2]).mul(2) });
        assert.deepEqual([...got.s.toArray()], [7, 7]); // 1 + 3 * (1 * 2)
        assert.deepEqual([...got.y.toArray()], [3, 3, 5, 5, 7, 7]);
      });
    } finally {
      m.dispose();
    }
  }
});

// A Loop that ends on float data and has scan outputs (issue 14): y_{i+1} =
// y_i * a + x while sum(y) < limit, at most M steps (M and the initial cond
// fed at run time); scan outputs: y per step ([k, 2]) and the iteration
// number (int64 [k]). The stacks grow as the loop runs and come back at the
// length the data gave: one plan for every input, eager and stax.
const exitModel = (withM = true) => makeModel({
  nodes: [['Loop', [withM ? 'M' : '', 'c0', 'y0'], ['y', 'ys', 'is'], {
    body: {
      nodes: [['Mul', ['y_in', 'a'], ['h']], ['Add', ['h', 'x'], ['y_out']],
        ['ReduceSum', ['y_out'], ['s'], { keepdims: 0 }], ['Less', ['s', 'limit'], ['c_out']],
        ['Identity', ['y_out'], ['scan']], ['Identity', ['i'], ['iscan']]],
      inputs: [['i', 7, []], ['c_in', 9, []], ['y_in', 1, null]],
      outputs: [['c_out', 9, []], ['y_out', 1, null], ['scan', 1, null], ['iscan', 7, []]],
    },
  }]],
  inputs: [...(withM ? [['M', 7, []]] : []), ['c0', 9, []], ['y0', 1, [2]], ['x', 1, [2]], ['a', 1, [1]], ['limit', 1, []]],
  outputs: [['y', 1, null], ['ys', 1, null], ['is', 7, null]],
});

// the loop by hand (float32 as the kernels compute it)
function exitRef({ M, c0, y0, x: x64, a: a64, limit: l64 }) {
  let y = Float32Array.from(y0);
  const x = Float32Array.from(x64), a = Math.fround(a64), limit = Math.fround(l64);
  const ys = [], is = [];
  for (let i = 0, c = c0; c && (M === undefined || i < M); i++) {
    y = y.map((v, k) => Math.fround(Math.fround(v * a) + x[k]));
    ys.push(...y), is.push(i);
    c = Math.fround(y[0] + y[1]) < limit;
  }
  return { y: [...y], ys, is, k: is.length };
}

async function runExit(bytes, cases) {
  const sess = await ort.InferenceSession.create(bytes);
  const models = ['', 'stax'].map((backend) => [backend || 'eager', tp.onnx.load(bytes, { backend })]);
  try {
    for (const c of cases) {
      const want = exitRef(c);
      const feeds = {
        c0: new ort.Tensor('bool', [c.c0], []), y0: new ort.Tensor('float32', Float32Array.from(c.y0), [2]),
        x: new ort.Tensor('float32', Float32Array.from(c.x), [2]), a: new ort.Tensor('float32', new Float32Array([c.a]), [1]),
        limit: new ort.Tensor('float32', new Float32Array([c.limit]), []),
      };
      if (c.M !== undefined) feeds.M = new ort.Tensor('int64', new BigInt64Array([BigInt(c.M)]), []);
      const o = await sess.run(feeds);
      const what = JSON.stringify(c);
      assert.deepEqual([...o.ys.data], want.ys, `onnxruntime ys ${what}`); // the hand loop is the reference both follow
      assert.deepEqual([...o.y.data], want.y, `onnxruntime y ${what}`);
      for (const [name, m] of models) {
        tp.scope(() => {
          const ins = { c0: tp.tensor(c.c0, { dtype: 'bool' }), y0: tp.tensor(c.y0), x: tp.tensor(c.x), a: tp.tensor([c.a]),
            limit: tp.tensor(c.limit) };
          if (c.M !== undefined) ins.M = tp.tensor(c.M, { dtype: 'int64' });
          const got = m.run(ins);
          assert.deepEqual(got.ys.shape, [want.k, 2], `ys shape ${name} ${what}`);
          assert.deepEqual(got.is.shape, [want.k], `is shape ${name} ${what}`);
          assert.deepEqual([...got.ys.toArray()], want.ys, `ys ${name} ${what}`);
          assert.deepEqual([...got.is.toArray()].map(Number), want.is, `is ${name} ${what}`);
          assert.deepEqual([...got.y.toArray()], want.y, `y ${name} ${what}`);
          if (want.k) assert.deepEqual([...got.ys.toArray()].slice(-2), [...o.y.data], `last row = final y ${name}`);
        });
      }
    }
    for (const [name, m] of models) assert.equal(m.specializations(), 1, `one plan for every input (${name})`);
  } finally {
    await sess.release();
    for (const [, m] of models) m.dispose();
  }
}

test('a Loop that ends on float data with scan outputs: stacks at their run-time length, matching onnxruntime-node and the hand loop', async () => {
  await runExit(exitModel(true), [
    { M: 100, c0: true, y0: [0, 0], x: [1, 2], a: 1, limit: 10 }, // 4 steps (the data ends it)
    { M: 3, c0: true, y0: [0, 0], x: [1, 2], a: 1, limit: 10 }, // 3 (M ends it)
    { M: 100, c0: true, y0: [0.5, -1], x: [0.25, 0.75], a: 1.5, limit: 40 },
    { M: 100, c0: true, y0: [0, 0], x: [1, 2], a: 1, limit: 0.5 }, // 1 step: the body runs, then its cond is false
    { M: 1000, c0: true, y0: [0, 0], x: [0.5, 0.25], a: 1, limit: 300 }, // 400 steps: the stacks grow past 16, 32, ...
    { M: 100, c0: false, y0: [3, 4], x: [1, 2], a: 1, limit: 10 }, // the initial cond false: no step, [0, 2] stacks
  ]);
});

test('a Loop that ends on data, exported again (saveGraph): a Loop whose scan outputs have a symbolic length, that onnxruntime-node runs', async () => {
  const m = tp.onnx.load(exitModel(true));
  try {
    const c = { M: 100, c0: true, y0: [0.5, -1], x: [0.25, 0.75], a: 1.5, limit: 40 };
    tp.scope(() => m.run({ M: tp.tensor(c.M, { dtype: 'int64' }), c0: tp.tensor(true, { dtype: 'bool' }), y0: tp.tensor(c.y0),
      x: tp.tensor(c.x), a: tp.tensor([c.a]), limit: tp.tensor(c.limit) }));
    const bytes = tp.onnx.saveGraph(m.graph);
    const sess = await ort.InferenceSession.create(bytes);
    const feeds = {};
    const byName = { M: new ort.Tensor('int64', BigInt64Array.of(100n), []), c0: new ort.Tensor('bool', [true], []),
      y0: new ort.Tensor('float32', Float32Array.from(c.y0), [2]), x: new ort.Tensor('float32', Float32Array.from(c.x), [2]),
      a: new ort.Tensor('float32', Float32Array.of(c.a), [1]), limit: new ort.Tensor('float32', Float32Array.of(c.limit), []) };
    sess.inputNames.forEach((n, i) => { feeds[n] = byName[n] ?? Object.values(byName)[i]; });
    const o = await sess.run(feeds);
    await sess.release();
    const want = exitRef(c);
    const outs = sess.outputNames.map((n) => o[n]);
    assert.deepEqual(Array.from(outs[1].dims, Number), [want.k, 2]);
    assert.deepEqual([...outs[1].data], want.ys);
  } finally {
    m.dispose();
  }
});

test('a Loop without a trip count that ends on float data: stacks at their run-time length, matching onnxruntime-node', async () => {
  await runExit(exitModel(false), [
    { c0: true, y0: [0, 0], x: [1, 2], a: 1, limit: 10 },
    { c0: true, y0: [1, 1], x: [0.1, 0.2], a: 1.1, limit: 50 },
    { c0: true, y0: [0, 0], x: [1, 2], a: 1, limit: -1 },
  ]);
});

test('scan outputs of a Loop that ends on data read by other nodes: the model split at the Loop, matching onnxruntime-node', async () => {
  // float exit; the stack feeds a ReduceSum and a Mul: the Loop runs in a
  // part of its own, the nodes after it specialize on the stack's length
  const readers = makeModel({
    nodes: [['Loop', ['M', 'c0', 'y0'], ['y', 'ys', 'is'], {
      body: {
        nodes: [['Add', ['y_in', 'x'], ['y_out']], ['ReduceSum', ['y_out'], ['s'], { keepdims: 0 }], ['Less', ['s', 'limit'], ['c_out']],
          ['Identity', ['y_out'], ['scan']], ['Identity', ['i'], ['iscan']]],
        inputs: [['i', 7, []], ['c_in', 9, []], ['y_in', 1, null]],
        outputs: [['c_out', 9, []], ['y_out', 1, null], ['scan', 1, null], ['iscan', 7, []]],
      },
    }], ['ReduceSum', ['ys'], ['total'], { keepdims: 0 }], ['Mul', ['ys', 'x'], ['scaled']], ['Cast', ['is'], ['isf'], { to: 1 }]],
    inputs: [['M', 7, []], ['c0', 9, []], ['y0', 1, [2]], ['x', 1, [2]], ['limit', 1, []]],
    outputs: [['total', 1, null], ['scaled', 1, null], ['isf', 1, null], ['y', 1, null]],
  });
  const sess = await ort.InferenceSession.create(readers);
  const cases = [[5, 3], [5, 100], [100, 7], [100, 40], [1, 10], [100, 3]]; // [M, limit]: 1, 5, 3, 14, 1, 1 steps
  for (const backend of ['', 'stax']) {
    const m = tp.onnx.load(readers, { backend });
    try {
      for (const [M, limit] of cases) {
        const want = await sess.run({ M: new ort.Tensor('int64', BigInt64Array.of(BigInt(M)), []), c0: new ort.Tensor('bool', [true], []),
          y0: new ort.Tensor('float32', new Float32Array(2), [2]), x: new ort.Tensor('float32', Float32Array.of(1, 2), [2]),
          limit: new ort.Tensor('float32', Float32Array.of(limit), []) });
        tp.scope(() => {
          const got = m.run({ M: tp.tensor(M, { dtype: 'int64' }), c0: tp.tensor(true, { dtype: 'bool' }), y0: tp.zeros([2]),
            x: tp.tensor([1, 2]), limit: tp.tensor(limit) });
          for (const o of ['total', 'scaled', 'isf', 'y']) {
            assert.deepEqual(got[o].shape, Array.from(want[o].dims, Number), `${o} shape M=${M} limit=${limit} (${backend || 'eager'})`);
            assert.deepEqual([...got[o].toArray()], [...want[o].data], `${o} M=${M} limit=${limit} (${backend || 'eager'})`);
          }
          // by hand: k steps, y_i = (i + 1) (1, 2): total = 3 k (k + 1) / 2
          const k = got.isf.shape[0];
          assert.equal(got.total.item(), 3 * k * (k + 1) / 2);
        });
      }
      const ex = m.explain();
      assert.match(ex, /split at Loop 'y' \(run time\)/, ex);
      assert.doesNotMatch(ex, /value guard/, 'no value input');
      assert.equal(m.specializations(), 4, `one post part per length (1, 5, 3, 14 steps): ${ex}`);
    } finally {
      m.dispose();
    }
  }
  await sess.release();
  // a trip count fed at run time (the body passes its condition through):
  // split the same way, no value input for M
  const counted = makeModel({
    nodes: [['Loop', ['M', '', 'y0'], ['y', 'ys'], {
      body: {
        nodes: [['Add', ['y_in', 'x'], ['y_out']], ['Identity', ['c_in'], ['c_out']], ['Identity', ['y_out'], ['scan']]],
        inputs: [['i', 7, []], ['c_in', 9, []], ['y_in', 1, null]],
        outputs: [['c_out', 9, []], ['y_out', 1, null], ['scan', 1, null]],
      },
    }], ['ReduceSum', ['ys'], ['total'], { keepdims: 0 }]],
    inputs: [['M', 7, []], ['y0', 1, [2]], ['x', 1, [2]]],
    outputs: [['y', 1, null], ['total', 1, null]],
  });
  for (const backend of ['', 'stax']) {
    const m = tp.onnx.load(counted, { backend });
    try {
      for (const M of [3, 5, 3, 300]) {
        // y_i = (i + 1) x from y0 = 0: total = x * M (M + 1) / 2 summed over the two lanes
        const total = tp.scope(() => m.run({ M: tp.tensor(M, { dtype: 'int64' }), y0: tp.zeros([2]), x: tp.tensor([1, 2]) }).total.item());
        assert.equal(total, 3 * M * (M + 1) / 2, `M=${M} (${backend || 'eager'})`);
      }
      assert.match(m.explain(), /split at Loop 'y' \(run time\)/);
      assert.doesNotMatch(m.explain(), /value guard/);
    } finally {
      m.dispose();
    }
  }
});

test('bad input to a Loop that ends on data: wrong dtypes and shapes are clear errors naming the input; negative M runs no step', () => {
  const m = tp.onnx.load(exitModel(true), { backend: 'stax' });
  try {
    const feeds = (o = {}) => ({ M: tp.tensor(5, { dtype: 'int64' }), c0: tp.tensor(true, { dtype: 'bool' }), y0: tp.zeros([2]),
      x: tp.ones([2]), a: tp.tensor([1]), limit: tp.tensor(100), ...o });
    assert.throws(() => tp.scope(() => m.run(feeds({ M: tp.tensor(5) }))), /input 'M' must be int64, got float32/);
    assert.throws(() => tp.scope(() => m.run(feeds({ y0: tp.zeros([3]) }))), /input 'y0' dim 0 must be 2, got shape \[3\]/);
    assert.throws(() => tp.scope(() => m.run(feeds({ c0: tp.tensor([true, false], { dtype: 'bool' }) }))), /input 'c0' must have rank 0/);
    tp.scope(() => {
      const r = m.run(feeds({ M: tp.tensor(-3, { dtype: 'int64' }) })); // ONNX: a negative trip count runs nothing
      assert.deepEqual(r.ys.shape, [0, 2]);
      assert.deepEqual(r.is.shape, [0]);
      assert.deepEqual([...r.y.toArray()], [0, 0]);
    });
    tp.scope(() => assert.deepEqual(m.run(feeds()).ys.shape, [5, 2])); // still usable
  } finally {
    m.dispose();
  }
});

test('a Loop that does not end: its stack stops at TP_LOOP_STACK_MAX bytes with an error naming the node (a child Node process)', async () => {
  const { spawnSync } = await import('node:child_process');
  const { fileURLToPath } = await import('node:url');
  const idx = fileURLToPath(new URL('../../js/index.js', import.meta.url));
  const pb = fileURLToPath(new URL('./_onnx_pb.mjs', import.meta.url));
  const src = `
    import * as tp from ${JSON.stringify(idx)};
    import { makeModel } from ${JSON.stringify(pb)};
    const bytes = Uint8Array.from(${JSON.stringify([...exitModel(false)])});
    for (const backend of ['', 'stax']) {
      const m = tp.onnx.load(bytes, { backend });
      const feeds = (limit) => ({ c0: tp.tensor(true, { dtype: 'bool' }), y0: tp.zeros([2]), x: tp.tensor([1, 2]), a: tp.tensor([1]),
        limit: tp.tensor(limit) });
      try { tp.scope(() => m.run(feeds(Infinity))); console.log('no error'); } catch (e) { console.log('ERR ' + e.message); }
      console.log('AFTER ' + tp.scope(() => m.run(feeds(10)).ys.shape.join('x')));
      m.dispose();
    }`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', src], { env: { ...process.env, TP_LOOP_STACK_MAX: '8192' }, encoding: 'utf8' });
  const lines = r.stdout.trim().split('\n');
  assert.equal(lines.length, 4, r.stdout + r.stderr);
  for (const i of [0, 2]) {
    assert.match(lines[i], /^ERR .*while_loop %y: scan output 0 would need more than 8192 bytes after 1024 steps .*TP_LOOP_STACK_MAX/, lines[i]);
    assert.equal(lines[i + 1], 'AFTER 4x2'); // the model stays usable
  }
});

test('a split at a Loop whose trip count comes from a Constant node (the Loop part holds the constant nodes too)', () => {
  const bytes = makeModel({
    nodes: [['Constant', [], ['M'], { value_int: 50 }], ['Loop', ['M', '', 'y0'], ['y', 'ys'], {
      body: {
        nodes: [['Add', ['y_in', 'x'], ['y_out']], ['ReduceSum', ['y_out'], ['s'], { keepdims: 0 }], ['Less', ['s', 'limit'], ['c_out']],
          ['Identity', ['y_out'], ['scan']]],
        inputs: [['i', 7, []], ['c_in', 9, []], ['y_in', 1, null]],
        outputs: [['c_out', 9, []], ['y_out', 1, null], ['scan', 1, null]],
      },
    }], ['ReduceSum', ['ys'], ['total'], { keepdims: 0 }]],
    inputs: [['y0', 1, [2]], ['x', 1, [2]], ['limit', 1, []]],
    outputs: [['total', 1, null]],
  });
  for (const backend of ['', 'stax']) {
    const m = tp.onnx.load(bytes, { backend });
    try {
      for (const [limit, k] of [[7, 3], [40, 14], [1e9, 50]]) { // y_i = (i + 1) (1, 2) while 3 (i + 1) < limit, at most 50 steps
        const total = tp.scope(() => m.run({ y0: tp.zeros([2]), x: tp.tensor([1, 2]), limit: tp.tensor(limit) }).total.item());
        assert.equal(total, 3 * k * (k + 1) / 2, `limit ${limit} (${backend || 'eager'})`);
      }
      assert.match(m.explain(), /split at Loop 'y' \(run time\)/);
    } finally {
      m.dispose();
    }
  }
});
