/* test_lower.c - the lowering core: each pass alone (structure of its
 * output), the scheduler's fusion decisions (a chain of six elementwise ops
 * is one kernel; bias + relu become a GEMM epilogue; softmax and
 * layer_norm are one row kernel each), the memory plan (reuse and in
 * place), and a differential test: random graphs of the supported ops run
 * through the stax plan and through the eager graph runner. */
#include "lower/lower.h"
#include "runtime/pool.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "check.h"


static tp_graph *parse(const char *text) {
  tp_graph *g = NULL;
  if (tp_graph_parse(text, strlen(text), &g) != TP_OK) {
    printf("FAIL parse: %s\n", tp_last_error());
    failures++;
  }
  return g;
}

static int count_calls(const tp_graph *g) {
  int n = 0;
  for (int i = 0; i < g->n; i++) n += g->nodes[i].kind == TP_NODE_CALL;
  return n;
}

static int count_kind(const tp_kir_program *p, tp_kir_kind k) {
  int n = 0;
  for (int i = 0; i < p->nkernels; i++) n += p->kernels[i].kind == k;
  return n;
}

/* ---- passes, one at a time ---- */
static void test_passes(void) {
  tp_graph *g;
  g = parse(
      "tpgraph v1\n"
      "%x = placeholder : f32[4]\n"
      "%c = get_attr \"c\" : f32[4]\n"
      "%0 = mul(%x, 1) : f32[4]\n"
      "%1 = add(%0, 0) : f32[4]\n"
      "%2 = exp(%c) : f32[4]\n"
      "%3 = add(%1, %2) : f32[4]\n"
      "%4 = add(%1, %2) : f32[4]\n"
      "%5 = neg(%x) : f32[4]\n"
      "%6 = mul(%3, %4) : f32[4]\n"
      "%t = placeholder : f32[2,3]\n"
      "%7 = transpose(%t, dim0=0, dim1=1) : f32[3,2]\n"
      "%8 = transpose(%7, dim0=1, dim1=0) : f32[2,3]\n"
      "output(%6, %8)\n"
      "data %c f32[4] AAAAAAAAgD8AAABAAABAQA==\n");
  if (!g) return;
  tp_graph *s = NULL, *f = NULL, *c = NULL, *d = NULL;
  CHECK(tp_pass_simplify(g, &s) == TP_OK);
  /* mul-by-1, add-0 and the double transpose are gone */
  CHECK(s && count_calls(s) == count_calls(g) - 3); /* the dead inner transpose stays */
  CHECK(tp_pass_fold(s, &f) == TP_OK);
  CHECK(f && tp_graph_find(f, "fold0") >= 0 && count_calls(f) == count_calls(s) - 1);
  CHECK(tp_pass_cse(f, &c) == TP_OK);
  CHECK(c && count_calls(c) == count_calls(f) - 1);
  CHECK(tp_pass_dce(c, &d) == TP_OK);
  CHECK(d && count_calls(d) == count_calls(c) - 2 && tp_graph_find(d, "5") < 0);
  /* the same numbers before and after */
  float xv[4] = {1, 2, 3, 4}, tv[6] = {1, 2, 3, 4, 5, 6};
  int64_t s4 = 4, s23[2] = {2, 3};
  tp_tensor *x, *t, *in[2], *o1[2] = {0}, *o2[2] = {0};
  tp_tensor_new(TP_F32, 1, &s4, xv, &x);
  tp_tensor_new(TP_F32, 2, s23, tv, &t);
  in[0] = x, in[1] = t;
  int n1 = 0, n2 = 0;
  CHECK(tp_graph_run(g, 2, in, 2, o1, &n1) == TP_OK);
  CHECK(d && tp_graph_run(d, 2, in, 2, o2, &n2) == TP_OK);
  for (int k = 0; k < 2 && n1 == 2 && n2 == 2; k++)
    for (int64_t i = 0; i < tp_tensor_numel(o1[k]); i++)
      CHECK(tp_tensor_get_f64(o1[k], i) == tp_tensor_get_f64(o2[k], i));
  for (int k = 0; k < 2; k++) tp_tensor_release(o1[k]), tp_tensor_release(o2[k]);
  /* decompose: gelu(tanh), softmax, layer_norm, linear -> primitives */
  tp_graph *dg = parse(
      "tpgraph v1\n"
      "%x = placeholder : f32[2,3]\n"
      "%w = placeholder : f32[4,3]\n"
      "%0 = gelu(%x, approximate=tanh) : f32[2,3]\n"
      "%1 = softmax(%0, dim=-1) : f32[2,3]\n"
      "%2 = layer_norm(%1, none, none, normalized_shape=[3], eps=1e-05) : f32[2,3]\n"
      "%3 = linear(%2, %w, none) : f32[2,4]\n"
      "output(%3)\n");
  tp_graph *dd = NULL;
  CHECK(dg && tp_pass_decompose(dg, &dd) == TP_OK);
  for (int i = 0; dd && i < dd->n; i++) {
    tp_op op = dd->nodes[i].op;
    if (dd->nodes[i].kind == TP_NODE_CALL) {
      CHECK(op != TP_OP_GELU && op != TP_OP_SOFTMAX && op != TP_OP_LAYER_NORM && op != TP_OP_LINEAR);
      /* every made node names the captured node it came from (explain()'s kernel_nodes) */
      const char *o = tp_node_origin(&dd->nodes[i]);
      if (strcmp(o, "0") && strcmp(o, "1") && strcmp(o, "2") && strcmp(o, "3"))
        FAILF("decompose: node %%%s comes from %%%s, not a captured node", dd->nodes[i].name, o);
    }
  }
  /* and through a copy (tp_graph_copy keeps tp_node.from) */
  tp_graph *dc = NULL;
  CHECK(dd && tp_graph_copy(dd, &dc) == TP_OK);
  for (int i = 0; dc && i < dc->n; i++) CHECK(!strcmp(tp_node_origin(&dc->nodes[i]), tp_node_origin(&dd->nodes[i])));
  tp_graph_free(dc);
  float wv[12];
  for (int i = 0; i < 12; i++) wv[i] = (float)(i % 5) - 2;
  int64_t s43[2] = {4, 3};
  tp_tensor *w;
  tp_tensor_new(TP_F32, 2, s43, wv, &w);
  tp_tensor *ins[2] = {t, w}, *r1 = NULL, *r2 = NULL;
  CHECK(dg && tp_graph_run(dg, 2, ins, 1, &r1, &n1) == TP_OK);
  CHECK(dd && tp_graph_run(dd, 2, ins, 1, &r2, &n2) == TP_OK);
  for (int64_t i = 0; r1 && r2 && i < 8; i++)
    CHECK(fabs(tp_tensor_get_f64(r1, i) - tp_tensor_get_f64(r2, i)) < 1e-4);
  tp_tensor_release(r1), tp_tensor_release(r2), tp_tensor_release(w);
  tp_graph_free(dg), tp_graph_free(dd);
  tp_tensor_release(x), tp_tensor_release(t);
  tp_graph_free(g), tp_graph_free(s), tp_graph_free(f), tp_graph_free(c), tp_graph_free(d);
}

/* ---- scheduler structure ---- */
static tp_kir_program *lower(const char *text, int fusion) {
  tp_graph *g = parse(text), *lg = NULL;
  if (!g) return NULL;
  tp_lower_options o;
  tp_lower_options_init(&o);
  o.fusion = o.epilogue_fusion = fusion;
  tp_kir_program *p = NULL;
  CHECK(tp_run_passes(g, 0, NULL, NULL, &lg) == TP_OK);
  CHECK(lg && tp_schedule(lg, &o, &p) == TP_OK);
  CHECK(p && tp_kir_verify(p) == TP_OK && tp_memplan(p) == TP_OK);
  tp_graph_free(g);
  return p;
}

static void test_schedule(void) {
  const char *chain =
      "tpgraph v1\n"
      "%x = placeholder : f32[1000]\n"
      "%0 = mul(%x, 1.5) : f32[1000]\n"
      "%1 = sub(%0, 0.25) : f32[1000]\n"
      "%2 = tanh(%1) : f32[1000]\n"
      "%3 = sigmoid(%x) : f32[1000]\n"
      "%4 = mul(%2, %3) : f32[1000]\n"
      "%5 = exp(%4) : f32[1000]\n"
      "output(%5)\n";
  tp_kir_program *p = lower(chain, 1);
  CHECK(p && p->nkernels == 1 && count_kind(p, TP_KK_POINTWISE) == 1);
  CHECK(p && p->arena_bytes == 0); /* written straight into the output */
  char *text = NULL;
  CHECK(p && tp_kir_print(p, &text) == TP_OK && strstr(text, "tanh") && strstr(text, "sigmoid"));
  tp_free_buffer(text);
  tp_kir_program_free(p);
  p = lower(chain, 0); /* stax.fusion off: one kernel per op */
  CHECK(p && p->nkernels == 6);
  tp_kir_program_free(p);

  p = lower("tpgraph v1\n"
            "%x = placeholder : f32[8,16]\n"
            "%w = placeholder : f32[32,16]\n"
            "%b = placeholder : f32[32]\n"
            "%w2 = placeholder : f32[32,32]\n"
            "%0 = linear(%x, %w, %b) : f32[8,32]\n"
            "%1 = relu(%0) : f32[8,32]\n"
            "%2 = add(%1, %0) : f32[8,32]\n"  /* %0's two users both lead to %2: its epilogue */
            "%3 = linear(%x, %w, none) : f32[8,32]\n"
            "%4 = gelu(%3, approximate=tanh) : f32[8,32]\n"
            "%5 = softmax(%4, dim=-1) : f32[8,32]\n"
            "%6 = layer_norm(%5, none, none, normalized_shape=[32], eps=1e-05) : f32[8,32]\n"
            "%7 = sum(%6, dims=[1], keepdim=false) : f32[8]\n"
            "%8 = linear(%2, %w2, %b) : f32[8,32]\n"
            "%9 = relu(%8) : f32[8,32]\n"
            "output(%2, %7, %9)\n",
            1);
  CHECK(p && count_kind(p, TP_KK_GEMM) == 3 && count_kind(p, TP_KK_ROW) == 3);
  int epi = 0;
  for (int k = 0; p && k < p->nkernels; k++) epi += p->kernels[k].kind == TP_KK_GEMM && p->kernels[k].expr.n > 0;
  CHECK(epi == 2); /* relu + add into the first GEMM, relu into the third; gelu is the prologue of the softmax row kernel */
  CHECK(p && count_kind(p, TP_KK_POINTWISE) == 0);
  CHECK(p && count_kind(p, TP_KK_OP) == 0);
  tp_kir_program_free(p);

  /* memory plan: a chain of eight same-size temporaries needs two slots */
  p = lower("tpgraph v1\n"
            "%x = placeholder : f32[256,256]\n"
            "%w = placeholder : f32[256,256]\n"
            "%0 = matmul(%x, %w) : f32[256,256]\n"
            "%1 = matmul(%0, %w) : f32[256,256]\n"
            "%2 = matmul(%1, %w) : f32[256,256]\n"
            "%3 = matmul(%2, %w) : f32[256,256]\n"
            "%4 = matmul(%3, %w) : f32[256,256]\n"
            "output(%4)\n",
            1);
  CHECK(p && p->arena_bytes == 2 * 256 * 256 * 4 && p->naive_bytes == 4 * 256 * 256 * 4);
  tp_kir_program_free(p);
}

/* ---- differential: random graphs, stax plan vs eager graph runner ---- */
static uint64_t rng = 12345;
static unsigned rnd(unsigned n) {
  rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
  return (unsigned)(rng >> 33) % n;
}

/* eager and stax: per-element bound REL_TOL |eager| + ABS_TOL max|eager|
 * (stax's fused kernels use the fast vector math, a few ulp from eager's,
 * and GEMMs sum in another order); the worst ratio error / bound is
 * printed so the margin stays visible. */
#ifndef REL_TOL
#define REL_TOL 2e-5
#define ABS_TOL 5e-6
#endif
static double worst_q;

static void test_differential(void) {
  static const char *un[] = {"neg", "abs", "exp", "tanh", "sigmoid", "relu", "gelu"};
  static const char *unattr[] = {"", "", "", "", "", "", ", approximate=tanh"};
  static const char *bin[] = {"add", "sub", "mul", "div"};
  int graphs = 0, mism = 0;
  for (int t = 0; t < 150; t++) {
    int R = 1 + (int)rnd(40), C = 1 + (int)rnd(70);
    char text[8192];
    size_t k = (size_t)snprintf(text, sizeof text,
                                "tpgraph v1\n%%a = placeholder : f32[%d,%d]\n%%b = placeholder : f32[%d]\n"
                                "%%w = placeholder : f32[%d,%d]\n", R, C, C, C, C);
    int nv = 0; /* values: v0.. all f32[R,C] */
    k += (size_t)snprintf(text + k, sizeof text - k, "%%v0 = add(%%a, %%b) : f32[%d,%d]\n", R, C);
    nv = 1;
    int steps = 2 + (int)rnd(10);
    for (int s = 0; s < steps; s++) {
      int a = (int)rnd((unsigned)nv), b = (int)rnd((unsigned)nv);
      switch (rnd(8)) {
        case 0: case 1:
          {
            unsigned u = rnd(7);
            k += (size_t)snprintf(text + k, sizeof text - k, "%%v%d = %s(%%v%d%s) : f32[%d,%d]\n", nv,
                                  un[u], a, unattr[u], R, C);
          }
          break;
        case 2: case 3:
          k += (size_t)snprintf(text + k, sizeof text - k, "%%v%d = %s(%%v%d, %%v%d) : f32[%d,%d]\n", nv,
                                bin[rnd(3)], a, b, R, C);
          break;
        case 4:
          k += (size_t)snprintf(text + k, sizeof text - k, "%%v%d = mul(%%v%d, %.3f) : f32[%d,%d]\n", nv, a,
                                (double)rnd(100) / 50.0 - 1.0, R, C);
          break;
        case 5:
          k += (size_t)snprintf(text + k, sizeof text - k, "%%v%d = matmul(%%v%d, %%w) : f32[%d,%d]\n", nv, a,
                                R, C);
          break;
        case 6:
          k += (size_t)snprintf(text + k, sizeof text - k, "%%v%d = softmax(%%v%d, dim=-1) : f32[%d,%d]\n", nv,
                                a, R, C);
          break;
        default:
          k += (size_t)snprintf(text + k, sizeof text - k,
                                "%%v%d = layer_norm(%%v%d, none, %%b, normalized_shape=[%d], eps=1e-05) : f32[%d,%d]\n",
                                nv, a, C, R, C);
          break;
      }
      nv++;
    }
    k += (size_t)snprintf(text + k, sizeof text - k, "%%s = sum(%%v%d, dims=[1], keepdim=true) : f32[%d,1]\n",
                          nv - 1, R);
    snprintf(text + k, sizeof text - k, "output(%%v%d, %%s, %%v%d)\n", nv - 1, (int)rnd((unsigned)nv));
    tp_graph *g = parse(text);
    if (!g) {
      printf("%s", text);
      continue;
    }
    tp_tensor *in[3];
    int64_t sa[2] = {R, C}, sb = C, sw[2] = {C, C};
    tp_randn(2, sa, (uint64_t)t, &in[0]);
    tp_randn(1, &sb, (uint64_t)t + 1000, &in[1]);
    tp_tensor *w0;
    tp_randn(2, sw, (uint64_t)t + 2000, &w0);
    tp_scalar(1.0 / sqrt((double)C), 0, &in[2]);
    tp_tensor *w;
    tp_mul(w0, in[2], &w);
    tp_tensor_release(in[2]);
    tp_tensor_release(w0);
    in[2] = w;
    tp_plan *pl = NULL;
    tp_tensor *e[3] = {0}, *sx[3] = {0};
    int ne = 0, ns = 0;
    CHECK(tp_lower(g, NULL, &pl) == TP_OK);
    CHECK(tp_graph_run(g, 3, in, 3, e, &ne) == TP_OK);
    CHECK(pl && tp_plan_run(pl, 3, in, 3, sx, &ns) == TP_OK);
    graphs++;
    for (int o = 0; o < ne && o < ns; o++) {
      int64_t n = tp_tensor_numel(e[o]);
      double scale = 1e-3;
      for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(tp_tensor_get_f64(e[o], i)));
      for (int64_t i = 0; i < n; i++) {
        double a = tp_tensor_get_f64(e[o], i), b = tp_tensor_get_f64(sx[o], i);
        /* per element: relative to the element itself, plus a small floor
         * for results of cancellation, so small elements are checked too */
        double tol = REL_TOL * fabs(a) + ABS_TOL * scale, q = fabs(a - b) / tol;
        if (q > worst_q) worst_q = q;
        if (!(fabs(a - b) <= tol) && !(a != a && b != b)) {
          if (mism++ < 3) printf("FAIL differential graph %d output %d [%lld]: eager %g stax %g\n%s", t, o,
                                 (long long)i, a, b, text);
          break;
        }
      }
    }
    for (int o = 0; o < 3; o++) tp_tensor_release(e[o]), tp_tensor_release(sx[o]), tp_tensor_release(in[o]);
    tp_plan_free(pl);
    tp_graph_free(g);
  }
  CHECK(mism == 0);
  printf("differential: %d random graphs, %d mismatches; worst error / bound %.3f (bound %g |x| + %g max|x|)\n",
         graphs, mism, worst_q, REL_TOL, ABS_TOL);
}

/* unary_fast_f32 (stax's fused kernels): within a few ulp of libm, and the
 * special values exact, on every ISA of this CPU. */
static double ref_unary(int op, double x) {
  switch (op) {
    case TP_KU_EXP: return exp(x);
    case TP_KU_TANH: return tanh(x);
    case TP_KU_SIGMOID: return 1 / (1 + exp(-x));
    case TP_KU_LOG: return log(x);
    case TP_KU_GELU_ERF: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    default: return 0.5 * x * (1 + tanh(sqrt(2 / 3.14159265358979323846) * (x + 0.044715 * x * x * x)));
  }
}

static void test_fast_math(void) {
  const char *isas[] = {"avx512", "avx2", "sse2", "generic"};
  int ops[] = {TP_KU_EXP, TP_KU_TANH, TP_KU_SIGMOID, TP_KU_LOG, TP_KU_GELU_ERF, TP_KU_GELU_TANH};
  float x[203], y[203];
  for (int i = 0; i < 200; i++) x[i] = (float)(i - 100) * 0.173f;
  x[200] = INFINITY, x[201] = -INFINITY, x[202] = 0.0f;
  for (int k = 0; k < 4; k++) {
    if (tp_set_isa(isas[k]) != TP_OK) {
      tp_clear_error();
      continue;
    }
    const tp_kernels *K = tp_kern();
    for (int o = 0; o < 6; o++) {
      K->unary_fast_f32(ops[o], x, y, 203);
      for (int i = 0; i < 203; i++) {
        double want = ref_unary(ops[o], x[i]);
        if (ops[o] == TP_KU_LOG && x[i] < 0) continue; /* nan, checked below */
        double err = fabs(y[i] - want), tol = 4e-6 * fabs(want) + 3e-7 * fmax(1.0, fabs(x[i])); /* erf: 1.5e-7 abs */
        if (want != want) CHECK(y[i] != y[i]);
        else if (isinf(want)) CHECK(y[i] == want);
        else if (!(err <= tol)) {
          printf("FAIL fast %s op %d x=%g: %g vs %g\n", isas[k], ops[o], (double)x[i], (double)y[i], want);
          failures++;
        }
      }
    }
  }
  tp_set_isa("best");
}

/* Regression: a GEMM epilogue must not read a value computed by a later
 * kernel (sigmoid(x @ w) * rowsum(r): the row kernel of the sum comes after
 * the GEMM in node order). */
static void test_epilogue_order(void) {
  tp_graph *g = parse("tpgraph v1\n%x = placeholder : f32[3,4]\n%w = placeholder : f32[5,4]\n"
                      "%r = placeholder : f32[3,5]\n%0 = linear(%x, %w, none) : f32[3,5]\n"
                      "%1 = sigmoid(%0) : f32[3,5]\n%2 = sum(%r, dims=[1], keepdim=true) : f32[3,1]\n"
                      "%3 = mul(%1, %2) : f32[3,5]\noutput(%3)\n");
  if (!g) return;
  int64_t sx[2] = {3, 4}, sw[2] = {5, 4}, sr[2] = {3, 5};
  tp_tensor *in[3], *e = NULL, *y = NULL;
  tp_randn(2, sx, 1, &in[0]), tp_randn(2, sw, 2, &in[1]), tp_randn(2, sr, 3, &in[2]);
  tp_plan *pl = NULL;
  int n;
  CHECK(tp_lower(g, NULL, &pl) == TP_OK);
  CHECK(tp_graph_run(g, 3, in, 1, &e, &n) == TP_OK);
  CHECK(pl && tp_plan_run(pl, 3, in, 1, &y, &n) == TP_OK);
  for (int64_t i = 0; e && y && i < 15; i++)
    CHECK(fabs(tp_tensor_get_f64(e, i) - tp_tensor_get_f64(y, i)) < 1e-5);
  tp_tensor_release(e), tp_tensor_release(y);
  for (int i = 0; i < 3; i++) tp_tensor_release(in[i]);
  tp_plan_free(pl);
  tp_graph_free(g);
}

/* where(x > 0, y, 0) and where(0 < x, y, 0) (a relu's gradient) fuse as
 * maskpos: pointwise kernels, no op kernel, the same bits as the eager
 * compare and where (NaN x gives +0, NaN y passes, signed zeros kept). */
static void test_maskpos(void) {
  tp_graph *g = parse("tpgraph v1\n%x = placeholder : f32[100]\n%y = placeholder : f32[100]\n"
                      "%0 = gt(%x, 0.0) : b8[100]\n%1 = where(%0, %y, 0.0) : f32[100]\n"
                      "%2 = lt(0.0, %y) : b8[100]\n%3 = where(%2, %1, 0.0) : f32[100]\n"
                      "%4 = mul(%3, 2.0) : f32[100]\noutput(%1, %4)\n");
  if (!g) return;
  float xs[100], ys[100];
  const float sp[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, -1.5f, 2.0f, 1e-40f, -7.0f, 5.0f};
  for (int i = 0; i < 100; i++) xs[i] = sp[i % 10], ys[i] = sp[i / 10];
  int64_t sh[1] = {100};
  tp_tensor *in[2] = {NULL, NULL}, *e[2] = {NULL, NULL}, *y[2] = {NULL, NULL};
  CHECK(tp_tensor_new(TP_F32, 1, sh, xs, &in[0]) == TP_OK);
  CHECK(tp_tensor_new(TP_F32, 1, sh, ys, &in[1]) == TP_OK);
  tp_plan *pl = NULL;
  int n;
  CHECK(tp_lower(g, NULL, &pl) == TP_OK);
  const tp_kir_program *p = pl ? tp_plan_program(pl) : NULL;
  CHECK(p && count_kind(p, TP_KK_OP) == 0 && count_kind(p, TP_KK_POINTWISE) == p->nkernels);
  char *text = NULL;
  CHECK(p && tp_kir_print(p, &text) == TP_OK && strstr(text, "maskpos"));
  tp_free_buffer(text);
  CHECK(tp_graph_run(g, 2, in, 2, e, &n) == TP_OK);
  CHECK(pl && tp_plan_run(pl, 2, in, 2, y, &n) == TP_OK);
  float ev[100], yv[100];
  for (int o = 0; o < 2; o++) {
    CHECK(e[o] && y[o] && tp_tensor_read(e[o], ev, sizeof ev) == TP_OK && tp_tensor_read(y[o], yv, sizeof yv) == TP_OK);
    for (int i = 0; e[o] && y[o] && i < 100; i++)
      if (memcmp(&ev[i], &yv[i], sizeof(float))) FAILF("maskpos output %d element %d: stax %g, eager %g", o, i, yv[i], ev[i]);
    /* hand-computed: x NaN, 0, -0, negative give +0; y passes where x > 0 (a denormal too) */
    if (o == 0)
      CHECK(ev[10] == 0.0f && !signbit(ev[10]) && ev[13] == 0.0f && ev[14] == 0.0f && !signbit(ev[14]) &&
            ev[16] == INFINITY && ev[17] == INFINITY && ev[19] == INFINITY && isnan(ev[6]) && ev[46] == -0.0f &&
            signbit(ev[46]) && ev[66] == 2.0f);
    tp_tensor_release(e[o]), tp_tensor_release(y[o]);
  }
  tp_tensor_release(in[0]), tp_tensor_release(in[1]);
  tp_plan_free(pl);
  tp_graph_free(g);
}

/* where(lt/gt) pairs (ONNX Clip, Max, Min) fuse as pmax / pmin: one
 * pointwise kernel, no op kernel, and the same bits as the eager where and
 * compare, NaNs, infinities and signed zeros included; all four operand
 * orders; a compare with another user is not folded. Then the per-kernel
 * profile of that plan. */
static void test_minmax(void) {
  tp_graph *g = parse("tpgraph v1\n%x = placeholder : f32[100]\n%y = placeholder : f32[100]\n"
                      "%0 = lt(%x, -1.5) : b8[100]\n%1 = where(%0, -1.5, %x) : f32[100]\n" /* pmax(x, -1.5) */
                      "%2 = gt(%1, 2.0) : b8[100]\n%3 = where(%2, 2.0, %1) : f32[100]\n"   /* pmin(., 2) */
                      "%4 = lt(%3, %y) : b8[100]\n%5 = where(%4, %3, %y) : f32[100]\n"     /* pmin(y, .) */
                      "%6 = gt(%5, %y) : b8[100]\n%7 = where(%6, %5, %y) : f32[100]\n"     /* pmax(y, .) */
                      "%8 = mul(%7, 3.0) : f32[100]\noutput(%3, %5, %8)\n"); /* each stage seen */
  if (!g) return;
  float xs[100], ys[100];
  const float sp[] = {NAN, INFINITY, -INFINITY, 0.0f, -0.0f, -1.5f, 2.0f, 1e-30f, -7.0f, 5.0f};
  for (int i = 0; i < 100; i++) xs[i] = sp[i % 10], ys[i] = sp[i / 10];
  int64_t sh[1] = {100};
  tp_tensor *in[2] = {NULL, NULL}, *e[3] = {NULL, NULL, NULL}, *y[3] = {NULL, NULL, NULL};
  CHECK(tp_tensor_new(TP_F32, 1, sh, xs, &in[0]) == TP_OK);
  CHECK(tp_tensor_new(TP_F32, 1, sh, ys, &in[1]) == TP_OK);
  tp_plan *pl = NULL;
  int n;
  CHECK(tp_lower(g, NULL, &pl) == TP_OK);
  const tp_kir_program *p = pl ? tp_plan_program(pl) : NULL;
  CHECK(p && p->nkernels == 3 && count_kind(p, TP_KK_POINTWISE) == 3 && count_kind(p, TP_KK_OP) == 0);
  char *text = NULL;
  CHECK(p && tp_kir_print(p, &text) == TP_OK && strstr(text, "pmax") && strstr(text, "pmin"));
  tp_free_buffer(text);
  CHECK(pl && tp_plan_set_profiling(pl, 1) == TP_OK);
  CHECK(tp_graph_run(g, 2, in, 3, e, &n) == TP_OK);
  CHECK(pl && tp_plan_run(pl, 2, in, 3, y, &n) == TP_OK);
  float ev[100], yv[100];
  for (int o = 0; o < 3; o++) {
    CHECK(e[o] && y[o] && tp_tensor_read(e[o], ev, sizeof ev) == TP_OK && tp_tensor_read(y[o], yv, sizeof yv) == TP_OK);
    for (int i = 0; e[o] && y[o] && i < 100; i++)
      if (memcmp(&ev[i], &yv[i], sizeof(float))) FAILF("minmax output %d element %d: stax %g, eager %g", o, i, yv[i], ev[i]);
    /* hand-computed: x = NaN passes the clip unchanged (NaN < c is false) */
    if (o == 0) CHECK(isnan(ev[0]) && ev[1] == 2.0f && ev[2] == -1.5f && ev[9] == 2.0f && ev[8] == -1.5f);
    tp_tensor_release(e[o]), tp_tensor_release(y[o]);
  }
  /* the profile: one run, three kernels */
  char *rep = NULL, *js = NULL;
  CHECK(pl && tp_plan_profile_report(pl, 0, &rep) == TP_OK && strstr(rep, "1 run,") && strstr(rep, "pointwise") &&
        strstr(rep, "3 kernels"));
  CHECK(pl && tp_plan_profile_json(pl, 0, &js) == TP_OK && strstr(js, "\"runs\": 1") && strstr(js, "\"gbps\""));
  tp_free_buffer(rep), tp_free_buffer(js);
  CHECK(pl && tp_plan_set_profiling(pl, 0) == TP_OK && !tp_plan_profiling(pl));
  CHECK(pl && tp_plan_profile_report(pl, 0, &rep) == TP_ERR_INVALID_ARG); /* off: a clear error */
  tp_plan_free(pl);
  tp_graph_free(g);
  /* a compare that something else also reads stays a compare (and the where an op) */
  g = parse("tpgraph v1\n%x = placeholder : f32[8]\n%0 = lt(%x, 0.0) : b8[8]\n"
            "%1 = where(%0, 0.0, %x) : f32[8]\noutput(%1, %0)\n");
  pl = NULL;
  CHECK(g && tp_lower(g, NULL, &pl) == TP_OK);
  p = pl ? tp_plan_program(pl) : NULL;
  CHECK(p && count_kind(p, TP_KK_OP) == 2);
  tp_plan_free(pl);
  tp_graph_free(g);
  for (int i = 0; i < 2; i++) tp_tensor_release(in[i]);
}

/* The plan's output y against the graph executor's e, element by element:
 * |e - y| <= atol + 1e-5 |e|, NaN exactly where e has NaN. The first
 * mismatch fails naming the test, case and output. Returns e's NaN count. */
static int64_t same_as_eager(const tp_tensor *e, const tp_tensor *y, double atol, const char *what, int t, int o) {
  int64_t cnt = e ? tp_tensor_numel(e) : 0, nan = 0;
  CHECKF(e && y && cnt > 0 && tp_tensor_numel(y) == cnt, "%s case %d output %d: %lld elements, %lld eager", what,
         t, o, y ? (long long)tp_tensor_numel(y) : -1LL, (long long)cnt);
  for (int64_t i = 0; y && i < cnt && i < tp_tensor_numel(y); i++) {
    double a = tp_tensor_get_f64(e, i), b = tp_tensor_get_f64(y, i);
    nan += isnan(a);
    if (isnan(a) != isnan(b) || (!isnan(a) && fabs(a - b) > atol + 1e-5 * fabs(a))) {
      FAILF("%s case %d output %d element %lld: stax %g, eager %g", what, t, o, (long long)i, b, a);
      break;
    }
  }
  return nan;
}

/* conv_gemm: a 1x1 convolution (one image) lowers to one GEMM whose
 * epilogue carries the bias and the activation after it (regrouped from
 * [1, M, H, W] onto the GEMM's [M, H*W]); two images stay a batched matmul;
 * a 3x3 conv is a conv kernel with the relu as its epilogue. Results match the eager conv2d. */
static void test_conv_gemm(void) {
  static const char *const texts[3] = {
      "tpgraph v1\n%x = placeholder : f32[1,6,5,7]\n%w = placeholder : f32[4,6,1,1]\n%b = placeholder : f32[4]\n"
      "%0 = conv2d(%x, %w, %b, window=[1,1,0,0,0,0,1,1], groups=1) : f32[1,4,5,7]\n"
      "%1 = relu(%0) : f32[1,4,5,7]\n%2 = mul(%1, 0.5) : f32[1,4,5,7]\noutput(%2)\n",
      "tpgraph v1\n%x = placeholder : f32[2,6,5,7]\n%w = placeholder : f32[4,6,1,1]\n%b = placeholder : f32[4]\n"
      "%0 = conv2d(%x, %w, %b, window=[1,1,0,0,0,0,1,1], groups=1) : f32[2,4,5,7]\n"
      "%1 = relu(%0) : f32[2,4,5,7]\noutput(%1)\n",
      "tpgraph v1\n%x = placeholder : f32[1,6,5,7]\n%w = placeholder : f32[4,6,3,3]\n%b = placeholder : f32[4]\n"
      "%0 = conv2d(%x, %w, %b, window=[1,1,1,1,1,1,1,1], groups=1) : f32[1,4,5,7]\n"
      "%1 = relu(%0) : f32[1,4,5,7]\noutput(%1)\n"};
  for (int t = 0; t < 3; t++) {
    tp_graph *g = parse(texts[t]);
    if (!g) continue;
    int64_t sx[4] = {t == 1 ? 2 : 1, 6, 5, 7}, sw[4] = {4, 6, t == 2 ? 3 : 1, t == 2 ? 3 : 1}, sb[1] = {4};
    tp_tensor *in[3], *e = NULL, *y = NULL;
    tp_randn(4, sx, 11, &in[0]), tp_randn(4, sw, 12, &in[1]), tp_randn(1, sb, 13, &in[2]);
    tp_plan *pl = NULL;
    int n;
    if (tp_lower(g, NULL, &pl) != TP_OK) FAILF("conv_gemm case %d: %s", t, tp_last_error());
    const tp_kir_program *p = pl ? tp_plan_program(pl) : NULL;
    if (t == 0) CHECK(p && p->nkernels == 1 && count_kind(p, TP_KK_GEMM) == 1 && p->kernels[0].expr.n > 0);
    /* the GEMM and reshapes made from the conv are named by it (%0) */
    for (int i = 0; t == 0 && p && p->graph && i < p->graph->n; i++) {
      const tp_node *nd = &p->graph->nodes[i];
      const char *o = tp_node_origin(nd);
      if (nd->kind == TP_NODE_CALL && strcmp(o, "0") && strcmp(o, "1") && strcmp(o, "2"))
        FAILF("conv_gemm: lowered node %%%s comes from %%%s, not a captured node", nd->name, o);
    }
    if (t == 1) CHECK(p && count_kind(p, TP_KK_GEMM) + count_kind(p, TP_KK_OP) >= 1 && count_kind(p, TP_KK_OP) <= 1);
    if (t == 2) /* the 3x3 conv: a conv kernel with the relu as its epilogue */
      CHECK(p && p->nkernels == 1 && count_kind(p, TP_KK_CONV) == 1 && p->kernels[0].expr.n > 0);
    CHECK(tp_graph_run(g, 3, in, 1, &e, &n) == TP_OK);
    CHECK(pl && tp_plan_run(pl, 3, in, 1, &y, &n) == TP_OK);
    CHECK(!e || tp_tensor_numel(e) == tp_shape_numel(4, (int64_t[]){sx[0], 4, 5, 7}));
    same_as_eager(e, y, 1e-5, "conv_gemm", t, 0);
    tp_tensor_release(e), tp_tensor_release(y);
    for (int i = 0; i < 3; i++) tp_tensor_release(in[i]);
    tp_plan_free(pl);
    tp_graph_free(g);
  }
}

/* Pointwise kernels over short rows (the executor's chunks of whole rows,
 * gathered with two strides): a permuted view with an inner dim of 2 and
 * a broadcast bias (carries across several outer dims), an inner dim of 3
 * under a next-to-last dim longer than one chunk, and a nearest-upsample
 * pattern (x viewed as [.., 1] times a row of ones) against the graph
 * executor's eager kernels. */
static void test_short_rows(void) {
  static const char *const texts[3] = {
      "tpgraph v1\n%x = placeholder : f32[3,5,7,2]\n%b = placeholder : f32[5,1]\n"
      "%0 = permute(%x, perm=[0,2,1,3]) : f32[3,7,5,2]\n%1 = add(%0, %b) : f32[3,7,5,2]\n"
      "%2 = relu(%1) : f32[3,7,5,2]\noutput(%2)\n",
      "tpgraph v1\n%x = placeholder : f32[300,2,3]\n%b = placeholder : f32[3]\n"
      "%0 = permute(%x, perm=[1,0,2]) : f32[2,300,3]\n%1 = mul(%0, %b) : f32[2,300,3]\n"
      "%2 = sigmoid(%1) : f32[2,300,3]\noutput(%2)\n",
      "tpgraph v1\n%x = placeholder : f32[2,3,4,5]\n%b = placeholder : f32[2]\n"
      "%0 = reshape(%x, shape=[2,3,4,5,1]) : f32[2,3,4,5,1]\n%1 = mul(%0, %b) : f32[2,3,4,5,2]\n"
      "%2 = add(%1, 0.5) : f32[2,3,4,5,2]\noutput(%2)\n"};
  static const int64_t xs[3][4] = {{3, 5, 7, 2}, {300, 2, 3, 0}, {2, 3, 4, 5}}, bs[3][2] = {{5, 1}, {3, 0}, {2, 0}};
  static const int xnd[3] = {4, 3, 4}, bnd[3] = {2, 1, 1};
  for (int t = 0; t < 3; t++) {
    tp_graph *g = parse(texts[t]);
    if (!g) continue;
    tp_tensor *in[2], *e = NULL, *y = NULL;
    tp_randn(xnd[t], xs[t], 21 + (uint64_t)t, &in[0]), tp_randn(bnd[t], bs[t], 31 + (uint64_t)t, &in[1]);
    tp_plan *pl = NULL;
    int n;
    if (tp_lower(g, NULL, &pl) != TP_OK) FAILF("short rows case %d: %s", t, tp_last_error());
    const tp_kir_program *p = pl ? tp_plan_program(pl) : NULL;
    CHECK(p && p->nkernels == 1 && count_kind(p, TP_KK_POINTWISE) == 1);
    CHECK(tp_graph_run(g, 2, in, 1, &e, &n) == TP_OK);
    CHECK(pl && tp_plan_run(pl, 2, in, 1, &y, &n) == TP_OK);
    same_as_eager(e, y, 1e-6, "short rows", t, 0);
    tp_tensor_release(e), tp_tensor_release(y);
    for (int i = 0; i < 2; i++) tp_tensor_release(in[i]);
    tp_plan_free(pl);
    tp_graph_free(g);
  }
}

/* Reductions over several trailing dims (a global average pool) are one
 * row kernel when the prologue's loads merge those dims (a lazy relu(x*2)
 * over [N, C, H, W]), an op kernel when not (a permuted x); both against
 * the graph executor. */
static void test_trailing_reduce(void) {
  static const char *const texts[3] = {
      "tpgraph v1\n%x = placeholder : f32[2,5,6,7]\n%0 = mul(%x, 2.0) : f32[2,5,6,7]\n"
      "%1 = relu(%0) : f32[2,5,6,7]\n%2 = mean(%1, dims=[2,3], keepdim=true) : f32[2,5,1,1]\noutput(%2)\n",
      "tpgraph v1\n%x = placeholder : f32[2,5,6,7]\n%0 = max(%x, dims=[-1,1,2], keepdim=false) : f32[2]\noutput(%0)\n",
      "tpgraph v1\n%x = placeholder : f32[2,6,5,7]\n%0 = permute(%x, perm=[0,2,1,3]) : f32[2,5,6,7]\n"
      "%1 = sum(%0, dims=[2,3], keepdim=false) : f32[2,5]\noutput(%1)\n"};
  static const int64_t xs[3][4] = {{2, 5, 6, 7}, {2, 5, 6, 7}, {2, 6, 5, 7}};
  for (int t = 0; t < 3; t++) {
    tp_graph *g = parse(texts[t]);
    if (!g) continue;
    tp_tensor *in, *e = NULL, *y = NULL;
    tp_randn(4, xs[t], 41 + (uint64_t)t, &in);
    tp_plan *pl = NULL;
    int n;
    if (tp_lower(g, NULL, &pl) != TP_OK) FAILF("trailing reduce case %d: %s", t, tp_last_error());
    const tp_kir_program *p = pl ? tp_plan_program(pl) : NULL;
    if (t < 2) CHECK(p && p->nkernels == 1 && count_kind(p, TP_KK_ROW) == 1);
    else CHECK(p && count_kind(p, TP_KK_ROW) == 0);
    CHECK(tp_graph_run(g, 1, &in, 1, &e, &n) == TP_OK);
    CHECK(pl && tp_plan_run(pl, 1, &in, 1, &y, &n) == TP_OK);
    same_as_eager(e, y, 1e-5, "trailing reduce", t, 0);
    tp_tensor_release(e), tp_tensor_release(y), tp_tensor_release(in);
    tp_plan_free(pl);
    tp_graph_free(g);
  }
}

/* Row-map fusion (docs/kernel-ir.md): a map reading a row reduction's
 * values broadcast per row becomes the row kernel's last phase, a second
 * pending reduction it reads goes into the same kernel; not when the row
 * values are read elsewhere (a graph output), when another input of the
 * map is computed after the row kernel (a GEMM), or when the rows differ.
 * Each against the graph executor, NaN for NaN (a NaN in row 1 of x, row 2
 * all -inf). */
static void test_row_map(void) {
  static const struct { const char *text; int nin, kernels, rows; } cs[] = {
      /* softmax's backward: y * (g - sum(g * y)) */
      {"%0 = mul(%x, %g) : f32[3,5,7]\n%1 = sum(%0, dims=[2], keepdim=true) : f32[3,5,1]\n"
       "%2 = sub(%g, %1) : f32[3,5,7]\n%3 = mul(%x, %2) : f32[3,5,7]\noutput(%3)\n", 2, 1, 1},
      /* two row means and the map (layer_norm's dx) */
      {"%0 = mean(%g, dims=[2], keepdim=true) : f32[3,5,1]\n%1 = mul(%g, %x) : f32[3,5,7]\n"
       "%2 = mean(%1, dims=[2], keepdim=true) : f32[3,5,1]\n%3 = sub(%g, %0) : f32[3,5,7]\n"
       "%4 = mul(%x, %2) : f32[3,5,7]\n%5 = sub(%3, %4) : f32[3,5,7]\noutput(%5)\n", 2, 1, 1},
      /* the row sums are an output too: kept */
      {"%0 = mul(%x, %g) : f32[3,5,7]\n%1 = sum(%0, dims=[2], keepdim=true) : f32[3,5,1]\n"
       "%2 = sub(%g, %1) : f32[3,5,7]\noutput(%2, %1)\n", 2, 2, 1},
      /* the map also reads a GEMM computed after the row kernel */
      {"%0 = sum(%x, dims=[2], keepdim=true) : f32[3,5,1]\n%1 = matmul(%x, %g) : f32[3,5,5]\n"
       "%2 = exp(%1) : f32[3,5,5]\n%3 = mul(%2, %0) : f32[3,5,5]\noutput(%3, %1)\n", 2, 3, 1},
      /* rows of another length: a [3,5,1] of a sum over 7 against [3,5,4] */
      {"%0 = sum(%x, dims=[2], keepdim=true) : f32[3,5,1]\n%1 = mul(%g, %0) : f32[3,5,4]\noutput(%1)\n", 2, 2, 1},
      /* x - max(x) with an all -inf row (row 2): -inf - -inf is NaN, as
       * eagerly (a fused max phase would read 0 for it, softmax's rule) */
      {"%0 = max(%x, dims=[2], keepdim=true) : f32[3,5,1]\n%1 = sub(%x, %0) : f32[3,5,7]\n"
       "%2 = add(%1, %g) : f32[3,5,7]\noutput(%2)\n", 2, 2, 1},
  };
  static const int64_t gsh[6][3] = {{3, 5, 7}, {3, 5, 7}, {3, 5, 7}, {3, 7, 5}, {3, 5, 4}, {3, 5, 7}};
  for (int t = 0; t < (int)(sizeof cs / sizeof cs[0]); t++) {
    char text[1024];
    snprintf(text, sizeof text, "tpgraph v1\n%%x = placeholder : f32[3,5,7]\n%%g = placeholder : f32[%lld,%lld,%lld]\n%s",
             (long long)gsh[t][0], (long long)gsh[t][1], (long long)gsh[t][2], cs[t].text);
    tp_graph *g = parse(text);
    if (!g) continue;
    tp_tensor *in[2], *e[2] = {0}, *y[2] = {0};
    tp_tensor *r = NULL;
    float xv[105];
    tp_randn(3, (int64_t[]){3, 5, 7}, 61 + (uint64_t)t, &r);
    CHECK(r && tp_tensor_read(r, xv, sizeof xv) == TP_OK);
    tp_tensor_release(r);
    xv[9] = NAN; /* row 1 */
    for (int q = 14; q < 21; q++) xv[q] = -INFINITY; /* row 2 */
    CHECK(tp_tensor_new(TP_F32, 3, (int64_t[]){3, 5, 7}, xv, &in[0]) == TP_OK);
    tp_randn(3, gsh[t], 71 + (uint64_t)t, &in[1]);
    tp_plan *pl = NULL;
    int ne = 0, ny = 0;
    if (tp_lower(g, NULL, &pl) != TP_OK) FAILF("row map case %d: %s", t, tp_last_error());
    const tp_kir_program *p = pl ? tp_plan_program(pl) : NULL;
    CHECKF(p && p->nkernels == cs[t].kernels && count_kind(p, TP_KK_ROW) == cs[t].rows,
           "row map case %d: %d kernels, %d row (want %d, %d)", t, p ? p->nkernels : -1,
           p ? count_kind(p, TP_KK_ROW) : -1, cs[t].kernels, cs[t].rows);
    CHECK(tp_graph_run(g, 2, in, 2, e, &ne) == TP_OK);
    CHECK(pl && tp_plan_run(pl, 2, in, 2, y, &ny) == TP_OK && ny == ne);
    for (int o = 0; o < ne && o < ny; o++) {
      int64_t cnt = tp_tensor_numel(e[o]), nan = same_as_eager(e[o], y[o], 1e-5, "row map", t, o);
      CHECKF(nan > 0 && nan < cnt, "row map case %d output %d: %lld NaNs of %lld", t, o, (long long)nan, (long long)cnt);
    }
    for (int o = 0; o < 2; o++) tp_tensor_release(e[o]), tp_tensor_release(y[o]);
    tp_tensor_release(in[0]), tp_tensor_release(in[1]);
    tp_plan_free(pl);
    tp_graph_free(g);
  }
}

/* conv_bn: a per-channel mul and add after a convolution with constant
 * weights fold into it (no mul or add left after the passes), a lone add
 * ([1, M, 1, 1], no bias) too; a conv result read twice is left alone.
 * Each against the graph executor on the unfolded graph. */
static void test_conv_bn(void) {
  static const char *const texts[3] = {
      "tpgraph v1\n%x = placeholder : f32[1,6,7,9]\n%w = get_attr \"w\" : f32[6,1,3,3]\n"
      "%b = get_attr \"b\" : f32[6]\n%a = get_attr \"a\" : f32[6,1,1]\n%c = get_attr \"c\" : f32[6,1,1]\n"
      "%0 = conv2d(%x, %w, %b, window=[1,1,1,1,1,1,1,1], groups=6) : f32[1,6,7,9]\n"
      "%1 = mul(%0, %a) : f32[1,6,7,9]\n%2 = add(%1, %c) : f32[1,6,7,9]\n%3 = relu(%2) : f32[1,6,7,9]\noutput(%3)\n",
      "tpgraph v1\n%x = placeholder : f32[2,6,7,9]\n%w = get_attr \"w\" : f32[5,6,3,3]\n"
      "%c = get_attr \"c\" : f32[1,5,1,1]\n"
      "%0 = conv2d(%x, %w, none, window=[1,1,1,1,1,1,1,1], groups=1) : f32[2,5,7,9]\n"
      "%1 = add(%c, %0) : f32[2,5,7,9]\noutput(%1)\n",
      "tpgraph v1\n%x = placeholder : f32[1,6,7,9]\n%w = get_attr \"w\" : f32[6,1,3,3]\n"
      "%b = get_attr \"b\" : f32[6]\n%a = get_attr \"a\" : f32[6,1,1]\n%c = get_attr \"c\" : f32[6,1,1]\n"
      "%0 = conv2d(%x, %w, %b, window=[1,1,1,1,1,1,1,1], groups=6) : f32[1,6,7,9]\n"
      "%1 = mul(%0, %a) : f32[1,6,7,9]\n%2 = add(%1, %c) : f32[1,6,7,9]\noutput(%2, %0)\n"};
  for (int t = 0; t < 3; t++) {
    tp_graph *g = parse(texts[t]);
    if (!g) continue;
    static const char *const names[4] = {"w", "b", "a", "c"};
    for (int q = 0; q < 4; q++) {
      int ni = tp_graph_find(g, names[q]);
      if (ni < 0) continue;
      tp_tensor *v;
      tp_randn(g->nodes[ni].desc.ndim, g->nodes[ni].desc.shape, 50 + (uint64_t)(t * 4 + q), &v);
      tp_graph_set_val(g, ni, v);
      tp_tensor_release(v);
    }
    tp_graph *pg = NULL;
    CHECK(tp_run_passes(g, 0, NULL, NULL, &pg) == TP_OK);
    int muladd = 0;
    for (int i = 0; pg && i < pg->n; i++)
      muladd += pg->nodes[i].kind == TP_NODE_CALL && (pg->nodes[i].op == TP_OP_MUL || pg->nodes[i].op == TP_OP_ADD);
    if (t < 2) CHECK(muladd == 0);
    else CHECK(muladd == 2);
    tp_graph_free(pg);
    int64_t xs[4] = {t == 1 ? 2 : 1, 6, 7, 9};
    tp_tensor *x, *e[2] = {0}, *y[2] = {0};
    tp_randn(4, xs, 60 + (uint64_t)t, &x);
    tp_plan *pl = NULL;
    int ne = 0, ny = 0;
    if (tp_lower(g, NULL, &pl) != TP_OK) FAILF("conv_bn case %d: %s", t, tp_last_error());
    CHECK(tp_graph_run(g, 1, &x, 2, e, &ne) == TP_OK);
    CHECK(pl && tp_plan_run(pl, 1, &x, 2, y, &ny) == TP_OK);
    CHECK(ne == ny && ne >= 1);
    for (int o = 0; o < ne && o < ny; o++) {
      same_as_eager(e[o], y[o], 1e-5, "conv_bn", t, o);
    }
    for (int o = 0; o < 2; o++) tp_tensor_release(e[o]), tp_tensor_release(y[o]);
    tp_tensor_release(x);
    tp_plan_free(pl);
    tp_graph_free(g);
  }
}

/* A random int8/uint8 or float32 tensor for graph constants / inputs. */
static tp_tensor *rand_of(tp_dtype d, int nd, const int64_t *shape, double scale, double shift, uint64_t seed) {
  tp_tensor *r = NULL, *m = NULL, *t = NULL, *sc = NULL, *sh = NULL;
  tp_attrs at;
  tp_attrs_init(&at);
  at.dtype = d;
  tp_randn(nd, shape, seed, &r);
  tp_scalar(scale, 0, &sc);
  tp_mul(r, sc, &m);
  tp_scalar(shift, 0, &sh);
  tp_add(m, sh, &t);
  tp_tensor *y = NULL;
  if (d == TP_F32) y = t, t = NULL;
  else tp_op_call(TP_OP_CAST, 1, &t, &at, &y); /* saturating */
  tp_tensor_release(r), tp_tensor_release(m), tp_tensor_release(t), tp_tensor_release(sc), tp_tensor_release(sh);
  return y;
}

/* qlinear: onnxruntime's dynamic-quantized layer (matmul_int -> cast -> mul
 * by x_scale * w_scale -> add bias -> relu) becomes one qmatmul on the
 * integer GEMM (natively the VNNI / AVX2 variant this CPU has): bit for bit
 * the unfused graph on the graph executor; a layer whose product is also an
 * output is left alone. */
static void test_qlinear(void) {
  static const char *const texts[2] = {
      "tpgraph v1\n%x = placeholder : u8[37,300]\n%xz = placeholder : u8[]\n%xs = placeholder : f32[]\n"
      "%w = get_attr \"w\" : i8[300,70]\n%wz = get_attr \"wz\" : i8[70]\n%ws = get_attr \"ws\" : f32[70]\n"
      "%b = get_attr \"b\" : f32[70]\n"
      "%0 = matmul_int(%x, %w, %xz, %wz) : i32[37,70]\n%1 = cast(%0, dtype=f32) : f32[37,70]\n"
      "%2 = mul(%xs, %ws) : f32[70]\n%3 = mul(%1, %2) : f32[37,70]\n%4 = add(%3, %b) : f32[37,70]\n"
      "%5 = relu(%4) : f32[37,70]\noutput(%5)\n",
      "tpgraph v1\n%x = placeholder : u8[37,300]\n%xz = placeholder : u8[]\n%xs = placeholder : f32[]\n"
      "%w = get_attr \"w\" : i8[300,70]\n%wz = get_attr \"wz\" : i8[70]\n%ws = get_attr \"ws\" : f32[70]\n"
      "%b = get_attr \"b\" : f32[70]\n"
      "%0 = matmul_int(%x, %w, %xz, %wz) : i32[37,70]\n%1 = cast(%0, dtype=f32) : f32[37,70]\n"
      "%2 = mul(%xs, %ws) : f32[70]\n%3 = mul(%1, %2) : f32[37,70]\n%4 = add(%3, %b) : f32[37,70]\n"
      "output(%4, %0)\n"};
  for (int t = 0; t < 2; t++) {
    tp_graph *g = parse(texts[t]);
    if (!g) continue;
    int64_t sw[2] = {300, 70}, s70[1] = {70}, sx[2] = {37, 300};
    struct { const char *name; tp_tensor *v; } cs[4] = {
        {"w", rand_of(TP_I8, 2, sw, 50, 0, 70)}, {"wz", rand_of(TP_I8, 1, s70, 3, 0, 71)},
        {"ws", rand_of(TP_F32, 1, s70, 0.001, 0.01, 72)}, {"b", rand_of(TP_F32, 1, s70, 1, 0, 73)}};
    for (int q = 0; q < 4; q++) {
      tp_graph_set_val(g, tp_graph_find(g, cs[q].name), cs[q].v);
      tp_tensor_release(cs[q].v);
    }
    tp_graph *pg = NULL;
    CHECK(tp_run_passes(g, 0, NULL, NULL, &pg) == TP_OK);
    int qmm = 0, mmi = 0;
    for (int i = 0; pg && i < pg->n; i++)
      if (pg->nodes[i].kind == TP_NODE_CALL) qmm += pg->nodes[i].op == TP_OP_QMATMUL, mmi += pg->nodes[i].op == TP_OP_MATMUL_INT;
    CHECKF(t == 0 ? qmm == 1 && mmi == 0 : qmm == 0 && mmi == 1, "qlinear case %d: %d qmatmul, %d matmul_int", t, qmm, mmi);
    tp_graph_free(pg);
    tp_tensor *in[3] = {rand_of(TP_U8, 2, sx, 60, 128, 74), NULL, NULL}, *e[2] = {0}, *y[2] = {0};
    tp_full(TP_U8, 0, NULL, 120, &in[1]);
    tp_full(TP_F32, 0, NULL, 0.02, &in[2]);
    tp_plan *pl = NULL;
    int ne = 0, ny = 0;
    if (tp_lower(g, NULL, &pl) != TP_OK) FAILF("qlinear case %d: %s", t, tp_last_error());
    CHECK(tp_graph_run(g, 3, in, 2, e, &ne) == TP_OK);
    CHECK(pl && tp_plan_run(pl, 3, in, 2, y, &ny) == TP_OK);
    CHECK(ne == ny && ne >= 1);
    for (int o = 0; o < ne && o < ny; o++) {
      int64_t cnt = tp_tensor_numel(e[o]);
      for (int64_t i = 0; i < cnt; i++) {
        double a = tp_tensor_get_f64(e[o], i), b = tp_tensor_get_f64(y[o], i);
        if (a != b) { /* bit for bit: the same float32 operations */
          FAILF("qlinear case %d output %d element %lld: stax %.9g, graph %.9g", t, o, (long long)i, b, a);
          break;
        }
      }
    }
    for (int o = 0; o < 2; o++) tp_tensor_release(e[o]), tp_tensor_release(y[o]);
    for (int k = 0; k < 3; k++) tp_tensor_release(in[k]);
    tp_plan_free(pl);
    tp_graph_free(g);
  }
}

/* qlinear's dynamic ConvInteger pattern (onnxruntime's quantize_dynamic:
 * conv2d_int -> cast -> mul(x_scale * w_scale) -> add(bias [1,M,1,1]) ->
 * relu) becomes one qconv2d with a float output, bit for bit the graph's;
 * per tensor and per channel, int8 and uint8 weights, an x_scale of 0
 * (DynamicQuantizeLinear's scale of an all-zero input: the bias); a
 * pattern whose sums are also an output is left alone. */
static void test_qlinear_conv(void) {
  static const char *const texts[3] = {
      "tpgraph v1\n%x = placeholder : u8[2,5,9,11]\n%xz = placeholder : u8[]\n%xs = placeholder : f32[]\n"
      "%w = get_attr \"w\" : u8[6,5,3,3]\n%wz = get_attr \"wz\" : u8[]\n%ws = get_attr \"ws\" : f32[]\n"
      "%b = get_attr \"b\" : f32[1,6,1,1]\n"
      "%0 = conv2d_int(%x, %w, %xz, %wz, window=[2,2,1,1,1,1,1,1], groups=1) : i32[2,6,5,6]\n"
      "%1 = cast(%0, dtype=f32) : f32[2,6,5,6]\n"
      "%2 = mul(%xs, %ws) : f32[]\n%3 = mul(%1, %2) : f32[2,6,5,6]\n%4 = add(%3, %b) : f32[2,6,5,6]\n"
      "%5 = relu(%4) : f32[2,6,5,6]\noutput(%5)\n",
      "tpgraph v1\n%x = placeholder : u8[2,5,9,11]\n%xz = placeholder : u8[]\n%xs = placeholder : f32[]\n"
      "%w = get_attr \"w\" : i8[6,5,1,1]\n%wz = get_attr \"wz\" : i8[6]\n%ws = get_attr \"ws\" : f32[1,6,1,1]\n"
      "%b = get_attr \"b\" : f32[6,1,1]\n"
      "%0 = conv2d_int(%x, %w, %xz, %wz, window=[1,1,0,0,0,0,1,1], groups=1) : i32[2,6,9,11]\n"
      "%1 = cast(%0, dtype=f32) : f32[2,6,9,11]\n"
      "%2 = mul(%ws, %xs) : f32[1,6,1,1]\n%3 = mul(%2, %1) : f32[2,6,9,11]\n%4 = add(%b, %3) : f32[2,6,9,11]\n"
      "output(%4)\n",
      "tpgraph v1\n%x = placeholder : u8[2,5,9,11]\n%xz = placeholder : u8[]\n%xs = placeholder : f32[]\n"
      "%w = get_attr \"w\" : u8[6,5,3,3]\n%wz = get_attr \"wz\" : u8[]\n%ws = get_attr \"ws\" : f32[]\n"
      "%b = get_attr \"b\" : f32[1,6,1,1]\n"
      "%0 = conv2d_int(%x, %w, %xz, %wz, window=[2,2,1,1,1,1,1,1], groups=1) : i32[2,6,5,6]\n"
      "%1 = cast(%0, dtype=f32) : f32[2,6,5,6]\n"
      "%2 = mul(%xs, %ws) : f32[]\n%3 = mul(%1, %2) : f32[2,6,5,6]\n%4 = add(%3, %b) : f32[2,6,5,6]\n"
      "output(%4, %0)\n"};
  for (int t = 0; t < 3; t++) {
    tp_graph *g = parse(texts[t]);
    if (!g) continue;
    int64_t sw[4] = {6, 5, t == 1 ? 1 : 3, t == 1 ? 1 : 3}, s6[1] = {6}, sx[4] = {2, 5, 9, 11};
    int64_t sb[4] = {1, 6, 1, 1};
    tp_dtype wd = t == 1 ? TP_I8 : TP_U8;
    struct { const char *name; tp_tensor *v; } cs[4] = {
        {"w", rand_of(wd, 4, sw, 50, t == 1 ? 0 : 128, 80)},
        {"wz", t == 1 ? rand_of(TP_I8, 1, s6, 3, 0, 81) : rand_of(TP_U8, 0, NULL, 0, 131, 81)},
        {"ws", t == 1 ? rand_of(TP_F32, 4, sb, 0.001, 0.01, 82) : rand_of(TP_F32, 0, NULL, 0, 0.0123, 82)},
        {"b", rand_of(TP_F32, t == 1 ? 3 : 4, t == 1 ? sb + 1 : sb, 1, 0, 83)}};
    for (int q = 0; q < 4; q++) {
      tp_graph_set_val(g, tp_graph_find(g, cs[q].name), cs[q].v);
      tp_tensor_release(cs[q].v);
    }
    tp_graph *pg = NULL;
    CHECK(tp_run_passes(g, 0, NULL, NULL, &pg) == TP_OK);
    int qc = 0, ci = 0;
    for (int i = 0; pg && i < pg->n; i++)
      if (pg->nodes[i].kind == TP_NODE_CALL) qc += pg->nodes[i].op == TP_OP_QCONV2D, ci += pg->nodes[i].op == TP_OP_CONV2D_INT;
    CHECKF(t < 2 ? qc == 1 && ci == 0 : qc == 0 && ci == 1, "qlinear conv case %d: %d qconv2d, %d conv2d_int", t, qc, ci);
    tp_graph_free(pg);
    tp_plan *pl = NULL;
    if (tp_lower(g, NULL, &pl) != TP_OK) FAILF("qlinear conv case %d: %s", t, tp_last_error());
    for (int xs0 = 0; xs0 < 2; xs0++) { /* x_scale 0.02, then 0 */
      tp_tensor *in[3] = {rand_of(TP_U8, 4, sx, 60, 128, 84), NULL, NULL}, *e[2] = {0}, *y[2] = {0};
      tp_full(TP_U8, 0, NULL, 120, &in[1]);
      tp_full(TP_F32, 0, NULL, xs0 ? 0.0 : 0.02, &in[2]);
      int ne = 0, ny = 0;
      CHECK(tp_graph_run(g, 3, in, 2, e, &ne) == TP_OK);
      if (!pl || tp_plan_run(pl, 3, in, 2, y, &ny) != TP_OK) FAILF("qlinear conv case %d: %s", t, tp_last_error());
      CHECK(ne == ny && ne >= 1);
      int nonzero = 0;
      for (int o = 0; o < ne && o < ny; o++) {
        int64_t cnt = tp_tensor_numel(e[o]);
        for (int64_t i = 0; i < cnt; i++) {
          double a = tp_tensor_get_f64(e[o], i), b = tp_tensor_get_f64(y[o], i);
          nonzero += a != 0;
          if (a != b) { /* bit for bit: the same float32 operations */
            FAILF("qlinear conv case %d (x_scale %s) output %d element %lld: stax %.9g, graph %.9g", t, xs0 ? "0" : "0.02", o,
                  (long long)i, b, a);
            break;
          }
        }
      }
      CHECK(nonzero > 0); /* not a vacuous comparison */
      for (int o = 0; o < 2; o++) tp_tensor_release(e[o]), tp_tensor_release(y[o]);
      for (int k = 0; k < 3; k++) tp_tensor_release(in[k]);
    }
    tp_plan_free(pl);
    tp_graph_free(g);
  }
}

/* A plan's quantize, gather and concat kernels write into the arena
 * (tp_exec_into): the same values as the graph executor's; a quantize
 * scale fed at run time is still checked (named), and the plan stays
 * usable. */
static void test_into_arena(void) {
  const char *text =
      "tpgraph v1\n%x = placeholder : f32[3,5,40]\n%s = placeholder : f32[]\n%z = placeholder : u8[]\n"
      "%i = get_attr \"i\" : i64[7]\n"
      "%0 = relu(%x) : f32[3,5,40]\n%1 = gather(%0, %i, dim=2) : f32[3,5,7]\n%2 = gather(%0, %i, dim=1) : f32[3,7,40]\n"
      "%3 = concat(%1, %1, dim=2) : f32[3,5,14]\n%4 = quantize(%0, %s, %z, dtype=u8) : u8[3,5,40]\n"
      "output(%3, %2, %4)\n";
  tp_graph *g = parse(text);
  if (!g) return;
  int64_t si[1] = {7}, sx[3] = {3, 5, 40};
  tp_tensor *idx = NULL;
  const int64_t iv[7] = {4, 0, -1, 2, 2, 3, 1};
  tp_tensor_new(TP_I64, 1, si, iv, &idx);
  tp_graph_set_val(g, tp_graph_find(g, "i"), idx);
  tp_tensor_release(idx);
  tp_plan *pl = NULL;
  if (tp_lower(g, NULL, &pl) != TP_OK) FAILF("into arena: %s", tp_last_error());
  for (int round = 0; round < 3; round++) {
    tp_tensor *in[3] = {rand_of(TP_F32, 3, sx, 2, 0.5, 90 + round), NULL, NULL}, *e[3] = {0}, *y[3] = {0};
    tp_full(TP_F32, 0, NULL, round == 1 ? 0.0 : 0.0173, &in[1]);
    tp_full(TP_U8, 0, NULL, 7, &in[2]);
    int ne = 0, ny = 0;
    tp_status s = pl ? tp_plan_run(pl, 3, in, 3, y, &ny) : TP_ERR_INTERNAL;
    if (round == 1) { /* scale 0: refused by name */
      CHECK(s != TP_OK);
      CHECKF(s != TP_OK && strstr(tp_last_error(), "quantize: scale element 0 is 0"), "into arena: %s", tp_last_error());
      tp_clear_error();
    } else {
      CHECK(s == TP_OK);
      CHECK(tp_graph_run(g, 3, in, 3, e, &ne) == TP_OK);
      CHECK(ne == 3 && ny == 3);
      for (int o = 0; o < ne && o < ny; o++) {
        int64_t cnt = tp_tensor_numel(e[o]), same = 0;
        for (int64_t i = 0; i < cnt; i++) same += tp_tensor_get_f64(e[o], i) == tp_tensor_get_f64(y[o], i);
        CHECKF(same == cnt && cnt > 0, "into arena output %d: %lld of %lld equal", o, (long long)same, (long long)cnt);
      }
      /* hand check: out 0 [n, c, j] = relu(x)[n, c, iv[j % 7]] */
      double xv = tp_tensor_get_f64(in[0], (1 * 5 + 2) * 40 + 39), want = xv > 0 ? xv : 0;
      CHECK(y[0] && tp_tensor_get_f64(y[0], (1 * 5 + 2) * 14 + 9) == want); /* j = 9: iv[2] = -1 -> 39 */
    }
    for (int o = 0; o < 3; o++) tp_tensor_release(e[o]), tp_tensor_release(y[o]);
    for (int k = 0; k < 3; k++) tp_tensor_release(in[k]);
  }
  tp_plan_free(pl);
  tp_graph_free(g);
}

/* max-autotune: GEMM blockings are timed at plan time, results unchanged,
 * the choice cached per shape unless caches are off. */
static void test_autotune(void) {
  const char *text =
      "tpgraph v1\n%x = placeholder : f32[37,300]\n%w = get_attr \"w\" : f32[300,130]\n"
      "%0 = matmul(%x, %w) : f32[37,130]\n%1 = relu(%0) : f32[37,130]\noutput(%1)\n";
  tp_graph *g = parse(text);
  if (!g) return;
  int64_t sw[2] = {300, 130}, sx[2] = {37, 300};
  tp_tensor *w, *x;
  tp_randn(2, sw, 7, &w);
  tp_randn(2, sx, 8, &x);
  int wi = tp_graph_find(g, "w");
  tp_graph_set_val(g, wi, w);
  tp_tensor *e = NULL, *y = NULL;
  int n;
  CHECK(tp_graph_run(g, 1, &x, 1, &e, &n) == TP_OK);
  for (int round = 0; round < 3; round++) {
    tp_lower_options o;
    tp_lower_options_init(&o);
    o.autotune = 1;
    o.coordinate_descent = round == 2;
    o.use_cache = round < 2;
    tp_plan *pl = NULL;
    CHECK(tp_lower(g, &o, &pl) == TP_OK);
    if (!pl) continue;
    const tp_kir_program *p = tp_plan_program(pl);
    /* round 0 measures, round 1 finds it in the cache, round 2 (no cache) measures */
    CHECK(p->tuned == (round == 1 ? 0 : 1));
    CHECK(tp_plan_run(pl, 1, &x, 1, &y, &n) == TP_OK);
    for (int64_t i = 0; y && e && i < tp_tensor_numel(e); i++)
      CHECK(fabs(tp_tensor_get_f64(y, i) - tp_tensor_get_f64(e, i)) <= 1e-4 * (1 + fabs(tp_tensor_get_f64(e, i))));
    tp_tensor_release(y);
    y = NULL;
    tp_plan_free(pl);
  }
  tp_tensor_release(e), tp_tensor_release(x), tp_tensor_release(w);
  tp_graph_free(g);
}

/* A graph output that is a reshape of a row or pointwise kernel's result
 * takes that kernel's buffer under the output's shape (no copy kernel);
 * with the same buffer also an output under the other shape, or a GEMM's
 * result, a copy. Values and shapes against the graph executor. */
static void test_output_reshape(void) {
  static const struct { const char *text; int nout, kernels; } cs[] = {
      {"tpgraph v1\n%x = placeholder : f32[6,9]\n%0 = softmax(%x, dim=-1) : f32[6,9]\n"
       "%1 = reshape(%0, shape=[1,6,9]) : f32[1,6,9]\noutput(%1)\n", 1, 1},
      {"tpgraph v1\n%x = placeholder : f32[6,9]\n%0 = exp(%x) : f32[6,9]\n"
       "%1 = reshape(%0, shape=[3,2,9]) : f32[3,2,9]\n%2 = add(%1, 1.0) : f32[3,2,9]\noutput(%1, %2)\n", 2, 2},
      {"tpgraph v1\n%x = placeholder : f32[6,9]\n%0 = exp(%x) : f32[6,9]\n"
       "%1 = reshape(%0, shape=[54]) : f32[54]\noutput(%0, %1)\n", 2, 2},
      {"tpgraph v1\n%x = placeholder : f32[6,9]\n%w = placeholder : f32[9,9]\n%0 = matmul(%x, %w) : f32[6,9]\n"
       "%1 = reshape(%0, shape=[1,54]) : f32[1,54]\noutput(%1)\n", 1, 2},
  };
  for (size_t t = 0; t < sizeof cs / sizeof cs[0]; t++) {
    tp_graph *g = parse(cs[t].text);
    if (!g) continue;
    int nin = strstr(cs[t].text, "%w") ? 2 : 1;
    tp_tensor *in[2] = {0}, *e[2] = {0}, *y[2] = {0};
    tp_randn(2, (int64_t[]){6, 9}, 61 + (uint64_t)t, &in[0]);
    if (nin == 2) tp_randn(2, (int64_t[]){9, 9}, 71, &in[1]);
    tp_plan *pl = NULL;
    int ne = 0, ny = 0;
    if (tp_lower(g, NULL, &pl) != TP_OK) FAILF("output reshape case %zu: %s", t, tp_last_error());
    const tp_kir_program *p = pl ? tp_plan_program(pl) : NULL;
    if (p && p->nkernels != cs[t].kernels) FAILF("output reshape case %zu: %d kernels, expected %d", t, p->nkernels, cs[t].kernels);
    CHECK(tp_graph_run(g, nin, in, 2, e, &ne) == TP_OK);
    CHECK(pl && tp_plan_run(pl, nin, in, 2, y, &ny) == TP_OK);
    CHECK(ne == cs[t].nout && ny == ne);
    for (int q = 0; q < ne && q < ny; q++) {
      CHECK(e[q] && y[q] && tp_tensor_ndim(e[q]) == tp_tensor_ndim(y[q]));
      for (int d = 0; e[q] && y[q] && d < tp_tensor_ndim(e[q]); d++) CHECK(tp_tensor_shape(e[q])[d] == tp_tensor_shape(y[q])[d]);
      int64_t cnt = e[q] ? tp_tensor_numel(e[q]) : 0;
      CHECK(cnt > 0 && y[q] && tp_tensor_numel(y[q]) == cnt);
      for (int64_t i = 0; y[q] && i < cnt; i++) {
        double a = tp_tensor_get_f64(e[q], i), b = tp_tensor_get_f64(y[q], i);
        if (fabs(a - b) > 1e-5 + 1e-5 * fabs(a)) {
          FAILF("output reshape case %zu output %d element %lld: stax %g, eager %g", t, q, (long long)i, b, a);
          break;
        }
      }
    }
    for (int q = 0; q < 2; q++) tp_tensor_release(e[q]), tp_tensor_release(y[q]), tp_tensor_release(in[q]);
    tp_plan_free(pl);
    tp_graph_free(g);
  }
}

/* Copy kernels (one load: executor.c run_copy) and x * ones (a constant of
 * 1.0s: the ONNX importer's nearest Resize, x re-strided, no multiply):
 * a 2x nearest upsample along W, along H then W with an add, a
 * constant that is not all ones (multiplied), interleaved pairs (a
 * permute), a strided gather (a transpose), a broadcast fill, and a large
 * W upsample split over the pool; bit for bit against the graph
 * executor, with one and two threads. */
static void test_copy_kernels(void) {
  static const struct { const char *text; int64_t xs[4], ys[4]; int xnd, ynd, copies, muls; } cs[] = {
      {"tpgraph v1\n%x = placeholder : f32[2,3,4,5]\n%1 = get_attr \"o\" : f32[2]\n"
       "%0 = reshape(%x, shape=[2,3,4,5,1]) : f32[2,3,4,5,1]\n%2 = mul(%0, %1) : f32[2,3,4,5,2]\n"
       "%3 = reshape(%2, shape=[2,3,4,10]) : f32[2,3,4,10]\noutput(%3)\ndata %1 f32[2] AACAPwAAgD8=\n",
       {2, 3, 4, 5}, {0}, 4, 0, 1, 0},
      {"tpgraph v1\n%x = placeholder : f32[1,3,4,5]\n%y = placeholder : f32[1,3,8,10]\n"
       "%h = get_attr \"h\" : f32[2,1]\n%w = get_attr \"w\" : f32[2]\n"
       "%0 = reshape(%x, shape=[1,3,4,1,5]) : f32[1,3,4,1,5]\n%1 = mul(%0, %h) : f32[1,3,4,2,5]\n"
       "%2 = reshape(%1, shape=[1,3,8,5]) : f32[1,3,8,5]\n%3 = reshape(%2, shape=[1,3,8,5,1]) : f32[1,3,8,5,1]\n"
       "%4 = mul(%3, %w) : f32[1,3,8,5,2]\n%5 = reshape(%4, shape=[1,3,8,10]) : f32[1,3,8,10]\n"
       "%6 = add(%5, %y) : f32[1,3,8,10]\noutput(%6)\ndata %h f32[2,1] AACAPwAAgD8=\ndata %w f32[2] AACAPwAAgD8=\n",
       {1, 3, 4, 5}, {1, 3, 8, 10}, 4, 4, 2, 0},
      {"tpgraph v1\n%x = placeholder : f32[2,3,4,5]\n%1 = get_attr \"o\" : f32[2]\n"
       "%0 = reshape(%x, shape=[2,3,4,5,1]) : f32[2,3,4,5,1]\n%2 = mul(%0, %1) : f32[2,3,4,5,2]\n"
       "%3 = reshape(%2, shape=[2,3,4,10]) : f32[2,3,4,10]\noutput(%3)\ndata %1 f32[2] AACAPwAAAEA=\n",
       {2, 3, 4, 5}, {0}, 4, 0, 0, 1},
      {"tpgraph v1\n%x = placeholder : f32[5,7,2]\n%0 = permute(%x, perm=[1,0,2]) : f32[7,5,2]\noutput(%0)\n",
       {5, 7, 2}, {0}, 3, 0, 1, 0},
      {"tpgraph v1\n%x = placeholder : f32[6,9]\n%0 = transpose(%x, dim0=0, dim1=1) : f32[9,6]\noutput(%0)\n",
       {6, 9}, {0}, 2, 0, 1, 0},
      {"tpgraph v1\n%x = placeholder : f32[3,1]\n%1 = get_attr \"o\" : f32[2]\n"
       "%2 = mul(%x, %1) : f32[3,2]\n%3 = reshape(%2, shape=[6]) : f32[6]\noutput(%3)\ndata %1 f32[2] AACAPwAAgD8=\n",
       {3, 1}, {0}, 2, 0, 1, 0},
      {"tpgraph v1\n%x = placeholder : f32[2,8,64,64]\n%1 = get_attr \"o\" : f32[2]\n"
       "%0 = reshape(%x, shape=[2,8,64,64,1]) : f32[2,8,64,64,1]\n%2 = mul(%0, %1) : f32[2,8,64,64,2]\n"
       "%3 = reshape(%2, shape=[2,8,64,128]) : f32[2,8,64,128]\noutput(%3)\ndata %1 f32[2] AACAPwAAgD8=\n",
       {2, 8, 64, 64}, {0}, 4, 0, 1, 0},
  };
  for (size_t t = 0; t < sizeof cs / sizeof cs[0]; t++) {
    tp_graph *g = parse(cs[t].text);
    if (!g) continue;
    int nin = cs[t].ynd ? 2 : 1;
    tp_tensor *in[2] = {0}, *e = NULL;
    tp_randn(cs[t].xnd, cs[t].xs, 81 + (uint64_t)t, &in[0]);
    if (nin == 2) tp_randn(cs[t].ynd, cs[t].ys, 91, &in[1]);
    tp_plan *pl = NULL;
    int n = 0;
    if (tp_lower(g, NULL, &pl) != TP_OK) FAILF("copy kernels case %zu: %s", t, tp_last_error());
    const tp_kir_program *p = pl ? tp_plan_program(pl) : NULL;
    int copies = 0, muls = 0;
    for (int k = 0; p && k < p->nkernels; k++) {
      const tp_kir_kernel *kk = &p->kernels[k];
      copies += kk->kind == TP_KK_POINTWISE && kk->expr.n == 1 && kk->expr.ins[0].op == TP_KI_LOAD;
      for (int q = 0; q < kk->expr.n; q++) muls += kk->expr.ins[q].op == TP_KI_BINARY && kk->expr.ins[q].sub == TP_KBIN_MUL;
    }
    if (p && (copies != cs[t].copies || muls != cs[t].muls)) {
      char *dump = NULL;
      tp_kir_print(p, &dump);
      FAILF("copy kernels case %zu: %d copy kernels, %d muls, expected %d, %d:\n%s", t, copies, muls, cs[t].copies,
            cs[t].muls, dump ? dump : "");
      tp_free(dump);
    }
    CHECK(tp_graph_run(g, nin, in, 1, &e, &n) == TP_OK);
    for (int th = 1; th <= (tp_pool_has_threads() ? 2 : 1); th++) {
      tp_tensor *y = NULL;
      CHECK(tp_pool_set_threads(th) == TP_OK);
      CHECK(pl && tp_plan_run(pl, nin, in, 1, &y, &n) == TP_OK);
      int64_t cnt = e ? tp_tensor_numel(e) : 0;
      CHECK(cnt > 0 && y && tp_tensor_numel(y) == cnt);
      for (int64_t i = 0; y && i < cnt; i++) {
        float a = (float)tp_tensor_get_f64(e, i), b = (float)tp_tensor_get_f64(y, i);
        if (memcmp(&a, &b, sizeof a)) {
          FAILF("copy kernels case %zu (%d threads) element %lld: stax %.9g, eager %.9g", t, th, (long long)i, b, a);
          break;
        }
      }
      tp_tensor_release(y);
    }
    CHECK(tp_pool_set_threads(0) == TP_OK);
    tp_tensor_release(e);
    for (int q = 0; q < 2; q++) tp_tensor_release(in[q]);
    tp_plan_free(pl);
    tp_graph_free(g);
  }
}

/* Subnormal values of a constant GEMM operand count as zeros in the plan
 * (plan.c flush_subnormals: the packed copy; x86's FMA takes a microcode
 * assist per subnormal operand): a column of W [8, 4] all subnormal gives
 * +0 exactly, the other columns (a few subnormal entries among normal
 * ones) match the graph executor; the graph's constant keeps its values. */
static void test_subnormal_weights(void) {
  const char *text = "tpgraph v1\n%x = placeholder : f32[3,8]\n%w = get_attr \"w\" : f32[8,4]\n"
                     "%0 = matmul(%x, %w) : f32[3,4]\noutput(%0)\ndata %w f32[8,4] DATA\n";
  char buf[1024];
  const char *at = strstr(text, "DATA");
  snprintf(buf, sizeof buf, "%.*smOMKAAAAgL4AAEC/yKogAIUtAoAAAAAAyKogAAAAgL+Y4woAyKogAAAAgL4AAEC/hS0CgAAAAD8AAAAAyKogAJjjCgAAAEA/yKogAAAAgL6FLQKAyKogAAAAAD8AAAAAmOMKAAAAoD8AAEA/yKogAIUtAoAAAMA/yKogAAAAAD8=\n", (int)(at - text), text);
  tp_graph *g = parse(buf);
  if (!g) return;
  tp_tensor *x = NULL, *e = NULL, *y = NULL;
  float xv[24];
  for (int i = 0; i < 24; i++) xv[i] = 1.0f + 0.125f * (float)(i % 5);
  CHECK(tp_tensor_new(TP_F32, 2, (int64_t[]){3, 8}, xv, &x) == TP_OK);
  tp_plan *pl = NULL;
  int n = 0;
  CHECK(tp_lower(g, NULL, &pl) == TP_OK);
  CHECK(tp_graph_run(g, 1, &x, 1, &e, &n) == TP_OK);
  CHECK(pl && tp_plan_run(pl, 1, &x, 1, &y, &n) == TP_OK);
  for (int r = 0; e && y && r < 3; r++) {
    double e0 = tp_tensor_get_f64(e, r * 4), y0 = tp_tensor_get_f64(y, r * 4);
    if (!(e0 != 0 && fabs(e0) < 1e-37 && y0 == 0 && !signbit(y0)))
      FAILF("subnormal weights row %d column 0: plan %g (expected +0), eager %g (expected subnormal)", r, y0, e0);
    for (int c = 1; c < 4; c++) {
      double a = tp_tensor_get_f64(e, r * 4 + c), b = tp_tensor_get_f64(y, r * 4 + c);
      if (fabs(a - b) > 1e-6 * (1 + fabs(a))) FAILF("subnormal weights [%d, %d]: plan %g, eager %g", r, c, b, a);
    }
  }
  tp_tensor_release(e), tp_tensor_release(y), tp_tensor_release(x);
  tp_plan_free(pl);
  tp_graph_free(g);
}

/* A squeeze-excitation step: a global average pool, a 1x1 conv on the
 * pooled [1, C, 1, 1] (a GEMM with N = 1, conv_gemm), a bias add and a
 * relu: the bias and relu are the GEMM's epilogue although the load's
 * stride along the size-1 dims is not the contiguous one (row + GEMM, two
 * kernels); against the graph executor. */
static void test_se_epilogue(void) {
  const char *text = "tpgraph v1\n%x = placeholder : f32[1,8,4,5]\n%w = placeholder : f32[6,8,1,1]\n"
                     "%b = placeholder : f32[6,1,1]\n%0 = mean(%x, dims=[2,3], keepdim=true) : f32[1,8,1,1]\n"
                     "%1 = conv2d(%0, %w, none, window=[1,1,0,0,0,0,1,1], groups=1) : f32[1,6,1,1]\n"
                     "%2 = add(%1, %b) : f32[1,6,1,1]\n%3 = relu(%2) : f32[1,6,1,1]\noutput(%3)\n";
  tp_graph *g = parse(text);
  if (!g) return;
  tp_tensor *in[3] = {0}, *e = NULL, *y = NULL;
  tp_randn(4, (int64_t[]){1, 8, 4, 5}, 101, &in[0]);
  tp_randn(4, (int64_t[]){6, 8, 1, 1}, 102, &in[1]);
  tp_randn(3, (int64_t[]){6, 1, 1}, 103, &in[2]);
  tp_plan *pl = NULL;
  int n = 0;
  CHECK(tp_lower(g, NULL, &pl) == TP_OK);
  const tp_kir_program *p = pl ? tp_plan_program(pl) : NULL;
  if (p && !(p->nkernels == 2 && count_kind(p, TP_KK_GEMM) == 1 && p->kernels[1].expr.n > 0)) {
    char *dump = NULL;
    tp_kir_print(p, &dump);
    FAILF("se epilogue: expected a row kernel and a GEMM with the bias and relu:\n%s", dump ? dump : "");
    tp_free(dump);
  }
  CHECK(tp_graph_run(g, 3, in, 1, &e, &n) == TP_OK);
  CHECK(pl && tp_plan_run(pl, 3, in, 1, &y, &n) == TP_OK);
  for (int64_t i = 0; e && y && i < 6; i++) {
    double a = tp_tensor_get_f64(e, i), b = tp_tensor_get_f64(y, i);
    if (fabs(a - b) > 1e-5 + 1e-5 * fabs(a)) FAILF("se epilogue element %lld: stax %g, eager %g", (long long)i, b, a);
  }
  tp_tensor_release(e), tp_tensor_release(y);
  for (int q = 0; q < 3; q++) tp_tensor_release(in[q]);
  tp_plan_free(pl);
  tp_graph_free(g);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  size_t base = tp_live_tensors();
  test_passes();
  test_schedule();
  test_differential();
  test_fast_math();
  test_autotune();
  test_epilogue_order();
  test_minmax();
  test_maskpos();
  test_conv_gemm();
  test_short_rows();
  test_trailing_reduce();
  test_row_map();
  test_conv_bn();
  test_qlinear();
  test_qlinear_conv();
  test_into_arena();
  test_output_reshape();
  test_copy_kernels();
  test_subnormal_weights();
  test_se_epilogue();
  if (tp_live_tensors() != base) {
    printf("FAIL: %zu tensors leaked\n", tp_live_tensors() - base);
    failures++;
  }
  printf("%s: %d failures\n", failures ? "FAIL" : "ok", failures);
  return failures != 0;
}
