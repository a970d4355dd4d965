/* kern_avx512.c - AVX-512F: 16 lanes. GEMM comes from gemm_avx512.c
 * (intrinsics, 12x32 tile, 24 accumulators), not from the generic family. */
#include <immintrin.h>
#define VW 16
#define SFX avx512
#define ISA_NAME "avx512"
#define GEMM_EXTERNAL
#define GEMM_F32 tp_f32_gemm__avx512
#define GEMM_PACK_B_SIZE tp_f32_gemm_pack_b_size__avx512
#define GEMM_PACK_B tp_f32_gemm_pack_b__avx512
#define GEMM_F32_PACKED tp_f32_gemm_packed__avx512
#define GEMM_F32_PACKED_COLS tp_f32_gemm_packed_cols__avx512
#define GEMM_PACK_A_SIZE tp_f32_gemm_pack_a_size__avx512
#define GEMM_PACK_A tp_f32_gemm_pack_a__avx512
#define GEMM_F32_PACKED_A tp_f32_gemm_packed_a__avx512
#define GEMM_F32_PACKED_A_ROWS tp_f32_gemm_packed_a_rows__avx512
#define GEMM_TUNE tp_f32_gemm_tune__avx512
#define GEMM_RELEASE tp_f32_gemm_release__avx512
/* the float16-B GEMM (gemm_f16_impl.h) comes from the generic family */
#define MR_H 12
#define NRV_H 2
#define VSQRT(v) ((vf)_mm512_sqrt_ps((__m512)(v)))
void tp_f32_vunary_ukernel_avx512_fast(int op, const float *a, float *y, int64_t n);
#define UNARY_FAST tp_f32_vunary_ukernel_avx512_fast
#include "vec_impl.h"
