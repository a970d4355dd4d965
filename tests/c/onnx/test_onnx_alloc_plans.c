/* test_onnx_alloc_plans.c - allocation-failure sweeps (../alloc_sweep.h)
 * of ONNX models whose stax plans hold this session's new plan steps, each
 * fed at run time through the public API (tp_onnx_model_load, use_backend
 * "stax", run twice on different inputs):
 *   - an If on a computed condition (one cond step, both branches sub-plans;
 *     the two runs take both branches),
 *   - a Loop on a fed trip count whose exit is computed from data (one
 *     while_loop step with a body sub-plan; the two runs stop on the trip
 *     count and on the data),
 *   - a Scan of 0 steps (a while_loop whose scan output is an empty stack),
 *   - a model split at a run-time NonMaxSuppression (pre part, NMS, post
 *     part per selected count; the two runs select 2 and 3 boxes),
 *   - QLinearConv with constant weights (qconv2d, its weight packed once per
 *     plan) on ONNX's test_qlinearconv data,
 *   - LSTM with constant W, R, B, P (W and R packed once per plan) and
 *     run-time sequence_lens, initial_h, initial_c on ONNX's
 *     test_lstm_with_peepholes data.
 * The baselines are checked against hand-computed values (If, Loop) and
 * ONNX's expected outputs (QLinearConv, LSTM); for every N the sweep checks
 * TP_ERR_OUT_OF_MEMORY with a memory message, no leak, correct results after
 * the failure, no crash. The QLinearConv and LSTM cases need
 * ../shared/conformance (skipped without it unless TP_REQUIRE_DATA is set).
 *
 * TP_SWEEP_SHARDS 2 (ctest runs the sweep as two parts, test_onnx_alloc_plans_k_of_2) */
#include "onnx/onnx.h"
#include "onnx/pb.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "alloc_sweep.h"
#include "check.h"

#include "onnx_build.h" /* sub, str, value_info, attr_*, node, L(), finish_opset, finish */


/* A TensorProto named name holding t (raw_data), as GraphProto field num */
static void tensor_proto(tp_pbw *g, uint32_t num, const char *name, tp_tensor *t) {
  tp_pbw tp = {0};
  for (int i = 0; i < tp_tensor_ndim(t); i++) tp_pbw_varint(&tp, 1, (uint64_t)tp_tensor_shape(t)[i]);
  int et = tp_tensor_dtype(t) == TP_F32 ? 1 : tp_tensor_dtype(t) == TP_U8 ? 2 : tp_tensor_dtype(t) == TP_I8 ? 3
           : tp_tensor_dtype(t) == TP_I32 ? 6 : 7;
  tp_pbw_varint(&tp, 2, (uint64_t)et);
  str(&tp, 8, name);
  size_t nb = (size_t)tp_tensor_numel(t) * tp_dtype_size(tp_tensor_dtype(t));
  void *raw = malloc(nb ? nb : 1);
  CHECK_OK(tp_tensor_read(t, raw, nb));
  tp_pbw_bytes(&tp, 9, raw, nb);
  free(raw);
  sub(g, num, &tp);
}

#define MAXIN 8
#define MAXV 256

typedef struct pcase {
  const char *name;
  uint8_t *bytes;
  size_t len;
  int nin;
  tp_tensor *in[2][MAXIN]; /* two input sets: one run each */
  int64_t nwant[2];
  double want[2][MAXV]; /* the expected first output of each run */
  double tol;
} pcase;

typedef struct result {
  int64_t n[2];
  double v[2][MAXV];
} result;

static tp_status scenario(void *ud, void *resv) {
  pcase *c = ud;
  result *res = resv;
  tp_onnx_model *m = NULL;
  tp_tensor *o[2][4] = {{0}};
  int no[2] = {0, 0};
  SWEEP_STEP("load", tp_onnx_model_load(c->bytes, c->len, &m));
  SWEEP_STEP("use stax", tp_onnx_model_use_backend(m, "stax"));
  SWEEP_STEP("run 1", tp_onnx_model_run(m, c->nin, c->in[0], 4, o[0], &no[0]));
  SWEEP_STEP("run 2", tp_onnx_model_run(m, c->nin, c->in[1], 4, o[1], &no[1]));
  for (int r = 0; r < 2; r++) {
    tp_tensor *y = no[r] ? o[r][no[r] - 1] : NULL; /* the last output */
    res->n[r] = y ? tp_tensor_numel(y) : -1;
    for (int64_t j = 0; y && j < res->n[r] && j < MAXV; j++) res->v[r][j] = tp_tensor_get_f64(y, j);
  }
  sweep_step = "done";
cleanup:
  for (int r = 0; r < 2; r++)
    for (int i = 0; i < no[r]; i++) tp_tensor_release(o[r][i]);
  tp_onnx_model_free(m);
  tp_reset();
  return sweep_status;
}

static void check_baseline(const pcase *c, const result *r) {
  for (int k = 0; k < 2; k++) {
    CHECKF(r->n[k] == c->nwant[k], "%s run %d: %lld values, expected %lld", c->name, k + 1, (long long)r->n[k],
           (long long)c->nwant[k]);
    for (int64_t j = 0; j < c->nwant[k] && j < r->n[k] && j < MAXV; j++)
      if (!(fabs(r->v[k][j] - c->want[k][j]) <= c->tol * (1 + fabs(c->want[k][j])))) {
        FAILF("%s run %d element %lld: %.9g, expected %.9g", c->name, k + 1, (long long)j, r->v[k][j], c->want[k][j]);
        break;
      }
  }
}

static void run_case(pcase *c) {
  static result base;
  sweep_case sc = {c->name, scenario, NULL, sizeof(result), c};
  failures += sweep_run(&sc, &base, NULL);
  check_baseline(c, &base);
  tp_free_buffer(c->bytes);
  for (int r = 0; r < 2; r++)
    for (int i = 0; i < c->nin; i++) tp_tensor_release(c->in[r][i]);
}

static tp_tensor *f32v(int nd, const int64_t *sh, const float *v) {
  tp_tensor *t = NULL;
  CHECK_OK(tp_tensor_new(TP_F32, nd, sh, v, &t));
  return t;
}
static tp_tensor *i64s(int64_t v) {
  tp_tensor *t = NULL;
  CHECK_OK(tp_tensor_new(TP_I64, 0, NULL, &v, &t));
  return t;
}

/* out = If(s > z, exp(x * w), x - w) + x */
static void case_if(void) {
  tp_pbw g = {0}, th = {0}, el = {0};
  node(&th, "Mul", L("x", "w"), L("t"), 0, NULL);
  node(&th, "Exp", L("t"), L("t2"), 0, NULL);
  value_info(&th, 12, "t2", 1, "3");
  node(&el, "Sub", L("x", "w"), L("e"), 0, NULL);
  value_info(&el, 12, "e", 1, "3");
  node(&g, "Greater", L("s", "z"), L("c"), 0, NULL);
  tp_pbw at[2] = {attr_graph("then_branch", &th), attr_graph("else_branch", &el)};
  node(&g, "If", L("c"), L("y"), 2, at);
  node(&g, "Add", L("y", "x"), L("out"), 0, NULL);
  value_info(&g, 11, "s", 1, "1");
  value_info(&g, 11, "z", 1, "1");
  value_info(&g, 11, "x", 1, "3");
  value_info(&g, 11, "w", 1, "3");
  value_info(&g, 12, "out", 1, NULL);
  pcase c = {.name = "If on a computed condition (cond)", .nin = 4, .tol = 1e-6};
  c.bytes = finish_opset(&g, 13, &c.len);
  static const float xv[3] = {0.5f, -1, 2}, wv[3] = {1, 0.25f, -0.5f}, zv[1] = {0};
  int64_t s1[1] = {1}, s3[1] = {3};
  for (int r = 0; r < 2; r++) {
    float sv[1] = {r == 0 ? 3.0f : -3.0f};
    c.in[r][0] = f32v(1, s1, sv), c.in[r][1] = f32v(1, s1, zv), c.in[r][2] = f32v(1, s3, xv), c.in[r][3] = f32v(1, s3, wv);
    c.nwant[r] = 3;
    for (int i = 0; i < 3; i++) c.want[r][i] = (r == 0 ? exp((double)xv[i] * wv[i]) : (double)xv[i] - wv[i]) + xv[i];
  }
  run_case(&c);
}

/* Loop(M, "", y0): y += x while y < lim (at most M steps) */
static void case_loop(void) {
  tp_pbw g = {0}, body = {0};
  value_info(&body, 11, "i", 7, "");
  value_info(&body, 11, "c_in", 9, "");
  value_info(&body, 11, "y_in", 1, NULL);
  node(&body, "Add", L("y_in", "x"), L("y_out"), 0, NULL);
  node(&body, "Less", L("y_out", "lim"), L("c2"), 0, NULL);
  node(&body, "Squeeze", L("c2"), L("c_out"), 0, NULL);
  value_info(&body, 12, "c_out", 9, "");
  value_info(&body, 12, "y_out", 1, NULL);
  tp_pbw at[1] = {attr_graph("body", &body)};
  node(&g, "Loop", L("M", "", "y0"), L("y"), 1, at);
  value_info(&g, 11, "M", 7, "");
  value_info(&g, 11, "y0", 1, "1");
  value_info(&g, 11, "x", 1, "1");
  value_info(&g, 11, "lim", 1, "1");
  value_info(&g, 12, "y", 1, NULL);
  pcase c = {.name = "Loop exiting on data (while_loop)", .nin = 4, .tol = 1e-6};
  c.bytes = finish(&g, &c.len);
  static const float y0[1] = {1}, xv[1] = {2}, lim[1] = {6};
  int64_t s1[1] = {1};
  /* run 1: M = 10, stops on y >= 6 after 3 steps (3, 5, 7): 7; run 2: M = 2: 5 */
  static const int64_t M[2] = {10, 2};
  static const double want[2] = {7, 5};
  for (int r = 0; r < 2; r++) {
    c.in[r][0] = i64s(M[r]), c.in[r][1] = f32v(1, s1, y0), c.in[r][2] = f32v(1, s1, xv), c.in[r][3] = f32v(1, s1, lim);
    c.nwant[r] = 1, c.want[r][0] = want[r];
  }
  run_case(&c);
}

/* Scan(s0, x) with s_t = s_{t-1} + x_t, y_t = s_t * k (k outer) over 0
 * steps: the loop form (a while_loop whose scan output is an empty [0, 2]
 * stack, allocated by the loop's runner); graph outputs (ys, s), the last
 * one s = s0, two runs on different s0. */
static void case_scan0(void) {
  tp_pbw g = {0}, body = {0};
  value_info(&body, 11, "s_in", 1, NULL);
  value_info(&body, 11, "x_t", 1, NULL);
  node(&body, "Add", L("s_in", "x_t"), L("s_out"), 0, NULL);
  node(&body, "Mul", L("s_out", "k"), L("y_t"), 0, NULL);
  value_info(&body, 12, "s_out", 1, NULL);
  value_info(&body, 12, "y_t", 1, NULL);
  tp_pbw at[2] = {attr_graph("body", &body), attr_int("num_scan_inputs", 1)};
  node(&g, "Scan", L("s0", "x"), L("s", "ys"), 2, at);
  value_info(&g, 11, "s0", 1, "2");
  value_info(&g, 11, "x", 1, "0,2");
  value_info(&g, 11, "k", 1, "1");
  value_info(&g, 12, "ys", 1, NULL);
  value_info(&g, 12, "s", 1, NULL);
  pcase c = {.name = "Scan of 0 steps (while_loop, an empty scan-output stack)", .nin = 3, .tol = 0};
  c.bytes = finish(&g, &c.len);
  static const float s0[2][2] = {{1, -1}, {3, 4}}, kv[1] = {2};
  int64_t s2[1] = {2}, s1[1] = {1}, xsh[2] = {0, 2};
  for (int r = 0; r < 2; r++) {
    c.in[r][0] = f32v(1, s2, s0[r]), c.in[r][1] = f32v(2, xsh, NULL), c.in[r][2] = f32v(1, s1, kv);
    c.nwant[r] = 2, c.want[r][0] = s0[r][0], c.want[r][1] = s0[r][1];
  }
  run_case(&c);
}

/* A model split at a run-time NonMaxSuppression (src/onnx/model.c): the
 * pre part Relu(bx) once, the NMS at run time, the post part Cast(sel)
 * per selected count (the two runs select 2 and 3 boxes: two post parts) */
static void case_nms_split(void) {
  tp_pbw g = {0};
  tp_pbw to = attr_int("to", 1);
  node(&g, "Relu", L("bx"), L("boxes"), 0, NULL);
  node(&g, "NonMaxSuppression", L("boxes", "scores", "maxo", "iou"), L("sel"), 0, NULL);
  node(&g, "Cast", L("sel"), L("self"), 1, &to);
  value_info(&g, 11, "bx", 1, "1,3,4");
  value_info(&g, 11, "scores", 1, "1,1,3");
  value_info(&g, 11, "maxo", 7, "1");
  value_info(&g, 11, "iou", 1, "1");
  value_info(&g, 12, "self", 1, NULL);
  pcase c = {.name = "NonMaxSuppression split (pre part once, NMS at run time, post part per K)", .nin = 4, .tol = 0};
  c.bytes = finish(&g, &c.len);
  /* box 1 overlaps box 0 (IoU 0.82): suppressed at iou 0.5, kept at 0.9; order 0, 2, 1 */
  static const float bx[12] = {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3}, sc[3] = {0.9f, 0.8f, 0.9f}, ious[2] = {0.5f, 0.9f};
  static const double w[2][9] = {{0, 0, 0, 0, 0, 2}, {0, 0, 0, 0, 0, 2, 0, 0, 1}};
  int64_t bs[3] = {1, 3, 4}, ss[3] = {1, 1, 3}, one = 1, mx = 3;
  for (int r = 0; r < 2; r++) {
    c.in[r][0] = f32v(3, bs, bx), c.in[r][1] = f32v(3, ss, sc), c.in[r][3] = f32v(1, &one, &ious[r]);
    CHECK_OK(tp_tensor_new(TP_I64, 1, &one, &mx, &c.in[r][2]));
    c.nwant[r] = r ? 9 : 6;
    for (int j = 0; j < c.nwant[r]; j++) c.want[r][j] = w[r][j];
  }
  run_case(&c);
}

static int load_pb(const char *root, const char *dir, const char *file, tp_tensor **t) {
  char path[1400];
  snprintf(path, sizeof path, "%s/onnx-node/%s/test_data_set_0/%s", root, dir, file);
  if (access(path, R_OK) != 0) return 0;
  if (tp_onnx_tensor_load(path, t) != TP_OK) return FAILF("%s: %s", path, tp_last_error()), 0;
  return 1;
}

/* QLinearConv(x, xs, xz, w, ws, wz, ys, yz): x fed, the rest initializers */
static void case_qlinearconv(const char *root) {
  static const char *const nm[9] = {"x", "x_scale", "x_zero_point", "w", "w_scale", "w_zero_point", "y_scale",
                                    "y_zero_point", NULL};
  tp_tensor *t[8] = {0}, *want = NULL;
  int ok = 1;
  for (int i = 0; i < 8 && ok; i++) {
    char f[32];
    snprintf(f, sizeof f, "input_%d.pb", i);
    ok = load_pb(root, "test_qlinearconv", f, &t[i]);
  }
  if (ok) ok = load_pb(root, "test_qlinearconv", "output_0.pb", &want);
  if (ok) {
    tp_pbw g = {0};
    node(&g, "QLinearConv", (const char *const *)nm, L("y"), 0, NULL);
    for (int i = 1; i < 8; i++) tensor_proto(&g, 5, nm[i], t[i]);
    char dims[64] = "";
    for (int k = 0, o = 0; k < tp_tensor_ndim(t[0]); k++)
      o += snprintf(dims + o, sizeof dims - (size_t)o, k ? ",%lld" : "%lld", (long long)tp_tensor_shape(t[0])[k]);
    value_info(&g, 11, "x", 2, dims);
    value_info(&g, 12, "y", 2, NULL);
    pcase c = {.name = "QLinearConv with constant weights (qconv2d)", .nin = 1, .tol = 0};
    c.bytes = finish(&g, &c.len);
    for (int r = 0; r < 2; r++) {
      c.in[r][0] = t[0], tp_tensor_retain(t[0]);
      c.nwant[r] = tp_tensor_numel(want);
      for (int64_t j = 0; j < c.nwant[r] && j < MAXV; j++) c.want[r][j] = tp_tensor_get_f64(want, j);
    }
    run_case(&c);
  }
  for (int i = 0; i < 8; i++) tp_tensor_release(t[i]);
  tp_tensor_release(want);
}

/* LSTM(X, W, R, B, sequence_lens, initial_h, initial_c, P) -> ("", Y_h):
 * W R B P initializers, the rest fed */
static void case_lstm(const char *root) {
  static const char *const nm[9] = {"X", "W", "R", "B", "sequence_lens", "initial_h", "initial_c", "P", NULL};
  tp_tensor *t[8] = {0}, *want = NULL;
  int ok = 1;
  for (int i = 0; i < 8 && ok; i++) {
    char f[32];
    snprintf(f, sizeof f, "input_%d.pb", i);
    ok = load_pb(root, "test_lstm_with_peepholes", f, &t[i]);
  }
  if (ok) ok = load_pb(root, "test_lstm_with_peepholes", "output_0.pb", &want);
  if (ok) {
    tp_pbw g = {0};
    tp_pbw at[1] = {attr_int("hidden_size", tp_tensor_shape(t[2])[2])};
    node(&g, "LSTM", (const char *const *)nm, L("", "Y_h"), 1, at);
    static const int konst[4] = {1, 2, 3, 7};
    for (int k = 0; k < 4; k++) tensor_proto(&g, 5, nm[konst[k]], t[konst[k]]);
    static const int fed[4] = {0, 4, 5, 6};
    for (int k = 0; k < 4; k++) {
      tp_tensor *x = t[fed[k]];
      char dims[64] = "";
      for (int d = 0, o = 0; d < tp_tensor_ndim(x); d++)
        o += snprintf(dims + o, sizeof dims - (size_t)o, d ? ",%lld" : "%lld", (long long)tp_tensor_shape(x)[d]);
      value_info(&g, 11, nm[fed[k]], tp_tensor_dtype(x) == TP_F32 ? 1 : tp_tensor_dtype(x) == TP_I32 ? 6 : 7, dims);
    }
    value_info(&g, 12, "Y_h", 1, NULL);
    pcase c = {.name = "LSTM with constant W, R, B, P", .nin = 4, .tol = 1e-5};
    c.bytes = finish(&g, &c.len);
    for (int r = 0; r < 2; r++) {
      for (int k = 0; k < 4; k++) c.in[r][k] = t[fed[k]], tp_tensor_retain(t[fed[k]]);
      c.nwant[r] = tp_tensor_numel(want);
      for (int64_t j = 0; j < c.nwant[r] && j < MAXV; j++) c.want[r][j] = tp_tensor_get_f64(want, j);
    }
    run_case(&c);
  }
  for (int i = 0; i < 8; i++) tp_tensor_release(t[i]);
  tp_tensor_release(want);
}

int main(void) {
  case_if();
  case_loop();
  case_scan0();
  case_nms_split();
  char root[1024];
  const char *env = getenv("TP_CONFORMANCE"), *req = getenv("TP_REQUIRE_DATA");
  if (env && *env) snprintf(root, sizeof root, "%s", env);
  else snprintf(root, sizeof root, "%s/../shared/conformance", TP_SOURCE_DIR);
  char probe[1200];
  snprintf(probe, sizeof probe, "%s/onnx-node/test_qlinearconv/model.onnx", root);
  if (access(probe, R_OK) == 0) {
    case_qlinearconv(root);
    case_lstm(root);
  } else if (req && *req && strcmp(req, "0")) {
    FAILF("conformance data not found (%s) and TP_REQUIRE_DATA is set", probe);
  } else {
    printf("conformance data not found (%s): the QLinearConv and LSTM sweeps skipped\n", probe);
  }
  printf("%s test_onnx_alloc_plans (%d checks, %d failures)\n", failures ? "FAIL" : "ok  ", checks, failures);
  return failures ? 1 : 0;
}
