/* tensorplay.h - the public C API of tensorplay-wasm.
 *
 * Worked example (error checks shortened to TP_CHECK):
 *
 *   tp_tensor *x, *w, *b, *h, *y;
 *   int64_t xs[2] = {64, 784}, ws[2] = {512, 784}, bs[1] = {512};
 *   tp_randn(2, xs, 1, &x);  tp_randn(2, ws, 2, &w);
 *   tp_zeros(TP_F32, 1, bs, &b);
 *   tp_linear(x, w, b, &h);                 // h = x @ w^T + b
 *   tp_relu(h, &h2);  tp_sum(h2, 1, (int64_t[]){1}, 0, &y);
 *   float out[64]; tp_tensor_read(y, out, sizeof out);
 *   // compile: capture a function once per input signature, replay it
 *   tp_callable fn = { my_fn, my_state };
 *   tp_compiled *g; tp_compile(&fn, NULL, &g);
 *   tp_compiled_call(g, 1, &x, 1, &y, &nout);
 *   tp_tensor_release(y); tp_compiled_free(g); ...
 *
 * Conventions: every fallible call returns enum tp_status; on failure the
 * message is kept per thread and read with tp_last_error(). Outputs come last
 * and end in _out (or are the last pointer parameter). Tensors are reference
 * counted: every tensor returned through an out-parameter is owned by the
 * caller and released with tp_tensor_release(). Input pointers are borrowed
 * for the duration of the call unless stated otherwise.
 */
#ifndef TENSORPLAY_H
#define TENSORPLAY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TP_VERSION_MAJOR 0
#define TP_VERSION_MINOR 1
#define TP_VERSION_PATCH 0
#define TP_VERSION_STRING "0.1.0"
#define TP_MAX_DIMS 8

/* ---- status ------------------------------------------------------------ */
typedef enum tp_status {
  TP_OK = 0,
  TP_ERR_INVALID_ARG,   /* a bad value: wrong shape, dtype, option */
  TP_ERR_UNSUPPORTED,   /* valid request that this build cannot do */
  TP_ERR_OUT_OF_MEMORY, /* an allocation failed; nothing was changed */
  TP_ERR_CAPTURE,       /* GraphCaptureError */
  TP_ERR_PARSE,         /* malformed graph text or file */
  TP_ERR_IO,            /* file could not be read or written */
  TP_ERR_DISPOSED,      /* a handle was freed or never existed */
  TP_ERR_HOST,          /* a host (JS) callback failed */
  TP_ERR_INTERNAL,      /* a broken invariant */
  /* the frontend's Python error kinds (the seed's messages) */
  TP_ERR_TYPE,          /* TypeError */
  TP_ERR_VALUE,         /* ValueError */
  TP_ERR_RUNTIME,       /* RuntimeError */
  TP_ERR_ASSERTION,     /* AssertionError */
  TP_ERR_INVALID_BACKEND, /* InvalidBackend */
  TP_STATUS_COUNT
} tp_status;

const char *tp_status_name(tp_status s);
/* The message of the last failure on this thread ("" if none). */
const char *tp_last_error(void);
tp_status tp_last_status(void);
void tp_clear_error(void);

/* Allocator hook (Lua style). realloc semantics: size 0 frees. Tests use it
 * to fail the Nth allocation. NULL restores the default. */
typedef void *(*tp_alloc_fn)(void *ud, void *ptr, size_t old_size, size_t new_size);
void tp_set_allocator(tp_alloc_fn fn, void *ud);
/* Called with the message before abort() on a broken invariant. */
typedef void (*tp_abort_fn)(const char *msg);
void tp_set_abort_hook(tp_abort_fn fn);

/* Large freed tensor blocks (>= 1 MiB, 256 MiB in all) are cached for
 * reuse; this returns them to the allocator. */
void tp_release_cached_memory(void);
/* Number of live tensors and bytes of live tensor storage (leak checks). */
size_t tp_live_tensors(void);
size_t tp_live_storage_bytes(void);

/* ---- dtypes ------------------------------------------------------------ */
typedef enum tp_dtype { TP_F32, TP_I32, TP_I64, TP_BOOL, TP_DTYPE_COUNT } tp_dtype;
const char *tp_dtype_name(tp_dtype d);       /* "float32", ... */
const char *tp_dtype_short(tp_dtype d);      /* "f32", ... */
size_t tp_dtype_size(tp_dtype d);
/* Accepts "float32"/"f32"/"int32"/"i32"/"int64"/"i64"/"bool"/"b8". */
tp_status tp_dtype_parse(const char *s, tp_dtype *out);

/* ---- tensors ----------------------------------------------------------- */
typedef struct tp_tensor tp_tensor;

/* data may be NULL (zero-filled); else it holds numel elements, C order. */
tp_status tp_tensor_new(tp_dtype dtype, int ndim, const int64_t *shape,
                        const void *data, tp_tensor **out);
tp_status tp_zeros(tp_dtype dtype, int ndim, const int64_t *shape, tp_tensor **out);
tp_status tp_ones(tp_dtype dtype, int ndim, const int64_t *shape, tp_tensor **out);
tp_status tp_full(tp_dtype dtype, int ndim, const int64_t *shape, double value,
                  tp_tensor **out);
/* 0-d tensor from a number. A "weak" scalar follows the other operand's
 * dtype in binary ops (x_f32 + 2 stays f32; x_i32 + 1.5 becomes f32). */
tp_status tp_scalar(double value, int is_int, tp_tensor **out);
tp_status tp_arange(double start, double end, double step, tp_dtype dtype,
                    tp_tensor **out);
/* Standard normal / uniform [0,1) float32, reproducible from seed. */
tp_status tp_randn(int ndim, const int64_t *shape, uint64_t seed, tp_tensor **out);
tp_status tp_rand(int ndim, const int64_t *shape, uint64_t seed, tp_tensor **out);

void tp_tensor_retain(tp_tensor *t);
void tp_tensor_release(tp_tensor *t); /* NULL is ignored */

int tp_tensor_ndim(const tp_tensor *t);
const int64_t *tp_tensor_shape(const tp_tensor *t);
const int64_t *tp_tensor_strides(const tp_tensor *t); /* in elements */
tp_dtype tp_tensor_dtype(const tp_tensor *t);
int64_t tp_tensor_numel(const tp_tensor *t);
int tp_tensor_is_contiguous(const tp_tensor *t);
/* Copy the elements in C order into dst (bytes must equal numel*itemsize).
 * Inside a captured function this is a graph break. */
tp_status tp_tensor_read(tp_tensor *t, void *dst, size_t bytes);
/* The value of a one-element tensor, as double. A graph break too. */
tp_status tp_tensor_item(tp_tensor *t, double *out);
/* A contiguous copy (or a new reference when already contiguous). */
tp_status tp_contiguous(tp_tensor *t, tp_tensor **out);

/* ---- operators ---------------------------------------------------------
 * Every operator is one row in src/ops/ops.def. tp_op_call is the single
 * entry point; the named functions below are thin wrappers over it. */
typedef enum tp_op {
#define TP_OP(id, name, nin, flags, shape) TP_OP_##id,
#include "ops/ops.def"
#undef TP_OP
  TP_OP_COUNT
} tp_op;

const char *tp_op_name(tp_op op);
tp_status tp_op_lookup(const char *name, tp_op *out);
int tp_op_arity(tp_op op); /* -1: variadic (concat) */

/* Operator attributes: which fields an op reads is written in ops.def. */
typedef struct tp_attrs {
  int64_t ints[TP_MAX_DIMS]; /* dims / shape / perm / normalized_shape */
  int nints;
  int64_t dim;               /* dim for softmax, concat, slice, transpose d0 */
  int64_t dim1;              /* transpose d1 */
  int64_t start, end, step;  /* slice */
  double eps;                /* layer_norm */
  int keepdim;               /* reductions */
  int approximate;           /* gelu: 0 = erf, 1 = tanh */
  tp_dtype dtype;            /* cast */
} tp_attrs;
void tp_attrs_init(tp_attrs *a);

/* in: nin borrowed tensors (NULL allowed for optional linear/layer_norm
 * operands). *out: a new tensor. Inside capture this also records a node. */
tp_status tp_op_call(tp_op op, int nin, tp_tensor *const *in,
                     const tp_attrs *attrs, tp_tensor **out);

tp_status tp_add(tp_tensor *a, tp_tensor *b, tp_tensor **out);
tp_status tp_sub(tp_tensor *a, tp_tensor *b, tp_tensor **out);
tp_status tp_mul(tp_tensor *a, tp_tensor *b, tp_tensor **out);
tp_status tp_div(tp_tensor *a, tp_tensor *b, tp_tensor **out);
tp_status tp_relu(tp_tensor *a, tp_tensor **out);
tp_status tp_matmul(tp_tensor *a, tp_tensor *b, tp_tensor **out);
/* y = x @ w^T + b; w is [out, in]; b may be NULL. */
tp_status tp_linear(tp_tensor *x, tp_tensor *w, tp_tensor *b, tp_tensor **out);
tp_status tp_sum(tp_tensor *a, int ndims, const int64_t *dims, int keepdim,
                 tp_tensor **out);
tp_status tp_reshape(tp_tensor *a, int ndim, const int64_t *shape, tp_tensor **out);
tp_status tp_transpose(tp_tensor *a, int64_t d0, int64_t d1, tp_tensor **out);

/* ---- graphs ------------------------------------------------------------ */
typedef struct tp_graph tp_graph;
void tp_graph_free(tp_graph *g);
/* Stable text form (docs/graph-format.md). with_data also writes constant
 * tensor bytes so the text can be run elsewhere. *out is owned by the
 * caller: free it with tp_free_string (not free()). */
tp_status tp_graph_print(const tp_graph *g, int with_data, char **out);
tp_status tp_graph_parse(const char *text, size_t len, tp_graph **out);
void tp_free_string(char *s);
int tp_graph_num_nodes(const tp_graph *g);
int tp_graph_num_inputs(const tp_graph *g);
int tp_graph_num_outputs(const tp_graph *g);
/* Name of placeholder i ("x"); borrowed until tp_graph_free. */
const char *tp_graph_input_name(const tp_graph *g, int i);
tp_status tp_graph_verify(const tp_graph *g);
/* Run the graph node by node on the eager kernels. outs: caller array of
 * max_out; *nout receives the count. */
tp_status tp_graph_run(const tp_graph *g, int nin, tp_tensor *const *in,
                       int max_out, tp_tensor **outs, int *nout);

/* ---- capture ----------------------------------------------------------- */
/* A function the core can call: JS functions reach C as one of these. It
 * receives nin borrowed inputs and stores up to max_out new tensors. */
typedef tp_status (*tp_fn)(void *ud, int nin, tp_tensor *const *in,
                           int max_out, tp_tensor **outs, int *nout);
typedef struct tp_callable {
  tp_fn fn;
  void *ud;
} tp_callable;

/* Trace fn once on the inputs (executing it on them, like the seed's
 * Tracer(execute=True)). fullgraph: a graph break raises instead of
 * returning TP_ERR_CAPTURE with *broken set. outs receive fn's real outputs. */
typedef struct tp_trace_result {
  tp_graph *graph;      /* NULL when the capture broke */
  int broken;           /* 1 when the function read tensor data */
  char break_reason[160];
  int nout;
  tp_tensor *outs[64];  /* the function's real outputs (owned) */
  uint64_t shape_read;  /* bit i: the function read input i's shape */
  char shape_where[8][96]; /* where inputs 0..7 were read ("" unknown) */
} tp_trace_result;
tp_status tp_trace(const tp_callable *fn, int nin, tp_tensor *const *in,
                   int fullgraph, tp_trace_result *out);
void tp_trace_result_clear(tp_trace_result *r);
int tp_is_compiling(void);
/* Note that t's shape was read (where: the host's source location or
 * NULL). Inside a capture this makes compile() guard the exact shape of
 * that input even when dynamic. tp_tensor_shape() notes it too. */
void tp_capture_note_shape_read(const tp_tensor *t, const char *where);

/* ---- compile ----------------------------------------------------------
 * The seed's compile(): every option, validated in the seed's order with its
 * error kind (TP_ERR_TYPE / _VALUE / _RUNTIME / _INVALID_BACKEND) and
 * message. Config (tp_config_*) is read when the wrapper is made. */
typedef struct tp_compile_options {
  int fullgraph;
  int dynamic;              /* -1 unset (None), 0, 1 */
  const char *backend;      /* NULL: the default backend ("stax") */
  const char *mode;         /* NULL unset */
  int has_options;          /* options dict given (even if empty) */
  int noptions;
  const char *option_keys[16]; /* "stax.fusion", ... */
  int option_values[16];       /* bools */
  const char *name;
  int disable;
  int recompile_limit;      /* 0 unset (None): config.recompile_limit */
  int isolate_recompiles;
  int strict_native;
  int dynamic_shapes;       /* -1 unset (None), 0, 1 */
  /* Placeholder names, comma separated ("x,w"); NULL: x0, x1, ... */
  const char *input_names;
} tp_compile_options;
void tp_compile_options_init(tp_compile_options *o);

typedef struct tp_compiled tp_compiled;
/* fn is copied; its ud must outlive the compiled object. With disable set,
 * calls go straight to fn. */
tp_status tp_compile(const tp_callable *fn, const tp_compile_options *opts,
                     tp_compiled **out);
tp_status tp_compiled_call(tp_compiled *c, int nin, tp_tensor *const *in,
                           int max_out, tp_tensor **outs, int *nout);
/* The same with a key for the non-tensor arguments the host closed over
 * (scalars by value, other objects by identity), e.g. "1:3.5|2:obj#7". */
tp_status tp_compiled_call_keyed(tp_compiled *c, int nin, tp_tensor *const *in,
                                 const char *extra_key, int max_out,
                                 tp_tensor **outs, int *nout);
void tp_compiled_free(tp_compiled *c);
/* Names of the placeholders of later captures, comma separated. */
tp_status tp_compiled_set_input_names(tp_compiled *c, const char *names);
/* Statistics: captures done (accumulated), cached specializations. */
int tp_compiled_num_captures(const tp_compiled *c);
int tp_compiled_num_entries(const tp_compiled *c);
/* Graph of the most recent specialization (borrowed), NULL if none or if
 * that specialization fell back to eager after a graph break. */
const tp_graph *tp_compiled_last_graph(const tp_compiled *c);
/* Recompile reasons, one per line ("inputs[0].shape == (4, 8)"), and the
 * explain() report of everything captured so far (JSON). Both owned by the
 * caller (tp_free_string). */
tp_status tp_compiled_recompile_reasons(const tp_compiled *c, char **out);
tp_status tp_compiled_explain(const tp_compiled *c, char **json_out);
/* reset(): clear every wrapper's specializations, guards and reasons,
 * capture-time constant values, and reset the backends. */
void tp_reset(void);

/* ---- npy --------------------------------------------------------------- */
tp_status tp_npy_load(const char *path, tp_tensor **out);
tp_status tp_npy_save(const char *path, tp_tensor *t);
tp_status tp_npy_decode(const void *bytes, size_t len, tp_tensor **out);
/* *out is owned by the caller: free it with tp_free_string (not free()). */
tp_status tp_npy_encode(tp_tensor *t, void **out, size_t *len);

/* ---- runtime info ------------------------------------------------------ */
/* "generic", "sse2", "avx2", "avx512", "wasm-simd128" */
const char *tp_isa_name(void);
/* Force an ISA at or below the best one (tests, benchmarks): "generic",
 * "sse2", "avx2", "avx512", "wasm-simd128"; "best" restores the default. */
tp_status tp_set_isa(const char *name);

#ifdef __cplusplus
}
#endif
#endif
