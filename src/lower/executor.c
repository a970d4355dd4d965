/* executor.c - runs a Kernel IR program in every build (native, wasi,
 * Emscripten). Pointwise and row kernels evaluate their expression over
 * chunks of up to CH elements with the ISA kernel table, so a fused chain is
 * one pass over memory with vectorized math and no per-element dispatch;
 * loads with unit stride read memory in place, broadcast loads and per-row
 * values are scalars, other strides gather into a chunk. GEMMs call the
 * packed GEMM and run their epilogue on the result. Op kernels call the
 * eager operator. Temporaries live in one arena planned by tp_memplan.
 *
 * An accelerator (lower.h's tp_lower_accel, e.g. generated Wasm kernels
 * from src/codegen/plan_jit.c) may be attached to a plan: tp_plan_run then
 * offers it the run first and runs the kernels itself only when it
 * declines. The executor keeps only the accelerator's opaque state.
 *
 * Threads: a plan is used by one thread at a time (tp_plan_run re-entered
 * from a host callback on the same thread gets a private arena); the one
 * global, the GEMM tuning cache, is locked (tp_tune_cache). Large kernels
 * split their work over the runtime's pool (runtime/pool.h): pointwise
 * kernels by chunks of CH elements, row kernels by rows, GEMMs by blocks of
 * rows (a constant B packed once and shared) or of columns (each chunk packs
 * its own columns of B). Every output element is computed by the same
 * operations in the same order whatever the split, so results are the same
 * bits for any thread count. Below a measured amount of work per kernel kind
 * (PAR_* below; docs/architecture.md "Threads") a kernel runs on the caller. */
#include "plan_impl.h"
#include "../runtime/pool.h"
#include "../core/num.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* Work sizing: the least work per chunk worth a thread, per kernel kind
 * (measured with tpc bench --threads, docs/architecture.md "Threads"). */
#define PAR_PW_ELEMS 32768     /* pointwise: elements */
#define PAR_ROW_ELEMS 16384    /* row kernels: elements (rows x (row length + PAR_ROW_COST)) */
#define PAR_ROW_COST 48        /* a row kernel's fixed cost per row, in elements (about 130 ns) */
#define PAR_GEMM_FLOPS 4000000 /* GEMM: 2 M N K */
#define GEMM_ROWS 24           /* row blocks: a multiple of every MR (4, 6, 12) */
#define GEMM_COLS 64           /* column blocks: a multiple of every NR (8, 16, 32) */
#define GEMM_ROW_UNIT 12       /* the 2-D split's row granularity: every MR divides it */

/* ---- expression evaluation over a chunk ---- */
typedef struct evalctx {
  const tp_kernels *K;
  float *scratch;
  const tp_kir_kernel *k;
  const float *slot_ptr[TP_KIR_MAX_IN]; /* at the chunk start */
  int64_t slot_st[TP_KIR_MAX_IN];       /* inner stride */
  unsigned char h16[TP_KIR_MAX_IN];     /* 1: the slot's buffer is float16 (its pointers are
                                           uint16_t pointers; a load converts, slot_at) */
  const float *rowvals;
  const float *acc;                     /* GEMM epilogue: accumulator chunk */
} evalctx;

/* Element k of a slot from its pointer b: float32, or float16 (h16). */
static inline const float *slot_at(const float *b, int h16, int64_t k) {
  return h16 ? (const float *)(const void *)((const uint16_t *)(const void *)b + k) : b + k;
}

/* Evaluates e over n elements; the result is a pointer (or scalar *sc with
 * *is_sc). dst: where the last instruction may write directly (or NULL). */
static const float *eval(const evalctx *c, const tp_kir_expr *e, int64_t n, float *dst, float *sc_out,
                         int *is_sc_out) {
  const float *v[TP_KIR_MAX_INS];
  float sc[TP_KIR_MAX_INS];
  char is_sc[TP_KIR_MAX_INS];
  for (int i = 0; i < e->n; i++) {
    const tp_kir_ins *x = &e->ins[i];
    float *buf = (i == e->n - 1 && dst) ? dst : c->scratch + (size_t)i * CH;
    is_sc[i] = 0;
    v[i] = buf;
    switch (x->op) {
      case TP_KI_LOAD: {
        int64_t s = c->slot_st[x->in];
        const float *p = c->slot_ptr[x->in];
        if (c->h16[x->in]) { /* float16: converted in the chunk (F16C / the scalar conversion) */
          const uint16_t *h = (const uint16_t *)(const void *)p;
          if (s == 0) {
            is_sc[i] = 1;
            sc[i] = tp_f16_to_f32(h[0]);
          } else if (s == 1) {
            c->K->f16_to_f32(h, buf, n);
          } else {
            for (int64_t j = 0; j < n; j++) buf[j] = tp_f16_to_f32(h[j * s]);
          }
        } else if (s == 0) {
          is_sc[i] = 1;
          sc[i] = p[0];
        } else if (s == 1) {
          v[i] = p;
        } else {
          for (int64_t j = 0; j < n; j++) buf[j] = p[j * s];
        }
        break;
      }
      case TP_KI_CONST: is_sc[i] = 1, sc[i] = x->imm; break;
      case TP_KI_ROWVAL: is_sc[i] = 1, sc[i] = c->rowvals[x->in]; break;
      case TP_KI_ACC: v[i] = c->acc; break;
      case TP_KI_UNARY:
        if (is_sc[x->a]) {
          is_sc[i] = 1;
          c->K->unary_fast_f32(x->sub, &sc[x->a], &sc[i], 1);
        } else {
          c->K->unary_fast_f32(x->sub, v[x->a], buf, n);
        }
        break;
      case TP_KI_BINARY: {
        int sa = is_sc[x->a], sb = is_sc[x->b];
        if (sa && sb) {
          is_sc[i] = 1;
          c->K->binary_f32(x->sub, TP_KBMODE_VV, &sc[x->a], &sc[x->b], &sc[i], 1);
        } else if (sa) {
          c->K->binary_f32(x->sub, TP_KBMODE_SV, &sc[x->a], v[x->b], buf, n);
        } else if (sb) {
          c->K->binary_f32(x->sub, TP_KBMODE_VS, v[x->a], &sc[x->b], buf, n);
        } else {
          c->K->binary_f32(x->sub, TP_KBMODE_VV, v[x->a], v[x->b], buf, n);
        }
        break;
      }
    }
  }
  int last = e->n - 1;
  *is_sc_out = is_sc[last];
  *sc_out = sc[last];
  return v[last];
}

static void store(float *out, const float *v, float sc, int is_sc, int64_t n) {
  if (is_sc) {
    for (int64_t j = 0; j < n; j++) out[j] = sc;
  } else if (v != out) {
    memcpy(out, v, sizeof(float) * (size_t)n);
  }
}

/* A chunk stored into a float16 buffer: rounded to nearest even (ONNX Cast). */
static void store_h16(const tp_kernels *K, uint16_t *out, const float *v, float sc, int is_sc, int64_t n) {
  if (is_sc) {
    uint16_t h = tp_f32_to_f16(sc);
    for (int64_t j = 0; j < n; j++) out[j] = h;
  } else {
    K->f32_to_f16(v, out, n);
  }
}

/* Buffer base pointers for this run. */
typedef struct runctx {
  tp_plan *pl;
  void **ptr;
  tp_tensor **outs;
  tp_tensor **inputs;
} runctx;

static const float *slot_base(const runctx *r, const tp_kir_load *L) {
  return slot_at((const float *)r->ptr[L->buf], r->pl->p->bufs[L->buf].desc.dtype == TP_F16, L->offset);
}

/* Advance the load offsets to the next row (all dims but the last). */
static void next_row(const tp_kir_kernel *k, const prep *pr, int64_t *idx, int64_t *off) {
  for (int d = pr->nd - 2; d >= 0; d--) {
    for (int i = 0; i < k->nin; i++) off[i] += pr->st[i][d];
    if (++idx[d] < pr->shape[d]) return;
    for (int i = 0; i < k->nin; i++) off[i] -= pr->st[i][d] * pr->shape[d];
    idx[d] = 0;
  }
}

/* The evaluation context of a pointwise or row kernel: slot base pointers
 * and innermost strides; returns the innermost extent. */
static int64_t eval_setup(const runctx *r, const tp_kir_kernel *k, const prep *pr, evalctx *c,
                          const float **base) {
  memset(c, 0, sizeof *c);
  c->K = tp_kern();
  c->scratch = r->pl->scratch;
  c->k = k;
  for (int i = 0; i < k->nin; i++) {
    base[i] = slot_base(r, &k->in[i]);
    c->slot_st[i] = pr->st[i][pr->nd - 1];
    c->h16[i] = r->pl->p->bufs[k->in[i].buf].desc.dtype == TP_F16;
  }
  return pr->shape[pr->nd - 1];
}

/* Load offsets of row `row` (all dims but the last). */
static void row_offsets(const tp_kir_kernel *k, const prep *pr, int64_t row, int64_t *idx,
                        int64_t *off) {
  for (int i = 0; i < k->nin; i++) off[i] = 0;
  for (int d = pr->nd - 2; d >= 0; d--) {
    idx[d] = row % pr->shape[d];
    row /= pr->shape[d];
    for (int i = 0; i < k->nin; i++) off[i] += idx[d] * pr->st[i][d];
  }
}

/* Short rows (innermost extent <= CH / 8 and several rows: an interleave,
 * a permuted GEMM result, a transposed convolution's output, a nearest
 * upsample along the last axis): chunks of whole rows of one block of the
 * next-to-last dim, each load gathered into its own chunk with two strides,
 * instead of one evaluation per row of a few elements. On the caller (its
 * scratch holds the gather chunks after the evaluation's). 1 if done. */
static int run_short_rows(const runctx *r, const tp_kir_kernel *k, const prep *pr, float *out,
                          const float *acc_base) {
  int nd = pr->nd;
  int64_t inner = pr->shape[nd - 1], outer = inner ? tp_shape_numel(nd - 1, pr->shape) : 0;
  if (!(inner > 0 && inner <= CH / 8 && outer > 1)) return 0;
  evalctx c;
  const float *base[TP_KIR_MAX_IN];
  eval_setup(r, k, pr, &c, base);
  int64_t idx[TP_MAX_DIMS] = {0}, off[TP_KIR_MAX_IN] = {0};
  int64_t o = 0;
  int oh = r->pl->p->bufs[k->out].desc.dtype == TP_F16; /* a float16 output (pointwise) */
  /* short rows (an interleave: a permuted GEMM result, a transposed
   * convolution's output, a nearest upsample along the last axis):
   * chunks of whole rows of one block of the next-to-last dim, each load
   * gathered into its own chunk with two strides, instead of one
   * evaluation per row of a few elements */
  int64_t rows_per = CH / inner, d2 = pr->shape[nd - 2];
  float *gbuf = r->pl->scratch + (size_t)(TP_KIR_MAX_INS + 2) * CH;
  int64_t st[TP_KIR_MAX_IN];
  unsigned char h16[TP_KIR_MAX_IN];
  memcpy(st, c.slot_st, sizeof st);
  memcpy(h16, c.h16, sizeof h16);
  for (int i = 0; i < k->nin; i++) c.slot_st[i] = 1, c.h16[i] = 0; /* the gathered chunks: float32 */
  for (int64_t row = 0; row < outer;) {
    int64_t nr = d2 - idx[nd - 2];
    if (nr > rows_per) nr = rows_per;
    int64_t n = nr * inner;
    for (int i = 0; i < k->nin; i++) {
      const float *p = slot_at(base[i], h16[i], off[i]);
      float *g = gbuf + (size_t)i * CH;
      int64_t s1 = st[i], s2 = pr->st[i][nd - 2];
      if (h16[i]) { /* float16: converted as gathered */
        const uint16_t *h = (const uint16_t *)(const void *)p;
        for (int64_t q = 0; q < nr; q++, h += s2, g += inner)
          for (int64_t j = 0; j < inner; j++) g[j] = tp_f16_to_f32(h[j * s1]);
      } else if (inner == 2)
        for (int64_t q = 0; q < nr; q++, p += s2, g += 2) g[0] = p[0], g[1] = p[s1];
      else
        for (int64_t q = 0; q < nr; q++, p += s2, g += inner)
          for (int64_t j = 0; j < inner; j++) g[j] = p[j * s1];
      c.slot_ptr[i] = gbuf + (size_t)i * CH;
    }
    c.acc = acc_base ? acc_base + o : NULL;
    float sc;
    int is_sc;
    const float *v = eval(&c, &k->expr, n, oh ? NULL : out + o, &sc, &is_sc);
    if (oh) store_h16(c.K, (uint16_t *)(void *)out + o, v, sc, is_sc, n);
    else store(out + o, v, sc, is_sc, n);
    o += n;
    row += nr;
    /* advance nr rows: within the block, then carry as next_row does */
    idx[nd - 2] += nr;
    for (int i = 0; i < k->nin; i++) off[i] += nr * pr->st[i][nd - 2];
    if (idx[nd - 2] == d2) {
      for (int i = 0; i < k->nin; i++) off[i] -= pr->st[i][nd - 2] * d2;
      idx[nd - 2] = 0;
      for (int d = nd - 3; d >= 0; d--) {
        for (int i = 0; i < k->nin; i++) off[i] += pr->st[i][d];
        if (++idx[d] < pr->shape[d]) break;
        for (int i = 0; i < k->nin; i++) off[i] -= pr->st[i][d] * pr->shape[d];
        idx[d] = 0;
      }
    }
  }
  return 1;
}

/* Evaluation scratch for nslots pool threads (slot s: + s * SCRATCH_FLOATS),
 * or NULL (then the kernel runs on the caller). */
static float *par_scratch(tp_plan *pl, int nslots) {
  if (nslots <= 1) return NULL;
  if (pl->par_nscratch < nslots) {
    float *b = tp_alloc(sizeof(float) * SCRATCH_FLOATS * (size_t)nslots);
    if (!b) return NULL;
    tp_free(pl->par_scratch);
    pl->par_scratch = b, pl->par_nscratch = nslots;
  }
  return pl->par_scratch;
}

typedef struct pw_job {
  const runctx *r;
  const tp_kir_kernel *k;
  const prep *pr;
  float *out, *scratch;
  const float *acc_base;
  int64_t inner, nch; /* row length, chunks of CH per row */
  int out_h16;        /* out is a float16 buffer: each chunk rounded into it */
} pw_job;

/* Units [u0, u1) of a pointwise kernel: unit u is chunk u % nch of row u / nch. */
static void pw_units(const pw_job *j, float *scratch, int64_t u0, int64_t u1) {
  evalctx c;
  const float *base[TP_KIR_MAX_IN];
  const tp_kir_kernel *k = j->k;
  eval_setup(j->r, k, j->pr, &c, base);
  c.scratch = scratch;
  int64_t idx[TP_MAX_DIMS] = {0}, off[TP_KIR_MAX_IN] = {0}, row = -1;
  for (int64_t u = u0; u < u1; u++) {
    int64_t rw = u / j->nch, c0 = (u % j->nch) * CH, o = rw * j->inner;
    if (rw != row) {
      if (rw == row + 1 && row >= 0) next_row(k, j->pr, idx, off);
      else row_offsets(k, j->pr, rw, idx, off);
      row = rw;
    }
    int64_t n = j->inner - c0 < CH ? j->inner - c0 : CH;
    for (int i = 0; i < k->nin; i++) c.slot_ptr[i] = slot_at(base[i], c.h16[i], off[i] + c0 * c.slot_st[i]);
    c.acc = j->acc_base ? j->acc_base + o + c0 : NULL;
    float sc;
    int is_sc;
    const float *v = eval(&c, &k->expr, n, j->out_h16 ? NULL : j->out + o + c0, &sc, &is_sc);
    if (j->out_h16) store_h16(c.K, (uint16_t *)(void *)j->out + o + c0, v, sc, is_sc, n);
    else store(j->out + o + c0, v, sc, is_sc, n);
  }
}

static void pw_task(void *ctx, int slot, int64_t u0, int64_t u1) {
  const pw_job *j = ctx;
  pw_units(j, j->scratch + (size_t)slot * SCRATCH_FLOATS, u0, u1);
}

/* A copy kernel (the expression is one load: a nearest upsample's
 * broadcast, a permute's interleave, a reshape the strides cannot express)
 * copies straight from the load's buffer over its two innermost merged
 * dims: a row is a memmove (unit stride), a fill (stride 0; pairs of
 * equal values for a 2x upsample along the last axis), or a strided
 * gather, instead of gathering into a chunk, evaluating and storing it.
 * Units are blocks of the dims before them, split over the pool. */
typedef struct cp_job {
  const float *src;
  float *out;
  const prep *pr;
  int64_t nb, blk; /* blocks of blk rows of the next-to-last dim per outer index */
} cp_job;

static void cp_units(const cp_job *j, int64_t u0, int64_t u1) {
  const prep *pr = j->pr;
  int nd = pr->nd;
  const int64_t *st = pr->st[0];
  int64_t d1 = pr->shape[nd - 1], s1 = st[nd - 1];
  int64_t d2 = nd >= 2 ? pr->shape[nd - 2] : 1, s2 = nd >= 2 ? st[nd - 2] : 0;
  for (int64_t u = u0; u < u1; u++) {
    int64_t ou = u / j->nb, a0 = (u % j->nb) * j->blk, a1 = a0 + j->blk < d2 ? a0 + j->blk : d2, off = 0, rem = ou;
    for (int d = nd - 3; d >= 0; d--) {
      off += (rem % pr->shape[d]) * st[d];
      rem /= pr->shape[d];
    }
    const float *p = j->src + off;
    float *o = j->out + (ou * d2 + a0) * d1;
    if (s1 == 0 && d1 == 2) {
      for (int64_t a = a0; a < a1; a++, o += 2) o[0] = o[1] = p[a * s2];
    } else if (s1 == 1 && d1 == 2) {
      for (int64_t a = a0; a < a1; a++, o += 2) o[0] = p[a * s2], o[1] = p[a * s2 + 1];
    } else {
      for (int64_t a = a0; a < a1; a++, o += d1) {
        const float *q = p + a * s2;
        if (s1 == 1) memmove(o, q, (size_t)d1 * sizeof(float));
        else if (s1 == 0) for (int64_t b = 0; b < d1; b++) o[b] = q[0];
        else for (int64_t b = 0; b < d1; b++) o[b] = q[b * s1];
      }
    }
  }
}

static void cp_task(void *ctx, int slot, int64_t u0, int64_t u1) {
  (void)slot;
  cp_units(ctx, u0, u1);
}

static int run_copy(const runctx *r, const tp_kir_kernel *k, const prep *pr, float *out) {
  /* one load, in slot 0 (the prep's strides are per slot), float32 in and
   * out (a float16 load or store converts: the chunked path) */
  if (k->expr.n != 1 || k->expr.ins[0].op != TP_KI_LOAD || k->expr.ins[0].in != 0 || k->nin < 1 || pr->nd < 1)
    return 0;
  const tp_kir_buf *bufs = r->pl->p->bufs;
  if (bufs[k->in[0].buf].desc.dtype != TP_F32 || bufs[k->out].desc.dtype != TP_F32) return 0;
  int nd = pr->nd;
  int64_t d1 = pr->shape[nd - 1], d2 = nd >= 2 ? pr->shape[nd - 2] : 1;
  if (d1 == 0 || d2 == 0) return 1;
  int64_t outer = tp_shape_numel(nd, pr->shape) / (d1 * d2), blk = 4096 / d1 > 0 ? 4096 / d1 : 1;
  if (blk > d2) blk = d2;
  cp_job j = {slot_base(r, &k->in[0]), out, pr, (d2 + blk - 1) / blk, blk};
  int64_t units = outer * j.nb, grain = PAR_PW_ELEMS / (blk * d1) > 0 ? PAR_PW_ELEMS / (blk * d1) : 1;
  int nc = tp_parallel_slots(units, grain);
  if (nc > 1) tp_parallel_run(units, grain, nc, cp_task, &j);
  else cp_units(&j, 0, units);
  return 1;
}

static void run_pointwise(const runctx *r, const tp_kir_kernel *k, const prep *pr, float *out,
                          const float *acc_base) {
  if (!acc_base && run_copy(r, k, pr, out)) return;
  if (run_short_rows(r, k, pr, out, acc_base)) return;
  int nd = pr->nd;
  int64_t inner = pr->shape[nd - 1], outer = inner ? tp_shape_numel(nd - 1, pr->shape) : 0;
  pw_job j = {r, k, pr, out, r->pl->scratch, acc_base, inner, (inner + CH - 1) / CH,
              r->pl->p->bufs[k->out].desc.dtype == TP_F16};
  int64_t units = outer * j.nch, grain = PAR_PW_ELEMS / CH;
  int nc = tp_parallel_slots(units, grain);
  float *ps = nc > 1 && r->pl->running == 1 ? par_scratch(r->pl, nc) : NULL;
  if (!ps) {
    pw_units(&j, r->pl->scratch, 0, units);
    return;
  }
  j.scratch = ps;
  tp_parallel_run(units, grain, nc, pw_task, &j);
}

typedef struct row_job {
  const runctx *r;
  const tp_kir_kernel *k;
  const prep *pr;
  float *out, *scratch;
} row_job;

/* A TP_KR_MINMAX row (its one phase): mm[0] = min, mm[1] = max in one
 * pass over the row (the ISA table's minmax_f32 per block: one load per
 * element for both); NaN propagates to both. c's slot pointers
 * at the row start. */
#define MINMAX_BLOCK 4096 /* a plain contiguous row: blocks read in place */
static void minmax_row(evalctx *c, const tp_kir_kernel *k, int64_t R, float *mm) {
  const tp_kir_expr *e = &k->phases[0].expr;
  const float *row[TP_KIR_MAX_IN];
  memcpy(row, c->slot_ptr, sizeof row);
  int direct = e->n == 1 && e->ins[0].op == TP_KI_LOAD && c->slot_st[e->ins[0].in] == 1 && !c->h16[e->ins[0].in];
  int64_t blk = direct ? MINMAX_BLOCK : CH;
  float lo = INFINITY, hi = -INFINITY, *acc = c->scratch + (size_t)TP_KIR_MAX_INS * CH;
  for (int64_t c0 = 0; c0 < R; c0 += blk) {
    int64_t n = R - c0 < blk ? R - c0 : blk;
    const float *v;
    if (direct) {
      v = row[e->ins[0].in] + c0;
    } else {
      float sc;
      int is_sc;
      for (int i = 0; i < k->nin; i++) c->slot_ptr[i] = slot_at(row[i], c->h16[i], c0 * c->slot_st[i]);
      v = eval(c, e, n, acc, &sc, &is_sc);
      if (is_sc) acc[0] = sc, v = acc, n = 1;
    }
    float m[2];
    c->K->minmax_f32(v, n, m);
    if (m[0] != m[0] || (lo == lo && m[0] < lo)) lo = m[0];
    if (m[1] != m[1] || (hi == hi && m[1] > hi)) hi = m[1];
  }
  mm[0] = lo, mm[1] = hi;
}

/* Rows [r0, r1) of a row kernel. */
static void row_range(const row_job *j, float *scratch, int64_t r0, int64_t r1) {
  evalctx c;
  const float *base[TP_KIR_MAX_IN];
  const tp_kir_kernel *k = j->k;
  const prep *pr = j->pr;
  float *out = j->out;
  int64_t R = eval_setup(j->r, k, pr, &c, base);
  int64_t idx[TP_MAX_DIMS] = {0}, off[TP_KIR_MAX_IN] = {0};
  float rowvals[TP_KIR_MAX_PHASES];
  c.scratch = scratch;
  float *acc = scratch + (size_t)TP_KIR_MAX_INS * CH; /* a reduce chunk */
  int store_rows = k->phases[k->nphases - 1].is_reduce;
  c.rowvals = rowvals;
  if (r0 < r1) row_offsets(k, pr, r0, idx, off);
  /* softmax / log_softmax (try_row's three phases): the prologue written
   * into the output row, then the table's in-place softmax_f32 (one exp per
   * element where the phases compute it twice: for the sum, then the map) */
  const tp_graph *g = j->r->pl->p->graph;
  int sm = k->nphases == 3 && k->node >= 0 && k->node < g->n && !store_rows ? (int)g->nodes[k->node].op : -1;
  if (sm != (int)TP_OP_SOFTMAX && sm != (int)TP_OP_LOG_SOFTMAX) sm = -1;
  for (int64_t row = r0; row < r1; row++) {
    int nrv = 0;
    if (sm >= 0) {
      float *y = out + row * R;
      for (int64_t c0 = 0; c0 < R; c0 += CH) {
        int64_t n = R - c0 < CH ? R - c0 : CH;
        for (int i = 0; i < k->nin; i++) c.slot_ptr[i] = slot_at(base[i], c.h16[i], off[i] + c0 * c.slot_st[i]);
        float sc;
        int is_sc;
        const float *v = eval(&c, &k->phases[0].expr, n, y + c0, &sc, &is_sc);
        store(y + c0, v, sc, is_sc, n);
      }
      c.K->softmax_f32(y, R, sm == (int)TP_OP_LOG_SOFTMAX);
      next_row(k, pr, idx, off);
      continue;
    }
    if (k->phases[0].reduce == TP_KR_MINMAX) { /* one pass for both extremes */
      for (int i = 0; i < k->nin; i++) c.slot_ptr[i] = slot_at(base[i], c.h16[i], off[i]);
      minmax_row(&c, k, R, out + 2 * row);
      next_row(k, pr, idx, off);
      continue;
    }
    for (int q = 0; q < k->nphases; q++) {
      const tp_kir_phase *ph = &k->phases[q];
      float red = ph->reduce == TP_KR_SUM ? 0.0f : ph->reduce == TP_KR_MAX ? -INFINITY : INFINITY;
      for (int64_t c0 = 0; c0 < R; c0 += CH) {
        int64_t n = R - c0 < CH ? R - c0 : CH;
        for (int i = 0; i < k->nin; i++) c.slot_ptr[i] = slot_at(base[i], c.h16[i], off[i] + c0 * c.slot_st[i]);
        float sc;
        int is_sc;
        float *dst = ph->is_reduce ? acc : out + row * R + c0;
        const float *v = eval(&c, &ph->expr, n, dst, &sc, &is_sc);
        if (!ph->is_reduce) {
          store(dst, v, sc, is_sc, n);
          continue;
        }
        if (is_sc) {
          for (int64_t jj = 0; jj < n; jj++) acc[jj] = sc;
          v = acc;
        }
        if (ph->reduce == TP_KR_SUM) {
          red += c.K->sum_f32(v, n);
        } else if (ph->reduce == TP_KR_MAX) {
          float m = c.K->max_f32(v, n);
          red = (m > red || m != m || red != red) ? m : red;
        } else {
          for (int64_t jj = 0; jj < n; jj++) red = (v[jj] < red || v[jj] != v[jj]) ? v[jj] : red;
        }
      }
      if (ph->is_reduce) {
        if (ph->reduce == TP_KR_MAX && red == -INFINITY && !store_rows) red = 0; /* all -inf row */
        rowvals[nrv++] = ph->scale != 1.0f ? red * ph->scale : red;
      }
    }
    if (store_rows) out[row] = rowvals[0];
    next_row(k, pr, idx, off);
  }
}

static void row_task(void *ctx, int slot, int64_t r0, int64_t r1) {
  const row_job *j = ctx;
  row_range(j, j->scratch + (size_t)slot * SCRATCH_FLOATS, r0, r1);
}

static void run_row(const runctx *r, const tp_kir_kernel *k, const prep *pr, float *out) {
  int nd = pr->nd;
  int64_t R = pr->shape[nd - 1], rows = R ? tp_shape_numel(nd - 1, pr->shape) : 0;
  row_job j = {r, k, pr, out, r->pl->scratch};
  /* work per row: its elements plus the fixed cost of a row (phases set
   * up, the next row's offsets): short rows (a softmax over 2 classes per
   * anchor, R1's output) cost far more than their elements */
  int64_t grain = R > 0 ? (PAR_ROW_ELEMS + R + PAR_ROW_COST - 1) / (R + PAR_ROW_COST) : 1;
  int nc = tp_parallel_slots(rows, grain);
  float *ps = nc > 1 && r->pl->running == 1 ? par_scratch(r->pl, nc) : NULL;
  if (!ps) {
    row_range(&j, r->pl->scratch, 0, rows);
    return;
  }
  j.scratch = ps;
  tp_parallel_run(rows, grain, nc, row_task, &j);
}

const void *tp_plan_packed_b(const tp_plan *pl, int ki);
static void *packed_b(const tp_plan *pl, int ki) { return (void *)tp_plan_packed_b(pl, ki); }
const void *tp_plan_packed_b(const tp_plan *pl, int ki) {
  char *raw = pl->packed ? pl->packed[ki] : NULL;
  if (!raw || pl->packed_by != tp_kern()) return NULL; /* the ISA changed: unpacked path */
  return (void *)(((uintptr_t)raw + sizeof(void *) + 63) & ~(uintptr_t)63);
}

/* The plan's evaluation scratch (SCRATCH_FLOATS floats, tp_alloc's alignment):
 * free between kernels, for an accelerator's own use during one. */
float *tp_plan_scratch(const tp_plan *pl, size_t *nfloats) {
  *nfloats = SCRATCH_FLOATS;
  return pl->scratch;
}

/* A float16 constant B's panels (b_f16: gemm_pack_b_f16's layout), or NULL. */
const void *tp_plan_packed_b_f16(const tp_plan *pl, int ki) {
  char *raw = pl->packed_h ? pl->packed_h[ki] : NULL;
  if (!raw || pl->packed_by != tp_kern()) return NULL; /* the ISA changed: converted per call */
  return (void *)(((uintptr_t)raw + sizeof(void *) + 63) & ~(uintptr_t)63);
}

typedef struct gemm_job {
  const tp_kernels *K;
  const tp_kir_kernel *k;
  const float *A, *B, *pb, *bias;
  float *out;
  int64_t ncb; /* column blocks per batch (by_cols) */
  int by_cols, tuned;
  const uint16_t *ph; /* a float16 B's panels (b_f16; batch 1), or NULL */
  const float *pa;    /* a constant A packed once per plan (gemm_pa_task), or NULL */
  int64_t rows_per;   /* split2d: full rows per thread (a multiple of GEMM_ROW_UNIT) */
  int threads;        /* split2d: its units, one per thread */
} gemm_job;

/* A constant A packed once (a 1x1 convolution's weight, the activation as
 * B): units [u0, u1) are column blocks of GEMM_COLS of B and C, every
 * thread reading the shared packed A. The depth and row blocking do not
 * depend on the column count, so each element gets the same operations as
 * in one call over all columns (the conv2d kernel's 1x1 path splits the
 * same way): the same bits for any thread count. */
static void gemm_pa_task(void *ctx, int slot, int64_t u0, int64_t u1) {
  (void)slot;
  const gemm_job *j = ctx;
  const tp_kir_kernel *k = j->k;
  const tp_kernels *K = j->K;
  int64_t n0 = u0 * GEMM_COLS, n1 = u1 * GEMM_COLS < k->N ? u1 * GEMM_COLS : k->N;
  if (j->tuned) K->gemm_tune(k->tune_kc, k->tune_mc); /* per thread: the layout follows KC */
  K->gemm_f32_packed_a(k->M, n1 - n0, k->K, j->pa, j->B + n0 * k->b_cs, k->b_rs, k->b_cs, j->out + n0, k->N,
                       j->bias ? j->bias + n0 : NULL);
  if (j->tuned) K->gemm_tune(0, 0);
}
/* The same by rows: units [u0, u1) are row blocks of GEMM_ROW_UNIT (every
 * MR divides it, so each row keeps its micro-kernel panel), each chunk
 * packing all of B: for few columns (det's 384x35x384 1x1 convolutions,
 * one column block) */
static void gemm_pa_rows_task(void *ctx, int slot, int64_t u0, int64_t u1) {
  (void)slot;
  const gemm_job *j = ctx;
  const tp_kir_kernel *k = j->k;
  const tp_kernels *K = j->K;
  int64_t m0 = u0 * GEMM_ROW_UNIT, m1 = u1 * GEMM_ROW_UNIT < k->M ? u1 * GEMM_ROW_UNIT : k->M;
  if (j->tuned) K->gemm_tune(k->tune_kc, k->tune_mc);
  K->gemm_f32_packed_a_rows(k->M, k->N, k->K, j->pa, m0, m1, j->B, k->b_rs, k->b_cs, j->out, k->N, j->bias);
  if (j->tuned) K->gemm_tune(0, 0);
}

/* The 2-D split of a GEMM over a B packed once (batch 1), one unit per
 * thread: unit t takes rows [t rows_per, (t + 1) rows_per) whole, and its
 * share of the column blocks of the rows left over below (fewer than
 * threads * GEMM_ROW_UNIT, plus M's tail). Row blocks alone cut W4's 128
 * rows into 72 + 56 on 2 threads (at most 1.78x); this gives each thread
 * 60 rows and 8 rows of 256 columns. Either part gives every element the
 * same operations as one call (the depth blocking does not depend on the
 * rows or columns taken): the same bits for any thread count. */
static int64_t split2d_rows(int64_t M, int threads) {
  return M / GEMM_ROW_UNIT / threads * GEMM_ROW_UNIT;
}
static int split2d_fits(const tp_kir_kernel *k, int threads) {
  int64_t rows = split2d_rows(k->M, threads), ncb = (k->N + GEMM_COLS - 1) / GEMM_COLS;
  return threads > 1 && k->batch == 1 && rows > 0 && rows * threads < k->M && ncb >= threads;
}
static void gemm_2d_task(void *ctx, int slot, int64_t u0, int64_t u1);
/* Runs j (its pb or ph set) with the 2-D split when it fits: 1, else 0. */
static int run_split2d(gemm_job *j, int threads, int64_t flops) {
  if (threads < 2 || flops < 2 * PAR_GEMM_FLOPS || !split2d_fits(j->k, threads)) return 0;
  j->rows_per = split2d_rows(j->k->M, threads), j->threads = threads;
  tp_parallel_run(threads, 1, threads, gemm_2d_task, j);
  return 1;
}
static void gemm_2d_task(void *ctx, int slot, int64_t u0, int64_t u1) {
  (void)slot;
  const gemm_job *j = ctx;
  const tp_kir_kernel *k = j->k;
  const tp_kernels *K = j->K;
  if (j->tuned) K->gemm_tune(k->tune_kc, k->tune_mc);
  for (int64_t t = u0; t < u1; t++) {
    int64_t m0 = t * j->rows_per, mt = j->rows_per * j->threads;
    if (j->ph)
      K->gemm_f32_packed_f16(j->rows_per, k->N, k->K, j->A + m0 * k->a_rs, k->a_rs, k->a_cs, j->ph,
                             j->out + m0 * k->N, k->N, j->bias);
    else
      K->gemm_f32_packed(j->rows_per, k->N, k->K, j->A + m0 * k->a_rs, k->a_rs, k->a_cs, j->pb,
                         j->out + m0 * k->N, k->N, j->bias);
    int64_t c0 = j->ncb * t / j->threads, c1 = j->ncb * (t + 1) / j->threads;
    int64_t n0 = c0 * GEMM_COLS, n1 = c1 * GEMM_COLS < k->N ? c1 * GEMM_COLS : k->N;
    if (n1 <= n0) continue;
    if (j->ph)
      K->gemm_f32_packed_f16_cols(k->M - mt, k->N, k->K, j->A + mt * k->a_rs, k->a_rs, k->a_cs, j->ph, n0, n1,
                                  j->out + mt * k->N, k->N, j->bias);
    else
      K->gemm_f32_packed_cols(k->M - mt, k->N, k->K, j->A + mt * k->a_rs, k->a_rs, k->a_cs, j->pb, n0, n1,
                              j->out + mt * k->N, k->N, j->bias);
  }
  if (j->tuned) K->gemm_tune(0, 0);
}

/* Units [u0, u1): row blocks of GEMM_ROWS (B shared: packed, or each chunk
 * packs all of it) or, by_cols, column blocks of GEMM_COLS per batch entry
 * (each chunk packs its columns of B). */
static void gemm_task(void *ctx, int slot, int64_t u0, int64_t u1) {
  (void)slot;
  const gemm_job *j = ctx;
  const tp_kir_kernel *k = j->k;
  const tp_kernels *K = j->K;
  if (j->tuned) K->gemm_tune(k->tune_kc, k->tune_mc); /* per thread */
  if (!j->by_cols) {
    int64_t m0 = u0 * GEMM_ROWS, m1 = u1 * GEMM_ROWS < k->M ? u1 * GEMM_ROWS : k->M;
    const float *A = j->A + m0 * k->a_rs;
    float *C = j->out + m0 * k->N;
    if (j->ph)
      K->gemm_f32_packed_f16(m1 - m0, k->N, k->K, A, k->a_rs, k->a_cs, j->ph, C, k->N, j->bias);
    else if (j->pb)
      K->gemm_f32_packed(m1 - m0, k->N, k->K, A, k->a_rs, k->a_cs, j->pb, C, k->N, j->bias);
    else
      K->gemm_f32(m1 - m0, k->N, k->K, A, k->a_rs, k->a_cs, j->B, k->b_rs, k->b_cs, C, k->N,
                  j->bias);
  } else {
    for (int64_t u = u0; u < u1;) { /* contiguous columns of one batch entry: one call */
      int64_t b = u / j->ncb, c0 = u % j->ncb, c1 = u1 - b * j->ncb < j->ncb ? u1 - b * j->ncb : j->ncb;
      int64_t n0 = c0 * GEMM_COLS, n1 = c1 * GEMM_COLS < k->N ? c1 * GEMM_COLS : k->N;
      if (j->ph) { /* the float16 panels (batch 1): n0 .. n1 */
        K->gemm_f32_packed_f16_cols(k->M, k->N, k->K, j->A, k->a_rs, k->a_cs, j->ph, n0, n1, j->out,
                                    k->N, j->bias);
        u += c1 - c0;
        continue;
      }
      if (j->pb) { /* the shared packed B (batch 1): its panels n0 .. n1 */
        K->gemm_f32_packed_cols(k->M, k->N, k->K, j->A, k->a_rs, k->a_cs, j->pb, n0, n1, j->out,
                                k->N, j->bias);
        u += c1 - c0;
        continue;
      }
      K->gemm_f32(k->M, n1 - n0, k->K, j->A + b * k->a_bs, k->a_rs, k->a_cs,
                  j->B + b * k->b_bs + n0 * k->b_cs, k->b_rs, k->b_cs,
                  j->out + b * k->M * k->N + n0, k->N, j->bias ? j->bias + n0 : NULL);
      u += c1 - c0;
    }
  }
  if (j->tuned) K->gemm_tune(0, 0);
}

/* A GEMM whose B is a float16 constant (b_f16): its float16 panels, split
 * over the threads by rows or columns like a packed float32 B; without them
 * (the ISA table changed after the plan was made) B is converted per call. */
static void run_gemm_h16(const runctx *r, int ki, const tp_kir_kernel *k, const prep *pr, float *out,
                         int no_epi) {
  const tp_kernels *K = tp_kern();
  char *raw = r->pl->packed_h ? r->pl->packed_h[ki] : NULL;
  const uint16_t *ph = raw && r->pl->packed_by == K && K->gemm_f32_packed_f16
                           ? (const uint16_t *)(((uintptr_t)raw + sizeof(void *) + 63) & ~(uintptr_t)63)
                           : NULL;
  const float *A = (const float *)r->ptr[k->a_buf] + k->a_off;
  const uint16_t *Bh = (const uint16_t *)r->ptr[k->b_buf] + k->b_off;
  const float *bias = k->bias_buf >= 0 ? (const float *)r->ptr[k->bias_buf] : NULL;
  if (ph) {
    gemm_job j = {K, k, A, NULL, NULL, bias, out, (k->N + GEMM_COLS - 1) / GEMM_COLS, 0, 0, ph, NULL, 0, 0};
    int64_t flops = 2 * k->M * k->N * k->K, units, unit_flops;
    int64_t rblocks = (k->M + GEMM_ROWS - 1) / GEMM_ROWS;
    int threads = tp_pool_threads_or_default();
    if (!run_split2d(&j, threads, flops)) {
      if (rblocks >= threads)
        units = rblocks, unit_flops = 2 * GEMM_ROWS * k->N * k->K;
      else
        units = j.ncb, j.by_cols = 1, unit_flops = 2 * k->M * GEMM_COLS * k->K;
      int64_t grain = unit_flops > 0 ? (PAR_GEMM_FLOPS + unit_flops - 1) / unit_flops : 1;
      if (threads > 1 && flops >= 2 * PAR_GEMM_FLOPS && tp_parallel_slots(units, grain) > 1)
        tp_parallel_for(units, grain, gemm_task, &j);
      else
        K->gemm_f32_packed_f16(k->M, k->N, k->K, A, k->a_rs, k->a_cs, ph, out, k->N, bias);
    }
  } else {
    int64_t ext = k->b_rs * (k->K - 1) + k->b_cs * (k->N - 1) + 1;
    float *Bf = k->K > 0 && k->N > 0 ? tp_alloc(sizeof(float) * (size_t)ext) : NULL;
    if (Bf) {
      K->f16_to_f32(Bh, Bf, ext);
      K->gemm_f32(k->M, k->N, k->K, A, k->a_rs, k->a_cs, Bf, k->b_rs, k->b_cs, out, k->N, bias);
      tp_free(Bf);
    } else { /* out of memory (or an empty product): the same sums, unpacked */
      for (int64_t i = 0; i < k->M; i++)
        for (int64_t n = 0; n < k->N; n++) {
          float acc = bias ? bias[n] : 0.0f;
          for (int64_t q = 0; q < k->K; q++)
            acc += A[i * k->a_rs + q * k->a_cs] * tp_f16_to_f32(Bh[q * k->b_rs + n * k->b_cs]);
          out[i * k->N + n] = acc;
        }
    }
  }
  if (k->expr.n && !no_epi) run_pointwise(r, k, pr, out, out);
}

static void run_gemm(const runctx *r, int ki, const tp_kir_kernel *k, const prep *pr, float *out, int no_epi) {
  if (k->b_f16) {
    run_gemm_h16(r, ki, k, pr, out, no_epi);
    return;
  }
  const tp_kernels *K = tp_kern();
  const float *pb = packed_b(r->pl, ki);
  const float *A = (const float *)r->ptr[k->a_buf] + k->a_off;
  const float *B = (const float *)r->ptr[k->b_buf] + k->b_off;
  const float *bias = k->bias_buf >= 0 ? (const float *)r->ptr[k->bias_buf] : NULL;
  int tuned = (k->tune_kc || k->tune_mc) && K->gemm_tune;
  char *praw = r->pl->packed_a ? r->pl->packed_a[ki] : NULL;
  const float *pa = !pb && praw && r->pl->packed_by == K
                        ? (const float *)(((uintptr_t)praw + sizeof(void *) + 63) & ~(uintptr_t)63)
                        : NULL;
  if (pa) { /* a constant A packed once per plan (a 1x1 convolution's weight): split by columns */
    int64_t ncb = (k->N + GEMM_COLS - 1) / GEMM_COLS, unit_flops = 2 * k->M * GEMM_COLS * k->K;
    int64_t grain = unit_flops > 0 ? (PAR_GEMM_FLOPS + unit_flops - 1) / unit_flops : 1;
    int threads = tp_pool_threads_or_default();
    /* or by rows, when the columns share out worse than the rows (the
     * largest share over the even one: ceil(ncb / T) GEMM_COLS / N against
     * ceil(rows / T) GEMM_ROW_UNIT / M; rows also pack B once per chunk) */
    int64_t rbu = (k->M + GEMM_ROW_UNIT - 1) / GEMM_ROW_UNIT;
    int by_rows = threads > 1 && K->gemm_f32_packed_a_rows && rbu >= 2 * threads &&
                  (double)((ncb + threads - 1) / threads * GEMM_COLS) / (double)k->N >
                      1.15 * (double)((rbu + threads - 1) / threads * GEMM_ROW_UNIT) / (double)k->M;
    if (by_rows) {
      int64_t rflops = 2 * GEMM_ROW_UNIT * k->N * k->K, rgrain = rflops > 0 ? (PAR_GEMM_FLOPS + rflops - 1) / rflops : 1;
      if (2 * k->M * k->N * k->K >= 2 * PAR_GEMM_FLOPS && tp_parallel_slots(rbu, rgrain) > 1) {
        gemm_job j = {K, k, NULL, B, NULL, bias, out, ncb, 0, tuned, NULL, pa, 0, 0};
        tp_parallel_for(rbu, rgrain, gemm_pa_rows_task, &j);
        if (k->expr.n && !no_epi) run_pointwise(r, k, pr, out, out);
        return;
      }
    }
    if (threads > 1 && 2 * k->M * k->N * k->K >= 2 * PAR_GEMM_FLOPS &&
        tp_parallel_slots(ncb, grain) > 1) {
      gemm_job j = {K, k, NULL, B, NULL, bias, out, ncb, 1, tuned, NULL, pa, 0, 0};
      tp_parallel_for(ncb, grain, gemm_pa_task, &j);
    } else {
      if (tuned) K->gemm_tune(k->tune_kc, k->tune_mc);
      K->gemm_f32_packed_a(k->M, k->N, k->K, pa, B, k->b_rs, k->b_cs, out, k->N, bias);
      if (tuned) K->gemm_tune(0, 0);
    }
    if (k->expr.n && !no_epi) run_pointwise(r, k, pr, out, out);
    return;
  }
  gemm_job j = {K, k, A, B, pb, bias, out, (k->N + GEMM_COLS - 1) / GEMM_COLS, 0, tuned, NULL, NULL, 0, 0};
  /* the split: rows when B is packed once (shared by the threads) and there
   * are row blocks for every thread, or when a batch of one has more row
   * blocks than column blocks for the threads; else columns (of the packed
   * B's panels, or of every batch entry, each chunk packing its columns) */
  int64_t flops = 2 * k->M * k->N * k->K, units, unit_flops;
  int64_t rblocks = (k->M + GEMM_ROWS - 1) / GEMM_ROWS, cunits = k->batch * j.ncb;
  int threads = tp_pool_threads_or_default();
  /* B fed at run time, one batch entry, rows for every thread: pack B once
   * here and share it (the threads then pack only their rows of A) */
  if (!pb && k->batch == 1 && threads > 1 && rblocks >= threads && flops >= 2 * PAR_GEMM_FLOPS &&
      K->gemm_pack_b && r->pl->running == 1) {
    size_t bytes = K->gemm_pack_b_size(k->K, k->N);
    if (bytes && r->pl->bpack_bytes < bytes) {
      char *b = tp_alloc(bytes + 64);
      if (b) tp_free(r->pl->bpack), r->pl->bpack = b, r->pl->bpack_bytes = bytes;
    }
    if (bytes && r->pl->bpack_bytes >= bytes) {
      float *dst = (float *)(((uintptr_t)r->pl->bpack + 63) & ~(uintptr_t)63);
      if (tuned) K->gemm_tune(k->tune_kc, k->tune_mc); /* the layout follows KC */
      K->gemm_pack_b(k->K, k->N, B, k->b_rs, k->b_cs, dst);
      if (tuned) K->gemm_tune(0, 0);
      pb = j.pb = dst;
    }
  }
  /* a packed B with rows for every thread: the 2-D split when M's row
   * blocks would not share out evenly */
  if (!(pb && rblocks >= threads && run_split2d(&j, threads, flops))) {
    if ((pb && rblocks >= threads) || (!pb && k->batch == 1 && cunits < threads && rblocks >= threads))
      units = k->batch == 1 ? rblocks : 0, unit_flops = 2 * GEMM_ROWS * k->N * k->K;
    else
      units = cunits, j.by_cols = 1, unit_flops = 2 * k->M * GEMM_COLS * k->K;
    int64_t grain = unit_flops > 0 ? (PAR_GEMM_FLOPS + unit_flops - 1) / unit_flops : 1;
    if (threads > 1 && flops * k->batch >= 2 * PAR_GEMM_FLOPS && tp_parallel_slots(units, grain) > 1) {
      tp_parallel_for(units, grain, gemm_task, &j);
    } else {
      if (tuned) K->gemm_tune(k->tune_kc, k->tune_mc);
      if (pb)
        K->gemm_f32_packed(k->M, k->N, k->K, A, k->a_rs, k->a_cs, pb, out, k->N, bias);
      else
        for (int64_t b = 0; b < k->batch; b++)
          K->gemm_f32(k->M, k->N, k->K, A + b * k->a_bs, k->a_rs, k->a_cs, B + b * k->b_bs, k->b_rs,
                      k->b_cs, out + b * k->M * k->N, k->N, bias);
      if (tuned) K->gemm_tune(0, 0);
    }
  }
  if (k->expr.n && !no_epi) run_pointwise(r, k, pr, out, out);
}

/* A tensor over a buffer of this run (no ownership). */
typedef struct shell { tp_tensor t; tp_storage s; } shell;
static void make_shell(const runctx *r, int b, shell *sh) {
  const tp_kir_program *p = r->pl->p;
  const tp_kir_buf *x = &p->bufs[b];
  int base = b;
  int64_t off = 0;
  while (p->bufs[base].kind == TP_KBUF_VIEW) {
    off += p->bufs[base].offset;
    base = p->bufs[base].base;
  }
  memset(sh, 0, sizeof *sh);
  sh->s.refs = 1 << 30; /* never freed through the shell */
  sh->s.data = sh->s.raw = r->ptr[base];
  sh->s.bytes = (size_t)tp_shape_numel(p->bufs[base].desc.ndim, p->bufs[base].desc.shape) *
                tp_dtype_size(x->desc.dtype);
  sh->t.refs = 1 << 30;
  sh->t.dtype = x->desc.dtype;
  sh->t.ndim = x->desc.ndim;
  memcpy(sh->t.shape, x->desc.shape, sizeof sh->t.shape);
  memcpy(sh->t.strides, x->strides, sizeof sh->t.strides);
  sh->t.offset = off;
  sh->t.storage = &sh->s;
  sh->t.node = -1;
}

/* Operand k of an op kernel: a shell over its arena buffer (NULL when the
 * scheduler gave it none). */
typedef struct operand_ctx { const runctx *r; const tp_kir_kernel *k; shell *ins; } operand_ctx;
static tp_tensor *operand_shell(void *ctx, const tp_node *n, int i) {
  (void)n;
  operand_ctx *c = ctx;
  if (c->k->op_bufs[i] < 0) return NULL;
  make_shell(c->r, c->k->op_bufs[i], &c->ins[i]);
  return &c->ins[i].t;
}

/* A control node's branch or loop step: its compiled sub-plan (tp_lower
 * made one per subgraph), else the subgraph on the graph run. */
typedef struct sub_ctx { const tp_plan *pl; int ki; } sub_ctx;
static tp_status plan_run(tp_plan *pl, int nin, tp_tensor **in, uint64_t donated, int max_out, tp_tensor **outs,
                          int *nout, tp_tensor *const *into);
static tp_status run_subplan(void *ctx, const tp_node *n, int which, const tp_graph *sub, int nin,
                             tp_tensor *const *in, int max_out, tp_tensor **res, int *got, tp_tensor *const *into) {
  const sub_ctx *c = ctx;
  int w = n->op == TP_OP_COND ? which - 1 : which;
  tp_plan *sp = c->pl->subs ? c->pl->subs[2 * c->ki + w] : NULL;
  if (!sub) return tp_fail(TP_ERR_INTERNAL, "executor: %s without its subgraph", tp_op_name(n->op));
  if (sp) return plan_run(sp, nin, (tp_tensor **)in, 0, max_out, res, got, into); /* nothing donated: in is not written */
  return tp_graph_run(sub, nin, in, max_out, res, got);
}

static tp_status run_op(const runctx *r, int ki, const tp_kir_kernel *k) {
  const tp_kir_program *p = r->pl->p;
  shell ins[TP_MAX_OPERANDS], out;
  tp_tensor *args[TP_MAX_OPERANDS] = {0}, *scalars[TP_MAX_OPERANDS] = {0}, *res = NULL;
  make_shell(r, k->out, &out);
  if (k->node < 0) { /* copy */
    make_shell(r, k->op_bufs[0], &ins[0]);
    tp_tensor_copy_into(&ins[0].t, &out.t);
    return TP_OK;
  }
  const tp_node *n = &p->graph->nodes[k->node];
  operand_ctx oc = {r, k, ins};
  tp_status s = tp_node_operands(n, operand_shell, &oc, args, scalars);
  int slot = ki;
  if (!s && tp_op_is_tuple(n->op)) {
    int nres = tp_node_nresults(p->graph, n), got = 0;
    tp_tensor **t = tp_alloc(sizeof(tp_tensor *) * (size_t)nres);
    if (!t) s = TP_ERR_OUT_OF_MEMORY;
    else memset(t, 0, sizeof(tp_tensor *) * (size_t)nres);
    if (!s && n->op == TP_OP_CALL_HOST) {
      s = tp_host_invoke(n->attrs.host_fn, n->nargs, args, nres, t, &got);
    } else if (!s && (n->op == TP_OP_COND || n->op == TP_OP_WHILE_LOOP)) {
      sub_ctx sc = {r->pl, ki};
      s = tp_control_run(p->graph, n, run_subplan, &sc, args, t);
      got = nres;
    } else if (!s) {
      const tp_node *sg = &p->graph->nodes[n->args[0].node];
      const tp_graph *sub = tp_graph_find_subgraph(p->graph, sg->target ? sg->target : sg->name);
      s = tp_graph_run(sub, n->nargs - 1, args + 1, nres, t, &got);
    }
    if (!s && got != nres)
      s = tp_fail(TP_ERR_HOST, "host function returned %d results, the graph expects %d", got, nres);
    if (!s) {
      tp_tensor_copy_into(t[0], &out.t);
      if (r->pl->tuples[slot]) { /* free a previous run's results */
        tp_tensor **old = r->pl->tuples[slot];
        for (int q = 0; old[q]; q++) tp_tensor_release(old[q]);
        tp_free(old);
        r->pl->tuples[slot] = NULL;
      }
      /* kept (NULL terminated) for the getitem kernels */
      tp_tensor **keep = tp_alloc(sizeof(tp_tensor *) * (size_t)(nres + 1));
      if (!keep) s = TP_ERR_OUT_OF_MEMORY;
      else {
        memcpy(keep, t, sizeof(tp_tensor *) * (size_t)nres);
        keep[nres] = NULL;
        r->pl->tuples[slot] = keep;
        memset(t, 0, sizeof(tp_tensor *) * (size_t)nres);
      }
    }
    if (t) {
      for (int q = 0; q < nres; q++) tp_tensor_release(t[q]);
      tp_free(t);
    }
  } else if (!s && n->op == TP_OP_GETITEM) {
    /* the producing kernel's results */
    int pk = -1;
    for (int q = 0; q < p->nkernels; q++)
      if (p->kernels[q].node == n->args[0].node) pk = q;
    tp_tensor **t = pk >= 0 ? r->pl->tuples[pk] : NULL, *y = t ? t[n->attrs.result_index] : NULL;
    const tp_node *src = &p->graph->nodes[n->args[0].node];
    if (!t) s = tp_fail(TP_ERR_INTERNAL, "executor: getitem before its call");
    else if (src->op == TP_OP_WHILE_LOOP && n->attrs.result_index >= src->attrs.nresults && n->desc.ndim >= 1 &&
             !n->desc.shape[0] && y->ndim == n->desc.ndim && y->dtype == n->desc.dtype &&
             p->bufs[k->out].kind == TP_KBUF_OUTPUT) { /* a stack of run-time length (0 rows declared, onnx_cond.c) */
      tp_tensor_retain(y); /* is the output itself */
      tp_tensor_release(r->outs[p->bufs[k->out].index]);
      r->outs[p->bufs[k->out].index] = y;
    } else if (tp_tensor_numel(y) != tp_tensor_numel(&out.t)) /* a loop's stack of other length */
      s = tp_fail(TP_ERR_UNSUPPORTED, "executor: result %lld of %%%s has %lld elements, the plan expects %lld",
                  (long long)n->attrs.result_index, src->name, (long long)tp_tensor_numel(y), (long long)tp_tensor_numel(&out.t));
    else tp_tensor_copy_into(y, &out.t);
  } else if (!s && n->op == TP_OP_CAST && tp_tensor_is_contiguous(args[0]) && tp_tensor_is_contiguous(&out.t) &&
             ((args[0]->dtype == TP_F16 && out.t.dtype == TP_F32) || (args[0]->dtype == TP_F32 && out.t.dtype == TP_F16))) {
    /* a float16 model's input and output casts (issue 17): the table's vector
     * conversion straight into the arena (the same bits as the eager cast) */
    const tp_kernels *K = tp_kern();
    if (args[0]->dtype == TP_F16)
      K->f16_to_f32((const uint16_t *)tp_tensor_ptr(args[0]), (float *)tp_tensor_ptr(&out.t), tp_tensor_numel(args[0]));
    else
      K->f32_to_f16((const float *)tp_tensor_ptr(args[0]), (uint16_t *)tp_tensor_ptr(&out.t), tp_tensor_numel(args[0]));
  } else if (!s && n->op == TP_OP_CONV2D && tp_tensor_is_contiguous(&out.t)) {
    s = tp_conv2d_into_prep(args, &n->attrs, &out.t, NULL, r->pl->packed_a[ki]); /* straight into the arena: no copy */
  } else if (!s && (n->op == TP_OP_MAX_POOL2D || n->op == TP_OP_AVG_POOL2D) && tp_tensor_is_contiguous(&out.t) &&
             out.t.dtype == TP_F32) {
    s = tp_pool2d_into(n->op, args[0], &n->attrs, &out.t); /* likewise */
  } else if (!s && (n->op == TP_OP_RNN || n->op == TP_OP_GRU || n->op == TP_OP_LSTM) && tp_tensor_is_contiguous(&out.t)) {
    /* the time loop inside this one step; W and R packed once when constant */
    s = tp_recurrent_into(n->op, n->nargs, args, &n->attrs, r->pl->packed[ki], &out.t);
  } else if (!s && (n->op == TP_OP_CONV2D_INT || n->op == TP_OP_QCONV2D)) { /* W packed once when constant; straight into the arena */
    const tp_qmm_b *pre = r->pl->qmm && r->pl->qmm[ki].p ? &r->pl->qmm[ki] : NULL;
    tp_tensor *into = tp_tensor_is_contiguous(&out.t) ? &out.t : NULL;
    s = n->op == TP_OP_CONV2D_INT ? tp_exec_conv2d_int(n->nargs, args, &n->attrs, &n->desc, pre, into, &res)
                                  : tp_exec_qconv2d(n->nargs, args, &n->attrs, &n->desc, pre, into, &res);
    if (!s && res) tp_tensor_copy_into(res, &out.t);
  } else if (!s && (n->op == TP_OP_MATMUL_INT || n->op == TP_OP_QMATMUL) && r->pl->qmm && r->pl->qmm[ki].p) {
    if (n->op == TP_OP_MATMUL_INT) s = tp_exec_matmul_int(n->nargs, args, &n->desc, &r->pl->qmm[ki], &res); /* B packed once */
    else if (tp_tensor_is_contiguous(&out.t)) /* straight into the arena */
      s = tp_exec_qmatmul_into(n->nargs, args, &n->attrs, &n->desc, &r->pl->qmm[ki], &out.t, &res);
    else s = tp_exec_qmatmul(n->nargs, args, &n->attrs, &n->desc, &r->pl->qmm[ki], &res);
    if (!s && res) tp_tensor_copy_into(res, &out.t);
  } else if (!s) {
    int done = 0;
    if (n->op == TP_OP_CONCAT || n->op == TP_OP_GATHER || n->op == TP_OP_QUANTIZE) /* straight into the arena: no copy */
      s = tp_exec_into(n->op, n->nargs, args, &n->attrs, &out.t, &done);
    if (!s && !done) s = tp_op_call(n->op, n->nargs, args, &n->attrs, &res);
    if (!s && !done) tp_tensor_copy_into(res, &out.t);
  }
  tp_tensor_release(res);
  tp_node_operands_release(n, scalars);
  if (s) tp_fail_context(s, "%s", k->name);
  return s;
}

/* ---- conv kernels: the epilogue on each output tile of the conv ---- */
#define CONV_EPI_MIN 64
typedef struct conv_epi_ctx {
  const tp_kir_kernel *k;
  float *scratch;                    /* SCRATCH_FLOATS per slot */
  const float *base[TP_KIR_MAX_IN];
  unsigned char h16[TP_KIR_MAX_IN];  /* float16 slots (evalctx's) */
  int merge;                         /* every load's row stride is OW x its column stride */
  int64_t M, P, OW;
} conv_epi_ctx;

/* tp_conv_epi's fn: outputs [m0, m1) x [p0, p1) of image n, in chunks of
 * at most CH along a row (or along the plane when the loads merge). */
static void conv_epi(void *ctx, int slot, float *y, int64_t n, int64_t m0, int64_t m1, int64_t p0, int64_t p1) {
  const conv_epi_ctx *c = ctx;
  const tp_kir_kernel *k = c->k;
  evalctx e;
  memset(&e, 0, sizeof e);
  e.K = tp_kern();
  e.scratch = c->scratch + (size_t)slot * SCRATCH_FLOATS;
  e.k = k;
  for (int i = 0; i < k->nin; i++) e.slot_st[i] = k->in[i].strides[3], e.h16[i] = c->h16[i];
  for (int64_t m = m0; m < m1; m++) {
    float *ym = y + (n * c->M + m) * c->P;
    for (int64_t p = p0; p < p1;) {
      int64_t i = p / c->OW, j = p % c->OW, end = c->merge ? p1 : (i + 1) * c->OW;
      if (end > p1) end = p1;
      int64_t len = end - p < CH ? end - p : CH;
      for (int q = 0; q < k->nin; q++) {
        const int64_t *st = k->in[q].strides;
        e.slot_ptr[q] = slot_at(c->base[q], c->h16[q], n * st[0] + m * st[1] + i * st[2] + j * st[3]);
      }
      e.acc = ym + p;
      float sc;
      int is_sc;
      const float *v = eval(&e, &k->expr, len, ym + p, &sc, &is_sc);
      store(ym + p, v, sc, is_sc, len);
      p += len;
    }
  }
}

/* A conv kernel: the conv2d straight into its output buffer, the epilogue
 * (if any) on each tile the conv completes (tp_conv2d_into_epi). */
static tp_status run_conv(const runctx *r, int ki, const tp_kir_kernel *k, int no_epi) {
  if (!k->expr.n || no_epi) return run_op(r, ki, k);
  const tp_kir_program *p = r->pl->p;
  shell ins[TP_MAX_OPERANDS], out;
  tp_tensor *args[TP_MAX_OPERANDS] = {0}, *scalars[TP_MAX_OPERANDS] = {0};
  make_shell(r, k->out, &out);
  const tp_node *n = &p->graph->nodes[k->node];
  operand_ctx oc = {r, k, ins};
  tp_status s = tp_node_operands(n, operand_shell, &oc, args, scalars);
  if (!s && (!tp_tensor_is_contiguous(&out.t) || k->nd != 4))
    s = tp_fail(TP_ERR_INTERNAL, "executor: conv kernel output is not a contiguous 4-d buffer");
  if (!s) {
    conv_epi_ctx c;
    memset(&c, 0, sizeof c);
    c.k = k;
    c.M = k->shape[1], c.OW = k->shape[3], c.P = k->shape[2] * k->shape[3];
    c.merge = 1;
    for (int q = 0; q < k->nin; q++) {
      c.base[q] = slot_base(r, &k->in[q]);
      c.h16[q] = p->bufs[k->in[q].buf].desc.dtype == TP_F16;
      if (k->in[q].strides[2] != k->in[q].strides[3] * c.OW) c.merge = 0;
    }
    /* tiles of fewer than CONV_EPI_MIN elements (rows of a small plane, or
     * short rows whose loads do not merge): the per-tile evaluation costs
     * more than it saves (the output is in cache anyway); the epilogue then
     * runs once over the whole output, as a GEMM's does */
    if ((c.merge ? c.P : c.OW) < CONV_EPI_MIN) {
      s = tp_conv2d_into_prep(args, &n->attrs, &out.t, NULL, r->pl->packed_a[ki]);
      if (!s) run_pointwise(r, k, &r->pl->preps[ki], (float *)r->ptr[k->out], (float *)r->ptr[k->out]);
      tp_node_operands_release(n, scalars);
      if (s) tp_fail_context(s, "%s", k->name);
      return s;
    }
    /* per pool slot scratch (one run at a time), else the conv on one thread */
    int threads = tp_pool_threads_or_default(), ns = 1;
    c.scratch = r->pl->scratch;
    float *ps = threads > 1 && r->pl->running == 1 ? par_scratch(r->pl, threads) : NULL;
    if (ps) c.scratch = ps, ns = threads;
    tp_conv_epi epi = {conv_epi, &c, ns};
    s = tp_conv2d_into_prep(args, &n->attrs, &out.t, &epi, r->pl->packed_a[ki]);
  }
  tp_node_operands_release(n, scalars);
  if (s) tp_fail_context(s, "%s", k->name);
  return s;
}

/* Kernel k on the executor (no_epi: a GEMM or conv without its epilogue,
 * which generated code runs after it). */
static tp_status run_kernel(const runctx *r, int k, int no_epi) {
  const tp_kir_kernel *kk = &r->pl->p->kernels[k];
  float *out = r->ptr[kk->out];
  switch (kk->kind) {
    case TP_KK_POINTWISE: run_pointwise(r, kk, &r->pl->preps[k], out, NULL); return TP_OK;
    case TP_KK_ROW: run_row(r, kk, &r->pl->preps[k], out); return TP_OK;
    case TP_KK_GEMM: run_gemm(r, k, kk, &r->pl->preps[k], out, no_epi); return TP_OK;
    case TP_KK_OP: return run_op(r, k, kk);
    case TP_KK_CONV: return run_conv(r, k, kk, no_epi);
    default: return tp_fail(TP_ERR_INTERNAL, "executor: bad kernel kind");
  }
}

tp_status tp_plan_run_kernel(void *run, int k) {
  const runctx *r = run;
  int nk = r ? r->pl->p->nkernels : 0;
  if (!r || k < 0 || k >= 2 * nk)
    return tp_fail(TP_ERR_INTERNAL, "tp_jit_kernel: kernel %d out of range", k);
  return k >= nk ? run_kernel(r, k - nk, 1) : run_kernel(r, k, 0);
}

tp_status tp_plan_run(tp_plan *pl, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                      int *nout) {
  return plan_run(pl, nin, (tp_tensor **)in, 0, max_out, outs, nout, NULL);
}

tp_status tp_plan_run_donated(tp_plan *pl, int nin, tp_tensor **in, uint64_t donated, int max_out,
                              tp_tensor **outs, int *nout) {
  return plan_run(pl, nin, in, donated, max_out, outs, nout, NULL);
}

/* Views: base pointer + offset. */
static void resolve_views(const tp_kir_program *p, void **ptr) {
  for (int b = 0; b < p->nbufs; b++)
    if (p->bufs[b].kind == TP_KBUF_VIEW) {
      int base = b;
      int64_t off = 0;
      while (p->bufs[base].kind == TP_KBUF_VIEW) off += p->bufs[base].offset, base = p->bufs[base].base;
      ptr[b] = ptr[base] ? (char *)ptr[base] + off * (int64_t)tp_dtype_size(p->bufs[b].desc.dtype) : NULL;
    }
}

/* Releases donated input i (and the plan's contiguous reference to it). */
static void drop_donated(tp_tensor **in, uint64_t *donated, int i, tp_tensor **held, const int *held_of) {
  if (!((*donated >> i) & 1)) return;
  if (held && held_of[i] >= 0) tp_tensor_release(held[held_of[i]]), held[held_of[i]] = NULL;
  tp_tensor_release(in[i]);
  in[i] = NULL;
  *donated &= ~((uint64_t)1 << i);
}

/* donated: a bit per input the plan owns (compiled training's backward:
 * each is released after its last reader). into: NULL, or a tensor per
 * output to write it into when it is contiguous and of the output's type
 * (else a new one is allocated); outs then holds new references to those. */
static tp_status plan_run(tp_plan *pl, int nin, tp_tensor **in, uint64_t donated, int max_out, tp_tensor **outs,
                          int *nout, tp_tensor *const *into) {
  tp_kir_program *p = pl->p;
  *nout = 0;
  if (nin < 64) donated &= ((uint64_t)1 << nin) - 1;
  int held_of[64];
  for (int i = 0; i < 64; i++) held_of[i] = -1;
  /* per donated input: the last kernel reading it (-1: none) */
  int last_of[64];
  for (int i = 0; i < 64; i++) last_of[i] = -1;
  for (int b = 0; b < p->nbufs; b++)
    if (p->bufs[b].kind == TP_KBUF_INPUT && p->bufs[b].index < 64) {
      int i = p->bufs[b].index;
      if (p->bufs[b].last > last_of[i]) last_of[i] = p->bufs[b].last;
      if (p->bufs[b].last < 0 && p->bufs[b].first >= 0) last_of[i] = p->nkernels; /* unknown: the end */
    }
  if (max_out < p->noutputs) {
    for (int i = 0; i < nin && i < 64; i++) drop_donated(in, &donated, i, NULL, held_of);
    return tp_fail(TP_ERR_INVALID_ARG, "plan run: %d outputs do not fit in %d slots", p->noutputs, max_out);
  }
  void **ptr = tp_alloc(sizeof(void *) * (size_t)(p->nbufs ? p->nbufs : 1));
  tp_tensor **held = tp_alloc(sizeof(tp_tensor *) * (size_t)(nin + 1));
  tp_tensor *os[TP_MAX_OPERANDS] = {0};
  char *arena = pl->arena, *own_arena = NULL;
  tp_status s = TP_OK;
  if (!ptr || !held) s = TP_ERR_OUT_OF_MEMORY;
  if (!s && pl->running) { /* re-entered from a host callback: a private arena */
    own_arena = tp_alloc((size_t)p->arena_bytes + TP_ALIGN);
    if (!own_arena) s = TP_ERR_OUT_OF_MEMORY;
    else arena = (char *)(((uintptr_t)own_arena + TP_ALIGN - 1) & ~(uintptr_t)(TP_ALIGN - 1));
  }
  /* with donated inputs (compiled training's backward), outputs are
   * allocated right before the kernel that first writes them, not all at
   * the start: the donated inputs released by then make room for them */
  int *lazy = NULL;
  if (!s && donated && !into && !pl->accel && (lazy = tp_alloc(sizeof(int) * (size_t)p->nbufs))) {
    for (int b = 0; b < p->nbufs; b++) lazy[b] = -1;
    for (int k = 0; k < p->nkernels; k++) {
      int b = p->kernels[k].out;
      while (b >= 0 && p->bufs[b].kind == TP_KBUF_VIEW) b = p->bufs[b].base;
      if (b >= 0 && p->bufs[b].kind == TP_KBUF_OUTPUT && lazy[b] < 0) lazy[b] = k;
    }
  }
  int nth; /* an invalid TP_NUM_THREADS is an error naming it */
  if (!s) s = tp_pool_threads(&nth);
  int nheld = 0;
  for (int b = 0; b < p->nbufs && !s; b++) {
    tp_kir_buf *x = &p->bufs[b];
    ptr[b] = NULL;
    switch (x->kind) {
      case TP_KBUF_INPUT: {
        if (x->index >= nin) {
          s = tp_fail(TP_ERR_INVALID_ARG, "plan run: input %d is missing", x->index);
          break;
        }
        tp_desc d;
        tp_desc_of(in[x->index], &d);
        d.weak = 0;
        if (!tp_desc_equal(&d, &x->desc)) {
          s = tp_fail(TP_ERR_INVALID_ARG, "plan run: input %d does not match the plan", x->index);
          break;
        }
        tp_tensor *c;
        s = tp_contiguous(in[x->index], &c);
        if (!s) {
          if (x->index < 64) held_of[x->index] = nheld;
          held[nheld++] = c;
          ptr[b] = tp_tensor_ptr(c);
        }
        break;
      }
      case TP_KBUF_CONST: ptr[b] = tp_tensor_ptr(x->value); break;
      case TP_KBUF_TEMP: ptr[b] = arena + x->arena_off; break;
      case TP_KBUF_OUTPUT: {
        if (lazy && lazy[b] > 0) break; /* allocated before the kernel that first writes it */
        tp_tensor *t = into ? into[x->index] : NULL;
        tp_desc d;
        if (t) tp_desc_of(t, &d), d.weak = 0;
        if (t && tp_tensor_is_contiguous(t) && tp_desc_equal(&d, &x->desc)) {
          tp_tensor_retain(t); /* written in place: a loop's spare carried buffer */
          os[x->index] = t;
        } else {
          s = tp_tensor_empty(x->desc.dtype, x->desc.ndim, x->desc.shape, &os[x->index]);
        }
        if (!s) ptr[b] = tp_tensor_ptr(os[x->index]);
        break;
      }
      case TP_KBUF_VIEW: case TP_KBUF_KIND_COUNT: break; /* views: resolved below */
    }
  }
  if (!s) resolve_views(p, ptr);
  runctx r = {pl, ptr, os, NULL};
  int ran = 0; /* the accelerator ran the whole plan */
  pl->running++;
  if (!s && pl->prof) tp_plan_prof_run(pl->prof);
  if (!s && pl->accel) s = pl->accel->run(pl->accel_state, pl, ptr, &r, &ran);
  /* donated inputs no kernel reads go first */
  for (int i = 0; donated && !s && !ran && i < nin && i < 64; i++)
    if (last_of[i] < 0) drop_donated(in, &donated, i, held, held_of);
  for (int k = 0; k < p->nkernels && !s && !ran; k++) {
    for (int b = 0; lazy && b < p->nbufs && !s; b++)
      if (lazy[b] == k && k > 0) {
        tp_kir_buf *x = &p->bufs[b];
        s = tp_tensor_empty(x->desc.dtype, x->desc.ndim, x->desc.shape, &os[x->index]);
        if (!s) ptr[b] = tp_tensor_ptr(os[x->index]), resolve_views(p, ptr);
      }
    if (s) break;
    if (!pl->prof) {
      s = run_kernel(&r, k, 0);
    } else {
      double t0 = tp_now_ms();
      s = run_kernel(&r, k, 0);
      tp_plan_profile_add(pl, k, tp_now_ms() - t0);
    }
    /* donated inputs whose last reader ran: their storage can go now */
    for (int i = 0; donated && !s && i < nin && i < 64; i++)
      if (last_of[i] == k) drop_donated(in, &donated, i, held, held_of);
  }
  pl->running--;
  /* a Wasm pool worker that trapped in this run's parallel work (pool.h) */
  if (!s) s = tp_pool_take_failure();
  for (int i = 0; i < nheld; i++) tp_tensor_release(held[i]);
  for (int i = 0; donated && i < nin && i < 64; i++) drop_donated(in, &donated, i, NULL, held_of);
  tp_free(held);
  tp_free(ptr);
  tp_free(lazy);
  tp_free(own_arena);
  if (s) {
    for (int i = 0; i < TP_MAX_OPERANDS; i++) tp_tensor_release(os[i]);
    return s;
  }
  for (int i = 0; i < p->noutputs; i++) outs[i] = os[i];
  *nout = p->noutputs;
  return TP_OK;
}
