#!/usr/bin/env bash
# W1-W4 in Node 20, one thread (issue 5, part 7): our JS API on the wasi core
# (stax with generated SIMD128 code, the kernel-IR executor, eager) against
# onnxruntime-web (wasm EP, SIMD, numThreads 1) and
# @tensorflow/tfjs-backend-wasm (SIMD, no threads), interleaved sample by
# sample in one process, end to end (input copied in from a JS array, output
# read into a reused JS array: the headline rows) and resident; plus time
# from process start to the first W2
# result (fresh processes), compile time per workload and .wasm sizes.
#
# Workload contract (see bench/run.sh): BENCH_ROOT, BENCH_BUILD, BENCH_OUT;
# one JSON object per case on stdout, a human table on stderr.
#
# Steps: (1) build the wasi core (scripts/build.sh wasi -> js/wasm/tensorplay.wasm);
# (2) bench/lib/models_wasm.mjs (models in bench/lib/models_wasm_defs.mjs,
# start-up timing in bench/lib/models_wasm_start.mjs).
#
# Knobs: BENCH_REPS (21), BENCH_REPS_BIG (15, 1024^3), BENCH_SAMPLE_MS (10),
# BENCH_CASES ("W1 W2 W3 W4 R1"; R1 = ultraface-rfb-320, a real ONNX model),
# BENCH_STARTS (5), BENCH_SKIP_WASI_BUILD=1.
set -euo pipefail
: "${BENCH_ROOT:?}" "${BENCH_BUILD:?}" "${BENCH_OUT:?}"
cd "$BENCH_ROOT"

if [ "${BENCH_SKIP_WASI_BUILD:-0}" != 1 ]; then
  log="$BENCH_OUT/wasi-build.log"
  if ! bash scripts/build.sh wasi >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "models-wasm: wasi build failed (full log: $log)" >&2
    exit 1
  fi
  echo "models-wasm: wasi core built ($(stat -c %s js/wasm/tensorplay.wasm) bytes)" >&2
fi

# One CPU for the benchmark process and the start-up processes it spawns.
pin=()
if command -v taskset >/dev/null; then
  cpu="$(( $(nproc) - 1 ))"
  pin=(taskset -c "$cpu")
  export BENCH_PIN_CPU="$cpu"
fi
"${pin[@]}" node "$BENCH_ROOT/bench/lib/models_wasm.mjs"
