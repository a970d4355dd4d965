/* onnx.c - ONNX models and tensors through the ABI (docs/onnx.md), and
 * the graph facts the JS model wrapper reads. */
#include "handles.h"

uint32_t tpw_onnx_load(const void *bytes, int32_t len) {
  tp_graph *g = NULL;
  if (len < 0 || (len && !bytes)) {
    tp_fail(TP_ERR_INVALID_ARG, "onnx.load: bad byte buffer");
    return 0;
  }
  if (tp_onnx_load(bytes, (size_t)len, &g)) return 0;
  uint32_t h = abi_handle_new(ABI_GRAPH, g);
  if (!h) tp_graph_free(g);
  return h;
}
static int32_t onnx_save_copy(const tp_graph *g, intptr_t *out) {
  uint8_t *b = NULL;
  size_t n = 0;
  if (!out) return tp_fail(TP_ERR_INVALID_ARG, "onnx.save: NULL output");
  if (!g) return tp_fail(TP_ERR_INVALID_ARG, "onnx.save: no graph was captured (a graph break?)");
  TP_TRY(tp_onnx_save(g, &b, &n));
  tp_status s = abi_give_bytes(b, n, out);
  tp_free_buffer(b);
  return s;
}
int32_t tpw_graph_onnx_save(uint32_t h, intptr_t *out) {
  tp_graph *g = abi_handle_get(h, ABI_GRAPH);
  if (!g) return tp_last_status();
  return onnx_save_copy(g, out);
}
int32_t tpw_compiled_onnx_save(uint32_t h, intptr_t *out) {
  tp_compiled *c = abi_handle_get(h, ABI_COMPILED);
  if (!c) return tp_last_status();
  return onnx_save_copy(tp_compiled_last_graph(c), out);
}
uint32_t tpw_onnx_tensor_decode(const void *bytes, int32_t len) {
  tp_tensor *t = NULL;
  if (len < 0 || (len && !bytes)) {
    tp_fail(TP_ERR_INVALID_ARG, "onnx.decodeTensor: bad byte buffer");
    return 0;
  }
  if (tp_onnx_tensor_decode(bytes, (size_t)len, &t)) return 0;
  uint32_t h = abi_handle_new(ABI_TENSOR, t);
  if (!h) tp_tensor_release(t);
  return h;
}
int32_t tpw_graph_num_inputs(uint32_t h) {
  tp_graph *g = abi_handle_get(h, ABI_GRAPH);
  return g ? tp_graph_num_inputs(g) : -1;
}
const char *tpw_graph_input_name(uint32_t h, int32_t i) {
  tp_graph *g = abi_handle_get(h, ABI_GRAPH);
  if (!g) return NULL;
  if (i < 0 || i >= tp_graph_num_inputs(g)) {
    tp_fail(TP_ERR_INVALID_ARG, "graph input %d is out of range (0..%d)", i, tp_graph_num_inputs(g) - 1);
    return NULL;
  }
  return tp_graph_input_name(g, i); /* NULL when unnamed: not a failure */
}
const char *tpw_onnx_output_names(uint32_t h) {
  tp_graph *g = abi_handle_get(h, ABI_GRAPH);
  int o = g ? tp_graph_output(g) : -1;
  return o >= 0 ? tp_graph_get_custom(g, o, "onnx_outputs") : NULL;
}
