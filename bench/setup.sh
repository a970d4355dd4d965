#!/usr/bin/env bash
# bench/setup.sh - install what the benchmarks compare against (never needed
# by the build or the tests). Idempotent: does nothing when all is present.
#   libopenblas-dev   Debian's OpenBLAS (0.3.21 on bookworm), for W1's sgemm
#   onnxruntime-node  npm devDependency (package-lock.json), for W2-W4; its
#                     install script downloads binaries (offline: fails), so
#                     it is skipped: the CPU binaries ship in the package
#   onnxruntime-web, @tensorflow/tfjs-core, @tensorflow/tfjs-backend-wasm
#                     npm devDependencies, for models-wasm (their .wasm
#                     binaries ship in the packages)
set -euo pipefail
cd "$(dirname "$0")/.."

have_openblas() {
  [ -f /usr/include/x86_64-linux-gnu/cblas.h ] || [ -f /usr/include/cblas.h ] || return 1
  # (not `| grep -q`: under pipefail, grep quitting early makes ldconfig's
  # SIGPIPE fail the pipeline when its output is long)
  [[ "$(ldconfig -p 2>/dev/null)" == *libopenblas.so* ]] || return 1
}

if ! have_openblas; then
  echo "setup: installing libopenblas-dev" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libopenblas-dev >&2
fi
have_openblas || { echo "setup: libopenblas-dev is still missing" >&2; exit 1; }

# npm devDependencies: installed by `npm ci` at the repo root (scripts/setup.sh
# does it too); here only when one is missing, e.g. node_modules from an older lock.
NPM_DEPS=(onnxruntime-node onnxruntime-web @tensorflow/tfjs-core @tensorflow/tfjs-backend-wasm)
have_npm() { for p in "${NPM_DEPS[@]}"; do [ -f "node_modules/$p/package.json" ] || return 1; done; }
if ! have_npm; then
  echo "setup: npm ci (${NPM_DEPS[*]})" >&2
  ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund --loglevel=error >&2
fi
have_npm || { echo "setup: an npm devDependency is still missing (${NPM_DEPS[*]})" >&2; exit 1; }
