#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS] [TARGET...] - the libFuzzer targets run longer
# than in the test command, each for SECONDS (default 600) on its corpus
# under tests/fuzz/ itself (corpus/ for onnx, corpus_graph/, corpus_npy/,
# corpus_diff/),
# so new inputs that reach new code are kept there (commit the useful ones;
# `-merge=1` minimizes a corpus). Targets: onnx, graph, npy, diff (default: all;
# tests/fuzz/run.sh says what each checks). A crash stops the run and
# leaves its input in build/fuzz/TARGET-crash-*: add it to the corpus as a
# regression input once fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-600}"
shift || true
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(onnx graph npy diff)
for t in "${targets[@]}"; do
  FUZZ_KEEP_CORPUS=1 bash tests/fuzz/run.sh "$secs" "$t"
done
