/* qgemm_avxvnni.c - integer GEMM micro-kernel for AVX-VNNI (dot4 family,
 * 6x16 tile): vpdpbusd ymm multiplies u8 A by s8 B four at a time and adds
 * to int32 lanes without saturation (the wrapping form, not vpdpbusds). */
#include <immintrin.h>
#include <string.h>

#include "qgemm.h"
#include "qgemm_epi.h"

enum { MR = 6, NR = 16, KG = 4 };

static void tile_6x16(int64_t kgroups, const void *a_, const void *b_, int32_t *c) {
  const uint8_t *a = a_;
  const int8_t *b = b_;
  __m256i acc[MR][2];
  for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
  for (int64_t g = 0; g < kgroups; g++, a += MR * KG, b += NR * KG) {
    __m256i b0 = _mm256_loadu_si256((const __m256i *)b);
    __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + 32));
    for (int r = 0; r < MR; r++) {
      int32_t quad;
      memcpy(&quad, a + r * KG, 4);
      __m256i av = _mm256_set1_epi32(quad);
      acc[r][0] = _mm256_dpbusd_avx_epi32(acc[r][0], av, b0);
      acc[r][1] = _mm256_dpbusd_avx_epi32(acc[r][1], av, b1);
    }
  }
  for (int r = 0; r < MR; r++) {
    _mm256_storeu_si256((__m256i *)(c + r * NR), acc[r][0]);
    _mm256_storeu_si256((__m256i *)(c + r * NR + 8), acc[r][1]);
  }
}

static void epi(const tp_qgemm_epi *e, const int32_t *tile, int nr, int rows, int cols, int64_t m0,
                int64_t n0, void *out, int64_t ldc) {
  qgemm_epi_body(e, tile, nr, rows, cols, m0, n0, out, ldc);
}

const tp_qgemm_ukernel tp_qgemm_ukernel_avxvnni = {
    .name = "avxvnni", .mr = MR, .nr = NR, .kg = KG, .wide = 0, .a_off = 0, .b_off = 0,
    .b_lo = -128, .b_hi = 127, .tile = tile_6x16, .epi = epi};
