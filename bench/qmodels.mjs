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
//   node bench/qmodels.mjs [--rounds N] [--out DIR [--write-only]]   (default 21 rounds; --out writes
//                                         w4_{f32,q8,f16}.onnx, for tpc bench; --write-only: only that)
//   node bench/qmodels.mjs --memory       linear memory per model: f32, f16, q8
//   node bench/qmodels.mjs --f16 [--rounds N]   ours: the float16-weight block vs the float32 one
// BENCH_CLOCK=cpu: each call timed by the process's CPU time (bench/lib/qbench.mjs)
import { join } from 'node:path';
import { writeFileSync, mkdirSync, readFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as tp from '../js/index.js';
import { OnnxGraph, Float } from './lib/onnx_write.mjs';
import { makeRunners, firstOutputs, timeRounds, report, accuracy, maxAbs, rms } from './lib/qbench.mjs';

const args = process.argv.slice(2);
let rounds = 21, outDir = null;
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--rounds') rounds = Number(args[++i]);
  else if (args[i] === '--out') outDir = args[++i];
}

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
// ---- --f16: the float16-weight block (its MatMul weights float16 panels on stax) vs the float32 one, ours only ----
if (args.includes('--f16')) {
  const xd = Float32Array.from(tp.scope(() => tp.randn([1, S, D], { seed: 3 }).toArray()));
  const m32 = tp.onnx.load(files.f32, { backend: 'stax' }), m16 = tp.onnx.load(block('f16'), { backend: 'stax' });
  const x32 = tp.tensor(xd, { shape: [1, S, D] }), x16 = tp.tensor(tp.float32ToFloat16(xd), { shape: [1, S, D], dtype: 'float16' });
  const runners = {
    'ours-f32': () => { const y = m32.run({ x: x32 }).y; const a = y.toArray(); y.dispose(); return a; },
    // the float16 output as it comes (Uint16Array): its conversion to float32 in JS (1.2 ms for these
    // 32768 values) is the caller's, outside the timing
    'ours-f16': () => { const y = m16.run({ x: x16 }).y; const a = y.toArray(); y.dispose(); return a; },
  };
  const o = await firstOutputs(runners);
  o['ours-f16'] = tp.float16ToFloat32(o['ours-f16']);
  const st = await timeRounds(runners, rounds);
  console.log(`W4 block, float16 weights vs float32; ${rounds} rounds, isa ${tp.isa}`);
  console.log('config          median ms   min ms   max ms');
  for (const [k, v] of Object.entries(st)) console.log(`${k.padEnd(15)} ${v.median.toFixed(3).padStart(9)} ${v.min.toFixed(3).padStart(8)} ${v.max.toFixed(3).padStart(8)}`);
  console.log(`f16 / f32 time: ${(st['ours-f16'].median / st['ours-f32'].median).toFixed(2)}x; ` +
    `accuracy: max abs f16 - f32 ${maxAbs(o['ours-f16'], o['ours-f32']).toExponential(3)} (rms of the f32 output ${rms(o['ours-f32']).toFixed(3)})`);
  console.log(JSON.stringify({ rounds, stats: st }));
  process.exit(0);
}
if (outDir) {
  mkdirSync(outDir, { recursive: true });
  for (const [k, b] of Object.entries({ ...files, f16: block('f16') })) writeFileSync(join(outDir, `w4_${k}.onnx`), b);
  if (args.includes('--write-only')) process.exit(0);
}
const xData = Float32Array.from(tp.scope(() => tp.randn([1, S, D], { seed: 3 }).toArray()));

// ---- runners, accuracy (the first outputs), timing ----
const runners = await makeRunners(files, 'x', 'y', xData, [1, S, D]);
const outs = await firstOutputs(runners);
const acc = accuracy(outs);
const stats = await timeRounds(runners, rounds);
report('W4 block, dynamically quantized (6 linear layers int8 per column) vs float32', stats, acc, rounds);
