#!/usr/bin/env bash
# W1 shapes as an int8 GEMM (u8 x s8 -> u8 with requantization), native,
# one thread: every qgemm variant this CPU has against our float32 GEMM
# with B pre-packed, in the same run (bench/qgemm_bench.c).
#
# Workload contract (see bench/run.sh). Knobs: BENCH_REPS (31),
# BENCH_SAMPLE_MS (4), BENCH_QGEMM_RUNS (3: separate processes, for the
# spread between runs).
set -euo pipefail
: "${BENCH_ROOT:?}" "${BENCH_BUILD:?}" "${BENCH_OUT:?}"

exe="$BENCH_OUT/qgemm_bench"
"${CC:-gcc}" -O2 -std=gnu11 -Wall -I"$BENCH_ROOT/src" -I"$BENCH_ROOT/bench" \
  "$BENCH_ROOT/bench/qgemm_bench.c" "$BENCH_BUILD/libtensorplay.a" -lm -o "$exe"

pin=()
if command -v taskset >/dev/null; then
  pin=(taskset -c "$(( $(nproc) - 1 ))")
fi
for _ in $(seq "${BENCH_QGEMM_RUNS:-3}"); do
  "${pin[@]}" "$exe" --reps "${BENCH_REPS:-31}" --sample-ms "${BENCH_SAMPLE_MS:-4}"
done
