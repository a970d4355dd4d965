// Integer literals in graph text give the same result in Wasm as natively
// (issue 15, defect 7; the C twin is tests/c/graph/test_int_literal.c):
// `add(%x, 9223372036854775807)` was -9.22e18 through `tpc run` (x86's
// out-of-range double -> int64 cast) and +9.22e18 here. The literal rounds
// to 2^63 as a double: with a float tensor it is that float; with an int64
// tensor it is an error naming it; the printer keeps it an exact integer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';

test('add(%x, 9223372036854775807): +2^63 with f32, an error with i64, printed exactly', () => {
  const live = tp.liveTensors();
  const g = tp.graph.parse('tpgraph v1\n%x = placeholder : f32[2]\n%r = add(%x, 9223372036854775807) : f32[2]\noutput(%r)\n');
  const x = tp.tensor([1, -2]);
  const [y] = g.run([x]);
  assert.deepEqual(Array.from(y.toArray()), [2 ** 63, 2 ** 63]);
  const text = g.print();
  assert.match(text, /add\(%x, 9223372036854775808\)/);
  assert.doesNotMatch(text, /e\+18/);
  const gi = tp.graph.parse('tpgraph v1\n%x = placeholder : i64[2]\n%r = add(%x, 9223372036854775807) : i64[2]\noutput(%r)\n');
  const xi = tp.tensor([1, -2], { dtype: 'int64' });
  assert.throws(() => gi.run([xi]), (e) => e instanceof tp.TensorPlayError &&
    /scalar 9223372036854775808 does not fit int64/.test(e.message));
  assert.throws(() => tp.graph.parse('tpgraph v1\n%x = placeholder : f32[2]\n%r = add(%x, 99999999999999999999) : f32[2]\noutput(%r)\n'),
    /line 3: integer literal 99999999999999999999 is out of range for int64/);
  for (const h of [g, gi, x, y, xi]) h.dispose();
  assert.equal(tp.liveTensors(), live);
});
