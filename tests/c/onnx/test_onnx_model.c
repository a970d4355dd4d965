/* test_onnx_model.c - tp_onnx_model: models as shipped, run as applications
 * run them. Tiny ModelProtos are built here with the protobuf writer:
 * symbolic and unknown dims (one specialization per input shape), an input
 * that sets a Reshape's shape (a value input, specialized per value),
 * shared dim_params that must agree, ops refused at load, the stax backend,
 * the specialization limit, and bad calls that leave the model usable.
 * Every result is checked against hand-computed values. */
#include "check.h"
#include "onnx_build.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- a small ModelProto builder (onnx_build.h) and a string form of node() ---- */
/* node_s: "Op", "in1,in2", "out1,out2" */
static void node_s(tp_pbw *g, const char *op, const char *ins, const char *outs) {
  tp_pbw n = {0};
  char buf[128];
  snprintf(buf, sizeof buf, "%s", ins);
  for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) str(&n, 1, t);
  snprintf(buf, sizeof buf, "%s", outs);
  for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) str(&n, 2, t);
  str(&n, 3, op);
  str(&n, 4, op);
  sub(g, 1, &n);
}

/* An If node: then/else are GraphProtos. */
static void node_if(tp_pbw *g, const char *cond, const char *out, tp_pbw *then_g, tp_pbw *else_g) {
  tp_pbw a[2] = {attr_graph("then_branch", then_g), attr_graph("else_branch", else_g)};
  node(g, "If", L(cond), L(out), 2, a);
}

/* A Constant node: out = the float32 scalar v. */
static void node_const(tp_pbw *g, const char *out, float v) {
  tp_pbw n = {0}, a = {0}, t = {0};
  tp_pbw_varint(&t, 2, 1); /* FLOAT, 0-d */
  tp_pbw_bytes(&t, 9, &v, 4);
  str(&a, 1, "value");
  sub(&a, 5, &t);
  tp_pbw_varint(&a, 20, 4); /* TENSOR */
  str(&n, 2, out);
  str(&n, 3, out);
  str(&n, 4, "Constant");
  sub(&n, 5, &a);
  sub(g, 1, &n);
}

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

static int close_to(tp_tensor *t, const float *want, int64_t n) {
  if (!t || tp_tensor_numel(t) != n) return 0;
  float *got = malloc(sizeof(float) * (size_t)(n ? n : 1));
  tp_tensor_read(t, got, sizeof(float) * (size_t)n);
  int ok = 1;
  for (int64_t i = 0; i < n; i++) ok &= fabsf(got[i] - want[i]) <= 1e-6f;
  free(got);
  return ok;
}

static int has_quiet(const tp_onnx_model *m, const char *needle) {
  char *text = NULL;
  if (tp_onnx_model_explain(m, &text)) return 0;
  int yes = strstr(text, needle) != NULL;
  tp_free_buffer(text);
  return yes;
}

static int has(const tp_onnx_model *m, const char *needle) {
  char *text = NULL;
  if (tp_onnx_model_explain(m, &text)) return 0;
  int yes = strstr(text, needle) != NULL;
  if (!yes) printf("explain() lacks '%s':\n%s", needle, text);
  tp_free_buffer(text);
  return yes;
}

/* y = relu(x), x: float[batch, 3] */
static void test_symbolic_dims(const char *backend) {
  tp_pbw g = {0};
  node_s(&g, "Relu", "x", "y");
  value_info(&g, 11, "x", 1, "batch,3");
  value_info(&g, 12, "y", 1, "batch,3");
  size_t len;
  uint8_t *bytes = finish(&g, &len);
  tp_onnx_model *m = load(bytes, len);
  if (!m) return;
  if (backend) CHECK_OK(tp_onnx_model_use_backend(m, backend));
  CHECK(tp_onnx_model_num_inputs(m) == 1 && !strcmp(tp_onnx_model_input_name(m, 0), "x"));
  int64_t dims[TP_MAX_DIMS];
  const char *names[TP_MAX_DIMS];
  tp_dtype dt;
  CHECK(tp_onnx_model_input_type(m, 0, &dt, dims, names) == 2);
  CHECK(dt == TP_F32 && dims[0] == -1 && !strcmp(names[0], "batch") && dims[1] == 3 && !names[1]);
  static const float x2[6] = {-1, 2, -3, 4, -5, 6}, y2[6] = {0, 2, 0, 4, 0, 6};
  static const float x5[15] = {1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1};
  static const float y5[15] = {1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1};
  for (int rep = 0; rep < 2; rep++) { /* the second round hits the cache */
    int64_t s2[2] = {2, 3}, s5[2] = {5, 3};
    tp_tensor *a = f32(2, s2, x2), *b = f32(2, s5, x5), *out[2] = {0};
    int n = 0;
    CHECK_OK(tp_onnx_model_run(m, 1, &a, 2, out, &n));
    CHECK(n == 1 && close_to(out[0], y2, 6) && tp_tensor_shape(out[0])[0] == 2);
    tp_tensor_release(out[0]);
    CHECK_OK(tp_onnx_model_run(m, 1, &b, 2, out, &n));
    CHECK(n == 1 && close_to(out[0], y5, 15) && tp_tensor_shape(out[0])[0] == 5);
    tp_tensor_release(out[0]);
    tp_tensor_release(a);
    tp_tensor_release(b);
  }
  int stax = backend && !strcmp(backend, "stax"); /* stax: one plan serves every batch size */
  CHECK(tp_onnx_model_num_specializations(m) == (stax ? 1 : 2));
  CHECK(has(m, "x': float32[batch,3] (1 dynamic dim"));
  if (stax) {
    CHECK(has(m, "calls at other sizes served by a specialization's plan: 2"));
    CHECK(has(m, "\"dims\": [\"inputs[0].shape[0]\"], \"template\": true"));
    CHECK(has(m, "\"instantiations\": 1,"));
  } else {
    CHECK(has(m, "input 'x': f32[5,3], was f32[2,3]"));
    CHECK(has(m, "2 made"));
  }
  /* a call that breaks the fixed dim: an error naming input, dim, value */
  int64_t bad[2] = {2, 4};
  float z[8] = {0};
  tp_tensor *c = f32(2, bad, z), *out[2] = {0};
  int n = 0;
  CHECK(tp_onnx_model_run(m, 1, &c, 2, out, &n) == TP_ERR_INVALID_ARG);
  CHECK(strstr(tp_last_error(), "input 'x' dim 1 must be 3, got shape [2,4]") != NULL);
  tp_tensor_release(c);
  int64_t r3[3] = {1, 2, 3};
  c = f32(3, r3, x2);
  CHECK(tp_onnx_model_run(m, 1, &c, 2, out, &n) == TP_ERR_INVALID_ARG);
  CHECK(strstr(tp_last_error(), "input 'x' must have rank 2, got shape [1,2,3]") != NULL);
  tp_tensor_release(c);
  tp_tensor *i64 = NULL;
  int64_t iv[3] = {1, 2, 3};
  int64_t s13[2] = {1, 3};
  CHECK_OK(tp_tensor_new(TP_I64, 2, s13, iv, &i64));
  CHECK(tp_onnx_model_run(m, 1, &i64, 2, out, &n) == TP_ERR_INVALID_ARG);
  CHECK(strstr(tp_last_error(), "input 'x' must be float32, got int64") != NULL);
  tp_tensor_release(i64);
  CHECK(tp_onnx_model_run(m, 0, NULL, 2, out, &n) == TP_ERR_INVALID_ARG);
  CHECK(strstr(tp_last_error(), "expected 1 input, got 0") != NULL);
  /* still usable */
  int64_t s1[2] = {1, 3};
  tp_tensor *d = f32(2, s1, x2);
  CHECK_OK(tp_onnx_model_run(m, 1, &d, 2, out, &n));
  CHECK(n == 1 && close_to(out[0], y2, 3));
  tp_tensor_release(out[0]);
  tp_tensor_release(d);
  /* the limit: 3 shapes seen, at most 2 kept */
  CHECK(tp_onnx_model_set_limit(m, 0) == TP_ERR_INVALID_ARG);
  CHECK_OK(tp_onnx_model_set_limit(m, 2));
  int64_t s4[2] = {4, 3};
  float x4[12] = {0};
  d = f32(2, s4, x4);
  CHECK_OK(tp_onnx_model_run(m, 1, &d, 2, out, &n));
  tp_tensor_release(out[0]);
  tp_tensor_release(d);
  CHECK(tp_onnx_model_num_specializations(m) == (stax ? 1 : 2));
  /* stax: batch 1 is the plan's specialization (the 0/1 rule), 4 an instantiation */
  CHECK(has(m, stax ? "1 cached (limit 2), 1 made, 0 evicted" : "2 cached (limit 2), 4 made, 2 evicted"));
  if (stax) CHECK(has(m, "\"instantiations\": 2, ") && has(m, "\"specializations\": 1, "));
  tp_onnx_model_free(m);
}

/* attention over a symbolic sequence on stax: y = softmax(x x^T) x,
 * x: float[seq, 4]. One specialization; every other seq >= 2 is the
 * template of its plan instantiated (imported again only at the samples) */
static void test_symbolic_seq_stax(void) {
  tp_pbw g = {0};
  node_s(&g, "Transpose", "x", "xt");
  node_s(&g, "MatMul", "x,xt", "s");
  node_s(&g, "Softmax", "s", "p");
  node_s(&g, "MatMul", "p,x", "y");
  value_info(&g, 11, "x", 1, "seq,4");
  value_info(&g, 12, "y", 1, "seq,4");
  size_t len;
  uint8_t *bytes = finish(&g, &len);
  tp_onnx_model *m = load(bytes, len);
  if (!m) return;
  CHECK_OK(tp_onnx_model_use_backend(m, "stax"));
  const int64_t seqs[] = {6, 5, 9, 17, 64, 3, 200, 9};
  for (int i = 0; i < (int)(sizeof seqs / sizeof seqs[0]); i++) {
    int64_t S = seqs[i], sh[2] = {S, 4};
    float *x = malloc(sizeof(float) * (size_t)(S * 4)), *want = malloc(sizeof(float) * (size_t)(S * 4));
    for (int64_t k = 0; k < S * 4; k++) x[k] = (float)((k * 37 + S) % 11) / 11.0f - 0.5f;
    for (int64_t r = 0; r < S; r++) { /* the reference, in double */
      double *e = malloc(sizeof(double) * (size_t)S), mx = -1e300, sum = 0;
      for (int64_t c = 0; c < S; c++) {
        double d = 0;
        for (int k = 0; k < 4; k++) d += (double)x[r * 4 + k] * x[c * 4 + k];
        e[c] = d, mx = d > mx ? d : mx;
      }
      for (int64_t c = 0; c < S; c++) e[c] = exp(e[c] - mx), sum += e[c];
      for (int k = 0; k < 4; k++) {
        double acc = 0;
        for (int64_t c = 0; c < S; c++) acc += e[c] / sum * x[c * 4 + k];
        want[r * 4 + k] = (float)acc;
      }
      free(e);
    }
    tp_tensor *a = f32(2, sh, x), *out[1] = {0};
    int n = 0;
    CHECK_OK(tp_onnx_model_run(m, 1, &a, 1, out, &n));
    float *got = malloc(sizeof(float) * (size_t)(S * 4));
    int ok = n == 1 && out[0] && tp_tensor_numel(out[0]) == S * 4 &&
             !tp_tensor_read(out[0], got, sizeof(float) * (size_t)(S * 4));
    for (int64_t k = 0; ok && k < S * 4; k++) ok = fabsf(got[k] - want[k]) <= 1e-5f + 1e-4f * fabsf(want[k]);
    CHECKF(ok, "attention at seq %lld", (long long)S);
    free(got), free(x), free(want);
    tp_tensor_release(out[0]);
    tp_tensor_release(a);
  }
  CHECK(tp_onnx_model_num_specializations(m) == 1);
  CHECK(has(m, "calls at other sizes served by a specialization's plan: 7"));
  CHECK(has(m, "\"template\": true") && has(m, "\"instantiations\": 6,") && has(m, "\"specializations\": 0,") &&
        has(m, "\"cache_hits\": 1,"));
  tp_onnx_model_free(m);
}

/* y = reshape(x, shape): shape is a graph input (a value input) */
static void test_value_input(const char *backend) {
  tp_pbw g = {0};
  node_s(&g, "Reshape", "x,shape", "y");
  value_info(&g, 11, "x", 1, "6");
  value_info(&g, 11, "shape", 7, "2");
  value_info(&g, 12, "y", 1, NULL);
  size_t len;
  uint8_t *bytes = finish(&g, &len);
  tp_onnx_model *m = load(bytes, len);
  if (!m) return;
  if (backend) CHECK_OK(tp_onnx_model_use_backend(m, backend));
  static const float x[6] = {1, 2, 3, 4, 5, 6};
  int64_t s6[1] = {6}, s2[1] = {2};
  static const int64_t shapes[3][2] = {{2, 3}, {3, 2}, {2, 3}};
  for (int i = 0; i < 3; i++) {
    tp_tensor *in[2] = {f32(1, s6, x), NULL}, *out[2] = {0};
    CHECK_OK(tp_tensor_new(TP_I64, 1, s2, shapes[i], &in[1]));
    int n = 0;
    CHECK_OK(tp_onnx_model_run(m, 2, in, 2, out, &n));
    CHECK(n == 1 && out[0] && tp_tensor_ndim(out[0]) == 2);
    if (n == 1 && out[0]) {
      CHECK(tp_tensor_shape(out[0])[0] == shapes[i][0] && tp_tensor_shape(out[0])[1] == shapes[i][1]);
      CHECK(close_to(out[0], x, 6));
    }
    tp_tensor_release(out[0]);
    tp_tensor_release(in[0]);
    tp_tensor_release(in[1]);
  }
  CHECK(tp_onnx_model_num_specializations(m) == 2); /* [2,3] came back: a hit */
  CHECK(has(m, "input 'shape': int64[2]; its value sets a shape or parameter (value guard)"));
  CHECK(has(m, "the value of input 'shape' changed"));
  tp_onnx_model_free(m);
}

/* z = a + b with a: float[n], b: float[n]: the two n's must agree */
static void test_shared_dim(void) {
  tp_pbw g = {0};
  node_s(&g, "Add", "a,b", "z");
  value_info(&g, 11, "a", 1, "n");
  value_info(&g, 11, "b", 1, "n");
  value_info(&g, 12, "z", 1, "n");
  size_t len;
  uint8_t *bytes = finish(&g, &len);
  tp_onnx_model *m = load(bytes, len);
  if (!m) return;
  static const float v[4] = {1, 2, 3, 4};
  int64_t s3[1] = {3}, s4[1] = {4};
  tp_tensor *in[2] = {f32(1, s3, v), f32(1, s4, v)}, *out[2] = {0};
  int n = 0;
  CHECK(tp_onnx_model_run(m, 2, in, 2, out, &n) == TP_ERR_INVALID_ARG);
  CHECK(strstr(tp_last_error(), "dim 'n' is 3 in input 'a' (dim 0) but 4 in input 'b' (dim 0)") != NULL);
  tp_tensor_release(in[1]);
  in[1] = f32(1, s3, v);
  CHECK_OK(tp_onnx_model_run(m, 2, in, 2, out, &n));
  static const float want[3] = {2, 4, 6};
  CHECK(n == 1 && close_to(out[0], want, 3));
  tp_tensor_release(out[0]);
  tp_tensor_release(in[0]);
  tp_tensor_release(in[1]);
  tp_onnx_model_free(m);
}

/* The VAD pattern: y = sr == 16000 ? x * 2 : x * 3, sr an int64 input. The
 * If's condition comes from an input: it imports as one cond node with both
 * branches (issue 14), so sr is plain run-time data and one specialization
 * serves every value. */
static void test_if_on_input(void) {
  tp_pbw g = {0}, th = {0}, el = {0}, c16 = {0};
  { /* c = (sr == 16000) */
    tp_pbw n = {0}, a = {0}, t = {0};
    int64_t v = 16000;
    tp_pbw_varint(&t, 2, 7);
    tp_pbw_bytes(&t, 9, &v, 8);
    str(&a, 1, "value");
    sub(&a, 5, &t);
    tp_pbw_varint(&a, 20, 4);
    str(&n, 2, "k16");
    str(&n, 4, "Constant");
    sub(&n, 5, &a);
    sub(&c16, 1, &n);
    tp_buf_putn(&g, c16.p, c16.n);
    tp_buf_free(&c16);
  }
  node_s(&g, "Equal", "sr,k16", "c");
  node_const(&th, "two", 2);
  node_s(&th, "Mul", "x,two", "yt");
  value_info(&th, 12, "yt", 1, NULL);
  node_const(&el, "three", 3);
  node_s(&el, "Mul", "x,three", "ye");
  value_info(&el, 12, "ye", 1, NULL);
  node_if(&g, "c", "y", &th, &el);
  value_info(&g, 11, "x", 1, "n");
  value_info(&g, 11, "sr", 7, NULL);
  value_info(&g, 12, "y", 1, NULL);
  size_t len;
  uint8_t *bytes = finish(&g, &len);
  tp_onnx_model *m = load(bytes, len);
  if (!m) return;
  static const float x[3] = {1, 2, 3}, y2[3] = {2, 4, 6}, y3[3] = {3, 6, 9};
  int64_t s3[1] = {3};
  for (int i = 0; i < 3; i++) {
    int64_t sr = i == 1 ? 8000 : 16000;
    tp_tensor *in[2] = {f32(1, s3, x), NULL}, *out[2] = {0};
    CHECK_OK(tp_tensor_new(TP_I64, 0, NULL, &sr, &in[1]));
    int n = 0;
    CHECK_OK(tp_onnx_model_run(m, 2, in, 2, out, &n));
    CHECK(n == 1 && close_to(out[0], sr == 16000 ? y2 : y3, 3));
    tp_tensor_release(out[0]);
    tp_tensor_release(in[0]);
    tp_tensor_release(in[1]);
  }
  CHECK(tp_onnx_model_num_specializations(m) == 1);
  CHECK(!has_quiet(m, "its value sets a shape or parameter"));
  char *text = NULL;
  CHECK_OK(tp_graph_print(tp_onnx_model_graph(m), 0, &text));
  CHECK(text && strstr(text, "= cond("));
  tp_free_buffer(text);
  tp_onnx_model_free(m);
}

/* y = x + b with b an initializer and x: float[n, 3]: every specialization
 * reads the initializers again (regression: a reader consumed by the first
 * import gave "initializer '' has dtype UNDEFINED" on the second). */
static void test_initializer_each_import(void) {
  tp_pbw g = {0}, t = {0};
  static const float b[3] = {10, 20, 30};
  tp_pbw_varint(&t, 1, 3);
  tp_pbw_varint(&t, 2, 1);
  str(&t, 8, "b");
  tp_pbw_bytes(&t, 9, b, sizeof b);
  sub(&g, 5, &t);
  node_s(&g, "Add", "x,b", "y");
  value_info(&g, 11, "x", 1, "n,3");
  value_info(&g, 12, "y", 1, NULL);
  size_t len;
  uint8_t *bytes = finish(&g, &len);
  tp_onnx_model *m = load(bytes, len);
  if (!m) return;
  static const float x[6] = {1, 2, 3, 4, 5, 6}, want[6] = {11, 22, 33, 14, 25, 36};
  for (int64_t rows = 1; rows <= 2; rows++) {
    int64_t sh[2] = {rows, 3};
    tp_tensor *in = f32(2, sh, x), *out[2] = {0};
    int n = 0;
    CHECK_OK(tp_onnx_model_run(m, 1, &in, 2, out, &n));
    CHECK(n == 1 && close_to(out[0], want, rows * 3));
    tp_tensor_release(out[0]);
    tp_tensor_release(in);
  }
  CHECK(tp_onnx_model_num_specializations(m) == 2);
  tp_onnx_model_free(m);
}

static void test_refused_at_load(void) {
  tp_pbw g = {0};
  node_s(&g, "Relu", "x", "h");
  node_s(&g, "FancyOp", "h", "y");
  value_info(&g, 11, "x", 1, "batch,3");
  value_info(&g, 12, "y", 1, NULL);
  size_t len;
  uint8_t *b = finish(&g, &len);
  tp_onnx_model *m = NULL;
  CHECK(tp_onnx_model_load(b, len, &m) == TP_ERR_UNSUPPORTED && !m);
  CHECK(strstr(tp_last_error(), "node 'FancyOp' (FancyOp) is not supported yet") != NULL);
  tp_free_buffer(b);
  static const uint8_t junk[5] = {0x0a, 0xff, 0xff, 0xff, 0x0f};
  CHECK(tp_onnx_model_load(junk, sizeof junk, &m) == TP_ERR_PARSE && !m);
  CHECK(tp_onnx_model_load(NULL, 0, NULL) == TP_ERR_INVALID_ARG);
}

int main(void) {
  test_symbolic_dims(NULL);
  test_symbolic_dims("stax");
  test_symbolic_seq_stax();
  test_value_input(NULL);
  test_value_input("stax");
  test_shared_dim();
  test_if_on_input();
  test_initializer_each_import();
  test_refused_at_load();
  CHECK(tp_live_tensors() == 0);
  if (failures) printf("%d check(s) failed\n", failures);
  else printf("ok\n");
  return failures != 0;
}
