/* test_loss.c - the losses (src/ops/loss.c) against hand-computed values
 * and a double-precision reference of PyTorch's definitions (mse;
 * cross-entropy with ignore_index and label smoothing, every reduction),
 * their gradients (autograd through the ops) against central finite
 * differences of that reference, and every bad argument. */
#include "op_expect.h"

static void test_mse(void) {
  tp_tensor *p = F32((3), 1, 2, 3), *t = F32((3), 1, 0, 5), *y = NULL;
  CHECK_OK(tp_mse_loss(p, t, 1, &y));
  track(y);
  EXPECT0(y, TP_F32, 8.0 / 3);
  CHECK_OK(tp_mse_loss(p, t, 2, &y));
  track(y);
  EXPECT0(y, TP_F32, 8);
  CHECK_OK(tp_mse_loss(p, t, 0, &y));
  track(y);
  EXPECT(y, TP_F32, (3), 0, 4, 4);
  tp_tensor_set_requires_grad(p, 1);
  CHECK_OK(tp_mse_loss(p, t, 1, &y));
  track(y);
  CHECK_OK(tp_backward(y, NULL));
  EXPECT(tp_tensor_grad(p), TP_F32, (3), 0, 4.0 / 3, -4.0 / 3); /* 2 (p - t) / 3 */
}

enum { N = 5, C = 4 };
static const int64_t labels[N] = {2, -100, 0, 3, 1};

/* PyTorch's cross_entropy in double */
static double ce_ref(const double *x, double eps, int reduction, double *per) {
  double total = 0;
  int cnt = 0;
  for (int n = 0; n < N; n++) {
    double m = x[n * C];
    for (int c = 1; c < C; c++) m = fmax(m, x[n * C + c]);
    double s = 0;
    for (int c = 0; c < C; c++) s += exp(x[n * C + c] - m);
    double lse = m + log(s), smooth = 0;
    for (int c = 0; c < C; c++) smooth += lse - x[n * C + c];
    double l = labels[n] == -100 ? 0 : (1 - eps) * (lse - x[n * C + labels[n]]) + eps * smooth / C;
    if (per) per[n] = l;
    total += l;
    cnt += labels[n] != -100;
  }
  return reduction == 1 ? total / cnt : total;
}

static void test_cross_entropy(void) {
  double x[N * C];
  float xf[N * C];
  for (int i = 0; i < N * C; i++) xf[i] = (float)(x[i] = sin(1.3 * i + 0.5) * 2);
  tp_tensor *t = I64((5), 2, -100, 0, 3, 1);
  for (int si = 0; si < 2; si++) {
    double eps = si ? 0.1 : 0;
    for (int red = 0; red < 3; red++) {
      tp_tensor *lg = NULL, *y = NULL;
      tp_tensor_new(TP_F32, 2, (int64_t[]){N, C}, xf, &lg), track(lg);
      tp_tensor_set_requires_grad(lg, 1);
      CHECK_OK(tp_cross_entropy(lg, t, -100, eps, red, &y));
      if (!y) continue;
      track(y);
      double per[N];
      double want = ce_ref(x, eps, red, per);
      if (red == 0) {
        float got[N];
        tp_tensor_read(y, got, sizeof got);
        for (int n = 0; n < N; n++) CHECKF(fabs(got[n] - per[n]) < 1e-5, "eps %g: loss[%d] %g vs %g", eps, n, got[n], per[n]);
        continue;
      }
      double got;
      tp_tensor_item(y, &got);
      CHECKF(fabs(got - want) < 1e-5, "eps %g reduction %d: %g vs %g", eps, red, got, want);
      CHECK_OK(tp_backward(y, NULL));
      float g[N * C];
      tp_tensor_read(tp_tensor_grad(lg), g, sizeof g);
      for (int i = 0; i < N * C; i++) {
        double xp[N * C], xm[N * C];
        memcpy(xp, x, sizeof x), memcpy(xm, x, sizeof x);
        xp[i] += 1e-6, xm[i] -= 1e-6;
        double num = (ce_ref(xp, eps, red, NULL) - ce_ref(xm, eps, red, NULL)) / 2e-6;
        CHECKF(fabs(g[i] - num) < 1e-5 + 1e-4 * fabs(num), "eps %g reduction %d: dL/dx[%d] %g vs %g", eps, red, i, g[i], num);
      }
    }
  }
  /* int32 targets give the same loss */
  tp_tensor *lg = NULL, *y = NULL;
  tp_tensor_new(TP_F32, 2, (int64_t[]){N, C}, xf, &lg), track(lg);
  CHECK_OK(tp_cross_entropy(lg, I32((5), 2, -100, 0, 3, 1), -100, 0, 1, &y));
  track(y);
  EXPECT0(y, TP_F32, ce_ref(x, 0, 1, NULL));
}

static void expect_loss_err(int line, tp_status s, const char *needle) {
  checks++;
  if (s != TP_ERR_INVALID_ARG) FAILF_AT(line, "status %s, expected invalid argument", tp_status_name(s));
  else if (!strstr(tp_last_error(), needle)) FAILF_AT(line, "message '%s' lacks '%s'", tp_last_error(), needle);
}
#define LOSS_ERR(call, needle) expect_loss_err(__LINE__, (call), needle)

static void test_errors(void) {
  tp_tensor *y = NULL, *lg = EMPTY(TP_F32, (2, 3));
  LOSS_ERR(tp_mse_loss(F32((2), 1, 2), F32((3), 1, 2, 3), 1, &y), "must have the same shape");
  LOSS_ERR(tp_mse_loss(F32((2), 1, 2), F32((2), 1, 2), 3, &y), "reduction 3");
  LOSS_ERR(tp_cross_entropy(lg, I64((2), 0, 3), -100, 0, 1, &y), "target[1] = 3 is not a class in [0, 3)");
  LOSS_ERR(tp_cross_entropy(lg, I64((2), 0, -1), -100, 0, 1, &y), "target[1] = -1");
  LOSS_ERR(tp_cross_entropy(lg, I64((3), 0, 1, 2), -100, 0, 1, &y), "logits must be [N, C] and target [N]");
  LOSS_ERR(tp_cross_entropy(lg, F32((2), 0, 1), -100, 0, 1, &y), "target must be int32 or int64");
  LOSS_ERR(tp_cross_entropy(lg, I64((2), 0, 1), -100, 1.5, 1, &y), "label_smoothing 1.5");
  CHECK(y == NULL);
  /* all targets ignored: NaN, as PyTorch */
  CHECK_OK(tp_cross_entropy(lg, I64((2), -100, -100), -100, 0, 1, &y));
  track(y);
  double v = 0;
  tp_tensor_item(y, &v);
  CHECK(isnan(v));
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  size_t live0 = tp_live_tensors();
  static const op_test tests[] = {{"test_mse", test_mse}, {"test_cross_entropy", test_cross_entropy}, {"test_errors", test_errors}};
  run_op_tests(tests, sizeof tests / sizeof tests[0]);
  if (tp_live_tensors() != live0) FAILF("leak: %zu live tensors at the end, %zu at the start", tp_live_tensors(), live0);
  printf("test_loss: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
