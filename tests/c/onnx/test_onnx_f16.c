/* test_onnx_f16.c - a float16 ONNX model on stax (issue 17,
 * docs/quantization.md "float16 models"): the importer, for a backend, lets
 * the activations stay float32 from node to node, and y is the float32
 * computation rounded once. The two casts (the graph input's and the
 * output's) are no kernels of their own: the input's is a float16 load
 * (here materialized for the GEMM's A by a pointwise kernel), the output's
 * the float16 store of the last pointwise kernel. Natively on every ISA table:
 *   - stax within one float16 ulp of a double oracle rounded once
 *     (tp_f64_to_f16 of the exact formula on the float16 inputs), and
 *     never farther from it than the graph executor, which rounds each
 *     node's output as ONNX's float16 kernels do;
 *   - the plan's kernels (stax.profile): no op kernel (no cast kernel),
 *     the float16 MatMul weight packed as float16 panels;
 *   - a bad input (float32 for float16) is refused by name and the model
 *     stays usable.
 * Inputs are fed at run time. */
#include "check.h"
#include "core/num.h"
#include "onnx/onnx.h"
#include "onnx_build.h"
#include "runtime/dispatch.h"

#include <math.h>

enum { S = 9, D = 16, F = 24 };

static void init_f16(tp_pbw *g, const char *name, int nd, const int64_t *dims, const uint16_t *v, int64_t n) {
  tp_pbw t = {0};
  for (int i = 0; i < nd; i++) tp_pbw_varint(&t, 1, (uint64_t)dims[i]);
  tp_pbw_varint(&t, 2, 10); /* FLOAT16 */
  str(&t, 8, name);
  tp_pbw_bytes(&t, 9, v, (size_t)n * 2);
  sub(g, 5, &t);
}

static uint16_t W[D * F], B[F], C[F];
static uint16_t X[S * D];

/* y = sigmoid(tanh(x @ W + B) * C) reshaped [S, F] -> [S*F] -> [S, F], then * 2 */
static uint8_t *model(size_t *len) {
  tp_pbw g = {0};
  node(&g, "MatMul", L("x", "W"), L("m"), 0, NULL);
  node(&g, "Add", L("m", "B"), L("a"), 0, NULL);
  node(&g, "Tanh", L("a"), L("t"), 0, NULL);
  node(&g, "Reshape", L("t", "flat"), L("r"), 0, NULL);
  node(&g, "Reshape", L("r", "back"), L("r2"), 0, NULL);
  node(&g, "Mul", L("r2", "C"), L("u"), 0, NULL);
  node(&g, "Sigmoid", L("u"), L("s"), 0, NULL);
  node(&g, "Add", L("s", "s"), L("y"), 0, NULL);
  int64_t wd[2] = {D, F}, bd[1] = {F};
  init_f16(&g, "W", 2, wd, W, D * F);
  init_f16(&g, "B", 1, bd, B, F);
  init_f16(&g, "C", 1, bd, C, F);
  {
    tp_pbw t = {0};
    int64_t v[1] = {S * F}, v2[2] = {S, F};
    tp_pbw_varint(&t, 1, 1);
    tp_pbw_varint(&t, 2, 7);
    str(&t, 8, "flat");
    tp_pbw_bytes(&t, 9, v, sizeof v);
    sub(&g, 5, &t);
    tp_pbw t2 = {0};
    tp_pbw_varint(&t2, 1, 2);
    tp_pbw_varint(&t2, 2, 7);
    str(&t2, 8, "back");
    tp_pbw_bytes(&t2, 9, v2, sizeof v2);
    sub(&g, 5, &t2);
  }
  char xd[32];
  snprintf(xd, sizeof xd, "%d,%d", S, D);
  value_info(&g, 11, "x", 10, xd);
  value_info(&g, 12, "y", 10, NULL);
  return finish(&g, len);
}

static double oracle(int i, int j) {
  double acc = tp_f16_to_f32(B[j]);
  for (int k = 0; k < D; k++) acc += (double)tp_f16_to_f32(X[i * D + k]) * tp_f16_to_f32(W[k * F + j]);
  double u = tanh(acc) * tp_f16_to_f32(C[j]);
  return 2.0 / (1.0 + exp(-u));
}

/* |a - b| in float16 ulps of b (2^-10 relative, at least 2^-24) */
static double ulps(float a, double b) { return fabs(a - b) / fmax(fabs(b) * 0x1p-10, 0x1p-24); }

static tp_tensor *run(tp_onnx_model *m, tp_tensor *x) {
  tp_tensor *out[1] = {0};
  int n = 0;
  if (tp_onnx_model_run(m, 1, &x, 1, out, &n) != TP_OK || n != 1) {
    FAILF("run: %s", tp_last_error());
    return NULL;
  }
  CHECK(tp_tensor_dtype(out[0]) == TP_F16);
  return out[0];
}

static void one_isa(const char *isa, const uint8_t *bytes, size_t len) {
  tp_onnx_model *stax = NULL, *eager = NULL;
  CHECK_OK(tp_onnx_model_load(bytes, len, &stax));
  CHECK_OK(tp_onnx_model_load(bytes, len, &eager));
  if (!stax || !eager) return;
  CHECK_OK(tp_onnx_model_use_backend(stax, "stax"));
  CHECK_OK(tp_onnx_model_set_backend_option(stax, "stax.profile", tp_value_bool(1)));
  int64_t xs[2] = {S, D};
  tp_tensor *x = NULL;
  CHECK_OK(tp_tensor_new(TP_F16, 2, xs, X, &x));
  tp_tensor *ys = run(stax, x), *ye = run(eager, x);
  if (ys && ye) {
    const uint16_t *hs = tp_tensor_ptr(ys), *he = tp_tensor_ptr(ye);
    double ms = 0, me = 0;
    for (int i = 0; i < S; i++)
      for (int j = 0; j < F; j++) {
        double o = oracle(i, j), want = tp_f16_to_f32(tp_f64_to_f16(o));
        double us = ulps(tp_f16_to_f32(hs[i * F + j]), want), ue = ulps(tp_f16_to_f32(he[i * F + j]), o);
        if (us > 1) FAILF("%s y[%d,%d] = %g, the oracle rounded once %g (%g ulps)", isa, i, j, tp_f16_to_f32(hs[i * F + j]), want, us);
        ms = fmax(ms, ulps(tp_f16_to_f32(hs[i * F + j]), o)), me = fmax(me, ue);
        checks++;
      }
    if (ms > me) FAILF("%s stax %g ulps from the oracle, the per-node rounding %g", isa, ms, me);
    printf("%s: max ulps from the double oracle: stax %.3f, eager (rounding per node) %.3f\n", isa, ms, me);
  }
  char *ex = NULL;
  CHECK_OK(tp_onnx_model_explain(stax, &ex));
  if (ex) {
    int casts = 0, ops = 0;
    for (const char *p = ex; (p = strstr(p, " op ")); p += 4) ops++;
    for (const char *p = ex; (p = strstr(p, " op cast ")); p += 9) casts++;
    if (casts != 0 || ops != 0) FAILF("%s: %d cast kernels, %d op kernels (want none):\n%s", isa, casts, ops, ex);
    if (!strstr(ex, "B f16")) FAILF("%s: no float16-panel GEMM:\n%s", isa, ex);
    tp_free_buffer(ex);
  }
  /* float32 where the model says float16: refused by name, the model still runs */
  tp_tensor *bad = NULL, *out[1] = {0};
  int n = 0;
  CHECK_OK(tp_tensor_empty(TP_F32, 2, xs, &bad));
  if (bad) memset(tp_tensor_ptr(bad), 0, sizeof(float) * S * D);
  CHECK(tp_onnx_model_run(stax, 1, &bad, 1, out, &n) == TP_ERR_INVALID_ARG);
  CHECK(strstr(tp_last_error(), "input 'x' must be float16, got float32") != NULL);
  tp_tensor *again = run(stax, x);
  if (again && ys) CHECK(!memcmp(tp_tensor_ptr(again), tp_tensor_ptr(ys), 2 * S * F));
  tp_tensor_release(again);
  tp_tensor_release(bad);
  tp_tensor_release(ys);
  tp_tensor_release(ye);
  tp_tensor_release(x);
  tp_onnx_model_free(stax);
  tp_onnx_model_free(eager);
}

int main(void) {
  for (int i = 0; i < D * F; i++) W[i] = tp_f64_to_f16(sin(i * 0.37) * 0.6);
  for (int i = 0; i < F; i++) B[i] = tp_f64_to_f16(cos(i * 1.3) * 0.3), C[i] = tp_f64_to_f16(1.5 + sin(i * 0.7));
  for (int i = 0; i < S * D; i++) X[i] = tp_f64_to_f16(sin(i * 0.91 + 0.2) * 1.7);
  size_t len = 0;
  uint8_t *bytes = model(&len);
  static const char *const isas[] = {"avx512", "avx2", "sse2", "generic"};
  for (int t = 0; t < 4 && bytes; t++) {
    if (tp_set_isa(isas[t]) != TP_OK) {
      printf("skip ISA %s\n", isas[t]);
      tp_clear_error();
      continue;
    }
    one_isa(isas[t], bytes, len);
  }
  tp_set_isa("best");
  tp_free_buffer(bytes);
  printf("test_onnx_f16: %d checks, %d failures\n", checks, failures);
  return failures ? 1 : 0;
}
