// The package's one-file build, js/dist/tensorplay.mjs (scripts/bundle.mjs,
// exported as tensorplay-wasm/bundle): present, built from the current
// sources, the same API as js/index.js, and working on its own. (The whole
// tests/js suite also runs on it: scripts/test.sh's node:bundle stage.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BUNDLE = join(ROOT, 'js/dist/tensorplay.mjs');
const HINT = 'build it with: bash scripts/build.sh bundle';
// Skipped where the bundle was not built, unless TP_REQUIRE_BUNDLE=1
// (scripts/test.sh sets it once its build:bundle stage has passed).
const NOT_BUILT = !existsSync(BUNDLE) && process.env.TP_REQUIRE_BUNDLE !== '1' && `js/dist is not built (${HINT})`;

test('every file js/package.json exports exists', { skip: NOT_BUILT }, () => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'js/package.json'), 'utf8'));
  const targets = [];
  const walk = (v) => (typeof v === 'string' ? targets.push(v) : Object.values(v).forEach(walk));
  walk(pkg.exports);
  assert.ok(pkg.exports['./bundle'], 'exports has ./bundle');
  for (const t of targets) assert.ok(existsSync(join(ROOT, 'js', t)), `js/package.json exports ${t}, which is missing (${HINT})`);
});

test('the bundle is built from the current sources', { skip: NOT_BUILT || (!existsSync(join(ROOT, 'node_modules/esbuild/package.json')) && 'esbuild is not installed (npm ci)') }, () => {
  assert.ok(existsSync(BUNDLE), `${BUNDLE} is missing (${HINT})`);
  const dir = mkdtempSync(join(tmpdir(), 'tp-bundle-'));
  try {
    execFileSync(process.execPath, [join(ROOT, 'scripts/bundle.mjs'), '--out', dir], { stdio: 'pipe' });
    const stale = `js/dist is older than js/index.js and js/src/ (${HINT})`;
    assert.ok(readFileSync(join(dir, 'tensorplay.mjs')).equals(readFileSync(BUNDLE)), stale);
    // the map too: it holds the sources (a comment changes only the map);
    // its source paths are relative to where it was written
    const map = (f) => {
      const m = JSON.parse(readFileSync(f, 'utf8'));
      return { ...m, sources: m.sources.map((p) => relative(ROOT, resolve(dirname(f), p))) };
    };
    assert.deepEqual(map(join(dir, 'tensorplay.mjs.map')), map(`${BUNDLE}.map`), stale);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('under tests/js/_bundle_hook.mjs, js/index.js is the bundle', { skip: process.env.TP_BUNDLE_HOOK !== '1' && 'not run with the hook' }, async () => {
  // the node:bundle stage of scripts/test.sh: the hook must be active in
  // this test process, or that stage would test the ES modules again
  assert.equal(await import('../../js/index.js'), await import('../../js/dist/tensorplay.mjs'));
});

test('the bundle exports what js/index.js exports and computes the same', { skip: NOT_BUILT }, async () => {
  // '?direct': js/index.js itself even under tests/js/_bundle_hook.mjs
  const mods = await import('../../js/index.js?direct');
  const bundle = await import('../../js/dist/tensorplay.mjs');
  assert.notEqual(bundle, mods);
  assert.deepEqual(Object.keys(bundle).sort(), Object.keys(mods).sort());
  assert.equal(bundle.version, mods.version);
  assert.deepEqual(bundle.listBackends(), mods.listBackends());
  // hand-computed: relu([-1, 2, -3, 4] @ [[1], [1], [1], [1]] * 2 + 1) = relu(2 * 2 + 1) = 5
  const f = (x, w) => bundle.relu(bundle.matmul(x, w).mul(2).add(1));
  const g = bundle.compile(f, { backend: 'stax' });
  const x = bundle.tensor([[-1, 2, -3, 4]]);
  const w = bundle.ones([4, 1]);
  const y = g(x, w);
  assert.deepEqual(Array.from(y.toArray()), [5]);
  assert.deepEqual(y.shape, [1, 1]);
  // minified with names kept (esbuild's keepNames): classes and functions
  // keep the names the sources give them
  for (const k of ['Tensor', 'DisposedError', 'TensorPlayError', 'compile', 'tensor']) assert.equal(bundle[k].name, k, `${k}.name`);
  x.dispose();
  assert.throws(() => x.add(1), (e) => e instanceof bundle.DisposedError && e.name === 'DisposedError' && !(e instanceof mods.DisposedError));
  for (const t of [y, w]) t.dispose();
  g.dispose?.();
});
