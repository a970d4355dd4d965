#!/usr/bin/env bash
# tests/install/run.sh BUILD_DIR - install a native build into a temporary
# prefix and build tests/install/consumer.c against it the ways a user
# would: CMake find_package (tensorplay::tensorplay, shared, and
# tensorplay::tensorplay_static) and pkg-config (shared, and static through
# `pkg-config --static`). Runs each program and checks that it prints "ok".
# Runs as the ctest test install_package of build/native (CMakeLists.txt).
# Env: CC (default cc), CMAKE_GENERATOR (passed on by ctest).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="$(cd "${1:?usage: run.sh BUILD_DIR}" && pwd)"
cc="${CC:-cc}"
tmp="$(mktemp -d "${TMPDIR:-/tmp}/tp-install.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"
fail() { echo "install test: FAIL: $*"; exit 1; }
step() { echo "install test: $*"; }

step "cmake --install $build --prefix $prefix"
cmake --install "$build" --prefix "$prefix" > "$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }

# Where GNUInstallDirs put the libraries (lib, or lib/<multiarch> for /usr).
pc="$(find "$prefix" -name tensorplay.pc -path '*/pkgconfig/*' | head -n 1)"
[ -n "$pc" ] || fail "no pkgconfig/tensorplay.pc under $prefix"
libdir="$(dirname "$(dirname "$pc")")"
for f in include/tensorplay/tensorplay.h include/tensorplay/ops/ops.def bin/tpc \
         "${libdir#"$prefix"/}"/libtensorplay.a "${libdir#"$prefix"/}"/libtensorplay.so \
         "${libdir#"$prefix"/}"/cmake/tensorplay/tensorplayConfig.cmake \
         "${libdir#"$prefix"/}"/cmake/tensorplay/tensorplayConfigVersion.cmake \
         "${libdir#"$prefix"/}"/cmake/tensorplay/tensorplayTargets.cmake; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done
# the soname link the dynamic loader looks for
soname="$(objdump -p "$libdir/libtensorplay.so" | awk '$1 == "SONAME" { print $2 }')"
[ -n "$soname" ] && [ -e "$libdir/$soname" ] || fail "soname link '$soname' missing in $libdir"
grep -q '@' "$pc" && fail "unsubstituted @VAR@ in $pc: $(grep '@' "$pc")"
"$prefix/bin/tpc" version > "$tmp/tpc.out" || fail "installed tpc version exited $?"
step "tpc version: $(head -n 1 "$tmp/tpc.out")"

run() { # name program: must print "ok" and exit 0
  local out
  out="$("$2" 2>&1)" || { echo "$out"; fail "$1 exited non-zero"; }
  [ "$(printf '%s\n' "$out" | tail -n 1)" = ok ] || { echo "$out"; fail "$1 did not print ok"; }
  step "$1: ok"
}
static_only() { # name program: libtensorplay is linked in, not loaded
  if ldd "$2" | grep -q libtensorplay; then fail "$1 loads libtensorplay.so: $(ldd "$2" | grep libtensorplay)"; fi
}
shared_from() { # name program dir: loads libtensorplay.so from dir
  local where
  where="$(ldd "$2" | awk '/libtensorplay/ { print $3 }')"
  [ "$(dirname "$where")" = "$3" ] || fail "$1 loads libtensorplay from '$where', not $3"
}

# ---- CMake: find_package(tensorplay) ----
step "find_package: configure and build tests/install"
if ! { cmake -S "$here" -B "$tmp/cmake" -DCMAKE_PREFIX_PATH="$prefix" \
         -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER="$cc" &&
       cmake --build "$tmp/cmake"; } > "$tmp/cmake.log" 2>&1; then
  cat "$tmp/cmake.log"; fail "find_package consumer did not build"
fi
run "find_package tensorplay::tensorplay" "$tmp/cmake/consumer_shared"
shared_from "find_package tensorplay::tensorplay" "$tmp/cmake/consumer_shared" "$libdir"
run "find_package tensorplay::tensorplay_static" "$tmp/cmake/consumer_static"
static_only "find_package tensorplay::tensorplay_static" "$tmp/cmake/consumer_static"

# ---- pkg-config ----
command -v pkg-config > /dev/null ||
  fail "pkg-config is not installed (Debian: apt-get install pkg-config; scripts/setup.sh installs it)"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
version="$(pkg-config --modversion tensorplay)" || fail "pkg-config does not find tensorplay in $PKG_CONFIG_PATH"
step "pkg-config: tensorplay $version: $(pkg-config --cflags --libs tensorplay)"
# shellcheck disable=SC2046 # word splitting of the flags is intended
"$cc" -o "$tmp/pc_shared" "$here/consumer.c" $(pkg-config --cflags --libs tensorplay) ||
  fail "cc \$(pkg-config --cflags --libs tensorplay) failed"
LD_LIBRARY_PATH="$libdir" run "pkg-config (shared)" "$tmp/pc_shared"
LD_LIBRARY_PATH="$libdir" shared_from "pkg-config (shared)" "$tmp/pc_shared" "$libdir"
# static: --static adds Libs.private (-lm); -l:libtensorplay.a picks the archive
# even though libtensorplay.so sits next to it.
static_libs="$(pkg-config --static --libs tensorplay)"
case " $static_libs " in *" -lm "*) ;; *) fail "pkg-config --static --libs lacks -lm: $static_libs" ;; esac
# shellcheck disable=SC2046
"$cc" -o "$tmp/pc_static" "$here/consumer.c" $(pkg-config --cflags tensorplay) \
  ${static_libs//-ltensorplay/-l:libtensorplay.a} ||
  fail "cc with \$(pkg-config --static --libs tensorplay) failed"
run "pkg-config --static" "$tmp/pc_static"
static_only "pkg-config --static" "$tmp/pc_static"
echo "install test: ok"
