// The integer convolution (ops.def conv2d_int: ONNX ConvInteger, and
// QLinearConv's accumulation): tp.conv2dInt against this file's own loop
// (exact int32), in compiled functions on stax and eager, and ONNX models
// whose weights are initializers (stax packs them once) with every data
// input fed at run time, against onnxruntime-node; bad operands named.
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
const RANGE = { uint8: [0, 255], int8: [-128, 127] };
const ARR = { uint8: Uint8Array, int8: Int8Array };

// y[n, m, oh, ow] = sum (x - zx) (w - zw[m]); pads add 0; int32 wrap
function convLoop(x, xs, w, ws, zx, zw, { stride = [1, 1], pads = [0, 0, 0, 0], dilation = [1, 1], groups = 1 }) {
  const [N, C, H, W] = xs, [M, Cg, KH, KW] = ws, Mg = M / groups;
  const OH = Math.floor((H + pads[0] + pads[2] - ((KH - 1) * dilation[0] + 1)) / stride[0]) + 1;
  const OW = Math.floor((W + pads[1] + pads[3] - ((KW - 1) * dilation[1] + 1)) / stride[1]) + 1;
  const y = new Int32Array(N * M * OH * OW);
  for (let n = 0; n < N; n++) for (let m = 0; m < M; m++) for (let oh = 0; oh < OH; oh++) for (let ow = 0; ow < OW; ow++) {
    let acc = 0;
    for (let c = 0; c < Cg; c++) for (let kh = 0; kh < KH; kh++) for (let kw = 0; kw < KW; kw++) {
      const ih = oh * stride[0] - pads[0] + kh * dilation[0], iw = ow * stride[1] - pads[1] + kw * dilation[1];
      if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
      acc += (x[((n * C + Math.floor(m / Mg) * Cg + c) * H + ih) * W + iw] - zx) * (w[((m * Cg + c) * KH + kh) * KW + kw] - zw[zw.length === 1 ? 0 : m]);
    }
    y[((n * M + m) * OH + oh) * OW + ow] = acc; // |acc| < 2^53 here; Int32Array wraps like ONNX
  }
  return [y, [N, M, OH, OW]];
}

test('tp.conv2dInt matches the definition: windows, groups, dtypes, zero points; eager and compiled (stax, eager)', () => {
  const cases = [
    { xs: [1, 3, 9, 11], ws: [8, 3, 3, 3], o: { stride: [1, 1], pads: [1, 1, 1, 1] }, dx: 'uint8', dw: 'int8', zc: false },
    { xs: [2, 4, 12, 7], ws: [6, 2, 2, 3], o: { stride: [2, 1], pads: [0, 2, 1, 0], dilation: [1, 2], groups: 2 }, dx: 'int8', dw: 'int8', zc: true },
    { xs: [1, 16, 20, 20], ws: [33, 16, 1, 1], o: {}, dx: 'uint8', dw: 'uint8', zc: true },
    { xs: [1, 5, 17, 19], ws: [7, 5, 5, 4], o: { stride: [3, 2], pads: [2, 1, 0, 2], dilation: [2, 1] }, dx: 'int8', dw: 'uint8', zc: false },
  ];
  for (const c of cases) {
    const nx = c.xs.reduce((a, b) => a * b), nw = c.ws.reduce((a, b) => a * b);
    const xv = ARR[c.dx].from(rnd(nx, ...RANGE[c.dx])), wv = ARR[c.dw].from(rnd(nw, ...RANGE[c.dw]));
    const zx = rnd(1, ...RANGE[c.dx])[0], zw = c.zc ? rnd(c.ws[0], ...RANGE[c.dw]) : rnd(1, ...RANGE[c.dw]);
    const [want, ys] = convLoop(xv, c.xs, wv, c.ws, zx, zw, c.o);
    const x = tp.tensor(xv, { dtype: c.dx, shape: c.xs }), w = tp.tensor(wv, { dtype: c.dw, shape: c.ws });
    const wz = c.zc ? tp.tensor(ARR[c.dw].from(zw), { dtype: c.dw }) : zw[0];
    const opts = { stride: c.o.stride, padding: c.o.pads, dilation: c.o.dilation, groups: c.o.groups, xZeroPoint: zx, wZeroPoint: wz };
    const y = tp.conv2dInt(x, w, opts);
    assert.equal(y.dtype, 'int32');
    assert.deepEqual(y.shape, ys);
    assert.deepEqual([...y.toArray()], [...want], JSON.stringify(c));
    for (const backend of ['stax', 'eager']) { // the weight closed over: a constant stax packs once
      const g = tp.compiler.compile((xx) => tp.conv2dInt(xx, w, opts), { backend });
      assert.deepEqual([...g(x).toArray()], [...want], `${backend} ${JSON.stringify(c)}`);
      assert.deepEqual([...g(x).toArray()], [...want], `${backend} second call`);
      if (backend === 'stax') assert.equal(g.explain().backend_plans[0].conv2d_int, 1, 'one conv2d_int kernel in the plan');
    }
  }
});

test('tp.conv2dInt refuses bad operands by name and stays usable', () => {
  const x = tp.zeros([1, 2, 4, 4], { dtype: 'uint8' }), w = tp.zeros([3, 2, 3, 3], { dtype: 'int8' });
  assert.throws(() => tp.conv2dInt(tp.zeros([1, 2, 4, 4]), w), /conv2d_int: input has dtype float32, expected int8 or uint8/);
  assert.throws(() => tp.conv2dInt(x, w, { xZeroPoint: 300 }), /conv2dInt\(\): xZeroPoint 300 is out of range for uint8/);
  assert.throws(() => tp.conv2dInt(x, w, { wZeroPoint: tp.zeros([2], { dtype: 'int8' }) }),
    /conv2d_int: w_zero_point has shape \[2\]; one value or one per output channel is supported/);
  assert.throws(() => tp.conv2dInt(x, w, { groups: 0 }), /conv2dInt: groups must be an integer >= 1/);
  assert.throws(() => tp.conv2dInt(x, tp.zeros([3, 2, 5, 5], { dtype: 'int8' })), /kernel extent 5x5 is larger than the padded input 4x4/);
  const d = tp.zeros([3, 2, 3, 3], { dtype: 'int8' });
  d.dispose();
  assert.throws(() => tp.conv2dInt(x, d), /disposed/);
  assert.deepEqual(tp.conv2dInt(x, w, { padding: 1 }).shape, [1, 3, 4, 4]); // still usable
});

test('ONNX ConvInteger and QLinearConv with initializer weights, inputs fed at run time: eager and stax match onnxruntime-node', async () => {
  const ort = needOrt();
  // ConvInteger 2-D, uint8 x uint8 (onnxruntime's ConvInteger kernel), weight and its zero point initializers
  const cw = Uint8Array.from(rnd(16 * 8 * 9, 0, 255));
  const ci = makeModel({ opset: 10, nodes: [['ConvInteger', ['x', 'w', 'xz', 'wz'], ['y'], { pads: [1, 1, 1, 1], strides: [2, 2] }]],
    initializers: [['w', 2, [16, 8, 3, 3], cw], ['wz', 2, [], Uint8Array.of(131)]],
    inputs: [['x', 2, [2, 8, 15, 13]], ['xz', 2, []]], outputs: [['y', 6, null]] });
  // QLinearConv 1-D, uint8 x, int8 weight with per-channel scales (symmetric), int32 bias
  const qw = Int8Array.from(rnd(12 * 6 * 5, -127, 127));
  const qc = makeModel({ opset: 10, nodes: [['QLinearConv', ['x', 'xs', 'xz', 'w', 'ws', 'wz', 'ys', 'yz', 'b'], ['y'], { pads: [2, 2] }]],
    initializers: [['w', 3, [12, 6, 5], qw], ['ws', 1, [12], Float32Array.from(rnd(12, 1, 9), (v) => v / 500)], ['wz', 3, [12], new Int8Array(12)],
      ['b', 6, [12], Int32Array.from(rnd(12, -3000, 3000))]],
    inputs: [['x', 2, [1, 6, 40]], ['xs', 1, []], ['xz', 2, []], ['ys', 1, []], ['yz', 2, []]], outputs: [['y', 2, null]] });
  // QLinearConv depthwise 3x3 (group = channels), stride 2, int8 per-channel weights
  const dw = Int8Array.from(rnd(10 * 9, -127, 127));
  const qd = makeModel({ opset: 10, nodes: [['QLinearConv', ['x', 'xs', 'xz', 'w', 'ws', 'wz', 'ys', 'yz'], ['y'], { pads: [1, 1, 1, 1], strides: [2, 2], group: 10 }]],
    initializers: [['w', 3, [10, 1, 3, 3], dw], ['ws', 1, [10], Float32Array.from(rnd(10, 1, 9), (v) => v / 300)], ['wz', 3, [10], new Int8Array(10)]],
    inputs: [['x', 2, [1, 10, 17, 16]], ['xs', 1, []], ['xz', 2, []], ['ys', 1, []], ['yz', 2, []]], outputs: [['y', 2, null]] });
  const feeds = [
    [qd, { x: ['uint8', Uint8Array.from(rnd(10 * 17 * 16, 0, 255)), [1, 10, 17, 16]], xs: ['float32', Float32Array.of(0.02), []],
      xz: ['uint8', Uint8Array.of(100), []], ys: ['float32', Float32Array.of(0.1), []], yz: ['uint8', Uint8Array.of(128), []] }, 1, 'qconv2d'],
    [ci, { x: ['uint8', Uint8Array.from(rnd(2 * 8 * 15 * 13, 0, 255)), [2, 8, 15, 13]], xz: ['uint8', Uint8Array.of(77), []] }, 0, 'conv2d_int'],
    [qc, { x: ['uint8', Uint8Array.from(rnd(240, 0, 255)), [1, 6, 40]], xs: ['float32', Float32Array.of(0.03), []], xz: ['uint8', Uint8Array.of(120), []],
      ys: ['float32', Float32Array.of(0.4), []], yz: ['uint8', Uint8Array.of(110), []] }, 1, 'qconv2d'],
  ];
  for (const [bytes, f, steps, kernel] of feeds) {
    const s = await ort.InferenceSession.create(bytes);
    const want = [...(await s.run(Object.fromEntries(Object.entries(f).map(([k, [t, d, sh]]) => [k, new ort.Tensor(t, d, sh)])))).y.data];
    for (const backend of ['eager', 'stax']) {
      const m = tp.onnx.load(bytes, backend === 'stax' ? { backend, options: { 'stax.profile': true } } : { backend }); // profile: explain() lists the kernels
      try {
        for (let call = 0; call < 2; call++) {
          const got = [...m.run(Object.fromEntries(Object.entries(f).map(([k, [t, d, sh]]) => [k, tp.tensor(d, { dtype: t, shape: sh })]))).y.toArray()];
          assert.equal(got.length, want.length);
          // ConvInteger exact; QLinearConv requantizes with its own float order: at most one step
          const off = got.filter((v, i) => Math.abs(v - want[i]) > steps);
          assert.equal(off.length, 0, `${backend} call ${call}: ${off.length} differ by more than ${steps}`);
          if (steps) assert.ok(got.filter((v, i) => v !== want[i]).length <= got.length / 50, `${backend}: too many one-step differences`);
        }
        if (backend === 'stax') assert.match(m.explain(), new RegExp(`op ${kernel}\\b`), `the integer convolution is one ${kernel} kernel of the plan`);
      } finally {
        m.dispose();
      }
    }
  }
});

test('QDQ convolutions (DequantizeLinear -> Conv -> [Relu] -> QuantizeLinear) run as one qconv2d on stax and match onnxruntime-node', async () => {
  const ort = needOrt();
  const M = 16, C = 8, f32 = Math.fround;
  const xs = 0.05, ys = 0.08;
  const ws = Float32Array.from(rnd(M, 1, 9), (v) => v / 400);
  const bs = Float32Array.from(ws, (v) => f32(f32(xs) * v)); // quantizers write the bias scale as x_scale * w_scale
  const init = [['wq', 3, [M, C, 3, 3], Int8Array.from(rnd(M * C * 9, -127, 127))], ['ws', 1, [M], ws], ['wz', 3, [M], new Int8Array(M)],
    ['bq', 6, [M], Int32Array.from(rnd(M, -400, 400))], ['bs', 1, [M], bs], ['xs', 1, [], Float32Array.of(xs)], ['xz', 2, [], Uint8Array.of(128)],
    ['ys', 1, [], Float32Array.of(ys)], ['yz', 2, [], Uint8Array.of(60)], ['bf', 1, [M], Float32Array.from(rnd(M, -50, 50), (v) => v / 10)]];
  const head = [['QuantizeLinear', ['x', 'xs', 'xz'], ['xq']], ['DequantizeLinear', ['xq', 'xs', 'xz'], ['xd']],
    ['DequantizeLinear', ['wq', 'ws', 'wz'], ['wd'], { axis: 0 }], ['DequantizeLinear', ['bq', 'bs'], ['bd'], { axis: 0 }]];
  const models = {
    'conv, relu, quantize': [...head, ['Conv', ['xd', 'wd', 'bd'], ['c'], { pads: [1, 1, 1, 1] }], ['Relu', ['c'], ['r']],
      ['QuantizeLinear', ['r', 'ys', 'yz'], ['yq']], ['DequantizeLinear', ['yq', 'ys', 'yz'], ['y']]],
    'conv (stride 2), quantize': [...head, ['Conv', ['xd', 'wd', 'bd'], ['c'], { strides: [2, 2] }],
      ['QuantizeLinear', ['c', 'ys', 'yz'], ['yq']], ['DequantizeLinear', ['yq', 'ys', 'yz'], ['y']]],
    'conv, float out with a float bias': [...head, ['Conv', ['xd', 'wd', 'bf'], ['y'], { pads: [0, 1, 2, 1] }]],
  };
  const xv = Float32Array.from(rnd(C * 12 * 12, -200, 200), (v) => v / 40);
  for (const [name, nodes] of Object.entries(models)) {
    const bytes = makeModel({ opset: 13, nodes, initializers: init, inputs: [['x', 1, [1, C, 12, 12]]], outputs: [['y', 1, null]] });
    const s = await ort.InferenceSession.create(bytes);
    const want = (await s.run({ x: new ort.Tensor('float32', xv, [1, C, 12, 12]) })).y.data;
    const quantized = !name.includes('float out');
    for (const backend of ['eager', 'stax']) {
      const m = tp.onnx.load(bytes, backend === 'stax' ? { backend, options: { 'stax.profile': true } } : { backend });
      try {
        const got = m.run({ x: tp.tensor(xv, { shape: [1, C, 12, 12] }) }).y.toArray();
        assert.equal(got.length, want.length);
        // quantized: within one output step (the fused requantization rounds acc * (xs ws / ys) once);
        // float: the integer sum scaled once against onnxruntime's float convolution
        const tol = (i) => (quantized ? ys * 1.001 : 1e-4 + 1e-4 * Math.abs(want[i]));
        const bad = [...got].findIndex((v, i) => !(Math.abs(v - want[i]) <= tol(i)));
        assert.equal(bad, -1, `${name}, ${backend}: element ${bad} is ${got[bad]}, onnxruntime ${want[bad]}`);
        if (backend === 'stax') {
          const e = m.explain();
          assert.match(e, /op qconv2d/, `${name}: one qconv2d kernel\n${e}`);
          assert.doesNotMatch(e, /op conv2d\b|k\d+_conv/, `${name}: no float convolution left\n${e}`);
        }
      } finally {
        m.dispose();
      }
    }
  }
});

test('dynamically quantized convolutions (DynamicQuantizeLinear -> ConvInteger -> Cast -> Mul -> Add -> Relu) run as one qconv2d on stax, bit for bit the eager graph, and match onnxruntime-node', async () => {
  const ort = needOrt();
  const M = 12, C = 6;
  const zeroes = (n) => new Float32Array(n);
  const cases = {
    // onnxruntime's quantize_dynamic of a Conv: uint8 weights, one scale and zero point, bias [1, M, 1, 1]
    'uint8 weights, per tensor, relu': {
      init: [['wq', 2, [M, C, 3, 3], Uint8Array.from(rnd(M * C * 9, 0, 255))], ['wz', 2, [], Uint8Array.of(131)],
        ['ws', 1, [], Float32Array.of(0.0123)], ['b', 1, [1, M, 1, 1], Float32Array.from(rnd(M, -50, 50), (v) => v / 10)]],
      tail: [['Add', ['m', 'b'], ['a']], ['Relu', ['a'], ['y']]], attrs: { pads: [1, 1, 1, 1], strides: [2, 2] } },
    // int8 weights, a scale per output channel (onnxruntime's ConvInteger takes one weight zero point)
    'int8 weights, per-channel scale, no relu': {
      init: [['wq', 3, [M, C, 1, 1], Int8Array.from(rnd(M * C, -100, 100))], ['wz', 3, [], Int8Array.of(-3)],
        ['ws', 1, [1, M, 1, 1], Float32Array.from(rnd(M, 1, 9), (v) => v / 500)], ['b', 1, [1, M, 1, 1], Float32Array.from(rnd(M, -50, 50), (v) => v / 10)]],
      tail: [['Add', ['b', 'm'], ['y']]], attrs: {} },
  };
  for (const [name, { init, tail, attrs }] of Object.entries(cases)) {
    const nodes = [['DynamicQuantizeLinear', ['x'], ['xq', 'xs', 'xz']], ['ConvInteger', ['xq', 'wq', 'xz', 'wz'], ['ci'], attrs],
      ['Cast', ['ci'], ['cf'], { to: 1 }], ['Mul', ['xs', 'ws'], ['sc']], ['Mul', ['cf', 'sc'], ['m']], ...tail];
    const bytes = makeModel({ opset: 13, nodes, initializers: init, inputs: [['x', 1, [2, C, 10, 9]]], outputs: [['y', 1, null]] });
    const s = await ort.InferenceSession.create(bytes);
    const eager = tp.onnx.load(bytes), stax = tp.onnx.load(bytes, { backend: 'stax', options: { 'stax.profile': true } });
    try {
      // an ordinary input, then an all-zero one (DynamicQuantizeLinear's scale is 0: the result is the bias)
      for (const xv of [Float32Array.from(rnd(2 * C * 90, -300, 200), (v) => v / 40), zeroes(2 * C * 90)]) {
        const want = (await s.run({ x: new ort.Tensor('float32', xv, [2, C, 10, 9]) })).y.data;
        const e = eager.run({ x: tp.tensor(xv, { shape: [2, C, 10, 9] }) }).y.toArray();
        const g = stax.run({ x: tp.tensor(xv, { shape: [2, C, 10, 9] }) }).y.toArray();
        assert.equal(g.length, want.length);
        assert.ok(want.some((v) => v !== 0), `${name}: a nonzero reference`);
        const diff = [...g].findIndex((v, i) => !Object.is(v, e[i]));
        assert.equal(diff, -1, `${name}: stax element ${diff} is ${g[diff]}, the eager graph ${e[diff]}`);
        const bad = [...g].findIndex((v, i) => !(Math.abs(v - want[i]) <= 1e-6 * (1 + Math.abs(want[i]))));
        assert.equal(bad, -1, `${name}: element ${bad} is ${g[bad]}, onnxruntime ${want[bad]}`);
      }
      const ex = stax.explain();
      assert.match(ex, /op qconv2d/, `${name}: one qconv2d kernel\n${ex}`);
      assert.doesNotMatch(ex, /op conv2d_int/, `${name}: no int32 sums left\n${ex}`);
      // one cast: DynamicQuantizeLinear's zero point (a scalar); the sums' cast is in the epilogue
      assert.equal((ex.match(/op cast/g) || []).length, 1, `${name}: one cast kernel\n${ex}`);
    } finally {
      eager.dispose();
      stax.dispose();
      await s.release();
    }
  }
});

test('tp.qconv2d refuses bad options by name and stays usable', () => {
  const x = tp.zeros([1, 2, 4, 4], { dtype: 'uint8' }), w = tp.zeros([3, 2, 3, 3], { dtype: 'int8' });
  const base = { xScale: 0.1, wScale: 0.2 };
  assert.throws(() => tp.qconv2d(x, w, {}), /qconv2d\(\): options.xScale and options.wScale are required/);
  assert.throws(() => tp.qconv2d(tp.zeros([1, 2, 4, 4]), w, base), /qconv2d\(\): x and weight must be int8 or uint8, got float32 and int8/);
  assert.throws(() => tp.qconv2d(x, w, { ...base, xScale: -1 }), /x_scale element 0 is -1|scale/);
  assert.throws(() => tp.qconv2d(x, w, { ...base, yScale: 0.5 }), /y_scale and y_zero_point come together/);
  // an output dtype that is not int8 / uint8 is named, not silently taken as uint8
  assert.throws(() => tp.qconv2d(x, w, { ...base, yScale: 0.5, yZeroPoint: 3, yDtype: 'int16' }), /qconv2d\(\): yDtype 'int16'.*int8 or uint8/);
  assert.throws(() => tp.qconv2d(x, w, { ...base, yScale: 0.5, yZeroPoint: 300, yDtype: 'int8' }), /yZeroPoint 300 is out of range for int8/);
  const d = tp.zeros([3, 2, 3, 3], { dtype: 'int8' });
  d.dispose();
  assert.throws(() => tp.qconv2d(x, d, base), /disposed/);
  const y = tp.qconv2d(x, w, { ...base, yScale: 0.5, yZeroPoint: -3, yDtype: 'int8', padding: 1 }); // still usable
  assert.equal(y.dtype, 'int8');
  assert.deepEqual(y.shape, [1, 3, 4, 4]);
  assert.deepEqual([...y.toArray()], new Array(48).fill(-3)); // zero inputs: the zero point everywhere
});
