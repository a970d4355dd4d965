/* test_onnx_finetune_f16.c - fine-tuning an ONNX model's float16
 * initializers (issue 19, part 4; docs/training.md "Fine-tuning an ONNX
 * model"): float32 master copies trained, saved back as float16.
 *
 * The model: x (float32 [2,3]) -> Cast to float16 -> MatMul(W float16
 * [3,4]) -> Add(b float16 [4]) -> Mul(s float16 [4]) -> Relu -> Cast to
 * float16 -> y (float16). The default trainable list takes the three
 * float16 initializers; with W and b trainable (s a float16 constant) the
 * parameters are float32 tensors holding the float16 values exactly, the
 * model computes in float32 (nothing rounded to float16, the Cast
 * included) so the tape reaches them: the gradients of sum(y*y) equal a
 * double reference on the same values, an SGD step moves the master
 * copies, evaluation under no_grad reads them (eager and stax), and the
 * saved model has W and b as float16 again (the same bytes in size, the
 * values the master copies rounded to nearest even), which a plain load
 * runs in float16 as the original: each node rounded once (within one
 * float16 ulp of a double oracle). Nothing leaks. */
#include "check.h"
#include "core/num.h"
#include "onnx/onnx.h"
#include "onnx/tensor_pb.h"
#include "onnx_build.h"
#include "finetune_step.h"
#include <math.h>
#include <string.h>

static const float X[6] = {0.5f, -1.0f, 2.0f, 1.5f, 0.25f, -0.75f}; /* exact in float16 */
static const double W0[12] = {0.2, -0.4, 0.1, 0.3, 0.5, 0.25, -0.3, 0.6, -0.1, 0.2, 0.4, -0.5};
static const double B0[4] = {0.05, -0.1, 0.2, 0.3};
static const double S0[4] = {1.5, -0.7, 0.9, 2.1};

static double r16(double v) { return tp_f16_to_f32(tp_f64_to_f16(v)); }

static void init16(tp_pbw *g, const char *name, int nd, const int64_t *shape, const double *v, int n) {
  uint16_t h[16];
  for (int i = 0; i < n; i++) h[i] = tp_f64_to_f16(v[i]);
  tp_tensor *t = NULL;
  void *b = NULL;
  size_t len = 0;
  if (tp_tensor_new(TP_F16, nd, shape, h, &t) || tp_onnx_tensor_encode(t, name, &b, &len)) abort();
  tp_pbw_bytes(g, 5, b, len);
  tp_free_buffer(b);
  tp_tensor_release(t);
}

static uint8_t *build(size_t *len) {
  tp_pbw g = {0};
  const int64_t sw[2] = {3, 4}, sb[1] = {4};
  tp_pbw to16 = attr_int("to", 10);
  node(&g, "Cast", L("x"), L("x16"), 1, &to16);
  node(&g, "MatMul", L("x16", "W"), L("mm"), 0, NULL);
  tp_pbw to16b = attr_int("to", 10);
  node(&g, "Add", L("mm", "b"), L("a"), 0, NULL);
  node(&g, "Mul", L("a", "s"), L("h"), 0, NULL);
  node(&g, "Relu", L("h"), L("r"), 0, NULL);
  node(&g, "Cast", L("r"), L("y"), 1, &to16b);
  init16(&g, "W", 2, sw, W0, 12);
  init16(&g, "b", 1, sb, B0, 4);
  init16(&g, "s", 1, sb, S0, 4);
  value_info(&g, 11, "x", 1, "2,3");
  value_info(&g, 12, "y", 10, "2,4");
  return finish_opset(&g, 13, len);
}

/* h = (x W + b) s in double, s the float16 constant */
static void forward_ref(const double *w, const double *b, double *h) {
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 4; j++) {
      double s = b[j];
      for (int k = 0; k < 3; k++) s += (double)X[i * 3 + k] * w[k * 4 + j];
      h[i * 4 + j] = s * r16(S0[j]);
    }
}

static tp_tensor *run1(tp_onnx_model *m, tp_tensor *x) {
  int n = 0;
  tp_tensor *outs[2] = {0};
  CHECK_OK(tp_onnx_model_run(m, 1, &x, 2, outs, &n));
  CHECK(n == 1 || !outs[0]);
  return outs[0];
}

static void check_f32(const char *what, tp_tensor *y, const double *h) {
  float v[8];
  CHECKF(tp_tensor_dtype(y) == TP_F32, "%s: y is %s, expected float32 (the model computes in float32 while trained)",
         what, tp_dtype_name(tp_tensor_dtype(y)));
  if (tp_tensor_dtype(y) != TP_F32) return;
  CHECK_OK(tp_tensor_read(y, v, sizeof v));
  for (int i = 0; i < 8; i++) {
    double want = fmax(h[i], 0);
    CHECKF(fabs(v[i] - want) <= 1e-6 + 1e-6 * fabs(want), "%s: y[%d] = %.9g, expected %.9g", what, i, v[i], want);
  }
}

static void one_model(const char *backend) {
  size_t len = 0;
  uint8_t *bytes = build(&len);
  tp_onnx_model *m = NULL;
  CHECK_OK(tp_onnx_model_load(bytes, len, &m));
  if (!m) return;
  if (backend) CHECK_OK(tp_onnx_model_use_backend(m, backend));
  tp_tensor *x = NULL, *y = NULL, *sq = NULL, *loss = NULL;
  CHECK_OK(tp_tensor_new(TP_F32, 2, (int64_t[]){2, 3}, X, &x));

  /* the default list takes the float16 initializers: float32 master copies */
  CHECK_OK(tp_onnx_model_set_trainable(m, 0, NULL));
  CHECK(tp_onnx_model_num_params(m) == 3);
  CHECK_OK(tp_onnx_model_set_trainable(m, 2, (const char *[]){"W", "b"}));
  CHECK(tp_onnx_model_num_params(m) == 2);
  tp_tensor *W = tp_onnx_model_param(m, 0), *B = tp_onnx_model_param(m, 1);
  CHECK(W && B && tp_tensor_dtype(W) == TP_F32 && tp_tensor_dtype(B) == TP_F32 && tp_tensor_requires_grad(W));
  double w[12], b[4], h[8];
  for (int i = 0; i < 12; i++) w[i] = r16(W0[i]);
  for (int i = 0; i < 4; i++) b[i] = r16(B0[i]);
  if (W && B) {
    float wf[12], bf[4];
    CHECK_OK(tp_tensor_read(W, wf, sizeof wf));
    CHECK_OK(tp_tensor_read(B, bf, sizeof bf));
    for (int i = 0; i < 12; i++) CHECKF(wf[i] == (float)w[i], "master W[%d] = %.9g, the float16 value %.9g", i, wf[i], w[i]);
    for (int i = 0; i < 4; i++) CHECKF(bf[i] == (float)b[i], "master b[%d] = %.9g, the float16 value %.9g", i, bf[i], b[i]);
  }
  forward_ref(w, b, h);

  /* forward with the tape, loss = sum(y*y), backward: dh = 2 relu(h) */
  y = run1(m, x);
  if (y) {
    check_f32("forward", y, h);
    CHECK(tp_tensor_requires_grad(y));
    CHECK_OK(tp_mul(y, y, &sq));
    CHECK_OK(tp_sum(sq, 0, NULL, 0, &loss));
    CHECK_OK(tp_backward(loss, NULL));
  }
  double dw[12] = {0}, db[4] = {0};
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 4; j++) {
      double dh = h[i * 4 + j] > 0 ? 2 * h[i * 4 + j] * r16(S0[j]) : 0; /* through the Mul by s */
      db[j] += dh;
      for (int k = 0; k < 3; k++) dw[k * 4 + j] += (double)X[i * 3 + k] * dh;
    }
  check_grads_step(W, B, dw, db, w, b);
  tp_tensor_release(sq), tp_tensor_release(loss), tp_tensor_release(y);
  sq = loss = y = NULL;
  forward_ref(w, b, h);

  /* no_grad (the backend when there is one) reads the new master copies */
  int prev = tp_set_grad_enabled(0);
  y = run1(m, x);
  if (y) check_f32("after the step (no_grad)", y, h);
  tp_tensor_release(y);
  y = NULL;
  tp_set_grad_enabled(prev);

  /* saved back as float16: the same size as the original (float32 would
   * add 32 bytes), the master copies rounded */
  uint8_t *saved = NULL;
  size_t saved_len = 0;
  CHECK_OK(tp_onnx_model_save(m, &saved, &saved_len));
  CHECKF(saved_len == len, "saved %zu bytes, the original %zu: the initializers did not stay float16", saved_len, len);
  tp_onnx_model *m2 = NULL;
  if (saved) CHECK_OK(tp_onnx_model_load(saved, saved_len, &m2));
  if (m2) {
    /* a plain load runs in float16: each node rounded once */
    if (backend) CHECK_OK(tp_onnx_model_use_backend(m2, backend));
    y = run1(m2, x);
    if (y) {
      CHECKF(tp_tensor_dtype(y) == TP_F16, "the saved model gives %s, expected float16", tp_dtype_name(tp_tensor_dtype(y)));
      uint16_t hv[8];
      if (tp_tensor_dtype(y) == TP_F16) CHECK_OK(tp_tensor_read(y, hv, sizeof hv));
      for (int i = 0; i < 2 && tp_tensor_dtype(y) == TP_F16; i++)
        for (int j = 0; j < 4; j++) {
          double mm = 0;
          for (int k = 0; k < 3; k++) mm += (double)X[i * 3 + k] * r16(w[k * 4 + j]);
          double want = fmax(r16(r16(r16(mm) + r16(b[j])) * r16(S0[j])), 0), got = tp_f16_to_f32(hv[i * 4 + j]);
          double ulp = fmax(ldexp(fabs(want), -10), ldexp(1, -24));
          CHECKF(fabs(got - want) <= ulp, "saved model y[%d,%d] = %.9g, the float16 oracle %.9g", i, j, got, want);
        }
    }
    tp_tensor_release(y);
    y = NULL;
    /* its initializers are the master copies rounded to float16 */
    CHECK_OK(tp_onnx_model_set_trainable(m2, 2, (const char *[]){"W", "b"}));
    tp_tensor *W2 = tp_onnx_model_param(m2, 0), *B2 = tp_onnx_model_param(m2, 1);
    if (W2 && B2) {
      float wf[12], bf[4];
      CHECK_OK(tp_tensor_read(W2, wf, sizeof wf));
      CHECK_OK(tp_tensor_read(B2, bf, sizeof bf));
      for (int i = 0; i < 12; i++) CHECKF(wf[i] == (float)r16(w[i]), "saved W[%d] = %.9g, expected %.9g", i, wf[i], r16(w[i]));
      for (int i = 0; i < 4; i++) CHECKF(bf[i] == (float)r16(b[i]), "saved b[%d] = %.9g, expected %.9g", i, bf[i], r16(b[i]));
    }
  }
  tp_onnx_model_free(m2);
  tp_free_buffer(saved);
  tp_tensor_release(x);
  tp_onnx_model_free(m);
  tp_free_buffer(bytes);
}

/* b := v (4 float32 values), outside the tape, as a user's no_grad assign */
static void assign4(tp_tensor *B, const float *v) {
  tp_tensor *src = NULL;
  CHECK_OK(tp_tensor_new(TP_F32, 1, (int64_t[]){4}, v, &src));
  int prev = tp_set_grad_enabled(0);
  if (src && B) CHECK_OK(tp_tensor_assign(B, src));
  tp_set_grad_enabled(prev);
  tp_tensor_release(src);
}

/* A master copy that left float16's range (|v| > 65504 rounds to
 * infinity) is not saved as an infinite weight: save fails naming the
 * initializer, the element and the value, and the model stays usable (a
 * value back in range saves). A master copy that is already infinite or
 * NaN is saved as it is (float16 has both). */
static void out_of_range(void) {
  size_t len = 0;
  uint8_t *bytes = build(&len);
  tp_onnx_model *m = NULL;
  CHECK_OK(tp_onnx_model_load(bytes, len, &m));
  if (!m) return;
  CHECK_OK(tp_onnx_model_set_trainable(m, 2, (const char *[]){"W", "b"}));
  tp_tensor *W = tp_onnx_model_param(m, 0), *B = tp_onnx_model_param(m, 1);
  float wf[12], bf[4];
  if (W && B) {
    CHECK_OK(tp_tensor_read(W, wf, sizeof wf));
    CHECK_OK(tp_tensor_read(B, bf, sizeof bf));
  }
  static const float big[3] = {65520.0f, -1.0e5f, 3.0e38f}; /* 65520 is the first value that rounds to inf */
  for (int k = 0; W && B && k < 3; k++) {
    float v[4];
    memcpy(v, bf, sizeof v);
    v[2] = big[k];
    assign4(B, v);
    uint8_t *saved = NULL;
    size_t saved_len = 0;
    tp_status st = tp_onnx_model_save(m, &saved, &saved_len);
    const char *msg = tp_last_error();
    CHECKF(st == TP_ERR_VALUE && !saved && strstr(msg, "'b'") && strstr(msg, "float16") && strstr(msg, "[2]"),
           "b[2] = %g saved as float16: status %d, error '%s'", big[k], (int)st, msg);
    tp_free_buffer(saved);
  }
  /* back in range (65504, the largest float16, and a value that rounds
   * down to it): it saves */
  float v[4] = {65504.0f, -65519.0f, bf[2], bf[3]};
  assign4(B, v);
  uint8_t *saved = NULL;
  size_t saved_len = 0;
  CHECK_OK(tp_onnx_model_save(m, &saved, &saved_len));
  CHECKF(saved_len == len, "saved %zu bytes, the original %zu", saved_len, len);
  tp_free_buffer(saved);
  tp_onnx_model_free(m);
  tp_free_buffer(bytes);
}

/* The same for bfloat16: a master copy that rounds to infinity there
 * (|v| >= 0x1.ffp127; the largest bfloat16 is 0x1.fep127) is refused naming
 * the initializer, the element and the dtype; the largest value and one
 * that rounds down to it save, and read back as that value. */
static void out_of_range_bf16(void) {
  tp_pbw g = {0};
  const int64_t sb[1] = {4};
  tp_pbw tob = attr_int("to", 16);
  node(&g, "Cast", L("x"), L("xb"), 1, &tob);
  node(&g, "Add", L("xb", "b"), L("y"), 0, NULL);
  uint16_t h[4] = {0x3f80, 0x4000, 0xbf80, 0x3f00}; /* 1, 2, -1, 0.5 */
  tp_tensor *t = NULL;
  void *tb = NULL;
  size_t tl = 0;
  if (tp_tensor_new(TP_BF16, 1, sb, h, &t) || tp_onnx_tensor_encode(t, "b", &tb, &tl)) abort();
  tp_pbw_bytes(&g, 5, tb, tl);
  tp_free_buffer(tb);
  tp_tensor_release(t);
  value_info(&g, 11, "x", 1, "4");
  value_info(&g, 12, "y", 16, "4");
  size_t len = 0;
  uint8_t *bytes = finish_opset(&g, 13, &len);
  tp_onnx_model *m = NULL;
  CHECK_OK(tp_onnx_model_load(bytes, len, &m));
  if (!m) return;
  CHECK_OK(tp_onnx_model_set_trainable(m, 1, (const char *[]){"b"}));
  tp_tensor *B = tp_onnx_model_param(m, 0);
  static const float vals[4] = {0x1.ffp127f, -0x1.fffffep127f, 0x1.fep127f, 0x1.fefffep127f};
  for (int k = 0; B && k < 4; k++) {
    assign4(B, (const float[]){1.0f, 2.0f, vals[k], 0.5f});
    uint8_t *saved = NULL;
    size_t saved_len = 0;
    tp_status st = tp_onnx_model_save(m, &saved, &saved_len);
    const char *msg = tp_last_error();
    if (k < 2) {
      CHECKF(st == TP_ERR_VALUE && !saved && strstr(msg, "'b'") && strstr(msg, "bfloat16") && strstr(msg, "[2]"),
             "b[2] = %g saved as bfloat16: status %d, error '%s'", vals[k], (int)st, msg);
    } else {
      CHECK_OK(st);
      tp_onnx_model *m2 = NULL;
      if (saved) CHECK_OK(tp_onnx_model_load(saved, saved_len, &m2));
      if (m2) { /* y = x + b with x = 0: b as saved, widened */
        tp_tensor *x = NULL, *outs[1] = {0}, *y32 = NULL;
        int n = 0;
        CHECK_OK(tp_tensor_new(TP_F32, 1, sb, (float[]){0, 0, 0, 0}, &x));
        CHECK_OK(tp_onnx_model_run(m2, 1, &x, 1, outs, &n));
        if (outs[0]) CHECK_OK(tp_to_dtype(outs[0], TP_F32, &y32));
        float y[4] = {0};
        if (y32) CHECK_OK(tp_tensor_read(y32, y, sizeof y));
        CHECKF(y[2] == 0x1.fep127f && y[0] == 1.0f && y[3] == 0.5f, "saved b = [%g %g %g %g]", y[0], y[1], y[2], y[3]);
        tp_tensor_release(y32);
        tp_tensor_release(outs[0]);
        tp_tensor_release(x);
      }
      tp_onnx_model_free(m2);
    }
    tp_free_buffer(saved);
  }
  tp_onnx_model_free(m);
  tp_free_buffer(bytes);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  size_t live0 = tp_live_tensors();
  one_model(NULL);
  one_model("stax");
  out_of_range();
  out_of_range_bf16();
  tp_reset();
  if (tp_live_tensors() != live0) FAILF("leak: %zu live tensors at the end, %zu at the start", tp_live_tensors(), live0);
  printf("test_onnx_finetune_f16: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
