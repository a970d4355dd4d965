/* test_qconv.c - conv2d_int (ONNX ConvInteger, src/ops/qconv.c) through the
 * public API against this file's own int64 loop (wrapped to int32 as ONNX
 * does): a hand-checked case, a sweep of windows, groups, dtypes and zero
 * points (the integer GEMM path and the scalar path), the int32 edge of the
 * GEMM's exact sum and one past it, the reference kernel, bad operands. */
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include "check.h"
#include "ops/ops.h" /* tp_op_exec_ref: the reference kernel */

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static int rnd(int lo, int hi) { /* [lo, hi] */
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return lo + (int)(rng % (uint64_t)(hi - lo + 1));
}

typedef struct geo {
  int64_t N, C, H, W, M, KH, KW, G, sh, sw, pt, pl, pb, pr, dh, dw;
} geo;

static int64_t out_dim(int64_t in, int64_t p0, int64_t p1, int64_t k, int64_t d, int64_t s) {
  return (in + p0 + p1 - ((k - 1) * d + 1)) / s + 1;
}

/* y as int32 from x, w (values as int) and zero points: the definition */
static void conv_loop(const geo *g, const int *x, const int *w, int zx, const int *zw, int32_t *y) {
  int64_t OH = out_dim(g->H, g->pt, g->pb, g->KH, g->dh, g->sh), OW = out_dim(g->W, g->pl, g->pr, g->KW, g->dw, g->sw);
  int64_t Cg = g->C / g->G, Mg = g->M / g->G;
  for (int64_t n = 0; n < g->N; n++)
    for (int64_t m = 0; m < g->M; m++)
      for (int64_t oh = 0; oh < OH; oh++)
        for (int64_t ow = 0; ow < OW; ow++) {
          int64_t acc = 0;
          for (int64_t c = 0; c < Cg; c++)
            for (int64_t kh = 0; kh < g->KH; kh++)
              for (int64_t kw = 0; kw < g->KW; kw++) {
                int64_t ih = oh * g->sh - g->pt + kh * g->dh, iw = ow * g->sw - g->pl + kw * g->dw;
                int64_t xv = ih < 0 || ih >= g->H || iw < 0 || iw >= g->W
                                 ? zx /* padding: the zero point, adds 0 */
                                 : x[((n * g->C + (m / Mg) * Cg + c) * g->H + ih) * g->W + iw];
                acc += (xv - zx) * (w[((m * Cg + c) * g->KH + kh) * g->KW + kw] - zw[m]);
              }
          y[((n * g->M + m) * OH + oh) * OW + ow] = (int32_t)(uint32_t)(uint64_t)acc;
        }
}

static tp_tensor *of_ints(tp_dtype d, int nd, const int64_t *sh, const int *v) {
  int64_t n = 1;
  for (int k = 0; k < nd; k++) n *= sh[k];
  unsigned char *b = malloc((size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; i++) b[i] = (unsigned char)(d == TP_I8 ? (unsigned char)(int8_t)v[i] : (uint8_t)v[i]);
  tp_tensor *t = NULL;
  CHECK_OK(tp_tensor_new(d, nd, sh, b, &t));
  free(b);
  return t;
}

static void window_attrs(const geo *g, tp_attrs *at) {
  tp_attrs_init(at);
  int64_t v[8] = {g->sh, g->sw, g->pt, g->pl, g->pb, g->pr, g->dh, g->dw};
  at->nints = 8;
  memcpy(at->ints, v, sizeof v);
  at->dim = g->G;
}

/* one case: conv2d_int (and the reference kernel) against conv_loop */
static void run_case(const char *what, const geo *g, tp_dtype dx, tp_dtype dw, int xlo, int xhi, int wlo, int whi,
                     int zx, int zw_scalar, int per_channel) {
  int64_t Cg = g->C / g->G, nx = g->N * g->C * g->H * g->W, nw = g->M * Cg * g->KH * g->KW;
  int *x = malloc(sizeof(int) * (size_t)nx), *w = malloc(sizeof(int) * (size_t)nw), *zw = malloc(sizeof(int) * (size_t)g->M);
  for (int64_t i = 0; i < nx; i++) x[i] = rnd(xlo, xhi);
  for (int64_t i = 0; i < nw; i++) w[i] = rnd(wlo, whi);
  int dlo = dw == TP_I8 ? -128 : 0, dhi = dw == TP_I8 ? 127 : 255;
  for (int64_t m = 0; m < g->M; m++) zw[m] = per_channel ? rnd(dlo, dhi) : zw_scalar;
  int64_t OH = out_dim(g->H, g->pt, g->pb, g->KH, g->dh, g->sh), OW = out_dim(g->W, g->pl, g->pr, g->KW, g->dw, g->sw);
  int64_t ny = g->N * g->M * OH * OW;
  int32_t *want = malloc(sizeof(int32_t) * (size_t)(ny ? ny : 1)), *got = malloc(sizeof(int32_t) * (size_t)(ny ? ny : 1));
  conv_loop(g, x, w, zx, zw, want);
  int64_t sx[4] = {g->N, g->C, g->H, g->W}, sw[4] = {g->M, Cg, g->KH, g->KW}, s1[1] = {1}, sm[1] = {g->M};
  tp_tensor *tx = of_ints(dx, 4, sx, x), *tw = of_ints(dw, 4, sw, w), *tzx = of_ints(dx, 1, s1, &zx);
  tp_tensor *tzw = per_channel ? of_ints(dw, 1, sm, zw) : of_ints(dw, 0, s1, zw);
  tp_attrs at;
  window_attrs(g, &at);
  tp_tensor *in[4] = {tx, tw, tzx, tzw}, *y = NULL;
  for (int ref = 0; ref < 2; ref++) {
    tp_status s = ref ? tp_op_exec_ref(TP_OP_CONV2D_INT, 4, in, &at, &y) : (tp_status)tp_op_call(TP_OP_CONV2D_INT, 4, in, &at, &y);
    CHECKF(s == TP_OK, "%s (%s): %s", what, ref ? "reference" : "kernel", tp_last_error());
    if (s) continue;
    CHECKF(tp_tensor_dtype(y) == TP_I32 && tp_tensor_ndim(y) == 4 && tp_tensor_shape(y)[2] == OH && tp_tensor_shape(y)[3] == OW,
           "%s: result shape", what);
    CHECK_OK(tp_tensor_read(y, got, sizeof(int32_t) * (size_t)ny));
    int64_t bad = -1;
    for (int64_t i = 0; i < ny && bad < 0; i++)
      if (got[i] != want[i]) bad = i;
    CHECKF(bad < 0, "%s (%s): element %lld is %d, expected %d", what, ref ? "reference" : "kernel", (long long)bad,
           bad >= 0 ? got[bad] : 0, bad >= 0 ? want[bad] : 0);
    tp_tensor_release(y);
    y = NULL;
  }
  tp_tensor_release(tx), tp_tensor_release(tw), tp_tensor_release(tzx), tp_tensor_release(tzw);
  free(x), free(w), free(zw), free(want), free(got);
}

/* A 3x3 uint8 image, zero point 2, padded by 1, one 2x2 int8 filter (zero
 * point 1), stride 2: worked by hand. x - 2 = [[-1,0,1],[2,3,4],[5,6,7]],
 * w - 1 = [[0,1],[2,-1]]; windows at (-1,-1), (-1,1), (1,-1), (1,1). */
static void test_hand(void) {
  const int x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 2, 3, 0}, zx = 2, zw = 1;
  geo g = {1, 1, 3, 3, 1, 2, 2, 1, 2, 2, 1, 1, 1, 1, 1, 1};
  int32_t loop[4];
  conv_loop(&g, x, w, zx, &zw, loop);
  /* by hand, (a, b) = window top-left in padded coordinates minus 1:
   * (-1,-1): w'[1][1] * x'[0][0] = -1 * -1 = 1
   * (-1, 1): w'[1][0] * x'[0][1] + w'[1][1] * x'[0][2] = 2 * 0 + -1 * 1 = -1
   * ( 1,-1): w'[0][1] * x'[1][0] + w'[1][1] * x'[2][0] = 1 * 2 + -1 * 5 = -3
   * ( 1, 1): w'[0][0] x'[1][1] + w'[0][1] x'[1][2] + w'[1][0] x'[2][1] + w'[1][1] x'[2][2]
   *        = 0 + 4 + 12 - 7 = 9 */
  const int32_t hand[4] = {1, -1, -3, 9};
  for (int i = 0; i < 4; i++) CHECKF(loop[i] == hand[i], "hand case: the test's loop gives %d at %d, by hand %d", loop[i], i, hand[i]);
  int64_t sx[4] = {1, 1, 3, 3}, sw[4] = {1, 1, 2, 2}, s1[1] = {1};
  tp_tensor *tx = of_ints(TP_U8, 4, sx, x), *tw = of_ints(TP_I8, 4, sw, w), *tzx = of_ints(TP_U8, 1, s1, &zx),
            *tzw = of_ints(TP_I8, 1, s1, &zw), *y = NULL;
  tp_attrs at;
  window_attrs(&g, &at);
  tp_tensor *in[4] = {tx, tw, tzx, tzw};
  CHECK_OK(tp_op_call(TP_OP_CONV2D_INT, 4, in, &at, &y));
  int32_t got[4] = {0};
  if (y) CHECK_OK(tp_tensor_read(y, got, sizeof got));
  for (int i = 0; i < 4; i++) CHECKF(got[i] == hand[i], "hand case: element %d is %d, expected %d", i, got[i], hand[i]);
  tp_tensor_release(y);
  tp_tensor_release(tx), tp_tensor_release(tw), tp_tensor_release(tzx), tp_tensor_release(tzw);
}

static void test_sweep(void) {
  static const tp_dtype dts[2] = {TP_U8, TP_I8};
  for (int it = 0; it < 160; it++) {
    geo g;
    g.N = rnd(1, 2), g.G = it % 5 == 0 ? 2 : 1;
    g.C = g.G * rnd(1, 9), g.M = g.G * rnd(1, 21), g.KH = rnd(1, 4), g.KW = rnd(1, 4);
    g.sh = rnd(1, 2), g.sw = rnd(1, 3), g.dh = rnd(1, 2), g.dw = rnd(1, 2);
    g.pt = rnd(0, 2), g.pl = rnd(0, 2), g.pb = rnd(0, 2), g.pr = rnd(0, 2);
    g.H = (g.KH - 1) * g.dh + 1 + rnd(0, 9), g.W = (g.KW - 1) * g.dw + 1 + rnd(0, 17);
    if (it == 7) g.H = 16, g.W = 40, g.C = 3, g.M = 8, g.G = 1; /* more than one im2row block (192 positions) */
    if (it % 7 == 3) g.G = g.C, g.M = g.C * rnd(1, 2); /* depthwise (depth multiplier 1 or 2) */
    tp_dtype dx = dts[it & 1], dw = dts[(it >> 1) & 1];
    int xlo = dx == TP_I8 ? -128 : 0, wlo = dw == TP_I8 ? -128 : 0;
    int zx = rnd(xlo, xlo + 255), zw = rnd(wlo, wlo + 255);
    char what[160];
    snprintf(what, sizeof what, "sweep %d: N%lld C%lld %lldx%lld M%lld k%lldx%lld s%lld,%lld d%lld,%lld G%lld %s x %s", it,
             (long long)g.N, (long long)g.C, (long long)g.H, (long long)g.W, (long long)g.M, (long long)g.KH,
             (long long)g.KW, (long long)g.sh, (long long)g.sw, (long long)g.dh, (long long)g.dw, (long long)g.G,
             tp_dtype_name(dx), tp_dtype_name(dw));
    run_case(what, &g, dx, dw, xlo, xlo + 255, wlo, wlo + 255, zx, zw, it % 3 == 0);
  }
}

/* The GEMM's sum is exact up to tp_qgemm_max_k taps; x = 255 (zero point
 * 0) and w = -128 (zero point 127) make every product -65025, so 33025
 * taps reach -2147450625 and 33026 wrap: both must equal ONNX's wrapped
 * int32 (the second through the scalar loop). */
static void test_int32_edge(void) {
  for (int e = 0; e < 2; e++) {
    geo g = {1, 33025 + e, 1, 2, 2, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1};
    char what[64];
    snprintf(what, sizeof what, "int32 edge, %lld taps", (long long)g.C);
    run_case(what, &g, TP_U8, TP_I8, 255, 255, -128, -128, 0, 127, 0);
  }
}

/* A depthwise convolution whose padding is far larger than its input but
 * whose stride keeps the output small (3x3 from a 1x1 image padded by 2^20
 * on every side, stride 2^20): the padded plane the depthwise kernel would
 * build is (2^21 + 1)^2 values (8.8 TB as int16; its byte count wraps in
 * Wasm's 32-bit size_t), so it must take the scalar loop and give the
 * right 3x3 result, not fail with out of memory or write past a short
 * buffer. */
static void test_depthwise_huge_padding(void) {
  const int64_t P = (int64_t)1 << 20;
  geo g = {1, 2, 1, 1, 2, 1, 1, 2, P, P, P, P, P, P, 1, 1};
  run_case("depthwise, padding 2^20, stride 2^20", &g, TP_U8, TP_I8, 0, 255, -128, 127, 3, -2, 1);
}

static void test_errors(void) {
  int64_t sx[4] = {1, 2, 4, 4}, sw[4] = {3, 2, 3, 3}, s1[1] = {1}, s2[1] = {2};
  int v[96] = {0};
  tp_tensor *xu = of_ints(TP_U8, 4, sx, v), *wi = of_ints(TP_I8, 4, sw, v), *zu = of_ints(TP_U8, 1, s1, v),
            *zi = of_ints(TP_I8, 1, s1, v), *z2 = of_ints(TP_I8, 1, s2, v), *xf = NULL, *y = NULL;
  CHECK_OK(tp_tensor_new(TP_F32, 4, sx, NULL, &xf));
  geo g = {1, 2, 4, 4, 3, 3, 3, 1, 1, 1, 0, 0, 0, 0, 1, 1};
  tp_attrs at;
  window_attrs(&g, &at);
  tp_tensor *a[4] = {xf, wi, NULL, NULL};
  CHECK(tp_op_call(TP_OP_CONV2D_INT, 4, a, &at, &y) == TP_ERR_INVALID_ARG &&
        strstr(tp_last_error(), "conv2d_int: input has dtype float32, expected int8 or uint8"));
  tp_tensor *b[4] = {xu, wi, zi, NULL};
  CHECK(tp_op_call(TP_OP_CONV2D_INT, 4, b, &at, &y) == TP_ERR_INVALID_ARG &&
        strstr(tp_last_error(), "conv2d_int: x_zero_point has dtype int8, input uint8; they must match"));
  tp_tensor *c[4] = {xu, wi, zu, z2};
  CHECK(tp_op_call(TP_OP_CONV2D_INT, 4, c, &at, &y) == TP_ERR_INVALID_ARG &&
        strstr(tp_last_error(), "conv2d_int: w_zero_point has shape [2]; one value or one per output channel is supported"));
  tp_tensor *d[4] = {xu, NULL, NULL, NULL};
  CHECK(tp_op_call(TP_OP_CONV2D_INT, 4, d, &at, &y) == TP_ERR_INVALID_ARG && strstr(tp_last_error(), "weight is required"));
  at.ints[0] = 0; /* stride 0 */
  tp_tensor *e[4] = {xu, wi, zu, zi};
  CHECK(tp_op_call(TP_OP_CONV2D_INT, 4, e, &at, &y) == TP_ERR_INVALID_ARG && strstr(tp_last_error(), "stride 0 is out of range"));
  at.ints[0] = 1;
  CHECK_OK(tp_op_call(TP_OP_CONV2D_INT, 4, e, &at, &y)); /* still usable */
  tp_tensor_release(y);
  tp_tensor_release(xu), tp_tensor_release(wi), tp_tensor_release(zu), tp_tensor_release(zi), tp_tensor_release(z2);
  tp_tensor_release(xf);
}

/* qconv2d: the same sums through the epilogue, against this file's own
 * formula: v = (float)acc * mult with mult = x_scale * w_scale[m] (/ y_scale)
 * in float32; float out + bias, relu; quantized out round half even
 * (rintf), + y_zero_point, saturated, relu at the zero point. An int32
 * bias adds to the sum. */
static tp_tensor *f32_of(int nd, const int64_t *sh, const float *v) {
  tp_tensor *t = NULL;
  CHECK_OK(tp_tensor_new(TP_F32, nd, sh, v, &t));
  return t;
}

static void test_qconv2d(void) {
  for (int it = 0; it < 96; it++) {
    geo g;
    g.N = rnd(1, 2), g.G = it % 6 == 5 ? 2 : 1;
    g.C = g.G * rnd(1, 6), g.M = g.G * rnd(1, 13), g.KH = rnd(1, 3), g.KW = rnd(1, 3);
    if (it % 8 == 2) g.G = g.C, g.M = g.C; /* depthwise */
    g.sh = rnd(1, 2), g.sw = rnd(1, 2), g.dh = 1, g.dw = rnd(1, 2);
    g.pt = rnd(0, 1), g.pl = rnd(0, 1), g.pb = rnd(0, 1), g.pr = rnd(0, 1);
    g.H = (g.KH - 1) * g.dh + 1 + rnd(0, 6), g.W = (g.KW - 1) * g.dw + 1 + rnd(0, 9);
    tp_dtype dx = it & 1 ? TP_I8 : TP_U8, dw = it & 2 ? TP_U8 : TP_I8;
    int out_kind = it % 3; /* 0 float32, 1 uint8, 2 int8 */
    int bias_kind = (it / 3) % 3; /* 0 none, 1 int32, 2 float32 (float out only) */
    if (bias_kind == 2 && out_kind) bias_kind = 1;
    int relu = (it / 9) & 1, per_ch = (it / 2) & 1;
    int64_t Cg = g.C / g.G, nx = g.N * g.C * g.H * g.W, nw = g.M * Cg * g.KH * g.KW;
    int *x = malloc(sizeof(int) * (size_t)nx), *w = malloc(sizeof(int) * (size_t)nw), *zw = malloc(sizeof(int) * (size_t)g.M);
    float *sw = malloc(sizeof(float) * (size_t)g.M), *bf = malloc(sizeof(float) * (size_t)g.M);
    int32_t *bi = malloc(sizeof(int32_t) * (size_t)g.M);
    int xlo = dx == TP_I8 ? -128 : 0, wlo = dw == TP_I8 ? -128 : 0;
    for (int64_t i = 0; i < nx; i++) x[i] = rnd(xlo, xlo + 255);
    for (int64_t i = 0; i < nw; i++) w[i] = rnd(wlo, wlo + 255);
    int zx = rnd(xlo, xlo + 255);
    for (int64_t m = 0; m < g.M; m++) {
      zw[m] = per_ch || m == 0 ? rnd(wlo, wlo + 255) : zw[0];
      sw[m] = per_ch || m == 0 ? (float)rnd(1, 50) / 4096.0f : sw[0];
      bf[m] = (float)rnd(-1000, 1000) / 64.0f;
      bi[m] = rnd(-20000, 20000);
    }
    float sx = (float)rnd(1, 40) / 256.0f, sy = (float)rnd(5, 60) / 8.0f;
    int zy = out_kind == 1 ? rnd(0, 255) : rnd(-128, 127);
    int64_t OH = out_dim(g.H, g.pt, g.pb, g.KH, g.dh, g.sh), OW = out_dim(g.W, g.pl, g.pr, g.KW, g.dw, g.sw);
    int64_t ny = g.N * g.M * OH * OW, P = OH * OW;
    int32_t *acc = malloc(sizeof(int32_t) * (size_t)ny);
    conv_loop(&g, x, w, zx, zw, acc);
    double *want = malloc(sizeof(double) * (size_t)ny);
    for (int64_t o = 0; o < ny; o++) {
      int64_t m = (o / P) % g.M;
      int32_t a = bias_kind == 1 ? (int32_t)((uint32_t)acc[o] + (uint32_t)bi[m]) : acc[o];
      float mult = out_kind ? sx * sw[m] / sy : sx * sw[m];
      float v = (float)a * mult;
      if (!out_kind) {
        if (bias_kind == 2) v = v + bf[m];
        want[o] = relu && !(v > 0.0f) ? 0.0 : v;
      } else {
        double lo = out_kind == 1 ? 0 : -128, hi = out_kind == 1 ? 255 : 127;
        if (relu && lo < zy) lo = zy;
        double q = (double)rintf(v) + zy;
        want[o] = q < lo ? lo : q > hi ? hi : q;
      }
    }
    int64_t sxs[4] = {g.N, g.C, g.H, g.W}, sws[4] = {g.M, Cg, g.KH, g.KW}, s1[1] = {1}, sm[1] = {g.M};
    tp_dtype od = out_kind == 0 ? TP_F32 : out_kind == 1 ? TP_U8 : TP_I8;
    tp_tensor *in[9] = {of_ints(dx, 4, sxs, x), of_ints(dw, 4, sws, w), of_ints(dx, 0, s1, &zx),
                        per_ch ? of_ints(dw, 1, sm, zw) : of_ints(dw, 0, s1, zw), f32_of(0, s1, &sx),
                        per_ch ? f32_of(1, sm, sw) : f32_of(0, s1, sw), NULL, NULL, NULL};
    if (bias_kind == 1) CHECK_OK(tp_tensor_new(TP_I32, 1, sm, bi, &in[6]));
    if (bias_kind == 2) in[6] = f32_of(1, sm, bf);
    if (out_kind) in[7] = f32_of(0, s1, &sy), in[8] = of_ints(od, 0, s1, &zy);
    tp_attrs at;
    window_attrs(&g, &at);
    at.keepdim = relu;
    for (int ref = 0; ref < 2; ref++) {
      tp_tensor *y = NULL;
      tp_status s = ref ? tp_op_exec_ref(TP_OP_QCONV2D, 9, in, &at, &y) : (tp_status)tp_op_call(TP_OP_QCONV2D, 9, in, &at, &y);
      CHECKF(s == TP_OK, "qconv2d case %d (%s): %s", it, ref ? "reference" : "kernel", tp_last_error());
      if (s) continue;
      CHECKF(tp_tensor_dtype(y) == od, "qconv2d case %d: dtype", it);
      int64_t bad = -1;
      double gv = 0;
      for (int64_t o = 0; o < ny && bad < 0; o++) {
        gv = tp_tensor_get_f64(y, o);
        if (out_kind ? gv != want[o] : fabs(gv - want[o]) > 0) bad = o;
      }
      CHECKF(bad < 0, "qconv2d case %d (%s, out %s, bias %d, relu %d, G%lld): element %lld is %g, expected %g", it,
             ref ? "reference" : "kernel", tp_dtype_name(od), bias_kind, relu, (long long)g.G, (long long)bad, gv,
             bad >= 0 ? want[bad] : 0.0);
      tp_tensor_release(y);
    }
    for (int k = 0; k < 9; k++) tp_tensor_release(in[k]);
    free(x), free(w), free(zw), free(sw), free(bf), free(bi), free(acc), free(want);
  }
  /* bad operands */
  int64_t sx4[4] = {1, 1, 3, 3}, sw4[4] = {2, 1, 2, 2}, s1[1] = {1}, s3[1] = {3};
  int v[9] = {0};
  float one = 1.0f, zero = 0.0f, three[3] = {1, 1, 1};
  tp_tensor *X = of_ints(TP_U8, 4, sx4, v), *W = of_ints(TP_I8, 4, sw4, v), *S = f32_of(0, s1, &one), *Z0 = f32_of(0, s1, &zero),
            *S3 = f32_of(1, s3, three), *YZ = of_ints(TP_U8, 0, s1, v), *BF = NULL, *y = NULL;
  float b2[2] = {1, 2};
  int64_t s2[1] = {2};
  BF = f32_of(1, s2, b2);
  geo g = {1, 1, 3, 3, 2, 2, 2, 1, 1, 1, 0, 0, 0, 0, 1, 1};
  tp_attrs at;
  window_attrs(&g, &at);
  tp_tensor *a1[9] = {X, W, NULL, NULL, S, S3, NULL, NULL, NULL};
  CHECK(tp_op_call(TP_OP_QCONV2D, 9, a1, &at, &y) == TP_ERR_INVALID_ARG &&
        strstr(tp_last_error(), "qconv2d: w_scale has shape [3]; one value or one per output channel ([M]) is supported"));
  tp_tensor *a2[9] = {X, W, NULL, NULL, S, S, BF, S, YZ};
  CHECK(tp_op_call(TP_OP_QCONV2D, 9, a2, &at, &y) == TP_ERR_INVALID_ARG &&
        strstr(tp_last_error(), "qconv2d: a float32 bias needs a float output"));
  tp_tensor *a3[9] = {X, W, NULL, NULL, S, S, NULL, Z0, YZ};
  CHECK(tp_op_call(TP_OP_QCONV2D, 9, a3, &at, &y) == TP_ERR_INVALID_ARG &&
        strstr(tp_last_error(), "qconv2d: y_scale element 0 is 0; a scale must be finite and > 0"));
  tp_tensor *a4[9] = {X, W, NULL, NULL, S, S, NULL, S, NULL};
  CHECK(tp_op_call(TP_OP_QCONV2D, 9, a4, &at, &y) == TP_ERR_INVALID_ARG &&
        strstr(tp_last_error(), "qconv2d: y_scale and y_zero_point come together"));
  tp_tensor *a5[9] = {X, W, NULL, NULL, S, S, NULL, S, YZ};
  CHECK_OK(tp_op_call(TP_OP_QCONV2D, 9, a5, &at, &y)); /* still usable */
  tp_tensor_release(y);
  tp_tensor *ts[] = {X, W, S, Z0, S3, YZ, BF};
  for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) tp_tensor_release(ts[k]);
}

int main(void) {
  size_t live0 = tp_live_tensors();
  test_hand();
  test_sweep();
  test_int32_edge();
  test_depthwise_huge_padding();
  test_errors();
  test_qconv2d();
  CHECKF(tp_live_tensors() == live0, "%zu tensors leaked", tp_live_tensors() - live0);
  printf("test_qconv: %d checks, %d failure(s)\n", checks, failures);
  return failures != 0;
}
