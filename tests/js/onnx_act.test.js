// ONNX activations composed from compares and where (src/onnx/onnx_nn.c):
// LeakyRelu imports, for 0 < alpha <= 1, as where(x < alpha x, alpha x, x),
// which stax fuses as one pointwise max. Checked bit for bit (signed zeros,
// infinities, NaNs, denormals) against ONNX's definition computed here in
// float32, on eager and stax, with the input fed at run time; and the plan
// has no compare or where kernel left.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';
import { makeModel } from './_onnx_pb.mjs';

const f32 = Math.fround;
const edges = [0, -0, 1, -1, 2.5, -2.5, Infinity, -Infinity, NaN, 1e-45, -1e-45, 3e-39, -3e-39, 3.4e38, -3.4e38, 0.1, -0.1, 7, -1e-30];
const x = Float32Array.from({ length: 64 }, (_, i) => (i < edges.length ? edges[i] : Math.sin(i * 1.7) * 10 ** ((i % 7) - 3)));

for (const alpha of [0.01, 0.2, 1, 0, 1.5, -0.5]) {
  test(`LeakyRelu alpha ${alpha}: bit for bit ONNX's where(x < 0, alpha x, x), eager and stax`, () => {
    const a = f32(alpha);
    const want = Float32Array.from(x, (v) => (v < 0 ? f32(a * v) : v));
    const bytes = makeModel({ nodes: [['LeakyRelu', ['x'], ['y'], { alpha: { float: alpha } }]],
      inputs: [['x', 1, [4, 16]]], outputs: [['y', 1, null]] });
    for (const backend of ['', 'stax']) {
      // stax.profile: explain() then lists the plan's kernels
      const m = tp.onnx.load(bytes, backend ? { backend, options: { 'stax.profile': true } } : {});
      try {
        tp.scope(() => {
          const got = m.run({ x: tp.tensor(x, { shape: [4, 16] }) }).y.toArray();
          for (let i = 0; i < x.length; i++)
            assert.ok(Object.is(got[i], want[i]), `${backend || 'eager'} x=${x[i]}: got ${got[i]}, want ${want[i]}`);
        });
        if (backend === 'stax' && alpha > 0 && alpha <= 1) {
          const e = m.explain();
          assert.match(e, /1 kernels .*\n.*\n *k0_pointwise/, e);
          assert.doesNotMatch(e, /op (where|lt)\b/, 'the compare and where fuse into one pointwise kernel');
        }
      } finally {
        m.dispose();
      }
    }
  });
}
