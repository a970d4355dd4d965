/* test_alloc.c - allocation failure injection.
 *
 * A counting allocator (tp_set_allocator) that fails the Nth allocation is
 * installed; for N = 1 .. (the number of allocations of a whole scenario)
 * the scenario runs: tensors, matmul, linear, reshape (view and copy),
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
#include <execinfo.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"

/* ---- the counting allocator ---- */
typedef struct block {
  void *p;
  size_t n;
} block;
static struct {
  long calls;        /* allocation attempts (malloc or growing realloc) */
  long fail_at;      /* fail the attempt with this number (0: never) */
  int failed;        /* the injected failure happened */
  size_t live_bytes; /* bytes in live blocks */
  long live_blocks;
  long bad_sizes;    /* frees / reallocs whose old_size did not match */
  long unknown;      /* frees of blocks this allocator did not make */
  block *tab;        /* open addressing on the pointer */
  size_t cap;
} A;

static size_t slot_of(void *p) {
  uintptr_t h = (uintptr_t)p;
  h ^= h >> 17;
  h *= 0x9e3779b97f4a7c15ULL;
  return (size_t)(h >> 7) & (A.cap - 1);
}
static void tab_put(void *p, size_t n);
static void tab_grow(void) {
  block *old = A.tab;
  size_t oc = A.cap;
  A.cap = oc ? oc * 2 : 1 << 14;
  A.tab = calloc(A.cap, sizeof(block));
  for (size_t i = 0; i < oc; i++)
    if (old[i].p) tab_put(old[i].p, old[i].n);
  free(old);
}
static void tab_put(void *p, size_t n) {
  if ((size_t)(A.live_blocks + 1) * 2 > A.cap) tab_grow();
  size_t i = slot_of(p);
  while (A.tab[i].p) i = (i + 1) & (A.cap - 1);
  A.tab[i].p = p;
  A.tab[i].n = n;
}
/* remove p; returns its size or (size_t)-1 if unknown */
static size_t tab_take(void *p) {
  if (!A.cap) return (size_t)-1;
  size_t i = slot_of(p);
  while (A.tab[i].p && A.tab[i].p != p) i = (i + 1) & (A.cap - 1);
  if (!A.tab[i].p) return (size_t)-1;
  size_t n = A.tab[i].n;
  A.tab[i].p = NULL;
  /* re-insert the rest of the cluster */
  for (size_t j = (i + 1) & (A.cap - 1); A.tab[j].p; j = (j + 1) & (A.cap - 1)) {
    block b = A.tab[j];
    A.tab[j].p = NULL;
    size_t k = slot_of(b.p);
    while (A.tab[k].p) k = (k + 1) & (A.cap - 1);
    A.tab[k] = b;
  }
  return n;
}

static void *counting_alloc(void *ud, void *p, size_t old_n, size_t new_n) {
  (void)ud;
  if (new_n == 0) { /* free */
    if (!p) return NULL;
    size_t n = tab_take(p);
    if (n == (size_t)-1) A.unknown++;
    else {
      if (n != old_n) A.bad_sizes++;
      A.live_bytes -= n;
      A.live_blocks--;
    }
    free(p);
    return NULL;
  }
  A.calls++;
  if (A.fail_at && A.calls == A.fail_at) {
    A.failed = 1;
    if (getenv("TP_ALLOC_BACKTRACE")) { /* debugging aid: who allocates the Nth block */
      void *bt[16];
      int nb = backtrace(bt, 16);
      backtrace_symbols_fd(bt, nb, 1);
    }
    return NULL; /* a failed realloc leaves p alone */
  }
  size_t n = (size_t)-1;
  if (p) {
    n = tab_take(p);
    if (n == (size_t)-1) A.unknown++;
    else if (n != old_n) A.bad_sizes++;
  }
  void *q = realloc(p, new_n);
  if (!q) {
    if (p && n != (size_t)-1) tab_put(p, n);
    return NULL;
  }
  if (p && n != (size_t)-1) {
    A.live_bytes -= n;
    A.live_blocks--;
  }
  tab_put(q, new_n);
  A.live_bytes += new_n;
  A.live_blocks++;
  return q;
}

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

/* Where the scenario stopped, for messages. */
static const char *step;
static tp_status fail_status;
static char fail_msg[1100];

#define STEP(name, expr)                                          \
  do {                                                            \
    step = name;                                                  \
    tp_status s_ = (expr);                                        \
    if (s_ != TP_OK) {                                            \
      fail_status = s_;                                           \
      snprintf(fail_msg, sizeof fail_msg, "%s", tp_last_error()); \
      goto cleanup;                                               \
    }                                                             \
  } while (0)

#define READ(t, dst) STEP("read " #t, tp_tensor_read(t, dst, sizeof(dst)))

static tp_status scenario(result *res) {
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
  fail_status = TP_OK;
  fail_msg[0] = 0;
  memset(res, 0, sizeof *res);

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
  step = "done";
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
  return fail_status;
}

static int same_result(const result *a, const result *b) {
  /* reductions may differ by summation order; all of these are tiny arrays
   * computed the same way on the same ISA, so they must match exactly */
  return memcmp(a, b, sizeof *a) == 0;
}

static int icontains(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  for (const char *p = hay; *p; p++)
    if (!strncasecmp(p, needle, n)) return 1;
  return 0;
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

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  tp_set_allocator(counting_alloc, NULL);
  result base;
  /* warm-up: lazily created global state is made once here */
  tp_status s = scenario(&base);
  if (s != TP_OK) {
    FAILF("the scenario does not run with a working allocator: step %s: %s: %s", step,
          tp_status_name(s), fail_msg);
    return 1;
  }
  check_baseline(&base);
  size_t live_t0 = tp_live_tensors(), live_s0 = tp_live_storage_bytes();
  size_t bytes0 = A.live_bytes;
  long blocks0 = A.live_blocks;
  A.calls = 0;
  s = scenario(&base);
  long total = A.calls;
  if (s != TP_OK) FAILF("second run failed: %s: %s", tp_status_name(s), fail_msg);
  if (A.live_bytes != bytes0 || A.live_blocks != blocks0)
    FAILF("a complete scenario leaks: %zu bytes in %ld blocks live, %zu in %ld before",
          A.live_bytes, A.live_blocks, bytes0, blocks0);
  if (A.bad_sizes) FAILF("%ld frees passed a size different from the allocated one", A.bad_sizes);
  printf("scenario: %ld allocations; baseline %zu live bytes in %ld blocks, %zu tensors\n", total,
         bytes0, blocks0, live_t0);

  int crashed = 0, other_status = 0, no_memory_msg = 0, leaked = 0, wrong = 0, swallowed = 0;
  for (long n = 1; n <= total + 1; n++) {
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
      FAILF("fork failed");
      break;
    }
    if (pid == 0) {
      int code = 0;
      result r;
      A.calls = 0;
      A.fail_at = n;
      A.failed = 0;
      A.bad_sizes = 0;
      A.unknown = 0;
      tp_clear_error();
      tp_status st = scenario(&r);
      A.fail_at = 0;
      if (st != TP_OK) {
        if (!A.failed)
          FAILF("N=%ld: step '%s' failed with %s (%s) but no allocation was failed", n,
                step, tp_status_name(st), fail_msg), code |= 2;
        else if (st != TP_ERR_OUT_OF_MEMORY)
          FAILF("N=%ld: step '%s' returned %s, expected out of memory (message: %s)", n,
                step, tp_status_name(st), fail_msg), code |= 4;
        if (A.failed && !icontains(fail_msg, "memory"))
          FAILF("N=%ld: step '%s': message \"%s\" does not mention memory", n, step,
                fail_msg), code |= 8;
      } else if (A.failed) {
        /* the failure was absorbed (a fallback): results must still be right */
        if (!same_result(&r, &base))
          FAILF("N=%ld: the scenario returned TP_OK after a failed allocation but its "
                "results differ (explain: %s)", n,
                strcmp(r.explain, base.explain) ? "differs" : "same"), code |= 16;
        else
          printf("note N=%ld: the failed allocation in step '%s' was absorbed; results are right\n",
                 n, step), code |= 64;
      }
      if (tp_live_tensors() != live_t0 || tp_live_storage_bytes() != live_s0)
        FAILF("N=%ld (failing step '%s'): leak: %zu tensors / %zu storage bytes live, "
              "baseline %zu / %zu", n, step, tp_live_tensors(), tp_live_storage_bytes(),
              live_t0, live_s0), code |= 32;
      else if (A.live_bytes != bytes0 || A.live_blocks != blocks0)
        FAILF("N=%ld (failing step '%s'): leak: %zu bytes in %ld blocks still allocated, "
              "baseline %zu in %ld", n, step, A.live_bytes, A.live_blocks, bytes0, blocks0),
            code |= 32;
      if (A.bad_sizes)
        FAILF("N=%ld: %ld frees passed a wrong size", n, A.bad_sizes), code |= 32;
      /* the library still works after the failure */
      result r2;
      if (scenario(&r2) != TP_OK || !same_result(&r2, &base))
        FAILF("N=%ld: the scenario does not pass after the failure (step '%s': %s)", n,
              step, fail_msg), code |= 16;
      fflush(stdout);
      _exit(code);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    if (!WIFEXITED(st)) {
      FAILF("N=%ld: CRASHED with signal %d", n, WIFSIGNALED(st) ? WTERMSIG(st) : -1);
      crashed++;
      continue;
    }
    int code = WEXITSTATUS(st);
    if (code == 1) { /* sanitizer report */
      FAILF("N=%ld: the child exited with status 1 (a sanitizer report above)", n);
      crashed++;
      continue;
    }
    if (code & 64) swallowed++;
    if (code & ~64) failures++;
    if (code & 4) other_status++;
    if (code & 8) no_memory_msg++;
    if (code & 32) leaked++;
    if (code & 16) wrong++;
  }
  printf("injected failures at N = 1..%ld: %d crashed, %d other statuses, %d without a memory "
         "message, %d leaking, %d wrong results, %d absorbed\n",
         total + 1, crashed, other_status, no_memory_msg, leaked, wrong, swallowed);

  /* restore the default allocator: the scenario passes */
  tp_set_allocator(NULL, NULL);
  result r3;
  s = scenario(&r3);
  if (s != TP_OK) FAILF("default allocator: scenario failed at %s: %s", step, fail_msg);
  else if (!same_result(&r3, &base)) FAILF("default allocator: results differ");
  if (tp_live_tensors() != live_t0) FAILF("leak at the end: %zu tensors", tp_live_tensors());
  printf("test_alloc: %d failures\n", failures);
  return failures ? 1 : 0;
}
