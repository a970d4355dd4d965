/* bench_util.h - shared helpers for native benchmark programs (header-only).
 *
 * The measuring rule every workload follows (docs/benchmarks.md):
 *   - each implementation is warmed up, then an inner repeat count is chosen
 *     so one sample takes about BENCH_SAMPLE_MS (the same count for every
 *     implementation of a case, from the slowest of them);
 *   - samples are interleaved: in round r the implementations run in the
 *     order rotated by r, so drift (frequency, a neighbour's build) hits all
 *     of them alike;
 *   - each implementation gets `reps` samples (>= 15); we report the min and
 *     the median time per call and the ratio of medians.
 *
 * Output: one JSON object per case on stdout through bench_json_case(); the
 * shared runner (bench/run.sh + bench/lib/report.mjs) collects and renders. */
#ifndef TP_BENCH_UTIL_H
#define TP_BENCH_UTIL_H
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifndef BENCH_MAX_IMPL
#define BENCH_MAX_IMPL 8
#endif
#ifndef BENCH_MAX_REPS
#define BENCH_MAX_REPS 201
#endif

typedef void (*bench_fn)(void *ctx);

typedef struct bench_impl {
  const char *name;
  bench_fn fn;
  void *ctx;
  double samples_ms[BENCH_MAX_REPS]; /* per-call time of each sample */
  double min_ms, median_ms;
} bench_impl;

static inline double bench_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int bench_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static inline double bench_median(const double *v, int n, double *min_out) {
  double *s = malloc(sizeof(double) * (size_t)n);
  memcpy(s, v, sizeof(double) * (size_t)n);
  qsort(s, (size_t)n, sizeof(double), bench_cmp_double);
  double m = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
  if (min_out) *min_out = s[0];
  free(s);
  return m;
}

/* Warm up, calibrate, then `reps` interleaved samples of every impl. Returns
 * the inner repeat count used. */
static inline int bench_run_interleaved(bench_impl *im, int n, int reps, double sample_ms) {
  if (reps > BENCH_MAX_REPS) reps = BENCH_MAX_REPS;
  double slowest = 0;
  for (int i = 0; i < n; i++) {
    im[i].fn(im[i].ctx); /* warm-up: first-touch, lazy buffers, caches */
    double t0 = bench_now_ms();
    int c = 0;
    do {
      im[i].fn(im[i].ctx);
      c++;
    } while (bench_now_ms() - t0 < 20.0 && c < 1000);
    double per = (bench_now_ms() - t0) / c;
    if (per > slowest) slowest = per;
  }
  int inner = (int)(sample_ms / (slowest > 1e-6 ? slowest : 1e-6));
  if (inner < 1) inner = 1;
  for (int r = 0; r < reps; r++)
    for (int t = 0; t < n; t++) {
      bench_impl *b = &im[(r + t) % n];
      double t0 = bench_now_ms();
      for (int k = 0; k < inner; k++) b->fn(b->ctx);
      b->samples_ms[r] = (bench_now_ms() - t0) / inner;
    }
  for (int i = 0; i < n; i++) im[i].median_ms = bench_median(im[i].samples_ms, reps, &im[i].min_ms);
  return inner;
}

static inline const char *bench_cpu_model(void) {
  static char model[256] = "unknown";
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (!f) return model;
  char line[512];
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "model name", 10)) {
      char *p = strchr(line, ':');
      if (p) {
        p += 2;
        p[strcspn(p, "\n")] = 0;
        snprintf(model, sizeof model, "%s", p);
      }
      break;
    }
  fclose(f);
  return model;
}

/* W1 (docs/benchmarks.md): the GEMM shapes M, N, K every GEMM benchmark
 * runs when none are given. */
static const int64_t bench_w1_shapes[4][3] __attribute__((unused)) = {
    {256, 256, 256}, {1024, 1024, 1024}, {64, 768, 768}, {128, 3072, 768}};

#endif
