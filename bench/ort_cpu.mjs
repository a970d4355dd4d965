// bench/ort_cpu.mjs - onnxruntime-node (1 intra-op thread) on one ONNX file,
// each call timed by the process's CPU time (process.cpuUsage: the time the
// process computed, not the time it waited for a core on a shared machine;
// the JS call's own overhead included): the counterpart of
// `TPC_CLOCK=cpu tpc bench MODEL --backend=stax --threads 1` for the
// quantized models of docs/quantization.md. One float32 input of the given
// shape, filled with sin(0.37 i); 5 warm-up calls; prints the median and min.
//
//   node bench/ort_cpu.mjs MODEL.onnx --shape 1,128,256 [--runs N]   (default 201)
import { readFileSync } from 'node:fs';
import * as ort from 'onnxruntime-node';

const argv = process.argv.slice(2);
const arg = (k, d) => (argv.includes(k) ? argv[argv.indexOf(k) + 1] : d);
const file = argv[0], runs = Number(arg('--runs', 201)), shapeArg = arg('--shape', null);
if (!file || !shapeArg) throw new Error('usage: node bench/ort_cpu.mjs MODEL.onnx --shape D0,D1,... [--runs N]');
const shape = shapeArg.split(',').map(Number);
if (shape.some((d) => !Number.isInteger(d) || d < 1)) throw new Error(`--shape: ${shapeArg} is not a list of positive whole numbers`);
if (!Number.isInteger(runs) || runs < 1) throw new Error(`--runs: ${arg('--runs')} is not a positive whole number`);
const s = await ort.InferenceSession.create(readFileSync(file), { intraOpNumThreads: 1, interOpNumThreads: 1 });
if (s.inputNames.length !== 1) throw new Error(`${file}: ${s.inputNames.length} inputs; this script feeds one`);
const n = shape.reduce((a, b) => a * b, 1);
const feeds = { [s.inputNames[0]]: new ort.Tensor('float32', Float32Array.from({ length: n }, (_, i) => Math.sin(i * 0.37)), shape) };
for (let i = 0; i < 5; i++) await s.run(feeds);
const t = [];
for (let i = 0; i < runs; i++) {
  const c0 = process.cpuUsage();
  await s.run(feeds);
  const c = process.cpuUsage(c0);
  t.push((c.user + c.system) / 1000);
}
t.sort((a, b) => a - b);
console.log(`onnxruntime-node ${file.split('/').pop()}: cpu median ${t[t.length >> 1].toFixed(4)} ms, min ${t[0].toFixed(4)} ms (${runs} calls, 1 thread)`);
await s.release();
