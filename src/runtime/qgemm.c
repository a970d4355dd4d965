/* qgemm.c - the checked integer GEMM API (qgemm.h): argument checks, the
 * choice of micro-kernel for this host, packing of B (once) and A (per
 * call), and the blocked loop that calls the micro-kernel and its
 * epilogue (kernels/qgemm.h). */
#include "qgemm.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../core/internal.h"

#if (defined(__x86_64__) || defined(__i386__)) && !defined(__wasm__)
#include <cpuid.h>
#define QG_X86 1
#else
#define QG_X86 0
#endif

struct tp_qgemm_packed {
  const tp_qgemm_ukernel *uk;
  int64_t K, N, kgroups, npanels;
  size_t panel_bytes;
  void *b;            /* npanels panels of kgroups x nr x kg elements */
  int32_t *colsum;    /* [N] sum_k B[k,n] (dot4 variants) */
  int32_t *zb;        /* [N] weight zero point of each column */
  float *sb;          /* [N] weight scale of each column; NULL: none given */
  int32_t *bias;      /* [N] (zeros when none was given) */
  int32_t zb_min, zb_max;
  int64_t bias_absmax;
};

/* ---- variants ------------------------------------------------------------ */

#if QG_X86
static unsigned long long xgetbv0(void) {
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return ((unsigned long long)hi << 32) | lo;
}
/* CPUID feature bits, checked against what the OS saves (XCR0). */
static void x86_features(int *avx2, int *avxvnni, int *avx512vnni) {
  unsigned a, b, c, d;
  *avx2 = *avxvnni = *avx512vnni = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return; /* OSXSAVE */
  unsigned long long xcr0 = xgetbv0();
  int os_avx = (xcr0 & 6) == 6, os_avx512 = os_avx && (xcr0 & 0xe0) == 0xe0;
  if (!os_avx || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return;
  *avx2 = !!(b & (1u << 5));
  int f = !!(b & (1u << 16)), bw = !!(b & (1u << 30)), vl = !!(b & (1u << 31));
  *avx512vnni = os_avx512 && f && bw && vl && (c & (1u << 11));
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) *avxvnni = *avx2 && (a & (1u << 4));
}
#endif

#define QG_TILE_MAX 512 /* mr * nr of the largest tile (the run's tile buffer) */

static const tp_qgemm_ukernel *variants[8];
static int nvariants = -1;
static const tp_qgemm_ukernel *installed, *chosen;

static void init_variants(void) {
  if (nvariants >= 0) return;
  int n = 0;
  if (installed) variants[n++] = installed;
#if QG_X86
  int avx2, avxvnni, avx512vnni;
  x86_features(&avx2, &avxvnni, &avx512vnni);
  if (avx512vnni) variants[n++] = &tp_qgemm_ukernel_avx512vnni;
  if (avxvnni) variants[n++] = &tp_qgemm_ukernel_avxvnni;
  if (avx2) variants[n++] = &tp_qgemm_ukernel_avx2w7; /* 7-bit weights; others go on */
  if (avx2) variants[n++] = &tp_qgemm_ukernel_avx2;
#endif
#if defined(__wasm_simd128__)
  variants[n++] = &tp_qgemm_ukernel_wasmsimd;
#endif
  variants[n++] = &tp_qgemm_ukernel_scalar;
  nvariants = n;
}

int tp_qgemm_variant_count(void) {
  init_variants();
  return nvariants;
}

const char *tp_qgemm_variant_name(int i) {
  init_variants();
  return i >= 0 && i < nvariants ? variants[i]->name : NULL;
}

int tp_qgemm_variant_weight_range(int i, int *lo_out, int *hi_out) {
  init_variants();
  if (i < 0 || i >= nvariants) return 0;
  if (lo_out) *lo_out = variants[i]->b_lo;
  if (hi_out) *hi_out = variants[i]->b_hi;
  return 1;
}

static const tp_qgemm_ukernel *current(void) {
  init_variants();
  return chosen ? chosen : variants[0];
}

const char *tp_qgemm_variant(void) { return current()->name; }

tp_status tp_qgemm_set_variant(const char *name) {
  init_variants();
  if (name && !strcmp(name, "best")) {
    chosen = NULL;
    return TP_OK;
  }
  for (int i = 0; name && i < nvariants; i++)
    if (!strcmp(name, variants[i]->name)) {
      chosen = variants[i];
      return TP_OK;
    }
  char avail[160] = "";
  for (int i = 0; i < nvariants; i++) {
    size_t l = strlen(avail);
    snprintf(avail + l, sizeof avail - l, "%s%s", i ? ", " : "", variants[i]->name);
  }
  return tp_fail(TP_ERR_UNSUPPORTED, "qgemm: variant '%s' is not available on this host (have: %s)",
                 name ? name : "(null)", avail);
}

void tp_qgemm_install_variant(const tp_qgemm_ukernel *uk) {
  if (uk && (uk->mr * uk->nr > QG_TILE_MAX || uk->nr > 128)) return; /* tile buffers */
  installed = uk;
  nvariants = -1;
  chosen = NULL;
}

/* ---- checks ---------------------------------------------------------------- */

int64_t tp_qgemm_max_k(int32_t a_zero_point, int32_t zb_min, int32_t zb_max, int64_t bias_absmax) {
  int64_t ma = a_zero_point > 255 - a_zero_point ? a_zero_point : 255 - a_zero_point;
  int64_t mb = zb_max + 128 > 127 - zb_min ? zb_max + 128 : 127 - zb_min;
  if (ma == 0 || mb == 0) return INT64_MAX;
  int64_t room = INT32_MAX - bias_absmax;
  return room < 0 ? -1 : room / (ma * mb);
}

static int good_scale(float s) { return isfinite(s) && s > 0.0f; }

/* The first variant (the chosen one, or the best) whose weight range holds
 * every B: the relaxed-SIMD kernel takes only 7-bit weights; when it was
 * not forced, other weights go to the next variant. */
static tp_status pick_for(const tp_qgemm_weights *w, const tp_qgemm_ukernel **out) {
  init_variants();
  int lo = 127, hi = -128;
  for (int64_t k = 0; k < w->K; k++)
    for (int64_t n = 0; n < w->N; n++) {
      int v = w->b[k * w->rsb + n * w->csb];
      lo = v < lo ? v : lo, hi = v > hi ? v : hi;
    }
  for (int i = 0; i < nvariants; i++) {
    const tp_qgemm_ukernel *uk = chosen ? chosen : variants[i];
    if (lo >= uk->b_lo && hi <= uk->b_hi) {
      *out = uk;
      return TP_OK;
    }
    if (chosen)
      return tp_fail(TP_ERR_INVALID_ARG,
                     "qgemm_pack: variant '%s' takes weights in [%d, %d]; these span [%d, %d]",
                     uk->name, uk->b_lo, uk->b_hi, lo, hi);
  }
  *out = &tp_qgemm_ukernel_scalar;
  return TP_OK;
}

/* The largest packed buffer: 2^40 bytes (TP_MAX_NUMEL's bound), and half
 * of size_t (wasm32), so no size arithmetic below can overflow. */
#define QG_MAX_BYTES \
  ((double)SIZE_MAX / 2 < (double)TP_MAX_NUMEL ? (double)SIZE_MAX / 2 : (double)TP_MAX_NUMEL)
/* Dimensions past 2^31 are refused before any size arithmetic. */
#define QG_MAX_DIM ((int64_t)1 << 31)

tp_status tp_qgemm_pack(const tp_qgemm_weights *w, tp_qgemm_packed **out) {
  if (!out) return tp_fail(TP_ERR_INVALID_ARG, "qgemm_pack: out is NULL");
  *out = NULL;
  if (!w) return tp_fail(TP_ERR_INVALID_ARG, "qgemm_pack: weights is NULL");
  int64_t K = w->K, N = w->N;
  if (K < 0 || N < 0 || K >= QG_MAX_DIM || N >= QG_MAX_DIM)
    return tp_fail(TP_ERR_INVALID_ARG, "qgemm_pack: K=%lld, N=%lld (each must be in [0, 2^31))",
                   (long long)K, (long long)N);
  if (!w->b && K > 0 && N > 0) return tp_fail(TP_ERR_INVALID_ARG, "qgemm_pack: B is NULL");
  if (w->nq != 1 && w->nq != N)
    return tp_fail(TP_ERR_INVALID_ARG,
                   "qgemm_pack: %lld weight zero points/scales for N=%lld columns (want 1 or N)",
                   (long long)w->nq, (long long)N);
  if (w->scale)
    for (int64_t i = 0; i < w->nq; i++)
      if (!good_scale(w->scale[i]))
        return tp_fail(TP_ERR_INVALID_ARG,
                       "qgemm_pack: weight scale[%lld] = %g (must be finite and > 0)",
                       (long long)i, (double)w->scale[i]);

  const tp_qgemm_ukernel *uk = NULL;
  TP_TRY(pick_for(w, &uk));
  int64_t kgroups = (K + uk->kg - 1) / uk->kg, npanels = (N + uk->nr - 1) / uk->nr;
  size_t esz = uk->wide ? 2 : 1;
  /* sizes in double first: on wasm32 size_t is 32 bits */
  if ((double)kgroups * uk->nr * uk->kg * (double)esz * (double)npanels > QG_MAX_BYTES)
    return tp_fail(TP_ERR_OUT_OF_MEMORY,
                   "qgemm_pack: %lldx%lld weights need more memory than this build can address",
                   (long long)K, (long long)N);
  size_t panel = (size_t)kgroups * (size_t)uk->nr * (size_t)uk->kg * esz;
  size_t bbytes = (panel * (size_t)npanels + 63) / 64 * 64;
  tp_qgemm_packed *p = calloc(1, sizeof *p);
  size_t n1 = N > 0 ? (size_t)N : 1;
  if (p) {
    p->b = bbytes ? aligned_alloc(64, bbytes) : NULL;
    p->colsum = malloc(n1 * 4), p->zb = malloc(n1 * 4), p->bias = malloc(n1 * 4);
    p->sb = w->scale ? malloc(n1 * 4) : NULL;
  }
  if (!p || (bbytes && !p->b) || !p->colsum || !p->zb || !p->bias || (w->scale && !p->sb)) {
    tp_qgemm_packed_free(p);
    return tp_fail(TP_ERR_OUT_OF_MEMORY, "qgemm_pack: out of memory packing %lldx%lld weights",
                   (long long)K, (long long)N);
  }
  p->uk = uk, p->K = K, p->N = N, p->kgroups = kgroups, p->npanels = npanels;
  p->panel_bytes = panel;
  p->zb_min = 127, p->zb_max = -128;
  for (int64_t n = 0; n < N; n++) {
    int64_t q = w->nq == 1 ? 0 : n;
    p->zb[n] = w->zero_point ? w->zero_point[q] : 0;
    if (p->sb) p->sb[n] = w->scale[q];
    p->bias[n] = w->bias ? w->bias[n] : 0;
    int64_t ab = p->bias[n] < 0 ? -(int64_t)p->bias[n] : p->bias[n];
    if (ab > p->bias_absmax) p->bias_absmax = ab;
    if (p->zb[n] < p->zb_min) p->zb_min = p->zb[n];
    if (p->zb[n] > p->zb_max) p->zb_max = p->zb[n];
  }
  if (N == 0) p->zb_min = p->zb_max = 0;
  /* panels: b[g][j][t] = B[g kg + t, panel nr + j], zero outside B */
  const int nr = uk->nr, kg = uk->kg;
  for (int64_t pn = 0; pn < npanels; pn++) {
    for (int j = 0; j < nr; j++) {
      int64_t n = pn * nr + j;
      uint32_t cs = 0; /* wrapping, as every sum here */
      for (int64_t g = 0; g < kgroups; g++)
        for (int t = 0; t < kg; t++) {
          int64_t k = g * kg + t;
          size_t at = (size_t)pn * (size_t)kgroups * nr * kg + ((size_t)g * nr + j) * kg + t;
          int v = n < N && k < K ? w->b[k * w->rsb + n * w->csb] : 0;
          cs += (uint32_t)v;
          if (uk->wide)
            ((int16_t *)p->b)[at] = (int16_t)(n < N && k < K ? v - p->zb[n] : 0);
          else
            ((int8_t *)p->b)[at] = (int8_t)(n < N && k < K ? v + uk->b_off : 0);
        }
      if (n < N) p->colsum[n] = (int32_t)cs;
    }
  }
  *out = p;
  return TP_OK;
}

void tp_qgemm_packed_free(tp_qgemm_packed *p) {
  if (!p) return;
  free(p->b), free(p->colsum), free(p->zb), free(p->sb), free(p->bias);
  free(p);
}

const char *tp_qgemm_packed_variant(const tp_qgemm_packed *p) { return p ? p->uk->name : NULL; }

static tp_status check_run(const tp_qgemm_packed *p, int64_t M, const uint8_t *a, int64_t lda,
                           int32_t za, float sa, const tp_qgemm_out *o) {
  if (!p) return tp_fail(TP_ERR_INVALID_ARG, "qgemm_run: packed weights are NULL");
  if (!o) return tp_fail(TP_ERR_INVALID_ARG, "qgemm_run: out is NULL");
  if (M < 0 || M >= QG_MAX_DIM)
    return tp_fail(TP_ERR_INVALID_ARG, "qgemm_run: M=%lld (must be in [0, 2^31))", (long long)M);
  if (M > 0 && p->K > 0 && !a) return tp_fail(TP_ERR_INVALID_ARG, "qgemm_run: A is NULL");
  if (M > 0 && lda < p->K)
    return tp_fail(TP_ERR_INVALID_ARG, "qgemm_run: lda=%lld is less than K=%lld", (long long)lda,
                   (long long)p->K);
  if (za < 0 || za > 255)
    return tp_fail(TP_ERR_INVALID_ARG,
                   "qgemm_run: activation zero point %d is out of range for uint8 [0, 255]", za);
  if (o->kind < 0 || o->kind >= TP_QGEMM_KIND_COUNT)
    return tp_fail(TP_ERR_INVALID_ARG, "qgemm_run: output kind %d is not one of S32, F32, U8, S8",
                   o->kind);
  if (M > 0 && p->N > 0 && !o->c) return tp_fail(TP_ERR_INVALID_ARG, "qgemm_run: C is NULL");
  if (M > 0 && o->ldc < p->N)
    return tp_fail(TP_ERR_INVALID_ARG, "qgemm_run: ldc=%lld is less than N=%lld",
                   (long long)o->ldc, (long long)p->N);
  if (o->kind == TP_QGEMM_S32 && (o->relu || o->bias_f32))
    return tp_fail(TP_ERR_INVALID_ARG, "qgemm_run: an S32 output takes no relu or float bias");
  if (o->kind != TP_QGEMM_F32 && o->bias_f32)
    return tp_fail(TP_ERR_INVALID_ARG,
                   "qgemm_run: a float bias needs an F32 output (quantized outputs take the int32 "
                   "bias of the packed weights)");
  if (o->kind != TP_QGEMM_S32) {
    if (!p->sb)
      return tp_fail(TP_ERR_INVALID_ARG,
                     "qgemm_run: a scaled output needs weight scales (none were packed)");
    if (!good_scale(sa))
      return tp_fail(TP_ERR_INVALID_ARG,
                     "qgemm_run: activation scale %g (must be finite and > 0)", (double)sa);
  }
  if (o->kind == TP_QGEMM_U8 || o->kind == TP_QGEMM_S8) {
    int lo = o->kind == TP_QGEMM_U8 ? 0 : -128, hi = o->kind == TP_QGEMM_U8 ? 255 : 127;
    if (!good_scale(o->scale))
      return tp_fail(TP_ERR_INVALID_ARG, "qgemm_run: output scale %g (must be finite and > 0)",
                     (double)o->scale);
    if (o->zero_point < lo || o->zero_point > hi)
      return tp_fail(TP_ERR_INVALID_ARG,
                     "qgemm_run: output zero point %d is out of range for %s [%d, %d]",
                     o->zero_point, o->kind == TP_QGEMM_U8 ? "uint8" : "int8", lo, hi);
  }
  int64_t kmax = tp_qgemm_max_k(za, p->zb_min, p->zb_max, p->bias_absmax);
  if (p->K > kmax)
    return tp_fail(TP_ERR_INVALID_ARG,
                   "qgemm_run: K=%lld could overflow the int32 sum with activation zero point %d, "
                   "weight zero points in [%d, %d] and |bias| up to %lld (largest K: %lld); "
                   "split K",
                   (long long)p->K, za, p->zb_min, p->zb_max, (long long)p->bias_absmax,
                   (long long)kmax);
  return TP_OK;
}

/* One tile of A: a[g][r][s] = A[t mr + r, g kg + s] (minus za when wide),
 * 0 outside A; rowsum[m] = sum_k A[m,k] (wrapping). Whole groups move as
 * one 32-bit word (4 bytes, or 2 int16). */
static void pack_a_tile(const tp_qgemm_ukernel *uk, const uint8_t *a, int64_t lda, int64_t M,
                        int64_t K, int32_t za, int64_t t, int64_t kgroups, char *dst,
                        int32_t *rowsum) {
  const int mr = uk->mr, kg = uk->kg;
  const int64_t full = K / kg;
  uint32_t *d = (uint32_t *)dst; /* one word per (g, r) */
  const int all_rows = t * mr + mr <= M && K > 0;
  if (all_rows && uk->pack_a) uk->pack_a(a + t * mr * lda, lda, full, za, dst);
  int words_done = all_rows && uk->pack_a;
  if (all_rows && !uk->pack_a && !uk->wide) { /* all mr rows: word groups in order, the stores contiguous */
    const uint32_t x4 = (uint32_t)(uint8_t)uk->a_xor * 0x01010101u;
    const uint8_t *a0 = a + t * mr * lda;
    for (int64_t g = 0; g < full; g++)
      for (int r = 0; r < mr; r++) {
        uint32_t w;
        memcpy(&w, a0 + r * lda + g * 4, 4);
        d[g * mr + r] = w ^ x4;
      }
    words_done = 1;
  }
  for (int r = 0; r < mr; r++) {
    int64_t m = t * mr + r;
    if (m >= M || K == 0) {
      for (int64_t g = 0; g < kgroups; g++) d[g * mr + r] = 0;
      if (m < M && rowsum) rowsum[m] = 0;
      continue;
    }
    const uint8_t *src = a + m * lda;
    if (!uk->wide && rowsum) { /* the dot4 epilogue's row term (NULL: B symmetric, none); wide variants need none */
      uint32_t rs = 0;
      for (int64_t k = 0; k < K; k++) rs += src[k];
      rowsum[m] = (int32_t)rs;
    }
    if (!uk->wide) {
      const uint32_t x4 = (uint32_t)(uint8_t)uk->a_xor * 0x01010101u;
      if (!words_done)
        for (int64_t g = 0; g < full; g++) {
          uint32_t w;
          memcpy(&w, src + g * 4, 4);
          d[g * mr + r] = w ^ x4;
        }
      if (full < kgroups) { /* padding: any value (the packed B is 0 there) */
        uint8_t w[4] = {0, 0, 0, 0};
        for (int64_t k = full * 4; k < K; k++) w[k - full * 4] = (uint8_t)(src[k] ^ uk->a_xor);
        memcpy(&d[full * mr + r], w, 4);
      }
    } else {
      if (!(all_rows && uk->pack_a))
        for (int64_t g = 0; g < full; g++) {
          int16_t w[2] = {(int16_t)(src[2 * g] - za), (int16_t)(src[2 * g + 1] - za)};
          memcpy(&d[g * mr + r], w, 4);
        }
      if (full < kgroups) {
        int16_t w[2] = {(int16_t)(src[K - 1] - za), 0};
        memcpy(&d[full * mr + r], w, 4);
      }
    }
  }
}

/* B panels per block: the block stays in L2 while the A tiles stream. */
#define QG_BLOCK_BYTES (256 * 1024)

tp_status tp_qgemm_run(const tp_qgemm_packed *p, int64_t M, const uint8_t *a, int64_t lda,
                       int32_t za, float sa, const tp_qgemm_out *o) {
  TP_TRY(check_run(p, M, a, lda, za, sa, o));
  int64_t K = p->K, N = p->N;
  if (M == 0 || N == 0) return TP_OK;
  const tp_qgemm_ukernel *uk = p->uk;
  const int mr = uk->mr, nr = uk->nr, kg = uk->kg;
  const int64_t kgroups = p->kgroups, mtiles = (M + mr - 1) / mr;
  size_t esz = uk->wide ? 2 : 1;
  if ((double)kgroups * mr * kg * (double)esz * (double)mtiles + 12.0 * (double)(M + N) + 256 >
      QG_MAX_BYTES)
    return tp_fail(TP_ERR_OUT_OF_MEMORY,
                   "qgemm_run: %lldx%lld activations need more memory than this build can address",
                   (long long)M, (long long)K);
  size_t atile = (size_t)kgroups * mr * kg * esz;
  /* a kernel that reads whole rows of A as they are (tile_rows) packs only
   * the last, partial tile (into slot 0); the full ones read A itself */
  const int direct = uk->tile_rows && !uk->wide && !uk->a_xor && K % kg == 0 && K > 0;
  const int64_t fulltiles = M / mr, aslots = direct ? (mtiles > fulltiles ? 1 : 0) : mtiles;
  size_t abytes = (atile * (size_t)aslots + 63) / 64 * 64;
  /* one block: packed A, rowsum[M], colterm[N], mult[N] */
  size_t off_rs = abytes, off_ct = off_rs + (size_t)M * 4, off_mu = off_ct + (size_t)N * 4;
  size_t off_zb = off_mu + (size_t)N * 4;
  size_t total = (off_zb + (size_t)N * 4 + 63) / 64 * 64;
  char *scratch = aligned_alloc(64, total);
  if (!scratch)
    return tp_fail(TP_ERR_OUT_OF_MEMORY, "qgemm_run: out of memory for %lldx%lld activations",
                   (long long)M, (long long)K);
  int32_t *rowsum = (int32_t *)(scratch + off_rs), *colterm = (int32_t *)(scratch + off_ct);
  float *mult = (float *)(scratch + off_mu);
  int32_t *zbe = (int32_t *)(scratch + off_zb); /* zb + b_off */

  /* the row sums of A only multiply B's zero points: none for a symmetric B */
  int symmetric = !uk->wide && !uk->b_off && p->zb_min == 0 && p->zb_max == 0;
  for (int64_t t = direct ? fulltiles : 0; t < mtiles; t++)
    pack_a_tile(uk, a, lda, M, K, za, t, kgroups, scratch + (size_t)(direct ? 0 : t) * atile, symmetric ? NULL : rowsum);
  if (direct && !symmetric) /* the row sums of the tiles read in place */
    for (int64_t m = 0; m < fulltiles * mr; m++) {
      const uint8_t *src = a + m * lda;
      uint32_t rs = 0;
      for (int64_t k = 0; k < K; k++) rs += src[k];
      rowsum[m] = (int32_t)rs;
    }
  /* columns: colterm = K za zb - za colsum + bias (dot4) or bias (wide), wrapping */
  for (int64_t n = 0; n < N; n++) {
    uint32_t ct = (uint32_t)p->bias[n];
    if (!uk->wide) {
      uint32_t zao = (uint32_t)(za + uk->a_off);
      ct += (uint32_t)K * (uint32_t)za * (uint32_t)p->zb[n] - zao * (uint32_t)p->colsum[n] -
            (uint32_t)K * (uint32_t)uk->a_off * (uint32_t)uk->b_off;
      if (uk->b_off) zbe[n] = p->zb[n] + uk->b_off;
    }
    colterm[n] = (int32_t)ct;
    if (o->kind == TP_QGEMM_F32) mult[n] = sa * p->sb[n];
    else if (o->kind != TP_QGEMM_S32) mult[n] = sa * p->sb[n] / o->scale;
  }
  tp_qgemm_epi e = {.kind = o->kind, .relu = o->relu, .colterm = colterm,
                    .zb = uk->wide ? NULL : uk->b_off ? zbe : p->zb, .rowsum = rowsum,
                    .mult = o->kind == TP_QGEMM_S32 ? NULL : mult, .bias_f32 = o->bias_f32,
                    .zp = (float)o->zero_point};
  if (symmetric) e.zb = NULL; /* the epilogue reads no row sums */
  e.lo = o->kind == TP_QGEMM_U8 ? 0.0f : -128.0f;
  e.hi = o->kind == TP_QGEMM_U8 ? 255.0f : 127.0f;
  if (o->relu && e.lo < e.zp) e.lo = e.zp;

  int32_t tile[QG_TILE_MAX] __attribute__((aligned(64)));
  int64_t block = (int64_t)(QG_BLOCK_BYTES / (p->panel_bytes ? p->panel_bytes : 1));
  if (block < 1) block = 1;
  for (int64_t pb = 0; pb < p->npanels; pb += block) {
    int64_t pe = pb + block < p->npanels ? pb + block : p->npanels;
    for (int64_t t = 0; t < mtiles; t++) {
      const int in_place = direct && t < fulltiles;
      const char *at = scratch + (size_t)(direct ? 0 : t) * atile;
      int rows = (int)(M - t * mr < mr ? M - t * mr : mr);
      for (int64_t pn = pb; pn < pe; pn++) {
        if (in_place) uk->tile_rows(kgroups, a + t * mr * lda, lda, (const char *)p->b + (size_t)pn * p->panel_bytes, tile);
        else uk->tile(kgroups, at, (const char *)p->b + (size_t)pn * p->panel_bytes, tile);
        int cols = (int)(N - pn * nr < nr ? N - pn * nr : nr);
        uk->epi(&e, tile, nr, rows, cols, t * mr, pn * nr, o->c, o->ldc);
      }
    }
  }
  free(scratch);
  return TP_OK;
}
