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
  for (const [wt, M, K, N, perCol] of [['int8', 6, 70, 40, true], ['uint8', 9, 33, 17, false], ['int8', 1, 256, 64, false]]) {
    const wElem = wt === 'int8' ? 3 : 2;
    const w = ARR[wt].from(rnd(K * N, ...RANGE[wt])), wz = ARR[wt].from(rnd(perCol ? N : 1, ...RANGE[wt]));
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
