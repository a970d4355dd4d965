/* abi.c - the flat, handle-based ABI of abi.h. Every handle is checked
 * against a slot table with generations, so stale handles fail cleanly. */
#include "abi_native.h"
#include "../src/core/internal.h"
#include "../src/graph/graph.h"
#include <stdio.h>
#include <stdlib.h>

/* ---- host import ---- */
#if defined(__wasm__)
__attribute__((import_module("env"), import_name("tp_host_call"))) int32_t
tp_host_call(int32_t fn_id, int32_t in_ptr, int32_t nin, int32_t out_ptr, int32_t max_out);
#define HOST_CALL(id, in, nin, out, max) \
  tp_host_call((id), (int32_t)(intptr_t)(in), (nin), (int32_t)(intptr_t)(out), (max))
__attribute__((import_module("env"), import_name("tp_host_backend"))) int32_t
tp_host_backend(int32_t fn_id, uint32_t graph, int32_t in_ptr, int32_t nin, int32_t opts_json);
__attribute__((import_module("env"), import_name("tp_host_release"))) void
tp_host_release(int32_t fn_id);
#define HOST_BACKEND(id, g, in, nin, opts) \
  tp_host_backend((id), (g), (int32_t)(intptr_t)(in), (nin), (int32_t)(intptr_t)(opts))
#define HOST_RELEASE(id) tp_host_release(id)
#else
/* Native builds (tests) install the host with tpw_set_native_host. */
typedef int32_t (*tpw_native_host_fn)(int32_t, const uint32_t *, int32_t, uint32_t *, int32_t);
static tpw_native_host_fn native_host;
void tpw_set_native_host(tpw_native_host_fn fn) { native_host = fn; }
#define HOST_CALL(id, in, nin, out, max) \
  (native_host ? native_host((id), (in), (nin), (out), (max)) : -1)
typedef int32_t (*tpw_native_backend_fn)(int32_t, uint32_t, const uint32_t *, int32_t, const char *);
static tpw_native_backend_fn native_backend;
static void (*native_release)(int32_t);
void tpw_set_native_backend_host(tpw_native_backend_fn b, void (*release)(int32_t)) {
  native_backend = b;
  native_release = release;
}
#define HOST_BACKEND(id, g, in, nin, opts) \
  (native_backend ? native_backend((id), (g), (in), (nin), (opts)) : -1)
#define HOST_RELEASE(id) (native_release ? native_release(id) : (void)0)
#endif

/* ---- handle table ---- */
enum { K_FREE, K_TENSOR, K_COMPILED, K_GRAPH };
static const char *const kind_names[] = {"free", "tensor", "compiled function", "graph"};
typedef struct slot {
  void *ptr;
  uint32_t gen;
  int kind;
  int next_free;
} slot;
static slot *slots;
static int nslots, capslots, free_head = -1;

#define IDX_BITS 20
#define GEN_MASK 0x7ffu /* 11 bits: handles stay below 2^31 */

static uint32_t handle_new(int kind, void *ptr) {
  int i;
  if (free_head >= 0) {
    i = free_head;
    free_head = slots[i].next_free;
  } else {
    if (nslots >= (1 << IDX_BITS) - 1) {
      tp_fail(TP_ERR_OUT_OF_MEMORY, "too many live handles (%d)", nslots);
      return 0;
    }
    if (nslots == capslots) {
      int nc = capslots ? capslots * 2 : 256;
      slot *ns = tp_realloc(slots, sizeof(slot) * (size_t)nc);
      if (!ns) return 0;
      slots = ns;
      capslots = nc;
    }
    i = nslots++;
    slots[i].gen = 1;
  }
  slots[i].ptr = ptr;
  slots[i].kind = kind;
  return (uint32_t)(i + 1) | ((slots[i].gen & GEN_MASK) << IDX_BITS);
}

static void *handle_get(uint32_t h, int kind) {
  uint32_t idx = (h & ((1u << IDX_BITS) - 1)) - 1, gen = (h >> IDX_BITS) & GEN_MASK;
  if (h == 0 || idx >= (uint32_t)nslots || slots[idx].kind == K_FREE ||
      (slots[idx].gen & GEN_MASK) != gen) {
    tp_fail(TP_ERR_DISPOSED, "%s handle 0x%x was disposed or never existed", kind_names[kind], h);
    return NULL;
  }
  if (slots[idx].kind != kind) {
    tp_fail(TP_ERR_INVALID_ARG, "handle 0x%x is a %s, expected a %s", h,
            kind_names[slots[idx].kind], kind_names[kind]);
    return NULL;
  }
  return slots[idx].ptr;
}

static void handle_drop(uint32_t h) {
  int i = (int)(h & ((1u << IDX_BITS) - 1)) - 1;
  slots[i].kind = K_FREE;
  slots[i].ptr = NULL;
  slots[i].gen++;
  slots[i].next_free = free_head;
  free_head = i;
}

/* tp points at the out-parameter of the call that produced s: it is read
 * here, after the call, whatever order the arguments were evaluated in. */
static uint32_t wrap_tensor(tp_status s, tp_tensor **tp) {
  if (s != TP_OK) return 0;
  tp_tensor *t = *tp;
  uint32_t h = handle_new(K_TENSOR, t);
  if (!h) tp_tensor_release(t);
  return h;
}

/* ---- memory, errors, info ---- */
void *tpw_malloc(int32_t bytes) {
  if (bytes < 0) {
    tp_fail(TP_ERR_INVALID_ARG, "malloc: negative size %d", bytes);
    return NULL;
  }
  void *p = malloc(bytes ? (size_t)bytes : 1);
  if (!p) tp_fail(TP_ERR_OUT_OF_MEMORY, "out of memory: failed to allocate %d bytes", bytes);
  return p;
}
void tpw_free(void *p) { free(p); }
const char *tpw_last_error(void) { return tp_last_error(); }
int32_t tpw_last_status(void) { return (int32_t)tp_last_status(); }
void tpw_set_host_error(const char *msg) { tp_fail(TP_ERR_HOST, "%s", msg ? msg : "host error"); }
const char *tpw_version(void) { return TP_VERSION_STRING; }
const char *tpw_isa(void) { return tp_isa_name(); }
int32_t tpw_op_count(void) { return TP_OP_COUNT; }
const char *tpw_op_name(int32_t op) { return tp_op_name((tp_op)op); }
int32_t tpw_op_arity(int32_t op) { return tp_op_arity((tp_op)op); }
int32_t tpw_live_tensors(void) { return (int32_t)tp_live_tensors(); }

/* ---- tensors ---- */
static tp_status shape64(int32_t ndim, const int32_t *shape, int64_t *out) {
  if (ndim < 0 || ndim > TP_MAX_DIMS)
    return tp_fail(TP_ERR_INVALID_ARG, "tensor: %d dims is out of range (0..%d)", ndim, TP_MAX_DIMS);
  if (ndim && !shape) return tp_fail(TP_ERR_INVALID_ARG, "tensor: NULL shape");
  for (int i = 0; i < ndim; i++) out[i] = shape[i];
  return TP_OK;
}

uint32_t tpw_tensor_new(int32_t dtype, int32_t ndim, const int32_t *shape, const void *data) {
  int64_t s[TP_MAX_DIMS];
  tp_tensor *t = NULL;
  if (shape64(ndim, shape, s)) return 0;
  return wrap_tensor(tp_tensor_new((tp_dtype)dtype, ndim, s, data, &t), &t);
}

uint32_t tpw_full(int32_t dtype, int32_t ndim, const int32_t *shape, double value) {
  int64_t s[TP_MAX_DIMS];
  tp_tensor *t = NULL;
  if (shape64(ndim, shape, s)) return 0;
  if ((unsigned)dtype >= TP_DTYPE_COUNT) {
    tp_fail(TP_ERR_INVALID_ARG, "full: unknown dtype %d", dtype);
    return 0;
  }
  return wrap_tensor(tp_full((tp_dtype)dtype, ndim, s, value, &t), &t);
}

uint32_t tpw_scalar(double value, int32_t is_int) {
  tp_tensor *t = NULL;
  return wrap_tensor(tp_scalar(value, is_int, &t), &t);
}

uint32_t tpw_arange(double start, double end, double step, int32_t dtype) {
  tp_tensor *t = NULL;
  if ((unsigned)dtype >= TP_DTYPE_COUNT) {
    tp_fail(TP_ERR_INVALID_ARG, "arange: unknown dtype %d", dtype);
    return 0;
  }
  return wrap_tensor(tp_arange(start, end, step, (tp_dtype)dtype, &t), &t);
}

uint32_t tpw_random(int32_t kind, int32_t ndim, const int32_t *shape, uint32_t lo, uint32_t hi) {
  int64_t s[TP_MAX_DIMS];
  tp_tensor *t = NULL;
  if (shape64(ndim, shape, s)) return 0;
  uint64_t seed = (uint64_t)lo | ((uint64_t)hi << 32);
  return wrap_tensor(kind ? tp_rand(ndim, s, seed, &t) : tp_randn(ndim, s, seed, &t), &t);
}

int32_t tpw_tensor_free(uint32_t h) {
  tp_tensor *t = handle_get(h, K_TENSOR);
  if (!t) return tp_last_status();
  handle_drop(h);
  tp_tensor_release(t);
  return TP_OK;
}

int32_t tpw_tensor_ndim(uint32_t h) {
  tp_tensor *t = handle_get(h, K_TENSOR);
  return t ? t->ndim : -1;
}
int32_t tpw_tensor_dtype(uint32_t h) {
  tp_tensor *t = handle_get(h, K_TENSOR);
  return t ? (int32_t)t->dtype : -1;
}
int32_t tpw_tensor_shape(uint32_t h, int32_t *out) {
  tp_tensor *t = handle_get(h, K_TENSOR);
  if (!t) return tp_last_status();
  for (int i = 0; i < t->ndim; i++) out[i] = (int32_t)t->shape[i];
  return TP_OK;
}
double tpw_tensor_numel(uint32_t h) {
  tp_tensor *t = handle_get(h, K_TENSOR);
  return t ? (double)tp_tensor_numel(t) : -1;
}
int32_t tpw_tensor_read(uint32_t h, void *dst, int32_t bytes) {
  tp_tensor *t = handle_get(h, K_TENSOR);
  if (!t) return tp_last_status();
  if (bytes < 0) return tp_fail(TP_ERR_INVALID_ARG, "read: negative size");
  return tp_tensor_read(t, dst, (size_t)bytes);
}
int32_t tpw_tensor_item(uint32_t h, double *out) {
  tp_tensor *t = handle_get(h, K_TENSOR);
  if (!t) return tp_last_status();
  return tp_tensor_item(t, out);
}
uint32_t tpw_tensor_dup(uint32_t h) {
  tp_tensor *t = handle_get(h, K_TENSOR);
  if (!t) return 0;
  tp_tensor_retain(t);
  return wrap_tensor(TP_OK, &t);
}

/* ---- ops ---- */
uint32_t tpw_op(int32_t op, int32_t nin, const uint32_t *in, const double *a) {
  if ((unsigned)op >= TP_OP_COUNT) {
    tp_fail(TP_ERR_INVALID_ARG, "unknown operator id %d", op);
    return 0;
  }
  if (nin < 0 || nin > 64) {
    tp_fail(TP_ERR_INVALID_ARG, "%s: %d operands is out of range", tp_op_name((tp_op)op), nin);
    return 0;
  }
  tp_tensor *ts[64];
  for (int i = 0; i < nin; i++) {
    ts[i] = NULL;
    if (in[i] == 0) continue; /* absent optional operand */
    if (!(ts[i] = handle_get(in[i], K_TENSOR))) {
      tp_fail_context(tp_last_status(), "%s: operand %d", tp_op_name((tp_op)op), i);
      return 0;
    }
  }
  tp_attrs at;
  tp_attrs_init(&at);
  if (a) {
    int n = (int)a[0];
    if (n < 0 || n > TP_MAX_DIMS) {
      tp_fail(TP_ERR_INVALID_ARG, "%s: %d attribute dims is out of range (0..%d)",
              tp_op_name((tp_op)op), n, TP_MAX_DIMS);
      return 0;
    }
    at.nints = n;
    for (int i = 0; i < n; i++) at.ints[i] = (int64_t)a[1 + i];
    at.dim = (int64_t)a[9];
    at.dim1 = (int64_t)a[10];
    at.start = a[11] < -9.2e18 ? INT64_MIN : (int64_t)a[11];
    at.end = a[12] > 9.2e18 ? INT64_MAX : a[12] < -9.2e18 ? INT64_MIN : (int64_t)a[12];
    at.step = (int64_t)a[13];
    at.eps = a[14];
    at.keepdim = a[15] != 0;
    at.approximate = (int)a[16];
    at.dtype = (tp_dtype)(int)a[17];
  }
  tp_tensor *y = NULL;
  return wrap_tensor(tp_op_call((tp_op)op, nin, ts, &at, &y), &y);
}

/* ---- compile and the host bridge ---- */
static tp_status host_dispatch(int64_t fn_id, int nin, tp_tensor *const *in, int max_out,
                               tp_tensor **outs, int *nout) {
  int32_t id = (int32_t)fn_id;
  uint32_t hin[64] = {0}, hout[64] = {0};
  tp_status s = TP_OK;
  int made = 0;
  if (max_out > 64) max_out = 64;
  for (; made < nin; made++) {
    tp_tensor_retain(in[made]);
    if (!(hin[made] = wrap_tensor(TP_OK, (tp_tensor **)&in[made]))) {
      s = tp_last_status();
      break;
    }
  }
  int32_t n = s ? -1 : HOST_CALL(id, hin, nin, hout, max_out);
  for (int i = 0; i < made; i++) tpw_tensor_free(hin[i]);
  if (s) return s;
  if (n < 0) {
    if (tp_last_status() != TP_ERR_HOST && tp_last_status() != TP_ERR_CAPTURE)
      return tp_fail(TP_ERR_HOST, "host function %d failed", id);
    return tp_last_status();
  }
  if (n > max_out) return tp_fail(TP_ERR_HOST, "host function returned %d outputs (max %d)", n, max_out);
  *nout = 0;
  for (int i = 0; i < n; i++) {
    tp_tensor *t = handle_get(hout[i], K_TENSOR);
    if (!t) { /* release what was taken so far and the rest of the handles */
      s = tp_fail_context(TP_ERR_HOST, "host function output %d", i);
      for (int k = 0; k < *nout; k++) tp_tensor_release(outs[k]);
      for (int k = i + 1; k < n; k++)
        if (handle_get(hout[k], K_TENSOR)) tpw_tensor_free(hout[k]);
      *nout = 0;
      return s;
    }
    tp_tensor_retain(t);
    tpw_tensor_free(hout[i]); /* ownership moves to C */
    outs[(*nout)++] = t;
  }
  return TP_OK;
}

static tp_status host_fn(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                         int *nout) {
  return host_dispatch((int64_t)(intptr_t)ud, nin, in, max_out, outs, nout);
}

/* call_host nodes and opaque regions reach JS through the same import */
__attribute__((constructor)) static void install_dispatch(void) { tp_set_host_dispatch(host_dispatch); }

uint32_t tpw_compile(int32_t fn_id, const int32_t *opts, const char *backend, const char *name) {
  tp_compile_options o;
  tp_compile_options_init(&o);
  if (opts) {
    o.fullgraph = opts[0] != 0;
    o.dynamic = opts[1];
    o.disable = opts[2] != 0;
  }
  o.backend = backend;
  o.name = name;
  tp_callable fn = {host_fn, (void *)(intptr_t)fn_id};
  tp_compiled *c = NULL;
  if (tp_compile(&fn, &o, &c)) return 0;
  uint32_t h = handle_new(K_COMPILED, c);
  if (!h) tp_compiled_free(c);
  return h;
}

static int32_t run_common(tp_status s, int n, tp_tensor **outs, uint32_t *hout, int32_t max_out) {
  if (s) return -1;
  for (int i = 0; i < n; i++) {
    hout[i] = i < max_out ? handle_new(K_TENSOR, outs[i]) : 0;
    if (!hout[i]) { /* out of handles: release everything made so far */
      for (int k = 0; k < i; k++) handle_drop(hout[k]);
      for (int k = 0; k < n; k++) tp_tensor_release(outs[k]);
      return -1;
    }
  }
  return n;
}

static tp_status gather_inputs(int32_t nin, const uint32_t *in, tp_tensor **ts) {
  if (nin < 0 || nin > 64) return tp_fail(TP_ERR_INVALID_ARG, "%d inputs is out of range (0..64)", nin);
  for (int i = 0; i < nin; i++)
    if (!(ts[i] = handle_get(in[i], K_TENSOR))) return tp_fail_context(tp_last_status(), "input %d", i);
  return TP_OK;
}

int32_t tpw_compiled_call(uint32_t h, int32_t nin, const uint32_t *in, uint32_t *outs, int32_t max_out) {
  tp_compiled *c = handle_get(h, K_COMPILED);
  tp_tensor *ts[64], *os[64];
  int n = 0;
  if (!c || gather_inputs(nin, in, ts)) return -1;
  tp_status s = tp_compiled_call(c, nin, ts, max_out < 64 ? max_out : 64, os, &n);
  return run_common(s, n, os, outs, max_out);
}

int32_t tpw_compiled_free(uint32_t h) {
  tp_compiled *c = handle_get(h, K_COMPILED);
  if (!c) return tp_last_status();
  handle_drop(h);
  tp_compiled_free(c);
  return TP_OK;
}
int32_t tpw_compiled_num_captures(uint32_t h) {
  tp_compiled *c = handle_get(h, K_COMPILED);
  return c ? tp_compiled_num_captures(c) : -1;
}
int32_t tpw_compiled_num_entries(uint32_t h) {
  tp_compiled *c = handle_get(h, K_COMPILED);
  return c ? tp_compiled_num_entries(c) : -1;
}
int32_t tpw_compiled_set_input_names(uint32_t h, const char *names) {
  tp_compiled *c = handle_get(h, K_COMPILED);
  if (!c) return tp_last_status();
  return tp_compiled_set_input_names(c, names);
}

static char *print_copy(const tp_graph *g, int32_t with_data) {
  char *text = NULL;
  if (!g) {
    tp_fail(TP_ERR_INVALID_ARG, "no graph has been captured");
    return NULL;
  }
  if (tp_graph_print(g, with_data, &text)) return NULL;
  size_t n = strlen(text) + 1;
  char *out = malloc(n); /* freed by tpw_free */
  if (out) memcpy(out, text, n);
  else tp_fail(TP_ERR_OUT_OF_MEMORY, "out of memory copying graph text");
  tp_free_buffer(text);
  return out;
}

char *tpw_compiled_graph_text(uint32_t h, int32_t with_data) {
  tp_compiled *c = handle_get(h, K_COMPILED);
  return c ? print_copy(tp_compiled_last_graph(c), with_data) : NULL;
}
int32_t tpw_is_compiling(void) { return tp_is_compiling(); }

/* ---- graphs ---- */
uint32_t tpw_graph_parse(const char *text, int32_t len) {
  tp_graph *g = NULL;
  if (len < 0 || (len && !text)) {
    tp_fail(TP_ERR_INVALID_ARG, "graph parse: bad text buffer");
    return 0;
  }
  if (tp_graph_parse(text, (size_t)len, &g)) return 0;
  uint32_t h = handle_new(K_GRAPH, g);
  if (!h) tp_graph_free(g);
  return h;
}
int32_t tpw_graph_run(uint32_t h, int32_t nin, const uint32_t *in, uint32_t *outs, int32_t max_out) {
  tp_graph *g = handle_get(h, K_GRAPH);
  tp_tensor *ts[64], *os[64];
  int n = 0;
  if (!g || gather_inputs(nin, in, ts)) return -1;
  tp_status s = tp_graph_run(g, nin, ts, max_out < 64 ? max_out : 64, os, &n);
  return run_common(s, n, os, outs, max_out);
}
char *tpw_graph_print(uint32_t h, int32_t with_data) {
  tp_graph *g = handle_get(h, K_GRAPH);
  return g ? print_copy(g, with_data) : NULL;
}
int32_t tpw_graph_free(uint32_t h) {
  tp_graph *g = handle_get(h, K_GRAPH);
  if (!g) return tp_last_status();
  handle_drop(h);
  tp_graph_free(g);
  return TP_OK;
}

/* ---- npy ---- */
uint32_t tpw_npy_decode(const void *bytes, int32_t len) {
  tp_tensor *t = NULL;
  if (len < 0 || (len && !bytes)) {
    tp_fail(TP_ERR_INVALID_ARG, "npy: bad byte buffer");
    return 0;
  }
  return wrap_tensor(tp_npy_decode(bytes, (size_t)len, &t), &t);
}

/* A malloc'ed copy of n bytes for the host: out[0] the copy (tpw_free),
 * out[1] its length. */
static int32_t give_bytes(const void *bytes, size_t n, intptr_t *out) {
  char *copy = malloc(n ? n : 1);
  if (!copy) return tp_fail(TP_ERR_OUT_OF_MEMORY, "out of memory copying %zu bytes for the host", n);
  if (n) memcpy(copy, bytes, n);
  out[0] = (intptr_t)copy;
  out[1] = (intptr_t)n;
  return TP_OK;
}
int32_t tpw_npy_encode(uint32_t h, intptr_t *out) {
  tp_tensor *t = handle_get(h, K_TENSOR);
  if (!t) return tp_last_status();
  void *buf = NULL;
  size_t n = 0;
  TP_TRY(tp_npy_encode(t, &buf, &n));
  tp_status s = give_bytes(buf, n, out);
  tp_free_buffer(buf);
  return s;
}

/* ==== the frontend ==================================================== */
#include "../src/compiler/compiler.h"
#include "../src/capture/records.h"

static tp_value from_w(const tpw_value *w) {
  tp_value v;
  memset(&v, 0, sizeof v);
  if (!w) return v;
  v.kind = (unsigned)w->kind < TP_VAL_KIND_COUNT ? (tp_value_kind)w->kind : TP_VAL_OTHER;
  if (v.kind == TP_VAL_BOOL || v.kind == TP_VAL_INT) v.i = (int64_t)w->num;
  if (v.kind == TP_VAL_FLOAT) v.f = w->num;
  if (v.kind == TP_VAL_STR) {
    snprintf(v.s, sizeof v.s, "%s", w->str ? w->str : "");
    snprintf(v.type, sizeof v.type, "str");
  }
  if (v.kind == TP_VAL_OTHER) snprintf(v.type, sizeof v.type, "%s", w->type ? w->type : "object");
  return v;
}

static char value_text[64];
static void to_w(tp_value v, tpw_value *w) {
  memset(w, 0, sizeof *w);
  w->kind = v.kind;
  if (v.kind == TP_VAL_BOOL || v.kind == TP_VAL_INT) w->num = (double)v.i;
  if (v.kind == TP_VAL_FLOAT) w->num = v.f;
  if (v.kind == TP_VAL_STR) {
    snprintf(value_text, sizeof value_text, "%s", v.s);
    w->str = value_text;
  }
}

int32_t tpw_config_set(const char *key, const tpw_value *v) {
  tp_config_key k;
  TP_TRY(tp_config_lookup(key, &k));
  return tp_config_set(k, from_w(v));
}
int32_t tpw_config_get(const char *key, tpw_value *out) {
  tp_config_key k;
  TP_TRY(tp_config_lookup(key, &k));
  to_w(tp_config_get(k), out);
  return TP_OK;
}
void tpw_config_reset(void) { tp_config_reset(); }

enum { O_FULLGRAPH, O_DYNAMIC, O_BACKEND, O_MODE, O_OPTIONS, O_NAME, O_DISABLE, O_LIMIT,
       O_ISOLATE, O_STRICT, O_DYNSHAPES, O_INPUT_NAMES };

static int truthy(const tpw_value *w) {
  return w->kind == TP_VAL_OTHER || w->kind == TP_VAL_STR ? 1 : w->num != 0;
}

static char backend_name[64];
static tp_status host_backend_compile(void *ud, const tp_graph *g, int nin,
                                      tp_tensor *const *examples, const tp_backend_opts *o,
                                      tp_backend_run *out);

/* The seed's checks before the decorator form, in its order, then the
 * conversion to typed options. Strings point into the caller's memory. */
static tp_status options_from_values(const tpw_value *v, int32_t nopt, const char *const *keys,
                                     const tpw_value *optvals, tp_compile_options *o) {
  char t[48];
  tp_compile_options_init(o);
  tp_value ds = from_w(&v[O_DYNSHAPES]);
  if (ds.kind != TP_VAL_NONE) {
    if (v[O_DYNAMIC].kind != TP_VAL_NONE)
      return tp_fail(TP_ERR_RUNTIME, "dynamic and dynamic_shapes cannot both be specified");
    if (ds.kind != TP_VAL_BOOL)
      return tp_fail(TP_ERR_TYPE, "TensorPlay dynamic_shapes currently accepts only a bool; "
                                  "use a bool dynamic policy for this frontend");
    o->dynamic_shapes = (int)ds.i;
  }
  if (v[O_MODE].kind != TP_VAL_NONE && v[O_OPTIONS].kind != TP_VAL_NONE)
    return tp_fail(TP_ERR_RUNTIME, "Either mode or options can be specified, but not both");
  tp_value opt = from_w(&v[O_OPTIONS]);
  if (opt.kind != TP_VAL_NONE && !(opt.kind == TP_VAL_OTHER && !strcmp(opt.type, "dict")))
    return tp_fail(TP_ERR_TYPE, "options must be a dict, got %s", tp_value_type_repr(&opt, t, sizeof t));
  tp_value lim = from_w(&v[O_LIMIT]);
  if (lim.kind != TP_VAL_NONE && lim.kind != TP_VAL_INT)
    return tp_compile_check_config(0, 0) ? tp_last_status()
                                          : tp_fail(TP_ERR_TYPE, "recompile_limit must be an integer");
  TP_TRY(tp_compile_check_config(lim.kind == TP_VAL_INT, lim.kind == TP_VAL_INT ? (int)lim.i : 0));
  o->recompile_limit = lim.kind == TP_VAL_INT ? (int)lim.i : 0;
  if (nopt < 0 || nopt > 16) return tp_fail(TP_ERR_VALUE, "options: %d keys is out of range (0..16)", nopt);
  if (opt.kind != TP_VAL_NONE) {
    char k48[16][48];
    tp_value vals[16];
    for (int i = 0; i < nopt; i++) {
      snprintf(k48[i], sizeof k48[i], "%s", keys[i] ? keys[i] : "");
      vals[i] = from_w(&optvals[i]);
      o->option_keys[i] = keys[i];
      o->option_values[i] = vals[i].kind == TP_VAL_BOOL && vals[i].i;
    }
    o->has_options = 1;
    o->noptions = nopt;
    TP_TRY(tp_check_mode_options(nopt, (const char(*)[48])k48, vals));
  }
  o->fullgraph = truthy(&v[O_FULLGRAPH]);
  if (v[O_DYNAMIC].kind != TP_VAL_NONE) o->dynamic = truthy(&v[O_DYNAMIC]);
  o->mode = v[O_MODE].kind == TP_VAL_STR ? v[O_MODE].str : NULL;
  if (v[O_MODE].kind != TP_VAL_NONE && v[O_MODE].kind != TP_VAL_STR)
    return tp_fail(TP_ERR_TYPE, "mode must be a str or None");
  o->name = v[O_NAME].kind == TP_VAL_STR ? v[O_NAME].str : NULL;
  o->disable = truthy(&v[O_DISABLE]);
  o->isolate_recompiles = truthy(&v[O_ISOLATE]);
  o->strict_native = truthy(&v[O_STRICT]);
  o->input_names = v[O_INPUT_NAMES].kind == TP_VAL_STR ? v[O_INPUT_NAMES].str : NULL;
  const tpw_value *b = &v[O_BACKEND];
  if (b->kind == TP_VAL_STR) {
    o->backend = b->str;
  } else if (b->kind == TP_VAL_OTHER && b->id > 0) { /* a host function as backend */
    snprintf(backend_name, sizeof backend_name, "__host_backend_%d", b->id);
    const tp_backend *found;
    tp_backends_init();
    if (tp_lookup_backend(backend_name, &found) != TP_OK) {
      const char *tags[1] = {"anonymous"};
      TP_TRY(tp_register_backend(backend_name, host_backend_compile, (void *)(intptr_t)b->id, tags, 1, NULL));
    }
    o->backend = backend_name;
  } else if (b->kind != TP_VAL_NONE) {
    tp_value bv = from_w(b);
    return tp_fail(TP_ERR_INVALID_BACKEND, "Invalid backend: expected a name or a callable, got %s",
                   tp_value_type_repr(&bv, t, sizeof t));
  }
  return TP_OK;
}

int32_t tpw_compile_check(const tpw_value *vals, int32_t nopt, const char *const *keys,
                          const tpw_value *optvals) {
  tp_compile_options o;
  return options_from_values(vals, nopt, keys, optvals, &o);
}

uint32_t tpw_compile_v(int32_t fn_id, const tpw_value *vals, int32_t nopt, const char *const *keys,
                       const tpw_value *optvals) {
  tp_compile_options o;
  if (options_from_values(vals, nopt, keys, optvals, &o)) return 0;
  tp_callable fn = {host_fn, (void *)(intptr_t)fn_id};
  tp_compiled *c = NULL;
  if (tp_compile(&fn, &o, &c)) return 0;
  uint32_t h = handle_new(K_COMPILED, c);
  if (!h) tp_compiled_free(c);
  return h;
}

int32_t tpw_compiled_call_keyed(uint32_t h, int32_t nin, const uint32_t *in, const char *extra,
                                uint32_t *outs, int32_t max_out) {
  tp_compiled *c = handle_get(h, K_COMPILED);
  tp_tensor *ts[64], *os[64];
  int n = 0;
  if (!c || gather_inputs(nin, in, ts)) return -1;
  tp_status s = tp_compiled_call_keyed(c, nin, ts, extra, max_out < 64 ? max_out : 64, os, &n);
  return run_common(s, n, os, outs, max_out);
}

static char *dup_malloc(char *s) { /* library string -> malloc'ed copy for tpw_free */
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *out = malloc(n);
  if (out) memcpy(out, s, n);
  else tp_fail(TP_ERR_OUT_OF_MEMORY, "out of memory copying a string");
  tp_free_buffer(s);
  return out;
}

char *tpw_compiled_reasons(uint32_t h) {
  tp_compiled *c = handle_get(h, K_COMPILED);
  char *s = NULL;
  if (!c || tp_compiled_recompile_reasons(c, &s)) return NULL;
  return dup_malloc(s);
}
char *tpw_compiled_explain(uint32_t h) {
  tp_compiled *c = handle_get(h, K_COMPILED);
  char *s = NULL;
  if (!c || tp_compiled_explain(c, &s)) return NULL;
  return dup_malloc(s);
}
int32_t tpw_compiled_last_module(uint32_t h, intptr_t *out) {
  tp_compiled *c = handle_get(h, K_COMPILED);
  if (!c) return tp_last_status();
  size_t n = 0;
  const void *m = tp_compiled_last_module(c, &n);
  out[0] = out[1] = 0;
  return m ? give_bytes(m, n, out) : TP_OK;
}
void tpw_reset(void) { tp_reset(); }
void tpw_note_shape_read(uint32_t h, const char *where) {
  uint32_t idx = (h & ((1u << IDX_BITS) - 1)) - 1;
  if (h && idx < (uint32_t)nslots && slots[idx].kind == K_TENSOR)
    tp_capture_note_shape_read(slots[idx].ptr, where);
}

/* ---- backends from the host ---- */
typedef struct host_runner { int32_t id; } host_runner;
static tp_status host_runner_run(void *ud, int nin, tp_tensor *const *in, int max_out,
                                 tp_tensor **outs, int *nout) {
  return host_dispatch(((host_runner *)ud)->id, nin, in, max_out, outs, nout);
}
static void host_runner_free(void *ud) {
  HOST_RELEASE(((host_runner *)ud)->id);
  tp_free(ud);
}

static tp_status host_backend_compile(void *ud, const tp_graph *g, int nin,
                                      tp_tensor *const *examples, const tp_backend_opts *o,
                                      tp_backend_run *out) {
  int32_t fn_id = (int32_t)(intptr_t)ud;
  char *text = NULL, json[1024];
  tp_graph *copy = NULL;
  TP_TRY(tp_graph_print(g, 1, &text)); /* the host owns a copy of the graph */
  tp_status s = tp_graph_parse(text, strlen(text), &copy);
  tp_free_buffer(text);
  if (s) return s;
  uint32_t gh = handle_new(K_GRAPH, copy);
  if (!gh) {
    tp_graph_free(copy);
    return tp_last_status();
  }
  size_t k = (size_t)snprintf(json, sizeof json, "{");
  if (o->has_mode) k += (size_t)snprintf(json + k, sizeof json - k, "\"mode\": \"%s\", ", o->mode);
  if (o->has_name) k += (size_t)snprintf(json + k, sizeof json - k, "\"name\": \"%s\", ", o->name);
  if (o->has_dynamic) k += (size_t)snprintf(json + k, sizeof json - k, "\"dynamic\": %s, ", o->dynamic ? "true" : "false");
  if (o->has_strict_native) k += (size_t)snprintf(json + k, sizeof json - k, "\"strictNative\": true, ");
  if (o->has_options && k < sizeof json) {
    k += (size_t)snprintf(json + k, sizeof json - k, "\"options\": {");
    for (int i = 0; i < o->noptions && k < sizeof json; i++)
      k += (size_t)snprintf(json + k, sizeof json - k, "%s\"%s\": %s", i ? ", " : "", o->option_keys[i],
                            o->option_values[i].i ? "true" : "false");
    if (k < sizeof json) k += (size_t)snprintf(json + k, sizeof json - k, "}, ");
  }
  if (k >= 2 && k < sizeof json && json[k - 2] == ',') k -= 2;
  if (k < sizeof json - 1) snprintf(json + k, sizeof json - k, "}");
  uint32_t hin[64] = {0};
  int made = 0;
  for (; made < nin && made < 64; made++) {
    tp_tensor *t = examples[made];
    tp_tensor_retain(t);
    if (!(hin[made] = wrap_tensor(TP_OK, &t))) break;
  }
  int32_t rid = -1;
  if (made == nin) {
    tp_clear_error();
    rid = HOST_BACKEND(fn_id, gh, hin, nin, json);
  }
  for (int i = 0; i < made; i++) tpw_tensor_free(hin[i]);
  if (rid < 0) {
    if (tp_last_status() == TP_OK) tp_fail(TP_ERR_HOST, "backend host function %d failed", fn_id);
    return tp_last_status();
  }
  host_runner *r = tp_alloc(sizeof *r);
  if (!r) {
    HOST_RELEASE(rid);
    return TP_ERR_OUT_OF_MEMORY;
  }
  r->id = rid;
  out->run = host_runner_run;
  out->ud = r;
  out->free = host_runner_free;
  return TP_OK;
}

static int split_csv(const char *csv, char (*out)[32], int max) {
  int n = 0;
  while (csv && *csv && n < max) {
    const char *e = strchr(csv, ',');
    size_t len = e ? (size_t)(e - csv) : strlen(csv);
    if (len > 31) len = 31;
    memcpy(out[n], csv, len);
    out[n][len] = 0;
    if (len) n++;
    csv = e ? e + 1 : csv + strlen(csv);
  }
  return n;
}

int32_t tpw_register_backend(int32_t fn_id, const char *name, const char *tags_csv, int32_t has_caps,
                             const char *deps_csv, int32_t contract_version, const char *min_core,
                             const char *max_core) {
  char tags[4][32];
  const char *tp[4];
  int nt = split_csv(tags_csv, tags, 4);
  for (int i = 0; i < nt; i++) tp[i] = tags[i];
  tp_backend_caps caps;
  tp_backend_caps_init(&caps);
  if (has_caps) {
    char deps[8][32];
    caps.n_optional_deps = split_csv(deps_csv, deps, 8);
    for (int i = 0; i < caps.n_optional_deps; i++) snprintf(caps.optional_deps[i], 32, "%s", deps[i]);
    caps.contract_version = contract_version;
    snprintf(caps.min_core_version, sizeof caps.min_core_version, "%s", min_core ? min_core : "");
    snprintf(caps.max_core_version, sizeof caps.max_core_version, "%s", max_core ? max_core : "");
  }
  tp_backends_init();
  return tp_register_backend(name, host_backend_compile, (void *)(intptr_t)fn_id, tp, nt,
                             has_caps ? &caps : NULL);
}
void tpw_unregister_backend(const char *name) { tp_unregister_backend(name); }
char *tpw_list_backends(const char *exclude_csv, int32_t include_unavailable) {
  char ex[8][32];
  const char *ep[8];
  int n = exclude_csv ? split_csv(exclude_csv, ex, 8) : 0;
  for (int i = 0; i < n; i++) ep[i] = ex[i];
  char *s = NULL;
  tp_backends_init();
  if (tp_list_backends(exclude_csv ? ep : NULL, n, include_unavailable, &s)) return NULL;
  return dup_malloc(s);
}
int32_t tpw_lookup_backend(const char *name) {
  const tp_backend *b;
  tp_backends_init();
  return tp_lookup_backend(name, &b);
}
int32_t tpw_set_default_backend(const char *name) {
  tp_backends_init();
  return tp_set_default_backend(name);
}
const char *tpw_get_default_backend(void) { return tp_get_default_backend(); }
char *tpw_backend_capabilities(const char *name) {
  tp_backend_caps c;
  tp_backends_init();
  tp_get_backend_capabilities(name, &c);
  char json[600];
  size_t k = (size_t)snprintf(json, sizeof json, "{\"optionalDeps\": [");
  for (int i = 0; i < c.n_optional_deps && k < sizeof json; i++)
    k += (size_t)snprintf(json + k, sizeof json - k, "%s\"%s\"", i ? ", " : "", c.optional_deps[i]);
  if (k < sizeof json)
    snprintf(json + k, sizeof json - k,
             "], \"contractVersion\": %d, \"minCoreVersion\": %s%s%s, \"maxCoreVersion\": %s%s%s}",
             c.contract_version, c.min_core_version[0] ? "\"" : "null", c.min_core_version,
             c.min_core_version[0] ? "\"" : "", c.max_core_version[0] ? "\"" : "null",
             c.max_core_version, c.max_core_version[0] ? "\"" : "");
  char *out = malloc(strlen(json) + 1);
  if (out) strcpy(out, json);
  return out;
}
int32_t tpw_declares_capabilities(const char *name) {
  tp_backends_init();
  return tp_declares_capabilities(name);
}
char *tpw_list_mode_options(const char *mode) {
  char *s = NULL;
  if (tp_list_mode_options(mode, &s)) return NULL;
  return dup_malloc(s);
}
int32_t tpw_core_backend_contract_version(void) { return TP_CORE_BACKEND_CONTRACT_VERSION; }

/* ---- records ---- */
int32_t tpw_rec_register(int32_t key, const char *repr, int32_t mode, const int32_t *params,
                         const char *reason) {
  tp_rec_params p;
  tp_rec_params_init(&p);
  if (params) {
    p.replacement = (uint64_t)params[0];
    p.can_constant_fold_through = params[1];
    p.skip_signature_check = params[2];
    p.recursive = params[3];
    p.has_options = params[4];
    p.fw_compiler = (uint64_t)params[5];
    p.bw_compiler = (uint64_t)params[6];
    p.max_reuse_entries = params[7];
    p.reuse_hash_fn = (uint64_t)params[8];
  }
  p.reason = reason;
  tp_record *r = NULL;
  if (tp_rec_register((uint64_t)key, repr, (tp_rec_mode)mode, &p, &r)) return 0;
  return (int32_t)r->id;
}
int32_t tpw_rec_lookup(int32_t key) {
  tp_record *r = tp_rec_lookup((uint64_t)key);
  return r ? (int32_t)r->id : 0;
}
int32_t tpw_rec_mode(int32_t rec) {
  tp_record *r = tp_rec_by_id((uint32_t)rec);
  return r ? (int32_t)r->mode : -1;
}
static tp_record *rec_get(int32_t rec) {
  tp_record *r = tp_rec_by_id((uint32_t)rec);
  if (!r) tp_fail(TP_ERR_INVALID_ARG, "record %d does not exist", rec);
  return r;
}
int32_t tpw_rec_set_adapter(int32_t rec, int32_t key) {
  tp_record *r = rec_get(rec);
  return r ? tp_rec_set_adapter(r, (uint64_t)key) : tp_last_status();
}
int32_t tpw_rec_add_alias(int32_t rec, int32_t key) {
  tp_record *r = rec_get(rec);
  return r ? tp_rec_add_alias(r, (uint64_t)key) : tp_last_status();
}

static char rec_key[200];
void tpw_rec_set_key(const char *key) { snprintf(rec_key, sizeof rec_key, "%s", key ? key : ""); }

int32_t tpw_rec_invoke(int32_t rec, int32_t call_id, int32_t nin, const uint32_t *in,
                       uint32_t *outs, int32_t max_out) {
  tp_record *r = rec_get(rec);
  tp_tensor *ts[64], *os[64];
  int n = 0;
  if (!r || gather_inputs(nin, in, ts)) return -1;
  if (!tp_capture_sees(nin, ts)) return TPW_REC_CALL_ORIGINAL;
  tp_status s;
  switch (r->mode) {
    case TP_REC_SUBSTITUTE: return TPW_REC_CALL_REPLACEMENT;
    case TP_REC_CONSTANT: return r->constant_ready ? TPW_REC_CONSTANT_READY : TPW_REC_NEED_CONSTANT;
    case TP_REC_NESTED:
      s = tp_capture_nested(r->id, r->p.max_reuse_entries, call_id, rec_key, nin, ts,
                            max_out < 64 ? max_out : 64, os, &n);
      break;
    case TP_REC_DISABLED:
      s = tp_capture_opaque(call_id, nin, ts, "disabled", r->p.recursive, r->p.recursive, r->reason,
                            max_out < 64 ? max_out : 64, os, &n);
      break;
    default:
      s = tp_capture_opaque(call_id, nin, ts, tp_rec_mode_name(r->mode), 0, 1, NULL,
                            max_out < 64 ? max_out : 64, os, &n);
      break;
  }
  rec_key[0] = 0; /* a key serves one call */
  return run_common(s, n, os, outs, max_out);
}

int32_t tpw_rec_set_constant(int32_t rec, int32_t n, const uint32_t *vals) {
  tp_record *r = rec_get(rec);
  tp_tensor *ts[64];
  if (!r) return tp_last_status();
  TP_TRY(gather_inputs(n, vals, ts));
  return tp_rec_set_constant(r, n, ts, NULL);
}

int32_t tpw_rec_get_constant(int32_t rec, uint32_t *outs, int32_t max_out) {
  tp_record *r = rec_get(rec);
  tp_tensor *os[64];
  if (!r) return -1;
  if (!r->constant_ready) {
    tp_fail(TP_ERR_RUNTIME, "the constant of %s is not ready", r->repr);
    return -1;
  }
  for (int i = 0; i < r->nconst; i++) {
    os[i] = r->constant[i];
    tp_tensor_retain(os[i]);
  }
  return run_common(TP_OK, r->nconst, os, outs, max_out);
}

int32_t tpw_set_capture_disabled(int32_t disabled) {
  int prev = 0;
  tp_capture_set_disabled(disabled != 0, &prev);
  return prev;
}
int32_t tpw_is_exporting(void) { return 0; }

#include "../src/codegen/jit.h"
void tpw_jit_ready(int32_t token, int32_t base) { tp_jit_resolve(token, base); }
int32_t tpw_jit_kernel(int32_t ctx, int32_t k) { return tp_plan_jit_kernel(ctx, k); }
#include "../src/codegen/wasm/emit.h"
int32_t tpw_graph_emit_wasm(uint32_t h, intptr_t *out) {
  tp_graph *g = handle_get(h, K_GRAPH);
  if (!g) return tp_last_status();
  tp_graph *lg = NULL;
  tp_kir_program *p = NULL;
  tp_status s = tp_run_passes(g, 0, NULL, NULL, &lg);
  if (!s) s = tp_schedule(lg, NULL, &p); /* takes lg */
  if (!s) s = tp_memplan(p);
  tp_emitted em;
  memset(&em, 0, sizeof em);
  if (!s) s = tp_emit_wasm(p, NULL, &em);
  tp_kir_program_free(p);
  if (s) return s;
  s = give_bytes(em.bytes, em.len, out);
  tp_emitted_clear(&em);
  return s;
}

/* ---- ONNX ---- */
uint32_t tpw_onnx_load(const void *bytes, int32_t len) {
  tp_graph *g = NULL;
  if (len < 0 || (len && !bytes)) {
    tp_fail(TP_ERR_INVALID_ARG, "onnx.load: bad byte buffer");
    return 0;
  }
  if (tp_onnx_load(bytes, (size_t)len, &g)) return 0;
  uint32_t h = handle_new(K_GRAPH, g);
  if (!h) tp_graph_free(g);
  return h;
}
static int32_t onnx_save_copy(const tp_graph *g, intptr_t *out) {
  uint8_t *b = NULL;
  size_t n = 0;
  if (!out) return tp_fail(TP_ERR_INVALID_ARG, "onnx.save: NULL output");
  if (!g) return tp_fail(TP_ERR_INVALID_ARG, "onnx.save: no graph was captured (a graph break?)");
  TP_TRY(tp_onnx_save(g, &b, &n));
  tp_status s = give_bytes(b, n, out);
  tp_free_buffer(b);
  return s;
}
int32_t tpw_graph_onnx_save(uint32_t h, intptr_t *out) {
  tp_graph *g = handle_get(h, K_GRAPH);
  if (!g) return tp_last_status();
  return onnx_save_copy(g, out);
}
int32_t tpw_compiled_onnx_save(uint32_t h, intptr_t *out) {
  tp_compiled *c = handle_get(h, K_COMPILED);
  if (!c) return tp_last_status();
  return onnx_save_copy(tp_compiled_last_graph(c), out);
}
uint32_t tpw_onnx_tensor_decode(const void *bytes, int32_t len) {
  tp_tensor *t = NULL;
  if (len < 0 || (len && !bytes)) {
    tp_fail(TP_ERR_INVALID_ARG, "onnx.decodeTensor: bad byte buffer");
    return 0;
  }
  if (tp_onnx_tensor_decode(bytes, (size_t)len, &t)) return 0;
  uint32_t h = handle_new(K_TENSOR, t);
  if (!h) tp_tensor_release(t);
  return h;
}
int32_t tpw_graph_num_inputs(uint32_t h) {
  tp_graph *g = handle_get(h, K_GRAPH);
  return g ? tp_graph_num_inputs(g) : -1;
}
int32_t tpw_graph_num_outputs(uint32_t h) {
  tp_graph *g = handle_get(h, K_GRAPH);
  return g ? tp_graph_num_outputs(g) : -1;
}
const char *tpw_graph_input_name(uint32_t h, int32_t i) {
  tp_graph *g = handle_get(h, K_GRAPH);
  if (!g || i < 0 || i >= tp_graph_num_inputs(g)) return NULL;
  return tp_graph_input_name(g, i);
}
const char *tpw_onnx_output_names(uint32_t h) {
  tp_graph *g = handle_get(h, K_GRAPH);
  int o = g ? tp_graph_output(g) : -1;
  return o >= 0 ? tp_graph_get_custom(g, o, "onnx_outputs") : NULL;
}
