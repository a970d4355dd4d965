/* config.c - tp_value helpers and the seed's `config` module: seven keys,
 * each with a Python and a JS spelling and a default, plus `threads` (ours).
 * Setting stores any value; compile() validates them in the seed's order
 * (see compiler.h). `threads` is validated and applied to the runtime's
 * thread pool when set (runtime/pool.h). */
#include "compiler.h"
#include "../core/lock.h"
#include "../runtime/pool.h"
#include <stdio.h>

tp_value tp_value_none(void) {
  tp_value v;
  memset(&v, 0, sizeof v);
  v.kind = TP_VAL_NONE;
  return v;
}

tp_value tp_value_bool(int b) {
  tp_value v = tp_value_none();
  v.kind = TP_VAL_BOOL;
  v.i = b != 0;
  return v;
}

tp_value tp_value_int(int64_t i) {
  tp_value v = tp_value_none();
  v.kind = TP_VAL_INT;
  v.i = i;
  return v;
}

const char *tp_value_type_repr(const tp_value *v, char *buf, size_t n) {
  static const char *const names[TP_VAL_KIND_COUNT] = {"NoneType", "bool", "int",
                                                       "float",    "str",  NULL};
  const char *t = "NoneType";
  if (v && (unsigned)v->kind < TP_VAL_KIND_COUNT)
    t = v->kind == TP_VAL_OTHER ? (v->type[0] ? v->type : "object") : names[v->kind];
  if (buf && n) snprintf(buf, n, "<class '%.*s'>", (int)sizeof v->type, t);
  return buf;
}

/* ---- the config table: one row per key ---- */
typedef struct cfg_row {
  const char *py, *js;
  tp_value_kind kind; /* of the default */
  int64_t def;
} cfg_row;

static const cfg_row rows[TP_CFG_COUNT] = {
    [TP_CFG_ASSUME_STATIC_BY_DEFAULT] = {"assume_static_by_default", "assumeStaticByDefault",
                                         TP_VAL_BOOL, 1},
    [TP_CFG_VERBOSE] = {"verbose", "verbose", TP_VAL_BOOL, 0},
    [TP_CFG_FAIL_ON_RECOMPILE_LIMIT_HIT] = {"fail_on_recompile_limit_hit",
                                            "failOnRecompileLimitHit", TP_VAL_BOOL, 0},
    [TP_CFG_FORCE_DISABLE_CACHES] = {"force_disable_caches", "forceDisableCaches", TP_VAL_BOOL,
                                     0},
    [TP_CFG_DYNAMIC_SHAPES] = {"dynamic_shapes", "dynamicShapes", TP_VAL_NONE, 0},
    [TP_CFG_RECOMPILE_LIMIT] = {"recompile_limit", "recompileLimit", TP_VAL_INT, 8},
    [TP_CFG_ACCUMULATED_RECOMPILE_LIMIT] = {"accumulated_recompile_limit",
                                            "accumulatedRecompileLimit", TP_VAL_INT, 256},
    [TP_CFG_THREADS] = {"threads", "threads", TP_VAL_NONE, 0},
};

static tp_spinlock cfg_lock = TP_SPINLOCK_INIT;
static int cfg_ready;
static tp_value cfg[TP_CFG_COUNT];

static tp_value row_default(const cfg_row *r) {
  switch (r->kind) {
    case TP_VAL_BOOL: return tp_value_bool((int)r->def);
    case TP_VAL_INT: return tp_value_int(r->def);
    default: return tp_value_none();
  }
}

/* Caller holds cfg_lock. */
static void ensure_ready(void) {
  if (cfg_ready) return;
  for (int k = 0; k < TP_CFG_COUNT; k++) cfg[k] = row_default(&rows[k]);
  cfg_ready = 1;
}

tp_status tp_config_lookup(const char *name, tp_config_key *out) {
  if (!name || !out) return tp_fail(TP_ERR_INVALID_ARG, "config: NULL argument");
  for (int k = 0; k < TP_CFG_COUNT; k++)
    if (!strcmp(name, rows[k].py) || !strcmp(name, rows[k].js)) {
      *out = (tp_config_key)k;
      return TP_OK;
    }
  return tp_fail(TP_ERR_VALUE, "unknown config key '%s'", name);
}

const char *tp_config_name(tp_config_key k) {
  return (unsigned)k < TP_CFG_COUNT ? rows[k].py : NULL;
}

/* config.threads: None (the default) or an int from 1 to TP_POOL_MAX. */
static tp_status set_threads(tp_value v) {
  char t[48];
  if (v.kind == TP_VAL_NONE) return tp_pool_set_threads(0);
  if (v.kind != TP_VAL_INT)
    return tp_fail(TP_ERR_VALUE,
                   "config.threads must be an int from 1 to %d or None (the default: "
                   "TP_NUM_THREADS, else the number of cores), got %s",
                   TP_POOL_MAX, tp_value_type_repr(&v, t, sizeof t));
  if (v.i < 1 || v.i > TP_POOL_MAX)
    return tp_fail(TP_ERR_VALUE,
                   "config.threads must be from 1 to %d (None: the default), got %lld%s",
                   TP_POOL_MAX, (long long)v.i, v.i < 1 ? "" : " (too many threads)");
  return tp_pool_set_threads((int)v.i);
}

tp_status tp_config_set(tp_config_key k, tp_value v) {
  if ((unsigned)k >= TP_CFG_COUNT)
    return tp_fail(TP_ERR_VALUE, "unknown config key #%d", (int)k);
  if (k == TP_CFG_THREADS) TP_TRY(set_threads(v));
  tp_spin_lock(&cfg_lock);
  ensure_ready();
  cfg[k] = v;
  tp_spin_unlock(&cfg_lock);
  return TP_OK;
}

tp_value tp_config_get(tp_config_key k) {
  if ((unsigned)k >= TP_CFG_COUNT) return tp_value_none();
  tp_spin_lock(&cfg_lock);
  ensure_ready();
  tp_value v = cfg[k];
  tp_spin_unlock(&cfg_lock);
  return v;
}

void tp_config_reset(void) {
  tp_spin_lock(&cfg_lock);
  cfg_ready = 0;
  ensure_ready();
  tp_spin_unlock(&cfg_lock);
  tp_pool_set_threads(0);
}
