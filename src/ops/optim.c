/* optim.c - the optimizers' update kernels (docs/training.md): one fused
 * pass over each parameter that reads its gradient and state and writes
 * the parameter and state in place (bumping their storage versions, so a
 * graph that saved the old values refuses to backward). PyTorch's update
 * rules: SGD with momentum and weight decay; Adam (L2 weight decay added to
 * the gradient) and AdamW (decoupled: p *= 1 - lr * wd). */
#include "ops.h"
#include <math.h>

static tp_status check_f32(const char *what, const char *name, const tp_tensor *t, const tp_tensor *p) {
  char b1[96], b2[96];
  if (!t) return tp_fail(TP_ERR_INVALID_ARG, "%s: NULL %s", what, name);
  if (t->dtype != TP_F32 || !tp_tensor_is_contiguous(t))
    return tp_fail(TP_ERR_INVALID_ARG, "%s: %s must be a contiguous float32 tensor (got %s)", what, name,
                   tp_dtype_name(t->dtype));
  if (p && (t->ndim != p->ndim || memcmp(t->shape, p->shape, sizeof(int64_t) * (size_t)t->ndim)))
    return tp_fail(TP_ERR_INVALID_ARG, "%s: %s has shape %s, the parameter %s", what, name,
                   tp_shape_str(t->ndim, t->shape, b1, sizeof b1), tp_shape_str(p->ndim, p->shape, b2, sizeof b2));
  return TP_OK;
}
static tp_status check_hyper(const char *what, const char *name, double v, double lo, double hi, int hi_open) {
  if (!(v >= lo) || !(hi_open ? v < hi : v <= hi) || !isfinite(v))
    return tp_fail(TP_ERR_INVALID_ARG, "%s: %s %g is out of range [%g, %g%s", what, name, v, lo, hi, hi_open ? ")" : "]");
  return TP_OK;
}
static tp_status check_param(const char *what, tp_tensor *p) {
  TP_TRY(check_f32(what, "param", p, NULL));
  if (p->grad_fn)
    return tp_fail(TP_ERR_INVALID_ARG, "%s: the parameter is the result of a recorded op, not a leaf", what);
  return TP_OK;
}
static int distinct(const tp_tensor *a, const tp_tensor *b) { return !a || !b || a->storage != b->storage; }

tp_status tp_sgd_step(tp_tensor *p, tp_tensor *g, tp_tensor *buf, double lr, double momentum,
                      double weight_decay) {
  const char *w = "sgd";
  TP_TRY(check_param(w, p));
  TP_TRY(check_f32(w, "grad", g, p));
  if (momentum != 0) TP_TRY(check_f32(w, "momentum buffer", buf, p));
  TP_TRY(check_hyper(w, "lr", lr, 0, INFINITY, 1));
  TP_TRY(check_hyper(w, "momentum", momentum, 0, 1, 0));
  TP_TRY(check_hyper(w, "weight_decay", weight_decay, 0, INFINITY, 1));
  if (!distinct(p, g) || !distinct(p, buf) || !distinct(g, buf))
    return tp_fail(TP_ERR_INVALID_ARG, "%s: param, grad and buffer must not share storage", w);
  float *pd = tp_tensor_ptr(p), *bd = momentum != 0 ? tp_tensor_ptr(buf) : NULL;
  const float *gd = tp_tensor_ptr(g);
  int64_t n = tp_tensor_numel(p);
  const float flr = (float)lr, fm = (float)momentum, fwd = (float)weight_decay;
  for (int64_t i = 0; i < n; i++) {
    float d = gd[i] + fwd * pd[i];
    if (bd) d = bd[i] = fm * bd[i] + d;
    pd[i] -= flr * d;
  }
  p->storage->version++;
  if (bd) buf->storage->version++;
  return TP_OK;
}

tp_status tp_adam_step(tp_tensor *p, tp_tensor *g, tp_tensor *m, tp_tensor *v, int64_t step, double lr,
                       double beta1, double beta2, double eps, double weight_decay, int decoupled) {
  const char *w = decoupled ? "adamw" : "adam";
  TP_TRY(check_param(w, p));
  TP_TRY(check_f32(w, "grad", g, p));
  TP_TRY(check_f32(w, "exp_avg", m, p));
  TP_TRY(check_f32(w, "exp_avg_sq", v, p));
  if (step < 1) return tp_fail(TP_ERR_INVALID_ARG, "%s: step %lld must be 1 or more", w, (long long)step);
  TP_TRY(check_hyper(w, "lr", lr, 0, INFINITY, 1));
  TP_TRY(check_hyper(w, "beta1", beta1, 0, 1, 1));
  TP_TRY(check_hyper(w, "beta2", beta2, 0, 1, 1));
  TP_TRY(check_hyper(w, "eps", eps, 0, INFINITY, 1));
  TP_TRY(check_hyper(w, "weight_decay", weight_decay, 0, INFINITY, 1));
  if (!distinct(p, g) || !distinct(p, m) || !distinct(p, v) || !distinct(g, m) || !distinct(g, v) || !distinct(m, v))
    return tp_fail(TP_ERR_INVALID_ARG, "%s: param, grad and the two moments must not share storage", w);
  float *pd = tp_tensor_ptr(p), *md = tp_tensor_ptr(m), *vd = tp_tensor_ptr(v);
  const float *gd = tp_tensor_ptr(g);
  int64_t n = tp_tensor_numel(p);
  const double bc1 = 1 - pow(beta1, (double)step), bc2 = 1 - pow(beta2, (double)step);
  const float b1 = (float)beta1, b2 = (float)beta2, fe = (float)eps;
  const float step_size = (float)(lr / bc1), rbc2 = (float)(1 / sqrt(bc2));
  const float decay = decoupled ? (float)(1 - lr * weight_decay) : 1.0f, l2 = decoupled ? 0.0f : (float)weight_decay;
  /* blocks of 512: the moments (a vector loop: the four arrays are distinct,
   * checked above), their square roots on the kernel table's vector sqrt
   * (correctly rounded, as sqrtf; a sqrtf in the loop kept it scalar
   * natively, errno: 4 ms for W2's 670k parameters), then the update */
  enum { BLK = 512 };
  float den[BLK];
  const tp_kernels *K = tp_kern();
  for (int64_t i0 = 0; i0 < n; i0 += BLK) {
    int64_t nb = n - i0 < BLK ? n - i0 : BLK;
    float *restrict P = pd + i0, *restrict M = md + i0, *restrict V = vd + i0;
    const float *restrict G = gd + i0;
    for (int64_t j = 0; j < nb; j++) {
      float gi = G[j] + l2 * P[j];
      M[j] = b1 * M[j] + (1 - b1) * gi;
      V[j] = b2 * V[j] + (1 - b2) * gi * gi;
    }
    K->unary_f32(TP_KU_SQRT, V, den, nb);
    for (int64_t j = 0; j < nb; j++) P[j] = P[j] * decay - step_size * M[j] / (den[j] * rbc2 + fe);
  }
  p->storage->version++, m->storage->version++, v->storage->version++;
  return TP_OK;
}
