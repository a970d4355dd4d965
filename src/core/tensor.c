/* tensor.c - dtypes, reference-counted 64-byte-aligned storage, tensors and
 * strided views, creation functions, reproducible random numbers.
 *
 * Threads: the statics are safe from any thread (the live counters are
 * atomic, the storage cache is locked). A tensor itself, with its storage's
 * reference count, belongs to one thread at a time (docs/architecture.md,
 * Threads). */
#include "internal.h"
#include "lock.h"
#include "num.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static size_t live_tensors, live_bytes, live_peak;
size_t tp_live_tensors(void) { return __atomic_load_n(&live_tensors, __ATOMIC_RELAXED); }
size_t tp_live_storage_bytes(void) { return __atomic_load_n(&live_bytes, __ATOMIC_RELAXED); }
size_t tp_live_storage_peak(int reset) {
  size_t p = __atomic_load_n(&live_peak, __ATOMIC_RELAXED);
  if (reset) __atomic_store_n(&live_peak, __atomic_load_n(&live_bytes, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
  return p;
}
/* the high-water mark of live_bytes after an increase to now */
static void peak_note(size_t now) {
  size_t p = __atomic_load_n(&live_peak, __ATOMIC_RELAXED);
  while (now > p && !__atomic_compare_exchange_n(&live_peak, &p, now, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}
#define LIVE_ADD(v, n) __atomic_fetch_add(&(v), (n), __ATOMIC_RELAXED)
#define LIVE_SUB(v, n) __atomic_fetch_sub(&(v), (n), __ATOMIC_RELAXED)

/* ---- dtypes ---- */
static const struct {
  const char *name, *short_name;
  size_t size;
} dtypes[TP_DTYPE_COUNT] = {
    {"float32", "f32", 4}, {"int32", "i32", 4},  {"int64", "i64", 8}, {"bool", "b8", 1},
    {"float16", "f16", 2}, {"bfloat16", "bf16", 2}, {"int8", "i8", 1},  {"uint8", "u8", 1}};

const char *tp_dtype_name(tp_dtype d) {
  return (unsigned)d < TP_DTYPE_COUNT ? dtypes[d].name : "unknown";
}
const char *tp_dtype_short(tp_dtype d) {
  return (unsigned)d < TP_DTYPE_COUNT ? dtypes[d].short_name : "??";
}
size_t tp_dtype_size(tp_dtype d) { return (unsigned)d < TP_DTYPE_COUNT ? dtypes[d].size : 0; }
int tp_dtype_is_float(tp_dtype d) { return d == TP_F32; }
int tp_dtype_is_storage(tp_dtype d) { return d == TP_F16 || d == TP_BF16 || d == TP_I8 || d == TP_U8; }
tp_dtype tp_dtype_compute(tp_dtype d) {
  return d == TP_F16 || d == TP_BF16 ? TP_F32 : d == TP_I8 || d == TP_U8 ? TP_I32 : d;
}

tp_status tp_dtype_parse(const char *s, tp_dtype *out) {
  if (!s) return tp_fail(TP_ERR_INVALID_ARG, "dtype: NULL name");
  for (int i = 0; i < TP_DTYPE_COUNT; i++)
    if (!strcmp(s, dtypes[i].name) || !strcmp(s, dtypes[i].short_name)) {
      *out = (tp_dtype)i;
      return TP_OK;
    }
  return tp_fail(TP_ERR_INVALID_ARG,
                 "unknown dtype '%s' (expected float32, int32, int64, bool, float16, bfloat16, int8 or uint8)", s);
}

/* ---- shapes ---- */
int64_t tp_shape_numel(int ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int i = 0; i < ndim; i++)
    if (shape[i] == 0) return 0;
  for (int i = 0; i < ndim; i++)
    if (__builtin_mul_overflow(n, shape[i], &n)) return INT64_MAX; /* saturate: no such allocation */
  return n;
}

const char *tp_shape_str(int ndim, const int64_t *shape, char *buf, size_t n) {
  size_t k = 0;
  k += (size_t)snprintf(buf + k, n - k, "[");
  for (int i = 0; i < ndim && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, i ? ",%lld" : "%lld", (long long)shape[i]);
  if (k < n) snprintf(buf + k, n - k, "]");
  return buf;
}

void tp_desc_of(const tp_tensor *t, tp_desc *out) {
  memset(out, 0, sizeof *out);
  out->dtype = t->dtype;
  out->ndim = t->ndim;
  out->weak = t->weak;
  memcpy(out->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
}

int tp_desc_equal(const tp_desc *a, const tp_desc *b) {
  if (a->dtype != b->dtype || a->ndim != b->ndim) return 0;
  for (int i = 0; i < a->ndim; i++)
    if (a->shape[i] != b->shape[i]) return 0;
  return 1;
}

static tp_status check_shape(int ndim, const int64_t *shape, int64_t *numel) {
  if (ndim < 0 || ndim > TP_MAX_DIMS)
    return tp_fail(TP_ERR_INVALID_ARG, "tensor: %d dims is out of range (0..%d)", ndim,
                   TP_MAX_DIMS);
  if (ndim && !shape) return tp_fail(TP_ERR_INVALID_ARG, "tensor: NULL shape");
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) {
    if (shape[i] < 0)
      return tp_fail(TP_ERR_INVALID_ARG, "tensor: dimension %d is negative (%lld)", i,
                     (long long)shape[i]);
    if (shape[i] && n > TP_MAX_NUMEL / shape[i])
      return tp_fail(TP_ERR_OUT_OF_MEMORY,
                     "tensor: dimension %d (%lld) takes the shape past 2^40 elements, the most "
                     "a tensor may hold", i, (long long)shape[i]);
    n *= shape[i];
  }
  *numel = n;
  return TP_OK;
}

/* ---- storage ----
 * Large blocks (>= 1 MiB) freed by tensors are kept in a small cache (8
 * blocks, 256 MiB at most) and handed out again for the same size: a graph
 * that runs repeatedly reuses its memory instead of mapping and faulting in
 * fresh pages every call. tp_release_cached_memory() empties it. */
#define CACHE_N 8
#define CACHE_MIN ((size_t)1 << 20)
#define CACHE_MAX ((size_t)256 << 20)
static struct { void *raw; size_t bytes; } cache[CACHE_N];
static size_t cache_total;
static tp_spinlock cache_lock = TP_SPINLOCK_INIT;

static void *cache_take(size_t bytes) {
  void *raw = NULL;
  if (bytes < CACHE_MIN) return NULL;
  tp_spin_lock(&cache_lock);
  for (int i = 0; i < CACHE_N && !raw; i++)
    if (cache[i].raw && cache[i].bytes == bytes) {
      raw = cache[i].raw;
      cache[i].raw = NULL;
      cache_total -= bytes;
    }
  tp_spin_unlock(&cache_lock);
  return raw;
}

static int cache_put(void *raw, size_t bytes) {
  int kept = 0;
  if (bytes < CACHE_MIN) return 0;
  tp_spin_lock(&cache_lock);
  for (int i = 0; i < CACHE_N && !kept; i++)
    if (!cache[i].raw && cache_total + bytes <= CACHE_MAX) {
      cache[i].raw = raw;
      cache[i].bytes = bytes;
      cache_total += bytes;
      kept = 1;
    }
  tp_spin_unlock(&cache_lock);
  return kept;
}

void tp_release_cached_memory(void) {
  tp_spin_lock(&cache_lock);
  for (int i = 0; i < CACHE_N; i++)
    if (cache[i].raw) {
      tp_free_sized(cache[i].raw, cache[i].bytes);
      cache[i].raw = NULL;
    }
  cache_total = 0;
  tp_spin_unlock(&cache_lock);
}

static tp_storage *storage_new(size_t bytes, int zero) {
  tp_storage *s = tp_alloc_sized(sizeof *s);
  if (!s) return NULL;
  int zeroed = 0;
  s->raw = cache_take(bytes + TP_ALIGN);
  if (!s->raw) {
    zeroed = zero; /* a zeroed block: fresh pages are not written twice */
    s->raw = zero ? tp_calloc_sized(bytes + TP_ALIGN, 1) : tp_alloc_sized(bytes + TP_ALIGN);
  }
  if (!s->raw) {
    tp_free_sized(s, sizeof *s);
    return NULL;
  }
  uintptr_t a = ((uintptr_t)s->raw + TP_ALIGN - 1) & ~(uintptr_t)(TP_ALIGN - 1);
  s->data = (void *)a;
  s->bytes = bytes;
  s->refs = 1;
  s->version = 0; /* no in-place write yet */
  if (zero && !zeroed) memset(s->data, 0, bytes);
  peak_note(LIVE_ADD(live_bytes, bytes) + bytes);
  return s;
}

static void storage_release(tp_storage *s) {
  if (!s || --s->refs > 0) return;
  LIVE_SUB(live_bytes, s->bytes);
  if (!cache_put(s->raw, s->bytes + TP_ALIGN)) tp_free_sized(s->raw, s->bytes + TP_ALIGN);
  tp_free_sized(s, sizeof *s);
}

static void set_contiguous_strides(tp_tensor *t) {
  int64_t st = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    t->strides[i] = st;
    /* an empty tensor may have other dims whose product overflows: saturate */
    if (__builtin_mul_overflow(st, t->shape[i], &st)) st = INT64_MAX;
  }
}

static tp_tensor *tensor_alloc(void) {
  tp_tensor *t = tp_alloc_sized(sizeof *t);
  if (!t) return NULL;
  memset(t, 0, sizeof *t);
  t->refs = 1;
  t->node = -1;
  LIVE_ADD(live_tensors, 1);
  return t;
}

static tp_status tensor_make(tp_dtype dtype, int ndim, const int64_t *shape, int zero,
                             tp_tensor **out) {
  int64_t numel = 0;
  if ((unsigned)dtype >= TP_DTYPE_COUNT)
    return tp_fail(TP_ERR_INVALID_ARG, "tensor: unknown dtype %d", (int)dtype);
  TP_TRY(check_shape(ndim, shape, &numel));
  /* On wasm32 size_t is 32 bits: a shape whose bytes do not fit the address
   * space must fail here, not wrap around to a small allocation. */
  if ((uint64_t)numel * tp_dtype_size(dtype) > (uint64_t)(SIZE_MAX - 2 * TP_ALIGN)) {
    char b[96];
    return tp_fail(TP_ERR_OUT_OF_MEMORY,
                   "tensor: %s %s needs %llu bytes, more than this build's address space",
                   tp_dtype_name(dtype), tp_shape_str(ndim, shape, b, sizeof b),
                   (unsigned long long)((uint64_t)numel * tp_dtype_size(dtype)));
  }
  tp_tensor *t = tensor_alloc();
  if (!t) return TP_ERR_OUT_OF_MEMORY;
  t->storage = storage_new((size_t)numel * tp_dtype_size(dtype), zero);
  if (!t->storage) {
    tp_free_sized(t, sizeof *t);
    LIVE_SUB(live_tensors, 1);
    return TP_ERR_OUT_OF_MEMORY;
  }
  t->dtype = dtype;
  t->ndim = ndim;
  if (ndim) memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
  set_contiguous_strides(t);
  *out = t;
  return TP_OK;
}

/* Uninitialized contents: every caller writes all elements. */
tp_status tp_tensor_empty(tp_dtype dtype, int ndim, const int64_t *shape, tp_tensor **out) {
  return tensor_make(dtype, ndim, shape, 0, out);
}

tp_status tp_tensor_new(tp_dtype dtype, int ndim, const int64_t *shape, const void *data,
                        tp_tensor **out) {
  if (!out) return tp_fail(TP_ERR_INVALID_ARG, "tensor: NULL output pointer");
  tp_tensor *t;
  TP_TRY(tensor_make(dtype, ndim, shape, data == NULL, &t));
  if (data) {
    memcpy(t->storage->data, data, t->storage->bytes);
    if (dtype == TP_BOOL) { /* canonicalize to 0/1 */
      uint8_t *p = t->storage->data;
      for (size_t i = 0; i < t->storage->bytes; i++) p[i] = p[i] != 0;
    }
  }
  *out = t;
  return TP_OK;
}

tp_status tp_tensor_view(tp_tensor *src, int ndim, const int64_t *shape,
                         const int64_t *strides, int64_t offset, tp_tensor **out) {
  tp_tensor *t = tensor_alloc();
  if (!t) return TP_ERR_OUT_OF_MEMORY;
  t->dtype = src->dtype;
  t->ndim = ndim;
  memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
  memcpy(t->strides, strides, sizeof(int64_t) * (size_t)ndim);
  t->offset = offset;
  t->storage = src->storage;
  t->storage->refs++;
  *out = t;
  return TP_OK;
}

void tp_tensor_retain(tp_tensor *t) {
  if (t) t->refs++;
}

void (*tp_grad_node_release_hook)(struct tp_grad_node *n);

void tp_tensor_release(tp_tensor *t) {
  if (!t || --t->refs > 0) return;
  if (t->grad_fn) tp_grad_node_release_hook(t->grad_fn);
  tp_tensor_release(t->grad);
  storage_release(t->storage);
  LIVE_SUB(live_tensors, 1);
  tp_free_sized(t, sizeof *t);
}

int tp_tensor_ndim(const tp_tensor *t) { return t->ndim; }
/* tp_tensor_shape, a read capture watches, is in src/capture/reads.c. */
const int64_t *tp_tensor_strides(const tp_tensor *t) { return t->strides; }
tp_dtype tp_tensor_dtype(const tp_tensor *t) { return t->dtype; }
int64_t tp_tensor_numel(const tp_tensor *t) { return tp_shape_numel(t->ndim, t->shape); }

int tp_tensor_is_contiguous(const tp_tensor *t) {
  int64_t st = 1;
  for (int i = t->ndim - 1; i >= 0; i--) {
    if (t->shape[i] != 1 && t->strides[i] != st) return 0;
    if (__builtin_mul_overflow(st, t->shape[i], &st)) st = INT64_MAX; /* as set_contiguous_strides */
  }
  return 1;
}

/* ---- element access ---- */
static int64_t elem_offset(const tp_tensor *t, int64_t i) {
  int64_t off = t->offset;
  for (int d = t->ndim - 1; d >= 0; d--) {
    int64_t n = t->shape[d];
    if (n == 0) return off;
    off += (i % n) * t->strides[d];
    i /= n;
  }
  return off;
}

static double load_f64(const void *base, tp_dtype dt, int64_t off) {
  switch (dt) {
    case TP_F32: return ((const float *)base)[off];
    case TP_I32: return ((const int32_t *)base)[off];
    case TP_I64: return (double)((const int64_t *)base)[off];
    case TP_F16: return tp_f16_to_f32(((const uint16_t *)base)[off]);
    case TP_BF16: return tp_bf16_to_f32(((const uint16_t *)base)[off]);
    case TP_I8: return ((const int8_t *)base)[off];
    default: return ((const uint8_t *)base)[off];
  }
}

double tp_tensor_get_f64(const tp_tensor *t, int64_t i) {
  return load_f64(t->storage->data, t->dtype, elem_offset(t, i));
}

/* Copy between any layouts and dtypes, iterating the innermost dim. */
void tp_tensor_copy_into(const tp_tensor *src, tp_tensor *dst) {
  int64_t n = tp_tensor_numel(src);
  if (!n) return;
  size_t es = tp_dtype_size(src->dtype);
  if (src->dtype == dst->dtype && tp_tensor_is_contiguous(src)) {
    memcpy(tp_tensor_ptr(dst), tp_tensor_ptr(src), (size_t)n * es);
    return;
  }
  int nd = src->ndim;
  int64_t inner = nd ? src->shape[nd - 1] : 1, ist = nd ? src->strides[nd - 1] : 1;
  const char *sb = src->storage->data;
  char *db = tp_tensor_ptr(dst);
  for (int64_t o = 0; o < n; o += inner) {
    int64_t so = elem_offset(src, o);
    if (src->dtype == dst->dtype) {
      if (ist == 1)
        memcpy(db + (size_t)o * es, sb + (size_t)so * es, (size_t)inner * es);
      else
        for (int64_t k = 0; k < inner; k++)
          memcpy(db + (size_t)(o + k) * es, sb + (size_t)(so + k * ist) * es, es);
      continue;
    }
    for (int64_t k = 0; k < inner; k++) {
      int64_t s = so + k * ist, di = o + k;
      /* integer sources as exact integers: int64 -> narrower ints wraps
       * (two's complement, as numpy, PyTorch and ONNX's reference) */
      int src_int = src->dtype == TP_I64 || src->dtype == TP_I32 || src->dtype == TP_I8 ||
                    src->dtype == TP_U8 || src->dtype == TP_BOOL;
      int64_t iv = src->dtype == TP_I64 ? ((const int64_t *)sb)[s] : 0;
      double v = src->dtype == TP_I64 ? 0 : load_f64(sb, src->dtype, s);
      if (src_int && src->dtype != TP_I64) iv = (int64_t)v;
      switch (dst->dtype) {
        case TP_F32: ((float *)db)[di] = src->dtype == TP_I64 ? (float)iv : (float)v; break;
        case TP_F16: /* float sources are exact floats: the bit-level rounding */
          ((uint16_t *)db)[di] = src_int ? tp_f64_to_f16(src->dtype == TP_I64 ? (double)iv : v) : tp_f32_to_f16((float)v);
          break;
        case TP_BF16: ((uint16_t *)db)[di] = tp_f64_to_bf16(src->dtype == TP_I64 ? (double)iv : v); break;
        case TP_I32:
          /* float -> int saturates, NaN -> 0 (num.h) */
          ((int32_t *)db)[di] = src_int ? (int32_t)(uint32_t)(uint64_t)iv : tp_f64_to_i32_sat(v);
          break;
        case TP_I64: ((int64_t *)db)[di] = src_int ? iv : tp_f64_to_i64_sat(v); break;
        case TP_I8: ((int8_t *)db)[di] = src_int ? (int8_t)(uint8_t)(uint64_t)iv : tp_f64_to_i8_sat(v); break;
        case TP_U8:
          ((uint8_t *)db)[di] = src_int ? (uint8_t)(uint64_t)iv : tp_f64_to_u8_sat(v);
          break;
        default: ((uint8_t *)db)[di] = src->dtype == TP_I64 ? iv != 0 : v != 0;
      }
    }
  }
}

tp_status tp_contiguous(tp_tensor *t, tp_tensor **out) {
  if (!t || !out) return tp_fail(TP_ERR_INVALID_ARG, "contiguous: NULL tensor");
  if (tp_tensor_is_contiguous(t)) {
    tp_tensor_retain(t);
    *out = t;
    return TP_OK;
  }
  tp_tensor *c;
  TP_TRY(tp_tensor_empty(t->dtype, t->ndim, t->shape, &c));
  tp_tensor_copy_into(t, c);
  *out = c;
  return TP_OK;
}

void tp_tensor_gather(const tp_tensor *t, void *dst) {
  size_t need = (size_t)tp_tensor_numel(t) * tp_dtype_size(t->dtype);
  if (!need) return;
  tp_tensor tmp = *t; /* a contiguous shell over dst for copy_into */
  tp_storage st = {1, need, dst, dst, 0};
  tmp.storage = &st;
  tmp.offset = 0;
  set_contiguous_strides(&tmp);
  tp_tensor_copy_into(t, &tmp);
}

/* The public tp_tensor_read and tp_tensor_item are in src/capture/reads.c:
 * they put capture's graph-break check in front of these. */
tp_status tp_tensor_read_plain(tp_tensor *t, void *dst, size_t bytes) {
  if (!t) return tp_fail(TP_ERR_INVALID_ARG, "read: NULL tensor");
  size_t need = (size_t)tp_tensor_numel(t) * tp_dtype_size(t->dtype);
  if (bytes != need)
    return tp_fail(TP_ERR_INVALID_ARG, "read: buffer has %zu bytes, tensor needs %zu", bytes,
                   need);
  if (!need) return TP_OK;
  if (!dst) return tp_fail(TP_ERR_INVALID_ARG, "read: NULL destination");
  tp_tensor_gather(t, dst);
  return TP_OK;
}

tp_status tp_tensor_item_plain(tp_tensor *t, double *out) {
  if (!t || !out) return tp_fail(TP_ERR_INVALID_ARG, "item: NULL argument");
  if (tp_tensor_numel(t) != 1) {
    char b[96];
    return tp_fail(TP_ERR_INVALID_ARG, "item: tensor of shape %s has %lld elements, expected 1",
                   tp_shape_str(t->ndim, t->shape, b, sizeof b), (long long)tp_tensor_numel(t));
  }
  *out = tp_tensor_get_f64(t, 0);
  return TP_OK;
}

/* ---- creation ---- */
tp_status tp_zeros(tp_dtype dtype, int ndim, const int64_t *shape, tp_tensor **out) {
  return tp_tensor_new(dtype, ndim, shape, NULL, out);
}

/* An integer tensor's element from a double: truncated toward zero; NaN,
 * +-Inf and values whose truncation does not fit the dtype are errors
 * (PyTorch's "value cannot be converted to type int32_t without
 * overflow"), never a wrapped or clamped number. */
/* v as JS prints it: whole numbers below 1e21 in full (9223372036854775808),
 * others in the shortest %g that reads back exactly. */
static const char *num_str(double v, char *b, size_t n) {
  if (v == floor(v) && fabs(v) < 1e21) {
    snprintf(b, n, "%.0f", v);
  } else {
    snprintf(b, n, "%.15g", v);
    if (strtod(b, NULL) != v) snprintf(b, n, "%.17g", v);
  }
  return b;
}

static tp_status check_int_value(const char *what, double v, tp_dtype dtype) {
  char b[40];
  if (tp_f64_fits_dtype(v, dtype)) return TP_OK;
  return tp_fail(TP_ERR_INVALID_ARG, "%s: value %s cannot be converted to %s without overflow",
                 what, num_str(v, b, sizeof b), tp_dtype_name(dtype));
}

tp_status tp_full(tp_dtype dtype, int ndim, const int64_t *shape, double v, tp_tensor **out) {
  tp_tensor *t;
  if ((unsigned)dtype < TP_DTYPE_COUNT) TP_TRY(check_int_value("full", v, dtype));
  if (v == 0 && !signbit(v)) return tp_tensor_new(dtype, ndim, shape, NULL, out); /* zeroed once, not twice */
  TP_TRY(tensor_make(dtype, ndim, shape, 0, &t)); /* every element is written below */
  int64_t n = tp_tensor_numel(t);
  void *p = t->storage->data;
  for (int64_t i = 0; i < n; i++) switch (dtype) {
      case TP_F32: ((float *)p)[i] = (float)v; break;
      case TP_I32: ((int32_t *)p)[i] = (int32_t)v; break; /* checked above */
      case TP_I64: ((int64_t *)p)[i] = (int64_t)v; break;
      case TP_F16: ((uint16_t *)p)[i] = tp_f64_to_f16(v); break;
      case TP_BF16: ((uint16_t *)p)[i] = tp_f64_to_bf16(v); break;
      case TP_I8: ((int8_t *)p)[i] = (int8_t)v; break; /* checked above */
      case TP_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
      default: ((uint8_t *)p)[i] = v != 0; break;
    }
  *out = t;
  return TP_OK;
}

tp_status tp_ones(tp_dtype dtype, int ndim, const int64_t *shape, tp_tensor **out) {
  return tp_full(dtype, ndim, shape, 1.0, out);
}

/* A weak int is stored as int64 when it is one, else (a whole number past
 * int64, from a host number such as 1e300) as float32; wval keeps the
 * exact value either way. Converting it to an integer dtype that cannot
 * hold wval is an error (tp_weak_check); to a float dtype it rounds. */
tp_status tp_scalar(double value, int is_int, tp_tensor **out) {
  tp_tensor *t;
  if (!out) return tp_fail(TP_ERR_INVALID_ARG, "scalar: NULL output pointer");
  char b[40];
  if (is_int && (value != value || value != floor(value)))
    return tp_fail(TP_ERR_INVALID_ARG, "scalar: %s is not a whole number, but is_int is set",
                   num_str(value, b, sizeof b));
  TP_TRY(tp_full(is_int && tp_f64_fits_i64(value) ? TP_I64 : TP_F32, 0, NULL, value, &t));
  t->weak = is_int ? 1 : 2; /* 1: weak int, 2: weak float */
  t->wval = value;
  *out = t;
  return TP_OK;
}

tp_status tp_weak_check(const tp_tensor *t, tp_dtype to) {
  char b[40];
  if (!t->weak || to == TP_F32 || to == TP_BOOL || tp_f64_fits_dtype(t->wval, to)) return TP_OK;
  return tp_fail(TP_ERR_INVALID_ARG,
                 "scalar %s does not fit %s: an integer scalar must fit the integer tensor's "
                 "dtype (cast the tensor, or use a float32 tensor for the scalar)",
                 num_str(t->wval, b, sizeof b), tp_dtype_name(to));
}

tp_status tp_arange(double start, double end, double step, tp_dtype dtype, tp_tensor **out) {
  if (step == 0 || step != step)
    return tp_fail(TP_ERR_INVALID_ARG, "arange: step must be nonzero (got %g)", step);
  double nf = ceil((end - start) / step);
  if (nf != nf || nf > (double)TP_MAX_NUMEL)
    return tp_fail(TP_ERR_INVALID_ARG, "arange: range [%g, %g) step %g is too large", start,
                   end, step);
  int64_t n = nf > 0 ? (int64_t)nf : 0;
  if (dtype == TP_BOOL) return tp_fail(TP_ERR_INVALID_ARG, "arange: dtype bool is not supported");
  if ((unsigned)dtype >= TP_DTYPE_COUNT)
    return tp_fail(TP_ERR_INVALID_ARG, "arange: unknown dtype %d", (int)dtype);
  if (n) { /* the values run monotonically from the first to the last */
    TP_TRY(check_int_value("arange", start, dtype));
    TP_TRY(check_int_value("arange", start + (double)(n - 1) * step, dtype));
  }
  tp_tensor *t;
  if (dtype == TP_F16 || dtype == TP_BF16 || dtype == TP_I8 || dtype == TP_U8) {
    /* storage dtypes: computed in float32 / int32, rounded once */
    tp_tensor *w;
    TP_TRY(tp_arange(start, end, step, dtype == TP_F16 || dtype == TP_BF16 ? TP_F32 : TP_I32, &w));
    tp_status s = tp_tensor_new(dtype, 1, &n, NULL, &t);
    if (!s) tp_tensor_copy_into(w, t);
    tp_tensor_release(w);
    if (s) return s;
    *out = t;
    return TP_OK;
  }
  TP_TRY(tp_tensor_new(dtype, 1, &n, NULL, &t));
  for (int64_t i = 0; i < n; i++) {
    double v = start + (double)i * step;
    switch (dtype) {
      case TP_F32: ((float *)t->storage->data)[i] = (float)v; break;
      case TP_I32: ((int32_t *)t->storage->data)[i] = tp_f64_to_i32_sat(v); break;
      default: ((int64_t *)t->storage->data)[i] = tp_f64_to_i64_sat(v); break;
    }
  }
  *out = t;
  return TP_OK;
}

/* xoshiro256** seeded by splitmix64: same numbers on every build. */
static uint64_t splitmix(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}
void tp_rng_seed(tp_rng *r, uint64_t seed) {
  for (int i = 0; i < 4; i++) r->s[i] = splitmix(&seed);
}
static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
uint64_t tp_rng_next(tp_rng *r) {
  uint64_t *s = r->s, res = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return res;
}
float tp_rng_uniform(tp_rng *r) { return (float)(tp_rng_next(r) >> 40) * (1.0f / 16777216.0f); }
float tp_rng_normal(tp_rng *r) {
  /* Box-Muller in double so results do not depend on libm float variants. */
  double u1 = ((double)(tp_rng_next(r) >> 11) + 1.0) * (1.0 / 9007199254740992.0);
  double u2 = (double)(tp_rng_next(r) >> 11) * (1.0 / 9007199254740992.0);
  return (float)(sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2));
}

static tp_status random_tensor(int normal, int ndim, const int64_t *shape, uint64_t seed,
                               tp_tensor **out) {
  tp_tensor *t;
  TP_TRY(tp_tensor_new(TP_F32, ndim, shape, NULL, &t));
  tp_rng r;
  tp_rng_seed(&r, seed);
  float *p = t->storage->data;
  int64_t n = tp_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) p[i] = normal ? tp_rng_normal(&r) : tp_rng_uniform(&r);
  *out = t;
  return TP_OK;
}
tp_status tp_randn(int ndim, const int64_t *shape, uint64_t seed, tp_tensor **out) {
  return random_tensor(1, ndim, shape, seed, out);
}
tp_status tp_rand(int ndim, const int64_t *shape, uint64_t seed, tp_tensor **out) {
  return random_tensor(0, ndim, shape, seed, out);
}
