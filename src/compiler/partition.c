/* partition.c - the forward / backward partition's choice of what to save
 * (docs/training.md "The partitioner"; the graphs themselves are built in
 * aot.c).
 *
 * The default is a min-cut, after AOT autograd's default partitioner
 * (PyTorch's min_cut_rematerialization_partition), written here by hand:
 * the forward part of the joint graph becomes a flow network in which
 * every node v is split into v_in -> v_out with the capacity of saving v
 * (its bytes; inputs and parameters 0: they are saved as references),
 * v_out -> u_in (infinite) for each reader u, v_out -> sink (infinite) when
 * a backward node reads v, and source -> v_in (infinite) for the inputs and
 * for the ops that must not run again in the backward: GEMMs, convs,
 * reductions, softmax / layer_norm and every other op that is not pointwise
 * or a view, and pointwise values that a GEMM of the backward reads
 * (directly or through views: the backward would write them out anyway, so
 * recomputing one is never free). A minimum cut is then a set of values to
 * save that separates what the forward must compute from what the backward
 * reads, with the fewest bytes; what lies on the sink side is recomputed in
 * the backward graph. Ties (cuts of equal bytes) go to values the forward
 * writes out anyway (read by a GEMM or other non-pointwise op), then to
 * values nearer the backward (fewer ops recomputed): each capacity is
 * bytes << 20 plus those small terms. Views are never saved (their source
 * is, and the view is recomputed for free).
 *
 * The max flow is Dinic's algorithm (BFS levels, DFS blocking flows). */
#include "partition.h"
#include <stdlib.h>
#include <string.h>

/* ---- the flow network ---- */
typedef struct flow_edge {
  int to, next;
  int64_t cap; /* residual */
} flow_edge;

struct tp_flow {
  int nv, ne, max_e;
  int *head, *level, *it, *queue;
  flow_edge *e;
};

tp_status tp_flow_new(int nvert, int max_edges, tp_flow **out) {
  *out = NULL;
  if (nvert < 2 || max_edges < 1) return tp_fail(TP_ERR_INVALID_ARG, "flow network: %d vertices, %d edges", nvert, max_edges);
  tp_flow *f = tp_alloc(sizeof *f);
  if (!f) return TP_ERR_OUT_OF_MEMORY;
  memset(f, 0, sizeof *f);
  f->nv = nvert;
  f->max_e = 2 * max_edges;
  f->head = tp_alloc(sizeof(int) * (size_t)nvert * 4);
  f->e = tp_alloc(sizeof(flow_edge) * (size_t)f->max_e);
  if (!f->head || !f->e) {
    tp_flow_free(f);
    return TP_ERR_OUT_OF_MEMORY;
  }
  f->level = f->head + nvert, f->it = f->head + 2 * nvert, f->queue = f->head + 3 * nvert;
  for (int v = 0; v < nvert; v++) f->head[v] = -1;
  *out = f;
  return TP_OK;
}

void tp_flow_free(tp_flow *f) {
  if (!f) return;
  tp_free(f->head);
  tp_free(f->e);
  tp_free(f);
}

tp_status tp_flow_edge(tp_flow *f, int u, int v, int64_t cap) {
  if (u < 0 || v < 0 || u >= f->nv || v >= f->nv || cap < 0)
    return tp_fail(TP_ERR_INVALID_ARG, "flow network: edge %d -> %d (capacity %lld) out of range", u, v, (long long)cap);
  if (f->ne + 2 > f->max_e) return tp_fail(TP_ERR_INTERNAL, "flow network: more than %d edges", f->max_e / 2);
  if (cap > TP_FLOW_INF) cap = TP_FLOW_INF;
  f->e[f->ne] = (flow_edge){v, f->head[u], cap};
  f->head[u] = f->ne++;
  f->e[f->ne] = (flow_edge){u, f->head[v], 0}; /* the reverse (residual) edge */
  f->head[v] = f->ne++;
  return TP_OK;
}

static int flow_bfs(tp_flow *f, int s, int t) {
  for (int v = 0; v < f->nv; v++) f->level[v] = -1;
  int qh = 0, qt = 0;
  f->level[s] = 0;
  f->queue[qt++] = s;
  while (qh < qt) {
    int v = f->queue[qh++];
    for (int k = f->head[v]; k >= 0; k = f->e[k].next)
      if (f->e[k].cap > 0 && f->level[f->e[k].to] < 0) {
        f->level[f->e[k].to] = f->level[v] + 1;
        f->queue[qt++] = f->e[k].to;
      }
  }
  return f->level[t] >= 0;
}

/* One augmenting path in the level graph, iteratively (no recursion: the
 * path can be as long as the graph). Returns the flow pushed. */
static int64_t flow_path(tp_flow *f, int s, int t) {
  int *path = f->queue; /* edge indices; the BFS queue is free now */
  int depth = 0, v = s;
  for (;;) {
    if (v == t) {
      int64_t push = TP_FLOW_INF * 2;
      for (int i = 0; i < depth; i++)
        if (f->e[path[i]].cap < push) push = f->e[path[i]].cap;
      for (int i = 0; i < depth; i++) { /* an infinite edge stays infinite */
        flow_edge *e = &f->e[path[i]], *r = &f->e[path[i] ^ 1];
        if (e->cap < TP_FLOW_INF) e->cap -= push;
        r->cap = r->cap > TP_FLOW_INF - push ? TP_FLOW_INF : r->cap + push;
      }
      return push;
    }
    int k = f->it[v];
    while (k >= 0 && !(f->e[k].cap > 0 && f->level[f->e[k].to] == f->level[v] + 1)) k = f->e[k].next;
    f->it[v] = k;
    if (k >= 0) {
      path[depth++] = k;
      v = f->e[k].to;
      continue;
    }
    /* dead end: retreat and skip the edge that led here */
    f->level[v] = -1;
    if (!depth) return 0;
    int back = path[--depth];
    v = f->e[back ^ 1].to;
    f->it[v] = f->e[f->it[v]].next;
  }
}

int64_t tp_flow_max(tp_flow *f, int s, int t) {
  int64_t total = 0;
  if (s == t) return 0;
  while (flow_bfs(f, s, t)) {
    for (int v = 0; v < f->nv; v++) f->it[v] = f->head[v];
    int64_t p;
    while ((p = flow_path(f, s, t)) > 0) {
      total += p;
      if (total >= TP_FLOW_INF) return TP_FLOW_INF;
    }
  }
  return total;
}

void tp_flow_source_side(const tp_flow *f, int s, unsigned char *side) {
  memset(side, 0, (size_t)f->nv);
  int *q = f->queue, qh = 0, qt = 0;
  side[s] = 1;
  q[qt++] = s;
  while (qh < qt) {
    int v = q[qh++];
    for (int k = f->head[v]; k >= 0; k = f->e[k].next)
      if (f->e[k].cap > 0 && !side[f->e[k].to]) side[f->e[k].to] = 1, q[qt++] = f->e[k].to;
  }
}

/* ---- the policy ---- */
tp_status tp_partition_policy_get(tp_partition_policy *p) {
  const char *e = getenv("TP_PARTITIONER");
  *p = TP_PARTITION_MINCUT;
  if (!e || !*e || !strcmp(e, "mincut") || !strcmp(e, "min-cut")) return TP_OK;
  if (!strcmp(e, "rule")) {
    *p = TP_PARTITION_RULE;
    return TP_OK;
  }
  return tp_fail(TP_ERR_VALUE,
                 "TP_PARTITIONER='%.40s' is not a partitioner: give 'rule' (the old rule) or 'mincut' (the "
                 "default), or leave it unset",
                 e);
}

int tp_partition_recomputable(const tp_node *n) {
  if (n->kind != TP_NODE_CALL) return 0;
  if (n->op == TP_OP_WHERE) return 1;
  int f = tp_op_flags(n->op);
  if (f & (TP_OPF_REDUCE | TP_OPF_OPAQUE)) return 0;
  return (f & (TP_OPF_UNARY | TP_OPF_BINARY | TP_OPF_VIEW)) != 0;
}

int64_t tp_partition_bytes(const tp_desc *d) {
  if (d->ndim < 0) return 0;
  for (int i = 0; i < d->ndim; i++)
    if (d->shape[i] < 0) return -1; /* not known */
  int64_t n = tp_shape_numel(d->ndim, d->shape), r;
  return __builtin_mul_overflow(n, (int64_t)tp_dtype_size(d->dtype), &r) ? INT64_MAX : r;
}

static int is_view(const tp_node *n) { return n->kind == TP_NODE_CALL && (tp_op_flags(n->op) & TP_OPF_VIEW); }
/* pointwise (fused into its reader or producer by stax) */
static int is_pointwise(const tp_node *n) { return tp_partition_recomputable(n) && !is_view(n); }

tp_status tp_partition_mincut(const tp_graph *jg, const int *tan, const int *ext, int gnode, int *rc,
                              const char **why_not) {
  int n = jg->n;
  *why_not = "internal";
  for (int i = 0; i < n; i++) rc[i] = 0;
  /* per node: its readers (CSR), distance to the backward, flags */
  int nedge = 0;
  for (int i = 0; i < n; i++)
    if (jg->nodes[i].kind == TP_NODE_CALL) nedge += jg->nodes[i].nargs;
  int *ustart = tp_alloc(sizeof(int) * ((size_t)n * 4 + 1 + (size_t)nedge));
  unsigned char *side = tp_alloc((size_t)n * 2 + 2);
  if (!ustart || !side) {
    tp_free(ustart), tp_free(side);
    return TP_ERR_OUT_OF_MEMORY;
  }
  int *dist = ustart + n + 1, *mat_bw = dist + n, *mat_fw = mat_bw + n, *users = mat_fw + n;
  memset(ustart, 0, sizeof(int) * ((size_t)n + 1));
  for (int i = 0; i < n; i++) {
    const tp_node *m = &jg->nodes[i];
    if (m->kind != TP_NODE_CALL) continue;
    for (int k = 0; k < m->nargs; k++)
      if (m->args[k].kind == TP_ARG_NODE) ustart[m->args[k].node + 1]++;
  }
  for (int i = 0; i < n; i++) ustart[i + 1] += ustart[i];
  {
    int *fill = dist; /* scratch before dist is computed */
    for (int i = 0; i < n; i++) fill[i] = ustart[i];
    for (int i = 0; i < n; i++) {
      const tp_node *m = &jg->nodes[i];
      if (m->kind != TP_NODE_CALL) continue;
      for (int k = 0; k < m->nargs; k++)
        if (m->args[k].kind == TP_ARG_NODE) users[fill[m->args[k].node]++] = i;
    }
  }
  /* distance (in ops) from each forward node to the nearest backward reader,
   * and whether a non-pointwise op reads it in the backward (through views)
   * or in the forward: readers come later in the list, so one backward scan */
  for (int i = n - 1; i >= 0; i--) {
    dist[i] = tan[i] ? 0 : 1 << 20;
    mat_bw[i] = mat_fw[i] = 0;
    if (tan[i]) continue;
    for (int k = ustart[i]; k < ustart[i + 1]; k++) {
      int u = users[k];
      const tp_node *un = &jg->nodes[u];
      if (dist[u] + 1 < dist[i]) dist[i] = dist[u] + 1;
      if (tan[u]) {
        if (!is_pointwise(un) && !(tp_op_flags(un->op) & TP_OPF_REDUCE) && !is_view(un)) mat_bw[i] = 1;
      } else if (is_view(un)) {
        mat_bw[i] |= mat_bw[u], mat_fw[i] |= mat_fw[u];
      } else if (!is_pointwise(un)) {
        mat_fw[i] = 1;
      }
    }
  }
  /* the network: source 0, sink 1, node i's in 2 + 2i, out 3 + 2i */
  tp_flow *f = NULL;
  tp_status s = tp_flow_new(2 * n + 2, 3 * n + nedge + 1, &f);
  enum { SRC = 0, SNK = 1 };
  for (int i = 0; i < n && !s; i++) {
    const tp_node *m = &jg->nodes[i];
    if (tan[i] || i == gnode || m->kind == TP_NODE_OUTPUT) continue;
    int vin = 2 + 2 * i, vout = 3 + 2 * i;
    int64_t cap;
    if (ext[i] >= 0) {
      s = tp_flow_edge(f, SRC, vin, TP_FLOW_INF);
      cap = 0; /* an input or parameter: saved as a reference */
    } else if (m->kind != TP_NODE_CALL) {
      cap = TP_FLOW_INF; /* a constant: copied into the backward */
    } else if (is_view(m) || m->op == TP_OP_CALL_HOST) {
      cap = TP_FLOW_INF; /* saved as its source (a view), or as its getitems */
      if (!tp_partition_recomputable(m)) s = tp_flow_edge(f, SRC, vin, TP_FLOW_INF);
    } else {
      if (!tp_partition_recomputable(m) || mat_bw[i]) s = tp_flow_edge(f, SRC, vin, TP_FLOW_INF);
      int64_t b = tp_partition_bytes(&m->desc);
      if (b < 0) { /* a size not known here (a symbolic dim): the caller uses the rule */
        *why_not = "a value of unknown size";
        tp_flow_free(f);
        tp_free(ustart);
        tp_free(side);
        return TP_OK;
      }
      if (b > ((int64_t)1 << 40)) b = (int64_t)1 << 40; /* keeps bytes << 20 below TP_FLOW_INF */
      int d = dist[i] > 4095 ? 4095 : dist[i];
      cap = (b << 20) + (mat_fw[i] ? 0 : 4096) + d;
    }
    if (!s) s = tp_flow_edge(f, vin, vout, cap);
    int to_sink = 0;
    for (int k = ustart[i]; k < ustart[i + 1] && !s; k++) {
      int u = users[k];
      if (tan[u]) to_sink = 1;
      else s = tp_flow_edge(f, vout, 2 + 2 * u, TP_FLOW_INF);
    }
    if (!s && to_sink) s = tp_flow_edge(f, vout, SNK, TP_FLOW_INF);
  }
  int64_t flow = s ? 0 : tp_flow_max(f, SRC, SNK);
  if (!s && flow >= TP_FLOW_INF) *why_not = "no finite cut";
  if (!s && flow < TP_FLOW_INF) {
    *why_not = NULL;
    tp_flow_source_side(f, SRC, side);
    for (int i = 0; i < n; i++) {
      const tp_node *m = &jg->nodes[i];
      if (tan[i] || ext[i] >= 0 || m->kind == TP_NODE_OUTPUT || m->kind == TP_NODE_PLACEHOLDER) continue;
      rc[i] = !side[2 + 2 * i];
    }
  }
  tp_flow_free(f);
  tp_free(ustart);
  tp_free(side);
  return s;
}
