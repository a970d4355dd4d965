#!/usr/bin/env bash
# examples/cli/demo.sh [TPC] - run the graph the Node demo captured
# (build/demo/mlp.tpg, from examples/node/demo.mjs) natively with tpc on the
# same input, then compare tpc's output with Node's (max abs difference).
# TPC: path of tpc (default $TPC, else build/native/tpc).
set -euo pipefail
cd "$(dirname "$0")/../.."
TPC="${1:-${TPC:-build/native/tpc}}"
D=build/demo
if [ ! -f "$D/mlp.tpg" ] || [ ! -f "$D/x.npy" ] || [ ! -f "$D/y_node.npy" ]; then
  echo "==> $D/mlp.tpg missing: running node examples/node/demo.mjs first"
  node examples/node/demo.mjs
fi
# The placeholder name: the demo's input is named by the core's tracer; take
# the first placeholder of the graph text (default x).
INPUT="${TP_DEMO_INPUT:-$(sed -n 's/^[[:space:]]*%\{0,1\}\([A-Za-z_][A-Za-z0-9_]*\)[[:space:]]*=[[:space:]]*placeholder.*/\1/p' "$D/mlp.tpg" | head -n1)}"
INPUT="${INPUT:-x}"
echo "==> $TPC run $D/mlp.tpg --input $INPUT=$D/x.npy --output $D/y_tpc.npy"
"$TPC" run "$D/mlp.tpg" --input "$INPUT=$D/x.npy" --output "$D/y_tpc.npy"
node --input-type=module - "$D/y_node.npy" "$D/y_tpc.npy" <<'JS'
// A tiny .npy reader (little-endian float32/int32/int64, C order).
import { readFileSync } from 'node:fs';
function readNpy(path) {
  const b = readFileSync(path);
  if (b[0] !== 0x93 || b.toString('latin1', 1, 6) !== 'NUMPY') throw new Error(`${path}: not a .npy file`);
  const major = b[6];
  const hlen = major === 1 ? b.readUInt16LE(8) : b.readUInt32LE(8);
  const start = (major === 1 ? 10 : 12) + hlen;
  const header = b.toString('latin1', major === 1 ? 10 : 12, start);
  const descr = /'descr':\s*'([^']+)'/.exec(header)[1];
  if (/'fortran_order':\s*True/.test(header)) throw new Error(`${path}: fortran order`);
  const shape = /'shape':\s*\(([^)]*)\)/.exec(header)[1].split(',').filter((s) => s.trim()).map(Number);
  const data = b.subarray(start);
  const n = shape.reduce((a, c) => a * c, 1);
  const read = { '<f4': (i) => data.readFloatLE(4 * i), '<i4': (i) => data.readInt32LE(4 * i),
                 '<i8': (i) => Number(data.readBigInt64LE(8 * i)), '|b1': (i) => data[i] };
  if (!read[descr]) throw new Error(`${path}: dtype ${descr} not handled`);
  return { shape, values: Array.from({ length: n }, (_, i) => read[descr](i)) };
}
const [a, b] = process.argv.slice(2).map(readNpy);
if (a.shape.join() !== b.shape.join()) {
  console.error(`shapes differ: [${a.shape}] vs [${b.shape}]`);
  process.exit(1);
}
let max = 0;
for (let i = 0; i < a.values.length; i++) max = Math.max(max, Math.abs(a.values[i] - b.values[i]));
console.log(`node y[0, :5] = ${a.values.slice(0, 5).map((v) => v.toFixed(5)).join(', ')}`);
console.log(`tpc  y[0, :5] = ${b.values.slice(0, 5).map((v) => v.toFixed(5)).join(', ')}`);
console.log(`max |node - tpc| = ${max.toExponential(3)} over ${a.values.length} values, shape [${a.shape.join(', ')}]`);
if (!(max <= 1e-3)) process.exit(1);
JS
echo "==> $TPC compile $D/mlp.tpg --dump=kernels   (how stax lowers it)"
"$TPC" compile "$D/mlp.tpg" --dump=kernels | grep -E '^kernel|epilogue|relu|# compile'
echo "==> $TPC bench $D/mlp.tpg --runs 30"
"$TPC" bench "$D/mlp.tpg" --runs 30
