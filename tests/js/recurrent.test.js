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
  });
});

test('recurrent options are checked; bad shapes are errors; the runtime stays usable', () => {
  tp.scope(() => {
    const x = tp.tensor([[[1]], [[2]]]), w = tp.tensor([[[0.5]]]), r = tp.tensor([[[0.25]]]);
    assert.throws(() => tp.rnn(x, w, r, { direction: 'sideways' }), TypeError);
    assert.throws(() => tp.rnn(x, w, r, { activations: ['gelu'] }), TypeError);
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
