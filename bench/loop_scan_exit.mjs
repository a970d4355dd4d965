// loop_scan_exit.mjs - a Loop that ends on data with scan outputs (issue 14:
// stacks of run-time length), in Node on the Wasm core, stax, every input
// fed at run time, against onnxruntime-node (CPU) in the same run.
//
//   node bench/loop_scan_exit.mjs [--reps N] [--runs N]     (defaults 3, 40)
//
// y = y * k + x while max(y) < lim (at most M steps), y [64, 256]:
//   none    no scan output (the anchor: the loop as it ran before)
//   max     scan output: max(y) per step (a scalar: stack [steps])
//   full    scan output: y per step (64 KiB a step: stack [steps, 64, 256],
//           grown by doubling, trimmed, handed out as the output)
// Reported: median ms per call at 16 and 256 steps (median of --runs calls;
// --reps repetitions give the spread, min..max of the medians), the ratio
// to the anchor in the same repetition, and onnxruntime-node's time for
// the same model bytes.
import { performance } from 'node:perf_hooks';
import * as tp from '../js/index.js';
import { makeModel } from '../tests/js/_onnx_pb.mjs';

const ort = await import('onnxruntime-node');
const args = process.argv.slice(2);
let reps = 3, runs = 40;
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--reps') reps = Number(args[++i]);
  else if (args[i] === '--runs') runs = Number(args[++i]);
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const B = 64, D = 256;
const model = (scan) => makeModel({
  nodes: [['Loop', ['M', '', 'y0'], ['y', ...(scan ? ['ys'] : [])], { body: {
    nodes: [['Mul', ['y_in', 'kk'], ['h']], ['Add', ['h', 'x'], ['y_out']], ['ReduceMax', ['y_out'], ['mx'], { keepdims: 0 }],
      ['Less', ['mx', 'lim'], ['c_out']], ...(scan === 'full' ? [['Identity', ['y_out'], ['sc']]] : scan ? [['Identity', ['mx'], ['sc']]] : [])],
    inputs: [['i', 7, []], ['c_in', 9, []], ['y_in', 1, [B, D]]],
    outputs: [['c_out', 9, []], ['y_out', 1, [B, D]], ...(scan ? [['sc', 1, null]] : [])] } }]],
  inputs: [['M', 7, []], ['y0', 1, [B, D]], ['x', 1, [B, D]], ['kk', 1, [1]], ['lim', 1, []]],
  outputs: [['y', 1, null], ...(scan ? [['ys', 1, null]] : [])],
});
const kinds = ['none', 'max', 'full'];
const rows = [];
for (let r = 0; r < reps; r++) {
  const row = {};
  for (const kind of kinds) {
    const bytes = model(kind === 'none' ? null : kind);
    const m = tp.onnx.load(bytes, { backend: 'stax' });
    const sess = await ort.InferenceSession.create(bytes);
    const feeds = (steps) => ({ M: tp.tensor(100000, { dtype: 'int64' }), y0: tp.zeros([B, D]), x: tp.full([B, D], 0.001),
      kk: tp.tensor([1]), lim: tp.tensor(0.001 * steps - 0.0005) });
    for (const steps of [16, 256]) {
      const ts = [], os = [];
      for (let i = 0; i < runs; i++) {
        const t0 = performance.now();
        tp.scope(() => {
          const o = m.run(feeds(steps));
          if (kind !== 'none' && o.ys.shape[0] !== steps) throw new Error(`${kind}: ${o.ys.shape} after ${steps} steps`);
        });
        ts.push(performance.now() - t0);
      }
      const of = { M: new ort.Tensor('int64', BigInt64Array.of(100000n), []), y0: new ort.Tensor('float32', new Float32Array(B * D), [B, D]),
        x: new ort.Tensor('float32', new Float32Array(B * D).fill(0.001), [B, D]), kk: new ort.Tensor('float32', Float32Array.of(1), [1]),
        lim: new ort.Tensor('float32', Float32Array.of(0.001 * steps - 0.0005), []) };
      for (let i = 0; i < runs; i++) {
        const t0 = performance.now();
        await sess.run(of);
        os.push(performance.now() - t0);
      }
      row[`${kind}${steps}`] = median(ts);
      row[`ort_${kind}${steps}`] = median(os);
    }
    m.dispose();
    await sess.release();
  }
  rows.push(row);
  console.log(`rep ${r}: ${Object.entries(row).map(([k, v]) => `${k} ${v.toFixed(3)}`).join(', ')} ms`);
}
const spread = (f) => {
  const v = rows.map(f);
  return `${median(v).toFixed(3)} (${Math.min(...v).toFixed(3)}..${Math.max(...v).toFixed(3)})`;
};
console.log(`\nmedians over ${reps} reps of ${runs} calls (min..max), isa ${tp.isa}:`);
for (const steps of [16, 256])
  for (const kind of kinds)
    console.log(`  ${kind.padEnd(4)} ${String(steps).padStart(3)} steps: ${spread((r) => r[`${kind}${steps}`])} ms; / none ` +
      `${spread((r) => r[`${kind}${steps}`] / r[`none${steps}`])}; onnxruntime-node ${spread((r) => r[`ort_${kind}${steps}`])} ms; ` +
      `ours / ort ${spread((r) => r[`${kind}${steps}`] / r[`ort_${kind}${steps}`])}`);
