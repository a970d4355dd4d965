#!/usr/bin/env bash
# scripts/setup.sh - make a Debian 12 machine ready to build and test
# tensorplay-wasm. Idempotent: installs only what is missing (apt-get update at
# most once, and only then), then runs `npm ci` at the repo root when
# node_modules is missing or older than package-lock.json.
# Prints one line per step. Run as root, or as a user with sudo.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup: %s\n' "$*"; }

SUDO=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    say "not root and no sudo: can only check, not install"; SUDO="none"; fi
fi

# Debian package -> why. Installed when dpkg does not report it installed.
REQUIRED=(
  cmake make gcc                       # native build
  pkg-config                           # tests/install: the installed tensorplay.pc
  clang-14 lld wasi-libc               # wasm32-wasi build
  libclang-rt-14-dev-wasm32            # compiler-rt builtins for wasm32
  libclang-rt-14-dev                   # ThreadSanitizer runtime (build/tsan)
  binaryen wabt                        # wasm-opt; wasm-validate, wasm2wat
  emscripten                           # the second wasm toolchain
  chromium                             # browser tests
)
OPTIONAL=(valgrind)

is_installed() {
  [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = 'install ok installed' ]
}

missing=()
for p in "${REQUIRED[@]}"; do is_installed "$p" || missing+=("$p"); done
opt_missing=()
for p in "${OPTIONAL[@]}"; do is_installed "$p" || opt_missing+=("$p"); done

# Node >= 18 (node:test, WebAssembly SIMD, fetch). Debian 12 ships 18.
node_ok=0
if command -v node >/dev/null 2>&1; then
  major="$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)"
  if [ "${major:-0}" -ge 18 ]; then node_ok=1; fi
fi
if [ "$node_ok" = 0 ]; then missing+=(nodejs); fi
if ! command -v npm >/dev/null 2>&1; then missing+=(npm); fi

apt_install() { # apt_install required|optional pkgs...
  local kind="$1"; shift
  [ "$#" -gt 0 ] || return 0
  if [ "$SUDO" = none ]; then
    say "MISSING ($kind): $* (run this script as root)"; [ "$kind" = optional ] || return 1; return 0
  fi
  if [ -z "${TP_APT_UPDATED:-}" ]; then
    say "apt-get update"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    TP_APT_UPDATED=1
  fi
  say "apt-get install ($kind): $*"
  if ! $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null; then
    if [ "$kind" = optional ]; then say "optional packages failed to install: $* (continuing)"; return 0; fi
    say "FAILED to install: $*"; return 1
  fi
}

if [ "${#missing[@]}" -eq 0 ]; then
  say "system packages: all present (${REQUIRED[*]}, node $(node --version))"
else
  apt_install required "${missing[@]}"
fi
if [ "${#opt_missing[@]}" -eq 0 ]; then
  say "optional packages: all present (${OPTIONAL[*]})"
else
  apt_install optional "${opt_missing[@]}"
fi

# Tools the builds call, by name.
for t in cmake make gcc pkg-config clang-14 wasm-ld llvm-ar-14 wasm-opt wasm-validate wasm2wat emcc emcmake node npm; do
  command -v "$t" >/dev/null 2>&1 || { say "FAILED: $t not on PATH after install"; exit 1; }
done
say "tools: all on PATH"

# npm: only when the lock file is newer than the last install.
stamp=node_modules/.tp-setup-stamp
if [ ! -f package-lock.json ]; then
  say "npm: no package-lock.json, skipped"
elif [ -f "$stamp" ] && [ ! package-lock.json -nt "$stamp" ] && [ ! package.json -nt "$stamp" ]; then
  say "npm ci: up to date"
else
  say "npm ci"
  # onnxruntime-node (a bench devDependency) has an install script that
  # downloads binaries (fails offline); its CPU binaries ship in the package.
  ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund --loglevel=error
  mkdir -p node_modules && touch "$stamp"
fi
say "done"
