/* train_step_bench.c - the W2 and W4 training steps natively (the C API,
 * one thread): one step = zero the gradients, the loss (forward), backward,
 * Adam on every parameter.
 *
 *   eager step        tp_linear / tp_relu / tp_cross_entropy, tp_backward
 *   compiled step     the same loss through tp_compile (AOT autograd: stax
 *                     compiles the forward and the backward graph)
 *   eager forward     the loss with grad mode off (an anchor)
 *   compiled forward  the compiled loss with grad mode off (its forward-only
 *                     entry: the anchor of the "step <= 4x forward" target)
 *
 * W2: the MLP 64x784-512-512-10 with cross-entropy on fixed labels; W4: the
 * pre-LN encoder block (128 tokens x 256, 4 heads, FFN 1024, tanh GELU)
 * with MSE; both as bench/workloads/train-step.mjs. Before timing, the compiled loss must
 * equal the eager one and the first step's gradients must agree (|a - b|
 * <= 1e-5 + 2e-4 max|b| per parameter). Then interleaved samples
 * (bench/lib/bench_util.h) and the peak tensor storage of one step of each
 * (tp_live_storage_peak), the compiled plans' arenas not included.
 *
 * usage: train_step_bench [--reps N] [--sample-ms X] [W2] [W4]
 * One JSON object per case on stdout, a human summary on stderr. */
#include "lib/bench_util.h"

#include <math.h>

#include "tensorplay.h"

enum { MAXP = 16, B = 64 };
static const int64_t S[4] = {784, 512, 512, 10};
enum { TS = 128, TD = 256, TH = 4, TF = 1024 };

typedef struct ctx {
  const char *name;
  int np;
  tp_tensor *p[MAXP], *m[MAXP], *v[MAXP];
  tp_tensor *x, *y; /* W2: labels; W4: the target */
  tp_status (*loss)(struct ctx *k, tp_tensor *x, tp_tensor **out);
  tp_compiled *c;
  int64_t step;
  double loss_value;
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
/* a parameter U(base - bound, base + bound) that requires grad, with zero moments */
static void param(ctx *k, int nd, const int64_t *shape, double bound, double base) {
  tp_tensor *u = NULL;
  OK(tp_rand(nd, shape, (uint64_t)(11 + k->np), &u));
  tp_tensor *t = affine(u, 2 * bound, base - bound);
  OK(tp_tensor_set_requires_grad(t, 1));
  k->p[k->np] = t;
  OK(tp_zeros(TP_F32, nd, shape, &k->m[k->np]));
  OK(tp_zeros(TP_F32, nd, shape, &k->v[k->np]));
  k->np++;
}

/* ---- W2 ---- */
static tp_status mlp_loss(ctx *k, tp_tensor *x, tp_tensor **out) {
  tp_tensor *h = x, *t = NULL;
  tp_status s = TP_OK;
  tp_tensor_retain(x);
  for (int i = 0; i < k->np && !s; i += 2) {
    s = tp_linear(h, k->p[i], k->p[i + 1], &t);
    tp_tensor_release(h), h = t, t = NULL;
    if (!s && i + 2 < k->np) {
      s = tp_relu(h, &t);
      tp_tensor_release(h), h = t, t = NULL;
    }
  }
  if (!s) s = tp_cross_entropy(h, k->y, -100, 0.0, 1, out);
  tp_tensor_release(h);
  return s;
}

static void make_w2(ctx *k) {
  k->name = "W2 MLP 64x784-512-512-10 training step (cross-entropy, Adam), native, 1 thread";
  k->loss = mlp_loss;
  for (int i = 0; i < 3; i++) {
    double bnd = 1 / sqrt((double)S[i]);
    param(k, 2, (int64_t[]){S[i + 1], S[i]}, bnd, 0);
    param(k, 1, (int64_t[]){S[i + 1]}, bnd, 0);
  }
  tp_tensor *u = NULL;
  OK(tp_rand(2, (int64_t[]){B, S[0]}, 7, &u));
  k->x = affine(u, 2.0, -1.0);
  int32_t lab[B];
  for (int i = 0; i < B; i++) lab[i] = (int32_t)((i * 7 + 3) % S[3]);
  OK(tp_tensor_new(TP_I32, 1, (int64_t[]){B}, lab, &k->y));
}

/* ---- W4: a pre-LN encoder block, the ops of train-step.mjs's tpLoss ---- */
typedef struct tmp { tp_tensor *t[64]; int n; tp_status s; } tmp;
static tp_tensor *K_(tmp *t, tp_status s, tp_tensor *x) {
  if (s && !t->s) t->s = s;
  if (x) t->t[t->n++] = x;
  return x;
}
#define R(call) (r_ = NULL, st_ = tt.s ? tt.s : (call), K_(&tt, st_, r_))
static tp_status block_loss(ctx *k, tp_tensor *x, tp_tensor **out) {
  tmp tt = {{0}, 0, TP_OK};
  tp_tensor *r_ = NULL, **p = k->p;
  tp_status st_ = TP_OK;
  tp_attrs at;
#define LN(a, g, b) (tp_attrs_init(&at), at.ints[0] = TD, at.nints = 1, at.eps = 1e-5, \
                     R(tp_op_call(TP_OP_LAYER_NORM, 3, (tp_tensor *[]){a, g, b}, &at, &r_)))
#define PERM(a, p0, p1, p2, p3) (tp_attrs_init(&at), at.nints = 4, at.ints[0] = p0, at.ints[1] = p1, \
                                 at.ints[2] = p2, at.ints[3] = p3, R(tp_op_call(TP_OP_PERMUTE, 1, &(a), &at, &r_)))
  tp_tensor *a = LN(x, p[0], p[1]);
  tp_tensor *q0 = R(tp_matmul(a, p[2], &r_)), *q1 = R(tp_add(q0, p[3], &r_));
  tp_tensor *q2 = R(tp_reshape(q1, 4, (int64_t[]){1, TS, TH, TD / TH}, &r_)), *q = PERM(q2, 0, 2, 1, 3);
  tp_tensor *k0 = R(tp_matmul(a, p[4], &r_)), *k1 = R(tp_add(k0, p[5], &r_));
  tp_tensor *k2 = R(tp_reshape(k1, 4, (int64_t[]){1, TS, TH, TD / TH}, &r_)), *kt = PERM(k2, 0, 2, 3, 1);
  tp_tensor *v0 = R(tp_matmul(a, p[6], &r_)), *v1 = R(tp_add(v0, p[7], &r_));
  tp_tensor *v2 = R(tp_reshape(v1, 4, (int64_t[]){1, TS, TH, TD / TH}, &r_)), *v = PERM(v2, 0, 2, 1, 3);
  tp_tensor *sc = R(tp_matmul(q, kt, &r_));
  tp_tensor *scale = NULL;
  if (!tt.s) st_ = tp_scalar(1 / sqrt((double)(TD / TH)), 0, &scale), K_(&tt, st_, scale);
  tp_tensor *ss = R(tp_mul(sc, scale, &r_));
  tp_attrs_init(&at);
  at.dim = -1;
  tp_tensor *pr = R(tp_op_call(TP_OP_SOFTMAX, 1, &ss, &at, &r_));
  tp_tensor *o0 = R(tp_matmul(pr, v, &r_)), *o1 = PERM(o0, 0, 2, 1, 3);
  tp_tensor *o = R(tp_reshape(o1, 3, (int64_t[]){1, TS, TD}, &r_));
  tp_tensor *w0 = R(tp_matmul(o, p[8], &r_)), *w1 = R(tp_add(w0, p[9], &r_)), *hh = R(tp_add(x, w1, &r_));
  tp_tensor *cc = LN(hh, p[10], p[11]);
  tp_tensor *f0 = R(tp_matmul(cc, p[12], &r_)), *f1 = R(tp_add(f0, p[13], &r_));
  tp_attrs_init(&at);
  at.approximate = 1;
  tp_tensor *u = R(tp_op_call(TP_OP_GELU, 1, &f1, &at, &r_));
  tp_tensor *f2 = R(tp_matmul(u, p[14], &r_)), *f3 = R(tp_add(f2, p[15], &r_)), *y = R(tp_add(hh, f3, &r_));
#undef LN
#undef PERM
  tp_status s = tt.s ? tt.s : tp_mse_loss(y, k->y, 1, out);
  while (tt.n) tp_tensor_release(tt.t[--tt.n]);
  return s;
}
#undef R

static void make_w4(ctx *k) {
  k->name = "W4 pre-LN encoder block 128x256, 4 heads, FFN 1024 training step (MSE, Adam), native, 1 thread";
  k->loss = block_loss;
  param(k, 1, (int64_t[]){TD}, 0.1, 1), param(k, 1, (int64_t[]){TD}, 0.1, 0); /* ln1 gamma, beta */
  for (int i = 0; i < 4; i++) param(k, 2, (int64_t[]){TD, TD}, 1 / sqrt((double)TD), 0), param(k, 1, (int64_t[]){TD}, 0.02, 0);
  param(k, 1, (int64_t[]){TD}, 0.1, 1), param(k, 1, (int64_t[]){TD}, 0.1, 0); /* ln2 */
  param(k, 2, (int64_t[]){TD, TF}, 1 / sqrt((double)TD), 0), param(k, 1, (int64_t[]){TF}, 0.02, 0);
  param(k, 2, (int64_t[]){TF, TD}, 1 / sqrt((double)TF), 0), param(k, 1, (int64_t[]){TD}, 0.02, 0);
  tp_tensor *u = NULL, *w = NULL;
  OK(tp_rand(3, (int64_t[]){1, TS, TD}, 8, &u));
  k->x = affine(u, 2.0, -1.0);
  OK(tp_rand(3, (int64_t[]){1, TS, TD}, 9, &w));
  k->y = affine(w, 2.0, -1.0);
}

static tp_status loss_fn(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)nin, (void)max_out;
  ctx *k = ud;
  *nout = 0;
  tp_status s = k->loss(k, in[0], &outs[0]);
  if (!s) *nout = 1;
  return s;
}

static tp_tensor *loss(ctx *k, int compiled) {
  tp_tensor *l = NULL;
  int n = 0;
  if (compiled) OK(tp_compiled_call(k->c, 1, &k->x, 1, &l, &n));
  else OK(k->loss(k, k->x, &l));
  return l;
}

static void step(ctx *k, int compiled) {
  for (int i = 0; i < k->np; i++) OK(tp_tensor_set_grad(k->p[i], NULL));
  tp_tensor *l = loss(k, compiled);
  OK(tp_backward(l, NULL));
  k->step++;
  for (int i = 0; i < k->np; i++)
    OK(tp_adam_step(k->p[i], tp_tensor_grad(k->p[i]), k->m[i], k->v[i], k->step, 1e-4, 0.9, 0.999, 1e-8, 0, 0));
  k->loss_value = item(l);
  tp_tensor_release(l);
}

static void forward(ctx *k, int compiled) {
  int prev = tp_set_grad_enabled(0);
  tp_tensor *l = loss(k, compiled);
  k->loss_value = item(l);
  tp_tensor_release(l);
  tp_set_grad_enabled(prev);
}

static ctx *K;
static void run_eager_step(void *p) { (void)p, step(K, 0); }
static void run_compiled_step(void *p) { (void)p, step(K, 1); }
static void run_eager_forward(void *p) { (void)p, forward(K, 0); }
static void run_compiled_forward(void *p) { (void)p, forward(K, 1); }

/* one step's peak tensor storage, and what was live before it */
static void peak_of(int compiled, size_t *before, size_t *peak) {
  *before = tp_live_storage_bytes();
  tp_live_storage_peak(1);
  step(K, compiled);
  *peak = tp_live_storage_peak(0);
}

/* the loss and every gradient of a step's forward + backward (no update) */
static float *grads_of(int compiled, double *lv) {
  for (int i = 0; i < K->np; i++) OK(tp_tensor_set_grad(K->p[i], NULL));
  tp_tensor *l = loss(K, compiled);
  OK(tp_backward(l, NULL));
  *lv = item(l);
  tp_tensor_release(l);
  size_t n = 0;
  for (int i = 0; i < K->np; i++) n += (size_t)tp_tensor_numel(K->p[i]);
  float *g = malloc(sizeof(float) * n), *q = g;
  for (int i = 0; i < K->np; i++) {
    OK(tp_tensor_read(tp_tensor_grad(K->p[i]), q, sizeof(float) * (size_t)tp_tensor_numel(K->p[i])));
    q += tp_tensor_numel(K->p[i]);
  }
  return g;
}

static int run_case(const char *which, int reps, double sample_ms) {
  ctx k;
  memset(&k, 0, sizeof k);
  K = &k;
  if (!strcmp(which, "W2")) make_w2(&k);
  else make_w4(&k);
  tp_callable fn = {loss_fn, &k};
  OK(tp_compile(&fn, NULL, &k.c));
  /* the check: the same loss and gradients eagerly and compiled */
  double l0, l1;
  float *g0 = grads_of(0, &l0), *g1 = grads_of(1, &l1);
  if (!(fabs(l1 - l0) <= 1e-5 * (1 + fabs(l0)))) {
    fprintf(stderr, "train_step_bench: %s: compiled loss %.8f vs eager %.8f\n", which, l1, l0);
    return 1;
  }
  size_t off = 0;
  for (int i = 0; i < k.np; i++) {
    size_t n = (size_t)tp_tensor_numel(k.p[i]);
    double mx = 0, err = 0;
    for (size_t j = 0; j < n; j++) {
      mx = fmax(mx, fabs(g0[off + j]));
      err = fmax(err, fabs(g0[off + j] - g1[off + j]));
    }
    if (!(err <= 1e-5 + 2e-4 * mx)) {
      fprintf(stderr, "train_step_bench: %s: parameter %d: gradient error %g (max %g)\n", which, i, err, mx);
      return 1;
    }
    off += n;
  }
  free(g0), free(g1);
  fprintf(stderr, "train_step_bench: %s: first loss %.6f, compiled and eager gradients agree\n", which, l0);
  bench_impl im[4] = {{"tensorplay eager step", run_eager_step, NULL},
                      {"tensorplay compiled step", run_compiled_step, NULL},
                      {"tensorplay eager forward", run_eager_forward, NULL},
                      {"tensorplay compiled forward", run_compiled_forward, NULL}};
  bench_run_interleaved(im, 4, reps, sample_ms);
  size_t eb, ep, cb, cp;
  peak_of(0, &eb, &ep);
  peak_of(1, &cb, &cp);
  char *ex = NULL;
  OK(tp_compiled_explain(k.c, &ex));
  if (!strstr(ex, "\"training\": [{") || !strstr(ex, "\"eager_for_autograd\": 0")) {
    fprintf(stderr, "train_step_bench: %s: the compiled step did not compile for training\n", which);
    return 1;
  }
  /* the partition (docs/training.md "The partitioner"): saved / recomputed values and their bytes */
  const char *p0 = strstr(ex, "\"saved\": ["), *p1 = p0 ? strstr(p0, ", \"forward_plan\"") : NULL;
  if (p0 && p1) fprintf(stderr, "train_step_bench: %s: partition: %.*s\n", which, (int)(p1 - p0), p0);
  const char *fk = strstr(ex, "\"forward_plan\": {\"kernels\": "), *bk = strstr(ex, "\"backward_plan\": {\"kernels\": ");
  if (fk && bk)
    fprintf(stderr, "train_step_bench: %s: forward plan %d kernels, backward plan %d kernels\n", which,
            atoi(fk + strlen("\"forward_plan\": {\"kernels\": ")), atoi(bk + strlen("\"backward_plan\": {\"kernels\": ")));
  tp_free_buffer(ex);
  printf("{\"case\": \"%s\", \"isa\": \"%s\", \"reps\": %d, \"impls\": [", k.name, tp_isa_name(), reps);
  for (int i = 0; i < 4; i++)
    printf("%s{\"name\": \"%s\", \"median_ms\": %.4f, \"min_ms\": %.4f}", i ? ", " : "", im[i].name, im[i].median_ms,
           im[i].min_ms);
  printf("], \"baseline\": \"tensorplay compiled forward\", \"peak_bytes\": {\"eager\": %zu, \"eager_before\": %zu, "
         "\"compiled\": %zu, \"compiled_before\": %zu}}\n",
         ep, eb, cp, cb);
  fflush(stdout);
  for (int i = 0; i < 4; i++)
    fprintf(stderr, "train_step_bench: %s: %s: median %.3f ms (min %.3f)\n", which, im[i].name, im[i].median_ms,
            im[i].min_ms);
  fprintf(stderr,
          "train_step_bench: %s: compiled step / compiled forward = %.2fx; eager step / compiled step = %.2fx; "
          "peak tensor storage of a step: eager %.2f MB, compiled %.2f MB (plus the plans' arenas)\n",
          which, im[1].median_ms / im[3].median_ms, im[0].median_ms / im[1].median_ms, ep / 1048576.0, cp / 1048576.0);
  tp_compiled_free(k.c);
  for (int i = 0; i < k.np; i++) tp_tensor_release(k.p[i]), tp_tensor_release(k.m[i]), tp_tensor_release(k.v[i]);
  tp_tensor_release(k.x), tp_tensor_release(k.y);
  return 0;
}

int main(int argc, char **argv) {
  int reps = 21, ncases = 0;
  double sample_ms = 10;
  const char *cases[2];
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--sample-ms") && i + 1 < argc) sample_ms = atof(argv[++i]);
    else if ((!strcmp(argv[i], "W2") || !strcmp(argv[i], "W4")) && ncases < 2) cases[ncases++] = argv[i];
    else {
      fprintf(stderr, "usage: train_step_bench [--reps N] [--sample-ms X] [W2] [W4]\n");
      return 2;
    }
  }
  if (reps < 5) reps = 5;
  if (!ncases) cases[ncases++] = "W2", cases[ncases++] = "W4";
  for (int i = 0; i < ncases; i++)
    if (run_case(cases[i], reps, sample_ms)) return 1;
  return 0;
}
