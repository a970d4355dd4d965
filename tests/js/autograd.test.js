// Autograd from JS (js/src/autograd.js over src/ops/autograd.c): gradients
// against hand-computed values and central finite differences of the same
// function evaluated in plain JS doubles; grad / valueAndGrad / noGrad; and
// every error (PyTorch's messages), each leaving the runtime usable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';

const live0 = tp.liveTensors();
const close = (a, b, tol = 1e-4, msg = '') => {
  assert.equal(a.length, b.length, msg);
  for (let i = 0; i < a.length; i++) {
    assert.ok(Math.abs(a[i] - b[i]) <= tol * (1 + Math.abs(b[i])), `${msg} [${i}]: ${a[i]} vs ${b[i]}`);
  }
};

test('requiresGrad, backward and .grad on a hand-computed case', () => {
  tp.scope(() => {
    const x = tp.tensor([1, 2, 3]);
    assert.equal(x.requiresGrad, false);
    x.requiresGrad = true;
    assert.equal(x.isLeaf, true);
    const y = x.mul(x).sum(); // sum x^2 -> 2x
    assert.equal(y.requiresGrad, true);
    assert.equal(y.isLeaf, false);
    y.backward(undefined, { retainGraph: true });
    assert.deepEqual(Array.from(x.grad.toArray()), [2, 4, 6]);
    y.backward(); // accumulates
    assert.deepEqual(Array.from(x.grad.toArray()), [4, 8, 12]);
    x.grad = null;
    assert.equal(x.grad, null);
    // an explicit upstream gradient
    const z = x.mul(3);
    z.backward(tp.tensor([1, 0, -1]));
    assert.deepEqual(Array.from(x.grad.toArray()), [3, 0, -3]);
  });
});

test('an MLP loss: gradients match finite differences in doubles', () => {
  tp.scope(() => {
    const N = 4, I = 3, H = 5, C = 3;
    const xs = Array.from({ length: N * I }, (_, i) => Math.sin(i + 1));
    const w1s = Array.from({ length: H * I }, (_, i) => 0.5 * Math.cos(2 * i + 1));
    const b1s = Array.from({ length: H }, (_, i) => 0.1 * i - 0.2);
    const w2s = Array.from({ length: C * H }, (_, i) => 0.4 * Math.sin(3 * i + 2));
    const labels = [0, 2, 1, 2];
    // plain-JS reference of mean cross-entropy(linear(relu(linear(x))))
    const loss = (w1) => {
      let L = 0;
      for (let n = 0; n < N; n++) {
        const h = [];
        for (let j = 0; j < H; j++) {
          let s = b1s[j];
          for (let i = 0; i < I; i++) s += xs[n * I + i] * w1[j * I + i];
          h.push(Math.max(s, 0));
        }
        const o = [];
        for (let c = 0; c < C; c++) {
          let s = 0;
          for (let j = 0; j < H; j++) s += h[j] * w2s[c * H + j];
          o.push(s);
        }
        const m = Math.max(...o);
        const lse = m + Math.log(o.reduce((a, v) => a + Math.exp(v - m), 0));
        L += lse - o[labels[n]];
      }
      return L / N;
    };
    const x = tp.tensor(xs, { shape: [N, I] });
    const w1 = tp.tensor(w1s, { shape: [H, I] }).requiresGrad_();
    const b1 = tp.tensor(b1s);
    const w2 = tp.tensor(w2s, { shape: [C, H] });
    const idx = tp.tensor(labels.map(BigInt), { dtype: 'int64', shape: [N, 1] });
    const logp = tp.linear(tp.relu(tp.linear(x, w1, b1)), w2).logSoftmax(1);
    const l = tp.gatherElements(logp, idx, 1).mean().neg();
    close([l.item()], [loss(w1s)], 1e-5, 'loss');
    l.backward();
    const g = w1.grad.toArray();
    const eps = 1e-6;
    const num = w1s.map((_, k) => {
      const p = w1s.slice(), m = w1s.slice();
      p[k] += eps;
      m[k] -= eps;
      return (loss(p) - loss(m)) / (2 * eps);
    });
    close(Array.from(g), num, 1e-4, 'dL/dw1');
  });
});

test('grad, valueAndGrad, noGrad', () => {
  tp.scope(() => {
    const f = (a, b) => a.mul(b).add(a.mul(a)).sum(); // d/da = b + 2a, d/db = a
    const a = tp.tensor([1, 2]), b = tp.tensor([3, 5]);
    const ga = tp.grad(f)(a, b);
    assert.deepEqual(Array.from(ga.toArray()), [5, 9]);
    const [v, [gA, gB]] = tp.valueAndGrad(f, { argnums: [0, 1] })(a, b);
    assert.equal(v.item(), 1 * 3 + 2 * 5 + 1 + 4);
    assert.deepEqual(Array.from(gA.toArray()), [5, 9]);
    assert.deepEqual(Array.from(gB.toArray()), [1, 2]);
    assert.equal(a.requiresGrad, false, 'the arguments are left as they were');
    assert.equal(a.grad, null);
    // an argument the function does not use: zeros
    assert.deepEqual(Array.from(tp.grad((p, q) => q.sum(), { argnums: 0 })(a, b).toArray()), [0, 0]);
    const x = tp.tensor([1, 2]).requiresGrad_();
    const y = tp.noGrad(() => x.mul(2));
    assert.equal(y.requiresGrad, false);
    assert.equal(tp.isGradEnabled(), true);
    assert.throws(() => tp.grad((p) => p.mul(2))(a), /one-element/);
  });
});

function stillUsable() {
  tp.scope(() => {
    const x = tp.tensor([1, 2]).requiresGrad_();
    x.mul(x).sum().backward();
    assert.deepEqual(Array.from(x.grad.toArray()), [2, 4]);
  });
}

test('errors: PyTorch messages, and the runtime stays usable', () => {
  tp.scope(() => {
    const i = tp.tensor([1, 2], { dtype: 'int32' });
    assert.throws(() => { i.requiresGrad = true; }, /only Tensors of floating point dtype can require gradients/);
    stillUsable();
    const x = tp.tensor([1, 2, 3, 4], { shape: [2, 2] });
    assert.throws(() => x.backward(), /does not require grad/);
    x.requiresGrad = true;
    const y = x.mul(x);
    assert.throws(() => y.backward(), /grad can be implicitly created only for scalar outputs/);
    assert.throws(() => y.backward(tp.tensor([1, 1])), /Mismatch in shape/);
    assert.throws(() => { y.requiresGrad = false; }, /only change requires_grad flags of leaf/);
    stillUsable();
    const s = y.sum();
    s.backward();
    assert.throws(() => s.backward(), /Trying to backward through the graph a second time/);
    stillUsable();
    const z = tp.ones([2, 2]);
    const p = x.mul(z).sum();
    const v0 = z.version;
    z.assign(tp.full([2, 2], 2));
    assert.equal(z.version, v0 + 1);
    assert.throws(() => p.backward(), /modified by an inplace operation/);
    stillUsable();
    assert.throws(() => x.assign(z), /a leaf Variable that requires grad/);
    assert.throws(() => { x.requiresGrad = 1; }, TypeError);
    assert.throws(() => x.backward(undefined, 3), TypeError);
    assert.throws(() => { x.grad = tp.tensor([1]); }, /assigned grad/);
    stillUsable();
  });
});

test('compiled functions whose tensors require grad: compiled training gives eager\'s gradients', () => {
  tp.scope(() => {
    const w = tp.tensor([1, 2, 3]);
    const f = tp.compile((x) => x.mul(w).mul(x.mul(w)).sum()); // sum((x w)^2)
    const x = tp.tensor([1, 1, 2]);
    assert.equal(f(x).item(), 41); // compiled, nothing requires grad
    x.requiresGrad = true;
    const y = f(x);
    assert.equal(y.requiresGrad, true);
    y.backward();
    assert.deepEqual(Array.from(x.grad.toArray()), [2, 8, 36]); // 2 x w^2
    x.requiresGrad = false;
    w.requiresGrad = true; // a closed-over parameter
    f(x).backward();
    assert.deepEqual(Array.from(w.grad.toArray()), [2, 4, 24]); // 2 w x^2
    assert.equal(tp.noGrad(() => f(x)).requiresGrad, false);
    const ex = f.explain();
    assert.equal(ex.eager_for_autograd, 0);
    assert.equal(ex.training.length, 2, 'x requiring grad, then w: two training entries');
    // noGrad reuses the first, forward-only entry
    assert.deepEqual(f.recompileReasons(), ['inputs[0].requires_grad == False', 'inputs[0].requires_grad == True']);
    f.dispose?.();
  });
});

test('no tensors leak', () => {
  assert.equal(tp.liveTensors(), live0);
});
