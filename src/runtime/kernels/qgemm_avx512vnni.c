/* qgemm_avx512vnni.c - integer GEMM micro-kernel for AVX512-VNNI (dot4
 * family, 8x32 tile): vpdpbusd zmm, 64 u8 x s8 products per instruction,
 * wrapping int32 lanes (not the saturating vpdpbusds). */
#include <immintrin.h>
#include <string.h>

#include "qgemm.h"
#include "qgemm_epi.h"

enum { MR = 8, NR = 32, KG = 4 };

/* Named accumulators, not an array: GCC keeps an array of vectors on the
 * stack and copies it every iteration. */
/* A's word for row r, group g at a + r rs + g gs: the packed tile (rs 4,
 * gs 32) or the rows as they are (rs lda, gs 4; tile_rows). */
static inline __attribute__((always_inline)) void tile_body(int64_t kgroups, const uint8_t *a, int64_t rs, int64_t gs,
                                                            const int8_t *b, int32_t *c) {
  __m512i c00 = _mm512_setzero_si512(), c01 = _mm512_setzero_si512();
  __m512i c10 = _mm512_setzero_si512(), c11 = _mm512_setzero_si512();
  __m512i c20 = _mm512_setzero_si512(), c21 = _mm512_setzero_si512();
  __m512i c30 = _mm512_setzero_si512(), c31 = _mm512_setzero_si512();
  __m512i c40 = _mm512_setzero_si512(), c41 = _mm512_setzero_si512();
  __m512i c50 = _mm512_setzero_si512(), c51 = _mm512_setzero_si512();
  __m512i c60 = _mm512_setzero_si512(), c61 = _mm512_setzero_si512();
  __m512i c70 = _mm512_setzero_si512(), c71 = _mm512_setzero_si512();
  const uint8_t *a1 = a + rs, *a2 = a + 2 * rs, *a3 = a + 3 * rs, *a4 = a + 4 * rs, *a5 = a + 5 * rs, *a6 = a + 6 * rs,
                *a7 = a + 7 * rs;
  for (int64_t g = 0; g < kgroups; g++, b += NR * KG) {
    const int64_t o = g * gs;
    const __m512i b0 = _mm512_loadu_si512((const void *)(b + 0));
    const __m512i b1 = _mm512_loadu_si512((const void *)(b + 64));
    int32_t w;
    memcpy(&w, a + o, 4);
    {
      const __m512i av = _mm512_set1_epi32(w);
      c00 = _mm512_dpbusd_epi32(c00, av, b0);
      c01 = _mm512_dpbusd_epi32(c01, av, b1);
    }
    memcpy(&w, a1 + o, 4);
    {
      const __m512i av = _mm512_set1_epi32(w);
      c10 = _mm512_dpbusd_epi32(c10, av, b0);
      c11 = _mm512_dpbusd_epi32(c11, av, b1);
    }
    memcpy(&w, a2 + o, 4);
    {
      const __m512i av = _mm512_set1_epi32(w);
      c20 = _mm512_dpbusd_epi32(c20, av, b0);
      c21 = _mm512_dpbusd_epi32(c21, av, b1);
    }
    memcpy(&w, a3 + o, 4);
    {
      const __m512i av = _mm512_set1_epi32(w);
      c30 = _mm512_dpbusd_epi32(c30, av, b0);
      c31 = _mm512_dpbusd_epi32(c31, av, b1);
    }
    memcpy(&w, a4 + o, 4);
    {
      const __m512i av = _mm512_set1_epi32(w);
      c40 = _mm512_dpbusd_epi32(c40, av, b0);
      c41 = _mm512_dpbusd_epi32(c41, av, b1);
    }
    memcpy(&w, a5 + o, 4);
    {
      const __m512i av = _mm512_set1_epi32(w);
      c50 = _mm512_dpbusd_epi32(c50, av, b0);
      c51 = _mm512_dpbusd_epi32(c51, av, b1);
    }
    memcpy(&w, a6 + o, 4);
    {
      const __m512i av = _mm512_set1_epi32(w);
      c60 = _mm512_dpbusd_epi32(c60, av, b0);
      c61 = _mm512_dpbusd_epi32(c61, av, b1);
    }
    memcpy(&w, a7 + o, 4);
    {
      const __m512i av = _mm512_set1_epi32(w);
      c70 = _mm512_dpbusd_epi32(c70, av, b0);
      c71 = _mm512_dpbusd_epi32(c71, av, b1);
    }
  }
  _mm512_storeu_si512((void *)(c + 0 * NR + 0), c00);
  _mm512_storeu_si512((void *)(c + 0 * NR + 16), c01);
  _mm512_storeu_si512((void *)(c + 1 * NR + 0), c10);
  _mm512_storeu_si512((void *)(c + 1 * NR + 16), c11);
  _mm512_storeu_si512((void *)(c + 2 * NR + 0), c20);
  _mm512_storeu_si512((void *)(c + 2 * NR + 16), c21);
  _mm512_storeu_si512((void *)(c + 3 * NR + 0), c30);
  _mm512_storeu_si512((void *)(c + 3 * NR + 16), c31);
  _mm512_storeu_si512((void *)(c + 4 * NR + 0), c40);
  _mm512_storeu_si512((void *)(c + 4 * NR + 16), c41);
  _mm512_storeu_si512((void *)(c + 5 * NR + 0), c50);
  _mm512_storeu_si512((void *)(c + 5 * NR + 16), c51);
  _mm512_storeu_si512((void *)(c + 6 * NR + 0), c60);
  _mm512_storeu_si512((void *)(c + 6 * NR + 16), c61);
  _mm512_storeu_si512((void *)(c + 7 * NR + 0), c70);
  _mm512_storeu_si512((void *)(c + 7 * NR + 16), c71);
}

static void tile_8x32(int64_t kgroups, const void *a, const void *b, int32_t *c) {
  tile_body(kgroups, (const uint8_t *)a, KG, MR * KG, (const int8_t *)b, c);
}

static void tile_8x32_rows(int64_t kgroups, const uint8_t *a, int64_t lda, const void *b, int32_t *c) {
  tile_body(kgroups, a, lda, KG, (const int8_t *)b, c);
}

static void epi(const tp_qgemm_epi *e, const int32_t *tile, int nr, int rows, int cols, int64_t m0,
                int64_t n0, void *out, int64_t ldc) {
  qgemm_epi_body(e, tile, nr, rows, cols, m0, n0, out, ldc);
}

const tp_qgemm_ukernel tp_qgemm_ukernel_avx512vnni = {
    .name = "avx512vnni", .mr = MR, .nr = NR, .kg = KG, .wide = 0, .a_off = 0, .b_off = 0,
    .b_lo = -128, .b_hi = 127, .tile = tile_8x32, .epi = epi,
    .tile_rows = tile_8x32_rows};
