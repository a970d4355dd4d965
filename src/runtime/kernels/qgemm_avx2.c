/* qgemm_avx2.c - integer GEMM micro-kernels for AVX2.
 *
 * "avx2" (wide family, 6x16 tile): A - za and B - zb are int16 (widened
 * when packed) and each vpmaddwd multiplies 8 column pairs exactly
 * (|a b| <= 255 * 255, a pair sum <= 130050). Not vpmaddubsw: its u8 x s8
 * pair sum saturates in int16 (255 * -128 * 2 = -65280), so all-255 x
 * all-(-128) inputs would come out wrong; widening costs half the
 * throughput of a byte dot product and gives the exact result on every
 * input.
 *
 * "avx2w7" (dot4 family, 4x16 tile, 7-bit weights only): vpmaddubsw +
 * vpmaddwd(ones), exact when every weight is in [-64, 63]: a pair sum is at
 * most 255 * 64 * 2 = 32640 < 32767 (ONNX Runtime's reduce_range weights).
 * tp_qgemm_pack gives it only such weights. */
#include <immintrin.h>
#include <string.h>

#include "qgemm.h"
#include "qgemm_epi.h"

enum { MR = 6, NR = 16, KG = 2 };

/* Named accumulators, not an array: GCC keeps an array of vectors on the
 * stack and copies it every iteration. */
static void tile_6x16(int64_t kgroups, const void *a_, const void *b_, int32_t *c) {
  const int16_t *a = a_;
  const int16_t *b = b_;
  __m256i c00 = _mm256_setzero_si256(), c01 = _mm256_setzero_si256();
  __m256i c10 = _mm256_setzero_si256(), c11 = _mm256_setzero_si256();
  __m256i c20 = _mm256_setzero_si256(), c21 = _mm256_setzero_si256();
  __m256i c30 = _mm256_setzero_si256(), c31 = _mm256_setzero_si256();
  __m256i c40 = _mm256_setzero_si256(), c41 = _mm256_setzero_si256();
  __m256i c50 = _mm256_setzero_si256(), c51 = _mm256_setzero_si256();
  for (int64_t g = 0; g < kgroups; g++, a += MR * KG, b += NR * KG) {
    const __m256i b0 = _mm256_loadu_si256((const __m256i *)(b + 0));
    const __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + 16));
    int32_t w;
    memcpy(&w, a + 0 * KG, 4);
    {
      const __m256i av = _mm256_set1_epi32(w);
      c00 = _mm256_add_epi32(c00, _mm256_madd_epi16(av, b0));
      c01 = _mm256_add_epi32(c01, _mm256_madd_epi16(av, b1));
    }
    memcpy(&w, a + 1 * KG, 4);
    {
      const __m256i av = _mm256_set1_epi32(w);
      c10 = _mm256_add_epi32(c10, _mm256_madd_epi16(av, b0));
      c11 = _mm256_add_epi32(c11, _mm256_madd_epi16(av, b1));
    }
    memcpy(&w, a + 2 * KG, 4);
    {
      const __m256i av = _mm256_set1_epi32(w);
      c20 = _mm256_add_epi32(c20, _mm256_madd_epi16(av, b0));
      c21 = _mm256_add_epi32(c21, _mm256_madd_epi16(av, b1));
    }
    memcpy(&w, a + 3 * KG, 4);
    {
      const __m256i av = _mm256_set1_epi32(w);
      c30 = _mm256_add_epi32(c30, _mm256_madd_epi16(av, b0));
      c31 = _mm256_add_epi32(c31, _mm256_madd_epi16(av, b1));
    }
    memcpy(&w, a + 4 * KG, 4);
    {
      const __m256i av = _mm256_set1_epi32(w);
      c40 = _mm256_add_epi32(c40, _mm256_madd_epi16(av, b0));
      c41 = _mm256_add_epi32(c41, _mm256_madd_epi16(av, b1));
    }
    memcpy(&w, a + 5 * KG, 4);
    {
      const __m256i av = _mm256_set1_epi32(w);
      c50 = _mm256_add_epi32(c50, _mm256_madd_epi16(av, b0));
      c51 = _mm256_add_epi32(c51, _mm256_madd_epi16(av, b1));
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

enum { MR7 = 4, KG7 = 4 };

static void tile7_4x16(int64_t kgroups, const void *a_, const void *b_, int32_t *c) {
  const uint8_t *a = a_;
  const int8_t *b = b_;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256i c00 = _mm256_setzero_si256(), c01 = _mm256_setzero_si256();
  __m256i c10 = _mm256_setzero_si256(), c11 = _mm256_setzero_si256();
  __m256i c20 = _mm256_setzero_si256(), c21 = _mm256_setzero_si256();
  __m256i c30 = _mm256_setzero_si256(), c31 = _mm256_setzero_si256();
#define QG_ROW7(r)                                                                        \
  do {                                                                                    \
    int32_t w;                                                                            \
    memcpy(&w, a + (r) * KG7, 4);                                                         \
    const __m256i av = _mm256_set1_epi32(w);                                              \
    c##r##0 = _mm256_add_epi32(c##r##0, _mm256_madd_epi16(_mm256_maddubs_epi16(av, b0), ones)); \
    c##r##1 = _mm256_add_epi32(c##r##1, _mm256_madd_epi16(_mm256_maddubs_epi16(av, b1), ones)); \
  } while (0)
  for (int64_t g = 0; g < kgroups; g++, a += MR7 * KG7, b += NR * KG7) {
    const __m256i b0 = _mm256_loadu_si256((const __m256i *)b);
    const __m256i b1 = _mm256_loadu_si256((const __m256i *)(b + 32));
    QG_ROW7(0);
    QG_ROW7(1);
    QG_ROW7(2);
    QG_ROW7(3);
  }
#undef QG_ROW7
  _mm256_storeu_si256((__m256i *)(c + 0 * NR), c00);
  _mm256_storeu_si256((__m256i *)(c + 0 * NR + 8), c01);
  _mm256_storeu_si256((__m256i *)(c + 1 * NR), c10);
  _mm256_storeu_si256((__m256i *)(c + 1 * NR + 8), c11);
  _mm256_storeu_si256((__m256i *)(c + 2 * NR), c20);
  _mm256_storeu_si256((__m256i *)(c + 2 * NR + 8), c21);
  _mm256_storeu_si256((__m256i *)(c + 3 * NR), c30);
  _mm256_storeu_si256((__m256i *)(c + 3 * NR + 8), c31);
}

static void epi(const tp_qgemm_epi *e, const int32_t *tile, int nr, int rows, int cols, int64_t m0,
                int64_t n0, void *out, int64_t ldc) {
  qgemm_epi_body(e, tile, nr, rows, cols, m0, n0, out, ldc);
}

const tp_qgemm_ukernel tp_qgemm_ukernel_avx2 = {
    .name = "avx2", .mr = MR, .nr = NR, .kg = KG, .wide = 1, .a_off = 0, .b_off = 0,
    .b_lo = -128, .b_hi = 127, .tile = tile_6x16, .epi = epi};

const tp_qgemm_ukernel tp_qgemm_ukernel_avx2w7 = {
    .name = "avx2w7", .mr = MR7, .nr = NR, .kg = KG7, .wide = 0, .a_off = 0, .b_off = 0,
    .b_lo = -64, .b_hi = 63, .tile = tile7_4x16, .epi = epi};
