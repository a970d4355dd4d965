/* passes.c - graph passes: each builds a new graph from the old one, node
 * by node, with a map from old node indices to new ones. The pipeline is
 * the flat list at the end; tp_run_passes runs it and verifies after each
 * pass. Subgraphs are copied through unchanged. A node a pass makes in
 * place of an old one (rb.from) keeps the captured graph's name of that
 * node in tp_node.from, so explain()'s kernel_nodes can name captured
 * nodes after a rewrite (1x1 conv as a GEMM, a decomposed softmax). */
#include "lower.h"
#include "../ops/ops.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct rb {
  const tp_graph *in;
  tp_graph *out;
  int *map; /* old index -> new index */
  const char *from; /* the origin (tp_node_origin) of the old node being rewritten: fresh nodes get it */
} rb;

static tp_status rb_begin(const tp_graph *in, rb *r) {
  memset(r, 0, sizeof *r);
  r->in = in;
  r->map = tp_alloc(sizeof(int) * (size_t)(in->n ? in->n : 1));
  if (!r->map) return TP_ERR_OUT_OF_MEMORY;
  for (int i = 0; i < in->n; i++) r->map[i] = -1;
  tp_status s = tp_graph_new(&r->out);
  if (s) {
    tp_free(r->map);
    return s;
  }
  /* fresh nodes are named by number from next_id: start past every
   * numeric name of the input (a parsed graph's next_id does not count
   * its "%7"s), so a fresh node never takes a name a later copy needs */
  r->out->next_id = in->next_id;
  for (int i = 0; i < in->n; i++) {
    const char *nm = in->nodes[i].name;
    char *end;
    long v = nm && *nm >= '0' && *nm <= '9' ? strtol(nm, &end, 10) : -1;
    if (v >= 0 && !*end && v < 1000000000 && v >= r->out->next_id) r->out->next_id = (int)v + 1;
  }
  for (int i = 0; i < in->nsubs && !s; i++) {
    tp_graph *sub = NULL;
    s = tp_graph_copy(in->subs[i].g, &sub);
    if (!s) s = tp_graph_add_subgraph(r->out, in->subs[i].name, sub);
  }
  if (s) { /* nothing left for rb_end (callers may still call it) */
    tp_graph_free(r->out);
    tp_free(r->map);
    r->out = NULL;
    r->map = NULL;
  }
  return s;
}

static tp_status rb_end(rb *r, tp_status s, tp_graph **out) {
  tp_free(r->map);
  if (!s) s = tp_graph_verify(r->out);
  if (s) {
    tp_graph_free(r->out);
    return s;
  }
  *out = r->out;
  return TP_OK;
}

/* Append old node i with (optionally replaced) args, remapped. */
static tp_status rb_copy(rb *r, int i, const tp_arg *args, int nargs, const tp_attrs *attrs,
                         const tp_desc *desc, tp_op op) {
  const tp_node *n = &r->in->nodes[i];
  tp_arg a[65];
  if (!args) {
    args = n->args;
    nargs = n->nargs;
  }
  for (int k = 0; k < nargs; k++) {
    a[k] = args[k];
    if (a[k].kind == TP_ARG_NODE) a[k].node = r->map[args[k].node];
  }
  int idx;
  TP_TRY(tp_graph_add_node(r->out, n->kind, n->name, op, nargs, a, attrs ? attrs : &n->attrs,
                           desc ? desc : &n->desc, &idx));
  tp_node *m = &r->out->nodes[idx];
  if (n->target && !(m->target = tp_strdup(n->target))) return TP_ERR_OUT_OF_MEMORY;
  if (n->from) TP_TRY(tp_graph_set_from(r->out, idx, n->from));
  if (n->kind == TP_NODE_GET_ATTR) tp_graph_set_val(r->out, idx, n->val);
  for (int k = 0; k < n->ncustom; k++)
    TP_TRY(tp_graph_set_custom(r->out, idx, n->custom[k].key, n->custom[k].value));
  r->map[i] = idx;
  return TP_OK;
}

/* A fresh call node in the new graph (decompose); args are NEW indices. */
static tp_status rb_call(rb *r, tp_op op, int nargs, const tp_arg *args, const tp_attrs *at,
                         int *idx) {
  tp_desc descs[TP_MAX_OPERANDS], od;
  const tp_desc *dp[TP_MAX_OPERANDS];
  for (int k = 0; k < nargs; k++) {
    dp[k] = NULL;
    if (args[k].kind == TP_ARG_NODE) dp[k] = &r->out->nodes[args[k].node].desc;
    else if (args[k].kind == TP_ARG_SCALAR) {
      memset(&descs[k], 0, sizeof descs[k]);
      descs[k].dtype = args[k].is_int ? TP_I64 : TP_F32;
      descs[k].weak = args[k].is_int ? 1 : 2;
      dp[k] = &descs[k];
    }
  }
  tp_attrs def;
  if (!at) {
    tp_attrs_init(&def);
    at = &def;
  }
  TP_TRY(tp_op_infer(op, nargs, dp, at, &od));
  TP_TRY(tp_graph_add_node(r->out, TP_NODE_CALL, NULL, op, nargs, args, at, &od, idx));
  return r->from ? tp_graph_set_from(r->out, *idx, r->from) : TP_OK;
}

static int is_call(const tp_node *n) { return n->kind == TP_NODE_CALL; }
static int opaque(const tp_node *n) { return is_call(n) && (tp_op_flags(n->op) & TP_OPF_OPAQUE); }

/* ---- shapes: re-infer every call's desc ---- */
tp_status tp_pass_shapes(const tp_graph *in, tp_graph **out) {
  rb r;
  TP_TRY(rb_begin(in, &r));
  tp_status s = TP_OK;
  for (int i = 0; i < in->n && !s; i++) {
    const tp_node *n = &in->nodes[i];
    if (!is_call(n) || opaque(n)) {
      s = rb_copy(&r, i, NULL, 0, NULL, NULL, n->op);
      continue;
    }
    tp_desc descs[TP_MAX_OPERANDS], od;
    const tp_desc *dp[TP_MAX_OPERANDS];
    for (int k = 0; k < n->nargs; k++) {
      dp[k] = NULL;
      if (n->args[k].kind == TP_ARG_NODE) dp[k] = &r.out->nodes[r.map[n->args[k].node]].desc;
      else if (n->args[k].kind == TP_ARG_SCALAR) {
        memset(&descs[k], 0, sizeof descs[k]);
        descs[k].dtype = n->args[k].is_int ? TP_I64 : TP_F32;
        descs[k].weak = n->args[k].is_int ? 1 : 2;
        dp[k] = &descs[k];
      }
    }
    s = tp_op_infer(n->op, n->nargs, dp, &n->attrs, &od);
    if (s) s = tp_fail_context(s, "shapes: node %%%s", n->name);
    if (!s) s = rb_copy(&r, i, NULL, 0, NULL, &od, n->op);
  }
  return rb_end(&r, s, out);
}

/* ---- constant folding ---- */
/* An operand's constant: the value of its (get_attr) node in the new graph. */
static tp_tensor *fold_value(void *ctx, const tp_node *n, int k) {
  const rb *r = ctx;
  return r->out->nodes[r->map[n->args[k].node]].val;
}

/* A cast of a float16 constant to float32 read only as the B of matmul /
 * linear (and only there) stays: the scheduler gives the GEMM the float16
 * constant, packed once as float16 panels (issue 17), instead of a float32
 * copy of the weight. keep[i] = 1 for such casts. */
static signed char *h16_casts(const tp_graph *g) {
  signed char *keep = tp_alloc((size_t)(g->n ? g->n : 1));
  if (!keep) return NULL;
  for (int i = 0; i < g->n; i++) {
    const tp_node *n = &g->nodes[i], *w;
    keep[i] = (signed char)(is_call(n) && n->op == TP_OP_CAST && n->nargs == 1 && n->args[0].kind == TP_ARG_NODE &&
                            n->desc.dtype == TP_F32 && (w = &g->nodes[n->args[0].node])->kind == TP_NODE_GET_ATTR &&
                            w->val && w->desc.dtype == TP_F16 && w->desc.ndim != TP_DESC_GRAPH);
  }
  char *used = tp_alloc((size_t)(g->n ? g->n : 1));
  if (!used) {
    tp_free(keep);
    return NULL;
  }
  memset(used, 0, (size_t)(g->n ? g->n : 1));
  for (int u = 0; u < g->n; u++)
    for (int k = 0; k < g->nodes[u].nargs; k++) {
      const tp_node *un = &g->nodes[u];
      if (un->args[k].kind != TP_ARG_NODE || !keep[un->args[k].node]) continue;
      used[un->args[k].node] = 1;
      if (!is_call(un) || (un->op != TP_OP_MATMUL && un->op != TP_OP_LINEAR) || k != 1) keep[un->args[k].node] = 0;
    }
  for (int i = 0; i < g->n; i++) keep[i] &= used[i];
  tp_free(used);
  return keep;
}

tp_status tp_pass_fold(const tp_graph *in, tp_graph **out) {
  rb r;
  TP_TRY(rb_begin(in, &r));
  tp_status s = TP_OK;
  int folded = 0;
  signed char *keep = h16_casts(in);
  if (!keep) return rb_end(&r, TP_ERR_OUT_OF_MEMORY, out);
  for (int i = 0; i < in->n && !s; i++) {
    const tp_node *n = &in->nodes[i];
    int foldable = is_call(n) && !opaque(n) && !keep[i];
    for (int k = 0; foldable && k < n->nargs; k++) {
      const tp_arg *a = &n->args[k];
      if (a->kind != TP_ARG_NODE) continue;
      const tp_node *src = &r.out->nodes[r.map[a->node]];
      if (src->kind != TP_NODE_GET_ATTR || !src->val) foldable = 0;
    }
    if (!foldable) {
      s = rb_copy(&r, i, NULL, 0, NULL, NULL, n->op);
      continue;
    }
    tp_tensor *args[TP_MAX_OPERANDS], *scalars[TP_MAX_OPERANDS], *val = NULL;
    s = tp_node_operands(n, fold_value, &r, args, scalars);
    if (!s) s = tp_op_call(n->op, n->nargs, args, &n->attrs, &val);
    tp_node_operands_release(n, scalars);
    if (s) break;
    char name[32];
    do snprintf(name, sizeof name, "fold%d", folded++);
    while (tp_graph_find(r.out, name) >= 0 || tp_graph_find(in, name) >= 0);
    tp_desc d;
    tp_desc_of(val, &d);
    d.weak = 0;
    int idx;
    s = tp_graph_add_node(r.out, TP_NODE_GET_ATTR, name, TP_OP_COUNT, 0, NULL, NULL, &d, &idx);
    if (!s && !(r.out->nodes[idx].target = tp_strdup(name))) s = TP_ERR_OUT_OF_MEMORY;
    if (!s) {
      tp_graph_set_val(r.out, idx, val);
      r.map[i] = idx;
    }
    tp_tensor_release(val);
  }
  tp_free(keep);
  return rb_end(&r, s, out);
}

/* ---- common-subexpression elimination ---- */
static int same_call(const tp_graph *g, const tp_node *a, const tp_node *b) {
  (void)g;
  if (a->op != b->op || a->nargs != b->nargs || !tp_attrs_equal(a->op, &a->attrs, &b->attrs))
    return 0;
  for (int k = 0; k < a->nargs; k++) {
    const tp_arg *x = &a->args[k], *y = &b->args[k];
    if (x->kind != y->kind) return 0;
    if (x->kind == TP_ARG_NODE && x->node != y->node) return 0;
    if (x->kind == TP_ARG_SCALAR && (x->is_int != y->is_int || memcmp(&x->scalar, &y->scalar, sizeof x->scalar)))
      return 0;
  }
  return 1;
}

tp_status tp_pass_cse(const tp_graph *in, tp_graph **out) {
  rb r;
  TP_TRY(rb_begin(in, &r));
  tp_status s = TP_OK;
  for (int i = 0; i < in->n && !s; i++) {
    const tp_node *n = &in->nodes[i];
    if (is_call(n) && !opaque(n)) {
      /* compare with the already-emitted calls, args remapped */
      tp_node probe = *n;
      tp_arg a[TP_MAX_OPERANDS];
      for (int k = 0; k < n->nargs; k++) {
        a[k] = n->args[k];
        if (a[k].kind == TP_ARG_NODE) a[k].node = r.map[a[k].node];
      }
      probe.args = a;
      int hit = -1;
      for (int j = 0; j < r.out->n && hit < 0; j++)
        if (is_call(&r.out->nodes[j]) && same_call(r.out, &r.out->nodes[j], &probe)) hit = j;
      if (hit >= 0) {
        r.map[i] = hit;
        continue;
      }
    }
    s = rb_copy(&r, i, NULL, 0, NULL, NULL, n->op);
  }
  return rb_end(&r, s, out);
}

/* ---- dead-code elimination ---- */
tp_status tp_pass_dce(const tp_graph *in, tp_graph **out) {
  char *live = tp_alloc((size_t)(in->n ? in->n : 1));
  if (!live) return TP_ERR_OUT_OF_MEMORY;
  memset(live, 0, (size_t)in->n);
  for (int i = in->n - 1; i >= 0; i--) {
    const tp_node *n = &in->nodes[i];
    /* roots: inputs, the output, host calls (they may have effects) */
    if (n->kind == TP_NODE_OUTPUT || n->kind == TP_NODE_PLACEHOLDER ||
        (n->kind == TP_NODE_CALL && n->op == TP_OP_CALL_HOST))
      live[i] = 1;
    if (!live[i]) continue;
    for (int k = 0; k < n->nargs; k++)
      if (n->args[k].kind == TP_ARG_NODE) live[n->args[k].node] = 1;
  }
  rb r;
  tp_status s = rb_begin(in, &r);
  for (int i = 0; i < in->n && !s; i++)
    if (live[i]) s = rb_copy(&r, i, NULL, 0, NULL, NULL, in->nodes[i].op);
  tp_free(live);
  if (s && r.out == NULL) return s;
  return rb_end(&r, s, out);
}

/* ---- algebraic simplification ---- */
static int is_scalar(const tp_arg *a, double v) {
  return a->kind == TP_ARG_SCALAR && a->scalar == v;
}

tp_status tp_pass_simplify(const tp_graph *in, tp_graph **out) {
  rb r;
  TP_TRY(rb_begin(in, &r));
  tp_status s = TP_OK;
  for (int i = 0; i < in->n && !s; i++) {
    const tp_node *n = &in->nodes[i];
    int same = -1; /* old index of an operand this node equals */
    if (is_call(n) && !opaque(n)) {
      const tp_arg *a = n->args;
      const tp_node *x0 = n->nargs > 0 && a[0].kind == TP_ARG_NODE ? &in->nodes[a[0].node] : NULL;
      switch (n->op) {
        case TP_OP_MUL:
          if (x0 && is_scalar(&a[1], 1)) same = a[0].node;
          else if (a[1].kind == TP_ARG_NODE && is_scalar(&a[0], 1)) same = a[1].node;
          break;
        case TP_OP_ADD:
          if (x0 && is_scalar(&a[1], 0)) same = a[0].node;
          else if (a[1].kind == TP_ARG_NODE && is_scalar(&a[0], 0)) same = a[1].node;
          break;
        case TP_OP_SUB:
          if (x0 && is_scalar(&a[1], 0)) same = a[0].node;
          break;
        case TP_OP_DIV:
          if (x0 && is_scalar(&a[1], 1)) same = a[0].node;
          break;
        case TP_OP_CAST:
          if (x0) same = a[0].node;
          break;
        case TP_OP_RESHAPE:
          if (x0) same = a[0].node; /* reshape to the same shape */
          if (x0 && x0->kind == TP_NODE_CALL && x0->op == TP_OP_RESHAPE) {
            /* reshape(reshape(y)) -> reshape(y) */
            s = rb_copy(&r, i, x0->args, 1, NULL, NULL, n->op);
            continue;
          }
          break;
        case TP_OP_TRANSPOSE:
          if (x0 && x0->kind == TP_NODE_CALL && x0->op == TP_OP_TRANSPOSE) {
            int64_t a0, a1, b0, b1;
            if (!tp_norm_dim("transpose", n->attrs.dim, n->desc.ndim, &a0) &&
                !tp_norm_dim("transpose", n->attrs.dim1, n->desc.ndim, &a1) &&
                !tp_norm_dim("transpose", x0->attrs.dim, n->desc.ndim, &b0) &&
                !tp_norm_dim("transpose", x0->attrs.dim1, n->desc.ndim, &b1) &&
                ((a0 == b0 && a1 == b1) || (a0 == b1 && a1 == b0)) && x0->args[0].kind == TP_ARG_NODE)
              same = x0->args[0].node;
          }
          break;
        default: break;
      }
      tp_clear_error();
      if (same >= 0 && !tp_desc_equal(&in->nodes[same].desc, &n->desc)) same = -1;
    }
    if (same >= 0) r.map[i] = r.map[same];
    else s = rb_copy(&r, i, NULL, 0, NULL, NULL, n->op);
  }
  return rb_end(&r, s, out);
}

/* ---- decomposition of composite ops into primitives ---- */
static tp_arg node_arg(int idx) { return (tp_arg){TP_ARG_NODE, idx, 0, 0}; }
static tp_arg num(double v) { return (tp_arg){TP_ARG_SCALAR, 0, (double)(float)v, 0}; }

static tp_status bin(rb *r, tp_op op, tp_arg a, tp_arg b, int *idx) {
  tp_arg args[2] = {a, b};
  return rb_call(r, op, 2, args, NULL, idx);
}
static tp_status un(rb *r, tp_op op, int x, int *idx) {
  tp_arg a = node_arg(x);
  return rb_call(r, op, 1, &a, NULL, idx);
}
static tp_status reduce(rb *r, tp_op op, int x, int ndims, int *idx) {
  tp_attrs at;
  tp_attrs_init(&at);
  int nd = r->out->nodes[x].desc.ndim;
  at.nints = ndims;
  for (int k = 0; k < ndims; k++) at.ints[k] = nd - ndims + k;
  at.keepdim = 1;
  tp_arg a = node_arg(x);
  return rb_call(r, op, 1, &a, &at, idx);
}

tp_status tp_pass_decompose(const tp_graph *in, tp_graph **out) {
  rb r;
  TP_TRY(rb_begin(in, &r));
  tp_status s = TP_OK;
  for (int i = 0; i < in->n && !s; i++) {
    const tp_node *n = &in->nodes[i];
    r.from = tp_node_origin(n);
    int x = n->nargs > 0 && n->args[0].kind == TP_ARG_NODE ? r.map[n->args[0].node] : -1;
    int t1, t2, t3, t4, t5, y = -1;
    if (!is_call(n) || opaque(n) || x < 0) {
      s = rb_copy(&r, i, NULL, 0, NULL, NULL, n->op);
      continue;
    }
    switch (n->op) {
      case TP_OP_GELU:
        if (n->attrs.approximate != 1) goto keep; /* erf has no primitive: keep */
        /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
        if (!(s = bin(&r, TP_OP_MUL, node_arg(x), node_arg(x), &t1)) &&
            !(s = bin(&r, TP_OP_MUL, node_arg(t1), node_arg(x), &t2)) &&
            !(s = bin(&r, TP_OP_MUL, node_arg(t2), num(0.044715), &t3)) &&
            !(s = bin(&r, TP_OP_ADD, node_arg(x), node_arg(t3), &t4)) &&
            !(s = bin(&r, TP_OP_MUL, node_arg(t4), num(0.7978845608028654), &t5)) &&
            !(s = un(&r, TP_OP_TANH, t5, &t1)) &&
            !(s = bin(&r, TP_OP_ADD, node_arg(t1), num(1.0), &t2)) &&
            !(s = bin(&r, TP_OP_MUL, node_arg(x), num(0.5), &t3)))
          s = bin(&r, TP_OP_MUL, node_arg(t3), node_arg(t2), &y);
        break;
      case TP_OP_LINEAR: { /* matmul(x, transpose(w)) (+ b) */
        tp_attrs at;
        tp_attrs_init(&at);
        at.dim = 0;
        at.dim1 = 1;
        tp_arg w = node_arg(r.map[n->args[1].node]);
        if (!(s = rb_call(&r, TP_OP_TRANSPOSE, 1, &w, &at, &t1)) &&
            !(s = bin(&r, TP_OP_MATMUL, node_arg(x), node_arg(t1), &y)) && n->args[2].kind == TP_ARG_NODE)
          s = bin(&r, TP_OP_ADD, node_arg(y), node_arg(r.map[n->args[2].node]), &y);
        break;
      }
      case TP_OP_SOFTMAX:
      case TP_OP_LOG_SOFTMAX: {
        int64_t d;
        if (tp_norm_dim("softmax", n->attrs.dim, n->desc.ndim, &d) || d != n->desc.ndim - 1 ||
            r.out->nodes[x].desc.dtype != TP_F32) {
          tp_clear_error();
          goto keep;
        }
        /* m = max(x); e = exp(x - m); s = sum(e); softmax = e / s;
           log_softmax = (x - m) - log(s) */
        if (!(s = reduce(&r, TP_OP_MAX, x, 1, &t1)) &&
            !(s = bin(&r, TP_OP_SUB, node_arg(x), node_arg(t1), &t2)) &&
            !(s = un(&r, TP_OP_EXP, t2, &t3)) && !(s = reduce(&r, TP_OP_SUM, t3, 1, &t4))) {
          if (n->op == TP_OP_SOFTMAX) s = bin(&r, TP_OP_DIV, node_arg(t3), node_arg(t4), &y);
          else if (!(s = un(&r, TP_OP_LOG, t4, &t5))) s = bin(&r, TP_OP_SUB, node_arg(t2), node_arg(t5), &y);
        }
        break;
      }
      case TP_OP_LAYER_NORM: {
        /* mean = mean(x); c = x - mean; var = mean(c*c); y = c * rsqrt(var + eps) (* w) (+ b) */
        int k = n->attrs.nints;
        if (!(s = reduce(&r, TP_OP_MEAN, x, k, &t1)) &&
            !(s = bin(&r, TP_OP_SUB, node_arg(x), node_arg(t1), &t2)) &&
            !(s = bin(&r, TP_OP_MUL, node_arg(t2), node_arg(t2), &t3)) &&
            !(s = reduce(&r, TP_OP_MEAN, t3, k, &t4)) &&
            !(s = bin(&r, TP_OP_ADD, node_arg(t4), num(n->attrs.eps), &t5)) &&
            !(s = un(&r, TP_OP_RSQRT, t5, &t1)) && !(s = bin(&r, TP_OP_MUL, node_arg(t2), node_arg(t1), &y))) {
          if (n->args[1].kind == TP_ARG_NODE)
            s = bin(&r, TP_OP_MUL, node_arg(y), node_arg(r.map[n->args[1].node]), &y);
          if (!s && n->args[2].kind == TP_ARG_NODE)
            s = bin(&r, TP_OP_ADD, node_arg(y), node_arg(r.map[n->args[2].node]), &y);
        }
        break;
      }
      default:
      keep:
        s = rb_copy(&r, i, NULL, 0, NULL, NULL, n->op);
        continue;
    }
    if (!s) r.map[i] = y;
  }
  return rb_end(&r, s, out);
}

/* ---- conv_gemm: 1x1 convolutions as GEMMs ----
 * conv2d with a 1x1 kernel, stride 1, no padding, one group, float32:
 * y[n] = W[M, C] @ x[n][C, H*W] (+ b[M, 1]) is a matmul of the weight
 * reshaped to [M, C] with the input viewed as [N, C, H*W] (a view: no
 * copy), then viewed back as [N, M, H, W]. As a GEMM it is scheduled like
 * any matmul: the weight folded to a constant, bias and activation fused
 * into its epilogue (schedule.c), generated SIMD128 code in Wasm; as an op
 * kernel it was an eager call with its bias and activation as separate
 * passes. Other convolutions stay op kernels. */
static int conv_is_1x1(const tp_graph *g, const tp_node *n) {
  if (!is_call(n) || n->op != TP_OP_CONV2D || n->desc.dtype != TP_F32 || n->attrs.dim > 1) return 0;
  if (n->args[0].kind != TP_ARG_NODE || n->args[1].kind != TP_ARG_NODE) return 0;
  const tp_desc *x = &g->nodes[n->args[0].node].desc, *w = &g->nodes[n->args[1].node].desc;
  if (x->ndim != 4 || w->ndim != 4 || x->dtype != TP_F32 || w->dtype != TP_F32) return 0;
  if (w->shape[2] != 1 || w->shape[3] != 1 || w->shape[1] != x->shape[1]) return 0;
  const tp_node *wn = &g->nodes[n->args[1].node];
  if (is_call(wn) && wn->op == TP_OP_DEQUANTIZE) return 0; /* a QDQ convolution: qlinear's (qconv2d) */
  tp_conv2d_geom cg;
  if (tp_conv2d_geometry(x, w, &n->attrs, &cg) != TP_OK) {
    tp_clear_error();
    return 0;
  }
  return cg.G == 1 && cg.sh == 1 && cg.sw == 1 && cg.pt == 0 && cg.pl == 0 && cg.OH == cg.H && cg.OW == cg.W;
}

static tp_status reshape_to(rb *r, tp_arg x, int nd, const int64_t *shape, int *idx) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.nints = nd;
  for (int d = 0; d < nd; d++) at.ints[d] = shape[d];
  return rb_call(r, TP_OP_RESHAPE, 1, &x, &at, idx);
}

tp_status tp_pass_conv_gemm(const tp_graph *in, tp_graph **out) {
  rb r;
  TP_TRY(rb_begin(in, &r));
  tp_status s = TP_OK;
  for (int i = 0; i < in->n && !s; i++) {
    const tp_node *n = &in->nodes[i];
    if (!conv_is_1x1(in, n)) {
      s = rb_copy(&r, i, NULL, 0, NULL, NULL, n->op);
      continue;
    }
    r.from = tp_node_origin(n);
    const tp_desc *x = &in->nodes[n->args[0].node].desc, *w = &in->nodes[n->args[1].node].desc;
    int64_t N = x->shape[0], C = x->shape[1], P = x->shape[2] * x->shape[3], M = w->shape[0];
    int64_t ws[2] = {M, C}, xs[3] = {N, C, P}, ys[4] = {N, M, x->shape[2], x->shape[3]}, bs[3] = {M, 1, 1};
    int wi, xi, mi, yi, bi;
    /* one image: a plain 2-D GEMM [M, C] @ [C, P] (the scheduler's GEMMs do
     * not broadcast a 2-D weight over a batch; N > 1 stays a batched matmul) */
    if (!(s = reshape_to(&r, node_arg(r.map[n->args[1].node]), 2, ws, &wi)) &&
        !(s = reshape_to(&r, node_arg(r.map[n->args[0].node]), N == 1 ? 2 : 3, N == 1 ? xs + 1 : xs, &xi)) &&
        !(s = bin(&r, TP_OP_MATMUL, node_arg(wi), node_arg(xi), &mi)) &&
        !(s = reshape_to(&r, node_arg(mi), 4, ys, &yi)) && n->nargs > 2 && n->args[2].kind == TP_ARG_NODE &&
        !(s = reshape_to(&r, node_arg(r.map[n->args[2].node]), 3, bs, &bi)))
      s = bin(&r, TP_OP_ADD, node_arg(yi), node_arg(bi), &yi);
    if (!s) r.map[i] = yi;
  }
  return rb_end(&r, s, out);
}

/* ---- conv_bn: a per-channel scale and shift after a convolution folded
 * into its weight and bias ----
 * add(mul(conv2d(x, W, b), a), c), mul(conv2d(..), a) and add(conv2d(..),
 * c), with W, b, a and c constants (after fold: BatchNormalization imports
 * as x * a + c with a and c computed from its constants), a and c one
 * value per output channel ([M, 1, 1] or [1, M, 1, 1]) and each
 * intermediate read only by the next: conv2d(x, W * a, b * a + c). The
 * mul and add were two instructions of the pointwise kernel after each
 * depthwise and 3x3 convolution (an op kernel, so no epilogue); the
 * result rounds differently from the unfolded product by an ulp or so
 * (onnxruntime folds the same way). 1x1 convolutions are GEMMs by then
 * (conv_gemm), whose epilogue takes the mul and add. */
static const tp_tensor *channel_const(const rb *r, const tp_arg *a, int64_t M) {
  if (a->kind != TP_ARG_NODE) return NULL;
  const tp_node *n = &r->out->nodes[r->map[a->node]];
  if (n->kind != TP_NODE_GET_ATTR || !n->val || n->desc.dtype != TP_F32) return NULL;
  int nd = n->desc.ndim;
  if (nd < 3 || nd > 4 || n->desc.shape[nd - 3] != M) return NULL;
  for (int d = 0; d < nd; d++)
    if (d != nd - 3 && n->desc.shape[d] != 1) return NULL;
  return n->val;
}

static tp_status add_const(rb *r, tp_tensor *val, int *idx, int *counter) {
  char name[32];
  do snprintf(name, sizeof name, "convbn%d", (*counter)++);
  while (tp_graph_find(r->out, name) >= 0 || tp_graph_find(r->in, name) >= 0);
  tp_desc d;
  tp_desc_of(val, &d);
  d.weak = 0;
  TP_TRY(tp_graph_add_node(r->out, TP_NODE_GET_ATTR, name, TP_OP_COUNT, 0, NULL, NULL, &d, idx));
  if (!(r->out->nodes[*idx].target = tp_strdup(name))) return TP_ERR_OUT_OF_MEMORY;
  tp_graph_set_val(r->out, *idx, val);
  return TP_OK;
}

static tp_status reshape_val(const tp_tensor *t, int nd, const int64_t *shape, tp_tensor **out) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.nints = nd;
  for (int d = 0; d < nd; d++) at.ints[d] = shape[d];
  tp_tensor *in[1] = {(tp_tensor *)t};
  return tp_op_call(TP_OP_RESHAPE, 1, in, &at, out);
}

/* the new weight and bias: W * a, b * a + c (a or c NULL: 1 or 0) */
static tp_status bn_fold_values(const tp_tensor *W, const tp_tensor *b, const tp_tensor *a,
                                const tp_tensor *c, int64_t M, tp_tensor **w_out, tp_tensor **b_out) {
  int64_t s4[4] = {M, 1, 1, 1}, s1[1] = {M};
  tp_tensor *a4 = NULL, *a1 = NULL, *c1 = NULL, *t = NULL;
  tp_status s = TP_OK;
  if (a) {
    if (!(s = reshape_val(a, 4, s4, &a4)) && !(s = reshape_val(a, 1, s1, &a1))) {
      tp_tensor *in[2] = {(tp_tensor *)W, a4};
      s = tp_op_call(TP_OP_MUL, 2, in, NULL, w_out);
    }
  } else {
    s = reshape_val(W, 4, tp_tensor_shape(W), w_out); /* a new reference to W's data */
  }
  if (!s && c) s = reshape_val(c, 1, s1, &c1);
  if (!s) { /* b * a + c, from zeros when there was no bias */
    if (b) s = reshape_val(b, 1, s1, &t);
    else s = tp_zeros(TP_F32, 1, s1, &t);
  }
  if (!s && a1) {
    tp_tensor *in[2] = {t, a1}, *u = NULL;
    s = tp_op_call(TP_OP_MUL, 2, in, NULL, &u);
    tp_tensor_release(t);
    t = u;
  }
  if (!s && c1) {
    tp_tensor *in[2] = {t, c1}, *u = NULL;
    s = tp_op_call(TP_OP_ADD, 2, in, NULL, &u);
    tp_tensor_release(t);
    t = u;
  }
  if (!s) *b_out = t, t = NULL;
  tp_tensor_release(a4), tp_tensor_release(a1), tp_tensor_release(c1), tp_tensor_release(t);
  return s;
}

tp_status tp_pass_conv_bn(const tp_graph *in, tp_graph **out) {
  int *users = tp_alloc(sizeof(int) * (size_t)(in->n ? in->n : 1));
  if (!users) return TP_ERR_OUT_OF_MEMORY;
  memset(users, 0, sizeof(int) * (size_t)(in->n ? in->n : 1));
  for (int i = 0; i < in->n; i++)
    for (int k = 0; k < in->nodes[i].nargs; k++)
      if (in->nodes[i].args[k].kind == TP_ARG_NODE) users[in->nodes[i].args[k].node]++;
  rb r;
  tp_status s = rb_begin(in, &r);
  if (s) {
    tp_free(users);
    return s;
  }
  int counter = 0;
  for (int i = 0; i < in->n && !s; i++) {
    const tp_node *n = &in->nodes[i];
    /* n = add(m, c) or mul(conv, a); m = mul(conv, a) or conv */
    const tp_node *conv = NULL;
    const tp_tensor *a = NULL, *c = NULL;
    if (is_call(n) && (n->op == TP_OP_ADD || n->op == TP_OP_MUL) && n->nargs == 2 && n->desc.dtype == TP_F32) {
      for (int side = 0; side < 2 && !conv; side++) {
        const tp_arg *xa = &n->args[side], *ka = &n->args[1 - side];
        if (xa->kind != TP_ARG_NODE || users[xa->node] != 1) continue;
        const tp_node *x = &in->nodes[xa->node];
        if (!is_call(x)) continue;
        int64_t M = x->desc.ndim == 4 ? x->desc.shape[1] : -1;
        const tp_tensor *k = channel_const(&r, ka, M);
        if (!k || !tp_desc_equal(&x->desc, &n->desc)) continue;
        if (x->op == TP_OP_CONV2D) {
          conv = x;
          *(n->op == TP_OP_MUL ? &a : &c) = k;
        } else if (n->op == TP_OP_ADD && x->op == TP_OP_MUL && x->nargs == 2) {
          for (int s2 = 0; s2 < 2 && !conv; s2++) {
            const tp_arg *ya = &x->args[s2];
            if (ya->kind != TP_ARG_NODE || users[ya->node] != 1) continue;
            const tp_node *y = &in->nodes[ya->node];
            const tp_tensor *ak = channel_const(&r, &x->args[1 - s2], M);
            if (is_call(y) && y->op == TP_OP_CONV2D && ak && tp_desc_equal(&y->desc, &x->desc))
              conv = y, a = ak, c = k;
          }
        }
      }
    }
    const tp_node *wn = NULL, *bn = NULL;
    if (conv) {
      wn = conv->args[1].kind == TP_ARG_NODE ? &r.out->nodes[r.map[conv->args[1].node]] : NULL;
      bn = conv->nargs > 2 && conv->args[2].kind == TP_ARG_NODE ? &r.out->nodes[r.map[conv->args[2].node]] : NULL;
      if (!wn || wn->kind != TP_NODE_GET_ATTR || !wn->val || wn->desc.dtype != TP_F32 || wn->desc.ndim != 4 ||
          (bn && (bn->kind != TP_NODE_GET_ATTR || !bn->val || bn->desc.dtype != TP_F32)) ||
          conv->args[0].kind != TP_ARG_NODE || conv->desc.dtype != TP_F32)
        conv = NULL;
    }
    if (!conv) {
      s = rb_copy(&r, i, NULL, 0, NULL, NULL, n->op);
      continue;
    }
    tp_tensor *w2 = NULL, *b2 = NULL;
    int wi, bi;
    s = bn_fold_values(wn->val, bn ? bn->val : NULL, a, c, conv->desc.shape[1], &w2, &b2);
    if (!s) s = add_const(&r, w2, &wi, &counter);
    if (!s) s = add_const(&r, b2, &bi, &counter);
    tp_tensor_release(w2), tp_tensor_release(b2);
    if (!s) {
      tp_arg args[3] = {node_arg(r.map[conv->args[0].node]), node_arg(wi), node_arg(bi)};
      int yi;
      s = tp_graph_add_node(r.out, TP_NODE_CALL, NULL, TP_OP_CONV2D, 3, args, &conv->attrs, &n->desc, &yi);
      if (!s) s = tp_graph_set_from(r.out, yi, tp_node_origin(conv)); /* the model's conv */
      if (!s) r.map[i] = yi;
    }
  }
  tp_free(users);
  return rb_end(&r, s, out);
}

/* ---- qlinear: quantized linear layers onto the integer GEMM ---- */

/* The quantized matmul patterns the ONNX importer leaves (ORT's dynamic
 * quantization: DynamicQuantizeLinear -> MatMulInteger -> Cast -> Mul by
 * a_scale * b_scale (-> Add bias); QLinearMatMul's composition: the same
 * product then quantize):
 *   [quantize(] [relu(] [add(] mul(cast_f32(matmul_int(a, b, za?, zb?)), s) [, bias)] [)] [, ys, yz)]
 * with b 2-D, za one value, zb and bias per tensor / per column, s =
 * mul(sa, sb) or one tensor, become one qmatmul (ops.def): the integer GEMM
 * with the scale, bias, relu and requantization in its epilogue. The float
 * outputs are bit for bit the pattern's (the epilogue computes (float)acc *
 * (sa * sb[n]) + bias[n] as the graph does); the quantized ones multiply
 * acc by (sa * sb[n]) / ys once instead of dividing the product by ys (one
 * quantization step apart at worst, as onnxruntime's QLinearMatMul). */
typedef struct qmatch {
  int a, b, za, zb, bias, ys, yz; /* old node indices, -1: none */
  int sa, sb;                     /* old node indices, -1: the constant 1 */
  int relu;
  int b_nk;                       /* b is [N, K] (linear's weight): transposed, its scale / zero point reshaped to [N] */
  int conv;                       /* the conv2d node of a QDQ convolution (qconv2d), -1: a matmul */
} qmatch;

static int64_t numel_of(const tp_node *n) { return tp_shape_numel(n->desc.ndim, n->desc.shape); }
/* one value, or (n1 > 0) n1 values along the last dim */
static int one_or_cols(const tp_node *n, int64_t n1) {
  int64_t k = numel_of(n);
  return k == 1 || (n1 > 0 && k == n1 && n->desc.ndim >= 1 && n->desc.shape[n->desc.ndim - 1] == n1);
}
static const tp_node *arg_node(const tp_graph *g, const tp_node *n, int k) {
  return k < n->nargs && n->args[k].kind == TP_ARG_NODE ? &g->nodes[n->args[k].node] : NULL;
}

/* d = dequantize(x, s, z?) of an int8/uint8 x, float32 out: its x, s, z
 * (z -1 when absent); 0 otherwise. */
static int dequant_parts(const tp_graph *g, const tp_node *d, int *x, int *sc, int *z) {
  if (!d || !is_call(d) || d->op != TP_OP_DEQUANTIZE || d->desc.dtype != TP_F32 || d->nargs < 2) return 0;
  const tp_node *xn = arg_node(g, d, 0), *sn = arg_node(g, d, 1), *zn = arg_node(g, d, 2);
  if (!xn || !sn || sn->desc.dtype != TP_F32 || (xn->desc.dtype != TP_I8 && xn->desc.dtype != TP_U8)) return 0;
  if (d->nargs > 2 && d->args[2].kind != TP_ARG_NONE && !zn) return 0;
  *x = d->args[0].node, *sc = d->args[1].node, *z = zn ? d->args[2].node : -1;
  return 1;
}

/* Node i computed only from constants (get_attr values; a few levels of
 * views and ops over them): its value is fixed when the plan is made. */
static int from_constants(const tp_graph *g, int i, int depth) {
  const tp_node *n = &g->nodes[i];
  if (n->kind == TP_NODE_GET_ATTR) return n->val != NULL;
  if (!is_call(n) || depth == 0) return 0;
  for (int k = 0; k < n->nargs; k++)
    if (n->args[k].kind == TP_ARG_NODE && !from_constants(g, n->args[k].node, depth - 1)) return 0;
  return 1;
}

/* QDQ: matmul(dequantize(a), dequantize(b)) with b [K, N], or
 * linear(dequantize(a), dequantize(w), bias?) with w [N, K]: a's scale and
 * zero point one value; b's one value or one per output column. Both scales
 * computed from constants only: dequantize checks its scale on every call
 * (finite and > 0), qmatmul does not (the dynamic pattern's a_scale is 0
 * for an all-zero input), so a scale fed at run time keeps the unfused
 * graph and its check. */
static int match_qdq(const tp_graph *g, const tp_node *n, qmatch *q) {
  int sa, sb, za, zb;
  if (!dequant_parts(g, arg_node(g, n, 0), &q->a, &sa, &za) || !dequant_parts(g, arg_node(g, n, 1), &q->b, &sb, &zb)) return 0;
  if (!from_constants(g, sa, 4) || !from_constants(g, sb, 4)) return 0;
  const tp_node *a = &g->nodes[q->a], *b = &g->nodes[q->b];
  if (b->desc.ndim != 2 || a->desc.ndim < 1) return 0;
  int nk = n->op == TP_OP_LINEAR;
  int64_t N = b->desc.shape[nk ? 0 : 1];
  if (numel_of(&g->nodes[sa]) != 1 || (za >= 0 && numel_of(&g->nodes[za]) != 1)) return 0;
  for (int k = 0; k < 2; k++) { /* b's scale and zero point: one value, or N along b's dim of N */
    int p = k ? zb : sb;
    if (p < 0) continue;
    const tp_node *pn = &g->nodes[p];
    int64_t e = numel_of(pn);
    if (e == 1) continue;
    if (e != N) return 0;
    if (nk ? !(pn->desc.ndim == 1 || (pn->desc.ndim == 2 && pn->desc.shape[1] == 1)) : !one_or_cols(pn, N)) return 0;
  }
  if (nk && n->nargs > 2 && n->args[2].kind != TP_ARG_NONE) {
    const tp_node *bn = arg_node(g, n, 2);
    if (!bn || q->bias >= 0 || q->ys >= 0 || bn->desc.dtype != TP_F32 || numel_of(bn) != N) return 0;
    q->bias = n->args[2].node;
  }
  if (q->bias >= 0) {
    const tp_node *bn = &g->nodes[q->bias];
    if (bn->desc.dtype != TP_F32 || numel_of(bn) != N || bn->desc.shape[bn->desc.ndim - 1] != N) return 0;
  }
  q->sa = sa, q->sb = sb, q->za = za, q->zb = zb, q->b_nk = nk;
  return 1;
}

/* The n values of node i, a constant (get_attr) seen through reshapes, as
 * float32 into v; 0 when it is not one. */
static int const_floats(const tp_graph *g, int i, float *v, int64_t n) {
  for (int d = 0; d < 4 && is_call(&g->nodes[i]) && g->nodes[i].op == TP_OP_RESHAPE; d++) {
    if (g->nodes[i].args[0].kind != TP_ARG_NODE) return 0;
    i = g->nodes[i].args[0].node;
  }
  const tp_node *c = &g->nodes[i];
  if (c->kind != TP_NODE_GET_ATTR || !c->val || tp_tensor_numel(c->val) != n) return 0;
  for (int64_t k = 0; k < n; k++) v[k] = (float)tp_tensor_get_f64(c->val, k);
  return 1;
}

/* one value, or M along dim 0 with every other dim 1 ([M], [M,1,1,1]: a per-output-channel parameter of w) */
static int one_or_rows(const tp_node *n, int64_t M) {
  int64_t k = numel_of(n);
  if (k == 1) return 1;
  if (k != M || n->desc.ndim < 1 || n->desc.shape[0] != M) return 0;
  return 1;
}

/* QDQ convolution: conv2d(dequantize(x), dequantize(w), bias?) of an 8-bit
 * x (one scale and zero point) and w (one, or one per output channel),
 * both scales computed from constants (as match_qdq). A bias with a
 * quantized output must be dequantize(int32 b, s_b) with s_b equal to
 * x_scale * w_scale (as quantizers write it; checked on the constants'
 * values, else no fusion): b adds to the integer sum. */
static int match_qdq_conv(const tp_graph *g, int ci, qmatch *q) {
  const tp_node *n = &g->nodes[ci];
  int sa, sb, za, zb;
  if (n->nargs < 2 || !dequant_parts(g, arg_node(g, n, 0), &q->a, &sa, &za) || !dequant_parts(g, arg_node(g, n, 1), &q->b, &sb, &zb))
    return 0;
  if (!from_constants(g, sa, 4) || !from_constants(g, sb, 4)) return 0;
  const tp_node *w = &g->nodes[q->b];
  if (w->desc.ndim != 4 || g->nodes[q->a].desc.ndim != 4) return 0;
  int64_t M = w->desc.shape[0];
  if (numel_of(&g->nodes[sa]) != 1 || (za >= 0 && numel_of(&g->nodes[za]) != 1)) return 0;
  if (!one_or_rows(&g->nodes[sb], M) || (zb >= 0 && !one_or_rows(&g->nodes[zb], M))) return 0;
  if (n->nargs > 2 && n->args[2].kind != TP_ARG_NONE) {
    const tp_node *bn = arg_node(g, n, 2);
    if (!bn || numel_of(bn) != M || bn->desc.ndim != 1) return 0;
    if (q->ys < 0) {
      q->bias = n->args[2].node; /* float32, added after scaling */
    } else {
      int bq, bs, bz;
      if (!is_call(bn) || bn->op != TP_OP_DEQUANTIZE || bn->nargs < 2 || !arg_node(g, bn, 0) || !arg_node(g, bn, 1)) return 0;
      bq = bn->args[0].node, bs = bn->args[1].node, bz = bn->nargs > 2 && bn->args[2].kind == TP_ARG_NODE ? bn->args[2].node : -1;
      if (g->nodes[bq].desc.dtype != TP_I32 || numel_of(&g->nodes[bq]) != M) return 0;
      float *v = tp_alloc(sizeof(float) * (size_t)(3 * M + 2));
      int ok = v != NULL;
      float *vx = v, *vw = v ? v + 1 : NULL, *vb = v ? v + 1 + M : NULL, *vz = v ? v + 1 + 2 * M : NULL;
      int64_t nw = numel_of(&g->nodes[sb]);
      ok = ok && const_floats(g, sa, vx, 1) && const_floats(g, sb, vw, nw) && const_floats(g, bs, vb, numel_of(&g->nodes[bs]));
      if (ok && bz >= 0) ok = numel_of(&g->nodes[bz]) == 1 && const_floats(g, bz, vz, 1) && vz[0] == 0.0f;
      for (int64_t m = 0; ok && m < M; m++) {
        float want = vx[0] * vw[nw == 1 ? 0 : m], got = vb[numel_of(&g->nodes[bs]) == 1 ? 0 : m];
        ok = fabsf(got - want) <= 1e-6f * fabsf(want);
      }
      tp_free(v);
      if (!ok) return 0;
      q->bias = bq; /* int32, added to the sum */
    }
  }
  q->sa = sa, q->sb = sb, q->za = za, q->zb = zb, q->conv = ci;
  return 1;
}

/* one value, or M values along dim 1 of a convolution's NCHW output
 * ([M, 1, 1], [1, M, 1, 1]): per output channel when broadcast against it */
static int one_or_channels(const tp_node *n, int64_t M) {
  int64_t k = numel_of(n);
  int d = n->desc.ndim;
  return k == 1 || (k == M && d >= 3 && d <= 4 && n->desc.shape[d - 3] == M);
}

/* The scale s_idx of a dynamic pattern into q->sa (one value) and q->sb
 * (one value or one per output: `fits`): mul(sa, sb) of float32 operands in
 * either order, or one tensor. 0 when it is neither. */
static int split_scale(const tp_graph *g, int s_idx, int64_t n, int (*fits)(const tp_node *, int64_t), qmatch *q) {
  const tp_node *sn = &g->nodes[s_idx];
  const tp_node *s0 = is_call(sn) && sn->op == TP_OP_MUL && sn->nargs == 2 ? arg_node(g, sn, 0) : NULL;
  const tp_node *s1 = s0 ? arg_node(g, sn, 1) : NULL;
  int both = s0 && s1 && s0->desc.dtype == TP_F32 && s1->desc.dtype == TP_F32;
  if (both && numel_of(s0) == 1 && fits(s1, n)) q->sa = sn->args[0].node, q->sb = sn->args[1].node;
  else if (both && numel_of(s1) == 1 && fits(s0, n)) q->sa = sn->args[1].node, q->sb = sn->args[0].node;
  else if (numel_of(sn) == 1) q->sa = s_idx;
  else if (fits(sn, n)) q->sb = s_idx;
  else return 0;
  return 1;
}


/* ConvInteger's dynamic pattern (onnxruntime's quantize_dynamic of a Conv:
 * DynamicQuantizeLinear -> ConvInteger -> Cast -> Mul(x_scale * w_scale)
 * (-> Add bias [1, M, 1, 1]) (-> Relu)), the conv2d_int at ci and the
 * scale node s of its mul: x, w 8-bit, x's zero point one value, w's one
 * or one per output channel, the scale mul(sa, sb) or one tensor (one
 * value, or per channel), a float32 bias with one value per channel. It
 * becomes one qconv2d with a float output: (float)acc * (sa * sb[m]) +
 * bias[m], the pattern's float32 operations, so bit for bit the same. */
static int match_dyn_conv(const tp_graph *g, int ci, int s_idx, qmatch *q) {
  const tp_node *n = &g->nodes[ci], *x = arg_node(g, n, 0), *w = arg_node(g, n, 1);
  if (!x || !w || x->desc.ndim != 4 || w->desc.ndim != 4) return 0; /* (a bias comes only with a float output) */
  if ((x->desc.dtype != TP_I8 && x->desc.dtype != TP_U8) || (w->desc.dtype != TP_I8 && w->desc.dtype != TP_U8)) return 0;
  int64_t M = w->desc.shape[0];
  const tp_node *za = arg_node(g, n, 2), *zb = arg_node(g, n, 3);
  if ((n->nargs > 2 && n->args[2].kind != TP_ARG_NONE && !za) || (n->nargs > 3 && n->args[3].kind != TP_ARG_NONE && !zb)) return 0;
  if ((za && numel_of(za) != 1) || (zb && !one_or_rows(zb, M))) return 0;
  if (!split_scale(g, s_idx, M, one_or_channels, q)) return 0;
  if (q->bias >= 0) {
    const tp_node *b = &g->nodes[q->bias];
    if (b->desc.dtype != TP_F32 || numel_of(b) != M || !one_or_channels(b, M)) return 0;
  }
  q->a = n->args[0].node, q->b = n->args[1].node;
  q->za = za ? n->args[2].node : -1, q->zb = zb ? n->args[3].node : -1, q->conv = ci;
  return 1;
}

static int match_qlinear(const tp_graph *g, const int *users, int i, qmatch *q, int *inner, int *ninner) {
  memset(q, 0, sizeof *q);
  q->za = q->zb = q->bias = q->ys = q->yz = q->sa = q->sb = q->conv = -1;
  *ninner = 0;
  const tp_node *n = &g->nodes[i];
  if (!is_call(n)) return 0;
  int cur = i;
#define STEP(k)                                                                                  \
  do {                                                                                           \
    if (n->args[k].kind != TP_ARG_NODE || users[n->args[k].node] != 1) return 0;               \
    cur = n->args[k].node, inner[(*ninner)++] = cur, n = &g->nodes[cur];                        \
    if (!is_call(n)) return 0;                                                                   \
  } while (0)
  if (n->op == TP_OP_QUANTIZE) {
    const tp_node *ys = arg_node(g, n, 1), *yz = arg_node(g, n, 2);
    if (n->nargs != 3 || !ys || !yz || ys->desc.dtype != TP_F32 || numel_of(ys) != 1 || numel_of(yz) != 1) return 0;
    q->ys = n->args[1].node, q->yz = n->args[2].node;
    STEP(0);
  }
  if (n->op == TP_OP_RELU) {
    q->relu = 1;
    STEP(0);
  }
  if (n->op == TP_OP_ADD && q->ys < 0 && n->nargs == 2) {
    int side = -1;
    for (int k = 0; k < 2 && side < 0; k++) {
      const tp_node *x = arg_node(g, n, k);
      if (x && is_call(x) && (x->op == TP_OP_MUL || x->op == TP_OP_MATMUL || x->op == TP_OP_LINEAR)) side = k;
    }
    const tp_node *bn = side >= 0 ? arg_node(g, n, 1 - side) : NULL;
    if (!bn) return 0;
    q->bias = n->args[1 - side].node;
    STEP(side);
  }
  if ((n->op == TP_OP_MATMUL || n->op == TP_OP_LINEAR) && n->desc.dtype == TP_F32) return match_qdq(g, n, q);
  if (n->op == TP_OP_CONV2D && n->desc.dtype == TP_F32 && q->bias < 0) return match_qdq_conv(g, cur, q);
  if (n->op != TP_OP_MUL || n->nargs != 2 || n->desc.dtype != TP_F32) return 0;
  const tp_node *m = n;
  int cside = -1;
  for (int k = 0; k < 2 && cside < 0; k++) {
    const tp_node *x = arg_node(g, m, k);
    if (x && is_call(x) && x->op == TP_OP_CAST && x->desc.dtype == TP_F32 && users[m->args[k].node] == 1) cside = k;
  }
  if (cside < 0) return 0;
  const tp_node *sn = arg_node(g, m, 1 - cside);
  if (!sn || sn->desc.dtype != TP_F32) return 0;
  STEP(cside); /* the cast */
  if (!tp_desc_equal(&n->desc, &m->desc)) return 0;
  STEP(0); /* the matmul_int or conv2d_int */
  if (n->op == TP_OP_CONV2D_INT) return match_dyn_conv(g, cur, m->args[1 - cside].node, q);
  if (n->op != TP_OP_MATMUL_INT) return 0;
  const tp_node *an = arg_node(g, n, 0), *bn = arg_node(g, n, 1);
  if (!an || !bn || bn->desc.ndim != 2 || an->desc.ndim < 1) return 0;
  if ((an->desc.dtype != TP_I8 && an->desc.dtype != TP_U8) || (bn->desc.dtype != TP_I8 && bn->desc.dtype != TP_U8)) return 0;
  int64_t N = bn->desc.shape[1];
  q->a = n->args[0].node, q->b = n->args[1].node;
  const tp_node *za = arg_node(g, n, 2), *zb = arg_node(g, n, 3);
  if ((n->nargs > 2 && n->args[2].kind != TP_ARG_NONE && !za) || (n->nargs > 3 && n->args[3].kind != TP_ARG_NONE && !zb)) return 0;
  if (za && numel_of(za) != 1) return 0;
  if (zb && !one_or_cols(zb, N)) return 0;
  q->za = za ? n->args[2].node : -1, q->zb = zb ? n->args[3].node : -1;
  /* the scale: mul(sa, sb) (sa one value) or one tensor */
  int s_idx = m->args[1 - cside].node;
  if (!split_scale(g, s_idx, N, one_or_cols, q)) return 0;
  if (q->bias >= 0) {
    const tp_node *b = &g->nodes[q->bias];
    if (b->desc.dtype != TP_F32 || numel_of(b) != N || b->desc.shape[b->desc.ndim - 1] != N) return 0;
  }
  if (q->yz >= 0 && g->nodes[q->yz].desc.dtype != g->nodes[i].desc.dtype) return 0;
#undef STEP
  return 1;
}

tp_status tp_pass_qlinear(const tp_graph *in, tp_graph **out) {
  int n0 = in->n ? in->n : 1;
  int *users = tp_alloc(sizeof(int) * (size_t)n0), *role = tp_alloc(sizeof(int) * (size_t)n0);
  qmatch *qm = tp_alloc(sizeof(qmatch) * (size_t)n0);
  if (!users || !role || !qm) {
    tp_free(users), tp_free(role), tp_free(qm);
    return TP_ERR_OUT_OF_MEMORY;
  }
  memset(users, 0, sizeof(int) * (size_t)n0);
  memset(role, 0, sizeof(int) * (size_t)n0); /* 1: a pattern's root, 2: inside one */
  for (int i = 0; i < in->n; i++)
    for (int k = 0; k < in->nodes[i].nargs; k++)
      if (in->nodes[i].args[k].kind == TP_ARG_NODE) users[in->nodes[i].args[k].node]++;
  for (int i = in->n - 1; i >= 0; i--) { /* the largest pattern first: its inner nodes are no roots */
    int inner[8], ni;
    if (role[i] || !match_qlinear(in, users, i, &qm[i], inner, &ni)) continue;
    role[i] = 1;
    for (int k = 0; k < ni; k++) role[inner[k]] = 2;
  }
  rb r;
  tp_status s = rb_begin(in, &r);
  if (s) {
    tp_free(users), tp_free(role), tp_free(qm);
    return s;
  }
  int one = -1, counter = 0;
  for (int i = 0; i < in->n && !s; i++) {
    if (role[i] != 1) {
      s = rb_copy(&r, i, NULL, 0, NULL, NULL, in->nodes[i].op);
      continue;
    }
    const qmatch *q = &qm[i];
    r.from = tp_node_origin(&in->nodes[i]);
    if ((q->sa < 0 || q->sb < 0) && one < 0) { /* the constant 1 for a scale given as one tensor */
      tp_tensor *t = NULL;
      s = tp_full(TP_F32, 0, NULL, 1.0, &t);
      if (!s) s = add_const(&r, t, &one, &counter);
      tp_tensor_release(t);
      if (s) break;
    }
    const int ids[9] = {q->a, q->b, q->za, q->zb, q->sa, q->sb, q->bias, q->ys, q->yz};
    tp_arg args[9];
    for (int k = 0; k < 9; k++) {
      args[k] = (tp_arg){TP_ARG_NONE, 0, 0, 0};
      if (ids[k] >= 0) args[k] = node_arg(r.map[ids[k]]);
      else if (k == 4 || k == 5) args[k] = node_arg(one);
    }
    if (q->b_nk) { /* linear's [N, K] weight: its transpose (a view), per-row scale / zero point as [N] */
      tp_attrs ta;
      tp_attrs_init(&ta);
      ta.dim = 0, ta.dim1 = 1;
      int t;
      s = rb_call(&r, TP_OP_TRANSPOSE, 1, &args[1], &ta, &t);
      if (!s) args[1] = node_arg(t);
      for (int k = 3; k <= 5 && !s; k += 2) {
        if (args[k].kind != TP_ARG_NODE || numel_of(&r.out->nodes[args[k].node]) == 1) continue;
        tp_attrs ra;
        tp_attrs_init(&ra);
        ra.nints = 1, ra.ints[0] = numel_of(&r.out->nodes[args[k].node]);
        s = rb_call(&r, TP_OP_RESHAPE, 1, &args[k], &ra, &t);
        if (!s) args[k] = node_arg(t);
      }
      if (s) break;
    }
    if (q->conv >= 0) /* w's per-channel scale / zero point (and a float bias) as [M] */
      for (int k = 3; k <= 6 && !s; k += k == 5 ? 1 : 2) {
        if (args[k].kind != TP_ARG_NODE || numel_of(&r.out->nodes[args[k].node]) == 1 || r.out->nodes[args[k].node].desc.ndim == 1)
          continue;
        tp_attrs ra;
        tp_attrs_init(&ra);
        ra.nints = 1, ra.ints[0] = numel_of(&r.out->nodes[args[k].node]);
        int t;
        s = rb_call(&r, TP_OP_RESHAPE, 1, &args[k], &ra, &t);
        if (!s) args[k] = node_arg(t);
      }
    if (s) break;
    tp_attrs at;
    if (q->conv >= 0) at = in->nodes[q->conv].attrs; /* the window and groups */
    else tp_attrs_init(&at);
    at.keepdim = q->relu;
    int yi;
    s = rb_call(&r, q->conv >= 0 ? TP_OP_QCONV2D : TP_OP_QMATMUL, 9, args, &at, &yi);
    if (!s && !tp_desc_equal(&r.out->nodes[yi].desc, &in->nodes[i].desc))
      s = tp_fail(TP_ERR_INTERNAL, "qlinear: node %%%s would change its type", in->nodes[i].name);
    if (!s && in->nodes[i].name) { /* the fused node takes the name of the one it replaces (the model's node) */
      char *nm = tp_strdup(in->nodes[i].name);
      if (!nm) s = TP_ERR_OUT_OF_MEMORY;
      else tp_free(r.out->nodes[yi].name), r.out->nodes[yi].name = nm, tp_graph_names_changed(r.out);
    }
    if (!s) r.map[i] = yi;
  }
  tp_free(users), tp_free(role), tp_free(qm);
  return rb_end(&r, s, out);
}

/* ---- qlayout: channels last between chained quantized convolutions ----
 * A one-group qconv2d whose quantized result is read only as the input x
 * of other one-group qconv2ds (not an output, nothing else; grouped ones
 * run NCHW kernels) writes it channels last
 * ([N, OH, OW, M]: the integer GEMM's rows as they come, no transpose) and
 * those read it so (qconv2d's nhwc bits, ops.def), which also saves their
 * copy of x into channels last. Runs after dce: the dequantize nodes the
 * QDQ pattern left are gone by then. */
tp_status tp_pass_qlayout(const tp_graph *in, tp_graph **out) {
  int n0 = in->n ? in->n : 1;
  char *ok = tp_alloc((size_t)n0);
  if (!ok) return TP_ERR_OUT_OF_MEMORY;
  for (int i = 0; i < in->n; i++) {
    const tp_node *n = &in->nodes[i];
    ok[i] = is_call(n) && n->op == TP_OP_QCONV2D && n->attrs.dim == 1 && n->desc.dtype != TP_F32 && !(n->attrs.dim1 & 2);
  }
  for (int j = 0; j < in->n; j++) { /* every reader must be a one-group qconv2d's x (the GEMM path reads channels last) */
    const tp_node *u = &in->nodes[j];
    for (int k = 0; k < u->nargs; k++)
      if (u->args[k].kind == TP_ARG_NODE && ok[u->args[k].node] &&
          !(is_call(u) && u->op == TP_OP_QCONV2D && u->attrs.dim == 1 && k == 0))
        ok[u->args[k].node] = 0;
  }
  rb r;
  tp_status s = rb_begin(in, &r);
  if (s) {
    tp_free(ok);
    return s;
  }
  for (int i = 0; i < in->n && !s; i++) {
    const tp_node *n = &in->nodes[i];
    int bits = 0;
    if (is_call(n) && n->op == TP_OP_QCONV2D) {
      bits = ok[i] ? 2 : 0;
      if (n->args[0].kind == TP_ARG_NODE && ok[n->args[0].node]) bits |= 1;
    }
    if (!bits) {
      s = rb_copy(&r, i, NULL, 0, NULL, NULL, n->op);
      continue;
    }
    tp_attrs at = n->attrs;
    at.dim1 |= bits;
    const tp_desc *dp[TP_MAX_OPERANDS];
    for (int k = 0; k < n->nargs; k++) /* the operands as the new graph has them (x channels last) */
      dp[k] = n->args[k].kind == TP_ARG_NODE ? &r.out->nodes[r.map[n->args[k].node]].desc : NULL;
    tp_desc od;
    s = tp_op_infer(n->op, n->nargs, dp, &at, &od);
    if (!s) s = rb_copy(&r, i, NULL, 0, &at, &od, n->op);
  }
  tp_free(ok);
  return rb_end(&r, s, out);
}

/* ---- the pipeline ---- */
static const tp_pass_info pipeline[] = {
    {"shapes", tp_pass_shapes},   {"conv_gemm", tp_pass_conv_gemm},
    {"decompose", tp_pass_decompose}, {"simplify", tp_pass_simplify},
    {"qlinear", tp_pass_qlinear}, {"fold", tp_pass_fold},       {"conv_bn", tp_pass_conv_bn},
    {"cse", tp_pass_cse},
    {"dce", tp_pass_dce},         {"qlayout", tp_pass_qlayout},
};

const tp_pass_info *tp_passes(int *n) {
  *n = TP_ARRAY_LEN(pipeline);
  return pipeline;
}

tp_status tp_run_passes(const tp_graph *in, int decompose, const char *dump, char **dump_out,
                        tp_graph **out) {
  tp_graph *g = NULL;
  if (dump && strcmp(dump, "all")) {
    int k = 0;
    while (k < TP_ARRAY_LEN(pipeline) && strcmp(dump, pipeline[k].name)) k++;
    if (k == TP_ARRAY_LEN(pipeline)) {
      tp_buf names = {0};
      for (int i = 0; i < TP_ARRAY_LEN(pipeline); i++) tp_buf_printf(&names, "%s, ", pipeline[i].name);
      tp_status s = tp_fail(TP_ERR_INVALID_ARG, "unknown pass '%s' (%sall)", dump, names.p ? names.p : "");
      tp_buf_free(&names);
      return s;
    }
  }
  /* a constant without its tensor (a get_attr with no data line) cannot be
   * compiled: the same error as the graph runner's */
  for (int i = 0; i < in->n; i++) {
    const tp_node *n = &in->nodes[i];
    if (n->kind == TP_NODE_GET_ATTR && n->desc.ndim != TP_DESC_GRAPH && !n->val)
      return tp_fail(TP_ERR_INVALID_ARG, "constant %%%s has no data", n->name);
  }
  TP_TRY(tp_graph_copy(in, &g));
  if (dump_out) *dump_out = NULL;
  tp_buf dump_text = {0}; /* the dumps so far (best effort: not on failure) */
  for (int i = 0; i < TP_ARRAY_LEN(pipeline); i++) {
    if (pipeline[i].fn == tp_pass_decompose && !decompose) continue;
    tp_graph *next = NULL;
    tp_status s = pipeline[i].fn(g, &next);
    tp_graph_free(g);
    if (s) {
      tp_buf_free(&dump_text);
      return tp_fail_context(s, "pass %s", pipeline[i].name);
    }
    g = next;
    if (dump && dump_out && (!strcmp(dump, "all") || !strcmp(dump, pipeline[i].name))) {
      char *text = NULL;
      if (tp_graph_print(g, 0, &text) == TP_OK) {
        tp_buf_printf(&dump_text, "# after %s\n", pipeline[i].name);
        tp_buf_puts(&dump_text, text);
        tp_free_buffer(text);
      }
    }
  }
  if (dump_out && dump_text.p && !dump_text.oom) *dump_out = tp_buf_take(&dump_text);
  tp_buf_free(&dump_text);
  *out = g;
  return TP_OK;
}
