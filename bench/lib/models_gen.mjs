// bench/lib/models_gen.mjs - W2 (MLP), W3 (elementwise chain), W4 (pre-LN
// encoder block) of issue 4: capture each with the JS API, write the graph
// text with data, the input, our eager output (the reference), and an ONNX
// model with the SAME weights (exported from the JS tensors).
//
//   node bench/lib/models_gen.mjs OUTDIR
//
// Writes OUTDIR/W{2,3,4}.tpg, .x.bin (input, f32 raw), .ref.bin (output of
// the JS (Wasm) eager run, f32 raw), .onnx, and OUTDIR/models.json (shapes,
// JS capture times).
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tp from '../../js/index.js';
import { OnnxGraph, Float } from './onnx_write.mjs';

const outDir = process.argv[2];
if (!outDir) throw new Error('usage: models_gen.mjs OUTDIR');
mkdirSync(outDir, { recursive: true });

let seed = 100;
const keep = (t) => t; // tensors created outside tp.scope stay alive
function weight(shape, fanIn) { return tp.scope(() => tp.randn(shape, { seed: seed++ }).mul(1 / Math.sqrt(fanIn))); }
function vec(n, scale = 0.1) { return tp.scope(() => tp.randn([n], { seed: seed++ }).mul(scale)); }
const f32 = (t) => t.toArray();

function bin(path, t) {
  const a = t instanceof Float32Array ? t : t.toArray();
  writeFileSync(path, new Uint8Array(a.buffer, a.byteOffset, a.byteLength));
}

// ---- W2: MLP 784 -> 512 -> 512 -> 10, weights [in, out], y = x@W + b ----
function w2() {
  const W1 = weight([784, 512], 784), b1 = vec(512);
  const W2 = weight([512, 512], 512), b2 = vec(512);
  const W3 = weight([512, 10], 512), b3 = vec(10);
  const f = (x) => {
    const h1 = tp.relu(tp.matmul(x, W1).add(b1));
    const h2 = tp.relu(tp.matmul(h1, W2).add(b2));
    return tp.matmul(h2, W3).add(b3);
  };
  const g = new OnnxGraph('w2');
  let h = g.input('x', [64, 784]);
  h = g.op('Relu', [g.op('Add', [g.op('MatMul', [h, g.init('W1', f32(W1), [784, 512])]), g.init('b1', f32(b1), [512])])]);
  h = g.op('Relu', [g.op('Add', [g.op('MatMul', [h, g.init('W2', f32(W2), [512, 512])]), g.init('b2', f32(b2), [512])])]);
  g.op('Add', [g.op('MatMul', [h, g.init('W3', f32(W3), [512, 10])]), g.init('b3', f32(b3), [10])], {}, 'y');
  g.output('y', [64, 10]);
  return { f, x: tp.randn([64, 784], { seed: 1 }), xShape: [64, 784], yShape: [64, 10], onnx: g };
}

// ---- W3: y = tanh(x*1.5 - 0.25) * sigmoid(x) over 4,194,304 floats ----
function w3() {
  const f = (x) => tp.tanh(x.mul(1.5).sub(0.25)).mul(tp.sigmoid(x));
  const g = new OnnxGraph('w3');
  const x = g.input('x', [4194304]);
  const t = g.op('Tanh', [g.op('Sub', [g.op('Mul', [x, g.scalar(1.5)]), g.scalar(0.25)])]);
  g.op('Mul', [t, g.op('Sigmoid', [x])], {}, 'y');
  g.output('y', [4194304]);
  return { f, x: tp.randn([4194304], { seed: 2 }), xShape: [4194304], yShape: [4194304], onnx: g };
}

// ---- W4: pre-LN encoder block, batch 1, seq 128, d 256, 4 heads, FFN 1024 ----
function w4() {
  const S = 128, D = 256, H = 4, Dh = D / H, F = 1024;
  const ln1g = tp.scope(() => vec(D).add(1)), ln1b = vec(D);
  const ln2g = tp.scope(() => vec(D).add(1)), ln2b = vec(D);
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
    const h = x.add(tp.matmul(o, Wo).add(bo));
    const c = tp.layerNorm(h, [D], ln2g, ln2b, { eps: 1e-5 });
    const u = tp.gelu(tp.matmul(c, W1).add(b1), { approximate: 'tanh' });
    return h.add(tp.matmul(u, W2).add(b2));
  };
  const g = new OnnxGraph('w4');
  const x = g.input('x', [1, S, D]);
  const I = (name, t, dims) => g.init(name, f32(t), dims);
  const ln = (t, gm, bt, n) => g.op('LayerNormalization', [t, I(`${n}_g`, gm, [D]), I(`${n}_b`, bt, [D])],
    { axis: -1, epsilon: new Float(1e-5) });
  const lin = (t, W, b, n, i, o) => g.op('Add', [g.op('MatMul', [t, I(`${n}_W`, W, [i, o])]), I(`${n}_b`, b, [o])]);
  const a = ln(x, ln1g, ln1b, 'ln1');
  const split = g.ints([1, S, H, Dh]);
  const q = g.op('Transpose', [g.op('Reshape', [lin(a, Wq, bq, 'q', D, D), split])], { perm: [0, 2, 1, 3] });
  const kT = g.op('Transpose', [g.op('Reshape', [lin(a, Wk, bk, 'k', D, D), split])], { perm: [0, 2, 3, 1] });
  const v = g.op('Transpose', [g.op('Reshape', [lin(a, Wv, bv, 'v', D, D), split])], { perm: [0, 2, 1, 3] });
  const s = g.op('Mul', [g.op('MatMul', [q, kT]), g.scalar(scale)]);
  const p = g.op('Softmax', [s], { axis: -1 });
  const o = g.op('Reshape', [g.op('Transpose', [g.op('MatMul', [p, v])], { perm: [0, 2, 1, 3] }), g.ints([1, S, D])]);
  const h = g.op('Add', [x, lin(o, Wo, bo, 'o', D, D)]);
  const c = ln(h, ln2g, ln2b, 'ln2');
  const z = lin(c, W1, b1, 'ff1', D, F);
  // GELU, tanh approximation, written out: 0.5 z (1 + tanh(sqrt(2/pi) (z + 0.044715 z^3)))
  const z3 = g.op('Mul', [g.op('Mul', [z, z]), z]);
  const inner = g.op('Mul', [g.op('Add', [z, g.op('Mul', [z3, g.scalar(0.044715)])]), g.scalar(Math.sqrt(2 / Math.PI))]);
  const u = g.op('Mul', [g.op('Mul', [z, g.scalar(0.5)]), g.op('Add', [g.op('Tanh', [inner]), g.scalar(1)])]);
  g.op('Add', [h, lin(u, W2, b2, 'ff2', F, D)], {}, 'y');
  g.output('y', [1, S, D]);
  return { f, x: tp.randn([1, S, D], { seed: 3 }), xShape: [1, S, D], yShape: [1, S, D], onnx: g };
}

const meta = {};
for (const [name, make] of [['W2', w2], ['W3', w3], ['W4', w4]]) {
  const m = make();
  // JS capture: compile() returns a wrapper; its first call captures the
  // graph and runs it once on the eager backend. capture_ms = median over 7
  // fresh wrappers (each of a new closure, so nothing is cached) of
  // (first call - median eager call); the very first one (cold: JIT, Wasm
  // code) is reported too.
  const wrappers = [], firsts = [];
  let cg = null, y0 = null;
  for (let r = 0; r < 7; r++) {
    const fr = (x) => m.f(x);
    const t0 = performance.now();
    const w = tp.compiler.compile(fr, { backend: 'eager', name });
    const y = w(m.x);
    firsts.push(performance.now() - t0);
    if (r === 0) { cg = w; y0 = y; } else y.dispose?.();
    wrappers.push(w);
  }
  const later = [];
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    tp.scope(() => { cg(m.x); });
    later.push(performance.now() - t);
  }
  later.sort((a, b) => a - b);
  const first = firsts[0];
  const firstMed = [...firsts].sort((a, b) => a - b)[3];
  const text = cg.graph({ withData: true });
  writeFileSync(join(outDir, `${name}.tpg`), text);
  bin(join(outDir, `${name}.x.bin`), m.x);
  bin(join(outDir, `${name}.ref.bin`), y0);
  writeFileSync(join(outDir, `${name}.onnx`), m.onnx.model({ opset: 17 }));
  meta[name] = {
    x_shape: m.xShape, y_shape: m.yShape,
    js_first_call_cold_ms: +first.toFixed(3), js_first_call_median_ms: +firstMed.toFixed(3),
    js_eager_call_ms: +later[2].toFixed(3),
    js_capture_cold_ms: +Math.max(0, first - later[2]).toFixed(3),
    js_capture_ms: +Math.max(0, firstMed - later[2]).toFixed(3),
    graph_bytes: text.length,
  };
  process.stderr.write(`models_gen: ${name}: graph ${text.length} bytes, JS first call ${first.toFixed(2)} ms cold, ` +
    `${firstMed.toFixed(2)} ms median of 7 (eager call ${later[2].toFixed(2)} ms; capture ${meta[name].js_capture_cold_ms} ms cold, ` +
    `${meta[name].js_capture_ms} ms median)\n`);
}
writeFileSync(join(outDir, 'models.json'), JSON.stringify(meta, null, 2) + '\n');
