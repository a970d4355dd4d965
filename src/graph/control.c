/* control.c - control flow in the Graph IR: the cond and while_loop nodes
 * (ops.def), their structural rules and their eager run.
 *
 *   %r = cond(%pred, %then, %else, %a, %b, results=1) : f32[4]
 *   %y = getitem(%r, index=0) : f32[4]
 *
 * cond: the predicate is a one-element bool or integer tensor (nonzero:
 * then); %then and %else are get_attr references to child graphs (g->subs)
 * that both take the operands (%a, %b: outer-scope values are passed this
 * way) and return `results` values of one signature. Only the chosen branch
 * runs.
 *
 *   %r = while_loop(%cond, %body, %i0, %x0, %w, results=2) : i64[]
 *
 * while_loop: the first `results` operands after the two subgraphs are the
 * carried values, the rest are captured (read by every step, never
 * changed). %cond takes (carried, captured) and returns one one-element
 * bool/int; %body takes the same and returns the next carried values, of
 * the carried values' types. The results are the carried values after the
 * last step (the initial ones when cond is false at once). Scan outputs
 * (ONNX Loop's): the body may return more values than it carries; each
 * extra one is a per-step slice, and the node has one more result per
 * such value, the slices stacked along a new axis 0 ([steps, slice...];
 * [0, slice...] after no step). tp_node_nresults counts them all. */
#include "graph.h"
#include "../core/internal.h"
#include <stdlib.h>

static const tp_graph *sub_of(const tp_graph *g, const tp_node *n, int k) {
  if (k >= n->nargs || n->args[k].kind != TP_ARG_NODE) return NULL;
  const tp_node *sg = &g->nodes[n->args[k].node];
  if (sg->kind != TP_NODE_GET_ATTR || sg->desc.ndim != TP_DESC_GRAPH) return NULL;
  return tp_graph_find_subgraph(g, sg->target ? sg->target : sg->name);
}

const tp_graph *tp_node_subgraph(const tp_graph *g, const tp_node *n, int k) { return sub_of(g, n, k); }

/* desc of output k of sub (NULL when there is none) */
static const tp_desc *out_desc(const tp_graph *sub, int k) {
  int o = tp_graph_output(sub);
  if (o < 0 || k >= sub->nodes[o].nargs || sub->nodes[o].args[k].kind != TP_ARG_NODE) return NULL;
  return &sub->nodes[sub->nodes[o].args[k].node].desc;
}

static const tp_desc *in_desc(const tp_graph *sub, int k) {
  for (int i = 0; i < sub->n; i++)
    if (sub->nodes[i].kind == TP_NODE_PLACEHOLDER && k-- == 0) return &sub->nodes[i].desc;
  return NULL;
}

static int same_type(const tp_desc *a, const tp_desc *b) {
  tp_desc x = *a, y = *b;
  x.weak = y.weak = 0;
  return tp_desc_equal(&x, &y);
}

static int is_flag(const tp_desc *d) {
  return d->ndim >= 0 && tp_shape_numel(d->ndim, d->shape) == 1 && !tp_dtype_is_float(d->dtype);
}

/* The operands of n from index first on must be the placeholders of sub. */
static tp_status check_inputs(const tp_graph *g, const tp_node *n, const char *what, const tp_graph *sub,
                              int first) {
  int nops = n->nargs - first;
  if (tp_graph_num_inputs(sub) != nops)
    return tp_fail(TP_ERR_INVALID_ARG, "graph: %s %%%s: its %s subgraph takes %d inputs, the node passes %d",
                   tp_op_name(n->op), n->name, what, tp_graph_num_inputs(sub), nops);
  for (int k = 0; k < nops; k++) {
    const tp_arg *a = &n->args[first + k];
    if (a->kind != TP_ARG_NODE)
      return tp_fail(TP_ERR_INVALID_ARG, "graph: %s %%%s: operand %d must be a node", tp_op_name(n->op),
                     n->name, first + k);
    const tp_desc *od = &g->nodes[a->node].desc, *pd = in_desc(sub, k);
    if (!same_type(od, pd)) {
      char b0[96], b1[96];
      return tp_fail(TP_ERR_INVALID_ARG, "graph: %s %%%s: operand %%%s is %s%s but its %s subgraph's input %d is %s%s",
                     tp_op_name(n->op), n->name, g->nodes[a->node].name, tp_dtype_short(od->dtype),
                     tp_shape_str(od->ndim, od->shape, b0, sizeof b0), what, k, tp_dtype_short(pd->dtype),
                     tp_shape_str(pd->ndim, pd->shape, b1, sizeof b1));
    }
  }
  return TP_OK;
}

static tp_status mismatch(const tp_node *n, const char *a, const char *b, int k, const tp_desc *x,
                          const tp_desc *y) {
  char b0[96], b1[96];
  return tp_fail(TP_ERR_INVALID_ARG, "graph: %s %%%s: result %d is %s%s in the %s subgraph but %s%s in the %s",
                 tp_op_name(n->op), n->name, k, tp_dtype_short(x->dtype), tp_shape_str(x->ndim, x->shape, b0, sizeof b0),
                 a, tp_dtype_short(y->dtype), tp_shape_str(y->ndim, y->shape, b1, sizeof b1), b);
}

tp_status tp_graph_verify_control(const tp_graph *g, const tp_node *n) {
  int nres = (int)n->attrs.nresults;
  if (nres < 1 || nres > TP_MAX_OPERANDS)
    return tp_fail(TP_ERR_INVALID_ARG, "graph: %s %%%s has %d results (1..%d)", tp_op_name(n->op), n->name, nres,
                   TP_MAX_OPERANDS);
  if (n->op == TP_OP_COND) {
    if (n->nargs < 3 || n->args[0].kind != TP_ARG_NODE)
      return tp_fail(TP_ERR_INVALID_ARG, "graph: cond %%%s takes a predicate node, two subgraphs and operands",
                     n->name);
    const tp_desc *pd = &g->nodes[n->args[0].node].desc;
    if (!is_flag(pd)) {
      char b0[96];
      return tp_fail(TP_ERR_INVALID_ARG,
                     "graph: cond %%%s: the predicate %%%s is %s%s; it must be one bool or integer value",
                     n->name, g->nodes[n->args[0].node].name, tp_dtype_short(pd->dtype),
                     tp_shape_str(pd->ndim, pd->shape, b0, sizeof b0));
    }
    const tp_graph *t = sub_of(g, n, 1), *e = sub_of(g, n, 2);
    if (!t || !e) return tp_fail(TP_ERR_INVALID_ARG, "graph: cond %%%s: operands 1 and 2 must name subgraphs", n->name);
    TP_TRY(check_inputs(g, n, "then", t, 3));
    TP_TRY(check_inputs(g, n, "else", e, 3));
    if (tp_graph_num_outputs(t) != nres || tp_graph_num_outputs(e) != nres)
      return tp_fail(TP_ERR_INVALID_ARG, "graph: cond %%%s has %d results; the then subgraph returns %d, the else %d",
                     n->name, nres, tp_graph_num_outputs(t), tp_graph_num_outputs(e));
    for (int k = 0; k < nres; k++) {
      const tp_desc *a = out_desc(t, k), *b = out_desc(e, k);
      if (!a || !b) return tp_fail(TP_ERR_INVALID_ARG, "graph: cond %%%s: a branch output is not a node", n->name);
      if (!same_type(a, b)) return mismatch(n, "then", "else", k, a, b);
    }
    if (!same_type(out_desc(t, 0), &n->desc)) return mismatch(n, "then", "node's declaration", 0, out_desc(t, 0), &n->desc);
    return TP_OK;
  }
  if (n->op == TP_OP_WHILE_LOOP) {
    if (n->nargs < 2 + nres)
      return tp_fail(TP_ERR_INVALID_ARG, "graph: while_loop %%%s takes two subgraphs and %d carried values",
                     n->name, nres);
    const tp_graph *c = sub_of(g, n, 0), *b = sub_of(g, n, 1);
    if (!c || !b)
      return tp_fail(TP_ERR_INVALID_ARG, "graph: while_loop %%%s: operands 0 and 1 must name subgraphs", n->name);
    TP_TRY(check_inputs(g, n, "cond", c, 2));
    TP_TRY(check_inputs(g, n, "body", b, 2));
    const tp_desc *cd = out_desc(c, 0);
    if (tp_graph_num_outputs(c) != 1 || !cd || !is_flag(cd))
      return tp_fail(TP_ERR_INVALID_ARG, "graph: while_loop %%%s: its cond subgraph must return one bool or integer value",
                     n->name);
    if (tp_graph_num_outputs(b) < nres)
      return tp_fail(TP_ERR_INVALID_ARG, "graph: while_loop %%%s carries %d values; its body returns %d", n->name, nres,
                     tp_graph_num_outputs(b));
    if (tp_graph_num_outputs(b) > TP_MAX_OPERANDS)
      return tp_fail(TP_ERR_UNSUPPORTED, "graph: while_loop %%%s: its body returns %d values (at most %d)", n->name,
                     tp_graph_num_outputs(b), TP_MAX_OPERANDS);
    for (int k = nres; k < tp_graph_num_outputs(b); k++) {
      const tp_desc *o = out_desc(b, k);
      if (!o) return tp_fail(TP_ERR_INVALID_ARG, "graph: while_loop %%%s: a body output is not a node", n->name);
      if (o->ndim < 0 || o->ndim + 1 > TP_MAX_DIMS)
        return tp_fail(TP_ERR_UNSUPPORTED, "graph: while_loop %%%s: scan output %d (body output %d) is of rank %d; "
                       "stacked it needs at most %d dims", n->name, k - nres, k, o->ndim, TP_MAX_DIMS);
    }
    for (int k = 0; k < nres; k++) {
      const tp_desc *o = out_desc(b, k), *in = &g->nodes[n->args[2 + k].node].desc;
      if (!o) return tp_fail(TP_ERR_INVALID_ARG, "graph: while_loop %%%s: a body output is not a node", n->name);
      if (!same_type(o, in)) return mismatch(n, "body", "carried value (initial)", k, o, in);
    }
    if (!same_type(in_desc(b, 0), &n->desc)) return mismatch(n, "body", "node's declaration", 0, in_desc(b, 0), &n->desc);
    return TP_OK;
  }
  return TP_OK;
}

tp_status tp_control_flag(tp_tensor *t, const char *what, int *out) {
  double v = 0;
  if (!t || tp_shape_numel(t->ndim, t->shape) != 1)
    return tp_fail(TP_ERR_INVALID_ARG, "%s must be one value", what);
  TP_TRY(tp_tensor_item_plain(t, &v));
  *out = v != 0;
  return TP_OK;
}

/* A result that is one of the operands (a loop that ran no step, a branch
 * returning its input on the graph run) becomes a copy: the caller's
 * operands may be views of its own buffers (the plan's), results outlive
 * the run. */
static tp_status own_results(const tp_node *n, tp_tensor *const *args, int nres, tp_tensor **res) {
  for (int k = 0; k < nres; k++) {
    int alias = 0;
    for (int j = 0; j < n->nargs && !alias; j++) alias = res[k] && res[k] == args[j];
    if (!alias) continue;
    tp_tensor *c = NULL;
    TP_TRY(tp_tensor_empty(res[k]->dtype, res[k]->ndim, res[k]->shape, &c));
    tp_tensor_copy_into(res[k], c);
    tp_tensor_release(res[k]);
    res[k] = c;
  }
  return TP_OK;
}

int tp_node_nresults(const tp_graph *g, const tp_node *n) {
  int nres = (int)n->attrs.nresults;
  if (n->op != TP_OP_WHILE_LOOP) return nres;
  const tp_graph *b = sub_of(g, n, 1);
  int nb = b ? tp_graph_num_outputs(b) : nres;
  return nb > nres ? nb : nres;
}

/* The rows a while_loop's scan output j is declared with (the leading dim
 * of a getitem reading it: a Scan's length), or -1 when nothing says. */
static int64_t scan_rows_hint(const tp_graph *g, const tp_node *n, int result) {
  int self = (int)(n - g->nodes);
  for (int i = self + 1; i < g->n; i++) {
    const tp_node *u = &g->nodes[i];
    if (u->kind == TP_NODE_CALL && u->op == TP_OP_GETITEM && u->nargs == 1 && u->args[0].kind == TP_ARG_NODE &&
        u->args[0].node == self && u->attrs.result_index == result && u->desc.ndim >= 1)
      return u->desc.shape[0];
  }
  return -1;
}

/* A while_loop's scan output: a stack of rows, one per step, each step's
 * slice written in place (the plan writes straight into the row; the graph
 * run's result is copied there). Grows by doubling past its hint. */
typedef struct scan_stack {
  tp_tensor *t; /* [cap, slice...] */
  int64_t cap, row; /* rows allocated, elements per row */
  tp_desc d;        /* the slice */
} scan_stack;

/* The most bytes one scan output's stack may take: a loop that does not
 * end (or ends much later than meant) fails naming the node instead of
 * taking the host's memory. TP_LOOP_STACK_MAX (bytes) sets it; 1 GiB by
 * default. */
static int64_t stack_limit(void) {
  const char *e = getenv("TP_LOOP_STACK_MAX");
  char *end = NULL;
  long long v = e && *e ? strtoll(e, &end, 10) : 0;
  return e && *e && end && !*end && v > 0 ? (int64_t)v : (int64_t)1 << 30;
}

static tp_status stack_new(scan_stack *st, const tp_desc *d, int64_t cap, const tp_node *n, int j) {
  int64_t sh[TP_MAX_DIMS];
  if (d->ndim < 0 || d->ndim + 1 > TP_MAX_DIMS)
    return tp_fail(TP_ERR_UNSUPPORTED, "while_loop: a scan output of rank %d cannot be stacked (at most %d dims)",
                   d->ndim, TP_MAX_DIMS);
  int64_t row = tp_shape_numel(d->ndim, d->shape), es = (int64_t)tp_dtype_size(d->dtype), lim = stack_limit();
  if (cap > 0 && row > 0 && cap > lim / es / row && st->t && st->cap < lim / es / row)
    cap = lim / es / row; /* the last growth: up to the limit */
  if (cap > 0 && row > 0 && cap > lim / es / row)
    return tp_fail(TP_ERR_OUT_OF_MEMORY,
                   "while_loop %%%s: scan output %d would need more than %lld bytes after %lld steps (%lld bytes a "
                   "step; at most %lld: TP_LOOP_STACK_MAX); does the loop end?",
                   n->name, j, (long long)lim, (long long)(st->t ? st->cap : cap), (long long)(row * es),
                   (long long)lim);
  st->d = *d;
  st->row = row;
  sh[0] = cap;
  for (int q = 0; q < d->ndim; q++) sh[1 + q] = d->shape[q];
  tp_tensor *t = NULL;
  TP_TRY(tp_tensor_empty(d->dtype, d->ndim + 1, sh, &t));
  if (st->t) { /* grown: the rows so far move over */
    size_t es = tp_dtype_size(d->dtype);
    if (st->cap > 0 && st->row > 0) memcpy(tp_tensor_ptr(t), tp_tensor_ptr(st->t), (size_t)(st->cap * st->row) * es);
    tp_tensor_release(st->t);
  }
  st->t = t;
  st->cap = cap;
  return TP_OK;
}

/* Row i of st as a contiguous view (a new reference). */
static tp_status stack_row(scan_stack *st, int64_t i, tp_tensor **out) {
  int64_t strides[TP_MAX_DIMS], acc = 1;
  for (int q = st->d.ndim - 1; q >= 0; q--) strides[q] = acc, acc *= st->d.shape[q] ? st->d.shape[q] : 1;
  return tp_tensor_view(st->t, st->d.ndim, st->d.shape, strides, st->t->offset + i * st->row, out);
}

/* The first `steps` rows as the result (the stack itself when full). */
static tp_status stack_take(scan_stack *st, int64_t steps, tp_tensor **out) {
  if (steps == st->cap) {
    *out = st->t;
    st->t = NULL;
    return TP_OK;
  }
  int64_t sh[TP_MAX_DIMS];
  sh[0] = steps;
  for (int q = 0; q < st->d.ndim; q++) sh[1 + q] = st->d.shape[q];
  TP_TRY(tp_tensor_empty(st->d.dtype, st->d.ndim + 1, sh, out));
  if (steps > 0 && st->row > 0) memcpy(tp_tensor_ptr(*out), tp_tensor_ptr(st->t), (size_t)(steps * st->row) * tp_dtype_size(st->d.dtype));
  return TP_OK;
}

tp_status tp_control_run(const tp_graph *g, const tp_node *n, tp_control_runner run, void *ctx,
                         tp_tensor *const *args, tp_tensor **res) {
  int nres = (int)n->attrs.nresults, got = 0;
  if (n->op == TP_OP_COND) {
    int take = 0;
    TP_TRY(tp_control_flag(args[0], "cond: the predicate", &take));
    int k = take ? 1 : 2;
    TP_TRY(run(ctx, n, k, sub_of(g, n, k), n->nargs - 3, args + 3, nres, res, &got, NULL));
    if (got != nres) return tp_fail(TP_ERR_INTERNAL, "cond: the branch returned %d results, expected %d", got, nres);
    return own_results(n, args, nres, res);
  }
  /* while_loop: carried (owned) then captured (borrowed). Double buffered:
   * a step reads cur and writes next; the step after writes into the
   * buffers cur had (spare), so a loop in the plan allocates its carried
   * values twice, not once per step. The first step reads the operands,
   * which are never written. Body outputs past the carried ones are scan
   * outputs: each step's slice goes into row `steps` of its stack (the
   * plan writes it there directly), so a step costs its slice, not the
   * stack. */
  int nin = n->nargs - 2;
  const tp_graph *cg = sub_of(g, n, 0), *bg = sub_of(g, n, 1);
  int ntot = tp_node_nresults(g, n), S = ntot - nres;
  if (ntot > TP_MAX_OPERANDS)
    return tp_fail(TP_ERR_UNSUPPORTED, "while_loop: %d carried values and scan outputs (at most %d)", ntot,
                   TP_MAX_OPERANDS);
  tp_tensor *cur[TP_MAX_OPERANDS], *next[TP_MAX_OPERANDS], *spare[TP_MAX_OPERANDS] = {0}, *into[TP_MAX_OPERANDS];
  scan_stack *st = NULL;
  if (S > 0 && !(st = tp_alloc(sizeof(scan_stack) * (size_t)S))) return TP_ERR_OUT_OF_MEMORY;
  if (st) memset(st, 0, sizeof(scan_stack) * (size_t)S);
  tp_status s = TP_OK;
  for (int j = 0; j < S && !s; j++) {
    int64_t hint = scan_rows_hint(g, n, nres + j);
    s = stack_new(&st[j], out_desc(bg, nres + j), hint >= 0 ? hint : 16, n, j);
  }
  if (s) {
    for (int j = 0; j < S; j++) tp_tensor_release(st[j].t);
    tp_free(st);
    return s;
  }
  for (int k = 0; k < nin; k++) {
    cur[k] = args[2 + k];
    if (k < nres) tp_tensor_retain(cur[k]);
  }
  int first = 1;
  int64_t steps = 0;
  for (;;) {
    tp_tensor *flag = NULL;
    int go = 0;
    s = run(ctx, n, 0, cg, nin, cur, 1, &flag, &got, NULL);
    if (!s) s = tp_control_flag(flag, "while_loop: the cond result", &go);
    tp_tensor_release(flag);
    if (s || !go) break;
    memset(next, 0, sizeof next);
    memset(into, 0, sizeof into);
    int usable = !first; /* spare buffers nobody else holds */
    for (int k = 0; k < nres && usable; k++)
      usable = spare[k] && spare[k]->refs == 1 && spare[k]->storage && spare[k]->storage->refs == 1;
    for (int k = 0; k < nres && usable; k++) into[k] = spare[k];
    for (int j = 0; j < S && !s; j++) {
      if (steps == st[j].cap) s = stack_new(&st[j], &st[j].d, st[j].cap ? 2 * st[j].cap : 16, n, j);
      if (!s) s = stack_row(&st[j], steps, &into[nres + j]);
    }
    if (!s) s = run(ctx, n, 1, bg, nin, cur, ntot, next, &got, into);
    if (!s && got != ntot) s = tp_fail(TP_ERR_INTERNAL, "while_loop: the body returned %d results, expected %d", got, ntot);
    for (int j = 0; j < S && !s; j++) { /* the slice into its row (unless the plan wrote it there) */
      tp_tensor *y = next[nres + j], *r = into[nres + j];
      if (y == r) continue;
      if (y->ndim != st[j].d.ndim || tp_tensor_numel(y) != st[j].row)
        s = tp_fail(TP_ERR_INTERNAL, "while_loop: scan output %d changed its shape at step %lld", j, (long long)steps);
      else tp_tensor_copy_into(y, r);
    }
    for (int j = 0; j < S; j++) {
      tp_tensor_release(into[nres + j]);
      tp_tensor_release(next[nres + j]);
      next[nres + j] = NULL;
    }
    if (s) {
      for (int k = 0; k < nres; k++) tp_tensor_release(next[k]);
      break;
    }
    steps++;
    for (int k = 0; k < nres; k++) {
      tp_tensor_release(spare[k]); /* written into (next holds it now) or replaced */
      spare[k] = first ? NULL : cur[k];
      if (first) tp_tensor_release(cur[k]); /* an operand: never a spare */
      cur[k] = next[k];
    }
    first = 0;
  }
  for (int k = 0; k < nres; k++) tp_tensor_release(spare[k]);
  int assigned = !s;
  for (int k = 0; k < nres; k++) {
    if (s) tp_tensor_release(cur[k]);
    else res[k] = cur[k];
  }
  for (int j = 0; j < S; j++) {
    res[nres + j] = NULL;
    if (!s) s = stack_take(&st[j], steps, &res[nres + j]);
    tp_tensor_release(st[j].t);
  }
  tp_free(st);
  if (s) { /* a stack that could not be taken: nothing is returned */
    for (int k = 0; k < ntot && assigned; k++) tp_tensor_release(res[k]), res[k] = NULL;
    return s;
  }
  return own_results(n, args, nres, res);
}
