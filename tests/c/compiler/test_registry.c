/* test_registry.c - the frontend's config values, backend registry, and
 * modes (src/compiler/{config,registry,modes}.c): every public function,
 * every error message word for word, list filtering by tags and host
 * features, close-match suggestions, capabilities and version checks, and
 * the built-in backends (stax, eager, reference) compiling a captured graph
 * whose runner reproduces the function's numbers. */
#include "compiler/compiler.h"
#include "compiler/modes.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "alloc_sweep.h"
#include "check.h"

#define OK(e) CHECK((e) == TP_OK)
/* status s and message exactly msg */
#define ERR(e, s, msg)                                                        \
  do {                                                                        \
    tp_status st_ = (e);                                                      \
    if (st_ != (s) || strcmp(tp_last_error(), (msg)) != 0) {                  \
      printf("FAIL %s:%d: %s\n  status %s (want %s)\n  got:  %s\n  want: %s\n", \
             __FILE__, __LINE__, #e, tp_status_name(st_), tp_status_name(s),  \
             tp_last_error(), (msg));                                         \
      failures++;                                                             \
    }                                                                         \
  } while (0)
#define STREQ(a, b)                                                           \
  do {                                                                        \
    const char *a_ = (a), *b_ = (b);                                          \
    if (!a_ || strcmp(a_, b_)) {                                              \
      printf("FAIL %s:%d: %s\n  got:  %s\n  want: %s\n", __FILE__, __LINE__, \
             #a, a_ ? a_ : "(null)", b_);                                     \
      failures++;                                                             \
    }                                                                         \
  } while (0)

/* ---- values and config ---- */
static void test_values(void) {
  char b[48];
  tp_value v = tp_value_none();
  STREQ(tp_value_type_repr(&v, b, sizeof b), "<class 'NoneType'>");
  v = tp_value_bool(7);
  CHECK(v.kind == TP_VAL_BOOL && v.i == 1);
  STREQ(tp_value_type_repr(&v, b, sizeof b), "<class 'bool'>");
  v = tp_value_int(-5);
  CHECK(v.kind == TP_VAL_INT && v.i == -5);
  STREQ(tp_value_type_repr(&v, b, sizeof b), "<class 'int'>");
  v.kind = TP_VAL_FLOAT, v.f = 1.5;
  STREQ(tp_value_type_repr(&v, b, sizeof b), "<class 'float'>");
  v.kind = TP_VAL_STR;
  strcpy(v.type, "str"), strcpy(v.s, "hi");
  STREQ(tp_value_type_repr(&v, b, sizeof b), "<class 'str'>");
  v.kind = TP_VAL_OTHER;
  strcpy(v.type, "function");
  STREQ(tp_value_type_repr(&v, b, sizeof b), "<class 'function'>");
  /* truncation stays a C string */
  char small[8];
  tp_value_type_repr(&v, small, sizeof small);
  CHECK(strlen(small) == 7);
}

static void test_config(void) {
  static const struct {
    const char *py, *js;
    tp_config_key k;
  } names[] = {
      {"assume_static_by_default", "assumeStaticByDefault", TP_CFG_ASSUME_STATIC_BY_DEFAULT},
      {"verbose", "verbose", TP_CFG_VERBOSE},
      {"fail_on_recompile_limit_hit", "failOnRecompileLimitHit", TP_CFG_FAIL_ON_RECOMPILE_LIMIT_HIT},
      {"force_disable_caches", "forceDisableCaches", TP_CFG_FORCE_DISABLE_CACHES},
      {"dynamic_shapes", "dynamicShapes", TP_CFG_DYNAMIC_SHAPES},
      {"recompile_limit", "recompileLimit", TP_CFG_RECOMPILE_LIMIT},
      {"accumulated_recompile_limit", "accumulatedRecompileLimit",
       TP_CFG_ACCUMULATED_RECOMPILE_LIMIT},
  };
  for (int i = 0; i < (int)(sizeof names / sizeof names[0]); i++) {
    tp_config_key k = TP_CFG_COUNT;
    OK(tp_config_lookup(names[i].py, &k));
    CHECK(k == names[i].k);
    k = TP_CFG_COUNT;
    OK(tp_config_lookup(names[i].js, &k));
    CHECK(k == names[i].k);
    STREQ(tp_config_name(names[i].k), names[i].py);
  }
  CHECK(tp_config_name(TP_CFG_COUNT) == NULL);
  tp_config_key k;
  ERR(tp_config_lookup("verbos", &k), TP_ERR_VALUE, "unknown config key 'verbos'");
  CHECK(tp_config_lookup(NULL, &k) == TP_ERR_INVALID_ARG);

  /* defaults */
  tp_config_reset();
  tp_value v = tp_config_get(TP_CFG_ASSUME_STATIC_BY_DEFAULT);
  CHECK(v.kind == TP_VAL_BOOL && v.i == 1);
  v = tp_config_get(TP_CFG_VERBOSE);
  CHECK(v.kind == TP_VAL_BOOL && v.i == 0);
  v = tp_config_get(TP_CFG_FAIL_ON_RECOMPILE_LIMIT_HIT);
  CHECK(v.kind == TP_VAL_BOOL && v.i == 0);
  v = tp_config_get(TP_CFG_FORCE_DISABLE_CACHES);
  CHECK(v.kind == TP_VAL_BOOL && v.i == 0);
  v = tp_config_get(TP_CFG_DYNAMIC_SHAPES);
  CHECK(v.kind == TP_VAL_NONE);
  v = tp_config_get(TP_CFG_RECOMPILE_LIMIT);
  CHECK(v.kind == TP_VAL_INT && v.i == 8);
  v = tp_config_get(TP_CFG_ACCUMULATED_RECOMPILE_LIMIT);
  CHECK(v.kind == TP_VAL_INT && v.i == 256);
  CHECK(tp_config_get(TP_CFG_COUNT).kind == TP_VAL_NONE);

  /* any value is stored; validation belongs to compile() */
  tp_value s = tp_value_none();
  s.kind = TP_VAL_STR;
  strcpy(s.type, "str"), strcpy(s.s, "yes");
  OK(tp_config_set(TP_CFG_VERBOSE, s));
  v = tp_config_get(TP_CFG_VERBOSE);
  CHECK(v.kind == TP_VAL_STR && !strcmp(v.s, "yes"));
  OK(tp_config_set(TP_CFG_RECOMPILE_LIMIT, tp_value_int(-3)));
  CHECK(tp_config_get(TP_CFG_RECOMPILE_LIMIT).i == -3);
  OK(tp_config_set(TP_CFG_DYNAMIC_SHAPES, tp_value_bool(1)));
  CHECK(tp_config_get(TP_CFG_DYNAMIC_SHAPES).kind == TP_VAL_BOOL);
  CHECK(tp_config_set(TP_CFG_COUNT, tp_value_none()) == TP_ERR_VALUE);
  tp_config_reset();
  CHECK(tp_config_get(TP_CFG_VERBOSE).kind == TP_VAL_BOOL);
  CHECK(tp_config_get(TP_CFG_RECOMPILE_LIMIT).i == 8);
  CHECK(tp_config_get(TP_CFG_DYNAMIC_SHAPES).kind == TP_VAL_NONE);
}

/* ---- registry ---- */
static int dummy_calls;
static tp_status dummy_backend(void *ud, const tp_graph *g, int nin, tp_tensor *const *examples,
                               const tp_backend_opts *opts, tp_backend_run *out) {
  (void)ud, (void)g, (void)nin, (void)examples, (void)opts, (void)out;
  dummy_calls++;
  return TP_ERR_UNSUPPORTED;
}

static char listing[512];
static const char *list(const char *const *ex, int nex, int unavail) {
  char *s = NULL;
  listing[0] = 0;
  if (tp_list_backends(ex, nex, unavail, &s) == TP_OK) {
    snprintf(listing, sizeof listing, "%s", s);
    tp_free_buffer(s);
  } else {
    snprintf(listing, sizeof listing, "<error>");
  }
  return listing;
}

static void test_registry_basics(void) {
  const tp_backend *b = NULL;
  tp_backends_init();
  tp_backends_init(); /* idempotent */
  STREQ(list(NULL, 0, 0), "stax");
  static const char *const none[1] = {NULL};
  STREQ(list(none, 0, 0), "eager\nreference\nstax");
  static const char *const dbg[] = {"debug"};
  STREQ(list(dbg, 1, 0), "stax");
  static const char *const exp[] = {"experimental"};
  STREQ(list(exp, 1, 0), "eager\nreference\nstax");

  OK(tp_lookup_backend("stax", &b));
  CHECK(b && !strcmp(b->name, "stax") && b->ntags == 0 && !b->declares_caps);
  OK(tp_lookup_backend("eager", &b));
  CHECK(b && b->ntags == 1 && !strcmp(b->tags[0], "debug"));
  OK(tp_lookup_backend("reference", &b));
  CHECK(b && b->ntags == 1 && !strcmp(b->tags[0], "debug"));
  CHECK(tp_lookup_backend(NULL, &b) == TP_ERR_INVALID_ARG);

  /* close matches, TensorPlay's words */
  ERR(tp_lookup_backend("stx", &b), TP_ERR_INVALID_BACKEND,
      "Invalid backend: 'stx', did you mean: 'stax'? (registered backends: eager, reference, stax)");
  CHECK(b == NULL);
  ERR(tp_lookup_backend("eagr", &b), TP_ERR_INVALID_BACKEND,
      "Invalid backend: 'eagr', did you mean: 'eager'? (registered backends: eager, reference, stax)");
  ERR(tp_lookup_backend("refrence", &b), TP_ERR_INVALID_BACKEND,
      "Invalid backend: 'refrence', did you mean: 'reference'? (registered backends: eager, "
      "reference, stax)");
  ERR(tp_lookup_backend("xyz", &b), TP_ERR_INVALID_BACKEND,
      "Invalid backend: 'xyz' (registered backends: eager, reference, stax)");

  /* register, tags, duplicate, unregister */
  static const char *const exptag[] = {"experimental"};
  OK(tp_register_backend("fast", dummy_backend, NULL, NULL, 0, NULL));
  OK(tp_register_backend("fastest", dummy_backend, NULL, exptag, 1, NULL));
  ERR(tp_register_backend("fast", dummy_backend, NULL, NULL, 0, NULL), TP_ERR_VALUE,
      "backend 'fast' is already registered");
  ERR(tp_register_backend("stax", dummy_backend, NULL, NULL, 0, NULL), TP_ERR_VALUE,
      "backend 'stax' is already registered");
  ERR(tp_register_backend("", dummy_backend, NULL, NULL, 0, NULL), TP_ERR_VALUE,
      "backend name must be a non-empty string");
  ERR(tp_register_backend("nofn", NULL, NULL, NULL, 0, NULL), TP_ERR_TYPE,
      "backend 'nofn' must be callable, got NULL");
  CHECK(tp_register_backend("x12345678901234567890123456789012345678901234567890123456789012345",
                            dummy_backend, NULL, NULL, 0, NULL) == TP_ERR_VALUE);
  STREQ(list(NULL, 0, 0), "fast\nstax");
  STREQ(list(none, 0, 0), "eager\nfast\nfastest\nreference\nstax");
  STREQ(list(dbg, 1, 0), "fast\nfastest\nstax");
  ERR(tp_lookup_backend("faste", &b), TP_ERR_INVALID_BACKEND,
      "Invalid backend: 'faste', did you mean: 'fast' or 'fastest'? (registered backends: eager, "
      "fast, fastest, reference, stax)");
  OK(tp_lookup_backend("fastest", &b)); /* tags never hide a backend from lookup */
  CHECK(b && b->fn == dummy_backend);

  /* equal scores: difflib's order (heapq.nlargest on (score, name)) */
  OK(tp_register_backend("mybackend1", dummy_backend, NULL, NULL, 0, NULL));
  OK(tp_register_backend("mybackend2", dummy_backend, NULL, NULL, 0, NULL));
  ERR(tp_lookup_backend("mybackend", &b), TP_ERR_INVALID_BACKEND,
      "Invalid backend: 'mybackend', did you mean: 'mybackend2' or 'mybackend1'? (registered "
      "backends: eager, fast, fastest, mybackend1, mybackend2, reference, stax)");
  tp_unregister_backend("mybackend1");
  tp_unregister_backend("mybackend2");
  tp_unregister_backend("fast");
  tp_unregister_backend("fastest");
  tp_unregister_backend("never-registered");
  tp_unregister_backend(NULL);
  STREQ(list(none, 0, 0), "eager\nreference\nstax");
  ERR(tp_lookup_backend("fast", &b), TP_ERR_INVALID_BACKEND,
      "Invalid backend: 'fast' (registered backends: eager, reference, stax)");
  /* re-register after unregister */
  OK(tp_register_backend("fast", dummy_backend, NULL, NULL, 0, NULL));
  OK(tp_lookup_backend("fast", &b));
  tp_unregister_backend("fast");

  /* default backend round trip */
  STREQ(tp_get_default_backend(), "stax");
  OK(tp_set_default_backend("eager"));
  STREQ(tp_get_default_backend(), "eager");
  ERR(tp_set_default_backend("stx"), TP_ERR_INVALID_BACKEND,
      "Invalid backend: 'stx', did you mean: 'stax'? (registered backends: eager, reference, stax)");
  STREQ(tp_get_default_backend(), "eager");
  OK(tp_set_default_backend(NULL));
  STREQ(tp_get_default_backend(), "stax");

  tp_backends_reset();
  CHECK(dummy_calls == 0);
}

static void test_capabilities(void) {
  tp_backend_caps c;
  const tp_backend *b = NULL;

  tp_backend_caps_init(&c);
  CHECK(c.n_optional_deps == 0 && c.contract_version == TP_CORE_BACKEND_CONTRACT_VERSION &&
        !c.min_core_version[0] && !c.max_core_version[0]);

  /* host features */
  CHECK(!tp_host_has_feature("threads"));
  CHECK(!tp_host_has_feature("no-such-feature"));
  CHECK(!tp_host_has_feature(NULL));
#if defined(__wasm__)
  CHECK(!tp_host_has_feature("native"));
#else
  CHECK(tp_host_has_feature("native"));
  CHECK(!tp_host_has_feature("simd128"));
#if defined(__x86_64__)
  CHECK(tp_host_has_feature("sse2"));
  /* avx2/avx512 agree with the dispatcher's choice */
  const char *isa = tp_isa_name();
  if (!strcmp(isa, "avx512")) CHECK(tp_host_has_feature("avx512"));
  if (!strcmp(isa, "avx2")) CHECK(tp_host_has_feature("avx2") && !tp_host_has_feature("avx512"));
#endif
#endif

  /* unknown names: the defaults, not an error */
  tp_clear_error();
  memset(&c, 0x55, sizeof c);
  tp_get_backend_capabilities("nope", &c);
  CHECK(c.n_optional_deps == 0 && c.contract_version == 1 && !c.min_core_version[0] &&
        !c.max_core_version[0]);
  CHECK(tp_last_status() == TP_OK);
  CHECK(!tp_declares_capabilities("nope"));
  CHECK(!tp_declares_capabilities("stax"));
  CHECK(!tp_declares_capabilities(NULL));
  tp_get_backend_capabilities("stax", &c);
  CHECK(c.n_optional_deps == 0 && c.contract_version == 1);

  /* a backend needing "threads": hidden unless include_unavailable */
  tp_backend_caps_init(&c);
  c.n_optional_deps = 2;
  strcpy(c.optional_deps[0], "threads");
#if defined(__wasm__)
  strcpy(c.optional_deps[1], "simd128");
#else
  strcpy(c.optional_deps[1], "native");
#endif
  strcpy(c.min_core_version, "0.1.0");
  strcpy(c.max_core_version, "0.9.99");
  OK(tp_register_backend("threaded", dummy_backend, NULL, NULL, 0, &c));
  CHECK(tp_declares_capabilities("threaded"));
  STREQ(list(NULL, 0, 0), "stax");
  STREQ(list(NULL, 0, 1), "stax\nthreaded");
  static const char *const none[1] = {NULL};
  STREQ(list(none, 0, 0), "eager\nreference\nstax");
  STREQ(list(none, 0, 1), "eager\nreference\nstax\nthreaded");
  ERR(tp_lookup_backend("threaded", &b), TP_ERR_INVALID_BACKEND,
      "backend 'threaded' is unavailable on this host: missing optional dependencies: threads");
  CHECK(b == NULL);
  ERR(tp_set_default_backend("threaded"), TP_ERR_INVALID_BACKEND,
      "backend 'threaded' is unavailable on this host: missing optional dependencies: threads");
  STREQ(tp_get_default_backend(), "stax");
  tp_backend_caps got;
  tp_get_backend_capabilities("threaded", &got);
  CHECK(got.n_optional_deps == 2 && !strcmp(got.optional_deps[0], "threads") &&
        !strcmp(got.min_core_version, "0.1.0") && !strcmp(got.max_core_version, "0.9.99"));
  tp_unregister_backend("threaded");

  /* two missing deps are both named */
  tp_backend_caps_init(&c);
  c.n_optional_deps = 2;
  strcpy(c.optional_deps[0], "threads");
  strcpy(c.optional_deps[1], "gpu");
  OK(tp_register_backend("needy", dummy_backend, NULL, NULL, 0, &c));
  ERR(tp_lookup_backend("needy", &b), TP_ERR_INVALID_BACKEND,
      "backend 'needy' is unavailable on this host: missing optional dependencies: threads, gpu");
  tp_unregister_backend("needy");

  /* explicit default caps still count as declared */
  tp_backend_caps_init(&c);
  OK(tp_register_backend("plain", dummy_backend, NULL, NULL, 0, &c));
  CHECK(tp_declares_capabilities("plain"));
  OK(tp_lookup_backend("plain", &b));
  tp_unregister_backend("plain");

  /* contract and version checks at registration */
  tp_backend_caps_init(&c);
  c.contract_version = 2;
  ERR(tp_register_backend("v2", dummy_backend, NULL, NULL, 0, &c), TP_ERR_VALUE,
      "backend 'v2' declares backend contract version 2, but this core implements version 1");
  tp_backend_caps_init(&c);
  strcpy(c.min_core_version, "0.2.0");
  ERR(tp_register_backend("future", dummy_backend, NULL, NULL, 0, &c), TP_ERR_VALUE,
      "backend 'future' requires core version >= 0.2.0, but this core is 0.1.0");
  tp_backend_caps_init(&c);
  strcpy(c.max_core_version, "0.0.9");
  ERR(tp_register_backend("old", dummy_backend, NULL, NULL, 0, &c), TP_ERR_VALUE,
      "backend 'old' requires core version <= 0.0.9, but this core is 0.1.0");
  tp_backend_caps_init(&c);
  strcpy(c.min_core_version, "0.1");
  ERR(tp_register_backend("bad", dummy_backend, NULL, NULL, 0, &c), TP_ERR_VALUE,
      "backend 'bad': min_core_version '0.1' is not MAJOR.MINOR.PATCH");
  tp_backend_caps_init(&c);
  strcpy(c.max_core_version, "1.x.0");
  ERR(tp_register_backend("bad", dummy_backend, NULL, NULL, 0, &c), TP_ERR_VALUE,
      "backend 'bad': max_core_version '1.x.0' is not MAJOR.MINOR.PATCH");
  tp_backend_caps_init(&c);
  strcpy(c.min_core_version, "0.1.0");
  strcpy(c.max_core_version, "0.1.0");
  OK(tp_register_backend("exact", dummy_backend, NULL, NULL, 0, &c));
  tp_unregister_backend("exact");
  tp_backend_caps_init(&c);
  c.n_optional_deps = 9;
  CHECK(tp_register_backend("many", dummy_backend, NULL, NULL, 0, &c) == TP_ERR_VALUE);
  /* none of the failed registrations left an entry */
  STREQ(list(none, 0, 1), "eager\nreference\nstax");
}

/* ---- modes ---- */
static void test_modes(void) {
  char *j = NULL;
  OK(tp_list_mode_options(NULL, &j));
  STREQ(j, "{\"default\": {}, \"reduce-overhead\": {\"stax.plan_replay\": true}, "
           "\"max-autotune-no-cudagraphs\": {\"stax.max_autotune\": true, "
           "\"stax.coordinate_descent_tuning\": true}, \"max-autotune\": {\"stax.max_autotune\": "
           "true, \"stax.coordinate_descent_tuning\": true, \"stax.plan_replay\": true}}");
  tp_free_buffer(j);
  OK(tp_list_mode_options("default", &j));
  STREQ(j, "{}");
  tp_free_buffer(j);
  OK(tp_list_mode_options("reduce-overhead", &j));
  STREQ(j, "{\"stax.plan_replay\": true}");
  tp_free_buffer(j);
  OK(tp_list_mode_options("max-autotune-no-cudagraphs", &j));
  STREQ(j, "{\"stax.max_autotune\": true, \"stax.coordinate_descent_tuning\": true}");
  tp_free_buffer(j);
  OK(tp_list_mode_options("max-autotune", &j));
  STREQ(j, "{\"stax.max_autotune\": true, \"stax.coordinate_descent_tuning\": true, "
           "\"stax.plan_replay\": true}");
  tp_free_buffer(j);
  j = (char *)1;
  ERR(tp_list_mode_options("foo", &j), TP_ERR_RUNTIME,
      "Unrecognized mode=foo, should be one of: default, reduce-overhead, "
      "max-autotune-no-cudagraphs, max-autotune");
  CHECK(j == NULL);

  /* mode patches */
  const char *keys[4];
  int n = -1;
  OK(tp_mode_patch(NULL, 4, keys, &n));
  CHECK(n == 0);
  OK(tp_mode_patch("max-autotune", 4, keys, &n));
  CHECK(n == 3 && !strcmp(keys[0], "stax.max_autotune") &&
        !strcmp(keys[1], "stax.coordinate_descent_tuning") && !strcmp(keys[2], "stax.plan_replay"));
  CHECK(tp_mode_patch("max-autotune", 2, keys, &n) == TP_ERR_INVALID_ARG);
  CHECK(tp_mode_patch("bogus", 4, keys, &n) == TP_ERR_RUNTIME);

  /* the option table */
  static const char *const want[] = {"stax.fusion",        "stax.codegen",
                                     "stax.plan_replay",   "stax.max_autotune",
                                     "stax.coordinate_descent_tuning", "stax.epilogue_fusion",
                                     "stax.memory_planning", "stax.profile"};
  int rows = 0;
  const char *key, *doc;
  while ((doc = tp_mode_option_doc(rows, &key)) != NULL) {
    CHECK(rows < 8 && !strcmp(key, want[rows]) && doc[0]);
    rows++;
  }
  CHECK(rows == 8 && key == NULL);
  CHECK(tp_mode_option_doc(-1, NULL) == NULL);
  STREQ(tp_mode_option_doc(5, NULL), "fuse bias/activation/residual into GEMM epilogues");

  /* option checks */
  char k[3][48] = {"stax.fusion", "stax.plan_replay", "stax.memory_planning"};
  tp_value v[3] = {tp_value_bool(1), tp_value_bool(0), tp_value_bool(1)};
  OK(tp_check_mode_options(3, k, v));
  OK(tp_check_mode_options(0, NULL, NULL));
  strcpy(k[1], "stax.fusio");
  ERR(tp_check_mode_options(3, k, v), TP_ERR_RUNTIME,
      "Unexpected optimization option stax.fusio, known options are stax.codegen, "
      "stax.coordinate_descent_tuning, stax.epilogue_fusion, stax.fusion, stax.max_autotune, "
      "stax.memory_planning, stax.plan_replay, stax.profile");
  strcpy(k[1], "stax.plan_replay");
  v[0] = tp_value_int(1);
  ERR(tp_check_mode_options(3, k, v), TP_ERR_TYPE,
      "option stax.fusion must be a bool, got <class 'int'>");
  v[0] = tp_value_none();
  ERR(tp_check_mode_options(3, k, v), TP_ERR_TYPE,
      "option stax.fusion must be a bool, got <class 'NoneType'>");
  v[0] = tp_value_bool(1);
  v[2].kind = TP_VAL_STR;
  strcpy(v[2].type, "str");
  ERR(tp_check_mode_options(3, k, v), TP_ERR_TYPE,
      "option stax.memory_planning must be a bool, got <class 'str'>");
  /* keys are checked in order: the unknown key comes first here */
  strcpy(k[0], "nope");
  CHECK(tp_check_mode_options(3, k, v) == TP_ERR_RUNTIME);
  CHECK(tp_check_mode_options(-1, k, v) == TP_ERR_INVALID_ARG);
}

/* ---- built-in backends on a captured graph ---- */
static tp_tensor *BIAS; /* a constant: becomes a get_attr node */

/* outs: softmax(x @ w + 1 + BIAS, dim=-1), sum(transpose(x @ w), dim 1) */
static tp_status f_net(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                       int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_tensor *h = NULL, *one = NULL, *h1 = NULL, *h2 = NULL, *p = NULL, *t = NULL, *r = NULL;
  tp_attrs a;
  tp_status s = tp_matmul(in[0], in[1], &h);
  if (!s) s = tp_scalar(1, 1, &one);
  if (!s) s = tp_add(h, one, &h1);
  if (!s) s = tp_add(h1, BIAS, &h2);
  if (!s) {
    tp_attrs_init(&a);
    a.dim = -1;
    s = tp_op_call(TP_OP_SOFTMAX, 1, &h2, &a, &p);
  }
  if (!s) s = tp_transpose(h, 0, 1, &t);
  if (!s) s = tp_sum(t, 1, (int64_t[]){1}, 0, &r);
  tp_tensor_release(h), tp_tensor_release(one), tp_tensor_release(h1), tp_tensor_release(h2),
      tp_tensor_release(t);
  if (s) {
    tp_tensor_release(p), tp_tensor_release(r);
    return s;
  }
  outs[0] = p, outs[1] = r;
  *nout = 2;
  return TP_OK;
}

static double max_diff(tp_tensor *a, tp_tensor *b) {
  if (tp_tensor_numel(a) != tp_tensor_numel(b) || tp_tensor_ndim(a) != tp_tensor_ndim(b))
    return INFINITY;
  double m = 0;
  for (int64_t i = 0; i < tp_tensor_numel(a); i++) {
    double d = fabs(tp_tensor_get_f64(a, i) - tp_tensor_get_f64(b, i));
    if (!(d <= m)) m = d;
  }
  return m;
}

static void run_backend(const char *name, const tp_trace_result *tr, tp_tensor *const *in,
                        double tol) {
  const tp_backend *b = NULL;
  tp_backend_run run = {0};
  tp_backend_opts opts;
  memset(&opts, 0, sizeof opts);
  OK(tp_lookup_backend(name, &b));
  if (!b) return;
  OK(b->fn(b->ud, tr->graph, 2, in, &opts, &run));
  if (!run.run) return;
  tp_tensor *outs[4] = {0};
  int nout = 0;
  /* twice: the runner is reusable */
  for (int rep = 0; rep < 2; rep++) {
    OK(run.run(run.ud, 2, in, 4, outs, &nout));
    CHECK(nout == 2);
    for (int i = 0; i < nout && i < tr->nout; i++) {
      double d = max_diff(outs[i], tr->outs[i]);
      if (!(d <= tol)) {
        printf("FAIL: backend %s output %d differs by %g (tol %g)\n", name, i, d, tol);
        failures++;
      }
    }
    for (int i = 0; i < nout; i++) tp_tensor_release(outs[i]), outs[i] = NULL;
  }
  /* wrong input count and too few output slots are errors, not crashes */
  CHECK(run.run(run.ud, 1, in, 4, outs, &nout) == TP_ERR_INVALID_ARG);
  CHECK(run.run(run.ud, 2, in, 1, outs, &nout) == TP_ERR_INVALID_ARG);
  if (run.free) run.free(run.ud);
}

static void test_builtin_backends(void) {
  int64_t xs[2] = {4, 3}, ws[2] = {3, 5}, bs[1] = {5};
  tp_tensor *x = NULL, *w = NULL, *x2 = NULL;
  OK(tp_randn(2, xs, 11, &x));
  OK(tp_randn(2, ws, 12, &w));
  OK(tp_randn(1, bs, 13, &BIAS));
  tp_callable fn = {f_net, NULL};
  tp_tensor *in[2] = {x, w};
  tp_trace_result tr;
  memset(&tr, 0, sizeof tr);
  OK(tp_trace(&fn, 2, in, 1, &tr));
  CHECK(tr.graph && tr.nout == 2);
  if (!tr.graph) goto done;

  /* the runners hold their own copy: the caller's graph may go */
  tp_graph *g_copy = NULL;
  {
    char *t = NULL;
    OK(tp_graph_print(tr.graph, 1, &t));
    OK(tp_graph_parse(t, strlen(t), &g_copy));
    tp_free_buffer(t);
  }
  const tp_backend *b;
  tp_backend_run run = {0};
  tp_backend_opts opts;
  memset(&opts, 0, sizeof opts);
  OK(tp_lookup_backend("stax", &b));
  OK(b->fn(b->ud, g_copy, 2, in, &opts, &run));
  tp_graph_free(g_copy);
  tp_tensor *outs[2] = {0};
  int nout = 0;
  OK(run.run(run.ud, 2, in, 2, outs, &nout));
  CHECK(nout == 2 && max_diff(outs[0], tr.outs[0]) <= 1e-6);
  for (int i = 0; i < nout; i++) tp_tensor_release(outs[i]);
  run.free(run.ud);

  run_backend("stax", &tr, in, 1e-6);
  run_backend("eager", &tr, in, 1e-6);
  run_backend("reference", &tr, in, 1e-5);

  /* new inputs of the same signature: compare with the function itself */
  OK(tp_randn(2, xs, 21, &x2));
  {
    tp_tensor *in2[2] = {x2, w};
    tp_trace_result tr2;
    memset(&tr2, 0, sizeof tr2);
    OK(tp_trace(&fn, 2, in2, 1, &tr2)); /* tr2.outs: the function's numbers on x2 */
    tp_trace_result want = tr2;
    want.graph = tr.graph; /* but run the first capture's graph */
    run_backend("stax", &want, in2, 1e-6);
    run_backend("eager", &want, in2, 1e-6);
    run_backend("reference", &want, in2, 1e-5);
    tp_trace_result_clear(&tr2);
  }

  /* stax checks the mode and options it is given */
  OK(tp_lookup_backend("stax", &b));
  opts.has_mode = 1;
  strcpy(opts.mode, "max-autotune");
  memset(&run, 0, sizeof run);
  OK(b->fn(b->ud, tr.graph, 2, in, &opts, &run));
  if (run.free) run.free(run.ud);
  strcpy(opts.mode, "fast");
  memset(&run, 0, sizeof run);
  ERR(b->fn(b->ud, tr.graph, 2, in, &opts, &run), TP_ERR_RUNTIME,
      "Unrecognized mode=fast, should be one of: default, reduce-overhead, "
      "max-autotune-no-cudagraphs, max-autotune");
  CHECK(run.run == NULL);
  memset(&opts, 0, sizeof opts);
  opts.has_options = 1;
  opts.noptions = 1;
  strcpy(opts.option_keys[0], "stax.fusion");
  opts.option_values[0] = tp_value_int(0);
  ERR(b->fn(b->ud, tr.graph, 2, in, &opts, &run), TP_ERR_TYPE,
      "option stax.fusion must be a bool, got <class 'int'>");
  opts.option_values[0] = tp_value_bool(0);
  OK(b->fn(b->ud, tr.graph, 2, in, &opts, &run));
  if (run.free) run.free(run.ud);

done:
  tp_trace_result_clear(&tr);
  tp_tensor_release(x), tp_tensor_release(w), tp_tensor_release(x2), tp_tensor_release(BIAS);
  BIAS = NULL;
}

/* ---- an opaque host region (call_host + getitem) through each backend ---- */
static tp_status host_two(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                          int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_tensor *two = NULL;
  tp_status s = tp_scalar(2, 1, &two);
  if (!s) s = tp_mul(in[0], two, &outs[0]);
  if (!s) s = tp_relu(in[0], &outs[1]);
  tp_tensor_release(two);
  if (s) {
    tp_tensor_release(outs[0]);
    return s;
  }
  *nout = 2;
  return TP_OK;
}
static int64_t host_id;
/* exp(x) -> host (2e, relu e) -> sum of both */
static tp_status f_opaque(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                          int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_tensor *e = NULL, *r[2] = {0}, *y = NULL;
  int nr = 0;
  tp_status s = tp_op_call(TP_OP_EXP, 1, &in[0], NULL, &e);
  if (!s) s = tp_capture_opaque(host_id, 1, &e, "allow", 0, 1, NULL, 2, r, &nr);
  if (!s && nr == 2) s = tp_add(r[0], r[1], &y);
  tp_tensor_release(e), tp_tensor_release(r[0]), tp_tensor_release(r[1]);
  if (s) return s;
  outs[0] = y;
  *nout = 1;
  return TP_OK;
}

static void test_opaque_region(void) {
  tp_callable host = {host_two, NULL};
  OK(tp_host_fn_register(&host, &host_id));
  int64_t xs[2] = {3, 4};
  tp_tensor *x = NULL;
  OK(tp_randn(2, xs, 5, &x));
  tp_callable fn = {f_opaque, NULL};
  tp_trace_result tr;
  memset(&tr, 0, sizeof tr);
  OK(tp_trace(&fn, 1, &x, 0, &tr));
  CHECK(tr.graph && tr.nout == 1);
  int nhost = 0, nget = 0;
  for (int i = 0; tr.graph && i < tr.graph->n; i++) {
    nhost += tr.graph->nodes[i].kind == TP_NODE_CALL && tr.graph->nodes[i].op == TP_OP_CALL_HOST;
    nget += tr.graph->nodes[i].kind == TP_NODE_CALL && tr.graph->nodes[i].op == TP_OP_GETITEM;
  }
  CHECK(nhost == 1 && nget == 2);
  static const char *const names[] = {"stax", "eager", "reference"};
  for (int k = 0; k < 3 && tr.graph; k++) {
    const tp_backend *b = NULL;
    tp_backend_run run = {0};
    tp_tensor *out = NULL;
    int nout = 0;
    OK(tp_lookup_backend(names[k], &b));
    if (b) OK(b->fn(b->ud, tr.graph, 1, &x, NULL, &run));
    if (run.run) OK(run.run(run.ud, 1, &x, 1, &out, &nout));
    CHECK(nout == 1 && out && max_diff(out, tr.outs[0]) <= 1e-5);
    tp_tensor_release(out);
    if (run.free) run.free(run.ud);
  }
  tp_trace_result_clear(&tr);
  tp_tensor_release(x);
  tp_host_fn_unregister(host_id);
}

/* Fail the Nth allocation (../alloc_sweep.h): every registry, mode and
 * backend path returns TP_ERR_OUT_OF_MEMORY or recovers, leaks nothing, and
 * the same scenario then gives the same outputs. */
#define OOM_VALS 16
typedef struct oom_result {
  int nout[3];
  double v[3][2][OOM_VALS]; /* the two outputs of stax, eager, reference */
} oom_result;

typedef struct oom_ud {
  tp_tensor *const *in;
  const tp_graph *g;
} oom_ud;

static tp_status oom_scenario(void *udv, void *resv) {
  oom_ud *ud = udv;
  oom_result *res = resv;
  tp_backend_caps c;
  const tp_backend *b;
  char *s = NULL;
  tp_backend_run run = {0};
  tp_tensor *outs[2] = {0};
  int nout = 0;
  sweep_begin();
  tp_backend_caps_init(&c);
  strcpy(c.min_core_version, "0.0.1");
  SWEEP_STEP("register", tp_register_backend("oomer", dummy_backend, NULL, NULL, 0, &c));
  SWEEP_STEP("list backends", tp_list_backends(NULL, 0, 1, &s));
  tp_free_buffer(s), s = NULL;
  if (tp_lookup_backend("oomr", &b) != TP_ERR_INVALID_BACKEND)
    SWEEP_STEP("lookup a misspelt name", tp_last_status());
  SWEEP_STEP("list mode options", tp_list_mode_options(NULL, &s));
  tp_free_buffer(s), s = NULL;
  tp_unregister_backend("oomer");
  static const char *const names[] = {"stax", "eager", "reference"};
  for (int k = 0; k < 3; k++) {
    SWEEP_STEP(names[k], tp_lookup_backend(names[k], &b));
    SWEEP_STEP(names[k], b->fn(b->ud, ud->g, 2, ud->in, NULL, &run));
    SWEEP_STEP(names[k], run.run(run.ud, 2, ud->in, 2, outs, &nout));
    res->nout[k] = nout;
    for (int i = 0; i < nout && i < 2; i++)
      for (int64_t j = 0; j < tp_tensor_numel(outs[i]) && j < OOM_VALS; j++)
        res->v[k][i][j] = tp_tensor_get_f64(outs[i], j);
    for (int i = 0; i < nout; i++) tp_tensor_release(outs[i]), outs[i] = NULL;
    nout = 0;
    if (run.free) run.free(run.ud);
    memset(&run, 0, sizeof run);
  }
cleanup:
  tp_free_buffer(s);
  for (int i = 0; i < nout; i++) tp_tensor_release(outs[i]);
  if (run.free) run.free(run.ud);
  tp_unregister_backend("oomer");
  return sweep_status;
}

static void test_oom(void) {
  int64_t xs[2] = {2, 3}, ws[2] = {3, 4}, bs[1] = {4};
  tp_tensor *x = NULL, *w = NULL;
  OK(tp_randn(2, xs, 1, &x));
  OK(tp_randn(2, ws, 2, &w));
  OK(tp_randn(1, bs, 3, &BIAS));
  tp_callable fn = {f_net, NULL};
  tp_tensor *in[2] = {x, w};
  tp_trace_result tr;
  memset(&tr, 0, sizeof tr);
  OK(tp_trace(&fn, 2, in, 1, &tr));
  oom_ud ud = {in, tr.graph};
  oom_result base;
  long total = 0;
  sweep_case sc = {"registry, modes and the three backends", oom_scenario, NULL,
                   sizeof(oom_result), &ud};
  CHECK(tr.graph != NULL);
  if (tr.graph) failures += sweep_run(&sc, &base, &total);
  CHECK(total > 50); /* the scenario makes dozens of allocations */
  for (int k = 0; k < 3; k++) CHECK(base.nout[k] == 2);
  /* the three backends agree on the baseline (float32 rounding) */
  for (int k = 1; k < 3; k++)
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < OOM_VALS; j++)
        CHECK(fabs(base.v[k][i][j] - base.v[0][i][j]) <= 1e-5 * (1 + fabs(base.v[0][i][j])));
  STREQ(list((const char *const[1]){NULL}, 0, 1), "eager\nreference\nstax");
  tp_trace_result_clear(&tr);
  tp_tensor_release(x), tp_tensor_release(w), tp_tensor_release(BIAS);
  BIAS = NULL;
}

int main(void) {
  size_t base = tp_live_tensors();
  test_values();
  test_config();
  test_registry_basics();
  test_capabilities();
  test_modes();
  test_builtin_backends();
  test_oom();
  test_opaque_region();
  if (tp_live_tensors() != base) {
    printf("FAIL: %zu tensors leaked\n", tp_live_tensors() - base);
    failures++;
  }
  if (failures) {
    printf("%d failure(s)\n", failures);
    return 1;
  }
  printf("test_registry: ok\n");
  return 0;
}
