// Training from JS: tp.optim (SGD, Adam, AdamW: fused steps in the core)
// against hand-computed steps, tp.nn losses against plain-JS doubles, an
// MLP trained on a fixed synthetic task to a stated loss and accuracy,
// bad arguments, and no leaked tensors once the model and optimizer are
// disposed.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';
import { sectors, trainSteps } from './_train.mjs';

const live0 = tp.liveTensors();
const close = (got, want, tol, msg) => {
  assert.equal(got.length, want.length, msg);
  for (let i = 0; i < want.length; i++) assert.ok(Math.abs(got[i] - want[i]) <= tol, `${msg} [${i}]: ${got[i]} vs ${want[i]}`);
};


test('one step of SGD (momentum, weight decay), Adam and AdamW by hand', () => {
  tp.scope(() => {
    const p = tp.tensor([1, 2]).requiresGrad_();
    const sgd = new tp.optim.SGD([p], { lr: 0.1, momentum: 0.9, weightDecay: 0.01 });
    p.grad = tp.tensor([0.5, -1]);
    sgd.step();
    close(Array.from(p.toArray()), [0.949, 2.098], 1e-6, 'sgd step 1'); // d = g + 0.01 p
    sgd.step(); // the same gradient again: buf = 0.9 buf + d
    close(Array.from(p.toArray()), [0.852151, 2.284102], 1e-6, 'sgd step 2');
    sgd.dispose();
    for (const [Opt, want] of [[tp.optim.Adam, [0.99, -0.99]], [tp.optim.AdamW, [0.999 - 0.01, -0.999 + 0.01]]]) {
      const q = tp.tensor([1, -1]).requiresGrad_();
      const opt = new Opt([q], { lr: 0.01, weightDecay: Opt === tp.optim.AdamW ? 0.1 : 0 });
      q.grad = tp.tensor([0.1, -0.2]);
      opt.step(); // step 1: moves by lr * sign(g)
      close(Array.from(q.toArray()), want, 1e-6, Opt.name);
      opt.zeroGrad();
      assert.equal(q.grad, null);
      opt.dispose();
    }
  });
});

test('mseLoss and crossEntropy against plain-JS doubles', () => {
  tp.scope(() => {
    const mse = tp.nn.mseLoss(tp.tensor([1, 2, 3]), tp.tensor([1, 0, 5]));
    close([mse.item()], [8 / 3], 1e-6, 'mse');
    const logits = [0.5, -1, 2, 0.1, 0.3, 0.3, -2, 1, 1.5];
    const labels = [2, -100, 1];
    const eps = 0.2;
    let total = 0, count = 0;
    for (let n = 0; n < 3; n++) {
      if (labels[n] === -100) continue;
      const row = logits.slice(3 * n, 3 * n + 3);
      const m = Math.max(...row);
      const lse = m + Math.log(row.reduce((a, v) => a + Math.exp(v - m), 0));
      const smooth = row.reduce((a, v) => a + (lse - v), 0) / 3;
      total += (1 - eps) * (lse - row[labels[n]]) + eps * smooth;
      count++;
    }
    const ce = tp.nn.crossEntropy(tp.tensor(logits, { shape: [3, 3] }), tp.tensor(labels, { dtype: 'int32' }),
      { labelSmoothing: eps });
    close([ce.item()], [total / count], 1e-6, 'cross-entropy');
    const ceSum = tp.nn.crossEntropy(tp.tensor(logits, { shape: [3, 3] }), tp.tensor(labels, { dtype: 'int32' }),
      { labelSmoothing: eps, reduction: 'sum' });
    close([ceSum.item()], [total], 1e-6, 'cross-entropy sum');
  });
});


test('an MLP trains on a fixed synthetic task (Adam, 150 steps: loss < 0.15, accuracy > 95%)', () => {
  const { x, y, labels } = sectors(192);
  const model = tp.nn.mlp([2, 32, 3], { seed: 7 });
  const opt = new tp.optim.Adam(model, { lr: 0.02 });
  const losses = trainSteps(opt, 150, () => tp.nn.crossEntropy(model.forward(x), y));
  const first = losses[0], last = losses.at(-1);
  const acc = tp.scope(() => tp.noGrad(() => {
    const pred = tp.argtopk(model.forward(x), 1, { dim: 1 }).toArray();
    return labels.filter((l, i) => Number(pred[i]) === l).length / labels.length;
  }));
  if (process.env.TP_TRAIN_VERBOSE) console.log({ first, last, acc });
  assert.ok(first > 0.9, `the first loss ${first} is near ln 3`);
  assert.ok(last < 0.15, `loss after 150 steps: ${last}`);
  assert.ok(acc > 0.95, `accuracy ${acc}`);
  // the same run natively (tests/c/ops/test_train.c): 1.108086 -> 0.036986
  assert.ok(Math.abs(first - 1.108086) < 1e-5 && Math.abs(last - 0.036986) < 5e-4,
    `the Wasm run differs from the native one: ${first} -> ${last}`);
  // SGD with momentum on the same task also learns
  const model2 = tp.nn.mlp([2, 32, 3], { seed: 7 });
  const sgd = new tp.optim.SGD(model2, { lr: 0.2, momentum: 0.9 });
  const l2 = trainSteps(sgd, 150, () => tp.nn.crossEntropy(model2.forward(x), y)).at(-1);
  if (process.env.TP_TRAIN_VERBOSE) console.log({ l2 });
  assert.ok(l2 < 0.3, `SGD loss after 150 steps: ${l2}`);
  for (const o of [opt, sgd, model, model2, x, y]) o.dispose();
});

test('bad arguments are errors naming them; the runtime stays usable', () => {
  tp.scope(() => {
    const p = tp.tensor([1, 2]);
    assert.throws(() => new tp.optim.SGD([p]), /every parameter must be a leaf that requires grad/);
    p.requiresGrad = true;
    assert.throws(() => new tp.optim.SGD([p], { lr: -1 }), /lr: -1 is out of range/);
    assert.throws(() => new tp.optim.Adam([p], { betas: [1, 0.9] }), /beta1: 1 is out of range/);
    assert.throws(() => new tp.optim.Adam([]), TypeError);
    assert.throws(() => tp.nn.mseLoss(tp.tensor([1]), tp.tensor([1, 2])), /same shape/);
    assert.throws(() => tp.nn.mseLoss(tp.tensor([1]), tp.tensor([1]), { reduction: 'avg' }), /reduction "avg"/);
    assert.throws(() => tp.nn.crossEntropy(tp.zeros([2, 3]), tp.tensor([0, 3], { dtype: 'int32' })),
      /target\[1\] = 3 is not a class/);
    assert.throws(() => tp.nn.crossEntropy(tp.zeros([2, 3]), tp.tensor([0, 1], { dtype: 'int32' }), { labelSmoothing: 2 }),
      /labelSmoothing: 2 is out of range/);
    assert.throws(() => new tp.nn.Linear(0, 2), /inFeatures must be a positive integer/);
    const sgd = new tp.optim.SGD([p], { lr: 0.5 });
    p.grad = tp.tensor([2, 2]);
    sgd.step();
    assert.deepEqual(Array.from(p.toArray()), [0, 1]);
  });
});

test('no tensors leak', () => {
  assert.equal(tp.liveTensors(), live0);
});

/** 8x8 images of a horizontal, vertical or diagonal bar (3 classes) with noise (a fixed LCG). */
function bars(n) {
  let s = 99;
  const r = () => ((s = (s * 1103515245 + 12345) % 2147483648) / 2147483648);
  const xs = new Float32Array(n * 64), ys = [];
  for (let i = 0; i < n; i++) {
    const c = i % 3, p = 1 + Math.floor(r() * 6);
    for (let j = 0; j < 64; j++) xs[i * 64 + j] = 0.2 * (r() - 0.5);
    for (let t = 0; t < 8; t++) {
      const [row, col] = c === 0 ? [p, t] : c === 1 ? [t, p] : [t, t];
      xs[i * 64 + row * 8 + col] += 1;
    }
    ys.push(c);
  }
  return { x: tp.tensor(xs, { shape: [n, 1, 8, 8] }), y: tp.tensor(ys, { dtype: 'int32' }) };
}

test('a small CNN (conv2d, max pool, linear) trains on bar images (Adam, 40 steps: loss < 0.2)', () => {
  const { x, y } = bars(48);
  const model = new tp.nn.Sequential(
    new tp.nn.Conv2d(1, 4, 3, { padding: 1, seed: 5 }), new tp.nn.ReLU(), new tp.nn.MaxPool2d(2),
    new tp.nn.Conv2d(4, 4, 3, { padding: 1, groups: 2, seed: 6 }), new tp.nn.ReLU(), new tp.nn.AvgPool2d(2),
    new tp.nn.Flatten(), new tp.nn.Linear(16, 3, { seed: 7 }));
  assert.equal(model.parameters().length, 6);
  const opt = new tp.optim.Adam(model, { lr: 0.05 });
  const losses = trainSteps(opt, 40, () => tp.nn.crossEntropy(model.forward(x), y));
  const first = losses[0], last = losses.at(-1);
  if (process.env.TP_TRAIN_VERBOSE) console.log({ cnnFirst: first, cnnLast: last });
  assert.ok(first > 0.9, `first loss ${first}`);
  assert.ok(last < 0.2, `CNN loss after 40 steps: ${last}`);
  for (const o of [opt, model, x, y]) o.dispose();
});

test('no tensors leak after the CNN', () => {
  assert.equal(tp.liveTensors(), live0);
});

test('a pre-LN transformer encoder block: parameter gradients against finite differences, then it fits a target', () => {
  const B = 2, S = 4, D = 8;
  const block = new tp.nn.TransformerEncoderLayer(D, 2, 16, { seed: 11 });
  assert.equal(block.parameters().length, 2 + 8 + 2 + 4);
  const x = tp.randn([B, S, D], { seed: 3 }), target = tp.randn([B, S, D], { seed: 4 });
  const lossOf = () => tp.scope(() => tp.nn.mseLoss(block.forward(x), target).item());
  // d loss / d (ln1.weight, q.weight) against central differences of the float32 forward
  tp.scope(() => {
    block.zeroGrad();
    tp.nn.mseLoss(block.forward(x), target).backward();
  });
  for (const p of [block.ln1.weight, block.q.weight, block.ff2.bias]) {
    const g = tp.scope(() => p.grad.toArray());
    const data = p.toArray();
    for (const i of [0, 3, data.length - 1]) {
      const at = (v) => tp.noGrad(() => tp.scope(() => {
        const d = data.slice();
        d[i] = v;
        p.assign(tp.tensor(d, { shape: p.shape }));
        return lossOf();
      }));
      const eps = 1e-2;
      const num = (at(data[i] + eps) - at(data[i] - eps)) / (2 * eps);
      at(data[i]);
      assert.ok(Math.abs(num - g[i]) <= 2e-3 + 2e-2 * Math.abs(num), `d/dp[${i}]: autograd ${g[i]}, differences ${num}`);
    }
  }
  const opt = new tp.optim.AdamW(block, { lr: 0.01 });
  const first = lossOf();
  const last = trainSteps(opt, 30, () => tp.nn.mseLoss(block.forward(x), target)).at(-1);
  if (process.env.TP_TRAIN_VERBOSE) console.log({ blockFirst: first, blockLast: last });
  assert.ok(last < 0.5 * first, `the block's loss ${first} -> ${last} in 30 AdamW steps`);
  for (const o of [opt, block, x, target]) o.dispose();
});

test('no tensors leak after the transformer block', () => {
  assert.equal(tp.liveTensors(), live0);
});
