/* qconv.c - conv2d_int (ONNX ConvInteger, exact int32) and qconv2d (the
 * quantized convolution: QLinearConv, QDQ convolutions), ops.def.
 *
 * Reference (tp_exec_conv2d_int_ref): the scalar loop over every output and
 * window tap, int64 sums wrapped to int32 as ONNX's int32 result wraps.
 *
 * Fast path (tp_exec_conv2d_int), one group, int8/uint8 operands: per image,
 * x is copied channels-last (NHWC, int8 shifted by +128 with its zero point
 * to uint8), blocks of QC_ROWS output positions are written as rows of their
 * window's taps (im2row: [rows, KH*KW*C] uint8, channels innermost, so a
 * window row is one run of KW*C bytes; a tap in the padding holds the zero
 * point, so it adds 0; a 1x1 window at stride 1 reads the NHWC image
 * itself), multiplied on the integer GEMM (src/runtime/qgemm.h) by the
 * weight packed once as W^T [KH*KW*C, M] (taps in the same order) with its
 * zero point per output channel, and the [rows, M] block is transposed into
 * y[n, :, p]. The GEMM's sum is exact in
 * int32 only up to tp_qgemm_max_k taps for these zero points; past that
 * (or grouped convolutions, which have no GEMM path yet) the scalar loop.
 * qconv2d runs the same with qmatmul's epilogue in the GEMM (scale per
 * output channel, bias, relu, requantization): [rows, M] of its output
 * dtype, transposed the same way. Its reference is conv2d_int's loop
 * followed by the epilogue's formula (tp_qmm_epilogue). */
#include "ops.h"
#include "../runtime/qgemm.h"
#include <string.h>
#include <math.h>

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

tp_status tp_qconv_pack_w(const tp_tensor *w0, const tp_tensor *wz, const tp_tensor *ws, const tp_tensor *bias,
                          int64_t groups, tp_qmm_b *out) {
  memset(out, 0, sizeof *out);
  if (groups != 1 || w0->ndim != 4 || (w0->dtype != TP_I8 && w0->dtype != TP_U8)) return TP_OK; /* not for the GEMM */
  int64_t M = w0->shape[0], C = w0->shape[1], KH = w0->shape[2], KW = w0->shape[3], K = C * KH * KW;
  if (M <= 0 || K <= 0) return TP_OK;
  for (int64_t k = 0; ws && k < tp_tensor_numel(ws); k++) { /* the GEMM takes finite scales > 0; others take the loop */
    double v = tp_tensor_get_f64(ws, k);
    if (!(v > 0) || isinf(v)) return TP_OK;
  }
  tp_tensor *w = NULL;
  TP_TRY(tp_contiguous((tp_tensor *)w0, &w));
  /* B[k, m] with k = (kh KW + kw) C + c (the taps of an NHWC window, channels innermost) = W[m, c, kh, kw] */
  uint8_t *bt = tp_alloc((size_t)(K * M));
  tp_status s = bt ? TP_OK : tp_fail(TP_ERR_OUT_OF_MEMORY, "qconv2d: out of memory for a %lldx%lld weight", (long long)K, (long long)M);
  if (bt) {
    const uint8_t *W = tp_tensor_ptr(w);
    for (int64_t m = 0; m < M; m++)
      for (int64_t c = 0; c < C; c++)
        for (int64_t t = 0; t < KH * KW; t++) bt[(t * C + c) * M + m] = W[(m * C + c) * KH * KW + t];
    s = tp_qmm_pack_raw(bt, w->dtype, K, M, M, 1, wz, ws, bias, out);
  }
  tp_free(bt);
  tp_tensor_release(w);
  return s;
}

/* n bytes: 16 at a time (one vector load / store), then the rest */
static void copy_bytes(uint8_t *d, const uint8_t *s, int64_t n) {
  for (; n >= 16; n -= 16, d += 16, s += 16) memcpy(d, s, 16);
  for (; n > 0; n--) *d++ = *s++;
}
static void fill_bytes(uint8_t *d, uint8_t v, int64_t n) {
  uint8_t b[16];
  memset(b, v, 16);
  for (; n >= 16; n -= 16, d += 16) memcpy(d, b, 16);
  for (; n > 0; n--) *d++ = v;
}

/* The 8x8 byte matrix r[0..7] (byte k of r[i] = element (i, k)) transposed
 * in place: three rounds of swapping 1-, 2- and 4-byte blocks. */
#define TR_SWAP(a, b, sh, mask)                             \
  do {                                                      \
    uint64_t t_ = (((a) >> (sh)) ^ (b)) & (mask);           \
    (b) ^= t_, (a) ^= t_ << (sh);                           \
  } while (0)
static inline void tr8x8(uint64_t r[8]) {
  const uint64_t m1 = 0x00FF00FF00FF00FFull, m2 = 0x0000FFFF0000FFFFull, m4 = 0x00000000FFFFFFFFull;
  TR_SWAP(r[0], r[1], 8, m1); TR_SWAP(r[2], r[3], 8, m1); TR_SWAP(r[4], r[5], 8, m1); TR_SWAP(r[6], r[7], 8, m1);
  TR_SWAP(r[0], r[2], 16, m2); TR_SWAP(r[1], r[3], 16, m2); TR_SWAP(r[4], r[6], 16, m2); TR_SWAP(r[5], r[7], 16, m2);
  TR_SWAP(r[0], r[4], 32, m4); TR_SWAP(r[1], r[5], 32, m4); TR_SWAP(r[2], r[6], 32, m4); TR_SWAP(r[3], r[7], 32, m4);
}
#undef TR_SWAP

/* dst[j * ld_dst + i] = src[i * ld_src + j] ^ xor for i < rows, j < cols:
 * 8x8 blocks through tr8x8, the edges byte by byte. */
static void transpose_bytes(const uint8_t *src, int64_t ld_src, uint8_t *dst, int64_t ld_dst, int64_t rows, int64_t cols,
                            uint8_t xor) {
  uint64_t x8 = 0x0101010101010101ull * xor;
  int64_t r8 = rows & ~(int64_t)7, c8 = cols & ~(int64_t)7;
  for (int64_t i0 = 0; i0 < r8; i0 += 8)
    for (int64_t j0 = 0; j0 < c8; j0 += 8) {
      uint64_t r[8];
      for (int k = 0; k < 8; k++) memcpy(&r[k], src + (i0 + k) * ld_src + j0, 8);
      tr8x8(r);
      for (int k = 0; k < 8; k++) {
        uint64_t v = r[k] ^ x8;
        memcpy(dst + (j0 + k) * ld_dst + i0, &v, 8);
      }
    }
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = i < r8 ? c8 : 0; j < cols; j++) dst[j * ld_dst + i] = (uint8_t)(src[i * ld_src + j] ^ xor);
}

/* Image n of x (NCHW uint8 values) as NHWC into xh [H, W, C], int8 shifted
 * to uint8 (xor 0x80). */
static void to_nhwc(const uint8_t *X, const tp_conv2d_geom *g, int64_t n, uint8_t xor, uint8_t *xh) {
  int64_t HW = g->H * g->W, C = g->C;
  transpose_bytes(X + n * C * HW, HW, xh, C, C, HW, xor);
}

/* Rows [p0, p0 + rows) of the im2row of xh (NHWC) into A [rows, K], K =
 * (kh KW + kw) C + c; a tap in the padding is pad (the zero point). */
static void im2row(const uint8_t *xh, const tp_conv2d_geom *g, int64_t p0, int64_t rows, uint8_t pad, uint8_t *A) {
  int64_t C = g->C, K = C * g->KH * g->KW, run = g->KW * C;
  for (int64_t r = 0; r < rows; r++) {
    int64_t p = p0 + r, oh = p / g->OW, ow = p % g->OW, iw0 = ow * g->sw - g->pl;
    uint8_t *row = A + r * K;
    for (int64_t kh = 0; kh < g->KH; kh++) {
      int64_t ih = oh * g->sh - g->pt + kh * g->dh;
      uint8_t *dst = row + kh * run;
      if (ih < 0 || ih >= g->H) {
        fill_bytes(dst, pad, run);
        continue;
      }
      const uint8_t *xr = xh + ih * g->W * C;
      if (g->dw == 1 && iw0 >= 0 && iw0 + g->KW <= g->W) { /* the whole window row: one run */
        copy_bytes(dst, xr + iw0 * C, run);
        continue;
      }
      for (int64_t kw = 0, iw = iw0; kw < g->KW; kw++, iw += g->dw) {
        if (iw < 0 || iw >= g->W) fill_bytes(dst + kw * C, pad, C);
        else copy_bytes(dst + kw * C, xr + iw * C, C);
      }
    }
  }
}

/* The convolution's geometry; x channels last ([N, H, W, C]) when bit 0
 * of at->dim1 (qconv2d's nhwc) is set. */
static tp_status geometry(const tp_tensor *x, const tp_tensor *w, const tp_attrs *at, tp_conv2d_geom *g) {
  tp_desc dx, dw;
  tp_desc_of(x, &dx);
  tp_desc_of(w, &dw);
  if ((at->dim1 & 1) && dx.ndim == 4)
    dx.shape[1] = x->shape[3], dx.shape[2] = x->shape[1], dx.shape[3] = x->shape[2];
  return tp_conv2d_geometry(&dx, &dw, at, g);
}

/* y = the convolution of x (contiguous) on the integer GEMM with packed
 * W^T pb: o0 gives the epilogue (kind, scale, zero point, float bias, relu;
 * c and ldc are set here), es its element size, sa x's scale. */
static tp_status conv_gemm(const tp_conv2d_geom *g, const tp_tensor *x, int nhwc, int shift, int32_t za, float sa,
                           const tp_qmm_b *pb, const tp_qgemm_out *o0, size_t es, void *Y) {
  int64_t K = g->C * g->KH * g->KW, P = g->OH * g->OW, rows = P < QC_ROWS ? P : QC_ROWS, HWC = g->H * g->W * g->C;
  /* a 1x1 window at stride 1 without padding reads the NHWC image itself as A */
  int direct = g->KH == 1 && g->KW == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 && g->pl == 0 && g->OH == g->H && g->OW == g->W;
  int x_in_place = (nhwc & 1) && !shift, y_in_place = (nhwc & 2) != 0; /* channels-last x read, y written, as they are */
  uint8_t *xh = x_in_place ? NULL : tp_alloc((size_t)HWC), *A = direct ? NULL : tp_alloc((size_t)(rows * K));
  char *C = y_in_place ? NULL : tp_alloc(es * (size_t)(rows * g->M));
  tp_status s = TP_OK;
  if ((!x_in_place && !xh) || (!direct && !A) || (!y_in_place && !C))
    s = tp_fail(TP_ERR_OUT_OF_MEMORY, "%s: out of memory for a %lldx%lld block of window rows",
                o0->kind == TP_QGEMM_S32 ? "conv2d_int" : "qconv2d", (long long)rows, (long long)K);
  const uint8_t *X = tp_tensor_ptr(x);
  tp_qgemm_out o = *o0;
  o.c = C, o.ldc = g->M;
  for (int64_t n = 0; n < g->N && !s; n++) {
    const uint8_t *xn = X + n * HWC;
    if (!(nhwc & 1)) to_nhwc(X, g, n, shift ? 0x80 : 0, xh);
    else if (shift) for (int64_t i = 0; i < HWC; i++) xh[i] = (uint8_t)(xn[i] ^ 0x80);
    if (!x_in_place) xn = xh;
    for (int64_t p0 = 0; p0 < P && !s; p0 += rows) {
      int64_t r = P - p0 < rows ? P - p0 : rows;
      const uint8_t *a = direct ? xn + p0 * K : A;
      if (!direct) im2row(xn, g, p0, r, (uint8_t)za, A);
      if (y_in_place) o.c = (char *)Y + (size_t)((n * P + p0) * g->M) * es; /* y[n, p, m]: the GEMM's rows as they are */
      s = tp_qgemm_run(pb->p, r, a, K, za, sa, &o);
      if (s || y_in_place) continue;
      /* [r, M] -> y[n, m, p0 .. p0 + r) */
      if (es == 4) {
        const int32_t *c4 = (const int32_t *)C;
        for (int64_t m = 0; m < g->M; m++) {
          int32_t *dst = (int32_t *)Y + (n * g->M + m) * P + p0;
          for (int64_t i = 0; i < r; i++) dst[i] = c4[i * g->M + m];
        }
      } else {
        transpose_bytes((const uint8_t *)C, g->M, (uint8_t *)Y + n * g->M * P + p0, P, r, g->M, 0);
      }
    }
  }
  tp_free(xh);
  tp_free(A);
  tp_free(C);
  return s;
}

/* The shared driver: checks the GEMM can take it (one group, the exact
 * sum), packs W^T when pre has none, runs conv_gemm into `into` or a new
 * tensor; *ran 0 when the caller must take its scalar loop. */
static tp_status conv_fast(tp_tensor *const *in, int nin, const tp_attrs *at, const tp_desc *od, const tp_qmm_b *pre,
                           const tp_tensor *ws, const tp_tensor *bias_i32, float sa, const tp_qgemm_out *o0,
                           tp_tensor *into, tp_tensor **out, int *ran) {
  tp_tensor *x0 = in[0], *w = in[1], *xz = nin > 2 ? in[2] : NULL, *wz = nin > 3 ? in[3] : NULL;
  *ran = 0;
  tp_conv2d_geom g;
  int nhwc = (int)at->dim1;
  TP_TRY(geometry(x0, w, at, &g));
  int64_t K = g.C * g.KH * g.KW;
  if (g.G != 1 || tp_shape_numel(od->ndim, od->shape) == 0 || K == 0) return TP_OK;
  int shift = x0->dtype == TP_I8; /* int8 x: x + 128 as uint8, its zero point too */
  int32_t za = zp_of(xz, 0) + (shift ? 128 : 0);
  tp_qmm_b own = {0};
  const tp_qmm_b *pb = pre && pre->p ? pre : NULL;
  if (!pb) {
    TP_TRY(tp_qconv_pack_w(w, wz, ws, bias_i32, g.G, &own));
    if (!own.p) return TP_OK;
    pb = &own;
  }
  if (pb->K != K || pb->N != g.M || K > tp_qgemm_max_k(za, pb->zb_min, pb->zb_max, pb->bias_absmax)) {
    tp_qmm_b_free(&own); /* the exact sum could overflow */
    return TP_OK;
  }
  tp_tensor *x = NULL, *y = NULL;
  tp_status s = tp_contiguous(x0, &x);
  if (!s && into) y = into;
  else if (!s) s = tp_tensor_empty(od->dtype, od->ndim, od->shape, &y);
  if (!s) s = conv_gemm(&g, x, nhwc, shift, za, sa, pb, o0, tp_dtype_size(od->dtype), tp_tensor_ptr(y));
  tp_tensor_release(x);
  tp_qmm_b_free(&own);
  if (s) {
    if (y != into) tp_tensor_release(y);
    return s;
  }
  *out = y != into ? y : NULL;
  *ran = 1;
  return TP_OK;
}

/* Grouped convolutions with one input channel per group (depthwise, any
 * depth multiplier), NCHW: per image and channel the plane (x - x_zp) as
 * int16 with its padding as zeros, then per output row and tap one pass
 * over the row (contiguous at stride 1: vectorized), int32 sums. The
 * taps' sum is exact in int32 for up to 33025 taps (255 * 255 each); more
 * take the scalar loop. acc: a new int32 [N, M, OH, OW]. 0 in *ran when
 * this does not apply. */
static tp_status conv_depthwise(tp_tensor *const *in, int nin, const tp_attrs *at, tp_tensor **acc, int *ran) {
  tp_tensor *xz = nin > 2 ? in[2] : NULL, *wz = nin > 3 ? in[3] : NULL, *x = NULL, *w = NULL, *y = NULL;
  *ran = 0;
  tp_conv2d_geom g;
  TP_TRY(geometry(in[0], in[1], at, &g));
  int64_t Cg = g.C / g.G, Mg = g.M / g.G;
  if (at->dim1 || Cg != 1 || g.G == 1 || g.KH * g.KW > 33025) return TP_OK;
  int64_t Hp = g.H + g.pt + ((g.OH - 1) * g.sh + (g.KH - 1) * g.dh + 1 - g.H - g.pt > 0 ? (g.OH - 1) * g.sh + (g.KH - 1) * g.dh + 1 - g.H - g.pt : 0);
  int64_t Wp = g.W + g.pl + ((g.OW - 1) * g.sw + (g.KW - 1) * g.dw + 1 - g.W - g.pl > 0 ? (g.OW - 1) * g.sw + (g.KW - 1) * g.dw + 1 - g.W - g.pl : 0);
  /* the plane holds the padding the windows reach: past the work itself
   * (huge padding with a stride that skips it) or past size_t (Wasm), the
   * scalar loop instead */
  int64_t plane_n, ohw, taps, hw, work;
  if (__builtin_mul_overflow(Hp, Wp, &plane_n) || (uint64_t)plane_n > (uint64_t)(SIZE_MAX / 4) ||
      __builtin_mul_overflow(g.OH, g.OW, &ohw) || __builtin_mul_overflow(ohw, g.KH * g.KW, &taps) || __builtin_mul_overflow(g.H, g.W, &hw) ||
      __builtin_add_overflow(taps, hw, &work) || plane_n / 4 > work + 1024)
    return TP_OK;
  int16_t *plane = tp_alloc(sizeof(int16_t) * (size_t)plane_n);
  int32_t *row = tp_alloc(sizeof(int32_t) * (size_t)g.OW);
  tp_status s = plane && row ? TP_OK : tp_fail(TP_ERR_OUT_OF_MEMORY, "conv2d_int: out of memory for a %lldx%lld plane",
                                              (long long)Hp, (long long)Wp);
  if (!s) s = tp_contiguous(in[0], &x);
  if (!s) s = tp_contiguous(in[1], &w);
  if (!s) s = tp_tensor_empty(TP_I32, 4, (int64_t[]){g.N, g.M, g.OH, g.OW}, &y);
  if (s) goto done;
  int xs8 = x->dtype == TP_I8, ws8 = w->dtype == TP_I8;
  const uint8_t *X = tp_tensor_ptr(x), *W = tp_tensor_ptr(w);
  int32_t *Y = tp_tensor_ptr(y), za = zp_of(xz, 0);
  int64_t HW = g.H * g.W, KK = g.KH * g.KW, P = g.OH * g.OW;
  for (int64_t n = 0; n < g.N; n++)
    for (int64_t c = 0; c < g.C; c++) {
      memset(plane, 0, sizeof(int16_t) * (size_t)plane_n);
      const uint8_t *xc = X + (n * g.C + c) * HW;
      for (int64_t h = 0; h < g.H; h++) {
        int16_t *dst = plane + (h + g.pt) * Wp + g.pl;
        const uint8_t *src = xc + h * g.W;
        if (xs8) for (int64_t i = 0; i < g.W; i++) dst[i] = (int16_t)((int8_t)src[i] - za);
        else for (int64_t i = 0; i < g.W; i++) dst[i] = (int16_t)(src[i] - za);
      }
      for (int64_t mm = 0; mm < Mg; mm++) {
        int64_t m = c * Mg + mm;
        int32_t zw = zp_of(wz, m);
        const uint8_t *wm = W + m * KK;
        int32_t *out = Y + (n * g.M + m) * P;
        for (int64_t oh = 0; oh < g.OH; oh++) {
          memset(row, 0, sizeof(int32_t) * (size_t)g.OW);
          for (int64_t kh = 0; kh < g.KH; kh++) {
            const int16_t *pr = plane + (oh * g.sh + kh * g.dh) * Wp;
            for (int64_t kw = 0; kw < g.KW; kw++) {
              int64_t t = kh * g.KW + kw;
              int32_t v = (ws8 ? (int32_t)(int8_t)wm[t] : (int32_t)wm[t]) - zw;
              const int16_t *src = pr + kw * g.dw;
              if (g.sw == 1)
                for (int64_t ow = 0; ow < g.OW; ow++) row[ow] += (int32_t)src[ow] * v;
              else
                for (int64_t ow = 0; ow < g.OW; ow++) row[ow] += (int32_t)src[ow * g.sw] * v;
            }
          }
          memcpy(out + oh * g.OW, row, sizeof(int32_t) * (size_t)g.OW);
        }
      }
    }
  *acc = y;
  y = NULL;
  *ran = 1;
done:
  tp_free(plane);
  tp_free(row);
  tp_tensor_release(x);
  tp_tensor_release(w);
  tp_tensor_release(y);
  return s;
}

/* The int32 sums of a convolution the GEMM does not take: depthwise ones
 * by conv_depthwise, the rest by the scalar loop. */
static tp_status conv_acc(tp_tensor *const *in, int nin, const tp_attrs *at, const tp_desc *ad, tp_tensor **acc) {
  int ran;
  TP_TRY(conv_depthwise(in, nin, at, acc, &ran));
  return ran ? TP_OK : tp_exec_conv2d_int_ref(nin, in, at, ad, acc);
}

/* r (a scalar loop's result) into `into`, or as *out */
static tp_status give(tp_tensor *r, tp_tensor *into, tp_tensor **out) {
  if (!into) {
    *out = r;
    return TP_OK;
  }
  tp_tensor_copy_into(r, into);
  tp_tensor_release(r);
  *out = NULL;
  return TP_OK;
}

tp_status tp_exec_conv2d_int(int nin, tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, const tp_qmm_b *pre,
                             tp_tensor *into, tp_tensor **out) {
  tp_qgemm_out o = {.kind = TP_QGEMM_S32};
  int ran;
  *out = NULL;
  TP_TRY(conv_fast(in, nin, at, od, pre, NULL, NULL, 1.0f, &o, into, out, &ran));
  if (ran) return TP_OK;
  tp_tensor *r = NULL;
  TP_TRY(conv_acc(in, nin, at, od, &r));
  return give(r, into, out);
}

/* ---- qconv2d ---- */

static tp_status check_scale_values(const char *what, const tp_tensor *t) {
  for (int64_t k = 0; t && k < tp_tensor_numel(t); k++) {
    double v = tp_tensor_get_f64(t, k);
    if (!(v > 0) || isinf(v))
      return tp_fail(TP_ERR_INVALID_ARG, "qconv2d: %s element %lld is %g; a scale must be finite and > 0", what, (long long)k, v);
  }
  return TP_OK;
}

static tp_status qconv2d_loop_nchw(tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, int fast, tp_tensor **out);

/* x [N,H,W,C] -> [N,C,H,W] (to 1) or [N,C,H,W] -> [N,H,W,C] (to 0), contiguous */
static tp_status relayout(tp_tensor *t, int to_nchw, tp_tensor **out) {
  tp_attrs pa;
  tp_attrs_init(&pa);
  pa.nints = 4;
  int64_t a[4] = {0, 3, 1, 2}, b[4] = {0, 2, 3, 1};
  memcpy(pa.ints, to_nchw ? a : b, sizeof a);
  tp_tensor *v = NULL;
  TP_TRY(tp_op_call(TP_OP_PERMUTE, 1, &t, &pa, &v));
  tp_status s = tp_contiguous(v, out);
  tp_tensor_release(v);
  return s;
}

/* The sums (fast: conv_acc; else the scalar loop), then the epilogue's
 * formula per element, in either layout. */
static tp_status qconv2d_loop(tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, int fast, tp_tensor **out) {
  if (!at->dim1) return qconv2d_loop_nchw(in, at, od, fast, out);
  /* channels last: the NCHW loop between permutes */
  tp_attrs a = *at;
  a.dim1 = 0;
  tp_desc d = *od;
  if (at->dim1 & 2) d.shape[1] = od->shape[3], d.shape[2] = od->shape[1], d.shape[3] = od->shape[2];
  tp_tensor *ins[9], *xc = NULL, *y = NULL;
  memcpy(ins, in, sizeof ins);
  tp_status s = TP_OK;
  if (at->dim1 & 1) s = relayout(in[0], 1, &xc), ins[0] = xc;
  if (!s) s = qconv2d_loop_nchw(ins, &a, &d, fast, &y);
  tp_tensor_release(xc);
  if (s || !(at->dim1 & 2)) {
    if (!s) *out = y;
    return s;
  }
  s = relayout(y, 0, out);
  tp_tensor_release(y);
  return s;
}

tp_status tp_exec_qconv2d_ref(int nin, tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, tp_tensor **out) {
  (void)nin;
  return qconv2d_loop(in, at, od, 0, out);
}

static tp_status qconv2d_loop_nchw(tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, int fast, tp_tensor **out) {
  tp_tensor *xs = in[4], *ws = in[5], *bias = in[6], *ys = in[7], *yz = in[8], *acc = NULL, *y = NULL;
  /* a float output takes an x_scale of 0 (DynamicQuantizeLinear's scale of
   * an all-zero input, in qlinear's dynamic ConvInteger pattern): y = bias */
  if (ys || tp_tensor_numel(xs) != 1 || tp_tensor_get_f64(xs, 0) != 0) TP_TRY(check_scale_values("x_scale", xs));
  TP_TRY(check_scale_values("w_scale", ws));
  TP_TRY(check_scale_values("y_scale", ys));
  tp_desc ad = *od;
  ad.dtype = TP_I32;
  TP_TRY(fast ? conv_acc(in, 4, at, &ad, &acc) : tp_exec_conv2d_int_ref(4, in, at, &ad, &acc));
  tp_status s = tp_tensor_empty(od->dtype, od->ndim, od->shape, &y);
  if (s) {
    tp_tensor_release(acc);
    return s;
  }
  const int32_t *A = tp_tensor_ptr(acc);
  int64_t M = od->shape[1], P = od->shape[2] * od->shape[3];
  float sa = (float)tp_tensor_get_f64(xs, 0), sy = ys ? (float)tp_tensor_get_f64(ys, 0) : 1.0f;
  float zy = yz ? (float)tp_tensor_get_f64(yz, 0) : 0.0f;
  int ibias = bias && bias->dtype == TP_I32;
  for (int64_t n = 0; n < od->shape[0]; n++)
    for (int64_t m = 0; m < M; m++) {
      float sb = (float)tp_tensor_get_f64(ws, tp_tensor_numel(ws) > 1 ? m : 0);
      float mult = ys ? sa * sb / sy : sa * sb;
      double bv = bias ? tp_tensor_get_f64(bias, tp_tensor_numel(bias) > 1 ? m : 0) : 0;
      float bf = (float)bv;
      for (int64_t p = 0; p < P; p++) {
        int64_t o = (n * M + m) * P + p;
        int32_t a = ibias ? (int32_t)((uint32_t)A[o] + (uint32_t)(int32_t)bv) : A[o]; /* wraps as int32 */
        double v = tp_qmm_epilogue(a, mult, bias && !ibias ? &bf : NULL, at->keepdim != 0, od, zy);
        if (od->dtype == TP_F32) ((float *)tp_tensor_ptr(y))[o] = (float)v;
        else if (od->dtype == TP_U8) ((uint8_t *)tp_tensor_ptr(y))[o] = (uint8_t)v;
        else ((int8_t *)tp_tensor_ptr(y))[o] = (int8_t)v;
      }
    }
  tp_tensor_release(acc);
  *out = y;
  return TP_OK;
}

tp_status tp_exec_qconv2d(int nin, tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, const tp_qmm_b *pre,
                          tp_tensor *into, tp_tensor **out) {
  tp_tensor *xs = in[4], *ws = in[5], *bias = in[6], *ys = in[7], *yz = in[8], *bc = NULL;
  *out = NULL;
  TP_TRY(check_scale_values("y_scale", ys));
  double sa = tp_tensor_get_f64(xs, 0);
  int ran = 0;
  if (sa > 0 && !isinf(sa) && (float)sa != 0.0f) { /* else the loop, which checks and names it */
    tp_status s = TP_OK;
    int fbias = bias && bias->dtype == TP_F32;
    if (fbias && tp_tensor_numel(bias) != in[1]->shape[0]) fbias = 0, ran = -1; /* one value for all channels: the loop */
    if (fbias && !tp_tensor_is_contiguous(bias)) {
      s = tp_tensor_empty(TP_F32, bias->ndim, bias->shape, &bc);
      if (!s) tp_tensor_copy_into(bias, bc);
    }
    tp_qgemm_out o = {.kind = od->dtype == TP_F32 ? TP_QGEMM_F32 : od->dtype == TP_U8 ? TP_QGEMM_U8 : TP_QGEMM_S8,
                      .relu = at->keepdim != 0,
                      .bias_f32 = fbias ? (const float *)tp_tensor_ptr(bc ? bc : bias) : NULL,
                      .scale = ys ? (float)tp_tensor_get_f64(ys, 0) : 0.0f,
                      .zero_point = yz ? (int32_t)tp_tensor_get_f64(yz, 0) : 0};
    if (!s && ran == 0)
      s = conv_fast(in, nin, at, od, pre, ws, bias && bias->dtype == TP_I32 ? bias : NULL, (float)sa, &o, into, out, &ran);
    tp_tensor_release(bc);
    if (s) return s;
  }
  if (ran == 1) return TP_OK;
  tp_tensor *r = NULL;
  TP_TRY(qconv2d_loop(in, at, od, 1, &r));
  return give(r, into, out);
}
