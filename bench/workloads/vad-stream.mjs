// bench/workloads/vad-stream.mjs - streaming voice-activity detection, the
// real-model issue's figure: Silero VAD v5 as shipped in @ricky0123/vad-web
// 0.0.31 (fetched with npm pack, as tests/js/real_models.test.js does), 512
// samples per call with the recurrent state fed back, one call after
// another in Node, one thread: tensorplay (stax and eager: tp.onnx.load)
// against onnxruntime-web (wasm, numThreads 1) in the same run, runtimes
// taking turns in REPS rounds. Each call is timed end to end (JS tensors in,
// outputs read back into JS arrays); the first call of each runtime (its
// compile) is reported apart. The per-call overhead (JS -> core -> back) is
// timed apart on a model of the same interface that does almost nothing
// (the `overhead:` rows). Prints one JSON line per case.
//
//   node bench/workloads/vad-stream.mjs [--calls N] [--reps R]
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import * as tp from '../../js/index.js';
import * as ortw from 'onnxruntime-web';
import { makeModel } from '../../tests/js/_onnx_pb.mjs';

const argv = process.argv.slice(2);
const arg = (k, d) => (argv.includes(k) ? Number(argv[argv.indexOf(k) + 1]) : d);
const CALLS = arg('--calls', 300), REPS = arg('--reps', 5);
const cache = join(process.env.TP_MODEL_CACHE || join(homedir(), '.cache', 'tensorplay-models'), 'ricky0123-vad-web-0.0.31');
if (!existsSync(join(cache, 'package', 'package.json'))) {
  mkdirSync(cache, { recursive: true });
  const out = execFileSync('npm', ['pack', '@ricky0123/vad-web@0.0.31', '--silent', '--pack-destination', cache], { encoding: 'utf8' }).trim().split('\n').pop();
  execFileSync('tar', ['xzf', join(cache, out), '-C', cache]);
}
const bytes = readFileSync(join(cache, 'package', 'dist', 'silero_vad_v5.onnx'));
ortw.env.wasm.numThreads = 1;
const frames = Array.from({ length: 8 }, (_, f) => Float32Array.from({ length: 512 }, (_, i) => 0.4 * Math.sin((f * 512 + i) * 0.07)));

// The same interface with (almost) no work: stateN = state, output = the
// frame's mean: what a call costs around the model (JS -> core -> back).
const overheadBytes = makeModel({
  nodes: [['Identity', ['state'], ['stateN']], ['ReduceMean', ['input'], ['output'], { axes: [1], keepdims: 1 }]],
  inputs: [['input', 1, [1, 512]], ['state', 1, [2, 1, 128]], ['sr', 7, []]],
  outputs: [['output', 1, null], ['stateN', 1, null]],
});

async function runOrt(bytes) {
  const s = await ortw.InferenceSession.create(bytes, { executionProviders: ['wasm'] });
  const sr = new ortw.Tensor('int64', BigInt64Array.from([16000n]), []);
  let state = new Float32Array(256);
  const t = [];
  for (let c = 0; c < CALLS; c++) {
    const t0 = performance.now();
    const r = await s.run({ input: new ortw.Tensor('float32', frames[c % 8], [1, 512]), state: new ortw.Tensor('float32', state, [2, 1, 128]), sr });
    state = r.stateN.data;
    void r.output.data[0];
    t.push(performance.now() - t0);
  }
  await s.release();
  return t;
}

function runTp(backend, bytes) {
  const m = tp.onnx.load(bytes, { backend });
  const sr = tp.tensor(BigInt64Array.from([16000n]), { shape: [] });
  let state = new Float32Array(256);
  const t = [];
  for (let c = 0; c < CALLS; c++) {
    const t0 = performance.now();
    tp.scope(() => {
      const r = m.run({ input: tp.tensor(frames[c % 8], { shape: [1, 512] }), state: tp.tensor(state, { shape: [2, 1, 128] }), sr });
      state = r.stateN.toArray();
      void r.output.toArray()[0];
    });
    t.push(performance.now() - t0);
  }
  m.dispose();
  sr.dispose();
  return t;
}

const RUNS = [['onnxruntime-web', () => runOrt(bytes)], ['tensorplay stax', () => runTp('stax', bytes)], ['tensorplay eager', () => runTp('', bytes)],
  ['overhead: onnxruntime-web', () => runOrt(overheadBytes)], ['overhead: tensorplay stax', () => runTp('stax', overheadBytes)]];
const impls = Object.fromEntries(RUNS.map(([n]) => [n, []]));
const first = Object.fromEntries(RUNS.map(([n]) => [n, []]));
for (let r = 0; r < REPS; r++) {
  for (const [name, run] of RUNS) {
    const t = await run();
    first[name].push(t[0]);
    impls[name].push(...t.slice(10)); // steady state: the first 10 calls warm up
  }
}
const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return { median_ms: +s[s.length >> 1].toFixed(4), p10_ms: +s[Math.floor(s.length * 0.1)].toFixed(4), p90_ms: +s[Math.floor(s.length * 0.9)].toFixed(4) };
};
const rows = Object.entries(impls).map(([name, xs]) => ({ name, ...stats(xs), first_call_ms: first[name].map((x) => +x.toFixed(1)) }));
console.log(JSON.stringify({ case: `silero_vad_v5 streaming, 512 samples/call, ${CALLS} calls x ${REPS} rounds`, impls: rows, baseline: 'onnxruntime-web' }));
for (const r of rows) console.error(`vad-stream: ${r.name}: median ${r.median_ms} ms/call (p10 ${r.p10_ms}, p90 ${r.p90_ms}); first calls ${r.first_call_ms.join(', ')} ms`);
