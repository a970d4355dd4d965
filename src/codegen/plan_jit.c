/* plan_jit.c - attaches generated Wasm kernels to a plan: emit the
 * program's module (emit.c), have the host load it (jit.c), and hand the
 * plan the function-table index of each generated kernel. Anything that
 * fails leaves the plan on the executor (logged as a fallback). */
#include "jit.h"
#include "wasm/emit.h"

extern int (*tp_jit_poll_hook)(int32_t token, int32_t *base);

/* ---- max-autotune: the register tile of each generated GEMM ----
 * Per GEMM kernel, a module with the kernel emitted for tile rows 2, 3 and
 * 4 (tp_emit_gemm_variants) is loaded and each variant timed (min of 3
 * calls after a warm-up) on a zeroed scratch that every buffer of the
 * pointer table points into, with the plan's real packed B; the fastest row
 * count is used when the plan's module is emitted. Results are cached per
 * shape unless the caches are off. 5 and 6 rows (10 and 12 accumulators)
 * were 1.4-2x slower than 4 on every W1 shape measured here: V8 has 16 xmm
 * registers for SIMD128 and spills them (docs/codegen.md). Natively there is
 * no generated code to tune. */
#if defined(__wasm__)

typedef struct mr_entry { int64_t M, N, K, a_cs; int relaxed, mr; } mr_entry;
static mr_entry mr_cache[64];
static int nmr_cache;

static tp_status tune_tiles(tp_plan *pl, const tp_emit_options *eo, int use_cache, uint8_t *mr_out) {
  const tp_kir_program *p = tp_plan_program(pl);
  static const int mrs[] = {2, 3, 4};
  const int nmr = (int)(sizeof mrs / sizeof mrs[0]);
  int64_t maxb = 64;
  for (int b = 0; b < p->nbufs; b++) {
    int64_t n = tp_shape_numel(p->bufs[b].desc.ndim, p->bufs[b].desc.shape) * (int64_t)tp_dtype_size(p->bufs[b].desc.dtype);
    if (n > maxb) maxb = n;
  }
  char *scratch = tp_alloc((size_t)maxb + 64);
  int32_t *ptrs = tp_alloc(sizeof(int32_t) * (size_t)(p->nbufs + p->nkernels + 1));
  tp_status s = (!scratch || !ptrs) ? TP_ERR_OUT_OF_MEMORY : TP_OK;
  if (!s) {
    memset(scratch, 0, (size_t)maxb + 64);
    char *al = (char *)(((uintptr_t)scratch + 63) & ~(uintptr_t)63);
    for (int b = 0; b < p->nbufs; b++) ptrs[b] = (int32_t)(intptr_t)al;
    for (int k = 0; k < p->nkernels; k++) {
      const void *pb = tp_plan_packed_b(pl, k);
      ptrs[p->nbufs + k] = (int32_t)(intptr_t)(pb ? pb : al);
    }
  }
  for (int ki = 0; ki < p->nkernels && !s; ki++) {
    const tp_kir_kernel *k = &p->kernels[ki];
    if (k->kind != TP_KK_GEMM || eo->host_kernel[ki]) continue;
    int hit = 0;
    for (int i = 0; use_cache && i < nmr_cache && !hit; i++) {
      const mr_entry *c = &mr_cache[i];
      if (c->M == k->M && c->N == k->N && c->K == k->K && c->a_cs == k->a_cs && c->relaxed == eo->relaxed_simd)
        mr_out[ki] = (uint8_t)c->mr, hit = 1;
    }
    if (hit) continue;
    tp_emitted em;
    s = tp_emit_gemm_variants(p, eo, ki, nmr, mrs, &em);
    if (s == TP_ERR_UNSUPPORTED) {
      tp_clear_error();
      s = TP_OK;
      continue;
    }
    if (s) break;
    int32_t base = -1, token = 0;
    s = tp_jit_load(em.bytes, em.len, em.nfuncs | TP_JIT_SYNC_ONLY, 0, &base, &token);
    tp_emitted_clear(&em);
    if (s || token) { /* the host would compile it asynchronously (a page's main thread): keep 4 rows */
      tp_clear_error();
      s = TP_OK;
      break;
    }
    double best = 1e30;
    int best_mr = 4;
    for (int v = 0; v < nmr; v++) {
      void (*fn)(int32_t) = (void (*)(int32_t))(uintptr_t)(base + v);
      fn((int32_t)(intptr_t)ptrs);
      double t = 1e30;
      for (int r = 0; r < 3; r++) {
        double t0 = tp_now_ms();
        fn((int32_t)(intptr_t)ptrs);
        double dt = tp_now_ms() - t0;
        if (dt < t) t = dt;
      }
      if (t < best) best = t, best_mr = mrs[v];
    }
    mr_out[ki] = (uint8_t)best_mr;
    tp_plan_count_tuned(pl, 1);
    if (use_cache) {
      mr_entry *c = &mr_cache[nmr_cache < 64 ? nmr_cache++ : 63];
      *c = (mr_entry){k->M, k->N, k->K, k->a_cs, eo->relaxed_simd, best_mr};
    }
  }
  tp_free(scratch);
  tp_free(ptrs);
  return s;
}
#else
static tp_status tune_tiles(tp_plan *pl, const tp_emit_options *eo, int use_cache, uint8_t *mr_out) {
  (void)pl, (void)eo, (void)use_cache, (void)mr_out;
  return TP_OK;
}
#endif

tp_status tp_plan_codegen(tp_plan *pl, int use_cache) {
  if (!(tp_jit_features() & 1)) return TP_OK; /* not a Wasm host with SIMD128 */
  tp_jit_poll_hook = tp_jit_poll;
  const tp_kir_program *p = tp_plan_program(pl);
  tp_emitted em;
  /* a generated GEMM reads the plan's packed B: without it, the executor */
  uint8_t *host = tp_alloc((size_t)(p->nkernels ? p->nkernels : 1));
  if (!host) return TP_ERR_OUT_OF_MEMORY;
  for (int k = 0; k < p->nkernels; k++) host[k] = p->kernels[k].kind == TP_KK_GEMM && !tp_plan_packed_b(pl, k);
  uint8_t *mr = tp_alloc((size_t)(p->nkernels ? p->nkernels : 1));
  if (!mr) {
    tp_free(host);
    return TP_ERR_OUT_OF_MEMORY;
  }
  memset(mr, 0, (size_t)(p->nkernels ? p->nkernels : 1));
  tp_emit_options eo = {(tp_jit_features() & 2) != 0, 0, host, mr};
  tp_status s = p->autotune ? tune_tiles(pl, &eo, use_cache, mr) : TP_OK;
  if (!s) s = tp_emit_wasm(p, &eo, &em);
  tp_free(host);
  tp_free(mr);
  if (s == TP_ERR_UNSUPPORTED) { /* nothing to generate */
    tp_clear_error();
    return TP_OK;
  }
  if (s) return s;
  int32_t base = -1, token = 0;
  s = tp_jit_load(em.bytes, em.len, em.nfuncs + 1, use_cache, &base, &token);
  if (!s) {
    /* per kernel: its table index (or -1), then the run entry's */
    int32_t *fn = tp_alloc(sizeof(int32_t) * (size_t)(p->nkernels + 1));
    if (!fn) s = TP_ERR_OUT_OF_MEMORY;
    for (int k = 0; !s && k < p->nkernels; k++)
      fn[k] = em.kernel_func[k] < 0 ? -1 : em.kernel_func[k] + (token ? 0 : base);
    if (!s) {
      fn[p->nkernels] = em.run_func + (token ? 0 : base);
      tp_plan_attach_jit(pl, fn, token);
      /* the plan keeps the bytes, for tp_compiled_last_module */
      tp_plan_keep_jit_module(pl, em.bytes, em.len);
      em.bytes = NULL;
    }
  }
  tp_emitted_clear(&em);
  return s;
}
