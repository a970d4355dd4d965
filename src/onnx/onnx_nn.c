/* onnx_nn.c - neural-network layer converters: MatMul, Gemm, Softmax,
 * LayerNormalization, BatchNormalization, the composed activations and
 * Dropout (rows in onnx_ops.def). Convolution and pooling are in
 * onnx_conv.c. */
#include "import.h"

tp_status tp_onnx_cv_matmul(imp *m, onode *n, int arg) {
  (void)arg;
  ref a, b, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &a));
  TP_TRY(tp_onnx_need_in(m, n, 1, &b));
  /* int32 x int32: the exact integer matmul (int32 result, wrapping sums) */
  int ints = tp_onnx_desc(m, a).dtype == TP_I32 && tp_onnx_desc(m, b).dtype == TP_I32;
  TP_TRY(tp_onnx_binary(m, ints ? TP_OP_MATMUL_INT : TP_OP_MATMUL, a, b, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

static tp_status transpose2(imp *m, ref x, ref *out) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = 0;
  at.dim1 = 1;
  return tp_onnx_emit(m, TP_OP_TRANSPOSE, 1, &x, &at, out);
}

tp_status tp_onnx_cv_gemm(imp *m, onode *n, int arg) {
  (void)arg;
  ref a, b, c, y;
  double alpha = tp_onnx_attr_float(m, n, "alpha", 1.0), beta = tp_onnx_attr_float(m, n, "beta", 1.0);
  int ta = (int)tp_onnx_attr_int(m, n, "transA", 0), tb = (int)tp_onnx_attr_int(m, n, "transB", 0);
  TP_TRY(tp_onnx_need_in(m, n, 0, &a));
  TP_TRY(tp_onnx_need_in(m, n, 1, &b));
  TP_TRY(tp_onnx_in(m, n, 2, &c));
  if (tp_onnx_desc(m, a).ndim != 2 || tp_onnx_desc(m, b).ndim != 2)
    return tp_fail(TP_ERR_INVALID_ARG, "A and B must be 2-d");
  if (ta) TP_TRY(transpose2(m, a, &a));
  /* linear wants w = [N, K]: B^T, folded when B is a constant */
  tp_desc dc = tp_onnx_desc(m, c);
  int64_t N = tp_onnx_desc(m, b).shape[tb ? 0 : 1];
  int bias_ok = c.kind != R_NONE && beta == 1.0 && dc.ndim == 1 && dc.shape[0] == N;
  if ((tb || b.kind == R_CONST) && tp_onnx_desc(m, a).dtype == TP_F32) {
    ref w = b;
    if (!tb) TP_TRY(transpose2(m, b, &w));
    ref args[3] = {a, w, alpha == 1.0 && bias_ok ? c : tp_onnx_none()};
    TP_TRY(tp_onnx_emit(m, TP_OP_LINEAR, 3, args, NULL, &y));
    if (alpha != 1.0) TP_TRY(tp_onnx_binary(m, TP_OP_MUL, y, tp_onnx_scalar(alpha), &y));
    if (!(alpha == 1.0 && bias_ok)) bias_ok = 0;
    else c = tp_onnx_none();
  } else {
    if (tb) TP_TRY(transpose2(m, b, &b));
    TP_TRY(tp_onnx_binary(m, TP_OP_MATMUL, a, b, &y));
    if (alpha != 1.0) TP_TRY(tp_onnx_binary(m, TP_OP_MUL, y, tp_onnx_scalar(alpha), &y));
  }
  if (c.kind != R_NONE) {
    if (beta != 1.0) TP_TRY(tp_onnx_binary(m, TP_OP_MUL, c, tp_onnx_scalar(beta), &c));
    TP_TRY(tp_onnx_binary(m, TP_OP_ADD, y, c, &y));
  }
  return tp_onnx_set_out(m, n, 0, y);
}

tp_status tp_onnx_cv_softmax(imp *m, onode *n, int op) {
  ref x, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  tp_desc d = tp_onnx_desc(m, x);
  int64_t axis;
  if (m->md.opset < 13) { /* opset < 13: coerce to 2-D [prod(:axis), prod(axis:)] */
    TP_TRY(tp_onnx_axis(tp_onnx_attr_int(m, n, "axis", 1), d.ndim ? d.ndim : 1, "axis", &axis));
    int64_t s2[2] = {1, 1};
    for (int i = 0; i < d.ndim; i++) s2[i >= axis] *= d.shape[i];
    tp_attrs at;
    tp_attrs_init(&at);
    at.dim = 1;
    TP_TRY(tp_onnx_reshape(m, x, 2, s2, &y));
    TP_TRY(tp_onnx_emit(m, (tp_op)op, 1, &y, &at, &y));
    TP_TRY(tp_onnx_reshape(m, y, d.ndim, d.shape, &y));
    return tp_onnx_set_out(m, n, 0, y);
  }
  TP_TRY(tp_onnx_axis(tp_onnx_attr_int(m, n, "axis", -1), d.ndim ? d.ndim : 1, "axis", &axis));
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = axis;
  TP_TRY(tp_onnx_emit(m, (tp_op)op, 1, &x, &at, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

tp_status tp_onnx_cv_layernorm(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, sc, bi, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_need_in(m, n, 1, &sc));
  TP_TRY(tp_onnx_in(m, n, 2, &bi));
  tp_desc d = tp_onnx_desc(m, x);
  int64_t axis;
  TP_TRY(tp_onnx_axis(tp_onnx_attr_int(m, n, "axis", -1), d.ndim, "axis", &axis));
  double eps = tp_onnx_attr_float(m, n, "epsilon", 1e-5);
  if (tp_onnx_attr_int(m, n, "stash_type", 1) != 1)
    return tp_fail(TP_ERR_UNSUPPORTED, "stash_type other than 1 (float) is not supported");
  tp_attrs at;
  tp_attrs_init(&at);
  at.nints = d.ndim - (int)axis;
  memcpy(at.ints, d.shape + axis, sizeof(int64_t) * (size_t)at.nints);
  at.eps = (float)eps;
  tp_desc ns;
  memset(&ns, 0, sizeof ns);
  ns.dtype = TP_F32;
  ns.ndim = at.nints;
  memcpy(ns.shape, at.ints, sizeof(int64_t) * (size_t)at.nints);
  tp_desc ds = tp_onnx_desc(m, sc), db = tp_onnx_desc(m, bi);
  int sc_in = tp_desc_equal(&ds, &ns), bi_in = bi.kind == R_NONE || (sc_in && tp_desc_equal(&db, &ns));
  ref args[3] = {x, sc_in ? sc : tp_onnx_none(), bi_in ? bi : tp_onnx_none()};
  TP_TRY(tp_onnx_emit(m, TP_OP_LAYER_NORM, 3, args, &at, &y));
  if (!sc_in) TP_TRY(tp_onnx_binary(m, TP_OP_MUL, y, sc, &y));
  if (!bi_in) TP_TRY(tp_onnx_binary(m, TP_OP_ADD, y, bi, &y));
  TP_TRY(tp_onnx_set_out(m, n, 0, y));
  if (tp_onnx_has_out(n, 1) || tp_onnx_has_out(n, 2)) {
    int64_t dims[TP_MAX_DIMS];
    ref mean, dev, var, inv;
    for (int i = 0; i < at.nints; i++) dims[i] = axis + i;
    TP_TRY(tp_onnx_reduce(m, TP_OP_MEAN, x, at.nints, dims, 1, &mean));
    TP_TRY(tp_onnx_binary(m, TP_OP_SUB, x, mean, &dev));
    TP_TRY(tp_onnx_binary(m, TP_OP_MUL, dev, dev, &dev));
    TP_TRY(tp_onnx_reduce(m, TP_OP_MEAN, dev, at.nints, dims, 1, &var));
    TP_TRY(tp_onnx_binary(m, TP_OP_ADD, var, tp_onnx_scalar((float)eps), &var));
    TP_TRY(tp_onnx_unary(m, TP_OP_RSQRT, var, &inv));
    TP_TRY(tp_onnx_set_out(m, n, 1, mean));
    TP_TRY(tp_onnx_set_out(m, n, 2, inv));
  }
  return TP_OK;
}

tp_status tp_onnx_cv_batchnorm(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, sc, b, mean, var, a, c, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_need_in(m, n, 1, &sc));
  TP_TRY(tp_onnx_need_in(m, n, 2, &b));
  TP_TRY(tp_onnx_need_in(m, n, 3, &mean));
  TP_TRY(tp_onnx_need_in(m, n, 4, &var));
  double eps = tp_onnx_attr_float(m, n, "epsilon", 1e-5);
  tp_onnx_attr_ignore(n, "momentum");
  if (tp_onnx_attr_int(m, n, "training_mode", 0) != 0)
    return tp_fail(TP_ERR_UNSUPPORTED, "training_mode=1 is not supported (inference only)");
  if (tp_onnx_attr_int(m, n, "spatial", 1) != 1) return tp_fail(TP_ERR_UNSUPPORTED, "spatial=0 is not supported");
  tp_onnx_attr_ignore(n, "is_test");
  if (tp_onnx_has_out(n, 1) || tp_onnx_has_out(n, 2) || tp_onnx_has_out(n, 3) || tp_onnx_has_out(n, 4))
    return tp_fail(TP_ERR_UNSUPPORTED, "only the Y output (inference) is supported");
  tp_desc dx = tp_onnx_desc(m, x);
  if (dx.ndim < 2) return tp_fail(TP_ERR_INVALID_ARG, "input X must have rank >= 2, got %d", dx.ndim);
  if (dx.dtype != TP_F32) return tp_fail(TP_ERR_UNSUPPORTED, "only float32 input is supported");
  int64_t C = dx.shape[1];
  ref ps[4] = {sc, b, mean, var};
  static const char *const nm[4] = {"scale", "B", "input_mean", "input_var"};
  for (int i = 0; i < 4; i++) {
    tp_desc d = tp_onnx_desc(m, ps[i]);
    if (d.ndim != 1 || d.shape[0] != C)
      return tp_fail(TP_ERR_INVALID_ARG, "%s must have shape [%lld] (the channel count)", nm[i], (long long)C);
  }
  int64_t sh[TP_MAX_DIMS];
  sh[0] = C;
  for (int i = 1; i < dx.ndim - 1; i++) sh[i] = 1;
  TP_TRY(tp_onnx_binary(m, TP_OP_ADD, var, tp_onnx_scalar(eps), &a));
  TP_TRY(tp_onnx_unary(m, TP_OP_RSQRT, a, &a));
  TP_TRY(tp_onnx_binary(m, TP_OP_MUL, a, sc, &a)); /* scale / sqrt(var + eps) */
  TP_TRY(tp_onnx_binary(m, TP_OP_MUL, mean, a, &c));
  TP_TRY(tp_onnx_binary(m, TP_OP_SUB, b, c, &c)); /* B - mean * a */
  TP_TRY(tp_onnx_reshape(m, a, dx.ndim - 1, sh, &a));
  TP_TRY(tp_onnx_reshape(m, c, dx.ndim - 1, sh, &c));
  TP_TRY(tp_onnx_binary(m, TP_OP_MUL, x, a, &y));
  TP_TRY(tp_onnx_binary(m, TP_OP_ADD, y, c, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* Activations composed from where/exp/mul. */
tp_status tp_onnx_cv_act(imp *m, onode *n, int kind) {
  ref x, y, c, t;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  if (tp_onnx_desc(m, x).dtype != TP_F32) return tp_fail(TP_ERR_INVALID_ARG, "input must be float32");
  switch (kind) {
    case ACT_LEAKY: {
      double alpha = tp_onnx_attr_float(m, n, "alpha", 0.01);
      TP_TRY(tp_onnx_binary(m, TP_OP_MUL, x, tp_onnx_scalar((float)alpha), &t));
      /* 0 < alpha <= 1: where(x < alpha x, alpha x, x), the same values bit
       * for bit as where(x < 0, alpha x, x) (signed zeros, infinities and
       * NaNs included: alpha x lies between x and 0, and equals x only where
       * both forms give x), and the shape stax fuses as one pointwise max
       * (schedule.c, match_minmax) instead of a compare and a where over
       * memory. Other alphas (0 would turn -inf into 0 x -inf = NaN the
       * other way round) keep the compare with 0. */
      float a32 = (float)alpha;
      if (a32 > 0 && a32 <= 1) TP_TRY(tp_onnx_binary(m, TP_OP_LT, x, t, &c));
      else TP_TRY(tp_onnx_binary(m, TP_OP_LT, x, tp_onnx_scalar(0), &c));
      TP_TRY(tp_onnx_where(m, c, t, x, &y));
      break;
    }
    case ACT_ELU: case ACT_SELU: {
      double alpha = tp_onnx_attr_float(m, n, "alpha", kind == ACT_ELU ? 1.0 : 1.67326319217681884765625);
      double gamma = kind == ACT_SELU ? tp_onnx_attr_float(m, n, "gamma", 1.05070102214813232421875) : 1.0;
      TP_TRY(tp_onnx_binary(m, kind == ACT_ELU ? TP_OP_LT : TP_OP_GT, x, tp_onnx_scalar(0), &c));
      TP_TRY(tp_onnx_unary(m, TP_OP_EXP, x, &t));
      TP_TRY(tp_onnx_binary(m, TP_OP_SUB, t, tp_onnx_scalar(1), &t));
      TP_TRY(tp_onnx_binary(m, TP_OP_MUL, t, tp_onnx_scalar((float)alpha), &t));
      if (kind == ACT_ELU) TP_TRY(tp_onnx_where(m, c, t, x, &y));
      else {
        TP_TRY(tp_onnx_where(m, c, x, t, &y));
        TP_TRY(tp_onnx_binary(m, TP_OP_MUL, y, tp_onnx_scalar((float)gamma), &y));
      }
      break;
    }
    case ACT_HSIG: case ACT_HSWISH: {
      double alpha = kind == ACT_HSIG ? tp_onnx_attr_float(m, n, "alpha", 0.2) : 1.0 / 6;
      double beta = kind == ACT_HSIG ? tp_onnx_attr_float(m, n, "beta", 0.5) : 0.5;
      TP_TRY(tp_onnx_binary(m, TP_OP_MUL, x, tp_onnx_scalar((float)alpha), &t));
      TP_TRY(tp_onnx_binary(m, TP_OP_ADD, t, tp_onnx_scalar((float)beta), &t));
      TP_TRY(tp_onnx_binary(m, TP_OP_LT, t, tp_onnx_scalar(0), &c));
      TP_TRY(tp_onnx_where(m, c, tp_onnx_scalar(0), t, &t));
      TP_TRY(tp_onnx_binary(m, TP_OP_GT, t, tp_onnx_scalar(1), &c));
      TP_TRY(tp_onnx_where(m, c, tp_onnx_scalar(1), t, &y));
      if (kind == ACT_HSWISH) TP_TRY(tp_onnx_binary(m, TP_OP_MUL, x, y, &y));
      break;
    }
    case ACT_SWISH: { /* x * sigmoid(alpha x) */
      double alpha = tp_onnx_attr_float(m, n, "alpha", 1.0);
      TP_TRY(tp_onnx_binary(m, TP_OP_MUL, x, tp_onnx_scalar((float)alpha), &t));
      TP_TRY(tp_onnx_unary(m, TP_OP_SIGMOID, t, &t));
      TP_TRY(tp_onnx_binary(m, TP_OP_MUL, x, t, &y));
      break;
    }
    case ACT_SOFTSIGN: /* x / (1 + |x|) */
      TP_TRY(tp_onnx_unary(m, TP_OP_ABS, x, &t));
      TP_TRY(tp_onnx_binary(m, TP_OP_ADD, t, tp_onnx_scalar(1), &t));
      TP_TRY(tp_onnx_binary(m, TP_OP_DIV, x, t, &y));
      break;
    case ACT_THRESHOLDED: { /* x where x > alpha, else 0 */
      double alpha = tp_onnx_attr_float(m, n, "alpha", 1.0);
      TP_TRY(tp_onnx_binary(m, TP_OP_GT, x, tp_onnx_scalar((float)alpha), &c));
      TP_TRY(tp_onnx_where(m, c, x, tp_onnx_scalar(0), &y));
      break;
    }
    case ACT_SHRINK: { /* x + bias below -lambd, x - bias above lambd, else 0 */
      double lambd = tp_onnx_attr_float(m, n, "lambd", 0.5), bias = tp_onnx_attr_float(m, n, "bias", 0.0);
      ref lo, hi;
      TP_TRY(tp_onnx_binary(m, TP_OP_LT, x, tp_onnx_scalar((float)-lambd), &c));
      TP_TRY(tp_onnx_binary(m, TP_OP_ADD, x, tp_onnx_scalar((float)bias), &lo));
      TP_TRY(tp_onnx_binary(m, TP_OP_SUB, x, tp_onnx_scalar((float)bias), &hi));
      TP_TRY(tp_onnx_binary(m, TP_OP_GT, x, tp_onnx_scalar((float)lambd), &t));
      TP_TRY(tp_onnx_where(m, t, hi, tp_onnx_scalar(0), &y));
      TP_TRY(tp_onnx_where(m, c, lo, y, &y));
      break;
    }
    case ACT_CELU: { /* max(0, x) + min(0, alpha (exp(x / alpha) - 1)) */
      double alpha = tp_onnx_attr_float(m, n, "alpha", 1.0);
      if (!(alpha != 0)) return tp_fail(TP_ERR_INVALID_ARG, "alpha must not be 0");
      TP_TRY(tp_onnx_binary(m, TP_OP_DIV, x, tp_onnx_scalar((float)alpha), &t));
      TP_TRY(tp_onnx_unary(m, TP_OP_EXP, t, &t));
      TP_TRY(tp_onnx_binary(m, TP_OP_SUB, t, tp_onnx_scalar(1), &t));
      TP_TRY(tp_onnx_binary(m, TP_OP_MUL, t, tp_onnx_scalar((float)alpha), &t));
      ref pos;
      TP_TRY(tp_onnx_binary(m, TP_OP_GT, x, tp_onnx_scalar(0), &c));
      TP_TRY(tp_onnx_where(m, c, x, tp_onnx_scalar(0), &pos));
      TP_TRY(tp_onnx_binary(m, TP_OP_LT, t, tp_onnx_scalar(0), &c));
      TP_TRY(tp_onnx_where(m, c, t, tp_onnx_scalar(0), &t));
      TP_TRY(tp_onnx_binary(m, TP_OP_ADD, pos, t, &y));
      break;
    }
    case ACT_MISH: /* x tanh(softplus(x)), softplus x itself above 30 */
      TP_TRY(tp_onnx_unary(m, TP_OP_EXP, x, &t));
      TP_TRY(tp_onnx_binary(m, TP_OP_ADD, t, tp_onnx_scalar(1), &t));
      TP_TRY(tp_onnx_unary(m, TP_OP_LOG, t, &t));
      TP_TRY(tp_onnx_binary(m, TP_OP_GT, x, tp_onnx_scalar(30), &c));
      TP_TRY(tp_onnx_where(m, c, x, t, &t));
      TP_TRY(tp_onnx_unary(m, TP_OP_TANH, t, &t));
      TP_TRY(tp_onnx_binary(m, TP_OP_MUL, x, t, &y));
      break;
    default: { /* softplus: log(exp(x) + 1), x itself above 30 */
      TP_TRY(tp_onnx_unary(m, TP_OP_EXP, x, &t));
      TP_TRY(tp_onnx_binary(m, TP_OP_ADD, t, tp_onnx_scalar(1), &t));
      TP_TRY(tp_onnx_unary(m, TP_OP_LOG, t, &t));
      TP_TRY(tp_onnx_binary(m, TP_OP_GT, x, tp_onnx_scalar(30), &c));
      TP_TRY(tp_onnx_where(m, c, x, t, &y));
      break;
    }
  }
  return tp_onnx_set_out(m, n, 0, y);
}

/* RMSNormalization: x / sqrt(mean(x^2 over axis..last) + epsilon) * scale. */
tp_status tp_onnx_cv_rmsnorm(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, sc, t, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_need_in(m, n, 1, &sc));
  tp_desc d = tp_onnx_desc(m, x);
  if (d.dtype != TP_F32) return tp_fail(TP_ERR_INVALID_ARG, "input must be float32");
  int64_t axis, axes[TP_MAX_DIMS];
  TP_TRY(tp_onnx_axis(tp_onnx_attr_int(m, n, "axis", -1), d.ndim, "axis", &axis));
  double eps = tp_onnx_attr_float(m, n, "epsilon", 1e-5);
  if (tp_onnx_attr_int(m, n, "stash_type", 1) != 1)
    return tp_fail(TP_ERR_UNSUPPORTED, "stash_type other than 1 (float32) is not supported");
  int nax = 0;
  for (int64_t a = axis; a < d.ndim; a++) axes[nax++] = a;
  TP_TRY(tp_onnx_binary(m, TP_OP_MUL, x, x, &t));
  TP_TRY(tp_onnx_reduce(m, TP_OP_MEAN, t, nax, axes, 1, &t));
  TP_TRY(tp_onnx_binary(m, TP_OP_ADD, t, tp_onnx_scalar((float)eps), &t));
  TP_TRY(tp_onnx_unary(m, TP_OP_RSQRT, t, &t));
  TP_TRY(tp_onnx_binary(m, TP_OP_MUL, x, t, &y));
  TP_TRY(tp_onnx_binary(m, TP_OP_MUL, y, sc, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* PRelu: where(x < 0, slope * x, x), slope broadcast to x. */
tp_status tp_onnx_cv_prelu(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, s, c, t, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_need_in(m, n, 1, &s));
  TP_TRY(tp_onnx_binary(m, TP_OP_LT, x, tp_onnx_scalar(0), &c));
  TP_TRY(tp_onnx_binary(m, TP_OP_MUL, x, s, &t));
  TP_TRY(tp_onnx_where(m, c, t, x, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* (x - mean) * rsqrt(var + eps) over dims [from, ndim) of x. */
static tp_status normalize(imp *m, ref x, int from, double eps, ref *out) {
  tp_desc d = tp_onnx_desc(m, x);
  int64_t axes[TP_MAX_DIMS];
  int na = 0;
  for (int i = from; i < d.ndim; i++) axes[na++] = i;
  ref mu, dx, v;
  TP_TRY(tp_onnx_reduce(m, TP_OP_MEAN, x, na, axes, 1, &mu));
  TP_TRY(tp_onnx_binary(m, TP_OP_SUB, x, mu, &dx));
  TP_TRY(tp_onnx_binary(m, TP_OP_MUL, dx, dx, &v));
  TP_TRY(tp_onnx_reduce(m, TP_OP_MEAN, v, na, axes, 1, &v));
  TP_TRY(tp_onnx_binary(m, TP_OP_ADD, v, tp_onnx_scalar((float)eps), &v));
  TP_TRY(tp_onnx_unary(m, TP_OP_RSQRT, v, &v));
  return tp_onnx_binary(m, TP_OP_MUL, dx, v, out);
}

/* per-channel scale and bias [C] applied to y [N, C, d...] */
static tp_status channel_affine(imp *m, ref y, ref scale, ref bias, int nd, int64_t C, ref *out) {
  int64_t sh[TP_MAX_DIMS];
  sh[0] = C;
  for (int i = 1; i < nd - 1; i++) sh[i] = 1;
  TP_TRY(tp_onnx_reshape(m, scale, nd - 1, sh, &scale));
  TP_TRY(tp_onnx_reshape(m, bias, nd - 1, sh, &bias));
  TP_TRY(tp_onnx_binary(m, TP_OP_MUL, y, scale, &y));
  return tp_onnx_binary(m, TP_OP_ADD, y, bias, out);
}

/* InstanceNormalization (arg 0): per (n, c) over the spatial dims;
 * GroupNormalization (arg 1, opset 21: scale and bias per channel): per
 * (n, group) over the group's channels and the spatial dims. */
tp_status tp_onnx_cv_instnorm(imp *m, onode *n, int group) {
  ref x, sc, b, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_need_in(m, n, 1, &sc));
  TP_TRY(tp_onnx_need_in(m, n, 2, &b));
  tp_desc d = tp_onnx_desc(m, x);
  if (d.dtype != TP_F32 || d.ndim < 3) return tp_fail(TP_ERR_INVALID_ARG, "input must be float32 [N, C, d...]");
  double eps = tp_onnx_attr_float(m, n, "epsilon", 1e-5);
  int64_t C = d.shape[1];
  if (!group) {
    TP_TRY(normalize(m, x, 2, eps, &y));
  } else {
    int64_t G = tp_onnx_attr_int(m, n, "num_groups", 0);
    tp_onnx_attr_ignore(n, "stash_type");
    if (G < 1 || C % G) return tp_fail(TP_ERR_INVALID_ARG, "num_groups %lld does not divide %lld channels", (long long)G, (long long)C);
    if (m->md.opset < 21) return tp_fail(TP_ERR_UNSUPPORTED, "GroupNormalization below opset 21 (scale per group)");
    int64_t sh[3] = {d.shape[0], G, tp_shape_numel(d.ndim, d.shape) / (d.shape[0] * G)};
    TP_TRY(tp_onnx_reshape(m, x, 3, sh, &y));
    TP_TRY(normalize(m, y, 2, eps, &y));
    TP_TRY(tp_onnx_reshape(m, y, d.ndim, d.shape, &y));
  }
  TP_TRY(channel_affine(m, y, sc, b, d.ndim, C, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* LRN: y = x / (bias + alpha / size * sum of x^2 over the channel window
 * [c - (size-1)/2, c + ceil((size-1)/2)])^beta; the window sum is size
 * shifted slices of the zero-padded squares. */
tp_status tp_onnx_cv_lrn(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, sq, sum, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  tp_desc d = tp_onnx_desc(m, x);
  if (d.ndim < 3 || d.dtype != TP_F32)
    return tp_fail(TP_ERR_INVALID_ARG, "input must be float32 [N, C, spatial...], got rank %d %s", d.ndim, tp_dtype_name(d.dtype));
  int64_t size = tp_onnx_attr_int(m, n, "size", 0), C = d.shape[1];
  if (size < 1 || size > 4096) return tp_fail(TP_ERR_INVALID_ARG, "size is %lld; it must be 1 to 4096", (long long)size);
  double alpha = tp_onnx_attr_float(m, n, "alpha", 1e-4), beta = tp_onnx_attr_float(m, n, "beta", 0.75),
         bias = tp_onnx_attr_float(m, n, "bias", 1.0);
  TP_TRY(tp_onnx_binary(m, TP_OP_MUL, x, x, &sq));
  int64_t before = (size - 1) / 2;
  TP_TRY(tp_onnx_pad_const(m, sq, 1, before, size - 1 - before, 0.0, &sq));
  for (int64_t k = 0; k < size; k++) {
    ref part;
    TP_TRY(tp_onnx_slice(m, sq, 1, k, k + C, 1, &part));
    if (k == 0) sum = part;
    else TP_TRY(tp_onnx_binary(m, TP_OP_ADD, sum, part, &sum));
  }
  TP_TRY(tp_onnx_binary(m, TP_OP_MUL, sum, tp_onnx_scalar(alpha / (double)size), &sum));
  TP_TRY(tp_onnx_binary(m, TP_OP_ADD, sum, tp_onnx_scalar(bias), &sum));
  TP_TRY(tp_onnx_pow_pos(m, sum, beta, &sum)); /* the base is > 0 for bias > 0 */
  TP_TRY(tp_onnx_binary(m, TP_OP_DIV, x, sum, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* LpNormalization: x / (sum |x|) (p 1) or x / sqrt(sum x^2) (p 2) along
 * axis; a zero norm leaves the zeros. */
tp_status tp_onnx_cv_lpnorm(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, t, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  tp_desc d = tp_onnx_desc(m, x);
  int64_t axis, p = tp_onnx_attr_int(m, n, "p", 2);
  TP_TRY(tp_onnx_axis(tp_onnx_attr_int(m, n, "axis", -1), d.ndim, "axis", &axis));
  if (p != 1 && p != 2) return tp_fail(TP_ERR_INVALID_ARG, "p must be 1 or 2, got %lld", (long long)p);
  if (p == 1) TP_TRY(tp_onnx_unary(m, TP_OP_ABS, x, &t));
  else TP_TRY(tp_onnx_binary(m, TP_OP_MUL, x, x, &t));
  TP_TRY(tp_onnx_reduce(m, TP_OP_SUM, t, 1, &axis, 1, &t));
  if (p == 2) TP_TRY(tp_onnx_unary(m, TP_OP_SQRT, t, &t));
  ref z; /* a zero norm divides by 1: the zero vector stays zero */
  TP_TRY(tp_onnx_binary(m, TP_OP_EQ, t, tp_onnx_scalar(0), &z));
  TP_TRY(tp_onnx_where(m, z, tp_onnx_scalar(1), t, &t));
  TP_TRY(tp_onnx_binary(m, TP_OP_DIV, x, t, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

tp_status tp_onnx_cv_dropout(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, tm;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_in(m, n, 2, &tm));
  tp_onnx_attr_ignore(n, "seed");
  tp_onnx_attr_ignore(n, "ratio");
  if (tm.kind != R_NONE) {
    double v;
    TP_TRY(tp_onnx_const_scalar(m, tm, "training_mode", &v));
    if (v != 0) return tp_fail(TP_ERR_UNSUPPORTED, "training_mode=true is not supported (inference only)");
  }
  TP_TRY(tp_onnx_set_out(m, n, 0, x));
  if (tp_onnx_has_out(n, 1)) {
    tp_desc d = tp_onnx_desc(m, x);
    tp_tensor *t;
    ref r;
    TP_TRY(tp_ones(TP_BOOL, d.ndim, d.shape, &t));
    TP_TRY(tp_onnx_add_const(m, t, &r));
    TP_TRY(tp_onnx_set_out(m, n, 1, r));
  }
  return TP_OK;
}

/* MeanVarianceNormalization: (x - mean) / (sqrt(mean((x - mean)^2)) + 1e-9)
 * over `axes` (default [0, 2, 3]), the epsilon of ONNX's function body. */
tp_status tp_onnx_cv_mvn(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, mu, dx, v, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  tp_desc d = tp_onnx_desc(m, x);
  if (d.dtype != TP_F32) return tp_fail(TP_ERR_INVALID_ARG, "input must be float32");
  int64_t axes[TP_MAX_DIMS] = {0, 2, 3};
  int na = 3;
  attr *a = tp_onnx_attr(m, n, "axes", A_INTS);
  if (a) {
    if (a->nints > TP_MAX_DIMS) return tp_fail(TP_ERR_INVALID_ARG, "axes has %zu values", a->nints);
    na = (int)a->nints;
    for (int i = 0; i < na; i++) axes[i] = a->ints[i];
  }
  for (int i = 0; i < na; i++) TP_TRY(tp_onnx_axis(axes[i], d.ndim, "axes", &axes[i]));
  TP_TRY(tp_onnx_reduce(m, TP_OP_MEAN, x, na, axes, 1, &mu));
  TP_TRY(tp_onnx_binary(m, TP_OP_SUB, x, mu, &dx));
  TP_TRY(tp_onnx_binary(m, TP_OP_MUL, dx, dx, &v));
  TP_TRY(tp_onnx_reduce(m, TP_OP_MEAN, v, na, axes, 1, &v));
  TP_TRY(tp_onnx_unary(m, TP_OP_SQRT, v, &v));
  TP_TRY(tp_onnx_binary(m, TP_OP_ADD, v, tp_onnx_scalar(1e-9), &v));
  TP_TRY(tp_onnx_binary(m, TP_OP_DIV, dx, v, &y));
  return tp_onnx_set_out(m, n, 0, y);
}
