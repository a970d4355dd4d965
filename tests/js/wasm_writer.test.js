// wasm_writer.test.js - runs the modules written by the C Wasm writer
// (src/codegen/wasm) in Node. The writer is not exported through the ABI
// yet, so tests/c/codegen/test_wasm_writer.c (ctest) writes its modules to
// build/test-artifacts/; each test here is skipped when its file is missing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const dir = process.env.TP_WASM_ARTIFACTS || path.join(root, 'build', 'test-artifacts');
const file = (name) => path.join(dir, name);
// A module by hand (not by the writer): func () { drop(f32x4.relaxed_madd(0, 0, 0)) }.
function hostHasRelaxedSimd() {
  const zero = () => [0xfd, 0x0c, ...new Array(16).fill(0)];
  const body = [0x00, ...zero(), ...zero(), ...zero(), 0xfd, 0x85, 0x02, 0x1a, 0x0b];
  const code = [0x01, body.length, ...body];
  return WebAssembly.validate(new Uint8Array([
    0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
    0x01, 0x04, 0x01, 0x60, 0x00, 0x00, // type: () -> ()
    0x03, 0x02, 0x01, 0x00, // one function of type 0
    0x0a, code.length, ...code,
  ]));
}
const missing = (name) =>
  existsSync(file(name)) ? false : `${file(name)} missing (run ctest -R wasm_writer first)`;

test('writer modules pass WebAssembly.validate', { skip: missing('wasm_writer_axpb.wasm') }, () => {
  for (const name of ['wasm_writer_axpb.wasm', 'wasm_writer_control.wasm', 'wasm_writer_imports.wasm']) {
    if (!existsSync(file(name))) continue;
    assert.ok(WebAssembly.validate(readFileSync(file(name))), `${name} does not validate`);
  }
  // relaxed SIMD depends on the engine (Node 20 needs --experimental-wasm-relaxed-simd):
  // the writer's module validates exactly when a hand-assembled probe does
  if (existsSync(file('wasm_writer_axpb_relaxed.wasm')))
    assert.equal(WebAssembly.validate(readFileSync(file('wasm_writer_axpb_relaxed.wasm'))), hostHasRelaxedSimd());
});

test('axpb (f32x4 body + scalar tail) matches JS on every tail length', { skip: missing('wasm_writer_axpb.wasm') }, async () => {
  const memory = new WebAssembly.Memory({ initial: 1 });
  const { instance } = await WebAssembly.instantiate(readFileSync(file('wasm_writer_axpb.wasm')), {
    env: { memory },
  });
  const { axpb } = instance.exports;
  const f32 = new Float32Array(memory.buffer);
  const a = 1.7, b = -0.25;
  const fa = Math.fround(a), fb = Math.fround(b);
  // x and y at 4-byte (not 16-byte) aligned addresses too: v128 accesses
  // carry an alignment hint only.
  for (const [xoff, yoff] of [[0, 4096], [4, 8200]]) {
    for (const n of [0, 1, 3, 4, 5, 7, 8, 63, 64, 1001]) {
      const x = f32.subarray(xoff / 4, xoff / 4 + n);
      for (let i = 0; i < n; i++) x[i] = Math.fround(Math.sin(i + 1) * 100);
      f32.fill(12345, yoff / 4, yoff / 4 + n + 4); // sentinel past the end
      axpb(xoff, yoff, n, a, b);
      for (let i = 0; i < n; i++) {
        const want = Math.fround(Math.fround(x[i] * fa) + fb); // mul, then add, each rounded
        assert.equal(f32[yoff / 4 + i], want, `n=${n} i=${i}`);
      }
      for (let i = n; i < n + 4; i++) assert.equal(f32[yoff / 4 + i], 12345, `wrote past n=${n}`);
    }
  }
});

test('relaxed_madd variant runs where the host has relaxed SIMD', { skip: missing('wasm_writer_axpb_relaxed.wasm') }, async (t) => {
  const bytes = readFileSync(file('wasm_writer_axpb_relaxed.wasm'));
  if (!WebAssembly.validate(bytes)) {
    t.skip('no relaxed SIMD in this host (Node 20: --experimental-wasm-relaxed-simd)');
    return;
  }
  const memory = new WebAssembly.Memory({ initial: 1 });
  const { instance } = await WebAssembly.instantiate(bytes, { env: { memory } });
  const f32 = new Float32Array(memory.buffer);
  const n = 37;
  for (let i = 0; i < n; i++) f32[i] = i * 0.5 - 3;
  instance.exports.axpb(0, 1024, n, 2, 1);
  // fused or not, these values are exact
  for (let i = 0; i < n; i++) assert.equal(f32[256 + i], (i * 0.5 - 3) * 2 + 1);
});
