/* graph.h - the Graph IR: a list of nodes in topological order.
 *
 * Node kinds follow the seed's tracer: placeholder (an input), get_attr (a
 * constant tensor owned by the graph), call_function (an operator from
 * ops.def), output (the returned values). Operands are node references or
 * immediate scalars (weak numbers such as the 1.5 in x * 1.5). */
#ifndef TP_GRAPH_H
#define TP_GRAPH_H
#include "../ops/ops.h"

typedef enum tp_node_kind {
  TP_NODE_PLACEHOLDER,
  TP_NODE_CALL,
  TP_NODE_GET_ATTR,
  TP_NODE_OUTPUT,
  TP_NODE_KIND_COUNT
} tp_node_kind;
const char *tp_node_kind_name(tp_node_kind k);

typedef enum tp_arg_kind { TP_ARG_NODE, TP_ARG_SCALAR, TP_ARG_NONE } tp_arg_kind;
typedef struct tp_arg {
  tp_arg_kind kind;
  int node;        /* TP_ARG_NODE: index into g->nodes */
  double scalar;   /* TP_ARG_SCALAR */
  int is_int;      /* TP_ARG_SCALAR: printed without a point */
} tp_arg;

/* node.meta.custom: string keys and string values, kept in insertion order. */
typedef struct tp_kv { char *key; char *value; } tp_kv;

typedef struct tp_node {
  tp_node_kind kind;
  char *name;          /* unique; "x", "w", "3" (printed as %x, %3) */
  tp_op op;            /* TP_NODE_CALL */
  int nargs;
  tp_arg *args;
  tp_attrs attrs;
  tp_desc desc;        /* meta: shape and dtype (not for output) */
  tp_tensor *val;      /* meta val: sample value (capture) or the constant
                          (get_attr); owned reference, may be NULL */
  char *target;        /* get_attr: attribute name */
  int ncustom, capcustom;
  tp_kv *custom;
  char *from;          /* the node of the captured graph a pass made this one
                          from (a 1x1 conv rewritten as a GEMM, a decomposed
                          softmax); NULL: it is that node (its name). Not
                          printed: explain()'s kernel_nodes reports it */
} tp_node;

/* The captured graph's name of the node n stands for (tp_node.from). */
static inline const char *tp_node_origin(const tp_node *n) { return n->from ? n->from : n->name; }

/* A child graph (nested_compile_region), referenced by get_attr nodes whose
 * target is its name and whose desc.ndim is TP_DESC_GRAPH. */
#define TP_DESC_GRAPH (-1)
typedef struct tp_subgraph { char *name; tp_graph *g; } tp_subgraph;

struct tp_graph {
  int n, cap;
  tp_node *nodes;
  int next_id;         /* for fresh numeric names */
  int nsubs, capsubs;
  tp_subgraph *subs;   /* owned */
  int *name_ix;        /* open-addressing hash of node names -> index + 1, kept by
                          tp_graph_add_node (NULL below 32 nodes: tp_graph_find scans);
                          an entry past n (nodes dropped) or naming another node is skipped */
  int name_cap, name_used; /* its size (a power of two) and entries (< cap / 2) */
};

tp_status tp_graph_new(tp_graph **out);
/* Append a node; *idx receives its index. name NULL = next number. args
 * copied. */
tp_status tp_graph_add_node(tp_graph *g, tp_node_kind kind, const char *name,
                            tp_op op, int nargs, const tp_arg *args,
                            const tp_attrs *attrs, const tp_desc *desc, int *idx);
/* Set node meta val (retains t; releases the previous one). */
void tp_graph_set_val(tp_graph *g, int idx, tp_tensor *t);
tp_status tp_graph_set_custom(tp_graph *g, int idx, const char *key, const char *value);
/* Set node idx's tp_node.from (a copy; NULL or its own name clears it). */
tp_status tp_graph_set_from(tp_graph *g, int idx, const char *from);
const char *tp_graph_get_custom(const tp_graph *g, int idx, const char *key);
int tp_graph_find(const tp_graph *g, const char *name);
/* After setting a node's name directly (nodes[i].name): the name index
 * follows. */
void tp_graph_names_changed(tp_graph *g);
/* Index of the output node, -1 if none. */
int tp_graph_output(const tp_graph *g);
/* Structural equality (kinds, names, ops, args, attrs, descs, custom and
 * constant values): what the print/parse round trip must preserve. */
int tp_graph_equal(const tp_graph *a, const tp_graph *b);
/* Adds a child graph under name (ownership of sub moves to g, also on
 * failure). */
tp_status tp_graph_add_subgraph(tp_graph *g, const char *name, tp_graph *sub);
tp_graph *tp_graph_find_subgraph(const tp_graph *g, const char *name);
/* Drops the nodes from index n on and the subgraphs from index nsubs on
 * (an importer undoing a failed attempt; nothing before them may refer to
 * them). */
void tp_graph_truncate(tp_graph *g, int n, int nsubs);
/* tp_graph_run; reference: call nodes run on the scalar reference kernels
 * (tp_op_exec_ref), the oracle of the `reference` backend. */
tp_status tp_graph_run_ex(const tp_graph *g, int reference, int nin, tp_tensor *const *in,
                          int max_out, tp_tensor **outs, int *nout);
/* A deep copy; constant tensors are shared (they are immutable). */
tp_status tp_graph_copy(const tp_graph *g, tp_graph **out);

/* The operand tensors of node n, to run its op (the graph run, constant
 * folding, the executor's op kernels):
 *   TP_ARG_NODE    args[k] = value_of(ctx, n, k): the caller's tensor for
 *                  operand k (borrowed; NULL when there is none, e.g. a
 *                  subgraph reference read by invoke)
 *   TP_ARG_SCALAR  args[k] = scalars[k] = a new 0-d tensor (tp_scalar, a
 *                  weak number: the 1.5 of x * 1.5), owned by scalars[k]
 *   TP_ARG_NONE    args[k] = NULL
 * args and scalars hold at least n->nargs (<= TP_MAX_OPERANDS) entries;
 * entries past nargs are not touched. After the op ran (or failed), call
 * tp_node_operands_release(n, scalars). On failure (more than
 * TP_MAX_OPERANDS operands, out of memory) the scalars made so far are
 * released already, scalars[0..nargs) are NULL and the status is returned;
 * calling the release then is harmless. */
typedef tp_tensor *(*tp_operand_fn)(void *ctx, const tp_node *n, int k);
tp_status tp_node_operands(const tp_node *n, tp_operand_fn value_of, void *ctx, tp_tensor **args,
                           tp_tensor **scalars);
void tp_node_operands_release(const tp_node *n, tp_tensor **scalars);

/* ---- control flow (control.c): cond and while_loop ----
 * Operand k of n as a child graph (NULL when it names none). */
const tp_graph *tp_node_subgraph(const tp_graph *g, const tp_node *n, int k);
/* The structural rules of a cond / while_loop node (called by
 * tp_graph_verify): a one-value bool/int predicate, subgraphs that take the
 * operands' types, branches of one signature, a body that keeps the carried
 * types. Errors name the node and the mismatch. */
tp_status tp_graph_verify_control(const tp_graph *g, const tp_node *n);
/* Runs subgraph `sub` (operand `which` of n) on in[0..nin): the graph run
 * runs it eagerly, the plan runs its compiled sub-plan. Fills res[0..*got)
 * with new references. into: NULL, or max_out tensors the results may be
 * written into (a loop's spare carried buffers: the plan writes into them
 * and returns them; the graph run ignores them). */
typedef tp_status (*tp_control_runner)(void *ctx, const tp_node *n, int which, const tp_graph *sub, int nin,
                                       tp_tensor *const *in, int max_out, tp_tensor **res, int *got,
                                       tp_tensor *const *into);
/* The number of results of a tuple node n: attrs.nresults, plus a
 * while_loop's scan outputs (its body's outputs past the carried ones). */
int tp_node_nresults(const tp_graph *g, const tp_node *n);
/* One run of control node n with operand tensors args (n->nargs of them;
 * the subgraph references NULL): reads the predicate / cond result and
 * calls run for the chosen branch or each step. res: tp_node_nresults new
 * tensors (the caller's array starts zeroed). */
tp_status tp_control_run(const tp_graph *g, const tp_node *n, tp_control_runner run, void *ctx,
                         tp_tensor *const *args, tp_tensor **res);
/* *out = (t != 0) for a one-value tensor; else an error naming what. */
tp_status tp_control_flag(tp_tensor *t, const char *what, int *out);
/* Ops whose results are a tuple read by getitem. */
static inline int tp_op_is_tuple(tp_op op) {
  return op == TP_OP_CALL_HOST || op == TP_OP_INVOKE || op == TP_OP_COND || op == TP_OP_WHILE_LOOP;
}

#endif
