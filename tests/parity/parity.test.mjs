// Parity between the Wasm core (this Node process) and the native build:
// each function is traced and compiled here, its graph text (with constant
// data) and inputs are written as files, the native `tpc run` computes the
// same graph, and the outputs must agree: bit for bit for graphs of
// elementwise ops (one formula on every ISA, no FMA contraction), within
// 1e-5 of the output's scale where sums or GEMM change the summation order.
//
// Needs build/native/tpc (TPC=path overrides). Run: node --test tests/parity/
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tp from '../../js/index.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const tpc = process.env.TPC ?? join(root, 'build', 'native', 'tpc');

const W1 = tp.randn([32, 48], { seed: 11 });
const B1 = tp.randn([32], { seed: 12 });
const W2 = tp.randn([8, 32], { seed: 13 });
const G = tp.rand([32], { seed: 14 });

const cases = [
  {
    name: 'elementwise chain (bit-exact)',
    exact: true,
    inputs: () => [tp.randn([1037], { seed: 1 }).mul(3)],
    fn: (x) => tp.tanh(x.mul(1.5).sub(0.25)).mul(tp.sigmoid(x)),
  },
  {
    name: 'every unary op (bit-exact)',
    exact: true,
    inputs: () => [tp.randn([7, 19], { seed: 2 }).mul(4)],
    fn: (x) => [
      tp.exp(x.mul(0.5)), tp.log(tp.abs(x).add(1e-3)), tp.sqrt(tp.abs(x)),
      tp.rsqrt(tp.abs(x).add(1)), tp.relu(x), tp.neg(x),
      tp.gelu(x, { approximate: 'none' }), tp.gelu(x, { approximate: 'tanh' }),
      tp.div(x, tp.abs(x).add(2)), tp.where(tp.gt(x, 0), x, x.mul(0.01)),
    ],
  },
  {
    name: 'broadcasting and views (bit-exact)',
    exact: true,
    inputs: () => [tp.randn([4, 5, 6], { seed: 3 }), tp.randn([6], { seed: 4 })],
    fn: (x, b) => [
      x.transpose(0, 2).add(b.reshape([6, 1, 1])),
      x.permute([1, 0, 2]).slice(0, 1, 5, 2).mul(b),
      tp.concat([x, x.neg()], 1),
      tp.eq(x.cast('int32'), 0).cast('float32').add(tp.lt(x, b).cast('float32')),
    ],
  },
  {
    name: 'MLP from the README (sums: 1e-5)',
    inputs: () => [tp.randn([16, 48], { seed: 5 })],
    fn: (x) => tp.relu(tp.linear(x, W1, B1)).sum({ dim: 1 }),
  },
  {
    name: 'matmul, softmax, layer_norm, reductions (1e-5)',
    inputs: () => [tp.randn([2, 16, 48], { seed: 6 }), tp.randn([48, 40], { seed: 7 })],
    fn: (x, m) => {
      const h = tp.layerNorm(tp.linear(x, W1, B1), [32], G, B1, { eps: 1e-5 });
      const a = tp.softmax(tp.matmul(h, h.transpose(1, 2)).mul(0.125), -1);
      return [
        tp.matmul(a, h), tp.logSoftmax(tp.linear(h, W2), 2), tp.matmul(x, m),
        x.mean({ dim: [0, 2], keepdim: true }), x.max({ dim: 1 }), x.min(),
      ];
    },
  },
  {
    // the graph text carries act_params; batch 1 (gemv) and 3 (GEMM)
    name: 'lstm, gru with activation parameters (GEMM order: 1e-5)',
    inputs: () => [tp.randn([6, 1, 5], { seed: 8 }), tp.randn([4, 3, 5], { seed: 9 })],
    fn: (x1, x3) => {
      const w = tp.randn([2, 28, 5], { seed: 15 }).mul(0.4), r = tp.randn([2, 28, 7], { seed: 16 }).mul(0.4);
      const wg = tp.randn([1, 21, 5], { seed: 17 }).mul(0.4), rg = tp.randn([1, 21, 7], { seed: 18 }).mul(0.4);
      const l = tp.lstm(x1, w, r, { direction: 'bidirectional', activations: ['HardSigmoid', 'Elu', 'Softsign', 'Sigmoid', 'Tanh', 'Tanh'],
        activationParams: [0.25, 0.45, 0.8, 0, 0, 0, 0, 0, 0, 0, 0, 0] });
      const g = tp.gru(x3, wg, rg, { activations: ['Sigmoid', 'ScaledTanh'], activationParams: [0, 0, 0.9, 1.2], linearBeforeReset: true });
      return [l.y, l.c, g.y];
    },
  },
  {
    name: 'integer ops (exact)',
    exact: true,
    inputs: () => [tp.arange(0, 24, 1, { dtype: 'int32' }).reshape([4, 6])],
    fn: (x) => [x.mul(3).sub(7), x.sum({ dim: 0 }), x.max({ dim: 1, keepdim: true }), x.cast('int64').neg()],
  },
];

function flat(v) { return Array.isArray(v) ? v : [v]; }

test('native tpc and the Wasm core compute the same graphs', { skip: !existsSync(tpc) && `no ${tpc}` }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'tp-parity-'));
  try {
    cases.forEach((c, k) => {
      const inputs = c.inputs();
      const g = tp.compiler.compile(c.fn, { backend: 'eager', fullgraph: true });
      g(...inputs); // capture
      const outs = flat(g(...inputs)); // the cached graph
      const text = g.graph({ withData: true });
      assert.ok(text, `${c.name}: no graph`);
      const gpath = join(dir, `g${k}.tpg`);
      writeFileSync(gpath, text);
      const names = [...text.matchAll(/^%(\w+) = placeholder/gm)].map((m) => m[1]);
      assert.equal(names.length, inputs.length, c.name);
      const args = ['run', gpath];
      inputs.forEach((t, i) => {
        const p = join(dir, `g${k}_in${i}.npy`);
        writeFileSync(p, tp.npy.encode(t));
        args.push('--input', `${names[i]}=${p}`);
      });
      outs.forEach((_, i) => args.push('--output', join(dir, `g${k}_out${i}.npy`)));
      execFileSync(tpc, args, { stdio: ['ignore', 'ignore', 'pipe'] });
      outs.forEach((o, i) => {
        const n = tp.npy.decode(readFileSync(join(dir, `g${k}_out${i}.npy`)));
        assert.deepEqual(n.shape, o.shape, `${c.name} output ${i}: shape`);
        assert.equal(n.dtype, o.dtype, `${c.name} output ${i}: dtype`);
        const a = o.toArray(), b = n.toArray();
        if (c.exact) {
          assert.deepEqual(Buffer.from(b.buffer, b.byteOffset, b.byteLength),
            Buffer.from(a.buffer, a.byteOffset, a.byteLength),
            `${c.name} output ${i}: native and Wasm differ in bits`);
        } else {
          let scale = 1, err = 0;
          for (let j = 0; j < a.length; j++) scale = Math.max(scale, Math.abs(a[j]));
          for (let j = 0; j < a.length; j++) err = Math.max(err, Math.abs(a[j] - b[j]));
          assert.ok(err <= 1e-5 * scale, `${c.name} output ${i}: max error ${err} > 1e-5 * ${scale}`);
        }
        n.dispose();
      });
      for (const t of [...inputs, ...outs]) t.dispose();
      g.dispose();
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
