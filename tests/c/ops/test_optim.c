/* test_optim.c - the fused optimizer steps (src/ops/optim.c): SGD (momentum,
 * weight decay), Adam and AdamW against hand-computed first steps and a
 * double-precision reference of PyTorch's update rules over several steps;
 * versions bumped (a graph that saved the parameter refuses to backward);
 * every bad argument an error naming it, with nothing written. */
#include "op_expect.h"

static void read4(tp_tensor *t, float *out, int n) { tp_tensor_read(t, out, sizeof(float) * (size_t)n); }

static void test_sgd_hand(void) {
  tp_tensor *p = F32((2), 1, 2), *g = F32((2), 0.5, -1), *buf = F32((2), 0, 0);
  CHECK_OK(tp_sgd_step(p, g, buf, 0.1, 0.9, 0.01));
  /* d = g + 0.01 p = [0.51, -0.98] = buf; p -= 0.1 d */
  EXPECT(p, TP_F32, (2), 0.949, 2.098);
  EXPECT(buf, TP_F32, (2), 0.51, -0.98);
  CHECK_OK(tp_sgd_step(p, g, buf, 0.1, 0.9, 0.01));
  /* d = [0.50949, -0.97902]; buf = 0.9 buf + d = [0.96849, -1.86102] */
  EXPECT(p, TP_F32, (2), 0.852151, 2.284102);
  EXPECT(buf, TP_F32, (2), 0.96849, -1.86102);
  tp_tensor *q = F32((1), 3);
  CHECK_OK(tp_sgd_step(q, F32((1), 2), NULL, 0.5, 0, 0)); /* plain: 3 - 1 */
  EXPECT(q, TP_F32, (1), 2);
}

static void test_adam_hand(void) {
  for (int dec = 0; dec < 2; dec++) {
    tp_tensor *p = F32((2), 1, -1), *g = F32((2), 0.1, -0.2), *m = F32((2), 0, 0), *v = F32((2), 0, 0);
    CHECK_OK(tp_adam_step(p, g, m, v, 1, 0.01, 0.9, 0.999, 1e-8, dec ? 0.1 : 0, dec));
    /* step 1: m_hat = g, v_hat = g^2, so p moves by lr * sign(g); AdamW first scales p by 1 - lr wd */
    if (dec) EXPECT(p, TP_F32, (2), 0.999 - 0.01, -0.999 + 0.01);
    else EXPECT(p, TP_F32, (2), 0.99, -0.99);
    EXPECT(m, TP_F32, (2), 0.01, -0.02);
    EXPECT(v, TP_F32, (2), 1e-5, 4e-5);
  }
}

/* PyTorch's rules in double, several steps with changing gradients */
static void test_reference(void) {
  enum { N = 6, STEPS = 5 };
  for (int kind = 0; kind < 4; kind++) { /* sgd+momentum, adam, adam+l2, adamw */
    double p[N], m[N] = {0}, v[N] = {0};
    float pf[N], gf[N];
    for (int i = 0; i < N; i++) p[i] = pf[i] = (float)(0.3 * i - 0.8);
    tp_tensor *pt = NULL, *mt = NULL, *vt = NULL;
    tp_tensor_new(TP_F32, 1, (int64_t[]){N}, pf, &pt), track(pt);
    tp_zeros(TP_F32, 1, (int64_t[]){N}, &mt), track(mt);
    tp_zeros(TP_F32, 1, (int64_t[]){N}, &vt), track(vt);
    const double lr = 0.05, wd = kind == 0 || kind >= 2 ? 0.02 : 0;
    for (int s = 1; s <= STEPS; s++) {
      for (int i = 0; i < N; i++) gf[i] = (float)(sin(1.7 * i + s) * (i + 1) * 0.1);
      tp_tensor *gt = NULL;
      tp_tensor_new(TP_F32, 1, (int64_t[]){N}, gf, &gt), track(gt);
      if (kind == 0) CHECK_OK(tp_sgd_step(pt, gt, mt, lr, 0.8, wd));
      else CHECK_OK(tp_adam_step(pt, gt, mt, vt, s, lr, 0.9, 0.99, 1e-6, wd, kind == 3));
      for (int i = 0; i < N; i++) {
        double g = gf[i];
        if (kind == 0) {
          g += wd * p[i];
          m[i] = 0.8 * m[i] + g;
          p[i] -= lr * m[i];
        } else {
          if (kind == 3) p[i] *= 1 - lr * wd;
          else g += wd * p[i];
          m[i] = 0.9 * m[i] + 0.1 * g;
          v[i] = 0.99 * v[i] + 0.01 * g * g;
          double mh = m[i] / (1 - pow(0.9, s)), vh = v[i] / (1 - pow(0.99, s));
          p[i] -= lr * mh / (sqrt(vh) + 1e-6);
        }
      }
    }
    float got[N];
    read4(pt, got, N);
    for (int i = 0; i < N; i++)
      CHECKF(fabs(got[i] - p[i]) <= 1e-5 + 1e-5 * fabs(p[i]), "kind %d: p[%d] = %.7g, reference %.7g", kind, i, got[i], p[i]);
  }
}

static void expect_err_opt(int line, tp_status s, const char *needle, tp_tensor *p) {
  checks++;
  if (s != TP_ERR_INVALID_ARG) FAILF_AT(line, "status %s, expected invalid argument", tp_status_name(s));
  else if (!strstr(tp_last_error(), needle)) FAILF_AT(line, "message '%s' lacks '%s'", tp_last_error(), needle);
  float now[2];
  tp_tensor_read(p, now, sizeof now);
  if (now[0] != 1 || now[1] != 2) FAILF_AT(line, "the failed step wrote the parameter (%g %g, was 1 2)", now[0], now[1]);
}
#define OPT_ERR(call, needle) expect_err_opt(__LINE__, (call), needle, p)

static void test_errors(void) {
  tp_tensor *p = F32((2), 1, 2), *g = F32((2), 1, 1), *z = F32((2), 0, 0), *z2 = F32((2), 0, 0);
  OPT_ERR(tp_sgd_step(p, F32((3), 1, 1, 1), NULL, 0.1, 0, 0), "grad has shape [3]");
  OPT_ERR(tp_sgd_step(p, I32((2), 1, 1), NULL, 0.1, 0, 0), "grad must be a contiguous float32");
  OPT_ERR(tp_sgd_step(p, g, NULL, -0.1, 0, 0), "lr -0.1 is out of range");
  OPT_ERR(tp_sgd_step(p, g, NULL, 0.1, 0.5, 0), "NULL momentum buffer");
  OPT_ERR(tp_sgd_step(p, g, z, 0.1, 1.5, 0), "momentum 1.5");
  OPT_ERR(tp_sgd_step(p, p, NULL, 0.1, 0, 0), "must not share storage");
  OPT_ERR(tp_adam_step(p, g, z, z2, 0, 0.1, 0.9, 0.999, 1e-8, 0, 0), "step 0");
  OPT_ERR(tp_adam_step(p, g, z, z2, 1, 0.1, 1.0, 0.999, 1e-8, 0, 0), "beta1 1");
  OPT_ERR(tp_adam_step(p, g, z, z2, 1, 0.1, 0.9, 0.999, NAN, 0, 1), "eps nan");
  OPT_ERR(tp_adam_step(p, g, z, z, 1, 0.1, 0.9, 0.999, 1e-8, 0, 1), "must not share storage");
  OPT_ERR(tp_adam_step(p, g, NULL, z2, 1, 0.1, 0.9, 0.999, 1e-8, 0, 1), "NULL exp_avg");
  /* a non-leaf parameter */
  tp_tensor *x = F32((2), 1, 2), *y = NULL;
  tp_tensor_set_requires_grad(x, 1);
  CHECK_OK(tp_mul(x, x, &y));
  track(y);
  checks++;
  if (tp_sgd_step(y, g, NULL, 0.1, 0, 0) != TP_ERR_INVALID_ARG || !strstr(tp_last_error(), "not a leaf"))
    FAILF("a non-leaf parameter: %s", tp_last_error());
  /* the step bumps x's version: the graph that saved x refuses to backward */
  tp_tensor *s = NULL;
  CHECK_OK(tp_sum(y, 0, NULL, 0, &s));
  track(s);
  uint64_t v0 = tp_tensor_version(x);
  CHECK_OK(tp_sgd_step(x, g, NULL, 0.1, 0, 0));
  CHECK(tp_tensor_version(x) == v0 + 1);
  checks++;
  if (tp_backward(s, NULL) != TP_ERR_RUNTIME || !strstr(tp_last_error(), "modified by an inplace operation"))
    FAILF("backward after the step: %s", tp_last_error());
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  size_t live0 = tp_live_tensors();
  static const op_test tests[] = {{"test_sgd_hand", test_sgd_hand}, {"test_adam_hand", test_adam_hand},
                                  {"test_reference", test_reference}, {"test_errors", test_errors}};
  run_op_tests(tests, sizeof tests / sizeof tests[0]);
  if (tp_live_tensors() != live0) FAILF("leak: %zu live tensors at the end, %zu at the start", tp_live_tensors(), live0);
  printf("test_optim: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
