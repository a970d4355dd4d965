/* fuzz_npy.c - libFuzzer target for the .npy reader: any bytes must give a
 * tensor or an error status, never a crash, a leak or undefined behaviour;
 * a tensor that decodes must encode and decode again to the same dtype,
 * shape and bytes. Built and run by tests/fuzz/run.sh. */
#include "tensorplay.h"
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tp_tensor *t = NULL, *u = NULL;
  void *enc = NULL;
  size_t n = 0;
  if (tp_npy_decode(data, size, &t) != TP_OK) return 0;
  if (tp_npy_encode(t, &enc, &n) != TP_OK) {
    if (tp_last_status() != TP_ERR_OUT_OF_MEMORY) {
      fprintf(stderr, "encode failed on a decoded tensor: %s\n", tp_last_error());
      abort();
    }
    tp_tensor_release(t);
    return 0;
  }
  if (tp_npy_decode(enc, n, &u) != TP_OK) {
    fprintf(stderr, "the encoded tensor does not decode: %s\n", tp_last_error());
    abort();
  }
  int nd = tp_tensor_ndim(t);
  int same = tp_tensor_dtype(t) == tp_tensor_dtype(u) && nd == tp_tensor_ndim(u);
  if (same && nd) same = !memcmp(tp_tensor_shape(t), tp_tensor_shape(u), sizeof(int64_t) * (size_t)nd);
  size_t bytes = (size_t)tp_tensor_numel(t) * tp_dtype_size(tp_tensor_dtype(t));
  if (same && bytes) {
    void *x = malloc(bytes), *y = malloc(bytes);
    same = x && y && tp_tensor_read(t, x, bytes) == TP_OK && tp_tensor_read(u, y, bytes) == TP_OK &&
           !memcmp(x, y, bytes);
    free(x);
    free(y);
  }
  if (!same) {
    fprintf(stderr, "decode(encode(t)) differs from t\n");
    abort();
  }
  tp_free_buffer(enc);
  tp_tensor_release(t);
  tp_tensor_release(u);
  return 0;
}
