#!/usr/bin/env bash
# scripts/check-layers.sh - the layer rule of docs/architecture.md ("Layers"),
# checked on every #include "..." line under src/ and wasm/: a file may
# include files of its own layer and of layers below it, never a layer above
# it nor a sibling (another layer of the same rank). Also, core, runtime,
# ops and graph may not name a function of capture, lower, codegen or the
# compiler (a call up without an include). Prints every broken line as
# file:line with the rule it breaks and exits 1; exits 0 and prints a
# one-line summary when the tree follows the rule.
#
# Includes resolve as the compiler resolves them: next to the including
# file first, then against src/ and the repository root (CMakeLists.txt's
# include directories). <...> includes are system headers and not checked.
# Usage: bash scripts/check-layers.sh [repo root]
set -uo pipefail
ROOT="$(cd "${1:-$(dirname "$0")/..}" && pwd)"
cd "$ROOT" || exit 2

# layer <path relative to the root>: prints "rank name", or nothing for a
# file outside the layered tree. Keep this table and the one in
# docs/architecture.md in step.
layer() {
  case "$1" in
    src/tensorplay.h|src/ops/ops.def) echo "0 api" ;;   # the public header and the op table it expands
    src/runtime/kernels/*) echo "0 kernels" ;;
    src/core/*) echo "1 core" ;;
    src/runtime/*) echo "2 runtime" ;;
    src/ops/*) echo "3 ops" ;;
    src/graph/*) echo "4 graph" ;;
    src/capture/*) echo "5 capture" ;;
    src/lower/*) echo "5 lower" ;;
    src/onnx/*) echo "5 onnx" ;;
    src/codegen/*) echo "6 codegen" ;;
    src/compiler/*) echo "7 compiler" ;;
    src/cli/*) echo "8 cli" ;;
    wasm/*) echo "8 wasm" ;;
  esac
}

bad=0 checked=0
while IFS= read -r hit; do
  f=${hit%%:*} rest=${hit#*:}
  n=${rest%%:*} line=${rest#*:}
  from=$(layer "$f")
  [ -n "$from" ] || continue
  fr=${from%% *} fn=${from#* }
  [[ $line =~ \"([^\"]+)\" ]] || continue
  inc=${BASH_REMATCH[1]}
  target=""
  for base in "${f%/*}" src .; do
    if [ -e "$base/$inc" ]; then
      target=$(realpath -m --relative-to="$ROOT" "$base/$inc")
      break
    fi
  done
  if [ -z "$target" ]; then
    echo "$f:$n: #include \"$inc\" does not resolve to a file under src/ or the root"
    bad=$((bad + 1))
    continue
  fi
  checked=$((checked + 1))
  to=$(layer "$target")
  [ -n "$to" ] || continue
  tr=${to%% *} tn=${to#* }
  [ "$tn" = "$fn" ] && continue
  if [ "$tr" -gt "$fr" ]; then
    echo "$f:$n: #include \"$inc\" points up: $fn (rank $fr) may not include $tn (rank $tr, $target)"
    bad=$((bad + 1))
  elif [ "$tr" -eq "$fr" ]; then
    echo "$f:$n: #include \"$inc\" joins siblings: $fn and $tn are both rank $fr and may not include each other ($target)"
    bad=$((bad + 1))
  fi
done < <(grep -rnE --include='*.c' --include='*.h' --include='*.def' \
           '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' src wasm | sort)

# Calls that point up without an include (a declaration copied by hand):
# the layers below capture/lower/codegen/compiler name none of their
# functions. Upper layers reach down through hooks they install instead
# (tp_ops_set_observer, tp_lower_accel).
# The names of capture, lower, codegen, compiler and onnx functions, and
# capture's public readers (tp_tensor_read/item/shape carry the graph-break
# checks; below capture the plain readers are used).
UPPER='tp_(capture_|trace|jit_|plan_|emit_|lower\b|backend|compile|onnx_|rec_|pass_|kir_|wasm_)[a-z_]*|\btp_tensor_(read|item|shape)\('
while IFS= read -r hit; do
  echo "${hit%%:*}:$(cut -d: -f2 <<<"$hit"): names an upper layer's function ($(grep -oE "$UPPER" <<<"${hit#*:*:}" | head -1)): core, runtime, ops and graph may not call capture, lower, codegen, onnx or compiler"
  bad=$((bad + 1))
done < <(grep -rnE "$UPPER" src/core src/runtime src/ops src/graph)
# ops and the layers below it do not call the graph layer either
while IFS= read -r hit; do
  echo "${hit%%:*}:$(cut -d: -f2 <<<"$hit"): names a graph function ($(grep -oE '\btp_graph_[a-z_]+' <<<"${hit#*:*:}" | head -1)): core, runtime and ops may not call the graph layer"
  bad=$((bad + 1))
done < <(grep -rnE '\btp_graph_[a-z_]+\(' src/core src/runtime src/ops)

if [ "$bad" -gt 0 ]; then
  echo "check-layers: $bad line(s) break the layer rule (docs/architecture.md, Layers)"
  exit 1
fi
echo "check-layers: $checked includes follow the layer rule"
