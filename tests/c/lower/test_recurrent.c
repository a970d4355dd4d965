/* test_recurrent.c - rnn / gru / lstm's float32 kernel (one input GEMM, a
 * recurrent GEMM and a gate pass per step: src/ops/recurrent.c) against the
 * double reference (tp_op_exec_ref; itself checked against ONNX's node
 * tests and onnxruntime elsewhere), over every direction, sequence_lens
 * (zero and short lengths), batch 1 and 3, hidden sizes that are no
 * multiple of any vector width, initial states, biases, peepholes,
 * input_forget, linear_before_reset 0 and 1, clip and every activation
 * with its alpha and beta; on each ISA table this CPU has (generic, SSE2,
 * AVX2, AVX-512), eagerly (tp_op_call) and in stax plans (tp_lower: the op
 * is one plan step with its time loop inside), with W and R fed at run time
 * and as constants (packed once per plan). Bad operands leave the plan
 * usable. */
#include "lower/lower.h"
#include "ops/ops.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "check.h"
#include "b64.h"

typedef struct rcase {
  tp_op op;
  int dir;          /* 0 forward, 1 reverse, 2 bidirectional */
  int64_t S, N, I, H;
  int bias, lens, init, peep, flag; /* flag: gru linear_before_reset, lstm input_forget */
  double clip;
  int acts;         /* 0: the defaults; else a seed picking activations and params */
} rcase;

static const rcase cases[] = {
    {TP_OP_LSTM, 0, 5, 1, 3, 5, 1, 0, 0, 0, 0, 0, 0},
    {TP_OP_LSTM, 1, 6, 3, 4, 13, 1, 1, 1, 0, 0, 0, 0},
    {TP_OP_LSTM, 2, 7, 3, 7, 17, 1, 1, 1, 1, 0, 0, 0},
    {TP_OP_LSTM, 2, 4, 1, 5, 9, 1, 0, 1, 1, 1, 0.7, 0},
    {TP_OP_LSTM, 0, 9, 3, 6, 33, 1, 1, 0, 1, 0, 0, 3},
    {TP_OP_LSTM, 0, 1, 1, 64, 64, 1, 0, 1, 0, 0, 0, 0}, /* a VAD step */
    {TP_OP_GRU, 0, 5, 1, 3, 5, 1, 0, 0, 0, 0, 0, 0},
    {TP_OP_GRU, 1, 6, 3, 4, 13, 1, 1, 1, 0, 1, 0, 0},
    {TP_OP_GRU, 2, 7, 3, 7, 17, 1, 1, 1, 0, 0, 0.5, 0},
    {TP_OP_GRU, 2, 8, 3, 5, 19, 1, 1, 1, 0, 1, 0, 5},
    {TP_OP_GRU, 0, 4, 1, 2, 3, 0, 0, 0, 0, 0, 0, 7},
    {TP_OP_RNN, 0, 5, 1, 3, 5, 1, 0, 0, 0, 0, 0, 0},
    {TP_OP_RNN, 1, 6, 3, 4, 13, 1, 1, 1, 0, 0, 0, 0},
    {TP_OP_RNN, 2, 7, 3, 7, 17, 0, 1, 1, 0, 0, 0.9, 0},
    {TP_OP_RNN, 2, 3, 3, 3, 11, 1, 0, 1, 0, 0, 0, 11},
    {TP_OP_RNN, 0, 0, 3, 3, 4, 1, 0, 1, 0, 0, 0, 0}, /* no steps: the initial state */
};

static const char *opname(tp_op op) { return op == TP_OP_LSTM ? "lstm" : op == TP_OP_GRU ? "gru" : "rnn"; }

/* activations and their alpha, beta for case seed k (every code appears
 * across the seeds); lstm's and gru's gate activation f stays bounded
 * (sigmoid-like), or the state would overflow */
static void pick_acts(const rcase *c, tp_attrs *at) {
  int nact = c->op == TP_OP_LSTM ? 3 : c->op == TP_OP_GRU ? 2 : 1, D = c->dir == 2 ? 2 : 1;
  if (!c->acts) return;
  at->nints = nact * D;
  at->nfloats = 2 * at->nints;
  for (int i = 0; i < at->nints; i++) {
    static const int gates[4] = {TP_RNN_SIGMOID, TP_RNN_HARD_SIGMOID, TP_RNN_SOFTSIGN, TP_RNN_SCALED_TANH};
    at->ints[i] = c->op != TP_OP_RNN && i % nact == 0 ? gates[(c->acts + i) % 4] : (c->acts + 3 * i) % TP_RNN_ACT_COUNT;
    at->floats[2 * i] = 0.3 + 0.2 * i;  /* alpha */
    at->floats[2 * i + 1] = 0.1 * i - 0.2; /* beta */
  }
}

static tp_tensor *rnd(int nd, const int64_t *shape, uint64_t seed, double scale) {
  tp_tensor *t = NULL, *s = NULL, *y = NULL;
  if (tp_randn(nd, shape, seed, &t) || tp_scalar(scale, 0, &s) || tp_mul(t, s, &y)) FAILF("randn: %s", tp_last_error());
  tp_tensor_release(t);
  tp_tensor_release(s);
  return y;
}

/* operands of case c: X W R B lens h0 (c0 P) */
static int make_inputs(const rcase *c, tp_tensor **in) {
  int G = c->op == TP_OP_LSTM ? 4 : c->op == TP_OP_GRU ? 3 : 1, nin = c->op == TP_OP_LSTM ? 8 : 6;
  int64_t D = c->dir == 2 ? 2 : 1, GH = G * c->H;
  memset(in, 0, sizeof(tp_tensor *) * 8);
  in[0] = rnd(3, (int64_t[]){c->S, c->N, c->I}, 1, 1.0);
  in[1] = rnd(3, (int64_t[]){D, GH, c->I}, 2, 0.6);
  in[2] = rnd(3, (int64_t[]){D, GH, c->H}, 3, 0.6);
  if (c->bias) in[3] = rnd(2, (int64_t[]){D, 2 * GH}, 4, 0.5);
  if (c->lens) {
    int64_t l[3] = {c->S, c->S > 1 ? c->S - 2 : 0, 0};
    if (tp_tensor_new(TP_I64, 1, (int64_t[]){c->N}, l, &in[4])) FAILF("lens: %s", tp_last_error());
  }
  if (c->init) in[5] = rnd(3, (int64_t[]){D, c->N, c->H}, 6, 0.8);
  if (c->init && c->op == TP_OP_LSTM) in[6] = rnd(3, (int64_t[]){D, c->N, c->H}, 7, 0.8);
  if (c->peep) in[7] = rnd(2, (int64_t[]){D, 3 * c->H}, 8, 0.5);
  return nin;
}

static tp_attrs case_attrs(const rcase *c) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = c->H;
  at.dim1 = c->dir;
  at.clip = c->clip;
  at.keepdim = c->flag;
  pick_acts(c, &at);
  return at;
}

/* |got - want| <= 1e-4 + 1e-3 |want| (float32 GEMMs against double) */
static void compare(const char *what, const rcase *c, const tp_tensor *got, const tp_tensor *want) {
  int64_t n = tp_tensor_numel(want);
  CHECKF(got && tp_tensor_numel(got) == n, "%s %s: result size", what, opname(c->op));
  if (!got || tp_tensor_numel(got) != n) return;
  int bad = 0;
  for (int64_t i = 0; i < n && bad < 3; i++) {
    double g = tp_tensor_get_f64(got, i), w = tp_tensor_get_f64(want, i);
    checks++;
    if (!(g == w || fabs(g - w) <= 1e-4 + 1e-3 * fabs(w) || (g != g && w != w))) {
      FAILF("%s %s dir %d S %lld N %lld H %lld acts %d: element %lld: got %.7g, want %.7g", what, opname(c->op), c->dir,
            (long long)c->S, (long long)c->N, (long long)c->H, c->acts, (long long)i, g, w);
      bad++;
    }
  }
}

static void test_eager_per_isa(void) {
  static const char *isas[] = {"generic", "sse2", "avx2", "avx512"};
  for (size_t q = 0; q < sizeof isas / sizeof isas[0]; q++) {
    if (tp_set_isa(isas[q]) != TP_OK) continue; /* not on this CPU */
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
      const rcase *c = &cases[k];
      tp_tensor *in[8];
      int nin = make_inputs(c, in);
      tp_attrs at = case_attrs(c);
      tp_tensor *ref = NULL, *got = NULL;
      CHECK_OK(tp_op_exec_ref(c->op, nin, in, &at, &ref));
      CHECK_OK(tp_op_call(c->op, nin, in, &at, &got));
      char what[64];
      snprintf(what, sizeof what, "eager %s", isas[q]);
      if (ref && got) compare(what, c, got, ref);
      /* W and R packed ahead (what a plan does for constants) */
      tp_rnn_pack *pk = NULL;
      tp_tensor *y = NULL;
      CHECK_OK(tp_recurrent_pack(c->op, &at, in[1], in[2], &pk));
      CHECK(pk != NULL);
      if (ref && tp_tensor_empty(TP_F32, ref->ndim, ref->shape, &y) == TP_OK) {
        CHECK_OK(tp_recurrent_into(c->op, nin, in, &at, pk, y));
        snprintf(what, sizeof what, "packed %s", isas[q]);
        compare(what, c, y, ref);
      }
      tp_free(pk);
      tp_tensor_release(y);
      tp_tensor_release(ref);
      tp_tensor_release(got);
      for (int i = 0; i < 8; i++) tp_tensor_release(in[i]);
    }
  }
  CHECK_OK(tp_set_isa("best"));
}

/* ---- stax plans: the graph text of one recurrent node ---- */

static int type_str(const tp_tensor *t, char *buf, size_t cap) {
  int o = snprintf(buf, cap, "%s[", t->dtype == TP_I64 ? "i64" : "f32");
  for (int i = 0; i < t->ndim; i++) o += snprintf(buf + o, cap - (size_t)o, i ? ",%lld" : "%lld", (long long)t->shape[i]);
  return o + snprintf(buf + o, cap - (size_t)o, "]");
}

/* konst: W and R as get_attr constants (packed once by the plan), else placeholders */
static void run_plan(const rcase *c, int konst) {
  tp_tensor *in[8], *ref = NULL;
  int nin = make_inputs(c, in);
  tp_attrs at = case_attrs(c);
  CHECK_OK(tp_op_exec_ref(c->op, nin, in, &at, &ref));
  size_t cap = 1 << 20;
  char *text = tp_alloc(cap), *data = tp_alloc(cap), ty[96];
  int o = snprintf(text, cap, "tpgraph v1\n"), nfeed = 0;
  tp_tensor *feed[8];
  for (int i = 0; i < nin; i++) {
    if (!in[i]) continue;
    type_str(in[i], ty, sizeof ty);
    if (konst && (i == 1 || i == 2)) o += snprintf(text + o, cap - (size_t)o, "%%a%d = get_attr \"a%d\" : %s\n", i, i, ty);
    else o += snprintf(text + o, cap - (size_t)o, "%%a%d = placeholder : %s\n", i, ty), feed[nfeed++] = in[i];
  }
  o += snprintf(text + o, cap - (size_t)o, "%%y = %s(", opname(c->op));
  for (int i = 0; i < nin; i++) o += snprintf(text + o, cap - (size_t)o, in[i] ? "%s%%a%d" : "%snone", i ? ", " : "", i);
  o += snprintf(text + o, cap - (size_t)o, ", hidden_size=%lld, direction=%d, activations=[", (long long)c->H, c->dir);
  for (int i = 0; i < at.nints; i++) o += snprintf(text + o, cap - (size_t)o, i ? ",%lld" : "%lld", (long long)at.ints[i]);
  o += snprintf(text + o, cap - (size_t)o, "], act_params=[");
  for (int i = 0; i < at.nfloats; i++) o += snprintf(text + o, cap - (size_t)o, i ? ",%.17g" : "%.17g", at.floats[i]);
  o += snprintf(text + o, cap - (size_t)o, "], clip=%.17g", c->clip);
  if (c->op != TP_OP_RNN)
    o += snprintf(text + o, cap - (size_t)o, ", %s=%s", c->op == TP_OP_LSTM ? "input_forget" : "linear_before_reset",
                  c->flag ? "true" : "false");
  type_str(ref, ty, sizeof ty);
  o += snprintf(text + o, cap - (size_t)o, ") : %s\noutput(%%y)\n", ty);
  for (int i = 1; konst && i <= 2; i++) {
    b64(tp_tensor_ptr(in[i]), sizeof(float) * (size_t)tp_tensor_numel(in[i]), data);
    type_str(in[i], ty, sizeof ty);
    o += snprintf(text + o, cap - (size_t)o, "data %%a%d %s %s\n", i, ty, data);
  }
  tp_graph *g = NULL;
  tp_plan *pl = NULL;
  if (tp_graph_parse(text, strlen(text), &g) != TP_OK) FAILF("parse: %s\n%s", tp_last_error(), text);
  else if (tp_lower(g, NULL, &pl) != TP_OK) FAILF("lower: %s", tp_last_error());
  if (pl) {
    const tp_kir_program *p = tp_plan_program(pl);
    int nop = 0;
    for (int k = 0; k < p->nkernels; k++) nop += p->kernels[k].kind == TP_KK_OP;
    CHECKF(nop == 1, "%s: %d op kernels (the time loop is one plan step)", opname(c->op), nop);
    for (int rep = 0; rep < 2; rep++) { /* twice: the plan (and its packed W, R) is reusable */
      tp_tensor *y = NULL;
      int ny = 0;
      CHECK_OK(tp_plan_run(pl, nfeed, feed, 1, &y, &ny));
      compare(konst ? "stax (constant W, R)" : "stax", c, y, ref);
      tp_tensor_release(y);
    }
    if (c->lens) { /* a bad length is an error naming it; the plan stays usable */
      int64_t bad[3] = {c->S + 1, 0, 0};
      tp_tensor *l = NULL, *y = NULL, *f2[8];
      int ny = 0, li = -1;
      for (int i = 0; i < nfeed; i++) li = feed[i] == in[4] ? i : li;
      memcpy(f2, feed, sizeof feed);
      CHECK_OK(tp_tensor_new(TP_I64, 1, (int64_t[]){c->N}, bad, &l));
      f2[li] = l;
      CHECK(tp_plan_run(pl, nfeed, f2, 1, &y, &ny) == TP_ERR_INVALID_ARG);
      CHECKF(strstr(tp_last_error(), "sequence_lens[0]") != NULL, "error: %s", tp_last_error());
      tp_tensor_release(l);
      CHECK_OK(tp_plan_run(pl, nfeed, feed, 1, &y, &ny));
      compare("stax after an error", c, y, ref);
      tp_tensor_release(y);
    }
  }
  tp_plan_free(pl);
  tp_graph_free(g);
  tp_free(text);
  tp_free(data);
  tp_tensor_release(ref);
  for (int i = 0; i < 8; i++) tp_tensor_release(in[i]);
}

static void test_plans(void) {
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    run_plan(&cases[k], 0);
    run_plan(&cases[k], 1);
  }
}

/* hand-computed (python, math.tanh etc.): h_t = f(0.5 x_t + 0.25 h_{t-1})
 * over x = [1, -2], hidden 1, for activations with parameters */
static void test_activation_values(void) {
  static const struct {
    int code;
    double a, b, h1, h2;
  } t[] = {
      {TP_RNN_AFFINE, 2, -0.5, 0.5, -2.25},                  /* 2v - 0.5 */
      {TP_RNN_LEAKY_RELU, 0.1, 0, 0.5, -0.0875},              /* v = -1 + 0.125 */
      {TP_RNN_THRESHOLDED_RELU, 0.4, 0, 0.5, 0},
      {TP_RNN_SCALED_TANH, 1.5, 0.5, 0.36737799360556367, -0.6378677192639904},
      {TP_RNN_HARD_SIGMOID, 0.2, 0.5, 0.6, 0.33},
      {TP_RNN_ELU, 0.7, 0, 0.5, -0.40819658622504407},
      {TP_RNN_SOFTSIGN, 0, 0, 1.0 / 3, -0.4782608695652174},
      {TP_RNN_SOFTPLUS, 0, 0, 0.9740769841801067, 0.38479641446708973},
  };
  tp_tensor *x = NULL, *w = NULL, *r = NULL;
  CHECK_OK(tp_tensor_new(TP_F32, 3, (int64_t[]){2, 1, 1}, (float[]){1, -2}, &x));
  CHECK_OK(tp_tensor_new(TP_F32, 3, (int64_t[]){1, 1, 1}, (float[]){0.5f}, &w));
  CHECK_OK(tp_tensor_new(TP_F32, 3, (int64_t[]){1, 1, 1}, (float[]){0.25f}, &r));
  for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) {
    tp_attrs at;
    tp_attrs_init(&at);
    at.nints = 1, at.ints[0] = t[k].code, at.nfloats = 2, at.floats[0] = t[k].a, at.floats[1] = t[k].b;
    tp_tensor *in[6] = {x, w, r, NULL, NULL, NULL};
    for (int ref = 0; ref < 2; ref++) {
      tp_tensor *y = NULL;
      CHECK_OK(ref ? tp_op_exec_ref(TP_OP_RNN, 6, in, &at, &y) : tp_op_call(TP_OP_RNN, 6, in, &at, &y));
      double g1 = y ? tp_tensor_get_f64(y, 0) : NAN, g2 = y ? tp_tensor_get_f64(y, 1) : NAN;
      CHECKF(fabs(g1 - t[k].h1) < 1e-6 && fabs(g2 - t[k].h2) < 1e-6, "%s (%s): got %.9g %.9g, want %.9g %.9g",
             tp_rnn_act_name(t[k].code), ref ? "reference" : "eager", g1, g2, t[k].h1, t[k].h2);
      tp_tensor_release(y);
    }
  }
  tp_tensor_release(x), tp_tensor_release(w), tp_tensor_release(r);
}

int main(void) {
  test_activation_values();
  test_eager_per_isa();
  test_plans();
  printf("test_recurrent: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
