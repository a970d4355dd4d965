/* test_frontend.c - the seed's frontend in C: the records registry and its
 * errors, opaque regions (call_host + getitem) recorded from C host
 * functions and replayed by the graph runner, compile()'s option checks in
 * the seed's order, guards and recompile reasons, the recompile limits,
 * force_disable_caches, dynamic shapes with a shape-read guard, reset() and
 * explain(). */
#include "capture/records.h"
#include "compiler/compiler.h"
#include <stdio.h>
#include <string.h>
#include "check.h"

#define ERR(e, st, msg) CHECK((e) == (st) && strstr(tp_last_error(), (msg)) != NULL)

static tp_tensor *vec(int n, float start) {
  float v[64];
  for (int i = 0; i < n; i++) v[i] = start + (float)i;
  int64_t s = n;
  tp_tensor *t = NULL;
  tp_tensor_new(TP_F32, 1, &s, v, &t);
  return t;
}

static float at(tp_tensor *t, int i) {
  float v[64];
  tp_tensor_read(t, v, sizeof(float) * (size_t)tp_tensor_numel(t));
  return v[i];
}

/* ---- records ---- */
static void test_records(void) {
  tp_records_clear();
  tp_record *a, *b;
  CHECK(tp_rec_register(101, "<function f>", TP_REC_ALLOW, NULL, &a) == TP_OK);
  CHECK(tp_rec_register(101, "<function f>", TP_REC_ALLOW, NULL, &b) == TP_OK && a == b);
  ERR(tp_rec_register(101, "<function f>", TP_REC_DISABLED, NULL, &b), TP_ERR_VALUE,
      "callable <function f> cannot be marked as both 'allow' and 'disabled'");
  tp_rec_params p;
  tp_rec_params_init(&p);
  p.replacement = 103;
  CHECK(tp_rec_register(102, "<function g>", TP_REC_SUBSTITUTE, &p, &a) == TP_OK);
  ERR(tp_rec_register(102, "<function g>", TP_REC_SUBSTITUTE, &p, &b), TP_ERR_VALUE,
      "a substitution is already registered for <function g>");
  /* adapters and aliases find the same record */
  CHECK(tp_rec_add_alias(a, 104) == TP_OK && tp_rec_lookup(104) == a);
  CHECK(tp_rec_set_adapter(a, 105) == TP_OK && tp_rec_lookup(105) == a);
  CHECK(tp_rec_lookup(999) == NULL);
  CHECK(!strcmp(tp_rec_mode_name(TP_REC_NESTED), "nested"));
  /* constants: first value wins; reset forgets */
  tp_rec_params_init(&p);
  CHECK(tp_rec_register(106, "<function c>", TP_REC_CONSTANT, &p, &a) == TP_OK);
  tp_tensor *v1 = vec(2, 1), *v2 = vec(2, 5);
  CHECK(tp_rec_set_constant(a, 1, &v1, "tensor") == TP_OK && a->constant_ready);
  CHECK(tp_rec_set_constant(a, 1, &v2, "tensor") == TP_OK && at(a->constant[0], 0) == 1);
  tp_records_reset_constants();
  CHECK(!a->constant_ready && a->nconst == 0);
  tp_tensor_release(v1);
  tp_tensor_release(v2);
  tp_records_clear();
}

/* ---- opaque regions ---- */
static int helper_calls, helper_saw_capture;
/* an "allowed" helper: returns (x * 2, x + 1) */
static tp_status helper(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                        int *nout) {
  (void)ud, (void)nin, (void)max_out;
  helper_calls++;
  helper_saw_capture = tp_is_compiling();
  tp_tensor *two, *one;
  tp_scalar(2, 1, &two);
  tp_scalar(1, 1, &one);
  tp_status s = tp_mul(in[0], two, &outs[0]);
  if (!s) s = tp_add(in[0], one, &outs[1]);
  tp_tensor_release(two);
  tp_tensor_release(one);
  *nout = s ? 0 : 2;
  return s;
}
static int64_t helper_id;
static int suspend_region;

/* f(x) = relu(x) -> helper (opaque) -> a - b */
static tp_status f_opaque(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                          int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_tensor *r = NULL, *res[2] = {0};
  int n = 0;
  tp_status s = tp_relu(in[0], &r);
  if (!s) {
    if (tp_capture_sees(1, &r))
      s = tp_capture_opaque(helper_id, 1, &r, suspend_region ? "disabled" : "allow", suspend_region,
                            1, suspend_region ? "uses numpy" : NULL, 2, res, &n);
    else
      s = tp_host_invoke(helper_id, 1, &r, 2, res, &n);
  }
  if (!s) s = tp_sub(res[0], res[1], &outs[0]);
  tp_tensor_release(r);
  tp_tensor_release(res[0]);
  tp_tensor_release(res[1]);
  *nout = s ? 0 : 1;
  return s;
}

static void test_opaque(void) {
  tp_callable h = {helper, NULL};
  CHECK(tp_host_fn_register(&h, &helper_id) == TP_OK);
  for (suspend_region = 0; suspend_region < 2; suspend_region++) {
    tp_callable fn = {f_opaque, NULL};
    tp_compile_options o;
    tp_compile_options_init(&o);
    o.backend = "eager";
    tp_compiled *c;
    CHECK(tp_compile(&fn, &o, &c) == TP_OK);
    tp_tensor *x = vec(4, -1), *y = NULL; /* [-1 0 1 2] */
    int n;
    helper_calls = 0;
    for (int k = 0; k < 2; k++) {
      CHECK(tp_compiled_call(c, 1, &x, 1, &y, &n) == TP_OK);
      /* relu -> [0 0 1 2]; 2r - (r+1) = r - 1 */
      CHECK(y && at(y, 0) == -1 && at(y, 3) == 1);
      tp_tensor_release(y);
    }
    /* once on the samples during capture, then once per call from the
     * compiled graph (the first call's results come from it too) */
    CHECK(helper_calls == 3);
    CHECK(helper_saw_capture == 0 || !suspend_region);
    char *text = NULL;
    tp_graph_print(tp_compiled_last_graph(c), 0, &text);
    CHECK(text && strstr(text, "call_host(%0, fn=") && strstr(text, "results=2"));
    CHECK(text && strstr(text, "getitem(%1, index=1)"));
    CHECK(text && strstr(text, "opaque_region=\"true\""));
    if (suspend_region) CHECK(text && strstr(text, "disabled_region=\"true\"") && strstr(text, "uses numpy"));
    /* the text parses back; explain reports the capture */
    tp_graph *g = NULL;
    CHECK(text && tp_graph_parse(text, strlen(text), &g) == TP_OK);
    tp_graph_free(g);
    tp_free_buffer(text);
    char *ex = NULL;
    CHECK(tp_compiled_explain(c, &ex) == TP_OK && strstr(ex, "\"captures\": 1") && strstr(ex, "\"ops\": 5"));
    if (ex && !strstr(ex, "\"ops\": 5")) printf("%s\n", ex);
    tp_free_buffer(ex);
    /* no generated Wasm module outside a Wasm host (tests/js/codegen.test.js
     * checks the module in one) */
    size_t mlen = 99;
    CHECK(tp_compiled_last_module(c, &mlen) == NULL && mlen == 0);
    CHECK(tp_compiled_last_module(NULL, &mlen) == NULL && mlen == 0);
    tp_compiled_free(c);
    tp_tensor_release(x);
  }
  /* a host function that fails during capture: GraphCaptureError */
  tp_host_fn_unregister(helper_id);
  tp_callable fn = {f_opaque, NULL};
  tp_compiled *c;
  CHECK(tp_compile(&fn, NULL, &c) == TP_OK);
  tp_tensor *x = vec(4, -1), *y = NULL;
  int n;
  ERR(tp_compiled_call(c, 1, &x, 1, &y, &n), TP_ERR_CAPTURE,
      "opaque compiler callable could not produce a tensor output during capture");
  CHECK(!tp_capture_active());
  tp_compiled_free(c);
  tp_tensor_release(x);
}

/* ---- nested compile regions ---- */
static int region_calls;
static int64_t region_id;
static int max_entries = 8;
/* region(x) = softmax-free small block: (x * x) + 1 */
static tp_status region(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                        int *nout) {
  (void)ud, (void)nin, (void)max_out;
  region_calls++;
  tp_tensor *sq = NULL, *one;
  tp_scalar(1, 1, &one);
  tp_status s = tp_mul(in[0], in[0], &sq);
  if (!s) s = tp_add(sq, one, &outs[0]);
  tp_tensor_release(sq);
  tp_tensor_release(one);
  *nout = s ? 0 : 1;
  return s;
}
static tp_status call_region(tp_tensor *x, tp_tensor **out) {
  int n;
  if (tp_capture_sees(1, &x)) return tp_capture_nested(77, max_entries, region_id, "", 1, &x, 1, out, &n);
  return tp_host_invoke(region_id, 1, &x, 1, out, &n);
}
/* f(a, b) = region(a) + region(a) + region(b) */
static tp_status f_nested(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                          int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_tensor *r1 = NULL, *r2 = NULL, *r3 = NULL, *s1 = NULL;
  tp_status s = call_region(in[0], &r1);
  if (!s) s = call_region(in[0], &r2);
  if (!s) s = call_region(in[1], &r3);
  if (!s) s = tp_add(r1, r2, &s1);
  if (!s) s = tp_add(s1, r3, &outs[0]);
  tp_tensor_release(r1), tp_tensor_release(r2), tp_tensor_release(r3), tp_tensor_release(s1);
  *nout = s ? 0 : 1;
  return s;
}

static void test_nested(void) {
  tp_callable rc = {region, NULL};
  CHECK(tp_host_fn_register(&rc, &region_id) == TP_OK);
  tp_callable fn = {f_nested, NULL};
  tp_compiled *c;
  CHECK(tp_compile(&fn, NULL, &c) == TP_OK);
  tp_tensor *a = vec(3, 1), *b = vec(3, 2), *in[2] = {a, b}, *y = NULL; /* a=[1 2 3] b=[2 3 4] */
  int n;
  region_calls = 0;
  CHECK(tp_compiled_call(c, 2, in, 1, &y, &n) == TP_OK);
  /* 2*(a^2+1) + (b^2+1) = [4+5, 10+10, 20+17] */
  CHECK(y && at(y, 0) == 9 && at(y, 1) == 20 && at(y, 2) == 37);
  tp_tensor_release(y);
  CHECK(region_calls == 2); /* a traced once and reused, b (other values) traced once */
  const tp_graph *g = tp_compiled_last_graph(c);
  CHECK(g && g->nsubs == 2);
  char *text = NULL;
  CHECK(tp_graph_print(g, 1, &text) == TP_OK && strstr(text, "subgraph \"_tensorplay_nested_region_"));
  CHECK(text && strstr(text, "invoke(") && strstr(text, ": graph"));
  tp_graph *g2 = NULL;
  CHECK(text && tp_graph_parse(text, strlen(text), &g2) == TP_OK && tp_graph_equal(g, g2));
  tp_free_buffer(text);
  /* the cached graph runs the subgraphs without calling the region */
  region_calls = 0;
  CHECK(tp_compiled_call(c, 2, in, 1, &y, &n) == TP_OK && at(y, 2) == 37);
  tp_tensor_release(y);
  CHECK(region_calls == 0);
  y = NULL;
  CHECK(g2 && tp_graph_run(g2, 2, in, 1, &y, &n) == TP_OK && at(y, 0) == 9);
  tp_tensor_release(y);
  tp_graph_free(g2);
  tp_compiled_free(c);
  /* the reuse limit */
  max_entries = 1;
  CHECK(tp_compile(&fn, NULL, &c) == TP_OK);
  ERR(tp_compiled_call(c, 2, in, 1, &y, &n), TP_ERR_CAPTURE, "nested compile region reuse limit reached");
  CHECK(!tp_capture_active());
  tp_compiled_free(c);
  max_entries = 8;
  tp_tensor_release(a);
  tp_tensor_release(b);
}

/* ---- the public C marking API: tp_allow_in_graph ... tp_call ---- */
static int inner_calls;
static tp_status inner(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                       int *nout) {
  (void)nin, (void)max_out;
  inner_calls++;
  tp_tensor *k;
  tp_scalar((double)(intptr_t)ud, 1, &k);
  tp_status s = tp_mul(in[0], k, &outs[0]); /* x * ud */
  tp_tensor_release(k);
  *nout = s ? 0 : 1;
  return s;
}
static tp_callable marked;
static tp_status f_marked(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                          int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_tensor *r = NULL, *m = NULL;
  int n;
  tp_status s = tp_relu(in[0], &r);
  if (!s) s = tp_call(&marked, 1, &r, 1, &m, &n);
  if (!s) s = tp_add(m, in[0], &outs[0]);
  tp_tensor_release(r), tp_tensor_release(m);
  *nout = s ? 0 : 1;
  return s;
}

static void test_marks(void) {
  tp_tensor *x = vec(4, -1), *y = NULL; /* [-1 0 1 2] */
  int n;
  const char *want[] = {"call_host", "call_host", "call_host", NULL, "mul(%0, 5)", "invoke("};
  for (int mode = 0; mode < 6; mode++) {
    marked = (tp_callable){inner, (void *)(intptr_t)(3 + mode)};
    tp_callable repl = {inner, (void *)(intptr_t)5};
    switch (mode) {
      case 0: CHECK(tp_allow_in_graph(&marked) == TP_OK); break;
      case 1: CHECK(tp_nonstrict_trace(&marked) == TP_OK); break;
      case 2: CHECK(tp_disable(&marked, 1, "C helper") == TP_OK); break;
      case 3: CHECK(tp_assume_constant_result(&marked) == TP_OK); break;
      case 4: CHECK(tp_substitute_in_graph(&marked, &repl, 0) == TP_OK); break;
      default: CHECK(tp_nested_compile_region(&marked, 8) == TP_OK); break;
    }
    int ud = 3 + mode, k = mode == 4 ? 5 : ud;
    tp_callable fn = {f_marked, NULL};
    tp_compiled *c;
    CHECK(tp_compile(&fn, NULL, &c) == TP_OK);
    for (int rep = 0; rep < 2; rep++) {
      CHECK(tp_compiled_call(c, 1, &x, 1, &y, &n) == TP_OK);
      /* relu(x) * k + x */
      CHECK(y && at(y, 0) == -1 && at(y, 2) == (float)(k + 1) && at(y, 3) == (float)(2 * k + 2));
      tp_tensor_release(y);
    }
    char *text = NULL;
    tp_graph_print(tp_compiled_last_graph(c), 1, &text);
    if (want[mode]) CHECK(text && strstr(text, want[mode]));
    else CHECK(text && strstr(text, "get_attr") && !strstr(text, "call_host")); /* a baked-in constant */
    tp_free_buffer(text);
    tp_compiled_free(c);
    tp_reset();
  }
  marked = (tp_callable){inner, (void *)(intptr_t)3};
  ERR(tp_disable(&marked, 1, NULL), TP_ERR_VALUE, "cannot be marked as both 'allow' and 'disabled'");
  ERR(tp_nested_compile_region(&marked, 0), TP_ERR_VALUE, "max_reuse_entries must be positive");
  /* outside a capture, tp_call calls */
  inner_calls = 0;
  CHECK(tp_call(&marked, 1, &x, 1, &y, &n) == TP_OK && at(y, 3) == 6 && inner_calls == 1);
  tp_tensor_release(y);
  /* disable_capture: traced values refuse to compute inside it */
  int prev = tp_disable_capture_begin();
  CHECK(tp_add(x, x, &y) == TP_OK); /* no capture: fine */
  tp_tensor_release(y);
  tp_disable_capture_end(prev);
  tp_tensor_release(x);
}

/* ---- compile options, guards, limits ---- */
static int f_calls;
static tp_status f_add1(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                        int *nout) {
  (void)ud, (void)nin, (void)max_out;
  f_calls++;
  tp_tensor *one;
  tp_scalar(1, 1, &one);
  tp_status s = tp_add(in[0], one, &outs[0]);
  tp_tensor_release(one);
  *nout = s ? 0 : 1;
  return s;
}
/* reads the shape of its input */
static tp_status f_shape(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                         int *nout) {
  (void)ud, (void)nin, (void)max_out;
  f_calls++;
  int64_t n = tp_tensor_shape(in[0])[0];
  tp_tensor *k;
  tp_scalar((double)n, 1, &k);
  tp_status s = tp_mul(in[0], k, &outs[0]);
  tp_tensor_release(k);
  *nout = s ? 0 : 1;
  return s;
}

static void test_compile_options(void) {
  tp_callable fn = {f_add1, NULL};
  tp_compiled *c = NULL;
  tp_compile_options o;
  tp_compile_options_init(&o);
  o.dynamic = 1;
  o.dynamic_shapes = 0;
  ERR(tp_compile(&fn, &o, &c), TP_ERR_RUNTIME, "dynamic and dynamic_shapes cannot both be specified");
  tp_compile_options_init(&o);
  o.mode = "default";
  o.has_options = 1;
  ERR(tp_compile(&fn, &o, &c), TP_ERR_RUNTIME, "Either mode or options can be specified, but not both");
  tp_compile_options_init(&o);
  tp_config_set(TP_CFG_VERBOSE, tp_value_int(1));
  ERR(tp_compile(&fn, &o, &c), TP_ERR_TYPE, "config.verbose must be a bool");
  tp_config_reset();
  tp_config_set(TP_CFG_ACCUMULATED_RECOMPILE_LIMIT, tp_value_int(0));
  ERR(tp_compile(&fn, &o, &c), TP_ERR_VALUE, "config.accumulated_recompile_limit must be a positive integer");
  tp_config_reset();
  o.recompile_limit = -2;
  ERR(tp_compile(&fn, &o, &c), TP_ERR_VALUE, "recompile_limit must be positive");
  tp_compile_options_init(&o);
  o.mode = "fast";
  ERR(tp_compile(&fn, &o, &c), TP_ERR_RUNTIME, "Unrecognized mode=fast");
  tp_compile_options_init(&o);
  o.backend = "stx";
  ERR(tp_compile(&fn, &o, &c), TP_ERR_INVALID_BACKEND, "did you mean: 'stax'");
  CHECK(c == NULL);
  /* each mode compiles */
  const char *modes[] = {"default", "reduce-overhead", "max-autotune-no-cudagraphs", "max-autotune"};
  for (int i = 0; i < 4; i++) {
    tp_compile_options_init(&o);
    o.mode = modes[i];
    CHECK(tp_compile(&fn, &o, &c) == TP_OK);
    tp_compiled_free(c);
  }
}

static void test_guards_and_limits(void) {
  tp_callable fn = {f_add1, NULL};
  tp_compiled *c;
  tp_compile_options o;
  tp_compile_options_init(&o);
  o.recompile_limit = 2;
  CHECK(tp_compile(&fn, &o, &c) == TP_OK);
  tp_tensor *x4 = vec(4, 0), *x5 = vec(5, 0), *x6 = vec(6, 0), *y;
  int n;
  f_calls = 0;
  CHECK(tp_compiled_call(c, 1, &x4, 1, &y, &n) == TP_OK);
  tp_tensor_release(y);
  CHECK(tp_compiled_call(c, 1, &x5, 1, &y, &n) == TP_OK);
  tp_tensor_release(y);
  CHECK(tp_compiled_call(c, 1, &x4, 1, &y, &n) == TP_OK);
  tp_tensor_release(y);
  CHECK(f_calls == 2 && tp_compiled_num_entries(c) == 2);
  /* limit reached: compiles again without storing */
  CHECK(tp_compiled_call(c, 1, &x6, 1, &y, &n) == TP_OK && at(y, 5) == 6);
  tp_tensor_release(y);
  CHECK(tp_compiled_call(c, 1, &x6, 1, &y, &n) == TP_OK);
  tp_tensor_release(y);
  CHECK(f_calls == 4 && tp_compiled_num_entries(c) == 2);
  char *r = NULL;
  CHECK(tp_compiled_recompile_reasons(c, &r) == TP_OK && strstr(r, "inputs[0].shape == (4,)"));
  tp_free_buffer(r);
  /* fail_on_recompile_limit_hit is read when the wrapper is made */
  tp_compiled_free(c);
  tp_config_set(TP_CFG_FAIL_ON_RECOMPILE_LIMIT_HIT, tp_value_bool(1));
  CHECK(tp_compile(&fn, &o, &c) == TP_OK);
  tp_config_reset();
  CHECK(tp_compiled_call(c, 1, &x4, 1, &y, &n) == TP_OK);
  tp_tensor_release(y);
  CHECK(tp_compiled_call(c, 1, &x5, 1, &y, &n) == TP_OK);
  tp_tensor_release(y);
  ERR(tp_compiled_call(c, 1, &x6, 1, &y, &n), TP_ERR_RUNTIME, "TensorPlay compile specialization limit reached");
  /* reset() clears specializations and reasons */
  tp_reset();
  CHECK(tp_compiled_num_entries(c) == 0 && tp_compiled_num_captures(c) == 0);
  CHECK(tp_compiled_recompile_reasons(c, &r) == TP_OK && r[0] == 0);
  tp_free_buffer(r);
  tp_compiled_free(c);
  /* accumulated limit */
  tp_config_set(TP_CFG_ACCUMULATED_RECOMPILE_LIMIT, tp_value_int(2));
  tp_compile_options_init(&o);
  CHECK(tp_compile(&fn, &o, &c) == TP_OK);
  tp_config_reset();
  CHECK(tp_compiled_call(c, 1, &x4, 1, &y, &n) == TP_OK);
  tp_tensor_release(y);
  CHECK(tp_compiled_call(c, 1, &x5, 1, &y, &n) == TP_OK);
  tp_tensor_release(y);
  ERR(tp_compiled_call(c, 1, &x6, 1, &y, &n), TP_ERR_RUNTIME, "TensorPlay accumulated recompilation limit reached");
  tp_compiled_free(c);
  /* force_disable_caches: every call captures */
  tp_config_set(TP_CFG_FORCE_DISABLE_CACHES, tp_value_bool(1));
  CHECK(tp_compile(&fn, &o, &c) == TP_OK);
  tp_config_reset();
  f_calls = 0;
  for (int k = 0; k < 3; k++) {
    CHECK(tp_compiled_call(c, 1, &x4, 1, &y, &n) == TP_OK);
    tp_tensor_release(y);
  }
  CHECK(f_calls == 3 && tp_compiled_num_entries(c) == 0);
  tp_compiled_free(c);
  /* dynamic: one entry for every length, unless the shape was read */
  tp_compile_options_init(&o);
  o.dynamic = 1;
  CHECK(tp_compile(&fn, &o, &c) == TP_OK);
  f_calls = 0;
  CHECK(tp_compiled_call(c, 1, &x4, 1, &y, &n) == TP_OK);
  tp_tensor_release(y);
  CHECK(tp_compiled_call(c, 1, &x5, 1, &y, &n) == TP_OK && at(y, 4) == 5);
  tp_tensor_release(y);
  CHECK(f_calls == 1 && tp_compiled_num_entries(c) == 1);
  tp_compiled_free(c);
  tp_callable fs = {f_shape, NULL};
  CHECK(tp_compile(&fs, &o, &c) == TP_OK);
  f_calls = 0;
  CHECK(tp_compiled_call(c, 1, &x4, 1, &y, &n) == TP_OK && at(y, 1) == 4);
  tp_tensor_release(y);
  CHECK(tp_compiled_call(c, 1, &x5, 1, &y, &n) == TP_OK && at(y, 1) == 5);
  tp_tensor_release(y);
  CHECK(f_calls == 2 && tp_compiled_num_entries(c) == 2);
  CHECK(tp_compiled_recompile_reasons(c, &r) == TP_OK && strstr(r, "inputs[0].shape == (4,)"));
  tp_free_buffer(r);
  char *ex = NULL;
  CHECK(tp_compiled_explain(c, &ex) == TP_OK && strstr(ex, "inputs[0].shape (read"));
  tp_free_buffer(ex);
  tp_compiled_free(c);
  tp_tensor_release(x4);
  tp_tensor_release(x5);
  tp_tensor_release(x6);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  size_t base = tp_live_tensors();
  test_records();
  test_opaque();
  test_nested();
  test_marks();
  test_compile_options();
  test_guards_and_limits();
  if (tp_live_tensors() != base) {
    printf("FAIL: %zu tensors leaked\n", tp_live_tensors() - base);
    failures++;
  }
  printf("%s: %d failures\n", failures ? "FAIL" : "ok", failures);
  return failures != 0;
}
