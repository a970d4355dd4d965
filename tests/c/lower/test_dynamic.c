/* test_dynamic.c - one stax plan for every size of a dynamic dim (issue 14
 * item 1; src/lower/symbolic.c, src/compiler/backends/stax_dynamic.c):
 * functions compiled with dynamic=True through the public C API, called at
 * many sizes of one dim, each result checked against a double-precision
 * reference computed here; explain() must show one capture, one entry, the
 * template, one instantiation per new size and specializations only where
 * the rule says (sizes 0 and 1, an extent not whole at the size, a static
 * dim changed), each with its reason. */
#include "compiler/compiler.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"

static float frand(unsigned *st) {
  *st = *st * 1103515245u + 12345u;
  return (float)((*st >> 8) & 0xffff) / 65536.0f - 0.5f;
}

static tp_tensor *rnd(int nd, const int64_t *shape, unsigned seed) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= shape[i];
  float *v = malloc(sizeof(float) * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; i++) v[i] = frand(&seed) * 2;
  tp_tensor *t = NULL;
  if (tp_tensor_new(TP_F32, nd, shape, v, &t)) FAILF("tensor_new: %s", tp_last_error());
  free(v);
  return t;
}

static float *data(tp_tensor *t) {
  int64_t n = tp_tensor_numel(t);
  float *v = malloc(sizeof(float) * (size_t)(n ? n : 1));
  if (tp_tensor_read(t, v, sizeof(float) * (size_t)n)) FAILF("read: %s", tp_last_error());
  return v;
}

/* The number after "key": in the explain JSON (the first occurrence), -1. */
static double json_num(const char *json, const char *key) {
  char k[80];
  snprintf(k, sizeof k, "\"%s\": ", key);
  const char *p = json ? strstr(json, k) : NULL;
  return p ? atof(p + strlen(k)) : -1;
}

static char *explain(tp_compiled *c) {
  char *j = NULL;
  if (tp_compiled_explain(c, &j)) FAILF("explain: %s", tp_last_error());
  return j;
}

/* |got - want| <= 1e-4 + 1e-4 |want| everywhere */
static void close_to(const float *got, const double *want, int64_t n, const char *what, int64_t size, int line) {
  for (int64_t i = 0; i < n; i++)
    if (!(fabs(got[i] - want[i]) <= 1e-4 + 1e-4 * fabs(want[i]))) {
      FAILF_AT(line, "%s at size %lld: [%lld] = %g, the reference %g", what, (long long)size, (long long)i,
               got[i], want[i]);
      return;
    }
  checks++;
}

/* ---- an MLP, dynamic batch: y = softmax(relu(x W1^T + b1) W2^T + b2) ---- */
enum { IN = 12, HID = 20, OUT = 6 };
/* fn compiled with dynamic shapes (tp_compile_options.dynamic) */
static tp_compiled *compile_dynamic(tp_fn f) {
  tp_callable fn = {f, NULL};
  tp_compile_options o;
  tp_compile_options_init(&o);
  o.dynamic = 1;
  tp_compiled *c = NULL;
  CHECK_OK(tp_compile(&fn, &o, &c));
  return c;
}

static tp_tensor *W1, *B1, *W2, *B2;

static tp_status mlp(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_tensor *h = NULL, *r = NULL, *z = NULL;
  tp_attrs a;
  tp_attrs_init(&a);
  a.dim = 1;
  tp_status s = tp_linear(in[0], W1, B1, &h);
  if (!s) s = tp_relu(h, &r);
  if (!s) s = tp_linear(r, W2, B2, &z);
  if (!s) s = tp_op_call(TP_OP_SOFTMAX, 1, &z, &a, &outs[0]);
  tp_tensor_release(h), tp_tensor_release(r), tp_tensor_release(z);
  *nout = s ? 0 : 1;
  return s;
}

static void mlp_ref(const float *x, int64_t B, const float *w1, const float *b1, const float *w2, const float *b2,
                    double *y) {
  for (int64_t i = 0; i < B; i++) {
    double h[HID], z[OUT], mx = -1e300, sum = 0;
    for (int j = 0; j < HID; j++) {
      double acc = b1[j];
      for (int k = 0; k < IN; k++) acc += (double)x[i * IN + k] * w1[j * IN + k];
      h[j] = acc > 0 ? acc : 0;
    }
    for (int j = 0; j < OUT; j++) {
      double acc = b2[j];
      for (int k = 0; k < HID; k++) acc += h[k] * w2[j * HID + k];
      z[j] = acc;
      if (acc > mx) mx = acc;
    }
    for (int j = 0; j < OUT; j++) sum += exp(z[j] - mx);
    for (int j = 0; j < OUT; j++) y[i * OUT + j] = exp(z[j] - mx) / sum;
  }
}

static void run_mlp(tp_compiled *c, int64_t B, const float *w1, const float *b1, const float *w2, const float *b2,
                    int line) {
  int64_t sh[2] = {B, IN};
  tp_tensor *x = rnd(2, sh, (unsigned)(B * 7 + 1)), *y = NULL;
  int n = 0;
  tp_status s = tp_compiled_call(c, 1, &x, 1, &y, &n);
  if (s || n != 1) {
    FAILF_AT(line, "call at batch %lld: %s", (long long)B, tp_last_error());
    tp_tensor_release(x);
    return;
  }
  CHECK(tp_tensor_ndim(y) == 2 && tp_tensor_shape(y)[0] == B && tp_tensor_shape(y)[1] == OUT);
  float *xv = data(x), *yv = data(y);
  double *ref = malloc(sizeof(double) * (size_t)(B * OUT + 1));
  mlp_ref(xv, B, w1, b1, w2, b2, ref);
  close_to(yv, ref, B * OUT, "mlp", B, line);
  free(xv), free(yv), free(ref);
  tp_tensor_release(x), tp_tensor_release(y);
}

static void test_batch(void) {
  int64_t s1[2] = {HID, IN}, s2[1] = {HID}, s3[2] = {OUT, HID}, s4[1] = {OUT};
  W1 = rnd(2, s1, 11), B1 = rnd(1, s2, 12), W2 = rnd(2, s3, 13), B2 = rnd(1, s4, 14);
  float *w1 = data(W1), *b1 = data(B1), *w2 = data(W2), *b2 = data(B2);
  tp_compiled *c = compile_dynamic(mlp);
  /* captured at 4, then 9 new sizes (one of them 1), then sizes seen before
   * (the cache keeps 8 plans: 33 evicts 5, the least recently used one
   * after 3, which holds the packed weights and stays) */
  const int64_t sizes[] = {4, 3, 5, 8, 17, 64, 130, 2, 1, 33, 5, 130, 3};
  for (int i = 0; i < (int)TP_ARRAY_LEN(sizes); i++) run_mlp(c, sizes[i], w1, b1, w2, b2, __LINE__);
  char *j = explain(c);
  CHECKF(tp_compiled_num_captures(c) == 1 && tp_compiled_num_entries(c) == 1,
         "one capture and one entry expected: %d, %d", tp_compiled_num_captures(c), tp_compiled_num_entries(c));
  CHECKF(j && strstr(j, "\"template\": true") && strstr(j, "\"dims\": [\"inputs[0].shape[0]\"]"),
         "explain: the batch dim is the symbol and the template exists: %s", j ? j : "");
  /* 8 new sizes >= 2 and 5 again are instantiations, 1 is a specialization,
   * 3 lowered samples + 1; 130 and 3 are cache hits */
  CHECKF(json_num(j, "instantiations") == 9 && json_num(j, "specializations") == 1 && json_num(j, "lowerings") == 4 &&
             json_num(j, "cache_hits") == 2 && json_num(j, "graph_runs") == 0,
         "counts: %s", j ? j : "");
  CHECKF(j && strstr(j, "sizes 0 and 1 are specialized"), "the 0/1 rule's reason: %s", j ? j : "");
  tp_free_buffer(j);
  /* a static dim changes: a specialization with the guard that failed */
  int64_t bad[2] = {5, IN + 1};
  tp_tensor *x = rnd(2, bad, 3), *y = NULL;
  int n = 0;
  tp_status s = tp_compiled_call(c, 1, &x, 1, &y, &n);
  CHECKF(s != TP_OK && strstr(tp_last_error(), "12"), "feature dim 13 into a 12-wide linear: an error naming it (%s)",
         tp_last_error());
  tp_clear_error();
  tp_tensor_release(x), tp_tensor_release(y);
  run_mlp(c, 6, w1, b1, w2, b2, __LINE__); /* still usable */
  tp_compiled_free(c);
  free(w1), free(b1), free(w2), free(b2);
  tp_tensor_release(W1), tp_tensor_release(B1), tp_tensor_release(W2), tp_tensor_release(B2);
}

/* ---- attention-like, dynamic sequence: quadratic numbers, a GEMM whose
 * K is the symbol, mean over a row of dynamic length ---- */
enum { D = 8 };
static tp_status attn(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_tensor *xt = NULL, *sc = NULL, *q = NULL, *p = NULL, *k = NULL;
  tp_attrs a;
  tp_attrs_init(&a);
  a.dim = 1;
  tp_status s = tp_transpose(in[0], 0, 1, &xt);
  if (!s) s = tp_matmul(in[0], xt, &sc); /* [S, S] */
  if (!s) s = tp_scalar(0.25, 0, &q);
  if (!s) s = tp_mul(sc, q, &k);
  if (!s) s = tp_op_call(TP_OP_SOFTMAX, 1, &k, &a, &p);
  if (!s) s = tp_matmul(p, in[0], &outs[0]); /* [S, D] */
  if (!s) {
    tp_attrs m;
    tp_attrs_init(&m);
    m.ints[0] = 1, m.nints = 1;
    s = tp_op_call(TP_OP_MEAN, 1, &sc, &m, &outs[1]); /* [S]: mean over a row of S */
  }
  if (!s) s = tp_matmul(xt, in[0], &outs[2]); /* [D, D]: K = S */
  tp_tensor *flat = NULL;
  int64_t all = -1;
  if (!s) s = tp_reshape(sc, 1, &all, &flat); /* [S * S]: quadratic extents */
  if (!s) s = tp_relu(flat, &outs[3]);
  tp_tensor_release(flat);
  tp_tensor_release(xt), tp_tensor_release(sc), tp_tensor_release(q), tp_tensor_release(p), tp_tensor_release(k);
  *nout = s ? 0 : 4;
  return s;
}

static void run_attn(tp_compiled *c, int64_t S, int line) {
  int64_t sh[2] = {S, D};
  tp_tensor *x = rnd(2, sh, (unsigned)(S * 3 + 5)), *y[4] = {0};
  int n = 0;
  if (tp_compiled_call(c, 1, &x, 4, y, &n) || n != 4) {
    FAILF_AT(line, "call at S=%lld: %s", (long long)S, tp_last_error());
    tp_tensor_release(x);
    return;
  }
  float *xv = data(x), *o0 = data(y[0]), *o1 = data(y[1]), *o2 = data(y[2]), *o3 = data(y[3]);
  double *sc = malloc(sizeof(double) * (size_t)(S * S)), *r0 = malloc(sizeof(double) * (size_t)(S * D)),
         *r1 = malloc(sizeof(double) * (size_t)S), r2[D * D];
  for (int64_t i = 0; i < S; i++)
    for (int64_t j = 0; j < S; j++) {
      double acc = 0;
      for (int k = 0; k < D; k++) acc += (double)xv[i * D + k] * xv[j * D + k];
      sc[i * S + j] = acc;
    }
  for (int64_t i = 0; i < S; i++) {
    double mx = -1e300, sum = 0, mean = 0;
    for (int64_t j = 0; j < S; j++) mx = fmax(mx, 0.25 * sc[i * S + j]), mean += sc[i * S + j];
    r1[i] = mean / (double)S;
    for (int64_t j = 0; j < S; j++) sum += exp(0.25 * sc[i * S + j] - mx);
    for (int k = 0; k < D; k++) {
      double acc = 0;
      for (int64_t j = 0; j < S; j++) acc += exp(0.25 * sc[i * S + j] - mx) / sum * xv[j * D + k];
      r0[i * D + k] = acc;
    }
  }
  for (int a = 0; a < D; a++)
    for (int b = 0; b < D; b++) {
      double acc = 0;
      for (int64_t i = 0; i < S; i++) acc += (double)xv[i * D + a] * xv[i * D + b];
      r2[a * D + b] = acc;
    }
  CHECK(tp_tensor_shape(y[0])[0] == S && tp_tensor_shape(y[1])[0] == S);
  close_to(o0, r0, S * D, "attention", S, line);
  close_to(o1, r1, S, "mean of the scores", S, line);
  close_to(o2, r2, D * D, "x^T x (K = S)", S, line);
  CHECK(tp_tensor_ndim(y[3]) == 1 && tp_tensor_shape(y[3])[0] == S * S);
  for (int64_t i = 0; i < S * S; i++) sc[i] = sc[i] > 0 ? sc[i] : 0;
  close_to(o3, sc, S * S, "relu of the flat scores (S * S)", S, line);
  free(xv), free(o0), free(o1), free(o2), free(o3), free(sc), free(r0), free(r1);
  tp_tensor_release(x);
  for (int i = 0; i < 4; i++) tp_tensor_release(y[i]);
}

static void test_sequence(void) {
  tp_compiled *c = compile_dynamic(attn);
  /* captured at 256, a multiple of 64: the samples are 128, 192, 256 (the
   * captured plan's program) and 320 (a quadratic number) */
  const int64_t sizes[] = {256, 8, 24, 7, 100, 3, 512, 64, 8};
  for (int i = 0; i < (int)TP_ARRAY_LEN(sizes); i++) run_attn(c, sizes[i], __LINE__);
  char *j = explain(c);
  CHECKF(tp_compiled_num_captures(c) == 1 && tp_compiled_num_entries(c) == 1, "one capture, one entry");
  CHECKF(j && strstr(j, "\"template\": true") && strstr(j, "\"quadratic\": true") &&
             json_num(j, "instantiations") == 7 && json_num(j, "specializations") == 0 &&
             json_num(j, "lowerings") == 3 && json_num(j, "cache_hits") == 1 &&
             strstr(j, "\"samples\": [128, 192, 256, 320]"),
         "a quadratic template, 7 instantiations, 3 lowered samples and the captured plan: %s", j ? j : "");
  tp_free_buffer(j);
  tp_compiled_free(c);
}

/* ---- a stride-2 slice: W/2 is whole at even sizes only ---- */
static int64_t slice_end = INT64_MAX, slice_step = 2;
static tp_status strided(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_attrs a;
  tp_attrs_init(&a);
  a.dim = 0, a.start = 0, a.end = slice_end, a.step = slice_step;
  tp_tensor *v = NULL;
  tp_status s = tp_op_call(TP_OP_SLICE, 1, &in[0], &a, &v);
  if (!s) s = tp_relu(v, &outs[0]);
  tp_tensor_release(v);
  *nout = s ? 0 : 1;
  return s;
}

static void test_not_whole(void) {
  tp_compiled *c = compile_dynamic(strided);
  const int64_t sizes[] = {10, 12, 40, 7, 6};
  for (int i = 0; i < (int)TP_ARRAY_LEN(sizes); i++) {
    int64_t S = sizes[i], sh[2] = {S, 4};
    tp_tensor *x = rnd(2, sh, (unsigned)S), *y = NULL;
    int n = 0;
    CHECK_OK(tp_compiled_call(c, 1, &x, 1, &y, &n));
    if (!y) continue;
    int64_t R = (S + 1) / 2;
    CHECK(tp_tensor_shape(y)[0] == R);
    float *xv = data(x), *yv = data(y);
    double *ref = malloc(sizeof(double) * (size_t)(R * 4));
    for (int64_t r = 0; r < R; r++)
      for (int k = 0; k < 4; k++) ref[r * 4 + k] = xv[2 * r * 4 + k] > 0 ? xv[2 * r * 4 + k] : 0;
    close_to(yv, ref, R * 4, "strided relu", S, __LINE__);
    free(xv), free(yv), free(ref);
    tp_tensor_release(x), tp_tensor_release(y);
  }
  char *j = explain(c);
  /* 12, 40, 6: instantiations; 7: an odd size, (7 + 1) / 2 is not S/2 */
  CHECKF(j && json_num(j, "instantiations") == 3 && json_num(j, "specializations") == 1 && strstr(j, "is not whole"),
         "the odd size is a specialization with its reason: %s", j ? j : "");
  tp_free_buffer(j);
  tp_compiled_free(c);
}

/* ---- x[0:100]: 100 at the samples, min(100, S) below them ---- */
static void test_clamp(void) {
  slice_end = 100, slice_step = 1;
  tp_compiled *c = compile_dynamic(strided);
  const int64_t sizes[] = {200, 300, 50, 150, 20};
  for (int i = 0; i < (int)TP_ARRAY_LEN(sizes); i++) {
    int64_t S = sizes[i], sh[2] = {S, 4}, R = S < 100 ? S : 100;
    tp_tensor *x = rnd(2, sh, (unsigned)S), *y = NULL;
    int n = 0;
    CHECK_OK(tp_compiled_call(c, 1, &x, 1, &y, &n));
    if (!y) continue;
    CHECKF(tp_tensor_shape(y)[0] == R, "x[0:100] at %lld: %lld rows", (long long)S, (long long)tp_tensor_shape(y)[0]);
    float *xv = data(x), *yv = data(y);
    double *ref = malloc(sizeof(double) * (size_t)(R * 4));
    for (int64_t r = 0; r < R * 4; r++) ref[r] = xv[r] > 0 ? xv[r] : 0;
    close_to(yv, ref, R * 4, "relu(x[0:100])", S, __LINE__);
    free(xv), free(yv), free(ref);
    tp_tensor_release(x), tp_tensor_release(y);
  }
  char *j = explain(c);
  /* 300, 150: instantiations; 50, 20: the shape rule disagrees */
  CHECKF(j && json_num(j, "instantiations") == 2 && json_num(j, "specializations") == 2 &&
             strstr(j, "by its shape rule"),
         "the clamped sizes are specializations with the reason: %s", j ? j : "");
  tp_free_buffer(j);
  tp_compiled_free(c);
  slice_end = INT64_MAX, slice_step = 2;
}

/* ---- a conv over a dynamic width: y = relu(conv2d(x, w, b, stride 2, pad 1)),
 * x [2, 3, 5, W], w [4, 3, 3, 3]: OW = ceil(W / 2), whole in the template at even W ---- */
static tp_tensor *CW, *CB;
static tp_status convnet(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)ud, (void)nin, (void)max_out;
  const int64_t stride[2] = {2, 2}, pads[4] = {1, 1, 1, 1};
  tp_tensor *c = NULL;
  tp_status s = tp_conv2d(in[0], CW, CB, stride, pads, NULL, 1, &c);
  if (!s) s = tp_relu(c, &outs[0]);
  tp_tensor_release(c);
  *nout = s ? 0 : 1;
  return s;
}

static void test_conv_width(void) {
  int64_t ws[4] = {4, 3, 3, 3}, bs[1] = {4};
  CW = rnd(4, ws, 21), CB = rnd(1, bs, 22);
  float *w = data(CW), *b = data(CB);
  tp_compiled *c = compile_dynamic(convnet);
  const int64_t widths[] = {64, 32, 96, 130, 131, 200, 2};
  for (int i = 0; i < (int)TP_ARRAY_LEN(widths); i++) {
    int64_t W = widths[i], sh[4] = {2, 3, 5, W}, OH = 3, OW = (W + 1) / 2;
    tp_tensor *x = rnd(4, sh, (unsigned)W), *y = NULL;
    int n = 0;
    CHECK_OK(tp_compiled_call(c, 1, &x, 1, &y, &n));
    if (!y) {
      tp_tensor_release(x);
      continue;
    }
    CHECKF(tp_tensor_shape(y)[3] == OW, "width %lld: OW %lld", (long long)W, (long long)tp_tensor_shape(y)[3]);
    float *xv = data(x), *yv = data(y);
    double *ref = malloc(sizeof(double) * (size_t)(2 * 4 * OH * OW));
    for (int nn = 0; nn < 2; nn++)
      for (int m = 0; m < 4; m++)
        for (int64_t oh = 0; oh < OH; oh++)
          for (int64_t ow = 0; ow < OW; ow++) {
            double acc = b[m];
            for (int ci = 0; ci < 3; ci++)
              for (int kh = 0; kh < 3; kh++)
                for (int kw = 0; kw < 3; kw++) {
                  int64_t ih = oh * 2 - 1 + kh, iw = ow * 2 - 1 + kw;
                  if (ih < 0 || ih >= 5 || iw < 0 || iw >= W) continue;
                  acc += (double)xv[((nn * 3 + ci) * 5 + ih) * W + iw] * w[((m * 3 + ci) * 3 + kh) * 3 + kw];
                }
            ref[((nn * 4 + m) * OH + oh) * OW + ow] = acc > 0 ? acc : 0;
          }
    close_to(yv, ref, 2 * 4 * OH * OW, "conv over a dynamic width", W, __LINE__);
    free(xv), free(yv), free(ref);
    tp_tensor_release(x), tp_tensor_release(y);
  }
  char *j = explain(c);
  /* 32, 96, 130, 200, 2: instantiations (OW = W / 2 whole); 131: not whole */
  CHECKF(j && strstr(j, "\"template\": true") && json_num(j, "instantiations") == 5 &&
             json_num(j, "specializations") == 1 && strstr(j, "at 131 a number"),
         "conv width: %s", j ? j : "");
  tp_free_buffer(j);
  tp_compiled_free(c);
  free(w), free(b);
  tp_tensor_release(CW), tp_tensor_release(CB);
}

/* ---- two inputs whose dims change together: one symbol (duck sizing) ---- */
static tp_status addrelu(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_tensor *t = NULL;
  tp_status s = tp_add(in[0], in[1], &t);
  if (!s) s = tp_relu(t, &outs[0]);
  tp_tensor_release(t);
  *nout = s ? 0 : 1;
  return s;
}

static int run_add(tp_compiled *c, int64_t a, int64_t b, int line) {
  int64_t sa[2] = {a, 4}, sb[2] = {b, 4};
  tp_tensor *in[2] = {rnd(2, sa, (unsigned)a), rnd(2, sb, (unsigned)(b + 100))}, *y = NULL;
  int n = 0;
  tp_status s = tp_compiled_call(c, 2, in, 1, &y, &n);
  if (!s) {
    int64_t R = a > b ? a : b;
    float *x0 = data(in[0]), *x1 = data(in[1]), *yv = data(y);
    double *ref = malloc(sizeof(double) * (size_t)(R * 4));
    for (int64_t i = 0; i < R * 4; i++) {
      double v = (double)x0[a == 1 ? i % 4 : i] + x1[b == 1 ? i % 4 : i];
      ref[i] = v > 0 ? v : 0;
    }
    close_to(yv, ref, R * 4, "relu(x + y)", a * 1000 + b, line);
    free(x0), free(x1), free(yv), free(ref);
  }
  tp_tensor_release(in[0]), tp_tensor_release(in[1]), tp_tensor_release(y);
  return s;
}

static void test_duck(void) {
  tp_compiled *c = compile_dynamic(addrelu);
  CHECK_OK(run_add(c, 6, 6, __LINE__));
  CHECK_OK(run_add(c, 9, 9, __LINE__));   /* both dims change to 9: one symbol */
  CHECK_OK(run_add(c, 12, 12, __LINE__)); /* an instantiation */
  CHECK_OK(run_add(c, 12, 1, __LINE__));  /* y broadcasts: a specialization (one symbol, two values) */
  tp_status s = run_add(c, 12, 14, __LINE__); /* not broadcastable: an error naming the shapes */
  CHECKF(s != TP_OK && strstr(tp_last_error(), "12") && strstr(tp_last_error(), "14"),
         "x [12, 4] + y [14, 4]: a clear error (%s)", tp_last_error());
  tp_clear_error();
  CHECK_OK(run_add(c, 20, 20, __LINE__)); /* still usable */
  char *j = explain(c);
  CHECKF(j && strstr(j, "\"dims\": [\"inputs[0].shape[0]\", \"inputs[1].shape[0]\"], \"template\": true") &&
             json_num(j, "instantiations") == 3 && json_num(j, "specializations") == 1 &&
             strstr(j, "inputs[1].shape[0] == inputs[0].shape[0] (one symbol s0) failed"),
         "duck sizing: %s", j ? j : "");
  /* 12 and 14 asked for two symbols: the refit's samples do not broadcast,
   * so the template stays (one symbol) and says why */
  CHECKF(j && strstr(j, "\"refits\": 0, \"refit_refused\": \"lowering at the sample sizes") &&
             strstr(j, "cannot be broadcast"),
         "the refused refit: %s", j ? j : "");
  tp_free_buffer(j);
  tp_compiled_free(c);
}

/* ---- an image model over a dynamic H and W that change apart: two
 * symbols (bilinear numbers: H*W), one template ----
 * x [1, 3, H, W]: c = relu(conv3x3(x) + b1) [1, 4, H, W];
 * y0 = relu(conv3x3 stride 2 (c)) [1, 4, H/2, W/2]; y1 = mean(c, (2, 3))
 * [1, 4] (a row of H*W: 1/(H*W)); y2 = reshape(c, [4, H*W])^T P [H*W, 5]
 * (a GEMM whose M is H*W). */
static tp_tensor *IW1, *IB1, *IW2, *IP;
static tp_status image(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)ud, (void)nin, (void)max_out;
  const int64_t s1[2] = {1, 1}, s2[2] = {2, 2}, pads[4] = {1, 1, 1, 1};
  tp_tensor *c0 = NULL, *c = NULL, *d = NULL, *flat = NULL, *ft = NULL;
  tp_status s = tp_conv2d(in[0], IW1, IB1, s1, pads, NULL, 1, &c0);
  if (!s) s = tp_relu(c0, &c);
  if (!s) s = tp_conv2d(c, IW2, NULL, s2, pads, NULL, 1, &d);
  if (!s) s = tp_relu(d, &outs[0]);
  if (!s) {
    tp_attrs m;
    tp_attrs_init(&m);
    m.ints[0] = 2, m.ints[1] = 3, m.nints = 2;
    s = tp_op_call(TP_OP_MEAN, 1, &c, &m, &outs[1]);
  }
  int64_t fs[2] = {4, -1};
  if (!s) s = tp_reshape(c, 2, fs, &flat);
  if (!s) s = tp_transpose(flat, 0, 1, &ft);
  if (!s) s = tp_matmul(ft, IP, &outs[2]);
  tp_tensor_release(c0), tp_tensor_release(c), tp_tensor_release(d), tp_tensor_release(flat), tp_tensor_release(ft);
  *nout = s ? 0 : 3;
  return s;
}

/* conv2d of x [C, H, W] by w [M, C, 3, 3], pad 1, stride st, in double */
static void conv_ref(const double *x, int C, int64_t H, int64_t W, const float *w, const float *b, int M, int st,
                     double *y, int64_t OH, int64_t OW) {
  for (int m = 0; m < M; m++)
    for (int64_t oh = 0; oh < OH; oh++)
      for (int64_t ow = 0; ow < OW; ow++) {
        double acc = b ? b[m] : 0;
        for (int ci = 0; ci < C; ci++)
          for (int kh = 0; kh < 3; kh++)
            for (int kw = 0; kw < 3; kw++) {
              int64_t ih = oh * st - 1 + kh, iw = ow * st - 1 + kw;
              if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
              acc += x[(ci * H + ih) * W + iw] * w[((m * C + ci) * 3 + kh) * 3 + kw];
            }
        y[(m * OH + oh) * OW + ow] = acc;
      }
}

static int run_image(tp_compiled *c, int64_t H, int64_t W, int line) {
  int64_t sh[4] = {1, 3, H, W};
  tp_tensor *x = rnd(4, sh, (unsigned)(H * 131 + W)), *y[3] = {0};
  int n = 0;
  tp_status s = tp_compiled_call(c, 1, &x, 3, y, &n);
  if (s || n != 3) {
    tp_tensor_release(x);
    return s ? s : TP_ERR_INTERNAL;
  }
  float *w1 = data(IW1), *b1 = data(IB1), *w2 = data(IW2), *pm = data(IP), *xv = data(x);
  int64_t HW = H * W, OH = (H + 1) / 2, OW = (W + 1) / 2;
  double *xd = malloc(sizeof(double) * (size_t)(3 * HW)), *cr = malloc(sizeof(double) * (size_t)(4 * HW)),
         *dr = malloc(sizeof(double) * (size_t)(4 * OH * OW)), mr[4], *pr = malloc(sizeof(double) * (size_t)(HW * 5));
  for (int64_t i = 0; i < 3 * HW; i++) xd[i] = xv[i];
  conv_ref(xd, 3, H, W, w1, b1, 4, 1, cr, H, W);
  for (int64_t i = 0; i < 4 * HW; i++) cr[i] = cr[i] > 0 ? cr[i] : 0;
  conv_ref(cr, 4, H, W, w2, NULL, 4, 2, dr, OH, OW);
  for (int64_t i = 0; i < 4 * OH * OW; i++) dr[i] = dr[i] > 0 ? dr[i] : 0;
  for (int m = 0; m < 4; m++) {
    double acc = 0;
    for (int64_t i = 0; i < HW; i++) acc += cr[m * HW + i];
    mr[m] = acc / (double)HW;
  }
  for (int64_t i = 0; i < HW; i++)
    for (int j = 0; j < 5; j++) {
      double acc = 0;
      for (int m = 0; m < 4; m++) acc += cr[m * HW + i] * pm[m * 5 + j];
      pr[i * 5 + j] = acc;
    }
  const int64_t *s0 = tp_tensor_shape(y[0]), *s2 = tp_tensor_shape(y[2]);
  CHECKF(tp_tensor_ndim(y[0]) == 4 && s0[2] == OH && s0[3] == OW && tp_tensor_ndim(y[2]) == 2 && s2[0] == HW,
         "%lldx%lld: output shapes", (long long)H, (long long)W);
  if (tp_tensor_ndim(y[0]) == 4 && s0[2] == OH && s0[3] == OW && tp_tensor_ndim(y[2]) == 2 && s2[0] == HW) {
    float *o0 = data(y[0]), *o1 = data(y[1]), *o2 = data(y[2]);
    close_to(o0, dr, 4 * OH * OW, "stride-2 conv of the image", H * 1000 + W, line);
    close_to(o1, mr, 4, "mean over H and W", H * 1000 + W, line);
    close_to(o2, pr, HW * 5, "pixels x P (M = H*W)", H * 1000 + W, line);
    free(o0), free(o1), free(o2);
  }
  free(w1), free(b1), free(w2), free(pm), free(xv), free(xd), free(cr), free(dr), free(pr);
  tp_tensor_release(x);
  for (int i = 0; i < 3; i++) tp_tensor_release(y[i]);
  return TP_OK;
}

static void test_image_hw(void) {
  int64_t s1[4] = {4, 3, 3, 3}, s2[1] = {4}, s3[4] = {4, 4, 3, 3}, s4[2] = {4, 5};
  IW1 = rnd(4, s1, 31), IB1 = rnd(1, s2, 32), IW2 = rnd(4, s3, 33), IP = rnd(2, s4, 34);
  tp_compiled *c = compile_dynamic(image);
  /* captured at 16x24; 32x40 changes both apart: two symbols, 7 lowered
   * samples; then every H, W >= 2 with H and W even is the template; 17x24
   * (OH = 9 is not H/2 there) and 1x30 (the 0/1 rule) are specializations */
  const int64_t hw[][2] = {{16, 24}, {32, 40}, {20, 20}, {48, 24}, {10, 64}, {64, 12}, {17, 24}, {1, 30}, {32, 40},
                           {6, 130}};
  for (int i = 0; i < (int)TP_ARRAY_LEN(hw); i++)
    if (run_image(c, hw[i][0], hw[i][1], __LINE__)) FAILF("image %lldx%lld: %s", (long long)hw[i][0], (long long)hw[i][1], tp_last_error());
  char *j = explain(c);
  CHECKF(tp_compiled_num_captures(c) == 1 && tp_compiled_num_entries(c) == 1, "one capture, one entry");
  CHECKF(j && strstr(j, "\"symbols\": [\"s0\", \"s1\"], \"dims\": [\"inputs[0].shape[2]\", \"inputs[0].shape[3]\"], "
                        "\"template\": true, \"dim_symbols\": [\"s0\", \"s1\"]") &&
             strstr(j, "\"bilinear\": true") && strstr(j, "\"samples\": [[128, 128], [192, 128], [128, 192], [256, 128], "
                                                           "[128, 256], [192, 192], [256, 256]]") &&
             json_num(j, "lowerings") == 7 + 2 && json_num(j, "instantiations") == 6 &&
             json_num(j, "specializations") == 2 && json_num(j, "cache_hits") == 1 && json_num(j, "refits") == 0,
         "two symbols, one template, 6 instantiations, 2 specializations: %s", j ? j : "");
  CHECKF(j && strstr(j, "symbol s0 is 1: sizes 0 and 1 are specialized"), "the 0/1 rule per symbol: %s", j ? j : "");
  tp_free_buffer(j);
  /* bad shapes: a clear error naming the problem, and the function stays usable */
  int64_t bad[4] = {1, 4, 20, 20};
  tp_tensor *x = rnd(4, bad, 5), *y[3] = {0};
  int n = 0;
  tp_status s = tp_compiled_call(c, 1, &x, 3, y, &n);
  CHECKF(s != TP_OK && strstr(tp_last_error(), "4") && strstr(tp_last_error(), "3"),
         "4 channels into a 3-channel conv: an error naming them (%s)", tp_last_error());
  tp_clear_error();
  tp_tensor_release(x);
  int64_t bad3[3] = {3, 20, 20};
  x = rnd(3, bad3, 6);
  s = tp_compiled_call(c, 1, &x, 3, y, &n);
  CHECKF(s != TP_OK && tp_last_error()[0], "a rank-3 image: an error (%s)", tp_last_error());
  tp_clear_error();
  tp_tensor_release(x);
  if (run_image(c, 22, 14, __LINE__)) FAILF("after the errors: %s", tp_last_error());
  tp_compiled_free(c);

  /* H and W change together first (one symbol by duck sizing), then apart:
   * the template is fitted again with two symbols (one refit) */
  c = compile_dynamic(image);
  const int64_t hw2[][2] = {{16, 16}, {24, 24}, {40, 40}, {24, 32}, {40, 12}, {24, 24}};
  for (int i = 0; i < (int)TP_ARRAY_LEN(hw2); i++)
    if (run_image(c, hw2[i][0], hw2[i][1], __LINE__)) FAILF("image %lldx%lld: %s", (long long)hw2[i][0], (long long)hw2[i][1], tp_last_error());
  j = explain(c);
  CHECKF(j && strstr(j, "\"dim_symbols\": [\"s0\", \"s1\"]") && json_num(j, "refits") == 1 &&
             strstr(j, "\"refit_refused\": null") && json_num(j, "specializations") == 0 &&
             json_num(j, "instantiations") == 2 + 3,
         "one symbol, then two (a refit): %s", j ? j : "");
  tp_free_buffer(j);
  tp_compiled_free(c);
  tp_tensor_release(IW1), tp_tensor_release(IB1), tp_tensor_release(IW2), tp_tensor_release(IP);
}

/* ---- five dims that change apart: more symbols than a template takes ---- */
static tp_status five(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)ud, (void)max_out;
  tp_status s = TP_OK;
  for (int i = 0; i < nin && !s; i++) s = tp_relu(in[i], &outs[i]);
  *nout = s ? 0 : nin;
  return s;
}

static void test_five_symbols(void) {
  tp_compiled *c = compile_dynamic(five);
  for (int round = 0; round < 2; round++) {
    tp_tensor *in[5], *out[5] = {0};
    for (int i = 0; i < 5; i++) {
      int64_t sh[2] = {round ? 3 + 2 * i : 2, 4};
      in[i] = rnd(2, sh, (unsigned)(i + 10 * round));
    }
    int n = 0;
    CHECK_OK(tp_compiled_call(c, 5, in, 5, out, &n));
    for (int i = 0; i < 5 && n == 5; i++) {
      int64_t rows = tp_tensor_shape(in[i])[0];
      float *x = data(in[i]), *y = data(out[i]);
      double *ref = malloc(sizeof(double) * (size_t)(rows * 4));
      for (int64_t q = 0; q < rows * 4; q++) ref[q] = x[q] > 0 ? x[q] : 0;
      close_to(y, ref, rows * 4, "relu of input i", i, __LINE__);
      free(x), free(y), free(ref);
    }
    for (int i = 0; i < 5; i++) tp_tensor_release(in[i]), tp_tensor_release(out[i]);
  }
  char *j = explain(c);
  CHECKF(j && strstr(j, "\"template\": false") && strstr(j, "more than 4 symbols") &&
             json_num(j, "specializations") == 1,
         "5 symbols: no template, the reason, a specialization: %s", j ? j : "");
  tp_free_buffer(j);
  tp_compiled_free(c);
}

int main(void) {
  test_batch();
  test_duck();
  test_conv_width();
  test_sequence();
  test_not_whole();
  test_clamp();
  test_image_hw();
  test_five_symbols();
  printf("test_dynamic: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
