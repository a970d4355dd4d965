/* modes.c - TensorPlay's four compile modes and the stax option keys they
 * set. A mode is a named patch of options; options=... gives the keys
 * directly (compile() accepts one or the other, never both). */
#include "modes.h"
#include <stdio.h>
#include <stdlib.h>

/* ---- the option keys: one row per key, with its meaning ---- */
enum {
  OPT_FUSION,
  OPT_CODEGEN,
  OPT_PLAN_REPLAY,
  OPT_MAX_AUTOTUNE,
  OPT_COORDINATE_DESCENT_TUNING,
  OPT_EPILOGUE_FUSION,
  OPT_MEMORY_PLANNING,
  OPT_PROFILE,
  OPT_COUNT
};
static const struct opt_row {
  const char *key;
  const char *doc;
} opts[OPT_COUNT] = {
    [OPT_FUSION] = {"stax.fusion", "fuse elementwise chains into kernels"},
    [OPT_CODEGEN] = {"stax.codegen", "emit Wasm modules at run time on Wasm hosts"},
    [OPT_PLAN_REPLAY] = {"stax.plan_replay",
                         "build the plan and arena once and replay it (this platform's "
                         "stand-in for CUDA graphs)"},
    [OPT_MAX_AUTOTUNE] = {"stax.max_autotune",
                          "time candidate GEMM tile shapes per shape and keep the fastest"},
    [OPT_COORDINATE_DESCENT_TUNING] = {"stax.coordinate_descent_tuning",
                                       "refine tile choices by coordinate descent"},
    [OPT_EPILOGUE_FUSION] = {"stax.epilogue_fusion",
                             "fuse bias/activation/residual into GEMM epilogues"},
    [OPT_MEMORY_PLANNING] = {"stax.memory_planning", "liveness-based arena reuse"},
    [OPT_PROFILE] = {"stax.profile",
                     "time every kernel of each run; explain() lists them with time share and GFLOP/s or GB/s"},
};

/* ---- the modes: one row per mode, its patch in order (all values true) ---- */
static const struct mode_row {
  const char *name;
  int n;
  int keys[4];
} modes[] = {
    {"default", 0, {0}},
    {"reduce-overhead", 1, {OPT_PLAN_REPLAY}},
    {"max-autotune-no-cudagraphs", 2, {OPT_MAX_AUTOTUNE, OPT_COORDINATE_DESCENT_TUNING}},
    {"max-autotune", 3, {OPT_MAX_AUTOTUNE, OPT_COORDINATE_DESCENT_TUNING, OPT_PLAN_REPLAY}},
};

const char *tp_mode_option_doc(int i, const char **key) {
  if (i < 0 || i >= OPT_COUNT) {
    if (key) *key = NULL;
    return NULL;
  }
  if (key) *key = opts[i].key;
  return opts[i].doc;
}

static tp_status find_mode(const char *mode, const struct mode_row **out) {
  for (int i = 0; i < TP_ARRAY_LEN(modes); i++)
    if (!strcmp(mode, modes[i].name)) {
      *out = &modes[i];
      return TP_OK;
    }
  return tp_fail(TP_ERR_RUNTIME,
                 "Unrecognized mode=%s, should be one of: default, reduce-overhead, "
                 "max-autotune-no-cudagraphs, max-autotune",
                 mode);
}

tp_status tp_mode_patch(const char *mode, int max, const char **keys_out, int *n_out) {
  const struct mode_row *m = NULL;
  if (!n_out || (max > 0 && !keys_out)) return tp_fail(TP_ERR_INVALID_ARG, "mode patch: NULL argument");
  TP_TRY(find_mode(mode ? mode : "default", &m));
  if (m->n > max)
    return tp_fail(TP_ERR_INVALID_ARG, "mode patch: %s sets %d options, room for %d", m->name,
                   m->n, max);
  for (int k = 0; k < m->n; k++) keys_out[k] = opts[m->keys[k]].key;
  *n_out = m->n;
  return TP_OK;
}

/* Python's json.dumps of the patch dict: {"a": true, "b": true}. */
static size_t patch_json(const struct mode_row *m, char *buf, size_t n) {
  size_t w = (size_t)snprintf(buf, n, "{");
  for (int k = 0; k < m->n; k++)
    w += (size_t)snprintf(buf ? buf + w : NULL, buf ? n - w : 0, "%s\"%s\": true", k ? ", " : "",
                          opts[m->keys[k]].key);
  w += (size_t)snprintf(buf ? buf + w : NULL, buf ? n - w : 0, "}");
  return w;
}

tp_status tp_list_mode_options(const char *mode, char **json_out) {
  if (!json_out) return tp_fail(TP_ERR_INVALID_ARG, "list_mode_options: NULL output");
  *json_out = NULL;
  char buf[1024]; /* the whole mapping is ~330 bytes */
  size_t w = 0;
  if (mode) {
    const struct mode_row *m = NULL;
    TP_TRY(find_mode(mode, &m));
    w = patch_json(m, buf, sizeof buf);
  } else {
    w += (size_t)snprintf(buf, sizeof buf, "{");
    for (int i = 0; i < TP_ARRAY_LEN(modes); i++) {
      w += (size_t)snprintf(buf + w, sizeof buf - w, "%s\"%s\": ", i ? ", " : "", modes[i].name);
      w += patch_json(&modes[i], buf + w, sizeof buf - w);
    }
    w += (size_t)snprintf(buf + w, sizeof buf - w, "}");
  }
  TP_ASSERT(w < sizeof buf);
  char *s = tp_strdup(buf);
  if (!s) return TP_ERR_OUT_OF_MEMORY;
  *json_out = s;
  return TP_OK;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

tp_status tp_check_mode_options(int n, const char (*keys)[48], const tp_value *values) {
  if (n < 0 || (n && (!keys || !values)))
    return tp_fail(TP_ERR_INVALID_ARG, "mode options: bad arguments (n = %d)", n);
  for (int i = 0; i < n; i++) {
    int found = 0;
    for (int k = 0; k < OPT_COUNT && !found; k++) found = !strncmp(keys[i], opts[k].key, 48);
    if (!found) {
      const char *sorted[OPT_COUNT];
      char known[512];
      size_t w = 0;
      for (int k = 0; k < OPT_COUNT; k++) sorted[k] = opts[k].key;
      qsort(sorted, OPT_COUNT, sizeof sorted[0], cmp_str);
      known[0] = 0;
      for (int k = 0; k < OPT_COUNT; k++)
        w += (size_t)snprintf(known + w, sizeof known - w, "%s%s", k ? ", " : "", sorted[k]);
      return tp_fail(TP_ERR_RUNTIME, "Unexpected optimization option %.48s, known options are %s",
                     keys[i], known);
    }
    if (values[i].kind != TP_VAL_BOOL) {
      char t[48];
      return tp_fail(TP_ERR_TYPE, "option %.48s must be a bool, got %s", keys[i],
                     tp_value_type_repr(&values[i], t, sizeof t));
    }
  }
  return TP_OK;
}
