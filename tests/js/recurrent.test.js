// rnn / gru / lstm from JS: the hand-computed values of tests/c/ops/test_ops.c
// (python: math.tanh, 1/(1+exp(-v))), options, errors, and an LSTM inside a
// compiled function checked against eager.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';

const close = (t, want) => {
  const got = [...t.toArray()];
  assert.equal(got.length, want.length);
  got.forEach((g, i) => assert.ok(Math.abs(g - want[i]) <= 1e-6 + 2e-6 * Math.abs(want[i]), `${i}: ${g} vs ${want[i]}`));
};

test('rnn, gru and lstm match hand-computed values', () => {
  tp.scope(() => {
    const x = tp.tensor([[[1]], [[2]]]);
    const { y, h } = tp.rnn(x, tp.tensor([[[0.5]]]), tp.tensor([[[0.25]]]), { bias: tp.tensor([[0.1, -0.2]]) });
    assert.deepEqual(y.shape, [2, 1, 1, 1]);
    close(y, [0.3799489622552249, 0.7594808754663349]);
    close(h, [0.7594808754663349]);
    const rev = tp.rnn(x, tp.tensor([[[0.5]]]), tp.tensor([[[0.25]]]), { bias: tp.tensor([[0.1, -0.2]]), direction: 'reverse' });
    close(rev.y, [0.5219924080270243, 0.7162978701990246]);
    const l = tp.lstm(x, tp.tensor([[[0.1], [0.2], [0.3], [0.4]]]), tp.tensor([[[0.5], [0.6], [0.7], [0.8]]]));
    close(l.y, [0.10824108714580925, 0.2990078049927056]);
    close(l.c, [0.5319044286408334]);
    const g = tp.gru(x, tp.tensor([[[0.1], [0.2], [0.3]]]), tp.tensor([[[0.4], [0.5], [0.6]]]));
    close(g.h, [0.3278302879793118]);
    const short = tp.rnn(x, tp.tensor([[[0.5]]]), tp.tensor([[[0.25]]]), {
      bias: tp.tensor([[0.1, -0.2]]), sequenceLens: tp.tensor([1], { dtype: 'int32' }) });
    close(short.y, [0.3799489622552249, 0]);
    close(short.h, [0.3799489622552249]);
    // activations with parameters (hand-computed: h_t = f(0.5 x_t + 0.25 h_{t-1}) over x = [1, -2])
    const xm = tp.tensor([[[1]], [[-2]]]), w5 = tp.tensor([[[0.5]]]), r25 = tp.tensor([[[0.25]]]);
    close(tp.rnn(xm, w5, r25, { activations: ['LeakyRelu'], activationParams: [0.1, 0] }).y, [0.5, -0.0875]);
    close(tp.rnn(xm, w5, r25, { activations: ['ScaledTanh'], activationParams: [1.5, 0.5] }).y, [0.36737799360556367, -0.6378677192639904]);
    close(tp.rnn(xm, w5, r25, { activations: ['hardsigmoid'] }).y, [0.6, 0.33]); // ONNX's defaults 0.2, 0.5
  });
});

test('recurrent options are checked; bad shapes are errors; the runtime stays usable', () => {
  tp.scope(() => {
    const x = tp.tensor([[[1]], [[2]]]), w = tp.tensor([[[0.5]]]), r = tp.tensor([[[0.25]]]);
    assert.throws(() => tp.rnn(x, w, r, { direction: 'sideways' }), TypeError);
    assert.throws(() => tp.rnn(x, w, r, { activations: ['gelu'] }), TypeError);
    assert.throws(() => tp.rnn(x, w, r, { activations: ['Elu'], activationParams: [1] }), /1 activation parameters, expected 2/);
    assert.throws(() => tp.rnn(x, w, r, { activationParams: ['a'] }), TypeError);
    assert.throws(() => tp.lstm(x, w, r), /W must be \[1, 4, 1\]/);
    assert.throws(() => tp.rnn(x, w, r, { sequenceLens: tp.tensor([5], { dtype: 'int64' }) }), /sequence_lens\[0\] = 5/);
    close(tp.rnn(x, w, r).h, [Math.tanh(0.5 * 2 + 0.25 * Math.tanh(0.5))]);
  });
});

test('an lstm inside a compiled function gives the eager values', () => {
  const w = tp.randn([1, 16, 3], { seed: 3 }).mul(0.5), r = tp.randn([1, 16, 4], { seed: 4 }).mul(0.5);
  const step = (x) => tp.lstm(x, w, r).y.sum({ dim: 0 });
  const f = tp.compile(step);
  try {
    tp.scope(() => {
      for (const seq of [5, 5, 7]) {
        const x = tp.randn([seq, 2, 3], { seed: seq });
        const want = [...step(x).toArray()];
        close(f(x), want);
      }
    });
  } finally {
    f.dispose && f.dispose();
    w.dispose(), r.dispose();
  }
});

// ONNX RNN / GRU / LSTM models against onnxruntime-node: every direction,
// batch 1 and 3, hidden sizes no vector width divides, sequence_lens,
// initial states, peepholes, layout 1, clip and the activations with
// activation_alpha / activation_beta (consumed in activation order by the
// activations that read them). Every input fed at run time; W, R and B
// also as initializers (stax packs constant W, R once per plan). Eager and
// stax; |err| <= 1e-4 + 1e-3 |ref|.
import { makeModel } from './_onnx_pb.mjs';
import { needOrt } from './_ort.mjs';

const rng = (seed) => () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32) * 2 - 1;
const onnxCases = [
  { op: 'LSTM', dir: 'bidirectional', S: 6, N: 3, I: 5, H: 13, lens: true, init: true, peep: true },
  { op: 'LSTM', dir: 'forward', S: 1, N: 1, I: 64, H: 64, init: true }, // a VAD step
  { op: 'LSTM', dir: 'reverse', S: 5, N: 3, I: 4, H: 9, layout: 1, init: true, clip: 0.8,
    acts: ['HardSigmoid', 'Softsign', 'ScaledTanh'], alpha: [0.25, 0.9], beta: [0.45, 0.7] },
  { op: 'GRU', dir: 'bidirectional', S: 7, N: 3, I: 3, H: 11, lens: true, init: true, lbr: 1 },
  { op: 'GRU', dir: 'forward', S: 6, N: 1, I: 6, H: 17, lbr: 0, acts: ['Sigmoid', 'Elu'], alpha: [0.6] },
  { op: 'GRU', dir: 'reverse', S: 4, N: 3, I: 2, H: 5, lbr: 1, layout: 1, acts: ['HardSigmoid', 'LeakyRelu'], alpha: [0.3, 0.05], beta: [0.4] },
  { op: 'RNN', dir: 'bidirectional', S: 5, N: 3, I: 4, H: 7, lens: true, init: true,
    acts: ['Affine', 'ThresholdedRelu'], alpha: [0.7, 0.1], beta: [0.2] },
  { op: 'RNN', dir: 'forward', S: 6, N: 1, I: 3, H: 19, acts: ['Softplus'] },
  { op: 'RNN', dir: 'reverse', S: 6, N: 3, I: 3, H: 6, clip: 0.5, acts: ['Relu'] },
];

// a [A, B, C] array as [B, A, C]
const swap01 = (v, [A, B, C]) => Float32Array.from({ length: A * B * C }, (_, i) => {
  const b = Math.floor(i / (A * C)), a = Math.floor(i / C) % A, k = i % C;
  return v[(a * B + b) * C + k];
});

// The model of case c and its feeds. layout: 1 for the model tensorplay
// runs when c.layout (batch first); onnxruntime runs layout 0 (it has no
// layout 1) on the same values.
function onnxModel(c, konst, layout) {
  const G = { LSTM: 4, GRU: 3, RNN: 1 }[c.op], D = c.dir === 'bidirectional' ? 2 : 1, r = rng(7 + c.H);
  const fill = (n, s) => Float32Array.from({ length: n }, () => r() * s);
  const vals = {
    X: [1, [c.S, c.N, c.I], fill(c.S * c.N * c.I, 1)], W: [1, [D, G * c.H, c.I], fill(D * G * c.H * c.I, 0.6)],
    R: [1, [D, G * c.H, c.H], fill(D * G * c.H * c.H, 0.6)], B: [1, [D, 2 * G * c.H], fill(D * 2 * G * c.H, 0.5)],
  };
  if (c.lens) vals.L = [6, [c.N], Int32Array.from({ length: c.N }, (_, b) => Math.max(1, c.S - 2 * b))];
  if (c.init) vals.H0 = [1, [D, c.N, c.H], fill(D * c.N * c.H, 0.8)];
  if (c.init && c.op === 'LSTM') vals.C0 = [1, [D, c.N, c.H], fill(D * c.N * c.H, 0.8)];
  if (c.peep) vals.P = [1, [D, 3 * c.H], fill(D * 3 * c.H, 0.5)];
  if (layout) {
    for (const n of ['X', 'H0', 'C0']) {
      if (!vals[n]) continue;
      const [A, B, C] = vals[n][1];
      vals[n] = [1, [B, A, C], swap01(vals[n][2], [A, B, C])];
    }
  }
  const names = ['X', 'W', 'R', 'B', 'L', 'H0', 'C0', 'P'].slice(0, c.op === 'LSTM' ? 8 : 6);
  const ins = names.map((n) => (vals[n] ? n : ''));
  while (ins[ins.length - 1] === '') ins.pop();
  const attrs = { hidden_size: c.H, direction: c.dir };
  if (layout) attrs.layout = 1;
  if (c.clip) attrs.clip = { float: c.clip };
  if (c.op === 'GRU') attrs.linear_before_reset = c.lbr;
  if (c.acts) attrs.activations = c.acts; // every direction's
  if (c.alpha) attrs.activation_alpha = Float32Array.from(c.alpha);
  if (c.beta) attrs.activation_beta = Float32Array.from(c.beta);
  const outs = c.op === 'LSTM' ? ['Y', 'Yh', 'Yc'] : ['Y', 'Yh'];
  const isConst = (n) => konst && (n === 'W' || n === 'R' || n === 'B');
  const feeds = Object.keys(vals).filter((n) => !isConst(n));
  const bytes = makeModel({
    opset: 14,
    nodes: [[c.op, ins, outs, attrs]],
    inputs: feeds.map((n) => [n, vals[n][0], vals[n][1]]),
    initializers: Object.keys(vals).filter(isConst).map((n) => [n, vals[n][0], vals[n][1], vals[n][2]]),
    outputs: outs.map((n) => [n, 1, null]),
  });
  return { bytes, vals, feeds, outs };
}

// onnxruntime's layout-0 output o as layout 1 (Y [S, D, N, H] -> [N, S, D, H]; Yh, Yc [D, N, H] -> [N, D, H])
function toLayout1(o, t) {
  const d = [...t.dims];
  if (o !== 'Y') return { dims: [d[1], d[0], d[2]], data: swap01(t.data, d) };
  const [S, D, N, H] = d, out = new Float32Array(t.data.length);
  for (let s = 0; s < S; s++) for (let k = 0; k < D; k++) for (let b = 0; b < N; b++) for (let h = 0; h < H; h++)
    out[((b * S + s) * D + k) * H + h] = t.data[((s * D + k) * N + b) * H + h];
  return { dims: [N, S, D, H], data: out };
}

for (const c of onnxCases) {
  test(`ONNX ${c.op} ${c.dir} batch ${c.N} hidden ${c.H}${c.acts ? ' ' + c.acts.join('/') : ''}${c.layout ? ' layout 1' : ''} matches onnxruntime-node`, async () => {
    const ort = needOrt();
    for (const konst of [false, true]) {
      const ref = onnxModel(c, konst, 0), { bytes, vals, feeds, outs } = onnxModel(c, konst, c.layout ? 1 : 0);
      const s = await ort.InferenceSession.create(ref.bytes);
      const of = {};
      for (const n of ref.feeds) of[n] = new ort.Tensor(ref.vals[n][0] === 6 ? 'int32' : 'float32', ref.vals[n][2], ref.vals[n][1]);
      const res = await s.run(of), want = {};
      for (const o of outs) want[o] = c.layout ? toLayout1(o, res[o]) : res[o];
      for (const backend of ['eager', 'stax']) {
        const m = tp.onnx.load(bytes, backend === 'stax' ? { backend } : {});
        try {
          for (let rep = 0; rep < 2; rep++) {
            tp.scope(() => {
              const tf = {};
              for (const n of feeds) tf[n] = tp.tensor(vals[n][2], { shape: vals[n][1], dtype: vals[n][0] === 6 ? 'int32' : 'float32' });
              const got = m.run(tf);
              for (const o of outs) {
                const g = got[o].toArray(), w = want[o].data;
                assert.deepEqual(got[o].shape, [...want[o].dims], `${o} shape`);
                for (let i = 0; i < w.length; i++) {
                  assert.ok(Math.abs(g[i] - w[i]) <= 1e-4 + 1e-3 * Math.abs(w[i]),
                    `${backend}${konst ? ' (W R B initializers)' : ''} ${o}[${i}]: got ${g[i]}, onnxruntime ${w[i]}`);
                }
              }
            });
          }
        } finally {
          m.dispose();
        }
      }
    }
  });
}

test('bad recurrent attributes are refused at load naming the node', () => {
  const base = (attrs) => makeModel({ opset: 14, nodes: [['RNN', ['X', 'W', 'R'], ['Y'], { hidden_size: 2, ...attrs }]],
    inputs: [['X', 1, [2, 1, 3]], ['W', 1, [1, 2, 3]], ['R', 1, [1, 2, 2]]], outputs: [['Y', 1, null]] });
  assert.throws(() => tp.onnx.load(base({ activations: ['Gelu'] })), /node '.*' \(RNN\).*activation 'Gelu'/s);
  assert.throws(() => tp.onnx.load(base({ activations: ['Tanh', 'Tanh'] })), /RNN.*2 activations, expected 1/s);
  assert.throws(() => tp.onnx.load(base({ activations: ['Tanh'], activation_alpha: Float32Array.of(0.5) })),
    /activation_alpha has 1 values.*read 0/s);
  assert.throws(() => tp.onnx.load(base({ direction: 'sideways' })), /RNN.*direction 'sideways'/s);
  // the runtime stays usable
  const m = tp.onnx.load(base({ activations: ['LeakyRelu'], activation_alpha: Float32Array.of(0.5) }));
  try {
    tp.scope(() => {
      const y = m.run({ X: tp.tensor([1, -2, 3, -4, 5, -6], { shape: [2, 1, 3] }), W: tp.ones([1, 2, 3]), R: tp.zeros([1, 2, 2]) }).Y;
      close(y, [2, 2, -2.5, -2.5]);
    });
  } finally {
    m.dispose();
  }
});
