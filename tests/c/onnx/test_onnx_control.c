/* test_onnx_control.c - ONNX Scan and Loop through tp_onnx_model, every
 * input fed at run time: tiny ModelProtos built here with the protobuf
 * writer, results checked against hand-computed values; the bounds
 * (iterations unrolled at import) and the refused data-dependent Loop exit
 * are clear errors that leave the model usable. */
#include "check.h"
#include "onnx/pb.h"
#include "lower/lower.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "onnx_build.h" /* sub, str, value_info, attr_*, node, L(), finish_opset, finish */

static tp_onnx_model *load(uint8_t *bytes, size_t len) {
  tp_onnx_model *m = NULL;
  CHECK_OK(tp_onnx_model_load(bytes, len, &m));
  tp_free_buffer(bytes);
  return m;
}

static tp_tensor *f32(int nd, const int64_t *sh, const float *v) {
  tp_tensor *t = NULL;
  CHECK_OK(tp_tensor_new(TP_F32, nd, sh, v, &t));
  return t;
}

static tp_tensor *i64(int64_t v) {
  tp_tensor *t = NULL;
  CHECK_OK(tp_tensor_new(TP_I64, 0, NULL, &v, &t));
  return t;
}

static int same(tp_tensor *t, int nd, const int64_t *sh, const float *want) {
  if (!t || tp_tensor_ndim(t) != nd) return 0;
  int64_t n = 1;
  for (int i = 0; i < nd; i++) {
    if (tp_tensor_shape(t)[i] != sh[i]) return 0;
    n *= sh[i];
  }
  float got[64];
  if (n > 64) return 0;
  tp_tensor_read(t, got, sizeof(float) * (size_t)n);
  int ok = 1;
  for (int64_t i = 0; i < n; i++) ok &= fabsf(got[i] - want[i]) <= 1e-6f;
  if (!ok)
    for (int64_t i = 0; i < n; i++) printf("  [%lld] got %g want %g\n", (long long)i, got[i], want[i]);
  return ok;
}

static void release(int n, tp_tensor **t) {
  for (int i = 0; i < n; i++) tp_tensor_release(t[i]);
}

/* Scan over x[T, 2] with state s[2] and an outer-scope scale k[1]:
 *   s_t = s_{t-1} + x_t;  y_t = k * s_t
 * outputs (s_T, stacked y along scan_output_axes). dir: the scan input's
 * direction (1 = from the last step), out_axis: scan_output_axes[0]. */
static uint8_t *scan_model(int64_t T, int64_t dir, int64_t out_axis, size_t *len) {
  tp_pbw g = {0}, body = {0};
  char xs[32];
  snprintf(xs, sizeof xs, "%lld,2", (long long)T);
  value_info(&body, 11, "s_in", 1, NULL);
  value_info(&body, 11, "x_t", 1, NULL);
  node(&body, "Add", L("s_in", "x_t"), L("s_out"), 0, NULL);
  node(&body, "Mul", L("s_out", "k"), L("y_t"), 0, NULL);
  value_info(&body, 12, "s_out", 1, NULL);
  value_info(&body, 12, "y_t", 1, NULL);
  tp_pbw at[4] = {attr_graph("body", &body), attr_int("num_scan_inputs", 1), attr_ints("scan_input_directions", 1, &dir),
                  attr_ints("scan_output_axes", 1, &out_axis)};
  node(&g, "Scan", L("s0", "x"), L("s", "ys"), 4, at);
  value_info(&g, 11, "s0", 1, "2");
  value_info(&g, 11, "x", 1, xs);
  value_info(&g, 11, "k", 1, "1");
  value_info(&g, 12, "s", 1, NULL);
  value_info(&g, 12, "ys", 1, NULL);
  return finish(&g, len);
}

static void test_scan(void) {
  static const float s0[2] = {1, -1}, x[6] = {1, 2, 3, 4, 5, 6}, k[1] = {2};
  int64_t s2[1] = {2}, x32[2] = {3, 2}, s1[1] = {1};
  for (int dir = 0; dir < 2; dir++)
    for (int axis = 0; axis < 2; axis++) {
      size_t len;
      uint8_t *b = scan_model(3, dir, axis, &len);
      tp_onnx_model *m = load(b, len);
      if (!m) return;
      tp_tensor *in[3] = {f32(1, s2, s0), f32(2, x32, x), f32(1, s1, k)}, *out[2] = {0};
      int n = 0;
      CHECK_OK(tp_onnx_model_run(m, 3, in, 2, out, &n));
      /* forward: s = (2,1) (5,5) (10,11); reverse: (6,5) (9,9) (10,11) */
      static const float fin[2] = {10, 11};
      static const float fwd[6] = {4, 2, 10, 10, 20, 22}, rev[6] = {12, 10, 18, 18, 20, 22};
      float want[6];
      const float *y = dir ? rev : fwd;
      for (int t = 0; t < 3; t++)
        for (int j = 0; j < 2; j++) want[axis ? j * 3 + t : t * 2 + j] = y[t * 2 + j];
      int64_t ysh[2] = {axis ? 2 : 3, axis ? 3 : 2};
      CHECKF(n == 2 && same(out[0], 1, s2, fin), "Scan final state (dir %d, axis %d)", dir, axis);
      CHECKF(n == 2 && same(out[1], 2, ysh, want), "Scan stacked output (dir %d, axis %d)", dir, axis);
      release(2, out);
      release(3, in);
      tp_onnx_model_free(m);
    }
  /* 0 steps (an empty scan input): the final state is s0, the stack empty
   * with the body's row shape ([0, 2], or [2, 0] on axis 1), eager and stax */
  for (int be = 0; be < 2; be++)
    for (int axis = 0; axis < 2; axis++) {
      size_t len;
      uint8_t *b = scan_model(0, 0, axis, &len);
      tp_onnx_model *m = load(b, len);
      if (!m) return;
      if (be) CHECK_OK(tp_onnx_model_use_backend(m, "stax"));
      int64_t x02[2] = {0, 2};
      tp_tensor *in[3] = {f32(1, s2, s0), f32(2, x02, x), f32(1, s1, k)}, *out[2] = {0};
      int n = 0;
      CHECK_OK(tp_onnx_model_run(m, 3, in, 2, out, &n));
      CHECKF(n == 2 && same(out[0], 1, s2, s0) && tp_tensor_ndim(out[1]) == 2 &&
                 tp_tensor_shape(out[1])[axis] == 0 && tp_tensor_shape(out[1])[1 - axis] == 2,
             "0-step Scan (%s, axis %d)", be ? "stax" : "eager", axis);
      release(n, out);
      release(3, in);
      tp_onnx_model_free(m);
    }
  /* 5000 steps (more than unrolling allows): one while_loop in the plan,
   * the body imported once (the graph stays small), eager and stax; the
   * results against a running sum in double */
  static float big[10000], ys[10000];
  for (int i = 0; i < 10000; i++) big[i] = (float)((i * 7919) % 13) - 6.0f;
  for (int be = 0; be < 2; be++) {
    size_t len;
    uint8_t *b = scan_model(5000, 1, 1, &len);
    tp_onnx_model *m = load(b, len);
    if (!m) return;
    if (be) CHECK_OK(tp_onnx_model_use_backend(m, "stax"));
    float z[2] = {0.5f, -0.25f};
    int64_t bsh[2] = {5000, 2};
    tp_tensor *in[3] = {f32(1, s2, z), f32(2, bsh, big), f32(1, s1, k)}, *out[2] = {0};
    int n = 0;
    CHECK_OK(tp_onnx_model_run(m, 3, in, 2, out, &n));
    if (n == 2) {
      /* reversed scan input, stacked along axis 1: ys[j, t] = k * (z[j] + sum_{u >= 4999 - t} x[u, j]) */
      float fin[2];
      tp_tensor_read(out[0], fin, sizeof fin);
      tp_tensor_read(out[1], ys, sizeof ys);
      CHECK(tp_tensor_ndim(out[1]) == 2 && tp_tensor_shape(out[1])[0] == 2 && tp_tensor_shape(out[1])[1] == 5000);
      int bad = 0;
      for (int j = 0; j < 2; j++) {
        double acc = z[j];
        for (int t = 0; t < 5000; t++) {
          acc += big[(4999 - t) * 2 + j];
          if (fabs(ys[j * 5000 + t] - 2 * acc) > 1e-3 * (1 + fabs(acc))) bad++;
        }
        if (fabs(fin[j] - acc) > 1e-3 * (1 + fabs(acc))) bad++;
      }
      CHECKF(bad == 0, "5000-step Scan (%s): %d wrong values", be ? "stax" : "eager", bad);
    }
    const tp_graph *lg = tp_onnx_model_graph(m);
    char *text = NULL;
    if (lg) CHECK_OK(tp_graph_print(lg, 0, &text));
    CHECKF(text && strstr(text, "= while_loop(") && lg->n < 40, "%d nodes, no while_loop in:\n%s", lg ? lg->n : -1,
           text ? text : "");
    tp_free_buffer(text);
    release(3, in);
    release(n, out);
    tp_onnx_model_free(m);
  }
}

/* A Scan the plan cannot run (its state grows: Concat(s, x_t)) is unrolled
 * instead: s_T = (s0, x_0, .., x_{T-1}), y_t = sum(s_t). Beyond 4096 steps
 * the error names the node and why the loop form did not apply. */
static uint8_t *growing_scan(int64_t T, size_t *len) {
  tp_pbw g = {0}, body = {0};
  char xs[32];
  snprintf(xs, sizeof xs, "%lld,1", (long long)T);
  value_info(&body, 11, "s_in", 1, NULL);
  value_info(&body, 11, "x_t", 1, NULL);
  tp_pbw ax = attr_int("axis", 0);
  node(&body, "Concat", L("s_in", "x_t"), L("s_out"), 1, &ax);
  node(&body, "ReduceSum", L("s_out"), L("y_t"), 0, NULL);
  value_info(&body, 12, "s_out", 1, NULL);
  value_info(&body, 12, "y_t", 1, NULL);
  tp_pbw at[2] = {attr_graph("body", &body), attr_int("num_scan_inputs", 1)};
  node(&g, "Scan", L("s0", "x"), L("s", "ys"), 2, at);
  value_info(&g, 11, "s0", 1, "1");
  value_info(&g, 11, "x", 1, xs);
  value_info(&g, 12, "s", 1, NULL);
  value_info(&g, 12, "ys", 1, NULL);
  return finish(&g, len);
}

static void test_scan_fallback(void) {
  size_t len;
  uint8_t *b0 = growing_scan(3, &len);
  tp_onnx_model *m = load(b0, len);
  if (!m) return;
  static const float s0[1] = {1}, x[3] = {2, 3, 4};
  int64_t s1[1] = {1}, x31[2] = {3, 1}, s4[1] = {4}, y3[2] = {3, 1};
  tp_tensor *in[2] = {f32(1, s1, s0), f32(2, x31, x)}, *out[2] = {0};
  int n = 0;
  CHECK_OK(tp_onnx_model_run(m, 2, in, 2, out, &n));
  static const float fin[4] = {1, 2, 3, 4}, ys[3] = {3, 6, 10};
  CHECKF(n == 2 && same(out[0], 1, s4, fin) && same(out[1], 2, y3, ys), "unrolled Scan with a growing state");
  const tp_graph *lg = tp_onnx_model_graph(m);
  char *text = NULL;
  if (lg) CHECK_OK(tp_graph_print(lg, 0, &text));
  CHECKF(text && !strstr(text, "while_loop"), "a while_loop for a growing state:\n%s", text ? text : "");
  tp_free_buffer(text);
  release(n, out);
  release(2, in);
  tp_onnx_model_free(m);
  m = NULL;
  uint8_t *b = growing_scan(5000, &len);
  tp_status s = tp_onnx_model_load(b, len, &m);
  tp_free_buffer(b);
  if (!s) {
    static float big[5000], z[1];
    int64_t bsh[2] = {5000, 1};
    tp_tensor *in2[2] = {f32(1, s1, z), f32(2, bsh, big)}, *out2[2] = {0};
    n = 0;
    s = tp_onnx_model_run(m, 2, in2, 2, out2, &n);
    release(2, in2);
    release(n, out2);
  }
  CHECK(s == TP_ERR_UNSUPPORTED);
  CHECKF(strstr(tp_last_error(), "(Scan)") && strstr(tp_last_error(), "a Scan of 5000 iterations") &&
             strstr(tp_last_error(), "state 0 is f32[1] before the Scan but f32[2] after a step"),
         "error: %s", tp_last_error());
  tp_onnx_model_free(m);
}

static void test_scan8(void) {
  tp_pbw g = {0}, body = {0};
  value_info(&body, 11, "s_in", 1, NULL);
  value_info(&body, 11, "x_t", 1, NULL);
  node(&body, "Add", L("s_in", "x_t"), L("s_out"), 0, NULL);
  node(&body, "Identity", L("s_out"), L("y_t"), 0, NULL);
  value_info(&body, 12, "s_out", 1, NULL);
  value_info(&body, 12, "y_t", 1, NULL);
  int64_t dir = 1;
  tp_pbw at[3] = {attr_graph("body", &body), attr_int("num_scan_inputs", 1), attr_ints("directions", 1, &dir)};
  node(&g, "Scan", L("", "s0", "x"), L("s", "ys"), 3, at);
  value_info(&g, 11, "s0", 1, "2,1");
  value_info(&g, 11, "x", 1, "2,3,1");
  value_info(&g, 12, "s", 1, NULL);
  value_info(&g, 12, "ys", 1, NULL);
  size_t len;
  uint8_t *b = finish_opset(&g, 8, &len);
  tp_onnx_model *m = load(b, len);
  if (!m) return;
  static const float s0[2] = {10, 20}, x[6] = {1, 2, 3, 4, 5, 6};
  int64_t ssh[2] = {2, 1}, xsh[3] = {2, 3, 1};
  tp_tensor *in[2] = {f32(2, ssh, s0), f32(3, xsh, x)}, *out[2] = {0};
  int n = 0;
  CHECK_OK(tp_onnx_model_run(m, 2, in, 2, out, &n));
  /* batch 0 from the last step: 13, 15, 16; batch 1: 26, 31, 35 */
  static const float fin[2] = {16, 35}, ys[6] = {13, 15, 16, 26, 31, 35};
  CHECK(n == 2 && same(out[0], 2, ssh, fin) && same(out[1], 3, xsh, ys));
  release(n, out);
  release(2, in);
  tp_onnx_model_free(m);
}

/* Loop with the trip count M fed at run time (one while_loop in the plan
 * for every value, its stacks at their run-time length), no cond, y
 * carried and stacked:
 *   y_i = y_{i-1} + x (x from the outer scope). cond_data 1: the body's
 * condition is y_i < lim (lim a float input), a data-dependent exit;
 * 2: no M, the condition is i < cnt (cnt an int64 input); 3: as 1
 * without the scan output; 4: as 1, the stack also read by a ReduceSum. */
static uint8_t *loop_model(int cond_data, size_t *len) {
  tp_pbw g = {0}, body = {0};
  value_info(&body, 11, "i", 7, "");
  value_info(&body, 11, "c_in", 9, "");
  value_info(&body, 11, "y_in", 1, NULL);
  node(&body, "Add", L("y_in", "x"), L("y_out"), 0, NULL);
  if (cond_data == 1 || cond_data == 3 || cond_data == 4) {
    node(&body, "Less", L("y_out", "lim"), L("c2"), 0, NULL);
    node(&body, "Squeeze", L("c2"), L("c_out"), 0, NULL);
  } else if (cond_data == 2) {
    node(&body, "Less", L("i", "cnt"), L("c_out"), 0, NULL);
  } else {
    node(&body, "Identity", L("c_in"), L("c_out"), 0, NULL);
  }
  if (cond_data != 3) node(&body, "Identity", L("y_out"), L("scan"), 0, NULL);
  value_info(&body, 12, "c_out", 9, "");
  value_info(&body, 12, "y_out", 1, NULL);
  if (cond_data != 3) value_info(&body, 12, "scan", 1, NULL);
  tp_pbw at[1] = {attr_graph("body", &body)};
  if (cond_data == 2) node(&g, "Loop", L("", "", "y0"), L("y", "ys"), 1, at);
  else if (cond_data == 3) node(&g, "Loop", L("M", "", "y0"), L("y"), 1, at);
  else node(&g, "Loop", L("M", "", "y0"), L("y", "ys"), 1, at);
  if (cond_data == 4) node(&g, "ReduceSum", L("ys"), L("total"), 0, NULL);
  if (cond_data == 2) value_info(&g, 11, "cnt", 7, "");
  else value_info(&g, 11, "M", 7, "");
  value_info(&g, 11, "y0", 1, "1");
  value_info(&g, 11, "x", 1, "1");
  if (cond_data == 1 || cond_data == 3 || cond_data == 4) value_info(&g, 11, "lim", 1, "1");
  value_info(&g, 12, "y", 1, NULL);
  if (cond_data != 3 && cond_data != 4) value_info(&g, 12, "ys", 1, NULL);
  if (cond_data == 4) value_info(&g, 12, "total", 1, NULL);
  return finish(&g, len);
}

static void test_loop(void) {
  static const float y0[1] = {1}, x[1] = {2};
  int64_t s1[1] = {1};
  size_t len;
  uint8_t *b = loop_model(0, &len);
  tp_onnx_model *m = load(b, len);
  if (!m) return;
  for (int k = 0; k < 3; k++) {
    int64_t M = k == 1 ? 2 : 3;
    tp_tensor *in[3] = {i64(M), f32(1, s1, y0), f32(1, s1, x)}, *out[2] = {0};
    int n = 0;
    CHECK_OK(tp_onnx_model_run(m, 3, in, 2, out, &n));
    static const float ys[3] = {3, 5, 7};
    float fin[1] = {M == 3 ? 7 : 5};
    int64_t ysh[2] = {M, 1};
    CHECKF(n == 2 && same(out[0], 1, s1, fin) && same(out[1], 2, ysh, ys), "Loop M=%lld", (long long)M);
    release(n, out);
    release(3, in);
  }
  CHECK(tp_onnx_model_num_specializations(m) == 1); /* every M: one plan (the stacks' length is a run-time value) */
  tp_tensor *in[3] = {i64(1), f32(1, s1, y0), f32(1, s1, x)}, *out[2] = {0};
  int n = 0;
  /* a negative trip count runs no iteration (ONNX): y stays y0, the scan
   * output is an empty [0, 1] stack (its row shape from the body: the loop
   * form in the plan) */
  for (int be = 0; be < 2; be++) {
    if (be) CHECK_OK(tp_onnx_model_use_backend(m, "stax"));
    for (int64_t M0 = -3; M0 <= 0; M0 += 3) {
      tp_tensor_release(in[0]);
      in[0] = i64(M0);
      n = 0;
      CHECK_OK(tp_onnx_model_run(m, 3, in, 2, out, &n));
      CHECKF(n == 2 && same(out[0], 1, s1, y0) && tp_tensor_ndim(out[1]) == 2 && tp_tensor_shape(out[1])[0] == 0 &&
             tp_tensor_shape(out[1])[1] == 1, "Loop M=%lld (%s): an empty stack", (long long)M0, be ? "stax" : "eager");
      release(n, out);
    }
  }
  /* 5000 iterations with a scan output (more than unrolling allows): the
   * loop form, its stack written in place; y_i = 1 + 2 (i + 1) */
  for (int be = 0; be < 2; be++) {
    CHECK_OK(tp_onnx_model_use_backend(m, be ? "stax" : "eager"));
    tp_tensor_release(in[0]);
    in[0] = i64(5000);
    n = 0;
    CHECK_OK(tp_onnx_model_run(m, 3, in, 2, out, &n));
    static float got[5000];
    int bad = n != 2 || tp_tensor_ndim(out[1]) != 2 || tp_tensor_shape(out[1])[0] != 5000;
    if (!bad) {
      tp_tensor_read(out[1], got, sizeof got);
      for (int i = 0; i < 5000; i++) bad += got[i] != (float)(1 + 2 * (i + 1));
      float fin;
      tp_tensor_read(out[0], &fin, sizeof fin);
      bad += fin != 10001.0f;
    }
    CHECKF(!bad, "Loop M=5000 with a scan output (%s): %d wrong", be ? "stax" : "eager", bad);
    release(n, out);
  }
  tp_tensor_release(in[0]);
  in[0] = i64(1);
  n = 0;
  CHECK_OK(tp_onnx_model_run(m, 3, in, 2, out, &n));
  static const float one[1] = {3};
  int64_t ysh[2] = {1, 1};
  CHECK(n == 2 && same(out[0], 1, s1, one) && same(out[1], 2, ysh, one));
  release(n, out);
  release(3, in);
  tp_onnx_model_free(m);

  /* no trip count; the exit condition i < cnt reads an int input: one
   * while_loop for every cnt (no value input): cnt + 1 iterations */
  b = loop_model(2, &len);
  m = load(b, len);
  if (!m) return;
  for (int k = 0; k < 3; k++) {
    int64_t cnt = k == 1 ? 0 : 2;
    tp_tensor *in3[3] = {i64(cnt), f32(1, s1, y0), f32(1, s1, x)}, *out3[2] = {0};
    n = 0;
    CHECK_OK(tp_onnx_model_run(m, 3, in3, 2, out3, &n));
    static const float ys[3] = {3, 5, 7};
    float fin[1] = {cnt == 2 ? 7 : 3};
    int64_t ysh3[2] = {cnt + 1, 1};
    CHECKF(n == 2 && same(out3[0], 1, s1, fin) && same(out3[1], 2, ysh3, ys), "Loop while i < %lld", (long long)cnt);
    release(n, out3);
    release(3, in3);
  }
  CHECK(tp_onnx_model_num_specializations(m) == 1);
  tp_onnx_model_free(m);

  /* an exit condition computed from float run-time data with a scan
   * output: the stack grows as the loop runs and is returned at the length
   * the data gave (y: 3, 5, 7, ... while y < lim, at most M steps), eager
   * and stax, one specialization for every limit */
  for (int be = 0; be < 2; be++) {
    b = loop_model(1, &len);
    m = load(b, len);
    if (!m) return;
    if (be) CHECK_OK(tp_onnx_model_use_backend(m, "stax"));
    static const struct { int64_t M; float lim; int64_t steps; } lc[] = {{10, 6, 3}, {10, 4, 2}, {2, 100, 2}, {10, 1, 1},
                                                                        {0, 6, 0}, {100, 60, 30}};
    for (int q = 0; q < 6; q++) {
      float lv[1] = {lc[q].lim};
      tp_tensor *in2[4] = {i64(lc[q].M), f32(1, s1, y0), f32(1, s1, x), f32(1, s1, lv)}, *out2[2] = {0};
      n = 0;
      CHECK_OK(tp_onnx_model_run(m, 4, in2, 2, out2, &n));
      float want[100], fin[1] = {1 + 2 * (float)lc[q].steps};
      for (int64_t i = 0; i < lc[q].steps; i++) want[i] = 3 + 2 * (float)i;
      int64_t ysh2[2] = {lc[q].steps, 1};
      CHECKF(n == 2 && same(out2[0], 1, s1, fin) && same(out2[1], 2, ysh2, want), "data exit, scan output: M=%lld lim=%g (%s)",
             (long long)lc[q].M, lc[q].lim, be ? "stax" : "eager");
      release(n, out2);
      release(4, in2);
    }
    CHECK(tp_onnx_model_num_specializations(m) == 1);
    tp_onnx_model_free(m);
  }

  /* a loop that does not end (lim never reached, M huge): its stack stops
   * at TP_LOOP_STACK_MAX bytes with an error naming the node and the
   * limit; the model stays usable */
  setenv("TP_LOOP_STACK_MAX", "4096", 1);
  for (int be = 0; be < 2; be++) {
    b = loop_model(1, &len);
    m = load(b, len);
    if (!m) break;
    if (be) CHECK_OK(tp_onnx_model_use_backend(m, "stax"));
    float big[1] = {1e30f}, six[1] = {6};
    tp_tensor *in5[4] = {i64((int64_t)1 << 40), f32(1, s1, y0), f32(1, s1, x), f32(1, s1, big)}, *out5[2] = {0};
    n = 0;
    CHECK(tp_onnx_model_run(m, 4, in5, 2, out5, &n) == TP_ERR_OUT_OF_MEMORY);
    CHECKF(strstr(tp_last_error(), "while_loop %y: scan output 0 would need more than 4096 bytes after 1024 steps") &&
               strstr(tp_last_error(), "TP_LOOP_STACK_MAX"),
           "error: %s", tp_last_error());
    release(n, out5);
    release(4, in5);
    tp_tensor *in6[4] = {i64(10), f32(1, s1, y0), f32(1, s1, x), f32(1, s1, six)}, *out6[2] = {0};
    n = 0;
    CHECK_OK(tp_onnx_model_run(m, 4, in6, 2, out6, &n));
    static const float y3[3] = {3, 5, 7}, f7[1] = {7};
    int64_t sh31[2] = {3, 1};
    CHECK(n == 2 && same(out6[0], 1, s1, f7) && same(out6[1], 2, sh31, y3));
    release(n, out6);
    release(4, in6);
    tp_onnx_model_free(m);
  }
  unsetenv("TP_LOOP_STACK_MAX");

  /* the stack read by another node: tp_onnx_model splits at the Loop (the
   * JS tests check it against onnxruntime); a plain import (one graph, no
   * split) refuses it naming the reader and the Loop */
  b = loop_model(4, &len);
  tp_graph *lg = NULL;
  CHECK(tp_onnx_load(b, len, &lg) == TP_ERR_UNSUPPORTED);
  CHECKF(strstr(tp_last_error(), "node 'total' (ReduceSum): reads 'ys', a scan output of Loop 'y' whose length is known "
                                 "only after the loop ran"),
         "error: %s", tp_last_error());
  tp_graph_free(lg);
  m = load(b, len);
  if (!m) return;
  for (int be = 0; be < 2; be++) {
    if (be) CHECK_OK(tp_onnx_model_use_backend(m, "stax"));
    float lv[1] = {6};
    tp_tensor *in7[4] = {i64(10), f32(1, s1, y0), f32(1, s1, x), f32(1, s1, lv)}, *out7[2] = {0};
    n = 0;
    CHECK_OK(tp_onnx_model_run(m, 4, in7, 2, out7, &n));
    static const float t15[1] = {15}, f7[1] = {7}; /* 3 + 5 + 7 (keepdims: [1, 1]) */
    int64_t s11[2] = {1, 1};
    CHECKF(n == 2 && same(out7[0], 1, s1, f7) && same(out7[1], 2, s11, t15), "split at the Loop (%s)", be ? "stax" : "eager");
    release(n, out7);
    release(4, in7);
  }
  tp_onnx_model_free(m);

  /* the same exit on float data without scan outputs: one while_loop node
   * (its body compiled once, run as often as the data says), eager and
   * stax, one specialization for every limit and trip count */
  for (int be = 0; be < 2; be++) {
    b = loop_model(3, &len);
    m = load(b, len);
    if (!m) return;
    if (be) CHECK_OK(tp_onnx_model_use_backend(m, "stax"));
    static const struct { int64_t M; float lim, want; } cases[] = {{10, 6, 7}, {10, 4, 5}, {1, 6, 3}, {0, 6, 1}, {10, 100, 21}};
    for (int q = 0; q < 5; q++) {
      float lv[1] = {cases[q].lim};
      tp_tensor *in4[4] = {i64(cases[q].M), f32(1, s1, y0), f32(1, s1, x), f32(1, s1, lv)}, *out4[1] = {0};
      n = 0;
      CHECK_OK(tp_onnx_model_run(m, 4, in4, 1, out4, &n));
      float want[1] = {cases[q].want};
      CHECKF(n == 1 && same(out4[0], 1, s1, want), "Loop on data (%s): M=%lld lim=%g", be ? "stax" : "eager",
             (long long)cases[q].M, cases[q].lim);
      release(n, out4);
      release(4, in4);
    }
    CHECKF(tp_onnx_model_num_specializations(m) == 1, "%d specializations", tp_onnx_model_num_specializations(m));
    const tp_graph *lg = tp_onnx_model_graph(m);
    char *text = NULL;
    if (lg) CHECK_OK(tp_graph_print(lg, 0, &text));
    CHECKF(text && strstr(text, "= while_loop("), "no while_loop in:\n%s", text ? text : "");
    tp_free_buffer(text);
    tp_onnx_model_free(m);
  }
}


/* Bad inputs of the stateful opset-27 ops and a Scan body of the wrong
 * arity: clear errors naming the node and the problem. */
static void expect_load_error(const char *what, uint8_t *bytes, size_t len, const char *needle) {
  tp_onnx_model *m = NULL;
  tp_status s = tp_onnx_model_load(bytes, len, &m);
  tp_free_buffer(bytes);
  if (!s) { /* the import happens at the first run: feed zeros of the declared shapes */
    tp_tensor *in[8] = {0}, *out[4] = {0};
    int nin = tp_onnx_model_num_inputs(m), n = 0;
    for (int i = 0; i < nin && i < 8; i++) {
      tp_dtype dt;
      int64_t dims[TP_MAX_DIMS];
      int nd = tp_onnx_model_input_type(m, i, &dt, dims, NULL);
      CHECK_OK(tp_zeros(dt, nd, dims, &in[i]));
    }
    s = tp_onnx_model_run(m, nin, in, 4, out, &n);
    release(n, out);
    release(nin, in);
  }
  CHECKF(s != TP_OK && strstr(tp_last_error(), needle), "%s: status %d, error '%s' lacks '%s'", what, (int)s,
         s ? tp_last_error() : "", needle);
  tp_onnx_model_free(m);
}

static void test_bad_inputs(void) {
  size_t len;
  { /* CausalConvWithState: past_state of the wrong length */
    tp_pbw g = {0};
    node(&g, "CausalConvWithState", L("x", "w", "", "st"), L("y", "st2"), 0, NULL);
    value_info(&g, 11, "x", 1, "1,2,5");
    value_info(&g, 11, "w", 1, "2,1,3");
    value_info(&g, 11, "st", 1, "1,2,3");
    value_info(&g, 12, "y", 1, NULL);
    value_info(&g, 12, "st2", 1, NULL);
    uint8_t *b = finish(&g, &len);
    expect_load_error("CausalConvWithState past_state", b, len, "(CausalConvWithState): past_state must be float32 (1, 2, 2)");
  }
  { /* LinearAttention: q_num_heads not a multiple of kv_num_heads */
    tp_pbw g = {0};
    tp_pbw at[3] = {attr_int("q_num_heads", 3), attr_int("kv_num_heads", 2), {0}};
    str(&at[2], 1, "update_rule");
    str(&at[2], 4, "linear");
    tp_pbw_varint(&at[2], 20, 3); /* STRING */
    node(&g, "LinearAttention", L("q", "k", "v"), L("y", "s"), 3, at);
    value_info(&g, 11, "q", 1, "1,2,6");
    value_info(&g, 11, "k", 1, "1,2,4");
    value_info(&g, 11, "v", 1, "1,2,4");
    value_info(&g, 12, "y", 1, NULL);
    value_info(&g, 12, "s", 1, NULL);
    uint8_t *b = finish(&g, &len);
    expect_load_error("LinearAttention heads", b, len, "(LinearAttention): q_num_heads (3) must be a positive multiple of kv_num_heads (2)");
  }
  { /* Scan whose body gives one output for a state and a scan output */
    tp_pbw g = {0}, body = {0};
    value_info(&body, 11, "s_in", 1, NULL);
    value_info(&body, 11, "x_t", 1, NULL);
    node(&body, "Add", L("s_in", "x_t"), L("s_out"), 0, NULL);
    value_info(&body, 12, "s_out", 1, NULL);
    tp_pbw at[2] = {attr_graph("body", &body), attr_int("num_scan_inputs", 1)};
    node(&g, "Scan", L("s0", "x"), L("s", "ys"), 2, at);
    value_info(&g, 11, "s0", 1, "2");
    value_info(&g, 11, "x", 1, "3,2");
    value_info(&g, 12, "s", 1, NULL);
    value_info(&g, 12, "ys", 1, NULL);
    uint8_t *b = finish(&g, &len);
    expect_load_error("Scan body arity", b, len, "(Scan): the body has 2 inputs and 1 outputs; the Scan needs 2 and 2");
  }
}

/* If on a condition computed at run time (issue 14 item 3): it imports as
 * one cond node with both branches as subgraphs (compiled by stax), and the
 * choice is made per run, without a new specialization.
 *   c = Greater(s, z)            (kind 0: float data)  or  Equal(sr, k) (kind 1: int64 inputs)
 *   then: exp(x * w)   else: x - w   (both read the outer x and w)
 *   out = If(c) + x */
static uint8_t *if_model(int kind, int shapes_differ, size_t *len) {
  tp_pbw g = {0}, th = {0}, el = {0};
  node(&th, "Mul", L("x", "w"), L("t"), 0, NULL);
  node(&th, "Exp", L("t"), L("t2"), 0, NULL);
  value_info(&th, 12, "t2", 1, "3");
  if (shapes_differ) {
    int64_t ax[1] = {0};
    tp_pbw ra[2] = {attr_ints("axes", 1, ax), attr_int("keepdims", 1)};
    node(&el, "ReduceSum", L("x"), L("e"), 2, ra);
    value_info(&el, 12, "e", 1, "1");
  } else {
    node(&el, "Sub", L("x", "w"), L("e"), 0, NULL);
    value_info(&el, 12, "e", 1, "3");
  }
  if (kind == 0) node(&g, "Greater", L("s", "z"), L("c"), 0, NULL);
  else node(&g, "Equal", L("sr", "k"), L("c"), 0, NULL);
  tp_pbw at[2] = {attr_graph("then_branch", &th), attr_graph("else_branch", &el)};
  node(&g, "If", L("c"), L("y"), 2, at);
  node(&g, "Add", L("y", "x"), L("out"), 0, NULL);
  if (kind == 0) {
    value_info(&g, 11, "s", 1, "1");
    value_info(&g, 11, "z", 1, "1");
  } else {
    value_info(&g, 11, "sr", 7, "");
    value_info(&g, 11, "k", 7, "");
  }
  value_info(&g, 11, "x", 1, "3");
  value_info(&g, 11, "w", 1, "3");
  value_info(&g, 12, "out", 1, NULL);
  return finish_opset(&g, 13, len);
}

static void test_if_runtime(void) {
  static const float xv[3] = {0.5f, -1, 2}, wv[3] = {1, 0.25f, -0.5f};
  int64_t s1[1] = {1}, s3[1] = {3};
  for (int kind = 0; kind < 2; kind++)
    for (int be = 0; be < 2; be++) {
      size_t len;
      uint8_t *b = if_model(kind, 0, &len);
      tp_onnx_model *m = load(b, len);
      if (!m) continue;
      if (be) CHECK_OK(tp_onnx_model_use_backend(m, "stax"));
      const tp_graph *g = NULL;
      for (int r = 0; r < 4; r++) {
        int take = r % 2 == 0;
        tp_tensor *in[4];
        if (kind == 0) {
          float sv[1] = {take ? 3.0f : -3.0f}, zv[1] = {0};
          in[0] = f32(1, s1, sv), in[1] = f32(1, s1, zv);
        } else {
          in[0] = i64(take ? 16000 : 8000), in[1] = i64(16000);
        }
        in[2] = f32(1, s3, xv), in[3] = f32(1, s3, wv);
        tp_tensor *out[1] = {0};
        int n = 0;
        CHECK_OK(tp_onnx_model_run(m, 4, in, 1, out, &n));
        float want[3];
        for (int i = 0; i < 3; i++)
          want[i] = (float)((take ? exp((double)xv[i] * wv[i]) : (double)xv[i] - wv[i]) + xv[i]);
        CHECKF(n == 1 && same(out[0], 1, s3, want), "If kind %d backend %s run %d (%s)", kind, be ? "stax" : "eager",
               r, take ? "then" : "else");
        release(n, out);
        release(4, in);
        g = tp_onnx_model_graph(m);
      }
      /* one specialization for both branches: the choice is in the graph */
      CHECKF(tp_onnx_model_num_specializations(m) == 1, "If kind %d: %d specializations", kind,
             tp_onnx_model_num_specializations(m));
      char *text = NULL;
      if (g) CHECK_OK(tp_graph_print(g, 0, &text));
      CHECKF(text && strstr(text, "= cond(") && strstr(text, "subgraph \"then"), "no cond node in:\n%s", text ? text : "");
      tp_free_buffer(text);
      /* export: the cond is written as an If whose branches read the outer
       * values; the file loads back as a cond and computes the same */
      uint8_t *saved = NULL;
      size_t slen = 0;
      if (g) CHECK_OK(tp_onnx_save(g, &saved, &slen));
      tp_onnx_model *m2 = NULL;
      if (saved) CHECK_OK(tp_onnx_model_load(saved, slen, &m2));
      tp_free_buffer(saved);
      for (int r = 0; m2 && r < 2; r++) {
        int take = r == 0;
        float sv[1] = {take ? 3.0f : -3.0f}, zv[1] = {0};
        tp_tensor *in[4] = {kind ? i64(take ? 16000 : 8000) : f32(1, s1, sv), kind ? i64(16000) : f32(1, s1, zv),
                            f32(1, s3, xv), f32(1, s3, wv)}, *out[1] = {0};
        int n = 0;
        CHECK_OK(tp_onnx_model_run(m2, 4, in, 1, out, &n));
        float want[3];
        for (int i = 0; i < 3; i++)
          want[i] = (float)((take ? exp((double)xv[i] * wv[i]) : (double)xv[i] - wv[i]) + xv[i]);
        CHECKF(n == 1 && same(out[0], 1, s3, want), "exported If kind %d run %d", kind, r);
        release(n, out);
        release(4, in);
      }
      if (m2) CHECK(tp_onnx_model_num_specializations(m2) == 1);
      tp_onnx_model_free(m2);
      /* stax's lowering takes it: both branches become sub-plans */
      tp_plan *pl = NULL;
      if (be && g) CHECK_OK(tp_lower(g, NULL, &pl));
      int nsub = 0;
      for (int i = 0; pl && i < tp_plan_nsubplans(pl); i++) nsub += tp_plan_subplan(pl, i) != NULL;
      CHECK(!be || nsub == 2);
      tp_plan_free(pl);
      tp_onnx_model_free(m);
    }
  /* branches of different shapes cannot be one cond: the import-time
   * choice serves them, the condition's inputs becoming value inputs (a
   * specialization per condition value) */
  for (int kind = 0; kind < 2; kind++) {
    size_t len;
    uint8_t *b = if_model(kind, 1, &len);
    tp_onnx_model *m = load(b, len);
    if (!m) continue;
    for (int r = 0; r < 2; r++) {
      float sv[1] = {r ? -1.0f : 1.0f}, zv[1] = {0};
      tp_tensor *in[4] = {kind ? i64(r ? 8000 : 16000) : f32(1, s1, sv), kind ? i64(16000) : f32(1, s1, zv),
                          f32(1, s3, xv), f32(1, s3, wv)}, *out[1] = {0};
      int n = 0;
      CHECK_OK(tp_onnx_model_run(m, 4, in, 1, out, &n));
      float want[3];
      for (int i = 0; i < 3; i++) want[i] = r ? 1.5f + xv[i] : (float)(exp((double)xv[i] * wv[i]) + xv[i]);
      CHECKF(n == 1 && same(out[0], 1, s3, want), "If (kind %d) with different branch shapes, run %d", kind, r);
      release(n, out);
      release(4, in);
    }
    CHECK(tp_onnx_model_num_specializations(m) == 2);
    tp_onnx_model_free(m);
  }
}

/* Malformed control flow on run-time data (If on a computed condition,
 * Loop on a fed trip count): each is a clear error, never a crash or a
 * read past a node's operands (the asan build checks that). */
static uint8_t *bad_if_model(int nthen, int nelse, int nif, size_t *len) {
  tp_pbw g = {0}, th = {0}, el = {0};
  static const char *const tn[2] = {"t0", "t1"}, *const en[2] = {"e0", "e1"};
  for (int k = 0; k < nthen; k++) {
    node(&th, "Neg", L("x"), (const char *const[]){tn[k], NULL}, 0, NULL);
    value_info(&th, 12, tn[k], 1, "3");
  }
  for (int k = 0; k < nelse; k++) {
    node(&el, "Abs", L("x"), (const char *const[]){en[k], NULL}, 0, NULL);
    value_info(&el, 12, en[k], 1, "3");
  }
  node(&g, "Greater", L("s", "z"), L("c"), 0, NULL);
  tp_pbw at[2] = {attr_graph("then_branch", &th), attr_graph("else_branch", &el)};
  static const char *const yn[3] = {"y0", "y1", NULL};
  const char *outs[3] = {NULL, NULL, NULL};
  for (int k = 0; k < nif; k++) outs[k] = yn[k];
  node(&g, "If", L("c"), outs, 2, at);
  node(&g, "Add", L("x", "x"), L("out"), 0, NULL);
  value_info(&g, 11, "s", 1, "1");
  value_info(&g, 11, "z", 1, "1");
  value_info(&g, 11, "x", 1, "3");
  value_info(&g, 12, "out", 1, NULL);
  return finish_opset(&g, 13, len);
}

/* Loop(M fed at run time, "", y0) whose body takes nbin inputs and gives
 * nbout outputs (a well-formed one: 3 and 2) */
static uint8_t *bad_loop_model(int nbin, int nbout, size_t *len) {
  tp_pbw g = {0}, body = {0};
  static const char *const bin[4] = {"i", "c_in", "y_in", "extra"};
  static const int bel[4] = {7, 9, 1, 1};
  for (int k = 0; k < nbin; k++) value_info(&body, 11, bin[k], bel[k], k ? NULL : "");
  node(&body, "Add", L("x", "x"), L("y_out"), 0, NULL);
  node(&body, "Identity", L("cst"), L("c_out"), 0, NULL);
  if (nbout > 0) value_info(&body, 12, "c_out", 9, "");
  if (nbout > 1) value_info(&body, 12, "y_out", 1, NULL);
  if (nbout > 2) value_info(&body, 12, "y_out", 1, NULL);
  tp_pbw at[1] = {attr_graph("body", &body)};
  node(&g, "Greater", L("x", "x"), L("cst2"), 0, NULL);
  node(&g, "Squeeze", L("cst2"), L("cst"), 0, NULL);
  node(&g, "Loop", L("M", "", "y0"), L("y"), 1, at);
  value_info(&g, 11, "M", 7, "");
  value_info(&g, 11, "y0", 1, "1");
  value_info(&g, 11, "x", 1, "1");
  value_info(&g, 12, "y", 1, NULL);
  return finish(&g, len);
}

static void test_malformed_control(void) {
  size_t len = 0;
  uint8_t *b;
  b = bad_if_model(0, 0, 0, &len), expect_load_error("If without outputs", b, len, "an If needs at least one output");
  b = bad_if_model(2, 1, 1, &len);
  expect_load_error("If: then branch has 2 outputs, the If 1", b, len, "the then branch has 2 outputs, the If 1");
  b = bad_if_model(1, 0, 1, &len);
  expect_load_error("If: else branch has no outputs", b, len, "the else branch has 0 outputs, the If 1");
  b = bad_loop_model(2, 2, &len), expect_load_error("Loop body with 2 inputs for 1 carried value", b, len, "the body has 2 inputs");
  b = bad_loop_model(4, 2, &len), expect_load_error("Loop body with 4 inputs for 1 carried value", b, len, "the body has 4 inputs");
  b = bad_loop_model(3, 0, &len), expect_load_error("Loop body without outputs", b, len, "Loop");
}

/* An If in an If's branch, both on computed conditions (the inner one
 * reads the outer scope's c2, x, w through the outer branch): one cond in
 * another, every combination of the two choices against hand values, on
 * eager and stax, one specialization.
 *   out = If(s > 0) { If(t > 0) { x * w } else { x - w } } else { x + w } */
static void test_nested_if(void) {
  tp_pbw g = {0}, th = {0}, el = {0}, ith = {0}, iel = {0};
  node(&ith, "Mul", L("x", "w"), L("a"), 0, NULL);
  value_info(&ith, 12, "a", 1, "3");
  node(&iel, "Sub", L("x", "w"), L("b"), 0, NULL);
  value_info(&iel, 12, "b", 1, "3");
  tp_pbw iat[2] = {attr_graph("then_branch", &ith), attr_graph("else_branch", &iel)};
  node(&th, "If", L("c2"), L("t_out"), 2, iat);
  value_info(&th, 12, "t_out", 1, "3");
  node(&el, "Add", L("x", "w"), L("e_out"), 0, NULL);
  value_info(&el, 12, "e_out", 1, "3");
  node(&g, "Greater", L("s", "z"), L("c1"), 0, NULL);
  node(&g, "Greater", L("t", "z"), L("c2"), 0, NULL);
  tp_pbw at[2] = {attr_graph("then_branch", &th), attr_graph("else_branch", &el)};
  node(&g, "If", L("c1"), L("out"), 2, at);
  value_info(&g, 11, "s", 1, "1");
  value_info(&g, 11, "t", 1, "1");
  value_info(&g, 11, "z", 1, "1");
  value_info(&g, 11, "x", 1, "3");
  value_info(&g, 11, "w", 1, "3");
  value_info(&g, 12, "out", 1, NULL);
  size_t len;
  uint8_t *b = finish_opset(&g, 13, &len);
  static const float xv[3] = {0.5f, -1, 2}, wv[3] = {1, 0.25f, -0.5f}, zv[1] = {0};
  int64_t s1[1] = {1}, s3[1] = {3};
  for (int be = 0; be < 2; be++) {
    uint8_t *copy = malloc(len);
    memcpy(copy, b, len);
    tp_onnx_model *m = NULL;
    CHECK_OK(tp_onnx_model_load(copy, len, &m));
    free(copy);
    if (!m) continue;
    if (be) CHECK_OK(tp_onnx_model_use_backend(m, "stax"));
    for (int r = 0; r < 6; r++) {
      int o = r % 3 != 2, i = r % 3 == 0; /* (then, then), (then, else), (else, -) */
      float sv[1] = {o ? 1.0f : -1.0f}, tv[1] = {i ? 2.0f : -2.0f};
      tp_tensor *in[5] = {f32(1, s1, sv), f32(1, s1, tv), f32(1, s1, zv), f32(1, s3, xv), f32(1, s3, wv)}, *out[1] = {0};
      int n = 0;
      CHECK_OK(tp_onnx_model_run(m, 5, in, 1, out, &n));
      float want[3];
      for (int k = 0; k < 3; k++) want[k] = o ? (i ? xv[k] * wv[k] : xv[k] - wv[k]) : xv[k] + wv[k];
      CHECKF(n == 1 && same(out[0], 1, s3, want), "nested If (%s) run %d: outer %d inner %d", be ? "stax" : "eager", r, o, i);
      release(n, out);
      release(5, in);
    }
    CHECKF(tp_onnx_model_num_specializations(m) == 1, "nested If: %d specializations", tp_onnx_model_num_specializations(m));
    tp_onnx_model_free(m);
  }
  tp_free_buffer(b);
}

int main(void) {
  test_scan();
  test_scan_fallback();
  test_if_runtime();
  test_scan8();
  test_loop();
  test_bad_inputs();
  test_malformed_control();
  test_nested_if();
  printf("%s test_onnx_control (%d checks)\n", failures ? "FAIL" : "ok  ", checks);
  return failures ? 1 : 0;
}
