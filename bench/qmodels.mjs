// bench/qmodels.mjs - a dynamically quantized W4 transformer block (issue 17,
// docs/quantization.md "Quantized models"): the W4 encoder block (pre-LN,
// S=128, D=256, 4 heads, FFN 1024) with its six linear layers quantized the
// way onnxruntime's quantize_dynamic writes them (DynamicQuantizeLinear ->
// MatMulInteger -> Cast -> Mul(x_scale * w_scale) -> Add bias), the weights
// int8 per output column by the project's own helper
// (tp.quantization.quantizeWeight), written with bench/lib/onnx_write.mjs.
// The same file (and its float32 original) runs on
//   ours        the Wasm core in Node, stax (the qlinear pass puts the six
//               layers on the integer GEMM, SIMD128)
//   ort-web     onnxruntime-web, wasm EP, SIMD, 1 thread
//   ort-node    onnxruntime-node (native), 1 intra-op thread
// in one process, samples interleaved round by round. Prints medians, min and
// max per configuration, the ratios against each onnxruntime in the same run,
// and the accuracy of the quantized block against the float32 one.
//
//   node bench/qmodels.mjs [--rounds N] [--out DIR]   (default 21 rounds)
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { writeFileSync, mkdirSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import * as tp from '../js/index.js';
import * as ortWeb from 'onnxruntime-web';
import { OnnxGraph, Float } from './lib/onnx_write.mjs';

const require = createRequire(import.meta.url);
const ortNode = require('onnxruntime-node');
const ROOT = join(dirname(new URL(import.meta.url).pathname), '..');
const pkgDir = (name) => join(ROOT, 'node_modules', name); // the repo root's devDependencies
const args = process.argv.slice(2);
let rounds = 21, outDir = null;
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--rounds') rounds = Number(args[++i]);
  else if (args[i] === '--out') outDir = args[++i];
}
const median = (v) => { const s = [...v].sort((a, b) => a - b); const n = s.length; return n % 2 ? s[n >> 1] : 0.5 * (s[n / 2 - 1] + s[n / 2]); };

ortWeb.env.wasm.numThreads = 1;
ortWeb.env.wasm.simd = true;
ortWeb.env.wasm.proxy = false;
ortWeb.env.wasm.wasmPaths = pkgDir('onnxruntime-web') + '/dist/';

// ---- the block, float32 and dynamically quantized ----
const S = 128, D = 256, H = 4, Dh = D / H, F = 1024;
let seed = 106;
const weight = (shape, fanIn) => tp.scope(() => tp.randn(shape, { seed: seed++ }).mul(1 / Math.sqrt(fanIn)));
const vec = (n, scale = 0.1) => tp.scope(() => tp.randn([n], { seed: seed++ }).mul(scale));
const W = {
  ln1g: tp.scope(() => vec(D).add(1)), ln1b: vec(D), ln2g: tp.scope(() => vec(D).add(1)), ln2b: vec(D),
  q: [weight([D, D], D), vec(D)], k: [weight([D, D], D), vec(D)], v: [weight([D, D], D), vec(D)],
  o: [weight([D, D], D), vec(D)], ff1: [weight([D, F], D), vec(F)], ff2: [weight([F, D], F), vec(D)],
};

function block(mode) {
  const quant = mode === 'q8', half = mode === 'f16';
  const g = new OnnxGraph(`w4_${mode}`);
  const dq = new Map();
  const xi = g.input('x', [1, S, D], half ? 'float16' : 'float32');
  const I = (name, t, dims) => {
    const a = t instanceof tp.Tensor ? t.toArray() : t;
    return g.init(name, half && a instanceof Float32Array ? tp.float32ToFloat16(a) : a, dims);
  };
  if (half) g.scalar = (v) => g.init(`c${g.n++}`, tp.float32ToFloat16(Float32Array.of(v)), []);
  const ln = (t, gm, bt, n) => g.op('LayerNormalization', [t, I(`${n}_g`, gm, [D]), I(`${n}_b`, bt, [D])], { axis: -1, epsilon: new Float(1e-5) });
  const lin = (t, n, i, o) => {
    const [Wt, b] = W[n];
    if (!quant) return g.op('Add', [g.op('MatMul', [t, I(`${n}_W`, Wt, [i, o])]), I(`${n}_b`, b, [o])]);
    const { q, scale, zeroPoint } = tp.quantization.quantizeWeight(Wt, { axis: 1 }); // int8 per output column
    // one DynamicQuantizeLinear per activation, shared by the layers reading it (q, k, v), as quantize_dynamic writes it
    if (!dq.has(t)) dq.set(t, g.op('DynamicQuantizeLinear', [t], {}, ['q', 's', 'z'].map((s) => `${n}_x${s}`)));
    const xq = dq.get(t), xs = xq.replace(/q$/, 's'), xz = xq.replace(/q$/, 'z');
    const acc = g.op('MatMulInteger', [xq, I(`${n}_Wq`, q, [i, o]), xz, I(`${n}_Wz`, zeroPoint, [o])]);
    const s = g.op('Mul', [xs, I(`${n}_Ws`, scale, [o])]);
    const y = g.op('Mul', [g.op('Cast', [acc], { to: 1 }), s]);
    for (const t2 of [q, scale, zeroPoint]) t2.dispose();
    return g.op('Add', [y, I(`${n}_b`, b, [o])]);
  };
  const a = ln(xi, W.ln1g, W.ln1b, 'ln1');
  const split = g.ints([1, S, H, Dh]);
  const q = g.op('Transpose', [g.op('Reshape', [lin(a, 'q', D, D), split])], { perm: [0, 2, 1, 3] });
  const kT = g.op('Transpose', [g.op('Reshape', [lin(a, 'k', D, D), split])], { perm: [0, 2, 3, 1] });
  const v = g.op('Transpose', [g.op('Reshape', [lin(a, 'v', D, D), split])], { perm: [0, 2, 1, 3] });
  const sc = g.op('Mul', [g.op('MatMul', [q, kT]), g.scalar(1 / Math.sqrt(Dh))]);
  const p = g.op('Softmax', [sc], { axis: -1 });
  const o = g.op('Reshape', [g.op('Transpose', [g.op('MatMul', [p, v])], { perm: [0, 2, 1, 3] }), g.ints([1, S, D])]);
  const hh = g.op('Add', [xi, lin(o, 'o', D, D)]);
  const c = ln(hh, W.ln2g, W.ln2b, 'ln2');
  const z = lin(c, 'ff1', D, F);
  const z3 = g.op('Mul', [g.op('Mul', [z, z]), z]);
  const inner = g.op('Mul', [g.op('Add', [z, g.op('Mul', [z3, g.scalar(0.044715)])]), g.scalar(Math.sqrt(2 / Math.PI))]);
  const u = g.op('Mul', [g.op('Mul', [z, g.scalar(0.5)]), g.op('Add', [g.op('Tanh', [inner]), g.scalar(1)])]);
  g.op('Add', [hh, lin(u, 'ff2', F, D)], {}, 'y');
  g.output('y', [1, S, D], half ? 'float16' : 'float32');
  return g.model({ opset: 17 });
}

const files = { f32: block('f32'), q8: block('q8') };
// ---- memory: the core's linear memory after load + first run, each model in a fresh process ----
const COPIES = 16;
if (args.includes('--memory-child')) {
  const bytes = readFileSync(args[args.indexOf('--memory-child') + 1]);
  const half = bytes.includes(Buffer.from('w4_f16'));
  // COPIES models loaded and run once, all kept alive: the linear memory grows by about COPIES x one model
  // (64 KiB pages; the 32 MiB the core starts with hides a single one)
  const x = tp.tensor(half ? tp.float32ToFloat16(new Float32Array(S * D)) : new Float32Array(S * D), { shape: [1, S, D], dtype: half ? 'float16' : 'float32' });
  const before = tp.memoryBytes(), keep = [];
  let casts = 0;
  for (let c = 0; c < COPIES; c++) {
    const m = tp.onnx.load(bytes, { backend: 'stax' });
    m.run({ x }).y.dispose();
    if (!c) casts = (m.graph.print().match(/= cast\(/g) || []).length;
    keep.push(m);
  }
  console.log(JSON.stringify({ before, after: tp.memoryBytes(), file: bytes.length, casts }));
  process.exit(0);
}
if (args.includes('--memory')) {
  const dir = mkdtempSync(join(tmpdir(), 'qmodels-'));
  const res = {};
  for (const [k, b] of [['f32', files.f32], ['f16', block('f16')], ['q8', files.q8]]) {
    const f = join(dir, `w4_${k}.onnx`);
    writeFileSync(f, b);
    const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--memory-child', f], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`memory child ${k}: ${r.stderr}`);
    res[k] = JSON.parse(r.stdout.trim().split('\n').pop());
  }
  rmSync(dir, { recursive: true, force: true });
  console.log(`model  file bytes   memory before   after ${COPIES} loads + first runs   growth per model   casts in the graph`);
  for (const [k, v] of Object.entries(res)) {
    console.log(`w4_${k.padEnd(4)} ${String(v.file).padStart(10)} ${String(v.before).padStart(15)} ${String(v.after).padStart(30)} ${String(Math.round((v.after - v.before) / COPIES)).padStart(18)} ${String(v.casts).padStart(6)}`);
  }
  console.log(`f16 / f32: linear memory ${(res.f16.after / res.f32.after).toFixed(3)}, growth ${((res.f16.after - res.f16.before) / (res.f32.after - res.f32.before)).toFixed(3)}; ` +
    `q8 / f32: linear memory ${(res.q8.after / res.f32.after).toFixed(3)}, growth ${((res.q8.after - res.q8.before) / (res.f32.after - res.f32.before)).toFixed(3)}`);
  process.exit(0);
}
if (outDir) {
  mkdirSync(outDir, { recursive: true });
  for (const [k, b] of Object.entries({ ...files, f16: block('f16') })) writeFileSync(join(outDir, `w4_${k}.onnx`), b);
}
const xData = Float32Array.from(tp.scope(() => tp.randn([1, S, D], { seed: 3 }).toArray()));

// ---- runners ----
const runners = {};
for (const [k, bytes] of Object.entries(files)) {
  const m = tp.onnx.load(bytes, { backend: 'stax' });
  const x = tp.tensor(xData, { shape: [1, S, D] });
  runners[`ours-${k}`] = () => { const y = m.run({ x }).y; const a = y.toArray(); y.dispose(); return a; };
  const sw = await ortWeb.InferenceSession.create(bytes, { executionProviders: ['wasm'], graphOptimizationLevel: 'all', executionMode: 'sequential', intraOpNumThreads: 1, interOpNumThreads: 1 });
  const xw = new ortWeb.Tensor('float32', xData, [1, S, D]);
  runners[`ortweb-${k}`] = async () => (await sw.run({ x: xw })).y.data;
  const sn = await ortNode.InferenceSession.create(bytes, { graphOptimizationLevel: 'all', executionMode: 'sequential', intraOpNumThreads: 1, interOpNumThreads: 1 });
  const xn = new ortNode.Tensor('float32', xData, [1, S, D]);
  runners[`ortnode-${k}`] = async () => (await sn.run({ x: xn })).y.data;
}

// ---- accuracy (the first outputs) ----
const outs = {};
for (const [k, f] of Object.entries(runners)) outs[k] = Float32Array.from(await f());
const maxAbs = (a, b) => a.reduce((m, v, i) => Math.max(m, Math.abs(v - b[i])), 0);
const rms = (a) => Math.sqrt(a.reduce((s, v) => s + v * v, 0) / a.length);
const acc = {
  'ours-q8 vs ours-f32 (quantization error)': maxAbs(outs['ours-q8'], outs['ours-f32']),
  'ort-node-q8 vs ort-node-f32 (its quantization error)': maxAbs(outs['ortnode-q8'], outs['ortnode-f32']),
  'ours-q8 vs ort-node-q8': maxAbs(outs['ours-q8'], outs['ortnode-q8']),
  'ours-f32 vs ort-node-f32': maxAbs(outs['ours-f32'], outs['ortnode-f32']),
  'rms of the f32 output': rms(outs['ours-f32']),
};

// ---- timing: rounds, each config once per round (after 3 warm-up rounds) ----
const times = Object.fromEntries(Object.keys(runners).map((k) => [k, []]));
for (let r = -3; r < rounds; r++) {
  for (const [k, f] of Object.entries(runners)) {
    const t0 = performance.now();
    await f();
    const t1 = performance.now();
    if (r >= 0) times[k].push(t1 - t0);
  }
}
const stats = Object.fromEntries(Object.entries(times).map(([k, v]) => [k, { median: median(v), min: Math.min(...v), max: Math.max(...v) }]));
console.log(`W4 block, dynamically quantized (6 linear layers int8 per column) vs float32; ${rounds} rounds, isa ${tp.isa}`);
console.log('config          median ms   min ms   max ms');
for (const [k, s] of Object.entries(stats)) console.log(`${k.padEnd(15)} ${s.median.toFixed(3).padStart(9)} ${s.min.toFixed(3).padStart(8)} ${s.max.toFixed(3).padStart(8)}`);
const ratio = (a, b) => (stats[b].median / stats[a].median).toFixed(2);
console.log(`speedup of ours-q8: vs ort-web-q8 ${ratio('ours-q8', 'ortweb-q8')}x, vs ort-node-q8 ${ratio('ours-q8', 'ortnode-q8')}x, vs ours-f32 ${ratio('ours-q8', 'ours-f32')}x`);
console.log(`speedup of ours-f32: vs ort-web-f32 ${ratio('ours-f32', 'ortweb-f32')}x, vs ort-node-f32 ${ratio('ours-f32', 'ortnode-f32')}x`);
for (const [k, v] of Object.entries(acc)) console.log(`accuracy: ${k}: ${v.toExponential(3)}`);
console.log(JSON.stringify({ rounds, stats, accuracy: acc }));
