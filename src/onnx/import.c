/* import.c - the import core: omodel (decode.c) -> Graph IR.
 *
 * Every ONNX value maps to a ref (import.h): a graph node, a constant
 * tensor (initializers, Constant, and anything computed only from
 * constants, which is folded at load time so that Shape -> Gather -> Concat
 * -> Reshape chains become constants), a scalar literal or nothing (an
 * absent optional). A constant becomes a get_attr node only when a graph
 * node uses it. build() binds the initializers and graph inputs, converts
 * node by node through the table of onnx_ops.def, and makes the output
 * node from the graph outputs. */
#include "import.h"
#include <stdio.h>

/* ---- value table: ONNX name -> ref ---- */
static uint32_t hash(const char *s) {
  uint32_t h = 2166136261u;
  while (*s) h = (h ^ (uint8_t)*s++) * 16777619u;
  return h;
}

static entry *lookup(imp *m, const char *name) {
  if (!m->tabcap) return NULL;
  for (uint32_t i = hash(name) & (uint32_t)(m->tabcap - 1);; i = (i + 1) & (uint32_t)(m->tabcap - 1)) {
    if (!m->tab[i].name) return NULL;
    if (!strcmp(m->tab[i].name, name)) return &m->tab[i];
  }
}

static tp_status define(imp *m, const char *name, ref r) {
  entry *e = lookup(m, name);
  if (e) {
    e->r = r; /* ONNX forbids redefinition; the last one wins */
    return TP_OK;
  }
  if ((m->tabn + 1) * 2 > m->tabcap) {
    int nc = m->tabcap ? m->tabcap * 2 : 64;
    entry *nt = tp_onnx_arena_alloc(&m->md, sizeof(entry) * (size_t)nc);
    if (!nt) return TP_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < m->tabcap; i++)
      if (m->tab[i].name) {
        uint32_t j = hash(m->tab[i].name) & (uint32_t)(nc - 1);
        while (nt[j].name) j = (j + 1) & (uint32_t)(nc - 1);
        nt[j] = m->tab[i];
      }
    m->tab = nt;
    m->tabcap = nc;
  }
  uint32_t j = hash(name) & (uint32_t)(m->tabcap - 1);
  while (m->tab[j].name) j = (j + 1) & (uint32_t)(m->tabcap - 1);
  m->tab[j].name = (char *)name;
  m->tab[j].r = r;
  m->tabn++;
  return TP_OK;
}

entry *tp_onnx_lookup(imp *m, const char *name) { return lookup(m, name); }

/* ---- node inputs and outputs ---- */
tp_status tp_onnx_in(imp *m, onode *n, int i, ref *out) {
  *out = tp_onnx_none(); /* defined on every path (and for GCC's -Wmaybe-uninitialized) */
  if (i >= n->nin || !*n->in[i]) {
    *out = tp_onnx_none();
    return TP_OK;
  }
  entry *e = lookup(m, n->in[i]);
  if (!e) return tp_fail(TP_ERR_PARSE, "input %d '%s' is not defined before the node", i, n->in[i]);
  *out = e->r;
  return TP_OK;
}

tp_status tp_onnx_need_in(imp *m, onode *n, int i, ref *out) {
  TP_TRY(tp_onnx_in(m, n, i, out));
  if (out->kind == R_NONE) return tp_fail(TP_ERR_INVALID_ARG, "input %d is required", i);
  return TP_OK;
}

tp_status tp_onnx_set_out(imp *m, onode *n, int i, ref r) {
  if (!tp_onnx_has_out(n, i)) return TP_OK;
  return define(m, n->out[i], r);
}

/* ---- refs ---- */
tp_status tp_onnx_add_const(imp *m, tp_tensor *t /* owned */, ref *out) {
  if (TP_ARRAY_RESERVE(m->consts, m->capconsts, m->nconsts + 1) ||
      TP_ARRAY_RESERVE(m->const_node, m->capconst_node, m->nconsts + 1)) {
    tp_tensor_release(t);
    return TP_ERR_OUT_OF_MEMORY;
  }
  m->consts[m->nconsts] = t;
  m->const_node[m->nconsts] = -1;
  memset(out, 0, sizeof *out);
  out->kind = R_CONST;
  out->c = m->nconsts++;
  return TP_OK;
}

tp_desc tp_onnx_desc(const imp *m, ref r) {
  tp_desc d;
  memset(&d, 0, sizeof d);
  if (r.kind == R_NODE) d = m->g->nodes[r.node].desc;
  else if (r.kind == R_CONST) tp_desc_of(m->consts[r.c], &d);
  else if (r.kind == R_SCALAR) d.dtype = r.is_int ? TP_I64 : TP_F32, d.weak = r.is_int ? 1 : 2;
  return d;
}

static tp_status to_arg(imp *m, ref r, tp_arg *a) {
  memset(a, 0, sizeof *a);
  if (r.kind == R_NONE) {
    a->kind = TP_ARG_NONE;
  } else if (r.kind == R_SCALAR) {
    a->kind = TP_ARG_SCALAR;
    a->scalar = r.s;
    a->is_int = r.is_int;
  } else if (r.kind == R_NODE) {
    a->kind = TP_ARG_NODE;
    a->node = r.node;
  } else {
    if (m->const_node[r.c] < 0) {
      tp_desc d;
      char name[32];
      int idx;
      tp_desc_of(m->consts[r.c], &d);
      do snprintf(name, sizeof name, "c%d", m->g->next_id++);
      while (tp_graph_find(m->g, name) >= 0);
      TP_TRY(tp_graph_add_node(m->g, TP_NODE_GET_ATTR, name, TP_OP_ADD, 0, NULL, NULL, &d, &idx));
      m->g->nodes[idx].target = tp_strdup(name);
      if (!m->g->nodes[idx].target) return TP_ERR_OUT_OF_MEMORY;
      tp_graph_set_val(m->g, idx, m->consts[r.c]);
      m->const_node[r.c] = idx;
    }
    a->kind = TP_ARG_NODE;
    a->node = m->const_node[r.c];
  }
  return TP_OK;
}

tp_status tp_onnx_arg(imp *m, ref r, tp_arg *a) { return to_arg(m, r, a); }

/* One op: folded when no operand is a graph node (and fold), else a call node. */
static tp_status emit(imp *m, tp_op op, int n, const ref *args, const tp_attrs *at, int fold, ref *out);
tp_status tp_onnx_emit(imp *m, tp_op op, int n, const ref *args, const tp_attrs *at, ref *out) {
  return emit(m, op, n, args, at, 1, out);
}
tp_status tp_onnx_emit_node(imp *m, tp_op op, int n, const ref *args, const tp_attrs *at, ref *out) {
  return emit(m, op, n, args, at, 0, out);
}

static tp_status emit(imp *m, tp_op op, int n, const ref *args, const tp_attrs *at, int fold, ref *out) {
  tp_desc descs[TP_MAX_OPERANDS], od;
  const tp_desc *dp[TP_MAX_OPERANDS];
  tp_attrs a0;
  int folded = 1;
  if (!at) tp_attrs_init(&a0), at = &a0;
  if (n > TP_MAX_OPERANDS) return tp_fail(TP_ERR_UNSUPPORTED, "too many operands (%d)", n);
  for (int i = 0; i < n; i++) {
    descs[i] = tp_onnx_desc(m, args[i]);
    dp[i] = args[i].kind == R_NONE ? NULL : &descs[i];
    if (args[i].kind == R_NODE) folded = 0;
  }
  TP_TRY(tp_op_infer(op, n, dp, at, &od));
  if (folded && fold) {
    tp_tensor *ts[TP_MAX_OPERANDS] = {0}, *y = NULL, *c = NULL;
    tp_status s = TP_OK;
    for (int i = 0; i < n && !s; i++) {
      if (args[i].kind == R_CONST) ts[i] = m->consts[args[i].c], tp_tensor_retain(ts[i]);
      else if (args[i].kind == R_SCALAR) s = tp_scalar(args[i].s, args[i].is_int, &ts[i]);
    }
    if (!s) s = tp_op_call(op, n, ts, at, &y);
    if (!s) s = tp_contiguous(y, &c);
    for (int i = 0; i < n; i++) tp_tensor_release(ts[i]);
    tp_tensor_release(y);
    if (s) return s;
    return tp_onnx_add_const(m, c, out);
  }
  tp_arg targs[TP_MAX_OPERANDS];
  int idx;
  for (int i = 0; i < n; i++) TP_TRY(to_arg(m, args[i], &targs[i]));
  TP_TRY(tp_graph_add_node(m->g, TP_NODE_CALL, NULL, op, n, targs, at, &od, &idx));
  memset(out, 0, sizeof *out);
  out->kind = R_NODE;
  out->node = idx;
  return TP_OK;
}

tp_status tp_onnx_unary(imp *m, tp_op op, ref x, ref *out) { return tp_onnx_emit(m, op, 1, &x, NULL, out); }

tp_status tp_onnx_binary(imp *m, tp_op op, ref a, ref b, ref *out) {
  ref args[2] = {a, b};
  return tp_onnx_emit(m, op, 2, args, NULL, out);
}

tp_status tp_onnx_where(imp *m, ref c, ref a, ref b, ref *out) {
  ref args[3] = {c, a, b};
  return tp_onnx_emit(m, TP_OP_WHERE, 3, args, NULL, out);
}

tp_status tp_onnx_not(imp *m, ref x, ref *out) {
  ref f = tp_onnx_scalar(0);
  f.is_int = 1;
  return tp_onnx_binary(m, TP_OP_EQ, x, f, out);
}

tp_status tp_onnx_pow_pos(imp *m, ref x, double p, ref *out) {
  if (p == 1) {
    *out = x;
    return TP_OK;
  }
  if (p == 2) return tp_onnx_binary(m, TP_OP_MUL, x, x, out);
  if (p == 0.5) return tp_onnx_unary(m, TP_OP_SQRT, x, out);
  TP_TRY(tp_onnx_unary(m, TP_OP_LOG, x, &x));
  TP_TRY(tp_onnx_binary(m, TP_OP_MUL, x, tp_onnx_scalar(p), &x));
  return tp_onnx_unary(m, TP_OP_EXP, x, out);
}

tp_status tp_onnx_reshape(imp *m, ref x, int nd, const int64_t *shape, ref *out) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.nints = nd;
  if (nd) memcpy(at.ints, shape, sizeof(int64_t) * (size_t)nd); /* shape may be NULL for 0-d */
  return tp_onnx_emit(m, TP_OP_RESHAPE, 1, &x, &at, out);
}

tp_status tp_onnx_cast(imp *m, ref x, tp_dtype d, ref *out) {
  if (tp_onnx_desc(m, x).dtype == d && x.kind != R_SCALAR) {
    *out = x;
    return TP_OK;
  }
  tp_attrs at;
  tp_attrs_init(&at);
  at.dtype = d;
  return tp_onnx_emit(m, TP_OP_CAST, 1, &x, &at, out);
}

tp_status tp_onnx_reduce(imp *m, tp_op op, ref x, int n, const int64_t *dims, int keep, ref *out) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.nints = n;
  if (n) memcpy(at.ints, dims, sizeof(int64_t) * (size_t)n); /* dims may be NULL for all dims */
  at.keepdim = keep;
  return tp_onnx_emit(m, op, 1, &x, &at, out);
}

tp_status tp_onnx_full(imp *m, tp_dtype dt, int nd, const int64_t *sh, double v, ref *out) {
  tp_tensor *t;
  TP_TRY(tp_full(dt, nd, sh, v, &t));
  return tp_onnx_add_const(m, t, out);
}

/* ---- convolution, pooling, normalization and data movement as
 * compositions of existing ops (slices, concat, matmul, reductions). ---- */
tp_status tp_onnx_slice(imp *m, ref x, int64_t dim, int64_t start, int64_t end, int64_t step, ref *out) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = dim;
  at.start = start;
  at.end = end;
  at.step = step;
  return tp_onnx_emit(m, TP_OP_SLICE, 1, &x, &at, out);
}

static tp_status concatn(imp *m, int k, const ref *args, int64_t dim, ref *out) {
  if (k == 1) {
    *out = args[0];
    return TP_OK;
  }
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = dim;
  return tp_onnx_emit(m, TP_OP_CONCAT, k, args, &at, out);
}

/* Concat of k refs in chunks of TP_MAX_OPERANDS. */
tp_status tp_onnx_concat(imp *m, int k, ref *args, int64_t dim, ref *out) {
  while (k > TP_MAX_OPERANDS) {
    int j = 0;
    for (int i = 0; i < k; i += TP_MAX_OPERANDS) {
      int c = k - i < TP_MAX_OPERANDS ? k - i : TP_MAX_OPERANDS;
      TP_TRY(concatn(m, c, args + i, dim, &args[j]));
      j++;
    }
    k = j;
  }
  return concatn(m, k, args, dim, out);
}

/* Constant padding of x along dim (before/after >= 0) with value v. */
tp_status tp_onnx_pad_const(imp *m, ref x, int dim, int64_t before, int64_t after, double v, ref *out) {
  tp_desc d = tp_onnx_desc(m, x);
  ref parts[3];
  int k = 0;
  int64_t sh[TP_MAX_DIMS];
  memcpy(sh, d.shape, sizeof sh);
  if (before > 0) {
    sh[dim] = before;
    TP_TRY(tp_onnx_full(m, d.dtype, d.ndim, sh, v, &parts[k++]));
  }
  parts[k++] = x;
  if (after > 0) {
    sh[dim] = after;
    TP_TRY(tp_onnx_full(m, d.dtype, d.ndim, sh, v, &parts[k++]));
  }
  return concatn(m, k, parts, dim, out);
}

/* ---- the converter table (onnx_ops.def) and the dispatch ---- */
static const struct {
  const char *op;
  int64_t min_opset, max_opset; /* 0: no bound */
  tp_onnx_converter fn;
  int arg;
} converters[] = {
#define TP_ONNX_OP(op_type, min_opset, max_opset, converter, arg) \
  {op_type, min_opset, max_opset, tp_onnx_##converter, arg},
#include "onnx_ops.def"
#undef TP_ONNX_OP
};

/* The table row for node n at opset v, or an UNSUPPORTED error naming it. */
static tp_status find_converter(const onode *n, int64_t v, int *row) {
  int i, named = 0;
  for (i = 0; i < TP_ARRAY_LEN(converters); i++) {
    if (strcmp(converters[i].op, n->op)) continue;
    named = 1;
    /* a row without a lower bound serves TP_ONNX_MIN_OPSET and newer:
     * only rows naming an older opset (ops whose meaning never changed)
     * serve models older than that */
    if (v >= (converters[i].min_opset ? converters[i].min_opset : TP_ONNX_MIN_OPSET) &&
        (!converters[i].max_opset || v <= converters[i].max_opset))
      break;
  }
  int default_domain = !*n->domain || !strcmp(n->domain, "ai.onnx");
  if (i == TP_ARRAY_LEN(converters) || !default_domain) {
    if (!default_domain)
      return tp_fail(TP_ERR_UNSUPPORTED, "onnx: node '%s' (%s of domain '%s') is not supported yet",
                     n->name, n->op, n->domain);
    if (named && v < TP_ONNX_MIN_OPSET)
      return tp_fail(TP_ERR_UNSUPPORTED,
                     "onnx: node '%s' (%s) is not supported at opset %lld (its meaning changed since; "
                     "opset %d or newer is required)",
                     n->name, n->op, (long long)v, TP_ONNX_MIN_OPSET);
    if (named)
      return tp_fail(TP_ERR_UNSUPPORTED, "onnx: node '%s' (%s) is not supported at opset %lld", n->name,
                     n->op, (long long)v);
    return tp_fail(TP_ERR_UNSUPPORTED, "onnx: node '%s' (%s) is not supported yet", n->name, n->op);
  }
  *row = i;
  return TP_OK;
}

/* A decoded subgraph imported in place: sub's first nin inputs bound to
 * ins, its initializers as constants, its nodes converted (seeing the outer
 * scope's values), its outputs in outs[0..sub->noutputs). */
static tp_status convert_node(imp *m, onode *n);
tp_status tp_onnx_subgraph(imp *m, omodel *sub, int nin, const ref *ins, ref *outs) {
  tp_status s = TP_OK;
  if (nin > sub->ninputs)
    return tp_fail(TP_ERR_INVALID_ARG, "the body takes %d inputs, %d are given", sub->ninputs, nin);
  for (int i = 0; !s && i < nin; i++) s = define(m, sub->inputs[i].name, ins[i]);
  for (int i = 0; !s && i < sub->ninits; i++) {
    tp_tensor *t;
    char *name = NULL;
    ref r;
    tp_pb rd = sub->inits[i];
    s = tp_onnx_tensor_read(&rd, "initializer", &t, &name);
    char *an = s ? NULL : tp_onnx_arena_str(&m->md, name ? name : "", name ? strlen(name) : 0);
    tp_free(name);
    if (!s && !an) tp_tensor_release(t), s = TP_ERR_OUT_OF_MEMORY;
    if (!s) s = tp_onnx_add_const(m, t, &r);
    if (!s) s = define(m, an, r);
  }
  onode *outer = m->cur;
  for (int i = 0; !s && i < sub->nnodes; i++) s = convert_node(m, &sub->nodes[i]);
  m->cur = outer;
  for (int i = 0; !s && i < sub->noutputs; i++) {
    entry *e = lookup(m, sub->outputs[i].name);
    if (!e) s = tp_fail(TP_ERR_INVALID_ARG, "subgraph output '%s' is not computed", sub->outputs[i].name);
    else outs[i] = e->r;
  }
  return s;
}

/* If: a constant condition imports its taken branch in place (seeing the
 * outer scope's values). A condition computed from graph inputs imports as
 * a cond node (onnx_cond.c: both branches compiled, the choice made at run
 * time); when that cannot be (branches of different shapes, a branch that
 * needs an outer value as a constant) the model specializes on the
 * condition's inputs (value inputs) and imports the taken branch. */
tp_status tp_onnx_cv_if(imp *m, onode *n, int arg) {
  (void)arg;
  ref c;
  double v;
  TP_TRY(tp_onnx_need_in(m, n, 0, &c));
  attr *th = tp_onnx_attr(m, n, "then_branch", A_GRAPH), *el = tp_onnx_attr(m, n, "else_branch", A_GRAPH);
  if (!th || !el || !th->has_g || !el->has_g) return tp_fail(TP_ERR_INVALID_ARG, "then_branch and else_branch must be graphs");
  if (n->nout < 1) return tp_fail(TP_ERR_INVALID_ARG, "an If needs at least one output, this one has none");
  tp_status s = TP_OK;
  /* both branches give the If's outputs (checked whichever is taken: a
   * malformed branch is an error even while the condition avoids it) */
  for (int b = 0; b < 2 && !s; b++) {
    omodel br;
    s = tp_onnx_decode_subgraph(&m->md, b ? &el->g : &th->g, &br);
    if (!s && br.noutputs != n->nout)
      s = tp_fail(TP_ERR_INVALID_ARG, "the %s branch has %d outputs, the If %d", b ? "else" : "then", br.noutputs,
                  n->nout);
    tp_onnx_decoded_free(&br);
  }
  if (s) return s;
  if (c.kind == R_NODE) { /* run-time data: both branches compiled, the plan chooses */
    uint64_t need0 = m->need;
    s = tp_onnx_if_as_cond(m, n, c, th, el);
    if (!s || s == TP_ERR_OUT_OF_MEMORY) return s;
    /* e.g. branches of different shapes: the choice at import, on the
     * condition's value (a value input when it comes from graph inputs) */
    char why[256];
    snprintf(why, sizeof why, "%s", tp_last_error());
    tp_clear_error();
    m->need = need0;
    s = tp_onnx_const_scalar(m, c, "the condition", &v);
    if (s) return tp_fail(s, "the If cannot run as a run-time choice (%s) and its condition is computed from data", why);
  } else {
    s = tp_onnx_const_scalar(m, c, "the condition", &v);
    if (s) return s;
  }
  omodel sub;
  ref outs[TP_MAX_OPERANDS];
  s = tp_onnx_decode_subgraph(&m->md, v != 0 ? &th->g : &el->g, &sub);
  if (!s && sub.noutputs != n->nout)
    s = tp_fail(TP_ERR_INVALID_ARG, "the %s branch has %d outputs, the If %d", v != 0 ? "then" : "else", sub.noutputs,
                n->nout);
  if (!s && sub.noutputs > TP_MAX_OPERANDS) s = tp_fail(TP_ERR_UNSUPPORTED, "more than %d If outputs", TP_MAX_OPERANDS);
  if (!s) s = tp_onnx_subgraph(m, &sub, 0, NULL, outs);
  for (int i = 0; !s && i < n->nout; i++) s = tp_onnx_set_out(m, n, i, outs[i]);
  tp_onnx_decoded_free(&sub);
  return s;
}

tp_status tp_onnx_check_ops(const omodel *md) {
  int row;
  for (int i = 0; i < md->nnodes; i++) TP_TRY(find_converter(&md->nodes[i], md->opset, &row));
  return TP_OK;
}

/* float16 / bfloat16 at node granularity (docs/quantization.md): a node
 * other than the ones below sees its float16/bfloat16 inputs as float32
 * (exact) and its float32 outputs are rounded once to the first such
 * input's dtype. So a converter composed of many ops rounds once, as ONNX's
 * float16 kernels do, and converters written for float32 serve float16.
 * int8/uint8 stay as they are: the op layer widens them per op (their
 * wrap-around is per op in ONNX); only for MaxPool, whose result is one of
 * its inputs, they go through float32 too (exact both ways). */
static int lowp_native_node(const onode *n) {
  static const char *const native[] = {"Cast", "CastLike", "BitCast", "If", "Loop", "Scan", "Shape", "Size",
                                       "Identity", "Reshape", "Squeeze", "Unsqueeze", "Flatten"};
  for (int i = 0; i < TP_ARRAY_LEN(native); i++)
    if (!strcmp(n->op, native[i])) return 1;
  return 0;
}

static int lowp_widened(const onode *n, tp_dtype d) {
  return d == TP_F16 || d == TP_BF16 || ((d == TP_I8 || d == TP_U8) && !strcmp(n->op, "MaxPool"));
}

/* The float32 value e's float16 / bfloat16 node rounds (a backend import:
 * tp_onnx_import_ex), if it is still e's value in this graph. */
static int lowp_wide(const imp *m, const entry *e, ref *w) {
  if (!m->keep_f16_weights || !e || e->wide_g != m->g || e->r.kind != R_NODE || e->rounded.node != e->r.node) return 0;
  *w = e->wide;
  return 1;
}

/* Reshape and its kin keep a float16 operand as it is, unless the operand
 * has a float32 value (lowp_wide): then they view that, and their output
 * is rounded (the same values) with its own float32 value. */
static int lowp_view_node(const onode *n) {
  static const char *const views[] = {"Identity", "Reshape", "Squeeze", "Unsqueeze", "Flatten"};
  for (int i = 0; i < TP_ARRAY_LEN(views); i++)
    if (!strcmp(n->op, views[i])) return 1;
  return 0;
}

static tp_status lowp_widen_inputs(imp *m, onode *n, tp_dtype *lp, ref *saved, int *nsaved) {
  *lp = TP_F32;
  *nsaved = 0;
  if (n->nin > TP_ONNX_MAX_INPUTS) return TP_OK;
  int only0 = 0; /* a view of an operand with a float32 value: that operand only */
  if (lowp_native_node(n)) {
    ref w;
    entry *e0 = n->nin && *n->in[0] ? lookup(m, n->in[0]) : NULL;
    if (!lowp_view_node(n) || !lowp_wide(m, e0, &w)) return TP_OK;
    only0 = 1;
  }
  for (int i = 0; i < (only0 ? 1 : n->nin); i++) {
    entry *e = *n->in[i] ? lookup(m, n->in[i]) : NULL;
    if (!e) continue;
    tp_dtype d = tp_onnx_desc(m, e->r).dtype;
    if (!lowp_widened(n, d) || e->r.kind == R_SCALAR) continue;
    if (*lp == TP_F32) *lp = d;
    *nsaved = n->nin;
  }
  if (!*nsaved) return TP_OK;
  for (int i = 0; i < n->nin; i++) {
    entry *e = *n->in[i] ? lookup(m, n->in[i]) : NULL;
    saved[i] = e ? e->r : tp_onnx_none();
  }
  for (int i = 0; i < (only0 ? 1 : n->nin); i++) {
    entry *e = *n->in[i] ? lookup(m, n->in[i]) : NULL;
    if (!e) continue;
    tp_dtype d = tp_onnx_desc(m, e->r).dtype;
    if (!lowp_widened(n, d) || e->r.kind == R_SCALAR) continue;
    ref w;
    if (d != TP_I8 && d != TP_U8 && lowp_wide(m, e, &w)) {
      /* the float32 value the producer rounded: no round trip (a backend) */
    } else if (m->keep_f16_weights && !m->train_f32 && i == 1 && d == TP_F16 && saved[i].kind == R_CONST &&
               !strcmp(n->op, "MatMul")) {
      /* a float16 weight: a cast node, not a float32 copy (tp_onnx_import_ex) */
      tp_attrs at;
      tp_attrs_init(&at);
      at.dtype = TP_F32;
      TP_TRY(tp_onnx_emit_node(m, TP_OP_CAST, 1, &saved[i], &at, &w));
    } else {
      TP_TRY(tp_onnx_cast(m, saved[i], TP_F32, &w));
    }
    e->r = w; /* until the node is converted (names repeat among inputs: same ref) */
  }
  return TP_OK;
}

static tp_status lowp_restore(imp *m, onode *n, tp_dtype lp, const ref *saved, int nsaved, tp_status s) {
  for (int i = 0; i < nsaved; i++) {
    entry *e = *n->in[i] ? lookup(m, n->in[i]) : NULL;
    if (e) e->r = saved[i];
  }
  if (s || !nsaved) return s;
  if (m->train_f32 && (lp == TP_F16 || lp == TP_BF16)) return TP_OK; /* float32 throughout (imp.train_f32) */
  for (int k = 0; k < n->nout; k++) {
    entry *e = *n->out[k] ? lookup(m, n->out[k]) : NULL;
    if (!e || e->r.kind == R_NONE || e->r.kind == R_SCALAR || tp_onnx_desc(m, e->r).dtype != TP_F32) continue;
    ref y;
    TP_TRY(tp_onnx_cast(m, e->r, lp, &y));
    if (m->keep_f16_weights && (lp == TP_F16 || lp == TP_BF16) && y.kind == R_NODE) {
      e->wide = e->r; /* read by the next nodes instead of y (lowp_wide) */
      e->rounded = y;
      e->wide_g = m->g;
    }
    e->r = y;
  }
  return TP_OK;
}

tp_status tp_onnx_ragged_check(imp *m, const char *name) {
  if (!m->nragged || m->sub_depth || !name || !*name) return TP_OK;
  entry *e = lookup(m, name);
  if (!e || e->r.kind != R_NODE) return TP_OK;
  for (int j = 0; j < m->nragged; j++) {
    if (m->ragged[j].node != e->r.node) continue;
    int added = 0; /* the int inputs the loop reads bound to their values: it may unroll at import then */
    TP_TRY(tp_onnx_need_ints(m, m->ragged[j].loop_node, 0, &added));
    return tp_fail(TP_ERR_UNSUPPORTED, "reads '%s', a scan output of Loop '%s' whose length is known only after the "
                   "loop ran (it ends on run-time data or on a count fed at run time); such a value can only be a "
                   "graph output, unless the loop unrolls at import (its count and exit computed from constants "
                   "and int inputs, bound as value inputs)", name, m->ragged[j].loop);
  }
  return TP_OK;
}

static tp_status convert_node(imp *m, onode *n) {
  int i;
  TP_TRY(find_converter(n, m->md.opset, &i));
  m->cur = n;
  for (int k = 0; k < n->nin; k++) {
    tp_status rs = tp_onnx_ragged_check(m, n->in[k]);
    if (rs) {
      if (rs != TP_ERR_OUT_OF_MEMORY) tp_fail_context(rs, "onnx: node '%s' (%s)", n->name, n->op);
      return rs;
    }
  }
  m->bad_attr = NULL;
  tp_dtype lp;
  int nsaved = 0;
  ref saved[TP_ONNX_MAX_INPUTS]; /* lowp_widen_inputs leaves nodes with more inputs alone */
  tp_status s = lowp_widen_inputs(m, n, &lp, saved, &nsaved);
  if (!s) s = converters[i].fn(m, n, converters[i].arg);
  s = lowp_restore(m, n, lp, saved, nsaved, s);
  if (!s && m->bad_attr)
    s = tp_fail(TP_ERR_INVALID_ARG, "attribute '%s' has the wrong type", m->bad_attr);
  for (int k = 0; !s && k < n->nattrs; k++)
    if (!n->attrs[k].used)
      s = tp_fail(TP_ERR_UNSUPPORTED, "attribute '%s' is not supported", n->attrs[k].name);
  for (int k = 0; !s && k < n->nout; k++)
    if (*n->out[k] && !lookup(m, n->out[k]))
      s = tp_fail(TP_ERR_UNSUPPORTED, "output %d ('%s') is not supported", k, n->out[k]);
  if (s && s != TP_ERR_OUT_OF_MEMORY && strncmp(tp_last_error(), "onnx: ", 6))
    tp_fail_context(s, "onnx: node '%s' (%s)", n->name, n->op);
  return s;
}

void tp_onnx_sanitize_name(const char *in, char *out, size_t n) {
  size_t k = 0;
  for (; *in && k + 1 < n; in++) {
    char c = *in;
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
    out[k++] = ok ? c : '_';
  }
  if (!k) out[k++] = 'x';
  out[k] = 0;
}

tp_status tp_onnx_note_need(imp *m, int node) {
  tp_graph *g = m->g;
  if (!m->input_node || node < 0 || node >= g->n) return TP_OK;
  /* depth-first over the operands; nodes are in topological order, so a
   * bitmap of visited nodes bounds the walk by the graph's size */
  uint8_t *seen = tp_alloc((size_t)g->n);
  int *stack = tp_alloc(sizeof(int) * (size_t)g->n);
  tp_status s = TP_OK;
  if (!seen || !stack) {
    s = TP_ERR_OUT_OF_MEMORY; /* tp_alloc set the error */
    goto done;
  }
  memset(seen, 0, (size_t)g->n);
  int sp = 0;
  stack[sp++] = node;
  seen[node] = 1;
  while (sp) {
    const tp_node *x = &g->nodes[stack[--sp]];
    if (x->kind == TP_NODE_PLACEHOLDER) {
      for (int i = 0; i < m->md.ninputs; i++) {
        int o = m->input_ord ? m->input_ord[i] : -1;
        if (m->input_node[i] == (int)(x - g->nodes) && o >= 0 && o < TP_ONNX_MAX_INPUTS) m->need |= (uint64_t)1 << o;
      }
      for (int k = 0; k < m->ntrain; k++)
        if (m->train_node[k] == (int)(x - g->nodes)) m->train_needed[k] = 1;
      continue;
    }
    for (int k = 0; k < x->nargs; k++) {
      int a = x->args[k].node;
      if (x->args[k].kind == TP_ARG_NODE && a >= 0 && a < g->n && !seen[a]) seen[a] = 1, stack[sp++] = a;
    }
  }
done:
  tp_free(seen);
  tp_free(stack);
  return s;
}

/* d: the declared type of input v with the run-time shape `given` when one
 * is passed (checked against every fixed dim and the rank), else the
 * declared shape, which must then be fixed. */
static tp_status input_desc(const vinfo *v, const tp_desc *given, tp_desc *d) {
  memset(d, 0, sizeof *d);
  if (!v->is_tensor)
    return tp_fail(TP_ERR_UNSUPPORTED, "onnx: input '%s' is not a tensor (sequences, maps and optionals are not supported)", v->name);
  if (!tp_onnx_to_dtype(v->elem, &d->dtype))
    return tp_fail(TP_ERR_UNSUPPORTED, "onnx: input '%s' has dtype %s, which is not supported (" TP_ONNX_DTYPES ")",
                   v->name, tp_onnx_dtype_name(v->elem));
  if (v->too_many_dims)
    return tp_fail(TP_ERR_UNSUPPORTED, "onnx: input '%s' has more than %d dims", v->name, TP_MAX_DIMS);
  if (given) {
    char b[96];
    if (given->dtype != d->dtype)
      return tp_fail(TP_ERR_INVALID_ARG, "onnx: input '%s' must be %s, got %s", v->name, tp_dtype_name(d->dtype),
                     tp_dtype_name(given->dtype));
    if (v->has_shape && given->ndim != v->ndim)
      return tp_fail(TP_ERR_INVALID_ARG, "onnx: input '%s' must have rank %d, got shape %s", v->name, v->ndim,
                     tp_shape_str(given->ndim, given->shape, b, sizeof b));
    for (int k = 0; v->has_shape && k < v->ndim; k++)
      if (v->dims[k] >= 0 && given->shape[k] != v->dims[k])
        return tp_fail(TP_ERR_INVALID_ARG, "onnx: input '%s' dim %d must be %lld, got shape %s", v->name, k,
                       (long long)v->dims[k], tp_shape_str(given->ndim, given->shape, b, sizeof b));
    d->ndim = given->ndim;
    memcpy(d->shape, given->shape, sizeof(int64_t) * (size_t)given->ndim);
    return TP_OK;
  }
  if (!v->has_shape)
    return tp_fail(TP_ERR_UNSUPPORTED, "onnx: input '%s' has no shape; a fixed shape is required", v->name);
  if (v->sym)
    return tp_fail(TP_ERR_UNSUPPORTED, "onnx: input '%s' has a symbolic dim '%s'; a fixed shape is required",
                   v->name, v->sym);
  d->ndim = v->ndim;
  memcpy(d->shape, v->dims, sizeof(int64_t) * (size_t)v->ndim);
  return TP_OK;
}

/* A DequantizeLinear of a constant weight kept as a node (onnx_quant.c,
 * for stax's qlinear pass) that is not read as a matmul / linear weight
 * (2-D) or a conv2d weight (4-D) or bias (1-D int32): folded now, as every
 * other constant computation, so eager mode does not dequantize it on
 * every call (an embedding table, say). */
static tp_status fold_kept_dequant(imp *m) {
  tp_graph *g = m->g;
  for (int i = 0; i < g->n; i++) {
    tp_node *n = &g->nodes[i];
    if (n->kind != TP_NODE_CALL || n->op != TP_OP_DEQUANTIZE) continue;
    int konst = 1, used = 0, weight_only = 1;
    for (int k = 0; k < n->nargs; k++)
      if (n->args[k].kind == TP_ARG_NODE && g->nodes[n->args[k].node].kind != TP_NODE_GET_ATTR) konst = 0;
    if (!konst) continue;
    for (int j = i + 1; j < g->n; j++) {
      const tp_node *u = &g->nodes[j];
      for (int k = 0; k < u->nargs; k++)
        if (u->args[k].kind == TP_ARG_NODE && u->args[k].node == i) {
          used = 1;
          int nd = g->nodes[n->args[0].node].desc.ndim;
          int ok = u->kind == TP_NODE_CALL &&
                   (((u->op == TP_OP_MATMUL || u->op == TP_OP_LINEAR) && k == 1 && nd == 2) ||
                    (u->op == TP_OP_CONV2D && ((k == 1 && nd == 4) || (k == 2 && nd == 1))));
          if (!ok) weight_only = 0;
        }
    }
    if (used && weight_only) continue;
    tp_tensor *ins[TP_MAX_OPERANDS] = {0}, *y = NULL;
    for (int k = 0; k < n->nargs; k++)
      if (n->args[k].kind == TP_ARG_NODE) ins[k] = g->nodes[n->args[k].node].val;
    TP_TRY(tp_op_call(TP_OP_DEQUANTIZE, n->nargs, ins, &n->attrs, &y));
    char *t = tp_strdup(n->name);
    if (!t) {
      tp_tensor_release(y);
      return TP_ERR_OUT_OF_MEMORY;
    }
    n->kind = TP_NODE_GET_ATTR, n->op = TP_OP_ADD, n->nargs = 0, n->target = t;
    tp_graph_set_val(g, i, y);
    tp_tensor_release(y);
  }
  return TP_OK;
}

static int train_index(const imp *m, const char *name) {
  for (int k = 0; k < m->ntrain; k++)
    if (!strcmp(m->train_names[k], name)) return k;
  return -1;
}

/* A placeholder named after the ONNX name (sanitized, made unique). */
static tp_status add_placeholder(imp *m, const char *onnx_name, const tp_desc *d, int *idx) {
  char nm[128], un_[160];
  tp_onnx_sanitize_name(onnx_name, nm, sizeof nm);
  snprintf(un_, sizeof un_, "%s", nm);
  for (int k = 2; tp_graph_find(m->g, un_) >= 0; k++) snprintf(un_, sizeof un_, "%s_%d", nm, k);
  return tp_graph_add_node(m->g, TP_NODE_PLACEHOLDER, un_, TP_OP_ADD, 0, NULL, NULL, d, idx);
}

static tp_status build(imp *m) {
  tp_status s;
  tp_desc *train_desc = NULL; /* the trainable initializers' types, placed after the inputs */
  if (m->ntrain) {
    if (!(train_desc = tp_calloc_sized((size_t)m->ntrain, sizeof(tp_desc)))) return TP_ERR_OUT_OF_MEMORY;
    for (int k = 0; k < m->ntrain; k++) train_desc[k].ndim = -1; /* not found yet */
  }
  /* initializers */
  for (int i = 0; i < m->md.ninits; i++) {
    tp_tensor *t;
    char *name = NULL;
    ref r;
    tp_pb rd = m->md.inits[i]; /* a copy: reading advances a reader, and a model imports many times */
    s = tp_onnx_tensor_read(&rd, "initializer", &t, &name);
    if (s) goto fail;
    char *an = tp_onnx_arena_str(&m->md, name ? name : "", name ? strlen(name) : 0);
    tp_free(name);
    if (!an) {
      tp_tensor_release(t);
      s = TP_ERR_OUT_OF_MEMORY;
      goto fail;
    }
    int k = m->ntrain ? train_index(m, an) : -1;
    if (k >= 0) { /* a trainable parameter: a placeholder, fed by the caller */
      tp_desc_of(t, &train_desc[k]);
      train_desc[k].weak = 0;
      if (train_desc[k].dtype == TP_F16 || train_desc[k].dtype == TP_BF16) /* a float32 master copy */
        train_desc[k].dtype = TP_F32, m->train_f32 = 1;
      tp_tensor_release(t);
      continue;
    }
    if ((s = tp_onnx_add_const(m, t, &r)) || (s = define(m, an, r))) goto fail;
  }
  for (int k = 0; k < m->ntrain; k++)
    if (train_desc[k].ndim < 0 || train_desc[k].dtype != TP_F32) {
      s = tp_fail(TP_ERR_INVALID_ARG,
                  "onnx: '%s' is not a float32, float16 or bfloat16 initializer of the model, so it cannot be trained",
                  m->train_names[k]);
      goto fail;
    }
  /* inputs without an initializer -> placeholders */
  int nrt = 0;
  for (int i = 0; i < m->md.ninputs; i++) {
    vinfo *v = &m->md.inputs[i];
    if (lookup(m, v->name) || (m->ntrain && train_index(m, v->name) >= 0)) continue;
    if (m->input_ord) m->input_ord[i] = nrt++;
    int b = 0;
    while (b < m->nbind && strcmp(m->bind_names[b], v->name)) b++;
    if (b < m->nbind) {
      ref r;
      tp_tensor *c;
      TP_TRY(tp_contiguous(m->bind_vals[b], &c));
      TP_TRY(tp_onnx_add_const(m, c, &r));
      TP_TRY(define(m, v->name, r));
      continue;
    }
    tp_desc d;
    int idx;
    if ((s = input_desc(v, m->in_desc ? m->in_desc[i] : NULL, &d)) || (s = add_placeholder(m, v->name, &d, &idx)))
      goto fail;
    if (m->input_node) m->input_node[i] = idx;
    ref r = {R_NODE, idx, 0, 0, 0};
    if ((s = define(m, v->name, r))) goto fail;
  }
  /* a part's fed values -> placeholders after the inputs */
  for (int k = 0; m->cut && k < m->cut->nfeed; k++) {
    int idx;
    if (lookup(m, m->cut->feed_names[k]))
      return tp_fail(TP_ERR_INTERNAL, "onnx: fed value '%s' is defined twice", m->cut->feed_names[k]);
    TP_TRY(add_placeholder(m, m->cut->feed_names[k], &m->cut->feed_descs[k], &idx));
    ref r = {R_NODE, idx, 0, 0, 0};
    TP_TRY(define(m, m->cut->feed_names[k], r));
  }
  /* trainable parameters -> placeholders after the inputs */
  for (int k = 0; k < m->ntrain; k++) {
    int idx;
    if ((s = add_placeholder(m, m->train_names[k], &train_desc[k], &idx))) goto fail;
    m->train_node[k] = idx;
    ref r = {R_NODE, idx, 0, 0, 0};
    if ((s = define(m, m->train_names[k], r))) goto fail;
  }
  tp_free_sized(train_desc, (size_t)m->ntrain * sizeof(tp_desc));
  train_desc = NULL;
  for (int i = 0; i < m->md.nnodes; i++)
    if (!m->cut || !m->cut->skip || !m->cut->skip[i]) TP_TRY(convert_node(m, &m->md.nodes[i]));
  int nout = m->md.noutputs;
  vinfo *outputs = m->md.outputs;
  vinfo cut_outs[TP_MAX_OPERANDS];
  if (m->cut && m->cut->nout > 0) {
    if (m->cut->nout > TP_MAX_OPERANDS)
      return tp_fail(TP_ERR_UNSUPPORTED, "onnx: %d graph outputs (at most %d)", m->cut->nout, TP_MAX_OPERANDS);
    nout = m->cut->nout;
    memset(cut_outs, 0, sizeof(vinfo) * (size_t)nout);
    for (int i = 0; i < nout; i++) cut_outs[i].name = (char *)m->cut->out_names[i];
    outputs = cut_outs;
  }
  if (nout > TP_MAX_OPERANDS)
    return tp_fail(TP_ERR_UNSUPPORTED, "onnx: %d graph outputs (at most %d)", nout, TP_MAX_OPERANDS);
  tp_arg outs[TP_MAX_OPERANDS];
  for (int i = 0; i < nout; i++) {
    entry *e = lookup(m, outputs[i].name);
    if (!e || e->r.kind == R_NONE)
      return tp_fail(TP_ERR_PARSE, "onnx: graph output '%s' is not computed by any node", outputs[i].name);
    TP_TRY(to_arg(m, e->r, &outs[i]));
  }
  int oidx;
  TP_TRY(tp_graph_add_node(m->g, TP_NODE_OUTPUT, "output", TP_OP_ADD, nout, outs, NULL, NULL, &oidx));
  { /* the ONNX output names, comma separated (read by the JS wrapper) */
    size_t len = 1, k = 0;
    char nm[128];
    for (int i = 0; i < nout; i++) { /* sized by the sanitized names: an empty name becomes "x" */
      tp_onnx_sanitize_name(outputs[i].name, nm, sizeof nm);
      len += strlen(nm) + 1;
    }
    char *names = tp_onnx_arena_alloc(&m->md, len);
    if (!names) return TP_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < nout; i++) {
      tp_onnx_sanitize_name(outputs[i].name, nm, sizeof nm);
      if (i) names[k++] = ',';
      size_t n = strlen(nm);
      memcpy(names + k, nm, n);
      k += n;
    }
    names[k] = 0;
    TP_TRY(tp_graph_set_custom(m->g, oidx, "onnx_outputs", names));
  }
  TP_TRY(fold_kept_dequant(m));
  s = tp_graph_verify(m->g);
  if (s) tp_fail_context(s, "onnx: the imported graph is invalid");
  return s;
fail:
  if (train_desc) tp_free_sized(train_desc, (size_t)m->ntrain * sizeof(tp_desc));
  return s;
}

tp_status tp_onnx_load(const void *bytes, size_t len, tp_graph **out) {
  return tp_onnx_load_with(bytes, len, 0, NULL, NULL, out);
}

tp_status tp_onnx_load_with(const void *bytes, size_t len, int nbind, const char *const *names,
                            tp_tensor *const *values, tp_graph **out) {
  if (!out || (len && !bytes) || nbind < 0 || (nbind && (!names || !values)))
    return tp_fail(TP_ERR_INVALID_ARG, "onnx: load: NULL argument");
  *out = NULL;
  omodel md;
  memset(&md, 0, sizeof md);
  tp_status s = tp_onnx_decode(&md, bytes, len);
  if (!s) s = tp_onnx_import(&md, nbind, names, values, NULL, out, NULL);
  if (s == TP_ERR_OUT_OF_MEMORY && strncmp(tp_last_error(), "onnx", 4))
    tp_fail(s, "onnx: out of memory");
  tp_onnx_decoded_free(&md);
  return s;
}

tp_status tp_onnx_import(const omodel *md, int nbind, const char *const *names, tp_tensor *const *values,
                         const tp_desc *const *in_desc, tp_graph **out, uint64_t *need) {
  return tp_onnx_import_ex(md, nbind, names, values, in_desc, 0, out, need);
}

tp_status tp_onnx_import_ex(const omodel *md, int nbind, const char *const *names, tp_tensor *const *values,
                            const tp_desc *const *in_desc, int keep_f16_weights, tp_graph **out, uint64_t *need) {
  return tp_onnx_import_train(md, nbind, names, values, in_desc, keep_f16_weights, 0, NULL, out, need, NULL);
}

static tp_status import_all(const omodel *md, int nbind, const char *const *names, tp_tensor *const *values,
                            const tp_desc *const *in_desc, int keep_f16_weights, int ntrain,
                            const char *const *train_names, const tp_onnx_cut *cut, tp_graph **out, uint64_t *need,
                            uint8_t *train_needed);

tp_status tp_onnx_import_cut(const omodel *md, const tp_desc *const *in_desc, int keep_f16_weights,
                             const tp_onnx_cut *cut, tp_graph **out, uint64_t *need) {
  return import_all(md, 0, NULL, NULL, in_desc, keep_f16_weights, 0, NULL, cut, out, need, NULL);
}

tp_status tp_onnx_import_train(const omodel *md, int nbind, const char *const *names, tp_tensor *const *values,
                               const tp_desc *const *in_desc, int keep_f16_weights, int ntrain,
                               const char *const *train_names, tp_graph **out, uint64_t *need,
                               uint8_t *train_needed) {
  return import_all(md, nbind, names, values, in_desc, keep_f16_weights, ntrain, train_names, NULL, out, need,
                    train_needed);
}

static tp_status import_all(const omodel *md, int nbind, const char *const *names, tp_tensor *const *values,
                            const tp_desc *const *in_desc, int keep_f16_weights, int ntrain,
                            const char *const *train_names, const tp_onnx_cut *cut, tp_graph **out, uint64_t *need,
                            uint8_t *train_needed) {
  *out = NULL;
  if (need) *need = 0;
  if (train_needed && ntrain > 0) memset(train_needed, 0, (size_t)ntrain);
  imp m;
  memset(&m, 0, sizeof m);
  /* borrowed: the import reads md and allocates its tables in md's arena;
   * what it adds is released below, so that a model imported many times
   * (one import per specialization, src/onnx/model.c) does not grow */
  m.md = *md;
  oblk *mark = md->arena;
  for (int i = 0; i < md->nnodes; i++)
    for (int k = 0; k < md->nodes[i].nattrs; k++) md->nodes[i].attrs[k].used = 0;
  m.nbind = nbind;
  m.bind_names = names;
  m.bind_vals = values;
  m.in_desc = in_desc;
  m.keep_f16_weights = keep_f16_weights;
  m.ntrain = ntrain > 0 ? ntrain : 0;
  m.train_names = train_names;
  m.cut = cut;
  tp_status s = TP_OK;
  if (md->ninputs && (!(m.input_node = tp_alloc(sizeof(int) * (size_t)md->ninputs)) ||
                      !(m.input_ord = tp_alloc(sizeof(int) * (size_t)md->ninputs))))
    s = TP_ERR_OUT_OF_MEMORY;
  if (!s && m.ntrain && (!(m.train_node = tp_alloc(sizeof(int) * (size_t)m.ntrain)) ||
                         !(m.train_needed = tp_calloc_sized((size_t)m.ntrain, 1))))
    s = TP_ERR_OUT_OF_MEMORY;
  for (int k = 0; !s && k < m.ntrain; k++) m.train_node[k] = -1;
  for (int i = 0; !s && i < md->ninputs; i++) m.input_node[i] = m.input_ord[i] = -1;
  if (!s) s = tp_graph_new(&m.g);
  if (!s) s = build(&m);
  if (s == TP_ERR_OUT_OF_MEMORY && strncmp(tp_last_error(), "onnx", 4))
    tp_fail(s, "onnx: out of memory");
  if (!s) *out = m.g, m.g = NULL;
  if (need) *need = m.need;
  if (train_needed && m.train_needed) memcpy(train_needed, m.train_needed, (size_t)m.ntrain);
  tp_free(m.train_node);
  if (m.train_needed) tp_free_sized(m.train_needed, (size_t)m.ntrain);
  tp_onnx_arena_release(&m.md, mark); /* the tables; output names live on in the graph */
  tp_graph_free(m.g);
  for (int i = 0; i < m.nconsts; i++) tp_tensor_release(m.consts[i]);
  tp_free(m.consts);
  tp_free(m.const_node);
  tp_free(m.input_node);
  tp_free(m.input_ord);
  return s;
}

tp_status tp_onnx_load_file_for_backend(const char *path, tp_graph **out) {
  if (!path || !out) return tp_fail(TP_ERR_INVALID_ARG, "onnx: load: NULL argument");
  *out = NULL;
  uint8_t *b;
  size_t n;
  TP_TRY(tp_onnx_read_file(path, &b, &n));
  omodel md;
  memset(&md, 0, sizeof md);
  tp_status s = tp_onnx_decode(&md, b, n);
  if (!s) s = tp_onnx_import_ex(&md, 0, NULL, NULL, NULL, 1, out, NULL);
  if (s == TP_ERR_OUT_OF_MEMORY && strncmp(tp_last_error(), "onnx", 4)) tp_fail(s, "onnx: out of memory");
  tp_onnx_decoded_free(&md);
  tp_free(b);
  if (s) tp_fail_context(s, "%s", path);
  return s;
}

tp_status tp_onnx_load_file(const char *path, tp_graph **out) {
  uint8_t *b;
  size_t n;
  TP_TRY(tp_onnx_read_file(path, &b, &n));
  tp_status s = tp_onnx_load(b, n, out);
  tp_free(b);
  if (s) tp_fail_context(s, "%s", path);
  return s;
}
