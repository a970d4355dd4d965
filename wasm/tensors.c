/* tensors.c - tensors through the ABI: creation, queries, reads, and
 * .npy bytes in and out. */
#include "handles.h"

/* Shapes cross the ABI as int64[ndim] (dims up to the core's 2^40 pass
 * exactly); the core checks each dim (tensor.c check_shape). */
static tp_status shape_ok(int32_t ndim, const int64_t *shape) {
  if (ndim < 0 || ndim > TP_MAX_DIMS)
    return tp_fail(TP_ERR_INVALID_ARG, "tensor: %d dims is out of range (0..%d)", ndim, TP_MAX_DIMS);
  if (ndim && !shape) return tp_fail(TP_ERR_INVALID_ARG, "tensor: NULL shape");
  return TP_OK;
}

uint32_t tpw_tensor_new(int32_t dtype, int32_t ndim, const int64_t *shape, const void *data) {
  tp_tensor *t = NULL;
  if (shape_ok(ndim, shape)) return 0;
  return abi_wrap_tensor(tp_tensor_new((tp_dtype)dtype, ndim, shape, data, &t), &t);
}

uint32_t tpw_full(int32_t dtype, int32_t ndim, const int64_t *shape, double value) {
  tp_tensor *t = NULL;
  if (shape_ok(ndim, shape)) return 0;
  if ((unsigned)dtype >= TP_DTYPE_COUNT) {
    tp_fail(TP_ERR_INVALID_ARG, "full: unknown dtype %d", dtype);
    return 0;
  }
  return abi_wrap_tensor(tp_full((tp_dtype)dtype, ndim, shape, value, &t), &t);
}

uint32_t tpw_scalar(double value, int32_t is_int) {
  tp_tensor *t = NULL;
  return abi_wrap_tensor(tp_scalar(value, is_int, &t), &t);
}

uint32_t tpw_arange(double start, double end, double step, int32_t dtype) {
  tp_tensor *t = NULL;
  if ((unsigned)dtype >= TP_DTYPE_COUNT) {
    tp_fail(TP_ERR_INVALID_ARG, "arange: unknown dtype %d", dtype);
    return 0;
  }
  return abi_wrap_tensor(tp_arange(start, end, step, (tp_dtype)dtype, &t), &t);
}

uint32_t tpw_random(int32_t kind, int32_t ndim, const int64_t *shape, uint32_t lo, uint32_t hi) {
  tp_tensor *t = NULL;
  if (shape_ok(ndim, shape)) return 0;
  uint64_t seed = (uint64_t)lo | ((uint64_t)hi << 32);
  return abi_wrap_tensor(kind ? tp_rand(ndim, shape, seed, &t) : tp_randn(ndim, shape, seed, &t), &t);
}

int32_t tpw_tensor_free(uint32_t h) {
  tp_tensor *t = abi_handle_get(h, ABI_TENSOR);
  if (!t) return tp_last_status();
  abi_handle_drop(h);
  tp_tensor_release(t);
  return TP_OK;
}

int32_t tpw_tensor_ndim(uint32_t h) {
  tp_tensor *t = abi_handle_get(h, ABI_TENSOR);
  return t ? t->ndim : -1;
}
int32_t tpw_tensor_dtype(uint32_t h) {
  tp_tensor *t = abi_handle_get(h, ABI_TENSOR);
  return t ? (int32_t)t->dtype : -1;
}
int32_t tpw_tensor_shape(uint32_t h, int64_t *out) {
  tp_tensor *t = abi_handle_get(h, ABI_TENSOR);
  if (!t) return tp_last_status();
  for (int i = 0; i < t->ndim; i++) out[i] = t->shape[i];
  return TP_OK;
}
double tpw_tensor_numel(uint32_t h) {
  tp_tensor *t = abi_handle_get(h, ABI_TENSOR);
  return t ? (double)tp_tensor_numel(t) : -1;
}
int32_t tpw_tensor_read(uint32_t h, void *dst, int32_t bytes) {
  tp_tensor *t = abi_handle_get(h, ABI_TENSOR);
  if (!t) return tp_last_status();
  if (bytes < 0) return tp_fail(TP_ERR_INVALID_ARG, "read: negative size");
  return tp_tensor_read(t, dst, (size_t)bytes);
}
int32_t tpw_tensor_item(uint32_t h, double *out) {
  tp_tensor *t = abi_handle_get(h, ABI_TENSOR);
  if (!t) return tp_last_status();
  return tp_tensor_item(t, out);
}
uint32_t tpw_tensor_data_ptr(uint32_t h) {
  tp_tensor *t = abi_handle_get(h, ABI_TENSOR);
  if (!t || !t->storage || !tp_tensor_numel(t) || !tp_tensor_is_contiguous(t)) return 0;
  return (uint32_t)(uintptr_t)tp_tensor_ptr(t); /* an address of this memory (wasm32) */
}
uint32_t tpw_tensor_dup(uint32_t h) {
  tp_tensor *t = abi_handle_get(h, ABI_TENSOR);
  if (!t) return 0;
  tp_tensor_retain(t);
  return abi_wrap_tensor(TP_OK, &t);
}

uint32_t tpw_npy_decode(const void *bytes, int32_t len) {
  tp_tensor *t = NULL;
  if (len < 0 || (len && !bytes)) {
    tp_fail(TP_ERR_INVALID_ARG, "npy: bad byte buffer");
    return 0;
  }
  return abi_wrap_tensor(tp_npy_decode(bytes, (size_t)len, &t), &t);
}
int32_t tpw_npy_encode(uint32_t h, intptr_t *out) {
  tp_tensor *t = abi_handle_get(h, ABI_TENSOR);
  if (!t) return tp_last_status();
  void *buf = NULL;
  size_t n = 0;
  tp_status s = tp_npy_encode(t, &buf, &n); /* before reading buf and n */
  return abi_give_library_bytes(s, buf, n, out);
}
