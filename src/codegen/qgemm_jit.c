/* qgemm_jit.c - loads the relaxed-SIMD integer GEMM tile
 * (wasm/emit_qgemm.c) where the host has relaxed SIMD and installs it as
 * the "wasmrelaxed" qgemm variant (qgemm_jit.h). */
#include "qgemm_jit.h"

#include <stdlib.h>

#include "../core/internal.h"
#include "../runtime/qgemm.h"
#include "jit.h"

tp_status tp_qgemm_jit_install(int *installed_out) {
  static int state; /* 0 not tried, 1 installed, -1 not available */
  if (installed_out) *installed_out = 0;
#if defined(__wasm__) && defined(__wasm_simd128__)
  if (!state) {
    state = -1;
    if (tp_jit_features() & TP_JIT_FEATURE_RELAXED_SIMD) {
      uint8_t *bytes = NULL;
      size_t len = 0;
      int32_t base = -1, token = 0;
      tp_status s = tp_qgemm_jit_emit(&bytes, &len);
      if (!s) s = tp_jit_load(bytes, len, 1 | TP_JIT_SYNC_ONLY, 1, &base, &token);
      free(bytes);
      if (s) return s;
      if (base >= 0) {
        void (*tile)(int64_t, const void *, const void *, int32_t *) =
            (void (*)(int64_t, const void *, const void *, int32_t *))(uintptr_t)base;
        tp_qgemm_install_variant(tp_qgemm_ukernel_wasmrelaxed(tile));
        state = 1;
      }
    }
  }
#endif
  if (installed_out) *installed_out = state == 1;
  return TP_OK;
}
