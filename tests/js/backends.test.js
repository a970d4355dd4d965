// tp.compiler backends (issue 3): registry, JS backends through
// env.tp_host_backend, InvalidBackend suggestions, capabilities, modes.
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

test('listBackends: sorted, debug and experimental hidden by default', () => {
  const dbg = C.registerDebugBackend((g) => (...xs) => g.run(xs), { name: 'my_debug' });
  const exp = C.registerExperimentalBackend((g) => (...xs) => g.run(xs), { name: 'my_exp' });
  assert.equal(typeof dbg, 'function');
  assert.equal(typeof exp, 'function');
  try {
    const def = C.listBackends();
    assert.ok(def.includes('stax'));
    assert.ok(!def.includes('my_debug') && !def.includes('my_exp') && !def.includes('eager'), def.join());
    assert.deepEqual(def, [...def].sort());
    const all = C.listBackends({ excludeTags: [] });
    for (const n of ['eager', 'stax', 'my_debug', 'my_exp']) assert.ok(all.includes(n), all.join());
    assert.deepEqual(all, [...all].sort());
    const noDebug = C.listBackends({ excludeTags: ['debug'] });
    assert.ok(noDebug.includes('my_exp') && !noDebug.includes('my_debug'), noDebug.join());
    assert.ok(C.listBackends({ excludeTags: null }).includes('my_debug'));
    assert.ok(C.listBackends({ includeUnavailable: true }).includes('stax'));
  } finally {
    C.unregisterBackend('my_debug');
    C.unregisterBackend('my_exp');
  }
  assert.ok(!C.listBackends({ excludeTags: [] }).includes('my_debug'));
  C.unregisterBackend('never-registered'); // ignored
});

test('InvalidBackend with close-match suggestions', () => {
  throwsWith(() => C.lookupBackend('stx'), tp.InvalidBackend, "Invalid backend: 'stx', did you mean: 'stax'?");
  throwsWith(() => C.compile((x) => x, { backend: 'stx' }), tp.InvalidBackend, "did you mean: 'stax'");
  throwsWith(() => C.setDefaultBackend('eagr'), tp.InvalidBackend, "'eager'");
  assert.ok(tp.InvalidBackend === C.InvalidBackend);
  // built-in backends are returned as callables (graph, exampleInputs) => compiledFn
  assert.equal(typeof C.lookupBackend('stax'), 'function');
  assert.equal(C.lookupBackend('stax'), C.lookupBackend('stax'));
  assert.throws(() => C.lookupBackend('stx'), (e) => {
    assert.deepEqual([...e.suggestions], ['stax']);
    assert.ok(e instanceof tp.ValueError && e instanceof C.RuntimeError && e instanceof tp.TensorPlayError);
    assert.equal(e.status, 'INVALID_BACKEND');
    return true;
  });
  assert.throws(() => C.lookupBackend('zzzzzzzz'), (e) => e instanceof tp.InvalidBackend && e.suggestions.length === 0);
  assert.ok(!(new C.ValueError('v') instanceof C.RuntimeError), 'only InvalidBackend is both');
  const f = () => () => null;
  assert.equal(C.lookupBackend(f), f);
  throwsWith(() => C.lookupBackend(3), TypeError, "got <class 'int'>");
});

test('registerBackend: a JS backend whose returned function runs every call', () => {
  const seen = [];
  let runs = 0;
  const mine = (graph, examples, opts) => {
    seen.push({ text: graph.print(), n: examples.length, shape: examples[0].shape, opts });
    return (...xs) => {
      runs++;
      return graph.run(xs)[0].add(100);
    };
  };
  assert.equal(C.registerBackend(mine, { name: 'plus100' }), mine);
  try {
    throwsWith(() => C.registerBackend(mine, { name: 'plus100' }), tp.ValueError, "backend 'plus100' is already registered");
    assert.equal(C.lookupBackend('plus100'), mine);
    const g = C.compile((a) => a.mul(2), { backend: 'plus100', mode: 'max-autotune', name: 'dbl' });
    const x = tp.tensor([1, 2]);
    tp.scope(() => {
      assert.deepEqual(Array.from(g(x).toArray()), [102, 104], "the first call runs the backend's function");
      assert.deepEqual(Array.from(g(x).toArray()), [102, 104], 'and so does the second');
    });
    assert.equal(runs, 2);
    assert.equal(seen.length, 1);
    assert.match(seen[0].text, /mul/);
    assert.equal(seen[0].n, 1);
    assert.deepEqual(seen[0].shape, [2]);
    assert.deepEqual(seen[0].opts, { mode: 'max-autotune', name: 'dbl' });
    g.dispose();
    x.dispose();
    // setDefaultBackend / getDefaultBackend
    C.setDefaultBackend('plus100');
    assert.equal(C.getDefaultBackend(), 'plus100');
    C.setDefaultBackend(null);
    assert.equal(C.getDefaultBackend(), 'stax');
    C.setDefaultBackend(mine);
    assert.equal(C.getDefaultBackend(), 'plus100');
    C.setDefaultBackend(null);
  } finally {
    C.unregisterBackend('plus100');
  }
  // decorator form
  const deco = C.registerBackend({ name: 'deco_backend', tags: ['debug'] });
  const fn = deco((g) => (...xs) => g.run(xs));
  assert.equal(typeof fn, 'function');
  assert.ok(C.listBackends({ excludeTags: [] }).includes('deco_backend'));
  C.unregisterBackend('deco_backend');
  throwsWith(() => C.registerBackend(5, { name: 'five' }), TypeError, "backend 'five' must be callable, got <class 'int'>");
});

test('a backend given as a function, and one that returns a non-callable', () => {
  let called = 0;
  const inline = (graph) => {
    called++;
    return (...xs) => graph.run(xs);
  };
  const g = C.compile((a) => a.add(1), { backend: inline, dynamic: true, strictNative: true });
  const x = tp.tensor([1]);
  tp.scope(() => {
    assert.deepEqual(Array.from(g(x).toArray()), [2]);
    assert.deepEqual(Array.from(g(x).toArray()), [2]);
  });
  assert.equal(called, 1);
  g.dispose();
  const bad = C.compile((a) => a.add(1), { backend: () => 42 });
  tp.scope(() => throwsWith(() => bad(x), TypeError, "returned <class 'int'>"));
  bad.dispose();
  const throwing = C.compile((a) => a.add(1), {
    backend: () => {
      throw new RangeError('backend exploded');
    },
  });
  tp.scope(() => throwsWith(() => throwing(x), RangeError, 'backend exploded'));
  throwing.dispose();
  x.dispose();
});

test('capabilities: BackendCapabilities, getBackendCapabilities, declaresCapabilities, contract version', () => {
  assert.equal(C.CORE_BACKEND_CONTRACT_VERSION, 1);
  assert.equal(tp.CORE_BACKEND_CONTRACT_VERSION, 1);
  const def = C.getBackendCapabilities('no-such');
  assert.ok(def instanceof C.BackendCapabilities);
  assert.deepEqual([...def.optionalDeps], []);
  assert.equal(def.contractVersion, 1);
  assert.equal(def.minCoreVersion, null);
  const caps = new C.BackendCapabilities({ optionalDeps: ['simd128'], minCoreVersion: '0.0.1', maxCoreVersion: '99.0.0' });
  assert.ok(Object.isFrozen(caps));
  C.registerBackend((g) => (...xs) => g.run(xs), { name: 'capable', capabilities: caps });
  C.registerBackend((g) => (...xs) => g.run(xs), { name: 'needs_threads', capabilities: { optionalDeps: ['threads'] } });
  try {
    assert.equal(C.declaresCapabilities('capable'), true);
    assert.equal(C.declaresCapabilities('stax'), false);
    const got = C.getBackendCapabilities('capable');
    assert.deepEqual([...got.optionalDeps], ['simd128']);
    assert.equal(got.minCoreVersion, '0.0.1');
    assert.equal(got.maxCoreVersion, '99.0.0');
    assert.ok(!C.listBackends().includes('needs_threads'), 'hidden: threads are missing');
    assert.ok(C.listBackends({ includeUnavailable: true }).includes('needs_threads'));
    throwsWith(() => C.lookupBackend('needs_threads'), tp.InvalidBackend, 'threads');
  } finally {
    C.unregisterBackend('capable');
    C.unregisterBackend('needs_threads');
  }
  throwsWith(() => C.registerBackend((g) => g, { name: 'future', capabilities: { minCoreVersion: '99.0.0' } }),
    tp.ValueError, 'requires core version');
  throwsWith(() => new C.BackendCapabilities({ optionalDeps: 'simd' }), TypeError, 'optionalDeps');
});

test('listModeOptions: the four modes, the whole mapping, unknown modes', () => {
  const all = C.listModeOptions();
  assert.deepEqual(Object.keys(all).sort(), ['default', 'max-autotune', 'max-autotune-no-cudagraphs', 'reduce-overhead']);
  assert.deepEqual(C.listModeOptions('default'), {});
  assert.equal(C.listModeOptions('reduce-overhead')['stax.plan_replay'], true);
  assert.equal(C.listModeOptions('max-autotune')['stax.max_autotune'], true);
  throwsWith(() => C.listModeOptions('turbo'), tp.RuntimeError,
    'Unrecognized mode=turbo, should be one of: default, reduce-overhead, max-autotune-no-cudagraphs, max-autotune');
});

test('no tensors leaked by this file', () => {
  assert.equal(tp.liveTensors(), live0);
});
