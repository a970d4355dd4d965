#!/usr/bin/env bash
# The old partition rule (TP_PARTITIONER=rule: recompute pointwise and view
# ops that no GEMM reads, save the rest), kept for comparison with the
# min-cut (docs/training.md "The partitioner"): the compiled-training tests
# pass under it too (the MLP, CNN and transformer block's gradients equal
# eager's, 40 Adam steps agree, peak memory no larger than eager's; nested
# regions). Run from the build tree (ctest's working directory).
set -euo pipefail
for t in test_compile_train test_compile_nested_grad test_compile_grad; do
  [ -x "./$t" ] || { echo "train_rule_partitioner: ./$t not built" >&2; exit 1; }
  TP_PARTITIONER=rule "./$t"
done
