/* onnx_cond.c - control flow on run-time data as graph nodes
 * (src/graph/control.c): an If as one `cond`, a Loop as one `while_loop`
 * (tp_onnx_loop_as_while; onnx_control.c's cv_loop decides when), a Scan
 * as one `while_loop` with its scan outputs as carried stacks
 * (tp_onnx_scan_as_while, at the end of this file; called by
 * onnx_control.c's scan_run, which unrolls when it cannot apply). An If whose condition is run-time data imports as
 * one `cond` node: both branches imported as child graphs
 * of the graph being built, each taking the outer-scope values its branches
 * read as explicit operands (the same list, in the same order, for both),
 * so stax compiles both and the plan chooses at run time. cv_if (import.c)
 * calls this when the condition is a graph node; a constant condition keeps
 * the import-time choice.
 *
 * Inside a branch the importer works as everywhere else, on a swapped
 * target graph: m->g is the branch's graph, the outer values it reads are
 * rebound to its placeholders while it imports (and restored after), and
 * the constant pool's get_attr cache starts empty for it. A branch whose
 * converter needs a value as a constant (a Reshape shape computed from an
 * outer input) cannot see it there; the caller then falls back to the
 * import-time choice. */
#include "import.h"
#include <stdio.h>

#define MAXFREE TP_MAX_OPERANDS

typedef struct fv {
  const char *names[MAXFREE];
  int n;
  int too_many;
} fv;

static int has_name(const char *const *v, int n, const char *s) {
  for (int i = 0; i < n; i++)
    if (!strcmp(v[i], s)) return 1;
  return 0;
}

/* defined: a small growable set of names defined inside the branch */
typedef struct nameset { const char **v; int n, cap; } nameset;
static tp_status ns_add(nameset *s, const char *name) {
  if (TP_ARRAY_RESERVE(s->v, s->cap, s->n + 1)) return TP_ERR_OUT_OF_MEMORY;
  s->v[s->n++] = name;
  return TP_OK;
}

static tp_status use_name(imp *m, const nameset *def, fv *f, const char *name) {
  if (!*name || has_name(def->v, def->n, name) || has_name(f->names, f->n, name)) return TP_OK;
  TP_TRY(tp_onnx_ragged_check(m, name)); /* a stack of run-time length: only a graph output may read it */
  entry *e = tp_onnx_lookup(m, name);
  if (!e || e->r.kind != R_NODE) return TP_OK; /* constants and literals need no operand */
  if (f->n == MAXFREE) {
    f->too_many = 1;
    return TP_OK;
  }
  f->names[f->n++] = name;
  return TP_OK;
}

/* The outer values (graph nodes of the current target) that sub and the
 * graphs nested in it read, added to f. */
static tp_status free_vars(imp *m, omodel *sub, nameset *def, fv *f, int depth) {
  if (depth > 8) return tp_fail(TP_ERR_UNSUPPORTED, "If branches nested deeper than 8");
  int mark = def->n;
  tp_status s = TP_OK;
  for (int i = 0; i < sub->ninputs && !s; i++) s = ns_add(def, sub->inputs[i].name);
  for (int i = 0; i < sub->ninits && !s; i++) {
    tp_pb rd = sub->inits[i];
    tp_tensor *t = NULL;
    char *name = NULL;
    s = tp_onnx_tensor_read(&rd, "initializer", &t, &name);
    tp_tensor_release(t);
    char *an = s ? NULL : tp_onnx_arena_str(&m->md, name ? name : "", name ? strlen(name) : 0);
    tp_free(name);
    if (!s && !an) s = TP_ERR_OUT_OF_MEMORY;
    if (!s) s = ns_add(def, an);
  }
  for (int i = 0; i < sub->nnodes && !s; i++) {
    onode *n = &sub->nodes[i];
    for (int k = 0; k < n->nin && !s; k++) s = use_name(m, def, f, n->in[k]);
    for (int a = 0; a < n->nattrs && !s; a++) {
      if (!n->attrs[a].has_g) continue;
      omodel inner;
      s = tp_onnx_decode_subgraph(&m->md, &n->attrs[a].g, &inner);
      if (!s) s = free_vars(m, &inner, def, f, depth + 1);
      tp_onnx_decoded_free(&inner);
    }
    for (int k = 0; k < n->nout && !s; k++)
      if (*n->out[k]) s = ns_add(def, n->out[k]);
  }
  for (int i = 0; i < sub->noutputs && !s; i++) s = use_name(m, def, f, sub->outputs[i].name);
  def->n = mark; /* a nested graph's names are its own */
  return s;
}

/* After a subgraph's nodes are imported: may add nodes (to m->g, the
 * subgraph then) and rewrite its outputs outs[0..*nout). ph: the refs of
 * its nlead + nextra leading placeholders. */
typedef tp_status (*post_fn)(imp *m, void *ctx, const ref *ph, ref *outs, int *nout);
/* Before: computes sub's ninputs inputs ins[] from the placeholders ph
 * (when NULL, sub's first nlead inputs are the first nlead placeholders). */
typedef tp_status (*pre_fn)(imp *m, void *ctx, const ref *ph, ref *ins);

/* Imports sub as a new graph whose placeholders are, in order: nlead bound
 * to sub's first nlead inputs, nextra more (read by post only), then f's
 * outer values; ptypes: the types of the first nlead + nextra, types: f's.
 * *out owns it. */
static tp_status import_sub(imp *m, omodel *sub, int nlead, int nextra, const tp_desc *ptypes, const fv *f,
                            const tp_desc *types, int nout, pre_fn pre, post_fn post, void *pctx, tp_graph **out) {
  *out = NULL;
  tp_graph *g = NULL, *outer_g = m->g;
  TP_TRY(tp_graph_new(&g));
  int nc0 = m->nconsts, *saved_cn = NULL, *saved_in = m->input_node;
  ref saved[MAXFREE], ph[MAXFREE];
  tp_status s = TP_OK;
  if (nc0) {
    saved_cn = tp_alloc(sizeof(int) * (size_t)nc0);
    if (!saved_cn) s = TP_ERR_OUT_OF_MEMORY;
    else memcpy(saved_cn, m->const_node, sizeof(int) * (size_t)nc0);
  }
  for (int i = 0; i < nc0 && !s; i++) m->const_node[i] = -1;
  m->g = g;
  m->input_node = NULL; /* no value specialization from inside a subgraph */
  m->sub_depth++;
  int np = nlead + nextra;
  for (int i = 0; i < np && !s; i++) {
    char nm[32];
    int idx;
    snprintf(nm, sizeof nm, "p%d", i);
    s = tp_graph_add_node(g, TP_NODE_PLACEHOLDER, nm, TP_OP_ADD, 0, NULL, NULL, &ptypes[i], &idx);
    if (!s) ph[i] = (ref){R_NODE, idx, 0, 0, 0};
  }
  int bound = 0;
  for (int i = 0; i < f->n && !s; i++, bound++) {
    char nm[32];
    int idx;
    snprintf(nm, sizeof nm, "in%d", i);
    entry *e = tp_onnx_lookup(m, f->names[i]);
    saved[i] = e->r;
    s = tp_graph_add_node(g, TP_NODE_PLACEHOLDER, nm, TP_OP_ADD, 0, NULL, NULL, &types[i], &idx);
    if (!s) e->r = (ref){R_NODE, idx, 0, 0, 0};
  }
  ref outs[2 * TP_MAX_OPERANDS];
  ref bins[MAXFREE];
  if (!s && pre && sub->ninputs > MAXFREE) s = tp_fail(TP_ERR_UNSUPPORTED, "more than %d body inputs", MAXFREE);
  if (!s && pre) s = pre(m, pctx, ph, bins);
  if (!s) s = pre ? tp_onnx_subgraph(m, sub, sub->ninputs, bins, outs) : tp_onnx_subgraph(m, sub, nlead, ph, outs);
  if (!s && post) s = post(m, pctx, ph, outs, &nout);
  tp_arg args[TP_MAX_OPERANDS];
  if (!s && nout > TP_MAX_OPERANDS) s = tp_fail(TP_ERR_UNSUPPORTED, "more than %d subgraph outputs", TP_MAX_OPERANDS);
  for (int i = 0; i < nout && !s; i++) {
    if (outs[i].kind == R_NONE) s = tp_fail(TP_ERR_INVALID_ARG, "subgraph output %d is absent", i);
    if (!s && outs[i].kind == R_SCALAR) { /* a literal: a constant node */
      tp_tensor *t = NULL;
      s = tp_scalar(outs[i].s, outs[i].is_int, &t);
      if (!s) s = tp_onnx_add_const(m, t, &outs[i]);
    }
    if (!s) s = tp_onnx_arg(m, outs[i], &args[i]);
  }
  int oidx;
  if (!s) s = tp_graph_add_node(g, TP_NODE_OUTPUT, "output", TP_OP_ADD, nout, args, NULL, NULL, &oidx);
  if (!s) s = tp_graph_verify(g);
  /* restore the outer scope */
  for (int i = 0; i < bound; i++) tp_onnx_lookup(m, f->names[i])->r = saved[i];
  for (int i = 0; i < m->nconsts; i++) m->const_node[i] = i < nc0 && saved_cn ? saved_cn[i] : -1;
  tp_free(saved_cn);
  m->g = outer_g;
  m->input_node = saved_in;
  m->sub_depth--;
  if (s) {
    tp_graph_free(g);
    return s;
  }
  *out = g;
  return TP_OK;
}

static const tp_desc *out_type(const tp_graph *g, int k) {
  int o = tp_graph_output(g);
  return &g->nodes[g->nodes[o].args[k].node].desc;
}

/* sub[0], sub[1] as get_attr nodes of m->g (ownership moves); ga: their
 * indices. */
static tp_status attach(imp *m, const char *const *kind, tp_graph **sub, int *ga) {
  tp_status s = TP_OK;
  int id = m->g->next_id++;
  for (int b = 0; b < 2; b++) {
    if (s) { /* the rest is dropped */
      tp_graph_free(sub[b]);
      sub[b] = NULL;
      break;
    }
    char sn[48], an[48];
    snprintf(sn, sizeof sn, "%s%d", kind[b], id);
    snprintf(an, sizeof an, "%s%d", kind[b], id);
    while (tp_graph_find_subgraph(m->g, sn)) snprintf(sn + strlen(sn), sizeof sn - strlen(sn), "_");
    while (tp_graph_find(m->g, an) >= 0) snprintf(an + strlen(an), sizeof an - strlen(an), "_");
    s = tp_graph_add_subgraph(m->g, sn, sub[b]);
    sub[b] = NULL;
    tp_desc gd;
    memset(&gd, 0, sizeof gd);
    gd.ndim = TP_DESC_GRAPH;
    if (!s) s = tp_graph_add_node(m->g, TP_NODE_GET_ATTR, an, TP_OP_COUNT, 0, NULL, NULL, &gd, &ga[b]);
    if (!s && !(m->g->nodes[ga[b]].target = tp_strdup(sn))) s = TP_ERR_OUT_OF_MEMORY;
  }
  if (s && sub[1]) {
    tp_graph_free(sub[1]);
    sub[1] = NULL;
  }
  return s;
}

/* r as a node operand (a literal becomes a constant). */
static tp_status node_arg(imp *m, ref r, tp_arg *a) {
  if (r.kind == R_SCALAR) {
    tp_tensor *t = NULL;
    TP_TRY(tp_scalar(r.s, r.is_int, &t));
    TP_TRY(tp_onnx_add_const(m, t, &r));
  }
  if (r.kind == R_NONE) return tp_fail(TP_ERR_INVALID_ARG, "an absent operand");
  return tp_onnx_arg(m, r, a);
}

/* The while_loop node (kinds: the names of its cond and body graphs) over
 * sub (taken over: attached, or freed when s already failed), carried
 * init[0..np), the outer values f read after them; nres results, typed as
 * ptypes; *li its index. s: the caller's status so far (returned when set). */
static tp_status add_while(imp *m, tp_status s, const char *const kinds[2], tp_graph *sub[2], int np,
                           const ref *init, const fv *f, int nres, const tp_desc *ptypes, const char *name, int *li) {
  int ga[2] = {-1, -1};
  if (!s) s = attach(m, kinds, sub, ga);
  else tp_graph_free(sub[0]), tp_graph_free(sub[1]);
  tp_arg args[TP_MAX_OPERANDS];
  if (!s) {
    args[0] = (tp_arg){TP_ARG_NODE, ga[0], 0, 0};
    args[1] = (tp_arg){TP_ARG_NODE, ga[1], 0, 0};
  }
  for (int k = 0; k < np && !s; k++) s = node_arg(m, init[k], &args[2 + k]);
  for (int i = 0; i < f->n && !s; i++) s = tp_onnx_arg(m, tp_onnx_lookup(m, f->names[i])->r, &args[2 + np + i]);
  if (!s) {
    tp_attrs at;
    tp_attrs_init(&at);
    at.nresults = nres;
    char base[64], nm[80];
    if (name && *name) { /* the ONNX node's name (run-time errors name it), unique in the graph */
      tp_onnx_sanitize_name(name, base, sizeof base);
      snprintf(nm, sizeof nm, "%s", base);
      for (int q = 1; tp_graph_find(m->g, nm) >= 0 && q < 1000; q++) snprintf(nm, sizeof nm, "%s_%d", base, q);
    }
    s = tp_graph_add_node(m->g, TP_NODE_CALL, name && *name && tp_graph_find(m->g, nm) < 0 ? nm : NULL,
                          TP_OP_WHILE_LOOP, 2 + np + f->n, args, &at, &ptypes[0], li);
  }
  if (!s) s = tp_graph_verify_control(m->g, &m->g->nodes[*li]);
  return s;
}

tp_status tp_onnx_if_as_cond(imp *m, onode *n, ref c, attr *th, attr *el) {
  if (n->nout > TP_MAX_OPERANDS) return tp_fail(TP_ERR_UNSUPPORTED, "more than %d If outputs", TP_MAX_OPERANDS);
  if (n->nout < 1) /* (the node's type comes from output 0) */
    return tp_fail(TP_ERR_INVALID_ARG, "an If needs at least one output, this one has none");
  tp_desc cd = tp_onnx_desc(m, c);
  if (tp_shape_numel(cd.ndim, cd.shape) != 1) {
    char b[96];
    return tp_fail(TP_ERR_INVALID_ARG, "the condition is %s%s; it must be one value", tp_dtype_short(cd.dtype),
                   tp_shape_str(cd.ndim, cd.shape, b, sizeof b));
  }
  omodel br[2];
  memset(br, 0, sizeof br);
  fv f;
  memset(&f, 0, sizeof f);
  nameset def = {0};
  tp_graph *sub[2] = {NULL, NULL};
  tp_status s = tp_onnx_decode_subgraph(&m->md, &th->g, &br[0]);
  if (!s) s = tp_onnx_decode_subgraph(&m->md, &el->g, &br[1]);
  for (int b = 0; b < 2 && !s; b++)
    if (br[b].noutputs != n->nout)
      s = tp_fail(TP_ERR_INVALID_ARG, "the %s branch has %d outputs, the If %d", b ? "else" : "then", br[b].noutputs,
                  n->nout);
  for (int b = 0; b < 2 && !s; b++) s = free_vars(m, &br[b], &def, &f, 0);
  tp_free(def.v);
  if (!s && f.too_many)
    s = tp_fail(TP_ERR_UNSUPPORTED, "the branches read more than %d outer values", MAXFREE - 3);
  if (!s && f.n + 3 > TP_MAX_OPERANDS)
    s = tp_fail(TP_ERR_UNSUPPORTED, "the branches read %d outer values (at most %d)", f.n, TP_MAX_OPERANDS - 3);
  tp_desc types[MAXFREE];
  for (int i = 0; i < f.n && !s; i++) {
    types[i] = tp_onnx_desc(m, tp_onnx_lookup(m, f.names[i])->r);
    types[i].weak = 0;
  }
  for (int b = 0; b < 2 && !s; b++) {
    s = import_sub(m, &br[b], 0, 0, NULL, &f, types, n->nout, NULL, NULL, NULL, &sub[b]);
    if (s) tp_fail_context(s, "the %s branch", b ? "else" : "then");
  }
  tp_onnx_decoded_free(&br[0]);
  tp_onnx_decoded_free(&br[1]);
  /* one signature for both branches (checked before the graph changes: a
   * failure here leaves the caller free to choose at import instead) */
  for (int k = 0; k < n->nout && !s; k++) {
    const tp_desc *d[2];
    for (int b = 0; b < 2; b++) {
      int o = tp_graph_output(sub[b]);
      d[b] = &sub[b]->nodes[sub[b]->nodes[o].args[k].node].desc;
    }
    tp_desc x = *d[0], y = *d[1];
    x.weak = y.weak = 0;
    if (!tp_desc_equal(&x, &y)) {
      char b0[96], b1[96];
      s = tp_fail(TP_ERR_UNSUPPORTED, "output %d is %s%s in the then branch but %s%s in the else branch", k,
                  tp_dtype_short(x.dtype), tp_shape_str(x.ndim, x.shape, b0, sizeof b0), tp_dtype_short(y.dtype),
                  tp_shape_str(y.ndim, y.shape, b1, sizeof b1));
    }
  }
  /* the node: cond(pred, then, else, operands...) and a getitem per output */
  tp_arg args[TP_MAX_OPERANDS];
  int gi[2] = {-1, -1};
  const tp_graph *tg = sub[0];
  tp_desc d0 = tg && !s ? *out_type(tg, 0) : (tp_desc){0};
  tp_desc dk[TP_MAX_OPERANDS];
  for (int k = 0; k < n->nout && !s; k++) dk[k] = *out_type(tg, k);
  static const char *const kinds[2] = {"then", "else"};
  if (!s) s = attach(m, kinds, sub, gi);
  else tp_graph_free(sub[0]), tp_graph_free(sub[1]);
  if (!s) s = tp_onnx_arg(m, c, &args[0]);
  if (!s) {
    args[1] = (tp_arg){TP_ARG_NODE, gi[0], 0, 0};
    args[2] = (tp_arg){TP_ARG_NODE, gi[1], 0, 0};
  }
  for (int i = 0; i < f.n && !s; i++) s = tp_onnx_arg(m, tp_onnx_lookup(m, f.names[i])->r, &args[3 + i]);
  int ci = -1;
  if (!s) {
    d0.weak = 0;
    tp_attrs at;
    tp_attrs_init(&at);
    at.nresults = n->nout;
    s = tp_graph_add_node(m->g, TP_NODE_CALL, NULL, TP_OP_COND, 3 + f.n, args, &at, &d0, &ci);
    if (!s) s = tp_graph_verify_control(m->g, &m->g->nodes[ci]);
    for (int k = 0; k < n->nout && !s; k++) {
      tp_desc d = dk[k];
      d.weak = 0;
      tp_attrs ga;
      tp_attrs_init(&ga);
      ga.result_index = k;
      tp_arg a = {TP_ARG_NODE, ci, 0, 0};
      int idx;
      s = tp_graph_add_node(m->g, TP_NODE_CALL, NULL, TP_OP_GETITEM, 1, &a, &ga, &d, &idx);
      if (!s) s = tp_onnx_set_out(m, n, k, (ref){R_NODE, idx, 0, 0, 0});
    }
  }
  return s;
}

/* ---- Loop as while_loop ----
 * carried: (i: i64[], c: b8[], v...); read by every step: M (when given),
 * then the outer values the body reads. cond graph: c && i < M (c alone
 * without M); body graph: the ONNX body on (i, c, v...), then (i + 1,
 * its cond as b8[], its v...). */
typedef struct loop_post { int N, K; } loop_post;

static tp_status as_flag(imp *m, ref c, ref *out) {
  tp_desc d = tp_onnx_desc(m, c);
  if (tp_shape_numel(d.ndim, d.shape) != 1) {
    char b[96];
    return tp_fail(TP_ERR_INVALID_ARG, "the loop condition is %s%s; it must be one value", tp_dtype_short(d.dtype),
                   tp_shape_str(d.ndim, d.shape, b, sizeof b));
  }
  if (d.ndim) TP_TRY(tp_onnx_reshape(m, c, 0, NULL, &c));
  return tp_onnx_cast(m, c, TP_BOOL, out);
}

static tp_status body_post(imp *m, void *ctx, const ref *ph, ref *outs, int *nout) {
  const loop_post *lp = ctx;
  if (*nout != 1 + lp->N + lp->K)
    return tp_fail(TP_ERR_INVALID_ARG, "the body gives %d outputs; the Loop needs %d (cond, %d carried, %d scan)", *nout,
                   1 + lp->N + lp->K, lp->N, lp->K);
  ref next_i, c;
  TP_TRY(tp_onnx_binary(m, TP_OP_ADD, ph[0], (ref){R_SCALAR, 0, 0, 1, 1}, &next_i));
  TP_TRY(as_flag(m, outs[0], &c));
  for (int j = lp->N + lp->K; j >= 1; j--) outs[1 + j] = outs[j];
  outs[0] = next_i;
  outs[1] = c;
  *nout = 2 + lp->N + lp->K;
  return TP_OK;
}

/* the cond graph, by hand: placeholders of ptypes[0..np) then types[0..nf) */
static tp_status loop_cond_graph(int np, const tp_desc *ptypes, int nf, const tp_desc *types, int has_m,
                                 tp_graph **out) {
  tp_graph *g = NULL;
  TP_TRY(tp_graph_new(&g));
  tp_status s = TP_OK;
  int ph[MAXFREE];
  for (int i = 0; i < np + nf && !s; i++) {
    char nm[32];
    snprintf(nm, sizeof nm, "p%d", i);
    s = tp_graph_add_node(g, TP_NODE_PLACEHOLDER, nm, TP_OP_ADD, 0, NULL, NULL, i < np ? &ptypes[i] : &types[i - np],
                          &ph[i]);
  }
  int res = ph[1];
  if (!s && has_m) { /* where(c, i < M, c) */
    tp_arg a[3] = {{TP_ARG_NODE, ph[0], 0, 0}, {TP_ARG_NODE, ph[np - 1], 0, 0}, {TP_ARG_NODE, 0, 0, 0}};
    const tp_desc *dp[3] = {&ptypes[0], &ptypes[np - 1], NULL};
    tp_desc lt, w;
    tp_attrs at;
    tp_attrs_init(&at);
    int li = -1;
    s = tp_op_infer(TP_OP_LT, 2, dp, &at, &lt);
    if (!s) s = tp_graph_add_node(g, TP_NODE_CALL, NULL, TP_OP_LT, 2, a, &at, &lt, &li);
    tp_arg b[3] = {{TP_ARG_NODE, ph[1], 0, 0}, {TP_ARG_NODE, li, 0, 0}, {TP_ARG_NODE, ph[1], 0, 0}};
    const tp_desc *dq[3] = {&ptypes[1], &lt, &ptypes[1]};
    if (!s) s = tp_op_infer(TP_OP_WHERE, 3, dq, &at, &w);
    if (!s) s = tp_graph_add_node(g, TP_NODE_CALL, NULL, TP_OP_WHERE, 3, b, &at, &w, &res);
  }
  tp_arg o = {TP_ARG_NODE, res, 0, 0};
  if (!s) s = tp_graph_add_node(g, TP_NODE_OUTPUT, "output", TP_OP_ADD, 1, &o, NULL, NULL, NULL);
  if (!s) s = tp_graph_verify(g);
  if (s) {
    tp_graph_free(g);
    return s;
  }
  *out = g;
  return TP_OK;
}

tp_status tp_onnx_loop_as_while(imp *m, onode *n, omodel *body, int64_t rows) {
  ref mr, cr;
  TP_TRY(tp_onnx_in(m, n, 0, &mr));
  TP_TRY(tp_onnx_in(m, n, 1, &cr));
  int N = n->nin - 2 > 0 ? n->nin - 2 : 0, has_m = mr.kind != R_NONE;
  int np = 2 + N + has_m, K = body->noutputs - 1 - N;
  if (body->ninputs != N + 2)
    return tp_fail(TP_ERR_INVALID_ARG, "the body has %d inputs for %d loop-carried values", body->ninputs, N);
  if (K < 0)
    return tp_fail(TP_ERR_INVALID_ARG, "the body has %d outputs for %d loop-carried values", body->noutputs, N);
  /* rows < 0: the step count is known only after the run (an exit on data,
   * or a trip count fed at run time); the stacks grow as the loop runs and
   * are handed out at their real length (declared with 0 rows), so only
   * graph outputs may read them (tp_onnx_ragged_check) */
  int ragged = K && rows < 0;
  if (ragged && m->sub_depth)
    return tp_fail(TP_ERR_UNSUPPORTED, "a Loop inside a subgraph that ends on run-time data with scan outputs is not "
                   "supported yet (its stacks' length is known only after the run)");
  if (ragged && m->nragged + K > TP_ONNX_MAX_RAGGED)
    return tp_fail(TP_ERR_UNSUPPORTED, "more than %d scan outputs of Loops that end on run-time data in one model",
                   TP_ONNX_MAX_RAGGED);
  if (2 + N + K > TP_MAX_OPERANDS)
    return tp_fail(TP_ERR_UNSUPPORTED, "a Loop with %d carried values and %d scan outputs in the plan (at most %d)", N, K,
                   TP_MAX_OPERANDS - 2);
  if (np + 2 > TP_MAX_OPERANDS)
    return tp_fail(TP_ERR_UNSUPPORTED, "a Loop on run-time data with %d carried values (at most %d)", N,
                   TP_MAX_OPERANDS - 5);
  ref init[MAXFREE];
  tp_desc ptypes[MAXFREE];
  tp_status s = tp_onnx_full(m, TP_I64, 0, NULL, 0, &init[0]);
  if (!s && cr.kind != R_NONE) s = as_flag(m, cr, &init[1]);
  else if (!s) s = tp_onnx_full(m, TP_BOOL, 0, NULL, 1, &init[1]);
  for (int j = 0; j < N && !s; j++) s = tp_onnx_need_in(m, n, 2 + j, &init[2 + j]);
  if (!s && has_m) init[np - 1] = mr;
  for (int k = 0; k < np && !s; k++) {
    ptypes[k] = tp_onnx_desc(m, init[k]);
    ptypes[k].weak = 0;
    if (init[k].kind == R_SCALAR) ptypes[k].dtype = init[k].is_int ? TP_I64 : TP_F32;
  }
  fv f;
  memset(&f, 0, sizeof f);
  nameset def = {0};
  if (!s) s = free_vars(m, body, &def, &f, 0);
  tp_free(def.v);
  if (!s && (f.too_many || np + 2 + f.n > TP_MAX_OPERANDS))
    s = tp_fail(TP_ERR_UNSUPPORTED, "the Loop body reads too many outer values (%d operands at most)", TP_MAX_OPERANDS);
  tp_desc types[MAXFREE];
  for (int i = 0; i < f.n && !s; i++) {
    types[i] = tp_onnx_desc(m, tp_onnx_lookup(m, f.names[i])->r);
    types[i].weak = 0;
  }
  tp_graph *sub[2] = {NULL, NULL};
  loop_post lp = {N, K};
  if (!s) s = loop_cond_graph(np, ptypes, f.n, types, has_m, &sub[0]);
  if (!s) s = import_sub(m, body, 2 + N, has_m, ptypes, &f, types, 1 + N + K, NULL, body_post, &lp, &sub[1]);
  tp_desc ytypes[TP_MAX_OPERANDS];
  for (int j = 0; j < K && !s; j++) { /* the stacks: [rows, y_j...] */
    tp_desc y = *out_type(sub[1], 2 + N + j);
    y.weak = 0;
    if (y.ndim < 0 || y.ndim + 1 > TP_MAX_DIMS) {
      s = tp_fail(TP_ERR_UNSUPPORTED, "scan output %d has no fixed rank below %d", j, TP_MAX_DIMS);
      break;
    }
    ytypes[j] = y;
    for (int d = y.ndim; d > 0; d--) ytypes[j].shape[d] = y.shape[d - 1];
    ytypes[j].shape[0] = ragged ? 0 : rows;
    ytypes[j].ndim = y.ndim + 1;
  }
  /* the body keeps every carried type (checked before m->g changes) */
  for (int k = 0; k < 2 + N && !s; k++) {
    tp_desc x = *out_type(sub[1], k), y = ptypes[k];
    x.weak = y.weak = 0;
    if (!tp_desc_equal(&x, &y)) {
      char b0[96], b1[96];
      s = tp_fail(TP_ERR_UNSUPPORTED, "carried value %d is %s%s before the loop but %s%s after a step (a Loop that "
                  "exits on run-time data keeps its carried shapes)", k - 2, tp_dtype_short(y.dtype),
                  tp_shape_str(y.ndim, y.shape, b0, sizeof b0), tp_dtype_short(x.dtype),
                  tp_shape_str(x.ndim, x.shape, b1, sizeof b1));
    }
  }
  static const char *const kinds[2] = {"loop_cond", "loop_body"};
  int li = -1;
  s = add_while(m, s, kinds, sub, np, init, &f, 2 + N, ptypes, n->name, &li);
  for (int j = 0; j < N && !s; j++) {
    tp_attrs ga2;
    tp_attrs_init(&ga2);
    ga2.result_index = 2 + j;
    tp_arg a = {TP_ARG_NODE, li, 0, 0};
    int idx;
    s = tp_graph_add_node(m->g, TP_NODE_CALL, NULL, TP_OP_GETITEM, 1, &a, &ga2, &ptypes[2 + j], &idx);
    if (!s) s = tp_onnx_set_out(m, n, j, (ref){R_NODE, idx, 0, 0, 0});
  }
  for (int j = 0; j < K && N + j < n->nout && !s; j++) { /* scan outputs: results after the carried ones */
    if (!*n->out[N + j]) continue;
    tp_attrs ga2;
    tp_attrs_init(&ga2);
    ga2.result_index = 2 + N + j;
    tp_arg a = {TP_ARG_NODE, li, 0, 0};
    int idx;
    s = tp_graph_add_node(m->g, TP_NODE_CALL, NULL, TP_OP_GETITEM, 1, &a, &ga2, &ytypes[j], &idx);
    if (!s) s = tp_onnx_set_out(m, n, N + j, (ref){R_NODE, idx, 0, 0, 0});
    if (!s && ragged) {
      int r = m->nragged++;
      m->ragged[r].node = idx;
      m->ragged[r].loop = *n->name ? n->name : n->op;
      m->ragged[r].value = n->out[N + j];
      m->ragged[r].loop_node = li;
    }
  }
  return s;
}

/* ---- Scan as while_loop ----
 * carried: (i: i64[], states...); read by every step: L (an i64[]), the
 * scan inputs, then the outer values the body reads. cond graph: i < L;
 * body graph: scan input k's slice is gather(x_k, i or L-1-i, axis k),
 * then the ONNX body, then (i + 1, states..., y_j...): the y_j are the
 * while_loop's scan outputs (src/graph/control.c), each step's slice
 * written in place into row i of its [L, ...] stack; a reversed scan
 * output is flipped once after the loop. */
typedef struct scan_ctx {
  const tp_onnx_scan_form *sf;
} scan_ctx;

static tp_status at_step(imp *m, ref i, int rev, int64_t L, ref *pos) {
  if (!rev) {
    *pos = i;
    return TP_OK;
  }
  return tp_onnx_binary(m, TP_OP_SUB, (ref){R_SCALAR, 0, 0, (double)(L - 1), 1}, i, pos);
}

static tp_status scan_pre(imp *m, void *ctx, const ref *ph, ref *ins) {
  const tp_onnx_scan_form *sf = ((scan_ctx *)ctx)->sf;
  int N = sf->N, K = sf->K;
  for (int j = 0; j < N; j++) ins[j] = ph[1 + j];
  for (int k = 0; k < K; k++) {
    ref pos;
    if (!sf->L) { /* no step runs: a slice of zeros stands for the (empty) scan input's */
      tp_desc d = tp_onnx_desc(m, ph[2 + N + k]);
      int a = (int)sf->in_axes[k];
      for (int q = a; q + 1 < d.ndim; q++) d.shape[q] = d.shape[q + 1];
      TP_TRY(tp_onnx_full(m, d.dtype, d.ndim - 1, d.shape, 0, &ins[N + k]));
      continue;
    }
    TP_TRY(at_step(m, ph[0], (int)sf->in_dir[k], sf->L, &pos));
    tp_attrs at;
    tp_attrs_init(&at);
    at.dim = sf->in_axes[k];
    TP_TRY(tp_onnx_emit(m, TP_OP_GATHER, 2, (ref[2]){ph[2 + N + k], pos}, &at, &ins[N + k]));
  }
  return TP_OK;
}

static tp_status scan_post(imp *m, void *ctx, const ref *ph, ref *outs, int *nout) {
  const tp_onnx_scan_form *sf = ((scan_ctx *)ctx)->sf;
  int N = sf->N, M = sf->M;
  if (*nout != N + M) return tp_fail(TP_ERR_INVALID_ARG, "the body gives %d outputs; the Scan needs %d", *nout, N + M);
  for (int j = N + M - 1; j >= 0; j--) outs[1 + j] = outs[j];
  TP_TRY(tp_onnx_binary(m, TP_OP_ADD, ph[0], (ref){R_SCALAR, 0, 0, 1, 1}, &outs[0]));
  *nout = 1 + N + M;
  return TP_OK;
}

static tp_status scan_cond_graph(int np, const tp_desc *ptypes, int nf, const tp_desc *types, int il, tp_graph **out) {
  tp_graph *g = NULL;
  TP_TRY(tp_graph_new(&g));
  tp_status s = TP_OK;
  int ph[2 * TP_MAX_OPERANDS], li = -1;
  for (int i = 0; i < np + nf && !s; i++) {
    char nm[32];
    snprintf(nm, sizeof nm, "p%d", i);
    s = tp_graph_add_node(g, TP_NODE_PLACEHOLDER, nm, TP_OP_ADD, 0, NULL, NULL, i < np ? &ptypes[i] : &types[i - np],
                          &ph[i]);
  }
  tp_arg a[2] = {{TP_ARG_NODE, ph[0], 0, 0}, {TP_ARG_NODE, ph[il], 0, 0}};
  const tp_desc *dp[2] = {&ptypes[0], &ptypes[il]};
  tp_desc lt;
  tp_attrs at;
  tp_attrs_init(&at);
  if (!s) s = tp_op_infer(TP_OP_LT, 2, dp, &at, &lt);
  if (!s) s = tp_graph_add_node(g, TP_NODE_CALL, NULL, TP_OP_LT, 2, a, &at, &lt, &li);
  tp_arg o = {TP_ARG_NODE, li, 0, 0};
  if (!s) s = tp_graph_add_node(g, TP_NODE_OUTPUT, "output", TP_OP_ADD, 1, &o, NULL, NULL, NULL);
  if (!s) s = tp_graph_verify(g);
  if (s) {
    tp_graph_free(g);
    return s;
  }
  *out = g;
  return TP_OK;
}

static tp_desc plain_type(imp *m, ref r) {
  tp_desc d = tp_onnx_desc(m, r);
  d.weak = 0;
  if (r.kind == R_SCALAR) d.dtype = r.is_int ? TP_I64 : TP_F32;
  return d;
}

tp_status tp_onnx_scan_as_while(imp *m, omodel *body, tp_onnx_scan_form *sf) {
  int N = sf->N, K = sf->K, M = sf->M, nres = 1 + N, np = nres + 1 + K;
  if (np + 2 > TP_MAX_OPERANDS || 1 + N + M > TP_MAX_OPERANDS)
    return tp_fail(TP_ERR_UNSUPPORTED, "a Scan with %d states, %d scan inputs and %d scan outputs in the plan (at most "
                   "%d operands)", N, K, M, TP_MAX_OPERANDS);
  tp_desc ptypes[2 * TP_MAX_OPERANDS], types[MAXFREE];
  ref init[2 * TP_MAX_OPERANDS];
  tp_status s = tp_onnx_full(m, TP_I64, 0, NULL, 0, &init[0]);
  for (int j = 0; j < N && !s; j++) init[1 + j] = sf->states[j];
  fv f;
  memset(&f, 0, sizeof f);
  nameset def = {0};
  if (!s) s = free_vars(m, body, &def, &f, 0);
  tp_free(def.v);
  if (!s && (f.too_many || np + 2 + f.n > TP_MAX_OPERANDS))
    s = tp_fail(TP_ERR_UNSUPPORTED, "the Scan body reads %s outer values (%d operands at most)",
                f.too_many ? "too many" : "that many", TP_MAX_OPERANDS);
  for (int i = 0; i < f.n && !s; i++) types[i] = plain_type(m, tp_onnx_lookup(m, f.names[i])->r);
  if (!s) s = tp_onnx_full(m, TP_I64, 0, NULL, (double)sf->L, &init[nres]);
  for (int k = 0; k < K && !s; k++) init[nres + 1 + k] = sf->scans[k];
  for (int k = 0; k < np && !s; k++) ptypes[k] = plain_type(m, init[k]);
  tp_graph *sub[2] = {NULL, NULL};
  scan_ctx ctx = {sf};
  if (!s) s = scan_cond_graph(np, ptypes, f.n, types, nres, &sub[0]);
  if (!s) s = import_sub(m, body, nres, 1 + K, ptypes, &f, types, N + M, scan_pre, scan_post, &ctx, &sub[1]);
  for (int k = 1; k < nres && !s; k++) {
    tp_desc x = *out_type(sub[1], k), y = ptypes[k];
    x.weak = y.weak = 0;
    if (!tp_desc_equal(&x, &y)) {
      char b0[96], b1[96];
      s = tp_fail(TP_ERR_UNSUPPORTED, "state %d is %s%s before the Scan but %s%s after a step", k - 1,
                  tp_dtype_short(y.dtype), tp_shape_str(y.ndim, y.shape, b0, sizeof b0), tp_dtype_short(x.dtype),
                  tp_shape_str(x.ndim, x.shape, b1, sizeof b1));
    }
  }
  tp_desc ytypes[TP_MAX_OPERANDS];
  for (int j = 0; j < M && !s; j++) { /* the stacks: [L, y_j...] */
    tp_desc y = *out_type(sub[1], nres + j);
    y.weak = 0;
    if (y.ndim < 0 || y.ndim + 1 > TP_MAX_DIMS) {
      s = tp_fail(TP_ERR_UNSUPPORTED, "scan output %d has no fixed rank below %d", j, TP_MAX_DIMS);
      break;
    }
    sf->ytypes[j] = y;
    ytypes[j] = y;
    for (int d = y.ndim; d > 0; d--) ytypes[j].shape[d] = y.shape[d - 1];
    ytypes[j].shape[0] = sf->L;
    ytypes[j].ndim = y.ndim + 1;
  }
  static const char *const kinds[2] = {"scan_cond", "scan_body"};
  int li = -1;
  s = add_while(m, s, kinds, sub, np, init, &f, nres, ptypes, NULL, &li);
  for (int k = 1; k < nres + M && !s; k++) {
    tp_attrs ga2;
    tp_attrs_init(&ga2);
    ga2.result_index = k;
    tp_arg a = {TP_ARG_NODE, li, 0, 0};
    int idx;
    s = tp_graph_add_node(m->g, TP_NODE_CALL, NULL, TP_OP_GETITEM, 1, &a, &ga2, k < nres ? &ptypes[k] : &ytypes[k - nres],
                          &idx);
    if (!s) sf->results[k - 1] = (ref){R_NODE, idx, 0, 0, 0};
    if (!s && k >= nres && sf->out_dir[k - nres] && sf->L > 1) { /* reversed: row i holds step L-1-i */
      tp_tensor *rev = NULL;
      ref ri;
      tp_attrs at;
      tp_attrs_init(&at);
      at.dim = 0;
      s = tp_arange((double)(sf->L - 1), -1, -1, TP_I64, &rev);
      if (!s) s = tp_onnx_add_const(m, rev, &ri);
      if (!s) s = tp_onnx_emit(m, TP_OP_GATHER, 2, (ref[2]){sf->results[k - 1], ri}, &at, &sf->results[k - 1]);
    }
  }
  return s;
}
