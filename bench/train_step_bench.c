/* train_step_bench.c - the W2 training step natively (the C API, one
 * thread): one step = zero the gradients, the loss (forward), backward,
 * Adam on every parameter.
 *
 *   eager step        tp_linear / tp_relu / tp_cross_entropy, tp_backward
 *   compiled step     the same loss through tp_compile (AOT autograd: stax
 *                     compiles the forward and the backward graph)
 *   eager forward     the loss with grad mode off (an anchor)
 *   compiled forward  the compiled loss with grad mode off (its forward-only
 *                     entry: the anchor of the "step <= 4x forward" target)
 *
 * W2: the MLP 64x784-512-512-10 with cross-entropy on fixed labels, as
 * bench/workloads/train-step.mjs. Before timing, the compiled loss must
 * equal the eager one and the first step's gradients must agree (|a - b|
 * <= 1e-5 + 2e-4 max|b| per parameter). Then interleaved samples
 * (bench/lib/bench_util.h) and the peak tensor storage of one step of each
 * (tp_live_storage_peak), the compiled plans' arenas not included.
 *
 * usage: train_step_bench [--reps N] [--sample-ms X]
 * One JSON object on stdout, a human summary on stderr. */
#include "lib/bench_util.h"

#include <math.h>

#include "tensorplay.h"

enum { NP = 6, B = 64 };
static const int64_t S[4] = {784, 512, 512, 10};

typedef struct ctx {
  tp_tensor *p[NP], *m[NP], *v[NP];
  tp_tensor *x, *y;
  tp_compiled *c;
  int64_t step;
  double loss;
} ctx;

static void die(const char *what, tp_status s) {
  fprintf(stderr, "train_step_bench: %s: %s (%s)\n", what, tp_status_name(s), tp_last_error());
  exit(1);
}
#define OK(call) \
  do { \
    tp_status s_ = (call); \
    if (s_) die(#call, s_); \
  } while (0)

static double item(tp_tensor *t) {
  double v = 0;
  OK(tp_tensor_item(t, &v));
  return v;
}
/* a * x + b for a fresh tensor x (released) */
static tp_tensor *affine(tp_tensor *x, double a, double b) {
  tp_tensor *sa = NULL, *sb = NULL, *ax = NULL, *y = NULL;
  OK(tp_scalar(a, 0, &sa));
  OK(tp_scalar(b, 0, &sb));
  OK(tp_mul(x, sa, &ax));
  OK(tp_add(ax, sb, &y));
  tp_tensor_release(x), tp_tensor_release(sa), tp_tensor_release(sb), tp_tensor_release(ax);
  return y;
}

static tp_status loss_of(ctx *k, tp_tensor *x, tp_tensor **out) {
  tp_tensor *h = x, *t = NULL;
  tp_status s = TP_OK;
  tp_tensor_retain(x);
  for (int i = 0; i < NP && !s; i += 2) {
    s = tp_linear(h, k->p[i], k->p[i + 1], &t);
    tp_tensor_release(h), h = t, t = NULL;
    if (!s && i + 2 < NP) {
      s = tp_relu(h, &t);
      tp_tensor_release(h), h = t, t = NULL;
    }
  }
  if (!s) s = tp_cross_entropy(h, k->y, -100, 0.0, 1, out);
  tp_tensor_release(h);
  return s;
}

static tp_status loss_fn(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)nin, (void)max_out;
  *nout = 0;
  tp_status s = loss_of(ud, in[0], &outs[0]);
  if (!s) *nout = 1;
  return s;
}

static tp_tensor *loss(ctx *k, int compiled) {
  tp_tensor *l = NULL;
  int n = 0;
  if (compiled) OK(tp_compiled_call(k->c, 1, &k->x, 1, &l, &n));
  else OK(loss_of(k, k->x, &l));
  return l;
}

static void step(ctx *k, int compiled) {
  for (int i = 0; i < NP; i++) OK(tp_tensor_set_grad(k->p[i], NULL));
  tp_tensor *l = loss(k, compiled);
  OK(tp_backward(l, NULL));
  k->step++;
  for (int i = 0; i < NP; i++)
    OK(tp_adam_step(k->p[i], tp_tensor_grad(k->p[i]), k->m[i], k->v[i], k->step, 1e-4, 0.9, 0.999, 1e-8, 0, 0));
  k->loss = item(l);
  tp_tensor_release(l);
}

static void forward(ctx *k, int compiled) {
  int prev = tp_set_grad_enabled(0);
  tp_tensor *l = loss(k, compiled);
  k->loss = item(l);
  tp_tensor_release(l);
  tp_set_grad_enabled(prev);
}

static ctx K;
static void run_eager_step(void *p) { (void)p, step(&K, 0); }
static void run_compiled_step(void *p) { (void)p, step(&K, 1); }
static void run_eager_forward(void *p) { (void)p, forward(&K, 0); }
static void run_compiled_forward(void *p) { (void)p, forward(&K, 1); }

/* one step's peak tensor storage above and including what was live before */
static void peak_of(int compiled, size_t *before, size_t *peak) {
  *before = tp_live_storage_bytes();
  tp_live_storage_peak(1);
  step(&K, compiled);
  *peak = tp_live_storage_peak(0);
}

static float *grads_copy(void) {
  size_t n = 0;
  for (int i = 0; i < NP; i++) n += (size_t)tp_tensor_numel(K.p[i]);
  float *g = malloc(sizeof(float) * n), *q = g;
  for (int i = 0; i < NP; i++) {
    size_t b = sizeof(float) * (size_t)tp_tensor_numel(K.p[i]);
    OK(tp_tensor_read(tp_tensor_grad(K.p[i]), q, b));
    q += tp_tensor_numel(K.p[i]);
  }
  return g;
}

int main(int argc, char **argv) {
  int reps = 21;
  double sample_ms = 10;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--sample-ms") && i + 1 < argc) sample_ms = atof(argv[++i]);
    else {
      fprintf(stderr, "usage: train_step_bench [--reps N] [--sample-ms X]\n");
      return 2;
    }
  }
  if (reps < 5) reps = 5;
  /* parameters U(-1/sqrt(in), 1/sqrt(in)), the input U(-1, 1), labels */
  for (int i = 0; i < 3; i++) {
    double bnd = 1 / sqrt((double)S[i]);
    int64_t ws[2] = {S[i + 1], S[i]}, bs[1] = {S[i + 1]};
    for (int q = 0; q < 2; q++) {
      tp_tensor *u = NULL;
      OK(tp_rand(q ? 1 : 2, q ? bs : ws, (uint64_t)(11 + 2 * i + q), &u));
      tp_tensor *t = affine(u, 2 * bnd, -bnd);
      OK(tp_tensor_set_requires_grad(t, 1));
      K.p[2 * i + q] = t;
      OK(tp_zeros(TP_F32, q ? 1 : 2, q ? bs : ws, &K.m[2 * i + q]));
      OK(tp_zeros(TP_F32, q ? 1 : 2, q ? bs : ws, &K.v[2 * i + q]));
    }
  }
  {
    tp_tensor *u = NULL;
    OK(tp_rand(2, (int64_t[]){B, S[0]}, 7, &u));
    K.x = affine(u, 2.0, -1.0);
    int32_t lab[B];
    for (int i = 0; i < B; i++) lab[i] = (int32_t)((i * 7 + 3) % S[3]);
    OK(tp_tensor_new(TP_I32, 1, (int64_t[]){B}, lab, &K.y));
  }
  tp_callable fn = {loss_fn, &K};
  OK(tp_compile(&fn, NULL, &K.c));
  /* the check: the same loss and gradients eagerly and compiled */
  for (int pass = 0; pass < 2; pass++) {
    for (int i = 0; i < NP; i++) OK(tp_tensor_set_grad(K.p[i], NULL));
    tp_tensor *l = loss(&K, pass);
    OK(tp_backward(l, NULL));
    double lv = item(l);
    tp_tensor_release(l);
    static double l0;
    static float *g0;
    if (!pass) {
      l0 = lv, g0 = grads_copy();
      continue;
    }
    float *g1 = grads_copy();
    if (!(fabs(lv - l0) <= 1e-5 * (1 + fabs(l0)))) {
      fprintf(stderr, "train_step_bench: compiled loss %.8f vs eager %.8f\n", lv, l0);
      return 1;
    }
    size_t off = 0;
    for (int i = 0; i < NP; i++) {
      size_t n = (size_t)tp_tensor_numel(K.p[i]);
      double mx = 0, err = 0;
      for (size_t j = 0; j < n; j++) {
        mx = fmax(mx, fabs(g0[off + j]));
        err = fmax(err, fabs(g0[off + j] - g1[off + j]));
      }
      if (!(err <= 1e-5 + 2e-4 * mx)) {
        fprintf(stderr, "train_step_bench: parameter %d: gradient error %g (max %g)\n", i, err, mx);
        return 1;
      }
      off += n;
    }
    free(g0), free(g1);
    fprintf(stderr, "train_step_bench: W2: first loss %.6f, compiled and eager gradients agree\n", l0);
  }
  bench_impl im[4] = {{"tensorplay eager step", run_eager_step, NULL},
                      {"tensorplay compiled step", run_compiled_step, NULL},
                      {"tensorplay eager forward", run_eager_forward, NULL},
                      {"tensorplay compiled forward", run_compiled_forward, NULL}};
  bench_run_interleaved(im, 4, reps, sample_ms);
  size_t eb, ep, cb, cp;
  peak_of(0, &eb, &ep);
  peak_of(1, &cb, &cp);
  char *ex = NULL;
  OK(tp_compiled_explain(K.c, &ex));
  if (!strstr(ex, "\"training\": [{") || !strstr(ex, "\"eager_for_autograd\": 0")) {
    fprintf(stderr, "train_step_bench: the compiled step did not compile for training\n");
    return 1;
  }
  tp_free_buffer(ex);
  printf("{\"case\": \"W2 MLP %dx784-512-512-10 training step (cross-entropy, Adam), native, 1 thread\", "
         "\"isa\": \"%s\", \"reps\": %d, \"impls\": [",
         B, tp_isa_name(), reps);
  for (int i = 0; i < 4; i++)
    printf("%s{\"name\": \"%s\", \"median_ms\": %.4f, \"min_ms\": %.4f}", i ? ", " : "", im[i].name, im[i].median_ms,
           im[i].min_ms);
  printf("], \"baseline\": \"tensorplay compiled forward\", \"peak_bytes\": {\"eager\": %zu, \"eager_before\": %zu, "
         "\"compiled\": %zu, \"compiled_before\": %zu}}\n",
         ep, eb, cp, cb);
  for (int i = 0; i < 4; i++)
    fprintf(stderr, "train_step_bench: W2: %s: median %.3f ms (min %.3f)\n", im[i].name, im[i].median_ms, im[i].min_ms);
  fprintf(stderr,
          "train_step_bench: W2: compiled step / compiled forward = %.2fx; eager step / compiled step = %.2fx; "
          "peak tensor storage of a step: eager %.2f MB, compiled %.2f MB (plus the plans' arenas)\n",
          im[1].median_ms / im[3].median_ms, im[0].median_ms / im[1].median_ms, ep / 1048576.0, cp / 1048576.0);
  tp_compiled_free(K.c);
  for (int i = 0; i < NP; i++) tp_tensor_release(K.p[i]), tp_tensor_release(K.m[i]), tp_tensor_release(K.v[i]);
  tp_tensor_release(K.x), tp_tensor_release(K.y);
  return 0;
}
