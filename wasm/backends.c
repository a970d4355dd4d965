/* backends.c - the backend registry through the ABI, and backends the
 * host registers: their compile step hands the host a copy of the graph
 * (a graph handle) and gets back the host function that runs it. */
#include "handles.h"
#include "../src/compiler/compiler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct host_runner { int32_t id; } host_runner;
static tp_status host_runner_run(void *ud, int nin, tp_tensor *const *in, int max_out,
                                 tp_tensor **outs, int *nout) {
  return abi_host_dispatch(((host_runner *)ud)->id, nin, in, max_out, outs, nout);
}
static void host_runner_free(void *ud) {
  abi_host_release(((host_runner *)ud)->id);
  tp_free(ud);
}

tp_status abi_host_backend_compile(void *ud, const tp_graph *g, int nin,
                                      tp_tensor *const *examples, const tp_backend_opts *o,
                                      tp_backend_run *out) {
  int32_t fn_id = (int32_t)(intptr_t)ud;
  char *text = NULL, json[1024];
  tp_graph *copy = NULL;
  TP_TRY(tp_graph_print(g, 1, &text)); /* the host owns a copy of the graph */
  tp_status s = tp_graph_parse(text, strlen(text), &copy);
  tp_free_buffer(text);
  if (s) return s;
  uint32_t gh = abi_handle_new(ABI_GRAPH, copy);
  if (!gh) {
    tp_graph_free(copy);
    return tp_last_status();
  }
  size_t k = (size_t)snprintf(json, sizeof json, "{");
  if (o->has_mode) k += (size_t)snprintf(json + k, sizeof json - k, "\"mode\": \"%s\", ", o->mode);
  if (o->has_name) k += (size_t)snprintf(json + k, sizeof json - k, "\"name\": \"%s\", ", o->name);
  if (o->has_dynamic) k += (size_t)snprintf(json + k, sizeof json - k, "\"dynamic\": %s, ", o->dynamic ? "true" : "false");
  if (o->has_strict_native) k += (size_t)snprintf(json + k, sizeof json - k, "\"strictNative\": true, ");
  if (o->has_options && k < sizeof json) {
    k += (size_t)snprintf(json + k, sizeof json - k, "\"options\": {");
    for (int i = 0; i < o->noptions && k < sizeof json; i++)
      k += (size_t)snprintf(json + k, sizeof json - k, "%s\"%s\": %s", i ? ", " : "", o->option_keys[i],
                            o->option_values[i].i ? "true" : "false");
    if (k < sizeof json) k += (size_t)snprintf(json + k, sizeof json - k, "}, ");
  }
  if (k >= 2 && k < sizeof json && json[k - 2] == ',') k -= 2;
  if (k < sizeof json - 1) snprintf(json + k, sizeof json - k, "}");
  uint32_t hin[TP_MAX_OPERANDS] = {0};
  int made = 0;
  for (; made < nin && made < TP_MAX_OPERANDS; made++) {
    tp_tensor *t = examples[made];
    tp_tensor_retain(t);
    if (!(hin[made] = abi_wrap_tensor(TP_OK, &t))) break;
  }
  int32_t rid = -1;
  if (made == nin) {
    tp_clear_error();
    rid = abi_host_backend(fn_id, gh, hin, nin, json);
  }
  for (int i = 0; i < made; i++) tpw_tensor_free(hin[i]);
  if (rid < 0) {
    if (tp_last_status() == TP_OK) tp_fail(TP_ERR_HOST, "backend host function %d failed", fn_id);
    return tp_last_status();
  }
  host_runner *r = tp_alloc(sizeof *r);
  if (!r) {
    abi_host_release(rid);
    return TP_ERR_OUT_OF_MEMORY;
  }
  r->id = rid;
  out->run = host_runner_run;
  out->ud = r;
  out->free = host_runner_free;
  return TP_OK;
}

static int split_csv(const char *csv, char (*out)[32], int max) {
  int n = 0;
  while (csv && *csv && n < max) {
    const char *e = strchr(csv, ',');
    size_t len = e ? (size_t)(e - csv) : strlen(csv);
    if (len > 31) len = 31;
    memcpy(out[n], csv, len);
    out[n][len] = 0;
    if (len) n++;
    csv = e ? e + 1 : csv + strlen(csv);
  }
  return n;
}

int32_t tpw_register_backend(int32_t fn_id, const char *name, const char *tags_csv, int32_t has_caps,
                             const char *deps_csv, int32_t contract_version, const char *min_core,
                             const char *max_core) {
  char tags[4][32];
  const char *tp[4];
  int nt = split_csv(tags_csv, tags, 4);
  for (int i = 0; i < nt; i++) tp[i] = tags[i];
  tp_backend_caps caps;
  tp_backend_caps_init(&caps);
  if (has_caps) {
    char deps[8][32];
    caps.n_optional_deps = split_csv(deps_csv, deps, 8);
    for (int i = 0; i < caps.n_optional_deps; i++) snprintf(caps.optional_deps[i], 32, "%s", deps[i]);
    caps.contract_version = contract_version;
    snprintf(caps.min_core_version, sizeof caps.min_core_version, "%s", min_core ? min_core : "");
    snprintf(caps.max_core_version, sizeof caps.max_core_version, "%s", max_core ? max_core : "");
  }
  tp_backends_init();
  return tp_register_backend(name, abi_host_backend_compile, (void *)(intptr_t)fn_id, tp, nt,
                             has_caps ? &caps : NULL);
}
void tpw_unregister_backend(const char *name) { tp_unregister_backend(name); }
char *tpw_list_backends(const char *exclude_csv, int32_t include_unavailable) {
  char ex[8][32];
  const char *ep[8];
  int n = exclude_csv ? split_csv(exclude_csv, ex, 8) : 0;
  for (int i = 0; i < n; i++) ep[i] = ex[i];
  char *s = NULL;
  tp_backends_init();
  if (tp_list_backends(exclude_csv ? ep : NULL, n, include_unavailable, &s)) return NULL;
  return abi_give_string(s);
}
int32_t tpw_lookup_backend(const char *name) {
  const tp_backend *b;
  tp_backends_init();
  return tp_lookup_backend(name, &b);
}
int32_t tpw_set_default_backend(const char *name) {
  tp_backends_init();
  return tp_set_default_backend(name);
}
const char *tpw_get_default_backend(void) { return tp_get_default_backend(); }
char *tpw_backend_capabilities(const char *name) {
  tp_backend_caps c;
  tp_backends_init();
  tp_get_backend_capabilities(name, &c);
  char json[600];
  size_t k = (size_t)snprintf(json, sizeof json, "{\"optionalDeps\": [");
  for (int i = 0; i < c.n_optional_deps && k < sizeof json; i++)
    k += (size_t)snprintf(json + k, sizeof json - k, "%s\"%s\"", i ? ", " : "", c.optional_deps[i]);
  if (k < sizeof json)
    snprintf(json + k, sizeof json - k,
             "], \"contractVersion\": %d, \"minCoreVersion\": %s%s%s, \"maxCoreVersion\": %s%s%s}",
             c.contract_version, c.min_core_version[0] ? "\"" : "null", c.min_core_version,
             c.min_core_version[0] ? "\"" : "", c.max_core_version[0] ? "\"" : "null",
             c.max_core_version, c.max_core_version[0] ? "\"" : "");
  char *out = malloc(strlen(json) + 1); /* tpw_free */
  if (out) strcpy(out, json);
  else tp_fail(TP_ERR_OUT_OF_MEMORY, "out of memory copying %zu bytes of JSON", strlen(json) + 1);
  return out;
}
int32_t tpw_declares_capabilities(const char *name) {
  tp_backends_init();
  return tp_declares_capabilities(name);
}
char *tpw_list_mode_options(const char *mode) {
  char *s = NULL;
  if (tp_list_mode_options(mode, &s)) return NULL;
  return abi_give_string(s);
}
int32_t tpw_core_backend_contract_version(void) { return TP_CORE_BACKEND_CONTRACT_VERSION; }
