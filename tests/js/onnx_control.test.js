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

test('control flow errors: the unroll bound of a Loop that ends on its condition, the model still usable', () => {
  const l = tp.onnx.load(whileModel);
  try {
    const run = (n) => tp.scope(() => l.run({ n: tp.tensor(n, { dtype: 'int64' }), y0: tp.zeros([2]), x: tp.ones([2]),
      half: tp.tensor([0.5]) }).y.toArray());
    assert.throws(() => run(5000), /\(Loop\).*more than 4096 iterations/);
    assert.deepEqual([...run(1)], [1.5, 1.5]); // still usable: i = 0, 1 run: 0 -> 1 -> 1.5
  } finally {
    l.dispose();
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
