#!/usr/bin/env bash
# Native-vs-Wasm parity: the graphs traced in Node (each Wasm core) run
# through native `tpc run`; see parity.test.mjs.
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -x build/native/tpc ] || { echo "parity: build/native/tpc is missing (scripts/build.sh native)"; exit 1; }
echo "parity: wasi core"
env -u TP_WASM node --test tests/parity/parity.test.mjs
if [ -f build/emscripten/tensorplay.wasm ]; then
  echo "parity: emscripten core"
  TP_WASM="$PWD/build/emscripten/tensorplay.wasm" node --test tests/parity/parity.test.mjs
fi
