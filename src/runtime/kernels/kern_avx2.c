/* kern_avx2.c - AVX2 + FMA: 8 lanes, 6x16 GEMM tile (12 accumulators). */
#include <immintrin.h>
#define VW 8
#define SFX avx2
#define ISA_NAME "avx2"
#define MR 6
#define NRV 2
#define VSQRT(v) ((vf)_mm256_sqrt_ps((__m256)(v)))
void tp_f32_vunary_ukernel_avx2_fast(int op, const float *a, float *y, int64_t n);
#define UNARY_FAST tp_f32_vunary_ukernel_avx2_fast
#include "vec_impl.h"
