/* test_onnx_export.c - tp_onnx_save: graphs (parsed from text with random
 * constants, and one captured with tp_trace) are saved, loaded back with
 * tp_onnx_load and run on random inputs; the outputs must match the eager
 * results of the original graph (floats at rtol 1e-4, ints and bools
 * exactly). Also: opaque nodes are TP_ERR_UNSUPPORTED naming the node, and
 * every allocation failure during a save is TP_ERR_OUT_OF_MEMORY with
 * nothing leaked. */
#include "capture/capture.h"
#include "graph/graph.h"
#include "onnx/onnx.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "alloc_sweep.h"
#include "check.h"

#define OK(e) CHECK((e) == TP_OK)

static const char *MLP =
    "tpgraph v1\n"
    "%x = placeholder : f32[4,8]\n"
    "%w1 = get_attr \"w1\" : f32[16,8]\n"
    "%b1 = get_attr \"b1\" : f32[16]\n"
    "%h = linear(%x, %w1, %b1) : f32[4,16]\n"
    "%r = relu(%h) : f32[4,16]\n"
    "%w2 = get_attr \"w2\" : f32[3,16]\n"
    "%o = linear(%r, %w2, none) : f32[4,3]\n"
    "%s = softmax(%o, dim=-1) : f32[4,3]\n"
    "output(%s, %o, %s, %x)\n";

/* float16 / int8 / uint8 values and quantize / dequantize (per axis) */
static const char *LOWP =
    "tpgraph v1\n"
    "%x = placeholder : f32[2,4]\n"
    "%h = placeholder : f16[2,4]\n"
    "%q8 = placeholder : i8[2,4]\n"
    "%s = get_attr \"s\" : f32[4]\n"
    "%0 = add(%h, %h) : f16[2,4]\n"
    "%1 = cast(%x, dtype=f16) : f16[2,4]\n"
    "%2 = mul(%0, %1) : f16[2,4]\n"
    "%3 = mul(%q8, %q8) : i8[2,4]\n"
    "%sa = abs(%s) : f32[4]\n"
    "%sp = add(%sa, 0.25) : f32[4]\n"
    "%4 = quantize(%x, %sp, none, dtype=u8) : u8[2,4]\n"
    "%5 = dequantize(%4, %sp, none) : f32[2,4]\n"
    "%6 = cast(%2, dtype=f32) : f32[2,4]\n"
    "%st = reshape(%sp, shape=[1,4]) : f32[1,4]\n"
    "%7 = quantize(%x, %st, none, dtype=u8) : u8[2,4]\n"
    "%tq = transpose(%4, dim0=0, dim1=1) : u8[4,2]\n"
    "%8 = matmul_int(%q8, %tq) : i32[2,2]\n"
    "%9 = matmul_int(%8, %q8) : i32[2,4]\n"
    "output(%2, %3, %4, %5, %6, %7, %8, %9)\n";

static const char *MIX =
    "tpgraph v1\n"
    "%x = placeholder : f32[2,3,4]\n"
    "%y = placeholder : f32[4]\n"
    "%i = placeholder : i32[2,3,4]\n"
    "%g = get_attr \"g\" : f32[4]\n"
    "%bb = get_attr \"bb\" : f32[4]\n"
    "%w = get_attr \"w\" : f32[5,4]\n"
    "%0 = layer_norm(%x, %g, %bb, normalized_shape=[4], eps=1e-05) : f32[2,3,4]\n"
    "%1 = layer_norm(%x, none, none, normalized_shape=[3,4], eps=0.001) : f32[2,3,4]\n"
    "%2 = add(%0, %y) : f32[2,3,4]\n"
    "%3 = mul(%2, 1.5) : f32[2,3,4]\n"
    "%4 = sub(%3, 2) : f32[2,3,4]\n"
    "%5 = div(%i, 3) : f32[2,3,4]\n"
    "%6 = linear(%x, %w, none) : f32[2,3,5]\n"
    "%7 = gelu(%4, approximate=none) : f32[2,3,4]\n"
    "%8 = gelu(%4, approximate=tanh) : f32[2,3,4]\n"
    "%9 = transpose(%7, dim0=0, dim1=2) : f32[4,3,2]\n"
    "%10 = permute(%8, perm=[2,0,-2]) : f32[4,2,3]\n"
    "%11 = slice(%x, dim=2, start=1, end=max, step=2) : f32[2,3,2]\n"
    "%12 = slice(%x, dim=-1, start=-3, end=-1, step=1) : f32[2,3,2]\n"
    "%13 = concat(%11, %12, dim=1) : f32[2,6,2]\n"
    "%14 = reshape(%13, shape=[4,-1]) : f32[4,6]\n"
    "%15 = sum(%14, dims=[1], keepdim=true) : f32[4,1]\n"
    "%16 = mean(%x, dims=[], keepdim=false) : f32[]\n"
    "%17 = max(%x, dims=[0,-1], keepdim=false) : f32[3]\n"
    "%18 = min(%i, dims=[1], keepdim=true) : i32[2,1,4]\n"
    "%19 = sum(%i, dims=[2], keepdim=false) : i64[2,3]\n"
    "%20 = log_softmax(%x, dim=1) : f32[2,3,4]\n"
    "%21 = exp(%x) : f32[2,3,4]\n"
    "%22 = sigmoid(%x) : f32[2,3,4]\n"
    "%23 = tanh(%x) : f32[2,3,4]\n"
    "%24 = abs(%x) : f32[2,3,4]\n"
    "%25 = neg(%i) : i32[2,3,4]\n"
    "%26 = add(%24, 1) : f32[2,3,4]\n"
    "%27 = sqrt(%26) : f32[2,3,4]\n"
    "%28 = log(%26) : f32[2,3,4]\n"
    "%29 = rsqrt(%26) : f32[2,3,4]\n"
    "%30 = mul(%x, 3) : f32[2,3,4]\n"
    "%31 = floor(%30) : f32[2,3,4]\n"
    "%32 = ceil(%30) : f32[2,3,4]\n"
    "%33 = round(%30) : f32[2,3,4]\n"
    "%34 = erf(%x) : f32[2,3,4]\n"
    "%35 = gt(%x, 0) : b8[2,3,4]\n"
    "%36 = lt(%i, %x) : b8[2,3,4]\n"
    "%37 = eq(%i, 2) : b8[2,3,4]\n"
    "%38 = where(%35, %x, 0.5) : f32[2,3,4]\n"
    "%39 = cast(%35, dtype=f32) : f32[2,3,4]\n"
    "%40 = cast(%30, dtype=i64) : i64[2,3,4]\n"
    "%41 = relu(%i) : i32[2,3,4]\n"
    "%42 = matmul(%x, %y) : f32[2,3]\n"
    "%43 = add(%i, 1.5) : f32[2,3,4]\n"
    "%44 = mul(%i, 2) : i32[2,3,4]\n"
    "%45 = max(%35, dims=[1], keepdim=false) : b8[2,4]\n"
    "%46 = linear(%y, %w, none) : f32[5]\n"
    "output(%0, %1, %5, %6, %7, %8, %10, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, "
    "%25, %27, %28, %29, %31, %32, %33, %34, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, "
    "%46, %3)\n";

/* Recurrent layers (ONNX LSTM / GRU / RNN on export): the packed results
 * read as the importer and JS read them (Y, the final H and C). */
static const char *RECURRENT =
    "tpgraph v1\n"
    "%x = placeholder : f32[4,2,3]\n"
    "%h0 = placeholder : f32[2,2,5]\n"
    "%c0 = placeholder : f32[2,2,5]\n"
    "%w = get_attr \"w\" : f32[2,20,3]\n"
    "%r = get_attr \"r\" : f32[2,20,5]\n"
    "%b = get_attr \"b\" : f32[2,40]\n"
    "%p = get_attr \"p\" : f32[2,15]\n"
    "%gw = get_attr \"gw\" : f32[1,15,3]\n"
    "%gr = get_attr \"gr\" : f32[1,15,5]\n"
    "%rw = get_attr \"rw\" : f32[1,5,3]\n"
    "%rr = get_attr \"rr\" : f32[1,5,5]\n"
    "%0 = lstm(%x, %w, %r, %b, none, %h0, %c0, %p, hidden_size=5, direction=2, activations=[], act_params=[], "
    "clip=0.0, input_forget=false) : f32[2,5,2,2,5]\n"
    "%1 = slice(%0, dim=0, start=0, end=1, step=1) : f32[1,5,2,2,5]\n"
    "%2 = slice(%1, dim=1, start=0, end=4, step=1) : f32[1,4,2,2,5]\n"
    "%3 = slice(%0, dim=0, start=1, end=2, step=1) : f32[1,5,2,2,5]\n"
    "%4 = slice(%3, dim=1, start=4, end=5, step=1) : f32[1,1,2,2,5]\n"
    "%5 = gru(%x, %gw, %gr, none, none, none, hidden_size=5, direction=1, activations=[], act_params=[], clip=0.0, "
    "linear_before_reset=true) : f32[2,5,1,2,5]\n"
    "%6 = slice(%5, dim=0, start=0, end=1, step=1) : f32[1,5,1,2,5]\n"
    "%7 = rnn(%x, %rw, %rr, none, none, none, hidden_size=5, direction=0, activations=[1], act_params=[0.0, 0.0], "
    "clip=2.5) : f32[2,5,1,2,5]\n"
    "%8 = slice(%7, dim=0, start=0, end=1, step=1) : f32[1,5,1,2,5]\n"
    "output(%2, %4, %6, %8)\n";

/* An lstm whose cell states before the last step are read: refused. */
static void recurrent_refused_case(void) {
  static const char *text =
      "tpgraph v1\n%x = placeholder : f32[3,1,2]\n%w = placeholder : f32[1,16,2]\n%r = placeholder : f32[1,16,4]\n"
      "%0 = lstm(%x, %w, %r, none, none, none, none, none, hidden_size=4, direction=0, activations=[], act_params=[], "
      "clip=0.0, input_forget=false) : f32[2,4,1,1,4]\n"
      "%1 = slice(%0, dim=0, start=1, end=2, step=1) : f32[1,4,1,1,4]\n"
      "%2 = slice(%1, dim=1, start=1, end=2, step=1) : f32[1,1,1,1,4]\n"
      "output(%2)\n";
  tp_graph *g = NULL;
  OK(tp_graph_parse(text, strlen(text), &g));
  if (!g) return;
  uint8_t *bytes = NULL;
  size_t len = 0;
  CHECK(tp_onnx_save(g, &bytes, &len) == TP_ERR_UNSUPPORTED && !bytes);
  CHECKF(strstr(tp_last_error(), "node '0' (lstm): cannot be exported: its cell states before the last step are read"),
         "message: %s", tp_last_error());
  tp_graph_free(g);
}

/* Fills every get_attr of g with random values (seeded). */
static void randomize_constants(tp_graph *g, uint64_t seed) {
  for (int i = 0; i < g->n; i++) {
    tp_node *n = &g->nodes[i];
    if (n->kind != TP_NODE_GET_ATTR) continue;
    tp_tensor *t = NULL;
    OK(tp_randn(n->desc.ndim, n->desc.shape, seed + (uint64_t)i, &t));
    tp_graph_set_val(g, i, t);
    tp_tensor_release(t);
  }
}

static void random_inputs(const tp_graph *g, uint64_t seed, tp_tensor **in, int *nin) {
  *nin = 0;
  for (int i = 0; i < g->n; i++) {
    const tp_node *n = &g->nodes[i];
    if (n->kind != TP_NODE_PLACEHOLDER) continue;
    tp_tensor *r = NULL, *t = NULL;
    OK(tp_randn(n->desc.ndim, n->desc.shape, seed + (uint64_t)i, &r));
    if (n->desc.dtype == TP_F32) {
      t = r;
    } else { /* small ints: 3 * randn, truncated */
      tp_tensor *s = NULL, *m = NULL;
      tp_attrs a;
      tp_attrs_init(&a);
      a.dtype = n->desc.dtype;
      OK(tp_scalar(3, 1, &s));
      OK(tp_mul(r, s, &m));
      OK(tp_op_call(TP_OP_CAST, 1, &m, &a, &t));
      tp_tensor_release(s), tp_tensor_release(m), tp_tensor_release(r);
    }
    in[(*nin)++] = t;
  }
}

/* Outputs equal: floats at rtol 1e-4 (+ atol 1e-5), others exactly. */
static int same(const char *what, int k, tp_tensor *a, tp_tensor *b) {
  if (tp_tensor_dtype(a) != tp_tensor_dtype(b) || tp_tensor_ndim(a) != tp_tensor_ndim(b)) {
    printf("FAIL %s output %d: dtype/rank %s/%d vs %s/%d\n", what, k, tp_dtype_name(tp_tensor_dtype(a)),
           tp_tensor_ndim(a), tp_dtype_name(tp_tensor_dtype(b)), tp_tensor_ndim(b));
    return 0;
  }
  for (int d = 0; d < tp_tensor_ndim(a); d++)
    if (tp_tensor_shape(a)[d] != tp_tensor_shape(b)[d]) {
      printf("FAIL %s output %d: shapes differ at dim %d\n", what, k, d);
      return 0;
    }
  int64_t n = tp_tensor_numel(a);
  tp_tensor *fa = NULL, *fb = NULL;
  tp_attrs at;
  tp_attrs_init(&at);
  at.dtype = TP_F32;
  int is_f = tp_tensor_dtype(a) == TP_F32;
  if (tp_tensor_dtype(a) == TP_I64) at.dtype = TP_I64;
  OK(tp_op_call(TP_OP_CAST, 1, &a, &at, &fa));
  OK(tp_op_call(TP_OP_CAST, 1, &b, &at, &fb));
  size_t bytes = (size_t)n * tp_dtype_size(at.dtype);
  void *va = malloc(bytes + 8), *vb = malloc(bytes + 8);
  OK(tp_tensor_read(fa, va, bytes));
  OK(tp_tensor_read(fb, vb, bytes));
  int ok = 1;
  for (int64_t i = 0; i < n && ok; i++) {
    double x = at.dtype == TP_I64 ? (double)((int64_t *)va)[i] : ((float *)va)[i];
    double y = at.dtype == TP_I64 ? (double)((int64_t *)vb)[i] : ((float *)vb)[i];
    double tol = is_f ? 1e-5 + 1e-4 * fabs(x) : 0;
    if (!(fabs(x - y) <= tol) && !(isnan(x) && isnan(y))) {
      printf("FAIL %s output %d [%lld]: %.9g vs %.9g\n", what, k, (long long)i, x, y);
      ok = 0;
    }
  }
  free(va), free(vb);
  tp_tensor_release(fa), tp_tensor_release(fb);
  return ok;
}

/* save g, load it back, run both on random inputs, compare. */
static void round_trip(const char *what, const tp_graph *g, uint64_t seed) {
  uint8_t *bytes = NULL;
  size_t len = 0;
  tp_graph *back = NULL;
  tp_tensor *in[16], *o1[64], *o2[64];
  int nin = 0, n1 = 0, n2 = 0;
  OK(tp_onnx_save(g, &bytes, &len));
  if (!bytes) return;
  CHECK(len > 16);
  OK(tp_onnx_load(bytes, len, &back));
  tp_free_buffer(bytes);
  if (!back) return;
  CHECK(tp_graph_num_inputs(back) == tp_graph_num_inputs(g));
  CHECK(tp_graph_num_outputs(back) == tp_graph_num_outputs(g));
  random_inputs(g, seed, in, &nin);
  OK(tp_graph_run(g, nin, in, 64, o1, &n1));
  OK(tp_graph_run(back, nin, in, 64, o2, &n2));
  CHECK(n1 == n2);
  int bad = 0;
  for (int k = 0; k < n1 && k < n2; k++) bad += !same(what, k, o1[k], o2[k]);
  if (bad) failures++;
  printf("%s: %zu bytes, %d outputs, %d differ\n", what, len, n1, bad);
  for (int k = 0; k < n1; k++) tp_tensor_release(o1[k]);
  for (int k = 0; k < n2; k++) tp_tensor_release(o2[k]);
  for (int k = 0; k < nin; k++) tp_tensor_release(in[k]);
  tp_graph_free(back);
}

static void text_case(const char *what, const char *text, uint64_t seed) {
  tp_graph *g = NULL;
  OK(tp_graph_parse(text, strlen(text), &g));
  if (!g) return;
  randomize_constants(g, seed);
  round_trip(what, g, seed + 1000);
  tp_graph_free(g);
}

/* a captured function: y = sum(relu(x @ w^T + b) * 0.5, dim 1), transpose */
static tp_tensor *CW, *CB;
static tp_status f_cap(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                       int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_tensor *h = NULL, *r = NULL, *half = NULL, *m = NULL, *s1 = NULL, *t = NULL;
  tp_status s = tp_linear(in[0], CW, CB, &h);
  if (!s) s = tp_relu(h, &r);
  if (!s) s = tp_scalar(0.5, 0, &half);
  if (!s) s = tp_mul(r, half, &m);
  if (!s) s = tp_sum(m, 1, (int64_t[]){1}, 0, &s1);
  if (!s) s = tp_transpose(m, 0, 1, &t);
  tp_tensor_release(h), tp_tensor_release(r), tp_tensor_release(half), tp_tensor_release(m);
  if (s) {
    tp_tensor_release(s1), tp_tensor_release(t);
    return s;
  }
  outs[0] = s1;
  outs[1] = t;
  *nout = 2;
  return TP_OK;
}

static void captured_case(void) {
  int64_t xs[2] = {3, 6}, ws[2] = {5, 6}, bs[1] = {5};
  tp_tensor *x = NULL;
  OK(tp_randn(2, xs, 11, &x));
  OK(tp_randn(2, ws, 12, &CW));
  OK(tp_randn(1, bs, 13, &CB));
  tp_callable fn = {f_cap, NULL};
  tp_trace_result tr;
  memset(&tr, 0, sizeof tr);
  OK(tp_trace(&fn, 1, &x, 1, &tr));
  CHECK(tr.graph != NULL);
  if (tr.graph) {
    round_trip("captured", tr.graph, 77);
    /* and against the function's real outputs on x */
    uint8_t *b = NULL;
    size_t len = 0;
    tp_graph *back = NULL;
    tp_tensor *o[64];
    int n = 0;
    OK(tp_onnx_save(tr.graph, &b, &len));
    OK(tp_onnx_load(b, len, &back));
    tp_free_buffer(b);
    if (back) {
      OK(tp_graph_run(back, 1, &x, 64, o, &n));
      CHECK(n == tr.nout);
      for (int k = 0; k < n && k < tr.nout; k++) {
        CHECK(same("captured vs eager", k, tr.outs[k], o[k]));
        tp_tensor_release(o[k]);
      }
      tp_graph_free(back);
    }
  }
  tp_trace_result_clear(&tr);
  tp_tensor_release(x), tp_tensor_release(CW), tp_tensor_release(CB);
}

static void opaque_case(void) {
  tp_graph *g = NULL;
  tp_desc d;
  memset(&d, 0, sizeof d);
  d.dtype = TP_F32;
  d.ndim = 1;
  d.shape[0] = 4;
  int ix, ic, io;
  OK(tp_graph_new(&g));
  OK(tp_graph_add_node(g, TP_NODE_PLACEHOLDER, "x", TP_OP_ADD, 0, NULL, NULL, &d, &ix));
  tp_arg a = {TP_ARG_NODE, ix, 0, 0};
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = 1;
  at.dim1 = 1;
  OK(tp_graph_add_node(g, TP_NODE_CALL, "host_fn_3", TP_OP_CALL_HOST, 1, &a, &at, &d, &ic));
  tp_arg o = {TP_ARG_NODE, ic, 0, 0};
  OK(tp_graph_add_node(g, TP_NODE_OUTPUT, "output", TP_OP_ADD, 1, &o, NULL, NULL, &io));
  uint8_t *b = NULL;
  size_t len = 0;
  tp_status s = tp_onnx_save(g, &b, &len);
  CHECK(s == TP_ERR_UNSUPPORTED);
  CHECK(b == NULL);
  CHECK(strstr(tp_last_error(), "'host_fn_3'") != NULL);
  CHECK(strstr(tp_last_error(), "call_host") != NULL);
  printf("opaque: %s\n", tp_last_error());
  CHECK(tp_onnx_save(NULL, &b, &len) == TP_ERR_INVALID_ARG);
  tp_graph_free(g);
}

/* ---- allocation failures (../alloc_sweep.h): every path of the writer
 * returns TP_ERR_OUT_OF_MEMORY, leaks nothing, and then writes the same
 * bytes again ---- */
typedef struct oom_result {
  size_t len;
  uint64_t hash; /* FNV-1a of the written bytes */
} oom_result;

static tp_status oom_scenario(void *ud, void *resv) {
  oom_result *res = resv;
  uint8_t *b = NULL;
  size_t len = 0;
  sweep_begin();
  SWEEP_STEP("save", tp_onnx_save(ud, &b, &len));
  res->len = len;
  res->hash = 1469598103934665603ull;
  for (size_t i = 0; i < len; i++) res->hash = (res->hash ^ b[i]) * 1099511628211ull;
cleanup:
  tp_free_buffer(b);
  return sweep_status;
}

static void oom_case(void) {
  tp_graph *g = NULL;
  OK(tp_graph_parse(MIX, strlen(MIX), &g));
  if (!g) return;
  randomize_constants(g, 5);
  oom_result base;
  long total = 0;
  sweep_case c = {"onnx save", oom_scenario, NULL, sizeof(oom_result), g};
  failures += sweep_run(&c, &base, &total);
  CHECK(base.len > 100);
  CHECK(total > 10);
  tp_graph_free(g);
}

/* The conformance models (when ../shared/conformance exists): import,
 * export, import again; the outputs on test_data_set_0 must still match
 * the reference outputs and the first import. */
static void model_case(const char *name) {
  const char *root = getenv("TP_CONFORMANCE");
  char base[1024], path[1200];
  if (root) snprintf(base, sizeof base, "%s/models/%s", root, name);
  else snprintf(base, sizeof base, "%s/../shared/conformance/models/%s", TP_SOURCE_DIR, name);
  snprintf(path, sizeof path, "%s/model.onnx", base);
  FILE *f = fopen(path, "rb");
  if (!f) {
    printf("%s: skipped (no %s)\n", name, path);
    return;
  }
  fclose(f);
  tp_graph *g = NULL, *back = NULL;
  tp_tensor *x = NULL, *want = NULL, *o1[64], *o2[64];
  int n1 = 0, n2 = 0;
  uint8_t *b = NULL;
  size_t len = 0;
  OK(tp_onnx_load_file(path, &g));
  snprintf(path, sizeof path, "%s/test_data_set_0/input_0.pb", base);
  OK(tp_onnx_tensor_load(path, &x));
  snprintf(path, sizeof path, "%s/test_data_set_0/output_0.pb", base);
  OK(tp_onnx_tensor_load(path, &want));
  if (g) OK(tp_onnx_save(g, &b, &len));
  if (b) OK(tp_onnx_load(b, len, &back));
  if (g && back && x && want) {
    OK(tp_graph_run(g, 1, &x, 64, o1, &n1));
    OK(tp_graph_run(back, 1, &x, 64, o2, &n2));
    CHECK(n1 >= 1 && n1 == n2);
    if (n1 >= 1 && n1 == n2) {
      CHECK(same(name, 0, o1[0], o2[0]));
      /* the reference at ONNX's tolerance */
      float *p = malloc(sizeof(float) * (size_t)tp_tensor_numel(want)), *q = malloc(sizeof(float) * (size_t)tp_tensor_numel(want));
      CHECK(tp_tensor_numel(o2[0]) == tp_tensor_numel(want));
      if (tp_tensor_numel(o2[0]) == tp_tensor_numel(want)) {
        size_t nb = sizeof(float) * (size_t)tp_tensor_numel(want);
        OK(tp_tensor_read(want, p, nb));
        OK(tp_tensor_read(o2[0], q, nb));
        for (int64_t i = 0; i < tp_tensor_numel(want); i++)
          if (!(fabs((double)p[i] - q[i]) <= 1e-4 + 1e-3 * fabs((double)p[i]))) {
            printf("FAIL %s: [%lld] %.9g vs reference %.9g\n", name, (long long)i, q[i], p[i]);
            failures++;
            break;
          }
      }
      free(p), free(q);
    }
    printf("%s: exported %zu bytes, re-imported: %d nodes (first import %d)\n", name, len,
           tp_graph_num_nodes(back), tp_graph_num_nodes(g));
  }
  for (int k = 0; k < n1; k++) tp_tensor_release(o1[k]);
  for (int k = 0; k < n2; k++) tp_tensor_release(o2[k]);
  tp_free_buffer(b);
  tp_tensor_release(x), tp_tensor_release(want);
  tp_graph_free(g), tp_graph_free(back);
}

int main(void) {
  text_case("mlp", MLP, 1);
  text_case("mix", MIX, 2);
  text_case("lowp", LOWP, 3);
  text_case("recurrent", RECURRENT, 4);
  recurrent_refused_case();
  captured_case();
  opaque_case();
  oom_case();
  model_case("mnist-8");
  model_case("mnist-mlp-onnx-mlir");
  model_case("ultraface-rfb-320");
  if (failures) printf("%d failures\n", failures);
  else printf("ok\n");
  return failures ? 1 : 0;
}
