/* emit.c - Kernel IR -> one SIMD128 Wasm module (see emit.h): the module
 * assembly. Decides which kernels are generated (the others run in the
 * core's executor through the imported env.tp_jit_kernel), emits one
 * function per generated kernel in two passes (gather the v128 constants,
 * then emit with them in locals), the run entry that calls every kernel in
 * order, and the exports. Also the instruction stream the kernel emitters
 * write through (tp_em_put: direct, or recorded for the interleaved loops).
 * The kernels themselves: emit_pointwise.c, emit_gemm.c; their math:
 * emit_math.c (emit_internal.h lists the files). */
#include "emit_internal.h"
#include <stdio.h>

tp_status tp_em_raw(tp_wasm_func *f, const rins *r) {
  switch (r->kind) {
    case RK_OP: return tp_wasm_emit(f, r->op);
    case RK_LOCAL: return tp_wasm_emit_local(f, r->op, r->a);
    case RK_I32: case RK_NUM: return tp_wasm_emit_i32_const(f, r->i);
    case RK_F32: case RK_FNUM: return tp_wasm_emit_f32_const(f, r->f);
    case RK_V128: return tp_wasm_emit_v128_const(f, r->b);
    case RK_MEM: return tp_wasm_emit_mem(f, r->op, 0, r->a);
    default: return tp_wasm_emit_lane(f, r->op, r->a);
  }
}


/* The numbers are matched by position, not by value: the first pass lists
 * every occurrence, the second reads the next one's local, so two numbers
 * that happen to be equal at one size (and not at another) do not change
 * the bytes. Each use checks the value (it may look a few occurrences
 * ahead when the passes emitted differently): a number without its
 * occurrence stays a constant. That keeps the code right for any block a
 * module is run with as long as the block was made with those bytes,
 * which is the only way one is shared (emit.h). */
#define PP_LOOKAHEAD 8

static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ull; }

/* The first pass's hash of r: everything but a number's value. */
static void sig_put(em *e, const rins *r) {
  uint64_t h = mix(e->sig, (uint64_t)r->kind << 32 | (uint64_t)r->op);
  h = mix(h, r->a);
  if (r->kind == RK_I32) h = mix(h, (uint32_t)r->i);
  if (r->kind == RK_F32) {
    uint32_t u;
    memcpy(&u, &r->f, 4);
    h = mix(h, u);
  }
  if (r->kind == RK_V128)
    for (int i = 0; i < 16; i += 8) {
      uint64_t u;
      memcpy(&u, r->b + i, 8);
      h = mix(h, u);
    }
  e->sig = h;
}

void tp_em_put(em *e, rins r) {
  if (e->s) return;
  if (e->collect && e->blk) sig_put(e, &r);
  if (e->blk && (r.kind == RK_NUM || r.kind == RK_FNUM)) { /* the first pass gathers them, the second reads their locals */
    int32_t bits;
    uint8_t f = r.kind == RK_FNUM;
    if (f) memcpy(&bits, &r.f, 4);
    else bits = r.i;
    if (e->collect) {
      if (e->npp < PPOOL_MAX) e->pp[e->npp] = bits, e->pp_site[e->npp] = r.a, e->pp_f32[e->npp++] = f;
      else e->mismatch = 1; /* the rest stay constants */
      return;
    }
    int found = 0;
    for (int j = e->pcur; j < e->npp && j < e->pcur + PP_LOOKAHEAD && !found; j++)
      if (e->pp[j] == bits && e->pp_f32[j] == f && e->pp_site[j] == r.a) {
        e->mismatch |= j != e->pcur;
        r = (rins){.kind = RK_LOCAL, .op = TP_WASM_OP_LOCAL_GET, .a = e->pp_local[j]};
        e->pcur = j + 1;
        found = 1;
      }
    e->mismatch |= !found;
  }
  if (e->collect) return;
  if (!e->recording) {
    e->s = tp_em_raw(e->f, &r);
    return;
  }
  if (TP_ARRAY_RESERVE(e->rec, e->caprec, e->nrec + 1)) {
    e->s = TP_ERR_OUT_OF_MEMORY;
    return;
  }
  e->rec[e->nrec++] = r;
}

void tp_em_vconst(em *e, const uint8_t b[16]) {
  if (e->s) return;
  int i = 0;
  while (i < e->npool && memcmp(e->pool[i], b, 16)) i++;
  if (e->collect) {
    if (e->blk) {
      rins r = {.kind = RK_V128};
      memcpy(r.b, b, 16);
      sig_put(e, &r);
    }
    if (i == e->npool && e->npool < POOL_MAX) memcpy(e->pool[e->npool++], b, 16);
    return;
  }
  if (i < e->npool && e->pool_local[i]) {
    lget(e, e->pool_local[i]);
  } else {
    rins r = {.kind = RK_V128};
    memcpy(r.b, b, 16);
    tp_em_put(e, r);
  }
}

/* Appends n bytes to the parameter block; their offset in it. */
static uint32_t blk_put(em *e, const void *v, size_t n) {
  em_block *b = e->blk;
  if (!e->s && tp_array_reserve((void **)&b->b, &b->cap, b->len + n, 1)) e->s = TP_ERR_OUT_OF_MEMORY;
  if (e->s) return 0;
  memcpy(b->b + b->len, v, n);
  b->len += n;
  return (uint32_t)(b->len - n);
}

/* params: at function entry, the pooled v128 constants (the expressions'
 * constants: the same at every size of a template), the block's address
 * from the pointer table (local 0), then the numbers into their locals. */
static void params_prologue(em *e) {
  uint32_t P = 0, first;
  e->s = tp_wasm_func_add_locals(e->f, 1, TP_WASM_I32, &P);
  if (!e->s) e->s = tp_wasm_emit_local(e->f, TP_WASM_OP_LOCAL_GET, 0);
  if (!e->s) e->s = tp_wasm_emit_mem(e->f, TP_WASM_OP_I32_LOAD, 0, 4 * e->blk->slot);
  if (!e->s) e->s = tp_wasm_emit_local(e->f, TP_WASM_OP_LOCAL_SET, P);
  if (e->npool && !e->s) e->s = tp_wasm_func_add_locals(e->f, (uint32_t)e->npool, TP_WASM_V128, &first);
  for (int q = 0; q < e->npool && !e->s; q++) {
    e->pool_local[q] = first + (uint32_t)q;
    e->s = tp_wasm_emit_v128_const(e->f, e->pool[q]);
    if (!e->s) e->s = tp_wasm_emit_local(e->f, TP_WASM_OP_LOCAL_SET, e->pool_local[q]);
  }
  for (int q = 0; q < e->npp && !e->s; q++) {
    e->s = tp_wasm_func_add_locals(e->f, 1, e->pp_f32[q] ? TP_WASM_F32 : TP_WASM_I32, &e->pp_local[q]);
    uint32_t off = blk_put(e, &e->pp[q], 4);
    if (!e->s) e->s = tp_wasm_emit_local(e->f, TP_WASM_OP_LOCAL_GET, P);
    if (!e->s) e->s = tp_wasm_emit_mem(e->f, e->pp_f32[q] ? TP_WASM_OP_F32_LOAD : TP_WASM_OP_I32_LOAD, 0, off);
    if (!e->s) e->s = tp_wasm_emit_local(e->f, TP_WASM_OP_LOCAL_SET, e->pp_local[q]);
  }
}

/* One function; with blk (params) *sig is its first pass's hash (0 when
 * a number did not meet its position: the bytes then depend on values),
 * and with block_only only the first pass runs (its numbers go to the
 * block, the function stays empty). */
static tp_status emit_kernel(tp_wasm_module *m, uint32_t type, const tp_kir_program *p, int ki,
                             const tp_kir_kernel *k, const tp_kir_prep *pr, int relaxed, int mr,
                             em_block *blk, int block_only, int ranged, uint64_t *sig, uint32_t *fidx) {
  if (!k) k = &p->kernels[ki];
  em e;
  memset(&e, 0, sizeof e);
  e.relaxed = relaxed;
  e.ranged = ranged && k->kind != TP_KK_GEMM;
  e.mr = mr;
  e.blk = blk;
  TP_TRY(tp_wasm_func_begin(m, type, k->name, &e.f, fidx));
  e.vn = 96 + TP_KIR_MAX_INS, e.in = 64, e.fn = 16;
  tp_status s = tp_wasm_func_add_locals(e.f, (uint32_t)e.vn, TP_WASM_V128, &e.v0);
  if (!s) s = tp_wasm_func_add_locals(e.f, (uint32_t)e.in, TP_WASM_I32, &e.i0);
  if (!s) s = tp_wasm_func_add_locals(e.f, (uint32_t)e.fn, TP_WASM_F32, &e.f0);
  if (s) return s;
  /* pass 1 gathers the vector constants, pass 2 emits with them in locals */
  e.sig = 0xcbf29ce484222325ull;
  for (int pass = 0; pass < 2 && !e.s; pass++) {
    e.collect = pass == 0;
    if (pass == 1 && block_only) {
      for (int q = 0; q < e.npp && !e.s; q++) blk_put(&e, &e.pp[q], 4);
      break;
    }
    e.vtop = e.itop = e.ftop = 0;
    if (pass == 1 && e.blk) {
      params_prologue(&e);
    } else if (pass == 1) {
      uint32_t first;
      if (e.npool) e.s = tp_wasm_func_add_locals(e.f, (uint32_t)e.npool, TP_WASM_V128, &first);
      for (int q = 0; q < e.npool && !e.s; q++) {
        e.pool_local[q] = first + (uint32_t)q;
        e.s = tp_wasm_emit_v128_const(e.f, e.pool[q]);
        if (!e.s) e.s = tp_wasm_emit_local(e.f, TP_WASM_OP_LOCAL_SET, e.pool_local[q]);
      }
    }
    if (k->kind == TP_KK_GEMM) {
      int64_t rs[TP_KIR_MAX_IN], cs[TP_KIR_MAX_IN];
      tp_em_gemm_supported(p, k, rs, cs);
      tp_em_gemm_body(&e, p, ki, rs, cs);
    } else {
      tp_em_map_body(&e, k, pr);
    }
  }
  tp_free(e.rec);
  if (sig) *sig = e.mismatch || (!block_only && e.pcur != e.npp) ? 0 : mix(mix(e.sig, (uint64_t)e.npp), (uint64_t)e.ranged);
  if (e.s) return e.s;
  return tp_wasm_func_end(e.f);
}

void tp_emitted_clear(tp_emitted *e) {
  if (!e) return;
  tp_free(e->bytes);
  tp_free(e->kernel_func);
  tp_free(e->epi_func);
  tp_free(e->dump);
  tp_free(e->params);
  memset(e, 0, sizeof *e);
}

/* Finishes m (when s is TP_OK) into out->bytes (and out->dump when dump),
 * frees m; on an error out is cleared. Returns the status. */
static tp_status finish_module(tp_wasm_module *m, tp_status s, int dump, tp_emitted *out) {
  const uint8_t *bytes = NULL;
  size_t len = 0;
  if (!s) s = tp_wasm_module_finish(m, &bytes, &len);
  if (!s && !(out->bytes = tp_alloc(len ? len : 1))) s = TP_ERR_OUT_OF_MEMORY;
  if (!s) {
    memcpy(out->bytes, bytes, len);
    out->len = len;
    if (dump) {
      const tp_wasm_label *labels;
      size_t nl;
      tp_wasm_module_labels(m, &labels, &nl);
      s = tp_wasm_dump(bytes, len, labels, nl, &out->dump);
    }
  }
  tp_wasm_module_free(m);
  if (s) tp_emitted_clear(out);
  return s;
}

/* The run entry: (i32 ptrs, i32 ctx) -> i32 status. Calls every kernel of
 * the program in order: generated ones directly, the others through the
 * imported env.tp_jit_kernel(ctx, k) (the core's executor); stops at the
 * first non-zero status and returns it. */
static tp_status emit_run(tp_wasm_module *m, uint32_t type, const tp_kir_program *p,
                          const uint32_t *fidx, const uint32_t *eidx, uint32_t cb, em_block *blk, int ranged,
                          uint32_t *run_idx) {
  tp_wasm_func *f;
  uint32_t st;
  TP_TRY(tp_wasm_func_begin(m, type, "run", &f, run_idx));
  tp_status s = tp_wasm_func_add_locals(f, 1, TP_WASM_I32, &st);
  if (!s) s = tp_wasm_emit_block(f, TP_WASM_OP_BLOCK, TP_WASM_BT_VOID);
  for (int k = 0; k < p->nkernels && !s; k++) {
    if (fidx[k] != UINT32_MAX) {
      s = tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, 0);
      if (!s && p->kernels[k].kind == TP_KK_GEMM) { /* all its panels */
        int32_t np = (int32_t)tp_emit_gemm_panels(&p->kernels[k]);
        s = tp_wasm_emit_i32_const(f, 0);
        if (!s && blk) { /* params: the panel count from the block */
          em e = {.blk = blk};
          uint32_t off = blk_put(&e, &np, 4);
          s = e.s;
          if (!s) s = tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, 0);
          if (!s) s = tp_wasm_emit_mem(f, TP_WASM_OP_I32_LOAD, 0, 4 * blk->slot);
          if (!s) s = tp_wasm_emit_mem(f, TP_WASM_OP_I32_LOAD, 0, off);
        } else if (!s) {
          s = tp_wasm_emit_i32_const(f, np);
        }
      }
      if (!s && ranged && p->kernels[k].kind != TP_KK_GEMM) { /* all its rows */
        s = tp_wasm_emit_i32_const(f, 0);
        if (!s) s = tp_wasm_emit_i32_const(f, INT32_MAX);
      }
      if (!s) s = tp_wasm_emit_call(f, fidx[k]);
    } else {
      s = tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, 1);
      if (!s) s = tp_wasm_emit_i32_const(f, eidx[k] != UINT32_MAX ? k + p->nkernels : k);
      if (!s) s = tp_wasm_emit_call(f, cb);
      if (!s) s = tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_TEE, st);
      if (!s) s = tp_wasm_emit_br(f, TP_WASM_OP_BR_IF, 0);
      if (!s && eidx[k] != UINT32_MAX) { /* its generated epilogue */
        s = tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, 0);
        if (!s) s = tp_wasm_emit_call(f, eidx[k]);
      }
    }
  }
  if (!s) s = tp_wasm_emit(f, TP_WASM_OP_END);
  if (!s) s = tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, st);
  if (!s) s = tp_wasm_func_end(f);
  return s;
}

tp_status tp_emit_wasm(const tp_kir_program *p, const tp_emit_options *o, tp_emitted *out) {
  memset(out, 0, sizeof *out);
  tp_wasm_module *m = NULL;
  TP_TRY(tp_wasm_module_init(&m));
  uint32_t type, gemm_type, run_type, cb = 0;
  const uint8_t params[3] = {TP_WASM_I32, TP_WASM_I32, TP_WASM_I32}, results[1] = {TP_WASM_I32};
  tp_status s = tp_wasm_module_add_type(m, 1, params, 0, NULL, &type);
  if (!s) s = tp_wasm_module_add_type(m, 3, params, 0, NULL, &gemm_type);
  if (!s) s = tp_wasm_module_add_type(m, 2, params, 1, results, &run_type);
  tp_wasm_limits lim = TP_WASM_CORE_MEMORY(1);
  if (!s) s = tp_wasm_module_import_memory(m, "env", "memory", lim);
  out->kernel_func = tp_alloc(sizeof(int) * (size_t)(p->nkernels ? p->nkernels : 1));
  out->epi_func = tp_alloc(sizeof(int) * (size_t)(p->nkernels ? p->nkernels : 1));
  uint32_t *fidx = tp_alloc(sizeof(uint32_t) * (size_t)(p->nkernels ? p->nkernels : 1));
  uint32_t *eidx = tp_alloc(sizeof(uint32_t) * (size_t)(p->nkernels ? p->nkernels : 1));
  tp_kir_prep *preps = tp_alloc(sizeof(tp_kir_prep) * (size_t)(p->nkernels ? p->nkernels : 1));
  tp_kir_kernel *pw = tp_alloc(sizeof *pw);
  em_block blkv = {.slot = (uint32_t)(p->nbufs + p->nkernels + 1)}, *blk = o && o->params ? &blkv : NULL;
  int block_only = blk && o->block_only;
  /* params: the module's signature (0: no vouching for it) */
  uint64_t sig = blk ? mix(mix(0xcbf29ce484222325ull, (uint64_t)p->nkernels), (uint64_t)(o->relaxed_simd != 0)) : 0;
  if (!out->kernel_func || !out->epi_func || !fidx || !eidx || !preps || !pw) s = TP_ERR_OUT_OF_MEMORY;
  /* which kernels are generated; the others run in C (through the import) */
  int nhost = 0, ngen = 0;
  for (int ki = 0; ki < p->nkernels && !s; ki++) {
    tp_kir_prepare(&p->kernels[ki], &preps[ki]);
    int64_t rs[TP_KIR_MAX_IN], cs[TP_KIR_MAX_IN];
    int gen = (!o || !o->host_kernel || !o->host_kernel[ki]) &&
              (tp_em_map_supported(p, &p->kernels[ki], &preps[ki]) || tp_em_gemm_supported(p, &p->kernels[ki], rs, cs));
    fidx[ki] = gen ? 0 : UINT32_MAX;
    out->kernel_func[ki] = -1;
    out->epi_func[ki] = -1;
    /* a GEMM or conv left to C: its epilogue generated, run after it in place
     * (the executor's evaluation of it is the slower one in Wasm) */
    eidx[ki] = UINT32_MAX;
    if (!gen && tp_kir_epilogue_kernel(&p->kernels[ki], pw)) {
      tp_kir_prep epr;
      tp_kir_prepare(pw, &epr);
      if (tp_em_map_supported(p, pw, &epr)) eidx[ki] = 0, ngen++;
    }
    nhost += !gen, ngen += gen;
  }
  if (!s && ngen == 0) s = tp_fail(TP_ERR_UNSUPPORTED, "wasm emitter: no kernel to emit");
  if (!s && nhost) s = tp_wasm_module_import_func(m, "env", "tp_jit_kernel", run_type, &cb);
  for (int ki = 0; ki < p->nkernels && !s; ki++) {
    if (fidx[ki] == UINT32_MAX) continue;
    uint64_t fs = 0;
    int mr = o && o->gemm_mr ? o->gemm_mr[ki] : 0;
    int ranged = o && o->split_rows;
    s = emit_kernel(m, p->kernels[ki].kind == TP_KK_GEMM || ranged ? gemm_type : type, p, ki, NULL, &preps[ki],
                    o && o->relaxed_simd, mr, blk, block_only, ranged, &fs, &fidx[ki]);
    sig = fs && sig ? mix(mix(mix(mix(sig, (uint64_t)ki), (uint64_t)mr), (uint64_t)p->kernels[ki].kind), fs) : 0;
    if (s) {
      tp_fail_context(s, "wasm emitter: kernel %s", p->kernels[ki].name);
      break;
    }
    char name[16];
    snprintf(name, sizeof name, "f%d", out->nfuncs);
    s = tp_wasm_module_export_func(m, name, fidx[ki]);
    out->kernel_func[ki] = out->nfuncs++;
  }
  for (int ki = 0; ki < p->nkernels && !s; ki++) {
    if (eidx[ki] == UINT32_MAX) continue;
    tp_kir_prep epr;
    tp_kir_epilogue_kernel(&p->kernels[ki], pw);
    snprintf(pw->name, sizeof pw->name, "k%d_epilogue", ki);
    tp_kir_prepare(pw, &epr);
    uint64_t fs = 0;
    s = emit_kernel(m, type, p, ki, pw, &epr, o && o->relaxed_simd, 0, blk, block_only, 0, &fs, &eidx[ki]);
    sig = fs && sig ? mix(mix(sig, (uint64_t)(ki + p->nkernels)), fs) : 0;
    if (s) {
      tp_fail_context(s, "wasm emitter: kernel %s", pw->name);
      break;
    }
    char name[16];
    snprintf(name, sizeof name, "f%d", out->nfuncs);
    s = tp_wasm_module_export_func(m, name, eidx[ki]);
    out->epi_func[ki] = out->nfuncs++;
  }
  uint32_t run_idx = 0;
  if (!s && block_only) { /* the run entry's numbers: the GEMMs' panel counts (emit_run) */
    for (int k = 0; k < p->nkernels && !s; k++)
      if (fidx[k] != UINT32_MAX && p->kernels[k].kind == TP_KK_GEMM) {
        int32_t np = (int32_t)tp_emit_gemm_panels(&p->kernels[k]);
        em e = {.blk = blk};
        blk_put(&e, &np, 4);
        s = e.s;
      }
    tp_free(fidx), tp_free(eidx), tp_free(pw), tp_free(preps);
    tp_free(out->kernel_func), tp_free(out->epi_func); /* (the caller's module has them) */
    out->kernel_func = out->epi_func = NULL;
    tp_wasm_module_free(m);
    if (!s && !blkv.len) {
      em e = {.blk = blk};
      uint8_t z = 0;
      blk_put(&e, &z, 1);
      s = e.s;
    }
    if (!s) out->params = blkv.b, out->params_len = blkv.len, out->sig = sig, blkv.b = NULL;
    tp_free(blkv.b);
    if (s) tp_emitted_clear(out);
    return s;
  }
  if (!s) s = emit_run(m, run_type, p, fidx, eidx, cb, blk, o && o->split_rows, &run_idx);
  if (!s) { /* the run entry: export f<nfuncs>, also named "run" */
    char name[16];
    snprintf(name, sizeof name, "f%d", out->nfuncs);
    s = tp_wasm_module_export_func(m, name, run_idx);
    if (!s) s = tp_wasm_module_export_func(m, "run", run_idx);
    out->run_func = out->nfuncs;
  }
  tp_free(fidx);
  tp_free(eidx);
  tp_free(pw);
  tp_free(preps);
  s = finish_module(m, s, o && o->want_dump, out);
  if (!s && blk) { /* the block (at least a byte: a module with no numbers still reads its address) */
    if (!blkv.len) {
      em e = {.blk = blk};
      uint8_t z = 0;
      blk_put(&e, &z, 1);
      s = e.s;
    }
    out->params = blkv.b, out->params_len = blkv.len, out->sig = sig, blkv.b = NULL;
  }
  tp_free(blkv.b);
  if (s) tp_emitted_clear(out);
  return s;
}

tp_status tp_emit_gemm_variants(const tp_kir_program *p, const tp_emit_options *o, int ki, int nmr,
                                const int *mrs, tp_emitted *out) {
  memset(out, 0, sizeof *out);
  int64_t rs[TP_KIR_MAX_IN], cs[TP_KIR_MAX_IN];
  if (ki < 0 || ki >= p->nkernels || !tp_em_gemm_supported(p, &p->kernels[ki], rs, cs))
    return tp_fail(TP_ERR_UNSUPPORTED, "wasm emitter: kernel %d is not a generated GEMM", ki);
  tp_wasm_module *m = NULL;
  TP_TRY(tp_wasm_module_init(&m));
  uint32_t type;
  const uint8_t params[3] = {TP_WASM_I32, TP_WASM_I32, TP_WASM_I32}; /* (ptrs, p0, p1) as in tp_emit_wasm */
  tp_status s = tp_wasm_module_add_type(m, 3, params, 0, NULL, &type);
  tp_wasm_limits lim = TP_WASM_CORE_MEMORY(1);
  if (!s) s = tp_wasm_module_import_memory(m, "env", "memory", lim);
  tp_kir_prep pr;
  tp_kir_prepare(&p->kernels[ki], &pr);
  for (int v = 0; v < nmr && !s; v++) {
    uint32_t fidx;
    char name[16];
    s = emit_kernel(m, type, p, ki, NULL, &pr, o && o->relaxed_simd, mrs[v], NULL, 0, 0, NULL, &fidx);
    snprintf(name, sizeof name, "f%d", v);
    if (!s) s = tp_wasm_module_export_func(m, name, fidx);
    if (!s) out->nfuncs++;
  }
  return finish_module(m, s, 0, out);
}

