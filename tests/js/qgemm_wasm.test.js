// qgemm_wasm.test.js - the integer GEMM's Wasm variants, in Node: builds
// bench/qgemm_bench.c with the runtime's qgemm sources as a wasm32-wasi
// command (clang-14, the core's flags; the recipe of
// bench/workloads/qgemm-wasm.sh) and runs its selftest: every variant
// ("wasmsimd", and "wasmrelaxed", the tile module emitted by
// src/codegen/wasm/emit_qgemm.c, where Node has relaxed SIMD) against the
// scalar one bit for bit on shapes around the tile edges, int32 sums
// against an int64 reference, U8 outputs against the documented formula.
// The native variants are tests/c/runtime/test_qgemm.c's.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
// (module (func (param v128 v128 v128) (result v128) local.get 0 local.get 1
//   local.get 2 i32x4.relaxed_dot_i8x16_i7x16_add_s))
const RELAXED_PROBE = [0, 97, 115, 109, 1, 0, 0, 0, 1, 8, 1, 96, 3, 123, 123, 123, 1, 123, 3, 2, 1,
  0, 10, 13, 1, 11, 0, 32, 0, 32, 1, 32, 2, 253, 147, 2, 11];
const have = (cmd) => spawnSync(cmd, ['--version'], { stdio: 'ignore' }).status === 0;
const skip = !have('clang-14') ? 'clang-14 is not installed' : false;

test('qgemm Wasm variants match the scalar reference bit for bit', { skip, timeout: 240000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'tp-qgemm-'));
  try {
    const k = 'src/runtime/kernels';
    const exe = join(dir, 'qgemm_bench.wasm');
    execFileSync('clang-14', ['--target=wasm32-wasi', '-O2', '-msimd128', '-mnontrapping-fptoint',
      '-msign-ext', '-mmutable-globals', '-ffp-contract=off', '-std=gnu11', '-Isrc', '-Ibench',
      '-Wl,--export-table', '-Wl,--growable-table', 'bench/qgemm_bench.c', 'src/runtime/qgemm.c',
      `${k}/qgemm_scalar.c`, `${k}/qgemm_wasmsimd.c`, 'src/runtime/dispatch.c', `${k}/kern_wasmsimd.c`,
      `${k}/kern_fast_wasmsimd.c`, `${k}/kern_generic.c`, 'src/core/status.c', 'src/core/alloc.c',
      'src/core/bigalloc.c', 'src/core/buf.c', 'src/codegen/wasm/emit_qgemm.c', 'src/codegen/wasm/writer.c',
      '-o', exe], { cwd: ROOT });
    const run = (flags, extra) => spawnSync(process.execPath,
      [...flags, '--no-warnings', 'bench/qgemm_wasm.mjs', exe, ...extra, '--selftest'],
      { cwd: ROOT, encoding: 'utf8' });
    // SIMD128 only
    let r = run([], []);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /selftest: 2 variants, \d+ values compared: ok/);
    // relaxed SIMD (a V8 flag in Node 20, on by default later; a flag this
    // Node does not know, or cannot turn off, skips that case)
    const relaxedWith = (flag) => {
      const p = spawnSync(process.execPath, [flag, '-e', `process.exit(WebAssembly.validate(new Uint8Array(${JSON.stringify(RELAXED_PROBE)})) ? 0 : 3)`]);
      return p.status === 0 ? true : p.status === 3 ? false : null;
    };
    if (relaxedWith('--experimental-wasm-relaxed-simd')) {
      // the kernel module installed (7-bit weights)
      r = run(['--experimental-wasm-relaxed-simd'], ['--relaxed']);
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stderr, /selftest: 3 variants, \d+ values compared: ok/);
    }
    if (relaxedWith('--no-experimental-wasm-relaxed-simd') === false) {
      // without relaxed SIMD the module does not validate: no variant is added
      r = run(['--no-experimental-wasm-relaxed-simd'], ['--relaxed']);
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stderr, /selftest: 2 variants/);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
