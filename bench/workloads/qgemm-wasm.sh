#!/usr/bin/env bash
# W1 shapes as an int8 GEMM in Node (Wasm SIMD128): bench/qgemm_bench.c and
# the runtime sources it needs, built with clang-14 as a wasm32-wasi command
# with the core module's flags (CMakeLists.txt), run by
# bench/qgemm_wasm.mjs: the SIMD128 int8 GEMM (and the relaxed-SIMD one
# where Node has it) against the SIMD128 float32 GEMM in the same V8.
#
# Then the same command in headless Chromium (bench/qgemm_web.mjs), where
# relaxed SIMD is on by default, unless BENCH_QGEMM_WEB=0.
# Node runs it twice: SIMD128 only (8-bit weights), and with
# --experimental-wasm-relaxed-simd (7-bit weights for every variant, the
# relaxed kernel's range). Each run starts with the bench's selftest (every
# variant bit for bit against the scalar one, in that host).
#
# Knobs: BENCH_REPS (31), BENCH_SAMPLE_MS (4; 20 in Chromium, whose clock is
# coarse), BENCH_QGEMM_RUNS (3).
set -euo pipefail
: "${BENCH_ROOT:?}" "${BENCH_OUT:?}"

cd "$BENCH_ROOT"
exe="$BENCH_OUT/qgemm_bench.wasm"
k=src/runtime/kernels
clang-14 --target=wasm32-wasi -O3 -msimd128 -mnontrapping-fptoint -msign-ext -mmutable-globals \
  -ffp-contract=off -std=gnu11 -Wall -Isrc -Ibench -Wl,--export-table -Wl,--growable-table \
  bench/qgemm_bench.c src/runtime/qgemm.c $k/qgemm_scalar.c $k/qgemm_wasmsimd.c \
  src/runtime/dispatch.c $k/kern_wasmsimd.c $k/kern_fast_wasmsimd.c $k/kern_generic.c \
  src/core/status.c src/core/alloc.c src/core/bigalloc.c src/core/buf.c \
  src/codegen/wasm/emit_qgemm.c src/codegen/wasm/writer.c -o "$exe"

pin=()
if command -v taskset >/dev/null; then
  pin=(taskset -c "$(( $(nproc) - 1 ))")
fi
for _ in $(seq "${BENCH_QGEMM_RUNS:-3}"); do
  "${pin[@]}" node --no-warnings bench/qgemm_wasm.mjs "$exe" \
    --reps "${BENCH_REPS:-31}" --sample-ms "${BENCH_SAMPLE_MS:-4}" |
    sed 's/"case":"qgemm /"case":"node simd128: qgemm /'
  "${pin[@]}" node --no-warnings --experimental-wasm-relaxed-simd bench/qgemm_wasm.mjs "$exe" \
    --relaxed --reps "${BENCH_REPS:-31}" --sample-ms "${BENCH_SAMPLE_MS:-4}" |
    sed 's/"workload":"W1-int8"/"workload":"W1-int8-relaxed"/; s/"case":"qgemm /"case":"node relaxed: qgemm /'
  if [ "${BENCH_QGEMM_WEB:-1}" != 0 ]; then
    "${pin[@]}" node bench/qgemm_web.mjs "$exe" \
      --reps "${BENCH_REPS:-31}" --sample-ms 20 |
      sed 's/"workload":"W1-int8"/"workload":"W1-int8-chromium"/; s/"case":"qgemm /"case":"chromium relaxed: qgemm /'
  fi
done
