/* test_compile_train.c - compiled training (src/compiler/aot.c) against
 * eager autograd, on the path a C user takes: a loss function that closes
 * over its parameters (leaves that require grad), tp_compile, a compiled
 * call, tp_backward, tp_adam_step.
 *
 * - gradients: for an MLP (linear, relu, linear, cross-entropy), a small
 *   CNN (conv2d with pads, relu, a strided conv2d, linear, MSE; the input
 *   requires grad too) and a transformer block (layer_norm, q/k/v
 *   projections, scaled q k^T, softmax, attention, residuals, a tanh-GELU
 *   FFN, MSE), the compiled call's loss and every gradient equal eager
 *   autograd's within float32 tolerance: |a - b| <= 1e-5 + 2e-4 max|b|
 *   per tensor (the two run different kernels: stax's fused graph vs the
 *   eager ops, so sums are ordered differently);
 * - training: 40 Adam steps of each model, eagerly and compiled from the
 *   same initial parameters: every step's loss agrees within 1e-4
 *   relative and the compiled wrapper compiled once (optimizer updates in
 *   place do not recompile and are read: parameters are graph inputs);
 * - explain() lists the saved GEMM outputs and the recomputed pointwise
 *   ops; nothing leaks. */
#include "../ops/op_expect.h"
#include <math.h>
#include <string.h>

enum { MAXP = 16 };
static int64_t tdim(tp_tensor *t, int i) { return tp_tensor_shape(t)[i]; }
typedef struct model {
  const char *name;
  int np;
  tp_tensor *p[MAXP];
  tp_tensor *x, *target;
  int x_grad; /* the input requires grad too */
  tp_status (*loss)(struct model *m, tp_tensor *x, tp_tensor **out);
} model;

/* temporaries of one forward, released at its end */
typedef struct tmp { tp_tensor *t[64]; int n; } tmp;
static tp_tensor *keep(tmp *t, tp_tensor *x) {
  if (x) t->t[t->n++] = x;
  return x;
}
static void drop(tmp *t) {
  while (t->n) tp_tensor_release(t->t[--t->n]);
}
#define T(call) \
  do { \
    tp_status s_ = (call); \
    if (s_) { \
      drop(&tt); \
      return s_; \
    } \
  } while (0)

static tp_tensor *param(int nd, const int64_t *shape, uint64_t seed, double bound) {
  tp_tensor *u = NULL, *a = NULL, *y = NULL;
  CHECK_OK(tp_rand(nd, shape, seed, &u));
  CHECK_OK(tp_mul(u, wflt(2 * bound), &a));
  CHECK_OK(tp_sub(a, wflt(bound), &y));
  tp_tensor_release(u), tp_tensor_release(a);
  CHECK_OK(tp_tensor_set_requires_grad(y, 1));
  return track(y);
}
static tp_tensor *clone(tp_tensor *t) {
  int64_t n = tp_tensor_numel(t);
  float *b = malloc(sizeof(float) * (size_t)(n ? n : 1));
  tp_tensor *y = NULL;
  int64_t shape[TP_MAX_DIMS];
  int nd = tp_tensor_ndim(t);
  for (int i = 0; i < nd; i++) shape[i] = tdim(t, i);
  CHECK_OK(tp_tensor_read(t, b, sizeof(float) * (size_t)n));
  CHECK_OK(tp_tensor_new(TP_F32, nd, shape, b, &y));
  free(b);
  if (tp_tensor_requires_grad(t)) CHECK_OK(tp_tensor_set_requires_grad(y, 1));
  return track(y);
}

/* ---- the models ---- */
static tp_status mlp_loss(model *m, tp_tensor *x, tp_tensor **out) {
  tmp tt = {0};
  tp_tensor *h, *r, *o;
  T(tp_linear(x, m->p[0], m->p[1], &h)); keep(&tt, h);
  T(tp_relu(h, &r)); keep(&tt, r);
  T(tp_linear(r, m->p[2], m->p[3], &o)); keep(&tt, o);
  tp_status s = tp_cross_entropy(o, m->target, -100, 0, 1, out);
  drop(&tt);
  return s;
}

static tp_status cnn_loss(model *m, tp_tensor *x, tp_tensor **out) {
  tmp tt = {0};
  tp_tensor *c1, *r1, *c2, *r2, *f, *o;
  T(tp_conv2d(x, m->p[0], m->p[1], NULL, (int64_t[]){1, 1, 1, 1}, NULL, 1, &c1)); keep(&tt, c1);
  T(tp_relu(c1, &r1)); keep(&tt, r1);
  T(tp_conv2d(r1, m->p[2], m->p[3], (int64_t[]){2, 2}, (int64_t[]){1, 1, 0, 0}, NULL, 1, &c2)); keep(&tt, c2);
  T(tp_relu(c2, &r2)); keep(&tt, r2);
  T(tp_reshape(r2, 2, (int64_t[]){tdim(x, 0), -1}, &f)); keep(&tt, f);
  T(tp_linear(f, m->p[4], m->p[5], &o)); keep(&tt, o);
  tp_status s = tp_mse_loss(o, m->target, 1, out);
  drop(&tt);
  return s;
}

enum { TK = 16, DM = 32, FF = 64 };
static tp_status op1(tp_op op, tp_tensor *a, const tp_attrs *at, tp_tensor **out) {
  return tp_op_call(op, 1, &a, at, out);
}
static tp_status layer_norm(tp_tensor *x, tp_tensor *g, tp_tensor *b, tp_tensor **out) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.ints[0] = DM, at.nints = 1, at.eps = 1e-5;
  tp_tensor *in[3] = {x, g, b};
  return tp_op_call(TP_OP_LAYER_NORM, 3, in, &at, out);
}
/* pre-LN: x + attn(ln1(x)), then + ffn(ln2(.)) */
static tp_status block_loss(model *m, tp_tensor *x, tp_tensor **out) {
  tmp tt = {0};
  tp_tensor **p = m->p, *h, *q, *k, *v, *kt, *sc, *ss, *a, *o, *po, *x2, *h2, *f1, *g1, *f2, *y;
  tp_attrs at;
  T(layer_norm(x, p[0], p[1], &h)); keep(&tt, h);
  T(tp_linear(h, p[2], NULL, &q)); keep(&tt, q);
  T(tp_linear(h, p[3], NULL, &k)); keep(&tt, k);
  T(tp_linear(h, p[4], NULL, &v)); keep(&tt, v);
  T(tp_transpose(k, 0, 1, &kt)); keep(&tt, kt);
  T(tp_matmul(q, kt, &sc)); keep(&tt, sc);
  T(tp_mul(sc, wflt(1 / sqrt(DM)), &ss)); keep(&tt, ss);
  tp_attrs_init(&at);
  at.dim = -1;
  T(op1(TP_OP_SOFTMAX, ss, &at, &a)); keep(&tt, a);
  T(tp_matmul(a, v, &o)); keep(&tt, o);
  T(tp_linear(o, p[5], p[6], &po)); keep(&tt, po);
  T(tp_add(x, po, &x2)); keep(&tt, x2);
  T(layer_norm(x2, p[7], p[8], &h2)); keep(&tt, h2);
  T(tp_linear(h2, p[9], p[10], &f1)); keep(&tt, f1);
  tp_attrs_init(&at);
  at.approximate = 1;
  T(op1(TP_OP_GELU, f1, &at, &g1)); keep(&tt, g1);
  T(tp_linear(g1, p[11], p[12], &f2)); keep(&tt, f2);
  T(tp_add(x2, f2, &y)); keep(&tt, y);
  tp_status s = tp_mse_loss(y, m->target, 1, out);
  drop(&tt);
  return s;
}

static void make_mlp(model *m) {
  memset(m, 0, sizeof *m);
  m->name = "mlp";
  m->loss = mlp_loss;
  CHECK_OK(tp_randn(2, (int64_t[]){64, 20}, 3, &m->x)); track(m->x);
  int32_t ys[64];
  for (int i = 0; i < 64; i++) ys[i] = (i * 7) % 5;
  m->target = mk_(__LINE__, TP_I32, 1, (int64_t[]){64}, ys);
  m->np = 4;
  m->p[0] = param(2, (int64_t[]){48, 20}, 11, 1 / sqrt(20));
  m->p[1] = param(1, (int64_t[]){48}, 12, 1 / sqrt(20));
  m->p[2] = param(2, (int64_t[]){5, 48}, 13, 1 / sqrt(48));
  m->p[3] = param(1, (int64_t[]){5}, 14, 1 / sqrt(48));
}
static void make_cnn(model *m) {
  memset(m, 0, sizeof *m);
  m->name = "cnn";
  m->loss = cnn_loss;
  m->x_grad = 1;
  CHECK_OK(tp_randn(4, (int64_t[]){4, 2, 8, 8}, 21, &m->x)); track(m->x);
  CHECK_OK(tp_randn(2, (int64_t[]){4, 3}, 22, &m->target)); track(m->target);
  m->np = 6;
  m->p[0] = param(4, (int64_t[]){6, 2, 3, 3}, 23, 1 / sqrt(18));
  m->p[1] = param(1, (int64_t[]){6}, 24, 1 / sqrt(18));
  m->p[2] = param(4, (int64_t[]){8, 6, 3, 3}, 25, 1 / sqrt(54));
  m->p[3] = param(1, (int64_t[]){8}, 26, 1 / sqrt(54));
  m->p[4] = param(2, (int64_t[]){3, 8 * 4 * 4}, 27, 1 / sqrt(128));
  m->p[5] = param(1, (int64_t[]){3}, 28, 1 / sqrt(128));
}
static void make_block(model *m) {
  memset(m, 0, sizeof *m);
  m->name = "block";
  m->loss = block_loss;
  CHECK_OK(tp_randn(2, (int64_t[]){TK, DM}, 31, &m->x)); track(m->x);
  CHECK_OK(tp_randn(2, (int64_t[]){TK, DM}, 32, &m->target)); track(m->target);
  m->np = 13;
  const double b = 1 / sqrt(DM);
  m->p[0] = param(1, (int64_t[]){DM}, 33, 0.1), m->p[1] = param(1, (int64_t[]){DM}, 34, 0.1);
  for (int i = 2; i <= 5; i++) m->p[i] = param(2, (int64_t[]){DM, DM}, 35 + i, b);
  m->p[6] = param(1, (int64_t[]){DM}, 41, b);
  m->p[7] = param(1, (int64_t[]){DM}, 42, 0.1), m->p[8] = param(1, (int64_t[]){DM}, 43, 0.1);
  m->p[9] = param(2, (int64_t[]){FF, DM}, 44, b), m->p[10] = param(1, (int64_t[]){FF}, 45, b);
  m->p[11] = param(2, (int64_t[]){DM, FF}, 46, 1 / sqrt(FF)), m->p[12] = param(1, (int64_t[]){DM}, 47, 1 / sqrt(FF));
}

static tp_status loss_fn(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)nin, (void)max_out;
  model *m = ud;
  *nout = 0;
  tp_status s = m->loss(m, in[0], &outs[0]);
  if (!s) *nout = 1;
  return s;
}

/* |a - b| <= 1e-5 + 2e-4 max|b| */
static void expect_close(const char *what, int i, tp_tensor *a, tp_tensor *b) {
  checks++;
  if (!a || !b) {
    FAILF("%s %d: a gradient is missing (%p %p)", what, i, (void *)a, (void *)b);
    return;
  }
  int64_t n = tp_tensor_numel(b);
  if (tp_tensor_numel(a) != n) {
    FAILF("%s %d: %lld vs %lld elements", what, i, (long long)tp_tensor_numel(a), (long long)n);
    return;
  }
  float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)n);
  CHECK_OK(tp_tensor_read(a, x, sizeof(float) * (size_t)n));
  CHECK_OK(tp_tensor_read(b, y, sizeof(float) * (size_t)n));
  double mx = 0, err = 0;
  int64_t at = 0;
  for (int64_t k = 0; k < n; k++) mx = fmax(mx, fabs(y[k]));
  for (int64_t k = 0; k < n; k++)
    if (fabs(x[k] - y[k]) > err) err = fabs(x[k] - y[k]), at = k;
  if (!(err <= 1e-5 + 2e-4 * mx) || mx == 0)
    FAILF("%s %d: compiled %g vs eager %g at %lld (max |eager| %g)", what, i, x[at], y[at], (long long)at, mx);
  free(x), free(y);
}

/* loss and gradients of one call: eager when c is NULL */
static void grads_of(model *m, tp_compiled *c, double *loss, tp_tensor **g, tp_tensor **gx) {
  tp_tensor *l = NULL;
  if (c) {
    int n = 0;
    CHECK_OK(tp_compiled_call(c, 1, &m->x, 1, &l, &n));
  } else {
    CHECK_OK(m->loss(m, m->x, &l));
  }
  if (!l) return;
  CHECK(tp_tensor_requires_grad(l));
  CHECK_OK(tp_tensor_item(l, loss));
  CHECK_OK(tp_backward(l, NULL));
  tp_tensor_release(l);
  for (int i = 0; i < m->np; i++) {
    g[i] = tp_tensor_grad(m->p[i]);
    if (g[i]) tp_tensor_retain(g[i]), track(g[i]);
    tp_tensor_set_grad(m->p[i], NULL);
  }
  if (gx) {
    *gx = tp_tensor_grad(m->x);
    if (*gx) tp_tensor_retain(*gx), track(*gx);
    tp_tensor_set_grad(m->x, NULL);
  }
}

static void check_model(model *m, const char *saved_op) {
  if (failures) return;
  if (m->x_grad) CHECK_OK(tp_tensor_set_requires_grad(m->x, 1));
  tp_callable fn = {loss_fn, m};
  tp_compiled *c = NULL;
  CHECK_OK(tp_compile(&fn, NULL, &c));
  double le = 0, lc = 0;
  tp_tensor *ge[MAXP] = {0}, *gc[MAXP] = {0}, *gxe = NULL, *gxc = NULL;
  grads_of(m, NULL, &le, ge, m->x_grad ? &gxe : NULL);
  grads_of(m, c, &lc, gc, m->x_grad ? &gxc : NULL);
  CHECKF(fabs(le - lc) <= 1e-5 + 1e-5 * fabs(le), "%s: loss compiled %.8f vs eager %.8f", m->name, lc, le);
  for (int i = 0; i < m->np; i++) expect_close(m->name, i, gc[i], ge[i]);
  if (m->x_grad) expect_close(m->name, -1, gxc, gxe);
  /* peak tensor storage of a forward + backward (saved tensors counted):
   * compiled no larger than eager (the backward plan releases each saved
   * tensor after its last use and allocates each gradient at its first
   * write; the plans' arenas are not tensor storage) */
  size_t inc[2];
  for (int k = 0; k < 2; k++) {
    tp_tensor *gs[MAXP] = {0}, *gx = NULL;
    double l = 0;
    size_t before = tp_live_storage_bytes();
    tp_live_storage_peak(1);
    grads_of(m, k ? c : NULL, &l, gs, m->x_grad ? &gx : NULL);
    inc[k] = tp_live_storage_peak(0) - before;
  }
  /* the backward alone (what the forward saved is live before it): the
   * compiled backward donates its saved tensors to the plan, which frees
   * each after its last use, as eager frees each node's */
  size_t binc[2];
  for (int k = 0; k < 2; k++) {
    tp_tensor *l = NULL;
    int n = 0;
    if (k) CHECK_OK(tp_compiled_call(c, 1, &m->x, 1, &l, &n));
    else CHECK_OK(m->loss(m, m->x, &l));
    size_t before = tp_live_storage_bytes();
    tp_live_storage_peak(1);
    CHECK_OK(tp_backward(l, NULL));
    binc[k] = tp_live_storage_peak(0) - before;
    tp_tensor_release(l);
    for (int i = 0; i < m->np; i++) tp_tensor_set_grad(m->p[i], NULL);
    if (m->x_grad) tp_tensor_set_grad(m->x, NULL);
  }
  printf("%s: peak storage of the backward above what was live: eager %zu bytes, compiled %zu\n", m->name,
         binc[0], binc[1]);
  CHECKF(binc[1] <= binc[0], "%s: the compiled backward's peak is %zu bytes above what was live, eager's %zu",
         m->name, binc[1], binc[0]);
  size_t gbytes = 0; /* the gradients themselves */
  for (int i = 0; i < m->np; i++) gbytes += (size_t)tp_tensor_numel(m->p[i]) * 4;
  if (m->x_grad) gbytes += (size_t)tp_tensor_numel(m->x) * 4;
  printf("%s: peak storage of a step above what was live: eager %zu bytes, compiled %zu (gradients %zu)\n",
         m->name, inc[0], inc[1], gbytes);
  /* the MLP: the saved hidden activations go before the first layer's
   * weight gradient is allocated, so the backward's peak stays below the
   * gradients' total (all outputs allocated up front would reach it) */
  if (!strcmp(m->name, "mlp"))
    CHECKF(binc[1] < gbytes, "mlp: the compiled backward's peak is %zu bytes above what was live, the gradients %zu",
           binc[1], gbytes);
  CHECKF(inc[1] <= inc[0], "%s: the compiled step's peak is %zu bytes above what was live, eager's %zu", m->name,
         inc[1], inc[0]);
  char *ex = NULL;
  CHECK_OK(tp_compiled_explain(c, &ex));
  CHECKF(ex && strstr(ex, "\"training\": [{") && strstr(ex, saved_op) && strstr(ex, "\"eager_for_autograd\": 0"),
         "%s: explain lacks the training graphs or %s: %.3000s", m->name, saved_op, ex ? ex : "(null)");
  if (ex && getenv("TP_TEST_VERBOSE")) printf("%s\n", ex);
  tp_free_buffer(ex);
  tp_compiled_free(c);
  if (m->x_grad) CHECK_OK(tp_tensor_set_requires_grad(m->x, 0));
}

/* 40 Adam steps eagerly and compiled from the same parameters: the same losses */
static void train_model(model *m) {
  if (failures) return;
  enum { STEPS = 40 };
  model mc = *m;
  for (int i = 0; i < m->np; i++) mc.p[i] = clone(m->p[i]);
  model *ms[2] = {m, &mc};
  double losses[2][STEPS];
  tp_callable fn = {loss_fn, &mc};
  tp_compiled *c = NULL;
  CHECK_OK(tp_compile(&fn, NULL, &c));
  for (int k = 0; k < 2; k++) {
    model *mm = ms[k];
    tp_tensor *mo[MAXP], *vo[MAXP];
    for (int i = 0; i < mm->np; i++) {
      int64_t sh[TP_MAX_DIMS];
      for (int d = 0; d < tp_tensor_ndim(mm->p[i]); d++) sh[d] = tdim(mm->p[i], d);
      CHECK_OK(tp_zeros(TP_F32, tp_tensor_ndim(mm->p[i]), sh, &mo[i]));
      CHECK_OK(tp_zeros(TP_F32, tp_tensor_ndim(mm->p[i]), sh, &vo[i]));
      track(mo[i]), track(vo[i]);
    }
    for (int step = 1; step <= STEPS && !failures; step++) {
      tp_tensor *g[MAXP] = {0};
      grads_of(mm, k ? c : NULL, &losses[k][step - 1], g, NULL);
      for (int i = 0; i < mm->np; i++)
        CHECK_OK(tp_adam_step(mm->p[i], g[i], mo[i], vo[i], step, 0.01, 0.9, 0.999, 1e-8, 0, 0));
    }
  }
  double worst = 0;
  for (int s = 0; s < STEPS; s++) worst = fmax(worst, fabs(losses[0][s] - losses[1][s]) / fabs(losses[0][s]));
  printf("%s: largest relative loss difference over %d steps %.2e\n", m->name, STEPS, worst);
  for (int s = 0; s < STEPS && !failures; s++)
    CHECKF(fabs(losses[0][s] - losses[1][s]) <= 1e-4 * fabs(losses[0][s]) + 1e-6,
           "%s step %d: compiled loss %.7f vs eager %.7f", m->name, s + 1, losses[1][s], losses[0][s]);
  CHECKF(losses[1][STEPS - 1] < 0.7 * losses[1][0], "%s: the loss went %g -> %g", m->name, losses[1][0],
         losses[1][STEPS - 1]);
  CHECKF(tp_compiled_num_entries(c) == 1, "%s: %d entries", m->name, tp_compiled_num_entries(c));
  printf("%s: loss %.6f -> %.6f in %d steps, eager and compiled agree\n", m->name, losses[0][0],
         losses[1][STEPS - 1], STEPS);
  tp_compiled_free(c);
}

static void test_mlp(void) {
  model m;
  make_mlp(&m);
  /* the hidden relu is saved (the second linear reads it, and relu's
   * gradient reads its result), not the first linear's output */
  check_model(&m, "\"%1 (relu)\"");
  train_model(&m);
}
static void test_cnn(void) {
  model m;
  make_cnn(&m);
  check_model(&m, "\"%1 (relu)\""); /* the next conv's input, as the MLP's */
  train_model(&m);
}
static void test_block(void) {
  model m;
  make_block(&m);
  check_model(&m, "(softmax)\"");
  train_model(&m);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  size_t live0 = tp_live_tensors();
  static const op_test tests[] = {{"test_mlp", test_mlp}, {"test_cnn", test_cnn}, {"test_block", test_block}};
  run_op_tests(tests, sizeof tests / sizeof tests[0]);
  tp_reset();
  if (tp_live_tensors() != live0) FAILF("leak: %zu live tensors at the end, %zu at the start", tp_live_tensors(), live0);
  printf("test_compile_train: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
