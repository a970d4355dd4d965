/* fuzz_onnx.c - libFuzzer target for the ONNX reader: any bytes must give a
 * graph or an error status, never a crash, a leak or an out-of-bounds read;
 * a model that loads must also load after set_trainable + save.
 * Built and run by tests/fuzz/run.sh (clang-14 -fsanitize=fuzzer,address). */
#include "tensorplay.h"
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tp_graph *g = NULL;
  if (tp_onnx_load(data, size, &g) == TP_OK) tp_graph_free(g);
  tp_tensor *t = NULL;
  if (tp_onnx_tensor_decode(data, size, &t) == TP_OK) tp_tensor_release(t);
  /* fine-tuning's path: the default trainable list (a probe import), then
   * the model saved back; what a loadable model saves must load again */
  tp_onnx_model *m = NULL;
  if (tp_onnx_model_load(data, size, &m) == TP_OK) {
    uint8_t *b = NULL;
    size_t n = 0;
    if (tp_onnx_model_set_trainable(m, 0, NULL) == TP_OK && tp_onnx_model_save(m, &b, &n) == TP_OK) {
      tp_onnx_model *m2 = NULL;
      if (tp_onnx_model_load(b, n, &m2) != TP_OK) __builtin_trap(); /* the saved model does not load */
      tp_onnx_model_free(m2);
    }
    tp_free_buffer(b);
    tp_onnx_model_free(m);
  }
  return 0;
}
