/* onnx_shape.c - shape and data-movement converters: Reshape, Flatten,
 * Transpose, (Un)squeeze, Concat, Slice, Split, Tile, Expand, Pad, Gather,
 * Shape and Size (rows in onnx_ops.def). Shapes are fixed at load time, so
 * shape inputs must be constants; a step, index or pad that no op takes
 * becomes one slice per element, concatenated. */
#include "import.h"

tp_status tp_onnx_cv_reshape(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, s, y;
  int64_t sh[TP_MAX_DIMS];
  int ns;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_need_in(m, n, 1, &s));
  TP_TRY(tp_onnx_const_ints(m, s, "the shape input", sh, TP_MAX_DIMS, &ns));
  int allowzero = (int)tp_onnx_attr_int(m, n, "allowzero", 0);
  tp_desc d = tp_onnx_desc(m, x);
  for (int i = 0; i < ns; i++)
    if (sh[i] == 0 && !allowzero) {
      if (i >= d.ndim) return tp_fail(TP_ERR_INVALID_ARG, "shape[%d] = 0 copies a dim the input does not have", i);
      sh[i] = d.shape[i];
    }
  TP_TRY(tp_onnx_reshape(m, x, ns, sh, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

tp_status tp_onnx_cv_flatten(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  tp_desc d = tp_onnx_desc(m, x);
  int64_t axis = tp_onnx_attr_int(m, n, "axis", 1), sh[2] = {1, 1};
  if (axis < -d.ndim || axis > d.ndim)
    return tp_fail(TP_ERR_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)axis, d.ndim);
  if (axis < 0) axis += d.ndim;
  for (int i = 0; i < d.ndim; i++) sh[i < axis ? 0 : 1] *= d.shape[i];
  TP_TRY(tp_onnx_reshape(m, x, 2, sh, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

tp_status tp_onnx_cv_transpose(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  tp_desc d = tp_onnx_desc(m, x);
  tp_attrs at;
  tp_attrs_init(&at);
  attr *p = tp_onnx_attr(m, n, "perm", A_INTS);
  at.nints = d.ndim;
  if (p && (int)p->nints != d.ndim)
    return tp_fail(TP_ERR_INVALID_ARG, "perm has %zu entries for rank %d", p->nints, d.ndim);
  for (int i = 0; i < d.ndim; i++) at.ints[i] = p ? p->ints[i] : d.ndim - 1 - i;
  TP_TRY(tp_onnx_emit(m, TP_OP_PERMUTE, 1, &x, &at, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

tp_status tp_onnx_cv_unsqueeze(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, y;
  int64_t axes[TP_MAX_DIMS], sh[TP_MAX_DIMS];
  int nax, present, mark[TP_MAX_DIMS] = {0};
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_axes(m, n, 1, axes, &nax, &present));
  tp_desc d = tp_onnx_desc(m, x);
  int r = d.ndim + nax;
  if (!present || r > TP_MAX_DIMS) return tp_fail(TP_ERR_INVALID_ARG, "needs axes (output rank %d)", r);
  for (int i = 0; i < nax; i++) {
    int64_t a;
    TP_TRY(tp_onnx_axis(axes[i], r, "axis", &a));
    if (mark[a]) return tp_fail(TP_ERR_INVALID_ARG, "axis %lld repeats", (long long)axes[i]);
    mark[a] = 1;
  }
  for (int i = 0, k = 0; i < r; i++) sh[i] = mark[i] ? 1 : d.shape[k++];
  TP_TRY(tp_onnx_reshape(m, x, r, sh, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

tp_status tp_onnx_cv_squeeze(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, y;
  int64_t axes[TP_MAX_DIMS], sh[TP_MAX_DIMS];
  int nax, present, mark[TP_MAX_DIMS] = {0}, r = 0;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_axes(m, n, 1, axes, &nax, &present));
  tp_desc d = tp_onnx_desc(m, x);
  for (int i = 0; i < nax; i++) {
    int64_t a;
    TP_TRY(tp_onnx_axis(axes[i], d.ndim, "axis", &a));
    if (d.shape[a] != 1) return tp_fail(TP_ERR_INVALID_ARG, "cannot squeeze axis %lld of size %lld", (long long)axes[i], (long long)d.shape[a]);
    mark[a] = 1;
  }
  for (int i = 0; i < d.ndim; i++)
    if (!(present ? mark[i] : d.shape[i] == 1)) sh[r++] = d.shape[i];
  TP_TRY(tp_onnx_reshape(m, x, r, sh, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* Concat: any number of inputs (more than TP_MAX_OPERANDS are joined in
 * chunks, tp_onnx_concat). */
tp_status tp_onnx_cv_concat(imp *m, onode *n, int arg) {
  (void)arg;
  ref small[TP_MAX_OPERANDS], *args = small, y;
  int k = 0;
  if (n->nin < 1) return tp_fail(TP_ERR_INVALID_ARG, "Concat needs at least one input");
  if (n->nin > TP_MAX_OPERANDS && !(args = tp_alloc(sizeof(ref) * (size_t)n->nin))) return TP_ERR_OUT_OF_MEMORY;
  tp_status s = TP_OK;
  for (int i = 0; i < n->nin && !s; i++) {
    s = tp_onnx_need_in(m, n, i, &args[k]);
    if (!s && (tp_shape_numel(tp_onnx_desc(m, args[k]).ndim, tp_onnx_desc(m, args[k]).shape) > 0 || n->nin == 1)) k++;
  }
  if (!s && !k) s = tp_onnx_need_in(m, n, 0, &args[k++]); /* all empty */
  tp_desc d = s ? (tp_desc){0} : tp_onnx_desc(m, args[0]);
  int64_t axis = 0;
  if (!s) s = tp_onnx_axis(tp_onnx_attr_int(m, n, "axis", 0), d.ndim, "axis", &axis);
  if (!s && k == 1) y = args[0];
  else if (!s) s = tp_onnx_concat(m, k, args, axis, &y);
  if (args != small) tp_free(args);
  return s ? s : tp_onnx_set_out(m, n, 0, y);
}

tp_status tp_onnx_cv_slice(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, r1, r2, r3, r4, y;
  int64_t st[TP_MAX_DIMS], en[TP_MAX_DIMS], ax[TP_MAX_DIMS], sp[TP_MAX_DIMS];
  int ns, ne, na, nsp;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  tp_desc d = tp_onnx_desc(m, x);
  if (m->md.opset < 10) { /* opset 1..9: starts, ends, axes are attributes */
    attr *as_ = tp_onnx_attr(m, n, "starts", A_INTS), *ae = tp_onnx_attr(m, n, "ends", A_INTS), *aa = tp_onnx_attr(m, n, "axes", A_INTS);
    if (!as_ || !ae) return tp_fail(TP_ERR_INVALID_ARG, "attributes starts and ends are required (opset < 10)");
    if (as_->nints > TP_MAX_DIMS || as_->nints != ae->nints || (aa && aa->nints != as_->nints))
      return tp_fail(TP_ERR_INVALID_ARG, "starts, ends and axes differ in length (or have more than %d values)", TP_MAX_DIMS);
    ns = ne = na = nsp = (int)as_->nints;
    for (int i = 0; i < ns; i++)
      st[i] = as_->ints[i], en[i] = ae->ints[i], ax[i] = aa ? aa->ints[i] : i, sp[i] = 1;
  } else {
  TP_TRY(tp_onnx_need_in(m, n, 1, &r1));
  TP_TRY(tp_onnx_need_in(m, n, 2, &r2));
  TP_TRY(tp_onnx_in(m, n, 3, &r3));
  TP_TRY(tp_onnx_in(m, n, 4, &r4));
  TP_TRY(tp_onnx_const_ints(m, r1, "starts", st, TP_MAX_DIMS, &ns));
  TP_TRY(tp_onnx_const_ints(m, r2, "ends", en, TP_MAX_DIMS, &ne));
  if (ns != ne) return tp_fail(TP_ERR_INVALID_ARG, "starts and ends differ in length");
  if (r3.kind != R_NONE) TP_TRY(tp_onnx_const_ints(m, r3, "axes", ax, TP_MAX_DIMS, &na));
  else for (na = 0; na < ns; na++) ax[na] = na;
  if (r4.kind != R_NONE) TP_TRY(tp_onnx_const_ints(m, r4, "steps", sp, TP_MAX_DIMS, &nsp));
  else for (nsp = 0; nsp < ns; nsp++) sp[nsp] = 1;
  }
  if (na != ns || nsp != ns) return tp_fail(TP_ERR_INVALID_ARG, "starts, axes and steps differ in length");
  y = x;
  for (int i = 0; i < ns; i++) {
    int64_t a;
    TP_TRY(tp_onnx_axis(ax[i], d.ndim, "axis", &a));
    if (sp[i] == 0) return tp_fail(TP_ERR_INVALID_ARG, "step 0 on axis %lld", (long long)ax[i]);
    if (sp[i] < 0) { /* negative step: one slice per element, concatenated */
      int64_t len = tp_onnx_desc(m, y).shape[a], b = st[i], e = en[i];
      if (b < 0) b += len;
      if (e < 0) e += len;
      b = b < -1 ? -1 : b > len - 1 ? len - 1 : b;
      e = e < -1 ? -1 : e > len - 1 ? len - 1 : e;
      int64_t cnt = b > e ? (b - e - 1) / -sp[i] + 1 : 0;
      if (cnt > 4096) return tp_fail(TP_ERR_UNSUPPORTED, "a negative-step slice of %lld elements (at most 4096)", (long long)cnt);
      if (cnt == 0) {
        TP_TRY(tp_onnx_slice(m, y, a, 0, 0, 1, &y));
        continue;
      }
      ref *parts = tp_alloc(sizeof(ref) * (size_t)cnt);
      if (!parts) return TP_ERR_OUT_OF_MEMORY;
      tp_status s2 = TP_OK;
      for (int64_t k = 0; k < cnt && !s2; k++) s2 = tp_onnx_slice(m, y, a, b + k * sp[i], b + k * sp[i] + 1, 1, &parts[k]);
      if (!s2) s2 = tp_onnx_concat(m, (int)cnt, parts, a, &y);
      tp_free(parts);
      TP_TRY(s2);
      continue;
    }
    tp_attrs at;
    tp_attrs_init(&at);
    at.dim = a;
    at.start = st[i];
    at.end = en[i];
    at.step = sp[i];
    TP_TRY(tp_onnx_emit(m, TP_OP_SLICE, 1, &y, &at, &y));
  }
  return tp_onnx_set_out(m, n, 0, y);
}

tp_status tp_onnx_cv_split(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, r1, y;
  int nsp = 0, nout = n->nout;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_in(m, n, 1, &r1));
  tp_desc d = tp_onnx_desc(m, x);
  int64_t axis;
  TP_TRY(tp_onnx_axis(tp_onnx_attr_int(m, n, "axis", 0), d.ndim, "axis", &axis));
  attr *sa = tp_onnx_attr(m, n, "split", A_INTS);
  int64_t num = tp_onnx_attr_int(m, n, "num_outputs", 0);
  if (nout < 1) return tp_fail(TP_ERR_INVALID_ARG, "Split needs at least one output");
  /* one size per output (any number of outputs: each is a slice) */
  int64_t *sp = tp_alloc(sizeof(int64_t) * (size_t)(nout + 1));
  if (!sp) return TP_ERR_OUT_OF_MEMORY;
  tp_status s = TP_OK;
  if (r1.kind != R_NONE) {
    s = tp_onnx_const_ints(m, r1, "the split input", sp, nout + 1, &nsp);
  } else if (sa) {
    if (sa->nints != (size_t)nout) s = tp_fail(TP_ERR_INVALID_ARG, "split has %lld values for %d outputs", (long long)sa->nints, nout);
    else nsp = (int)sa->nints;
    if (!s && nsp) memcpy(sp, sa->ints, sizeof(int64_t) * (size_t)nsp);
  } else {
    int64_t k = num ? num : nout, len = d.shape[axis];
    if (k != nout) s = tp_fail(TP_ERR_INVALID_ARG, "num_outputs %lld differs from the %d outputs", (long long)k, nout);
    int64_t chunk = s ? 0 : (len + k - 1) / k;
    if (!s && !num && len % k)
      s = tp_fail(TP_ERR_INVALID_ARG, "axis size %lld cannot be split evenly into %d outputs", (long long)len, nout);
    for (int i = 0; i < nout && !s; i++) {
      int64_t b = i * chunk, e = b + chunk > len ? len : b + chunk;
      sp[nsp++] = e > b ? e - b : 0;
    }
  }
  if (!s && nsp != nout) s = tp_fail(TP_ERR_INVALID_ARG, "split has %d values for %d outputs", nsp, nout);
  int64_t tot = 0;
  for (int i = 0; i < nsp && !s; i++) {
    if (sp[i] < 0) s = tp_fail(TP_ERR_INVALID_ARG, "split sizes must be >= 0");
    else tot += sp[i];
  }
  if (!s && tot != d.shape[axis])
    s = tp_fail(TP_ERR_INVALID_ARG, "split sizes add up to %lld, the axis has %lld", (long long)tot, (long long)d.shape[axis]);
  int64_t off = 0;
  for (int i = 0; i < nsp && !s; i++) {
    s = tp_onnx_slice(m, x, axis, off, off + sp[i], 1, &y);
    if (!s) s = tp_onnx_set_out(m, n, i, y);
    off += sp[i];
  }
  tp_free(sp);
  return s;
}

tp_status tp_onnx_cv_tile(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, r1, y;
  int64_t rep[TP_MAX_DIMS];
  int nr;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_need_in(m, n, 1, &r1));
  TP_TRY(tp_onnx_const_ints(m, r1, "repeats", rep, TP_MAX_DIMS, &nr));
  tp_desc d = tp_onnx_desc(m, x);
  if (nr != d.ndim) return tp_fail(TP_ERR_INVALID_ARG, "repeats has %d values, the input rank is %d", nr, d.ndim);
  y = x;
  for (int a = 0; a < nr; a++) {
    if (rep[a] < 0 || rep[a] > 4096) return tp_fail(TP_ERR_INVALID_ARG, "repeats[%d] = %lld is out of range (0..4096)", a, (long long)rep[a]);
    if (rep[a] == 0) {
      TP_TRY(tp_onnx_slice(m, y, a, 0, 0, 1, &y));
      continue;
    }
    ref *parts = tp_alloc(sizeof(ref) * (size_t)rep[a]);
    if (!parts) return TP_ERR_OUT_OF_MEMORY;
    for (int64_t i = 0; i < rep[a]; i++) parts[i] = y;
    tp_status s = tp_onnx_concat(m, (int)rep[a], parts, a, &y);
    tp_free(parts);
    TP_TRY(s);
  }
  return tp_onnx_set_out(m, n, 0, y);
}

tp_status tp_onnx_cv_expand(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, r1, t, y;
  int64_t sh[TP_MAX_DIMS];
  int ns;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_need_in(m, n, 1, &r1));
  TP_TRY(tp_onnx_const_ints(m, r1, "shape", sh, TP_MAX_DIMS, &ns));
  for (int i = 0; i < ns; i++)
    if (sh[i] < 0) return tp_fail(TP_ERR_INVALID_ARG, "shape[%d] = %lld is negative", i, (long long)sh[i]);
  TP_TRY(tp_onnx_full(m, TP_BOOL, ns, sh, 1.0, &t));
  TP_TRY(tp_onnx_where(m, t, x, x, &y)); /* broadcasts x against shape */
  return tp_onnx_set_out(m, n, 0, y);
}

tp_status tp_onnx_cv_pad(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, rp, rc, ra, y;
  int64_t pads[2 * TP_MAX_DIMS], axes[TP_MAX_DIMS];
  int np = 0, na = 0;
  double cval = 0;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  tp_desc d = tp_onnx_desc(m, x);
  const char *mode = tp_onnx_attr_str(m, n, "mode", "constant");
  if (m->md.opset < 11) {
    attr *pa = tp_onnx_attr(m, n, "pads", A_INTS);
    if (!pa || pa->nints > 2 * TP_MAX_DIMS) return tp_fail(TP_ERR_INVALID_ARG, "attribute pads is required");
    np = (int)pa->nints;
    if (np) memcpy(pads, pa->ints, sizeof(int64_t) * (size_t)np);
    cval = tp_onnx_attr_float(m, n, "value", 0);
  } else {
    TP_TRY(tp_onnx_need_in(m, n, 1, &rp));
    TP_TRY(tp_onnx_const_ints(m, rp, "pads", pads, 2 * TP_MAX_DIMS, &np));
    TP_TRY(tp_onnx_in(m, n, 2, &rc));
    if (rc.kind != R_NONE) TP_TRY(tp_onnx_const_scalar(m, rc, "constant_value", &cval));
    TP_TRY(tp_onnx_in(m, n, 3, &ra));
    if (ra.kind != R_NONE) TP_TRY(tp_onnx_const_ints(m, ra, "axes", axes, TP_MAX_DIMS, &na));
  }
  if (!na) for (na = 0; na < d.ndim; na++) axes[na] = na;
  if (np != 2 * na) return tp_fail(TP_ERR_INVALID_ARG, "pads has %d values, expected %d", np, 2 * na);
  int md = !strcmp(mode, "constant") ? 0 : !strcmp(mode, "reflect") ? 1 : !strcmp(mode, "edge") ? 2
         : !strcmp(mode, "wrap") ? 3 : -1;
  if (md < 0) return tp_fail(TP_ERR_UNSUPPORTED, "mode '%s' is not supported (constant, reflect, edge, wrap are)", mode);
  y = x;
  for (int i = 0; i < na; i++) {
    int64_t a;
    TP_TRY(tp_onnx_axis(axes[i], d.ndim, "axis", &a));
    int64_t b = pads[i], e = pads[i + na];
    /* negative pads crop */
    if (b < 0 || e < 0) {
      int64_t len = tp_onnx_desc(m, y).shape[a];
      TP_TRY(tp_onnx_slice(m, y, a, b < 0 ? -b : 0, e < 0 ? len + e : len, 1, &y));
      if (b < 0) b = 0;
      if (e < 0) e = 0;
    }
    if (!b && !e) continue;
    int64_t len = tp_onnx_desc(m, y).shape[a];
    if (md == 0) {
      TP_TRY(tp_onnx_pad_const(m, y, (int)a, b, e, cval, &y));
      continue;
    }
    if (len == 0 || (md == 1 && (b >= len || e >= len)) || (md == 3 && (b > len || e > len)))
      return tp_fail(TP_ERR_INVALID_ARG, "%s padding of %lld/%lld does not fit axis %lld of size %lld", mode,
                     (long long)b, (long long)e, (long long)a, (long long)len);
    if (b + e + 1 > 4096) return tp_fail(TP_ERR_UNSUPPORTED, "padding too large");
    ref *parts = tp_alloc(sizeof(ref) * (size_t)(b + e + 1));
    if (!parts) return TP_ERR_OUT_OF_MEMORY;
    int k = 0;
    tp_status s = TP_OK;
    for (int64_t j = b; j >= 1 && !s; j--) {
      int64_t src = md == 1 ? j : md == 3 ? len - j : 0;
      s = tp_onnx_slice(m, y, a, src, src + 1, 1, &parts[k++]);
    }
    parts[k++] = y;
    for (int64_t j = 1; j <= e && !s; j++) {
      int64_t src = md == 1 ? len - 1 - j : md == 3 ? j - 1 : len - 1;
      s = tp_onnx_slice(m, y, a, src, src + 1, 1, &parts[k++]);
    }
    if (!s) s = tp_onnx_concat(m, k, parts, a, &y);
    tp_free(parts);
    TP_TRY(s);
  }
  return tp_onnx_set_out(m, n, 0, y);
}

tp_status tp_onnx_cv_shape(imp *m, onode *n, int size) {
  ref x, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  tp_desc d = tp_onnx_desc(m, x);
  tp_tensor *t;
  if (size) {
    int64_t v = tp_shape_numel(d.ndim, d.shape);
    TP_TRY(tp_tensor_new(TP_I64, 0, NULL, &v, &t));
  } else {
    int64_t s = tp_onnx_attr_int(m, n, "start", 0), e = tp_onnx_attr_int(m, n, "end", d.ndim);
    if (s < 0) s += d.ndim;
    if (e < 0) e += d.ndim;
    s = s < 0 ? 0 : s > d.ndim ? d.ndim : s;
    e = e < 0 ? 0 : e > d.ndim ? d.ndim : e;
    int64_t len = e > s ? e - s : 0;
    TP_TRY(tp_tensor_new(TP_I64, 1, &len, d.shape + s, &t));
  }
  TP_TRY(tp_onnx_add_const(m, t, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

static tp_status permute_ref(imp *m, ref x, int nd, const int64_t *perm, ref *out) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.nints = nd;
  memcpy(at.ints, perm, sizeof(int64_t) * (size_t)nd);
  return tp_onnx_emit(m, TP_OP_PERMUTE, 1, &x, &at, out);
}

/* DepthToSpace (arg 0; mode DCR or CRD) and SpaceToDepth (arg 1): a
 * reshape to 6-D, a permute, a reshape back. */
tp_status tp_onnx_cv_depth_space(imp *m, onode *n, int to_depth) {
  ref x, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  tp_desc d = tp_onnx_desc(m, x);
  int64_t b = tp_onnx_attr_int(m, n, "blocksize", 0);
  if (d.ndim != 4) return tp_fail(TP_ERR_INVALID_ARG, "input must be [N, C, H, W]");
  if (b < 1) return tp_fail(TP_ERR_INVALID_ARG, "blocksize must be >= 1, got %lld", (long long)b);
  int64_t N = d.shape[0], C = d.shape[1], H = d.shape[2], W = d.shape[3];
  if (!to_depth) {
    const char *mode = tp_onnx_attr_str(m, n, "mode", "DCR");
    int crd = !strcmp(mode, "CRD");
    if (!crd && strcmp(mode, "DCR")) return tp_fail(TP_ERR_INVALID_ARG, "mode '%s' is not DCR or CRD", mode);
    if (C % (b * b)) return tp_fail(TP_ERR_INVALID_ARG, "%lld channels are not a multiple of blocksize^2", (long long)C);
    int64_t c = C / (b * b);
    int64_t s6[6] = {N, b, b, c, H, W}, s6c[6] = {N, c, b, b, H, W};
    static const int64_t p_dcr[6] = {0, 3, 4, 1, 5, 2}, p_crd[6] = {0, 1, 4, 2, 5, 3};
    TP_TRY(tp_onnx_reshape(m, x, 6, crd ? s6c : s6, &y));
    TP_TRY(permute_ref(m, y, 6, crd ? p_crd : p_dcr, &y));
    int64_t s4[4] = {N, c, H * b, W * b};
    TP_TRY(tp_onnx_reshape(m, y, 4, s4, &y));
  } else {
    if (H % b || W % b) return tp_fail(TP_ERR_INVALID_ARG, "H and W must be multiples of blocksize %lld", (long long)b);
    int64_t s6[6] = {N, C, H / b, b, W / b, b};
    static const int64_t perm[6] = {0, 3, 5, 1, 2, 4};
    TP_TRY(tp_onnx_reshape(m, x, 6, s6, &y));
    TP_TRY(permute_ref(m, y, 6, perm, &y));
    int64_t s4[4] = {N, C * b * b, H / b, W / b};
    TP_TRY(tp_onnx_reshape(m, y, 4, s4, &y));
  }
  return tp_onnx_set_out(m, n, 0, y);
}

/* CenterCropPad: per axis, a centered slice where the input is larger than
 * the target and a centered zero pad where it is smaller (the extra element
 * of an odd difference goes after); the target shape is a value input. */
tp_status tp_onnx_cv_center_crop_pad(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, sr;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_need_in(m, n, 1, &sr));
  tp_desc d = tp_onnx_desc(m, x);
  int64_t sh[TP_MAX_DIMS], axes[TP_MAX_DIMS];
  int ns = 0, nax = d.ndim;
  TP_TRY(tp_onnx_const_ints(m, sr, "input 'shape'", sh, TP_MAX_DIMS, &ns));
  attr *aa = tp_onnx_attr(m, n, "axes", A_INTS);
  if (aa) {
    if ((int)aa->nints > d.ndim) return tp_fail(TP_ERR_INVALID_ARG, "%d axes for an input of rank %d", (int)aa->nints, d.ndim);
    nax = (int)aa->nints;
    for (int i = 0; i < nax; i++) {
      TP_TRY(tp_onnx_axis(aa->ints[i], d.ndim, "axes", &axes[i]));
      for (int j = 0; j < i; j++)
        if (axes[j] == axes[i]) return tp_fail(TP_ERR_INVALID_ARG, "axis %lld is repeated in axes", (long long)axes[i]);
    }
  } else {
    for (int i = 0; i < nax; i++) axes[i] = i;
  }
  if (ns != nax) return tp_fail(TP_ERR_INVALID_ARG, "input 'shape' has %d values for %d axes", ns, nax);
  for (int i = 0; i < nax; i++) {
    int64_t a = axes[i], in = d.shape[a], t = sh[i];
    if (t < 0 || t > TP_MAX_NUMEL)
      return tp_fail(TP_ERR_INVALID_ARG, "target size %lld on axis %lld is out of range", (long long)t, (long long)a);
    if (t < in) {
      int64_t st = (in - t) / 2;
      TP_TRY(tp_onnx_slice(m, x, a, st, st + t, 1, &x));
    } else if (t > in) {
      int64_t before = (t - in) / 2;
      TP_TRY(tp_onnx_pad_const(m, x, (int)a, before, t - in - before, 0.0, &x));
    }
  }
  return tp_onnx_set_out(m, n, 0, x);
}

/* ReverseSequence: along time_axis, the first sequence_lens[b] steps of
 * batch b reversed, the rest kept: gather_elements with the index
 * where(t < len, len - 1 - t, t), built from the run-time lengths. A length
 * above T gives an index past the end and a negative one is mapped past the
 * start, so both are out-of-range errors rather than a silent result. */
tp_status tp_onnx_cv_reverse_sequence(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, lens, t, idx, lt, neg, a[2];
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_need_in(m, n, 1, &lens));
  tp_desc d = tp_onnx_desc(m, x), dl = tp_onnx_desc(m, lens);
  if (d.ndim < 2) return tp_fail(TP_ERR_INVALID_ARG, "input must have rank >= 2, got %d", d.ndim);
  int64_t ta = tp_onnx_attr_int(m, n, "time_axis", 0), ba = tp_onnx_attr_int(m, n, "batch_axis", 1);
  if (!((ta == 0 && ba == 1) || (ta == 1 && ba == 0)))
    return tp_fail(TP_ERR_INVALID_ARG, "time_axis %lld and batch_axis %lld must be 0 and 1 in some order", (long long)ta, (long long)ba);
  int64_t T = d.shape[ta], B = d.shape[ba];
  if (dl.ndim != 1 || dl.shape[0] != B || (dl.dtype != TP_I64 && dl.dtype != TP_I32))
    return tp_fail(TP_ERR_INVALID_ARG, "sequence_lens must be int64 or int32 [%lld] (one length per batch entry)", (long long)B);
  int64_t sh[TP_MAX_DIMS];
  for (int i = 0; i < d.ndim; i++) sh[i] = 1;
  sh[ba] = B;
  TP_TRY(tp_onnx_cast(m, lens, TP_I64, &lens));
  TP_TRY(tp_onnx_reshape(m, lens, d.ndim, sh, &lens));
  sh[ba] = 1, sh[ta] = T;
  tp_tensor *tt;
  TP_TRY(tp_tensor_empty(TP_I64, d.ndim, sh, &tt));
  for (int64_t i = 0; i < T; i++) ((int64_t *)tp_tensor_ptr(tt))[i] = i;
  TP_TRY(tp_onnx_add_const(m, tt, &t));
  ref one = tp_onnx_scalar(1), past = tp_onnx_scalar(-(double)T - 1), zeros;
  one.is_int = past.is_int = 1;
  TP_TRY(tp_onnx_binary(m, TP_OP_LT, t, lens, &lt));
  TP_TRY(tp_onnx_binary(m, TP_OP_SUB, lens, one, &idx));
  TP_TRY(tp_onnx_binary(m, TP_OP_SUB, idx, t, &idx));
  TP_TRY(tp_onnx_where(m, lt, idx, t, &idx));
  TP_TRY(tp_onnx_binary(m, TP_OP_LT, lens, tp_onnx_scalar(0), &neg));
  TP_TRY(tp_onnx_where(m, neg, past, idx, &idx));
  TP_TRY(tp_onnx_full(m, TP_I64, d.ndim, d.shape, 0, &zeros));
  TP_TRY(tp_onnx_binary(m, TP_OP_ADD, idx, zeros, &idx)); /* to the input's shape */
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = (int)ta;
  a[0] = x, a[1] = idx;
  TP_TRY(tp_onnx_emit(m, TP_OP_GATHER_ELEMENTS, 2, a, &at, &x));
  return tp_onnx_set_out(m, n, 0, x);
}

/* TopK: the argtopk op gives the indices, gather_elements the values; K is
 * an input (opset 10+, a value input) or the attribute k (older). */
tp_status tp_onnx_cv_topk(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, kr, idx, vals, a[2];
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  tp_desc d = tp_onnx_desc(m, x);
  if (d.ndim < 1) return tp_fail(TP_ERR_INVALID_ARG, "input must have rank >= 1");
  tp_attrs at;
  tp_attrs_init(&at);
  TP_TRY(tp_onnx_axis(tp_onnx_attr_int(m, n, "axis", -1), d.ndim, "axis", &at.dim));
  at.largest = (int)tp_onnx_attr_int(m, n, "largest", 1);
  tp_onnx_attr_ignore(n, "sorted"); /* the results are always sorted */
  if (m->md.opset < 10) {
    at.k = tp_onnx_attr_int(m, n, "k", -1);
  } else {
    int64_t kv[1];
    int nk;
    TP_TRY(tp_onnx_need_in(m, n, 1, &kr));
    TP_TRY(tp_onnx_const_ints(m, kr, "K", kv, 1, &nk));
    at.k = kv[0];
  }
  TP_TRY(tp_onnx_emit(m, TP_OP_ARGTOPK, 1, &x, &at, &idx));
  tp_attrs_init(&at);
  TP_TRY(tp_onnx_axis(tp_onnx_attr_int(m, n, "axis", -1), d.ndim, "axis", &at.dim));
  a[0] = x, a[1] = idx;
  TP_TRY(tp_onnx_emit(m, TP_OP_GATHER_ELEMENTS, 2, a, &at, &vals));
  TP_TRY(tp_onnx_set_out(m, n, 0, vals));
  if (tp_onnx_has_out(n, 1)) TP_TRY(tp_onnx_set_out(m, n, 1, idx));
  return TP_OK;
}

/* GatherND: the gather_nd op (batch_dims). */
tp_status tp_onnx_cv_gather_nd(imp *m, onode *n, int arg) {
  (void)arg;
  ref a[2], y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &a[0]));
  TP_TRY(tp_onnx_need_in(m, n, 1, &a[1]));
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = tp_onnx_attr_int(m, n, "batch_dims", 0);
  TP_TRY(tp_onnx_emit(m, TP_OP_GATHER_ND, 2, a, &at, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* ScatterElements (arg 0), ScatterND (1), Scatter (2: opset 9-10's
 * ScatterElements): the scatter ops; indices are runtime data. */
tp_status tp_onnx_cv_scatter(imp *m, onode *n, int kind) {
  ref a[3], y;
  static const char *const reds[] = {"none", "add", "mul", "max", "min"};
  for (int i = 0; i < 3; i++) TP_TRY(tp_onnx_need_in(m, n, i, &a[i]));
  tp_attrs at;
  tp_attrs_init(&at);
  const char *red = kind == 2 ? "none" : tp_onnx_attr_str(m, n, "reduction", "none");
  at.reduction = -1;
  for (int i = 0; i < 5; i++)
    if (!strcmp(red, reds[i])) at.reduction = i;
  if (at.reduction < 0) return tp_fail(TP_ERR_INVALID_ARG, "reduction '%s' is not none, add, mul, max or min", red);
  if (kind != 1) {
    tp_desc d = tp_onnx_desc(m, a[0]);
    TP_TRY(tp_onnx_axis(tp_onnx_attr_int(m, n, "axis", 0), d.ndim, "axis", &at.dim));
  }
  TP_TRY(tp_onnx_emit(m, kind == 1 ? TP_OP_SCATTER_ND : TP_OP_SCATTER_ELEMENTS, 3, a, &at, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* OneHot: where(eq(indices + (indices < 0) * depth, iota(depth) along
 * axis), on, off); depth is a value input; out-of-range indices give a row
 * of off values, as ONNX says. */
tp_status tp_onnx_cv_onehot(imp *m, onode *n, int arg) {
  (void)arg;
  ref ix, dr, vr, y, neg, fix, idx, on, off;
  double depth;
  TP_TRY(tp_onnx_need_in(m, n, 0, &ix));
  TP_TRY(tp_onnx_need_in(m, n, 1, &dr));
  TP_TRY(tp_onnx_need_in(m, n, 2, &vr));
  TP_TRY(tp_onnx_const_scalar(m, dr, "depth", &depth));
  if (!(depth >= 1) || depth > (1 << 24)) return tp_fail(TP_ERR_INVALID_ARG, "depth %g", depth);
  tp_desc di = tp_onnx_desc(m, ix), dv = tp_onnx_desc(m, vr);
  if (dv.ndim != 1 || dv.shape[0] != 2) return tp_fail(TP_ERR_INVALID_ARG, "values must be [off, on]");
  if (di.ndim + 1 > TP_MAX_DIMS) return tp_fail(TP_ERR_UNSUPPORTED, "rank %d", di.ndim);
  int64_t axis;
  TP_TRY(tp_onnx_axis(tp_onnx_attr_int(m, n, "axis", -1), di.ndim + 1, "axis", &axis));
  int64_t D = (int64_t)depth;
  if (di.dtype != TP_F32) TP_TRY(tp_onnx_cast(m, ix, TP_F32, &ix)); /* indices compared as float32 */
  TP_TRY(tp_onnx_binary(m, TP_OP_LT, ix, tp_onnx_scalar(0), &neg));
  TP_TRY(tp_onnx_binary(m, TP_OP_ADD, ix, tp_onnx_scalar((double)D), &fix));
  TP_TRY(tp_onnx_where(m, neg, fix, ix, &ix));
  int64_t sh[TP_MAX_DIMS];
  for (int i = 0, k = 0; i <= di.ndim; i++) sh[i] = i == axis ? 1 : di.shape[k++];
  TP_TRY(tp_onnx_reshape(m, ix, di.ndim + 1, sh, &ix));
  int64_t ish[TP_MAX_DIMS];
  for (int i = 0; i <= di.ndim; i++) ish[i] = i == axis ? D : 1;
  tp_tensor *t;
  TP_TRY(tp_tensor_empty(TP_F32, (int)(di.ndim + 1 - axis), ish + axis, &t));
  for (int64_t i = 0; i < D; i++) ((float *)tp_tensor_ptr(t))[i] = (float)i;
  TP_TRY(tp_onnx_add_const(m, t, &idx));
  TP_TRY(tp_onnx_binary(m, TP_OP_EQ, ix, idx, &y));
  TP_TRY(tp_onnx_slice(m, vr, 0, 0, 1, 1, &off));
  TP_TRY(tp_onnx_slice(m, vr, 0, 1, 2, 1, &on));
  TP_TRY(tp_onnx_reshape(m, off, 0, NULL, &off));
  TP_TRY(tp_onnx_reshape(m, on, 0, NULL, &on));
  TP_TRY(tp_onnx_where(m, y, on, off, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* EyeLike: ones on diagonal k of a 2-D input's shape (made at import). */
tp_status tp_onnx_cv_eyelike(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  tp_desc d = tp_onnx_desc(m, x);
  if (d.ndim != 2) return tp_fail(TP_ERR_INVALID_ARG, "input must be 2-D");
  int64_t k = tp_onnx_attr_int(m, n, "k", 0), dt = tp_onnx_attr_int(m, n, "dtype", 0);
  tp_dtype out = d.dtype;
  if (dt && !tp_onnx_to_dtype(dt, &out)) return tp_fail(TP_ERR_UNSUPPORTED, "dtype %s", tp_onnx_dtype_name((int)dt));
  tp_tensor *t;
  TP_TRY(tp_tensor_empty(TP_F32, 2, d.shape, &t));
  float *p = tp_tensor_ptr(t);
  for (int64_t i = 0; i < d.shape[0]; i++)
    for (int64_t j = 0; j < d.shape[1]; j++) p[i * d.shape[1] + j] = j - i == k;
  TP_TRY(tp_onnx_add_const(m, t, &y));
  TP_TRY(tp_onnx_cast(m, y, out, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* Trilu: where(mask, x, 0) with the [rows, cols] mask of the kept triangle
 * (upper: col - row >= k; lower: col - row <= k) made at load time; k is an
 * optional input (a value input when fed at run time). */
tp_status tp_onnx_cv_trilu(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, kr, y;
  double k = 0;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_in(m, n, 1, &kr));
  if (kr.kind != R_NONE) TP_TRY(tp_onnx_const_scalar(m, kr, "k", &k));
  int upper = (int)tp_onnx_attr_int(m, n, "upper", 1);
  tp_desc d = tp_onnx_desc(m, x);
  if (d.ndim < 2) return tp_fail(TP_ERR_INVALID_ARG, "input must have rank >= 2");
  int64_t sh[2] = {d.shape[d.ndim - 2], d.shape[d.ndim - 1]};
  tp_tensor *mask;
  TP_TRY(tp_tensor_empty(TP_BOOL, 2, sh, &mask));
  uint8_t *p = tp_tensor_ptr(mask);
  for (int64_t i = 0; i < sh[0]; i++)
    for (int64_t j = 0; j < sh[1]; j++) p[i * sh[1] + j] = upper ? (double)(j - i) >= k : (double)(j - i) <= k;
  ref mr, zero = tp_onnx_scalar(0);
  zero.is_int = 1;
  TP_TRY(tp_onnx_add_const(m, mask, &mr));
  TP_TRY(tp_onnx_where(m, mr, x, zero, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* Gather and GatherElements: the gather / gather_elements ops, whose
 * indices are runtime data (an embedding lookup of token ids fed at run
 * time); folded at load time when data and indices are constants (shape
 * arithmetic: Shape -> Gather). `arg` is the tp_op. */
tp_status tp_onnx_cv_gather(imp *m, onode *n, int arg) {
  ref a[2], y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &a[0]));
  TP_TRY(tp_onnx_need_in(m, n, 1, &a[1]));
  tp_desc d = tp_onnx_desc(m, a[0]);
  if (d.ndim < 1) return tp_fail(TP_ERR_INVALID_ARG, "data must have rank >= 1");
  tp_attrs at;
  tp_attrs_init(&at);
  TP_TRY(tp_onnx_axis(tp_onnx_attr_int(m, n, "axis", 0), d.ndim, "axis", &at.dim));
  TP_TRY(tp_onnx_emit(m, (tp_op)arg, 2, a, &at, &y));
  return tp_onnx_set_out(m, n, 0, y);
}
