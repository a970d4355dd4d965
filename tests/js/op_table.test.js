// The operator table is written once (src/ops/ops.def) and everything else
// follows it: the generated JS (js/src/ops_gen.js) and d.ts blocks are
// current, the loaded core has the same ops in the same order, every op
// that JS can call is a function, an `ops` member, a Tensor method where
// ops.def says so and a d.ts declaration, and every attribute such an op
// reads is a field of the tp_attrs layout the core reports. A row added to
// ops.def without `node scripts/gen-ops.mjs` fails here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as tp from '../../js/index.js';
import { parseAttrsLayout } from '../../js/src/ops.js';
import { loadCore } from '../../js/src/loader.js';
import { ROOT, readOpsDef, stale } from '../../scripts/gen-ops.mjs';

const table = readOpsDef();
const callable = table.filter((o) => o.js);
const dts = readFileSync(new URL('../../js/types/index.d.ts', import.meta.url), 'utf8');
const tensorClass = /export declare class Tensor \{([\s\S]*?)\n\}/.exec(dts)?.[1] ?? '';

test('the generated files match src/ops/ops.def', () => {
  assert.deepEqual(stale(), [], 'run node scripts/gen-ops.mjs');
});

test('the loaded core has the ops of ops.def, in order, with their arity', () => {
  assert.deepEqual(tp.opNames, table.map((o) => o.name));
});

test('only the opaque ops (made by capture) are not callable from JS', () => {
  // cond and while_loop are reached through tp.cond / tp.whileLoop (js/src/control.js)
  assert.deepEqual(table.filter((o) => !o.js).map((o) => o.name), ['call_host', 'getitem', 'invoke', 'cond', 'while_loop']);
  assert.equal(typeof tp.cond, 'function');
  assert.equal(typeof tp.whileLoop, 'function');
});

test('every callable op: a function, an ops member, its method, its d.ts entries', () => {
  const problems = [];
  for (const o of callable) {
    const n = o.js.name;
    if (typeof tp[n] !== 'function') problems.push(`${n}: not exported by js/index.js`);
    if (tp.ops[n] !== tp[n]) problems.push(`${n}: tp.ops.${n} is not tp.${n}`);
    const hasMethod = typeof tp.Tensor.prototype[n] === 'function';
    if (hasMethod !== (o.js.method !== 'none')) problems.push(`${n}: Tensor method ${hasMethod ? 'present' : 'missing'}`);
    if (!new RegExp(`export declare function ${n}\\(`).test(dts)) problems.push(`${n}: no function in index.d.ts`);
    if (!new RegExp(`ops: Readonly<\\{[\\s\\S]*?\\b${n}: typeof ${n};`).test(dts)) problems.push(`${n}: not in the d.ts ops type`);
    if (o.js.method !== 'none' && !new RegExp(`\\n  ${n}\\(`).test(tensorClass)) problems.push(`${n}: no Tensor method in index.d.ts`);
  }
  assert.deepEqual(problems, []);
});

test('every attribute a callable op reads is a field of the core tp_attrs layout', async () => {
  // a core of its own: under the bundle hook js/src/ops.js is not the
  // bundle's instance, so ask a core directly (the same file TP_WASM selects)
  const core = await loadCore();
  const { size, fields } = parseAttrsLayout(core.readCString(core.exports.tpw_attrs_layout()));
  const kinds = new Set([...readFileSync(`${ROOT}/src/graph/text.h`, 'utf8').matchAll(/\bTP_ATTR_([A-Z_]+),/g)].map((m) => m[1]));
  const problems = [];
  for (const o of table) {
    for (const a of o.attrs) {
      if (!kinds.has(a.kind)) problems.push(`${o.name}.${a.name}: kind ${a.kind} is not in text.h`);
      if (o.js && !fields.has(a.field)) problems.push(`${o.name}.${a.name}: field ${a.field} not in the layout`);
    }
  }
  assert.deepEqual(problems, []);
  assert.equal(fields.get('ints').count, 8, 'ints holds TP_MAX_DIMS');
  assert.ok(fields.has('nints'));
  for (const [name, f] of fields) {
    assert.ok(f.offset % (f.bits / 8) === 0 && f.offset + (f.bits / 8) * f.count <= size, `${name} lies inside tp_attrs, aligned`);
  }
});

test('floor, ceil, round (half to even) and erf, from JS', () => {
  tp.scope(() => {
    const x = tp.tensor([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 1.25, -1.75]);
    assert.deepEqual(Array.from(tp.floor(x).toArray()), [-3, -2, -1, 0, 1, 2, 1, -2]);
    assert.deepEqual(Array.from(x.ceil().toArray()), [-2, -1, -0, 1, 2, 3, 2, -1]);
    assert.deepEqual(Array.from(x.round().toArray()), [-2, -2, -0, 0, 2, 2, 1, -2]);
    assert.deepEqual(Array.from(tp.ops.round(tp.tensor([3.5, 4.5, -3.5])).toArray()), [4, 4, -4]);
    // erf(0) = 0, erf(0.5) = 0.5204998778, erf(1) = 0.8427007929, erf(-2) = -0.9953222650
    const e = tp.erf(tp.tensor([0, 0.5, 1, -2])).toArray();
    [0, 0.5204998778, 0.8427007929, -0.995322265].forEach((want, i) => assert.ok(Math.abs(e[i] - want) < 1e-6, `erf ${i}: ${e[i]}`));
    assert.equal(tp.floor(tp.tensor([1, 2], { dtype: 'int32' })).dtype, 'float32', 'float32 out (ops.def)');
  });
});
