/* qgemm_bench.c - W1 shapes as an int8 GEMM: y[M,N] = x[M,K] @ B[K,N] with
 * x uint8 (zero point, scale), B int8 packed once (per-column zero points
 * and scales), requantized to uint8 in the epilogue; against our float32
 * GEMM with B pre-packed (the W1 "ours-packed" path) in the same run.
 *
 * Implementations, interleaved (bench/lib/bench_util.h):
 *   f32-packed      tp_kern()->gemm_f32_packed (the dispatched float ISA)
 *   q8-<variant>    tp_qgemm_run, U8 output, for each qgemm variant this
 *                   host has (the scalar one only with --scalar)
 *   q8f-<best>      the best variant with a float32 output (dequantized)
 *
 * Before timing, every int8 result is checked against an int64 reference
 * on sampled entries (the U8 output within 1 of the documented formula
 * computed in double; the bit-exact checks are in tests/c/runtime/test_qgemm.c).
 * Builds natively (bench/workloads/qgemm-native.sh) and as a wasm32-wasi
 * command run by Node (bench/workloads/qgemm-wasm.sh).
 *
 * usage: qgemm_bench [--reps N] [--sample-ms X] [--scalar] [--weights7] [--selftest] [M,N,K ...]
 *   --weights7  weights in [-64, 63], and the 7-bit variants (avx2w7, wasmrelaxed)
 *               timed too (automatic when wasmrelaxed is installed)
 *   --selftest  only the selftest (tests/js/qgemm_wasm.test.js runs it in Node)
 *   --f32-isa NAME  the float32 GEMM of that ISA (tp_set_isa; e.g. avx2, to
 *               compare the avx2 int8 variant like for like)
 * Prints a human table on stderr and one JSON line per shape on stdout;
 * speedup = f32-packed median / q8 median (throughput ratio). */
#include "lib/bench_util.h"

#include <math.h>

#include "runtime/kernels/kernels.h"
#include "runtime/qgemm.h"
#include "tensorplay.h"

const tp_kernels *tp_kern(void); /* src/core/internal.h */

#if defined(__wasm_simd128__)
#include "codegen/qgemm_jit.h"
/* bench/qgemm_wasm.mjs / qgemm_web.mjs: given the relaxed-SIMD tile module
 * (src/codegen/wasm/emit_qgemm.c's bytes), the host validates it
 * (WebAssembly.validate), instantiates it on our memory, puts its f0 in our
 * function table and returns the index; -1: no relaxed SIMD (or the host
 * was told not to load it). The core does the same through
 * tp_qgemm_jit_install (env.tp_host_load_module). */
__attribute__((import_module("env"), import_name("qgemm_host_relaxed"))) int32_t
qgemm_host_relaxed(const uint8_t *bytes, int32_t len);
static void install_relaxed(void) {
  uint8_t *bytes = NULL;
  size_t len = 0;
  if (tp_qgemm_jit_emit(&bytes, &len) != TP_OK) {
    fprintf(stderr, "qgemm_jit_emit: %s\n", tp_last_error());
    exit(1);
  }
  int32_t idx = qgemm_host_relaxed(bytes, (int32_t)len);
  free(bytes);
  if (idx < 0) return;
  void (*tile)(int64_t, const void *, const void *, int32_t *) =
      (void (*)(int64_t, const void *, const void *, int32_t *))(uintptr_t)idx;
  tp_qgemm_install_variant(tp_qgemm_ukernel_wasmrelaxed(tile));
}
#else
static void install_relaxed(void) {}
#endif

typedef struct qb_case {
  int64_t M, N, K;
  float *A, *B, *C, *pb;
  uint8_t *qa, *qc;
  float *qcf;
  int8_t *qb, zb[4096];
  float sb[4096];
  int32_t za;
  float sa, sy;
  int32_t zy;
  tp_qgemm_packed *packed[8];
  const tp_kernels *k;
} qb_case;

typedef struct qb_impl_ctx {
  qb_case *g;
  int v;
  int kind;
} qb_impl_ctx;

static void run_f32(void *p) {
  qb_impl_ctx *c = p;
  qb_case *g = c->g;
  g->k->gemm_f32_packed(g->M, g->N, g->K, g->A, g->K, 1, g->pb, g->C, g->N, NULL);
}
static void run_q8(void *p) {
  qb_impl_ctx *c = p;
  qb_case *g = c->g;
  tp_qgemm_out o = {.kind = c->kind, .c = c->kind == TP_QGEMM_U8 ? (void *)g->qc : (void *)g->qcf,
                    .ldc = g->N, .scale = g->sy, .zero_point = g->zy};
  if (tp_qgemm_run(g->packed[c->v], g->M, g->qa, g->K, g->za, g->sa, &o) != TP_OK) {
    fprintf(stderr, "qgemm_run: %s\n", tp_last_error());
    exit(1);
  }
}

static uint64_t rng = 88172645463325252ull;
static uint32_t rnd(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (uint32_t)(rng >> 32);
}
static float frand(void) { return (float)((rnd() >> 8) * (1.0 / 16777216.0)) * 2.0f - 1.0f; }

/* sampled check of the U8 (kind U8) or F32 output; returns the worst error
 * in output units (U8: codes; F32: relative to sum |terms| sa sb) */
static double check(const qb_case *g, int kind) {
  double worst = 0;
  for (int s = 0; s < 2000; s++) {
    int64_t i = rnd() % (uint64_t)g->M, j = rnd() % (uint64_t)g->N;
    int64_t acc = 0, mag = 0;
    for (int64_t k = 0; k < g->K; k++) {
      int64_t t = ((int64_t)g->qa[i * g->K + k] - g->za) * ((int64_t)g->qb[k * g->N + j] - g->zb[j]);
      acc += t, mag += t < 0 ? -t : t;
    }
    double real = (double)acc * g->sa * g->sb[j];
    double e;
    if (kind == TP_QGEMM_U8) {
      double q = nearbyint(real / g->sy) + g->zy;
      q = q < 0 ? 0 : q > 255 ? 255 : q;
      e = fabs(q - g->qc[i * g->N + j]);
    } else {
      e = fabs(real - g->qcf[i * g->N + j]) / (1e-30 + 1e-6 * (double)mag * g->sa * g->sb[j]);
    }
    if (e > worst) worst = e;
  }
  return worst;
}

/* variant i takes 8-bit weights (not only the 7-bit ones) */
static int takes8(int i) {
  int lo = 0, hi = 0;
  return tp_qgemm_variant_weight_range(i, &lo, &hi) && lo == -128 && hi == 127;
}

/* Every variant against the scalar one, bit for bit (S32 and U8 outputs)
 * on shapes around the tile edges, and S32 against an int64 reference:
 * the relaxed-SIMD kernel only runs in a host with relaxed SIMD, so it is
 * checked here, in that host, before any timing. */
static int selftest(int weights7) {
  static const int64_t dims[] = {1, 3, 4, 5, 8, 9, 17, 33, 70};
  int bad = 0, ncmp = 0;
  for (int c = 0; c < 40 && !bad; c++) {
    int64_t M = dims[rnd() % 9], N = dims[rnd() % 9], K = c % 4 == 3 ? 300 + rnd() % 900 : dims[rnd() % 9];
    uint8_t *a = malloc((size_t)(M * K)), *c8[8];
    int8_t *b = malloc((size_t)(K * N)), zb[70];
    float sb[70];
    int32_t *c32[8];
    for (int64_t i = 0; i < M * K; i++) a[i] = (uint8_t)rnd();
    for (int64_t i = 0; i < K * N; i++)
      b[i] = (int8_t)(weights7 ? (int)(rnd() % 128) - 64 : (int)(int8_t)rnd());
    for (int64_t n = 0; n < N; n++) zb[n] = (int8_t)rnd(), sb[n] = (float)(1 + rnd() % 100) / 4096;
    int32_t za = (int32_t)(rnd() % 256);
    int nv = tp_qgemm_variant_count(), s0 = -1;
    for (int v = 0; v < nv; v++) {
      const char *name = tp_qgemm_variant_name(v);
      c32[v] = NULL, c8[v] = NULL;
      if (!weights7 && !takes8(v)) continue; /* a 7-bit kernel: not with these weights */
      if (!strcmp(name, "scalar")) s0 = v;
      tp_qgemm_set_variant(name);
      tp_qgemm_weights w = {.K = K, .N = N, .b = b, .rsb = N, .csb = 1, .nq = N, .zero_point = zb,
                            .scale = sb};
      tp_qgemm_packed *p = NULL;
      c32[v] = malloc((size_t)(M * N) * 4), c8[v] = malloc((size_t)(M * N));
      tp_qgemm_out o32 = {.kind = TP_QGEMM_S32, .c = c32[v], .ldc = N};
      tp_qgemm_out o8 = {.kind = TP_QGEMM_U8, .c = c8[v], .ldc = N, .scale = 0.37f, .zero_point = 100};
      if (tp_qgemm_pack(&w, &p) != TP_OK || tp_qgemm_run(p, M, a, K, za, 0.01f, &o32) != TP_OK ||
          tp_qgemm_run(p, M, a, K, za, 0.01f, &o8) != TP_OK) {
        fprintf(stderr, "selftest: %s: %s\n", name, tp_last_error());
        bad = 1;
      }
      tp_qgemm_packed_free(p);
    }
    tp_qgemm_set_variant("best");
    for (int64_t m = 0; m < M && !bad; m++)
      for (int64_t n = 0; n < N && !bad; n++) {
        int64_t ref = 0;
        for (int64_t k = 0; k < K; k++) ref += ((int64_t)a[m * K + k] - za) * (b[k * N + n] - zb[n]);
        /* U8 by the documented formula, with libm's rint (independent of
         * the epilogue's vector code, which every variant shares) */
        float mult = 0.01f * sb[n] / 0.37f, fv = (float)(int32_t)ref * mult;
        double q = rint((double)fv) + 100;
        int q8 = q < 0 ? 0 : q > 255 ? 255 : (int)q;
        if (c8[s0][m * N + n] != q8) {
          fprintf(stderr, "selftest FAIL scalar u8 %lldx%lldx%lld [%lld,%lld]: %d, want %d\n",
                  (long long)M, (long long)N, (long long)K, (long long)m, (long long)n,
                  c8[s0][m * N + n], q8);
          bad = 1;
        }
        for (int v = 0; v < nv && !bad; v++, ncmp++)
          if (c32[v] && (c32[v][m * N + n] != ref || c8[v][m * N + n] != c8[s0][m * N + n])) {
            fprintf(stderr, "selftest FAIL %s %lldx%lldx%lld [%lld,%lld]: s32 %d (want %lld), u8 %d (scalar %d)\n",
                    tp_qgemm_variant_name(v), (long long)M, (long long)N, (long long)K,
                    (long long)m, (long long)n, c32[v][m * N + n], (long long)ref,
                    c8[v][m * N + n], c8[s0][m * N + n]);
            bad = 1;
          }
      }
    for (int v = 0; v < nv; v++) free(c32[v]), free(c8[v]);
    free(a), free(b);
  }
  fprintf(stderr, "selftest: %d variants, %d values compared: %s\n", tp_qgemm_variant_count(),
          ncmp, bad ? "FAIL" : "ok (bit-identical, exact)");
  return bad;
}

int main(int argc, char **argv) {
  int reps = 31, with_scalar = 0, weights7 = 0, selftest_only = 0;
  const char *f32_isa = NULL;
  double sample_ms = 4.0;
  int64_t shapes[32][3], ns = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--sample-ms") && i + 1 < argc) sample_ms = atof(argv[++i]);
    else if (!strcmp(argv[i], "--scalar")) with_scalar = 1;
    else if (!strcmp(argv[i], "--weights7")) weights7 = 1;
    else if (!strcmp(argv[i], "--selftest")) selftest_only = 1;
    else if (!strcmp(argv[i], "--f32-isa") && i + 1 < argc) f32_isa = argv[++i];
    else if (ns < 32) {
      long long m, n, k;
      if (sscanf(argv[i], "%lld,%lld,%lld", &m, &n, &k) != 3 || m < 1 || n < 1 || k < 1 ||
          n > 4096) {
        fprintf(stderr, "bad shape '%s' (want M,N,K, N <= 4096)\n", argv[i]);
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
  install_relaxed();
  for (int i = 0; i < tp_qgemm_variant_count(); i++)
    if (!strcmp(tp_qgemm_variant_name(i), "wasmrelaxed")) weights7 = 1; /* compare it like for like */
  if (selftest(weights7)) return 1;
  if (selftest_only) return 0;
  if (f32_isa && tp_set_isa(f32_isa) != TP_OK) {
    fprintf(stderr, "%s\n", tp_last_error());
    return 2;
  }
  const tp_kernels *kern = tp_kern();
  int nv = 0;
  const char *vnames[8];
  for (int i = 0; i < tp_qgemm_variant_count() && nv < 6; i++)
    if ((with_scalar || strcmp(tp_qgemm_variant_name(i), "scalar")) && (weights7 || takes8(i)))
      vnames[nv++] = tp_qgemm_variant_name(i);
  fprintf(stderr, "W1 int8 GEMM (u8 x s8 -> u8, requantized; weights %s) vs float32 %s, %d reps, cpu %s\n",
          weights7 ? "7-bit [-64, 63]" : "8-bit", kern->isa, reps, bench_cpu_model());
  fprintf(stderr, "%-16s %-16s %10s %10s %9s %9s\n", "shape", "impl", "median_ms", "min_ms",
          "GOP/s", "vs_f32");
  int bad = 0;
  for (int s = 0; s < ns; s++) {
    qb_case g = {.M = shapes[s][0], .N = shapes[s][1], .K = shapes[s][2], .k = kern};
    size_t na = (size_t)(g.M * g.K), nb = (size_t)(g.K * g.N), nc = (size_t)(g.M * g.N);
    g.A = aligned_alloc(64, (na * 4 + 63) / 64 * 64);
    g.B = aligned_alloc(64, (nb * 4 + 63) / 64 * 64);
    g.C = aligned_alloc(64, (nc * 4 + 63) / 64 * 64);
    g.pb = aligned_alloc(64, (kern->gemm_pack_b_size(g.K, g.N) + 63) / 64 * 64);
    g.qa = malloc(na), g.qb = malloc(nb), g.qc = malloc(nc), g.qcf = malloc(nc * 4);
    for (size_t i = 0; i < na; i++) g.A[i] = frand(), g.qa[i] = (uint8_t)rnd();
    for (size_t i = 0; i < nb; i++)
      g.B[i] = frand(), g.qb[i] = (int8_t)(weights7 ? (int)(rnd() % 128) - 64 : (int)(int8_t)rnd());
    kern->gemm_pack_b(g.K, g.N, g.B, g.N, 1, g.pb);
    g.za = 128, g.sa = 1.0f / 64;
    for (int64_t n = 0; n < g.N; n++)
      g.zb[n] = (int8_t)((int)(rnd() % 9) - 4), g.sb[n] = (1.0f + (float)(rnd() % 64) / 64) / 128;
    /* output scale: the sums spread about sqrt(K) 128 74 sa sb */
    g.sy = (float)(sqrt((double)g.K) * 128 * 74 * g.sa / 128 / 40), g.zy = 128;
    bench_impl im[8];
    qb_impl_ctx ctx[8];
    int ni = 0;
    ctx[ni] = (qb_impl_ctx){&g, -1, 0};
    im[ni] = (bench_impl){.name = "f32-packed", .fn = run_f32, .ctx = &ctx[ni]};
    ni++;
    char names[8][32];
    double pack_ms[8];
    for (int v = 0; v < nv; v++) {
      tp_qgemm_set_variant(vnames[v]);
      tp_qgemm_weights w = {.K = g.K, .N = g.N, .b = g.qb, .rsb = g.N, .csb = 1, .nq = g.N,
                            .zero_point = g.zb, .scale = g.sb};
      double t0 = bench_now_ms();
      if (tp_qgemm_pack(&w, &g.packed[v]) != TP_OK) {
        fprintf(stderr, "qgemm_pack: %s\n", tp_last_error());
        return 1;
      }
      pack_ms[v] = bench_now_ms() - t0;
      snprintf(names[ni], sizeof names[ni], "q8-%s", vnames[v]);
      ctx[ni] = (qb_impl_ctx){&g, v, TP_QGEMM_U8};
      im[ni] = (bench_impl){.name = names[ni], .fn = run_q8, .ctx = &ctx[ni]};
      ni++;
    }
    tp_qgemm_set_variant("best");
    snprintf(names[ni], sizeof names[ni], "q8f-%s", vnames[0]);
    ctx[ni] = (qb_impl_ctx){&g, 0, TP_QGEMM_F32};
    im[ni] = (bench_impl){.name = names[ni], .fn = run_q8, .ctx = &ctx[ni]};
    ni++;
    double err[8] = {0};
    for (int i = 1; i < ni; i++) {
      qb_impl_ctx *c = im[i].ctx;
      im[i].fn(c);
      err[i] = check(&g, c->kind);
      if (!(err[i] <= 1.0)) {
        fprintf(stderr, "FAIL %s %lldx%lldx%lld: error %.3g\n", im[i].name, (long long)g.M,
                (long long)g.N, (long long)g.K, err[i]);
        bad = 1;
      }
    }
    int inner = bench_run_interleaved(im, ni, reps, sample_ms);
    double ops = 2.0 * g.M * g.N * g.K, f32 = im[0].median_ms;
    char shape[64];
    snprintf(shape, sizeof shape, "%lldx%lldx%lld", (long long)g.M, (long long)g.N,
             (long long)g.K);
    for (int i = 0; i < ni; i++)
      fprintf(stderr, "%-16s %-16s %10.4f %10.4f %9.1f %9.3f\n", i ? "" : shape, im[i].name,
              im[i].median_ms, im[i].min_ms, ops / im[i].median_ms * 1e-6, f32 / im[i].median_ms);
    printf("{\"workload\":\"W1-int8\",\"case\":\"qgemm %s\",\"M\":%lld,\"N\":%lld,\"K\":%lld,"
           "\"ops\":%.0f,\"f32_isa\":\"%s\",\"weights_bits\":%d,\"reps\":%d,\"inner\":%d,\"impls\":[",
           shape, (long long)g.M, (long long)g.N, (long long)g.K, ops, kern->isa, weights7 ? 7 : 8,
           reps, inner);
    for (int i = 0; i < ni; i++) {
      qb_impl_ctx *c = im[i].ctx;
      printf("%s{\"name\":\"%s\",\"median_ms\":%.5f,\"min_ms\":%.5f,\"gops\":%.2f,"
             "\"speedup_vs_f32\":%.3f",
             i ? "," : "", im[i].name, im[i].median_ms, im[i].min_ms,
             ops / im[i].median_ms * 1e-6, f32 / im[i].median_ms);
      if (i) printf(",\"max_err\":%.4f,\"pack_b_ms\":%.4f", err[i], pack_ms[c->v]);
      printf("}");
    }
    printf("],\"baseline\":\"f32-packed\"}\n");
    fflush(stdout);
    for (int v = 0; v < nv; v++) tp_qgemm_packed_free(g.packed[v]);
    free(g.A), free(g.B), free(g.C), free(g.pb), free(g.qa), free(g.qb), free(g.qc), free(g.qcf);
  }
  return bad;
}
