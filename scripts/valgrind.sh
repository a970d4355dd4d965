#!/usr/bin/env bash
# scripts/valgrind.sh - memcheck over a set of the native C tests (build/native):
# uninitialised reads and invalid accesses that ASan does not see (ASan finds
# out-of-bounds and use-after-free; an uninitialised read it lets through:
# e.g. a new storage's version field, read by autograd's saved-tensor check).
# Each test must exit 0 with no memcheck error; fork-based allocation sweeps
# are left to the asan stage (--child-silent-after-fork), and the long
# differential / sweep tests are not listed (about 40 s on 2 cores).
# Usage: scripts/valgrind.sh [build dir] [test names...]. Exit 77 when valgrind
# is missing (scripts/setup.sh installs it).
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD="${1:-build/native}"
shift || true
TESTS=("$@")
[ ${#TESTS[@]} -eq 0 ] && TESTS=(test_grad test_capture test_frontend test_partition test_compile_train
  test_onnx_model test_optim test_loss test_compiled_path test_lower test_onnx_dyn test_onnx_control
  test_npy test_recurrent test_qconv test_onnx_finetune_f16)
if ! command -v valgrind >/dev/null; then
  echo "valgrind: not installed (apt-get install valgrind); skipped"
  exit 77
fi
LOGDIR="$(mktemp -d)"
run_one() { # name
  local t="$1" log="$LOGDIR/$1.log"
  if [ ! -x "$BUILD/$t" ]; then echo "valgrind: $BUILD/$t missing"; return 1; fi
  if TP_NUM_THREADS=2 valgrind -q --error-exitcode=97 --child-silent-after-fork=yes \
       --errors-for-leak-kinds=definite --leak-check=full "$BUILD/$t" >"$log" 2>&1; then
    echo "valgrind: $t ok"
  else
    echo "valgrind: $t FAILED (exit $?; 97 = memcheck errors)"; grep -v '^ok\|checks, 0 failures' "$log" | head -60
    return 1
  fi
}
export -f run_one
export BUILD LOGDIR
printf '%s\n' "${TESTS[@]}" | xargs -P "${JOBS:-2}" -I{} bash -c 'run_one {}'
rc=$?
rm -rf "$LOGDIR"
exit $rc
