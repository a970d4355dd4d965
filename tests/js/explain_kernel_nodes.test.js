// explain().backend_plans[i].kernel_nodes: for each kernel of a stax plan,
// the graph nodes it computes. Checked against plans worked out by hand from
// the fusion rules (src/lower/schedule.c): a GEMM takes its elementwise
// epilogue, a row kernel (softmax) its elementwise prologue, a value with two
// users is computed once by its own kernel; and on a graph of 300+ nodes, the
// lists are disjoint, name nodes of g.graph(), and cover every op.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';

// op of each %name in the graph text
function opsByName(text) {
  const m = new Map();
  for (const line of text.split('\n')) {
    const r = /^%([A-Za-z0-9_.]+) = (\w+)/.exec(line);
    if (r) m.set(r[1], r[2]);
  }
  return m;
}

function plan(fn, ...inputs) {
  const g = tp.compile(fn, { backend: 'stax' });
  try {
    tp.scope(() => { g(...inputs); });
    const p = g.explain().backend_plans.at(-1);
    const ops = opsByName(g.graph());
    return { p, ops, named: p.kernel_nodes.map((ks) => ks.map((n) => ops.get(n) ?? `fresh:${n}`)) };
  } finally {
    g.dispose();
  }
}

test('kernel_nodes: a GEMM with its epilogue, softmax with its prologue, a shared value', () => {
  tp.scope(() => {
    const x = tp.randn([8, 16], { seed: 1 });
    const W = tp.randn([16, 32], { seed: 2 });
    const b = tp.randn([32], { seed: 3 });
    // matmul -> add -> relu: one GEMM kernel with add and relu as its epilogue
    const a = plan((x) => tp.matmul(x, W).add(b).relu(), x);
    assert.equal(a.p.kernels, 1, JSON.stringify(a.p));
    assert.equal(a.p.kernel_nodes.length, 1);
    assert.deepEqual(a.named[0].slice().sort(), ['add', 'matmul', 'relu'], JSON.stringify(a.named));
    assert.deepEqual(a.p.kernel_kinds, ['gemm']);
    // (x * 2 + 1) -> softmax: one row kernel with its prologue
    const s = plan((x) => tp.softmax(x.mul(2).add(1), -1), x);
    assert.equal(s.p.kernels, 1, JSON.stringify(s.p));
    assert.deepEqual(s.named[0].slice().sort(), ['add', 'mul', 'softmax'], JSON.stringify(s.named));
    assert.deepEqual(s.p.kernel_kinds, ['row']);
    // e = exp(x) has two users: its own kernel; (e + 1) + (e * 2) one more
    const d = plan((x) => { const e = x.exp(); return e.add(1).add(e.mul(2)); }, x);
    assert.equal(d.p.kernels, 2, JSON.stringify(d.p));
    assert.deepEqual(d.named.map((k) => k.slice().sort()), [['exp'], ['add', 'add', 'mul']], JSON.stringify(d.named));
    assert.deepEqual(d.p.kernel_kinds, ['pointwise', 'pointwise']);
  });
});

test('kernel_nodes on a graph of 300+ nodes: disjoint, named in g.graph(), every op covered', () => {
  tp.scope(() => {
    const x = tp.randn([4, 32], { seed: 1 });
    const Ws = Array.from({ length: 60 }, (_, i) => tp.randn([32, 32], { seed: 10 + i }).mul(0.1));
    const f = (x) => {
      let h = x;
      for (const W of Ws) {
        const y = tp.matmul(h, W);
        h = y.tanh().add(h).mul(0.5).add(y.sigmoid()); // y shared: GEMM out, then one pointwise chain
      }
      return h;
    };
    const { p, ops } = plan(f, x);
    assert.ok(ops.size >= 300, `${ops.size} nodes`);
    assert.equal(p.kernel_nodes.length, p.kernels);
    assert.equal(p.kernel_kinds.length, p.kernels);
    for (const kind of ['gemm', 'conv', 'pointwise', 'row', 'op']) assert.equal(p.kernel_kinds.filter((k) => k === kind).length, p[kind], kind);
    const seen = new Map();
    p.kernel_nodes.forEach((ks, k) => {
      assert.ok(ks.length >= 1, `kernel ${k} computes no node`);
      for (const n of ks) {
        assert.ok(!seen.has(n), `%${n} is in kernels ${seen.get(n)} and ${k}`);
        seen.set(n, k);
      }
    });
    for (const [n, op] of ops) {
      if (op === 'placeholder' || op === 'get_attr') assert.ok(!seen.has(n), `input/constant %${n} is in a kernel`);
      else assert.ok(seen.has(n), `%${n} (${op}) is in no kernel`);
    }
    // 60 GEMMs, each with a kernel of its own
    const gemmKernels = p.kernel_nodes.filter((ks) => ks.some((n) => ops.get(n) === 'matmul'));
    assert.equal(gemmKernels.length, 60);
    assert.equal(p.gemm, 60);
  });
});

// Lowering rewrites nodes (conv_gemm: a 1x1 conv becomes reshapes and a
// GEMM; conv_bn: a conv followed by a per-channel scale and shift becomes a
// new conv with folded weights): the made nodes keep the captured node they
// came from, so every name in kernel_nodes is a node of g.graph() and the
// rewritten node is named in exactly one kernel (an older core named them
// by fresh numbers that g.graph() does not have).
test('kernel_nodes names captured nodes after rewrites: 1x1 conv as GEMM, conv with a folded scale and shift', () => {
  tp.scope(() => {
    const x = tp.randn([1, 8, 6, 6], { seed: 1 });
    const W1 = tp.randn([16, 8, 1, 1], { seed: 2 }).mul(0.3);
    const b1 = tp.randn([16], { seed: 3 });
    const c = plan((x) => tp.conv2d(x, W1, b1).relu(), x);
    for (const ks of c.named) for (const op of ks) assert.ok(!op.startsWith('fresh:'), `a made node is not named by its origin: ${JSON.stringify(c.p.kernel_nodes)} (${JSON.stringify(c.named)})`);
    const convKernels = c.named.map((ks, k) => [ks, k]).filter(([ks]) => ks.includes('conv2d'));
    assert.equal(convKernels.length, 1, `the conv is in one kernel: ${JSON.stringify(c.named)}`);
    const [ks, k] = convKernels[0];
    assert.equal(c.p.kernel_kinds[k], 'gemm', 'the 1x1 conv runs as a GEMM');
    assert.ok(ks.includes('relu'), `the relu is fused into the conv's GEMM: ${JSON.stringify(c.named)}`);
    assert.equal(ks.filter((op) => op === 'conv2d').length, 1, 'named once per kernel');

    // conv_bn: conv2d(x, W, b) * a + c with per-channel constants -> one conv with W * a, b * a + c
    const x3 = tp.randn([1, 4, 6, 6], { seed: 4 });
    const W3 = tp.randn([8, 4, 3, 3], { seed: 5 }).mul(0.2);
    const b3 = tp.randn([8], { seed: 6 });
    const a = tp.randn([8, 1, 1], { seed: 7 }), sh = tp.randn([8, 1, 1], { seed: 8 });
    const f = plan((x) => tp.conv2d(x, W3, b3, { padding: 1 }).mul(a).add(sh).relu(), x3);
    // one conv kernel with the relu in its epilogue (docs/kernel-ir.md, conv kernels)
    assert.deepEqual(f.p.kernel_kinds, ['conv'], JSON.stringify(f.p));
    assert.deepEqual(f.named, [['conv2d', 'relu']], `the folded conv is named by the captured conv: ${JSON.stringify(f.p.kernel_nodes)}`);
  });
});

test('kernel_generated: one flag per kernel, as many true as `generated` counts', async () => {
  const x = tp.randn([8, 64], { seed: 1 });
  const W = tp.randn([64, 64], { seed: 2 }).mul(0.1);
  const g = tp.compile((x) => tp.matmul(x, W).relu().add(x).tanh(), { backend: 'stax' });
  try {
    tp.scope(() => { g(x); });
    await g.ready;
    tp.scope(() => { g(x); });
    const p = g.explain().backend_plans.at(-1);
    assert.equal(p.kernel_generated.length, p.kernels);
    assert.ok(p.kernel_generated.every((v) => typeof v === 'boolean'));
    assert.equal(p.kernel_generated.filter(Boolean).length, p.generated, JSON.stringify(p));
    // the Wasm core generates code for this plan; a native core has none
    if (typeof WebAssembly === 'object' && tp.isa?.includes?.('simd')) assert.ok(p.generated >= 1, JSON.stringify(p));
  } finally {
    g.dispose();
    x.dispose();
    W.dispose();
  }
});
