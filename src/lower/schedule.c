/* schedule.c - graph -> Kernel IR. One walk over the nodes in order keeps,
 * for every node, either a materialized reference (a buffer with strides:
 * views cost nothing) or a lazy float32 expression over loads (pointwise
 * ops are not computed until something needs them). A value is
 * materialized when it has several users, feeds a GEMM, a row kernel or an
 * eager op, is a graph output, or its expression grows too large; at that
 * point one pointwise kernel computes the whole fused chain in one pass
 * over memory, or, when the chain's only big input is the output of a GEMM
 * used nowhere else, the chain becomes that GEMM's epilogue. softmax,
 * log_softmax, layer_norm and trailing reductions become row kernels whose
 * input expression (their prologue) is fused in. Everything else runs as
 * an eager op kernel. */
#include "lower.h"
#include <math.h>
#include <stdio.h>

typedef enum { V_NONE, V_REF, V_LAZY, V_SCALAR } vkind;

typedef struct val {
  vkind kind;
  tp_desc desc;
  /* V_REF */
  int buf;
  int64_t off;
  int64_t st[TP_MAX_DIMS];
  /* V_LAZY: expression over the value's own dims */
  tp_kir_expr e;
  int nin;
  tp_kir_load in[TP_KIR_MAX_IN];
  int uses;          /* users left in the graph */
  int gemm;          /* V_REF made by this GEMM kernel (no epilogue yet), else -1 */
} val;

typedef struct sched {
  tp_kir_program *p;
  tp_graph *g;
  val *v;
  const tp_lower_options *o;
  int *buf_uses;     /* per buffer: kernels reading it so far (epilogue check) */
  int *graph_uses;   /* per node: users in the graph */
  int *uoff, *ulist; /* per node n: its users (distinct) ulist[uoff[n] .. uoff[n + 1]) */
  int cap_buf_uses;
  signed char *mm;   /* per node: a where that is pmax/pmin (TP_KBIN_*), -1 not; -2: its compare, folded in;
                      * -3: a min / max scheduled with its opposite (minmax_partner) */
  int cur;           /* the node being scheduled: materialize() of a copy of a value counts for it */
  /* per node: 1, a cast of a float16 constant to float32 read only as a
   * matmul / linear's B, deferred (is_h16_cast); gemm_h16: try_gemm is
   * building such a GEMM (issue 17) */
  signed char *h16;
  int gemm_h16;
} sched;

/* The kernel kid computes the value x (a node's val, or a copy of one made
 * for the node being scheduled): recorded in p->node_kernel. */
static void note_kernel(sched *s, const val *x, int kid) {
  int j = x >= s->v && x < s->v + s->g->n ? (int)(x - s->v) : s->cur;
  if (j >= 0 && j < s->g->n) s->p->node_kernel[j] = kid;
}

static void contiguous_strides(int nd, const int64_t *shape, int64_t *st) {
  int64_t s = 1;
  for (int i = nd - 1; i >= 0; i--) {
    st[i] = s;
    s *= shape[i];
  }
}

/* ---- program building ---- */
static tp_status add_buf(sched *s, tp_kir_buf_kind kind, const tp_desc *d, int *id) {
  tp_kir_program *p = s->p;
  TP_TRY(TP_ARRAY_RESERVE(p->bufs, p->capbufs, p->nbufs + 1));
  TP_TRY(TP_ARRAY_RESERVE(s->buf_uses, s->cap_buf_uses, p->nbufs + 1));
  tp_kir_buf *b = &p->bufs[p->nbufs];
  memset(b, 0, sizeof *b);
  b->kind = kind;
  b->desc = *d;
  b->desc.weak = 0;
  b->base = -1;
  b->inplace_of = -1;
  b->first = b->last = -1;
  contiguous_strides(d->ndim, d->shape, b->strides);
  s->buf_uses[p->nbufs] = 0;
  *id = p->nbufs++;
  return TP_OK;
}

static tp_status add_kernel(sched *s, tp_kir_kind kind, int *id) {
  tp_kir_program *p = s->p;
  TP_TRY(TP_ARRAY_RESERVE(p->kernels, p->capkernels, p->nkernels + 1));
  tp_kir_kernel *k = &p->kernels[p->nkernels];
  memset(k, 0, sizeof *k);
  k->kind = kind;
  k->bias_buf = -1;
  k->node = -1;
  static const char *const kn[TP_KK_KIND_COUNT] = {"pointwise", "row", "gemm", "op", "conv"};
  snprintf(k->name, sizeof k->name, "k%d_%s", p->nkernels, kn[kind]);
  *id = p->nkernels++;
  return TP_OK;
}

/* ---- expressions ---- */
static int emit(tp_kir_expr *e, tp_kir_ins ins) {
  if (e->n >= TP_KIR_MAX_INS) return -1;
  e->ins[e->n] = ins;
  return e->n++;
}

/* Copy src (with its loads) into dst/dloads, re-striding src's loads from
 * src's dims to dst's iteration space of nd dims: map[k] = the dst dim of
 * src dim k (-1: src dim has size 1 and is dropped). Returns the index of
 * src's value in dst, or -1 when dst is full. */
static int inline_expr(tp_kir_expr *dst, tp_kir_load *dl, int *dnin, const tp_kir_expr *src,
                       const tp_kir_load *sl, int snd, const int *map, int nd) {
  int base = dst->n;
  int slot[TP_KIR_MAX_IN];
  if (dst->n + src->n > TP_KIR_MAX_INS) return -1;
  for (int i = 0; i < TP_KIR_MAX_IN; i++) slot[i] = -1;
  for (int i = 0; i < src->n; i++) {
    tp_kir_ins x = src->ins[i];
    if (x.op == TP_KI_LOAD) {
      if (slot[x.in] < 0) {
        tp_kir_load L;
        memset(&L, 0, sizeof L);
        L.buf = sl[x.in].buf;
        L.offset = sl[x.in].offset;
        for (int k = 0; k < snd; k++)
          if (map[k] >= 0) L.strides[map[k]] += sl[x.in].strides[k];
        (void)nd;
        /* reuse an identical slot */
        int found = -1;
        for (int j = 0; j < *dnin && found < 0; j++)
          if (dl[j].buf == L.buf && dl[j].offset == L.offset &&
              !memcmp(dl[j].strides, L.strides, sizeof L.strides))
            found = j;
        if (found < 0) {
          if (*dnin >= TP_KIR_MAX_IN) return -1;
          dl[*dnin] = L;
          found = (*dnin)++;
        }
        slot[x.in] = found;
      }
      x.in = (int16_t)slot[x.in];
    } else {
      if (x.a >= 0) x.a = (int16_t)(x.a + base);
      if (x.b >= 0) x.b = (int16_t)(x.b + base);
    }
    dst->ins[dst->n++] = x;
  }
  return dst->n - 1;
}

/* The lazy form of a V_REF: one load. */
static void ref_as_lazy(const val *r, val *out) {
  *out = *r;
  out->kind = V_LAZY;
  memset(&out->e, 0, sizeof out->e);
  out->nin = 1;
  memset(&out->in[0], 0, sizeof out->in[0]);
  out->in[0].buf = r->buf;
  out->in[0].offset = r->off;
  memcpy(out->in[0].strides, r->st, sizeof r->st);
  tp_kir_ins ld = {TP_KI_LOAD, 0, -1, -1, 0, 0};
  emit(&out->e, ld);
}

/* Broadcast map from a value of shape (snd) into an iteration space (nd). */
static void bcast_map(const tp_desc *src, int nd, const int64_t *shape, int *map) {
  (void)shape;
  for (int k = 0; k < src->ndim; k++) {
    int d = k + (nd - src->ndim);
    map[k] = (src->shape[k] == 1 && shape[d] != 1) ? -1 : d;
  }
}

/* ---- materialization ---- */
static int is_contig(const int64_t *st, int nd, const int64_t *shape) {
  int64_t s = 1;
  for (int i = nd - 1; i >= 0; i--) {
    if (shape[i] != 1 && st[i] != s) return 0;
    s *= shape[i];
  }
  return 1;
}

static tp_status note_reads(sched *s, int kernel, const tp_kir_load *in, int nin) {
  (void)kernel;
  for (int i = 0; i < nin; i++) s->buf_uses[in[i].buf]++;
  return TP_OK;
}

/* Turn a lazy value into a buffer: a pointwise kernel, or the epilogue of
 * the GEMM that made its only large input. */
/* Re-expresses lazy value lz over shape `to` (same element count): the
 * dims of lz, size-1 dims dropped, are grouped in C order onto each dim of
 * `to`; each group must be mergeable for every load (stride of a dim =
 * stride of the next * its size). 1 when done (lz rewritten), else 0.
 * Lets a conv_gemm's bias and activation, written over [N, M, H, W],
 * become the epilogue of its [M, H*W] GEMM. */
static int regroup_lazy(val *lz, const tp_desc *to) {
  const int64_t *sh = lz->desc.shape;
  if (lz->kind != V_LAZY || to->dtype != lz->desc.dtype ||
      tp_shape_numel(to->ndim, to->shape) != tp_shape_numel(lz->desc.ndim, sh))
    return 0;
  int ld[TP_MAX_DIMS], nl = 0, li = 0;
  for (int d = 0; d < lz->desc.ndim; d++)
    if (sh[d] != 1) ld[nl++] = d;
  int64_t st[TP_KIR_MAX_IN][TP_MAX_DIMS];
  for (int t = 0; t < to->ndim; t++) {
    if (to->shape[t] == 1) {
      for (int i = 0; i < lz->nin; i++) st[i][t] = 0;
      continue;
    }
    int64_t prod = 1;
    int g0 = li;
    while (li < nl && prod < to->shape[t]) prod *= sh[ld[li++]];
    if (prod != to->shape[t] || li == g0) return 0;
    for (int i = 0; i < lz->nin; i++) {
      for (int j = g0; j + 1 < li; j++)
        if (lz->in[i].strides[ld[j]] != lz->in[i].strides[ld[j + 1]] * sh[ld[j + 1]]) return 0;
      st[i][t] = lz->in[i].strides[ld[li - 1]];
    }
  }
  if (li != nl) return 0;
  for (int i = 0; i < lz->nin; i++) {
    memset(lz->in[i].strides, 0, sizeof lz->in[i].strides);
    memcpy(lz->in[i].strides, st[i], sizeof(int64_t) * (size_t)to->ndim);
  }
  lz->desc.ndim = to->ndim;
  memcpy(lz->desc.shape, to->shape, sizeof(int64_t) * (size_t)to->ndim);
  return 1;
}

/* 1 when every reader of node n's value is node t itself or a node whose
 * readers all lead to t in the same way (pointwise steps and views of a
 * chain that ends in t; compares folded into a pmax / pmin where do not
 * count: the where reads their operands), so that once t is computed
 * nobody needs n's value. A GEMM or conv output with such readers can
 * become the epilogue computing t. A GEMM output that is read twice
 * through a view (a graph output that is a reshape of it, and an exp of
 * the same reshape) must not: the GEMM would then write only the exp.
 * Found by the differential tests (tests/c/compiler/test_diff.c). A
 * hardswish (x read by x * alpha and by the final product) or a leaky
 * relu (x and alpha x in the where) reads n twice and still leads to t.
 * budget bounds the walk. */
static int leads_to(const sched *s, int n, int t, int *budget) {
  if (n == t) return 1;
  if (n > t || --*budget < 0) return 0;
  int any = 0;
  for (int q = s->uoff[n]; q < s->uoff[n + 1]; q++) {
    int u = s->ulist[q];
    if (s->mm && s->mm[u] == -2) continue; /* a compare folded into its where */
    if (!leads_to(s, u, t, budget)) return 0;
    any = 1;
  }
  return any;
}

static int root_of(const tp_kir_program *p, int b) {
  while (b >= 0 && p->bufs[b].kind == TP_KBUF_VIEW) b = p->bufs[b].base;
  return b;
}

static int single_reader(const sched *s, int n, int t) {
  int budget = 64;
  return t >= 0 && leads_to(s, n, t, &budget);
}

/* 1 when a kernel from `from` on reads buffer b, directly or through a view. */
static int read_by_kernels(const sched *s, int from, int b) {
  const tp_kir_program *p = s->p;
#define ROOT_IS(x) ((x) >= 0 && root_of(p, (x)) == b)
  for (int k = from; k < p->nkernels; k++) {
    const tp_kir_kernel *kk = &p->kernels[k];
    for (int i = 0; i < kk->nin; i++)
      if (ROOT_IS(kk->in[i].buf)) return 1;
    if (kk->kind == TP_KK_GEMM && (ROOT_IS(kk->a_buf) || ROOT_IS(kk->b_buf) || ROOT_IS(kk->bias_buf))) return 1;
    if (kk->kind == TP_KK_OP || kk->kind == TP_KK_CONV)
      for (int i = 0; i < kk->nops; i++)
        if (ROOT_IS(kk->op_bufs[i])) return 1;
  }
#undef ROOT_IS
  return 0;
}

/* Removes kernel kid (absorbed into kernel `into`, a later one): the
 * kernels after it move down one (renamed), node_kernel and the values'
 * GEMM references follow. */
static void remove_kernel(sched *s, int kid, int into) {
  tp_kir_program *p = s->p;
  int node = p->kernels[kid].node;
  memmove(&p->kernels[kid], &p->kernels[kid + 1], sizeof *p->kernels * (size_t)(p->nkernels - kid - 1));
  p->nkernels--;
  for (int k = kid; k < p->nkernels; k++) {
    char *u = strchr(p->kernels[k].name, '_');
    char tail[32];
    snprintf(tail, sizeof tail, "%s", u ? u : "");
    snprintf(p->kernels[k].name, sizeof p->kernels[k].name, "k%d%.31s", k, tail);
  }
  for (int j = 0; j < s->g->n; j++) {
    int *nk = &p->node_kernel[j];
    if (*nk == kid) *nk = into - 1;
    else if (*nk > kid) (*nk)--;
    if (s->v[j].gemm > kid) s->v[j].gemm--;
  }
  if (node >= 0 && node < s->g->n) p->node_kernel[node] = into - 1;
}

/* a row kernel whose phases are all reductions, writing its last row value
 * to buffer b that nobody reads yet and only the lazy value t needs. No max
 * phase: before a map, a row kernel's max of an all -inf row is 0
 * (softmax's rule, executor and generated code), where the max written as
 * a row value is -inf (x - max(x) would turn NaN into -inf) */
static int pending_rows(const sched *s, int b, int t) {
  const tp_kir_program *p = s->p;
  int rk = -1;
  for (int k = 0; k < p->nkernels; k++)
    if (p->kernels[k].kind == TP_KK_ROW && p->kernels[k].out == b) rk = k;
  if (rk < 0 || p->bufs[b].kind != TP_KBUF_TEMP || s->buf_uses[b] != 0 || read_by_kernels(s, rk + 1, b)) return -1;
  const tp_kir_kernel *k = &p->kernels[rk];
  for (int q = 0; q < k->nphases; q++)
    if (!k->phases[q].is_reduce || k->phases[q].reduce == TP_KR_MAX || k->phases[q].reduce == TP_KR_MINMAX) return -1;
  return k->nphases >= 1 && single_reader(s, k->node, t) ? rk : -1;
}

/* slot of load L in in[0 .. *nin), added when new; -1 when full */
static int load_slot(tp_kir_load *in, int *nin, const tp_kir_load *L) {
  for (int j = 0; j < *nin; j++)
    if (in[j].buf == L->buf && in[j].offset == L->offset && !memcmp(in[j].strides, L->strides, sizeof L->strides))
      return j;
  if (*nin >= TP_KIR_MAX_IN) return -1;
  in[*nin] = *L;
  return (*nin)++;
}

/* Row-map fusion: a lazy value over [rows.., R] that reads, broadcast along
 * its last dim, the row values of a row reduction over the same rows that
 * nobody else reads becomes that row kernel's map phase (the reduction's
 * row value a rowval); the row values of a second such reduction it reads
 * (an earlier kernel) become that kernel's first phases, the earlier kernel
 * removed. The backward formulas of softmax (y * (g - sum(g * y))) and
 * layer_norm (dx from the row means of g * w and g * w * x-hat) are such
 * compositions: each then runs as one row kernel, the row in cache between
 * its passes, where they were row kernels writing row values and a
 * pointwise kernel reading them (docs/kernel-ir.md). 1 in *done when fused
 * into ob. */
static tp_status row_map_fusion(sched *s, val *x, const val *lz, int ob, int *done) {
  *done = 0;
  tp_kir_program *p = s->p;
  int nd = lz->desc.ndim, t = x >= s->v && x < s->v + s->g->n ? (int)(x - s->v) : s->cur;
  if (!s->o->fusion || lz->desc.dtype != TP_F32 || nd < 1 || lz->desc.shape[nd - 1] < 1) return TP_OK;
  int64_t rst[TP_MAX_DIMS] = {0}, rs = 1; /* a row's index: contiguous over the leading dims */
  for (int d = nd - 2; d >= 0; d--) rst[d] = rs, rs *= lz->desc.shape[d];
  int rk = -1, B = -1, rk2 = -1, B2 = -1;
  for (int pass = 0; pass < 2; pass++) /* the latest such reduction; then a second, earlier */
    for (int i = 0; i < lz->nin; i++) {
      int b = lz->in[i].buf, k = b == B ? -1 : pending_rows(s, b, t);
      if (k < 0 || p->kernels[k].nd != nd || memcmp(p->kernels[k].shape, lz->desc.shape, sizeof(int64_t) * (size_t)nd))
        continue;
      int ok = 1; /* every load of b reads row r's value at element r */
      for (int q = 0; q < lz->nin && ok; q++) {
        const tp_kir_load *L = &lz->in[q];
        if (L->buf != b) continue;
        ok = L->offset == 0 && L->strides[nd - 1] == 0;
        for (int d = 0; d < nd - 1 && ok; d++) ok = lz->desc.shape[d] == 1 || L->strides[d] == rst[d];
      }
      if (!ok) continue;
      if (pass == 0 && k > rk) rk = k, B = b;
      if (pass == 1 && k < rk && k != rk2 && p->kernels[k].nphases + p->kernels[rk].nphases < TP_KIR_MAX_PHASES)
        rk2 = k, B2 = b;
    }
  if (rk < 0 || p->kernels[rk].nphases >= TP_KIR_MAX_PHASES) return TP_OK;
  /* every other input is ready before the row kernel runs; the inputs fit */
  tp_kir_kernel *k = &p->kernels[rk], *k2 = rk2 >= 0 ? &p->kernels[rk2] : NULL;
  tp_kir_load in[TP_KIR_MAX_IN];
  int nin = 0, slot[TP_KIR_MAX_IN], slot2[TP_KIR_MAX_IN], slotk[TP_KIR_MAX_IN];
  for (int q = 0; k2 && q < k2->nin; q++)
    if ((slot2[q] = load_slot(in, &nin, &k2->in[q])) < 0) return TP_OK;
  for (int q = 0; q < k->nin; q++)
    if ((slotk[q] = load_slot(in, &nin, &k->in[q])) < 0) return TP_OK;
  for (int q = 0; q < lz->nin; q++) {
    const tp_kir_load *L = &lz->in[q];
    slot[q] = -1;
    if (L->buf == B || L->buf == B2) continue;
    int root = root_of(p, L->buf);
    for (int kq = rk; kq < p->nkernels; kq++)
      if (p->kernels[kq].out == L->buf || root_of(p, p->kernels[kq].out) == root) return TP_OK;
    if ((slot[q] = load_slot(in, &nin, L)) < 0) return TP_OK;
  }
  /* phases: k2's, k's (row values after k2's), the map */
  int a = k2 ? k2->nphases : 0, nph = a + k->nphases + 1;
  tp_kir_phase ph[TP_KIR_MAX_PHASES];
  memset(ph, 0, sizeof ph);
  for (int q = 0; q < nph; q++) {
    tp_kir_phase *P = &ph[q];
    const int *sl = q < a ? slot2 : q < nph - 1 ? slotk : slot;
    if (q < a) *P = k2->phases[q];
    else if (q < nph - 1) *P = k->phases[q - a];
    else memset(P, 0, sizeof *P), P->expr = lz->e;
    for (int j = 0; j < P->expr.n; j++) {
      tp_kir_ins *I = &P->expr.ins[j];
      if (I->op == TP_KI_ROWVAL && q >= a && q < nph - 1) I->in = (int16_t)(I->in + a);
      if (I->op != TP_KI_LOAD) continue;
      if (q == nph - 1 && lz->in[I->in].buf == B) I->op = TP_KI_ROWVAL, I->in = (int16_t)(nph - 2);
      else if (q == nph - 1 && lz->in[I->in].buf == B2) I->op = TP_KI_ROWVAL, I->in = (int16_t)(a - 1);
      else I->in = (int16_t)sl[I->in];
    }
  }
  for (int q = 0; q < lz->nin; q++)
    if (slot[q] >= 0) s->buf_uses[lz->in[q].buf]++;
  memcpy(k->phases, ph, sizeof ph);
  k->nphases = nph;
  memcpy(k->in, in, sizeof in);
  k->nin = nin;
  k->out = ob;
  if (k2) remove_kernel(s, rk2, rk), rk--;
  x->kind = V_REF;
  x->buf = ob;
  x->off = 0;
  memcpy(x->st, p->bufs[ob].strides, sizeof x->st);
  x->gemm = -1;
  note_kernel(s, x, rk);
  *done = 1;
  return TP_OK;
}

/* 1 when load L reads element i of a contiguous buffer of d's shape at
 * element i (the stride of a size-1 dim does not matter: a 1x1 conv's
 * [1, M, 1, W] view of its GEMM's result) */
static int reads_elementwise(const tp_kir_load *L, const tp_desc *d, const int64_t *cst) {
  if (L->offset != 0) return 0;
  for (int k = 0; k < d->ndim; k++)
    if (d->shape[k] != 1 && L->strides[k] != cst[k]) return 0;
  return 1;
}

static tp_status materialize(sched *s, val *x, tp_kir_buf_kind kind, int out_index) {
  if (x->kind == V_REF && kind == TP_KBUF_TEMP) return TP_OK;
  if (x->kind == V_SCALAR) return tp_fail(TP_ERR_INTERNAL, "schedule: materializing a scalar");
  val lz;
  if (x->kind == V_REF) ref_as_lazy(x, &lz);
  else lz = *x;
  int ob;
  TP_TRY(add_buf(s, kind, &x->desc, &ob));
  s->p->bufs[ob].index = out_index;
  /* epilogue fusion: one load reads, element for element, the output of a
   * GEMM whose result nobody else reads (through a reshape, too: the
   * expression is regrouped onto the GEMM's [M, N] when its loads allow) */
  int h16_in = 0; /* a float16 load: not into a GEMM / conv epilogue (generated Wasm GEMMs read float32) */
  for (int q = 0; q < lz.nin; q++) h16_in |= s->p->bufs[lz.in[q].buf].desc.dtype == TP_F16;
  if (s->o->epilogue_fusion && lz.desc.dtype == TP_F32 && !h16_in) {
    val lz0 = lz;
    for (int i = 0; i < lz0.nin; i++) {
      lz = lz0;
      const tp_kir_buf *b = &s->p->bufs[lz.in[i].buf];
      int gk = -1;
      for (int k = 0; k < s->p->nkernels; k++)
        if ((s->p->kernels[k].kind == TP_KK_GEMM || s->p->kernels[k].kind == TP_KK_CONV) &&
            s->p->kernels[k].out == lz.in[i].buf)
          gk = k;
      if (gk < 0 || b->kind != TP_KBUF_TEMP) continue;
      /* the epilogue is over the kernel's own iteration space (a GEMM's
       * [M, N] or batched shape, a conv's [N, M, OH, OW]), which is not
       * the buffer's shape when the kernel already has an epilogue whose
       * result was reshaped ([1, M, 1, W] after a 1x1 conv's GEMM): the
       * expression is regrouped onto it (a conv's: no regrouping) */
      tp_desc kd = b->desc;
      kd.ndim = s->p->kernels[gk].nd;
      memcpy(kd.shape, s->p->kernels[gk].shape, sizeof kd.shape);
      if (!tp_desc_equal(&kd, &lz.desc) &&
          (s->p->kernels[gk].kind == TP_KK_CONV || !regroup_lazy(&lz, &kd)))
        continue;
      int64_t cst[TP_MAX_DIMS];
      contiguous_strides(lz.desc.ndim, lz.desc.shape, cst);
      if (!reads_elementwise(&lz.in[i], &lz.desc, cst) || !tp_desc_equal(&kd, &lz.desc) ||
          tp_shape_numel(b->desc.ndim, b->desc.shape) != tp_shape_numel(kd.ndim, kd.shape) ||
          s->buf_uses[lz.in[i].buf] != 0 ||
          read_by_kernels(s, gk + 1, lz.in[i].buf) ||
          !single_reader(s, s->p->kernels[gk].node, x >= s->v && x < s->v + s->g->n ? (int)(x - s->v) : s->cur))
        continue;
      int other = 0, B = lz.in[i].buf; /* a second load of the same buffer reads
                        the same element, and every other input is ready
                        before the GEMM runs */
      for (int q = 0; q < lz.nin; q++) {
        if (q == i) continue;
        if (lz.in[q].buf == B) {
          other |= !reads_elementwise(&lz.in[q], &lz.desc, cst);
          continue;
        }
        for (int kq = gk; kq < s->p->nkernels; kq++)
          other |= s->p->kernels[kq].out == lz.in[q].buf;
      }
      if (other) continue;
      tp_kir_kernel *k = &s->p->kernels[gk];
      if (k->expr.n) {
        /* the GEMM already has an epilogue writing B (a value read by
         * several steps: an unfolded affine before a hard-swish): its
         * value stands for every load of B, this expression after it */
        if (!tp_kir_append_epilogue(k, &lz.e, lz.in, lz.nin, B, ob)) continue;
      } else {
        /* the epilogue runs over the GEMM output in place of the load */
        k->expr = lz.e;
        for (int q = 0; q < k->expr.n; q++)
          if (k->expr.ins[q].op == TP_KI_LOAD && lz.in[k->expr.ins[q].in].buf == B) {
            k->expr.ins[q].op = TP_KI_ACC;
            k->expr.ins[q].in = -1;
          }
        k->nin = lz.nin;
        memcpy(k->in, lz.in, sizeof lz.in);
        for (int q = 0; q < lz.nin; q++)
          if (k->in[q].buf == B) k->in[q].buf = ob; /* slots kept (unused: ACC) pointing at the new output */
      }
      k->out = ob;
      for (int q = 0; q < lz.nin; q++)
        if (lz.in[q].buf != B) s->buf_uses[lz.in[q].buf]++;
      s->p->bufs[B].kind = TP_KBUF_TEMP; /* now unused */
      x->kind = V_REF;
      x->buf = ob;
      x->off = 0;
      memcpy(x->st, s->p->bufs[ob].strides, sizeof x->st);
      x->gemm = -1;
      note_kernel(s, x, gk);
      return TP_OK;
    }
    lz = lz0;
  }
  int fused;
  TP_TRY(row_map_fusion(s, x, &lz, ob, &fused));
  if (fused) return TP_OK;
  int kid;
  TP_TRY(add_kernel(s, TP_KK_POINTWISE, &kid));
  tp_kir_kernel *k = &s->p->kernels[kid];
  k->out = ob;
  k->nd = lz.desc.ndim;
  memcpy(k->shape, lz.desc.shape, sizeof k->shape);
  k->expr = lz.e;
  k->nin = lz.nin;
  memcpy(k->in, lz.in, sizeof lz.in);
  TP_TRY(note_reads(s, kid, k->in, k->nin));
  note_kernel(s, x, kid);
  x->kind = V_REF;
  x->buf = ob;
  x->off = 0;
  memcpy(x->st, s->p->bufs[ob].strides, sizeof x->st);
  x->gemm = -1;
  return TP_OK;
}

/* A reference (buffer + strides) of any value, materializing lazies. */
static tp_status as_ref(sched *s, val *x) {
  if (x->kind == V_LAZY) return materialize(s, x, TP_KBUF_TEMP, 0);
  return TP_OK;
}

/* A view buffer for a strided reference (OP kernels read whole buffers). */
static tp_status ref_buffer(sched *s, const val *x, int *out) {
  const tp_kir_buf *b = &s->p->bufs[x->buf];
  if (x->off == 0 && b->kind != TP_KBUF_VIEW && x->desc.ndim == b->desc.ndim &&
      !memcmp(x->desc.shape, b->desc.shape, sizeof(int64_t) * (size_t)x->desc.ndim) &&
      !memcmp(x->st, b->strides, sizeof(int64_t) * (size_t)x->desc.ndim)) {
    *out = x->buf;
    return TP_OK;
  }
  int id;
  TP_TRY(add_buf(s, TP_KBUF_VIEW, &x->desc, &id));
  tp_kir_buf *v = &s->p->bufs[id];
  v->base = x->buf;
  v->offset = x->off;
  memcpy(v->strides, x->st, sizeof v->strides);
  *out = id;
  return TP_OK;
}

/* Node i's value becomes the whole of buffer ob (made by GEMM kernel gemm,
 * or -1); its count of users is kept. */
static void set_ref(sched *s, int i, int ob, int gemm) {
  val *out = &s->v[i];
  int uses = out->uses;
  memset(out, 0, sizeof *out);
  out->kind = V_REF;
  out->desc = s->g->nodes[i].desc;
  out->buf = ob;
  memcpy(out->st, s->p->bufs[ob].strides, sizeof out->st);
  out->gemm = gemm;
  out->uses = uses;
}

/* ---- per node ---- */
/* An operand as a value (scalars become V_SCALAR). */
static val *operand_arg(sched *s, const tp_arg *a, val *tmp) {
  if (a->kind == TP_ARG_NODE) return &s->v[a->node];
  memset(tmp, 0, sizeof *tmp);
  tmp->kind = a->kind == TP_ARG_SCALAR ? V_SCALAR : V_NONE;
  tmp->desc.dtype = a->is_int ? TP_I64 : TP_F32;
  tmp->e.ins[0].imm = (float)a->scalar;
  return tmp;
}

static void drop_use(sched *s, val *x) {
  (void)s;
  if (x->kind == V_SCALAR || x->kind == V_NONE) return;
  x->uses--;
}

/* 1 when x is a float32 constant whose every element is exactly 1.0 */
static int all_ones(const sched *s, const val *x) {
  const tp_kir_buf *b = &s->p->bufs[x->buf];
  if (b->kind != TP_KBUF_CONST || !b->value || b->desc.dtype != TP_F32) return 0;
  const float *f = tp_tensor_ptr(b->value);
  int64_t n = tp_tensor_numel(b->value);
  if (!f || n < 1) return 0;
  for (int64_t q = 0; q < n; q++)
    if (f[q] != 1.0f) return 0;
  return 1;
}

/* float16 <-> float32 casts (issue 17): a float16 buffer cast to float32 is
 * a lazy load (the executor converts it in the chunk: no float32 copy); a
 * float32 value cast to float16 is materialized straight into a float16
 * buffer (the pointwise kernel that computes it rounds as it stores). */
static tp_status try_cast_h16(sched *s, int i, int *done) {
  const tp_node *n = &s->g->nodes[i];
  if (n->args[0].kind != TP_ARG_NODE) return TP_OK;
  val *x = &s->v[n->args[0].node], c, *out = &s->v[i];
  int uses = out->uses;
  if (x->desc.dtype == TP_F16 && n->desc.dtype == TP_F32 && x->kind == V_REF &&
      s->p->bufs[x->buf].desc.dtype == TP_F16) {
    ref_as_lazy(x, &c);
  } else if (x->desc.dtype == TP_F32 && n->desc.dtype == TP_F16 && (x->kind == V_REF || x->kind == V_LAZY)) {
    if (x->kind == V_REF) ref_as_lazy(x, &c);
    else c = *x;
    c.desc = n->desc;
    TP_TRY(materialize(s, &c, TP_KBUF_TEMP, 0));
  } else {
    return TP_OK;
  }
  c.desc = n->desc;
  c.gemm = -1;
  drop_use(s, x);
  *out = c;
  out->uses = uses;
  *done = 1;
  return TP_OK;
}

static tp_status try_pointwise(sched *s, int i, int *done) {
  const tp_node *n = &s->g->nodes[i];
  int kind, sub;
  tp_arg mm[2];
  *done = 0;
  if (n->op == TP_OP_CAST && s->o->fusion) return try_cast_h16(s, i, done);
  if (s->mm && s->mm[i] >= 0) { /* where(compare) as pmax / pmin */
    kind = TP_KI_BINARY, sub = tp_sched_match_minmax(s->g, s->graph_uses, i, &mm[0], &mm[1]);
  } else {
    if (!s->o->fusion || !tp_sched_pointwise_op(n->op, &kind, &sub) || n->desc.dtype != TP_F32) return TP_OK;
    mm[0] = n->args[0];
    if (kind == TP_KI_BINARY) mm[1] = n->args[1];
  }
  if (n->op == TP_OP_GELU && n->attrs.approximate) sub = TP_KU_GELU_TANH;
  val tmp[2], *ops[2];
  int nops = (kind == TP_KI_UNARY) ? 1 : 2;
  for (int k = 0; k < nops; k++) {
    ops[k] = operand_arg(s, &mm[k], &tmp[k]);
    if (ops[k]->kind == V_NONE) return TP_OK;
    if (ops[k]->kind != V_SCALAR && ops[k]->desc.dtype != TP_F32) return TP_OK;
  }
  val *out = &s->v[i];
  val r;
  memset(&r, 0, sizeof r);
  r.kind = V_LAZY;
  r.desc = n->desc;
  r.gemm = -1;
  /* x * ones (a constant of exact 1.0s, broadcasting x: the ONNX
   * importer's nearest Resize, x viewed as [.., in, 1, ..] times a row of
   * ones) is x re-strided: one load, no multiply (x * 1 == x, NaN and -0
   * kept) */
  int keep = -1;
  if (kind == TP_KI_BINARY && sub == TP_KBIN_MUL && !(s->mm && s->mm[i] >= 0))
    for (int k = 0; k < 2 && keep < 0; k++)
      if (ops[k]->kind == V_REF && ops[1 - k]->kind != V_SCALAR && all_ones(s, ops[k])) keep = 1 - k;
  if (keep >= 0) {
    val *x = ops[keep];
    val lz;
    if (x->kind == V_REF) ref_as_lazy(x, &lz);
    else lz = *x;
    int map[TP_MAX_DIMS];
    bcast_map(&lz.desc, r.desc.ndim, r.desc.shape, map);
    if (inline_expr(&r.e, r.in, &r.nin, &lz.e, lz.in, lz.desc.ndim, map, r.desc.ndim) >= 0) {
      for (int k = 0; k < nops; k++) drop_use(s, ops[k]);
      int uses = out->uses;
      *out = r;
      out->uses = uses;
      *done = 1;
      return TP_OK;
    }
    memset(&r.e, 0, sizeof r.e);
    r.nin = 0;
  }
  int idx[2];
  for (int attempt = 0; attempt < 2; attempt++) {
    memset(&r.e, 0, sizeof r.e);
    r.nin = 0;
    int ok = 1;
    for (int k = 0; k < nops && ok; k++) {
      if (ops[k]->kind == V_SCALAR) {
        tp_kir_ins c = {TP_KI_CONST, 0, -1, -1, 0, ops[k]->e.ins[0].imm};
        idx[k] = emit(&r.e, c);
        ok = idx[k] >= 0;
        continue;
      }
      val lz;
      if (ops[k]->kind == V_REF) ref_as_lazy(ops[k], &lz);
      else lz = *ops[k];
      int map[TP_MAX_DIMS];
      bcast_map(&lz.desc, r.desc.ndim, r.desc.shape, map);
      idx[k] = inline_expr(&r.e, r.in, &r.nin, &lz.e, lz.in, lz.desc.ndim, map, r.desc.ndim);
      ok = idx[k] >= 0;
    }
    if (ok) {
      tp_kir_ins x = {(uint8_t)kind, (uint8_t)sub, (int16_t)idx[0], (int16_t)(nops > 1 ? idx[1] : -1), 0, 0};
      if (emit(&r.e, x) >= 0) break;
    }
    if (attempt == 1) return tp_fail(TP_ERR_INTERNAL, "schedule: expression does not fit");
    /* too large: materialize the lazy operands and retry */
    for (int k = 0; k < nops; k++)
      if (ops[k]->kind == V_LAZY) TP_TRY(materialize(s, ops[k], TP_KBUF_TEMP, 0));
  }
  for (int k = 0; k < nops; k++) drop_use(s, ops[k]);
  int uses = out->uses;
  *out = r;
  out->uses = uses;
  *done = 1;
  return TP_OK;
}

/* View ops on references compose strides; lazy values re-stride loads. */
static tp_status try_view(sched *s, int i, int *done) {
  const tp_node *n = &s->g->nodes[i];
  *done = 0;
  if (!(tp_op_flags(n->op) & TP_OPF_VIEW) || n->args[0].kind != TP_ARG_NODE) return TP_OK;
  val *x = &s->v[n->args[0].node];
  val *out = &s->v[i];
  int uses = out->uses;
  int nd = x->desc.ndim;
  int64_t perm[TP_MAX_DIMS];
  int64_t off = 0, step = 1, d = 0;
  int is_perm = 0, is_slice = 0;
  if (n->op == TP_OP_TRANSPOSE || n->op == TP_OP_PERMUTE) {
    is_perm = 1;
    for (int k = 0; k < nd; k++) perm[k] = k;
    if (n->op == TP_OP_TRANSPOSE && nd) {
      int64_t a, b;
      TP_TRY(tp_norm_dim("transpose", n->attrs.dim, nd, &a));
      TP_TRY(tp_norm_dim("transpose", n->attrs.dim1, nd, &b));
      perm[a] = b;
      perm[b] = a;
    } else if (n->op == TP_OP_PERMUTE) {
      for (int k = 0; k < nd; k++) TP_TRY(tp_norm_dim("permute", n->attrs.ints[k], nd, &perm[k]));
    }
  } else if (n->op == TP_OP_SLICE) {
    int64_t len;
    is_slice = 1;
    TP_TRY(tp_norm_dim("slice", n->attrs.dim, nd, &d));
    tp_slice_bounds(x->desc.shape[d], n->attrs.start, n->attrs.end, n->attrs.step, &off, &len);
    step = n->attrs.step;
  }
  if (x->kind == V_LAZY && n->op == TP_OP_RESHAPE) TP_TRY(materialize(s, x, TP_KBUF_TEMP, 0));
  val r = *x;
  r.desc = n->desc;
  r.gemm = -1;
  if (x->kind == V_REF) {
    if (is_perm) {
      for (int k = 0; k < nd; k++) r.st[k] = x->st[perm[k]];
    } else if (is_slice) {
      r.off = x->off + off * x->st[d];
      r.st[d] = x->st[d] * step;
    } else { /* reshape */
      if (!tp_view_strides(nd, x->desc.shape, x->st, n->desc.ndim, n->desc.shape, r.st)) {
        /* not expressible: a contiguous copy first */
        val c = *x;
        if (x->desc.dtype != TP_F32) return TP_OK; /* the eager op copies */
        ref_as_lazy(x, &c);
        TP_TRY(materialize(s, &c, TP_KBUF_TEMP, 0));
        r = c;
        r.desc = n->desc;
        contiguous_strides(n->desc.ndim, n->desc.shape, r.st);
      }
    }
  } else if (x->kind == V_LAZY) {
    for (int q = 0; q < r.nin; q++) {
      tp_kir_load *L = &r.in[q];
      int64_t st[TP_MAX_DIMS];
      memcpy(st, L->strides, sizeof st);
      if (is_perm) {
        for (int k = 0; k < nd; k++) L->strides[k] = st[perm[k]];
      } else {
        L->offset += off * st[d];
        L->strides[d] = st[d] * step;
      }
    }
  } else {
    return TP_OK;
  }
  drop_use(s, x);
  *out = r;
  out->uses = uses;
  *done = 1;
  return TP_OK;
}

/* GEMM for matmul and linear (float32). */
static tp_status try_gemm(sched *s, int i, int *done) {
  const tp_node *n = &s->g->nodes[i];
  *done = 0;
  if (n->op != TP_OP_MATMUL && n->op != TP_OP_LINEAR) return TP_OK;
  val *a = &s->v[n->args[0].node], *b = &s->v[n->args[1].node];
  val *bias = n->op == TP_OP_LINEAR && n->args[2].kind == TP_ARG_NODE ? &s->v[n->args[2].node] : NULL;
  /* float32 only: float16/bfloat16 operands run eagerly (widened, docs/quantization.md) */
  if (n->desc.dtype != TP_F32 || a->desc.dtype != TP_F32 || b->desc.dtype != TP_F32 || (bias && bias->desc.dtype != TP_F32))
    return TP_OK;
  TP_TRY(as_ref(s, a));
  TP_TRY(as_ref(s, b));
  if (bias) TP_TRY(as_ref(s, bias));
  if (bias && !(bias->st[0] == 1 || bias->desc.shape[0] == 1)) return TP_OK;
  tp_kir_kernel k;
  memset(&k, 0, sizeof k);
  int and = a->desc.ndim, bnd = b->desc.ndim;
  if (n->op == TP_OP_LINEAR) {
    /* rows of x must flatten: leading dims contiguous with each other */
    int64_t rows = 1;
    for (int q = 0; q < and - 1; q++) rows *= a->desc.shape[q];
    for (int q = 0; q + 1 < and - 1; q++)
      if (a->desc.shape[q] != 1 && a->st[q] != a->st[q + 1] * a->desc.shape[q + 1]) return TP_OK;
    k.M = rows;
    k.K = a->desc.shape[and - 1];
    k.N = b->desc.shape[0];
    k.batch = 1;
    k.a_rs = and >= 2 ? a->st[and - 2] : 0;
    k.a_cs = a->st[and - 1];
    k.b_rs = b->st[1];
    k.b_cs = b->st[0];
  } else {
    if (and < 1 || bnd < 1) return TP_OK;
    /* batch: a's leading dims (b without batch dims, or b's equal to a's) */
    int nba = and >= 2 ? and - 2 : 0, nbb = bnd >= 2 ? bnd - 2 : 0;
    k.M = and >= 2 ? a->desc.shape[and - 2] : 1;
    k.K = a->desc.shape[and - 1];
    k.N = bnd >= 2 ? b->desc.shape[bnd - 1] : 1;
    k.a_rs = and >= 2 ? a->st[and - 2] : 0;
    k.a_cs = a->st[and - 1];
    k.b_rs = bnd >= 2 ? b->st[bnd - 2] : b->st[0];
    k.b_cs = bnd >= 2 ? b->st[bnd - 1] : 0;
    k.batch = 1;
    for (int q = 0; q < nba; q++) k.batch *= a->desc.shape[q];
    if (nbb > 0) { /* same batch dims, each collapsible */
      if (nbb != nba) return TP_OK;
      for (int q = 0; q < nba; q++)
        if (a->desc.shape[q] != b->desc.shape[q]) return TP_OK;
    }
    for (int q = 0; q + 1 < nba; q++)
      if ((a->desc.shape[q] != 1 && a->st[q] != a->st[q + 1] * a->desc.shape[q + 1]) ||
          (nbb && b->desc.shape[q] != 1 && b->st[q] != b->st[q + 1] * b->desc.shape[q + 1]))
        return TP_OK;
    k.a_bs = nba ? a->st[nba - 1] : 0;
    k.b_bs = nbb ? b->st[nbb - 1] : 0;
    if (k.batch > 1 && nba == 0) return TP_OK;
  }
  k.a_buf = a->buf;
  k.a_off = a->off;
  k.b_buf = b->buf;
  k.b_off = b->off;
  k.b_const = s->p->bufs[b->buf].kind == TP_KBUF_CONST && k.batch == 1;
  if (s->gemm_h16) { /* B: the float16 constant itself, packed once as float16 panels */
    if (!k.b_const || s->p->bufs[b->buf].desc.dtype != TP_F16) return TP_OK;
    k.b_f16 = 1;
  }
  k.bias_buf = -1;
  if (bias) {
    int bb;
    TP_TRY(ref_buffer(s, bias, &bb));
    k.bias_buf = bb;
  }
  int ob, kid;
  TP_TRY(add_buf(s, TP_KBUF_TEMP, &n->desc, &ob));
  TP_TRY(add_kernel(s, TP_KK_GEMM, &kid));
  tp_kir_kernel *kk = &s->p->kernels[kid];
  char name[48];
  memcpy(name, kk->name, sizeof name);
  *kk = k;
  memcpy(kk->name, name, sizeof name);
  kk->kind = TP_KK_GEMM;
  kk->out = ob;
  kk->node = i;
  kk->nd = n->desc.ndim;
  memcpy(kk->shape, n->desc.shape, sizeof kk->shape);
  s->buf_uses[a->buf]++;
  s->buf_uses[b->buf]++;
  if (kk->bias_buf >= 0) s->buf_uses[kk->bias_buf]++;
  drop_use(s, a);
  drop_use(s, b);
  if (bias) drop_use(s, bias);
  set_ref(s, i, ob, kid);
  *done = 1;
  return TP_OK;
}

static int prologue(tp_kir_phase *ph, const tp_kir_expr *e) {
  ph->expr = *e;
  return ph->expr.n - 1;
}

/* A reduction of x over all dims, min or max, whose opposite over all dims
 * of the same x comes later (DynamicQuantizeLinear's composition): that
 * node, scheduled with this one as one TP_KR_MINMAX row kernel; else -1. */
static int minmax_partner(const sched *s, int i) {
  const tp_node *n = &s->g->nodes[i];
  if (!s->mm || (n->op != TP_OP_MAX && n->op != TP_OP_MIN) || n->attrs.nints != 0) return -1;
  int x = n->args[0].node;
  for (int q = s->uoff[x]; q < s->uoff[x + 1]; q++) {
    const tp_node *m = &s->g->nodes[s->ulist[q]];
    if (s->ulist[q] > i && m->kind == TP_NODE_CALL && m->op == (n->op == TP_OP_MAX ? TP_OP_MIN : TP_OP_MAX) &&
        m->attrs.nints == 0 && m->args[0].kind == TP_ARG_NODE && m->args[0].node == x && s->mm[s->ulist[q]] == -1 &&
        tp_desc_equal(&m->desc, &n->desc))
      return s->ulist[q];
  }
  return -1;
}

/* Row kernels: softmax / log_softmax over the last dim, layer_norm over one
 * trailing dim, sum / mean / max / min over the trailing dims. */
static tp_status try_row(sched *s, int i, int *done) {
  const tp_node *n = &s->g->nodes[i];
  *done = 0;
  int is_red = (tp_op_flags(n->op) & TP_OPF_REDUCE) != 0;
  if (!s->o->fusion && !is_red && n->op != TP_OP_SOFTMAX && n->op != TP_OP_LOG_SOFTMAX &&
      n->op != TP_OP_LAYER_NORM)
    return TP_OK;
  if (!is_red && n->op != TP_OP_SOFTMAX && n->op != TP_OP_LOG_SOFTMAX && n->op != TP_OP_LAYER_NORM)
    return TP_OK;
  if (n->args[0].kind != TP_ARG_NODE) return TP_OK;
  val *x = &s->v[n->args[0].node];
  if (x->desc.dtype != TP_F32 || n->desc.dtype != TP_F32 || x->desc.ndim == 0) return TP_OK;
  int nd = x->desc.ndim, rdims = 1, pair = -1;
  int64_t R;
  if (n->op == TP_OP_SOFTMAX || n->op == TP_OP_LOG_SOFTMAX) {
    int64_t d;
    TP_TRY(tp_norm_dim("softmax", n->attrs.dim, nd, &d));
    if (d != nd - 1) return TP_OK;
    R = x->desc.shape[nd - 1];
  } else if (n->op == TP_OP_LAYER_NORM) {
    if (n->attrs.nints != 1) return TP_OK;
    R = x->desc.shape[nd - 1];
  } else {
    int mask[TP_MAX_DIMS] = {0}, k = 0;
    /* all dims: an op kernel, unless the min and the max of the same x
     * (one row kernel, one pass for both) */
    if (n->attrs.nints == 0 && (pair = minmax_partner(s, i)) < 0) return TP_OK;
    for (int q = 0; q < (pair >= 0 ? nd : n->attrs.nints); q++) {
      int64_t d;
      if (pair >= 0) d = q;
      else TP_TRY(tp_norm_dim("reduce", n->attrs.ints[q], nd, &d));
      mask[d] = 1;
      k++;
    }
    /* trailing dims: one, or several merged into one row when every load
     * of the prologue allows (a global average pool over [H, W]) */
    R = 1;
    for (int q = nd - k; q < nd; q++) {
      if (q < 0 || !mask[q]) return TP_OK;
      R *= x->desc.shape[q];
    }
    if (R == 0) return TP_OK;
    rdims = k;
  }
  if (R == 0) return TP_OK;
  /* layer_norm's weight and bias are read by the row kernel: computed
   * before it (materializing them after adding the row kernel put their
   * kernels after it, which then read them unwritten; found by the
   * differential tests, tests/c/compiler/test_diff.c) */
  val *w = NULL, *b = NULL;
  if (n->op == TP_OP_LAYER_NORM) {
    w = n->args[1].kind == TP_ARG_NODE ? &s->v[n->args[1].node] : NULL;
    b = n->args[2].kind == TP_ARG_NODE ? &s->v[n->args[2].node] : NULL;
    if (w) TP_TRY(as_ref(s, w));
    if (b) TP_TRY(as_ref(s, b));
  }
  /* the prologue: x's expression over the nd iteration space */
  val lz;
  if (x->kind == V_REF) ref_as_lazy(x, &lz);
  else lz = *x;
  if (rdims > 1) { /* [outer..., R] */
    tp_desc to = lz.desc;
    to.ndim = nd - rdims + 1;
    to.shape[to.ndim - 1] = R;
    if (!regroup_lazy(&lz, &to)) return TP_OK;
    nd = to.ndim;
  }
  int kid, ob;
  tp_desc od = n->desc;
  if (pair >= 0) od.ndim = 1, od.shape[0] = 2; /* [min, max] */
  TP_TRY(add_buf(s, TP_KBUF_TEMP, &od, &ob));
  TP_TRY(add_kernel(s, TP_KK_ROW, &kid));
  tp_kir_kernel *k = &s->p->kernels[kid];
  k->out = ob;
  k->node = i;
  k->nd = nd;
  memcpy(k->shape, lz.desc.shape, sizeof k->shape);
  k->nin = lz.nin;
  memcpy(k->in, lz.in, sizeof lz.in);
  /* phases build on a copy of the prologue: X = value of x */
#define PROLOGUE(ph) prologue(ph, &lz.e)
  tp_kir_phase *p0 = &k->phases[0], *p1 = &k->phases[1], *p2 = &k->phases[2];
  tp_kir_ins I;
  if (is_red) {
    k->nphases = 1;
    p0->is_reduce = 1;
    p0->reduce = pair >= 0 ? TP_KR_MINMAX : n->op == TP_OP_MAX ? TP_KR_MAX : n->op == TP_OP_MIN ? TP_KR_MIN : TP_KR_SUM;
    p0->scale = n->op == TP_OP_MEAN ? 1.0f / (float)R : 1.0f;
    PROLOGUE(p0);
  } else if (n->op == TP_OP_SOFTMAX || n->op == TP_OP_LOG_SOFTMAX) {
    k->nphases = 3;
    p0->is_reduce = 1, p0->reduce = TP_KR_MAX, p0->scale = 1;
    PROLOGUE(p0);
    p1->is_reduce = 1, p1->reduce = TP_KR_SUM, p1->scale = 1;
    int xv = PROLOGUE(p1);
    I = (tp_kir_ins){TP_KI_ROWVAL, 0, -1, -1, 0, 0};
    int m = emit(&p1->expr, I);
    I = (tp_kir_ins){TP_KI_BINARY, TP_KBIN_SUB, (int16_t)xv, (int16_t)m, 0, 0};
    int c = emit(&p1->expr, I);
    I = (tp_kir_ins){TP_KI_UNARY, TP_KU_EXP, (int16_t)c, -1, 0, 0};
    emit(&p1->expr, I);
    /* map: softmax = exp(x - m) * (1 / s); log_softmax = (x - m) - log(s) */
    xv = PROLOGUE(p2);
    I = (tp_kir_ins){TP_KI_ROWVAL, 0, -1, -1, 0, 0};
    m = emit(&p2->expr, I);
    I = (tp_kir_ins){TP_KI_BINARY, TP_KBIN_SUB, (int16_t)xv, (int16_t)m, 0, 0};
    c = emit(&p2->expr, I);
    I = (tp_kir_ins){TP_KI_ROWVAL, 0, -1, -1, 1, 0};
    int sv = emit(&p2->expr, I);
    if (n->op == TP_OP_SOFTMAX) {
      I = (tp_kir_ins){TP_KI_UNARY, TP_KU_EXP, (int16_t)c, -1, 0, 0};
      int e = emit(&p2->expr, I);
      I = (tp_kir_ins){TP_KI_CONST, 0, -1, -1, 0, 1.0f};
      int one = emit(&p2->expr, I);
      I = (tp_kir_ins){TP_KI_BINARY, TP_KBIN_DIV, (int16_t)one, (int16_t)sv, 0, 0};
      int inv = emit(&p2->expr, I);
      I = (tp_kir_ins){TP_KI_BINARY, TP_KBIN_MUL, (int16_t)e, (int16_t)inv, 0, 0};
      emit(&p2->expr, I);
    } else {
      I = (tp_kir_ins){TP_KI_UNARY, TP_KU_LOG, (int16_t)sv, -1, 0, 0};
      int l = emit(&p2->expr, I);
      I = (tp_kir_ins){TP_KI_BINARY, TP_KBIN_SUB, (int16_t)c, (int16_t)l, 0, 0};
      emit(&p2->expr, I);
    }
  } else { /* layer_norm over the last dim */
    k->nphases = 3;
    p0->is_reduce = 1, p0->reduce = TP_KR_SUM, p0->scale = 1.0f / (float)R;
    PROLOGUE(p0);
    p1->is_reduce = 1, p1->reduce = TP_KR_SUM, p1->scale = 1.0f / (float)R;
    int xv = PROLOGUE(p1);
    I = (tp_kir_ins){TP_KI_ROWVAL, 0, -1, -1, 0, 0};
    int m = emit(&p1->expr, I);
    I = (tp_kir_ins){TP_KI_BINARY, TP_KBIN_SUB, (int16_t)xv, (int16_t)m, 0, 0};
    int c = emit(&p1->expr, I);
    I = (tp_kir_ins){TP_KI_BINARY, TP_KBIN_MUL, (int16_t)c, (int16_t)c, 0, 0};
    emit(&p1->expr, I);
    xv = PROLOGUE(p2);
    m = emit(&p2->expr, (tp_kir_ins){TP_KI_ROWVAL, 0, -1, -1, 0, 0});
    c = emit(&p2->expr, (tp_kir_ins){TP_KI_BINARY, TP_KBIN_SUB, (int16_t)xv, (int16_t)m, 0, 0});
    int var = emit(&p2->expr, (tp_kir_ins){TP_KI_ROWVAL, 0, -1, -1, 1, 0});
    int eps = emit(&p2->expr, (tp_kir_ins){TP_KI_CONST, 0, -1, -1, 0, (float)n->attrs.eps});
    int ve = emit(&p2->expr, (tp_kir_ins){TP_KI_BINARY, TP_KBIN_ADD, (int16_t)var, (int16_t)eps, 0, 0});
    int rs = emit(&p2->expr, (tp_kir_ins){TP_KI_UNARY, TP_KU_RSQRT, (int16_t)ve, -1, 0, 0});
    int y = emit(&p2->expr, (tp_kir_ins){TP_KI_BINARY, TP_KBIN_MUL, (int16_t)c, (int16_t)rs, 0, 0});
    val *wb[2] = {w, b};
    for (int q = 0; q < 2; q++) {
      if (!wb[q]) continue;
      if (k->nin >= TP_KIR_MAX_IN) return tp_fail(TP_ERR_INTERNAL, "schedule: too many inputs");
      tp_kir_load L;
      memset(&L, 0, sizeof L);
      L.buf = wb[q]->buf;
      L.offset = wb[q]->off;
      L.strides[nd - 1] = wb[q]->st[0];
      k->in[k->nin] = L;
      int ld = emit(&p2->expr, (tp_kir_ins){TP_KI_LOAD, 0, -1, -1, (int16_t)k->nin, 0});
      k->nin++;
      y = emit(&p2->expr, (tp_kir_ins){TP_KI_BINARY, (uint8_t)(q ? TP_KBIN_ADD : TP_KBIN_MUL), (int16_t)y, (int16_t)ld, 0, 0});
      drop_use(s, wb[q]);
    }
    if (y < 0) return tp_fail(TP_ERR_INTERNAL, "schedule: expression does not fit");
  }
#undef PROLOGUE
  TP_TRY(note_reads(s, kid, k->in, k->nin));
  drop_use(s, x);
  set_ref(s, i, ob, -1);
  if (pair >= 0) { /* both nodes: one element of [min, max] each */
    drop_use(s, x);
    set_ref(s, pair, ob, -1);
    s->mm[pair] = -3;
    s->p->node_kernel[pair] = kid;
    int ids[2] = {i, pair};
    for (int q = 0; q < 2; q++) {
      s->v[ids[q]].off = s->g->nodes[ids[q]].op == TP_OP_MAX;
      memset(s->v[ids[q]].st, 0, sizeof s->v[ids[q]].st);
    }
  }
  *done = 1;
  return TP_OK;
}

/* Anything else: one eager op kernel over buffers. */
static tp_status op_kernel(sched *s, int i) {
  const tp_node *n = &s->g->nodes[i];
  int bufs[TP_MAX_OPERANDS];
  for (int k = 0; k < n->nargs; k++) {
    bufs[k] = -1;
    if (n->args[k].kind != TP_ARG_NODE) continue;
    val *x = &s->v[n->args[k].node];
    if (x->kind == V_NONE) continue; /* a subgraph reference (invoke) */
    TP_TRY(as_ref(s, x));
    TP_TRY(ref_buffer(s, x, &bufs[k]));
    s->buf_uses[bufs[k]]++;
    drop_use(s, x);
  }
  int ob, kid;
  tp_desc d = n->desc;
  TP_TRY(add_buf(s, TP_KBUF_TEMP, &d, &ob));
  /* a float32 conv2d is a conv kernel: what follows it can become its
   * epilogue (materialize) */
  int conv = n->op == TP_OP_CONV2D && d.dtype == TP_F32 && d.ndim == 4 && n->nargs == 3 && bufs[0] >= 0 &&
             bufs[1] >= 0 && s->p->bufs[bufs[0]].desc.dtype == TP_F32 && s->p->bufs[bufs[1]].desc.dtype == TP_F32;
  TP_TRY(add_kernel(s, conv ? TP_KK_CONV : TP_KK_OP, &kid));
  tp_kir_kernel *k = &s->p->kernels[kid];
  k->kind = conv ? TP_KK_CONV : TP_KK_OP;
  k->out = ob;
  k->node = i;
  k->nops = n->nargs;
  memcpy(k->op_bufs, bufs, sizeof(int) * (size_t)n->nargs);
  if (conv) {
    k->nd = d.ndim;
    memcpy(k->shape, d.shape, sizeof k->shape);
    snprintf(k->name, sizeof k->name, "k%d_conv", kid);
  } else {
    snprintf(k->name, sizeof k->name, "k%d_op_%s", kid, tp_op_name(n->op));
  }
  set_ref(s, i, ob, -1);
  return TP_OK;
}

/* node_kernel after the walk: the nodes kernels run (op, row, GEMM) are
 * theirs; a node without a kernel of its own whose one user is a call was
 * fused into that user's kernel (a lazy pointwise chain, a view read by one
 * kernel, a compare folded into its where), so it takes the user's kernel
 * (users come after their operands: one walk from the end). */
/* ---- float16 weights (issue 17) ----
 * A cast of a float16 constant to float32 whose every user is a matmul /
 * linear reading it as B, and only there (tp_pass_fold leaves such casts):
 * not scheduled; the GEMM reads the float16 constant (b_f16) and the plan
 * packs it once as float16 panels, converted in registers by the GEMM
 * (kernels.h). Where the GEMM is not built, the cast is scheduled after all
 * (undefer_h16), as an eager op kernel. */
static int is_h16_cast(const sched *s, int c) {
  const tp_graph *g = s->g;
  const tp_node *n = &g->nodes[c];
  if (n->kind != TP_NODE_CALL || n->op != TP_OP_CAST || n->nargs != 1 || n->args[0].kind != TP_ARG_NODE ||
      n->desc.dtype != TP_F32 || s->uoff[c] == s->uoff[c + 1])
    return 0;
  const tp_node *w = &g->nodes[n->args[0].node];
  if (w->kind != TP_NODE_GET_ATTR || !w->val || w->desc.ndim == TP_DESC_GRAPH || w->desc.dtype != TP_F16) return 0;
  for (int q = s->uoff[c]; q < s->uoff[c + 1]; q++) {
    const tp_node *u = &g->nodes[s->ulist[q]];
    if (u->kind != TP_NODE_CALL || (u->op != TP_OP_MATMUL && u->op != TP_OP_LINEAR) || u->nargs < 2 ||
        u->args[1].kind != TP_ARG_NODE || u->args[1].node != c)
      return 0;
    for (int k = 0; k < u->nargs; k++)
      if (k != 1 && u->args[k].kind == TP_ARG_NODE && u->args[k].node == c) return 0;
  }
  return 1;
}

static tp_status undefer_h16(sched *s, int c) {
  int cur = s->cur;
  s->h16[c] = 0;
  s->cur = c;
  tp_status st = op_kernel(s, c);
  s->cur = cur;
  return st;
}

static tp_status try_gemm_h16(sched *s, int i, int *done) {
  const tp_node *n = &s->g->nodes[i];
  int c = s->h16 && (n->op == TP_OP_MATMUL || n->op == TP_OP_LINEAR) && n->nargs >= 2 &&
                  n->args[1].kind == TP_ARG_NODE
              ? n->args[1].node
              : -1;
  if (c < 0 || !s->h16[c]) return try_gemm(s, i, done);
  s->gemm_h16 = 1;
  tp_status st = try_gemm(s, i, done);
  s->gemm_h16 = 0;
  if (st || *done) return st;
  TP_TRY(undefer_h16(s, c));
  return try_gemm(s, i, done);
}

/* before any other use of node i's operands: deferred casts scheduled */
static tp_status undefer_args(sched *s, int i) {
  const tp_node *n = &s->g->nodes[i];
  for (int k = 0; s->h16 && k < n->nargs; k++)
    if (n->args[k].kind == TP_ARG_NODE && s->h16[n->args[k].node]) TP_TRY(undefer_h16(s, n->args[k].node));
  return TP_OK;
}

static tp_status finish_node_kernels(sched *s) {
  const tp_graph *g = s->g;
  int *nk = s->p->node_kernel;
  for (int k = 0; k < s->p->nkernels; k++) {
    const tp_kir_kernel *kk = &s->p->kernels[k];
    if (kk->kind != TP_KK_POINTWISE && kk->node >= 0 && kk->node < g->n) nk[kk->node] = k;
  }
  int *user = tp_alloc(sizeof(int) * (size_t)(g->n ? g->n : 1));
  if (!user) return TP_ERR_OUT_OF_MEMORY;
  for (int i = 0; i < g->n; i++) user[i] = -1;
  for (int i = 0; i < g->n; i++)
    for (int a = 0; a < g->nodes[i].nargs; a++)
      if (g->nodes[i].args[a].kind == TP_ARG_NODE) user[g->nodes[i].args[a].node] = i;
  for (int i = g->n - 1; i >= 0; i--) {
    if (nk[i] >= 0 || g->nodes[i].kind != TP_NODE_CALL || s->graph_uses[i] != 1) continue;
    int u = user[i];
    if (u > i && g->nodes[u].kind == TP_NODE_CALL) nk[i] = nk[u];
  }
  tp_free(user);
  return TP_OK;
}

tp_status tp_schedule(tp_graph *g, const tp_lower_options *o, tp_kir_program **out) {
  tp_lower_options def;
  if (!o) {
    tp_lower_options_init(&def);
    o = &def;
  }
  *out = NULL;
  sched s;
  memset(&s, 0, sizeof s);
  s.o = o;
  s.g = g;
  s.p = tp_alloc(sizeof *s.p);
  s.v = tp_alloc(sizeof(val) * (size_t)(g->n ? g->n : 1));
  s.graph_uses = tp_alloc(sizeof(int) * (size_t)(g->n ? g->n : 1));
  tp_status st = TP_OK;
  if (!s.p || !s.v || !s.graph_uses) {
    tp_free(s.p);
    tp_free(s.v);
    tp_free(s.graph_uses);
    tp_graph_free(g);
    return TP_ERR_OUT_OF_MEMORY;
  }
  memset(s.p, 0, sizeof *s.p);
  memset(s.v, 0, sizeof(val) * (size_t)g->n);
  s.p->graph = g;
  s.p->node_kernel = tp_alloc(sizeof(int) * (size_t)(g->n ? g->n : 1));
  if (!s.p->node_kernel) {
    tp_free(s.v);
    tp_free(s.graph_uses);
    tp_kir_program_free(s.p);
    return TP_ERR_OUT_OF_MEMORY;
  }
  for (int i = 0; i < g->n; i++) s.p->node_kernel[i] = -1;
  s.p->fusion = o->fusion;
  s.p->epilogue_fusion = o->epilogue_fusion;
  s.p->memory_planning = o->memory_planning;
  s.p->autotune = o->autotune;
  s.p->coordinate_descent = o->coordinate_descent;
  s.p->use_cache = o->use_cache;
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nargs; k++)
      if (g->nodes[i].args[k].kind == TP_ARG_NODE) s.v[g->nodes[i].args[k].node].uses++;
  for (int i = 0; i < g->n; i++) s.graph_uses[i] = s.v[i].uses;
  /* users per node (each user once) */
  s.uoff = tp_alloc(sizeof(int) * (size_t)(g->n + 1));
  int nrefs = 0;
  for (int i = 0; i < g->n; i++) nrefs += g->nodes[i].nargs;
  s.ulist = tp_alloc(sizeof(int) * (size_t)(nrefs ? nrefs : 1));
  if (!s.uoff || !s.ulist) st = TP_ERR_OUT_OF_MEMORY;
  else {
    memset(s.uoff, 0, sizeof(int) * (size_t)(g->n + 1));
    for (int i = 0; i < g->n; i++)
      for (int k = 0; k < g->nodes[i].nargs; k++) {
        const tp_arg *a = &g->nodes[i].args[k];
        int dup = 0;
        for (int q = 0; q < k; q++) dup |= g->nodes[i].args[q].kind == TP_ARG_NODE && g->nodes[i].args[q].node == a->node;
        if (a->kind == TP_ARG_NODE && !dup) s.uoff[a->node + 1]++;
      }
    for (int i = 0; i < g->n; i++) s.uoff[i + 1] += s.uoff[i];
    int *fill = s.graph_uses; /* reused below: restored after */
    for (int i = 0; i < g->n; i++) fill[i] = s.uoff[i];
    for (int i = 0; i < g->n; i++)
      for (int k = 0; k < g->nodes[i].nargs; k++) {
        const tp_arg *a = &g->nodes[i].args[k];
        int dup = 0;
        for (int q = 0; q < k; q++) dup |= g->nodes[i].args[q].kind == TP_ARG_NODE && g->nodes[i].args[q].node == a->node;
        if (a->kind == TP_ARG_NODE && !dup) s.ulist[fill[a->node]++] = i;
      }
    for (int i = 0; i < g->n; i++) s.graph_uses[i] = s.v[i].uses;
  }
  if (o->fusion && (s.mm = tp_alloc((size_t)(g->n ? g->n : 1)))) {
    memset(s.mm, -1, (size_t)(g->n ? g->n : 1));
    for (int i = 0; i < g->n; i++) {
      tp_arg a, b;
      int sub = tp_sched_match_minmax(s.g, s.graph_uses, i, &a, &b);
      if (sub < 0) continue;
      int c = g->nodes[i].args[0].node;
      s.mm[i] = (signed char)sub;
      s.mm[c] = -2; /* folded into the where: never scheduled */
      /* pmax / pmin: the where already reads the compare's operands; maskpos
       * reads p, which only the compare did: that use moves to the where */
      for (int k = 0; sub != TP_KBIN_MASKPOS && k < g->nodes[c].nargs; k++)
        if (g->nodes[c].args[k].kind == TP_ARG_NODE) s.v[g->nodes[c].args[k].node].uses--;
      s.v[c].uses = 0;
    }
  }
  if (!st && (s.h16 = tp_alloc((size_t)(g->n ? g->n : 1)))) {
    int any = 0;
    for (int i = 0; i < g->n; i++) any |= s.h16[i] = (signed char)is_h16_cast(&s, i);
    if (!any) tp_free(s.h16), s.h16 = NULL;
  }
  int ph = 0;
  for (int i = 0; i < g->n && !st; i++) {
    const tp_node *n = &g->nodes[i];
    val *v = &s.v[i];
    int uses = v->uses, done = 0;
    s.cur = i;
    switch (n->kind) {
      case TP_NODE_PLACEHOLDER:
      case TP_NODE_GET_ATTR: {
        if (n->desc.ndim == TP_DESC_GRAPH) break; /* subgraph reference */
        int b;
        st = add_buf(&s, n->kind == TP_NODE_PLACEHOLDER ? TP_KBUF_INPUT : TP_KBUF_CONST, &n->desc, &b);
        if (st) break;
        if (n->kind == TP_NODE_PLACEHOLDER) s.p->bufs[b].index = ph++;
        else {
          st = tp_contiguous(n->val, &s.p->bufs[b].value);
          if (st) break;
        }
        memset(v, 0, sizeof *v);
        v->kind = V_REF;
        v->desc = n->desc;
        v->buf = b;
        memcpy(v->st, s.p->bufs[b].strides, sizeof v->st);
        v->gemm = -1;
        v->uses = uses;
        break;
      }
      case TP_NODE_CALL:
        if (s.mm && s.mm[i] == -3) break; /* computed with its opposite (minmax_partner) */
        if (s.mm && s.mm[i] == -2) { /* a compare folded into its where (match_minmax) */
          memset(v, 0, sizeof *v);
          v->kind = V_NONE;
          break;
        }
        if (s.h16 && s.h16[i]) { /* deferred: the float16 constant, read as float32 by its GEMMs */
          int uses = v->uses;
          *v = s.v[n->args[0].node];
          v->desc = n->desc;
          v->uses = uses;
          v->gemm = -1;
          break;
        }
        if (s.h16 && n->op != TP_OP_MATMUL && n->op != TP_OP_LINEAR) st = undefer_args(&s, i);
        if (!st && !(tp_op_flags(n->op) & TP_OPF_OPAQUE)) {
          if (!(st = try_view(&s, i, &done)) && !done && !(st = try_pointwise(&s, i, &done)) && !done &&
              !(st = try_gemm_h16(&s, i, &done)) && !done)
            st = try_row(&s, i, &done);
        }
        if (!st && !done) st = undefer_args(&s, i);
        if (!st && !done) st = op_kernel(&s, i);
        /* shared lazy values are computed once (inlining a BatchNorm's
         * x * a + c into both readers of a leaky relu or hardswish after it
         * cost the orientation classifier 5% natively) */
        /* (a float16 load alone stays lazy: each reader converts, no float32 copy) */
        if (!st && s.v[i].kind == V_LAZY && s.v[i].uses > 1 &&
            !(s.v[i].e.n == 1 && s.p->bufs[s.v[i].in[0].buf].desc.dtype == TP_F16))
          st = materialize(&s, &s.v[i], TP_KBUF_TEMP, 0);
        break;
      case TP_NODE_OUTPUT:
        for (int k = 0; k < n->nargs && !st; k++) {
          val *x = &s.v[n->args[k].node];
          val c = *x;
          s.cur = n->args[k].node; /* a copy made for an output computes that node */
          /* outputs get their own buffers: reuse the producer's when it is a
           * kernel output read by nobody else, else write a copy */
          if (c.kind == V_REF) {
            tp_kir_buf *b = &s.p->bufs[c.buf];
            int producer = -1;
            for (int q = 0; q < s.p->nkernels; q++)
              if (s.p->kernels[q].out == c.buf) producer = q;
            int shared = 0;
            for (int q = 0; q < k; q++) shared |= s.p->outputs[q] == c.buf;
            /* a reshape of a pointwise or row kernel's output (written
             * contiguously over the kernel's own shape) is that buffer
             * under the output's shape: no copy (PP-OCRv4 recognition's
             * softmax rows [40, 6625] as its [1, 40, 6625] output) */
            int same = tp_desc_equal(&b->desc, &c.desc);
            if (!same && producer >= 0 && b->kind == TP_KBUF_TEMP && b->desc.dtype == c.desc.dtype &&
                (s.p->kernels[producer].kind == TP_KK_POINTWISE || s.p->kernels[producer].kind == TP_KK_ROW) &&
                is_contig(b->strides, b->desc.ndim, b->desc.shape) &&
                tp_shape_numel(b->desc.ndim, b->desc.shape) == tp_shape_numel(c.desc.ndim, c.desc.shape)) {
              same = 1;
              for (int q = 0; q < s.p->nbufs && same; q++) /* no view of it */
                same = !(s.p->bufs[q].kind == TP_KBUF_VIEW && s.p->bufs[q].base == c.buf);
              if (same && c.off == 0 && is_contig(c.st, c.desc.ndim, c.desc.shape)) {
                b->desc = c.desc;
                b->desc.weak = 0;
                contiguous_strides(b->desc.ndim, b->desc.shape, b->strides);
              }
            }
            if (b->kind == TP_KBUF_TEMP && producer >= 0 && !shared && c.off == 0 && same &&
                tp_desc_equal(&b->desc, &c.desc) && is_contig(c.st, c.desc.ndim, c.desc.shape)) {
              b->kind = TP_KBUF_OUTPUT;
              b->index = k;
              s.p->outputs[k] = c.buf;
              continue;
            }
            if (c.desc.dtype != TP_F32) { /* non-float copies: an eager cast-to-self */
              int vb;
              st = ref_buffer(&s, &c, &vb);
              int ob, kid;
              if (!st) st = add_buf(&s, TP_KBUF_OUTPUT, &c.desc, &ob);
              if (!st) st = add_kernel(&s, TP_KK_OP, &kid);
              if (!st) {
                tp_kir_kernel *kk = &s.p->kernels[kid];
                kk->out = ob;
                kk->node = -1; /* copy */
                if (s.p->node_kernel[s.cur] < 0) s.p->node_kernel[s.cur] = kid;
                kk->nops = 1;
                kk->op_bufs[0] = vb;
                s.p->bufs[ob].index = k;
                s.p->outputs[k] = ob;
              }
              continue;
            }
          }
          st = materialize(&s, &c, TP_KBUF_OUTPUT, k);
          if (!st) s.p->outputs[k] = c.buf;
        }
        s.p->noutputs = n->nargs;
        break;
      default: break;
    }
  }
  if (!st) st = finish_node_kernels(&s);
  tp_free(s.v);
  tp_free(s.buf_uses);
  tp_free(s.graph_uses);
  tp_free(s.uoff);
  tp_free(s.ulist);
  tp_free(s.mm);
  tp_free(s.h16);
  if (st) {
    tp_kir_program_free(s.p);
    return st;
  }
  *out = s.p;
  return TP_OK;
}
