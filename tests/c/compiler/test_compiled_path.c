/* test_compiled_path.c - every call of a compiled function goes through the
 * backend's compiled function, the first call included (the capture runs
 * on the real inputs, then the backend's function computes the results);
 * a graph break runs the function eagerly; a compiled function called
 * inside disable_capture() runs the original; the resolved dynamic policy
 * reaches the backend; mistyped C options are refused in the seed's order. */
#include "compiler/compiler.h"
#include <string.h>
#include "check.h"

#define ERR(e, st, msg) CHECK((e) == (st) && strstr(tp_last_error(), (msg)) != NULL)

static tp_tensor *vec2(float a, float b) {
  float v[2] = {a, b};
  int64_t s = 2;
  tp_tensor *t = NULL;
  tp_tensor_new(TP_F32, 1, &s, v, &t);
  return t;
}

static int equals2(tp_tensor *t, float a, float b) {
  float v[2] = {-99, -99};
  if (tp_tensor_numel(t) != 2 || tp_tensor_read(t, v, sizeof v)) return 0;
  return v[0] == a && v[1] == b;
}

/* f(x) = relu(x + 1) */
static int f_calls, f_saw_compiling;
static tp_status f_relu1(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                         int *nout) {
  (void)ud, (void)nin, (void)max_out;
  f_calls++;
  f_saw_compiling = tp_is_compiling();
  tp_tensor *one = NULL, *s = NULL;
  tp_status st = tp_scalar(1, 0, &one);
  if (!st) st = tp_add(in[0], one, &s);
  if (!st) st = tp_relu(s, &outs[0]);
  tp_tensor_release(one);
  tp_tensor_release(s);
  *nout = st ? 0 : 1;
  return st;
}

/* a backend whose function returns inputs[0] * 0, whatever the graph says */
static int zero_runs, zero_compiles, seen_has_dynamic = -1, seen_dynamic = -1;
static tp_status zero_run(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                          int *nout) {
  (void)ud, (void)nin, (void)max_out;
  zero_runs++;
  tp_tensor *z = NULL;
  tp_status st = tp_scalar(0, 0, &z);
  if (!st) st = tp_mul(in[0], z, &outs[0]);
  tp_tensor_release(z);
  *nout = st ? 0 : 1;
  return st;
}
static tp_status zero_backend(void *ud, const tp_graph *g, int nin, tp_tensor *const *ex,
                              const tp_backend_opts *o, tp_backend_run *out) {
  (void)ud, (void)g, (void)nin, (void)ex;
  zero_compiles++;
  seen_has_dynamic = o->has_dynamic;
  seen_dynamic = o->dynamic;
  memset(out, 0, sizeof *out);
  out->run = zero_run;
  return TP_OK;
}

static void test_first_call_uses_backend(void) {
  CHECK_OK(tp_register_backend("zero_test", zero_backend, NULL, NULL, 0, NULL));
  tp_callable fn = {f_relu1, NULL};
  tp_compile_options o;
  tp_compile_options_init(&o);
  o.backend = "zero_test";
  tp_compiled *c = NULL;
  CHECK_OK(tp_compile(&fn, &o, &c));
  tp_tensor *x = vec2(1, 2), *y = NULL;
  int n = 0;
  zero_runs = f_calls = 0;
  /* eager would give [2, 3]; the backend's function gives [0, 0] */
  CHECK_OK(tp_compiled_call(c, 1, &x, 1, &y, &n));
  CHECKF(n == 1 && equals2(y, 0, 0), "first call did not go through the backend's function");
  CHECK(zero_runs == 1 && f_calls == 1 && tp_compiled_num_captures(c) == 1);
  tp_tensor_release(y);
  CHECK_OK(tp_compiled_call(c, 1, &x, 1, &y, &n));
  CHECK(equals2(y, 0, 0) && zero_runs == 2 && f_calls == 1);
  tp_tensor_release(y);
  /* inputs are left as they were */
  CHECK(equals2(x, 1, 2));
  /* inside disable_capture(): the original runs eagerly, nothing captured */
  int prev = tp_disable_capture_begin();
  f_saw_compiling = -1;
  CHECK_OK(tp_compiled_call(c, 1, &x, 1, &y, &n));
  tp_disable_capture_end(prev);
  CHECKF(equals2(y, 2, 3) && f_saw_compiling == 0 && zero_runs == 2 && tp_compiled_num_captures(c) == 1,
         "a compiled call inside disable_capture() did not run the original eagerly");
  tp_tensor_release(y);
  /* and afterwards the compiled path is back */
  CHECK_OK(tp_compiled_call(c, 1, &x, 1, &y, &n));
  CHECK(equals2(y, 0, 0) && zero_runs == 3);
  tp_tensor_release(y);
  tp_compiled_free(c);

  /* past the recompile limit an entry is compiled, run once and dropped:
   * that one call also comes from the backend */
  tp_compile_options_init(&o);
  o.backend = "zero_test";
  o.recompile_limit = 1;
  CHECK_OK(tp_compile(&fn, &o, &c));
  tp_tensor *x3 = NULL;
  float v3[3] = {1, 2, 3};
  int64_t s3 = 3;
  CHECK_OK(tp_tensor_new(TP_F32, 1, &s3, v3, &x3));
  CHECK_OK(tp_compiled_call(c, 1, &x, 1, &y, &n));
  tp_tensor_release(y);
  zero_runs = 0;
  CHECK_OK(tp_compiled_call(c, 1, &x3, 1, &y, &n));
  float r3[3] = {-1, -1, -1};
  CHECK(y && tp_tensor_read(y, r3, sizeof r3) == TP_OK && r3[0] == 0 && r3[2] == 0 && zero_runs == 1 &&
        tp_compiled_num_entries(c) == 1);
  tp_tensor_release(y);
  tp_tensor_release(x3);
  tp_compiled_free(c);
  tp_tensor_release(x);
}

/* the dynamic policy the backend sees: None unless given or configured */
static void dyn_seen(int dynamic, int config_dyn, int assume_static, int want_has, int want_dyn, int line) {
  tp_config_reset();
  if (config_dyn >= 0) tp_config_set(TP_CFG_DYNAMIC_SHAPES, tp_value_bool(config_dyn));
  tp_config_set(TP_CFG_ASSUME_STATIC_BY_DEFAULT, tp_value_bool(assume_static));
  tp_callable fn = {f_relu1, NULL};
  tp_compile_options o;
  tp_compile_options_init(&o);
  o.backend = "zero_test";
  o.dynamic = dynamic;
  tp_compiled *c = NULL;
  tp_status s = tp_compile(&fn, &o, &c);
  tp_config_reset();
  tp_tensor *x = vec2(1, 2), *y = NULL;
  int n = 0;
  seen_has_dynamic = seen_dynamic = -1;
  if (!s) s = tp_compiled_call(c, 1, &x, 1, &y, &n);
  if (s || seen_has_dynamic != want_has || (want_has && seen_dynamic != want_dyn))
    FAILF_AT(line, "backend saw has_dynamic=%d dynamic=%d, expected %d/%d (status %d)", seen_has_dynamic,
             seen_dynamic, want_has, want_dyn, s);
  tp_tensor_release(y);
  tp_tensor_release(x);
  tp_compiled_free(c);
}

static void test_dynamic_reaches_backend(void) {
  dyn_seen(-1, -1, 1, 0, 0, __LINE__); /* None */
  dyn_seen(1, -1, 1, 1, 1, __LINE__);
  dyn_seen(0, -1, 0, 1, 0, __LINE__);
  dyn_seen(-1, 1, 1, 1, 1, __LINE__);   /* config.dynamic_shapes = True */
  dyn_seen(-1, 0, 0, 1, 0, __LINE__);   /* config.dynamic_shapes = False wins */
  dyn_seen(-1, -1, 0, 1, 1, __LINE__);  /* assume_static_by_default = False */
  tp_unregister_backend("zero_test");
}

static void test_option_types(void) {
  tp_callable fn = {f_relu1, NULL};
  tp_compiled *c = NULL;
  tp_compile_options o;
  tp_compile_options_init(&o);
  o.fullgraph = 2;
  ERR(tp_compile(&fn, &o, &c), TP_ERR_TYPE, "fullgraph must be a bool");
  tp_compile_options_init(&o);
  o.dynamic = 7;
  ERR(tp_compile(&fn, &o, &c), TP_ERR_TYPE, "dynamic must be a bool or None");
  tp_compile_options_init(&o);
  o.dynamic_shapes = 3;
  ERR(tp_compile(&fn, &o, &c), TP_ERR_TYPE, "dynamic_shapes currently accepts only a bool");
  tp_compile_options_init(&o);
  o.disable = -1;
  ERR(tp_compile(&fn, &o, &c), TP_ERR_TYPE, "disable must be a bool");
  tp_compile_options_init(&o);
  o.isolate_recompiles = 9;
  ERR(tp_compile(&fn, &o, &c), TP_ERR_TYPE, "isolate_recompiles must be a bool");
  tp_compile_options_init(&o);
  o.strict_native = 2;
  ERR(tp_compile(&fn, &o, &c), TP_ERR_TYPE, "strict_native must be a bool");
  tp_compile_options_init(&o);
  o.has_options = 1;
  o.noptions = 1;
  o.option_keys[0] = "stax.fusion";
  o.option_values[0] = 4;
  ERR(tp_compile(&fn, &o, &c), TP_ERR_TYPE, "options['stax.fusion'] must be a bool");
  /* the seed's order: dynamic and dynamic_shapes together is reported before
   * a mistyped fullgraph; a bad recompile_limit before it too */
  tp_compile_options_init(&o);
  o.fullgraph = 5;
  o.dynamic = 1;
  o.dynamic_shapes = 1;
  ERR(tp_compile(&fn, &o, &c), TP_ERR_RUNTIME, "dynamic and dynamic_shapes cannot both be specified");
  tp_compile_options_init(&o);
  o.fullgraph = 5;
  o.recompile_limit = -1;
  ERR(tp_compile(&fn, &o, &c), TP_ERR_VALUE, "recompile_limit must be positive");
  CHECK(c == NULL);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  size_t base = tp_live_tensors();
  test_first_call_uses_backend();
  test_dynamic_reaches_backend();
  test_option_types();
  if (tp_live_tensors() != base) {
    printf("FAIL: %zu tensors leaked\n", tp_live_tensors() - base);
    failures++;
  }
  printf("%s: %d failures\n", failures ? "FAIL" : "ok", failures);
  return failures != 0;
}
