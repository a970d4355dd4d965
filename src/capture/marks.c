/* marks.c - the records registry for C callables: tp_allow_in_graph,
 * tp_disable, ... and tp_call, the C counterpart of the JS adapters. A C
 * callable's record key is a process-unique id kept per (fn, ud) pair, in
 * a namespace (bit 62) apart from the host's (JS) ids. */
#include "records.h"
#include <stdio.h>

/* C callables' record keys carry this bit; host (JS) ids never do. */
#define C_CALLABLE_KEY_BIT ((uint64_t)1 << 62)

typedef struct cfn {
  tp_callable fn;
  uint64_t key;
  int64_t host_id;     /* for call_host / nested tracing */
  tp_callable repl;    /* substitute */
} cfn;
/* Threads: not locked. Marking C callables is set-up work done from one
 * thread (lookup hands out pointers into the table, which a lock would not
 * keep valid across a realloc); docs/architecture.md, Threads. */
static cfn *cfns;
static int ncfns, capcfns;

static tp_status lookup(const tp_callable *fn, int create, cfn **out) {
  *out = NULL;
  if (!fn || !fn->fn) return tp_fail(TP_ERR_TYPE, "expected a callable, got <class 'NoneType'>");
  for (int i = 0; i < ncfns; i++)
    if (cfns[i].fn.fn == fn->fn && cfns[i].fn.ud == fn->ud) {
      *out = &cfns[i];
      return TP_OK;
    }
  if (!create) return TP_OK;
  TP_TRY(TP_ARRAY_RESERVE(cfns, capcfns, ncfns + 1));
  cfn *c = &cfns[ncfns];
  memset(c, 0, sizeof *c);
  c->fn = *fn;
  c->key = C_CALLABLE_KEY_BIT | (uint64_t)(ncfns + 1);
  TP_TRY(tp_host_fn_register(fn, &c->host_id));
  ncfns++;
  *out = c;
  return TP_OK;
}

static tp_status mark(const tp_callable *fn, tp_rec_mode mode, const tp_rec_params *p) {
  cfn *c;
  TP_TRY(lookup(fn, 1, &c));
  char repr[64];
  snprintf(repr, sizeof repr, "<C function %p>", (void *)(uintptr_t)fn->fn);
  tp_record *r;
  return tp_rec_register(c->key, repr, mode, p, &r);
}

tp_status tp_allow_in_graph(const tp_callable *fn) { return mark(fn, TP_REC_ALLOW, NULL); }
tp_status tp_nonstrict_trace(const tp_callable *fn) { return mark(fn, TP_REC_NONSTRICT, NULL); }
tp_status tp_assume_constant_result(const tp_callable *fn) { return mark(fn, TP_REC_CONSTANT, NULL); }

tp_status tp_disable(const tp_callable *fn, int recursive, const char *reason) {
  tp_rec_params p;
  tp_rec_params_init(&p);
  p.recursive = recursive != 0;
  p.reason = reason;
  return mark(fn, TP_REC_DISABLED, &p);
}

tp_status tp_nested_compile_region(const tp_callable *fn, int max_reuse_entries) {
  return tp_nested_compile_region_ex(fn, max_reuse_entries, NULL);
}

tp_status tp_nested_compile_region_ex(const tp_callable *fn, int max_reuse_entries,
                                      const tp_nested_region_options *options) {
  if (max_reuse_entries < 1) return tp_fail(TP_ERR_VALUE, "max_reuse_entries must be positive");
  tp_rec_params p;
  tp_rec_params_init(&p);
  p.max_reuse_entries = max_reuse_entries;
  if (options) {
    p.has_options = 1;
    p.fw_fn = options->fw_compiler, p.fw_ud = options->fw_ud;
    p.bw_fn = options->bw_compiler, p.bw_ud = options->bw_ud;
    p.fw_compiler = (uint64_t)(uintptr_t)options->fw_compiler;
    p.bw_compiler = (uint64_t)(uintptr_t)options->bw_compiler;
  }
  return mark(fn, TP_REC_NESTED, &p);
}

tp_status tp_substitute_in_graph(const tp_callable *original, const tp_callable *replacement,
                                 int can_constant_fold_through) {
  if (!replacement || !replacement->fn)
    return tp_fail(TP_ERR_TYPE, "@substitute_in_graph(...) expects a function but got <class 'NoneType'>");
  tp_rec_params p;
  tp_rec_params_init(&p);
  p.can_constant_fold_through = can_constant_fold_through != 0;
  TP_TRY(mark(original, TP_REC_SUBSTITUTE, &p));
  cfn *c;
  TP_TRY(lookup(original, 0, &c));
  c->repl = *replacement;
  return TP_OK;
}

int tp_disable_capture_begin(void) {
  int prev = 0;
  tp_capture_set_disabled(1, &prev);
  return prev;
}
void tp_disable_capture_end(int previous) { tp_capture_set_disabled(previous, NULL); }

tp_status tp_call(const tp_callable *fn, int nin, tp_tensor *const *in, int max_out,
                  tp_tensor **outs, int *nout) {
  if (!nout || (max_out && !outs) || (nin && !in)) return tp_fail(TP_ERR_INVALID_ARG, "tp_call: NULL argument");
  *nout = 0;
  cfn *c;
  TP_TRY(lookup(fn, 0, &c));
  tp_record *r = c ? tp_rec_lookup(c->key) : NULL;
  if (!r || !tp_capture_sees(nin, in)) return fn->fn(fn->ud, nin, in, max_out, outs, nout);
  switch (r->mode) {
    case TP_REC_SUBSTITUTE:
      if (!c->repl.fn) return tp_fail(TP_ERR_RUNTIME, "substitution has no implementation");
      return c->repl.fn(c->repl.ud, nin, in, max_out, outs, nout);
    case TP_REC_CONSTANT:
      if (!r->constant_ready) {
        tp_tensor *vals[TP_REC_MAX_CONST] = {0};
        int n = 0, prev = tp_disable_capture_begin();
        /* evaluated on the samples: plain views, not proxies */
        tp_tensor *samples[TP_MAX_OPERANDS] = {0};
        tp_status s = TP_OK;
        for (int i = 0; i < nin && i < TP_MAX_OPERANDS && !s; i++)
          s = tp_tensor_view(in[i], in[i]->ndim, in[i]->shape, in[i]->strides, in[i]->offset, &samples[i]);
        if (!s) s = fn->fn(fn->ud, nin, samples, TP_REC_MAX_CONST, vals, &n);
        tp_disable_capture_end(prev);
        for (int i = 0; i < nin && i < TP_MAX_OPERANDS; i++) tp_tensor_release(samples[i]);
        if (!s) s = tp_rec_set_constant(r, n, vals, "");
        for (int i = 0; i < n; i++) tp_tensor_release(vals[i]);
        if (s) return s;
      }
      if (r->nconst > max_out) return tp_fail(TP_ERR_INVALID_ARG, "tp_call: %d results do not fit", r->nconst);
      for (int i = 0; i < r->nconst; i++) {
        tp_tensor_retain(r->constant[i]);
        outs[i] = r->constant[i];
      }
      *nout = r->nconst;
      return TP_OK;
    case TP_REC_NESTED:
      return tp_capture_nested(r->id, r->p.max_reuse_entries, c->host_id, "", nin, in, max_out, outs, nout);
    case TP_REC_DISABLED:
      return tp_capture_opaque(c->host_id, nin, in, "disabled", r->p.recursive, r->p.recursive, r->reason,
                               max_out, outs, nout);
    default:
      return tp_capture_opaque(c->host_id, nin, in, tp_rec_mode_name(r->mode), 0, 1, NULL, max_out, outs, nout);
  }
}
