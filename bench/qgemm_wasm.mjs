// qgemm_wasm.mjs - runs bench/qgemm_bench.c built as a wasm32-wasi command
// (bench/workloads/qgemm-wasm.sh builds it) in this Node: the SIMD128 int8
// GEMM against the SIMD128 float32 GEMM in the same V8 instance.
//   node [--experimental-wasm-relaxed-simd] bench/qgemm_wasm.mjs qgemm_bench.wasm \
//        [--relaxed] [bench args...]
// With --relaxed, the relaxed-SIMD tile module the bench emits
// (src/codegen/wasm/emit_qgemm.c, handed over by env.qgemm_host_relaxed) is
// loaded where WebAssembly.validate accepts it (this Node has relaxed SIMD)
// and its f0 goes in the command's function table, which makes
// "wasmrelaxed" the best qgemm variant; elsewhere the bench runs without it.
import { readFileSync } from 'node:fs';
import { WASI } from 'node:wasi';
import process from 'node:process';

let [file, ...args] = process.argv.slice(2);
const ri = args.indexOf('--relaxed');
const relaxed = ri >= 0;
if (relaxed) args.splice(ri, 1);
if (!file) {
  console.error('usage: node bench/qgemm_wasm.mjs qgemm_bench.wasm [args]');
  process.exit(2);
}
const wasi = new WASI({ version: 'preview1', args: ['qgemm_bench', ...args], env: {}, returnOnExit: true });
const mod = await WebAssembly.compile(readFileSync(file));
let inst;
function qgemmHostRelaxed(ptr, len) {
  const bytes = new Uint8Array(inst.exports.memory.buffer, ptr, len).slice();
  if (!relaxed || !WebAssembly.validate(bytes)) return -1;
  const k = new WebAssembly.Instance(new WebAssembly.Module(bytes),
    { env: { memory: inst.exports.memory } });
  const table = inst.exports.__indirect_function_table;
  const idx = table.grow(1);
  table.set(idx, k.exports.f0);
  return idx;
}
inst = await WebAssembly.instantiate(mod, {
  wasi_snapshot_preview1: wasi.wasiImport,
  env: { qgemm_host_relaxed: qgemmHostRelaxed },
});
process.exitCode = wasi.start(inst);
