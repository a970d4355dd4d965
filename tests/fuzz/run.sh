#!/usr/bin/env bash
# tests/fuzz/run.sh [SECONDS] - build the libFuzzer target for the ONNX reader
# with clang-14 (-fsanitize=fuzzer,address,undefined) and run it on a copy of
# tests/fuzz/corpus for a bounded time (default 20 s). Exit 77 when clang has
# no libFuzzer. New inputs found go to build/fuzz/corpus, not the repo.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
secs="${1:-20}"
cc="${CC_FUZZ:-$(command -v clang-14 || command -v clang || true)}"
out="$repo/build/fuzz"
mkdir -p "$out/corpus"
if [ -z "$cc" ] || ! echo 'int LLVMFuzzerTestOneInput(const char*d,unsigned long n){return 0;}' |
    "$cc" -x c -fsanitize=fuzzer - -o "$out/probe" 2>/dev/null; then
  echo "fuzz: no clang with libFuzzer: skipped"
  exit 77
fi
srcs=$(cd "$repo" && find src -name '*.c' ! -path 'src/cli/*' ! -name '*sse2.c' ! -name '*avx2.c' \
        ! -name '*avx512.c' ! -name '*wasmsimd.c' ! -path '*/kernels/*/sse2.c' | sort)
kern=$(cd "$repo" && find src/runtime/kernels -name '*sse2.c' -o -name '*avx2.c' -o -name '*avx512.c' | sort)
objs=()
mkdir -p "$out/obj"
for f in $srcs; do
  o="$out/obj/$(echo "$f" | tr / _).o"
  flags="-O1 -g -std=gnu11 -ffp-contract=off -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
  "$cc" $flags -I"$repo/src" -I"$repo" -c "$repo/$f" -o "$o"
  objs+=("$o")
done
for f in $kern; do
  o="$out/obj/$(echo "$f" | tr / _).o"
  case "$f" in
    *avx512*) isa="-mavx512f -mavx512dq -mavx2 -mfma" ;;
    *avx2*) isa="-mavx2 -mfma" ;;
    *) isa="-msse2" ;;
  esac
  "$cc" -O1 -g -std=gnu11 -ffp-contract=off $isa -I"$repo/src" -I"$repo" -c "$repo/$f" -o "$o"
  objs+=("$o")
done
"$cc" -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -I"$repo/src" "$here/fuzz_onnx.c" "${objs[@]}" -lm \
  -o "$out/fuzz_onnx"
cp -n "$here"/corpus/* "$out/corpus/" 2>/dev/null || true
"$out/fuzz_onnx" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 "$out/corpus"
