/* test_conv_prep.c (TP_TEST_LONG: ctest starts it first) - a plan's convolutions with a constant weight use it
 * prepared once (tp_conv_prep, src/ops/ops.h): the GEMM's A packed per
 * group (im2col, grouped, direct 1x1), or the Winograd transform packed per
 * slab (F(2x2, 3x3), 1-D F(2, 3) along either axis). For each path the
 * weight is a get_attr constant (as an ONNX initializer becomes one), the
 * input is fed at run time; the plan's output must be the same bits as the
 * eager graph runner's (the same conv computed without the prep) and within
 * a few ulp of the double reference (tp_op_exec_ref), on one thread and on
 * two, on two calls of the same plan; and the plan must have used a prep
 * (tp_conv2d_prep_uses) where the ISA table packs A (gemm_pack_a: AVX-512;
 * the other tables have none, and the conv prepares per call as before),
 * except for the depthwise control case, which has none. */
#include "compiler/compiler.h"
#include "lower/lower.h"
#include "runtime/dispatch.h"
#include "runtime/pool.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "b64.h"

typedef struct pcase {
  const char *name;
  int64_t N, C, H, W, M, KH, KW, G;
  int win[8]; /* stride h w, pads top left bottom right, dilation h w */
  int bias;
  int path;   /* the path tp_conv2d_path must choose */
  const char *epi; /* NULL, or the op after the conv ("relu"): a conv kernel with an epilogue */
} pcase;

static const pcase cases[] = {
    {"im2col 3x3/2", 1, 5, 17, 19, 12, 3, 3, 1, {2, 2, 1, 1, 1, 1, 1, 1}, 1, TP_CONV_IM2COL, NULL},
    {"im2col 3x3/2 + relu", 2, 5, 17, 19, 12, 3, 3, 1, {2, 2, 1, 1, 1, 1, 1, 1}, 0, TP_CONV_IM2COL, "relu"},
    {"im2col 1x3 on a 12x4 plane (few tiles)", 1, 96, 12, 4, 96, 1, 3, 1, {1, 1, 0, 1, 0, 1, 1, 1}, 1, TP_CONV_IM2COL,
     "relu"},
    {"grouped im2col", 1, 16, 20, 24, 32, 3, 3, 4, {1, 1, 1, 1, 1, 1, 1, 1}, 1, TP_CONV_IM2COL, NULL},
    {"grouped direct 1x1", 1, 16, 9, 40, 24, 1, 1, 2, {1, 1, 0, 0, 0, 0, 1, 1}, 1, TP_CONV_DIRECT, NULL},
    {"winograd 3x3 (blocks)", 1, 96, 40, 56, 24, 3, 3, 1, {1, 1, 1, 1, 1, 1, 1, 1}, 1, TP_CONV_WINO2D, NULL},
    /* C above the GEMM's depth blocking (KC 384 on AVX-512): V written into two depth blocks of panels */
    {"winograd 3x3, 400 channels", 1, 400, 8, 10, 16, 3, 3, 1, {1, 1, 1, 1, 1, 1, 1, 1}, 1, TP_CONV_WINO2D, NULL},
    {"winograd 3x3 + relu, odd sides", 2, 16, 13, 15, 20, 3, 3, 1, {1, 1, 1, 1, 1, 1, 1, 1}, 1, TP_CONV_WINO2D, "relu"},
    {"winograd 3x1", 1, 24, 72, 32, 24, 3, 1, 1, {1, 1, 0, 0, 0, 0, 1, 1}, 1, TP_CONV_WINO1D, "relu"},
    {"winograd 1x3", 1, 48, 16, 34, 48, 1, 3, 1, {1, 1, 0, 0, 0, 0, 1, 1}, 0, TP_CONV_WINO1D, NULL},
    {"depthwise (no prep)", 1, 8, 10, 12, 8, 3, 3, 8, {1, 1, 1, 1, 1, 1, 1, 1}, 1, TP_CONV_DEPTHWISE, NULL},
    /* fewer than 16 positions: the transposed GEMM (w^T packed as B), then transposed into y */
    {"STFT-like 1-D conv (transposed GEMM)", 1, 1, 1, 1280, 257, 1, 512, 1, {1, 160, 0, 0, 0, 0, 1, 1}, 1,
     TP_CONV_IM2COL_T, NULL},
    {"3x1 on a 6x2 plane (transposed GEMM) + relu", 2, 96, 6, 2, 96, 3, 1, 1, {1, 1, 0, 0, 0, 0, 1, 1}, 0,
     TP_CONV_IM2COL_T, "relu"},
    {"grouped 3x3 on 3x3, depth over KC (transposed GEMM)", 1, 96, 3, 3, 64, 3, 3, 2, {1, 1, 1, 1, 1, 1, 1, 1}, 1,
     TP_CONV_IM2COL_T, NULL},
};

/* isa: NULL, or an ISA table switched to after lowering (the plan's prep,
 * packed by the first table, must then not be used) */
static void run_case(const pcase *c, int threads, const char *isa) {
  int64_t OH = (c->H + c->win[2] + c->win[4] - c->win[6] * (c->KH - 1) - 1) / c->win[0] + 1;
  int64_t OW = (c->W + c->win[3] + c->win[5] - c->win[7] * (c->KW - 1) - 1) / c->win[1] + 1;
  int64_t xs[4] = {c->N, c->C, c->H, c->W}, ws[4] = {c->M, c->C / c->G, c->KH, c->KW};
  tp_tensor *x = NULL, *w = NULL, *b = NULL, *ref = NULL;
  CHECK_OK(tp_randn(4, xs, 7, &x));
  CHECK_OK(tp_randn(4, ws, 8, &w));
  CHECK_OK(tp_randn(1, (int64_t[]){c->M}, 9, &b));
  if (!x || !w || !b) return;
  /* the path the geometry takes */
  tp_attrs at;
  memset(&at, 0, sizeof at);
  tp_desc dx, dw;
  tp_desc_of(x, &dx), tp_desc_of(w, &dw);
  tp_conv2d_geom g;
  size_t cap = 1 << 22;
  char *text = tp_alloc(cap), *data = tp_alloc(cap);
  int o = snprintf(text, cap,
                   "tpgraph v1\n%%x = placeholder : f32[%lld,%lld,%lld,%lld]\n%%w = get_attr \"w\" : f32[%lld,%lld,%lld,%lld]\n"
                   "%%b = get_attr \"b\" : f32[%lld]\n",
                   (long long)c->N, (long long)c->C, (long long)c->H, (long long)c->W, (long long)c->M,
                   (long long)(c->C / c->G), (long long)c->KH, (long long)c->KW, (long long)c->M);
  char ot[96];
  snprintf(ot, sizeof ot, "f32[%lld,%lld,%lld,%lld]", (long long)c->N, (long long)c->M, (long long)OH, (long long)OW);
  o += snprintf(text + o, cap - (size_t)o, "%%0 = conv2d(%%x, %%w, %s, window=[%d,%d,%d,%d,%d,%d,%d,%d], groups=%lld) : %s\n",
                c->bias ? "%b" : "none", c->win[0], c->win[1], c->win[2], c->win[3], c->win[4], c->win[5], c->win[6],
                c->win[7], (long long)c->G, ot);
  if (c->epi) o += snprintf(text + o, cap - (size_t)o, "%%1 = %s(%%0) : %s\noutput(%%1)\n", c->epi, ot);
  else o += snprintf(text + o, cap - (size_t)o, "output(%%0)\n");
  b64(tp_tensor_ptr(w), sizeof(float) * (size_t)tp_tensor_numel(w), data);
  o += snprintf(text + o, cap - (size_t)o, "data %%w f32[%lld,%lld,%lld,%lld] %s\n", (long long)ws[0], (long long)ws[1],
                (long long)ws[2], (long long)ws[3], data);
  b64(tp_tensor_ptr(b), sizeof(float) * (size_t)c->M, data);
  o += snprintf(text + o, cap - (size_t)o, "data %%b f32[%lld] %s\n", (long long)c->M, data);
  tp_graph *gr = NULL;
  tp_plan *pl = NULL;
  if (tp_graph_parse(text, strlen(text), &gr) != TP_OK) FAILF("%s: parse: %s", c->name, tp_last_error());
  else if (tp_lower(gr, NULL, &pl) != TP_OK) FAILF("%s: lower: %s", c->name, tp_last_error());
  /* the conv node's attributes, for its geometry and the reference */
  for (int i = 0; gr && i < gr->n; i++)
    if (gr->nodes[i].kind == TP_NODE_CALL && gr->nodes[i].op == TP_OP_CONV2D) at = gr->nodes[i].attrs;
  CHECK_OK(tp_conv2d_geometry(&dx, &dw, &at, &g));
  CHECKF(tp_conv2d_path(&g) == c->path, "%s: path %d, expected %d", c->name, tp_conv2d_path(&g), c->path);
  tp_tensor *rin[3] = {x, w, c->bias ? b : NULL};
  CHECK_OK(tp_op_exec_ref(TP_OP_CONV2D, 3, rin, &at, &ref));
  CHECK_OK(tp_pool_set_threads(threads));
  const void *packed_by = tp_kern();
  if (isa && tp_set_isa(isa) != TP_OK) FAILF("tp_set_isa(%s): %s", isa, tp_last_error()), isa = NULL;
  for (int rep = 0; pl && ref && rep < 2; rep++) {
    tp_tensor *e = NULL, *y = NULL;
    int ne = 0, ny = 0;
    int64_t uses0 = tp_conv2d_prep_uses();
    CHECK_OK(tp_plan_run(pl, 1, &x, 1, &y, &ny));
    int64_t used = tp_conv2d_prep_uses() - uses0;
    CHECK_OK(tp_graph_run(gr, 1, &x, 1, &e, &ne));
    int want = c->path != TP_CONV_DEPTHWISE && tp_kern()->gemm_pack_a != NULL && (const void *)tp_kern() == packed_by;
    CHECKF(used == want, "%s (%d threads, %s): the plan used %lld preps, expected %d", c->name, threads,
           tp_kern()->isa, (long long)used, want);
    if (!y || !e) break;
    int64_t n = tp_tensor_numel(ref);
    CHECK(tp_tensor_numel(y) == n && tp_tensor_numel(e) == n);
    const float *fy = tp_tensor_ptr(y), *fe = tp_tensor_ptr(e);
    /* bound: a few ulp of the sum of |terms| (Winograd's transforms round too) */
    double scale = sqrt((double)(c->C / c->G * c->KH * c->KW)) * 4.0;
    for (int64_t i = 0; i < n; i++) {
      double r = tp_tensor_get_f64(ref, i);
      if (c->epi) r = r > 0 ? r : 0;
      if (memcmp(&fy[i], &fe[i], sizeof(float))) {
        FAILF("%s (%d threads, call %d) element %lld: plan %.9g, eager %.9g (not the same bits)", c->name, threads,
              rep + 1, (long long)i, (double)fy[i], (double)fe[i]);
        break;
      }
      if (!(fabs(fy[i] - r) <= 1e-5 * scale * (1 + fabs(r)))) {
        FAILF("%s (%d threads) element %lld: plan %.9g, reference %.9g", c->name, threads, (long long)i, (double)fy[i], r);
        break;
      }
    }
    tp_tensor_release(y);
    tp_tensor_release(e);
  }
  CHECK_OK(tp_pool_set_threads(0));
  if (isa) CHECK_OK(tp_set_isa("best"));
  tp_plan_free(pl);
  tp_graph_free(gr);
  tp_free(text), tp_free(data);
  tp_tensor_release(ref), tp_tensor_release(x), tp_tensor_release(w), tp_tensor_release(b);
}

/* ---- a dynamic width: the plans of other sizes (tp_plan_new_shared from
 * the template) borrow the first plan's prep when the path is the same, or
 * prepare their own; every size uses one, and matches the reference ---- */
static tp_tensor *DW, *DB;
static tp_status dyn_conv(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)ud, (void)nin, (void)max_out;
  int64_t st[2] = {1, 1}, pads[4] = {1, 1, 1, 1}, dil[2] = {1, 1};
  tp_status s = tp_conv2d(in[0], DW, DB, st, pads, dil, 1, &outs[0]);
  *nout = s ? 0 : 1;
  return s;
}

static void test_dynamic_width(void) {
  int64_t ws[4] = {16, 16, 3, 3};
  CHECK_OK(tp_randn(4, ws, 21, &DW));
  CHECK_OK(tp_randn(1, (int64_t[]){16}, 22, &DB));
  tp_callable fn = {dyn_conv, NULL};
  tp_compile_options o;
  tp_compile_options_init(&o);
  o.dynamic = 1;
  o.backend = "stax";
  tp_compiled *c = NULL;
  CHECK_OK(tp_compile(&fn, &o, &c));
  /* widths: captured at 32, then others (the 3x3 is Winograd at each: 12
   * rows x >= 6 columns), sizes seen before again */
  const int64_t widths[] = {32, 40, 48, 64, 40, 96, 32};
  for (int i = 0; c && i < (int)(sizeof widths / sizeof widths[0]); i++) {
    int64_t xs[4] = {1, 16, 12, widths[i]};
    tp_tensor *x = NULL, *y = NULL, *ref = NULL;
    CHECK_OK(tp_randn(4, xs, 30 + (uint64_t)i, &x));
    int n = 0;
    int64_t u0 = tp_conv2d_prep_uses();
    tp_status s = tp_compiled_call(c, 1, &x, 1, &y, &n);
    int64_t used = tp_conv2d_prep_uses() - u0;
    if (s || n != 1) {
      FAILF("dynamic width %lld: %s", (long long)widths[i], tp_last_error());
      tp_tensor_release(x);
      continue;
    }
    if (i > 0) /* the first call captures and runs eagerly */
      CHECKF(used == (tp_kern()->gemm_pack_a != NULL), "width %lld: %lld preps used", (long long)widths[i], (long long)used);
    tp_attrs at;
    tp_attrs_init(&at);
    tp_tensor *rin[3] = {x, DW, DB};
    /* the conv's window attributes, as tp_conv2d sets them */
    at.nints = 8;
    int64_t win[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    memcpy(at.ints, win, sizeof win);
    at.dim = 1;
    if (tp_op_exec_ref(TP_OP_CONV2D, 3, rin, &at, &ref) != TP_OK) {
      FAILF("reference at width %lld: %s", (long long)widths[i], tp_last_error());
    } else {
      int64_t cnt = tp_tensor_numel(ref);
      CHECK(tp_tensor_numel(y) == cnt);
      for (int64_t q = 0; q < cnt; q++) {
        double r = tp_tensor_get_f64(ref, q), v = tp_tensor_get_f64(y, q);
        if (!(fabs(v - r) <= 1e-4 * (1 + fabs(r)))) {
          FAILF("width %lld element %lld: %.9g, reference %.9g", (long long)widths[i], (long long)q, v, r);
          break;
        }
      }
    }
    tp_tensor_release(ref), tp_tensor_release(x), tp_tensor_release(y);
  }
  tp_compiled_free(c);
  tp_tensor_release(DW), tp_tensor_release(DB);
}

int main(void) {
  test_dynamic_width();
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    run_case(&cases[i], 1, NULL);
    if (tp_pool_has_threads()) run_case(&cases[i], 2, NULL);
    run_case(&cases[i], 1, "sse2"); /* lowered on the best table, run on another */
  }
  printf("%s: %d failures (%d checks)\n", failures ? "FAIL" : "ok", failures, checks);
  return failures != 0;
}
