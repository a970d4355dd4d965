/* kern_avx512.c - AVX-512F: 16 lanes, 8x32 GEMM tile (16 accumulators). */
#include <immintrin.h>
#define VW 16
#define SFX avx512
#define ISA_NAME "avx512"
#define MR 8
#define NRV 2
#define VSQRT(v) ((vf)_mm512_sqrt_ps((__m512)(v)))
#include "vec_impl.h"
