/* qgemm_epi.h - the integer GEMM epilogue (see qgemm.h), written once as
 * plain loops and included by every qgemm_<isa>.c so the compiler
 * vectorizes it with that file's ISA. Only IEEE multiply, add, compare and
 * exact conversions (no FMA contraction: -ffp-contract=off, no libm), so
 * every variant gives the same bits.
 *
 * Rounding of U8/S8 outputs is ONNX QuantizeLinear's: half to even, then
 * + zero point, then saturation. v is clamped to +-2^22 first (any value
 * beyond saturates anyway), where (v + 1.5 * 2^23) - 1.5 * 2^23 is v
 * rounded to an integer, half to even (the default rounding mode). */
#ifndef TP_KERNELS_QGEMM_EPI_H
#define TP_KERNELS_QGEMM_EPI_H
#include "qgemm.h"
#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#elif defined(__AVX512F__)
#include <immintrin.h>
#endif

/* acc = tile + colterm - zb * rowsum in wrapping int32 (unsigned: no
 * undefined overflow); zb NULL: no row term. */
#define QG_ACC(j, with_zb) \
  ((int32_t)((uint32_t)t[j] + (uint32_t)ct[j] - ((with_zb) ? (uint32_t)zb[j] * rs : 0u)))

static inline void qgemm_epi_body(const tp_qgemm_epi *e, const int32_t *tile, int nr, int rows,
                                  int cols, int64_t m0, int64_t n0, void *out, int64_t ldc) {
  const int32_t *restrict ct = e->colterm + n0;
  const int32_t *restrict zb = e->zb ? e->zb + n0 : NULL;
  const float *restrict mult = e->mult ? e->mult + n0 : NULL;
  const float *restrict bf = e->bias_f32 ? e->bias_f32 + n0 : NULL;
  const float zp = e->zp, lo = e->lo, hi = e->hi, big = 4194304.0f, magic = 12582912.0f;
  const int relu = e->relu;
  float qf[128];
  int32_t qi[128];
  for (int r = 0; r < rows; r++) {
    const int32_t *restrict t = tile + (int64_t)r * nr;
    const uint32_t rs = zb ? (uint32_t)e->rowsum[m0 + r] : 0u;
    int64_t row = (m0 + r) * ldc + n0;
    switch (e->kind) {
    case TP_QGEMM_S32: {
      int32_t *restrict o = (int32_t *)out + row;
      if (zb)
        for (int j = 0; j < cols; j++) o[j] = QG_ACC(j, 1);
      else
        for (int j = 0; j < cols; j++) o[j] = QG_ACC(j, 0);
      break;
    }
    case TP_QGEMM_F32: {
      float *restrict o = (float *)out + row;
      if (zb)
        for (int j = 0; j < cols; j++) o[j] = (float)QG_ACC(j, 1) * mult[j];
      else
        for (int j = 0; j < cols; j++) o[j] = (float)QG_ACC(j, 0) * mult[j];
      if (bf)
        for (int j = 0; j < cols; j++) o[j] = o[j] + bf[j];
      if (relu)
        for (int j = 0; j < cols; j++) o[j] = o[j] > 0.0f ? o[j] : 0.0f;
      break;
    }
    case TP_QGEMM_U8:
    case TP_QGEMM_S8: {
      uint8_t *restrict o = (uint8_t *)out + row; /* S8: the same bytes, two's complement */
      float *restrict f = qf;
      if (zb)
        for (int j = 0; j < cols; j++) f[j] = (float)QG_ACC(j, 1) * mult[j];
      else
        for (int j = 0; j < cols; j++) f[j] = (float)QG_ACC(j, 0) * mult[j];
      int j0 = 0;
#if defined(__wasm_simd128__)
      /* the same IEEE operations, 4 lanes at a time (clang's vectorized
       * form of the loop below narrows lane by lane); then the saturating
       * narrows, exact here: q is already in [lo, hi] */
      {
        const v128_t vbig = wasm_f32x4_splat(big), vnbig = wasm_f32x4_splat(-big),
                     vmagic = wasm_f32x4_splat(magic), vzp = wasm_f32x4_splat(zp),
                     vlo = wasm_f32x4_splat(lo), vhi = wasm_f32x4_splat(hi);
        for (; j0 + 4 <= cols; j0 += 4) {
          v128_t v = wasm_v128_load(f + j0);
          v = wasm_f32x4_pmax(vnbig, v); /* v < -big ? -big : v */
          v = wasm_f32x4_pmin(vbig, v);  /* big < v ? big : v */
          v = wasm_f32x4_sub(wasm_f32x4_add(v, vmagic), vmagic);
          v = wasm_f32x4_add(v, vzp);
          v = wasm_f32x4_pmax(vlo, v);
          v = wasm_f32x4_pmin(vhi, v);
          wasm_v128_store(qi + j0, wasm_i32x4_trunc_sat_f32x4(v));
        }
      }
#elif defined(__AVX512F__)
      /* the same IEEE operations 16 lanes at a time, narrowed in registers
       * (vpmovdb) and stored as bytes: the loops through qi stored whole
       * vectors and read them back in halves to narrow, a store-forwarding
       * stall per vector (this epilogue was 20% of the QDQ conv net's
       * native time). The sums are finite: max / min as the compares. */
      {
        const __m512 vbig = _mm512_set1_ps(big), vnbig = _mm512_set1_ps(-big), vmagic = _mm512_set1_ps(magic),
                     vzp = _mm512_set1_ps(zp), vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
        for (; j0 + 16 <= cols; j0 += 16) {
          __m512 v = _mm512_loadu_ps(f + j0);
          v = _mm512_min_ps(_mm512_max_ps(v, vnbig), vbig);
          v = _mm512_sub_ps(_mm512_add_ps(v, vmagic), vmagic);
          v = _mm512_add_ps(v, vzp);
          v = _mm512_min_ps(_mm512_max_ps(v, vlo), vhi);
          _mm_storeu_si128((__m128i *)(void *)(o + j0), _mm512_cvtepi32_epi8(_mm512_cvttps_epi32(v)));
        }
      }
      const int jb = j0; /* bytes written */
#endif
#if !defined(__AVX512F__) || defined(__wasm_simd128__)
      const int jb = 0;
#endif
      for (int j = j0; j < cols; j++) {
        float v = f[j];
        v = v < -big ? -big : v;
        v = v > big ? big : v;
        v = (v + magic) - magic;
        v = v + zp;
        v = v < lo ? lo : v;
        v = v > hi ? hi : v;
        qi[j] = (int32_t)v;
      }
      for (int j = jb; j < cols; j++) o[j] = (uint8_t)qi[j];
      break;
    }
    }
  }
}

#endif
