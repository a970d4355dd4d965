/* node.c - what converters read from a node besides its inputs: typed
 * attributes (each marked used; convert_node rejects the unused ones) and
 * constant operands (shapes, axes, starts, pads: the values that fix
 * shapes at load time). */
#include "import.h"

attr *tp_onnx_attr(imp *m, onode *n, const char *name, int type) {
  for (int i = 0; i < n->nattrs; i++)
    if (!strcmp(n->attrs[i].name, name)) {
      n->attrs[i].used = 1;
      if (n->attrs[i].type != type && !m->bad_attr) m->bad_attr = n->attrs[i].name;
      return n->attrs[i].type == type ? &n->attrs[i] : NULL;
    }
  return NULL;
}

int64_t tp_onnx_attr_int(imp *m, onode *n, const char *name, int64_t def) {
  attr *a = tp_onnx_attr(m, n, name, A_INT);
  return a ? a->i : def;
}

double tp_onnx_attr_float(imp *m, onode *n, const char *name, double def) {
  attr *a = tp_onnx_attr(m, n, name, A_FLOAT);
  return a ? a->f : def;
}

const char *tp_onnx_attr_str(imp *m, onode *n, const char *name, const char *def) {
  attr *a = tp_onnx_attr(m, n, name, A_STRING);
  return a && a->s ? a->s : def;
}

void tp_onnx_attr_ignore(onode *n, const char *name) {
  for (int i = 0; i < n->nattrs; i++)
    if (!strcmp(n->attrs[i].name, name)) n->attrs[i].used = 1;
}

tp_status tp_onnx_attr_ints(imp *m, onode *n, const char *name, int64_t *v, int want, int64_t def) {
  attr *a = tp_onnx_attr(m, n, name, A_INTS);
  for (int i = 0; i < want; i++) v[i] = def;
  if (!a) return TP_OK;
  if ((int)a->nints != want)
    return tp_fail(TP_ERR_INVALID_ARG, "attribute '%s' has %d values, expected %d", name, (int)a->nints, want);
  if (want) memcpy(v, a->ints, sizeof(int64_t) * (size_t)want); /* ints is NULL when empty */
  return TP_OK;
}

/* Constant int list from a tensor ref (0-d or 1-d int32/int64). */
tp_status tp_onnx_const_ints(imp *m, ref r, const char *what, int64_t *v, int max, int *nv) {
  if (r.kind == R_SCALAR) {
    v[0] = (int64_t)r.s;
    *nv = 1;
    return TP_OK;
  }
  if (r.kind != R_CONST) {
    if (r.kind == R_NODE) TP_TRY(tp_onnx_note_need(m, r.node));
    return tp_fail(TP_ERR_UNSUPPORTED, "%s must be a constant (computed only from initializers "
                   "and shapes)", what);
  }
  tp_tensor *t = m->consts[r.c];
  if (t->ndim > 1 || (t->dtype != TP_I64 && t->dtype != TP_I32))
    return tp_fail(TP_ERR_INVALID_ARG, "%s must be a 1-d int64 tensor", what);
  int64_t k = tp_tensor_numel(t);
  if (k > max) return tp_fail(TP_ERR_UNSUPPORTED, "%s has %lld values (at most %d)", what, (long long)k, max);
  for (int64_t i = 0; i < k; i++) v[i] = (int64_t)tp_tensor_get_f64(t, i);
  if (t->dtype == TP_I64) /* exact, also beyond 2^53 */
    for (int64_t i = 0; i < k; i++) v[i] = ((const int64_t *)tp_tensor_ptr(t))[i];
  *nv = (int)k;
  return TP_OK;
}

tp_status tp_onnx_const_floats(imp *m, ref r, const char *what, double *v, int max, int *nv) {
  if (r.kind == R_NODE) TP_TRY(tp_onnx_note_need(m, r.node));
  if (r.kind != R_CONST)
    return tp_fail(TP_ERR_UNSUPPORTED, "%s must be a constant (computed only from initializers and shapes)", what);
  tp_tensor *t = m->consts[r.c];
  if (t->ndim > 1) return tp_fail(TP_ERR_INVALID_ARG, "%s must be a 1-d tensor", what);
  int64_t k = tp_tensor_numel(t);
  if (k > max) return tp_fail(TP_ERR_UNSUPPORTED, "%s has %lld values (at most %d)", what, (long long)k, max);
  for (int64_t i = 0; i < k; i++) v[i] = tp_tensor_get_f64(t, i);
  *nv = (int)k;
  return TP_OK;
}

tp_status tp_onnx_const_scalar(imp *m, ref r, const char *what, double *v) {
  *v = 0;
  if (r.kind == R_SCALAR) {
    *v = r.s;
    return TP_OK;
  }
  if (r.kind == R_NODE) TP_TRY(tp_onnx_note_need(m, r.node));
  if (r.kind != R_CONST || tp_tensor_numel(m->consts[r.c]) != 1)
    return tp_fail(TP_ERR_UNSUPPORTED, "%s must be a one-element constant", what);
  *v = tp_tensor_get_f64(m->consts[r.c], 0);
  return TP_OK;
}

tp_status tp_onnx_axis(int64_t axis, int nd, const char *what, int64_t *out) {
  *out = 0;
  if (axis < -nd || axis >= nd)
    return tp_fail(TP_ERR_INVALID_ARG, "%s %lld is out of range for rank %d", what, (long long)axis, nd);
  *out = axis < 0 ? axis + nd : axis;
  return TP_OK;
}

/* axes from input 1 (opset 13+) or the attribute (older). present = 0: none. */
tp_status tp_onnx_axes(imp *m, onode *n, int input, int64_t *axes, int *nax, int *present) {
  ref a;
  TP_TRY(tp_onnx_in(m, n, input, &a));
  attr *at = tp_onnx_attr(m, n, "axes", A_INTS);
  *present = 0;
  *nax = 0;
  if (a.kind != R_NONE) {
    TP_TRY(tp_onnx_const_ints(m, a, "the axes input", axes, TP_MAX_DIMS, nax));
    *present = 1;
  } else if (at) {
    if (at->nints > TP_MAX_DIMS) return tp_fail(TP_ERR_INVALID_ARG, "too many axes");
    if (at->nints) memcpy(axes, at->ints, sizeof(int64_t) * at->nints); /* ints is NULL when empty */
    *nax = (int)at->nints;
    *present = 1;
  }
  return TP_OK;
}
