// nms_frames.mjs - per-frame cost of a detector-shaped model (issue 14: NMS
// without a compile per frame), in Node on the Wasm core, stax, every input
// fed at run time.
//
//   node bench/nms_frames.mjs [--frames N] [--reps N] [--hw 32] [--c1 16] [--core path/to/js/index.js]
//
// The model: x [1, 3, hw, hw] -> Conv 3->c1 3x3 -> Relu -> Conv c1->5 3x3 ->
// boxes [1, hw*hw, 4] (center format) and scores [1, 1, hw*hw] (sigmoid) ->
// NonMaxSuppression (max 50, iou 0.5, score 0.75: fed as inputs) -> Gather of
// the selected boxes and scores. Each frame is a new random x (a new box set,
// a new selected count K). Reported per backend: the median ms per frame
// over --frames new frames (the first frame, with the load, counted apart)
// and the mean (which carries the compiles a median hides),
// specializations made, and onnxruntime-node's median on the same frames in
// the same run (the anchor). --reps repetitions give the spread (min..max of
// the medians). --core runs another build's JS package (e.g. the main
// checkout's, to compare against the value-specialized NMS: every frame an
// import and a compile).
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { resolve } from 'node:path';
import { makeModel } from '../tests/js/_onnx_pb.mjs';

const args = process.argv.slice(2);
let frames = 20, reps = 3, hw = 32, c1 = 16, core = new URL('../js/index.js', import.meta.url).href;
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--frames') frames = Number(args[++i]);
  else if (args[i] === '--reps') reps = Number(args[++i]);
  else if (args[i] === '--hw') hw = Number(args[++i]);
  else if (args[i] === '--c1') c1 = Number(args[++i]);
  else if (args[i] === '--core') core = pathToFileURL(resolve(args[++i])).href;
  else throw new Error(`unknown argument ${args[i]}`);
}
const tp = await import(core);
const ort = await import('onnxruntime-node');

let seed = 99;
const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
const H = hw, W = hw, N = H * W, C1 = c1;
const i64 = (...v) => BigInt64Array.from(v.map(BigInt));
const bytes = makeModel({
  nodes: [
    ['Conv', ['x', 'w1', 'b1'], ['h1'], { pads: [1, 1, 1, 1] }], ['Relu', ['h1'], ['r1']],
    ['Conv', ['r1', 'w2', 'b2'], ['f'], { pads: [1, 1, 1, 1] }],
    ['Reshape', ['f', 'shp'], ['f2']], ['Slice', ['f2', 's0', 's4', 'ax1'], ['bc']],
    ['Transpose', ['bc'], ['boxes0'], { perm: [0, 2, 1] }], ['Mul', ['boxes0', 'scale'], ['boxes']],
    ['Slice', ['f2', 's4', 's5', 'ax1'], ['sl']], ['Sigmoid', ['sl'], ['scores']],
    ['NonMaxSuppression', ['boxes', 'scores', 'maxo', 'iou', 'sthr'], ['sel'], { center_point_box: 1 }],
    ['Slice', ['sel', 's2', 's3', 'ax1'], ['idx2']], ['Reshape', ['idx2', 'flat'], ['idx']],
    ['Reshape', ['boxes', 'shp2'], ['boxes2']], ['Gather', ['boxes2', 'idx'], ['picked'], { axis: 0 }],
    ['Reshape', ['scores', 'flat'], ['sflat']], ['Gather', ['sflat', 'idx'], ['pscore'], { axis: 0 }],
  ],
  initializers: [['w1', 1, [C1, 3, 3, 3], new Float32Array(C1 * 27).map(() => rand() - 0.5)],
    ['b1', 1, [C1], new Float32Array(C1).map(() => rand() * 0.1)],
    ['w2', 1, [5, C1, 3, 3], new Float32Array(5 * C1 * 9).map(() => (rand() - 0.5) * 0.4)],
    ['b2', 1, [5], new Float32Array(5)], ['shp', 7, [3], i64(1, 5, N)], ['s0', 7, [1], i64(0)], ['s2', 7, [1], i64(2)],
    ['s3', 7, [1], i64(3)], ['s4', 7, [1], i64(4)], ['s5', 7, [1], i64(5)], ['ax1', 7, [1], i64(1)], ['flat', 7, [1], i64(-1)],
    ['shp2', 7, [2], i64(N, 4)], ['scale', 1, [1, 1, 4], Float32Array.of(32, 32, 4, 4)]],
  inputs: [['x', 1, [1, 3, H, W]], ['maxo', 7, [1]], ['iou', 1, [1]], ['sthr', 1, [1]]],
  outputs: [['sel', 7, null], ['picked', 1, null], ['pscore', 1, null]],
});
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };

const res = { stax: [], eager: [], ort: [], first: [], made: [], ks: [], staxMean: [], eagerMean: [] };
for (let r = 0; r < reps; r++) {
  const xs = Array.from({ length: frames + 1 }, () => Float32Array.from({ length: 3 * N }, () => rand() * 2 - 1));
  const sess = await ort.InferenceSession.create(bytes);
  const ot = [], ks = new Set();
  for (const x of xs) {
    const t0 = performance.now();
    const o = await sess.run({ x: new ort.Tensor('float32', x, [1, 3, H, W]), maxo: new ort.Tensor('int64', i64(50), [1]),
      iou: new ort.Tensor('float32', Float32Array.of(0.5), [1]), sthr: new ort.Tensor('float32', Float32Array.of(0.75), [1]) });
    ot.push(performance.now() - t0);
    ks.add(Number(o.sel.dims[0]));
  }
  res.ort.push(median(ot.slice(1)));
  res.ks.push(ks.size);
  for (const backend of ['stax', 'eager']) {
    const t0 = performance.now();
    const m = tp.onnx.load(bytes, { backend });
    const ts = [];
    xs.forEach((x, i) => tp.scope(() => {
      const t1 = performance.now();
      const out = m.run(tp.tensor(x, { shape: [1, 3, H, W] }), tp.tensor([50], { dtype: 'int64', shape: [1] }),
        tp.tensor([0.5], { shape: [1] }), tp.tensor([0.75], { shape: [1] }));
      out.forEach((o) => o.toArray());
      ts.push(performance.now() - (i ? t1 : t0));
    }));
    res[backend].push(median(ts.slice(1)));
    res[`${backend}Mean`].push(ts.slice(1).reduce((a, b) => a + b, 0) / frames);
    if (backend === 'stax') res.first.push(ts[0]), res.made.push(Number(/(\d+) made/.exec(m.explain())[1]));
    m.dispose();
  }
}
const fmt = (a) => `${median(a).toFixed(3)} ms (runs ${a.map((v) => v.toFixed(3)).join(', ')})`;
console.log(`nms_frames: ${frames} new frames x ${reps} runs, N = ${N} boxes, head width ${C1}, core ${core}`);
console.log(`  distinct K per run (onnxruntime): ${res.ks.join(', ')}`);
console.log(`  stax  per frame  ${fmt(res.stax)}; specializations made per run: ${res.made.join(', ')}; first frame (load + compile) ${fmt(res.first)}`);
console.log(`  stax  mean per frame (compiles of new K included) ${fmt(res.staxMean)}`);
console.log(`  eager per frame  ${fmt(res.eager)}; mean ${fmt(res.eagerMean)}`);
console.log(`  onnxruntime-node ${fmt(res.ort)}`);
console.log(`  ratio stax / onnxruntime (median of runs): ${(median(res.stax) / median(res.ort)).toFixed(2)}`);
