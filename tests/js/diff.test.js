// Differential tests in the Wasm core (issue 15): the random valid graphs of
// tests/c/diffgen.c (generated from the op table, saved with their constants
// in fixtures/diff_graphs.txt by
//   TP_DIFF_CASES=400 TP_DIFF_WRITE=tests/js/fixtures/diff_graphs.txt build/native/test_diff)
// run here by the reference backend (scalar, double-accumulating kernels: the
// oracle), eager (graph.run) and stax (compiled, with its generated SIMD128
// modules on this host), every input fed at run time. Inputs follow
// diffgen.c's dg_from_text pattern; tolerances are diffgen.h's. A backend
// that moves one element by 1% must be caught (the check can fail).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tp from '../../js/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const text = readFileSync(join(here, 'fixtures', 'diff_graphs.txt'), 'utf8');
const cases = text.split(/^# seed (\d+)\n/m).slice(1);
const graphs = [];
for (let i = 0; i < cases.length; i += 2) graphs.push({ seed: Number(cases[i]), text: cases[i + 1] });

const DT = { f32: 'float32', i32: 'int32', i64: 'int64', b8: 'bool', f16: 'float16', bf16: 'bfloat16', i8: 'int8', u8: 'uint8' };

// The placeholders in order, with the pattern values of dg_from_text.
function inputsOf(graphText) {
  const ins = [];
  let node = 0;
  for (const line of graphText.split('\n')) {
    const m = /^%\S+ = (\w+)/.exec(line);
    if (!m) continue;
    if (m[1] === 'placeholder') {
      const t = /: (\w+)\[([\d,]*)\]/.exec(line);
      const shape = t[2] === '' ? [] : t[2].split(',').map(Number);
      const n = shape.reduce((a, b) => a * b, 1);
      const dt = DT[t[1]];
      const vals = [];
      const isF = dt === 'float32' || dt === 'float16' || dt === 'bfloat16';
      for (let j = 0; j < n; j++) {
        const b = (j * 37 + node * 11 + 5) & 255;
        vals.push(isF ? (b - 128) / 32 : dt === 'bool' ? b & 1 : dt === 'int8' ? (b % 9) - 4
          : dt === 'uint8' ? b % 9 : (b % 7) - 2);
      }
      const flat = dt === 'float32' ? Float32Array.from(vals) : dt === 'float16' ? tp.float32ToFloat16(vals)
        : dt === 'bfloat16' ? tp.float32ToBfloat16(vals) : dt === 'int32' ? Int32Array.from(vals)
          : dt === 'int64' ? BigInt64Array.from(vals.map(BigInt)) : dt === 'int8' ? Int8Array.from(vals)
            : Uint8Array.from(vals);
      ins.push(tp.tensor(flat, { dtype: dt }).reshape(shape));
    }
    node++;
  }
  return ins;
}

// diffgen.h's rule; returns a reason or ''.
function compare(who, got, ref) {
  if (got.length !== ref.length) return `${who}: ${got.length} outputs, reference ${ref.length}`;
  for (let k = 0; k < ref.length; k++) {
    const g = got[k], r = ref[k];
    if (g.dtype !== r.dtype || String(g.shape) !== String(r.shape))
      return `${who}: output ${k}: ${g.dtype}[${g.shape}] vs the reference's ${r.dtype}[${r.shape}]`;
    // float16/bfloat16 elements come as bit patterns: compare their values
    const vals = (t) => t.dtype === 'float16' ? tp.float16ToFloat32(t.toArray())
      : t.dtype === 'bfloat16' ? tp.bfloat16ToFloat32(t.toArray()) : t.toArray();
    const a = Array.from(vals(g), Number), b = Array.from(vals(r), Number);
    const isf = r.dtype === 'float32' || r.dtype === 'float16' || r.dtype === 'bfloat16';
    const rel = r.dtype === 'bfloat16' ? 1.6e-2 : 2e-3, abs = r.dtype === 'float32' ? 1e-4 : 2e-3;
    let maxabs = 0;
    if (isf) for (const v of b) if (Number.isFinite(v)) maxabs = Math.max(maxabs, Math.abs(v));
    for (let i = 0; i < b.length; i++) {
      const v = a[i], w = b[i];
      const ok = !isf ? v === w : Number.isNaN(w) ? Number.isNaN(v)
        : !Number.isFinite(w) ? v === w : Math.abs(v - w) <= abs * (1 + maxabs) + rel * Math.abs(w);
      if (!ok) return `${who}: output ${k} element ${i}: ${v}, reference ${w}`;
    }
  }
  return '';
}

test('diff: the fixture holds the generated graphs', () => {
  assert.ok(graphs.length >= 300, `${graphs.length} graphs in fixtures/diff_graphs.txt`);
});

test('diff: reference, eager and stax (generated Wasm) agree on every generated graph', () => {
  let compared = 0, generatedKernels = 0, refused = 0;
  const bad = [];
  for (const { seed, text: gt } of graphs) {
    tp.scope(() => {
      const g = tp.graph.parse(gt);
      try {
        const ins = inputsOf(gt);
        let ref;
        try {
          ref = tp.compile((...xs) => g.run(xs), { backend: 'reference', name: `ref_${seed}` })(...ins);
        } catch (e) {
          refused++; // the reference refuses (e.g. an index out of range for these inputs)
          return;
        }
        ref = [ref].flat();
        const eager = g.run(ins);
        const staxFn = tp.compile((...xs) => g.run(xs), { backend: 'stax', name: `stax_${seed}` });
        const stax1 = [staxFn(...ins)].flat();
        const stax2 = [staxFn(...ins)].flat();
        const why = compare('eager', eager, ref) || compare('stax (first call)', stax1, ref) ||
          compare('stax (second call)', stax2, ref);
        if (why) bad.push(`seed ${seed}: ${why}\n${gt}`);
        for (const p of staxFn.explain().backend_plans ?? []) generatedKernels += p.generated ?? 0;
        compared++;
      } finally {
        g.dispose();
      }
    });
  }
  console.log(`diff (wasm): ${compared} graphs compared, ${refused} refused by the reference, ` +
    `${generatedKernels} generated kernels, ${bad.length} mismatches`);
  assert.deepEqual(bad, []);
  assert.ok(compared >= graphs.length * 0.9, `only ${compared} of ${graphs.length} compared`);
  // the generated code is exercised where the host runs it (Node has SIMD128)
  if (tp.isa.includes('simd')) assert.ok(generatedKernels >= compared / 2, `${generatedKernels} generated kernels`);
});

test('diff: a 1% error in one element is caught', () => {
  let tried = 0, caught = 0;
  for (const { text: gt } of graphs.slice(0, 60)) {
    tp.scope(() => {
      const g = tp.graph.parse(gt);
      try {
        const ins = inputsOf(gt);
        let ref;
        try { ref = [tp.compile((...xs) => g.run(xs), { backend: 'reference' })(...ins)].flat(); } catch { return; }
        const eager = g.run(ins);
        const k = eager.findIndex((t) => t.dtype === 'float32' && Array.from(t.toArray()).some(Number.isFinite));
        if (k < 0) return;
        const a = Float32Array.from(eager[k].toArray());
        const i = a.findIndex(Number.isFinite);
        const big = Math.max(...Array.from(a).filter(Number.isFinite).map(Math.abs));
        a[i] += 0.01 * (1 + big);
        eager[k] = tp.tensor(a).reshape(eager[k].shape);
        tried++;
        if (compare('nudged', eager, ref)) caught++;
      } finally {
        g.dispose();
      }
    });
  }
  assert.ok(tried >= 20, `only ${tried} graphs with a finite float output`);
  assert.equal(caught, tried);
});
