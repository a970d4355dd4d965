/* index.c - operators that index by data: gather (numpy's take along a
 * dim), gather_elements (torch.gather), scatter_elements and scatter_nd
 * (ONNX's, with their reductions). The indices are runtime values:
 * each is checked against its dim (negative ones count from the end, as
 * in ONNX), and one outside [-n, n) is an error naming it and its position,
 * never a read outside the tensor. x is copied to contiguous form first,
 * then rows of `inner` bytes are copied per index. */
#include "ops.h"

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
  return tp_gather_into(op, in, at, od, NULL, out);
}

/* into: a contiguous tensor of od's dtype and shape to write (then *out is
 * NULL), or NULL for a new one */
tp_status tp_gather_into(tp_op op, tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, tp_tensor *into,
                         tp_tensor **out) {
  tp_tensor *x = NULL, *y = into;
  int64_t *idx = NULL, d;
  const char *name = tp_op_name(op);
  *out = NULL;
  TP_TRY(tp_norm_dim(name, at->dim, in[0]->ndim, &d));
  tp_status s = read_indices(name, in[1], in[0]->shape[d], d, &idx);
  if (!s) s = tp_contiguous(in[0], &x);
  if (!s && !into) s = tp_tensor_empty(od->dtype, od->ndim, od->shape, &y);
  if (s) goto done;
  size_t isz = tp_dtype_size(x->dtype);
  const char *xp = tp_tensor_ptr(x);
  char *yp = tp_tensor_ptr(y);
  if (op == TP_OP_GATHER) {
    int64_t outer = tp_shape_numel((int)d, x->shape), n = x->shape[d];
    int64_t inner = tp_shape_numel(x->ndim - (int)d - 1, x->shape + d + 1), k = tp_tensor_numel(in[1]);
    size_t row = (size_t)inner * isz;
    /* along the last dim (one element per index: a bilinear Resize's column
     * taps) by element type, not a memcpy call per element */
#define TP_GATHER_LAST(T)                                                   \
  for (int64_t o = 0; o < outer; o++) {                                     \
    const T *xr = (const T *)xp + o * n;                                    \
    T *yr = (T *)yp + o * k;                                                \
    for (int64_t j = 0; j < k; j++) yr[j] = xr[idx[j]];                     \
  }
    if (inner == 1 && isz == 4) TP_GATHER_LAST(uint32_t)
    else if (inner == 1 && isz == 8) TP_GATHER_LAST(uint64_t)
    else if (inner == 1 && isz == 2) TP_GATHER_LAST(uint16_t)
    else if (inner == 1 && isz == 1) TP_GATHER_LAST(uint8_t)
    else
      for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < k; j++)
          memcpy(yp + (size_t)(o * k + j) * row, xp + (size_t)(o * n + idx[j]) * row, row);
#undef TP_GATHER_LAST
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
  if (y != into) {
    if (s) tp_tensor_release(y);
    else *out = y;
  }
  return s;
}

/* ---- scatter_elements, scatter_nd ---- */

/* y[o] = u (reduction 0) or y[o] op= u, in y's dtype (element size es). */
static void put_one(tp_dtype dt, int red, char *y, const char *u) {
#define REDUCE(T)                                                            \
  {                                                                          \
    T *p = (T *)y, v = *(const T *)u;                                        \
    *p = red == 1 ? *p + v : red == 2 ? *p * v : red == 3 ? (*p > v ? *p : v) \
                                                           : (*p < v ? *p : v); \
  }
  if (!red) {
    memcpy(y, u, tp_dtype_size(dt));
    return;
  }
  switch (dt) {
    case TP_F32: REDUCE(float) break;
    case TP_I32: REDUCE(int32_t) break;
    case TP_I64: REDUCE(int64_t) break;
    default: break; /* bool: refused by the shape rule */
  }
#undef REDUCE
}

tp_status tp_scatter_exec(tp_op op, tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, tp_tensor **out) {
  tp_tensor *x = in[0], *ix = in[1], *u = NULL, *y = NULL;
  int64_t *idx = NULL;
  const char *name = tp_op_name(op);
  tp_status s = tp_contiguous(in[2], &u);
  if (!s) s = tp_tensor_empty(od->dtype, od->ndim, od->shape, &y);
  if (s) goto done;
  tp_tensor_copy_into(x, y);
  size_t es = tp_dtype_size(y->dtype);
  char *yp = tp_tensor_ptr(y);
  const char *up = tp_tensor_ptr(u);
  int64_t ys[TP_MAX_DIMS];
  ys[y->ndim - 1] = 1;
  for (int i = y->ndim - 2; i >= 0; i--) ys[i] = ys[i + 1] * y->shape[i + 1];
  if (op == TP_OP_SCATTER_ELEMENTS) {
    int64_t d;
    if ((s = tp_norm_dim(name, at->dim, y->ndim, &d)) || (s = read_indices(name, ix, y->shape[d], d, &idx))) goto done;
    int64_t pos[TP_MAX_DIMS] = {0}, total = tp_tensor_numel(u);
    for (int64_t e = 0; e < total; e++) {
      int64_t off = 0;
      for (int i = 0; i < u->ndim; i++) off += (i == d ? idx[e] : pos[i]) * ys[i];
      put_one(y->dtype, at->reduction, yp + (size_t)off * es, up + (size_t)e * es);
      for (int i = u->ndim - 1; i >= 0 && ++pos[i] == u->shape[i]; i--) pos[i] = 0;
    }
  } else { /* scatter_nd: indices [..., k], each tuple addresses a slice of x.shape[k:] */
    int64_t k = ix->shape[ix->ndim - 1], nt = tp_tensor_numel(ix) / k;
    int64_t slice = tp_shape_numel(y->ndim - (int)k, y->shape + k);
    int64_t nraw = nt * k;
    int64_t *raw = tp_alloc(sizeof(int64_t) * (size_t)(nraw ? nraw : 1));
    if (!raw) {
      s = TP_ERR_OUT_OF_MEMORY;
      goto done;
    }
    if (ix->dtype == TP_I64) tp_tensor_gather(ix, raw);
    else
      for (int64_t i = 0; i < nt * k; i++) raw[i] = (int64_t)tp_tensor_get_f64(ix, i);
    for (int64_t j = 0; j < nt && !s; j++) {
      int64_t off = 0;
      for (int64_t c = 0; c < k; c++) {
        int64_t v = raw[j * k + c], n = y->shape[c];
        if (v < -n || v >= n) {
          s = tp_fail(TP_ERR_INVALID_ARG, "%s: index %lld (tuple %lld, component %lld) is out of range for dim %lld of size %lld",
                      name, (long long)v, (long long)j, (long long)c, (long long)c, (long long)n);
          break;
        }
        off += (v < 0 ? v + n : v) * ys[c];
      }
      for (int64_t e = 0; !s && e < slice; e++)
        put_one(y->dtype, at->reduction, yp + (size_t)(off + e) * es, up + (size_t)(j * slice + e) * es);
    }
    tp_free(raw);
  }
done:
  tp_free(idx);
  tp_tensor_release(u);
  if (s) tp_tensor_release(y);
  else *out = y;
  return s;
}

/* ---- gather_nd ---- */
tp_status tp_gather_nd_exec(tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, tp_tensor **out) {
  tp_tensor *x = NULL, *ix = in[1], *y = NULL;
  int64_t *raw = NULL;
  tp_status s = tp_contiguous(in[0], &x);
  if (!s) s = tp_tensor_empty(od->dtype, od->ndim, od->shape, &y);
  if (s) goto done;
  int64_t b = at->dim, k = ix->shape[ix->ndim - 1], nidx = tp_tensor_numel(ix);
  int64_t nb = tp_shape_numel((int)b, x->shape);            /* batch count */
  int64_t per = nb ? nidx / k / nb : 0;                       /* tuples per batch */
  int64_t slice = tp_shape_numel(x->ndim - (int)(b + k), x->shape + b + k);
  int64_t bstride = tp_shape_numel(x->ndim - (int)b, x->shape + b);
  size_t es = tp_dtype_size(x->dtype);
  if (!(raw = tp_alloc(sizeof(int64_t) * (size_t)(nidx ? nidx : 1)))) {
    s = TP_ERR_OUT_OF_MEMORY;
    goto done;
  }
  if (ix->dtype == TP_I64) tp_tensor_gather(ix, raw);
  else
    for (int64_t i = 0; i < nidx; i++) raw[i] = (int64_t)tp_tensor_get_f64(ix, i);
  const char *xp = tp_tensor_ptr(x);
  char *yp = tp_tensor_ptr(y);
  for (int64_t bi = 0; bi < nb && !s; bi++)
    for (int64_t t = 0; t < per && !s; t++) {
      int64_t j = bi * per + t, off = 0;
      for (int64_t c = 0; c < k; c++) {
        int64_t v = raw[j * k + c], n = x->shape[b + c];
        if (v < -n || v >= n) {
          s = tp_fail(TP_ERR_INVALID_ARG, "gather_nd: index %lld (tuple %lld, component %lld) is out of range for dim %lld of size %lld",
                      (long long)v, (long long)j, (long long)c, (long long)(b + c), (long long)n);
          break;
        }
        off = off * n + (v < 0 ? v + n : v);
      }
      if (!s) memcpy(yp + (size_t)(j * slice) * es, xp + (size_t)(bi * bstride + off * slice) * es, (size_t)slice * es);
    }
done:
  tp_free(raw);
  tp_tensor_release(x);
  if (s) tp_tensor_release(y);
  else *out = y;
  return s;
}

/* ---- argtopk ---- */
typedef struct topk_item { double v; int64_t i; } topk_item;
static int topk_before(const topk_item *a, const topk_item *b, int largest) {
  /* NaN ranks above every number; equal values keep the lower index first */
  int an = a->v != a->v, bn = b->v != b->v;
  if (an != bn) return largest ? an : bn;
  if (!an && a->v != b->v) return largest ? a->v > b->v : a->v < b->v;
  return a->i < b->i;
}

tp_status tp_argtopk_exec(tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, tp_tensor **out) {
  tp_tensor *x = NULL, *y = NULL;
  topk_item *row = NULL;
  int64_t d;
  tp_status s = tp_norm_dim("argtopk", at->dim, in[0]->ndim, &d);
  if (!s) s = tp_contiguous(in[0], &x);
  if (!s) s = tp_tensor_empty(TP_I64, od->ndim, od->shape, &y);
  if (s) goto done;
  int64_t n = x->shape[d], k = at->k, outer = tp_shape_numel((int)d, x->shape);
  int64_t inner = tp_shape_numel(x->ndim - (int)d - 1, x->shape + d + 1);
  if (!(row = tp_alloc(sizeof(topk_item) * (size_t)(n ? n : 1)))) {
    s = TP_ERR_OUT_OF_MEMORY;
    goto done;
  }
  int64_t *yp = tp_tensor_ptr(y);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t q = 0; q < inner; q++) {
      for (int64_t j = 0; j < n; j++) {
        int64_t e = (o * n + j) * inner + q;
        row[j].i = j;
        row[j].v = x->dtype == TP_F32 ? ((const float *)tp_tensor_ptr(x))[e]
                 : x->dtype == TP_I32 ? ((const int32_t *)tp_tensor_ptr(x))[e]
                                      : (double)((const int64_t *)tp_tensor_ptr(x))[e];
      }
      for (int64_t r = 0; r < k; r++) { /* selection of the next best: k passes */
        int64_t best = r;
        for (int64_t j = r + 1; j < n; j++)
          if (topk_before(&row[j], &row[best], at->largest)) best = j;
        topk_item t = row[r];
        row[r] = row[best];
        row[best] = t;
        yp[(o * k + r) * inner + q] = row[r].i;
      }
    }
done:
  tp_free(row);
  tp_tensor_release(x);
  if (s) tp_tensor_release(y);
  else *out = y;
  return s;
}
