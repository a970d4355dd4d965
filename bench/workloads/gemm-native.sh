#!/usr/bin/env bash
# W1 GEMM, native, one thread: our GEMM (B pre-packed, and B packed per call)
# against Debian's OpenBLAS cblas_sgemm.
#
# Workload contract (see bench/run.sh): called with BENCH_ROOT (the repo),
# BENCH_BUILD (a Release build dir with libtensorplay.a) and BENCH_OUT (a
# scratch dir); prints one JSON object per case on stdout, a human table on
# stderr; a non-zero exit fails the run.
#
# Knobs: BENCH_GEMM_ISAS ("best avx2" by default: the dispatched path, then
# the AVX2 one against OpenBLAS's Haswell kernels), BENCH_REPS (41), BENCH_SAMPLE_MS (4).
set -euo pipefail
: "${BENCH_ROOT:?}" "${BENCH_BUILD:?}" "${BENCH_OUT:?}"

exe="$BENCH_OUT/gemm_bench"
cc="${CC:-gcc}"
inc=(-I"$BENCH_ROOT/src" -I"$BENCH_ROOT/bench")
"$cc" -O2 -std=gnu11 -Wall "${inc[@]}" "$BENCH_ROOT/bench/gemm_bench.c" \
  "$BENCH_BUILD/libtensorplay.a" -lopenblas -lm -pthread -o "$exe"

# Correctness first: every ISA's gemm_f32 and pre-packed path against a
# double reference on edge shapes and strided/transposed operands (< 1 s).
"$cc" -O2 -std=gnu11 -Wall "${inc[@]}" "$BENCH_ROOT/bench/gemm_check.c" \
  "$BENCH_BUILD/libtensorplay.a" -lm -pthread -o "$BENCH_OUT/gemm_check"
"$BENCH_OUT/gemm_check" | tail -n 1 >&2

pin=()
if command -v taskset >/dev/null; then
  last_cpu=$(( $(nproc) - 1 ))
  pin=(taskset -c "$last_cpu")
fi

for isa in ${BENCH_GEMM_ISAS:-best avx2}; do
  # OpenBLAS: one thread, and its own core detection (this machine's
  # environment may force OPENBLAS_CORETYPE=Haswell and a small
  # OPENBLAS_L2_SIZE; we unset both for this command only). Our AVX2 path is
  # compared with OpenBLAS's AVX2 (Haswell) kernels instead, like for like.
  core=()
  [ "$isa" = avx2 ] && core=(OPENBLAS_CORETYPE=Haswell)
  env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 "${core[@]}" \
    "${pin[@]}" "$exe" --isa "$isa" --reps "${BENCH_REPS:-41}" \
    --sample-ms "${BENCH_SAMPLE_MS:-4}"
done
