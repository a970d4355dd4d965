# W2 (MLP), W3 (elementwise chain), W4 (pre-LN encoder block) and R1
# (ultraface-rfb-320, a real ONNX model), native, one
# thread: our stax plan and eager runner against onnxruntime-node (CPU EP,
# 1 intra-op thread), interleaved sample by sample; W3 also against a plain
# memcpy of the same bytes.
#
# Workload contract (see bench/run.sh): BENCH_ROOT, BENCH_BUILD, BENCH_OUT;
# one JSON object per case on stdout, a human table on stderr.
#
# Steps: (1) bench/lib/models_gen.mjs captures the three models with the JS
# API and writes, into $BENCH_BUILD/graphs, the graph text with data, the
# input, the JS eager output and an ONNX model with the same weights
# (bench/lib/onnx_write.mjs); (2) bench/models_bench.c is built against
# libtensorplay.a; (3) bench/lib/models_native.mjs checks every
# implementation against the reference, then times them interleaved.
#
# Knobs: BENCH_REPS (31), BENCH_SAMPLE_MS (10), BENCH_MODELS ("W2 W3 W4 R1"; R1 =
# ultraface-rfb-320 from shared/conformance, its original .onnx for ORT).
set -euo pipefail
: "${BENCH_ROOT:?}" "${BENCH_BUILD:?}" "${BENCH_OUT:?}"

graphs="$BENCH_BUILD/graphs"
node "$BENCH_ROOT/bench/lib/models_gen.mjs" "$graphs"

exe="$BENCH_OUT/models_bench"
"${CC:-gcc}" -O2 -std=gnu11 -Wall -I"$BENCH_ROOT/src" -I"$BENCH_ROOT/bench" \
  "$BENCH_ROOT/bench/models_bench.c" "$BENCH_BUILD/libtensorplay.a" -lm -pthread -o "$exe"

# Both processes on one CPU: they take turns (one sample at a time), so each
# runs alone on the core while it is timed.
pin=()
if command -v taskset >/dev/null; then
  pin=(taskset -c "$(( $(nproc) - 1 ))")
fi
"${pin[@]}" node "$BENCH_ROOT/bench/lib/models_native.mjs" "$exe" "$graphs"
