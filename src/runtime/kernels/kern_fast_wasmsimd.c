/* kern_fast_wasmsimd.c - the fast unary family on SIMD128 (stax's fused
 * kernels in the executor): rational tanh and tanh-based sigmoid, true
 * division (Wasm has no reciprocal estimate), no FMA. The code generator
 * emits exactly these operations, so generated kernels and the executor
 * agree to the bit. */
#include <wasm_simd128.h>
#define VW 4
#define SFX wasmsimd_fast
#define ISA_NAME "wasm-simd128"
#define VEC_UNARY_ONLY
#define FAST_TRANSCENDENTALS
#define VSQRT(v) ((vf)wasm_f32x4_sqrt((v128_t)(v)))
#include "vec_impl.h"
