/* jit.c - see jit.h.
 *
 * Threads: the table of resolved loads is locked (core/lock.h); the host
 * feature bits are read once (a racing first read stores the same value). */
#include "jit.h"

/* FNV-1a, 64 bits: the host's cache key of a module (with its length). In
 * C rather than in the host's JS: on a fresh page the engine still
 * interprets a JS byte loop, which took 9 ms for the MLP's module in
 * Chromium; this loop takes a fraction of a millisecond. */
uint64_t tp_jit_hash(const void *bytes, size_t n) {
  const unsigned char *p = bytes;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

#if defined(__wasm__)
__attribute__((import_module("env"), import_name("tp_host_load_module"))) int32_t
tp_host_load_module(int32_t bytes, int32_t len, int32_t nexports, int32_t out);
__attribute__((import_module("env"), import_name("tp_host_features"))) int32_t tp_host_features(void);
__attribute__((import_module("env"), import_name("tp_host_unload_module"))) void
tp_host_unload_module(int32_t base, int32_t n);

void tp_jit_unload(int32_t base, int n) {
  if (base >= 0 && n > 0) tp_host_unload_module(base, n);
}

static int features = -1;
int tp_jit_features(void) {
  if (features < 0) features = tp_host_features();
  return features;
}

tp_status tp_jit_load(const void *bytes, size_t len, int nexports, int use_cache, int32_t *base,
                      int32_t *token) {
  (void)use_cache; /* the host reads config.forceDisableCaches itself */
  /* io[0]: in, TP_JIT_HASHED (the hash below is there; the host refuses a
   * load without it); out, the table base or token. io[1], io[2]: in, the
   * hash's low and high 32 bits (docs/codegen.md, loading protocol). */
  int32_t io[3];
  uint64_t h = tp_jit_hash(bytes, len);
  io[0] = TP_JIT_HASHED;
  io[1] = (int32_t)(uint32_t)h;
  io[2] = (int32_t)(uint32_t)(h >> 32);
  tp_clear_error();
  int32_t r = tp_host_load_module((int32_t)(intptr_t)bytes, (int32_t)len, nexports, (int32_t)(intptr_t)io);
  int32_t out = io[0];
  if (r < 0) {
    if (tp_last_status() == TP_OK) tp_fail(TP_ERR_HOST, "the host could not load a generated module");
    return tp_last_status();
  }
  *base = r == 0 ? out : -1;
  *token = r == 1 ? out : 0;
  return TP_OK;
}
#else
void tp_jit_unload(int32_t base, int n) { (void)base, (void)n; }
int tp_jit_features(void) { return 0; }
tp_status tp_jit_load(const void *bytes, size_t len, int nexports, int use_cache, int32_t *base,
                      int32_t *token) {
  (void)bytes, (void)len, (void)nexports, (void)use_cache, (void)base, (void)token;
  return tp_fail(TP_ERR_UNSUPPORTED, "generated Wasm modules run only in a Wasm host (use --emit-wasm to inspect them)");
}
#endif

/* Pending loads resolved by the host (tpw_jit_ready). */
#define MAX_RESOLVED 64 /* resolved loads remembered until polled (oldest forgotten first) */
static struct { int32_t token, base; } done[MAX_RESOLVED];
static int ndone;
static tp_spinlock done_lock = TP_SPINLOCK_INIT;

/* Cancelled pending loads: their slots are freed when they resolve. */
static struct { int32_t token, n; } cancelled[MAX_RESOLVED];
static int ncancelled;

void tp_jit_cancel(int32_t token, int n) {
  tp_spin_lock(&done_lock);
  int i = 0;
  while (i < ndone && done[i].token != token) i++;
  if (i < ndone) { /* already resolved: unload now */
    int32_t base = done[i].base;
    memmove(done + i, done + i + 1, sizeof done[0] * (size_t)(ndone - i - 1));
    ndone--;
    tp_spin_unlock(&done_lock);
    tp_jit_unload(base, n);
    return;
  }
  if (ncancelled == TP_ARRAY_LEN(cancelled)) { /* forget the oldest (its slots stay taken) */
    memmove(cancelled, cancelled + 1, sizeof cancelled[0] * (size_t)(ncancelled - 1));
    ncancelled--;
  }
  cancelled[ncancelled].token = token;
  cancelled[ncancelled++].n = n;
  tp_spin_unlock(&done_lock);
}

void tp_jit_resolve(int32_t token, int32_t base) {
  tp_spin_lock(&done_lock);
  for (int c = 0; c < ncancelled; c++)
    if (cancelled[c].token == token) {
      int n = cancelled[c].n;
      memmove(cancelled + c, cancelled + c + 1, sizeof cancelled[0] * (size_t)(ncancelled - c - 1));
      ncancelled--;
      tp_spin_unlock(&done_lock);
      tp_jit_unload(base, n);
      return;
    }
  int i = 0;
  while (i < ndone && done[i].token != token) i++;
  if (i == ndone) {
    if (ndone == TP_ARRAY_LEN(done)) { /* forget the oldest */
      memmove(done, done + 1, sizeof done[0] * (size_t)(ndone - 1));
      ndone--;
    }
    i = ndone++;
    done[i].token = token;
  }
  done[i].base = base;
  tp_spin_unlock(&done_lock);
}

int tp_jit_poll(int32_t token, int32_t *base) {
  int r = 0;
  tp_spin_lock(&done_lock);
  for (int i = 0; i < ndone && !r; i++)
    if (done[i].token == token) {
      *base = done[i].base;
      r = done[i].base >= 0 ? 1 : -1;
    }
  tp_spin_unlock(&done_lock);
  return r;
}
