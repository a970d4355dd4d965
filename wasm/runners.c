/* runners.c - a registered backend's compile step called directly: the
 * seed's lookup_backend(name)(graph, example_inputs) for built-in
 * backends, so a host backend can delegate to stax (log or rewrite the
 * graph, then hand it on). The result is a runner handle (ABI_RUNNER):
 * call it on tensors like a compiled function, free it when done. */
#include "handles.h"
#include "../src/compiler/compiler.h"

#include <stdio.h>
#include <string.h>

typedef struct abi_runner { tp_backend_run run; } abi_runner;

uint32_t tpw_backend_compile(const char *name, uint32_t graph, int32_t nin, const uint32_t *in,
                             const char *mode, int32_t dynamic, const char *fn_name,
                             int32_t strict_native, int32_t nopt, const char *const *keys,
                             const int32_t *vals) {
  const tp_graph *g = abi_handle_get(graph, ABI_GRAPH);
  if (!g) return 0;
  tp_tensor *ts[TP_MAX_OPERANDS];
  if (abi_gather_inputs(nin, in, ts)) return 0;
  if (!name) {
    tp_fail(TP_ERR_TYPE, "backend name must be a string, got <class 'NoneType'>");
    return 0;
  }
  if (dynamic < -1 || dynamic > 1 || nopt < 0 || nopt > 16 || (nopt && (!keys || !vals))) {
    tp_fail(TP_ERR_INVALID_ARG, "backend compile: dynamic %d or %d options out of range", dynamic, nopt);
    return 0;
  }
  tp_backend_opts o;
  memset(&o, 0, sizeof o);
  if (mode) {
    if (strlen(mode) >= sizeof o.mode) {
      tp_fail(TP_ERR_RUNTIME, "Unrecognized mode=%.40s", mode);
      return 0;
    }
    o.has_mode = 1;
    snprintf(o.mode, sizeof o.mode, "%s", mode);
  }
  if (fn_name) {
    o.has_name = 1;
    snprintf(o.name, sizeof o.name, "%s", fn_name);
  }
  if (dynamic >= 0) o.has_dynamic = 1, o.dynamic = dynamic;
  if (strict_native) o.has_strict_native = 1, o.strict_native = 1;
  if (keys) {
    o.has_options = 1;
    o.noptions = nopt;
    for (int i = 0; i < nopt; i++) {
      if (!keys[i] || strlen(keys[i]) >= sizeof o.option_keys[i]) {
        tp_fail(TP_ERR_VALUE, "backend options: key %d is missing or too long", i);
        return 0;
      }
      snprintf(o.option_keys[i], sizeof o.option_keys[i], "%s", keys[i]);
      o.option_values[i] = tp_value_bool(vals[i] != 0);
    }
  }
  const tp_backend *b = NULL;
  tp_backends_init();
  if (tp_lookup_backend(name, &b)) return 0;
  abi_runner *r = tp_alloc(sizeof *r);
  if (!r) {
    tp_fail(TP_ERR_OUT_OF_MEMORY, "backend compile: out of memory");
    return 0;
  }
  memset(r, 0, sizeof *r);
  tp_status s = b->fn(b->ud, g, nin, ts, &o, &r->run);
  if (!s && !r->run.run) s = tp_fail(TP_ERR_TYPE, "backend '%s' returned a non-callable", name);
  uint32_t h = s ? 0 : abi_handle_new(ABI_RUNNER, r);
  if (!h) {
    if (r->run.free) r->run.free(r->run.ud);
    tp_free(r);
  }
  return h;
}

int32_t tpw_runner_call(uint32_t h, int32_t nin, const uint32_t *in, uint32_t *outs, int32_t max_out) {
  abi_runner *r = abi_handle_get(h, ABI_RUNNER);
  tp_tensor *ts[TP_MAX_OPERANDS], *os[TP_MAX_OPERANDS];
  int n = 0;
  if (!r || abi_gather_inputs(nin, in, ts)) return -1;
  if (max_out < 0 || (max_out && !outs)) {
    tp_fail(TP_ERR_INVALID_ARG, "runner call: bad output buffer");
    return -1;
  }
  tp_status s = r->run.run(r->run.ud, nin, ts, max_out < TP_MAX_OPERANDS ? max_out : TP_MAX_OPERANDS, os, &n);
  return abi_return_tensors(s, n, os, outs, max_out);
}

int32_t tpw_runner_free(uint32_t h) {
  abi_runner *r = abi_handle_get(h, ABI_RUNNER);
  if (!r) return tp_last_status();
  abi_handle_drop(h);
  if (r->run.free) r->run.free(r->run.ud);
  tp_free(r);
  return TP_OK;
}
