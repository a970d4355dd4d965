#!/usr/bin/env bash
# Native-vs-Wasm parity: the graphs traced in Node (each Wasm core) run
# through native `tpc run` (parity.test.mjs), and the real ONNX models of
# ../shared/conformance/models run by native `tpc run` and by Node on each
# Wasm core, outputs compared as .npy with the max abs error printed
# (onnx_models.test.mjs; skipped without the conformance data).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x build/native/tpc ] || { echo "parity: build/native/tpc is missing (scripts/build.sh native)"; exit 1; }
echo "parity: wasi core"
env -u TP_WASM node --test tests/parity/parity.test.mjs tests/parity/onnx_models.test.mjs
if [ -f build/emscripten/tensorplay.wasm ]; then
  echo "parity: emscripten core"
  TP_WASM="$PWD/build/emscripten/tensorplay.wasm" node --test tests/parity/parity.test.mjs tests/parity/onnx_models.test.mjs
fi
