/* registry.c - the backend registry of tensorplay.h. The built-in backends
 * live in backends/ (stax.c, graph.c: eager and reference) and are
 * registered by tp_backends_init.
 *
 * A backend is a named function that receives a captured graph (plus the
 * example inputs and the compile options that were set) and returns a
 * runner: something callable on the graph's inputs. Names are unique; tags
 * ("debug", "experimental") only filter tp_list_backends; capabilities say
 * which host features a backend needs and which core versions it supports.
 *
 * Locking: one spinlock (lock.h, __atomic builtins, so no pthread link)
 * guards the table and the default name. Entries are allocated one by one,
 * so the pointer tp_lookup_backend returns stays valid until that backend is
 * unregistered. Backend functions are never called under the lock. */
#include "compiler.h"
#include "../core/lock.h"
#include "backends/backends.h"
#include <stdio.h>
#include <stdlib.h>

static tp_spinlock reg_lock = TP_SPINLOCK_INIT;
static tp_backend **reg; /* unsorted; names unique */
static int nreg, capreg;
static char default_name[64] = "stax";

/* ---- host features ---- */
int tp_host_has_feature(const char *feature) {
  if (!feature) return 0;
#if defined(__wasm__)
#if defined(__wasm_simd128__)
  if (!strcmp(feature, "simd128")) return 1;
#endif
  return 0;
#else
  if (!strcmp(feature, "native")) return 1;
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (!strcmp(feature, "sse2")) return __builtin_cpu_supports("sse2") != 0;
  /* the same tests as src/runtime/dispatch.c */
  if (!strcmp(feature, "avx2"))
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (!strcmp(feature, "avx512")) return __builtin_cpu_supports("avx512f") != 0;
#endif
  return 0; /* "threads" and anything unknown */
#endif
}

void tp_backend_caps_init(tp_backend_caps *c) {
  memset(c, 0, sizeof *c);
  c->contract_version = TP_CORE_BACKEND_CONTRACT_VERSION;
}

/* ---- helpers (callers hold reg_lock where they touch the table) ---- */
static int find_locked(const char *name) {
  for (int i = 0; i < nreg; i++)
    if (!strcmp(reg[i]->name, name)) return i;
  return -1;
}

/* Comma-separated missing optional deps of b into buf; returns the count. */
static int missing_deps(const tp_backend *b, char *buf, size_t n) {
  int k = 0;
  size_t w = 0;
  if (n) buf[0] = 0;
  for (int i = 0; i < b->caps.n_optional_deps; i++) {
    if (tp_host_has_feature(b->caps.optional_deps[i])) continue;
    if (w < n) w += (size_t)snprintf(buf + w, n - w, "%s%s", k ? ", " : "", b->caps.optional_deps[i]);
    k++;
  }
  return k;
}

static int cmp_name(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

/* Sorted copy of all registered names (caller frees with tp_free). */
static tp_status names_locked(char (**out)[64], int *n) {
  char(*v)[64] = tp_alloc(sizeof *v * (size_t)(nreg ? nreg : 1));
  if (!v) return TP_ERR_OUT_OF_MEMORY;
  for (int i = 0; i < nreg; i++) memcpy(v[i], reg[i]->name, sizeof v[i]);
  qsort(v, (size_t)nreg, sizeof *v, cmp_name);
  *out = v;
  *n = nreg;
  return TP_OK;
}

/* ---- difflib.SequenceMatcher(None, a, b).ratio() ----
 * Matching blocks: the longest common block (earliest in a, then in b),
 * then recursively the parts left and right of it. No junk heuristics:
 * difflib only applies "autojunk" to sequences of 200+ items. */
static int match_count(const char *a, int alo, int ahi, const char *b, int blo, int bhi) {
  int bi = alo, bj = blo, bk = 0;
  int len[65][65]; /* names are < 64 bytes */
  if (alo >= ahi || blo >= bhi) return 0;
  for (int i = alo; i < ahi; i++)
    for (int j = blo; j < bhi; j++) {
      int k = a[i] == b[j] ? (i > alo && j > blo ? len[i - 1 - alo][j - 1 - blo] : 0) + 1 : 0;
      len[i - alo][j - blo] = k;
      if (k > bk) bi = i - k + 1, bj = j - k + 1, bk = k;
    }
  if (!bk) return 0;
  return bk + match_count(a, alo, bi, b, blo, bj) + match_count(a, bi + bk, ahi, b, bj + bk, bhi);
}

static double seq_ratio(const char *a, const char *b) {
  int la = (int)strlen(a), lb = (int)strlen(b);
  if (la > 64) la = 64;
  if (lb > 64) lb = 64;
  if (la + lb == 0) return 1.0;
  return 2.0 * match_count(a, 0, la, b, 0, lb) / (la + lb);
}

/* InvalidBackend for an unknown name, in TensorPlay's words. */
static tp_status unknown_backend(const char *name) {
  char(*names)[64] = NULL;
  int n = 0;
  tp_spin_lock(&reg_lock);
  tp_status s = names_locked(&names, &n);
  tp_spin_unlock(&reg_lock);
  if (s) return s;
  /* difflib.get_close_matches(name, names, n=2, cutoff=0.6): best score
   * first; equal scores in reverse name order, as heapq.nlargest gives */
  int best[2] = {-1, -1};
  double bs[2] = {0, 0};
  for (int i = 0; i < n; i++) {
    double r = seq_ratio(names[i], name);
    if (r < 0.6) continue;
    /* names are sorted ascending, so a later equal score ranks higher */
    if (best[0] < 0 || r >= bs[0]) {
      best[1] = best[0], bs[1] = bs[0];
      best[0] = i, bs[0] = r;
    } else if (best[1] < 0 || r >= bs[1]) {
      best[1] = i, bs[1] = r;
    }
  }
  char msg[1024];
  size_t w = (size_t)snprintf(msg, sizeof msg, "Invalid backend: '%s'", name);
  if (best[0] >= 0 && best[1] >= 0)
    w += (size_t)snprintf(msg + w, sizeof msg - w, ", did you mean: '%s' or '%s'?", names[best[0]],
                          names[best[1]]);
  else if (best[0] >= 0)
    w += (size_t)snprintf(msg + w, sizeof msg - w, ", did you mean: '%s'?", names[best[0]]);
  if (w < sizeof msg) w += (size_t)snprintf(msg + w, sizeof msg - w, " (registered backends: ");
  for (int i = 0; i < n && w < sizeof msg; i++)
    w += (size_t)snprintf(msg + w, sizeof msg - w, "%s%s", i ? ", " : "", names[i]);
  if (w < sizeof msg) snprintf(msg + w, sizeof msg - w, ")");
  tp_free(names);
  return tp_fail(TP_ERR_INVALID_BACKEND, "%s", msg);
}

/* "MAJOR.MINOR.PATCH" -> v[3]; 0 if malformed. */
static int parse_version(const char *s, long v[3]) {
  for (int k = 0; k < 3; k++) {
    if (*s < '0' || *s > '9') return 0;
    v[k] = 0;
    while (*s >= '0' && *s <= '9') {
      v[k] = v[k] * 10 + (*s++ - '0');
      if (v[k] > 1000000) return 0;
    }
    if (k < 2 && *s++ != '.') return 0;
  }
  return *s == 0;
}

static int cmp_version(const long a[3], const long b[3]) {
  for (int k = 0; k < 3; k++)
    if (a[k] != b[k]) return a[k] < b[k] ? -1 : 1;
  return 0;
}

static tp_status check_caps(const char *name, const tp_backend_caps *c) {
  if (c->contract_version != TP_CORE_BACKEND_CONTRACT_VERSION)
    return tp_fail(TP_ERR_VALUE,
                   "backend '%s' declares backend contract version %d, but this core implements "
                   "version %d",
                   name, c->contract_version, TP_CORE_BACKEND_CONTRACT_VERSION);
  if (c->n_optional_deps < 0 || c->n_optional_deps > TP_ARRAY_LEN(c->optional_deps))
    return tp_fail(TP_ERR_VALUE, "backend '%s': %d optional dependencies (at most %d)", name,
                   c->n_optional_deps, TP_ARRAY_LEN(c->optional_deps));
  for (int i = 0; i < c->n_optional_deps; i++)
    if (!memchr(c->optional_deps[i], 0, sizeof c->optional_deps[i]) || !c->optional_deps[i][0])
      return tp_fail(TP_ERR_VALUE, "backend '%s': optional dependency %d is empty or too long",
                     name, i);
  long core[3], v[3];
  TP_ASSERT(parse_version(TP_VERSION_STRING, core));
  const char *which[2] = {"min_core_version", "max_core_version"};
  const char *val[2] = {c->min_core_version, c->max_core_version};
  for (int k = 0; k < 2; k++) {
    if (!memchr(val[k], 0, sizeof c->min_core_version))
      return tp_fail(TP_ERR_VALUE, "backend '%s': %s is too long", name, which[k]);
    if (!val[k][0]) continue;
    if (!parse_version(val[k], v))
      return tp_fail(TP_ERR_VALUE, "backend '%s': %s '%s' is not MAJOR.MINOR.PATCH", name,
                     which[k], val[k]);
    int c0 = cmp_version(core, v);
    if (k == 0 ? c0 < 0 : c0 > 0)
      return tp_fail(TP_ERR_VALUE, "backend '%s' requires core version %s %s, but this core is %s",
                     name, k == 0 ? ">=" : "<=", val[k], TP_VERSION_STRING);
  }
  return TP_OK;
}

/* ---- registration ---- */
static tp_status add_backend(const char *name, tp_backend_fn fn, void *ud,
                             const char *const *tags, int ntags, const tp_backend_caps *caps,
                             int quiet_if_present) {
  if (!name || !name[0]) return tp_fail(TP_ERR_VALUE, "backend name must be a non-empty string");
  if (strlen(name) >= sizeof((tp_backend *)0)->name)
    return tp_fail(TP_ERR_VALUE, "backend name '%.40s...' is too long (at most %d bytes)", name,
                   (int)sizeof((tp_backend *)0)->name - 1);
  if (!fn) return tp_fail(TP_ERR_TYPE, "backend '%s' must be callable, got NULL", name);
  if (ntags < 0 || ntags > 4 || (ntags && !tags))
    return tp_fail(TP_ERR_VALUE, "backend '%s': %d tags (at most 4)", name, ntags);
  for (int i = 0; i < ntags; i++)
    if (!tags[i] || !tags[i][0] || strlen(tags[i]) >= sizeof((tp_backend *)0)->tags[0])
      return tp_fail(TP_ERR_VALUE, "backend '%s': tag %d is empty or too long", name, i);
  if (caps) TP_TRY(check_caps(name, caps));

  tp_backend *b = tp_alloc(sizeof *b);
  if (!b) return TP_ERR_OUT_OF_MEMORY;
  memset(b, 0, sizeof *b);
  strcpy(b->name, name);
  b->fn = fn;
  b->ud = ud;
  b->ntags = ntags;
  for (int i = 0; i < ntags; i++) strcpy(b->tags[i], tags[i]);
  if (caps) b->caps = *caps;
  else tp_backend_caps_init(&b->caps);
  b->declares_caps = caps != NULL;

  tp_status s = TP_OK;
  tp_spin_lock(&reg_lock);
  if (find_locked(name) >= 0) {
    s = quiet_if_present ? TP_OK : TP_ERR_VALUE;
  } else {
    s = TP_ARRAY_RESERVE(reg, capreg, nreg + 1);
  }
  int added = 0;
  if (s == TP_OK && find_locked(name) < 0) reg[nreg++] = b, added = 1;
  tp_spin_unlock(&reg_lock);
  if (!added) tp_free(b);
  if (s == TP_ERR_VALUE) return tp_fail(s, "backend '%s' is already registered", name);
  return s;
}

tp_status tp_register_backend(const char *name, tp_backend_fn fn, void *ud,
                              const char *const *tags, int ntags, const tp_backend_caps *caps) {
  tp_backends_init();
  return add_backend(name, fn, ud, tags, ntags, caps, 0);
}

void tp_unregister_backend(const char *name) {
  if (!name) return;
  tp_backends_init();
  tp_backend *gone = NULL;
  tp_spin_lock(&reg_lock);
  int i = find_locked(name);
  if (i >= 0) {
    gone = reg[i];
    reg[i] = reg[--nreg];
  }
  tp_spin_unlock(&reg_lock);
  tp_free(gone);
}

tp_status tp_list_backends(const char *const *exclude_tags, int nexclude,
                           int include_unavailable, char **out) {
  static const char *const default_exclude[] = {"debug", "experimental"};
  if (!out) return tp_fail(TP_ERR_INVALID_ARG, "list_backends: NULL output");
  *out = NULL;
  if (!exclude_tags) exclude_tags = default_exclude, nexclude = 2;
  if (nexclude < 0) return tp_fail(TP_ERR_INVALID_ARG, "list_backends: nexclude = %d", nexclude);
  tp_backends_init();
  tp_spin_lock(&reg_lock);
  char(*v)[64] = tp_alloc(sizeof *v * (size_t)(nreg ? nreg : 1));
  int n = 0;
  for (int i = 0; v && i < nreg; i++) {
    const tp_backend *b = reg[i];
    int skip = 0;
    for (int t = 0; t < b->ntags && !skip; t++)
      for (int e = 0; e < nexclude && !skip; e++)
        skip = exclude_tags[e] && !strcmp(b->tags[t], exclude_tags[e]);
    char miss[8];
    if (!skip && !include_unavailable) skip = missing_deps(b, miss, sizeof miss) > 0;
    if (!skip) memcpy(v[n++], b->name, sizeof v[0]);
  }
  tp_spin_unlock(&reg_lock);
  if (!v) return TP_ERR_OUT_OF_MEMORY;
  qsort(v, (size_t)n, sizeof *v, cmp_name);
  size_t len = 1;
  for (int i = 0; i < n; i++) len += strlen(v[i]) + 1;
  char *s = tp_alloc(len), *p = s;
  if (s) {
    *p = 0;
    for (int i = 0; i < n; i++) p += sprintf(p, "%s%s", i ? "\n" : "", v[i]);
  }
  tp_free(v);
  if (!s) return TP_ERR_OUT_OF_MEMORY;
  *out = s;
  return TP_OK;
}

tp_status tp_lookup_backend(const char *name, const tp_backend **out) {
  if (!name || !out) return tp_fail(TP_ERR_INVALID_ARG, "lookup_backend: NULL argument");
  *out = NULL;
  tp_backends_init();
  char miss[8 * 34];
  int nmiss = 0;
  tp_spin_lock(&reg_lock);
  int i = find_locked(name);
  const tp_backend *b = i >= 0 ? reg[i] : NULL;
  if (b) nmiss = missing_deps(b, miss, sizeof miss);
  tp_spin_unlock(&reg_lock);
  if (!b) return unknown_backend(name);
  if (nmiss)
    return tp_fail(TP_ERR_INVALID_BACKEND,
                   "backend '%s' is unavailable on this host: missing optional dependencies: %s",
                   name, miss);
  *out = b;
  return TP_OK;
}

tp_status tp_set_default_backend(const char *name) {
  const tp_backend *b;
  if (name) TP_TRY(tp_lookup_backend(name, &b));
  tp_spin_lock(&reg_lock);
  snprintf(default_name, sizeof default_name, "%s", name ? name : "stax");
  tp_spin_unlock(&reg_lock);
  return TP_OK;
}

/* A copy per thread: another thread may change the default meanwhile. */
const char *tp_get_default_backend(void) {
  static TP_THREAD_LOCAL char copy[sizeof default_name];
  tp_spin_lock(&reg_lock);
  memcpy(copy, default_name, sizeof copy);
  tp_spin_unlock(&reg_lock);
  return copy;
}

void tp_get_backend_capabilities(const char *name, tp_backend_caps *out) {
  tp_backend_caps_init(out);
  if (!name) return;
  tp_backends_init();
  tp_spin_lock(&reg_lock);
  int i = find_locked(name);
  if (i >= 0) *out = reg[i]->caps;
  tp_spin_unlock(&reg_lock);
}

int tp_declares_capabilities(const char *name) {
  if (!name) return 0;
  tp_backends_init();
  tp_spin_lock(&reg_lock);
  int i = find_locked(name);
  int r = i >= 0 && reg[i]->declares_caps;
  tp_spin_unlock(&reg_lock);
  return r;
}

void tp_backends_init(void) {
  static tp_spinlock init_lock = TP_SPINLOCK_INIT;
  static int done;
  if (__atomic_load_n(&done, __ATOMIC_ACQUIRE)) return;
  tp_spin_lock(&init_lock);
  if (!done) {
    static const char *const debug[] = {"debug"};
    /* quiet: a name the host registered first wins; the error, if any (out
     * of memory), stays in tp_last_error and the backend is missing */
    add_backend("stax", tp_backend_stax, NULL, NULL, 0, NULL, 1);
    add_backend("eager", tp_backend_eager, NULL, debug, 1, NULL, 1);
    add_backend("reference", tp_backend_reference, NULL, debug, 1, NULL, 1);
    __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
  }
  tp_spin_unlock(&init_lock);
}

/* The built-in backends keep nothing between compiles that tp_reset must
 * drop: plans and their modules belong to the compiled functions' entries
 * (freed by tp_reset), and the tuning caches are kept on purpose (timings
 * of the machine, not of a function; docs/architecture.md, Threads). */
void tp_backends_reset(void) {}
