#!/usr/bin/env bash
# tests/fuzz/run.sh [SECONDS] [TARGET...] - build the libFuzzer targets with
# clang-14 (-fsanitize=fuzzer,address,undefined, aborting on undefined
# behaviour) and run each on a copy of its seed corpus for a bounded time:
# SECONDS in all (default 20), split evenly between the targets. Targets:
#   onnx   the ONNX reader (fuzz_onnx.c; seeds tests/fuzz/corpus)
#   graph  the graph text parser, parse -> print -> parse round trip
#          (fuzz_graph.c; seeds tests/fuzz/corpus_graph)
#   npy    the .npy reader, decode -> encode -> decode round trip
#          (fuzz_npy.c; seeds tests/fuzz/corpus_npy)
#   diff   random valid graphs from the op table, reference vs eager vs
#          stax (fuzz_diff.c + tests/c/diffgen.c; seeds tests/fuzz/corpus_diff)
# Exit 77 when clang has no libFuzzer. New inputs found go to
# build/fuzz/corpus*, not the repo (scripts/fuzz.sh runs longer and keeps
# them under tests/fuzz/). FUZZ_KEEP_CORPUS=1: run on the repo's corpus
# folders themselves.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
secs="${1:-20}"
shift || true
targets=("$@")
[ "${#targets[@]}" -gt 0 ] || targets=(onnx graph npy diff)
cc="${CC_FUZZ:-$(command -v clang-14 || command -v clang || true)}"
out="$repo/build/fuzz"
mkdir -p "$out"
if [ -z "$cc" ] || ! echo 'int LLVMFuzzerTestOneInput(const char*d,unsigned long n){return 0;}' |
    "$cc" -x c -fsanitize=fuzzer - -o "$out/probe" 2>/dev/null; then
  echo "fuzz: no clang with libFuzzer: skipped"
  exit 77
fi
# the ISA-specific kernel files get their flags, as in CMakeLists.txt
srcs=$(cd "$repo" && find src -name '*.c' ! -path 'src/cli/*' ! -name '*sse2.c' ! -name '*avx2.c' \
        ! -name '*avx512.c' ! -name '*avxvnni.c' ! -name '*avx512vnni.c' ! -name '*wasmsimd.c' \
        ! -path '*/kernels/*/sse2.c' | sort)
kern=$(cd "$repo" && find src/runtime/kernels -name '*sse2.c' -o -name '*avx2.c' -o -name '*avx512.c' \
        -o -name '*avxvnni.c' -o -name '*avx512vnni.c' | sort)
objs=()
mkdir -p "$out/obj"
for f in $srcs; do
  o="$out/obj/$(echo "$f" | tr / _).o"
  if [ ! -f "$o" ] || [ "$repo/$f" -nt "$o" ]; then
    flags="-O1 -g -std=gnu11 -ffp-contract=off -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined"
    "$cc" $flags -I"$repo/src" -I"$repo" -c "$repo/$f" -o "$o"
  fi
  objs+=("$o")
done
for f in $kern; do
  o="$out/obj/$(echo "$f" | tr / _).o"
  case "$f" in
    *avx512vnni.c) isa="-mavx512f -mavx512bw -mavx512vl -mavx512vnni -mavx2 -mfma" ;;
    *avxvnni.c) isa="-mavx2 -mfma -mavxvnni" ;;
    *avx512*) isa="-mavx512f -mavx512dq -mavx2 -mfma" ;;
    *avx2*) isa="-mavx2 -mfma" ;;
    *) isa="-msse2" ;;
  esac
  [ -f "$o" ] && [ "$o" -nt "$repo/$f" ] || "$cc" -O1 -g -std=gnu11 -ffp-contract=off $isa -I"$repo/src" -I"$repo" -c "$repo/$f" -o "$o"
  objs+=("$o")
done
per=$(( secs / ${#targets[@]} ))
[ "$per" -ge 1 ] || per=1
for t in "${targets[@]}"; do
  case "$t" in
    onnx) seeds="$here/corpus"; maxlen=65536 ;;
    graph) seeds="$here/corpus_graph"; maxlen=8192 ;;
    npy) seeds="$here/corpus_npy"; maxlen=4096 ;;
    diff) seeds="$here/corpus_diff"; maxlen=4096 ;;
    *) echo "fuzz: unknown target '$t' (onnx, graph, npy, diff)"; exit 2 ;;
  esac
  extra=()
  [ "$t" = diff ] && extra=("$repo/tests/c/diffgen.c")
  "$cc" -O1 -g -std=gnu11 -ffp-contract=off -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
    -I"$repo/src" -I"$repo/tests/c" "$here/fuzz_$t.c" "${extra[@]}" "${objs[@]}" -lm -o "$out/fuzz_$t"
  if [ "${FUZZ_KEEP_CORPUS:-0}" = 1 ]; then
    corpus="$seeds"
  else
    corpus="$out/corpus_$t"
    mkdir -p "$corpus"
    cp -n "$seeds"/* "$corpus/" 2>/dev/null || true
  fi
  echo "fuzz: $t for $per s (corpus $corpus)"
  rc=0
  "$out/fuzz_$t" -max_total_time="$per" -max_len="$maxlen" -rss_limit_mb=2048 -timeout=30 -print_final_stats=1 \
    -artifact_prefix="$out/$t-" "$corpus" > "$out/$t.log" 2>&1 || rc=$?
  grep -E "stat::number_of_executed_units|DONE" "$out/$t.log" || true
  if [ "$rc" != 0 ]; then
    tail -n 40 "$out/$t.log"
    echo "fuzz: $t FAILED (exit $rc; the input is in $out/$t-*)"
    exit 1
  fi
done
