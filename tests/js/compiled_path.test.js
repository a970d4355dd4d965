// Issue 15: every call of a compiled function, the first included, runs the
// backend's compiled function; where the JS frontend follows TensorPlay
// (backend types, dynamic policy, disableCapture, lookupBackend callables,
// InvalidBackend) and the type of every compile() option.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';

const C = tp.compiler;
const live0 = tp.liveTensors();

function throwsWith(fn, Cls, text) {
  assert.throws(fn, (e) => {
    assert.ok(e instanceof Cls, `expected ${Cls.name}, got ${e && e.constructor && e.constructor.name}: ${e && e.message}`);
    if (text) assert.ok(e.message.includes(text), `message ${JSON.stringify(e.message)} lacks ${JSON.stringify(text)}`);
    return true;
  });
}

const relu1 = (x) => tp.relu(x.add(1));

test("the first call's result comes from the backend's function", () => {
  let compiles = 0;
  const zero = (graph, examples) => {
    compiles++;
    assert.match(graph.print(), /relu/);
    assert.deepEqual(examples[0].shape, [2]);
    return (...a) => tp.mul(a[0], 0);
  };
  for (const backend of [zero, 'zero_named']) {
    if (backend === 'zero_named') C.registerBackend(zero, { name: 'zero_named' });
    try {
      const g = C.compile(relu1, { backend });
      const x = tp.tensor([1, 2]);
      tp.scope(() => {
        // eager gives [2, 3]; the backend's function gives [0, 0] on every call
        assert.deepEqual(Array.from(g(x).toArray()), [0, 0], 'first call bypassed the backend');
        assert.deepEqual(Array.from(g(x).toArray()), [0, 0]);
      });
      assert.deepEqual(Array.from(x.toArray()), [1, 2], 'inputs are left as they were');
      assert.equal(g.numCaptures, 1);
      x.dispose();
      g.dispose();
    } finally {
      if (backend === 'zero_named') C.unregisterBackend('zero_named');
    }
  }
  assert.equal(compiles, 2);
});

test('a wrapping backend delegates to stax; its results come from stax', () => {
  const log = [];
  const logging = (graph, examples, opts) => {
    log.push(graph.print());
    const inner = C.lookupBackend('stax')(graph, examples, opts);
    return (...xs) => {
      log.push('run');
      return inner(...xs);
    };
  };
  const g = C.compile((a, b) => tp.relu(a.mul(b)).add(0.5), { backend: logging });
  const a = tp.tensor([-1, 2, 3]);
  const b = tp.tensor([4, 5, -6]);
  tp.scope(() => {
    assert.deepEqual(Array.from(g(a, b).toArray()), [0.5, 10.5, 0.5]);
    assert.deepEqual(Array.from(g(a, b).toArray()), [0.5, 10.5, 0.5]);
  });
  assert.equal(log.length, 3);
  assert.match(log[0], /relu/);
  assert.deepEqual(log.slice(1), ['run', 'run']);
  g.dispose();
  // stax itself, called directly: a compiled function on a parsed graph
  const graph = tp.graph.parse(
    'tpgraph v1\n%x = placeholder : f32[3]\n%y = mul(%x, %x) : f32[3]\n%z = add(%y, 1) : f32[3]\noutput(%z)\n');
  const stax = C.lookupBackend('stax');
  const run = stax(graph, [a]);
  const [out] = run(a);
  assert.deepEqual(Array.from(out.toArray()), [2, 5, 10]);
  out.dispose();
  run.dispose();
  throwsWith(() => run(a), tp.DisposedError, 'disposed');
  // the returned compiled function is what makes the results: a backend
  // that returns stax's runner as is
  const passthrough = C.compile((x) => x.mul(3), { backend: (gr, ex, o) => stax(gr, ex, o) });
  tp.scope(() => assert.deepEqual(Array.from(passthrough(a).toArray()), [-3, 6, 9]));
  passthrough.dispose();
  // compile() takes the callable lookupBackend returned, as the name
  const viaFn = C.compile((x) => x.sub(1), { backend: stax });
  tp.scope(() => assert.deepEqual(Array.from(viaFn(a).toArray()), [-2, 1, 2]));
  viaFn.dispose();
  // bad arguments are named
  throwsWith(() => stax('graph', [a]), TypeError, 'expected a Graph');
  throwsWith(() => stax(graph, [1]), TypeError, 'exampleInputs must be an array of Tensors');
  throwsWith(() => stax(graph, [a], { mode: 'fastest' }), tp.RuntimeError, 'Unrecognized mode=fastest');
  throwsWith(() => stax(graph, [a], { dynamic: 1 }), TypeError, 'dynamic must be a bool or None');
  throwsWith(() => stax(graph, [a], { bogus: true }), TypeError, "unexpected key 'bogus'");
  graph.dispose();
  a.dispose();
  b.dispose();
});

test('the resolved dynamic policy reaches the backend', () => {
  let seen;
  const spy = (graph, ex, opts) => {
    seen = opts.dynamic;
    return (...xs) => graph.run(xs);
  };
  const x = tp.tensor([1, 2]);
  const cases = [
    [{}, {}, undefined], // None: static by default
    [{ dynamic: true }, {}, true],
    [{ dynamic: false }, {}, false],
    [{}, { dynamicShapes: true }, true],
    [{}, { assumeStaticByDefault: false }, true],
    [{}, { dynamicShapes: false, assumeStaticByDefault: false }, false],
    [{ dynamicShapes: true }, {}, true],
  ];
  try {
    for (const [opts, cfg, want] of cases) {
      C.config.reset();
      Object.assign(C.config, cfg);
      const g = C.compile(relu1, { ...opts, backend: spy });
      seen = 'not called';
      tp.scope(() => {
        g(x);
      });
      assert.equal(seen, want, `options ${JSON.stringify(opts)} config ${JSON.stringify(cfg)}`);
      g.dispose();
    }
  } finally {
    C.config.reset();
  }
  x.dispose();
});

test('a compiled function called inside disableCapture() runs the original eagerly', () => {
  let sawCompiling = null;
  let calls = 0;
  const f = (x) => {
    calls++;
    sawCompiling = C.isCompiling();
    return relu1(x);
  };
  const g = C.compile(f, { backend: () => (...a) => tp.mul(a[0], 0) });
  const x = tp.tensor([1, 2]);
  tp.scope(() => {
    const y = C.disableCapture(() => g(x));
    assert.deepEqual(Array.from(y.toArray()), [2, 3]);
    assert.equal(sawCompiling, false);
    assert.equal(g.numCaptures, 0);
    // outside, the compiled path again
    assert.deepEqual(Array.from(g(x).toArray()), [0, 0]);
    assert.equal(sawCompiling, true);
    assert.equal(g.numCaptures, 1);
  });
  assert.equal(calls, 2);
  x.dispose();
  g.dispose();
});

test('compile(): every option is type-checked, after the seed checks, in signature order', () => {
  const f = (x) => x;
  const bad = [
    [{ fullgraph: 'yes' }, "fullgraph must be a bool, got <class 'str'>"],
    [{ fullgraph: 1 }, "fullgraph must be a bool, got <class 'int'>"],
    [{ dynamic: 'x' }, "dynamic must be a bool or None, got <class 'str'>"],
    [{ dynamic: 1 }, "dynamic must be a bool or None, got <class 'int'>"], // 1 is not True
    [{ backend: 5 }, "backend must be a string or a function, got <class 'int'>"],
    [{ backend: {} }, "backend must be a string or a function, got <class 'dict'>"],
    [{ mode: 3 }, "mode must be a str or None, got <class 'int'>"],
    [{ name: 42 }, "name must be a str or None, got <class 'int'>"],
    [{ disable: 'no' }, "disable must be a bool, got <class 'str'>"],
    [{ isolateRecompiles: 0 }, "isolate_recompiles must be a bool, got <class 'int'>"],
    [{ strictNative: 'true' }, "strict_native must be a bool, got <class 'str'>"],
    // the first bad option in signature order is the one reported
    [{ name: 42, fullgraph: 'yes', dynamic: 'x' }, 'fullgraph must be a bool'],
    [{ name: 42, dynamic: 'x' }, 'dynamic must be a bool or None'],
  ];
  for (const [opts, msg] of bad) {
    throwsWith(() => C.compile(f, opts), TypeError, msg);
    throwsWith(() => C.compile(opts), TypeError, msg); // before the decorator form
    throwsWith(() => C.lookupBackend(5), TypeError, "got <class 'int'>");
  }
  // the seed's own checks come first
  throwsWith(() => C.compile(f, { fullgraph: 'yes', recompileLimit: 0 }), tp.ValueError, 'recompile_limit must be positive');
  throwsWith(() => C.compile(f, { name: 42, mode: 'default', options: {} }), tp.RuntimeError,
    'Either mode or options can be specified');
  throwsWith(() => C.compile(f, { fullgraph: 'yes', options: 3 }), TypeError, 'options must be a dict');
  // well-typed options compile and run
  const g = C.compile((x) => x.add(1), {
    fullgraph: true, dynamic: false, backend: 'stax', name: 'ok', disable: false,
    isolateRecompiles: true, strictNative: false, recompileLimit: 3,
  });
  const x = tp.tensor([1]);
  tp.scope(() => assert.deepEqual(Array.from(g(x).toArray()), [2]));
  x.dispose();
  g.dispose();
});

test('no tensors leaked by this file', () => {
  assert.equal(tp.liveTensors(), live0);
});
