/* test_gemm_f16.c - the float16-B GEMM of every ISA table (issue 17,
 * src/runtime/kernels/gemm_f16_impl.h):
 *  1. f16_to_f32 on all 65536 bit patterns: the same bits as the core's
 *     scalar tp_f16_to_f32 (src/core/num.h), and the value of a float16
 *     decoded by hand here (ldexp); NaNs quiet with their sign.
 *  1b. f32_to_f16 (round to nearest even) on every float16 value, its
 *     float32 neighbours, the midpoints to the next value and theirs, a
 *     sweep of float32 bit patterns, NaNs and the overflow edge: the bits of
 *     the scalar tp_f32_to_f16 and of tp_f64_to_f16 (frexp, from the
 *     double: an independent rounding), unaligned and with a tail.
 *  2. gemm_pack_b_f16 + gemm_f32_packed_f16 (+ _cols) on shapes around the
 *     tile and KC edges, plain and transposed B, with and without bias,
 *     against (a) the table's float32 GEMM on the converted B (the path a
 *     float32 model takes; tolerance 1e-6 relative to sum |a b|: only the
 *     summation order may differ) and (b) a double-precision oracle.
 *     Column blocks from _cols equal the full call bit for bit. */
#include "core/num.h"
#include "runtime/dispatch.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

static double half_decode(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 31 ? (m ? NAN : INFINITY) : e == 0 ? ldexp(m, -24) : ldexp(m + 1024, e - 25);
  return (h & 0x8000) ? -v : v;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double urand(void) { /* [-1, 1) */
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(rng >> 11) / 4503599627370496.0 - 1.0;
}

static void conversion(const char *isa, const tp_kernels *K) {
  uint16_t *h = malloc(sizeof(uint16_t) * 65537);
  float *y = malloc(sizeof(float) * 65537);
  if (!h || !y) FAILF("out of memory");
  for (uint32_t i = 0; i < 65536; i++) h[i + 1] = (uint16_t)i;
  /* all patterns from h + 1, then from h + 2 (unaligned) with n = 65533: a tail on every ISA */
  for (int pass = 0; pass < 2; pass++) {
    int64_t off = pass, n = pass ? 65533 : 65536;
    memset(y, 0xff, sizeof(float) * 65537);
    K->f16_to_f32(h + 1 + off, y, n);
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 5; i++) {
      uint16_t b = (uint16_t)(i + off);
      float want = tp_f16_to_f32(b);
      uint32_t wb, gb;
      memcpy(&wb, &want, 4), memcpy(&gb, &y[i], 4);
      double d = half_decode(b);
      int value_ok = isnan(d) ? (isnan(y[i]) && (gb & 0x400000u) && (signbit(y[i]) != 0) == ((b & 0x8000) != 0))
                              : (double)y[i] == d && (signbit(y[i]) != 0) == ((b & 0x8000) != 0);
      if (wb != gb || !value_ok) {
        FAILF("%s f16_to_f32(0x%04x) = 0x%08x, scalar 0x%08x, hand-decoded %.9g", isa, b, gb, wb, d);
        bad++;
      }
      checks++;
    }
    if (y[n] == y[n]) FAILF("%s f16_to_f32 wrote past n", isa); /* 0xffffffff is a NaN */
  }
  free(h);
  free(y);
}

static void narrowing(const char *isa, const tp_kernels *K) {
  enum { CAP = 65536 * 8 + 70000 };
  uint32_t *u = malloc(sizeof(uint32_t) * (CAP + 1));
  uint16_t *h = malloc(sizeof(uint16_t) * (CAP + 1));
  if (!u || !h) FAILF("out of memory");
  int64_t n = 0;
  for (uint32_t b = 0; b < 0x10000u; b++) { /* each float16 value: itself, neighbours, midpoint to the next */
    float v = tp_f16_to_f32((uint16_t)b);
    uint32_t vb;
    memcpy(&vb, &v, 4);
    u[n++] = vb, u[n++] = vb + 1, u[n++] = vb - 1, u[n++] = vb + 2;
    if ((b & 0x7c00u) == 0x7c00u) continue;
    double mid = (half_decode((uint16_t)b) + half_decode((uint16_t)(b + 1))) / 2; /* exact in float32 */
    float mf = (float)mid;
    uint32_t mb;
    memcpy(&mb, &mf, 4);
    if (((b + 1) & 0x7c00u) == 0x7c00u || (b & 0x7fffu) == 0x7fffu) mb = (vb & 0x80000000u) | 0x477ff000u; /* 65520 */
    u[n++] = mb, u[n++] = mb + 1, u[n++] = mb - 1;
  }
  for (uint64_t x = 0; x < 0x100000000ull && n < CAP; x += 65521) u[n++] = (uint32_t)x;
  static const uint32_t special[] = {0x7f800001u, 0xff800001u, 0x7fc00000u, 0x7fffffffu, 0x7fa02000u,
                                     0xffc0e000u, 0x477fefffu, 0x477ff000u, 0x477fffffu, 0x47800000u,
                                     0x33000000u, 0x33000001u, 0x32ffffffu, 0x38800000u, 0x387fffffu};
  for (size_t k = 0; k < sizeof special / sizeof special[0] && n < CAP; k++) u[n++] = special[k];
  for (int pass = 0; pass < 2; pass++) { /* pass 1: from u + 1 with n - 3 values (unaligned, a tail) */
    int64_t off = pass, cnt = pass ? n - 3 : n;
    memset(h, 0xff, sizeof(uint16_t) * (CAP + 1));
    K->f32_to_f16((const float *)(u + off), h, cnt);
    int bad = 0;
    for (int64_t i = 0; i < cnt && bad < 5; i++) {
      float f;
      memcpy(&f, &u[i + off], 4);
      uint16_t want = tp_f32_to_f16(f), oracle = tp_f64_to_f16((double)f);
      if (h[i] != want || want != oracle) {
        FAILF("%s f32_to_f16(0x%08x) = 0x%04x, scalar 0x%04x, from the double 0x%04x", isa, u[i + off], h[i], want,
              oracle);
        bad++;
      }
      checks++;
    }
    if (h[cnt] != 0xffff) FAILF("%s f32_to_f16 wrote past n", isa);
  }
  free(u);
  free(h);
}

static void one_gemm(const char *isa, const tp_kernels *K, int64_t M, int64_t N, int64_t Kd,
                     int trans, int with_bias) {
  float *A = malloc(sizeof(float) * (size_t)(M * Kd + 1)), *Bf = malloc(sizeof(float) * (size_t)(Kd * N + 1));
  uint16_t *Bh = malloc(sizeof(uint16_t) * (size_t)(Kd * N + 1));
  float *C = malloc(sizeof(float) * (size_t)(M * N + 1)), *C2 = malloc(sizeof(float) * (size_t)(M * N + 1));
  float *Cf = malloc(sizeof(float) * (size_t)(M * N + 1)), *bias = malloc(sizeof(float) * (size_t)(N + 1));
  size_t pbytes = K->gemm_pack_b_f16_size(Kd, N);
  uint16_t *pb = malloc(pbytes + 64);
  if (!A || !Bf || !Bh || !C || !C2 || !Cf || !bias || !pb) FAILF("out of memory");
  if (pbytes != sizeof(uint16_t) * (size_t)Kd * (size_t)((N + 31) / 32 * 32) &&
      pbytes < sizeof(uint16_t) * (size_t)(Kd * N))
    FAILF("%s pack size %zu for %lldx%lld", isa, pbytes, (long long)Kd, (long long)N);
  if (pbytes >= sizeof(float) * (size_t)Kd * (size_t)N && N >= 32)
    FAILF("%s f16 panels take %zu bytes, not about half of %lld floats", isa, pbytes, (long long)(Kd * N));
  for (int64_t i = 0; i < M * Kd; i++) A[i] = (float)urand();
  for (int64_t i = 0; i < N; i++) bias[i] = (float)urand();
  /* B[k, n] stored plain (rsb = N, csb = 1) or transposed (rsb = 1, csb = K) */
  int64_t rsb = trans ? 1 : N, csb = trans ? Kd : 1;
  for (int64_t k = 0; k < Kd; k++)
    for (int64_t n = 0; n < N; n++) {
      uint16_t b = tp_f64_to_f16(urand() * (n % 5 == 0 ? 3e-5 : 2.0)); /* subnormals too */
      Bh[k * rsb + n * csb] = b;
      Bf[k * rsb + n * csb] = tp_f16_to_f32(b);
    }
  const float *bs = with_bias ? bias : NULL;
  K->gemm_pack_b_f16(Kd, N, Bh, rsb, csb, pb);
  K->gemm_f32_packed_f16(M, N, Kd, A, Kd, 1, pb, C, N, bs);
  K->gemm_f32(M, N, Kd, A, Kd, 1, Bf, rsb, csb, Cf, N, bs);
  /* in column blocks of 64 (a multiple of every panel width) */
  for (int64_t j0 = 0; j0 < N; j0 += 64)
    K->gemm_f32_packed_f16_cols(M, N, Kd, A, Kd, 1, pb, j0, j0 + 64 < N ? j0 + 64 : N, C2, N, bs);
  int bad = 0;
  for (int64_t i = 0; i < M && bad < 5; i++)
    for (int64_t n = 0; n < N && bad < 5; n++) {
      double ref = bs ? bs[n] : 0, mag = bs ? fabs(bs[n]) : 0;
      for (int64_t k = 0; k < Kd; k++) {
        double p = (double)A[i * Kd + k] * half_decode(Bh[k * rsb + n * csb]);
        ref += p, mag += fabs(p);
      }
      float c = C[i * N + n];
      double tol = 1e-6 * mag + 1e-30;
      if (fabs(c - ref) > tol || fabs(c - Cf[i * N + n]) > tol ||
          memcmp(&c, &C2[i * N + n], 4)) {
        FAILF("%s %lldx%lldx%lld%s%s C[%lld,%lld] = %.9g, f32 path %.9g, oracle %.9g, cols %.9g", isa,
              (long long)M, (long long)N, (long long)Kd, trans ? " B^T" : "", bs ? " bias" : "",
              (long long)i, (long long)n, c, Cf[i * N + n], ref, C2[i * N + n]);
        bad++;
      }
      checks++;
    }
  free(A), free(Bf), free(Bh), free(C), free(C2), free(Cf), free(bias), free(pb);
}

int main(void) {
  static const char *const isas[] = {"avx512", "avx2", "sse2", "generic", "wasm-simd128"};
  static const int64_t shapes[][3] = {{1, 1, 1},   {5, 7, 3},    {13, 33, 257}, {37, 70, 300},
                                      {64, 96, 513}, {3, 1030, 20}, {200, 40, 9}};
  int tested = 0;
  for (int t = 0; t < 5; t++) {
    if (tp_set_isa(isas[t]) != TP_OK) {
      printf("skip ISA %s\n", isas[t]);
      continue;
    }
    const tp_kernels *K = tp_kern();
    if (!K->f16_to_f32 || !K->f32_to_f16 || !K->gemm_pack_b_f16 || !K->gemm_f32_packed_f16) {
      FAILF("%s: no float16-B GEMM in the table", isas[t]);
      continue;
    }
    tested++;
    conversion(isas[t], K);
    narrowing(isas[t], K);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
      for (int v = 0; v < 4; v++) one_gemm(isas[t], K, shapes[s][0], shapes[s][1], shapes[s][2], v & 1, v >> 1);
    printf("%s: conversion and GEMM checked\n", isas[t]);
  }
  tp_set_isa("best");
  tp_kern_thread_release();
  if (!tested) FAILF("no ISA table tested");
  printf("test_gemm_f16: %d checks, %d failures\n", checks, failures);
  return failures ? 1 : 0;
}
