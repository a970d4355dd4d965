// Native-vs-Wasm parity of a compiled training step (docs/training.md,
// "Native parity of a training step"): the step's forward and backward
// graphs, taken with their data from the compiled function
// (graph({ withData: true }) and graph({ withData: true, backward: true })),
// run natively by `tpc run` on the same inputs, parameters and saved values
// (explain().training[0].saved_sources says where each saved value comes
// from); the native loss and gradients must equal the Wasm step's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import * as tp from '../../js/index.js';

const repo = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..', '..');
const tpc = process.env.TPC || join(repo, 'build', 'native', 'tpc');

function close(got, want, tol, what) {
  assert.equal(got.length, want.length, `${what}: length`);
  for (let i = 0; i < want.length; i++) {
    assert.ok(Math.abs(got[i] - want[i]) <= tol * (1 + Math.abs(want[i])), `${what}[${i}]: native ${got[i]}, Wasm ${want[i]}`);
  }
}

const outputsOf = (text) => /\noutput\(([^)]*)\)/.exec(text)[1].split(',').length;

test('a compiled training step: forward and backward graphs run by tpc equal the Wasm step',
  { skip: !existsSync(tpc) && `no ${tpc} (bash scripts/build.sh native)` }, () => {
    const dir = mkdtempSync(join(tmpdir(), 'tp-train-parity-'));
    const net = tp.nn.mlp([16, 32, 4], { seed: 3 });
    const x = tp.randn([8, 16], { seed: 5 }), t = tp.randn([8, 4], { seed: 6 });
    const step = tp.compile((x, t) => tp.nn.mseLoss(net.forward(x), t), { backend: 'stax' });
    try {
      const loss = step(x, t);
      loss.backward();
      const tr = step.explain().training[0];
      const params = net.parameters();
      assert.equal(tr.parameters, params.length);
      const fw = step.graph({ withData: true }), bw = step.graph({ withData: true, backward: true });
      assert.match(fw, /%param0 = placeholder/);
      assert.match(bw, /%grad_out = placeholder/);
      const npy = (name, v) => {
        const p = join(dir, `${name}.npy`);
        writeFileSync(p, v.npy ? v.npy : tp.npy.encode(v));
        return p;
      };
      writeFileSync(join(dir, 'fw.tpg'), fw);
      writeFileSync(join(dir, 'bw.tpg'), bw);
      // the forward graph: the call's inputs by name, then param<p>
      const nfo = outputsOf(fw);
      const fargs = ['run', join(dir, 'fw.tpg'), '--input', `x=${npy('x', x)}`, '--input', `t=${npy('t', t)}`];
      params.forEach((p, i) => fargs.push('--input', `param${i}=${npy(`param${i}`, p.detach())}`));
      for (let j = 0; j < nfo; j++) fargs.push('--output', join(dir, `out${j}.npy`));
      execFileSync(tpc, fargs, { stdio: 'pipe' });
      const out = (j) => tp.npy.decode(readFileSync(join(dir, `out${j}.npy`)));
      const l0 = out(0);
      close(l0.toArray(), [loss.item()], 1e-6, 'loss');
      // the backward graph: saved<k> from where saved_sources says, then grad_out = 1
      const bargs = ['run', join(dir, 'bw.tpg')];
      tr.saved_sources.forEach((src, k) => {
        const [kind, idx] = src.split(' ');
        const file = kind === 'output' ? join(dir, `out${idx}.npy`)
          : kind === 'param' ? join(dir, `param${idx}.npy`)
            : join(dir, `${['x', 't'][Number(idx)]}.npy`);
        bargs.push('--input', `saved${k}=${file}`);
      });
      bargs.push('--input', `grad_out=${npy('grad_out', tp.tensor(new Float32Array([1]), { shape: [] }))}`);
      const nbo = outputsOf(bw);
      assert.equal(nbo, params.length);
      for (let j = 0; j < nbo; j++) bargs.push('--output', join(dir, `grad${j}.npy`));
      execFileSync(tpc, bargs, { stdio: 'pipe' });
      // gradient j is that of gradient_targets[j] ('param p': the forward graph's param<p>)
      assert.equal(tr.gradient_targets.length, nbo);
      tr.gradient_targets.forEach((target, j) => {
        const [kind, idx] = target.split(' ');
        assert.equal(kind, 'param', `gradient ${j} is of ${target}`);
        const p = params[Number(idx)];
        const g = tp.npy.decode(readFileSync(join(dir, `grad${j}.npy`)));
        assert.deepEqual(g.shape, p.shape, `gradient ${j} (${target}): shape`);
        close(g.toArray(), p.grad.toArray(), 1e-5, `gradient ${j} (${target})`);
        g.dispose();
      });
      l0.dispose();
      loss.dispose();
      // not a training call: asking for the backward graph is an error naming it
      const plain = tp.compile((x) => x.relu());
      tp.noGrad(() => plain(x).dispose());
      assert.throws(() => plain.graph({ backward: true }), /did not compile for training/);
      plain.dispose();
    } finally {
      step.dispose();
      for (const p of net.parameters()) p.dispose();
      x.dispose(), t.dispose();
      rmSync(dir, { recursive: true, force: true });
    }
  });
