/* emit.h - the SIMD128 emitter: a Kernel IR program -> one Wasm module with
 * a function per pointwise and row kernel, specialized to the program's
 * shapes (trip counts, strides and constants baked in). Plain C: the native
 * build emits the same bytes (`tpc compile --emit-wasm`) for inspection and
 * tests; a Wasm host loads them (src/codegen/jit.c).
 *
 * Each emitted function is (i32 ptrs) -> (): ptrs is the address of an
 * int32 array holding each buffer's byte address for this run (index =
 * buffer id). The module imports the core's memory as env.memory and
 * exports its functions as f0, f1, ... */
#ifndef TP_CODEGEN_WASM_EMIT_H
#define TP_CODEGEN_WASM_EMIT_H
#include "../../lower/lower.h"

typedef struct tp_emitted {
  uint8_t *bytes;     /* owned (tp_xfree) */
  size_t len;
  int nfuncs;
  int *kernel_func;   /* per kernel: export number f<i>, or -1 (runs in C) */
  char *dump;         /* annotated hex dump when asked for, else NULL (tp_xfree) */
} tp_emitted;

typedef struct tp_emit_options {
  int relaxed_simd;   /* use f32x4.relaxed_madd (host feature) */
  int want_dump;
} tp_emit_options;

/* Emits every pointwise and row kernel that the emitter supports (all of
 * them today: GEMM and op kernels stay in C). TP_ERR_UNSUPPORTED when there
 * is nothing to emit. */
tp_status tp_emit_wasm(const tp_kir_program *p, const tp_emit_options *o, tp_emitted *out);
void tp_emitted_clear(tp_emitted *e);

#endif
