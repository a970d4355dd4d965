#!/usr/bin/env bash
# The W4 backward's GEMM shapes natively, one thread, each operand plain or
# transposed (bench/gemm_layout_bench.c): the kernel table's GEMM packs
# both operands on every call (a training step's path) and reads a
# transposed operand by strides; checked against a double reference.
#
# Workload contract (see bench/run.sh). Knobs: BENCH_REPS (21),
# BENCH_SAMPLE_MS (10).
set -euo pipefail
: "${BENCH_ROOT:?}" "${BENCH_BUILD:?}" "${BENCH_OUT:?}"

exe="$BENCH_OUT/gemm_layout_bench"
"${CC:-gcc}" -O2 -std=gnu11 -Wall -I"$BENCH_ROOT/src" -I"$BENCH_ROOT/bench" \
  "$BENCH_ROOT/bench/gemm_layout_bench.c" "$BENCH_BUILD/libtensorplay.a" -lm -pthread -o "$exe"
TP_NUM_THREADS=1 "$exe" --reps "${BENCH_REPS:-21}" --sample-ms "${BENCH_SAMPLE_MS:-10}"
