/* graph.c - Graph IR containers, the verifier and the node-by-node runner
 * (the `eager` backend executes graphs with tp_graph_run). */
#include "graph.h"
#include "../core/num.h"
#include <stdio.h>

static const char *const kind_names[TP_NODE_KIND_COUNT] = {"placeholder", "call_function",
                                                           "get_attr", "output"};
const char *tp_node_kind_name(tp_node_kind k) {
  return (unsigned)k < TP_NODE_KIND_COUNT ? kind_names[k] : "unknown";
}

tp_status tp_graph_new(tp_graph **out) {
  tp_graph *g = tp_alloc(sizeof *g);
  if (!g) return TP_ERR_OUT_OF_MEMORY;
  memset(g, 0, sizeof *g);
  *out = g;
  return TP_OK;
}

static void node_clear(tp_node *n) {
  tp_free(n->name);
  tp_free(n->args);
  tp_free(n->target);
  tp_free(n->from);
  tp_tensor_release(n->val);
  for (int i = 0; i < n->ncustom; i++) {
    tp_free(n->custom[i].key);
    tp_free(n->custom[i].value);
  }
  tp_free(n->custom);
}

void tp_graph_free(tp_graph *g) {
  if (!g) return;
  for (int i = 0; i < g->n; i++) node_clear(&g->nodes[i]);
  tp_free(g->nodes);
  for (int i = 0; i < g->nsubs; i++) {
    tp_free(g->subs[i].name);
    tp_graph_free(g->subs[i].g);
  }
  tp_free(g->subs);
  tp_free(g->name_ix);
  tp_free(g);
}

void tp_graph_truncate(tp_graph *g, int n, int nsubs) {
  while (g->n > n) node_clear(&g->nodes[--g->n]);
  while (g->nsubs > nsubs) {
    g->nsubs--;
    tp_free(g->subs[g->nsubs].name);
    tp_graph_free(g->subs[g->nsubs].g);
  }
}

tp_status tp_graph_add_subgraph(tp_graph *g, const char *name, tp_graph *sub) {
  if (tp_graph_find_subgraph(g, name)) {
    tp_graph_free(sub);
    return tp_fail(TP_ERR_INVALID_ARG, "graph: subgraph \"%s\" is already defined", name);
  }
  char *nm = tp_strdup(name);
  if (!nm || TP_ARRAY_RESERVE(g->subs, g->capsubs, g->nsubs + 1)) {
    tp_free(nm);
    tp_graph_free(sub);
    return TP_ERR_OUT_OF_MEMORY;
  }
  g->subs[g->nsubs].name = nm;
  g->subs[g->nsubs].g = sub;
  g->nsubs++;
  return TP_OK;
}

tp_graph *tp_graph_find_subgraph(const tp_graph *g, const char *name) {
  for (int i = 0; name && i < g->nsubs; i++)
    if (!strcmp(g->subs[i].name, name)) return g->subs[i].g;
  return NULL;
}

/* ---- the name index: every pass rebuilds a graph node by node, and each
 * add checks its name is unused (a scan made that quadratic: 15% of a
 * lowering of an 800-node model) ---- */
static uint32_t name_hash(const char *s) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
  return h;
}

static void ix_put(int *t, int cap, const char *name, int idx) {
  uint32_t h = name_hash(name) & (uint32_t)(cap - 1);
  while (t[h]) h = (h + 1) & (uint32_t)(cap - 1);
  t[h] = idx + 1;
}

/* (Re)builds the index for n nodes; on no memory there is none (tp_graph_find scans). */
static void ix_build(tp_graph *g) {
  tp_free(g->name_ix);
  g->name_ix = NULL, g->name_cap = g->name_used = 0;
  if (g->n < 32) return;
  int cap = 64;
  while (cap < 4 * g->n && cap < (1 << 29)) cap *= 2;
  int *t = tp_alloc(sizeof(int) * (size_t)cap);
  if (!t) return;
  memset(t, 0, sizeof(int) * (size_t)cap);
  for (int i = 0; i < g->n; i++) ix_put(t, cap, g->nodes[i].name, i);
  g->name_ix = t, g->name_cap = cap, g->name_used = g->n;
}

void tp_graph_names_changed(tp_graph *g) { ix_build(g); }

int tp_graph_find(const tp_graph *g, const char *name) {
  if (g->name_ix) {
    uint32_t m = (uint32_t)(g->name_cap - 1), h = name_hash(name) & m;
    for (; g->name_ix[h]; h = (h + 1) & m) {
      int i = g->name_ix[h] - 1;
      if (i < g->n && !strcmp(g->nodes[i].name, name)) return i;
    }
    return -1;
  }
  for (int i = 0; i < g->n; i++)
    if (!strcmp(g->nodes[i].name, name)) return i;
  return -1;
}

tp_status tp_graph_add_node(tp_graph *g, tp_node_kind kind, const char *name, tp_op op,
                            int nargs, const tp_arg *args, const tp_attrs *attrs,
                            const tp_desc *desc, int *idx) {
  char buf[32];
  if (!name) {
    do snprintf(buf, sizeof buf, "%d", g->next_id++);
    while (tp_graph_find(g, buf) >= 0);
    name = buf;
  } else if (tp_graph_find(g, name) >= 0) {
    return tp_fail(TP_ERR_INVALID_ARG, "graph: node name %%%s is already used", name);
  }
  TP_TRY(TP_ARRAY_RESERVE(g->nodes, g->cap, g->n + 1));
  tp_node *n = &g->nodes[g->n];
  memset(n, 0, sizeof *n);
  n->kind = kind;
  n->op = op;
  n->name = tp_strdup(name);
  if (nargs) n->args = tp_alloc(sizeof(tp_arg) * (size_t)nargs);
  if (!n->name || (nargs && !n->args)) {
    node_clear(n);
    return TP_ERR_OUT_OF_MEMORY;
  }
  if (nargs) memcpy(n->args, args, sizeof(tp_arg) * (size_t)nargs);
  n->nargs = nargs;
  if (attrs) n->attrs = *attrs;
  else tp_attrs_init(&n->attrs);
  if (desc) n->desc = *desc;
  if (idx) *idx = g->n;
  g->n++;
  if (g->name_ix && 2 * (g->name_used + 1) < g->name_cap) {
    ix_put(g->name_ix, g->name_cap, n->name, g->n - 1);
    g->name_used++;
  } else if (g->n >= 32) {
    ix_build(g);
  }
  return TP_OK;
}

void tp_graph_set_val(tp_graph *g, int idx, tp_tensor *t) {
  tp_tensor_retain(t);
  tp_tensor_release(g->nodes[idx].val);
  g->nodes[idx].val = t;
}

tp_status tp_graph_set_custom(tp_graph *g, int idx, const char *key, const char *value) {
  tp_node *n = &g->nodes[idx];
  char *v = tp_strdup(value);
  if (!v) return TP_ERR_OUT_OF_MEMORY;
  for (int i = 0; i < n->ncustom; i++)
    if (!strcmp(n->custom[i].key, key)) {
      tp_free(n->custom[i].value);
      n->custom[i].value = v;
      return TP_OK;
    }
  char *k = tp_strdup(key);
  if (!k || TP_ARRAY_RESERVE(n->custom, n->capcustom, n->ncustom + 1)) {
    tp_free(k);
    tp_free(v);
    return TP_ERR_OUT_OF_MEMORY;
  }
  n->custom[n->ncustom].key = k;
  n->custom[n->ncustom].value = v;
  n->ncustom++;
  return TP_OK;
}

const char *tp_graph_get_custom(const tp_graph *g, int idx, const char *key) {
  const tp_node *n = &g->nodes[idx];
  for (int i = 0; i < n->ncustom; i++)
    if (!strcmp(n->custom[i].key, key)) return n->custom[i].value;
  return NULL;
}

int tp_graph_output(const tp_graph *g) {
  for (int i = g->n - 1; i >= 0; i--)
    if (g->nodes[i].kind == TP_NODE_OUTPUT) return i;
  return -1;
}

int tp_graph_num_nodes(const tp_graph *g) { return g ? g->n : 0; }

int tp_graph_num_inputs(const tp_graph *g) {
  int k = 0;
  for (int i = 0; g && i < g->n; i++) k += g->nodes[i].kind == TP_NODE_PLACEHOLDER;
  return k;
}

int tp_graph_num_outputs(const tp_graph *g) {
  int o = g ? tp_graph_output(g) : -1;
  return o < 0 ? 0 : g->nodes[o].nargs;
}

const char *tp_graph_input_name(const tp_graph *g, int i) {
  for (int k = 0; g && k < g->n; k++)
    if (g->nodes[k].kind == TP_NODE_PLACEHOLDER && i-- == 0) return g->nodes[k].name;
  return NULL;
}

static int tensors_equal(const tp_tensor *a, const tp_tensor *b) {
  if (!a || !b) return a == b;
  tp_desc da, db;
  tp_desc_of(a, &da);
  tp_desc_of(b, &db);
  if (!tp_desc_equal(&da, &db)) return 0;
  int64_t n = tp_tensor_numel(a);
  for (int64_t i = 0; i < n; i++) {
    double x = tp_tensor_get_f64(a, i), y = tp_tensor_get_f64(b, i);
    if (x != y && !(x != x && y != y)) return 0;
  }
  return 1;
}

int tp_graph_equal(const tp_graph *a, const tp_graph *b) {
  if (a->n != b->n || a->nsubs != b->nsubs) return 0;
  for (int i = 0; i < a->nsubs; i++)
    if (strcmp(a->subs[i].name, b->subs[i].name) || !tp_graph_equal(a->subs[i].g, b->subs[i].g))
      return 0;
  for (int i = 0; i < a->n; i++) {
    const tp_node *x = &a->nodes[i], *y = &b->nodes[i];
    if (x->kind != y->kind || strcmp(x->name, y->name) || x->nargs != y->nargs) return 0;
    if (x->kind == TP_NODE_CALL && (x->op != y->op || !tp_attrs_equal(x->op, &x->attrs, &y->attrs)))
      return 0;
    if (x->kind != TP_NODE_OUTPUT && !tp_desc_equal(&x->desc, &y->desc)) return 0;
    if (x->kind == TP_NODE_GET_ATTR &&
        strcmp(x->target ? x->target : x->name, y->target ? y->target : y->name))
      return 0; /* a get_attr without target reads the attribute of its name */
    for (int k = 0; k < x->nargs; k++) {
      const tp_arg *p = &x->args[k], *q = &y->args[k];
      if (p->kind != q->kind) return 0;
      if (p->kind == TP_ARG_NODE && p->node != q->node) return 0;
      if (p->kind == TP_ARG_SCALAR &&
          (p->is_int != q->is_int ||
           memcmp(&p->scalar, &q->scalar, sizeof p->scalar) != 0))
        return 0;
    }
    if (x->ncustom != y->ncustom) return 0;
    for (int k = 0; k < x->ncustom; k++)
      if (strcmp(x->custom[k].key, y->custom[k].key) || strcmp(x->custom[k].value, y->custom[k].value))
        return 0;
    if (x->kind == TP_NODE_GET_ATTR && !tensors_equal(x->val, y->val)) return 0;
  }
  return 1;
}

/* Operand descriptors of a call node (scalars become weak 0-d descs). */
static tp_status arg_descs(const tp_graph *g, const tp_node *n, tp_desc *descs,
                           const tp_desc **dp) {
  for (int k = 0; k < n->nargs; k++) {
    const tp_arg *a = &n->args[k];
    dp[k] = NULL;
    if (a->kind == TP_ARG_NONE) continue;
    if (a->kind == TP_ARG_SCALAR) {
      memset(&descs[k], 0, sizeof descs[k]);
      descs[k].dtype = a->is_int ? TP_I64 : TP_F32;
      descs[k].weak = a->is_int ? 1 : 2;
    } else {
      descs[k] = g->nodes[a->node].desc;
    }
    dp[k] = &descs[k];
  }
  return TP_OK;
}

tp_status tp_graph_set_from(tp_graph *g, int idx, const char *from) {
  tp_node *n = &g->nodes[idx];
  char *f = NULL;
  if (from && strcmp(from, n->name) && !(f = tp_strdup(from))) return TP_ERR_OUT_OF_MEMORY;
  tp_free(n->from);
  n->from = f;
  return TP_OK;
}

tp_status tp_graph_copy(const tp_graph *g, tp_graph **out) {
  tp_graph *c;
  TP_TRY(tp_graph_new(&c));
  tp_status s = TP_OK;
  for (int i = 0; i < g->n && !s; i++) {
    const tp_node *n = &g->nodes[i];
    int idx;
    s = tp_graph_add_node(c, n->kind, n->name, n->op, n->nargs, n->args, &n->attrs, &n->desc, &idx);
    if (!s && n->target && !(c->nodes[idx].target = tp_strdup(n->target))) s = TP_ERR_OUT_OF_MEMORY;
    if (!s && n->from) s = tp_graph_set_from(c, idx, n->from);
    if (!s && n->kind == TP_NODE_GET_ATTR) tp_graph_set_val(c, idx, n->val); /* shared, immutable */
    for (int k = 0; k < n->ncustom && !s; k++)
      s = tp_graph_set_custom(c, idx, n->custom[k].key, n->custom[k].value);
  }
  c->next_id = g->next_id;
  for (int i = 0; i < g->nsubs && !s; i++) {
    tp_graph *sub = NULL;
    s = tp_graph_copy(g->subs[i].g, &sub);
    if (!s) s = tp_graph_add_subgraph(c, g->subs[i].name, sub);
  }
  if (s) {
    tp_graph_free(c);
    return s;
  }
  *out = c;
  return TP_OK;
}

tp_status tp_graph_verify(const tp_graph *g) {
  if (!g) return tp_fail(TP_ERR_INVALID_ARG, "graph: NULL graph");
  int out = -1;
  for (int i = 0; i < g->n; i++) {
    const tp_node *n = &g->nodes[i];
    if (n->kind == TP_NODE_OUTPUT) {
      if (out >= 0) return tp_fail(TP_ERR_INVALID_ARG, "graph: more than one output node");
      out = i;
    } else if (out >= 0) {
      return tp_fail(TP_ERR_INVALID_ARG, "graph: node %%%s comes after the output node", n->name);
    }
    if (n->nargs > TP_MAX_OPERANDS)
      return tp_fail(TP_ERR_INVALID_ARG, "graph: node %%%s has %d operands (at most %d)", n->name, n->nargs,
                     TP_MAX_OPERANDS);
    for (int k = 0; k < n->nargs; k++) {
      const tp_arg *a = &n->args[k];
      if (a->kind == TP_ARG_NODE && (a->node < 0 || a->node >= i))
        return tp_fail(TP_ERR_INVALID_ARG, "graph: operand %d of %%%s is not defined before it", k,
                       n->name);
      if (a->kind == TP_ARG_NODE && g->nodes[a->node].kind == TP_NODE_OUTPUT)
        return tp_fail(TP_ERR_INVALID_ARG, "graph: %%%s uses the output node", n->name);
      if (n->kind == TP_NODE_OUTPUT && a->kind != TP_ARG_NODE)
        return tp_fail(TP_ERR_INVALID_ARG, "graph: output operands must be nodes");
    }
    if (n->kind == TP_NODE_GET_ATTR && n->desc.ndim == TP_DESC_GRAPH &&
        !tp_graph_find_subgraph(g, n->target ? n->target : n->name))
      return tp_fail(TP_ERR_INVALID_ARG, "graph: get_attr %%%s names no subgraph \"%s\"", n->name,
                     n->target ? n->target : n->name);
    if (n->kind == TP_NODE_CALL && n->op == TP_OP_INVOKE) {
      const tp_node *sg = n->nargs >= 1 && n->args[0].kind == TP_ARG_NODE ? &g->nodes[n->args[0].node] : NULL;
      if (!sg || sg->kind != TP_NODE_GET_ATTR || sg->desc.ndim != TP_DESC_GRAPH)
        return tp_fail(TP_ERR_INVALID_ARG, "graph: invoke %%%s must name a subgraph first", n->name);
      const tp_graph *sub = tp_graph_find_subgraph(g, sg->target ? sg->target : sg->name);
      if (tp_graph_num_inputs(sub) != n->nargs - 1 || tp_graph_num_outputs(sub) != n->attrs.nresults)
        return tp_fail(TP_ERR_INVALID_ARG,
                       "graph: invoke %%%s passes %d inputs and expects %lld results; the subgraph "
                       "takes %d and returns %d",
                       n->name, n->nargs - 1, (long long)n->attrs.nresults, tp_graph_num_inputs(sub),
                       tp_graph_num_outputs(sub));
    }
    if (n->kind == TP_NODE_CALL && (n->op == TP_OP_COND || n->op == TP_OP_WHILE_LOOP))
      TP_TRY(tp_graph_verify_control(g, n));
    if (n->kind == TP_NODE_CALL && (tp_op_flags(n->op) & TP_OPF_OPAQUE)) {
      if (n->op == TP_OP_GETITEM &&
          (n->nargs != 1 || n->args[0].kind != TP_ARG_NODE ||
           !tp_op_is_tuple(g->nodes[n->args[0].node].op) ||
           g->nodes[n->args[0].node].kind != TP_NODE_CALL || n->attrs.result_index < 0 ||
           n->attrs.result_index >= tp_node_nresults(g, &g->nodes[n->args[0].node])))
        return tp_fail(TP_ERR_INVALID_ARG, "graph: getitem %%%s must select a result of a call_host, invoke, cond or while_loop",
                       n->name);
      if ((n->op == TP_OP_CALL_HOST || n->op == TP_OP_INVOKE) && (n->attrs.nresults < 1 || n->attrs.nresults > TP_MAX_OPERANDS))
        return tp_fail(TP_ERR_INVALID_ARG, "graph: call_host %%%s has %lld results (1..%d)", n->name,
                       (long long)n->attrs.nresults, TP_MAX_OPERANDS);
    } else if (n->kind == TP_NODE_CALL) {
      tp_desc descs[TP_MAX_OPERANDS], od;
      const tp_desc *dp[TP_MAX_OPERANDS];
      arg_descs(g, n, descs, dp);
      if (tp_op_infer(n->op, n->nargs, dp, &n->attrs, &od) != TP_OK)
        return tp_fail_context(TP_ERR_INVALID_ARG, "graph: node %%%s", n->name);
      if (!tp_desc_equal(&od, &n->desc)) {
        char b0[96], b1[96];
        return tp_fail(TP_ERR_INVALID_ARG, "graph: node %%%s is declared %s%s but %s gives %s%s",
                       n->name, tp_dtype_short(n->desc.dtype),
                       tp_shape_str(n->desc.ndim, n->desc.shape, b0, sizeof b0), tp_op_name(n->op),
                       tp_dtype_short(od.dtype), tp_shape_str(od.ndim, od.shape, b1, sizeof b1));
      }
    } else if (n->nargs && n->kind != TP_NODE_OUTPUT) {
      return tp_fail(TP_ERR_INVALID_ARG, "graph: %s node %%%s takes no operands",
                     tp_node_kind_name(n->kind), n->name);
    }
  }
  if (out < 0) return tp_fail(TP_ERR_INVALID_ARG, "graph: no output node");
  return TP_OK;
}

tp_status tp_node_operands(const tp_node *n, tp_operand_fn value_of, void *ctx, tp_tensor **args,
                           tp_tensor **scalars) {
  for (int k = 0; k < n->nargs && k < TP_MAX_OPERANDS; k++) args[k] = scalars[k] = NULL; /* release stays safe */
  if (n->nargs > TP_MAX_OPERANDS)
    return tp_fail(TP_ERR_INVALID_ARG, "node %%%s has %d operands (at most %d)", n->name, n->nargs,
                   TP_MAX_OPERANDS);
  for (int k = 0; k < n->nargs; k++) args[k] = scalars[k] = NULL;
  int any_float = 0;
  for (int k = 0; k < n->nargs; k++)
    if (n->args[k].kind == TP_ARG_NODE) {
      args[k] = value_of(ctx, n, k);
      if (args[k] && args[k]->dtype == TP_F32) any_float = 1;
    }
  for (int k = 0; k < n->nargs; k++) {
    const tp_arg *a = &n->args[k];
    if (a->kind == TP_ARG_SCALAR) {
      /* an integer literal beyond int64 (e.g. 9223372036854775807, which
       * rounds to 2^63 as a double) combines with a float tensor as the
       * float it is; with integer tensors tp_scalar refuses it */
      int64_t iv;
      int is_int = a->is_int && !(any_float && !tp_f64_to_i64(a->scalar, &iv));
      tp_status s = tp_scalar(a->scalar, is_int, &scalars[k]);
      if (s) {
        tp_node_operands_release(n, scalars);
        return s;
      }
      args[k] = scalars[k];
    }
  }
  return TP_OK;
}

void tp_node_operands_release(const tp_node *n, tp_tensor **scalars) {
  int m = n->nargs < TP_MAX_OPERANDS ? n->nargs : TP_MAX_OPERANDS;
  for (int k = 0; k < m; k++) {
    tp_tensor_release(scalars[k]);
    scalars[k] = NULL;
  }
}

/* tp_graph_run's operands: the values computed so far (ctx: per node). */
static tp_tensor *run_value(void *ctx, const tp_node *n, int k) {
  tp_tensor **vals = ctx;
  return vals[n->args[k].node];
}

/* control flow's branches and loop steps on the graph run */
static tp_status run_sub(void *ctx, const tp_node *n, int which, const tp_graph *sub, int nin,
                         tp_tensor *const *in, int max_out, tp_tensor **res, int *got, tp_tensor *const *into) {
  (void)ctx, (void)n, (void)which, (void)into;
  return tp_graph_run_ex(sub, 0, nin, in, max_out, res, got);
}
static tp_status run_sub_ref(void *ctx, const tp_node *n, int which, const tp_graph *sub, int nin,
                             tp_tensor *const *in, int max_out, tp_tensor **res, int *got, tp_tensor *const *into) {
  (void)ctx, (void)n, (void)which, (void)into;
  return tp_graph_run_ex(sub, 1, nin, in, max_out, res, got);
}

tp_status tp_graph_run(const tp_graph *g, int nin, tp_tensor *const *in, int max_out,
                       tp_tensor **outs, int *nout) {
  return tp_graph_run_ex(g, 0, nin, in, max_out, outs, nout);
}

tp_status tp_graph_run_ex(const tp_graph *g, int reference, int nin, tp_tensor *const *in,
                          int max_out, tp_tensor **outs, int *nout) {
  if (!g || !nout || (nin && !in) || (max_out && !outs))
    return tp_fail(TP_ERR_INVALID_ARG, "graph run: NULL argument");
  int nph = tp_graph_num_inputs(g), o = tp_graph_output(g);
  if (nin != nph)
    return tp_fail(TP_ERR_INVALID_ARG, "graph run: the graph takes %d inputs, got %d", nph, nin);
  if (o < 0) return tp_fail(TP_ERR_INVALID_ARG, "graph run: no output node");
  if (g->nodes[o].nargs > max_out)
    return tp_fail(TP_ERR_INVALID_ARG, "graph run: %d outputs do not fit in %d slots",
                   g->nodes[o].nargs, max_out);
  tp_tensor **vals = tp_alloc(sizeof(tp_tensor *) * (size_t)(g->n ? g->n : 1));
  tp_tensor ***tuples = tp_alloc(sizeof(tp_tensor **) * (size_t)(g->n ? g->n : 1));
  if (!vals || !tuples) {
    tp_free(vals);
    tp_free(tuples);
    return TP_ERR_OUT_OF_MEMORY;
  }
  memset(vals, 0, sizeof(tp_tensor *) * (size_t)g->n);
  memset(tuples, 0, sizeof(tp_tensor **) * (size_t)g->n);
  tp_status s = TP_OK;
  int pi = 0;
  int *last = tp_alloc(sizeof(int) * (size_t)(g->n ? g->n : 1)); /* last use of each value */
  if (!last) s = TP_ERR_OUT_OF_MEMORY;
  for (int i = 0; last && i < g->n; i++) {
    last[i] = i;
    for (int k = 0; k < g->nodes[i].nargs; k++)
      if (g->nodes[i].args[k].kind == TP_ARG_NODE) last[g->nodes[i].args[k].node] = i;
  }
  for (int i = 0; i < g->n && s == TP_OK; i++) {
    const tp_node *n = &g->nodes[i];
    if (i > 0) /* values whose last user was the previous node */
      for (int k = 0; k < g->nodes[i - 1].nargs; k++) {
        const tp_arg *a = &g->nodes[i - 1].args[k];
        if (a->kind == TP_ARG_NODE && last[a->node] == i - 1 && !(g->nodes[a->node].kind == TP_NODE_CALL &&
                                                                    tp_op_is_tuple(g->nodes[a->node].op))) {
          tp_tensor_release(vals[a->node]);
          vals[a->node] = NULL;
        }
      }
    switch (n->kind) {
      case TP_NODE_PLACEHOLDER: {
        tp_tensor *t = in[pi++];
        tp_desc d;
        if (!t) {
          s = tp_fail(TP_ERR_INVALID_ARG, "graph run: input %%%s is NULL", n->name);
          break;
        }
        tp_desc_of(t, &d);
        const char *dyn = tp_graph_get_custom(g, i, "dynamic");
        if (dyn && !strcmp(dyn, "true") && d.ndim == n->desc.ndim) /* any size, same rank */
          memcpy(d.shape, n->desc.shape, sizeof d.shape);
        if (!tp_desc_equal(&d, &n->desc)) {
          char b0[96], b1[96];
          s = tp_fail(TP_ERR_INVALID_ARG, "graph run: input %%%s is %s%s, the graph expects %s%s",
                      n->name, tp_dtype_short(d.dtype), tp_shape_str(d.ndim, d.shape, b0, sizeof b0),
                      tp_dtype_short(n->desc.dtype),
                      tp_shape_str(n->desc.ndim, n->desc.shape, b1, sizeof b1));
          break;
        }
        tp_tensor_retain(t);
        vals[i] = t;
        break;
      }
      case TP_NODE_GET_ATTR:
        if (n->desc.ndim == TP_DESC_GRAPH) break; /* a subgraph: read by invoke */
        if (!n->val) {
          s = tp_fail(TP_ERR_INVALID_ARG, "graph run: constant %%%s has no data", n->name);
          break;
        }
        tp_tensor_retain(n->val);
        vals[i] = n->val;
        break;
      case TP_NODE_CALL: {
        tp_tensor *args[TP_MAX_OPERANDS], *scalars[TP_MAX_OPERANDS];
        s = tp_node_operands(n, run_value, vals, args, scalars);
        if (s == TP_OK && n->op == TP_OP_CALL_HOST) {
          int nres = (int)n->attrs.nresults, got = 0;
          tuples[i] = tp_alloc(sizeof(tp_tensor *) * (size_t)nres);
          if (!tuples[i]) s = TP_ERR_OUT_OF_MEMORY;
          else memset(tuples[i], 0, sizeof(tp_tensor *) * (size_t)nres);
          if (!s) s = tp_host_invoke(n->attrs.host_fn, n->nargs, args, nres, tuples[i], &got);
          if (!s && got != nres)
            s = tp_fail(TP_ERR_HOST, "host function %lld returned %d results, the graph expects %d",
                        (long long)n->attrs.host_fn, got, nres);
          if (!s) {
            vals[i] = tuples[i][0];
            tp_tensor_retain(vals[i]);
          }
        } else if (s == TP_OK && n->op == TP_OP_INVOKE) {
          const tp_node *sg = &g->nodes[n->args[0].node];
          const tp_graph *sub = tp_graph_find_subgraph(g, sg->target ? sg->target : sg->name);
          int nres = (int)n->attrs.nresults, got = 0;
          tuples[i] = tp_alloc(sizeof(tp_tensor *) * (size_t)nres);
          if (!tuples[i]) s = TP_ERR_OUT_OF_MEMORY;
          else memset(tuples[i], 0, sizeof(tp_tensor *) * (size_t)nres);
          if (!s) s = tp_graph_run_ex(sub, reference, n->nargs - 1, args + 1, nres, tuples[i], &got);
          if (!s) {
            vals[i] = tuples[i][0];
            tp_tensor_retain(vals[i]);
          }
        } else if (s == TP_OK && (n->op == TP_OP_COND || n->op == TP_OP_WHILE_LOOP)) {
          int nres = tp_node_nresults(g, n);
          tuples[i] = tp_alloc(sizeof(tp_tensor *) * (size_t)nres);
          if (!tuples[i]) s = TP_ERR_OUT_OF_MEMORY;
          else memset(tuples[i], 0, sizeof(tp_tensor *) * (size_t)nres);
          if (!s) s = tp_control_run(g, n, reference ? run_sub_ref : run_sub, NULL, args, tuples[i]);
          if (!s) {
            vals[i] = tuples[i][0];
            tp_tensor_retain(vals[i]);
          }
        } else if (s == TP_OK && n->op == TP_OP_GETITEM) {
          vals[i] = tuples[n->args[0].node][n->attrs.result_index];
          tp_tensor_retain(vals[i]);
        } else if (s == TP_OK && reference) { /* the scalar oracle */
          s = tp_op_exec_ref(n->op, n->nargs, args, &n->attrs, &vals[i]);
        } else if (s == TP_OK) {
          s = tp_op_call(n->op, n->nargs, args, &n->attrs, &vals[i]);
        }
        if (s != TP_OK) tp_fail_context(s, "graph run: node %%%s", n->name);
        tp_node_operands_release(n, scalars);
        break;
      }
      case TP_NODE_OUTPUT:
        for (int k = 0; k < n->nargs; k++) {
          outs[k] = vals[n->args[k].node];
          tp_tensor_retain(outs[k]);
        }
        *nout = n->nargs;
        break;
      default: s = tp_fail(TP_ERR_INTERNAL, "graph run: bad node kind"); break;
    }
  }
  for (int i = 0; i < g->n; i++) {
    tp_tensor_release(vals[i]);
    if (tuples[i])
      for (int k = 0; k < tp_node_nresults(g, &g->nodes[i]); k++) tp_tensor_release(tuples[i][k]);
    tp_free(tuples[i]);
  }
  tp_free(vals);
  tp_free(tuples);
  tp_free(last);
  return s;
}
