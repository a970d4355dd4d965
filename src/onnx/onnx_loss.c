/* onnx_loss.c - NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss as
 * compositions: the target class of every position is picked with
 * gather_elements along the class dim (the targets are runtime data), the
 * class weights with gather, ignore_index positions get weight 0, and the
 * reduction is none, sum, or mean = sum(loss) / sum(weights). */
#include "import.h"

static tp_status unsqueeze1(imp *m, ref x, ref *out) {
  tp_desc d = tp_onnx_desc(m, x);
  int64_t sh[TP_MAX_DIMS];
  if (d.ndim + 1 > TP_MAX_DIMS) return tp_fail(TP_ERR_UNSUPPORTED, "rank %d", d.ndim);
  sh[0] = d.shape[0], sh[1] = 1;
  for (int i = 1; i < d.ndim; i++) sh[i + 1] = d.shape[i];
  return tp_onnx_reshape(m, x, d.ndim + 1, sh, out);
}

/* loss of input (log-probabilities [N, C, d...]) for target [N, d...] */
static tp_status nll(imp *m, onode *n, ref x, ref t, ref w, ref *out) {
  tp_desc dx = tp_onnx_desc(m, x), dt = tp_onnx_desc(m, t);
  if (dx.ndim < 2 || dt.ndim != dx.ndim - 1)
    return tp_fail(TP_ERR_INVALID_ARG, "input must be [N, C, d...] and target [N, d...]");
  if (dt.dtype != TP_I64 && dt.dtype != TP_I32) return tp_fail(TP_ERR_INVALID_ARG, "target must be int32 or int64");
  const char *red = tp_onnx_attr_str(m, n, "reduction", "mean");
  int none = !strcmp(red, "none"), sum = !strcmp(red, "sum"), mean = !strcmp(red, "mean");
  if (!none && !sum && !mean) return tp_fail(TP_ERR_INVALID_ARG, "reduction '%s' is not none, sum or mean", red);
  attr *ii = tp_onnx_attr(m, n, "ignore_index", A_INT);
  ref mask = tp_onnx_none(), ts = t, g, wt, loss;
  ref zero = tp_onnx_scalar(0);
  zero.is_int = 1;
  if (ii) { /* ignored positions read class 0 and weigh nothing */
    ref iv = tp_onnx_scalar((double)ii->i);
    iv.is_int = 1;
    TP_TRY(tp_onnx_binary(m, TP_OP_EQ, t, iv, &mask));
    TP_TRY(tp_onnx_where(m, mask, zero, t, &ts));
  }
  ref idx, a[2];
  TP_TRY(unsqueeze1(m, ts, &idx));
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = 1;
  a[0] = x, a[1] = idx;
  TP_TRY(tp_onnx_emit(m, TP_OP_GATHER_ELEMENTS, 2, a, &at, &g));
  TP_TRY(tp_onnx_reshape(m, g, dt.ndim, dt.shape, &g));
  if (w.kind != R_NONE) {
    tp_attrs_init(&at);
    a[0] = w, a[1] = ts;
    TP_TRY(tp_onnx_emit(m, TP_OP_GATHER, 2, a, &at, &wt));
  } else {
    TP_TRY(tp_onnx_full(m, TP_F32, dt.ndim, dt.shape, 1, &wt));
  }
  if (ii) TP_TRY(tp_onnx_where(m, mask, tp_onnx_scalar(0), wt, &wt));
  TP_TRY(tp_onnx_binary(m, TP_OP_MUL, g, wt, &loss));
  TP_TRY(tp_onnx_unary(m, TP_OP_NEG, loss, &loss));
  if (none) {
    *out = loss;
    return TP_OK;
  }
  TP_TRY(tp_onnx_reduce(m, TP_OP_SUM, loss, 0, NULL, 0, &loss));
  if (sum) {
    *out = loss;
    return TP_OK;
  }
  ref ws;
  TP_TRY(tp_onnx_reduce(m, TP_OP_SUM, wt, 0, NULL, 0, &ws));
  return tp_onnx_binary(m, TP_OP_DIV, loss, ws, out);
}

/* NegativeLogLikelihoodLoss (arg 0) and SoftmaxCrossEntropyLoss (arg 1,
 * whose second output is the log-probabilities). */
tp_status tp_onnx_cv_loss(imp *m, onode *n, int sce) {
  ref x, t, w, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_need_in(m, n, 1, &t));
  TP_TRY(tp_onnx_in(m, n, 2, &w));
  if (tp_onnx_desc(m, x).dtype != TP_F32) return tp_fail(TP_ERR_INVALID_ARG, "input must be float32");
  tp_desc dx = tp_onnx_desc(m, x);
  if (sce) {
    if (dx.ndim < 2) return tp_fail(TP_ERR_INVALID_ARG, "scores must be [N, C, d...]");
    tp_attrs at;
    tp_attrs_init(&at);
    at.dim = 1;
    TP_TRY(tp_onnx_emit(m, TP_OP_LOG_SOFTMAX, 1, &x, &at, &x));
    if (tp_onnx_has_out(n, 1)) TP_TRY(tp_onnx_set_out(m, n, 1, x));
  }
  TP_TRY(nll(m, n, x, t, w, &y));
  return tp_onnx_set_out(m, n, 0, y);
}
