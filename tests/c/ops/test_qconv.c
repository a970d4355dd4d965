/* test_qconv.c - conv2d_int (ONNX ConvInteger, src/ops/qconv.c) through the
 * public API against this file's own int64 loop (wrapped to int32 as ONNX
 * does): a hand-checked case, a sweep of windows, groups, dtypes and zero
 * points (the integer GEMM path and the scalar path), the int32 edge of the
 * GEMM's exact sum and one past it, the reference kernel, bad operands. */
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
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

int main(void) {
  size_t live0 = tp_live_tensors();
  test_hand();
  test_sweep();
  test_int32_edge();
  test_errors();
  CHECKF(tp_live_tensors() == live0, "%zu tensors leaked", tp_live_tensors() - live0);
  printf("test_qconv: %d checks, %d failure(s)\n", checks, failures);
  return failures != 0;
}
