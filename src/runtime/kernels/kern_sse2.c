/* kern_sse2.c - x86-64 baseline: 4 lanes, 4x8 GEMM tile. Built with -msse2. */
#include <emmintrin.h>
#define VW 4
#define SFX sse2
#define ISA_NAME "sse2"
#define MR 4
#define NRV 2
#define VSQRT(v) ((vf)_mm_sqrt_ps((__m128)(v)))
#include "vec_impl.h"
