/* compile.c - compiled functions through the ABI: compile() options as
 * tpw_values (checked in the seed's order), config, calls, and what a
 * compiled function reports (graph text, recompile reasons, explain, its
 * generated module). */
#include "handles.h"
#include "../src/compiler/compiler.h"
#include "../src/capture/records.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t tpw_compile(int32_t fn_id, const int32_t *opts, const char *backend, const char *name) {
  tp_compile_options o;
  tp_compile_options_init(&o);
  if (opts) {
    o.fullgraph = opts[0] != 0;
    o.dynamic = opts[1];
    o.disable = opts[2] != 0;
  }
  o.backend = backend;
  o.name = name;
  tp_callable fn = abi_host_callable(fn_id);
  tp_compiled *c = NULL;
  if (tp_compile(&fn, &o, &c)) return 0;
  uint32_t h = abi_handle_new(ABI_COMPILED, c);
  if (!h) tp_compiled_free(c);
  return h;
}

int32_t tpw_compiled_call(uint32_t h, int32_t nin, const uint32_t *in, uint32_t *outs, int32_t max_out) {
  tp_compiled *c = abi_handle_get(h, ABI_COMPILED);
  tp_tensor *ts[TP_MAX_OPERANDS], *os[TP_MAX_OPERANDS];
  int n = 0;
  if (!c || abi_gather_inputs(nin, in, ts)) return -1;
  tp_status s = tp_compiled_call(c, nin, ts, max_out < TP_MAX_OPERANDS ? max_out : TP_MAX_OPERANDS, os, &n);
  return abi_return_tensors(s, n, os, outs, max_out);
}

int32_t tpw_compiled_free(uint32_t h) {
  tp_compiled *c = abi_handle_get(h, ABI_COMPILED);
  if (!c) return tp_last_status();
  abi_handle_drop(h);
  tp_compiled_free(c);
  return TP_OK;
}
int32_t tpw_compiled_num_captures(uint32_t h) {
  tp_compiled *c = abi_handle_get(h, ABI_COMPILED);
  return c ? tp_compiled_num_captures(c) : -1;
}
int32_t tpw_compiled_num_entries(uint32_t h) {
  tp_compiled *c = abi_handle_get(h, ABI_COMPILED);
  return c ? tp_compiled_num_entries(c) : -1;
}
int32_t tpw_compiled_set_input_names(uint32_t h, const char *names) {
  tp_compiled *c = abi_handle_get(h, ABI_COMPILED);
  if (!c) return tp_last_status();
  return tp_compiled_set_input_names(c, names);
}

char *tpw_compiled_graph_text(uint32_t h, int32_t flags) {
  tp_compiled *c = abi_handle_get(h, ABI_COMPILED);
  if (!c) return NULL;
  if (flags & 2) { /* the training entry's backward graph */
    const tp_graph *g = tp_compiled_last_backward_graph(c);
    if (!g) {
      tp_fail(TP_ERR_INVALID_ARG, "graph({ backward: true }): the last call did not compile for training");
      return NULL;
    }
    return abi_give_graph_text(g, flags & 1);
  }
  return abi_give_graph_text(tp_compiled_last_graph(c), flags & 1);
}
int32_t tpw_is_compiling(void) { return tp_is_compiling(); }

static tp_value from_w(const tpw_value *w) {
  tp_value v;
  memset(&v, 0, sizeof v);
  if (!w) return v;
  v.kind = (unsigned)w->kind < TP_VAL_KIND_COUNT ? (tp_value_kind)w->kind : TP_VAL_OTHER;
  if (v.kind == TP_VAL_BOOL || v.kind == TP_VAL_INT) v.i = (int64_t)w->num;
  if (v.kind == TP_VAL_FLOAT) v.f = w->num;
  if (v.kind == TP_VAL_STR) {
    snprintf(v.s, sizeof v.s, "%s", w->str ? w->str : "");
    snprintf(v.type, sizeof v.type, "str");
  }
  if (v.kind == TP_VAL_OTHER) snprintf(v.type, sizeof v.type, "%s", w->type ? w->type : "object");
  return v;
}

static char value_text[64];
static void to_w(tp_value v, tpw_value *w) {
  memset(w, 0, sizeof *w);
  w->kind = v.kind;
  if (v.kind == TP_VAL_BOOL || v.kind == TP_VAL_INT) w->num = (double)v.i;
  if (v.kind == TP_VAL_FLOAT) w->num = v.f;
  if (v.kind == TP_VAL_STR) {
    snprintf(value_text, sizeof value_text, "%s", v.s);
    w->str = value_text;
  }
}

int32_t tpw_config_set(const char *key, const tpw_value *v) {
  tp_config_key k;
  TP_TRY(tp_config_lookup(key, &k));
  return tp_config_set(k, from_w(v));
}
int32_t tpw_config_get(const char *key, tpw_value *out) {
  tp_config_key k;
  TP_TRY(tp_config_lookup(key, &k));
  to_w(tp_config_get(k), out);
  return TP_OK;
}
void tpw_config_reset(void) { tp_config_reset(); }

enum { O_FULLGRAPH, O_DYNAMIC, O_BACKEND, O_MODE, O_OPTIONS, O_NAME, O_DISABLE, O_LIMIT,
       O_ISOLATE, O_STRICT, O_DYNSHAPES, O_INPUT_NAMES };

static char backend_name[64];

static tp_status type_error(const char *what, const tpw_value *w) {
  char t[48];
  tp_value x = from_w(w);
  return tp_fail(TP_ERR_TYPE, "%s, got %s", what, tp_value_type_repr(&x, t, sizeof t));
}

/* After the seed's checks: the type of every other option, in the order
 * of compile()'s signature. Bools are bools (1 is not True), strings are
 * strings; backend is a name or a function (lookup_backend's TypeError). */
static tp_status check_types(const tpw_value *v) {
  if (v[O_FULLGRAPH].kind != TP_VAL_BOOL) return type_error("fullgraph must be a bool", &v[O_FULLGRAPH]);
  if (v[O_DYNAMIC].kind != TP_VAL_BOOL && v[O_DYNAMIC].kind != TP_VAL_NONE)
    return type_error("dynamic must be a bool or None", &v[O_DYNAMIC]);
  const tpw_value *b = &v[O_BACKEND];
  if (b->kind != TP_VAL_NONE && b->kind != TP_VAL_STR && !(b->kind == TP_VAL_OTHER && b->id > 0))
    return type_error("backend must be a string or a function", b);
  if (v[O_MODE].kind != TP_VAL_NONE && v[O_MODE].kind != TP_VAL_STR)
    return type_error("mode must be a str or None", &v[O_MODE]);
  if (v[O_NAME].kind != TP_VAL_NONE && v[O_NAME].kind != TP_VAL_STR)
    return type_error("name must be a str or None", &v[O_NAME]);
  if (v[O_DISABLE].kind != TP_VAL_BOOL) return type_error("disable must be a bool", &v[O_DISABLE]);
  if (v[O_ISOLATE].kind != TP_VAL_BOOL)
    return type_error("isolate_recompiles must be a bool", &v[O_ISOLATE]);
  if (v[O_STRICT].kind != TP_VAL_BOOL) return type_error("strict_native must be a bool", &v[O_STRICT]);
  return TP_OK;
}

/* The seed's checks before the decorator form, in its order, then the
 * conversion to typed options. Strings point into the caller's memory. */
static tp_status options_from_values(const tpw_value *v, int32_t nopt, const char *const *keys,
                                     const tpw_value *optvals, tp_compile_options *o) {
  char t[48];
  tp_compile_options_init(o);
  tp_value ds = from_w(&v[O_DYNSHAPES]);
  if (ds.kind != TP_VAL_NONE) {
    if (v[O_DYNAMIC].kind != TP_VAL_NONE)
      return tp_fail(TP_ERR_RUNTIME, "dynamic and dynamic_shapes cannot both be specified");
    if (ds.kind != TP_VAL_BOOL)
      return tp_fail(TP_ERR_TYPE, "TensorPlay dynamic_shapes currently accepts only a bool; "
                                  "use a bool dynamic policy for this frontend");
    o->dynamic_shapes = (int)ds.i;
  }
  if (v[O_MODE].kind != TP_VAL_NONE && v[O_OPTIONS].kind != TP_VAL_NONE)
    return tp_fail(TP_ERR_RUNTIME, "Either mode or options can be specified, but not both");
  tp_value opt = from_w(&v[O_OPTIONS]);
  if (opt.kind != TP_VAL_NONE && !(opt.kind == TP_VAL_OTHER && !strcmp(opt.type, "dict")))
    return tp_fail(TP_ERR_TYPE, "options must be a dict, got %s", tp_value_type_repr(&opt, t, sizeof t));
  tp_value lim = from_w(&v[O_LIMIT]);
  if (lim.kind != TP_VAL_NONE && lim.kind != TP_VAL_INT)
    return tp_compile_check_config(0, 0) ? tp_last_status()
                                          : tp_fail(TP_ERR_TYPE, "recompile_limit must be an integer");
  TP_TRY(tp_compile_check_config(lim.kind == TP_VAL_INT, lim.kind == TP_VAL_INT ? (int)lim.i : 0));
  o->recompile_limit = lim.kind == TP_VAL_INT ? (int)lim.i : 0;
  TP_TRY(check_types(v));
  if (nopt < 0 || nopt > 16) return tp_fail(TP_ERR_INVALID_ARG, "options: %d keys is out of range (0..16)", nopt);
  if (opt.kind != TP_VAL_NONE) {
    char k48[16][48];
    tp_value vals[16];
    for (int i = 0; i < nopt; i++) {
      snprintf(k48[i], sizeof k48[i], "%s", keys[i] ? keys[i] : "");
      vals[i] = from_w(&optvals[i]);
      o->option_keys[i] = keys[i];
      o->option_values[i] = vals[i].kind == TP_VAL_BOOL && vals[i].i;
    }
    o->has_options = 1;
    o->noptions = nopt;
    TP_TRY(tp_check_mode_options(nopt, (const char(*)[48])k48, vals));
  }
  /* types checked above: bools are BOOL values (dynamic: `is True`) */
  o->fullgraph = v[O_FULLGRAPH].num != 0;
  if (v[O_DYNAMIC].kind == TP_VAL_BOOL) o->dynamic = v[O_DYNAMIC].num != 0;
  o->mode = v[O_MODE].kind == TP_VAL_STR ? v[O_MODE].str : NULL;
  o->name = v[O_NAME].kind == TP_VAL_STR ? v[O_NAME].str : NULL;
  o->disable = v[O_DISABLE].num != 0;
  o->isolate_recompiles = v[O_ISOLATE].num != 0;
  o->strict_native = v[O_STRICT].num != 0;
  o->input_names = v[O_INPUT_NAMES].kind == TP_VAL_STR ? v[O_INPUT_NAMES].str : NULL;
  const tpw_value *b = &v[O_BACKEND];
  if (b->kind == TP_VAL_STR) {
    o->backend = b->str;
  } else if (b->kind == TP_VAL_OTHER && b->id > 0) { /* a host function as backend */
    snprintf(backend_name, sizeof backend_name, "__host_backend_%d", b->id);
    const tp_backend *found;
    tp_backends_init();
    if (tp_lookup_backend(backend_name, &found) != TP_OK) {
      const char *tags[1] = {"anonymous"};
      TP_TRY(tp_register_backend(backend_name, abi_host_backend_compile, (void *)(intptr_t)b->id, tags, 1, NULL));
    }
    o->backend = backend_name;
  }
  return TP_OK;
}

int32_t tpw_compile_check(const tpw_value *vals, int32_t nopt, const char *const *keys,
                          const tpw_value *optvals) {
  tp_compile_options o;
  return options_from_values(vals, nopt, keys, optvals, &o);
}

uint32_t tpw_compile_v(int32_t fn_id, const tpw_value *vals, int32_t nopt, const char *const *keys,
                       const tpw_value *optvals) {
  tp_compile_options o;
  if (options_from_values(vals, nopt, keys, optvals, &o)) return 0;
  tp_callable fn = abi_host_callable(fn_id);
  tp_compiled *c = NULL;
  if (tp_compile(&fn, &o, &c)) return 0;
  uint32_t h = abi_handle_new(ABI_COMPILED, c);
  if (!h) tp_compiled_free(c);
  return h;
}

int32_t tpw_compiled_call_keyed(uint32_t h, int32_t nin, const uint32_t *in, const char *extra,
                                uint32_t *outs, int32_t max_out) {
  tp_compiled *c = abi_handle_get(h, ABI_COMPILED);
  tp_tensor *ts[TP_MAX_OPERANDS], *os[TP_MAX_OPERANDS];
  int n = 0;
  if (!c || abi_gather_inputs(nin, in, ts)) return -1;
  tp_status s = tp_compiled_call_keyed(c, nin, ts, extra, max_out < TP_MAX_OPERANDS ? max_out : TP_MAX_OPERANDS, os, &n);
  return abi_return_tensors(s, n, os, outs, max_out);
}

char *tpw_compiled_reasons(uint32_t h) {
  tp_compiled *c = abi_handle_get(h, ABI_COMPILED);
  char *s = NULL;
  if (!c || tp_compiled_recompile_reasons(c, &s)) return NULL;
  return abi_give_string(s);
}
char *tpw_compiled_explain(uint32_t h) {
  tp_compiled *c = abi_handle_get(h, ABI_COMPILED);
  char *s = NULL;
  if (!c || tp_compiled_explain(c, &s)) return NULL;
  return abi_give_string(s);
}
int32_t tpw_compiled_last_module(uint32_t h, intptr_t *out) {
  tp_compiled *c = abi_handle_get(h, ABI_COMPILED);
  if (!c) return tp_last_status();
  size_t n = 0;
  const void *m = tp_compiled_last_module(c, &n);
  out[0] = out[1] = 0;
  return m ? abi_give_bytes(m, n, out) : TP_OK;
}
void tpw_reset(void) { tp_reset(); }
void tpw_note_shape_read(uint32_t h, const char *where) {
  /* a report, not a request: a stale handle is ignored, not an error */
  tp_tensor *t = abi_handle_peek(h, ABI_TENSOR);
  if (t) tp_capture_note_shape_read(t, where);
}

int32_t tpw_cond(uint32_t pred, int32_t then_id, int32_t else_id, int32_t nin, const uint32_t *in, uint32_t *outs,
                 int32_t max_out) {
  tp_tensor *p = abi_handle_get(pred, ABI_TENSOR), *ts[TP_MAX_OPERANDS], *os[TP_MAX_OPERANDS];
  int n = 0;
  if (!p || abi_gather_inputs(nin, in, ts)) return -1;
  tp_callable t = abi_host_callable(then_id), e = abi_host_callable(else_id);
  tp_status s = tp_cond(p, &t, &e, nin, ts, max_out < TP_MAX_OPERANDS ? max_out : TP_MAX_OPERANDS, os, &n);
  return abi_return_tensors(s, n, os, outs, max_out);
}

int32_t tpw_while_loop(int32_t cond_id, int32_t body_id, int32_t ncarried, int32_t nin, const uint32_t *in,
                       uint32_t *outs, int32_t max_out) {
  tp_tensor *ts[TP_MAX_OPERANDS], *os[TP_MAX_OPERANDS];
  int n = 0;
  if (abi_gather_inputs(nin, in, ts)) return -1;
  tp_callable c = abi_host_callable(cond_id), b = abi_host_callable(body_id);
  tp_status s = tp_while_loop(&c, &b, ncarried, nin, ts, max_out < TP_MAX_OPERANDS ? max_out : TP_MAX_OPERANDS, os, &n);
  return abi_return_tensors(s, n, os, outs, max_out);
}
