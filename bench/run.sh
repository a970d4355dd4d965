#!/usr/bin/env bash
# bench/run.sh [WORKLOAD...] - build what the benchmarks need, run them, and
# write bench/results/<workload>-<date>.{json,md}.
#
# A workload is one file in bench/workloads/: NAME.sh (run with bash) or
# NAME.mjs (run with node). It prints one JSON object per case on stdout:
#   {"case": "...", "impls": [{"name", "median_ms", "min_ms", ...}, ...],
#    "baseline": "<impl name>", ...}
# and anything human-readable on stderr. It gets BENCH_ROOT, BENCH_BUILD (a
# Release build of libtensorplay in build/bench) and BENCH_OUT (scratch).
# With no argument every workload runs. See docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
export BENCH_ROOT="$ROOT"
export BENCH_BUILD="${BENCH_BUILD:-$ROOT/build/bench}"
export BENCH_OUT="$BENCH_BUILD/bench-out"
DATE="$(date -u +%F)"
RESULTS="${BENCH_RESULTS:-$ROOT/bench/results}" # BENCH_RESULTS=DIR: elsewhere (partial runs)
mkdir -p "$RESULTS" "$BENCH_OUT"

say() { printf 'bench: %s\n' "$*" >&2; }

workloads=("$@")
if [ "${#workloads[@]}" -eq 0 ]; then
  for f in bench/workloads/*.sh bench/workloads/*.mjs; do
    [ -e "$f" ] || continue
    b="$(basename "$f")"
    workloads+=("${b%.*}")
  done
fi

bash bench/setup.sh

# Our library: a separate Release tree, so a concurrent build elsewhere
# (build/native) is never disturbed and never disturbs us.
t0=$SECONDS
say "building libtensorplay (Release) in $BENCH_BUILD"
log="$BENCH_BUILD.log"
if ! { cmake -S . -B "$BENCH_BUILD" -DCMAKE_BUILD_TYPE=Release -DTP_BUILD_TESTS=OFF &&
       cmake --build "$BENCH_BUILD" -j"${JOBS:-$(nproc)}" --target tensorplay; } >"$log" 2>&1; then
  tail -n 30 "$log" >&2
  say "build failed (full log: $log)"
  exit 1
fi
say "built in $((SECONDS - t0)) s"

machine_json() {
  node -e '
    const os = require("os"), cp = require("child_process");
    const lscpu = cp.execSync("lscpu", {encoding: "utf8"});
    const get = k => (lscpu.match(new RegExp("^" + k + ":\\s*(.*)$", "m")) || [])[1] || null;
    console.log(JSON.stringify({
      cpu: get("Model name"), cpus: get("CPU\\(s\\)"), l1d: get("L1d cache"), l2: get("L2 cache"),
      l3: get("L3 cache"), hypervisor: get("Hypervisor vendor"),
      avx512: /avx512f/.test(lscpu), kernel: os.release(), host: os.hostname()}));'
}

status=0
for w in "${workloads[@]}"; do
  if [ -f "bench/workloads/$w.sh" ]; then cmd=(bash "bench/workloads/$w.sh")
  elif [ -f "bench/workloads/$w.mjs" ]; then cmd=(node "bench/workloads/$w.mjs")
  else say "no workload '$w' in bench/workloads"; status=1; continue; fi
  say "running $w"
  t0=$SECONDS
  lines="$BENCH_OUT/$w.jsonl"
  if ! "${cmd[@]}" >"$lines"; then
    say "$w FAILED"
    status=1
    continue
  fi
  out="$RESULTS/$w-$DATE"
  node bench/lib/report.mjs --workload "$w" --date "$DATE" \
    --machine "$(machine_json)" --command "bash bench/run.sh $w" \
    --seconds "$((SECONDS - t0))" "$lines" "$out.json" "$out.md"
  say "$w: $((SECONDS - t0)) s -> ${out#$ROOT/}.{json,md}"
  cat "$out.md"
done
exit $status
