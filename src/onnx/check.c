/* check.c - the structural validity of a decoded ONNX graph, checked at load
 * as ONNX's checker does (onnx/checker.cc, check_graph), before any import:
 *
 *   - graph inputs have distinct names, and so do initializers (an
 *     initializer may share its name with a graph input: its default value;
 *     a subgraph's inputs and initializers may shadow enclosing values);
 *   - single static assignment: every non-empty node output names a value
 *     that nothing else defines, neither a graph input, an initializer, an
 *     earlier node's output, nor any of these in an enclosing graph;
 *   - topological order: every non-empty node input is defined before the
 *     node (in this graph or an enclosing one), so a cycle and an undefined
 *     input are refused (the decoder has already put the nodes in a
 *     topological order where one exists, as onnxruntime does: order.c; a
 *     subgraph reading an outer value that a later node writes is refused);
 *   - the same, recursively, for the subgraphs of GRAPH attributes (If's
 *     branches, Loop's and Scan's bodies), which see the values of their
 *     enclosing graphs defined before their node.
 *
 * Each failure is TP_ERR_PARSE, "onnx: invalid model: ..." naming the value
 * and the node. */
#include "import.h"
#include <stdio.h>

/* A set of names (open addressing), chained to the enclosing graph's. */
typedef struct scope {
  const char **slot;
  int cap, n;
  const struct scope *up;
} scope;

static uint32_t hash(const char *s) {
  uint32_t h = 2166136261u;
  while (*s) h = (h ^ (uint8_t)*s++) * 16777619u;
  return h;
}

static int has_here(const scope *sc, const char *name) {
  if (!sc->cap) return 0;
  for (uint32_t i = hash(name) & (uint32_t)(sc->cap - 1);; i = (i + 1) & (uint32_t)(sc->cap - 1)) {
    if (!sc->slot[i]) return 0;
    if (!strcmp(sc->slot[i], name)) return 1;
  }
}

static int has(const scope *sc, const char *name) {
  for (; sc; sc = sc->up)
    if (has_here(sc, name)) return 1;
  return 0;
}

static tp_status add(scope *sc, const char *name) {
  if ((sc->n + 1) * 2 > sc->cap) {
    int nc = sc->cap ? sc->cap * 2 : 64;
    const char **ns = tp_alloc(sizeof(char *) * (size_t)nc);
    if (!ns) return TP_ERR_OUT_OF_MEMORY;
    memset(ns, 0, sizeof(char *) * (size_t)nc);
    for (int i = 0; i < sc->cap; i++)
      if (sc->slot[i]) {
        uint32_t j = hash(sc->slot[i]) & (uint32_t)(nc - 1);
        while (ns[j]) j = (j + 1) & (uint32_t)(nc - 1);
        ns[j] = sc->slot[i];
      }
    tp_free(sc->slot);
    sc->slot = ns;
    sc->cap = nc;
  }
  uint32_t j = hash(name) & (uint32_t)(sc->cap - 1);
  while (sc->slot[j]) j = (j + 1) & (uint32_t)(sc->cap - 1);
  sc->slot[j] = name;
  sc->n++;
  return TP_OK;
}

/* The name (field 8) of a TensorProto, in md's arena; "" when it has none. */
static tp_status init_name(omodel *md, const tp_pb *t, const char **out) {
  tp_pb r = *t;
  tp_pb_field f;
  int k;
  *out = "";
  while ((k = tp_pb_next(&r, &f)) > 0)
    if (f.num == 8) {
      TP_TRY(tp_pb_need(&r, &f, TP_PB_LEN));
      char *s = tp_onnx_arena_str(md, f.data, f.len);
      if (!s) return TP_ERR_OUT_OF_MEMORY;
      *out = s;
    }
  return k < 0 ? (tp_status)-k : TP_OK;
}

static tp_status invalid(const char *where, const char *fmt, const char *a, const char *b) {
  char msg[512];
  snprintf(msg, sizeof msg, fmt, a, b);
  return tp_fail(TP_ERR_PARSE, "onnx: invalid model%s: %s", where, msg);
}

static tp_status check_graph(omodel *root, const omodel *g, const scope *up, const char *where);

static tp_status check_nodes(omodel *root, const omodel *g, scope *sc, const char *where) {
  for (int i = 0; i < g->nnodes; i++) {
    const onode *n = &g->nodes[i];
    for (int k = 0; k < n->nin; k++)
      if (*n->in[k] && !has(sc, n->in[k]))
        return invalid(where,
                       "input '%s' of node '%s' is not a graph input, an initializer nor an output of an "
                       "earlier node (undefined, or the nodes are not in topological order)",
                       n->in[k], n->name);
    for (int k = 0; k < n->nattrs; k++) {
      const attr *a = &n->attrs[k];
      if (!a->has_g) continue;
      omodel sub;
      char w[96];
      snprintf(w, sizeof w, " (in attribute '%.30s' of node '%.30s')", a->name, n->name);
      tp_status s = tp_onnx_decode_subgraph(root, &a->g, &sub);
      if (!s) s = check_graph(root, &sub, sc, w);
      tp_onnx_decoded_free(&sub);
      TP_TRY(s);
    }
    for (int k = 0; k < n->nout; k++) {
      if (!*n->out[k]) continue;
      if (has(sc, n->out[k]))
        return invalid(where, "value '%s' is defined twice (again as an output of node '%s'); a graph must be in "
                              "single static assignment form", n->out[k], n->name);
      TP_TRY(add(sc, n->out[k]));
    }
  }
  return TP_OK;
}

static tp_status check_graph(omodel *root, const omodel *g, const scope *up, const char *where) {
  scope sc = {NULL, 0, 0, up};
  scope inits = {NULL, 0, 0, NULL};
  tp_status s = TP_OK;
  for (int i = 0; !s && i < g->ninputs; i++) {
    const char *nm = g->inputs[i].name ? g->inputs[i].name : "";
    if (has_here(&sc, nm)) s = invalid(where, "graph input '%s' is declared twice%s", nm, "");
    else s = add(&sc, nm); /* a subgraph's inputs may shadow outer values, as in ONNX's checker */
  }
  for (int i = 0; !s && i < g->ninits; i++) {
    const char *nm;
    s = init_name(root, &g->inits[i], &nm);
    if (s) break;
    if (has_here(&inits, nm)) s = invalid(where, "initializer '%s' is declared twice%s", nm, "");
    else s = add(&inits, nm);
    if (!s && !has_here(&sc, nm)) s = add(&sc, nm);
  }
  if (!s) s = check_nodes(root, g, &sc, where);
  tp_free(sc.slot);
  tp_free(inits.slot);
  return s;
}

tp_status tp_onnx_check_graph(omodel *md) { return check_graph(md, md, NULL, ""); }
