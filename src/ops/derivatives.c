/* derivatives.c - the backward formulas of derivatives.def, one function
 * per row, each built from ordinary operator calls (tp_op_call) so that a
 * backward pass is a graph of the same ops as a forward one. Temporaries
 * live in the pool of oppool.h (gk), released when the formula returns; a
 * failed call makes every later helper return NULL and the formula returns
 * the first error. */
#include "autograd.h"
#include "oppool.h"
#include <math.h>
#include <stdlib.h>

/* Store t as operand i's gradient (a new reference). */
static void put(gk *k, tp_tensor **gin, int i, tp_tensor *t) {
  if (!t || k->err) return;
  tp_tensor_retain(t);
  gin[i] = t;
}
static tp_tensor *op1(gk *k, tp_op op, tp_tensor *a) { return call(k, op, 1, &a, NULL); }
static tp_tensor *op1a(gk *k, tp_op op, tp_tensor *a, const tp_attrs *at) { return call(k, op, 1, &a, at); }
static tp_tensor *op3a(gk *k, tp_op op, tp_tensor *a, tp_tensor *b, tp_tensor *c, const tp_attrs *at) {
  tp_tensor *in[3] = {a, b, c};
  return call(k, op, 3, in, at);
}
static tp_tensor *add(gk *k, tp_tensor *a, tp_tensor *b) { return op2(k, TP_OP_ADD, a, b); }
static tp_tensor *sub(gk *k, tp_tensor *a, tp_tensor *b) { return op2(k, TP_OP_SUB, a, b); }
static tp_tensor *mul(gk *k, tp_tensor *a, tp_tensor *b) { return op2(k, TP_OP_MUL, a, b); }
static tp_tensor *dv(gk *k, tp_tensor *a, tp_tensor *b) { return op2(k, TP_OP_DIV, a, b); }
static tp_tensor *sc(gk *k, double v) {
  tp_tensor *t = NULL;
  if (k->err) return NULL;
  tp_status s = tp_scalar(v, 0, &t);
  return keep(k, s, t);
}
static tp_tensor *mulc(gk *k, tp_tensor *a, double v) { return mul(k, a, sc(k, v)); }
static tp_tensor *zeros(gk *k, tp_dtype dt, int nd, const int64_t *shape) {
  tp_tensor *t = NULL;
  if (k->err) return NULL;
  tp_status s = tp_zeros(dt, nd, shape, &t);
  return keep(k, s, t);
}
static tp_tensor *reshape(gk *k, tp_tensor *a, int nd, const int64_t *shape) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.nints = nd;
  if (nd) memcpy(at.ints, shape, sizeof(int64_t) * (size_t)nd);
  return op1a(k, TP_OP_RESHAPE, a, &at);
}
static tp_tensor *transpose(gk *k, tp_tensor *a, int64_t d0, int64_t d1) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = d0;
  at.dim1 = d1;
  return op1a(k, TP_OP_TRANSPOSE, a, &at);
}
/* sum over the dims set in mask, kept as 1s */
static tp_tensor *sum_mask(gk *k, tp_op op, tp_tensor *a, int nd, int mask) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.keepdim = 1;
  for (int d = 0; d < nd; d++)
    if (mask & (1 << d)) at.ints[at.nints++] = d;
  return op1a(k, op, a, &at);
}
static tp_tensor *slice(gk *k, tp_tensor *a, int64_t dim, int64_t start, int64_t end) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = dim, at.start = start, at.end = end, at.step = 1;
  return op1a(k, TP_OP_SLICE, a, &at);
}
static tp_tensor *concat(gk *k, int n, tp_tensor **parts, int64_t dim) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = dim;
  return call(k, TP_OP_CONCAT, n, parts, &at);
}
static tp_tensor *as_f32(gk *k, tp_tensor *a) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.dtype = TP_F32;
  return op1a(k, TP_OP_CAST, a, &at);
}
/* The mask of dims a reduction's attributes name (none: all) over nd dims. */
static int reduce_dims(gk *k, const tp_attrs *at, int nd) {
  if (!at->nints) return nd >= 31 ? -1 : (1 << nd) - 1;
  int mask = 0;
  for (int i = 0; i < at->nints; i++) {
    int64_t d;
    tp_status s = tp_norm_dim("autograd", at->ints[i], nd, &d);
    if (s) {
      if (!k->err) k->err = s;
      return 0;
    }
    mask |= 1 << d;
  }
  return mask;
}
/* g of a reduction over mask (keepdim or not) reshaped to keep its dims as 1s. */
static tp_tensor *unreduce(gk *k, tp_tensor *g, const tp_grad_shape *x, int mask) {
  int64_t shape[TP_MAX_DIMS];
  for (int d = 0; d < x->ndim; d++) shape[d] = (mask & (1 << d)) ? 1 : x->shape[d];
  return reshape(k, g, x->ndim, shape);
}
static tp_tensor *expand(gk *k, tp_tensor *g, const tp_grad_shape *x) {
  return add(k, zeros(k, TP_F32, x->ndim, x->shape), g);
}

#define F(name) static tp_status name(const tp_grad_ctx *c, tp_tensor **gin)
#define BEGIN gk k_ = GK_INIT, *k = &k_; tp_tensor *g = c->g, *const *in = c->in; (void)in; (void)g
#define END return (gk_done(k), k->err)
#define NEED(i) (c->needs[i])

F(d_add) { BEGIN; put(k, gin, 0, g); put(k, gin, 1, g); END; }
F(d_sub) { BEGIN; put(k, gin, 0, g); if (NEED(1)) put(k, gin, 1, op1(k, TP_OP_NEG, g)); END; }
F(d_mul) {
  BEGIN;
  if (NEED(0)) put(k, gin, 0, mul(k, g, in[1]));
  if (NEED(1)) put(k, gin, 1, mul(k, g, in[0]));
  END;
}
F(d_div) {
  BEGIN;
  if (NEED(0)) put(k, gin, 0, dv(k, g, in[1]));
  if (NEED(1)) put(k, gin, 1, op1(k, TP_OP_NEG, dv(k, mul(k, g, in[0]), mul(k, in[1], in[1]))));
  END;
}
F(d_where) {
  BEGIN;
  tp_tensor *z = sc(k, 0.0);
  if (NEED(1)) put(k, gin, 1, op3a(k, TP_OP_WHERE, in[0], g, z, NULL));
  if (NEED(2)) put(k, gin, 2, op3a(k, TP_OP_WHERE, in[0], z, g, NULL));
  END;
}
F(d_neg) { BEGIN; put(k, gin, 0, op1(k, TP_OP_NEG, g)); END; }
F(d_abs) {
  BEGIN;
  tp_tensor *z = sc(k, 0.0);
  tp_tensor *sign = sub(k, as_f32(k, op2(k, TP_OP_GT, in[0], z)), as_f32(k, op2(k, TP_OP_LT, in[0], z)));
  put(k, gin, 0, mul(k, g, sign));
  END;
}
F(d_exp) { BEGIN; put(k, gin, 0, mul(k, g, c->out)); END; }
F(d_log) { BEGIN; put(k, gin, 0, dv(k, g, in[0])); END; }
F(d_sqrt) { BEGIN; put(k, gin, 0, dv(k, g, mulc(k, c->out, 2.0))); END; }
F(d_rsqrt) {
  BEGIN;
  tp_tensor *y = c->out;
  put(k, gin, 0, mul(k, g, mulc(k, mul(k, y, mul(k, y, y)), -0.5)));
  END;
}
F(d_tanh) {
  BEGIN;
  put(k, gin, 0, mul(k, g, sub(k, sc(k, 1.0), mul(k, c->out, c->out))));
  END;
}
F(d_sigmoid) {
  BEGIN;
  put(k, gin, 0, mul(k, g, mul(k, c->out, sub(k, sc(k, 1.0), c->out))));
  END;
}
F(d_relu) {
  BEGIN;
  /* y > 0 exactly where a > 0 (NaN: neither): the result is saved, which
   * the next layer's GEMM saves anyway, not the input too */
  put(k, gin, 0, op3a(k, TP_OP_WHERE, op2(k, TP_OP_GT, c->out, sc(k, 0.0)), g, sc(k, 0.0), NULL));
  END;
}
F(d_gelu) {
  BEGIN;
  tp_tensor *a = in[0], *d;
  if (c->at->approximate) {
    /* y = a/2 (1 + tanh u), u = sqrt(2/pi) (a + 0.044715 a^3) */
    const double s2p = sqrt(2.0 / M_PI);
    tp_tensor *a2 = mul(k, a, a);
    tp_tensor *u = mulc(k, add(k, a, mulc(k, mul(k, a2, a), 0.044715)), s2p);
    tp_tensor *t = op1(k, TP_OP_TANH, u);
    tp_tensor *du = mulc(k, add(k, sc(k, 1.0), mulc(k, a2, 3 * 0.044715)), s2p);
    tp_tensor *left = mulc(k, add(k, sc(k, 1.0), t), 0.5);
    tp_tensor *right = mul(k, mulc(k, a, 0.5), mul(k, sub(k, sc(k, 1.0), mul(k, t, t)), du));
    d = add(k, left, right);
  } else {
    /* Phi(a) + a phi(a) */
    tp_tensor *cdf = mulc(k, add(k, sc(k, 1.0), op1(k, TP_OP_ERF, mulc(k, a, M_SQRT1_2))), 0.5);
    tp_tensor *pdf = mulc(k, op1(k, TP_OP_EXP, mulc(k, mul(k, a, a), -0.5)), 1.0 / sqrt(2.0 * M_PI));
    d = add(k, cdf, mul(k, a, pdf));
  }
  put(k, gin, 0, mul(k, g, d));
  END;
}
F(d_matmul) {
  BEGIN;
  tp_tensor *a = in[0], *b = in[1];
  int a1 = a->ndim == 1, b1 = b->ndim == 1;
  int64_t sh[TP_MAX_DIMS + 2];
  int nd = 0;
  if (a1 && b1) {
    /* dot product: g is a scalar */
    if (NEED(0)) put(k, gin, 0, mul(k, g, b));
    if (NEED(1)) put(k, gin, 1, mul(k, g, a));
    END;
  }
  tp_tensor *a2 = a1 ? reshape(k, a, 2, (int64_t[]){1, a->shape[0]}) : a;
  tp_tensor *b2 = b1 ? reshape(k, b, 2, (int64_t[]){b->shape[0], 1}) : b;
  for (int d = 0; d < g->ndim; d++) {
    if (a1 && d == g->ndim - 1) sh[nd++] = 1; /* M */
    sh[nd++] = g->shape[d];
  }
  if (b1) sh[nd++] = 1; /* N */
  tp_tensor *g2 = reshape(k, g, nd, sh);
  if (NEED(0)) {
    tp_tensor *ga = op2(k, TP_OP_MATMUL, g2, transpose(k, b2, -1, -2)); /* [..., M, K] */
    if (a1 && ga) { /* drop M */
      int64_t s2[TP_MAX_DIMS];
      for (int d = 0; d < ga->ndim - 2; d++) s2[d] = ga->shape[d];
      s2[ga->ndim - 2] = ga->shape[ga->ndim - 1];
      ga = reshape(k, ga, ga->ndim - 1, s2);
    }
    put(k, gin, 0, ga);
  }
  if (NEED(1) && b2 && b2->ndim == 2 && a2 && a2->ndim > 2) {
    /* b broadcast over a's batch dims (a weight): one GEMM over the batch
     * and rows together, a^T [K, B*M] @ g [B*M, N], instead of a batched
     * GEMM whose results are then summed over the batch */
    int64_t K = a2->shape[a2->ndim - 1], N = b2->shape[1];
    tp_tensor *af = reshape(k, a2, 2, (int64_t[]){-1, K}), *gf = reshape(k, g2, 2, (int64_t[]){-1, N});
    tp_tensor *gb = op2(k, TP_OP_MATMUL, transpose(k, af, 0, 1), gf); /* [K, N] */
    if (b1 && gb) gb = reshape(k, gb, 1, gb->shape); /* drop N */
    put(k, gin, 1, gb);
  } else if (NEED(1)) {
    tp_tensor *gb = op2(k, TP_OP_MATMUL, transpose(k, a2, -1, -2), g2); /* [..., K, N] */
    if (b1 && gb) gb = reshape(k, gb, gb->ndim - 1, gb->shape); /* drop N */
    put(k, gin, 1, gb);
  }
  END;
}
F(d_linear) {
  BEGIN;
  tp_tensor *x = in[0], *w = in[1];
  int64_t out = w->shape[0], inf = w->shape[1];
  if (NEED(0)) put(k, gin, 0, op2(k, TP_OP_MATMUL, g, w));
  if (NEED(1)) {
    tp_tensor *g2 = reshape(k, g, 2, (int64_t[]){-1, out});
    tp_tensor *x2 = reshape(k, x, 2, (int64_t[]){-1, inf});
    put(k, gin, 1, op2(k, TP_OP_MATMUL, transpose(k, g2, 0, 1), x2));
  }
  if (c->nin > 2 && in[2] && NEED(2)) put(k, gin, 2, g);
  END;
}
F(d_sum) {
  BEGIN;
  const tp_grad_shape *x = &c->shapes[0];
  int mask = reduce_dims(k, c->at, x->ndim);
  tp_tensor *r = expand(k, unreduce(k, g, x, mask), x);
  if (c->op == TP_OP_MEAN) {
    int64_t cnt = 1;
    for (int d = 0; d < x->ndim; d++)
      if (mask & (1 << d)) cnt *= x->shape[d];
    r = mulc(k, r, cnt ? 1.0 / (double)cnt : 0.0);
  }
  put(k, gin, 0, r);
  END;
}
F(d_mean) { return d_sum(c, gin); }
F(d_maxmin) {
  BEGIN;
  const tp_grad_shape *x = &c->shapes[0];
  int mask = reduce_dims(k, c->at, x->ndim);
  tp_tensor *yk = unreduce(k, c->out, x, mask), *gk_ = unreduce(k, g, x, mask);
  tp_tensor *m = as_f32(k, op2(k, TP_OP_EQ, in[0], yk));
  tp_tensor *cnt = sum_mask(k, TP_OP_SUM, m, x->ndim, mask);
  put(k, gin, 0, dv(k, mul(k, m, gk_), cnt));
  END;
}
F(d_softmax) {
  BEGIN;
  tp_attrs at;
  tp_attrs_init(&at);
  at.ints[0] = c->at->dim, at.nints = 1, at.keepdim = 1;
  tp_tensor *y = c->out;
  put(k, gin, 0, mul(k, y, sub(k, g, op1a(k, TP_OP_SUM, mul(k, g, y), &at))));
  END;
}
F(d_log_softmax) {
  BEGIN;
  tp_attrs at;
  tp_attrs_init(&at);
  at.ints[0] = c->at->dim, at.nints = 1, at.keepdim = 1;
  put(k, gin, 0, sub(k, g, mul(k, op1(k, TP_OP_EXP, c->out), op1a(k, TP_OP_SUM, g, &at))));
  END;
}
F(d_layer_norm) {
  BEGIN;
  tp_tensor *x = in[0], *w = c->nin > 1 ? in[1] : NULL;
  int nd = x->ndim, mask = 0;
  for (int i = 0; i < c->at->nints; i++) mask |= 1 << (nd - 1 - i);
  tp_tensor *mu = sum_mask(k, TP_OP_MEAN, x, nd, mask);
  tp_tensor *xc = sub(k, x, mu);
  tp_tensor *var = sum_mask(k, TP_OP_MEAN, mul(k, xc, xc), nd, mask);
  tp_tensor *rstd = op1(k, TP_OP_RSQRT, add(k, var, sc(k, c->at->eps)));
  tp_tensor *xh = mul(k, xc, rstd);
  if (w && NEED(1)) put(k, gin, 1, mul(k, g, xh));
  if (c->nin > 2 && in[2] && NEED(2)) put(k, gin, 2, g);
  if (NEED(0)) {
    tp_tensor *gxh = w ? mul(k, g, w) : g;
    tp_tensor *m1 = sum_mask(k, TP_OP_MEAN, gxh, nd, mask);
    tp_tensor *m2 = sum_mask(k, TP_OP_MEAN, mul(k, gxh, xh), nd, mask);
    put(k, gin, 0, mul(k, rstd, sub(k, sub(k, gxh, m1), mul(k, xh, m2))));
  }
  END;
}
F(d_reshape) { BEGIN; put(k, gin, 0, reshape(k, g, c->shapes[0].ndim, c->shapes[0].shape)); END; }
F(d_transpose) { BEGIN; put(k, gin, 0, transpose(k, g, c->at->dim, c->at->dim1)); END; }
F(d_permute) {
  BEGIN;
  tp_attrs at;
  tp_attrs_init(&at);
  int nd = c->shapes[0].ndim;
  at.nints = nd;
  for (int i = 0; i < nd; i++) {
    int64_t p = c->at->ints[i] < 0 ? c->at->ints[i] + nd : c->at->ints[i];
    at.ints[p] = i;
  }
  put(k, gin, 0, op1a(k, TP_OP_PERMUTE, g, &at));
  END;
}
static tp_tensor *dilate(gk *k, tp_tensor *t, int d, int64_t s);
static tp_tensor *pad_crop(gk *k, tp_tensor *t, int d, int64_t before, int64_t after, double fill);
F(d_slice) {
  BEGIN;
  const tp_grad_shape *x = &c->shapes[0];
  int64_t d, s0, len, step = c->at->step;
  if ((k->err = tp_norm_dim("slice", c->at->dim, x->ndim, &d))) END;
  int64_t n = x->shape[d];
  tp_slice_bounds(n, c->at->start, c->at->end, step, &s0, &len);
  if (len == 0) {
    put(k, gin, 0, zeros(k, TP_F32, x->ndim, x->shape));
    END;
  }
  /* g's rows back at s0, s0 + step, ...: step - 1 zeros between them, then
   * zeros before and after up to n */
  int64_t span = (len - 1) * step + 1;
  put(k, gin, 0, pad_crop(k, dilate(k, g, (int)d, step), (int)d, s0, n - s0 - span, 0.0));
  END;
}
F(d_concat) {
  BEGIN;
  int64_t d, off = 0;
  if ((k->err = tp_norm_dim("concat", c->at->dim, g->ndim, &d))) END;
  for (int i = 0; i < c->nin; i++) {
    int64_t sz = c->shapes[i].ndim > 0 ? c->shapes[i].shape[d] : 0;
    if (NEED(i)) put(k, gin, i, slice(k, g, d, off, off + sz));
    off += sz;
  }
  END;
}
static tp_tensor *scatter(gk *k, tp_op op, tp_tensor *x, tp_tensor *idx, tp_tensor *upd, int64_t dim,
                          int reduction) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = dim;
  at.reduction = reduction;
  return op3a(k, op, x, idx, upd, &at);
}
static tp_tensor *gather(gk *k, tp_op op, tp_tensor *x, tp_tensor *idx, int64_t dim) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = dim;
  tp_tensor *in2[2] = {x, idx};
  return call(k, op, 2, in2, &at);
}
F(d_gather) {
  BEGIN;
  const tp_grad_shape *x = &c->shapes[0];
  tp_tensor *idx = in[1];
  int64_t d;
  if ((k->err = tp_norm_dim("gather", c->at->dim, x->ndim, &d))) END;
  int64_t K = tp_tensor_numel(idx), gs[TP_MAX_DIMS], is[TP_MAX_DIMS];
  for (int i = 0; i < x->ndim; i++) {
    gs[i] = i == d ? K : x->shape[i];
    is[i] = i == d ? K : 1;
  }
  tp_tensor *gr = reshape(k, g, x->ndim, gs);
  tp_tensor *ir = add(k, zeros(k, idx->dtype, x->ndim, gs), reshape(k, idx, x->ndim, is));
  put(k, gin, 0, scatter(k, TP_OP_SCATTER_ELEMENTS, zeros(k, TP_F32, x->ndim, x->shape), ir, gr, d, 1));
  END;
}
F(d_gather_elements) {
  BEGIN;
  const tp_grad_shape *x = &c->shapes[0];
  put(k, gin, 0, scatter(k, TP_OP_SCATTER_ELEMENTS, zeros(k, TP_F32, x->ndim, x->shape), in[1], g, c->at->dim, 1));
  END;
}
F(d_gather_nd) {
  BEGIN;
  const tp_grad_shape *x = &c->shapes[0];
  if (c->at->dim != 0) {
    gk_done(k);
    return tp_fail(TP_ERR_UNSUPPORTED, "the derivative for 'gather_nd' with batch_dims %lld is not implemented",
                   (long long)c->at->dim);
  }
  put(k, gin, 0, scatter(k, TP_OP_SCATTER_ND, zeros(k, TP_F32, x->ndim, x->shape), in[1], g, 0, 1));
  END;
}
static tp_status d_scatter_any(const tp_grad_ctx *c, tp_tensor **gin, tp_op gop) {
  BEGIN;
  int r = c->at->reduction;
  if (r != 0 && r != 1) {
    gk_done(k);
    return tp_fail(TP_ERR_UNSUPPORTED, "the derivative for '%s' with reduction %s is not implemented",
                   tp_op_name(c->op), r == 2 ? "mul" : r == 3 ? "max" : "min");
  }
  int64_t dim = c->op == TP_OP_SCATTER_ND ? 0 : c->at->dim;
  if (NEED(0)) {
    if (r == 1) put(k, gin, 0, g);
    else put(k, gin, 0, scatter(k, c->op, g, in[1], zeros(k, TP_F32, c->shapes[2].ndim, c->shapes[2].shape), dim, 0));
  }
  if (NEED(2)) put(k, gin, 2, gather(k, gop, g, in[1], dim));
  END;
}
F(d_scatter_elements) { return d_scatter_any(c, gin, TP_OP_GATHER_ELEMENTS); }
F(d_scatter_nd) { return d_scatter_any(c, gin, TP_OP_GATHER_ND); }
F(d_cast) { BEGIN; put(k, gin, 0, g); END; }
F(d_zero) { BEGIN; put(k, gin, 0, zeros(k, TP_F32, c->shapes[0].ndim, c->shapes[0].shape)); END; }
F(d_erf) {
  BEGIN;
  tp_tensor *a = in[0];
  put(k, gin, 0, mul(k, g, mulc(k, op1(k, TP_OP_EXP, op1(k, TP_OP_NEG, mul(k, a, a))), 2.0 / sqrt(M_PI))));
  END;
}
F(d_sin) { BEGIN; put(k, gin, 0, mul(k, g, op1(k, TP_OP_COS, in[0]))); END; }
F(d_cos) { BEGIN; put(k, gin, 0, op1(k, TP_OP_NEG, mul(k, g, op1(k, TP_OP_SIN, in[0])))); END; }
F(d_tan) { BEGIN; put(k, gin, 0, mul(k, g, add(k, sc(k, 1.0), mul(k, c->out, c->out)))); END; }
static tp_tensor *one_minus_sq(gk *k, tp_tensor *a) { return sub(k, sc(k, 1.0), mul(k, a, a)); }
F(d_asin) { BEGIN; put(k, gin, 0, dv(k, g, op1(k, TP_OP_SQRT, one_minus_sq(k, in[0])))); END; }
F(d_acos) { BEGIN; put(k, gin, 0, op1(k, TP_OP_NEG, dv(k, g, op1(k, TP_OP_SQRT, one_minus_sq(k, in[0]))))); END; }
F(d_atan) { BEGIN; put(k, gin, 0, dv(k, g, add(k, sc(k, 1.0), mul(k, in[0], in[0])))); END; }
F(d_sinh) { BEGIN; put(k, gin, 0, mul(k, g, op1(k, TP_OP_COSH, in[0]))); END; }
F(d_cosh) { BEGIN; put(k, gin, 0, mul(k, g, op1(k, TP_OP_SINH, in[0]))); END; }
F(d_asinh) { BEGIN; put(k, gin, 0, dv(k, g, op1(k, TP_OP_SQRT, add(k, mul(k, in[0], in[0]), sc(k, 1.0))))); END; }
F(d_acosh) { BEGIN; put(k, gin, 0, dv(k, g, op1(k, TP_OP_SQRT, sub(k, mul(k, in[0], in[0]), sc(k, 1.0))))); END; }
F(d_atanh) { BEGIN; put(k, gin, 0, dv(k, g, one_minus_sq(k, in[0]))); END; }

/* ---- convolution and pooling: transposed convolutions from conv2d ---- */
static tp_tensor *full_(gk *k, int nd, const int64_t *shape, double v) {
  tp_tensor *t = NULL;
  if (k->err) return NULL;
  tp_status s = tp_full(TP_F32, nd, shape, v, &t);
  return keep(k, s, t);
}
/* dim d of t grown by `before` / `after` rows of fill (> 0) or cut by them (< 0) */
static tp_tensor *pad_crop(gk *k, tp_tensor *t, int d, int64_t before, int64_t after, double fill) {
  if (!t || k->err) return NULL;
  int64_t n = t->shape[d], target = n + before + after;
  int64_t sh[TP_MAX_DIMS];
  memcpy(sh, t->shape, sizeof sh);
  int64_t s0 = before < 0 ? -before : 0, e0 = after < 0 ? n + after : n;
  if (e0 <= s0) { /* nothing of t is kept */
    sh[d] = target;
    return full_(k, t->ndim, sh, fill);
  }
  if (s0 > 0 || e0 < n) t = slice(k, t, d, s0, e0);
  tp_tensor *parts[3];
  int np = 0;
  if (before > 0) sh[d] = before, parts[np++] = full_(k, t->ndim, sh, fill);
  parts[np++] = t;
  if (after > 0) sh[d] = after, parts[np++] = full_(k, t->ndim, sh, fill);
  return np == 1 ? t : concat(k, np, parts, d);
}
/* s - 1 zeros between the elements of dim d: L -> (L - 1) s + 1 */
static tp_tensor *dilate(gk *k, tp_tensor *t, int d, int64_t s) {
  if (!t || k->err || s == 1) return t;
  int64_t sh[TP_MAX_DIMS], L = t->shape[d];
  int nd = 0;
  for (int i = 0; i < t->ndim; i++) {
    sh[nd++] = t->shape[i];
    if (i == d) sh[nd++] = 1;
  }
  tp_tensor *parts[2] = {reshape(k, t, nd, sh), NULL};
  sh[d + 1] = s - 1;
  parts[1] = zeros(k, TP_F32, nd, sh);
  tp_tensor *inter = concat(k, 2, parts, d + 1);
  int64_t s2[TP_MAX_DIMS];
  memcpy(s2, t->shape, sizeof s2);
  s2[d] = L * s;
  return slice(k, reshape(k, inter, t->ndim, s2), d, 0, (L - 1) * s + 1);
}
static tp_tensor *flip(gk *k, tp_tensor *t, int d) {
  if (!t || k->err) return NULL;
  int64_t n = t->shape[d];
  tp_tensor *idx = NULL;
  tp_status s = tp_arange((double)(n - 1), -1, -1, TP_I64, &idx);
  if (!keep(k, s, idx)) return NULL;
  return gather(k, TP_OP_GATHER, t, idx, d);
}
static tp_tensor *permute4(gk *k, tp_tensor *t, int a, int b, int c, int d) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.nints = 4, at.ints[0] = a, at.ints[1] = b, at.ints[2] = c, at.ints[3] = d;
  return op1a(k, TP_OP_PERMUTE, t, &at);
}
static tp_tensor *conv(gk *k, tp_tensor *x, tp_tensor *w, int64_t sh, int64_t sw, int64_t pt, int64_t pl,
                       int64_t pb, int64_t pr, int64_t dh, int64_t dw, int64_t groups) {
  if (!x || !w || k->err) return NULL;
  tp_attrs at;
  tp_attrs_init(&at);
  const int64_t v[8] = {sh, sw, pt, pl, pb, pr, dh, dw};
  at.nints = 8, memcpy(at.ints, v, sizeof v), at.dim = groups;
  tp_tensor *in[3] = {x, w, NULL}, *y = NULL;
  tp_status s = tp_op_call(TP_OP_CONV2D, 3, in, &at, &y);
  return keep(k, s, y);
}
static tp_tensor *permute5(gk *k, tp_tensor *t, int a, int b, int c, int d, int e) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.nints = 5, at.ints[0] = a, at.ints[1] = b, at.ints[2] = c, at.ints[3] = d, at.ints[4] = e;
  return op1a(k, TP_OP_PERMUTE, t, &at);
}
/* The transposed convolution: g [N, M, OH, OW], w [M, C/G, KH, KW] ->
 * [N, C, H, W], the input gradient of conv2d with G's strides, pads top /
 * left, dilations and groups: conv2d (stride 1, groups G) of g dilated by
 * the strides and padded or cropped to the input's extent, with the
 * weight's two channel dims swapped within each group and its kernel
 * flipped. */
static tp_tensor *conv_t(gk *k, tp_tensor *g, tp_tensor *w, const tp_conv2d_geom *G) {
  if (!g || !w || k->err) return NULL;
  int64_t KH = w->shape[2], KW = w->shape[3], M = w->shape[0], Cg = w->shape[1], Mg = M / G->G;
  tp_tensor *gd = dilate(k, dilate(k, g, 2, G->sh), 3, G->sw);
  if (!gd) return NULL;
  int64_t pt = G->dh * (KH - 1) - G->pt, pl = G->dw * (KW - 1) - G->pl;
  gd = pad_crop(k, gd, 2, pt, G->H + G->dh * (KH - 1) - pt - gd->shape[2], 0);
  if (!gd) return NULL;
  gd = pad_crop(k, gd, 3, pl, G->W + G->dw * (KW - 1) - pl - gd->shape[3], 0);
  tp_tensor *wt = reshape(k, w, 5, (int64_t[]){G->G, Mg, Cg, KH, KW});
  wt = reshape(k, permute5(k, wt, 0, 2, 1, 3, 4), 4, (int64_t[]){G->G * Cg, Mg, KH, KW});
  wt = flip(k, flip(k, wt, 2), 3);
  return conv(k, gd, wt, 1, 1, 0, 0, 0, 0, G->dh, G->dw, G->G);
}
F(d_conv2d) {
  BEGIN;
  tp_tensor *x = in[0], *w = in[1];
  tp_desc xd, wd;
  tp_desc_of(x, &xd), tp_desc_of(w, &wd);
  tp_conv2d_geom G;
  if ((k->err = tp_conv2d_geometry(&xd, &wd, c->at, &G))) END;
  const int64_t *v = c->at->ints;
  int64_t Cg = G.C / G.G, Mg = G.M / G.G;
  if (NEED(0)) put(k, gin, 0, conv_t(k, g, w, &G));
  if (NEED(1)) {
    /* dW[gi Mg + m, c] = sum_n x[n, gi Cg + c] (*) g[n, gi Mg + m]: a conv2d with groups G of
     * x as [Cg, G N, H, W] by g as [M, N, OH, OW], strides and dilations swapped */
    tp_tensor *xs = reshape(k, permute5(k, reshape(k, x, 5, (int64_t[]){G.N, G.G, Cg, G.H, G.W}), 2, 1, 0, 3, 4), 4,
                            (int64_t[]){Cg, G.G * G.N, G.H, G.W});
    tp_tensor *gs = reshape(k, permute5(k, reshape(k, g, 5, (int64_t[]){G.N, G.G, Mg, G.OH, G.OW}), 1, 2, 0, 3, 4), 4,
                            (int64_t[]){G.M, G.N, G.OH, G.OW});
    tp_tensor *r = conv(k, xs, gs, G.dh, G.dw, v[2], v[3], v[4], v[5], G.sh, G.sw, G.G); /* [Cg, M, >= KH, >= KW] */
    r = slice(k, slice(k, r, 2, 0, G.KH), 3, 0, G.KW);
    put(k, gin, 1, permute4(k, r, 1, 0, 2, 3));
  }
  if (c->nin > 2 && in[2] && NEED(2)) {
    tp_attrs at;
    tp_attrs_init(&at);
    at.nints = 3, at.ints[0] = 0, at.ints[1] = 2, at.ints[2] = 3;
    put(k, gin, 2, op1a(k, TP_OP_SUM, g, &at));
  }
  END;
}
/* pool geometry as a conv's: dilation 1, the pool's strides and pads */
static tp_status pool_geom(const tp_grad_ctx *c, tp_tensor *x, tp_conv2d_geom *G) {
  tp_desc xd;
  tp_desc_of(x, &xd);
  return tp_pool2d_geometry(c->op, &xd, c->at, G);
}
F(d_avg_pool2d) {
  BEGIN;
  const tp_grad_shape *xs = &c->shapes[0];
  tp_conv2d_geom G;
  tp_tensor *x = zeros(k, TP_F32, xs->ndim, xs->shape); /* only its shape is read */
  if (!x || (k->err = pool_geom(c, x, &G))) END;
  const int64_t *v = c->at->ints;
  tp_tensor *ones = full_(k, 4, (int64_t[]){1, 1, G.KH, G.KW}, 1.0), *gs;
  if (c->at->dim == 1) {
    gs = mulc(k, g, 1.0 / (double)(G.KH * G.KW));
  } else { /* the count of input elements under each window */
    tp_tensor *cnt = conv(k, full_(k, 4, (int64_t[]){1, 1, G.H, G.W}, 1.0), ones, G.sh, G.sw, v[4], v[5], v[6], v[7], 1, 1, 1);
    gs = dv(k, g, cnt);
  }
  tp_tensor *r = reshape(k, gs, 4, (int64_t[]){G.N * G.C, 1, G.OH, G.OW});
  G.G = 1; /* each of the N * C planes on its own */
  put(k, gin, 0, reshape(k, conv_t(k, r, ones, &G), 4, xs->shape));
  END;
}
/* max_pool2d: each window's gradient goes to its first maximum (row-major
 * scan, as PyTorch), one kernel tap at a time. */
F(d_max_pool2d) {
  BEGIN;
  tp_tensor *x = in[0], *y = c->out;
  tp_conv2d_geom G;
  if ((k->err = pool_geom(c, x, &G))) END;
  const int64_t *v = c->at->ints;
  tp_tensor *xp = pad_crop(k, pad_crop(k, x, 2, v[4], v[6], -INFINITY), 3, v[5], v[7], -INFINITY);
  tp_tensor *taken = zeros(k, TP_F32, 4, y->shape), *acc = zeros(k, TP_F32, 4, x->shape);
  if (k->err) END;
  tp_tensor_retain(taken), tp_tensor_retain(acc); /* carried across the per-tap pools */
  for (int64_t kh = 0; kh < G.KH && !k->err; kh++)
    for (int64_t kw = 0; kw < G.KW && !k->err; kw++) {
      gk t_ = GK_INIT, *t = &t_;
      tp_attrs a1;
      tp_attrs_init(&a1);
      a1.dim = 2, a1.start = kh, a1.end = kh + G.sh * (G.OH - 1) + 1, a1.step = G.sh;
      tp_tensor *win = op1a(t, TP_OP_SLICE, xp, &a1);
      a1.dim = 3, a1.start = kw, a1.end = kw + G.sw * (G.OW - 1) + 1, a1.step = G.sw;
      win = op1a(t, TP_OP_SLICE, win, &a1);
      tp_tensor *m = mul(t, as_f32(t, op2(t, TP_OP_EQ, win, y)), sub(t, sc(t, 1.0), taken));
      tp_tensor *nt = add(t, taken, m);
      tp_tensor *cd = dilate(t, dilate(t, mul(t, g, m), 2, G.sh), 3, G.sw);
      if (cd) cd = pad_crop(t, cd, 2, kh - G.pt, G.H - (kh - G.pt) - cd->shape[2], 0);
      if (cd) cd = pad_crop(t, cd, 3, kw - G.pl, G.W - (kw - G.pl) - cd->shape[3], 0);
      tp_tensor *na = add(t, acc, cd);
      if (!t->err) {
        tp_tensor_retain(nt), tp_tensor_retain(na);
        tp_tensor_release(taken), tp_tensor_release(acc);
        taken = nt, acc = na;
      } else {
        k->err = t->err;
      }
      gk_done(t);
    }
  put(k, gin, 0, acc);
  tp_tensor_release(taken), tp_tensor_release(acc);
  END;
}

/* det: d det(A) / dA = the cofactor matrix (the adjugate's transpose), from
 * the determinants of all the minors at once (two gathers drop row i and
 * column j), so singular matrices are fine too. */
F(d_det) {
  BEGIN;
  tp_tensor *a = in[0];
  int nd = a->ndim;
  int64_t n = a->shape[nd - 1];
  if (n == 0) {
    put(k, gin, 0, zeros(k, TP_F32, nd, a->shape));
    END;
  }
  int64_t *rows = malloc(sizeof(int64_t) * (size_t)(n * (n - 1) + 1));
  float *sign = malloc(sizeof(float) * (size_t)(n * n));
  if (!rows || !sign) {
    free(rows), free(sign);
    gk_done(k);
    return tp_fail(TP_ERR_OUT_OF_MEMORY, "det backward: out of memory");
  }
  for (int64_t i = 0; i < n; i++) {
    for (int64_t r = 0; r < n - 1; r++) rows[i * (n - 1) + r] = r < i ? r : r + 1;
    for (int64_t j = 0; j < n; j++) sign[i * n + j] = (i + j) % 2 ? -1.0f : 1.0f;
  }
  tp_tensor *R = NULL, *S = NULL;
  tp_status st = tp_tensor_new(TP_I64, 2, (int64_t[]){n, n - 1}, rows, &R);
  keep(k, st, R);
  st = tp_tensor_new(TP_F32, 2, (int64_t[]){n, n}, sign, &S);
  keep(k, st, S);
  free(rows), free(sign);
  tp_tensor *m = gather(k, TP_OP_GATHER, gather(k, TP_OP_GATHER, a, R, nd - 2), R, nd); /* [B.., i, r, j, c] */
  tp_attrs at;
  tp_attrs_init(&at);
  at.nints = nd + 2;
  for (int d = 0; d < nd - 2; d++) at.ints[d] = d;
  at.ints[nd - 2] = nd - 2, at.ints[nd - 1] = nd, at.ints[nd] = nd - 1, at.ints[nd + 1] = nd + 1;
  tp_tensor *minors = op1(k, TP_OP_DET, op1a(k, TP_OP_PERMUTE, m, &at)); /* [B.., n, n] */
  int64_t gs[TP_MAX_DIMS];
  for (int d = 0; d < nd - 2; d++) gs[d] = a->shape[d];
  gs[nd - 2] = gs[nd - 1] = 1;
  put(k, gin, 0, mul(k, mul(k, minors, S), reshape(k, g, nd, gs)));
  END;
}
/* dequantize: y = (x - zero_point) * scale; only the float32 scale can
 * require grad: g * (x - zero_point), summed down to the scale's shape. */
F(d_dequantize) {
  BEGIN;
  tp_tensor *d = as_f32(k, in[0]);
  if (c->nin > 2 && in[2]) d = sub(k, d, as_f32(k, in[2]));
  if (NEED(1)) put(k, gin, 1, mul(k, g, d));
  END;
}

/* ---- rnn / gru / lstm: backpropagation through time ----
 * The formula replays the recurrence unrolled into ordinary ops (linear,
 * sigmoid / tanh / relu, where for clip and sequence_lens, gather_elements
 * to reverse each sequence within its length) on detached copies of the
 * operands, with grad mode on, then runs backward on that replay with the
 * incoming gradient and hands out the copies' gradients. ONNX's semantics
 * as src/ops/recurrent.c: gate order (lstm i o f c, gru z r h), peepholes,
 * clip, linear_before_reset, input_forget, per-direction activations. */
/* activation `code` (ops.h's TP_RNN_ACTS) with its alpha a and beta b, from
 * differentiable ops (the forward's formulas, src/ops/recurrent.c) */
static tp_tensor *ract_p(gk *k, int code, double a, double b, tp_tensor *v) {
  switch (code) {
    case TP_RNN_SIGMOID: return op1(k, TP_OP_SIGMOID, v);
    case TP_RNN_TANH: return op1(k, TP_OP_TANH, v);
    case TP_RNN_RELU: return op1(k, TP_OP_RELU, v);
    case TP_RNN_AFFINE: return add(k, mul(k, v, sc(k, a)), sc(k, b));
    case TP_RNN_LEAKY_RELU: return op3a(k, TP_OP_WHERE, op2(k, TP_OP_LT, v, sc(k, 0)), mul(k, v, sc(k, a)), v, NULL);
    case TP_RNN_THRESHOLDED_RELU: return op3a(k, TP_OP_WHERE, op2(k, TP_OP_GT, v, sc(k, a)), v, sc(k, 0), NULL);
    case TP_RNN_SCALED_TANH: return mul(k, sc(k, a), op1(k, TP_OP_TANH, mul(k, v, sc(k, b))));
    case TP_RNN_HARD_SIGMOID: {
      tp_tensor *y = add(k, mul(k, v, sc(k, a)), sc(k, b));
      y = op3a(k, TP_OP_WHERE, op2(k, TP_OP_LT, y, sc(k, 0)), sc(k, 0), y, NULL);
      return op3a(k, TP_OP_WHERE, op2(k, TP_OP_GT, y, sc(k, 1)), sc(k, 1), y, NULL);
    }
    case TP_RNN_ELU: { /* exp of min(v, 0): the unused branch stays finite */
      tp_tensor *neg = op2(k, TP_OP_LT, v, sc(k, 0));
      tp_tensor *e = op1(k, TP_OP_EXP, op3a(k, TP_OP_WHERE, neg, v, sc(k, 0), NULL));
      return op3a(k, TP_OP_WHERE, neg, mul(k, sc(k, a), sub(k, e, sc(k, 1))), v, NULL);
    }
    case TP_RNN_SOFTSIGN: return op2(k, TP_OP_DIV, v, add(k, sc(k, 1), op1(k, TP_OP_ABS, v)));
    case TP_RNN_SOFTPLUS: /* relu(v) + log(1 + exp(-|v|)) */
      return add(k, op1(k, TP_OP_RELU, v),
                 op1(k, TP_OP_LOG, add(k, sc(k, 1), op1(k, TP_OP_EXP, op1(k, TP_OP_NEG, op1(k, TP_OP_ABS, v))))));
    default:
      if (!k->err) k->err = tp_fail(TP_ERR_INVALID_ARG, "recurrent backward: activation code %d", code);
      return NULL;
  }
}
static tp_tensor *rclip(gk *k, tp_tensor *v, double c) {
  if (c <= 0) return v;
  tp_tensor *hi = op3a(k, TP_OP_WHERE, op2(k, TP_OP_GT, v, sc(k, c)), sc(k, c), v, NULL);
  return op3a(k, TP_OP_WHERE, op2(k, TP_OP_LT, hi, sc(k, -c)), sc(k, -c), hi, NULL);
}
static tp_tensor *rlin(gk *k, tp_tensor *x, tp_tensor *w, tp_tensor *b) {
  if (!x || !w || k->err) return NULL;
  tp_tensor *in3[3] = {x, w, b}, *y = NULL;
  tp_status s = tp_op_call(TP_OP_LINEAR, 3, in3, NULL, &y);
  return keep(k, s, y);
}
/* operand [D, ...] -> its direction d as [rows, cols] (or [rows] when cols is 0) */
static tp_tensor *rdir(gk *k, tp_tensor *t, int64_t d, int64_t rows, int64_t cols) {
  if (!t) return NULL;
  tp_tensor *r = slice(k, t, 0, d, d + 1);
  return cols ? reshape(k, r, 2, (int64_t[]){rows, cols}) : reshape(k, r, 1, (int64_t[]){rows});
}
static tp_tensor *lasts(gk *k, tp_tensor *t, int64_t a, int64_t b) { return slice(k, t, t ? t->ndim - 1 : 0, a, b); }

static tp_tensor *recurrent_replay(gk *k, tp_op op, const tp_attrs *at, tp_tensor *const *v, const int64_t *lens,
                                   int64_t S, int64_t N, int64_t H, int64_t D) {
  int G = op == TP_OP_LSTM ? 4 : op == TP_OP_GRU ? 3 : 1, nact = op == TP_OP_LSTM ? 3 : op == TP_OP_GRU ? 2 : 1;
  int64_t GH = G * H, I = v[0]->shape[2];
  double clip = at->clip;
  /* the step s of each row reads time t = L - 1 - s when reversed: as a gather index [S, N, 1] */
  int64_t *ridx = malloc(sizeof(int64_t) * (size_t)(S * N));
  uint8_t *valid = malloc((size_t)(S * N));
  if (!ridx || !valid) {
    free(ridx), free(valid);
    if (!k->err) k->err = tp_fail(TP_ERR_OUT_OF_MEMORY, "recurrent backward: out of memory");
    return NULL;
  }
  for (int64_t s = 0; s < S; s++)
    for (int64_t b = 0; b < N; b++) {
      int64_t L = lens ? lens[b] : S;
      ridx[s * N + b] = s < L ? L - 1 - s : 0;
      valid[s * N + b] = s < L;
    }
  tp_tensor *ri = NULL, *vm = NULL;
  tp_status st = tp_tensor_new(TP_I64, 3, (int64_t[]){S, N, 1}, ridx, &ri);
  keep(k, st, ri);
  st = tp_tensor_new(TP_BOOL, 3, (int64_t[]){S, N, 1}, valid, &vm);
  keep(k, st, vm);
  free(ridx), free(valid);
  tp_tensor *ri_x = add(k, zeros(k, TP_I64, 3, (int64_t[]){S, N, I}), ri);
  tp_tensor *ri_h = add(k, zeros(k, TP_I64, 3, (int64_t[]){S, N, H}), ri);
  tp_tensor *zero_nh = zeros(k, TP_F32, 2, (int64_t[]){N, H});
  tp_tensor *planes[2][2]; /* [plane][direction] as [S+1, 1, N, H] */
  for (int64_t d = 0; d < D && !k->err; d++) {
    int rev = at->dim1 == 1 || (at->dim1 == 2 && d == 1), act[3];
    double aa[3], ab[3];
    for (int q = 0; q < nact; q++) {
      int i = (int)d * nact + q;
      act[q] = at->nints ? (int)at->ints[i] : (op == TP_OP_RNN || q > 0) ? TP_RNN_TANH : TP_RNN_SIGMOID;
      tp_rnn_act_nparams(act[q], &aa[q], &ab[q]);
      if (at->nfloats) aa[q] = at->floats[2 * i], ab[q] = at->floats[2 * i + 1];
    }
    tp_tensor *Wd = rdir(k, v[1], d, GH, I), *Rd = rdir(k, v[2], d, GH, H);
    tp_tensor *Bd = rdir(k, v[3], d, 2 * GH, 0), *Wb = Bd ? slice(k, Bd, 0, 0, GH) : NULL;
    tp_tensor *Rb = Bd ? slice(k, Bd, 0, GH, 2 * GH) : NULL;
    tp_tensor *P = op == TP_OP_LSTM ? rdir(k, v[7], d, 3 * H, 0) : NULL;
    tp_tensor *X = rev ? gather(k, TP_OP_GATHER_ELEMENTS, v[0], ri_x, 0) : v[0];
    tp_tensor *xw = rlin(k, X, Wd, Wb); /* [S, N, GH] */
    tp_tensor *h = v[5] ? rdir(k, v[5], d, N, H) : zero_nh;
    tp_tensor *c = op == TP_OP_LSTM && v[6] ? rdir(k, v[6], d, N, H) : zero_nh;
    tp_tensor **ys = tp_alloc(sizeof(tp_tensor *) * (size_t)(2 * S + 2));
    if (!ys) {
      if (!k->err) k->err = TP_ERR_OUT_OF_MEMORY;
      break;
    }
    tp_tensor **cs = ys + S + 1;
    for (int64_t s = 0; s < S && !k->err; s++) {
      tp_tensor *gx = reshape(k, slice(k, xw, 0, s, s + 1), 2, (int64_t[]){N, GH}), *hn = NULL, *cn = c;
      if (op == TP_OP_RNN) {
        hn = ract_p(k, act[0], aa[0], ab[0], rclip(k, add(k, gx, rlin(k, h, Rd, Rb)), clip));
      } else if (op == TP_OP_GRU) {
        tp_tensor *R2 = slice(k, Rd, 0, 0, 2 * H), *Rh = slice(k, Rd, 0, 2 * H, 3 * H);
        tp_tensor *Rb2 = Rb ? slice(k, Rb, 0, 0, 2 * H) : NULL, *Rbh = Rb ? slice(k, Rb, 0, 2 * H, 3 * H) : NULL;
        tp_tensor *zr = ract_p(k, act[0], aa[0], ab[0], rclip(k, add(k, lasts(k, gx, 0, 2 * H), rlin(k, h, R2, Rb2)), clip));
        tp_tensor *z = lasts(k, zr, 0, H), *r = lasts(k, zr, H, 2 * H);
        tp_tensor *rh = at->keepdim ? mul(k, r, rlin(k, h, Rh, Rbh)) : rlin(k, mul(k, r, h), Rh, Rbh);
        tp_tensor *hh = ract_p(k, act[1], aa[1], ab[1], rclip(k, add(k, lasts(k, gx, 2 * H, 3 * H), rh), clip));
        hn = add(k, mul(k, sub(k, sc(k, 1.0), z), hh), mul(k, z, h));
      } else {
        tp_tensor *gt = add(k, gx, rlin(k, h, Rd, Rb));
        tp_tensor *ii = lasts(k, gt, 0, H), *oi = lasts(k, gt, H, 2 * H), *fi = lasts(k, gt, 2 * H, 3 * H);
        tp_tensor *ci = lasts(k, gt, 3 * H, 4 * H);
        if (P) ii = add(k, ii, mul(k, slice(k, P, 0, 0, H), c)), fi = add(k, fi, mul(k, slice(k, P, 0, 2 * H, 3 * H), c));
        tp_tensor *i_ = ract_p(k, act[0], aa[0], ab[0], rclip(k, ii, clip));
        tp_tensor *f_ = at->keepdim ? sub(k, sc(k, 1.0), i_) : ract_p(k, act[0], aa[0], ab[0], rclip(k, fi, clip));
        cn = add(k, mul(k, f_, c), mul(k, i_, ract_p(k, act[1], aa[1], ab[1], rclip(k, ci, clip))));
        if (P) oi = add(k, oi, mul(k, slice(k, P, 0, H, 2 * H), cn));
        hn = mul(k, ract_p(k, act[0], aa[0], ab[0], rclip(k, oi, clip)), ract_p(k, act[2], aa[2], ab[2], cn));
      }
      if (lens) { /* past a row's length: its state stays, its output is zero */
        tp_tensor *m = reshape(k, slice(k, vm, 0, s, s + 1), 2, (int64_t[]){N, 1});
        hn = op3a(k, TP_OP_WHERE, m, hn, h, NULL);
        cn = op3a(k, TP_OP_WHERE, m, cn, c, NULL);
        ys[s] = op3a(k, TP_OP_WHERE, m, hn, sc(k, 0.0), NULL);
        cs[s] = op3a(k, TP_OP_WHERE, m, cn, sc(k, 0.0), NULL);
      } else {
        ys[s] = hn, cs[s] = cn;
      }
      h = hn, c = cn;
      ys[s] = reshape(k, ys[s], 3, (int64_t[]){1, N, H});
      cs[s] = reshape(k, cs[s], 3, (int64_t[]){1, N, H});
    }
    for (int pl = 0; pl < 2 && !k->err; pl++) {
      tp_tensor **seq = pl ? cs : ys;
      if (pl && op != TP_OP_LSTM) {
        planes[pl][d] = zeros(k, TP_F32, 4, (int64_t[]){S + 1, 1, N, H});
        continue;
      }
      tp_tensor *y = concat(k, (int)S, seq, 0); /* [S, N, H] by step */
      if (rev && y) y = op3a(k, TP_OP_WHERE, vm, gather(k, TP_OP_GATHER_ELEMENTS, y, ri_h, 0), sc(k, 0.0), NULL);
      tp_tensor *parts[2] = {y, reshape(k, pl ? c : h, 3, (int64_t[]){1, N, H})};
      planes[pl][d] = reshape(k, concat(k, 2, parts, 0), 4, (int64_t[]){S + 1, 1, N, H});
    }
    tp_free(ys);
  }
  if (k->err) return NULL;
  tp_tensor *pp[2];
  for (int pl = 0; pl < 2; pl++)
    pp[pl] = reshape(k, D == 1 ? planes[pl][0] : concat(k, 2, planes[pl], 1), 5, (int64_t[]){1, S + 1, D, N, H});
  return concat(k, 2, pp, 0);
}

F(d_recurrent) {
  BEGIN;
  int64_t S = in[0]->shape[0], N = in[0]->shape[1], H = c->shapes[2].shape[2], D = c->at->dim1 == 2 ? 2 : 1;
  if (S == 0 || N == 0) END;
  int64_t *lens = NULL;
  if (c->nin > 4 && in[4]) {
    lens = malloc(sizeof(int64_t) * (size_t)N);
    if (!lens) {
      gk_done(k);
      return tp_fail(TP_ERR_OUT_OF_MEMORY, "recurrent backward: out of memory");
    }
    for (int64_t b = 0; b < N; b++) lens[b] = (int64_t)tp_tensor_get_f64(in[4], b);
  }
  tp_tensor *leaf[8] = {0};
  for (int i = 0; i < c->nin && i < 8 && !k->err; i++) {
    if (!in[i] || i == 4) continue;
    tp_tensor *t = NULL;
    tp_status st = tp_tensor_detach(in[i], &t);
    leaf[i] = keep(k, st, t);
    if (leaf[i] && NEED(i)) tp_tensor_set_requires_grad(leaf[i], 1);
  }
  int prev = tp_set_grad_enabled(1);
  tp_tensor *y = recurrent_replay(k, c->op, c->at, leaf, lens, S, N, H, D);
  if (y && !k->err) k->err = tp_backward_ex(y, g, 0);
  tp_set_grad_enabled(prev);
  free(lens);
  for (int i = 0; i < 8 && !k->err; i++)
    if (leaf[i] && NEED(i))
      put(k, gin, i, tp_tensor_grad(leaf[i]) ? tp_tensor_grad(leaf[i]) : zeros(k, TP_F32, in[i]->ndim, in[i]->shape));
  END;
}

/* ---- grid_sample: the 2-D bilinear / nearest sampling replayed as ops ----
 * (denormalize, clamp for border, floor, the taps' weights and a
 * gather_elements per tap) under autograd, backward run on the replay: x's
 * gradient is the scatter of the weighted g, the grid's comes through the
 * weights (zero for nearest). Bicubic, reflection and 3-D grids are still
 * to come and say so. */
static tp_tensor *gs_replay(gk *k, tp_tensor *x, tp_tensor *grid, const tp_attrs *at) {
  int mode = (int)at->dim, pad = (int)at->dim1, ac = at->keepdim;
  int64_t N = x->shape[0], C = x->shape[1], dims[2] = {x->shape[2], x->shape[3]};
  int64_t oH = grid->shape[1], oW = grid->shape[2], O = oH * oW;
  tp_tensor *xf = reshape(k, x, 3, (int64_t[]){N, C, dims[0] * dims[1]});
  tp_tensor *idx[2][2], *w[2][2]; /* [spatial dim][tap] as [N, O] */
  int ntap = mode == 1 ? 1 : 2;
  for (int i = 0; i < 2; i++) {
    double d = (double)dims[i], lo = ac ? 0.0 : -0.5, hi = ac ? d - 1 : d - 0.5;
    tp_tensor *gv = reshape(k, lasts(k, grid, 1 - i, 2 - i), 2, (int64_t[]){N, O});
    tp_tensor *v = ac ? mulc(k, add(k, gv, sc(k, 1.0)), (d - 1) / 2) : mulc(k, sub(k, mulc(k, add(k, gv, sc(k, 1.0)), d), sc(k, 1.0)), 0.5);
    if (mode == 1) v = op1(k, TP_OP_ROUND, v);
    if (pad == 1) { /* border: a coordinate outside [lo, hi] is clamped to [0, d - 1] first */
      tp_tensor *out_ = op2(k, TP_OP_EQ, op2(k, TP_OP_EQ, op2(k, TP_OP_LT, v, sc(k, lo)), op2(k, TP_OP_GT, v, sc(k, hi))),
                            sc(k, 0.0)); /* (v < lo) != (v > hi): outside [lo, hi] */
      tp_tensor *cl = op3a(k, TP_OP_WHERE, op2(k, TP_OP_LT, v, sc(k, 0.0)), sc(k, 0.0),
                           op3a(k, TP_OP_WHERE, op2(k, TP_OP_GT, v, sc(k, d - 1)), sc(k, d - 1), v, NULL), NULL);
      v = op3a(k, TP_OP_WHERE, out_, cl, v, NULL);
    }
    tp_tensor *f = mode == 1 ? v : op1(k, TP_OP_FLOOR, v), *t = sub(k, v, f);
    for (int q = 0; q < ntap; q++) {
      tp_tensor *pos = q ? add(k, f, sc(k, 1.0)) : f;
      tp_tensor *wt = mode == 1 ? full_(k, 2, (int64_t[]){N, O}, 1.0) : (q ? t : sub(k, sc(k, 1.0), t));
      /* (pos < 0) == (pos > d - 1): both false, the tap is inside the tensor */
      tp_tensor *inside = op2(k, TP_OP_EQ, op2(k, TP_OP_LT, pos, sc(k, 0.0)), op2(k, TP_OP_GT, pos, sc(k, d - 1)));
      tp_tensor *cpos = op3a(k, TP_OP_WHERE, op2(k, TP_OP_LT, pos, sc(k, 0.0)), sc(k, 0.0),
                             op3a(k, TP_OP_WHERE, op2(k, TP_OP_GT, pos, sc(k, d - 1)), sc(k, d - 1), pos, NULL), NULL);
      if (pad == 0) wt = op3a(k, TP_OP_WHERE, inside, wt, sc(k, 0.0), NULL); /* zeros: taps outside read 0 */
      tp_attrs ca;
      tp_attrs_init(&ca);
      ca.dtype = TP_I64;
      idx[i][q] = op1a(k, TP_OP_CAST, cpos, &ca);
      w[i][q] = wt;
    }
  }
  tp_tensor *y = NULL;
  for (int qy = 0; qy < ntap; qy++)
    for (int qx = 0; qx < ntap; qx++) {
      tp_tensor *wsc = NULL;
      tp_status st = tp_scalar((double)dims[1], 1, &wsc); /* an int scalar: the index stays int64 */
      keep(k, st, wsc);
      tp_tensor *flat = add(k, mul(k, idx[0][qy], wsc), idx[1][qx]); /* [N, O] int64 */
      tp_tensor *fi = add(k, zeros(k, TP_I64, 3, (int64_t[]){N, C, O}), reshape(k, flat, 3, (int64_t[]){N, 1, O}));
      tp_tensor *val = gather(k, TP_OP_GATHER_ELEMENTS, xf, fi, 2);
      tp_tensor *term = mul(k, val, reshape(k, mul(k, w[0][qy], w[1][qx]), 3, (int64_t[]){N, 1, O}));
      y = y ? add(k, y, term) : term;
    }
  return reshape(k, y, 4, (int64_t[]){N, C, oH, oW});
}
F(d_grid_sample) {
  BEGIN;
  int mode = (int)c->at->dim, pad = (int)c->at->dim1;
  if (in[0]->ndim != 4 || mode == 2 || pad == 2) {
    gk_done(k);
    return tp_fail(TP_ERR_UNSUPPORTED, "the derivative for 'grid_sample' is not implemented for %s (2-D bilinear and "
                   "nearest with zeros or border padding are)",
                   in[0]->ndim != 4 ? "3-D grids" : mode == 2 ? "bicubic mode" : "reflection padding");
  }
  tp_tensor *leaf[2];
  for (int i = 0; i < 2 && !k->err; i++) {
    tp_tensor *t = NULL;
    tp_status st = tp_tensor_detach(in[i], &t);
    leaf[i] = keep(k, st, t);
    if (leaf[i] && NEED(i)) tp_tensor_set_requires_grad(leaf[i], 1);
  }
  if (k->err) END;
  int prev = tp_set_grad_enabled(1);
  tp_tensor *y = gs_replay(k, leaf[0], leaf[1], c->at);
  if (y && !k->err && tp_tensor_requires_grad(y)) k->err = tp_backward_ex(y, g, 0);
  tp_set_grad_enabled(prev);
  for (int i = 0; i < 2 && !k->err; i++) /* nearest: the grid gets zeros */
    if (NEED(i)) put(k, gin, i, tp_tensor_grad(leaf[i]) ? tp_tensor_grad(leaf[i]) : zeros(k, TP_F32, in[i]->ndim, in[i]->shape));
  END;
}

/* ---- roi_align: x's gradient (the regions get none, as torchvision's) ----
 * The sampling taps of every region, bin and point are worked out here as
 * src/ops/sample.c does (which x element each reads and with what weight:
 * the mean's 1 / count, or for max the one corner that won), then the
 * gradient is ordinary ops: gather g at each tap's output, times its
 * weight, scatter-added (scatter_elements) into x's layout. */
typedef struct roi_taps {
  int64_t *out;  /* the output element (r, c, ph, pw) flattened with c = 0 */
  int64_t *pos;  /* b * H * W + y * W + x */
  float *w;
  int64_t *chan; /* max mode: the channel (taps are per channel); -1 otherwise */
  int64_t n, cap;
} roi_taps;
static int taps_push(roi_taps *t, int64_t out, int64_t pos, double w, int64_t chan) {
  if (t->n == t->cap) {
    int64_t cap = t->cap ? 2 * t->cap : 1024;
    int64_t *o = realloc(t->out, sizeof(int64_t) * (size_t)cap), *p = o ? realloc(t->pos, sizeof(int64_t) * (size_t)cap) : NULL;
    if (o) t->out = o;
    if (p) t->pos = p;
    int64_t *ch = p ? realloc(t->chan, sizeof(int64_t) * (size_t)cap) : NULL;
    if (ch) t->chan = ch;
    float *ww = ch ? realloc(t->w, sizeof(float) * (size_t)cap) : NULL;
    if (!ww) return 0;
    t->w = ww, t->cap = cap;
  }
  t->out[t->n] = out, t->pos[t->n] = pos, t->w[t->n] = (float)w, t->chan[t->n] = chan, t->n++;
  return 1;
}
static tp_status roi_collect(tp_tensor *x, tp_tensor *rois, tp_tensor *bi, const tp_attrs *at, roi_taps *t) {
  int64_t C = x->shape[1], H = x->shape[2], W = x->shape[3], R = rois->shape[0];
  int64_t PH = at->ints[0], PW = at->ints[1], sr = at->ints[2];
  int maxmode = at->dim == 1, half = at->keepdim;
  double scale = at->eps, offs = half ? 0.5 : 0.0;
  for (int64_t r = 0; r < R; r++) {
    int64_t b = (int64_t)tp_tensor_get_f64(bi, r);
    double x0 = tp_tensor_get_f64(rois, r * 4 + 0) * scale - offs, y0 = tp_tensor_get_f64(rois, r * 4 + 1) * scale - offs;
    double x1 = tp_tensor_get_f64(rois, r * 4 + 2) * scale - offs, y1 = tp_tensor_get_f64(rois, r * 4 + 3) * scale - offs;
    double rw = x1 - x0, rh = y1 - y0;
    if (!half) rw = rw > 1 ? rw : 1, rh = rh > 1 ? rh : 1;
    double bh = rh / (double)PH, bw = rw / (double)PW;
    double gh_d = sr > 0 ? (double)sr : ceil(rh / (double)PH), gw_d = sr > 0 ? (double)sr : ceil(rw / (double)PW);
    int64_t gh = gh_d > 0 ? (int64_t)gh_d : 0, gw = gw_d > 0 ? (int64_t)gw_d : 0;
    double count = gh * gw > 1 ? (double)(gh * gw) : 1.0;
    for (int64_t c = 0; c < (maxmode ? C : 1); c++)
      for (int64_t ph = 0; ph < PH; ph++)
        for (int64_t pw = 0; pw < PW; pw++) {
          int64_t out = (r * PH + ph) * PW + pw, best_pos = -1;
          double best = 0, best_w = 0;
          int first = 1;
          for (int64_t iy = 0; iy < gh; iy++)
            for (int64_t ix = 0; ix < gw; ix++) {
              double yy = y0 + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
              double xx = x0 + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
              double wq[4];
              int64_t pq[4];
              tp_roi_bilinear(yy, xx, H, W, wq, pq);
              if (!maxmode) {
                for (int q = 0; q < 4; q++)
                  if (pq[q] >= 0 && wq[q] != 0 && !taps_push(t, out, b * H * W + pq[q], wq[q] / count, -1))
                    return TP_ERR_OUT_OF_MEMORY;
                continue;
              }
              /* max: the largest weighted corner of this point, then the largest over points */
              int64_t xb = (b * C + c) * H * W;
              double mv = pq[0] >= 0 ? wq[0] * tp_tensor_get_f64(x, xb + pq[0]) : 0;
              int64_t mp = pq[0];
              double mw = wq[0];
              for (int q = 1; q < 4; q++) {
                double vq = pq[q] >= 0 ? wq[q] * tp_tensor_get_f64(x, xb + pq[q]) : 0;
                if (vq > mv) mv = vq, mp = pq[q], mw = wq[q];
              }
              if (first || mv > best) best = mv, best_pos = mp, best_w = mw;
              first = 0;
            }
          if (maxmode && best_pos >= 0 && best_w != 0 && !taps_push(t, out, b * H * W + best_pos, best_w, c))
            return TP_ERR_OUT_OF_MEMORY;
        }
  }
  return TP_OK;
}
F(d_roi_align) {
  BEGIN;
  tp_tensor *x = in[0];
  int64_t N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
  int64_t R = in[1]->shape[0], PH = c->at->ints[0], PW = c->at->ints[1], O = R * PH * PW;
  roi_taps t = {0};
  tp_status st = NEED(0) ? roi_collect(x, in[1], in[2], c->at, &t) : TP_OK;
  if (st || !NEED(0)) {
    free(t.out), free(t.pos), free(t.w), free(t.chan);
    gk_done(k);
    return st ? tp_fail(st, "roi_align backward: out of memory") : TP_OK;
  }
  int maxmode = c->at->dim == 1;
  tp_tensor *gx;
  if (t.n == 0) {
    gx = zeros(k, TP_F32, 4, x->shape);
  } else if (!maxmode) {
    /* [C, O] rows of g; each tap: g[:, out] * w into [C, N*H*W] at pos */
    tp_tensor *to = NULL, *tw = NULL, *tpp = NULL;
    st = tp_tensor_new(TP_I64, 2, (int64_t[]){1, t.n}, t.out, &to);
    keep(k, st, to);
    st = tp_tensor_new(TP_F32, 2, (int64_t[]){1, t.n}, t.w, &tw);
    keep(k, st, tw);
    st = tp_tensor_new(TP_I64, 2, (int64_t[]){1, t.n}, t.pos, &tpp);
    keep(k, st, tpp);
    tp_tensor *gco = reshape(k, permute4(k, g, 1, 0, 2, 3), 2, (int64_t[]){C, O});
    tp_tensor *zi = zeros(k, TP_I64, 2, (int64_t[]){C, t.n});
    tp_tensor *vals = mul(k, gather(k, TP_OP_GATHER_ELEMENTS, gco, add(k, zi, to), 1), tw);
    tp_tensor *acc = scatter(k, TP_OP_SCATTER_ELEMENTS, zeros(k, TP_F32, 2, (int64_t[]){C, N * H * W}), add(k, zi, tpp), vals, 1, 1);
    gx = permute4(k, reshape(k, acc, 4, (int64_t[]){C, N, H, W}), 1, 0, 2, 3);
  } else {
    /* max: one tap per (channel, output), flat over g as [R, C, PH, PW] and x as [N, C, H, W] */
    for (int64_t i = 0; i < t.n; i++) {
      int64_t r = t.out[i] / (PH * PW), rest = t.out[i] % (PH * PW), b = t.pos[i] / (H * W), p = t.pos[i] % (H * W);
      t.out[i] = (r * C + t.chan[i]) * PH * PW + rest;
      t.pos[i] = (b * C + t.chan[i]) * H * W + p;
    }
    tp_tensor *to = NULL, *tw = NULL, *tpp = NULL;
    st = tp_tensor_new(TP_I64, 1, (int64_t[]){t.n}, t.out, &to);
    keep(k, st, to);
    st = tp_tensor_new(TP_F32, 1, (int64_t[]){t.n}, t.w, &tw);
    keep(k, st, tw);
    st = tp_tensor_new(TP_I64, 1, (int64_t[]){t.n}, t.pos, &tpp);
    keep(k, st, tpp);
    tp_tensor *vals = mul(k, gather(k, TP_OP_GATHER_ELEMENTS, reshape(k, g, 1, (int64_t[]){R * C * PH * PW}), to, 0), tw);
    tp_tensor *acc = scatter(k, TP_OP_SCATTER_ELEMENTS, zeros(k, TP_F32, 1, (int64_t[]){N * C * H * W}), tpp, vals, 0, 1);
    gx = reshape(k, acc, 4, x->shape);
  }
  free(t.out), free(t.pos), free(t.w), free(t.chan);
  put(k, gin, 0, gx);
  END;
}

/* ---- the table ---- */
static const tp_deriv_row rows[TP_OP_COUNT] = {
#define TP_DERIV(id, fn, saves) [TP_OP_##id] = {TP_GRAD_FORMULA, fn, saves, NULL},
#define TP_NONDIFF(id, reason) [TP_OP_##id] = {TP_GRAD_NONDIFF, NULL, 0, reason},
#define TP_NOT_IMPL(id, reason) [TP_OP_##id] = {TP_GRAD_NOT_IMPLEMENTED, NULL, 0, reason},
#include "derivatives.def"
};

const tp_deriv_row *tp_deriv_row_of(tp_op op) {
  return (unsigned)op < TP_OP_COUNT && rows[op].kind != TP_GRAD_NONE ? &rows[op] : NULL;
}

tp_grad_kind tp_op_grad_kind(tp_op op, const char **reason) {
  const tp_deriv_row *r = tp_deriv_row_of(op);
  if (reason) *reason = r ? r->reason : NULL;
  return r ? r->kind : TP_GRAD_NONE;
}
