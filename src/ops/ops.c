/* ops.c - the operator table (expanded from ops.def), shape and dtype rules,
 * and tp_op_call: the one entry point every operator goes through
 * (validate -> observer check -> infer -> execute -> observer record). */
#include "ops.h"
#include "autograd.h"
#include <stdio.h>

typedef tp_status (*shape_fn)(tp_op op, int nin, const tp_desc *const *in,
                              const tp_attrs *a, tp_desc *out);

#define SHAPE_RULES(X)                                                                  \
  X(shape_binary) X(shape_where) X(shape_unary) X(shape_matmul) X(shape_linear)         \
  X(shape_reduce) X(shape_softmax) X(shape_layer_norm) X(shape_reshape)                 \
  X(shape_transpose) X(shape_permute) X(shape_slice) X(shape_concat) X(shape_cast) X(shape_gather) X(shape_gather_elements) X(shape_recurrent) X(shape_scatter) X(shape_gather_nd) X(shape_argtopk) X(shape_opaque) X(shape_conv2d) X(shape_pool2d) X(shape_int) X(shape_det) X(shape_grid_sample) X(shape_roi_align) X(shape_quant) X(shape_qmatmul) X(shape_conv2d_int) X(shape_qconv2d)
#define DECL(f) static tp_status f(tp_op, int, const tp_desc *const *, const tp_attrs *, tp_desc *);
SHAPE_RULES(DECL)
#undef DECL

static const struct {
  const char *name;
  int arity, flags;
  shape_fn shape;
} op_table[TP_OP_COUNT] = {
#define TP_OP(id, name, nin, flags, shape) {name, nin, flags, shape},
#include "ops.def"
#undef TP_OP
};

const char *tp_op_name(tp_op op) {
  return (unsigned)op < TP_OP_COUNT ? op_table[op].name : "unknown_op";
}
int tp_op_arity(tp_op op) { return (unsigned)op < TP_OP_COUNT ? op_table[op].arity : 0; }
int tp_op_flags(tp_op op) { return (unsigned)op < TP_OP_COUNT ? op_table[op].flags : 0; }

tp_status tp_op_lookup(const char *name, tp_op *out) {
  for (int i = 0; name && i < TP_OP_COUNT; i++)
    if (!strcmp(name, op_table[i].name)) {
      *out = (tp_op)i;
      return TP_OK;
    }
  return tp_fail(TP_ERR_INVALID_ARG, "unknown operator '%s'", name ? name : "(null)");
}

void tp_attrs_init(tp_attrs *a) {
  memset(a, 0, sizeof *a);
  a->end = INT64_MAX;
  a->step = 1;
  a->eps = 1e-5;
  a->dtype = TP_F32;
}

int tp_attrs_equal(tp_op op, const tp_attrs *a, const tp_attrs *b) {
  (void)op;
  if (a->nints != b->nints || a->nfloats != b->nfloats) return 0;
  for (int i = 0; i < a->nints; i++)
    if (a->ints[i] != b->ints[i]) return 0;
  for (int i = 0; i < a->nfloats && i < TP_MAX_FLOATS; i++)
    if (a->floats[i] != b->floats[i]) return 0;
  return a->dim == b->dim && a->dim1 == b->dim1 && a->start == b->start && a->end == b->end &&
         a->step == b->step && (a->eps == b->eps || (a->eps != a->eps && b->eps != b->eps)) && a->clip == b->clip &&
         a->keepdim == b->keepdim && a->approximate == b->approximate && a->dtype == b->dtype;
}

/* ---- helpers ---- */
#define SHAPE(d, buf) tp_shape_str((d)->ndim, (d)->shape, buf, sizeof buf)

tp_status tp_norm_dim(const char *op, int64_t dim, int ndim, int64_t *out) {
  int64_t n = ndim ? ndim : 1;
  if (dim < -n || dim >= n)
    return tp_fail(TP_ERR_INVALID_ARG,
                   "%s: dim %lld is out of range for a tensor with %d dims (expected %lld..%lld)",
                   op, (long long)dim, ndim, (long long)-n, (long long)(n - 1));
  *out = dim < 0 ? dim + n : dim;
  return TP_OK;
}

static int rank(tp_dtype d) { return d == TP_BOOL ? 0 : d == TP_I32 ? 1 : d == TP_I64 ? 2 : 3; }

tp_dtype tp_promote(const tp_desc *a, const tp_desc *b) {
  if (a->weak && b->weak) return (a->weak == 2 || b->weak == 2) ? TP_F32 : TP_I64;
  if (a->weak || b->weak) {
    const tp_desc *w = a->weak ? a : b, *s = a->weak ? b : a;
    if (w->weak == 2 && s->dtype != TP_F32) return TP_F32;
    if (w->weak == 1 && s->dtype == TP_BOOL) return TP_I64;
    return s->dtype;
  }
  return rank(a->dtype) >= rank(b->dtype) ? a->dtype : b->dtype;
}

static tp_status broadcast(const char *op, int n, const tp_desc *const *in, tp_desc *out) {
  int nd = 0;
  for (int i = 0; i < n; i++)
    if (in[i]->ndim > nd) nd = in[i]->ndim;
  out->ndim = nd;
  for (int d = 0; d < nd; d++) {
    int64_t s = 1;
    for (int i = 0; i < n; i++) {
      int k = d - (nd - in[i]->ndim);
      if (k < 0) continue;
      int64_t v = in[i]->shape[k];
      if (v == s || v == 1) continue;
      if (s != 1) {
        char b0[96], b1[96];
        return tp_fail(TP_ERR_INVALID_ARG,
                       "%s: shapes %s and %s cannot be broadcast (dim %d: %lld vs %lld)", op,
                       SHAPE(in[0], b0), SHAPE(in[i], b1), d, (long long)s, (long long)v);
      }
      s = v;
    }
    out->shape[d] = s;
  }
  return TP_OK;
}

static tp_status no_bool(tp_op op, tp_dtype d) {
  if (d == TP_BOOL)
    return tp_fail(TP_ERR_INVALID_ARG, "%s: not supported for bool tensors (cast first)",
                   tp_op_name(op));
  return TP_OK;
}

/* ---- shape rules ---- */
static tp_status shape_binary(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *a,
                              tp_desc *out) {
  (void)nin;
  (void)a;
  TP_TRY(broadcast(tp_op_name(op), 2, in, out));
  tp_dtype d = tp_promote(in[0], in[1]);
  int f = tp_op_flags(op);
  if (!(f & TP_OPF_BOOL_OUT)) TP_TRY(no_bool(op, d));
  if (f & TP_OPF_FLOAT_OUT) d = TP_F32;
  out->dtype = (f & TP_OPF_BOOL_OUT) ? TP_BOOL : d;
  return TP_OK;
}

/* mod, fmod, bitwise_*: broadcast int32 / int64 operands (intops.c). */
static tp_status shape_int(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *a, tp_desc *out) {
  (void)a;
  if (nin == 2) {
    TP_TRY(broadcast(tp_op_name(op), 2, in, out));
    out->dtype = tp_promote(in[0], in[1]);
  } else {
    *out = *in[0];
  }
  out->weak = 0;
  for (int i = 0; i < nin; i++)
    if (in[i]->dtype != TP_I32 && in[i]->dtype != TP_I64 && !in[i]->weak)
      return tp_fail(TP_ERR_INVALID_ARG, "%s: operand %d has dtype %s; int32 or int64 is required",
                     tp_op_name(op), i, tp_dtype_name(in[i]->dtype));
  if (out->dtype != TP_I32 && out->dtype != TP_I64)
    return tp_fail(TP_ERR_INVALID_ARG, "%s: the operands promote to %s; int32 or int64 is required", tp_op_name(op),
                   tp_dtype_name(out->dtype));
  return TP_OK;
}

/* det: [..., n, n] float32 -> [...]. */
static tp_status shape_det(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *a, tp_desc *out) {
  (void)nin, (void)a;
  const tp_desc *x = in[0];
  char b0[96];
  if (x->dtype != TP_F32)
    return tp_fail(TP_ERR_INVALID_ARG, "%s: x has dtype %s, expected float32", tp_op_name(op), tp_dtype_name(x->dtype));
  if (x->ndim < 2 || x->shape[x->ndim - 1] != x->shape[x->ndim - 2])
    return tp_fail(TP_ERR_INVALID_ARG, "%s: x must be [..., n, n] (square matrices), got %s", tp_op_name(op),
                   SHAPE(x, b0));
  *out = *x;
  out->weak = 0;
  out->ndim = x->ndim - 2;
  return TP_OK;
}

static tp_status shape_where(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *a,
                             tp_desc *out) {
  (void)nin;
  (void)a;
  TP_TRY(broadcast(tp_op_name(op), 3, in, out));
  out->dtype = tp_promote(in[1], in[2]);
  return TP_OK;
}

static tp_status shape_unary(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *a,
                             tp_desc *out) {
  (void)nin;
  *out = *in[0];
  out->weak = 0;
  TP_TRY(no_bool(op, in[0]->dtype));
  if (tp_op_flags(op) & TP_OPF_FLOAT_OUT) out->dtype = TP_F32;
  if (op == TP_OP_GELU && a->approximate != 0 && a->approximate != 1)
    return tp_fail(TP_ERR_INVALID_ARG, "gelu: approximate must be 'none' or 'tanh'");
  return TP_OK;
}

static tp_status need_f32(tp_op op, const tp_desc *d, const char *which) {
  if (d->dtype != TP_F32)
    return tp_fail(TP_ERR_INVALID_ARG, "%s: %s has dtype %s, expected float32",
                   tp_op_name(op), which, tp_dtype_name(d->dtype));
  return TP_OK;
}

static tp_status shape_matmul(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *at,
                              tp_desc *out) {
  (void)at;
  if (op == TP_OP_MATMUL_INT && (nin < 2 || nin > 4 || !in[1]))
    return tp_fail(TP_ERR_INVALID_ARG, "matmul_int: expected 2 to 4 operands (a, b, a_zero_point, b_zero_point), got %d%s",
                   nin, nin >= 2 ? " with b missing" : "");
  const tp_desc *a = in[0], *b = in[1];
  char b0[96], b1[96];
  if (a->ndim == 0 || b->ndim == 0)
    return tp_fail(TP_ERR_INVALID_ARG, "matmul: operands must have at least 1 dim (a: %s, b: %s)",
                   SHAPE(a, b0), SHAPE(b, b1));
  if (op == TP_OP_MATMUL_INT) { /* int8 / uint8 / int32 operands, int32 result */
    for (int i = 0; i < 2; i++) {
      tp_dtype d = in[i]->dtype;
      if (d != TP_I8 && d != TP_U8 && d != TP_I32)
        return tp_fail(TP_ERR_INVALID_ARG, "matmul_int: %s has dtype %s, expected int8, uint8 or int32", i ? "b" : "a",
                       tp_dtype_name(d));
    }
    for (int i = 2; i < nin; i++) { /* zero points: the operand's dtype; per tensor, per row of a, per column of b */
      const tp_desc *z = in[i], *x = in[i - 2];
      if (!z) continue;
      const char *zn = i == 2 ? "a_zero_point" : "b_zero_point";
      if (z->dtype != x->dtype)
        return tp_fail(TP_ERR_INVALID_ARG, "matmul_int: %s has dtype %s, %s %s; they must match", zn,
                       tp_dtype_name(z->dtype), i == 2 ? "a" : "b", tp_dtype_name(x->dtype));
      int64_t nz = tp_shape_numel(z->ndim, z->shape);
      if (nz == 1) continue;
      int64_t want = i == 2 ? (a->ndim >= 2 ? a->shape[a->ndim - 2] : 1) : (b->ndim >= 2 ? b->shape[b->ndim - 1] : 1);
      int ok = nz == want && (z->ndim == 1 || (z->ndim == 2 && z->shape[i == 2 ? 1 : 0] == 1));
      if (!ok)
        return tp_fail(TP_ERR_INVALID_ARG,
                       "matmul_int: %s has shape %s; one value or one per %s (%lld: [%lld] or %s) is supported", zn,
                       SHAPE(z, b0), i == 2 ? "row of a" : "column of b", (long long)want, (long long)want,
                       i == 2 ? "[M,1]" : "[1,N]");
    }
  } else {
    TP_TRY(need_f32(op, a, "a"));
    TP_TRY(need_f32(op, b, "b"));
  }
  int64_t K = a->shape[a->ndim - 1];
  int64_t Kb = b->ndim == 1 ? b->shape[0] : b->shape[b->ndim - 2];
  if (K != Kb)
    return tp_fail(TP_ERR_INVALID_ARG, "matmul: inner dimensions differ (a: %s, b: %s)",
                   SHAPE(a, b0), SHAPE(b, b1));
  tp_desc ba = *a, bb = *b; /* batch parts */
  ba.ndim = a->ndim >= 2 ? a->ndim - 2 : 0;
  bb.ndim = b->ndim >= 2 ? b->ndim - 2 : 0;
  const tp_desc *bd[2] = {&ba, &bb};
  tp_desc o;
  memset(&o, 0, sizeof o);
  if (broadcast("matmul", 2, bd, &o) != TP_OK)
    return tp_fail(TP_ERR_INVALID_ARG, "matmul: batch dimensions cannot be broadcast (a: %s, b: %s)",
                   SHAPE(a, b0), SHAPE(b, b1));
  if (a->ndim >= 2) o.shape[o.ndim++] = a->shape[a->ndim - 2];
  if (b->ndim >= 2) o.shape[o.ndim++] = b->shape[b->ndim - 1];
  o.dtype = op == TP_OP_MATMUL_INT ? TP_I32 : TP_F32;
  *out = o;
  return TP_OK;
}

/* qmatmul (ops.def): operand k must be present (or not) with one of the
 * dtypes and numel 1 or n1 elements (n1 > 0), else an error naming it. */
static tp_status qmm_operand_of(tp_op op, const tp_desc *const *in, int k, const char *name, int need, tp_dtype d0,
                                tp_dtype d1, int64_t n1) {
  const tp_desc *x = in[k];
  const char *nm = tp_op_name(op);
  char b0[96];
  if (!x) return need ? tp_fail(TP_ERR_INVALID_ARG, "%s: %s is missing", nm, name) : TP_OK;
  if (x->dtype != d0 && x->dtype != d1)
    return tp_fail(TP_ERR_INVALID_ARG, "%s: %s has dtype %s, expected %s%s%s", nm, name, tp_dtype_name(x->dtype),
                   tp_dtype_name(d0), d1 != d0 ? " or " : "", d1 != d0 ? tp_dtype_name(d1) : "");
  int64_t n = tp_shape_numel(x->ndim, x->shape);
  int conv = op == TP_OP_QCONV2D; /* per output channel: [M] */
  if (n != 1 && !(n1 > 0 && n == n1 && x->ndim >= 1 && x->shape[x->ndim - 1] == n1 && (!conv || x->ndim == 1)))
    return tp_fail(TP_ERR_INVALID_ARG, "%s: %s has shape %s; one value%s is supported", nm, name, SHAPE(x, b0),
                   n1 > 0 ? (conv ? " or one per output channel ([M])" : " or one per column of b") : "");
  return TP_OK;
}
#define qmm_operand(in, k, name, need, d0, d1, n1) qmm_operand_of(TP_OP_QMATMUL, in, k, name, need, d0, d1, n1)

static tp_status shape_qmatmul(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *at, tp_desc *out) {
  (void)op, (void)nin, (void)at;
  const tp_desc *a = in[0], *b = in[1];
  char b0[96], b1[96];
  if (!b) return tp_fail(TP_ERR_INVALID_ARG, "qmatmul: b is missing");
  for (int i = 0; i < 2; i++)
    if (in[i]->dtype != TP_I8 && in[i]->dtype != TP_U8)
      return tp_fail(TP_ERR_INVALID_ARG, "qmatmul: %s has dtype %s, expected int8 or uint8", i ? "b" : "a",
                     tp_dtype_name(in[i]->dtype));
  if (a->ndim < 1 || b->ndim != 2 || a->shape[a->ndim - 1] != b->shape[0])
    return tp_fail(TP_ERR_INVALID_ARG, "qmatmul: a %s and b %s do not make a matmul with a 2-D b", SHAPE(a, b0),
                   SHAPE(b, b1));
  int64_t N = b->shape[1];
  TP_TRY(qmm_operand(in, 2, "a_zero_point", 0, a->dtype, a->dtype, 0));
  TP_TRY(qmm_operand(in, 3, "b_zero_point", 0, b->dtype, b->dtype, N));
  TP_TRY(qmm_operand(in, 4, "a_scale", 1, TP_F32, TP_F32, 0));
  TP_TRY(qmm_operand(in, 5, "b_scale", 1, TP_F32, TP_F32, N));
  TP_TRY(qmm_operand(in, 6, "bias", 0, TP_F32, TP_F32, N));
  if (in[6] && tp_shape_numel(in[6]->ndim, in[6]->shape) != N)
    return tp_fail(TP_ERR_INVALID_ARG, "qmatmul: bias has shape %s; one value per column of b (%lld) is needed",
                   SHAPE(in[6], b0), (long long)N);
  if (!in[7] != !in[8])
    return tp_fail(TP_ERR_INVALID_ARG, "qmatmul: y_scale and y_zero_point come together (a quantized output)");
  TP_TRY(qmm_operand(in, 7, "y_scale", 0, TP_F32, TP_F32, 0));
  TP_TRY(qmm_operand(in, 8, "y_zero_point", 0, TP_U8, TP_I8, 0));
  if (in[6] && in[7]) return tp_fail(TP_ERR_INVALID_ARG, "qmatmul: a float bias needs a float output (no y_scale)");
  memset(out, 0, sizeof *out);
  out->ndim = a->ndim;
  memcpy(out->shape, a->shape, sizeof(int64_t) * (size_t)a->ndim);
  out->shape[a->ndim - 1] = N;
  out->dtype = in[8] ? in[8]->dtype : TP_F32;
  return TP_OK;
}

static tp_status shape_linear(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *at,
                              tp_desc *out) {
  (void)nin;
  (void)at;
  const tp_desc *x = in[0], *w = in[1], *b = in[2];
  char b0[96], b1[96];
  if (!w) return tp_fail(TP_ERR_INVALID_ARG, "linear: weight is required");
  TP_TRY(need_f32(op, x, "input"));
  TP_TRY(need_f32(op, w, "weight"));
  if (x->ndim < 1 || w->ndim != 2 || x->shape[x->ndim - 1] != w->shape[1])
    return tp_fail(TP_ERR_INVALID_ARG,
                   "linear: input %s does not match weight %s (expected [..., in] and [out, in])",
                   SHAPE(x, b0), SHAPE(w, b1));
  if (b) {
    TP_TRY(need_f32(op, b, "bias"));
    if (b->ndim != 1 || b->shape[0] != w->shape[0])
      return tp_fail(TP_ERR_INVALID_ARG, "linear: bias %s does not match weight %s (expected [%lld])",
                     SHAPE(b, b0), SHAPE(w, b1), (long long)w->shape[0]);
  }
  *out = *x;
  out->weak = 0;
  out->shape[x->ndim - 1] = w->shape[0];
  return TP_OK;
}

/* Reduced-dims mask from attrs (nints == 0: all dims). */
static tp_status reduce_mask(tp_op op, const tp_desc *x, const tp_attrs *a, int *mask) {
  memset(mask, 0, sizeof(int) * TP_MAX_DIMS);
  if (a->nints == 0) {
    for (int d = 0; d < x->ndim; d++) mask[d] = 1;
    return TP_OK;
  }
  for (int i = 0; i < a->nints; i++) {
    int64_t d;
    TP_TRY(tp_norm_dim(tp_op_name(op), a->ints[i], x->ndim, &d));
    if (x->ndim == 0) continue;
    if (mask[d])
      return tp_fail(TP_ERR_INVALID_ARG, "%s: dim %lld appears more than once", tp_op_name(op),
                     (long long)a->ints[i]);
    mask[d] = 1;
  }
  return TP_OK;
}

static tp_status shape_reduce(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *a,
                              tp_desc *out) {
  (void)nin;
  const tp_desc *x = in[0];
  int mask[TP_MAX_DIMS];
  TP_TRY(reduce_mask(op, x, a, mask));
  memset(out, 0, sizeof *out);
  for (int d = 0; d < x->ndim; d++) {
    if (!mask[d]) out->shape[out->ndim++] = x->shape[d];
    else if (a->keepdim) out->shape[out->ndim++] = 1;
    if (mask[d] && x->shape[d] == 0 && (op == TP_OP_MAX || op == TP_OP_MIN))
      return tp_fail(TP_ERR_INVALID_ARG, "%s: cannot reduce over dim %d of size 0",
                     tp_op_name(op), d);
  }
  out->dtype = x->dtype;
  if (op == TP_OP_SUM && x->dtype != TP_F32) out->dtype = TP_I64;
  if (op == TP_OP_MEAN) out->dtype = TP_F32;
  return TP_OK;
}

static tp_status shape_softmax(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *a,
                               tp_desc *out) {
  (void)nin;
  int64_t d;
  TP_TRY(tp_norm_dim(tp_op_name(op), a->dim, in[0]->ndim, &d));
  TP_TRY(no_bool(op, in[0]->dtype));
  *out = *in[0];
  out->weak = 0;
  out->dtype = TP_F32;
  return TP_OK;
}

static tp_status shape_layer_norm(tp_op op, int nin, const tp_desc *const *in,
                                  const tp_attrs *a, tp_desc *out) {
  (void)nin;
  const tp_desc *x = in[0];
  char b0[96], b1[96];
  TP_TRY(need_f32(op, x, "input"));
  if (a->nints < 1 || a->nints > x->ndim)
    return tp_fail(TP_ERR_INVALID_ARG,
                   "layer_norm: normalized_shape has %d dims, input %s has %d (expected 1..%d)",
                   a->nints, SHAPE(x, b0), x->ndim, x->ndim);
  tp_desc ns;
  memset(&ns, 0, sizeof ns);
  ns.ndim = a->nints;
  memcpy(ns.shape, a->ints, sizeof(int64_t) * (size_t)a->nints);
  for (int i = 0; i < a->nints; i++)
    if (x->shape[x->ndim - a->nints + i] != a->ints[i])
      return tp_fail(TP_ERR_INVALID_ARG,
                     "layer_norm: normalized_shape %s does not match the last dims of input %s",
                     SHAPE(&ns, b0), SHAPE(x, b1));
  for (int k = 1; k <= 2; k++)
    if (in[k]) {
      TP_TRY(need_f32(op, in[k], k == 1 ? "weight" : "bias"));
      ns.dtype = in[k]->dtype;
      if (!tp_desc_equal(in[k], &ns))
        return tp_fail(TP_ERR_INVALID_ARG, "layer_norm: %s has shape %s, expected %s",
                       k == 1 ? "weight" : "bias", SHAPE(in[k], b0), SHAPE(&ns, b1));
    }
  if (!(a->eps >= 0))
    return tp_fail(TP_ERR_INVALID_ARG, "layer_norm: eps must be >= 0 (got %g)", a->eps);
  *out = *x;
  out->weak = 0;
  return TP_OK;
}

static tp_status shape_reshape(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *a,
                               tp_desc *out) {
  (void)op;
  (void)nin;
  const tp_desc *x = in[0];
  int64_t n = tp_shape_numel(x->ndim, x->shape), known = 1;
  int infer = -1, over = 0;
  char b0[96], b1[96];
  if (a->nints < 0 || a->nints > TP_MAX_DIMS)
    return tp_fail(TP_ERR_INVALID_ARG, "reshape: %d dims is out of range", a->nints);
  *out = *x;
  out->weak = 0;
  out->ndim = a->nints;
  for (int i = 0; i < a->nints; i++) {
    out->shape[i] = a->ints[i];
    if (a->ints[i] == -1) {
      if (infer >= 0) return tp_fail(TP_ERR_INVALID_ARG, "reshape: only one dim can be -1");
      infer = i;
    } else if (a->ints[i] < 0) {
      return tp_fail(TP_ERR_INVALID_ARG, "reshape: invalid size %lld at dim %d",
                     (long long)a->ints[i], i);
    } else if (__builtin_mul_overflow(known, a->ints[i], &known)) {
      over = 1; /* past int64: no tensor has that many elements (unless a later dim is 0) */
      known = INT64_MAX;
    } else if (known == 0) {
      over = 0;
    }
  }
  if (over && known) {
    return tp_fail(TP_ERR_INVALID_ARG, "reshape: cannot reshape %s (%lld elements) into %s",
                   SHAPE(x, b0), (long long)n, SHAPE(out, b1));
  }
  if (infer >= 0) {
    if (known == 0 || n % known)
      return tp_fail(TP_ERR_INVALID_ARG, "reshape: cannot reshape %s (%lld elements) into %s",
                     SHAPE(x, b0), (long long)n, SHAPE(out, b1));
    out->shape[infer] = n / known;
  } else if (known != n) {
    return tp_fail(TP_ERR_INVALID_ARG, "reshape: cannot reshape %s (%lld elements) into %s",
                   SHAPE(x, b0), (long long)n, SHAPE(out, b1));
  }
  return TP_OK;
}

static tp_status shape_transpose(tp_op op, int nin, const tp_desc *const *in,
                                 const tp_attrs *a, tp_desc *out) {
  (void)nin;
  int64_t d0, d1;
  TP_TRY(tp_norm_dim(tp_op_name(op), a->dim, in[0]->ndim, &d0));
  TP_TRY(tp_norm_dim(tp_op_name(op), a->dim1, in[0]->ndim, &d1));
  *out = *in[0];
  out->weak = 0;
  if (in[0]->ndim) {
    out->shape[d0] = in[0]->shape[d1];
    out->shape[d1] = in[0]->shape[d0];
  }
  return TP_OK;
}

static tp_status shape_permute(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *a,
                               tp_desc *out) {
  (void)nin;
  const tp_desc *x = in[0];
  int seen[TP_MAX_DIMS] = {0};
  if (a->nints != x->ndim)
    return tp_fail(TP_ERR_INVALID_ARG, "permute: got %d dims for a tensor with %d dims",
                   a->nints, x->ndim);
  *out = *x;
  out->weak = 0;
  for (int i = 0; i < a->nints; i++) {
    int64_t d;
    TP_TRY(tp_norm_dim(tp_op_name(op), a->ints[i], x->ndim, &d));
    if (seen[d])
      return tp_fail(TP_ERR_INVALID_ARG, "permute: dim %lld appears more than once",
                     (long long)a->ints[i]);
    seen[d] = 1;
    out->shape[i] = x->shape[d];
  }
  return TP_OK;
}

/* Python slice rules for a positive step: clamp start and end to [0, n]. */
void tp_slice_bounds(int64_t n, int64_t start, int64_t end, int64_t step, int64_t *s_out,
                     int64_t *len_out) {
  if (start < 0) start += n;
  if (end < 0) end += n;
  if (start < 0) start = 0;
  if (start > n) start = n;
  if (end < start) end = start;
  if (end > n) end = n;
  *s_out = start;
  int64_t span = end - start; /* 0 <= span <= n: no overflow below */
  *len_out = span == 0 ? 0 : 1 + (span - 1) / step;
}

static tp_status shape_slice(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *a,
                             tp_desc *out) {
  (void)nin;
  int64_t d, s, len;
  if (in[0]->ndim == 0) return tp_fail(TP_ERR_INVALID_ARG, "slice: cannot slice a 0-d tensor");
  TP_TRY(tp_norm_dim(tp_op_name(op), a->dim, in[0]->ndim, &d));
  if (a->step <= 0)
    return tp_fail(TP_ERR_INVALID_ARG, "slice: step must be positive (got %lld)",
                   (long long)a->step);
  tp_slice_bounds(in[0]->shape[d], a->start, a->end, a->step, &s, &len);
  *out = *in[0];
  out->weak = 0;
  out->shape[d] = len;
  return TP_OK;
}

static tp_status shape_concat(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *a,
                              tp_desc *out) {
  int64_t d;
  char b0[96], b1[96];
  if (nin < 1) return tp_fail(TP_ERR_INVALID_ARG, "concat: needs at least one tensor");
  if (in[0]->ndim == 0) return tp_fail(TP_ERR_INVALID_ARG, "concat: cannot concatenate 0-d tensors");
  TP_TRY(tp_norm_dim(tp_op_name(op), a->dim, in[0]->ndim, &d));
  *out = *in[0];
  out->weak = 0;
  out->shape[d] = 0;
  for (int i = 0; i < nin; i++) {
    int ok = in[i]->ndim == in[0]->ndim;
    for (int k = 0; ok && k < in[0]->ndim; k++)
      if (k != d && in[i]->shape[k] != in[0]->shape[k]) ok = 0;
    if (!ok)
      return tp_fail(TP_ERR_INVALID_ARG,
                     "concat: tensor %d has shape %s, incompatible with %s along dim %lld", i,
                     SHAPE(in[i], b0), SHAPE(in[0], b1), (long long)d);
    out->shape[d] += in[i]->shape[d];
    if (i) out->dtype = tp_promote(out, in[i]);
  }
  return TP_OK;
}

static int is_index_dtype(tp_dtype d) { return d == TP_I32 || d == TP_I64; }

static tp_status shape_gather(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *a,
                              tp_desc *out) {
  int64_t d;
  char b0[96], b1[96];
  (void)nin;
  if (in[0]->ndim == 0) return tp_fail(TP_ERR_INVALID_ARG, "gather: cannot index a 0-d tensor");
  if (!is_index_dtype(in[1]->dtype))
    return tp_fail(TP_ERR_INVALID_ARG, "gather: indices must be int32 or int64, got %s", tp_dtype_name(in[1]->dtype));
  TP_TRY(tp_norm_dim(tp_op_name(op), a->dim, in[0]->ndim, &d));
  int nd = in[0]->ndim - 1 + in[1]->ndim;
  if (nd > TP_MAX_DIMS)
    return tp_fail(TP_ERR_INVALID_ARG, "gather: x %s with indices %s gives %d dims (at most %d)", SHAPE(in[0], b0),
                   SHAPE(in[1], b1), nd, TP_MAX_DIMS);
  if (in[0]->shape[d] == 0 && tp_shape_numel(in[1]->ndim, in[1]->shape) > 0)
    return tp_fail(TP_ERR_INVALID_ARG, "gather: dim %lld of x %s is empty; no index is valid", (long long)d,
                   SHAPE(in[0], b0));
  memset(out, 0, sizeof *out);
  out->dtype = in[0]->dtype;
  out->ndim = nd;
  int k = 0;
  for (int i = 0; i < d; i++) out->shape[k++] = in[0]->shape[i];
  for (int i = 0; i < in[1]->ndim; i++) out->shape[k++] = in[1]->shape[i];
  for (int i = (int)d + 1; i < in[0]->ndim; i++) out->shape[k++] = in[0]->shape[i];
  return TP_OK;
}

static tp_status shape_gather_elements(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *a,
                                       tp_desc *out) {
  int64_t d;
  char b0[96], b1[96];
  (void)nin;
  if (!is_index_dtype(in[1]->dtype))
    return tp_fail(TP_ERR_INVALID_ARG, "gather_elements: indices must be int32 or int64, got %s",
                   tp_dtype_name(in[1]->dtype));
  if (in[0]->ndim == 0 || in[1]->ndim != in[0]->ndim)
    return tp_fail(TP_ERR_INVALID_ARG, "gather_elements: x %s and indices %s must have the same rank (at least 1)",
                   SHAPE(in[0], b0), SHAPE(in[1], b1));
  TP_TRY(tp_norm_dim(tp_op_name(op), a->dim, in[0]->ndim, &d));
  for (int i = 0; i < in[0]->ndim; i++)
    if (i != d && in[1]->shape[i] > in[0]->shape[i])
      return tp_fail(TP_ERR_INVALID_ARG, "gather_elements: indices %s exceed x %s in dim %d", SHAPE(in[1], b1),
                     SHAPE(in[0], b0), i);
  *out = *in[1];
  out->weak = 0;
  out->dtype = in[0]->dtype;
  return TP_OK;
}

/* gather_nd: indices [B..., M..., k] with B the batch_dims leading dims of
 * both; y = indices.shape[:-1] + x.shape[batch_dims + k:]. */
static tp_status shape_gather_nd(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *a,
                                 tp_desc *out) {
  const char *nm = tp_op_name(op);
  char b0[96], b1[96];
  (void)nin;
  const tp_desc *x = in[0], *ix = in[1];
  if (!is_index_dtype(ix->dtype)) return tp_fail(TP_ERR_INVALID_ARG, "%s: indices must be int32 or int64, got %s", nm, tp_dtype_name(ix->dtype));
  int64_t b = a->dim, k = ix->ndim ? ix->shape[ix->ndim - 1] : -1;
  if (b < 0 || b >= x->ndim || b >= ix->ndim) return tp_fail(TP_ERR_INVALID_ARG, "%s: batch_dims %lld is out of range", nm, (long long)b);
  for (int i = 0; i < b; i++)
    if (x->shape[i] != ix->shape[i])
      return tp_fail(TP_ERR_INVALID_ARG, "%s: the %lld batch dims of x %s and indices %s differ", nm, (long long)b,
                     SHAPE(x, b0), SHAPE(ix, b1));
  if (k < 1 || b + k > x->ndim)
    return tp_fail(TP_ERR_INVALID_ARG, "%s: indices %s must end in k with 1 <= k <= %lld", nm, SHAPE(ix, b1), (long long)(x->ndim - b));
  int nd = ix->ndim - 1 + x->ndim - (int)(b + k);
  if (nd > TP_MAX_DIMS) return tp_fail(TP_ERR_INVALID_ARG, "%s: the result has %d dims (at most %d)", nm, nd, TP_MAX_DIMS);
  memset(out, 0, sizeof *out);
  out->dtype = x->dtype;
  out->ndim = nd;
  int j = 0;
  for (int i = 0; i < ix->ndim - 1; i++) out->shape[j++] = ix->shape[i];
  for (int i = (int)(b + k); i < x->ndim; i++) out->shape[j++] = x->shape[i];
  return TP_OK;
}

/* argtopk: x's shape with k along dim, int64. */
static tp_status shape_argtopk(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *a, tp_desc *out) {
  int64_t d;
  char b0[96];
  (void)nin;
  if (in[0]->ndim < 1) return tp_fail(TP_ERR_INVALID_ARG, "argtopk: x must have rank >= 1");
  if (in[0]->dtype == TP_BOOL) return tp_fail(TP_ERR_INVALID_ARG, "argtopk: x must be numeric, got bool");
  TP_TRY(tp_norm_dim(tp_op_name(op), a->dim, in[0]->ndim, &d));
  if (a->k < 0 || a->k > in[0]->shape[d])
    return tp_fail(TP_ERR_INVALID_ARG, "argtopk: k = %lld is outside 0..%lld (dim %lld of %s)", (long long)a->k,
                   (long long)in[0]->shape[d], (long long)d, SHAPE(in[0], b0));
  *out = *in[0];
  out->weak = 0;
  out->dtype = TP_I64;
  out->shape[d] = a->k;
  return TP_OK;
}

/* scatter_elements / scatter_nd: y has x's shape and dtype. */
static tp_status shape_scatter(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *a,
                               tp_desc *out) {
  const char *nm = tp_op_name(op);
  char b0[96], b1[96], b2[96];
  (void)nin;
  const tp_desc *x = in[0], *ix = in[1], *u = in[2];
  if (!is_index_dtype(ix->dtype)) return tp_fail(TP_ERR_INVALID_ARG, "%s: indices must be int32 or int64, got %s", nm, tp_dtype_name(ix->dtype));
  if (u->dtype != x->dtype) return tp_fail(TP_ERR_INVALID_ARG, "%s: updates must be %s like x, got %s", nm, tp_dtype_name(x->dtype), tp_dtype_name(u->dtype));
  if (a->reduction < 0 || a->reduction > 4) return tp_fail(TP_ERR_INVALID_ARG, "%s: reduction %d (0 none, 1 add, 2 mul, 3 max, 4 min)", nm, a->reduction);
  if (a->reduction && x->dtype == TP_BOOL) return tp_fail(TP_ERR_INVALID_ARG, "%s: a reduction needs numbers, got bool", nm);
  if (x->ndim < 1) return tp_fail(TP_ERR_INVALID_ARG, "%s: x must have rank >= 1", nm);
  if (op == TP_OP_SCATTER_ELEMENTS) {
    int64_t d;
    TP_TRY(tp_norm_dim(nm, a->dim, x->ndim, &d));
    int ok = ix->ndim == x->ndim && u->ndim == x->ndim;
    for (int i = 0; ok && i < x->ndim; i++) ok = ix->shape[i] == u->shape[i] && (i == d || ix->shape[i] <= x->shape[i]);
    if (!ok) return tp_fail(TP_ERR_INVALID_ARG, "%s: indices %s and updates %s must have one shape, of x %s's rank and within it", nm,
                            SHAPE(ix, b1), SHAPE(u, b2), SHAPE(x, b0));
  } else {
    int64_t k = ix->ndim ? ix->shape[ix->ndim - 1] : -1;
    if (ix->ndim < 1 || k < 1 || k > x->ndim)
      return tp_fail(TP_ERR_INVALID_ARG, "%s: indices %s must be [..., k] with 1 <= k <= %d", nm, SHAPE(ix, b1), x->ndim);
    int want = ix->ndim - 1 + x->ndim - (int)k, ok = u->ndim == want;
    for (int i = 0; ok && i < ix->ndim - 1; i++) ok = u->shape[i] == ix->shape[i];
    for (int i = 0; ok && i < x->ndim - k; i++) ok = u->shape[ix->ndim - 1 + i] == x->shape[k + i];
    if (!ok) return tp_fail(TP_ERR_INVALID_ARG, "%s: updates %s must be indices.shape[:-1] + x.shape[k:] (x %s, indices %s)", nm,
                            SHAPE(u, b2), SHAPE(x, b0), SHAPE(ix, b1));
  }
  *out = *x;
  out->weak = 0;
  return TP_OK;
}

/* rnn / gru / lstm (ops.def): every operand's shape against X, W, R. */
static tp_status shape_recurrent(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *a,
                                 tp_desc *out) {
  const char *nm = tp_op_name(op);
  char b0[96];
  int G = op == TP_OP_LSTM ? 4 : op == TP_OP_GRU ? 3 : 1, nact = op == TP_OP_LSTM ? 3 : op == TP_OP_GRU ? 2 : 1;
  if (a->dim1 < 0 || a->dim1 > 2)
    return tp_fail(TP_ERR_INVALID_ARG, "%s: direction %lld (0 forward, 1 reverse, 2 bidirectional)", nm, (long long)a->dim1);
  int64_t D = a->dim1 == 2 ? 2 : 1;
  const tp_desc *x = in[0], *w = in[1], *r = in[2];
  if (!w || !r) return tp_fail(TP_ERR_INVALID_ARG, "%s: %s is required", nm, !w ? "W" : "R");
  for (int i = 0; i < nin; i++)
    if (in[i] && i != 4 && in[i]->dtype != TP_F32)
      return tp_fail(TP_ERR_INVALID_ARG, "%s: operand %d must be float32, got %s", nm, i, tp_dtype_name(in[i]->dtype));
  if (x->ndim != 3) return tp_fail(TP_ERR_INVALID_ARG, "%s: X must be [seq, batch, input], got %s", nm, SHAPE(x, b0));
  int64_t S = x->shape[0], N = x->shape[1], I = x->shape[2], H = r->ndim == 3 ? r->shape[2] : -1;
  if (H < 1 || (a->dim && a->dim != H))
    return tp_fail(TP_ERR_INVALID_ARG, "%s: R must be [%lld, %d*hidden, hidden] (hidden_size %lld), got %s", nm,
                   (long long)D, G, (long long)a->dim, SHAPE(r, b0));
  if (w->ndim != 3 || w->shape[0] != D || w->shape[1] != G * H || w->shape[2] != I)
    return tp_fail(TP_ERR_INVALID_ARG, "%s: W must be [%lld, %lld, %lld], got %s", nm, (long long)D, (long long)(G * H),
                   (long long)I, SHAPE(w, b0));
  if (r->shape[0] != D || r->shape[1] != G * H)
    return tp_fail(TP_ERR_INVALID_ARG, "%s: R must be [%lld, %lld, %lld], got %s", nm, (long long)D, (long long)(G * H),
                   (long long)H, SHAPE(r, b0));
  if (nin > 3 && in[3] && (in[3]->ndim != 2 || in[3]->shape[0] != D || in[3]->shape[1] != 2 * G * H))
    return tp_fail(TP_ERR_INVALID_ARG, "%s: B must be [%lld, %lld], got %s", nm, (long long)D, (long long)(2 * G * H),
                   SHAPE(in[3], b0));
  if (nin > 4 && in[4] && (in[4]->ndim != 1 || in[4]->shape[0] != N || (in[4]->dtype != TP_I32 && in[4]->dtype != TP_I64)))
    return tp_fail(TP_ERR_INVALID_ARG, "%s: sequence_lens must be int32/int64 [%lld], got %s%s", nm, (long long)N,
                   tp_dtype_short(in[4]->dtype), SHAPE(in[4], b0));
  for (int i = 5; i < nin && i < 7; i++)
    if (in[i] && (in[i]->ndim != 3 || in[i]->shape[0] != D || in[i]->shape[1] != N || in[i]->shape[2] != H))
      return tp_fail(TP_ERR_INVALID_ARG, "%s: initial_%c must be [%lld, %lld, %lld], got %s", nm, i == 5 ? 'h' : 'c',
                     (long long)D, (long long)N, (long long)H, SHAPE(in[i], b0));
  if (nin > 7 && in[7] && (in[7]->ndim != 2 || in[7]->shape[0] != D || in[7]->shape[1] != 3 * H))
    return tp_fail(TP_ERR_INVALID_ARG, "%s: P must be [%lld, %lld], got %s", nm, (long long)D, (long long)(3 * H),
                   SHAPE(in[7], b0));
  if (a->nints && a->nints != nact * D)
    return tp_fail(TP_ERR_INVALID_ARG, "%s: %d activations, expected %lld (%d per direction)", nm, a->nints,
                   (long long)(nact * D), nact);
  if (a->nfloats && a->nfloats != 2 * a->nints)
    return tp_fail(TP_ERR_INVALID_ARG, "%s: %d activation parameters, expected %d (an alpha and a beta per activation) or none",
                   nm, a->nfloats, 2 * a->nints);
  for (int i = 0; i < a->nints; i++) {
    int64_t c = a->ints[i];
    if (c < 0 || c >= TP_RNN_ACT_COUNT)
      return tp_fail(TP_ERR_INVALID_ARG, "%s: activation code %lld (0 sigmoid .. %d softplus: ops.def)", nm, (long long)c,
                     TP_RNN_ACT_COUNT - 1);
  }
  for (int i = 0; i < a->nfloats; i++)
    if (!(a->floats[i] - a->floats[i] == 0)) /* finite */
      return tp_fail(TP_ERR_INVALID_ARG, "%s: activation parameter %d is %g (must be finite)", nm, i, a->floats[i]);
  if (!(a->clip >= 0)) return tp_fail(TP_ERR_INVALID_ARG, "%s: clip must be >= 0 (0 = none), got %g", nm, a->clip);
  out->dtype = TP_F32;
  out->ndim = 5;
  out->shape[0] = 2, out->shape[1] = S + 1, out->shape[2] = D, out->shape[3] = N, out->shape[4] = H;
  return TP_OK;
}

/* grid_sample (ops.def): x [N, C, spatial...] with 2 or 3 spatial dims,
 * grid [N, out spatial..., k], both float32. */
static tp_status shape_grid_sample(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *a,
                                   tp_desc *out) {
  const tp_desc *x = in[0], *g = in[1];
  char b0[96], b1[96];
  (void)op, (void)nin;
  if (x->dtype != TP_F32 || g->dtype != TP_F32)
    return tp_fail(TP_ERR_INVALID_ARG, "grid_sample: x and grid must be float32, got %s and %s",
                   tp_dtype_name(x->dtype), tp_dtype_name(g->dtype));
  if (x->ndim != 4 && x->ndim != 5)
    return tp_fail(TP_ERR_INVALID_ARG, "grid_sample: x must be [N, C, H, W] or [N, C, D, H, W], got %s", SHAPE(x, b0));
  int k = x->ndim - 2;
  if (g->ndim != x->ndim || g->shape[0] != x->shape[0] || g->shape[k + 1] != k)
    return tp_fail(TP_ERR_INVALID_ARG, "grid_sample: grid must be [%lld, %s, %d] for x %s, got %s",
                   (long long)x->shape[0], k == 2 ? "oH, oW" : "oD, oH, oW", k, SHAPE(x, b0), SHAPE(g, b1));
  if (a->dim < 0 || a->dim > 2)
    return tp_fail(TP_ERR_INVALID_ARG, "grid_sample: mode %lld (0 bilinear, 1 nearest, 2 bicubic)", (long long)a->dim);
  if (a->dim1 < 0 || a->dim1 > 2)
    return tp_fail(TP_ERR_INVALID_ARG, "grid_sample: padding %lld (0 zeros, 1 border, 2 reflection)",
                   (long long)a->dim1);
  for (int i = 0; i < k; i++)
    if (x->shape[2 + i] == 0 && tp_shape_numel(g->ndim, g->shape) > 0)
      return tp_fail(TP_ERR_INVALID_ARG, "grid_sample: x %s has an empty spatial dim; nothing to sample",
                     SHAPE(x, b0));
  memset(out, 0, sizeof *out);
  out->dtype = TP_F32;
  out->ndim = x->ndim;
  out->shape[0] = x->shape[0], out->shape[1] = x->shape[1];
  for (int i = 0; i < k; i++) out->shape[2 + i] = g->shape[1 + i];
  return TP_OK;
}

/* roi_align (ops.def): x [N, C, H, W] and rois [R, 4] float32,
 * batch_indices [R] int32/int64, ints = [oh >= 1, ow >= 1, sampling_ratio >= 0]. */
static tp_status shape_roi_align(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *a, tp_desc *out) {
  const tp_desc *x = in[0], *r = in[1], *b = in[2];
  char b0[96], b1[96];
  (void)op, (void)nin;
  if (x->dtype != TP_F32 || x->ndim != 4)
    return tp_fail(TP_ERR_INVALID_ARG, "roi_align: x must be float32 [N, C, H, W], got %s%s", tp_dtype_short(x->dtype), SHAPE(x, b0));
  if (r->dtype != TP_F32 || r->ndim != 2 || r->shape[1] != 4)
    return tp_fail(TP_ERR_INVALID_ARG, "roi_align: rois must be float32 [R, 4], got %s%s", tp_dtype_short(r->dtype), SHAPE(r, b0));
  if (!is_index_dtype(b->dtype) || b->ndim != 1 || b->shape[0] != r->shape[0])
    return tp_fail(TP_ERR_INVALID_ARG, "roi_align: batch_indices must be int32/int64 [%lld] (one per region), got %s%s",
                   (long long)r->shape[0], tp_dtype_short(b->dtype), SHAPE(b, b1));
  if (a->nints != 3 || a->ints[0] < 1 || a->ints[1] < 1 || a->ints[2] < 0 || a->ints[0] > (1 << 20) || a->ints[1] > (1 << 20))
    return tp_fail(TP_ERR_INVALID_ARG, "roi_align: size must be [output_height >= 1, output_width >= 1, sampling_ratio >= 0]");
  if (a->dim != 0 && a->dim != 1) return tp_fail(TP_ERR_INVALID_ARG, "roi_align: mode %lld (0 avg, 1 max)", (long long)a->dim);
  if (!(a->eps - a->eps == 0)) return tp_fail(TP_ERR_INVALID_ARG, "roi_align: spatial_scale must be finite, got %g", a->eps);
  if (r->shape[0] > 0 && (x->shape[0] == 0 || x->shape[2] == 0 || x->shape[3] == 0))
    return tp_fail(TP_ERR_INVALID_ARG, "roi_align: x %s has no pixels to sample", SHAPE(x, b0));
  memset(out, 0, sizeof *out);
  out->dtype = TP_F32;
  out->ndim = 4;
  out->shape[0] = r->shape[0], out->shape[1] = x->shape[1], out->shape[2] = a->ints[0], out->shape[3] = a->ints[1];
  return TP_OK;
}

static tp_status shape_cast(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *a,
                            tp_desc *out) {
  (void)nin;
  if ((unsigned)a->dtype >= TP_DTYPE_COUNT)
    return tp_fail(TP_ERR_INVALID_ARG, "%s: unknown dtype %d", tp_op_name(op), (int)a->dtype);
  if (op == TP_OP_BITCAST && tp_dtype_size(a->dtype) != tp_dtype_size(in[0]->dtype))
    return tp_fail(TP_ERR_INVALID_ARG, "bitcast: %s (%zu bytes) to %s (%zu bytes): the sizes must be equal",
                   tp_dtype_name(in[0]->dtype), tp_dtype_size(in[0]->dtype), tp_dtype_name(a->dtype), tp_dtype_size(a->dtype));
  if (op == TP_OP_BITCAST && a->dtype == TP_BOOL && in[0]->dtype != TP_BOOL)
    return tp_fail(TP_ERR_INVALID_ARG, "bitcast: to bool only from bool (%s bytes may not be 0 or 1)", tp_dtype_name(in[0]->dtype));
  *out = *in[0];
  out->weak = 0;
  out->dtype = a->dtype;
  return TP_OK;
}

/* quantize / dequantize (quant.c): scale and zero_point broadcast to x's shape. */
static tp_status shape_quant(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *a, tp_desc *out) {
  const char *nm = tp_op_name(op);
  const tp_desc *x = in[0], *s = nin > 1 ? in[1] : NULL, *z = nin > 2 ? in[2] : NULL;
  char b0[96], b1[96];
  int q = op == TP_OP_QUANTIZE;
  if (!s) return tp_fail(TP_ERR_INVALID_ARG, "%s: scale is required", nm);
  if (q ? !(x->dtype == TP_F32 || x->dtype == TP_F16 || x->dtype == TP_BF16 || x->dtype == TP_I32)
        : !(x->dtype == TP_I8 || x->dtype == TP_U8 || x->dtype == TP_I32))
    return tp_fail(TP_ERR_INVALID_ARG, "%s: x has dtype %s; %s is required", nm, tp_dtype_name(x->dtype),
                   q ? "float32, float16, bfloat16 or int32" : "int8, uint8 or int32");
  if (s->dtype != TP_F32 && s->dtype != TP_F16 && s->dtype != TP_BF16)
    return tp_fail(TP_ERR_INVALID_ARG, "%s: scale has dtype %s; float32, float16 or bfloat16 is required", nm,
                   tp_dtype_name(s->dtype));
  if (z && (q ? z->dtype != TP_I8 && z->dtype != TP_U8 : z->dtype != x->dtype))
    return tp_fail(TP_ERR_INVALID_ARG, "%s: zero_point has dtype %s; %s", nm, tp_dtype_name(z->dtype),
                   q ? "int8 or uint8 is required (it gives the result's dtype)" : "it must be x's dtype");
  for (int i = 1; i < nin; i++) {
    const tp_desc *p = in[i];
    if (!p) continue;
    int ok = p->ndim <= x->ndim;
    for (int k = 0; ok && k < p->ndim; k++) {
      int64_t v = p->shape[p->ndim - 1 - k];
      ok = v == 1 || v == x->shape[x->ndim - 1 - k];
    }
    if (!ok)
      return tp_fail(TP_ERR_INVALID_ARG, "%s: %s of shape %s does not broadcast to x's shape %s", nm,
                     i == 1 ? "scale" : "zero_point", SHAPE(p, b0), SHAPE(x, b1));
  }
  *out = *x;
  out->weak = 0;
  if (q) {
    out->dtype = z ? z->dtype : a->dtype;
    if (out->dtype != TP_I8 && out->dtype != TP_U8)
      return tp_fail(TP_ERR_INVALID_ARG, "quantize: dtype %s; int8 or uint8 is required", tp_dtype_name(out->dtype));
  } else {
    out->dtype = s->dtype;
  }
  return TP_OK;
}

static tp_status shape_opaque(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *a,
                              tp_desc *out) {
  (void)nin, (void)in, (void)a, (void)out;
  return tp_fail(TP_ERR_INVALID_ARG, "%s: only valid inside a captured graph", tp_op_name(op));
}

tp_status tp_conv2d_geometry(const tp_desc *x, const tp_desc *w, const tp_attrs *a,
                             tp_conv2d_geom *g) {
  char b0[96], b1[96];
  if (x->ndim != 4 || w->ndim != 4)
    return tp_fail(TP_ERR_INVALID_ARG,
                   "conv2d: input %s and weight %s must both have rank 4 ([N, C, H, W] and [M, C/groups, KH, KW])",
                   SHAPE(x, b0), SHAPE(w, b1));
  if (a->nints != 8)
    return tp_fail(TP_ERR_INVALID_ARG,
                   "conv2d: window has %d values, expected 8 (stride h w, pads top left bottom right, dilation h w)",
                   a->nints);
  const int64_t *v = a->ints;
  for (int i = 0; i < 8; i++) {
    int lo = (i >= 2 && i < 6) ? 0 : 1; /* pads >= 0, strides and dilations >= 1 */
    if (v[i] < lo || v[i] > (1 << 20))
      return tp_fail(TP_ERR_INVALID_ARG, "conv2d: %s %lld is out of range [%d, 2^20]",
                     i < 2 ? "stride" : i < 6 ? "padding" : "dilation", (long long)v[i], lo);
  }
  g->N = x->shape[0], g->C = x->shape[1], g->H = x->shape[2], g->W = x->shape[3];
  g->M = w->shape[0], g->KH = w->shape[2], g->KW = w->shape[3], g->G = a->dim;
  g->sh = v[0], g->sw = v[1], g->pt = v[2], g->pl = v[3], g->dh = v[6], g->dw = v[7];
  if (g->G < 1 || g->C % g->G || g->M % g->G || w->shape[1] != g->C / g->G)
    return tp_fail(TP_ERR_INVALID_ARG,
                   "conv2d: groups %lld does not fit input %s and weight %s (need C %% groups == 0, "
                   "M %% groups == 0 and weight dim 1 == C / groups)",
                   (long long)g->G, SHAPE(x, b0), SHAPE(w, b1));
  if (g->KH < 1 || g->KW < 1)
    return tp_fail(TP_ERR_INVALID_ARG, "conv2d: weight %s has an empty kernel", SHAPE(w, b1));
  if (g->KH > ((int64_t)1 << 31) || g->KW > ((int64_t)1 << 31)) /* extents below stay < 2^52 */
    return tp_fail(TP_ERR_INVALID_ARG, "conv2d: kernel %lldx%lld of weight %s is too large (at most 2^31)",
                   (long long)g->KH, (long long)g->KW, SHAPE(w, b1));
  int64_t eh = (g->KH - 1) * g->dh + 1, ew = (g->KW - 1) * g->dw + 1;
  int64_t ph = g->H + v[2] + v[4], pw = g->W + v[3] + v[5];
  if (eh > ph || ew > pw)
    return tp_fail(TP_ERR_INVALID_ARG,
                   "conv2d: kernel extent %lldx%lld is larger than the padded input %lldx%lld",
                   (long long)eh, (long long)ew, (long long)ph, (long long)pw);
  g->OH = (ph - eh) / g->sh + 1;
  g->OW = (pw - ew) / g->sw + 1;
  return TP_OK;
}

/* A convolution's result [N, M, OH, OW] (channels last [N, OH, OW, M]) of dtype d. */
static void conv_out(tp_desc *out, tp_dtype d, const tp_conv2d_geom *g, int channels_last) {
  memset(out, 0, sizeof *out);
  out->dtype = d;
  out->ndim = 4;
  out->shape[0] = g->N, out->shape[1] = g->M, out->shape[2] = g->OH, out->shape[3] = g->OW;
  if (channels_last) out->shape[1] = g->OH, out->shape[2] = g->OW, out->shape[3] = g->M;
}

/* conv2d_int / qconv2d: x and w int8/uint8, the geometry (x channels last
 * when nhwc bit 0). */
static tp_status q8_conv_geometry(tp_op op, const tp_desc *const *in, const tp_attrs *a, int nhwc, tp_conv2d_geom *g) {
  const tp_desc *x = in[0], *w = in[1];
  const char *nm = tp_op_name(op);
  if (!w) return tp_fail(TP_ERR_INVALID_ARG, "%s: weight is required", nm);
  for (int i = 0; i < 2; i++)
    if (in[i]->dtype != TP_I8 && in[i]->dtype != TP_U8)
      return tp_fail(TP_ERR_INVALID_ARG, "%s: %s has dtype %s, expected int8 or uint8", nm, i ? "weight" : "input",
                     tp_dtype_name(in[i]->dtype));
  tp_desc xc = *x; /* x as NCHW for the geometry */
  if ((nhwc & 1) && x->ndim == 4) xc.shape[1] = x->shape[3], xc.shape[2] = x->shape[1], xc.shape[3] = x->shape[2];
  return tp_conv2d_geometry(&xc, w, a, g);
}

static tp_status shape_conv2d(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *a,
                              tp_desc *out) {
  (void)nin;
  const tp_desc *x = in[0], *w = in[1], *b = in[2];
  char b0[96], b1[96];
  if (!w) return tp_fail(TP_ERR_INVALID_ARG, "conv2d: weight is required");
  TP_TRY(need_f32(op, x, "input"));
  TP_TRY(need_f32(op, w, "weight"));
  tp_conv2d_geom g;
  TP_TRY(tp_conv2d_geometry(x, w, a, &g));
  if (b) {
    TP_TRY(need_f32(op, b, "bias"));
    if (b->ndim != 1 || b->shape[0] != g.M)
      return tp_fail(TP_ERR_INVALID_ARG, "conv2d: bias %s does not match weight %s (expected [%lld])",
                     SHAPE(b, b0), SHAPE(w, b1), (long long)g.M);
  }
  conv_out(out, TP_F32, &g, 0);
  return TP_OK;
}

/* conv2d_int (ops.def): ConvInteger's operands, conv2d's geometry, int32 out. */
static tp_status shape_conv2d_int(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *a, tp_desc *out) {
  (void)op;
  char b0[96];
  tp_conv2d_geom g;
  if (nin < 2) return tp_fail(TP_ERR_INVALID_ARG, "conv2d_int: weight is required");
  TP_TRY(q8_conv_geometry(op, in, a, 0, &g));
  for (int i = 2; i < nin && i < 4; i++) {
    const tp_desc *z = in[i], *q = in[i - 2];
    const char *zn = i == 2 ? "x_zero_point" : "w_zero_point";
    if (!z) continue;
    if (z->dtype != q->dtype)
      return tp_fail(TP_ERR_INVALID_ARG, "conv2d_int: %s has dtype %s, %s %s; they must match", zn,
                     tp_dtype_name(z->dtype), i == 2 ? "input" : "weight", tp_dtype_name(q->dtype));
    int64_t nz = tp_shape_numel(z->ndim, z->shape);
    if (nz != 1 && !(i == 3 && z->ndim == 1 && nz == g.M))
      return tp_fail(TP_ERR_INVALID_ARG, "conv2d_int: %s has shape %s; one value%s is supported", zn, SHAPE(z, b0),
                     i == 3 ? " or one per output channel" : "");
  }
  conv_out(out, TP_I32, &g, 0);
  return TP_OK;
}

/* qconv2d (ops.def): conv2d_int's operands and window, qmatmul's scales. */
static tp_status shape_qconv2d(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *a, tp_desc *out) {
  (void)nin;
  const tp_desc *x = in[0], *w = in[1];
  if (a->dim1 < 0 || a->dim1 > 3)
    return tp_fail(TP_ERR_INVALID_ARG, "qconv2d: nhwc %lld is not a layout (0: NCHW; bit 0: x channels last, bit 1: y)",
                   (long long)a->dim1);
  tp_conv2d_geom g;
  TP_TRY(q8_conv_geometry(op, in, a, (int)a->dim1, &g));
  TP_TRY(qmm_operand_of(op, in, 2, "x_zero_point", 0, x->dtype, x->dtype, 0));
  TP_TRY(qmm_operand_of(op, in, 3, "w_zero_point", 0, w->dtype, w->dtype, g.M));
  TP_TRY(qmm_operand_of(op, in, 4, "x_scale", 1, TP_F32, TP_F32, 0));
  TP_TRY(qmm_operand_of(op, in, 5, "w_scale", 1, TP_F32, TP_F32, g.M));
  TP_TRY(qmm_operand_of(op, in, 6, "bias", 0, TP_F32, TP_I32, g.M));
  if (in[6] && tp_shape_numel(in[6]->ndim, in[6]->shape) != g.M)
    return tp_fail(TP_ERR_INVALID_ARG, "qconv2d: bias has %lld values; one per output channel (%lld) is needed",
                   (long long)tp_shape_numel(in[6]->ndim, in[6]->shape), (long long)g.M);
  if (!in[7] != !in[8])
    return tp_fail(TP_ERR_INVALID_ARG, "qconv2d: y_scale and y_zero_point come together (a quantized output)");
  TP_TRY(qmm_operand_of(op, in, 7, "y_scale", 0, TP_F32, TP_F32, 0));
  TP_TRY(qmm_operand_of(op, in, 8, "y_zero_point", 0, TP_U8, TP_I8, 0));
  if (in[6] && in[6]->dtype == TP_F32 && in[7])
    return tp_fail(TP_ERR_INVALID_ARG, "qconv2d: a float32 bias needs a float output (no y_scale); an int32 bias adds to the sum");
  conv_out(out, in[8] ? in[8]->dtype : TP_F32, &g, (a->dim1 & 2) != 0);
  return TP_OK;
}

tp_status tp_pool2d_geometry(tp_op op, const tp_desc *x, const tp_attrs *a, tp_conv2d_geom *g) {
  char b0[96];
  const char *nm = tp_op_name(op);
  if (x->ndim != 4)
    return tp_fail(TP_ERR_INVALID_ARG, "%s: input %s must have rank 4 ([N, C, H, W])", nm, SHAPE(x, b0));
  if (a->nints != 8)
    return tp_fail(TP_ERR_INVALID_ARG,
                   "%s: window has %d values, expected 8 (kernel h w, stride h w, pads top left bottom right)",
                   nm, a->nints);
  const int64_t *v = a->ints;
  for (int i = 0; i < 8; i++) {
    int lo = i < 4 ? 1 : 0;
    if (v[i] < lo || v[i] > (1 << 20))
      return tp_fail(TP_ERR_INVALID_ARG, "%s: %s %lld is out of range [%d, 2^20]", nm,
                     i < 2 ? "kernel size" : i < 4 ? "stride" : "padding", (long long)v[i], lo);
  }
  if (v[4] >= v[0] || v[6] >= v[0] || v[5] >= v[1] || v[7] >= v[1])
    return tp_fail(TP_ERR_INVALID_ARG, "%s: padding must be smaller than the kernel (%lldx%lld)", nm,
                   (long long)v[0], (long long)v[1]);
  if (a->dim != 0 && (op != TP_OP_AVG_POOL2D || a->dim != 1))
    return tp_fail(TP_ERR_INVALID_ARG, "%s: count_include_pad must be 0%s (got %lld)", nm,
                   op == TP_OP_AVG_POOL2D ? " or 1" : "", (long long)a->dim);
  memset(g, 0, sizeof *g);
  g->N = x->shape[0], g->C = g->M = x->shape[1], g->H = x->shape[2], g->W = x->shape[3];
  g->KH = v[0], g->KW = v[1], g->sh = v[2], g->sw = v[3], g->pt = v[4], g->pl = v[5];
  g->dh = g->dw = 1, g->G = g->C;
  int64_t ph = g->H + v[4] + v[6], pw = g->W + v[5] + v[7];
  if (g->KH > ph || g->KW > pw)
    return tp_fail(TP_ERR_INVALID_ARG, "%s: kernel %lldx%lld is larger than the padded input %lldx%lld", nm,
                   (long long)g->KH, (long long)g->KW, (long long)ph, (long long)pw);
  g->OH = (ph - g->KH) / g->sh + 1;
  g->OW = (pw - g->KW) / g->sw + 1;
  return TP_OK;
}

static tp_status shape_pool2d(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *a,
                              tp_desc *out) {
  (void)nin;
  TP_TRY(need_f32(op, in[0], "input"));
  tp_conv2d_geom g;
  TP_TRY(tp_pool2d_geometry(op, in[0], a, &g));
  memset(out, 0, sizeof *out);
  out->dtype = TP_F32;
  out->ndim = 4;
  out->shape[0] = g.N, out->shape[1] = g.C, out->shape[2] = g.OH, out->shape[3] = g.OW;
  return TP_OK;
}

/* ---- entry points ---- */
/* 1 when op must see float16/bfloat16/int8/uint8 operands widened; *lp is
 * the first such operand's dtype, the one a result of its compute dtype
 * rounds back to, unless a tensor operand already has that compute dtype
 * (float16 + float32 is float32, as PyTorch promotes): then *lp is the
 * compute dtype itself and nothing rounds back. */
int tp_op_lowp_widen(tp_op op, int nin, const tp_desc *const *in, tp_dtype *lp) {
  if (op_table[op].flags & (TP_OPF_LOWP | TP_OPF_VIEW)) return 0;
  int found = 0;
  for (int i = 0; i < nin && !found; i++)
    if (in[i] && tp_dtype_is_storage(in[i]->dtype)) *lp = in[i]->dtype, found = 1;
  if (!found) return 0;
  for (int i = 0; i < nin; i++)
    if (in[i] && !in[i]->weak && in[i]->dtype == tp_dtype_compute(*lp)) *lp = in[i]->dtype;
  return 1;
}

tp_status tp_op_infer(tp_op op, int nin, const tp_desc *const *in, const tp_attrs *attrs,
                      tp_desc *out) {
  if ((unsigned)op >= TP_OP_COUNT) return tp_fail(TP_ERR_INVALID_ARG, "unknown operator id %d", (int)op);
  int ar = op_table[op].arity;
  if (ar >= 0 ? nin != ar : nin < 1)
    return tp_fail(TP_ERR_INVALID_ARG, "%s: expected %d operands, got %d", op_table[op].name,
                   ar < 0 ? 1 : ar, nin);
  for (int i = 0; i < nin; i++)
    if (!in[i] && !(i > 0 && (op_table[op].flags & TP_OPF_OPT)))
      return tp_fail(TP_ERR_INVALID_ARG, "%s: operand %d is missing", op_table[op].name, i);
  memset(out, 0, sizeof *out);
  tp_dtype lp;
  if (tp_op_lowp_widen(op, nin, in, &lp)) { /* storage dtypes: the rule on the compute dtypes */
    tp_desc w[TP_MAX_OPERANDS];
    const tp_desc *wp[TP_MAX_OPERANDS];
    for (int i = 0; i < nin; i++) {
      wp[i] = in[i] ? &w[i] : NULL;
      if (in[i]) w[i] = *in[i], w[i].dtype = tp_dtype_compute(in[i]->dtype);
    }
    TP_TRY(op_table[op].shape(op, nin, wp, attrs, out));
    if (out->dtype == tp_dtype_compute(lp)) out->dtype = lp; /* rounded back once */
    return TP_OK;
  }
  return op_table[op].shape(op, nin, in, attrs, out);
}

/* The observer of operator calls (capture's, once a trace has started). */
static const tp_op_observer *observer;
void tp_ops_set_observer(const tp_op_observer *obs) {
  __atomic_store_n(&observer, obs, __ATOMIC_RELEASE);
}

tp_status tp_op_call(tp_op op, int nin, tp_tensor *const *in, const tp_attrs *attrs,
                     tp_tensor **out) {
  tp_attrs def;
  if (!out) return tp_fail(TP_ERR_INVALID_ARG, "%s: NULL output pointer", tp_op_name(op));
  *out = NULL;
  if ((unsigned)op >= TP_OP_COUNT) return tp_fail(TP_ERR_INVALID_ARG, "unknown operator id %d", (int)op);
  if (nin < 0 || nin > TP_MAX_OPERANDS || (nin && !in))
    return tp_fail(TP_ERR_INVALID_ARG, "%s: bad operand count %d", tp_op_name(op), nin);
  if (!attrs) {
    tp_attrs_init(&def);
    attrs = &def;
  }
  tp_desc descs[TP_MAX_OPERANDS];
  const tp_desc *dp[TP_MAX_OPERANDS];
  for (int i = 0; i < nin; i++) {
    dp[i] = NULL;
    if (in[i]) {
      tp_desc_of(in[i], &descs[i]);
      dp[i] = &descs[i];
    }
  }
  const tp_op_observer *ob = __atomic_load_n(&observer, __ATOMIC_ACQUIRE);
  if (ob) TP_TRY(ob->check(tp_op_name(op), nin, in));
  tp_desc od;
  TP_TRY(tp_op_infer(op, nin, dp, attrs, &od));
  tp_tensor *y = NULL;
  tp_dtype lp;
  if (tp_op_lowp_widen(op, nin, dp, &lp)) {
    /* float16/bfloat16/int8/uint8 operands: computed in float32/int32 and
     * rounded once at the output (or wrapped, for int8/uint8, as ONNX) */
    tp_tensor *w[TP_MAX_OPERANDS] = {0}, *y0 = NULL;
    tp_desc wd[TP_MAX_OPERANDS], wod;
    const tp_desc *wp[TP_MAX_OPERANDS];
    tp_status s = TP_OK;
    for (int i = 0; i < nin && !s; i++) {
      wp[i] = NULL;
      if (!in[i]) continue;
      s = tp_to_dtype(in[i], tp_dtype_compute(in[i]->dtype), &w[i]);
      if (!s) tp_desc_of(w[i], &wd[i]), wp[i] = &wd[i];
    }
    memset(&wod, 0, sizeof wod);
    if (!s) s = op_table[op].shape(op, nin, wp, attrs, &wod);
    if (!s) s = tp_op_exec(op, nin, w, attrs, &wod, &y0);
    if (!s) s = tp_to_dtype(y0, od.dtype, &y);
    tp_tensor_release(y0);
    for (int i = 0; i < nin; i++) tp_tensor_release(w[i]);
    if (s) return s;
  } else {
    TP_TRY(tp_op_exec(op, nin, in, attrs, &od, &y));
  }
  tp_status s = ob ? ob->record(op, nin, in, attrs, y) : TP_OK;
  if (s == TP_OK && tp_autograd_wants(nin, in)) {
    /* an op that returned an operand itself (cast to its own dtype) gets a
     * new header, so that the operand stays a leaf */
    for (int i = 0; i < nin && !s; i++)
      if (y == in[i]) {
        tp_tensor *v = NULL;
        s = tp_tensor_view(y, y->ndim, y->shape, y->strides, y->offset, &v);
        if (!s) {
          v->weak = y->weak, v->wval = y->wval, v->trace_id = y->trace_id, v->node = y->node;
          tp_tensor_release(y);
          y = v;
        }
      }
    if (!s) s = tp_autograd_record(op, nin, in, attrs, y);
  }
  if (s != TP_OK) {
    tp_tensor_release(y);
    return s;
  }
  *out = y;
  return TP_OK;
}

/* ---- named wrappers ---- */
static tp_status call2(tp_op op, tp_tensor *a, tp_tensor *b, tp_tensor **out) {
  tp_tensor *in[2] = {a, b};
  return tp_op_call(op, 2, in, NULL, out);
}
tp_status tp_add(tp_tensor *a, tp_tensor *b, tp_tensor **out) { return call2(TP_OP_ADD, a, b, out); }
tp_status tp_sub(tp_tensor *a, tp_tensor *b, tp_tensor **out) { return call2(TP_OP_SUB, a, b, out); }
tp_status tp_mul(tp_tensor *a, tp_tensor *b, tp_tensor **out) { return call2(TP_OP_MUL, a, b, out); }
tp_status tp_div(tp_tensor *a, tp_tensor *b, tp_tensor **out) { return call2(TP_OP_DIV, a, b, out); }
tp_status tp_matmul(tp_tensor *a, tp_tensor *b, tp_tensor **out) {
  return call2(TP_OP_MATMUL, a, b, out);
}
tp_status tp_relu(tp_tensor *a, tp_tensor **out) { return tp_op_call(TP_OP_RELU, 1, &a, NULL, out); }
tp_status tp_linear(tp_tensor *x, tp_tensor *w, tp_tensor *b, tp_tensor **out) {
  tp_tensor *in[3] = {x, w, b};
  return tp_op_call(TP_OP_LINEAR, 3, in, NULL, out);
}
tp_status tp_conv2d(tp_tensor *x, tp_tensor *w, tp_tensor *b, const int64_t stride[2],
                    const int64_t pads[4], const int64_t dilation[2], int64_t groups,
                    tp_tensor **out) {
  tp_tensor *in[3] = {x, w, b};
  tp_attrs at;
  tp_attrs_init(&at);
  at.nints = 8;
  for (int i = 0; i < 2; i++) {
    at.ints[i] = stride ? stride[i] : 1;
    at.ints[6 + i] = dilation ? dilation[i] : 1;
  }
  for (int i = 0; i < 4; i++) at.ints[2 + i] = pads ? pads[i] : 0;
  at.dim = groups;
  return tp_op_call(TP_OP_CONV2D, 3, in, &at, out);
}
tp_status tp_sum(tp_tensor *a, int ndims, const int64_t *dims, int keepdim, tp_tensor **out) {
  tp_attrs at;
  tp_attrs_init(&at);
  if (ndims < 0 || ndims > TP_MAX_DIMS)
    return tp_fail(TP_ERR_INVALID_ARG, "sum: %d dims is out of range", ndims);
  at.nints = ndims;
  if (ndims) memcpy(at.ints, dims, sizeof(int64_t) * (size_t)ndims);
  at.keepdim = keepdim;
  return tp_op_call(TP_OP_SUM, 1, &a, &at, out);
}
tp_status tp_reshape(tp_tensor *a, int ndim, const int64_t *shape, tp_tensor **out) {
  tp_attrs at;
  tp_attrs_init(&at);
  if (ndim < 0 || ndim > TP_MAX_DIMS)
    return tp_fail(TP_ERR_INVALID_ARG, "reshape: %d dims is out of range", ndim);
  at.nints = ndim;
  if (ndim) memcpy(at.ints, shape, sizeof(int64_t) * (size_t)ndim);
  return tp_op_call(TP_OP_RESHAPE, 1, &a, &at, out);
}
tp_status tp_transpose(tp_tensor *a, int64_t d0, int64_t d1, tp_tensor **out) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = d0;
  at.dim1 = d1;
  return tp_op_call(TP_OP_TRANSPOSE, 1, &a, &at, out);
}
