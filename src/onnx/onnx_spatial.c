/* onnx_spatial.c - sampling and spatial rearrangement: GridSample (the core
 * op grid_sample), AffineGrid (a constant base grid times theta), MaxUnpool
 * and Col2Im (scatter_elements into zeros with run-time data and a
 * constant index), DeformConv (grid_sample of the offset taps + matmul),
 * RoiAlign (the core op roi_align).
 * docs/onnx.md lists how each is built. */
#include "import.h"
#include <string.h>

/* GridSample: opset 16 names (bilinear, bicubic) and opset 20's (linear,
 * cubic); 2-D and 3-D spatial (the shape rule checks the ranks). */
tp_status tp_onnx_cv_grid_sample(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, g, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_need_in(m, n, 1, &g));
  const char *mode = tp_onnx_attr_str(m, n, "mode", m->md.opset >= 20 ? "linear" : "bilinear");
  const char *pad = tp_onnx_attr_str(m, n, "padding_mode", "zeros");
  int64_t ac = tp_onnx_attr_int(m, n, "align_corners", 0);
  tp_attrs at;
  tp_attrs_init(&at);
  if (!strcmp(mode, "bilinear") || !strcmp(mode, "linear")) at.dim = 0;
  else if (!strcmp(mode, "nearest")) at.dim = 1;
  else if (!strcmp(mode, "bicubic") || !strcmp(mode, "cubic")) at.dim = 2;
  else return tp_fail(TP_ERR_INVALID_ARG, "mode '%s' (linear, nearest, cubic)", mode);
  if (!strcmp(pad, "zeros")) at.dim1 = 0;
  else if (!strcmp(pad, "border")) at.dim1 = 1;
  else if (!strcmp(pad, "reflection")) at.dim1 = 2;
  else return tp_fail(TP_ERR_INVALID_ARG, "padding_mode '%s' (zeros, border, reflection)", pad);
  if (ac != 0 && ac != 1) return tp_fail(TP_ERR_INVALID_ARG, "align_corners must be 0 or 1, got %lld", (long long)ac);
  at.keepdim = (int)ac;
  ref a[2] = {x, g};
  TP_TRY(tp_onnx_emit(m, TP_OP_GRID_SAMPLE, 2, a, &at, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* AffineGrid: grid[n, p, :] = theta[n] @ (x_p, y_p[, z_p], 1), the base
 * grid a constant built from the size input's value (a value
 * specialization when size is computed at run time). */
tp_status tp_onnx_cv_affine_grid(imp *m, onode *n, int arg) {
  (void)arg;
  ref theta, sz, base, tt, y;
  int64_t size[5];
  int ns;
  TP_TRY(tp_onnx_need_in(m, n, 0, &theta));
  TP_TRY(tp_onnx_need_in(m, n, 1, &sz));
  int64_t ac = tp_onnx_attr_int(m, n, "align_corners", 0);
  if (ac != 0 && ac != 1) return tp_fail(TP_ERR_INVALID_ARG, "align_corners must be 0 or 1, got %lld", (long long)ac);
  TP_TRY(tp_onnx_const_ints(m, sz, "size", size, 5, &ns));
  if (ns != 4 && ns != 5) return tp_fail(TP_ERR_INVALID_ARG, "size must hold 4 (N, C, H, W) or 5 (N, C, D, H, W) values, got %d", ns);
  int k = ns - 2;
  tp_desc td = tp_onnx_desc(m, theta);
  if (td.dtype != TP_F32 || td.ndim != 3 || td.shape[0] != size[0] || td.shape[1] != k || td.shape[2] != k + 1)
    return tp_fail(TP_ERR_INVALID_ARG, "theta must be float32 [%lld, %d, %d] for size of %d values, got rank %d %s",
                   (long long)size[0], k, k + 1, ns, td.ndim, tp_dtype_name(td.dtype));
  int64_t P = 1;
  for (int i = 0; i < k; i++) {
    if (size[2 + i] < 1 || size[2 + i] > (1 << 24))
      return tp_fail(TP_ERR_INVALID_ARG, "size[%d] is %lld; a spatial size must be 1 to 2^24", 2 + i, (long long)size[2 + i]);
    P *= size[2 + i];
    if (P > ((int64_t)1 << 28)) return tp_fail(TP_ERR_INVALID_ARG, "the grid of size has over 2^28 points");
  }
  /* base [P, k+1]: per point (x, y[, z], 1), x along the last dim */
  int64_t bs[2] = {P, k + 1};
  tp_tensor *b;
  TP_TRY(tp_tensor_empty(TP_F32, 2, bs, &b));
  float *B = tp_tensor_ptr(b);
  for (int64_t p = 0; p < P; p++) {
    int64_t rem = p;
    for (int i = k - 1; i >= 0; i--) { /* spatial dim i -> component k-1-i */
      int64_t d = size[2 + i], j = rem % d;
      rem /= d;
      double v = ac ? (d > 1 ? -1.0 + (double)j * (2.0 / (double)(d - 1)) : -1.0)
                    : -1.0 + 1.0 / (double)d + (double)j * (2.0 / (double)d);
      B[p * (k + 1) + (k - 1 - i)] = (float)v;
    }
    B[p * (k + 1) + k] = 1.0f;
  }
  TP_TRY(tp_onnx_add_const(m, b, &base));
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = 1, at.dim1 = 2;
  TP_TRY(tp_onnx_emit(m, TP_OP_TRANSPOSE, 1, &theta, &at, &tt)); /* [N, k+1, k] */
  TP_TRY(tp_onnx_binary(m, TP_OP_MATMUL, base, tt, &y));         /* [N, P, k] */
  int64_t os[5];
  os[0] = size[0];
  for (int i = 0; i < k; i++) os[1 + i] = size[2 + i];
  os[k + 1] = k;
  TP_TRY(tp_onnx_reshape(m, y, k + 2, os, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* MaxUnpool: y = zeros of the inferred shape; y.flat[indices] = x (the
 * indices flat over all of y, as MaxPool's); with output_shape, y
 * zero-padded at the end of each spatial dim (ONNX's reference). A
 * negative or too large index is a run-time error. */
tp_status tp_onnx_cv_max_unpool(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, ix, osr, y, neg;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_need_in(m, n, 1, &ix));
  TP_TRY(tp_onnx_in(m, n, 2, &osr));
  tp_desc xd = tp_onnx_desc(m, x), id = tp_onnx_desc(m, ix);
  int k = xd.ndim - 2;
  if (xd.ndim < 3 || xd.dtype != TP_F32)
    return tp_fail(TP_ERR_INVALID_ARG, "X must be float32 [N, C, spatial...], got rank %d %s", xd.ndim, tp_dtype_name(xd.dtype));
  int same = id.ndim == xd.ndim;
  for (int i = 0; same && i < xd.ndim; i++) same = id.shape[i] == xd.shape[i];
  if (id.dtype != TP_I64 || !same) return tp_fail(TP_ERR_INVALID_ARG, "I must be int64 with X's shape");
  int64_t ks[TP_MAX_DIMS], st[TP_MAX_DIMS], pads[2 * TP_MAX_DIMS], os[TP_MAX_DIMS];
  attr *ka = tp_onnx_attr(m, n, "kernel_shape", A_INTS);
  if (!ka || (int)ka->nints != k) return tp_fail(TP_ERR_INVALID_ARG, "kernel_shape must hold %d values", k);
  TP_TRY(tp_onnx_attr_ints(m, n, "kernel_shape", ks, k, 1));
  TP_TRY(tp_onnx_attr_ints(m, n, "strides", st, k, 1));
  TP_TRY(tp_onnx_attr_ints(m, n, "pads", pads, 2 * k, 0));
  os[0] = xd.shape[0], os[1] = xd.shape[1];
  for (int i = 0; i < k; i++) {
    if (ks[i] < 1 || st[i] < 1 || pads[i] < 0 || pads[k + i] < 0)
      return tp_fail(TP_ERR_INVALID_ARG, "kernel_shape and strides must be >= 1 and pads >= 0");
    os[2 + i] = (xd.shape[2 + i] - 1) * st[i] - pads[i] - pads[k + i] + ks[i];
  }
  for (int i = 0; i < xd.ndim; i++)
    if (os[i] < 1 || os[i] > ((int64_t)1 << 31))
      return tp_fail(TP_ERR_INVALID_ARG, "the output's dim %d would be %lld", i, (long long)os[i]);
  int64_t full[TP_MAX_DIMS]; /* output_shape: the inferred output zero-padded at the end */
  memcpy(full, os, sizeof full);
  if (osr.kind != R_NONE) {
    int nv;
    TP_TRY(tp_onnx_const_ints(m, osr, "output_shape", full, TP_MAX_DIMS, &nv));
    if (nv != xd.ndim || full[0] != xd.shape[0] || full[1] != xd.shape[1])
      return tp_fail(TP_ERR_INVALID_ARG, "output_shape must hold %d values starting %lld, %lld", xd.ndim,
                     (long long)xd.shape[0], (long long)xd.shape[1]);
    for (int i = 0; i < k; i++)
      if (full[2 + i] < os[2 + i] || full[2 + i] > ((int64_t)1 << 31))
        return tp_fail(TP_ERR_INVALID_ARG, "output_shape[%d] = %lld is smaller than the inferred %lld", 2 + i,
                       (long long)full[2 + i], (long long)os[2 + i]);
  }
  if ((double)tp_shape_numel(xd.ndim, full) > (double)((int64_t)1 << 31))
    return tp_fail(TP_ERR_INVALID_ARG, "the output would have over 2^31 elements");
  int64_t total = tp_shape_numel(xd.ndim, os), cnt = tp_shape_numel(xd.ndim, xd.shape);
  ref zeros, a[3];
  TP_TRY(tp_onnx_full(m, TP_F32, 1, &total, 0.0, &zeros));
  TP_TRY(tp_onnx_reshape(m, ix, 1, &cnt, &ix));
  TP_TRY(tp_onnx_reshape(m, x, 1, &cnt, &x));
  /* a negative index would count from the end: send it out of range */
  TP_TRY(tp_onnx_binary(m, TP_OP_LT, ix, tp_onnx_scalar(0), &neg));
  ref big = tp_onnx_scalar((double)total);
  big.is_int = 1;
  TP_TRY(tp_onnx_where(m, neg, big, ix, &ix));
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = 0;
  a[0] = zeros, a[1] = ix, a[2] = x;
  TP_TRY(tp_onnx_emit(m, TP_OP_SCATTER_ELEMENTS, 3, a, &at, &y));
  TP_TRY(tp_onnx_reshape(m, y, xd.ndim, os, &y));
  for (int i = 0; i < k; i++)
    if (full[2 + i] > os[2 + i]) TP_TRY(tp_onnx_pad_const(m, y, 2 + i, 0, full[2 + i] - os[2 + i], 0.0, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* Col2Im: the columns [N, C*prod(block), L] summed into the padded image
 * (scatter_elements with add at a constant index), the pads sliced off. */
tp_status tp_onnx_cv_col2im(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, imr, blr, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_need_in(m, n, 1, &imr));
  TP_TRY(tp_onnx_need_in(m, n, 2, &blr));
  int64_t img[TP_MAX_DIMS], blk[TP_MAX_DIMS], dil[TP_MAX_DIMS], st[TP_MAX_DIMS], pads[2 * TP_MAX_DIMS];
  int k, kb;
  TP_TRY(tp_onnx_const_ints(m, imr, "image_shape", img, TP_MAX_DIMS - 2, &k));
  TP_TRY(tp_onnx_const_ints(m, blr, "block_shape", blk, TP_MAX_DIMS - 2, &kb));
  if (k < 1 || kb != k) return tp_fail(TP_ERR_INVALID_ARG, "image_shape and block_shape must hold the same number (>= 1) of values");
  TP_TRY(tp_onnx_attr_ints(m, n, "dilations", dil, k, 1));
  TP_TRY(tp_onnx_attr_ints(m, n, "strides", st, k, 1));
  TP_TRY(tp_onnx_attr_ints(m, n, "pads", pads, 2 * k, 0));
  tp_desc xd = tp_onnx_desc(m, x);
  if (xd.ndim != 3 || xd.dtype != TP_F32)
    return tp_fail(TP_ERR_INVALID_ARG, "input must be float32 [N, C*prod(block_shape), L], got rank %d %s", xd.ndim,
                   tp_dtype_name(xd.dtype));
  int64_t K = 1, L = 1, P = 1, nb[TP_MAX_DIMS], pd[TP_MAX_DIMS];
  for (int i = 0; i < k; i++) {
    if (img[i] < 1 || blk[i] < 1 || dil[i] < 1 || st[i] < 1 || pads[i] < 0 || pads[k + i] < 0)
      return tp_fail(TP_ERR_INVALID_ARG, "image_shape, block_shape, dilations and strides must be >= 1, pads >= 0");
    pd[i] = img[i] + pads[i] + pads[k + i];
    int64_t span = dil[i] * (blk[i] - 1) + 1;
    if (span > pd[i]) return tp_fail(TP_ERR_INVALID_ARG, "block dim %d spans %lld, more than the padded image's %lld", i, (long long)span, (long long)pd[i]);
    nb[i] = (pd[i] - span) / st[i] + 1;
    K *= blk[i], L *= nb[i], P *= pd[i];
  }
  int64_t N = xd.shape[0], C = K ? xd.shape[1] / K : 0;
  if (xd.shape[1] != C * K || xd.shape[2] != L || C < 1)
    return tp_fail(TP_ERR_INVALID_ARG, "input is [%lld, %lld, %lld]; block_shape and the geometry need [N, C*%lld, %lld]",
                   (long long)N, (long long)xd.shape[1], (long long)xd.shape[2], (long long)K, (long long)L);
  int64_t CKL = C * K * L;
  if ((double)N * (double)CKL > (double)((int64_t)1 << 28)) return tp_fail(TP_ERR_INVALID_ARG, "the input is too large to rearrange");
  int64_t is[2] = {N, CKL};
  tp_tensor *it;
  TP_TRY(tp_tensor_empty(TP_I64, 2, is, &it));
  int64_t *I = tp_tensor_ptr(it);
  for (int64_t c = 0; c < C; c++)
    for (int64_t kk = 0; kk < K; kk++)
      for (int64_t l = 0; l < L; l++) {
        int64_t rk = kk, rl = l, pos = 0, stride = 1;
        for (int i = k - 1; i >= 0; i--) {
          int64_t bi = rk % blk[i], li = rl % nb[i];
          rk /= blk[i], rl /= nb[i];
          pos += (li * st[i] + bi * dil[i]) * stride;
          stride *= pd[i];
        }
        I[(c * K + kk) * L + l] = c * P + pos;
      }
  for (int64_t b = 1; b < N; b++) memcpy(I + b * CKL, I, sizeof(int64_t) * (size_t)CKL);
  ref ix, zeros, a[3];
  TP_TRY(tp_onnx_add_const(m, it, &ix));
  int64_t zs[2] = {N, C * P};
  TP_TRY(tp_onnx_full(m, TP_F32, 2, zs, 0.0, &zeros));
  TP_TRY(tp_onnx_reshape(m, x, 2, is, &x));
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = 1;
  at.reduction = 1; /* add */
  a[0] = zeros, a[1] = ix, a[2] = x;
  TP_TRY(tp_onnx_emit(m, TP_OP_SCATTER_ELEMENTS, 3, a, &at, &y));
  int64_t ys[TP_MAX_DIMS];
  ys[0] = N, ys[1] = C;
  for (int i = 0; i < k; i++) ys[2 + i] = pd[i];
  TP_TRY(tp_onnx_reshape(m, y, k + 2, ys, &y));
  for (int i = 0; i < k; i++)
    if (pads[i] || pads[k + i]) TP_TRY(tp_onnx_slice(m, y, 2 + i, pads[i], pads[i] + img[i], 1, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* DeformConv (2-D): ONNX's reference samples x bilinearly (zeros outside)
 * at each kernel tap moved by its offset, times the mask, then convolves.
 * Built the same way: the positions (a constant base + the run-time
 * offsets) normalized for grid_sample (bilinear, zeros; the align_corners
 * 0 normalization (2p + 1) / size - 1, which denormalizes back to p), the
 * samples [N, C * kH * kW, oH * oW] as im2col columns, one batched matmul
 * per group, the bias added. */
tp_status tp_onnx_cv_deform_conv(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, w, off, b, mask, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_need_in(m, n, 1, &w));
  TP_TRY(tp_onnx_need_in(m, n, 2, &off));
  TP_TRY(tp_onnx_in(m, n, 3, &b));
  TP_TRY(tp_onnx_in(m, n, 4, &mask));
  tp_desc xd = tp_onnx_desc(m, x), wd = tp_onnx_desc(m, w), od = tp_onnx_desc(m, off);
  if (xd.ndim != 4 || wd.ndim != 4 || xd.dtype != TP_F32 || wd.dtype != TP_F32)
    return tp_fail(TP_ERR_INVALID_ARG, "only 2-D DeformConv is supported: X [N, C, H, W] and W [oC, C/group, kH, kW] float32, got ranks %d and %d",
                   xd.ndim, wd.ndim);
  int64_t ks[2], dil[2], st[2], pads[4];
  TP_TRY(tp_onnx_attr_ints(m, n, "kernel_shape", ks, 2, 0));
  if (!ks[0]) ks[0] = wd.shape[2], ks[1] = wd.shape[3];
  TP_TRY(tp_onnx_attr_ints(m, n, "dilations", dil, 2, 1));
  TP_TRY(tp_onnx_attr_ints(m, n, "strides", st, 2, 1));
  TP_TRY(tp_onnx_attr_ints(m, n, "pads", pads, 4, 0));
  int64_t group = tp_onnx_attr_int(m, n, "group", 1), G = tp_onnx_attr_int(m, n, "offset_group", 1);
  int64_t N = xd.shape[0], C = xd.shape[1], H = xd.shape[2], W = xd.shape[3], oC = wd.shape[0];
  int64_t kH = ks[0], kW = ks[1], K = kH * kW;
  if (ks[0] != wd.shape[2] || ks[1] != wd.shape[3])
    return tp_fail(TP_ERR_INVALID_ARG, "kernel_shape [%lld, %lld] differs from W's [%lld, %lld]", (long long)ks[0],
                   (long long)ks[1], (long long)wd.shape[2], (long long)wd.shape[3]);
  if (group < 1 || G < 1 || C % group || oC % group || wd.shape[1] * group != C || C % G)
    return tp_fail(TP_ERR_INVALID_ARG, "group %lld / offset_group %lld do not divide C %lld and oC %lld (W has %lld input channels)",
                   (long long)group, (long long)G, (long long)C, (long long)oC, (long long)wd.shape[1]);
  for (int i = 0; i < 2; i++)
    if (dil[i] < 1 || st[i] < 1 || pads[i] < 0 || pads[2 + i] < 0)
      return tp_fail(TP_ERR_INVALID_ARG, "dilations and strides must be >= 1, pads >= 0");
  if (H < 1 || W < 1) return tp_fail(TP_ERR_INVALID_ARG, "X has an empty spatial dim");
  int64_t oH = (H + pads[0] + pads[2] - ((kH - 1) * dil[0] + 1)) / st[0] + 1;
  int64_t oW = (W + pads[1] + pads[3] - ((kW - 1) * dil[1] + 1)) / st[1] + 1, L = oH * oW;
  if (oH < 1 || oW < 1) return tp_fail(TP_ERR_INVALID_ARG, "the kernel does not fit the padded input");
  if (od.ndim != 4 || od.dtype != TP_F32 || od.shape[0] != N || od.shape[1] != G * K * 2 || od.shape[2] != oH || od.shape[3] != oW)
    return tp_fail(TP_ERR_INVALID_ARG, "offset must be float32 [%lld, %lld, %lld, %lld]", (long long)N, (long long)(G * K * 2),
                   (long long)oH, (long long)oW);
  if (mask.kind != R_NONE) {
    tp_desc md = tp_onnx_desc(m, mask);
    if (md.ndim != 4 || md.dtype != TP_F32 || md.shape[0] != N || md.shape[1] != G * K || md.shape[2] != oH || md.shape[3] != oW)
      return tp_fail(TP_ERR_INVALID_ARG, "mask must be float32 [%lld, %lld, %lld, %lld]", (long long)N, (long long)(G * K),
                     (long long)oH, (long long)oW);
  }
  if (b.kind != R_NONE) {
    tp_desc bd = tp_onnx_desc(m, b);
    if (bd.ndim != 1 || bd.shape[0] != oC || bd.dtype != TP_F32)
      return tp_fail(TP_ERR_INVALID_ARG, "B must be float32 [%lld]", (long long)oC);
  }
  /* the taps' positions without offsets: base[axis][k, oh, ow] */
  ref base[2], comp[2], gr;
  for (int a = 0; a < 2; a++) {
    int64_t bs[3] = {K, oH, oW};
    tp_tensor *t;
    TP_TRY(tp_tensor_empty(TP_F32, 3, bs, &t));
    float *p = tp_tensor_ptr(t);
    for (int64_t k = 0; k < K; k++)
      for (int64_t i = 0; i < oH; i++)
        for (int64_t j = 0; j < oW; j++)
          p[(k * oH + i) * oW + j] = a == 0 ? (float)(i * st[0] - pads[0] + (k / kW) * dil[0])
                                            : (float)(j * st[1] - pads[1] + (k % kW) * dil[1]);
    TP_TRY(tp_onnx_add_const(m, t, &base[a]));
  }
  int64_t s6[6] = {N, G, K, 2, oH, oW}, s5[5] = {N, G, K, oH, oW}, s6b[6] = {N, G, K, oH, oW, 1};
  TP_TRY(tp_onnx_reshape(m, off, 6, s6, &off));
  for (int a = 0; a < 2; a++) { /* comp[0] = the x (width) coordinate, comp[1] = y */
    ref d;
    int64_t size = a == 0 ? H : W;
    TP_TRY(tp_onnx_slice(m, off, 3, a, a + 1, 1, &d));
    TP_TRY(tp_onnx_reshape(m, d, 5, s5, &d));
    TP_TRY(tp_onnx_binary(m, TP_OP_ADD, d, base[a], &d));
    TP_TRY(tp_onnx_binary(m, TP_OP_MUL, d, tp_onnx_scalar(2.0 / (double)size), &d));
    TP_TRY(tp_onnx_binary(m, TP_OP_ADD, d, tp_onnx_scalar(1.0 / (double)size - 1.0), &d));
    TP_TRY(tp_onnx_reshape(m, d, 6, s6b, &comp[1 - a]));
  }
  TP_TRY(tp_onnx_concat(m, 2, comp, 5, &gr)); /* [N, G, K, oH, oW, (x, y)] */
  int64_t gs[4] = {N * G, K * oH, oW, 2}, xs[4] = {N * G, C / G, H, W};
  TP_TRY(tp_onnx_reshape(m, gr, 4, gs, &gr));
  TP_TRY(tp_onnx_reshape(m, x, 4, xs, &x));
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = 0, at.dim1 = 0, at.keepdim = 0; /* bilinear, zeros */
  ref a2[2] = {x, gr}, cols;
  TP_TRY(tp_onnx_emit(m, TP_OP_GRID_SAMPLE, 2, a2, &at, &cols)); /* [N*G, C/G, K*oH, oW] */
  int64_t cs[5] = {N, G, C / G, K, L};
  TP_TRY(tp_onnx_reshape(m, cols, 5, cs, &cols));
  if (mask.kind != R_NONE) {
    int64_t ms[5] = {N, G, 1, K, L};
    TP_TRY(tp_onnx_reshape(m, mask, 5, ms, &mask));
    TP_TRY(tp_onnx_binary(m, TP_OP_MUL, cols, mask, &cols));
  }
  int64_t cg[4] = {N, group, (C / group) * K, L}, wg[3] = {group, oC / group, (C / group) * K}, ys[4] = {N, oC, oH, oW};
  TP_TRY(tp_onnx_reshape(m, cols, 4, cg, &cols));
  TP_TRY(tp_onnx_reshape(m, w, 3, wg, &w));
  TP_TRY(tp_onnx_binary(m, TP_OP_MATMUL, w, cols, &y)); /* [N, group, oC/group, L] */
  TP_TRY(tp_onnx_reshape(m, y, 4, ys, &y));
  if (b.kind != R_NONE) {
    int64_t bs[3] = {oC, 1, 1};
    TP_TRY(tp_onnx_reshape(m, b, 3, bs, &b));
    TP_TRY(tp_onnx_binary(m, TP_OP_ADD, y, b, &y));
  }
  return tp_onnx_set_out(m, n, 0, y);
}

/* RoiAlign: the core op roi_align (rois and batch_indices run-time data). */
tp_status tp_onnx_cv_roi_align(imp *m, onode *n, int arg) {
  (void)arg;
  ref a[3], y;
  for (int i = 0; i < 3; i++) TP_TRY(tp_onnx_need_in(m, n, i, &a[i]));
  const char *ctm = tp_onnx_attr_str(m, n, "coordinate_transformation_mode", m->md.opset >= 16 ? "half_pixel" : "output_half_pixel");
  const char *mode = tp_onnx_attr_str(m, n, "mode", "avg");
  tp_attrs at;
  tp_attrs_init(&at);
  at.nints = 3;
  at.ints[0] = tp_onnx_attr_int(m, n, "output_height", 1);
  at.ints[1] = tp_onnx_attr_int(m, n, "output_width", 1);
  at.ints[2] = tp_onnx_attr_int(m, n, "sampling_ratio", 0);
  at.eps = tp_onnx_attr_float(m, n, "spatial_scale", 1.0);
  if (!strcmp(mode, "avg")) at.dim = 0;
  else if (!strcmp(mode, "max")) at.dim = 1;
  else return tp_fail(TP_ERR_INVALID_ARG, "mode '%s' (avg, max)", mode);
  if (!strcmp(ctm, "half_pixel")) at.keepdim = 1;
  else if (!strcmp(ctm, "output_half_pixel")) at.keepdim = 0;
  else return tp_fail(TP_ERR_INVALID_ARG, "coordinate_transformation_mode '%s' (half_pixel, output_half_pixel)", ctm);
  TP_TRY(tp_onnx_emit(m, TP_OP_ROI_ALIGN, 3, a, &at, &y));
  return tp_onnx_set_out(m, n, 0, y);
}
