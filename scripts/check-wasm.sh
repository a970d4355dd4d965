#!/usr/bin/env bash
# scripts/check-wasm.sh MODULE.wasm [EXPORTS.txt] - validate a core module and
# check its interface: it must export memory, __indirect_function_table,
# _initialize and every tpw_* function (list written by CMake at
# build/<flavor>/tpw_exports.txt), and import env.tp_host_call.
set -uo pipefail
mod="${1:?usage: check-wasm.sh MODULE.wasm [EXPORTS.txt]}"
list="${2:-$(dirname "$mod")/tpw_exports.txt}"
fail=0
[ -f "$mod" ] || { echo "check-wasm: $mod: no such file"; exit 1; }
if ! wasm-validate --enable-all "$mod"; then
  echo "check-wasm: $mod: wasm-validate failed"; fail=1
fi
wat="$(wasm2wat --enable-all "$mod" 2>&1 | grep -E '^\s*\((import|export) ')" || {
  echo "check-wasm: $mod: wasm2wat failed"; exit 1; }
want_exports=(memory __indirect_function_table _initialize)
if [ -f "$list" ]; then
  mapfile -t more < <(grep -v '^\s*$' "$list"); want_exports+=("${more[@]}")
else
  echo "check-wasm: $list missing: only the fixed exports are checked"
fi
missing=()
for e in "${want_exports[@]}"; do
  grep -q "(export \"$e\" " <<<"$wat" || missing+=("$e")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "check-wasm: $mod: missing exports: ${missing[*]}"; fail=1
fi
if ! grep -q '(import "env" "tp_host_call" (func' <<<"$wat"; then
  echo "check-wasm: $mod: does not import env.tp_host_call"; fail=1
fi
nexp=$(grep -c '(export ' <<<"$wat"); nimp=$(grep -c '(import ' <<<"$wat")
size=$(stat -c %s "$mod")
imports=$(grep -oE '\(import "[^"]+" "[^"]+"' <<<"$wat" | sed -E 's/\(import "([^"]+)" "([^"]+)"/\1.\2/' | tr '\n' ' ')
echo "check-wasm: $mod: $size bytes, $nexp exports, $nimp imports: $imports"
[ "$fail" = 0 ] && echo "check-wasm: $mod: ok"
exit "$fail"
