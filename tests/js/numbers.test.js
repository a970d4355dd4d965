// Numbers at the API edge (docs/reliability.md, "Numbers: promotion and
// overflow"): issue 15's defects 1-4 as reproducers, and the promotion and
// overflow rule at the int32/int64/float edges. Expected values are
// hand-computed; tests/c/core/test_numbers.c checks the same in C natively.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';

const live0 = tp.liveTensors();
const INVALID_ARG = 1;

function isErr(Cls, re, code) {
  return (e) => {
    assert.ok(e instanceof Cls, `expected ${Cls.name}, got ${e && e.constructor && e.constructor.name}: ${e && e.message}`);
    assert.match(e.message, re);
    if (code !== undefined) assert.equal(e.code, code);
    return true;
  };
}
const invalid = (re) => isErr(tp.TensorPlayError, re, INVALID_ARG);

function stillWorks() {
  tp.scope(() => {
    const y = tp.tensor([1, 2]).add(3);
    assert.deepEqual(Array.from(y.toArray()), [4, 5]);
  });
  assert.equal(tp.liveTensors(), live0, 'live tensors back to the start value');
}

test('defect 1: dims of 2^31, 2^32 or more are refused naming the dim, not wrapped', () => {
  // the dims reach the core exactly: too large for wasm32's memory, not wrapped to [2] or [3, 1]
  const oom = (re) => isErr(tp.TensorPlayError, re, 3); // OUT_OF_MEMORY
  assert.throws(() => tp.zeros([2 ** 32 + 2]), oom(/zeros\(\): tensor: float32 \[4294967298\] needs 17179869192 bytes/));
  assert.throws(() => tp.randn([2 ** 32 + 3, 1]), oom(/randn\(\): tensor: float32 \[4294967299,1\] needs 17179869196 bytes/));
  assert.throws(() => tp.zeros([2 ** 41]), invalid(/zeros\(\): shape: dim 0 is 2199023255552, more than a tensor may hold/));
  assert.throws(() => tp.rand([1, 2 ** 41]), invalid(/rand\(\): shape: dim 1 is 2199023255552/));
  // 2^31 is not negative: it passes exactly and fails only for its size
  // (2^31 float32s are 8 GiB: past wasm32's address space)
  assert.throws(() => tp.zeros([2 ** 31]), (e) => {
    assert.ok(e instanceof tp.TensorPlayError);
    assert.doesNotMatch(e.message, /negative/);
    assert.match(e.message, /2147483648/);
    assert.equal(e.status, 'OUT_OF_MEMORY');
    return true;
  });
  assert.throws(() => tp.zeros([3, -1]), invalid(/zeros\(\): shape: dim 1 is negative \(-1\)/));
  assert.throws(() => tp.full([2.5], 1), isErr(TypeError, /full\(\): shape: dim 0 must be an integer, got 2\.5/));
  assert.throws(() => tp.ones(['2']), isErr(TypeError, /dim 0 must be an integer, got "2"/));
  assert.throws(() => tp.zeros([NaN]), isErr(TypeError, /dim 0 must be an integer, got NaN/));
  assert.throws(() => tp.tensor([1, 2], { shape: [2 ** 32 + 2] }), invalid(/tensor\(\): shape \[4294967298\] holds 4294967298 elements but the data has 2/));
  stillWorks();
});

test('defect 1: empty tensors with large dims keep their dims exactly', () => {
  tp.scope(() => {
    const z = tp.zeros([0, 2 ** 40]);
    assert.deepEqual(z.shape, [0, 2 ** 40]);
    assert.equal(z.size, 0);
    const w = tp.zeros([2 ** 33, 0], { dtype: 'int64' });
    assert.deepEqual(w.shape, [2 ** 33, 0]);
    assert.deepEqual(w.reshape(0, 2 ** 33).shape, [0, 2 ** 33]);
    assert.deepEqual(w.reshape(-1, 2 ** 33).shape, [0, 2 ** 33]);
  });
  tp.scope(() => assert.deepEqual(tp.zeros([0, 2 ** 50]).shape, [0, 2 ** 50]));
  assert.throws(() => tp.zeros([1, 2 ** 40 + 1]), invalid(/dim 1 is 1099511627777/));
  assert.throws(() => tp.zeros([0, 2 ** 53]), invalid(/dim 1 is 9007199254740992/));
  stillWorks();
});

test('reshape: dims are integers 0..2^40 or one -1, never wrapped', () => {
  tp.scope(() => {
    const x = tp.arange(6);
    assert.throws(() => x.reshape(2 ** 32 + 2, 3), invalid(/cannot reshape \[6\] \(6 elements\) into \[4294967298,3\]/));
    assert.throws(() => x.reshape(2 ** 45, 1), invalid(/reshape: shape: dim 0 is 35184372088832/));
    assert.throws(() => x.reshape(-2, 3), invalid(/reshape: shape: dim 0 is negative \(-2\); only -1/));
    assert.throws(() => x.reshape(1.5, 4), isErr(TypeError, /reshape: shape: dim 0 must be an integer/));
    assert.deepEqual(x.reshape(-1, 3).shape, [2, 3]);
    // an int attribute past int32 is refused, not wrapped to a small dim
    assert.throws(() => x.softmax(2 ** 32), invalid(/softmax: dim: 4294967296 is out of the int32 range|out of range/));
  });
  stillWorks();
});

test('defect 2: a whole number past int64 with a float tensor is that float (Infinity), not clamped', () => {
  tp.scope(() => {
    const x = tp.tensor([1, 2]);
    assert.deepEqual(Array.from(tp.mul(x, 1e300).toArray()), [Infinity, Infinity]);
    assert.deepEqual(Array.from(tp.mul(x, -1e300).toArray()), [-Infinity, -Infinity]);
    // 1e19 + 1 rounds to float32's 1e19 (9999999980506447872), not 9.22e18
    assert.deepEqual(Array.from(tp.add(x, 1e19).toArray()), [Math.fround(1e19), Math.fround(1e19)]);
    assert.deepEqual(Array.from(tp.add(x, 2 ** 63).toArray()), [2 ** 63, 2 ** 63]);
    assert.deepEqual(Array.from(tp.sub(x, -(2 ** 64)).toArray()), [2 ** 64, 2 ** 64]);
    assert.deepEqual(Array.from(tp.gt(x, 1e300).toArray()), [0, 0]);
  });
  stillWorks();
});

test('defect 3: an integer scalar that does not fit an int tensor is an error, never a wrap', () => {
  tp.scope(() => {
    const i32 = tp.tensor([1, 2], { dtype: 'int32' });
    assert.throws(() => tp.add(i32, 1e19), invalid(/scalar 10000000000000000000 does not fit int32/));
    assert.throws(() => tp.add(i32, 2 ** 31), invalid(/scalar 2147483648 does not fit int32/)); // INT32_MAX + 1
    assert.throws(() => tp.mul(i32, -(2 ** 31) - 1), invalid(/scalar -2147483649 does not fit int32/));
    assert.throws(() => tp.eq(i32, 2 ** 40), invalid(/does not fit int32/));
    assert.throws(() => tp.where(tp.tensor([true, false]), i32, 2 ** 32), invalid(/does not fit int32/));
    const i64 = tp.tensor([1n, 2n]);
    assert.throws(() => tp.add(i64, 2 ** 63), invalid(/scalar 9223372036854775808 does not fit int64/));
    assert.throws(() => tp.add(i64, 1e300), invalid(/scalar 1e\+300 does not fit int64/));
    // bool tensor + int scalar is int64: the scalar must fit int64
    assert.throws(() => tp.add(tp.tensor([true]), 2 ** 64), invalid(/does not fit int64/));
  });
  stillWorks();
});

test('integer scalars at the edges: fit exactly, arithmetic wraps like PyTorch', () => {
  tp.scope(() => {
    const i32 = tp.tensor([2147483647, -2147483648], { dtype: 'int32' });
    const s = tp.add(i32, 2147483647);
    assert.equal(s.dtype, 'int32');
    assert.deepEqual(Array.from(s.toArray()), [-2, -1]);
    assert.deepEqual(Array.from(tp.add(i32, -(2 ** 31)).toArray()), [-1, 0]);
    const i64 = tp.tensor([1n, 2n]);
    assert.deepEqual(Array.from(tp.add(i64, 2 ** 53).toArray()), [2n ** 53n + 1n, 2n ** 53n + 2n]);
    assert.deepEqual(Array.from(tp.add(i64, -(2 ** 63)).toArray()), [-(2n ** 63n) + 1n, -(2n ** 63n) + 2n]);
    assert.deepEqual(Array.from(tp.add(i64, 5n).toArray()), [6n, 7n]);
    assert.throws(() => tp.add(i64, 2n ** 53n + 1n), invalid(/bigint 9007199254740993n is not exactly a double/));
    // a float scalar with an int tensor promotes to float32
    const f = tp.add(tp.tensor([1, 2], { dtype: 'int32' }), 0.5);
    assert.equal(f.dtype, 'float32');
    assert.deepEqual(Array.from(f.toArray()), [1.5, 2.5]);
    assert.equal(tp.add(tp.tensor([1, 2], { dtype: 'int32' }), NaN).dtype, 'float32');
    assert.throws(() => tp.add(i64, 'abc'), isErr(TypeError, /add: operand 1 must be a Tensor, a number, a boolean or a bigint/));
  });
  stillWorks();
});

test('defect 4: values are numbers, booleans or bigints; integer dtypes refuse what does not fit', () => {
  assert.throws(() => tp.full([2], 'abc'), isErr(TypeError, /full\(\): value must be a number, boolean or bigint, got "abc"/));
  assert.throws(() => tp.full([2], {}), isErr(TypeError, /full\(\): value must be/));
  assert.throws(() => tp.tensor(['1', 2]), isErr(TypeError, /tensor\(\): element 0 must be a number/));
  assert.throws(() => tp.tensor(['1'], { dtype: 'int64' }), isErr(TypeError, /element 0 must be a number/));
  assert.throws(() => tp.tensor([1, null], { dtype: 'bool' }), isErr(TypeError, /element 1 must be a number/));
  assert.throws(() => tp.tensor([1e30], { dtype: 'int64' }),
    invalid(/tensor\(\): element 0 \(1e\+30\) cannot be converted to int64 without overflow/));
  assert.throws(() => tp.tensor([0, 2 ** 31], { dtype: 'int32' }), invalid(/element 1 \(2147483648\) cannot be converted to int32/));
  assert.throws(() => tp.tensor([NaN], { dtype: 'int32' }), invalid(/element 0 \(NaN\) cannot be converted to int32/));
  assert.throws(() => tp.tensor([Infinity], { dtype: 'int64' }), invalid(/\(Infinity\) cannot be converted to int64/));
  assert.throws(() => tp.tensor([2n ** 63n]), invalid(/element 0 \(9223372036854775808n\) cannot be converted to int64/));
  assert.throws(() => tp.tensor(new Float64Array([3e9]), { dtype: 'int32' }), invalid(/cannot be converted to int32/));
  assert.throws(() => tp.full([2], 2 ** 31, { dtype: 'int32' }), invalid(/full\(\): value \(2147483648\) cannot be converted to int32/));
  assert.throws(() => tp.full([2], NaN, { dtype: 'int64' }), invalid(/full\(\): value \(NaN\) cannot be converted to int64/));
  assert.throws(() => tp.full([1], 2 ** 63, { dtype: 'int64' }), invalid(/cannot be converted to int64 without overflow/));
  assert.throws(() => tp.arange(2147483640, 2147483650, 1, { dtype: 'int32' }),
    invalid(/arange: value 2147483649 cannot be converted to int32 without overflow/));
  assert.throws(() => tp.arange('a', 3), isErr(TypeError, /arange\(\): start must be a number/));
  tp.scope(() => {
    // in range: exact at the edges, truncated toward zero
    assert.deepEqual(Array.from(tp.tensor([2147483647, -2147483648, -7.9, 7.9], { dtype: 'int32' }).toArray()),
      [2147483647, -2147483648, -7, 7]);
    assert.deepEqual(Array.from(tp.tensor([-(2 ** 63), 2 ** 53, 9223372036854774784], { dtype: 'int64' }).toArray()),
      [-(2n ** 63n), 2n ** 53n, 9223372036854774784n]);
    assert.deepEqual(Array.from(tp.full([2], -(2 ** 63), { dtype: 'int64' }).toArray()), [-(2n ** 63n), -(2n ** 63n)]);
    assert.deepEqual(Array.from(tp.full([1], 2147483647, { dtype: 'int32' }).toArray()), [2147483647]);
    assert.deepEqual(Array.from(tp.full([1], 1e300).toArray()), [Infinity]);
    assert.deepEqual(Array.from(tp.tensor([1e300, NaN]).toArray()), [Infinity, NaN]);
    assert.deepEqual(Array.from(tp.tensor([0, 2, NaN, -0.5], { dtype: 'bool' }).toArray()), [0, 1, 1, 1]);
    assert.deepEqual(Array.from(tp.arange(2147483645, 2147483648, 1, { dtype: 'int32' }).toArray()),
      [2147483645, 2147483646, 2147483647]);
  });
  stillWorks();
});

test('cast: float -> int saturates and NaN -> 0, int64 -> int32 keeps the low bits (same as native)', () => {
  tp.scope(() => {
    const x = tp.tensor([3e9, -3e9, NaN, Infinity, -7.9, 9.3e18]);
    assert.deepEqual(Array.from(x.cast('int32').toArray()),
      [2147483647, -2147483648, 0, 2147483647, -7, 2147483647]);
    assert.deepEqual(Array.from(x.cast('int64').toArray()),
      [3000000000n, -3000000000n, 0n, 2n ** 63n - 1n, -7n, 2n ** 63n - 1n]);
    const l = tp.tensor([2n ** 32n + 5n, -(2n ** 31n) - 1n]);
    assert.deepEqual(Array.from(l.cast('int32').toArray()), [5, 2147483647]);
  });
  stillWorks();
});

test('compiled functions follow the same scalar rule', () => {
  const f = tp.compile((x) => tp.add(tp.mul(x, 1e300), 1));
  const g = tp.compile((x) => tp.add(x, 2 ** 31));
  tp.scope(() => {
    const x = tp.tensor([1, 2]);
    assert.deepEqual(Array.from(f(x).toArray()), [Infinity, Infinity]);
    assert.deepEqual(Array.from(f(x).toArray()), [Infinity, Infinity]);
    assert.throws(() => g(tp.tensor([1, 2], { dtype: 'int32' })), /does not fit int32/);
    assert.deepEqual(Array.from(g(tp.tensor([1n, 2n])).toArray()), [2n ** 31n + 1n, 2n ** 31n + 2n]);
  });
  // the compiled cast (stax; generated Wasm where it applies) saturates like eager, every call
  const c32 = tp.compile((x) => tp.cast(tp.mul(x, 2), 'int32'));
  const c64 = tp.compile((x) => tp.cast(tp.mul(x, 2), 'int64'));
  tp.scope(() => {
    const x = tp.tensor([3e9, -3e9, NaN, Infinity, -7.9, 9.3e18]);
    for (let call = 0; call < 2; call++) {
      assert.deepEqual(Array.from(c32(x).toArray()), [2147483647, -2147483648, 0, 2147483647, -15, 2147483647]);
      assert.deepEqual(Array.from(c64(x).toArray()),
        [6000000000n, -6000000000n, 0n, 2n ** 63n - 1n, -15n, 2n ** 63n - 1n]);
    }
  });
  for (const h of [f, g, c32, c64]) h.dispose?.();
  stillWorks();
});

test('item() of int64 is exact: a number up to 2^53, a bigint past it', () => {
  tp.scope(() => {
    assert.equal(tp.tensor([2n ** 53n - 1n]).item(), 2 ** 53 - 1);
    assert.equal(tp.tensor([-5n]).item(), -5);
    assert.equal(tp.tensor([2n ** 60n + 1n]).item(), 2n ** 60n + 1n);
    assert.equal(tp.tensor([-(2n ** 63n)]).item(), -(2n ** 63n));
    assert.equal(tp.tensor([7], { dtype: 'int32' }).item(), 7);
    assert.throws(() => tp.tensor([1n, 2n]).item(), invalid(/item: tensor of shape \[2\] has 2 elements, expected 1/));
  });
  stillWorks();
});
