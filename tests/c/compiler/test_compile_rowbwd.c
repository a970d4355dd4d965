/* test_compile_rowbwd.c - the backward of softmax and layer_norm in a
 * compiled training call (tp_compile, a compiled call, tp_backward), on the
 * path a C user takes, against a double-precision reference written here
 * (the analytic gradients, themselves checked against central finite
 * differences of the double loss) and against eager autograd:
 *
 * - softmax over every axis of a [3, 4, 5] input with masked (-inf)
 *   entries, loss = sum(softmax(x) * W): the input's gradient;
 * - layer_norm over the last dim with and without weight and bias, and
 *   over rows of 1 element, loss = sum(layer_norm(x) * W): the gradients
 *   of the input, the weight and the bias;
 * - a NaN in one row: that row's gradients are NaN, the others finite and
 *   right (compiled as eager);
 * - float32 tolerance: |a - b| <= 1e-5 + 2e-4 max|b| per tensor;
 * - the fusion itself (docs/kernel-ir.md, row-map fusion): over the last
 *   dim, softmax's backward y * (g - sum(g * y)) is one row kernel;
 *   layer_norm's dx (its two row means and the map) is one row kernel
 *   (explain's backward_plan counts). */
#include "../ops/op_expect.h"
#include <math.h>
#include <string.h>

typedef struct lcase {
  int kind;       /* 0 softmax, 1 layer_norm */
  int dim;        /* softmax */
  int affine;     /* layer_norm: weight and bias */
  tp_tensor *W, *g, *b;
} lcase;

static tp_status lc_loss(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)nin, (void)max_out;
  lcase *c = ud;
  *nout = 0;
  tp_attrs at;
  tp_attrs_init(&at);
  tp_tensor *y = NULL, *p = NULL;
  tp_status s;
  if (c->kind == 0) {
    at.dim = c->dim;
    s = tp_op_call(TP_OP_SOFTMAX, 1, (tp_tensor *[]){in[0]}, &at, &y);
  } else {
    int nd = tp_tensor_ndim(in[0]);
    at.ints[0] = tp_tensor_shape(in[0])[nd - 1], at.nints = 1, at.eps = 1e-5;
    s = tp_op_call(TP_OP_LAYER_NORM, 3, (tp_tensor *[]){in[0], c->g, c->b}, &at, &y);
  }
  if (!s) s = tp_mul(y, c->W, &p);
  if (!s) s = tp_sum(p, 0, NULL, 0, &outs[0]);
  tp_tensor_release(y), tp_tensor_release(p);
  if (!s) *nout = 1;
  return s;
}

/* ---- the double reference ---- */
static void shape_of(tp_tensor *t, int64_t *sh, int *nd) {
  *nd = tp_tensor_ndim(t);
  for (int i = 0; i < *nd; i++) sh[i] = tp_tensor_shape(t)[i];
}
/* loss and gradients in double: dx (n), dg and db (R each, layer_norm) */
static double ref_loss(const lcase *c, int nd, const int64_t *sh, const double *x, const double *W, const double *g,
                       const double *b, double *dx, double *dg, double *db) {
  int64_t n = 1;
  for (int i = 0; i < nd; i++) n *= sh[i];
  int d = c->kind == 0 ? (c->dim < 0 ? c->dim + nd : c->dim) : nd - 1;
  int64_t R = sh[d], inner = 1;
  for (int i = d + 1; i < nd; i++) inner *= sh[i];
  int64_t outer = n / (R * inner);
  double L = 0;
  if (dg) memset(dg, 0, sizeof(double) * (size_t)R), memset(db, 0, sizeof(double) * (size_t)R);
  for (int64_t o = 0; o < outer; o++)
    for (int64_t q = 0; q < inner; q++) {
      int64_t base = o * R * inner + q;
#define AT(r) (base + (r) * inner)
      if (c->kind == 0) {
        double m = -INFINITY, s = 0, sw = 0;
        for (int64_t r = 0; r < R; r++) m = x[AT(r)] > m || isnan(x[AT(r)]) ? x[AT(r)] : m;
        for (int64_t r = 0; r < R; r++) s += exp(x[AT(r)] - m);
        for (int64_t r = 0; r < R; r++) {
          double y = exp(x[AT(r)] - m) / s;
          L += y * W[AT(r)], sw += y * W[AT(r)];
        }
        if (dx)
          for (int64_t r = 0; r < R; r++) dx[AT(r)] = exp(x[AT(r)] - m) / s * (W[AT(r)] - sw);
      } else {
        double mu = 0, var = 0, m1 = 0, m2 = 0;
        for (int64_t r = 0; r < R; r++) mu += x[AT(r)] / (double)R;
        for (int64_t r = 0; r < R; r++) var += (x[AT(r)] - mu) * (x[AT(r)] - mu) / (double)R;
        double rs = 1 / sqrt(var + 1e-5);
        for (int64_t r = 0; r < R; r++) {
          double xh = (x[AT(r)] - mu) * rs, dy = W[AT(r)] * (g ? g[r] : 1);
          L += (g ? xh * g[r] + b[r] : xh) * W[AT(r)];
          m1 += dy / (double)R, m2 += dy * xh / (double)R;
          if (dg) dg[r] += W[AT(r)] * xh, db[r] += W[AT(r)];
        }
        if (dx)
          for (int64_t r = 0; r < R; r++) {
            double xh = (x[AT(r)] - mu) * rs, dy = W[AT(r)] * (g ? g[r] : 1);
            dx[AT(r)] = rs * (dy - m1 - xh * m2);
          }
      }
#undef AT
    }
  return L;
}

static double *read_d(tp_tensor *t) {
  int64_t n = tp_tensor_numel(t);
  float *f = malloc(sizeof(float) * (size_t)(n ? n : 1));
  double *d = malloc(sizeof(double) * (size_t)(n ? n : 1));
  CHECK_OK(tp_tensor_read(t, f, sizeof(float) * (size_t)n));
  for (int64_t i = 0; i < n; i++) d[i] = f[i];
  free(f);
  return d;
}

/* compiled a against reference r (double) or NULL-able eager e: NaN where the
 * reference is NaN, else within float32 tolerance */
static void expect_grad(const char *what, tp_tensor *a, const double *r, int64_t n) {
  checks++;
  if (!a || tp_tensor_numel(a) != n) {
    FAILF("%s: gradient missing or of %lld elements (want %lld)", what, a ? (long long)tp_tensor_numel(a) : -1LL,
          (long long)n);
    return;
  }
  double *x = read_d(a), mx = 0, err = 0;
  int64_t at = 0, nanbad = -1;
  for (int64_t k = 0; k < n; k++)
    if (!isnan(r[k])) mx = fmax(mx, fabs(r[k]));
  for (int64_t k = 0; k < n; k++) {
    if (isnan(r[k]) != isnan(x[k])) nanbad = k;
    else if (!isnan(r[k]) && fabs(x[k] - r[k]) > err) err = fabs(x[k] - r[k]), at = k;
  }
  if (nanbad >= 0) FAILF("%s: compiled %g, reference %g at %lld", what, x[nanbad], r[nanbad], (long long)nanbad);
  else if (!(err <= 1e-5 + 2e-4 * mx))
    FAILF("%s: compiled %g vs reference %g at %lld (max |ref| %g)", what, x[at], r[at], (long long)at, mx);
  free(x);
}

static tp_tensor *grad_take(tp_tensor *t) {
  tp_tensor *g = t ? tp_tensor_grad(t) : NULL;
  if (g) tp_tensor_retain(g), track(g);
  if (t) tp_tensor_set_grad(t, NULL);
  return g;
}

/* plan counts from explain's backward_plan */
static void bw_counts(tp_compiled *cc, int *pointwise, int *row) {
  char *ex = NULL;
  *pointwise = *row = -1;
  CHECK_OK(tp_compiled_explain(cc, &ex));
  const char *p = ex ? strstr(ex, "\"backward_plan\": {") : NULL;
  if (p) {
    const char *q = strstr(p, "\"pointwise\": "), *r = strstr(p, "\"row\": ");
    if (q) *pointwise = atoi(q + 13);
    if (r) *row = atoi(r + 7);
  }
  tp_free_buffer(ex);
}

/* x (float32 data of shape sh) through case c: compiled and eager
 * gradients against the reference; nan_row >= 0: x's flat element nan_at is
 * NaN. Returns the compiled backward plan's pointwise and row kernel counts. */
static void run_case(const char *what, lcase *c, int nd, const int64_t *sh, const float *xv, int *npw, int *nrow) {
  char name[96];
  tp_tensor *x = NULL;
  CHECK_OK(tp_tensor_new(TP_F32, nd, sh, xv, &x));
  track(x);
  CHECK_OK(tp_tensor_set_requires_grad(x, 1));
  int64_t n = tp_tensor_numel(x), R = sh[nd - 1];
  double *xd = read_d(x), *W = read_d(c->W), *g = c->affine ? read_d(c->g) : NULL, *b = c->affine ? read_d(c->b) : NULL;
  double *dx = malloc(sizeof(double) * (size_t)n), *dg = malloc(sizeof(double) * (size_t)R),
         *db = malloc(sizeof(double) * (size_t)R);
  double L = ref_loss(c, nd, sh, xd, W, g, b, dx, c->kind ? dg : NULL, db);
  /* the reference's dx against central differences of its loss (h = 1e-6),
   * at the finite entries of finite rows */
  if (isfinite(L)) {
    double worst = 0, mx = 0;
    for (int64_t k = 0; k < n; k++) {
      if (!isfinite(xd[k])) continue;
      double x0 = xd[k];
      xd[k] = x0 + 1e-6;
      double lp = ref_loss(c, nd, sh, xd, W, g, b, NULL, NULL, NULL);
      xd[k] = x0 - 1e-6;
      double lm = ref_loss(c, nd, sh, xd, W, g, b, NULL, NULL, NULL);
      xd[k] = x0;
      worst = fmax(worst, fabs((lp - lm) / 2e-6 - dx[k])), mx = fmax(mx, fabs(dx[k]));
    }
    CHECKF(worst <= 1e-6 + 1e-6 * mx, "%s: the reference's dx is %g from central differences", what, worst);
  }
  tp_callable fn = {lc_loss, c};
  tp_compiled *cc = NULL;
  CHECK_OK(tp_compile(&fn, NULL, &cc));
  int f0 = failures;
  for (int k = 0; k < 2 && failures == f0; k++) { /* k = 0 compiled, 1 eager */
    tp_tensor *l = NULL;
    int no = 0;
    if (k == 0) CHECK_OK(tp_compiled_call(cc, 1, &x, 1, &l, &no));
    else CHECK_OK(lc_loss(c, 1, &x, 1, &l, &no));
    if (!l) break;
    double lv = 0;
    CHECK_OK(tp_tensor_item(l, &lv));
    CHECKF(isnan(L) ? isnan(lv) : fabs(lv - L) <= 1e-4 + 1e-5 * fabs(L), "%s: loss %.8g, reference %.8g", what, lv, L);
    CHECK_OK(tp_backward(l, NULL));
    tp_tensor_release(l);
    snprintf(name, sizeof name, "%s: %s dx", what, k ? "eager" : "compiled");
    expect_grad(name, grad_take(x), dx, n);
    if (c->affine) {
      snprintf(name, sizeof name, "%s: %s dweight", what, k ? "eager" : "compiled");
      expect_grad(name, grad_take(c->g), dg, R);
      snprintf(name, sizeof name, "%s: %s dbias", what, k ? "eager" : "compiled");
      expect_grad(name, grad_take(c->b), db, R);
    }
  }
  bw_counts(cc, npw, nrow);
  tp_compiled_free(cc);
  free(xd), free(W), free(g), free(b), free(dx), free(dg), free(db);
}

static tp_tensor *rnd(int nd, const int64_t *sh, uint64_t seed) {
  tp_tensor *t = NULL;
  CHECK_OK(tp_randn(nd, sh, seed, &t));
  return track(t);
}
static float *rnd_data(int64_t n, uint64_t seed) {
  tp_tensor *t = rnd(1, (int64_t[]){n}, seed);
  float *f = malloc(sizeof(float) * (size_t)n);
  CHECK_OK(tp_tensor_read(t, f, sizeof(float) * (size_t)n));
  return f;
}

static void test_softmax(void) {
  const int64_t sh[3] = {3, 4, 5};
  float *xv = rnd_data(60, 5);
  xv[7] = xv[33] = xv[59] = -INFINITY; /* masked entries (no row all masked) */
  for (int dim = -1; dim < 3; dim++) {
    lcase c = {0, dim, 0, rnd(3, sh, 6 + (uint64_t)dim), NULL, NULL};
    char what[48];
    snprintf(what, sizeof what, "softmax dim %d", dim);
    int npw, nrow;
    run_case(what, &c, 3, sh, xv, &npw, &nrow);
    /* over the last dim: softmax's backward is one row kernel; the one
     * pointwise kernel is the loss's gradient W (read twice by the row
     * kernel: materialized). Unfused: a row kernel of sum(g * y) and a
     * pointwise kernel y * (g - s), 2 pointwise in all */
    if (dim == -1 || dim == 2)
      CHECKF(nrow == 1 && npw == 1, "%s: backward plan has %d row and %d pointwise kernels (want 1, 1)", what,
             nrow, npw);
  }
  /* a NaN in row 2 of the last dim: that row NaN, the others right */
  xv[12] = NAN;
  lcase c = {0, -1, 0, rnd(3, sh, 9), NULL, NULL};
  int npw, nrow;
  run_case("softmax with a NaN", &c, 3, sh, xv, &npw, &nrow);
  free(xv);
}

static void test_layer_norm(void) {
  const int64_t sh[2] = {5, 8};
  float *xv = rnd_data(40, 11);
  for (int affine = 0; affine < 2; affine++) {
    lcase c = {1, 0, affine, rnd(2, sh, 12), NULL, NULL};
    if (affine) {
      c.g = rnd(1, (int64_t[]){8}, 13), c.b = rnd(1, (int64_t[]){8}, 14);
      CHECK_OK(tp_tensor_set_requires_grad(c.g, 1));
      CHECK_OK(tp_tensor_set_requires_grad(c.b, 1));
    }
    int npw, nrow;
    run_case(affine ? "layer_norm affine" : "layer_norm", &c, 2, sh, xv, &npw, &nrow);
    printf("layer_norm%s: backward plan: %d row, %d pointwise kernels\n", affine ? " affine" : "", nrow, npw);
    /* dx's two row means and its map: one row kernel (unfused: two row
     * kernels and a pointwise kernel) */
    CHECKF(nrow == 1, "layer_norm%s: backward plan has %d row kernels (want 1)", affine ? " affine" : "", nrow);
  }
  /* rows of 1 element: x-hat is 0, dx is 0 */
  lcase c1 = {1, 0, 1, rnd(2, (int64_t[]){6, 1}, 15), rnd(1, (int64_t[]){1}, 16), rnd(1, (int64_t[]){1}, 17)};
  CHECK_OK(tp_tensor_set_requires_grad(c1.g, 1));
  CHECK_OK(tp_tensor_set_requires_grad(c1.b, 1));
  int npw, nrow;
  run_case("layer_norm rows of 1", &c1, 2, (int64_t[]){6, 1}, xv, &npw, &nrow);
  /* a NaN in row 3 */
  xv[27] = NAN;
  lcase c2 = {1, 0, 0, rnd(2, sh, 18), NULL, NULL};
  run_case("layer_norm with a NaN", &c2, 2, sh, xv, &npw, &nrow);
  free(xv);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  size_t live0 = tp_live_tensors();
  static const op_test tests[] = {{"test_softmax", test_softmax}, {"test_layer_norm", test_layer_norm}};
  run_op_tests(tests, sizeof tests / sizeof tests[0]);
  tp_reset();
  if (tp_live_tensors() != live0) FAILF("leak: %zu live tensors at the end, %zu at the start", tp_live_tensors(), live0);
  printf("test_compile_rowbwd: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
