/* tensor_pb.h - TensorProto reading shared by the model importer. */
#ifndef TP_ONNX_TENSOR_PB_H
#define TP_ONNX_TENSOR_PB_H
#include "pb.h"
/* r is a reader over one TensorProto; what names it in errors
 * ("initializer"). *name_out (may be NULL) receives the name (tp_free). */
tp_status tp_onnx_tensor_read(tp_pb *r, const char *what, tp_tensor **out, char **name_out);
int tp_onnx_to_dtype(int64_t onnx_type, tp_dtype *out);
int tp_onnx_from_dtype(tp_dtype d);
/* Whole file, NUL-terminated (the NUL is not counted in *len); tp_free it. */
tp_status tp_onnx_read_file(const char *path, uint8_t **out, size_t *len);
/* bytes -> path (created or truncated); TP_ERR_IO naming the path. */
tp_status tp_onnx_write_file(const char *path, const void *bytes, size_t n);
#endif
