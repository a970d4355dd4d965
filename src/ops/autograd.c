/* autograd.c - the tape of eager operator calls and the backward engine
 * (docs/training.md). tp_op_call gives each result computed from operands
 * that require grad (while grad mode is on) a node: the op, its
 * attributes, the saved operands / result its derivative needs (detached
 * views, with their storage versions) and one edge per operand (the
 * operand's own node, or the leaf whose .grad receives the gradient).
 * Nodes are reference counted by the tensors they made and by the nodes
 * downstream, so a graph lives as long as a result that can reach it.
 * tp_backward orders the nodes reachable from a result (Kahn's algorithm
 * on the dependency counts), runs each node's derivative from
 * derivatives.def with grad mode off, and accumulates into the leaves. */
#include "autograd.h"

typedef struct tp_grad_edge {
  struct tp_grad_node *node; /* the operand's node (one reference), or NULL */
  tp_tensor *leaf;           /* else the leaf that requires grad (one reference), or NULL */
  int needs;                 /* the operand requires grad */
} tp_grad_edge;

struct tp_grad_node {
  int refs;
  tp_op op;
  tp_attrs attrs;
  int nin;
  int freed;        /* saved tensors released by a backward without retain_graph */
  int saves;        /* TP_SAVE_* of the op's row */
  tp_tensor **saved;  /* nin detached operands (NULL: absent or not saved) */
  uint64_t *saved_ver;
  tp_tensor *out;     /* the detached result when the row saves it */
  uint64_t out_ver;
  tp_grad_edge *edges;
  tp_grad_shape *shapes;
  int out_ndim;
  int64_t out_shape[TP_MAX_DIMS];
  /* backward scratch */
  int deps, seen;
  tp_tensor *gbuf;
  /* a custom node (tp_autograd_attach: a compiled backward graph) */
  tp_grad_custom_fn custom;
  void *custom_ud;
  void (*custom_free)(void *ud);
};

static TP_THREAD_LOCAL int grad_disabled; /* 0: grad mode on (the default) */

int tp_set_grad_enabled(int enabled) {
  int prev = !grad_disabled;
  grad_disabled = !enabled;
  return prev;
}
int tp_is_grad_enabled(void) { return !grad_disabled; }

tp_status tp_no_grad(const tp_callable *fn, int nin, tp_tensor *const *in, int max_out,
                     tp_tensor **outs, int *nout) {
  if (!fn || !fn->fn) return tp_fail(TP_ERR_INVALID_ARG, "no_grad: NULL function");
  int prev = tp_set_grad_enabled(0);
  tp_status s = fn->fn(fn->ud, nin, in, max_out, outs, nout);
  tp_set_grad_enabled(prev);
  return s;
}

/* ---- nodes ---- */
typedef struct tp_grad_node node;

static void node_free_saved(node *n) {
  for (int i = 0; i < n->nin; i++) {
    tp_tensor_release(n->saved[i]);
    n->saved[i] = NULL;
  }
  tp_tensor_release(n->out);
  n->out = NULL;
}

/* Iterative, so that a long chain of nodes does not recurse. */
static void node_release(node *n) {
  node *stack[64];
  node **st = stack;
  int cap = 64, sp = 0;
  if (!n || --n->refs > 0) return;
  st[sp++] = n;
  while (sp) {
    node *m = st[--sp];
    node_free_saved(m);
    for (int i = 0; i < m->nin; i++) {
      tp_tensor_release(m->edges[i].leaf);
      node *c = m->edges[i].node;
      if (c && --c->refs == 0) {
        if (sp == cap) {
          node **bigger = tp_alloc(sizeof(node *) * (size_t)cap * 2);
          if (!bigger) { /* out of memory while freeing: leak the rest rather than crash */
            continue;
          }
          memcpy(bigger, st, sizeof(node *) * (size_t)sp);
          if (st != stack) tp_free(st);
          st = bigger;
          cap *= 2;
        }
        st[sp++] = c;
      }
    }
    if (m->custom_free) m->custom_free(m->custom_ud);
    tp_free(m->saved);
    tp_free(m->saved_ver);
    tp_free(m->edges);
    tp_free(m->shapes);
    tp_free(m);
  }
  if (st != stack) tp_free(st);
}

static tp_status detach(tp_tensor *t, tp_tensor **out) {
  TP_TRY(tp_tensor_view(t, t->ndim, t->shape, t->strides, t->offset, out));
  (*out)->weak = t->weak;
  (*out)->wval = t->wval;
  return TP_OK;
}

/* A saved tensor keeps the operand's capture tag (opaque here), so that a
 * backward traced under capture (compiled training) reads the traced value. */
static tp_status save_view(tp_tensor *t, tp_tensor **out) {
  TP_TRY(detach(t, out));
  (*out)->trace_id = t->trace_id;
  (*out)->node = t->node;
  return TP_OK;
}

static TP_THREAD_LOCAL tp_grad_sink sink_fn;
static TP_THREAD_LOCAL void *sink_ud;
void tp_autograd_set_sink(tp_grad_sink fn, void *ud, tp_grad_sink *prev_fn, void **prev_ud) {
  if (prev_fn) *prev_fn = sink_fn;
  if (prev_ud) *prev_ud = sink_ud;
  sink_fn = fn;
  sink_ud = ud;
}

int tp_autograd_wants(int nin, tp_tensor *const *in) {
  if (grad_disabled) return 0;
  for (int i = 0; i < nin; i++)
    if (in[i] && in[i]->requires_grad) return 1;
  return 0;
}

tp_status tp_autograd_record(tp_op op, int nin, tp_tensor *const *in, const tp_attrs *attrs,
                             tp_tensor *y) {
  const tp_deriv_row *row = tp_deriv_row_of(op);
  if (!row || row->kind == TP_GRAD_NONDIFF || y->dtype != TP_F32) return TP_OK;
  tp_grad_node_release_hook = node_release;
  node *n = tp_alloc(sizeof *n);
  if (!n) return TP_ERR_OUT_OF_MEMORY;
  memset(n, 0, sizeof *n);
  n->refs = 1;
  n->op = op;
  n->attrs = *attrs;
  n->nin = nin;
  n->saves = row->saves;
  n->out_ndim = y->ndim;
  memcpy(n->out_shape, y->shape, sizeof n->out_shape);
  size_t k = nin ? (size_t)nin : 1;
  n->saved = tp_alloc(sizeof(tp_tensor *) * k);
  n->saved_ver = tp_alloc(sizeof(uint64_t) * k);
  n->edges = tp_alloc(sizeof(tp_grad_edge) * k);
  n->shapes = tp_alloc(sizeof(tp_grad_shape) * k);
  if (!n->saved || !n->saved_ver || !n->edges || !n->shapes) {
    tp_free(n->saved), tp_free(n->saved_ver), tp_free(n->edges), tp_free(n->shapes), tp_free(n);
    return TP_ERR_OUT_OF_MEMORY;
  }
  memset(n->saved, 0, sizeof(tp_tensor *) * k);
  memset(n->edges, 0, sizeof(tp_grad_edge) * k);
  memset(n->shapes, 0, sizeof(tp_grad_shape) * k);
  tp_status s = TP_OK;
  for (int i = 0; i < nin; i++) {
    tp_grad_edge *e = &n->edges[i];
    n->shapes[i].ndim = -1;
    if (!in[i]) continue;
    n->shapes[i].ndim = in[i]->ndim;
    memcpy(n->shapes[i].shape, in[i]->shape, sizeof n->shapes[i].shape);
    e->needs = in[i]->requires_grad;
    if (in[i]->grad_fn) {
      e->node = in[i]->grad_fn;
      e->node->refs++;
    } else if (in[i]->requires_grad) {
      e->leaf = in[i];
      tp_tensor_retain(in[i]);
    }
    if ((row->saves & TP_SAVE_IN) && !s) {
      s = save_view(in[i], &n->saved[i]);
      n->saved_ver[i] = in[i]->storage->version;
    }
  }
  if ((row->saves & TP_SAVE_OUT) && !s) {
    s = save_view(y, &n->out);
    n->out_ver = y->storage->version;
  }
  if (s) {
    node_release(n);
    return s;
  }
  y->requires_grad = 1;
  y->grad_fn = n;
  return TP_OK;
}

/* ---- the public tensor API ---- */
tp_status tp_tensor_set_requires_grad(tp_tensor *t, int requires_grad) {
  if (!t) return tp_fail(TP_ERR_INVALID_ARG, "requires_grad: NULL tensor");
  if (t->grad_fn) {
    if (requires_grad) return TP_OK;
    return tp_fail(TP_ERR_RUNTIME,
                   "you can only change requires_grad flags of leaf variables. If you want to use a "
                   "computed variable in a subgraph that doesn't require differentiation use "
                   "var_no_grad = var.detach().");
  }
  if (requires_grad && t->dtype != TP_F32) {
    if (tp_dtype_is_float(t->dtype))
      return tp_fail(TP_ERR_UNSUPPORTED, "requires_grad: only float32 tensors can require gradients "
                     "here (got %s)", tp_dtype_name(t->dtype));
    return tp_fail(TP_ERR_RUNTIME, "only Tensors of floating point dtype can require gradients "
                   "(got %s)", tp_dtype_name(t->dtype));
  }
  t->requires_grad = requires_grad != 0;
  return TP_OK;
}
int tp_tensor_requires_grad(const tp_tensor *t) { return t && t->requires_grad; }
int tp_tensor_is_leaf(const tp_tensor *t) { return t && !t->grad_fn; }
tp_tensor *tp_tensor_grad(const tp_tensor *t) { return t ? t->grad : NULL; }
uint64_t tp_tensor_version(const tp_tensor *t) { return t ? t->storage->version : 0; }

static int same_shape(int nd, const int64_t *a, int nd2, const int64_t *b) {
  if (nd != nd2) return 0;
  for (int i = 0; i < nd; i++)
    if (a[i] != b[i]) return 0;
  return 1;
}

tp_status tp_tensor_set_grad(tp_tensor *t, tp_tensor *g) {
  if (!t) return tp_fail(TP_ERR_INVALID_ARG, "set_grad: NULL tensor");
  if (g) {
    char b1[96], b2[96];
    if (g->dtype != TP_F32 || !same_shape(g->ndim, g->shape, t->ndim, t->shape))
      return tp_fail(TP_ERR_INVALID_ARG, "set_grad: assigned grad has %s %s, the tensor is %s %s",
                     tp_dtype_name(g->dtype), tp_shape_str(g->ndim, g->shape, b1, sizeof b1),
                     tp_dtype_name(t->dtype), tp_shape_str(t->ndim, t->shape, b2, sizeof b2));
    tp_tensor_retain(g);
  }
  tp_tensor_release(t->grad);
  t->grad = g;
  return TP_OK;
}

tp_status tp_tensor_detach(tp_tensor *t, tp_tensor **out) {
  if (!out) return tp_fail(TP_ERR_INVALID_ARG, "detach: NULL output pointer");
  *out = NULL;
  if (!t) return tp_fail(TP_ERR_INVALID_ARG, "detach: NULL tensor");
  return detach(t, out);
}

tp_status tp_tensor_assign(tp_tensor *dst, tp_tensor *src) {
  char b1[96], b2[96];
  if (!dst || !src) return tp_fail(TP_ERR_INVALID_ARG, "assign: NULL tensor");
  if (dst->requires_grad && !grad_disabled) {
    if (!dst->grad_fn)
      return tp_fail(TP_ERR_RUNTIME, "a leaf Variable that requires grad is being used in an in-place "
                     "operation.");
    return tp_fail(TP_ERR_UNSUPPORTED, "assign: in-place writes to a result recorded for autograd "
                   "are not supported (detach it first)");
  }
  if (!same_shape(src->ndim, src->shape, dst->ndim, dst->shape))
    return tp_fail(TP_ERR_INVALID_ARG, "assign: source shape %s does not match destination %s",
                   tp_shape_str(src->ndim, src->shape, b1, sizeof b1),
                   tp_shape_str(dst->ndim, dst->shape, b2, sizeof b2));
  if (!tp_tensor_is_contiguous(dst))
    return tp_fail(TP_ERR_UNSUPPORTED, "assign: the destination must be contiguous");
  if (src->storage == dst->storage && src->offset == dst->offset) {
    dst->storage->version++;
    return TP_OK;
  }
  tp_tensor *tmp = NULL; /* src may overlap dst: copy it out first */
  if (src->storage == dst->storage) {
    TP_TRY(tp_tensor_empty(src->dtype, src->ndim, src->shape, &tmp));
    tp_tensor_copy_into(src, tmp);
    src = tmp;
  }
  tp_tensor_copy_into(src, dst);
  tp_tensor_release(tmp);
  dst->storage->version++;
  return TP_OK;
}

/* ---- backward ---- */
tp_status tp_grad_sum_to(tp_tensor *g, int ndim, const int64_t *shape, tp_tensor **out) {
  if (same_shape(g->ndim, g->shape, ndim, shape)) {
    tp_tensor_retain(g);
    *out = g;
    return TP_OK;
  }
  int lead = g->ndim - ndim;
  if (lead < 0) return tp_fail(TP_ERR_INTERNAL, "autograd: gradient of rank %d for an operand of rank %d", g->ndim, ndim);
  tp_attrs at;
  tp_attrs_init(&at);
  at.keepdim = 1;
  for (int d = 0; d < g->ndim; d++)
    if (g->shape[d] != 1 && (d < lead || shape[d - lead] == 1)) at.ints[at.nints++] = d; /* size-1 dims: the reshape drops them */
  tp_tensor *s = g, *r = NULL;
  if (at.nints) TP_TRY(tp_op_call(TP_OP_SUM, 1, &g, &at, &s));
  else tp_tensor_retain(s);
  tp_attrs rs;
  tp_attrs_init(&rs);
  rs.nints = ndim;
  if (ndim) memcpy(rs.ints, shape, sizeof(int64_t) * (size_t)ndim);
  tp_status st = tp_op_call(TP_OP_RESHAPE, 1, &s, &rs, &r);
  tp_tensor_release(s);
  if (st) return st;
  *out = r;
  return TP_OK;
}

/* leaf.grad += g (a fresh tensor: .grad never shares storage with the graph).
 * The first gradient is moved, not copied, when nothing else can see it: one
 * reference to the tensor and to its storage (the caller's, released after),
 * contiguous, no tag, no autograd (a compiled backward's outputs, a
 * formula's fresh result); anything shared (the incoming gradient itself, a
 * view of it, a saved tensor, the user's gradient) is copied as before. */
static int private_gradient(const tp_tensor *g) {
  return g->refs == 1 && g->storage->refs == 1 && g->offset == 0 && tp_tensor_is_contiguous(g) && !g->weak &&
         g->dtype == TP_F32 && !g->trace_id && !g->requires_grad && !g->grad && !g->grad_fn &&
         g->storage->bytes == (size_t)tp_tensor_numel(g) * sizeof(float);
}

static tp_status accumulate(tp_tensor *leaf, tp_tensor *g) {
  if (sink_fn) return sink_fn(sink_ud, leaf, g);
  tp_tensor *r = NULL;
  if (!leaf->grad && private_gradient(g) && same_shape(g->ndim, g->shape, leaf->ndim, leaf->shape)) {
    tp_tensor_retain(g);
    leaf->grad = g;
    return TP_OK;
  }
  if (!leaf->grad) {
    TP_TRY(tp_tensor_empty(TP_F32, leaf->ndim, leaf->shape, &r));
    tp_tensor_copy_into(g, r);
  } else {
    tp_tensor *in[2] = {leaf->grad, g};
    TP_TRY(tp_op_call(TP_OP_ADD, 2, in, NULL, &r));
  }
  tp_tensor_release(leaf->grad);
  leaf->grad = r;
  return TP_OK;
}

static tp_status check_version(const node *n, const tp_tensor *t, uint64_t v, const char *what, int i) {
  if (!t || t->storage->version == v) return TP_OK;
  char b[96];
  return tp_fail(TP_ERR_RUNTIME,
                 "one of the variables needed for gradient computation has been modified by an "
                 "inplace operation: %s %d of %s, %s %s, is at version %llu; expected version %llu "
                 "instead",
                 what, i, tp_op_name(n->op), tp_dtype_name(t->dtype),
                 tp_shape_str(t->ndim, t->shape, b, sizeof b), (unsigned long long)t->storage->version,
                 (unsigned long long)v);
}

/* Runs one node: its gradient g -> its operands' gradients, routed. */
/* the backward running a custom node keeps the graph (retain_graph) */
static TP_THREAD_LOCAL int custom_retain = 1;
int tp_autograd_custom_retains(void) { return custom_retain; }

static tp_status run_node(node *n, int retain, node ***ready, int *nready, int *cready) {
  const tp_deriv_row *row = tp_deriv_row_of(n->op);
  tp_tensor *gin[TP_MAX_OPERANDS] = {0};
  int needs[TP_MAX_OPERANDS];
  tp_status s = TP_OK;
  if (n->gbuf && n->custom) {
    if (n->freed)
      return tp_fail(TP_ERR_RUNTIME,
                     "Trying to backward through the graph a second time (or directly access saved "
                     "tensors after they have already been freed): a compiled function's saved tensors "
                     "are freed when you call .backward(). Specify retain_graph=True if you need to "
                     "backward through the graph a second time.");
    for (int i = 0; i < n->nin; i++) needs[i] = n->edges[i].needs;
    int prev_retain = custom_retain;
    custom_retain = retain;
    s = n->custom(n->custom_ud, n->gbuf, n->nin, needs, gin);
    custom_retain = prev_retain;
    for (int i = 0; i < n->nin && !s; i++)
      if (gin[i] && !same_shape(gin[i]->ndim, gin[i]->shape, n->shapes[i].ndim, n->shapes[i].shape))
        s = tp_fail(TP_ERR_INTERNAL, "autograd: a compiled backward's gradient %d has the wrong shape", i);
  } else if (n->gbuf) {
    if (row->kind != TP_GRAD_FORMULA)
      return tp_fail(TP_ERR_UNSUPPORTED, "the derivative for '%s' is not implemented (%s)",
                     tp_op_name(n->op), row->reason ? row->reason : "no formula yet");
    if (n->freed && n->saves)
      return tp_fail(TP_ERR_RUNTIME,
                     "Trying to backward through the graph a second time (or directly access saved "
                     "tensors after they have already been freed). Saved intermediate values of the "
                     "graph are freed when you call .backward() or autograd.grad(). Specify "
                     "retain_graph=True if you need to backward through the graph a second time or "
                     "if you need to access saved tensors after calling backward.");
    for (int i = 0; i < n->nin; i++) TP_TRY(check_version(n, n->saved[i], n->saved_ver[i], "operand", i));
    TP_TRY(check_version(n, n->out, n->out_ver, "result", 0));
    for (int i = 0; i < n->nin; i++) needs[i] = n->edges[i].needs;
    tp_grad_ctx c = {n->op, &n->attrs, n->nin, n->saved, n->out, n->gbuf, needs, n->shapes};
    s = row->fn(&c, gin);
    for (int i = 0; i < n->nin && !s; i++) {
      if (!gin[i] || !needs[i]) continue;
      tp_tensor *r = NULL;
      s = tp_grad_sum_to(gin[i], n->shapes[i].ndim, n->shapes[i].shape, &r);
      if (!s && !same_shape(r->ndim, r->shape, n->shapes[i].ndim, n->shapes[i].shape)) {
        char b1[96], b2[96];
        s = tp_fail(TP_ERR_INTERNAL, "autograd: %s's gradient for operand %d has shape %s, not %s",
                    tp_op_name(n->op), i, tp_shape_str(r->ndim, r->shape, b1, sizeof b1),
                    tp_shape_str(n->shapes[i].ndim, n->shapes[i].shape, b2, sizeof b2));
      }
      tp_tensor_release(gin[i]);
      gin[i] = r;
    }
  }
  for (int i = 0; i < n->nin && !s; i++) {
    tp_grad_edge *e = &n->edges[i];
    if (e->node) {
      if (gin[i]) {
        if (!e->node->gbuf) {
          e->node->gbuf = gin[i];
          gin[i] = NULL;
        } else {
          tp_tensor *in[2] = {e->node->gbuf, gin[i]}, *r;
          s = tp_op_call(TP_OP_ADD, 2, in, NULL, &r);
          if (!s) tp_tensor_release(e->node->gbuf), e->node->gbuf = r;
        }
      }
      if (!s && --e->node->deps == 0) {
        if (*nready == *cready) {
          node **b = tp_realloc(*ready, sizeof(node *) * (size_t)(*cready * 2));
          if (!b) { s = TP_ERR_OUT_OF_MEMORY; break; }
          *ready = b;
          *cready *= 2;
        }
        (*ready)[(*nready)++] = e->node;
      }
    } else if (e->leaf && gin[i]) {
      s = accumulate(e->leaf, gin[i]);
    }
  }
  for (int i = 0; i < n->nin; i++) tp_tensor_release(gin[i]);
  if (!s && !retain) {
    node_free_saved(n);
    n->freed = 1;
  }
  return s;
}

tp_status tp_autograd_attach(tp_tensor *y, int nin, tp_tensor *const *in, tp_grad_custom_fn fn,
                             void *ud, void (*free_ud)(void *ud)) {
  if (!y || !fn || nin < 0 || nin > TP_MAX_OPERANDS || y->grad_fn || y->dtype != TP_F32) {
    if (free_ud) free_ud(ud);
    return tp_fail(TP_ERR_INTERNAL, "autograd: bad custom node");
  }
  tp_grad_node_release_hook = node_release;
  node *n = tp_alloc(sizeof *n);
  size_t k = nin ? (size_t)nin : 1;
  if (n) memset(n, 0, sizeof *n);
  if (n) {
    n->saved = tp_alloc(sizeof(tp_tensor *) * k);
    n->saved_ver = tp_alloc(sizeof(uint64_t) * k);
    n->edges = tp_alloc(sizeof(tp_grad_edge) * k);
    n->shapes = tp_alloc(sizeof(tp_grad_shape) * k);
  }
  if (!n || !n->saved || !n->saved_ver || !n->edges || !n->shapes) {
    if (n) tp_free(n->saved), tp_free(n->saved_ver), tp_free(n->edges), tp_free(n->shapes);
    tp_free(n);
    if (free_ud) free_ud(ud);
    return TP_ERR_OUT_OF_MEMORY;
  }
  memset(n->saved, 0, sizeof(tp_tensor *) * k);
  memset(n->edges, 0, sizeof(tp_grad_edge) * k);
  n->refs = 1;
  n->op = TP_OP_COUNT;
  n->nin = nin;
  n->custom = fn;
  n->custom_ud = ud;
  n->custom_free = free_ud;
  n->out_ndim = y->ndim;
  memcpy(n->out_shape, y->shape, sizeof n->out_shape);
  for (int i = 0; i < nin; i++) {
    n->shapes[i].ndim = in[i]->ndim;
    memcpy(n->shapes[i].shape, in[i]->shape, sizeof n->shapes[i].shape);
    n->edges[i].needs = in[i]->requires_grad;
    if (in[i]->grad_fn) {
      n->edges[i].node = in[i]->grad_fn;
      n->edges[i].node->refs++;
    } else if (in[i]->requires_grad) {
      n->edges[i].leaf = in[i];
      tp_tensor_retain(in[i]);
    }
  }
  y->requires_grad = 1;
  y->grad_fn = n;
  return TP_OK;
}

tp_status tp_backward(tp_tensor *t, tp_tensor *grad) { return tp_backward_ex(t, grad, 0); }

tp_status tp_backward_ex(tp_tensor *t, tp_tensor *grad, int retain_graph) {
  char b1[96], b2[96];
  if (!t) return tp_fail(TP_ERR_INVALID_ARG, "backward: NULL tensor");
  if (!t->requires_grad)
    return tp_fail(TP_ERR_RUNTIME, "element 0 of tensors does not require grad and does not have a grad_fn");
  if (grad) {
    if (grad->dtype != TP_F32 || !same_shape(grad->ndim, grad->shape, t->ndim, t->shape))
      return tp_fail(TP_ERR_RUNTIME, "Mismatch in shape: grad_output[0] has a shape of %s (%s) and "
                     "output[0] has a shape of %s (%s)",
                     tp_shape_str(grad->ndim, grad->shape, b1, sizeof b1), tp_dtype_name(grad->dtype),
                     tp_shape_str(t->ndim, t->shape, b2, sizeof b2), tp_dtype_name(t->dtype));
  } else if (tp_tensor_numel(t) != 1) {
    return tp_fail(TP_ERR_RUNTIME, "grad can be implicitly created only for scalar outputs (got shape %s)",
                   tp_shape_str(t->ndim, t->shape, b1, sizeof b1));
  }
  int prev = tp_set_grad_enabled(0);
  tp_tensor *g0 = grad;
  tp_status s = TP_OK;
  if (grad) tp_tensor_retain(grad);
  else s = tp_full(TP_F32, t->ndim, t->shape, 1.0, &g0);
  if (s) goto out;
  if (!t->grad_fn) {
    s = accumulate(t, g0);
    tp_tensor_release(g0);
    goto out;
  }
  /* every node reachable from t, with the number of edges into it */
  int nall = 0, call = 16, nready = 0, cready = 16;
  node **all = tp_alloc(sizeof(node *) * (size_t)call);
  node **ready = tp_alloc(sizeof(node *) * (size_t)cready);
  if (!all || !ready) {
    tp_free(all), tp_free(ready), tp_tensor_release(g0);
    s = TP_ERR_OUT_OF_MEMORY;
    goto out;
  }
  all[nall++] = t->grad_fn;
  t->grad_fn->seen = 1;
  for (int k = 0; k < nall && !s; k++) {
    node *m = all[k];
    for (int i = 0; i < m->nin; i++) {
      node *c = m->edges[i].node;
      if (!c) continue;
      c->deps++;
      if (c->seen) continue;
      c->seen = 1;
      if (nall == call) {
        node **b = tp_realloc(all, sizeof(node *) * (size_t)call * 2);
        if (!b) { s = TP_ERR_OUT_OF_MEMORY; break; }
        all = b;
        call *= 2;
      }
      all[nall++] = c;
    }
  }
  t->grad_fn->gbuf = g0;
  ready[nready++] = t->grad_fn;
  while (nready && !s) {
    node *m = ready[--nready];
    s = run_node(m, retain_graph, &ready, &nready, &cready);
    tp_tensor_release(m->gbuf);
    m->gbuf = NULL;
  }
  for (int k = 0; k < nall; k++) {
    tp_tensor_release(all[k]->gbuf);
    all[k]->gbuf = NULL;
    all[k]->seen = all[k]->deps = 0;
  }
  tp_free(all);
  tp_free(ready);
out:
  tp_set_grad_enabled(prev);
  return s;
}
