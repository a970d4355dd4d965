/* test_partition.c - compiled training's partitioner (src/compiler/
 * partition.c; docs/training.md "The partitioner").
 *
 * - the max-flow solver on hand-built networks with known answers: CLRS's
 *   six-vertex network (max flow 23, the cut {s, v1, v2, v4}), a node-split
 *   chain (the cut at its narrowest node), a network with an infinite path
 *   (no finite cut), bad edges refused with a message; 2000 random
 *   10-vertex networks (capacities 0..22 and infinite) against a brute-force
 *   minimum over every s-t partition, and the reported cut's capacity;
 * - compiled functions through the public API (tp_compile, a call,
 *   tp_backward), with the min-cut and with the rule (TP_PARTITIONER=rule),
 *   gradients equal to the same function run eagerly (|a-b| <= 1e-5 +
 *   1e-4 max|b|), and explain()'s saved values and bytes:
 *   * a chain of pointwise ops after a GEMM (y = x W; a = tanh(y);
 *     b = exp(a); loss = sum(a b)): the backward reads a and b, the
 *     min-cut saves one [8, 32] tensor (1024 bytes) besides the input x
 *     (a reference), not a and b;
 *   * a pointwise value that a forward GEMM reads but the backward reads
 *     only pointwise (h = tanh(x * w0); y = h C, C constant; loss =
 *     sum(y^2)): the rule saves h (512 bytes) and y (1024), the min-cut
 *     only y and recomputes h from x and w0 (references);
 *   * nothing leaks. */
#include "check.h"
#include "compiler/partition.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void flow_tests(void) {
  tp_flow *f = NULL;
  /* CLRS figure 26.6: s=0, v1..v4 = 1..4, t=5 */
  CHECK_OK(tp_flow_new(6, 9, &f));
  static const int E[9][3] = {{0, 1, 16}, {0, 2, 13}, {1, 3, 12}, {2, 1, 4}, {2, 4, 14},
                              {3, 2, 9},  {3, 5, 20}, {4, 3, 7},  {4, 5, 4}};
  for (int k = 0; f && k < 9; k++) CHECK_OK(tp_flow_edge(f, E[k][0], E[k][1], E[k][2]));
  if (f) {
    int64_t m = tp_flow_max(f, 0, 5);
    CHECKF(m == 23, "CLRS network: max flow %lld, expected 23", (long long)m);
    unsigned char side[6];
    tp_flow_source_side(f, 0, side);
    CHECKF(side[0] && side[1] && side[2] && side[4] && !side[3] && !side[5], "CLRS cut: %d%d%d%d%d%d", side[0], side[1],
           side[2], side[3], side[4], side[5]);
    /* bad edges: an error naming them, the network unchanged */
    tp_status s = tp_flow_edge(f, 0, 6, 1);
    CHECKF(s == TP_ERR_INVALID_ARG && strstr(tp_last_error(), "edge 0 -> 6"), "out-of-range edge: %s", tp_last_error());
    s = tp_flow_edge(f, 0, 1, -1);
    CHECKF(s == TP_ERR_INVALID_ARG, "negative capacity accepted");
    s = tp_flow_edge(f, 0, 1, 1);
    CHECKF(s == TP_ERR_INTERNAL && strstr(tp_last_error(), "more than 9 edges"), "edge past the bound: %s", tp_last_error());
  }
  tp_flow_free(f);
  /* a node-split chain s -> [a 100] -> [b 40] -> [c 70] -> t: cut at b */
  CHECK_OK(tp_flow_new(8, 7, &f));
  if (f) {
    CHECK_OK(tp_flow_edge(f, 0, 2, TP_FLOW_INF));
    CHECK_OK(tp_flow_edge(f, 2, 3, 100));
    CHECK_OK(tp_flow_edge(f, 3, 4, TP_FLOW_INF));
    CHECK_OK(tp_flow_edge(f, 4, 5, 40));
    CHECK_OK(tp_flow_edge(f, 5, 6, TP_FLOW_INF));
    CHECK_OK(tp_flow_edge(f, 6, 7, 70));
    CHECK_OK(tp_flow_edge(f, 7, 1, TP_FLOW_INF));
    int64_t m = tp_flow_max(f, 0, 1);
    CHECKF(m == 40, "chain: max flow %lld, expected 40", (long long)m);
    unsigned char side[8];
    tp_flow_source_side(f, 0, side);
    CHECKF(side[2] && side[3] && side[4] && !side[5] && !side[6] && !side[1], "chain cut not at b");
  }
  tp_flow_free(f);
  /* an infinite path: no finite cut */
  CHECK_OK(tp_flow_new(3, 3, &f));
  if (f) {
    CHECK_OK(tp_flow_edge(f, 0, 2, TP_FLOW_INF));
    CHECK_OK(tp_flow_edge(f, 2, 1, TP_FLOW_INF));
    CHECK_OK(tp_flow_edge(f, 0, 1, 5));
    CHECKF(tp_flow_max(f, 0, 1) >= TP_FLOW_INF, "an infinite path gave a finite flow");
  }
  tp_flow_free(f);
  CHECKF(tp_flow_new(1, 1, &f) == TP_ERR_INVALID_ARG && !f, "a network of one vertex accepted");
}

/* Random networks against brute force: the max flow equals the smallest
 * capacity over every s-t partition (max-flow min-cut), and the source
 * side the solver reports is a partition of that capacity. */
static uint64_t rng = 88172645463325252ull;
static uint64_t next_rand(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}
static void random_flow_tests(void) {
  enum { NV = 10, TRIALS = 2000 };
  for (int trial = 0; trial < TRIALS; trial++) {
    int ne = 4 + (int)(next_rand() % 36), eu[40], ev[40];
    int64_t ec[40];
    tp_flow *f = NULL;
    CHECK_OK(tp_flow_new(NV, ne, &f));
    if (!f) return;
    for (int k = 0; k < ne; k++) {
      eu[k] = (int)(next_rand() % NV), ev[k] = (int)(next_rand() % NV);
      uint64_t r = next_rand() % 24;
      ec[k] = r == 23 ? TP_FLOW_INF : (int64_t)r;
      CHECK_OK(tp_flow_edge(f, eu[k], ev[k], ec[k]));
    }
    /* brute force over the sets holding 0 (source) and not 1 (sink) */
    int64_t best = -1;
    for (unsigned m = 0; m < (1u << (NV - 2)); m++) {
      unsigned set = 1u | (m << 2);
      int64_t c = 0;
      for (int k = 0; k < ne; k++)
        if ((set >> eu[k] & 1) && !(set >> ev[k] & 1)) c = c + ec[k] > TP_FLOW_INF ? TP_FLOW_INF : c + ec[k];
      if (best < 0 || c < best) best = c;
    }
    int64_t got = tp_flow_max(f, 0, 1);
    if (got > TP_FLOW_INF) got = TP_FLOW_INF;
    CHECKF(got == best, "random network %d: max flow %lld, brute-force min cut %lld", trial, (long long)got, (long long)best);
    if (best < TP_FLOW_INF) {
      unsigned char side[NV];
      tp_flow_source_side(f, 0, side);
      int64_t c = 0;
      for (int k = 0; k < ne; k++)
        if (side[eu[k]] && !side[ev[k]]) c += ec[k];
      CHECKF(side[0] && !side[1] && c == best, "random network %d: the reported cut has capacity %lld, not %lld", trial,
             (long long)c, (long long)best);
    }
    tp_flow_free(f);
  }
}

/* ---- compiled functions ---- */
static tp_tensor *W, *W0, *C;

static tp_status unary(tp_op op, tp_tensor *a, tp_tensor **out) { return tp_op_call(op, 1, &a, NULL, out); }

/* y = x W; a = tanh(y); b = exp(a); loss = sum(a * b) */
static tp_status chain_fn(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_tensor *y = NULL, *a = NULL, *b = NULL, *p = NULL;
  tp_status s = tp_matmul(in[0], W, &y);
  if (!s) s = unary(TP_OP_TANH, y, &a);
  if (!s) s = unary(TP_OP_EXP, a, &b);
  if (!s) s = tp_mul(a, b, &p);
  if (!s) s = tp_sum(p, 0, NULL, 0, &outs[0]);
  tp_tensor_release(y), tp_tensor_release(a), tp_tensor_release(b), tp_tensor_release(p);
  *nout = s ? 0 : 1;
  return s;
}

/* h = tanh(x * w0); y = h C (C constant); loss = sum(y * y) */
static tp_status gemm_in_fn(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_tensor *p = NULL, *h = NULL, *y = NULL, *q = NULL;
  tp_status s = tp_mul(in[0], W0, &p);
  if (!s) s = unary(TP_OP_TANH, p, &h);
  if (!s) s = tp_matmul(h, C, &y);
  if (!s) s = tp_mul(y, y, &q);
  if (!s) s = tp_sum(q, 0, NULL, 0, &outs[0]);
  tp_tensor_release(p), tp_tensor_release(h), tp_tensor_release(y), tp_tensor_release(q);
  *nout = s ? 0 : 1;
  return s;
}

static void grad_of(tp_callable *c, tp_compiled *g, tp_tensor *x, tp_tensor *param, float *loss, float *grad, size_t nb) {
  tp_tensor *y = NULL;
  int n = 0;
  if (g) CHECK_OK(tp_compiled_call(g, 1, &x, 1, &y, &n));
  else CHECK_OK(c->fn(c->ud, 1, &x, 1, &y, &n));
  if (!y) return;
  CHECK_OK(tp_tensor_read(y, loss, sizeof *loss));
  CHECK_OK(tp_backward(y, NULL));
  tp_tensor *gr = tp_tensor_grad(param);
  CHECK(gr != NULL);
  if (gr) CHECK_OK(tp_tensor_read(gr, grad, nb));
  tp_tensor_set_grad(param, NULL);
  tp_tensor_release(y);
}

/* Compiles fn under the policy, checks its loss and param's gradient
 * against eager, and returns explain()'s training item (caller frees). */
static char *run_case(const char *name, const char *policy, tp_callable *c, tp_tensor *x, tp_tensor *param, int64_t n) {
  setenv("TP_PARTITIONER", policy, 1);
  float le = 0, lc = 0, *ge = calloc((size_t)n, sizeof(float)), *gc = calloc((size_t)n, sizeof(float));
  grad_of(c, NULL, x, param, &le, ge, sizeof(float) * (size_t)n);
  tp_compiled *g = NULL;
  CHECK_OK(tp_compile(c, NULL, &g));
  char *ex = NULL;
  for (int it = 0; g && it < 2; it++) {
    grad_of(c, g, x, param, &lc, gc, sizeof(float) * (size_t)n);
    double mx = 0, worst = 0;
    for (int64_t i = 0; i < n; i++) mx = fmax(mx, fabs(ge[i]));
    for (int64_t i = 0; i < n; i++) worst = fmax(worst, fabs(gc[i] - ge[i]) - (1e-5 + 1e-4 * mx));
    CHECKF(worst <= 0, "%s (%s): compiled gradient off eager's by %g over the tolerance", name, policy, worst);
    CHECKF(fabsf(lc - le) <= 1e-5f + 1e-5f * fabsf(le), "%s (%s): loss %g, eager %g", name, policy, lc, le);
  }
  if (g) CHECK_OK(tp_compiled_explain(g, &ex));
  CHECKF(ex && strstr(ex, "\"eager_for_autograd\": 0") && strstr(ex, "\"training\": [{"), "%s (%s): not compiled for training: %s",
         name, policy, ex ? ex : "(null)");
  const char *want = strcmp(policy, "rule") ? "\"partitioner\": \"min-cut\"" : "\"partitioner\": \"rule\"";
  CHECKF(ex && strstr(ex, want), "%s: explain lacks %s: %s", name, want, ex ? ex : "(null)");
  tp_compiled_free(g);
  free(ge), free(gc);
  unsetenv("TP_PARTITIONER");
  return ex;
}

#define HAS(ex, str) CHECKF((ex) && strstr((ex), (str)), "%s:%d: explain lacks %s: %.2500s", __func__, __LINE__, (str), (ex) ? (ex) : "(null)")
#define LACKS(ex, str) CHECKF((ex) && !strstr((ex), (str)), "%s:%d: explain has %s: %.2500s", __func__, __LINE__, (str), (ex) ? (ex) : "(null)")

static void compiled_tests(void) {
  tp_tensor *x = NULL;
  CHECK_OK(tp_randn(2, (int64_t[]){8, 16}, 1, &x));
  CHECK_OK(tp_randn(2, (int64_t[]){16, 32}, 2, &W));
  CHECK_OK(tp_randn(1, (int64_t[]){16}, 3, &W0));
  CHECK_OK(tp_randn(2, (int64_t[]){16, 32}, 4, &C));
  if (!x || !W || !W0 || !C) return;
  CHECK_OK(tp_tensor_set_requires_grad(W, 1));
  CHECK_OK(tp_tensor_set_requires_grad(W0, 1));
  tp_callable chain = {chain_fn, NULL}, gin = {gemm_in_fn, NULL};
  /* the chain after a GEMM: one [8, 32] tensor saved (1024 bytes), with the
   * input x as a reference: not both a and b */
  char *ex = run_case("chain", "mincut", &chain, x, W, 16 * 32);
  HAS(ex, "\"saved_total_bytes\": 1024,");
  HAS(ex, "\"saved_bytes\": [1024, 512]"); /* one [8,32] value, then x0 [8,16] (a reference) */
  HAS(ex, "\"saved\": [\"%1 (tanh)\", \"%x0 (input)\"]");
  HAS(ex, "\"saved_count\": 2, \"recomputed_count\": 4,");
  HAS(ex, "\"%2 (exp)\"]"); /* b = exp(a) recomputed from the saved a (with 1 - a^2 of tanh's formula) */
  tp_free_buffer(ex);
  ex = run_case("chain", "rule", &chain, x, W, 16 * 32);
  HAS(ex, "\"saved_total_bytes\": 1024,"); /* the rule saves the GEMM's output y and recomputes both */
  tp_free_buffer(ex);
  /* a value a forward GEMM reads, read pointwise by the backward */
  ex = run_case("gemm-in", "rule", &gin, x, W0, 16);
  HAS(ex, "\"saved_total_bytes\": 1536,"); /* y (1024) and h (512) */
  HAS(ex, "\"saved\": [\"%2 (matmul)\", \"%1 (tanh)\", \"%x0 (input)\"]");
  tp_free_buffer(ex);
  ex = run_case("gemm-in", "mincut", &gin, x, W0, 16);
  HAS(ex, "\"saved_total_bytes\": 1024,"); /* y only */
  HAS(ex, "\"saved\": [\"%2 (matmul)\", \"%c0 (param)\", \"%x0 (input)\"]");
  HAS(ex, "\"%1 (tanh)\", \"%0 (mul)\"]"); /* h recomputed from x and w0 */
  LACKS(ex, "\"%1 (tanh)\", \"%x0");
  tp_free_buffer(ex);
  /* a TP_PARTITIONER that names no partitioner (a typo) is an error naming
   * it, not a silent min-cut; the runtime stays usable */
  static const char *const bad[] = {"min_cut", "Rule", "rules", " rule"};
  for (int k = 0; k < 4; k++) {
    setenv("TP_PARTITIONER", bad[k], 1);
    tp_compiled *g = NULL;
    CHECK_OK(tp_compile(&chain, NULL, &g));
    tp_tensor *y = NULL;
    int ny = 0;
    tp_status st = g ? tp_compiled_call(g, 1, &x, 1, &y, &ny) : TP_ERR_INTERNAL;
    const char *msg = tp_last_error();
    CHECKF(st == TP_ERR_VALUE && ny == 0 && !y && msg && strstr(msg, "TP_PARTITIONER") && strstr(msg, bad[k]),
           "TP_PARTITIONER='%s': status %d, error '%s'", bad[k], (int)st, msg ? msg : "(null)");
    tp_tensor_release(y);
    tp_compiled_free(g);
  }
  static const char *const good[] = {"mincut", "min-cut", ""};
  for (int k = 0; k < 3; k++) {
    ex = run_case("chain", good[k], &chain, x, W, 16 * 32);
    HAS(ex, "\"saved_total_bytes\": 1024,");
    tp_free_buffer(ex);
  }
  tp_tensor_release(x);
  tp_tensor_release(W), tp_tensor_release(W0), tp_tensor_release(C);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  size_t live0 = tp_live_tensors();
  flow_tests();
  random_flow_tests();
  compiled_tests();
  tp_reset();
  if (tp_live_tensors() != live0) FAILF("leak: %zu live tensors at the end, %zu at the start", tp_live_tensors(), live0);
  printf("test_partition: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
