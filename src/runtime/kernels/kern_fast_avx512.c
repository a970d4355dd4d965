/* kern_fast_avx512.c - the unary math of vec_impl.h for stax's fused
 * kernels on AVX-512: FMA contraction and reciprocal estimates (rcp14 + one
 * Newton step, about 1 ulp). Not bit-identical to tp_kernels_avx512's
 * unary_f32, which stays the exact, cross-ISA reproducible path. */
#if defined(__clang__)
#pragma clang fp contract(fast)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=fast")
#endif
#include <immintrin.h>
#define VW 16
#define SFX avx512_fast
#define ISA_NAME "avx512"
#define VEC_UNARY_ONLY
#define FAST_TRANSCENDENTALS
#define VSQRT(v) ((vf)_mm512_sqrt_ps((__m512)(v)))
static inline __m512 rcp_nr(__m512 d) {
  __m512 r = _mm512_rcp14_ps(d);
  __m512 n = _mm512_mul_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(2.0f)));
  /* d = 0 or inf: the estimate (inf or 0) is exact; Newton would give NaN */
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(n, n, _CMP_UNORD_Q), n, r);
}
#define VDIV(a, b) ((vf)_mm512_mul_ps((__m512)(a), rcp_nr((__m512)(b))))
#include "vec_impl.h"
