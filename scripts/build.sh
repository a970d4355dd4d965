#!/usr/bin/env bash
# scripts/build.sh [native] [asan] [wasi] [emscripten] [bundle] - configure and
# build. No argument: all five. Build trees:
#   build/native      Release: libtensorplay.{a,so}, tpc, tests/c
#   build/asan        Debug + TP_SANITIZE=ON (ASan + UBSan), tests/c
#   build/tsan        RelWithDebInfo + TP_TSAN=ON (ThreadSanitizer), tests/c
#                     (not in the default set: build it by name)
#   build/wasi        clang-14 wasm32-wasi reactor; wasm-opt'd tensorplay.wasm,
#                     copied to js/wasm/tensorplay.wasm (the JS default)
#   build/emscripten  emcc -sSTANDALONE_WASM reactor: build/emscripten/tensorplay.wasm
#   build/emscripten-mt  the Wasm threads build (emcc -pthread; not in the default
#                     set): js/wasm/tensorplay-mt.wasm (docs/build.md)
#   bundle            js/dist/tensorplay.mjs: the package in one file for pages,
#                     and js/dist/ort.cjs: tensorplay-wasm/ort as CommonJS for
#                     require() (scripts/bundle.mjs, esbuild from npm: run scripts/setup.sh)
# CMakePresets.json names the same four CMake trees with the same options
# (cmake --preset native && cmake --build --preset native; docs/build.md).
# Env: JOBS (default 2), CMAKE_ARGS (extra arguments for every configure).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
JOBS="${JOBS:-2}"
read -r -a EXTRA <<<"${CMAKE_ARGS:-}"

targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(native asan wasi emscripten bundle)

say() { printf 'build: %s\n' "$*"; }

build_one() {
  local name="$1" dir="build/$1"
  local t0=$SECONDS
  # (called under `if`, where set -e is off: every step checks its status)
  case "$name" in
    native)
      cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "${EXTRA[@]}" || return 1 ;;
    asan)
      cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DTP_SANITIZE=ON "${EXTRA[@]}" || return 1 ;;
    tsan)
      # clang-14 (setup.sh installs it and its TSan runtime, libclang-rt-14-dev)
      CC="${CC:-clang-14}" cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTP_TSAN=ON \
        "${EXTRA[@]}" || return 1 ;;
    wasi)
      cmake -S . -B "$dir" -DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/wasi.cmake" \
        -DCMAKE_BUILD_TYPE=Release "${EXTRA[@]}" || return 1 ;;
    emscripten)
      # Debian's emscripten 3.1.6 needs its node modules on NODE_PATH.
      NODE_PATH="${NODE_PATH:-/usr/share/nodejs}" \
        emcmake cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release "${EXTRA[@]}" || return 1 ;;
    emscripten-mt)
      # the Wasm threads build (not in the default set): shared memory, the
      # pool's workers started by js/src/threads.js; build/emscripten-mt/
      # tensorplay-mt.wasm, copied to js/wasm/tensorplay-mt.wasm
      NODE_PATH="${NODE_PATH:-/usr/share/nodejs}" \
        emcmake cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DTP_WASM_THREADS=ON "${EXTRA[@]}" || return 1
      NODE_PATH="${NODE_PATH:-/usr/share/nodejs}" cmake --build "$dir" -j"$JOBS" || return 1
      mkdir -p js/wasm && cp "$dir/tensorplay-mt.wasm" js/wasm/tensorplay-mt.wasm || return 1
      say "$name: ok ($((SECONDS - t0)) s) -> $dir, js/wasm/tensorplay-mt.wasm"
      return 0 ;;
    bundle)
      if [ ! -f node_modules/esbuild/package.json ]; then
        say "bundle: esbuild is not installed (bash scripts/setup.sh runs npm ci)"; return 1
      fi
      node scripts/bundle.mjs || return 1
      say "bundle: ok ($((SECONDS - t0)) s) -> js/dist"
      return 0 ;;
    *)
      say "unknown build '$name' (native, asan, tsan, wasi, emscripten, emscripten-mt, bundle)"; return 2 ;;
  esac
  NODE_PATH="${NODE_PATH:-/usr/share/nodejs}" cmake --build "$dir" -j"$JOBS" || return 1
  say "$name: ok ($((SECONDS - t0)) s) -> $dir"
}

for t in "${targets[@]}"; do
  say "$t"
  if ! build_one "$t"; then
    say "$t: FAILED"
    exit 1
  fi
done
