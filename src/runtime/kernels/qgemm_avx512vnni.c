/* qgemm_avx512vnni.c - integer GEMM micro-kernel for AVX512-VNNI (dot4
 * family, 8x32 tile): vpdpbusd zmm, 64 u8 x s8 products per instruction,
 * wrapping int32 lanes (not the saturating vpdpbusds). */
#include <immintrin.h>
#include <string.h>

#include "qgemm.h"
#include "qgemm_epi.h"

enum { MR = 8, NR = 32, KG = 4 };

static void tile_8x32(int64_t kgroups, const void *a_, const void *b_, int32_t *c) {
  const uint8_t *a = a_;
  const int8_t *b = b_;
  __m512i acc[MR][2];
  for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm512_setzero_si512();
  for (int64_t g = 0; g < kgroups; g++, a += MR * KG, b += NR * KG) {
    __m512i b0 = _mm512_loadu_si512((const void *)b);
    __m512i b1 = _mm512_loadu_si512((const void *)(b + 64));
    for (int r = 0; r < MR; r++) {
      int32_t quad;
      memcpy(&quad, a + r * KG, 4);
      __m512i av = _mm512_set1_epi32(quad);
      acc[r][0] = _mm512_dpbusd_epi32(acc[r][0], av, b0);
      acc[r][1] = _mm512_dpbusd_epi32(acc[r][1], av, b1);
    }
  }
  for (int r = 0; r < MR; r++) {
    _mm512_storeu_si512((void *)(c + r * NR), acc[r][0]);
    _mm512_storeu_si512((void *)(c + r * NR + 16), acc[r][1]);
  }
}

static void epi(const tp_qgemm_epi *e, const int32_t *tile, int nr, int rows, int cols, int64_t m0,
                int64_t n0, void *out, int64_t ldc) {
  qgemm_epi_body(e, tile, nr, rows, cols, m0, n0, out, ldc);
}

const tp_qgemm_ukernel tp_qgemm_ukernel_avx512vnni = {"avx512vnni", MR, NR, KG, 0, tile_8x32, epi};
