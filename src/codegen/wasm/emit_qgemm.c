/* emit_qgemm.c - the integer GEMM's relaxed-SIMD tile as a Wasm module
 * (declared in ../qgemm_jit.h; installed by ../qgemm_jit.c). The tile is 2
 * rows x 8 columns: Node 20's baseline compiler (Liftoff, V8 11.3, relaxed
 * SIMD behind a flag) computes wrong sums with
 * i32x4.relaxed_dot_i8x16_i7x16_add_s once more than about 7 v128 locals
 * are live (a 4x8 tile's rows 2 and 3; TurboFan is right); 2x8 keeps 7 (4
 * accumulators, 2 weight vectors, the activations). */
#include <stdlib.h>
#include <string.h>

#include "../../core/internal.h"
#include "../qgemm_jit.h"
#include "writer.h"

enum { MR = 2, NR = 8, NV = NR / 4 };

static tp_status emit_tile(tp_wasm_func *f) {
  /* params: 0 n (i64), 1 a, 2 b, 3 c; locals: acc[r][v], bv[v], x */
  uint32_t acc0 = 0, b0 = 0, x = 0;
  tp_status s = tp_wasm_func_add_locals(f, MR * NV, TP_WASM_V128, &acc0);
  if (!s) s = tp_wasm_func_add_locals(f, NV, TP_WASM_V128, &b0);
  if (!s) s = tp_wasm_func_add_locals(f, 1, TP_WASM_V128, &x);
  /* if (n > 0) loop { ... } */
  if (!s) s = tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, 0);
  if (!s) s = tp_wasm_emit_i64_const(f, 0);
  if (!s) s = tp_wasm_emit(f, TP_WASM_OP_I64_GT_S);
  if (!s) s = tp_wasm_emit_block(f, TP_WASM_OP_IF, TP_WASM_BT_VOID);
  if (!s) s = tp_wasm_emit_block(f, TP_WASM_OP_LOOP, TP_WASM_BT_VOID);
  for (int v = 0; v < NV && !s; v++) { /* bv = B' columns 4v..4v+3, 4 k each */
    s = tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, 2);
    if (!s) s = tp_wasm_emit_mem(f, TP_WASM_OP_V128_LOAD, 0, (uint32_t)(16 * v));
    if (!s) s = tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_SET, b0 + (uint32_t)v);
  }
  for (int r = 0; r < MR && !s; r++) {
    /* x = splat(A[r, 4 k] ^ 0x80): A - 128 as signed bytes (XORed when
     * A was packed: tp_qgemm_ukernel_wasmrelaxed's a_xor) */
    s = tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, 1);
    if (!s) s = tp_wasm_emit_mem(f, TP_WASM_OP_V128_LOAD32_SPLAT, 0, (uint32_t)(4 * r));
    if (!s) s = tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_SET, x);
    for (int v = 0; v < NV && !s; v++) {
      uint32_t a = acc0 + (uint32_t)(r * NV + v);
      s = tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, x);
      if (!s) s = tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, b0 + (uint32_t)v);
      if (!s) s = tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, a);
      if (!s) s = tp_wasm_emit(f, TP_WASM_OP_I32X4_RELAXED_DOT_I8X16_I7X16_ADD_S);
      if (!s) s = tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_SET, a);
    }
  }
  /* a += MR * 4; b += NR * 4; if (--n > 0) continue */
  const uint32_t ptr[2] = {1, 2};
  const int32_t step[2] = {MR * 4, NR * 4};
  for (int i = 0; i < 2 && !s; i++) {
    s = tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, ptr[i]);
    if (!s) s = tp_wasm_emit_i32_const(f, step[i]);
    if (!s) s = tp_wasm_emit(f, TP_WASM_OP_I32_ADD);
    if (!s) s = tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_SET, ptr[i]);
  }
  if (!s) s = tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, 0);
  if (!s) s = tp_wasm_emit_i64_const(f, 1);
  if (!s) s = tp_wasm_emit(f, TP_WASM_OP_I64_SUB);
  if (!s) s = tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_TEE, 0);
  if (!s) s = tp_wasm_emit_i64_const(f, 0);
  if (!s) s = tp_wasm_emit(f, TP_WASM_OP_I64_GT_S);
  if (!s) s = tp_wasm_emit_br(f, TP_WASM_OP_BR_IF, 0);
  if (!s) s = tp_wasm_emit(f, TP_WASM_OP_END); /* loop */
  if (!s) s = tp_wasm_emit(f, TP_WASM_OP_END); /* if */
  /* the tile, row-major, row stride NR int32 */
  for (int r = 0; r < MR && !s; r++)
    for (int v = 0; v < NV && !s; v++) {
      s = tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, 3);
      if (!s) s = tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, acc0 + (uint32_t)(r * NV + v));
      if (!s) s = tp_wasm_emit_mem(f, TP_WASM_OP_V128_STORE, 0, (uint32_t)(r * NR * 4 + 16 * v));
    }
  return s;
}

tp_status tp_qgemm_jit_emit(uint8_t **bytes_out, size_t *len_out) {
  *bytes_out = NULL, *len_out = 0;
  tp_wasm_module *m = NULL;
  TP_TRY(tp_wasm_module_init(&m));
  const uint8_t params[4] = {TP_WASM_I64, TP_WASM_I32, TP_WASM_I32, TP_WASM_I32};
  uint32_t type = 0, fi = 0;
  tp_wasm_func *f = NULL;
  tp_wasm_limits lim = TP_WASM_CORE_MEMORY(0);
  tp_status s = tp_wasm_module_add_type(m, 4, params, 0, NULL, &type);
  if (!s) s = tp_wasm_module_import_memory(m, "env", "memory", lim);
  if (!s) s = tp_wasm_func_begin(m, type, "qgemm_relaxed_2x8", &f, &fi);
  if (!s) {
    s = emit_tile(f);
    tp_status e = tp_wasm_func_end(f);
    if (!s) s = e;
  }
  if (!s) s = tp_wasm_module_export_func(m, "f0", fi);
  const uint8_t *bytes = NULL;
  size_t len = 0;
  if (!s) s = tp_wasm_module_finish(m, &bytes, &len);
  if (!s) {
    *bytes_out = malloc(len);
    if (!*bytes_out) s = tp_fail(TP_ERR_OUT_OF_MEMORY, "qgemm_jit: out of memory");
    else memcpy(*bytes_out, bytes, len), *len_out = len;
  }
  tp_wasm_module_free(m);
  return s;
}

