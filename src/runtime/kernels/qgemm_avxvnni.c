/* qgemm_avxvnni.c - integer GEMM micro-kernel for AVX-VNNI (dot4 family,
 * 6x16 tile): vpdpbusd ymm multiplies u8 A by s8 B four at a time and adds
 * to int32 lanes without saturation (the wrapping form, not vpdpbusds).
 * Full tiles read A's rows in place (tile_rows), as AVX512-VNNI's. */
#include <immintrin.h>
#include <string.h>

#include "qgemm.h"
#include "qgemm_epi.h"

enum { MR = 6, NR = 16, KG = 4 };

/* Named accumulators, not an array: GCC keeps an array of vectors on the
 * stack and copies it every iteration. A's word for row r, group g at
 * a + r rs + g gs: the packed tile (rs 4, gs 24) or the rows as they are
 * (rs lda, gs 4; tile_rows, as the AVX512-VNNI kernel). */
static inline __attribute__((always_inline)) void tile_body(int64_t kgroups, const uint8_t *a, int64_t rs, int64_t gs,
                                                            const int8_t *b, int32_t *c) {
  __m256i c00 = _mm256_setzero_si256(), c01 = _mm256_setzero_si256();
  __m256i c10 = _mm256_setzero_si256(), c11 = _mm256_setzero_si256();
  __m256i c20 = _mm256_setzero_si256(), c21 = _mm256_setzero_si256();
  __m256i c30 = _mm256_setzero_si256(), c31 = _mm256_setzero_si256();
  __m256i c40 = _mm256_setzero_si256(), c41 = _mm256_setzero_si256();
  __m256i c50 = _mm256_setzero_si256(), c51 = _mm256_setzero_si256();
  const uint8_t *a1 = a + rs, *a2 = a + 2 * rs, *a3 = a + 3 * rs, *a4 = a + 4 * rs, *a5 = a + 5 * rs;
  for (int64_t g = 0; g < kgroups; g++, b += NR * KG) {
    const int64_t o = g * gs;
    const __m256i b0 = _mm256_loadu_si256((const __m256i *)(b + 0));
    const __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + 32));
    int32_t w;
    memcpy(&w, a + o, 4);
    {
      const __m256i av = _mm256_set1_epi32(w);
      c00 = _mm256_dpbusd_avx_epi32(c00, av, b0);
      c01 = _mm256_dpbusd_avx_epi32(c01, av, b1);
    }
    memcpy(&w, a1 + o, 4);
    {
      const __m256i av = _mm256_set1_epi32(w);
      c10 = _mm256_dpbusd_avx_epi32(c10, av, b0);
      c11 = _mm256_dpbusd_avx_epi32(c11, av, b1);
    }
    memcpy(&w, a2 + o, 4);
    {
      const __m256i av = _mm256_set1_epi32(w);
      c20 = _mm256_dpbusd_avx_epi32(c20, av, b0);
      c21 = _mm256_dpbusd_avx_epi32(c21, av, b1);
    }
    memcpy(&w, a3 + o, 4);
    {
      const __m256i av = _mm256_set1_epi32(w);
      c30 = _mm256_dpbusd_avx_epi32(c30, av, b0);
      c31 = _mm256_dpbusd_avx_epi32(c31, av, b1);
    }
    memcpy(&w, a4 + o, 4);
    {
      const __m256i av = _mm256_set1_epi32(w);
      c40 = _mm256_dpbusd_avx_epi32(c40, av, b0);
      c41 = _mm256_dpbusd_avx_epi32(c41, av, b1);
    }
    memcpy(&w, a5 + o, 4);
    {
      const __m256i av = _mm256_set1_epi32(w);
      c50 = _mm256_dpbusd_avx_epi32(c50, av, b0);
      c51 = _mm256_dpbusd_avx_epi32(c51, av, b1);
    }
  }
  _mm256_storeu_si256((__m256i *)(c + 0 * NR + 0), c00);
  _mm256_storeu_si256((__m256i *)(c + 0 * NR + 8), c01);
  _mm256_storeu_si256((__m256i *)(c + 1 * NR + 0), c10);
  _mm256_storeu_si256((__m256i *)(c + 1 * NR + 8), c11);
  _mm256_storeu_si256((__m256i *)(c + 2 * NR + 0), c20);
  _mm256_storeu_si256((__m256i *)(c + 2 * NR + 8), c21);
  _mm256_storeu_si256((__m256i *)(c + 3 * NR + 0), c30);
  _mm256_storeu_si256((__m256i *)(c + 3 * NR + 8), c31);
  _mm256_storeu_si256((__m256i *)(c + 4 * NR + 0), c40);
  _mm256_storeu_si256((__m256i *)(c + 4 * NR + 8), c41);
  _mm256_storeu_si256((__m256i *)(c + 5 * NR + 0), c50);
  _mm256_storeu_si256((__m256i *)(c + 5 * NR + 8), c51);
}

static void tile_6x16(int64_t kgroups, const void *a, const void *b, int32_t *c) {
  tile_body(kgroups, (const uint8_t *)a, KG, MR * KG, (const int8_t *)b, c);
}

static void tile_6x16_rows(int64_t kgroups, const uint8_t *a, int64_t lda, const void *b, int32_t *c) {
  tile_body(kgroups, a, lda, KG, (const int8_t *)b, c);
}

static void epi(const tp_qgemm_epi *e, const int32_t *tile, int nr, int rows, int cols, int64_t m0,
                int64_t n0, void *out, int64_t ldc) {
  qgemm_epi_body(e, tile, nr, rows, cols, m0, n0, out, ldc);
}

const tp_qgemm_ukernel tp_qgemm_ukernel_avxvnni = {
    .name = "avxvnni", .mr = MR, .nr = NR, .kg = KG, .wide = 0, .a_off = 0, .b_off = 0,
    .b_lo = -128, .b_hi = 127, .tile = tile_6x16, .epi = epi,
    .tile_rows = tile_6x16_rows};
