/* iter.c - broadcast iteration: align operand shapes to the output, give
 * broadcast dims stride 0, merge dims that are contiguous for every operand,
 * then walk the outer dims one inner run at a time. */
#include "ops.h"

void tp_iter_init(tp_iter *it, const tp_tensor *out, int nin, tp_tensor *const *in) {
  memset(it, 0, sizeof *it);
  it->nops = 1 + nin;
  int nd = out->ndim, k = 0;
  const tp_tensor *ops[4] = {out, nin > 0 ? in[0] : NULL, nin > 1 ? in[1] : NULL,
                             nin > 2 ? in[2] : NULL};
  for (int o = 0; o < it->nops; o++) it->off[o] = ops[o]->offset;
  if (tp_shape_numel(out->ndim, out->shape) == 0) { /* nothing to walk (its other dims may be huge) */
    it->nd = 1;
    return; /* shape[0] = inner = outer = 0 */
  }
  for (int d = 0; d < nd; d++) {
    if (out->shape[d] == 1) continue; /* size-1 dims never move */
    it->shape[k] = out->shape[d];
    for (int o = 0; o < it->nops; o++) {
      const tp_tensor *t = ops[o];
      int td = d - (nd - t->ndim);
      it->st[o][k] = (td < 0 || t->shape[td] == 1) ? 0 : t->strides[td];
    }
    k++;
  }
  /* merge dim k-1 into k when every operand is contiguous across them */
  int m = 0;
  for (int d = 0; d < k; d++) {
    if (m > 0) {
      int ok = 1;
      for (int o = 0; o < it->nops; o++)
        if (it->st[o][m - 1] != it->st[o][d] * it->shape[d]) ok = 0;
      if (ok) {
        it->shape[m - 1] *= it->shape[d];
        for (int o = 0; o < it->nops; o++) it->st[o][m - 1] = it->st[o][d];
        continue;
      }
    }
    it->shape[m] = it->shape[d];
    for (int o = 0; o < it->nops; o++) it->st[o][m] = it->st[o][d];
    m++;
  }
  if (m == 0) { /* all size 1: one element */
    it->shape[0] = tp_shape_numel(out->ndim, out->shape) ? 1 : 0;
    for (int o = 0; o < it->nops; o++) it->st[o][0] = 0;
    m = 1;
  }
  it->nd = m;
  it->inner = it->shape[m - 1];
  it->outer = it->inner ? tp_shape_numel(m - 1, it->shape) : 0;
}

void tp_iter_next(tp_iter *it) {
  for (int d = it->nd - 2; d >= 0; d--) {
    for (int o = 0; o < it->nops; o++) it->off[o] += it->st[o][d];
    if (++it->idx[d] < it->shape[d]) return;
    for (int o = 0; o < it->nops; o++) it->off[o] -= it->st[o][d] * it->shape[d];
    it->idx[d] = 0;
  }
}
