/* onnx.h - ONNX import: ModelProto -> Graph IR, TensorProto <-> tensors.
 * The public entry points are declared in tensorplay.h (ONNX section);
 * docs/onnx.md lists the supported ops and attributes. */
#ifndef TP_ONNX_H
#define TP_ONNX_H
#include "../graph/graph.h"

/* The smallest default-domain opset the importer accepts. */
#define TP_ONNX_MIN_OPSET 7

/* ONNX TensorProto.DataType values used here. */
enum {
  TP_ONNX_FLOAT = 1, TP_ONNX_UINT8 = 2, TP_ONNX_INT8 = 3, TP_ONNX_UINT16 = 4,
  TP_ONNX_INT16 = 5, TP_ONNX_INT32 = 6, TP_ONNX_INT64 = 7, TP_ONNX_STRING = 8,
  TP_ONNX_BOOL = 9, TP_ONNX_FLOAT16 = 10, TP_ONNX_DOUBLE = 11, TP_ONNX_UINT32 = 12,
  TP_ONNX_UINT64 = 13, TP_ONNX_BFLOAT16 = 16
};
const char *tp_onnx_dtype_name(int onnx_type);

/* The most runtime inputs a model may have: the bits of the need and value
 * input masks (uint64_t). */
#define TP_ONNX_MAX_INPUTS 64
/* the element types tensors may have (error messages) */
#define TP_ONNX_DTYPES "float32, int32, int64, bool, float16, bfloat16, int8, uint8"

/* tp_onnx_model_run (tensorplay.h) below the frontend: graph_only runs the
 * specialization's graph node by node (tp_graph_run) even when a backend
 * compiled it, so that a capture records its nodes; the public function
 * (src/compiler/onnx_model.c) decides. */
tp_status tp_onnx_model_run_ex(tp_onnx_model *m, int nin, tp_tensor *const *in, int graph_only, int max_out,
                               tp_tensor **outs, int *nout);
/* tp_onnx_load_file as a backend's import (tp_onnx_import_ex): float16
 * MatMul weights stay float16 behind a cast (tpc bench --backend=stax). */
tp_status tp_onnx_load_file_for_backend(const char *path, tp_graph **out);
/* The runtime inputs (bits by position, TP_ONNX_MAX_INPUTS of them) that are value inputs so far. */
uint64_t tp_onnx_model_value_inputs(const tp_onnx_model *m);
/* The graph name an ONNX value name gets (placeholders, outputs): [A-Za-z0-9_.]
 * kept, anything else '_', "" -> "x"; at most n - 1 bytes. */
void tp_onnx_sanitize_name(const char *in, char *out, size_t n);
/* Stores a backend option for the specializations (not checked here:
 * tp_onnx_model_set_option, in the compiler layer, checks the key). */
tp_status tp_onnx_model_set_backend_option(tp_onnx_model *m, const char *key, tp_value value);

#endif
