/* onnx_reduce.c - reduction and scan converters: Reduce{Sum,Mean,Max,Min,
 * L2,Prod}, ArgMax/ArgMin and CumSum (rows in onnx_ops.def). */
#include "import.h"
#include <math.h>

tp_status tp_onnx_cv_reduce(imp *m, onode *n, int op) {
  ref x, y;
  int64_t axes[TP_MAX_DIMS];
  int nax, present, l2 = op == TP_ONNX_REDUCE_L2;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_axes(m, n, 1, axes, &nax, &present));
  int keep = (int)tp_onnx_attr_int(m, n, "keepdims", 1);
  int noop = (int)tp_onnx_attr_int(m, n, "noop_with_empty_axes", 0);
  tp_desc d = tp_onnx_desc(m, x);
  if (nax == 0 && noop) return tp_onnx_set_out(m, n, 0, x);
  int mask[TP_MAX_DIMS] = {0};
  for (int i = 0; i < nax; i++) {
    int64_t a;
    TP_TRY(tp_onnx_axis(axes[i], d.ndim, "axis", &a));
    axes[i] = a;
    mask[a] = 1;
  }
  if (nax == 0)
    for (int i = 0; i < d.ndim; i++) mask[i] = 1;
  int64_t osh[TP_MAX_DIMS], red = 1;
  int ond = 0;
  for (int i = 0; i < d.ndim; i++) {
    if (mask[i]) red *= d.shape[i];
    if (!mask[i]) osh[ond++] = d.shape[i];
    else if (keep) osh[ond++] = 1;
  }
  if (red == 0 || tp_shape_numel(d.ndim, d.shape) == 0) { /* empty set: the identity */
    double v = op == TP_OP_MAX ? -INFINITY : op == TP_OP_MIN ? INFINITY : op == TP_OP_MEAN ? NAN : op == TP_ONNX_REDUCE_PROD ? 1
             : op == TP_ONNX_REDUCE_LOG_SUM || op == TP_ONNX_REDUCE_LOG_SUM_EXP ? -INFINITY : 0;
    if (d.dtype != TP_F32 && isinf(v)) v = op == TP_OP_MAX ? (d.dtype == TP_I32 ? INT32_MIN : (double)INT64_MIN) : (d.dtype == TP_I32 ? INT32_MAX : 9.2233720368547748e18);
    TP_TRY(tp_onnx_full(m, d.dtype, ond, osh, v, &y));
    return tp_onnx_set_out(m, n, 0, y);
  }
  if (op == TP_ONNX_REDUCE_PROD) { /* ReduceProd: multiply the slices of each reduced axis */
    y = x;
    for (int a = 0; a < d.ndim; a++) {
      if (!mask[a]) continue;
      if (d.shape[a] > 4096) return tp_fail(TP_ERR_UNSUPPORTED, "axis size %lld (at most 4096)", (long long)d.shape[a]);
      ref acc, e;
      TP_TRY(tp_onnx_slice(m, y, a, 0, 1, 1, &acc));
      for (int64_t i = 1; i < d.shape[a]; i++) {
        TP_TRY(tp_onnx_slice(m, y, a, i, i + 1, 1, &e));
        TP_TRY(tp_onnx_binary(m, TP_OP_MUL, acc, e, &acc));
      }
      y = acc;
    }
    if (!keep) TP_TRY(tp_onnx_reshape(m, y, ond, osh, &y));
    if (tp_onnx_desc(m, y).dtype != d.dtype) TP_TRY(tp_onnx_cast(m, y, d.dtype, &y));
    return tp_onnx_set_out(m, n, 0, y);
  }
  if (op == TP_ONNX_REDUCE_LOG_SUM_EXP) { /* m + log(sum(exp(x - m))): no overflow */
    ref mx, mk, e;
    if (d.dtype != TP_F32) TP_TRY(tp_onnx_cast(m, x, TP_F32, &x));
    TP_TRY(tp_onnx_reduce(m, TP_OP_MAX, x, nax, axes, 1, &mk));
    /* an all -inf row: m = -inf gives nan in x - m; use 0 there (the result is -inf) */
    ref ninf = tp_onnx_scalar(-INFINITY), zero = tp_onnx_scalar(0);
    TP_TRY(tp_onnx_binary(m, TP_OP_EQ, mk, ninf, &e));
    TP_TRY(tp_onnx_where(m, e, zero, mk, &mk));
    TP_TRY(tp_onnx_binary(m, TP_OP_SUB, x, mk, &e));
    TP_TRY(tp_onnx_unary(m, TP_OP_EXP, e, &e));
    TP_TRY(tp_onnx_reduce(m, TP_OP_SUM, e, nax, axes, keep, &y));
    TP_TRY(tp_onnx_unary(m, TP_OP_LOG, y, &y));
    mx = mk;
    if (!keep) TP_TRY(tp_onnx_reshape(m, mk, ond, osh, &mx));
    TP_TRY(tp_onnx_binary(m, TP_OP_ADD, y, mx, &y));
    if (d.dtype != TP_F32) TP_TRY(tp_onnx_cast(m, y, d.dtype, &y));
    return tp_onnx_set_out(m, n, 0, y);
  }
  int post_log = op == TP_ONNX_REDUCE_LOG_SUM;
  if (l2 || op == TP_ONNX_REDUCE_SUM_SQUARE) {
    TP_TRY(tp_onnx_binary(m, TP_OP_MUL, x, x, &x));
    op = TP_OP_SUM;
  } else if (op == TP_ONNX_REDUCE_L1) {
    TP_TRY(tp_onnx_unary(m, TP_OP_ABS, x, &x));
    op = TP_OP_SUM;
  } else if (post_log) {
    op = TP_OP_SUM;
  }
  TP_TRY(tp_onnx_reduce(m, (tp_op)op, x, nax, axes, keep, &y));
  if (l2) TP_TRY(tp_onnx_unary(m, TP_OP_SQRT, y, &y));
  if (post_log) TP_TRY(tp_onnx_unary(m, TP_OP_LOG, y, &y));
  if (tp_onnx_desc(m, y).dtype != d.dtype) TP_TRY(tp_onnx_cast(m, y, d.dtype, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* ArgMax (arg 0) / ArgMin (1): the first (or last) index where x equals
 * its max along the axis. */
tp_status tp_onnx_cv_argmax(imp *m, onode *n, int mn) {
  ref x, mx, eq, idx, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  tp_desc d = tp_onnx_desc(m, x);
  if (d.ndim < 1) return tp_fail(TP_ERR_INVALID_ARG, "input must have rank >= 1");
  if (d.dtype == TP_BOOL) return tp_fail(TP_ERR_INVALID_ARG, "bool input is not supported");
  int64_t axis;
  TP_TRY(tp_onnx_axis(tp_onnx_attr_int(m, n, "axis", 0), d.ndim, "axis", &axis));
  int keep = (int)tp_onnx_attr_int(m, n, "keepdims", 1), last = (int)tp_onnx_attr_int(m, n, "select_last_index", 0);
  int64_t len = d.shape[axis];
  if (len == 0) return tp_fail(TP_ERR_INVALID_ARG, "cannot take the arg%s of an empty axis", mn ? "min" : "max");
  TP_TRY(tp_onnx_reduce(m, mn ? TP_OP_MIN : TP_OP_MAX, x, 1, &axis, 1, &mx));
  TP_TRY(tp_onnx_binary(m, TP_OP_EQ, x, mx, &eq));
  int64_t sh[TP_MAX_DIMS];
  int r = d.ndim - (int)axis;
  sh[0] = len;
  for (int i = 1; i < r; i++) sh[i] = 1;
  tp_tensor *t;
  TP_TRY(tp_tensor_empty(TP_I64, r, sh, &t));
  for (int64_t i = 0; i < len; i++) ((int64_t *)tp_tensor_ptr(t))[i] = i;
  TP_TRY(tp_onnx_add_const(m, t, &idx));
  ref fill = tp_onnx_scalar(last ? -1.0 : (double)len);
  fill.is_int = 1;
  TP_TRY(tp_onnx_where(m, eq, idx, fill, &y));
  TP_TRY(tp_onnx_reduce(m, last ? TP_OP_MAX : TP_OP_MIN, y, 1, &axis, keep, &y));
  TP_TRY(tp_onnx_cast(m, y, TP_I64, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* Hardmax: 1 at the first max along axis, 0 elsewhere (x's dtype). */
tp_status tp_onnx_cv_hardmax(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, mx, eq, idx, first, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  tp_desc d = tp_onnx_desc(m, x);
  if (d.ndim < 1 || d.dtype != TP_F32) return tp_fail(TP_ERR_INVALID_ARG, "input must be float32 of rank >= 1");
  int64_t axis;
  TP_TRY(tp_onnx_axis(tp_onnx_attr_int(m, n, "axis", -1), d.ndim, "axis", &axis));
  int64_t len = d.shape[axis];
  TP_TRY(tp_onnx_reduce(m, TP_OP_MAX, x, 1, &axis, 1, &mx));
  TP_TRY(tp_onnx_binary(m, TP_OP_EQ, x, mx, &eq));
  int64_t sh[TP_MAX_DIMS];
  int r = d.ndim - (int)axis;
  sh[0] = len;
  for (int i = 1; i < r; i++) sh[i] = 1;
  tp_tensor *t;
  TP_TRY(tp_tensor_empty(TP_I64, r, sh, &t));
  for (int64_t i = 0; i < len; i++) ((int64_t *)tp_tensor_ptr(t))[i] = i;
  TP_TRY(tp_onnx_add_const(m, t, &idx));
  ref fill = tp_onnx_scalar((double)len);
  fill.is_int = 1;
  TP_TRY(tp_onnx_where(m, eq, idx, fill, &first));
  TP_TRY(tp_onnx_reduce(m, TP_OP_MIN, first, 1, &axis, 1, &first));
  TP_TRY(tp_onnx_binary(m, TP_OP_EQ, idx, first, &y));
  TP_TRY(tp_onnx_cast(m, y, TP_F32, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* CumSum (arg 0) and CumProd (arg 1): running sums or products of slices. */
tp_status tp_onnx_cv_cumsum(imp *m, onode *n, int prod) {
  tp_op op = prod ? TP_OP_MUL : TP_OP_ADD;
  ref x, r1, y;
  int64_t ax;
  int na;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_need_in(m, n, 1, &r1));
  TP_TRY(tp_onnx_const_ints(m, r1, "axis", &ax, 1, &na));
  tp_desc d = tp_onnx_desc(m, x);
  if (d.ndim < 1 || d.dtype == TP_BOOL) return tp_fail(TP_ERR_INVALID_ARG, "input must have rank >= 1 and a numeric dtype");
  int64_t axis;
  TP_TRY(tp_onnx_axis(ax, d.ndim, "axis", &axis));
  int excl = (int)tp_onnx_attr_int(m, n, "exclusive", 0), rev = (int)tp_onnx_attr_int(m, n, "reverse", 0);
  int64_t len = d.shape[axis];
  if (len == 0) return tp_onnx_set_out(m, n, 0, x);
  if (len > 4096) return tp_fail(TP_ERR_UNSUPPORTED, "axis size %lld (at most 4096)", (long long)len);
  ref *parts = tp_alloc(sizeof(ref) * (size_t)len), acc;
  if (!parts) return TP_ERR_OUT_OF_MEMORY;
  tp_status s = TP_OK;
  for (int64_t k = 0; k < len && !s; k++) {
    int64_t i = rev ? len - 1 - k : k;
    ref e;
    s = tp_onnx_slice(m, x, axis, i, i + 1, 1, &e);
    if (s) break;
    if (excl) {
      if (k == 0) {
        int64_t sh[TP_MAX_DIMS];
        memcpy(sh, d.shape, sizeof sh);
        sh[axis] = 1;
        s = tp_onnx_full(m, d.dtype, d.ndim, sh, prod ? 1 : 0, &parts[i]); /* the identity */
        if (!s) acc = e;
      } else {
        parts[i] = acc;
        s = tp_onnx_binary(m, op, acc, e, &acc);
      }
    } else {
      if (k == 0) acc = e;
      else s = tp_onnx_binary(m, op, acc, e, &acc);
      parts[i] = acc;
    }
  }
  if (!s) s = tp_onnx_concat(m, (int)len, parts, axis, &y);
  tp_free(parts);
  TP_TRY(s);
  if (tp_onnx_desc(m, y).dtype != d.dtype) TP_TRY(tp_onnx_cast(m, y, d.dtype, &y));
  return tp_onnx_set_out(m, n, 0, y);
}
