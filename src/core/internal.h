/* internal.h - shared internals of the core: errors, allocation, tensor
 * layout, descriptors. Not installed; everything under src/ may include it. */
#ifndef TP_INTERNAL_H
#define TP_INTERNAL_H

#include "../tensorplay.h"
#include "buf.h"
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>

#if defined(__wasm__) && !defined(__wasm_atomics__)
#define TP_THREAD_LOCAL /* single-threaded Wasm: plain globals */
#else
#define TP_THREAD_LOCAL _Thread_local
#endif

#define TP_ALIGN 64
#define TP_ARRAY_LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- errors (src/core/status.c) ---- */
/* Record a failure for tp_last_error and return s. printf-style message. */
tp_status tp_fail(tp_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Prefix the current message with "ctx: " (keeps the status). */
tp_status tp_fail_context(tp_status s, const char *fmt, ...);
void tp_assert_fail(const char *file, int line, const char *expr);
#define TP_ASSERT(e) ((e) ? (void)0 : tp_assert_fail(__FILE__, __LINE__, #e))
#define TP_TRY(expr)                  \
  do {                                \
    tp_status tp_try_s_ = (expr);     \
    if (tp_try_s_ != TP_OK) return tp_try_s_; \
  } while (0)

/* ---- logging (src/core/log.c): TP_LOGS=captures,recompiles,fallbacks|all ---- */
typedef enum tp_log_category { TP_LOG_CAPTURES, TP_LOG_RECOMPILES, TP_LOG_FALLBACKS, TP_LOG_COUNT } tp_log_category;
int tp_log_enabled(tp_log_category c);
void tp_log(tp_log_category c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- allocation (src/core/alloc.c): all core memory goes through here ---- */
void *tp_alloc_sized(size_t n);                 /* NULL + error on failure */
void *tp_calloc_sized(size_t n, size_t size);      /* zeroed; fresh zero pages are not written again */
/* bigalloc.c: blocks of TP_BIG_MIN bytes or more on WASI builds, straight
 * from memory.grow (elsewhere tp_big_alloc returns NULL: malloc serves). */
#define TP_BIG_MIN ((size_t)64 << 20)
void *tp_big_alloc(size_t n, int zero);
int tp_big_owns(const void *p);
void tp_big_free(void *p);
void *tp_realloc_sized(void *p, size_t old_n, size_t new_n);
void tp_free_sized(void *p, size_t n);
/* Untracked-size helpers for small objects: a size header is kept. */
void *tp_alloc(size_t n);
void *tp_realloc(void *p, size_t n);
void tp_free(void *p);
char *tp_strdup(const char *s);

/* ---- storage and tensors (src/core/tensor.c) ---- */
typedef struct tp_storage {
  int refs;
  size_t bytes;
  void *raw;   /* what the allocator returned */
  void *data;  /* 64-byte aligned */
  uint64_t version; /* bumped by every in-place write (autograd's saved-tensor check) */
} tp_storage;

struct tp_tensor {
  int refs;
  tp_dtype dtype;
  int ndim;
  int weak;                    /* a weak scalar made by tp_scalar */
  double wval;                  /* weak: the exact value given to tp_scalar */
  int64_t shape[TP_MAX_DIMS];
  int64_t strides[TP_MAX_DIMS]; /* elements */
  int64_t offset;               /* elements */
  tp_storage *storage;
  /* An opaque tag owned by the layer above ops that watches operator calls
   * (capture: the trace id and graph node while the tensor is a value of a
   * live trace). The core only initialises it (0, -1) and copies it with
   * the struct; it never reads it. */
  uint64_t trace_id;
  int node;
  /* Autograd (src/ops/autograd.c; docs/training.md). requires_grad: a leaf
   * the user marked, or a result recorded on the tape; grad: the
   * accumulated gradient of a leaf (owned); grad_fn: the tape node that made
   * this result (one reference, released through tp_grad_node_release_hook). */
  int requires_grad;
  tp_tensor *grad;
  struct tp_grad_node *grad_fn;
};
/* Installed by the ops layer (autograd.c) before it makes its first tape
 * node: how core drops a tensor's reference to its grad_fn. */
extern void (*tp_grad_node_release_hook)(struct tp_grad_node *n);

/* A shape/dtype descriptor: what shape rules and graph meta work on. */
typedef struct tp_desc {
  tp_dtype dtype;
  int ndim;
  int weak;
  int64_t shape[TP_MAX_DIMS];
} tp_desc;

int64_t tp_shape_numel(int ndim, const int64_t *shape);
void tp_desc_of(const tp_tensor *t, tp_desc *out);
int tp_desc_equal(const tp_desc *a, const tp_desc *b);
/* "[4,3]" into buf. */
const char *tp_shape_str(int ndim, const int64_t *shape, char *buf, size_t n);

/* New contiguous tensor with uninitialized data (the caller writes it all). */
tp_status tp_tensor_empty(tp_dtype dtype, int ndim, const int64_t *shape, tp_tensor **out);
/* A view sharing t's storage. */
tp_status tp_tensor_view(tp_tensor *t, int ndim, const int64_t *shape,
                         const int64_t *strides, int64_t offset, tp_tensor **out);
static inline void *tp_tensor_ptr(const tp_tensor *t) {
  return (char *)t->storage->data + (size_t)t->offset * tp_dtype_size(t->dtype);
}
/* Read element i (C order, any strides) as double / write. */
double tp_tensor_get_f64(const tp_tensor *t, int64_t i);
/* A weak scalar (tp_scalar) converted to dtype `to`: INVALID_ARG when an
 * integer dtype cannot hold its exact value (docs/reliability.md). OK for
 * tensors that are not weak scalars. */
tp_status tp_weak_check(const tp_tensor *t, tp_dtype to);
/* The elements of t (any layout) in C order into dst (numel * itemsize
 * bytes); no capture hook (internal readers: npy, graph text). */
void tp_tensor_gather(const tp_tensor *t, void *dst);
/* Copy src (any layout, any dtype) into contiguous dst of the same shape. */
void tp_tensor_copy_into(const tp_tensor *src, tp_tensor *dst);
int tp_dtype_is_float(tp_dtype d);
/* float16, bfloat16, int8, uint8: stored, computed in tp_dtype_compute's
 * dtype (float32 / int32); every other dtype computes as itself. */
int tp_dtype_is_storage(tp_dtype d);
tp_dtype tp_dtype_compute(tp_dtype d);

/* splitmix64 / xoshiro-based generator shared by randn and rand. */
typedef struct tp_rng { uint64_t s[4]; } tp_rng;
void tp_rng_seed(tp_rng *r, uint64_t seed);
uint64_t tp_rng_next(tp_rng *r);
float tp_rng_uniform(tp_rng *r);  /* [0,1) */
float tp_rng_normal(tp_rng *r);

/* ---- host functions (src/core/hostfn.c) ----
 * JS callbacks and C callables by id: what call_host nodes call. The Wasm
 * ABI installs the dispatcher for its ids; C programs register callables
 * with tp_host_fn_register (ids from TP_HOST_FN_C_BASE up). */
#define TP_HOST_FN_C_BASE ((int64_t)1 << 40)
typedef tp_status (*tp_host_dispatch_fn)(int64_t id, int nin, tp_tensor *const *in,
                                         int max_out, tp_tensor **outs, int *nout);
void tp_set_host_dispatch(tp_host_dispatch_fn fn);
tp_status tp_host_invoke(int64_t id, int nin, tp_tensor *const *in, int max_out,
                         tp_tensor **outs, int *nout);
tp_status tp_host_fn_register(const tp_callable *fn, int64_t *id);
void tp_host_fn_unregister(int64_t id);

/* ---- plain readers (src/core/tensor.c) ----
 * What the public tp_tensor_read / tp_tensor_item do, without the graph
 * break check: capture owns those public entry points (src/capture/reads.c)
 * and calls these after its read barrier. */
tp_status tp_tensor_read_plain(tp_tensor *t, void *dst, size_t bytes);
tp_status tp_tensor_item_plain(tp_tensor *t, double *out);

#endif
