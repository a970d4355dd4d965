/* kern_fast_avx2.c - the unary math of vec_impl.h for stax's fused kernels
 * on AVX2 + FMA: contraction and rcp_ps + one Newton step (about 1 ulp).
 * See kern_fast_avx512.c. */
#if defined(__clang__)
#pragma clang fp contract(fast)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=fast")
#endif
#include <immintrin.h>
#define VW 8
#define SFX avx2_fast
#define ISA_NAME "avx2"
#define VEC_UNARY_ONLY
#define FAST_TRANSCENDENTALS
#define VSQRT(v) ((vf)_mm256_sqrt_ps((__m256)(v)))
static inline __m256 rcp_nr(__m256 d) {
  __m256 r = _mm256_rcp_ps(d);
  __m256 n = _mm256_mul_ps(r, _mm256_fnmadd_ps(d, r, _mm256_set1_ps(2.0f)));
  /* d = 0 or inf: the estimate (inf or 0) is exact; Newton would give NaN */
  return _mm256_blendv_ps(n, r, _mm256_cmp_ps(n, n, _CMP_UNORD_Q));
}
#define VDIV(a, b) ((vf)_mm256_mul_ps((__m256)(a), rcp_nr((__m256)(b))))
#include "vec_impl.h"
