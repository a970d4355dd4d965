/* onnx_model.c - an ONNX model's specializations on a registered backend
 * (tp_onnx_model_use_backend). The model (src/onnx/model.c) knows only the
 * backend function; this file, above both, looks it up in the registry. */
#include "compiler.h"
#include "../onnx/onnx.h"
#include <stdio.h>

/* Inside a capture a model runs its graph node by node, so the trace
 * records the model's ops (a backend's runner would run them unseen). The
 * inputs' shapes are read (the graph is the one imported for them, so the
 * capture guards on them), and reading a value input of the trace (its
 * value picked the specialization) is a graph break, as any data read is. */
tp_status tp_onnx_model_run(tp_onnx_model *m, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                            int *nout) {
  if (!m || !in || nin < 0 || !tp_capture_active() || !tp_capture_sees(nin, in))
    return tp_onnx_model_run_ex(m, nin, in, 0, max_out, outs, nout);
  for (int k = 0; k < nin; k++)
    if (in[k]) (void)tp_tensor_shape(in[k]);
  TP_TRY(tp_onnx_model_run_ex(m, nin, in, 1, max_out, outs, nout));
  uint64_t vals = tp_onnx_model_value_inputs(m);
  for (int k = 0; k < nin && k < TP_ONNX_MAX_INPUTS; k++) {
    if (!(vals >> k & 1) || !tp_capture_sees(1, &in[k])) continue;
    char what[160];
    snprintf(what, sizeof what, "reading the value of ONNX input '%s' (it sets a shape)",
             tp_onnx_model_input_name(m, k));
    tp_status s = tp_capture_on_read(in[k], what);
    if (s) {
      for (int i = 0; i < *nout; i++) tp_tensor_release(outs[i]);
      *nout = 0;
      return s;
    }
  }
  return TP_OK;
}

tp_status tp_onnx_model_set_option(tp_onnx_model *m, const char *key, tp_value value) {
  if (!m || !key) return tp_fail(TP_ERR_INVALID_ARG, "onnx model: set option: NULL argument");
  char keys[1][48];
  if (strlen(key) >= sizeof keys[0]) return tp_fail(TP_ERR_INVALID_ARG, "onnx model: unknown option '%.60s...'", key);
  snprintf(keys[0], sizeof keys[0], "%s", key);
  TP_TRY(tp_check_mode_options(1, (const char(*)[48])keys, &value));
  return tp_onnx_model_set_backend_option(m, key, value);
}

tp_status tp_onnx_model_use_backend(tp_onnx_model *m, const char *name) {
  if (!m) return tp_fail(TP_ERR_INVALID_ARG, "onnx model: NULL model");
  if (!name) name = tp_get_default_backend();
  const tp_backend *b;
  TP_TRY(tp_lookup_backend(name, &b));
  tp_onnx_model_set_backend(m, b->name, b->fn, b->ud);
  return TP_OK;
}
