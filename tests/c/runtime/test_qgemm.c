/* test_qgemm.c - the integer GEMM (src/runtime/qgemm.h) on every variant
 * this host has, through the checked API (pack once, run per call).
 *
 *  1. Random shapes around every tile edge (M, N, K not multiples of any
 *     variant's mr, nr, kg) with random zero points (per tensor and per
 *     column), strided and transposed B, int32 bias: the S32 output equals
 *     an int64 reference written here; F32 and U8/S8 outputs equal the
 *     documented formula computed here with libm's rint; every variant's
 *     bytes equal the scalar variant's, bit for bit.
 *  2. The int32 edge: all-255 x all-(-128) (vpmaddubsw would saturate) and
 *     the widest zero-point case, at the largest K the sum allows (exact
 *     results near -2^31), and one K more is refused.
 *  3. Rounding and saturation by hand: half to even, both saturation ends,
 *     relu, output zero points.
 *  4. Bad input: each refused with a message naming the value; the API
 *     stays usable. */
#include "runtime/qgemm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (uint32_t)(rng >> 32);
}
static int rnd_in(int lo, int hi) { return lo + (int)(rnd() % (uint32_t)(hi - lo + 1)); }

static const char *variants[8];
static int vlo[8], vhi[8]; /* the weights each variant takes */
static int nvariants;

typedef struct qcase {
  int64_t M, N, K, lda, rsb, csb, nq;
  uint8_t *a;
  int8_t *b, zb[4096];
  float sb[4096];
  int32_t bias[4096];
  int has_bias;
  int32_t za;
  float sa;
} qcase;

/* exact sum_k (a - za)(b - zb) + bias, in int64 */
static int64_t ref_sum(const qcase *q, int64_t m, int64_t n) {
  int64_t s = q->has_bias ? q->bias[n] : 0, zb = q->zb[q->nq == 1 ? 0 : n];
  for (int64_t k = 0; k < q->K; k++)
    s += ((int64_t)q->a[m * q->lda + k] - q->za) * ((int64_t)q->b[k * q->rsb + n * q->csb] - zb);
  return s;
}

static tp_status pack(const qcase *q, tp_qgemm_packed **p) {
  tp_qgemm_weights w = {.K = q->K, .N = q->N, .b = q->b, .rsb = q->rsb, .csb = q->csb,
                        .nq = q->nq, .zero_point = q->zb, .scale = q->sb,
                        .bias = q->has_bias ? q->bias : NULL};
  return tp_qgemm_pack(&w, p);
}

/* one output kind on one variant; returns malloc'd C */
static void *run_kind(const qcase *q, const char *variant, int kind, float sy, int32_t zy,
                      const float *bias_f32, int relu) {
  if (tp_qgemm_set_variant(variant) != TP_OK) {
    FAILF("set_variant(%s): %s", variant, tp_last_error());
    return NULL;
  }
  tp_qgemm_packed *p = NULL;
  size_t esz = kind == TP_QGEMM_S32 || kind == TP_QGEMM_F32 ? 4 : 1;
  int64_t ldc = q->N + 3;
  void *c = malloc((size_t)(q->M * ldc + 1) * esz);
  memset(c, 0x5a, (size_t)(q->M * ldc + 1) * esz);
  CHECK_OK(pack(q, &p));
  if (!p) return c;
  CHECKF(!strcmp(tp_qgemm_packed_variant(p), variant), "packed with %s, wanted %s",
         tp_qgemm_packed_variant(p), variant);
  tp_qgemm_out o = {.kind = kind, .c = c, .ldc = ldc, .scale = sy, .zero_point = zy,
                    .bias_f32 = bias_f32, .relu = relu};
  CHECK_OK(tp_qgemm_run(p, q->M, q->a, q->lda, q->za, q->sa, &o));
  tp_qgemm_packed_free(p);
  return c;
}

/* the documented epilogue, written independently (libm rint) */
static float ref_f32(const qcase *q, int64_t n, int64_t s, const float *bias_f32, int relu) {
  float mult = q->sa * q->sb[q->nq == 1 ? 0 : n];
  float y = (float)(int32_t)s * mult;
  if (bias_f32) y = y + bias_f32[n];
  if (relu && !(y > 0)) y = 0;
  return y;
}
static int ref_q(const qcase *q, int64_t n, int64_t s, float sy, int32_t zy, int lo, int hi,
                 int relu) {
  float mult = q->sa * q->sb[q->nq == 1 ? 0 : n] / sy;
  float v = (float)(int32_t)s * mult;
  double r = rint((double)v) + zy; /* v is a float: rint is exact, half to even */
  if (relu && r < zy) r = zy;
  return r < lo ? lo : r > hi ? hi : (int)r;
}

static int ncompared;

static void check_case(qcase *q, const char *what) {
  int64_t M = q->M, N = q->N, ldc = N + 3;
  int64_t *ref = malloc((size_t)(M * N + 1) * 8);
  for (int64_t m = 0; m < M; m++)
    for (int64_t n = 0; n < N; n++) ref[m * N + n] = ref_sum(q, m, n);
  float *bf = NULL;
  if (rnd() & 1) { /* with or without a float bias */
    bf = malloc((size_t)(N + 1) * 4);
    for (int64_t n = 0; n < N; n++) bf[n] = (float)rnd_in(-1000, 1000) / 256.0f;
  }
  float sy = 0.5f + (float)(rnd() % 1000) / 7.0f;
  int32_t zy8 = rnd_in(0, 255), zys = rnd_in(-128, 127);
  int relu = (int)(rnd() & 1);
  void *first[4] = {0};
  int blo = 127, bhi = -128;
  for (int64_t k = 0; k < q->K; k++)
    for (int64_t n = 0; n < q->N; n++) {
      int b = q->b[k * q->rsb + n * q->csb];
      blo = b < blo ? b : blo, bhi = b > bhi ? b : bhi;
    }
  for (int v = 0; v < nvariants; v++) {
    if (q->K && q->N && (blo < vlo[v] || bhi > vhi[v])) {
      /* a 7-bit variant, forced on wider weights: refused, naming the range */
      tp_qgemm_packed *p = NULL;
      tp_qgemm_set_variant(variants[v]);
      tp_status s = pack(q, &p);
      CHECKF(s == TP_ERR_INVALID_ARG && strstr(tp_last_error(), "takes weights in") && !p,
             "%s took weights in [%d, %d]: %s", variants[v], blo, bhi, tp_last_error());
      tp_qgemm_packed_free(p);
      continue;
    }
    void *out[4] = {run_kind(q, variants[v], TP_QGEMM_S32, 0, 0, NULL, 0),
                    run_kind(q, variants[v], TP_QGEMM_F32, 0, 0, bf, relu),
                    run_kind(q, variants[v], TP_QGEMM_U8, sy, zy8, NULL, relu),
                    run_kind(q, variants[v], TP_QGEMM_S8, sy, zys, NULL, 0)};
    int bad = 0;
    for (int64_t m = 0; m < M && bad < 3; m++)
      for (int64_t n = 0; n < N && bad < 3; n++) {
        int64_t s = ref[m * N + n], i = m * ldc + n;
        int32_t c32 = ((int32_t *)out[0])[i];
        float f = ((float *)out[1])[i], fr = ref_f32(q, n, s, bf, relu);
        int u = ((uint8_t *)out[2])[i], ur = ref_q(q, n, s, sy, zy8, 0, 255, relu);
        int i8 = ((int8_t *)out[3])[i], ir = ref_q(q, n, s, sy, zys, -128, 127, 0);
        ncompared += 4;
        if (c32 != s || memcmp(&f, &fr, 4) || u != ur || i8 != ir) {
          FAILF("%s %s M=%lld N=%lld K=%lld za=%d at [%lld,%lld]: s32 %d (want %lld), f32 %.9g "
                "(want %.9g), u8 %d (want %d), s8 %d (want %d)",
                what, variants[v], (long long)M, (long long)N, (long long)q->K, q->za,
                (long long)m, (long long)n, c32, (long long)s, f, fr, u, ur, i8, ir);
          bad++;
        }
      }
    /* the padding column past N and the element after C stay untouched */
    for (int64_t m = 0; m < M && !bad; m++)
      if (((uint8_t *)out[2])[m * ldc + N] != 0x5a) FAILF("%s %s wrote past N", what, variants[v]);
    if (v == 0) {
      memcpy(first, out, sizeof out);
      continue;
    }
    size_t sz[4] = {4, 4, 1, 1};
    for (int k = 0; k < 4; k++) {
      if (memcmp(first[k], out[k], (size_t)(M * ldc) * sz[k]))
        FAILF("%s: %s output kind %d differs from %s's bytes", what, variants[v], k, variants[0]);
      free(out[k]);
    }
  }
  for (int k = 0; k < 4; k++) free(first[k]);
  free(ref), free(bf);
}

static int seven_bit; /* weights in [-64, 63] (the relaxed-SIMD kernel's range) */

static void fill_random(qcase *q, int extreme) {
  q->lda = q->K + (int64_t)(rnd() % 3);
  int transposed = (int)(rnd() % 3 == 0);
  q->rsb = transposed ? 1 : q->N, q->csb = transposed ? q->K : 1;
  q->a = malloc((size_t)(q->M * q->lda + 1));
  q->b = malloc((size_t)(q->K * q->N + 1));
  for (int64_t i = 0; i < q->M * q->lda; i++)
    q->a[i] = extreme ? (uint8_t)(rnd() & 1 ? 255 : 0) : (uint8_t)rnd();
  int bhi = seven_bit ? 63 : 127, blo = seven_bit ? -64 : -128;
  for (int64_t i = 0; i < q->K * q->N; i++)
    q->b[i] = extreme ? (int8_t)(rnd() & 1 ? bhi : blo) : (int8_t)rnd_in(blo, bhi);
  q->nq = (rnd() & 1) ? q->N : 1;
  int sym = rnd() % 3 == 0;
  for (int64_t i = 0; i < q->nq; i++) {
    q->zb[i] = sym ? 0 : (int8_t)rnd_in(-128, 127);
    q->sb[i] = (float)(1 + rnd() % 1000) / 65536.0f;
  }
  q->za = rnd_in(0, 255);
  q->sa = (float)(1 + rnd() % 1000) / 4096.0f;
  q->has_bias = (int)(rnd() & 1);
  for (int64_t n = 0; n < q->N; n++) q->bias[n] = rnd_in(-100000, 100000);
}

static void random_shapes(void) {
  static const int64_t edge[] = {1, 2, 3, 4, 5, 7, 8, 9, 13, 15, 16, 17, 31, 32, 33, 47, 65};
  int ne = (int)(sizeof edge / sizeof edge[0]);
  for (int c = 0; c < 60; c++) {
    qcase *q = calloc(1, sizeof *q);
    q->M = edge[rnd() % (unsigned)ne], q->N = edge[rnd() % (unsigned)ne];
    q->K = c % 5 == 4 ? 200 + rnd() % 3000 : edge[rnd() % (unsigned)ne];
    fill_random(q, c % 7 == 6);
    check_case(q, "random");
    free(q->a), free(q->b), free(q);
  }
  /* larger: W1-like panels with row/column tails */
  int64_t big[][3] = {{70, 100, 771}, {129, 67, 1030}, {33, 260, 257}};
  for (int c = 0; c < 3; c++) {
    qcase *q = calloc(1, sizeof *q);
    q->M = big[c][0], q->N = big[c][1], q->K = big[c][2];
    fill_random(q, 0);
    check_case(q, "large");
    free(q->a), free(q->b), free(q);
  }
}

/* the int32 edge: the largest K the sum allows, filled with the extreme
 * values; every variant must give the exact sum, and K + 1 is refused */
static void edge_case(int32_t za, uint8_t aval, int8_t zb, int8_t bval) {
  int64_t kmax = tp_qgemm_max_k(za, zb, zb, 0);
  int64_t expect1 = ((int64_t)aval - za) * ((int64_t)bval - zb);
  int64_t ma = za > 255 - za ? za : 255 - za, mb = zb + 128 > 127 - zb ? zb + 128 : 127 - zb;
  int tight = llabs(expect1) == ma * mb; /* the bound is reached by these values */
  CHECKF(kmax > 30000 && kmax * llabs(expect1) <= INT32_MAX &&
             (!tight || (kmax + 1) * llabs(expect1) > INT32_MAX),
         "max_k(%d, %d) = %lld for |term| %lld", za, zb, (long long)kmax, (long long)llabs(expect1));
  int64_t M = 3, N = 35;
  for (int extra = 0; extra <= 1; extra++) {
    int64_t K = kmax + extra;
    uint8_t *a = malloc((size_t)(M * K));
    int8_t *b = malloc((size_t)(K * N));
    memset(a, aval, (size_t)(M * K));
    memset(b, (uint8_t)bval, (size_t)(K * N));
    int32_t *c = malloc((size_t)(M * N) * 4);
    for (int v = 0; v < nvariants; v++) {
      if (bval < vlo[v] || bval > vhi[v]) continue; /* refusal checked in check_case */
      tp_qgemm_set_variant(variants[v]);
      tp_qgemm_weights w = {.K = K, .N = N, .b = b, .rsb = N, .csb = 1, .nq = 1, .zero_point = &zb};
      tp_qgemm_packed *p = NULL;
      CHECK_OK(tp_qgemm_pack(&w, &p));
      tp_qgemm_out o = {.kind = TP_QGEMM_S32, .c = c, .ldc = N};
      memset(c, 0, (size_t)(M * N) * 4);
      tp_status s = tp_qgemm_run(p, M, a, K, za, 1.0f, &o);
      if (!extra) {
        CHECKF(s == TP_OK, "%s K=%lld: %s", variants[v], (long long)K, tp_last_error());
        for (int64_t i = 0; i < M * N; i++)
          if (c[i] != expect1 * K) {
            FAILF("%s edge za=%d a=%d zb=%d b=%d K=%lld: %d, want %lld", variants[v], za, aval, zb,
                  bval, (long long)K, c[i], (long long)(expect1 * K));
            break;
          }
      } else {
        CHECKF(s == TP_ERR_INVALID_ARG && strstr(tp_last_error(), "overflow"),
               "%s K=%lld (past the int32 bound) was not refused: %s", variants[v], (long long)K,
               tp_last_error());
      }
      tp_qgemm_packed_free(p);
    }
    free(a), free(b), free(c);
  }
}

/* rounding and saturation by hand: K = 1, A = za + x, B = 1 (zb = 0):
 * the sum is x, mult = sa sb / sy = 0.5 */
static void rounding_by_hand(void) {
  static const int xs[] = {5, 7, -5, -7, 1, -1, 3, 0, 200, -200, 1000, -1000};
  static const int want_u8[] = {12, 14, 8, 6, 10, 10, 12, 10, 110, 0, 255, 0};   /* zy = 10 */
  static const int want_s8[] = {2, 4, -2, -4, 0, 0, 2, 0, 100, -100, 127, -128}; /* zy = 0 */
  int n = (int)(sizeof xs / sizeof xs[0]);
  for (int v = 0; v < nvariants; v++) {
    tp_qgemm_set_variant(variants[v]);
    int8_t one = 1;
    float sb = 0.25f;
    tp_qgemm_weights w = {.K = 1, .N = 1, .b = &one, .rsb = 1, .csb = 1, .nq = 1, .scale = &sb};
    tp_qgemm_packed *p = NULL;
    CHECK_OK(tp_qgemm_pack(&w, &p));
    for (int i = 0; i < n; i++) {
      int32_t za = xs[i] >= 0 ? 0 : 255;
      int x = xs[i] < -255 ? -255 : xs[i] > 255 ? 255 : xs[i];
      uint8_t a = (uint8_t)(za + x);
      uint8_t u8 = 0, u8r = 0;
      int8_t s8 = 0;
      /* the sum is x; scale 0.5 via sa = 2, sb = 0.25, sy = 1 (x beyond
       * +-255 by a smaller sy) */
      float sy = xs[i] == x ? 1.0f : 1.0f / ((float)xs[i] / (float)x);
      tp_qgemm_out o = {.kind = TP_QGEMM_U8, .c = &u8, .ldc = 1, .scale = sy, .zero_point = 10};
      CHECK_OK(tp_qgemm_run(p, 1, &a, 1, za, 2.0f, &o));
      CHECKF(u8 == want_u8[i], "%s: u8 of %d * 0.5 + 10 = %d, want %d", variants[v], xs[i], u8,
             want_u8[i]);
      o.relu = 1, o.c = &u8r;
      CHECK_OK(tp_qgemm_run(p, 1, &a, 1, za, 2.0f, &o));
      CHECKF(u8r == (want_u8[i] < 10 ? 10 : want_u8[i]), "%s: relu u8 of %d = %d", variants[v],
             xs[i], u8r);
      tp_qgemm_out os = {.kind = TP_QGEMM_S8, .c = &s8, .ldc = 1, .scale = sy, .zero_point = 0};
      CHECK_OK(tp_qgemm_run(p, 1, &a, 1, za, 2.0f, &os));
      CHECKF(s8 == want_s8[i], "%s: s8 of %d * 0.5 = %d, want %d", variants[v], xs[i], s8,
             want_s8[i]);
    }
    tp_qgemm_packed_free(p);
  }
}

#define EXPECT_FAIL(call, needle)                                                         \
  do {                                                                                    \
    tp_status s_ = (call);                                                                \
    CHECKF(s_ != TP_OK && strstr(tp_last_error(), needle), "%s: want an error naming '%s', " \
           "got status %d: %s", #call, needle, (int)s_, tp_last_error());                 \
  } while (0)

static void bad_input(void) {
  tp_qgemm_set_variant("best");
  int8_t b[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  int8_t zb[3] = {0, 1, 2};
  float sb[3] = {0.5f, 0.25f, 1.0f}, bad_sb[3] = {0.5f, NAN, 1.0f}, neg_sb[1] = {-1.0f};
  float zero_sb[1] = {0.0f};
  tp_qgemm_packed *p = NULL;
  tp_qgemm_weights w = {.K = 4, .N = 3, .b = b, .rsb = 3, .csb = 1, .nq = 3, .zero_point = zb,
                        .scale = sb};
  EXPECT_FAIL(tp_qgemm_pack(&w, NULL), "out is NULL");
  EXPECT_FAIL(tp_qgemm_pack(NULL, &p), "weights is NULL");
  tp_qgemm_weights w2 = w;
  w2.K = -1;
  EXPECT_FAIL(tp_qgemm_pack(&w2, &p), "K=-1");
  w2 = w, w2.b = NULL;
  EXPECT_FAIL(tp_qgemm_pack(&w2, &p), "B is NULL");
  w2 = w, w2.nq = 2;
  EXPECT_FAIL(tp_qgemm_pack(&w2, &p), "2 weight zero points");
  w2 = w, w2.scale = bad_sb;
  EXPECT_FAIL(tp_qgemm_pack(&w2, &p), "scale[1] = nan");
  w2 = w, w2.scale = neg_sb, w2.nq = 1;
  EXPECT_FAIL(tp_qgemm_pack(&w2, &p), "scale[0] = -1");
  w2 = w, w2.scale = zero_sb, w2.nq = 1;
  EXPECT_FAIL(tp_qgemm_pack(&w2, &p), "scale[0] = 0");
  CHECK(p == NULL);

  CHECK_OK(tp_qgemm_pack(&w, &p));
  uint8_t a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  float c[6];
  uint8_t cq[6];
  tp_qgemm_out o = {.kind = TP_QGEMM_F32, .c = c, .ldc = 3};
  EXPECT_FAIL(tp_qgemm_run(NULL, 2, a, 4, 0, 1.0f, &o), "packed weights are NULL");
  EXPECT_FAIL(tp_qgemm_run(p, 2, a, 4, 0, 1.0f, NULL), "out is NULL");
  EXPECT_FAIL(tp_qgemm_run(p, -2, a, 4, 0, 1.0f, &o), "M=-2");
  EXPECT_FAIL(tp_qgemm_run(p, 2, NULL, 4, 0, 1.0f, &o), "A is NULL");
  EXPECT_FAIL(tp_qgemm_run(p, 2, a, 3, 0, 1.0f, &o), "lda=3");
  EXPECT_FAIL(tp_qgemm_run(p, 2, a, 4, 256, 1.0f, &o), "zero point 256");
  EXPECT_FAIL(tp_qgemm_run(p, 2, a, 4, -1, 1.0f, &o), "zero point -1");
  EXPECT_FAIL(tp_qgemm_run(p, 2, a, 4, 0, 0.0f, &o), "activation scale 0");
  EXPECT_FAIL(tp_qgemm_run(p, 2, a, 4, 0, INFINITY, &o), "activation scale inf");
  tp_qgemm_out o2 = o;
  o2.kind = 7;
  EXPECT_FAIL(tp_qgemm_run(p, 2, a, 4, 0, 1.0f, &o2), "output kind 7");
  o2 = o, o2.c = NULL;
  EXPECT_FAIL(tp_qgemm_run(p, 2, a, 4, 0, 1.0f, &o2), "C is NULL");
  o2 = o, o2.ldc = 2;
  EXPECT_FAIL(tp_qgemm_run(p, 2, a, 4, 0, 1.0f, &o2), "ldc=2");
  o2 = (tp_qgemm_out){.kind = TP_QGEMM_U8, .c = cq, .ldc = 3, .scale = 1.0f, .zero_point = 300};
  EXPECT_FAIL(tp_qgemm_run(p, 2, a, 4, 0, 1.0f, &o2), "output zero point 300");
  o2.kind = TP_QGEMM_S8, o2.zero_point = 128;
  EXPECT_FAIL(tp_qgemm_run(p, 2, a, 4, 0, 1.0f, &o2), "output zero point 128");
  o2.zero_point = 0, o2.scale = -2.0f;
  EXPECT_FAIL(tp_qgemm_run(p, 2, a, 4, 0, 1.0f, &o2), "output scale -2");
  o2.scale = 1.0f, o2.bias_f32 = sb;
  EXPECT_FAIL(tp_qgemm_run(p, 2, a, 4, 0, 1.0f, &o2), "float bias needs an F32");
  tp_qgemm_out os = {.kind = TP_QGEMM_S32, .c = c, .ldc = 3, .relu = 1};
  EXPECT_FAIL(tp_qgemm_run(p, 2, a, 4, 0, 1.0f, &os), "S32 output takes no relu");
  EXPECT_FAIL(tp_qgemm_set_variant("avx9000"), "variant 'avx9000' is not available");
  /* more A than a build can address (2^31 - 1 rows of K = 1024): refused
   * before any allocation or read of A */
  {
    static int8_t bk[1024];
    tp_qgemm_weights wk = {.K = 1024, .N = 1, .b = bk, .rsb = 1, .csb = 1, .nq = 1, .scale = sb};
    tp_qgemm_packed *pk = NULL;
    CHECK_OK(tp_qgemm_pack(&wk, &pk));
    EXPECT_FAIL(tp_qgemm_run(pk, ((int64_t)1 << 31) - 1, a, 1024, 0, 1.0f, &o),
                "activations need more memory than this build can address");
    tp_qgemm_packed_free(pk);
  }
  /* still usable: a good call gives the right values */
  CHECK_OK(tp_qgemm_run(p, 2, a, 4, 3, 0.5f, &o));
  for (int m = 0; m < 2; m++)
    for (int n = 0; n < 3; n++) {
      int s = 0;
      for (int k = 0; k < 4; k++) s += (a[m * 4 + k] - 3) * (b[k * 3 + n] - zb[n]);
      CHECKF(c[m * 3 + n] == (float)s * (0.5f * sb[n]), "after errors: c[%d,%d] = %g, want %g", m,
             n, c[m * 3 + n], (float)s * (0.5f * sb[n]));
    }
  tp_qgemm_packed_free(p);
  /* no scales packed: only S32 */
  w2 = w, w2.scale = NULL;
  CHECK_OK(tp_qgemm_pack(&w2, &p));
  EXPECT_FAIL(tp_qgemm_run(p, 2, a, 4, 0, 1.0f, &o), "needs weight scales");
  tp_qgemm_packed_free(p);
  /* empty shapes are fine */
  w2 = w, w2.K = 0;
  CHECK_OK(tp_qgemm_pack(&w2, &p));
  c[0] = 9;
  CHECK_OK(tp_qgemm_run(p, 1, NULL, 0, 0, 1.0f, &o));
  CHECKF(c[0] == 0.0f && c[2] == 0.0f, "K=0 gives zeros: %g %g", c[0], c[2]);
  CHECK_OK(tp_qgemm_run(p, 0, NULL, 0, 0, 1.0f, &o));
  tp_qgemm_packed_free(p);
}

static void list_variants(void) {
  nvariants = tp_qgemm_variant_count();
  for (int i = 0; i < nvariants && i < 8; i++) {
    variants[i] = tp_qgemm_variant_name(i);
    CHECK(tp_qgemm_variant_weight_range(i, &vlo[i], &vhi[i]));
  }
  CHECK(!tp_qgemm_variant_weight_range(nvariants, NULL, NULL));
  /* the scalar reference first: the others are compared with its bytes */
  for (int i = 0; i < nvariants; i++)
    if (!strcmp(variants[i], "scalar")) {
      const char *t = variants[0];
      int l = vlo[0], h = vhi[0];
      variants[0] = variants[i], variants[i] = t;
      vlo[0] = vlo[i], vhi[0] = vhi[i], vlo[i] = l, vhi[i] = h;
    }
  printf("qgemm variants on this host:");
  for (int i = 0; i < nvariants; i++) printf(" %s", variants[i]);
  printf(" (best: %s)\n", tp_qgemm_variant_name(0));
  CHECKF(!strcmp(variants[0], "scalar"), "no scalar variant");
}

/* The relaxed-SIMD arithmetic ((A - 128)(B + 64), 7-bit weights) through
 * its C twin "scalar7", installed as an upper layer installs the Wasm
 * kernel: with 7-bit weights it must match every variant bit for bit;
 * wider weights go to the next variant, or are refused when it is forced. */
static void seven_bit_variant(void) {
  tp_qgemm_install_variant(&tp_qgemm_ukernel_scalar7);
  CHECKF(!strcmp(tp_qgemm_variant_name(0), "scalar7"), "installed variant is not the best: %s",
         tp_qgemm_variant_name(0));
  list_variants();
  seven_bit = 1;
  random_shapes();
  edge_case(255, 0, -128, 63);
  edge_case(0, 255, 0, -64);
  seven_bit = 0;
  int8_t b[6] = {1, 2, 3, 64, 5, 6}; /* 64: not 7-bit */
  tp_qgemm_weights w = {.K = 2, .N = 3, .b = b, .rsb = 3, .csb = 1, .nq = 1};
  tp_qgemm_packed *p = NULL;
  tp_qgemm_set_variant("best");
  CHECK_OK(tp_qgemm_pack(&w, &p));
  CHECKF(p && strcmp(tp_qgemm_packed_variant(p), "scalar7"),
         "8-bit weights were packed for scalar7");
  tp_qgemm_packed_free(p);
  b[3] = 63;
  CHECK_OK(tp_qgemm_pack(&w, &p));
  CHECKF(p && !strcmp(tp_qgemm_packed_variant(p), "scalar7"), "7-bit weights not packed for scalar7");
  tp_qgemm_packed_free(p);
  b[3] = -65;
  CHECK_OK(tp_qgemm_set_variant("scalar7"));
  EXPECT_FAIL(tp_qgemm_pack(&w, &p), "takes weights in [-64, 63]; these span [-65, 6]");
  tp_qgemm_install_variant(NULL);
  CHECKF(strcmp(tp_qgemm_variant_name(0), "scalar7"), "scalar7 still installed");
  list_variants();
}

int main(void) {
  list_variants();
  random_shapes();
  edge_case(0, 255, 0, -128);   /* vpmaddubsw's saturating case */
  edge_case(255, 0, -128, 127); /* the widest: (0 - 255)(127 + 128) */
  rounding_by_hand();
  bad_input();
  seven_bit_variant();
  tp_qgemm_set_variant("best");
  printf("%d checks, %d compared values, %d failures\n", checks, ncompared, failures);
  return failures != 0;
}
