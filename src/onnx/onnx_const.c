/* onnx_const.c - converters that make constants: Constant,
 * ConstantOfShape and Range (rows in onnx_ops.def). Their values are
 * computed at load time and folded into the ops that use them. */
#include "import.h"
#include "../core/num.h"
#include <math.h>

static tp_status attr_tensor(imp *m, attr *a, tp_tensor **out) {
  tp_pb r = a->t;
  (void)m;
  return tp_onnx_tensor_read(&r, "constant", out, NULL);
}

tp_status tp_onnx_cv_constant(imp *m, onode *n, int arg) {
  (void)arg;
  tp_tensor *t = NULL;
  ref y;
  attr *a;
  if ((a = tp_onnx_attr(m, n, "value", A_TENSOR)) && a->has_t) {
    TP_TRY(attr_tensor(m, a, &t));
  } else if ((a = tp_onnx_attr(m, n, "value_float", A_FLOAT))) {
    float v = (float)a->f;
    TP_TRY(tp_tensor_new(TP_F32, 0, NULL, &v, &t));
  } else if ((a = tp_onnx_attr(m, n, "value_int", A_INT))) {
    TP_TRY(tp_tensor_new(TP_I64, 0, NULL, &a->i, &t));
  } else if ((a = tp_onnx_attr(m, n, "value_floats", A_FLOATS))) {
    int64_t k = (int64_t)a->nfloats;
    TP_TRY(tp_tensor_new(TP_F32, 1, &k, a->floats, &t));
  } else if ((a = tp_onnx_attr(m, n, "value_ints", A_INTS))) {
    int64_t k = (int64_t)a->nints;
    TP_TRY(tp_tensor_new(TP_I64, 1, &k, a->ints, &t));
  } else {
    return tp_fail(TP_ERR_UNSUPPORTED, "needs a value, value_float(s) or value_int(s) attribute");
  }
  TP_TRY(tp_onnx_add_const(m, t, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

tp_status tp_onnx_cv_constant_of_shape(imp *m, onode *n, int arg) {
  (void)arg;
  ref s, y;
  int64_t sh[TP_MAX_DIMS];
  int ns;
  tp_tensor *v = NULL, *t;
  TP_TRY(tp_onnx_need_in(m, n, 0, &s));
  TP_TRY(tp_onnx_const_ints(m, s, "the shape input", sh, TP_MAX_DIMS, &ns));
  attr *a = tp_onnx_attr(m, n, "value", A_TENSOR);
  tp_dtype dt = TP_F32;
  double val = 0;
  if (a && a->has_t) {
    TP_TRY(attr_tensor(m, a, &v));
    dt = v->dtype;
    val = tp_tensor_numel(v) ? tp_tensor_get_f64(v, 0) : 0;
    tp_tensor_release(v);
  }
  for (int i = 0; i < ns; i++)
    if (sh[i] < 0 || sh[i] > (1 << 30)) return tp_fail(TP_ERR_INVALID_ARG, "invalid shape[%d] = %lld", i, (long long)sh[i]);
  if (tp_shape_numel(ns, sh) > ((int64_t)1 << 28)) return tp_fail(TP_ERR_UNSUPPORTED, "constant too large");
  TP_TRY(tp_full(dt, ns, sh, val, &t));
  TP_TRY(tp_onnx_add_const(m, t, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* HannWindow (arg 0), HammingWindow (1), BlackmanWindow (2): size is a
 * scalar input (a value input when fed at run time); periodic (default)
 * divides by size, symmetric by size - 1. */
tp_status tp_onnx_cv_window(imp *m, onode *n, int kind) {
  ref s, y;
  double sz;
  TP_TRY(tp_onnx_need_in(m, n, 0, &s));
  TP_TRY(tp_onnx_const_scalar(m, s, "size", &sz));
  if (sz < 0 || sz > (1 << 24) || sz != floor(sz)) return tp_fail(TP_ERR_INVALID_ARG, "size %g", sz);
  int periodic = (int)tp_onnx_attr_int(m, n, "periodic", 1);
  int64_t dt = tp_onnx_attr_int(m, n, "output_datatype", 1);
  tp_dtype out;
  if (!tp_onnx_to_dtype(dt, &out)) return tp_fail(TP_ERR_UNSUPPORTED, "output_datatype %s", tp_onnx_dtype_name((int)dt));
  int64_t len = (int64_t)sz;
  tp_tensor *t;
  TP_TRY(tp_tensor_empty(TP_F32, 1, &len, &t));
  double N = periodic ? (double)len : (double)len - 1;
  for (int64_t i = 0; i < len; i++) {
    double a = 2 * M_PI * (double)i / N, v;
    if (kind == 0) v = 0.5 - 0.5 * cos(a);
    else if (kind == 1) v = 25.0 / 46 - (1 - 25.0 / 46) * cos(a);
    else v = 0.42 - 0.5 * cos(a) + 0.08 * cos(2 * a);
    ((float *)tp_tensor_ptr(t))[i] = (float)v;
  }
  TP_TRY(tp_onnx_add_const(m, t, &y));
  TP_TRY(tp_onnx_cast(m, y, out, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

tp_status tp_onnx_cv_range(imp *m, onode *n, int arg) {
  (void)arg;
  ref r0, r1, r2, y;
  double s, l, dl;
  TP_TRY(tp_onnx_need_in(m, n, 0, &r0));
  TP_TRY(tp_onnx_need_in(m, n, 1, &r1));
  TP_TRY(tp_onnx_need_in(m, n, 2, &r2));
  TP_TRY(tp_onnx_const_scalar(m, r0, "start", &s));
  TP_TRY(tp_onnx_const_scalar(m, r1, "limit", &l));
  TP_TRY(tp_onnx_const_scalar(m, r2, "delta", &dl));
  tp_dtype dt = tp_onnx_desc(m, r0).dtype;
  if (dl == 0) return tp_fail(TP_ERR_INVALID_ARG, "delta is 0");
  double cnt = ceil((l - s) / dl);
  if (!(cnt >= 0)) cnt = 0;
  if (cnt > (1 << 28)) return tp_fail(TP_ERR_UNSUPPORTED, "range too large");
  int64_t k = (int64_t)cnt;
  tp_tensor *t;
  TP_TRY(tp_tensor_empty(dt, 1, &k, &t));
  for (int64_t i = 0; i < k; i++) {
    double v = s + (double)i * dl;
    switch (dt) {
      case TP_F32: ((float *)tp_tensor_ptr(t))[i] = (float)((float)s + (float)i * (float)dl); break;
      case TP_I32: ((int32_t *)tp_tensor_ptr(t))[i] = tp_f64_to_i32_sat(v); break;
      case TP_I64: ((int64_t *)tp_tensor_ptr(t))[i] = tp_f64_to_i64_sat(v); break;
      default: ((uint8_t *)tp_tensor_ptr(t))[i] = v != 0; break;
    }
  }
  TP_TRY(tp_onnx_add_const(m, t, &y));
  return tp_onnx_set_out(m, n, 0, y);
}
