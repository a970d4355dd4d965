/* autotune.c - max-autotune's GEMM blocking: each GEMM kernel of a plan
 * timed with a grid (or, with coordinate descent, one knob at a time) of
 * depth (KC) and row (MC) blockings on its own shapes, the fastest kept per
 * (ISA table, M, N, K, constant B) in a locked cache (tp_tune_cache, also
 * used by codegen's register-tile tuning). Moved out of executor.c, which
 * calls it from plan_new. */
#include "lower.h"
#include <string.h>
#include <time.h>

double tp_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* Tuning results (lower.h): one keyed cache helper for the executor's GEMM
 * blocking and codegen's register tiles. */
int tp_tune_cache_get(tp_tune_cache *c, const int64_t *key, int *val) {
  int hit = 0;
  tp_spin_lock(&c->lock);
  for (int i = 0; i < c->n && !hit; i++)
    if (!memcmp(c->e[i].key, key, sizeof c->e[i].key)) {
      memcpy(val, c->e[i].val, sizeof c->e[i].val);
      hit = 1;
    }
  tp_spin_unlock(&c->lock);
  return hit;
}

void tp_tune_cache_put(tp_tune_cache *c, const int64_t *key, const int *val) {
  tp_spin_lock(&c->lock);
  int n = TP_ARRAY_LEN(c->e);
  int i = c->n < n ? c->n++ : n - 1; /* full: the newest result replaces the last one */
  memcpy(c->e[i].key, key, sizeof c->e[i].key);
  memcpy(c->e[i].val, val, sizeof c->e[i].val);
  tp_spin_unlock(&c->lock);
}

/* GEMM blocking (KC, MC) per (ISA table, M, N, K, constant B) */
static tp_tune_cache gemm_blocking;

/* min of 3 timed runs (after one warm-up) of kernel k's GEMM with (kc, mc) */
static double time_gemm(const tp_kernels *K, const tp_kir_kernel *k, const float *A, const float *B,
                        float *C, float *pb, int kc, int mc) {
  K->gemm_tune(kc, mc);
  if (pb) K->gemm_pack_b(k->K, k->N, B, k->b_rs, k->b_cs, pb);
  double best = 1e30;
  for (int r = 0; r < 4; r++) {
    double t0 = tp_now_ms();
    if (pb) K->gemm_f32_packed(k->M, k->N, k->K, A, k->K, 1, pb, C, k->N, NULL);
    else K->gemm_f32(k->M, k->N, k->K, A, k->K, 1, B, k->b_rs, k->b_cs, C, k->N, NULL);
    double t = tp_now_ms() - t0;
    if (r > 0 && t < best) best = t;
  }
  K->gemm_tune(0, 0);
  return best;
}

tp_status tp_autotune_gemm(tp_kir_program *p, tp_kir_kernel *k) {
  const tp_kernels *K = tp_kern();
  if (!K->gemm_tune || k->M <= 0 || k->N <= 0 || k->K <= 0) return TP_OK;
  int64_t key[TP_TUNE_KEY] = {(int64_t)(intptr_t)K, k->M, k->N, k->K, k->b_const, 0};
  int val[2];
  if (p->use_cache && tp_tune_cache_get(&gemm_blocking, key, val)) {
    k->tune_kc = val[0], k->tune_mc = val[1];
    return TP_OK;
  }
  size_t na = (size_t)(k->M * k->K), nc = (size_t)(k->M * k->N);
  float *A = tp_alloc(sizeof(float) * na), *C = tp_alloc(sizeof(float) * nc), *B = NULL, *pb = NULL;
  const float *Bv = NULL;
  tp_status s = (!A || !C) ? TP_ERR_OUT_OF_MEMORY : TP_OK;
  if (!s) {
    for (size_t i = 0; i < na; i++) A[i] = (float)((i * 2654435761u) % 1000) * 1e-3f - 0.5f;
    if (k->b_const) {
      Bv = (const float *)tp_tensor_ptr(p->bufs[k->b_buf].value) + k->b_off;
      size_t bytes = K->gemm_pack_b_size(k->K, k->N);
      if (bytes && !(pb = tp_alloc(bytes + 64))) s = TP_ERR_OUT_OF_MEMORY;
    } else {
      B = tp_alloc(sizeof(float) * (size_t)(k->b_rs * (k->K - 1) + k->b_cs * (k->N - 1) + 1));
      if (!B) s = TP_ERR_OUT_OF_MEMORY;
      else memset(B, 0, sizeof(float) * (size_t)(k->b_rs * (k->K - 1) + k->b_cs * (k->N - 1) + 1));
      Bv = B;
    }
  }
  if (!s) {
    static const int kcs[] = {128, 256, 384, 512, 768}, mcs[] = {48, 96, 192, 432};
    float *pba = pb ? (float *)(((uintptr_t)pb + 63) & ~(uintptr_t)63) : NULL;
    int best_kc = 0, best_mc = 0;
    double best = time_gemm(K, k, A, Bv, C, pba, 0, 0); /* the defaults */
    if (p->coordinate_descent) { /* one knob at a time from the defaults */
      for (int i = 0; i < 5; i++) {
        double t = time_gemm(K, k, A, Bv, C, pba, kcs[i], best_mc);
        if (t < best) best = t, best_kc = kcs[i];
      }
      for (int j = 0; j < 4; j++) {
        double t = time_gemm(K, k, A, Bv, C, pba, best_kc, mcs[j]);
        if (t < best) best = t, best_mc = mcs[j];
      }
    } else { /* the whole grid */
      for (int i = 0; i < 5; i++)
        for (int j = 0; j < 4; j++) {
          double t = time_gemm(K, k, A, Bv, C, pba, kcs[i], mcs[j]);
          if (t < best) best = t, best_kc = kcs[i], best_mc = mcs[j];
        }
    }
    k->tune_kc = best_kc, k->tune_mc = best_mc;
    p->tuned++;
    if (p->use_cache) tp_tune_cache_put(&gemm_blocking, key, (const int[2]){best_kc, best_mc});
  }
  tp_free(A);
  tp_free(C);
  tp_free(B);
  tp_free(pb);
  return s;
}
