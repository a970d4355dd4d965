/* test_capture.c - the tracer and compile(): graphs recorded from C
 * callables, samples computed during capture, constants, scalars, graph
 * breaks (fullgraph or eager fallback), mixing traces, the cache per input
 * signature, and errors that leave the runtime usable. */
#include "capture/capture.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "check.h"

#define OK(e) CHECK((e) == TP_OK)

static tp_tensor *vec(int n, const float *v) {
  tp_tensor *t = NULL;
  int64_t s = n;
  tp_tensor_new(TP_F32, 1, &s, v, &t);
  return t;
}

/* f(x) = relu(x * 2 - 1) + w, with w a constant and 2, 1 weak scalars */
static tp_tensor *W;
static int f_calls;
static tp_status f_mlp(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                       int *nout) {
  (void)ud, (void)nin, (void)max_out;
  f_calls++;
  tp_tensor *two, *one, *a = NULL, *b = NULL, *c = NULL, *d = NULL;
  tp_scalar(2, 1, &two);
  tp_scalar(1.0, 0, &one);
  tp_status s = tp_mul(in[0], two, &a);
  if (!s) s = tp_sub(a, one, &b);
  if (!s) s = tp_relu(b, &c);
  if (!s) s = tp_add(c, W, &d);
  tp_tensor_release(two), tp_tensor_release(one), tp_tensor_release(a), tp_tensor_release(b),
      tp_tensor_release(c);
  if (s) return s;
  outs[0] = d;
  *nout = 1;
  return TP_OK;
}

/* reads data in the middle: a graph break */
static tp_status f_read(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                        int *nout) {
  (void)ud, (void)nin, (void)max_out;
  f_calls++;
  tp_tensor *m = NULL, *s1 = NULL;
  double v;
  tp_status s = tp_sum(in[0], 0, NULL, 0, &m);
  if (!s) s = tp_tensor_item(m, &v);
  if (!s) {
    tp_tensor *k;
    tp_scalar(v, 0, &k);
    s = tp_mul(in[0], k, &s1); /* x * sum(x) */
    tp_tensor_release(k);
  }
  tp_tensor_release(m);
  if (s) return s;
  outs[0] = s1;
  *nout = 1;
  return TP_OK;
}

/* an op mixing a value of an outer live trace into an inner one */
static tp_tensor *leaked;
static tp_status f_inner(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                         int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_status s = tp_add(in[0], leaked, &outs[0]);
  *nout = s ? 0 : 1;
  return s;
}
static tp_status f_outer(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                         int *nout) {
  (void)ud, (void)max_out;
  tp_tensor *r;
  TP_TRY(tp_relu(in[0], &r));
  leaked = r;
  tp_callable inner = {f_inner, NULL};
  tp_trace_result tr;
  tp_status s = tp_trace(&inner, nin, in, 0, &tr);
  leaked = NULL;
  if (s) {
    tp_tensor_release(r);
    return s;
  }
  tp_trace_result_clear(&tr);
  outs[0] = r;
  *nout = 1;
  return TP_OK;
}

static tp_status f_identity(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                            int *nout) {
  (void)ud, (void)max_out;
  for (int i = 0; i < nin; i++) {
    tp_tensor_retain(in[i]);
    outs[i] = in[i];
  }
  *nout = nin;
  return TP_OK;
}

static tp_status f_fail(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                        int *nout) {
  (void)ud, (void)nin, (void)max_out, (void)nout;
  tp_tensor *bad;
  int64_t s[2] = {5, 2};
  tp_zeros(TP_F32, 2, s, &bad);
  tp_status st = tp_matmul(in[0], bad, &outs[0]);
  tp_tensor_release(bad);
  return st;
}

static void test_trace_graph(void) {
  float x[4] = {-1, 0, 1, 2}, w[4] = {10, 20, 30, 40};
  tp_tensor *xt = vec(4, x);
  W = vec(4, w);
  tp_callable fn = {f_mlp, NULL};
  tp_trace_result r;
  OK(tp_trace(&fn, 1, &xt, 1, &r));
  CHECK(r.graph && !r.broken && r.nout == 1);
  /* sample values come out of the capture: relu(2x-1)+w */
  float y[4];
  OK(tp_tensor_read(r.outs[0], y, sizeof y));
  CHECK(y[0] == 10 && y[1] == 20 && y[2] == 31 && y[3] == 43);
  char *text = NULL;
  OK(tp_graph_print(r.graph, 0, &text));
  const char *want =
      "tpgraph v1\n"
      "%x0 = placeholder : f32[4]\n"
      "%0 = mul(%x0, 2) : f32[4]\n"
      "%1 = sub(%0, 1.0) : f32[4]\n"
      "%2 = relu(%1) : f32[4]\n"
      "%c0 = get_attr \"c0\" : f32[4]\n"
      "%3 = add(%2, %c0) : f32[4]\n"
      "output(%3)\n";
  CHECK(text && !strcmp(text, want));
  if (text && strcmp(text, want)) printf("got:\n%s\nwant:\n%s", text, want);
  /* the printed text parses back into the same graph */
  char *full = NULL;
  OK(tp_graph_print(r.graph, 1, &full));
  tp_graph *g2 = NULL;
  OK(tp_graph_parse(full, strlen(full), &g2));
  CHECK(g2 && tp_graph_equal(r.graph, g2));
  /* and runs to the same numbers */
  tp_tensor *o = NULL;
  int n = 0;
  OK(tp_graph_run(g2, 1, &xt, 1, &o, &n));
  float y2[4] = {0};
  if (o) tp_tensor_read(o, y2, sizeof y2);
  CHECK(n == 1 && !memcmp(y, y2, sizeof y));
  /* the caller's tensor was not tagged and not changed */
  CHECK(xt->trace_id == 0);
  float xc[4];
  tp_tensor_read(xt, xc, sizeof xc);
  CHECK(!memcmp(xc, x, sizeof x));
  CHECK(!tp_is_compiling());
  tp_tensor_release(o);
  tp_graph_free(g2);
  tp_free_buffer(text);
  tp_free_buffer(full);
  tp_trace_result_clear(&r);
  tp_tensor_release(xt);
  tp_tensor_release(W);
}

static void test_graph_break(void) {
  float x[3] = {1, 2, 3};
  tp_tensor *xt = vec(3, x), *y = NULL;
  tp_callable fn = {f_read, NULL};
  tp_trace_result r;
  /* fullgraph: the read raises GraphCaptureError naming the operation */
  CHECK(tp_trace(&fn, 1, &xt, 1, &r) == TP_ERR_CAPTURE);
  CHECK(strstr(tp_last_error(), "item()") != NULL);
  CHECK(!tp_capture_active());
  /* otherwise: compile falls back to eager and the results are right */
  tp_compiled *c;
  OK(tp_compile(&fn, NULL, &c));
  int n;
  for (int k = 0; k < 2; k++) {
    f_calls = 0;
    OK(tp_compiled_call(c, 1, &xt, 1, &y, &n));
    float v[3] = {0};
    if (y) tp_tensor_read(y, v, sizeof v);
    CHECK(v[0] == 6 && v[1] == 12 && v[2] == 18);
    CHECK(f_calls == 1); /* run once per call: capture, then eager */
    tp_tensor_release(y);
    y = NULL;
  }
  CHECK(tp_compiled_num_captures(c) == 1);
  CHECK(tp_compiled_last_graph(c) == NULL);
  tp_compiled_free(c);
  /* fullgraph through compile */
  tp_compile_options o;
  tp_compile_options_init(&o);
  o.fullgraph = 1;
  OK(tp_compile(&fn, &o, &c));
  CHECK(tp_compiled_call(c, 1, &xt, 1, &y, &n) == TP_ERR_CAPTURE);
  CHECK(strstr(tp_last_error(), "graph break") != NULL);
  tp_compiled_free(c);
  tp_tensor_release(xt);
}

static void test_cache_and_inline(void) {
  float x[4] = {-1, 0, 1, 2}, w[4] = {10, 20, 30, 40};
  tp_tensor *x4 = vec(4, x), *x2 = vec(2, x);
  W = vec(4, w);
  tp_callable fn = {f_mlp, NULL};
  tp_compiled *c;
  OK(tp_compile(&fn, NULL, &c));
  tp_tensor *y = NULL;
  int n;
  f_calls = 0;
  for (int k = 0; k < 3; k++) {
    OK(tp_compiled_call(c, 1, &x4, 1, &y, &n));
    float v[4] = {0};
    if (y) tp_tensor_read(y, v, sizeof v);
    CHECK(v[0] == 10 && v[3] == 43);
    tp_tensor_release(y);
  }
  CHECK(f_calls == 1 && tp_compiled_num_captures(c) == 1);
  /* a new shape: [2] does not broadcast against w[4] -> the error of add */
  CHECK(tp_compiled_call(c, 1, &x2, 1, &y, &n) == TP_ERR_INVALID_ARG);
  CHECK(strstr(tp_last_error(), "cannot be broadcast") != NULL);
  CHECK(!tp_capture_active());
  CHECK(tp_compiled_num_entries(c) == 1);
  /* still usable */
  OK(tp_compiled_call(c, 1, &x4, 1, &y, &n));
  tp_tensor_release(y);
  /* identity: outputs are the inputs; inputs twice */
  tp_callable id = {f_identity, NULL};
  tp_compiled *ci;
  OK(tp_compile(&id, NULL, &ci));
  tp_tensor *ins[2] = {x4, x4}, *outs[2] = {0};
  OK(tp_compiled_call(ci, 2, ins, 2, outs, &n));
  CHECK(n == 2);
  tp_tensor_release(outs[0]), tp_tensor_release(outs[1]);
  OK(tp_compiled_call(ci, 2, ins, 2, outs, &n));
  CHECK(n == 2 && tp_tensor_numel(outs[0]) == 4);
  tp_tensor_release(outs[0]), tp_tensor_release(outs[1]);
  tp_compiled_free(ci);
  tp_compiled_free(c);
  tp_tensor_release(x4);
  tp_tensor_release(x2);
  tp_tensor_release(W);
}

static void test_errors(void) {
  float x[3] = {1, 2, 3};
  tp_tensor *xt = vec(3, x), *y = NULL;
  /* mixing values of two live traces */
  tp_callable outer = {f_outer, NULL};
  tp_trace_result r;
  CHECK(tp_trace(&outer, 1, &xt, 0, &r) == TP_ERR_CAPTURE);
  CHECK(strstr(tp_last_error(), "cannot combine values from different traces") != NULL);
  CHECK(!tp_capture_active());
  /* an error inside the function propagates with its message */
  tp_callable bad = {f_fail, NULL};
  tp_compiled *c;
  OK(tp_compile(&bad, NULL, &c));
  int n;
  CHECK(tp_compiled_call(c, 1, &xt, 1, &y, &n) == TP_ERR_INVALID_ARG);
  CHECK(strstr(tp_last_error(), "inner dimensions") != NULL);
  tp_compiled_free(c);
  /* bad arguments */
  CHECK(tp_compile(NULL, NULL, &c) == TP_ERR_TYPE);
  CHECK(strstr(tp_last_error(), "compile() expected a callable") != NULL);
  tp_compile_options o;
  tp_compile_options_init(&o);
  o.backend = "eagre";
  tp_callable fn = {f_identity, NULL};
  CHECK(tp_compile(&fn, &o, &c) == TP_ERR_INVALID_BACKEND);
  CHECK(strstr(tp_last_error(), "Invalid backend: 'eagre', did you mean: 'eager'?") != NULL);
  tp_tensor_release(xt);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  size_t base = tp_live_tensors();
  test_trace_graph();
  test_graph_break();
  test_cache_and_inline();
  test_errors();
  if (tp_live_tensors() != base) {
    printf("FAIL: %zu tensors leaked\n", tp_live_tensors() - base);
    failures++;
  }
  printf("%s: %d failures\n", failures ? "FAIL" : "ok", failures);
  return failures != 0;
}
