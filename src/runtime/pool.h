/* pool.h - the runtime's thread pool and its parallel-for.
 *
 *   tp_parallel_for(n, grain, task, ctx);   task(ctx, slot, begin, end)
 *
 * cuts [0, n) into contiguous chunks of at least `grain` items (at most
 * TP_POOL_SPLIT per thread), which the calling thread and the pool's
 * workers claim one at a time until none is left, and returns when all are
 * done. Callers write tasks whose per-item results do not depend on where
 * the chunks split nor on which thread runs them (no reduction across
 * items), so outputs are the same bits for any thread count. `slot` (<
 * the slots the call was given) names the thread running the chunk: index
 * per-thread scratch with it.
 *
 * Platforms (chosen at build time, pool.c): pthreads natively; a
 * single-thread fallback on the Wasm builds (which then run every chunk on
 * the caller and report 1 thread). A Wasm shared-memory backend plugs in as
 * a third implementation of the three plat_* functions of pool.c.
 *
 * Threads: the pool is started lazily by the first parallel-for that wants
 * more than one thread, stopped (workers joined) by tp_pool_shutdown, at
 * exit, and when the count is set to 1 or changed. A parallel-for issued
 * while another one runs (another user thread, or nested inside a task)
 * runs its chunks serially on its caller (slot 0). */
#ifndef TP_RUNTIME_POOL_H
#define TP_RUNTIME_POOL_H
#include "../core/internal.h"

#define TP_POOL_MAX 256 /* the largest thread count accepted */
#define TP_POOL_SPLIT 4 /* chunks per thread (at most) */

typedef void (*tp_pool_task)(void *ctx, int slot, int64_t begin, int64_t end);

/* The thread count parallel work uses: the one set (tp_pool_set_threads),
 * else TP_NUM_THREADS, else the number of cores (1 on a build without
 * threads). An invalid TP_NUM_THREADS is an error naming the value. */
tp_status tp_pool_threads(int *out);
/* n in 1..TP_POOL_MAX, or 0 for the default (TP_NUM_THREADS, else cores). */
tp_status tp_pool_set_threads(int n);
/* The count tp_pool_threads would give, ignoring an invalid TP_NUM_THREADS
 * (then cores): for reports that must not fail. */
int tp_pool_threads_or_default(void);
/* 1 when this build can run threads (pthreads), 0 for the fallback. */
int tp_pool_has_threads(void);
/* One line for explain(): "pthreads, 2 threads (TP_NUM_THREADS)" etc. */
void tp_pool_describe(char *buf, size_t n);
/* Stops the workers (joins them); the next parallel-for starts them again. */
void tp_pool_shutdown(void);

/* Wasm threads build: the loop of worker `slot` (1 .. TP_POOL_MAX - 1),
 * which the JS loader enters per worker instance (tpw_pool_worker) after
 * giving it its own stack and TLS; it returns 1 when the worker must
 * install generated modules (below), 2 when the pool is off (a worker
 * trapped). -1 at once for a bad slot, and on every other build (no
 * workers to run). */
int tp_pool_worker_loop(int slot, uint32_t gen);
/* Wasm threads build, generated modules: the host installed one more in the
 * main instance's table and posted it to every worker (returns the new
 * count); a worker whose installed count (gen above) is behind leaves its
 * loop with 1 to install the modules posted to it, then enters again.
 * tp_pool_jit_gen: the count. 0 on other builds. */
uint32_t tp_pool_jit_published(void);
uint32_t tp_pool_jit_gen(void);
/* Wasm threads build: the JS of worker `slot` caught a trap out of its
 * loop. Its chunk counts as done, the pool runs on the caller from then on
 * (tp_pool_broken), and tp_pool_take_failure returns the error (once) that
 * fails the call whose parallel work the worker was running (TP_OK
 * otherwise, and always on other builds). */
void tp_pool_worker_trapped(int slot);
tp_status tp_pool_take_failure(void);
int tp_pool_broken(void);
/* Wasm threads build: chunks the loader's workers have run so far (0 on
 * other builds): says that work reached them (tests, benchmarks). */
int64_t tp_pool_worker_chunks(void);

void tp_parallel_for(int64_t n, int64_t grain, tp_pool_task task, void *ctx);

/* Threads tp_parallel_for(n, grain, ...) would use now (0 when n <= 0, 1:
 * it runs on the caller): size per-slot scratch with it, then call
 * tp_parallel_run with it. */
int tp_parallel_slots(int64_t n, int64_t grain);
/* tp_parallel_for on at most nslots threads (slots 0 .. nslots-1). */
void tp_parallel_run(int64_t n, int64_t grain, int nslots, tp_pool_task task, void *ctx);

#endif
