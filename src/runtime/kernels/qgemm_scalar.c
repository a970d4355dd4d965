/* qgemm_scalar.c - the portable integer GEMM micro-kernel (dot4 family,
 * u8 x s8 in groups of 4, 4x16 tile): the fallback on every target and
 * the variant the others are tested against bit for bit. */
#include "qgemm.h"
#include "qgemm_epi.h"

enum { MR = 4, NR = 16, KG = 4 };

static void tile_4x16(int64_t kgroups, const void *a_, const void *b_, int32_t *c) {
  const uint8_t *a = a_;
  const int8_t *b = b_;
  uint32_t acc[MR][NR] = {{0}};
  for (int64_t g = 0; g < kgroups; g++, a += MR * KG, b += NR * KG)
    for (int r = 0; r < MR; r++)
      for (int j = 0; j < NR; j++) {
        uint32_t s = 0;
        for (int t = 0; t < KG; t++) s += (uint32_t)((int32_t)a[r * KG + t] * b[j * KG + t]);
        acc[r][j] += s;
      }
  for (int r = 0; r < MR; r++)
    for (int j = 0; j < NR; j++) c[r * NR + j] = (int32_t)acc[r][j];
}

static void epi(const tp_qgemm_epi *e, const int32_t *tile, int nr, int rows, int cols, int64_t m0,
                int64_t n0, void *out, int64_t ldc) {
  qgemm_epi_body(e, tile, nr, rows, cols, m0, n0, out, ldc);
}

const tp_qgemm_ukernel tp_qgemm_ukernel_scalar = {
    .name = "scalar", .mr = MR, .nr = NR, .kg = KG, .wide = 0, .a_off = 0, .b_off = 0,
    .b_lo = -128, .b_hi = 127, .tile = tile_4x16, .epi = epi};

/* "scalar7": the relaxed-SIMD kernel's arithmetic in portable C,
 * (A - 128)(B + 64) with 7-bit weights (A packed XOR 0x80, read signed), so tests check its offsets and
 * epilogue terms on every build (tests install it with
 * tp_qgemm_install_variant; it is never picked on its own). */
static void tile7_4x16(int64_t kgroups, const void *a_, const void *b_, int32_t *c) {
  const uint8_t *a = a_;
  const int8_t *b = b_;
  uint32_t acc[MR][NR] = {{0}};
  for (int64_t g = 0; g < kgroups; g++, a += MR * KG, b += NR * KG)
    for (int r = 0; r < MR; r++)
      for (int j = 0; j < NR; j++)
        for (int t = 0; t < KG; t++) {
          int32_t x = (int8_t)a[r * KG + t], y = b[j * KG + t]; /* A ^ 0x80 = A - 128 */
          acc[r][j] += (uint32_t)(x * y);
        }
  for (int r = 0; r < MR; r++)
    for (int j = 0; j < NR; j++) c[r * NR + j] = (int32_t)acc[r][j];
}

const tp_qgemm_ukernel tp_qgemm_ukernel_scalar7 = {
    .name = "scalar7", .mr = MR, .nr = NR, .kg = KG, .wide = 0, .a_off = -128, .b_off = 64,
    .b_lo = -64, .b_hi = 63, .a_xor = 0x80, .tile = tile7_4x16, .epi = epi};
