/* emit.h - the SIMD128 emitter: a Kernel IR program -> one Wasm module with
 * a function per pointwise and row kernel, specialized to the program's
 * shapes (trip counts, strides and constants baked in). Plain C: the native
 * build emits the same bytes (`tpc compile --emit-wasm`) for inspection and
 * tests; a Wasm host loads them (src/codegen/jit.c).
 *
 * Each emitted kernel is (i32 ptrs) -> (): ptrs is the address of an
 * int32 array holding each buffer's byte address for this run (index =
 * buffer id), then each kernel's packed B. A GEMM kernel is (i32 ptrs, i32
 * p0, i32 p1) -> (): it computes its column panels [p0, p1) of
 * tp_emit_gemm_panels (8 columns each), so the core can split them over
 * threads; the run entry calls it with the whole range. The module imports the core's
 * memory as env.memory and exports its kernels as f0, f1, ... f(n-1), and
 * the run entry as f<n> (also named "run"): (i32 ptrs, i32 ctx) -> i32
 * calls every kernel of the program in order, the ones that are not
 * generated through the import env.tp_jit_kernel(ctx, k) -> status
 * (imported only when there are such kernels), and returns the first
 * non-zero status, or 0. One call from the core runs the whole graph.
 *
 * With params (tp_emit_options.params) the numbers of the program are not
 * in the code: every number the kernel emitters write as one (i32n, f32n,
 * memd in emit_internal.h: extents, strides, offsets, loop bounds, a
 * GEMM's M and panel counts, a mean's 1/R, a gather's offsets) is read at
 * function entry from a parameter block (tp_emitted.params) whose address
 * the pointer table holds after the packed Bs and one more slot
 * (ptrs[nbufs + nkernels + 1]; ptrs[nbufs + nkernels] is a GEMM
 * scratch's), and the loops do not depend on the extents (they run zero
 * times when short). Numbers are matched to their block entries by
 * position and call site, not by value, so two programs that differ only
 * in their numbers (a template's instantiations at two sizes,
 * docs/kernel-ir.md "Dynamic extents") give the same bytes whenever the
 * emitter decides alike, and one module, compiled once by the host,
 * serves both, each with its own block; where a number decides the code
 * (a GEMM's tile rows when M < 4, its depth blocks, a stride of 0 or 1)
 * the bytes differ and each size has its own module.
 *
 * The signature (tp_emitted.sig) hashes what the emitter wrote but the
 * numbers' values: two programs with the same signature get the same
 * bytes. It is 0 when some number did not meet its position in the second
 * pass (the bytes then depend on values). With block_only the emitter runs
 * only its first pass per kernel and gives the block and the signature:
 * the block of a module already made for that signature, at about a
 * quarter of the cost of emitting it. */
#ifndef TP_CODEGEN_WASM_EMIT_H
#define TP_CODEGEN_WASM_EMIT_H
#include "../../lower/lower.h"

typedef struct tp_emitted {
  uint8_t *bytes;     /* owned (tp_free) */
  size_t len;
  int nfuncs;         /* generated kernels (f0..f(nfuncs-1)); run is f<nfuncs> */
  int run_func;       /* export number of the run entry (= nfuncs) */
  int *kernel_func;   /* per kernel: export number f<i>, or -1 (runs in C) */
  int *epi_func;      /* per kernel: a GEMM or conv left to C whose epilogue is
                         generated (tp_kir_epilogue_kernel): its export number,
                         called after env.tp_jit_kernel(ctx, k + nkernels); else -1 */
  char *dump;         /* annotated hex dump when asked for, else NULL (tp_free) */
  uint8_t *params;    /* with params: the parameter block (owned), else NULL */
  size_t params_len;
  uint64_t sig;       /* with params: the module's signature, 0 if none (below) */
} tp_emitted;

typedef struct tp_emit_options {
  int relaxed_simd;   /* use f32x4.relaxed_madd (host feature) */
  int want_dump;
  const uint8_t *host_kernel; /* NULL, or per kernel 1: leave it to the core */
  const uint8_t *gemm_mr;     /* NULL, or per kernel: GEMM tile rows 1..6 (0: 4) */
  int params;                 /* the numbers in a parameter block (above) */
  int block_only;             /* with params: only the block and the signature, no bytes (below) */
  int split_rows;             /* pointwise and row kernels take (ptrs, r0, r1) and run the rows
                                 [r0, min(r1, rows)) of their outer loop (tp_emit_map_rows), so
                                 that the threads core splits them over the pool */
} tp_emit_options;

/* Emits every pointwise, row and GEMM kernel that the emitter supports
 * (op kernels stay in C) and the run entry. TP_ERR_UNSUPPORTED when there
 * is no kernel to generate. */
tp_status tp_emit_wasm(const tp_kir_program *p, const tp_emit_options *o, tp_emitted *out);
void tp_emitted_clear(tp_emitted *e);
/* max-autotune: a module whose exports f0..f(nmr-1) are GEMM kernel ki
 * emitted with tile rows mrs[0..nmr-1] (same signature as the kernels of
 * tp_emit_wasm). TP_ERR_UNSUPPORTED when ki is not a generated GEMM. */
tp_status tp_emit_gemm_variants(const tp_kir_program *p, const tp_emit_options *o, int ki, int nmr,
                                const int *mrs, tp_emitted *out);

/* The loop nest a generated pointwise or row kernel runs: pr itself, or
 * with rows_1d a 1-D pointwise kernel of many elements viewed as rows
 * [n / C, C] (C in 256..4096 dividing n), and a row kernel's outer dims
 * merged (size-1 ones dropped), so its rows can split. The
 * emitter views so with split_rows and no parameter block (the choice of C
 * depends on n: a module shared over sizes keeps such kernels whole). */
void tp_emit_map_view(const tp_kir_kernel *k, const tp_kir_prep *pr, int rows_1d, tp_kir_prep *view);
/* The rows of that nest's outer loop (the range r0, r1 cut); 1 when it
 * has none (one dim). */
int64_t tp_emit_map_rows(const tp_kir_kernel *k, const tp_kir_prep *pr, int rows_1d);

/* Column panels of a generated GEMM kernel (the range its p0, p1 cut). */
int64_t tp_emit_gemm_panels(const tp_kir_kernel *k);

#endif
