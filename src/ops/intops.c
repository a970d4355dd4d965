/* intops.c - the integer-only elementwise ops of ops.def: mod (the
 * divisor's sign, Python's %), fmod (the dividend's sign, C's %),
 * bitwise_and / bitwise_or / bitwise_xor / bitwise_not, on int32 and
 * int64. A zero divisor is a run-time error naming the element; the one
 * quotient that overflows (INT_MIN by -1) never runs: its remainder is 0.
 * The eager kernel walks the broadcast iterator; the reference walks flat
 * output indices and computes the remainder from the floored quotient. */
#include "ops.h"
#include <stdio.h>

static int is_binary(tp_op op) { return op != TP_OP_BITWISE_NOT; }

/* one element of the eager kernel, in int64 (int32 values fit) */
static int64_t eval(tp_op op, int64_t x, int64_t z) {
  switch (op) {
    case TP_OP_MOD: {
      if (z == -1) return 0;
      int64_t r = x % z;
      return (r != 0 && (r < 0) != (z < 0)) ? r + z : r;
    }
    case TP_OP_FMOD: return z == -1 ? 0 : x % z;
    case TP_OP_BITWISE_AND: return x & z;
    case TP_OP_BITWISE_OR: return x | z;
    case TP_OP_BITWISE_XOR: return x ^ z;
    default: return ~x;
  }
}

/* any integer (or bool) element: the reference reads operands of every
 * integer dtype as they are (an int8 operand of an int32 bitwise_and was
 * read as int64 past its end; found by the differential tests) */
static int64_t load(const tp_tensor *t, int64_t off) {
  const void *p = t->storage->data;
  switch (t->dtype) {
    case TP_I32: return ((const int32_t *)p)[off];
    case TP_I8: return ((const int8_t *)p)[off];
    case TP_U8: case TP_BOOL: return ((const uint8_t *)p)[off];
    default: return ((const int64_t *)p)[off];
  }
}

/* wraps to the result's integer dtype (two's complement, as ONNX) */
static void store(tp_tensor *t, int64_t off, int64_t v) {
  void *p = t->storage->data;
  switch (t->dtype) {
    case TP_I32: ((int32_t *)p)[off] = (int32_t)(uint32_t)(uint64_t)v; break;
    case TP_I8: ((int8_t *)p)[off] = (int8_t)(uint8_t)(uint64_t)v; break;
    case TP_U8: case TP_BOOL: ((uint8_t *)p)[off] = (uint8_t)(uint64_t)v; break;
    default: ((int64_t *)p)[off] = v; break;
  }
}

static tp_status zero_divisor(tp_op op, const tp_desc *od, int64_t flat) {
  int64_t idx[TP_MAX_DIMS];
  char buf[160];
  size_t k = 0;
  for (int d = od->ndim - 1; d >= 0; d--) {
    idx[d] = od->shape[d] ? flat % od->shape[d] : 0;
    flat = od->shape[d] ? flat / od->shape[d] : 0;
  }
  buf[0] = 0;
  for (int d = 0; d < od->ndim && k < sizeof buf - 24; d++)
    k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%lld", d ? "," : "", (long long)idx[d]);
  return tp_fail(TP_ERR_INVALID_ARG, "%s: integer division by zero (the divisor at output index [%s] is 0)",
                 tp_op_name(op), buf);
}

tp_status tp_intop_exec(tp_op op, tp_tensor *const *in, const tp_desc *od, tp_tensor **out) {
  int nin = is_binary(op) ? 2 : 1;
  tp_tensor *x[2] = {NULL, NULL}, *y = NULL;
  tp_status s = TP_OK;
  for (int i = 0; i < nin && !s; i++) s = tp_to_dtype(in[i], od->dtype, &x[i]);
  if (!s) s = tp_tensor_empty(od->dtype, od->ndim, od->shape, &y);
  if (s) goto done;
  tp_iter it;
  tp_iter_init(&it, y, nin, x);
  int n = it.nd - 1;
  int div = op == TP_OP_MOD || op == TP_OP_FMOD;
  for (int64_t r = 0; r < it.outer && !s; r++, tp_iter_next(&it))
    for (int64_t i = 0; i < it.inner; i++) {
      int64_t a = load(x[0], it.off[1] + i * it.st[1][n]);
      int64_t b = nin == 2 ? load(x[1], it.off[2] + i * it.st[2][n]) : 0;
      if (div && b == 0) {
        s = zero_divisor(op, od, r * it.inner + i);
        break;
      }
      store(y, it.off[0] + i * it.st[0][n], eval(op, a, b));
    }
  if (!s) *out = y, y = NULL;
done:
  tp_tensor_release(x[0]);
  tp_tensor_release(x[1]);
  tp_tensor_release(y);
  return s;
}

/* element of t broadcast to output flat index i (any int dtype) */
static int64_t at_bcast_i64(const tp_tensor *t, const tp_desc *od, int64_t i) {
  int64_t off = t->offset;
  for (int d = od->ndim - 1; d >= 0; d--) {
    int64_t c = od->shape[d] ? i % od->shape[d] : 0;
    i = od->shape[d] ? i / od->shape[d] : 0;
    int td = d - (od->ndim - t->ndim);
    if (td >= 0 && t->shape[td] != 1) off += c * t->strides[td];
  }
  return load(t, off);
}

tp_status tp_intop_ref(tp_op op, tp_tensor *const *in, const tp_desc *od, tp_tensor **out) {
  tp_tensor *y;
  TP_TRY(tp_tensor_empty(od->dtype, od->ndim, od->shape, &y));
  int64_t n = tp_tensor_numel(y);
  for (int64_t i = 0; i < n; i++) {
    int64_t a = at_bcast_i64(in[0], od, i), b = is_binary(op) ? at_bcast_i64(in[1], od, i) : 0, v;
    if ((op == TP_OP_MOD || op == TP_OP_FMOD) && b == 0) {
      tp_tensor_release(y);
      return zero_divisor(op, od, i);
    }
    if (od->dtype == TP_I32) a = (int32_t)a, b = (int32_t)b;
    switch (op) {
      case TP_OP_MOD: case TP_OP_FMOD: {
        /* truncated quotient, floored for mod when the signs differ and
         * the division is inexact; |b| = 1 leaves no remainder */
        if (b == 1 || b == -1) { v = 0; break; }
        int64_t q = a / b;
        if (op == TP_OP_MOD && q * b != a && ((a < 0) != (b < 0))) q -= 1;
        v = (int64_t)((uint64_t)a - (uint64_t)q * (uint64_t)b); /* fits; only the product may wrap */
        break;
      }
      case TP_OP_BITWISE_AND: v = a & b; break;
      case TP_OP_BITWISE_OR: v = a | b; break;
      case TP_OP_BITWISE_XOR: v = a ^ b; break;
      default: v = a >= 0 ? -a - 1 : -(a + 1); break; /* ~a in two's complement */
    }
    store(y, i, v);
  }
  *out = y;
  return TP_OK;
}
