// The loader's generic imports, on a tiny module (made with wat2wasm from the
// WAT below) instead of the core: fd_write is line-buffered to console.log,
// unknown WASI calls return ENOSYS, unknown env imports throw naming
// themselves, random_get fills memory, views follow memory growth.
//
//   (import "env" "mystery" (func))
//   (import "wasi_snapshot_preview1" "fd_write" ...) / "path_open" / "random_get"
//   (memory (export "memory") 1) (data (i32.const 16) "hello from wasm\n")
//   exports: call_mystery, write(len), open, rand (32 bytes at 64), grow
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Core, buildImports } from '../../js/src/loader.js';

const BYTES = Uint8Array.from(atob('AGFzbQEAAAABKAZgAABgBH9/f38Bf2AJf39/f39+fn9/AX9gAn9/AX9gAX8Bf2AAAX8CeAQDZW52B215c3RlcnkAABZ3YXNpX3NuYXBzaG90X3ByZXZpZXcxCGZkX3dyaXRlAAEWd2FzaV9zbmFwc2hvdF9wcmV2aWV3MQlwYXRoX29wZW4AAhZ3YXNpX3NuYXBzaG90X3ByZXZpZXcxCnJhbmRvbV9nZXQAAwMGBQAEBQUFBQMBAAEHNgYGbWVtb3J5AgAMY2FsbF9teXN0ZXJ5AAQFd3JpdGUABQRvcGVuAAYEcmFuZAAHBGdyb3cACApJBQQAEAALGgBBAEEQNgIAQQQgADYCAEEBQQBBAUEIEAELFgBBAEEAQQBBAEEAQgBCAEEAQQAQAgsJAEHAAEEgEAMLBgBBAUAACwsWAQBBEAsQaGVsbG8gZnJvbSB3YXNtCg=='), (c) => c.charCodeAt(0));

function load() {
  const core = new Core();
  const module = new WebAssembly.Module(BYTES);
  const instance = new WebAssembly.Instance(module, buildImports(core, module));
  core.memory = instance.exports.memory;
  return { core, ex: instance.exports };
}

test('fd_write is line-buffered to console.log', () => {
  const { ex } = load();
  const lines = [];
  const orig = console.log;
  console.log = (s) => lines.push(s);
  try {
    assert.equal(ex.write(6), 0); // "hello " (no newline yet)
    assert.deepEqual(lines, []);
    assert.equal(ex.write(16), 0); // "hello from wasm\n"
  } finally {
    console.log = orig;
  }
  assert.deepEqual(lines, ['hello hello from wasm']);
});

test('an unknown env import throws an error naming it', () => {
  const { ex } = load();
  assert.throws(() => ex.call_mystery(), /env\.mystery/);
});

test('unprovided WASI calls return ENOSYS (52)', () => {
  const { ex } = load();
  assert.equal(ex.open(), 52);
});

test('random_get fills memory; views follow memory growth', () => {
  const { core, ex } = load();
  const v1 = core.views();
  assert.equal(ex.rand(), 0);
  assert.ok(v1.u8.subarray(64, 96).some((b) => b !== 0));
  assert.equal(ex.grow(), 1);
  const v2 = core.views();
  assert.notEqual(v1, v2);
  assert.equal(v2.u8.length, 2 * 65536);
  assert.equal(core.readCString(16), 'hello from wasm\n');
});

// globalThis.tensorplayWasm (set before importing the package) chooses the
// core: a promise of a compiled module, bytes, or a path; a bad one is an
// error naming the core. Each case in a fresh process (the package loads its
// core once per process).
const inNode = typeof process !== 'undefined' && typeof process.versions?.node === 'string';
test('globalThis.tensorplayWasm selects the core before import', { skip: inNode ? false : 'needs Node (child processes)' }, async () => {
  const { spawnSync } = await import('node:child_process');
  const { fileURLToPath } = await import('node:url');
  const index = new URL('../../js/index.js', import.meta.url).href;
  const core = process.env.TP_WASM || fileURLToPath(new URL('../../js/wasm/tensorplay.wasm', import.meta.url));
  const run = (setup) => spawnSync(process.execPath, ['--input-type=module', '-e',
    `import { readFileSync } from 'node:fs';\n${setup}\nconst tp = await import(${JSON.stringify(index)});\n` +
    'console.log(tp.isa, tp.tensor([1, 2, 3]).mul(2).toArray().join(","));'],
  { encoding: 'utf8', env: { ...process.env, TP_WASM: '/nonexistent/so-the-global-must-win.wasm' } });
  for (const setup of [
    `globalThis.tensorplayWasm = WebAssembly.compile(readFileSync(${JSON.stringify(core)}));`,
    `globalThis.tensorplayWasm = readFileSync(${JSON.stringify(core)});`,
    `globalThis.tensorplayWasm = ${JSON.stringify(core)};`,
  ]) {
    const r = run(setup);
    assert.equal(r.status, 0, `${setup}\n${r.stderr}`);
    assert.match(r.stdout, /^\S+ 2,4,6$/m, setup);
  }
  const bad = run('globalThis.tensorplayWasm = "/nonexistent/core.wasm";');
  assert.notEqual(bad.status, 0);
  assert.match(bad.stderr, /cannot read the Wasm core at \/nonexistent\/core\.wasm/);
});
