/* compile.c - compile(), first cut: capture on the first call for each
 * input signature, cache the graph, run it with the selected backend.
 * The records registry, guards, recompile limits and the full backend
 * registry slot in here (see docs/architecture.md). */
#include "../capture/capture.h"
#include <stdio.h>

typedef struct entry {
  int nin;
  tp_desc sig[64];
  tp_graph *graph;   /* NULL: this signature runs eagerly (graph break) */
  char reason[160];
} entry;

struct tp_compiled {
  tp_callable fn;
  tp_compile_options opts;
  char backend[32];
  char *name;
  char **input_names;
  int ninput_names;
  int nentries, cap;
  entry *entries;
  int ncaptures;
  int last;
};

void tp_compile_options_init(tp_compile_options *o) {
  memset(o, 0, sizeof *o);
  o->dynamic = -1;
}

static const char *const backends[] = {"eager"};
static const char *default_backend = "eager";

static tp_status check_backend(const char *name) {
  for (int i = 0; i < TP_ARRAY_LEN(backends); i++)
    if (!strcmp(name, backends[i])) return TP_OK;
  return tp_fail(TP_ERR_INVALID_ARG, "Invalid backend: '%s' (available: eager)", name);
}

/* "a,b,c" -> names */
static tp_status split_names(tp_compiled *c, const char *list) {
  if (!list || !*list) return TP_OK;
  int n = 1;
  for (const char *p = list; *p; p++) n += *p == ',';
  c->input_names = tp_xmalloc(sizeof(char *) * (size_t)n);
  if (!c->input_names) return TP_ERR_OUT_OF_MEMORY;
  const char *p = list;
  for (int i = 0; i < n; i++) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    char *s = tp_xmalloc(len + 1);
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

tp_status tp_compile(const tp_callable *fn, const tp_compile_options *opts, tp_compiled **out) {
  if (!out) return tp_fail(TP_ERR_INVALID_ARG, "compile: NULL output pointer");
  *out = NULL;
  if (!fn || !fn->fn) return tp_fail(TP_ERR_INVALID_ARG, "compile() expected a callable, got NULL");
  tp_compile_options o;
  if (opts) o = *opts;
  else tp_compile_options_init(&o);
  const char *be = o.backend ? o.backend : default_backend;
  TP_TRY(check_backend(be));
  tp_compiled *c = tp_xmalloc(sizeof *c);
  if (!c) return TP_ERR_OUT_OF_MEMORY;
  memset(c, 0, sizeof *c);
  c->fn = *fn;
  c->opts = o;
  c->last = -1;
  snprintf(c->backend, sizeof c->backend, "%s", be);
  c->opts.backend = c->backend;
  tp_status s = TP_OK;
  if (o.name && !(c->name = tp_xstrdup(o.name))) s = TP_ERR_OUT_OF_MEMORY;
  c->opts.name = c->name;
  if (!s) s = split_names(c, o.input_names);
  c->opts.input_names = NULL;
  if (s) {
    tp_compiled_free(c);
    return s;
  }
  *out = c;
  return TP_OK;
}

tp_status tp_compiled_set_input_names(tp_compiled *c, const char *names) {
  if (!c) return tp_fail(TP_ERR_INVALID_ARG, "compiled: NULL");
  for (int i = 0; i < c->ninput_names; i++) tp_xfree(c->input_names[i]);
  tp_xfree(c->input_names);
  c->input_names = NULL;
  c->ninput_names = 0;
  return split_names(c, names);
}

void tp_compiled_free(tp_compiled *c) {
  if (!c) return;
  for (int i = 0; i < c->nentries; i++) tp_graph_free(c->entries[i].graph);
  tp_xfree(c->entries);
  for (int i = 0; i < c->ninput_names; i++) tp_xfree(c->input_names[i]);
  tp_xfree(c->input_names);
  tp_xfree(c->name);
  tp_xfree(c);
}

int tp_compiled_num_captures(const tp_compiled *c) { return c ? c->ncaptures : 0; }
int tp_compiled_num_entries(const tp_compiled *c) { return c ? c->nentries : 0; }
const tp_graph *tp_compiled_last_graph(const tp_compiled *c) {
  return c && c->last >= 0 ? c->entries[c->last].graph : NULL;
}

static int sig_match(const entry *e, int nin, tp_tensor *const *in) {
  if (e->nin != nin) return 0;
  for (int i = 0; i < nin; i++) {
    tp_desc d;
    tp_desc_of(in[i], &d);
    d.weak = 0;
    if (!tp_desc_equal(&d, &e->sig[i])) return 0;
  }
  return 1;
}

static tp_status call_direct(tp_compiled *c, int nin, tp_tensor *const *in, int max_out,
                             tp_tensor **outs, int *nout) {
  return c->fn.fn(c->fn.ud, nin, in, max_out, outs, nout);
}

tp_status tp_compiled_call(tp_compiled *c, int nin, tp_tensor *const *in, int max_out,
                           tp_tensor **outs, int *nout) {
  if (!c || !nout || (nin && !in) || (max_out && !outs))
    return tp_fail(TP_ERR_INVALID_ARG, "compiled call: NULL argument");
  if (nin < 0 || nin > 64) return tp_fail(TP_ERR_INVALID_ARG, "compiled call: %d inputs (max 64)", nin);
  for (int i = 0; i < nin; i++)
    if (!in[i]) return tp_fail(TP_ERR_INVALID_ARG, "compiled call: input %d is NULL", i);
  *nout = 0;
  /* disabled, or called while another capture runs: inline into it */
  if (c->opts.disable || tp_capture_active()) return call_direct(c, nin, in, max_out, outs, nout);
  for (int i = 0; i < c->nentries; i++)
    if (sig_match(&c->entries[i], nin, in)) {
      c->last = i;
      if (!c->entries[i].graph) return call_direct(c, nin, in, max_out, outs, nout);
      return tp_graph_run(c->entries[i].graph, nin, in, max_out, outs, nout);
    }
  /* miss: capture (this also computes the results) */
  tp_trace_result r;
  const char *const *names = (const char *const *)c->input_names;
  if (c->ninput_names < nin) names = NULL;
  TP_TRY(tp_trace_named(&c->fn, nin, in, names, c->opts.fullgraph, &r));
  c->ncaptures++;
  if (r.nout > max_out) {
    int n = r.nout;
    tp_trace_result_clear(&r);
    return tp_fail(TP_ERR_INVALID_ARG, "compiled call: %d outputs do not fit in %d slots", n, max_out);
  }
  if (c->nentries == c->cap) {
    int nc = c->cap ? c->cap * 2 : 4;
    entry *ne = tp_xrealloc(c->entries, sizeof(entry) * (size_t)nc);
    if (!ne) {
      tp_trace_result_clear(&r);
      return TP_ERR_OUT_OF_MEMORY;
    }
    c->entries = ne;
    c->cap = nc;
  }
  entry *e = &c->entries[c->nentries];
  memset(e, 0, sizeof *e);
  e->nin = nin;
  for (int i = 0; i < nin; i++) {
    tp_desc_of(in[i], &e->sig[i]);
    e->sig[i].weak = 0;
  }
  e->graph = r.graph;
  r.graph = NULL;
  if (r.broken) snprintf(e->reason, sizeof e->reason, "%s", r.break_reason);
  c->last = c->nentries++;
  for (int i = 0; i < r.nout; i++) outs[i] = r.outs[i];
  *nout = r.nout;
  return TP_OK;
}
