/* qgemm.h - integer GEMM micro-kernels: u8 activations x s8 weights -> s32,
 * one variant per ISA (qgemm_<isa>.c), and the epilogue that turns the s32
 * accumulators into int32, float32 or requantized u8/s8 outputs.
 *
 * This is the kernels layer: no checks, no errors. The checked API that
 * validates arguments, picks the variant for this CPU and reports errors
 * is src/runtime/qgemm.h (tp_qgemm_*); docs/quantization.md, "Integer kernels"
 * describes the variants, the layouts and the overflow rules.
 *
 * Two families of variants, by how a k-group is formed:
 *   dot4 (kg = 4, elements u8/s8): A and B stay 8-bit; the kernel computes
 *        raw = sum_k A[m,k] B[k,n] (u8 x s8, exact in wrapping int32) and the
 *        epilogue applies the zero points:
 *          acc = raw + colterm[n] - zb[n] * rowsum[m]
 *          colterm[n] = K za zb[n] - za colsum[n] + bias[n]
 *        scalar, AVX-VNNI (vpdpbusd ymm), AVX512-VNNI (vpdpbusd zmm).
 *   wide (kg = 2, elements int16): A - za and B - zb[n] are widened to
 *        int16 when packed, and the kernel multiplies pairs with an exact
 *        16x16 -> 32 pair dot product (vpmaddwd, i32x4.dot_i16x8_s); the
 *        epilogue adds only bias[n]. |(A-za)(B-zb)| <= 255 * 255, so a pair
 *        sum never leaves int32 and nothing saturates (unlike vpmaddubsw).
 * Every sum is computed modulo 2^32; src/runtime/qgemm.c refuses shapes
 * and zero points for which the true result could leave int32, so the
 * wrapped result is the exact one, identical on every variant. */
#ifndef TP_KERNELS_QGEMM_H
#define TP_KERNELS_QGEMM_H
#include <stddef.h>
#include <stdint.h>

enum tp_qgemm_kind { TP_QGEMM_S32, TP_QGEMM_F32, TP_QGEMM_U8, TP_QGEMM_S8, TP_QGEMM_KIND_COUNT };

/* What the epilogue needs for one call (all per-column arrays have the
 * packed N entries). */
typedef struct tp_qgemm_epi {
  int kind;             /* enum tp_qgemm_kind */
  int relu;             /* F32: max(y, 0); U8/S8: max(q, zero_point) */
  const int32_t *colterm; /* [N] added to every row (see above) */
  const int32_t *zb;    /* [N] weight zero points (dot4 only; NULL: none) */
  const int32_t *rowsum;/* [M] sum_k A[m,k] (dot4 only) */
  const float *mult;    /* [N] F32: sa sb[n]; U8/S8: sa sb[n] / sy */
  const float *bias_f32;/* [N] F32 only, added after scaling; NULL: none */
  float zp;             /* U8/S8: the output zero point */
  float lo, hi;         /* U8/S8: saturation bounds ([0,255] or [-128,127]) */
} tp_qgemm_epi;

/* One variant. The kernel computes a full mr x nr tile of raw sums over
 * kgroups groups of kg values: a is mr rows interleaved per group
 * (a[g][r][0..kg)), b one packed panel (b[g][j][0..kg)), c receives the
 * tile row-major with row stride nr. epi writes rows [0, rows) and
 * columns [0, cols) of a tile to out (a row-major C of row stride ldc,
 * elements of the epilogue's kind), m0/n0 locating the tile in C. */
typedef struct tp_qgemm_ukernel {
  const char *name;
  int mr, nr, kg;
  int wide; /* 1: int16 elements with zero points subtracted; 0: u8/s8 */
  /* dot4 only: the kernel multiplies (A + a_off)(B + b_off), b_off added
   * when B is packed (padding stays 0), and takes only weights in
   * [b_lo, b_hi] (the relaxed-SIMD kernel: a_off -128, b_off 64, weights
   * in [-64, 63], so its second operand is 7-bit); the epilogue's terms
   * remove the offsets. Others: 0, 0, -128, 127. */
  int a_off, b_off, b_lo, b_hi;
  /* dot4 only: a byte XORed into A when it is packed (0x80: the kernel
   * reads A - 128 as signed bytes, its a_off is -128); 0 for the others. */
  int a_xor;
  void (*tile)(int64_t kgroups, const void *a, const void *b, int32_t *c);
  void (*epi)(const tp_qgemm_epi *e, const int32_t *tile, int nr, int rows, int cols,
              int64_t m0, int64_t n0, void *out, int64_t ldc);
  /* Optional: packs the first `groups` whole k-groups of mr rows of A (row
   * stride lda, all rows present) into the tile layout (minus za when
   * wide); NULL: the portable loop (src/runtime/qgemm.c) does it. */
  void (*pack_a)(const uint8_t *a, int64_t lda, int64_t groups, int32_t za, void *dst);
  /* Optional (dot4, a_xor 0): tile's sums read straight from mr rows of A
   * (row stride lda, kgroups whole groups each, all rows present), no
   * packing: a row's group g is the 4 bytes at a + r lda + 4 g. NULL: none. */
  void (*tile_rows)(int64_t kgroups, const uint8_t *a, int64_t lda, const void *b, int32_t *c);
} tp_qgemm_ukernel;

extern const tp_qgemm_ukernel tp_qgemm_ukernel_scalar;
/* the relaxed-SIMD arithmetic in C, for tests (qgemm_scalar.c) */
extern const tp_qgemm_ukernel tp_qgemm_ukernel_scalar7;
#if defined(__x86_64__) || defined(__i386__)
extern const tp_qgemm_ukernel tp_qgemm_ukernel_avx2;
extern const tp_qgemm_ukernel tp_qgemm_ukernel_avx2w7; /* 7-bit weights: vpmaddubsw */
extern const tp_qgemm_ukernel tp_qgemm_ukernel_avxvnni;
extern const tp_qgemm_ukernel tp_qgemm_ukernel_avx512vnni;
#endif
#if defined(__wasm_simd128__)
extern const tp_qgemm_ukernel tp_qgemm_ukernel_wasmsimd;
/* The relaxed-SIMD variant "wasmrelaxed": its tile lives in a module of its
 * own (src/codegen/wasm/emit_qgemm.c, loaded by tp_qgemm_jit_install where
 * the host has relaxed SIMD);
 * this fills the variant around that tile function (a table index) with
 * the SIMD128 epilogue. */
const tp_qgemm_ukernel *tp_qgemm_ukernel_wasmrelaxed(void (*tile)(int64_t kgroups, const void *a,
                                                                 const void *b, int32_t *c));
#endif

#endif
