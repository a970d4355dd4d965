/* gemm_check.c - kernel-level check of every ISA's gemm_f32 and of the
 * pre-packed path (gemm_pack_b + gemm_f32_packed) against a double reference:
 * random shapes with edges (1, odd, around MR/NR/KC/MC/NC of every ISA),
 * A and B contiguous, transposed or strided, ldc > N, with and without bias;
 * C cells outside the M x N window must stay untouched.
 * |C - ref| <= 1e-6 + 1e-5 * sum_k |a b| (+ |bias|) for every element.
 *
 * Built and run by bench/workloads/gemm-native.sh before timing; can also be
 * built alone (see that script). Exit status: 0 ok, 1 failures. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/kernels/kernels.h"
#include "tensorplay.h"

const tp_kernels *tp_kern(void);

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}
static float frand(void) { return (float)((next() >> 40) * (1.0 / 16777216.0)) * 2.0f - 1.0f; }

enum { L_CONTIG, L_TRANS, L_STRIDED, L_COUNT };

/* element strides of a logical [R, Ccols] matrix stored in layout l;
 * returns the number of floats to allocate */
static size_t layout(int l, int64_t R, int64_t Cc, int64_t *rs, int64_t *cs) {
  switch (l) {
    case L_CONTIG: *rs = Cc, *cs = 1; return (size_t)(R * Cc);
    case L_TRANS: *rs = 1, *cs = R; return (size_t)(R * Cc);
    default: *rs = 2 * Cc + 3, *cs = 2; return (size_t)(R * (2 * Cc + 3));
  }
}

static int failures, cases;

/* Guard check: C cells outside N x M untouched; packed mode overwrites B with
 * NaN after packing, so any read of B shows up as NaN in C. */
static void one(const tp_kernels *k, int64_t M, int64_t N, int64_t K, int la, int lb, int packed,
                int with_bias) {
  int64_t rsa, csa, rsb, csb, ldc = N + (int64_t)(next() % 5);
  size_t na = layout(la, M, K, &rsa, &csa), nb = layout(lb, K, N, &rsb, &csb);
  float *A = malloc(sizeof(float) * (na ? na : 1)), *B = malloc(sizeof(float) * (nb ? nb : 1));
  float *C = malloc(sizeof(float) * (size_t)(M * ldc + 1));
  float *bias = with_bias ? malloc(sizeof(float) * (size_t)N) : NULL;
  for (size_t i = 0; i < na; i++) A[i] = frand();
  for (size_t i = 0; i < nb; i++) B[i] = frand();
  for (int64_t i = 0; i < M * ldc + 1; i++) C[i] = 12345.0f; /* guard value */
  if (bias)
    for (int64_t j = 0; j < N; j++) bias[j] = frand();
  float *pb = NULL;
  if (packed) {
    size_t bytes = k->gemm_pack_b_size(K, N);
    pb = aligned_alloc(64, (bytes + 64) / 64 * 64);
    k->gemm_pack_b(K, N, B, rsb, csb, pb);
    memset(B, 0xff, sizeof(float) * nb); /* NaN: the packed copy must be all that is read */
    k->gemm_f32_packed(M, N, K, A, rsa, csa, pb, C, ldc, bias);
  } else {
    k->gemm_f32(M, N, K, A, rsa, csa, B, rsb, csb, C, ldc, bias);
  }
  cases++;
  int bad = 0;
  for (int64_t i = 0; i < M && !bad; i++)
    for (int64_t j = 0; j < ldc && !bad; j++) {
      float v = C[i * ldc + j];
      if (j >= N ? v != 12345.0f : (K > 0 && v != v)) {
        printf("FAIL %s%s M=%lld N=%lld K=%lld la=%d lb=%d: C[%lld,%lld] = %g (%s)\n", k->isa,
               packed ? " packed" : "", (long long)M, (long long)N, (long long)K, la, lb,
               (long long)i, (long long)j, v, j >= N ? "outside N written" : "NaN: B read");
        bad = 1;
      }
    }
  if (C[M * ldc] != 12345.0f && !bad) {
    printf("FAIL %s: wrote past C\n", k->isa);
    bad = 1;
  }
  failures += bad;
  free(pb);
  free(A), free(B), free(C), free(bias);
}

/* Value check against the double reference (one() above checks the guard
 * cells and, in packed mode, that B itself is never read). */
static void check_values(const tp_kernels *k, int64_t M, int64_t N, int64_t K, int la, int lb,
                         int packed, int with_bias) {
  int64_t rsa, csa, rsb, csb, ldc = N + (int64_t)(next() % 3);
  size_t na = layout(la, M, K, &rsa, &csa), nb = layout(lb, K, N, &rsb, &csb);
  float *A = malloc(sizeof(float) * (na ? na : 1)), *B = malloc(sizeof(float) * (nb ? nb : 1));
  float *C = malloc(sizeof(float) * (size_t)(M * ldc + 1));
  float *bias = with_bias ? malloc(sizeof(float) * (size_t)N) : NULL;
  for (size_t i = 0; i < na; i++) A[i] = frand();
  for (size_t i = 0; i < nb; i++) B[i] = frand();
  for (int64_t i = 0; i < M * ldc + 1; i++) C[i] = NAN;
  if (bias)
    for (int64_t j = 0; j < N; j++) bias[j] = frand();
  float *pb = NULL;
  if (packed) {
    size_t bytes = k->gemm_pack_b_size(K, N);
    pb = aligned_alloc(64, (bytes + 64) / 64 * 64);
    k->gemm_pack_b(K, N, B, rsb, csb, pb);
    k->gemm_f32_packed(M, N, K, A, rsa, csa, pb, C, ldc, bias);
  } else {
    k->gemm_f32(M, N, K, A, rsa, csa, B, rsb, csb, C, ldc, bias);
  }
  cases++;
  int bad = 0;
  for (int64_t i = 0; i < M && !bad; i++)
    for (int64_t j = 0; j < N && !bad; j++) {
      double ref = bias ? bias[j] : 0, bnd = bias ? fabs(bias[j]) : 0;
      for (int64_t q = 0; q < K; q++) {
        double t = (double)A[i * rsa + q * csa] * B[q * rsb + j * csb];
        ref += t, bnd += fabs(t);
      }
      double got = C[i * ldc + j];
      if (!(fabs(got - ref) <= 1e-6 + 1e-5 * bnd)) {
        printf("FAIL %s%s M=%lld N=%lld K=%lld la=%d lb=%d bias=%d: C[%lld,%lld] = %.9g, "
               "expected %.9g\n",
               k->isa, packed ? " packed" : "", (long long)M, (long long)N, (long long)K, la, lb,
               with_bias, (long long)i, (long long)j, got, ref);
        bad = 1;
      }
    }
  failures += bad;
  free(pb);
  free(A), free(B), free(C), free(bias);
}

int main(void) {
  static const char *const isas[] = {"avx512", "avx2", "sse2", "generic", "wasm-simd128"};
  static const int64_t edge[] = {1, 2, 3, 5, 7, 8, 13, 14, 15, 16, 17, 29, 31, 32, 33, 47, 63, 65};
  static const int64_t deep[] = {255, 256, 257, 383, 384, 385, 511, 769};
  int ne = (int)(sizeof edge / sizeof edge[0]), nd = (int)(sizeof deep / sizeof deep[0]);
  int nisa = 0;
  for (int s = 0; s < 5; s++) {
    if (tp_set_isa(isas[s]) != TP_OK) continue;
    const tp_kernels *k = tp_kern();
    nisa++;
    int before = failures;
    /* small shapes: every layout pair, both paths */
    for (int t = 0; t < 400; t++) {
      int64_t M = edge[next() % (uint64_t)ne], N = edge[next() % (uint64_t)ne],
              K = edge[next() % (uint64_t)ne];
      int la = (int)(next() % L_COUNT), lb = (int)(next() % L_COUNT);
      check_values(k, M, N, K, la, lb, t & 1, (t >> 1) & 1);
      one(k, M, N, K, la, lb, t & 1, (t >> 2) & 1);
    }
    /* deep K and tall M (several KC and MC blocks), wide N around NR */
    for (int t = 0; t < 24; t++) {
      int64_t M = t % 3 == 0 ? 437 + (int64_t)(next() % 30) : edge[next() % (uint64_t)ne];
      int64_t N = 1 + (int64_t)(next() % 100), K = deep[next() % (uint64_t)nd];
      int la = (int)(next() % L_COUNT), lb = (int)(next() % L_COUNT);
      check_values(k, M, N, K, la, lb, t & 1, (t >> 1) & 1);
    }
    /* N beyond one column block (NC = 3072 on avx512, 2048 in vec_impl) */
    check_values(k, 3, 3100, 5, L_CONTIG, L_CONTIG, 0, 1);
    check_values(k, 3, 3100, 5, L_CONTIG, L_TRANS, 1, 1);
    check_values(k, 17, 2100, 400, L_TRANS, L_CONTIG, 1, 0);
    /* empty dims: nothing written for M or N = 0; K = 0 gives the bias */
    float c = 7, b = 3;
    k->gemm_f32(0, 1, 1, &c, 1, 1, &c, 1, 1, &c, 1, NULL);
    k->gemm_f32(1, 0, 1, &c, 1, 1, &c, 1, 1, &c, 1, NULL);
    if (c != 7) printf("FAIL %s: empty gemm wrote C\n", k->isa), failures++;
    k->gemm_f32(1, 1, 0, NULL, 1, 1, NULL, 1, 1, &c, 1, &b);
    if (c != 3) printf("FAIL %s: K = 0 gemm gave %g, not the bias\n", k->isa, c), failures++;
    if (k->gemm_pack_b_size(0, 5) != 0) printf("FAIL %s: pack size of K=0\n", k->isa), failures++;
    printf("%-4s gemm %s: %s\n", failures == before ? "ok" : "FAIL", k->isa,
           failures == before ? "all shapes within 1e-5 of the double reference" : "failures");
  }
  printf("%s gemm_check: %d ISAs, %d cases, %d failing\n", failures ? "FAIL" : "ok", nisa, cases,
         failures);
  return failures != 0;
}
