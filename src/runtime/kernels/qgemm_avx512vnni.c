/* qgemm_avx512vnni.c - integer GEMM micro-kernel for AVX512-VNNI (dot4
 * family, 8x32 tile): vpdpbusd zmm, 64 u8 x s8 products per instruction,
 * wrapping int32 lanes (not the saturating vpdpbusds). */
#include <immintrin.h>
#include <string.h>

#include "qgemm.h"
#include "qgemm_epi.h"

enum { MR = 8, NR = 32, KG = 4, NB = NR / 16 };

static void tile_8x32(int64_t kgroups, const void *a_, const void *b_, int32_t *c) {
  const uint8_t *a = a_;
  const int8_t *b = b_;
  __m512i acc[MR][NB];
  for (int r = 0; r < MR; r++)
    for (int i = 0; i < NB; i++) acc[r][i] = _mm512_setzero_si512();
  for (int64_t g = 0; g < kgroups; g++, a += MR * KG, b += NR * KG) {
    __m512i bv[NB];
    for (int i = 0; i < NB; i++) bv[i] = _mm512_loadu_si512((const void *)(b + 64 * i));
    for (int r = 0; r < MR; r++) {
      int32_t quad;
      memcpy(&quad, a + r * KG, 4);
      __m512i av = _mm512_set1_epi32(quad);
      for (int i = 0; i < NB; i++) acc[r][i] = _mm512_dpbusd_epi32(acc[r][i], av, bv[i]);
    }
  }
  for (int r = 0; r < MR; r++)
    for (int i = 0; i < NB; i++) _mm512_storeu_si512((void *)(c + r * NR + 16 * i), acc[r][i]);
}

static void epi(const tp_qgemm_epi *e, const int32_t *tile, int nr, int rows, int cols, int64_t m0,
                int64_t n0, void *out, int64_t ldc) {
  qgemm_epi_body(e, tile, nr, rows, cols, m0, n0, out, ldc);
}

const tp_qgemm_ukernel tp_qgemm_ukernel_avx512vnni = {
    .name = "avx512vnni", .mr = MR, .nr = NR, .kg = KG, .wide = 0, .a_off = 0, .b_off = 0,
    .b_lo = -128, .b_hi = 127, .tile = tile_8x32, .epi = epi};
