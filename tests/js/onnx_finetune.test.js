// Fine-tuning an ONNX model (issue 19, part 4; docs/training.md "Fine-tuning
// an ONNX model"): initializers as trainable parameters, gradients through
// the model's graph against a hand-written backward pass in double, Adam
// steps, the model saved back and run by onnxruntime-node (the independent
// reference), and a compiled training step through the model on stax.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';
import { needOrt } from './_ort.mjs';
import { makeModel } from './_onnx_pb.mjs';

const N = 6, D = 4, H = 5, O = 2;
function rnd(n, seed, sc = 0.5) {
  let s = seed;
  return Float32Array.from({ length: n }, () => {
    s = (s * 1103515245 + 12345) % 2147483648;
    return (s / 2147483648 - 0.5) * 2 * sc;
  });
}
const W1 = rnd(D * H, 1), B1 = rnd(H, 2, 0.1), W2 = rnd(H * O, 3), B2 = rnd(O, 4, 0.1);
const X = rnd(N * D, 5, 1), T = rnd(N * O, 6, 1);

// y = reshape(relu(x W1 + b1) W2 + b2, [N*O]); 'shape' is an int64 initializer (not trainable)
const bytes = makeModel({
  opset: 13,
  nodes: [['Gemm', ['x', 'W1', 'b1'], ['h']], ['Relu', ['h'], ['r']], ['Gemm', ['r', 'W2', 'b2'], ['z']],
    ['Reshape', ['z', 'shape'], ['y']]],
  inputs: [['x', 1, [N, D]]],
  outputs: [['y', 1, [N * O]]],
  initializers: [['W1', 1, [D, H], W1], ['b1', 1, [H], B1], ['W2', 1, [H, O], W2], ['b2', 1, [O], B2],
    ['shape', 7, [1], new BigInt64Array([BigInt(N * O)])]],
});

// forward and the gradients of mse (mean) in double
function reference(w1, b1, w2, b2) {
  const h = new Float64Array(N * H), z = new Float64Array(N * O);
  for (let i = 0; i < N; i++) {
    for (let j = 0; j < H; j++) {
      let s = b1[j];
      for (let k = 0; k < D; k++) s += X[i * D + k] * w1[k * H + j];
      h[i * H + j] = s;
    }
    for (let j = 0; j < O; j++) {
      let s = b2[j];
      for (let k = 0; k < H; k++) s += Math.max(h[i * H + k], 0) * w2[k * O + j];
      z[i * O + j] = s;
    }
  }
  let loss = 0;
  const dz = z.map((v, i) => { loss += (v - T[i]) ** 2; return 2 * (v - T[i]) / (N * O); });
  loss /= N * O;
  const gw2 = new Float64Array(H * O), gb2 = new Float64Array(O), gw1 = new Float64Array(D * H), gb1 = new Float64Array(H);
  for (let i = 0; i < N; i++) {
    for (let j = 0; j < O; j++) {
      gb2[j] += dz[i * O + j];
      for (let k = 0; k < H; k++) gw2[k * O + j] += Math.max(h[i * H + k], 0) * dz[i * O + j];
    }
    for (let k = 0; k < H; k++) {
      if (h[i * H + k] <= 0) continue;
      let dh = 0;
      for (let j = 0; j < O; j++) dh += w2[k * O + j] * dz[i * O + j];
      gb1[k] += dh;
      for (let d = 0; d < D; d++) gw1[d * H + k] += X[i * D + d] * dh;
    }
  }
  return { z, loss, grads: [gw1, gb1, gw2, gb2] };
}

function close(got, want, tol, what) {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++) {
    assert.ok(Math.abs(got[i] - want[i]) <= tol * (1 + Math.abs(want[i])), `${what}[${i}]: ${got[i]} vs ${want[i]}`);
  }
}

test('ONNX fine-tuning: parameters, errors, gradients vs double, Adam, save -> onnxruntime-node', async () => {
  const ort = needOrt();
  const model = tp.onnx.load(bytes);
  // bad names: errors naming them, the model unchanged
  assert.throws(() => model.setTrainable(['nope']), /no initializer named 'nope'/);
  assert.throws(() => model.setTrainable(['shape']), /'shape' is int64; only float32 initializers can be trained/);
  assert.throws(() => model.setTrainable(['W1', 'W1']), /named twice/);
  assert.throws(() => model.setTrainable([]), TypeError);
  assert.throws(() => model.setTrainable('W1'), TypeError);
  assert.deepEqual(model.parameters(), []);

  const params = model.setTrainable();
  assert.deepEqual(model.namedParameters().map(([n, t]) => [n, t.shape]),
    [['W1', [D, H]], ['b1', [H]], ['W2', [H, O]], ['b2', [O]]]);
  assert.ok(params.every((p) => p.requiresGrad && p.isLeaf));
  assert.match(model.explain(), /trainable: 4 parameters/);

  const x = tp.tensor(X, { shape: [N, D] }), t = tp.tensor(T, { shape: [N * O] });
  // one step's gradients against the double reference
  const [y] = model.run(x);
  const loss = tp.nn.mseLoss(y, t);
  const ref = reference(W1, B1, W2, B2);
  assert.ok(Math.abs(loss.item() - ref.loss) <= 1e-5 * (1 + ref.loss));
  loss.backward();
  params.forEach((p, i) => close(p.grad.toArray(), ref.grads[i], 1e-5, `grad ${i}`));
  y.dispose(), loss.dispose();

  // Adam: the loss goes down; under noGrad the outputs follow the new weights
  const opt = new tp.optim.Adam(params, { lr: 0.05 });
  const first = ref.loss;
  let last = first;
  for (let s = 0; s < 40; s++) {
    opt.zeroGrad();
    tp.scope(() => {
      const [ys] = model.run(x);
      const l = tp.nn.mseLoss(ys, t);
      l.backward();
      last = l.item();
    });
    opt.step();
  }
  assert.ok(last < 0.5 * first, `loss ${first} -> ${last}`);
  const now = params.map((p) => p.toArray());
  const want = reference(...now).z;
  const yEval = tp.noGrad(() => model.run(x)[0]);
  assert.equal(yEval.requiresGrad, false);
  close(yEval.toArray(), want, 1e-5, 'after training');

  // saved back: onnxruntime-node runs it with the trained weights; the original file keeps the old ones
  const saved = model.save();
  assert.ok(saved instanceof Uint8Array && saved.length > 0);
  const sess = await ort.InferenceSession.create(saved);
  const r = await sess.run({ x: new ort.Tensor('float32', X, [N, D]) });
  close(r.y.data, yEval.toArray(), 1e-5, 'onnxruntime-node on the saved model');
  const sess0 = await ort.InferenceSession.create(bytes);
  const r0 = await sess0.run({ x: new ort.Tensor('float32', X, [N, D]) });
  close(r0.y.data, ref.z, 1e-5, 'onnxruntime-node on the original model');
  const again = tp.onnx.load(saved);
  close(again.run(x)[0].toArray(), yEval.toArray(), 0, 'the saved model in tensorplay');
  again.dispose();

  opt.dispose();
  model.dispose();
  assert.ok(params.every((p) => p.disposed), 'the model disposes its parameters');
  assert.throws(() => model.setTrainable(), tp.DisposedError);
  assert.throws(() => model.save(), tp.DisposedError);
  for (const v of [x, t, yEval]) v.dispose();
});

test('ONNX fine-tuning: a compiled training step through the model on stax equals eager', () => {
  const eager = tp.onnx.load(bytes);
  const stax = tp.onnx.load(bytes, { backend: 'stax' });
  const pe = eager.setTrainable(['W1', 'b1', 'W2', 'b2']);
  const ps = stax.setTrainable();
  const x = tp.tensor(X, { shape: [N, D] }), t = tp.tensor(T, { shape: [N * O] });
  const step = tp.compile((x, t) => tp.nn.mseLoss(stax.run(x)[0], t));
  const l1 = step(x, t);
  l1.backward();
  const [ye] = eager.run(x);
  const l0 = tp.nn.mseLoss(ye, t);
  l0.backward();
  assert.ok(Math.abs(l1.item() - l0.item()) <= 1e-6);
  ps.forEach((p, i) => close(p.grad.toArray(), pe[i].grad.toArray(), 1e-5, `compiled grad ${i}`));
  const ex = step.explain();
  assert.equal(ex.training.length, 1);
  assert.equal(ex.training[0].parameters, 4);
  step.dispose();
  for (const v of [x, t, ye, l0, l1]) v.dispose();
  eager.dispose();
  stax.dispose();
});

// float16 <-> float32 (round to nearest even), for the float16 model below
function toF16(v) {
  const f = new Float32Array([v]), u = new Uint32Array(f.buffer)[0];
  const sign = (u >>> 16) & 0x8000, e = ((u >>> 23) & 0xff) - 127 + 15;
  let m = u & 0x7fffff;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) { // subnormal
    if (e < -10) return sign;
    m |= 0x800000;
    const shift = 14 - e, half = 1 << (shift - 1), r = m & ((1 << shift) - 1);
    let h = m >>> shift;
    if (r > half || (r === half && (h & 1))) h++;
    return sign | h;
  }
  let h = (e << 10) | (m >>> 13);
  const r = m & 0x1fff;
  if (r > 0x1000 || (r === 0x1000 && (h & 1))) h++;
  return sign | h;
}
function fromF16(h) {
  const e = (h >>> 10) & 0x1f, m = h & 0x3ff, s = h & 0x8000 ? -1 : 1;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}
const r16 = (a) => Float64Array.from(a, (v) => fromF16(toF16(v)));

test('ONNX fine-tuning of float16 initializers: float32 master copies, gradients vs double, saved back as float16', () => {
  // the same two-layer model with float16 weights: x -> Cast(float16) -> ... -> Cast(float16) -> y
  const h16 = (a) => Uint16Array.from(a, toF16);
  const bytes16 = makeModel({
    opset: 13,
    nodes: [['Cast', ['x'], ['x16'], { to: 10 }], ['Gemm', ['x16', 'W1', 'b1'], ['h']], ['Relu', ['h'], ['r']],
      ['Gemm', ['r', 'W2', 'b2'], ['z']], ['Reshape', ['z', 'shape'], ['z1']], ['Cast', ['z1'], ['y'], { to: 10 }]],
    inputs: [['x', 1, [N, D]]],
    outputs: [['y', 10, [N * O]]],
    initializers: [['W1', 10, [D, H], h16(W1)], ['b1', 10, [H], h16(B1)], ['W2', 10, [H, O], h16(W2)],
      ['b2', 10, [O], h16(B2)], ['shape', 7, [1], new BigInt64Array([BigInt(N * O)])]],
  });
  const x = tp.tensor(X, { shape: [N, D] }), t = tp.tensor(T, { shape: [N * O] });
  for (const backend of [undefined, 'stax']) {
    const model = tp.onnx.load(bytes16, backend ? { backend } : {});
    const params = model.setTrainable();
    assert.deepEqual(model.namedParameters().map(([n]) => n), ['W1', 'b1', 'W2', 'b2']);
    // float32 master copies holding the float16 values
    const w16 = [r16(W1), r16(B1), r16(W2), r16(B2)];
    params.forEach((p, i) => {
      assert.equal(p.dtype, 'float32');
      assert.deepEqual(Array.from(p.toArray()), Array.from(w16[i]), `master copy ${i}`);
    });
    const ref = reference(...w16);
    const [y] = model.run(x);
    assert.equal(y.dtype, 'float32', 'the model computes in float32 while a float16 initializer is trainable');
    const loss = tp.nn.mseLoss(y, t);
    assert.ok(Math.abs(loss.item() - ref.loss) <= 1e-5 * (1 + ref.loss));
    loss.backward();
    params.forEach((p, i) => close(p.grad.toArray(), ref.grads[i], 1e-5, `float16 model grad ${i}`));
    y.dispose(), loss.dispose();
    // a compiled step through the model gives the same gradients
    const step = tp.compile((x, t) => tp.nn.mseLoss(model.run(x)[0], t));
    const grads0 = params.map((p) => p.grad.toArray());
    params.forEach((p) => { p.grad = null; });
    const l1 = step(x, t);
    l1.backward();
    params.forEach((p, i) => close(p.grad.toArray(), grads0[i], 1e-5, `compiled float16 model grad ${i}`));
    l1.dispose(), step.dispose();
    // Adam on the master copies; saved back as float16 (the same size), the master copies rounded
    const opt = new tp.optim.Adam(params, { lr: 0.05 });
    let last = ref.loss;
    for (let s = 0; s < 20; s++) {
      opt.zeroGrad();
      tp.scope(() => {
        const l = tp.nn.mseLoss(model.run(x)[0], t);
        l.backward();
        last = l.item();
      });
      opt.step();
    }
    assert.ok(last < 0.7 * ref.loss, `loss ${ref.loss} -> ${last}`);
    const masters = params.map((p) => p.toArray());
    const saved = model.save();
    assert.equal(saved.length, bytes16.length, 'the trained initializers stay float16');
    const again = tp.onnx.load(saved);
    const [ya] = again.run(x);
    assert.equal(ya.dtype, 'float16', 'a plain load of the saved model runs in float16');
    ya.dispose();
    again.setTrainable();
    again.parameters().forEach((p, i) => assert.deepEqual(Array.from(p.toArray()), Array.from(r16(masters[i])),
      `saved initializer ${i} = the master copy rounded to float16`));
    again.dispose();
    opt.dispose();
    model.dispose();
  }
  x.dispose(), t.dispose();
});
