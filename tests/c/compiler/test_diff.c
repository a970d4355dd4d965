/* test_diff.c - differential testing of the backends (../diffgen.h): random
 * valid graphs built from the op table with fixed seeds, each run by the
 * reference backend (the oracle), eager and stax with every input fed at
 * run time; any disagreement fails with the seed and the graph's text.
 *
 * TP_DIFF_CASES=N (default 20000) sets the number of seeds; TP_DIFF_SEED=S
 * runs seed S alone and prints its graph and every backend's outputs.
 * TP_DIFF_WRITE=FILE writes the graphs that agree (text with data, one
 * "# seed N" line before each) for tests/js/diff.test.js, which runs them
 * in the Wasm core with generated code:
 *   TP_DIFF_CASES=400 TP_DIFF_WRITE=tests/js/fixtures/diff_graphs.txt build/native/test_diff The libFuzzer target
 * tests/fuzz/fuzz_diff.c explores the same space from coverage.
 *
 * The check is itself checked: a backend registered here returns eager's
 * results with one float element nudged by 1%, and must be caught. */
#include "graph/graph.h"
#include "ops/ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "diffgen.h"

/* ---- a wrong backend: eager, with the first finite element of each float
 * output moved by 1% of the output's largest magnitude (plus 1%) ---- */
static int nudged; /* elements the wrong backend changed */
typedef struct wrong_ud {
  tp_backend_run inner;
} wrong_ud;
static tp_status wrong_run(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  wrong_ud *w = ud;
  TP_TRY(w->inner.run(w->inner.ud, nin, in, max_out, outs, nout));
  for (int k = 0; k < *nout; k++)
    if (tp_tensor_dtype(outs[k]) == TP_F32 && tp_tensor_numel(outs[k]) > 0) {
      tp_tensor *c = NULL; /* a copy: the output may share an input's storage */
      TP_TRY(tp_tensor_empty(TP_F32, tp_tensor_ndim(outs[k]), tp_tensor_shape(outs[k]), &c));
      float *p = tp_tensor_ptr(c);
      TP_TRY(tp_tensor_read(outs[k], p, sizeof(float) * (size_t)tp_tensor_numel(c)));
      int64_t m = tp_tensor_numel(c), first = -1;
      float big = 0;
      for (int64_t i = 0; i < m; i++)
        if (isfinite(p[i])) {
          if (first < 0) first = i;
          if (fabsf(p[i]) > big) big = fabsf(p[i]);
        }
      if (first >= 0) p[first] += 0.01f * (1 + big), nudged++;
      tp_tensor_release(outs[k]);
      outs[k] = c;
    }
  return TP_OK;
}
static void wrong_free(void *ud) {
  wrong_ud *w = ud;
  if (w->inner.free) w->inner.free(w->inner.ud);
  free(w);
}
static tp_status wrong_backend(void *ud, const tp_graph *g, int nin, tp_tensor *const *ex,
                               const tp_backend_opts *o, tp_backend_run *out) {
  (void)ud;
  const tp_backend *eager = NULL;
  TP_TRY(tp_lookup_backend("eager", &eager));
  wrong_ud *w = calloc(1, sizeof *w);
  if (!w) return tp_fail(TP_ERR_OUT_OF_MEMORY, "out of memory");
  tp_status s = eager->fn(eager->ud, g, nin, ex, o, &w->inner);
  if (s) {
    free(w);
    return s;
  }
  memset(out, 0, sizeof *out);
  out->run = wrong_run;
  out->ud = w;
  out->free = wrong_free;
  return TP_OK;
}

static int has_float_output(const dg_case *c) {
  int o = tp_graph_output(c->g);
  for (int k = 0; o >= 0 && k < c->g->nodes[o].nargs; k++)
    {
      const tp_desc *d = &c->g->nodes[c->g->nodes[o].args[k].node].desc;
      int64_t m = 1;
      for (int i = 0; i < d->ndim; i++) m *= d->shape[i];
      if (d->dtype == TP_F32 && m > 0) return 1;
    }
  return 0;
}

static void print_graph(const dg_case *c) {
  char *text = NULL;
  if (tp_graph_print(c->g, 1, &text) == TP_OK) printf("%s", text);
  tp_free_buffer(text);
}

/* Graphs the generator found, reduced by hand: each once failed. */
static const char *const regressions[] = {
    /* stax returned a stale value for an output that is a reshape of a
     * matmul result another kernel reads */
    "tpgraph v1\n%a = placeholder : f32[2]\n%b = placeholder : f32[2]\n"
    "%m = matmul(%a, %b) : f32[]\n%r = reshape(%m, shape=[1,-1]) : f32[1,1]\n"
    "%e = exp(%r) : f32[1,1]\noutput(%e, %r)\n",
    /* stax ran the kernel of layer_norm's computed weight after the row
     * kernel that reads it */
    "tpgraph v1\n%x = placeholder : f32[3]\n%b = placeholder : f32[3]\n%t = tanh(%x) : f32[3]\n"
    "%l = layer_norm(%x, %t, %b, normalized_shape=[3], eps=2.0) : f32[3]\n"
    "%s = sinh(%l) : f32[3]\noutput(%s)\n",
    /* the reference rounded -0.25 to +0, and the kernels' broadcasts sent
     * -0 to +0 (a division by ceil(-0.5) = -0 gave -inf) */
    "tpgraph v1\n%x = placeholder : f32[5]\n%r = round(%x) : f32[5]\n%q = rsqrt(%r) : f32[5]\n"
    "%c = ceil(%x) : f32[5]\n%d = div(%x, %c) : f32[5]\noutput(%q, %d)\n",
    /* the reference took cos of the int32 67108868 itself, not of the
     * float32 it promotes to (67108864) */
    "tpgraph v1\n%i = placeholder : i32[6]\n%m = mul(%i, 16777217) : i32[6]\n%c = cos(%m) : f32[6]\n"
    "%d = div(%m, 3) : f32[6]\noutput(%c, %d)\n",
    /* the reference read an int8 operand of an int32 bitwise_and as int64
     * (past its end), and wrote int8 results as int64 */
    "tpgraph v1\n%a = placeholder : i32[5,1]\n%b = placeholder : i8[5,7]\n"
    "%c = bitwise_and(%a, %b) : i32[5,7]\n%d = bitwise_xor(%b, %b) : i8[5,7]\noutput(%c, %d)\n",
    /* the reference's det of a float16 matrix returned float32 (the
     * special-cased ops did not widen and round back as tp_op_call does) */
    "tpgraph v1\n%x = placeholder : f16[3,4,4]\n%d = det(%x) : f16[3]\noutput(%d)\n",
    /* found by the libFuzzer target: the reference multiplied int64s in
     * double (no wrap, and past 2^53 inexact) where the kernels wrap */
    "tpgraph v1\n%x = placeholder : i64[9,16]\n%a = mul(%x, %x) : i64[9,16]\n%b = mul(%a, %x) : i64[9,16]\n"
    "%c = mul(%b, %b) : i64[9,16]\n%d = mul(%c, %b) : i64[9,16]\n%e = mul(%d, %d) : i64[9,16]\n"
    "%f = mul(%e, %e) : i64[9,16]\n%g = atanh(%f) : f32[9,16]\n%h = lt(%f, %e) : b8[9,16]\noutput(%g, %f, %h)\n",
};

static void run_regressions(void) {
  for (size_t i = 0; i < sizeof regressions / sizeof regressions[0]; i++) {
    dg_case c;
    if (dg_from_text(regressions[i], &c) != TP_OK) {
      FAILF("regression %zu: %s", i, tp_last_error());
      continue;
    }
    char why[600];
    int r = dg_check(&c, why, sizeof why);
    CHECKF(r == 0, "regression %zu: %s", i, r < 0 ? "the reference refused it" : why);
    if (r && getenv("TP_DIFF_VERBOSE")) dg_dump(&c);
    dg_free(&c);
  }
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *e = getenv("TP_DIFF_CASES"), *one = getenv("TP_DIFF_SEED");
  long ncases = e && *e ? atol(e) : 20000;
  long s0 = 1, s1 = ncases;
  if (one && *one) s0 = s1 = atol(one);
  run_regressions();
  CHECK_OK(tp_register_backend("diffgen_wrong", wrong_backend, NULL, NULL, 0, NULL));
  long built = 0, compared = 0, refused = 0, mismatched = 0, caught = 0, wrong_tried = 0;
  long ops = 0;
  uint8_t bytes[4096];
  const char *wpath = getenv("TP_DIFF_WRITE");
  FILE *wf = wpath && *wpath ? fopen(wpath, "w") : NULL;
  if (wpath && *wpath && !wf) FAILF("cannot write %s", wpath);
  for (long seed = s0; seed <= s1; seed++) {
    dg_seed_bytes((uint64_t)seed, bytes, sizeof bytes);
    dg_case c;
    if (dg_build(bytes, sizeof bytes, &c) != TP_OK) {
      tp_clear_error();
      continue;
    }
    built++;
    ops += c.nops;
    if (s0 == s1) print_graph(&c), dg_dump(&c);
    char why[600];
    int r = dg_check(&c, why, sizeof why);
    if (r < 0) refused++;
    else compared++;
    if (r > 0) {
      mismatched++;
      if (mismatched <= 5) {
        FAILF("seed %ld: %s; the graph:", seed, why);
        print_graph(&c);
      } else FAILF("seed %ld: %s", seed, why);
    }
    if (wf && r == 0) {
      char *text = NULL;
      if (tp_graph_print(c.g, 1, &text) == TP_OK) fprintf(wf, "# seed %ld\n%s", seed, text);
      tp_free_buffer(text);
    }
    /* the comparison catches a 1% error */
    if (r == 0 && has_float_output(&c) && wrong_tried < 50) {
      static const char *const wrong[] = {"diffgen_wrong"};
      nudged = 0;
      int w = dg_check_backends(&c, wrong, 1, why, sizeof why);
      wrong_tried += nudged > 0;
      caught += nudged > 0 && w == 1;
      if (nudged && w != 1 && getenv("TP_DIFF_VERBOSE")) printf("seed %ld: the wrong backend passed (%d)\n", seed, w);
    }
    dg_free(&c);
  }
  if (wf) fclose(wf);
  printf("diff: %ld seeds, %ld graphs built (%.1f op nodes each), %ld compared, %ld refused by the "
         "reference, %ld mismatches; the 1%%-wrong backend caught in %ld of %ld\n",
         s1 - s0 + 1, built, built ? (double)ops / (double)built : 0.0, compared, refused, mismatched,
         caught, wrong_tried);
  if (s0 != s1) {
    CHECKF(built >= (s1 - s0 + 1) * 9 / 10, "only %ld of %ld seeds built a graph", built, s1 - s0 + 1);
    CHECKF(compared >= built / 2, "only %ld of %ld graphs were compared", compared, built);
  }
  CHECKF(wrong_tried == 0 || caught == wrong_tried, "the 1%%-wrong backend passed %ld of %ld checks",
         wrong_tried - caught, wrong_tried);
  tp_unregister_backend("diffgen_wrong");
  return failures ? 1 : 0;
}
