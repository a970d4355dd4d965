// float16 / bfloat16 / int8 / uint8 tensors in JS (docs/js-api.md,
// docs/quantization.md): the conversion helpers at the rounding edges
// (hand-computed bit patterns), creation, toArray/toList, casts through the
// core and arithmetic rounded (or wrapped) once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';
import { needOrt } from './_ort.mjs';
import { makeModel } from './_onnx_pb.mjs';

test('float32ToFloat16 / float16ToFloat32: round to nearest even, overflow to Infinity, NaN', () => {
  const x = [1, 65504, 65519, 65520, -65520, 2 ** -24, 2 ** -25, 3 * 2 ** -25, 1 + 2 ** -11, 1 + 3 * 2 ** -11, -0, Infinity, -2.5, 0.1];
  const want = [0x3c00, 0x7bff, 0x7bff, 0x7c00, 0xfc00, 0x0001, 0x0000, 0x0002, 0x3c00, 0x3c02, 0x8000, 0x7c00, 0xc100, 0x2e66];
  assert.deepEqual([...tp.float32ToFloat16(x)], want);
  assert.ok(tp.float32ToFloat16(x) instanceof Uint16Array);
  const nan = tp.float32ToFloat16(NaN);
  assert.equal(nan & 0x7c00, 0x7c00);
  assert.notEqual(nan & 0x3ff, 0);
  assert.deepEqual([...tp.float16ToFloat32([0x3c00, 0x7bff, 0x0001, 0x8000, 0xfc00, 0x2e66])],
    [1, 65504, 2 ** -24, -0, -Infinity, 0.0999755859375]);
  assert.ok(Number.isNaN(tp.float16ToFloat32(0x7e00)));
  // a double that is not a float32 rounds once: 1 + 2^-11 + 2^-40 is past the tie -> up
  assert.equal(tp.float32ToFloat16(1 + 2 ** -11 + 2 ** -40), 0x3c01);
});

test('float32ToBfloat16 / bfloat16ToFloat32', () => {
  const x = [1, 1 + 2 ** -8, 1 + 3 * 2 ** -8, 3.4028234663852886e38, 1.9921875 * 2 ** 127, -2, 2 ** -133];
  assert.deepEqual([...tp.float32ToBfloat16(x)], [0x3f80, 0x3f80, 0x3f82, 0x7f80, 0x7f7f, 0xc000, 0x0001]);
  assert.deepEqual([...tp.bfloat16ToFloat32([0x3f80, 0xc000, 0x7f80])], [1, -2, Infinity]);
  assert.throws(() => tp.float32ToFloat16({}), /float32ToFloat16: expected a number/);
});

test('tensors of float16 / bfloat16 / int8 / uint8: creation, toArray, toList, item', () => {
  const h = tp.tensor([1, 0.1, 65520], { dtype: 'float16' });
  assert.equal(h.dtype, 'float16');
  assert.ok(h.toArray() instanceof Uint16Array);
  assert.deepEqual([...h.toArray()], [0x3c00, 0x2e66, 0x7c00]);
  assert.deepEqual(h.toList(), [1, 0.0999755859375, Infinity]);
  // a Uint16Array with dtype float16 is bit patterns, taken as is
  const hb = tp.tensor(new Uint16Array([0xc100]), { dtype: 'f16' });
  assert.equal(hb.item(), -2.5);
  const b = tp.tensor([1.5, -3], { dtype: 'bfloat16' });
  assert.deepEqual(b.toList(), [1.5, -3]);
  const i8 = tp.tensor(new Int8Array([-128, 127]));
  assert.equal(i8.dtype, 'int8');
  assert.deepEqual([...i8.toArray()], [-128, 127]);
  const u8 = tp.tensor([0, 255], { dtype: 'uint8' });
  assert.equal(u8.dtype, 'uint8');
  assert.ok(u8.toArray() instanceof Uint8Array);
  assert.deepEqual(u8.toList(), [0, 255]);
  // Uint8Array still means bool unless a dtype is given
  assert.equal(tp.tensor(new Uint8Array([1, 0])).dtype, 'bool');
  assert.throws(() => tp.tensor([256], { dtype: 'uint8' }), /cannot be converted to uint8 without overflow/);
  assert.throws(() => tp.tensor([-129], { dtype: 'int8' }), /cannot be converted to int8 without overflow/);
  assert.throws(() => tp.tensor([NaN], { dtype: 'int8' }), /cannot be converted to int8/);
  assert.deepEqual(tp.zeros([2], { dtype: 'int8' }).toList(), [0, 0]);
  assert.deepEqual(tp.full([2], 2.5, { dtype: 'float16' }).toList(), [2.5, 2.5]);
  assert.throws(() => tp.full([1], 300, { dtype: 'uint8' }), /uint8/);
});

test('casts follow ONNX: float -> int8 saturates, int -> int8 wraps, float -> float16 rounds to even', () => {
  const f = tp.tensor([127.9, 200, -200, NaN, -0.5]);
  assert.deepEqual([...f.cast('int8').toArray()], [127, 127, -128, 0, 0]);
  assert.deepEqual([...f.cast('uint8').toArray()], [127, 200, 0, 0, 0]);
  const i = tp.tensor([200, 256, -1], { dtype: 'int32' });
  assert.deepEqual([...i.cast('int8').toArray()], [-56, 0, -1]);
  assert.deepEqual([...i.cast('uint8').toArray()], [200, 0, 255]);
  assert.deepEqual([...tp.tensor([1 + 2 ** -11, 65520]).cast('float16').toArray()], [0x3c00, 0x7c00]);
});

test('arithmetic on storage dtypes: computed in float32 / int32, rounded or wrapped once', () => {
  const a = tp.tensor(new Int8Array([100, -100])), b = tp.tensor(new Int8Array([100, 100]));
  const s = a.add(b);
  assert.equal(s.dtype, 'int8');
  assert.deepEqual([...s.toArray()], [-56, 0]);
  const u = tp.tensor([16, 15], { dtype: 'uint8' }).mul(tp.tensor([16, 17], { dtype: 'uint8' }));
  assert.deepEqual([...u.toArray()], [0, 255]);
  // 0.1 + 0.2 in float16: 0.2999267578125 is a tie -> even 0x34cc
  const h = tp.tensor(new Uint16Array([0x2e66]), { dtype: 'float16' }).add(tp.tensor(new Uint16Array([0x3266]), { dtype: 'float16' }));
  assert.equal(h.dtype, 'float16');
  assert.deepEqual([...h.toArray()], [0x34cc]);
  assert.deepEqual(a.lt(b).toList(), [false, true]);
});

test('tp.quantize / tp.dequantize: ONNX rounding and saturation, per axis, bad input named', () => {
  const x = tp.tensor([-1, 0.25, 0.75, 1.25, 300, 1]);
  // x / 0.5 = -2 0.5 1.5 2.5 600 2 -> round half even + 10 -> saturate uint8
  const q = tp.quantize(x, 0.5, 10);
  assert.equal(q.dtype, 'uint8');
  assert.deepEqual([...q.toArray()], [8, 10, 12, 12, 255, 12]);
  const q8 = x.quantize(0.5, null, { dtype: 'int8' });
  assert.equal(q8.dtype, 'int8');
  assert.deepEqual([...q8.toArray()], [-2, 0, 2, 2, 127, 2]);
  // per axis: scales 1, 2 along dim 0 of [2, 2]
  const x2 = tp.tensor([[1, 2], [3, 4]]);
  const qa = tp.quantize(x2, tp.tensor([1, 2]), null, { axis: 0 });
  assert.deepEqual([...qa.toArray()], [1, 2, 2, 2]);
  const dq = tp.dequantize(qa, tp.tensor([1, 2]), null, { axis: 0 });
  assert.deepEqual([...dq.toArray()], [1, 2, 4, 4]);
  // (q - 128) * 0.5
  const d = tp.dequantize(tp.tensor([0, 128, 255], { dtype: 'uint8' }), 0.5, 128);
  assert.equal(d.dtype, 'float32');
  assert.deepEqual([...d.toArray()], [-64, 0, 63.5]);
  assert.throws(() => tp.quantize(x, 0), /quantize: scale element 0 is 0; a scale must be finite and > 0/);
  assert.throws(() => tp.quantize(x, -1), /scale element 0 is -1/);
  assert.throws(() => tp.quantize(x, NaN), /scale element 0 is nan/);
  assert.throws(() => tp.quantize(x, 0.5, 300), /zeroPoint 300 is out of range for uint8 \(whole numbers 0\.\.255\)/);
  assert.throws(() => tp.quantize(x, 0.5, -129, { dtype: 'int8' }), /out of range for int8/);
  assert.throws(() => tp.quantize(x, 0.5, null, { dtype: 'int32' }), /dtype "int32" is not supported/);
  assert.throws(() => tp.quantize(x2, tp.tensor([1, 2, 3]), null, { axis: 1 }), /scale has 3 values; axis 1 of x has 2/);
  assert.throws(() => tp.quantize(x2, tp.tensor([1, 2]), null, { axis: 2 }), /axis 2 is out of range for x of rank 2/);
  assert.throws(() => tp.dequantize(q, 0.5, tp.tensor(new Int8Array([1]))), /zero_point has dtype int8; it must be x's dtype/);
  // the runtime is still usable after the errors
  assert.deepEqual([...tp.quantize(x, 1).toArray()], [0, 0, 1, 1, 255, 1]);
});

test('tensorplay-wasm/ort: float16, int8 and uint8 tensors as onnxruntime-web has them', async () => {
  const ort = await import('../../js/ort.js');
  const h = new ort.Tensor('float16', [1, 0.1], [2]);
  assert.ok(h.data instanceof Uint16Array);
  assert.deepEqual([...h.data], [0x3c00, 0x2e66]);
  assert.equal(new ort.Tensor(new Uint8Array([1, 2])).type, 'uint8');
  assert.equal(new ort.Tensor(new Int8Array([1, 2])).type, 'int8');
  assert.equal(new ort.Tensor('bool', new Uint8Array([1, 0])).type, 'bool');
  assert.throws(() => new ort.Tensor('uint16', new Uint16Array([1])), /type 'uint16' is not supported \(float32, int32, int64, bool, float16, int8, uint8\)/);
});

test('exported float16 / int8 / quantize / dequantize graphs: onnxruntime-node computes what we do', async () => {
  const ort = needOrt();
  const scale = tp.tensor([0.05, 0.1, 0.2]);
  const zp = tp.tensor([10, 128, 250], { dtype: 'uint8' });
  const fn = (x, h, i) => {
    const q = tp.quantize(x, scale, zp, { axis: 1 });
    const d = tp.dequantize(q, scale, zp, { axis: 1 });
    return [q, d, h.add(h).mul(h), x.cast('float16'), i.mul(i), tp.quantize(x, 0.03, null, { dtype: 'uint8' }),
      tp.matmulInt(q, i.transpose(0, 1))];
  };
  const x = tp.tensor([[-1, 0.33, 2.5], [7, -0.06, 30]]);
  const h = tp.tensor([[0.1, -3, 200], [1e-3, 65000, 2]], { dtype: 'float16' });
  const i = tp.tensor(new Int8Array([100, -100, 12, 11, -128, 127]), { shape: [2, 3] });
  const bytes = tp.onnx.save(fn, [x, h, i]);
  const ours = fn(x, h, i);
  const session = await ort.InferenceSession.create(bytes);
  const feeds = {};
  const inputs = [new ort.Tensor('float32', x.toArray(), [2, 3]), new ort.Tensor('float16', h.toArray(), [2, 3]),
    new ort.Tensor('int8', i.toArray(), [2, 3])];
  session.inputNames.forEach((n, k) => { feeds[n] = inputs[k]; });
  const res = await session.run(feeds);
  assert.equal(session.outputNames.length, ours.length);
  session.outputNames.forEach((n, k) => {
    assert.equal(res[n].type, ours[k].dtype, `output ${k} type`);
    assert.deepEqual([...res[n].data], [...ours[k].toArray()], `output ${k} (${ours[k].dtype})`);
  });
  // the values themselves, hand-computed: x / 0.05 + 10 etc., saturated
  assert.deepEqual([...ours[0].toArray()], [0, 131, 255, 150, 127, 255]);
  assert.deepEqual([...ours[4].toArray()], [16, 16, -112, 121, 0, 1]);
  // q [[0, 131, 255], [150, 127, 255]] @ i^T [[100, 11], [-100, -128], [12, 127]]
  assert.deepEqual([...ours[6].toArray()], [-10040, 15617, 5360, 17779]);
});

test('bitcast: the same bytes as another dtype of one size', () => {
  const x = tp.tensor([1, -2]);
  assert.deepEqual([...x.bitcast('int32').toArray()], [0x3f800000, 0xc0000000 | 0]);
  assert.deepEqual([...tp.tensor(new Int8Array([-1, 5])).bitcast('uint8').toArray()], [255, 5]);
  assert.throws(() => x.bitcast('float16'), /bitcast: float32 \(4 bytes\) to float16 \(2 bytes\): the sizes must be equal/);
});

test('ONNX quantization models: scales fed at run time are checked, bad models name the node', () => {
  // QuantizeLinear with every input fed at run time (elem 1 float, 2 uint8, 3 int8)
  const q = makeModel({ opset: 21, nodes: [['QuantizeLinear', ['x', 's', 'z'], ['y']]],
    inputs: [['x', 1, [4]], ['s', 1, []], ['z', 2, []]], outputs: [['y', 2, null]] });
  const x = tp.tensor([1, 2, 3, 4]);
  for (const backend of ['eager', 'stax']) {
    const m = tp.onnx.load(q, { backend });
    const z = tp.tensor(3, { dtype: 'uint8' });
    assert.deepEqual([...m.run({ x, s: tp.tensor(0.5), z }).y.toArray()], [5, 7, 9, 11]);
    assert.throws(() => m.run({ x, s: tp.tensor(0), z }), /quantize: scale element 0 is 0; a scale must be finite and > 0/);
    assert.throws(() => m.run({ x, s: tp.tensor(-2), z }), /scale element 0 is -2/);
    if (backend === 'eager') assert.throws(() => m.run({ x, s: tp.tensor(NaN), z }), /node %y: quantize: scale element 0 is nan/);
    assert.deepEqual([...m.run({ x, s: tp.tensor(1), z }).y.toArray()], [4, 5, 6, 7]); // still usable
  }
  // a 17x17 kernel (289 taps) of 255 - 0 times 0 - 255: exact on the integer convolution (-18792225)
  const ci = makeModel({ nodes: [['ConvInteger', ['x', 'w', 'xz', 'wz'], ['y']]], inputs: [['x', 2, [1, 1, 17, 17]], ['w', 2, [1, 1, 17, 17]], ['xz', 2, []], ['wz', 2, []]], outputs: [['y', 6, null]] });
  const y17 = tp.onnx.load(ci).run({ x: tp.full([1, 1, 17, 17], 255, { dtype: 'uint8' }), w: tp.zeros([1, 1, 17, 17], { dtype: 'uint8' }),
    xz: tp.tensor(0, { dtype: 'uint8' }), wz: tp.tensor(255, { dtype: 'uint8' }) }).y;
  assert.deepEqual([...y17.toArray()], [289 * 255 * -255]);
  const dq = makeModel({ nodes: [['DequantizeLinear', ['x', 's', 'z'], ['y']]], inputs: [['x', 2, [4]], ['s', 1, []], ['z', 3, []]], outputs: [['y', 1, null]] });
  assert.throws(() => tp.onnx.load(dq).run({ x: tp.zeros([4], { dtype: 'uint8' }), s: tp.tensor(1), z: tp.zeros([], { dtype: 'int8' }) }),
    /node 'y' \(DequantizeLinear\): x_zero_point has dtype int8, x uint8; they must match/);
  const qa = makeModel({ nodes: [['QuantizeLinear', ['x', 's'], ['y'], { axis: 1 }]], inputs: [['x', 1, [2, 3]], ['s', 1, [2]]], outputs: [['y', 2, null]] });
  assert.throws(() => tp.onnx.load(qa).run({ x: tp.zeros([2, 3]), s: tp.tensor([1, 2]) }),
    /node 'y' \(QuantizeLinear\): y_scale has shape \[2\]; per-axis quantization along axis 1 of \[2,3\] needs \[3\]/);
  // MatMulInteger of a large inner dimension (K = 3000, all 255 - 0 times 0 - 255 with zero points): exact int32
  const ok = makeModel({ nodes: [['MatMulInteger', ['a', 'b', 'az', 'bz'], ['y']]],
    inputs: [['a', 2, [1, 3000]], ['b', 2, [3000, 1]], ['az', 2, []], ['bz', 2, []]], outputs: [['y', 6, null]] });
  const r = tp.onnx.load(ok).run({ a: tp.full([1, 3000], 255, { dtype: 'uint8' }), b: tp.zeros([3000, 1], { dtype: 'uint8' }),
    az: tp.tensor(0, { dtype: 'uint8' }), bz: tp.tensor(255, { dtype: 'uint8' }) }).y;
  assert.equal(r.dtype, 'int32');
  assert.deepEqual([...r.toArray()], [-3000 * 255 * 255]);
});

test('tp.quantization: per-channel weights and dynamic quantization (hand-computed scales)', () => {
  // channel 0: max |w| 2.54 -> scale 0.02; channel 1: all zero -> scale 1
  const w = tp.tensor([[1, -2.54, 0.01], [0, 0, 0]]);
  const { q, scale, zeroPoint } = tp.quantization.quantizeWeight(w);
  assert.equal(q.dtype, 'int8');
  assert.deepEqual([...scale.toArray()].map((v) => Math.fround(v)), [Math.fround(Math.fround(2.54) / 127), 1]);
  assert.deepEqual([...zeroPoint.toArray()], [0, 0]);
  assert.deepEqual([...q.toArray()], [50, -127, 0, 0, 0, 0]);
  const back = tp.dequantize(q, scale, zeroPoint, { axis: 0 }).toArray();
  for (const [i, v] of [1, -2.54, 0.01, 0, 0, 0].entries()) assert.ok(Math.abs(back[i] - v) <= 0.01 + 1e-6, `element ${i}`);
  // uint8 per column (axis 1): column 0 [-1, 3] -> scale 4/255, zero point round(255/4) = 64
  const u = tp.quantization.quantizeWeight(tp.tensor([[-1, 2], [3, 4]]), { axis: 1, dtype: 'uint8' });
  assert.equal(u.q.dtype, 'uint8');
  assert.deepEqual([...u.zeroPoint.toArray()], [64, 0]);
  // DynamicQuantizeLinear's example: x = [0, 2, -3, -2.5, 1.34, 0.5] -> scale 5/255, zero point 153
  const d = tp.quantization.dynamicQuantize(tp.tensor([0, 2, -3, -2.5, 1.34, 0.5]));
  assert.equal(d.zeroPoint.item(), 153);
  assert.ok(Math.abs(d.scale.item() - 5 / 255) < 1e-7);
  assert.deepEqual([...d.q.toArray()], [153, 255, 0, 26, 221, 179]);
  assert.throws(() => tp.quantization.quantizeWeight(tp.tensor([1], { dtype: 'int32' })), /w has dtype int32; a float tensor is required/);
  assert.throws(() => tp.quantization.quantizeWeight(w, { axis: 2 }), /axis 2 is out of range for w of rank 2/);
});

test('tensor(t) of a float16 / uint8 tensor keeps its dtype; with another dtype it casts', () => {
  const h = tp.tensor([1.5, -2], { dtype: 'float16' });
  const c = tp.tensor(h);
  assert.equal(c.dtype, 'float16');
  assert.deepEqual(c.toList(), [1.5, -2]);
  assert.equal(tp.tensor(tp.tensor([7], { dtype: 'uint8' })).dtype, 'uint8');
  assert.deepEqual(tp.tensor(h, { dtype: 'float32' }).toList(), [1.5, -2]);
  assert.deepEqual(tp.tensor(h, { dtype: 'float32', shape: [2, 1] }).toList(), [[1.5], [-2]]);
});

test('compiled functions on float16 / int8 tensors match eager (stax and eager backends)', () => {
  const f = (x, i, w) => [x.add(x).mul(0.5).relu(), i.mul(i).add(1), x.matmul(w).softmax(-1), tp.quantize(x.cast('float32'), 0.1)];
  const x = tp.tensor([[1, -2, 3.3], [0.1, 65000, -1e-3]], { dtype: 'float16' });
  const i = tp.tensor(new Int8Array([100, -7, 12]));
  const w = tp.tensor([[0.5, 1], [2, -1], [0.25, 0]], { dtype: 'float16' });
  const want = f(x, i, w);
  for (const backend of ['stax', 'eager']) {
    const g = tp.compiler.compile(f, { backend });
    const got = g(x, i, w);
    got.forEach((t, k) => {
      assert.equal(t.dtype, want[k].dtype, `${backend} output ${k}`);
      assert.deepEqual([...t.toArray()], [...want[k].toArray()], `${backend} output ${k}`);
    });
  }
  assert.deepEqual([...want[1].toArray()], [17, 50, -111]); // 10001 mod 256 = 17, 49 + 1, 145 -> -111
});

test('tp.matmulInt: exact int32 products of int8 / uint8 tensors', () => {
  const a = tp.tensor(new Int8Array([1, 2, 3, -4]), { shape: [2, 2] });
  const b = tp.tensor([5, 6, 7, 200], { dtype: 'uint8', shape: [2, 2] });
  const y = a.matmulInt(b);
  assert.equal(y.dtype, 'int32');
  assert.deepEqual([...y.toArray()], [19, 406, -13, -782]);
  const k = tp.matmulInt(tp.full([1, 1000], 255, { dtype: 'uint8' }), tp.full([1000, 1], 255, { dtype: 'uint8' }));
  assert.deepEqual([...k.toArray()], [1000 * 255 * 255]);
  assert.throws(() => tp.matmulInt(tp.tensor([[1]]), b), /matmul_int: a has dtype float32, expected int8, uint8 or int32/);
});

test('.npy of float16 / int8 / uint8 round-trips; bfloat16 has no .npy spelling', () => {
  for (const t of [tp.tensor([1.5, -0.1], { dtype: 'float16' }), tp.tensor(new Int8Array([-128, 127])), tp.tensor([0, 255], { dtype: 'uint8' })]) {
    const back = tp.npy.decode(tp.npy.encode(t));
    assert.equal(back.dtype, t.dtype);
    assert.deepEqual([...back.toArray()], [...t.toArray()]);
  }
  const header = new TextDecoder().decode(tp.npy.encode(tp.tensor([1], { dtype: 'float16' })).subarray(0, 64));
  assert.match(header, /'descr': '<f2'/);
  assert.throws(() => tp.npy.encode(tp.tensor([1], { dtype: 'bfloat16' })), /dtype bfloat16 has no \.npy spelling/);
});

test('ConvInteger / QLinearConv past 258 products per output (the integer convolution, exact) match onnxruntime-node', async () => {
  const ort = needOrt();
  let seed = 7;
  const rnd = (n, lo, hi) => Array.from({ length: n }, () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return lo + (seed % (hi - lo + 1));
  });
  // ConvInteger: x uint8 [1, 300, 5, 5], w uint8 [4, 300, 3, 3] (2700 products per output), pads 1, zero points
  const ci = makeModel({ opset: 10, nodes: [['ConvInteger', ['x', 'w', 'xz', 'wz'], ['y'], { pads: [1, 1, 1, 1] }]],
    inputs: [['x', 2, [1, 300, 5, 5]], ['w', 2, [4, 300, 3, 3]], ['xz', 2, []], ['wz', 2, []]], outputs: [['y', 6, null]] });
  const xv = Uint8Array.from(rnd(7500, 0, 255)), wv = Uint8Array.from(rnd(10800, 0, 255));
  const feeds = { x: [xv, [1, 300, 5, 5], 'uint8'], w: [wv, [4, 300, 3, 3], 'uint8'], xz: [Uint8Array.of(17), [], 'uint8'], wz: [Uint8Array.of(200), [], 'uint8'] };
  const ours = tp.onnx.load(ci).run(Object.fromEntries(Object.entries(feeds).map(([k, [d, s, t]]) => [k, tp.tensor(d, { dtype: t, shape: s })]))).y;
  const s1 = await ort.InferenceSession.create(ci);
  const r1 = await s1.run(Object.fromEntries(Object.entries(feeds).map(([k, [d, s, t]]) => [k, new ort.Tensor(t, d, s)])));
  assert.equal(ours.dtype, 'int32');
  assert.deepEqual([...ours.toArray()], [...r1.y.data]);
  // QLinearConv: x uint8 [1, 64, 4, 4], w int8 [8, 64, 3, 3] (576 products), per-channel w_scale, int32 bias
  const qc = makeModel({ opset: 10, nodes: [['QLinearConv', ['x', 'xs', 'xz', 'w', 'ws', 'wz', 'ys', 'yz', 'b'], ['y'], { pads: [1, 1, 1, 1] }]],
    inputs: [['x', 2, [1, 64, 4, 4]], ['xs', 1, []], ['xz', 2, []], ['w', 3, [8, 64, 3, 3]], ['ws', 1, [8]], ['wz', 3, [8]],
      ['ys', 1, []], ['yz', 2, []], ['b', 6, [8]]], outputs: [['y', 2, null]] });
  const q = {
    x: [Uint8Array.from(rnd(1024, 0, 255)), [1, 64, 4, 4], 'uint8'], xs: [Float32Array.of(0.02), [], 'float32'], xz: [Uint8Array.of(128), [], 'uint8'],
    w: [Int8Array.from(rnd(4608, -127, 127)), [8, 64, 3, 3], 'int8'], ws: [Float32Array.from(rnd(8, 1, 9), (v) => v / 1000), [8], 'float32'],
    wz: [new Int8Array(8), [8], 'int8'], ys: [Float32Array.of(0.5), [], 'float32'], yz: [Uint8Array.of(100), [], 'uint8'],
    b: [Int32Array.from(rnd(8, -5000, 5000)), [8], 'int32'],
  };
  const oq = tp.onnx.load(qc).run(Object.fromEntries(Object.entries(q).map(([k, [d, s, t]]) => [k, tp.tensor(d, { dtype: t, shape: s })]))).y;
  const s2 = await ort.InferenceSession.create(qc);
  const r2 = await s2.run(Object.fromEntries(Object.entries(q).map(([k, [d, s, t]]) => [k, new ort.Tensor(t, d, s)])));
  const a = [...oq.toArray()], e = [...r2.y.data];
  // ORT requantizes with its own float order: at most one step apart, and rarely
  const off = a.filter((v, i) => v !== e[i]);
  if (process.env.TP_LOWP_VERBOSE) console.log(`QLinearConv: ${off.length} of ${a.length} differ from onnxruntime-node by one step`);
  assert.ok(a.every((v, i) => Math.abs(v - e[i]) <= 1), 'within one quantization step');
  assert.ok(off.length <= a.length / 50, `${off.length} of ${a.length} differ by one step`);
  // grouped, 300 products per output (past the float32 chunks' bound): exact, as onnxruntime
  const g = makeModel({ opset: 10, nodes: [['ConvInteger', ['x', 'w'], ['y'], { group: 2 }]], inputs: [['x', 2, [1, 600, 1, 1]], ['w', 2, [2, 300, 1, 1]]], outputs: [['y', 6, null]] });
  const gx = Uint8Array.from(rnd(600, 0, 255)), gw = Uint8Array.from(rnd(600, 0, 255));
  const gy = tp.onnx.load(g).run({ x: tp.tensor(gx, { dtype: 'uint8', shape: [1, 600, 1, 1] }), w: tp.tensor(gw, { dtype: 'uint8', shape: [2, 300, 1, 1] }) }).y;
  const s3 = await ort.InferenceSession.create(g);
  const r3 = await s3.run({ x: new ort.Tensor('uint8', gx, [1, 600, 1, 1]), w: new ort.Tensor('uint8', gw, [2, 300, 1, 1]) });
  assert.deepEqual([...gy.toArray()], [...r3.y.data]);
});
