/* test_onnx_conformance.c - ONNX's backend node tests and the real models in
 * ../shared/conformance (TP_CONFORMANCE overrides the folder), each run
 * eagerly (tp_graph_run) and with stax (tp_lower + tp_plan_run), compared
 * with ONNX's tolerance: |got - expected| <= 1e-7 + 1e-3 |expected| (NaN
 * matches NaN), exact for ints and bools.
 *
 * Every test either passes or is listed in tests/onnx_expected_failures.tsv
 * (name TAB reason); a listed test that passes fails this test too, so the
 * list stays current. TP_ONNX_WRITE_EXPECTED=FILE writes the list of the
 * tests that do not pass now (with their reasons). Exit 77: no data. */
#include "lower/lower.h"
#include "onnx/onnx.h"
#include "onnx/tensor_pb.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#ifndef TP_SOURCE_DIR
#define TP_SOURCE_DIR "."
#endif

#define MAXT 64
#define MAXEXP 1024

static int exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0;
}

typedef struct expected { char name[128]; char reason[512]; int seen; } expected;
static expected exps[MAXEXP];
static int nexps;

static void load_expected(const char *path) {
  FILE *f = fopen(path, "r");
  char line[1024];
  if (!f) return;
  while (fgets(line, sizeof line, f) && nexps < MAXEXP) {
    if (line[0] == '#' || line[0] == '\n') continue;
    char *tab = strchr(line, '\t');
    if (!tab) continue;
    *tab = 0;
    line[strcspn(line, "\r\n")] = 0;
    char *r = tab + 1;
    r[strcspn(r, "\r\n")] = 0;
    snprintf(exps[nexps].name, sizeof exps[nexps].name, "%.127s", line);
    snprintf(exps[nexps].reason, sizeof exps[nexps].reason, "%s", r);
    nexps++;
  }
  fclose(f);
}

static expected *find_expected(const char *name) {
  for (int i = 0; i < nexps; i++)
    if (!strcmp(exps[i].name, name)) return &exps[i];
  return NULL;
}

/* Compares got with want; 0 = equal, else a reason in why. */
static int compare(tp_tensor *got, tp_tensor *want, char *why, size_t n) {
  char b0[96], b1[96];
  if (tp_tensor_dtype(got) != tp_tensor_dtype(want) || tp_tensor_ndim(got) != tp_tensor_ndim(want) ||
      memcmp(tp_tensor_shape(got), tp_tensor_shape(want), sizeof(int64_t) * (size_t)tp_tensor_ndim(got))) {
    snprintf(why, n, "got %s%s, expected %s%s", tp_dtype_short(tp_tensor_dtype(got)),
             tp_shape_str(tp_tensor_ndim(got), tp_tensor_shape(got), b0, sizeof b0),
             tp_dtype_short(tp_tensor_dtype(want)),
             tp_shape_str(tp_tensor_ndim(want), tp_tensor_shape(want), b1, sizeof b1));
    return 1;
  }
  int64_t k = tp_tensor_numel(got);
  int isf = tp_tensor_dtype(got) == TP_F32;
  for (int64_t i = 0; i < k; i++) {
    double g = tp_tensor_get_f64(got, i), w = tp_tensor_get_f64(want, i);
    int ok = isf ? ((isnan(g) && isnan(w)) || g == w || fabs(g - w) <= 1e-7 + 1e-3 * fabs(w)) : g == w;
    if (!ok) {
      snprintf(why, n, "element %lld: got %.9g, expected %.9g", (long long)i, g, w);
      return 1;
    }
  }
  return 0;
}

enum { R_PASS, R_FAIL, R_SKIP };
typedef struct counts { int pass, fail, skip; } counts;

static void count(counts *c, int r) {
  if (r == R_PASS) c->pass++;
  else if (r == R_FAIL) c->fail++;
  else c->skip++;
}

/* Runs one data set; eager/stax results and reasons. */
static void run_set(const tp_graph *g, tp_plan *pl, const char *dir, uint64_t bound, int *re,
                    int *rs, char *why, size_t wn) {
  tp_tensor *in[MAXT] = {0}, *want[MAXT] = {0}, *got[MAXT] = {0};
  int nin = 0, nwant = 0, ngot = 0;
  char path[1024];
  *re = *rs = R_FAIL;
  for (int k = 0; nin < MAXT; k++) {
    snprintf(path, sizeof path, "%s/input_%d.pb", dir, k);
    if (!exists(path)) break;
    if (k < 64 && (bound >> k & 1)) continue;
    if (tp_onnx_tensor_load(path, &in[nin])) {
      snprintf(why, wn, "%s", tp_last_error());
      goto done;
    }
    nin++;
  }
  for (; nwant < MAXT; nwant++) {
    snprintf(path, sizeof path, "%s/output_%d.pb", dir, nwant);
    if (!exists(path)) break;
    if (tp_onnx_tensor_load(path, &want[nwant])) {
      snprintf(why, wn, "%s", tp_last_error());
      goto done;
    }
  }
  for (int pass = 0; pass < 2; pass++) {
    int *r = pass ? rs : re;
    char w[600] = "";
    tp_status s = pass ? (pl ? tp_plan_run(pl, nin, in, MAXT, got, &ngot) : TP_ERR_INTERNAL)
                       : tp_graph_run(g, nin, in, MAXT, got, &ngot);
    if (s) {
      ngot = 0;
      snprintf(w, sizeof w, "%s: %s", pass ? "stax" : "eager", pl || !pass ? tp_last_error() : "not lowered");
    } else if (ngot != nwant) {
      snprintf(w, sizeof w, "%s: %d outputs, expected %d", pass ? "stax" : "eager", ngot, nwant);
    } else {
      for (int k = 0; k < ngot; k++) {
        char c[300];
        if (compare(got[k], want[k], c, sizeof c)) {
          snprintf(w, sizeof w, "%s: output %d: %s", pass ? "stax" : "eager", k, c);
          break;
        }
      }
    }
    *r = w[0] ? R_FAIL : R_PASS;
    if (w[0] && !why[0]) snprintf(why, wn, "%s", w);
    for (int k = 0; k < ngot; k++) tp_tensor_release(got[k]);
    ngot = 0;
  }
done:
  for (int k = 0; k < nin; k++) tp_tensor_release(in[k]);
  for (int k = 0; k < nwant; k++) tp_tensor_release(want[k]);
}

static FILE *write_exp;
static int nbound; /* tests run with int inputs bound as constants */
static int bad; /* expectation mismatches */

/* Loads model.onnx with the int inputs of test_data_set_0 bound as
 * constants (ONNX's node tests feed Reshape shapes, Reduce axes and Slice
 * starts as graph inputs). *bound: which inputs. */
static tp_status load_bound(const char *dir, tp_graph **g, uint64_t *bound) {
  char path[1200];
  uint8_t *model = NULL;
  size_t mlen = 0;
  tp_tensor *vals[MAXT] = {0};
  char *names[MAXT] = {0};
  int nb = 0;
  *bound = 0;
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  tp_status s = tp_onnx_read_file(path, &model, &mlen);
  for (int k = 0; !s && k < MAXT; k++) {
    uint8_t *b;
    size_t n;
    tp_tensor *t = NULL;
    char *name = NULL;
    snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", dir, k);
    if (!exists(path)) break;
    if ((s = tp_onnx_read_file(path, &b, &n))) break;
    tp_pb r;
    tp_pb_init(&r, b, n, "TensorProto");
    s = tp_onnx_tensor_read(&r, "tensor", &t, &name);
    tp_xfree(b);
    if (s) break;
    if ((tp_tensor_dtype(t) == TP_I64 || tp_tensor_dtype(t) == TP_I32 || tp_tensor_ndim(t) == 0) && name) {
      vals[nb] = t;
      names[nb++] = name;
      *bound |= (uint64_t)1 << k;
    } else {
      tp_tensor_release(t);
      tp_xfree(name);
    }
  }
  if (!s) s = tp_onnx_load_with(model, mlen, nb, (const char *const *)names, vals, g);
  for (int k = 0; k < nb; k++) tp_tensor_release(vals[k]), tp_xfree(names[k]);
  tp_xfree(model);
  return s;
}

/* One test folder: model.onnx and its test_data_set_*. */
static void run_test(const char *name, const char *dir, counts *ce, counts *cs, counts *call) {
  char path[1024], why[600] = "";
  int re = R_PASS, rs = R_PASS;
  tp_graph *g = NULL;
  tp_plan *pl = NULL;
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  tp_status s = tp_onnx_load_file(path, &g);
  uint64_t bound = 0;
  if (s == TP_ERR_UNSUPPORTED && strstr(tp_last_error(), "must be a ")) {
    s = load_bound(dir, &g, &bound);
    if (!s) nbound++;
  }
  if (s) {
    re = rs = s == TP_ERR_UNSUPPORTED ? R_SKIP : R_FAIL;
    snprintf(why, sizeof why, "load: %s", tp_last_error());
  } else {
    if (tp_lower(g, NULL, &pl)) {
      pl = NULL;
      snprintf(why, sizeof why, "stax lower: %s", tp_last_error());
      rs = R_FAIL;
    }
    for (int k = 0;; k++) {
      char sd[1024];
      snprintf(sd, sizeof sd, "%s/test_data_set_%d", dir, k);
      if (!exists(sd)) break;
      int e1, s1;
      run_set(g, pl, sd, bound, &e1, &s1, why, sizeof why);
      if (e1 != R_PASS) re = R_FAIL;
      if (s1 != R_PASS) rs = R_FAIL;
    }
  }
  count(ce, re);
  count(cs, rs);
  int all = re == R_PASS && rs == R_PASS ? R_PASS : (re == R_SKIP ? R_SKIP : R_FAIL);
  count(call, all);
  expected *x = find_expected(name);
  if (x) x->seen = 1;
  if (all != R_PASS) {
    for (char *p = why; *p; p++)
      if (*p == '\t' || *p == '\n') *p = ' ';
    printf("%s %s: %s\n", all == R_SKIP ? "SKIP" : "FAIL", name, why);
    if (write_exp) fprintf(write_exp, "%s\t%s%s\n", name, all == R_SKIP ? "unsupported: " : "", why);
    if (!x) {
      printf("  ^ not listed in tests/onnx_expected_failures.tsv\n");
      bad++;
    }
  } else if (x) {
    printf("PASS %s: listed as an expected failure (%s); remove it from the list\n", name, x->reason);
    bad++;
  }
  tp_plan_free(pl);
  tp_graph_free(g);
}

int main(void) {
  char root[1024], path[1200], line[4096];
  const char *env = getenv("TP_CONFORMANCE");
  if (env && *env) snprintf(root, sizeof root, "%s", env);
  else snprintf(root, sizeof root, "%s/../shared/conformance", TP_SOURCE_DIR);
  snprintf(path, sizeof path, "%s/onnx-node/MANIFEST.tsv", root);
  FILE *mf = fopen(path, "r");
  if (!mf) {
    printf("conformance data not found (%s); set TP_CONFORMANCE: skipped\n", path);
    return 77;
  }
  load_expected(TP_SOURCE_DIR "/tests/onnx_expected_failures.tsv");
  const char *we = getenv("TP_ONNX_WRITE_EXPECTED");
  if (we && *we) {
    write_exp = fopen(we, "w");
    if (write_exp) fprintf(write_exp, "# test\treason (generated by TP_ONNX_WRITE_EXPECTED; edit reasons freely)\n");
  }
  counts ce = {0}, cs = {0}, call = {0}, me = {0}, ms = {0}, mall = {0};
  int first = 1;
  while (fgets(line, sizeof line, mf)) {
    if (first) { first = 0; continue; }
    line[strcspn(line, "\t\r\n")] = 0;
    if (!line[0]) continue;
    char dir[1500];
    snprintf(dir, sizeof dir, "%s/onnx-node/%.400s", root, line);
    run_test(line, dir, &ce, &cs, &call);
  }
  fclose(mf);
  static const char *models[] = {"mnist-8", "mnist-mlp-onnx-mlir", "ultraface-rfb-320"};
  for (int i = 0; i < 3; i++) {
    char dir[1500], name[128];
    snprintf(dir, sizeof dir, "%s/models/%s", root, models[i]);
    snprintf(name, sizeof name, "models/%s", models[i]);
    if (exists(dir)) run_test(name, dir, &me, &ms, &mall);
  }
  for (int i = 0; i < nexps; i++)
    if (!exps[i].seen) printf("note: expected failure '%s' names no test\n", exps[i].name);
  printf("onnx-node (eager): %d passed, %d failed, %d skipped\n", ce.pass, ce.fail, ce.skip);
  printf("onnx-node (stax): %d passed, %d failed, %d skipped\n", cs.pass, cs.fail, cs.skip);
  printf("(%d tests were loaded with their int inputs bound as constants)\n", nbound);
  printf("onnx-node: %d passed, %d failed, %d skipped\n", call.pass, call.fail, call.skip);
  printf("models (eager): %d passed, %d failed, %d skipped\n", me.pass, me.fail, me.skip);
  printf("models (stax): %d passed, %d failed, %d skipped\n", ms.pass, ms.fail, ms.skip);
  if (write_exp) fclose(write_exp);
  printf("%d test(s) differ from tests/onnx_expected_failures.tsv\n", bad);
  return bad ? 1 : 0;
}
