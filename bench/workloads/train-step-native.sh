#!/usr/bin/env bash
# W2 training step natively, one thread (bench/train_step_bench.c): eager
# autograd and compiled training (tp_compile: AOT autograd, stax) against
# their forward passes, interleaved, with the peak tensor storage of a step.
# The same step as bench/workloads/train-step.mjs (Node) with the same
# model; different random numbers (tp_rand), checked: the compiled loss
# and gradients must equal eager's.
#
# Workload contract (see bench/run.sh). Knobs: BENCH_REPS (21),
# BENCH_SAMPLE_MS (10).
set -euo pipefail
: "${BENCH_ROOT:?}" "${BENCH_BUILD:?}" "${BENCH_OUT:?}"

exe="$BENCH_OUT/train_step_bench"
"${CC:-gcc}" -O2 -std=gnu11 -Wall -I"$BENCH_ROOT/src" -I"$BENCH_ROOT/bench" \
  "$BENCH_ROOT/bench/train_step_bench.c" "$BENCH_BUILD/libtensorplay.a" -lm -pthread -o "$exe"
TP_NUM_THREADS=1 "$exe" --reps "${BENCH_REPS:-21}" --sample-ms "${BENCH_SAMPLE_MS:-10}"
