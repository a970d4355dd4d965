/* qconv.c - conv2d_int (ops.def): ONNX ConvInteger, exact int32.
 *
 * Reference (tp_exec_conv2d_int_ref): the scalar loop over every output and
 * window tap, int64 sums wrapped to int32 as ONNX's int32 result wraps.
 *
 * Fast path (tp_exec_conv2d_int), one group, int8/uint8 operands: per image,
 * blocks of QC_ROWS output positions are written as rows of their window's
 * taps (im2row: [rows, C*KH*KW] uint8, int8 x shifted by +128 with its zero
 * point; a tap in the padding holds the zero point, so it adds 0), multiplied
 * on the integer GEMM (src/runtime/qgemm.h) by the weight packed once as
 * W^T [C*KH*KW, M] with its zero point per output channel, and the [rows, M]
 * int32 block is transposed into y[n, :, p]. The GEMM's sum is exact in
 * int32 only up to tp_qgemm_max_k taps for these zero points; past that
 * (or grouped convolutions, which have no GEMM path yet) the scalar loop. */
#include "ops.h"
#include "../runtime/qgemm.h"
#include <string.h>

enum { QC_ROWS = 192 }; /* output positions per im2row block: the block and its [rows, M] result stay in L2 */

static int32_t zp_of(const tp_tensor *z, int64_t i) {
  if (!z) return 0;
  return (int32_t)tp_tensor_get_f64(z, tp_tensor_numel(z) == 1 ? 0 : i);
}

tp_status tp_exec_conv2d_int_ref(int nin, tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, tp_tensor **out) {
  tp_tensor *xz = nin > 2 ? in[2] : NULL, *wz = nin > 3 ? in[3] : NULL, *x = NULL, *w = NULL, *y = NULL;
  tp_desc dx, dw;
  tp_desc_of(in[0], &dx);
  tp_desc_of(in[1], &dw);
  tp_conv2d_geom g;
  TP_TRY(tp_conv2d_geometry(&dx, &dw, at, &g));
  tp_status s = tp_to_dtype(in[0], TP_I32, &x);
  if (!s) s = tp_to_dtype(in[1], TP_I32, &w);
  if (!s) s = tp_tensor_empty(TP_I32, od->ndim, od->shape, &y);
  if (s) goto done;
  const int32_t *X = tp_tensor_ptr(x), *W = tp_tensor_ptr(w);
  int32_t *Y = tp_tensor_ptr(y);
  int64_t Cg = g.C / g.G, Mg = g.M / g.G, za = zp_of(xz, 0);
  for (int64_t n = 0; n < g.N; n++)
    for (int64_t m = 0; m < g.M; m++) {
      int64_t grp = m / Mg, zb = zp_of(wz, m);
      for (int64_t oh = 0; oh < g.OH; oh++)
        for (int64_t ow = 0; ow < g.OW; ow++) {
          uint64_t acc = 0; /* wraps like ONNX's int32 sums (no undefined overflow) */
          for (int64_t c = 0; c < Cg; c++)
            for (int64_t kh = 0; kh < g.KH; kh++) {
              int64_t ih = oh * g.sh - g.pt + kh * g.dh;
              if (ih < 0 || ih >= g.H) continue;
              for (int64_t kw = 0; kw < g.KW; kw++) {
                int64_t iw = ow * g.sw - g.pl + kw * g.dw;
                if (iw < 0 || iw >= g.W) continue;
                int64_t xv = X[((n * g.C + grp * Cg + c) * g.H + ih) * g.W + iw];
                int64_t wv = W[((m * Cg + c) * g.KH + kh) * g.KW + kw];
                acc += (uint64_t)((xv - za) * (wv - zb));
              }
            }
          Y[((n * g.M + m) * g.OH + oh) * g.OW + ow] = (int32_t)(uint32_t)acc;
        }
    }
  *out = y;
  y = NULL;
done:
  tp_tensor_release(x);
  tp_tensor_release(w);
  tp_tensor_release(y);
  return s;
}

tp_status tp_qconv_pack_w(const tp_tensor *w0, const tp_tensor *wz, int64_t groups, tp_qmm_b *out) {
  memset(out, 0, sizeof *out);
  if (groups != 1 || w0->ndim != 4 || (w0->dtype != TP_I8 && w0->dtype != TP_U8)) return TP_OK; /* not for the GEMM */
  int64_t M = w0->shape[0], K = w0->shape[1] * w0->shape[2] * w0->shape[3];
  if (M <= 0 || K <= 0) return TP_OK;
  tp_tensor *w = NULL;
  TP_TRY(tp_contiguous((tp_tensor *)w0, &w));
  /* B = W^T: B[k, m] = W[m, k] at w + k * 1 + m * K */
  tp_status s = tp_qmm_pack_raw(tp_tensor_ptr(w), w->dtype, K, M, 1, K, wz, NULL, out);
  tp_tensor_release(w);
  return s;
}

/* Rows [p0, p0 + rows) of image n's im2row into A [rows, K] (uint8,
 * x already as uint8 values; pad: the zero point as uint8). */
static void im2row(const uint8_t *X, const tp_conv2d_geom *g, int64_t n, int64_t p0, int64_t rows, uint8_t pad,
                   uint8_t xor, uint8_t *A) {
  int64_t K = g->C * g->KH * g->KW;
  for (int64_t r = 0; r < rows; r++) {
    int64_t p = p0 + r, oh = p / g->OW, ow = p % g->OW;
    uint8_t *row = A + r * K;
    for (int64_t c = 0; c < g->C; c++) {
      const uint8_t *xc = X + (n * g->C + c) * g->H * g->W;
      for (int64_t kh = 0; kh < g->KH; kh++) {
        int64_t ih = oh * g->sh - g->pt + kh * g->dh;
        uint8_t *dst = row + (c * g->KH + kh) * g->KW;
        if (ih < 0 || ih >= g->H) {
          memset(dst, pad, (size_t)g->KW);
          continue;
        }
        const uint8_t *xr = xc + ih * g->W;
        int64_t iw = ow * g->sw - g->pl;
        if (g->dw == 1 && iw >= 0 && iw + g->KW <= g->W && !xor) {
          memcpy(dst, xr + iw, (size_t)g->KW);
          continue;
        }
        for (int64_t kw = 0; kw < g->KW; kw++, iw += g->dw)
          dst[kw] = iw < 0 || iw >= g->W ? pad : (uint8_t)(xr[iw] ^ xor);
      }
    }
  }
}

tp_status tp_exec_conv2d_int(int nin, tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, const tp_qmm_b *pre,
                             tp_tensor *into, tp_tensor **out) {
  tp_tensor *x0 = in[0], *w = in[1], *xz = nin > 2 ? in[2] : NULL, *wz = nin > 3 ? in[3] : NULL;
  *out = NULL;
  tp_desc dx, dw;
  tp_desc_of(x0, &dx);
  tp_desc_of(w, &dw);
  tp_conv2d_geom g;
  TP_TRY(tp_conv2d_geometry(&dx, &dw, at, &g));
  int64_t K = g.C * g.KH * g.KW, P = g.OH * g.OW;
  if (g.G != 1 || tp_shape_numel(od->ndim, od->shape) == 0 || K == 0)
    goto reference;
  int shift = x0->dtype == TP_I8; /* int8 x: x + 128 as uint8, its zero point too */
  int32_t za = zp_of(xz, 0) + (shift ? 128 : 0);
  tp_qmm_b own = {0};
  const tp_qmm_b *pb = pre && pre->p ? pre : NULL;
  if (!pb) {
    TP_TRY(tp_qconv_pack_w(w, wz, g.G, &own));
    if (!own.p) goto reference;
    pb = &own;
  }
  if (pb->K != K || pb->N != g.M || K > tp_qgemm_max_k(za, pb->zb_min, pb->zb_max, 0)) { /* the exact sum could overflow */
    tp_qmm_b_free(&own);
    goto reference;
  }
  tp_tensor *x = NULL, *y = NULL;
  uint8_t *A = NULL;
  int32_t *C = NULL;
  tp_status s = tp_contiguous(x0, &x);
  int64_t rows = P < QC_ROWS ? P : QC_ROWS;
  if (!s && into) y = into;
  else if (!s) s = tp_tensor_empty(TP_I32, od->ndim, od->shape, &y);
  if (!s && (!(A = tp_alloc((size_t)(rows * K))) || !(C = tp_alloc(sizeof(int32_t) * (size_t)(rows * g.M)))))
    s = tp_fail(TP_ERR_OUT_OF_MEMORY, "conv2d_int: out of memory for a %lldx%lld block of window rows", (long long)rows,
                (long long)K);
  if (!s) {
    const uint8_t *X = tp_tensor_ptr(x);
    int32_t *Y = tp_tensor_ptr(y);
    tp_qgemm_out o = {.kind = TP_QGEMM_S32, .c = C, .ldc = g.M};
    for (int64_t n = 0; n < g.N && !s; n++)
      for (int64_t p0 = 0; p0 < P && !s; p0 += rows) {
        int64_t r = P - p0 < rows ? P - p0 : rows;
        im2row(X, &g, n, p0, r, (uint8_t)za, shift ? 0x80 : 0, A);
        s = tp_qgemm_run(pb->p, r, A, K, za, 1.0f, &o);
        for (int64_t m = 0; m < g.M && !s; m++) { /* [r, M] -> y[n, m, p0 .. p0 + r) */
          int32_t *dst = Y + (n * g.M + m) * P + p0;
          for (int64_t i = 0; i < r; i++) dst[i] = C[i * g.M + m];
        }
      }
  }
  tp_free(A);
  tp_free(C);
  tp_tensor_release(x);
  tp_qmm_b_free(&own);
  if (s) {
    if (y != into) tp_tensor_release(y);
    return s;
  }
  if (y != into) *out = y;
  return TP_OK;
reference: {
  tp_tensor *r = NULL;
  TP_TRY(tp_exec_conv2d_int_ref(nin, in, at, od, &r));
  if (!into) {
    *out = r;
    return TP_OK;
  }
  tp_tensor_copy_into(r, into);
  tp_tensor_release(r);
  return TP_OK;
}
}
