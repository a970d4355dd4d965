/* test_alloc.c - allocation failure injection (the sweep: ../alloc_sweep.h).
 *
 * For N = 1 .. (the number of allocations of a whole scenario) the Nth
 * allocation fails while the scenario runs: tensors, matmul, linear, reshape (view and copy),
 * concat, reductions, softmax, layer_norm, a tp_trace of a small C function,
 * tp_graph_print + tp_graph_parse + tp_graph_run, tp_compile +
 * tp_compiled_call. Checked for every N:
 *   - the failing call returns TP_ERR_OUT_OF_MEMORY and tp_last_error()
 *     mentions memory (any other status is reported; a crash fails the run:
 *     each N runs in a child process so that it is reported with its N);
 *   - when the scenario completes anyway, its results are the right ones;
 *   - after cleanup nothing leaks: tp_live_tensors(), tp_live_storage_bytes()
 *     and the allocator's own count of live blocks and bytes are back to the
 *     baseline; every free passes the size that was allocated;
 * and finally, with the default allocator restored, the scenario passes. */
#include "ops/ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "alloc_sweep.h"
#include "check.h"

/* ---- the scenario ---- */
typedef struct result {
  float lin[4 * 5], sm[4 * 5], ln[2 * 10], red[4], cat[8 * 3], resh[5 * 4], traced[4 * 5],
      graph_out[4 * 5], compiled[4 * 5], compiled2[4 * 5], compiled3[2 * 5];
  int ncaptures, nentries;
  char explain[2048]; /* tp_compiled_explain(), truncated */
} result;

static tp_tensor *W, *B; /* constants closed over by the traced function */

/* f(x) = softmax(relu(linear(x, W, B)) * 0.5, dim=1), sum over dim 1 */
static tp_status traced_fn(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                           int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_tensor *h = NULL, *r = NULL, *half = NULL, *m = NULL, *s = NULL, *t = NULL;
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = 1;
  tp_status st = tp_linear(in[0], W, B, &h);
  if (!st) st = tp_relu(h, &r);
  if (!st) st = tp_scalar(0.5, 0, &half);
  if (!st) st = tp_mul(r, half, &m);
  if (!st) st = tp_op_call(TP_OP_SOFTMAX, 1, &m, &at, &s);
  if (!st) st = tp_sum(s, 1, (const int64_t[]){1}, 1, &t);
  tp_tensor_release(h), tp_tensor_release(r), tp_tensor_release(half), tp_tensor_release(m);
  if (st) {
    tp_tensor_release(s), tp_tensor_release(t);
    return st;
  }
  outs[0] = s;
  outs[1] = t;
  *nout = 2;
  return TP_OK;
}

#define STEP SWEEP_STEP
#define READ(t, dst) STEP("read " #t, tp_tensor_read(t, dst, sizeof(dst)))

static tp_status scenario(void *ud, void *resv) {
  (void)ud;
  result *res = resv;
  tp_tensor *x = NULL, *xt = NULL, *mm = NULL, *lin = NULL, *r1 = NULL, *r2 = NULL, *cat = NULL,
            *red = NULL, *sm = NULL, *ln = NULL, *lw = NULL, *lb = NULL, *x2 = NULL, *r20 = NULL;
  tp_trace_result tr;
  memset(&tr, 0, sizeof tr);
  tp_graph *g2 = NULL;
  char *text = NULL;
  tp_tensor *gout[4] = {NULL, NULL, NULL, NULL}, *cout[4] = {NULL, NULL, NULL, NULL},
            *cout2[4] = {NULL, NULL, NULL, NULL}, *cout3[4] = {NULL, NULL, NULL, NULL},
            *xs = NULL;
  int ngout = 0, ncout = 0, ncout2 = 0, ncout3 = 0;
  char *explain = NULL;
  tp_compiled *comp = NULL;
  tp_attrs at;

  float xv[12] = {1, -2, 3, 0.5f, 4, -1, 2, 2, -3, 0, 1, 1};
  float wv[15] = {0.1f, 0.2f, 0.3f, -0.5f, 0.25f, 1, 0, 0, 1, 1, 1, 1, -1, 0.5f, 0};
  float bv[5] = {0.5f, -0.5f, 0, 1, 2};
  STEP("tensor x", tp_tensor_new(TP_F32, 2, (const int64_t[]){4, 3}, xv, &x));
  STEP("tensor W", tp_tensor_new(TP_F32, 2, (const int64_t[]){5, 3}, wv, &W));
  STEP("tensor B", tp_tensor_new(TP_F32, 1, (const int64_t[]){5}, bv, &B));
  /* matmul with a transposed view, linear */
  STEP("transpose", tp_transpose(W, 0, 1, &xt));
  STEP("matmul", tp_matmul(x, xt, &mm));
  STEP("linear", tp_linear(x, W, B, &lin));
  READ(lin, res->lin);
  /* reshape: a view and a copy (of the transposed view) */
  STEP("reshape view", tp_reshape(mm, 2, (const int64_t[]){5, -1}, &r1));
  STEP("reshape copy", tp_reshape(xt, 1, (const int64_t[]){-1}, &r2));
  READ(r1, res->resh);
  /* concat (mixed dtypes: i32 + f32) along dim 0 */
  {
    int32_t iv[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    STEP("tensor i32", tp_tensor_new(TP_I32, 2, (const int64_t[]){4, 3}, iv, &x2));
    tp_attrs_init(&at);
    at.dim = 0;
    tp_tensor *ins[2] = {x2, x};
    STEP("concat", tp_op_call(TP_OP_CONCAT, 2, ins, &at, &cat));
    READ(cat, res->cat);
  }
  /* reduce, softmax, layer_norm */
  STEP("sum", tp_sum(lin, 1, (const int64_t[]){1}, 0, &red));
  READ(red, res->red);
  tp_attrs_init(&at);
  at.dim = -1;
  STEP("softmax", tp_op_call(TP_OP_SOFTMAX, 1, &mm, &at, &sm));
  READ(sm, res->sm);
  {
    STEP("reshape for layer_norm", tp_reshape(lin, 2, (const int64_t[]){2, 10}, &r20));
    STEP("ln weight", tp_ones(TP_F32, 1, (const int64_t[]){10}, &lw));
    STEP("ln bias", tp_zeros(TP_F32, 1, (const int64_t[]){10}, &lb));
    tp_attrs_init(&at);
    at.nints = 1;
    at.ints[0] = 10;
    tp_tensor *ins[3] = {r20, lw, lb};
    STEP("layer_norm", tp_op_call(TP_OP_LAYER_NORM, 3, ins, &at, &ln));
    READ(ln, res->ln);
  }
  /* capture a small function, print it (with data), parse, run */
  {
    tp_callable fn = {traced_fn, NULL};
    STEP("trace", tp_trace(&fn, 1, &x, 1, &tr));
    if (!tr.graph || tr.nout != 2) {
      FAILF("trace: graph %p, %d outputs (expected a graph and 2)", (void *)tr.graph, tr.nout);
      goto cleanup;
    }
    READ(tr.outs[0], res->traced);
    STEP("graph_print", tp_graph_print(tr.graph, 1, &text));
    STEP("graph_parse", tp_graph_parse(text, strlen(text), &g2));
    STEP("graph_run", tp_graph_run(g2, 1, &x, 4, gout, &ngout));
    if (ngout != 2) {
      FAILF("graph_run gave %d outputs", ngout);
      goto cleanup;
    }
    READ(gout[0], res->graph_out);
    /* compile: the first call captures, the second runs the cached graph */
    STEP("compile", tp_compile(&fn, NULL, &comp));
    STEP("compiled call 1", tp_compiled_call(comp, 1, &x, 4, cout, &ncout));
    if (ncout != 2) {
      FAILF("compiled call gave %d outputs", ncout);
      goto cleanup;
    }
    READ(cout[0], res->compiled);
    STEP("compiled call 2", tp_compiled_call(comp, 1, &x, 4, cout2, &ncout2));
    if (ncout2 != 2) {
      FAILF("compiled call 2 gave %d outputs", ncout2);
      goto cleanup;
    }
    READ(cout2[0], res->compiled2);
    /* a new input shape: a second specialization */
    STEP("slice x", tp_op_call(TP_OP_SLICE, 1, &x,
                               &(tp_attrs){.dim = 0, .start = 1, .end = 3, .step = 1, .eps = 1e-5},
                               &xs));
    STEP("compiled call 3", tp_compiled_call(comp, 1, &xs, 4, cout3, &ncout3));
    if (ncout3 != 2) {
      FAILF("compiled call 3 gave %d outputs", ncout3);
      goto cleanup;
    }
    READ(cout3[0], res->compiled3);
    res->ncaptures = tp_compiled_num_captures(comp);
    res->nentries = tp_compiled_num_entries(comp);
    STEP("explain", tp_compiled_explain(comp, &explain));
    snprintf(res->explain, sizeof res->explain, "%s", explain);
  }
  sweep_step = "done";
cleanup:
  tp_compiled_free(comp);
  for (int i = 0; i < ngout && i < 4; i++) tp_tensor_release(gout[i]);
  for (int i = 0; i < ncout && i < 4; i++) tp_tensor_release(cout[i]);
  for (int i = 0; i < ncout2 && i < 4; i++) tp_tensor_release(cout2[i]);
  for (int i = 0; i < ncout3 && i < 4; i++) tp_tensor_release(cout3[i]);
  tp_tensor_release(xs);
  tp_free_buffer(explain);
  tp_graph_free(g2);
  tp_free_buffer(text);
  tp_trace_result_clear(&tr);
  tp_tensor *all[] = {x, xt, mm, lin, r1, r2, cat, red, sm, ln, lw, lb, x2, r20, W, B};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) tp_tensor_release(all[i]);
  W = B = NULL;
  tp_reset(); /* drop compile()'s global state (records, capture-time constants) */
  return sweep_status;
}

/* hand-checked values of the scenario (so a broken baseline is noticed) */
static void check_baseline(const result *r) {
  /* lin row 0: x0 = [1,-2,3]; W rows: [0.1,0.2,0.3], [-0.5,0.25,1], [0,0,1], [1,1,1],
   * [-1,0.5,0]; + B = [0.5,-0.5,0,1,2] */
  const float want0[5] = {0.1f - 0.4f + 0.9f + 0.5f, -0.5f - 0.5f + 3 - 0.5f, 3, 2 + 1,
                          -1 - 1 + 2};
  for (int j = 0; j < 5; j++)
    if (fabsf(r->lin[j] - want0[j]) > 1e-5f)
      FAILF("baseline: linear[0][%d] = %g, expected %g", j, r->lin[j], want0[j]);
  /* concat: first 12 values from the int tensor */
  for (int i = 0; i < 12; i++)
    if (r->cat[i] != (float)(i + 1)) FAILF("baseline: concat[%d] = %g", i, r->cat[i]);
  /* the traced, graph-run and compiled results equal */
  if (memcmp(r->traced, r->graph_out, sizeof r->traced))
    FAILF("baseline: graph_run of the parsed graph differs from the traced result");
  if (memcmp(r->traced, r->compiled, sizeof r->traced) ||
      memcmp(r->traced, r->compiled2, sizeof r->traced))
    FAILF("baseline: compiled results differ from the traced result");
  if (r->ncaptures != 2 || r->nentries != 2)
    FAILF("baseline: %d captures / %d entries after two input shapes (expected 2 / 2)",
          r->ncaptures, r->nentries);
  if (memcmp(r->compiled3, r->traced + 5, sizeof r->compiled3))
    FAILF("baseline: compiled result on rows 1..2 differs from the traced rows");
  if (!r->explain[0]) FAILF("baseline: empty explain()");
  for (int i = 0; i < 4; i++) {
    float s = 0;
    for (int j = 0; j < 5; j++) s += r->sm[i * 5 + j];
    if (fabsf(s - 1) > 1e-5f) FAILF("baseline: softmax row %d sums to %g", i, s);
  }
}

/* tp_live_storage_peak: the high-water mark of live tensor storage since
 * the last reset, by hand (4000 then 2000 bytes: the peak stays 4000 more
 * than the start until a reset brings it down to what is live). */
static void test_peak(void) {
  size_t b0 = tp_live_storage_bytes();
  tp_live_storage_peak(1);
  CHECK(tp_live_storage_peak(0) == b0);
  tp_tensor *a = NULL, *b = NULL;
  CHECK(tp_zeros(TP_F32, 1, (int64_t[]){1000}, &a) == TP_OK);
  tp_tensor_release(a);
  CHECK(tp_zeros(TP_F32, 1, (int64_t[]){500}, &b) == TP_OK);
  CHECKF(tp_live_storage_bytes() == b0 + 2000 && tp_live_storage_peak(0) == b0 + 4000, "live %zu, peak %zu, start %zu",
         tp_live_storage_bytes(), tp_live_storage_peak(0), b0);
  CHECK(tp_live_storage_peak(1) == b0 + 4000 && tp_live_storage_peak(0) == b0 + 2000);
  tp_tensor_release(b);
  CHECK(tp_live_storage_peak(0) == b0 + 2000 && tp_live_storage_bytes() == b0);
}

int main(void) {
  test_peak();
  result base;
  sweep_case c = {"test_alloc", scenario, NULL, sizeof(result), NULL};
  size_t live_t0 = tp_live_tensors();
  failures += sweep_run(&c, &base, NULL);
  check_baseline(&base);
  if (tp_live_tensors() != live_t0) FAILF("leak at the end: %zu tensors", tp_live_tensors());
  printf("test_alloc: %d failures\n", failures);
  return failures ? 1 : 0;
}
