/* onnx.c - ONNX models and tensors through the ABI (docs/onnx.md). */
#include "handles.h"

static int32_t onnx_save_copy(const tp_graph *g, intptr_t *out) {
  uint8_t *b = NULL;
  size_t n = 0;
  if (!out) return tp_fail(TP_ERR_INVALID_ARG, "onnx.save: NULL output");
  if (!g) return tp_fail(TP_ERR_INVALID_ARG, "onnx.save: no graph was captured (a graph break?)");
  tp_status s = tp_onnx_save(g, &b, &n); /* before reading b and n */
  return abi_give_library_bytes(s, b, n, out);
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
/* ---- models (tp_onnx_model: symbolic dims, inputs that set shapes) ---- */
uint32_t tpw_onnx_model_load(const void *bytes, int32_t len, const char *backend) {
  tp_onnx_model *m = NULL;
  if (len < 0 || (len && !bytes)) {
    tp_fail(TP_ERR_INVALID_ARG, "onnx.load: bad byte buffer");
    return 0;
  }
  if (tp_onnx_model_load(bytes, (size_t)len, &m)) return 0;
  if ((backend && *backend && tp_onnx_model_use_backend(m, backend)) || tp_onnx_model_prepare(m)) {
    tp_onnx_model_free(m);
    return 0;
  }
  uint32_t h = abi_handle_new(ABI_MODEL, m);
  if (!h) tp_onnx_model_free(m);
  return h;
}
int32_t tpw_onnx_model_set_option(uint32_t h, const char *key, int32_t kind, double value) {
  tp_onnx_model *m = abi_handle_get(h, ABI_MODEL);
  if (!m) return tp_last_status();
  tp_value v;
  if (kind == 0) v = tp_value_bool(value != 0);
  else if (kind == 1 && value >= -9007199254740992.0 && value <= 9007199254740992.0 && value == (double)(int64_t)value)
    v = tp_value_int((int64_t)value);
  else if (kind == 2) {
    v = tp_value_none();
    v.kind = TP_VAL_FLOAT;
    v.f = value;
  }
  else return tp_fail(TP_ERR_INVALID_ARG, "onnx model: option '%s': bad value kind %d", key ? key : "", (int)kind);
  return tp_onnx_model_set_option(m, key, v);
}
int32_t tpw_onnx_model_use_backend(uint32_t h, const char *name) {
  tp_onnx_model *m = abi_handle_get(h, ABI_MODEL);
  if (!m) return tp_last_status();
  TP_TRY(tp_onnx_model_use_backend(m, name && *name ? name : NULL));
  return tp_onnx_model_prepare(m);
}
int32_t tpw_onnx_model_free(uint32_t h) {
  tp_onnx_model *m = abi_handle_get(h, ABI_MODEL);
  if (!m) return tp_last_status();
  abi_handle_drop(h);
  tp_onnx_model_free(m);
  return TP_OK;
}
int32_t tpw_onnx_model_run(uint32_t h, int32_t nin, const uint32_t *in, uint32_t *outs, int32_t max_out) {
  tp_onnx_model *m = abi_handle_get(h, ABI_MODEL);
  tp_tensor *ts[TP_MAX_OPERANDS], *os[TP_MAX_OPERANDS];
  int n = 0;
  if (!m || abi_gather_inputs(nin, in, ts)) return -1;
  tp_status s = tp_onnx_model_run(m, nin, ts, max_out < TP_MAX_OPERANDS ? max_out : TP_MAX_OPERANDS, os, &n);
  return abi_return_tensors(s, n, os, outs, max_out);
}
int32_t tpw_onnx_model_set_trainable(uint32_t h, int32_t n, const char *names) {
  tp_onnx_model *m = abi_handle_get(h, ABI_MODEL);
  if (!m) return tp_last_status();
  if (n < 0 || n > 1 << 20 || (n && !names)) return tp_fail(TP_ERR_INVALID_ARG, "model.setTrainable: bad name list");
  const char **list = n ? tp_alloc(sizeof(char *) * (size_t)n) : NULL;
  if (n && !list) return TP_ERR_OUT_OF_MEMORY;
  for (int i = 0; i < n; i++, names += strlen(names) + 1) list[i] = names;
  tp_status s = tp_onnx_model_set_trainable(m, n, list);
  tp_free(list);
  return s;
}
int32_t tpw_onnx_model_num_params(uint32_t h) {
  tp_onnx_model *m = abi_handle_get(h, ABI_MODEL);
  return m ? tp_onnx_model_num_params(m) : -1;
}
char *tpw_onnx_model_param_name(uint32_t h, int32_t i) {
  tp_onnx_model *m = abi_handle_get(h, ABI_MODEL);
  if (!m) return NULL;
  const char *nm = tp_onnx_model_param_name(m, i);
  if (!nm) {
    tp_fail(TP_ERR_INVALID_ARG, "model: no parameter %d (the model has %d)", (int)i, tp_onnx_model_num_params(m));
    return NULL;
  }
  char *c = tp_strdup(nm);
  if (!c) return NULL;
  return abi_give_string(c);
}
uint32_t tpw_onnx_model_param(uint32_t h, int32_t i) {
  tp_onnx_model *m = abi_handle_get(h, ABI_MODEL);
  if (!m) return 0;
  tp_tensor *t = tp_onnx_model_param(m, i);
  if (!t) {
    tp_fail(TP_ERR_INVALID_ARG, "model: no parameter %d (the model has %d)", (int)i, tp_onnx_model_num_params(m));
    return 0;
  }
  tp_tensor_retain(t);
  return abi_wrap_tensor(TP_OK, &t);
}
int32_t tpw_onnx_model_save(uint32_t h, intptr_t *out) {
  tp_onnx_model *m = abi_handle_get(h, ABI_MODEL);
  if (!m) return tp_last_status();
  if (!out) return tp_fail(TP_ERR_INVALID_ARG, "model.save: NULL output");
  uint8_t *b = NULL;
  size_t n = 0;
  tp_status s = tp_onnx_model_save(m, &b, &n); /* before reading b and n */
  return abi_give_library_bytes(s, b, n, out);
}
static void json_str(tp_buf *b, const char *s) {
  tp_buf_putc(b, '"');
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') tp_buf_printf(b, "\\%c", c);
    else if (c < 0x20) tp_buf_printf(b, "\\u%04x", c);
    else tp_buf_putc(b, c);
  }
  tp_buf_putc(b, '"');
}
/* {"inputs":[{"name","dtype","dims":[3,null],"dimNames":[null,"batch"]}],
 *  "outputs":["y"]} (dims null: unknown rank) for tpw_free. */
char *tpw_onnx_model_info(uint32_t h) {
  tp_onnx_model *m = abi_handle_get(h, ABI_MODEL);
  if (!m) return NULL;
  tp_buf b = {0};
  tp_buf_puts(&b, "{\"inputs\":[");
  for (int i = 0; i < tp_onnx_model_num_inputs(m); i++) {
    int64_t dims[TP_MAX_DIMS];
    const char *names[TP_MAX_DIMS];
    tp_dtype dt;
    int nd = tp_onnx_model_input_type(m, i, &dt, dims, names);
    tp_buf_puts(&b, i ? ",{\"name\":" : "{\"name\":");
    json_str(&b, tp_onnx_model_input_name(m, i));
    tp_buf_puts(&b, ",\"dtype\":");
    json_str(&b, (int)dt >= 0 ? tp_dtype_name(dt) : "unsupported");
    if (nd < 0) {
      tp_buf_puts(&b, ",\"dims\":null,\"dimNames\":null}");
      continue;
    }
    tp_buf_puts(&b, ",\"dims\":[");
    for (int k = 0; k < nd; k++) {
      if (dims[k] >= 0) tp_buf_printf(&b, k ? ",%lld" : "%lld", (long long)dims[k]);
      else tp_buf_puts(&b, k ? ",null" : "null");
    }
    tp_buf_puts(&b, "],\"dimNames\":[");
    for (int k = 0; k < nd; k++) {
      if (k) tp_buf_putc(&b, ',');
      if (names[k]) json_str(&b, names[k]);
      else tp_buf_puts(&b, "null");
    }
    tp_buf_puts(&b, "]}");
  }
  tp_buf_puts(&b, "],\"outputs\":[");
  for (int i = 0; i < tp_onnx_model_num_outputs(m); i++) {
    if (i) tp_buf_putc(&b, ',');
    json_str(&b, tp_onnx_model_output_name(m, i));
  }
  tp_buf_puts(&b, "]}");
  return abi_give_string(tp_buf_take(&b));
}
char *tpw_onnx_model_explain(uint32_t h) {
  tp_onnx_model *m = abi_handle_get(h, ABI_MODEL);
  char *text = NULL;
  if (!m || tp_onnx_model_explain(m, &text)) return NULL;
  return abi_give_string(text);
}
/* A graph handle with a copy of the most recent specialization's graph; 0
 * with INVALID_ARG before the first run. */
uint32_t tpw_onnx_model_graph(uint32_t h) {
  tp_onnx_model *m = abi_handle_get(h, ABI_MODEL);
  if (!m) return 0;
  const tp_graph *g = tp_onnx_model_graph(m);
  tp_graph *c = NULL;
  if (!g) {
    tp_fail(TP_ERR_INVALID_ARG, "onnx model: no graph yet (the model is imported for the shapes of its first run)");
    return 0;
  }
  if (tp_graph_copy(g, &c)) return 0;
  uint32_t gh = abi_handle_new(ABI_GRAPH, c);
  if (!gh) tp_graph_free(c);
  return gh;
}
int32_t tpw_onnx_model_set_limit(uint32_t h, int32_t limit) {
  tp_onnx_model *m = abi_handle_get(h, ABI_MODEL);
  return m ? tp_onnx_model_set_limit(m, limit) : tp_last_status();
}
int32_t tpw_onnx_model_num_specializations(uint32_t h) {
  tp_onnx_model *m = abi_handle_get(h, ABI_MODEL);
  return m ? tp_onnx_model_num_specializations(m) : -1;
}
