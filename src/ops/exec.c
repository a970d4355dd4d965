/* exec.c - eager execution of every operator: float32 paths call the ISA
 * kernels (src/runtime/kernels), other dtypes run typed scalar loops, views
 * share storage. Inputs were validated by the shape rule. */
#include "ops.h"
#include "../runtime/pool.h"
#include <math.h>

tp_status tp_to_dtype(tp_tensor *src, tp_dtype d, tp_tensor **out) {
  if (src->dtype == d) {
    tp_tensor_retain(src);
    *out = src;
    return TP_OK;
  }
  tp_tensor *t;
  TP_TRY(tp_tensor_empty(d, src->ndim, src->shape, &t));
  tp_tensor_copy_into(src, t);
  *out = t;
  return TP_OK;
}

static tp_status new_out(const tp_desc *od, tp_tensor **out) {
  return tp_tensor_empty(od->dtype, od->ndim, od->shape, out);
}

/* ---- elementwise binary ---- */
static int kbin(tp_op op) {
  switch (op) {
    case TP_OP_ADD: return TP_KBIN_ADD;
    case TP_OP_SUB: return TP_KBIN_SUB;
    case TP_OP_MUL: return TP_KBIN_MUL;
    default: return TP_KBIN_DIV;
  }
}

static void binary_f32(tp_op op, tp_tensor *y, tp_tensor *a, tp_tensor *b) {
  const tp_kernels *k = tp_kern();
  tp_tensor *in[2] = {a, b};
  tp_iter it;
  tp_iter_init(&it, y, 2, in);
  float *Y = y->storage->data;
  const float *A = a->storage->data, *B = b->storage->data;
  int kop = kbin(op);
  int64_t sy = it.st[0][it.nd - 1], sa = it.st[1][it.nd - 1], sb = it.st[2][it.nd - 1];
  for (int64_t r = 0; r < it.outer; r++, tp_iter_next(&it)) {
    float *py = Y + it.off[0];
    const float *pa = A + it.off[1], *pb = B + it.off[2];
    if (sy == 1 && sa == 1 && sb == 1) k->binary_f32(kop, TP_KBMODE_VV, pa, pb, py, it.inner);
    else if (sy == 1 && sa == 0 && sb == 1) k->binary_f32(kop, TP_KBMODE_SV, pa, pb, py, it.inner);
    else if (sy == 1 && sa == 1 && sb == 0) k->binary_f32(kop, TP_KBMODE_VS, pa, pb, py, it.inner);
    else
      for (int64_t i = 0; i < it.inner; i++) {
        float x = pa[i * sa], z = pb[i * sb], v;
        switch (kop) {
          case TP_KBIN_ADD: v = x + z; break;
          case TP_KBIN_SUB: v = x - z; break;
          case TP_KBIN_MUL: v = x * z; break;
          default: v = x / z; break;
        }
        py[i * sy] = v;
      }
  }
}

/* Integer arithmetic wraps (two's complement), as in numpy and torch. */
#define INT_BINARY(T, UT)                                                              \
  static void binary_##T(tp_op op, tp_tensor *y, tp_tensor *a, tp_tensor *b) {         \
    tp_tensor *in[2] = {a, b};                                                         \
    tp_iter it;                                                                        \
    tp_iter_init(&it, y, 2, in);                                                       \
    T *Y = y->storage->data;                                                           \
    const T *A = a->storage->data, *B = b->storage->data;                              \
    int n = it.nd - 1;                                                                 \
    for (int64_t r = 0; r < it.outer; r++, tp_iter_next(&it))                          \
      for (int64_t i = 0; i < it.inner; i++) {                                         \
        UT x = (UT)A[it.off[1] + i * it.st[1][n]], z = (UT)B[it.off[2] + i * it.st[2][n]]; \
        UT v = op == TP_OP_ADD ? x + z : op == TP_OP_SUB ? x - z : x * z;              \
        Y[it.off[0] + i * it.st[0][n]] = (T)v;                                         \
      }                                                                                \
  }
INT_BINARY(int32_t, uint32_t)
INT_BINARY(int64_t, uint64_t)

#define CMP_LOOP(T)                                                                    \
  static void compare_##T(tp_op op, tp_tensor *y, tp_tensor *a, tp_tensor *b) {        \
    tp_tensor *in[2] = {a, b};                                                         \
    tp_iter it;                                                                        \
    tp_iter_init(&it, y, 2, in);                                                       \
    uint8_t *Y = y->storage->data;                                                     \
    const T *A = a->storage->data, *B = b->storage->data;                              \
    int n = it.nd - 1;                                                                 \
    for (int64_t r = 0; r < it.outer; r++, tp_iter_next(&it))                          \
      for (int64_t i = 0; i < it.inner; i++) {                                         \
        T x = A[it.off[1] + i * it.st[1][n]], z = B[it.off[2] + i * it.st[2][n]];      \
        Y[it.off[0] + i * it.st[0][n]] = op == TP_OP_EQ ? x == z : op == TP_OP_LT ? x < z : x > z; \
      }                                                                                \
  }
CMP_LOOP(float)
CMP_LOOP(int32_t)
CMP_LOOP(int64_t)
CMP_LOOP(uint8_t)

static tp_status exec_binary(tp_op op, tp_tensor *a0, tp_tensor *b0, const tp_desc *od,
                             tp_tensor **out) {
  tp_desc da, db;
  tp_desc_of(a0, &da);
  tp_desc_of(b0, &db);
  tp_dtype cd = tp_promote(&da, &db);
  if (tp_op_flags(op) & TP_OPF_FLOAT_OUT) cd = TP_F32;
  tp_tensor *a = NULL, *b = NULL, *y = NULL;
  tp_status s;
  /* a weak int must fit the dtype it is computed in (never wraps) */
  TP_TRY(tp_weak_check(a0, cd));
  TP_TRY(tp_weak_check(b0, cd));
  if ((s = tp_to_dtype(a0, cd, &a)) || (s = tp_to_dtype(b0, cd, &b)) || (s = new_out(od, &y)))
    goto done;
  if (tp_op_flags(op) & TP_OPF_BOOL_OUT) {
    switch (cd) {
      case TP_F32: compare_float(op, y, a, b); break;
      case TP_I32: compare_int32_t(op, y, a, b); break;
      case TP_I64: compare_int64_t(op, y, a, b); break;
      default: compare_uint8_t(op, y, a, b); break;
    }
  } else if (cd == TP_F32) {
    binary_f32(op, y, a, b);
  } else if (cd == TP_I32) {
    binary_int32_t(op, y, a, b);
  } else {
    binary_int64_t(op, y, a, b);
  }
  *out = y;
  y = NULL;
done:
  tp_tensor_release(a);
  tp_tensor_release(b);
  tp_tensor_release(y);
  return s;
}

static tp_status exec_where(tp_tensor *const *in, const tp_desc *od, tp_tensor **out) {
  tp_tensor *c = NULL, *a = NULL, *b = NULL, *y = NULL;
  tp_status s;
  TP_TRY(tp_weak_check(in[1], od->dtype));
  TP_TRY(tp_weak_check(in[2], od->dtype));
  if ((s = tp_to_dtype(in[0], TP_BOOL, &c)) || (s = tp_to_dtype(in[1], od->dtype, &a)) ||
      (s = tp_to_dtype(in[2], od->dtype, &b)) || (s = new_out(od, &y)))
    goto done;
  tp_tensor *ops[3] = {c, a, b};
  tp_iter it;
  tp_iter_init(&it, y, 3, ops);
  size_t es = tp_dtype_size(od->dtype);
  const uint8_t *C = c->storage->data;
  const char *A = a->storage->data, *B = b->storage->data;
  char *Y = y->storage->data;
  int n = it.nd - 1;
  for (int64_t r = 0; r < it.outer; r++, tp_iter_next(&it))
    for (int64_t i = 0; i < it.inner; i++) {
      int take_a = C[it.off[1] + i * it.st[1][n]] != 0;
      const char *src = take_a ? A + (size_t)(it.off[2] + i * it.st[2][n]) * es
                               : B + (size_t)(it.off[3] + i * it.st[3][n]) * es;
      memcpy(Y + (size_t)(it.off[0] + i * it.st[0][n]) * es, src, es);
    }
  *out = y;
  y = NULL;
done:
  tp_tensor_release(c);
  tp_tensor_release(a);
  tp_tensor_release(b);
  tp_tensor_release(y);
  return s;
}

/* ---- unary ---- */
static int kunary(tp_op op, const tp_attrs *at) {
  switch (op) {
    case TP_OP_NEG: return TP_KU_NEG;
    case TP_OP_ABS: return TP_KU_ABS;
    case TP_OP_EXP: return TP_KU_EXP;
    case TP_OP_LOG: return TP_KU_LOG;
    case TP_OP_SQRT: return TP_KU_SQRT;
    case TP_OP_RSQRT: return TP_KU_RSQRT;
    case TP_OP_TANH: return TP_KU_TANH;
    case TP_OP_SIGMOID: return TP_KU_SIGMOID;
    case TP_OP_RELU: return TP_KU_RELU;
    default: return at->approximate ? TP_KU_GELU_TANH : TP_KU_GELU_ERF;
  }
}

static float erf_f(float x) { return (float)erf((double)x); }
/* The unary ops with no ISA kernel: a float32 libm function each (round:
 * nearbyintf in the default mode, half to even); NULL for the others. */
static float (*scalar_unary(tp_op op))(float) {
  switch (op) {
    case TP_OP_FLOOR: return floorf;
    case TP_OP_CEIL: return ceilf;
    case TP_OP_ROUND: return nearbyintf;
    case TP_OP_ERF: return erf_f;
    case TP_OP_SIN: return sinf;
    case TP_OP_COS: return cosf;
    case TP_OP_TAN: return tanf;
    case TP_OP_ASIN: return asinf;
    case TP_OP_ACOS: return acosf;
    case TP_OP_ATAN: return atanf;
    case TP_OP_SINH: return sinhf;
    case TP_OP_COSH: return coshf;
    case TP_OP_ASINH: return asinhf;
    case TP_OP_ACOSH: return acoshf;
    case TP_OP_ATANH: return atanhf;
    default: return NULL;
  }
}

static tp_status exec_unary(tp_op op, tp_tensor *x0, const tp_attrs *at, const tp_desc *od,
                            tp_tensor **out) {
  tp_tensor *x = NULL, *xc = NULL, *y = NULL;
  tp_status s;
  if ((s = tp_to_dtype(x0, od->dtype, &x)) || (s = tp_contiguous(x, &xc)) || (s = new_out(od, &y)))
    goto done;
  int64_t n = tp_tensor_numel(y);
  float (*scalar)(float) = scalar_unary(op);
  if (scalar) { /* ops without an ISA kernel: libm per element */
    const float *p = tp_tensor_ptr(xc);
    float *q = y->storage->data;
    for (int64_t i = 0; i < n; i++) q[i] = scalar(p[i]);
  } else if (od->dtype == TP_F32) {
    tp_kern()->unary_f32(kunary(op, at), tp_tensor_ptr(xc), y->storage->data, n);
  } else if (od->dtype == TP_I32) {
    const int32_t *p = tp_tensor_ptr(xc);
    int32_t *q = y->storage->data;
    for (int64_t i = 0; i < n; i++)
      q[i] = op == TP_OP_NEG ? (int32_t)(0u - (uint32_t)p[i])
             : op == TP_OP_ABS ? (p[i] < 0 ? (int32_t)(0u - (uint32_t)p[i]) : p[i])
                               : (p[i] > 0 ? p[i] : 0);
  } else {
    const int64_t *p = tp_tensor_ptr(xc);
    int64_t *q = y->storage->data;
    for (int64_t i = 0; i < n; i++)
      q[i] = op == TP_OP_NEG ? (int64_t)(0ull - (uint64_t)p[i])
             : op == TP_OP_ABS ? (p[i] < 0 ? (int64_t)(0ull - (uint64_t)p[i]) : p[i])
                               : (p[i] > 0 ? p[i] : 0);
  }
  *out = y;
  y = NULL;
done:
  tp_tensor_release(x);
  tp_tensor_release(xc);
  tp_tensor_release(y);
  return s;
}

/* ---- matmul / linear ---- */
void tp_matmul_geom_init(const tp_tensor *a0, const tp_tensor *b0, tp_matmul_geom *g) {
  /* 1-D operands as [1,K] / [K,1] shells over the same data */
  tp_tensor a = *a0, b = *b0;
  if (a.ndim == 1) {
    a.ndim = 2;
    a.shape[1] = a.shape[0];
    a.strides[1] = a.strides[0];
    a.shape[0] = 1;
    a.strides[0] = 0;
  }
  if (b.ndim == 1) {
    b.ndim = 2;
    b.shape[1] = 1;
    b.strides[1] = 0;
  }
  g->M = a.shape[a.ndim - 2], g->K = a.shape[a.ndim - 1], g->N = b.shape[b.ndim - 1];
  g->ars = a.strides[a.ndim - 2], g->acs = a.strides[a.ndim - 1];
  g->brs = b.strides[b.ndim - 2], g->bcs = b.strides[b.ndim - 1];
  g->aoff = a.offset, g->boff = b.offset;
  g->nb = a.ndim > b.ndim ? a.ndim - 2 : b.ndim - 2;
  g->nbatch = 1;
  for (int d = 0; d < g->nb; d++) {
    int da = d - (g->nb - (a.ndim - 2)), db = d - (g->nb - (b.ndim - 2));
    int64_t sa = da >= 0 ? a.shape[da] : 1, sb = db >= 0 ? b.shape[db] : 1;
    g->bshape[d] = sa == 1 ? sb : sa; /* broadcast: 1 takes the other (also 0) */
    g->sta[d] = (da >= 0 && sa != 1) ? a.strides[da] : 0;
    g->stb[d] = (db >= 0 && sb != 1) ? b.strides[db] : 0;
    g->nbatch *= g->bshape[d];
  }
}

void tp_matmul_batch_offsets(const tp_matmul_geom *g, int64_t bi, int64_t *oa, int64_t *ob) {
  int64_t a = g->aoff, b = g->boff, rem = bi;
  for (int d = g->nb - 1; d >= 0; d--) {
    int64_t i = rem % g->bshape[d];
    rem /= g->bshape[d];
    a += i * g->sta[d];
    b += i * g->stb[d];
  }
  *oa = a, *ob = b;
}

static tp_status exec_matmul(tp_tensor *a0, tp_tensor *b0, const tp_desc *od, tp_tensor **out) {
  tp_tensor *y;
  TP_TRY(new_out(od, &y));
  tp_matmul_geom g;
  tp_matmul_geom_init(a0, b0, &g);
  const float *A = a0->storage->data, *B = b0->storage->data;
  float *C = y->storage->data;
  const tp_kernels *k = tp_kern();
  for (int64_t bi = 0; bi < g.nbatch; bi++) {
    int64_t oa, ob;
    tp_matmul_batch_offsets(&g, bi, &oa, &ob);
    k->gemm_f32(g.M, g.N, g.K, A + oa, g.ars, g.acs, B + ob, g.brs, g.bcs, C + bi * g.M * g.N, g.N, NULL);
  }
  *out = y;
  return TP_OK;
}

static tp_status exec_linear(tp_tensor *x0, tp_tensor *w, tp_tensor *b0, const tp_desc *od,
                             tp_tensor **out) {
  tp_tensor *x = NULL, *b = NULL, *y = NULL;
  tp_status s;
  if ((s = tp_contiguous(x0, &x)) || (b0 && (s = tp_contiguous(b0, &b))) || (s = new_out(od, &y)))
    goto done;
  int64_t in = w->shape[1], outn = w->shape[0];
  int64_t rows = in ? tp_tensor_numel(x) / in : tp_tensor_numel(y) / (outn ? outn : 1);
  tp_kern()->gemm_f32(rows, outn, in, tp_tensor_ptr(x), in, 1, tp_tensor_ptr(w) , w->strides[1],
                      w->strides[0], y->storage->data, outn, b ? tp_tensor_ptr(b) : NULL);
  *out = y;
  y = NULL;
done:
  tp_tensor_release(x);
  tp_tensor_release(b);
  tp_tensor_release(y);
  return s;
}


static tp_status exec_conv2d(tp_tensor *const *in, const tp_attrs *at, const tp_desc *od,
                             tp_tensor **out) {
  tp_tensor *y;
  TP_TRY(new_out(od, &y));
  tp_status s = tp_conv2d_into(in, at, y);
  if (s) tp_tensor_release(y);
  else *out = y;
  return s;
}


static tp_status exec_pool2d(tp_op op, tp_tensor *x0, const tp_attrs *at, const tp_desc *od,
                             tp_tensor **out) {
  tp_tensor *y;
  TP_TRY(new_out(od, &y));
  tp_status s = tp_pool2d_into(op, x0, at, y);
  if (s) tp_tensor_release(y);
  else *out = y;
  return s;
}

/* ---- reductions ---- */
/* A contiguous copy of x with the dims in mask moved last; *rlen = product
 * of the moved dims. */
static tp_status move_last(tp_tensor *x, const int *mask, int64_t *rlen, tp_tensor **out) {
  int64_t shape[TP_MAX_DIMS], st[TP_MAX_DIMS], r = 1;
  int k = 0;
  for (int d = 0; d < x->ndim; d++)
    if (!mask[d]) {
      shape[k] = x->shape[d];
      st[k++] = x->strides[d];
    }
  for (int d = 0; d < x->ndim; d++)
    if (mask[d]) {
      shape[k] = x->shape[d];
      st[k++] = x->strides[d];
      r *= x->shape[d];
    }
  tp_tensor *v;
  TP_TRY(tp_tensor_view(x, x->ndim, shape, st, x->offset, &v));
  tp_status s = tp_contiguous(v, out);
  tp_tensor_release(v);
  *rlen = r;
  return s;
}

/* sum / mean over the leading dims (dims of size 1 anywhere; a bias or layer_norm weight
 * gradient: columns of a [rows, C] matrix): the rows are added into one
 * row of accumulators in storage order (float over blocks of 64 rows, then
 * double), instead of a transposed
 * copy summed row by row (move_last), which read the tensor across cache
 * lines: 0.75 GB/s on the W4 backward's [128, 1024] bias gradients. */
static tp_status reduce_leading(tp_op op, tp_tensor *x0, const int *mask, const tp_desc *od, tp_tensor **out) {
  tp_tensor *x = NULL, *xc = NULL, *y = NULL;
  double *acc = NULL;
  int64_t R = 1, C = 1;
  for (int d = 0; d < x0->ndim; d++) *(mask[d] ? &R : &C) *= x0->shape[d];
  tp_status s;
  if ((s = tp_to_dtype(x0, TP_F32, &x)) || (s = tp_contiguous(x, &xc)) || (s = new_out(od, &y))) goto done;
  /* float sums of up to 64 rows (a vector loop), each added into double */
  if (!(acc = tp_alloc((sizeof(double) + sizeof(float)) * (size_t)(C ? C : 1)))) {
    s = tp_fail(TP_ERR_OUT_OF_MEMORY, "%s: no memory for %lld accumulators", tp_op_name(op), (long long)C);
    goto done;
  }
  float *part = (float *)(acc + C);
  for (int64_t j = 0; j < C; j++) acc[j] = 0.0;
  const float *xp = tp_tensor_ptr(xc);
  for (int64_t i0 = 0; i0 < R; i0 += 64) {
    int64_t i1 = R - i0 < 64 ? R : i0 + 64;
    memcpy(part, xp, sizeof(float) * (size_t)C);
    xp += C;
    for (int64_t i = i0 + 1; i < i1; i++, xp += C)
      for (int64_t j = 0; j < C; j++) part[j] += xp[j];
    for (int64_t j = 0; j < C; j++) acc[j] += (double)part[j];
  }
  float *yp = (float *)y->storage->data;
  for (int64_t j = 0; j < C; j++) yp[j] = op == TP_OP_MEAN ? (R ? (float)(acc[j] / (double)R) : NAN) : (float)acc[j];
  *out = y;
  y = NULL;
done:
  tp_free(acc);
  tp_tensor_release(x);
  tp_tensor_release(xc);
  tp_tensor_release(y);
  return s;
}

static tp_status exec_reduce(tp_op op, tp_tensor *x0, const tp_attrs *at, const tp_desc *od,
                             tp_tensor **out) {
  int mask[TP_MAX_DIMS] = {0};
  if (at->nints == 0)
    for (int d = 0; d < x0->ndim; d++) mask[d] = 1;
  for (int i = 0; i < at->nints; i++) {
    int64_t d;
    TP_TRY(tp_norm_dim(tp_op_name(op), at->ints[i], x0->ndim, &d));
    if (x0->ndim) mask[d] = 1;
  }
  tp_dtype cd = od->dtype == TP_F32 ? TP_F32 : (op == TP_OP_SUM ? TP_I64 : x0->dtype);
  tp_tensor *x = NULL, *xm = NULL, *y = NULL;
  int64_t R;
  tp_status s;
  if (cd == TP_F32 && (op == TP_OP_SUM || op == TP_OP_MEAN)) {
    /* the reduced dims lead (dims of size 1 aside) and more than one column is kept */
    int prefix = 1, kept = 0;
    int64_t C = 1;
    for (int d = 0; d < x0->ndim; d++) {
      if (x0->shape[d] == 1) continue;
      if (mask[d]) prefix = prefix && !kept;
      else kept = 1, C *= x0->shape[d];
    }
    /* (a strided view, e.g. a transpose, goes the other way: its reduced
     * dims may be the inner ones in memory, then move_last reads in order) */
    if (prefix && C > 1 && tp_tensor_is_contiguous(x0)) return reduce_leading(op, x0, mask, od, out);
  }
  /* max / min of a contiguous float32 x over one run of adjacent dims with
   * dims kept after it ([A, R, C], C > 1): the R slices of C are combined
   * element by element, in storage order, instead of move_last's transposed
   * copy reduced in rows of R. stax lowers a 2x2 max pool to such a max over
   * the 4 window taps stacked in the middle ([1, 64, 4, 65536]), where the
   * copy ran at 0.2 GB/s (the quint8 ISNet: 33 pools, 10% of its plan). NaN
   * propagates as in max_f32. */
  if (cd == TP_F32 && x0->dtype == TP_F32 && (op == TP_OP_MAX || op == TP_OP_MIN) && tp_tensor_is_contiguous(x0)) {
    int first = -1, last = -1, run = 1;
    for (int d = 0; d < x0->ndim; d++) {
      if (x0->shape[d] == 1) continue;
      if (mask[d]) {
        if (first >= 0 && last != d - 1) {
          for (int e = last + 1; e < d; e++) run = run && x0->shape[e] == 1;
        }
        if (first < 0) first = d;
        last = d;
      }
    }
    int64_t A = 1, Rm = 1, C = 1;
    for (int d = 0; d < x0->ndim; d++) {
      if (first < 0 || d < first) A *= x0->shape[d];
      else if (d <= last) Rm *= x0->shape[d];
      else C *= x0->shape[d];
    }
    if (run && first >= 0 && C > 1 && Rm > 1 && A * C > 0) {
      if ((s = new_out(od, &y))) goto done;
      const float *px = tp_tensor_ptr(x0);
      float *py = (float *)y->storage->data;
      for (int64_t a = 0; a < A; a++) {
        float *yr = py + a * C;
        const float *xa = px + a * Rm * C;
        memcpy(yr, xa, sizeof(float) * (size_t)C);
        for (int64_t r = 1; r < Rm; r++) {
          const float *xr = xa + r * C;
          if (op == TP_OP_MAX)
            for (int64_t c = 0; c < C; c++) yr[c] = (xr[c] > yr[c] || xr[c] != xr[c]) ? xr[c] : yr[c];
          else
            for (int64_t c = 0; c < C; c++) yr[c] = (xr[c] < yr[c] || xr[c] != xr[c]) ? xr[c] : yr[c];
        }
      }
      *out = y;
      return TP_OK;
    }
  }
  if ((s = tp_to_dtype(x0, cd, &x)) || (s = move_last(x, mask, &R, &xm)) || (s = new_out(od, &y)))
    goto done;
  int64_t rows = tp_tensor_numel(y);
  const tp_kernels *k = tp_kern();
  for (int64_t i = 0; i < rows; i++) {
    if (cd == TP_F32) {
      const float *p = (const float *)tp_tensor_ptr(xm) + i * R;
      float v;
      if (op == TP_OP_MAX) {
        v = k->max_f32(p, R);
      } else if (op == TP_OP_MIN) { /* NaN propagates, as in max_f32 */
        v = k->min_f32(p, R);
      } else {
        v = k->sum_f32(p, R);
      }
      if (op == TP_OP_MEAN) v = R ? v / (float)R : NAN;
      ((float *)y->storage->data)[i] = v;
    } else {
      /* integer and bool: exact int64 accumulation, each element read as
       * its dtype (a read through tp_tensor_get_f64 per element made the
       * int32 max of DynamicQuantizeLinear's stax plan run at 0.2 GB/s) */
      int64_t acc = 0;
      const void *row = (const char *)tp_tensor_ptr(xm) + (size_t)(i * R) * tp_dtype_size(xm->dtype);
#define TP_REDUCE_INT(T)                                                          \
  for (int64_t j = 0; j < R; j++) {                                               \
    int64_t e = (int64_t)((const T *)row)[j];                                     \
    if (op == TP_OP_SUM) acc = (int64_t)((uint64_t)acc + (uint64_t)e);            \
    else if (j == 0 || (op == TP_OP_MAX ? e > acc : e < acc)) acc = e;            \
  }
      switch (xm->dtype) {
        case TP_I64: TP_REDUCE_INT(int64_t) break;
        case TP_I32: TP_REDUCE_INT(int32_t) break;
        case TP_I8: TP_REDUCE_INT(int8_t) break;
        case TP_U8: case TP_BOOL: TP_REDUCE_INT(uint8_t) break;
        default:
          for (int64_t j = 0; j < R; j++) {
            int64_t e = (int64_t)tp_tensor_get_f64(xm, i * R + j);
            if (op == TP_OP_SUM) acc = (int64_t)((uint64_t)acc + (uint64_t)e);
            else if (j == 0 || (op == TP_OP_MAX ? e > acc : e < acc)) acc = e;
          }
      }
#undef TP_REDUCE_INT
      switch (od->dtype) {
        case TP_I32: ((int32_t *)y->storage->data)[i] = (int32_t)acc; break;
        case TP_I64: ((int64_t *)y->storage->data)[i] = acc; break;
        default: ((uint8_t *)y->storage->data)[i] = acc != 0; break;
      }
    }
  }
  *out = y;
  y = NULL;
done:
  tp_tensor_release(x);
  tp_tensor_release(xm);
  tp_tensor_release(y);
  return s;
}

/* ---- softmax / layer_norm ---- */
static tp_status exec_softmax(tp_op op, tp_tensor *x0, const tp_attrs *at, const tp_desc *od,
                              tp_tensor **out) {
  int64_t d;
  TP_TRY(tp_norm_dim(tp_op_name(op), at->dim, x0->ndim, &d));
  int mask[TP_MAX_DIMS] = {0};
  if (x0->ndim) mask[d] = 1;
  tp_tensor *x = NULL, *xm = NULL, *y = NULL;
  int64_t R;
  tp_status s;
  if ((s = tp_to_dtype(x0, TP_F32, &x)) || (s = move_last(x, mask, &R, &xm))) goto done;
  if (xm->storage == x->storage) { /* a view of the input: work on a copy */
    tp_tensor *copy;
    if ((s = tp_tensor_empty(TP_F32, xm->ndim, xm->shape, &copy))) goto done;
    tp_tensor_copy_into(xm, copy);
    tp_tensor_release(xm);
    xm = copy;
  }
  {
    float *p = tp_tensor_ptr(xm);
    int64_t rows = R ? tp_tensor_numel(xm) / R : 0;
    for (int64_t i = 0; i < rows; i++) tp_kern()->softmax_f32(p + i * R, R, op == TP_OP_LOG_SOFTMAX);
  }
  if (!x0->ndim || d == x0->ndim - 1) {
    y = xm;
    xm = NULL;
  } else { /* move the last dim back to d */
    int64_t shape[TP_MAX_DIMS], st[TP_MAX_DIMS];
    int nd = x0->ndim;
    for (int i = 0, k = 0; i < nd; i++) {
      if (i == d) {
        shape[i] = xm->shape[nd - 1];
        st[i] = xm->strides[nd - 1];
      } else {
        shape[i] = xm->shape[k];
        st[i] = xm->strides[k];
        k++;
      }
    }
    tp_tensor *v;
    if ((s = tp_tensor_view(xm, nd, shape, st, 0, &v))) goto done;
    s = tp_contiguous(v, &y);
    tp_tensor_release(v);
    if (s) goto done;
  }
  (void)od;
  *out = y;
  y = NULL;
done:
  tp_tensor_release(x);
  tp_tensor_release(xm);
  tp_tensor_release(y);
  return s;
}

static tp_status exec_layer_norm(tp_tensor *const *in, const tp_attrs *at, const tp_desc *od,
                                 tp_tensor **out) {
  tp_tensor *x = NULL, *w = NULL, *b = NULL, *y = NULL;
  tp_status s;
  if ((s = tp_contiguous(in[0], &x)) || (in[1] && (s = tp_contiguous(in[1], &w))) ||
      (in[2] && (s = tp_contiguous(in[2], &b))) || (s = new_out(od, &y)))
    goto done;
  int64_t D = tp_shape_numel(at->nints, at->ints);
  int64_t rows = D ? tp_tensor_numel(x) / D : 0;
  const float *X = tp_tensor_ptr(x), *W = w ? tp_tensor_ptr(w) : NULL, *B = b ? tp_tensor_ptr(b) : NULL;
  float *Y = y->storage->data;
  const tp_kernels *k = tp_kern();
  for (int64_t r = 0; r < rows; r++) {
    const float *p = X + r * D;
    float *q = Y + r * D;
    float mean = k->sum_f32(p, D) / (float)D;
    for (int64_t i = 0; i < D; i++) {
      float c = p[i] - mean;
      q[i] = c * c;
    }
    float var = k->sum_f32(q, D) / (float)D;
    float rstd = 1.0f / sqrtf(var + (float)at->eps);
    for (int64_t i = 0; i < D; i++) {
      float v = (p[i] - mean) * rstd;
      if (W) v = v * W[i];
      if (B) v = v + B[i];
      q[i] = v;
    }
  }
  *out = y;
  y = NULL;
done:
  tp_tensor_release(x);
  tp_tensor_release(w);
  tp_tensor_release(b);
  tp_tensor_release(y);
  return s;
}

/* ---- views and data movement ---- */
/* Strides for viewing a (shape, strides) layout with a new shape without
 * copying, or 0 if the layout does not allow it (the rule of PyTorch's
 * computeStride). */
int tp_view_strides(int xnd, const int64_t *xshape, const int64_t *xstrides, int nd,
                    const int64_t *shape, int64_t *st) {
  int64_t numel = tp_shape_numel(xnd, xshape);
  if (numel == 0 || xnd == 0) {
    int64_t s = 1;
    for (int i = nd - 1; i >= 0; i--) {
      st[i] = s;
      s *= shape[i] ? shape[i] : 1;
    }
    return 1;
  }
  int view_d = nd - 1;
  int64_t chunk = 1, tensor_numel = 1, base = xstrides[xnd - 1];
  for (int td = xnd - 1; td >= 0; td--) {
    tensor_numel *= xshape[td];
    if (td == 0 || (xshape[td - 1] != 1 && xstrides[td - 1] != tensor_numel * base)) {
      while (view_d >= 0 && (chunk < tensor_numel || shape[view_d] == 1)) {
        st[view_d] = chunk * base;
        chunk *= shape[view_d];
        view_d--;
      }
      if (chunk != tensor_numel) return 0;
      if (td > 0) {
        base = xstrides[td - 1];
        tensor_numel = 1;
        chunk = 1;
      }
    }
  }
  return view_d == -1;
}

static tp_status exec_reshape(tp_tensor *x, const tp_desc *od, tp_tensor **out) {
  int64_t st[TP_MAX_DIMS];
  if (tp_view_strides(x->ndim, x->shape, x->strides, od->ndim, od->shape, st))
    return tp_tensor_view(x, od->ndim, od->shape, st, x->offset, out);
  tp_tensor *c;
  TP_TRY(tp_contiguous(x, &c));
  int64_t cs[TP_MAX_DIMS], s = 1;
  for (int i = od->ndim - 1; i >= 0; i--) {
    cs[i] = s;
    s *= od->shape[i];
  }
  tp_status r = tp_tensor_view(c, od->ndim, od->shape, cs, c->offset, out);
  tp_tensor_release(c);
  return r;
}

static tp_status exec_permute(tp_tensor *x, const int64_t *perm, const tp_desc *od,
                              tp_tensor **out) {
  int64_t st[TP_MAX_DIMS];
  for (int i = 0; i < x->ndim; i++) st[i] = x->strides[perm[i]];
  return tp_tensor_view(x, x->ndim, od->shape, st, x->offset, out);
}

static tp_status concat_into(int nin, tp_tensor *const *in, int64_t d, const tp_desc *od, tp_tensor *y);

static tp_status exec_concat(int nin, tp_tensor *const *in, const tp_attrs *at,
                             const tp_desc *od, tp_tensor **out) {
  int64_t d;
  TP_TRY(tp_norm_dim("concat", at->dim, od->ndim, &d));
  tp_tensor *y;
  TP_TRY(new_out(od, &y));
  tp_status s = concat_into(nin, in, d, od, y);
  if (s) tp_tensor_release(y);
  else *out = y;
  return s;
}

tp_status tp_exec_into(tp_op op, int nin, tp_tensor *const *in, const tp_attrs *at, tp_tensor *y, int *done) {
  *done = 0;
  if (!y || !tp_tensor_is_contiguous(y) || nin < 1) return TP_OK;
  tp_desc od;
  tp_desc_of(y, &od);
  if (op == TP_OP_CONCAT) {
    int64_t d, sum = 0;
    if (tp_norm_dim("concat", at->dim, od.ndim, &d)) {
      tp_clear_error();
      return TP_OK; /* tp_op_call names it */
    }
    for (int i = 0; i < nin; i++) {
      if (!in[i] || in[i]->dtype != y->dtype || in[i]->ndim != y->ndim) return TP_OK;
      for (int k = 0; k < y->ndim; k++)
        if (k != d && in[i]->shape[k] != y->shape[k]) return TP_OK;
      sum += in[i]->shape[d];
    }
    if (sum != y->shape[d]) return TP_OK;
    TP_TRY(concat_into(nin, in, d, &od, y));
    *done = 1;
    return TP_OK;
  }
  if (op == TP_OP_QUANTIZE) return tp_quantize_into(nin, in, y, done);
  /* (indices of int32 / int64 only: tp_op_call converts the other integer
   * dtypes before read_indices sees them) */
  if (op == TP_OP_GATHER && nin == 2 && in[0] && in[1] && in[0]->dtype == y->dtype &&
      (in[1]->dtype == TP_I32 || in[1]->dtype == TP_I64)) {
    tp_desc want, dx, di;
    tp_desc_of(in[0], &dx);
    tp_desc_of(in[1], &di);
    const tp_desc *ds[2] = {&dx, &di};
    if (tp_op_infer(op, 2, ds, at, &want) || !tp_desc_equal(&want, &od)) {
      tp_clear_error();
      return TP_OK;
    }
    tp_tensor *r = NULL;
    TP_TRY(tp_gather_into(op, in, at, &od, y, &r));
    tp_tensor_release(r);
    *done = 1;
  }
  return TP_OK;
}

static tp_status concat_into(int nin, tp_tensor *const *in, int64_t d, const tp_desc *od, tp_tensor *y) {
  int64_t pos = 0;
  for (int i = 0; i < nin; i++) {
    tp_tensor *src = NULL, *dst = NULL;
    tp_status s = tp_to_dtype(in[i], od->dtype, &src);
    if (!s) s = tp_tensor_view(y, y->ndim, in[i]->shape, y->strides, pos * y->strides[d], &dst);
    if (!s) { /* strided copy, same dtype: dst view <- src */
      tp_tensor *ops[1] = {src};
      tp_iter it;
      tp_iter_init(&it, dst, 1, ops);
      size_t es = tp_dtype_size(od->dtype);
      char *D = y->storage->data;
      const char *S = src->storage->data;
      int n = it.nd - 1;
      int unit = n >= 0 && it.st[0][n] == 1 && it.st[1][n] == 1; /* whole rows at once */
      for (int64_t r = 0; r < it.outer; r++, tp_iter_next(&it))
        if (unit)
          memcpy(D + (size_t)it.off[0] * es, S + (size_t)it.off[1] * es, (size_t)it.inner * es);
        else
          for (int64_t k = 0; k < it.inner; k++)
            memcpy(D + (size_t)(it.off[0] + k * it.st[0][n]) * es,
                   S + (size_t)(it.off[1] + k * it.st[1][n]) * es, es);
    }
    tp_tensor_release(src);
    tp_tensor_release(dst);
    if (s) return s;
    pos += in[i]->shape[d];
  }
  return TP_OK;
}

tp_status tp_op_exec(tp_op op, int nin, tp_tensor *const *in, const tp_attrs *at,
                     const tp_desc *od, tp_tensor **out) {
  int f = tp_op_flags(op);
  if (f & TP_OPF_BINARY) return exec_binary(op, in[0], in[1], od, out);
  if (f & TP_OPF_UNARY) return exec_unary(op, in[0], at, od, out);
  if (f & TP_OPF_REDUCE) return exec_reduce(op, in[0], at, od, out);
  switch (op) {
    case TP_OP_WHERE: return exec_where(in, od, out);
    case TP_OP_MATMUL: return exec_matmul(in[0], in[1], od, out);
    case TP_OP_QUANTIZE:
    case TP_OP_DEQUANTIZE: return tp_exec_quant(op, nin, in, od, 1, out);
    case TP_OP_MATMUL_INT: return tp_exec_matmul_int(nin, in, od, NULL, out);
    case TP_OP_QMATMUL: return tp_exec_qmatmul(nin, in, at, od, NULL, out);
    case TP_OP_CONV2D_INT: return tp_exec_conv2d_int(nin, in, at, od, NULL, NULL, out);
    case TP_OP_QCONV2D: return tp_exec_qconv2d(nin, in, at, od, NULL, NULL, out);
    case TP_OP_LINEAR: return exec_linear(in[0], in[1], in[2], od, out);
    case TP_OP_CONV2D: return exec_conv2d(in, at, od, out);
    case TP_OP_MAX_POOL2D:
    case TP_OP_AVG_POOL2D: return exec_pool2d(op, in[0], at, od, out);
    case TP_OP_SOFTMAX:
    case TP_OP_LOG_SOFTMAX: return exec_softmax(op, in[0], at, od, out);
    case TP_OP_LAYER_NORM: return exec_layer_norm(in, at, od, out);
    case TP_OP_RESHAPE: return exec_reshape(in[0], od, out);
    case TP_OP_TRANSPOSE: {
      int64_t perm[TP_MAX_DIMS], d0 = 0, d1 = 0;
      for (int i = 0; i < in[0]->ndim; i++) perm[i] = i;
      if (in[0]->ndim) {
        TP_TRY(tp_norm_dim("transpose", at->dim, in[0]->ndim, &d0));
        TP_TRY(tp_norm_dim("transpose", at->dim1, in[0]->ndim, &d1));
        perm[d0] = d1;
        perm[d1] = d0;
      }
      return exec_permute(in[0], perm, od, out);
    }
    case TP_OP_PERMUTE: {
      int64_t perm[TP_MAX_DIMS];
      for (int i = 0; i < in[0]->ndim; i++)
        TP_TRY(tp_norm_dim("permute", at->ints[i], in[0]->ndim, &perm[i]));
      return exec_permute(in[0], perm, od, out);
    }
    case TP_OP_SLICE: {
      tp_tensor *x = in[0];
      int64_t d, s0, len, st[TP_MAX_DIMS];
      TP_TRY(tp_norm_dim("slice", at->dim, x->ndim, &d));
      tp_slice_bounds(x->shape[d], at->start, at->end, at->step, &s0, &len);
      memcpy(st, x->strides, sizeof st);
      st[d] *= at->step;
      return tp_tensor_view(x, x->ndim, od->shape, st, x->offset + s0 * x->strides[d], out);
    }
    case TP_OP_CONCAT: return exec_concat(nin, in, at, od, out);
    case TP_OP_CAST:
      /* float16 -> float32 of contiguous data: the kernel table's vector
       * conversion (exact; the same bits as num.h's, test_gemm_f16) */
      if (in[0]->dtype == TP_F16 && at->dtype == TP_F32 && tp_tensor_is_contiguous(in[0])) {
        TP_TRY(tp_tensor_empty(TP_F32, in[0]->ndim, in[0]->shape, out));
        tp_kern()->f16_to_f32((const uint16_t *)tp_tensor_ptr(in[0]), (float *)(*out)->storage->data,
                              tp_tensor_numel(in[0]));
        return TP_OK;
      }
      /* float32 -> float16 of contiguous data: the vector rounding (the
       * bits of num.h's tp_f32_to_f16, test_gemm_f16) */
      if (in[0]->dtype == TP_F32 && at->dtype == TP_F16 && tp_tensor_is_contiguous(in[0])) {
        TP_TRY(tp_tensor_empty(TP_F16, in[0]->ndim, in[0]->shape, out));
        tp_kern()->f32_to_f16((const float *)tp_tensor_ptr(in[0]), (uint16_t *)(*out)->storage->data,
                              tp_tensor_numel(in[0]));
        return TP_OK;
      }
      return tp_to_dtype(in[0], at->dtype, out);
    case TP_OP_BITCAST: { /* the bytes, in C order, as od's dtype */
      tp_tensor *c;
      TP_TRY(tp_contiguous(in[0], &c));
      tp_status s = tp_tensor_new(od->dtype, od->ndim, od->shape, tp_tensor_numel(c) ? tp_tensor_ptr(c) : NULL, out);
      tp_tensor_release(c);
      return s;
    }
    case TP_OP_GATHER:
    case TP_OP_GATHER_ELEMENTS: return tp_gather_exec(op, in, at, od, out);
    case TP_OP_GATHER_ND: return tp_gather_nd_exec(in, at, od, out);
    case TP_OP_ARGTOPK: return tp_argtopk_exec(in, at, od, out);
    case TP_OP_SCATTER_ELEMENTS:
    case TP_OP_SCATTER_ND: return tp_scatter_exec(op, in, at, od, out);
    case TP_OP_RNN:
    case TP_OP_GRU:
    case TP_OP_LSTM: return tp_recurrent_exec(op, nin, in, at, od, 0, out);
    case TP_OP_MOD: case TP_OP_FMOD: case TP_OP_BITWISE_AND: case TP_OP_BITWISE_OR: case TP_OP_BITWISE_XOR:
    case TP_OP_BITWISE_NOT: return tp_intop_exec(op, in, od, out);
    case TP_OP_DET: return tp_det_exec(in, od, 0, out);
    case TP_OP_GRID_SAMPLE: return tp_grid_sample_exec(in, at, od, out);
    case TP_OP_ROI_ALIGN: return tp_roi_align_exec(in, at, od, out);
    default: return tp_fail(TP_ERR_INTERNAL, "%s: no kernel", tp_op_name(op));
  }
}
