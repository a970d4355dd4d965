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
