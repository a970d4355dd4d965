/* gemm_layout_bench.c - the GEMM of the kernel table (tp_kern()->gemm_f32,
 * packing both operands on every call: the path of a training step, whose
 * weights are inputs) on the W4 backward's shapes with each operand plain
 * (row-major) or transposed (read by strides, as a backward graph's
 * transposed views are), interleaved. Every result is checked against a
 * double reference on sampled entries first.
 *
 * usage: gemm_layout_bench [--reps N] [--sample-ms X]
 * One JSON object per shape on stdout (baseline: both operands plain). */
#include "lib/bench_util.h"

#include <math.h>

#include "runtime/kernels/kernels.h"
#include "tensorplay.h"

const tp_kernels *tp_kern(void); /* src/core/internal.h */

typedef struct lay {
  int64_t M, N, K, rsa, csa, rsb, csb;
  const float *A, *B;
  float *C;
} lay;

static void run(void *p) {
  lay *g = p;
  tp_kern()->gemm_f32(g->M, g->N, g->K, g->A, g->rsa, g->csa, g->B, g->rsb, g->csb, g->C, g->N, NULL);
}

int main(int argc, char **argv) {
  int reps = 21;
  double sample_ms = 10;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--sample-ms") && i + 1 < argc) sample_ms = atof(argv[++i]);
    else {
      fprintf(stderr, "usage: gemm_layout_bench [--reps N] [--sample-ms X]\n");
      return 2;
    }
  }
  /* the W4 backward's GEMMs: g @ W^T, u^T @ g, and their mirror shapes */
  static const int64_t sh[4][3] = {{128, 1024, 256}, {1024, 256, 128}, {128, 256, 1024}, {256, 1024, 128}};
  enum { CAP = 1 << 18 };
  float *A = malloc(sizeof(float) * CAP), *B = malloc(sizeof(float) * CAP), *C[4];
  for (int i = 0; i < CAP; i++) A[i] = (float)((i * 7) % 13) * 0.1f - 0.6f, B[i] = (float)((i * 5) % 11) * 0.1f - 0.5f;
  for (int t = 0; t < 4; t++) C[t] = malloc(sizeof(float) * CAP);
  static const char *names[4] = {"A @ B", "A @ B^T", "A^T @ B", "A^T @ B^T"};
  for (int s = 0; s < 4; s++) {
    lay g[4];
    bench_impl im[4];
    for (int t = 0; t < 4; t++) {
      int ta = t >> 1, tb = t & 1;
      int64_t M = sh[s][0], N = sh[s][1], K = sh[s][2];
      g[t] = (lay){M, N, K, ta ? 1 : K, ta ? M : 1, tb ? 1 : N, tb ? K : 1, A, B, C[t]};
      im[t] = (bench_impl){names[t], run, &g[t]};
      run(&g[t]);
      for (int q = 0; q < 64; q++) { /* sampled entries against a double reference */
        int64_t i = (q * 37) % M, j = (q * 101) % N;
        double ref = 0, mag = 0;
        for (int64_t k = 0; k < K; k++) {
          double p = (double)A[i * g[t].rsa + k * g[t].csa] * B[k * g[t].rsb + j * g[t].csb];
          ref += p, mag += fabs(p);
        }
        if (!(fabs(C[t][i * N + j] - ref) <= 1e-5 * mag + 1e-6)) {
          fprintf(stderr, "gemm_layout_bench: %s %lldx%lldx%lld: C[%lld,%lld] = %g, reference %g\n", names[t],
                  (long long)M, (long long)N, (long long)K, (long long)i, (long long)j, C[t][i * N + j], ref);
          return 1;
        }
      }
    }
    bench_run_interleaved(im, 4, reps, sample_ms);
    double fl = 2.0 * (double)sh[s][0] * (double)sh[s][1] * (double)sh[s][2];
    printf("{\"case\": \"GEMM %lldx%lldx%lld, operands plain or transposed, packed per call, 1 thread\", \"isa\": \"%s\", "
           "\"reps\": %d, \"impls\": [",
           (long long)sh[s][0], (long long)sh[s][1], (long long)sh[s][2], tp_isa_name(), reps);
    for (int t = 0; t < 4; t++) {
      printf("%s{\"name\": \"%s\", \"median_ms\": %.4f, \"min_ms\": %.4f, \"gflops\": %.2f}", t ? ", " : "", names[t],
             im[t].median_ms, im[t].min_ms, fl / im[t].median_ms / 1e6);
      fprintf(stderr, "gemm_layout_bench: %lldx%lldx%lld %-10s median %.3f ms (min %.3f), %.1f GFLOP/s\n",
              (long long)sh[s][0], (long long)sh[s][1], (long long)sh[s][2], names[t], im[t].median_ms, im[t].min_ms,
              fl / im[t].median_ms / 1e6);
    }
    printf("], \"baseline\": \"A @ B\"}\n");
    fflush(stdout);
  }
  free(A), free(B);
  for (int t = 0; t < 4; t++) free(C[t]);
  return 0;
}
