/* gemm_bench.c - W1: y[M,N] = x[M,K] @ B[K,N], B a constant weight.
 *
 * Implementations, interleaved (bench/lib/bench_util.h):
 *   ours-packed  tp_kern()->gemm_f32_packed with B packed once (the path the
 *                compiler uses for constant weights)
 *   ours         tp_kern()->gemm_f32 (packs B on every call)
 *   openblas     cblas_sgemm, row-major, one thread (OPENBLAS_NUM_THREADS=1)
 *
 * Before timing, every result is checked against a double-precision
 * reference on sampled entries (|err| <= 1e-5 * sum_k |a b| + 1e-6).
 *
 * usage: gemm_bench [--reps N] [--sample-ms X] [--isa NAME] [M,N,K ...]
 * Prints a human table on stderr and one JSON line per shape on stdout. */
#include "lib/bench_util.h"

#include <cblas.h>
#include <math.h>

#include "runtime/kernels/kernels.h"
#include "tensorplay.h"

const tp_kernels *tp_kern(void); /* src/core/internal.h */

typedef struct gemm_case {
  int64_t M, N, K;
  float *A, *B, *C, *pb;
  const tp_kernels *k;
} gemm_case;

static void run_ours_packed(void *p) {
  gemm_case *g = p;
  g->k->gemm_f32_packed(g->M, g->N, g->K, g->A, g->K, 1, g->pb, g->C, g->N, NULL);
}
static void run_ours(void *p) {
  gemm_case *g = p;
  g->k->gemm_f32(g->M, g->N, g->K, g->A, g->K, 1, g->B, g->N, 1, g->C, g->N, NULL);
}
static void run_openblas(void *p) {
  gemm_case *g = p;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, (int)g->M, (int)g->N, (int)g->K, 1.0f,
              g->A, (int)g->K, g->B, (int)g->N, 0.0f, g->C, (int)g->N);
}

static uint64_t rng = 88172645463325252ull;
static float frand(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (float)((rng >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f;
}

/* sampled check of g->C against a double reference; returns max err/bound */
static double check(const gemm_case *g) {
  double worst = 0;
  for (int s = 0; s < 4000; s++) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    int64_t i = (int64_t)(rng % (uint64_t)g->M), j = (int64_t)((rng >> 32) % (uint64_t)g->N);
    double ref = 0, bnd = 0;
    for (int64_t k = 0; k < g->K; k++) {
      double t = (double)g->A[i * g->K + k] * g->B[k * g->N + j];
      ref += t, bnd += fabs(t);
    }
    double e = fabs(g->C[i * g->N + j] - ref) / (1e-6 + 1e-5 * bnd);
    if (e > worst) worst = e;
  }
  return worst;
}

int main(int argc, char **argv) {
  int reps = 41;
  double sample_ms = 4.0;
  const char *isa = NULL;
  int64_t shapes[32][3], ns = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--sample-ms") && i + 1 < argc) sample_ms = atof(argv[++i]);
    else if (!strcmp(argv[i], "--isa") && i + 1 < argc) isa = argv[++i];
    else if (ns < 32) {
      long long m, n, k;
      if (sscanf(argv[i], "%lld,%lld,%lld", &m, &n, &k) != 3) {
        fprintf(stderr, "bad shape '%s' (want M,N,K)\n", argv[i]);
        return 2;
      }
      shapes[ns][0] = m, shapes[ns][1] = n, shapes[ns][2] = k, ns++;
    }
  }
  if (reps < 15) reps = 15;
  if (!ns) {
    memcpy(shapes, bench_w1_shapes, sizeof bench_w1_shapes);
    ns = 4;
  }
  if (isa && tp_set_isa(isa) != TP_OK) {
    fprintf(stderr, "%s\n", tp_last_error());
    return 2;
  }
  const tp_kernels *kern = tp_kern();
  const char *ob_core = openblas_get_corename();
  fprintf(stderr, "W1 GEMM: isa %s, OpenBLAS %s core %s threads %d, %d reps, cpu %s\n", kern->isa,
          openblas_get_config(), ob_core, openblas_get_num_threads(), reps, bench_cpu_model());
  fprintf(stderr, "%-16s %-12s %10s %10s %9s %9s\n", "shape", "impl", "median_ms", "min_ms",
          "GFLOP/s", "vs_blas");
  int bad = 0;
  for (int s = 0; s < ns; s++) {
    gemm_case g = {shapes[s][0], shapes[s][1], shapes[s][2], 0, 0, 0, 0, kern};
    size_t na = (size_t)(g.M * g.K), nb = (size_t)(g.K * g.N), nc = (size_t)(g.M * g.N);
    g.A = aligned_alloc(64, (na * 4 + 63) / 64 * 64);
    g.B = aligned_alloc(64, (nb * 4 + 63) / 64 * 64);
    g.C = aligned_alloc(64, (nc * 4 + 63) / 64 * 64);
    size_t pbs = kern->gemm_pack_b_size(g.K, g.N);
    g.pb = aligned_alloc(64, (pbs + 63) / 64 * 64);
    for (size_t i = 0; i < na; i++) g.A[i] = frand();
    for (size_t i = 0; i < nb; i++) g.B[i] = frand();
    double t0 = bench_now_ms();
    kern->gemm_pack_b(g.K, g.N, g.B, g.N, 1, g.pb);
    double pack_ms = bench_now_ms() - t0;

    bench_impl im[3] = {{.name = "ours-packed", .fn = run_ours_packed, .ctx = &g},
                        {.name = "ours", .fn = run_ours, .ctx = &g},
                        {.name = "openblas", .fn = run_openblas, .ctx = &g}};
    double err[3];
    for (int i = 0; i < 3; i++) {
      memset(g.C, 0, nc * 4);
      im[i].fn(&g);
      err[i] = check(&g);
      if (!(err[i] <= 1.0)) {
        fprintf(stderr, "FAIL %s %lldx%lldx%lld: error %.3g x bound\n", im[i].name,
                (long long)g.M, (long long)g.N, (long long)g.K, err[i]);
        bad = 1;
      }
    }
    int inner = bench_run_interleaved(im, 3, reps, sample_ms);
    double flop = 2.0 * g.M * g.N * g.K, blas = im[2].median_ms;
    char shape[64];
    snprintf(shape, sizeof shape, "%lldx%lldx%lld", (long long)g.M, (long long)g.N,
             (long long)g.K);
    for (int i = 0; i < 3; i++)
      fprintf(stderr, "%-16s %-12s %10.4f %10.4f %9.1f %9.3f\n", i ? "" : shape, im[i].name,
              im[i].median_ms, im[i].min_ms, flop / im[i].median_ms * 1e-6,
              blas / im[i].median_ms);
    /* JSON: throughput ratio vs OpenBLAS = openblas median / our median */
    printf("{\"workload\":\"W1\",\"case\":\"gemm %s\",\"M\":%lld,\"N\":%lld,\"K\":%lld,"
           "\"flop\":%.0f,\"isa\":\"%s\",\"reps\":%d,\"inner\":%d,\"pack_b_ms\":%.4f,\"impls\":[",
           shape, (long long)g.M, (long long)g.N, (long long)g.K, flop, kern->isa, reps, inner,
           pack_ms);
    for (int i = 0; i < 3; i++)
      printf("%s{\"name\":\"%s\",\"median_ms\":%.5f,\"min_ms\":%.5f,\"gflops\":%.2f,"
             "\"max_err_over_bound\":%.4f}",
             i ? "," : "", im[i].name, im[i].median_ms, im[i].min_ms,
             flop / im[i].median_ms * 1e-6, err[i]);
    printf("],\"baseline\":\"openblas\",\"baseline_variant\":\"OpenBLAS %s\"}\n", ob_core);
    fflush(stdout);
    free(g.A), free(g.B), free(g.C), free(g.pb);
  }
  return bad;
}
