/* compile.c - the seed's compile(): option checks in the seed's order, the
 * specialization cache with guards, recompile limits and reasons, backend
 * selection, graph-break fallback, reset() and explain().
 *
 * Specialization key (TensorPlay's rules): each tensor input's shape (with
 * dynamic, only its rank) and dtype, grad mode and each input's
 * requires_grad when a tensor requires grad (compiled training, aot.c), plus the host's key for non-tensor arguments (scalars by value, other
 * objects by identity). When the captured function read an input's shape,
 * that input gets an exact-shape guard even when dynamic. */
#include "compiler.h"
#include "aot.h"
#include "../runtime/pool.h"
#include "../capture/records.h"
#include <stdio.h>
#include <stdlib.h>

typedef struct entry {
  int nin;
  tp_desc sig[TP_MAX_OPERANDS];
  char *extra_key;
  uint64_t shape_guard;  /* inputs whose exact shape is guarded */
  char where[8][96];     /* where the function read inputs 0..7's shapes */
  tp_graph *graph;       /* NULL: this signature runs eagerly (graph break) or aot */
  tp_aot *aot;           /* compiled training: forward + backward graphs */
  uint64_t rg_mask;      /* aot: the inputs that required grad */
  int grad_traced;       /* traced while grad mode was on */
  tp_backend_run run;
  char reason[160];      /* graph-break reason */
} entry;

struct tp_compiled {
  tp_callable fn;
  tp_compile_options o;  /* strings below are owned copies */
  char *backend, *mode, *name;
  char *option_keys[16];
  int dynamic;           /* resolved: 0 or 1 */
  int dynamic_known;     /* the resolved policy is a bool, not None */
  int recompile_limit;
  int accumulated_limit;
  int fail_on_limit, verbose, force_disable_caches;
  char **input_names;
  int ninput_names;
  int nentries, cap;
  entry *entries;
  int ncaptures;         /* accumulated compiles of this wrapper */
  int last;
  tp_buf reasons;        /* recompile reasons, newline separated */
  tp_buf explain;        /* JSON array items of captures, comma separated */
  int eager_for_grad;    /* calls run eagerly because a tensor requires grad */
  struct tp_compiled *next, *prev; /* all live wrappers, for reset() */
};

/* Threads: not locked. Compiled wrappers (this list, each wrapper's cache)
 * are created, called and reset from one thread at a time, like the
 * functions they wrap (docs/architecture.md, Threads). */
static tp_compiled *all_compiled;

void tp_compile_options_init(tp_compile_options *o) {
  memset(o, 0, sizeof *o);
  o->dynamic = -1;
  o->dynamic_shapes = -1;
}

/* ---- strings ---- */
/* Appends to one of the wrapper's long-lived buffers. A failed write leaves
 * the buffer as it was (tp_buf_putn reserves before it copies), so the
 * sticky flag is cleared: the wrapper lives on and later notes may fit. */
static tp_status note_append(tp_buf *b, const char *text) {
  tp_buf_puts(b, text);
  if (!b->oom) return TP_OK;
  b->oom = 0;
  return TP_ERR_OUT_OF_MEMORY;
}

static tp_status dup_opt(const char *s, char **out) {
  *out = NULL;
  if (s && !(*out = tp_strdup(s))) return TP_ERR_OUT_OF_MEMORY;
  return TP_OK;
}

/* "a,b,c" -> names */
static tp_status split_names(tp_compiled *c, const char *list) {
  if (!list || !*list) return TP_OK;
  int n = 1;
  for (const char *p = list; *p; p++) n += *p == ',';
  c->input_names = tp_alloc(sizeof(char *) * (size_t)n);
  if (!c->input_names) return TP_ERR_OUT_OF_MEMORY;
  const char *p = list;
  for (int i = 0; i < n; i++) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    char *s = tp_alloc(len + 1);
    if (!s) return TP_ERR_OUT_OF_MEMORY;
    memcpy(s, p, len);
    s[len] = 0;
    for (size_t k = 0; k < len; k++) {
      char ch = s[k];
      if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
            ch == '_'))
        s[k] = '_';
    }
    c->input_names[c->ninput_names++] = s;
    p = e ? e + 1 : p + len;
  }
  return TP_OK;
}

tp_status tp_compiled_set_input_names(tp_compiled *c, const char *names) {
  if (!c) return tp_fail(TP_ERR_INVALID_ARG, "compiled: NULL");
  for (int i = 0; i < c->ninput_names; i++) tp_free(c->input_names[i]);
  tp_free(c->input_names);
  c->input_names = NULL;
  c->ninput_names = 0;
  return split_names(c, names);
}

/* ---- the seed's checks, in its order ---- */
static int is_bool(tp_value v) { return v.kind == TP_VAL_BOOL; }
static int is_int(tp_value v) { return v.kind == TP_VAL_INT; }

tp_status tp_compile_check_config(int recompile_limit_given, int recompile_limit) {
  tp_value v;
  v = tp_config_get(TP_CFG_ASSUME_STATIC_BY_DEFAULT);
  if (!is_bool(v)) return tp_fail(TP_ERR_TYPE, "config.assume_static_by_default must be a bool");
  if (!is_bool(tp_config_get(TP_CFG_VERBOSE)))
    return tp_fail(TP_ERR_TYPE, "config.verbose must be a bool");
  if (!is_bool(tp_config_get(TP_CFG_FAIL_ON_RECOMPILE_LIMIT_HIT)))
    return tp_fail(TP_ERR_TYPE, "config.fail_on_recompile_limit_hit must be a bool");
  if (!is_bool(tp_config_get(TP_CFG_FORCE_DISABLE_CACHES)))
    return tp_fail(TP_ERR_TYPE, "config.force_disable_caches must be a bool");
  v = tp_config_get(TP_CFG_DYNAMIC_SHAPES);
  if (v.kind != TP_VAL_NONE && !is_bool(v))
    return tp_fail(TP_ERR_TYPE, "config.dynamic_shapes must be a bool or None");
  v = tp_config_get(TP_CFG_ACCUMULATED_RECOMPILE_LIMIT);
  if (!is_int(v) || v.i < 1)
    return tp_fail(TP_ERR_VALUE, "config.accumulated_recompile_limit must be a positive integer");
  if (recompile_limit_given) {
    if (recompile_limit < 1) return tp_fail(TP_ERR_VALUE, "recompile_limit must be positive");
  } else {
    v = tp_config_get(TP_CFG_RECOMPILE_LIMIT);
    if (v.kind != TP_VAL_NONE) {
      if (!is_int(v)) return tp_fail(TP_ERR_TYPE, "recompile_limit must be an integer");
      if (v.i < 1) return tp_fail(TP_ERR_VALUE, "recompile_limit must be positive");
    }
  }
  return TP_OK;
}

static int flag_ok(int v) { return v == 0 || v == 1; }
static int tristate_ok(int v) { return v >= -1 && v <= 1; }

/* The seed's checks in its order; then the type of each remaining option
 * (bools are 0/1, unset tri-states -1), in the order of its signature. */
static tp_status check_options(const tp_compile_options *o) {
  if (!tristate_ok(o->dynamic_shapes))
    return tp_fail(TP_ERR_TYPE, "TensorPlay dynamic_shapes currently accepts only a bool; "
                                "use a bool dynamic policy for this frontend (got %d)", o->dynamic_shapes);
  if (o->dynamic_shapes >= 0 && o->dynamic >= 0)
    return tp_fail(TP_ERR_RUNTIME, "dynamic and dynamic_shapes cannot both be specified");
  if (o->mode && o->has_options)
    return tp_fail(TP_ERR_RUNTIME, "Either mode or options can be specified, but not both");
  if (o->noptions < 0 || o->noptions > 16)
    return tp_fail(TP_ERR_VALUE, "options: %d keys is out of range (0..16)", o->noptions);
  TP_TRY(tp_compile_check_config(o->recompile_limit != 0, o->recompile_limit));
  if (!flag_ok(o->fullgraph)) return tp_fail(TP_ERR_TYPE, "fullgraph must be a bool (got %d)", o->fullgraph);
  if (!tristate_ok(o->dynamic))
    return tp_fail(TP_ERR_TYPE, "dynamic must be a bool or None (got %d)", o->dynamic);
  if (!flag_ok(o->disable)) return tp_fail(TP_ERR_TYPE, "disable must be a bool (got %d)", o->disable);
  if (!flag_ok(o->isolate_recompiles))
    return tp_fail(TP_ERR_TYPE, "isolate_recompiles must be a bool (got %d)", o->isolate_recompiles);
  if (!flag_ok(o->strict_native))
    return tp_fail(TP_ERR_TYPE, "strict_native must be a bool (got %d)", o->strict_native);
  if (!flag_ok(o->has_options)) return tp_fail(TP_ERR_TYPE, "has_options must be a bool (got %d)", o->has_options);
  for (int i = 0; o->has_options && i < o->noptions; i++)
    if (!o->option_keys[i]) return tp_fail(TP_ERR_TYPE, "options: key %d is NULL", i);
    else if (!flag_ok(o->option_values[i]))
      return tp_fail(TP_ERR_TYPE, "options['%s'] must be a bool (got %d)", o->option_keys[i],
                     o->option_values[i]);
  return TP_OK;
}

tp_status tp_compile(const tp_callable *fn, const tp_compile_options *opts, tp_compiled **out) {
  if (!out) return tp_fail(TP_ERR_INVALID_ARG, "compile: NULL output pointer");
  *out = NULL;
  tp_compile_options o;
  if (opts) o = *opts;
  else tp_compile_options_init(&o);
  TP_TRY(check_options(&o));
  if (!fn || !fn->fn) return tp_fail(TP_ERR_TYPE, "compile() expected a callable, got <class 'NoneType'>");
  tp_backends_init();
  const char *be = o.backend ? o.backend : tp_get_default_backend();
  if (!o.disable) {
    const tp_backend *b;
    TP_TRY(tp_lookup_backend(be, &b));
    if (o.mode) {
      char *json = NULL;
      TP_TRY(tp_list_mode_options(o.mode, &json));
      tp_free_buffer(json);
    }
    if (o.has_options) {
      char keys[16][48];
      tp_value vals[16];
      for (int i = 0; i < o.noptions; i++) {
        snprintf(keys[i], sizeof keys[i], "%s", o.option_keys[i] ? o.option_keys[i] : "");
        vals[i] = tp_value_bool(o.option_values[i]);
      }
      TP_TRY(tp_check_mode_options(o.noptions, (const char(*)[48])keys, vals));
    }
  }
  tp_compiled *c = tp_alloc(sizeof *c);
  if (!c) return TP_ERR_OUT_OF_MEMORY;
  memset(c, 0, sizeof *c);
  c->fn = *fn;
  c->o = o;
  c->last = -1;
  tp_status s = dup_opt(be, &c->backend);
  if (!s) s = dup_opt(o.mode, &c->mode);
  if (!s) s = dup_opt(o.name, &c->name);
  for (int i = 0; i < o.noptions && !s; i++) s = dup_opt(o.option_keys[i], &c->option_keys[i]);
  if (!s) s = split_names(c, o.input_names);
  /* config is read when the wrapper is made */
  tp_value dyn = tp_config_get(TP_CFG_DYNAMIC_SHAPES);
  c->dynamic = o.dynamic >= 0 ? o.dynamic : o.dynamic_shapes >= 0 ? o.dynamic_shapes
               : dyn.kind == TP_VAL_BOOL ? (int)dyn.i
               : !tp_config_get(TP_CFG_ASSUME_STATIC_BY_DEFAULT).i;
  /* the seed: dynamic = config.dynamic_shapes, or True when not
   * assume_static_by_default; else it stays None */
  c->dynamic_known = o.dynamic >= 0 || o.dynamic_shapes >= 0 || dyn.kind == TP_VAL_BOOL ||
                     !tp_config_get(TP_CFG_ASSUME_STATIC_BY_DEFAULT).i;
  tp_value lim = tp_config_get(TP_CFG_RECOMPILE_LIMIT);
  c->recompile_limit = o.recompile_limit ? o.recompile_limit : lim.kind == TP_VAL_INT ? (int)lim.i : 0;
  c->accumulated_limit = (int)tp_config_get(TP_CFG_ACCUMULATED_RECOMPILE_LIMIT).i;
  c->fail_on_limit = (int)tp_config_get(TP_CFG_FAIL_ON_RECOMPILE_LIMIT_HIT).i;
  c->force_disable_caches = (int)tp_config_get(TP_CFG_FORCE_DISABLE_CACHES).i;
  const char *env = getenv("TP_LOG_RECOMPILES");
  c->verbose = (int)tp_config_get(TP_CFG_VERBOSE).i || (env && *env && strcmp(env, "0"));
  if (s) {
    tp_compiled_free(c);
    return s;
  }
  c->o.backend = c->backend;
  c->o.mode = c->mode;
  c->o.name = c->name;
  c->o.input_names = NULL;
  for (int i = 0; i < o.noptions; i++) c->o.option_keys[i] = c->option_keys[i];
  c->next = all_compiled;
  if (all_compiled) all_compiled->prev = c;
  all_compiled = c;
  *out = c;
  return TP_OK;
}

static void entry_clear(entry *e) {
  tp_graph_free(e->graph);
  tp_aot_free(e->aot);
  if (e->run.free) e->run.free(e->run.ud);
  tp_free(e->extra_key);
  memset(e, 0, sizeof *e);
}

static void clear_entries(tp_compiled *c) {
  for (int i = 0; i < c->nentries; i++) entry_clear(&c->entries[i]);
  c->nentries = 0;
  c->last = -1;
}

void tp_compiled_free(tp_compiled *c) {
  if (!c) return;
  if (c->prev) c->prev->next = c->next;
  else if (all_compiled == c) all_compiled = c->next;
  if (c->next) c->next->prev = c->prev;
  clear_entries(c);
  tp_free(c->entries);
  for (int i = 0; i < c->ninput_names; i++) tp_free(c->input_names[i]);
  tp_free(c->input_names);
  for (int i = 0; i < 16; i++) tp_free(c->option_keys[i]);
  tp_free(c->backend);
  tp_free(c->mode);
  tp_free(c->name);
  tp_buf_free(&c->reasons);
  tp_buf_free(&c->explain);
  tp_free(c);
}

void tp_reset(void) {
  for (tp_compiled *c = all_compiled; c; c = c->next) {
    clear_entries(c);
    tp_buf_free(&c->reasons);
    c->ncaptures = 0;
  }
  tp_records_reset_constants();
  tp_backends_reset();
}

int tp_compiled_num_captures(const tp_compiled *c) { return c ? c->ncaptures : 0; }
int tp_compiled_num_entries(const tp_compiled *c) { return c ? c->nentries : 0; }
const tp_graph *tp_compiled_last_graph(const tp_compiled *c) {
  return c && c->last >= 0 && c->last < c->nentries ? (c->entries[c->last].aot ? tp_aot_graph(c->entries[c->last].aot, 0) : c->entries[c->last].graph) : NULL;
}
const tp_graph *tp_compiled_last_backward_graph(const tp_compiled *c) {
  return c && c->last >= 0 && c->last < c->nentries && c->entries[c->last].aot ? tp_aot_graph(c->entries[c->last].aot, 1)
                                                                              : NULL;
}

const void *tp_compiled_last_module(const tp_compiled *c, size_t *len) {
  size_t n = 0;
  const void *bytes = NULL;
  if (c && c->last >= 0 && c->last < c->nentries) {
    const entry *e = &c->entries[c->last];
    if (e->graph && e->run.module) bytes = e->run.module(e->run.ud, &n);
  }
  if (!bytes) n = 0;
  if (len) *len = n;
  return bytes;
}

tp_status tp_compiled_recompile_reasons(const tp_compiled *c, char **out) {
  if (!c || !out) return tp_fail(TP_ERR_INVALID_ARG, "recompile reasons: NULL argument");
  *out = tp_strdup(c->reasons.p ? c->reasons.p : "");
  return *out ? TP_OK : TP_ERR_OUT_OF_MEMORY;
}

tp_status tp_compiled_explain(const tp_compiled *c, char **out) {
  if (!c || !out) return tp_fail(TP_ERR_INVALID_ARG, "explain: NULL argument");
  *out = NULL;
  tp_buf b = {0};
  char threads[320];
  tp_pool_describe(threads, sizeof threads);
  for (char *q = threads; *q; q++) /* a JSON string: no quotes or backslashes */
    if (*q == '"' || *q == '\\') *q = '\'';
  tp_buf_printf(&b,
                "{\"name\": \"%s\", \"backend\": \"%s\", \"dynamic\": %s, \"captures\": %d, "
                "\"entries\": %d, \"threads\": \"%s\", \"eager_for_autograd\": %d, \"graphs\": [",
                c->name ? c->name : "", c->backend ? c->backend : "", c->dynamic ? "true" : "false",
                c->ncaptures, c->nentries, threads, c->eager_for_grad);
  tp_buf_puts(&b, c->explain.p ? c->explain.p : "");
  tp_buf_puts(&b, "], \"backend_plans\": [");
  for (int i = 0, first = 1; i < c->nentries; i++) {
    const entry *e = &c->entries[i];
    if (!e->graph || !e->run.describe) continue;
    /* stax lists the graph nodes of every kernel: room for big graphs */
    const size_t cap = (size_t)1 << 18;
    char *d = tp_alloc(cap);
    if (!d) {
      tp_buf_free(&b);
      return tp_fail(TP_ERR_OUT_OF_MEMORY, "explain: no memory for the %lld-byte plan description", (long long)cap);
    }
    d[0] = 0;
    e->run.describe(e->run.ud, d, cap);
    if (!first) tp_buf_puts(&b, ", ");
    tp_buf_puts(&b, d[0] ? d : "null");
    tp_free(d);
    first = 0;
  }
  tp_buf_puts(&b, "], \"training\": [");
  for (int i = 0, first = 1; i < c->nentries; i++) {
    if (!c->entries[i].aot) continue;
    if (!first) tp_buf_puts(&b, ", ");
    tp_aot_describe(c->entries[i].aot, &b);
    first = 0;
  }
  tp_buf_puts(&b, "], \"recompile_reasons\": [");
  /* lines -> JSON strings (each cut at 280 bytes) */
  for (const char *p = c->reasons.p, *e; p && *p;) {
    e = strchr(p, '\n');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len > 280) len = 280;
    tp_buf_puts(&b, p == c->reasons.p ? "\"" : ", \"");
    for (size_t i = 0; i < len; i++) {
      if (p[i] == '"' || p[i] == '\\') tp_buf_putc(&b, '\\');
      tp_buf_putc(&b, p[i]);
    }
    tp_buf_putc(&b, '"');
    p = e ? e + 1 : p + len;
  }
  tp_buf_puts(&b, "]}");
  *out = tp_buf_take(&b);
  return *out ? TP_OK : TP_ERR_OUT_OF_MEMORY;
}

/* ---- specialization ---- */
static void sig_of(const tp_compiled *c, tp_tensor *t, tp_desc *d) {
  tp_desc_of(t, d);
  d->weak = 0;
  if (c->dynamic)
    for (int k = 0; k < d->ndim; k++) d->shape[k] = -1; /* rank only */
}

static const char *shape_text(const tp_desc *d, char *buf, size_t n) {
  /* python tuple form: (4, 8) / (4,) / () */
  size_t k = (size_t)snprintf(buf, n, "(");
  for (int i = 0; i < d->ndim && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, i ? ", %lld" : "%lld", (long long)d->shape[i]);
  if (k < n) snprintf(buf + k, n - k, d->ndim == 1 ? ",)" : ")");
  return buf;
}

/* requires_grad guards: an aot entry runs while grad mode is on, with the
 * same inputs requiring grad and its parameters still requiring grad; a
 * compiled forward-only entry while no input or constant requires grad
 * (or grad mode is off). */
static const char *grad_guard(const entry *e, int nin, tp_tensor *const *in, char *buf, size_t n) {
  int on = tp_is_grad_enabled();
  if (e->aot) {
    if (!on) {
      snprintf(buf, n, "torch.is_grad_enabled() == True");
      return buf;
    }
    for (int i = 0; i < nin; i++)
      if (tp_tensor_requires_grad(in[i]) != (int)((e->rg_mask >> i) & 1)) {
        snprintf(buf, n, "inputs[%d].requires_grad == %s", i, (e->rg_mask >> i) & 1 ? "True" : "False");
        return buf;
      }
    if (!tp_aot_params_require_grad(e->aot)) {
      snprintf(buf, n, "parameters[*].requires_grad == True");
      return buf;
    }
    return NULL;
  }
  if (!e->graph || !on) return NULL;
  if (!e->grad_traced) { /* ops on closed-over tensors alone were folded: trace again */
    snprintf(buf, n, "torch.is_grad_enabled() == False");
    return buf;
  }
  for (int i = 0; i < nin; i++)
    if (tp_tensor_requires_grad(in[i])) {
      snprintf(buf, n, "inputs[%d].requires_grad == False", i);
      return buf;
    }
  for (int i = 0; i < e->graph->n; i++) {
    const tp_node *m = &e->graph->nodes[i];
    if (m->kind == TP_NODE_GET_ATTR && m->desc.ndim != TP_DESC_GRAPH && tp_tensor_requires_grad(m->val)) {
      snprintf(buf, n, "%s.requires_grad == False", m->target ? m->target : m->name);
      return buf;
    }
  }
  return NULL;
}

/* The first guard of e that the inputs fail, as an expression; NULL = match. */
static const char *failed_guard(const tp_compiled *c, const entry *e, int nin,
                                tp_tensor *const *in, const char *extra, char *buf, size_t n) {
  char b[128];
  if (e->nin != nin) {
    snprintf(buf, n, "len(inputs) == %d", e->nin);
    return buf;
  }
  for (int i = 0; i < nin; i++) {
    tp_desc d, full;
    sig_of(c, in[i], &d);
    tp_desc_of(in[i], &full);
    if (d.dtype != e->sig[i].dtype) {
      snprintf(buf, n, "inputs[%d].dtype == %s", i, tp_dtype_name(e->sig[i].dtype));
      return buf;
    }
    if (d.ndim != e->sig[i].ndim) {
      snprintf(buf, n, "inputs[%d].dim() == %d", i, e->sig[i].ndim);
      return buf;
    }
    int exact = !c->dynamic || ((e->shape_guard >> i) & 1);
    const tp_desc *want = &e->sig[i];
    for (int k = 0; exact && k < d.ndim; k++)
      if (full.shape[k] != want->shape[k]) {
        if (c->dynamic && i < 8 && e->where[i][0])
          snprintf(buf, n, "inputs[%d].shape == %s (the shape was read at %s)", i,
                   shape_text(want, b, sizeof b), e->where[i]);
        else
          snprintf(buf, n, "inputs[%d].shape == %s", i, shape_text(want, b, sizeof b));
        return buf;
      }
  }
  const char *rg = grad_guard(e, nin, in, buf, n);
  if (rg) return rg;
  if (strcmp(e->extra_key ? e->extra_key : "", extra ? extra : "")) {
    snprintf(buf, n, "arguments == <%s>", e->extra_key ? e->extra_key : "");
    return buf;
  }
  return NULL;
}

static tp_status run_eager_for_grad(tp_compiled *c, int nin, tp_tensor *const *in, int max_out,
                                    tp_tensor **outs, int *nout) {
  if (c->eager_for_grad++ == 0)
    tp_log(TP_LOG_FALLBACKS, "%s runs eagerly: a tensor requires grad and the region cannot be compiled "
           "for training (explain() says why)", c->name ? c->name : "function");
  return c->fn.fn(c->fn.ud, nin, in, max_out, outs, nout);
}

static tp_status run_entry(tp_compiled *c, entry *e, int nin, tp_tensor *const *in, int max_out,
                           tp_tensor **outs, int *nout) {
  if (e->aot) return tp_aot_run(e->aot, nin, in, max_out, outs, nout);
  if (!e->graph) {
    if (e->reason[0] && !strncmp(e->reason, "training: ", 10)) return run_eager_for_grad(c, nin, in, max_out, outs, nout);
    return c->fn.fn(c->fn.ud, nin, in, max_out, outs, nout);
  }
  return e->run.run(e->run.ud, nin, in, max_out, outs, nout);
}

static void fill_backend_opts(const tp_compiled *c, tp_backend_opts *bo) {
  memset(bo, 0, sizeof *bo);
  if (c->mode) {
    bo->has_mode = 1;
    snprintf(bo->mode, sizeof bo->mode, "%s", c->mode);
  }
  if (c->o.has_options) {
    bo->has_options = 1;
    bo->noptions = c->o.noptions;
    for (int i = 0; i < c->o.noptions; i++) {
      snprintf(bo->option_keys[i], sizeof bo->option_keys[i], "%s", c->option_keys[i]);
      bo->option_values[i] = tp_value_bool(c->o.option_values[i]);
    }
  }
  if (c->name) {
    bo->has_name = 1;
    snprintf(bo->name, sizeof bo->name, "%s", c->name);
  }
  if (c->dynamic_known) { /* the resolved policy, as the seed passes it to its core */
    bo->has_dynamic = 1;
    bo->dynamic = c->dynamic;
  }
  if (c->o.strict_native) {
    bo->has_strict_native = 1;
    bo->strict_native = 1;
  }
}

/* One explain() item per capture: op counts, opaque regions with their
 * mode and reason, the graph break, the shape guards. */
/* The entry moves into the cache (and becomes the last one used); *e is
 * left empty. */
static tp_status store_entry(tp_compiled *c, entry *e) {
  TP_TRY(TP_ARRAY_RESERVE(c->entries, c->cap, c->nentries + 1));
  c->entries[c->nentries] = *e;
  c->last = c->nentries++;
  memset(e, 0, sizeof *e);
  return TP_OK;
}

static tp_status note_capture(tp_compiled *c, const tp_trace_result *r, const tp_graph *g,
                              const entry *e) {
  char item[2048], regions[1024] = "";
  int ops = 0, consts = 0;
  size_t rk = 0;
  for (int i = 0; g && i < g->n; i++) {
    const tp_node *n = &g->nodes[i];
    consts += n->kind == TP_NODE_GET_ATTR;
    if (n->kind != TP_NODE_CALL) continue;
    ops++;
    /* (a nested region's compiled forward / backward in a training trace is no opaque region) */
    if (n->op == TP_OP_CALL_HOST && rk < sizeof regions - 200 && !tp_graph_get_custom(g, i, "nested_region")) {
      const char *mode = tp_graph_get_custom(g, i, "opaque_mode");
      const char *why = tp_graph_get_custom(g, i, "reason");
      rk += (size_t)snprintf(regions + rk, sizeof regions - rk,
                             "%s{\"node\": \"%%%s\", \"mode\": \"%s\", \"reason\": %s%.100s%s}",
                             rk ? ", " : "", n->name, mode ? mode : "allow", why ? "\"" : "null",
                             why ? why : "", why ? "\"" : "");
    }
  }
  char guards[400] = "";
  size_t k = 0;
  for (int i = 0; i < e->nin && k < sizeof guards - 140; i++)
    if ((e->shape_guard >> i) & 1)
      k += (size_t)snprintf(guards + k, sizeof guards - k, "%s\"inputs[%d].shape (read%s%.90s)\"",
                            k ? ", " : "", i, i < 8 && r->shape_where[i][0] ? " at " : "",
                            i < 8 ? r->shape_where[i] : "");
  snprintf(item, sizeof item,
           "%s{\"ops\": %d, \"constants\": %d, \"opaque_regions\": [%s], \"graph_break\": %s%s%s, "
           "\"shape_guards\": [%s]}",
           c->explain.n ? ", " : "", ops, consts, regions, r->broken ? "\"" : "null",
           r->broken ? r->break_reason : "", r->broken ? "\"" : "", guards);
  return note_append(&c->explain, item);
}

/* A signature whose function's output requires grad (compiled training,
 * aot.c): the joint trace partitioned into a forward and a backward graph,
 * both compiled; or, when that is not possible (a graph break, several
 * outputs requiring grad, an opaque region, ...), eager for this
 * signature with the reason in explain(). */
static tp_status compile_training(tp_compiled *c, tp_trace_result *r, tp_aot_joint *jt, int nin,
                                  tp_tensor *const *in, const char *extra, int store, int max_out,
                                  tp_tensor **outs, int *nout) {
  c->ncaptures++;
  entry e;
  memset(&e, 0, sizeof e);
  e.nin = nin;
  for (int i = 0; i < nin; i++) {
    tp_desc_of(in[i], &e.sig[i]);
    e.sig[i].weak = 0;
    if (c->dynamic) e.shape_guard |= (uint64_t)1 << i; /* training entries are static */
    if (tp_tensor_requires_grad(in[i])) e.rg_mask |= (uint64_t)1 << i;
  }
  tp_status s = TP_OK;
  if (extra && *extra && !(e.extra_key = tp_strdup(extra))) s = TP_ERR_OUT_OF_MEMORY;
  char why[200] = "";
  if (r->broken) snprintf(why, sizeof why, "%s", r->break_reason);
  else if (jt->why[0]) snprintf(why, sizeof why, "%s", jt->why);
  if (!s && !why[0]) {
    const tp_backend *b = NULL;
    tp_backend_opts bo;
    fill_backend_opts(c, &bo);
    s = tp_lookup_backend(c->backend, &b);
    if (!s) s = tp_aot_build(r->graph, jt, b, &bo, nin, in, max_out, outs, nout, &e.aot, why, sizeof why);
  }
  if (!s && why[0] && c->o.fullgraph)
    s = tp_fail(TP_ERR_UNSUPPORTED, "compiled training: %s (fullgraph=true forbids running it eagerly)", why);
  if (!s && why[0]) snprintf(e.reason, sizeof e.reason, "training: %.148s", why);
  tp_log(TP_LOG_CAPTURES, "captured %s for training (capture %d)%s%s", c->name ? c->name : "function",
         c->ncaptures, why[0] ? ": runs eagerly: " : "", why);
  if (!s) {
    tp_trace_result shown = *r; /* explain(): the joint graph's ops, the reason as a break */
    if (why[0]) shown.broken = 1, snprintf(shown.break_reason, sizeof shown.break_reason, "%s", e.reason);
    s = note_capture(c, &shown, r->graph, &e);
  }
  int compiled = e.aot != NULL;
  if (!s && store) s = store_entry(c, &e);
  entry_clear(&e);
  tp_trace_result_clear(r);
  tp_aot_joint_clear(jt);
  if (s) {
    if (compiled)
      for (int i = 0; i < *nout; i++) tp_tensor_release(outs[i]), outs[i] = NULL;
    *nout = 0;
    return s;
  }
  if (compiled) return TP_OK;
  return run_eager_for_grad(c, nin, in, max_out, outs, nout);
}

tp_status tp_compiled_call(tp_compiled *c, int nin, tp_tensor *const *in, int max_out,
                           tp_tensor **outs, int *nout) {
  return tp_compiled_call_keyed(c, nin, in, NULL, max_out, outs, nout);
}

tp_status tp_compiled_call_keyed(tp_compiled *c, int nin, tp_tensor *const *in,
                                 const char *extra, int max_out, tp_tensor **outs, int *nout) {
  if (!c || !nout || (nin && !in) || (max_out && !outs))
    return tp_fail(TP_ERR_INVALID_ARG, "compiled call: NULL argument");
  if (nin < 0 || nin > TP_MAX_OPERANDS)
    return tp_fail(TP_ERR_INVALID_ARG, "compiled call: %d inputs (max %d)", nin, TP_MAX_OPERANDS);
  for (int i = 0; i < nin; i++)
    if (!in[i]) return tp_fail(TP_ERR_INVALID_ARG, "compiled call: input %d is NULL", i);
  *nout = 0;
  /* disabled, called while another capture runs (inline into it), or
   * inside disable_capture(): the original function runs */
  if (c->o.disable || tp_capture_active() || tp_capture_disabled()) return c->fn.fn(c->fn.ud, nin, in, max_out, outs, nout);
  /* the reason recorded is the failed guard of the most recent entry */
  char reason[256];
  const char *first_fail = NULL;
  if (!c->force_disable_caches)
    for (int i = c->nentries - 1; i >= 0; i--) {
      char buf[256];
      const char *f = failed_guard(c, &c->entries[i], nin, in, extra, buf, sizeof buf);
      if (!f) {
        c->last = i;
        return run_entry(c, &c->entries[i], nin, in, max_out, outs, nout);
      }
      if (!first_fail) {
        snprintf(reason, sizeof reason, "%s", f);
        first_fail = reason;
      }
    }
  /* miss: recompile */
  int store = !c->force_disable_caches;
  if (c->nentries > 0 && c->recompile_limit && c->nentries >= c->recompile_limit) {
    if (c->o.fullgraph || c->fail_on_limit)
      return tp_fail(TP_ERR_RUNTIME, "TensorPlay compile specialization limit reached "
                                     "(recompile_limit=%d, last failed guard: %s)",
                     c->recompile_limit, first_fail ? first_fail : "?");
    store = 0; /* compile again without storing */
  }
  if (c->ncaptures >= c->accumulated_limit)
    return tp_fail(TP_ERR_RUNTIME,
                   "TensorPlay accumulated recompilation limit reached (%d compiles; "
                   "config.accumulated_recompile_limit=%d)",
                   c->ncaptures, c->accumulated_limit);
  if (first_fail) {
    char line[300];
    snprintf(line, sizeof line, "%s\n", first_fail);
    TP_TRY(note_append(&c->reasons, line));
    if (c->verbose && !tp_log_enabled(TP_LOG_RECOMPILES))
      fprintf(stderr, "tensorplay: recompiling %s: guard failed: %s\n", c->name ? c->name : "function",
              first_fail);
    tp_log(TP_LOG_RECOMPILES, "recompiling %s: guard failed: %s", c->name ? c->name : "function",
           first_fail);
  }
  tp_trace_result r;
  const char *const *names = (const char *const *)c->input_names;
  if (c->ninput_names < nin) names = NULL;
  tp_aot_joint jt;
  memset(&jt, 0, sizeof jt);
  jt.gout = -1;
  if (tp_is_grad_enabled()) {
    const tp_backend *b = NULL;
    tp_backend_opts bo;
    fill_backend_opts(c, &bo);
    TP_TRY(tp_lookup_backend(c->backend, &b));
    TP_TRY(tp_aot_trace(&c->fn, nin, in, names, c->o.fullgraph, b, &bo, &r, &jt));
  }
  else TP_TRY(tp_trace_named(&c->fn, nin, in, names, c->o.fullgraph, &r));
  /* an output requires grad, or a region would have dropped a gradient */
  if (jt.gout >= 0 || jt.nested || (r.broken && strstr(r.break_reason, "that requires grad flows")))
    return compile_training(c, &r, &jt, nin, in, extra, store, max_out, outs, nout);
  c->ncaptures++;
  if (tp_log_enabled(TP_LOG_CAPTURES)) {
    int ops = 0;
    for (int i = 0; r.graph && i < r.graph->n; i++) ops += r.graph->nodes[i].kind == TP_NODE_CALL;
    tp_log(TP_LOG_CAPTURES, "captured %s (capture %d): %d ops%s%s", c->name ? c->name : "function",
           c->ncaptures, ops, r.broken ? ", graph break: " : "", r.broken ? r.break_reason : "");
  }
  if (r.broken)
    tp_log(TP_LOG_FALLBACKS, "%s runs eagerly for this signature: %s", c->name ? c->name : "function",
           r.break_reason);
  if (r.nout > max_out) {
    int n = r.nout;
    tp_trace_result_clear(&r);
    return tp_fail(TP_ERR_INVALID_ARG, "compiled call: %d outputs do not fit in %d slots", n, max_out);
  }
  entry e;
  memset(&e, 0, sizeof e);
  e.nin = nin;
  e.grad_traced = tp_is_grad_enabled();
  for (int i = 0; i < nin; i++) sig_of(c, in[i], &e.sig[i]);
  if (c->dynamic) { /* guard exact shapes of the inputs whose shape was read */
    e.shape_guard = r.shape_read;
    memcpy(e.where, r.shape_where, sizeof e.where);
    for (int i = 0; i < nin; i++)
      if ((r.shape_read >> i) & 1) tp_desc_of(in[i], &e.sig[i]), e.sig[i].weak = 0;
  }
  tp_status s = TP_OK;
  if (extra && *extra && !(e.extra_key = tp_strdup(extra))) s = TP_ERR_OUT_OF_MEMORY;
  if (!s && c->dynamic && r.graph) /* unguarded inputs accept any size of the same rank */
    for (int i = 0, k = 0; i < r.graph->n && !s; i++)
      if (r.graph->nodes[i].kind == TP_NODE_PLACEHOLDER && !((r.shape_read >> k++) & 1))
        s = tp_graph_set_custom(r.graph, i, "dynamic", "true");
  if (!s && !r.broken) {
    const tp_backend *b = NULL;
    tp_backend_opts bo;
    fill_backend_opts(c, &bo);
    s = tp_lookup_backend(c->backend, &b);
    if (!s) s = b->fn(b->ud, r.graph, nin, in, &bo, &e.run);
    if (!s && !e.run.run) s = tp_fail(TP_ERR_TYPE, "backend '%s' returned a non-callable", c->backend);
    if (!s) e.graph = r.graph, r.graph = NULL;
  }
  if (r.broken) snprintf(e.reason, sizeof e.reason, "%s", r.break_reason);
  if (!s) s = note_capture(c, &r, e.graph ? e.graph : r.graph, &e);
  tp_backend_run run = e.run; /* copied before the entry moves into the cache */
  int compiled = e.graph != NULL;
  if (!s && store) s = store_entry(c, &e);
  if (s || compiled) tp_trace_result_clear(&r);
  if (!s && compiled) /* every call's results come from the backend's function, the first included */
    s = run.run(run.ud, nin, in, max_out, outs, nout);
  entry_clear(&e); /* an entry that was not stored is freed after its one run */
  if (s || compiled) return s;
  /* a graph break: the capture ran the function eagerly on the real inputs */
  for (int i = 0; i < r.nout; i++) outs[i] = r.outs[i];
  *nout = r.nout;
  r.nout = 0;
  tp_trace_result_clear(&r);
  return TP_OK;
}
