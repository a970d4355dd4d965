// float16 weights kept float16 (issue 17, docs/quantization.md "float16
// weights"): the core's vectorized float16 -> float32 conversion (SIMD128
// here) on all 65536 bit patterns against the core's scalar conversion and
// the JS helper, and ONNX float16-weight models (inputs fed at run time) on
// stax (the GEMM reads float16 panels) vs eager vs onnxruntime-node.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';
import { needOrt } from './_ort.mjs';
import { makeModel } from './_onnx_pb.mjs';

test('float16 -> float32 cast: all 65536 patterns, vector (contiguous) = scalar (strided) = float16ToFloat32', () => {
  const all = new Uint16Array(65536).map((_, i) => i);
  const h = tp.tensor(all, { dtype: 'float16' });
  const vec = new Uint32Array(h.cast('float32').toArray().buffer.slice(0));
  // the patterns as [2, 32768] viewed transposed: a strided cast, the core's scalar conversion
  const col = tp.tensor(all, { dtype: 'float16', shape: [2, 32768] }).transpose(0, 1);
  const st = new Uint32Array(col.cast('float32').toArray().buffer.slice(0)); // [32768, 2]
  const scal = new Uint32Array(65536);
  for (let i = 0; i < 32768; i++) scal[i] = st[2 * i], scal[32768 + i] = st[2 * i + 1];
  const js = tp.float16ToFloat32(all);
  const f = new Float32Array(vec.buffer);
  let nans = 0;
  for (let i = 0; i < 65536; i++) {
    assert.equal(vec[i], scal[i], `pattern 0x${i.toString(16)}: vector 0x${vec[i].toString(16)}, scalar 0x${scal[i].toString(16)}`);
    if (Number.isNaN(js[i])) {
      nans++;
      assert.ok(Number.isNaN(f[i]) && (vec[i] & 0x400000) && (vec[i] >>> 31) === (i >>> 15), `NaN 0x${i.toString(16)}: quiet, sign kept`);
    } else {
      assert.ok(Object.is(f[i], js[i]), `pattern 0x${i.toString(16)}: ${f[i]} vs ${js[i]}`);
    }
  }
  assert.equal(nans, 2 * 1023);
  for (const t of [h, col]) t.dispose();
});

// x [S, D] f16 -> MatMul W1 [D, F] -> Add b1 -> Relu -> MatMul W2 [F, D] -> y f16, weights f16 initializers
function mlp(S, D, F, seed) {
  let s = seed;
  const rnd = (n, sc) => tp.float32ToFloat16(Float32Array.from({ length: n }, () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return (s / 2147483648 - 0.5) * sc;
  }));
  const w1 = rnd(D * F, 2 / Math.sqrt(D)), b1 = rnd(F, 0.2), w2 = rnd(F * D, 2 / Math.sqrt(F));
  const bytes = makeModel({
    nodes: [['MatMul', ['x', 'w1'], ['h']], ['Add', ['h', 'b1'], ['hb']], ['Relu', ['hb'], ['r']], ['MatMul', ['r', 'w2'], ['y']]],
    inputs: [['x', 10, ['S', D]]], outputs: [['y', 10, null]],
    initializers: [['w1', 10, [D, F], w1], ['b1', 10, [F], b1], ['w2', 10, [F, D], w2]],
  });
  return { bytes, x: rnd(S * D, 2) };
}

test('ONNX float16-weight MLP: stax (float16 GEMM panels) = eager, and onnxruntime-node within float16 rounding', async () => {
  const ort = needOrt();
  for (const [S, D, F] of [[5, 24, 40], [37, 64, 200]]) {
    const { bytes, x } = mlp(S, D, F, 7 + S);
    const xt = tp.tensor(x, { dtype: 'float16', shape: [S, D] });
    const stax = tp.onnx.load(bytes, { backend: 'stax' });
    const eager = tp.onnx.load(bytes, { backend: 'eager' });
    const ys = stax.run({ x: xt }).y, ye = eager.run({ x: xt }).y;
    assert.equal(ys.dtype, 'float16');
    const a = tp.float16ToFloat32(ys.toArray()), b = tp.float16ToFloat32(ye.toArray());
    const sess = await ort.InferenceSession.create(bytes);
    const r = await sess.run({ x: new ort.Tensor('float16', x, [S, D]) });
    const o = tp.float16ToFloat32(r.y.data);
    let maxOrt = 0, maxEager = 0;
    for (let i = 0; i < a.length; i++) {
      // stax and eager: float32 sums of the same exact products, one float16 rounding
      // each (summation order may differ: one float16 ulp, 2^-10 relative, allowed)
      maxEager = Math.max(maxEager, Math.abs(a[i] - b[i]) / (2 ** -10 * Math.max(Math.abs(b[i]), 2 ** -14)));
      // onnxruntime rounds the hidden layer to float16 as we do; 2 float16 ulps of the output
      maxOrt = Math.max(maxOrt, Math.abs(a[i] - o[i]) / (2 ** -10 * Math.max(Math.abs(o[i]), 1)));
    }
    assert.ok(maxEager <= 1, `${S}x${D}x${F}: stax vs eager ${maxEager} float16 ulps`);
    assert.ok(maxOrt <= 2, `${S}x${D}x${F}: stax vs onnxruntime-node ${maxOrt} float16 ulps (of max(|y|, 1))`);
    // a second run (the panels packed once) gives the same bits; a bad input still fails clearly
    assert.deepEqual([...stax.run({ x: xt }).y.toArray()], [...ys.toArray()]);
    assert.throws(() => stax.run({ x: tp.zeros([S, D + 1], { dtype: 'float16' }) }), new RegExp(`input 'x' dim 1 must be ${D}, got shape \\[${S},${D + 1}\\]`));
    assert.throws(() => stax.run({ x: tp.zeros([S, D]) }), /input 'x' must be float16, got float32/);
    assert.equal(stax.run({ x: xt }).y.dtype, 'float16'); // still usable
    for (const t of [xt, ys, ye]) t.dispose();
    stax.dispose();
    eager.dispose();
  }
});
