// bench/lib/models_wasm_defs.mjs - W1-W4 of issue 4 for the Wasm benchmark
// (bench/lib/models_wasm.mjs), written three times with the SAME weights:
// the tensorplay JS API (also used by bench/lib/models_gen.mjs for the native
// benchmark, so both measure the same weights), an ONNX model (bench/lib/onnx_write.mjs)
// for onnxruntime-web, and TensorFlow.js ops for tfjs-backend-wasm.
//
//   const m = makeW2(tp);          // { f, x, weights, onnx, tfBuild, flops, ... }
//   const tfFn = m.tfBuild(tf);    // { f: (xt) => y, x: xt, dispose() }
import { OnnxGraph, Float } from './onnx_write.mjs';

function helpers(tp, seed0 = 100) {
  let seed = seed0;
  const owned = [];
  const own = (t) => { owned.push(t); return t; };
  const weight = (shape, fanIn) => own(tp.scope(() => tp.randn(shape, { seed: seed++ }).mul(1 / Math.sqrt(fanIn))));
  const vec = (n, scale = 0.1) => own(tp.scope(() => tp.randn([n], { seed: seed++ }).mul(scale)));
  const dispose = () => { for (const t of owned) try { t.dispose?.(); } catch { /* already disposed */ } owned.length = 0; };
  return { weight, vec, own, dispose };
}
const f32 = (t) => t.toArray();

// tfjs tensors made from our weights; disposed together.
function tfScope(tf) {
  const ts = [];
  const T = (a, shape) => { const t = tf.tensor(a instanceof Float32Array ? a : f32(a), shape, 'float32'); ts.push(t); return t; };
  return { T, dispose: () => { for (const t of ts) t.dispose(); } };
}

// ---- W1: y[M,N] = x[M,K] @ B[K,N], B a constant weight ----
export function makeW1(tp, M, N, K) {
  const h = helpers(tp, 1000 + M + N + K);
  const B = h.weight([K, N], K);
  const x = h.own(tp.randn([M, K], { seed: 7 }));
  const f = (xx) => tp.matmul(xx, B);
  const g = new OnnxGraph('w1');
  const xi = g.input('x', [M, K]);
  g.op('MatMul', [xi, g.init('B', f32(B), [K, N])], {}, 'y');
  g.output('y', [M, N]);
  const tfBuild = (tf) => {
    const s = tfScope(tf);
    const Bt = s.T(B, [K, N]), xt = s.T(x, [M, K]);
    return { f: (xx) => tf.matMul(xx, Bt), x: xt, dispose: s.dispose };
  };
  return { id: 'W1', f, x, xShape: [M, K], yShape: [M, N], onnx: g, tfBuild, flops: 2 * M * N * K, dispose: h.dispose };
}

// ---- W2: MLP 784 -> 512 -> 512 -> 10, weights [in, out], y = x@W + b ----
export function makeW2(tp) {
  const h = helpers(tp);
  const W1 = h.weight([784, 512], 784), b1 = h.vec(512);
  const W2 = h.weight([512, 512], 512), b2 = h.vec(512);
  const W3 = h.weight([512, 10], 512), b3 = h.vec(10);
  const f = (x) => {
    const h1 = tp.relu(tp.matmul(x, W1).add(b1));
    const h2 = tp.relu(tp.matmul(h1, W2).add(b2));
    return tp.matmul(h2, W3).add(b3);
  };
  const g = new OnnxGraph('w2');
  let v = g.input('x', [64, 784]);
  v = g.op('Relu', [g.op('Add', [g.op('MatMul', [v, g.init('W1', f32(W1), [784, 512])]), g.init('b1', f32(b1), [512])])]);
  v = g.op('Relu', [g.op('Add', [g.op('MatMul', [v, g.init('W2', f32(W2), [512, 512])]), g.init('b2', f32(b2), [512])])]);
  g.op('Add', [g.op('MatMul', [v, g.init('W3', f32(W3), [512, 10])]), g.init('b3', f32(b3), [10])], {}, 'y');
  g.output('y', [64, 10]);
  const x = h.own(tp.randn([64, 784], { seed: 1 }));
  const tfBuild = (tf) => {
    const s = tfScope(tf);
    const [tW1, tb1, tW2, tb2, tW3, tb3] = [s.T(W1, [784, 512]), s.T(b1, [512]), s.T(W2, [512, 512]),
      s.T(b2, [512]), s.T(W3, [512, 10]), s.T(b3, [10])];
    const fn = (xx) => {
      const h1 = tf.relu(tf.add(tf.matMul(xx, tW1), tb1));
      const h2 = tf.relu(tf.add(tf.matMul(h1, tW2), tb2));
      return tf.add(tf.matMul(h2, tW3), tb3);
    };
    return { f: fn, x: s.T(x, [64, 784]), dispose: s.dispose };
  };
  const flops = 2 * 64 * (784 * 512 + 512 * 512 + 512 * 10);
  return { id: 'W2', f, x, xShape: [64, 784], yShape: [64, 10], onnx: g, tfBuild, flops, dispose: h.dispose };
}

// ---- W3: y = tanh(x*1.5 - 0.25) * sigmoid(x) over 4,194,304 floats ----
export function makeW3(tp) {
  const h = helpers(tp);
  const n = 4194304;
  const f = (x) => tp.tanh(x.mul(1.5).sub(0.25)).mul(tp.sigmoid(x));
  const g = new OnnxGraph('w3');
  const xi = g.input('x', [n]);
  const t = g.op('Tanh', [g.op('Sub', [g.op('Mul', [xi, g.scalar(1.5)]), g.scalar(0.25)])]);
  g.op('Mul', [t, g.op('Sigmoid', [xi])], {}, 'y');
  g.output('y', [n]);
  const x = h.own(tp.randn([n], { seed: 2 }));
  const tfBuild = (tf) => {
    const s = tfScope(tf);
    const fn = (xx) => tf.mul(tf.tanh(tf.sub(tf.mul(xx, 1.5), 0.25)), tf.sigmoid(xx));
    return { f: fn, x: s.T(x, [n]), dispose: s.dispose };
  };
  return { id: 'W3', f, x, xShape: [n], yShape: [n], onnx: g, tfBuild, flops: null, dispose: h.dispose };
}

// ---- W4: pre-LN encoder block, batch 1, seq 128, d 256, 4 heads, FFN 1024 ----
export function makeW4(tp) {
  const h = helpers(tp, 106); // models_gen.mjs: W2 took seeds 100-105, W3 none
  const { weight, vec, own } = h;
  const S = 128, D = 256, H = 4, Dh = D / H, F = 1024;
  const ln1g = own(tp.scope(() => vec(D).add(1))), ln1b = vec(D);
  const ln2g = own(tp.scope(() => vec(D).add(1))), ln2b = vec(D);
  const Wq = weight([D, D], D), bq = vec(D);
  const Wk = weight([D, D], D), bk = vec(D);
  const Wv = weight([D, D], D), bv = vec(D);
  const Wo = weight([D, D], D), bo = vec(D);
  const W1 = weight([D, F], D), b1 = vec(F);
  const W2 = weight([F, D], F), b2 = vec(D);
  const scale = 1 / Math.sqrt(Dh);
  const f = (x) => {
    const a = tp.layerNorm(x, [D], ln1g, ln1b, { eps: 1e-5 });
    const heads = (t) => t.reshape(1, S, H, Dh).permute(0, 2, 1, 3); // [1,H,S,Dh]
    const q = heads(tp.matmul(a, Wq).add(bq));
    const kT = tp.matmul(a, Wk).add(bk).reshape(1, S, H, Dh).permute(0, 2, 3, 1); // [1,H,Dh,S]
    const v = heads(tp.matmul(a, Wv).add(bv));
    const p = tp.softmax(tp.matmul(q, kT).mul(scale), -1);
    const o = tp.matmul(p, v).permute(0, 2, 1, 3).reshape(1, S, D);
    const hh = x.add(tp.matmul(o, Wo).add(bo));
    const c = tp.layerNorm(hh, [D], ln2g, ln2b, { eps: 1e-5 });
    const u = tp.gelu(tp.matmul(c, W1).add(b1), { approximate: 'tanh' });
    return hh.add(tp.matmul(u, W2).add(b2));
  };
  const g = new OnnxGraph('w4');
  const xi = g.input('x', [1, S, D]);
  const I = (name, t, dims) => g.init(name, f32(t), dims);
  const ln = (t, gm, bt, n) => g.op('LayerNormalization', [t, I(`${n}_g`, gm, [D]), I(`${n}_b`, bt, [D])],
    { axis: -1, epsilon: new Float(1e-5) });
  const lin = (t, W, b, n, i, o) => g.op('Add', [g.op('MatMul', [t, I(`${n}_W`, W, [i, o])]), I(`${n}_b`, b, [o])]);
  const a = ln(xi, ln1g, ln1b, 'ln1');
  const split = g.ints([1, S, H, Dh]);
  const q = g.op('Transpose', [g.op('Reshape', [lin(a, Wq, bq, 'q', D, D), split])], { perm: [0, 2, 1, 3] });
  const kT = g.op('Transpose', [g.op('Reshape', [lin(a, Wk, bk, 'k', D, D), split])], { perm: [0, 2, 3, 1] });
  const v = g.op('Transpose', [g.op('Reshape', [lin(a, Wv, bv, 'v', D, D), split])], { perm: [0, 2, 1, 3] });
  const s = g.op('Mul', [g.op('MatMul', [q, kT]), g.scalar(scale)]);
  const p = g.op('Softmax', [s], { axis: -1 });
  const o = g.op('Reshape', [g.op('Transpose', [g.op('MatMul', [p, v])], { perm: [0, 2, 1, 3] }), g.ints([1, S, D])]);
  const hh = g.op('Add', [xi, lin(o, Wo, bo, 'o', D, D)]);
  const c = ln(hh, ln2g, ln2b, 'ln2');
  const z = lin(c, W1, b1, 'ff1', D, F);
  // GELU, tanh approximation, written out: 0.5 z (1 + tanh(sqrt(2/pi) (z + 0.044715 z^3)))
  const z3 = g.op('Mul', [g.op('Mul', [z, z]), z]);
  const inner = g.op('Mul', [g.op('Add', [z, g.op('Mul', [z3, g.scalar(0.044715)])]), g.scalar(Math.sqrt(2 / Math.PI))]);
  const u = g.op('Mul', [g.op('Mul', [z, g.scalar(0.5)]), g.op('Add', [g.op('Tanh', [inner]), g.scalar(1)])]);
  g.op('Add', [hh, lin(u, W2, b2, 'ff2', F, D)], {}, 'y');
  g.output('y', [1, S, D]);
  const x = h.own(tp.randn([1, S, D], { seed: 3 }));

  const tfBuild = (tf) => {
    const sc = tfScope(tf);
    const T = sc.T;
    const w = {
      ln1g: T(ln1g, [D]), ln1b: T(ln1b, [D]), ln2g: T(ln2g, [D]), ln2b: T(ln2b, [D]),
      Wq: T(Wq, [D, D]), bq: T(bq, [D]), Wk: T(Wk, [D, D]), bk: T(bk, [D]), Wv: T(Wv, [D, D]), bv: T(bv, [D]),
      Wo: T(Wo, [D, D]), bo: T(bo, [D]), W1: T(W1, [D, F]), b1: T(b1, [F]), W2: T(W2, [F, D]), b2: T(b2, [D]),
    };
    // layer norm over the last axis via tf.moments (biased variance, as LayerNorm)
    const lnT = (t, gm, bt) => {
      const { mean, variance } = tf.moments(t, -1, true);
      return tf.add(tf.mul(tf.mul(tf.sub(t, mean), tf.rsqrt(tf.add(variance, 1e-5))), gm), bt);
    };
    const lin2 = (t, W, b) => tf.add(tf.matMul(t, W), b); // t [S, in]
    const c0 = Math.sqrt(2 / Math.PI);
    const fn = (xx) => {
      const x2 = tf.reshape(xx, [S, D]);
      const a2 = lnT(x2, w.ln1g, w.ln1b);
      const heads = (t) => tf.transpose(tf.reshape(t, [1, S, H, Dh]), [0, 2, 1, 3]);
      const q2 = heads(lin2(a2, w.Wq, w.bq));
      const k2T = tf.transpose(tf.reshape(lin2(a2, w.Wk, w.bk), [1, S, H, Dh]), [0, 2, 3, 1]);
      const v2 = heads(lin2(a2, w.Wv, w.bv));
      const p2 = tf.softmax(tf.mul(tf.matMul(q2, k2T), scale), -1);
      const o2 = tf.reshape(tf.transpose(tf.matMul(p2, v2), [0, 2, 1, 3]), [S, D]);
      const h2 = tf.add(x2, lin2(o2, w.Wo, w.bo));
      const cc = lnT(h2, w.ln2g, w.ln2b);
      const zz = lin2(cc, w.W1, w.b1);
      // GELU (tanh approximation) written out, as in the ONNX model
      const uu = tf.mul(tf.mul(zz, 0.5), tf.add(tf.tanh(tf.mul(tf.add(zz, tf.mul(tf.mul(tf.mul(zz, zz), zz), 0.044715)), c0)), 1));
      return tf.reshape(tf.add(h2, lin2(uu, w.W2, w.b2)), [1, S, D]);
    };
    return { f: fn, x: T(x, [1, S, D]), dispose: sc.dispose };
  };
  const flops = 2 * S * D * D * 4 + 2 * S * D * F * 2 + 2 * H * S * S * Dh * 2;
  return { id: 'W4', f, x, xShape: [1, S, D], yShape: [1, S, D], onnx: g, tfBuild, flops, dispose: h.dispose };
}

// ---- R1: a real model, ultraface-rfb-320 (shared/conformance/models): a
// face detector of 37 2-D convolutions (depthwise and dense), BatchNorm,
// ReLU, concat and softmax; input [1, 3, 240, 320], output 'scores'
// [1, 4420, 2]. The ONNX file itself goes to onnxruntime-web; tfjs cannot
// load ONNX (tfBuild is null: no tfjs row). ----
// A real ONNX model (bench/lib/models_gen.mjs): input sin(0.37 i) * 0.8 as
// bench/workloads/real-models.mjs makes it; the .onnx is the original file.
export function makeReal(tp, id, bytes, shape) {
  const model = tp.onnx.load(bytes);
  const n = shape.reduce((a, b) => a * b, 1);
  const x = tp.tensor(Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.37) * 0.8), { shape });
  const f = (xx) => model.run([xx])[0];
  return {
    id, f, x, xShape: shape, onnx: { model: () => bytes }, tfBuild: null,
    dispose: () => { x.dispose(); model.dispose(); },
  };
}

export function makeR1(tp, bytes) {
  const model = tp.onnx.load(bytes);
  const n = 1 * 3 * 240 * 320;
  const x = tp.tensor(Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.37)), { shape: [1, 3, 240, 320] });
  const f = (xx) => model.run([xx])[0];
  return {
    id: 'R1', f, x, xShape: [1, 3, 240, 320], onnx: { model: () => bytes }, tfBuild: null,
    dispose: () => { x.dispose(); model.dispose(); },
  };
}
