/* pool.c - the thread pool (pool.h): thread count (config, TP_NUM_THREADS,
 * cores), and a parallel-for with static chunking over a platform layer:
 *
 *   plat_start(nworkers)   start workers 1..nworkers (returns how many ran)
 *   plat_run(job)          hand chunks to the workers, run chunk 0's share,
 *                          wait for the rest
 *   plat_stop()            join the workers
 *
 * TP_POOL_PTHREADS (native): pthreads, one mutex and two condition
 * variables; workers sleep between jobs. Otherwise (the Wasm builds today):
 * no workers, every chunk runs on the caller. A Wasm shared-memory backend
 * (workers over one memory, memory.atomic.wait32) is a third plat_*. */
#define _GNU_SOURCE 1
#include "pool.h"
#include "dispatch.h"
#include "../core/lock.h"
#include <stdio.h>
#include <stdlib.h>

#if defined(TP_WASM_THREADS)
#define TP_POOL_WASM 1 /* workers over a shared memory, started by the JS loader */
#elif !defined(__wasm__)
#define TP_POOL_PTHREADS 1
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#endif

/* ---- the thread count ---- */
static tp_spinlock count_lock = TP_SPINLOCK_INIT;
static int set_count;    /* tp_pool_set_threads; 0: the default */
static int env_read, env_count; /* env_count 0: unset, -1: invalid */
static char env_err[200];

#ifdef TP_POOL_WASM
static int wasm_workers(void);
#endif

static int cores(void) {
#ifdef TP_POOL_PTHREADS
  cpu_set_t cs;
  int n = 0;
  if (!sched_getaffinity(0, sizeof cs, &cs)) n = CPU_COUNT(&cs);
  if (n <= 0) n = (int)sysconf(_SC_NPROCESSORS_ONLN);
  return n < 1 ? 1 : n > TP_POOL_MAX ? TP_POOL_MAX : n;
#elif defined(TP_POOL_WASM)
  return 1 + wasm_workers(); /* the caller and the workers the loader started */
#else
  return 1;
#endif
}

/* Caller holds count_lock. TP_NUM_THREADS: a whole number 1..TP_POOL_MAX. */
static void read_env(void) {
  if (env_read) return;
  env_read = 1;
  const char *e = getenv("TP_NUM_THREADS");
  if (!e) return;
  const char *p = e;
  long long v = 0;
  int digits = 0;
  while (*p == ' ') p++;
  if (*p == '+') p++;
  for (; *p >= '0' && *p <= '9'; p++, digits++)
    if (v <= 1000000) v = v * 10 + (*p - '0');
  while (*p == ' ') p++;
  if (!digits || *p) {
    snprintf(env_err, sizeof env_err,
             "TP_NUM_THREADS='%.40s' is not a thread count: give a whole number from 1 to %d", e,
             TP_POOL_MAX);
  } else if (v < 1) {
    snprintf(env_err, sizeof env_err,
             "TP_NUM_THREADS=%.40s: the thread count must be at least 1 (1 runs on the calling "
             "thread only)", e);
  } else if (v > TP_POOL_MAX) {
    snprintf(env_err, sizeof env_err,
             "TP_NUM_THREADS=%.40s is more than %d threads (this machine has %d cores)", e,
             TP_POOL_MAX, cores());
  } else {
    env_count = (int)v;
    return;
  }
  env_count = -1;
}

tp_status tp_pool_threads(int *out) {
#if !defined(TP_POOL_PTHREADS) && !defined(TP_POOL_WASM)
  *out = 1; /* single-threaded: TP_NUM_THREADS is ignored (explain() says so) */
  return TP_OK;
#endif
  tp_spin_lock(&count_lock);
  read_env();
  int n = set_count ? set_count : env_count > 0 ? env_count : env_count < 0 ? -1 : cores();
  tp_spin_unlock(&count_lock);
  if (n < 0) {
    *out = 1;
    return tp_fail(TP_ERR_VALUE, "%s", env_err);
  }
#ifdef TP_POOL_WASM
  if (n > cores()) n = cores(); /* no more threads than workers running (explain says so) */
#endif
  *out = n;
  return TP_OK;
}

int tp_pool_threads_or_default(void) {
  int n;
  tp_spin_lock(&count_lock);
  read_env();
  n = set_count ? set_count : env_count > 0 ? env_count : cores();
  tp_spin_unlock(&count_lock);
#if defined(TP_POOL_WASM)
  if (n > cores()) n = cores();
#elif !defined(TP_POOL_PTHREADS)
  n = 1;
#endif
  return n;
}

int tp_pool_has_threads(void) {
#ifdef TP_POOL_PTHREADS
  return 1;
#elif defined(TP_POOL_WASM)
  return wasm_workers() > 0;
#else
  return 0;
#endif
}

void tp_pool_describe(char *buf, size_t n) {
  tp_spin_lock(&count_lock);
  read_env();
  int set = set_count, env = env_count;
  tp_spin_unlock(&count_lock);
  const char *src = set ? "config.threads" : env > 0 ? "TP_NUM_THREADS" : "cores";
#ifdef TP_POOL_PTHREADS
  if (!set && env < 0)
    snprintf(buf, n, "pthreads: invalid TP_NUM_THREADS (%s)", env_err);
  else
    snprintf(buf, n, "pthreads: %d thread%s (%s)", tp_pool_threads_or_default(),
             tp_pool_threads_or_default() == 1 ? "" : "s", src);
#elif defined(TP_POOL_WASM)
  int want = set ? set : env > 0 ? env : 0, have = cores();
  if (tp_pool_broken())
    snprintf(buf, n, "Wasm threads: 1 thread (a pool worker trapped; every call runs on the calling thread)");
  else if (have == 1)
    snprintf(buf, n, "Wasm threads build: 1 thread (no workers running)");
  else if (want > have)
    snprintf(buf, n, "Wasm threads: %d threads (%s = %d, but %d worker%s running)", have, src, want,
             have - 1, have == 2 ? "" : "s");
  else
    snprintf(buf, n, "Wasm threads: %d thread%s (%s; %d worker%s running)", tp_pool_threads_or_default(),
             tp_pool_threads_or_default() == 1 ? "" : "s", want ? src : "workers", have - 1,
             have == 2 ? "" : "s");
#else
  if (set > 1 || env > 1)
    snprintf(buf, n, "single-threaded Wasm build: 1 thread (%s = %d ignored)", src,
             set ? set : env);
  else
    snprintf(buf, n, "single-threaded Wasm build: 1 thread");
#endif
}

/* ---- platform: pthreads or the single-thread fallback ---- */
/* A job: [0, n) cut into nchunks static chunks (chunk c is [c n / nchunks,
 * (c + 1) n / nchunks)), claimed one at a time by threads 0..nslots-1 (0: the
 * caller). The claim counter carries the job's generation, so a worker that
 * wakes late, after its job is over, claims nothing of the next one; the
 * caller waits for finished chunks, not for workers, so a worker the OS does
 * not schedule leaves its share to the others and delays no one. */
typedef struct job {
  tp_pool_task task;
  void *ctx;
  int64_t n;
  int nchunks, nslots;
  uint64_t *claim; /* (generation << 32) | the next unclaimed chunk */
  uint32_t gen;
  int *done;       /* chunks finished (NULL: the caller runs them all) */
} job;

static void run_chunk(const job *j, int slot, int c) {
  int64_t b = (int64_t)((__int128)j->n * c / j->nchunks);
  int64_t e = (int64_t)((__int128)j->n * (c + 1) / j->nchunks);
  if (b < e) j->task(j->ctx, slot, b, e);
}

static int claim(const job *j) {
  uint64_t v = __atomic_load_n(j->claim, __ATOMIC_ACQUIRE);
  for (;;) {
    if ((uint32_t)(v >> 32) != j->gen || (uint32_t)v >= (uint32_t)j->nchunks) return -1;
    if (__atomic_compare_exchange_n(j->claim, &v, v + 1, 1, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      return (int)(uint32_t)v;
  }
}

/* Thread `slot` takes chunks until none is left; 1 when it finished the
 * job's last chunk. */
static int run_share(const job *j, int slot) {
  int last = 0;
  if (slot >= j->nslots) return 0;
  for (int c; (c = claim(j)) >= 0;) {
    run_chunk(j, slot, c);
    if (j->done && __atomic_add_fetch(j->done, 1, __ATOMIC_SEQ_CST) == j->nchunks) last = 1;
  }
  return last;
}

static void run_alone(job *j) {
  uint64_t next = 0;
  j->claim = &next, j->gen = 0, j->done = NULL;
  run_share(j, 0);
}

#ifdef TP_POOL_PTHREADS
/* Hand-off without a system call when both sides are awake: the caller
 * publishes a job by bumping P.seq (a seqlock over the job's fields: odd
 * while it writes them), and a worker that finished its last job less than
 * TP_POOL_SPIN_US ago is still polling P.seq and starts at once; only a
 * worker idle for longer sleeps on the condition variable (P.sleepers says
 * so, and the caller then broadcasts). The caller likewise polls for the
 * last chunks before sleeping (P.waiting). Waking a sleeping thread costs
 * 10-50 us on a VM (an IPI to a halted vCPU), about the length of a whole
 * mid-size kernel: with the poll, a model's back-to-back kernels pay it
 * once. Each flag and its counter follow the store-then-load pattern with
 * sequentially consistent atomics, so one of the two sides always sees the
 * other (no lost wake-up). */
#define TP_POOL_SPIN_US 200

static struct {
  pthread_mutex_t mu;
  pthread_cond_t wake, finished;
  pthread_t th[TP_POOL_MAX];
  int nworkers, stop;      /* stop: atomic */
  uint64_t seq, start_seq; /* seq: atomic, 2 per job (odd: being written) */
  int sleepers, waiting;   /* atomic: workers asleep on wake; caller asleep on finished */
  uint64_t claim;          /* the job's claim counter (job.claim) */
  int done;                /* its finished chunks (job.done) */
  /* the job's fields, written by the caller with relaxed atomics under the seqlock */
  uintptr_t task, ctx;
  int64_t n;
  int nchunks, nslots;
} P = {.mu = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER,
       .finished = PTHREAD_COND_INITIALIZER};
static pthread_mutex_t submit = PTHREAD_MUTEX_INITIALIZER; /* one parallel-for at a time */
static _Thread_local int in_task; /* this thread runs a chunk: nested calls run serially */

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static uint64_t now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define ST(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

/* Polls until P.seq differs from `seen` or the pool stops, for up to
 * TP_POOL_SPIN_US, then sleeps. Returns the new P.seq (0 when stopping). */
static uint64_t await_job(uint64_t seen) {
  uint64_t s, t0 = 0;
  for (unsigned i = 0;; i++) {
    if (__atomic_load_n(&P.stop, __ATOMIC_ACQUIRE)) return 0;
    if ((s = __atomic_load_n(&P.seq, __ATOMIC_ACQUIRE)) != seen) return s;
    cpu_relax();
    if ((i & 31) == 31) {
      sched_yield(); /* a thread sharing this core (an oversubscribed machine) runs */
      uint64_t t = now_us();
      if (!t0) t0 = t;
      else if (t - t0 > TP_POOL_SPIN_US) break;
    }
  }
  pthread_mutex_lock(&P.mu);
  __atomic_add_fetch(&P.sleepers, 1, __ATOMIC_SEQ_CST);
  while ((s = __atomic_load_n(&P.seq, __ATOMIC_SEQ_CST)) == seen &&
         !__atomic_load_n(&P.stop, __ATOMIC_SEQ_CST))
    pthread_cond_wait(&P.wake, &P.mu);
  __atomic_sub_fetch(&P.sleepers, 1, __ATOMIC_SEQ_CST);
  pthread_mutex_unlock(&P.mu);
  return __atomic_load_n(&P.stop, __ATOMIC_ACQUIRE) ? 0 : s;
}

static void *worker(void *arg) {
  int w = (int)(intptr_t)arg;
  in_task = 1;
  uint64_t seen = P.start_seq; /* not P.seq: a job may already be posted */
  for (uint64_t s; (s = await_job(seen));) {
    if (s & 1) { /* the caller is writing the job */
      cpu_relax();
      continue;
    }
    job j = {(tp_pool_task)LD(P.task), (void *)LD(P.ctx), LD(P.n), LD(P.nchunks), LD(P.nslots),
             &P.claim, (uint32_t)(s >> 1), &P.done};
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (LD(P.seq) != s) continue; /* a newer job overwrote it: read that one */
    seen = s;
    if (run_share(&j, w) && __atomic_load_n(&P.waiting, __ATOMIC_SEQ_CST)) {
      pthread_mutex_lock(&P.mu);
      pthread_cond_signal(&P.finished);
      pthread_mutex_unlock(&P.mu);
    }
  }
  tp_kern_thread_release(); /* the GEMM pack buffers of this thread */
  return NULL;
}

/* Caller holds submit. */
static void plat_stop(void) {
  pthread_mutex_lock(&P.mu);
  __atomic_store_n(&P.stop, 1, __ATOMIC_SEQ_CST);
  pthread_cond_broadcast(&P.wake);
  int n = P.nworkers;
  pthread_mutex_unlock(&P.mu);
  for (int i = 0; i < n; i++) pthread_join(P.th[i], NULL);
  P.nworkers = 0;
  __atomic_store_n(&P.stop, 0, __ATOMIC_SEQ_CST);
}

static void at_exit(void) { tp_pool_shutdown(); }

/* A forked child has none of the parent's workers: it starts its own. */
static void at_fork_child(void) {
  pthread_mutex_init(&P.mu, NULL);
  pthread_cond_init(&P.wake, NULL);
  pthread_cond_init(&P.finished, NULL);
  pthread_mutex_init(&submit, NULL);
  P.nworkers = 0, P.stop = 0, P.sleepers = 0, P.waiting = 0;
  in_task = 0;
}

/* Caller holds submit: nworkers workers (fewer if the system refuses). */
static void plat_start(int nworkers) {
  static int registered;
  if (P.nworkers == nworkers) return;
  if (P.nworkers) plat_stop();
  if (!registered) registered = !atexit(at_exit) && !pthread_atfork(NULL, NULL, at_fork_child);
  P.start_seq = __atomic_load_n(&P.seq, __ATOMIC_RELAXED);
  int n = 0;
  for (; n < nworkers; n++)
    if (pthread_create(&P.th[n], NULL, worker, (void *)(intptr_t)(n + 1))) break;
  P.nworkers = n;
}

static void plat_run(job *j, int nthreads) {
  if (j->nchunks <= 1 || j->nslots <= 1 || nthreads <= 1 || in_task || tp_pool_broken() ||
      pthread_mutex_trylock(&submit)) {
    run_alone(j);
    return;
  }
  plat_start(nthreads - 1);
  /* publish: seq odd, the fields, the counters, seq even (the job's gen) */
  uint64_t s = P.seq; /* only the holder of submit writes it */
  ST(P.seq, s + 1);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  ST(P.task, (uintptr_t)j->task), ST(P.ctx, (uintptr_t)j->ctx), ST(P.n, j->n);
  ST(P.nchunks, j->nchunks), ST(P.nslots, j->nslots);
  j->gen = (uint32_t)((s + 2) >> 1), j->claim = &P.claim, j->done = &P.done;
  __atomic_store_n(&P.claim, (uint64_t)j->gen << 32, __ATOMIC_RELAXED);
  __atomic_store_n(&P.done, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&P.seq, s + 2, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&P.sleepers, __ATOMIC_SEQ_CST)) {
    pthread_mutex_lock(&P.mu);
    pthread_cond_broadcast(&P.wake);
    pthread_mutex_unlock(&P.mu);
  }
  in_task = 1;
  run_share(j, 0);
  in_task = 0;
  uint64_t t0 = 0;
  for (unsigned i = 0; __atomic_load_n(&P.done, __ATOMIC_ACQUIRE) < j->nchunks; i++) {
    cpu_relax();
    if ((i & 31) != 31) continue;
    sched_yield();
    uint64_t t = now_us();
    if (!t0) {
      t0 = t;
    } else if (t - t0 > TP_POOL_SPIN_US) {
      pthread_mutex_lock(&P.mu);
      __atomic_store_n(&P.waiting, 1, __ATOMIC_SEQ_CST);
      while (__atomic_load_n(&P.done, __ATOMIC_SEQ_CST) < j->nchunks)
        pthread_cond_wait(&P.finished, &P.mu);
      __atomic_store_n(&P.waiting, 0, __ATOMIC_SEQ_CST);
      pthread_mutex_unlock(&P.mu);
      break;
    }
  }
  pthread_mutex_unlock(&submit);
}

void tp_pool_shutdown(void) {
  pthread_mutex_lock(&submit);
  if (P.nworkers) plat_stop();
  pthread_mutex_unlock(&submit);
}
#elif defined(TP_POOL_WASM)
/* Wasm threads: the JS loader starts the workers (Node worker_threads or
 * Web Workers), each instantiating this module over the shared memory with
 * its own stack and TLS, and calls tpw_pool_worker(slot) (tp_pool_worker_loop), which never
 * returns. The hand-off is the pthreads one (a seqlock'ed job, polling for
 * TP_POOL_SPIN_US), with memory.atomic.wait32 / notify in place of the
 * condition variables. Every wait is one the other side notifies: a
 * memory.atomic.wait32 with a timeout is no sched_yield (V8 sleeps at least
 * the kernel's timer slack, 50 us, then some: a "1 us" wait took 60-90 us
 * here), so a worker that napped that way between polls picked up a job
 * tens of microseconds late and a caller that napped waiting for the last
 * chunk returned as late (W4's 128x256x256 GEMMs gained 1.4x, not 2x). The
 * polls are therefore plain loads, until TP_POOL_SPIN_US or until the
 * thread finds it was preempted; a sleeping worker (W.sleepers) is
 * notified on W.seq, a sleeping caller (W.waiting) on W.done. On a page's
 * main thread, which may not block (memory.atomic.wait32 traps there), the
 * caller only polls. */
#define TP_POOL_SPIN_US 200
/* Two time checks (64 polls apart, well under a microsecond) this far apart:
 * the thread lost its core to another process (a busy machine), and polling
 * on would take time slices from the threads doing the work (under the
 * kernel's per-session group scheduling, from this process's own share):
 * sleep until notified instead. Wasm has no sched_yield. */
#define TP_POOL_PREEMPTED_US 50
#include <emscripten/emscripten.h>
#include <emscripten/threading.h>

static struct {
  uint32_t seq;  /* atomic, 2 per job (odd: being written); workers wait32 on it */
  int workers;   /* atomic: workers that entered tp_pool_worker_loop */
  int64_t worker_chunks; /* atomic: chunks the workers ran (tp_pool_worker_chunks) */
  int sleepers;  /* atomic: workers in wait32 */
  int waiting;   /* atomic: the caller sleeps in wait32 on W.done */
  uint64_t claim;
  int done;
  uintptr_t task, ctx;
  int64_t n;
  int nchunks, nslots;
  uint32_t jit_gen; /* atomic: generated modules installed on the main thread (tp_pool_jit_published) */
  int running[TP_POOL_MAX]; /* atomic, per worker slot: 1 while it runs a chunk */
  int trapped;      /* atomic: the slot of a worker that trapped in a chunk (0: none); taken by tp_pool_take_failure */
  int broken;       /* atomic: a worker trapped: every parallel-for runs on the caller from then on */
} W;
static int submit_held; /* atomic: one parallel-for at a time */
static _Thread_local int in_task;

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define ST(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

static int wasm_workers(void) { return __atomic_load_n(&W.workers, __ATOMIC_ACQUIRE); }

/* A chunk finished: wake the caller if it sleeps on W.done (after the
 * increment, sequentially consistent: the caller sets W.waiting before it
 * reads W.done, so one of the two sees the other). */
static void chunk_done(int *done) {
  __atomic_add_fetch(done, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&W.waiting, __ATOMIC_SEQ_CST))
    __builtin_wasm_memory_atomic_notify(done, 1);
}

/* Waits until a job is published (W.seq moves from seen) or the main
 * thread installed another generated module (W.jit_gen moves from gen):
 * polls for TP_POOL_SPIN_US, then sleeps until notified. */
static uint32_t await_job(uint32_t seen, uint32_t gen) {
  uint32_t s;
  double t0 = emscripten_get_now(), last = t0;
  for (unsigned i = 0;; i++) {
    if ((s = __atomic_load_n(&W.seq, __ATOMIC_ACQUIRE)) != seen || LD(W.jit_gen) != gen) return s;
    if ((i & 63) != 63) continue;
    double t = emscripten_get_now();
    if (t - t0 > TP_POOL_SPIN_US / 1000.0 || t - last > TP_POOL_PREEMPTED_US / 1000.0) break;
    last = t;
  }
  __atomic_add_fetch(&W.sleepers, 1, __ATOMIC_SEQ_CST);
  while ((s = __atomic_load_n(&W.seq, __ATOMIC_SEQ_CST)) == seen &&
         __atomic_load_n(&W.jit_gen, __ATOMIC_SEQ_CST) == gen)
    __builtin_wasm_memory_atomic_wait32((int *)&W.seq, (int)seen, -1);
  __atomic_sub_fetch(&W.sleepers, 1, __ATOMIC_SEQ_CST);
  return s;
}

/* Generated modules: a chunk may call a function the main thread installed
 * in its table (a generated GEMM's panels, plan_jit.c), which exists in a
 * worker's table only once the worker installed it too. The host bumps
 * W.jit_gen after posting each module to the workers; a worker whose
 * installed count is behind claims no chunk: it returns 1 from its loop to
 * its JS, which installs the modules posted to it and enters the loop again
 * with the new count. The job's publication (seq, sequentially consistent)
 * comes after the bump, so a worker that reads the job sees the bump. */
int tp_pool_worker_loop(int slot, uint32_t gen) {
  if (slot < 1 || slot >= TP_POOL_MAX) return -1;
  if (__atomic_load_n(&W.broken, __ATOMIC_ACQUIRE)) return 2; /* a worker trapped: the pool is off */
  in_task = 1;
  uint32_t seen = __atomic_load_n(&W.seq, __ATOMIC_ACQUIRE) & ~1u;
  __atomic_add_fetch(&W.workers, 1, __ATOMIC_SEQ_CST);
  for (;;) {
    uint32_t s = await_job(seen, gen);
    if (__atomic_load_n(&W.jit_gen, __ATOMIC_SEQ_CST) != gen) break;
    if (s == seen || (s & 1)) continue; /* the caller is writing the job */
    job j = {(tp_pool_task)LD(W.task), (void *)LD(W.ctx), LD(W.n), LD(W.nchunks), LD(W.nslots),
             &W.claim, s >> 1, &W.done};
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (LD(W.seq) != s) continue;
    if (__atomic_load_n(&W.jit_gen, __ATOMIC_SEQ_CST) != gen) break; /* its table is behind */
    seen = s;
    if (slot >= j.nslots) continue;
    for (int c; (c = claim(&j)) >= 0;) { /* run_share, counting the chunks */
      __atomic_store_n(&W.running[slot], 1, __ATOMIC_SEQ_CST);
      run_chunk(&j, slot, c);
      __atomic_store_n(&W.running[slot], 0, __ATOMIC_SEQ_CST);
      __atomic_add_fetch(&W.worker_chunks, 1, __ATOMIC_RELAXED);
      chunk_done(j.done);
    }
  }
  __atomic_sub_fetch(&W.workers, 1, __ATOMIC_SEQ_CST);
  in_task = 0;
  return 1;
}

uint32_t tp_pool_jit_published(void) {
  uint32_t g = __atomic_add_fetch(&W.jit_gen, 1, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&W.sleepers, __ATOMIC_SEQ_CST))
    __builtin_wasm_memory_atomic_notify((int *)&W.seq, (unsigned)-1);
  return g;
}

uint32_t tp_pool_jit_gen(void) { return __atomic_load_n(&W.jit_gen, __ATOMIC_SEQ_CST); }

/* The worker's JS caught a trap out of its loop: the chunk it ran counts as
 * done (so its caller stops waiting) and fails the call
 * (tp_pool_take_failure); the pool runs every parallel-for on the caller
 * from now on. */
void tp_pool_worker_trapped(int slot) {
  if (slot < 1 || slot >= TP_POOL_MAX) return;
  __atomic_store_n(&W.broken, 1, __ATOMIC_SEQ_CST);
  __atomic_store_n(&W.trapped, slot, __ATOMIC_SEQ_CST);
  __atomic_sub_fetch(&W.workers, 1, __ATOMIC_SEQ_CST);
  if (__atomic_exchange_n(&W.running[slot], 0, __ATOMIC_SEQ_CST)) chunk_done(&W.done);
}

tp_status tp_pool_take_failure(void) {
  int slot = __atomic_exchange_n(&W.trapped, 0, __ATOMIC_SEQ_CST);
  if (!slot) return TP_OK;
  return tp_fail(TP_ERR_RUNTIME,
                 "Wasm threads: pool worker %d trapped while running a chunk of this call's parallel work "
                 "(explain().threads names its error), so the call failed; the runtime goes on with 1 thread",
                 slot);
}

int tp_pool_broken(void) { return __atomic_load_n(&W.broken, __ATOMIC_ACQUIRE); }

static void plat_run(job *j, int nthreads) {
  if (j->nchunks <= 1 || j->nslots <= 1 || nthreads <= 1 || in_task || tp_pool_broken() ||
      __atomic_exchange_n(&submit_held, 1, __ATOMIC_ACQUIRE)) {
    run_alone(j);
    return;
  }
  uint32_t s = W.seq;
  ST(W.seq, s + 1);
  __atomic_thread_fence(__ATOMIC_RELEASE);
  ST(W.task, (uintptr_t)j->task), ST(W.ctx, (uintptr_t)j->ctx), ST(W.n, j->n);
  ST(W.nchunks, j->nchunks), ST(W.nslots, j->nslots);
  j->gen = (s + 2) >> 1, j->claim = &W.claim, j->done = &W.done;
  __atomic_store_n(&W.claim, (uint64_t)j->gen << 32, __ATOMIC_RELAXED);
  __atomic_store_n(&W.done, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&W.seq, s + 2, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&W.sleepers, __ATOMIC_SEQ_CST))
    __builtin_wasm_memory_atomic_notify((int *)&W.seq, (unsigned)-1);
  in_task = 1;
  run_share(j, 0);
  in_task = 0;
  /* the last chunks: poll for TP_POOL_SPIN_US, then sleep until the
   * worker that finishes one notifies (never on a page's main thread) */
  double t0 = 0, last = 0;
  int may_sleep = !emscripten_is_main_browser_thread();
  for (unsigned i = 0; __atomic_load_n(&W.done, __ATOMIC_ACQUIRE) < j->nchunks; i++) {
    if ((i & 63) != 63 || !may_sleep) continue;
    double t = emscripten_get_now();
    if (!t0) {
      t0 = last = t;
    } else if (t - t0 > TP_POOL_SPIN_US / 1000.0 || t - last > TP_POOL_PREEMPTED_US / 1000.0) {
      __atomic_store_n(&W.waiting, 1, __ATOMIC_SEQ_CST);
      for (int d; (d = __atomic_load_n(&W.done, __ATOMIC_SEQ_CST)) < j->nchunks;)
        __builtin_wasm_memory_atomic_wait32(&W.done, d, 1000000); /* (1 ms: a bound, not the wake-up) */
      __atomic_store_n(&W.waiting, 0, __ATOMIC_SEQ_CST);
      break;
    } else {
      last = t;
    }
  }
  __atomic_store_n(&submit_held, 0, __ATOMIC_RELEASE);
}
int64_t tp_pool_worker_chunks(void) { return __atomic_load_n(&W.worker_chunks, __ATOMIC_RELAXED); }
/* The workers belong to the loader (they live as long as the page or the
 * process): nothing to stop. */
void tp_pool_shutdown(void) {}
#else
static void plat_run(job *j, int nthreads) {
  (void)nthreads;
  run_alone(j);
}
void tp_pool_shutdown(void) {}
#endif

#ifndef TP_POOL_WASM
int tp_pool_worker_loop(int slot, uint32_t gen) { /* no workers for the loader to run on this build */
  (void)slot, (void)gen;
  return -1;
}
int64_t tp_pool_worker_chunks(void) { return 0; }
uint32_t tp_pool_jit_published(void) { return 0; }
uint32_t tp_pool_jit_gen(void) { return 0; }
void tp_pool_worker_trapped(int slot) { (void)slot; }
tp_status tp_pool_take_failure(void) { return TP_OK; }
int tp_pool_broken(void) { return 0; }
#endif

void tp_threads_shutdown(void) { tp_pool_shutdown(); }

tp_status tp_pool_set_threads(int n) {
  if (n < 0 || n > TP_POOL_MAX)
    return tp_fail(TP_ERR_VALUE, "threads must be from 1 to %d (0 or None: the default), got %d",
                   TP_POOL_MAX, n);
  tp_spin_lock(&count_lock);
  set_count = n;
  tp_spin_unlock(&count_lock);
  if (tp_pool_threads_or_default() == 1) tp_pool_shutdown(); /* no idle workers left behind */
  return TP_OK;
}

int tp_parallel_slots(int64_t n, int64_t grain) {
  if (n <= 0) return 0;
  int t = tp_pool_threads_or_default();
  if (grain < 1) grain = 1;
  int64_t c = (n + grain - 1) / grain;
  return c < t ? (int)c : t;
}

void tp_parallel_run(int64_t n, int64_t grain, int nslots, tp_pool_task task, void *ctx) {
  if (n <= 0 || nslots < 1) return;
  if (nslots > TP_POOL_MAX) nslots = TP_POOL_MAX;
  if (grain < 1) grain = 1;
  /* TP_POOL_SPLIT chunks per thread (each of at least grain items): a
   * thread that is late or descheduled leaves chunks to the others */
  int64_t most = (n + grain - 1) / grain, want = (int64_t)nslots * TP_POOL_SPLIT;
  int nchunks = (int)(most < want ? most : want);
  /* a multiple of the threads, so that each gets the same share: 3 chunks
   * on 2 threads left one thread the third alone (W4's 128-row GEMMs,
   * 6 row blocks in chunks of 2, ran 1.5x faster instead of 1.8x) */
  if (nchunks > nslots) nchunks -= nchunks % nslots;
  job j = {task, ctx, n, nchunks < 1 ? 1 : nchunks, nslots, NULL, 0, NULL};
  plat_run(&j, tp_pool_threads_or_default());
}

void tp_parallel_for(int64_t n, int64_t grain, tp_pool_task task, void *ctx) {
  tp_parallel_run(n, grain, tp_parallel_slots(n, grain), task, ctx);
}
