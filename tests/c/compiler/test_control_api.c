/* test_control_api.c (TP_TEST_LONG: ctest starts it first) - tp_cond and tp_while_loop (src/capture/control.c):
 * eagerly (only the chosen branch runs) and inside compiled functions
 * (stax and eager backends: one cond / while_loop node, the choice and the
 * trip count read at run time: one capture serves every predicate and
 * trip count), against hand-computed values; bad inputs (a predicate of
 * two values or of floats, branches of different signatures, a body that
 * changes a carried type) are errors naming the problem and leave the
 * runtime usable; an allocation-failure sweep of a compiled cond and
 * while_loop (stax). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "alloc_sweep.h"
#include "check.h"

static int then_calls, else_calls;

static tp_status op2(tp_op op, tp_tensor *a, tp_tensor *b, tp_tensor **out) {
  tp_tensor *in[2] = {a, b};
  return tp_op_call(op, 2, in, NULL, out);
}

static tp_tensor *scalar_f(double v) {
  tp_tensor *t = NULL;
  tp_scalar(v, 0, &t);
  return t;
}

/* then: exp(x * y) + 1 */
static tp_status then_fn(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)ud, (void)nin, (void)max_out;
  then_calls++;
  tp_tensor *m = NULL, *e = NULL, *one = scalar_f(1);
  tp_status s = op2(TP_OP_MUL, in[0], in[1], &m);
  if (!s) s = tp_op_call(TP_OP_EXP, 1, &m, NULL, &e);
  if (!s) s = op2(TP_OP_ADD, e, one, &outs[0]);
  tp_tensor_release(m);
  tp_tensor_release(e);
  tp_tensor_release(one);
  *nout = s ? 0 : 1;
  return s;
}

/* else: x - y (bad_else: a sum, of another shape) */
static int bad_else;
static tp_status else_fn(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)ud, (void)nin, (void)max_out;
  else_calls++;
  tp_status s;
  if (bad_else) {
    int64_t d[1] = {0};
    s = tp_sum(in[0], 1, d, 0, &outs[0]);
  } else {
    s = op2(TP_OP_SUB, in[0], in[1], &outs[0]);
  }
  *nout = s ? 0 : 1;
  return s;
}

/* f(p, x, y) = cond(p, then, else, (x, y)) * 2 */
static tp_status f(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_callable t = {then_fn, NULL}, e = {else_fn, NULL};
  tp_tensor *r[4] = {0}, *two = scalar_f(2);
  int n = 0;
  tp_status s = tp_cond(in[0], &t, &e, 2, in + 1, 4, r, &n);
  if (!s) s = op2(TP_OP_MUL, r[0], two, &outs[0]);
  for (int k = 0; k < n; k++) tp_tensor_release(r[k]);
  tp_tensor_release(two);
  *nout = s ? 0 : 1;
  return s;
}

static tp_tensor *vec(const float *v) {
  int64_t sh[1] = {3};
  tp_tensor *t = NULL;
  tp_tensor_new(TP_F32, 1, sh, v, &t);
  return t;
}
static tp_tensor *flag(int v) {
  unsigned char b = (unsigned char)v;
  tp_tensor *t = NULL;
  tp_tensor_new(TP_BOOL, 0, NULL, &b, &t);
  return t;
}
static tp_tensor *i64(int64_t v) {
  tp_tensor *t = NULL;
  tp_tensor_new(TP_I64, 0, NULL, &v, &t);
  return t;
}

static int close3(tp_tensor *t, const double *want) {
  float got[3] = {0};
  if (!t || tp_tensor_numel(t) != 3 || tp_tensor_read(t, got, sizeof got)) return 0;
  for (int i = 0; i < 3; i++)
    if (fabs(got[i] - want[i]) > 1e-5 + 1e-5 * fabs(want[i])) {
      printf("  [%d] got %g want %g\n", i, got[i], want[i]);
      return 0;
    }
  return 1;
}

static const float xv[3] = {0.5f, -1, 2}, yv[3] = {1, 0.25f, -0.5f};

static void want_f(int take, double *w) {
  for (int i = 0; i < 3; i++) w[i] = 2 * (take ? exp((double)xv[i] * yv[i]) + 1 : (double)xv[i] - yv[i]);
}

static void test_cond(const char *backend) {
  tp_tensor *x = vec(xv), *y = vec(yv);
  /* eager: only the chosen branch runs */
  then_calls = else_calls = 0;
  for (int take = 0; take < 2 && !backend; take++) {
    tp_tensor *p = flag(take), *in[3] = {p, x, y}, *out = NULL;
    int n = 0;
    tp_callable fn = {f, NULL};
    CHECK_OK(fn.fn(NULL, 3, in, 1, &out, &n));
    double w[3];
    want_f(take, w);
    CHECKF(n == 1 && close3(out, w), "eager cond take=%d", take);
    tp_tensor_release(out);
    tp_tensor_release(p);
  }
  if (!backend) {
    CHECK(then_calls == 1 && else_calls == 1);
    tp_tensor_release(x);
    tp_tensor_release(y);
    return;
  }
  tp_compile_options o;
  tp_compile_options_init(&o);
  o.backend = backend;
  tp_callable fn = {f, NULL};
  tp_compiled *c = NULL;
  CHECK_OK(tp_compile(&fn, &o, &c));
  then_calls = else_calls = 0;
  for (int r = 0; c && r < 4; r++) {
    int take = r % 2 == 0;
    tp_tensor *p = flag(take), *in[3] = {p, x, y}, *out = NULL;
    int n = 0;
    CHECK_OK(tp_compiled_call(c, 3, in, 1, &out, &n));
    double w[3];
    want_f(take, w);
    CHECKF(n == 1 && close3(out, w), "%s cond run %d take=%d", backend, r, take);
    tp_tensor_release(out);
    tp_tensor_release(p);
  }
  /* traced once (both branches traced on the first call), then the
   * compiled graph chose: no further calls of the branch functions */
  CHECKF(then_calls == 1 && else_calls == 1, "%s: then %d else %d calls", backend, then_calls, else_calls);
  CHECKF(c && tp_compiled_num_captures(c) == 1, "%s: %d captures", backend, c ? tp_compiled_num_captures(c) : -1);
  char *text = NULL;
  const tp_graph *g = c ? tp_compiled_last_graph(c) : NULL;
  if (g) CHECK_OK(tp_graph_print(g, 0, &text));
  CHECKF(text && strstr(text, "= cond(") && strstr(text, "subgraph \"_tensorplay_then_"), "graph: %s", text ? text : "");
  tp_free_buffer(text);
  /* stax lowered it (the cond an op kernel running compiled branches), no
   * fallback to the graph executor */
  char *ex = NULL;
  if (c) CHECK_OK(tp_compiled_explain(c, &ex));
  if (!strcmp(backend, "stax"))
    CHECKF(ex && strstr(ex, "\"op\": 2") && strstr(ex, "\"kernel_kinds\": [\"op\", \"op\", \"pointwise\"]"), "explain: %s", ex ? ex : "");
  tp_free_buffer(ex);
  /* export: the compiled graph as ONNX (cond -> If) */
  uint8_t *bytes = NULL;
  size_t len = 0;
  if (g) CHECK_OK(tp_onnx_save(g, &bytes, &len));
  tp_free_buffer(bytes);
  tp_compiled_free(c);

  /* branches of different shapes: an error naming them; usable after */
  bad_else = 1;
  c = NULL;
  CHECK_OK(tp_compile(&fn, &o, &c));
  tp_tensor *p = flag(1), *in[3] = {p, x, y}, *out = NULL;
  int n = 0;
  tp_status s = c ? tp_compiled_call(c, 3, in, 1, &out, &n) : TP_ERR_INTERNAL;
  CHECKF(s != TP_OK && strstr(tp_last_error(), "cond: output 0 is f32[3] in the then function but f32[] in the else function"),
         "%s: %s", backend, tp_last_error());
  tp_compiled_free(c);
  bad_else = 0;
  tp_clear_error();
  /* a predicate of two values, of floats */
  int64_t sh[1] = {2};
  unsigned char two[2] = {1, 1};
  tp_tensor *p2 = NULL, *pf = scalar_f(1.0);
  tp_tensor_new(TP_BOOL, 1, sh, two, &p2);
  tp_callable t = {then_fn, NULL}, e = {else_fn, NULL};
  tp_tensor *ops[2] = {x, y}, *r[2] = {0};
  CHECK(tp_cond(p2, &t, &e, 2, ops, 2, r, &n) == TP_ERR_INVALID_ARG &&
        strstr(tp_last_error(), "cond: the predicate is b8[2]; it must be one bool or integer value"));
  CHECK(tp_cond(pf, &t, &e, 2, ops, 2, r, &n) == TP_ERR_INVALID_ARG &&
        strstr(tp_last_error(), "cond: the predicate is f32[]"));
  tp_clear_error();
  /* still usable */
  CHECK_OK(tp_cond(p, &t, &e, 2, ops, 2, r, &n));
  for (int k = 0; k < n; k++) tp_tensor_release(r[k]);
  tp_tensor_release(p);
  tp_tensor_release(p2);
  tp_tensor_release(pf);
  tp_tensor_release(x);
  tp_tensor_release(y);
}

/* while i < n: (i, a) = (i + 1, a * w + 1); returns a */
static int bad_body;
static tp_status lcond(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_status s = op2(TP_OP_LT, in[0], in[2], &outs[0]);
  *nout = s ? 0 : 1;
  return s;
}
static tp_status lbody(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_tensor *one = NULL, *m = NULL, *onef = scalar_f(1);
  tp_scalar(1, 1, &one);
  tp_status s = op2(TP_OP_ADD, in[0], one, &outs[0]);
  if (!s) s = op2(TP_OP_MUL, in[1], in[3], &m);
  if (!s && bad_body) {
    int64_t d[1] = {0};
    s = tp_sum(m, 1, d, 0, &outs[1]);
  } else if (!s) {
    s = op2(TP_OP_ADD, m, onef, &outs[1]);
  }
  tp_tensor_release(one);
  tp_tensor_release(m);
  tp_tensor_release(onef);
  if (s) tp_tensor_release(outs[0]);
  *nout = s ? 0 : 2;
  return s;
}
static tp_status g(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_callable c = {lcond, NULL}, b = {lbody, NULL};
  tp_tensor *i0 = i64(0), *ops[4] = {i0, in[1], in[0], in[2]}, *r[4] = {0};
  int n = 0;
  tp_status s = tp_while_loop(&c, &b, 2, 4, ops, 4, r, &n);
  tp_tensor_release(i0);
  if (!s) outs[0] = r[1], r[1] = NULL;
  for (int k = 0; k < n; k++) tp_tensor_release(r[k]);
  *nout = s ? 0 : 1;
  return s;
}

static void test_while(const char *backend) {
  static const float a0[3] = {0, 1, -1}, wv[3] = {0.5f, 2, -1};
  tp_tensor *a = vec(a0), *w = vec(wv);
  tp_callable fn = {g, NULL};
  tp_compiled *c = NULL;
  if (backend) {
    tp_compile_options o;
    tp_compile_options_init(&o);
    o.backend = backend;
    CHECK_OK(tp_compile(&fn, &o, &c));
  }
  int64_t trips[] = {3, 0, 5, 1};
  for (int q = 0; q < 4; q++) {
    tp_tensor *n = i64(trips[q]), *in[3] = {n, a, w}, *out = NULL;
    int no = 0;
    CHECK_OK(c ? tp_compiled_call(c, 3, in, 1, &out, &no) : fn.fn(NULL, 3, in, 1, &out, &no));
    double want[3];
    for (int k = 0; k < 3; k++) {
      double v = a0[k];
      for (int64_t t = 0; t < trips[q]; t++) v = v * wv[k] + 1;
      want[k] = v;
    }
    CHECKF(no == 1 && close3(out, want), "%s while %lld trips", backend ? backend : "eager", (long long)trips[q]);
    tp_tensor_release(out);
    tp_tensor_release(n);
  }
  if (c) {
    CHECKF(tp_compiled_num_captures(c) == 1, "%s while: %d captures", backend, tp_compiled_num_captures(c));
    char *text = NULL;
    const tp_graph *gr = tp_compiled_last_graph(c);
    if (gr) CHECK_OK(tp_graph_print(gr, 0, &text));
    CHECKF(text && strstr(text, "= while_loop("), "graph: %s", text ? text : "");
    tp_free_buffer(text);
    /* export as ONNX Loop; loaded back, its count is data again: the same values */
    uint8_t *bytes = NULL;
    size_t len = 0;
    tp_onnx_model *om = NULL;
    if (gr) CHECK_OK(tp_onnx_save(gr, &bytes, &len));
    if (bytes) CHECK_OK(tp_onnx_model_load(bytes, len, &om));
    tp_free_buffer(bytes);
    if (om) CHECK_OK(tp_onnx_model_use_backend(om, backend));
    for (int q = 0; om && q < 3; q++) {
      tp_tensor *nq = i64(trips[q]), *in[3] = {nq, a, w}, *out = NULL;
      int no = 0;
      CHECK_OK(tp_onnx_model_run(om, 3, in, 1, &out, &no));
      double want[3];
      for (int k = 0; k < 3; k++) {
        double v = a0[k];
        for (int64_t t = 0; t < trips[q]; t++) v = v * wv[k] + 1;
        want[k] = v;
      }
      CHECKF(no == 1 && close3(out, want), "%s: exported Loop, %lld trips", backend, (long long)trips[q]);
      tp_tensor_release(out);
      tp_tensor_release(nq);
    }
    if (om) CHECK(tp_onnx_model_num_specializations(om) == 1);
    tp_onnx_model_free(om);
    tp_compiled_free(c);
  }
  /* a body that changes a carried value's shape */
  bad_body = 1;
  tp_tensor *n = i64(2), *in[3] = {n, a, w}, *out = NULL;
  int no = 0;
  tp_status s = fn.fn(NULL, 3, in, 1, &out, &no);
  CHECKF(s != TP_OK && strstr(tp_last_error(), "while_loop: output 1 is f32[] in the body function's result but f32[3]"),
         "%s", tp_last_error());
  bad_body = 0;
  tp_clear_error();
  tp_tensor_release(n);
  tp_tensor_release(a);
  tp_tensor_release(w);
}

/* ---- allocation failures (../alloc_sweep.h): a compiled cond and a
 * compiled while_loop (stax), traced, lowered and run on both branches and
 * two trip counts; every Nth allocation failed in turn. The callables below
 * make no tensors of their own, so a failure reaches them only through
 * the ops, which report it. ---- */
static tp_status s_then(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_tensor *m = NULL;
  tp_status s = op2(TP_OP_MUL, in[0], in[1], &m);
  if (!s) s = tp_op_call(TP_OP_EXP, 1, &m, NULL, &outs[0]);
  tp_tensor_release(m);
  *nout = s ? 0 : 1;
  return s;
}
static tp_status s_else(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_status s = op2(TP_OP_SUB, in[0], in[1], &outs[0]);
  *nout = s ? 0 : 1;
  return s;
}
/* (p, x, y) -> cond(p, exp(x * y), x - y) */
static tp_status s_f(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)ud, (void)nin;
  tp_callable t = {s_then, NULL}, e = {s_else, NULL};
  return tp_cond(in[0], &t, &e, 2, in + 1, max_out, outs, nout);
}
/* carried (i, a), read (n, w, one): while i < n: (i + one, a * w + w) */
static tp_status s_lcond(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_status s = op2(TP_OP_LT, in[0], in[2], &outs[0]);
  *nout = s ? 0 : 1;
  return s;
}
static tp_status s_lbody(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_tensor *m = NULL, *i1 = NULL, *a1 = NULL;
  tp_status s = op2(TP_OP_ADD, in[0], in[4], &i1);
  if (!s) s = op2(TP_OP_MUL, in[1], in[3], &m);
  if (!s) s = op2(TP_OP_ADD, m, in[3], &a1);
  tp_tensor_release(m);
  if (s) {
    tp_tensor_release(i1);
    tp_tensor_release(a1);
    *nout = 0;
    return s;
  }
  outs[0] = i1, outs[1] = a1, *nout = 2;
  return TP_OK;
}
/* (i0, a0, n, w, one) -> the final a */
static tp_status s_g(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)ud, (void)max_out;
  tp_callable c = {s_lcond, NULL}, b = {s_lbody, NULL};
  tp_tensor *r[4] = {0};
  int n = 0;
  tp_status s = tp_while_loop(&c, &b, 2, nin, in, 4, r, &n);
  if (!s) outs[0] = r[1], r[1] = NULL;
  for (int k = 0; k < n; k++) tp_tensor_release(r[k]);
  *nout = s ? 0 : 1;
  return s;
}

typedef struct sw_in { tp_tensor *p[2], *x, *y, *i0, *a0, *n[2], *w, *one; } sw_in;
typedef struct sw_res { float v[4][3]; } sw_res;

static tp_status sweep_scenario(void *ud, void *resv) {
  sw_in *u = ud;
  sw_res *res = resv;
  tp_compiled *cf = NULL, *cg = NULL;
  tp_tensor *out[4] = {0};
  int no[4] = {0};
  tp_compile_options o;
  tp_compile_options_init(&o);
  o.backend = "stax";
  tp_callable f1 = {s_f, NULL}, g1 = {s_g, NULL};
  SWEEP_STEP("compile cond", tp_compile(&f1, &o, &cf));
  for (int r = 0; r < 2; r++) {
    tp_tensor *in[3] = {u->p[r], u->x, u->y};
    SWEEP_STEP("cond call", tp_compiled_call(cf, 3, in, 1, &out[r], &no[r]));
  }
  SWEEP_STEP("compile while_loop", tp_compile(&g1, &o, &cg));
  for (int r = 0; r < 2; r++) {
    tp_tensor *in[5] = {u->i0, u->a0, u->n[r], u->w, u->one};
    SWEEP_STEP("while_loop call", tp_compiled_call(cg, 5, in, 1, &out[2 + r], &no[2 + r]));
  }
  for (int k = 0; k < 4; k++) SWEEP_STEP("read", tp_tensor_read(out[k], res->v[k], sizeof res->v[k]));
  sweep_step = "done";
cleanup:
  for (int k = 0; k < 4; k++)
    if (no[k]) tp_tensor_release(out[k]);
  tp_compiled_free(cf);
  tp_compiled_free(cg);
  tp_reset();
  return sweep_status;
}

static void test_alloc_sweep(void) {
  static const float a0[3] = {0, 1, -1}, wv[3] = {0.5f, 2, -1};
  sw_in u = {{flag(1), flag(0)}, vec(xv), vec(yv), i64(0), vec(a0), {i64(3), i64(1)}, vec(wv), i64(1)};
  static sw_res base;
  sweep_case sc = {"compiled cond and while_loop (stax)", sweep_scenario, NULL, sizeof(sw_res), &u};
  failures += sweep_run(&sc, &base, NULL);
  for (int r = 0; r < 2; r++) /* the baseline by hand */
    for (int i = 0; i < 3; i++) {
      double want = r == 0 ? exp((double)xv[i] * yv[i]) : (double)xv[i] - yv[i];
      CHECKF(fabs(base.v[r][i] - want) <= 1e-5 * (1 + fabs(want)), "sweep baseline cond %d [%d]: %g, expected %g", r, i,
             base.v[r][i], want);
    }
  static const int trips[2] = {3, 1};
  for (int r = 0; r < 2; r++)
    for (int i = 0; i < 3; i++) {
      double v = a0[i];
      for (int t = 0; t < trips[r]; t++) v = v * wv[i] + wv[i];
      CHECKF(fabs(base.v[2 + r][i] - v) <= 1e-5 * (1 + fabs(v)), "sweep baseline while %d trips [%d]: %g, expected %g",
             trips[r], i, base.v[2 + r][i], v);
    }
  tp_tensor *all[10] = {u.p[0], u.p[1], u.x, u.y, u.i0, u.a0, u.n[0], u.n[1], u.w, u.one};
  for (int k = 0; k < 10; k++) tp_tensor_release(all[k]);
}

int main(void) {
  test_cond(NULL);
  test_cond("stax");
  test_cond("eager");
  test_while(NULL);
  test_while("stax");
  test_while("eager");
  test_alloc_sweep();
  printf("%s test_control_api (%d checks)\n", failures ? "FAIL" : "ok  ", checks);
  return failures ? 1 : 0;
}
