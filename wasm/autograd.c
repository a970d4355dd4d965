/* autograd.c - autograd through the ABI: requires_grad, .grad, backward,
 * grad mode, detach and in-place assignment (tensorplay.h's autograd
 * section; docs/training.md). */
#include "handles.h"

int32_t tpw_tensor_set_requires_grad(uint32_t h, int32_t on) {
  tp_tensor *t = abi_handle_get(h, ABI_TENSOR);
  if (!t) return tp_last_status();
  return tp_tensor_set_requires_grad(t, on);
}
int32_t tpw_tensor_requires_grad(uint32_t h) {
  tp_tensor *t = abi_handle_get(h, ABI_TENSOR);
  return t ? tp_tensor_requires_grad(t) : -1;
}
int32_t tpw_tensor_is_leaf(uint32_t h) {
  tp_tensor *t = abi_handle_get(h, ABI_TENSOR);
  return t ? tp_tensor_is_leaf(t) : -1;
}
uint32_t tpw_tensor_grad(uint32_t h) {
  tp_tensor *t = abi_handle_get(h, ABI_TENSOR);
  if (!t) return 0;
  tp_tensor *g = tp_tensor_grad(t);
  if (!g) {
    tp_clear_error();
    return 0;
  }
  tp_tensor_retain(g);
  return abi_wrap_tensor(TP_OK, &g);
}
int32_t tpw_tensor_set_grad(uint32_t h, uint32_t gh) {
  tp_tensor *t = abi_handle_get(h, ABI_TENSOR), *g = NULL;
  if (!t) return tp_last_status();
  if (gh && !(g = abi_handle_get(gh, ABI_TENSOR))) return tp_last_status();
  return tp_tensor_set_grad(t, g);
}
uint32_t tpw_tensor_detach(uint32_t h) {
  tp_tensor *t = abi_handle_get(h, ABI_TENSOR), *d = NULL;
  if (!t) return 0;
  return abi_wrap_tensor(tp_tensor_detach(t, &d), &d);
}
int32_t tpw_tensor_assign(uint32_t dh, uint32_t sh) {
  tp_tensor *d = abi_handle_get(dh, ABI_TENSOR), *s;
  if (!d) return tp_last_status();
  if (!(s = abi_handle_get(sh, ABI_TENSOR))) return tp_last_status();
  return tp_tensor_assign(d, s);
}
double tpw_tensor_version(uint32_t h) {
  tp_tensor *t = abi_handle_get(h, ABI_TENSOR);
  return t ? (double)tp_tensor_version(t) : -1;
}
int32_t tpw_backward(uint32_t h, uint32_t gh, int32_t retain_graph) {
  tp_tensor *t = abi_handle_get(h, ABI_TENSOR), *g = NULL;
  if (!t) return tp_last_status();
  if (gh && !(g = abi_handle_get(gh, ABI_TENSOR))) return tp_last_status();
  return tp_backward_ex(t, g, retain_graph);
}
int32_t tpw_set_grad_enabled(int32_t on) { return tp_set_grad_enabled(on); }

int32_t tpw_sgd_step(uint32_t ph, uint32_t gh, uint32_t bh, double lr, double momentum, double weight_decay) {
  tp_tensor *p = abi_handle_get(ph, ABI_TENSOR), *g, *b = NULL;
  if (!p || !(g = abi_handle_get(gh, ABI_TENSOR))) return tp_last_status();
  if (bh && !(b = abi_handle_get(bh, ABI_TENSOR))) return tp_last_status();
  return tp_sgd_step(p, g, b, lr, momentum, weight_decay);
}
int32_t tpw_adam_step(uint32_t ph, uint32_t gh, uint32_t mh, uint32_t vh, double step, double lr, double beta1,
                      double beta2, double eps, double weight_decay, int32_t decoupled) {
  tp_tensor *p = abi_handle_get(ph, ABI_TENSOR), *g, *m, *v;
  if (!p || !(g = abi_handle_get(gh, ABI_TENSOR)) || !(m = abi_handle_get(mh, ABI_TENSOR)) ||
      !(v = abi_handle_get(vh, ABI_TENSOR)))
    return tp_last_status();
  if (!(step >= 1 && step <= 9007199254740992.0) || step != (double)(int64_t)step)
    return tp_fail(TP_ERR_INVALID_ARG, "adam: step %g must be a whole number >= 1", step);
  return tp_adam_step(p, g, m, v, (int64_t)step, lr, beta1, beta2, eps, weight_decay, decoupled);
}

uint32_t tpw_mse_loss(uint32_t ph, uint32_t th, int32_t reduction) {
  tp_tensor *p = abi_handle_get(ph, ABI_TENSOR), *t, *y = NULL;
  if (!p || !(t = abi_handle_get(th, ABI_TENSOR))) return 0;
  return abi_wrap_tensor(tp_mse_loss(p, t, reduction, &y), &y);
}
uint32_t tpw_cross_entropy(uint32_t lh, uint32_t th, double ignore_index, double label_smoothing, int32_t reduction) {
  tp_tensor *l = abi_handle_get(lh, ABI_TENSOR), *t, *y = NULL;
  if (!l || !(t = abi_handle_get(th, ABI_TENSOR))) return 0;
  if (!(ignore_index > -9.2e18 && ignore_index < 9.2e18) || ignore_index != (double)(int64_t)ignore_index) {
    tp_fail(TP_ERR_INVALID_ARG, "cross_entropy: ignore_index %g is not an integer", ignore_index);
    return 0;
  }
  return abi_wrap_tensor(tp_cross_entropy(l, t, (int64_t)ignore_index, label_smoothing, reduction, &y), &y);
}
