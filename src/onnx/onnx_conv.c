/* onnx_conv.c - convolution and pooling converters: Conv, ConvTranspose,
 * MaxPool, AveragePool, LpPool and the global pools (rows in onnx_ops.def).
 * 1-D and 2-D convolutions and simple 2-D pools map to the conv2d and
 * pool2d ops; the rest are compositions of existing ops (strided slices
 * stacked into windows, concat, matmul, reductions). */
#include "import.h"
#include <math.h>

/* Window geometry shared by Conv and the pools: nsp spatial dims of x
 * (rank 2 + nsp), kernel K, strides S, dilations D, pads P[2*nsp]
 * (begins then ends), output O. ceil: pooling's ceil_mode. */
typedef struct win {
  int nsp;
  int64_t K[6], S[6], D[6], P[12], O[6], extra[6];
} win;

static tp_status win_setup(imp *m, onode *n, const tp_desc *dx, win *w, int dil, int ceil_mode) {
  int nsp = w->nsp;
  TP_TRY(tp_onnx_attr_ints(m, n, "strides", w->S, nsp, 1));
  if (dil) TP_TRY(tp_onnx_attr_ints(m, n, "dilations", w->D, nsp, 1));
  else for (int i = 0; i < nsp; i++) w->D[i] = 1;
  TP_TRY(tp_onnx_attr_ints(m, n, "pads", w->P, 2 * nsp, 0));
  const char *ap = tp_onnx_attr_str(m, n, "auto_pad", "NOTSET");
  for (int i = 0; i < nsp; i++) {
    if (w->S[i] < 1 || w->D[i] < 1 || w->K[i] < 1)
      return tp_fail(TP_ERR_INVALID_ARG, "kernel, strides and dilations must be >= 1 (axis %d: %lld, %lld, %lld)",
                     i, (long long)w->K[i], (long long)w->S[i], (long long)w->D[i]);
    if (w->P[i] < 0 || w->P[i + nsp] < 0) return tp_fail(TP_ERR_INVALID_ARG, "pads must be >= 0");
    if (w->K[i] > (1 << 20) || w->S[i] > (1 << 20) || w->D[i] > (1 << 20) || w->P[i] > (1 << 20) ||
        w->P[i + nsp] > (1 << 20))
      return tp_fail(TP_ERR_INVALID_ARG, "kernel, strides, dilations and pads must be at most 2^20");
  }
  for (int i = 0; i < nsp; i++) {
    int64_t in = dx->shape[2 + i], ke = (w->K[i] - 1) * w->D[i] + 1;
    w->extra[i] = 0;
    if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
      int64_t o = (in + w->S[i] - 1) / w->S[i], tot = (o - 1) * w->S[i] + ke - in;
      if (tot < 0) tot = 0;
      int64_t b = !strcmp(ap, "SAME_UPPER") ? tot / 2 : tot - tot / 2;
      w->P[i] = b, w->P[i + nsp] = tot - b;
    } else if (!strcmp(ap, "VALID")) {
      w->P[i] = w->P[i + nsp] = 0;
    } else if (strcmp(ap, "NOTSET")) {
      return tp_fail(TP_ERR_INVALID_ARG, "auto_pad '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", ap);
    }
    int64_t span = in + w->P[i] + w->P[i + nsp] - ke;
    if (span < 0)
      return tp_fail(TP_ERR_INVALID_ARG, "kernel extent %lld is larger than the padded input %lld on spatial axis %d",
                     (long long)ke, (long long)(in + w->P[i] + w->P[i + nsp]), i);
    int64_t o = span / w->S[i] + 1;
    if (ceil_mode && span % w->S[i]) {
      o++;
      if ((o - 1) * w->S[i] >= in + w->P[i]) o--; /* the last window must start inside */
    }
    w->O[i] = o;
    int64_t need = (o - 1) * w->S[i] + ke - (in + w->P[i] + w->P[i + nsp]);
    w->extra[i] = need > 0 ? need : 0;
  }
  return TP_OK;
}

/* Pads x (explicit pads with v, ceil-mode extra with ev) and stacks the
 * windows: [N, C, K1*..*Kk, O1*..*Ok]. */
static tp_status windows(imp *m, ref x, const win *w, double v, double ev, ref *out) {
  tp_desc d = tp_onnx_desc(m, x);
  int nsp = w->nsp;
  for (int i = 0; i < nsp; i++) {
    TP_TRY(tp_onnx_pad_const(m, x, 2 + i, w->P[i], w->P[i + nsp], v, &x));
    if (w->extra[i]) TP_TRY(tp_onnx_pad_const(m, x, 2 + i, 0, w->extra[i], ev, &x));
  }
  int64_t KK = 1, P = 1;
  for (int i = 0; i < nsp; i++) KK *= w->K[i], P *= w->O[i];
  if (KK > 4096) return tp_fail(TP_ERR_UNSUPPORTED, "kernel of %lld elements is too large", (long long)KK);
  ref *parts = tp_alloc(sizeof(ref) * (size_t)KK);
  if (!parts) return TP_ERR_OUT_OF_MEMORY;
  tp_status s = TP_OK;
  int64_t sh[4] = {d.shape[0], d.shape[1], 1, P};
  for (int64_t kk = 0; kk < KK && !s; kk++) {
    int64_t rem = kk;
    ref y = x;
    for (int i = nsp - 1; i >= 0 && !s; i--) {
      int64_t k = rem % w->K[i];
      rem /= w->K[i];
      int64_t st = k * w->D[i];
      s = tp_onnx_slice(m, y, 2 + i, st, st + (w->O[i] - 1) * w->S[i] + 1, w->S[i], &y);
    }
    if (!s) s = tp_onnx_reshape(m, y, 4, sh, &parts[kk]);
  }
  if (!s) s = tp_onnx_concat(m, (int)KK, parts, 2, out);
  tp_free(parts);
  return s;
}

static tp_status check_spatial(const tp_desc *d, const char *what, int min_nd) {
  if (d->ndim < min_nd || d->ndim > 5)
    return tp_fail(TP_ERR_INVALID_ARG, "%s must have rank 3 to 5 ([N, C, spatial...]), got rank %d", what, d->ndim);
  if (d->dtype != TP_F32)
    return tp_fail(TP_ERR_UNSUPPORTED, "%s has dtype %s; only float32 is supported", what, tp_dtype_name(d->dtype));
  return TP_OK;
}

static tp_status conv_apply(imp *m, ref x, ref wt, ref b, int64_t G, const win *wp, ref *out);

/* X, W and the optional bias B of Conv and ConvTranspose, with X and W
 * checked to be spatial tensors of one rank. */
static tp_status conv_inputs(imp *m, onode *n, ref *x, ref *wt, ref *b, tp_desc *dx, tp_desc *dw) {
  TP_TRY(tp_onnx_need_in(m, n, 0, x));
  TP_TRY(tp_onnx_need_in(m, n, 1, wt));
  TP_TRY(tp_onnx_in(m, n, 2, b));
  *dx = tp_onnx_desc(m, *x);
  *dw = tp_onnx_desc(m, *wt);
  TP_TRY(check_spatial(dx, "input X", 3));
  TP_TRY(check_spatial(dw, "weight W", 3));
  if (dw->ndim != dx->ndim)
    return tp_fail(TP_ERR_INVALID_ARG, "weight W has rank %d, input X rank %d (they must match)", dw->ndim, dx->ndim);
  return TP_OK;
}

/* Conv's window for x and w (kernel_shape checked against w, auto_pad,
 * group against the channels) into w; the group in *G. */
static tp_status conv_window(imp *m, onode *n, const tp_desc *dx, const tp_desc *dw, win *wp, int64_t *G) {
  win w;
  memset(&w, 0, sizeof w);
  w.nsp = dx->ndim - 2;
  int64_t ks[6];
  TP_TRY(tp_onnx_attr_ints(m, n, "kernel_shape", ks, w.nsp, -1));
  for (int i = 0; i < w.nsp; i++) {
    w.K[i] = dw->shape[2 + i];
    if (ks[i] != -1 && ks[i] != w.K[i])
      return tp_fail(TP_ERR_INVALID_ARG, "kernel_shape[%d] = %lld does not match the weight (%lld)", i, (long long)ks[i], (long long)w.K[i]);
  }
  int64_t g = tp_onnx_attr_int(m, n, "group", 1), C = dx->shape[1], M = dw->shape[0];
  if (g < 1 || C % g || M % g || dw->shape[1] * g != C)
    return tp_fail(TP_ERR_INVALID_ARG, "group %lld does not fit input channels %lld and weight %lld x %lld",
                   (long long)g, (long long)C, (long long)M, (long long)dw->shape[1]);
  TP_TRY(win_setup(m, n, dx, &w, 1, 0));
  *wp = w;
  *G = g;
  return TP_OK;
}

/* The conv2d attributes (window, groups) of a 1-D or 2-D window: a 1-D one as H = 1. */
static void conv2d_attrs(const win *w, int64_t G, tp_attrs *at) {
  tp_attrs_init(at);
  at->nints = 8;
  at->dim = G;
  if (w->nsp == 1) {
    int64_t v[8] = {1, w->S[0], 0, w->P[0], 0, w->P[1], 1, w->D[0]};
    memcpy(at->ints, v, sizeof v);
  } else {
    int64_t v[8] = {w->S[0], w->S[1], w->P[0], w->P[1], w->P[2], w->P[3], w->D[0], w->D[1]};
    memcpy(at->ints, v, sizeof v);
  }
}

tp_status tp_onnx_conv_op(imp *m, onode *n, tp_op op, int nargs, ref *args, int *taken, ref *out) {
  ref x = args[0], wt = args[1];
  tp_desc dx = tp_onnx_desc(m, x), dw = tp_onnx_desc(m, wt);
  *taken = 0;
  if (dx.ndim < 3 || dx.ndim > 4 || dw.ndim != dx.ndim) return TP_OK; /* 3-D: the caller's path */
  win w;
  int64_t G;
  TP_TRY(conv_window(m, n, &dx, &dw, &w, &G));
  tp_attrs at;
  conv2d_attrs(&w, G, &at);
  ref a[9];
  if (nargs > 9) return tp_fail(TP_ERR_INTERNAL, "conv: %d operands", nargs);
  memcpy(a, args, sizeof(ref) * (size_t)nargs);
  if (w.nsp == 1) {
    int64_t sx[4] = {dx.shape[0], dx.shape[1], 1, dx.shape[2]}, sw[4] = {dw.shape[0], dw.shape[1], 1, dw.shape[2]};
    TP_TRY(tp_onnx_reshape(m, x, 4, sx, &a[0]));
    TP_TRY(tp_onnx_reshape(m, wt, 4, sw, &a[1]));
  }
  ref y;
  TP_TRY(tp_onnx_emit(m, op, nargs, a, &at, &y));
  if (w.nsp == 1) {
    tp_desc dy = tp_onnx_desc(m, y);
    int64_t so[3] = {dy.shape[0], dy.shape[1], dy.shape[3]};
    TP_TRY(tp_onnx_reshape(m, y, 3, so, &y));
  }
  *taken = 1;
  *out = y;
  return TP_OK;
}

tp_status tp_onnx_cv_conv(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, wt, b, y;
  tp_desc dx, dw;
  TP_TRY(conv_inputs(m, n, &x, &wt, &b, &dx, &dw));
  win w;
  int64_t G;
  TP_TRY(conv_window(m, n, &dx, &dw, &w, &G));
  TP_TRY(conv_apply(m, x, wt, b, G, &w, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* 1-D and 2-D: the conv2d op (1-D as H = 1), window from w. */
static tp_status conv2d_apply(imp *m, ref x, ref wt, ref b, int64_t G, const win *w, ref *out) {
  tp_desc dx = tp_onnx_desc(m, x), dw = tp_onnx_desc(m, wt);
  tp_attrs at;
  conv2d_attrs(w, G, &at);
  if (w->nsp == 1) {
    int64_t sx[4] = {dx.shape[0], dx.shape[1], 1, dx.shape[2]}, sw[4] = {dw.shape[0], dw.shape[1], 1, dw.shape[2]};
    TP_TRY(tp_onnx_reshape(m, x, 4, sx, &x));
    TP_TRY(tp_onnx_reshape(m, wt, 4, sw, &wt));
  }
  if (b.kind != R_NONE) {
    tp_desc db = tp_onnx_desc(m, b);
    if (db.ndim != 1 || db.shape[0] != dw.shape[0])
      return tp_fail(TP_ERR_INVALID_ARG, "bias B must have shape [%lld]", (long long)dw.shape[0]);
  }
  ref args[3] = {x, wt, b};
  ref y;
  TP_TRY(tp_onnx_emit(m, TP_OP_CONV2D, 3, args, &at, &y));
  if (w->nsp == 1) {
    tp_desc dy = tp_onnx_desc(m, y);
    int64_t so[3] = {dy.shape[0], dy.shape[1], dy.shape[3]};
    TP_TRY(tp_onnx_reshape(m, y, 3, so, &y));
  }
  *out = y;
  return TP_OK;
}

/* y = conv(x, wt) (+ b) over the window geometry w; [N, M, O...]. 1-D and
 * 2-D run the conv2d op; 3-D is im2col by strided slices plus a batched
 * matmul. */
static tp_status conv_apply(imp *m, ref x, ref wt, ref b, int64_t G, const win *wp, ref *out) {
  win w = *wp;
  ref y;
  if (w.nsp <= 2) return conv2d_apply(m, x, wt, b, G, &w, out);
  tp_desc dx = tp_onnx_desc(m, x), dw = tp_onnx_desc(m, wt);
  int64_t N = dx.shape[0], C = dx.shape[1], M = dw.shape[0];
  int64_t KK = 1, P = 1;
  for (int i = 0; i < w.nsp; i++) KK *= w.K[i], P *= w.O[i];
  ref cols;
  TP_TRY(windows(m, x, &w, 0, 0, &cols)); /* [N, C, KK, P] */
  int64_t Cg = C / G, Mg = M / G;
  int64_t s5[4] = {N, G, Cg * KK, P}, sw[3] = {G, Mg, Cg * KK}, s3[3] = {N, M, P};
  TP_TRY(tp_onnx_reshape(m, cols, 4, s5, &cols));
  TP_TRY(tp_onnx_reshape(m, wt, 3, sw, &wt));
  TP_TRY(tp_onnx_binary(m, TP_OP_MATMUL, wt, cols, &y)); /* [N, G, Mg, P] */
  TP_TRY(tp_onnx_reshape(m, y, 3, s3, &y));
  if (b.kind != R_NONE) {
    tp_desc db = tp_onnx_desc(m, b);
    if (db.ndim != 1 || db.shape[0] != M)
      return tp_fail(TP_ERR_INVALID_ARG, "bias B must have shape [%lld]", (long long)M);
    int64_t sb[2] = {M, 1};
    TP_TRY(tp_onnx_reshape(m, b, 2, sb, &b));
    TP_TRY(tp_onnx_binary(m, TP_OP_ADD, y, b, &y));
  }
  int64_t so[TP_MAX_DIMS] = {N, M};
  for (int i = 0; i < w.nsp; i++) so[2 + i] = w.O[i];
  return tp_onnx_reshape(m, y, dx.ndim, so, out);
}

/* Reverses x along axis a (one slice per element). */
static tp_status flip(imp *m, ref x, int a, ref *out) {
  int64_t len = tp_onnx_desc(m, x).shape[a];
  if (len <= 1) {
    *out = x;
    return TP_OK;
  }
  if (len > 4096) return tp_fail(TP_ERR_UNSUPPORTED, "cannot reverse an axis of %lld elements", (long long)len);
  ref *parts = tp_alloc(sizeof(ref) * (size_t)len);
  if (!parts) return TP_ERR_OUT_OF_MEMORY;
  tp_status s = TP_OK;
  for (int64_t k = 0; k < len && !s; k++) s = tp_onnx_slice(m, x, a, len - 1 - k, len - k, 1, &parts[k]);
  if (!s) s = tp_onnx_concat(m, (int)len, parts, a, out);
  tp_free(parts);
  return s;
}

static tp_status permute(imp *m, ref x, int nd, const int64_t *perm, ref *out) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.nints = nd;
  memcpy(at.ints, perm, sizeof(int64_t) * (size_t)nd);
  return tp_onnx_emit(m, TP_OP_PERMUTE, 1, &x, &at, out);
}

/* ConvTranspose whose kernel equals its stride (no dilation, one group,
 * no output_padding; the upsampling layers of segmentation heads): the
 * windows of the input positions do not overlap, so
 * y[n, m, i*S0 + a, j*S1 + b] = sum_c x[n, c, i, j] w[c, m, a, b] (+ b[m])
 * is one GEMM x^T [N, H*W, C] @ w [C, M*S0*S1] (the weight as the packed
 * constant B), its result permuted into place; pads crop. The general
 * form below convolves the zero-upsampled input: S0*S1 times the
 * multiply-adds, most of them by zero, and the upsampling copies (in
 * PP-OCRv4 text detection, 2x2 stride 2: 6.1 ms of a 20 ms plan, natively). */
static tp_status convtranspose_gemm(imp *m, onode *n, ref x, ref wt, ref b, int nsp, const int64_t *S,
                                    const int64_t *P) {
  tp_desc dx = tp_onnx_desc(m, x), dw = tp_onnx_desc(m, wt);
  int64_t N = dx.shape[0], C = dx.shape[1], M = dw.shape[1], H = dx.shape[2];
  int64_t W = nsp == 2 ? dx.shape[3] : 1, S1 = nsp == 2 ? S[1] : 1, MS = M * S[0] * S1;
  ref y;
  int64_t s3[3] = {N, C, H * W}, sw[2] = {C, MS}, p3[3] = {0, 2, 1};
  TP_TRY(tp_onnx_reshape(m, x, 3, s3, &x));
  TP_TRY(permute(m, x, 3, p3, &x)); /* [N, HW, C] */
  TP_TRY(tp_onnx_reshape(m, wt, 2, sw, &wt));
  TP_TRY(tp_onnx_binary(m, TP_OP_MATMUL, x, wt, &y)); /* [N, HW, M*S0*S1] */
  if (nsp == 2) {
    int64_t s6[6] = {N, H, W, M, S[0], S1}, p6[6] = {0, 3, 1, 4, 2, 5}, s4[4] = {N, M, H * S[0], W * S1};
    TP_TRY(tp_onnx_reshape(m, y, 6, s6, &y));
    TP_TRY(permute(m, y, 6, p6, &y)); /* [N, M, H, S0, W, S1] */
    TP_TRY(tp_onnx_reshape(m, y, 4, s4, &y));
  } else {
    int64_t s4[4] = {N, H, M, S[0]}, p4[4] = {0, 2, 1, 3}, so[3] = {N, M, H * S[0]};
    TP_TRY(tp_onnx_reshape(m, y, 4, s4, &y));
    TP_TRY(permute(m, y, 4, p4, &y)); /* [N, M, H, S0] */
    TP_TRY(tp_onnx_reshape(m, y, 3, so, &y));
  }
  if (b.kind != R_NONE) {
    tp_desc db = tp_onnx_desc(m, b);
    if (db.ndim != 1 || db.shape[0] != M) return tp_fail(TP_ERR_INVALID_ARG, "bias B must have shape [%lld]", (long long)M);
    int64_t sb[3] = {M, 1, 1};
    TP_TRY(tp_onnx_reshape(m, b, 1 + nsp, sb, &b));
    TP_TRY(tp_onnx_binary(m, TP_OP_ADD, y, b, &y));
  }
  for (int i = 0; i < nsp; i++) {
    int64_t len = tp_onnx_desc(m, y).shape[2 + i];
    if (P[i] || P[i + nsp]) TP_TRY(tp_onnx_slice(m, y, 2 + i, P[i], len - P[i + nsp], 1, &y));
  }
  return tp_onnx_set_out(m, n, 0, y);
}

/* ConvTranspose = Conv of the zero-upsampled input with the flipped,
 * channel-transposed weight and complementary padding. */
tp_status tp_onnx_cv_convtranspose(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, wt, b, y;
  tp_desc dx, dw;
  TP_TRY(conv_inputs(m, n, &x, &wt, &b, &dx, &dw));
  int nsp = dx.ndim - 2;
  int64_t G = tp_onnx_attr_int(m, n, "group", 1), C = dx.shape[1];
  if (G < 1 || C % G || dw.shape[0] != C)
    return tp_fail(TP_ERR_INVALID_ARG, "group %lld does not fit input channels %lld and weight channels %lld",
                   (long long)G, (long long)C, (long long)dw.shape[0]);
  int64_t Cg = C / G, Mg = dw.shape[1], M = Mg * G;
  int64_t S[6], D[6], P[12], OP[6], OS[6], K[6], ks[6];
  TP_TRY(tp_onnx_attr_ints(m, n, "kernel_shape", ks, nsp, -1));
  TP_TRY(tp_onnx_attr_ints(m, n, "strides", S, nsp, 1));
  TP_TRY(tp_onnx_attr_ints(m, n, "dilations", D, nsp, 1));
  TP_TRY(tp_onnx_attr_ints(m, n, "pads", P, 2 * nsp, 0));
  TP_TRY(tp_onnx_attr_ints(m, n, "output_padding", OP, nsp, 0));
  attr *osa = tp_onnx_attr(m, n, "output_shape", A_INTS);
  const char *ap = tp_onnx_attr_str(m, n, "auto_pad", "NOTSET");
  int same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
  if (!same && strcmp(ap, "NOTSET") && strcmp(ap, "VALID"))
    return tp_fail(TP_ERR_INVALID_ARG, "auto_pad '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", ap);
  if (osa && (int)osa->nints != nsp && (int)osa->nints != dx.ndim)
    return tp_fail(TP_ERR_INVALID_ARG, "output_shape has %d values, expected %d", (int)osa->nints, nsp);
  for (int i = 0; i < nsp; i++) {
    K[i] = dw.shape[2 + i];
    if (ks[i] != -1 && ks[i] != K[i])
      return tp_fail(TP_ERR_INVALID_ARG, "kernel_shape[%d] = %lld does not match the weight (%lld)", i, (long long)ks[i], (long long)K[i]);
    if (S[i] < 1 || D[i] < 1 || OP[i] < 0 || P[i] < 0 || P[i + nsp] < 0 ||
        (osa && osa->ints[osa->nints == (size_t)nsp ? i : 2 + i] < 1))
      return tp_fail(TP_ERR_INVALID_ARG, "strides and dilations must be >= 1, pads and output_padding >= 0");
    if (S[i] > 4096 || D[i] > 4096 || OP[i] > 4096 || P[i] > (1 << 20) || P[i + nsp] > (1 << 20) ||
        (osa && osa->ints[osa->nints == (size_t)nsp ? i : 2 + i] > (1 << 24)))
      return tp_fail(TP_ERR_INVALID_ARG, "strides, dilations, output_padding, pads or output_shape out of range");
    if (!strcmp(ap, "VALID")) P[i] = P[i + nsp] = 0;
    int64_t in = dx.shape[2 + i], ke = (K[i] - 1) * D[i] + 1;
    if (osa || same) {
      OS[i] = osa ? osa->ints[osa->nints == (size_t)nsp ? i : 2 + i] : in * S[i];
      int64_t tot = S[i] * (in - 1) + OP[i] + ke - OS[i];
      int64_t half = tot >= 0 ? tot / 2 : -((-tot + 1) / 2); /* floor(tot / 2); tot < 0 grows the output */
      if (!strcmp(ap, "SAME_UPPER")) P[i] = half, P[i + nsp] = tot - half;
      else P[i] = tot - half, P[i + nsp] = half;
    }
  }
  int nonoverlap = G == 1 && nsp <= 2 && dx.dtype == TP_F32;
  for (int i = 0; i < nsp; i++)
    nonoverlap &= K[i] == S[i] && D[i] == 1 && OP[i] == 0 && P[i] >= 0 && P[i + nsp] >= 0 &&
                  P[i] + P[i + nsp] < S[i] * dx.shape[2 + i];
  if (nonoverlap) return convtranspose_gemm(m, n, x, wt, b, nsp, S, P);
  /* weight [C, Mg, K...] -> [M, Cg, K...], flipped spatially */
  int64_t sh[TP_MAX_DIMS], perm[TP_MAX_DIMS];
  sh[0] = G, sh[1] = Cg, sh[2] = Mg;
  for (int i = 0; i < nsp; i++) sh[3 + i] = K[i];
  TP_TRY(tp_onnx_reshape(m, wt, 3 + nsp, sh, &wt));
  tp_attrs at;
  tp_attrs_init(&at);
  at.nints = 3 + nsp;
  perm[0] = 0, perm[1] = 2, perm[2] = 1;
  for (int i = 0; i < nsp; i++) perm[3 + i] = 3 + i;
  memcpy(at.ints, perm, sizeof(int64_t) * (size_t)at.nints);
  TP_TRY(tp_onnx_emit(m, TP_OP_PERMUTE, 1, &wt, &at, &wt));
  sh[0] = M, sh[1] = Cg;
  for (int i = 0; i < nsp; i++) sh[2 + i] = K[i];
  TP_TRY(tp_onnx_reshape(m, wt, 2 + nsp, sh, &wt));
  for (int i = 0; i < nsp; i++) TP_TRY(flip(m, wt, 2 + i, &wt));
  /* zero-upsample x by the strides */
  for (int i = 0; i < nsp; i++) {
    if (S[i] == 1) continue;
    tp_desc d = tp_onnx_desc(m, x);
    int a = 2 + i;
    int64_t s2[TP_MAX_DIMS];
    int k = 0;
    for (int j = 0; j < d.ndim; j++) {
      s2[k++] = d.shape[j];
      if (j == a) s2[k++] = 1;
    }
    ref parts[2];
    TP_TRY(tp_onnx_reshape(m, x, d.ndim + 1, s2, &parts[0]));
    s2[a + 1] = S[i] - 1;
    TP_TRY(tp_onnx_full(m, d.dtype, d.ndim + 1, s2, 0, &parts[1]));
    TP_TRY(tp_onnx_concat(m, 2, parts, a + 1, &x));
    memcpy(s2, d.shape, sizeof s2);
    s2[a] = d.shape[a] * S[i];
    TP_TRY(tp_onnx_reshape(m, x, d.ndim, s2, &x));
    TP_TRY(tp_onnx_slice(m, x, a, 0, (d.shape[a] - 1) * S[i] + 1, 1, &x));
  }
  win w;
  memset(&w, 0, sizeof w);
  w.nsp = nsp;
  for (int i = 0; i < nsp; i++) {
    int64_t ke = (K[i] - 1) * D[i] + 1;
    int64_t pb = ke - 1 - P[i], pe = ke - 1 - P[i + nsp] + OP[i];
    if (pb < 0 || pe < 0) { /* crop instead */
      int64_t len = tp_onnx_desc(m, x).shape[2 + i];
      TP_TRY(tp_onnx_slice(m, x, 2 + i, pb < 0 ? -pb : 0, pe < 0 ? len + pe : len, 1, &x));
      if (pb < 0) pb = 0;
      if (pe < 0) pe = 0;
    }
    int64_t len = tp_onnx_desc(m, x).shape[2 + i];
    w.K[i] = K[i], w.S[i] = 1, w.D[i] = D[i], w.P[i] = pb, w.P[i + nsp] = pe;
    w.O[i] = len + pb + pe - ke + 1;
    if (w.O[i] < 1) return tp_fail(TP_ERR_INVALID_ARG, "the output would be empty on spatial axis %d", i);
  }
  if (b.kind != R_NONE) {
    tp_desc db = tp_onnx_desc(m, b);
    if (db.ndim != 1 || db.shape[0] != M) return tp_fail(TP_ERR_INVALID_ARG, "bias B must have shape [%lld]", (long long)M);
  }
  TP_TRY(conv_apply(m, x, wt, b, G, &w, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* arg 0: MaxPool, 1: AveragePool, 2: LpPool = (sum over the window of
 * |x|^p)^(1/p), zero padding */
tp_status tp_onnx_cv_pool(imp *m, onode *n, int kind) {
  int avg = kind == 1, lp = kind == 2;
  ref x, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  tp_desc dx = tp_onnx_desc(m, x);
  TP_TRY(check_spatial(&dx, "input X", 3));
  win w;
  memset(&w, 0, sizeof w);
  w.nsp = dx.ndim - 2;
  attr *ka = tp_onnx_attr(m, n, "kernel_shape", A_INTS);
  if (!ka || (int)ka->nints != w.nsp)
    return tp_fail(TP_ERR_INVALID_ARG, "kernel_shape must be given with %d values", w.nsp);
  memcpy(w.K, ka->ints, sizeof(int64_t) * (size_t)w.nsp);
  int ceil_mode = (int)tp_onnx_attr_int(m, n, "ceil_mode", 0);
  int64_t p = lp ? tp_onnx_attr_int(m, n, "p", 2) : 0;
  if (lp && (p < 1 || p > 64)) return tp_fail(TP_ERR_INVALID_ARG, "LpPool's p is %lld; it must be 1 to 64", (long long)p);
  int incl = avg ? (int)tp_onnx_attr_int(m, n, "count_include_pad", 0) : 0;
  int64_t order = avg || lp ? 0 : tp_onnx_attr_int(m, n, "storage_order", 0);
  if (order != 0 && order != 1) return tp_fail(TP_ERR_INVALID_ARG, "storage_order must be 0 or 1");
  TP_TRY(win_setup(m, n, &dx, &w, 1, ceil_mode));
  /* 2-D, no dilation, no ceil-mode window, no Indices output, pads smaller
   * than the kernel: the max_pool2d / avg_pool2d ops */
  int simple = !lp && w.nsp == 2 && !ceil_mode && !(!avg && tp_onnx_has_out(n, 1));
  for (int i = 0; simple && i < 2; i++)
    simple = w.D[i] == 1 && w.extra[i] == 0 && w.P[i] < w.K[i] && w.P[i + 2] < w.K[i];
  if (simple) {
    tp_attrs pa;
    tp_attrs_init(&pa);
    int64_t v[8] = {w.K[0], w.K[1], w.S[0], w.S[1], w.P[0], w.P[1], w.P[2], w.P[3]};
    memcpy(pa.ints, v, sizeof v);
    pa.nints = 8;
    pa.dim = incl;
    TP_TRY(tp_onnx_emit(m, avg ? TP_OP_AVG_POOL2D : TP_OP_MAX_POOL2D, 1, &x, &pa, &y));
    return tp_onnx_set_out(m, n, 0, y);
  }
  ref st;
  int64_t dim2 = 2;
  if (lp) {
    if (p != 2) TP_TRY(tp_onnx_unary(m, TP_OP_ABS, x, &x));
    TP_TRY(tp_onnx_pow_pos(m, x, (double)p, &x));
    TP_TRY(windows(m, x, &w, 0, 0, &st));
    TP_TRY(tp_onnx_reduce(m, TP_OP_SUM, st, 1, &dim2, 0, &y));
    TP_TRY(tp_onnx_pow_pos(m, y, 1.0 / (double)p, &y));
  } else if (!avg) {
    TP_TRY(windows(m, x, &w, -INFINITY, -INFINITY, &st));
    TP_TRY(tp_onnx_reduce(m, TP_OP_MAX, st, 1, &dim2, 0, &y));
    if (tp_onnx_has_out(n, 1)) { /* Indices: the flat input index of the first max of each window */
      int64_t tot = tp_shape_numel(dx.ndim, dx.shape), S = 1, KK = 1;
      for (int i = 0; i < w.nsp; i++) S *= dx.shape[2 + i], KK *= w.K[i];
      tp_tensor *it;
      TP_TRY(tp_tensor_empty(TP_I64, dx.ndim, dx.shape, &it));
      int64_t *iv = tp_tensor_ptr(it);
      for (int64_t p = 0; p < tot; p++) {
        int64_t nc = p / S, r = p % S, c = 0, mul = 1;
        if (order == 0) c = r;
        else /* column major over the spatial dims */
          for (int i = 0; i < w.nsp; i++) {
            int64_t e = 1;
            for (int j = i + 1; j < w.nsp; j++) e *= dx.shape[2 + j];
            c += (r / e % dx.shape[2 + i]) * mul;
            mul *= dx.shape[2 + i];
          }
        iv[p] = nc * S + c;
      }
      ref idx, mx, eq, kk, first, sel;
      TP_TRY(tp_onnx_add_const(m, it, &idx));
      TP_TRY(windows(m, idx, &w, -1, -1, &idx)); /* folded: [N, C, KK, P] */
      TP_TRY(tp_onnx_reduce(m, TP_OP_MAX, st, 1, &dim2, 1, &mx));
      TP_TRY(tp_onnx_binary(m, TP_OP_EQ, st, mx, &eq));
      int64_t ksh[2] = {KK, 1};
      tp_tensor *kt;
      TP_TRY(tp_tensor_empty(TP_I64, 2, ksh, &kt));
      for (int64_t i = 0; i < KK; i++) ((int64_t *)tp_tensor_ptr(kt))[i] = i;
      TP_TRY(tp_onnx_add_const(m, kt, &kk));
      ref big = tp_onnx_scalar((double)KK), zero = tp_onnx_scalar(0);
      big.is_int = zero.is_int = 1;
      TP_TRY(tp_onnx_where(m, eq, kk, big, &first));
      TP_TRY(tp_onnx_reduce(m, TP_OP_MIN, first, 1, &dim2, 1, &first));
      TP_TRY(tp_onnx_binary(m, TP_OP_EQ, kk, first, &sel));
      TP_TRY(tp_onnx_where(m, sel, idx, zero, &sel));
      TP_TRY(tp_onnx_reduce(m, TP_OP_SUM, sel, 1, &dim2, 0, &sel));
      int64_t so[TP_MAX_DIMS] = {dx.shape[0], dx.shape[1]};
      for (int i = 0; i < w.nsp; i++) so[2 + i] = w.O[i];
      TP_TRY(tp_onnx_reshape(m, sel, dx.ndim, so, &sel));
      TP_TRY(tp_onnx_set_out(m, n, 1, sel));
    }
  } else {
    TP_TRY(windows(m, x, &w, 0, 0, &st));
    TP_TRY(tp_onnx_reduce(m, TP_OP_SUM, st, 1, &dim2, 0, &y));
    /* the divisor: the same window sum over ones (folded at load time) */
    int64_t sh1[TP_MAX_DIMS] = {1, 1};
    for (int i = 0; i < w.nsp; i++) sh1[2 + i] = dx.shape[2 + i];
    ref ones, cnt;
    TP_TRY(tp_onnx_full(m, TP_F32, dx.ndim, sh1, 1.0, &ones));
    TP_TRY(windows(m, ones, &w, incl ? 1.0 : 0.0, 0.0, &cnt));
    TP_TRY(tp_onnx_reduce(m, TP_OP_SUM, cnt, 1, &dim2, 0, &cnt));
    TP_TRY(tp_onnx_binary(m, TP_OP_DIV, y, cnt, &y));
  }
  int64_t so[TP_MAX_DIMS] = {dx.shape[0], dx.shape[1]};
  for (int i = 0; i < w.nsp; i++) so[2 + i] = w.O[i];
  TP_TRY(tp_onnx_reshape(m, y, dx.ndim, so, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* GlobalAveragePool (arg 0) / GlobalMaxPool (1) */
tp_status tp_onnx_cv_global_pool(imp *m, onode *n, int mx) {
  ref x, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  tp_desc dx = tp_onnx_desc(m, x);
  if (dx.ndim < 3) return tp_fail(TP_ERR_INVALID_ARG, "input X must have rank >= 3 ([N, C, spatial...]), got %d", dx.ndim);
  if (dx.dtype != TP_F32) return tp_fail(TP_ERR_UNSUPPORTED, "only float32 input is supported");
  int64_t axes[TP_MAX_DIMS];
  for (int i = 2; i < dx.ndim; i++) axes[i - 2] = i;
  TP_TRY(tp_onnx_reduce(m, mx ? TP_OP_MAX : TP_OP_MEAN, x, dx.ndim - 2, axes, 1, &y));
  return tp_onnx_set_out(m, n, 0, y);
}
