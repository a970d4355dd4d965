/* test_grad.c - autograd (src/ops/autograd.c, derivatives.def) against
 * independent references:
 *  - every op of ops.def has a row in derivatives.def (formula, non-
 *    differentiable or not implemented), and every formula row has a
 *    gradient check below;
 *  - gradient checks: for each differentiable operand of each case, the
 *    gradient autograd computes (tp_op_call + tp_backward with a random
 *    upstream gradient w) against central finite differences of
 *    L = sum(ref(op)(inputs) * w), accumulated in double, where ref is the
 *    scalar reference kernel (tp_op_exec_ref) - broadcasting, views,
 *    reductions over every axis and all of them, keepdim or not;
 *  - hand-computed cases: accumulation, a diamond, a chain of views;
 *  - bad input: every autograd error (PyTorch's messages), each followed
 *    by a backward that works. Nothing leaks. */
#include "op_expect.h"

static int covered[TP_OP_COUNT];

/* deterministic uniform values in [lo, hi) */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double urand(void) {
  rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(rng_state >> 11) / 9007199254740992.0;
}
static tp_tensor *rnd(int nd, const int64_t *shape, double lo, double hi) {
  int64_t n = tp_shape_numel(nd, shape);
  float *d = malloc(sizeof(float) * (size_t)(n ? n : 1));
  for (int64_t i = 0; i < n; i++) d[i] = (float)(lo + (hi - lo) * urand());
  tp_tensor *t = mk_(__LINE__, TP_F32, nd, shape, d);
  free(d);
  return t;
}
#define RND(shp, lo, hi) rnd(SH shp, lo, hi)

static double loss_ref(tp_op op, int nin, tp_tensor **in, const tp_attrs *at, const float *w, int64_t nw,
                       int *ok) {
  tp_tensor *y = NULL;
  if (tp_op_exec_ref(op, nin, in, at, &y) != TP_OK || tp_tensor_numel(y) != nw) {
    *ok = 0;
    tp_tensor_release(y);
    return 0;
  }
  double L = 0;
  for (int64_t i = 0; i < nw; i++) L += tp_tensor_get_f64(y, i) * w[i];
  tp_tensor_release(y);
  return L;
}

/* Checks d(sum(op(in) * w))/d(in[i]) for every i in diff (a bit mask). */
static void gradcheck_(int line, const char *what, tp_op op, int nin, tp_tensor **in, const tp_attrs *at,
                       unsigned diff) {
  covered[op] = 1;
  checks++;
  for (int i = 0; i < nin; i++)
    if ((diff >> i) & 1) tp_tensor_set_requires_grad(in[i], 1);
  tp_tensor *y = NULL;
  if (tp_op_call(op, nin, in, at, &y) != TP_OK) {
    FAILF_AT(line, "%s: %s failed: %s", what, tp_op_name(op), tp_last_error());
    return;
  }
  track(y);
  if (!tp_tensor_requires_grad(y)) {
    FAILF_AT(line, "%s: the result does not require grad", what);
    return;
  }
  tp_tensor *wt = rnd(y->ndim, y->shape, -1, 1);
  int64_t nw = tp_tensor_numel(wt);
  float *w = malloc(sizeof(float) * (size_t)(nw ? nw : 1));
  tp_tensor_read(wt, w, sizeof(float) * (size_t)nw);
  if (tp_backward(y, wt) != TP_OK) {
    FAILF_AT(line, "%s: backward failed: %s", what, tp_last_error());
    free(w);
    return;
  }
  for (int i = 0; i < nin; i++) {
    if (!((diff >> i) & 1)) continue;
    tp_tensor *x = in[i], *gt = tp_tensor_grad(x);
    int64_t n = tp_tensor_numel(x);
    if (!gt) {
      FAILF_AT(line, "%s: operand %d got no gradient", what, i);
      continue;
    }
    float *xd = malloc(sizeof(float) * (size_t)n), *gd = malloc(sizeof(float) * (size_t)n);
    tp_tensor_read(x, xd, sizeof(float) * (size_t)n);
    tp_tensor_read(gt, gd, sizeof(float) * (size_t)n);
    int bad = 0;
    for (int64_t j = 0; j < n && bad < 3; j++) {
      float xp = xd[j] + 5e-3f, xm = xd[j] - 5e-3f, keep = xd[j];
      double L[2];
      int ok = 1;
      for (int s = 0; s < 2; s++) {
        xd[j] = s ? xm : xp;
        tp_tensor *pt = NULL;
        tp_tensor_new(TP_F32, x->ndim, x->shape, xd, &pt);
        tp_tensor *pin[8];
        for (int q = 0; q < nin; q++) pin[q] = q == i ? pt : in[q];
        L[s] = loss_ref(op, nin, pin, at, w, nw, &ok);
        tp_tensor_release(pt);
      }
      xd[j] = keep;
      double num = (L[0] - L[1]) / ((double)xp - (double)xm);
      if (!ok) {
        FAILF_AT(line, "%s: the reference failed: %s", what, tp_last_error());
        bad = 3;
        break;
      }
      if (!(fabs(num - gd[j]) <= 4e-3 + 4e-3 * fabs(num))) {
        FAILF_AT(line, "%s: d/d operand %d [%lld]: autograd %.6g, finite differences %.6g", what, i,
                 (long long)j, gd[j], num);
        bad++;
      }
    }
    free(xd);
    free(gd);
    tp_tensor_set_grad(x, NULL);
    tp_tensor_set_requires_grad(x, 0);
  }
  free(w);
}
#define GC(what, op, at, diff, ...) \
  gradcheck_(__LINE__, what, op, NARGS_T(__VA_ARGS__), (tp_tensor *[]){__VA_ARGS__}, at, diff)

static tp_attrs A(void) {
  tp_attrs a;
  tp_attrs_init(&a);
  return a;
}

static void test_table(void) {
  for (int op = 0; op < TP_OP_COUNT; op++) {
    const char *why = NULL;
    tp_grad_kind k = tp_op_grad_kind((tp_op)op, &why);
    CHECKF(k != TP_GRAD_NONE, "op '%s' has no row in derivatives.def", tp_op_name((tp_op)op));
    if (k == TP_GRAD_NONDIFF || k == TP_GRAD_NOT_IMPLEMENTED)
      CHECKF(why && *why, "op '%s': a row without a reason", tp_op_name((tp_op)op));
  }
}

static void test_pointwise(void) {
  static const struct { tp_op op; double lo, hi; } un[] = {
      {TP_OP_NEG, -2, 2},    {TP_OP_ABS, 0.1, 2},    {TP_OP_EXP, -2, 2},     {TP_OP_LOG, 0.2, 3},
      {TP_OP_SQRT, 0.2, 3},  {TP_OP_RSQRT, 0.3, 3},  {TP_OP_TANH, -2, 2},    {TP_OP_SIGMOID, -3, 3},
      {TP_OP_RELU, 0.1, 2},  {TP_OP_ERF, -2, 2},     {TP_OP_SIN, -3, 3},     {TP_OP_COS, -3, 3},
      {TP_OP_TAN, -1, 1},    {TP_OP_ASIN, -0.8, 0.8}, {TP_OP_ACOS, -0.8, 0.8}, {TP_OP_ATAN, -3, 3},
      {TP_OP_SINH, -2, 2},   {TP_OP_COSH, -2, 2},    {TP_OP_ASINH, -3, 3},   {TP_OP_ACOSH, 1.2, 3},
      {TP_OP_ATANH, -0.8, 0.8}, {TP_OP_FLOOR, 0.1, 0.9}, {TP_OP_CEIL, 0.1, 0.9}, {TP_OP_ROUND, 0.1, 0.4},
      {TP_OP_CAST, -2, 2},
  };
  for (int i = 0; i < TP_ARRAY_LEN(un); i++) {
    tp_attrs at = A();
    at.dtype = TP_F32;
    GC(tp_op_name(un[i].op), un[i].op, &at, 1, RND((2, 3), un[i].lo, un[i].hi));
  }
  /* relu and abs on negative values too (away from the kink) */
  GC("relu<0", TP_OP_RELU, NULL, 1, RND((5), -2, -0.1));
  GC("abs<0", TP_OP_ABS, NULL, 1, RND((5), -2, -0.1));
  tp_attrs ge = A();
  GC("gelu erf", TP_OP_GELU, &ge, 1, RND((2, 4), -3, 3));
  ge.approximate = 1;
  GC("gelu tanh", TP_OP_GELU, &ge, 1, RND((2, 4), -3, 3));
  /* binary ops: same shapes, broadcasting both ways, a strong 0-d operand */
  static const tp_op bin[] = {TP_OP_ADD, TP_OP_SUB, TP_OP_MUL, TP_OP_DIV};
  for (int i = 0; i < TP_ARRAY_LEN(bin); i++) {
    GC(tp_op_name(bin[i]), bin[i], NULL, 3, RND((2, 3), 0.5, 2), RND((2, 3), 0.5, 2));
    GC("broadcast [2,1,3] x [4,1]", bin[i], NULL, 3, RND((2, 1, 3), 0.5, 2), RND((4, 1), 0.5, 2));
    GC("broadcast [3] x [2,3]", bin[i], NULL, 3, RND((3), 0.5, 2), RND((2, 3), 0.5, 2));
    GC("0-d operand", bin[i], NULL, 3, RND((2, 2), 0.5, 2), RND((), 0.5, 2));
    GC("one operand", bin[i], NULL, 2, RND((2, 2), 0.5, 2), RND((2, 2), 0.5, 2));
  }
  GC("where", TP_OP_WHERE, NULL, 6, B8((2, 3), 1, 0, 1, 0, 0, 1), RND((2, 3), -1, 1), RND((3), -1, 1));
}

static void test_linalg(void) {
  GC("matmul 2x3 @ 3x4", TP_OP_MATMUL, NULL, 3, RND((2, 3), -1, 1), RND((3, 4), -1, 1));
  GC("matmul batched broadcast", TP_OP_MATMUL, NULL, 3, RND((2, 1, 2, 3), -1, 1), RND((3, 3, 2), -1, 1));
  GC("matmul vec @ mat", TP_OP_MATMUL, NULL, 3, RND((3), -1, 1), RND((2, 3, 4), -1, 1));
  GC("matmul mat @ vec", TP_OP_MATMUL, NULL, 3, RND((2, 4, 3), -1, 1), RND((3), -1, 1));
  GC("matmul dot", TP_OP_MATMUL, NULL, 3, RND((4), -1, 1), RND((4), -1, 1));
  GC("linear", TP_OP_LINEAR, NULL, 7, RND((2, 3, 4), -1, 1), RND((5, 4), -1, 1), RND((5), -1, 1));
  GC("linear no bias", TP_OP_LINEAR, NULL, 3, RND((3, 4), -1, 1), RND((2, 4), -1, 1), NULL);
  GC("linear 1-d x", TP_OP_LINEAR, NULL, 3, RND((4), -1, 1), RND((2, 4), -1, 1), NULL);
}

static void test_reductions(void) {
  static const tp_op red[] = {TP_OP_SUM, TP_OP_MEAN, TP_OP_MAX, TP_OP_MIN};
  for (int r = 0; r < TP_ARRAY_LEN(red); r++) {
    for (int keep = 0; keep < 2; keep++) {
      for (int d = -1; d < 3; d++) { /* -1: all dims */
        tp_attrs at = A();
        at.keepdim = keep;
        if (d >= 0) at.ints[at.nints++] = d;
        char what[64];
        snprintf(what, sizeof what, "%s dim %d keepdim %d", tp_op_name(red[r]), d, keep);
        GC(what, red[r], &at, 1, RND((2, 3, 4), -2, 2));
      }
      tp_attrs at = A();
      at.keepdim = keep;
      at.ints[0] = 0, at.ints[1] = -1, at.nints = 2;
      GC("two dims", red[r], &at, 1, RND((2, 3, 4), -2, 2));
    }
  }
  /* a tie in max: the gradient is shared evenly */
  tp_tensor *x = F32((4), 1, 3, 3, 2), *y = NULL;
  tp_attrs at = A();
  tp_tensor_set_requires_grad(x, 1);
  CHECK_OK(tp_op_call(TP_OP_MAX, 1, &x, &at, &y));
  track(y);
  CHECK_OK(tp_backward(y, NULL));
  EXPECT(tp_tensor_grad(x), TP_F32, (4), 0, 0.5, 0.5, 0);
  for (int dim = -1; dim < 2; dim++) {
    tp_attrs s = A();
    s.dim = dim;
    GC("softmax", TP_OP_SOFTMAX, &s, 1, RND((3, 4), -2, 2));
    GC("log_softmax", TP_OP_LOG_SOFTMAX, &s, 1, RND((3, 4), -2, 2));
  }
  tp_attrs ln = A();
  ln.ints[0] = 4, ln.nints = 1, ln.eps = 1e-5;
  GC("layer_norm", TP_OP_LAYER_NORM, &ln, 7, RND((2, 3, 4), -2, 2), RND((4), 0.5, 1.5), RND((4), -1, 1));
  GC("layer_norm no affine", TP_OP_LAYER_NORM, &ln, 1, RND((3, 4), -2, 2), NULL, NULL);
  ln.ints[0] = 3, ln.ints[1] = 4, ln.nints = 2;
  GC("layer_norm 2 dims", TP_OP_LAYER_NORM, &ln, 7, RND((2, 3, 4), -2, 2), RND((3, 4), 0.5, 1.5), RND((3, 4), -1, 1));
}

static void test_views(void) {
  tp_attrs at = A();
  at.ints[0] = 4, at.ints[1] = -1, at.nints = 2;
  GC("reshape", TP_OP_RESHAPE, &at, 1, RND((2, 3, 2), -1, 1));
  at = A();
  at.dim = 0, at.dim1 = 2;
  GC("transpose", TP_OP_TRANSPOSE, &at, 1, RND((2, 3, 4), -1, 1));
  at = A();
  at.ints[0] = 2, at.ints[1] = 0, at.ints[2] = 1, at.nints = 3;
  GC("permute", TP_OP_PERMUTE, &at, 1, RND((2, 3, 4), -1, 1));
  static const int64_t sl[][4] = {{1, 1, 3, 1}, {0, 0, 2, 1}, {2, 1, INT64_MAX, 2}, {1, 0, 5, 2},
                                  {1, -4, -1, 3}, {0, 1, 1, 1}, {2, 0, 5, 5}};
  for (int i = 0; i < TP_ARRAY_LEN(sl); i++) {
    at = A();
    at.dim = sl[i][0], at.start = sl[i][1], at.end = sl[i][2], at.step = sl[i][3];
    char what[64];
    snprintf(what, sizeof what, "slice #%d", i);
    GC(what, TP_OP_SLICE, &at, 1, RND((2, 5, 5), -1, 1));
  }
  at = A();
  at.dim = 1;
  GC("concat", TP_OP_CONCAT, &at, 5, RND((2, 3), -1, 1), RND((2, 1), -1, 1), RND((2, 2), -1, 1));
  /* operands that are strided views: gradients flow through the view op to the leaf */
  tp_tensor *x = RND((3, 2), -1, 1), *v = NULL, *y = NULL, *s = NULL;
  tp_tensor *w = F32((2, 2), 1, 2, 3, 4);
  tp_tensor_set_requires_grad(x, 1);
  CHECK_OK(tp_transpose(x, 0, 1, &v)); /* [2,3] */
  track(v);
  tp_attrs sa = A();
  sa.dim = 1, sa.start = 1, sa.end = 3, sa.step = 1;
  CHECK_OK(tp_op_call(TP_OP_SLICE, 1, &v, &sa, &s)); /* [2,2]: x[1:3, :]^T */
  track(s);
  CHECK_OK(tp_mul(s, w, &y));
  track(y);
  CHECK_OK(tp_backward(y, F32((2, 2), 1, 1, 1, 1)));
  /* d/dx[r][c] = w[c][r-1] for r >= 1 */
  EXPECT(tp_tensor_grad(x), TP_F32, (3, 2), 0, 0, 1, 3, 2, 4);
}

static void test_index(void) {
  tp_attrs at = A();
  at.dim = 1;
  GC("gather", TP_OP_GATHER, &at, 1, RND((2, 4, 3), -1, 1), I64((2, 2), 0, 3, 3, -1));
  at.dim = 0;
  GC("gather 1-d idx", TP_OP_GATHER, &at, 1, RND((4, 2), -1, 1), I32((3), 1, 1, 2));
  at.dim = 1;
  GC("gather_elements", TP_OP_GATHER_ELEMENTS, &at, 1, RND((2, 3), -1, 1), I64((2, 2), 0, 0, 2, 1));
  at = A();
  GC("gather_nd", TP_OP_GATHER_ND, &at, 1, RND((3, 2, 2), -1, 1), I64((2, 2), 0, 1, 2, 0));
  at = A();
  at.dim = 1;
  GC("scatter_elements", TP_OP_SCATTER_ELEMENTS, &at, 5, RND((2, 4), -1, 1), I64((2, 2), 0, 3, 1, 2),
     RND((2, 2), -1, 1));
  at.reduction = 1;
  GC("scatter_elements add", TP_OP_SCATTER_ELEMENTS, &at, 5, RND((2, 4), -1, 1), I64((2, 2), 0, 0, 1, 2),
     RND((2, 2), -1, 1));
  at = A();
  GC("scatter_nd", TP_OP_SCATTER_ND, &at, 5, RND((3, 2), -1, 1), I64((2, 1), 2, 0), RND((2, 2), -1, 1));
  at.reduction = 1;
  GC("scatter_nd add", TP_OP_SCATTER_ND, &at, 5, RND((3, 2), -1, 1), I64((2, 1), 2, 2), RND((2, 2), -1, 1));
}

static tp_attrs win8(int64_t a, int64_t b, int64_t c, int64_t d, int64_t e, int64_t f, int64_t g, int64_t h,
                     int64_t dim) {
  tp_attrs at = A();
  const int64_t v[8] = {a, b, c, d, e, f, g, h};
  at.nints = 8;
  memcpy(at.ints, v, sizeof v);
  at.dim = dim;
  return at;
}
/* distinct values 0.1 apart in a fixed shuffled order (no ties near the finite differences) */
static tp_tensor *spaced(int nd, const int64_t *shape) {
  int64_t n = tp_shape_numel(nd, shape);
  float *d = malloc(sizeof(float) * (size_t)n);
  for (int64_t i = 0; i < n; i++) d[i] = (float)(0.1 * (double)((i * 7919) % n) - 0.05 * (double)n + 0.05); /* never 0 */
  tp_tensor *t = mk_(__LINE__, TP_F32, nd, shape, d);
  free(d);
  return t;
}

static void test_conv_pool(void) {
  /* conv2d: {stride h w, pads t l b r, dilation h w}, groups */
  static const int64_t cv[][9] = {
      {1, 1, 0, 0, 0, 0, 1, 1, 1}, {2, 1, 1, 0, 1, 2, 1, 1, 1}, {1, 2, 2, 1, 0, 1, 2, 1, 1},
      {2, 2, 1, 1, 1, 1, 1, 2, 2}, {1, 1, 1, 1, 1, 1, 1, 1, 4}, {3, 2, 0, 2, 2, 0, 1, 1, 2},
  };
  for (int i = 0; i < TP_ARRAY_LEN(cv); i++) {
    tp_attrs at = win8(cv[i][0], cv[i][1], cv[i][2], cv[i][3], cv[i][4], cv[i][5], cv[i][6], cv[i][7], cv[i][8]);
    int64_t G = cv[i][8], C = 4, M = G == 4 ? 4 : 6;
    char what[64];
    snprintf(what, sizeof what, "conv2d #%d", i);
    GC(what, TP_OP_CONV2D, &at, 7, rnd(4, (int64_t[]){2, C, 6, 5}, -1, 1), rnd(4, (int64_t[]){M, C / G, 3, 2}, -1, 1),
       rnd(1, (int64_t[]){M}, -1, 1));
  }
  tp_attrs at = win8(1, 1, 1, 1, 1, 1, 1, 1, 24); /* depthwise, many groups */
  GC("conv2d depthwise 24 groups", TP_OP_CONV2D, &at, 7, RND((1, 24, 4, 4), -1, 1), RND((24, 1, 3, 3), -1, 1),
     RND((24), -1, 1));
  at = win8(1, 1, 0, 0, 0, 0, 1, 1, 1);
  GC("conv2d no bias", TP_OP_CONV2D, &at, 3, RND((1, 2, 4, 4), -1, 1), RND((3, 2, 2, 2), -1, 1), NULL);
  /* pooling: {kernel h w, stride h w, pads t l b r}, count_include_pad */
  static const int64_t pw[][9] = {
      {2, 2, 2, 2, 0, 0, 0, 0, 0}, {3, 3, 1, 1, 1, 1, 1, 1, 0}, {3, 2, 2, 1, 1, 0, 2, 1, 0},
      {3, 3, 2, 2, 1, 1, 1, 1, 1}, {2, 3, 1, 2, 0, 1, 1, 2, 0},
  };
  for (int i = 0; i < TP_ARRAY_LEN(pw); i++) {
    char what[64];
    tp_attrs pa = win8(pw[i][0], pw[i][1], pw[i][2], pw[i][3], pw[i][4], pw[i][5], pw[i][6], pw[i][7], pw[i][8]);
    snprintf(what, sizeof what, "avg_pool2d #%d", i);
    GC(what, TP_OP_AVG_POOL2D, &pa, 1, RND((2, 3, 6, 7), -1, 1));
    pa.dim = 0;
    snprintf(what, sizeof what, "max_pool2d #%d", i);
    GC(what, TP_OP_MAX_POOL2D, &pa, 1, spaced(4, (int64_t[]){2, 3, 6, 7}));
  }
  /* a tie in max_pool2d: the first maximum of the window gets it all */
  tp_tensor *x = F32((1, 1, 2, 2), 3, 3, 1, 3), *y = NULL;
  tp_attrs pa = win8(2, 2, 1, 1, 0, 0, 0, 0, 0);
  tp_tensor_set_requires_grad(x, 1);
  CHECK_OK(tp_op_call(TP_OP_MAX_POOL2D, 1, &x, &pa, &y));
  track(y);
  CHECK_OK(tp_backward(y, F32((1, 1, 1, 1), 5)));
  EXPECT(tp_tensor_grad(x), TP_F32, (1, 1, 2, 2), 5, 0, 0, 0);
}

static void test_det_dequant(void) {
  GC("det 1x1", TP_OP_DET, NULL, 1, RND((1, 1), 0.5, 2));
  GC("det 2x2", TP_OP_DET, NULL, 1, RND((2, 2), -1, 1));
  GC("det batched 3x3", TP_OP_DET, NULL, 1, RND((2, 3, 3), -1, 1));
  GC("det 4x4", TP_OP_DET, NULL, 1, RND((4, 4), -1, 1));
  /* a singular matrix: the cofactors, by hand: d det [[a b][c d]] = [[d -c][-b a]] */
  tp_tensor *x = F32((2, 2), 1, 2, 2, 4), *y = NULL;
  tp_tensor_set_requires_grad(x, 1);
  CHECK_OK(tp_op_call(TP_OP_DET, 1, &x, NULL, &y));
  track(y);
  CHECK_OK(tp_backward(y, NULL));
  EXPECT(tp_tensor_grad(x), TP_F32, (2, 2), 4, -2, -2, 1);
  /* dequantize: the scale's gradient, per tensor and per axis, with and without a zero point */
  int8_t q[6] = {-3, 0, 7, 12, -128, 127};
  tp_tensor *xq = mk_(__LINE__, TP_I8, 2, (int64_t[]){2, 3}, q);
  int8_t zp[2] = {1, -2};
  tp_tensor *z1 = mk_(__LINE__, TP_I8, 1, (int64_t[]){1}, zp), *z2 = mk_(__LINE__, TP_I8, 2, (int64_t[]){2, 1}, zp);
  GC("dequantize per tensor", TP_OP_DEQUANTIZE, NULL, 2, xq, RND((1), 0.5, 2), NULL);
  GC("dequantize per tensor, zero point", TP_OP_DEQUANTIZE, NULL, 2, xq, RND((1), 0.5, 2), z1);
  GC("dequantize per axis, zero point", TP_OP_DEQUANTIZE, NULL, 2, xq, RND((2, 1), 0.5, 2), z2);
}

/* rnn / gru / lstm: every float operand, each direction, sequence_lens, clip, options */
static double rec_alpha, rec_beta; /* act_params of the replaced activations, when rec_params */
static int rec_params;
static void rec_case(const char *what, tp_op op, int64_t dir, int with_lens, int64_t act_code, double clip, int flag,
                     int line) {
  const int64_t S = 3, N = 2, I = 3, H = 2, D = dir == 2 ? 2 : 1;
  const int G = op == TP_OP_LSTM ? 4 : op == TP_OP_GRU ? 3 : 1, nact = op == TP_OP_LSTM ? 3 : op == TP_OP_GRU ? 2 : 1;
  tp_attrs at = A();
  at.dim = H, at.dim1 = dir, at.clip = clip, at.keepdim = flag;
  if (act_code >= 0) { /* the first activation of each direction replaced */
    at.nints = nact * (int)D;
    for (int i = 0; i < at.nints; i++) at.ints[i] = (i % nact == 0) ? act_code : (op == TP_OP_RNN || i % nact > 0 ? 1 : 0);
    if (rec_params) { /* each activation's alpha, beta; the defaults (unused by sigmoid, tanh) for the others */
      at.nfloats = 2 * at.nints;
      for (int i = 0; i < at.nints; i++) at.floats[2 * i] = rec_alpha, at.floats[2 * i + 1] = rec_beta;
    }
  }
  tp_tensor *in[8] = {
      rnd(3, (int64_t[]){S, N, I}, -1, 1), rnd(3, (int64_t[]){D, G * H, I}, -0.8, 0.8),
      rnd(3, (int64_t[]){D, G * H, H}, -0.8, 0.8), rnd(2, (int64_t[]){D, 2 * G * H}, -0.5, 0.5),
      with_lens ? I64((2), 3, 2) : NULL, rnd(3, (int64_t[]){D, N, H}, -0.5, 0.5),
      rnd(3, (int64_t[]){D, N, H}, -0.5, 0.5), rnd(2, (int64_t[]){D, 3 * H}, -0.5, 0.5)};
  int nin = op == TP_OP_LSTM ? 8 : 6;
  unsigned diff = op == TP_OP_LSTM ? 0xEF : 0x2F; /* all but sequence_lens */
  gradcheck_(line, what, op, nin, in, &at, diff);
}
static void test_recurrent(void) {
  static const tp_op ops[] = {TP_OP_RNN, TP_OP_GRU, TP_OP_LSTM};
  for (int o = 0; o < 3; o++)
    for (int dir = 0; dir < 3; dir++)
      for (int lens = 0; lens < 2; lens++) {
        char what[64];
        snprintf(what, sizeof what, "%s direction %d%s", tp_op_name(ops[o]), dir, lens ? " sequence_lens" : "");
        rec_case(what, ops[o], dir, lens, -1, 0, 0, __LINE__);
      }
  rec_case("rnn relu, clip", TP_OP_RNN, 0, 0, 2, 0.6, 0, __LINE__);
  rec_case("gru linear_before_reset", TP_OP_GRU, 2, 1, -1, 0, 1, __LINE__);
  rec_case("gru clip", TP_OP_GRU, 0, 0, -1, 0.7, 0, __LINE__);
  rec_case("lstm input_forget", TP_OP_LSTM, 1, 1, -1, 0, 1, __LINE__);
  rec_case("lstm clip", TP_OP_LSTM, 0, 0, -1, 0.5, 0, __LINE__);
  /* the activations with parameters (the first of each direction), ONNX's defaults and given ones */
  static const struct { const char *what; tp_op op; int code, params; double a, b; } acts[] = {
      {"rnn affine", TP_OP_RNN, TP_RNN_AFFINE, 1, 0.7, 0.2},
      {"rnn leaky_relu", TP_OP_RNN, TP_RNN_LEAKY_RELU, 0, 0, 0},
      {"rnn thresholded_relu", TP_OP_RNN, TP_RNN_THRESHOLDED_RELU, 1, 0.15, 0},
      {"gru scaled_tanh", TP_OP_GRU, TP_RNN_SCALED_TANH, 1, 0.9, 1.3},
      {"lstm hard_sigmoid", TP_OP_LSTM, TP_RNN_HARD_SIGMOID, 0, 0, 0},
      {"rnn elu", TP_OP_RNN, TP_RNN_ELU, 1, 0.6, 0},
      {"lstm softsign", TP_OP_LSTM, TP_RNN_SOFTSIGN, 0, 0, 0},
      {"rnn softplus", TP_OP_RNN, TP_RNN_SOFTPLUS, 0, 0, 0},
  };
  for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++) {
    rec_params = acts[i].params, rec_alpha = acts[i].a, rec_beta = acts[i].b;
    rec_case(acts[i].what, acts[i].op, 2, 1, acts[i].code, 0, 0, __LINE__);
  }
  rec_params = 0;
}

/* grid_sample: grid points whose denormalized coordinates sit well inside a
 * cell (x.3 / x.6 / x.75), so the finite differences never cross a kink */
static void test_grid_sample(void) {
  const int64_t H = 4, W = 5;
  static const double vx[6] = {0.3, 1.6, 3.25, -0.3, 4.3, -2.4}, vy[6] = {2.6, 0.3, 1.75, 3.3, -0.2, 5.7};
  for (int ac = 0; ac < 2; ac++)
    for (int pad = 0; pad < 2; pad++)
      for (int mode = 0; mode < 2; mode++) {
        float gd[12];
        for (int i = 0; i < 6; i++) {
          double dx = (double)W, dy = (double)H;
          gd[2 * i] = (float)(ac ? 2 * vx[i] / (dx - 1) - 1 : (2 * vx[i] + 1) / dx - 1);
          gd[2 * i + 1] = (float)(ac ? 2 * vy[i] / (dy - 1) - 1 : (2 * vy[i] + 1) / dy - 1);
        }
        tp_tensor *grid = mk_(__LINE__, TP_F32, 4, (int64_t[]){1, 2, 3, 2}, gd);
        tp_tensor *xx = rnd(4, (int64_t[]){1, 2, H, W}, -1, 1);
        tp_attrs at = A();
        at.dim = mode, at.dim1 = pad, at.keepdim = ac;
        char what[64];
        snprintf(what, sizeof what, "grid_sample %s %s align_corners %d", mode ? "nearest" : "bilinear",
                 pad ? "border" : "zeros", ac);
        GC(what, TP_OP_GRID_SAMPLE, &at, 3, xx, grid);
      }
}

/* roi_align: x's gradient, avg and max, with and without half_pixel, a fixed and the
 * adaptive sampling ratio, a scale, regions reaching outside the image */
static void test_roi_align(void) {
  tp_tensor *rois = F32((3, 4), 0.5, 0.5, 3.2, 2.7, -1.5, 1.0, 2.0, 4.6, 2.2, 0.1, 5.9, 3.3);
  tp_tensor *bi = I64((3), 0, 1, 1);
  for (int maxm = 0; maxm < 2; maxm++)
    for (int half = 0; half < 2; half++)
      for (int sr = 0; sr < 3; sr += 2) {
        tp_attrs at = A();
        at.nints = 3, at.ints[0] = 2, at.ints[1] = 3, at.ints[2] = sr;
        at.dim = maxm, at.keepdim = half, at.eps = sr ? 1.0 : 0.8;
        char what[80];
        snprintf(what, sizeof what, "roi_align %s half_pixel %d sampling_ratio %d", maxm ? "max" : "avg", half, sr);
        tp_tensor *x = maxm ? spaced(4, (int64_t[]){2, 2, 5, 6}) : rnd(4, (int64_t[]){2, 2, 5, 6}, -1, 1);
        GC(what, TP_OP_ROI_ALIGN, &at, 1, x, rois, bi);
      }
}

/* hand-computed: y = sum(x*x) -> 2x; twice with retain_graph -> 4x; a diamond */
static void test_hand(void) {
  tp_tensor *x = F32((3), 1, 2, 3), *sq = NULL, *y = NULL;
  CHECK_OK(tp_tensor_set_requires_grad(x, 1));
  CHECK(tp_tensor_is_leaf(x));
  CHECK_OK(tp_mul(x, x, &sq));
  track(sq);
  CHECK(!tp_tensor_is_leaf(sq) && tp_tensor_requires_grad(sq));
  CHECK_OK(tp_sum(sq, 0, NULL, 0, &y));
  track(y);
  CHECK_OK(tp_backward_ex(y, NULL, 1));
  EXPECT(tp_tensor_grad(x), TP_F32, (3), 2, 4, 6);
  CHECK_OK(tp_backward(y, NULL));
  EXPECT(tp_tensor_grad(x), TP_F32, (3), 4, 8, 12);
  CHECK_OK(tp_tensor_set_grad(x, NULL));
  CHECK(tp_tensor_grad(x) == NULL);
  /* diamond: a = 2x, b = 3x, y = sum(a*b) = 6 sum x^2 -> 12x */
  tp_tensor *a = NULL, *b = NULL, *ab = NULL, *z = NULL;
  CHECK_OK(tp_mul(x, wflt(2), &a));
  track(a);
  CHECK_OK(tp_mul(x, wflt(3), &b));
  track(b);
  CHECK_OK(tp_mul(a, b, &ab));
  track(ab);
  CHECK_OK(tp_sum(ab, 0, NULL, 0, &z));
  track(z);
  CHECK_OK(tp_backward(z, NULL));
  EXPECT(tp_tensor_grad(x), TP_F32, (3), 12, 24, 36);
  /* a leaf's own backward: its grad is the given gradient */
  tp_tensor *l = F32((2), 5, 6);
  tp_tensor_set_requires_grad(l, 1);
  tp_tensor *gl = F32((2), 1, -1);
  CHECK_OK(tp_backward(l, gl));
  EXPECT(tp_tensor_grad(l), TP_F32, (2), 1, -1);
  /* .grad is a copy (the first gradient moves only when nothing else holds it) */
  CHECK_OK(tp_tensor_assign(gl, F32((2), 7, 7)));
  EXPECT(tp_tensor_grad(l), TP_F32, (2), 1, -1);
  /* no_grad: nothing recorded */
  int prev = tp_set_grad_enabled(0);
  tp_tensor *n = NULL;
  CHECK_OK(tp_mul(x, x, &n));
  track(n);
  CHECK(!tp_tensor_requires_grad(n));
  tp_set_grad_enabled(prev);
  CHECK(tp_is_grad_enabled());
  /* detach: a leaf sharing storage */
  tp_tensor *d = NULL;
  CHECK_OK(tp_tensor_detach(sq, &d));
  track(d);
  CHECK(tp_tensor_is_leaf(d) && !tp_tensor_requires_grad(d));
  /* comparisons give results that do not require grad */
  tp_tensor *c = NULL;
  CHECK_OK(tp_op_call(TP_OP_GT, 2, (tp_tensor *[]){x, wflt(1)}, NULL, &c));
  track(c);
  CHECK(!tp_tensor_requires_grad(c));
}

static void expect_aerr_(int line, tp_status s, tp_status want, const char *needle) {
  checks++;
  if (s != want) FAILF_AT(line, "status %s, expected %s (%s)", tp_status_name(s), tp_status_name(want), tp_last_error());
  else if (!strstr(tp_last_error(), needle)) FAILF_AT(line, "message '%s' lacks '%s'", tp_last_error(), needle);
}
#define EXPECT_ERR(call, want, needle) expect_aerr_(__LINE__, (call), want, needle)

/* after an error: a fresh backward still works */
static void still_usable(int line) {
  tp_tensor *x = F32((2), 1, 2), *y = NULL, *s = NULL;
  tp_tensor_set_requires_grad(x, 1);
  if (tp_mul(x, x, &y) || (track(y), tp_sum(y, 0, NULL, 0, &s)) || (track(s), tp_backward(s, NULL))) {
    FAILF_AT(line, "the runtime is not usable after the error: %s", tp_last_error());
    return;
  }
  float g[2] = {0};
  tp_tensor_read(tp_tensor_grad(x), g, sizeof g);
  CHECKF(g[0] == 2 && g[1] == 4, "grad after the error: %g %g", g[0], g[1]);
}

static void test_errors(void) {
  tp_tensor *i = I32((2), 1, 2);
  EXPECT_ERR(tp_tensor_set_requires_grad(i, 1), TP_ERR_RUNTIME, "only Tensors of floating point dtype can require gradients");
  CHECK(!tp_tensor_requires_grad(i));
  still_usable(__LINE__);
  tp_tensor *x = F32((2, 2), 1, 2, 3, 4), *y = NULL, *s = NULL;
  EXPECT_ERR(tp_backward(x, NULL), TP_ERR_RUNTIME, "does not require grad");
  tp_tensor_set_requires_grad(x, 1);
  CHECK_OK(tp_mul(x, x, &y));
  track(y);
  EXPECT_ERR(tp_backward(y, NULL), TP_ERR_RUNTIME, "grad can be implicitly created only for scalar outputs");
  EXPECT_ERR(tp_backward(y, F32((2), 1, 1)), TP_ERR_RUNTIME, "Mismatch in shape");
  EXPECT_ERR(tp_tensor_set_requires_grad(y, 0), TP_ERR_RUNTIME, "only change requires_grad flags of leaf");
  still_usable(__LINE__);
  /* twice through a freed graph */
  CHECK_OK(tp_sum(y, 0, NULL, 0, &s));
  track(s);
  CHECK_OK(tp_backward(s, NULL));
  EXPECT_ERR(tp_backward(s, NULL), TP_ERR_RUNTIME, "Trying to backward through the graph a second time");
  still_usable(__LINE__);
  /* in-place modification of a saved tensor */
  tp_tensor *z = F32((2, 2), 1, 1, 1, 1), *p = NULL, *ps = NULL;
  CHECK_OK(tp_mul(x, z, &p));
  track(p);
  CHECK_OK(tp_sum(p, 0, NULL, 0, &ps));
  track(ps);
  uint64_t v0 = tp_tensor_version(z);
  CHECK_OK(tp_tensor_assign(z, F32((2, 2), 2, 2, 2, 2)));
  CHECK(tp_tensor_version(z) == v0 + 1);
  /* a new tensor starts at version 0, also where a written one was freed */
  for (int k = 0; k < 4; k++) {
    tp_tensor *w1 = NULL;
    CHECK_OK(tp_tensor_new(TP_F32, 1, (int64_t[]){3}, (float[]){1, 2, 3}, &w1));
    CHECKF(tp_tensor_version(w1) == 0, "a new tensor at version %llu", (unsigned long long)tp_tensor_version(w1));
    for (int j = 0; j < 3; j++) CHECK_OK(tp_tensor_assign(w1, w1));
    tp_tensor_release(w1);
  }
  EXPECT_ERR(tp_backward(ps, NULL), TP_ERR_RUNTIME, "modified by an inplace operation");
  still_usable(__LINE__);
  /* in-place writes refused on a leaf that requires grad, and on a recorded result */
  EXPECT_ERR(tp_tensor_assign(x, z), TP_ERR_RUNTIME, "a leaf Variable that requires grad");
  EXPECT_ERR(tp_tensor_assign(p, z), TP_ERR_UNSUPPORTED, "detach");
  EXPECT_ERR(tp_tensor_assign(z, F32((2), 1, 2)), TP_ERR_INVALID_ARG, "does not match");
  EXPECT_ERR(tp_tensor_set_grad(x, F32((3), 1, 2, 3)), TP_ERR_INVALID_ARG, "assigned grad");
  /* an op whose derivative is still to come: every row has a formula or a reason now, so the
   * example is a mode without one (grid_sample's bicubic) */
  /* grid_sample's modes without a formula yet say so */
  tp_tensor *gx = RND((1, 1, 2, 2), -1, 1), *gg = F32((1, 1, 1, 2), 0.1, -0.2), *gy = NULL;
  tp_tensor_set_requires_grad(gx, 1);
  tp_attrs ga = A();
  ga.dim = 2; /* bicubic */
  CHECK_OK(tp_op_call(TP_OP_GRID_SAMPLE, 2, (tp_tensor *[]){gx, gg}, &ga, &gy));
  track(gy);
  EXPECT_ERR(tp_backward(gy, F32((1, 1, 1, 1), 1)), TP_ERR_UNSUPPORTED, "not implemented for bicubic mode");
  still_usable(__LINE__);
  EXPECT_ERR(tp_backward(NULL, NULL), TP_ERR_INVALID_ARG, "NULL");
}

/* every formula row has a gradient check above */
static void test_coverage(void) {
  for (int op = 0; op < TP_OP_COUNT; op++)
    if (tp_op_grad_kind((tp_op)op, NULL) == TP_GRAD_FORMULA)
      CHECKF(covered[op], "op '%s' has a derivative formula but no gradient check in test_grad.c",
             tp_op_name((tp_op)op));
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  size_t live0 = tp_live_tensors();
  static const op_test tests[] = {
      {"test_table", test_table},   {"test_pointwise", test_pointwise}, {"test_linalg", test_linalg},
      {"test_reductions", test_reductions}, {"test_views", test_views}, {"test_index", test_index},
      {"test_conv_pool", test_conv_pool}, {"test_det_dequant", test_det_dequant},
      {"test_recurrent", test_recurrent}, {"test_grid_sample", test_grid_sample},
      {"test_roi_align", test_roi_align},
      {"test_hand", test_hand},     {"test_errors", test_errors},
  };
  run_op_tests(tests, sizeof tests / sizeof tests[0]);
  test_coverage();
  if (tp_live_tensors() != live0) FAILF("leak: %zu live tensors at the end, %zu at the start", tp_live_tensors(), live0);
  printf("test_grad: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
