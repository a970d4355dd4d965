/* records.h - the records registry: how each marked callable is captured.
 * One record per callable, keyed by the host's identity of the callable (a
 * JS function id, a C function pointer cast to an integer); adapters and
 * substitution aliases map to the same record, as in the seed's _records. */
#ifndef TP_RECORDS_H
#define TP_RECORDS_H
#include "capture.h"

typedef enum tp_rec_mode {
  TP_REC_ALLOW,      /* allow_in_graph: one opaque node */
  TP_REC_NONSTRICT,  /* nonstrict_trace: one opaque node */
  TP_REC_DISABLED,   /* disable(): opaque, capture suspended if recursive */
  TP_REC_CONSTANT,   /* assume_constant_result: value baked in */
  TP_REC_SUBSTITUTE, /* substitute_in_graph: replacement traced */
  TP_REC_NESTED,     /* nested_compile_region: child graph per key */
  TP_REC_MODE_COUNT
} tp_rec_mode;
const char *tp_rec_mode_name(tp_rec_mode m); /* "allow", "nonstrict", ... */
tp_status tp_rec_mode_parse(const char *s, tp_rec_mode *out);

typedef struct tp_rec_params {
  uint64_t replacement;        /* substitute */
  int can_constant_fold_through;
  int skip_signature_check;
  const char *reason;          /* disabled */
  int recursive;               /* disabled (default 1) */
  int has_options;             /* nested: NestedCompileRegionOptions given */
  uint64_t fw_compiler, bw_compiler; /* 0 = None (the host's ids) */
  /* what compiles the region's forward / backward graph for training
   * (NULL = None: the compiled function's backend) */
  tp_backend_fn fw_fn, bw_fn;
  void *fw_ud, *bw_ud;
  int max_reuse_entries;       /* nested (default 8) */
  uint64_t reuse_hash_fn;      /* 0 = None */
} tp_rec_params;
void tp_rec_params_init(tp_rec_params *p);

#define TP_REC_MAX_ALIASES 8
#define TP_REC_MAX_CONST 16
typedef struct tp_record {
  uint32_t id;                 /* 1-based, stable for the process */
  uint64_t original;
  char repr[96];               /* the host's repr of the callable, for messages */
  tp_rec_mode mode;
  tp_rec_params p;
  char reason[160];
  uint64_t adapter;            /* 0 until made */
  int naliases;
  uint64_t aliases[TP_REC_MAX_ALIASES];
  /* assume_constant_result */
  int constant_ready;
  int nconst;
  tp_tensor *constant[TP_REC_MAX_CONST];
  char constant_template[256]; /* the host's structure of the value */
  /* nested_compile_region: entries made by the current capture */
  int nested_entries;
} tp_record;

/* The seed's _register_record: an existing record with another mode ->
 * TP_ERR_VALUE "callable R cannot be marked as both 'allow' and 'disabled'";
 * a second substitution -> TP_ERR_VALUE "a substitution is already
 * registered for R"; the same mode again returns the existing record. */
tp_status tp_rec_register(uint64_t callable, const char *repr, tp_rec_mode mode,
                          const tp_rec_params *p, tp_record **out);
/* The seed's _record_for: original, adapter or an alias; NULL if none. */
tp_record *tp_rec_lookup(uint64_t callable);
tp_record *tp_rec_by_id(uint32_t id);
tp_status tp_rec_set_adapter(tp_record *r, uint64_t adapter);
tp_status tp_rec_add_alias(tp_record *r, uint64_t alias);
/* Constant values (owned references) and their host template. */
tp_status tp_rec_set_constant(tp_record *r, int n, tp_tensor *const *vals, const char *tmpl);
void tp_records_reset_constants(void); /* reset(): constants forgotten */
void tp_records_clear(void);           /* tests: forget every record */
int tp_records_count(void);

#endif
