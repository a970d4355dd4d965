/* test_control_flow.c (TP_TEST_LONG: ctest starts it first) - cond and while_loop in the Graph IR (src/graph/
 * control.c) and in the plan (lower.c compiles each subgraph as a sub-plan;
 * the op kernel reads the predicate at run time): the text round trip,
 * both branches on the graph run, the reference run and the stax plan
 * against hand-computed values, a loop whose trip count comes from data,
 * and the bad graphs (a predicate of several values or of floats, branches
 * of different signatures, a body that changes a carried type); a
 * while_loop with scan outputs (stacked per step, in place) on every way,
 * with an allocation-failure sweep of its plan run. */
#include "lower/lower.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "alloc_sweep.h"

static tp_graph *parse(const char *text) {
  tp_graph *g = NULL;
  if (tp_graph_parse(text, strlen(text), &g) != TP_OK) {
    printf("FAIL parse: %s\n", tp_last_error());
    failures++;
  }
  return g;
}

/* then: (exp(a*b)+1, a); else: (a-b, b*2). One fused chain per branch. */
static const char *cond_text =
    "tpgraph v1\n"
    "subgraph \"then_g\" {\n"
    "%a = placeholder : f32[4]\n"
    "%b = placeholder : f32[4]\n"
    "%0 = mul(%a, %b) : f32[4]\n"
    "%1 = exp(%0) : f32[4]\n"
    "%2 = add(%1, 1) : f32[4]\n"
    "output(%2, %a)\n"
    "}\n"
    "subgraph \"else_g\" {\n"
    "%a = placeholder : f32[4]\n"
    "%b = placeholder : f32[4]\n"
    "%0 = sub(%a, %b) : f32[4]\n"
    "%1 = mul(%b, 2) : f32[4]\n"
    "output(%0, %1)\n"
    "}\n"
    "%p = placeholder : b8[]\n"
    "%x = placeholder : f32[4]\n"
    "%y = placeholder : f32[4]\n"
    "%t = get_attr \"then_g\" : graph\n"
    "%e = get_attr \"else_g\" : graph\n"
    "%x2 = add(%x, 0.5) : f32[4]\n"
    "%c = cond(%p, %t, %e, %x2, %y, results=2) : f32[4]\n"
    "%r0 = getitem(%c, index=0) : f32[4]\n"
    "%r1 = getitem(%c, index=1) : f32[4]\n"
    "%z = mul(%r0, %r1) : f32[4]\n"
    "output(%z, %r1)\n";

static tp_tensor *vec(const float *v) {
  int64_t sh[1] = {4};
  tp_tensor *t = NULL;
  tp_tensor_new(TP_F32, 1, sh, v, &t);
  return t;
}

static tp_tensor *flag(tp_dtype dt, int64_t v) {
  tp_tensor *t = NULL;
  unsigned char b = (unsigned char)(v != 0);
  int64_t i = v;
  int32_t i32 = (int32_t)v;
  tp_tensor_new(dt, 0, NULL, dt == TP_BOOL ? (void *)&b : dt == TP_I64 ? (void *)&i : (void *)&i32, &t);
  return t;
}

static int close_to(const float *got, const double *want, int n) {
  for (int i = 0; i < n; i++)
    if (fabs(got[i] - want[i]) > 1e-5 + 1e-5 * fabs(want[i])) return 0;
  return 1;
}

/* runs g three ways: graph run, reference run, the lowered plan */
static void run3(const tp_graph *g, tp_plan *pl, int nin, tp_tensor **in, int nout_want, double want[][4],
                 const char *what) {
  for (int way = 0; way < 3; way++) {
    tp_tensor *outs[4] = {0};
    int nout = 0;
    tp_status s = way == 0   ? tp_graph_run(g, nin, in, 4, outs, &nout)
                  : way == 1 ? tp_graph_run_ex(g, 1, nin, in, 4, outs, &nout)
                             : tp_plan_run(pl, nin, in, 4, outs, &nout);
    CHECKF(s == TP_OK && nout == nout_want, "%s way %d: %s", what, way, tp_last_error());
    for (int k = 0; s == TP_OK && k < nout; k++) {
      float got[4] = {0};
      CHECK_OK(tp_tensor_read(outs[k], got, sizeof got));
      CHECKF(close_to(got, want[k], 4), "%s way %d output %d: %g %g %g %g, want %g %g %g %g", what, way, k,
             got[0], got[1], got[2], got[3], want[k][0], want[k][1], want[k][2], want[k][3]);
    }
    for (int k = 0; k < nout; k++) tp_tensor_release(outs[k]);
  }
}

static void test_cond(void) {
  tp_graph *g = parse(cond_text), *g2 = NULL;
  if (!g) return;
  /* text round trip */
  char *text = NULL, *text2 = NULL;
  CHECK_OK(tp_graph_print(g, 1, &text));
  CHECK(text && strstr(text, "cond(%p, %t, %e, %x2, %y, results=2)"));
  if (text) CHECK_OK(tp_graph_parse(text, strlen(text), &g2));
  CHECK(g2 && tp_graph_equal(g, g2));
  if (g2) CHECK_OK(tp_graph_print(g2, 1, &text2));
  CHECK(text && text2 && !strcmp(text, text2));
  tp_free_buffer(text);
  tp_free_buffer(text2);
  tp_graph_free(g2);

  tp_plan *pl = NULL;
  CHECK_OK(tp_lower(g, NULL, &pl));
  if (!pl) {
    tp_graph_free(g);
    return;
  }
  /* both branches compiled as sub-plans, each a fused kernel */
  CHECK(tp_plan_nsubplans(pl) > 0);
  int nsub = 0;
  for (int i = 0; i < tp_plan_nsubplans(pl); i++) {
    tp_plan *sp = tp_plan_subplan(pl, i);
    if (!sp) continue;
    nsub++;
    const tp_kir_program *sprog = tp_plan_program(sp);
    int pw = 0;
    for (int k = 0; k < sprog->nkernels; k++) pw += sprog->kernels[k].kind == TP_KK_POINTWISE;
    CHECKF(pw >= 1, "sub-plan %d has no pointwise kernel", i);
  }
  CHECK(nsub == 2);

  const float xv[4] = {0.1f, -0.2f, 0.3f, 1.0f}, yv[4] = {1.0f, 2.0f, -1.0f, 0.25f};
  tp_tensor *x = vec(xv), *y = vec(yv);
  double want_then[2][4], want_else[2][4];
  for (int i = 0; i < 4; i++) {
    double a = (double)xv[i] + 0.5, b = yv[i];
    double t0 = exp(a * b) + 1, t1 = a, e0 = a - b, e1 = b * 2;
    want_then[0][i] = t0 * t1, want_then[1][i] = t1;
    want_else[0][i] = e0 * e1, want_else[1][i] = e1;
  }
  /* the choice flips at run time: bool true / false, then int64 and int32
   * predicates of another graph (every nonzero is true) */
  for (int rep = 0; rep < 2; rep++) {
    tp_tensor *pt = flag(TP_BOOL, 1), *pf = flag(TP_BOOL, 0);
    tp_tensor *in_t[3] = {pt, x, y}, *in_f[3] = {pf, x, y};
    run3(g, pl, 3, in_t, 2, want_then, "cond true");
    run3(g, pl, 3, in_f, 2, want_else, "cond false");
    tp_tensor_release(pt);
    tp_tensor_release(pf);
  }
  tp_plan_free(pl);
  tp_graph_free(g);

  /* an int64 predicate of shape [1] (ONNX If's) */
  const char *from = "%p = placeholder : b8[]";
  const char *at = strstr(cond_text, from);
  char buf[2048];
  snprintf(buf, sizeof buf, "%.*s%%p = placeholder : i64[1]%s", (int)(at - cond_text), cond_text, at + strlen(from));
  g = parse(buf);
  pl = NULL;
  if (g) CHECK_OK(tp_lower(g, NULL, &pl));
  if (g && pl) {
    int64_t sh[1] = {1}, v7 = 7, v0 = 0;
    tp_tensor *p7 = NULL, *p0 = NULL;
    tp_tensor_new(TP_I64, 1, sh, &v7, &p7);
    tp_tensor_new(TP_I64, 1, sh, &v0, &p0);
    tp_tensor *in_t[3] = {p7, x, y}, *in_f[3] = {p0, x, y};
    run3(g, pl, 3, in_t, 2, want_then, "cond int64 7");
    run3(g, pl, 3, in_f, 2, want_else, "cond int64 0");
    tp_tensor_release(p7);
    tp_tensor_release(p0);
  }
  tp_plan_free(pl);
  tp_graph_free(g);
  tp_tensor_release(x);
  tp_tensor_release(y);
}

/* The loop below: its condition and the body's first steps (LOOP_HEAD),
 * and the call with its inputs (LOOP_CALL); loop_text and scan_text differ
 * in the body's outputs and what they read of the result. */
#define LOOP_HEAD \
    "tpgraph v1\n" \
    "subgraph \"c\" {\n" \
    "%i = placeholder : i64[]\n" \
    "%acc = placeholder : f32[4]\n" \
    "%n = placeholder : i64[]\n" \
    "%w = placeholder : f32[4]\n" \
    "%0 = lt(%i, %n) : b8[]\n" \
    "output(%0)\n" \
    "}\n" \
    "subgraph \"b\" {\n" \
    "%i = placeholder : i64[]\n" \
    "%acc = placeholder : f32[4]\n" \
    "%n = placeholder : i64[]\n" \
    "%w = placeholder : f32[4]\n" \
    "%0 = add(%i, 1) : i64[]\n" \
    "%1 = mul(%acc, %w) : f32[4]\n" \
    "%2 = add(%1, 1) : f32[4]\n"
#define LOOP_CALL \
    "%i0 = placeholder : i64[]\n" \
    "%a0 = placeholder : f32[4]\n" \
    "%n = placeholder : i64[]\n" \
    "%w = placeholder : f32[4]\n" \
    "%cg = get_attr \"c\" : graph\n" \
    "%bg = get_attr \"b\" : graph\n" \
    "%l = while_loop(%cg, %bg, %i0, %a0, %n, %w, results=2) : i64[]\n"

/* while i < n: (i, acc) = (i + 1, acc * w + 1); n and the initial values
 * are inputs, w is captured: the trip count comes from data. */
static const char *loop_text =
    LOOP_HEAD
    "output(%0, %2)\n"
    "}\n"
    LOOP_CALL
    "%i = getitem(%l, index=0) : i64[]\n"
    "%acc = getitem(%l, index=1) : f32[4]\n"
    "output(%acc)\n";

static void test_while(void) {
  tp_graph *g = parse(loop_text), *g2 = NULL;
  if (!g) return;
  char *text = NULL;
  CHECK_OK(tp_graph_print(g, 1, &text));
  if (text) CHECK_OK(tp_graph_parse(text, strlen(text), &g2));
  CHECK(g2 && tp_graph_equal(g, g2));
  tp_free_buffer(text);
  tp_graph_free(g2);
  tp_plan *pl = NULL;
  CHECK_OK(tp_lower(g, NULL, &pl));
  const float a0[4] = {0, 1, -1, 2}, wv[4] = {0.5f, 2, -1, 1};
  tp_tensor *a = vec(a0), *w = vec(wv), *i0 = flag(TP_I64, 0);
  int64_t trips[] = {0, 1, 3, 7};
  for (int q = 0; pl && q < 4; q++) {
    tp_tensor *n = flag(TP_I64, trips[q]);
    double want[1][4];
    for (int k = 0; k < 4; k++) {
      double v = a0[k];
      for (int64_t t = 0; t < trips[q]; t++) v = v * wv[k] + 1;
      want[0][k] = v;
    }
    tp_tensor *in[4] = {i0, a, n, w};
    char what[32];
    snprintf(what, sizeof what, "while %lld trips", (long long)trips[q]);
    run3(g, pl, 4, in, 1, want, what);
    tp_tensor_release(n);
  }
  tp_tensor_release(a);
  tp_tensor_release(w);
  tp_tensor_release(i0);
  tp_plan_free(pl);
  tp_graph_free(g);
}

/* replaces the first `from` in base by `to`; parses and expects an error
 * containing `msg` */
static void bad(const char *base, const char *from, const char *to, const char *msg) {
  const char *at = strstr(base, from);
  if (!at) {
    FAILF("bad: '%s' not in the text", from);
    return;
  }
  char buf[4096];
  snprintf(buf, sizeof buf, "%.*s%s%s", (int)(at - base), base, to, at + strlen(from));
  tp_graph *g = NULL;
  tp_status s = tp_graph_parse(buf, strlen(buf), &g);
  CHECKF(s != TP_OK && strstr(tp_last_error(), msg), "replacing '%s' by '%s': want an error with '%s', got %d '%s'",
         from, to, msg, (int)s, tp_last_error());
  tp_graph_free(g);
  tp_clear_error();
}

static void test_bad(void) {
  /* a predicate of several values, of floats */
  bad(cond_text, "%p = placeholder : b8[]", "%p = placeholder : b8[2]", "must be one bool or integer value");
  bad(cond_text, "%p = placeholder : b8[]", "%p = placeholder : f32[]", "must be one bool or integer value");
  /* branches of different signatures: dtype, shape, count */
  bad(cond_text, "%1 = mul(%b, 2) : f32[4]\n", "%1 = sum(%b, dims=[0], keepdim=true) : f32[1]\n",
      "result 1 is f32[4] in the then subgraph but f32[1] in the else");
  bad(cond_text, "output(%0, %1)\n}", "output(%0)\n}", "the then subgraph returns 2, the else 1");
  /* an operand whose type is not the subgraph input's */
  bad(cond_text, "%y = placeholder : f32[4]", "%y = placeholder : f32[3]", "operand %y is f32[3]");
  /* a subgraph reference that is not a graph */
  bad(cond_text, "cond(%p, %t, %e,", "cond(%p, %x, %e,", "must name subgraphs");
  /* while: a body that changes a carried type; a cond of floats */
  bad(loop_text, "%0 = add(%i, 1) : i64[]", "%0 = cast(%i, dtype=f32) : f32[]", "result 0 is f32[] in the body");
  bad(loop_text, "%0 = lt(%i, %n) : b8[]\noutput(%0)", "%0 = cast(%i, dtype=f32) : f32[]\noutput(%0)",
      "its cond subgraph must return one bool or integer value");
}

/* the plan stays usable after a run-time error inside a branch */
static void test_run_errors(void) {
  tp_graph *g = parse(cond_text);
  tp_plan *pl = NULL;
  if (g) CHECK_OK(tp_lower(g, NULL, &pl));
  if (!pl) {
    tp_graph_free(g);
    return;
  }
  const float xv[4] = {1, 2, 3, 4};
  tp_tensor *x = vec(xv), *p2 = NULL, *pt = flag(TP_BOOL, 1);
  int64_t sh[1] = {2};
  unsigned char two[2] = {1, 0};
  tp_tensor_new(TP_BOOL, 1, sh, two, &p2);
  tp_tensor *in[3] = {p2, x, x}, *outs[4] = {0};
  int nout = 0;
  CHECK(tp_graph_run(g, 3, in, 4, outs, &nout) != TP_OK);
  CHECK(tp_plan_run(pl, 3, in, 4, outs, &nout) != TP_OK);
  tp_clear_error();
  in[0] = pt;
  CHECK_OK(tp_plan_run(pl, 3, in, 4, outs, &nout));
  for (int k = 0; k < nout; k++) tp_tensor_release(outs[k]);
  tp_tensor_release(x);
  tp_tensor_release(p2);
  tp_tensor_release(pt);
  tp_plan_free(pl);
  tp_graph_free(g);
}

/* The plan's loop is double buffered: the number of carried-sized
 * allocations of a run does not grow with the trip count. */
static int big_allocs;
static void *counting(void *ud, void *ptr, size_t old_size, size_t new_size) {
  (void)ud, (void)old_size;
  if (new_size == 0) {
    free(ptr);
    return NULL;
  }
  if (new_size >= 4096) big_allocs++;
  return realloc(ptr, new_size);
}

static void test_double_buffer(void) {
  char text[4096], *o = text;
  for (const char *c = loop_text; *c && o < text + sizeof text - 8;) /* f32[4] -> f32[1024] */
    if (!strncmp(c, "f32[4]", 6)) o += sprintf(o, "f32[1024]"), c += 6;
    else *o++ = *c++;
  *o = 0;
  tp_graph *g = parse(text);
  tp_plan *pl = NULL;
  if (g) CHECK_OK(tp_lower(g, NULL, &pl));
  int64_t sh[1] = {1024};
  tp_tensor *a = NULL, *w = NULL, *i0 = flag(TP_I64, 0);
  tp_tensor_new(TP_F32, 1, sh, NULL, &a);
  static float ones[1024];
  for (int k = 0; k < 1024; k++) ones[k] = 1;
  tp_tensor_new(TP_F32, 1, sh, ones, &w); /* a = a * 1 + 1: the trip count */
  int counts[2] = {0, 0};
  int64_t trips[2] = {3, 40};
  for (int q = 0; pl && q < 2; q++) {
    tp_tensor *n = flag(TP_I64, trips[q]), *in[4] = {i0, a, n, w}, *out[2] = {0};
    int no = 0;
    big_allocs = 0;
    tp_set_allocator(counting, NULL);
    tp_status s = tp_plan_run(pl, 4, in, 2, out, &no);
    tp_set_allocator(NULL, NULL);
    counts[q] = big_allocs;
    CHECK_OK(s);
    float got[1024];
    if (!s) tp_tensor_read(out[0], got, sizeof got);
    CHECKF(!s && fabsf(got[7] - (float)trips[q]) < 1e-4f, "a = %g after %lld trips", got[7], (long long)trips[q]);
    for (int k = 0; k < no; k++) tp_tensor_release(out[k]);
    tp_tensor_release(n);
  }
  CHECKF(counts[0] == counts[1], "carried-sized allocations: %d for 3 trips, %d for 40", counts[0], counts[1]);
  tp_tensor_release(a);
  tp_tensor_release(w);
  tp_tensor_release(i0);
  tp_plan_free(pl);
  tp_graph_free(g);
}

/* The loop of loop_text with two scan outputs: per step acc (after the
 * step) and i as f32 (a 0-d slice); stacks of 3 rows declared. */
static const char *scan_text =
    LOOP_HEAD
    "%3 = cast(%i, dtype=f32) : f32[]\n"
    "output(%0, %2, %2, %3)\n"
    "}\n"
    LOOP_CALL
    "%acc = getitem(%l, index=1) : f32[4]\n"
    "%ys = getitem(%l, index=2) : f32[3,4]\n"
    "%is = getitem(%l, index=3) : f32[3]\n"
    "%y2 = mul(%ys, 2) : f32[3,4]\n"
    "output(%acc, %y2, %is)\n";

static const float sc_a0[4] = {0, 1, -1, 2}, sc_w[4] = {0.5f, 2, -1, 1};

/* one run of g (way 0 graph, 1 reference, 2 plan) with n trips: checks
 * the outputs against a loop in double; returns the status */
static tp_status scan_run(const tp_graph *g, tp_plan *pl, int way, int64_t trips, const char *what) {
  tp_tensor *a = vec(sc_a0), *w = vec(sc_w), *i0 = flag(TP_I64, 0), *n = flag(TP_I64, trips);
  tp_tensor *in[4] = {i0, a, n, w}, *outs[4] = {0};
  int nout = 0;
  tp_status s = way == 0   ? tp_graph_run(g, 4, in, 4, outs, &nout)
                : way == 1 ? tp_graph_run_ex(g, 1, 4, in, 4, outs, &nout)
                           : tp_plan_run(pl, 4, in, 4, outs, &nout);
  if (s == TP_OK) {
    double acc[4], ys[16][4];
    for (int k = 0; k < 4; k++) acc[k] = sc_a0[k];
    for (int64_t t = 0; t < trips && t < 16; t++)
      for (int k = 0; k < 4; k++) acc[k] = acc[k] * sc_w[k] + 1, ys[t][k] = 2 * acc[k];
    float got[64] = {0}, gi[16] = {0};
    CHECKF(nout == 3 && tp_tensor_ndim(outs[1]) == 2 && tp_tensor_shape(outs[1])[0] == trips &&
               tp_tensor_shape(outs[1])[1] == 4 && tp_tensor_ndim(outs[2]) == 1 && tp_tensor_shape(outs[2])[0] == trips,
           "%s way %d: the stacks' shapes", what, way);
    if (nout == 3 && tp_tensor_numel(outs[1]) == 4 * trips && trips <= 16) {
      CHECK_OK(tp_tensor_read(outs[1], got, sizeof(float) * 4 * (size_t)trips));
      CHECK_OK(tp_tensor_read(outs[2], gi, sizeof(float) * (size_t)trips));
      int bad = 0;
      for (int64_t t = 0; t < trips; t++) {
        bad += !close_to(got + 4 * t, ys[t], 4);
        bad += gi[t] != (float)t;
      }
      CHECKF(!bad, "%s way %d: %d rows wrong", what, way, bad);
    }
  }
  for (int k = 0; k < nout; k++) tp_tensor_release(outs[k]);
  tp_tensor_release(a), tp_tensor_release(w), tp_tensor_release(i0), tp_tensor_release(n);
  return s;
}

static tp_status scan_scenario(void *ud, void *res) {
  (void)ud;
  tp_graph *g = NULL;
  tp_plan *pl = NULL;
  tp_tensor *in[4] = {0}, *outs[4] = {0};
  int nout = 0;
  sweep_begin();
  SWEEP_STEP("parse", tp_graph_parse(scan_text, strlen(scan_text), &g));
  SWEEP_STEP("lower", tp_lower(g, NULL, &pl));
  SWEEP_STEP("a0", tp_tensor_new(TP_F32, 1, (int64_t[1]){4}, sc_a0, &in[1]));
  SWEEP_STEP("w", tp_tensor_new(TP_F32, 1, (int64_t[1]){4}, sc_w, &in[3]));
  SWEEP_STEP("i0", tp_tensor_new(TP_I64, 0, NULL, (int64_t[1]){0}, &in[0]));
  SWEEP_STEP("n", tp_tensor_new(TP_I64, 0, NULL, (int64_t[1]){3}, &in[2]));
  SWEEP_STEP("graph run", tp_graph_run(g, 4, in, 4, outs, &nout));
  for (int k = 0; k < nout; k++) tp_tensor_release(outs[k]), outs[k] = NULL;
  nout = 0;
  SWEEP_STEP("plan run", tp_plan_run(pl, 4, in, 4, outs, &nout));
  SWEEP_STEP("read", tp_tensor_read(outs[1], res, sizeof(float) * 12));
  sweep_step = "done";
cleanup:
  for (int k = 0; k < nout; k++) tp_tensor_release(outs[k]);
  for (int k = 0; k < 4; k++) tp_tensor_release(in[k]);
  tp_plan_free(pl);
  tp_graph_free(g);
  return sweep_status;
}

static void test_scan_outputs(void) {
  tp_graph *g = parse(scan_text), *g2 = NULL;
  if (!g) return;
  char *text = NULL;
  CHECK_OK(tp_graph_print(g, 1, &text));
  if (text) CHECK_OK(tp_graph_parse(text, strlen(text), &g2));
  CHECK(g2 && tp_graph_equal(g, g2));
  tp_free_buffer(text);
  tp_graph_free(g2);
  tp_plan *pl = NULL;
  CHECK_OK(tp_lower(g, NULL, &pl));
  for (int way = 0; pl && way < 3; way++) CHECK_OK(scan_run(g, pl, way, 3, "3 steps"));
  /* the graph runs give the stacks the loop made (any length); the plan
   * declared 3 rows: another count is a clear error, the plan usable */
  CHECK_OK(scan_run(g, pl, 0, 5, "5 steps (graph run)"));
  CHECK_OK(scan_run(g, pl, 0, 0, "0 steps (graph run)"));
  if (pl) {
    tp_status s = scan_run(g, pl, 2, 5, "5 steps (plan)");
    CHECKF(s == TP_ERR_UNSUPPORTED && strstr(tp_last_error(), "has 20 elements, the plan expects 12"), "error: %s",
           tp_last_error());
    CHECK_OK(scan_run(g, pl, 2, 3, "3 steps again"));
  }
  /* bad graphs: a scan output's body value of a rank that cannot stack */
  tp_plan_free(pl);
  tp_graph_free(g);
  float base[12];
  sweep_case sc = {"while_loop with scan outputs (graph run and plan)", scan_scenario, NULL, sizeof base, NULL};
  failures += sweep_run(&sc, base, NULL);
  double want[12];
  double acc[4];
  for (int k = 0; k < 4; k++) acc[k] = sc_a0[k];
  for (int t = 0; t < 3; t++)
    for (int k = 0; k < 4; k++) acc[k] = acc[k] * sc_w[k] + 1, want[t * 4 + k] = 2 * acc[k];
  for (int j = 0; j < 12; j++) CHECKF(fabs(base[j] - want[j]) < 1e-5, "sweep baseline [%d]: %g want %g", j, base[j], want[j]);
}

int main(void) {
  test_cond();
  test_while();
  test_bad();
  test_run_errors();
  test_double_buffer();
  test_scan_outputs();
  printf("test_control_flow: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
