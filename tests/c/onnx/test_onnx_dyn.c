/* test_onnx_dyn.c - the ops with data-dependent output shapes (NonZero,
 * Compress, Unique, NonMaxSuppression: value specializations) and
 * TfIdfVectorizer (run time), through tp_onnx_model with every input fed
 * at run time, eager and stax. One-node ModelProtos are built here; every
 * expected value is computed by hand (in the comments). */
#include "check.h"
#include "onnx/pb.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void sub(tp_pbw *w, uint32_t num, tp_pbw *s) {
  tp_pbw_bytes(w, num, s->p, s->n);
  tp_buf_free(s);
}
static void str(tp_pbw *w, uint32_t num, const char *s) { tp_pbw_bytes(w, num, s, strlen(s)); }

/* elem: ONNX dtype (1 float, 7 int64, 9 bool); nd < 0: no shape. */
static void value_info(tp_pbw *g, uint32_t num, const char *name, int elem, int nd, const int64_t *dims) {
  tp_pbw vi = {0}, ty = {0}, tt = {0}, sh = {0};
  for (int i = 0; i < nd; i++) {
    tp_pbw dim = {0};
    tp_pbw_varint(&dim, 1, (uint64_t)dims[i]);
    sub(&sh, 1, &dim);
  }
  tp_pbw_varint(&tt, 1, (uint64_t)elem);
  if (nd >= 0) sub(&tt, 2, &sh);
  sub(&ty, 1, &tt);
  str(&vi, 1, name);
  sub(&vi, 2, &ty);
  sub(g, num, &vi);
}

/* An attribute: s (STRING), else nints >= 0 (INTS), nfl >= 0 (FLOATS), else i (INT). */
typedef struct uat { const char *name; const char *s; int nints; int64_t ints[8]; int nfl; float fl[8]; int64_t i; } uat;

static void node(tp_pbw *g, const char *op, const char *ins, const char *outs, int na, const uat *at) {
  tp_pbw n = {0};
  char buf[128];
  snprintf(buf, sizeof buf, "%s", ins);
  for (char *t = buf, *e; t; t = e) { /* "" entries are absent optional inputs */
    e = strchr(t, ',');
    if (e) *e++ = 0;
    str(&n, 1, t);
  }
  snprintf(buf, sizeof buf, "%s", outs);
  for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) str(&n, 2, t);
  str(&n, 3, op);
  str(&n, 4, op);
  for (int k = 0; k < na; k++) {
    tp_pbw a = {0};
    str(&a, 1, at[k].name);
    if (at[k].s) {
      tp_pbw_bytes(&a, 4, at[k].s, strlen(at[k].s));
      tp_pbw_varint(&a, 20, 3);
    } else if (at[k].nints > 0) {
      for (int j = 0; j < at[k].nints; j++) tp_pbw_varint(&a, 8, (uint64_t)at[k].ints[j]);
      tp_pbw_varint(&a, 20, 7);
    } else if (at[k].nfl > 0) {
      tp_pbw_bytes(&a, 7, at[k].fl, sizeof(float) * (size_t)at[k].nfl); /* packed */
      tp_pbw_varint(&a, 20, 6);
    } else {
      tp_pbw_varint(&a, 3, (uint64_t)at[k].i);
      tp_pbw_varint(&a, 20, 2);
    }
    sub(&n, 5, &a);
  }
  sub(g, 1, &n);
}

static tp_onnx_model *finish(tp_pbw *g, const char *backend) {
  tp_pbw m = {0}, os = {0};
  tp_pbw_varint(&m, 1, 8);
  str(&os, 1, "");
  tp_pbw_varint(&os, 2, 17);
  sub(&m, 8, &os);
  str(g, 2, "dyn");
  sub(&m, 7, g);
  tp_onnx_model *md = NULL;
  CHECK_OK(tp_onnx_model_load(m.p, m.n, &md));
  tp_buf_free(&m);
  if (md && backend) CHECK_OK(tp_onnx_model_use_backend(md, backend));
  return md;
}

static tp_tensor *ten(tp_dtype dt, int nd, const int64_t *sh, const void *v) {
  tp_tensor *t = NULL;
  CHECK_OK(tp_tensor_new(dt, nd, sh, v, &t));
  return t;
}

/* got has shape sh and values want (as doubles). */
static void expect(const char *what, tp_tensor *got, int nd, const int64_t *sh, const double *want) {
  int ok = got && tp_tensor_ndim(got) == nd;
  for (int i = 0; ok && i < nd; i++) ok = tp_tensor_shape(got)[i] == sh[i];
  if (!ok) {
    FAILF("%s: wrong shape", what);
    return;
  }
  for (int64_t i = 0; i < tp_tensor_numel(got); i++)
    if (fabs(tp_tensor_get_f64(got, i) - want[i]) > 1e-6) {
      FAILF("%s: element %lld is %g, expected %g", what, (long long)i, tp_tensor_get_f64(got, i), want[i]);
      return;
    }
}

static int run(tp_onnx_model *m, int nin, tp_tensor **in, int nout, tp_tensor **out) {
  int got = 0;
  tp_status s = tp_onnx_model_run(m, nin, in, nout, out, &got);
  for (int i = 0; i < nin; i++) tp_tensor_release(in[i]);
  if (s) printf("run: %s\n", tp_last_error());
  return s == TP_OK && got == nout;
}

static void release(int n, tp_tensor **t) {
  for (int i = 0; i < n; i++) tp_tensor_release(t[i]), t[i] = NULL;
}

static void test_nonzero(const char *be) {
  tp_pbw g = {0};
  int64_t sh[2] = {2, 3};
  node(&g, "NonZero", "x", "y", 0, NULL);
  value_info(&g, 11, "x", 1, 2, sh);
  value_info(&g, 12, "y", 7, -1, NULL);
  tp_onnx_model *m = finish(&g, be);
  if (!m) return;
  float a[6] = {1, 0, 2, 0, 0, 3}, b[6] = {0, 5, 0, 0, 0, 0};
  tp_tensor *in[1], *out[1] = {0};
  /* [[1,0,2],[0,0,3]]: (0,0) (0,2) (1,2) */
  in[0] = ten(TP_F32, 2, sh, a);
  CHECK(run(m, 1, in, 1, out));
  int64_t s1[2] = {2, 3}, s2[2] = {2, 1};
  double w1[6] = {0, 0, 1, 0, 2, 2}, w2[2] = {0, 1};
  expect("NonZero", out[0], 2, s1, w1);
  release(1, out);
  in[0] = ten(TP_F32, 2, sh, b); /* one non-zero at (0,1): a new value, a new specialization */
  CHECK(run(m, 1, in, 1, out));
  expect("NonZero (new value)", out[0], 2, s2, w2);
  release(1, out);
  CHECK(tp_onnx_model_num_specializations(m) == 2);
  tp_onnx_model_free(m);
}

static void test_compress(const char *be) {
  tp_pbw g = {0};
  int64_t sh[2] = {2, 3}, c3 = 3;
  uat ax = {"axis", NULL, 0, {0}, 0, {0}, -1};
  node(&g, "Compress", "x,c", "y", 1, &ax);
  value_info(&g, 11, "x", 1, 2, sh);
  value_info(&g, 11, "c", 9, 1, &c3);
  value_info(&g, 12, "y", 1, -1, NULL);
  tp_onnx_model *m = finish(&g, be);
  if (!m) return;
  float x1[6] = {1, 2, 3, 4, 5, 6}, x2[6] = {-1, -2, -3, -4, -5, -6};
  uint8_t c[3] = {1, 0, 1};
  tp_tensor *in[2], *out[1] = {0};
  int64_t ys[2] = {2, 2};
  double w1[4] = {1, 3, 4, 6}, w2[4] = {-1, -3, -4, -6};
  in[0] = ten(TP_F32, 2, sh, x1), in[1] = ten(TP_BOOL, 1, &c3, c);
  CHECK(run(m, 2, in, 1, out));
  expect("Compress axis -1", out[0], 2, ys, w1);
  release(1, out);
  /* the same condition with new data: the data is a run-time input, no new specialization */
  in[0] = ten(TP_F32, 2, sh, x2), in[1] = ten(TP_BOOL, 1, &c3, c);
  CHECK(run(m, 2, in, 1, out));
  expect("Compress new data", out[0], 2, ys, w2);
  release(1, out);
  CHECK(tp_onnx_model_num_specializations(m) == 1);
  /* a condition true past the axis' extent is an error naming it; the model stays usable */
  int64_t c4 = 4;
  uint8_t cbad[4] = {0, 0, 0, 1};
  tp_onnx_model_free(m);
  g = (tp_pbw){0};
  node(&g, "Compress", "x,c", "y", 1, &ax);
  value_info(&g, 11, "x", 1, 2, sh);
  value_info(&g, 11, "c", 9, 1, &c4);
  value_info(&g, 12, "y", 1, -1, NULL);
  m = finish(&g, be);
  if (!m) return;
  in[0] = ten(TP_F32, 2, sh, x1), in[1] = ten(TP_BOOL, 1, &c4, cbad);
  int got = 0;
  CHECK(tp_onnx_model_run(m, 2, in, 1, out, &got) != TP_OK);
  CHECK(strstr(tp_last_error(), "past the axis' extent 3") != NULL);
  release(2, in);
  cbad[3] = 0, cbad[1] = 1;
  in[0] = ten(TP_F32, 2, sh, x1), in[1] = ten(TP_BOOL, 1, &c4, cbad);
  CHECK(run(m, 2, in, 1, out));
  int64_t ys1[2] = {2, 1};
  double w3[2] = {2, 5};
  expect("Compress after an error", out[0], 2, ys1, w3);
  release(1, out);
  tp_onnx_model_free(m);
  /* a float condition is refused naming the dtype */
  g = (tp_pbw){0};
  node(&g, "Compress", "x,c", "y", 1, &ax);
  value_info(&g, 11, "x", 1, 2, sh);
  value_info(&g, 11, "c", 1, 1, &c3);
  value_info(&g, 12, "y", 1, -1, NULL);
  m = finish(&g, be);
  if (!m) return;
  float cf[3] = {1, 0, 1};
  in[0] = ten(TP_F32, 2, sh, x1), in[1] = ten(TP_F32, 1, &c3, cf);
  CHECK(tp_onnx_model_run(m, 2, in, 1, out, &got) != TP_OK &&
        strstr(tp_last_error(), "condition must be a 1-d bool tensor, got float32"));
  release(2, in);
  tp_onnx_model_free(m);
}

static void test_unique(const char *be, int sorted) {
  tp_pbw g = {0};
  int64_t n = 6;
  uat so = {"sorted", NULL, 0, {0}, 0, {0}, sorted};
  node(&g, "Unique", "x", "y,idx,inv,cnt", 1, &so);
  value_info(&g, 11, "x", 1, 1, &n);
  const char *outs[4] = {"y", "idx", "inv", "cnt"};
  for (int i = 0; i < 4; i++) value_info(&g, 12, outs[i], i ? 7 : 1, -1, NULL);
  tp_onnx_model *m = finish(&g, be);
  if (!m) return;
  float x[6] = {2, 1, 1, 3, 4, 3};
  tp_tensor *in[1] = {ten(TP_F32, 1, &n, x)}, *out[4] = {0};
  CHECK(run(m, 1, in, 4, out));
  int64_t k = 4;
  if (sorted) { /* 1 2 3 4; first at 1 0 3 4 */
    double y[4] = {1, 2, 3, 4}, idx[4] = {1, 0, 3, 4}, inv[6] = {1, 0, 0, 2, 3, 2}, cnt[4] = {2, 1, 2, 1};
    expect("Unique sorted y", out[0], 1, &k, y);
    expect("Unique sorted indices", out[1], 1, &k, idx);
    expect("Unique sorted inverse", out[2], 1, &n, inv);
    expect("Unique sorted counts", out[3], 1, &k, cnt);
  } else { /* by first occurrence: 2 1 3 4 */
    double y[4] = {2, 1, 3, 4}, idx[4] = {0, 1, 3, 4}, inv[6] = {0, 1, 1, 2, 3, 2}, cnt[4] = {1, 2, 2, 1};
    expect("Unique y", out[0], 1, &k, y);
    expect("Unique indices", out[1], 1, &k, idx);
    expect("Unique inverse", out[2], 1, &n, inv);
    expect("Unique counts", out[3], 1, &k, cnt);
  }
  release(4, out);
  tp_onnx_model_free(m);
}

static void test_unique_axis(const char *be) {
  /* rows of [[1,0],[0,1],[1,0]] along axis 0: [0,1] < [1,0] */
  tp_pbw g = {0};
  int64_t sh[2] = {3, 2};
  uat ax = {"axis", NULL, 0, {0}, 0, {0}, 0};
  node(&g, "Unique", "x", "y,idx,inv,cnt", 1, &ax);
  value_info(&g, 11, "x", 7, 2, sh);
  const char *outs[4] = {"y", "idx", "inv", "cnt"};
  for (int i = 0; i < 4; i++) value_info(&g, 12, outs[i], 7, -1, NULL);
  tp_onnx_model *m = finish(&g, be);
  if (!m) return;
  int64_t x[6] = {1, 0, 0, 1, 1, 0};
  tp_tensor *in[1] = {ten(TP_I64, 2, sh, x)}, *out[4] = {0};
  CHECK(run(m, 1, in, 4, out));
  int64_t ys[2] = {2, 2}, k = 2, n = 3;
  double y[4] = {0, 1, 1, 0}, idx[2] = {1, 0}, inv[3] = {1, 0, 1}, cnt[2] = {1, 2};
  expect("Unique axis y", out[0], 2, ys, y);
  expect("Unique axis indices", out[1], 1, &k, idx);
  expect("Unique axis inverse", out[2], 1, &n, inv);
  expect("Unique axis counts", out[3], 1, &k, cnt);
  release(4, out);
  tp_onnx_model_free(m);
}

static void test_nms(const char *be) {
  tp_pbw g = {0};
  int64_t bs[3] = {1, 3, 4}, ss[3] = {1, 1, 3}, one = 1;
  node(&g, "NonMaxSuppression", "boxes,scores,maxo,iou", "sel", 0, NULL);
  value_info(&g, 11, "boxes", 1, 3, bs);
  value_info(&g, 11, "scores", 1, 3, ss);
  value_info(&g, 11, "maxo", 7, 1, &one);
  value_info(&g, 11, "iou", 1, 1, &one);
  value_info(&g, 12, "sel", 7, -1, NULL);
  tp_onnx_model *m = finish(&g, be);
  if (!m) return;
  /* box 0 [0,0]-[1,1], box 1 shifted by 0.1 in x (IoU 0.9/1.1 = 0.82 with box 0), box 2 disjoint;
   * scores 0.9, 0.8, 0.9: order 0, 2 (tie: lower index first), 1; box 1 suppressed at iou 0.5 */
  float boxes[12] = {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3}, scores[3] = {0.9f, 0.8f, 0.9f}, iou = 0.5f, iou2 = 0.9f;
  int64_t mx = 3, mx1 = 1;
  tp_tensor *in[4], *out[1] = {0};
  in[0] = ten(TP_F32, 3, bs, boxes), in[1] = ten(TP_F32, 3, ss, scores);
  in[2] = ten(TP_I64, 1, &one, &mx), in[3] = ten(TP_F32, 1, &one, &iou);
  CHECK(run(m, 4, in, 1, out));
  int64_t s2[2] = {2, 3}, s3[2] = {3, 3}, s1[2] = {1, 3};
  double w2[6] = {0, 0, 0, 0, 0, 2}, w3[9] = {0, 0, 0, 0, 0, 2, 0, 0, 1}, w1[3] = {0, 0, 0};
  expect("NMS iou 0.5", out[0], 2, s2, w2);
  release(1, out);
  in[0] = ten(TP_F32, 3, bs, boxes), in[1] = ten(TP_F32, 3, ss, scores);
  in[2] = ten(TP_I64, 1, &one, &mx), in[3] = ten(TP_F32, 1, &one, &iou2);
  CHECK(run(m, 4, in, 1, out));
  expect("NMS iou 0.9 keeps all", out[0], 2, s3, w3);
  release(1, out);
  in[0] = ten(TP_F32, 3, bs, boxes), in[1] = ten(TP_F32, 3, ss, scores);
  in[2] = ten(TP_I64, 1, &one, &mx1), in[3] = ten(TP_F32, 1, &one, &iou);
  CHECK(run(m, 4, in, 1, out));
  expect("NMS max 1", out[0], 2, s1, w1);
  release(1, out);
  /* an iou_threshold outside [0, 1] is an error naming it; then the largest max: every box */
  float iou_bad = 1.5f;
  int64_t huge = INT64_MAX;
  in[0] = ten(TP_F32, 3, bs, boxes), in[1] = ten(TP_F32, 3, ss, scores);
  in[2] = ten(TP_I64, 1, &one, &mx), in[3] = ten(TP_F32, 1, &one, &iou_bad);
  int got0 = 0;
  CHECK(tp_onnx_model_run(m, 4, in, 1, out, &got0) != TP_OK && strstr(tp_last_error(), "iou_threshold must be in [0, 1], got 1.5"));
  release(4, in);
  in[0] = ten(TP_F32, 3, bs, boxes), in[1] = ten(TP_F32, 3, ss, scores);
  in[2] = ten(TP_I64, 1, &one, &huge), in[3] = ten(TP_F32, 1, &one, &iou2);
  CHECK(run(m, 4, in, 1, out));
  expect("NMS max INT64_MAX", out[0], 2, s3, w3);
  release(1, out);
  tp_onnx_model_free(m);
  /* wrong ranks: a clear error, not a crash */
  g = (tp_pbw){0};
  int64_t bad[2] = {3, 4};
  node(&g, "NonMaxSuppression", "boxes,scores", "sel", 0, NULL);
  value_info(&g, 11, "boxes", 1, 2, bad);
  value_info(&g, 11, "scores", 1, 3, ss);
  value_info(&g, 12, "sel", 7, -1, NULL);
  m = finish(&g, be);
  if (!m) return;
  in[0] = ten(TP_F32, 2, bad, boxes), in[1] = ten(TP_F32, 3, ss, scores);
  int got = 0;
  tp_status s = tp_onnx_model_run(m, 2, in, 1, out, &got);
  CHECK(s != TP_OK && strstr(tp_last_error(), "boxes must be float32 [batches, boxes, 4]"));
  release(2, in);
  tp_onnx_model_free(m);
}

/* A model split at the NonMaxSuppression (boxes computed by a Relu from
 * the input): the pre part is compiled once, the post part (a Cast of the
 * selection) once per selected count; the computed boxes pass through as
 * an output. Two NonMaxSuppressions: both run at run time between the
 * same two parts, the post part once per pair of counts. */
static void test_nms_split(const char *be, int two) {
  tp_pbw g = {0};
  int64_t bs[3] = {1, 3, 4}, ss[3] = {1, 1, 3}, one = 1;
  uat to = {"to", NULL, 0, {0}, 0, {0}, 1};
  node(&g, "Relu", "bx", "boxes", 0, NULL);
  node(&g, "NonMaxSuppression", "boxes,scores,maxo,iou", "sel", 0, NULL);
  node(&g, "Cast", "sel", "self", 1, &to);
  if (two) node(&g, "NonMaxSuppression", "boxes,scores,maxo,iou", "sel2", 0, NULL);
  value_info(&g, 11, "bx", 1, 3, bs);
  value_info(&g, 11, "scores", 1, 3, ss);
  value_info(&g, 11, "maxo", 7, 1, &one);
  value_info(&g, 11, "iou", 1, 1, &one);
  value_info(&g, 12, "self", 1, -1, NULL);
  value_info(&g, 12, "boxes", 1, -1, NULL);
  if (two) value_info(&g, 12, "sel2", 7, -1, NULL);
  tp_onnx_model *m = finish(&g, be);
  if (!m) return;
  /* as test_nms: iou 0.5 selects boxes 0, 2; iou 0.9 all three; max 0 none */
  float boxes[12] = {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 2, 1, 3}, scores[3] = {0.9f, 0.8f, 0.9f};
  float ious[4] = {0.5f, 0.9f, 0.5f, 0.9f};
  int64_t mxs[4] = {3, 3, 3, 0}, s2[2] = {2, 3}, s3[2] = {3, 3}, s0[2] = {0, 3};
  double w2[6] = {0, 0, 0, 0, 0, 2}, w3[9] = {0, 0, 0, 0, 0, 2, 0, 0, 1}, wb[12];
  for (int i = 0; i < 12; i++) wb[i] = boxes[i];
  for (int r = 0; r < 4; r++) {
    tp_tensor *in[4], *out[3] = {0};
    in[0] = ten(TP_F32, 3, bs, boxes), in[1] = ten(TP_F32, 3, ss, scores);
    in[2] = ten(TP_I64, 1, &one, &mxs[r]), in[3] = ten(TP_F32, 1, &one, &ious[r]);
    CHECK(run(m, 4, in, two ? 3 : 2, out));
    int64_t *sh = r == 3 ? s0 : ious[r] == 0.5f ? s2 : s3;
    double *w = r == 3 ? NULL : ious[r] == 0.5f ? w2 : w3;
    expect("split NMS selection", out[0], 2, sh, w);
    expect("split NMS boxes", out[1], 3, bs, wb);
    if (two) expect("second NMS", out[2], 2, sh, w);
    release(3, out);
  }
  char *ex = NULL;
  CHECK_OK(tp_onnx_model_explain(m, &ex));
  if (ex && !two) {
    CHECK(strstr(ex, "pre part 1 compile, 4 calls") != NULL);
    CHECK(strstr(ex, "3 made") != NULL); /* K = 2, 3, 0 */
  }
  if (ex && two) /* both NMS run between the pre and the post part: no value input */
    CHECKF(strstr(ex, "pre part 1 compile, 4 calls") && strstr(ex, "3 made") && !strstr(ex, "value guard") &&
               strstr(ex, "K=2,2") && strstr(ex, "K=0,0"),
           "%s", ex);
  tp_free_buffer(ex);
  /* a negative max_output_boxes_per_class or a NaN iou_threshold: errors; the model stays usable */
  int64_t neg = -1, mx = 3;
  float nan_ = NAN, iou = 0.5f;
  for (int r = 0; r < 2; r++) {
    tp_tensor *in[4], *out[3] = {0};
    in[0] = ten(TP_F32, 3, bs, boxes), in[1] = ten(TP_F32, 3, ss, scores);
    in[2] = ten(TP_I64, 1, &one, r ? &mx : &neg), in[3] = ten(TP_F32, 1, &one, r ? &nan_ : &iou);
    int got = 0;
    tp_status st = tp_onnx_model_run(m, 4, in, two ? 3 : 2, out, &got);
    CHECK(st != TP_OK && strstr(tp_last_error(), r ? "iou_threshold must be in [0, 1], got nan" : "max_output_boxes_per_class must be >= 0, got -1"));
    release(4, in);
  }
  tp_tensor *in[4], *out[3] = {0};
  in[0] = ten(TP_F32, 3, bs, boxes), in[1] = ten(TP_F32, 3, ss, scores);
  in[2] = ten(TP_I64, 1, &one, &mx), in[3] = ten(TP_F32, 1, &one, &iou);
  CHECK(run(m, 4, in, two ? 3 : 2, out));
  expect("split NMS after errors", out[0], 2, s2, w2);
  release(3, out);
  tp_onnx_model_free(m);
}

/* pool: unigrams 1, 3; bigram (1, 2); columns 0, 1, 2 */
static tp_onnx_model *tfidf_model(const char *be, const char *mode, int skip, int weights, int xelem) {
  tp_pbw g = {0};
  int64_t sh[2] = {1, 6};
  uat at[8] = {{"mode", mode, 0, {0}, 0, {0}, 0},
               {"min_gram_length", NULL, 0, {0}, 0, {0}, 1},
               {"max_gram_length", NULL, 0, {0}, 0, {0}, 2},
               {"max_skip_count", NULL, 0, {0}, 0, {0}, skip},
               {"pool_int64s", NULL, 4, {1, 3, 1, 2}, 0, {0}, 0},
               {"ngram_counts", NULL, 2, {0, 2}, 0, {0}, 0},
               {"ngram_indexes", NULL, 3, {0, 1, 2}, 0, {0}, 0},
               {"weights", NULL, 0, {0}, 3, {0.5f, 2, 3}, 0}};
  node(&g, "TfIdfVectorizer", "x", "y", weights ? 8 : 7, at);
  value_info(&g, 11, "x", xelem, 2, sh);
  value_info(&g, 12, "y", 1, -1, NULL);
  return finish(&g, be);
}

static void test_tfidf(const char *be) {
  int64_t sh[2] = {1, 6}, ys[2] = {1, 3};
  /* x = 1 5 2 2 3 1: unigram 1 twice, 3 once; bigram (1,2) only at distance 2 (x0, x2) */
  int64_t x[6] = {1, 5, 2, 2, 3, 1}, x2[6] = {1, 2, 1, 2, 3, 3};
  struct { const char *mode; int skip, w; double want[3]; } cases[] = {
      {"TF", 0, 0, {2, 1, 0}},    {"TF", 1, 0, {2, 1, 1}},          {"TFIDF", 1, 1, {1, 2, 3}},
      {"IDF", 1, 1, {0.5, 2, 3}}, {"IDF", 0, 0, {1, 1, 0}},         {"TFIDF", 0, 0, {2, 1, 0}}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tp_onnx_model *m = tfidf_model(be, cases[i].mode, cases[i].skip, cases[i].w, 7);
    if (!m) return;
    tp_tensor *in[1] = {ten(TP_I64, 2, sh, x)}, *out[1] = {0};
    char what[64];
    snprintf(what, sizeof what, "TfIdf %s skip %d", cases[i].mode, cases[i].skip);
    CHECK(run(m, 1, in, 1, out));
    expect(what, out[0], 2, ys, cases[i].want);
    release(1, out);
    if (i == 1) { /* new tokens: 1 1, 3 twice, (1,2) at 0-1 and 2-3: no new specialization */
      double w2[3] = {2, 2, 2};
      in[0] = ten(TP_I64, 2, sh, x2);
      CHECK(run(m, 1, in, 1, out));
      expect("TfIdf new tokens", out[0], 2, ys, w2);
      release(1, out);
      CHECK(tp_onnx_model_num_specializations(m) == 1);
    }
    tp_onnx_model_free(m);
  }
  /* bad input: float tokens, an unknown mode */
  struct { const char *mode; int elem; const char *needle; } bad[] = {
      {"TF", 1, "X must be int32 or int64 tokens"}, {"BM25", 7, "mode 'BM25' is not TF, IDF or TFIDF"}};
  for (int i = 0; i < 2; i++) {
    tp_onnx_model *m = tfidf_model(be, bad[i].mode, 0, 0, bad[i].elem);
    if (!m) continue;
    float xf[6] = {0};
    tp_tensor *in = bad[i].elem == 1 ? ten(TP_F32, 2, sh, xf) : ten(TP_I64, 2, sh, x), *out = NULL;
    int got = 0;
    tp_status s = tp_onnx_model_run(m, 1, &in, 1, &out, &got);
    if (s == TP_OK || !strstr(tp_last_error(), bad[i].needle))
      FAILF("TfIdf bad input %d: expected an error naming '%s', got %s", i, bad[i].needle, s ? tp_last_error() : "success");
    tp_tensor_release(in);
    tp_tensor_release(out);
    tp_onnx_model_free(m);
  }
}

int main(void) {
  const char *backends[2] = {NULL, "stax"};
  for (int b = 0; b < 2; b++) {
    test_nonzero(backends[b]);
    test_compress(backends[b]);
    test_unique(backends[b], 1);
    test_unique(backends[b], 0);
    test_unique_axis(backends[b]);
    test_nms(backends[b]);
    test_nms_split(backends[b], 0);
    test_nms_split(backends[b], 1);
    test_tfidf(backends[b]);
  }
  if (failures) printf("%d failure(s)\n", failures);
  else printf("ok\n");
  return failures != 0;
}
