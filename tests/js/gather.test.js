// gather / gatherElements from JS: hand-computed values, negative indices,
// int32 and int64 indices, methods, out-of-range errors that leave the
// runtime usable, and the ops inside a compiled function (stax).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';

const arr = (t) => [...t.toArray()];

test('gather takes along a dim; gatherElements is torch.gather', () => {
  tp.scope(() => {
    const x = tp.tensor([[1, 2, 3], [4, 5, 6]]);
    const rows = tp.gather(x, tp.tensor([1, 0, -1], { dtype: 'int64' }));
    assert.deepEqual(rows.shape, [3, 3]);
    assert.deepEqual(arr(rows), [4, 5, 6, 1, 2, 3, 4, 5, 6]);
    const cols = x.gather(tp.tensor([[0, 2], [1, 1]], { dtype: 'int32' }), 1);
    assert.deepEqual(cols.shape, [2, 2, 2]);
    assert.deepEqual(arr(cols), [1, 3, 2, 2, 4, 6, 5, 5]);
    const ge = x.gatherElements(tp.tensor([[2, 0], [-1, 1]], { dtype: 'int64' }), 1);
    assert.deepEqual(arr(ge), [3, 1, 6, 5]);
    const emb = tp.tensor([[0.5, 1.5], [2.5, 3.5], [4.5, 5.5]]);
    assert.deepEqual(arr(tp.gather(emb, tp.tensor([2, 2, 0], { dtype: 'int64' }))), [4.5, 5.5, 4.5, 5.5, 0.5, 1.5]);
  });
});

test('gather: out-of-range indices and float indices are errors; the runtime stays usable', () => {
  tp.scope(() => {
    const x = tp.tensor([1, 2, 3]);
    assert.throws(() => tp.gather(x, tp.tensor([0, 3], { dtype: 'int64' })),
      (e) => e instanceof tp.TensorPlayError && /index 3 \(at position 1 of the indices\) is out of range for dim 0 of size 3/.test(e.message));
    assert.throws(() => tp.gather(x, tp.tensor([-4], { dtype: 'int32' })), /index -4/);
    assert.throws(() => tp.gather(x, tp.tensor([0.5])), /int32 or int64/);
    assert.deepEqual(arr(tp.gather(x, tp.tensor([2], { dtype: 'int64' }))), [3]);
  });
});

test('gather inside a compiled function (stax): an embedding lookup of runtime token ids', () => {
  const table = tp.tensor([[1, 0], [0, 1], [1, 1], [2, 2]]);
  const f = tp.compile((ids) => tp.gather(table, ids).mul(2).sum({ dim: 1 }));
  try {
    tp.scope(() => {
      for (const ids of [[0, 3, 2], [1, 1, 0]]) {
        const want = ids.map((i) => 2 * (table.toArray()[2 * i] + table.toArray()[2 * i + 1]));
        for (let call = 0; call < 2; call++)
          assert.deepEqual(arr(f(tp.tensor(ids, { dtype: 'int64' }))), want);
      }
      assert.throws(() => f(tp.tensor([0, 9, 1], { dtype: 'int64' })), /index 9/);
      assert.deepEqual(arr(f(tp.tensor([3, 3, 3], { dtype: 'int64' }))), [8, 8, 8]);
    });
  } finally {
    f.dispose && f.dispose();
    table.dispose();
  }
});

test('scatterElements / scatterND: hand-computed values, reductions, errors', () => {
  tp.scope(() => {
    const x = tp.tensor([[1, 2, 3], [4, 5, 6]]);
    const ix = tp.tensor([[2, 0], [-1, -1]], { dtype: 'int64' }), u = tp.tensor([[10, 20], [30, 40]]);
    assert.deepEqual(arr(tp.scatterElements(x, ix, u, 1)), [20, 2, 10, 4, 5, 40]);
    assert.deepEqual(arr(x.scatterElements(ix, u, 1, { reduction: 'add' })), [21, 2, 13, 4, 5, 76]);
    assert.deepEqual(arr(tp.scatterND(x, tp.tensor([[1]], { dtype: 'int64' }), tp.tensor([[7, 8, 9]]))), [1, 2, 3, 7, 8, 9]);
    assert.deepEqual(arr(x), [1, 2, 3, 4, 5, 6]); // x is not changed
    assert.throws(() => tp.scatterND(x, tp.tensor([[5]], { dtype: 'int64' }), tp.tensor([[7, 8, 9]])), /index 5 \(tuple 0, component 0\)/);
    assert.throws(() => tp.scatterElements(x, ix, u, 1, { reduction: 'avg' }), TypeError);
  });
});

test('topk / argtopk: values and indices, ties, smallest, errors', () => {
  tp.scope(() => {
    const x = tp.tensor([[3, 1, 4, 1], [5, 9, 2, 6]]);
    const { values, indices } = tp.topk(x, 2);
    assert.deepEqual(arr(values), [4, 3, 9, 6]);
    assert.deepEqual(arr(indices).map(Number), [2, 0, 1, 3]);
    assert.deepEqual(arr(x.argtopk(3, { largest: false })).map(Number), [1, 3, 0, 2, 0, 3]);
    assert.deepEqual(arr(tp.argtopk(tp.tensor([7, 7, 2, 7], { dtype: 'int64' }), 3)).map(Number), [0, 1, 3]);
    assert.throws(() => tp.topk(x, 5), /k = 5 is outside 0..4/);
  });
});
