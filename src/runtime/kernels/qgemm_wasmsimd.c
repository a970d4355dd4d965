/* qgemm_wasmsimd.c - integer GEMM micro-kernel for Wasm SIMD128 (wide
 * family, 4x8 tile): A - za and B - zb are int16 (widened when packed) and
 * i32x4.dot_i16x8_s multiplies 4 column pairs exactly (|a b| <= 255 * 255).
 * SIMD128 has no byte dot product; the relaxed-SIMD one
 * (i32x4.relaxed_dot_i8x16_i7x16_add_s) is not in the core module (a core
 * using it would not validate on hosts without relaxed SIMD). */
#include <string.h>
#include <wasm_simd128.h>

#include "qgemm.h"
#include "qgemm_epi.h"

enum { MR = 4, NR = 8, KG = 2 };

static void tile_4x8(int64_t kgroups, const void *a_, const void *b_, int32_t *c) {
  const int16_t *a = a_, *b = b_;
  v128_t acc[MR][2];
  for (int r = 0; r < MR; r++) acc[r][0] = acc[r][1] = wasm_i32x4_splat(0);
  for (int64_t g = 0; g < kgroups; g++, a += MR * KG, b += NR * KG) {
    v128_t b0 = wasm_v128_load(b), b1 = wasm_v128_load(b + 8);
    for (int r = 0; r < MR; r++) {
      int32_t pair;
      memcpy(&pair, a + r * KG, 4);
      v128_t av = wasm_i32x4_splat(pair);
      acc[r][0] = wasm_i32x4_add(acc[r][0], wasm_i32x4_dot_i16x8(av, b0));
      acc[r][1] = wasm_i32x4_add(acc[r][1], wasm_i32x4_dot_i16x8(av, b1));
    }
  }
  for (int r = 0; r < MR; r++) {
    wasm_v128_store(c + r * NR, acc[r][0]);
    wasm_v128_store(c + r * NR + 4, acc[r][1]);
  }
}

static void epi(const tp_qgemm_epi *e, const int32_t *tile, int nr, int rows, int cols, int64_t m0,
                int64_t n0, void *out, int64_t ldc) {
  qgemm_epi_body(e, tile, nr, rows, cols, m0, n0, out, ldc);
}

const tp_qgemm_ukernel tp_qgemm_ukernel_wasmsimd = {
    .name = "wasmsimd", .mr = MR, .nr = NR, .kg = KG, .wide = 1, .a_off = 0, .b_off = 0,
    .b_lo = -128, .b_hi = 127, .tile = tile_4x8, .epi = epi};

/* "wasmrelaxed": 2x8 dot4 tile from qgemm_relaxed.wat; see qgemm.h. */
const tp_qgemm_ukernel *tp_qgemm_ukernel_wasmrelaxed(void (*tile)(int64_t kgroups, const void *a,
                                                                 const void *b, int32_t *c)) {
  static tp_qgemm_ukernel uk = {.name = "wasmrelaxed", .mr = 2, .nr = 8, .kg = 4, .wide = 0,
                                .a_off = -128, .b_off = 64, .b_lo = -64, .b_hi = 63, .epi = epi};
  uk.tile = tile;
  return tile ? &uk : NULL;
}
