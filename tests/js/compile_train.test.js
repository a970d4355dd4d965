// Compiled training from JS (src/compiler/aot.c in the Wasm core): a
// tp.compile'd loss that closes over a tp.nn model's parameters. The
// compiled call's loss carries one autograd node whose backward runs the
// compiled backward graph: loss.backward() fills every parameter's .grad as
// eager autograd does (float32 tolerance |a - b| <= 1e-5 + 2e-4 max|b| per
// tensor), and training with Adam / AdamW from the same seeds gives the
// same loss at every step (1e-4 relative) for the MLP and the W4-style
// TransformerEncoderLayer. Guards: a call under noGrad recompiles (the
// requires_grad / grad-mode guard named); explain() shows the forward and
// backward plans and what was saved vs recomputed. Nothing leaks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';
import { sectors, trainSteps } from './_train.mjs';

const live0 = tp.liveTensors();

function closeTensors(got, want, msg) {
  const a = Array.from(got.toArray()), b = Array.from(want.toArray());
  assert.equal(a.length, b.length, msg);
  let mx = 0, err = 0, at = 0;
  for (const v of b) mx = Math.max(mx, Math.abs(v));
  for (let i = 0; i < b.length; i++) if (Math.abs(a[i] - b[i]) > err) { err = Math.abs(a[i] - b[i]); at = i; }
  assert.ok(mx > 0 && err <= 1e-5 + 2e-4 * mx, `${msg}: compiled ${a[at]} vs eager ${b[at]} at ${at} (max |eager| ${mx})`);
}



function compareRuns(makeModel, makeOpt, lossOf, x, steps, label) {
  const eager = makeModel(), compiled = makeModel();
  // one step's gradients first
  const ge = tp.scope(() => {
    const l = lossOf(eager, x);
    l.backward();
    return eager.parameters().map((p) => p.grad.detach());
  });
  const g = tp.compile((xx) => lossOf(compiled, xx), { name: `${label}_loss` });
  tp.scope(() => {
    const l = g(x);
    assert.ok(l.requiresGrad, 'the compiled loss requires grad');
    l.backward();
    compiled.parameters().forEach((p, i) => closeTensors(p.grad, ge[i], `${label} gradient ${i}`));
  });
  ge.forEach((t) => t.dispose());
  eager.zeroGrad();
  compiled.zeroGrad();
  const ex = g.explain();
  assert.equal(ex.eager_for_autograd, 0);
  assert.equal(ex.training.length, 1, 'one training entry');
  const tr = ex.training[0];
  assert.equal(tr.gradients, eager.parameters().length);
  assert.ok(tr.saved.length > 0 && tr.forward_plan && tr.backward_plan, JSON.stringify(tr).slice(0, 400));
  // the min-cut partitioner by default: each saved / recomputed value with its bytes
  assert.equal(tr.partitioner, 'min-cut');
  assert.equal(tr.saved_bytes.length, tr.saved.length);
  assert.equal(tr.recomputed_bytes.length, tr.recomputed.length);
  assert.ok(tr.saved_bytes.every((b) => Number.isInteger(b) && b > 0), JSON.stringify(tr.saved_bytes));
  assert.ok(tr.saved_total_bytes > 0 && tr.saved_total_bytes <= tr.saved_bytes.reduce((a, b) => a + b, 0));
  assert.match(tr.forward_graph, /^tpgraph v1\n%xx = placeholder/);
  assert.match(tr.backward_graph, /%grad_out = placeholder : f32\[\]\n/);
  // training: the same losses at every step
  const oe = makeOpt(eager), oc = makeOpt(compiled);
  const le = trainSteps(oe, steps, () => lossOf(eager, x));
  const lc = trainSteps(oc, steps, () => g(x));
  for (let i = 0; i < steps; i++) {
    assert.ok(Math.abs(le[i] - lc[i]) <= 1e-4 * Math.abs(le[i]) + 1e-6, `${label} step ${i + 1}: compiled ${lc[i]} vs eager ${le[i]}`);
  }
  assert.ok(lc.at(-1) < 0.7 * lc[0], `${label}: the loss went ${lc[0]} -> ${lc.at(-1)}`);
  assert.equal(g.numEntries, 1, 'optimizer steps do not recompile');
  // under noGrad the forward-only graph: a recompile naming the guard
  tp.scope(() => tp.noGrad(() => assert.ok(!g(x).requiresGrad)));
  assert.equal(g.numEntries, 2);
  assert.ok(g.recompileReasons().some((r) => r.includes('is_grad_enabled')), g.recompileReasons().join('; '));
  oe.dispose(), oc.dispose(), eager.dispose(), compiled.dispose(), g.dispose();
  return [le, lc];
}

test('compiled MLP training equals eager (gradients, 40 Adam steps)', () => {
  const { x, y } = sectors(192);
  const [, lc] = compareRuns(() => tp.nn.mlp([2, 32, 3], { seed: 7 }), (m) => new tp.optim.Adam(m, { lr: 0.02 }),
    (m, xx) => tp.nn.crossEntropy(m.forward(xx), y), x, 40, 'mlp');
  assert.ok(lc.at(-1) < 0.3, `mlp loss after 40 steps ${lc.at(-1)}`);
  x.dispose(), y.dispose();
});

test('compiled TransformerEncoderLayer training equals eager (gradients, 15 AdamW steps)', () => {
  const x = tp.randn([1, 16, 32], { seed: 5 }), target = tp.randn([1, 16, 32], { seed: 6 });
  compareRuns(() => new tp.nn.TransformerEncoderLayer(32, 4, 64, { seed: 3 }),
    (m) => new tp.optim.AdamW(m, { lr: 0.01, weightDecay: 0.01 }), (m, xx) => tp.nn.mseLoss(m.forward(xx), target),
    x, 15, 'block');
  x.dispose(), target.dispose();
});

test('a compiled function whose input requires grad: the input gradient', () => {
  tp.scope(() => {
    const w = tp.tensor([1, 2, 3]);
    const g = tp.compile((x) => x.mul(w).mul(x.mul(w)).sum());
    const x = tp.tensor([1, 1, 2]).requiresGrad_();
    const y = g(x);
    y.backward();
    assert.deepEqual(Array.from(x.grad.toArray()), [2, 8, 36]); // 2 x w^2
    assert.throws(() => y.backward(), /second time/);
    g.dispose();
  });
});

test('the backend compiles both graphs; chains, non-scalar outputs, unused inputs, dynamic', () => {
  tp.scope(() => {
    const x = tp.tensor([1, 2, 3]).requiresGrad_(), w = tp.tensor([1, 1, 2]).requiresGrad_();
    const seen = [];
    const g = tp.compile((a) => a.mul(w).mul(a).sum(), { backend: (gm, ins) => { seen.push(ins.length); return (...xs) => gm.run(xs); } });
    g(x).backward();
    assert.deepEqual(seen, [2, 3], 'forward graph (x, w), backward graph (saved x, saved w, grad_out)');
    assert.deepEqual(Array.from(x.grad.toArray()), [2, 4, 12]); // 2 x w
    assert.deepEqual(Array.from(w.grad.toArray()), [1, 4, 9]); // x^2
    x.grad = null, w.grad = null;
    // the compiled call's input comes from an eager op: the gradient goes on through it
    const t = tp.compile((a) => a.tanh());
    t(x.mul(3)).sum().backward();
    Array.from(x.grad.toArray()).forEach((v, i) => assert.ok(Math.abs(v - 3 * (1 - Math.tanh(3 * (i + 1)) ** 2)) < 1e-6));
    x.grad = null;
    // a non-scalar output with an explicit gradient; an unused input gets none
    const sq = tp.compile((a, b) => a.mul(a));
    const u = tp.tensor([5, 6]).requiresGrad_();
    sq(x, u).backward(tp.tensor([1, 0, 2]));
    assert.deepEqual(Array.from(x.grad.toArray()), [2, 0, 12]);
    assert.equal(u.grad, null);
    x.grad = null;
    // dynamic: training entries guard exact shapes
    const d = tp.compile((a) => a.mul(a).sum(), { dynamic: true });
    const x2 = tp.tensor([1, 2]).requiresGrad_();
    d(x).backward(), d(x2).backward();
    assert.deepEqual(Array.from(x.grad.toArray()), [2, 4, 6]);
    assert.deepEqual(Array.from(x2.grad.toArray()), [2, 4]);
    assert.equal(d.numEntries, 2);
    g.dispose(), t.dispose(), sq.dispose(), d.dispose();
  });
});

test('nested regions: fwCompiler / bwCompiler get the region\'s forward and backward graphs, once, and gradients equal eager\'s', () => {
  tp.scope(() => {
    const w = tp.tensor([1, 2, 3]).requiresGrad_();
    const seen = { fw: [], bw: [] };
    const stax = tp.compiler.lookupBackend('stax');
    const record = (which) => (gm, ex) => { seen[which].push({ text: gm.print(), shapes: ex.map((t) => t.shape) }); return stax(gm, ex); };
    const opts = new tp.compiler.NestedCompileRegionOptions({ fwCompiler: record('fw'), bwCompiler: record('bw') });
    const region = tp.compiler.nestedCompileRegion((x) => x.mul(w).tanh(), { options: opts });
    const x = tp.tensor([0.1, 0.2, 0.3]);
    const f = tp.compile((xx) => region(xx).sum());
    for (let it = 0; it < 3; it++) {
      w.grad = null;
      f(x).backward();
      const want = [0.1, 0.2, 0.3].map((v, i) => v * (1 - Math.tanh(v * (i + 1)) ** 2)); // x (1 - tanh^2(x w))
      Array.from(w.grad.toArray()).forEach((v, i) => assert.ok(Math.abs(v - want[i]) < 1e-6, `${v} vs ${want[i]}`));
    }
    assert.equal(seen.fw.length, 1, 'fw_compiler: once per region and key per specialization');
    assert.equal(seen.bw.length, 1, 'bw_compiler: once');
    // the region's forward: (x, w) -> its output and what its backward saves
    assert.match(seen.fw[0].text, /^tpgraph v1\n%x0 = placeholder : f32\[3\]\n%param0 = placeholder : f32\[3\]\n%0 = mul\(%x0, %param0\) : f32\[3\]\n%1 = tanh\(%0\) : f32\[3\]\noutput\(%1/);
    assert.deepEqual(seen.fw[0].shapes, [[3], [3]]);
    // its backward: (saved..., grad_out) -> the gradient of w (x does not require grad)
    assert.match(seen.bw[0].text, /%grad_out = placeholder : f32\[3\]/);
    assert.match(seen.bw[0].text, /output\(%\d+\)\n$/);
    const ex = f.explain();
    assert.equal(ex.eager_for_autograd, 0);
    assert.equal(ex.training.length, 1);
    // fullgraph: compiled for training too
    const ff = tp.compile((xx) => region(xx).sum(), { fullgraph: true });
    w.grad = null;
    ff(x).backward();
    assert.ok(Math.abs(w.grad.toArray()[2] - 0.3 * (1 - Math.tanh(0.9) ** 2)) < 1e-6);
    assert.equal(seen.fw.length, 2, 'a new compiled function: a new specialization');
    f.dispose(), ff.dispose();
  });
});

test('nested regions: compilers that fail or return something invalid are clear errors; the runtime stays usable', () => {
  tp.scope(() => {
    const w = tp.tensor([1, 2, 3]).requiresGrad_();
    const stax = tp.compiler.lookupBackend('stax');
    const x = tp.tensor([0.1, 0.2, 0.3]);
    const cases = [
      [{ fwCompiler: () => 42 }, /returned 42; a backend must return a callable|must return a callable/],
      [{ bwCompiler: () => 'no' }, /must return a callable/],
      [{ fwCompiler: () => { throw new RangeError('my compiler gave up'); } }, /my compiler gave up/],
      [{ fwCompiler: (gm, ex) => { const run = stax(gm, ex); return (...a) => run(...a).slice(0, 0); } },
        /the function fw_compiler returned gave 0 tensors; its graph has \d+ outputs/],
      [{ bwCompiler: () => () => [tp.zeros([7])] }, /result 0 of the function bw_compiler returned is float32 \[7\]; its graph gives float32 \[3\]/],
    ];
    for (const [o, re] of cases) {
      const region = tp.compiler.nestedCompileRegion((t) => t.mul(w).tanh(), { options: new tp.compiler.NestedCompileRegionOptions(o) });
      const f = tp.compile((xx) => region(xx).sum());
      assert.throws(() => f(x).backward(), re);
      f.dispose();
      // usable: a good compiled function trains
      const good = tp.compiler.nestedCompileRegion((t) => t.mul(w).tanh());
      const g = tp.compile((xx) => good(xx).sum());
      w.grad = null;
      g(x).backward();
      assert.ok(Math.abs(w.grad.toArray()[0] - 0.1 * (1 - Math.tanh(0.1) ** 2)) < 1e-6);
      g.dispose();
    }
  });
});

test('a relu gradient, where(x > 0, g, 0), is one maskpos in the generated Wasm: the bits of eager', () => {
  tp.scope(() => {
    const g = tp.graph.parse('tpgraph v1\n%x = placeholder : f32[40]\n%y = placeholder : f32[40]\n' +
      '%0 = gt(%x, 0.0) : b8[40]\n%1 = where(%0, %y, 0.0) : f32[40]\n%2 = mul(%1, 3.0) : f32[40]\noutput(%2)\n');
    const sp = [NaN, Infinity, -Infinity, 0, -0, -1.5, 2, 1e-40, -7, 5];
    const x = tp.tensor(Float32Array.from({ length: 40 }, (_, i) => sp[i % 10]));
    const y = tp.tensor(Float32Array.from({ length: 40 }, (_, i) => (i % 4 === 3 ? -0 : sp[(i * 3) % 10])));
    const f = tp.compile((a, b) => g.run([a, b]), { backend: 'stax' });
    const got = [f(x, y)].flat()[0].toArray(), want = g.run([x, y])[0].toArray();
    const bits = (v) => Array.from(new Uint32Array(Float32Array.from(v).buffer));
    assert.deepEqual(bits(got), bits(want));
    // hand values: x NaN / 0 / -0 / negative give +0, x > 0 passes 3 y
    assert.ok(Object.is(want[0], 0) && Object.is(want[4], 0) && Object.is(want[3], 0) && want[6] === 3 * sp[8]);
    const plan = f.explain().backend_plans[0];
    assert.deepEqual(plan.kernel_kinds, ['pointwise']);
    if (tp.isa.includes('simd')) assert.equal(plan.generated, 1);
    f.dispose();
  });
});

test('softmax and layer_norm backward: one generated row kernel each, gradients equal eager', () => {
  tp.scope(() => {
    // softmax over the last dim with masked (-inf) entries; layer_norm with weight and bias
    const xs = tp.randn([2, 4, 16, 16]), mask = tp.randn([2, 4, 16, 16]).gt(1.5);
    const W = tp.randn([2, 4, 16, 16]);
    const gam = tp.randn([32]), bet = tp.randn([32]), W2 = tp.randn([24, 32]);
    const cases = [
      [(a) => tp.softmax(a, -1).mul(W).sum(), () => tp.where(mask, -Infinity, xs), []],
      [(a) => tp.layerNorm(a, [32], gam, bet, { eps: 1e-5 }).mul(W2).sum(), () => tp.randn([24, 32]), [gam, bet]],
    ];
    for (const [fn, mk, ps] of cases) {
      const x = mk().requiresGrad_();
      ps.forEach((p) => p.requiresGrad_());
      fn(x).backward();
      const want = [x, ...ps].map((t) => t.grad.detach());
      [x, ...ps].forEach((t) => { t.grad = null; });
      const f = tp.compile(fn);
      f(x).backward();
      [x, ...ps].forEach((t, i) => closeTensors(t.grad, want[i], `gradient ${i}`));
      const bp = f.explain().training[0].backward_plan;
      // one row kernel (sum(g * y) then y * (g - s); layer_norm: two means then dx), generated
      assert.equal(bp.kernel_kinds.filter((k) => k === 'row').length, 1, JSON.stringify(bp.kernel_kinds));
      if (tp.isa.includes('simd')) assert.ok(bp.kernel_generated[bp.kernel_kinds.indexOf('row')]);
      ps.forEach((p) => { p.grad = null; p.requiresGrad_(false); });
      f.dispose();
    }
  });
});

test('explain().training stays valid JSON when the saved list outgrows its text (20 inputs with 250-character names)', () => {
  tp.scope(() => {
    const w = tp.tensor(Float32Array.from({ length: 12 }, (_, i) => Math.cos(i)), { shape: [3, 4] }).requiresGrad_();
    const keys = Array.from({ length: 20 }, (_, i) => String.fromCharCode(97 + i).repeat(250));
    const f = (d) => keys.map((k) => tp.tanh(tp.linear(d[k], w))).reduce((a, b) => a.add(b)).sum();
    const d = Object.fromEntries(keys.map((k, i) => [k, tp.tensor(Float32Array.from({ length: 8 }, (_, j) => j * 0.1 + i), { shape: [2, 4] })]));
    const g = tp.compile(f);
    g(d).backward();
    const t = g.explain().training[0]; // throws SyntaxError when an entry is cut in the middle
    // the 20 inputs are saved (references) with values of the forward; the
    // lists keep whole entries only (fewer than the exact count), names and
    // bytes stay paired
    const inputs = t.saved.filter((s) => / \(input\)$/.test(s));
    assert.ok(t.saved_count >= 20, `saved_count ${t.saved_count}`);
    assert.ok(t.saved.length > 0 && t.saved.length < t.saved_count, `${t.saved.length} of ${t.saved_count} entries listed`);
    assert.equal(t.saved_bytes.length, t.saved.length);
    assert.ok(inputs.length > 0);
    for (const s of t.saved) assert.match(s, /^%(\d+ \([a-z_0-9]+\)|d_([a-t])\2{249} \(input\))$/);
    g.dispose();
  });
});

test('memoryStats: live tensor storage and its high-water mark since the last reset', () => {
  const m0 = tp.memoryStats({ resetPeak: true });
  assert.equal(tp.memoryStats().peakBytes, m0.liveBytes);
  const a = tp.zeros([1000]);
  a.dispose();
  const b = tp.zeros([500]);
  const m1 = tp.memoryStats();
  assert.equal(m1.liveBytes, m0.liveBytes + 2000);
  assert.equal(m1.peakBytes, m0.liveBytes + 4000);
  assert.equal(tp.memoryStats({ resetPeak: true }).peakBytes, m0.liveBytes + 4000);
  assert.equal(tp.memoryStats().peakBytes, m0.liveBytes + 2000);
  b.dispose();
  assert.throws(() => tp.memoryStats(3), /memoryStats: options must be an object, got number/);
});

test('no leaks', () => {
  tp.reset();
  assert.equal(tp.liveTensors(), live0);
});
