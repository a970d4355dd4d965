#!/usr/bin/env bash
# bench/setup.sh - install what the benchmarks compare against (never needed
# by the build or the tests). Idempotent: does nothing when all is present.
#   libopenblas-dev   Debian's OpenBLAS (0.3.21 on bookworm), for W1's sgemm
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
