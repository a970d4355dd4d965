/* onnx_cond.c - an If whose condition is run-time data imports as one
 * `cond` node (src/graph/control.c): both branches imported as child graphs
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

/* Imports branch sub as a new graph taking f's values (of types types[])
 * as placeholders; *out owns it. */
static tp_status import_branch(imp *m, omodel *sub, const fv *f, const tp_desc *types, int nout, tp_graph **out) {
  *out = NULL;
  tp_graph *g = NULL, *outer_g = m->g;
  TP_TRY(tp_graph_new(&g));
  int nc0 = m->nconsts, *saved_cn = NULL, *saved_in = m->input_node;
  ref saved[MAXFREE];
  tp_status s = TP_OK;
  if (nc0) {
    saved_cn = tp_alloc(sizeof(int) * (size_t)nc0);
    if (!saved_cn) s = TP_ERR_OUT_OF_MEMORY;
    else memcpy(saved_cn, m->const_node, sizeof(int) * (size_t)nc0);
  }
  for (int i = 0; i < nc0 && !s; i++) m->const_node[i] = -1;
  m->g = g;
  m->input_node = NULL; /* no value specialization from inside a branch */
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
  ref outs[TP_MAX_OPERANDS];
  if (!s) s = tp_onnx_subgraph(m, sub, 0, NULL, outs);
  tp_arg args[TP_MAX_OPERANDS];
  for (int i = 0; i < nout && !s; i++) {
    if (outs[i].kind == R_NONE) s = tp_fail(TP_ERR_INVALID_ARG, "branch output %d is absent", i);
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
  if (s) {
    tp_graph_free(g);
    return s;
  }
  *out = g;
  return TP_OK;
}

tp_status tp_onnx_if_as_cond(imp *m, onode *n, ref c, attr *th, attr *el) {
  if (n->nout > TP_MAX_OPERANDS) return tp_fail(TP_ERR_UNSUPPORTED, "more than %d If outputs", TP_MAX_OPERANDS);
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
    s = import_branch(m, &br[b], &f, types, n->nout, &sub[b]);
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
  int gi[2] = {-1, -1}, id = m->g->next_id++;
  for (int b = 0; b < 2 && !s; b++) {
    char sn[48], an[48];
    snprintf(sn, sizeof sn, "%s%d", b ? "else" : "then", id);
    snprintf(an, sizeof an, "%s%d", b ? "else" : "then", id);
    while (tp_graph_find_subgraph(m->g, sn)) snprintf(sn + strlen(sn), sizeof sn - strlen(sn), "_");
    while (tp_graph_find(m->g, an) >= 0) snprintf(an + strlen(an), sizeof an - strlen(an), "_");
    s = tp_graph_add_subgraph(m->g, sn, sub[b]);
    sub[b] = NULL;
    tp_desc gd;
    memset(&gd, 0, sizeof gd);
    gd.ndim = TP_DESC_GRAPH;
    if (!s) s = tp_graph_add_node(m->g, TP_NODE_GET_ATTR, an, TP_OP_COUNT, 0, NULL, NULL, &gd, &gi[b]);
    if (!s && !(m->g->nodes[gi[b]].target = tp_strdup(sn))) s = TP_ERR_OUT_OF_MEMORY;
  }
  tp_graph_free(sub[0]);
  tp_graph_free(sub[1]);
  if (!s) s = tp_onnx_arg(m, c, &args[0]);
  if (!s) {
    args[1] = (tp_arg){TP_ARG_NODE, gi[0], 0, 0};
    args[2] = (tp_arg){TP_ARG_NODE, gi[1], 0, 0};
  }
  for (int i = 0; i < f.n && !s; i++) s = tp_onnx_arg(m, tp_onnx_lookup(m, f.names[i])->r, &args[3 + i]);
  int ci = -1;
  if (!s) {
    const tp_graph *tg = tp_graph_find_subgraph(m->g, m->g->nodes[gi[0]].target);
    int o = tp_graph_output(tg);
    tp_desc d0 = tg->nodes[tg->nodes[o].args[0].node].desc;
    d0.weak = 0;
    tp_attrs at;
    tp_attrs_init(&at);
    at.nresults = n->nout;
    s = tp_graph_add_node(m->g, TP_NODE_CALL, NULL, TP_OP_COND, 3 + f.n, args, &at, &d0, &ci);
    if (!s) s = tp_graph_verify_control(m->g, &m->g->nodes[ci]);
    for (int k = 0; k < n->nout && !s; k++) {
      tp_desc d = tg->nodes[tg->nodes[o].args[k].node].desc;
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
