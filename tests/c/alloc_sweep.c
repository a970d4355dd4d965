/* alloc_sweep.c - the counting allocator and the fork-per-N sweep of
 * alloc_sweep.h. */
#include "alloc_sweep.h"

#include <execinfo.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

sweep_alloc_state sweep_alloc;
const char *sweep_step = "";
tp_status sweep_status;
char sweep_msg[1100];

/* ---- live blocks: open addressing on the pointer ---- */
typedef struct block {
  void *p;
  size_t n;
} block;
static block *tab;
static size_t cap;

static size_t slot_of(void *p) {
  uintptr_t h = (uintptr_t)p;
  h ^= h >> 17;
  h *= 0x9e3779b97f4a7c15ULL;
  return (size_t)(h >> 7) & (cap - 1);
}
static void tab_put(void *p, size_t n);
static void tab_grow(void) {
  block *old = tab;
  size_t oc = cap;
  cap = oc ? oc * 2 : 1 << 14;
  tab = calloc(cap, sizeof(block));
  if (!tab) abort(); /* the test's own bookkeeping */
  for (size_t i = 0; i < oc; i++)
    if (old[i].p) tab_put(old[i].p, old[i].n);
  free(old);
}
static void tab_put(void *p, size_t n) {
  if ((size_t)(sweep_alloc.live_blocks + 1) * 2 > cap) tab_grow();
  size_t i = slot_of(p);
  while (tab[i].p) i = (i + 1) & (cap - 1);
  tab[i].p = p;
  tab[i].n = n;
}
/* remove p; returns its size or (size_t)-1 if unknown */
static size_t tab_take(void *p) {
  if (!cap) return (size_t)-1;
  size_t i = slot_of(p);
  while (tab[i].p && tab[i].p != p) i = (i + 1) & (cap - 1);
  if (!tab[i].p) return (size_t)-1;
  size_t n = tab[i].n;
  tab[i].p = NULL;
  /* re-insert the rest of the cluster */
  for (size_t j = (i + 1) & (cap - 1); tab[j].p; j = (j + 1) & (cap - 1)) {
    block b = tab[j];
    tab[j].p = NULL;
    size_t k = slot_of(b.p);
    while (tab[k].p) k = (k + 1) & (cap - 1);
    tab[k] = b;
  }
  return n;
}

static void *counting_alloc(void *ud, void *p, size_t old_n, size_t new_n) {
  (void)ud;
  sweep_alloc_state *A = &sweep_alloc;
  if (new_n == 0) { /* free */
    if (!p) return NULL;
    size_t n = tab_take(p);
    if (n == (size_t)-1) A->unknown++;
    else {
      if (n != old_n) A->bad_sizes++;
      A->live_bytes -= n;
      A->live_blocks--;
    }
    free(p);
    return NULL;
  }
  A->calls++;
  if (A->fail_at && A->calls == A->fail_at) {
    A->failed = 1;
    if (getenv("TP_ALLOC_BACKTRACE")) { /* debugging aid: who allocates the Nth block */
      void *bt[16];
      int nb = backtrace(bt, 16);
      backtrace_symbols_fd(bt, nb, 1);
    }
    return NULL; /* a failed realloc leaves p alone */
  }
  size_t n = (size_t)-1;
  if (p) {
    n = tab_take(p);
    if (n == (size_t)-1) A->unknown++;
    else if (n != old_n) A->bad_sizes++;
  }
  void *q = realloc(p, new_n);
  if (!q) {
    if (p && n != (size_t)-1) tab_put(p, n);
    return NULL;
  }
  if (p && n != (size_t)-1) {
    A->live_bytes -= n;
    A->live_blocks--;
  }
  tab_put(q, new_n);
  A->live_bytes += new_n;
  A->live_blocks++;
  return q;
}

void sweep_install(void) { tp_set_allocator(counting_alloc, NULL); }
void sweep_uninstall(void) { tp_set_allocator(NULL, NULL); }

void sweep_begin(void) {
  sweep_step = "start";
  sweep_status = TP_OK;
  sweep_msg[0] = 0;
}

void sweep_fail_status(tp_status s) {
  sweep_status = s;
  snprintf(sweep_msg, sizeof sweep_msg, "%s", tp_last_error());
}

static int icontains(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  for (const char *p = hay; *p; p++)
    if (!strncasecmp(p, needle, n)) return 1;
  return 0;
}

__attribute__((format(printf, 2, 3))) static void sfail(const sweep_case *c, const char *fmt, ...) {
  va_list ap;
  printf("FAIL %s: ", c->name);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
}
#define SFAIL(...) sfail(c, __VA_ARGS__)

static int same(const sweep_case *c, const void *a, const void *b) {
  return c->same ? c->same(a, b, c->res_size) : memcmp(a, b, c->res_size) == 0;
}

static tp_status run_once(const sweep_case *c, void *res) {
  memset(res, 0, c->res_size);
  sweep_begin();
  return c->run(c->ud, res);
}

/* TP_SWEEP_SHARD=k/n: this process fails only the allocations N with
 * N % n == k - 1 (CMake runs a test that says TP_SWEEP_SHARDS n as n ctest
 * entries, one per k, so that a long sweep is split across the ctest jobs and
 * each part stays well inside the per-test timeout). Unset: every N. A
 * malformed value is an error, not a silent full sweep. */
static int shard_of(long *k, long *n) {
  const char *e = getenv("TP_SWEEP_SHARD");
  *k = 1, *n = 1;
  if (!e || !*e) return 1;
  char *end = NULL;
  long a = strtol(e, &end, 10);
  if (end == e || *end != '/') return 0;
  const char *q = end + 1;
  long b = strtol(q, &end, 10);
  if (end == q || *end || b < 1 || a < 1 || a > b) return 0;
  *k = a, *n = b;
  return 1;
}

int sweep_run(const sweep_case *c, void *base, long *total_out) {
  sweep_alloc_state *A = &sweep_alloc;
  long shard_k, shard_n;
  if (!shard_of(&shard_k, &shard_n)) {
    SFAIL("TP_SWEEP_SHARD=\"%s\": expected k/n with 1 <= k <= n", getenv("TP_SWEEP_SHARD"));
    return 1;
  }
  int fails = 0;
  void *r = malloc(c->res_size ? c->res_size : 1);
  if (!r) abort();
  setvbuf(stdout, NULL, _IOLBF, 0);
  sweep_install();
  /* warm-up: lazily created global state is made once here */
  tp_status s = run_once(c, base);
  if (s != TP_OK) {
    SFAIL("the scenario does not run with a working allocator: step %s: %s: %s", sweep_step,
          tp_status_name(s), sweep_msg);
    sweep_uninstall();
    free(r);
    return 1;
  }
  size_t live_t0 = tp_live_tensors(), live_s0 = tp_live_storage_bytes();
  size_t bytes0 = A->live_bytes;
  long blocks0 = A->live_blocks;
  A->calls = 0;
  A->bad_sizes = 0;
  s = run_once(c, r);
  long total = A->calls;
  if (total_out) *total_out = total;
  if (s != TP_OK) SFAIL("second run failed: %s: %s", tp_status_name(s), sweep_msg), fails++;
  else if (!same(c, r, base)) SFAIL("the second run's results differ from the first"), fails++;
  if (A->live_bytes != bytes0 || A->live_blocks != blocks0)
    SFAIL("a complete run leaks: %zu bytes in %ld blocks live, %zu in %ld before", A->live_bytes,
          A->live_blocks, bytes0, blocks0), fails++;
  if (A->bad_sizes) SFAIL("%ld frees passed a size different from the allocated one", A->bad_sizes), fails++;

  int crashed = 0, other_status = 0, no_memory_msg = 0, leaked = 0, wrong = 0, absorbed = 0;
  long swept = 0;
  for (long n = 1; n <= total + 1; n++) {
    if ((n - 1) % shard_n != shard_k - 1) continue;
    swept++;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
      SFAIL("fork failed");
      fails++;
      break;
    }
    if (pid == 0) {
      int code = 0;
      A->calls = 0;
      A->fail_at = n;
      A->failed = 0;
      A->bad_sizes = 0;
      A->unknown = 0;
      tp_clear_error();
      tp_status st = run_once(c, r);
      A->fail_at = 0;
      if (st != TP_OK) {
        if (!A->failed)
          SFAIL("N=%ld: step '%s' failed with %s (%s) but no allocation was failed", n, sweep_step,
                tp_status_name(st), sweep_msg), code |= 2;
        else if (st != TP_ERR_OUT_OF_MEMORY)
          SFAIL("N=%ld: step '%s' returned %s, expected out of memory (message: %s)", n, sweep_step,
                tp_status_name(st), sweep_msg), code |= 4;
        if (A->failed && !icontains(sweep_msg, "memory"))
          SFAIL("N=%ld: step '%s': message \"%s\" does not mention memory", n, sweep_step, sweep_msg),
              code |= 8;
      } else if (A->failed) {
        /* the failure was absorbed (a fallback): results must still be right */
        if (!same(c, r, base))
          SFAIL("N=%ld: returned TP_OK after a failed allocation but its results differ", n),
              code |= 16;
        else code |= 64;
      }
      if (tp_live_tensors() != live_t0 || tp_live_storage_bytes() != live_s0)
        SFAIL("N=%ld (failing step '%s'): leak: %zu tensors / %zu storage bytes live, baseline %zu / %zu",
              n, sweep_step, tp_live_tensors(), tp_live_storage_bytes(), live_t0, live_s0), code |= 32;
      else if (A->live_bytes != bytes0 || A->live_blocks != blocks0)
        SFAIL("N=%ld (failing step '%s'): leak: %zu bytes in %ld blocks still allocated, baseline %zu in %ld",
              n, sweep_step, A->live_bytes, A->live_blocks, bytes0, blocks0), code |= 32;
      if (A->bad_sizes) SFAIL("N=%ld: %ld frees passed a wrong size", n, A->bad_sizes), code |= 32;
      /* the library still works after the failure */
      if (run_once(c, r) != TP_OK || !same(c, r, base))
        SFAIL("N=%ld: the scenario does not pass after the failure (step '%s': %s)", n, sweep_step,
              sweep_msg), code |= 16;
      fflush(stdout);
      _exit(code);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st)) {
      SFAIL("N=%ld: CRASHED with signal %d", n, WIFSIGNALED(st) ? WTERMSIG(st) : -1);
      crashed++, fails++;
      continue;
    }
    int code = WEXITSTATUS(st);
    if (code == 1) { /* sanitizer report */
      SFAIL("N=%ld: the child exited with status 1 (a sanitizer report above)", n);
      crashed++, fails++;
      continue;
    }
    if (code & 64) absorbed++;
    if (code & ~64) fails++;
    if (code & 4) other_status++;
    if (code & 8) no_memory_msg++;
    if (code & 32) leaked++;
    if (code & 16) wrong++;
  }
  char part[160] = "";
  if (shard_n > 1)
    snprintf(part, sizeof part, " [shard %ld/%ld: the %ld with N %% %ld == %ld]", shard_k, shard_n, swept,
             shard_n, shard_k - 1);
  printf("%s: failed each of the %ld allocations in turn (and N=%ld, none)%s: %d crashed, %d other "
         "statuses, %d without a memory message, %d leaking, %d wrong results, %d absorbed\n",
         c->name, total, total + 1, part, crashed, other_status, no_memory_msg, leaked, wrong, absorbed);
  /* the default allocator again: the scenario passes */
  sweep_uninstall();
  s = run_once(c, r);
  if (s != TP_OK) SFAIL("default allocator: failed at %s: %s", sweep_step, sweep_msg), fails++;
  else if (!same(c, r, base)) SFAIL("default allocator: results differ"), fails++;
  free(r);
  return fails;
}
