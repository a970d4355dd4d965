/* ops.c - operators through the ABI: the op table (names, arity) and
 * tpw_op, which takes the operator's tp_attrs as JS wrote it into memory.
 * The layout JS writes is this file's TPW_ATTR_FIELDS, read by JS once at
 * load time (tpw_attrs_layout), so the struct is described in one place. */
#include "handles.h"

#include <stddef.h>
#include <stdio.h>

int32_t tpw_op_count(void) { return TP_OP_COUNT; }
const char *tpw_op_name(int32_t op) { return tp_op_name((tp_op)op); }
int32_t tpw_op_arity(int32_t op) { return tp_op_arity((tp_op)op); }

/* The tp_attrs fields the host may write: name, "i" (a signed integer of
 * the field's width) or "f" (IEEE float of its width), element count. */
#define TPW_ATTR_FIELDS(X)    \
  X(ints, "i", TP_MAX_DIMS)   \
  X(nints, "i", 1)            \
  X(dim, "i", 1)              \
  X(dim1, "i", 1)             \
  X(start, "i", 1)            \
  X(end, "i", 1)              \
  X(step, "i", 1)             \
  X(eps, "f", 1)              \
  X(keepdim, "i", 1)          \
  X(reduction, "i", 1)        \
  X(largest, "i", 1)          \
  X(k, "i", 1)                \
  X(approximate, "i", 1)      \
  X(dtype, "i", 1)             \
  X(clip, "f", 1)             \
  X(floats, "f", TP_MAX_FLOATS) \
  X(nfloats, "i", 1)

const char *tpw_attrs_layout(void) {
  static char text[600];
  if (text[0]) return text;
  int k = snprintf(text, sizeof text, "%zu", sizeof(tp_attrs));
#define X(field, kind, count)                                                                   \
  if (k > 0 && (size_t)k < sizeof text)                                                          \
    k += snprintf(text + k, sizeof text - (size_t)k, ";%s:%s%zu:%d@%zu", #field, kind,            \
                  8 * sizeof(((tp_attrs *)0)->field) / (count), count, offsetof(tp_attrs, field));
  TPW_ATTR_FIELDS(X)
#undef X
  return text;
}

void tpw_attrs_init(tp_attrs *a) {
  if (a) tp_attrs_init(a);
}

uint32_t tpw_op(int32_t op, int32_t nin, const uint32_t *in, const tp_attrs *a) {
  if ((unsigned)op >= TP_OP_COUNT) {
    tp_fail(TP_ERR_INVALID_ARG, "unknown operator id %d", op);
    return 0;
  }
  if (nin < 0 || nin > TP_MAX_OPERANDS) {
    tp_fail(TP_ERR_INVALID_ARG, "%s: %d operands is out of range (0..%d)", tp_op_name((tp_op)op),
            nin, TP_MAX_OPERANDS);
    return 0;
  }
  tp_tensor *ts[TP_MAX_OPERANDS];
  for (int i = 0; i < nin; i++) {
    ts[i] = NULL;
    if (in[i] == 0) continue; /* absent optional operand */
    if (!(ts[i] = abi_handle_get(in[i], ABI_TENSOR))) {
      tp_fail_context(tp_last_status(), "%s: operand %d", tp_op_name((tp_op)op), i);
      return 0;
    }
  }
  tp_attrs at;
  tp_attrs_init(&at);
  if (a) {
    if (a->nints < 0 || a->nints > TP_MAX_DIMS) {
      tp_fail(TP_ERR_INVALID_ARG, "%s: %d attribute dims is out of range (0..%d)",
              tp_op_name((tp_op)op), a->nints, TP_MAX_DIMS);
      return 0;
    }
    if (a->nfloats < 0 || a->nfloats > TP_MAX_FLOATS) {
      tp_fail(TP_ERR_INVALID_ARG, "%s: %d attribute floats is out of range (0..%d)", tp_op_name((tp_op)op), a->nfloats,
              TP_MAX_FLOATS);
      return 0;
    }
    at = *a;
  }
  tp_tensor *y = NULL;
  return abi_wrap_tensor(tp_op_call((tp_op)op, nin, ts, &at, &y), &y);
}
