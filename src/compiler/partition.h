/* partition.h - which forward values compiled training saves for the
 * backward graph and which it recomputes there (src/compiler/partition.c;
 * docs/training.md "The partitioner"). aot.c builds the two graphs from
 * the choice made here. */
#ifndef TP_PARTITION_H
#define TP_PARTITION_H
#include "../graph/graph.h"

/* ---- a max-flow network (Dinic's algorithm, written by hand) ---- */
typedef struct tp_flow tp_flow;
#define TP_FLOW_INF ((int64_t)1 << 60)
tp_status tp_flow_new(int nvert, int max_edges, tp_flow **out);
void tp_flow_free(tp_flow *f);
/* A directed edge u -> v of capacity cap (>= 0; TP_FLOW_INF: never cut). */
tp_status tp_flow_edge(tp_flow *f, int u, int v, int64_t cap);
/* The maximum flow from s to t (= the minimum cut's capacity; >= TP_FLOW_INF
 * when every cut crosses an infinite edge). */
int64_t tp_flow_max(tp_flow *f, int s, int t);
/* After tp_flow_max: side[v] = 1 for the vertices reachable from s in the
 * residual network (the source side of the minimum cut nearest to s). */
void tp_flow_source_side(const tp_flow *f, int s, unsigned char *side);

/* ---- the policy ---- */
typedef enum { TP_PARTITION_MINCUT = 0, TP_PARTITION_RULE = 1 } tp_partition_policy;
/* TP_PARTITIONER=rule selects the old rule (recompute pointwise and view
 * ops that no GEMM reads, save the rest); unset, empty, "mincut" or
 * "min-cut" the min-cut; any other value is TP_ERR_VALUE naming it. */
tp_status tp_partition_policy_get(tp_partition_policy *p);

/* A forward op cheap enough to recompute in the backward graph (pointwise,
 * where, views). */
int tp_partition_recomputable(const tp_node *n);
/* Bytes of a value of this desc (0 for a non-tensor, -1 for a dim not
 * known, INT64_MAX past it). */
int64_t tp_partition_bytes(const tp_desc *d);

/* The min-cut choice over the joint graph jg. tan[i]: node i depends on
 * grad_out (a backward node); ext[i] >= 0: an input or a parameter that
 * requires grad (saved as a reference: free). Sets rc[i] = 1 for each forward
 * node the backward recomputes (when the backward needs it), 0 for one the
 * forward computes (saved when the backward reads it). *why_not: NULL, or
 * why there is no cut to take (no finite cut, a value of unknown size): the
 * caller then uses the rule. */
tp_status tp_partition_mincut(const tp_graph *jg, const int *tan, const int *ext, int gnode, int *rc,
                              const char **why_not);

#endif
