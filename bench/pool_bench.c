/* pool_bench.c - the thread pool's fixed cost, the number the work-sizing
 * thresholds rest on (docs/architecture.md "Threads"): the median time of a
 * tp_parallel_for whose chunks do (almost) nothing, with 1 and 2 threads,
 * and of one that sums N floats per chunk, so the break-even work per chunk
 * can be read off. Built and run by hand:
 *
 *   cc -O2 -I src bench/pool_bench.c build/native/libtensorplay.a -lm -pthread -o /tmp/pool_bench
 *   /tmp/pool_bench [reps]
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "runtime/pool.h"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}
static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct { const float *x; double out[TP_POOL_MAX]; } sum_job;
static void sum_task(void *ctx, int slot, int64_t b, int64_t e) {
  sum_job *j = ctx;
  double s = 0;
  for (int64_t i = b; i < e; i++) s += j->x[i];
  j->out[slot] += s;
}
static void nop_task(void *ctx, int slot, int64_t b, int64_t e) { (void)ctx, (void)slot, (void)b, (void)e; }

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 2001;
  double *t = malloc(sizeof(double) * (size_t)reps);
  float *x = malloc(sizeof(float) * (1 << 22));
  for (int i = 0; i < 1 << 22; i++) x[i] = (float)(i % 7);
  printf("pool_bench: %d reps, medians (min) in us\n", reps);
  for (int threads = 1; threads <= 2; threads++) {
    tp_pool_set_threads(threads);
    for (int r = 0; r < reps; r++) {
      double t0 = now_us();
      tp_parallel_for(threads * 4, 1, nop_task, NULL);
      t[r] = now_us() - t0;
    }
    qsort(t, (size_t)reps, sizeof *t, cmp);
    printf("  %d thread%s: empty parallel-for %.2f (%.2f)\n", threads, threads > 1 ? "s" : " ",
           t[reps / 2], t[0]);
    for (int64_t n = 1 << 12; n <= 1 << 22; n <<= 2) {
      sum_job j = {x, {0}};
      for (int r = 0; r < reps / 4 + 1; r++) {
        double t0 = now_us();
        tp_parallel_for(n, 1024, sum_task, &j);
        t[r] = now_us() - t0;
      }
      qsort(t, (size_t)(reps / 4 + 1), sizeof *t, cmp);
      printf("  %d thread%s: sum of %8lld floats %9.2f (%.2f)\n", threads, threads > 1 ? "s" : " ",
             (long long)n, t[(reps / 4 + 1) / 2], t[0]);
    }
  }
  tp_pool_shutdown();
  free(t);
  free(x);
  return 0;
}
