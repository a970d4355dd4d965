/* gemm_avx512.c - f32 GEMM for AVX-512F, written with intrinsics.
 *
 *   C[M,N] = A[M,K] B[K,N] (+ bias[N]), any element strides of A and B.
 *
 * Goto/BLIS structure: jc (NC columns) -> pc (KC depth) -> ic (MC rows, A
 * block packed into a buffer that stays in L2) -> jr (one NR-column B panel,
 * in L1) -> ir (one MR-row A panel) -> the MR x NR register tile.
 *
 * Micro-kernel tp_f32_gemm_ukernel_12x32__avx512: 12 rows x 2 zmm of columns
 * = 24 accumulators, 2 registers of B per k, each A element broadcast by a
 * vbroadcastss load: 24 FMAs per 14 loads, so the two FMA ports, not the
 * load ports, bound it. A 14x32 tile (28 accumulators, -DGEMM_MR=14) was
 * within noise on three W1 shapes and 7% slower on 128x3072x768 (M = 128 is
 * 9 x 14 + 2: the 2-row tile is FMA-latency bound, vs 10 x 12 + 8). Edge
 * tiles are the same kernel instantiated for every mr in 1..MR and one or
 * two vectors of columns, with masked loads and stores of C: an edge costs in
 * proportion to its size, there is no scalar path.
 *
 * Packing is vectorized: contiguous rows are copied with (masked) zmm loads,
 * transposed operands (A with unit column stride, B with unit row stride)
 * go through 8x8 in-register transposes; only other strides are scalar.
 *
 * B may be packed once ahead of time (tp_f32_gemm_pack_b__avx512) for a
 * constant weight; the packed layout is the concatenation, for each KC block
 * of depth, of ceil(N/NR) panels of kc x NR floats (zero-padded columns):
 * panel (pc, jr) starts at pc * Npad + jr * kc, Npad = round_up(N, NR). */
#include <immintrin.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "kernels.h"

#ifndef GEMM_MR
#define GEMM_MR 12 /* 12 or 14 (docs/benchmarks.md: 12 measured best) */
#endif
#define MR GEMM_MR
#define NR 32
/* Cache blocking for one core with 48 KiB L1d and 2 MiB L2 (Sapphire Rapids),
 * measured with bench/ (docs/benchmarks.md): a B panel (KC x NR x 4 = 48 KiB)
 * is read from L1/L2 for every A panel of the block, the A block (MC x KC x 4
 * = 648 KiB) stays in L2, a B block (KC x NC) in L3. KC in 256..768 and MC
 * in 12..60 panels were within noise of each other except on 128x3072x768,
 * where KC = 384 was best; prefetching the next B panel into L2 (first A panel of
 * each B panel, below) gave +10-20% on the shapes whose B does not fit L2. */
#ifndef GEMM_KC
#define GEMM_KC 384
#endif
#ifndef GEMM_MC
#define GEMM_MC (MR * 36)
#endif
#ifndef GEMM_NC
#define GEMM_NC 3072
#endif
#if defined(__wasm__) && !defined(__wasm_atomics__)
#define KTLS
#else
#define KTLS _Thread_local
#endif
/* Blocking set by max-autotune (tp_f32_gemm_tune__avx512); 0: the defaults.
 * Per thread, like the pack buffers, which are sized for the largest. */
#define KC_MAX 768
#define MC_MAX (MR * 60)
static KTLS int tune_kc, tune_mc;
#define KC (tune_kc ? (int64_t)tune_kc : (int64_t)GEMM_KC)
#define MC (tune_mc ? (int64_t)tune_mc : (int64_t)GEMM_MC)
#define NC GEMM_NC

void tp_f32_gemm_tune__avx512(int kc, int mc) {
  tune_kc = kc <= 0 ? 0 : kc < 16 ? 16 : kc > KC_MAX ? KC_MAX : kc;
  tune_mc = mc <= 0 ? 0 : mc < MR ? MR : mc > MC_MAX ? MC_MAX : mc / MR * MR;
}

#define AI static inline __attribute__((always_inline))

/* ---- packing ---- */

/* 8x8 transpose: dst[k * ds + j] = src[j * ld + k], j, k < 8. */
AI void tr8x8(const float *src, int64_t ld, float *dst, int64_t ds) {
  __m256 r0 = _mm256_loadu_ps(src), r1 = _mm256_loadu_ps(src + ld);
  __m256 r2 = _mm256_loadu_ps(src + 2 * ld), r3 = _mm256_loadu_ps(src + 3 * ld);
  __m256 r4 = _mm256_loadu_ps(src + 4 * ld), r5 = _mm256_loadu_ps(src + 5 * ld);
  __m256 r6 = _mm256_loadu_ps(src + 6 * ld), r7 = _mm256_loadu_ps(src + 7 * ld);
  __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
  __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
  __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xee);
  __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xee);
  __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xee);
  __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xee);
  _mm256_storeu_ps(dst, _mm256_permute2f128_ps(s0, s4, 0x20));
  _mm256_storeu_ps(dst + ds, _mm256_permute2f128_ps(s1, s5, 0x20));
  _mm256_storeu_ps(dst + 2 * ds, _mm256_permute2f128_ps(s2, s6, 0x20));
  _mm256_storeu_ps(dst + 3 * ds, _mm256_permute2f128_ps(s3, s7, 0x20));
  _mm256_storeu_ps(dst + 4 * ds, _mm256_permute2f128_ps(s0, s4, 0x31));
  _mm256_storeu_ps(dst + 5 * ds, _mm256_permute2f128_ps(s1, s5, 0x31));
  _mm256_storeu_ps(dst + 6 * ds, _mm256_permute2f128_ps(s2, s6, 0x31));
  _mm256_storeu_ps(dst + 7 * ds, _mm256_permute2f128_ps(s3, s7, 0x31));
}

/* dst[k * ds + j] = src[j * ld + k] for j < w, k < kc (a transposing copy).
 * Lanes w..ds-1 of each dst row are left as they are. */
static void pack_t(int64_t w, int64_t kc, const float *src, int64_t ld, float *dst, int64_t ds) {
  int64_t k = 0;
  if (w >= 8) {
    for (; k + 8 <= kc; k += 8) {
      int64_t j = 0;
      for (; j + 8 <= w; j += 8) tr8x8(src + j * ld + k, ld, dst + k * ds + j, ds);
      if (j < w) /* overlap the last full block instead of a scalar tail */
        tr8x8(src + (w - 8) * ld + k, ld, dst + k * ds + w - 8, ds);
    }
  }
  for (; k < kc; k++)
    for (int64_t j = 0; j < w; j++) dst[k * ds + j] = src[j * ld + k];
}

static inline __mmask16 lanes(int64_t n) {
  return n >= 16 ? (__mmask16)0xffff : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

/* One A panel: dst[k * MR + i] = A[i * rsa + k * csa], i < mr (rows mr..MR-1
 * are zero, so no uninitialised float is ever read). */
static void pack_a(int64_t mr, int64_t kc, const float *A, int64_t rsa, int64_t csa, float *dst) {
  if (csa == 1 && mr >= 8) {
    pack_t(mr, kc, A, rsa, dst, MR);
    if (mr < MR)
      for (int64_t k = 0; k < kc; k++) memset(dst + k * MR + mr, 0, sizeof(float) * (MR - mr));
  } else if (rsa == 1) {
    __mmask16 m = lanes(mr), mst = lanes(MR);
    for (int64_t k = 0; k < kc; k++)
      _mm512_mask_storeu_ps(dst + k * MR, mst, _mm512_maskz_loadu_ps(m, A + k * csa));
  } else {
    for (int64_t k = 0; k < kc; k++) {
      for (int64_t i = 0; i < mr; i++) dst[k * MR + i] = A[i * rsa + k * csa];
      for (int64_t i = mr; i < MR; i++) dst[k * MR + i] = 0;
    }
  }
}

/* One B panel: dst[k * NR + j] = B[k * rsb + j * csb], j < nr, zero beyond. */
static void pack_b(int64_t nr, int64_t kc, const float *B, int64_t rsb, int64_t csb, float *dst) {
  if (csb == 1) {
    if (nr == NR) {
      int64_t k = 0;
      for (; k + 2 <= kc; k += 2) {
        const float *s = B + k * rsb;
        __m512 x0 = _mm512_loadu_ps(s), x1 = _mm512_loadu_ps(s + 16);
        __m512 x2 = _mm512_loadu_ps(s + rsb), x3 = _mm512_loadu_ps(s + rsb + 16);
        _mm512_storeu_ps(dst + k * NR, x0);
        _mm512_storeu_ps(dst + k * NR + 16, x1);
        _mm512_storeu_ps(dst + k * NR + 32, x2);
        _mm512_storeu_ps(dst + k * NR + 48, x3);
      }
      for (; k < kc; k++) {
        _mm512_storeu_ps(dst + k * NR, _mm512_loadu_ps(B + k * rsb));
        _mm512_storeu_ps(dst + k * NR + 16, _mm512_loadu_ps(B + k * rsb + 16));
      }
    } else {
      __mmask16 m0 = lanes(nr), m1 = lanes(nr - 16);
      for (int64_t k = 0; k < kc; k++) {
        _mm512_storeu_ps(dst + k * NR, _mm512_maskz_loadu_ps(m0, B + k * rsb));
        _mm512_storeu_ps(dst + k * NR + 16, _mm512_maskz_loadu_ps(m1, B + k * rsb + 16));
      }
    }
  } else if (rsb == 1 && nr >= 8) {
    pack_t(nr, kc, B, csb, dst, NR);
    if (nr < NR)
      for (int64_t k = 0; k < kc; k++) memset(dst + k * NR + nr, 0, sizeof(float) * (NR - nr));
  } else {
    for (int64_t k = 0; k < kc; k++) {
      for (int64_t j = 0; j < nr; j++) dst[k * NR + j] = B[k * rsb + j * csb];
      for (int64_t j = nr; j < NR; j++) dst[k * NR + j] = 0;
    }
  }
}

/* ---- the micro-kernel ---- */

#define ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13)
#define DECL(i) __m512 c##i##_0 = _mm512_setzero_ps(), c##i##_1 = _mm512_setzero_ps();
#define PREF(i)                                                     \
  if (mr > i) {                                                     \
    _mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);         \
    if (nv == 2) _mm_prefetch((const char *)(c + i * ldc + 16), _MM_HINT_T0); \
  }
#define STEP(i)                                                \
  if (mr > i) {                                                \
    __m512 a_ = _mm512_set1_ps(a[i]);                          \
    c##i##_0 = _mm512_fmadd_ps(a_, b0, c##i##_0);              \
    if (nv == 2) c##i##_1 = _mm512_fmadd_ps(a_, b1, c##i##_1); \
  }
#define STORE(i)                                                                      \
  if (mr > i) {                                                                       \
    float *p = c + i * ldc;                                                           \
    _mm512_mask_storeu_ps(p, m0, _mm512_add_ps(first ? bias0 : _mm512_maskz_loadu_ps(m0, p), \
                                               c##i##_0));                           \
    if (nv == 2)                                                                      \
      _mm512_mask_storeu_ps(p + 16, m1,                                               \
                            _mm512_add_ps(first ? bias1 : _mm512_maskz_loadu_ps(m1, p + 16), \
                                          c##i##_1));                                 \
  }

/* C[mr x nr] (+)= a_panel (kc x MR) * b_panel (kc x NR). first: C is
 * overwritten with bias + product (bias may be NULL), else accumulated.
 * mr and nv (vectors of columns, 1 or 2) are compile-time constants in every
 * instantiation, so the accumulators are named registers (an array of them
 * is not reliably kept in registers); nr only sets the store masks. */
AI void ukernel(const int mr, const int nv, int64_t kc, const float *restrict a,
                const float *restrict b, float *restrict c, int64_t ldc, int first,
                const float *restrict bias, int64_t nr, const float *pf,
                int64_t pfs) {
  ROWS(DECL)
  ROWS(PREF)
  for (int64_t k = 0; k < kc; k++) {
    __m512 b0 = _mm512_loadu_ps(b);
    __m512 b1 = nv == 2 ? _mm512_loadu_ps(b + 16) : b0;
    if (pf) { /* the next B panel (packed, or its source rows), into L2 */
      _mm_prefetch((const char *)(pf + k * pfs), _MM_HINT_T1);
      _mm_prefetch((const char *)(pf + k * pfs + 16), _MM_HINT_T1);
    }
    ROWS(STEP)
    a += MR;
    b += NR;
  }
  __mmask16 m0 = lanes(nr), m1 = lanes(nr - 16);
  __m512 bias0 = _mm512_setzero_ps(), bias1 = _mm512_setzero_ps();
  if (first && bias) {
    bias0 = _mm512_maskz_loadu_ps(m0, bias);
    if (nv == 2) bias1 = _mm512_maskz_loadu_ps(m1, bias + 16);
  }
  ROWS(STORE)
}
#undef ROWS
#undef DECL
#undef PREF
#undef STEP
#undef STORE

typedef void (*ukernel_fn)(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                           int first, const float *bias, int64_t nr, const float *pf,
                           int64_t pfs);

#define UK(m, v)                                                                              \
  static void tp_f32_gemm_ukernel_##m##x##v##__avx512(int64_t kc, const float *a,          \
                                                       const float *b, float *c, int64_t ldc, \
                                                       int first, const float *bias,          \
                                                       int64_t nr, const float *pf,           \
                                                       int64_t pfs) {                         \
    ukernel(m, v, kc, a, b, c, ldc, first, bias, nr, pf, pfs);                                      \
  }
#define UK2(m) UK(m, 1) UK(m, 2)
UK2(1) UK2(2) UK2(3) UK2(4) UK2(5) UK2(6) UK2(7) UK2(8) UK2(9) UK2(10) UK2(11) UK2(12)
#if MR > 12
UK2(13) UK2(14)
#endif
#undef UK2
#undef UK

/* ukernels[mr - 1][nv - 1] */
#define ROW(m) {tp_f32_gemm_ukernel_##m##x1__avx512, tp_f32_gemm_ukernel_##m##x2__avx512}
static const ukernel_fn ukernels[MR][2] = {
    ROW(1), ROW(2), ROW(3), ROW(4), ROW(5), ROW(6), ROW(7), ROW(8), ROW(9), ROW(10), ROW(11),
    ROW(12),
#if MR > 12
    ROW(13), ROW(14),
#endif
};
#undef ROW

/* ---- the driver ---- */


static KTLS float *pack_a_buf, *pack_b_buf;

void tp_f32_gemm_release__avx512(void) {
  free(pack_a_buf);
  free(pack_b_buf);
  pack_a_buf = pack_b_buf = NULL;
}

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

static void gemm_scalar(int64_t M, int64_t N, int64_t K, const float *A, int64_t rsa, int64_t csa,
                        const float *B, int64_t rsb, int64_t csb, float *C, int64_t ldc,
                        const float *bias) {
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      float s = bias ? bias[j] : 0.0f;
      for (int64_t k = 0; k < K; k++) s += A[i * rsa + k * csa] * B[k * rsb + j * csb];
      C[i * ldc + j] = s;
    }
}

/* pb: pre-packed B (layout in the header comment) or NULL to pack B here.
 * pap: pre-packed A (per KC block, MR x kc panels at pap + pc *
 * round_up(M, MR) + i * kc) or NULL to pack A here; A is then not read.
 * Only columns [j0, j1) of C are computed (j0 a multiple of NR with pb). */
static void gemm_drive(int64_t M, int64_t N, int64_t K, const float *A, int64_t rsa, int64_t csa,
                       const float *B, int64_t rsb, int64_t csb, const float *pb, const float *pap,
                       float *C, int64_t ldc, const float *bias, int64_t j0, int64_t j1, int64_t i0,
                       int64_t i1) {
  if (M <= 0 || N <= 0 || j0 >= j1 || i0 >= i1) return;
  if (K <= 0) {
    for (int64_t i = i0; i < i1; i++)
      for (int64_t j = j0; j < j1; j++) C[i * ldc + j] = bias ? bias[j] : 0.0f;
    return;
  }
  if (!pack_a_buf) pack_a_buf = aligned_alloc(64, sizeof(float) * (size_t)MC_MAX * KC_MAX);
  if (!pb && !pack_b_buf) pack_b_buf = aligned_alloc(64, sizeof(float) * (size_t)KC_MAX * NC);
  if (!pack_a_buf || (!pb && !pack_b_buf)) { /* out of memory: unpacked fallback */
    if (pap) { /* read A and B back out of their panels */
      int64_t Np = round_up(N, NR), Mp = round_up(M, MR);
      for (int64_t i = i0; i < i1; i++)
        for (int64_t j = j0; j < j1; j++) {
          float s = bias ? bias[j] : 0.0f;
          for (int64_t k = 0; k < K; k++) {
            int64_t pc = k / KC * KC, kc = K - pc < KC ? K - pc : KC;
            float b = pb ? pb[pc * Np + (j / NR * NR) * kc + (k - pc) * NR + j % NR] : B[k * rsb + j * csb];
            s += pap[pc * Mp + (i / MR * MR) * kc + (k - pc) * MR + i % MR] * b;
          }
          C[i * ldc + j] = s;
        }
    } else if (pb) { /* read B back out of its panels */
      int64_t Np = round_up(N, NR);
      for (int64_t i = i0; i < i1; i++)
        for (int64_t j = j0; j < j1; j++) {
          float s = bias ? bias[j] : 0.0f;
          for (int64_t k = 0; k < K; k++) {
            int64_t pc = k / KC * KC, kc = K - pc < KC ? K - pc : KC;
            s += A[i * rsa + k * csa] * pb[pc * Np + (j / NR * NR) * kc + (k - pc) * NR + j % NR];
          }
          C[i * ldc + j] = s;
        }
    } else {
      gemm_scalar(i1 - i0, j1 - j0, K, A + i0 * rsa, rsa, csa, B + j0 * csb, rsb, csb, C + i0 * ldc + j0, ldc,
                  bias ? bias + j0 : NULL);
    }
    return;
  }
  int64_t Np = round_up(N, NR);
  float *pa = pack_a_buf;
  for (int64_t jc = j0; jc < j1; jc += NC) {
    int64_t nc = j1 - jc < NC ? j1 - jc : NC;
    for (int64_t pc = 0; pc < K; pc += KC) {
      int64_t kc = K - pc < KC ? K - pc : KC;
      const float *bb = pb ? pb + pc * Np + jc * kc : pack_b_buf;
      const float *bias_j = bias && pc == 0 ? bias + jc : NULL;
      for (int64_t ic = i0; ic < i1; ic += MC) {
        int64_t mc = i1 - ic < MC ? i1 - ic : MC;
        if (pap)
          pa = (float *)(pap + pc * round_up(M, MR) + ic * kc);
        else
          for (int64_t ir = 0; ir < mc; ir += MR) {
            int64_t mr = mc - ir < MR ? mc - ir : MR;
            pack_a(mr, kc, A + (ic + ir) * rsa + pc * csa, rsa, csa, pa + ir * kc);
          }
        for (int64_t jr = 0; jr < nc; jr += NR) {
          int64_t nr = nc - jr < NR ? nc - jr : NR;
          /* pack each B panel just before its first use, so it is hot */
          if (!pb && ic == i0)
            pack_b(nr, kc, B + pc * rsb + (jc + jr) * csb, rsb, csb, pack_b_buf + jr * kc);
          int nv = nr > 16 ? 2 : 1;
          /* what the first A panel prefetches: the next packed B panel, or
           * the rows it will be packed from (only contiguous rows) */
          const float *pf = NULL;
          int64_t pfs = NR;
          if (jr + NR < nc) {
            if (pb)
              pf = bb + (jr + NR) * kc;
            else if (ic == i0 && csb == 1)
              pf = B + pc * rsb + jc + jr + NR, pfs = rsb;
          }
          for (int64_t ir = 0; ir < mc; ir += MR) {
            int64_t mr = mc - ir < MR ? mc - ir : MR;
            ukernels[mr - 1][nv - 1](kc, pa + ir * kc, bb + jr * kc, C + (ic + ir) * ldc + jc + jr,
                                     ldc, pc == 0, bias_j ? bias_j + jr : NULL, nr,
                                     ir == 0 ? pf : NULL, pfs);
          }
        }
      }
    }
  }
}

void tp_f32_gemm__avx512(int64_t M, int64_t N, int64_t K, const float *A, int64_t rsa,
                         int64_t csa, const float *B, int64_t rsb, int64_t csb, float *C,
                         int64_t ldc, const float *bias) {
  gemm_drive(M, N, K, A, rsa, csa, B, rsb, csb, NULL, NULL, C, ldc, bias, 0, N, 0, M);
}

size_t tp_f32_gemm_pack_b_size__avx512(int64_t K, int64_t N) {
  if (K <= 0 || N <= 0) return 0;
  return sizeof(float) * (size_t)K * (size_t)round_up(N, NR);
}

void tp_f32_gemm_pack_b__avx512(int64_t K, int64_t N, const float *B, int64_t rsb, int64_t csb,
                                float *packed_out) {
  if (K <= 0 || N <= 0) return;
  int64_t Np = round_up(N, NR);
  for (int64_t pc = 0; pc < K; pc += KC) {
    int64_t kc = K - pc < KC ? K - pc : KC;
    for (int64_t jr = 0; jr < N; jr += NR) {
      int64_t nr = N - jr < NR ? N - jr : NR;
      pack_b(nr, kc, B + pc * rsb + jr * csb, rsb, csb, packed_out + pc * Np + jr * kc);
    }
  }
}

void tp_f32_gemm_packed__avx512(int64_t M, int64_t N, int64_t K, const float *A, int64_t rsa,
                                int64_t csa, const float *packed_b, float *C, int64_t ldc,
                                const float *bias) {
  gemm_drive(M, N, K, A, rsa, csa, NULL, 0, 0, packed_b, NULL, C, ldc, bias, 0, N, 0, M);
}

size_t tp_f32_gemm_pack_a_size__avx512(int64_t M, int64_t K) {
  if (K <= 0 || M <= 0) return 0;
  return sizeof(float) * (size_t)K * (size_t)round_up(M, MR);
}

void tp_f32_gemm_pack_a__avx512(int64_t M, int64_t K, const float *A, int64_t rsa, int64_t csa,
                                float *packed_out) {
  if (K <= 0 || M <= 0) return;
  int64_t Mp = round_up(M, MR);
  for (int64_t pc = 0; pc < K; pc += KC) {
    int64_t kc = K - pc < KC ? K - pc : KC;
    for (int64_t ir = 0; ir < M; ir += MR) {
      int64_t mr = M - ir < MR ? M - ir : MR;
      pack_a(mr, kc, A + ir * rsa + pc * csa, rsa, csa, packed_out + pc * Mp + ir * kc);
    }
  }
}

void tp_f32_gemm_packed_a__avx512(int64_t M, int64_t N, int64_t K, const float *packed_a,
                                  const float *B, int64_t rsb, int64_t csb, float *C, int64_t ldc,
                                  const float *bias) {
  gemm_drive(M, N, K, NULL, 0, 0, B, rsb, csb, NULL, packed_a, C, ldc, bias, 0, N, 0, M);
}

void tp_f32_gemm_packed_a_rows__avx512(int64_t M, int64_t N, int64_t K, const float *packed_a, int64_t i0,
                                       int64_t i1, const float *B, int64_t rsb, int64_t csb, float *C,
                                       int64_t ldc, const float *bias) {
  if (i0 < 0 || i1 > M || i0 % MR) return; /* the caller's contract (kernels.h) */
  gemm_drive(M, N, K, NULL, 0, 0, B, rsb, csb, NULL, packed_a, C, ldc, bias, 0, N, i0, i1);
}

void tp_f32_gemm_packed_cols__avx512(int64_t M, int64_t N, int64_t K, const float *A, int64_t rsa,
                                     int64_t csa, const float *packed_b, int64_t j0, int64_t j1,
                                     float *C, int64_t ldc, const float *bias) {
  if (j0 < 0 || j1 > N || j0 % NR) return; /* the caller's contract (kernels.h) */
  gemm_drive(M, N, K, A, rsa, csa, NULL, 0, 0, packed_b, NULL, C, ldc, bias, j0, j1, 0, M);
}
