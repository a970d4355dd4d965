// ONNX Attention, RotaryEmbedding and TensorScatter (src/onnx/onnx_attention.c)
// loaded with tp.onnx.load, every input fed at run time. Attention is
// checked against onnxruntime-node's output on the same model and inputs
// (3-D inputs, grouped-query heads, causal with a KV cache and a mask);
// TensorScatter by hand, with its run-time index check.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';
import { makeModel } from './_onnx_pb.mjs';

import { ort, needOrt } from './_ort.mjs';

/* a deterministic pseudo-random fill in [-1, 1) */
function fill(n, seed) {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s / 2 ** 31 - 1;
  }
  return out;
}

test('Attention (3-D, GQA 4 query / 2 KV heads, causal, KV cache, float mask) matches onnxruntime', async () => {
  needOrt();
  const B = 2, S = 3, P = 2, Hq = 4, Hkv = 2, D = 4, Dv = 2, L = P + S;
  const bytes = makeModel({
    opset: 23,
    nodes: [['Attention', ['Q', 'K', 'V', 'mask', 'pk', 'pv'], ['Y', 'present_key', 'present_value'],
      { is_causal: 1, q_num_heads: Hq, kv_num_heads: Hkv }]],
    inputs: [['Q', 1, [B, S, Hq * D]], ['K', 1, [B, S, Hkv * D]], ['V', 1, [B, S, Hkv * Dv]], ['mask', 1, [S, L]],
      ['pk', 1, [B, Hkv, P, D]], ['pv', 1, [B, Hkv, P, Dv]]],
    outputs: [['Y', 1, null], ['present_key', 1, null], ['present_value', 1, null]],
  });
  const shapes = { Q: [B, S, Hq * D], K: [B, S, Hkv * D], V: [B, S, Hkv * Dv], mask: [S, L], pk: [B, Hkv, P, D],
    pv: [B, Hkv, P, Dv] };
  const data = {};
  let seed = 7;
  for (const [k, sh] of Object.entries(shapes)) data[k] = fill(sh.reduce((a, b) => a * b, 1), seed++);
  data.mask[1] = -Infinity; /* query 0 may not see past key 1 */
  const sess = await ort.InferenceSession.create(bytes);
  const feeds = {};
  for (const [k, sh] of Object.entries(shapes)) feeds[k] = new ort.Tensor('float32', data[k], sh);
  const want = await sess.run(feeds);
  const m = tp.onnx.load(bytes);
  try {
    tp.scope(() => {
      const args = Object.entries(shapes).map(([k, sh]) => tp.tensor(Array.from(data[k]), { shape: sh }));
      const got = m.run(...args);
      ['Y', 'present_key', 'present_value'].forEach((name, i) => {
        const w = want[name];
        assert.deepEqual([...got[i].shape], [...w.dims], `${name}: shape`);
        const g = got[i].toArray();
        for (let j = 0; j < w.data.length; j++)
          assert.ok(Math.abs(g[j] - w.data[j]) <= 1e-5 + 1e-4 * Math.abs(w.data[j]), `${name}[${j}]: ${g[j]} vs ${w.data[j]}`);
      });
    });
  } finally {
    m.dispose();
  }
});

test('Attention refuses mismatched head counts naming them', () => {
  const bytes = makeModel({
    opset: 23,
    nodes: [['Attention', ['Q', 'K', 'V'], ['Y'], { q_num_heads: 3, kv_num_heads: 2 }]],
    inputs: [['Q', 1, [1, 2, 6]], ['K', 1, [1, 2, 4]], ['V', 1, [1, 2, 4]]],
    outputs: [['Y', 1, null]],
  });
  assert.throws(() => {
    const m = tp.onnx.load(bytes);
    try {
      tp.scope(() => m.run(tp.zeros([1, 2, 6]), tp.zeros([1, 2, 4]), tp.zeros([1, 2, 4])));
    } finally {
      m.dispose();
    }
  }, /Q's 3 heads are not a multiple of K\/V's 2 heads/);
});

test('TensorScatter: run-time write indices (linear and circular) by hand; an index past the cache is an error', () => {
  const mk = (mode) => tp.onnx.load(makeModel({
    opset: 24,
    nodes: [['TensorScatter', ['past', 'upd', 'w'], ['y'], mode ? { mode } : {}]],
    inputs: [['past', 1, [2, 4, 1]], ['upd', 1, [2, 2, 1]], ['w', 7, [2]]],
    outputs: [['y', 1, null]],
  }));
  const lin = mk(null);
  try {
    tp.scope(() => {
      const past = tp.tensor([1, 2, 3, 4, 5, 6, 7, 8], { shape: [2, 4, 1] });
      const upd = tp.tensor([10, 20, 30, 40], { shape: [2, 2, 1] });
      const [y] = lin.run(past, upd, tp.tensor([1, 2], { dtype: 'int64' }));
      assert.deepEqual([...y.toArray()], [1, 10, 20, 4, 5, 6, 30, 40]);
      assert.throws(() => lin.run(past, upd, tp.tensor([3, 0], { dtype: 'int64' })), /index 3 .*out of range/);
      assert.throws(() => lin.run(past, upd, tp.tensor([0, -1], { dtype: 'int64' })), /out of range/);
    });
  } finally {
    lin.dispose();
  }
  const circ = mk('circular');
  try {
    tp.scope(() => {
      const past = tp.tensor([1, 2, 3, 4, 5, 6, 7, 8], { shape: [2, 4, 1] });
      const upd = tp.tensor([10, 20, 30, 40], { shape: [2, 2, 1] });
      const [y] = circ.run(past, upd, tp.tensor([3, 0], { dtype: 'int64' }));
      assert.deepEqual([...y.toArray()], [20, 2, 3, 10, 30, 40, 7, 8]);
    });
  } finally {
    circ.dispose();
  }
});
