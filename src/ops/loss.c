/* loss.c - losses built from ordinary operator calls (so autograd records
 * them and their backward is the ops' formulas): mean squared error and
 * cross-entropy from logits with ignore_index and label smoothing,
 * PyTorch's definitions (docs/training.md). */
#include "oppool.h"

static tp_tensor *sc(gk *k, double v, int is_int) {
  tp_tensor *t = NULL;
  if (k->err) return NULL;
  tp_status s = tp_scalar(v, is_int, &t);
  return keep(k, s, t);
}
static tp_tensor *reduce(gk *k, tp_op op, tp_tensor *a, int64_t dim, int keepdim) {
  tp_attrs at;
  tp_attrs_init(&at);
  if (dim >= 0) at.ints[at.nints++] = dim;
  at.keepdim = keepdim;
  return call(k, op, 1, &a, &at);
}
static tp_status finish(gk *k, tp_tensor *y, tp_tensor **out) {
  if (!k->err && y) {
    tp_tensor_retain(y);
    *out = y;
  }
  gk_done(k);
  return k->err;
}
static tp_status check_reduction(const char *what, int reduction) {
  if (reduction < 0 || reduction > 2)
    return tp_fail(TP_ERR_INVALID_ARG, "%s: reduction %d is not 0 (none), 1 (mean) or 2 (sum)", what, reduction);
  return TP_OK;
}

tp_status tp_mse_loss(tp_tensor *pred, tp_tensor *target, int reduction, tp_tensor **out) {
  char b1[96], b2[96];
  if (!out) return tp_fail(TP_ERR_INVALID_ARG, "mse_loss: NULL output pointer");
  *out = NULL;
  if (!pred || !target) return tp_fail(TP_ERR_INVALID_ARG, "mse_loss: NULL tensor");
  TP_TRY(check_reduction("mse_loss", reduction));
  if (pred->ndim != target->ndim || memcmp(pred->shape, target->shape, sizeof(int64_t) * (size_t)pred->ndim))
    return tp_fail(TP_ERR_INVALID_ARG, "mse_loss: input %s and target %s must have the same shape",
                   tp_shape_str(pred->ndim, pred->shape, b1, sizeof b1),
                   tp_shape_str(target->ndim, target->shape, b2, sizeof b2));
  gk k = GK_INIT;
  tp_tensor *d = op2(&k, TP_OP_SUB, pred, target), *sq = op2(&k, TP_OP_MUL, d, d);
  tp_tensor *y = reduction == 0 ? sq : reduce(&k, reduction == 1 ? TP_OP_MEAN : TP_OP_SUM, sq, -1, 0);
  return finish(&k, y, out);
}

tp_status tp_cross_entropy(tp_tensor *logits, tp_tensor *target, int64_t ignore_index, double label_smoothing,
                           int reduction, tp_tensor **out) {
  char b1[96], b2[96];
  if (!out) return tp_fail(TP_ERR_INVALID_ARG, "cross_entropy: NULL output pointer");
  *out = NULL;
  if (!logits || !target) return tp_fail(TP_ERR_INVALID_ARG, "cross_entropy: NULL tensor");
  TP_TRY(check_reduction("cross_entropy", reduction));
  if (logits->ndim != 2 || target->ndim != 1 || target->shape[0] != logits->shape[0])
    return tp_fail(TP_ERR_INVALID_ARG, "cross_entropy: logits must be [N, C] and target [N] (got %s and %s)",
                   tp_shape_str(logits->ndim, logits->shape, b1, sizeof b1),
                   tp_shape_str(target->ndim, target->shape, b2, sizeof b2));
  if (logits->dtype != TP_F32)
    return tp_fail(TP_ERR_INVALID_ARG, "cross_entropy: logits must be float32 (got %s)", tp_dtype_name(logits->dtype));
  if (target->dtype != TP_I32 && target->dtype != TP_I64)
    return tp_fail(TP_ERR_INVALID_ARG, "cross_entropy: target must be int32 or int64 class indices (got %s)",
                   tp_dtype_name(target->dtype));
  if (!(label_smoothing >= 0 && label_smoothing <= 1))
    return tp_fail(TP_ERR_INVALID_ARG, "cross_entropy: label_smoothing %g is outside [0, 1]", label_smoothing);
  int64_t N = logits->shape[0], C = logits->shape[1];
  /* every target is a class or ignore_index (checked here: gather would accept negative ones) */
  for (int64_t i = 0; i < N; i++) {
    double t = tp_tensor_get_f64(target, i);
    if (t != (double)ignore_index && (t < 0 || t >= (double)C))
      return tp_fail(TP_ERR_INVALID_ARG, "cross_entropy: target[%lld] = %.0f is not a class in [0, %lld) nor ignore_index %lld",
                     (long long)i, t, (long long)C, (long long)ignore_index);
  }
  gk k = GK_INIT;
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = 1;
  tp_tensor *logp = call(&k, TP_OP_LOG_SOFTMAX, 1, &logits, &at);
  tp_tensor *keepm = op2(&k, TP_OP_EQ, op2(&k, TP_OP_EQ, target, sc(&k, (double)ignore_index, 1)), sc(&k, 0, 1));
  tp_tensor *safe = call(&k, TP_OP_WHERE, 3, (tp_tensor *[]){keepm, target, sc(&k, 0, 1)}, NULL);
  tp_attrs rs;
  tp_attrs_init(&rs);
  rs.ints[0] = N, rs.ints[1] = 1, rs.nints = 2;
  tp_tensor *idx = call(&k, TP_OP_RESHAPE, 1, &safe, &rs);
  tp_tensor *picked = call(&k, TP_OP_GATHER_ELEMENTS, 2, (tp_tensor *[]){logp, idx}, &at); /* [N,1] */
  tp_tensor *nll = reduce(&k, TP_OP_SUM, picked, 1, 0);                                    /* [N] */
  tp_tensor *loss = op2(&k, TP_OP_MUL, nll, sc(&k, -(1 - label_smoothing), 0));
  if (label_smoothing > 0) {
    tp_tensor *smooth = reduce(&k, TP_OP_MEAN, logp, 1, 0);
    loss = op2(&k, TP_OP_SUB, loss, op2(&k, TP_OP_MUL, smooth, sc(&k, label_smoothing, 0)));
  }
  loss = call(&k, TP_OP_WHERE, 3, (tp_tensor *[]){keepm, loss, sc(&k, 0, 0)}, NULL);
  tp_tensor *y = loss;
  if (reduction == 2) y = reduce(&k, TP_OP_SUM, loss, -1, 0);
  if (reduction == 1) {
    tp_attrs ca;
    tp_attrs_init(&ca);
    ca.dtype = TP_F32;
    tp_tensor *cnt = reduce(&k, TP_OP_SUM, call(&k, TP_OP_CAST, 1, &keepm, &ca), -1, 0);
    y = op2(&k, TP_OP_DIV, reduce(&k, TP_OP_SUM, loss, -1, 0), cnt); /* all ignored: 0/0 = NaN, as PyTorch */
  }
  return finish(&k, y, out);
}
