/* symbolic.c - dynamic extents: one Kernel IR program for every value of a
 * dynamic dim (docs/kernel-ir.md, "Dynamic extents").
 *
 * A template is fitted from programs the scheduler made for the same graph
 * at sample values of one symbol s (s0, s0 + h, s0 + 2h, and s0 + 3h when a
 * value is quadratic, e.g. attention's [S, S] scores). The programs must be
 * the same program but for their numbers: kernels, kinds, expressions,
 * buffers, constants and the lowered graph's operators alike. Each number
 * (an extent, a stride, an offset, a GEMM's M / N / K, a buffer's or a
 * node's shape, an op's int attribute, a row's length behind mean's 1/R)
 * is then a polynomial of degree <= 2 in s, exact on the samples, kept in
 * Newton form:
 *
 *   v(s) = v0 + (2h d1 (s - s0) + d2 (s - s0)(s - s0 - h)) / (2h^2)
 *
 * Instantiating the template at a value of s evaluates every number (all
 * must be whole: a stride-2 conv's W/2 at an odd W is not, and that value
 * is refused with the reason) and re-runs the memory plan: microseconds,
 * no passes, no scheduling. The 0/1 rule: s >= 2 (a size 1 broadcasts,
 * a size 0 is empty: both change the program). */
#include "lower.h"
#include "../ops/ops.h"
#include <stdio.h>

struct tp_kir_template {
  tp_kir_program *base;  /* the program at s0 (owned) */
  int64_t s0, h;
  int nslots;
  int64_t *v0, *d1, *d2; /* per slot */
  int *owner;            /* per slot: what it belongs to, for reasons (kernel k: k; buffer b: -1 - b) */
  int nrow;              /* row scales that are 1/R: R fitted like a slot */
  int *row_at;           /* kernel * TP_KIR_MAX_PHASES + phase */
  int64_t *r0, *r1, *r2;
  int nsyms_dynamic;     /* slots that depend on s */
  int quadratic;
};

/* ---- the numbers of a program, in one fixed order ---- */
typedef struct walker {
  int n, cap;
  int64_t **at;   /* NULL: count only */
  int *owner;
} walker;

static void put(walker *w, int64_t *v, int owner) {
  if (w->at && w->n < w->cap) w->at[w->n] = v, w->owner[w->n] = owner;
  w->n++;
}

static void walk(tp_kir_program *p, walker *w) {
  for (int b = 0; b < p->nbufs; b++) {
    tp_kir_buf *x = &p->bufs[b];
    for (int d = 0; d < x->desc.ndim; d++) put(w, &x->desc.shape[d], -1 - b), put(w, &x->strides[d], -1 - b);
    put(w, &x->offset, -1 - b);
  }
  for (int k = 0; k < p->nkernels; k++) {
    tp_kir_kernel *kk = &p->kernels[k];
    for (int d = 0; d < kk->nd; d++) put(w, &kk->shape[d], k);
    for (int i = 0; i < kk->nin; i++) {
      put(w, &kk->in[i].offset, k);
      for (int d = 0; d < kk->nd; d++) put(w, &kk->in[i].strides[d], k);
    }
    int64_t *g[] = {&kk->M, &kk->N, &kk->K, &kk->batch, &kk->a_off, &kk->a_rs, &kk->a_cs, &kk->a_bs,
                    &kk->b_off, &kk->b_rs, &kk->b_cs, &kk->b_bs};
    for (int i = 0; i < (int)TP_ARRAY_LEN(g); i++) put(w, g[i], k);
  }
  for (int i = 0; p->graph && i < p->graph->n; i++) {
    tp_node *n = &p->graph->nodes[i];
    int own = p->node_kernel ? p->node_kernel[i] : -1;
    if (own < 0) own = INT32_MIN; /* a node no kernel runs */
    for (int d = 0; d < n->desc.ndim; d++) put(w, &n->desc.shape[d], own);
    for (int d = 0; d < n->attrs.nints && d < TP_MAX_DIMS; d++) put(w, &n->attrs.ints[d], own);
    put(w, &n->attrs.dim, own), put(w, &n->attrs.dim1, own);
    put(w, &n->attrs.start, own), put(w, &n->attrs.end, own), put(w, &n->attrs.step, own);
  }
}

static int64_t **numbers(tp_kir_program *p, int *n, int **owner) {
  walker w = {0};
  walk(p, &w);
  w.cap = w.n;
  w.at = tp_alloc(sizeof(int64_t *) * (size_t)(w.n ? w.n : 1));
  w.owner = tp_alloc(sizeof(int) * (size_t)(w.n ? w.n : 1));
  if (!w.at || !w.owner) {
    tp_free(w.at), tp_free(w.owner);
    return NULL;
  }
  w.n = 0;
  walk(p, &w);
  *n = w.n;
  if (owner) *owner = w.owner;
  else tp_free(w.owner);
  return w.at;
}

/* ---- same program but for the numbers ---- */
static int same_expr(const tp_kir_expr *a, const tp_kir_expr *b) {
  return a->n == b->n && !memcmp(a->ins, b->ins, sizeof(tp_kir_ins) * (size_t)a->n);
}

static int same_const(const tp_tensor *a, const tp_tensor *b) {
  if (!a || !b) return a == b;
  if (a == b) return 1;
  if (tp_tensor_dtype(a) != tp_tensor_dtype(b) || tp_tensor_numel(a) != tp_tensor_numel(b)) return 0;
  tp_tensor *ca = NULL, *cb = NULL;
  int same = 0;
  if (!tp_contiguous((tp_tensor *)a, &ca) && !tp_contiguous((tp_tensor *)b, &cb))
    same = !memcmp(tp_tensor_ptr(ca), tp_tensor_ptr(cb),
                   (size_t)tp_tensor_numel(a) * tp_dtype_size(tp_tensor_dtype(a)));
  tp_tensor_release(ca), tp_tensor_release(cb);
  tp_clear_error();
  return same;
}

/* 1 when a and b are the same program but for their numbers; else 0 and
 * why says where they differ. */
static int same_structure(const tp_kir_program *a, const tp_kir_program *b, char *why, size_t nwhy) {
#define DIFF(...) do { snprintf(why, nwhy, __VA_ARGS__); return 0; } while (0)
  if (a->nkernels != b->nkernels) DIFF("%d kernels at one size, %d at another", a->nkernels, b->nkernels);
  if (a->nbufs != b->nbufs) DIFF("%d buffers at one size, %d at another", a->nbufs, b->nbufs);
  if (a->noutputs != b->noutputs || memcmp(a->outputs, b->outputs, sizeof(int) * (size_t)a->noutputs))
    DIFF("the outputs differ");
  if (!a->graph || !b->graph || a->graph->n != b->graph->n) DIFF("the lowered graphs differ in length");
  for (int i = 0; i < a->nbufs; i++) {
    const tp_kir_buf *x = &a->bufs[i], *y = &b->bufs[i];
    if (x->kind != y->kind || x->desc.dtype != y->desc.dtype || x->desc.ndim != y->desc.ndim ||
        x->index != y->index || (x->kind == TP_KBUF_VIEW && x->base != y->base))
      DIFF("buffer b%d differs in kind, dtype or rank", i);
    if (x->kind == TP_KBUF_CONST && !same_const(x->value, y->value))
      DIFF("constant b%d differs with the size (a constant computed from the dim)", i);
  }
  for (int k = 0; k < a->nkernels; k++) {
    const tp_kir_kernel *x = &a->kernels[k], *y = &b->kernels[k];
    if (x->kind != y->kind || x->out != y->out || x->nd != y->nd || x->nin != y->nin || x->node != y->node ||
        x->nops != y->nops || memcmp(x->op_bufs, y->op_bufs, sizeof x->op_bufs) || x->a_buf != y->a_buf ||
        x->b_buf != y->b_buf || x->bias_buf != y->bias_buf || x->b_const != y->b_const || x->b_f16 != y->b_f16 ||
        x->tune_kc != y->tune_kc || x->tune_mc != y->tune_mc || strcmp(x->name, y->name))
      DIFF("kernel %s differs in kind, operands or iteration rank", x->name);
    for (int i = 0; i < x->nin; i++)
      if (x->in[i].buf != y->in[i].buf) DIFF("kernel %s reads other buffers", x->name);
    if (!same_expr(&x->expr, &y->expr)) DIFF("kernel %s: the expression differs (a constant of it depends on the dim)", x->name);
    if (x->nphases != y->nphases) DIFF("kernel %s: the row phases differ", x->name);
    for (int q = 0; q < x->nphases; q++)
      if (x->phases[q].is_reduce != y->phases[q].is_reduce || x->phases[q].reduce != y->phases[q].reduce ||
          !same_expr(&x->phases[q].expr, &y->phases[q].expr))
        DIFF("kernel %s: the row phases differ", x->name);
  }
  for (int i = 0; i < a->graph->n; i++) {
    const tp_node *x = &a->graph->nodes[i], *y = &b->graph->nodes[i];
    if (x->kind != y->kind || x->op != y->op || x->nargs != y->nargs || x->desc.dtype != y->desc.dtype ||
        x->desc.ndim != y->desc.ndim || x->attrs.nints != y->attrs.nints || x->attrs.eps != y->attrs.eps ||
        x->attrs.keepdim != y->attrs.keepdim || x->attrs.approximate != y->attrs.approximate ||
        x->attrs.dtype != y->attrs.dtype || x->attrs.clip != y->attrs.clip || x->attrs.nfloats != y->attrs.nfloats ||
        memcmp(x->attrs.floats, y->attrs.floats, sizeof x->attrs.floats) ||
        a->node_kernel[i] != b->node_kernel[i])
      DIFF("lowered node %%%s differs in op, rank or attributes", x->name);
    for (int k = 0; k < x->nargs; k++) /* op kernels read scalar operands from the (shared) node */
      if (x->args[k].kind != y->args[k].kind || x->args[k].node != y->args[k].node ||
          x->args[k].is_int != y->args[k].is_int ||
          (x->args[k].kind == TP_ARG_SCALAR && memcmp(&x->args[k].scalar, &y->args[k].scalar, sizeof(double))))
        DIFF("lowered node %%%s: operand %d differs with the size (a scalar computed from the dim)", x->name, k);
  }
  return 1;
#undef DIFF
}

/* A row phase's scale as 1/R: R, or 0 when it is not of that form. */
static int64_t recip_len(float scale) {
  if (!(scale > 0) || scale >= 1) return 0;
  double r = 1.0 / (double)scale;
  int64_t R = (int64_t)(r + 0.5);
  return R > 1 && 1.0f / (float)R == scale ? R : 0;
}

void tp_kir_template_free(tp_kir_template *t) {
  if (!t) return;
  tp_kir_program_free(t->base);
  tp_free(t->v0), tp_free(t->d1), tp_free(t->d2), tp_free(t->owner);
  tp_free(t->row_at), tp_free(t->r0), tp_free(t->r1), tp_free(t->r2);
  tp_free(t);
}

int tp_kir_template_dynamic(const tp_kir_template *t) { return t ? t->nsyms_dynamic : 0; }
int tp_kir_template_quadratic(const tp_kir_template *t) { return t ? t->quadratic : 0; }

/* Differences of degree 1..3 of v at equispaced samples; 0 on overflow. */
static int diffs(const int64_t *v, int n, int64_t *d1, int64_t *d2, int64_t *d3) {
  int64_t a, b, c, e, f;
  if (__builtin_sub_overflow(v[1], v[0], &a) || __builtin_sub_overflow(v[2], v[1], &b) ||
      __builtin_sub_overflow(b, a, d2))
    return 0;
  *d1 = a;
  *d3 = 0;
  if (n > 3) {
    if (__builtin_sub_overflow(v[3], v[2], &c) || __builtin_sub_overflow(c, b, &e) ||
        __builtin_sub_overflow(e, *d2, &f))
      return 0;
    *d3 = f;
  }
  return 1;
}

tp_status tp_kir_template_fit(tp_kir_program *const *progs, int n, int64_t s0, int64_t h, int *need_more,
                              tp_kir_template **out, char *why, size_t nwhy) {
  *out = NULL;
  *need_more = 0;
  if (why && nwhy) why[0] = 0;
  if (n < 3 || n > 4 || h < 1 || s0 < 2)
    return tp_fail(TP_ERR_INVALID_ARG, "template fit: %d samples from %lld by %lld (3 or 4 from >= 2)", n,
                   (long long)s0, (long long)h);
  for (int i = 0; progs[0]->graph && i < progs[0]->graph->n; i++) /* subgraphs: plans of their own */
    if (progs[0]->graph->nodes[i].kind == TP_NODE_GET_ATTR && progs[0]->graph->nodes[i].desc.ndim == TP_DESC_GRAPH) {
      snprintf(why, nwhy, "the graph calls subgraph %%%s (control flow or a nested region): not fitted, "
               "each size is a specialization", progs[0]->graph->nodes[i].name);
      return TP_OK;
    }
  for (int i = 1; i < n; i++)
    if (!same_structure(progs[0], progs[i], why, nwhy)) return TP_OK;
  int64_t **at[4] = {0};
  int cnt[4] = {0}, *owner = NULL;
  tp_kir_template *t = NULL;
  tp_status s = TP_OK;
  for (int i = 0; i < n && !s; i++)
    if (!(at[i] = numbers(progs[i], &cnt[i], i ? NULL : &owner))) s = TP_ERR_OUT_OF_MEMORY;
  for (int i = 1; i < n && !s; i++)
    if (cnt[i] != cnt[0]) s = tp_fail(TP_ERR_INTERNAL, "template fit: the programs' numbers do not line up");
  if (!s && !(t = tp_alloc(sizeof *t))) s = TP_ERR_OUT_OF_MEMORY;
  if (!s) {
    memset(t, 0, sizeof *t);
    size_t m = sizeof(int64_t) * (size_t)(cnt[0] ? cnt[0] : 1);
    t->nslots = cnt[0];
    t->s0 = s0, t->h = h;
    t->v0 = tp_alloc(m), t->d1 = tp_alloc(m), t->d2 = tp_alloc(m);
    t->owner = owner, owner = NULL;
    int nk = progs[0]->nkernels * TP_KIR_MAX_PHASES;
    size_t r = sizeof(int64_t) * (size_t)(nk ? nk : 1);
    t->row_at = tp_alloc(sizeof(int) * (size_t)(nk ? nk : 1));
    t->r0 = tp_alloc(r), t->r1 = tp_alloc(r), t->r2 = tp_alloc(r);
    if (!t->v0 || !t->d1 || !t->d2 || !t->row_at || !t->r0 || !t->r1 || !t->r2) s = TP_ERR_OUT_OF_MEMORY;
  }
  int fits = 1;
  for (int j = 0; !s && fits && j < t->nslots; j++) {
    int64_t v[4], d1, d2, d3;
    for (int i = 0; i < n; i++) v[i] = *at[i][j];
    if (!diffs(v, n, &d1, &d2, &d3) || d3) {
      int o = t->owner[j];
      snprintf(why, nwhy, "a number of %s%s%s is not a polynomial of degree <= 2 in the dim (%lld, %lld, %lld%s)",
               o >= 0 ? "kernel " : o == INT32_MIN ? "a lowered node" : "a buffer",
               o >= 0 ? progs[0]->kernels[o].name : "", "", (long long)v[0], (long long)v[1], (long long)v[2],
               n > 3 ? ", ..." : "");
      fits = 0;
      break;
    }
    if (d2 && n == 3) {
      *need_more = 1;
      fits = 0;
      break;
    }
    t->v0[j] = v[0], t->d1[j] = d1, t->d2[j] = d2;
    t->nsyms_dynamic += d1 || d2;
    t->quadratic |= d2 != 0;
  }
  /* row scales: equal, or 1/R with R a polynomial like the rest */
  for (int k = 0; !s && fits && k < progs[0]->nkernels; k++)
    for (int q = 0; fits && q < progs[0]->kernels[k].nphases; q++) {
      float sc[4];
      int64_t R[4], d1, d2, d3;
      int same = 1;
      for (int i = 0; i < n; i++) sc[i] = progs[i]->kernels[k].phases[q].scale, same &= sc[i] == sc[0];
      if (same) continue;
      for (int i = 0; i < n; i++) R[i] = recip_len(sc[i]);
      if (!R[0] || !R[1] || !R[2] || (n > 3 && !R[3]) || !diffs(R, n, &d1, &d2, &d3) || d3) {
        snprintf(why, nwhy, "kernel %s: a row scale depends on the dim and is not 1/length", progs[0]->kernels[k].name);
        fits = 0;
      } else if (d2 && n == 3) {
        *need_more = 1;
        fits = 0;
      } else {
        t->row_at[t->nrow] = k * TP_KIR_MAX_PHASES + q;
        t->r0[t->nrow] = R[0], t->r1[t->nrow] = d1, t->r2[t->nrow] = d2;
        t->nrow++;
      }
    }
  for (int i = 0; i < 4; i++) tp_free(at[i]);
  tp_free(owner);
  if (s || !fits) {
    tp_kir_template_free(t);
    return s;
  }
  t->base = progs[0];
  *out = t;
  return TP_OK;
}

/* v0 + (2h d1 (s - s0) + d2 (s - s0)(s - s0 - h)) / (2h^2), whole; 0 when
 * it is not whole (or overflows). */
static int eval_at(const tp_kir_template *t, int64_t v0, int64_t d1, int64_t d2, int64_t s, int64_t *out) {
  if (!d1 && !d2) {
    *out = v0;
    return 1;
  }
  int64_t x = s - t->s0, h = t->h, a, b, c, num, den = 2 * h * h;
  if (__builtin_mul_overflow(2 * h, d1, &a) || __builtin_mul_overflow(a, x, &a)) return 0;
  if (__builtin_mul_overflow(d2, x, &b) || __builtin_mul_overflow(b, x - h, &b)) return 0;
  if (__builtin_add_overflow(a, b, &num) || num % den) return 0;
  c = num / den;
  return !__builtin_add_overflow(v0, c, out);
}

/* The check that keeps a fitted number honest away from the samples:
 * every node of the instantiated lowered graph has the shape its op's
 * shape rule gives for its operands there. A number that is a polynomial
 * on the samples but not everywhere (a slice's end clamped to a size
 * smaller than the samples) disagrees; that size is then refused. */
static int shapes_agree(const tp_graph *g, int64_t s, char *why, size_t nwhy) {
  for (int i = 0; i < g->n; i++) {
    const tp_node *n = &g->nodes[i];
    if (n->kind != TP_NODE_CALL || (tp_op_flags(n->op) & TP_OPF_OPAQUE)) continue;
    tp_desc descs[TP_MAX_OPERANDS], od;
    const tp_desc *dp[TP_MAX_OPERANDS];
    for (int k = 0; k < n->nargs && k < TP_MAX_OPERANDS; k++) {
      dp[k] = NULL;
      if (n->args[k].kind == TP_ARG_NODE) dp[k] = &g->nodes[n->args[k].node].desc;
      else if (n->args[k].kind == TP_ARG_SCALAR) {
        memset(&descs[k], 0, sizeof descs[k]);
        descs[k].dtype = n->args[k].is_int ? TP_I64 : TP_F32;
        descs[k].weak = n->args[k].is_int ? 1 : 2;
        dp[k] = &descs[k];
      }
    }
    if (tp_op_infer(n->op, n->nargs, dp, &n->attrs, &od)) {
      snprintf(why, nwhy, "at %lld node %%%s (%s) refuses its operands' shapes: %s", (long long)s, n->name,
               tp_op_name(n->op), tp_last_error());
      tp_clear_error();
      return 0;
    }
    if (od.ndim != n->desc.ndim || memcmp(od.shape, n->desc.shape, sizeof(int64_t) * (size_t)od.ndim)) {
      char a[64], b[64];
      tp_shape_str(od.ndim, od.shape, a, sizeof a);
      tp_shape_str(n->desc.ndim, n->desc.shape, b, sizeof b);
      snprintf(why, nwhy, "at %lld node %%%s (%s) is %s by its shape rule and %s by the template (a bound that "
               "clamps at this size)", (long long)s, n->name, tp_op_name(n->op), a, b);
      return 0;
    }
  }
  return 1;
}

tp_status tp_kir_template_instantiate(const tp_kir_template *t, int64_t s, tp_kir_program **out, char *why,
                                      size_t nwhy) {
  *out = NULL;
  if (why && nwhy) why[0] = 0;
  if (s < 2) {
    snprintf(why, nwhy, "the dim is %lld: sizes 0 and 1 are specialized (a size 1 broadcasts)", (long long)s);
    return TP_OK;
  }
  const tp_kir_program *b = t->base;
  tp_kir_program *q = tp_alloc(sizeof *q);
  if (!q) return TP_ERR_OUT_OF_MEMORY;
  *q = *b;
  q->bufs = NULL, q->kernels = NULL, q->node_kernel = NULL, q->graph = NULL;
  q->graph_shallow = 1;
  q->capbufs = q->nbufs, q->capkernels = q->nkernels;
  size_t nb = sizeof(tp_kir_buf) * (size_t)(b->nbufs ? b->nbufs : 1);
  size_t nk = sizeof(tp_kir_kernel) * (size_t)(b->nkernels ? b->nkernels : 1);
  size_t nn = sizeof(int) * (size_t)(b->graph->n ? b->graph->n : 1);
  q->bufs = tp_alloc(nb), q->kernels = tp_alloc(nk), q->node_kernel = tp_alloc(nn), q->graph = tp_alloc(sizeof(tp_graph));
  if (q->graph) {
    *q->graph = *b->graph;
    q->graph->cap = b->graph->n;
    q->graph->name_ix = NULL, q->graph->name_cap = q->graph->name_used = 0; /* tp_graph_find scans it */
    q->graph->nodes = tp_alloc(sizeof(tp_node) * (size_t)(b->graph->n ? b->graph->n : 1));
  }
  if (!q->bufs || !q->kernels || !q->node_kernel || !q->graph || !q->graph->nodes) {
    q->nbufs = 0; /* nothing retained yet */
    tp_kir_program_free(q);
    return TP_ERR_OUT_OF_MEMORY;
  }
  memcpy(q->bufs, b->bufs, nb);
  for (int i = 0; i < q->nbufs; i++)
    if (q->bufs[i].value) tp_tensor_retain(q->bufs[i].value);
  memcpy(q->kernels, b->kernels, nk);
  memcpy(q->node_kernel, b->node_kernel, nn);
  memcpy(q->graph->nodes, b->graph->nodes, sizeof(tp_node) * (size_t)b->graph->n);
  int cnt = 0, *owner = NULL;
  int64_t **at = numbers(q, &cnt, &owner);
  if (!at || cnt != t->nslots) {
    tp_free(at), tp_free(owner);
    tp_kir_program_free(q);
    return at ? tp_fail(TP_ERR_INTERNAL, "template: the numbers do not line up") : TP_ERR_OUT_OF_MEMORY;
  }
  int ok = 1;
  for (int j = 0; j < cnt && ok; j++)
    if (!eval_at(t, t->v0[j], t->d1[j], t->d2[j], s, at[j])) {
      int o = owner[j];
      snprintf(why, nwhy, "at %lld a number of %s%s is not whole (v(s) = %lld + (%lld (s - %lld) / %lld%s)): "
               "the plan serves the sizes where every extent is whole",
               (long long)s, o >= 0 ? "kernel " : o == INT32_MIN ? "a lowered node" : "a buffer",
               o >= 0 ? b->kernels[o].name : "", (long long)t->v0[j], (long long)t->d1[j], (long long)t->s0,
               (long long)t->h, t->d2[j] ? " + a quadratic term" : "");
      ok = 0;
    }
  for (int r = 0; r < t->nrow && ok; r++) {
    int64_t R;
    if (!eval_at(t, t->r0[r], t->r1[r], t->r2[r], s, &R) || R < 1) {
      snprintf(why, nwhy, "at %lld a row length (1/R of a mean) is not whole", (long long)s);
      ok = 0;
    } else {
      q->kernels[t->row_at[r] / TP_KIR_MAX_PHASES].phases[t->row_at[r] % TP_KIR_MAX_PHASES].scale = 1.0f / (float)R;
    }
  }
  for (int k = 0; k < q->nkernels && ok; k++) /* no negative extent */
    for (int d = 0; d < q->kernels[k].nd; d++)
      if (q->kernels[k].shape[d] < 0) {
        snprintf(why, nwhy, "at %lld kernel %s would have a negative extent", (long long)s, q->kernels[k].name);
        ok = 0;
        break;
      }
  tp_free(at), tp_free(owner);
  if (ok) ok = shapes_agree(q->graph, s, why, nwhy);
  tp_status st = ok ? tp_memplan(q) : TP_OK;
  if (st || !ok) {
    tp_kir_program_free(q);
    return st;
  }
  *out = q;
  return TP_OK;
}
