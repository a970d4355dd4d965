/* op_expect.h - what the hand-computed operator tests share
 * (test_ops.c, test_ops_seq.c): tensors made from literals and released at
 * the end of each test, calls of tp_op_call, and EXPECT / ERR checks with
 * their tolerances, all reporting through check.h. Static helpers: each
 * test file uses some of them. */
#ifndef TP_TESTS_OP_EXPECT_H
#define TP_TESTS_OP_EXPECT_H
#include "ops/ops.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#pragma GCC diagnostic ignored "-Wunused-function"

/* ---- tensor bookkeeping: everything made in a test is released at its end ---- */
static tp_tensor *pool[4096];
static int npool;
static tp_tensor *track(tp_tensor *t) {
  if (t) {
    if (npool < (int)(sizeof pool / sizeof pool[0])) pool[npool++] = t;
    else tp_tensor_release(t); /* never happens in practice */
  }
  return t;
}
static void release_all(void) {
  while (npool) tp_tensor_release(pool[--npool]);
}

#define NARGS_I64(...) ((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)))
#define SH(...) NARGS_I64(__VA_ARGS__), (const int64_t[]){__VA_ARGS__}

static tp_tensor *mk_(int line, tp_dtype dt, int nd, const int64_t *shape, const void *data) {
  tp_tensor *t = NULL;
  tp_status s = tp_tensor_new(dt, nd, shape, data, &t);
  if (s != TP_OK) {
    FAILF_AT(line, "tp_tensor_new failed: %s: %s", tp_status_name(s), tp_last_error());
    return NULL;
  }
  return track(t);
}
/* F32((2,2), 1,2,3,4) */
#define F32(shp, ...) mk_(__LINE__, TP_F32, SH shp, (const float[]){__VA_ARGS__})
#define I32(shp, ...) mk_(__LINE__, TP_I32, SH shp, (const int32_t[]){__VA_ARGS__})
#define I64(shp, ...) mk_(__LINE__, TP_I64, SH shp, (const int64_t[]){__VA_ARGS__})
#define B8(shp, ...) mk_(__LINE__, TP_BOOL, SH shp, (const uint8_t[]){__VA_ARGS__})
#define EMPTY(dt, shp) mk_(__LINE__, dt, SH shp, NULL)

static tp_tensor *f0(float v) { /* a strong 0-d float32 tensor */
  return mk_(__LINE__, TP_F32, 0, NULL, &v);
}
static tp_tensor *wint(double v) {
  tp_tensor *t = NULL;
  if (tp_scalar(v, 1, &t) != TP_OK) FAILF("tp_scalar: %s", tp_last_error());
  return track(t);
}
static tp_tensor *wflt(double v) {
  tp_tensor *t = NULL;
  if (tp_scalar(v, 0, &t) != TP_OK) FAILF("tp_scalar: %s", tp_last_error());
  return track(t);
}

static tp_attrs A0(void) {
  tp_attrs a;
  tp_attrs_init(&a);
  return a;
}
static tp_attrs Adim(int64_t d) {
  tp_attrs a = A0();
  a.dim = d;
  return a;
}
static tp_attrs Adims(int n, const int64_t *d, int keepdim) {
  tp_attrs a = A0();
  a.nints = n;
  for (int i = 0; i < n; i++) a.ints[i] = d[i];
  a.keepdim = keepdim;
  return a;
}
static tp_attrs Aslice(int64_t dim, int64_t start, int64_t end, int64_t step) {
  tp_attrs a = A0();
  a.dim = dim;
  a.start = start;
  a.end = end;
  a.step = step;
  return a;
}
static tp_attrs Acast(tp_dtype d) {
  tp_attrs a = A0();
  a.dtype = d;
  return a;
}

static tp_tensor *call_(int line, tp_op op, int nin, tp_tensor *const *in, const tp_attrs *at) {
  tp_tensor *y = (tp_tensor *)0x1;
  tp_status s = tp_op_call(op, nin, in, at, &y);
  if (s != TP_OK) {
    FAILF_AT(line, "%s failed: %s: %s", tp_op_name(op), tp_status_name(s), tp_last_error());
    return NULL;
  }
  if (!y) {
    FAILF_AT(line, "%s returned TP_OK with a NULL output", tp_op_name(op));
    return NULL;
  }
  return track(y);
}
#define NARGS_T(...) ((int)(sizeof((tp_tensor *[]){__VA_ARGS__}) / sizeof(tp_tensor *)))
/* OP(TP_OP_ADD, NULL, a, b) */
#define OP(op, at, ...) call_(__LINE__, op, NARGS_T(__VA_ARGS__), (tp_tensor *[]){__VA_ARGS__}, at)
#define OPA(op, attrs, ...)                                                            \
  ({                                                                                   \
    tp_attrs at_ = (attrs);                                                            \
    call_(__LINE__, op, NARGS_T(__VA_ARGS__), (tp_tensor *[]){__VA_ARGS__}, &at_);     \
  })

/* ---- reading and comparing ---- */
static int read_all(tp_tensor *t, double *out, int64_t max) {
  int64_t n = tp_tensor_numel(t);
  if (n > max) return -1;
  size_t es = tp_dtype_size(tp_tensor_dtype(t));
  void *buf = malloc((size_t)(n ? n : 1) * es);
  if (tp_tensor_read(t, buf, (size_t)n * es) != TP_OK) {
    free(buf);
    return -2;
  }
  for (int64_t i = 0; i < n; i++) switch (tp_tensor_dtype(t)) {
      case TP_F32: out[i] = ((float *)buf)[i]; break;
      case TP_I32: out[i] = ((int32_t *)buf)[i]; break;
      case TP_I64: out[i] = (double)((int64_t *)buf)[i]; break;
      default: out[i] = ((uint8_t *)buf)[i]; break;
    }
  free(buf);
  return (int)n;
}

static const char *shape_s(int nd, const int64_t *sh, char *buf) {
  return tp_shape_str(nd, sh, buf, 128);
}

/* tolerance for float values: relative + absolute; exact for ints */
static double tol_rel = 2e-6, tol_abs = 1e-6;

static int close_enough(double got, double want, tp_dtype dt) {
  if (isnan(want)) return isnan(got);
  if (isinf(want)) return got == want;
  if (dt != TP_F32) return got == want;
  return fabs(got - want) <= tol_abs + tol_rel * fabs(want);
}

static void expect_(int line, const char *expr, tp_tensor *t, tp_dtype dt, int nd,
                    const int64_t *shape, const double *want, int nwant) {
  checks++;
  char b0[128], b1[128];
  if (!t) {
    FAILF_AT(line, "%s: no tensor (an earlier call failed)", expr);
    return;
  }
  if (tp_tensor_dtype(t) != dt) {
    FAILF_AT(line, "%s: dtype %s, expected %s", expr, tp_dtype_name(tp_tensor_dtype(t)),
             tp_dtype_name(dt));
    return;
  }
  int ok = tp_tensor_ndim(t) == nd;
  for (int i = 0; ok && i < nd; i++) ok = tp_tensor_shape(t)[i] == shape[i];
  if (!ok) {
    FAILF_AT(line, "%s: shape %s, expected %s", expr,
             shape_s(tp_tensor_ndim(t), tp_tensor_shape(t), b0), shape_s(nd, shape, b1));
    return;
  }
  if (nwant < 0) return; /* shape/dtype only */
  double got[1024];
  int n = read_all(t, got, 1024);
  if (n != nwant) {
    FAILF_AT(line, "%s: read %d values, expected %d", expr, n, nwant);
    return;
  }
  for (int i = 0; i < n; i++)
    if (!close_enough(got[i], want[i], dt)) {
      char gs[2048] = "", ws[2048] = "";
      for (int k = 0; k < n && k < 48; k++) {
        snprintf(gs + strlen(gs), sizeof gs - strlen(gs), "%s%.9g", k ? "," : "", got[k]);
        snprintf(ws + strlen(ws), sizeof ws - strlen(ws), "%s%.9g", k ? "," : "", want[k]);
      }
      FAILF_AT(line, "%s: element %d is %.9g, expected %.9g\n      got  [%s]\n      want [%s]",
               expr, i, got[i], want[i], gs, ws);
      return;
    }
}
#define NARGS_D(...) ((int)(sizeof((double[]){__VA_ARGS__}) / sizeof(double)))
/* EXPECT(t, TP_F32, (2,2), 11,22,13,24) */
#define EXPECT(t, dt, shp, ...) \
  expect_(__LINE__, #t, t, dt, SH shp, (const double[]){__VA_ARGS__}, NARGS_D(__VA_ARGS__))
/* 0-d result */
#define EXPECT0(t, dt, v) expect_(__LINE__, #t, t, dt, 0, NULL, (const double[]){v}, 1)
/* shape and dtype only (for results with no elements) */
#define EXPECT_SHAPE(t, dt, shp) expect_(__LINE__, #t, t, dt, SH shp, NULL, -1)
#define EXPECT_SHAPE0(t, dt) expect_(__LINE__, #t, t, dt, 0, NULL, NULL, -1)

/* After an error the library must still work: add [1,2] + [10,20]. */
static void sanity_(int line) {
  float a[2] = {1, 2}, b[2] = {10, 20}, y[2] = {0, 0};
  int64_t s = 2;
  tp_tensor *ta = NULL, *tb = NULL, *ty = NULL;
  if (tp_tensor_new(TP_F32, 1, &s, a, &ta) || tp_tensor_new(TP_F32, 1, &s, b, &tb) ||
      tp_add(ta, tb, &ty) || tp_tensor_read(ty, y, sizeof y) || y[0] != 11 || y[1] != 22)
    FAILF_AT(line, "library unusable after an error: %s", tp_last_error());
  tp_tensor_release(ta);
  tp_tensor_release(tb);
  tp_tensor_release(ty);
}

static int icontains(const char *hay, const char *needle) {
  size_t n = strlen(needle);
  for (const char *p = hay; *p; p++)
    if (!strncasecmp(p, needle, n)) return 1;
  return n == 0;
}

/* Expect op to fail with status want and a message containing every needle. */
static void expect_err_(int line, tp_op op, int nin, tp_tensor *const *in, const tp_attrs *at,
                        tp_status want, const char *const *needles) {
  checks++;
  tp_tensor *y = (tp_tensor *)0x1;
  tp_clear_error();
  tp_status s = tp_op_call(op, nin, in, at, &y);
  if (s == TP_OK) {
    FAILF_AT(line, "%s succeeded (shape %s), expected %s", tp_op_name(op),
             y ? shape_s(tp_tensor_ndim(y), tp_tensor_shape(y), (char[128]){0}) : "?",
             tp_status_name(want));
    track(y);
    sanity_(line);
    return;
  }
  if (s != want)
    FAILF_AT(line, "%s returned %s, expected %s (message: %s)", tp_op_name(op), tp_status_name(s),
             tp_status_name(want), tp_last_error());
  if (y != NULL) FAILF_AT(line, "%s: *out not NULL after an error", tp_op_name(op));
  if (tp_last_status() != s)
    FAILF_AT(line, "%s: tp_last_status() = %s, returned %s", tp_op_name(op),
             tp_status_name(tp_last_status()), tp_status_name(s));
  const char *msg = tp_last_error();
  if (!msg || !*msg) FAILF_AT(line, "%s: empty error message", tp_op_name(op));
  for (int i = 0; needles && needles[i]; i++)
    if (!icontains(msg, needles[i]))
      FAILF_AT(line, "%s: error message \"%s\" does not mention \"%s\"", tp_op_name(op), msg,
               needles[i]);
  sanity_(line);
}
/* ERR(TP_OP_MATMUL, NULL, (a, b), TP_ERR_INVALID_ARG, "inner dimensions", "[4,3]") */
#define UNPAREN(...) __VA_ARGS__
#define ERR(op, at, ins, want, ...)                                                 \
  expect_err_(__LINE__, op, NARGS_T(UNPAREN ins), (tp_tensor *[]){UNPAREN ins}, at, want, \
              (const char *const[]){__VA_ARGS__, NULL})
#define ERRA(op, attrs, ins, want, ...)                                             \
  do {                                                                              \
    tp_attrs at_ = (attrs);                                                         \
    ERR(op, &at_, ins, want, __VA_ARGS__);                                          \
  } while (0)

static int same_storage(tp_tensor *a, tp_tensor *b) {
  return a && b && a->storage == b->storage;
}

/* ======================================================================== */


/* Runs the tests in order, releasing each one's tensors; 0 when all passed. */
typedef struct op_test { const char *name; void (*fn)(void); } op_test;
static int run_op_tests(const op_test *tests, size_t n) {
  for (size_t i = 0; i < n; i++) {
    int before = failures;
    tests[i].fn();
    release_all();
    printf("%s %s\n", failures == before ? "ok  " : "FAIL", tests[i].name);
  }
  return failures != 0;
}
#endif
