// conv kernels with fused epilogues through tp.compile (stax): a conv2d
// followed by a bias add, an unfolded BatchNorm (mul + add by per-channel
// tensors fed at run time), an activation (relu, leaky relu, clip, hard-swish,
// sigmoid) or a residual add is one conv kernel in the plan
// (explain().backend_plans[0].conv, no pointwise kernel; an unfolded
// BatchNorm read twice by a leaky relu is computed once in the epilogue and
// the leaky relu appended to it). In Wasm the
// epilogue runs as generated code after the core's conv (the run entry calls
// the conv without its epilogue, then the generated in-place function), so
// the results with codegen on are compared bit for bit with codegen off (the
// executor applies the same expression on each output tile) and per element
// with eager.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';

const C = tp.compiler;

const hswish = (t) => t.mul(tp.where(tp.gt(tp.where(tp.lt(t.add(3), 0), 0, t.add(3)), 6), 6, tp.where(tp.lt(t.add(3), 0), 0, t.add(3)))).div(6);
const cases = [
  // name, x shape, w shape, conv options, epilogue (y, s, t, r) => ..., kernels expected (1)
  ['conv + bias + relu (im2col)', [1, 3, 9, 11], [5, 3, 3, 3], { padding: 1 }, (y) => tp.relu(y)],
  ['conv + BN (unfolded) + leaky relu', [2, 4, 13, 12], [6, 4, 3, 3], { stride: 2, padding: 1 },
    (y, s, t) => { const z = y.mul(s).add(t); return tp.where(tp.lt(z, z.mul(0.1)), z.mul(0.1), z); }],
  // PP-LCNetV3's block (PP-OCRv4 detection): BN, a scalar affine, hard-swish reading it twice, a second affine
  ['depthwise + BN + affine + hardswish + affine', [1, 8, 20, 70], [8, 1, 3, 3], { padding: 1, groups: 8 },
    (y, s, t) => hswish(y.mul(s).add(t).mul(1.5).add(-0.25)).mul(0.75).add(0.125)],
  ['conv + residual add + relu', [1, 8, 10, 12], [8, 8, 3, 3], { padding: 1 }, (y, s, t, r) => tp.relu(y.add(r))],
  ['depthwise + hardswish', [1, 6, 8, 70], [6, 1, 3, 3], { padding: 1, groups: 6 }, (y) => hswish(y)],
  ['winograd + clip', [1, 16, 12, 12], [16, 16, 3, 3], { padding: 1 }, (y) => tp.where(tp.gt(tp.where(tp.lt(y, 0), 0, y), 6), 6, tp.where(tp.lt(y, 0), 0, y))],
  ['conv + sigmoid', [1, 4, 10, 10], [4, 4, 3, 3], { padding: 1 }, (y) => tp.sigmoid(y)],
  // 1-D Winograd F(2, 3): the openwakeword embedding's 1x3 (column pads) and 3x1 convs, leaky relu after
  ['1x3 winograd + leaky relu', [1, 24, 20, 32], [24, 24, 1, 3], { padding: [0, 1] }, (y) => tp.where(tp.lt(y, y.mul(0.2)), y.mul(0.2), y)],
  ['3x1 winograd + bias + relu', [1, 16, 22, 16], [24, 16, 3, 1], {}, (y) => tp.relu(y)],
];

for (const [name, xs, ws, opts, epi, kernels = 1] of cases) {
  test(`${name}: one conv kernel, codegen on = off bit for bit, = eager per element`, () => {
    tp.scope(() => {
      const M = ws[0];
      const x = tp.randn(xs, { seed: 1 }), w = tp.randn(ws, { seed: 2 }), b = tp.randn([M], { seed: 3 });
      const s = tp.randn([1, M, 1, 1], { seed: 4 }), t = tp.randn([1, M, 1, 1], { seed: 5 });
      const y0 = tp.conv2d(x, w, b, opts);
      const r = tp.randn(y0.shape, { seed: 6 });
      const f = (x, w, b, s, t, r) => epi(tp.conv2d(x, w, b, opts), s, t, r);
      const gj = C.compile(f, { options: { 'stax.codegen': true } });
      const gx = C.compile(f, { options: { 'stax.codegen': false } });
      const args = [x, w, b, s, t, r];
      gj(...args), gx(...args); // capture
      const yj = gj(...args).toArray(), yx = gx(...args).toArray(), ye = f(...args).toArray();
      for (const g of [gj, gx]) {
        const p = g.explain().backend_plans[0];
        assert.equal(p.conv, 1, `${name}: one conv kernel: ${JSON.stringify(p)}`);
        // (BN then leaky relu: x * a + c, read twice by the leaky relu, is
        // computed once in the epilogue, the leaky relu after it)
        assert.equal(p.kernels, kernels, `${name}: the epilogue is in the conv kernel: ${JSON.stringify(p)}`);
      }
      assert.equal(yj.length, ye.length);
      for (let i = 0; i < yj.length; i++) {
        assert.ok(Object.is(yj[i], yx[i]) || (Number.isNaN(yj[i]) && Number.isNaN(yx[i])),
          `${name} [${i}]: codegen ${yj[i]}, executor ${yx[i]}`);
        assert.ok(Math.abs(yj[i] - ye[i]) <= 1e-4 + 1e-4 * Math.abs(ye[i]), `${name} [${i}]: ${yj[i]} vs eager ${ye[i]}`);
      }
      gj.dispose(), gx.dispose();
    });
  });
}
