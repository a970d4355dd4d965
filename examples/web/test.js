// test.js - API checks on a page's main thread (examples/web/test.html), read
// by tests/browser/api_in_browser.test.mjs from window.tpResults once
// document.body.dataset.done is "1". Each result: { file, name, status:
// 'pass'|'fail'|'skip', error?, reason?, info? }.
const results = [];
window.tpResults = results;
const list = document.getElementById('results');

function report(r) {
  results.push(r);
  const li = document.createElement('li');
  li.className = r.status;
  li.textContent = `${r.status.toUpperCase()} ${r.file}: ${r.name}${r.reason ? ` (${r.reason})` : ''}${r.info ? ` - ${JSON.stringify(r.info)}` : ''}`;
  if (r.error) li.append(Object.assign(document.createElement('pre'), { textContent: r.error }));
  list.append(li);
}

function check(name, fn) {
  return { name, fn };
}

function eq(a, b, what) {
  if (!Object.is(a, b)) throw new Error(`${what}: ${String(a)} !== ${String(b)}`);
}
function near(a, b, tol, what) {
  if (!(Math.abs(a - b) <= tol * Math.max(1, Math.abs(b)))) throw new Error(`${what}: ${a} vs ${b}`);
}
function throwsLike(fn, cls, re, what) {
  try {
    fn();
  } catch (e) {
    if (!(e instanceof cls)) throw new Error(`${what}: threw ${e?.name} (${e?.message}), expected ${cls.name}`);
    if (re && !re.test(e.message)) throw new Error(`${what}: message ${JSON.stringify(e.message)} does not match ${re}`);
    return e;
  }
  throw new Error(`${what}: did not throw`);
}

async function apiChecks(tp) {
  const checks = [
    check('package loads in a browser (no Node globals needed)', () => {
      eq(typeof process, 'undefined', 'process is not defined on a page');
      eq(typeof tp.version, 'string', 'version');
      if (!tp.opNames.includes('matmul')) throw new Error('opNames lacks matmul');
      // the file the import map gave for js/index.js (?pkg=bundle: the bundle)
      // and the package files this page fetched
      const fetched = performance.getEntriesByType('resource').map((e) => new URL(e.name).pathname)
        .filter((p) => /\/js\/(index\.js|dist\/tensorplay\.mjs)$/.test(p));
      return { version: tp.version, isa: tp.isa, memory: tp.memoryBytes(), entry: import.meta.resolve('../../js/index.js'), fetched };
    }),
    check('tensor ops: create, broadcast, matmul, softmax, reductions', () => {
      const before = tp.liveTensors();
      tp.scope(() => {
        const a = tp.tensor([[1, 2], [3, 4]]);
        eq(a.dtype, 'float32', 'dtype');
        eq(JSON.stringify(Array.from(a.add(1).toArray())), '[2,3,4,5]', 'a + 1');
        eq(JSON.stringify(Array.from(a.mul(tp.tensor([10, 100])).toArray())), '[10,200,30,400]', 'broadcast mul');
        eq(JSON.stringify(Array.from(tp.matmul(a, a).toArray())), '[7,10,15,22]', 'matmul');
        const s = tp.softmax(a, 1).sum({ dim: 1 }).toArray();
        near(s[0], 1, 1e-6, 'softmax row 0');
        near(s[1], 1, 1e-6, 'softmax row 1');
        eq(a.sum().item(), 10, 'sum');
        eq(a.transpose(0, 1).toList()[0][1], 3, 'transpose view');
        const i = tp.tensor(new Int32Array([1, 2, 3]));
        eq(i.add(1).dtype, 'int32', 'int32 + 1 stays int32');
        eq(i.add(1.5).dtype, 'float32', 'int32 + 1.5 is float32');
        eq(tp.arange(5).toArray()[4], 4, 'arange');
      });
      eq(tp.liveTensors(), before, 'no tensors leaked');
    }),
    check('compile with stax: same result as eager, generated code active', () => {
      const before = tp.liveTensors();
      const x = tp.randn([64, 256], { seed: 5 });
      const f = (x) => x.mul(1.5).sub(0.25).tanh().mul(x.sigmoid()).sum({ dim: 1 });
      const g = tp.compile(f, { backend: 'stax' });
      const want = tp.scope(() => f(x));
      const got = g(x);
      const a = want.toArray(), b = got.toArray();
      for (let k = 0; k < a.length; k++) near(b[k], a[k], 1e-4, `y[${k}]`);
      const plan = g.explain().backend_plans[0];
      if (!plan) throw new Error('no backend plan');
      if (!(plan.generated >= 1)) throw new Error(`generated = ${plan.generated}: no generated code runs (${JSON.stringify(plan)})`);
      const again = g(x);
      eq(g.numCaptures, 1, 'replayed, not recaptured');
      for (const t of [x, want, got, again]) t.dispose();
      g.dispose();
      eq(tp.liveTensors(), before, 'no tensors leaked');
      return plan;
    }),
    check('compileAsync / g.ready on the main thread', async () => {
      if (typeof tp.compiler.compileAsync !== 'function') return { skipped: 'compiler.compileAsync is not in this build' };
      const x = tp.randn([16, 64], { seed: 4 });
      const g = await tp.compiler.compileAsync((x) => x.mul(2).gelu().softmax(-1), { backend: 'stax' }, x);
      await g.ready;
      const plan = g.explain().backend_plans[0];
      if (!(plan.generated >= 1)) throw new Error(`generated = ${plan.generated} after ready`);
      tp.scope(() => {
        const want = x.mul(2).gelu().softmax(-1).toArray();
        const got = g(x).toArray();
        for (let k = 0; k < want.length; k++) near(got[k], want[k], 1e-4, `y[${k}]`);
      });
      g.dispose();
      x.dispose();
      return plan;
    }),
    check('a module too large to compile synchronously on the main thread: executor first, generated code after g.ready', async () => {
      // 12 fused chains: a 13 KB module; Chromium refuses synchronous
      // WebAssembly.Module compiles over 4 KB on a page's main thread, so
      // jit.js compiles it asynchronously and the plan runs on the executor
      // until it is installed (docs/codegen.md, "Loading protocol")
      const x = tp.randn([16, 64], { seed: 5 });
      const f = (x) => { const outs = []; for (let i = 0; i < 12; i++) outs.push(x.mul(i + 1).tanh().add(i).sigmoid().mul(x)); return outs; };
      const want = tp.scope(() => f(x).map((t) => t.toArray()));
      const g = tp.compile(f, { backend: 'stax' });
      const first = g(x);
      const before = g.explain().backend_plans[0];
      first.forEach((t, i) => { const a = t.toArray(); for (let k = 0; k < a.length; k += 37) near(a[k], want[i][k], 1e-5, `before ready: out ${i} y[${k}]`); t.dispose(); });
      if (before.generated !== 0) throw new Error(`expected the executor while the module compiles, got ${before.generated} generated kernels`);
      await g.ready;
      const after = g.explain().backend_plans[0];
      if (after.generated !== after.kernels) throw new Error(`after ready: ${after.generated} of ${after.kernels} kernels generated`);
      const second = g(x);
      second.forEach((t, i) => { const a = t.toArray(); for (let k = 0; k < a.length; k += 37) near(a[k], want[i][k], 1e-5, `after ready: out ${i} y[${k}]`); t.dispose(); });
      g.dispose();
      x.dispose();
      return { before: before.generated, after: after.generated, kernels: after.kernels };
    }),
    check("the first call's result comes from the backend's function", () => {
      const x = tp.tensor([1, 2]);
      const g = tp.compile((a) => tp.relu(a.add(1)), { backend: () => (...a) => tp.mul(a[0], 0) });
      const y1 = g(x);
      const y2 = g(x);
      const r = [...y1.toArray(), ...y2.toArray()];
      for (const t of [x, y1, y2]) t.dispose();
      g.dispose();
      // eager would give [2, 3]
      for (let k = 0; k < 4; k++) eq(r[k], 0, `call ${(k >> 1) + 1} y[${k & 1}]`);
      return { first: r.slice(0, 2), second: r.slice(2) };
    }),
    check('compile with every backend and mode', () => {
      const x = tp.randn([8, 16], { seed: 6 });
      const w = tp.randn([16, 16], { seed: 7 });
      const f = (x) => tp.gelu(tp.matmul(x, w)).softmax(-1);
      const want = tp.scope(() => f(x)).toArray();
      const out = {};
      for (const backend of ['stax', 'eager', 'reference']) {
        for (const mode of ['default', 'reduce-overhead', 'max-autotune']) {
          const g = tp.compile(f, { backend, mode });
          const y = g(x); // the first call: computed by the backend's compiled function
          const b = y.toArray();
          for (let k = 0; k < b.length; k++) near(b[k], want[k], 1e-4, `${backend}/${mode} y[${k}]`);
          if (backend === 'stax' && !(g.explain().backend_plans[0]?.kernels >= 1)) {
            throw new Error(`stax/${mode}: no plan computed the first call`);
          }
          out[`${backend}/${mode}`] = g.explain().backend_plans.length;
          y.dispose();
          g.dispose();
        }
      }
      x.dispose();
      w.dispose();
      return out;
    }),
    check('emitWasm: the generated module validates in this browser', () => {
      const x = tp.randn([32, 64], { seed: 8 });
      const g = tp.compile((x) => x.exp().add(1).log().sum({ dim: 1 }), { backend: 'stax' });
      g(x).dispose();
      const gr = tp.graph.parse(g.graph({ withData: true }));
      const bytes = tp.graph.emitWasm(gr);
      gr.dispose();
      g.dispose();
      x.dispose();
      if (!WebAssembly.validate(bytes)) throw new Error('the emitted module does not validate');
      return { bytes: bytes.length };
    }),
    check('errors are exceptions with the core message', () => {
      const a = tp.zeros([2, 3]), b = tp.zeros([4]);
      const e = throwsLike(() => a.add(b), tp.TensorPlayError, /\[2, ?3\].*\[4\]|\[4\].*\[2, ?3\]/, 'shape mismatch');
      eq(e.code, 1, 'INVALID_ARG');
      throwsLike(() => tp.compile((x) => x, { backend: 'no-such-backend' }), Error, /no-such-backend/, 'unknown backend');
      const g = tp.compile((x) => x.add(x.sum().item()), { fullgraph: true });
      throwsLike(() => g(a), tp.GraphCaptureError, /item\(\)/, 'graph break under fullgraph');
      g.dispose();
      throwsLike(() => tp.tensor([[1, 2], [3]]), tp.TensorPlayError, null, 'ragged');
      throwsLike(() => tp.zeros([2], { dtype: 'float17' }), tp.TensorPlayError, null, 'bad dtype');
      a.dispose();
      throwsLike(() => a.toArray(), tp.DisposedError, /disposed/, 'use after dispose');
      b.dispose();
    }),
    check('scope and dispose', () => {
      const before = tp.liveTensors();
      const x = tp.randn([16], { seed: 2 });
      const y = tp.scope(() => x.mul(2).add(1).relu());
      eq(tp.liveTensors(), before + 2, 'only x and y are alive');
      const kept = tp.scope(() => ({ a: x.exp(), list: [x.neg(), 3] }));
      eq(kept.list[1], 3, 'non-tensors returned as they were');
      eq(tp.liveTensors(), before + 4, 'the scope kept the returned tensors');
      let threw = false;
      try {
        tp.scope(async () => x);
      } catch (e) {
        threw = e instanceof TypeError;
      }
      if (!threw) throw new Error('an async scope function is not rejected with TypeError');
      for (const t of [x, y, kept.a, kept.list[0]]) t.dispose();
      x.dispose(); // idempotent
      eq(tp.liveTensors(), before, 'all freed');
    }),
    check('graph text and .npy round trips', () => {
      const t = tp.tensor([[1.5, -2], [3, 4]]);
      const back = tp.npy.decode(tp.npy.encode(t));
      eq(JSON.stringify(back.toList()), JSON.stringify(t.toList()), 'npy');
      const text = 'tpgraph v1\n%x = placeholder : f32[2,2]\n%w = get_attr "w" : f32[2]\n%0 = mul(%x, 2) : f32[2,2]\n%1 = add(%0, %w) : f32[2,2]\noutput(%1)\ndata %w f32[2] AAAAPwAAgL8=\n';
      const gr = tp.graph.parse(text);
      const [y] = gr.run([t]);
      eq(JSON.stringify(Array.from(y.toArray())), JSON.stringify([3.5, -5, 6.5, 7]), 'graph.run');
      eq(gr.print({ withData: true }), text, 'print(parse(text)) == text');
      gr.dispose();
      for (const z of [t, back, y]) z.dispose();
    }),
    check('memory grows past 256 MB; tensors and compiled code made before still work', () => {
      const before = tp.liveTensors();
      const MB = 2 ** 20;
      const start = tp.memoryBytes();
      const first = tp.tensor([1, 2, 3, 4]);
      const view = tp.scope(() => tp.arange(12).reshape(3, 4).transpose(0, 1)); // a view made before growth
      const x = tp.randn([64, 128], { seed: 9 });
      const g = tp.compile((x) => x.exp().mul(0.5).sum({ dim: 1 }), { backend: 'stax' });
      g(x).dispose(); // the first call returns the capture's (eager) result; later calls run the plan
      const y0 = tp.scope(() => g(x).toArray());
      const held = [];
      let i = 0;
      const t0 = performance.now();
      while (tp.memoryBytes() <= 288 * MB) {
        held.push(tp.full([4 * MB], i)); // 16 MB each
        i++;
        if (i > 64) throw new Error(`memory did not grow past 288 MB (${tp.memoryBytes()})`);
      }
      const growMs = performance.now() - t0;
      eq(JSON.stringify(Array.from(first.toArray())), '[1,2,3,4]', 'small tensor after growth');
      eq(JSON.stringify(view.toList()[1]), '[1,5,9]', 'view after growth');
      tp.scope(() => {
        for (let k = 0; k < held.length; k++) {
          const h = held[k];
          eq(h.slice(0, 0, 1).item(), k, `held[${k}] first`);
          eq(h.slice(0, -1).item(), k, `held[${k}] last`);
        }
        eq(held[held.length - 1].sum().item(), 4 * MB * (held.length - 1), 'sum over the last 16 MB tensor');
      });
      const y1 = tp.scope(() => g(x).toArray());
      for (let k = 0; k < y0.length; k++) eq(y1[k], y0[k], `compiled result after growth [${k}]`);
      const peak = tp.memoryBytes();
      for (const t of [first, view, x, ...held]) t.dispose();
      g.dispose();
      eq(tp.liveTensors(), before, 'all freed');
      // the core still allocates after the big ones were freed
      const z = tp.ones([8 * MB]);
      tp.scope(() => eq(z.sum().item(), 8 * MB, 'a 32 MB tensor after freeing'));
      z.dispose();
      return { startMB: +(start / MB).toFixed(1), peakMB: +(peak / MB).toFixed(1), tensors16MB: held.length, growMs: +growMs.toFixed(1) };
    }),
  ];
  for (const c of checks) {
    try {
      const info = await c.fn();
      report({ file: 'test.js', name: c.name, status: 'pass', info: info ?? undefined });
    } catch (e) {
      report({ file: 'test.js', name: c.name, status: 'fail', error: `${e?.name}: ${e?.message}\n${e?.stack ?? ''}` });
    }
  }
}

// A test of tests/js that failed only because it needs Node (process.env,
// node: modules) is counted as a skip with that reason.
function needsNode(e) {
  const m = String(e?.message ?? e);
  if (e instanceof ReferenceError && /\bprocess\b|\bBuffer\b|\brequire\b/.test(m)) return `needs Node (${m})`;
  return null;
}

async function main() {
  const params = new URLSearchParams(location.search);
  let tp;
  try {
    tp = await import('../../js/index.js');
  } catch (e) {
    report({ file: 'test.js', name: 'import js/index.js', status: 'fail', error: `${e?.name}: ${e?.message}` });
    return;
  }
  const files = (params.get('files') ?? '').split(',').filter(Boolean);
  if (files.length) {
    const { run } = await import('node:test');
    for (const f of files) {
      const file = `${f}.test.js`;
      try {
        await import(`../../tests/js/${file}`);
      } catch (e) {
        report({ file, name: '(import)', status: 'fail', error: `${e?.name}: ${e?.message}` });
        continue;
      }
      for (const r of await run(file, needsNode)) report(r);
    }
  }
  // after the test files: they expect a fresh core (memory.test.js checks growth past 64 MB)
  if (params.get('checks') !== '0') await apiChecks(tp);
}

try {
  await main();
} finally {
  const n = (s) => results.filter((r) => r.status === s).length;
  document.getElementById('summary').textContent = `${n('pass')} passed, ${n('fail')} failed, ${n('skip')} skipped`;
  document.body.dataset.done = '1';
}
