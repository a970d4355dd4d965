/* oppool.h - formulas composed of ordinary operator calls (tp_op_call):
 * the backward formulas (derivatives.c) and the losses (loss.c). Each call's
 * result goes into a pool of temporaries (gk, grown as needed) released
 * together when the formula returns (gk_done); a failed call makes every
 * later call return NULL, and the formula returns the first error (k.err). */
#ifndef TP_OPS_OPPOOL_H
#define TP_OPS_OPPOOL_H
#include "ops.h"
#include <string.h>

typedef struct gk {
  tp_tensor *inline_tmp[64];
  tp_tensor **tmp; /* inline_tmp, or a grown copy */
  int n, cap;
  tp_status err;
} gk;
#define GK_INIT {.n = 0}

/* t (the result of a call with status s) kept in the pool; NULL on error. */
static inline tp_tensor *keep(gk *k, tp_status s, tp_tensor *t) {
  if (s) {
    if (!k->err) k->err = s;
    return NULL;
  }
  if (!k->tmp) k->tmp = k->inline_tmp, k->cap = TP_ARRAY_LEN(k->inline_tmp);
  if (k->n == k->cap) {
    tp_tensor **b = tp_alloc(sizeof(tp_tensor *) * (size_t)k->cap * 2);
    if (!b) {
      tp_tensor_release(t);
      if (!k->err) k->err = TP_ERR_OUT_OF_MEMORY;
      return NULL;
    }
    memcpy(b, k->tmp, sizeof(tp_tensor *) * (size_t)k->n);
    if (k->tmp != k->inline_tmp) tp_free(k->tmp);
    k->tmp = b, k->cap *= 2;
  }
  return k->tmp[k->n++] = t;
}
static inline void gk_done(gk *k) {
  for (int i = 0; i < k->n; i++) tp_tensor_release(k->tmp[i]);
  if (k->tmp && k->tmp != k->inline_tmp) tp_free(k->tmp);
  k->tmp = NULL, k->n = 0;
}
static inline tp_tensor *call(gk *k, tp_op op, int n, tp_tensor **in, const tp_attrs *at) {
  if (k->err) return NULL;
  for (int i = 0; i < n; i++)
    if (!in[i]) return NULL;
  tp_tensor *y = NULL;
  tp_status s = tp_op_call(op, n, in, at, &y);
  return keep(k, s, y);
}
static inline tp_tensor *op2(gk *k, tp_op op, tp_tensor *a, tp_tensor *b) {
  tp_tensor *in[2] = {a, b};
  return call(k, op, 2, in, NULL);
}
#endif
