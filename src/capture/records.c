/* records.c - the records registry (the seed's _records, _register_record
 * and _record_for). Registration is idempotent; natively it is serialized
 * with the registry lock so concurrent marking from threads is safe. */
#include "records.h"
#include "../core/lock.h"
#include <stdio.h>

static tp_record **recs;
static int nrecs, caprecs;
static tp_spinlock lock = TP_SPINLOCK_INIT;

static const char *const mode_names[TP_REC_MODE_COUNT] = {
    "allow", "nonstrict", "disabled", "constant", "substitute", "nested"};

const char *tp_rec_mode_name(tp_rec_mode m) {
  return (unsigned)m < TP_REC_MODE_COUNT ? mode_names[m] : "unknown";
}

tp_status tp_rec_mode_parse(const char *s, tp_rec_mode *out) {
  for (int i = 0; s && i < TP_REC_MODE_COUNT; i++)
    if (!strcmp(s, mode_names[i])) {
      *out = (tp_rec_mode)i;
      return TP_OK;
    }
  return tp_fail(TP_ERR_VALUE, "unknown capture mode '%s'", s ? s : "(null)");
}

void tp_rec_params_init(tp_rec_params *p) {
  memset(p, 0, sizeof *p);
  p->recursive = 1;
  p->max_reuse_entries = 8;
}

static tp_record *lookup_locked(uint64_t key) {
  for (int i = 0; i < nrecs; i++) {
    tp_record *r = recs[i];
    if (r->original == key || (r->adapter && r->adapter == key)) return r;
    for (int k = 0; k < r->naliases; k++)
      if (r->aliases[k] == key) return r;
  }
  return NULL;
}

tp_record *tp_rec_lookup(uint64_t key) {
  tp_spin_lock(&lock);
  tp_record *r = lookup_locked(key);
  tp_spin_unlock(&lock);
  return r;
}

tp_record *tp_rec_by_id(uint32_t id) {
  tp_spin_lock(&lock);
  tp_record *r = id >= 1 && (int)id <= nrecs ? recs[id - 1] : NULL;
  tp_spin_unlock(&lock);
  return r;
}

tp_status tp_rec_register(uint64_t key, const char *repr, tp_rec_mode mode,
                          const tp_rec_params *p, tp_record **out) {
  tp_rec_params def;
  if (!p) {
    tp_rec_params_init(&def);
    p = &def;
  }
  if ((unsigned)mode >= TP_REC_MODE_COUNT)
    return tp_fail(TP_ERR_VALUE, "unknown capture mode %d", (int)mode);
  if (!repr) repr = "<callable>";
  tp_status s = TP_OK;
  tp_spin_lock(&lock);
  tp_record *r = lookup_locked(key);
  if (r) {
    if (r->mode != mode)
      s = tp_fail(TP_ERR_VALUE, "callable %s cannot be marked as both '%s' and '%s'", repr,
                  mode_names[r->mode], mode_names[mode]);
    else if (mode == TP_REC_SUBSTITUTE)
      s = tp_fail(TP_ERR_VALUE, "a substitution is already registered for %s", repr);
    else
      *out = r;
    tp_spin_unlock(&lock);
    return s;
  }
  if (TP_ARRAY_RESERVE(recs, caprecs, nrecs + 1)) {
    tp_spin_unlock(&lock);
    return TP_ERR_OUT_OF_MEMORY;
  }
  r = tp_alloc(sizeof *r);
  if (!r) {
    tp_spin_unlock(&lock);
    return TP_ERR_OUT_OF_MEMORY;
  }
  memset(r, 0, sizeof *r);
  r->id = (uint32_t)nrecs + 1;
  r->original = key;
  snprintf(r->repr, sizeof r->repr, "%s", repr);
  r->mode = mode;
  r->p = *p;
  if (p->reason) snprintf(r->reason, sizeof r->reason, "%s", p->reason);
  r->p.reason = NULL;
  recs[nrecs++] = r;
  tp_spin_unlock(&lock);
  *out = r;
  return TP_OK;
}

tp_status tp_rec_set_adapter(tp_record *r, uint64_t adapter) {
  r->adapter = adapter;
  return TP_OK;
}

tp_status tp_rec_add_alias(tp_record *r, uint64_t alias) {
  tp_spin_lock(&lock);
  if (r->naliases >= TP_REC_MAX_ALIASES) {
    tp_spin_unlock(&lock);
    return tp_fail(TP_ERR_RUNTIME, "too many aliases for %s (max %d)", r->repr, TP_REC_MAX_ALIASES);
  }
  r->aliases[r->naliases++] = alias;
  tp_spin_unlock(&lock);
  return TP_OK;
}

static void drop_constant(tp_record *r) {
  for (int i = 0; i < r->nconst; i++) tp_tensor_release(r->constant[i]);
  r->nconst = 0;
  r->constant_ready = 0;
  r->constant_template[0] = 0;
}

tp_status tp_rec_set_constant(tp_record *r, int n, tp_tensor *const *vals, const char *tmpl) {
  if (n < 0 || n > TP_REC_MAX_CONST)
    return tp_fail(TP_ERR_VALUE, "a constant result holds at most %d tensors (got %d)",
                   TP_REC_MAX_CONST, n);
  tp_spin_lock(&lock);
  if (!r->constant_ready) { /* the first value wins, as in the seed */
    for (int i = 0; i < n; i++) {
      tp_tensor_retain(vals[i]);
      r->constant[i] = vals[i];
    }
    r->nconst = n;
    snprintf(r->constant_template, sizeof r->constant_template, "%s", tmpl ? tmpl : "");
    r->constant_ready = 1;
  }
  tp_spin_unlock(&lock);
  return TP_OK;
}

void tp_records_reset_constants(void) {
  tp_spin_lock(&lock);
  for (int i = 0; i < nrecs; i++) drop_constant(recs[i]);
  tp_spin_unlock(&lock);
}

void tp_records_clear(void) {
  tp_spin_lock(&lock);
  for (int i = 0; i < nrecs; i++) {
    drop_constant(recs[i]);
    tp_free(recs[i]);
  }
  tp_free(recs);
  recs = NULL;
  nrecs = caprecs = 0;
  tp_spin_unlock(&lock);
}

int tp_records_count(void) { return nrecs; }
