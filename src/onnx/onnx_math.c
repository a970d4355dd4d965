/* onnx_math.c - elementwise converters: unary and binary math, comparison,
 * Pow, Clip, Where, Cast and the variadic Max/Min/Sum/Mean
 * (rows in onnx_ops.def). */
#include "import.h"
#include <math.h>

tp_status tp_onnx_cv_binary(imp *m, onode *n, int op) {
  ref a, b, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &a));
  TP_TRY(tp_onnx_need_in(m, n, 1, &b));
  tp_desc da = tp_onnx_desc(m, a);
  TP_TRY(tp_onnx_binary(m, (tp_op)op, a, b, &y));
  if (op == TP_OP_DIV && da.dtype != TP_F32) TP_TRY(tp_onnx_cast(m, y, da.dtype, &y)); /* truncates */
  return tp_onnx_set_out(m, n, 0, y);
}

tp_status tp_onnx_cv_unary(imp *m, onode *n, int op) {
  ref x, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  if (op == TP_OP_GELU) {
    tp_attrs at;
    tp_attrs_init(&at);
    const char *ap = tp_onnx_attr_str(m, n, "approximate", "none");
    if (strcmp(ap, "none") && strcmp(ap, "tanh"))
      return tp_fail(TP_ERR_UNSUPPORTED, "approximate='%s' is not supported", ap);
    at.approximate = !strcmp(ap, "tanh");
    TP_TRY(tp_onnx_emit(m, TP_OP_GELU, 1, &x, &at, &y));
  } else {
    TP_TRY(tp_onnx_unary(m, (tp_op)op, x, &y));
  }
  return tp_onnx_set_out(m, n, 0, y);
}

tp_status tp_onnx_cv_reciprocal(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_binary(m, TP_OP_DIV, tp_onnx_scalar(1.0), x, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

tp_status tp_onnx_cv_identity(imp *m, onode *n, int arg) {
  (void)arg;
  ref x;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  return tp_onnx_set_out(m, n, 0, x);
}

tp_status tp_onnx_cv_not(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  if (tp_onnx_desc(m, x).dtype != TP_BOOL) return tp_fail(TP_ERR_INVALID_ARG, "input must be bool");
  TP_TRY(tp_onnx_not(m, x, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* And / Or / Xor on bools, GreaterOrEqual / LessOrEqual on numbers, all
 * from where / eq / gt / lt: And(a, b) = where(a, b, a), Or(a, b) =
 * where(a, a, b), Xor(a, b) = where(a, not b, b); a >= b = (a > b) or
 * (a == b), which keeps NaN false as ONNX does. */
tp_status tp_onnx_cv_logic(imp *m, onode *n, int kind) {
  ref a, b, y, t;
  TP_TRY(tp_onnx_need_in(m, n, 0, &a));
  TP_TRY(tp_onnx_need_in(m, n, 1, &b));
  tp_desc da = tp_onnx_desc(m, a), db = tp_onnx_desc(m, b);
  if (kind <= TP_ONNX_LOGIC_XOR && (da.dtype != TP_BOOL || db.dtype != TP_BOOL))
    return tp_fail(TP_ERR_INVALID_ARG, "inputs must be bool, got %s and %s", tp_dtype_name(da.dtype),
                   tp_dtype_name(db.dtype));
  switch (kind) {
    case TP_ONNX_LOGIC_AND: TP_TRY(tp_onnx_where(m, a, b, a, &y)); break;
    case TP_ONNX_LOGIC_OR: TP_TRY(tp_onnx_where(m, a, a, b, &y)); break;
    case TP_ONNX_LOGIC_XOR:
      TP_TRY(tp_onnx_not(m, b, &t));
      TP_TRY(tp_onnx_where(m, a, t, b, &y));
      break;
    default: { /* TP_ONNX_LOGIC_GE / _LE */
      ref e;
      TP_TRY(tp_onnx_binary(m, kind == TP_ONNX_LOGIC_GE ? TP_OP_GT : TP_OP_LT, a, b, &t));
      TP_TRY(tp_onnx_binary(m, TP_OP_EQ, a, b, &e));
      TP_TRY(tp_onnx_where(m, t, t, e, &y));
      break;
    }
  }
  return tp_onnx_set_out(m, n, 0, y);
}

/* Mod: fmod 0 takes the divisor's sign (Python's %), fmod 1 the dividend's
 * (C's fmod). Ints: the mod / fmod ops (constants fold through them; a
 * zero divisor is an error). Float32 (fmod 1 only): constants fold with
 * fmodf, at run time a - b * trunc(a / b). */
tp_status tp_onnx_cv_mod(imp *m, onode *n, int arg) {
  (void)arg;
  ref a, b, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &a));
  TP_TRY(tp_onnx_need_in(m, n, 1, &b));
  int fm = (int)tp_onnx_attr_int(m, n, "fmod", 0);
  tp_desc da = tp_onnx_desc(m, a), db = tp_onnx_desc(m, b);
  if (da.dtype != db.dtype) return tp_fail(TP_ERR_INVALID_ARG, "inputs must have one dtype, got %s and %s",
                                           tp_dtype_name(da.dtype), tp_dtype_name(db.dtype));
  if (da.dtype == TP_BOOL) return tp_fail(TP_ERR_INVALID_ARG, "bool inputs");
  if (fm != 0 && fm != 1) return tp_fail(TP_ERR_INVALID_ARG, "fmod must be 0 or 1, got %d", fm);
  if (da.dtype != TP_F32) {
    TP_TRY(tp_onnx_binary(m, fm ? TP_OP_FMOD : TP_OP_MOD, a, b, &y));
    return tp_onnx_set_out(m, n, 0, y);
  }
  if (!fm) return tp_fail(TP_ERR_INVALID_ARG, "fmod must be 1 for float inputs");
  if (a.kind == R_CONST && b.kind == R_CONST) {
    tp_tensor *ta = m->consts[a.c], *tb = m->consts[b.c], *t = NULL, *in[2] = {ta, tb};
    const tp_desc *dp[2] = {&da, &db};
    tp_desc od;
    TP_TRY(tp_op_infer(TP_OP_ADD, 2, dp, NULL, &od));
    TP_TRY(tp_tensor_empty(od.dtype, od.ndim, od.shape, &t));
    tp_iter it;
    tp_iter_init(&it, t, 2, in);
    int nd = it.nd - 1;
    for (int64_t r = 0; r < it.outer; r++, tp_iter_next(&it))
      for (int64_t i = 0; i < it.inner; i++) {
        int64_t oi = it.off[0] + i * it.st[0][nd], ai = it.off[1] + i * it.st[1][nd], bi = it.off[2] + i * it.st[2][nd];
        float x = ((float *)ta->storage->data)[ai], z = ((float *)tb->storage->data)[bi];
        ((float *)t->storage->data)[oi] = fmodf(x, z);
      }
    TP_TRY(tp_onnx_add_const(m, t, &y));
    return tp_onnx_set_out(m, n, 0, y);
  }
  ref q, fl, ce, neg;
  TP_TRY(tp_onnx_binary(m, TP_OP_DIV, a, b, &q));
  TP_TRY(tp_onnx_unary(m, TP_OP_FLOOR, q, &fl));
  TP_TRY(tp_onnx_unary(m, TP_OP_CEIL, q, &ce));
  TP_TRY(tp_onnx_binary(m, TP_OP_LT, q, tp_onnx_scalar(0), &neg));
  TP_TRY(tp_onnx_where(m, neg, ce, fl, &q)); /* trunc */
  TP_TRY(tp_onnx_binary(m, TP_OP_MUL, q, b, &q));
  TP_TRY(tp_onnx_binary(m, TP_OP_SUB, a, q, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* IsInf: x == +inf (detect_positive) or x == -inf (detect_negative). */
tp_status tp_onnx_cv_isinf(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, p, q, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  if (tp_onnx_desc(m, x).dtype != TP_F32) return tp_fail(TP_ERR_INVALID_ARG, "input must be float32");
  int pos = (int)tp_onnx_attr_int(m, n, "detect_positive", 1), neg = (int)tp_onnx_attr_int(m, n, "detect_negative", 1);
  TP_TRY(tp_onnx_binary(m, TP_OP_EQ, x, tp_onnx_scalar(INFINITY), &p));
  TP_TRY(tp_onnx_binary(m, TP_OP_EQ, x, tp_onnx_scalar(-INFINITY), &q));
  if (pos && neg) TP_TRY(tp_onnx_where(m, p, p, q, &y));
  else if (pos) y = p;
  else if (neg) y = q;
  else { /* neither: all false */
    TP_TRY(tp_onnx_binary(m, TP_OP_EQ, x, x, &y));
    TP_TRY(tp_onnx_binary(m, TP_OP_LT, y, tp_onnx_scalar(0), &y));
  }
  return tp_onnx_set_out(m, n, 0, y);
}

/* IsNaN: (x == x) == false, since NaN is the one value unequal to itself. */
tp_status tp_onnx_cv_isnan(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  if (tp_onnx_desc(m, x).dtype != TP_F32) return tp_fail(TP_ERR_INVALID_ARG, "input must be float32");
  TP_TRY(tp_onnx_binary(m, TP_OP_EQ, x, x, &y));
  TP_TRY(tp_onnx_not(m, y, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

tp_status tp_onnx_cv_pow(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, e, y;
  double v;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_need_in(m, n, 1, &e));
  tp_desc dx = tp_onnx_desc(m, x);
  if (dx.dtype == TP_BOOL || tp_onnx_desc(m, e).dtype == TP_BOOL)
    return tp_fail(TP_ERR_INVALID_ARG, "bool operands are not supported");
  if (tp_onnx_const_scalar(m, e, "the exponent", &v) != TP_OK ||
      !(v == 0.5 || v == 0 || v == 1 || v == 2 || v == 3 || v == 4 || v == -1) ||
      ((v == 0.5 || v == -1) && dx.dtype != TP_F32)) {
    /* general case: |x|^y = exp(y log|x|) in float32; a negative base takes
     * the sign of (-1)^y for integral y and is NaN otherwise; x^0 = 1. */
    ref xf, yf, yi, h, odd, r, t, neg, c;
    ref z = tp_onnx_scalar(0), one = tp_onnx_scalar(1), two = tp_onnx_scalar(2);
    z.is_int = one.is_int = two.is_int = 1;
    TP_TRY(tp_onnx_cast(m, x, TP_F32, &xf));
    TP_TRY(tp_onnx_cast(m, e, TP_F32, &yf));
    TP_TRY(tp_onnx_unary(m, TP_OP_ABS, xf, &t));
    TP_TRY(tp_onnx_unary(m, TP_OP_LOG, t, &t));
    TP_TRY(tp_onnx_binary(m, TP_OP_MUL, yf, t, &t));
    TP_TRY(tp_onnx_unary(m, TP_OP_EXP, t, &r));
    TP_TRY(tp_onnx_cast(m, yf, TP_I64, &yi)); /* exponent parity (truncated) */
    TP_TRY(tp_onnx_binary(m, TP_OP_DIV, yi, two, &h));
    TP_TRY(tp_onnx_cast(m, h, TP_I64, &h));
    TP_TRY(tp_onnx_binary(m, TP_OP_MUL, h, two, &h));
    TP_TRY(tp_onnx_binary(m, TP_OP_SUB, yi, h, &odd));
    TP_TRY(tp_onnx_binary(m, TP_OP_EQ, odd, z, &odd)); /* true: even */
    TP_TRY(tp_onnx_binary(m, TP_OP_LT, xf, z, &neg));
    TP_TRY(tp_onnx_unary(m, TP_OP_NEG, r, &t));
    TP_TRY(tp_onnx_where(m, odd, r, t, &t));
    TP_TRY(tp_onnx_where(m, neg, t, r, &r));
    TP_TRY(tp_onnx_cast(m, yi, TP_F32, &c)); /* non-integral exponent of a negative base: NaN */
    TP_TRY(tp_onnx_binary(m, TP_OP_EQ, c, yf, &c));
    TP_TRY(tp_onnx_where(m, c, r, tp_onnx_scalar(NAN), &t));
    TP_TRY(tp_onnx_where(m, neg, t, r, &r));
    TP_TRY(tp_onnx_binary(m, TP_OP_EQ, yf, z, &c));
    TP_TRY(tp_onnx_where(m, c, tp_onnx_scalar(1.0), r, &y));
    if (dx.dtype != TP_F32) { /* round to nearest before the int cast */
      TP_TRY(tp_onnx_binary(m, TP_OP_LT, y, z, &c));
      TP_TRY(tp_onnx_where(m, c, tp_onnx_scalar(-0.5), tp_onnx_scalar(0.5), &t));
      TP_TRY(tp_onnx_binary(m, TP_OP_ADD, y, t, &y));
      TP_TRY(tp_onnx_cast(m, y, dx.dtype, &y));
    }
    return tp_onnx_set_out(m, n, 0, y);
  }
  if (v == 0.5 && dx.dtype == TP_F32) {
    TP_TRY(tp_onnx_unary(m, TP_OP_SQRT, x, &y));
  } else if (v == 1) {
    y = x;
  } else if (v == 2 || v == 3 || v == 4) {
    y = x;
    for (int i = 1; i < (int)v; i++) TP_TRY(tp_onnx_binary(m, TP_OP_MUL, y, x, &y));
  } else if (v == -1 && dx.dtype == TP_F32) {
    TP_TRY(tp_onnx_binary(m, TP_OP_DIV, tp_onnx_scalar(1.0), x, &y));
  } else if (v == 0) {
    TP_TRY(tp_onnx_binary(m, TP_OP_MUL, x, tp_onnx_scalar(0), &y));
    TP_TRY(tp_onnx_binary(m, TP_OP_ADD, y, tp_onnx_scalar(1), &y));
    TP_TRY(tp_onnx_cast(m, y, dx.dtype, &y));
  } else {
    return tp_fail(TP_ERR_UNSUPPORTED, "exponent %g is not supported (0, 0.5, 1, 2, 3, 4, -1 are)", v);
  }
  /* the exponent's shape can broadcast the result */
  tp_desc de = tp_onnx_desc(m, e), dy = tp_onnx_desc(m, y);
  if (de.ndim > dy.ndim) {
    int64_t sh[TP_MAX_DIMS];
    for (int i = 0; i < de.ndim; i++) sh[i] = i < de.ndim - dy.ndim ? 1 : dy.shape[i - (de.ndim - dy.ndim)];
    TP_TRY(tp_onnx_reshape(m, y, de.ndim, sh, &y));
  }
  return tp_onnx_set_out(m, n, 0, y);
}

tp_status tp_onnx_cv_sign(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, p, q, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  tp_desc d = tp_onnx_desc(m, x);
  if (d.dtype == TP_BOOL) return tp_fail(TP_ERR_INVALID_ARG, "bool input is not supported");
  ref z = tp_onnx_scalar(0);
  z.is_int = 1;
  TP_TRY(tp_onnx_binary(m, TP_OP_GT, x, z, &p));
  TP_TRY(tp_onnx_binary(m, TP_OP_LT, x, z, &q));
  TP_TRY(tp_onnx_cast(m, p, d.dtype, &p));
  TP_TRY(tp_onnx_cast(m, q, d.dtype, &q));
  TP_TRY(tp_onnx_binary(m, TP_OP_SUB, p, q, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

tp_status tp_onnx_cv_clip(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, lo, hi, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_in(m, n, 1, &lo));
  TP_TRY(tp_onnx_in(m, n, 2, &hi));
  if (m->md.opset < 11) { /* opset 6..10: min and max are float attributes */
    attr *amin = tp_onnx_attr(m, n, "min", A_FLOAT), *amax = tp_onnx_attr(m, n, "max", A_FLOAT);
    lo = amin ? tp_onnx_scalar(amin->f) : tp_onnx_none();
    hi = amax ? tp_onnx_scalar(amax->f) : tp_onnx_none();
  }
  y = x;
  if (lo.kind != R_NONE) {
    ref c;
    TP_TRY(tp_onnx_binary(m, TP_OP_LT, y, lo, &c));
    TP_TRY(tp_onnx_where(m, c, lo, y, &y));
  }
  if (hi.kind != R_NONE) {
    ref c;
    TP_TRY(tp_onnx_binary(m, TP_OP_GT, y, hi, &c));
    TP_TRY(tp_onnx_where(m, c, hi, y, &y));
  }
  return tp_onnx_set_out(m, n, 0, y);
}

/* Max, Min, Sum, Mean of one or more inputs. */
tp_status tp_onnx_cv_variadic(imp *m, onode *n, int op) {
  ref y, b;
  TP_TRY(tp_onnx_need_in(m, n, 0, &y));
  for (int i = 1; i < n->nin; i++) {
    TP_TRY(tp_onnx_need_in(m, n, i, &b));
    if (op == TP_OP_MAX || op == TP_OP_MIN) {
      ref c;
      TP_TRY(tp_onnx_binary(m, op == TP_OP_MAX ? TP_OP_GT : TP_OP_LT, b, y, &c));
      TP_TRY(tp_onnx_where(m, c, b, y, &y));
    } else {
      TP_TRY(tp_onnx_binary(m, TP_OP_ADD, y, b, &y));
    }
  }
  if (op == TP_OP_MEAN && n->nin > 1) TP_TRY(tp_onnx_binary(m, TP_OP_DIV, y, tp_onnx_scalar(n->nin), &y));
  return tp_onnx_set_out(m, n, 0, y);
}

tp_status tp_onnx_cv_where(imp *m, onode *n, int arg) {
  (void)arg;
  ref c, a, b, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &c));
  TP_TRY(tp_onnx_need_in(m, n, 1, &a));
  TP_TRY(tp_onnx_need_in(m, n, 2, &b));
  TP_TRY(tp_onnx_where(m, c, a, b, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

tp_status tp_onnx_cv_cast(imp *m, onode *n, int like) {
  ref x, y;
  tp_dtype d;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  if (like) {
    ref t;
    TP_TRY(tp_onnx_need_in(m, n, 1, &t));
    d = tp_onnx_desc(m, t).dtype;
  } else {
    int64_t to = tp_onnx_attr_int(m, n, "to", 0);
    tp_onnx_attr_ignore(n, "saturate");
    if (!tp_onnx_to_dtype(to, &d))
      return tp_fail(TP_ERR_UNSUPPORTED, "cast to %s is not supported", tp_onnx_dtype_name((int)to));
  }
  if (m->train_f32 && (d == TP_F16 || d == TP_BF16)) d = TP_F32; /* float32 throughout (imp.train_f32) */
  TP_TRY(tp_onnx_cast(m, x, d, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* BitCast (opset 26): the bytes as `to`, a dtype of the same size. */
tp_status tp_onnx_cv_bitcast(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, y;
  tp_dtype d;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  int64_t to = tp_onnx_attr_int(m, n, "to", 0);
  if (!tp_onnx_to_dtype(to, &d))
    return tp_fail(TP_ERR_UNSUPPORTED, "bitcast to %s is not supported", tp_onnx_dtype_name((int)to));
  tp_attrs at;
  tp_attrs_init(&at);
  at.dtype = d;
  TP_TRY(tp_onnx_emit(m, TP_OP_BITCAST, 1, &x, &at, &y));
  return tp_onnx_set_out(m, n, 0, y);
}
