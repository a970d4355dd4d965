/* test_onnx_alloc.c - allocation-failure sweeps of the whole ONNX path: load
 * (decode, checker, import, constant folding), the stax backend (passes,
 * fusion, Kernel IR, memory plan, executor), value specializations (runtime
 * shape and index inputs, If, Loop, NonZero), explain(), and the SIMD128
 * emitter on the lowered graph (the module a Wasm host would load; natively
 * its bytes are emitted for inspection).
 *
 * For each model below (ONNX node tests and the mnist-8 conv net from
 * ../shared/conformance), every test input is read before the sweep and fed
 * at run time; the baseline outputs are checked against ONNX's expected
 * outputs, then ../alloc_sweep.h fails every allocation of one scenario in
 * turn (load, two stax runs, explain, lower + emit) and checks for
 * TP_ERR_OUT_OF_MEMORY, no leak, correct results after the failure, and no
 * crash. Without the conformance data the test is skipped (exit 77), or
 * fails when TP_REQUIRE_DATA is set (as in CI).
 *
 * TP_SWEEP_SHARDS 3 (ctest runs the sweep as three parts, test_onnx_alloc_k_of_3) */
#include "codegen/wasm/emit.h"
#include "lower/lower.h"
#include "onnx/onnx.h"
#include "onnx/tensor_pb.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "alloc_sweep.h"
#include "check.h"

#define MAXT 8
#define MAXV 4096 /* output values compared per scenario */

typedef struct mcase {
  const char *dir; /* under ../shared/conformance */
  int emit;        /* also lower and emit the model's graph */
  uint8_t *bytes;
  size_t len;
  tp_tensor *in[MAXT], *want[MAXT];
  int nin, nwant;
} mcase;

typedef struct result {
  int nout;
  int64_t numel[MAXT];
  double v[MAXV];       /* the outputs of the second run, concatenated */
  int second_same;      /* the two runs agree bit for bit */
  int has_explain;      /* explain() gave text */
  size_t wasm_len;      /* emitted module */
  int wasm_funcs;
} result;

static int exists(const char *p) { return access(p, R_OK) == 0; }

/* Copies the outputs' values (as doubles) into v; returns the count. */
static int64_t flatten(tp_tensor *const *t, int n, double *v, int64_t *numel) {
  int64_t k = 0;
  for (int i = 0; i < n; i++) {
    int64_t m = tp_tensor_numel(t[i]);
    numel[i] = m;
    for (int64_t j = 0; j < m && k < MAXV; j++) v[k++] = tp_tensor_get_f64(t[i], j);
  }
  return k;
}

static tp_status scenario(void *ud, void *resv) {
  mcase *c = ud;
  result *res = resv;
  tp_onnx_model *m = NULL;
  tp_tensor *o1[MAXT] = {0}, *o2[MAXT] = {0};
  int n1 = 0, n2 = 0;
  char *explain = NULL;
  tp_graph *lg = NULL;
  tp_kir_program *p = NULL;
  tp_emitted em;
  memset(&em, 0, sizeof em);
  static double v1[MAXV];
  int64_t numel1[MAXT];

  SWEEP_STEP("load", tp_onnx_model_load(c->bytes, c->len, &m));
  SWEEP_STEP("use stax", tp_onnx_model_use_backend(m, "stax"));
  SWEEP_STEP("run 1", tp_onnx_model_run(m, c->nin, c->in, MAXT, o1, &n1));
  SWEEP_STEP("run 2", tp_onnx_model_run(m, c->nin, c->in, MAXT, o2, &n2));
  res->nout = n2;
  int64_t k2 = flatten(o2, n2, res->v, res->numel);
  int64_t k1 = flatten(o1, n1, v1, numel1);
  res->second_same = n1 == n2 && k1 == k2 && !memcmp(v1, res->v, sizeof(double) * (size_t)k1);
  SWEEP_STEP("explain", tp_onnx_model_explain(m, &explain));
  res->has_explain = explain[0] != 0;
  if (c->emit) {
    tp_lower_options o;
    tp_lower_options_init(&o);
    tp_emit_options eo = {0, 1, NULL, NULL, 0, 0, 0}; /* with the annotated dump */
    SWEEP_STEP("passes", tp_run_passes(tp_onnx_model_graph(m), 0, NULL, NULL, &lg));
    tp_graph *owned = lg; /* tp_schedule takes ownership, on failure too */
    lg = NULL;
    SWEEP_STEP("schedule", tp_schedule(owned, &o, &p));
    SWEEP_STEP("kir verify", tp_kir_verify(p));
    SWEEP_STEP("memory plan", tp_memplan(p));
    SWEEP_STEP("emit", tp_emit_wasm(p, &eo, &em));
    res->wasm_len = em.len;
    res->wasm_funcs = em.nfuncs;
  }
  sweep_step = "done";
cleanup:
  tp_emitted_clear(&em);
  tp_kir_program_free(p);
  tp_graph_free(lg);
  tp_free_buffer(explain);
  for (int i = 0; i < n1; i++) tp_tensor_release(o1[i]);
  for (int i = 0; i < n2; i++) tp_tensor_release(o2[i]);
  tp_onnx_model_free(m);
  tp_reset(); /* drop global state made by compiling (records, caches) */
  return sweep_status;
}

/* The baseline against ONNX's expected outputs (an independent reference). */
static void check_baseline(const mcase *c, const result *r) {
  CHECKF(r->nout == c->nwant, "%s: %d outputs, expected %d", c->dir, r->nout, c->nwant);
  CHECKF(r->second_same, "%s: the second stax run differs from the first", c->dir);
  CHECKF(r->has_explain, "%s: empty explain()", c->dir);
  if (c->emit) CHECKF(r->wasm_len > 8 && r->wasm_funcs > 0, "%s: nothing emitted", c->dir);
  int64_t k = 0;
  for (int i = 0; i < c->nwant && i < r->nout; i++) {
    int64_t m = tp_tensor_numel(c->want[i]);
    CHECKF(r->numel[i] == m, "%s: output %d has %lld values, expected %lld", c->dir, i,
           (long long)r->numel[i], (long long)m);
    for (int64_t j = 0; j < m && k < MAXV; j++, k++) {
      double w = tp_tensor_get_f64(c->want[i], j), g = r->v[k];
      int ok = (isnan(g) && isnan(w)) || fabs(g - w) <= 1e-5 + 1e-3 * fabs(w);
      if (!ok) {
        FAILF("%s: output %d element %lld: %.9g, expected %.9g", c->dir, i, (long long)j, g, w);
        break;
      }
    }
  }
}

static int load_case(const char *root, mcase *c) {
  char path[1400];
  snprintf(path, sizeof path, "%s/%s/model.onnx", root, c->dir);
  if (tp_onnx_read_file(path, &c->bytes, &c->len) != TP_OK) {
    FAILF("%s: %s", c->dir, tp_last_error());
    return 0;
  }
  for (c->nin = 0; c->nin < MAXT; c->nin++) {
    snprintf(path, sizeof path, "%s/%s/test_data_set_0/input_%d.pb", root, c->dir, c->nin);
    if (!exists(path)) break;
    if (tp_onnx_tensor_load(path, &c->in[c->nin]) != TP_OK) return FAILF("%s", tp_last_error()), 0;
  }
  for (c->nwant = 0; c->nwant < MAXT; c->nwant++) {
    snprintf(path, sizeof path, "%s/%s/test_data_set_0/output_%d.pb", root, c->dir, c->nwant);
    if (!exists(path)) break;
    if (tp_onnx_tensor_load(path, &c->want[c->nwant]) != TP_OK) return FAILF("%s", tp_last_error()), 0;
  }
  return 1;
}

static void free_case(mcase *c) {
  tp_free(c->bytes);
  for (int i = 0; i < c->nin; i++) tp_tensor_release(c->in[i]);
  for (int i = 0; i < c->nwant; i++) tp_tensor_release(c->want[i]);
}

int main(void) {
  char root[1024];
  const char *env = getenv("TP_CONFORMANCE");
  const char *req = getenv("TP_REQUIRE_DATA");
  if (env && *env) snprintf(root, sizeof root, "%s", env);
  else snprintf(root, sizeof root, "%s/../shared/conformance", TP_SOURCE_DIR);
  char probe[1100];
  snprintf(probe, sizeof probe, "%s/models/mnist-8/model.onnx", root);
  if (!exists(probe)) {
    if (req && *req && strcmp(req, "0")) {
      printf("FAIL: conformance data not found (%s) and TP_REQUIRE_DATA is set\n", probe);
      return 1;
    }
    printf("conformance data not found (%s); set TP_CONFORMANCE: skipped\n", probe);
    return 77;
  }
  mcase cases[] = {
      {.dir = "models/mnist-8", .emit = 1},                                  /* Conv, Relu, MaxPool, Reshape, MatMul */
      {.dir = "onnx-node/test_batchnorm_example", .emit = 0},                /* every parameter a run-time input */
      {.dir = "onnx-node/test_conv_with_strides_padding", .emit = 0},
      {.dir = "onnx-node/test_gemm_default_matrix_bias", .emit = 0},
      {.dir = "onnx-node/test_layer_normalization_2d_axis0", .emit = 0},     /* three outputs */
      {.dir = "onnx-node/test_gather_0", .emit = 0},                         /* run-time indices */
      {.dir = "onnx-node/test_reshape_reordered_all_dims", .emit = 0},       /* run-time shape */
      {.dir = "onnx-node/test_resize_downsample_scales_nearest", .emit = 0}, /* run-time scales */
      {.dir = "onnx-node/test_if", .emit = 0},                               /* If on a run-time condition */
      {.dir = "onnx-node/test_loop11", .emit = 0},                           /* Loop, unrolled at import */
      {.dir = "onnx-node/test_scan9_sum", .emit = 0},                        /* Scan (short: unrolled) */
      {.dir = "onnx-node/test_lstm_defaults", .emit = 0},
      {.dir = "onnx-node/test_lstm_with_peepholes", .emit = 0},              /* lstm with P, run-time W and R */
      {.dir = "onnx-node/test_gru_seq_length", .emit = 0},                   /* run-time sequence_lens */
      {.dir = "onnx-node/test_qlinearconv", .emit = 0},                      /* qconv2d in the plan */
      {.dir = "onnx-node/test_convinteger_with_padding", .emit = 0},         /* conv2d_int */
      {.dir = "onnx-node/test_nonzero_example", .emit = 0},                  /* a value specialization */
      {.dir = "onnx-node/test_attention_3d", .emit = 0},
  };
  int ncase = (int)(sizeof cases / sizeof cases[0]);
  /* TP_SWEEP_ONLY=substring runs the matching cases only (debugging aid) */
  const char *only = getenv("TP_SWEEP_ONLY");
  for (int i = 0; i < ncase; i++) {
    mcase *c = &cases[i];
    if (only && *only && !strstr(c->dir, only)) continue;
    if (!load_case(root, c)) {
      free_case(c);
      continue;
    }
    static result base;
    sweep_case sc = {c->dir, scenario, NULL, sizeof(result), c};
    long total = 0;
    failures += sweep_run(&sc, &base, &total);
    check_baseline(c, &base);
    free_case(c);
  }
  printf("test_onnx_alloc: %d failures\n", failures);
  return failures ? 1 : 0;
}
