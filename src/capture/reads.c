/* reads.c - the public entry points that read a tensor's data or shape.
 * Inside a capture such a read is a graph break (data) or makes the graph
 * depend on a placeholder's shape (shape), so capture owns these functions:
 * each runs capture's check, then the core's plain reader. The core itself
 * never knows about traces. */
#include "capture.h"

tp_status tp_tensor_read(tp_tensor *t, void *dst, size_t bytes) {
  /* argument errors first, as the plain reader reports them */
  if (t && bytes == (size_t)tp_tensor_numel(t) * tp_dtype_size(t->dtype))
    TP_TRY(tp_capture_on_read(t, "toArray"));
  return tp_tensor_read_plain(t, dst, bytes);
}

tp_status tp_tensor_item(tp_tensor *t, double *out) {
  if (t && out && tp_tensor_numel(t) == 1) TP_TRY(tp_capture_on_read(t, "item"));
  return tp_tensor_item_plain(t, out);
}

const int64_t *tp_tensor_shape(const tp_tensor *t) {
  tp_capture_note_shape_read(t, NULL);
  return t->shape;
}
