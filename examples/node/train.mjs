#!/usr/bin/env node
// train.mjs - the training demo in Node: the same data, models and trainer
// as the web page (examples/web/train_lib.js). Trains eager and compiled
// side by side from the same initialization, prints the loss every 50 steps,
// each mode's median step time and the held-out accuracy.
//
//   node examples/node/train.mjs [--model mlp|cnn] [--steps N] [--batch B] [--lr LR]
import * as tp from '../../js/index.js';
import { makeDigits, createTrainer, median } from '../web/train_lib.js';

function arg(name, def) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && i + 1 < process.argv.length ? process.argv[i + 1] : def;
}
const model = arg('model', 'mlp'), steps = Number(arg('steps', 300)), batch = Number(arg('batch', 32)), lr = Number(arg('lr', 0.01));
if (!Number.isInteger(steps) || steps < 1) {
  console.error(`train.mjs: --steps must be a positive integer, got ${arg('steps')}`);
  process.exit(2);
}
const data = makeDigits(2048, 7), test = makeDigits(512, 99);
let trainers;
try {
  trainers = { eager: createTrainer(tp, { model, mode: 'eager', batch, lr, data }), compiled: createTrainer(tp, { model, mode: 'compiled', batch, lr, data }) };
} catch (e) {
  console.error(`train.mjs: ${e.message}`);
  process.exit(2);
}
console.log(`tensorplay-wasm ${tp.version} (${tp.isa}): ${model}, ${steps} steps of batch ${batch}, Adam lr ${lr}`);
for (let i = 0; i < steps; i++) {
  const le = trainers.eager.step(i), lc = trainers.compiled.step(i);
  if ((i + 1) % 50 === 0 || i === 0 || i === steps - 1) console.log(`step ${String(i + 1).padStart(5)}: loss eager ${le.toFixed(4)}, compiled ${lc.toFixed(4)}`);
}
for (const [k, t] of Object.entries(trainers)) {
  const warm = t.stepMs.slice(Math.min(3, t.stepMs.length - 1));
  console.log(`${k.padEnd(8)}: median step ${median(warm).toFixed(3)} ms, held-out accuracy ${(100 * t.accuracy(test)).toFixed(1)}%`);
  t.dispose();
}
