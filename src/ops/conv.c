/* conv.c - eager conv2d and max/avg pool2d on float32: the direct,
 * depthwise, im2col + GEMM and Winograd paths of conv2d (fused epilogue,
 * prepacked weights, row slabs on the pool) and the pooling loops. The
 * executor calls the *_into forms; exec.c's dispatch wraps them. */
#include "ops.h"
#include "../runtime/pool.h"
#include <math.h>

/* ---- conv2d (ops.def: window attrs, groups in dim) ---- */
/* Output columns [j0, j1) of kernel column kw read inside the input row:
 * input column = j * sw + *off. */
static void conv_tap_range(const tp_conv2d_geom *g, int64_t kw, int64_t *off, int64_t *j0,
                           int64_t *j1) {
  int64_t o = kw * g->dw - g->pl, lim = g->W - 1 - o;
  *off = o;
  *j0 = o < 0 ? (-o + g->sw - 1) / g->sw : 0;
  *j1 = lim < 0 ? 0 : lim / g->sw + 1;
  if (*j1 > g->OW) *j1 = g->OW;
  if (*j0 > *j1) *j0 = *j1;
}

/* The padded plane's extent on one axis: the taps' extent, or the input
 * after its leading padding if longer. */
static int64_t dw_padded_extent(int64_t pad, int64_t in, int64_t out, int64_t st, int64_t k, int64_t d) {
  int64_t need = (out - 1) * st + (k - 1) * d + 1;
  return need > pad + in ? need : pad + in;
}

/* Depthwise on a small padded plane (OW < 64: the row kernel's border
 * columns check every tap and its vectors span few or no columns; 5x5 on
 * 10x14 ran at 1.3-2.5 GFLOP/s in PP-OCRv4 detection): the plane is copied
 * into the interior of buf[0, Hp*Wp), whose border stays zero, so every
 * tap is inside. Stride 1 (and any stride with OW < 16): the stride-1
 * output is computed as one flat row over the padded plane (output (i, j)
 * at flat i*Wp + j; the columns between rows are computed and dropped)
 * into buf[Hp*Wp, ...), then copied out (every sh-th row, sw-th column);
 * other strides: a row at a time on the padded rows. */
static void conv_dw_padded(const tp_conv2d_geom *g, const float *x, const float *w, float bias,
                           float *buf, float *y) {
  int64_t Wp = dw_padded_extent(g->pl, g->W, g->OW, g->sw, g->KW, g->dw);
  int64_t Hp = dw_padded_extent(g->pt, g->H, g->OH, g->sh, g->KH, g->dh);
  const float *rows[64]; /* KH <= 64 (the caller checks) */
  for (int64_t i = 0; i < g->H; i++)
    memcpy(buf + (i + g->pt) * Wp + g->pl, x + i * g->W, sizeof(float) * (size_t)g->W);
  const tp_kernels *k = tp_kern();
  if ((g->sh == 1 && g->sw == 1) || g->OW < 16) {
    /* stride 1 at unit stride over the plane; strided outputs picked from it
     * (sh*sw times the multiply-adds, vectorized where a row of 7 is not) */
    int64_t n = (g->OH - 1) * g->sh * Wp + (g->OW - 1) * g->sw + 1;
    float *z = buf + Hp * Wp;
    for (int64_t kh = 0; kh < g->KH; kh++) rows[kh] = buf + kh * g->dh * Wp;
    k->dwconv_row_f32(rows, g->KH, g->KW, w, bias, z, n, n + (g->KW - 1) * g->dw, 1, g->dw, 0);
    for (int64_t i = 0; i < g->OH; i++) {
      const float *zr = z + i * g->sh * Wp;
      if (g->sw == 1) memcpy(y + i * g->OW, zr, sizeof(float) * (size_t)g->OW);
      else for (int64_t j = 0; j < g->OW; j++) y[i * g->OW + j] = zr[j * g->sw];
    }
    return;
  }
  for (int64_t i = 0; i < g->OH; i++) {
    for (int64_t kh = 0; kh < g->KH; kh++) rows[kh] = buf + (i * g->sh + kh * g->dh) * Wp;
    k->dwconv_row_f32(rows, g->KH, g->KW, w, bias, y + i * g->OW, g->OW, Wp, g->sw, g->dw, 0);
  }
}

/* im2col of output rows [i0, i0 + r) of one group: cols [Cg*KH*KW, r*OW],
 * zeros where the window reads padding. */
static void conv_im2col(const tp_conv2d_geom *g, const float *x, int64_t Cg, int64_t i0, int64_t r,
                        float *cols) {
  int64_t np = r * g->OW;
  /* stride 1 and OW == W: a tap's rows are one flat run of the input
   * shifted by its column offset, copied at once, then the columns whose
   * tap falls in the padding (wrapped into the next or previous row) zeroed;
   * a copy per row cost more than the GEMM on small planes (96 channels
   * on 12x4: 2880 copies of 4 floats) */
  int flat = g->sh == 1 && g->sw == 1 && g->OW == g->W;
  for (int64_t c = 0; c < Cg; c++)
    for (int64_t kh = 0; kh < g->KH; kh++)
      for (int64_t kw = 0; kw < g->KW; kw++) {
        float *dst = cols + ((c * g->KH + kh) * g->KW + kw) * np;
        int64_t off, j0, j1;
        conv_tap_range(g, kw, &off, &j0, &j1);
        if (flat) {
          int64_t ih0 = i0 - g->pt + kh * g->dh, ia = ih0 < 0 ? -ih0 : 0, ib = g->H - ih0;
          ib = ib > r ? r : ib;
          if (ia >= ib) {
            memset(dst, 0, sizeof(float) * (size_t)np);
            continue;
          }
          /* rows [ia, ib) from the plane's flat elements s0 + [0, n), those inside it */
          int64_t n = (ib - ia) * g->W, s0 = (ih0 + ia) * g->W + off, f0 = s0 < 0 ? -s0 : 0;
          int64_t f1 = g->H * g->W - s0 < n ? g->H * g->W - s0 : n;
          float *d = dst + ia * g->OW;
          memset(dst, 0, sizeof(float) * (size_t)(ia * g->OW));
          if (f1 > f0) {
            memset(d, 0, sizeof(float) * (size_t)f0);
            memcpy(d + f0, x + c * g->H * g->W + s0 + f0, sizeof(float) * (size_t)(f1 - f0));
            memset(d + f1, 0, sizeof(float) * (size_t)(n - f1));
          } else {
            memset(d, 0, sizeof(float) * (size_t)n);
          }
          if (j0 > 0 || j1 < g->OW)
            for (int64_t i = ia; i < ib; i++) {
              float *row = dst + i * g->OW;
              for (int64_t j = 0; j < j0; j++) row[j] = 0;
              for (int64_t j = j1; j < g->OW; j++) row[j] = 0;
            }
          memset(dst + ib * g->OW, 0, sizeof(float) * (size_t)((r - ib) * g->OW));
          continue;
        }
        for (int64_t i = 0; i < r; i++, dst += g->OW) {
          int64_t ih = (i0 + i) * g->sh - g->pt + kh * g->dh;
          if (ih < 0 || ih >= g->H) {
            memset(dst, 0, sizeof(float) * (size_t)g->OW);
            continue;
          }
          const float *xr = x + (c * g->H + ih) * g->W;
          for (int64_t j = 0; j < j0; j++) dst[j] = 0;
          if (g->sw == 1) memcpy(dst + j0, xr + j0 + off, sizeof(float) * (size_t)(j1 - j0));
          else for (int64_t j = j0; j < j1; j++) dst[j] = xr[j * g->sw + off];
          for (int64_t j = j1; j < g->OW; j++) dst[j] = 0;
        }
      }
}

/* conv2d's work, split over the runtime's pool (runtime/pool.h): units
 * are output rows of depthwise planes, blocks of output rows of one
 * (image, group) for im2col (each chunk fills its own columns), or blocks
 * of CONV_COLS output positions for a direct 1x1 GEMM. Every output element
 * gets the same operations in the same order for any split (the GEMM's depth
 * blocking does not depend on its column count), so results are the same
 * bits for any thread count. Below PAR_CONV_FLOPS of work per chunk (2 x
 * multiply-adds; measured, docs/architecture.md "Threads") it runs on the
 * caller. */
#define PAR_CONV_FLOPS 2000000
/* a depthwise multiply-add costs about this many GEMM ones (5-15 GFLOP/s
 * against 60-100 natively: PP-OCRv4 det's 384 planes of 5x7, 5x5, 0.06 ms
 * for 0.67 MFLOP), so its units count it that much towards the grain */
#define PAR_DW_WEIGHT 8
#define CONV_COLS 256
typedef struct conv_job {
  const tp_conv2d_geom *g;
  const tp_kernels *k;
  const float *X, *Wt, *B;
  const float *PA;   /* the weight packed once per group (tp_conv_prep), or NULL */
  const float *PB;   /* TP_CONV_IM2COL_T: the weight packed once per group as B = w^T, or NULL */
  int tr;            /* TP_CONV_IM2COL_T: C^T = cols^T w^T into a per-thread [positions, Mg], then y */
  int64_t pstride;
  float *Y, *cols;   /* cols: per thread (slot), col_floats each */
  const float **rows; /* depthwise with KH > 64: per thread, KH input rows each */
  int64_t col_floats, rb, nblk; /* im2col: rows per block, blocks per (n, group) */
  float *prow;       /* depthwise, padded rows: per thread, H rows of prow_w floats each */
  int64_t prow_w, half; /* half > 0: stride 2, each row as its even then its odd columns, half each */
  int kind;          /* 0 depthwise, 1 im2col, 2 direct, 3 depthwise on padded rows, 4 padded planes */
  float *pbuf;       /* kind 4: per thread, a padded plane of pb_floats */
  int64_t pb_floats;
  const tp_conv_epi *epi; /* fused epilogue (NULL: none) */
} conv_job;

/* a[t] = x[2t], b[t] = x[2t + 1] for the n elements of x (four pairs a step) */
typedef float conv_v4f __attribute__((vector_size(16)));
static void conv_deinterleave(const float *x, int64_t n, float *a, float *b) {
  int64_t t = 0;
  for (; 2 * t + 8 <= n; t += 4) {
    conv_v4f u0, u1, e, o;
    memcpy(&u0, x + 2 * t, sizeof u0), memcpy(&u1, x + 2 * t + 4, sizeof u1);
    e = __builtin_shufflevector(u0, u1, 0, 2, 4, 6), o = __builtin_shufflevector(u0, u1, 1, 3, 5, 7);
    memcpy(a + t, &e, sizeof e), memcpy(b + t, &o, sizeof o);
  }
  for (; 2 * t + 1 < n; t++) a[t] = x[2 * t], b[t] = x[2 * t + 1];
  if (2 * t < n) a[t] = x[2 * t];
}

static void conv_units(conv_job *j, int slot, int64_t u0, int64_t u1) {
  const tp_conv2d_geom *g = j->g;
  int64_t Cg = g->C / g->G, Mg = g->M / g->G, KK = g->KH * g->KW, Kd = Cg * KK, P = g->OH * g->OW;
  if (j->kind == 4) { /* unit: plane (n, m), through this thread's zero-padded copy */
    float *pbuf = j->pbuf + (size_t)slot * (size_t)j->pb_floats;
    for (int64_t u = u0; u < u1; u++) {
      int64_t n = u / g->M, m = u % g->M;
      conv_dw_padded(g, j->X + (n * g->C + m / Mg) * g->H * g->W, j->Wt + m * KK, j->B ? j->B[m] : 0.0f, pbuf,
                     j->Y + (n * g->M + m) * P);
      if (j->epi) j->epi->fn(j->epi->ctx, slot, j->Y, n, m, m + 1, 0, P);
    }
    return;
  }
  if (j->kind == 3) { /* unit: plane (n, m); its input rows copied between zero columns */
    const float *rows[64];
    int64_t Wp = j->prow_w;
    float *buf = j->prow + (size_t)slot * (size_t)(g->H * Wp);
    int64_t last = -1; /* the input plane in buf (a multiplier > 1 reuses it) */
    for (int64_t u = u0; u < u1; u++) {
      int64_t n = u / g->M, m = u % g->M, src = n * g->C + m / Mg;
      if (src != last) {
        const float *x = j->X + src * g->H * g->W;
        if (j->half)
          for (int64_t i = 0; i < g->H; i++) { /* padded column q = c + pl: ev[q / 2] (q even), od[q / 2] (q odd) */
            float *ev = buf + i * Wp, *od = ev + j->half;
            if (g->pl & 1) conv_deinterleave(x + i * g->W, g->W, od + (g->pl >> 1), ev + ((g->pl + 1) >> 1));
            else conv_deinterleave(x + i * g->W, g->W, ev + (g->pl >> 1), od + (g->pl >> 1));
          }
        else
          for (int64_t i = 0; i < g->H; i++) memcpy(buf + i * Wp + g->pl, x + i * g->W, sizeof(float) * (size_t)g->W);
        last = src;
      }
      float *y = j->Y + (n * g->M + m) * P;
      if (j->half) { /* stride 2 columns: unit-stride loads from the even and odd halves */
        const float *od[64];
        for (int64_t i = 0; i < g->OH; i++) {
          for (int64_t kh = 0; kh < g->KH; kh++) {
            int64_t ih = i * g->sh - g->pt + kh * g->dh;
            rows[kh] = ih >= 0 && ih < g->H ? buf + ih * Wp : NULL;
            od[kh] = rows[kh] ? rows[kh] + j->half : NULL;
          }
          j->k->dwconv_row_s2_f32(rows, od, g->KH, g->KW, j->Wt + m * KK, j->B ? j->B[m] : 0.0f, y + i * g->OW,
                                  g->OW);
        }
        if (j->epi) j->epi->fn(j->epi->ctx, slot, j->Y, n, m, m + 1, 0, P);
        continue;
      }
      for (int64_t i = 0; i < g->OH; i++) {
        for (int64_t kh = 0; kh < g->KH; kh++) {
          int64_t ih = i * g->sh - g->pt + kh * g->dh;
          rows[kh] = ih >= 0 && ih < g->H ? buf + ih * Wp : NULL;
        }
        j->k->dwconv_row_f32(rows, g->KH, g->KW, j->Wt + m * KK, j->B ? j->B[m] : 0.0f, y + i * g->OW, g->OW, Wp,
                             g->sw, g->dw, 0);
      }
      if (j->epi) j->epi->fn(j->epi->ctx, slot, j->Y, n, m, m + 1, 0, P);
    }
    return;
  }
  if (j->kind == 0) { /* unit: output row (n, m, i) */
    const float *stack_rows[64], **rows = g->KH > 64 ? j->rows + (size_t)slot * (size_t)g->KH : stack_rows;
    int64_t run0 = u0; /* the epilogue: per run of rows of one plane */
    for (int64_t u = u0; u < u1; u++) {
      int64_t nm = u / g->OH, i = u % g->OH, n = nm / g->M, m = nm % g->M;
      const float *x = j->X + (n * g->C + m / Mg) * g->H * g->W;
      for (int64_t kh = 0; kh < g->KH; kh++) {
        int64_t ih = i * g->sh - g->pt + kh * g->dh;
        rows[kh] = ih >= 0 && ih < g->H ? x + ih * g->W : NULL;
      }
      j->k->dwconv_row_f32(rows, g->KH, g->KW, j->Wt + m * KK, j->B ? j->B[m] : 0.0f,
                           j->Y + (n * g->M + m) * P + i * g->OW, g->OW, g->W, g->sw, g->dw, g->pl);
      if (j->epi && (u + 1 == u1 || (u + 1) % g->OH == 0)) {
        j->epi->fn(j->epi->ctx, slot, j->Y, n, m, m + 1, (i - (u - run0)) * g->OW, (i + 1) * g->OW);
        run0 = u + 1;
      }
    }
    return;
  }
  int64_t per = j->kind == 1 ? j->nblk : (P + CONV_COLS - 1) / CONV_COLS;
  for (int64_t u = u0; u < u1; u++) {
    int64_t ng = u / per, blk = u % per, n = ng / g->G, gi = ng % g->G;
    const float *xg = j->X + (n * g->C + gi * Cg) * g->H * g->W, *wg = j->Wt + gi * Mg * Kd;
    float *yg = j->Y + (n * g->M + gi * Mg) * P;
    int64_t p0, p1; /* output positions of this unit */
    if (j->kind == 2) {
      p0 = blk * CONV_COLS, p1 = p0 + CONV_COLS < P ? p0 + CONV_COLS : P;
      if (j->PA)
        j->k->gemm_f32_packed_a(Mg, p1 - p0, Cg, j->PA + gi * j->pstride, xg + p0, g->H * g->W, 1, yg + p0, P, NULL);
      else
        j->k->gemm_f32(Mg, p1 - p0, Cg, wg, Cg, 1, xg + p0, g->H * g->W, 1, yg + p0, P, NULL);
    } else {
      int64_t i0 = blk * j->rb, r = g->OH - i0 < j->rb ? g->OH - i0 : j->rb;
      float *cols = j->cols + (size_t)slot * (size_t)j->col_floats;
      conv_im2col(g, xg, Cg, i0, r, cols);
      if (j->tr) { /* [np, Kd] (cols read transposed) x w^T [Kd, Mg] + bias, then transposed into y */
        int64_t np = r * g->OW;
        float *t = cols + Kd * np;
        const float *bg = j->B ? j->B + gi * Mg : NULL;
        if (j->PB) j->k->gemm_f32_packed(np, Mg, Kd, cols, 1, np, j->PB + gi * j->pstride, t, Mg, bg);
        else j->k->gemm_f32(np, Mg, Kd, cols, 1, np, wg, 1, Kd, t, Mg, bg);
        for (int64_t m = 0; m < Mg; m++) {
          float *yr = yg + m * P + i0 * g->OW;
          for (int64_t q = 0; q < np; q++) yr[q] = t[q * Mg + m];
        }
        if (j->epi) j->epi->fn(j->epi->ctx, slot, j->Y, n, gi * Mg, (gi + 1) * Mg, i0 * g->OW, (i0 + r) * g->OW);
        continue;
      }
      if (j->PA)
        j->k->gemm_f32_packed_a(Mg, r * g->OW, Kd, j->PA + gi * j->pstride, cols, r * g->OW, 1, yg + i0 * g->OW, P,
                                NULL);
      else
        j->k->gemm_f32(Mg, r * g->OW, Kd, wg, Kd, 1, cols, r * g->OW, 1, yg + i0 * g->OW, P, NULL);
      p0 = i0 * g->OW, p1 = (i0 + r) * g->OW;
    }
    if (j->B)
      for (int64_t m = 0; m < Mg; m++) {
        float bv = j->B[gi * Mg + m], *yr = yg + m * P;
        for (int64_t p = p0; p < p1; p++) yr[p] += bv;
      }
    if (j->epi) j->epi->fn(j->epi->ctx, slot, j->Y, n, gi * Mg, (gi + 1) * Mg, p0, p1);
  }
}

static void conv_task(void *ctx, int slot, int64_t u0, int64_t u1) {
  conv_units(ctx, slot, u0, u1);
}

tp_status tp_conv2d_into(tp_tensor *const *in, const tp_attrs *at, tp_tensor *y) {
  return tp_conv2d_into_epi(in, at, y, NULL);
}

static int64_t prep_uses;
int64_t tp_conv2d_prep_uses(void) { return __atomic_load_n(&prep_uses, __ATOMIC_RELAXED); }

int tp_conv2d_path(const tp_conv2d_geom *g) {
  int64_t Cg = g->C / g->G, KK = g->KH * g->KW;
  if (Cg == 1 && KK > 1 && g->G > 1) return TP_CONV_DEPTHWISE;
  if (tp_conv2d_winograd_fits(g)) return TP_CONV_WINO2D;
  if (tp_conv2d_winograd1d_fits(g)) return TP_CONV_WINO1D;
  if (KK == 1 && g->sh == 1 && g->sw == 1 && g->pt == 0 && g->pl == 0 && g->OH == g->H && g->OW == g->W)
    return TP_CONV_DIRECT;
  if (g->OH * g->OW < 16 && g->M / g->G >= 32) return TP_CONV_IM2COL_T;
  return TP_CONV_IM2COL;
}

tp_status tp_conv2d_into_epi(tp_tensor *const *in, const tp_attrs *at, tp_tensor *y, const tp_conv_epi *epi) {
  return tp_conv2d_into_prep(in, at, y, epi, NULL);
}

tp_status tp_conv2d_into_prep(tp_tensor *const *in, const tp_attrs *at, tp_tensor *y, const tp_conv_epi *epi,
                              const tp_conv_prep *prep) {
  tp_tensor *x = NULL, *w = NULL, *b = NULL;
  conv_job *j = NULL;
  tp_conv2d_geom g;
  tp_desc dx, dw;
  tp_desc_of(in[0], &dx);
  tp_desc_of(in[1], &dw);
  tp_status s = tp_conv2d_geometry(&dx, &dw, at, &g);
  if (s || (s = tp_contiguous(in[0], &x)) || (s = tp_contiguous(in[1], &w)) ||
      (in[2] && (s = tp_contiguous(in[2], &b))))
    goto done;
  if (!(j = tp_alloc(sizeof *j))) {
    s = TP_ERR_OUT_OF_MEMORY;
    goto done;
  }
  memset(j, 0, sizeof *j);
  j->g = &g, j->k = tp_kern();
  j->X = tp_tensor_ptr(x), j->Wt = tp_tensor_ptr(w), j->B = b ? tp_tensor_ptr(b) : NULL;
  j->Y = tp_tensor_ptr(y);
  j->epi = epi;
  int path = tp_conv2d_path(&g);
  /* the weight prepared once (a plan's), when it is this one for this path */
  if (prep && (prep->path != path || prep->w != j->Wt || prep->M != g.M || prep->C != g.C || prep->KH != g.KH ||
               prep->KW != g.KW || prep->G != g.G || prep->kern != (const void *)j->k || !j->k->gemm_f32_packed_a ||
               (path == TP_CONV_IM2COL_T && !j->k->gemm_f32_packed)))
    prep = NULL;
  if (prep) __atomic_fetch_add(&prep_uses, 1, __ATOMIC_RELAXED);
  if (prep && (path == TP_CONV_IM2COL || path == TP_CONV_DIRECT)) j->PA = prep->a, j->pstride = prep->stride;
  if (prep && path == TP_CONV_IM2COL_T) j->PB = prep->a, j->pstride = prep->stride;
  j->tr = path == TP_CONV_IM2COL_T;
  int64_t Cg = g.C / g.G, Mg = g.M / g.G, KK = g.KH * g.KW, Kd = Cg * KK, P = g.OH * g.OW;
  int64_t units, unit_flops;
  int threads = tp_pool_threads_or_default();
  /* depthwise (channel multiplier Mg): groups of one channel each. A single
   * input channel (G == 1, C == 1: an STFT-like 1-D conv with a long kernel
   * and many filters) is one GEMM instead: the row kernel vectorizes over
   * output positions, few there, and cost 4.7 ms where the GEMM takes
   * 0.1 ms (x [1,1,1,768], w [258,1,1,256], stride 128) */
  if (path == TP_CONV_DEPTHWISE) {
    /* small planes with padding: through a zero-padded copy (see
     * conv_dw_padded), one plane after another on the caller; 5x5 and
     * larger at any width when the plane has at least KH rows (the copies
     * are small next to 25 taps: 240 planes of 12x80 in Wasm, 0.88-0.91 ->
     * 0.73-0.79 ms CPU; planes of 2 or 3 rows stay on the row kernel, which
     * skips the taps in padding rows). The choice depends on the shape only,
     * so the results are the same bits for any thread count. */
    int64_t Wp = dw_padded_extent(g.pl, g.W, g.OW, g.sw, g.KW, g.dw);
    int64_t Hp = dw_padded_extent(g.pt, g.H, g.OH, g.sh, g.KH, g.dh);
    /* stride 2 along rows (dilation 1), at least 16 columns out, on planes
     * of up to 16384 padded elements: padded rows split into even and odd
     * columns (kind 3 below), where the flat padded plane computed every
     * stride-1 output (4x the work for 2x2 strides) and the row kernel
     * every stride-1 column. PP-OCRv4 detection's 3x3/2 convs, tpc bench
     * of the conv alone: 32 planes 80x112 -> 40x56 0.154 -> 0.098 ms, 48
     * planes 40x56 -> 20x28 0.065 -> 0.051 ms; narrower outputs (14 and 7
     * columns) were 2-3x slower this way than on the flat plane, whose
     * vectors span rows, and stay there. */
    int64_t half = (Wp + 1) / 2, s2n;
    int s2 = g.sw == 2 && g.dw == 1 && g.OW >= 16 && g.KH <= 64 && P > 0 && j->k->dwconv_row_s2_f32 &&
             !__builtin_mul_overflow(g.H, 2 * half, &s2n) && s2n <= 16384;
    int padded = !s2 && (g.OW < 64 || (KK >= 25 && g.H >= g.KH)) && g.KH <= 64 && Hp * Wp <= 16384 && P > 0 &&
                 (g.pt || g.pl || Hp > g.H || Wp > g.W);
    /* Planes of few rows and wide rows (OW >= 64; PP-OCR's classifier and
     * recognizer: 5x5 on 2-3 rows of 96): each plane's input rows copied
     * once, between zero columns, into a per-thread buffer, so every column
     * is a vector column (the row kernel's border columns checked each tap,
     * and on 96 columns cost about as much as the rest); rows outside the
     * input stay NULL and their taps are skipped. Units are planes. */
    int64_t prow_n;
    if (padded) { /* units: planes, each thread with its own padded plane (conv_dw_padded) */
      j->kind = 4, j->pb_floats = 2 * Hp * Wp;
      units = g.N * g.M, unit_flops = PAR_DW_WEIGHT * 2 * P * KK;
    } else if (s2) {
      j->kind = 3, j->prow_w = 2 * half, j->half = half;
      units = g.N * g.M, unit_flops = PAR_DW_WEIGHT * 2 * P * KK;
    } else if (g.KH <= 64 && !__builtin_mul_overflow(g.H, Wp, &prow_n) && prow_n <= 16384 && P > 0 &&
               (g.pl || Wp > g.W)) {
      j->kind = 3, j->prow_w = Wp;
      units = g.N * g.M, unit_flops = PAR_DW_WEIGHT * 2 * P * KK;
    } else {
      j->kind = 0;
      units = g.N * g.M * g.OH, unit_flops = PAR_DW_WEIGHT * 2 * g.OW * KK;
    }
  } else if (path == TP_CONV_WINO2D) {
    /* 3x3 stride 1 as Winograd F(2x2, 3x3) (src/ops/winograd.c), on the caller */
    s = tp_conv2d_winograd(&g, j->X, j->Wt, j->B, j->Y, epi, prep);
    goto done;
  } else if (path == TP_CONV_WINO1D) {
    /* 3x1 / 1x3 stride 1 as 1-D Winograd F(2, 3) (src/ops/winograd.c), blocks of tile rows over the pool */
    s = tp_conv2d_winograd1d(&g, j->X, j->Wt, j->B, j->Y, epi, prep);
    goto done;
  } else if (path == TP_CONV_DIRECT) {
    /* 1x1, stride 1, no padding: x is already the GEMM's B operand */
    j->kind = 2;
    units = g.N * g.G * ((P + CONV_COLS - 1) / CONV_COLS), unit_flops = 2 * Mg * Cg * CONV_COLS;
  } else { /* TP_CONV_IM2COL, TP_CONV_IM2COL_T */
    j->kind = 1;
    /* output rows per im2col block: 4 MB of columns, or one row; with
     * threads, blocks enough for each (the results do not depend on it) */
    int64_t rb = g.OH;
    if (P > 0 && Kd > 0) {
      int64_t row, fl;
      if (__builtin_mul_overflow(Kd, g.OW, &row)) row = INT64_MAX;
      rb = ((int64_t)1 << 20) / row;
      rb = rb < 1 ? 1 : rb > g.OH ? g.OH : rb;
      /* (only when the work splits at all: smaller blocks alone cost R1's
       * 256->6 3x3 head on 4x5 1.6x on 2 threads, two GEMMs of 10 columns) */
      if (threads > 1 && g.N * g.G < threads &&
          2.0 * (double)Mg * (double)row * (double)g.OH * (double)(g.N * g.G) >= 2.0 * PAR_CONV_FLOPS) {
        int64_t want = (g.OH * g.N * g.G + threads - 1) / threads;
        if (want < rb) rb = want < 1 ? 1 : want;
      }
      if (__builtin_mul_overflow(row, rb, &fl) || (uint64_t)fl > (uint64_t)(SIZE_MAX / sizeof(float))) {
        s = tp_fail(TP_ERR_OUT_OF_MEMORY,
                    "conv2d: im2col of one output row needs %lld x %lld floats, more than this build can address",
                    (long long)Kd, (long long)g.OW);
        goto done;
      }
      j->col_floats = fl;
      if (j->tr) j->col_floats += rb * g.OW * Mg; /* the transposed product (fewer than 16 positions) */
    }
    j->rb = rb, j->nblk = rb > 0 ? (g.OH + rb - 1) / rb : 0;
    units = g.N * g.G * j->nblk, unit_flops = 2 * Mg * Kd * rb * g.OW;
  }
  int64_t grain = unit_flops > 0 ? (PAR_CONV_FLOPS + unit_flops - 1) / unit_flops : units;
  int nc = units > 0 ? tp_parallel_slots(units, grain) : 0;
  if (epi && nc > epi->nslots) nc = epi->nslots;
  if (nc < 1) nc = 1;
  if (j->col_floats) {
    size_t bytes = sizeof(float) * (size_t)j->col_floats;
    if (!(j->cols = tp_alloc(bytes * (size_t)nc)) && nc > 1) /* try one thread's worth */
      nc = 1, j->cols = tp_alloc(bytes);
    if (!j->cols) {
      s = tp_fail(TP_ERR_OUT_OF_MEMORY, "out of memory: conv2d: cannot allocate %zu bytes of im2col columns", bytes);
      goto done;
    }
  }
  if (j->kind == 4) {
    size_t bytes = sizeof(float) * (size_t)j->pb_floats * (size_t)nc;
    if (!(j->pbuf = tp_alloc(bytes))) {
      s = tp_fail(TP_ERR_OUT_OF_MEMORY, "out of memory: conv2d: cannot allocate %zu bytes of padded planes", bytes);
      goto done;
    }
    for (int t = 0; t < nc; t++) /* the zero border; conv_dw_padded writes the interior per plane */
      memset(j->pbuf + (size_t)t * (size_t)j->pb_floats, 0, sizeof(float) * (size_t)(j->pb_floats / 2));
  }
  if (j->kind == 3) {
    size_t bytes = sizeof(float) * (size_t)(g.H * j->prow_w) * (size_t)nc;
    if (!(j->prow = tp_alloc(bytes))) {
      s = tp_fail(TP_ERR_OUT_OF_MEMORY, "out of memory: conv2d: cannot allocate %zu bytes of padded rows", bytes);
      goto done;
    }
    memset(j->prow, 0, bytes); /* the zero columns; the rows' interiors are written per plane */
  }
  if (j->kind == 0 && g.KH > 64 && !(j->rows = tp_alloc(sizeof(float *) * (size_t)g.KH * (size_t)nc))) {
    s = tp_fail(TP_ERR_OUT_OF_MEMORY, "conv2d: no memory for %lld kernel rows", (long long)g.KH);
    goto done;
  }
  if (nc > 1) tp_parallel_run(units, grain, nc, conv_task, j);
  else conv_units(j, 0, 0, units);
done:
  if (j) tp_free(j->cols), tp_free((void *)j->rows), tp_free(j->prow), tp_free(j->pbuf);
  tp_free(j);
  tp_tensor_release(x);
  tp_tensor_release(w);
  tp_tensor_release(b);
  return s;
}

/* ---- max_pool2d / avg_pool2d: direct loops, taps inside the input ---- */
typedef float pool_v4f __attribute__((vector_size(16)));
typedef int32_t pool_v4i __attribute__((vector_size(16)));

/* acc = v where v is larger than acc or acc is not NaN and v is NaN: the
 * scalar loops' (a == a && !(v <= a)) ? v : a, four lanes at a time */
static inline pool_v4f pool_vmax(pool_v4f a, pool_v4f v) {
  pool_v4i m = (pool_v4i)(a == a) & ~(pool_v4i)(v <= a);
  return (pool_v4f)(((pool_v4i)v & m) | ((pool_v4i)a & ~m));
}

tp_status tp_pool2d_into(tp_op op, tp_tensor *x0, const tp_attrs *at, tp_tensor *y) {
  tp_conv2d_geom g;
  tp_desc dx;
  tp_desc_of(x0, &dx);
  TP_TRY(tp_pool2d_geometry(op, &dx, at, &g));
  tp_tensor *x = NULL;
  tp_status s;
  if ((s = tp_contiguous(x0, &x))) return s;
  const float *X = tp_tensor_ptr(x);
  float *Y = tp_tensor_ptr(y);
  int avg = op == TP_OP_AVG_POOL2D;
  if (!avg && g.pt == 0 && g.pl == 0 && (g.OH - 1) * g.sh + g.KH <= g.H &&
      (g.OW - 1) * g.sw + g.KW <= g.W) {
    /* max, every window inside: the taps of a chunk of outputs in the
     * same order as below (row-major over the window, so ties between -0
     * and +0 and NaNs come out the same), without bounds or branches per
     * tap; cls's 2x2/2 pool: 2.2 GB/s natively before */
    enum { PCH = 256 };
    float acc[PCH];
    if (g.KH == 1 && g.sh == 1 && g.KW == 2 && g.sw == 2 && g.W == 2 * g.OW) {
      /* 1x2 windows, stride 1x2, no column left over (the embedding net's
       * 1x2/1x2 pools on 4 and 16 columns): output o of the whole tensor
       * is max(x[2o], x[2o + 1]), one flat run, four outputs a vector,
       * the taps in the same order as below (Wasm and native: 2 and 8
       * outputs a row went through the per-row chunks) */
      int64_t n = g.N * g.C * g.OH * g.OW, o = 0;
      for (; o + 4 <= n; o += 4) {
        pool_v4f a = {-INFINITY, -INFINITY, -INFINITY, -INFINITY}, u0, u1;
        memcpy(&u0, X + 2 * o, sizeof u0), memcpy(&u1, X + 2 * o + 4, sizeof u1);
        a = pool_vmax(a, __builtin_shufflevector(u0, u1, 0, 2, 4, 6));
        a = pool_vmax(a, __builtin_shufflevector(u0, u1, 1, 3, 5, 7));
        memcpy(Y + o, &a, sizeof a);
      }
      for (; o < n; o++) {
        float a = -INFINITY;
        for (int kw = 0; kw < 2; kw++) {
          float v = X[2 * o + kw];
          a = (a == a && !(v <= a)) ? v : a;
        }
        Y[o] = a;
      }
      tp_tensor_release(x);
      return TP_OK;
    }
    for (int64_t nc = 0; nc < g.N * g.C; nc++) {
      const float *xp = X + nc * g.H * g.W;
      for (int64_t i = 0; i < g.OH; i++)
        for (int64_t j0 = 0; j0 < g.OW; j0 += PCH) {
          int64_t nj = g.OW - j0 < PCH ? g.OW - j0 : PCH;
          float *yr = Y + (nc * g.OH + i) * g.OW + j0;
          int64_t nv = g.KW == 2 && g.sw == 2 ? nj / 4 * 4 : 0; /* outputs done four at a time, into y */
          for (int64_t j = nv; j < nj; j++) acc[j] = -INFINITY;
          if (nv) {
            /* 2-wide windows, stride 2 (the embedding net's and cls's 2x2/2
             * pools): even and odd columns of eight inputs, the taps in the
             * same order as below (Wasm, 24x72x32: 0.17 ms, 1.6 GB/s, before) */
            for (int64_t jv = 0; jv < nv; jv += 4) {
              pool_v4f a = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
              for (int64_t kh = 0; kh < g.KH; kh++) {
                const float *r = xp + (i * g.sh + kh) * g.W + (j0 + jv) * 2;
                pool_v4f u0, u1;
                memcpy(&u0, r, sizeof u0), memcpy(&u1, r + 4, sizeof u1);
                a = pool_vmax(a, __builtin_shufflevector(u0, u1, 0, 2, 4, 6));
                a = pool_vmax(a, __builtin_shufflevector(u0, u1, 1, 3, 5, 7));
              }
              memcpy(yr + jv, &a, sizeof a);
            }
          }
          for (int64_t kh = 0; kh < g.KH; kh++)
            for (int64_t kw = 0; kw < g.KW; kw++) {
              const float *r = xp + (i * g.sh + kh) * g.W + j0 * g.sw + kw;
              for (int64_t j = nv; j < nj; j++) {
                float a = acc[j], v = r[j * g.sw];
                acc[j] = (a == a && !(v <= a)) ? v : a; /* larger, or NaN (which then stays) */
              }
            }
          if (nj > nv) memcpy(yr + nv, acc + nv, sizeof(float) * (size_t)(nj - nv));
        }
    }
    tp_tensor_release(x);
    return TP_OK;
  }
  for (int64_t nc = 0; nc < g.N * g.C; nc++) {
    const float *xp = X + nc * g.H * g.W;
    for (int64_t i = 0; i < g.OH; i++) {
      int64_t h0 = i * g.sh - g.pt, h1 = h0 + g.KH;
      h0 = h0 < 0 ? 0 : h0, h1 = h1 > g.H ? g.H : h1;
      for (int64_t j = 0; j < g.OW; j++, Y++) {
        int64_t w0 = j * g.sw - g.pl, w1 = w0 + g.KW;
        w0 = w0 < 0 ? 0 : w0, w1 = w1 > g.W ? g.W : w1;
        float acc = avg ? 0.0f : -INFINITY;
        for (int64_t ih = h0; ih < h1; ih++)
          for (int64_t iw = w0; iw < w1; iw++) {
            float v = xp[ih * g.W + iw];
            if (avg) acc += v;
            else if (acc == acc && !(v <= acc)) acc = v; /* larger, or NaN (which then stays) */
          }
        if (avg) acc /= (float)(at->dim ? g.KH * g.KW : (h1 - h0) * (w1 - w0));
        *Y = acc;
      }
    }
  }
  tp_tensor_release(x);
  return TP_OK;
}
