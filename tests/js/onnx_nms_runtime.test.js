// A detector-shaped model (conv head -> boxes, scores -> NonMaxSuppression
// -> Gather of the selected boxes), every input fed at run time, over many
// frames against onnxruntime-node: the model is split at the NMS
// (src/onnx/model.c), so the pre-NMS part is imported and compiled once, the
// NMS runs at run time, and the post part specializes only on the selected
// count K. Plus bad NMS parameters as clear errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';
import { makeModel } from './_onnx_pb.mjs';
import { needOrt } from './_ort.mjs';

let seed = 4242;
const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);

const H = 6, W = 6, N = H * W; /* one box per pixel */
function detector() {
  const w = new Float32Array(5 * 3 * 3 * 3).map(() => rand() * 2 - 1);
  const b = new Float32Array(5).map(() => rand() - 0.5);
  return makeModel({
    nodes: [
      ['Conv', ['x', 'w', 'b'], ['f'], { pads: [1, 1, 1, 1] }], // [1, 5, H, W]
      ['Reshape', ['f', 'shp'], ['f2']], // [1, 5, N]
      ['Slice', ['f2', 's0', 's4', 'ax1'], ['bc']], // [1, 4, N]
      ['Transpose', ['bc'], ['boxes0'], { perm: [0, 2, 1] }], // [1, N, 4]
      ['Mul', ['boxes0', 'scale'], ['boxes']],
      ['Slice', ['f2', 's4', 's5', 'ax1'], ['sl']], // [1, 1, N]
      ['Sigmoid', ['sl'], ['scores']],
      ['NonMaxSuppression', ['boxes', 'scores', 'maxo', 'iou', 'sthr'], ['sel'], { center_point_box: 1 }],
      ['Slice', ['sel', 's2', 's3', 'ax1'], ['idx2']], // [K, 1]
      ['Reshape', ['idx2', 'flat'], ['idx']], // [K]
      ['Reshape', ['boxes', 'shp2'], ['boxes2']], // [N, 4]
      ['Gather', ['boxes2', 'idx'], ['picked'], { axis: 0 }], // [K, 4]
      ['Reshape', ['scores', 'flat'], ['sflat']],
      ['Gather', ['sflat', 'idx'], ['pscore'], { axis: 0 }], // [K]
    ],
    initializers: [['w', 1, [5, 3, 3, 3], w], ['b', 1, [5], b], ['shp', 7, [3], BigInt64Array.of(1n, 5n, BigInt(N))],
      ['s0', 7, [1], BigInt64Array.of(0n)], ['s2', 7, [1], BigInt64Array.of(2n)], ['s3', 7, [1], BigInt64Array.of(3n)],
      ['s4', 7, [1], BigInt64Array.of(4n)], ['s5', 7, [1], BigInt64Array.of(5n)], ['ax1', 7, [1], BigInt64Array.of(1n)],
      ['flat', 7, [1], BigInt64Array.of(-1n)], ['shp2', 7, [2], BigInt64Array.of(BigInt(N), 4n)],
      ['scale', 1, [1, 1, 4], Float32Array.of(4, 4, 8, 8)]],
    inputs: [['x', 1, [1, 3, H, W]], ['maxo', 7, [1]], ['iou', 1, [1]], ['sthr', 1, [1]]],
    outputs: [['sel', 7, null], ['picked', 1, null], ['pscore', 1, null]],
  });
}

function frame() { return Array.from({ length: 3 * H * W }, () => rand() * 2 - 1); }

const FRAMES = [ // [maxo, iou, sthr]: different K, K = 0 and K = max
  [10, 0.5, 0.5], [10, 0.3, 0.6], [36, 0.5, 0.4], [0, 0.5, 0.5], [5, 1, 0], [36, 0.1, 0.5], [10, 0.5, 0.99999],
  [3, 0.7, 0.2], [36, 1, 0], [8, 0.4, 0.5], [10, 0.5, 0.5], [10, 0.5, 0.5],
];

test('a detector split at NonMaxSuppression matches onnxruntime-node over 12 frames, pre part compiled once', async () => {
  const ort = needOrt();
  const bytes = detector();
  const sess = await ort.InferenceSession.create(bytes);
  const frames = FRAMES.map(([mo, iou, st]) => ({ x: frame(), mo, iou, st }));
  const want = [];
  for (const f of frames) {
    const r = await sess.run({ x: new ort.Tensor('float32', Float32Array.from(f.x), [1, 3, H, W]),
      maxo: new ort.Tensor('int64', BigInt64Array.of(BigInt(f.mo)), [1]),
      iou: new ort.Tensor('float32', Float32Array.of(f.iou), [1]), sthr: new ort.Tensor('float32', Float32Array.of(f.st), [1]) });
    want.push(sess.outputNames.map((o) => r[o]));
  }
  const ks = new Set(want.map((w) => Number(w[0].dims[0])));
  assert.ok(ks.has(0) && ks.has(N), `the frames cover K = 0 and K = ${N} (got ${[...ks]})`);
  assert.ok(ks.size >= 5, `several distinct K: ${[...ks]}`);
  for (const backend of ['eager', 'stax']) {
    const m = tp.onnx.load(bytes, { backend });
    try {
      frames.forEach((f, i) => tp.scope(() => {
        const got = m.run(tp.tensor(f.x, { shape: [1, 3, H, W] }), tp.tensor([f.mo], { dtype: 'int64', shape: [1] }),
          tp.tensor([f.iou], { shape: [1] }), tp.tensor([f.st], { shape: [1] }));
        assert.equal(got.length, 3);
        got.forEach((g, o) => {
          const w = want[i][o];
          assert.deepEqual(g.shape, Array.from(w.dims, Number), `frame ${i} (${backend}) output ${o}: shape`);
          const gv = Array.from(g.toArray(), Number), wv = Array.from(w.data, Number);
          for (let k = 0; k < wv.length; k++)
            assert.ok(Math.abs(gv[k] - wv[k]) <= 1e-5 * (1 + Math.abs(wv[k])), `frame ${i} (${backend}) output ${o}[${k}]: ${gv[k]} vs ${wv[k]}`);
        });
      }));
      const ex = m.explain();
      const pre = /pre part (\d+) compiles?, (\d+) calls?/.exec(ex);
      assert.ok(pre, `explain names the split: ${ex}`);
      assert.equal(Number(pre[1]), 1, `the pre-NMS part is compiled once: ${ex}`);
      assert.equal(Number(pre[2]), frames.length);
      const made = Number(/(\d+) made/.exec(ex)[1]);
      assert.ok(made <= ks.size, `post-part specializations (${made}) <= distinct K (${ks.size}): ${ex}`);
      assert.doesNotMatch(ex, /value guard/, 'no input is bound to its value');
    } finally {
      m.dispose();
    }
  }
});

test('bad NonMaxSuppression parameters at run time are clear errors; the model stays usable', () => {
  const m = tp.onnx.load(detector(), { backend: 'stax' });
  const run = (mo, iou, st) => tp.scope(() => m.run(tp.tensor(frame(), { shape: [1, 3, H, W] }),
    tp.tensor([mo], { dtype: 'int64', shape: [1] }), tp.tensor([iou], { shape: [1] }), tp.tensor([st], { shape: [1] }))[0].shape);
  try {
    const bad = (e, re) => e instanceof tp.TensorPlayError && re.test(e.message) && /NonMaxSuppression/.test(e.message);
    assert.throws(() => run(-1, 0.5, 0.5), (e) => bad(e, /max_output_boxes_per_class must be >= 0, got -1/));
    assert.throws(() => run(5, NaN, 0.5), (e) => bad(e, /iou_threshold must be in \[0, 1\], got nan/i));
    assert.throws(() => run(5, 1.5, 0.5), (e) => bad(e, /iou_threshold must be in \[0, 1\], got 1.5/));
    assert.throws(() => run(5, 0.5, NaN), (e) => bad(e, /score_threshold is NaN/));
    assert.equal(run(5, 1, 0)[0], 5);
  } finally {
    m.dispose();
  }
  /* wrong box rank / scores shape, inputs of symbolic shape */
  const nms = tp.onnx.load(makeModel({ nodes: [['NonMaxSuppression', ['boxes', 'scores', 'maxo'], ['sel']]],
    inputs: [['boxes', 1, ['a', 'n', 'k']], ['scores', 1, ['a', 'c', 'm']], ['maxo', 7, [1]]], outputs: [['sel', 7, null]] }),
  { backend: 'stax' });
  try {
    tp.scope(() => {
      const mo = tp.tensor([2], { dtype: 'int64', shape: [1] });
      assert.throws(() => nms.run(tp.tensor([0, 0, 1], { shape: [1, 1, 3] }), tp.tensor([1], { shape: [1, 1, 1] }), mo),
        (e) => e instanceof tp.TensorPlayError && /boxes must be float32 \[batches, boxes, 4\]/.test(e.message));
      assert.throws(() => nms.run(tp.tensor([0, 0, 1, 1], { shape: [1, 1, 4] }), tp.tensor([1, 2], { shape: [1, 1, 2] }), mo),
        (e) => e instanceof tp.TensorPlayError && /scores must be float32 \[batches, classes, boxes\] = \[1, classes, 1\]/.test(e.message));
      const [s] = nms.run(tp.tensor([0, 0, 1, 1, 0, 0, 1, 1], { shape: [1, 2, 4] }), tp.tensor([0.9, 0.8], { shape: [1, 1, 2] }), mo);
      assert.deepEqual(Array.from(s.toArray(), Number), [0, 0, 0]); /* no iou_threshold: 0; the equal box 1 (IoU 1) is suppressed */
    });
  } finally {
    nms.dispose();
  }
});

test('NonZero of a computed mask splits the same way: matches onnxruntime-node, pre part compiled once', async () => {
  const ort = needOrt();
  /* r = Relu(x - t); nz = NonZero(r) [2, cnt]; vals = GatherND(r, Transpose(nz)) [cnt] */
  const bytes = makeModel({
    nodes: [['Sub', ['x', 't'], ['d']], ['Relu', ['d'], ['r']], ['NonZero', ['r'], ['nz']],
      ['Transpose', ['nz'], ['idx'], { perm: [1, 0] }], ['GatherND', ['r', 'idx'], ['vals']]],
    inputs: [['x', 1, [4, 5]], ['t', 1, [1]]],
    outputs: [['nz', 7, null], ['vals', 1, null]],
  });
  const sess = await ort.InferenceSession.create(bytes);
  const ts = [0, 0.5, 2, 0.9, 0.5, 0.1, 0.3, 0.7, 0.5, 0.95];
  const frames = ts.map((t) => ({ x: Array.from({ length: 20 }, () => rand()), t }));
  frames[2].t = 2; /* count 0 */
  frames[0].t = -1; /* count 20 (every element) */
  const want = [];
  for (const f of frames) {
    const r = await sess.run({ x: new ort.Tensor('float32', Float32Array.from(f.x), [4, 5]), t: new ort.Tensor('float32', Float32Array.of(f.t), [1]) });
    want.push(sess.outputNames.map((o) => r[o]));
  }
  const ks = new Set(want.map((w) => Number(w[0].dims[1])));
  assert.ok(ks.has(0) && ks.has(20), `counts 0 and 20 covered: ${[...ks]}`);
  for (const backend of ['eager', 'stax']) {
    const m = tp.onnx.load(bytes, { backend });
    try {
      frames.forEach((f, i) => tp.scope(() => {
        const got = m.run(tp.tensor(f.x, { shape: [4, 5] }), tp.tensor([f.t], { shape: [1] }));
        got.forEach((g, o) => {
          const w = want[i][o];
          assert.deepEqual(g.shape, Array.from(w.dims, Number), `frame ${i} (${backend}) output ${o}: shape`);
          assert.deepEqual(Array.from(g.toArray(), Number), Array.from(w.data, Number), `frame ${i} (${backend}) output ${o}`);
        });
      }));
      const ex = m.explain();
      assert.match(ex, /split at NonZero 'nz' \(run time\): pre part 1 compile, 10 calls/, ex);
      assert.ok(Number(/(\d+) made/.exec(ex)[1]) <= ks.size, ex);
    } finally {
      m.dispose();
    }
  }
});

test('thresholds as initializers: the split NMS reads them as constants of the pre part (hand-computed)', () => {
  /* boxes 0 [0,0]-[1,1], 1 shifted by 0.1 (IoU 0.82 with 0), 2 disjoint; scores 0.9, 0.8, 0.9;
   * iou 0.5, max 2: boxes 0 and 2 (the tie by the lower index first), box 1 suppressed */
  const bytes = makeModel({ nodes: [['Relu', ['bx'], ['boxes']], ['NonMaxSuppression', ['boxes', 'scores', 'maxo', 'iou', 'sthr'], ['sel']]],
    initializers: [['maxo', 7, [1], BigInt64Array.of(2n)], ['iou', 1, [1], Float32Array.of(0.5)], ['sthr', 1, [], Float32Array.of(0.1)]],
    inputs: [['bx', 1, [1, 3, 4]], ['scores', 1, [1, 1, 3]]], outputs: [['sel', 7, null]] });
  for (const backend of ['eager', 'stax']) {
    const m = tp.onnx.load(bytes, { backend });
    try {
      tp.scope(() => {
        const [s] = m.run(tp.tensor([0, 0, 1, 1, 0, 0.1, 1, 1.1, 0, 2, 1, 3], { shape: [1, 3, 4] }), tp.tensor([0.9, 0.8, 0.9], { shape: [1, 1, 3] }));
        assert.deepEqual(s.shape, [2, 3]);
        assert.deepEqual(Array.from(s.toArray(), Number), [0, 0, 0, 0, 0, 2]);
      });
      assert.match(m.explain(), /split at NonMaxSuppression 'sel' \(run time\): pre part 1 compile/);
    } finally {
      m.dispose();
    }
  }
});

// Two NonMaxSuppressions (two class heads on one set of boxes) and a
// NonZero feeding a NonMaxSuppression: the model is split at each, in order
// (src/onnx/model.c: stages by level), every part compiled once per the
// counts before it. Checked against onnxruntime-node over many frames.
async function overFrames(bytes, frames, feedsOrt, feedsTp, check) {
  const ort = needOrt();
  const sess = await ort.InferenceSession.create(bytes);
  const want = [];
  for (const f of frames) {
    const r = await sess.run(feedsOrt(ort, f));
    want.push(sess.outputNames.map((o) => r[o]));
  }
  await sess.release();
  for (const backend of ['eager', 'stax']) {
    const m = tp.onnx.load(bytes, { backend });
    try {
      frames.forEach((f, i) => tp.scope(() => {
        const got = m.run(...feedsTp(f));
        assert.equal(got.length, want[i].length);
        got.forEach((g, o) => {
          const w = want[i][o];
          assert.deepEqual(g.shape, Array.from(w.dims, Number), `frame ${i} (${backend}) output ${o}: shape`);
          const gv = Array.from(g.toArray(), Number), wv = Array.from(w.data, Number);
          for (let k = 0; k < wv.length; k++)
            assert.ok(Math.abs(gv[k] - wv[k]) <= 1e-5 * (1 + Math.abs(wv[k])), `frame ${i} (${backend}) output ${o}[${k}]: ${gv[k]} vs ${wv[k]}`);
        });
      }));
      check(m.explain(), want, backend);
    } finally {
      m.dispose();
    }
  }
  return want;
}

test('two NonMaxSuppressions (two class heads) split at both: match onnxruntime-node, pre part compiled once', async () => {
  const w = new Float32Array(6 * 3 * 3 * 3).map(() => rand() * 2 - 1);
  const i64 = (...v) => BigInt64Array.from(v.map(BigInt));
  const bytes = makeModel({
    nodes: [
      ['Conv', ['x', 'w'], ['f'], { pads: [1, 1, 1, 1] }], ['Reshape', ['f', 'shp'], ['f2']], // [1, 6, N]
      ['Slice', ['f2', 's0', 's4', 'ax1'], ['bc']], ['Transpose', ['bc'], ['boxes'], { perm: [0, 2, 1] }], // [1, N, 4]
      ['Slice', ['f2', 's4', 's5', 'ax1'], ['l1']], ['Sigmoid', ['l1'], ['sc1']],
      ['Slice', ['f2', 's5', 's6', 'ax1'], ['l2']], ['Sigmoid', ['l2'], ['sc2']],
      ['NonMaxSuppression', ['boxes', 'sc1', 'maxo', 'iou', 'sthr'], ['sel1']],
      ['NonMaxSuppression', ['boxes', 'sc2', 'maxo2', 'iou', 'sthr'], ['sel2']],
      ['Reshape', ['boxes', 'shp2'], ['b2']], // [N, 4]
      ['Slice', ['sel1', 's2', 's3', 'ax1'], ['i1']], ['Reshape', ['i1', 'flat'], ['j1']], ['Gather', ['b2', 'j1'], ['p1'], { axis: 0 }],
      ['Slice', ['sel2', 's2', 's3', 'ax1'], ['i2']], ['Reshape', ['i2', 'flat'], ['j2']], ['Gather', ['b2', 'j2'], ['p2'], { axis: 0 }],
      ['Concat', ['p1', 'p2'], ['picked'], { axis: 0 }], // [K1 + K2, 4]
    ],
    initializers: [['w', 1, [6, 3, 3, 3], w], ['shp', 7, [3], i64(1, 6, N)], ['shp2', 7, [2], i64(N, 4)], ['flat', 7, [1], i64(-1)],
      ['s0', 7, [1], i64(0)], ['s2', 7, [1], i64(2)], ['s3', 7, [1], i64(3)], ['s4', 7, [1], i64(4)], ['s5', 7, [1], i64(5)],
      ['s6', 7, [1], i64(6)], ['ax1', 7, [1], i64(1)]],
    inputs: [['x', 1, [1, 3, H, W]], ['maxo', 7, [1]], ['maxo2', 7, [1]], ['iou', 1, [1]], ['sthr', 1, [1]]],
    outputs: [['sel1', 7, null], ['sel2', 7, null], ['picked', 1, null]],
  });
  const frames = [[10, 4, 0.5, 0.5], [36, 36, 0.3, 0.2], [0, 5, 0.5, 0.5], [5, 0, 0.5, 0.5], [36, 36, 1, 0], [10, 4, 0.5, 0.5],
    [3, 3, 0.7, 0.4], [10, 4, 0.5, 0.5]].map(([mo, mo2, iou, st]) => ({ x: frame(), mo, mo2, iou, st }));
  const want = await overFrames(bytes, frames,
    (ort, f) => ({ x: new ort.Tensor('float32', Float32Array.from(f.x), [1, 3, H, W]), maxo: new ort.Tensor('int64', BigInt64Array.of(BigInt(f.mo)), [1]),
      maxo2: new ort.Tensor('int64', BigInt64Array.of(BigInt(f.mo2)), [1]), iou: new ort.Tensor('float32', Float32Array.of(f.iou), [1]),
      sthr: new ort.Tensor('float32', Float32Array.of(f.st), [1]) }),
    (f) => [tp.tensor(f.x, { shape: [1, 3, H, W] }), tp.tensor([f.mo], { dtype: 'int64', shape: [1] }),
      tp.tensor([f.mo2], { dtype: 'int64', shape: [1] }), tp.tensor([f.iou], { shape: [1] }), tp.tensor([f.st], { shape: [1] })],
    (ex, want) => {
      assert.match(ex, /split at NonMaxSuppression 'sel1', NonMaxSuppression 'sel2' \(run time\): pre part 1 compile, 8 calls; post part/, ex);
      const pairs = new Set(want.map((w) => `${w[0].dims[0]},${w[1].dims[0]}`));
      assert.equal(Number(/(\d+) made/.exec(ex)[1]), pairs.size, `one post part per pair of counts: ${ex}`);
      assert.doesNotMatch(ex, /value guard/);
    });
  const pairs = new Set(want.map((w) => `${w[0].dims[0]},${w[1].dims[0]}`));
  assert.ok(pairs.size >= 5 && [...pairs].some((p) => p.startsWith('0,')) && [...pairs].some((p) => p.endsWith(',0')), `counts: ${[...pairs]}`);
});

test('NonZero feeding a NonMaxSuppression: split at both (pre / mid / post), matching onnxruntime-node', async () => {
  /* keep = NonZero(s > t): the candidate boxes; NMS over them; the selected
   * candidates mapped back to the original box indices */
  const M = 12;
  const bytes = makeModel({
    nodes: [
      ['Relu', ['bx'], ['boxes']], ['Greater', ['s', 't'], ['mask']], ['NonZero', ['mask'], ['nz']], // [1, cnt]
      ['Reshape', ['nz', 'flat'], ['keep']], ['Gather', ['boxes', 'keep'], ['cb'], { axis: 0 }], // [cnt, 4]
      ['Unsqueeze', ['cb', 'ax0'], ['cb3']], ['Gather', ['s', 'keep'], ['cs'], { axis: 0 }],
      ['Reshape', ['cs', 'shp'], ['cs3']], // [1, 1, cnt]
      ['NonMaxSuppression', ['cb3', 'cs3', 'maxo', 'iou'], ['sel']], // [K, 3]
      ['Slice', ['sel', 's2', 's3', 'ax1'], ['c1']], ['Reshape', ['c1', 'flat'], ['ci']], ['Gather', ['keep', 'ci'], ['orig'], { axis: 0 }],
    ],
    initializers: [['flat', 7, [1], BigInt64Array.of(-1n)], ['ax0', 7, [1], BigInt64Array.of(0n)],
      ['shp', 7, [3], BigInt64Array.of(1n, 1n, -1n)], ['s2', 7, [1], BigInt64Array.of(2n)], ['s3', 7, [1], BigInt64Array.of(3n)],
      ['ax1', 7, [1], BigInt64Array.of(1n)]],
    inputs: [['bx', 1, [M, 4]], ['s', 1, [M]], ['t', 1, []], ['maxo', 7, [1]], ['iou', 1, [1]]],
    outputs: [['nz', 7, null], ['sel', 7, null], ['orig', 7, null]],
  });
  const box = () => { const x = rand() * 4, y = rand() * 4; return [y, x, y + 0.5 + rand(), x + 0.5 + rand()]; };
  const frames = [[0.5, 10, 0.5], [0.2, 10, 0.3], [2, 10, 0.5], [-1, 12, 1], [0.5, 2, 0.5], [0.7, 10, 0.4], [0.5, 10, 0.5],
    [0.9, 0, 0.5]].map(([t, mo, iou]) => ({ bx: Array.from({ length: M }, box).flat(), s: Array.from({ length: M }, rand), t, mo, iou }));
  const want = await overFrames(bytes, frames,
    (ort, f) => ({ bx: new ort.Tensor('float32', Float32Array.from(f.bx), [M, 4]), s: new ort.Tensor('float32', Float32Array.from(f.s), [M]),
      t: new ort.Tensor('float32', Float32Array.of(f.t), []), maxo: new ort.Tensor('int64', BigInt64Array.of(BigInt(f.mo)), [1]),
      iou: new ort.Tensor('float32', Float32Array.of(f.iou), [1]) }),
    (f) => [tp.tensor(f.bx, { shape: [M, 4] }), tp.tensor(f.s), tp.tensor(f.t), tp.tensor([f.mo], { dtype: 'int64', shape: [1] }),
      tp.tensor([f.iou], { shape: [1] })],
    (ex) => {
      assert.match(ex, /split at NonZero 'nz', NonMaxSuppression 'sel' \(run time\): pre part 1 compile, 8 calls; mid part 1: \d+ compiles? \(one per count of the nodes before it\), 8 calls; post part/, ex);
      assert.doesNotMatch(ex, /value guard/);
    });
  const cnts = new Set(want.map((w) => Number(w[0].dims[1])));
  assert.ok(cnts.has(0) && cnts.has(M) && cnts.size >= 4, `NonZero counts: ${[...cnts]}`);
});

test('Unique of a computed value runs at run time (the model split at it), matching onnxruntime-node, no value input', async () => {
  /* q = Floor(x * 3): few distinct values; Unique (sorted) -> Y, indices,
   * inverse, counts; the post part rebuilds q from Y and inverse and sums Y
   * (it specializes on the distinct count) */
  const L = 10;
  const bytes = makeModel({
    opset: 11,
    nodes: [['Mul', ['x', 'three'], ['x3']], ['Floor', ['x3'], ['q']], ['Unique', ['q'], ['y', 'first', 'inv', 'cnt']],
      ['Gather', ['y', 'inv'], ['back'], { axis: 0 }], ['ReduceSum', ['y'], ['ysum'], { keepdims: 0 }]],
    initializers: [['three', 1, [1], Float32Array.of(3)]],
    inputs: [['x', 1, [L]]],
    outputs: [['y', 1, null], ['first', 7, null], ['inv', 7, null], ['cnt', 7, null], ['back', 1, null], ['ysum', 1, null]],
  });
  const frames = Array.from({ length: 8 }, (_, i) => ({ x: Array.from({ length: L }, () => (i === 3 ? 0.5 : rand() * (i + 1))) }));
  const want = await overFrames(bytes, frames,
    (ort, f) => ({ x: new ort.Tensor('float32', Float32Array.from(f.x), [L]) }),
    (f) => [tp.tensor(f.x)],
    (ex) => {
      assert.match(ex, /split at Unique 'y' \(run time\): pre part 1 compile, 8 calls; post part/, ex);
      assert.doesNotMatch(ex, /value guard/);
    });
  const ks = new Set(want.map((w) => Number(w[0].dims[0])));
  assert.ok(ks.has(1) && ks.size >= 4, `distinct counts: ${[...ks]}`);
  /* by hand for one frame: the distinct values ascending, counts summing to L */
  const q = frames[5].x.map((v) => Math.floor(Math.fround(Math.fround(v) * 3)));
  assert.deepEqual(Array.from(want[5][0].data), [...new Set(q)].sort((a, b) => a - b));
  assert.equal(Array.from(want[5][3].data, Number).reduce((a, b) => a + b, 0), L);
});

test('Unique along an axis, unsorted, of a computed [3, 4] value: split, matching onnxruntime-node', async () => {
  const bytes = makeModel({
    opset: 11,
    nodes: [['Round', ['x'], ['r']], ['Unique', ['r'], ['y', 'first', 'inv', 'cnt'], { axis: 1, sorted: 0 }],
      ['Neg', ['y'], ['ny']]],
    inputs: [['x', 1, [3, 4]]],
    outputs: [['ny', 1, null], ['first', 7, null], ['inv', 7, null], ['cnt', 7, null]],
  });
  const cols = [[0, 1, 0], [1, 1, 1], [2, 0, 1]];
  const frames = [[0, 1, 0, 2], [0, 0, 0, 0], [2, 1, 0, 1], [0, 1, 2, 0], [1, 2, 1, 2]].map((pick) => ({
    x: [0, 1, 2].flatMap((r) => pick.map((c) => cols[c][r] + (rand() - 0.5) * 0.6)) }));
  const want = await overFrames(bytes, frames, (ort, f) => ({ x: new ort.Tensor('float32', Float32Array.from(f.x), [3, 4]) }),
    (f) => [tp.tensor(f.x, { shape: [3, 4] })],
    (ex) => assert.match(ex, /split at Unique 'y' \(run time\)/, ex));
  assert.deepEqual(Array.from(want[0][3].data, Number), [2, 1, 1]); /* columns 0 1 0 2: column 0 twice, first-occurrence order */
});

test('Unique at run time with a bad axis: a clear error naming the node; the runtime stays usable', () => {
  const bytes = makeModel({ opset: 11, nodes: [['Relu', ['x'], ['r']], ['Unique', ['r'], ['y'], { axis: 2 }]],
    inputs: [['x', 1, [2, 3]]], outputs: [['y', 1, null]] });
  for (const backend of ['eager', 'stax']) {
    const m = tp.onnx.load(bytes, { backend });
    try {
      assert.throws(() => tp.scope(() => m.run(tp.ones([2, 3]))), (e) => e instanceof tp.TensorPlayError &&
        /node 'y' \(Unique\): .*axis.*2/.test(e.message), 'axis 2 of a rank-2 input');
      assert.throws(() => tp.scope(() => m.run(tp.ones([2, 3]))), /node 'y' \(Unique\)/, 'again');
    } finally {
      m.dispose();
    }
  }
  const ok = tp.onnx.load(makeModel({ opset: 11, nodes: [['Relu', ['x'], ['r']], ['Unique', ['r'], ['y']]],
    inputs: [['x', 1, [4]]], outputs: [['y', 1, null]] }));
  try {
    tp.scope(() => assert.deepEqual([...ok.run(tp.tensor([3, -1, 3, 2]))[0].toArray()], [0, 2, 3]));
  } finally {
    ok.dispose();
  }
});
