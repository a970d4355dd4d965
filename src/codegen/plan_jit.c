/* plan_jit.c - generated Wasm kernels as lower's accelerator
 * (tp_wasm_accel, lower.h's tp_lower_accel): prepare emits the program's
 * module (emit.c) and has the host load it (jit.c); run calls the module's
 * run entry, which calls back into the executor (tp_plan_run_kernel) for
 * the kernels it does not generate. Anything that fails in prepare leaves
 * the plan on the executor (the stax backend logs it as a fallback).
 *
 * Threads: the per-plan state is used by the plan's one thread; the tile
 * cache is a locked tp_tune_cache. On the Wasm threads core a generated
 * GEMM of at least 2 SPLIT_GEMM_FLOPS splits its column panels over the
 * pool (jit_run): the host installs every generated module in each
 * worker's function table at the main thread's index, and the pool gives
 * no chunk to a worker that has not installed the latest module yet
 * (tp_pool_jit_published, pool.c). The generated pointwise and row kernels
 * of such a core take a row range (split_rows, emit.h) and split their rows
 * over the pool the same way. */
#include "jit.h"
#include "wasm/emit.h"
#include "../runtime/pool.h"

/* A generated GEMM splits its panels over the pool from 2 x this many
 * FLOPs (2 M N K), in chunks of at least this many: the executor's
 * PAR_GEMM_FLOPS (docs/benchmarks-threads.md, threads-wasm). */
#define SPLIT_GEMM_FLOPS 4000000
/* A generated pointwise or row kernel splits its rows (split_rows) in
 * chunks of at least SPLIT_MAP_WORK (2 x that in all): elements weighted
 * by the kernel's work per element (1, plus SPLIT_UNARY_WEIGHT per unary
 * function such as exp or tanh), a row kernel counting SPLIT_ROW_COST more
 * elements per row. Measured in Node (W4 on the threads core): with the
 * pool's old timed naps a hand-off cost tens of microseconds and W4's
 * layer norms (32 K elements, about 20 us) got 3x slower split; with
 * notified waits (pool.c) a quarter of this threshold splits them and
 * they gain 1.5-1.8x, but W4 as a whole moved within its noise (1.94x
 * against 1.89-1.91x) and R1 not at all, so the threshold stays. Its
 * softmax (64 K elements with an exp each, 0.36 ms) and GELU gain 1.9x. */
#define SPLIT_MAP_WORK 1048576
#define SPLIT_UNARY_WEIGHT 16
#define SPLIT_ROW_COST 48
#if defined(TP_WASM_THREADS)
#define SPLIT_ROWS 1
#else
#define SPLIT_ROWS 0
#endif

/* Bytes of the float32 scratch panel that generated GEMMs with a float16 B
 * convert each panel into (emit_gemm.c; ptrs[nbufs + nkernels]): K x 8
 * floats for the deepest such GEMM, 0 if none. */
static size_t h16_scratch_bytes(const tp_kir_program *p) {
  size_t n = 0;
  for (int k = 0; k < p->nkernels; k++)
    if (p->kernels[k].kind == TP_KK_GEMM && p->kernels[k].b_f16 && (size_t)p->kernels[k].K * 32 > n)
      n = (size_t)p->kernels[k].K * 32;
  return n;
}

/* The accelerator's state for one plan. */
typedef struct jit_state {
  int nkernels;
  int32_t *fn;          /* per kernel: table index of its function or -1, then the run entry,
                           then per kernel its generated epilogue's (emit.h epi_func) or -1 */
  int32_t token;        /* a load the host is still compiling, 0 if none */
  int32_t base, nslots; /* the module's table slots (base -1 while pending) */
  uint8_t *split;       /* per kernel: 1 = a generated GEMM whose panels, or a generated map
                           kernel whose rows (split_rows), split over the pool */
  int64_t *rows;        /* split map kernels: their rows (tp_emit_map_rows) and grain, or NULL */
  int ranged;           /* the map kernels take (ptrs, r0, r1) (tp_emit_options.split_rows) */
  uint8_t *module;      /* the module's bytes (tp_compiled_last_module) */
  size_t module_len;
  char *h16_scratch;    /* the float16-B GEMMs' float32 panel (h16_scratch_bytes + 64; raw),
                           NULL: the plan's scratch holds it (tp_plan_scratch) */
  uint8_t *params;      /* TP_JIT_PARAMS: the module's parameter block (emit.h), else NULL */
} jit_state;

/* The modules this process loaded (length and hash), for TP_JIT_SEEN_ONLY:
 * the host's cache (js/src/jit.js) has them compiled. A ring of the last
 * SEEN_MAX; a module the host evicted since is compiled again (correct,
 * just not free). */
#define SEEN_MAX 64
static struct { uint64_t hash; size_t len; } seen[SEEN_MAX];
static int nseen;
static tp_spinlock seen_lock = TP_SPINLOCK_INIT;

/* TP_JIT_PARAMS modules by signature (emit.h): a plan whose first pass
 * gives a signature made before takes that module's bytes and export
 * numbers, with its own block, without emitting it again. A ring of the
 * last SIG_MAX, under seen_lock. */
#define SIG_MAX 8
typedef struct sig_entry {
  uint64_t sig;
  int nkernels, nfuncs, run_func;
  uint8_t *bytes;
  size_t len;
  int *kernel_func, *epi_func;
} sig_entry;
static sig_entry sigs[SIG_MAX];
static int nsigs;

static void sig_free(sig_entry *e) {
  tp_free(e->bytes), tp_free(e->kernel_func), tp_free(e->epi_func);
  memset(e, 0, sizeof *e);
}

/* em (bytes, exports) from the entry of sig, 1; 0 when there is none. */
static int sig_get(uint64_t sig, int nkernels, tp_emitted *em) {
  int found = 0;
  tp_spin_lock(&seen_lock);
  for (int i = 0; i < SIG_MAX && !found; i++) {
    const sig_entry *e = &sigs[i];
    if (!e->bytes || e->sig != sig || e->nkernels != nkernels) continue;
    size_t nk = sizeof(int) * (size_t)(nkernels ? nkernels : 1);
    em->bytes = tp_alloc(e->len), em->kernel_func = tp_alloc(nk), em->epi_func = tp_alloc(nk);
    if (em->bytes && em->kernel_func && em->epi_func) {
      memcpy(em->bytes, e->bytes, e->len), memcpy(em->kernel_func, e->kernel_func, nk), memcpy(em->epi_func, e->epi_func, nk);
      em->len = e->len, em->nfuncs = e->nfuncs, em->run_func = e->run_func;
      found = 1;
    }
  }
  tp_spin_unlock(&seen_lock);
  return found;
}

static void sig_put(const tp_emitted *em, int nkernels) {
  size_t nk = sizeof(int) * (size_t)(nkernels ? nkernels : 1);
  sig_entry n = {em->sig, nkernels, em->nfuncs, em->run_func, tp_alloc(em->len), em->len, tp_alloc(nk), tp_alloc(nk)};
  if (!n.bytes || !n.kernel_func || !n.epi_func) {
    sig_free(&n);
    return;
  }
  memcpy(n.bytes, em->bytes, em->len), memcpy(n.kernel_func, em->kernel_func, nk), memcpy(n.epi_func, em->epi_func, nk);
  tp_spin_lock(&seen_lock);
  sig_entry *e = &sigs[nsigs++ % SIG_MAX];
  sig_entry old = *e;
  *e = n;
  tp_spin_unlock(&seen_lock);
  sig_free(&old);
}

static int seen_has(uint64_t h, size_t len, int add) {
  tp_spin_lock(&seen_lock);
  int found = 0;
  for (int i = 0; i < SEEN_MAX && i < nseen && !found; i++) found = seen[i].hash == h && seen[i].len == len;
  if (!found && add) seen[nseen % SEEN_MAX].hash = h, seen[nseen % SEEN_MAX].len = len, nseen++;
  tp_spin_unlock(&seen_lock);
  return found;
}

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

/* the register tile rows per (M, N, K, A's column stride, relaxed SIMD) */
static tp_tune_cache tile_rows;

static tp_status tune_tiles(tp_plan *pl, const tp_emit_options *eo, int use_cache, uint8_t *mr_out) {
  const tp_kir_program *p = tp_plan_program(pl);
  static const int mrs[] = {2, 3, 4};
  const int nmr = (int)(sizeof mrs / sizeof mrs[0]);
  int64_t maxb = 64 + (int64_t)h16_scratch_bytes(p);
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
      const void *pb = p->kernels[k].b_f16 ? tp_plan_packed_b_f16(pl, k) : tp_plan_packed_b(pl, k);
      ptrs[p->nbufs + k] = (int32_t)(intptr_t)(pb ? pb : al);
    }
    ptrs[p->nbufs + p->nkernels] = (int32_t)(intptr_t)al; /* the float16-B panel scratch */
  }
  for (int ki = 0; ki < p->nkernels && !s; ki++) {
    const tp_kir_kernel *k = &p->kernels[ki];
    if (k->kind != TP_KK_GEMM || eo->host_kernel[ki]) continue;
    int64_t key[TP_TUNE_KEY] = {k->M, k->N, k->K, k->a_cs, eo->relaxed_simd, 0};
    int val[2];
    if (use_cache && tp_tune_cache_get(&tile_rows, key, val)) {
      mr_out[ki] = (uint8_t)val[0];
      continue;
    }
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
    int nslots = em.nfuncs;
    tp_emitted_clear(&em);
    if (s || token) { /* the host would compile it asynchronously (a page's main thread): keep 4 rows */
      tp_clear_error();
      s = TP_OK;
      break;
    }
    double best = 1e30;
    int best_mr = 4;
    int32_t np = (int32_t)tp_emit_gemm_panels(k);
    for (int v = 0; v < nmr; v++) {
      void (*fn)(int32_t, int32_t, int32_t) = (void (*)(int32_t, int32_t, int32_t))(uintptr_t)(base + v);
      fn((int32_t)(intptr_t)ptrs, 0, np);
      double t = 1e30;
      for (int r = 0; r < 3; r++) {
        double t0 = tp_now_ms();
        fn((int32_t)(intptr_t)ptrs, 0, np);
        double dt = tp_now_ms() - t0;
        if (dt < t) t = dt;
      }
      if (t < best) best = t, best_mr = mrs[v];
    }
    tp_jit_unload(base, nslots); /* timed once, never called again */
    mr_out[ki] = (uint8_t)best_mr;
    tp_plan_count_tuned(pl, 1);
    if (use_cache) tp_tune_cache_put(&tile_rows, key, (const int[2]){best_mr, 0});
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

static void jit_release(void *state) {
  jit_state *st = state;
  if (!st) return;
  /* the module's table slots go back to the host (issue 15, defect 10) */
  if (st->fn && st->token) tp_jit_cancel(st->token, st->nslots);
  else if (st->fn) tp_jit_unload(st->base, st->nslots);
  tp_free(st->fn);
  tp_free(st->module);
  tp_free(st->params);
  tp_free(st->rows);
  tp_free(st->split);
  tp_free(st->h16_scratch);
  tp_free(st);
}

/* A module the host was still compiling: switch to it once installed (or
 * drop it if it failed, which leaves the plan on the executor). */
static void jit_poll(jit_state *st) {
  if (!st->fn || !st->token) return;
  int32_t base;
  int r = tp_jit_poll(st->token, &base);
  if (r == 1) {
    for (int k = 0; k <= 2 * st->nkernels; k++) /* the kernels, the run entry, the epilogues */
      if (st->fn[k] >= 0) st->fn[k] += base;
    st->token = 0;
    st->base = base;
  } else if (r < 0) {
    tp_free(st->fn);
    tp_free(st->module);
    st->fn = NULL;
    st->module = NULL;
    st->module_len = 0;
    st->token = 0;
  }
}

static tp_status jit_prepare(tp_plan *pl, int flags, void **state) {
  *state = NULL;
  int use_cache = flags & 1;
  if (!(tp_jit_features() & TP_JIT_FEATURE_SIMD128)) return TP_OK; /* not a Wasm host with SIMD128 */
  const tp_kir_program *p = tp_plan_program(pl);
  tp_emitted em;
  /* a generated GEMM reads the plan's packed B: without it, the executor */
  uint8_t *host = tp_alloc((size_t)(p->nkernels ? p->nkernels : 1));
  if (!host) return TP_ERR_OUT_OF_MEMORY;
  for (int k = 0; k < p->nkernels; k++)
    host[k] = p->kernels[k].kind == TP_KK_GEMM &&
              !(p->kernels[k].b_f16 ? tp_plan_packed_b_f16(pl, k) : tp_plan_packed_b(pl, k));
  uint8_t *mr = tp_alloc((size_t)(p->nkernels ? p->nkernels : 1));
  if (!mr) {
    tp_free(host);
    return TP_ERR_OUT_OF_MEMORY;
  }
  memset(mr, 0, (size_t)(p->nkernels ? p->nkernels : 1));
  /* split_rows on the threads core (whether or not its workers run yet:
   * one module form for the build): the map kernels take a row range */
  tp_emit_options eo = {(tp_jit_features() & TP_JIT_FEATURE_RELAXED_SIMD) != 0, 0, host, mr, (flags & TP_JIT_PARAMS) != 0, 0,
                        SPLIT_ROWS};
  tp_status s = p->autotune ? tune_tiles(pl, &eo, use_cache, mr) : TP_OK;
  int reused = 0;
  if (!s && eo.params && !p->autotune) { /* a module made before for this signature: only the block */
    tp_emit_options bo = eo;
    bo.block_only = 1;
    s = tp_emit_wasm(p, &bo, &em);
    if (!s && em.sig && sig_get(em.sig, p->nkernels, &em)) reused = 1;
    else if (!s) tp_emitted_clear(&em);
  }
  if (!s && !reused) s = tp_emit_wasm(p, &eo, &em);
  tp_free(host);
  tp_free(mr);
  if (s == TP_ERR_UNSUPPORTED) { /* nothing to generate */
    tp_clear_error();
    return TP_OK;
  }
  if (s) return s;
  uint64_t h = tp_jit_hash(em.bytes, em.len);
  if ((flags & TP_JIT_SEEN_ONLY) && !seen_has(h, em.len, 0)) { /* would compile: not now */
    tp_emitted_clear(&em);
    return TP_OK;
  }
  int32_t base = -1, token = 0;
  s = tp_jit_load(em.bytes, em.len, em.nfuncs + 1, use_cache, &base, &token);
  if (!s && use_cache) seen_has(h, em.len, 1);
  if (!s && use_cache && eo.params && em.sig && !reused) sig_put(&em, p->nkernels);
  jit_state *st = NULL;
  if (!s) {
    st = tp_alloc(sizeof *st);
    /* per kernel: its table index (or -1), then the run entry's */
    int32_t *fn = tp_alloc(sizeof(int32_t) * (size_t)(2 * p->nkernels + 1));
    if (!st || !fn) {
      tp_free(st);
      tp_free(fn);
      st = NULL;
      s = TP_ERR_OUT_OF_MEMORY;
    } else {
      for (int k = 0; k < p->nkernels; k++)
        fn[k] = em.kernel_func[k] < 0 ? -1 : em.kernel_func[k] + (token ? 0 : base);
      fn[p->nkernels] = em.run_func + (token ? 0 : base);
      for (int k = 0; k < p->nkernels; k++)
        fn[p->nkernels + 1 + k] = em.epi_func[k] < 0 ? -1 : em.epi_func[k] + (token ? 0 : base);
      /* the state keeps the bytes, for tp_compiled_last_module */
      *st = (jit_state){.nkernels = p->nkernels, .fn = fn, .token = token, .base = token ? -1 : base,
                        .nslots = em.nfuncs + 1, .module = em.bytes, .module_len = em.len, .params = em.params,
                        .ranged = eo.split_rows};
      em.bytes = NULL, em.params = NULL;
      size_t hb = h16_scratch_bytes(p), pf; /* the plan's scratch when it is large enough (K <= 3520) */
      tp_plan_scratch(pl, &pf);
      if (hb > pf * sizeof(float) && !(st->h16_scratch = tp_alloc(hb + 64))) s = TP_ERR_OUT_OF_MEMORY;
      /* generated GEMMs large enough to split over the pool (with workers:
       * decided per run, so a plan compiled before the workers start splits) */
      for (int k = 0; k < p->nkernels; k++) {
        const tp_kir_kernel *kk = &p->kernels[k];
        /* (a float16 B: one scratch panel, so one thread) */
        if (fn[k] < 0 || kk->kind != TP_KK_GEMM || kk->b_f16 || 2 * kk->M * kk->N * kk->K < 2 * SPLIT_GEMM_FLOPS) continue;
        if (!st->split && (st->split = tp_alloc((size_t)p->nkernels))) memset(st->split, 0, (size_t)p->nkernels);
        if (st->split) st->split[k] = 1; /* out of memory: it runs on one thread */
      }
      /* map kernels with rows enough for the pool (the executor's work sizing) */
      for (int k = 0; k < p->nkernels && eo.split_rows; k++) {
        const tp_kir_kernel *kk = &p->kernels[k];
        if (fn[k] < 0 || kk->kind == TP_KK_GEMM) continue;
        tp_kir_prep pr;
        tp_kir_prepare(kk, &pr);
        int64_t rows = tp_emit_map_rows(kk, &pr, !eo.params), total = tp_shape_numel(pr.nd, pr.shape);
        int64_t per_row = total / (rows ? rows : 1) + (kk->kind == TP_KK_ROW ? SPLIT_ROW_COST : 0), weight = 1;
        int nexpr = kk->kind == TP_KK_ROW ? kk->nphases : 1;
        for (int q = 0; q < nexpr; q++) {
          const tp_kir_expr *x = kk->kind == TP_KK_ROW ? &kk->phases[q].expr : &kk->expr;
          for (int i = 0; i < x->n; i++) weight += x->ins[i].op == TP_KI_UNARY ? SPLIT_UNARY_WEIGHT : 0;
        }
        per_row *= weight;
        int64_t least = SPLIT_MAP_WORK;
        if (rows < 2 || rows * per_row < 2 * least) continue;
        if (!st->split && (st->split = tp_alloc((size_t)p->nkernels))) memset(st->split, 0, (size_t)p->nkernels);
        if (!st->rows && (st->rows = tp_alloc(sizeof(int64_t) * 2 * (size_t)p->nkernels)))
          memset(st->rows, 0, sizeof(int64_t) * 2 * (size_t)p->nkernels);
        if (!st->split || !st->rows) continue; /* out of memory: it runs on one thread */
        st->split[k] = 1;
        st->rows[2 * k] = rows, st->rows[2 * k + 1] = (least + per_row - 1) / per_row;
      }
    }
  }
  tp_emitted_clear(&em);
  if (s && st) { /* the scratch failed: nothing of the module stays */
    jit_release(st);
    st = NULL;
  }
  *state = st;
  return s;
}

#if defined(__wasm__)
typedef void (*gemm_fn)(int32_t ptrs, int32_t p0, int32_t p1);
typedef struct split_job {
  gemm_fn fn;
  int32_t ptrs;
} split_job;

static void split_task(void *ctx, int slot, int64_t b, int64_t e) {
  (void)slot;
  const split_job *j = ctx;
  j->fn(j->ptrs, (int32_t)b, (int32_t)e);
}

/* Generated kernel k: a GEMM over its panels [0, np) (split over the pool
 * when st->split says so; each panel is computed alone, so the bits do not
 * depend on the split), the others (i32 ptrs) -> () (emit.h). */
static tp_status call_kernel(const jit_state *st, const tp_kir_program *p, int k, int32_t *ptrtab, int threads) {
  const tp_kir_kernel *kk = &p->kernels[k];
  int32_t ptrs = (int32_t)(intptr_t)ptrtab;
  split_job j = {(gemm_fn)(uintptr_t)st->fn[k], ptrs};
  if (kk->kind != TP_KK_GEMM && !(threads > 1 && st->split && st->split[k] && st->rows)) {
    if (st->ranged) j.fn(ptrs, 0, INT32_MAX); /* every row */
    else ((void (*)(int32_t))(uintptr_t)st->fn[k])(ptrs);
    return TP_OK;
  }
  if (kk->kind != TP_KK_GEMM) { /* its rows over the pool: each row alone, the same bits */
    tp_parallel_for(st->rows[2 * k], st->rows[2 * k + 1], split_task, &j);
    return tp_pool_take_failure();
  }
  int64_t np = tp_emit_gemm_panels(kk), panel_flops = 2 * kk->M * 8 * kk->K;
  if (threads > 1 && st->split && st->split[k]) {
    int64_t grain = (SPLIT_GEMM_FLOPS + panel_flops - 1) / panel_flops;
    tp_parallel_for(np, grain, split_task, &j);
    return tp_pool_take_failure();
  }
  j.fn(ptrs, 0, (int32_t)np);
  return TP_OK;
}
#endif

static tp_status jit_run(void *state, const tp_plan *pl, void *const *bufs, void *run, int *ran) {
  jit_state *st = state;
  *ran = 0;
  jit_poll(st);
  if (!st->fn || st->token) return TP_OK; /* pending or failed: the executor */
#if defined(__wasm__)
  const tp_kir_program *p = tp_plan_program(pl);
  /* generated code reads buffer addresses from here: buffers, then each
   * kernel's packed B (generated GEMMs read it) */
  int32_t *ptrtab = tp_alloc(sizeof(int32_t) * (size_t)(p->nbufs + p->nkernels + 2));
  if (!ptrtab) return TP_ERR_OUT_OF_MEMORY;
  for (int b = 0; b < p->nbufs; b++) ptrtab[b] = (int32_t)(intptr_t)bufs[b];
  for (int k = 0; k < p->nkernels; k++)
    ptrtab[p->nbufs + k] =
        (int32_t)(intptr_t)(p->kernels[k].b_f16 ? tp_plan_packed_b_f16(pl, k) : tp_plan_packed_b(pl, k));
  size_t pf;
  ptrtab[p->nbufs + p->nkernels] = (int32_t)(st->h16_scratch ? ((uintptr_t)st->h16_scratch + 63) & ~(uintptr_t)63
                                                              : (uintptr_t)tp_plan_scratch(pl, &pf));
  ptrtab[p->nbufs + p->nkernels + 1] = (int32_t)(intptr_t)st->params; /* the numbers (TP_JIT_PARAMS) */
  int32_t r = 0;
  int prof = tp_plan_profiling(pl), threads = st->split ? tp_pool_threads_or_default() : 1;
  if (prof || threads > 1) {
    /* each kernel on its own: profiling (stax.profile) times each one; with
     * threads, the split GEMMs run their panels over the pool */
    for (int k = 0; k < p->nkernels && !r; k++) {
      double t0 = prof ? tp_now_ms() : 0;
      int32_t efn = st->fn[p->nkernels + 1 + k];
      if (st->fn[k] >= 0) r = (int32_t)call_kernel(st, p, k, ptrtab, threads);
      else r = (int32_t)tp_plan_run_kernel(run, efn >= 0 ? k + p->nkernels : k);
      if (!r && efn >= 0) ((void (*)(int32_t))(uintptr_t)efn)((int32_t)(intptr_t)ptrtab);
      if (prof) tp_plan_profile_add(pl, k, tp_now_ms() - t0);
    }
  } else {
    /* one call: the generated module's run entry (emit.h) */
    r = ((int32_t (*)(int32_t, int32_t))(uintptr_t)st->fn[p->nkernels])((int32_t)(intptr_t)ptrtab,
                                                                         (int32_t)(intptr_t)run);
  }
  tp_free(ptrtab);
  *ran = 1;
  return (tp_status)r;
#else
  (void)pl, (void)bufs, (void)run; /* prepare never makes a state off a Wasm host */
  return TP_OK;
#endif
}

static int jit_kernels(void *state, const tp_plan *pl) {
  jit_state *st = state;
  (void)pl;
  jit_poll(st); /* after `await g.ready`, explain() reports the installed module */
  int n = 0;
  for (int k = 0; st->fn && !st->token && k < st->nkernels; k++) n += st->fn[k] >= 0;
  return n;
}

static int jit_generated(void *state, const tp_plan *pl, int k) {
  jit_state *st = state;
  (void)pl;
  jit_poll(st);
  return st->fn && !st->token && k >= 0 && k < st->nkernels && st->fn[k] >= 0;
}

static const uint8_t *jit_module(void *state, size_t *len) {
  jit_state *st = state;
  jit_poll(st);
  const uint8_t *m = st->fn ? st->module : NULL;
  *len = m ? st->module_len : 0;
  return m;
}

const tp_lower_accel tp_wasm_accel = {"wasm", jit_prepare, jit_run, jit_kernels, jit_module,
                                      jit_release, jit_generated};

int32_t tp_jit_kernel_callback(int32_t run, int32_t k) {
  return (int32_t)tp_plan_run_kernel((void *)(uintptr_t)run, k);
}
