// float16 weights kept float16 (issue 17, docs/quantization.md "float16
// weights"): the core's vectorized float16 -> float32 conversion (SIMD128
// here) on all 65536 bit patterns against the core's scalar conversion and
// the JS helper, and ONNX float16-weight models (inputs fed at run time) on
// stax (the GEMM reads float16 panels) vs eager vs onnxruntime-node; a float16 block whose
// activations stay float32 on stax, against a double oracle, eager and onnxruntime-node.
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

test('float32 -> float16 cast: vector (contiguous) = scalar (strided) = float32ToFloat16 at every rounding edge', () => {
  // each float16 value, its float32 neighbours, the midpoints to the next value (ties) and theirs, a sweep of
  // float32 bit patterns, NaNs with payloads, the overflow edge (65520 rounds to Inf)
  const u = [];
  const f = tp.float16ToFloat32(new Uint16Array(65536).map((_, i) => i)), fb = new Uint32Array(f.buffer);
  for (let h = 0; h < 65536; h++) {
    u.push(fb[h], (fb[h] + 1) >>> 0, (fb[h] - 1) >>> 0);
    if ((h & 0x7c00) === 0x7c00 || ((h + 1) & 0x7c00) === 0x7c00) continue;
    const mid = Float32Array.of((f[h] + f[h + 1]) / 2), mb = new Uint32Array(mid.buffer)[0];
    u.push(mb, mb + 1, mb - 1);
  }
  for (let x = 0; x < 2 ** 32; x += 65521) u.push(x);
  u.push(0x7f800001, 0xff800001, 0x7fc00000, 0x7fa02000, 0x477ff000, 0x477fefff, 0xc77ff000, 0x33000000, 0x33000001);
  if (u.length % 2) u.push(0);
  const bits = Uint32Array.from(u), x = new Float32Array(bits.buffer);
  const t = tp.tensor(x);
  const vec = t.cast('float16').toArray();
  const col = tp.tensor(x, { shape: [2, x.length / 2] }).transpose(0, 1); // strided: the scalar rounding
  const st = col.cast('float16').toArray(), n2 = x.length / 2;
  const js = tp.float32ToFloat16(x);
  for (let i = 0; i < x.length; i++) {
    const sc = i < n2 ? st[2 * i] : st[2 * (i - n2) + 1];
    // (a JS number has no NaN payload: float32ToFloat16 gives 0x7e00 for every NaN; the core keeps sign and payload)
    const nan = Number.isNaN(x[i]), want = nan ? (((bits[i] >>> 16) & 0x8000) | 0x7e00 | ((bits[i] >>> 13) & 0x3ff)) : js[i];
    if (vec[i] !== sc || vec[i] !== want || (nan && js[i] !== 0x7e00))
      assert.fail(`0x${bits[i].toString(16)}: vector 0x${vec[i].toString(16)}, scalar 0x${sc.toString(16)}, float32ToFloat16 0x${js[i].toString(16)}`);
  }
  for (const v of [t, col]) v.dispose();
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
  for (const [S, D, F] of [[5, 24, 40], [37, 64, 200], [6, 40, 300]]) { // (F = 300: two depth blocks of the second GEMM)
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
      // stax and eager: float32 sums of the same exact products; eager rounds the hidden layer to float16,
      // stax keeps it float32 (docs/quantization.md "float16 models"): one float16 ulp (2^-10 relative) allowed
      maxEager = Math.max(maxEager, Math.abs(a[i] - b[i]) / (2 ** -10 * Math.max(Math.abs(b[i]), 2 ** -14)));
      // onnxruntime-node: 2 float16 ulps of max(|y|, 1)
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

test('float16 weights at the edges on stax: subnormals, signed zeros, 65504 (generated SIMD128 GEMM), Inf / NaN (the core kernel) = eager', () => {
  // x [4, 16] @ w [16, 12]: w's halves chosen to hit each branch of the conversion; a second weight adds Inf and NaN
  const K = 16, N = 12, M = 4;
  const edge = [0x0001, 0x8001, 0x03ff, 0x83ff, 0x0400, 0x0000, 0x8000, 0x7bff, 0xfbff, 0x3c00, 0xbc00, 0x3555];
  const w = Uint16Array.from({ length: K * N }, (_, i) => edge[(i * 7 + (i >> 4)) % edge.length]);
  const wbad = w.slice();
  wbad[5] = 0x7c00, wbad[K * N - 1] = 0x7e00, wbad[40] = 0xfc00;
  const x = tp.float32ToFloat16(Float32Array.from({ length: M * K }, (_, i) => ((i * 37) % 11 - 5) * 2 ** -((i % 3) * 4)));
  for (const wt of [w, wbad]) {
    const bytes = makeModel({ nodes: [['MatMul', ['x', 'w'], ['y']]], inputs: [['x', 10, [M, K]]], outputs: [['y', 10, null]],
      initializers: [['w', 10, [K, N], wt]] });
    const xt = tp.tensor(x, { dtype: 'float16', shape: [M, K] });
    const stax = tp.onnx.load(bytes, { backend: 'stax' }), eager = tp.onnx.load(bytes);
    const a = tp.float16ToFloat32(stax.run({ x: xt }).y.toArray()), b = tp.float16ToFloat32(eager.run({ x: xt }).y.toArray());
    for (let i = 0; i < a.length; i++) {
      if (Number.isNaN(b[i])) assert.ok(Number.isNaN(a[i]), `${i}: ${a[i]} vs NaN`);
      else if (!Number.isFinite(b[i])) assert.equal(a[i], b[i], `${i}`);
      else assert.ok(Math.abs(a[i] - b[i]) <= 2 ** -10 * Math.max(Math.abs(b[i]), 2 ** -14), `${i}: ${a[i]} vs ${b[i]}`);
    }
    if (wt === wbad) assert.ok(a.some((v) => !Number.isFinite(v)));
    xt.dispose();
    stax.dispose();
    eager.dispose();
  }
});

test('ONNX float16 model with a symbolic dim on stax: every size within half a float16 ulp of a double oracle (one plan template)', () => {
  // x [S, 24] -> MatMul -> Add -> Tanh -> MatMul: the hidden layer stays float32 at every size (the other sizes'
  // graphs are imported as the first one is), where eager's float16 hidden layer costs up to ~80 ulps near 0
  const D = 24, F = 40;
  const rnd = (n, sc, s0) => {
    let s = s0;
    return tp.float32ToFloat16(Float32Array.from({ length: n }, () => { s = (s * 1103515245 + 12345) % 2147483648; return (s / 2147483648 - 0.5) * sc; }));
  };
  const w1 = rnd(D * F, 0.4, 3), b1 = rnd(F, 0.2, 5), w2 = rnd(F * D, 0.3, 7);
  const bytes = makeModel({
    nodes: [['MatMul', ['x', 'w1'], ['h']], ['Add', ['h', 'b1'], ['hb']], ['Tanh', ['hb'], ['r']], ['MatMul', ['r', 'w2'], ['y']]],
    inputs: [['x', 10, ['S', D]]], outputs: [['y', 10, null]],
    initializers: [['w1', 10, [D, F], w1], ['b1', 10, [F], b1], ['w2', 10, [F, D], w2]],
  });
  const f = (h) => Array.from(tp.float16ToFloat32(h)), W1 = f(w1), B1 = f(b1), W2 = f(w2);
  const stax = tp.onnx.load(bytes, { backend: 'stax' });
  for (const S of [5, 9, 17, 5]) {
    const xh = rnd(S * D, 2, S), X = f(xh);
    const xt = tp.tensor(xh, { dtype: 'float16', shape: [S, D] });
    const y = stax.run({ x: xt }).y, a = tp.float16ToFloat32(y.toArray());
    let worst = 0;
    for (let i = 0; i < S; i++) {
      const r = Array.from({ length: F }, (_, j) => { let acc = B1[j]; for (let k = 0; k < D; k++) acc += X[i * D + k] * W1[k * F + j]; return Math.tanh(acc); });
      for (let j = 0; j < D; j++) {
        let acc = 0;
        for (let k = 0; k < F; k++) acc += r[k] * W2[k * D + j];
        worst = Math.max(worst, Math.abs(a[i * D + j] - acc) / (2 ** -10 * Math.max(Math.abs(acc), 2 ** -14)));
      }
    }
    assert.ok(worst <= 0.502, `S = ${S}: ${worst} float16 ulps from the double oracle`);
    xt.dispose();
    y.dispose();
  }
  assert.match(stax.explain(), /"instantiations": [1-9]/); // the other sizes ran on the plan's template
  stax.dispose();
});

// A float16 attention-like block: LayerNormalization -> MatMul (float16 weight) -> Add bias -> Reshape ->
// Transpose -> Softmax -> Transpose -> Reshape -> Mul by x -> Tanh; x and y float16, every initializer float16.
// On stax the activations stay float32 from node to node (docs/quantization.md "float16 models"): y is the
// float32 computation rounded once. The eager graph executor rounds every node's output (ONNX's float16 kernels).
function block(S, D, H, seed) {
  let s = seed;
  const rnd = (n, sc, c = 0) => tp.float32ToFloat16(Float32Array.from({ length: n }, () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return c + (s / 2147483648 - 0.5) * sc;
  }));
  const g = rnd(D, 0.4, 1), b = rnd(D, 0.2), w = rnd(D * D, 2 / Math.sqrt(D)), bw = rnd(D, 0.2);
  const bytes = makeModel({
    nodes: [['LayerNormalization', ['x', 'g', 'b'], ['n'], { axis: 1, epsilon: { float: 1e-5 } }],
      ['MatMul', ['n', 'w'], ['m']], ['Add', ['m', 'bw'], ['a']], ['Reshape', ['a', 'shp'], ['r']],
      ['Transpose', ['r'], ['t'], { perm: [1, 0, 2] }], ['Softmax', ['t'], ['p'], { axis: 2 }],
      ['Transpose', ['p'], ['u'], { perm: [1, 0, 2] }], ['Reshape', ['u', 'shp2'], ['v']], ['Mul', ['v', 'x'], ['z']],
      ['Tanh', ['z'], ['y']]],
    inputs: [['x', 10, [S, D]]], outputs: [['y', 10, null]],
    initializers: [['g', 10, [D], g], ['b', 10, [D], b], ['w', 10, [D, D], w], ['bw', 10, [D], bw],
      ['shp', 7, [3], BigInt64Array.from([S, H, D / H].map(BigInt))], ['shp2', 7, [2], BigInt64Array.from([S, D].map(BigInt))]],
  });
  const x = rnd(S * D, 4);
  // the double oracle on the float16 values (no rounding between nodes)
  const f = (h) => Array.from(tp.float16ToFloat32(h));
  const [X, G, Bt, W, BW] = [f(x), f(g), f(b), f(w), f(bw)], Dh = D / H;
  const A = new Float64Array(S * D), Y = new Float64Array(S * D);
  for (let i = 0; i < S; i++) {
    const row = X.slice(i * D, i * D + D), mu = row.reduce((p, v) => p + v, 0) / D;
    const va = row.reduce((p, v) => p + (v - mu) ** 2, 0) / D, n = row.map((v, j) => (v - mu) / Math.sqrt(va + 1e-5) * G[j] + Bt[j]);
    for (let j = 0; j < D; j++) {
      let acc = BW[j];
      for (let k = 0; k < D; k++) acc += n[k] * W[k * D + j];
      A[i * D + j] = acc;
    }
    for (let hh = 0; hh < H; hh++) { // softmax over each head's Dh values of row i
      const seg = A.slice(i * D + hh * Dh, i * D + hh * Dh + Dh), mx = Math.max(...seg);
      const e = seg.map((v) => Math.exp(v - mx)), sum = e.reduce((p, v) => p + v, 0);
      for (let j = 0; j < Dh; j++) Y[i * D + hh * Dh + j] = Math.tanh(e[j] / sum * X[i * D + hh * Dh + j]);
    }
  }
  return { bytes, x, oracle: Y };
}

test('ONNX float16 block on stax: float32 between nodes (one rounding at the output), vs a double oracle, eager and onnxruntime-node', async () => {
  const ort = needOrt();
  const ulps = (a, ref) => Math.max(...Array.from(a, (v, i) => Math.abs(v - ref[i]) / (2 ** -10 * Math.max(Math.abs(ref[i]), 2 ** -14))));
  for (const [S, D, H] of [[6, 32, 4], [33, 64, 2]]) {
    const { bytes, x, oracle } = block(S, D, H, 11 + S);
    const xt = tp.tensor(x, { dtype: 'float16', shape: [S, D] });
    const stax = tp.onnx.load(bytes, { backend: 'stax' });
    const eager = tp.onnx.load(bytes);
    const ys = stax.run({ x: xt }).y, ye = eager.run({ x: xt }).y;
    assert.equal(ys.dtype, 'float16');
    const a = tp.float16ToFloat32(ys.toArray()), e = tp.float16ToFloat32(ye.toArray());
    const sess = await ort.InferenceSession.create(bytes);
    const o = tp.float16ToFloat32((await sess.run({ x: new ort.Tensor('float16', x, [S, D]) })).y.data);
    // stax: the float32 value (within ~1e-6 relative of the double one) rounded once: at most one float16 ulp
    const us = ulps(a, oracle), ue = ulps(e, oracle), uo = ulps(o, oracle);
    // (half an ulp and the float32 error, ~1e-6 relative = 1e-3 of these ulps)
    assert.ok(us <= 0.502, `${S}x${D}: stax ${us} float16 ulps from the double oracle`);
    // eager rounds each node's output: a larger error (1.1-1.4 ulps here)
    assert.ok(ue <= 3 && ue > us, `${S}x${D}: eager ${ue} ulps (stax ${us})`);
    // onnxruntime-node 1.30 (float16 kernels for some nodes, float32 between casts for others): 0.6-0.76 here
    assert.ok(uo <= 2, `${S}x${D}: onnxruntime-node ${uo} ulps`);
    // the plan computes in float32: the graph input's cast is a float16 load, the output's the rounding
    // store of the last kernel, no cast kernel at all (per-node rounding made 12); the profile lists the
    // plan's kernels
    const prof = tp.onnx.load(bytes, { backend: 'stax', options: { 'stax.profile': true } });
    prof.run({ x: xt }).y.dispose();
    assert.equal((prof.explain().match(/ op cast /g) || []).length, 0, prof.explain());
    assert.match(prof.explain(), /kernels per run/, prof.explain());
    prof.dispose();
    for (const t of [xt, ys, ye]) t.dispose();
    stax.dispose();
    eager.dispose();
    console.log(`# ${S}x${D}x${H}: ulps from the double oracle: stax ${us.toFixed(3)}, eager ${ue.toFixed(3)}, onnxruntime-node ${uo.toFixed(3)}`);
  }
});
