/* index.c - operators that index by data: gather (numpy's take along a
 * dim) and gather_elements (torch.gather). The indices are runtime values:
 * each is checked against its dim (negative ones count from the end, as
 * in ONNX), and one outside [-n, n) is an error naming it and its position,
 * never a read outside the tensor. x is copied to contiguous form first,
 * then rows of `inner` bytes are copied per index. */
#include "../core/internal.h"

/* The indices as int64 in C order (a new buffer, tp_free), each checked and
 * made non-negative against n. */
static tp_status read_indices(const char *op, tp_tensor *ix, int64_t n, int64_t dim, int64_t **out) {
  int64_t k = tp_tensor_numel(ix);
  int64_t *v = tp_alloc(sizeof(int64_t) * (size_t)(k ? k : 1));
  if (!v) return TP_ERR_OUT_OF_MEMORY;
  if (ix->dtype == TP_I64) {
    tp_tensor_gather(ix, v);
  } else {
    int32_t *w = tp_alloc(sizeof(int32_t) * (size_t)(k ? k : 1));
    if (!w) {
      tp_free(v);
      return TP_ERR_OUT_OF_MEMORY;
    }
    tp_tensor_gather(ix, w);
    for (int64_t i = 0; i < k; i++) v[i] = w[i];
    tp_free(w);
  }
  for (int64_t i = 0; i < k; i++) {
    if (v[i] < -n || v[i] >= n) {
      long long bad = (long long)v[i]; /* read before v is freed */
      tp_free(v);
      return tp_fail(TP_ERR_INVALID_ARG, "%s: index %lld (at position %lld of the indices) is out of range for dim %lld of size %lld",
                     op, bad, (long long)i, (long long)dim, (long long)n);
    }
    if (v[i] < 0) v[i] += n;
  }
  *out = v;
  return TP_OK;
}

tp_status tp_gather_exec(tp_op op, tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, tp_tensor **out) {
  tp_tensor *x = NULL, *y = NULL;
  int64_t *idx = NULL, d;
  const char *name = tp_op_name(op);
  TP_TRY(tp_norm_dim(name, at->dim, in[0]->ndim, &d));
  tp_status s = read_indices(name, in[1], in[0]->shape[d], d, &idx);
  if (!s) s = tp_contiguous(in[0], &x);
  if (!s) s = tp_tensor_empty(od->dtype, od->ndim, od->shape, &y);
  if (s) goto done;
  size_t isz = tp_dtype_size(x->dtype);
  const char *xp = tp_tensor_ptr(x);
  char *yp = tp_tensor_ptr(y);
  if (op == TP_OP_GATHER) {
    int64_t outer = tp_shape_numel((int)d, x->shape), n = x->shape[d];
    int64_t inner = tp_shape_numel(x->ndim - (int)d - 1, x->shape + d + 1), k = tp_tensor_numel(in[1]);
    size_t row = (size_t)inner * isz;
    for (int64_t o = 0; o < outer; o++)
      for (int64_t j = 0; j < k; j++)
        memcpy(yp + (size_t)(o * k + j) * row, xp + (size_t)(o * n + idx[j]) * row, row);
  } else { /* gather_elements: walk the indices' multi-index in C order */
    int nd = y->ndim;
    int64_t xst[TP_MAX_DIMS], pos[TP_MAX_DIMS] = {0}, total = tp_tensor_numel(y);
    xst[nd - 1] = 1;
    for (int i = nd - 2; i >= 0; i--) xst[i] = xst[i + 1] * x->shape[i + 1];
    for (int64_t e = 0; e < total; e++) {
      int64_t off = 0;
      for (int i = 0; i < nd; i++) off += (i == d ? idx[e] : pos[i]) * xst[i];
      memcpy(yp + (size_t)e * isz, xp + (size_t)off * isz, isz);
      for (int i = nd - 1; i >= 0 && ++pos[i] == y->shape[i]; i--) pos[i] = 0;
    }
  }
done:
  tp_free(idx);
  tp_tensor_release(x);
  if (s) tp_tensor_release(y);
  else *out = y;
  return s;
}
