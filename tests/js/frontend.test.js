// tp.compiler frontend (issue 3): config, compile() options and their
// errors in the seed's order, guards and recompiles, explain, reset, shape
// reads, records (the capture modes), markers, annotations.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';
import { getCore } from '../../js/src/tensor.js';

const C = tp.compiler;
const live0 = tp.liveTensors();

/** assert.throws with the error class and a message substring. */
function throwsWith(fn, Cls, text) {
  assert.throws(fn, (e) => {
    assert.ok(e instanceof Cls, `expected ${Cls.name}, got ${e && e.constructor && e.constructor.name}: ${e && e.message}`);
    if (text) assert.ok(e.message.includes(text), `message ${JSON.stringify(e.message)} lacks ${JSON.stringify(text)}`);
    return true;
  });
}

const arr = (t) => Array.from(t.toArray());

// ---- config -----------------------------------------------------------------

test('config: defaults, get/set through the core, reset, unknown keys', () => {
  C.config.reset();
  assert.equal(C.config.assumeStaticByDefault, true);
  assert.equal(C.config.verbose, false);
  assert.equal(C.config.failOnRecompileLimitHit, false);
  assert.equal(C.config.forceDisableCaches, false);
  assert.equal(C.config.dynamicShapes, null);
  assert.equal(C.config.recompileLimit, 8);
  assert.equal(C.config.accumulatedRecompileLimit, 256);
  assert.deepEqual(Object.keys(C.config), C.config.keys());
  assert.equal('verbose' in C.config, true);
  C.config.recompileLimit = 3;
  assert.equal(C.config.recompileLimit, 3);
  assert.equal(C.config.recompile_limit, 3, 'the Python spelling works too');
  C.config.verbose = 'yes'; // any value is stored; compile() validates
  assert.equal(C.config.verbose, 'yes');
  C.config.dynamicShapes = 1.5;
  assert.equal(C.config.dynamicShapes, 1.5);
  const o = { a: 1 };
  C.config.assumeStaticByDefault = o;
  assert.equal(C.config.assumeStaticByDefault, o);
  C.config.reset();
  assert.equal(C.config.recompileLimit, 8);
  assert.equal(C.config.verbose, false);
  throwsWith(() => { C.config.noSuchKey = 1; }, tp.ValueError, "unknown config key 'noSuchKey'");
  assert.equal(C.config.noSuchKey, undefined);
  assert.deepEqual(C.config.toJSON().recompileLimit, 8);
});

test('config.threads: checked when set, ignored by the single-threaded Wasm core (explain says so)', async () => {
  // the threads core starts its workers in the background (tp.threadsReady,
  // docs/build.md): until then explain() says no worker runs yet
  await tp.threadsReady;
  C.config.reset();
  assert.equal(C.config.threads, null);
  for (const [v, text] of [
    [0, 'config.threads must be from 1 to 256 (None: the default), got 0'],
    [-1, 'got -1'],
    [1000, 'got 1000 (too many threads)'],
    [2.5, "config.threads must be an int from 1 to 256 or None (the default: TP_NUM_THREADS, else the number of cores), got <class 'float'>"],
    [true, "got <class 'bool'>"],
    ['4', "got <class 'str'>"],
  ]) {
    throwsWith(() => { C.config.threads = v; }, tp.ValueError, text);
    assert.equal(C.config.threads, null, `unchanged after ${JSON.stringify(v)}`);
  }
  const g = C.compile((x) => x.mul(2).add(1));
  const x = tp.tensor([1, 2, 3]);
  const run = () => {
    const y = g(x);
    try { return arr(y); } finally { y.dispose(); }
  };
  try {
    assert.deepEqual(run(), [3, 5, 7]);
    // the Wasm threads core (TP_WASM_THREADS, docs/build.md) uses it, up to
    // the workers it started
    const threaded = getCore()?.threaded;
    // tp.threadsReady gives up after 1 s; on a loaded machine a worker can
    // start later than that (explain() then says no worker runs yet)
    for (let i = 0; threaded && i < 300 && /no workers running/.test(g.explain().threads); i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    const e1 = g.explain().threads;
    const n = threaded ? /^Wasm threads: (\d+) thread/.exec(e1)?.[1] : '1';
    assert.equal(e1, threaded
      ? `Wasm threads: ${n} thread${n === '1' ? '' : 's'} (workers; ${n - 1} worker${n === '2' ? '' : 's'} running)`
      : 'single-threaded Wasm build: 1 thread');
    C.config.threads = 4;
    assert.equal(C.config.threads, 4);
    assert.deepEqual(run(), [3, 5, 7]);
    assert.equal(g.explain().threads, threaded
      ? (n >= 4 ? `Wasm threads: 4 threads (config.threads; ${n - 1} workers running)`
        : `Wasm threads: ${n} thread${n === '1' ? '' : 's'} (config.threads = 4, but ${n - 1} worker${n === '2' ? '' : 's'} running)`)
      : 'single-threaded Wasm build: 1 thread (config.threads = 4 ignored)');
    C.config.threads = null;
    assert.equal(C.config.threads, null);
  } finally {
    C.config.reset();
    x.dispose();
    g.dispose();
  }
});

test('config values are validated by compile() in the seed order', () => {
  const f = (x) => x;
  const cases = [
    ['assumeStaticByDefault', 1, TypeError, 'config.assume_static_by_default must be a bool'],
    ['verbose', null, TypeError, 'config.verbose must be a bool'],
    ['failOnRecompileLimitHit', 'x', TypeError, 'config.fail_on_recompile_limit_hit must be a bool'],
    ['forceDisableCaches', 0, TypeError, 'config.force_disable_caches must be a bool'],
    ['dynamicShapes', 'yes', TypeError, 'config.dynamic_shapes must be a bool or None'],
    ['accumulatedRecompileLimit', 0, tp.ValueError, 'config.accumulated_recompile_limit must be a positive integer'],
    ['accumulatedRecompileLimit', 2.5, tp.ValueError, 'config.accumulated_recompile_limit must be a positive integer'],
    ['accumulatedRecompileLimit', true, tp.ValueError, 'config.accumulated_recompile_limit must be a positive integer'],
    ['recompileLimit', 1.5, TypeError, 'recompile_limit must be an integer'],
    ['recompileLimit', 0, tp.ValueError, 'recompile_limit must be positive'],
  ];
  try {
    for (const [k, v, Cls, msg] of cases) {
      C.config.reset();
      C.config[k] = v;
      throwsWith(() => C.compile(f), Cls, msg);
      // checked before the decorator form is returned
      throwsWith(() => C.compile(), Cls, msg);
    }
    C.config.reset();
    // verbose is checked before dynamicShapes (the seed's order)
    C.config.verbose = 1;
    C.config.dynamicShapes = 'x';
    throwsWith(() => C.compile(f), TypeError, 'config.verbose must be a bool');
    C.config.reset();
    C.config.recompileLimit = null; // None: no limit, valid
    const g = C.compile(f);
    assert.equal(typeof g, 'function');
    g.dispose();
  } finally {
    C.config.reset();
  }
});

// ---- compile() options ----------------------------------------------------------

test('compile(): option errors with the seed messages and kinds', () => {
  const f = (x) => x;
  throwsWith(() => C.compile(f, { dynamic: true, dynamicShapes: true }), tp.RuntimeError,
    'dynamic and dynamic_shapes cannot both be specified');
  throwsWith(() => C.compile(f, { dynamicShapes: 'x' }), TypeError,
    'TensorPlay dynamic_shapes currently accepts only a bool');
  throwsWith(() => C.compile(f, { mode: 'default', options: {} }), tp.RuntimeError,
    'Either mode or options can be specified, but not both');
  throwsWith(() => C.compile(f, { options: [1] }), TypeError, "options must be a dict, got <class 'list'>");
  throwsWith(() => C.compile(f, { options: 'x' }), TypeError, "options must be a dict, got <class 'str'>");
  throwsWith(() => C.compile(f, { recompileLimit: 2.5 }), TypeError, 'recompile_limit must be an integer');
  throwsWith(() => C.compile(f, { recompileLimit: 0 }), tp.ValueError, 'recompile_limit must be positive');
  throwsWith(() => C.compile(f, { recompileLimit: true }), TypeError, 'recompile_limit must be an integer');
  throwsWith(() => C.compile(f, { options: { 'stax.fusio': true } }), tp.RuntimeError,
    'Unexpected optimization option stax.fusio');
  throwsWith(() => C.compile(f, { options: { 'stax.fusion': 1 } }), TypeError, 'stax.fusion must be a bool');
  throwsWith(() => C.compile(f, { mode: 'fastest' }), tp.RuntimeError, 'Unrecognized mode=fastest');
  throwsWith(() => C.compile(f, { backend: 'stx' }), tp.InvalidBackend, "did you mean: 'stax'");
  // a backend of the wrong type is a TypeError, as lookupBackend(3) is (the seed's lookup)
  throwsWith(() => C.compile(f, { backend: 3 }), TypeError, "backend must be a string or a function, got <class 'int'>");
  throwsWith(() => C.compile(f, { nope: 1 }), TypeError, "unexpected keyword argument 'nope'");
  throwsWith(() => C.compile(f, { inputNames: 'x' }), TypeError, 'inputNames must be an array of strings');
  // errors come before the decorator form and before the callable check
  throwsWith(() => C.compile({ recompileLimit: 0 }), tp.ValueError, 'recompile_limit must be positive');
  throwsWith(() => C.compile(undefined, { recompileLimit: 0 }), tp.ValueError, 'recompile_limit must be positive');
  throwsWith(() => C.compile(42, { recompileLimit: 0 }), tp.ValueError, 'recompile_limit must be positive');
  // a non-callable model
  throwsWith(() => C.compile(42), TypeError, "compile() expected a callable, got <class 'int'>");
  throwsWith(() => C.compile(1.5), TypeError, "compile() expected a callable, got <class 'float'>");
  throwsWith(() => C.compile('f'), TypeError, "compile() expected a callable, got <class 'str'>");
  const t = tp.ones([1]);
  throwsWith(() => C.compile(t), TypeError, "compile() expected a callable, got <class 'Tensor'>");
  t.dispose();
});

test('compile(): decorator forms, disable, modes and options accepted', () => {
  const f = (x) => x.mul(2);
  const deco = C.compile({ backend: 'eager', name: 'double' });
  const g = deco(f);
  assert.equal(g.name, 'double');
  const deco2 = C.compile(undefined, { fullgraph: true });
  const g2 = deco2(f);
  const deco3 = C.compile();
  const g3 = deco3(f);
  assert.equal(C.compile(f, { disable: true }), f);
  const x = tp.tensor([1, 2]);
  tp.scope(() => {
    assert.deepEqual(arr(g(x)), [2, 4]);
    assert.deepEqual(arr(g2(x)), [2, 4]);
    assert.deepEqual(arr(g3(x)), [2, 4]);
  });
  for (const mode of ['default', 'reduce-overhead', 'max-autotune-no-cudagraphs', 'max-autotune']) {
    const gm = C.compile(f, { mode });
    tp.scope(() => assert.deepEqual(arr(gm(x)), [2, 4]));
    gm.dispose();
  }
  const go = C.compile(f, { options: { 'stax.fusion': false, 'stax.plan_replay': true }, strictNative: false, isolateRecompiles: true });
  tp.scope(() => assert.deepEqual(arr(go(x)), [2, 4]));
  for (const h of [g, g2, g3, go]) h.dispose();
  x.dispose();
});

test('compile(): non-tensor arguments are bound and keyed (scalars by value, objects by identity)', () => {
  let runs = 0;
  const f = (x, k, opts) => {
    runs++;
    return x.mul(k).add(opts.bias);
  };
  const g = C.compile(f, { backend: 'eager' });
  const x = tp.tensor([1, 2]);
  const o1 = { bias: 1 };
  tp.scope(() => {
    assert.deepEqual(arr(g(x, 2, o1)), [3, 5]);
    assert.deepEqual(arr(g(x, 2, o1)), [3, 5]);
    assert.equal(g.numCaptures, 1);
    assert.deepEqual(arr(g(x, 3, o1)), [4, 7]);
    assert.equal(g.numCaptures, 2, 'a new scalar value recompiles');
    assert.deepEqual(arr(g(x, 3, { bias: 0 })), [3, 6]);
    assert.equal(g.numCaptures, 3, 'another object recompiles');
  });
  assert.ok(g.recompileReasons().some((r) => r.startsWith('arguments ==')), g.recompileReasons().join('; '));
  // tensors inside arrays and objects are inputs; the structure is rebuilt
  const h = C.compile(({ a, b }, [c]) => ({ s: a.add(b), p: [c.mul(2)] }));
  tp.scope(() => {
    const r = h({ a: x, b: x }, [x]);
    assert.deepEqual(arr(r.s), [2, 4]);
    assert.deepEqual(arr(r.p[0]), [2, 4]);
    const r2 = h({ a: x, b: x }, [x]);
    assert.deepEqual(arr(r2.p[0]), [2, 4]);
    assert.equal(h.numCaptures, 1);
  });
  g.dispose();
  h.dispose();
  x.dispose();
});

// ---- guards and recompiles ------------------------------------------------------

test('recompile reasons name the failed guard', () => {
  const g = C.compile((a) => a.mul(2), { name: 'twice' });
  tp.scope(() => {
    g(tp.ones([4, 8]));
    g(tp.ones([2, 8]));
    g(tp.ones([2, 8], { dtype: 'int32' }));
    g(tp.ones([2]));
  });
  const reasons = g.recompileReasons();
  assert.deepEqual(reasons.slice(0, 1), ['inputs[0].shape == (4, 8)']);
  assert.ok(reasons.some((r) => r.includes('dtype')), reasons.join('; '));
  assert.equal(reasons.length, 3);
  const rep = g.explain();
  assert.equal(rep.captures, 4);
  assert.deepEqual(rep.recompile_reasons, reasons);
  g.dispose();
});

test('recompileLimit: compiles again without storing; fullgraph and failOnRecompileLimitHit raise', () => {
  const f = (a) => a.add(1);
  const g = C.compile(f, { recompileLimit: 2 });
  tp.scope(() => {
    g(tp.ones([1]));
    g(tp.ones([2]));
    const r = g(tp.ones([3]));
    assert.deepEqual(arr(r), [2, 2, 2], 'still correct past the limit');
  });
  assert.equal(g.numEntries, 2);
  assert.equal(g.numCaptures, 3);
  g.dispose();
  const gf = C.compile(f, { recompileLimit: 1, fullgraph: true });
  tp.scope(() => {
    gf(tp.ones([1]));
    throwsWith(() => gf(tp.ones([2])), tp.RuntimeError, 'TensorPlay compile specialization limit reached');
  });
  gf.dispose();
  C.config.failOnRecompileLimitHit = true;
  try {
    const gc = C.compile(f, { recompileLimit: 1 });
    C.config.failOnRecompileLimitHit = false; // config is read when the wrapper is made
    tp.scope(() => {
      gc(tp.ones([1]));
      throwsWith(() => gc(tp.ones([2])), tp.RuntimeError, 'TensorPlay compile specialization limit reached');
    });
    gc.dispose();
  } finally {
    C.config.reset();
  }
  // config.recompileLimit is the default
  C.config.recompileLimit = 1;
  C.config.failOnRecompileLimitHit = true;
  try {
    const gd = C.compile(f);
    tp.scope(() => {
      gd(tp.ones([1]));
      throwsWith(() => gd(tp.ones([2])), tp.RuntimeError, 'recompile_limit=1');
    });
    gd.dispose();
  } finally {
    C.config.reset();
  }
});

test('accumulatedRecompileLimit', () => {
  C.config.accumulatedRecompileLimit = 2;
  try {
    const g = C.compile((a) => a.add(1));
    tp.scope(() => {
      g(tp.ones([1]));
      g(tp.ones([2]));
      throwsWith(() => g(tp.ones([3])), tp.RuntimeError, 'TensorPlay accumulated recompilation limit reached');
      g(tp.ones([1])); // cached entries still run
    });
    g.dispose();
  } finally {
    C.config.reset();
  }
});

test('forceDisableCaches captures on every call', () => {
  C.config.forceDisableCaches = true;
  try {
    const g = C.compile((a) => a.add(1));
    const x = tp.ones([2]);
    tp.scope(() => {
      assert.deepEqual(arr(g(x)), [2, 2]);
      assert.deepEqual(arr(g(x)), [2, 2]);
    });
    assert.equal(g.numCaptures, 2);
    assert.equal(g.numEntries, 0);
    g.dispose();
    x.dispose();
  } finally {
    C.config.reset();
  }
});

test('reset() clears specializations, reasons and captures', () => {
  const g = C.compile((a) => a.add(1));
  tp.scope(() => {
    g(tp.ones([1]));
    g(tp.ones([2]));
  });
  assert.equal(g.numEntries, 2);
  assert.equal(g.recompileReasons().length, 1);
  C.reset();
  assert.equal(g.numEntries, 0);
  assert.equal(g.numCaptures, 0);
  assert.deepEqual(g.recompileReasons(), []);
  tp.scope(() => assert.deepEqual(arr(g(tp.ones([1]))), [2]));
  assert.equal(g.numCaptures, 1);
  assert.equal(tp.reset, C.reset);
  g.dispose();
});

test('dynamic: rank-only guards, unless the function read the shape', () => {
  const noRead = C.compile((a) => a.mul(2), { dynamic: true });
  tp.scope(() => {
    noRead(tp.ones([2, 3]));
    noRead(tp.ones([5, 7]));
  });
  assert.equal(noRead.numCaptures, 1, 'same rank: no recompile');
  const withRead = C.compile((a) => a.reshape(a.shape[0] * a.shape[1]), { dynamic: true });
  tp.scope(() => {
    assert.deepEqual(withRead(tp.ones([2, 3])).shape, [6]);
    assert.deepEqual(withRead(tp.ones([5, 7])).shape, [35]);
  });
  assert.equal(withRead.numCaptures, 2, 'the shape read adds an exact-shape guard');
  const reasons = withRead.recompileReasons();
  assert.equal(reasons.length, 1);
  assert.ok(reasons[0].startsWith('inputs[0].shape == (2, 3) (the shape was read at '), reasons[0]);
  assert.ok(reasons[0].includes('frontend.test.js:'), 'the reason names the line that read the shape');
  const rep = withRead.explain();
  const guards = rep.graphs.flatMap((gr) => gr.shape_guards);
  assert.ok(guards.some((s) => s.includes('frontend.test.js')), `where the shape was read: ${guards.join('; ')}`);
  // dynamicShapes: true is the same policy; config.dynamicShapes is the default
  const ds = C.compile((a) => a.mul(2), { dynamicShapes: true });
  tp.scope(() => {
    ds(tp.ones([2]));
    ds(tp.ones([3]));
  });
  assert.equal(ds.numCaptures, 1);
  C.config.dynamicShapes = true;
  const dc = C.compile((a) => a.mul(2));
  C.config.reset();
  tp.scope(() => {
    dc(tp.ones([2]));
    dc(tp.ones([3]));
  });
  assert.equal(dc.numCaptures, 1);
  assert.equal(dc.explain().dynamic, true);
  C.config.assumeStaticByDefault = false;
  const da = C.compile((a) => a.mul(2));
  C.config.reset();
  tp.scope(() => {
    da(tp.ones([2]));
    da(tp.ones([3]));
  });
  assert.equal(da.numCaptures, 1, 'assumeStaticByDefault=false means dynamic');
  for (const g of [noRead, withRead, ds, dc, da]) g.dispose();
});

test('shape reads are reported only while compiling; ndim is not a shape read', () => {
  const x = tp.ones([2, 3]);
  assert.equal(C.isCompiling(), false);
  assert.deepEqual(x.shape, [2, 3]);
  const seen = [];
  const g = C.compile((a) => {
    seen.push(C.isCompiling());
    return a.mul(a.ndim);
  }, { dynamic: true });
  tp.scope(() => {
    g(x);
    g(tp.ones([4, 5]));
  });
  assert.equal(seen[0], true);
  assert.equal(g.numCaptures, 1, 'ndim does not add a shape guard');
  g.dispose();
  x.dispose();
});

test('TP_LOGS / TP_LOG_RECOMPILES log captures and recompiles to console.warn', () => {
  const lines = [];
  const warn = console.warn;
  console.warn = (...a) => lines.push(a.join(' '));
  process.env.TP_LOG_RECOMPILES = '1';
  process.env.TP_LOGS = '1';
  try {
    const g = C.compile((a) => a.add(1), { name: 'logged' });
    tp.scope(() => {
      g(tp.ones([1]));
      g(tp.ones([2]));
    });
    g.dispose();
  } finally {
    delete process.env.TP_LOG_RECOMPILES;
    delete process.env.TP_LOGS;
    console.warn = warn;
  }
  assert.ok(lines.some((l) => l.includes('captured logged')), lines.join('\n'));
  assert.ok(lines.some((l) => l.includes('recompiling logged') && l.includes('inputs[0].shape == (1,)')), lines.join('\n'));
});

// ---- explain and the disabled helper ---------------------------------------------

test('a disabled helper in the middle: correct results, the rest compiled, explain shows it', () => {
  let helperRuns = 0;
  const helper = C.disable((t) => {
    helperRuns++;
    assert.equal(C.isCompiling(), false, 'capture is suspended inside a recursive disabled region');
    return t.mul(2).add(1);
  }, { reason: 'calls a host API' });
  const f = (x) => helper(x.add(1)).relu().sum();
  const x = tp.tensor([[1, -2], [3, 4]]);
  const want = tp.scope(() => f(x).item()); // eager: the adapter calls the original
  const g = C.compile(f, { backend: 'eager' });
  tp.scope(() => {
    assert.equal(g(x).item(), want);
    const y = tp.tensor([[0, 0], [1, 1]]);
    assert.equal(g(y).item(), tp.scope(() => f(y).item()));
  });
  assert.equal(g.numCaptures, 1);
  const text = g.graph();
  assert.match(text, /call_host/);
  assert.match(text, /disabled_region="true"/);
  assert.match(text, /reason="calls a host API"/);
  assert.match(text, /add\(%x, 1\)/, 'the op before the helper stays compiled');
  assert.match(text, /relu/, 'the ops after the helper stay compiled');
  assert.match(text, /sum/);
  const before = helperRuns;
  tp.scope(() => {
    g(x);
  });
  assert.equal(helperRuns, before + 1, 'the opaque node calls back into JS at run time');
  const rep = C.explain(f, x);
  assert.equal(rep.captures, 1);
  const regions = rep.graphs[0].opaque_regions;
  assert.equal(regions.length, 1);
  assert.equal(regions[0].mode, 'disabled');
  assert.equal(regions[0].reason, 'calls a host API');
  assert.match(rep.graphText, /call_host/);
  // compile() of the disabled function returns the original
  const orig = helper[C.MARKERS.original];
  assert.equal(C.compile(helper), orig);
  assert.equal(C.compile(orig), orig);
  g.dispose();
  x.dispose();
});

test('disable: forms and errors', () => {
  const a = (t) => t.add(1);
  const deco = C.disable({ recursive: false, reason: 'r' });
  const wa = deco(a);
  assert.equal(typeof wa, 'function');
  assert.equal(wa[C.MARKERS.mode], 'disabled');
  assert.equal(C.disable(a), wa, 're-marking with the same mode returns the same adapter');
  const b = (t) => t.add(2);
  const wb = C.disable()(b);
  assert.equal(typeof wb, 'function');
  const c = (t) => t;
  assert.equal(typeof C.disable(c, false), 'function', 'positional recursive');
  throwsWith(() => C.disable((t) => t, { recursive: 1 }), TypeError, 'recursive must be a bool');
  throwsWith(() => C.disable({ recursive: 'no' }), TypeError, 'recursive must be a bool');
  throwsWith(() => C.disable(5), tp.AssertionError, 'fn must be callable');
  throwsWith(() => C.disable()(5), tp.AssertionError, 'fn must be callable');
  throwsWith(() => C.allowInGraph(a), tp.ValueError, "cannot be marked as both 'disabled' and 'allow'");
  // outside a capture the adapter calls the original
  const x = tp.ones([1]);
  tp.scope(() => assert.deepEqual(arr(wa(x)), [2]));
  x.dispose();
  // non-recursive: the capture stays active inside
  const seen = [];
  const nr = C.disable((t) => {
    seen.push(C.isCompiling());
    return t.mul(3);
  }, { recursive: false });
  const g = C.compile((t) => nr(t).add(1));
  tp.scope(() => assert.deepEqual(arr(g(tp.ones([2]))), [4, 4]));
  assert.match(g.graph(), /disabled_recursive="false"/);
  g.dispose();
});

test('explain(fn, ...args) reports graph breaks and guards', () => {
  const f = (x) => {
    const v = x.toArray();
    return x.mul(v[0]);
  };
  const x = tp.tensor([2, 3]);
  const rep = C.explain(f, x);
  assert.equal(rep.captures, 1);
  assert.match(rep.graphs[0].graph_break, /toArray/);
  assert.equal(tp.explain, C.explain);
  x.dispose();
});

// ---- records ------------------------------------------------------------------------

test('allowInGraph: opaque node, a list gives a list, errors', () => {
  const inner = (t) => t.exp();
  const ai = C.allowInGraph(inner);
  assert.equal(ai[C.MARKERS.original], inner);
  assert.equal(C.allowInGraph(inner), ai);
  const [p, q] = C.allowInGraph([(t) => t.neg(), (t) => t.abs()]);
  assert.equal(typeof p, 'function');
  assert.equal(typeof q, 'function');
  throwsWith(() => C.allowInGraph(3), tp.AssertionError, 'allow_in_graph expects a callable');
  throwsWith(() => C.allowInGraph([(t) => t, 'x']), tp.AssertionError, 'allow_in_graph expects a callable');
  const g = C.compile((t) => q(ai(t)).add(1));
  const x = tp.tensor([0, 1]);
  tp.scope(() => {
    const r = arr(g(x));
    assert.ok(Math.abs(r[0] - 2) < 1e-6 && Math.abs(r[1] - (Math.E + 1)) < 1e-5, r.join());
  });
  const text = g.graph();
  assert.match(text, /opaque_mode="allow"/);
  assert.equal((text.match(/call_host/g) || []).length, 2);
  g.dispose();
  x.dispose();
});

test('nonstrictTrace: structured arguments and outputs', () => {
  const fn = (t, { k }, pair) => ({ a: t.mul(k), b: [pair[0].add(pair[1])] });
  const nt = C.nonstrictTrace(fn);
  throwsWith(() => C.nonstrictTrace(null), tp.AssertionError, 'nonstrict_trace expects a callable');
  const g = C.compile((x, y) => {
    const r = nt(x, { k: 3 }, [x, y]);
    return r.a.add(r.b[0]);
  });
  const x = tp.tensor([1, 2]);
  const y = tp.tensor([10, 20]);
  tp.scope(() => {
    assert.deepEqual(arr(g(x, y)), [14, 28]);
    assert.deepEqual(arr(g(x, y)), [14, 28]);
  });
  assert.match(g.graph(), /opaque_mode="nonstrict"/);
  // a non-tensor output cannot be an opaque region
  const bad = C.nonstrictTrace((t) => 3);
  const gb = C.compile((t) => bad(t));
  tp.scope(() => throwsWith(() => gb(x), tp.GraphCaptureError, 'opaque compiler callable could not produce a tensor output'));
  g.dispose();
  gb.dispose();
  x.dispose();
  y.dispose();
});

test('assumeConstantResult: evaluated once, kept until reset()', () => {
  let runs = 0;
  const scale = C.assumeConstantResult((t) => {
    runs++;
    return t.sum();
  });
  throwsWith(() => C.assumeConstantResult(7), TypeError, "expected a callable, got <class 'int'>");
  const g = C.compile((x) => x.mul(scale(x)));
  const x = tp.tensor([1, 2]);
  const y = tp.tensor([5, 5, 5]);
  tp.scope(() => {
    assert.deepEqual(arr(g(x)), [3, 6]);
    assert.equal(runs, 1);
    // another shape: a new capture reuses the constant
    assert.deepEqual(arr(g(y)), [15, 15, 15]);
    assert.equal(runs, 1);
  });
  C.reset();
  tp.scope(() => {
    assert.deepEqual(arr(g(y)), [75, 75, 75]);
    assert.equal(runs, 2, 'reset() forgets the constant');
  });
  // outside a capture: the original
  tp.scope(() => assert.equal(scale(x).item(), 3));
  assert.equal(runs, 3);
  C.reset(); // the stored constant is released
  g.dispose();
  x.dispose();
  y.dispose();
});

test('substituteInGraph: replacement traced, original outside; signature checks', () => {
  const orig = (x, alpha = 1) => x.mul(alpha).add(1000);
  const wrapped = C.substituteInGraph(orig)((x, alpha = 1) => x.mul(alpha));
  const x = tp.tensor([1, 2]);
  tp.scope(() => assert.deepEqual(arr(wrapped(x, 2)), [1002, 1004], 'eager: the original'));
  const g = C.compile((t) => wrapped(t, 2));
  tp.scope(() => assert.deepEqual(arr(g(x)), [2, 4], 'capture: the replacement'));
  g.dispose();
  // compile(original) compiles through the substitution
  const g2 = C.compile(orig);
  tp.scope(() => assert.deepEqual(arr(g2(x, 1)), [1, 2]));
  g2.dispose();
  throwsWith(() => C.substituteInGraph(orig)((x, alpha = 1) => x), tp.ValueError, 'a substitution is already registered');
  throwsWith(() => C.substituteInGraph(5), TypeError, "substitute_in_graph expects a function but got <class 'int'>");
  throwsWith(() => C.substituteInGraph(class A {}), TypeError, "substitute_in_graph expects a function but got <class 'type'>");
  throwsWith(() => C.substituteInGraph((a) => a, { canConstantFoldThrough: 1 }), TypeError, 'can_constant_fold_through must be a bool');
  throwsWith(() => C.substituteInGraph((a) => a, { skipSignatureCheck: 'no' }), TypeError, 'skip_signature_check must be a bool');
  throwsWith(() => C.substituteInGraph((a) => a)('x'), TypeError, "@substitute_in_graph(...) expects a function but got <class 'str'>");
  throwsWith(() => C.substituteInGraph((a, b) => a)((a, c) => a), TypeError, 'substitution signature (a, c) does not match (a, b)');
  throwsWith(() => C.substituteInGraph((a, b = 1) => a)((a, b = 2) => a), TypeError, 'substitution signature (a, b=2) does not match (a, b=1)');
  throwsWith(() => C.substituteInGraph((a, { k } = {}) => a)((a, { j } = {}) => a), TypeError, 'substitution signature (a, *, j) does not match (a, *, k)');
  // wildcards, skipSignatureCheck, explicit descriptors
  assert.equal(typeof C.substituteInGraph((a, b) => a)((...args) => args[0]), 'function');
  assert.equal(typeof C.substituteInGraph((a, b) => a, { skipSignatureCheck: true })((z) => z), 'function');
  const nativeLike = Math.hypot; // source is [native code]: no check possible
  assert.equal(typeof C.substituteInGraph(nativeLike)((a, b) => a), 'function');
  throwsWith(() => C.substituteInGraph((a) => a, { signature: { positional: ['x', 'y'], defaults: { y: 2 } } })((x, y) => x),
    TypeError, 'substitution signature (x, y) does not match (x, y=2)');
  assert.equal(typeof C.substituteInGraph((a) => a, { signature: { positional: ['x'] } })((x) => x), 'function');
  throwsWith(() => C.substituteInGraph((a) => a)(function ({ a: [b] }) { return b; }), TypeError, 'unable to inspect the replacement signature');
  assert.deepEqual(C.signatureOf(function f(a, b = 3, ...rest) {}), { positional: ['a', 'b'], keywordOnly: [], defaults: { b: '3' }, wildcard: false });
  x.dispose();
});

test('nestedCompileRegion: results, forms, option errors', () => {
  const block = C.nestedCompileRegion((t, w) => t.matmul(w).relu());
  const g = C.compile((x, w) => block(block(x, w), w).sum());
  const x = tp.tensor([[1, -1], [2, 3]]);
  const w = tp.tensor([[1, 0], [0, 1]]);
  tp.scope(() => {
    const want = tp.scope(() => block(block(x, w), w).sum().item());
    assert.equal(g(x, w).item(), want);
    assert.equal(g(x, w).item(), want);
  });
  g.dispose();
  const deco = C.nestedCompileRegion({ maxReuseEntries: 2, reuseHashFn: () => 1 });
  assert.equal(typeof deco((t) => t), 'function');
  const opts = new C.NestedCompileRegionOptions({ fwCompiler: (gr) => (...a) => a[0] });
  assert.ok(Object.isFrozen(opts));
  assert.equal(opts.bwCompiler, null);
  assert.equal(typeof C.nestedCompileRegion((t) => t.add(1), { options: opts }), 'function');
  assert.equal(typeof C.nestedCompileRegion()((t) => t.add(2)), 'function');
  throwsWith(() => C.nestedCompileRegion((t) => t, { maxReuseEntries: 1.5 }), TypeError, 'max_reuse_entries must be an integer');
  throwsWith(() => C.nestedCompileRegion((t) => t, { maxReuseEntries: true }), TypeError, 'max_reuse_entries must be an integer');
  throwsWith(() => C.nestedCompileRegion((t) => t, { maxReuseEntries: 0 }), tp.ValueError, 'max_reuse_entries must be positive');
  throwsWith(() => C.nestedCompileRegion((t) => t, { reuseHashFn: 3 }), TypeError, 'reuse_hash_fn must be callable');
  throwsWith(() => C.nestedCompileRegion((t) => t, { options: {} }), TypeError, 'options must be a NestedCompileRegionOptions instance or None');
  throwsWith(() => C.nestedCompileRegion((t) => t, { options: new C.NestedCompileRegionOptions({ bwCompiler: 'x' }) }),
    TypeError, 'nested region compiler options must be callable or None');
  throwsWith(() => C.nestedCompileRegion({ maxReuseEntries: 0 }), tp.ValueError, 'max_reuse_entries must be positive');
  x.dispose();
  w.dispose();
});

test('disallowInGraph, markStatic, export, unused, overloadMethod', () => {
  const f = (t) => t;
  assert.equal(C.disallowInGraph(f), f);
  throwsWith(() => C.disallowInGraph(1), tp.AssertionError, 'disallow_in_graph expects a callable');
  const x = tp.ones([1]);
  assert.equal(C.markStatic(x), x);
  assert.equal(C.markStatic(x, 0), x);
  x.dispose();
  const e = () => 1;
  assert.equal(C.export(e), e);
  assert.equal(e[C.MARKERS.export], true);
  const e2 = () => 2;
  assert.equal(C.export()(e2), e2);
  assert.equal(e2[C.MARKERS.export], true);
  assert.equal(tp.export, C.export);
  const u = () => 3;
  assert.equal(C.unused(u), u);
  assert.equal(u[C.MARKERS.unused], true);
  const o = () => 4;
  assert.equal(C.overloadMethod(o), o);
  assert.equal(o[C.MARKERS.overload], true);
  for (const m of [C.export, C.unused, C.overloadMethod]) {
    throwsWith(() => m(5), TypeError, "expected a callable, got <class 'int'>");
  }
  throwsWith(() => C.export()('s'), TypeError, "expected a callable, got <class 'str'>");
  const frozen = Object.freeze(() => 5);
  assert.equal(C.unused(frozen), frozen, 'a frozen function is returned unmarked');
});

test('isCompiling, isExporting, disableCapture', () => {
  assert.equal(C.isCompiling(), false);
  assert.equal(C.isExporting(), false);
  assert.equal(C.disableCapture(() => 7), 7);
  const seen = [];
  const g = C.compile((t) => {
    seen.push(C.isCompiling());
    C.disableCapture(() => {
      seen.push(C.isCompiling());
      assert.throws(() => t.add(1), tp.GraphCaptureError);
    });
    seen.push(C.isCompiling());
    return t.mul(2);
  });
  tp.scope(() => assert.deepEqual(arr(g(tp.ones([1]))), [2]));
  assert.deepEqual(seen, [true, false, true]);
  // the previous state is restored after an exception
  const g2 = C.compile((t) => {
    try {
      C.disableCapture(() => {
        throw new Error('boom');
      });
    } catch {
      /* ignore */
    }
    seen.push(C.isCompiling());
    return t;
  });
  tp.scope(() => {
    g2(tp.ones([1]));
  });
  assert.equal(seen.at(-1), true);
  throwsWith(() => C.disableCapture(3), TypeError, 'disableCapture expects a callable');
  g.dispose();
  g2.dispose();
});

test('annotations: Final, annotate, isinstance (origin-only)', () => {
  const o = { a: 1 };
  assert.equal(C.Final(o), o);
  assert.equal(C.annotate(Number, 3), 3);
  assert.equal(C.isinstance(3, Number), true);
  assert.equal(C.isinstance('s', String), true);
  assert.equal(C.isinstance(3, String), false);
  assert.equal(C.isinstance([1], { origin: Array, args: [String] }), true, 'only the origin is checked');
  assert.equal(C.isinstance({}, { origin: Array, args: [] }), false);
  assert.equal(C.isinstance(3, [String, Number]), true);
  assert.equal(C.isinstance(null, null), true);
  assert.equal(C.isinstance(3, 'number'), true);
  assert.equal(C.isinstance([], 'list'), true);
  assert.equal(C.isinstance(5, C.Final.of(Number)), true);
  const t = tp.ones([1]);
  assert.equal(C.isinstance(t, tp.Tensor), true);
  t.dispose();
  throwsWith(() => C.isinstance(1, 5), TypeError, 'isinstance() arg 2 must be');
});

test('no tensors leaked by this file', () => {
  assert.equal(tp.liveTensors(), live0);
});

test('nestedCompileRegion: one child graph per key, reused, with its limit', () => {
  let calls = 0;
  const block = C.nestedCompileRegion((t) => {
    calls++;
    return t.mul(t).add(1);
  });
  const g = C.compile((a, b) => block(a).add(block(a)).add(block(b)), { backend: 'eager' });
  const a = tp.tensor([1, 2, 3]), b = tp.tensor([2, 3, 4]);
  tp.scope(() => {
    // 2 (a^2 + 1) + (b^2 + 1)
    assert.deepEqual([...g(a, b).toArray()], [9, 20, 37]);
    assert.equal(calls, 2, 'block(a) traced once and reused; block(b) (other values) traced once');
    const text = g.graph();
    assert.equal((text.match(/^subgraph "_tensorplay_nested_region_/gm) ?? []).length, 2);
    assert.equal((text.match(/ = invoke\(/g) ?? []).length, 3);
    calls = 0;
    assert.deepEqual([...g(a, b).toArray()], [9, 20, 37]);
    assert.equal(calls, 0, 'the cached graph runs the child graphs');
  });
  g.dispose();
  // the reuse limit
  const one = C.nestedCompileRegion((t) => t.add(1), { maxReuseEntries: 1 });
  const h = C.compile((p, q) => one(p).add(one(q)));
  throwsWith(() => h(a, b), tp.GraphCaptureError, 'nested compile region reuse limit reached');
  h.dispose();
  // reuseHashFn decides the key: one entry for both calls despite other values
  let traced = 0;
  const hashed = C.nestedCompileRegion((t) => { traced++; return t.mul(2); }, { reuseHashFn: () => 7, maxReuseEntries: 1 });
  const k = C.compile((p, q) => hashed(p).add(hashed(q)));
  tp.scope(() => assert.deepEqual([...k(a, a).toArray()], [4, 8, 12]));
  assert.equal(traced, 1);
  k.dispose();
  const bad = C.nestedCompileRegion((t) => t, { reuseHashFn: () => 'x' });
  const kb = C.compile((p) => bad(p).add(1));
  throwsWith(() => kb(a), tp.GraphCaptureError, 'reuse_hash_fn must return an integer');
  kb.dispose();
  a.dispose();
  b.dispose();
});
