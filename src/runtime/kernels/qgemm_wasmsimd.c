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

/* Named accumulators, not an array: GCC keeps an array of vectors on the
 * stack and copies it every iteration. */
static void tile_4x8(int64_t kgroups, const void *a_, const void *b_, int32_t *c) {
  const int16_t *a = a_;
  const int16_t *b = b_;
  v128_t c00 = wasm_i32x4_splat(0), c01 = wasm_i32x4_splat(0);
  v128_t c10 = wasm_i32x4_splat(0), c11 = wasm_i32x4_splat(0);
  v128_t c20 = wasm_i32x4_splat(0), c21 = wasm_i32x4_splat(0);
  v128_t c30 = wasm_i32x4_splat(0), c31 = wasm_i32x4_splat(0);
  for (int64_t g = 0; g < kgroups; g++, a += MR * KG, b += NR * KG) {
    const v128_t b0 = wasm_v128_load(b + 0);
    const v128_t b1 = wasm_v128_load(b + 8);
    int32_t w;
    memcpy(&w, a + 0 * KG, 4);
    {
      const v128_t av = wasm_i32x4_splat(w);
      c00 = wasm_i32x4_add(c00, wasm_i32x4_dot_i16x8(av, b0));
      c01 = wasm_i32x4_add(c01, wasm_i32x4_dot_i16x8(av, b1));
    }
    memcpy(&w, a + 1 * KG, 4);
    {
      const v128_t av = wasm_i32x4_splat(w);
      c10 = wasm_i32x4_add(c10, wasm_i32x4_dot_i16x8(av, b0));
      c11 = wasm_i32x4_add(c11, wasm_i32x4_dot_i16x8(av, b1));
    }
    memcpy(&w, a + 2 * KG, 4);
    {
      const v128_t av = wasm_i32x4_splat(w);
      c20 = wasm_i32x4_add(c20, wasm_i32x4_dot_i16x8(av, b0));
      c21 = wasm_i32x4_add(c21, wasm_i32x4_dot_i16x8(av, b1));
    }
    memcpy(&w, a + 3 * KG, 4);
    {
      const v128_t av = wasm_i32x4_splat(w);
      c30 = wasm_i32x4_add(c30, wasm_i32x4_dot_i16x8(av, b0));
      c31 = wasm_i32x4_add(c31, wasm_i32x4_dot_i16x8(av, b1));
    }
  }
  wasm_v128_store(c + 0 * NR + 0, c00);
  wasm_v128_store(c + 0 * NR + 4, c01);
  wasm_v128_store(c + 1 * NR + 0, c10);
  wasm_v128_store(c + 1 * NR + 4, c11);
  wasm_v128_store(c + 2 * NR + 0, c20);
  wasm_v128_store(c + 2 * NR + 4, c21);
  wasm_v128_store(c + 3 * NR + 0, c30);
  wasm_v128_store(c + 3 * NR + 4, c31);
}

/* A's whole groups of 4 rows: 4 groups (8 bytes) of each row widened to
 * int16 minus za, then a 4x4 transpose of their 32-bit pairs, so each
 * group's 4 row pairs are contiguous (a[g][r][0..2)). */
static void pack_a_4x2(const uint8_t *a, int64_t lda, int64_t groups, int32_t za, void *dst_) {
  int16_t *dst = dst_;
  const uint8_t *r0 = a, *r1 = a + lda, *r2 = a + 2 * lda, *r3 = a + 3 * lda;
  const v128_t z = wasm_i16x8_splat((int16_t)za);
  int64_t g = 0;
  for (; g + 4 <= groups; g += 4) {
    v128_t x0 = wasm_i16x8_sub(wasm_u16x8_load8x8(r0 + 2 * g), z);
    v128_t x1 = wasm_i16x8_sub(wasm_u16x8_load8x8(r1 + 2 * g), z);
    v128_t x2 = wasm_i16x8_sub(wasm_u16x8_load8x8(r2 + 2 * g), z);
    v128_t x3 = wasm_i16x8_sub(wasm_u16x8_load8x8(r3 + 2 * g), z);
    v128_t t0 = wasm_i32x4_shuffle(x0, x1, 0, 4, 1, 5), t1 = wasm_i32x4_shuffle(x2, x3, 0, 4, 1, 5);
    v128_t t2 = wasm_i32x4_shuffle(x0, x1, 2, 6, 3, 7), t3 = wasm_i32x4_shuffle(x2, x3, 2, 6, 3, 7);
    int16_t *o = dst + g * MR * KG;
    wasm_v128_store(o, wasm_i32x4_shuffle(t0, t1, 0, 1, 4, 5));
    wasm_v128_store(o + 8, wasm_i32x4_shuffle(t0, t1, 2, 3, 6, 7));
    wasm_v128_store(o + 16, wasm_i32x4_shuffle(t2, t3, 0, 1, 4, 5));
    wasm_v128_store(o + 24, wasm_i32x4_shuffle(t2, t3, 2, 3, 6, 7));
  }
  for (; g < groups; g++)
    for (int r = 0; r < MR; r++) {
      const uint8_t *src = a + r * lda;
      dst[(g * MR + r) * KG] = (int16_t)(src[2 * g] - za);
      dst[(g * MR + r) * KG + 1] = (int16_t)(src[2 * g + 1] - za);
    }
}

static void epi(const tp_qgemm_epi *e, const int32_t *tile, int nr, int rows, int cols, int64_t m0,
                int64_t n0, void *out, int64_t ldc) {
  qgemm_epi_body(e, tile, nr, rows, cols, m0, n0, out, ldc);
}

const tp_qgemm_ukernel tp_qgemm_ukernel_wasmsimd = {
    .name = "wasmsimd", .mr = MR, .nr = NR, .kg = KG, .wide = 1, .a_off = 0, .b_off = 0,
    .b_lo = -128, .b_hi = 127, .tile = tile_4x8, .epi = epi, .pack_a = pack_a_4x2};

/* "wasmrelaxed": the 2x8 dot4 tile of src/codegen/wasm/emit_qgemm.c; see qgemm.h. */
const tp_qgemm_ukernel *tp_qgemm_ukernel_wasmrelaxed(void (*tile)(int64_t kgroups, const void *a,
                                                                 const void *b, int32_t *c)) {
  static tp_qgemm_ukernel uk = {.name = "wasmrelaxed", .mr = 2, .nr = 8, .kg = 4, .wide = 0,
                                .a_off = -128, .b_off = 64, .b_lo = -64, .b_hi = 63,
                                .a_xor = 0x80, .epi = epi};
  uk.tile = tile;
  return tile ? &uk : NULL;
}
