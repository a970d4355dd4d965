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
#else
/* Native builds (tests) install the host with tpw_set_native_host. */
typedef int32_t (*tpw_native_host_fn)(int32_t, const uint32_t *, int32_t, uint32_t *, int32_t);
static tpw_native_host_fn native_host;
void tpw_set_native_host(tpw_native_host_fn fn) { native_host = fn; }
#define HOST_CALL(id, in, nin, out, max) \
  (native_host ? native_host((id), (in), (nin), (out), (max)) : -1)
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
      slot *ns = tp_xrealloc(slots, sizeof(slot) * (size_t)nc);
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
static tp_status host_fn(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                         int *nout) {
  int32_t id = (int32_t)(intptr_t)ud;
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
  tp_free_string(text);
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
int32_t tpw_npy_encode(uint32_t h, intptr_t *out) {
  tp_tensor *t = handle_get(h, K_TENSOR);
  if (!t) return tp_last_status();
  void *buf = NULL;
  size_t n = 0;
  TP_TRY(tp_npy_encode(t, &buf, &n));
  char *copy = malloc(n ? n : 1);
  if (!copy) {
    tp_free_string(buf);
    return tp_fail(TP_ERR_OUT_OF_MEMORY, "out of memory copying npy bytes");
  }
  memcpy(copy, buf, n);
  tp_free_string(buf);
  out[0] = (intptr_t)copy;
  out[1] = (intptr_t)n;
  return TP_OK;
}
