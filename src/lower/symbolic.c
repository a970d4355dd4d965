/* symbolic.c - dynamic extents: one Kernel IR program for every value of
 * the dynamic dims (docs/kernel-ir.md, "Dynamic extents").
 *
 * A template is fitted from programs the scheduler made for the same graph
 * at sample values of k <= 4 symbols (tp_kir_template_design: one symbol
 * s0, s0 + h, s0 + 2h, and s0 + 3h when a value is quadratic, e.g.
 * attention's [S, S] scores; more: per symbol b + h e_i and b + 2h e_i,
 * per pair b + h (e_i + e_j), and a check point). The programs must be
 * the same program but for their numbers: kernels, kinds, expressions,
 * buffers, constants and the lowered graph's operators alike. Each number
 * (an extent, a stride, an offset, a GEMM's M / N / K, a buffer's or a
 * node's shape, an op's int attribute, a row's length behind mean's 1/R)
 * is then a polynomial of degree <= 2 in each symbol with bilinear terms
 * (an image's H*W), exact on the samples, kept in Newton form (x = s - b):
 *
 *   v(s) = v0 + (sum_i 2h d1_i x_i + d2_i x_i (x_i - h) + sum_{i<j} 2 c_ij x_i x_j) / (2h^2)
 *
 * (one symbol: v0 + (2h d1 x + d2 x (x - h)) / (2h^2)), and must agree at
 * the check point. Instantiating the template at values of the symbols
 * evaluates every number (all must be whole: a stride-2 conv's W/2 at an
 * odd W is not, and that value is refused with the reason) and re-runs the
 * memory plan: microseconds, no passes, no scheduling. The 0/1 rule per
 * symbol: s >= 2 (a size 1 broadcasts, a size 0 is empty: both change the
 * program). */
#include "lower.h"
#include "../ops/ops.h"
#include <stdio.h>

struct tp_kir_template {
  tp_kir_program *base;  /* the program at the first design point (owned) */
  int k;                 /* symbols */
  int64_t b[TP_KIR_MAX_SYMS], h; /* the first design point, the step */
  int nc;                /* coefficients per number: 1 + 2k + k(k-1)/2 */
  int nslots;
  int64_t *c;            /* per slot nc: v0, d1[k], d2[k], cross[k(k-1)/2] (Newton form) */
  int *owner;            /* per slot: what it belongs to, for reasons (kernel k: k; buffer b: -1 - b) */
  int nrow;              /* row scales that are 1/R: R fitted like a slot */
  int *row_at;           /* kernel * TP_KIR_MAX_PHASES + phase */
  int64_t *rc;           /* per row nc coefficients */
  int nsyms_dynamic;     /* slots that depend on a symbol */
  int quadratic, bilinear;
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

/* memcmp(a, b, n) == 0 by 8-byte words: wasi-libc's memcmp goes byte by
 * byte, and the samples of an imported model compare every weight (the
 * PP-OCRv4 detector's 7 samples: 28 MB) */
static int same_bytes(const void *a, const void *b, size_t n) {
  const unsigned char *p = a, *q = b;
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    uint64_t x[4], y[4];
    memcpy(x, p + i, 32), memcpy(y, q + i, 32);
    if ((x[0] ^ y[0]) | (x[1] ^ y[1]) | (x[2] ^ y[2]) | (x[3] ^ y[3])) return 0;
  }
  return !memcmp(p + i, q + i, n - i);
}

static int same_const(const tp_tensor *a, const tp_tensor *b) {
  if (!a || !b) return a == b;
  if (a == b) return 1;
  if (tp_tensor_dtype(a) != tp_tensor_dtype(b) || tp_tensor_numel(a) != tp_tensor_numel(b)) return 0;
  tp_tensor *ca = NULL, *cb = NULL;
  int same = 0;
  if (!tp_contiguous((tp_tensor *)a, &ca) && !tp_contiguous((tp_tensor *)b, &cb))
    same = tp_tensor_ptr(ca) == tp_tensor_ptr(cb) ||
           same_bytes(tp_tensor_ptr(ca), tp_tensor_ptr(cb), (size_t)tp_tensor_numel(a) * tp_dtype_size(tp_tensor_dtype(a)));
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
  tp_free(t->c), tp_free(t->owner), tp_free(t->row_at), tp_free(t->rc);
  tp_free(t);
}

int tp_kir_template_dynamic(const tp_kir_template *t) { return t ? t->nsyms_dynamic : 0; }
int tp_kir_template_quadratic(const tp_kir_template *t) { return t ? t->quadratic : 0; }
int tp_kir_template_bilinear(const tp_kir_template *t) { return t ? t->bilinear : 0; }
int tp_kir_template_symbols(const tp_kir_template *t) { return t ? t->k : 0; }

static int npairs(int k) { return k * (k - 1) / 2; }

int tp_kir_template_design(int k, const int64_t *base, int64_t h, int64_t (*pts)[TP_KIR_MAX_SYMS]) {
  if (k < 1 || k > TP_KIR_MAX_SYMS) return 0;
  int n = 0;
  for (int m = 0; m < 3; m++) /* b, b + h e_i, b + 2h e_i */
    for (int i = 0; i < (m ? k : 1); i++, n++)
      for (int q = 0; q < k; q++) pts[n][q] = base[q] + (q == i ? m * h : 0);
  if (k == 1) { /* b + 3h: asked for only when a number is quadratic */
    pts[n++][0] = base[0] + 3 * h;
    return n;
  }
  for (int i = 0; i < k; i++) /* b + h e_i + h e_j */
    for (int j = i + 1; j < k; j++, n++)
      for (int q = 0; q < k; q++) pts[n][q] = base[q] + (q == i || q == j ? h : 0);
  for (int q = 0; q < k; q++) pts[n][q] = base[q] + 2 * h; /* the check point */
  return n + 1;
}

/* The Newton coefficients of one number from its values on the design
 * (v0, d1[k], d2[k], cross[k(k-1)/2]); 0 on overflow. */
static int coeffs(const int64_t *v, int k, int64_t *c) {
  c[0] = v[0];
  for (int i = 0; i < k; i++) {
    int64_t a, b, d;
    if (__builtin_sub_overflow(v[1 + i], v[0], &a) || __builtin_sub_overflow(v[1 + k + i], v[1 + i], &b) ||
        __builtin_sub_overflow(b, a, &d))
      return 0;
    c[1 + i] = a, c[1 + k + i] = d;
  }
  for (int i = 0, p = 0; i < k; i++)
    for (int j = i + 1; j < k; j++, p++) {
      int64_t x;
      if (__builtin_sub_overflow(v[1 + 2 * k + p], v[1 + i], &x) || __builtin_sub_overflow(x, c[1 + j], &x))
        return 0;
      c[1 + 2 * k + p] = x; /* v(b + h e_i + h e_j) - v(b + h e_i) - v(b + h e_j) + v0 */
    }
  return 1;
}

/* v0 + (sum_i 2h d1_i x_i + d2_i x_i (x_i - h) + sum_{i<j} 2 c_ij x_i x_j) / (2h^2),
 * x = s - b: whole, or 0 (not whole, or an overflow). With one symbol
 * that is v0 + (2h d1 x + d2 x (x - h)) / (2h^2). */
static int eval_c(int k, const int64_t *b, int64_t h, const int64_t *c, const int64_t *s, int64_t *out) {
  int nz = 0;
  for (int m = 1; m < 1 + 2 * k + npairs(k); m++) nz |= c[m] != 0;
  if (!nz) {
    *out = c[0];
    return 1;
  }
  int64_t num = 0, den = 2 * h * h, x[TP_KIR_MAX_SYMS];
  for (int i = 0; i < k; i++) {
    int64_t a, q;
    x[i] = s[i] - b[i];
    if (__builtin_mul_overflow(2 * h, c[1 + i], &a) || __builtin_mul_overflow(a, x[i], &a) ||
        __builtin_mul_overflow(c[1 + k + i], x[i], &q) || __builtin_mul_overflow(q, x[i] - h, &q) ||
        __builtin_add_overflow(num, a, &num) || __builtin_add_overflow(num, q, &num))
      return 0;
  }
  for (int i = 0, p = 0; i < k; i++)
    for (int j = i + 1; j < k; j++, p++) {
      int64_t q;
      if (__builtin_mul_overflow(2 * c[1 + 2 * k + p], x[i], &q) || __builtin_mul_overflow(q, x[j], &q) ||
          __builtin_add_overflow(num, q, &num))
        return 0;
    }
  if (num % den) return 0;
  return !__builtin_add_overflow(c[0], num / den, out);
}

/* Fits one number (or a row length) from its values on the design: 1 (its
 * coefficients in c), 0 when it is not of the form, -1 when one symbol's
 * quadratic asks for the fourth sample. One symbol: the third difference
 * of b .. b + 3h is 0; more: the value at the check point b + 2h (1..1)
 * is the fitted one. */
static int fit_one(const int64_t *v, int n, int k, const int64_t *b, int64_t h, int64_t *c) {
  if (!coeffs(v, k, c)) return 0;
  if (k == 1) {
    int64_t s3 = b[0] + 3 * h, got;
    if (!c[2]) return n < 4 || (eval_c(1, b, h, c, &s3, &got) && got == v[3]);
    if (n < 4) return -1;
    return eval_c(1, b, h, c, &s3, &got) && got == v[3];
  }
  int64_t pt[TP_KIR_MAX_SYMS], got;
  for (int i = 0; i < k; i++) pt[i] = b[i] + 2 * h;
  return eval_c(k, b, h, c, pt, &got) && got == v[n - 1];
}

tp_status tp_kir_template_fit(tp_kir_program *const *progs, int n, int k, const int64_t *base, int64_t h,
                              int *need_more, tp_kir_template **out, char *why, size_t nwhy) {
  *out = NULL;
  *need_more = 0;
  if (why && nwhy) why[0] = 0;
  int64_t pts[TP_KIR_MAX_DESIGN][TP_KIR_MAX_SYMS];
  int nd = k >= 1 && k <= TP_KIR_MAX_SYMS ? tp_kir_template_design(k, base, h, pts) : 0;
  int okb = nd > 0 && h >= 1;
  for (int i = 0; okb && i < k; i++) okb = base[i] >= 2;
  if (!okb || (k == 1 ? n < 3 || n > 4 : n != nd))
    return tp_fail(TP_ERR_INVALID_ARG, "template fit: %d samples of %d symbols by %lld (the design's points from >= 2)",
                   n, k, (long long)h);
  for (int i = 0; progs[0]->graph && i < progs[0]->graph->n; i++) /* subgraphs: plans of their own */
    if (progs[0]->graph->nodes[i].kind == TP_NODE_GET_ATTR && progs[0]->graph->nodes[i].desc.ndim == TP_DESC_GRAPH) {
      snprintf(why, nwhy, "the graph calls subgraph %%%s (control flow or a nested region): not fitted, "
               "each size is a specialization", progs[0]->graph->nodes[i].name);
      return TP_OK;
    }
  for (int i = 1; i < n; i++)
    if (!same_structure(progs[0], progs[i], why, nwhy)) return TP_OK;
  int64_t **at[TP_KIR_MAX_DESIGN] = {0};
  int cnt[TP_KIR_MAX_DESIGN] = {0}, *owner = NULL;
  tp_kir_template *t = NULL;
  tp_status s = TP_OK;
  for (int i = 0; i < n && !s; i++)
    if (!(at[i] = numbers(progs[i], &cnt[i], i ? NULL : &owner))) s = TP_ERR_OUT_OF_MEMORY;
  for (int i = 1; i < n && !s; i++)
    if (cnt[i] != cnt[0]) s = tp_fail(TP_ERR_INTERNAL, "template fit: the programs' numbers do not line up");
  if (!s && !(t = tp_alloc(sizeof *t))) s = TP_ERR_OUT_OF_MEMORY;
  if (!s) {
    memset(t, 0, sizeof *t);
    t->k = k, t->h = h, t->nc = 1 + 2 * k + npairs(k);
    for (int i = 0; i < k; i++) t->b[i] = base[i];
    t->nslots = cnt[0];
    t->c = tp_alloc(sizeof(int64_t) * (size_t)t->nc * (size_t)(cnt[0] ? cnt[0] : 1));
    t->owner = owner, owner = NULL;
    int nk = progs[0]->nkernels * TP_KIR_MAX_PHASES;
    t->row_at = tp_alloc(sizeof(int) * (size_t)(nk ? nk : 1));
    t->rc = tp_alloc(sizeof(int64_t) * (size_t)t->nc * (size_t)(nk ? nk : 1));
    if (!t->c || !t->row_at || !t->rc) s = TP_ERR_OUT_OF_MEMORY;
  }
  int fits = 1;
  for (int j = 0; !s && fits && j < t->nslots; j++) {
    int64_t v[TP_KIR_MAX_DESIGN], *c = &t->c[(size_t)j * (size_t)t->nc];
    for (int i = 0; i < n; i++) v[i] = *at[i][j];
    int r = fit_one(v, n, k, base, h, c);
    if (r == 0) {
      int o = t->owner[j];
      snprintf(why, nwhy, "a number of %s%s is not a polynomial of degree <= 2 in %s (%lld, %lld, %lld, ...)",
               o >= 0 ? "kernel " : o == INT32_MIN ? "a lowered node" : "a buffer",
               o >= 0 ? progs[0]->kernels[o].name : "",
               k == 1 ? "the dim" : "each symbol with bilinear terms", (long long)v[0], (long long)v[1],
               (long long)v[2]);
      fits = 0;
      break;
    }
    if (r < 0) {
      *need_more = 1;
      fits = 0;
      break;
    }
    int dyn = 0;
    for (int m = 1; m < t->nc; m++) dyn |= c[m] != 0;
    for (int i = 0; i < k; i++) t->quadratic |= c[1 + k + i] != 0;
    for (int m = 1 + 2 * k; m < t->nc; m++) t->bilinear |= c[m] != 0;
    t->nsyms_dynamic += dyn;
  }
  /* row scales: equal, or 1/R with R a polynomial like the rest */
  for (int kk = 0; !s && fits && kk < progs[0]->nkernels; kk++)
    for (int q = 0; fits && q < progs[0]->kernels[kk].nphases; q++) {
      float sc[TP_KIR_MAX_DESIGN];
      int64_t R[TP_KIR_MAX_DESIGN];
      int same = 1, whole = 1;
      for (int i = 0; i < n; i++) sc[i] = progs[i]->kernels[kk].phases[q].scale, same &= sc[i] == sc[0];
      if (same) continue;
      for (int i = 0; i < n; i++) R[i] = recip_len(sc[i]), whole &= R[i] != 0;
      int r = whole ? fit_one(R, n, k, base, h, &t->rc[(size_t)t->nrow * (size_t)t->nc]) : 0;
      if (r == 0) {
        snprintf(why, nwhy, "kernel %s: a row scale depends on the dim and is not 1/length", progs[0]->kernels[kk].name);
        fits = 0;
      } else if (r < 0) {
        *need_more = 1;
        fits = 0;
      } else {
        t->row_at[t->nrow++] = kk * TP_KIR_MAX_PHASES + q;
      }
    }
  for (int i = 0; i < n; i++) tp_free(at[i]);
  tp_free(owner);
  if (s || !fits) {
    tp_kir_template_free(t);
    return s;
  }
  t->base = progs[0];
  *out = t;
  return TP_OK;
}

/* "212" (one symbol) or "s0=212, s1=320" */
static void point_str(int k, const int64_t *s, char *out, size_t n) {
  size_t q = 0;
  out[0] = 0;
  for (int i = 0; i < k && q < n; i++)
    q += (size_t)(k == 1 ? snprintf(out + q, n - q, "%lld", (long long)s[i])
                         : snprintf(out + q, n - q, "%ss%d=%lld", i ? ", " : "", i, (long long)s[i]));
}

/* The check that keeps a fitted number honest away from the samples:
 * every node of the instantiated lowered graph has the shape its op's
 * shape rule gives for its operands there. A number that is a polynomial
 * on the samples but not everywhere (a slice's end clamped to a size
 * smaller than the samples) disagrees; that size is then refused. */
static int shapes_agree(const tp_graph *g, const char *s, char *why, size_t nwhy) {
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
      snprintf(why, nwhy, "at %s node %%%s (%s) refuses its operands' shapes: %s", s, n->name,
               tp_op_name(n->op), tp_last_error());
      tp_clear_error();
      return 0;
    }
    if (od.ndim != n->desc.ndim || memcmp(od.shape, n->desc.shape, sizeof(int64_t) * (size_t)od.ndim)) {
      char a[64], b[64];
      tp_shape_str(od.ndim, od.shape, a, sizeof a);
      tp_shape_str(n->desc.ndim, n->desc.shape, b, sizeof b);
      snprintf(why, nwhy, "at %s node %%%s (%s) is %s by its shape rule and %s by the template (a bound that "
               "clamps at this size)", s, n->name, tp_op_name(n->op), a, b);
      return 0;
    }
  }
  return 1;
}

tp_status tp_kir_template_instantiate(const tp_kir_template *t, const int64_t *s, tp_kir_program **out, char *why,
                                      size_t nwhy) {
  *out = NULL;
  if (why && nwhy) why[0] = 0;
  for (int i = 0; i < t->k; i++)
    if (s[i] < 2) {
      if (t->k == 1) snprintf(why, nwhy, "the dim is %lld: sizes 0 and 1 are specialized (a size 1 broadcasts)", (long long)s[0]);
      else snprintf(why, nwhy, "symbol s%d is %lld: sizes 0 and 1 are specialized (a size 1 broadcasts)", i, (long long)s[i]);
      return TP_OK;
    }
  char ps[96];
  point_str(t->k, s, ps, sizeof ps);
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
    if (!eval_c(t->k, t->b, t->h, &t->c[(size_t)j * (size_t)t->nc], s, at[j])) {
      int o = owner[j];
      const int64_t *c = &t->c[(size_t)j * (size_t)t->nc];
      int sym = 0, quad = 0; /* the symbol whose step the number follows, for the reason */
      for (int i = 0; i < t->k; i++) {
        if (c[1 + i] && !c[1 + sym]) sym = i;
        quad |= c[1 + t->k + i] != 0;
      }
      for (int m = 1 + 2 * t->k; m < t->nc; m++) quad |= c[m] != 0;
      snprintf(why, nwhy, "at %s a number of %s%s is not whole (v = %lld + %lld (s%d - %lld) / %lld%s): "
               "the plan serves the sizes where every extent is whole",
               ps, o >= 0 ? "kernel " : o == INT32_MIN ? "a lowered node" : "a buffer",
               o >= 0 ? b->kernels[o].name : "", (long long)c[0], (long long)c[1 + sym], sym, (long long)t->b[sym],
               (long long)t->h, quad ? " + quadratic terms" : "");
      ok = 0;
    }
  for (int r = 0; r < t->nrow && ok; r++) {
    int64_t R;
    if (!eval_c(t->k, t->b, t->h, &t->rc[(size_t)r * (size_t)t->nc], s, &R) || R < 1) {
      snprintf(why, nwhy, "at %s a row length (1/R of a mean) is not whole", ps);
      ok = 0;
    } else {
      q->kernels[t->row_at[r] / TP_KIR_MAX_PHASES].phases[t->row_at[r] % TP_KIR_MAX_PHASES].scale = 1.0f / (float)R;
    }
  }
  for (int k = 0; k < q->nkernels && ok; k++) /* no negative extent */
    for (int d = 0; d < q->kernels[k].nd; d++)
      if (q->kernels[k].shape[d] < 0) {
        snprintf(why, nwhy, "at %s kernel %s would have a negative extent", ps, q->kernels[k].name);
        ok = 0;
        break;
      }
  tp_free(at), tp_free(owner);
  if (ok) ok = shapes_agree(q->graph, ps, why, nwhy);
  tp_status st = ok ? tp_memplan(q) : TP_OK;
  if (st || !ok) {
    tp_kir_program_free(q);
    return st;
  }
  *out = q;
  return TP_OK;
}
