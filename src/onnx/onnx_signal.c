/* onnx_signal.c - DFT, STFT and MelWeightMatrix (rows in onnx_ops.def).
 *
 * A DFT of length N along one axis is a matmul with a constant real
 * matrix: the signal axis and the (real, imag) pair are moved last and
 * flattened to L*C values (C = 1 real, 2 complex), and [.., L*C] @ M gives
 * [.., K*2] interleaved (real, imag) (or K reals for an inverse onesided
 * transform, numpy's irfft). M's cosines and sines are computed in double
 * from the exact index product (k t mod N), so every entry is the nearest
 * float of the true value. Zero rows truncate (L > N); missing rows pad
 * (L < N). STFT gathers the frames with constant indices, weights them by
 * the window and applies the same DFT. dft_length, axis (opset 20),
 * frame_step, frame_length and MelWeightMatrix's inputs are parameters:
 * constants, or value inputs the model specializes on. */
#include "import.h"
#include <math.h>

/* The most matrix entries a DFT may build (64 Mi floats, 256 MiB). */
#define DFT_MAX_ENTRIES ((int64_t)1 << 26)

/* M for a DFT of length N over L input points of C (1, 2) components:
 * inverse 0: forward, K = N (or N/2 + 1 onesided), complex out;
 * inverse 1, onesided 0: 1/N sum_k X_k e^{+2 pi i k t / N}, complex out;
 * inverse 1, onesided 1: irfft, the Hermitian extension of X_0..X_{N/2},
 * real out (the imaginary parts of X_0 and X_{N/2} drop out as numpy's). */
static tp_status dft_matrix(imp *m, int64_t L, int C, int64_t N, int inverse, int onesided, int64_t *K_out,
                            int *cout_out, ref *out) {
  int64_t K = inverse ? N : onesided ? N / 2 + 1 : N;
  int cout = inverse && onesided ? 1 : 2;
  int64_t sh[2] = {L * C, K * cout};
  *K_out = K;
  *cout_out = cout;
  if (L < 1 || N < 1) return tp_fail(TP_ERR_INVALID_ARG, "the DFT length and the signal length must be at least 1");
  if (sh[0] > DFT_MAX_ENTRIES / sh[1])
    return tp_fail(TP_ERR_UNSUPPORTED, "a DFT of %lld points over %lld inputs needs a %lldx%lld matrix (more than %lld entries)",
                   (long long)N, (long long)L, (long long)sh[0], (long long)sh[1], (long long)DFT_MAX_ENTRIES);
  tp_tensor *t;
  TP_TRY(tp_tensor_empty(TP_F32, 2, sh, &t));
  float *p = tp_tensor_ptr(t);
  memset(p, 0, sizeof(float) * (size_t)(sh[0] * sh[1]));
  int64_t used = inverse && onesided ? (L < N / 2 + 1 ? L : N / 2 + 1) : (L < N ? L : N);
  for (int64_t i = 0; i < used; i++) /* i: the input index (t forward, k inverse) */
    for (int64_t j = 0; j < K; j++) {
      double a = 2 * M_PI * (double)((i * j) % N) / (double)N, c = cos(a), s = sin(a);
      float *re = p + (i * C) * sh[1], *im = C == 2 ? re + sh[1] : NULL;
      if (!inverse) { /* (x + iy)(c - is) */
        re[2 * j] = (float)c, re[2 * j + 1] = (float)-s;
        if (im) im[2 * j] = (float)s, im[2 * j + 1] = (float)c;
      } else if (!onesided) { /* (x + iy)(c + is) / N */
        re[2 * j] = (float)(c / N), re[2 * j + 1] = (float)(s / N);
        if (im) im[2 * j] = (float)(-s / N), im[2 * j + 1] = (float)(c / N);
      } else {
        double w = (i == 0 || (N % 2 == 0 && i == N / 2)) ? 1 : 2;
        re[j] = (float)(w * c / N);
        if (im) im[j] = (float)(-w * s / N);
      }
    }
  return tp_onnx_add_const(m, t, out);
}

/* The DFT of x [.., L at axis, .., C] (axis < ndim - 1); see the top. */
static tp_status dft(imp *m, ref x, int axis, int64_t N, int inverse, int onesided, ref *out) {
  tp_desc d = tp_onnx_desc(m, x);
  int r = d.ndim, C = (int)d.shape[r - 1];
  int64_t L = d.shape[axis], perm[TP_MAX_DIMS], inv[TP_MAX_DIMS], sh[TP_MAX_DIMS], B = 1, K;
  int k = 0, cout;
  for (int i = 0; i < r - 1; i++)
    if (i != axis) perm[k++] = i, B *= d.shape[i];
  perm[k++] = axis;
  perm[k++] = r - 1;
  for (int i = 0; i < r; i++) inv[perm[i]] = i;
  ref mat, y = x;
  TP_TRY(dft_matrix(m, L, C, N, inverse, onesided, &K, &cout, &mat));
  if (axis != r - 2) {
    tp_attrs at;
    tp_attrs_init(&at);
    at.nints = r;
    memcpy(at.ints, perm, sizeof(int64_t) * (size_t)r);
    TP_TRY(tp_onnx_emit(m, TP_OP_PERMUTE, 1, &y, &at, &y));
  }
  int64_t flat[2] = {B, L * C};
  TP_TRY(tp_onnx_reshape(m, y, 2, flat, &y));
  TP_TRY(tp_onnx_binary(m, TP_OP_MATMUL, y, mat, &y));
  for (int i = 0; i < r - 2; i++) sh[i] = d.shape[perm[i]];
  sh[r - 2] = K;
  sh[r - 1] = cout;
  TP_TRY(tp_onnx_reshape(m, y, r, sh, &y));
  if (axis != r - 2) {
    tp_attrs at;
    tp_attrs_init(&at);
    at.nints = r;
    memcpy(at.ints, inv, sizeof(int64_t) * (size_t)r);
    TP_TRY(tp_onnx_emit(m, TP_OP_PERMUTE, 1, &y, &at, &y));
  }
  *out = y;
  return TP_OK;
}

/* the signal: float32, rank >= 2, last dim 1 (real) or 2 (complex) */
static tp_status check_signal(tp_desc d) {
  if (d.dtype != TP_F32) return tp_fail(TP_ERR_INVALID_ARG, "the signal has dtype %s; float32 is required", tp_dtype_name(d.dtype));
  if (d.ndim < 2 || (d.shape[d.ndim - 1] != 1 && d.shape[d.ndim - 1] != 2))
    return tp_fail(TP_ERR_INVALID_ARG, "the signal must have rank >= 2 and a last dim of 1 (real) or 2 (complex), got rank %d%s",
                   d.ndim, d.ndim ? " with a last dim other than 1 or 2" : "");
  return TP_OK;
}

/* an optional constant int parameter (a 0-d or 1-element value) */
static tp_status param_int(imp *m, onode *n, int i, const char *what, int64_t def, int64_t *out) {
  ref r;
  int nv;
  TP_TRY(tp_onnx_in(m, n, i, &r));
  if (r.kind == R_NONE) {
    *out = def;
    return TP_OK;
  }
  TP_TRY(tp_onnx_const_ints(m, r, what, out, 1, &nv));
  if (nv != 1) return tp_fail(TP_ERR_INVALID_ARG, "%s must hold one value, got %d", what, nv);
  return TP_OK;
}

/* DFT: opset 17-19 axis attribute (default 1), opset 20 axis input (default -2). */
tp_status tp_onnx_cv_dft(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, y;
  int64_t axis, N;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  tp_desc d = tp_onnx_desc(m, x);
  TP_TRY(check_signal(d));
  int inverse = (int)tp_onnx_attr_int(m, n, "inverse", 0), onesided = (int)tp_onnx_attr_int(m, n, "onesided", 0);
  if ((inverse != 0 && inverse != 1) || (onesided != 0 && onesided != 1))
    return tp_fail(TP_ERR_INVALID_ARG, "inverse and onesided must be 0 or 1, got %d and %d", inverse, onesided);
  if (m->md.opset >= 20) TP_TRY(param_int(m, n, 2, "axis", -2, &axis));
  else axis = tp_onnx_attr_int(m, n, "axis", 1);
  int r = d.ndim;
  if (axis < -r || axis >= r - 1 || axis == -1)
    return tp_fail(TP_ERR_INVALID_ARG, "axis %lld is out of range for a signal of rank %d (expected %d..%d or %d..-2)",
                   (long long)axis, r, 0, r - 2, -r);
  if (axis < 0) axis += r;
  int64_t L = d.shape[axis];
  TP_TRY(param_int(m, n, 1, "dft_length", inverse && onesided ? 2 * (L - 1) : L, &N));
  if (N < 1) return tp_fail(TP_ERR_INVALID_ARG, "dft_length must be at least 1, got %lld", (long long)N);
  if (!inverse && onesided && d.shape[r - 1] == 2)
    return tp_fail(TP_ERR_INVALID_ARG, "onesided needs a real signal (last dim 1)");
  TP_TRY(dft(m, x, (int)axis, N, inverse, onesided, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* STFT: signal [batch, length, C], frame_step, window [frame_length]
 * (optional), frame_length (optional): [batch, frames, bins, 2] with
 * frames = 1 + (length - frame_length) / frame_step. */
tp_status tp_onnx_cv_stft(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, w, y;
  int64_t step, fl;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  tp_desc d = tp_onnx_desc(m, x);
  TP_TRY(check_signal(d));
  if (d.ndim != 3) return tp_fail(TP_ERR_INVALID_ARG, "the signal must be [batch, length, 1 or 2], got rank %d", d.ndim);
  int onesided = (int)tp_onnx_attr_int(m, n, "onesided", 1);
  if (onesided != 0 && onesided != 1) return tp_fail(TP_ERR_INVALID_ARG, "onesided must be 0 or 1, got %d", onesided);
  if (onesided && d.shape[2] == 2) return tp_fail(TP_ERR_INVALID_ARG, "onesided needs a real signal (last dim 1)");
  ref rs;
  int nv;
  TP_TRY(tp_onnx_need_in(m, n, 1, &rs));
  TP_TRY(tp_onnx_const_ints(m, rs, "frame_step", &step, 1, &nv));
  TP_TRY(tp_onnx_in(m, n, 2, &w));
  int64_t wlen = -1;
  if (w.kind != R_NONE) {
    tp_desc dw = tp_onnx_desc(m, w);
    if (dw.ndim != 1 || dw.dtype != TP_F32)
      return tp_fail(TP_ERR_INVALID_ARG, "the window must be a 1-D float32 tensor, got rank %d %s", dw.ndim,
                     tp_dtype_name(dw.dtype));
    wlen = dw.shape[0];
  }
  TP_TRY(param_int(m, n, 3, "frame_length", wlen >= 0 ? wlen : d.shape[1], &fl));
  if (step < 1) return tp_fail(TP_ERR_INVALID_ARG, "frame_step must be at least 1, got %lld", (long long)step);
  if (fl < 1 || fl > d.shape[1])
    return tp_fail(TP_ERR_INVALID_ARG, "frame_length %lld must be in 1..%lld (the signal length)", (long long)fl,
                   (long long)d.shape[1]);
  if (wlen >= 0 && wlen != fl)
    return tp_fail(TP_ERR_INVALID_ARG, "the window has %lld values, frame_length is %lld", (long long)wlen, (long long)fl);
  int64_t frames = 1 + (d.shape[1] - fl) / step, cnt = frames * fl;
  if (cnt > DFT_MAX_ENTRIES) return tp_fail(TP_ERR_UNSUPPORTED, "%lld frames of %lld samples", (long long)frames, (long long)fl);
  tp_tensor *ti;
  TP_TRY(tp_tensor_empty(TP_I64, 1, &cnt, &ti));
  for (int64_t f = 0; f < frames; f++)
    for (int64_t j = 0; j < fl; j++) ((int64_t *)tp_tensor_ptr(ti))[f * fl + j] = f * step + j;
  ref idx;
  TP_TRY(tp_onnx_add_const(m, ti, &idx));
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = 1;
  ref args[2] = {x, idx};
  TP_TRY(tp_onnx_emit(m, TP_OP_GATHER, 2, args, &at, &y)); /* [batch, frames * fl, C] */
  int64_t sh[4] = {d.shape[0], frames, fl, d.shape[2]};
  TP_TRY(tp_onnx_reshape(m, y, 4, sh, &y));
  if (w.kind != R_NONE) {
    int64_t ws[2] = {fl, 1};
    TP_TRY(tp_onnx_reshape(m, w, 2, ws, &w));
    TP_TRY(tp_onnx_binary(m, TP_OP_MUL, y, w, &y));
  }
  TP_TRY(dft(m, y, 2, fl, 0, onesided, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* MelWeightMatrix: [dft_length / 2 + 1, num_mel_bins] triangular filters
 * between mel-spaced points, computed at import as ONNX's reference does
 * (the points floored to FFT bins by (dft_length + 1) f / sample_rate). */
tp_status tp_onnx_cv_melweight(imp *m, onode *n, int arg) {
  (void)arg;
  static const char *const names[5] = {"num_mel_bins", "dft_length", "sample_rate", "lower_edge_hertz",
                                       "upper_edge_hertz"};
  double v[5];
  for (int i = 0; i < 5; i++) {
    ref r;
    TP_TRY(tp_onnx_need_in(m, n, i, &r));
    TP_TRY(tp_onnx_const_scalar(m, r, names[i], &v[i]));
  }
  int64_t dt = tp_onnx_attr_int(m, n, "output_datatype", 1);
  tp_dtype odt;
  if (!tp_onnx_to_dtype(dt, &odt)) return tp_fail(TP_ERR_UNSUPPORTED, "output_datatype %s", tp_onnx_dtype_name((int)dt));
  for (int i = 0; i < 3; i++)
    if (!(v[i] >= 1 && v[i] <= (1 << 20) && v[i] == floor(v[i])))
      return tp_fail(TP_ERR_INVALID_ARG, "%s must be an integer in 1..%d, got %g", names[i], 1 << 20, v[i]);
  if (!(v[3] >= 0 && v[3] < v[4] && v[4] <= v[2] / 2))
    return tp_fail(TP_ERR_INVALID_ARG,
                   "the edges must satisfy 0 <= lower_edge_hertz < upper_edge_hertz <= sample_rate / 2, got %g, %g (sample_rate %g)",
                   v[3], v[4], v[2]);
  int64_t mel = (int64_t)v[0], N = (int64_t)v[1], sr = (int64_t)v[2], bins = N / 2 + 1;
  int64_t sh[2] = {bins, mel};
  if (bins * mel > DFT_MAX_ENTRIES) return tp_fail(TP_ERR_UNSUPPORTED, "a %lldx%lld matrix", (long long)bins, (long long)mel);
  int64_t *pt = tp_alloc(sizeof(int64_t) * (size_t)(mel + 2));
  if (!pt) return TP_ERR_OUT_OF_MEMORY;
  double lo = 2595 * log10(1 + v[3] / 700), hi = 2595 * log10(1 + v[4] / 700), step = (hi - lo) / (double)(mel + 2);
  for (int64_t i = 0; i < mel + 2; i++) {
    double f = 700 * (pow(10, ((double)i * step + lo) / 2595) - 1);
    pt[i] = (int64_t)floor((double)(N + 1) * f / (double)sr);
    if (pt[i] >= bins) pt[i] = bins - 1; /* only reached by rounding at the upper edge */
  }
  tp_tensor *t;
  tp_status s = tp_tensor_empty(TP_F32, 2, sh, &t);
  if (s) {
    tp_free(pt);
    return s;
  }
  float *p = tp_tensor_ptr(t);
  memset(p, 0, sizeof(float) * (size_t)(bins * mel));
  for (int64_t i = 0; i < mel; i++) {
    int64_t a = pt[i], c = pt[i + 1], b = pt[i + 2];
    if (c == a) p[c * mel + i] = 1;
    else
      for (int64_t j = a; j <= c; j++) p[j * mel + i] = (float)((double)(j - a) / (double)(c - a));
    for (int64_t j = c; j < b; j++) p[j * mel + i] = (float)((double)(b - j) / (double)(b - c));
  }
  tp_free(pt);
  ref y;
  TP_TRY(tp_onnx_add_const(m, t, &y));
  TP_TRY(tp_onnx_cast(m, y, odt, &y));
  return tp_onnx_set_out(m, n, 0, y);
}
