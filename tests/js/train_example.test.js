// examples/node/train.mjs as a user runs it: eager and compiled print the
// same losses step for step, the loss goes down, the accuracy is printed;
// bad arguments exit with a message naming them. The data and trainer are
// examples/web/train_lib.js, shared with the training page.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { makeDigits, CLASSES, SIDE } from '../../examples/web/train_lib.js';

const SCRIPT = fileURLToPath(new URL('../../examples/node/train.mjs', import.meta.url));
const run = (...args) => spawnSync(process.execPath, [SCRIPT, ...args], { encoding: 'utf8' });

test('the digit data: seeded, every class, values in [0, 1]', () => {
  const a = makeDigits(500, 7), b = makeDigits(500, 7), c = makeDigits(500, 8);
  assert.deepEqual(a.x, b.x);
  assert.notDeepEqual(a.x, c.x);
  assert.equal(a.x.length, 500 * SIDE * SIDE);
  assert.equal(new Set(a.y).size, CLASSES);
  assert.ok(a.x.every((v) => v >= 0 && v <= 1));
  assert.throws(() => makeDigits(0, 1), /n must be a positive integer/);
});

test('examples/node/train.mjs: the same losses eager and compiled, the loss goes down', () => {
  const r = run('--steps', '100');
  assert.equal(r.status, 0, r.stderr);
  const steps = [...r.stdout.matchAll(/step +(\d+): loss eager ([\d.]+), compiled ([\d.]+)/g)].map((m) => [Number(m[1]), Number(m[2]), Number(m[3])]);
  assert.deepEqual(steps.map((s) => s[0]), [1, 50, 100]);
  for (const [, e, c] of steps) assert.ok(Math.abs(e - c) <= 2e-4, `eager ${e} vs compiled ${c}`);
  assert.ok(steps[2][1] < 0.7 * steps[0][1], `the loss goes down: ${steps[0][1]} -> ${steps[2][1]}`);
  assert.match(r.stdout, /compiled: median step [\d.]+ ms, held-out accuracy [\d.]+%/);
});

test('examples/node/train.mjs: bad arguments are named', () => {
  let r = run('--steps', 'x');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /--steps must be a positive integer, got x/);
  r = run('--model', 'rnn', '--steps', '2');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /unknown model 'rnn' \(mlp, cnn\)/);
  r = run('--batch', '5000', '--steps', '2');
  assert.equal(r.status, 2);
  assert.match(r.stderr, /batch must be an integer in 1\.\.2048, got 5000/);
});
