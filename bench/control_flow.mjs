// control_flow.mjs - what a run-time choice costs inside the plan (issue 14
// item 3), in Node on the Wasm core, stax, every input fed at run time.
//
//   node bench/control_flow.mjs [--reps N] [--runs N]     (defaults 5, 200)
//
// If: a VAD-style model y = If(sr == 16000, then: tanh(x @ W1 + b1) @ W2,
// else: relu(x @ W2 + b1) @ W1) + x, x [64, 256], W [256, 256], sr an int64
// input. Two ways to run the same computation, timed in the same process:
//   cond     the model as shipped: the If imports as one cond node, both
//            branches compiled once, the plan reads sr per call
//   anchor   the same model with the condition a constant (If resolved at
//            import: straight-line plan), one model per branch - what the
//            import-time specialization compiles per value of sr
// Reported: median ms per call (sr alternating for cond; each anchor on its
// own branch), the ratio cond / anchor (same branch), and first-call cost
// (import + compile + first run) of cond vs the two anchors together.
// Loop: y = y * k + x while y < lim (a while_loop: the body compiled once,
// run as often as the data says), ms per call at 1, 16 and 256 steps: the
// per-step cost of the loop in the plan.
// Each figure is the median of --runs calls; --reps repetitions give the
// spread (min..max of the medians).
import { performance } from 'node:perf_hooks';
import * as tp from '../js/index.js';
import { makeModel } from '../tests/js/_onnx_pb.mjs'; // the tests' ModelProto builder (graph attributes, initializers)

const args = process.argv.slice(2);
let reps = 5, runs = 200;
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--reps') reps = Number(args[++i]);
  else if (args[i] === '--runs') runs = Number(args[++i]);
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const D = 256, B = 64;
function rnd(n, seed) {
  const a = new Float32Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) s = (s * 1103515245 + 12345) % 2147483648, a[i] = ((s / 2147483648) * 2 - 1) * 0.1;
  return a;
}
const inits = [['W1', 1, [D, D], rnd(D * D, 1)], ['W2', 1, [D, D], rnd(D * D, 2)], ['b1', 1, [D], rnd(D, 3)]];
const thenB = { nodes: [['MatMul', ['x', 'W1'], ['t1']], ['Add', ['t1', 'b1'], ['t2']], ['Tanh', ['t2'], ['t3']],
  ['MatMul', ['t3', 'W2'], ['t4']]], inputs: [], outputs: [['t4', 1, [B, D]]] };
const elseB = { nodes: [['MatMul', ['x', 'W2'], ['e1']], ['Add', ['e1', 'b1'], ['e2']], ['Relu', ['e2'], ['e3']],
  ['MatMul', ['e3', 'W1'], ['e4']]], inputs: [], outputs: [['e4', 1, [B, D]]] };
// constCond: null (sr decides at run time) or true/false (a constant condition)
const ifModel = (constCond) => makeModel({
  nodes: [...(constCond === null ? [['Equal', ['sr', 'k'], ['c']]] : []),
    ['If', [constCond === null ? 'c' : 'cc'], ['y'], { then_branch: thenB, else_branch: elseB }], ['Add', ['y', 'x'], ['out']]],
  inputs: [['sr', 7, []], ['k', 7, []], ['x', 1, [B, D]]],
  outputs: [['out', 1, null]],
  initializers: [...inits, ...(constCond === null ? [] : [['cc', 9, [], Uint8Array.of(constCond ? 1 : 0)]])],
});
const loopModel = makeModel({
  nodes: [['Loop', ['M', '', 'y0'], ['y'], { body: {
    nodes: [['Mul', ['y_in', 'kk'], ['h']], ['Add', ['h', 'x'], ['y_out']], ['ReduceMax', ['y_out'], ['mx']],
      ['Less', ['mx', 'lim'], ['c2']], ['Squeeze', ['c2'], ['c_out']]],
    inputs: [['i', 7, []], ['c_in', 9, []], ['y_in', 1, [B, D]]],
    outputs: [['c_out', 9, []], ['y_out', 1, [B, D]]] } }]],
  inputs: [['M', 7, []], ['y0', 1, [B, D]], ['x', 1, [B, D]], ['kk', 1, [1]], ['lim', 1, [1]]],
  outputs: [['y', 1, null]],
});

function timeCalls(fn, n) {
  const ts = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    tp.scope(() => fn(i));
    ts.push(performance.now() - t0);
  }
  return median(ts);
}

const x = tp.tensor(rnd(B * D, 9)).reshape([B, D]);
const k = tp.tensor(16000, { dtype: 'int64' });
const srs = [tp.tensor(16000, { dtype: 'int64' }), tp.tensor(8000, { dtype: 'int64' })];
const rows = [];
for (let r = 0; r < reps; r++) {
  const t0 = performance.now();
  const mc = tp.onnx.load(ifModel(null), { backend: 'stax' });
  tp.scope(() => mc.run({ sr: srs[0], k, x }));
  const firstCond = performance.now() - t0;
  const t1 = performance.now();
  const ma = [true, false].map((c) => {
    const m = tp.onnx.load(ifModel(c), { backend: 'stax' });
    tp.scope(() => m.run({ sr: srs[0], k, x }));
    return m;
  });
  const firstAnchors = performance.now() - t1;
  const condThen = timeCalls(() => mc.run({ sr: srs[0], k, x }), runs);
  const condElse = timeCalls(() => mc.run({ sr: srs[1], k, x }), runs);
  const condAlt = timeCalls((i) => mc.run({ sr: srs[i % 2], k, x }), runs);
  const anchThen = timeCalls(() => ma[0].run({ sr: srs[0], k, x }), runs);
  const anchElse = timeCalls(() => ma[1].run({ sr: srs[1], k, x }), runs);
  const specs = mc.numSpecializations ?? null;
  mc.dispose();
  ma.forEach((m) => m.dispose());
  // loop
  const ml = tp.onnx.load(loopModel, { backend: 'stax' });
  const y0 = tp.zeros([B, D]), xl = tp.full([B, D], 0.001), kk = tp.tensor([1.0]), M = tp.tensor(100000, { dtype: 'int64' });
  const loopMs = {};
  for (const steps of [1, 16, 256]) {
    const lim = tp.tensor([0.001 * steps - 0.0005]); // y after s steps: 0.001 * s (k = 1)
    loopMs[steps] = timeCalls(() => ml.run({ M, y0, x: xl, kk, lim }), Math.max(10, Math.floor(runs / 4)));
    lim.dispose();
  }
  ml.dispose();
  [y0, xl, kk, M].forEach((t) => t.dispose());
  const row = { firstCond, firstAnchors, condThen, condElse, condAlt, anchThen, anchElse, loop1: loopMs[1], loop16: loopMs[16],
    loop256: loopMs[256], specs };
  rows.push(row);
  console.log(`rep ${r}: cond then ${condThen.toFixed(3)} else ${condElse.toFixed(3)} alternating ${condAlt.toFixed(3)} ms; ` +
    `anchor then ${anchThen.toFixed(3)} else ${anchElse.toFixed(3)} ms; first call cond ${firstCond.toFixed(1)} ms vs ` +
    `both anchors ${firstAnchors.toFixed(1)} ms; loop 1/16/256 steps ${loopMs[1].toFixed(3)}/${loopMs[16].toFixed(3)}/` +
    `${loopMs[256].toFixed(3)} ms`);
}
const spread = (key) => {
  const v = rows.map((r) => r[key]);
  return `${median(v).toFixed(3)} (${Math.min(...v).toFixed(3)}..${Math.max(...v).toFixed(3)})`;
};
const ratio = (a, b) => {
  const v = rows.map((r) => r[a] / r[b]);
  return `${median(v).toFixed(3)} (${Math.min(...v).toFixed(3)}..${Math.max(...v).toFixed(3)})`;
};
console.log(`\nmedians over ${reps} reps of ${runs} calls (min..max), isa ${tp.isa}:`);
console.log(`  cond, then branch        ${spread('condThen')} ms   / anchor ${spread('anchThen')} ms = ${ratio('condThen', 'anchThen')}`);
console.log(`  cond, else branch        ${spread('condElse')} ms   / anchor ${spread('anchElse')} ms = ${ratio('condElse', 'anchElse')}`);
console.log(`  cond, alternating        ${spread('condAlt')} ms`);
console.log(`  first call: cond ${spread('firstCond')} ms; both anchors ${spread('firstAnchors')} ms; ratio ${ratio('firstCond', 'firstAnchors')}`);
console.log(`  while_loop 1 / 16 / 256 steps: ${spread('loop1')} / ${spread('loop16')} / ${spread('loop256')} ms; ` +
  `per step ${(((median(rows.map((r) => r.loop256)) - median(rows.map((r) => r.loop16))) / 240) * 1000).toFixed(1)} us`);
x.dispose();
k.dispose();
srs.forEach((t) => t.dispose());
