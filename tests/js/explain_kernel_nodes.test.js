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
