// ONNX conformance in Node, through the Wasm core: every node test of
// ../shared/conformance/onnx-node/MANIFEST.tsv (TP_CONFORMANCE overrides the
// folder) and the real models in ../shared/conformance/models, loaded with
// tp.onnx.load as shipped and run eagerly and on stax (tp.onnx.load(bytes,
// { backend: 'stax' }): plans with generated Wasm), against every
// test_data_set_*. The rules are the C runner's (tests/c/onnx/test_onnx_conformance.c):
// ONNX's tolerance |got - expected| <= 1e-7 + 1e-3 |expected| for float32 (and float16, bfloat16)
// (NaN matches NaN), ints and bools exact; a load that fails UNSUPPORTED is
// skipped. Every test input is fed at run time, as a user calls a model (none
// is bound into the model as a constant). The stax model is called twice
// per data set and both results are checked. Counts are printed per set
// (MANIFEST.tsv's `set` column: core, extended).
// Every test that does not pass must be listed in tests/onnx_expected_failures.tsv,
// and a listed test that passes is a failure too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tp from '../../js/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..', '..');
const root = process.env.TP_CONFORMANCE || join(repo, '..', 'shared', 'conformance');
const manifest = join(root, 'onnx-node', 'MANIFEST.tsv');
const haveData = existsSync(manifest);
// TP_REQUIRE_DATA=1 (the test command sets it in CI): missing data fails instead of skipping
const requireData = !!process.env.TP_REQUIRE_DATA && process.env.TP_REQUIRE_DATA !== '0';
const MODELS = ['mnist-8', 'mnist-mlp-onnx-mlir', 'ultraface-rfb-320'];

function loadExpected() {
  const m = new Map();
  const p = join(repo, 'tests', 'onnx_expected_failures.tsv');
  if (!existsSync(p)) return m;
  for (const line of readFileSync(p, 'utf8').split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const tab = line.indexOf('\t');
    if (tab > 0) m.set(line.slice(0, tab).trim(), line.slice(tab + 1).trim());
  }
  return m;
}

/** null if equal, else a reason (the C runner's compare). */
export function compare(got, want) {
  if (got.dtype !== want.dtype || got.shape.join(',') !== want.shape.join(','))
    return `got ${got.dtype}[${got.shape}], expected ${want.dtype}[${want.shape}]`;
  // float16/bfloat16 as numbers (toList converts the bit patterns)
  const half = got.dtype === 'float16' || got.dtype === 'bfloat16';
  const nums = (t) => { const l = t.toList(); return Array.isArray(l) ? l.flat(Infinity) : [l]; };
  const g = half ? nums(got) : got.toArray(), w = half ? nums(want) : want.toArray();
  const isf = got.dtype === 'float32' || half;
  for (let i = 0; i < w.length; i++) {
    const a = g[i], b = w[i];
    const ok = isf ? (Number.isNaN(a) && Number.isNaN(b)) || a === b || Math.abs(a - b) <= 1e-7 + 1e-3 * Math.abs(b)
      : a === b;
    if (!ok) return `element ${i}: got ${a}, expected ${b}`;
  }
  return null;
}

const PASS = 'pass', FAIL = 'fail', SKIP = 'skip';

function dataSets(dir) {
  const out = [];
  for (let k = 0; existsSync(join(dir, `test_data_set_${k}`)); k++) out.push(join(dir, `test_data_set_${k}`));
  return out;
}

function pbFiles(set, kind) {
  const out = [];
  for (let k = 0; existsSync(join(set, `${kind}_${k}.pb`)); k++) out.push(readFileSync(join(set, `${kind}_${k}.pb`)));
  return out;
}

/** One test folder -> { eager, stax, why }: the model loaded as shipped,
 * once running eagerly and once on stax (tp.onnx.load(bytes, { backend })),
 * every input of every data set fed at run time. A decode or run refused as
 * UNSUPPORTED (a dtype or op form met at run time) is a skip. */
function runTest(dir) {
  const bytes = readFileSync(join(dir, 'model.onnx'));
  const models = {};
  const res = { eager: PASS, stax: PASS, why: '' };
  const unsupported = (e) => e instanceof tp.TensorPlayError && e.status === 'UNSUPPORTED';
  try {
    for (const backend of ['eager', 'stax']) {
      try {
        models[backend] = tp.onnx.load(bytes, { backend: backend === 'eager' ? '' : 'stax' });
      } catch (e) {
        const r = unsupported(e) ? SKIP : FAIL;
        return { eager: r, stax: r, why: `load: ${e.message}` };
      }
    }
    for (const set of dataSets(dir)) {
      tp.scope(() => {
        let ins, want;
        try {
          ins = pbFiles(set, 'input').map((b) => tp.onnx.decodeTensor(b));
          want = pbFiles(set, 'output').map((b) => tp.onnx.decodeTensor(b));
        } catch (e) {
          res.eager = res.stax = FAIL;
          if (!res.why) res.why = e.message;
          return;
        }
        for (const [backend, call] of [['eager', 0], ['stax', 1], ['stax', 2]]) {
          let why = '', skip = false;
          try {
            let got = models[backend].run(ins);
            if (got.length !== want.length) why = `${got.length} outputs, expected ${want.length}`;
            for (let k = 0; !why && k < got.length; k++) {
              const c = compare(got[k], want[k]);
              if (c) why = `output ${k}: ${c}`;
            }
          } catch (e) {
            why = e.message;
            skip = unsupported(e);
          }
          if (why) {
            if (res[backend] === PASS || !skip) res[backend] = skip && res[backend] === PASS ? SKIP : FAIL;
            if (!res.why) res.why = `${backend}${call ? ` (call ${call})` : ''}: ${why}`;
          }
        }
      });
    }
  } finally {
    for (const m of Object.values(models)) m.dispose();
  }
  return res;
}

test('ONNX conformance (node tests and models) through the Wasm core, eager and stax',
  { skip: !haveData && !requireData && `conformance data not found (${manifest}); set TP_CONFORMANCE` }, () => {
    assert.ok(haveData, `conformance data not found (${manifest}) and TP_REQUIRE_DATA is set`);
    const expected = loadExpected();
    const seen = new Set();
    // MANIFEST.tsv: name first, set (core | extended) last
    const names = readFileSync(manifest, 'utf8').split('\n').slice(1)
      .map((l) => l.split('\t').map((c) => c.trim())).filter((c) => c[0])
      .map((c) => ({ name: c[0], dir: join(root, 'onnx-node', c[0]), kind: c[c.length - 1] === 'extended' ? 'extended' : 'core' }));
    const bad = [];
    for (const m of MODELS) {
      const dir = join(root, 'models', m);
      if (existsSync(dir)) names.push({ name: `models/${m}`, dir, kind: 'model' });
      else if (requireData) bad.push(`models/${m} (missing)`);
    }
    const zero = () => ({ pass: 0, fail: 0, skip: 0 });
    const counts = {};
    for (const k of ['core', 'extended', 'model']) counts[k] = { eager: zero(), stax: zero(), all: zero() };
    const t0 = Date.now();
    for (const { name, dir, kind } of names) {
      const r = runTest(dir);
      const all = r.eager === PASS && r.stax === PASS ? PASS : r.eager === SKIP ? SKIP : FAIL;
      const c = counts[kind];
      c.eager[r.eager]++, c.stax[r.stax]++, c.all[all]++;
      seen.add(name);
      const listed = expected.get(name);
      if (all !== PASS) {
        const line = `${all === SKIP ? 'SKIP' : 'FAIL'} ${name}: ${r.why.replace(/[\t\n]/g, ' ')}`;
        if (listed === undefined) {
          console.log(`${line}\n  ^ not listed in tests/onnx_expected_failures.tsv`);
          bad.push(name);
        }
      } else if (listed !== undefined) {
        console.log(`PASS ${name}: listed as an expected failure (${listed}); remove it from the list`);
        bad.push(name);
      }
    }
    for (const n of expected.keys()) {
      if (!seen.has(n)) {
        console.log(`expected failure '${n}' names no test: remove it from the list`);
        bad.push(n);
      }
    }
    const fmt = (c) => `${c.pass} passed, ${c.fail} failed, ${c.skip} skipped`;
    for (const k of ['core', 'extended']) {
      console.log(`onnx-node ${k} (eager, wasm): ${fmt(counts[k].eager)}`);
      console.log(`onnx-node ${k} (stax, wasm): ${fmt(counts[k].stax)}`);
      console.log(`onnx-node ${k} (wasm): ${fmt(counts[k].all)}`);
    }
    console.log(`models (eager, wasm): ${fmt(counts.model.eager)}`);
    console.log(`models (stax, wasm): ${fmt(counts.model.stax)}`);
    console.log(`${bad.length} test(s) differ from tests/onnx_expected_failures.tsv${bad.length ? ': ' + bad.join(', ') : ''} (${Date.now() - t0} ms, core ${process.env.TP_WASM || 'js/wasm/tensorplay.wasm'})`);
    assert.deepEqual(bad, [], `tests differing from tests/onnx_expected_failures.tsv: ${bad.join(', ')}`);
  });
