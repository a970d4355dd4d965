/* compiler.h - the frontend's internal API: config values, the backend
 * registry, modes. compile.c (and records.c) build on it; wasm/abi.c
 * exposes it to JS. Errors follow the seed: TP_ERR_TYPE for Python's
 * TypeError, TP_ERR_VALUE for ValueError, TP_ERR_RUNTIME for RuntimeError,
 * TP_ERR_ASSERTION for AssertionError, TP_ERR_INVALID_BACKEND for
 * InvalidBackend; messages are the seed's, word for word. */
#ifndef TP_COMPILER_H
#define TP_COMPILER_H
#include "../capture/capture.h"

/* ---- dynamically typed values (config entries, options, scalars) ---- */
typedef enum tp_value_kind {
  TP_VAL_NONE,   /* Python None / JS null or undefined */
  TP_VAL_BOOL,
  TP_VAL_INT,    /* an integer that is not a bool */
  TP_VAL_FLOAT,
  TP_VAL_STR,
  TP_VAL_OTHER,  /* anything else: `type` names it ("object", "function") */
  TP_VAL_KIND_COUNT
} tp_value_kind;
typedef struct tp_value {
  tp_value_kind kind;
  int64_t i;       /* BOOL (0/1) and INT */
  double f;        /* FLOAT */
  char type[24];   /* STR: "str"; OTHER: the host's type name */
  char s[64];      /* STR: the text (truncated) */
} tp_value;
tp_value tp_value_none(void);
tp_value tp_value_bool(int b);
tp_value tp_value_int(int64_t i);
/* Python's repr of the type for messages: "<class 'str'>" style. */
const char *tp_value_type_repr(const tp_value *v, char *buf, size_t n);

/* ---- config (src/compiler/config.c): the seed's `config` module ----
 * Keys (Python name / JS name, default):
 *   assume_static_by_default / assumeStaticByDefault   true
 *   verbose / verbose                                   false
 *   fail_on_recompile_limit_hit / failOnRecompileLimitHit false
 *   force_disable_caches / forceDisableCaches           false
 *   dynamic_shapes / dynamicShapes                      None
 *   recompile_limit / recompileLimit                    8
 *   accumulated_recompile_limit / accumulatedRecompileLimit 256
 * Setting stores any value (validation happens in compile(), in the
 * seed's order); an unknown key is TP_ERR_VALUE "unknown config key 'x'". */
typedef enum tp_config_key {
  TP_CFG_ASSUME_STATIC_BY_DEFAULT,
  TP_CFG_VERBOSE,
  TP_CFG_FAIL_ON_RECOMPILE_LIMIT_HIT,
  TP_CFG_FORCE_DISABLE_CACHES,
  TP_CFG_DYNAMIC_SHAPES,
  TP_CFG_RECOMPILE_LIMIT,
  TP_CFG_ACCUMULATED_RECOMPILE_LIMIT,
  TP_CFG_COUNT
} tp_config_key;
tp_status tp_config_lookup(const char *name, tp_config_key *out); /* either spelling */
const char *tp_config_name(tp_config_key k);                     /* python spelling */
tp_status tp_config_set(tp_config_key k, tp_value v);
tp_value tp_config_get(tp_config_key k);
void tp_config_reset(void); /* all defaults */

/* ---- backends (src/compiler/registry.c) ---- */
#define TP_CORE_BACKEND_CONTRACT_VERSION 1

/* What a backend returns: something callable on the graph's inputs. */
typedef struct tp_backend_run {
  tp_status (*run)(void *ud, int nin, tp_tensor *const *in, int max_out,
                   tp_tensor **outs, int *nout);
  void *ud;
  void (*free)(void *ud); /* may be NULL */
} tp_backend_run;

/* What a backend is called with besides (graph, example inputs): each field
 * is passed only when set (has_* flags), as in TensorPlay's contract. */
typedef struct tp_backend_opts {
  int has_mode;
  char mode[32];
  int has_options;
  int noptions;
  char option_keys[16][48];
  tp_value option_values[16];
  int has_name;
  char name[64];
  int has_dynamic;
  int dynamic;
  int has_strict_native;
  int strict_native;
} tp_backend_opts;

typedef tp_status (*tp_backend_fn)(void *ud, const tp_graph *g, int nin,
                                   tp_tensor *const *examples,
                                   const tp_backend_opts *opts, tp_backend_run *out);

typedef struct tp_backend_caps {
  int n_optional_deps;
  char optional_deps[8][32]; /* host features, e.g. "simd128", "threads" */
  int contract_version;      /* default TP_CORE_BACKEND_CONTRACT_VERSION */
  char min_core_version[16]; /* "" = any */
  char max_core_version[16];
} tp_backend_caps;
void tp_backend_caps_init(tp_backend_caps *c);

typedef struct tp_backend {
  char name[64];
  tp_backend_fn fn;
  void *ud;
  int ntags;
  char tags[4][24];
  tp_backend_caps caps;
  int declares_caps; /* registered with explicit capabilities */
} tp_backend;

/* Host features present in this build ("simd128" in Wasm with SIMD,
 * "avx2"/"avx512" natively, never "threads" today). */
int tp_host_has_feature(const char *feature);

/* A duplicate name is TP_ERR_VALUE. tags/caps may be NULL. */
tp_status tp_register_backend(const char *name, tp_backend_fn fn, void *ud,
                              const char *const *tags, int ntags,
                              const tp_backend_caps *caps);
void tp_unregister_backend(const char *name); /* unknown names ignored */
/* Sorted names, newline separated, into a caller string freed with
 * tp_free_string. exclude_tags NULL means the default ("debug",
 * "experimental"); nexclude 0 with a non-NULL array excludes nothing. */
tp_status tp_list_backends(const char *const *exclude_tags, int nexclude,
                           int include_unavailable, char **out);
/* InvalidBackend with up to two close matches:
 * "Invalid backend: 'stx', did you mean: 'stax'?" ... and for a backend
 * whose optional deps are missing: which ones. */
tp_status tp_lookup_backend(const char *name, const tp_backend **out);
tp_status tp_set_default_backend(const char *name); /* NULL restores "stax" */
const char *tp_get_default_backend(void);
/* Unknown names give the default capabilities (no error). */
void tp_get_backend_capabilities(const char *name, tp_backend_caps *out);
int tp_declares_capabilities(const char *name);
/* Registers the built-in backends once (stax, eager, reference). */
void tp_backends_init(void);
/* reset(): lets backends drop their caches. */
void tp_backends_reset(void);

/* ---- modes (src/compiler/modes.c) ----
 * The four mode names of TensorPlay: "default", "reduce-overhead",
 * "max-autotune-no-cudagraphs", "max-autotune". Option keys adapted to
 * this platform: stax.fusion, stax.codegen, stax.plan_replay,
 * stax.max_autotune, stax.coordinate_descent_tuning, ... (bool values).
 * mode NULL: the whole mapping. Output: JSON text (tp_free_string).
 * Unknown mode: TP_ERR_RUNTIME "Unrecognized mode=foo, should be one of:
 * default, reduce-overhead, max-autotune-no-cudagraphs, max-autotune". */
tp_status tp_list_mode_options(const char *mode, char **json_out);
/* Validate compile(options=...) keys and values: unknown key ->
 * TP_ERR_RUNTIME "Unexpected optimization option stax.fusio, known
 * options are ..."; non-bool -> TP_ERR_TYPE. */
tp_status tp_check_mode_options(int n, const char (*keys)[48], const tp_value *values);

/* compile()'s config checks in the seed's order, then recompile_limit
 * (given: the argument; else config.recompile_limit). */
tp_status tp_compile_check_config(int recompile_limit_given, int recompile_limit);
#endif
