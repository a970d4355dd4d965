// npy encode/decode and graph text parse/run/print.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';
import { assertClose } from './_ref.mjs';

const live0 = tp.liveTensors();

test('npy round trip for every dtype', () => {
  tp.scope(() => {
    const cases = [
      tp.tensor([[1.5, -2], [3, 4]]),
      tp.tensor([1, 2, 3], { dtype: 'int32' }),
      tp.tensor([5n, -6n]),
      tp.tensor([true, false, true]),
      tp.tensor(2.5),
    ];
    for (const t of cases) {
      const bytes = tp.npy.encode(t);
      assert.ok(bytes instanceof Uint8Array);
      assert.equal(bytes[0], 0x93);
      assert.equal(new TextDecoder().decode(bytes.subarray(1, 6)), 'NUMPY');
      const u = tp.npy.decode(bytes);
      assert.deepEqual(u.shape, t.shape);
      assert.equal(u.dtype, t.dtype);
      assert.deepEqual(u.toArray(), t.toArray());
    }
    // a view is encoded in C order
    const v = tp.tensor([[1, 2, 3], [4, 5, 6]]).transpose(0, 1);
    assert.deepEqual(Array.from(tp.npy.decode(tp.npy.encode(v)).toArray()), [1, 4, 2, 5, 3, 6]);
  });
});

test('npy.decode rejects garbage', () => {
  assert.throws(() => tp.npy.decode(new Uint8Array([1, 2, 3])), tp.TensorPlayError);
});

test('a captured graph prints, parses and runs with the same results', () => {
  tp.scope(() => {
    const w = tp.randn([4, 3], { seed: 3 });
    const b = tp.tensor([0.5, -0.5, 1, 0]);
    const f = (x) => tp.relu(tp.linear(x, w, b)).softmax(-1);
    const g = tp.compile(f);
    const x = tp.randn([2, 3], { seed: 4 });
    const y = g(x);
    const text = g.graph({ withData: true });
    assert.equal(typeof text, 'string');
    const gr = tp.graph.parse(text);
    try {
      const outs = gr.run([x]);
      assert.equal(outs.length, 1);
      assertClose(outs[0].toArray(), y.toArray());
      const again = tp.graph.parse(gr.print({ withData: true }));
      assertClose(tp.graph.run(again, [x])[0].toArray(), y.toArray());
      again.dispose();
    } finally {
      gr.dispose();
      g.dispose();
    }
  });
});

test('no tensors leaked by this file', () => {
  assert.equal(tp.liveTensors(), live0);
});
