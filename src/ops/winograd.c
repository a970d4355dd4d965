/* winograd.c - 3x3 stride-1 convolutions as Winograd F(2x2, 3x3).
 *
 * Each 2x2 output tile is A^T [ (G g G^T) . (B^T d B) ] A over the 4x4
 * input patch d around it (Lavin and Gray, "Fast Algorithms for
 * Convolutional Neural Networks", 2015): summed over input channels, the
 * 16 elementwise products become 16 GEMMs
 *     Mo[xi] [M, T] = U[xi] [M, C] @ V[xi] [C, T]    (xi < 16, T tiles)
 * with 16*M*C*T multiply-adds where im2col + GEMM does 36*M*C*T: 2.25x
 * fewer, and the input is expanded 4x (overlapping 4x4 patches per 2x2
 * tile) where im2col expands it 9x. The GEMMs are the ISA table's; the
 * transforms are adds and subtracts (plus halves in the weight's).
 * Rounding differs from the direct sum by a few ulp of the operands'
 * magnitude (F(2x2, 3x3) has the smallest error of the Winograd family);
 * test_kernels checks it against the double reference like every conv2d
 * path. Tiles are processed in blocks so V and Mo stay in the L2. Both
 * transforms take four tiles of a tile row at a time in vectors when they
 * lie inside (native det, 200 runs, user CPU: 1.64-1.66 s -> 1.43-1.55 s;
 * Wasm, 96->24 on 40x56: 2.06-2.13 -> 1.93-1.94 ms CPU). */
#include "ops.h"
#include "../runtime/pool.h"
#include <string.h>

typedef float v4f __attribute__((vector_size(16)));

#ifndef TP_WINO_BUDGET
#define TP_WINO_BUDGET (1024 * 1024)
#endif

int tp_conv2d_winograd_fits(const tp_conv2d_geom *g) {
  return g->G == 1 && g->KH == 3 && g->KW == 3 && g->sh == 1 && g->sw == 1 && g->dh == 1 &&
         g->dw == 1 && g->C >= 8 && g->M >= 8 && g->OH >= 4 && g->OW >= 4 &&
         g->OH * g->OW >= 64;
}

/* The stride between the 16 slabs of V and Mo: their size plus 64 bytes,
 * so the transforms' 16 streams do not all map to the same cache sets when
 * a slab is a multiple of 4 KB (measured in Wasm, 96->24 on 40x56: 4.2 ms
 * with slabs of 24 KB and 208 KB unpadded, 2.1 with 104 KB) */
static int64_t slab(int64_t n) { return n + 16; }

/* U[xi][m][c] = (G g G^T)[xi] for the 3x3 kernel g of (m, c) */
static void transform_weights(const tp_conv2d_geom *g, const float *w, float *U) {
  int64_t MC = g->M * g->C;
  for (int64_t mc = 0; mc < MC; mc++) {
    const float *k = w + mc * 9;
    float t[4][3], u[4][4];
    for (int q = 0; q < 3; q++) {
      t[0][q] = k[q];
      t[1][q] = 0.5f * (k[q] + k[3 + q] + k[6 + q]);
      t[2][q] = 0.5f * (k[q] - k[3 + q] + k[6 + q]);
      t[3][q] = k[6 + q];
    }
    for (int r = 0; r < 4; r++) {
      u[r][0] = t[r][0];
      u[r][1] = 0.5f * (t[r][0] + t[r][1] + t[r][2]);
      u[r][2] = 0.5f * (t[r][0] - t[r][1] + t[r][2]);
      u[r][3] = t[r][2];
    }
    for (int xi = 0; xi < 16; xi++) U[xi * MC + mc] = u[xi / 4][xi % 4];
  }
}

/* V[xi][c][tb] = (B^T d B)[xi] for the tiles [t0, t0 + nt) of one image
 * (whole tile rows of TW tiles), d the 4x4 patch at (2 ty - pt, 2 tx - pl),
 * zero outside the input. Per channel and tile row, the four input rows
 * the row reads are copied between zeros into row[4][2 TW + 2] (column w
 * at w + pl; a row outside the input is zeros), so every tile reads its
 * patch without bounds: four tiles a vector (lane k is tile tb + k, its
 * columns the even and odd lanes of two loads), the last few one at a time.
 * Tile by tile, with an int64 division per tile and a bound per element
 * on the border tiles, this transform took 10% of PP-OCRv4 detection. */
static void transform_input(const tp_conv2d_geom *g, const float *x, int64_t TW, int64_t t0,
                            int64_t nt, float *V, float *row) {
  int64_t CT = slab(g->C * nt), RW = 2 * TW + 2, ty0 = t0 / TW, nr = nt / TW;
  int64_t lo = g->pl < RW ? g->pl : RW, n = g->W < RW - lo ? g->W : RW - lo;
  for (int64_t c = 0; c < g->C; c++) {
    const float *xc = x + c * g->H * g->W;
    for (int64_t rr = 0; rr < nr; rr++) {
      int64_t h0 = (ty0 + rr) * 2 - g->pt;
      const float *pr[4];
      for (int r = 0; r < 4; r++) {
        float *dst = row + r * RW;
        pr[r] = dst;
        if (h0 + r < 0 || h0 + r >= g->H) {
          memset(dst, 0, sizeof(float) * (size_t)RW);
          continue;
        }
        memset(dst, 0, sizeof(float) * (size_t)lo);
        memcpy(dst + lo, xc + (h0 + r) * g->W, sizeof(float) * (size_t)n);
        memset(dst + lo + n, 0, sizeof(float) * (size_t)(RW - lo - n));
      }
      float *v = V + c * nt + rr * TW;
      int64_t i = 0;
      for (; i + 4 <= TW; i += 4) {
        v4f d[4][4], s[4][4]; /* d[r][q] lane k: row r, column 2 (i + k) + q */
        for (int r = 0; r < 4; r++) {
          const float *p = pr[r] + 2 * i;
          v4f u0, u1, u2, u3;
          memcpy(&u0, p, sizeof u0), memcpy(&u1, p + 4, sizeof u1);
          memcpy(&u2, p + 2, sizeof u2), memcpy(&u3, p + 6, sizeof u3);
          d[r][0] = __builtin_shufflevector(u0, u1, 0, 2, 4, 6);
          d[r][1] = __builtin_shufflevector(u0, u1, 1, 3, 5, 7);
          d[r][2] = __builtin_shufflevector(u2, u3, 0, 2, 4, 6);
          d[r][3] = __builtin_shufflevector(u2, u3, 1, 3, 5, 7);
        }
        for (int q = 0; q < 4; q++) {
          s[0][q] = d[0][q] - d[2][q];
          s[1][q] = d[1][q] + d[2][q];
          s[2][q] = d[2][q] - d[1][q];
          s[3][q] = d[1][q] - d[3][q];
        }
        for (int r = 0; r < 4; r++) {
          v4f o[4] = {s[r][0] - s[r][2], s[r][1] + s[r][2], s[r][2] - s[r][1], s[r][1] - s[r][3]};
          for (int q = 0; q < 4; q++) memcpy(v + i + (r * 4 + q) * CT, &o[q], sizeof o[q]);
        }
      }
      for (; i < TW; i++) {
        float s[4][4];
        for (int q = 0; q < 4; q++) {
          float d0 = pr[0][2 * i + q], d1 = pr[1][2 * i + q], d2 = pr[2][2 * i + q], d3 = pr[3][2 * i + q];
          s[0][q] = d0 - d2;
          s[1][q] = d1 + d2;
          s[2][q] = d2 - d1;
          s[3][q] = d1 - d3;
        }
        for (int r = 0; r < 4; r++) {
          v[i + (r * 4 + 0) * CT] = s[r][0] - s[r][2];
          v[i + (r * 4 + 1) * CT] = s[r][1] + s[r][2];
          v[i + (r * 4 + 2) * CT] = s[r][2] - s[r][1];
          v[i + (r * 4 + 3) * CT] = s[r][1] - s[r][3];
        }
      }
    }
  }
}

/* y tiles [t0, t0 + nt) of one image from Mo[xi][m][tb] (+ bias) */
static void transform_output(const tp_conv2d_geom *g, const float *Mo, const float *bias,
                             int64_t TW, int64_t t0, int64_t nt, float *y) {
  int64_t MT = slab(g->M * nt), P = g->OH * g->OW;
  for (int64_t m = 0; m < g->M; m++) {
    float b = bias ? bias[m] : 0.0f;
    float *ym = y + m * P;
    for (int64_t tb = 0; tb < nt; tb++) {
      const float *mo = Mo + m * nt + tb;
      int64_t tt = t0 + tb, ti = (tt / TW) * 2, tj = (tt % TW) * 2;
      if (tb + 4 <= nt && tt % TW + 4 <= TW && ti + 2 <= g->OH && tj + 8 <= g->OW) {
        /* four tiles of one tile row, all inside the output: lane k is
         * tile tb + k, the same sums as below a vector at a time */
        v4f v[16], s0[4], s1[4];
        for (int xi = 0; xi < 16; xi++) memcpy(&v[xi], mo + xi * MT, sizeof v[xi]);
        for (int q = 0; q < 4; q++) {
          s0[q] = v[q] + v[4 + q] + v[8 + q];
          s1[q] = v[4 + q] - v[8 + q] - v[12 + q];
        }
        v4f bv = {b, b, b, b};
        v4f o[4] = {s0[0] + s0[1] + s0[2] + bv, s0[1] - s0[2] - s0[3] + bv, s1[0] + s1[1] + s1[2] + bv,
                    s1[1] - s1[2] - s1[3] + bv};
        for (int a = 0; a < 2; a++) {
          float *yr = ym + (ti + a) * g->OW + tj;
          for (int k = 0; k < 4; k++) yr[2 * k] = o[2 * a][k], yr[2 * k + 1] = o[2 * a + 1][k];
        }
        tb += 3;
        continue;
      }
      float v[16], s[2][4];
      for (int xi = 0; xi < 16; xi++) v[xi] = mo[xi * MT];
      for (int q = 0; q < 4; q++) {
        s[0][q] = v[q] + v[4 + q] + v[8 + q];
        s[1][q] = v[4 + q] - v[8 + q] - v[12 + q];
      }
      int64_t t = t0 + tb, i0 = (t / TW) * 2, j0 = (t % TW) * 2;
      for (int a = 0; a < 2; a++) {
        if (i0 + a >= g->OH) break;
        float o0 = s[a][0] + s[a][1] + s[a][2], o1 = s[a][1] - s[a][2] - s[a][3];
        float *yr = ym + (i0 + a) * g->OW + j0;
        yr[0] = o0 + b;
        if (j0 + 1 < g->OW) yr[1] = o1 + b;
      }
    }
  }
}

/* Blocks of TB tiles (whole tile rows), split over the pool like the
 * 1-D form below: each block transforms its input, runs its 16 GEMMs and
 * writes its output rows on one thread (with per-thread V and Mo); a
 * tile's arithmetic does not depend on the block, so the bits do not
 * depend on the thread count. */
typedef struct wg2_job {
  const tp_conv2d_geom *g;
  const float *x, *U, *bias;
  float *y, *scratch;
  const tp_conv_epi *epi;
  const tp_conv_prep *pp;
  int64_t TW, T, TB, nblk;
  size_t per_slot;
} wg2_job;

static void wg2_task(void *ctx, int slot, int64_t u0, int64_t u1) {
  const wg2_job *j = ctx;
  const tp_conv2d_geom *g = j->g;
  const tp_kernels *k = tp_kern();
  float *V = j->scratch + (size_t)slot * j->per_slot, *Mo = V + 16 * slab(g->C * j->TB);
  for (int64_t u = u0; u < u1; u++) {
    int64_t n = u / j->nblk, t0 = (u % j->nblk) * j->TB, nt = j->T - t0 < j->TB ? j->T - t0 : j->TB;
    const float *xn = j->x + n * g->C * g->H * g->W;
    float *yn = j->y + n * g->M * g->OH * g->OW;
    transform_input(g, xn, j->TW, t0, nt, V, Mo + 16 * slab(g->M * j->TB));
    for (int xi = 0; xi < 16; xi++)
      if (j->pp)
        k->gemm_f32_packed_a(g->M, nt, g->C, j->pp->a + xi * j->pp->stride, V + xi * slab(g->C * nt), nt, 1,
                             Mo + xi * slab(g->M * nt), nt, NULL);
      else
        k->gemm_f32(g->M, nt, g->C, j->U + (size_t)xi * g->M * g->C, g->C, 1, V + xi * slab(g->C * nt), nt, 1,
                    Mo + xi * slab(g->M * nt), nt, NULL);
    transform_output(g, Mo, j->bias, j->TW, t0, nt, yn);
    if (j->epi) { /* the output rows of this block's tile rows, while hot */
      int64_t r0 = t0 / j->TW * 2, r1 = (t0 + nt) / j->TW * 2;
      if (r1 > g->OH) r1 = g->OH;
      j->epi->fn(j->epi->ctx, slot, j->y, n, 0, g->M, r0 * g->OW, r1 * g->OW);
    }
  }
}

/* Tile rows per block: `fit` (what the budget allows) within 1 .. total;
 * with threads and fewer images than threads, blocks enough for each. */
static int64_t block_rows(int64_t fit, int64_t total, int64_t N) {
  int64_t rows = fit < 1 ? 1 : fit > total ? total : fit;
  int threads = tp_pool_threads_or_default();
  if (threads > 1 && N < threads) {
    int64_t want = (total * N + threads - 1) / threads;
    if (want < rows) rows = want < 1 ? 1 : want;
  }
  return rows;
}

/* The end of both drivers: the slot count (at most the epilogue's slots),
 * one allocation for the weights' transform U (nu floats, none when pp
 * holds it) and per_slot floats of scratch per slot, then the units over
 * the pool (chunks of at least 2 MFLOP) with *jU and *jscratch set in the
 * job. */
static tp_status run_slabs(const tp_conv2d_geom *g, const float *w, const tp_conv_prep *pp, const tp_conv_epi *epi,
                           size_t nu, size_t per_slot, int64_t units, int64_t unit_flops,
                           void (*xform)(const tp_conv2d_geom *, const float *, float *), tp_pool_task task,
                           void *job, const float **jU, float **jscratch) {
  int64_t grain = unit_flops > 0 ? (2000000 + unit_flops - 1) / unit_flops : units;
  int nc = units > 0 ? tp_parallel_slots(units, grain) : 0;
  if (epi && nc > epi->nslots) nc = epi->nslots;
  if (nc < 1) nc = 1;
  if (pp) nu = 0;
  size_t bytes = sizeof(float) * (nu + per_slot * (size_t)nc);
  float *U = tp_alloc(bytes);
  if (!U) return tp_fail(TP_ERR_OUT_OF_MEMORY, "conv2d: cannot allocate %zu bytes of Winograd transforms", bytes);
  if (!pp) xform(g, w, U);
  *jU = U, *jscratch = U + nu;
  if (nc > 1) tp_parallel_run(units, grain, nc, task, job);
  else if (units > 0) task(job, 0, 0, units);
  tp_free(U);
  return TP_OK;
}

tp_status tp_conv2d_winograd(const tp_conv2d_geom *g, const float *x, const float *w,
                             const float *bias, float *y, const tp_conv_epi *epi, const tp_conv_prep *pp) {
  int64_t TH = (g->OH + 1) / 2, TW = (g->OW + 1) / 2, T = TH * TW;
  /* tile rows per block: V [16, C, TB] and Mo [16, M, TB] within ~512 KB
   * (at least one tile row); with threads, blocks enough for each */
  int64_t rows = block_rows((int64_t)(TP_WINO_BUDGET / 4 / 16) / (g->C + g->M) / TW, TH, g->N);
  wg2_job j = {.g = g, .x = x, .bias = bias, .y = y, .epi = epi, .pp = pp, .TW = TW, .T = T, .TB = rows * TW};
  j.nblk = (TH + rows - 1) / rows;
  /* per slot: V, Mo, and four padded input rows of 2 TW + 2 floats */
  j.per_slot = (size_t)(16 * slab(g->C * j.TB) + 16 * slab(g->M * j.TB) + 4 * (2 * TW + 2));
  /* U: transformed here, or transformed and packed once (pp) */
  return run_slabs(g, w, pp, epi, (size_t)(16 * g->M * g->C), j.per_slot, g->N * j.nblk, 32 * g->M * g->C * j.TB,
                   transform_weights, wg2_task, &j, &j.U, &j.scratch);
}

/* 1x3 and 3x1 convolutions (stride 1, no dilation, one group, no padding
 * across the kernel's other axis) as 1-D Winograd F(2, 3): each pair of
 * outputs along the kernel's axis is A^T [ (G g) . (B^T d) ] over the 4
 * inputs d around it, the same transforms as one axis of F(2x2, 3x3)
 * above: 4 GEMMs Mo[xi] [M, T] = U[xi] [M, C] @ V[xi] [C, T] (T tiles of
 * two outputs) with 4*M*C*T multiply-adds where im2col + GEMM does
 * 6*M*C*T, and the input expanded 2x instead of 3x. The openwakeword
 * embedding net is 20 such convolutions (24-96 channels). The tiles run
 * along the other axis (3x1: a tile row of W tiles, four of them one
 * vector load; 1x3: a row of ceil(OW/2) tiles, four of them every other
 * column). */
typedef struct wg1 {
  int64_t L, OL, pad, Q; /* extents along the kernel's axis (in, out), its leading pad, the other extent */
  int64_t rs, qs;        /* x strides along the axis and the other; y's are (ors, oqs) */
  int64_t ors, oqs, TA;  /* TA: tiles along the axis */
  int vert;              /* 3x1: tiles t = ta * Q + q; 1x3: t = q * TA + ta */
} wg1;

static wg1 wg1_of(const tp_conv2d_geom *g) {
  wg1 a;
  a.vert = g->KH == 3;
  if (a.vert) a.L = g->H, a.OL = g->OH, a.pad = g->pt, a.Q = g->W, a.rs = g->W, a.qs = 1, a.ors = g->OW, a.oqs = 1;
  else a.L = g->W, a.OL = g->OW, a.pad = g->pl, a.Q = g->H, a.rs = 1, a.qs = g->W, a.ors = 1, a.oqs = g->OW;
  a.TA = (a.OL + 1) / 2;
  return a;
}

int tp_conv2d_winograd1d_fits(const tp_conv2d_geom *g) {
  if (g->G != 1 || g->sh != 1 || g->sw != 1 || g->dh != 1 || g->dw != 1 || g->C < 8 || g->M < 8) return 0;
  int vert = g->KH == 3 && g->KW == 1 && g->pl == 0 && g->OW == g->W;
  int horiz = g->KH == 1 && g->KW == 3 && g->pt == 0 && g->OH == g->H;
  if (!vert && !horiz) return 0;
  wg1 a = wg1_of(g);
  return a.OL >= 4 && a.TA * a.Q >= 64;
}

/* The transforms walk the block's whole tile rows (a block is rows
 * [t0 / R, (t0 + nt) / R) of R tiles each, R = Q for 3x1, TA for 1x3): no
 * division per tile, and every tile of a row but the last few is a vector
 * of four. 3x1: the four input rows of a tile row are pointers into x (a
 * row outside it reads zeros), tiles are four adjacent columns. 1x3: each
 * input row is first copied between zeros into row[0, 2 TA + 2) (column i
 * at i + pad), so no tile checks its bounds (half of the embedding net's
 * 1x3 tiles, on rows of 32 with pad 1, were scalar with a bound per tap,
 * and two int64 divisions per tile made the transforms cost as much as
 * the GEMMs). The operations per value are the same as tile by tile. */
static void wg1_input(const wg1 *a, const tp_conv2d_geom *g, const float *x, int64_t t0, int64_t nt, float *V,
                      float *row) {
  int64_t CT = slab(g->C * nt), R = a->vert ? a->Q : a->TA, r0 = t0 / R, nr = nt / R;
  for (int64_t c = 0; c < g->C; c++) {
    const float *xc = x + c * g->H * g->W;
    for (int64_t rr = 0; rr < nr; rr++) {
      float *v = V + c * nt + rr * R;
      int64_t i = 0;
      if (a->vert) {
        int64_t a0 = 2 * (r0 + rr) - a->pad;
        const float *pr[4];
        for (int r = 0; r < 4; r++) pr[r] = a0 + r >= 0 && a0 + r < a->L ? xc + (a0 + r) * a->rs : NULL;
        for (; i + 4 <= R; i += 4) {
          v4f d[4];
          for (int r = 0; r < 4; r++) {
            if (pr[r]) memcpy(&d[r], pr[r] + i, sizeof d[r]);
            else d[r] = (v4f){0, 0, 0, 0};
          }
          v4f o[4] = {d[0] - d[2], d[1] + d[2], d[2] - d[1], d[1] - d[3]};
          for (int xi = 0; xi < 4; xi++) memcpy(v + i + xi * CT, &o[xi], sizeof o[xi]);
        }
        for (; i < R; i++) {
          float d[4];
          for (int r = 0; r < 4; r++) d[r] = pr[r] ? pr[r][i] : 0.0f;
          v[i] = d[0] - d[2];
          v[i + CT] = d[1] + d[2];
          v[i + 2 * CT] = d[2] - d[1];
          v[i + 3 * CT] = d[1] - d[3];
        }
        continue;
      }
      /* 1x3: the input row between zeros; tile ta reads row[2 ta + r], r < 4 */
      int64_t RW = 2 * R + 2, lo = a->pad < RW ? a->pad : RW, n = a->L < RW - lo ? a->L : RW - lo;
      const float *xr = xc + (r0 + rr) * a->qs;
      memset(row, 0, sizeof(float) * (size_t)lo);
      memcpy(row + lo, xr, sizeof(float) * (size_t)n);
      memset(row + lo + n, 0, sizeof(float) * (size_t)(RW - lo - n));
      for (; i + 4 <= R; i += 4) { /* lane k: tile i + k; d[r] lane k = p[2k + r] */
        const float *p = row + 2 * i;
        v4f u0, u1, u2, u3, d[4];
        memcpy(&u0, p, sizeof u0), memcpy(&u1, p + 4, sizeof u1);
        memcpy(&u2, p + 2, sizeof u2), memcpy(&u3, p + 6, sizeof u3);
        d[0] = __builtin_shufflevector(u0, u1, 0, 2, 4, 6);
        d[1] = __builtin_shufflevector(u0, u1, 1, 3, 5, 7);
        d[2] = __builtin_shufflevector(u2, u3, 0, 2, 4, 6);
        d[3] = __builtin_shufflevector(u2, u3, 1, 3, 5, 7);
        v4f o[4] = {d[0] - d[2], d[1] + d[2], d[2] - d[1], d[1] - d[3]};
        for (int xi = 0; xi < 4; xi++) memcpy(v + i + xi * CT, &o[xi], sizeof o[xi]);
      }
      for (; i < R; i++) {
        const float *d = row + 2 * i;
        v[i] = d[0] - d[2];
        v[i + CT] = d[1] + d[2];
        v[i + 2 * CT] = d[2] - d[1];
        v[i + 3 * CT] = d[1] - d[3];
      }
    }
  }
}

static void wg1_output(const wg1 *a, const tp_conv2d_geom *g, const float *Mo, const float *bias, int64_t t0,
                       int64_t nt, float *y) {
  int64_t MT = slab(g->M * nt), P = g->OH * g->OW, R = a->vert ? a->Q : a->TA, r0 = t0 / R, nr = nt / R;
  for (int64_t m = 0; m < g->M; m++) {
    float b = bias ? bias[m] : 0.0f;
    v4f bv = {b, b, b, b};
    for (int64_t rr = 0; rr < nr; rr++) {
      const float *mo = Mo + m * nt + rr * R;
      int64_t i = 0;
      if (a->vert) { /* output rows 2 ta and 2 ta + 1 (if inside), tiles along the row */
        int64_t ta = r0 + rr;
        float *y0 = y + m * P + 2 * ta * a->ors, *y1 = 2 * ta + 1 < a->OL ? y0 + a->ors : NULL;
        for (; i + 4 <= R; i += 4) {
          v4f v[4];
          for (int xi = 0; xi < 4; xi++) memcpy(&v[xi], mo + i + xi * MT, sizeof v[xi]);
          v4f o0 = v[0] + v[1] + v[2] + bv, o1 = v[1] - v[2] - v[3] + bv;
          memcpy(y0 + i, &o0, sizeof o0);
          if (y1) memcpy(y1 + i, &o1, sizeof o1);
        }
        for (; i < R; i++) {
          float v0 = mo[i], v1 = mo[i + MT], v2 = mo[i + 2 * MT], v3 = mo[i + 3 * MT];
          y0[i] = v0 + v1 + v2 + b;
          if (y1) y1[i] = v1 - v2 - v3 + b;
        }
        continue;
      }
      /* 1x3: output row q, tile ta at columns 2 ta, 2 ta + 1 (if inside) */
      float *yo = y + m * P + (r0 + rr) * a->oqs;
      for (; i + 4 <= R && 2 * i + 8 <= a->OL; i += 4) {
        v4f v[4];
        for (int xi = 0; xi < 4; xi++) memcpy(&v[xi], mo + i + xi * MT, sizeof v[xi]);
        v4f o0 = v[0] + v[1] + v[2] + bv, o1 = v[1] - v[2] - v[3] + bv;
        /* interleaved: o0[k] at column 2k, o1[k] at 2k + 1 */
        v4f lo = __builtin_shufflevector(o0, o1, 0, 4, 1, 5), hi = __builtin_shufflevector(o0, o1, 2, 6, 3, 7);
        memcpy(yo + 2 * i, &lo, sizeof lo), memcpy(yo + 2 * i + 4, &hi, sizeof hi);
      }
      for (; i < R; i++) {
        float v0 = mo[i], v1 = mo[i + MT], v2 = mo[i + 2 * MT], v3 = mo[i + 3 * MT];
        yo[2 * i] = v0 + v1 + v2 + b;
        if (2 * i + 1 < a->OL) yo[2 * i + 1] = v1 - v2 - v3 + b;
      }
    }
  }
}

/* Units: (image, block of whole tile rows), each on its own V and Mo
 * scratch (per pool slot); a block's outputs are whole output rows, so its
 * epilogue runs on them as soon as the block is done. Every output element
 * gets the same operations for any split (the GEMM's results do not depend
 * on its column count), so results are the same bits for any thread count. */
typedef struct wg1_job {
  const tp_conv2d_geom *g;
  const wg1 *a;
  const float *x, *U, *bias;
  const tp_conv_prep *pp; /* U transformed and packed once, or NULL */
  float *y, *scratch;
  int64_t TB, nblk, T, R; /* tiles per block (a multiple of R, the tiles of a tile row) */
  size_t per_slot;
  const tp_conv_epi *epi;
} wg1_job;

static void wg1_task(void *ctx, int slot, int64_t u0, int64_t u1) {
  const wg1_job *j = ctx;
  const tp_conv2d_geom *g = j->g;
  const tp_kernels *k = tp_kern();
  int64_t MC = g->M * g->C, P = g->OH * g->OW;
  float *V = j->scratch + (size_t)slot * j->per_slot, *Mo = V + 4 * slab(g->C * j->TB);
  for (int64_t u = u0; u < u1; u++) {
    int64_t n = u / j->nblk, t0 = (u % j->nblk) * j->TB, nt = j->T - t0 < j->TB ? j->T - t0 : j->TB;
    float *yn = j->y + n * g->M * P;
    wg1_input(j->a, g, j->x + n * g->C * g->H * g->W, t0, nt, V, Mo + 4 * slab(g->M * j->TB));
    for (int xi = 0; xi < 4; xi++)
      if (j->pp)
        k->gemm_f32_packed_a(g->M, nt, g->C, j->pp->a + xi * j->pp->stride, V + xi * slab(g->C * nt), nt, 1,
                             Mo + xi * slab(g->M * nt), nt, NULL);
      else
        k->gemm_f32(g->M, nt, g->C, j->U + (size_t)xi * MC, g->C, 1, V + xi * slab(g->C * nt), nt, 1,
                    Mo + xi * slab(g->M * nt), nt, NULL);
    wg1_output(j->a, g, Mo, j->bias, t0, nt, yn);
    if (j->epi) { /* tile rows [r0, r1): output rows 2 r0 .. 2 r1 (3x1) or r0 .. r1 (1x3) */
      int64_t r0 = t0 / j->R, r1 = (t0 + nt) / j->R, p0, p1;
      if (j->a->vert) p0 = 2 * r0 * g->OW, p1 = (2 * r1 < g->OH ? 2 * r1 : g->OH) * g->OW;
      else p0 = r0 * g->OW, p1 = r1 * g->OW;
      j->epi->fn(j->epi->ctx, slot, j->y, n, 0, g->M, p0, p1);
    }
  }
}

/* U[xi][m][c] = (G g)[xi]; w [M, C, 3, 1] or [M, C, 1, 3] */
static void transform_weights1d(const tp_conv2d_geom *g, const float *w, float *U) {
  int64_t MC = g->M * g->C;
  for (int64_t mc = 0; mc < MC; mc++) {
    const float *k = w + mc * 3;
    U[mc] = k[0];
    U[MC + mc] = 0.5f * (k[0] + k[1] + k[2]);
    U[2 * MC + mc] = 0.5f * (k[0] - k[1] + k[2]);
    U[3 * MC + mc] = k[2];
  }
}

tp_status tp_conv2d_winograd1d(const tp_conv2d_geom *g, const float *x, const float *w, const float *bias, float *y,
                               const tp_conv_epi *epi, const tp_conv_prep *pp) {
  wg1 a = wg1_of(g);
  int64_t T = a.TA * a.Q, R = a.vert ? a.Q : a.TA, TR = T / R;
  /* tile rows per block: V [4, C, TB] and Mo [4, M, TB] within the budget;
   * with threads, blocks enough for each */
  int64_t rows = block_rows((int64_t)(TP_WINO_BUDGET / 4 / 4) / (g->C + g->M) / R, TR, g->N);
  wg1_job j = {.g = g, .a = &a, .x = x, .bias = bias, .y = y, .TB = rows * R, .T = T, .R = R, .epi = epi, .pp = pp};
  j.nblk = (TR + rows - 1) / rows;
  /* per slot: V, Mo, and a padded input row (1x3: 2 TA + 2 floats) */
  j.per_slot = (size_t)(4 * slab(g->C * j.TB) + 4 * slab(g->M * j.TB) + 2 * a.TA + 2);
  return run_slabs(g, w, pp, epi, (size_t)(4 * g->M * g->C), j.per_slot, g->N * j.nblk, 8 * g->M * g->C * j.TB,
                   transform_weights1d, wg1_task, &j, &j.U, &j.scratch);
}

/* ---- a constant weight prepared once (tp_conv_prep, ops.h) ---- */
tp_status tp_conv2d_prepare(const tp_conv2d_geom *g, const float *w, tp_conv_prep **out) {
  *out = NULL;
  const tp_kernels *k = tp_kern();
  int path = tp_conv2d_path(g);
  if (path == TP_CONV_DEPTHWISE || !k->gemm_pack_a || !k->gemm_pack_a_size || !k->gemm_f32_packed_a) return TP_OK;
  int64_t Cg = g->C / g->G, Mg = g->M / g->G, KK = g->KH * g->KW;
  if (path == TP_CONV_IM2COL_T) { /* per group, w^T [Cg KK, Mg] packed as the GEMM's B */
    if (!k->gemm_pack_b || !k->gemm_pack_b_size || !k->gemm_f32_packed) return TP_OK;
    size_t one = k->gemm_pack_b_size(Cg * KK, Mg);
    if (!one) return TP_OK;
    int64_t stride = (int64_t)((one / sizeof(float) + 15) / 16 * 16);
    size_t bytes = sizeof(tp_conv_prep) + 64 + sizeof(float) * (size_t)stride * (size_t)g->G;
    char *raw = tp_alloc(bytes);
    if (!raw)
      return tp_fail(TP_ERR_OUT_OF_MEMORY, "out of memory: conv2d: cannot allocate %zu bytes for a packed weight", bytes);
    tp_conv_prep *pp = (tp_conv_prep *)raw;
    *pp = (tp_conv_prep){.path = path, .M = g->M, .C = g->C, .KH = g->KH, .KW = g->KW, .G = g->G, .w = w, .kern = k, .stride = stride};
    pp->a = (float *)(((uintptr_t)(raw + sizeof *pp) + 63) & ~(uintptr_t)63);
    if (k->gemm_tune) k->gemm_tune(0, 0); /* the layout follows the depth blocking: the defaults */
    for (int64_t i = 0; i < g->G; i++)
      k->gemm_pack_b(Cg * KK, Mg, w + i * Mg * Cg * KK, 1, Cg * KK, pp->a + i * stride);
    *out = pp;
    return TP_OK;
  }
  /* nmat packed matrices [rows, depth]: one per group, or per Winograd slab */
  int64_t nmat = path == TP_CONV_WINO2D ? 16 : path == TP_CONV_WINO1D ? 4 : g->G;
  int64_t rows = path == TP_CONV_WINO2D || path == TP_CONV_WINO1D ? g->M : Mg;
  int64_t depth = path == TP_CONV_WINO2D || path == TP_CONV_WINO1D ? g->C : Cg * KK;
  size_t one = k->gemm_pack_a_size(rows, depth);
  if (!one) return TP_OK;
  int64_t stride = (int64_t)((one / sizeof(float) + 15) / 16 * 16);
  size_t nu = path == TP_CONV_WINO2D ? (size_t)(16 * g->M * g->C) : path == TP_CONV_WINO1D ? (size_t)(4 * g->M * g->C) : 0;
  size_t bytes = sizeof(tp_conv_prep) + 64 + sizeof(float) * ((size_t)stride * (size_t)nmat + nu);
  char *raw = tp_alloc(bytes);
  if (!raw) return tp_fail(TP_ERR_OUT_OF_MEMORY, "out of memory: conv2d: cannot allocate %zu bytes for a packed weight", bytes);
  tp_conv_prep *pp = (tp_conv_prep *)raw;
  *pp = (tp_conv_prep){.path = path, .M = g->M, .C = g->C, .KH = g->KH, .KW = g->KW, .G = g->G, .w = w, .kern = k, .stride = stride};
  pp->a = (float *)(((uintptr_t)(raw + sizeof *pp) + 63) & ~(uintptr_t)63);
  float *U = pp->a + (size_t)stride * (size_t)nmat; /* the transform before packing */
  if (path == TP_CONV_WINO2D) transform_weights(g, w, U);
  if (path == TP_CONV_WINO1D) transform_weights1d(g, w, U);
  /* the layout follows the depth blocking: packed at the defaults, as the conv multiplies */
  if (k->gemm_tune) k->gemm_tune(0, 0);
  for (int64_t i = 0; i < nmat; i++) {
    const float *src = nu ? U + i * g->M * g->C : w + i * Mg * Cg * KK;
    k->gemm_pack_a(rows, depth, src, depth, 1, pp->a + i * stride);
  }
  *out = pp;
  return TP_OK;
}
