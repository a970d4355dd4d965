/* plan_jit.c - attaches generated Wasm kernels to a plan: emit the
 * program's module (emit.c), have the host load it (jit.c), and hand the
 * plan the function-table index of each generated kernel. Anything that
 * fails leaves the plan on the executor (logged as a fallback). */
#include "jit.h"
#include "wasm/emit.h"

extern int (*tp_jit_poll_hook)(int32_t token, int32_t *base);

tp_status tp_plan_codegen(tp_plan *pl, int use_cache) {
  if (!(tp_jit_features() & 1)) return TP_OK; /* not a Wasm host with SIMD128 */
  tp_jit_poll_hook = tp_jit_poll;
  const tp_kir_program *p = tp_plan_program(pl);
  tp_emitted em;
  /* a generated GEMM reads the plan's packed B: without it, the executor */
  uint8_t *host = tp_xmalloc((size_t)(p->nkernels ? p->nkernels : 1));
  if (!host) return TP_ERR_OUT_OF_MEMORY;
  for (int k = 0; k < p->nkernels; k++) host[k] = p->kernels[k].kind == TP_KK_GEMM && !tp_plan_packed_b(pl, k);
  tp_emit_options eo = {(tp_jit_features() & 2) != 0, 0, host};
  tp_status s = tp_emit_wasm(p, &eo, &em);
  tp_xfree(host);
  if (s == TP_ERR_UNSUPPORTED) { /* nothing to generate */
    tp_clear_error();
    return TP_OK;
  }
  if (s) return s;
  int32_t base = -1, token = 0;
  s = tp_jit_load(em.bytes, em.len, em.nfuncs + 1, use_cache, &base, &token);
  if (!s) {
    /* per kernel: its table index (or -1), then the run entry's */
    int32_t *fn = tp_xmalloc(sizeof(int32_t) * (size_t)(p->nkernels + 1));
    if (!fn) s = TP_ERR_OUT_OF_MEMORY;
    for (int k = 0; !s && k < p->nkernels; k++)
      fn[k] = em.kernel_func[k] < 0 ? -1 : em.kernel_func[k] + (token ? 0 : base);
    if (!s) {
      fn[p->nkernels] = em.run_func + (token ? 0 : base);
      tp_plan_attach_jit(pl, fn, token);
    }
  }
  tp_emitted_clear(&em);
  return s;
}
