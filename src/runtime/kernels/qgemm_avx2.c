/* qgemm_avx2.c - integer GEMM micro-kernel for AVX2 (wide family, 6x16
 * tile): A - za and B - zb are int16 (widened when packed) and each
 * vpmaddwd multiplies 8 column pairs exactly (|a b| <= 255 * 255, a pair
 * sum <= 130050). Not vpmaddubsw: its u8 x s8 pair sum saturates in int16
 * (255 * -128 * 2 = -65280), so all-255 x all-(-128) inputs would come out
 * wrong; widening costs half the throughput of a byte dot product and
 * gives the exact result on every input. */
#include <immintrin.h>
#include <string.h>

#include "qgemm.h"
#include "qgemm_epi.h"

enum { MR = 6, NR = 16, KG = 2 };

static void tile_6x16(int64_t kgroups, const void *a_, const void *b_, int32_t *c) {
  const int16_t *a = a_, *b = b_;
  __m256i acc[MR][2];
  for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = _mm256_setzero_si256();
  for (int64_t g = 0; g < kgroups; g++, a += MR * KG, b += NR * KG) {
    __m256i b0 = _mm256_loadu_si256((const __m256i *)b);
    __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + 16));
    for (int r = 0; r < MR; r++) {
      int32_t pair;
      memcpy(&pair, a + r * KG, 4);
      __m256i av = _mm256_set1_epi32(pair);
      acc[r][0] = _mm256_add_epi32(acc[r][0], _mm256_madd_epi16(av, b0));
      acc[r][1] = _mm256_add_epi32(acc[r][1], _mm256_madd_epi16(av, b1));
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

const tp_qgemm_ukernel tp_qgemm_ukernel_avx2 = {
    .name = "avx2", .mr = MR, .nr = NR, .kg = KG, .wide = 1, .a_off = 0, .b_off = 0,
    .b_lo = -128, .b_hi = 127, .tile = tile_6x16, .epi = epi};
