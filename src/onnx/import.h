/* import.h - private to the ONNX importer (src/onnx/): the decoded model,
 * the import state and the helpers every converter file uses.
 *
 * The importer runs in two steps:
 *   decode.c     ModelProto bytes -> omodel (nodes, attributes, value infos;
 *                tensors stay as readers into the caller's bytes)
 *   import.c     omodel -> Graph IR: the value table (ONNX name -> ref),
 *                constant folding, graph inputs and outputs, and the
 *                dispatch of each node to its converter
 *   node.c       a node's attributes and constant operands (axes, shapes)
 *   onnx_*.c     the converters, one file per operator family
 *   onnx_ops.def the converter table: one row per ONNX op type
 * docs/onnx.md ("Adding an operator") says how to add one. */
#ifndef TP_ONNX_IMPORT_H
#define TP_ONNX_IMPORT_H
#include "../core/buf.h"
#include "onnx.h"
#include "pb.h"
#include "tensor_pb.h"

/* ---- the decoded model (decode.c) ---- */

/* AttributeProto.AttributeType values the converters read. */
enum { A_FLOAT = 1, A_INT = 2, A_STRING = 3, A_TENSOR = 4, A_GRAPH = 5, A_FLOATS = 6, A_INTS = 7, A_STRINGS = 8 };

typedef struct attr {
  char *name;
  int type;              /* AttributeProto.AttributeType */
  double f;
  int64_t i;
  char *s;
  int has_t;
  tp_pb t;               /* TENSOR: a reader over the TensorProto */
  int has_g;
  tp_pb g;               /* GRAPH: a reader over the GraphProto (If's branches) */
  float *floats;         /* FLOATS, tp_alloc'ed (freed by tp_onnx_decoded_free) */
  size_t nfloats;
  int64_t *ints;         /* INTS, likewise */
  size_t nints;
  char **strings;        /* STRINGS: tp_alloc'ed array of arena strings */
  int nstrings, capstrings;
  int used;              /* read by the converter (the rest are rejected) */
} attr;

typedef struct onode {
  char *name, *op, *domain;
  int nin, nout, nattrs;
  char **in, **out;      /* "" for an absent optional input or output */
  attr *attrs;
} onode;

typedef struct vinfo {
  char *name;
  int is_tensor, elem, has_shape, ndim;
  int64_t dims[TP_MAX_DIMS];
  const char *sym;       /* first symbolic or unknown dim's name, NULL if none */
  const char *dim_param[TP_MAX_DIMS]; /* per dim: its dim_param, "?" when unknown, NULL when fixed */
  int too_many_dims;
} vinfo;

typedef struct oblk oblk; /* an arena block */

/* Strings live in an arena until the load ends; the arrays are tp_alloc'ed
 * and grown with TP_ARRAY_RESERVE. tp_onnx_decoded_free releases both. */
typedef struct omodel {
  oblk *arena;
  int64_t opset;         /* the default domain's (ai.onnx) */
  onode *nodes; int nnodes, capnodes;
  vinfo *inputs; int ninputs, capinputs;
  vinfo *outputs; int noutputs, capoutputs;
  tp_pb *inits; int ninits, capinits; /* readers over the TensorProtos */
} omodel;

/* Decodes bytes into *md (zeroed by the caller); checks the opset. */
tp_status tp_onnx_decode(omodel *md, const void *bytes, size_t len);
void tp_onnx_decoded_free(omodel *md);
/* Decodes a subgraph (an If branch) into *out (its strings go to parent's
 * arena, so they live as long as the parent's; free *out's arrays with
 * tp_onnx_decoded_free). */
tp_status tp_onnx_decode_subgraph(omodel *parent, const tp_pb *g, omodel *out);
/* check.c: ONNX's structural rules (distinct input and initializer names,
 * single static assignment, topological order, no undefined inputs), for
 * the graph and its subgraphs; TP_ERR_PARSE "onnx: invalid model: ..." with
 * the names. Called by tp_onnx_decode. */
tp_status tp_onnx_check_graph(omodel *md);
/* order.c: puts g's nodes in a stable topological order (by their explicit
 * inputs; nodes on a cycle last, in their order); called by the decoder for
 * every graph and subgraph, before check.c. TP_ERR_OUT_OF_MEMORY or TP_OK. */
tp_status tp_onnx_sort_nodes(omodel *g);
/* n zeroed bytes that live until tp_onnx_decoded_free; NULL when out of memory. */
void *tp_onnx_arena_alloc(omodel *md, size_t n);
/* Frees the blocks allocated since the arena's head was `mark`. */
void tp_onnx_arena_release(omodel *md, oblk *mark);
/* A NUL-terminated copy of p[0..n) in the arena. */
char *tp_onnx_arena_str(omodel *md, const void *p, size_t n);

/* ---- values (import.c) ---- */

/* What an ONNX value is bound to: a graph node, a constant tensor
 * (initializers and anything computed only from constants, folded at load
 * time), a scalar literal made by a converter, or nothing (an absent
 * optional). A constant becomes a get_attr node only when a node uses it. */
enum { R_NONE, R_NODE, R_CONST, R_SCALAR };
typedef struct ref {
  int kind;
  int node;              /* R_NODE */
  int c;                 /* R_CONST: index in the constant pool */
  double s;              /* R_SCALAR */
  int is_int;
} ref;

/* wide: for a backend import (imp.keep_f16_weights, set for a backend: float16
 * activations stay float32 between nodes too), the float32 value that r
 * (a node of graph wide_g, `rounded`) rounds to float16 / bfloat16 at a
 * node's output; later nodes read it instead of widening r again. Valid
 * only while r is still that node of the graph being built. */
typedef struct entry { char *name; ref r; ref wide, rounded; const tp_graph *wide_g; } entry;

#define TP_ONNX_MAX_RAGGED 16
typedef struct imp {
  omodel md;             /* the decoded model */
  tp_graph *g;
  /* constant pool: tensors, and the get_attr node of each (-1: none yet) */
  tp_tensor **consts; int nconsts, capconsts;
  int *const_node; int capconst_node;
  /* name -> ref (open addressing) */
  entry *tab; int tabcap, tabn;
  /* inputs bound to values (tp_onnx_load_with) */
  int nbind; const char *const *bind_names; tp_tensor *const *bind_vals;
  /* run-time shapes of graph inputs (tp_onnx_model): in_desc[i] for
   * md.inputs[i], NULL = the declared shape (which must then be fixed) */
  const tp_desc *const *in_desc;
  /* a converter needed the value of something computed from these graph
   * inputs (bits by runtime input: the position among the inputs without
   * an initializer, as tp_onnx_model numbers them, at most 64): set when
   * the import fails with "... must be a constant"; tp_onnx_model binds
   * them and imports again (a value specialization) */
  uint64_t need;
  int *input_node;       /* md.inputs[i] -> its placeholder node, -1 if none */
  int *input_ord;        /* md.inputs[i] -> its runtime input position (need's bit), -1: an initializer */
  onode *cur;            /* node being converted (errors) */
  const char *bad_attr;  /* an attribute read with the wrong type */
  int keep_f16_weights;  /* a MatMul's float16 constant B stays float16 behind a cast (issue 17) */
  /* initializers imported as placeholders (trainable parameters, fine-tuning:
   * tp_onnx_model_set_trainable), after the runtime inputs in this order;
   * train_needed[k] is set when a converter needed parameter k's value as a
   * constant (it then cannot be trained) */
  int ntrain;
  const char *const *train_names;
  int *train_node;
  uint8_t *train_needed;
  /* a float16 / bfloat16 initializer is trainable (its parameter is a float32
   * master copy): the graph computes in float32, float16 values widened
   * (exact) and nothing rounded to float16 / bfloat16, Cast and CastLike to
   * them included, so the tape (float32 only) reaches the parameters */
  int train_f32;
  const struct tp_onnx_cut *cut; /* a part of the model (model.c's split at a run-time node), NULL: all */
  /* the scan outputs of a Loop in the plan whose step count is known only
   * after the run (it ends on data, or on a count fed at run time;
   * onnx_cond.c): getitem nodes declared with 0 rows that the plan hands out
   * at their real length, so only graph outputs may read them
   * (tp_onnx_ragged_check; a reader makes the int inputs the loop reads
   * value inputs, so that it unrolls at import). loop: the while_loop node */
  struct { int node, loop_node; const char *loop, *value; } ragged[TP_ONNX_MAX_RAGGED];
  int nragged;
  int sub_depth;         /* > 0 while a child graph (If branch, loop body) imports */
} imp;

/* Fails when node n (or, read as an outer value of its subgraphs, name)
 * reads a scan output of a Loop whose length is known only at run time. */
tp_status tp_onnx_ragged_check(imp *m, const char *name);
/* Of the graph inputs node depends on, the int and bool ones become needed
 * (m->need; only_ints: none when it also depends on a float input); *added:
 * whether one was added. */
tp_status tp_onnx_need_ints(imp *m, int node, int only_ints, int *added);
/* The Loop body's condition output is its condition input (directly or by
 * Identity): it ends only on its trip count (onnx_control.c). */
int tp_onnx_cond_passes(const omodel *sub);

static inline ref tp_onnx_scalar(double v) { ref r = {R_SCALAR, 0, 0, v, 0}; return r; }
static inline ref tp_onnx_none(void) { ref r = {R_NONE, 0, 0, 0, 0}; return r; }

/* Node inputs and outputs. tp_onnx_in gives R_NONE for an absent optional
 * input; tp_onnx_need_in fails on one. */
tp_status tp_onnx_in(imp *m, onode *n, int i, ref *out);
tp_status tp_onnx_need_in(imp *m, onode *n, int i, ref *out);
static inline int tp_onnx_has_out(const onode *n, int i) { return i < n->nout && *n->out[i]; }
tp_status tp_onnx_set_out(imp *m, onode *n, int i, ref r);

/* The import of a decoded model (md is borrowed: not changed but for the
 * `used` marks of attributes): nbind inputs bound to values by name (they
 * become constants), in_desc (NULL, or one per md->inputs, each NULL or a
 * run-time type for that input), *need (may be NULL): on a failure because
 * a value computed from graph inputs had to be a constant, those inputs
 * (bits by runtime input: the k-th graph input without an initializer is
 * bit k). */
tp_status tp_onnx_import(const omodel *md, int nbind, const char *const *names, tp_tensor *const *values,
                         const tp_desc *const *in_desc, tp_graph **out, uint64_t *need);
/* The same; keep_f16_weights: for a backend (a compiler will lower the graph; the graph
 * executor, eager, would pay for both per call):
 * - a MatMul's float16 constant B is not converted at import but left as
 *   cast(the float16 constant) for the compiler to give to its GEMM as
 *   float16 (stax: lower/passes.c tp_pass_fold keeps such casts; the GEMM
 *   packs float16 panels);
 * - float16 / bfloat16 activations are computed in float32 from node to
 *   node: a node reads the float32 value its producer rounded (entry.wide),
 *   not the rounded one widened again, so only the graph's inputs and
 *   outputs (and the operands of nodes that keep the low dtype: Cast,
 *   Shape, control flow) are float16 (docs/quantization.md). */
tp_status tp_onnx_import_ex(const omodel *md, int nbind, const char *const *names, tp_tensor *const *values,
                            const tp_desc *const *in_desc, int keep_f16_weights, tp_graph **out, uint64_t *need);

/* The same, with the initializers named in train_names[0..ntrain) imported
 * as placeholders after the runtime inputs (in that order), so that they can
 * be fed as tensors that require grad; train_needed (ntrain bytes, may be
 * NULL): on a failure because a converter needed one's value as a constant,
 * its byte is set. A name that is not a float32 initializer is an error. */
/* A part of the model (src/onnx/model.c: a model split at a data-dependent
 * node that runs at run time): skip[i] set: md.nodes[i] is not converted;
 * feed_names[k] (values some skipped node computes) become placeholders of
 * type feed_descs[k], after the graph inputs' placeholders, in this order;
 * nout > 0: the graph's outputs are out_names instead of the model's. */
typedef struct tp_onnx_cut {
  const uint8_t *skip;
  int nfeed;
  const char *const *feed_names;
  const tp_desc *feed_descs;
  int nout;
  const char *const *out_names;
} tp_onnx_cut;
tp_status tp_onnx_import_cut(const omodel *md, const tp_desc *const *in_desc, int keep_f16_weights,
                             const tp_onnx_cut *cut, tp_graph **out, uint64_t *need);

/* NonMaxSuppression's kernel (onnx_dyn.c): the int64 [selected, 3] result;
 * maxo / iou / sthr may be NULL (absent). */
tp_status tp_onnx_nms_check(const tp_desc *boxes, const tp_desc *scores);
/* NonZero's kernel (onnx_dyn.c): int64 [rank, count]. */
tp_status tp_onnx_nonzero_compute(tp_tensor *x, tp_tensor **out);
/* Unique's kernel (onnx_dyn.c): out = Y, indices, inverse_indices, counts;
 * has_axis 0: of the flattened input. */
tp_status tp_onnx_unique_compute(tp_tensor *x, int has_axis, int64_t axis, int sorted, tp_tensor *out[4]);
tp_status tp_onnx_nms_compute(tp_tensor *boxes, tp_tensor *scores, const tp_tensor *maxo, const tp_tensor *iou,
                              const tp_tensor *sthr, int center, tp_tensor **out);

tp_status tp_onnx_import_train(const omodel *md, int nbind, const char *const *names, tp_tensor *const *values,
                               const tp_desc *const *in_desc, int keep_f16_weights, int ntrain,
                               const char *const *train_names, tp_graph **out, uint64_t *need,
                               uint8_t *train_needed);

/* finetune.c: the float32 initializers named in want[0..n) (n 0: every
 * named float32 initializer), each read into a fresh contiguous tensor;
 * *names_out / *vals_out (tp_alloc'ed arrays of *count owned entries). An
 * unknown, duplicate or non-float32 name is INVALID_ARG naming it. */
tp_status tp_onnx_float_initializers(const omodel *md, int n, const char *const *want, char ***names_out,
                                     tp_tensor ***vals_out, int *count);
/* finetune.c: bytes (a ModelProto) with the initializers names[0..n)
 * replaced by vals (every other byte kept); *out: tp_alloc'ed. */
tp_status tp_onnx_replace_initializers(const uint8_t *bytes, size_t len, int n, const char *const *names,
                                       tp_tensor *const *vals, uint8_t **out, size_t *out_len);

/* UNSUPPORTED naming the first node whose op type (or opset) has no
 * converter: the check a model makes at load, before any import. */
tp_status tp_onnx_check_ops(const omodel *md);

/* A decoded subgraph (tp_onnx_decode_subgraph) imported in place: its
 * first nin inputs bound to ins, its initializers as constants, its nodes
 * converted seeing the outer scope's values; outs[0..sub->noutputs) its
 * outputs. If imports its taken branch once, Scan and Loop (onnx_control.c)
 * their body once per iteration. */
tp_status tp_onnx_subgraph(imp *m, omodel *sub, int nin, const ref *ins, ref *outs);

/* The value table's entry for an ONNX name (NULL: not defined). */
entry *tp_onnx_lookup(imp *m, const char *name);
/* r as a node operand of m->g (a constant gets its get_attr node). */
tp_status tp_onnx_arg(imp *m, ref r, tp_arg *a);
/* onnx_cond.c: If on a run-time condition c (a graph node) as one cond
 * node, both branches imported as child graphs. An error leaves m->g as it
 * was (but for the constant pool), so cv_if may still choose at import. */
tp_status tp_onnx_if_as_cond(imp *m, onode *n, ref c, attr *th, attr *el);
/* onnx_cond.c: a Loop whose condition is computed from run-time data as
 * one while_loop node (body: the decoded `body`, imported once). rows: the
 * steps it is known to run (its scan outputs are [rows, ...] stacks,
 * written in place), or -1 when unknown: then refused with scan outputs.
 * Refused too with carried values whose shapes change. */
tp_status tp_onnx_loop_as_while(imp *m, onode *n, omodel *body, int64_t rows);

/* A Scan (opset 9+ form: in_axes normalized, L >= 0 steps) as one
 * while_loop node (onnx_cond.c): the body imported once, scan inputs
 * gathered at the step, scan outputs written in place into [L, ...]
 * stacks (the while_loop's scan outputs, src/graph/control.c).
 * results: the N final states then the M stacks (along axis 0, the
 * caller moves them to out_axes). TP_ERR_UNSUPPORTED when the plan cannot
 * run it (the caller unrolls instead). */
typedef struct tp_onnx_scan_form {
  int N, K, M;
  int64_t L;
  const ref *states, *scans;
  const int64_t *in_axes, *in_dir, *out_dir;
  tp_desc ytypes[TP_MAX_OPERANDS];
  ref results[2 * TP_MAX_OPERANDS];
} tp_onnx_scan_form;
tp_status tp_onnx_scan_as_while(imp *m, omodel *body, tp_onnx_scan_form *sf);

/* Records in m->need the graph inputs that node `node` is computed from
 * (TP_ERR_OUT_OF_MEMORY when its walk cannot allocate). */
tp_status tp_onnx_note_need(imp *m, int node);

/* t (owned, contiguous) joins the constant pool. */
tp_status tp_onnx_add_const(imp *m, tp_tensor *t, ref *out);
tp_desc tp_onnx_desc(const imp *m, ref r);

/* One op on refs: folded into a constant when no operand is a graph node,
 * else a call node. The helpers below are the common shapes of it. */
tp_status tp_onnx_emit(imp *m, tp_op op, int n, const ref *args, const tp_attrs *at, ref *out);
/* The same, never folded: a call node even on constant operands. */
tp_status tp_onnx_emit_node(imp *m, tp_op op, int n, const ref *args, const tp_attrs *at, ref *out);
tp_status tp_onnx_unary(imp *m, tp_op op, ref x, ref *out);
tp_status tp_onnx_binary(imp *m, tp_op op, ref a, ref b, ref *out);
tp_status tp_onnx_where(imp *m, ref c, ref a, ref b, ref *out);
/* Logical not of a bool: eq(x, false). */
tp_status tp_onnx_not(imp *m, ref x, ref *out);
/* x^p for x >= 0 and a constant p: x for 1, x*x for 2, sqrt for 1/2,
 * else exp(p log x) (so 0^p = 0 for p > 0). */
tp_status tp_onnx_pow_pos(imp *m, ref x, double p, ref *out);
tp_status tp_onnx_reshape(imp *m, ref x, int nd, const int64_t *shape, ref *out);
/* x itself when it already has dtype d (and is not a scalar literal). */
tp_status tp_onnx_cast(imp *m, ref x, tp_dtype d, ref *out);
tp_status tp_onnx_reduce(imp *m, tp_op op, ref x, int n, const int64_t *dims, int keep, ref *out);
/* A constant of shape sh filled with v. */
tp_status tp_onnx_full(imp *m, tp_dtype dt, int nd, const int64_t *sh, double v, ref *out);
tp_status tp_onnx_slice(imp *m, ref x, int64_t dim, int64_t start, int64_t end, int64_t step, ref *out);
/* Concat of k refs along dim, in chunks of TP_MAX_OPERANDS; args is
 * overwritten. */
tp_status tp_onnx_concat(imp *m, int k, ref *args, int64_t dim, ref *out);
/* Constant padding of x along dim (before/after >= 0) with value v. */
tp_status tp_onnx_pad_const(imp *m, ref x, int dim, int64_t before, int64_t after, double v, ref *out);
/* A convolution op of ops.def over x = args[0] and w = args[1] (conv2d_int,
 * qconv2d) with node n's Conv window (onnx_conv.c), 1-D as H = 1; *taken 0
 * (nothing emitted) for windows it does not cover (3-D), which the caller
 * computes otherwise. */
tp_status tp_onnx_conv_op(imp *m, onode *n, tp_op op, int nargs, ref *args, int *taken, ref *out);

/* ---- attributes and constant operands (node.c) ---- */

/* The attribute `name` when it has the given type (marked used; a wrong
 * type is recorded in m->bad_attr and reported after the converter). */
attr *tp_onnx_attr(imp *m, onode *n, const char *name, int type);
int64_t tp_onnx_attr_int(imp *m, onode *n, const char *name, int64_t def);
double tp_onnx_attr_float(imp *m, onode *n, const char *name, double def);
const char *tp_onnx_attr_str(imp *m, onode *n, const char *name, const char *def);
/* Marks an attribute used without reading it (one with no effect here). */
void tp_onnx_attr_ignore(onode *n, const char *name);
/* INTS attribute of exactly `want` values into v (def everywhere if absent). */
tp_status tp_onnx_attr_ints(imp *m, onode *n, const char *name, int64_t *v, int want, int64_t def);
/* A constant int list (0-d or 1-d int32/int64) of at most max values.
 * When r is computed from graph inputs, the failure also records them in
 * m->need (see imp). */
tp_status tp_onnx_const_ints(imp *m, ref r, const char *what, int64_t *v, int max, int *nv);
tp_status tp_onnx_const_scalar(imp *m, ref r, const char *what, double *v);
/* A constant list of numbers (any dtype, 0-d or 1-d) of at most max values. */
tp_status tp_onnx_const_floats(imp *m, ref r, const char *what, double *v, int max, int *nv);
/* axis in [-nd, nd) -> [0, nd). */
tp_status tp_onnx_axis(int64_t axis, int nd, const char *what, int64_t *out);
/* axes from input `input` (opset 13+) or the attribute (older);
 * *present = 0: neither. */
tp_status tp_onnx_axes(imp *m, onode *n, int input, int64_t *axes, int *nax, int *present);

/* ---- converters (onnx_*.c, listed in onnx_ops.def) ---- */

/* A converter reads node n's inputs and attributes, emits ops and binds
 * every output it supports with tp_onnx_set_out. arg is the table row's
 * last column (the tp_op it emits, or a variant below). Errors need not
 * name the node: the dispatcher adds "onnx: node 'name' (OpType)". */
typedef tp_status (*tp_onnx_converter)(imp *m, onode *n, int arg);

/* cv_act variants (onnx_nn.c) */
enum { ACT_LEAKY, ACT_ELU, ACT_SELU, ACT_HSIG, ACT_HSWISH, ACT_SOFTPLUS, ACT_SOFTSIGN, ACT_THRESHOLDED,
       ACT_SHRINK, ACT_SWISH, ACT_CELU, ACT_MISH };
/* cv_reduce variants besides a reduction tp_op (onnx_reduce.c) */
enum { TP_ONNX_REDUCE_L2 = -1, TP_ONNX_REDUCE_PROD = -2, TP_ONNX_REDUCE_L1 = -3, TP_ONNX_REDUCE_SUM_SQUARE = -4,
       TP_ONNX_REDUCE_LOG_SUM = -5, TP_ONNX_REDUCE_LOG_SUM_EXP = -6 };
/* cv_logic variants (onnx_math.c) */
enum { TP_ONNX_LOGIC_AND, TP_ONNX_LOGIC_OR, TP_ONNX_LOGIC_XOR, TP_ONNX_LOGIC_GE, TP_ONNX_LOGIC_LE };

#define TP_ONNX_OP(op_type, min_opset, max_opset, converter, arg) \
  tp_status tp_onnx_##converter(imp *m, onode *n, int arg_);
#include "onnx_ops.def"
#undef TP_ONNX_OP

#endif
