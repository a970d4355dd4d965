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
/* tp_attrs.floats: rnn / gru / lstm keep an alpha and a beta per activation (6 at most). */
#define TP_MAX_FLOATS 12
/* The most operands one operator, node, host call or kernel takes (and the
 * most results a host call, split or graph gives): inputs of concat, results
 * of a call_host. Larger ONNX concats are split into chunks of this many. */
#define TP_MAX_OPERANDS 64
/* The most elements one tensor may have (2^40): shapes past it are refused
 * before any size arithmetic could overflow. */
#define TP_MAX_NUMEL ((int64_t)1 << 40)

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
/* Frees a buffer the library handed to the caller (graph text, JSON, npy
 * or ONNX bytes: every char ** / void ** / uint8_t ** out-parameter documented
 * as owned by the caller). Not free(): they come from the allocator hook.
 * NULL is a no-op. */
void tp_free_buffer(void *p);
/* Called with the message before abort() on a broken invariant. */
typedef void (*tp_abort_fn)(const char *msg);
void tp_set_abort_hook(tp_abort_fn fn);

/* Large freed tensor blocks (>= 1 MiB, 256 MiB in all) are cached for
 * reuse; this returns them to the allocator. */
void tp_release_cached_memory(void);
/* Stops the thread pool's workers (joins them and frees their buffers); the
 * next kernel large enough to split starts them again. Also done at exit and
 * when config.threads is set to 1. Call it while no other thread runs a plan. */
void tp_threads_shutdown(void);
/* Number of live tensors and bytes of live tensor storage (leak checks). */
size_t tp_live_tensors(void);
size_t tp_live_storage_bytes(void);
/* The most bytes of tensor storage live at once since the last reset (the
 * first call: since the start); reset: start again from the bytes live now.
 * Plans' arenas and the allocator's caches are not tensor storage. */
size_t tp_live_storage_peak(int reset);

/* ---- dtypes ------------------------------------------------------------ */
/* float16 / bfloat16 / int8 / uint8 are storage dtypes (docs/quantization.md):
 * tensors hold them, ops other than cast, views and the quantization ops
 * compute in float32 / int32 and round once at the output. */
typedef enum tp_dtype {
  TP_F32, TP_I32, TP_I64, TP_BOOL, TP_F16, TP_BF16, TP_I8, TP_U8, TP_DTYPE_COUNT
} tp_dtype;
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
/* tp_full, tp_arange: for int32/int64 the value is truncated toward zero
 * and must fit (NaN, +-Inf or overflow: TP_ERR_INVALID_ARG); float32
 * rounds (past its range to +-Inf).
 * tp_scalar: 0-d tensor from a number. A "weak" scalar follows the other
 * operand's dtype in binary ops (x_f32 + 2 stays f32; x_i32 + 1.5 becomes
 * f32). is_int needs a whole value (any size: 1e300 * x_f32 is +Inf); an
 * int scalar that does not fit an int tensor's dtype makes the operation
 * fail (TP_ERR_INVALID_ARG), never wrap. docs/reliability.md. */
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

/* Operator attributes: which fields an op reads, and how the graph text
 * spells them, is its TP_OP_ATTRS row in ops.def. The opaque ops keep their
 * numbers in unions with dim / dim1 under names that say what they hold. */
typedef struct tp_attrs {
  int64_t ints[TP_MAX_DIMS]; /* dims / shape / perm / normalized_shape / window */
  int nints;
  union {
    int64_t dim;             /* softmax, concat, slice, transpose d0; conv2d groups */
    int64_t host_fn;         /* call_host: the host function id */
    int64_t result_index;    /* getitem: which result of its call_host / invoke */
  };
  union {
    int64_t dim1;            /* transpose d1 */
    int64_t nresults;        /* call_host, invoke: number of results */
    int64_t k;               /* argtopk: how many */
  };
  int64_t start, end, step;  /* slice */
  double eps;                /* layer_norm */
  union {
    int keepdim;             /* reductions */
    int reduction;           /* scatter_elements, scatter_nd: 0 none, 1 add, 2 mul, 3 max, 4 min */
    int largest;             /* argtopk: 1 the largest first, 0 the smallest */
  };
  int approximate;           /* gelu: 0 = erf, 1 = tanh */
  tp_dtype dtype;            /* cast */
  double clip;               /* rnn, gru, lstm: clip gate inputs to [-clip, clip]; 0 = none */
  double floats[TP_MAX_FLOATS]; /* rnn, gru, lstm: alpha, beta of each activation of ints */
  int nfloats;               /* 0 or 2 * nints */
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
/* 2-D convolution, NCHW: x [N,C,H,W], w [M, C/groups, KH, KW], b [M] or
 * NULL. stride, dilation: {h, w}; pads: {top, left, bottom, right}; NULL
 * for any of them means 1, 0 and 1. */
tp_status tp_conv2d(tp_tensor *x, tp_tensor *w, tp_tensor *b, const int64_t stride[2],
                    const int64_t pads[4], const int64_t dilation[2], int64_t groups,
                    tp_tensor **out);
tp_status tp_sum(tp_tensor *a, int ndims, const int64_t *dims, int keepdim,
                 tp_tensor **out);
tp_status tp_reshape(tp_tensor *a, int ndim, const int64_t *shape, tp_tensor **out);
tp_status tp_transpose(tp_tensor *a, int64_t d0, int64_t d1, tp_tensor **out);

/* ---- autograd (src/ops/autograd.c, docs/training.md) ------------------
 * Eager ops record a tape while grad mode is on and any operand requires a
 * gradient: the result gets a grad_fn node (the op, its attributes, the
 * operands and results its derivative needs, saved with their storage
 * versions). tp_backward walks the nodes from a result back to the leaves
 * and accumulates d(result)/d(leaf) into each leaf's .grad; each node's
 * derivative is its row of src/ops/derivatives.def, built from ordinary
 * operator calls. Errors follow PyTorch's messages. */
/* Mark a leaf as requiring a gradient (or not). Only float32 tensors can:
 * other dtypes are TP_ERR_INVALID_ARG ("only Tensors of floating point
 * dtype can require gradients"). Clearing it on a non-leaf (a recorded
 * result) is an error too. */
tp_status tp_tensor_set_requires_grad(tp_tensor *t, int requires_grad);
int tp_tensor_requires_grad(const tp_tensor *t);
/* 1 for a tensor no recorded op made (user-created, or detached). */
int tp_tensor_is_leaf(const tp_tensor *t);
/* The accumulated gradient (borrowed; NULL until a backward reached it). */
tp_tensor *tp_tensor_grad(const tp_tensor *t);
/* Replace (retaining g) or clear (g NULL) t's .grad; g must match t's
 * shape and be float32. */
tp_status tp_tensor_set_grad(tp_tensor *t, tp_tensor *g);
/* A new tensor sharing t's storage that is a leaf and requires no grad. */
tp_status tp_tensor_detach(tp_tensor *t, tp_tensor **out);
/* The version of t's storage: in-place writes (tp_tensor_assign, the
 * optimizer steps) bump it; backward refuses a saved tensor whose version
 * changed since it was saved. */
uint64_t tp_tensor_version(const tp_tensor *t);
/* In-place: copy src's values (broadcast to dst's shape, converted to its
 * dtype) into dst and bump its version. Refused on a leaf that requires
 * grad while grad mode is on (PyTorch's "a leaf Variable that requires
 * grad is being used in an in-place operation"). */
tp_status tp_tensor_assign(tp_tensor *dst, tp_tensor *src);
/* Gradients of t with respect to every leaf that requires grad, summed
 * into their .grad. grad: d(loss)/d(t), t's shape; NULL only when t has one
 * element (then 1). retain_graph 0 frees the saved tensors on the way, so a
 * second backward through the same nodes is an error. */
tp_status tp_backward(tp_tensor *t, tp_tensor *grad);
tp_status tp_backward_ex(tp_tensor *t, tp_tensor *grad, int retain_graph);
/* Grad mode (per thread, on by default). Returns the previous state. */
int tp_set_grad_enabled(int enabled);
int tp_is_grad_enabled(void);
/* Optimizer updates (src/ops/optim.c): one fused in-place pass over a
 * contiguous float32 leaf p with its gradient g and state of p's shape
 * (zero-initialized by the caller), PyTorch's rules. They write p and the
 * state in place and bump their versions. Bad shapes, dtypes or
 * hyperparameters (lr < 0, momentum outside [0, 1], betas outside [0, 1),
 * step < 1, ...) are TP_ERR_INVALID_ARG naming them.
 * SGD: d = g + wd p; with momentum (buf): buf = momentum buf + d, d = buf;
 * p -= lr d. buf may be NULL when momentum is 0. */
tp_status tp_sgd_step(tp_tensor *p, tp_tensor *g, tp_tensor *buf, double lr, double momentum,
                      double weight_decay);
/* Adam (decoupled 0: g += wd p) / AdamW (decoupled 1: p *= 1 - lr wd);
 * m, v: the first and second moments; step counts from 1. */
tp_status tp_adam_step(tp_tensor *p, tp_tensor *g, tp_tensor *m, tp_tensor *v, int64_t step, double lr,
                       double beta1, double beta2, double eps, double weight_decay, int decoupled);
/* Losses (src/ops/loss.c), built from ordinary ops so autograd records
 * them. reduction: 0 none, 1 mean, 2 sum.
 * mse_loss: (pred - target)^2, same shapes.
 * cross_entropy: logits [N, C] float32, target [N] int32/int64 class
 * indices; targets equal to ignore_index contribute 0 and are not counted
 * by the mean (all ignored: NaN, as PyTorch); label_smoothing e in [0, 1]:
 * (1 - e) * nll + e * mean_c(-log p_c). A target outside [0, C) that is
 * not ignore_index is TP_ERR_INVALID_ARG naming it. */
tp_status tp_mse_loss(tp_tensor *pred, tp_tensor *target, int reduction, tp_tensor **out);
tp_status tp_cross_entropy(tp_tensor *logits, tp_tensor *target, int64_t ignore_index, double label_smoothing,
                           int reduction, tp_tensor **out);
/* The derivatives table (src/ops/derivatives.def): TP_GRAD_FORMULA for an op
 * with a backward formula, TP_GRAD_NONDIFF for one without a derivative
 * (comparisons, integer results, opaque host regions), TP_GRAD_NOT_IMPLEMENTED
 * for a differentiable op whose formula is still to come (backward through
 * it is an error naming it); *reason (may be NULL) explains the last two. */
typedef enum tp_grad_kind { TP_GRAD_NONE, TP_GRAD_FORMULA, TP_GRAD_NONDIFF, TP_GRAD_NOT_IMPLEMENTED } tp_grad_kind;
tp_grad_kind tp_op_grad_kind(tp_op op, const char **reason);

/* ---- graphs ------------------------------------------------------------ */
typedef struct tp_graph tp_graph;
void tp_graph_free(tp_graph *g);
/* Stable text form (docs/graph-format.md). with_data also writes constant
 * tensor bytes so the text can be run elsewhere. *out is owned by the
 * caller: free it with tp_free_buffer (not free()). */
tp_status tp_graph_print(const tp_graph *g, int with_data, char **out);
tp_status tp_graph_parse(const char *text, size_t len, tp_graph **out);
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
/* no_grad (autograd): calls fn with grad mode off, then restores it. */
tp_status tp_no_grad(const tp_callable *fn, int nin, tp_tensor *const *in, int max_out,
                     tp_tensor **outs, int *nout);

/* Control flow (torch.cond / jax.lax.cond, torch while_loop; docs/api.md
 * "Control flow"). tp_cond: pred is one bool or integer value (nonzero:
 * then); both callables take the nin operands and return values of one
 * signature. Outside a capture only the chosen one runs; inside one (a
 * compiled function, a trace) both are traced into child graphs and one
 * cond node is recorded (the choice is made at run time; the branches
 * must not break the graph, and a traced value they read must be passed as
 * an operand). Errors name the mismatch (count, dtype, shape of a result).
 * tp_while_loop: in[0..ncarried) are the carried values, the rest are read
 * by every step (captured); cond_fn(all) returns one bool/int value,
 * body_fn(all) the next carried values (same dtypes and shapes). Returns the
 * carried values after the last step. Inside a capture: one while_loop
 * node (its body compiled once, run as many times as the data says). */
tp_status tp_cond(tp_tensor *pred, const tp_callable *then_fn, const tp_callable *else_fn, int nin,
                  tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout);
tp_status tp_while_loop(const tp_callable *cond_fn, const tp_callable *body_fn, int ncarried, int nin,
                        tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout);

/* Trace fn once on the inputs (executing it on them, like the seed's
 * Tracer(execute=True)). fullgraph: a graph break raises instead of
 * returning TP_ERR_CAPTURE with *broken set. outs receive fn's real outputs. */
typedef struct tp_trace_result {
  tp_graph *graph;      /* NULL when the capture broke */
  int broken;           /* 1 when the function read tensor data */
  char break_reason[160];
  int nout;
  tp_tensor *outs[TP_MAX_OPERANDS];  /* the function's real outputs (owned) */
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

/* ---- marking callables (the records registry) ------------------------
 * The seed's capture modes for C callables. A callable is identified by its
 * (fn, ud) pair. Marking twice with the same mode returns the existing
 * mark; another mode is TP_ERR_VALUE ("callable ... cannot be marked as both
 * 'allow' and 'disabled'"). C has no way to intercept a plain call, so a
 * captured function calls marked callables through tp_call, which captures
 * them by their mode inside a capture and simply calls them outside. */
tp_status tp_allow_in_graph(const tp_callable *fn);   /* one opaque node */
tp_status tp_nonstrict_trace(const tp_callable *fn);  /* one opaque node */
/* disable(fn, recursive, reason): opaque; capture suspended inside when
 * recursive. reason may be NULL. */
tp_status tp_disable(const tp_callable *fn, int recursive, const char *reason);
/* Evaluated once on the samples; the value is baked in until tp_reset. */
tp_status tp_assume_constant_result(const tp_callable *fn);
/* Inside a capture, calls of original trace replacement instead. */
tp_status tp_substitute_in_graph(const tp_callable *original, const tp_callable *replacement,
                                 int can_constant_fold_through);
/* Traced once per input key (shapes, dtypes, values) into a child graph and
 * reused; max_reuse_entries < 1 is TP_ERR_VALUE. */
tp_status tp_nested_compile_region(const tp_callable *fn, int max_reuse_entries);
/* Calls fn (marked or not) as its mode says. */
tp_status tp_call(const tp_callable *fn, int nin, tp_tensor *const *in, int max_out,
                  tp_tensor **outs, int *nout);
/* disable_capture(): inside, operations on traced values raise
 * GraphCaptureError. Returns the previous state for tp_disable_capture_end. */
int tp_disable_capture_begin(void);
void tp_disable_capture_end(int previous);

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
/* While grad mode is on and an input or a closed-over tensor requires
 * grad, the call is compiled for training (AOT autograd, docs/training.md):
 * the output that requires grad gets one autograd node whose backward runs
 * the compiled backward graph, so tp_backward fills .grad as eagerly. */
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
/* Graph of the most recent specialization (borrowed; a training entry's
 * forward graph), NULL if none or if that specialization fell back to
 * eager after a graph break. */
const tp_graph *tp_compiled_last_graph(const tp_compiled *c);
/* A training entry's backward graph ((saved..., grad_out) -> the gradients,
 * docs/training.md), NULL when the most recent specialization is not one. */
const tp_graph *tp_compiled_last_backward_graph(const tp_compiled *c);
/* Recompile reasons, one per line ("inputs[0].shape == (4, 8)"), and the
 * explain() report of everything captured so far (JSON). Both owned by the
 * caller (tp_free_buffer). */
tp_status tp_compiled_recompile_reasons(const tp_compiled *c, char **out);
/* The Wasm module the backend generated for the most recent specialization
 * (stax on a Wasm host with SIMD128: the kernels it runs as generated code
 * and the run entry, or will run once a host that compiles asynchronously
 * has installed it), borrowed and valid until the next call involving c
 * (a call of c, tp_compiled_*, tp_reset, tp_compiled_free); copy it to keep
 * it. NULL with *len = 0 when there is none (another backend, a native
 * build, nothing generated, a module the host failed to compile). */
const void *tp_compiled_last_module(const tp_compiled *c, size_t *len);
tp_status tp_compiled_explain(const tp_compiled *c, char **json_out);
/* reset(): clear every wrapper's specializations, guards and reasons,
 * capture-time constant values, and reset the backends. */
void tp_reset(void);

/* ---- the frontend: values, config, backends, modes ---------------------
 * Errors follow the seed: TP_ERR_TYPE for TypeError, TP_ERR_VALUE for
 * ValueError, TP_ERR_RUNTIME for RuntimeError, TP_ERR_INVALID_BACKEND for
 * InvalidBackend; messages are the seed's. docs/backends.md, docs/api.md. */

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
 *   threads / threads                                   None
 * Setting stores any value (validation happens in compile(), in the
 * seed's order); an unknown key is TP_ERR_VALUE "unknown config key 'x'".
 * Except `threads`, which is checked and applied when set: the threads that
 * kernels split their work over natively (an int from 1 to 256; None: env
 * TP_NUM_THREADS, else the number of cores; anything else is TP_ERR_VALUE
 * and leaves it unchanged). 1 stops the pool's workers. Results are the same
 * bits for any count. The Wasm builds are single-threaded and ignore it
 * (explain() says so). Set it while no other thread runs a plan. */
typedef enum tp_config_key {
  TP_CFG_ASSUME_STATIC_BY_DEFAULT,
  TP_CFG_VERBOSE,
  TP_CFG_FAIL_ON_RECOMPILE_LIMIT_HIT,
  TP_CFG_FORCE_DISABLE_CACHES,
  TP_CFG_DYNAMIC_SHAPES,
  TP_CFG_RECOMPILE_LIMIT,
  TP_CFG_ACCUMULATED_RECOMPILE_LIMIT,
  TP_CFG_THREADS,
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
  /* may be NULL: a JSON object describing what the backend built, for
   * explain() (stax: kernels, generated kernels, arena bytes) */
  void (*describe)(void *ud, char *json, size_t n);
  /* may be NULL: the Wasm module the backend generated and runs (bytes
   * owned by the runner, valid while it lives), or NULL with *len = 0 */
  const void *(*module)(void *ud, size_t *len);
  /* may be NULL: the per-kernel profile of the runs so far as text (stax
   * with stax.profile), owned by the caller (tp_free_buffer), or NULL */
  char *(*profile)(void *ud);
  /* may be NULL: run with donated inputs: for each bit i of donated,
   * in[i] is a reference the runner owns and releases (setting in[i] to
   * NULL), after its last use when it can (stax: the memory plan's last
   * reading kernel), on success and on failure alike. Compiled training's
   * backward donates its saved tensors (docs/training.md). */
  tp_status (*run_donated)(void *ud, int nin, tp_tensor **in, uint64_t donated, int max_out,
                           tp_tensor **outs, int *nout);
  /* 1: run accepts inputs of other shapes (same ranks and dtypes) and
   * re-derives its plan through tp_backend_opts.graph_for (stax, for an
   * ONNX model's symbolic dims); 0: only the example inputs' shapes */
  int other_shapes;
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
  /* NULL, or the graph for inputs shaped like examples[] (same ranks and
   * dtypes as the backend's example inputs): an ONNX model imports again,
   * since the importer folds shapes into the graph. stax uses it for the
   * sizes of a dynamic dim (docs/kernel-ir.md "Dynamic extents"). */
  tp_status (*graph_for)(void *ud, int nin, tp_tensor *const *examples, tp_graph **out);
  void *graph_for_ud;
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
 * tp_free_buffer. exclude_tags NULL means the default ("debug",
 * "experimental"); nexclude 0 with a non-NULL array excludes nothing. */
tp_status tp_list_backends(const char *const *exclude_tags, int nexclude,
                           int include_unavailable, char **out);
/* InvalidBackend with up to two close matches:
 * "Invalid backend: 'stx', did you mean: 'stax'?" ... and for a backend
 * whose optional deps are missing: which ones. */
tp_status tp_lookup_backend(const char *name, const tp_backend **out); /* *out: valid until that backend is unregistered */
tp_status tp_set_default_backend(const char *name); /* NULL restores "stax" */
const char *tp_get_default_backend(void); /* a per-thread copy, valid until this thread's next call */
/* Unknown names give the default capabilities (no error). */
void tp_get_backend_capabilities(const char *name, tp_backend_caps *out);
int tp_declares_capabilities(const char *name);
/* Registers the built-in backends once (stax, eager, reference). */
void tp_backends_init(void);
/* reset(): lets backends drop their caches. */
void tp_backends_reset(void);

/* NestedCompileRegionOptions(fw_compiler, bw_compiler): when a tensor that
 * requires grad flows through the region inside a compiled function, the
 * region's forward graph is compiled by fw_compiler and its backward graph
 * by bw_compiler (called as backends: graph, example inputs, options ->
 * a runner; once per region and input key per specialization). NULL: the
 * compiled function's backend. docs/training.md. */
typedef struct tp_nested_region_options {
  tp_backend_fn fw_compiler;
  void *fw_ud;
  tp_backend_fn bw_compiler;
  void *bw_ud;
} tp_nested_region_options;
/* tp_nested_compile_region with options (NULL: None). */
tp_status tp_nested_compile_region_ex(const tp_callable *fn, int max_reuse_entries,
                                      const tp_nested_region_options *options);

/* ---- modes (src/compiler/modes.c) ----
 * The four mode names of TensorPlay: "default", "reduce-overhead",
 * "max-autotune-no-cudagraphs", "max-autotune". Option keys adapted to
 * this platform: stax.fusion, stax.codegen, stax.plan_replay,
 * stax.max_autotune, stax.coordinate_descent_tuning, ... (bool values).
 * mode NULL: the whole mapping. Output: JSON text (tp_free_buffer).
 * Unknown mode: TP_ERR_RUNTIME "Unrecognized mode=foo, should be one of:
 * default, reduce-overhead, max-autotune-no-cudagraphs, max-autotune". */
tp_status tp_list_mode_options(const char *mode, char **json_out);
/* Validate compile(options=...) keys and values: unknown key ->
 * TP_ERR_RUNTIME "Unexpected optimization option stax.fusio, known
 * options are ..."; non-bool -> TP_ERR_TYPE. */
tp_status tp_check_mode_options(int n, const char (*keys)[48], const tp_value *values);


/* ---- npy --------------------------------------------------------------- */
tp_status tp_npy_load(const char *path, tp_tensor **out);
tp_status tp_npy_save(const char *path, tp_tensor *t);
tp_status tp_npy_decode(const void *bytes, size_t len, tp_tensor **out);
/* *out is owned by the caller: free it with tp_free_buffer (not free()). */
tp_status tp_npy_encode(tp_tensor *t, void **out, size_t *len);

/* ---- ONNX (src/onnx, docs/onnx.md) --------------------------------------
 * tp_onnx_load: a serialized ModelProto (opset 7 or newer, docs/onnx.md) -> a graph whose
 * placeholders are the graph inputs without initializers (named after the
 * ONNX names, sanitized to [A-Za-z0-9_.]) and whose outputs are the graph
 * outputs in order. bytes are not retained. Malformed bytes: TP_ERR_PARSE
 * ("onnx: truncated field 7 of TensorProto at byte 1234"); ops, attributes,
 * dtypes or external data the importer cannot handle: TP_ERR_UNSUPPORTED
 * ("onnx: node 'conv1' (Conv) is not supported yet"). */
tp_status tp_onnx_load(const void *bytes, size_t len, tp_graph **out);
tp_status tp_onnx_load_file(const char *path, tp_graph **out);
/* The same with some graph inputs bound to values (borrowed): they become
 * constants instead of placeholders, so inputs that ops need as constants
 * (Reshape's shape, Slice's starts, Reduce*'s axes) can be given. */
tp_status tp_onnx_load_with(const void *bytes, size_t len, int nbind, const char *const *names,
                            tp_tensor *const *values, tp_graph **out);
/* tp_onnx_model: a model as applications run it (docs/onnx.md, "Models"):
 * decoded and checked once (an op the importer does not support is refused
 * here, naming the node), then imported per specialization. Graph inputs
 * may have symbolic (dim_param) or unknown dims, and inputs may set shapes
 * or parameters (Reshape's shape, Slice's starts, Reduce*'s axes, ...): each
 * call is checked against the declared types (an error names the input,
 * the dim and the constraint), then served by the specialization for its
 * input shapes and the values of the inputs that set shapes, imported (and
 * compiled, see tp_onnx_model_use_backend) on the first call that needs
 * it. At most `limit` specializations are kept (16 by default; least
 * recently used first out). bytes are copied. */
typedef struct tp_onnx_model tp_onnx_model;
tp_status tp_onnx_model_load(const void *bytes, size_t len, tp_onnx_model **out);
void tp_onnx_model_free(tp_onnx_model *m);
/* The runtime inputs (graph inputs without an initializer) and outputs. */
int tp_onnx_model_num_inputs(const tp_onnx_model *m);
int tp_onnx_model_num_outputs(const tp_onnx_model *m);
const char *tp_onnx_model_input_name(const tp_onnx_model *m, int i);
const char *tp_onnx_model_output_name(const tp_onnx_model *m, int i);
/* Declared type of input i: *dtype ((tp_dtype)-1 when not supported), dims
 * (-1 for a dynamic dim) and dim_names (its dim_param, "?" when unnamed,
 * NULL when fixed), each array TP_MAX_DIMS long or NULL. Returns the rank,
 * -1 for an unknown rank, -2 for a bad index. */
int tp_onnx_model_input_type(const tp_onnx_model *m, int i, tp_dtype *dtype, int64_t *dims,
                             const char **dim_names);
/* in: nin borrowed tensors, by position; outs: new references. */
tp_status tp_onnx_model_run(tp_onnx_model *m, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                            int *nout);
/* Imports (and compiles) the specialization for the declared shapes now,
 * when every input shape is fixed, so that a static model's import errors
 * (an attribute or op form the importer cannot take) come at load time. A
 * model with symbolic dims, or whose inputs set shapes, is left to its
 * first run (TP_OK). */
tp_status tp_onnx_model_prepare(tp_onnx_model *m);
tp_status tp_onnx_model_set_limit(tp_onnx_model *m, int limit);
int tp_onnx_model_num_specializations(const tp_onnx_model *m);
/* The graph of the most recently used specialization (borrowed until the
 * next run or free), NULL before the first run. */
const tp_graph *tp_onnx_model_graph(const tp_onnx_model *m);
/* Inputs with their dynamic dims and value inputs, the specializations
 * and why the last one was made. *out: free with tp_free_buffer. */
tp_status tp_onnx_model_explain(const tp_onnx_model *m, char **out);
/* How specializations run: each is handed to a backend (tp_backend_fn,
 * with the first call's inputs as example inputs) when it is made; NULL fn
 * runs them eagerly (tp_graph_run), the default. Clears the cached
 * specializations. tp_onnx_model_use_backend takes a registered backend by
 * name ("stax", "eager", "reference", or one registered with
 * tp_register_backend; NULL: the default backend). */
void tp_onnx_model_set_backend(tp_onnx_model *m, const char *name, tp_backend_fn fn, void *ud);
tp_status tp_onnx_model_use_backend(tp_onnx_model *m, const char *name);
/* A backend option for the model's specializations (the keys of
 * tp_list_mode_options, e.g. "stax.profile", "stax.max_autotune"), passed
 * to the backend as compile()'s options are; an unknown key or a value of
 * the wrong kind is an error naming it. Clears the cached specializations. */
tp_status tp_onnx_model_set_option(tp_onnx_model *m, const char *key, tp_value value);

/* Fine-tuning (docs/training.md, "Fine-tuning an ONNX model"): the named
 * float32 initializers (n 0: every float32 initializer whose value the
 * import does not need as a constant, e.g. not a Reshape shape or a Clip
 * bound) become trainable parameters: tensors that require grad, owned by
 * the model, fed to its graph after the runtime inputs. While grad mode is
 * on, a run records the tape (it runs op by op, even with a backend), so
 * tp_backward on a loss computed from its outputs fills each parameter's
 * grad; update them in place (tp_sgd_step / tp_adam_step or
 * tp_tensor_assign under no_grad). Under no_grad the backend's runner
 * serves. An unknown, duplicate or non-float32 name, or one whose value the
 * import needs: an error naming it (the model unchanged). Calling it again
 * replaces the list (fresh tensors from the model's initializers). Clears
 * the cached specializations. */
tp_status tp_onnx_model_set_trainable(tp_onnx_model *m, int n, const char *const *names);
int tp_onnx_model_num_params(const tp_onnx_model *m);
const char *tp_onnx_model_param_name(const tp_onnx_model *m, int i);
/* Borrowed: lives as long as the model (or until the next set_trainable). */
tp_tensor *tp_onnx_model_param(const tp_onnx_model *m, int i);
/* The model as loaded, with each trainable parameter's initializer replaced
 * by its current value (every other byte unchanged); *bytes: tp_free_buffer. */
tp_status tp_onnx_model_save(const tp_onnx_model *m, uint8_t **bytes, size_t *len);

/* tp_onnx_save: a graph -> a serialized ModelProto (ir_version 8, default
 * opset 17, producer "tensorplay"; docs/onnx.md "Export"). Placeholders
 * become graph inputs with their dtype and shape, constants initializers,
 * the output node's operands the graph outputs. *bytes is owned by the
 * caller (tp_free_buffer). A node with no ONNX equivalent (call_host,
 * getitem, invoke: opaque host regions and nested compiled regions) is
 * TP_ERR_UNSUPPORTED naming the node and the op. */
tp_status tp_onnx_save(const tp_graph *g, uint8_t **bytes, size_t *len);
tp_status tp_onnx_save_file(const tp_graph *g, const char *path);
/* A serialized TensorProto (test data .pb files) <-> a tensor. encode: *out
 * is owned by the caller (tp_free_buffer). */
tp_status tp_onnx_tensor_decode(const void *bytes, size_t len, tp_tensor **out);
tp_status tp_onnx_tensor_encode(tp_tensor *t, const char *name, void **out, size_t *len);
tp_status tp_onnx_tensor_load(const char *path, tp_tensor **out);
tp_status tp_onnx_tensor_save(const char *path, tp_tensor *t);

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
