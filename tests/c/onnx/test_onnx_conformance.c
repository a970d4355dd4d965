/* test_onnx_conformance.c - ONNX's backend node tests and the real models in
 * ../shared/conformance (TP_CONFORMANCE overrides the folder), each run
 * as applications run them (tp_onnx_model: load once, every input fed at
 * run time; shapes and the values of inputs that set shapes specialize the
 * model), eagerly and on the stax backend, compared
 * with ONNX's tolerance: |got - expected| <= 1e-7 + 1e-3 |expected| (NaN
 * matches NaN), exact for ints and bools.
 *
 * Every test either passes or is listed in tests/onnx_expected_failures.tsv
 * (name TAB reason); a listed test that passes fails this test too, so the
 * list stays current. TP_ONNX_WRITE_EXPECTED=FILE writes the list of the
 * tests that do not pass now (with their reasons). Every test input is
 * fed at run time through the public API (tp_onnx_model_run), none
 * is bound into the model as a constant. Counts are printed per set
 * (MANIFEST.tsv's `set` column: core, extended). Exit 77: no data, unless
 * TP_REQUIRE_DATA=1 (set by the test command in CI), which makes it a failure. */
#include "lower/lower.h"
#include "onnx/onnx.h"
#include "onnx/tensor_pb.h"
#include "onnx/pb.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include "check.h"

#ifndef TP_SOURCE_DIR
#define TP_SOURCE_DIR "."
#endif

#define MAXT 64
#define MAXEXP 4096

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
  int isf = tp_tensor_dtype(got) == TP_F32 || tp_tensor_dtype(got) == TP_F16 || tp_tensor_dtype(got) == TP_BF16;
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

/* msg without a leading machine path ("/x/y/output_0.pb: ..." -> "output_0.pb: ..."). */
static const char *no_path(const char *msg) {
  if (msg[0] != '/') return msg;
  const char *end = strstr(msg, ": "), *p = msg;
  for (const char *q = msg; *q && (!end || q < end); q++)
    if (*q == '/') p = q + 1;
  return p;
}

/* Runs one data set on both models (tp_onnx_model: eager, stax); results
 * and reasons. A run refused as UNSUPPORTED (an op form the importer cannot
 * take, met when the specialization is imported) counts as a skip. */
static void run_set(tp_onnx_model *me, tp_onnx_model *ms, const char *dir, int *re, int *rs, char *why,
                    size_t wn) {
  tp_tensor *in[MAXT] = {0}, *want[MAXT] = {0}, *got[MAXT] = {0};
  int nin = 0, nwant = 0, ngot = 0;
  char path[1100]; /* dir is at most 1024 */
  *re = *rs = R_FAIL;
  for (int k = 0; nin < MAXT; k++) {
    snprintf(path, sizeof path, "%s/input_%d.pb", dir, k);
    if (!exists(path)) break;
    if (tp_onnx_tensor_load(path, &in[nin])) {
      snprintf(why, wn, "%s", no_path(tp_last_error()));
      goto done;
    }
    nin++;
  }
  for (; nwant < MAXT; nwant++) {
    snprintf(path, sizeof path, "%s/output_%d.pb", dir, nwant);
    if (!exists(path)) break;
    if (tp_onnx_tensor_load(path, &want[nwant])) {
      snprintf(why, wn, "%s", no_path(tp_last_error()));
      goto done;
    }
  }
  for (int pass = 0; pass < 2; pass++) {
    int *r = pass ? rs : re;
    char w[600] = "";
    tp_status s = tp_onnx_model_run(pass ? ms : me, nin, in, MAXT, got, &ngot);
    if (s) {
      ngot = 0;
      snprintf(w, sizeof w, "%s: %s", pass ? "stax" : "eager", tp_last_error());
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
    *r = w[0] ? (s == TP_ERR_UNSUPPORTED ? R_SKIP : R_FAIL) : R_PASS;
    if (w[0] && !why[0]) snprintf(why, wn, "%s", w);
    for (int k = 0; k < ngot; k++) tp_tensor_release(got[k]);
    ngot = 0;
  }
done:
  for (int k = 0; k < nin; k++) tp_tensor_release(in[k]);
  for (int k = 0; k < nwant; k++) tp_tensor_release(want[k]);
}

static FILE *write_exp;
static int bad; /* expectation mismatches */

static tp_status load_model(const char *path, tp_onnx_model **out) {
  uint8_t *b = NULL;
  size_t n = 0;
  *out = NULL;
  TP_TRY(tp_onnx_read_file(path, &b, &n));
  tp_status s = tp_onnx_model_load(b, n, out);
  tp_free(b);
  return s;
}

/* One test folder: model.onnx and its test_data_set_*, as a user runs it:
 * tp_onnx_model_load, then every input of every data set fed at run time. */
static void run_test(const char *name, const char *dir, counts *ce, counts *cs, counts *call) {
  char path[1024], why[600] = "";
  int re = R_PASS, rs = R_PASS;
  tp_onnx_model *me = NULL, *ms = NULL;
  snprintf(path, sizeof path, "%s/model.onnx", dir);
  tp_status s = load_model(path, &me);
  if (!s) s = load_model(path, &ms);
  if (!s) s = tp_onnx_model_use_backend(ms, "stax");
  if (s) {
    re = rs = s == TP_ERR_UNSUPPORTED ? R_SKIP : R_FAIL;
    snprintf(why, sizeof why, "load: %s", no_path(tp_last_error()));
  } else {
    for (int k = 0;; k++) {
      char sd[1024];
      snprintf(sd, sizeof sd, "%s/test_data_set_%d", dir, k);
      if (!exists(sd)) break;
      int e1, s1;
      run_set(me, ms, sd, &e1, &s1, why, sizeof why);
      if (e1 != R_PASS) re = e1 == R_SKIP && re == R_PASS ? R_SKIP : R_FAIL;
      if (s1 != R_PASS) rs = s1 == R_SKIP && rs == R_PASS ? R_SKIP : R_FAIL;
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
  tp_onnx_model_free(me);
  tp_onnx_model_free(ms);
}


/* ---- hand-computed Conv / MaxPool / AveragePool through the importer ----
 * Tiny ModelProtos built here with the pb writer (one node, float32 input
 * "x", optional initializers), run eagerly and with stax. These run even
 * without the conformance data. Their failures count in check.h's
 * `failures`; the conformance comparison keeps its own count (`bad`). */

typedef struct uattr { const char *name; int nints; int64_t ints[8]; int is_int; int64_t i; const char *s; } uattr;

static void pb_sub(tp_pbw *w, uint32_t num, tp_pbw *sub) {
  tp_pbw_bytes(w, num, sub->p, sub->n);
  tp_free(sub->p);
}
static void pb_str(tp_pbw *w, uint32_t num, const char *s) { tp_pbw_bytes(w, num, s, strlen(s)); }
static void pb_valueinfo(tp_pbw *g, uint32_t num, const char *name, int nd, const int64_t *sh) {
  tp_pbw vi = {0}, tp = {0}, tt = {0}, shp = {0};
  for (int i = 0; i < nd; i++) {
    tp_pbw dim = {0};
    tp_pbw_varint(&dim, 1, (uint64_t)sh[i]);
    pb_sub(&shp, 1, &dim);
  }
  tp_pbw_varint(&tt, 1, 1); /* FLOAT */
  pb_sub(&tt, 2, &shp);
  pb_sub(&tp, 1, &tt);
  pb_str(&vi, 1, name);
  pb_sub(&vi, 2, &tp);
  pb_sub(g, num, &vi);
}
/* float32, or int64 (i64: the values are whole numbers given as floats) */
static void pb_init(tp_pbw *g, const char *name, int nd, const int64_t *sh, const float *v, int i64) {
  tp_pbw t = {0};
  int64_t n = 1, iv[16];
  for (int i = 0; i < nd; i++) tp_pbw_varint(&t, 1, (uint64_t)sh[i]), n *= sh[i];
  tp_pbw_varint(&t, 2, i64 ? 7 : 1);
  pb_str(&t, 8, name);
  if (i64)
    for (int64_t i = 0; i < n && i < 16; i++) iv[i] = (int64_t)v[i];
  if (i64) tp_pbw_bytes(&t, 9, iv, sizeof(int64_t) * (size_t)(n < 16 ? n : 16));
  else tp_pbw_bytes(&t, 9, v, sizeof(float) * (size_t)n);
  pb_sub(g, 5, &t);
}

/* One-node model: op(x, inits...) -> y. An init with ind[i] < 0 is int64
 * of rank -ind[i]. */
static int unit_opset = 17; /* the model's default-domain opset */

static uint8_t *unit_model(const char *op, int xnd, const int64_t *xsh, int ninit, const char *const *inames,
                           const int *ind, const int64_t (*insh)[8], const float *const *iv, int nattr,
                           const uattr *at, size_t *len) {
  tp_pbw mdl = {0}, g = {0}, nd = {0}, os = {0};
  pb_str(&nd, 1, "x");
  for (int i = 0; i < ninit; i++) pb_str(&nd, 1, inames[i]);
  pb_str(&nd, 2, "y");
  pb_str(&nd, 3, "n");
  pb_str(&nd, 4, op);
  for (int i = 0; i < nattr; i++) {
    tp_pbw a = {0};
    pb_str(&a, 1, at[i].name);
    if (at[i].s) {
      tp_pbw_bytes(&a, 4, at[i].s, strlen(at[i].s));
      tp_pbw_varint(&a, 20, 3);
    } else if (at[i].is_int) {
      tp_pbw_varint(&a, 3, (uint64_t)at[i].i);
      tp_pbw_varint(&a, 20, 2);
    } else {
      for (int k = 0; k < at[i].nints; k++) tp_pbw_varint(&a, 8, (uint64_t)at[i].ints[k]);
      tp_pbw_varint(&a, 20, 7);
    }
    pb_sub(&nd, 5, &a);
  }
  pb_sub(&g, 1, &nd);
  pb_str(&g, 2, "unit");
  for (int i = 0; i < ninit; i++) pb_init(&g, inames[i], ind[i] < 0 ? -ind[i] : ind[i], insh[i], iv[i], ind[i] < 0);
  pb_valueinfo(&g, 11, "x", xnd, xsh);
  pb_valueinfo(&g, 12, "y", 0, NULL);
  tp_pbw_varint(&mdl, 1, 8);
  pb_str(&os, 1, "");
  tp_pbw_varint(&os, 2, (uint64_t)unit_opset);
  pb_sub(&mdl, 8, &os);
  pb_sub(&mdl, 7, &g);
  *len = mdl.n;
  return (uint8_t *)mdl.p;
}

/* Loads the model, runs it on x (eager and stax), compares with want. */
static void unit_run(const char *what, uint8_t *bytes, size_t len, int xnd, const int64_t *xsh, const float *x,
                     int ynd, const int64_t *ysh, const float *want) {
  tp_graph *g = NULL;
  tp_plan *pl = NULL;
  tp_tensor *in = NULL, *got[4] = {0};
  int ngot = 0;
  tp_status s = tp_onnx_load(bytes, len, &g);
  tp_free(bytes);
  if (s) {
    FAILF("unit %s: load: %s", what, tp_last_error());
    return;
  }
  tp_tensor_new(TP_F32, xnd, xsh, x, &in);
  for (int pass = 0; pass < 2; pass++) {
    if (pass && tp_lower(g, NULL, &pl)) {
      FAILF("unit %s: lower: %s", what, tp_last_error());
      break;
    }
    s = pass ? tp_plan_run(pl, 1, &in, 4, got, &ngot) : tp_graph_run(g, 1, &in, 4, got, &ngot);
    if (s || ngot != 1) {
      FAILF("unit %s (%s): run: %s", what, pass ? "stax" : "eager", s ? tp_last_error() : "outputs");
    } else {
      tp_tensor *y = got[0];
      int ok = tp_tensor_ndim(y) == ynd;
      for (int i = 0; ok && i < ynd; i++) ok = tp_tensor_shape(y)[i] == ysh[i];
      int64_t n = ok ? tp_tensor_numel(y) : 0;
      for (int64_t i = 0; ok && i < n; i++)
        if (fabs(tp_tensor_get_f64(y, i) - want[i]) > 1e-5) {
          FAILF("unit %s (%s): element %lld is %g, expected %g", what, pass ? "stax" : "eager",
                (long long)i, tp_tensor_get_f64(y, i), (double)want[i]);
          ok = 0;
        }
      if (!ok && n == 0) {
        char b[96];
        FAILF("unit %s (%s): shape %s", what, pass ? "stax" : "eager",
              tp_shape_str(tp_tensor_ndim(y), tp_tensor_shape(y), b, sizeof b));
      }
    }
    for (int k = 0; k < ngot; k++) tp_tensor_release(got[k]);
    ngot = 0;
  }
  tp_tensor_release(in);
  tp_plan_free(pl);
  tp_graph_free(g);
}

static void unit_expect_error(const char *what, uint8_t *bytes, size_t len, const char *needle) {
  tp_graph *g = NULL;
  tp_status s = tp_onnx_load(bytes, len, &g);
  tp_free(bytes);
  if (!s || !strstr(tp_last_error(), needle)) {
    FAILF("unit %s: expected an error naming '%s', got %s: %s", what, needle, s ? "error" : "success",
          s ? tp_last_error() : "");
  }
  tp_graph_free(g);
}

static void unit_tests(void) {
  size_t len;
  uint8_t *b;
  /* Conv 3x3 input, 2x2 kernel, pads 1, strides 2, bias 1:
   * padded windows [0 0;0 1] [0 0;2 3] [0 4;0 7] [5 6;8 9] with W [1 2;3 4] */
  {
    static const int64_t xs[4] = {1, 1, 3, 3}, ys[4] = {1, 1, 2, 2};
    static const float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 2, 3, 4}, bias[1] = {1};
    static const float want[4] = {5, 19, 37, 78};
    const char *nm[2] = {"w", "b"};
    int nd[2] = {4, 1};
    int64_t sh[2][8] = {{1, 1, 2, 2}, {1}};
    const float *iv[2] = {w, bias};
    uattr at[2] = {{"pads", 4, {1, 1, 1, 1}, 0, 0, NULL}, {"strides", 2, {2, 2}, 0, 0, NULL}};
    b = unit_model("Conv", 4, xs, 2, nm, nd, (const int64_t(*)[8])sh, iv, 2, at, &len);
    unit_run("Conv pads+strides+bias", b, len, 4, xs, x, 4, ys, want);
  }
  /* DeformConv, 1x1 kernel of weight 2 on x = [1 2; 3 4], every tap moved
   * down by half a row: (0.5, 0) = 2, (0.5, 1) = 3, (1.5, 0) = 3 / 2 (row 2 is
   * outside: zero), (1.5, 1) = 4 / 2; times 2 */
  {
    static const int64_t xs[4] = {1, 1, 2, 2}, ys[4] = {1, 1, 2, 2};
    static const float x[4] = {1, 2, 3, 4}, w[1] = {2}, off[8] = {0.5f, 0.5f, 0.5f, 0.5f, 0, 0, 0, 0};
    static const float want[4] = {4, 6, 3, 4};
    const char *nm[2] = {"w", "off"};
    int nd[2] = {4, 4};
    int64_t sh[2][8] = {{1, 1, 1, 1}, {1, 2, 2, 2}};
    const float *iv[2] = {w, off};
    b = unit_model("DeformConv", 4, xs, 2, nm, nd, (const int64_t(*)[8])sh, iv, 0, NULL, &len);
    unit_run("DeformConv offsets", b, len, 4, xs, x, 4, ys, want);
    uattr bad[1] = {{"offset_group", 0, {0}, 1, 2, NULL}};
    b = unit_model("DeformConv", 4, xs, 2, nm, nd, (const int64_t(*)[8])sh, iv, 1, bad, &len);
    unit_expect_error("DeformConv bad offset_group", b, len, "offset_group 2 do not divide C 1");
  }
  /* Col2Im of a [1, 2 (1x2 block), 2 blocks] input into a 1x3 image: the
   * blocks at columns 0-1 and 1-2 overlap in column 1: [1, 2 + 3, 4] */
  {
    static const int64_t xs[3] = {1, 2, 2}, ys[4] = {1, 1, 1, 3};
    static const float x[4] = {1, 2, 3, 4}, img[2] = {1, 3}, blk[2] = {1, 2}, want[3] = {1, 5, 4};
    const char *nm[2] = {"image_shape", "block_shape"};
    int nd[2] = {-1, -1};
    int64_t sh[2][8] = {{2}, {2}};
    const float *iv[2] = {img, blk};
    b = unit_model("Col2Im", 3, xs, 2, nm, nd, (const int64_t(*)[8])sh, iv, 0, NULL, &len);
    unit_run("Col2Im overlapping blocks", b, len, 3, xs, x, 4, ys, want);
  }
  /* AffineGrid, size [1, 1, 2, 2], align_corners 0: base points x, y in
   * {-0.5, 0.5}; theta [[2 0 .5] [0 1 0]] maps x to 2x + .5 */
  {
    static const int64_t xs[3] = {1, 2, 3}, ys[4] = {1, 2, 2, 2};
    static const float theta[6] = {2, 0, 0.5f, 0, 1, 0}, size[4] = {1, 1, 2, 2};
    static const float want[8] = {-0.5f, -0.5f, 1.5f, -0.5f, -0.5f, 0.5f, 1.5f, 0.5f};
    const char *nm[1] = {"size"};
    int nd[1] = {-1};
    int64_t sh[1][8] = {{4}};
    const float *iv[1] = {size};
    b = unit_model("AffineGrid", 3, xs, 1, nm, nd, (const int64_t(*)[8])sh, iv, 0, NULL, &len);
    unit_run("AffineGrid", b, len, 3, xs, theta, 4, ys, want);
  }
  /* ReduceMean with an empty `axes` attribute (no ints: all axes, as the
   * fuzzer found; the reader used to memcpy from a NULL list) */
  {
    static const int64_t xs[2] = {2, 3};
    static const float x[6] = {1, 2, 3, 4, 5, 6}, want[1] = {3.5f};
    uattr at[2] = {{"axes", 0, {0}, 0, 0, NULL}, {"keepdims", 0, {0}, 1, 0, NULL}};
    b = unit_model("ReduceMean", 2, xs, 0, NULL, NULL, NULL, NULL, 2, at, &len);
    unit_run("ReduceMean axes=[]", b, len, 2, xs, x, 0, NULL, want);
  }
  /* Conv group 2 (depthwise): ch0 [1 2;3 4] * [1 1;1 1] = 10, ch1 [5 6;7 8] * [1 0;0 1] = 13 */
  {
    static const int64_t xs[4] = {1, 2, 2, 2}, ys[4] = {1, 2, 1, 1};
    static const float x[8] = {1, 2, 3, 4, 5, 6, 7, 8}, w[8] = {1, 1, 1, 1, 1, 0, 0, 1};
    static const float want[2] = {10, 13};
    const char *nm[1] = {"w"};
    int nd[1] = {4};
    int64_t sh[1][8] = {{2, 1, 2, 2}};
    const float *iv[1] = {w};
    uattr at[1] = {{"group", 0, {0}, 1, 2, NULL}};
    b = unit_model("Conv", 4, xs, 1, nm, nd, (const int64_t(*)[8])sh, iv, 1, at, &len);
    unit_run("Conv depthwise group=2", b, len, 4, xs, x, 4, ys, want);
    /* group 3 does not divide 2 channels: an error naming the group */
    uattr bad[1] = {{"group", 0, {0}, 1, 3, NULL}};
    b = unit_model("Conv", 4, xs, 1, nm, nd, (const int64_t(*)[8])sh, iv, 1, bad, &len);
    unit_expect_error("Conv bad group", b, len, "(Conv): group 3");
  }
  /* MaxPool 2x2, stride 1, pads end 1 (-inf):
   * [1 -2 3; 4 5 -6; -7 8 9] -> [5 5 3; 8 9 9; 8 9 9] */
  {
    static const int64_t xs[4] = {1, 1, 3, 3}, ys[4] = {1, 1, 3, 3};
    static const float x[9] = {1, -2, 3, 4, 5, -6, -7, 8, 9};
    static const float want[9] = {5, 5, 3, 8, 9, 9, 8, 9, 9};
    uattr at[2] = {{"kernel_shape", 2, {2, 2}, 0, 0, NULL}, {"pads", 4, {0, 0, 1, 1}, 0, 0, NULL}};
    b = unit_model("MaxPool", 4, xs, 0, NULL, NULL, NULL, NULL, 2, at, &len);
    unit_run("MaxPool pads", b, len, 4, xs, x, 4, ys, want);
    /* ceil_mode, stride 2, no pads: windows [0:2],[2:3] per axis -> [5 3; 8 9] */
    static const int64_t ys2[4] = {1, 1, 2, 2};
    static const float want2[4] = {5, 3, 8, 9};
    uattr at2[3] = {{"kernel_shape", 2, {2, 2}, 0, 0, NULL}, {"strides", 2, {2, 2}, 0, 0, NULL},
                    {"ceil_mode", 0, {0}, 1, 1, NULL}};
    b = unit_model("MaxPool", 4, xs, 0, NULL, NULL, NULL, NULL, 3, at2, &len);
    unit_run("MaxPool ceil_mode", b, len, 4, xs, x, 4, ys2, want2);
    /* AveragePool of the same, pads end 1: exclude pad (default) vs count_include_pad */
    static const float want3[9] = {2, 0, -1.5, 2.5, 4, 1.5, 0.5, 8.5, 9};
    b = unit_model("AveragePool", 4, xs, 0, NULL, NULL, NULL, NULL, 2, at, &len);
    unit_run("AveragePool pads", b, len, 4, xs, x, 4, ys, want3);
    static const float want4[9] = {2, 0, -0.75, 2.5, 4, 0.75, 0.25, 4.25, 2.25};
    uattr at4[3] = {at[0], at[1], {"count_include_pad", 0, {0}, 1, 1, NULL}};
    b = unit_model("AveragePool", 4, xs, 0, NULL, NULL, NULL, NULL, 3, at4, &len);
    unit_run("AveragePool count_include_pad", b, len, 4, xs, x, 4, ys, want4);
    /* a kernel larger than the padded input is an error, not a crash */
    uattr big[1] = {{"kernel_shape", 2, {5, 5}, 0, 0, NULL}};
    b = unit_model("MaxPool", 4, xs, 0, NULL, NULL, NULL, NULL, 1, big, &len);
    unit_expect_error("MaxPool kernel too large", b, len, "(MaxPool): kernel extent 5");
  }
  /* DFT of the real [1, 2, 3, 4] (axis 1): X0 = 10, X1 = -2 + 2i, X2 = -2, X3 = -2 - 2i; the
   * inverse onesided (irfft, N = 2 (3 - 1) = 4) of [10, -2 + 2i, -2] gives [1, 2, 3, 4] back */
  {
    static const int64_t xs[3] = {1, 4, 1}, ys[3] = {1, 4, 2}, xs2[3] = {1, 3, 2}, ys2[3] = {1, 4, 1};
    static const float x[4] = {1, 2, 3, 4}, want[8] = {10, 0, -2, 2, -2, 0, -2, -2};
    static const float x2[6] = {10, 0, -2, 2, -2, 0}, want2[4] = {1, 2, 3, 4};
    b = unit_model("DFT", 3, xs, 0, NULL, NULL, NULL, NULL, 0, NULL, &len);
    unit_run("DFT 4-point", b, len, 3, xs, x, 3, ys, want);
    uattr inv[2] = {{"inverse", 0, {0}, 1, 1, NULL}, {"onesided", 0, {0}, 1, 1, NULL}};
    b = unit_model("DFT", 3, xs2, 0, NULL, NULL, NULL, NULL, 2, inv, &len);
    unit_run("DFT irfft", b, len, 3, xs2, x2, 3, ys2, want2);
    uattr bad[1] = {{"axis", 0, {0}, 1, 2, NULL}};
    b = unit_model("DFT", 3, xs, 0, NULL, NULL, NULL, NULL, 1, bad, &len);
    unit_expect_error("DFT axis 2", b, len, "(DFT): axis 2 is out of range");
  }
  /* Celu (alpha 1): e^-1 - 1, 0, 2; Mish: 0, tanh(ln(1 + e)); MVN over [1, 2, 3, 4]:
   * (x - 2.5) / sqrt(1.25); Det [[1, 2], [3, 4]] = -2 */
  {
    static const int64_t xs[1] = {3}, xs2[1] = {2}, xs4[4] = {1, 1, 2, 2}, xsd[2] = {2, 2};
    static const float x[3] = {-1, 0, 2}, want[3] = {-0.63212055882855767f, 0, 2};
    static const float x2[2] = {0, 1}, want2[2] = {0, 0.86509838826f};
    static const float x4[4] = {1, 2, 3, 4}, want4[4] = {-1.3416407865f, -0.4472135955f, 0.4472135955f, 1.3416407865f};
    static const float wantd[1] = {-2};
    b = unit_model("Celu", 1, xs, 0, NULL, NULL, NULL, NULL, 0, NULL, &len);
    unit_run("Celu", b, len, 1, xs, x, 1, xs, want);
    b = unit_model("Mish", 1, xs2, 0, NULL, NULL, NULL, NULL, 0, NULL, &len);
    unit_run("Mish", b, len, 1, xs2, x2, 1, xs2, want2);
    b = unit_model("MeanVarianceNormalization", 4, xs4, 0, NULL, NULL, NULL, NULL, 0, NULL, &len);
    unit_run("MeanVarianceNormalization", b, len, 4, xs4, x4, 4, xs4, want4);
    b = unit_model("Det", 2, xsd, 0, NULL, NULL, NULL, NULL, 0, NULL, &len);
    unit_run("Det", b, len, 2, xsd, x4, 0, NULL, wantd);
  }
  /* Attention (opset 23), grouped-query and causal: Q [1, 2 heads, 2, 1]
   * (the graph input), one KV head K = [1, 2], V = [10, 20], scale 1.
   * Query 0 sees key 0 only: 10. Query 1 of head 0 (q 0): scores 0, 0 ->
   * 15; of head 1 (q ln 2): scores ln 2, 2 ln 2 -> weights 2:4 -> 50/3. */
  unit_opset = 23;
  {
    static const int64_t xs[4] = {1, 2, 2, 1};
    const float x[4] = {1, 0, 0, (float)log(2.0)};
    static const float k[2] = {1, 2}, v[2] = {10, 20}, want[4] = {10, 15, 10, 50.0f / 3};
    const char *nm[2] = {"k", "v"};
    int nd[2] = {4, 4};
    int64_t sh[2][8] = {{1, 1, 2, 1}, {1, 1, 2, 1}};
    const float *iv[2] = {k, v};
    uattr at[1] = {{"is_causal", 0, {0}, 1, 1, NULL}}; /* scale: 1 / sqrt(head size 1) */
    b = unit_model("Attention", 4, xs, 2, nm, nd, (const int64_t(*)[8])sh, iv, 1, at, &len);
    unit_run("Attention GQA causal", b, len, 4, xs, x, 4, xs, want);
    /* 3 query heads over 2 KV heads: refused naming both */
    static const int64_t xs3[4] = {1, 3, 2, 1};
    int64_t sh2[2][8] = {{1, 2, 2, 1}, {1, 2, 2, 1}};
    static const float k2[4] = {1, 2, 3, 4};
    const float *iv2[2] = {k2, k2};
    b = unit_model("Attention", 4, xs3, 2, nm, nd, (const int64_t(*)[8])sh2, iv2, 0, NULL, &len);
    unit_expect_error("Attention head counts", b, len, "(Attention): Q's 3 heads are not a multiple of K/V's 2 heads");
    /* 3-D inputs without the head counts */
    static const int64_t xs4[3] = {1, 2, 4};
    int nd3[2] = {3, 3};
    int64_t sh3[2][8] = {{1, 2, 4}, {1, 2, 4}};
    static const float k3[8] = {0};
    const float *iv3[2] = {k3, k3};
    b = unit_model("Attention", 3, xs4, 2, nm, nd3, (const int64_t(*)[8])sh3, iv3, 0, NULL, &len);
    unit_expect_error("Attention 3-D heads", b, len, "need the q_num_heads and kv_num_heads");
    /* a mask of 3 query rows for 2 queries */
    const char *nm3[3] = {"k", "v", "mask"};
    int nd4[3] = {4, 4, 2};
    int64_t sh4[3][8] = {{1, 1, 2, 1}, {1, 1, 2, 1}, {3, 2}};
    static const float mk[6] = {0};
    const float *iv4[3] = {k, v, mk};
    b = unit_model("Attention", 4, xs, 3, nm3, nd4, (const int64_t(*)[8])sh4, iv4, 0, NULL, &len);
    unit_expect_error("Attention mask shape", b, len, "attn_mask 'mask' has shape [3,2], which does not broadcast");
  }
  /* RotaryEmbedding without position_ids: cos 0, sin 1 turns (1, 0) into (0, 1) */
  {
    static const int64_t xs[4] = {1, 1, 1, 2};
    static const float x[2] = {1, 0}, c[1] = {0}, sn[1] = {1}, want[2] = {0, 1};
    const char *nm[2] = {"c", "s"};
    int nd[2] = {3, 3};
    int64_t sh[2][8] = {{1, 1, 1}, {1, 1, 1}};
    const float *iv[2] = {c, sn};
    b = unit_model("RotaryEmbedding", 4, xs, 2, nm, nd, (const int64_t(*)[8])sh, iv, 0, NULL, &len);
    unit_run("RotaryEmbedding 90 degrees", b, len, 4, xs, x, 4, xs, want);
    uattr odd[1] = {{"rotary_embedding_dim", 0, {0}, 1, 1, NULL}};
    b = unit_model("RotaryEmbedding", 4, xs, 2, nm, nd, (const int64_t(*)[8])sh, iv, 1, odd, &len);
    unit_expect_error("RotaryEmbedding odd dim", b, len, "(RotaryEmbedding): rotary_embedding_dim 1 must be even");
  }
  /* TensorScatter (opset 24), no write_indices (0): past [1, 4, 1] = 1 2 3 4,
   * update 8 9 -> 8 9 3 4 */
  unit_opset = 24;
  {
    static const int64_t xs[3] = {1, 4, 1};
    static const float x[4] = {1, 2, 3, 4}, u[2] = {8, 9}, want[4] = {8, 9, 3, 4};
    const char *nm[1] = {"u"};
    int nd[1] = {3};
    int64_t sh[1][8] = {{1, 2, 1}};
    const float *iv[1] = {u};
    b = unit_model("TensorScatter", 3, xs, 1, nm, nd, (const int64_t(*)[8])sh, iv, 0, NULL, &len);
    unit_run("TensorScatter linear", b, len, 3, xs, x, 3, xs, want);
    uattr at[1] = {{"axis", 0, {0}, 1, 0, NULL}};
    b = unit_model("TensorScatter", 3, xs, 1, nm, nd, (const int64_t(*)[8])sh, iv, 1, at, &len);
    unit_expect_error("TensorScatter axis 0", b, len, "(TensorScatter): axis 0 is the batch axis");
  }
  /* QuantizeLinear (opset 21): x / 0.5 = -2 0.5 1.5 2.5 600 2 -> round half
   * to even, saturate to uint8: 0 0 2 2 255 2; blocked [1, 4] with scales
   * 1 2 (block 2): 1 2 1.5 2 -> 1 2 2 2; bad scales and shapes name the node */
  unit_opset = 21;
  {
    static const int64_t xs[1] = {6}, x2s[2] = {1, 4}, x3s[2] = {2, 3};
    static const float x[6] = {-1, 0.25f, 0.75f, 1.25f, 300, 1}, want[6] = {0, 0, 2, 2, 255, 2};
    static const float half[1] = {0.5f}, zero[1] = {0}, neg[1] = {-1}, nanv[1] = {NAN};
    static const float x2[4] = {1, 2, 3, 4}, sc2[2] = {1, 2}, want2[4] = {1, 2, 2, 2}, sc3[2] = {1, 1};
    const char *nm[1] = {"s"};
    int nd0[1] = {0}, nd2[1] = {2}, nd1[1] = {1};
    int64_t sh0[1][8] = {{0}}, sh2[1][8] = {{1, 2}}, sh1[1][8] = {{2}};
    const float *iv[1] = {half};
    b = unit_model("QuantizeLinear", 1, xs, 1, nm, nd0, (const int64_t(*)[8])sh0, iv, 0, NULL, &len);
    unit_run("QuantizeLinear round half even, saturate", b, len, 1, xs, x, 1, xs, want);
    static const char *const bad_name[3] = {"is 0;", "is -1;", "is nan;"};
    const float *bad[3] = {zero, neg, nanv};
    for (int k = 0; k < 3; k++) {
      char needle[96];
      snprintf(needle, sizeof needle, "node 'n' (QuantizeLinear): y_scale element 0 %s a scale must be finite and > 0",
               bad_name[k]);
      iv[0] = bad[k];
      b = unit_model("QuantizeLinear", 1, xs, 1, nm, nd0, (const int64_t(*)[8])sh0, iv, 0, NULL, &len);
      unit_expect_error("QuantizeLinear bad scale", b, len, needle);
    }
    uattr blk[2] = {{"axis", 0, {0}, 1, 1, NULL}, {"block_size", 0, {0}, 1, 2, NULL}};
    iv[0] = sc2;
    b = unit_model("QuantizeLinear", 2, x2s, 1, nm, nd2, (const int64_t(*)[8])sh2, iv, 2, blk, &len);
    unit_run("QuantizeLinear blocked", b, len, 2, x2s, x2, 2, x2s, want2);
    iv[0] = sc3;
    b = unit_model("QuantizeLinear", 2, x3s, 1, nm, nd1, (const int64_t(*)[8])sh1, iv, 0, NULL, &len);
    unit_expect_error("QuantizeLinear per-axis scale shape", b, len,
                      "(QuantizeLinear): y_scale has shape [2]; per-axis quantization along axis 1 of [2,3] needs [3]");
    uattr ax[1] = {{"axis", 0, {0}, 1, 5, NULL}};
    b = unit_model("QuantizeLinear", 2, x3s, 1, nm, nd1, (const int64_t(*)[8])sh1, iv, 1, ax, &len);
    unit_expect_error("QuantizeLinear axis out of range", b, len, "(QuantizeLinear): axis 5");
  }
  unit_opset = 17;
  printf("%s unit Conv/MaxPool/AveragePool/DFT/Celu/Mish/MVN/Det/Attention/RotaryEmbedding/TensorScatter/QuantizeLinear (hand-computed)\n", failures ? "FAIL" : "ok  ");
}

int main(void) {
  char root[1024], path[1200], line[4096];
  const char *env = getenv("TP_CONFORMANCE");
  const char *req = getenv("TP_REQUIRE_DATA");
  if (env && *env) snprintf(root, sizeof root, "%s", env);
  else snprintf(root, sizeof root, "%s/../shared/conformance", TP_SOURCE_DIR);
  snprintf(path, sizeof path, "%s/onnx-node/MANIFEST.tsv", root);
  unit_tests();
  FILE *mf = fopen(path, "r");
  if (!mf) {
    if (req && *req && strcmp(req, "0")) {
      printf("FAIL: conformance data not found (%s) and TP_REQUIRE_DATA is set\n", path);
      return 1;
    }
    printf("conformance data not found (%s); set TP_CONFORMANCE: skipped\n", path);
    return failures ? 1 : 77;
  }
  load_expected(TP_SOURCE_DIR "/tests/onnx_expected_failures.tsv");
  const char *we = getenv("TP_ONNX_WRITE_EXPECTED");
  if (we && *we) {
    write_exp = fopen(we, "w");
    if (write_exp) fprintf(write_exp, "# test\treason (generated by TP_ONNX_WRITE_EXPECTED; edit reasons freely)\n");
  }
  /* per set (MANIFEST.tsv's last column): [0] core, [1] extended */
  static const char *const set_names[2] = {"core", "extended"};
  counts ce[2] = {{0}}, cs[2] = {{0}}, call[2] = {{0}}, me = {0}, ms = {0}, mall = {0};
  int first = 1;
  while (fgets(line, sizeof line, mf)) {
    if (first) { first = 0; continue; }
    line[strcspn(line, "\r\n")] = 0;
    char *last = strrchr(line, '\t');
    int set = last && !strcmp(last + 1, "extended") ? 1 : 0;
    line[strcspn(line, "\t")] = 0;
    if (!line[0]) continue;
    char dir[1500];
    snprintf(dir, sizeof dir, "%s/onnx-node/%.400s", root, line);
    run_test(line, dir, &ce[set], &cs[set], &call[set]);
  }
  fclose(mf);
  static const char *models[] = {"mnist-8", "mnist-mlp-onnx-mlir", "ultraface-rfb-320"};
  for (int i = 0; i < 3; i++) {
    char dir[1500], name[128];
    snprintf(dir, sizeof dir, "%s/models/%s", root, models[i]);
    snprintf(name, sizeof name, "models/%s", models[i]);
    if (exists(dir)) run_test(name, dir, &me, &ms, &mall);
    else if (req && *req && strcmp(req, "0")) {
      printf("FAIL %s: model folder missing and TP_REQUIRE_DATA is set\n", name);
      bad++;
    }
  }
  for (int i = 0; i < nexps; i++)
    if (!exps[i].seen) {
      printf("expected failure '%s' names no test: remove it from the list\n", exps[i].name);
      bad++;
    }
  /* Every input of every test is fed at run time (none is bound into the
   * model as a constant); "skipped" = refused at load as unsupported. */
  for (int k = 0; k < 2; k++) {
    printf("onnx-node %s (eager): %d passed, %d failed, %d skipped\n", set_names[k], ce[k].pass, ce[k].fail, ce[k].skip);
    printf("onnx-node %s (stax): %d passed, %d failed, %d skipped\n", set_names[k], cs[k].pass, cs[k].fail, cs[k].skip);
    printf("onnx-node %s: %d passed, %d failed, %d skipped\n", set_names[k], call[k].pass, call[k].fail, call[k].skip);
  }
  printf("models (eager): %d passed, %d failed, %d skipped\n", me.pass, me.fail, me.skip);
  printf("models (stax): %d passed, %d failed, %d skipped\n", ms.pass, ms.fail, ms.skip);
  if (write_exp) fclose(write_exp);
  printf("%d test(s) differ from tests/onnx_expected_failures.tsv\n", bad);
  return bad || failures ? 1 : 0;
}
