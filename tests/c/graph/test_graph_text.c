/* test_graph_text.c - the graph text format: print, parse, round trip,
 * malformed inputs, truncated prefixes. */
#include "graph/graph.h"
#include "graph/text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "alloc_sweep.h"
#include "check.h"


/* ---- graph building --------------------------------------------------------- */
static tp_desc desc(tp_dtype dt, int ndim, ...) {
  tp_desc d;
  memset(&d, 0, sizeof d);
  d.dtype = dt;
  d.ndim = ndim;
  va_list ap;
  va_start(ap, ndim);
  for (int i = 0; i < ndim; i++) d.shape[i] = va_arg(ap, int);
  va_end(ap);
  return d;
}

static tp_arg N(int i) { return (tp_arg){ TP_ARG_NODE, i, 0, 0 }; }
static tp_arg I(double v) { return (tp_arg){ TP_ARG_SCALAR, 0, v, 1 }; }
static tp_arg F(double v) { return (tp_arg){ TP_ARG_SCALAR, 0, v, 0 }; }
static tp_arg NONE(void) { return (tp_arg){ TP_ARG_NONE, 0, 0, 0 }; }

static int add(tp_graph *g, tp_node_kind kind, const char *name, tp_op op, int nargs,
               const tp_arg *args, const tp_attrs *at, tp_desc d) {
  int idx = -1;
  tp_attrs a0;
  tp_attrs_init(&a0);
  tp_status s = tp_graph_add_node(g, kind, name, op, nargs, args, at ? at : &a0, &d, &idx);
  if (s != TP_OK) {
    fprintf(stderr, "add_node %s: %s\n", name ? name : "(auto)", tp_last_error());
    failures++;
  }
  return idx;
}

static int call(tp_graph *g, const char *name, tp_op op, int nargs, const tp_arg *args,
                const tp_attrs *at, tp_desc d) {
  return add(g, TP_NODE_CALL, name, op, nargs, args, at, d);
}

static int constant(tp_graph *g, const char *name, const char *target, tp_tensor *val) {
  tp_desc d;
  tp_desc_of(val, &d);
  d.weak = 0;
  int i = add(g, TP_NODE_GET_ATTR, name, (tp_op)0, 0, NULL, NULL, d);
  if (i >= 0) {
    if (target) {
      tp_free(g->nodes[i].target);
      g->nodes[i].target = tp_strdup(target);
    }
    tp_graph_set_val(g, i, val);
  }
  tp_tensor_release(val);
  return i;
}

static tp_tensor *tensor(tp_dtype dt, int ndim, const int64_t *shape, const void *data) {
  tp_tensor *t = NULL;
  CHECK_OK(tp_tensor_new(dt, ndim, shape, data, &t));
  return t;
}

/* ---- golden: the example of docs/graph-format.md ---------------------------------- */
static const char golden[] =
    "tpgraph v1\n"
    "%x = placeholder : f32[4,3]\n"
    "%w = get_attr \"w\" : f32[2,3]\n"
    "%b = get_attr \"b\" : f32[2]\n"
    "%3 = linear(%x, %w, %b) : f32[4,2]\n"
    "%4 = gelu(%3, approximate=tanh) : f32[4,2]\n"
    "%5 = sum(%4, dims=[1], keepdim=true) : f32[4,1]\n"
    "%6 = mul(%5, 1.5) : f32[4,1]\n"
    "%7 = linear(%x, %w, none) : f32[4,2] {opaque_mode=\"allow\", note=\"a \\\"q\\\"\"}\n"
    "output(%6, %5)\n"
    "data %w f32[2,3] AACAPwAAAEAAAEBAAACAQAAAoEAAAMBA\n"
    "data %b f32[2] AAAAPwAAgL8=\n";

static tp_graph *build_golden(void) {
  tp_graph *g = NULL;
  CHECK_OK(tp_graph_new(&g));
  if (!g) return NULL;
  tp_attrs at;
  int x = add(g, TP_NODE_PLACEHOLDER, "x", (tp_op)0, 0, NULL, NULL, desc(TP_F32, 2, 4, 3));
  float wv[6] = { 1, 2, 3, 4, 5, 6 }, bv[2] = { 0.5f, -1.0f };
  int w = constant(g, "w", "w", tensor(TP_F32, 2, (int64_t[]){ 2, 3 }, wv));
  int b = constant(g, "b", "b", tensor(TP_F32, 1, (int64_t[]){ 2 }, bv));
  int n3 = call(g, "3", TP_OP_LINEAR, 3, (tp_arg[]){ N(x), N(w), N(b) }, NULL,
                desc(TP_F32, 2, 4, 2));
  tp_attrs_init(&at);
  at.approximate = 1;
  int n4 = call(g, "4", TP_OP_GELU, 1, (tp_arg[]){ N(n3) }, &at, desc(TP_F32, 2, 4, 2));
  tp_attrs_init(&at);
  at.nints = 1;
  at.ints[0] = 1;
  at.keepdim = 1;
  int n5 = call(g, "5", TP_OP_SUM, 1, (tp_arg[]){ N(n4) }, &at, desc(TP_F32, 2, 4, 1));
  int n6 = call(g, "6", TP_OP_MUL, 2, (tp_arg[]){ N(n5), F(1.5) }, NULL, desc(TP_F32, 2, 4, 1));
  int n7 = call(g, "7", TP_OP_LINEAR, 3, (tp_arg[]){ N(x), N(w), NONE() }, NULL,
                desc(TP_F32, 2, 4, 2));
  CHECK_OK(tp_graph_set_custom(g, n7, "opaque_mode", "allow"));
  CHECK_OK(tp_graph_set_custom(g, n7, "note", "a \"q\""));
  add(g, TP_NODE_OUTPUT, "output", (tp_op)0, 2, (tp_arg[]){ N(n6), N(n5) }, NULL,
      desc(TP_F32, 0));
  return g;
}

/* ---- the big graph: every node kind, op, attribute, scalar form, dtype ---- */
static tp_graph *build_all(void) {
  tp_graph *g = NULL;
  CHECK_OK(tp_graph_new(&g));
  if (!g) return NULL;
  tp_attrs at;
  tp_desc f23 = desc(TP_F32, 2, 2, 3), b23 = desc(TP_BOOL, 2, 2, 3);
  int x = add(g, TP_NODE_PLACEHOLDER, "x", (tp_op)0, 0, NULL, NULL, f23);
  int y = add(g, TP_NODE_PLACEHOLDER, "in.y_1", (tp_op)0, 0, NULL, NULL, f23);
  float wv[12] = { 1, -2, 3.25f, 0, 1e-7f, -0.0f, INFINITY, 5, 6, 7, 8, 9 };
  int w = constant(g, "w", "layer.0.weight", tensor(TP_F32, 2, (int64_t[]){ 4, 3 }, wv));
  float bv[4] = { 0.5f, 1, 2, 3 };
  int b = constant(g, "b", "b", tensor(TP_F32, 1, (int64_t[]){ 4 }, bv));
  int32_t iv[3] = { -1, 2147483647, (int32_t)0x80000000u };
  int ci = constant(g, "ci", "tab\tand\nnewline \"q\" \\ \x01 \xc3\xa9",
                    tensor(TP_I32, 1, (int64_t[]){ 3 }, iv));
  int64_t lv[2] = { INT64_MIN, 1234567890123LL };
  int cl = constant(g, "cl", "cl", tensor(TP_I64, 1, (int64_t[]){ 2 }, lv));
  unsigned char bb[6] = { 1, 0, 0, 1, 1, 0 };
  int cb = constant(g, "cb", "cb", tensor(TP_BOOL, 2, (int64_t[]){ 2, 3 }, bb));
  /* a non-contiguous constant: the transpose of a 2x3 tensor */
  float tv[6] = { 1, 2, 3, 4, 5, 6 };
  tp_tensor *base = tensor(TP_F32, 2, (int64_t[]){ 2, 3 }, tv), *view = NULL;
  CHECK_OK(tp_tensor_view(base, 2, (int64_t[]){ 3, 2 }, (int64_t[]){ 1, 3 }, 0, &view));
  tp_tensor_release(base);
  int wt = constant(g, "wt", "wt", view);
  tp_tensor *empty = tensor(TP_F32, 2, (int64_t[]){ 0, 3 }, NULL);
  constant(g, "e", "e", empty);
  tp_tensor *s0 = NULL;
  float sv = 2.5f;
  s0 = tensor(TP_F32, 0, NULL, &sv);
  int k0 = constant(g, "k0", "k0", s0);
  int nd = add(g, TP_NODE_GET_ATTR, "nodata", (tp_op)0, 0, NULL, NULL, desc(TP_F32, 1, 2));
  if (nd >= 0) g->nodes[nd].target = tp_strdup("nodata");

  int outs[64], no = 0;
#define O(e) (outs[no++] = (e))
  int a0 = O(call(g, NULL, TP_OP_ADD, 2, (tp_arg[]){ N(x), N(y) }, NULL, f23));
  O(call(g, NULL, TP_OP_ADD, 2, (tp_arg[]){ N(x), N(k0) }, NULL, f23));
  O(call(g, NULL, TP_OP_SUB, 2, (tp_arg[]){ N(a0), I(2) }, NULL, f23));
  O(call(g, NULL, TP_OP_SUB, 2, (tp_arg[]){ I(-7), N(a0) }, NULL, f23));
  O(call(g, NULL, TP_OP_MUL, 2, (tp_arg[]){ N(a0), F(1.5) }, NULL, f23));
  O(call(g, NULL, TP_OP_MUL, 2, (tp_arg[]){ N(a0), F(3.0) }, NULL, f23));
  O(call(g, NULL, TP_OP_MUL, 2, (tp_arg[]){ N(a0), F(0.1) }, NULL, f23));
  O(call(g, NULL, TP_OP_MUL, 2, (tp_arg[]){ N(a0), F(1e-5) }, NULL, f23));
  O(call(g, NULL, TP_OP_MUL, 2, (tp_arg[]){ N(a0), F(1e300) }, NULL, f23));
  O(call(g, NULL, TP_OP_MUL, 2, (tp_arg[]){ N(a0), F(-2.5e-300) }, NULL, f23));
  O(call(g, NULL, TP_OP_MUL, 2, (tp_arg[]){ N(a0), F(1.0 / 3.0) }, NULL, f23));
  O(call(g, NULL, TP_OP_DIV, 2, (tp_arg[]){ N(a0), F(-0.0) }, NULL, f23));
  O(call(g, NULL, TP_OP_DIV, 2, (tp_arg[]){ N(a0), F(0.0) }, NULL, f23));
  O(call(g, NULL, TP_OP_EQ, 2, (tp_arg[]){ N(x), N(y) }, NULL, b23));
  O(call(g, NULL, TP_OP_LT, 2, (tp_arg[]){ N(x), F(INFINITY) }, NULL, b23));
  O(call(g, NULL, TP_OP_LT, 2, (tp_arg[]){ N(x), F(-INFINITY) }, NULL, b23));
  O(call(g, NULL, TP_OP_GT, 2, (tp_arg[]){ N(x), F(NAN) }, NULL, b23));
  O(call(g, NULL, TP_OP_WHERE, 3, (tp_arg[]){ N(cb), N(x), N(y) }, NULL, f23));
  static const tp_op unary[] = { TP_OP_NEG,  TP_OP_ABS,   TP_OP_EXP,     TP_OP_LOG, TP_OP_SQRT,
                                 TP_OP_RSQRT, TP_OP_TANH, TP_OP_SIGMOID, TP_OP_RELU };
  for (int i = 0; i < TP_ARRAY_LEN(unary); i++)
    O(call(g, NULL, unary[i], 1, (tp_arg[]){ N(x) }, NULL, f23));
  for (int ap = 0; ap < 2; ap++) {
    tp_attrs_init(&at);
    at.approximate = ap;
    O(call(g, NULL, TP_OP_GELU, 1, (tp_arg[]){ N(x) }, &at, f23));
  }
  O(call(g, NULL, TP_OP_MATMUL, 2, (tp_arg[]){ N(x), N(wt) }, NULL, desc(TP_F32, 2, 2, 2)));
  O(call(g, "lin", TP_OP_LINEAR, 3, (tp_arg[]){ N(x), N(w), N(b) }, NULL, desc(TP_F32, 2, 2, 4)));
  int l2 = O(call(g, "lin.nobias", TP_OP_LINEAR, 3, (tp_arg[]){ N(x), N(w), NONE() }, NULL,
                  desc(TP_F32, 2, 2, 4)));
  CHECK_OK(tp_graph_set_custom(g, l2, "opaque_mode", "allow"));
  CHECK_OK(tp_graph_set_custom(g, l2, "note", "a \"q\" \\ \n \t \x01\x7f \xc3\xa9 {x=1}, #"));
  CHECK_OK(tp_graph_set_custom(g, l2, "key with space", ""));
  CHECK_OK(tp_graph_set_custom(g, l2, "stack.0", "f.py:12"));
  static const tp_op reds[] = { TP_OP_SUM, TP_OP_MEAN, TP_OP_MAX, TP_OP_MIN };
  for (int i = 0; i < 4; i++) {
    tp_attrs_init(&at);
    at.nints = 1;
    at.ints[0] = 1;
    at.keepdim = 1;
    O(call(g, NULL, reds[i], 1, (tp_arg[]){ N(x) }, &at, desc(TP_F32, 2, 2, 1)));
    tp_attrs_init(&at);
    at.nints = 0;
    at.keepdim = 0;
    O(call(g, NULL, reds[i], 1, (tp_arg[]){ N(x) }, &at, desc(TP_F32, 0)));
    tp_attrs_init(&at);
    at.nints = 2;
    at.ints[0] = 0;
    at.ints[1] = -1;
    at.keepdim = 1;
    O(call(g, NULL, reds[i], 1, (tp_arg[]){ N(x) }, &at, desc(TP_F32, 2, 1, 1)));
  }
  tp_attrs_init(&at);
  at.dim = 1;
  O(call(g, NULL, TP_OP_SOFTMAX, 1, (tp_arg[]){ N(x) }, &at, f23));
  at.dim = -1;
  O(call(g, NULL, TP_OP_LOG_SOFTMAX, 1, (tp_arg[]){ N(x) }, &at, f23));
  tp_attrs_init(&at);
  at.nints = 1;
  at.ints[0] = 3;
  at.eps = 1e-5;
  O(call(g, NULL, TP_OP_LAYER_NORM, 3, (tp_arg[]){ N(x), NONE(), NONE() }, &at, f23));
  at.eps = 1e-12;
  int lnw = constant(g, "lnw", "ln.weight", tensor(TP_F32, 1, (int64_t[]){ 3 }, tv));
  O(call(g, NULL, TP_OP_LAYER_NORM, 3, (tp_arg[]){ N(x), N(lnw), NONE() }, &at, f23));
  tp_attrs_init(&at);
  at.nints = 2;
  at.ints[0] = 3;
  at.ints[1] = 2;
  O(call(g, NULL, TP_OP_RESHAPE, 1, (tp_arg[]){ N(x) }, &at, desc(TP_F32, 2, 3, 2)));
  at.nints = 1;
  at.ints[0] = -1;
  O(call(g, NULL, TP_OP_RESHAPE, 1, (tp_arg[]){ N(x) }, &at, desc(TP_F32, 1, 6)));
  at.nints = 0;
  O(call(g, NULL, TP_OP_RESHAPE, 1, (tp_arg[]){ N(k0) }, &at, desc(TP_F32, 0)));
  tp_attrs_init(&at);
  at.dim = 0;
  at.dim1 = -1;
  O(call(g, NULL, TP_OP_TRANSPOSE, 1, (tp_arg[]){ N(x) }, &at, desc(TP_F32, 2, 3, 2)));
  tp_attrs_init(&at);
  at.nints = 2;
  at.ints[0] = 1;
  at.ints[1] = 0;
  O(call(g, NULL, TP_OP_PERMUTE, 1, (tp_arg[]){ N(x) }, &at, desc(TP_F32, 2, 3, 2)));
  tp_attrs_init(&at);
  at.dim = 1;
  at.start = 0;
  at.end = INT64_MAX;
  at.step = 2;
  O(call(g, NULL, TP_OP_SLICE, 1, (tp_arg[]){ N(x) }, &at, desc(TP_F32, 2, 2, 2)));
  at.dim = -1;
  at.start = -2;
  at.end = 3;
  at.step = 1;
  O(call(g, NULL, TP_OP_SLICE, 1, (tp_arg[]){ N(x) }, &at, desc(TP_F32, 2, 2, 2)));
  tp_attrs_init(&at);
  at.dim = 0;
  O(call(g, NULL, TP_OP_CONCAT, 2, (tp_arg[]){ N(x), N(y) }, &at, desc(TP_F32, 2, 4, 3)));
  at.dim = 1;
  O(call(g, NULL, TP_OP_CONCAT, 3, (tp_arg[]){ N(x), N(y), N(x) }, &at, desc(TP_F32, 2, 2, 9)));
  static const tp_dtype casts[] = { TP_F32, TP_I32, TP_I64, TP_BOOL };
  for (int i = 0; i < 4; i++) {
    tp_attrs_init(&at);
    at.dtype = casts[i];
    tp_desc d = f23;
    d.dtype = casts[i];
    O(call(g, NULL, TP_OP_CAST, 1, (tp_arg[]){ N(x) }, &at, d));
  }
  tp_attrs_init(&at);
  at.dtype = TP_F32;
  O(call(g, NULL, TP_OP_CAST, 1, (tp_arg[]){ N(ci) }, &at, desc(TP_F32, 1, 3)));
  O(call(g, NULL, TP_OP_ADD, 2, (tp_arg[]){ N(cl), I(3) }, NULL, desc(TP_I64, 1, 2)));
  O(call(g, NULL, TP_OP_MUL, 2, (tp_arg[]){ N(ci), I(-2) }, NULL, desc(TP_I32, 1, 3)));
#undef O
  tp_arg oargs[64];
  for (int i = 0; i < no; i++) oargs[i] = N(outs[i]);
  int on = add(g, TP_NODE_OUTPUT, "output", (tp_op)0, no, oargs, NULL, desc(TP_F32, 0));
  CHECK_OK(tp_graph_set_custom(g, on, "k", "v"));
  return g;
}

/* Name the first node where a and b differ (to explain tp_graph_equal). */
static void explain_diff(const tp_graph *a, const tp_graph *b) {
  if (a->n != b->n) {
    fprintf(stderr, "  node counts differ: %d vs %d\n", a->n, b->n);
    return;
  }
  for (int i = 0; i < a->n; i++) {
    const tp_node *x = &a->nodes[i], *y = &b->nodes[i];
    const char *why = NULL;
    if (x->kind != y->kind) why = "kind";
    else if (strcmp(x->name, y->name)) why = "name";
    else if (x->nargs != y->nargs) why = "nargs";
    else if (x->kind == TP_NODE_CALL && x->op != y->op) why = "op";
    else if (x->kind == TP_NODE_CALL && !tp_attrs_equal(x->op, &x->attrs, &y->attrs)) why = "attrs";
    else if (x->kind != TP_NODE_OUTPUT && !tp_desc_equal(&x->desc, &y->desc)) why = "desc";
    else if (!x->target != !y->target || (x->target && strcmp(x->target, y->target))) why = "target";
    else if (x->ncustom != y->ncustom) why = "ncustom";
    else if (!x->val != !y->val) why = "val presence";
    for (int k = 0; !why && k < x->nargs; k++)
      if (x->args[k].kind != y->args[k].kind || x->args[k].node != y->args[k].node ||
          x->args[k].is_int != y->args[k].is_int ||
          memcmp(&x->args[k].scalar, &y->args[k].scalar, sizeof(double)))
        why = "args";
    if (why) {
      fprintf(stderr, "  node %d (%%%s, %s): %s differ(s)\n", i, x->name,
              tp_node_kind_name(x->kind), why);
      return;
    }
  }
  fprintf(stderr, "  no field difference found (custom values or constant data?)\n");
}

/* print -> parse -> print gives the same text, and the graphs are equal */
static void round_trip(const char *what, tp_graph *g, int with_data) {
  char *t1 = NULL, *t2 = NULL;
  tp_graph *g2 = NULL;
  CHECK_OK(tp_graph_print(g, with_data, &t1));
  if (!t1) return;
  tp_status s = tp_graph_parse(t1, strlen(t1), &g2);
  if (s != TP_OK) {
    fprintf(stderr, "%s (data %d): parse of printed text failed: %s\n---\n%s---\n", what,
            with_data, tp_last_error(), t1);
    failures++;
    tp_free_buffer(t1);
    return;
  }
  CHECK_OK(tp_graph_print(g2, with_data, &t2));
  if (t2 && strcmp(t1, t2) != 0) {
    fprintf(stderr, "%s: round trip text differs:\n--- first\n%s--- second\n%s---\n", what, t1, t2);
    failures++;
  }
  if (with_data && !tp_graph_equal(g, g2)) {
    fprintf(stderr, "%s: tp_graph_equal is false after the round trip\n", what);
    explain_diff(g, g2);
    failures++;
  }
  tp_free_buffer(t1);
  tp_free_buffer(t2);
  tp_graph_free(g2);
}

static void test_golden(void) {
  tp_graph *g = build_golden();
  char *t = NULL;
  CHECK_OK(tp_graph_print(g, 1, &t));
  if (t && strcmp(t, golden) != 0) {
    fprintf(stderr, "golden text differs:\n--- got\n%s--- want\n%s---\n", t, golden);
    failures++;
  }
  tp_free_buffer(t);
  /* without data: no data lines */
  CHECK_OK(tp_graph_print(g, 0, &t));
  if (t) CHECK(!strstr(t, "\ndata "));
  tp_free_buffer(t);
  /* parse the golden text (with comments and blank lines added) */
  const char *extra = "# a comment\n\n   # indented comment\r\n";
  size_t n = strlen(extra) + strlen(golden);
  char *buf = malloc(n + 1);
  strcpy(buf, extra);
  strcat(buf, golden);
  tp_graph *g2 = NULL;
  CHECK_OK(tp_graph_parse(buf, n, &g2));
  if (g2) {
    CHECK(tp_graph_equal(g, g2));
    CHECK(tp_graph_num_inputs(g2) == 1);
    CHECK(tp_graph_num_outputs(g2) == 2);
    CHECK(!strcmp(tp_graph_input_name(g2, 0), "x"));
    int w = tp_graph_find(g2, "w");
    CHECK(w >= 0);
    if (w >= 0 && g2->nodes[w].val) {
      float v[6];
      CHECK_OK(tp_tensor_read(g2->nodes[w].val, v, sizeof v));
      CHECK(v[0] == 1 && v[5] == 6);
    }
    int n7 = tp_graph_find(g2, "7");
    CHECK(n7 >= 0 && tp_graph_get_custom(g2, n7, "note") &&
          !strcmp(tp_graph_get_custom(g2, n7, "note"), "a \"q\""));
  }
  tp_graph_free(g2);
  free(buf);
  round_trip("golden", g, 1);
  round_trip("golden", g, 0);
  tp_graph_free(g);
}

static void test_all(void) {
  tp_graph *g = build_all();
  if (!g) return;
  round_trip("all", g, 1);
  round_trip("all", g, 0);
  char *t = NULL;
  CHECK_OK(tp_graph_print(g, 1, &t));
  if (t) {
    /* spot checks of spellings */
    static const char *want[] = {
      "%in.y_1 = placeholder : f32[2,3]\n",
      "get_attr \"tab\\tand\\nnewline \\\"q\\\" \\\\ \\x01 \xc3\xa9\" : i32[3]\n",
      ", 2) : f32[2,3]", "(-7, %", ", 1.5) : f32", ", 3.0) : f32", ", 0.1) : f32",
      ", 1e-05) : f32", ", 1e+300) : f32", ", -2.5e-300) : f32", ", 0.3333333333333333) : f32",
      ", -0.0) : f32", ", 0.0) : f32", ", inf) : b8", ", -inf) : b8", ", nan) : b8",
      "approximate=tanh)", "approximate=none)", "linear(%x, %w, none) : f32[2,4] {opaque_mode=\"allow\", "
      "note=\"a \\\"q\\\" \\\\ \\n \\t \\x01\\x7f \xc3\xa9 {x=1}, #\", \"key with space\"=\"\", "
      "stack.0=\"f.py:12\"}\n",
      "sum(%x, dims=[1], keepdim=true) : f32[2,1]", "mean(%x, dims=[], keepdim=false) : f32[]",
      "max(%x, dims=[0,-1], keepdim=true) : f32[1,1]", "softmax(%x, dim=1)",
      "log_softmax(%x, dim=-1)", "layer_norm(%x, none, none, normalized_shape=[3], eps=1e-05)",
      "eps=1e-12)", "reshape(%x, shape=[3,2])", "shape=[-1]) : f32[6]", "shape=[]) : f32[]",
      "transpose(%x, dim0=0, dim1=-1)", "permute(%x, perm=[1,0])",
      "slice(%x, dim=1, start=0, end=max, step=2)", "slice(%x, dim=-1, start=-2, end=3, step=1)",
      "concat(%x, %in.y_1, dim=0) : f32[4,3]", "concat(%x, %in.y_1, %x, dim=1) : f32[2,9]",
      "cast(%x, dtype=f32)", "cast(%x, dtype=i32) : i32[2,3]", "cast(%x, dtype=i64) : i64[2,3]",
      "cast(%x, dtype=b8) : b8[2,3]", "add(%cl, 3) : i64[2]", "\noutput(%",
      ") {k=\"v\"}\n",
      "data %wt f32[3,2] AACAPwAAgEAAAABAAACgQAAAQEAAAMBA\n", /* 1 4 2 5 3 6 */
      "data %e f32[0,3]\n", "data %k0 f32[] AAAgQA==\n", "data %cb b8[2,3] AQAAAQEA\n",
    };
    for (int i = 0; i < TP_ARRAY_LEN(want); i++)
      if (!strstr(t, want[i])) {
        fprintf(stderr, "printed text lacks \"%s\"\n", want[i]);
        failures++;
      }
    CHECK(strstr(t, "data %ci i32[3] /////////38AAACA\n") != NULL);
    CHECK(strstr(t, "data %cl i64[2] AAAAAAAAAIDLBPtxHwEAAA==\n") != NULL);
    CHECK(!strstr(t, "data %nodata"));
    CHECK(!strstr(t, "data %x"));
  }
  tp_free_buffer(t);
  tp_graph_free(g);
}

/* ---- malformed inputs ---------------------------------------------------------- */
static void bad_n(const char *text, size_t n, const char *want) {
  tp_graph *g = (tp_graph *)(uintptr_t)1;
  char *copy = malloc(n ? n : 1); /* exact size: ASan catches reads past len */
  memcpy(copy, text, n);
  tp_status s = tp_graph_parse(copy, n, &g);
  free(copy);
  if (s != TP_ERR_PARSE || g != NULL || !strstr(tp_last_error(), want)) {
    fprintf(stderr, "malformed text: got %s \"%s\", want TP_ERR_PARSE with \"%s\"\n---\n%s\n---\n",
            tp_status_name(s), tp_last_error(), want, text);
    failures++;
    if (s == TP_OK) tp_graph_free(g);
  }
}

static void bad(const char *text, const char *want) { bad_n(text, strlen(text), want); }

#define H "tpgraph v1\n"
#define X "%x = placeholder : f32[2]\n"
static void test_malformed(void) {
  bad("", "empty");
  bad("# only a comment\n\n", "empty");
  bad("tpgraph v2\n", "line 1: unsupported version 'v2'");
  bad("graph v1\n", "line 1: expected the header 'tpgraph v1'");
  bad(H X "%y = relux(%x) : f32[2]\noutput(%y)\n", "graph text line 3: unknown operator 'relux'");
  bad(H X "%z = add(%x, %y) : f32[2]\n%y = relu(%x) : f32[2]\noutput(%z)\n",
      "line 3: %y is used before it is defined");
  bad(H X "%w = get_attr \"w\" : f32[2]\noutput(%x)\ndata %w f32[2] AACAPw==\n",
      "line 5: data for %w has 4 bytes, expected 8");
  bad(H X "%w = get_attr \"w\" : f32[1]\noutput(%x)\ndata %w f32[1] AAC*Pw==\n",
      "line 5: bad base64 character '*'");
  bad(H X "%w = get_attr \"w\" : f32[1]\noutput(%x)\ndata %w f32[1] AACAP\n",
      "not a multiple of 4");
  bad(H X "%w = get_attr \"w\" : f32[1]\noutput(%x)\ndata %w f32[2] AACAPw==\n",
      "data for %w is f32[2] but the node is f32[1]");
  bad(H X "%w = get_attr \"w\" : b8[1]\noutput(%x)\ndata %w b8[1] Ag==\n",
      "bool element 0 is 2");
  bad(H X "output(%x)\ndata %x f32[2] AACAPwAAgD8=\n", "which is a placeholder, not a get_attr");
  bad(H X "output(%x)\ndata %q f32[2] AACAPwAAgD8=\n", "data for %q, which is not defined");
  bad(H X "%w = get_attr \"w\" : f32[1]\ndata %w f32[1] AACAPw==\ndata %w f32[1] AACAPw==\n",
      "line 5: data for %w given twice");
  bad(H "%x = placeholder\noutput(%x)\n", "line 2: expected ':' and the type of %x");
  bad(H "%x = placeholder : f64[2]\noutput(%x)\n", "line 2: expected a type such as f32[2,3]");
  bad(H "%x = placeholder : f32[2,-1]\noutput(%x)\n", "negative dimension size -1");
  bad(H "%x = placeholder : f32[1,1,1,1,1,1,1,1,1]\noutput(%x)\n", "more than 8 dimensions");
  bad(H "%x = placeholder : f32[2\noutput(%x)\n", "expected ',' or ']' in a shape");
  bad(H "%w = get_attr \"w : f32[2]\noutput(%w)\n", "line 2: unterminated string");
  bad(H "%w = get_attr \"a\\qb\" : f32[2]\noutput(%w)\n", "bad escape '\\q' in string");
  bad(H "%w = get_attr \"a\\x4\" : f32[2]\noutput(%w)\n", "\\x needs two hex digits");
  bad(H "%w = get_attr \"a\\x00\" : f32[2]\noutput(%w)\n", "cannot hold NUL");
  bad(H X "%x = relu(%x) : f32[2]\noutput(%x)\n", "line 3: %x is defined twice");
  bad(H X "%s = sum(%x, dims=[0]) : f32[]\noutput(%s)\n",
      "line 3: sum needs attribute keepdim (it takes: dims, keepdim)");
  bad(H X "%s = relu(%x, foo=1) : f32[2]\noutput(%s)\n",
      "unknown attribute 'foo' for relu (it takes: none)");
  bad(H X "%s = sum(%x, dims=[0], keepdim=true, dims=[0]) : f32[1]\noutput(%s)\n",
      "attribute dims given twice");
  bad(H X "%s = sum(%x, dims=[0], keepdim=yes) : f32[1]\noutput(%s)\n", "expected true or false");
  bad(H X "%s = relu(%x, %x) : f32[2]\noutput(%s)\n", "relu takes 1 operand, found 2");
  bad(H X "%s = softmax(dim=0, %x) : f32[2]\noutput(%s)\n", "operand after the attributes");
  bad(H X "%s = gelu(%x, approximate=erf) : f32[2]\noutput(%s)\n", "expected none or tanh");
  bad(H X "%s = cast(%x, dtype=f64) : f32[2]\noutput(%s)\n", "expected a dtype (f32, i32");
  bad(H X "%s = transpose(%x, dim0=0, dim1=99999999999999999999) : f32[2]\noutput(%s)\n",
      "integer out of range");
  bad(H X "%s = slice(%x, dim=0, start=0, end=maxx, step=1) : f32[2]\noutput(%s)\n",
      "expected an integer for end (or max)");
  bad(H X "%s = mul(%x, 1.) : f32[2]\noutput(%s)\n", "digits after '.'");
  bad(H X "%s = mul(%x, 1e) : f32[2]\noutput(%s)\n", "digits in the exponent");
  bad(H X "%s = mul(%x, 0x10) : f32[2]\noutput(%s)\n", "expected a number");
  bad(H X "%s = mul(%x, infinity) : f32[2]\noutput(%s)\n", "expected an operand");
  bad(H X "output(%x)\noutput(%x)\n", "line 4: a second output statement (the first is on line 3)");
  bad(H X, "without an output(...) statement");
  bad(H X "output(%x) trailing\n", "line 3: expected end of line, found 'trailing'");
  bad(H X "output(%x, \n", "line 3: expected");
  bad(H X "frob %x\n", "line 3: expected '%name = ...'");
  bad(H X "%y = output(%x)\n", "output is written without a name");
  bad(H X "% = relu(%x) : f32[2]\n", "expected a node name");
  bad(H "%x = placeholder : f32[2] {a=\"1\", a=\"2\"}\noutput(%x)\n", "meta key 'a' given twice");
  bad(H "%x = placeholder : f32[2] {a=1}\noutput(%x)\n", "expected a quoted string");
  bad(H "%x = placeholder : f32[2] {a=\"1\"\noutput(%x)\n", "expected ',' or '}'");
  static const char nul[] = H "%x = placeholder : f32[2]\0\noutput(%x)\n";
  bad_n(nul, sizeof nul - 1, "line 2: expected end of line, found '\\x00'");
  bad(H X "%s = sum(%x, dims=[1,2,3,4,5,6,7,8,9], keepdim=true) : f32[2]\n", "more than 8 values");
}

/* Every prefix of a valid text parses or fails cleanly (no crash, no leak). */
static void test_prefixes(void) {
  tp_graph *g = build_all();
  char *t = NULL;
  CHECK_OK(tp_graph_print(g, 1, &t));
  tp_graph_free(g);
  if (!t) return;
  size_t n = strlen(t);
  int ok = 0;
  for (size_t k = 0; k <= n; k++) {
    char *copy = malloc(k ? k : 1);
    memcpy(copy, t, k);
    tp_graph *g2 = NULL;
    tp_status s = tp_graph_parse(copy, k, &g2);
    free(copy);
    if (s == TP_OK) {
      ok++;
      tp_graph_free(g2);
    } else if (s != TP_ERR_PARSE || g2 != NULL) {
      fprintf(stderr, "prefix %zu: status %s: %s\n", k, tp_status_name(s), tp_last_error());
      failures++;
      break;
    }
  }
  CHECK(ok >= 1); /* at least the whole text */
  /* the same text with every byte flipped to a few bad values */
  static const char subst[] = { '\0', '"', '%', '\\', '(', '[', '\n', 'x' };
  for (size_t k = 0; k < n; k += 7)
    for (int j = 0; j < TP_ARRAY_LEN(subst); j++) {
      char *copy = malloc(n);
      memcpy(copy, t, n);
      copy[k] = subst[j];
      tp_graph *g2 = NULL;
      tp_status s = tp_graph_parse(copy, n, &g2);
      free(copy);
      if (s == TP_OK) tp_graph_free(g2);
      else if (s != TP_ERR_PARSE) {
        fprintf(stderr, "mutation at %zu: status %s: %s\n", k, tp_status_name(s), tp_last_error());
        failures++;
      }
    }
  tp_free_buffer(t);
}

static void test_floats(void) {
  static const double vals[] = { 0.0,  -0.0,  1.0,     2.0,   1.5,     0.1,    1e-5,
                                 1e21, 1e-300, 5e-324, 1.7976931348623157e308, 123456789.0,
                                 -3.25, 1.0 / 3.0, 100.0, 0.000123 };
  char buf[40];
  for (int i = 0; i < TP_ARRAY_LEN(vals); i++) {
    const char *s = tp_text_format_float(vals[i], buf, sizeof buf);
    double back = strtod(s, NULL);
    CHECK(back == vals[i] && signbit(back) == signbit(vals[i]));
    CHECK(strchr(s, '.') || strchr(s, 'e'));
  }
  CHECK(!strcmp(tp_text_format_float(2.0, buf, sizeof buf), "2.0"));
  CHECK(!strcmp(tp_text_format_float(1e-5, buf, sizeof buf), "1e-05"));
  CHECK(!strcmp(tp_text_format_float(-0.0, buf, sizeof buf), "-0.0"));
  CHECK(!strcmp(tp_text_format_float(NAN, buf, sizeof buf), "nan"));
  CHECK(!strcmp(tp_text_format_float(-INFINITY, buf, sizeof buf), "-inf"));
  CHECK(!strcmp(tp_text_format_float(0.1, buf, sizeof buf), "0.1"));
}

/* Fail the Nth allocation (../alloc_sweep.h): every path of parse and print
 * returns TP_ERR_OUT_OF_MEMORY or recovers, leaks nothing, and works again. */
typedef struct oom_result {
  size_t len;     /* length of the printed text */
  int is_golden;  /* it equals the golden text */
} oom_result;

static tp_status oom_scenario(void *ud, void *resv) {
  (void)ud;
  oom_result *res = resv;
  tp_graph *g = NULL;
  char *t = NULL;
  sweep_begin();
  SWEEP_STEP("parse", tp_graph_parse(golden, strlen(golden), &g));
  SWEEP_STEP("print", tp_graph_print(g, 1, &t));
  res->len = strlen(t);
  res->is_golden = !strcmp(t, golden);
cleanup:
  tp_free_buffer(t);
  tp_graph_free(g);
  return sweep_status;
}

static void test_oom(void) {
  oom_result base;
  long total = 0;
  sweep_case c = {"parse + print", oom_scenario, NULL, sizeof(oom_result), NULL};
  failures += sweep_run(&c, &base, &total);
  CHECK(base.is_golden);
  CHECK(total > 10); /* the sweep failed real allocations */
}

int main(void) {
  test_floats();
  test_golden();
  test_all();
  test_malformed();
  test_prefixes();
  test_oom();
  if (tp_live_tensors() != 0) {
    fprintf(stderr, "leak: %zu live tensors at exit\n", tp_live_tensors());
    failures++;
  }
  if (failures) {
    fprintf(stderr, "test_graph_text: %d failure(s)\n", failures);
    return 1;
  }
  printf("test_graph_text: ok\n");
  return 0;
}
