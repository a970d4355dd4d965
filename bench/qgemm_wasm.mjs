// qgemm_wasm.mjs - runs bench/qgemm_bench.c built as a wasm32-wasi command
// (bench/workloads/qgemm-wasm.sh builds it) in this Node: the SIMD128 int8
// GEMM against the SIMD128 float32 GEMM in the same V8 instance.
//   node bench/qgemm_wasm.mjs qgemm_bench.wasm [bench args...]
import { readFileSync } from 'node:fs';
import { WASI } from 'node:wasi';
import process from 'node:process';

const [file, ...args] = process.argv.slice(2);
if (!file) {
  console.error('usage: node bench/qgemm_wasm.mjs qgemm_bench.wasm [args]');
  process.exit(2);
}
const wasi = new WASI({ version: 'preview1', args: ['qgemm_bench', ...args], env: {}, returnOnExit: true });
const mod = await WebAssembly.compile(readFileSync(file));
const inst = await WebAssembly.instantiate(mod, { wasi_snapshot_preview1: wasi.wasiImport });
process.exitCode = wasi.start(inst);
