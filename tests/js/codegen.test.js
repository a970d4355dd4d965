// The SIMD128 code generator: stax emits one Wasm module per compiled graph
// (pointwise and row kernels), the host installs it in the core's function
// table, and the generated code must give the same numbers as the kernel-IR
// executor in the same build (bit for bit for pointwise chains: the emitter
// repeats the core's vector math operation for operation) and as eager.
// Every emitted module passes WebAssembly.validate and, when it is on the
// machine, wabt's wasm-validate.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tp from '../../js/index.js';

const C = tp.compiler;
let haveWabt = true;
try {
  execFileSync('wasm-validate', ['--version'], { stdio: 'ignore' });
} catch {
  haveWabt = false;
}

function rng(seed) {
  let s = seed >>> 0;
  return (n) => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s % n;
  };
}

// Random graphs of the ops stax fuses: elementwise chains with broadcasting
// and views, softmax, layer_norm and trailing reductions.
function randomFn(seed) {
  const r = rng(seed);
  const un = [tp.neg, tp.abs, tp.exp, tp.tanh, tp.sigmoid, tp.relu, (t) => tp.gelu(t, { approximate: 'tanh' }),
    (t) => tp.gelu(t), (t) => tp.log(tp.abs(t).add(0.5)), (t) => tp.sqrt(tp.abs(t)), (t) => tp.rsqrt(tp.abs(t).add(1))];
  const bin = [tp.add, tp.sub, tp.mul, (a, b) => tp.div(a, tp.abs(b).add(1))];
  const steps = 3 + r(8);
  const plan = [];
  for (let i = 0; i < steps; i++) plan.push([r(10), r(un.length), r(bin.length), r(1000)]);
  const rows = r(2) === 0;
  return (x, b) => {
    const vals = [x.add(b)];
    for (const [kind, u, bi, pick] of plan) {
      const a = vals[pick % vals.length], c = vals[(pick * 7) % vals.length];
      if (kind < 4) vals.push(un[u](a));
      else if (kind < 7) vals.push(bin[bi](a, c));
      else if (kind === 7) vals.push(a.mul(((pick % 17) - 8) / 4));
      else if (kind === 8 && rows) vals.push(tp.softmax(a, -1));
      else if (kind === 9 && rows) vals.push(tp.layerNorm(a, [a.shape[1]], null, b, { eps: 1e-5 }));
      else vals.push(a.transpose(0, 1).transpose(0, 1).add(c));
    }
    const y = vals[vals.length - 1];
    return rows ? [y, y.sum({ dim: 1, keepdim: true }), y.max({ dim: -1 })] : [y];
  };
}

function bitsEqual(a, b) {
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  for (let i = 0; i < x.length; i++) {
    if (x[i] !== y[i] && !(Number.isNaN(a[i]) && Number.isNaN(b[i]))) return i;
  }
  return -1;
}

test('generated kernels run and match the executor and eager on random graphs', () => {
  let generated = 0, exact = 0, worst = 0;
  for (let seed = 1; seed <= 40; seed++) {
    const f = randomFn(seed);
    const R = 1 + (seed * 7) % 23, Cn = 1 + (seed * 13) % 61;
    tp.scope(() => {
      const x = tp.randn([R, Cn], { seed }).mul(2), b = tp.randn([Cn], { seed: seed + 100 });
      const gj = C.compile(f, { options: { 'stax.codegen': true } });
      const gx = C.compile(f, { options: { 'stax.codegen': false } });
      const ge = C.compile(f, { backend: 'eager' });
      for (const g of [gj, gx, ge]) g(x, b); // capture
      const yj = gj(x, b), yx = gx(x, b), ye = ge(x, b);
      const plans = gj.explain().backend_plans;
      generated += plans.length ? plans[0].generated : 0;
      assert.equal(gx.explain().backend_plans[0].generated, 0, 'codegen off: no generated kernel');
      const rowKernels = plans.length ? plans[0].row : 0;
      yj.forEach((t, i) => {
        const a = t.toArray(), c = yx[i].toArray(), e = ye[i].toArray();
        if (rowKernels === 0) {
          assert.equal(bitsEqual(a, c), -1, `seed ${seed} output ${i}: generated code and executor differ in bits`);
          exact++;
        }
        // per element: 2e-5 of the element plus 5e-6 of the output's scale
        // (the fast vector math is a few ulp from eager's, GEMMs and row
        // sums add in another order), as tests/c/lower/test_lower.c
        let scale = 1e-3;
        for (let k = 0; k < a.length; k++) scale = Math.max(scale, Math.abs(e[k]));
        for (let k = 0; k < a.length; k++) {
          if (Number.isNaN(a[k]) && Number.isNaN(e[k])) continue;
          const err = Math.max(Math.abs(a[k] - e[k]), Math.abs(a[k] - c[k]));
          const tol = 2e-5 * Math.abs(e[k]) + 5e-6 * scale;
          worst = Math.max(worst, err / tol);
          assert.ok(err <= tol, `seed ${seed} output ${i} [${k}]: ${a[k]} vs eager ${e[k]}, executor ${c[k]}`);
        }
      });
      for (const g of [gj, gx, ge]) g.dispose();
    });
  }
  assert.ok(generated >= 40, `generated kernels were used (${generated})`);
  assert.ok(exact > 5, 'some graphs were pointwise only (bit-exact check)');
  console.log(`codegen differential: worst error / bound ${worst.toFixed(3)}`);
});

test('interleaved pointwise loops: rows of 8k+1..8k+7 elements, gathered (transposed) and broadcast inputs, bit for bit with the executor', () => {
  // the vector loop runs 2 vectors interleaved, then single vectors, then
  // lanes; a transposed operand is gathered lane by lane (an i32 temporary
  // per copy); rows of 9..37 elements exercise every remainder
  for (const [R, Cn] of [[3, 9], [5, 13], [4, 21], [2, 37], [7, 8], [1, 64]]) {
    tp.scope(() => {
      const x = tp.randn([R, Cn], { seed: R * 100 + Cn }).mul(3);
      const xt = tp.randn([Cn, R], { seed: Cn }).mul(2); // read transposed: stride R
      const b = tp.randn([Cn], { seed: 7 });
      const f = (a, at, bb) => [a.mul(1.5).sub(at.transpose(0, 1)).tanh().mul(a.add(bb).sigmoid()),
        at.transpose(0, 1).exp().mul(0.25).add(bb.gelu())];
      const gj = C.compile(f, { options: { 'stax.codegen': true } });
      const gx = C.compile(f, { options: { 'stax.codegen': false } });
      // a first run on other data, its outputs freed: an element the
      // generated code fails to write would keep a stale value and differ
      // (the first call captures, and its result comes from the trace)
      tp.scope(() => { gj(x.neg(), xt.mul(0.5), b.add(1)); gx(x.neg(), xt.mul(0.5), b.add(1)); });
      const yj = gj(x, xt, b), yx = gx(x, xt, b);
      assert.ok(gj.explain().backend_plans[0].generated >= 1, 'generated code ran');
      yj.forEach((t, i) => assert.equal(bitsEqual(t.toArray(), yx[i].toArray()), -1, `[${R},${Cn}] output ${i}: generated and executor differ`));
      const want = f(x, xt, b);
      want.forEach((t, i) => {
        const a = yj[i].toArray(), e = t.toArray();
        for (let k = 0; k < a.length; k++) assert.ok(Math.abs(a[k] - e[k]) <= 1e-5 + 1e-5 * Math.abs(e[k]), `[${R},${Cn}] output ${i} y[${k}] ${a[k]} vs eager ${e[k]}`);
      });
      gj.dispose();
      gx.dispose();
    });
  }
});

test('every emitted module validates (WebAssembly.validate and wasm-validate)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tp-emit-'));
  try {
    const graphs = [
      'tpgraph v1\n%x = placeholder : f32[1003]\n%0 = mul(%x, 1.5) : f32[1003]\n%1 = sub(%0, 0.25) : f32[1003]\n' +
        '%2 = tanh(%1) : f32[1003]\n%3 = sigmoid(%x) : f32[1003]\n%4 = mul(%2, %3) : f32[1003]\noutput(%4)\n',
      'tpgraph v1\n%x = placeholder : f32[7,33]\n%b = placeholder : f32[33]\n%0 = add(%x, %b) : f32[7,33]\n' +
        '%1 = softmax(%0, dim=-1) : f32[7,33]\n%2 = layer_norm(%1, none, %b, normalized_shape=[33], eps=1e-05) : f32[7,33]\n' +
        '%3 = sum(%2, dims=[1], keepdim=true) : f32[7,1]\n%4 = transpose(%x, dim0=0, dim1=1) : f32[33,7]\n' +
        '%5 = gelu(%4, approximate=none) : f32[33,7]\n%6 = log(%5) : f32[33,7]\noutput(%2, %3, %6)\n',
    ];
    graphs.forEach((text, i) => {
      const g = tp.graph.parse(text);
      const bytes = tp.graph.emitWasm(g);
      g.dispose();
      assert.ok(bytes.length > 8 && bytes[0] === 0 && bytes[1] === 0x61, 'a Wasm module');
      assert.ok(WebAssembly.validate(bytes), `graph ${i}: WebAssembly.validate`);
      if (haveWabt) {
        const p = join(dir, `g${i}.wasm`);
        writeFileSync(p, bytes);
        execFileSync('wasm-validate', ['--enable-all', p]);
      }
    });
    // a graph with nothing to generate says so
    const g = tp.graph.parse('tpgraph v1\n%x = placeholder : i32[4]\n%0 = neg(%x) : i32[4]\noutput(%0)\n');
    assert.throws(() => tp.graph.emitWasm(g), /no kernel to emit/);
    g.dispose();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('one run entry per module: kernels in order, op kernels through env.tp_jit_kernel, errors stop the run', () => {
  // exports f0..f(n-1) and run (= f<n>); the import exists only when some
  // kernel is left to the core (here: the cast, an op kernel)
  const withOp = tp.graph.parse('tpgraph v1\n%x = placeholder : f32[64]\n%0 = mul(%x, 2) : f32[64]\n' +
    '%1 = cast(%0, dtype=i32) : i32[64]\n%2 = cast(%1, dtype=f32) : f32[64]\n%3 = add(%2, 0.5) : f32[64]\noutput(%3)\n');
  const pure = tp.graph.parse('tpgraph v1\n%x = placeholder : f32[64]\n%0 = exp(%x) : f32[64]\noutput(%0)\n');
  try {
    const m1 = new WebAssembly.Module(tp.graph.emitWasm(withOp));
    const ex1 = WebAssembly.Module.exports(m1).map((e) => e.name);
    assert.ok(ex1.includes('run'), `exports: ${ex1}`);
    const nk = ex1.filter((n) => /^f\d+$/.test(n)).length;
    assert.ok(nk >= 2, 'kernels plus the run entry');
    assert.deepEqual(WebAssembly.Module.imports(m1).map((i) => `${i.module}.${i.name}:${i.kind}`).sort(),
      ['env.memory:memory', 'env.tp_jit_kernel:function']);
    const m2 = new WebAssembly.Module(tp.graph.emitWasm(pure));
    assert.deepEqual(WebAssembly.Module.imports(m2).map((i) => i.name), ['memory']);
  } finally {
    withOp.dispose();
    pure.dispose();
  }
  // the same through tp.compile: generated kernels around an op kernel
  tp.scope(() => {
    const x = tp.tensor(Float32Array.from({ length: 64 }, (_, i) => (i - 30) * 0.37), { shape: [64] });
    const f = tp.compile((a) => a.mul(2).cast('int32').cast('float32').add(0.5), { backend: 'stax', name: 'run_entry' });
    const want = Array.from(x.toArray(), (v) => Math.trunc(Math.fround(v * 2)) + 0.5);
    assert.deepEqual(Array.from(f(x).toArray()), want);
    assert.deepEqual(Array.from(f(x).toArray()), want, 'second run');
    const plan = f.explain().backend_plans[0];
    assert.ok(plan.generated >= 2 && plan.op >= 1, `generated and op kernels: ${JSON.stringify(plan)}`);
    f.dispose();
    // an error inside a kernel run through the callback stops the run and
    // leaves the runtime usable
    let calls = 0;
    const host = tp.compiler.allowInGraph((t) => {
      // call 1: the capture; 2: the first call's compiled run; 3: the second call
      if (++calls === 3) throw new Error('host kernel failed on purpose');
      return t.neg();
    });
    const g = tp.compile((a) => host(a.exp()).mul(3), { backend: 'stax', name: 'run_entry_err' });
    const y1 = g(x);
    const e1 = Array.from(x.toArray(), (v) => -Math.fround(Math.exp(v)) * 3);
    Array.from(y1.toArray()).forEach((v, i) => assert.ok(Math.abs(v - e1[i]) <= 1e-5 * Math.abs(e1[i]) + 1e-6, `y[${i}]`));
    assert.throws(() => g(x), /host kernel failed on purpose/);
    const y3 = g(x);
    assert.equal(y3.shape[0], 64, 'usable after the error');
    g.dispose();
  });
});

test('g.wasmModule(): the module stax installed, byte for byte the one emitted for the same graph', () => {
  tp.scope(() => {
    const x = tp.randn([8, 48], { seed: 11 });
    const w = tp.randn([48, 40], { seed: 12 });
    const b = tp.randn([40], { seed: 13 });
    const fn = (a) => tp.matmul(a, w).add(b).relu().mul(0.5).tanh();
    const g = tp.compile(fn, { backend: 'stax', name: 'wasm_module' });
    assert.equal(g.wasmModule(), null, 'nothing compiled yet');
    g(x);
    const bytes = g.wasmModule();
    assert.ok(bytes instanceof Uint8Array && bytes.length > 8, 'module bytes');
    assert.deepEqual(Array.from(bytes.subarray(0, 4)), [0x00, 0x61, 0x73, 0x6d], 'the Wasm magic');
    assert.ok(WebAssembly.validate(bytes), 'validates');
    const exports = WebAssembly.Module.exports(new WebAssembly.Module(bytes)).map((e) => e.name);
    assert.ok(exports.includes('run'), `exports: ${exports}`);
    // the same bytes as emitting the captured graph (with its weights) anew
    const parsed = tp.graph.parse(g.graph({ withData: true }));
    try {
      assert.deepEqual(Array.from(bytes), Array.from(tp.graph.emitWasm(parsed)));
    } finally {
      parsed.dispose();
    }
    // a copy: changing it changes nothing in the core
    bytes.fill(0);
    assert.ok(WebAssembly.validate(g.wasmModule()));
    // no module: other backends, codegen off, after reset(); disposed: an error
    const ge = tp.compile(fn, { backend: 'eager', name: 'wasm_module_eager' });
    ge(x);
    assert.equal(ge.wasmModule(), null, 'eager generates nothing');
    const gx = tp.compile(fn, { backend: 'stax', name: 'wasm_module_nocg', options: { 'stax.codegen': false } });
    gx(x);
    assert.equal(gx.wasmModule(), null, 'stax.codegen off');
    tp.compiler.reset();
    assert.equal(g.wasmModule(), null, 'after reset()');
    for (const h of [g, ge, gx]) h.dispose();
    assert.throws(() => g.wasmModule(), (e) => e instanceof tp.DisposedError);
  });
});

test('the module cache key: the hash the core marks with TP_JIT_HASHED', async () => {
  // env.tp_host_load_module on a stand-in core: two modules of the same
  // length, (func (export "f0") (result i32) i32.const 1) and ... 2
  const J = await import('../../js/src/jit.js');
  const memory = new WebAssembly.Memory({ initial: 1 });
  const table = new WebAssembly.Table({ initial: 0, element: 'anyfunc' });
  const core = {
    memory,
    exports: { __indirect_function_table: table },
    views: () => ({ u8: new Uint8Array(memory.buffer), i32: new Int32Array(memory.buffer) }),
  };
  const mod = (k) => Uint8Array.of(0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7f,
    0x02, 0x0f, 0x01, 0x03, 0x65, 0x6e, 0x76, 0x06, 0x6d, 0x65, 0x6d, 0x6f, 0x72, 0x79, 0x02, 0x00, 0x01,
    0x03, 0x02, 0x01, 0x00,
    0x07, 0x06, 0x01, 0x02, 0x66, 0x30, 0x00, 0x00,
    0x0a, 0x06, 0x01, 0x04, 0x00, 0x41, k, 0x0b);
  const errors = [];
  const load = (bytes, io) => {
    core.views().u8.set(bytes, 64);
    core.views().i32.set(io, 4); // out_ptr = 16
    const r = J.hostLoadModule(core, (m) => errors.push(m), 64, bytes.length, 1, 16, true);
    if (r < 0) return null;
    assert.equal(r, 0, errors.join('; '));
    return table.get(core.views().i32[4])();
  };
  // without the mark (out_ptr[0..2] left 0) the load fails, naming it
  assert.equal(load(mod(1), [0, 0, 0]), null);
  assert.match(errors.pop() ?? '', /TP_JIT_HASHED/);
  // marked: the core's hash is the key (the same hash finds the cached module)
  const HASHED = 0x31485054;
  assert.equal(load(mod(1), [HASHED, 0x1234, 0x5678]), 1);
  assert.equal(load(mod(2), [HASHED, 0x1234, 0x5678]), 1, 'the key is the core\'s hash');
  assert.equal(load(mod(2), [HASHED, 0x1235, 0x5678]), 2);
});

test('max-autotune times the generated GEMM tiles (on top of the blocking) and keeps the results', () => {
  tp.scope(() => {
    // a shape no other test uses, so that neither decision is cached yet
    const x = tp.randn([37, 96], { seed: 5 }), w = tp.randn([96, 70], { seed: 6 }), b = tp.randn([70], { seed: 7 });
    const fn = (a) => tp.relu(tp.matmul(a, w).add(b));
    const want = fn(x).toArray();
    const tuned = [];
    const runs = [['executor', { 'stax.max_autotune': true, 'stax.codegen': false }],
      ['generated', { 'stax.max_autotune': true }], ['generated again', { 'stax.max_autotune': true }]];
    for (const [name, options] of runs) {
      const f = tp.compile(fn, { backend: 'stax', name: `tune_${tuned.length}`, options });
      const got = f(x).toArray();
      for (let i = 0; i < want.length; i++) assert.ok(Math.abs(got[i] - want[i]) <= 1e-4 + 1e-4 * Math.abs(want[i]), `${name} y[${i}]`);
      const plan = f.explain().backend_plans[0];
      assert.equal(plan.generated, name === 'executor' ? 0 : plan.kernels, `${name}: generated kernels`);
      tuned.push(plan.autotuned);
      f.dispose();
    }
    // executor: the blocking (kc, mc) is measured; generated: the blocking
    // comes from the cache and the tile rows are measured; again: both cached
    assert.deepEqual(tuned, [1, 1, 0]);
  });
});

test('with relaxed SIMD (--experimental-wasm-relaxed-simd) the generated code fuses multiply-adds', () => {
  // A child process with the flag: the host probe reports relaxed SIMD, the
  // emitter writes f32x4.relaxed_madd, results stay within rounding of eager.
  const script = `
    import * as tp from ${JSON.stringify(new URL('../../js/index.js', import.meta.url).href)};
    const f = (x) => tp.tanh(x.mul(1.5).sub(0.25)).mul(tp.sigmoid(x)).add(tp.gelu(x));
    const x = tp.randn([10007], { seed: 3 }).mul(3);
    const g = tp.compiler.compile(f), e = tp.compiler.compile(f, { backend: 'eager' });
    g(x); e(x);
    const a = g(x).toArray(), b = e(x).toArray();
    let err = 0, diff = 0;
    for (let i = 0; i < a.length; i++) { err = Math.max(err, Math.abs(a[i] - b[i])); diff += a[i] !== b[i]; }
    console.log(JSON.stringify({ generated: g.explain().backend_plans[0].generated, err, diff }));`;
  let out;
  try {
    out = execFileSync(process.execPath, ['--experimental-wasm-relaxed-simd', '--input-type=module', '-e', script],
      { encoding: 'utf8', env: process.env });
  } catch (e) {
    if (/bad option|not allowed/.test(String(e.stderr))) return; // this Node lacks the flag
    throw e;
  }
  const r = JSON.parse(out.trim().split('\n').pop());
  assert.ok(r.generated >= 1, 'generated code ran');
  assert.ok(r.err <= 1e-5, `max error ${r.err}`);
  assert.ok(r.diff > 0, 'fused multiply-adds change some bits (the relaxed path is really used)');
});

test('generated GEMMs (with fused epilogues) match the executor on odd shapes', () => {
  // M < 4: the tile has M rows (1: the hey_jarvis head's GEMV 1x128x1536, several depth blocks)
  const shapes = [[1, 5, 3], [3, 8, 17], [7, 13, 300], [13, 31, 257], [64, 40, 513], [5, 1, 9], [1, 128, 1536], [2, 20, 600]];
  for (const [M, N, K] of shapes) {
    tp.scope(() => {
      const W = tp.randn([K, N], { seed: M + N }), b = tp.randn([N], { seed: K }), Wl = tp.randn([N, K], { seed: 7 });
      const x = tp.randn([M, K], { seed: 3 }), r = tp.randn([M, N], { seed: 4 });
      const fns = [
        (x, r) => tp.matmul(x, W),
        (x, r) => tp.relu(tp.matmul(x, W).add(b)).add(r),
        (x, r) => tp.gelu(tp.linear(x, Wl, b), { approximate: 'tanh' }),
        (x, r) => tp.sigmoid(tp.linear(x, Wl)).mul(r.sum({ dim: 1, keepdim: true })),
      ];
      fns.forEach((f, fi) => {
        const gj = C.compile(f), gx = C.compile(f, { options: { 'stax.codegen': false } });
        const ge = C.compile(f, { backend: 'eager' });
        for (const g of [gj, gx, ge]) g(x, r);
        const plan = gj.explain().backend_plans[0];
        assert.ok(plan.generated >= plan.gemm, `${M}x${N}x${K} f${fi}: the GEMMs are generated (${JSON.stringify(plan)})`);
        const a = gj(x, r).toArray(), c = gx(x, r).toArray(), e = ge(x, r).toArray();
        let scale = 1e-3, err = 0;
        for (let k = 0; k < a.length; k++) scale = Math.max(scale, Math.abs(e[k]));
        for (let k = 0; k < a.length; k++) err = Math.max(err, Math.abs(a[k] - e[k]), Math.abs(a[k] - c[k]));
        assert.ok(err <= 1e-5 * scale * Math.max(1, Math.sqrt(K) / 8), `${M}x${N}x${K} f${fi}: error ${err} (scale ${scale})`);
        for (const g of [gj, gx, ge]) g.dispose();
      });
    });
  }
});

test('compileAsync and g.ready: the async path used on browsers main threads', async () => {
  const n0 = tp.liveTensors();
  const x = tp.randn([1000], { seed: 5 });
  const g = await C.compileAsync((t) => tp.tanh(t).mul(2), {}, x);
  await g.ready;
  assert.equal(g.numCaptures, 1);
  assert.ok(g.explain().backend_plans[0].generated >= 1);
  const y = g(x), e = tp.scope(() => tp.tanh(x).mul(2));
  const a = y.toArray(), b = e.toArray();
  for (let i = 0; i < a.length; i++) assert.ok(Math.abs(a[i] - b[i]) <= 1e-6);
  for (const t of [x, y, e]) t.dispose();
  g.dispose();
  assert.equal(tp.liveTensors(), n0, 'the example call leaks nothing');
});

test('globalThis.tensorplayJitAsync: the first call runs on the executor, g.ready installs the module', async () => {
  const n0 = tp.liveTensors();
  const x = tp.randn([64, 96], { seed: 7 }), w = tp.randn([96, 40], { seed: 8 }), b = tp.randn([40], { seed: 9 });
  const f = (t) => tp.relu(tp.matmul(t, w).add(b));
  const ref = () => { // an independent reference: the sum in double precision
    const xa = x.toArray(), wa = w.toArray(), ba = b.toArray(), out = new Float64Array(64 * 40);
    for (let i = 0; i < 64; i++) for (let j = 0; j < 40; j++) {
      let s = ba[j];
      for (let k = 0; k < 96; k++) s += xa[i * 96 + k] * wa[k * 40 + j];
      out[i * 40 + j] = Math.max(0, s);
    }
    return out;
  };
  const close = (y, e, what) => {
    const a = y.toArray();
    assert.equal(a.length, e.length, what);
    for (let i = 0; i < a.length; i++) assert.ok(Math.abs(a[i] - e[i]) <= 1e-4 * (1 + Math.abs(e[i])), `${what}: [${i}] ${a[i]} vs ${e[i]}`);
  };
  const e = ref();
  globalThis.tensorplayJitAsync = true;
  let g;
  try {
    g = C.compile(f, { backend: 'stax', name: 'jit_async' });
    const y1 = g(x); // capture, lowering, code generation; the module compiles asynchronously
    const before = g.explain().backend_plans[0];
    assert.equal(before.generated, 0, `the first call ran on the executor: ${JSON.stringify(before)}`);
    close(y1, e, 'first call (executor)');
    const ready = g.ready;
    assert.ok(ready instanceof Promise);
    await ready;
    const after = g.explain().backend_plans[0];
    assert.ok(after.generated >= 1, `the module is installed after g.ready: ${JSON.stringify(after)}`);
    const y2 = g(x);
    close(y2, e, 'second call (generated module)');
    for (const t of [y1, y2]) t.dispose();
  } finally {
    delete globalThis.tensorplayJitAsync;
  }
  // without the flag (and off a page's main thread) modules compile synchronously again
  const g2 = C.compile((t) => f(t).mul(2), { backend: 'stax', name: 'jit_sync' });
  const y3 = g2(x);
  assert.ok(g2.explain().backend_plans[0].generated >= 1, 'installed on the first call');
  close(y3, e.map((v) => 2 * v), 'sync compile');
  await g2.ready; // resolves at once: nothing pending
  for (const t of [x, w, b, y3]) t.dispose();
  g.dispose();
  g2.dispose();
  assert.equal(tp.liveTensors(), n0, 'nothing leaks');
});
