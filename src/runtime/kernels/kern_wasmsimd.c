/* kern_wasmsimd.c - Wasm SIMD128: 4 lanes, 4x16 GEMM tile (16 v128 accumulators). */
#include <wasm_simd128.h>
#define VW 4
#define SFX wasmsimd
#define ISA_NAME "wasm-simd128"
#define MR 4
#define NRV 4
#define VSQRT(v) ((vf)wasm_f32x4_sqrt((v128_t)(v)))
#include "vec_impl.h"
