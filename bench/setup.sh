#!/usr/bin/env bash
# bench/setup.sh - install what the benchmarks compare against (never needed
# by the build or the tests). Idempotent: does nothing when all is present.
#   libopenblas-dev   Debian's OpenBLAS (0.3.21 on bookworm), for W1's sgemm
#   onnxruntime-node  npm devDependency (package-lock.json), for W2-W4; its
#                     install script downloads binaries (offline: fails), so
#                     it is skipped: the CPU binaries ship in the package
set -euo pipefail

have_openblas() {
  [ -f /usr/include/x86_64-linux-gnu/cblas.h ] || [ -f /usr/include/cblas.h ] || return 1
  ldconfig -p 2>/dev/null | grep -q 'libopenblas\.so' || return 1
}

if ! have_openblas; then
  echo "setup: installing libopenblas-dev" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq libopenblas-dev >&2
fi
have_openblas || { echo "setup: libopenblas-dev is still missing" >&2; exit 1; }

# onnxruntime-node: installed by `npm ci` at the repo root (scripts/setup.sh
# does it too); here only when missing, e.g. node_modules from an older lock.
if ! node -e 'require.resolve("onnxruntime-node")' >/dev/null 2>&1; then
  echo "setup: npm ci (onnxruntime-node)" >&2
  ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund --loglevel=error >&2
fi
node -e 'require.resolve("onnxruntime-node")' >/dev/null 2>&1 ||
  { echo "setup: onnxruntime-node is still missing" >&2; exit 1; }
