/* onnx_model.c - an ONNX model's specializations on a registered backend
 * (tp_onnx_model_use_backend). The model (src/onnx/model.c) knows only the
 * backend function; this file, above both, looks it up in the registry. */
#include "compiler.h"

tp_status tp_onnx_model_use_backend(tp_onnx_model *m, const char *name) {
  if (!m) return tp_fail(TP_ERR_INVALID_ARG, "onnx model: NULL model");
  if (!name) name = tp_get_default_backend();
  const tp_backend *b;
  TP_TRY(tp_lookup_backend(name, &b));
  tp_onnx_model_set_backend(m, b->name, b->fn, b->ud);
  return TP_OK;
}
