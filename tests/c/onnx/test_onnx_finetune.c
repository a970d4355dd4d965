/* test_onnx_finetune.c - fine-tuning an ONNX model (issue 19, part 4):
 * initializers as trainable parameters, gradients through the model's graph,
 * an optimizer step, and the model saved back with the new weights.
 *
 * The model: y = Resize(Reshape(relu(x @ W + b), [1,1,2,4]), scales
 * [1,1,1,2], nearest), x [2,3] fed at run time. The loss sum(y*y) =
 * 2 sum(relu(h)^2), so dL/dh = 4 relu(h) (h > 0): the expected gradients
 * and the updated model's outputs are computed here in double. Resize's
 * scales are a float32 initializer whose value the import needs, so the
 * default trainable list leaves it out and naming it is an error. */
#include "onnx/onnx.h"
#include "onnx/tensor_pb.h"
#include "onnx_build.h"
#include "finetune_step.h"
#include "alloc_sweep.h"

#include <math.h>
#include "check.h"

static const float X[6] = {0.5f, -1.0f, 2.0f, 1.5f, 0.25f, -0.75f};
static const float W0[12] = {0.2f, -0.4f, 0.1f, 0.3f, 0.5f, 0.25f, -0.3f, 0.6f, -0.1f, 0.2f, 0.4f, -0.5f};
static const float B0[4] = {0.05f, -0.1f, 0.2f, 0.3f};

static void init(tp_pbw *g, const char *name, tp_dtype dt, int nd, const int64_t *shape, const void *data) {
  tp_tensor *t = NULL;
  void *b = NULL;
  size_t n = 0;
  if (tp_tensor_new(dt, nd, shape, data, &t) || tp_onnx_tensor_encode(t, name, &b, &n)) abort();
  tp_pbw_bytes(g, 5, b, n);
  tp_free_buffer(b);
  tp_tensor_release(t);
}

static uint8_t *build(size_t *len) {
  tp_pbw g = {0};
  const int64_t sw[2] = {3, 4}, sb[1] = {4}, s4[1] = {4};
  const int64_t shape[4] = {1, 1, 2, 4};
  const float scales[4] = {1, 1, 1, 2};
  node(&g, "MatMul", L("x", "W"), L("mm"), 0, NULL);
  node(&g, "Add", L("mm", "b"), L("h"), 0, NULL);
  node(&g, "Relu", L("h"), L("r"), 0, NULL);
  node(&g, "Reshape", L("r", "shape"), L("r4"), 0, NULL);
  node(&g, "Resize", L("r4", "", "scales"), L("y"), 0, NULL);
  init(&g, "W", TP_F32, 2, sw, W0);
  init(&g, "b", TP_F32, 1, sb, B0);
  init(&g, "shape", TP_I64, 1, s4, shape);
  init(&g, "scales", TP_F32, 1, s4, scales);
  value_info(&g, 11, "x", 1, "2,3");
  value_info(&g, 12, "y", 1, "1,1,2,8");
  return finish_opset(&g, 13, len);
}

/* h = x W + b in double; dh = 4 relu(h) (h > 0) */
static void forward_ref(const double *w, const double *b, double *h) {
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 4; j++) {
      double s = b[j];
      for (int k = 0; k < 3; k++) s += (double)X[i * 3 + k] * w[k * 4 + j];
      h[i * 4 + j] = s;
    }
}

static tp_status run1(tp_onnx_model *m, tp_tensor *x, tp_tensor **y) {
  int n = 0;
  tp_tensor *outs[2] = {0};
  tp_status s = tp_onnx_model_run(m, 1, &x, 2, outs, &n);
  *y = outs[0];
  if (!s && n != 1) FAILF("%d outputs", n);
  return s;
}

/* y (1x1x2x8) equals the nearest upsample of relu(h) */
static void check_y(const char *what, tp_tensor *y, const double *h) {
  float v[16];
  CHECK(tp_tensor_numel(y) == 16);
  CHECK_OK(tp_tensor_read(y, v, sizeof v));
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 8; j++) {
      double want = fmax(h[i * 4 + j / 2], 0);
      CHECKF(fabs(v[i * 8 + j] - want) <= 1e-6 + 1e-6 * fabs(want), "%s: y[%d,%d] = %.9g, expected %.9g", what, i,
             j, v[i * 8 + j], want);
    }
}

static void one_model(const char *backend) {
  size_t len = 0;
  uint8_t *bytes = build(&len);
  tp_onnx_model *m = NULL;
  CHECK_OK(tp_onnx_model_load(bytes, len, &m));
  if (backend) CHECK_OK(tp_onnx_model_use_backend(m, backend));
  const int64_t sx[2] = {2, 3};
  tp_tensor *x = NULL, *y = NULL, *loss = NULL, *sq = NULL;
  CHECK_OK(tp_tensor_new(TP_F32, 2, sx, X, &x));

  /* errors name the problem and leave the model as it was */
  CHECK(tp_onnx_model_set_trainable(m, 1, (const char *[]){"nope"}) == TP_ERR_INVALID_ARG);
  CHECKF(strstr(tp_last_error(), "no initializer named 'nope'") != NULL, "%s", tp_last_error());
  CHECK(tp_onnx_model_set_trainable(m, 1, (const char *[]){"shape"}) == TP_ERR_INVALID_ARG);
  CHECKF(strstr(tp_last_error(), "'shape' is int64") != NULL, "%s", tp_last_error());
  CHECK(tp_onnx_model_set_trainable(m, 2, (const char *[]){"W", "W"}) == TP_ERR_INVALID_ARG);
  CHECKF(strstr(tp_last_error(), "named twice") != NULL, "%s", tp_last_error());
  CHECK(tp_onnx_model_set_trainable(m, 2, (const char *[]){"W", "scales"}) == TP_ERR_UNSUPPORTED);
  CHECKF(strstr(tp_last_error(), "'scales' sets a shape or parameter") != NULL, "%s", tp_last_error());
  CHECK(tp_onnx_model_set_trainable(m, -1, NULL) == TP_ERR_INVALID_ARG);
  CHECK(tp_onnx_model_num_params(m) == 0);

  /* the model saved without parameters: the same bytes */
  uint8_t *same = NULL;
  size_t same_len = 0;
  CHECK_OK(tp_onnx_model_save(m, &same, &same_len));
  CHECK(same_len == len && same && !memcmp(same, bytes, len));
  tp_free_buffer(same);

  /* the default list: every float32 initializer the import allows */
  CHECK_OK(tp_onnx_model_set_trainable(m, 0, NULL));
  CHECK(tp_onnx_model_num_params(m) == 2);
  CHECK(!strcmp(tp_onnx_model_param_name(m, 0), "W") && !strcmp(tp_onnx_model_param_name(m, 1), "b"));
  CHECK(tp_onnx_model_param(m, 2) == NULL && tp_onnx_model_param_name(m, -1) == NULL);
  tp_tensor *W = tp_onnx_model_param(m, 0), *B = tp_onnx_model_param(m, 1);
  CHECK(W && B && tp_tensor_requires_grad(W) && tp_tensor_is_leaf(W) && tp_tensor_requires_grad(B));
  char *ex = NULL;
  CHECK_OK(tp_onnx_model_explain(m, &ex));
  CHECKF(ex && strstr(ex, "trainable: 2 parameters") && strstr(ex, " W b"), "%s", ex ? ex : "");
  tp_free_buffer(ex);

  double w[12], b[4], h[8];
  for (int i = 0; i < 12; i++) w[i] = W0[i];
  for (int i = 0; i < 4; i++) b[i] = B0[i];
  forward_ref(w, b, h);

  /* forward with the tape, loss = sum(y*y), backward */
  CHECK_OK(run1(m, x, &y));
  if (y) {
    check_y("forward", y, h);
    CHECK(tp_tensor_requires_grad(y));
    CHECK_OK(tp_mul(y, y, &sq));
    CHECK_OK(tp_sum(sq, 0, NULL, 0, &loss));
    CHECK_OK(tp_backward(loss, NULL));
  }
  double dw[12] = {0}, db[4] = {0};
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 4; j++) {
      double dh = h[i * 4 + j] > 0 ? 4 * h[i * 4 + j] : 0;
      db[j] += dh;
      for (int k = 0; k < 3; k++) dw[k * 4 + j] += (double)X[i * 3 + k] * dh;
    }
  check_grads_step(W, B, dw, db, w, b);
  tp_tensor_release(sq), tp_tensor_release(loss), tp_tensor_release(y);
  sq = loss = y = NULL;
  forward_ref(w, b, h);

  /* under no_grad the model runs (on its backend when it has one) with the new weights */
  int prev = tp_set_grad_enabled(0);
  CHECK_OK(run1(m, x, &y));
  if (y) {
    check_y("after the step (no_grad)", y, h);
    CHECK(!tp_tensor_requires_grad(y));
  }
  tp_tensor_release(y);
  y = NULL;
  tp_set_grad_enabled(prev);

  /* saved back: a plain model with the trained weights */
  uint8_t *saved = NULL;
  size_t saved_len = 0;
  CHECK_OK(tp_onnx_model_save(m, &saved, &saved_len));
  tp_onnx_model *m2 = NULL;
  CHECK_OK(tp_onnx_model_load(saved, saved_len, &m2));
  if (m2) {
    CHECK(tp_onnx_model_num_params(m2) == 0);
    CHECK_OK(run1(m2, x, &y));
    if (y) check_y("the saved model", y, h);
    tp_tensor_release(y);
    y = NULL;
  }
  tp_onnx_model_free(m2);
  /* the original bytes still give the original outputs */
  double w0[12], b0[4], h0[8];
  for (int i = 0; i < 12; i++) w0[i] = W0[i];
  for (int i = 0; i < 4; i++) b0[i] = B0[i];
  forward_ref(w0, b0, h0);
  CHECK_OK(tp_onnx_model_load(bytes, len, &m2));
  if (m2 && !run1(m2, x, &y) && y) check_y("the original model", y, h0);
  tp_tensor_release(y);
  tp_onnx_model_free(m2);
  /* a truncated model: a parse error at load, nothing to save */
  CHECK(tp_onnx_model_load(saved, saved_len / 2, &m2) != TP_OK);
  tp_free_buffer(saved);

  /* set_trainable again: fresh parameters from the model's initializers */
  CHECK_OK(tp_onnx_model_set_trainable(m, 1, (const char *[]){"b"}));
  CHECK(tp_onnx_model_num_params(m) == 1);
  tp_onnx_model_free(m);
  tp_tensor_release(x);
  tp_free_buffer(bytes);
}

/* The allocation sweep (alloc_sweep.h): every allocation of load,
 * set_trainable, a taped run, backward and save failed in turn. */
typedef struct sweep_res {
  float grad_b[4];
  size_t saved_len;
  int nparams;
} sweep_res;

static tp_status scenario(void *ud, void *resv) {
  const uint8_t *bytes = ((const uint8_t *const *)ud)[0];
  size_t len = *((const size_t *const *)ud)[1];
  sweep_res *res = resv;
  tp_onnx_model *m = NULL;
  tp_tensor *x = NULL, *outs[2] = {0}, *sq = NULL, *loss = NULL;
  uint8_t *saved = NULL;
  int n = 0;
  const int64_t sx[2] = {2, 3};
  sweep_begin();
  SWEEP_STEP("input", tp_tensor_new(TP_F32, 2, sx, X, &x));
  SWEEP_STEP("load", tp_onnx_model_load(bytes, len, &m));
  SWEEP_STEP("set_trainable", tp_onnx_model_set_trainable(m, 0, NULL));
  res->nparams = tp_onnx_model_num_params(m);
  SWEEP_STEP("run", tp_onnx_model_run(m, 1, &x, 2, outs, &n));
  SWEEP_STEP("mul", tp_mul(outs[0], outs[0], &sq));
  SWEEP_STEP("sum", tp_sum(sq, 0, NULL, 0, &loss));
  SWEEP_STEP("backward", tp_backward(loss, NULL));
  SWEEP_STEP("read grad", tp_tensor_read(tp_tensor_grad(tp_onnx_model_param(m, 1)), res->grad_b, sizeof res->grad_b));
  SWEEP_STEP("save", tp_onnx_model_save(m, &saved, &res->saved_len));
  sweep_step = "done";
cleanup:
  tp_free_buffer(saved);
  tp_tensor_release(loss);
  tp_tensor_release(sq);
  tp_tensor_release(outs[0]);
  tp_tensor_release(x);
  tp_onnx_model_free(m);
  return sweep_status;
}

int main(void) {
  size_t t0 = tp_live_tensors();
  one_model(NULL);
  one_model("stax");
  {
    size_t len = 0;
    uint8_t *bytes = build(&len);
    const void *ud[2] = {bytes, &len};
    sweep_case sc = {"finetune", scenario, NULL, sizeof(sweep_res), (void *)ud};
    sweep_res base;
    failures += sweep_run(&sc, &base, NULL);
    CHECK(base.nparams == 2 && base.saved_len > 0);
    tp_free_buffer(bytes);
  }
  CHECKF(tp_live_tensors() == t0, "%zu tensors live, %zu before", tp_live_tensors(), t0);
  printf("test_onnx_finetune: %d checks, %d failures\n", checks, failures);
  return failures ? 1 : 0;
}
