// scan_load.mjs - what a Scan costs at import now that it runs as one
// while_loop in the plan (issue 14 item 3), in Node on the Wasm core.
//
//   node bench/scan_load.mjs [--reps N] [--runs N] [--T 100,5000]   (defaults 5, 20, 100,5000)
//
// Each line says which form the import chose (unrolled or loop: one
// while_loop, its scan outputs written in place). To compare the forms at
// one length, run it twice: once on the default core, once with TP_WASM
// set to a core built with -DTP_ONNX_SCAN_LOOP_MIN=0 (every Scan a loop).
//
// Model: Scan (opset 11) over x [T, 64], state s [64], outer k [64]:
// s_t = tanh(s_{t-1} * k + x_t), y_t = s_t (stacked). For T = 100 and
// 5000: first-call cost (load + import of the specialization + compile +
// first run) eagerly and with stax, then the median ms per call. Before the
// loop form the body was imported once per step (unrolled, at most 4096).
// Each figure: median over --reps fresh loads (first call) or --runs calls;
// the spread is min..max over the reps.
import { performance } from 'node:perf_hooks';
import * as tp from '../js/index.js';
import { makeModel } from '../tests/js/_onnx_pb.mjs';

const args = process.argv.slice(2);
let reps = 5, runs = 20, lengths = [100, 5000];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--reps') reps = Number(args[++i]);
  else if (args[i] === '--runs') runs = Number(args[++i]);
  else if (args[i] === '--T') lengths = args[++i].split(',').map(Number);
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const D = 64;
const model = makeModel({
  opset: 11,
  nodes: [['Scan', ['s0', 'x'], ['s', 'y'], {
    body: {
      nodes: [['Mul', ['s_in', 'k'], ['h']], ['Add', ['h', 'x_t'], ['a']], ['Tanh', ['a'], ['s_out']], ['Identity', ['s_out'], ['y_t']]],
      inputs: [['s_in', 1, [D]], ['x_t', 1, [D]]],
      outputs: [['s_out', 1, [D]], ['y_t', 1, [D]]],
    },
    num_scan_inputs: 1,
  }]],
  inputs: [['s0', 1, [D]], ['x', 1, ['T', D]], ['k', 1, [D]]],
  outputs: [['s', 1, null], ['y', 1, null]],
});
const feeds = (T) => ({ s0: tp.tensor(new Float32Array(D)), x: tp.tensor(Float32Array.from({ length: T * D }, (_, i) => Math.sin(i) * 0.1), { shape: [T, D] }),
  k: tp.tensor(Float32Array.from({ length: D }, (_, i) => 0.5 + i / (4 * D))) });
for (const backend of ['', 'stax']) {
  for (const T of lengths) {
    const first = [], call = [];
    let form = '?';
    for (let r = 0; r < reps; r++) {
      tp.scope(() => {
        const f = feeds(T);
        const t0 = performance.now();
        const m = tp.onnx.load(model, { backend });
        tp.scope(() => m.run(f));
        first.push(performance.now() - t0);
        const ts = [];
        for (let q = 0; q < runs; q++) {
          const t1 = performance.now();
          tp.scope(() => m.run(f));
          ts.push(performance.now() - t1);
        }
        call.push(median(ts));
        form = /= while_loop\(/.test(m.graph.print()) ? 'loop' : 'unrolled';
        m.dispose();
      });
    }
    const fmt = (xs) => `${median(xs).toFixed(2)} ms (${Math.min(...xs).toFixed(2)}..${Math.max(...xs).toFixed(2)})`;
    console.log(`${backend || 'eager'} T=${T} (${form}): first call ${fmt(first)}, per call ${fmt(call)}`);
  }
}
