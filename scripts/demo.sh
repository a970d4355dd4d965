#!/usr/bin/env bash
# scripts/demo.sh - set up, build native + wasi + the JS bundle (examples/web), run the demos: a small MLP
# compiled and run in Node (examples/node/demo.mjs, on js/wasm/tensorplay.wasm)
# and through the tpc CLI (examples/cli/demo.sh, given the tpc path as $1).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh native wasi bundle
ran=0
if [ -f examples/node/demo.mjs ]; then
  echo "==> node examples/node/demo.mjs"
  node examples/node/demo.mjs
  ran=1
fi
if [ -f examples/cli/demo.sh ]; then
  echo "==> bash examples/cli/demo.sh build/native/tpc"
  TPC="$PWD/build/native/tpc" bash examples/cli/demo.sh "$PWD/build/native/tpc"
  ran=1
fi
[ "$ran" = 1 ] || echo "demo: examples/node/demo.mjs and examples/cli/demo.sh are not written yet"
