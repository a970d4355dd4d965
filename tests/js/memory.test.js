// Memory growth: allocate until linear memory grows past 64 MB; earlier
// tensors still read correctly (views are re-made after growth).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';

test('tensors survive memory growth past 64 MB', () => {
  const before = tp.liveTensors();
  const first = tp.tensor([1, 2, 3, 4]);
  const firstBytes = tp.memoryBytes();
  const held = [];
  let i = 0;
  while (tp.memoryBytes() <= 64 * 1024 * 1024) {
    held.push(tp.full([1 << 20], i)); // 4 MB each
    i++;
    assert.ok(i < 64, 'memory did not grow');
  }
  assert.ok(tp.memoryBytes() > firstBytes);
  assert.deepEqual(Array.from(first.toArray()), [1, 2, 3, 4]);
  for (let k = 0; k < held.length; k += 5) {
    const a = held[k].toArray();
    assert.equal(a[0], k);
    assert.equal(a[a.length - 1], k);
  }
  // data written through fresh views after growth
  const data = new Float32Array(1 << 18).map((_, j) => j);
  const t = tp.tensor(data);
  assert.deepEqual(t.toArray(), data);
  const s = t.sum();
  const want = ((1 << 18) * ((1 << 18) - 1)) / 2;
  assert.ok(Math.abs(s.item() - want) <= 1e-5 * want, `sum ${s.item()} vs ${want}`);
  for (const x of [first, t, s, ...held]) x.dispose();
  assert.equal(tp.liveTensors(), before);
});

test('a tensor larger than the 32-bit address space is refused, not wrapped', () => {
  const before = tp.liveTensors();
  // 1,100,000 x 1024 float32 = 4.5e9 bytes: wraps to ~210 MB in 32-bit size_t.
  assert.throws(() => tp.zeros([1100000, 1024]),
    (e) => e instanceof tp.TensorPlayError && e.status === 'OUT_OF_MEMORY' && /address space/.test(e.message));
  assert.throws(() => tp.randn([200000, 7840]), (e) => e.status === 'OUT_OF_MEMORY');
  assert.throws(() => tp.full([1 << 30, 4], 1, { dtype: 'int64' }), (e) => e.status === 'OUT_OF_MEMORY');
  // data from JS larger than one buffer between JS and the core can be:
  // 3.5 GiB, and exactly 4 GiB (which would wrap to 0 in 32 bits)
  for (const n of [7 << 27, 2 ** 30]) {
    assert.throws(() => tp.tensor(new Float32Array(n)),
      (e) => e instanceof tp.TensorPlayError && e.status === 'OUT_OF_MEMORY' &&
        e.message.startsWith(`tensor(): out of memory: the core could not allocate ${n * 4} bytes (one buffer`), `${n * 4} bytes`);
  }
  // the runtime stays usable
  const t = tp.ones([3]);
  assert.deepEqual(Array.from(t.toArray()), [1, 1, 1]);
  t.dispose();
  assert.equal(tp.liveTensors(), before);
});
