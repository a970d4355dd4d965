/* test_kernels.c (TP_TEST_LONG: ctest starts it first; TP_TEST_SHARDS 2: two ctest entries) - differential tests of the eager kernels.
 *
 *  1. For every operator in ops.def (a loop over TP_OP_COUNT with per-op
 *     attribute setups) and many shapes (sizes 0, 1, 3, 7, 15, 16, 17, 33,
 *     100, 1000, odd 2-D/3-D shapes, broadcasting pairs, transposed and
 *     sliced non-contiguous inputs), tp_op_call is compared with the scalar
 *     double-precision reference tp_op_exec_ref, once per available ISA
 *     ("avx512", "avx2", "sse2", "generic"). Data-movement ops (whose
 *     reference is the eager path itself) are also checked against an
 *     independent index computation written here.
 *  2. Elementwise float32 kernels must give bit-identical bytes on every ISA.
 *  3. GEMM shapes around the register-tile / cache-block edges against a
 *     double-precision oracle written here.
 *  4. Special values (inf, nan, -0, large/small normal magnitudes) through
 *     exp/tanh/sigmoid/relu/log/sqrt/rsqrt compared with libm.
 *
 * Data come from tp_randn / tp_rand with fixed seeds. */
#include "ops/ops.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"

/* float16 by hand, independent of the core's (num.h) and of the compiler
 * (clang 14 has no _Float16 on x86): exact decoding, and rounding to the
 * nearest float16 with ties to even (nearbyint in the default rounding
 * mode on the value scaled to the float16 unit in the last place), values
 * from 65520 up going to infinity. */
static double half_decode(uint16_t h) {
  int e = (h >> 10) & 31, m = h & 1023;
  double v = e == 31 ? (m ? NAN : INFINITY) : e == 0 ? ldexp(m, -24) : ldexp(m + 1024, e - 25);
  return (h & 0x8000) ? -v : v;
}
static double half_round(double v) {
  if (v != v || isinf(v)) return v;
  double a = fabs(v);
  int e;
  frexp(a, &e); /* 2^(e-1) <= a < 2^e: the float16 ulp there is 2^(e-11), at least 2^-24 */
  int ue = e - 11 < -24 ? -24 : e - 11;
  double r = ldexp(nearbyint(ldexp(a, -ue)), ue);
  if (r >= 65520.0) r = INFINITY;
  return copysign(r, v);
}

static int ncases, ncompares;

/* ---- ISAs ---- */
static const char *const all_isas[] = {"avx512", "avx2", "sse2", "generic"};
static const char *isas[4];
static int nisas;

static void set_isa(const char *name) {
  if (tp_set_isa(name) != TP_OK) FAILF("tp_set_isa(%s) failed late: %s", name, tp_last_error());
}

/* ---- helpers ---- */
static const char *shp(const tp_tensor *t, char *buf) {
  if (!t) return "(null)";
  return tp_shape_str(tp_tensor_ndim(t), tp_tensor_shape(t), buf, 128);
}

/* values of t in C order as doubles (malloc'ed) */
static double *values(tp_tensor *t) {
  int64_t n = tp_tensor_numel(t);
  size_t es = tp_dtype_size(tp_tensor_dtype(t));
  void *buf = malloc((size_t)(n ? n : 1) * es);
  double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
  if (tp_tensor_read(t, buf, (size_t)n * es) != TP_OK) {
    FAILF("tp_tensor_read failed: %s", tp_last_error());
    memset(v, 0, sizeof(double) * (size_t)(n ? n : 1));
  } else {
    for (int64_t i = 0; i < n; i++) switch (tp_tensor_dtype(t)) {
        case TP_F32: v[i] = ((float *)buf)[i]; break;
        case TP_I32: v[i] = ((int32_t *)buf)[i]; break;
        case TP_I64: v[i] = (double)((int64_t *)buf)[i]; break;
        case TP_F16: v[i] = half_decode(((uint16_t *)buf)[i]); break;
        case TP_BF16: {
          uint32_t u = (uint32_t)((uint16_t *)buf)[i] << 16;
          float f;
          memcpy(&f, &u, 4);
          v[i] = f;
          break;
        }
        case TP_I8: v[i] = ((int8_t *)buf)[i]; break;
        default: v[i] = ((uint8_t *)buf)[i]; break;
      }
  }
  free(buf);
  return v;
}

static void *raw_bytes(tp_tensor *t, size_t *nb) {
  *nb = (size_t)tp_tensor_numel(t) * tp_dtype_size(tp_tensor_dtype(t));
  void *b = malloc(*nb ? *nb : 1);
  if (tp_tensor_read(t, b, *nb) != TP_OK) FAILF("read failed: %s", tp_last_error());
  return b;
}

static tp_tensor *from_values(tp_dtype dt, int nd, const int64_t *shape, const double *v) {
  int64_t n = tp_shape_numel(nd, shape);
  size_t es = tp_dtype_size(dt);
  void *buf = malloc((size_t)(n ? n : 1) * es);
  for (int64_t i = 0; i < n; i++) switch (dt) {
      case TP_F32: ((float *)buf)[i] = (float)v[i]; break;
      case TP_I32: ((int32_t *)buf)[i] = (int32_t)v[i]; break;
      case TP_I64: ((int64_t *)buf)[i] = (int64_t)v[i]; break;
      default: ((uint8_t *)buf)[i] = v[i] != 0; break;
    }
  tp_tensor *t = NULL;
  if (tp_tensor_new(dt, nd, shape, buf, &t) != TP_OK) FAILF("tensor_new: %s", tp_last_error());
  free(buf);
  return t;
}

/* ---- input generation ---- */
enum dist_kind { D_NORMAL, D_UNIFORM, D_POSEXP, D_INT, D_BOOL };
typedef struct dist {
  int kind;
  double a, b;
} dist;
static const dist NORMAL1 = {D_NORMAL, 1, 0};

enum layout { L_CONTIG, L_TRANSPOSED, L_STRIDED, L_ROWSTEP, L_COUNT };
static const char *const layout_name[] = {"contig", "transposed", "strided", "rowstep"};

static uint64_t seed_counter = 12345;

/* A tensor with logical shape `shape`, dtype dt, values from d, stored in the
 * given layout (a view over a larger/permuted buffer for non-contiguous). */
static tp_tensor *gen(tp_dtype dt, int nd, const int64_t *shape, dist d, int layout) {
  int64_t ps[TP_MAX_DIMS];
  memcpy(ps, shape, sizeof(int64_t) * (size_t)nd);
  if (nd < 2 && layout == L_TRANSPOSED) layout = L_STRIDED;
  if (nd < 1) layout = L_CONTIG;
  if (layout == L_TRANSPOSED) {
    ps[nd - 1] = shape[nd - 2];
    ps[nd - 2] = shape[nd - 1];
  } else if (layout == L_STRIDED) {
    ps[nd - 1] = 2 * shape[nd - 1] + 1;
  } else if (layout == L_ROWSTEP) {
    ps[0] = 2 * shape[0] + 1;
  }
  tp_tensor *base = NULL;
  uint64_t seed = seed_counter++;
  tp_status s = d.kind == D_UNIFORM ? tp_rand(nd, ps, seed, &base) : tp_randn(nd, ps, seed, &base);
  if (s != TP_OK) {
    FAILF("tp_randn: %s", tp_last_error());
    return NULL;
  }
  double *v = values(base);
  int64_t n = tp_tensor_numel(base);
  for (int64_t i = 0; i < n; i++) switch (d.kind) {
      case D_NORMAL: v[i] *= d.a; break;
      case D_UNIFORM: v[i] = d.a + (d.b - d.a) * v[i]; break;
      case D_POSEXP: v[i] = exp(v[i] * d.a); break;
      case D_INT: v[i] = nearbyint(v[i] * d.a); break;
      default: v[i] = v[i] > 0; break;
    }
  tp_tensor_release(base);
  base = from_values(dt, nd, ps, v);
  free(v);
  if (!base || layout == L_CONTIG) return base;
  tp_attrs at;
  tp_attrs_init(&at);
  tp_op op = TP_OP_SLICE;
  if (layout == L_TRANSPOSED) {
    op = TP_OP_TRANSPOSE;
    at.dim = -1;
    at.dim1 = -2;
  } else if (layout == L_STRIDED) {
    at.dim = -1, at.start = 1, at.step = 2;
  } else {
    at.dim = 0, at.start = 1, at.step = 2;
  }
  tp_tensor *view = NULL;
  if (tp_op_call(op, 1, &base, &at, &view) != TP_OK) FAILF("view: %s", tp_last_error());
  tp_tensor_release(base);
  if (view && layout != L_CONTIG && tp_tensor_numel(view) > 1 && tp_tensor_is_contiguous(view) &&
      !(layout == L_TRANSPOSED && (shape[nd - 1] == 1 || shape[nd - 2] == 1)) &&
      !(layout == L_ROWSTEP && shape[0] == 1) && !(layout == L_STRIDED && shape[nd - 1] == 1))
    FAILF("internal: layout %s produced a contiguous view", layout_name[layout]);
  return view;
}

static tp_tensor *weak(double v, int is_int) {
  tp_tensor *t = NULL;
  tp_scalar(v, is_int, &t);
  return t;
}

/* |t| as a contiguous tensor of the same dtype (for error bounds) */
static tp_tensor *abs_of(tp_tensor *t) {
  if (!t) return NULL;
  double *v = values(t);
  int64_t n = tp_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) v[i] = fabs(v[i]);
  tp_tensor *r = from_values(tp_tensor_dtype(t), tp_tensor_ndim(t), tp_tensor_shape(t), v);
  free(v);
  if (r) r->weak = t->weak; /* keep weak-scalar promotion identical */
  return r;
}

/* ---- tolerance classes ---- */
enum tol_kind { T_EXACT, T_ELEM, T_BOUND, T_SOFTMAX, T_LOGSOFTMAX, T_LAYERNORM };

static int tol_of(tp_op op) {
  switch (op) {
    case TP_OP_ADD: case TP_OP_SUB: case TP_OP_MUL: case TP_OP_DIV:
    case TP_OP_NEG: case TP_OP_ABS: case TP_OP_EXP: case TP_OP_LOG: case TP_OP_SQRT:
    case TP_OP_RSQRT: case TP_OP_TANH: case TP_OP_SIGMOID: case TP_OP_RELU: case TP_OP_GELU:
    case TP_OP_ERF: case TP_OP_SIN: case TP_OP_COS: case TP_OP_TAN: case TP_OP_ASIN: case TP_OP_ACOS: case TP_OP_ATAN: case TP_OP_SINH: case TP_OP_COSH: case TP_OP_ASINH: case TP_OP_ACOSH: case TP_OP_ATANH:
      return T_ELEM;
    case TP_OP_MATMUL: case TP_OP_LINEAR: case TP_OP_SUM: case TP_OP_MEAN: case TP_OP_CONV2D:
    case TP_OP_AVG_POOL2D:
      return T_BOUND;
    case TP_OP_SOFTMAX: return T_SOFTMAX;
    case TP_OP_LOG_SOFTMAX: return T_LOGSOFTMAX;
    case TP_OP_LAYER_NORM: return T_LAYERNORM;
    case TP_OP_RNN: case TP_OP_GRU: case TP_OP_LSTM: return T_LAYERNORM; /* float32 steps vs double: 2e-5 */
    case TP_OP_SCATTER_ELEMENTS: case TP_OP_SCATTER_ND: return T_ELEM; /* add / mul in float32 vs double */
    default: return T_EXACT;
  }
}

static int is_bitexact_op(tp_op op) {
  switch (op) {
    case TP_OP_ADD: case TP_OP_SUB: case TP_OP_MUL: case TP_OP_DIV:
    case TP_OP_NEG: case TP_OP_ABS: case TP_OP_EXP: case TP_OP_LOG: case TP_OP_SQRT:
    case TP_OP_RSQRT: case TP_OP_TANH: case TP_OP_SIGMOID: case TP_OP_RELU: case TP_OP_GELU:
      return 1;
    default: return 0;
  }
}

static int nan_eq(double g, double w) { return (isnan(g) && isnan(w)) || g == w; }

/* Compare got against want[] (reference), bound[] optional. */
static int compare_vals(const char *label, const char *isa, tp_op op, tp_dtype dt,
                        const double *got, const double *want, const double *bound, int64_t n) {
  int kind = dt == TP_F32 ? tol_of(op) : T_EXACT;
  int64_t nbad = 0, first = -1;
  double worst = 0;
  int64_t worst_i = -1;
  for (int64_t i = 0; i < n; i++) {
    double g = got[i], w = want[i], tol = 0;
    ncompares++;
    if (nan_eq(g, w)) continue;
    if (isnan(g) || isnan(w) || isinf(g) || isinf(w)) {
      nbad++;
      if (first < 0) first = i;
      continue;
    }
    switch (kind) {
      case T_EXACT: tol = 0; break;
      case T_ELEM: tol = 1e-6 + 2e-6 * fabs(w); break;
      case T_BOUND: tol = 1e-6 + 1e-5 * (bound ? bound[i] : fabs(w)); break;
      case T_SOFTMAX: tol = 1e-6 + 1e-5 * fabs(w); break;
      case T_LOGSOFTMAX: tol = 1e-5 + 1e-5 * fabs(w); break;
      default: tol = 2e-5 + 2e-5 * fabs(w); break;
    }
    double err = fabs(g - w);
    if (err > tol) {
      nbad++;
      if (first < 0) first = i;
      if (err / (tol > 0 ? tol : 1e-30) > worst) worst = err / (tol > 0 ? tol : 1e-30), worst_i = i;
    }
  }
  if (nbad) {
    int64_t i = worst_i >= 0 ? worst_i : first;
    FAILF("%s [isa %s]: %lld of %lld elements differ from tp_op_exec_ref; e.g. element %lld: "
          "got %.9g, reference %.9g (|diff| %.3g%s%.3g)",
          label, isa, (long long)nbad, (long long)n, (long long)i, got[i], want[i],
          fabs(got[i] - want[i]), bound ? ", bound*1e-5 " : "",
          bound ? 1e-5 * bound[i] : 0.0);
    return 0;
  }
  return 1;
}

/* Independent oracle for the data-movement ops (their tp_op_exec_ref is the
 * eager path itself). Returns malloc'ed expected values, or NULL if op is
 * not a data-movement op. */
static void unravel(int64_t i, int nd, const int64_t *shape, int64_t *idx) {
  for (int d = nd - 1; d >= 0; d--) {
    idx[d] = shape[d] ? i % shape[d] : 0;
    i = shape[d] ? i / shape[d] : 0;
  }
}
static int64_t ravel(int nd, const int64_t *shape, const int64_t *idx) {
  int64_t r = 0;
  for (int d = 0; d < nd; d++) r = r * shape[d] + idx[d];
  return r;
}
/* bfloat16 of a float32 value: the bit trick (round to nearest even on the
 * top 16 bits), independent of the core's frexp rounding */
static double bf16_of(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  if (f != f) return f;
  u = (u + 0x7fffu + ((u >> 16) & 1)) & 0xffff0000u;
  memcpy(&f, &u, 4);
  return f;
}
static double cast_val(double v, tp_dtype from, tp_dtype to) {
  int from_int = from != TP_F32 && from != TP_F16 && from != TP_BF16;
  switch (to) {
    case TP_F32: return (float)v;
    case TP_I32: return (double)(int32_t)(int64_t)trunc(v);
    case TP_I64: return (double)(int64_t)trunc(v);
    case TP_F16: return half_round(v);
    case TP_BF16: return bf16_of((float)v);
    /* ints wrap, floats saturate (NaN -> 0) */
    case TP_I8: return from_int ? (double)(int8_t)(int64_t)v : v != v ? 0 : v >= 127 ? 127 : v <= -128 ? -128 : trunc(v);
    case TP_U8: return from_int ? (double)(uint8_t)(int64_t)v : v != v ? 0 : v >= 255 ? 255 : v <= 0 ? 0 : trunc(v);
    default: return v != 0;
  }
}
static double *oracle_movement(tp_op op, int nin, tp_tensor *const *in, const tp_attrs *at,
                               tp_tensor *y) {
  if (op != TP_OP_TRANSPOSE && op != TP_OP_PERMUTE && op != TP_OP_SLICE && op != TP_OP_RESHAPE &&
      op != TP_OP_CONCAT && op != TP_OP_CAST)
    return NULL;
  int ond = tp_tensor_ndim(y);
  const int64_t *osh = tp_tensor_shape(y);
  int64_t n = tp_tensor_numel(y);
  double *out = malloc(sizeof(double) * (size_t)(n ? n : 1));
  tp_tensor *x = in[0];
  int nd = tp_tensor_ndim(x);
  const int64_t *xs = tp_tensor_shape(x);
  double *xv = values(x);
  int64_t oi[TP_MAX_DIMS], xi[TP_MAX_DIMS];
  if (op == TP_OP_RESHAPE || op == TP_OP_CAST) {
    for (int64_t i = 0; i < n; i++)
      out[i] = op == TP_OP_CAST ? cast_val(xv[i], tp_tensor_dtype(x), at->dtype) : xv[i];
  } else if (op == TP_OP_TRANSPOSE || op == TP_OP_PERMUTE) {
    int64_t perm[TP_MAX_DIMS];
    for (int d = 0; d < nd; d++) perm[d] = d;
    if (op == TP_OP_TRANSPOSE && nd) {
      int64_t d0 = at->dim < 0 ? at->dim + nd : at->dim, d1 = at->dim1 < 0 ? at->dim1 + nd : at->dim1;
      perm[d0] = d1;
      perm[d1] = d0;
    } else if (op == TP_OP_PERMUTE) {
      for (int d = 0; d < nd; d++) perm[d] = at->ints[d] < 0 ? at->ints[d] + nd : at->ints[d];
    }
    for (int64_t i = 0; i < n; i++) {
      unravel(i, ond, osh, oi);
      for (int d = 0; d < nd; d++) xi[perm[d]] = oi[d];
      out[i] = xv[ravel(nd, xs, xi)];
    }
  } else if (op == TP_OP_SLICE) {
    int64_t d = at->dim < 0 ? at->dim + nd : at->dim, len = xs[d];
    /* CPython PySlice_AdjustIndices for step > 0 */
    int64_t start = at->start, stop = at->end;
    if (start < 0) {
      start += len;
      if (start < 0) start = 0;
    } else if (start >= len) {
      start = len;
    }
    if (stop < 0) {
      stop += len;
      if (stop < 0) stop = 0;
    } else if (stop >= len) {
      stop = len;
    }
    int64_t cnt = stop > start ? (stop - start - 1) / at->step + 1 : 0;
    if (osh[d] != cnt) {
      FAILF("slice oracle: dim %lld of length %lld, start %lld end %lld step %lld: expected %lld "
            "elements, op gave %lld",
            (long long)d, (long long)len, (long long)at->start, (long long)at->end,
            (long long)at->step, (long long)cnt, (long long)osh[d]);
      free(xv);
      free(out);
      return NULL;
    }
    for (int64_t i = 0; i < n; i++) {
      unravel(i, ond, osh, oi);
      memcpy(xi, oi, sizeof(int64_t) * (size_t)nd);
      xi[d] = start + oi[d] * at->step;
      out[i] = xv[ravel(nd, xs, xi)];
    }
  } else { /* concat */
    int64_t d = at->dim < 0 ? at->dim + nd : at->dim;
    double *vals[64];
    for (int k = 0; k < nin; k++) vals[k] = k ? values(in[k]) : xv;
    for (int64_t i = 0; i < n; i++) {
      unravel(i, ond, osh, oi);
      int64_t pos = oi[d];
      int k = 0;
      while (k < nin && pos >= tp_tensor_shape(in[k])[d]) pos -= tp_tensor_shape(in[k])[d], k++;
      memcpy(xi, oi, sizeof(int64_t) * (size_t)nd);
      xi[d] = pos;
      double v = vals[k][ravel(nd, tp_tensor_shape(in[k]), xi)];
      out[i] = cast_val(v, tp_tensor_dtype(in[k]), tp_tensor_dtype(y));
    }
    for (int k = 1; k < nin; k++) free(vals[k]);
  }
  free(xv);
  return out;
}

/* ---- the differential runner ---- */
/* Runs op on in[] under every ISA and compares with the reference. Takes
 * ownership of the input tensors. */
static int verbose, isolate_cases;
static void run_case_body(const char *lbl, tp_op op, int nin, tp_tensor **in, const tp_attrs *at);
/* TP_TEST_SHARD=k/n (CMake's TP_TEST_SHARDS below: ctest runs this test as
 * n entries in parallel): only every n-th differential case, from the k-th */
static int shard_k = 1, shard_n = 1;
static void run_case(const char *label, tp_op op, int nin, tp_tensor **in, const tp_attrs *at) {
  ncases++;
  if (shard_n > 1 && (ncases - 1) % shard_n != shard_k - 1) {
    for (int i = 0; i < nin; i++) tp_tensor_release(in[i]);
    return;
  }
  char lbl[512];
  snprintf(lbl, sizeof lbl, "%s %s", tp_op_name(op), label);
  if (verbose) printf("case: %s\n", lbl);
  if (isolate_cases) { /* a crash in one case must not hide the others */
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
      failures = 0;
      run_case_body(lbl, op, nin, in, at);
      fflush(stdout);
      _exit(failures > 250 ? 250 : failures);
    }
    if (pid > 0) {
      int st = 0;
      waitpid(pid, &st, 0);
      if (!WIFEXITED(st))
        FAILF("%s: CRASHED (signal %d)", lbl, WIFSIGNALED(st) ? WTERMSIG(st) : -1);
      else if (WEXITSTATUS(st))
        failures += WEXITSTATUS(st) == 1 ? 1 : WEXITSTATUS(st), 
        printf("^^^ %s: failed in a child process (exit status %d; a sanitizer report exits 1)\n",
               lbl, WEXITSTATUS(st));
      for (int i = 0; i < nin; i++) tp_tensor_release(in[i]);
      return;
    }
  }
  run_case_body(lbl, op, nin, in, at);
}
static void run_case_body(const char *lbl, tp_op op, int nin, tp_tensor **in, const tp_attrs *at) {
  char b0[128], b1[128];
  for (int i = 0; i < nin; i++)
    if (!in[i] && !(i > 0 && (tp_op_flags(op) & TP_OPF_OPT))) {
      FAILF("%s: input %d could not be made", lbl, i);
      goto out;
    }
  tp_tensor *ref = NULL;
  tp_status rs = tp_op_exec_ref(op, nin, in, at, &ref);
  if (rs != TP_OK) {
    FAILF("%s: tp_op_exec_ref failed: %s: %s", lbl, tp_status_name(rs), tp_last_error());
    goto out;
  }
  double *want = values(ref);
  int64_t n = tp_tensor_numel(ref);
  /* error bound for sums and products: the reference over |inputs| */
  double *bound = NULL;
  if (tol_of(op) == T_BOUND && tp_tensor_dtype(ref) == TP_F32) {
    tp_tensor *ab[3] = {NULL, NULL, NULL}, *bt = NULL;
    for (int i = 0; i < nin; i++) ab[i] = abs_of(in[i]);
    if (tp_op_exec_ref(op, nin, ab, at, &bt) == TP_OK) {
      bound = values(bt);
      tp_tensor_release(bt);
    } else {
      FAILF("%s: bound computation failed: %s", lbl, tp_last_error());
    }
    for (int i = 0; i < nin; i++) tp_tensor_release(ab[i]);
  }
  void *first_bytes = NULL;
  size_t first_nb = 0;
  const char *first_isa = NULL;
  double *oracle = NULL;
  for (int k = 0; k < nisas; k++) {
    set_isa(isas[k]);
    tp_tensor *y = NULL;
    tp_status s = tp_op_call(op, nin, in, at, &y);
    if (s != TP_OK) {
      FAILF("%s [isa %s]: tp_op_call failed: %s: %s", lbl, isas[k], tp_status_name(s),
            tp_last_error());
      continue;
    }
    int same = tp_tensor_dtype(y) == tp_tensor_dtype(ref) && tp_tensor_ndim(y) == tp_tensor_ndim(ref);
    for (int d = 0; same && d < tp_tensor_ndim(y); d++)
      same = tp_tensor_shape(y)[d] == tp_tensor_shape(ref)[d];
    if (!same) {
      FAILF("%s [isa %s]: result %s %s, reference %s %s", lbl, isas[k],
            tp_dtype_short(tp_tensor_dtype(y)), shp(y, b0), tp_dtype_short(tp_tensor_dtype(ref)),
            shp(ref, b1));
      tp_tensor_release(y);
      continue;
    }
    double *got = values(y);
    compare_vals(lbl, isas[k], op, tp_tensor_dtype(y), got, want, bound, n);
    if (k == 0) oracle = oracle_movement(op, nin, in, at, y);
    if (oracle) {
      for (int64_t i = 0; i < n; i++)
        if (!nan_eq(got[i], oracle[i])) {
          FAILF("%s [isa %s]: element %lld is %.9g, index oracle says %.9g", lbl, isas[k],
                (long long)i, got[i], oracle[i]);
          break;
        }
    }
    /* elementwise float kernels: bit-identical across ISAs */
    if (is_bitexact_op(op) && tp_tensor_dtype(y) == TP_F32) {
      size_t nb;
      void *bytes = raw_bytes(y, &nb);
      if (!first_bytes) {
        first_bytes = bytes, first_nb = nb, first_isa = isas[k];
      } else {
        if (nb != first_nb || memcmp(bytes, first_bytes, nb)) {
          size_t j = 0;
          while (j + 4 <= nb && !memcmp((char *)bytes + j, (char *)first_bytes + j, 4)) j += 4;
          float g = 0, f = 0;
          if (j + 4 <= nb) memcpy(&g, (char *)bytes + j, 4), memcpy(&f, (char *)first_bytes + j, 4);
          FAILF("%s: not bit-identical across ISAs: element %zu is %.9g (%a) on %s, %.9g (%a) on %s",
                lbl, j / 4, g, g, isas[k], f, f, first_isa);
        }
        free(bytes);
      }
    }
    free(got);
    tp_tensor_release(y);
  }
  free(first_bytes);
  free(oracle);
  free(want);
  free(bound);
  tp_tensor_release(ref);
out:
  for (int i = 0; i < nin; i++) tp_tensor_release(in[i]);
}

/* ---- shapes ---- */
typedef struct S {
  int nd;
  int64_t d[4];
} S;
#define S0 ((S){0, {0}})
#define S1(a) ((S){1, {a}})
#define S2(a, b) ((S){2, {a, b}})
#define S3(a, b, c) ((S){3, {a, b, c}})

static const S unary_shapes[] = {
    {0, {0}}, S1(0), S1(1), S1(3), S1(7), S1(15), S1(16), S1(17), S1(33), S1(100), S1(1000),
    S2(3, 5), S2(7, 17), S2(33, 3), S2(1, 100), S2(100, 1), S2(0, 5), S2(5, 0), S2(16, 16),
    S3(2, 3, 5), S3(3, 1, 7), S3(4, 5, 6), S3(1, 17, 3)};
#define NUNARY_SHAPES ((int)(sizeof unary_shapes / sizeof unary_shapes[0]))

static const S bpairs[][2] = {
    {S1(1000), S1(1000)}, {S1(17), S1(17)}, {S1(7), S1(1)}, {S1(1), S1(33)}, {S1(100), {0, {0}}},
    {{0, {0}}, S1(15)}, {{0, {0}}, {0, {0}}}, {S2(3, 5), S1(5)}, {S1(5), S2(3, 5)},
    {S2(3, 1), S2(1, 5)}, {S2(17, 1), S1(33)}, {S3(2, 3, 5), S2(3, 1)}, {S3(7, 1, 17), S3(1, 3, 17)},
    {S2(16, 16), S2(16, 16)}, {S2(0, 5), S1(5)}, {S2(5, 0), S2(1, 0)}, {S2(33, 7), S2(33, 7)},
    {S3(4, 5, 6), S3(4, 1, 6)}, {S3(1, 1, 100), S2(3, 1)}, {S2(100, 3), S2(100, 1)}};
#define NBPAIRS ((int)(sizeof bpairs / sizeof bpairs[0]))

static const char *sstr(S s, char *buf) { return tp_shape_str(s.nd, s.d, buf, 64); }

/* data for a unary op: values in the op's reasonable range */
static dist unary_dist(tp_op op) {
  switch (op) {
    case TP_OP_EXP: return (dist){D_UNIFORM, -80, 80};
    case TP_OP_LOG: case TP_OP_SQRT: case TP_OP_RSQRT: return (dist){D_POSEXP, 5, 0};
    case TP_OP_TANH: return (dist){D_NORMAL, 4, 0};
    case TP_OP_SIGMOID: return (dist){D_NORMAL, 10, 0};
    case TP_OP_GELU: return (dist){D_NORMAL, 4, 0};
    default: return (dist){D_NORMAL, 3, 0};
  }
}

#include "cases_ops.h" /* the per-op case generators */

static void differential_op(int op) {
  {
    int before = ncases, fbefore = failures;
    int f = tp_op_flags((tp_op)op);
    switch ((tp_op)op) {
      case TP_OP_WHERE: cases_where(); break;
      case TP_OP_MATMUL: isolate_cases = 1; cases_matmul(); isolate_cases = 0; break;
      case TP_OP_LINEAR: isolate_cases = 1; cases_linear(); isolate_cases = 0; break;
      case TP_OP_SOFTMAX: case TP_OP_LOG_SOFTMAX: cases_softmax((tp_op)op); break;
      case TP_OP_LAYER_NORM: cases_layer_norm(); break;
      case TP_OP_CONV2D: isolate_cases = 1; cases_conv2d(); isolate_cases = 0; break;
      case TP_OP_MAX_POOL2D: case TP_OP_AVG_POOL2D: isolate_cases = 1; cases_pool2d((tp_op)op); isolate_cases = 0; break;
      case TP_OP_CONCAT: cases_concat(); break;
      case TP_OP_GATHER: case TP_OP_GATHER_ELEMENTS: cases_gather((tp_op)op); break;
      case TP_OP_RNN: case TP_OP_GRU: case TP_OP_LSTM: cases_recurrent((tp_op)op); break;
      case TP_OP_SCATTER_ELEMENTS: case TP_OP_SCATTER_ND: cases_scatter((tp_op)op); break;
      case TP_OP_GATHER_ND: cases_gather_nd(); break;
      case TP_OP_ARGTOPK: cases_argtopk(); break;
      case TP_OP_MOD: case TP_OP_FMOD: case TP_OP_BITWISE_AND: case TP_OP_BITWISE_OR: case TP_OP_BITWISE_XOR:
      case TP_OP_BITWISE_NOT: cases_int((tp_op)op); break;
      case TP_OP_DET: cases_det(); break;
      case TP_OP_GRID_SAMPLE: cases_grid_sample(); break;
      case TP_OP_ROI_ALIGN: cases_roi_align(); break;
      case TP_OP_QUANTIZE:
      case TP_OP_DEQUANTIZE: cases_quant((tp_op)op); break;
      case TP_OP_BITCAST: cases_bitcast(); break;
      case TP_OP_MATMUL_INT: cases_matmul_int(); break;
      case TP_OP_QMATMUL: cases_qmatmul(); break;
      case TP_OP_CONV2D_INT: cases_conv2d_int(); break;
      case TP_OP_QCONV2D: cases_qconv2d(); break;
      case TP_OP_RESHAPE: case TP_OP_TRANSPOSE: case TP_OP_PERMUTE: case TP_OP_SLICE:
      case TP_OP_CAST: cases_views((tp_op)op); break;
      default:
        if (f & TP_OPF_OPAQUE) { /* host-run graph regions: no eager kernel */
          int64_t sh = 2;
          tp_tensor *x = NULL, *y = (tp_tensor *)0x1;
          tp_zeros(TP_F32, 1, &sh, &x);
          tp_status s = tp_op_call((tp_op)op, 1, &x, NULL, &y);
          if (s != TP_ERR_INVALID_ARG || y != NULL)
            FAILF("%s (opaque): eager call returned %s, expected invalid argument", tp_op_name((tp_op)op),
                  tp_status_name(s));
          tp_tensor_release(x);
          printf("skip %-12s opaque (graph-only) op: no eager kernel to compare\n",
                 tp_op_name((tp_op)op));
          return;
        }
        if (f & TP_OPF_BINARY) cases_binary((tp_op)op);
        else if (f & TP_OPF_UNARY) cases_unary((tp_op)op);
        else if (f & TP_OPF_REDUCE) cases_reduce((tp_op)op);
        break;
    }
    int count = ncases - before;
    printf("%-4s %-12s %4d cases\n", failures == fbefore ? "ok" : "FAIL", tp_op_name((tp_op)op),
           count);
    if (count == 0) FAILF("op %s has no differential cases", tp_op_name((tp_op)op));
  }
}

/* ---- bit-identical elementwise results across ISAs ---- */
static void bitexact_across_isas(void) {
  if (nisas < 2) {
    printf("skip: bit-identity needs 2 ISAs (have %d)\n", nisas);
    return;
  }
  static const int64_t sizes[] = {1, 3, 5, 7, 9, 15, 17, 31, 33, 100, 1000, 1001};
  struct {
    tp_op op;
    int approx;
    dist d;
  } ops[] = {{TP_OP_EXP, 0, {D_UNIFORM, -87, 88}},  {TP_OP_TANH, 0, {D_NORMAL, 5, 0}},
             {TP_OP_SIGMOID, 0, {D_NORMAL, 10, 0}}, {TP_OP_GELU, 0, {D_NORMAL, 4, 0}},
             {TP_OP_GELU, 1, {D_NORMAL, 4, 0}},     {TP_OP_LOG, 0, {D_POSEXP, 10, 0}},
             {TP_OP_SQRT, 0, {D_POSEXP, 10, 0}},    {TP_OP_RSQRT, 0, {D_POSEXP, 10, 0}},
             {TP_OP_ADD, 0, {D_NORMAL, 1, 0}},      {TP_OP_MUL, 0, {D_NORMAL, 1, 0}},
             {TP_OP_DIV, 0, {D_NORMAL, 1, 0}}};
  int bad = 0;
  for (int oi = 0; oi < (int)(sizeof ops / sizeof ops[0]); oi++)
    for (int si = 0; si < (int)(sizeof sizes / sizeof sizes[0]); si++)
      for (int mode = 0; mode < 3; mode++) { /* binary: vv, scalar-vector, vector-scalar */
        int binary = tp_op_arity(ops[oi].op) == 2;
        if (!binary && mode) break;
        int64_t n = sizes[si], one = 1;
        tp_tensor *a = gen(TP_F32, 1, mode == 1 ? &one : &n, ops[oi].d, L_CONTIG);
        tp_tensor *b = binary ? gen(TP_F32, 1, mode == 2 ? &one : &n, ops[oi].d, L_CONTIG) : NULL;
        tp_attrs at;
        tp_attrs_init(&at);
        at.approximate = ops[oi].approx;
        void *first = NULL;
        size_t nb0 = 0;
        for (int k = 0; k < nisas; k++) {
          set_isa(isas[k]);
          tp_tensor *in[2] = {a, b}, *y = NULL;
          if (tp_op_call(ops[oi].op, binary ? 2 : 1, in, &at, &y) != TP_OK) {
            FAILF("bitexact %s: %s", tp_op_name(ops[oi].op), tp_last_error());
            continue;
          }
          size_t nb;
          void *bytes = raw_bytes(y, &nb);
          tp_tensor_release(y);
          if (!first) {
            first = bytes, nb0 = nb;
            continue;
          }
          if (nb != nb0 || memcmp(bytes, first, nb)) {
            size_t j = 0;
            while (j + 4 <= nb && !memcmp((char *)bytes + j, (char *)first + j, 4)) j += 4;
            float g, f;
            memcpy(&g, (char *)bytes + j, 4), memcpy(&f, (char *)first + j, 4);
            FAILF("bitexact %s%s n=%lld mode=%d: element %zu is %a on %s but %a on %s",
                  tp_op_name(ops[oi].op), ops[oi].approx ? "(tanh)" : "", (long long)n, mode,
                  j / 4, g, isas[k], f, isas[0]);
            bad++;
          }
          free(bytes);
        }
        free(first);
        tp_tensor_release(a);
        tp_tensor_release(b);
      }
  printf("%-4s bit-identical elementwise results across %d ISAs\n", bad ? "FAIL" : "ok", nisas);
}

/* ---- GEMM around tile edges, against a double oracle written here ---- */
static int gemm_check(int64_t M, int64_t N, int64_t K, int ta, int tb, int use_linear) {
  int64_t as[2] = {ta ? K : M, ta ? M : K}, bs[2] = {tb ? N : K, tb ? K : N};
  if (use_linear) bs[0] = N, bs[1] = K; /* w is [N,K] */
  tp_tensor *A = NULL, *B = NULL, *bias = NULL;
  tp_randn(2, as, 1000 + (uint64_t)(M * 7 + N * 13 + K), &A);
  tp_randn(2, bs, 2000 + (uint64_t)(M * 5 + N * 3 + K * 11), &B);
  int64_t nb = N;
  if (use_linear) tp_rand(1, &nb, 77, &bias);
  double *av = values(A), *bv = values(B), *biasv = bias ? values(bias) : NULL;
  tp_tensor *Av = A, *Bv = B;
  if (ta) tp_transpose(A, 0, 1, &Av);
  if (tb && !use_linear) tp_transpose(B, 0, 1, &Bv);
  /* logical A[m,k], B[k,n] (for linear: W[n,k]) */
  double *ref = calloc((size_t)(M * N > 0 ? M * N : 1), sizeof(double));
  double *bnd = calloc((size_t)(M * N > 0 ? M * N : 1), sizeof(double));
  for (int64_t m = 0; m < M; m++)
    for (int64_t k = 0; k < K; k++) {
      double a = ta ? av[k * M + m] : av[m * K + k];
      for (int64_t n = 0; n < N; n++) {
        double b = use_linear ? bv[n * K + k] : tb ? bv[n * K + k] : bv[k * N + n];
        ref[m * N + n] += a * b;
        bnd[m * N + n] += fabs(a * b);
      }
    }
  if (biasv)
    for (int64_t m = 0; m < M; m++)
      for (int64_t n = 0; n < N; n++) ref[m * N + n] += biasv[n], bnd[m * N + n] += fabs(biasv[n]);
  int ok = 1;
  for (int k = 0; k < nisas && ok; k++) {
    set_isa(isas[k]);
    tp_tensor *y = NULL;
    tp_status s = use_linear ? tp_linear(Av, Bv, bias, &y) : tp_matmul(Av, Bv, &y);
    ncases++;
    if (s != TP_OK) {
      FAILF("gemm %lldx%lldx%lld: %s", (long long)M, (long long)N, (long long)K, tp_last_error());
      ok = 0;
      break;
    }
    if (tp_tensor_numel(y) != M * N) {
      FAILF("gemm %lldx%lldx%lld [%s]: %lld elements", (long long)M, (long long)N, (long long)K,
            isas[k], (long long)tp_tensor_numel(y));
      ok = 0;
    } else {
      double *g = values(y);
      for (int64_t i = 0; i < M * N; i++) {
        ncompares++;
        if (!(fabs(g[i] - ref[i]) <= 1e-6 + 1e-5 * bnd[i])) {
          FAILF("%s M=%lld N=%lld K=%lld%s%s [isa %s]: C[%lld,%lld] = %.9g, expected %.9g "
                "(bound %.3g)",
                use_linear ? "linear" : "matmul", (long long)M, (long long)N, (long long)K,
                ta ? " A^T" : "", tb ? " B^T" : "", isas[k], (long long)(i / N), (long long)(i % N),
                g[i], ref[i], 1e-5 * bnd[i]);
          ok = 0;
          break;
        }
      }
      free(g);
    }
    tp_tensor_release(y);
    if (!use_linear && ok) { /* the same product with A packed once (gemm_pack_a: 1x1 conv weights) */
      const tp_kernels *KT = tp_kern();
      size_t bytes = KT->gemm_pack_a_size(M, K);
      float *af = malloc(sizeof(float) * (size_t)(M * K)), *bf = malloc(sizeof(float) * (size_t)(K * N));
      float *pa = malloc(bytes ? bytes : 4), *cf = malloc(sizeof(float) * (size_t)(M * N));
      for (int64_t i = 0; i < M * K; i++) af[i] = (float)av[i];
      for (int64_t i = 0; i < K * N; i++) bf[i] = (float)bv[i];
      KT->gemm_pack_a(M, K, af, ta ? 1 : K, ta ? M : 1, pa);
      KT->gemm_f32_packed_a(M, N, K, pa, bf, tb ? 1 : N, tb ? K : 1, cf, N, NULL);
      for (int64_t i = 0; i < M * N; i++) {
        ncompares++;
        if (!(fabs(cf[i] - ref[i]) <= 1e-6 + 1e-5 * bnd[i])) {
          FAILF("packed-A matmul M=%lld N=%lld K=%lld%s%s [isa %s]: C[%lld,%lld] = %.9g, expected %.9g",
                (long long)M, (long long)N, (long long)K, ta ? " A^T" : "", tb ? " B^T" : "", isas[k],
                (long long)(i / N), (long long)(i % N), cf[i], ref[i]);
          ok = 0;
          break;
        }
      }
      /* gemv_f32 (a recurrent step at batch 1): each row of A alone, with B's row stride N
       * (and, when B^T, every product once more with bias = that row's reference - 1) */
      for (int64_t m = 0; m < M && ok; m++) {
        float x[1024], bias1[1024];
        if (K > 1024 || N > 1024) break;
        for (int64_t k = 0; k < K; k++) x[k] = (float)(ta ? av[k * M + m] : av[m * K + k]);
        float *bt = malloc(sizeof(float) * (size_t)(K * N > 0 ? K * N : 1));
        for (int64_t k = 0; k < K; k++)
          for (int64_t n = 0; n < N; n++) bt[k * N + n] = (float)(tb ? bv[n * K + k] : bv[k * N + n]);
        for (int64_t n = 0; n < N; n++) bias1[n] = 1.0f;
        KT->gemv_f32(N, K, x, bt, N, cf, tb ? bias1 : NULL);
        for (int64_t n = 0; n < N && ok; n++) {
          ncompares++;
          double want = ref[m * N + n] + (tb ? 1.0 : 0.0);
          if (!(fabs(cf[n] - want) <= 1e-6 + 1e-5 * (bnd[m * N + n] + (tb ? 1.0 : 0.0)))) {
            FAILF("gemv N=%lld K=%lld row %lld [isa %s]: y[%lld] = %.9g, expected %.9g", (long long)N, (long long)K,
                  (long long)m, isas[k], (long long)n, cf[n], want);
            ok = 0;
          }
        }
        free(bt);
      }
      free(af), free(bf), free(pa), free(cf);
    }
  }
  if (Av != A) tp_tensor_release(Av);
  if (Bv != B) tp_tensor_release(Bv);
  tp_tensor_release(A);
  tp_tensor_release(B);
  tp_tensor_release(bias);
  free(av), free(bv), free(biasv), free(ref), free(bnd);
  return ok;
}

static void gemm_edges(void) {
  static const int64_t small[] = {1, 2, 5, 6, 7, 8, 13, 16, 17, 31, 32, 33, 64, 65};
  static const int64_t big[] = {255, 257};
  int ns = (int)(sizeof small / sizeof small[0]), bad = 0, n = 0;
  /* all combinations of the small sizes (rotating the transposed layouts) */
  for (int i = 0; i < ns; i++)
    for (int j = 0; j < ns; j++)
      for (int k = 0; k < ns; k++) {
        int v = (i + j + k) % 4;
        bad += !gemm_check(small[i], small[j], small[k], v == 1, v == 2, v == 3);
        n++;
      }
  /* one big dim with the others from a subset; two big dims with a small one */
  static const int64_t sub[] = {1, 7, 17, 33};
  for (int b = 0; b < 2; b++)
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 4; j++) {
        int64_t B = big[b], x = sub[i], y = sub[j];
        bad += !gemm_check(B, x, y, 0, 0, 0);
        bad += !gemm_check(x, B, y, j % 2, 0, 0);
        bad += !gemm_check(x, y, B, 0, i % 2, 0);
        n += 3;
      }
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) {
      bad += !gemm_check(big[i], big[j], 5, 0, 0, 0);
      bad += !gemm_check(big[i], 3, big[j], 1, 1, 0);
      bad += !gemm_check(6, big[i], big[j], 0, 0, 1);
      n += 3;
    }
  bad += !gemm_check(257, 257, 257, 0, 0, 0);
  bad += !gemm_check(300, 500, 260, 0, 0, 0);
  bad += !gemm_check(3, 2100, 5, 0, 0, 0); /* N beyond one column block */
  bad += !gemm_check(3, 2100, 5, 0, 1, 0);
  n += 4;
  printf("%-4s gemm tile edges: %d shapes, %d failing\n", bad ? "FAIL" : "ok", n, bad);
}

/* ---- special values against libm ---- */
/* The table's row max / min (max_f32, min_f32, minmax_f32: four vector chains, then
 * one, then scalars) on every ISA against a sequential loop: lengths around
 * every chain and vector edge, the extreme at every position, NaN anywhere
 * (min_f32 gives the last NaN, bit for bit, minmax_f32 it twice; max_f32 a
 * NaN), -0 and +0. */
static void row_min_max(void) {
  float a[160];
  const tp_kernels *K = tp_kern();
  for (int n = 1; n <= 160; n += n < 40 ? 1 : 7)
    for (int pos = -1; pos < n; pos += pos < 0 ? 1 : (n > 40 ? 5 : 1))
      for (int kind = 0; kind < 3; kind++) { /* the extreme at pos; a NaN at pos; a second NaN too */
        for (int i = 0; i < n; i++) a[i] = (float)((i * 37 % 23) - 11) * 0.25f + (i % 3 == 0 ? -0.0f : 0.0f);
        uint32_t nanbits = 0x7fc00000u | (uint32_t)(pos + 1), nan2 = 0xffc00000u | 7u;
        if (pos >= 0 && kind == 0) a[pos] = pos % 2 ? 100.0f : -100.0f;
        if (pos >= 0 && kind >= 1) memcpy(&a[pos], &nanbits, 4);
        if (pos >= 0 && kind == 2) memcpy(&a[pos / 2 == pos ? 0 : pos / 2], &nan2, 4);
        float mx = a[0], mn = a[0];
        int last_nan = -1;
        for (int i = 0; i < n; i++) {
          if (a[i] != a[i]) last_nan = i;
          mx = (a[i] > mx || a[i] != a[i]) ? a[i] : mx;
          mn = (a[i] < mn || a[i] != a[i]) ? a[i] : mn;
        }
        float gx = K->max_f32(a, n), gn = K->min_f32(a, n), g2[2];
        K->minmax_f32(a, n, g2);
        ncompares += 4;
        if (last_nan >= 0) {
          uint32_t want, got, got2[2];
          memcpy(&want, &a[last_nan], 4);
          memcpy(&got, &gn, 4);
          memcpy(got2, g2, 8);
          if (got != want) FAILF("%s min_f32 n %d NaN at %d: bits %08x, want the last NaN %08x", tp_isa_name(), n, pos, got, want);
          if (gx == gx) FAILF("%s max_f32 n %d NaN at %d: %g, want a NaN", tp_isa_name(), n, pos, gx);
          if (got2[0] != want || got2[1] != want)
            FAILF("%s minmax_f32 n %d NaN at %d: bits %08x %08x, want the last NaN %08x twice", tp_isa_name(), n, pos,
                  got2[0], got2[1], want);
        } else {
          if (gx != mx) FAILF("%s max_f32 n %d extreme at %d: %g, want %g", tp_isa_name(), n, pos, gx, mx);
          if (gn != mn) FAILF("%s min_f32 n %d extreme at %d: %g, want %g", tp_isa_name(), n, pos, gn, mn);
          if (g2[0] != mn || g2[1] != mx)
            FAILF("%s minmax_f32 n %d extreme at %d: %g %g, want %g %g", tp_isa_name(), n, pos, g2[0], g2[1], mn, mx);
        }
      }
}

static void row_min_max_all(void) {
  for (int i = 0; i < nisas; i++) {
    if (tp_set_isa(isas[i]) != TP_OK) continue;
    row_min_max();
  }
  tp_set_isa("best");
}

static void special_values(void) {
  static const float sv[] = {INFINITY, -INFINITY, NAN, -0.0f, 0.0f, 1.0f, -1.0f, 1e-30f, -1e-30f,
                             1e30f, -1e30f, FLT_MAX, -FLT_MAX, FLT_MIN, 1.5e-38f, 88.0f, 88.5f,
                             88.7f, 88.72f, -87.0f, -87.2f, -87.3f, -86.0f, 20.0f, -20.0f, 9.0f,
                             -9.0f, 0.625f, -0.625f, 0.6f, 1e-7f, 3.0e38f, 0.5f};
  int nsv = (int)(sizeof sv / sizeof sv[0]);
  /* 3 copies at different offsets so each value lands in vector and tail lanes */
  int n = 3 * nsv + 2;
  float *x = malloc(sizeof(float) * (size_t)n);
  for (int i = 0; i < n; i++) x[i] = sv[(i * 7 + i / nsv) % nsv];
  int64_t sh = n;
  tp_tensor *t = NULL;
  tp_tensor_new(TP_F32, 1, &sh, x, &t);
  struct {
    tp_op op;
    const char *name;
  } ops[] = {{TP_OP_EXP, "exp"},   {TP_OP_TANH, "tanh"}, {TP_OP_SIGMOID, "sigmoid"},
             {TP_OP_RELU, "relu"}, {TP_OP_LOG, "log"},   {TP_OP_SQRT, "sqrt"},
             {TP_OP_RSQRT, "rsqrt"}, {TP_OP_NEG, "neg"}, {TP_OP_ABS, "abs"}};
  int bad = 0;
  for (int k = 0; k < nisas; k++) {
    set_isa(isas[k]);
    for (int oi = 0; oi < (int)(sizeof ops / sizeof ops[0]); oi++) {
      tp_tensor *y = NULL;
      if (tp_op_call(ops[oi].op, 1, &t, NULL, &y) != TP_OK) {
        FAILF("special %s: %s", ops[oi].name, tp_last_error());
        continue;
      }
      float *g = malloc(sizeof(float) * (size_t)n);
      tp_tensor_read(y, g, sizeof(float) * (size_t)n);
      tp_tensor_release(y);
      int reported[64] = {0};
      for (int i = 0; i < n; i++) {
        double v = x[i], w;
        switch (ops[oi].op) {
          case TP_OP_EXP: w = exp(v); break;
          case TP_OP_TANH: w = tanh(v); break;
          case TP_OP_SIGMOID: w = 1.0 / (1.0 + exp(-v)); break;
          case TP_OP_RELU: w = isnan(v) ? v : v > 0 ? v : 0.0; break;
          case TP_OP_LOG: w = log(v); break;
          case TP_OP_SQRT: w = sqrt(v); break;
          case TP_OP_RSQRT: w = 1.0 / sqrt(v); break;
          case TP_OP_NEG: w = -v; break;
          default: w = fabs(v); break;
        }
        float wf = (float)w; /* expected float result (inf when it overflows float) */
        double gv = g[i];
        int ok;
        if (isnan(wf)) ok = isnan(gv);
        else if (isinf(wf)) ok = gv == wf;
        else if (fabs(wf) < FLT_MIN) ok = fabs(gv) < 1e-37; /* denormal results: any tiny value */
        else ok = fabs(gv - wf) <= 2e-6 * fabs(wf) + (ops[oi].op == TP_OP_SIGMOID ? 1e-7 : 0);
        /* signs of zeros that libm defines */
        if (ok && wf == 0 && gv == 0 &&
            (ops[oi].op == TP_OP_TANH || ops[oi].op == TP_OP_SQRT || ops[oi].op == TP_OP_NEG ||
             ops[oi].op == TP_OP_ABS))
          ok = !!signbit(gv) == !!signbit(wf);
        int vi = 0;
        while (vi < nsv && !(memcmp(&sv[vi], &x[i], 4) == 0)) vi++;
        if (!ok && !reported[vi]) {
          reported[vi] = 1;
          bad++;
          FAILF("special [isa %s]: %s(%.9g) = %.9g (%a), libm says %.9g (%a)", isas[k],
                ops[oi].name, v, gv, gv, (double)wf, (double)wf);
        }
      }
      free(g);
    }
  }
  /* specific documented identities */
  tp_tensor_release(t);
  free(x);
  printf("%-4s special values through exp/tanh/sigmoid/relu/log/sqrt/rsqrt/neg/abs\n",
         bad ? "FAIL" : "ok");
}

/* Run one section in a child process, so that a crash (a sanitizer report,
 * a signal) in one section is reported as that section's failure and the
 * other sections still run. */
static void isolated(const char *name, void (*fn)(void)) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) { /* no fork: run inline */
    fn();
    return;
  }
  if (pid == 0) {
    failures = 0;
    size_t live0 = tp_live_tensors();
    fn();
    if (tp_live_tensors() != live0)
      FAILF("%s: leak: %zu live tensors at the end, %zu at the start", name, tp_live_tensors(),
            live0);
    printf("section %s: %d cases so far, %d failures\n", name, ncases, failures);
    fflush(stdout);
    exit(failures > 250 ? 250 : failures);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  if (WIFEXITED(st) && WEXITSTATUS(st) == 0) return;
  if (WIFEXITED(st))
    FAILF("section %s: exit status %d (failures above, or a sanitizer report)", name,
          WEXITSTATUS(st));
  else
    FAILF("section %s: CRASHED (signal %d)", name, WIFSIGNALED(st) ? WTERMSIG(st) : -1);
}

static int cur_op;
static void one_op(void);

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* keep the log when a sanitizer aborts */
  check_print_limit = 200;          /* per process: keep the log readable */
  verbose = getenv("TP_TEST_VERBOSE") != NULL;
  size_t live0 = tp_live_tensors();
  const char *sh = getenv("TP_TEST_SHARD");
  if (sh && (sscanf(sh, "%d/%d", &shard_k, &shard_n) != 2 || shard_n < 1 || shard_k < 1 || shard_k > shard_n)) {
    printf("TP_TEST_SHARD='%s': expected k/n with 1 <= k <= n\n", sh);
    return 2;
  }
  if (shard_n > 1) printf("shard %d of %d: differential cases %d, %d + %d, ...\n", shard_k, shard_n, shard_k, shard_k, shard_n);
  for (int i = 0; i < 4; i++) {
    if (tp_set_isa(all_isas[i]) == TP_OK) {
      if (strcmp(tp_isa_name(), all_isas[i]))
        FAILF("tp_set_isa(%s) then tp_isa_name() = %s", all_isas[i], tp_isa_name());
      isas[nisas++] = all_isas[i];
    } else {
      printf("skip ISA %s: %s\n", all_isas[i], tp_last_error());
    }
  }
  if (tp_set_isa("no-such-isa") == TP_OK) FAILF("tp_set_isa accepted an unknown name");
  tp_set_isa("best");
  if (!nisas) {
    printf("no ISA could be selected\n");
    return 77;
  }
  printf("ISAs under test:");
  for (int i = 0; i < nisas; i++) printf(" %s", isas[i]);
  printf("\n");

  for (cur_op = 0; cur_op < TP_OP_COUNT; cur_op++) {
    char name[64];
    snprintf(name, sizeof name, "differential %s", tp_op_name((tp_op)cur_op));
    isolated(name, one_op);
  }
  isolated("bit-identity", bitexact_across_isas);
  isolated("gemm edges", gemm_edges);
  isolated("special values", special_values);
  isolated("row min / max", row_min_max_all);

  if (tp_set_isa("best") != TP_OK) FAILF("tp_set_isa(best) failed");
  if (tp_live_tensors() != live0)
    FAILF("leak: %zu live tensors at the end, %zu at the start", tp_live_tensors(), live0);
  printf("test_kernels: %d cases, %d value comparisons, %d failures\n", ncases, ncompares,
         failures);
  return failures ? 1 : 0;
}

static void one_op(void) { differential_op(cur_op); }
