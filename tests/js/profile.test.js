// Per-kernel profiles (stax.profile; src/lower/profile.c): an ONNX model
// loaded with { backend: 'stax', options: { 'stax.profile': true } } lists,
// in explain(), each kernel of each specialization's plan with its time
// per run, share and rate, over the runs made; bad options fail clearly and
// leave no model behind. The native twin is `tpc bench --profile`
// (tests/c/lower/test_lower.c checks the report itself).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tp from '../../js/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = process.env.TP_CONFORMANCE || join(here, '..', '..', '..', 'shared', 'conformance');
const mnist = join(root, 'models', 'mnist-8', 'model.onnx');
const requireData = !!process.env.TP_REQUIRE_DATA && process.env.TP_REQUIRE_DATA !== '0';

test('stax.profile: explain() lists the kernels of the plan with time shares', { skip: !existsSync(mnist) && !requireData && `no ${mnist}` }, () => {
  const bytes = readFileSync(mnist);
  const m = tp.onnx.load(bytes, { backend: 'stax', options: { 'stax.profile': true } });
  try {
    const x = tp.randn([1, 1, 28, 28]);
    const plain = tp.onnx.load(bytes, { backend: 'stax' });
    for (let i = 0; i < 3; i++) {
      tp.scope(() => {
        const [a] = m.run(x), [b] = plain.run(x);
        assert.deepEqual([...a.toArray()], [...b.toArray()], 'profiling does not change results');
      });
    }
    plain.dispose();
    const text = m.explain();
    assert.match(text, /profile: 3 runs, [0-9.]+ ms of kernels per run, \d+ kernels \(slowest first\)/);
    assert.match(text, /conv \d+->\d+ \d+x\d+\/\d+ .* GFLOP\/s/, 'convolutions report their shape and GFLOP/s');
    const shares = [...text.matchAll(/ ([0-9.]+)% /g)].map((r) => Number(r[1]));
    assert.ok(shares.length >= 2 && Math.abs(shares.reduce((s, v) => s + v, 0) - 100) < 1, `shares sum to 100%: ${shares}`);
    x.dispose();
  } finally {
    m.dispose();
  }
});

test('stax.profile: bad backend options are errors naming them', { skip: !existsSync(mnist) && !requireData && `no ${mnist}` }, () => {
  const bytes = readFileSync(mnist);
  assert.throws(() => tp.onnx.load(bytes, { backend: 'stax', options: { 'stax.nope': true } }), /stax\.nope/);
  assert.throws(() => tp.onnx.load(bytes, { options: { 'stax.profile': true } }), /need a backend/);
  assert.throws(() => tp.onnx.load(bytes, { backend: 'stax', options: { 'stax.profile': 'yes' } }), /must be a boolean or a number/);
});
