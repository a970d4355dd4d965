/* kern_wasmsimd.c - Wasm SIMD128: 4 lanes, 4x8 GEMM tile: 8 v128 accumulators,
 * 2 B vectors and 1 A splat fit the 16 XMM registers V8 allocates on x64
 * (4x16 spilled: 29-33 GFLOP/s; 4x8: 38-43 on W1, Node 20, measured here). */
#include <wasm_simd128.h>
#include "kernels.h"
#define VW 4
#define SFX wasmsimd
#define ISA_NAME "wasm-simd128"
#define MR 4
#define NRV (TP_WASMSIMD_NR / 4)
#define VSQRT(v) ((vf)wasm_f32x4_sqrt((v128_t)(v)))
void tp_f32_vunary_ukernel_wasmsimd_fast(int op, const float *a, float *y, int64_t n);
#define UNARY_FAST tp_f32_vunary_ukernel_wasmsimd_fast
#include "vec_impl.h"
