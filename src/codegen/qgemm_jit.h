/* qgemm_jit.h - the integer GEMM's relaxed-SIMD micro-kernel, emitted at
 * run time with the Wasm writer and installed as the "wasmrelaxed" qgemm
 * variant where the host has relaxed SIMD (docs/quantization.md#integer-kernels).
 * A module with a relaxed-SIMD instruction does not validate on an engine
 * without it, so the kernel cannot live in the core module. */
#ifndef TP_CODEGEN_QGEMM_JIT_H
#define TP_CODEGEN_QGEMM_JIT_H
#include <stddef.h>
#include <stdint.h>

#include "../tensorplay.h"

/* The kernel module's bytes (malloc'd into *bytes_out, tp_free it): imports
 * env.memory, exports f0(kgroups i64, a i32, b i32, c i32), the 2x8 tile of
 * tp_qgemm_ukernel_wasmrelaxed: c[r][j] = sum_k (A[r,k] - 128)(B'[k,j]) with
 * A packed XOR 0x80 (read as signed bytes, A - 128) and B' = B + 64 in
 * [0, 127] (the packed 7-bit weights). */
tp_status tp_qgemm_jit_emit(uint8_t **bytes_out, size_t *len_out);

/* In a Wasm host with relaxed SIMD (env.tp_host_features): emits and loads
 * the module once and installs the variant (tp_qgemm_install_variant);
 * *installed_out (may be NULL) says whether it is installed now. Without
 * relaxed SIMD, or natively, it installs nothing and returns TP_OK. */
tp_status tp_qgemm_jit_install(int *installed_out);

#endif
