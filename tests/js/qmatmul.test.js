// matmul_int with zero points (ONNX MatMulInteger) on the integer GEMM
// (docs/quantization.md, "matmul_int on the integer GEMM"): tp.matmulInt
// against an independent JS loop (exact sums in doubles, wrapped to int32),
// at the int32 edge; ONNX models with a constant weight (packed once by the
// stax plan) and the activation and its zero point fed at run time, against
// onnxruntime-node and the same loop, on the eager and stax backends.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';
import { needOrt } from './_ort.mjs';
import { makeModel } from './_onnx_pb.mjs';

let seed = 11;
const rnd = (n, lo, hi) => Array.from({ length: n }, () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return lo + (seed % (hi - lo + 1));
});
const RANGE = { int8: [-128, 127], uint8: [0, 255] };
const ARR = { int8: Int8Array, uint8: Uint8Array };

/** (a - za) @ (b - zb) for a [M,K], b [K,N] (row-major arrays), za one or per row, zb one or per column; int32 wrap. */
function refMatmul(a, b, M, K, N, za = [0], zb = [0]) {
  const y = new Int32Array(M * N);
  for (let i = 0; i < M; i++) {
    for (let j = 0; j < N; j++) {
      let s = 0; // exact: |s| <= 65025 K < 2^53
      for (let k = 0; k < K; k++) s += (a[i * K + k] - za[za.length > 1 ? i : 0]) * (b[k * N + j] - zb[zb.length > 1 ? j : 0]);
      y[i * N + j] = s | 0; // ToInt32: modulo 2^32
    }
  }
  return y;
}

test('tp.matmulInt with zero points: every int8/uint8 pairing, per tensor / per row / per column, against a JS loop', () => {
  for (const [M, K, N] of [[1, 1, 1], [7, 37, 45], [33, 64, 17], [5, 300, 3]]) {
    for (const da of ['uint8', 'int8']) {
      for (const db of ['int8', 'uint8']) {
        for (const per of [false, true]) {
          const a = ARR[da].from(rnd(M * K, ...RANGE[da])), b = ARR[db].from(rnd(K * N, ...RANGE[db]));
          const za = rnd(per ? M : 1, ...RANGE[da]), zb = rnd(per ? N : 1, ...RANGE[db]);
          const ta = tp.tensor(a, { shape: [M, K], dtype: da }), tb = tp.tensor(b, { shape: [K, N], dtype: db });
          const y = per ? tp.matmulInt(ta, tb, tp.tensor(ARR[da].from(za), { shape: [M], dtype: da }), tp.tensor(ARR[db].from(zb), { shape: [N], dtype: db }))
            : ta.matmulInt(tb, za[0], zb[0]);
          assert.equal(y.dtype, 'int32');
          assert.deepEqual([...y.toArray()], [...refMatmul(a, b, M, K, N, za, zb)], `${M}x${K}x${N} ${da} x ${db} ${per ? 'per row/column' : 'per tensor'}`);
        }
      }
    }
  }
});

test('tp.matmulInt at the int32 edge: K = 33025 exact on the GEMM, K = 33026 wraps as ONNX (never clamps)', () => {
  for (const K of [33025, 33026]) {
    const a = tp.full([2, K], 255, { dtype: 'uint8' }), b = tp.full([K, 2], -128, { dtype: 'int8' });
    const want = (-65025 * K) | 0;
    assert.deepEqual([...tp.matmulInt(a, b, 0, 127).toArray()], [want, want, want, want], `K = ${K}`);
  }
  assert.equal((-65025 * 33026) | 0, 2147451646); // -2147515650 + 2^32
});

test('tp.matmulInt bad zero points are named', () => {
  const a = tp.zeros([2, 3], { dtype: 'uint8' }), b = tp.zeros([3, 4], { dtype: 'int8' });
  assert.throws(() => tp.matmulInt(a, b, 256), /matmulInt\(\): aZeroPoint 256 is out of range for uint8 \(whole numbers 0\.\.255\)/);
  assert.throws(() => tp.matmulInt(a, b, 0, -129), /matmulInt\(\): bZeroPoint -129 is out of range for int8/);
  assert.throws(() => tp.matmulInt(a, b, tp.zeros([2], { dtype: 'int8' })), /matmul_int: a_zero_point has dtype int8, a uint8; they must match/);
  assert.throws(() => tp.matmulInt(a, b, null, tp.zeros([3], { dtype: 'int8' })),
    /matmul_int: b_zero_point has shape \[3\]; one value or one per column of b \(4/);
  // the runtime stays usable
  assert.deepEqual([...tp.matmulInt(a, b).toArray()], new Array(8).fill(0));
});

test('ONNX MatMulInteger with a constant weight (packed once in stax), a and a_zero_point fed at run time: onnxruntime-node and the JS loop', async () => {
  const ort = needOrt();
  // the last case has 7-bit weights (and zero points): the relaxed-SIMD tile takes them where the host has relaxed
  // SIMD (node --experimental-wasm-relaxed-simd, Chromium); exact like every variant
  for (const [wt, M, K, N, perCol, w7] of [['int8', 6, 70, 40, true], ['uint8', 9, 33, 17, false], ['int8', 1, 256, 64, false],
    ['int8', 13, 300, 24, true, true]]) {
    const wElem = wt === 'int8' ? 3 : 2, wr = w7 ? [-64, 63] : RANGE[wt];
    const w = ARR[wt].from(rnd(K * N, ...wr)), wz = ARR[wt].from(rnd(perCol ? N : 1, ...(w7 ? [-20, 20] : wr)));
    const model = makeModel({
      opset: 10,
      nodes: [['MatMulInteger', ['a', 'w', 'az', 'wz'], ['y']]],
      inputs: [['a', 2, [M, K]], ['az', 2, []]],
      outputs: [['y', 6, null]],
      initializers: [['w', wElem, [K, N], w], ['wz', wElem, perCol ? [N] : [], wz]],
    });
    const a = Uint8Array.from(rnd(M * K, 0, 255)), az = Uint8Array.of(rnd(1, 0, 255)[0]);
    const want = refMatmul(a, w, M, K, N, [az[0]], [...wz]);
    const sess = await ort.InferenceSession.create(model);
    const r = await sess.run({ a: new ort.Tensor('uint8', a, [M, K]), az: new ort.Tensor('uint8', az, []) });
    assert.deepEqual([...r.y.data], [...want], 'onnxruntime-node agrees with the JS loop');
    for (const backend of ['eager', 'stax']) {
      const m = tp.onnx.load(model, { backend });
      for (let run = 0; run < 2; run++) { // the packed weight is reused
        const y = m.run({ a: tp.tensor(a, { shape: [M, K], dtype: 'uint8' }), az: tp.tensor(az, { shape: [], dtype: 'uint8' }) }).y;
        assert.equal(y.dtype, 'int32');
        assert.deepEqual([...y.toArray()], [...want], `${backend} ${wt} ${M}x${K}x${N} run ${run}`);
      }
    }
  }
});

/** Float32 bits of a number array (to compare outputs bit for bit). */
const bits = (a) => [...new Uint32Array(Float32Array.from(a).buffer)];

test('stax pass qlinear: ORT dynamic quantization (DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul -> Add -> Relu) becomes one qmatmul, bit for bit, and matches onnxruntime-node', async () => {
  const ort = needOrt();
  for (const [M, K, N, relu, perCol] of [[4, 64, 48, true, true], [1, 37, 5, false, false], [17, 130, 70, false, true]]) {
    const w = Int8Array.from(rnd(K * N, -127, 127)), wz = new Int8Array(perCol ? N : 1);
    const ws = Float32Array.from(rnd(perCol ? N : 1, 1, 50), (v) => v / 4096), bias = Float32Array.from(rnd(N, -100, 100), (v) => v / 50);
    const nodes = [
      ['DynamicQuantizeLinear', ['x'], ['xq', 'xs', 'xz']],
      ['MatMulInteger', ['xq', 'w', 'xz', 'wz'], ['acc']],
      ['Cast', ['acc'], ['accf'], { to: 1 }],
      ['Mul', ['xs', 'ws'], ['s']],
      ['Mul', ['accf', 's'], ['y0']],
      ['Add', ['y0', 'bias'], [relu ? 'y1' : 'y']],
    ];
    if (relu) nodes.push(['Relu', ['y1'], ['y']]);
    const model = makeModel({
      opset: 13, nodes, inputs: [['x', 1, [M, K]]], outputs: [['y', 1, null]],
      initializers: [['w', 3, [K, N], w], ['wz', 3, perCol ? [N] : [], wz], ['ws', 1, perCol ? [N] : [], ws], ['bias', 1, [N], bias]],
    });
    const x = Float32Array.from(rnd(M * K, -1000, 1000), (v) => v / 300);
    const sess = await ort.InferenceSession.create(model);
    const want = (await sess.run({ x: new ort.Tensor('float32', x, [M, K]) })).y.data;
    const out = {};
    for (const backend of ['eager', 'stax']) {
      const m = tp.onnx.load(model, backend === 'stax' ? { backend, options: { 'stax.profile': true } } : { backend });
      out[backend] = [...m.run({ x: tp.tensor(x, { shape: [M, K] }) }).y.toArray()];
      if (backend === 'stax') {
        const ex = m.explain();
        assert.match(ex, /qmatmul/, `the plan runs a qmatmul kernel:\n${ex}`);
        assert.doesNotMatch(ex, /matmul_int/, 'no matmul_int left');
      }
    }
    assert.deepEqual(bits(out.stax), bits(out.eager), `${M}x${K}x${N}: the fused layer is the unfused graph bit for bit`);
    // an all-zero input: DynamicQuantizeLinear's scale is 0; the fused layer gives what the graph does (relu(bias))
    const zs = ['eager', 'stax'].map((backend) => [...tp.onnx.load(model, { backend }).run({ x: tp.zeros([M, K]) }).y.toArray()]);
    assert.deepEqual(bits(zs[1]), bits(zs[0]), 'all-zero input: stax as eager');
    assert.deepEqual(bits(zs[1]), bits(Array.from({ length: M * N }, (_, i) => (relu ? Math.max(bias[i % N], 0) : bias[i % N]))), 'all-zero input: the bias');
    const err = Math.max(...out.stax.map((v, i) => Math.abs(v - want[i]) / (1 + Math.abs(want[i]))));
    assert.ok(err < 1e-5, `onnxruntime-node: max relative error ${err}`);
  }
});

test('stax pass qlinear: QLinearMatMul (per-column weight scales; uint8 x int8 -> uint8, int8 x int8 -> int8) fused with its requantization, within one step of onnxruntime-node', async () => {
  const ort = needOrt();
  for (const [M, K, N, yt] of [[5, 96, 40, 'uint8'], [16, 33, 7, 'int8']]) {
    const yElem = yt === 'uint8' ? 2 : 3, at = yt; // onnxruntime has no uint8 x int8 -> int8 kernel
    const w = Int8Array.from(rnd(K * N, -127, 127)), wz = new Int8Array(N);
    const ws = Float32Array.from(rnd(N, 1, 50), (v) => v / 4096);
    const model = makeModel({
      opset: 13,
      nodes: [['QLinearMatMul', ['a', 'as', 'az', 'w', 'ws', 'wz', 'ys', 'yz'], ['y']]],
      inputs: [['a', yElem, [M, K]], ['as', 1, []], ['az', yElem, []]],
      outputs: [['y', yElem, null]],
      initializers: [['w', 3, [K, N], w], ['ws', 1, [N], ws], ['wz', 3, [N], wz], ['ys', 1, [], Float32Array.of(0.05)],
        ['yz', yElem, [], yt === 'uint8' ? Uint8Array.of(120) : Int8Array.of(-3)]],
    });
    const a = ARR[at].from(rnd(M * K, ...RANGE[at])), as = Float32Array.of(0.02), az = ARR[at].of(at === 'uint8' ? 131 : 3);
    const sess = await ort.InferenceSession.create(model);
    const want = [...(await sess.run({ a: new ort.Tensor(at, a, [M, K]), as: new ort.Tensor('float32', as, []), az: new ort.Tensor(at, az, []) })).y.data];
    for (const backend of ['eager', 'stax']) {
      const m = tp.onnx.load(model, backend === 'stax' ? { backend, options: { 'stax.profile': true } } : { backend });
      const y = m.run({ a: tp.tensor(a, { shape: [M, K], dtype: at }), as: tp.tensor(as, { shape: [] }), az: tp.tensor(az, { shape: [], dtype: at }) }).y;
      assert.equal(y.dtype, yt);
      const got = [...y.toArray()];
      const off = got.filter((v, i) => v !== want[i]).length;
      assert.ok(got.every((v, i) => Math.abs(v - want[i]) <= 1), `${backend}: within one quantization step of onnxruntime-node`);
      assert.ok(off <= got.length / 50, `${backend}: ${off} of ${got.length} one step off`);
      if (backend === 'stax') assert.match(m.explain(), /qmatmul/);
    }
  }
});

test('tp.qmatmul: float32 output as the epilogue formula in float32 (Math.fround), uint8 output, bad options named', () => {
  const f = Math.fround;
  const [M, K, N] = [3, 50, 9];
  const a = Uint8Array.from(rnd(M * K, 0, 255)), b = Int8Array.from(rnd(K * N, -128, 127));
  const sb = Float32Array.from(rnd(N, 1, 40), (v) => v / 1024), bias = Float32Array.from(rnd(N, -50, 50), (v) => v / 8);
  const ta = tp.tensor(a, { shape: [M, K], dtype: 'uint8' }), tb = tp.tensor(b, { shape: [K, N], dtype: 'int8' });
  const y = tp.qmatmul(ta, tb, { aScale: 0.03, bScale: tp.tensor(sb), aZeroPoint: 128, bZeroPoint: 3, bias: tp.tensor(bias), relu: true });
  const acc = refMatmul(a, b, M, K, N, [128], [3]);
  const want = [...acc].map((s, i) => { const v = f(f(f(s) * f(f(0.03) * sb[i % N])) + bias[i % N]); return v > 0 ? v : 0; });
  assert.deepEqual(bits([...y.toArray()]), bits(want));
  const q = tp.qmatmul(ta, tb, { aScale: 0.03, bScale: tp.tensor(sb), aZeroPoint: 128, bZeroPoint: 3, yScale: 0.25, yZeroPoint: 10 });
  assert.equal(q.dtype, 'uint8');
  const wq = [...acc].map((s, i) => {
    let v = f(f(s) * f(f(f(0.03) * sb[i % N]) / f(0.25)));
    v = Math.min(Math.max(v, -4194304), 4194304);
    const r = Math.round(v), t = (Math.abs(v % 1) === 0.5) ? 2 * Math.round(v / 2) : r; // half to even
    return Math.min(255, Math.max(0, t + 10));
  });
  assert.deepEqual([...q.toArray()], wq);
  // aScale 0 (DynamicQuantizeLinear's scale of an all-zero input) multiplies as the unfused graph does; yScale is checked
  assert.deepEqual([...tp.qmatmul(ta, tb, { aScale: 0, bScale: 1, bias: tp.tensor(bias) }).toArray()], [...bias, ...bias, ...bias]);
  assert.throws(() => tp.qmatmul(ta, tb, { aScale: 1, bScale: 1, yScale: 0, yZeroPoint: 3 }), /qmatmul: y_scale element 0 is 0; a scale must be finite and > 0/);
  assert.throws(() => tp.qmatmul(ta, tb, { bScale: 1 }), /qmatmul\(\): options.aScale and options.bScale are required/);
  assert.throws(() => tp.qmatmul(ta, tb, { aScale: 1, bScale: 1, yScale: 1 }), /qmatmul: y_scale and y_zero_point come together/);
  // an output dtype that is not int8 / uint8 is named, not silently taken as uint8
  assert.throws(() => tp.qmatmul(ta, tb, { aScale: 1, bScale: 1, yScale: 1, yZeroPoint: 3, yDtype: 'int16' }),
    /qmatmul\(\): yDtype 'int16' is not an output dtype \(int8 or uint8\)/);
  assert.throws(() => tp.qmatmul(ta, tb, { aScale: 1, bScale: 1, yScale: 1, yZeroPoint: 300 }), /qmatmul\(\): yZeroPoint 300 is out of range for uint8/);
});

test('stax pass qlinear: static QDQ (QuantizeLinear -> DequantizeLinear -> MatMul / Gemm(transB) with a per-channel int8 weight -> [Relu] -> QuantizeLinear) on the integer GEMM, within one step of onnxruntime-node', async () => {
  const ort = needOrt();
  for (const [M, K, N, gemm, relu] of [[6, 64, 24, false, false], [3, 40, 9, true, true], [8, 128, 32, true, false]]) {
    const w = Int8Array.from(rnd(K * N, -127, 127)), ws = Float32Array.from(rnd(N, 1, 40), (v) => v / 2048);
    const bias = Float32Array.from(rnd(N, -100, 100), (v) => v / 40);
    const nodes = [
      ['QuantizeLinear', ['x', 'xs', 'xz'], ['xq']],
      ['DequantizeLinear', ['xq', 'xs', 'xz'], ['xd']],
      ['DequantizeLinear', ['w', 'ws', 'wz'], ['wd'], { axis: gemm ? 0 : 1 }],
      gemm ? ['Gemm', ['xd', 'wd', 'bias'], ['y0'], { transB: 1 }] : ['MatMul', ['xd', 'wd'], ['y0']],
    ];
    if (relu) nodes.push(['Relu', ['y0'], ['y1']]);
    nodes.push(['QuantizeLinear', [relu ? 'y1' : 'y0', 'ys', 'yz'], ['yq']], ['DequantizeLinear', ['yq', 'ys', 'yz'], ['y']]);
    const model = makeModel({
      opset: 13, nodes, inputs: [['x', 1, [M, K]]], outputs: [['y', 1, null]],
      initializers: [['xs', 1, [], Float32Array.of(0.02)], ['xz', 2, [], Uint8Array.of(128)],
        ['w', 3, gemm ? [N, K] : [K, N], w], ['ws', 1, [N], ws], ['wz', 3, [N], new Int8Array(N)], ['bias', 1, [N], bias],
        ['ys', 1, [], Float32Array.of(0.1)], ['yz', 2, [], Uint8Array.of(100)]],
    });
    const x = Float32Array.from(rnd(M * K, -1000, 1000), (v) => v / 400);
    const sess = await ort.InferenceSession.create(model);
    const want = [...(await sess.run({ x: new ort.Tensor('float32', x, [M, K]) })).y.data];
    for (const backend of ['eager', 'stax']) {
      const m = tp.onnx.load(model, backend === 'stax' ? { backend, options: { 'stax.profile': true } } : { backend });
      const got = [...m.run({ x: tp.tensor(x, { shape: [M, K] }) }).y.toArray()];
      const steps = got.map((v, i) => Math.round(Math.abs(v - want[i]) / 0.1));
      assert.ok(steps.every((d) => d <= 1), `${backend} ${gemm ? 'Gemm' : 'MatMul'}: within one quantization step`);
      assert.ok(steps.filter((d) => d).length <= Math.max(1, got.length / 50), `${backend}: ${steps.filter((d) => d).length} of ${got.length} one step off`);
      if (backend === 'stax') {
        const ex = m.explain();
        assert.match(ex, /qmatmul/, `the plan runs a qmatmul kernel:\n${ex}`);
        assert.doesNotMatch(ex, /op_matmul|gemm/i, `no float matmul left:\n${ex}`);
        if (process.env.TP_QMM_VERBOSE) console.log(ex);
      }
    }
  }
});

test('a constant int8 weight stays quantized in the graph only where a matmul reads it; elsewhere (Gather of a table) it folds at load', () => {
  const V = 10, E = 6, N = 4;
  const table = Int8Array.from(rnd(V * E, -127, 127)), w = Int8Array.from(rnd(E * N, -127, 127));
  const model = makeModel({
    opset: 13,
    nodes: [
      ['DequantizeLinear', ['table', 'ts'], ['tf']],
      ['Gather', ['tf', 'ids'], ['emb']],
      ['DequantizeLinear', ['w', 'ws'], ['wf']],
      ['MatMul', ['emb', 'wf'], ['y']],
    ],
    inputs: [['ids', 7, [3]]], outputs: [['y', 1, null]],
    initializers: [['table', 3, [V, E], table], ['ts', 1, [], Float32Array.of(0.05)], ['w', 3, [E, N], w], ['ws', 1, [], Float32Array.of(0.02)]],
  });
  const m = tp.onnx.load(model);
  const text = m.graph.print();
  assert.equal((text.match(/= dequantize\(/g) || []).length, 1, `only the matmul's weight is dequantized in the graph:\n${text}`);
  const ids = BigInt64Array.of(1n, 7n, 3n);
  // the float reference in doubles (onnxruntime turns DequantizeLinear -> MatMul into its own quantized kernel, with
  // dynamically quantized activations: 0.1% off, so it is not the reference here)
  const want = [];
  for (const id of ids) {
    for (let j = 0; j < N; j++) {
      let acc = 0;
      for (let e = 0; e < E; e++) acc += Math.fround(table[Number(id) * E + e] * Math.fround(0.05)) * Math.fround(w[e * N + j] * Math.fround(0.02));
      want.push(acc);
    }
  }
  for (const backend of ['eager', 'stax']) {
    const got = tp.onnx.load(model, { backend }).run({ ids: tp.tensor(ids, { shape: [3] }) }).y.toArray();
    assert.ok([...got].every((v, i) => Math.abs(v - want[i]) <= 1e-5 * (1 + Math.abs(want[i]))), `${backend}: ${[...got]} vs ${[...want]}`);
  }
});

test('a compiled JS function: matmulInt -> cast -> mul by the scales -> relu is one qmatmul in its stax plan (explain().backend_plans), bit for bit eager', () => {
  const [M, K, N] = [9, 64, 16];
  const w = tp.tensor(Int8Array.from(rnd(K * N, -128, 127)), { shape: [K, N] });
  const ws = tp.tensor(Float32Array.from(rnd(N, 1, 30), (v) => v / 1000));
  const fn = (x, xs) => tp.matmulInt(x, w, 3, 0).cast('float32').mul(xs.mul(ws)).relu();
  const x = tp.tensor(Uint8Array.from(rnd(M * K, 0, 255)), { shape: [M, K], dtype: 'uint8' }), xs = tp.tensor(0.5);
  const want = [...fn(x, xs).toArray()];
  const f = tp.compile(fn, { backend: 'stax' });
  const got = [...f(x, xs).toArray()];
  assert.deepEqual(bits(got), bits(want));
  const plan = f.explain().backend_plans[0];
  assert.equal(plan.qmatmul, 1, JSON.stringify(plan));
  assert.equal(plan.matmul_int, 0, JSON.stringify(plan));
});

test('stax pass qlinear: a QDQ MatMul whose activation scale is fed at run time keeps its DequantizeLinear, so a bad scale is an error (never a silent value), on eager and stax', () => {
  const M = 4, K = 32, N = 8;
  const w = Int8Array.from(rnd(K * N, -127, 127));
  const model = makeModel({
    opset: 13,
    nodes: [['DequantizeLinear', ['xq', 'xs', 'xz'], ['xd']], ['DequantizeLinear', ['w', 'ws'], ['wd']], ['MatMul', ['xd', 'wd'], ['y']]],
    inputs: [['xq', 2, [M, K]], ['xs', 1, []]], outputs: [['y', 1, null]],
    initializers: [['xz', 2, [], Uint8Array.of(128)], ['w', 3, [K, N], w], ['ws', 1, [], Float32Array.of(0.01)]],
  });
  const xq = Uint8Array.from(rnd(M * K, 0, 255));
  // the float reference in doubles: ((xq - 128) * xs) @ (w * 0.01), then float32
  const want = (xs) => Array.from({ length: M * N }, (_, o) => {
    const i = Math.floor(o / N), j = o % N;
    let acc = 0;
    for (let k = 0; k < K; k++) acc += Math.fround((xq[i * K + k] - 128) * Math.fround(xs)) * Math.fround(w[k * N + j] * Math.fround(0.01));
    return acc;
  });
  for (const backend of ['eager', 'stax']) {
    const m = tp.onnx.load(model, { backend });
    try {
      tp.scope(() => {
        const feeds = (xs) => ({ xq: tp.tensor(xq, { shape: [M, K], dtype: 'uint8' }), xs: tp.tensor(Float32Array.of(xs), { shape: [] }) });
        const got = m.run(feeds(0.05)).y.toArray();
        want(0.05).forEach((v, o) => assert.ok(Math.abs(got[o] - v) <= 1e-5 * (1 + Math.abs(v)), `${backend}: y[${o}] = ${got[o]}, want ${v}`));
        for (const bad of [0, -0.05, NaN, Infinity])
          assert.throws(() => m.run(feeds(bad)), /scale.*(finite and > 0)/, `${backend}: scale ${bad} must be refused`);
        const again = m.run(feeds(0.05)).y.toArray(); // usable after the errors
        assert.deepEqual([...again], [...got]);
      });
    } finally {
      m.dispose();
    }
  }
});
