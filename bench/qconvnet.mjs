// bench/qconvnet.mjs - a QDQ-quantized conv net (issue 17): six 2-D
// convolutions with ReLU (3->32 s2, 32->64, 64->64 s2, 64->128, 128->128 s2,
// 128->256 1x1; input [1, 3, 128, 128], about 0.48 GFLOP), written the way
// onnxruntime's quantize_static writes QDQ models: QuantizeLinear /
// DequantizeLinear around every activation (uint8, scales from a min/max
// calibration on the float32 net), weights int8 per output channel by the
// project's own helper (tp.quantization.quantizeWeight, axis 0), biases int32
// with scale x_scale * w_scale; and its float32 original from the same
// weights. Ours runs the QDQ convolutions as qconv2d (stax's qlinear pass:
// the integer convolution with the requantization in its epilogue); the
// runtimes and the method are bench/lib/qbench.mjs's.
//
//   node bench/qconvnet.mjs [--rounds N] [--out DIR]   (default 21 rounds)
//   natively: tpc bench DIR/convnet_q8.onnx --backend=stax --runs 41 --threads 1
// BENCH_CLOCK=cpu (and TPC_CLOCK=cpu for tpc): timed by the process's CPU time
import { join } from 'node:path';
import { writeFileSync, mkdirSync } from 'node:fs';
import * as tp from '../js/index.js';
import { OnnxGraph } from './lib/onnx_write.mjs';
import { makeRunners, firstOutputs, timeRounds, report, accuracy } from './lib/qbench.mjs';

const args = process.argv.slice(2);
let rounds = 21, outDir = null;
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--rounds') rounds = Number(args[++i]);
  else if (args[i] === '--out') outDir = args[++i];
}

const HW = 128;
const LAYERS = [[3, 32, 3, 2], [32, 64, 3, 1], [64, 64, 3, 2], [64, 128, 3, 1], [128, 128, 3, 2], [128, 256, 1, 1]]; // cin, cout, k, stride
let seed = 301;
const W = LAYERS.map(([ci, co, k]) => ({
  w: tp.scope(() => tp.randn([co, ci, k, k], { seed: seed++ }).mul(Math.sqrt(2 / (ci * k * k)))),
  b: tp.scope(() => tp.randn([co], { seed: seed++ }).mul(0.05)),
}));
const xData = Float32Array.from(tp.scope(() => tp.randn([1, 3, HW, HW], { seed: 7 }).toArray()));

// calibration: the float32 net's activation ranges on the input (max after each ReLU; the input's |max|)
const ranges = tp.scope(() => {
  let h = tp.tensor(xData, { shape: [1, 3, HW, HW] });
  const r = [];
  LAYERS.forEach(([, , k, s], i) => {
    h = tp.conv2d(h, W[i].w, W[i].b, { stride: s, padding: (k - 1) >> 1 }).relu();
    r.push(h.max().item());
  });
  return r;
});
const xAbs = xData.reduce((m, v) => Math.max(m, Math.abs(v)), 0);

function net(quant) {
  const g = new OnnxGraph(`convnet_${quant ? 'q8' : 'f32'}`);
  let h = g.input('x', [1, 3, HW, HW]);
  let scale = 2 * xAbs / 255, zp = 128; // the input: asymmetric uint8
  if (quant) h = g.op('DequantizeLinear', [g.op('QuantizeLinear', [h, g.scalar(scale), g.init(`xz`, Uint8Array.of(zp), [])]), g.scalar(scale), 'xz']);
  LAYERS.forEach(([ci, co, k, s], i) => {
    const p = (k - 1) >> 1, attrs = { pads: [p, p, p, p], strides: [s, s] };
    if (!quant) {
      h = g.op('Relu', [g.op('Conv', [h, g.init(`w${i}`, W[i].w.toArray(), [co, ci, k, k]), g.init(`b${i}`, W[i].b.toArray(), [co])], attrs)]);
      return;
    }
    const { q, scale: ws, zeroPoint } = tp.quantization.quantizeWeight(W[i].w, { axis: 0 });
    const wsA = ws.toArray(), bs = Float32Array.from(wsA, (v) => Math.fround(Math.fround(scale) * v));
    const bq = Int32Array.from(W[i].b.toArray(), (v, m) => Math.round(v / bs[m]));
    const wd = g.op('DequantizeLinear', [g.init(`w${i}`, q.toArray(), [co, ci, k, k]), g.init(`ws${i}`, wsA, [co]), g.init(`wz${i}`, zeroPoint.toArray(), [co])], { axis: 0 });
    const bd = g.op('DequantizeLinear', [g.init(`b${i}`, bq, [co]), g.init(`bs${i}`, bs, [co])], { axis: 0 });
    for (const t of [q, ws, zeroPoint]) t.dispose();
    const y = g.op('Relu', [g.op('Conv', [h, wd, bd], attrs)]);
    scale = ranges[i] / 255; // after ReLU: [0, max], zero point 0
    const sy = g.scalar(scale), zy = g.init(`yz${i}`, Uint8Array.of(0), []);
    h = g.op('DequantizeLinear', [g.op('QuantizeLinear', [y, sy, zy]), sy, zy]);
  });
  const OH = HW / 8;
  g.op('Identity', [h], {}, 'y');
  g.output('y', [1, 256, OH, OH]);
  return g.model({ opset: 13 });
}

const files = { f32: net(false), q8: net(true) };
if (outDir) {
  mkdirSync(outDir, { recursive: true });
  for (const [k, b] of Object.entries(files)) writeFileSync(join(outDir, `convnet_${k}.onnx`), b);
  writeFileSync(join(outDir, 'convnet_x.bin'), Buffer.from(xData.buffer));
}
const runners = await makeRunners(files, 'x', 'y', xData, [1, 3, HW, HW]);
const outs = await firstOutputs(runners);
const acc = accuracy(outs, { 'last activation step (output scale)': ranges[ranges.length - 1] / 255 });
const stats = await timeRounds(runners, rounds);
report('QDQ conv net (6 convolutions, int8 weights per channel, uint8 activations) vs float32', stats, acc, rounds);
