/* fuzz_onnx.c - libFuzzer target for the ONNX reader: any bytes must give a
 * graph or an error status, never a crash, a leak or an out-of-bounds read.
 * Built and run by tests/fuzz/run.sh (clang-14 -fsanitize=fuzzer,address). */
#include "tensorplay.h"
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tp_graph *g = NULL;
  if (tp_onnx_load(data, size, &g) == TP_OK) tp_graph_free(g);
  tp_tensor *t = NULL;
  if (tp_onnx_tensor_decode(data, size, &t) == TP_OK) tp_tensor_release(t);
  return 0;
}
