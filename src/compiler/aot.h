/* aot.h - compiled training (AOT autograd): the joint trace, the
 * forward / backward partition, the compiled call's autograd node
 * (src/compiler/aot.c; docs/training.md). */
#ifndef TP_AOT_H
#define TP_AOT_H
#include "compiler.h"

/* What the joint trace learned besides its graph. */
typedef struct tp_aot_joint {
  int nfw;      /* the function's outputs (the joint graph's first outputs) */
  int gout;     /* the output that requires grad; -1: none (a plain graph) */
  int gnode;    /* the grad_out placeholder's node */
  int nleaf;    /* gradients after the outputs: one per leaf */
  int leaf_input[TP_MAX_OPERANDS];       /* the input it belongs to, or -1 */
  tp_tensor *leaf_param[TP_MAX_OPERANDS]; /* else the closed-over parameter (owned) */
  char why[200]; /* not compilable for training (then run eagerly), "" fine */
  /* nested regions differentiated on their own during the trace: their
   * compiled forward / backward (host functions the joint graph calls);
   * moves into the tp_aot built from it, else freed by tp_aot_joint_clear */
  struct tp_aot_nested *nested;
} tp_aot_joint;

/* Traces fn with autograd recording the proxies and, when one output
 * requires grad, its backward from a grad_out placeholder. A nested
 * compile region that a tensor requiring grad flows through is traced
 * jointly on its own, partitioned, and its two graphs compiled by its
 * fw_compiler / bw_compiler (else by backend b with bo); the joint graph
 * calls them as host functions (docs/training.md). */
tp_status tp_aot_trace(const tp_callable *fn, int nin, tp_tensor *const *in, const char *const *names,
                       int fullgraph, const tp_backend *b, const tp_backend_opts *bo,
                       tp_trace_result *r, tp_aot_joint *jt);
void tp_aot_joint_clear(tp_aot_joint *jt);

typedef struct tp_aot tp_aot;
/* Partitions the joint graph, compiles both graphs with backend b, runs the
 * forward on in and hands back the function's outputs (the one that
 * requires grad with its node). why: set (TP_OK, nothing built) when the
 * graph cannot be partitioned: the caller runs eagerly. */
tp_status tp_aot_build(const tp_graph *joint, tp_aot_joint *jt, const tp_backend *b,
                       const tp_backend_opts *bo, int nin, tp_tensor *const *in, int max_out,
                       tp_tensor **outs, int *nout, tp_aot **out, char *why, size_t nwhy);
tp_status tp_aot_run(tp_aot *a, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout);
/* Every parameter the plan reads still requires grad. */
int tp_aot_params_require_grad(const tp_aot *a);
void tp_aot_describe(const tp_aot *a, tp_buf *b);
const tp_graph *tp_aot_graph(const tp_aot *a, int backward);
void tp_aot_free(tp_aot *a);

#endif
