/* ref.c - reference kernels: the oracle of every test. Plain loops over
 * flat indices with double precision and libm, no blocking, no SIMD; slow
 * on purpose and written independently of exec.c and the ISA kernels. */
#include "ops.h"
#include "../core/num.h"
#include <math.h>

/* Storage offset of t's element at the position broadcast from output index i. */
static int64_t bcast_off(const tp_tensor *t, int ond, const int64_t *oshape, int64_t i) {
  int64_t off = t->offset;
  for (int d = ond - 1; d >= 0; d--) {
    int64_t c = oshape[d] ? i % oshape[d] : 0;
    i = oshape[d] ? i / oshape[d] : 0;
    int td = d - (ond - t->ndim);
    if (td >= 0 && t->shape[td] != 1) off += c * t->strides[td];
  }
  return off;
}

/* Element (double) of t at the position broadcast from output index i. */
static double at_bcast(const tp_tensor *t, int ond, const int64_t *oshape, int64_t i) {
  int64_t off = bcast_off(t, ond, oshape, i);
  switch (t->dtype) {
    case TP_F32: return ((const float *)t->storage->data)[off];
    case TP_I32: return ((const int32_t *)t->storage->data)[off];
    case TP_I64: return (double)((const int64_t *)t->storage->data)[off];
    case TP_F16: return tp_f16_to_f32(((const uint16_t *)t->storage->data)[off]);
    case TP_BF16: return tp_bf16_to_f32(((const uint16_t *)t->storage->data)[off]);
    case TP_I8: return ((const int8_t *)t->storage->data)[off];
    default: return ((const uint8_t *)t->storage->data)[off];
  }
}

static int is_int_dtype(tp_dtype d) { return d == TP_I32 || d == TP_I64 || d == TP_I8 || d == TP_U8 || d == TP_BOOL; }

/* The exact integer element (t of an integer dtype or bool): int64 values
 * past 2^53 do not survive a double. */
static int64_t at_bcast_int(const tp_tensor *t, int ond, const int64_t *oshape, int64_t i) {
  int64_t off = bcast_off(t, ond, oshape, i);
  switch (t->dtype) {
    case TP_I32: return ((const int32_t *)t->storage->data)[off];
    case TP_I64: return ((const int64_t *)t->storage->data)[off];
    case TP_I8: return ((const int8_t *)t->storage->data)[off];
    default: return ((const uint8_t *)t->storage->data)[off];
  }
}

/* An integer result, wrapped to y's dtype (two's complement). */
static void put_int(tp_tensor *y, int64_t i, uint64_t v) {
  switch (y->dtype) {
    case TP_I32: ((int32_t *)y->storage->data)[i] = (int32_t)(uint32_t)v; break;
    case TP_I64: ((int64_t *)y->storage->data)[i] = (int64_t)v; break;
    case TP_I8: ((int8_t *)y->storage->data)[i] = (int8_t)(uint8_t)v; break;
    case TP_U8: ((uint8_t *)y->storage->data)[i] = (uint8_t)v; break;
    default: ((uint8_t *)y->storage->data)[i] = v != 0; break;
  }
}

static void put(tp_tensor *y, int64_t i, double v) {
  switch (y->dtype) {
    case TP_F32: ((float *)y->storage->data)[i] = (float)v; break;
    /* int32 keeps int64's low bits (wraps); past int64 saturates (num.h) */
    case TP_I32: ((int32_t *)y->storage->data)[i] = (int32_t)(uint32_t)(uint64_t)tp_f64_to_i64_sat(v); break;
    case TP_I64: ((int64_t *)y->storage->data)[i] = tp_f64_to_i64_sat(v); break;
    case TP_F16: ((uint16_t *)y->storage->data)[i] = tp_f64_to_f16(v); break;
    case TP_BF16: ((uint16_t *)y->storage->data)[i] = tp_f64_to_bf16(v); break;
    case TP_I8: ((int8_t *)y->storage->data)[i] = (int8_t)(uint8_t)(uint64_t)tp_f64_to_i64_sat(v); break;
    case TP_U8: ((uint8_t *)y->storage->data)[i] = (uint8_t)(uint64_t)tp_f64_to_i64_sat(v); break;
    case TP_BOOL: ((uint8_t *)y->storage->data)[i] = v != 0; break;
    default: break;
  }
}

static double unary_ref(tp_op op, double x, int approximate) {
  switch (op) {
    case TP_OP_NEG: return -x;
    case TP_OP_ABS: return fabs(x);
    case TP_OP_EXP: return exp(x);
    case TP_OP_LOG: return log(x);
    case TP_OP_SQRT: return sqrt(x);
    case TP_OP_RSQRT: return 1.0 / sqrt(x);
    case TP_OP_TANH: return tanh(x);
    case TP_OP_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case TP_OP_RELU: return x > 0 ? x : (x != x ? x : 0.0);
    case TP_OP_FLOOR: return floor(x);
    case TP_OP_CEIL: return ceil(x);
    case TP_OP_ROUND: { /* half to even, written without the FP rounding mode */
      double f = floor(x), d = x - f, r;
      if (x != x || isinf(x)) return x;
      if (d > 0.5) r = f + 1;
      else if (d < 0.5) r = f;
      else r = fmod(f, 2.0) == 0 ? f : f + 1;
      return r == 0 ? copysign(0.0, x) : r; /* round(-0.25) is -0, as IEEE's roundTiesToEven */
    }
    case TP_OP_ERF: return erf(x);
    case TP_OP_SIN: return sin(x);
    case TP_OP_COS: return cos(x);
    case TP_OP_TAN: return tan(x);
    case TP_OP_ASIN: return asin(x);
    case TP_OP_ACOS: return acos(x);
    case TP_OP_ATAN: return atan(x);
    case TP_OP_SINH: return sinh(x);
    case TP_OP_COSH: return cosh(x);
    case TP_OP_ASINH: return asinh(x);
    case TP_OP_ACOSH: return acosh(x);
    case TP_OP_ATANH: return atanh(x);
    default:
      if (approximate)
        return 0.5 * x * (1.0 + tanh(sqrt(2.0 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
      return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
  }
}

static double binary_ref(tp_op op, double a, double b) {
  switch (op) {
    case TP_OP_ADD: return a + b;
    case TP_OP_SUB: return a - b;
    case TP_OP_MUL: return a * b;
    case TP_OP_DIV: return a / b;
    case TP_OP_EQ: return a == b;
    case TP_OP_LT: return a < b;
    default: return a > b;
  }
}

tp_status tp_op_exec_ref(tp_op op, int nin, tp_tensor *const *in, const tp_attrs *attrs,
                         tp_tensor **out) {
  tp_attrs def;
  if (!attrs) {
    tp_attrs_init(&def);
    attrs = &def;
  }
  tp_desc descs[TP_MAX_OPERANDS], od;
  const tp_desc *dp[TP_MAX_OPERANDS];
  if (nin < 0 || nin > TP_MAX_OPERANDS || (nin && !in) || !out)
    return tp_fail(TP_ERR_INVALID_ARG, "%s (reference): bad operand count %d", tp_op_name(op), nin);
  for (int i = 0; i < nin; i++) {
    dp[i] = NULL;
    if (in[i]) {
      tp_desc_of(in[i], &descs[i]);
      dp[i] = &descs[i];
    }
  }
  TP_TRY(tp_op_infer(op, nin, dp, attrs, &od));
  tp_dtype lp;
  if (tp_op_lowp_widen(op, nin, dp, &lp)) {
    /* storage dtypes: the reference of the widened operands, rounded back
     * once, as tp_op_call computes them (the special-cased ops below, det
     * or the integer ops, read only float32 / int32 / int64) */
    tp_tensor *w[TP_MAX_OPERANDS] = {0}, *y0 = NULL;
    tp_status s = TP_OK;
    for (int i = 0; i < nin && !s; i++)
      if (in[i]) s = tp_to_dtype(in[i], tp_dtype_compute(in[i]->dtype), &w[i]);
    if (!s) s = tp_op_exec_ref(op, nin, w, attrs, &y0);
    if (!s) s = tp_to_dtype(y0, od.dtype, out);
    tp_tensor_release(y0);
    for (int i = 0; i < nin; i++) tp_tensor_release(w[i]);
    return s;
  }
  int f = tp_op_flags(op);
  if ((f & TP_OPF_VIEW) || op == TP_OP_CONCAT || op == TP_OP_CAST || op == TP_OP_BITCAST) {
    /* data movement has no arithmetic: the eager path is its own reference */
    tp_tensor *v, *c;
    TP_TRY(tp_op_exec(op, nin, in, attrs, &od, &v));
    tp_status s = tp_contiguous(v, &c);
    tp_tensor_release(v);
    if (!s) *out = c;
    return s;
  }
  if (op == TP_OP_RNN || op == TP_OP_GRU || op == TP_OP_LSTM)
    return tp_recurrent_exec(op, nin, in, attrs, &od, 1, out);
  if (op == TP_OP_MOD || op == TP_OP_FMOD || op == TP_OP_BITWISE_AND || op == TP_OP_BITWISE_OR ||
      op == TP_OP_BITWISE_XOR || op == TP_OP_BITWISE_NOT)
    return tp_intop_ref(op, in, &od, out);
  if (op == TP_OP_DET) return tp_det_exec(in, &od, 1, out);
  if (op == TP_OP_QUANTIZE || op == TP_OP_DEQUANTIZE) return tp_exec_quant(op, nin, in, &od, 0, out); /* scalar, double */
  if (op == TP_OP_MATMUL_INT) return tp_exec_matmul_int_ref(nin, in, &od, out);
  if (op == TP_OP_CONV2D_INT) return tp_exec_conv2d_int_ref(nin, in, attrs, &od, out);
  if (op == TP_OP_QCONV2D) return tp_exec_qconv2d_ref(nin, in, attrs, &od, out);
  if (op == TP_OP_QMATMUL) return tp_exec_qmatmul_ref(nin, in, attrs, &od, out); /* scalar, the epilogue's formula */          /* scalar, exact */
  if (op == TP_OP_GRID_SAMPLE) return tp_grid_sample_exec(in, attrs, &od, out); /* computes in double */
  if (op == TP_OP_ROI_ALIGN) return tp_roi_align_exec(in, attrs, &od, out);       /* likewise */
  tp_tensor *y;
  TP_TRY(tp_tensor_empty(od.dtype, od.ndim, od.shape, &y));
  int64_t n = tp_tensor_numel(y);
  if (f & (TP_OPF_BINARY | TP_OPF_UNARY) || op == TP_OP_WHERE) {
    /* integer operands of a float32 result are float32 values first (the
     * op's semantics: operands promote to the result dtype, so cos of the
     * int32 67108868 is cos of the float 67108864; an int64 converts to
     * float32 directly, not through a double). Integer results are exact
     * and wrap, as the kernels do: a double loses int64 values past 2^53. */
    int int0 = nin > 0 && in[0] && is_int_dtype(in[0]->dtype);
    int int1 = nin > 1 && in[1] && is_int_dtype(in[1]->dtype);
    int int2 = nin > 2 && in[2] && is_int_dtype(in[2]->dtype);
    int iout = od.dtype == TP_I32 || od.dtype == TP_I64 || od.dtype == TP_I8 || od.dtype == TP_U8;
    int rnd0 = od.dtype == TP_F32 && int0, rnd1 = od.dtype == TP_F32 && int1;
#define OPND(k, rnd) ((rnd) ? (double)(float)at_bcast_int(in[k], od.ndim, od.shape, i) : at_bcast(in[k], od.ndim, od.shape, i))
    for (int64_t i = 0; i < n; i++) {
      double v;
      if ((f & TP_OPF_UNARY) && iout && int0) {
        uint64_t x = (uint64_t)at_bcast_int(in[0], od.ndim, od.shape, i);
        int neg = (int64_t)x < 0;
        put_int(y, i, op == TP_OP_NEG ? 0 - x : op == TP_OP_ABS ? (neg ? 0 - x : x) : (neg || !x ? 0 : x));
        continue;
      }
      if (op == TP_OP_WHERE && iout && int1 && int2) {
        int c = at_bcast(in[0], od.ndim, od.shape, i) != 0;
        put_int(y, i, (uint64_t)at_bcast_int(in[c ? 1 : 2], od.ndim, od.shape, i));
        continue;
      }
      if ((f & TP_OPF_BINARY) && int0 && int1 && (iout || od.dtype == TP_BOOL) && op != TP_OP_DIV) {
        int64_t a = at_bcast_int(in[0], od.ndim, od.shape, i), b = at_bcast_int(in[1], od.ndim, od.shape, i);
        uint64_t ua = (uint64_t)a, ub = (uint64_t)b;
        switch (op) {
          case TP_OP_ADD: put_int(y, i, ua + ub); break;
          case TP_OP_SUB: put_int(y, i, ua - ub); break;
          case TP_OP_MUL: put_int(y, i, ua * ub); break;
          case TP_OP_EQ: put_int(y, i, a == b); break;
          case TP_OP_LT: put_int(y, i, a < b); break;
          default: put_int(y, i, a > b); break;
        }
        continue;
      }
      if (f & TP_OPF_UNARY) v = unary_ref(op, OPND(0, rnd0), attrs->approximate);
      else if (op == TP_OP_WHERE)
        v = at_bcast(in[0], od.ndim, od.shape, i) != 0 ? at_bcast(in[1], od.ndim, od.shape, i)
                                                       : at_bcast(in[2], od.ndim, od.shape, i);
      else v = binary_ref(op, OPND(0, rnd0), OPND(1, rnd1));
      put(y, i, v);
    }
#undef OPND
  } else if (op == TP_OP_MATMUL || op == TP_OP_LINEAR) {
    const tp_tensor *a = in[0], *b = in[1];
    int64_t K = a->shape[a->ndim - 1];
    int64_t N = op == TP_OP_LINEAR ? b->shape[0] : (b->ndim == 1 ? 1 : b->shape[b->ndim - 1]);
    int64_t M = (a->ndim >= 2) ? a->shape[a->ndim - 2] : 1;
    int64_t batch = (M != 0 && N != 0) ? n / (M * N) : 0;
    for (int64_t bi = 0; bi < batch; bi++)
      for (int64_t m = 0; m < M; m++)
        for (int64_t j = 0; j < N; j++) {
          double s = op == TP_OP_LINEAR && in[2] ? tp_tensor_get_f64(in[2], j) : 0.0;
          for (int64_t k = 0; k < K; k++) {
            double av, bv;
            if (op == TP_OP_LINEAR) {
              av = tp_tensor_get_f64(a, (bi * M + m) * K + k);
              bv = tp_tensor_get_f64(b, j * K + k);
            } else {
              /* decompose bi over the broadcast batch dims of a and b */
              int nb = od.ndim - (a->ndim >= 2) - (b->ndim >= 2);
              int64_t ai = 0, bidx = 0, rem = bi, amul = 1, bmul = 1;
              int an = a->ndim >= 2 ? a->ndim - 2 : 0, bn = b->ndim >= 2 ? b->ndim - 2 : 0;
              for (int d = nb - 1; d >= 0; d--) {
                int64_t c = rem % od.shape[d];
                rem /= od.shape[d];
                int da = d - (nb - an), db = d - (nb - bn);
                if (da >= 0) {
                  ai += (a->shape[da] == 1 ? 0 : c) * amul;
                  amul *= a->shape[da];
                }
                if (db >= 0) {
                  bidx += (b->shape[db] == 1 ? 0 : c) * bmul;
                  bmul *= b->shape[db];
                }
              }
              av = tp_tensor_get_f64(a, (ai * M + m) * K + k);
              bv = b->ndim == 1 ? tp_tensor_get_f64(b, k) : tp_tensor_get_f64(b, (bidx * K + k) * N + j);
            }
            s += av * bv;
          }
          put(y, (bi * M + m) * N + j, s);
        }
  } else if (f & TP_OPF_REDUCE) {
    int mask[TP_MAX_DIMS] = {0};
    const tp_tensor *x = in[0];
    for (int d = 0; d < x->ndim; d++) mask[d] = attrs->nints == 0;
    for (int i = 0; i < attrs->nints; i++) {
      int64_t d;
      TP_TRY(tp_norm_dim(tp_op_name(op), attrs->ints[i], x->ndim, &d));
      if (x->ndim) mask[d] = 1;
    }
    double *acc = tp_alloc(sizeof(double) * (size_t)(n ? n : 1));
    int64_t *cnt = tp_alloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!acc || !cnt) {
      tp_free(acc);
      tp_free(cnt);
      tp_tensor_release(y);
      return TP_ERR_OUT_OF_MEMORY;
    }
    for (int64_t i = 0; i < n; i++) cnt[i] = 0, acc[i] = 0;
    int64_t xn = tp_tensor_numel(x);
    for (int64_t i = 0; i < xn; i++) {
      /* output index: drop reduced coordinates */
      int64_t rem = i, oi = 0, mul = 1;
      for (int d = x->ndim - 1; d >= 0; d--) {
        int64_t c = rem % x->shape[d];
        rem /= x->shape[d];
        if (!mask[d]) {
          oi += c * mul;
          mul *= x->shape[d];
        }
      }
      double v = tp_tensor_get_f64(x, i);
      if (op == TP_OP_SUM || op == TP_OP_MEAN) acc[oi] += v;
      else if (cnt[oi] == 0 || v != v || (op == TP_OP_MAX ? v > acc[oi] : v < acc[oi])) {
        if (acc[oi] == acc[oi] || cnt[oi] == 0) acc[oi] = v;
      }
      cnt[oi]++;
    }
    for (int64_t i = 0; i < n; i++) put(y, i, op == TP_OP_MEAN ? acc[i] / (double)cnt[i] : acc[i]);
    tp_free(acc);
    tp_free(cnt);
  } else if (op == TP_OP_ARGTOPK) {
    /* an element's place = how many elements rank before it; the first k places */
    const tp_tensor *x = in[0];
    int64_t d;
    TP_TRY(tp_norm_dim(tp_op_name(op), attrs->dim, x->ndim, &d));
    int64_t len = x->shape[d], k = attrs->k, inner = tp_shape_numel(x->ndim - (int)d - 1, x->shape + d + 1);
    int64_t outer = tp_shape_numel((int)d, x->shape);
    for (int64_t o = 0; o < outer; o++)
      for (int64_t q = 0; q < inner; q++)
        for (int64_t j = 0; j < len; j++) {
          double v = tp_tensor_get_f64(x, (o * len + j) * inner + q);
          int64_t place = 0;
          for (int64_t t = 0; t < len; t++) {
            double u = tp_tensor_get_f64(x, (o * len + t) * inner + q);
            int vn = v != v, un2 = u != u, before;
            if (vn != un2) before = attrs->largest ? un2 : vn;
            else if (!vn && u != v) before = attrs->largest ? u > v : u < v;
            else before = t < j;
            place += before;
          }
          if (place < k) put(y, (o * k + place) * inner + q, (double)j);
        }
  } else if (op == TP_OP_GATHER_ND) {
    const tp_tensor *x = in[0], *ix = in[1];
    int64_t b = attrs->dim, k = ix->shape[ix->ndim - 1];
    int64_t slice = tp_shape_numel(x->ndim - (int)(b + k), x->shape + b + k);
    for (int64_t i = 0; i < n; i++) {
      int64_t j = i / slice, within = i % slice, tuples = tp_shape_numel(ix->ndim - 1, ix->shape);
      int64_t per = tuples / (tp_shape_numel((int)b, x->shape) ? tp_shape_numel((int)b, x->shape) : 1), bi = per ? j / per : 0;
      int64_t pos = bi;
      for (int64_t c = 0; c < k; c++) {
        double v = tp_tensor_get_f64(ix, j * k + c);
        int64_t dn = x->shape[b + c];
        if (v < -(double)dn || v >= (double)dn) {
          tp_tensor_release(y);
          return tp_fail(TP_ERR_INVALID_ARG, "gather_nd: index %.0f is out of range", v);
        }
        pos = pos * dn + (v < 0 ? (int64_t)v + dn : (int64_t)v);
      }
      put(y, i, tp_tensor_get_f64(x, pos * slice + within));
    }
  } else if (op == TP_OP_SCATTER_ELEMENTS || op == TP_OP_SCATTER_ND) {
    /* y = x; then each update, in order, at its destination (double) */
    const tp_tensor *x = in[0], *ix = in[1], *u = in[2];
    for (int64_t i = 0; i < n; i++) put(y, i, tp_tensor_get_f64(x, i));
    int64_t un = tp_tensor_numel(u), k = op == TP_OP_SCATTER_ND ? ix->shape[ix->ndim - 1] : 0;
    int64_t slice = op == TP_OP_SCATTER_ND ? tp_shape_numel(x->ndim - (int)k, x->shape + k) : 1, d = 0;
    if (op == TP_OP_SCATTER_ELEMENTS) TP_TRY(tp_norm_dim(tp_op_name(op), attrs->dim, x->ndim, &d));
    for (int64_t e = 0; e < un; e++) {
      int64_t c[TP_MAX_DIMS], rem = e, dst = 0;
      for (int q = u->ndim - 1; q >= 0; q--) c[q] = rem % u->shape[q], rem /= u->shape[q];
      if (op == TP_OP_SCATTER_ELEMENTS) {
        double v = tp_tensor_get_f64(ix, e);
        if (v < -(double)x->shape[d] || v >= (double)x->shape[d]) {
          tp_tensor_release(y);
          return tp_fail(TP_ERR_INVALID_ARG, "%s: index %.0f is out of range", tp_op_name(op), v);
        }
        c[d] = v < 0 ? (int64_t)v + x->shape[d] : (int64_t)v;
        for (int q = 0; q < x->ndim; q++) dst = dst * x->shape[q] + c[q];
      } else {
        int64_t j = e / slice, within = e % slice;
        for (int64_t q = 0; q < k; q++) {
          double v = tp_tensor_get_f64(ix, j * k + q);
          if (v < -(double)x->shape[q] || v >= (double)x->shape[q]) {
            tp_tensor_release(y);
            return tp_fail(TP_ERR_INVALID_ARG, "%s: index %.0f is out of range", tp_op_name(op), v);
          }
          dst = dst * x->shape[q] + (v < 0 ? (int64_t)v + x->shape[q] : (int64_t)v);
        }
        dst = dst * slice + within;
      }
      double old = tp_tensor_get_f64(y, dst), v = tp_tensor_get_f64(u, e);
      int r = attrs->reduction;
      put(y, dst, r == 0 ? v : r == 1 ? old + v : r == 2 ? old * v : r == 3 ? (old > v ? old : v) : (old < v ? old : v));
    }
  } else if (op == TP_OP_GATHER || op == TP_OP_GATHER_ELEMENTS) {
    /* per output element: its multi-index, the index it reads, the source */
    const tp_tensor *x = in[0], *ix = in[1];
    int64_t d;
    TP_TRY(tp_norm_dim(tp_op_name(op), attrs->dim, x->ndim, &d));
    int64_t dn = x->shape[d];
    /* every index is checked, also those no output element reads (an
     * empty output): an out-of-range index is an error, as in eager */
    for (int64_t i = 0, ni = tp_tensor_numel(ix); i < ni; i++) {
      double raw = tp_tensor_get_f64(ix, i);
      if (raw < (double)-dn || raw >= (double)dn) {
        tp_tensor_release(y);
        return tp_fail(TP_ERR_INVALID_ARG, "%s: index %.0f is out of range for dim %lld of size %lld", tp_op_name(op),
                       raw, (long long)d, (long long)dn);
      }
    }
    for (int64_t i = 0; i < n; i++) {
      int64_t c[TP_MAX_DIMS], rem = i;
      for (int k = od.ndim - 1; k >= 0; k--) c[k] = rem % od.shape[k], rem /= od.shape[k];
      int64_t src[TP_MAX_DIMS], pos = 0, ii = 0;
      double raw;
      if (op == TP_OP_GATHER) { /* c = x[:d] + ix dims + x[d+1:] */
        for (int k = 0; k < ix->ndim; k++) ii = ii * ix->shape[k] + c[d + k];
        raw = tp_tensor_get_f64(ix, ii);
        for (int k = 0; k < x->ndim; k++) src[k] = k < d ? c[k] : k == d ? 0 : c[k - 1 + ix->ndim];
      } else {
        raw = tp_tensor_get_f64(ix, i);
        for (int k = 0; k < x->ndim; k++) src[k] = c[k];
      }
      if (raw < (double)-dn || raw >= (double)dn) {
        tp_tensor_release(y);
        return tp_fail(TP_ERR_INVALID_ARG, "%s: index %.0f is out of range for dim %lld of size %lld", tp_op_name(op),
                       raw, (long long)d, (long long)dn);
      }
      src[d] = raw < 0 ? (int64_t)raw + dn : (int64_t)raw;
      for (int k = 0; k < x->ndim; k++) pos = pos * x->shape[k] + src[k];
      put(y, i, tp_tensor_get_f64(x, pos));
    }
  } else if (op == TP_OP_SOFTMAX || op == TP_OP_LOG_SOFTMAX || op == TP_OP_LAYER_NORM) {
    const tp_tensor *x = in[0];
    int64_t inner = 1, R;
    if (op == TP_OP_LAYER_NORM) {
      R = tp_shape_numel(attrs->nints, attrs->ints);
    } else {
      int64_t d;
      TP_TRY(tp_norm_dim(tp_op_name(op), attrs->dim, x->ndim, &d));
      R = x->ndim ? x->shape[d] : 1;
      for (int k = (int)d + 1; k < x->ndim; k++) inner *= x->shape[k];
    }
    int64_t groups = R ? n / R : 0;
    for (int64_t g = 0; g < groups; g++) {
      int64_t base = (g / inner) * R * inner + g % inner;
#define IDX(j) (base + (j) * inner)
      if (op == TP_OP_LAYER_NORM) {
        double mean = 0, var = 0;
        for (int64_t j = 0; j < R; j++) mean += tp_tensor_get_f64(x, IDX(j));
        mean /= (double)R;
        for (int64_t j = 0; j < R; j++) {
          double c = tp_tensor_get_f64(x, IDX(j)) - mean;
          var += c * c;
        }
        var /= (double)R;
        for (int64_t j = 0; j < R; j++) {
          double v = (tp_tensor_get_f64(x, IDX(j)) - mean) / sqrt(var + attrs->eps);
          if (in[1]) v *= tp_tensor_get_f64(in[1], j);
          if (in[2]) v += tp_tensor_get_f64(in[2], j);
          put(y, IDX(j), v);
        }
      } else {
        double m = -INFINITY, s = 0;
        for (int64_t j = 0; j < R; j++) m = fmax(m, tp_tensor_get_f64(x, IDX(j)));
        if (m == -INFINITY) m = 0;
        for (int64_t j = 0; j < R; j++) s += exp(tp_tensor_get_f64(x, IDX(j)) - m);
        for (int64_t j = 0; j < R; j++) {
          double v = tp_tensor_get_f64(x, IDX(j)) - m;
          put(y, IDX(j), op == TP_OP_SOFTMAX ? exp(v) / s : v - log(s));
        }
      }
#undef IDX
    }
  } else if (op == TP_OP_CONV2D) {
    /* the definition: y[n,m,i,j] = b[m] + sum over c in m's group, kh, kw of
     * x[n, c, i*sh - pt + kh*dh, j*sw - pl + kw*dw] * w[m, c - group start, kh, kw] */
    tp_conv2d_geom g;
    tp_desc dx, dw;
    tp_desc_of(in[0], &dx);
    tp_desc_of(in[1], &dw);
    TP_TRY(tp_conv2d_geometry(&dx, &dw, attrs, &g));
    int64_t Cg = g.C / g.G, Mg = g.M / g.G, o = 0;
    for (int64_t nn = 0; nn < g.N; nn++)
      for (int64_t m = 0; m < g.M; m++)
        for (int64_t i = 0; i < g.OH; i++)
          for (int64_t j = 0; j < g.OW; j++) {
            double acc = in[2] ? tp_tensor_get_f64(in[2], m) : 0;
            for (int64_t c = 0; c < Cg; c++)
              for (int64_t kh = 0; kh < g.KH; kh++)
                for (int64_t kw = 0; kw < g.KW; kw++) {
                  int64_t ih = i * g.sh - g.pt + kh * g.dh, iw = j * g.sw - g.pl + kw * g.dw;
                  if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
                  int64_t cx = (m / Mg) * Cg + c;
                  acc += tp_tensor_get_f64(in[0], ((nn * g.C + cx) * g.H + ih) * g.W + iw) *
                         tp_tensor_get_f64(in[1], ((m * Cg + c) * g.KH + kh) * g.KW + kw);
                }
            put(y, o++, acc);
          }
  } else if (op == TP_OP_MAX_POOL2D || op == TP_OP_AVG_POOL2D) {
    tp_conv2d_geom g;
    tp_desc dx;
    tp_desc_of(in[0], &dx);
    TP_TRY(tp_pool2d_geometry(op, &dx, attrs, &g));
    int64_t o = 0;
    for (int64_t nc = 0; nc < g.N * g.C; nc++)
      for (int64_t i = 0; i < g.OH; i++)
        for (int64_t j = 0; j < g.OW; j++) {
          double acc = op == TP_OP_MAX_POOL2D ? -INFINITY : 0;
          int64_t cnt = 0;
          for (int64_t kh = 0; kh < g.KH; kh++)
            for (int64_t kw = 0; kw < g.KW; kw++) {
              int64_t ih = i * g.sh - g.pt + kh, iw = j * g.sw - g.pl + kw;
              if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) continue;
              double v = tp_tensor_get_f64(in[0], (nc * g.H + ih) * g.W + iw);
              if (op == TP_OP_AVG_POOL2D) acc += v;
              else if (acc == acc && !(v <= acc)) acc = v; /* larger, or NaN (which then stays) */
              cnt++;
            }
          if (op == TP_OP_AVG_POOL2D) acc /= (double)(attrs->dim ? g.KH * g.KW : cnt);
          put(y, o++, acc);
        }
  } else {
    tp_tensor_release(y);
    return tp_fail(TP_ERR_INTERNAL, "%s: no reference kernel", tp_op_name(op));
  }
  *out = y;
  return TP_OK;
}
