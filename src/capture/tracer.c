/* tracer.c - graph capture. While a trace is active on this thread, every
 * operator whose operands include a value of the trace (a proxy) records a
 * call_function node AND computes on the sample values (the seed's
 * Tracer(execute=True)), so shapes are concrete and the function's real
 * results come out of the capture. Proxies are ordinary tensors tagged with
 * (trace id, node index); tensors from outside become get_attr constants,
 * weak scalars become immediate operands. */
#include "capture.h"
#include "records.h"
#include <stdio.h>

/* Child graphs of nested compile regions one capture may hold (keys beyond
 * it raise "nested compile region reuse limit reached"), and the
 * placeholders whose shape reads are tracked (the bits of shape_read). */
#define MAX_NESTED_KEYS 64
#define SHAPE_READ_BITS 64

typedef struct tp_trace_state {
  uint64_t id;
  tp_graph *g;
  int fullgraph;
  int broken;
  char reason[160];
  int disabled; /* inside disable_capture */
  struct tp_trace_state *parent;
  uint64_t shape_read;
  char shape_where[8][96];
  int nconst, capconst, capconst_nodes;
  tp_tensor **consts; /* borrowed: the graph's get_attr vals own them */
  int *const_nodes;
  /* nested compile regions captured by this trace: (record, key) -> subgraph */
  int nnested;
  struct nested_entry {
    uint32_t rec;
    char key[200];
    char sub[64];
    int nres;
  } nested[MAX_NESTED_KEYS];
} tp_trace_state;

static TP_THREAD_LOCAL tp_trace_state *cur;
/* disable_capture() entered while no trace is live: compiled functions
 * called there run their original function (the seed's is_compiling() and
 * compiled calls read the same flag). */
static TP_THREAD_LOCAL int disabled_outside;
/* a joint forward + backward trace (compiled training): operands that
 * require grad are recorded, not a graph break */
static TP_THREAD_LOCAL int allow_grad;
void tp_capture_allow_grad(int on, int *prev) {
  if (prev) *prev = allow_grad;
  allow_grad = on;
}
static tp_nested_grad_hook nested_grad_hook;
void tp_capture_set_nested_grad_hook(tp_nested_grad_hook fn) {
  __atomic_store_n(&nested_grad_hook, fn, __ATOMIC_RELEASE);
}
static uint64_t next_id = 1;
static uint64_t next_region = 0;

int tp_capture_active(void) { return cur != NULL; }
int tp_is_compiling(void) { return cur != NULL && !cur->disabled; }

static int trace_live(uint64_t id) {
  for (tp_trace_state *t = cur; t; t = t->parent)
    if (t->id == id) return 1;
  return 0;
}

tp_status tp_capture_check(const char *what, int nin, tp_tensor *const *in) {
  if (!cur) return TP_OK;
  int has_proxy = 0;
  for (int i = 0; i < nin; i++) {
    if (!in[i] || !in[i]->trace_id) continue;
    if (in[i]->trace_id == cur->id) {
      has_proxy = 1;
    } else if (trace_live(in[i]->trace_id)) {
      return tp_fail(TP_ERR_CAPTURE, "%s: cannot combine values from different traces", what);
    }
  }
  if (has_proxy && cur->disabled)
    return tp_fail(TP_ERR_CAPTURE,
                   "%s: an operation on traced values ran inside disable_capture()", what);
  return TP_OK;
}

tp_status tp_capture_on_read(tp_tensor *t, const char *what) {
  if (!cur || t->trace_id != cur->id || cur->disabled) return TP_OK;
  if (cur->fullgraph)
    return tp_fail(TP_ERR_CAPTURE,
                   "graph break: %s() reads tensor data inside a captured function "
                   "(fullgraph=true forbids graph breaks)",
                   what);
  if (!cur->broken) {
    cur->broken = 1;
    snprintf(cur->reason, sizeof cur->reason, "%s() reads tensor data", what);
  }
  return TP_OK;
}

/* The node standing for a non-proxy tensor: a get_attr constant, made once
 * per tensor object. */
static tp_status const_node(tp_tensor *t, int *idx) {
  for (int i = 0; i < cur->nconst; i++)
    if (cur->consts[i] == t) {
      *idx = cur->const_nodes[i];
      return TP_OK;
    }
  TP_TRY(TP_ARRAY_RESERVE(cur->consts, cur->capconst, cur->nconst + 1));
  TP_TRY(TP_ARRAY_RESERVE(cur->const_nodes, cur->capconst_nodes, cur->nconst + 1));
  char name[32];
  snprintf(name, sizeof name, "c%d", cur->nconst);
  tp_desc d;
  tp_desc_of(t, &d);
  d.weak = 0;
  TP_TRY(tp_graph_add_node(cur->g, TP_NODE_GET_ATTR, name, TP_OP_COUNT, 0, NULL, NULL, &d, idx));
  tp_node *n = &cur->g->nodes[*idx];
  n->target = tp_strdup(name);
  if (!n->target) return TP_ERR_OUT_OF_MEMORY;
  tp_graph_set_val(cur->g, *idx, t);
  cur->consts[cur->nconst] = t;
  cur->const_nodes[cur->nconst] = *idx;
  cur->nconst++;
  return TP_OK;
}

void tp_capture_note_shape_read(const tp_tensor *t, const char *where) {
  if (!cur || !t || t->trace_id != cur->id || t->node < 0 || t->node >= cur->g->n) return;
  const tp_graph *g = cur->g;
  if (g->nodes[t->node].kind != TP_NODE_PLACEHOLDER) return;
  int k = 0; /* placeholder index */
  for (int i = 0; i < t->node; i++) k += g->nodes[i].kind == TP_NODE_PLACEHOLDER;
  if (k >= SHAPE_READ_BITS || (cur->shape_read >> k) & 1) return;
  cur->shape_read |= (uint64_t)1 << k;
  if (k < 8 && where) snprintf(cur->shape_where[k], sizeof cur->shape_where[k], "%s", where);
}

static int is_proxy(const tp_tensor *t) { return t && cur && t->trace_id == cur->id; }

/* Operands of a node recording in[]: proxies, weak scalars, constants. */
static tp_status build_args(int nin, tp_tensor *const *in, tp_arg *args) {
  for (int i = 0; i < nin; i++) {
    memset(&args[i], 0, sizeof args[i]);
    if (!in[i]) {
      args[i].kind = TP_ARG_NONE;
    } else if (is_proxy(in[i])) {
      args[i].kind = TP_ARG_NODE;
      args[i].node = in[i]->node;
    } else if (in[i]->weak && in[i]->ndim == 0) {
      args[i].kind = TP_ARG_SCALAR;
      /* a weak int's exact value (also past int64, stored as float32 then:
       * tp_scalar); a weak float's value as the float32 it computes with */
      args[i].scalar = in[i]->weak == 1 ? in[i]->wval : tp_tensor_get_f64(in[i], 0);
      args[i].is_int = in[i]->weak == 1;
    } else {
      args[i].kind = TP_ARG_NODE;
      TP_TRY(const_node(in[i], &args[i].node));
      if (allow_grad && in[i]->requires_grad) { /* a parameter: a value of the trace from now on */
        in[i]->trace_id = cur->id;
        in[i]->node = args[i].node;
      }
    }
  }
  return TP_OK;
}

tp_status tp_capture_record(tp_op op, int nin, tp_tensor *const *in, const tp_attrs *attrs,
                            tp_tensor *out) {
  if (!cur) return TP_OK;
  int any = 0;
  for (int i = 0; i < nin; i++) any |= is_proxy(in[i]) || (allow_grad && in[i] && in[i]->requires_grad);
  if (!any) return TP_OK; /* constants only: the result is a constant too */
  if (tp_is_grad_enabled() && !allow_grad) /* outside a joint trace: runs eagerly */
    for (int i = 0; i < nin; i++)
      if (in[i] && in[i]->requires_grad && !cur->broken && !cur->disabled) {
        if (cur->fullgraph)
          return tp_fail(TP_ERR_UNSUPPORTED, "%s: an operand requires grad inside a captured function "
                         "(compiled training is not implemented yet; fullgraph=true forbids running it eagerly)",
                         tp_op_name(op));
        cur->broken = 1;
        snprintf(cur->reason, sizeof cur->reason, "%s: an operand requires grad (compiled training is not "
                 "implemented yet: runs eagerly)", tp_op_name(op));
      }
  tp_arg args[TP_MAX_OPERANDS];
  TP_TRY(build_args(nin, in, args));
  tp_desc d;
  tp_desc_of(out, &d);
  int idx;
  TP_TRY(tp_graph_add_node(cur->g, TP_NODE_CALL, NULL, op, nin, args, attrs, &d, &idx));
  tp_graph_set_val(cur->g, idx, out); /* meta val: the sample, during capture */
  out->trace_id = cur->id;
  out->node = idx;
  return TP_OK;
}

/* Installed at the first trace start: before any trace there are no
 * proxies, so the observer could only ever answer "nothing to do". No
 * constructor, so native and Wasm builds (and static links) behave alike. */
static const tp_op_observer capture_observer = {tp_capture_check, tp_capture_record};
void tp_capture_install(void) { tp_ops_set_observer(&capture_observer); }

int tp_capture_sees(int nin, tp_tensor *const *in) {
  for (int i = 0; i < nin; i++)
    if (is_proxy(in[i])) return 1;
  return 0;
}

/* A joint trace (compiled training) cannot differentiate through an
 * opaque or nested region yet: when a tensor that requires grad goes in,
 * or a result that requires grad comes out (the region read a parameter),
 * the capture breaks (runs eagerly, where autograd sees every op) instead
 * of dropping the gradient; with fullgraph it is an error saying so. */
static tp_status grad_through_region(tp_trace_state *t, const char *what, int nin, tp_tensor *const *in, int n,
                                     tp_tensor *const *res) {
  if (!allow_grad || !tp_is_grad_enabled() || t->broken || t->disabled) return TP_OK;
  int rg = 0;
  for (int i = 0; i < nin; i++) rg |= in[i] && in[i]->requires_grad;
  for (int i = 0; i < n; i++) rg |= res[i] && res[i]->requires_grad;
  if (!rg) return TP_OK;
  if (t->fullgraph)
    return tp_fail(TP_ERR_UNSUPPORTED, "%s: a tensor that requires grad flows through it (compiled training "
                   "through opaque and nested regions is not supported yet; fullgraph=true forbids running it "
                   "eagerly)", what);
  t->broken = 1;
  snprintf(t->reason, sizeof t->reason, "%s: a tensor that requires grad flows through it (compiled training "
           "through it is not supported yet: runs eagerly)", what);
  return TP_OK;
}

/* One getitem per result of call node idx of trace t; res[k] become fresh
 * views (never tag a host's tensor), proxies of the getitems. */
static tp_status add_getitems(tp_trace_state *t, int idx, int n, tp_tensor **res) {
  tp_status s = TP_OK;
  for (int k = 0; k < n && !s; k++) {
    tp_tensor *v = NULL;
    s = tp_tensor_view(res[k], res[k]->ndim, res[k]->shape, res[k]->strides, res[k]->offset, &v);
    if (s) break;
    tp_tensor_release(res[k]);
    res[k] = v;
    tp_attrs at;
    tp_attrs_init(&at);
    at.result_index = k;
    tp_arg a = {TP_ARG_NODE, idx, 0, 0};
    tp_desc d;
    tp_desc_of(res[k], &d);
    d.weak = 0;
    int gi;
    s = tp_graph_add_node(t->g, TP_NODE_CALL, NULL, TP_OP_GETITEM, 1, &a, &at, &d, &gi);
    if (!s) {
      tp_graph_set_val(t->g, gi, res[k]);
      res[k]->trace_id = t->id;
      res[k]->node = gi;
    }
  }
  return s;
}

/* The seed's _capture_opaque_region: run the callable on the samples (with
 * capture suspended when disabled and recursive), check it produced
 * tensors, record one call_host node plus a getitem per result. */
tp_status tp_capture_opaque(int64_t call_id, int nin, tp_tensor *const *in,
                            const char *mode, int suspend, int recursive, const char *reason,
                            int max_out, tp_tensor **outs, int *nout) {
  *nout = 0;
  if (!cur) return tp_fail(TP_ERR_CAPTURE, "opaque region outside of a capture");
  tp_tensor *samples[TP_MAX_OPERANDS] = {0};
  tp_status s = TP_OK;
  if (nin > TP_MAX_OPERANDS) return tp_fail(TP_ERR_CAPTURE, "opaque region: too many inputs (%d)", nin);
  for (int i = 0; i < nin && !s; i++) /* plain views: the callable sees samples, not proxies */
    if (in[i]) s = tp_tensor_view(in[i], in[i]->ndim, in[i]->shape, in[i]->strides, in[i]->offset, &samples[i]);
  int prev = 0, n = 0;
  tp_tensor *res[TP_MAX_OPERANDS] = {0};
  if (!s) {
    if (suspend) tp_capture_set_disabled(1, &prev);
    s = tp_host_invoke(call_id, nin, samples, max_out < TP_MAX_OPERANDS ? max_out : TP_MAX_OPERANDS, res, &n);
    if (suspend) tp_capture_set_disabled(prev, NULL);
    if (s && s != TP_ERR_CAPTURE && s != TP_ERR_OUT_OF_MEMORY)
      s = tp_fail_context(TP_ERR_CAPTURE,
                          "opaque compiler callable could not produce a tensor output during capture");
    if (!s && n < 1)
      s = tp_fail(TP_ERR_CAPTURE, "opaque compiler callable could not produce a tensor output during capture");
  }
  for (int i = 0; i < nin; i++) tp_tensor_release(samples[i]);
  if (!s) s = grad_through_region(cur, "opaque region", nin, in, n, res);
  tp_arg args[TP_MAX_OPERANDS];
  int idx = -1;
  if (!s) s = build_args(nin, in, args);
  if (!s) {
    tp_attrs at;
    tp_attrs_init(&at);
    at.host_fn = call_id;
    at.nresults = n;
    tp_desc d;
    tp_desc_of(res[0], &d);
    d.weak = 0;
    s = tp_graph_add_node(cur->g, TP_NODE_CALL, NULL, TP_OP_CALL_HOST, nin, args, &at, &d, &idx);
  }
  if (!s) {
    char num[16];
    snprintf(num, sizeof num, "%d", n);
    s = tp_graph_set_custom(cur->g, idx, "opaque_region", "true");
    if (!s) s = tp_graph_set_custom(cur->g, idx, "opaque_mode", mode ? mode : "allow");
    if (!s && mode && !strcmp(mode, "disabled")) {
      s = tp_graph_set_custom(cur->g, idx, "disabled_region", "true");
      if (!s) s = tp_graph_set_custom(cur->g, idx, "disabled_recursive", recursive ? "true" : "false");
    }
    if (!s && reason && *reason) s = tp_graph_set_custom(cur->g, idx, "reason", reason);
    if (!s) s = tp_graph_set_custom(cur->g, idx, "nested_output_count", num);
  }
  if (!s) s = add_getitems(cur, idx, n, res);
  if (s) {
    for (int k = 0; k < n; k++) tp_tensor_release(res[k]);
    return s;
  }
  for (int k = 0; k < n; k++) outs[k] = res[k];
  *nout = n;
  return TP_OK;
}

tp_status tp_capture_host_call(int64_t call_id, int nin, tp_tensor *const *in, const char *tag,
                               int max_out, tp_tensor **outs, int *nout) {
  *nout = 0;
  if (!cur) return tp_fail(TP_ERR_CAPTURE, "host call outside of a capture");
  if (nin > TP_MAX_OPERANDS) return tp_fail(TP_ERR_CAPTURE, "host call: too many inputs (%d)", nin);
  tp_tensor *samples[TP_MAX_OPERANDS] = {0}, *res[TP_MAX_OPERANDS] = {0};
  tp_status s = TP_OK;
  for (int i = 0; i < nin && !s; i++)
    if (in[i]) s = tp_tensor_view(in[i], in[i]->ndim, in[i]->shape, in[i]->strides, in[i]->offset, &samples[i]);
  int n = 0;
  if (!s) {
    int prev = 0, grad = tp_set_grad_enabled(0);
    tp_capture_set_disabled(1, &prev);
    s = tp_host_invoke(call_id, nin, samples, max_out < TP_MAX_OPERANDS ? max_out : TP_MAX_OPERANDS, res, &n);
    tp_capture_set_disabled(prev, NULL);
    tp_set_grad_enabled(grad);
    if (!s && n < 1) s = tp_fail(TP_ERR_CAPTURE, "%s: the host function returned no tensor", tag);
  }
  for (int i = 0; i < nin; i++) tp_tensor_release(samples[i]);
  tp_arg args[TP_MAX_OPERANDS];
  int idx = -1;
  if (!s) s = build_args(nin, in, args);
  if (!s) {
    tp_attrs at;
    tp_attrs_init(&at);
    at.host_fn = call_id;
    at.nresults = n;
    tp_desc d;
    tp_desc_of(res[0], &d);
    d.weak = 0;
    s = tp_graph_add_node(cur->g, TP_NODE_CALL, NULL, TP_OP_CALL_HOST, nin, args, &at, &d, &idx);
  }
  if (!s) s = tp_graph_set_custom(cur->g, idx, "nested_region", tag);
  if (!s) s = add_getitems(cur, idx, n, res);
  if (s) {
    for (int k = 0; k < n; k++) tp_tensor_release(res[k]);
    return s;
  }
  for (int k = 0; k < n; k++) outs[k] = res[k];
  *nout = n;
  return TP_OK;
}

tp_status tp_capture_add_input(tp_tensor *sample, const char *name, tp_tensor **proxy) {
  *proxy = NULL;
  if (!cur) return tp_fail(TP_ERR_CAPTURE, "add_input outside of a capture");
  tp_desc d;
  tp_desc_of(sample, &d);
  d.weak = 0;
  int idx;
  TP_TRY(tp_graph_add_node(cur->g, TP_NODE_PLACEHOLDER, name, TP_OP_COUNT, 0, NULL, NULL, &d, &idx));
  TP_TRY(tp_tensor_view(sample, sample->ndim, sample->shape, sample->strides, sample->offset, proxy));
  (*proxy)->trace_id = cur->id;
  (*proxy)->node = idx;
  tp_graph_set_val(cur->g, idx, *proxy);
  return TP_OK;
}

void tp_trace_result_clear(tp_trace_result *r) {
  if (!r) return;
  tp_graph_free(r->graph);
  for (int i = 0; i < r->nout; i++) tp_tensor_release(r->outs[i]);
  memset(r, 0, sizeof *r);
}

static void pop(tp_trace_state *t) {
  for (int i = 0; i < t->nconst; i++) /* parameters tagged by a joint trace */
    if (t->consts[i]->trace_id == t->id) t->consts[i]->trace_id = 0, t->consts[i]->node = -1;
  cur = t->parent;
  tp_free(t->consts);
  tp_free(t->const_nodes);
}

tp_status tp_trace_named(const tp_callable *fn, int nin, tp_tensor *const *in,
                         const char *const *names, int fullgraph, tp_trace_result *r) {
  if (!fn || !fn->fn || !r || (nin && !in))
    return tp_fail(TP_ERR_INVALID_ARG, "trace: NULL argument");
  if (nin < 0 || nin > TP_MAX_OPERANDS)
    return tp_fail(TP_ERR_INVALID_ARG, "trace: %d inputs (max %d)", nin, TP_MAX_OPERANDS);
  memset(r, 0, sizeof *r);
  for (int i = 0; i < nin; i++)
    if (!in[i]) return tp_fail(TP_ERR_INVALID_ARG, "trace: input %d is NULL", i);
  tp_capture_install();
  tp_trace_state t;
  memset(&t, 0, sizeof t);
  t.id = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
  t.fullgraph = fullgraph;
  tp_tensor *views[TP_MAX_OPERANDS] = {0};
  tp_status s = tp_graph_new(&t.g);
  if (s) return s;
  t.parent = cur;
  cur = &t;
  /* placeholders: fresh views so the caller's tensors are never tagged */
  for (int i = 0; i < nin && !s; i++) {
    char name[32];
    const char *nm = names && names[i] && names[i][0] ? names[i] : NULL;
    if (!nm) {
      snprintf(name, sizeof name, "x%d", i);
      nm = name;
    }
    tp_desc d;
    tp_desc_of(in[i], &d);
    d.weak = 0;
    int idx;
    s = tp_graph_add_node(t.g, TP_NODE_PLACEHOLDER, nm, TP_OP_COUNT, 0, NULL, NULL, &d, &idx);
    if (!s) s = tp_tensor_view(in[i], in[i]->ndim, in[i]->shape, in[i]->strides, in[i]->offset,
                               &views[i]);
    if (!s) {
      views[i]->trace_id = t.id;
      views[i]->node = idx;
      tp_graph_set_val(t.g, idx, views[i]);
    }
  }
  if (!s) s = fn->fn(fn->ud, nin, views, TP_ARRAY_LEN(r->outs), r->outs, &r->nout);
  if (!s && (r->nout < 0 || r->nout > TP_ARRAY_LEN(r->outs)))
    s = tp_fail(TP_ERR_INVALID_ARG, "trace: the function returned %d outputs (max %d)", r->nout,
                TP_ARRAY_LEN(r->outs));
  if (!s && !t.broken) {
    tp_arg oargs[TP_ARRAY_LEN(r->outs)];
    for (int i = 0; i < r->nout && !s; i++) {
      tp_tensor *o = r->outs[i];
      memset(&oargs[i], 0, sizeof oargs[i]);
      oargs[i].kind = TP_ARG_NODE;
      if (!o) s = tp_fail(TP_ERR_INVALID_ARG, "trace: output %d is NULL", i);
      else if (is_proxy(o)) oargs[i].node = o->node;
      else s = const_node(o, &oargs[i].node);
    }
    if (!s) s = tp_graph_add_node(t.g, TP_NODE_OUTPUT, "output", TP_OP_COUNT, r->nout, oargs, NULL,
                                  NULL, NULL);
  }
  pop(&t);
  for (int i = 0; i < nin; i++) tp_tensor_release(views[i]);
  r->shape_read = t.shape_read;
  memcpy(r->shape_where, t.shape_where, sizeof r->shape_where);
  if (s) {
    tp_graph_free(t.g);
    if (r->nout < 0 || r->nout > TP_ARRAY_LEN(r->outs)) r->nout = 0;
    for (int i = 0; i < r->nout; i++) tp_tensor_release(r->outs[i]);
    r->nout = 0;
    return s;
  }
  if (t.broken) {
    tp_graph_free(t.g);
    r->broken = 1;
    memcpy(r->break_reason, t.reason, sizeof r->break_reason);
    return TP_OK;
  }
  /* samples served the capture; the graph keeps only constants' values */
  for (int i = 0; i < t.g->n; i++)
    if (t.g->nodes[i].kind != TP_NODE_GET_ATTR) tp_graph_set_val(t.g, i, NULL);
  r->graph = t.g;
  return TP_OK;
}

tp_status tp_trace(const tp_callable *fn, int nin, tp_tensor *const *in, int fullgraph,
                   tp_trace_result *out) {
  return tp_trace_named(fn, nin, in, NULL, fullgraph, out);
}

tp_status tp_capture_set_disabled(int disabled, int *prev) {
  if (prev) *prev = cur ? cur->disabled : disabled_outside;
  if (cur) cur->disabled = disabled;
  else disabled_outside = disabled;
  return TP_OK;
}

int tp_capture_disabled(void) { return cur ? cur->disabled : disabled_outside; }

/* ---- nested compile regions ---- */
static tp_status host_callable(void *ud, int nin, tp_tensor *const *in, int max_out,
                               tp_tensor **outs, int *nout) {
  return tp_host_invoke((int64_t)(intptr_t)ud, nin, in, max_out, outs, nout);
}

/* FNV-1a over the shape, dtype and bytes of each input: the automatic reuse
 * key covers values, as the seed's digest of the tensors does. */
static void auto_key(int nin, tp_tensor *const *in, const char *host_key, char *out, size_t n) {
  uint64_t h = 1469598103934665603ULL;
  size_t k = (size_t)snprintf(out, n, "auto");
  for (int i = 0; i < nin; i++) {
    if (!in[i]) {
      k += (size_t)snprintf(out + k, k < n ? n - k : 0, "|none");
      continue;
    }
    char sh[96];
    k += (size_t)snprintf(out + k, k < n ? n - k : 0, "|%s%s", tp_dtype_short(in[i]->dtype),
                          tp_shape_str(in[i]->ndim, in[i]->shape, sh, sizeof sh));
    int64_t m = tp_tensor_numel(in[i]);
    for (int64_t j = 0; j < m; j++) {
      double v = tp_tensor_get_f64(in[i], j);
      const unsigned char *b = (const unsigned char *)&v;
      for (size_t q = 0; q < sizeof v; q++) h = (h ^ b[q]) * 1099511628211ULL;
    }
  }
  if (k < n) snprintf(out + k, n - k, "|%016llx|%s", (unsigned long long)h, host_key ? host_key : "");
}

tp_status tp_capture_nested(uint32_t rec, int max_entries, int64_t call_id, const char *key,
                            int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                            int *nout) {
  *nout = 0;
  if (!cur) return tp_fail(TP_ERR_CAPTURE, "nested compile region outside of a capture");
  if (nin > TP_MAX_OPERANDS) return tp_fail(TP_ERR_CAPTURE, "nested compile region: too many inputs (%d)", nin);
  char k[200];
  if (key && !strncmp(key, "hash:", 5)) snprintf(k, sizeof k, "%s", key);
  else auto_key(nin, in, key, k, sizeof k);
  tp_trace_state *t = cur;
  struct nested_entry *e = NULL;
  int count = 0;
  for (int i = 0; i < t->nnested; i++)
    if (t->nested[i].rec == rec) {
      count++;
      if (!strcmp(t->nested[i].key, k)) e = &t->nested[i];
    }
  tp_tensor *samples[TP_MAX_OPERANDS] = {0}, *res[TP_MAX_OPERANDS] = {0};
  int n = 0;
  tp_status s = TP_OK;
  for (int i = 0; i < nin && !s; i++)
    if (in[i]) s = tp_tensor_view(in[i], in[i]->ndim, in[i]->shape, in[i]->strides, in[i]->offset, &samples[i]);
  /* compiled training: a region differentiated on its own (aot.c) */
  tp_nested_grad_hook hook = __atomic_load_n(&nested_grad_hook, __ATOMIC_ACQUIRE);
  tp_trace_result plain;
  memset(&plain, 0, sizeof plain);
  /* every first call in a joint trace: the hook's trace tells whether a
   * gradient flows (an input, or a parameter the region reads) */
  if (!s && !e && hook && allow_grad && tp_is_grad_enabled() && !t->broken && !t->disabled) {
    tp_record *R = tp_rec_by_id(rec);
    tp_nested_call c = {rec, max_entries, k, {host_callable, (void *)(intptr_t)call_id}, t->fullgraph,
                        R ? R->p.fw_fn : NULL, R ? R->p.bw_fn : NULL, R ? R->p.fw_ud : NULL,
                        R ? R->p.bw_ud : NULL};
    int handled = 0;
    char why[200] = "";
    s = hook(&c, nin, in, max_out, outs, nout, &handled, &plain, why, sizeof why);
    if (!s && handled) {
      for (int i = 0; i < nin; i++) tp_tensor_release(samples[i]);
      return TP_OK;
    }
    if (!s && why[0]) {
      tp_trace_result_clear(&plain);
      memset(&plain, 0, sizeof plain);
      if (t->fullgraph)
        s = tp_fail(TP_ERR_UNSUPPORTED, "nested compile region: a tensor that requires grad flows through it and "
                    "%s (fullgraph=true forbids running it eagerly)", why);
      t->broken = 1;
      snprintf(t->reason, sizeof t->reason, "nested compile region: a tensor that requires grad flows through it "
               "and %s: runs eagerly", why);
    }
  }
  if (!s && !e) {
    if (count >= max_entries || t->nnested >= TP_ARRAY_LEN(t->nested)) {
      s = tp_fail(TP_ERR_CAPTURE, "nested compile region reuse limit reached");
    } else {
      tp_callable fn = {host_callable, (void *)(intptr_t)call_id};
      tp_trace_result r;
      if (plain.graph) r = plain, memset(&plain, 0, sizeof plain);
      else s = tp_trace_named(&fn, nin, samples, NULL, t->fullgraph, &r);
      if (!s && r.broken) {
        s = tp_fail(TP_ERR_CAPTURE, "nested compile region output has no executable sample (%s)",
                    r.break_reason);
        tp_trace_result_clear(&r);
      } else if (!s && r.nout < 1) {
        s = tp_fail(TP_ERR_CAPTURE, "nested compile regions must return tensors or tensor containers");
        tp_trace_result_clear(&r);
      }
      if (!s) {
        e = &t->nested[t->nnested];
        memset(e, 0, sizeof *e);
        e->rec = rec;
        snprintf(e->key, sizeof e->key, "%s", k);
        snprintf(e->sub, sizeof e->sub, "_tensorplay_nested_region_%llu",
                 (unsigned long long)__atomic_fetch_add(&next_region, 1, __ATOMIC_RELAXED));
        e->nres = r.nout;
        n = r.nout;
        for (int i = 0; i < n; i++) res[i] = r.outs[i];
        r.nout = 0;
        tp_graph *sub = r.graph;
        r.graph = NULL;
        tp_trace_result_clear(&r);
        s = tp_graph_add_subgraph(t->g, e->sub, sub);
        if (!s) t->nnested++;
      }
    }
  } else if (!s) { /* reuse: the cached child graph computes this call's samples */
    int prev = 0;
    tp_capture_set_disabled(1, &prev);
    s = tp_graph_run(tp_graph_find_subgraph(t->g, e->sub), nin, samples, TP_MAX_OPERANDS, res, &n);
    tp_capture_set_disabled(prev, NULL);
  }
  if (plain.graph) tp_trace_result_clear(&plain);
  for (int i = 0; i < nin; i++) tp_tensor_release(samples[i]);
  if (!s) s = grad_through_region(t, "nested compile region", nin, in, n, res);
  if (!s && n > max_out) s = tp_fail(TP_ERR_CAPTURE, "nested compile region returned %d tensors (max %d)", n, max_out);
  /* get_attr of the subgraph, one invoke, a getitem per result */
  tp_arg args[TP_MAX_OPERANDS + 1]; /* the subgraph, then the operands */
  int ga = -1, inv = -1;
  if (!s) {
    tp_desc gd;
    memset(&gd, 0, sizeof gd);
    gd.ndim = TP_DESC_GRAPH;
    s = tp_graph_add_node(t->g, TP_NODE_GET_ATTR, NULL, TP_OP_COUNT, 0, NULL, NULL, &gd, &ga);
    if (!s && !(t->g->nodes[ga].target = tp_strdup(e->sub))) s = TP_ERR_OUT_OF_MEMORY;
  }
  if (!s) {
    args[0] = (tp_arg){TP_ARG_NODE, ga, 0, 0};
    s = build_args(nin, in, args + 1);
  }
  if (!s) {
    tp_attrs at;
    tp_attrs_init(&at);
    at.nresults = n;
    tp_desc d;
    tp_desc_of(res[0], &d);
    d.weak = 0;
    s = tp_graph_add_node(t->g, TP_NODE_CALL, NULL, TP_OP_INVOKE, nin + 1, args, &at, &d, &inv);
  }
  if (!s) {
    char num[16];
    snprintf(num, sizeof num, "%d", n);
    s = tp_graph_set_custom(t->g, inv, "nested_region_attr", e->sub);
    if (!s) s = tp_graph_set_custom(t->g, inv, "nested_output_count", num);
    if (!s) s = tp_graph_set_custom(t->g, inv, "nested_region_compiled", "false");
  }
  if (!s) s = add_getitems(t, inv, n, res);
  if (s) {
    for (int q = 0; q < n; q++) tp_tensor_release(res[q]);
    return s;
  }
  for (int q = 0; q < n; q++) outs[q] = res[q];
  *nout = n;
  return TP_OK;
}

/* ---- control flow (tp_cond, tp_while_loop: src/capture/control.c) ---- */
tp_status tp_capture_control(tp_op op, tp_graph *sub0, tp_graph *sub1, tp_tensor *pred, int nin,
                             tp_tensor *const *in, int nres, tp_tensor **res) {
  tp_graph *subs[2] = {sub0, sub1};
  tp_status s = TP_OK;
  if (!cur) s = tp_fail(TP_ERR_CAPTURE, "%s outside of a capture", tp_op_name(op));
  if (!s && (nin + 3 > TP_MAX_OPERANDS || nres < 1 || nres > TP_MAX_OPERANDS))
    s = tp_fail(TP_ERR_CAPTURE, "%s: %d operands and %d results (at most %d operands)", tp_op_name(op), nin, nres,
                TP_MAX_OPERANDS - 3);
  tp_trace_state *t = cur;
  /* training through control flow: the function runs eagerly (as through
   * nested regions), so gradients flow through the branch that ran */
  if (!s) s = grad_through_region(t, tp_op_name(op), nin, in, nres, res);
  if (!s && pred && pred->requires_grad) s = grad_through_region(t, tp_op_name(op), 1, &pred, 0, NULL);
  tp_arg args[TP_MAX_OPERANDS];
  int na = 0, ga[2] = {-1, -1}, node = -1;
  if (!s && pred) s = build_args(1, &pred, &args[na++]);
  if (!s && pred && args[0].kind != TP_ARG_NODE) s = const_node(pred, &args[0].node), args[0].kind = TP_ARG_NODE;
  for (int b = 0; b < 2 && !s; b++) {
    char name[64];
    snprintf(name, sizeof name, "_tensorplay_%s_%llu", op == TP_OP_COND ? (b ? "else" : "then") : (b ? "body" : "cond"),
             (unsigned long long)__atomic_fetch_add(&next_region, 1, __ATOMIC_RELAXED));
    s = tp_graph_add_subgraph(t->g, name, subs[b]);
    subs[b] = NULL;
    tp_desc gd;
    memset(&gd, 0, sizeof gd);
    gd.ndim = TP_DESC_GRAPH;
    if (!s) s = tp_graph_add_node(t->g, TP_NODE_GET_ATTR, NULL, TP_OP_COUNT, 0, NULL, NULL, &gd, &ga[b]);
    if (!s && !(t->g->nodes[ga[b]].target = tp_strdup(name))) s = TP_ERR_OUT_OF_MEMORY;
    if (!s) args[na++] = (tp_arg){TP_ARG_NODE, ga[b], 0, 0};
  }
  if (!s) s = build_args(nin, in, args + na);
  for (int i = 0; i < nin && !s; i++) /* every operand a node (a weak scalar: a constant) */
    if (args[na + i].kind != TP_ARG_NODE) {
      if (!in[i]) s = tp_fail(TP_ERR_CAPTURE, "%s: operand %d is None", tp_op_name(op), i);
      else args[na + i].kind = TP_ARG_NODE, s = const_node(in[i], &args[na + i].node);
    }
  if (!s) {
    tp_attrs at;
    tp_attrs_init(&at);
    at.nresults = nres;
    tp_desc d;
    tp_desc_of(res[0], &d);
    d.weak = 0;
    s = tp_graph_add_node(t->g, TP_NODE_CALL, NULL, op, na + nin, args, &at, &d, &node);
  }
  if (!s) s = tp_graph_verify_control(t->g, &t->g->nodes[node]);
  if (!s) s = add_getitems(t, node, nres, res);
  tp_graph_free(subs[0]);
  tp_graph_free(subs[1]);
  return s;
}
