/* vec_impl.h - the portable vector kernel family, written once with GCC/Clang
 * vector extensions and compiled once per ISA. The including file defines:
 *   VW       lanes of float32 per vector (4, 8, 16)
 *   SFX      name suffix (sse2, avx2, avx512, wasmsimd, generic)
 *   MR, NRV  GEMM register tile: MR rows x NRV vectors of columns
 *   VSQRT(v) a vector square root
 * Elementwise math uses only +, -, *, /, sqrt and bit operations in a fixed
 * order, so all ISAs produce bit-identical results (tails are computed as a
 * full vector on a padded copy, never with a different scalar formula). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "kernels.h"
#include "mathconst.h"

#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)
#define FN(name) CAT(name, SFX)
#define NR (NRV * VW)

#if defined(__wasm__) && !defined(__wasm_atomics__)
#define KTLS
#else
#define KTLS _Thread_local
#endif

typedef float vf __attribute__((vector_size(VW * 4)));
/* FMA contraction where a kernel allows it (GEMM, depthwise conv) */
#if defined(__clang__)
#define CONTRACT _Pragma("clang fp contract(fast)")
#define CONTRACT_ATTR
#else
#define CONTRACT
#define CONTRACT_ATTR __attribute__((optimize("fp-contract=fast")))
#endif
#ifndef VDIV
#define VDIV(a, b) ((a) / (b)) /* fast files: a reciprocal estimate + Newton */
#endif
typedef int32_t vi __attribute__((vector_size(VW * 4)));

static inline vf ld(const float *p) {
  vf v;
  memcpy(&v, p, sizeof v);
  return v;
}
static inline void st(float *p, vf v) { memcpy(p, &v, sizeof v); }
/* A true broadcast. (Adding x to a zero vector, as this file once did,
 * costs an addss per use when x is not a constant and sends -0 to +0: the
 * tails and broadcast operands of the binary kernels then divided by +0
 * where the data held -0; found by the differential tests, test_diff.c.) */
#if VW == 4
#define BCAST_IDX 0, 0, 0, 0
#elif VW == 8
#define BCAST_IDX 0, 0, 0, 0, 0, 0, 0, 0
#else
#define BCAST_IDX 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0
#endif
static inline vf bcast(float x) {
  vf v = {x};
#if defined(__clang__)
  return __builtin_shufflevector(v, v, BCAST_IDX);
#else
  return __builtin_shuffle(v, (vi){BCAST_IDX});
#endif
}
static inline vf splat(float x) { return bcast(x); }
static inline vi splat_i(int32_t x) { return (vi){0} + x; }
static inline vf sel(vi m, vf a, vf b) { return (vf)((m & (vi)a) | (~m & (vi)b)); }
static inline vf vabs(vf x) { return (vf)((vi)x & splat_i(0x7fffffff)); }

/* ---- math: Cephes-style polynomials ---- */
/* e^x. Range reduction x = n ln2 + r, |r| <= ln2/2, degree-6 polynomial,
 * then scaling by 2^n split in two factors so that the whole range from
 * -104 (results down to the smallest denormals) to 88.72 (up to FLT_MAX) is
 * exact in the exponent. */
static inline vf vexp(vf x) {
  vi big = x > splat(TP_EXP_HI), tiny = x < splat(TP_EXP_LO);
  x = sel(x > splat(TP_EXP_HI), splat(TP_EXP_HI), x);
  x = sel(x < splat(TP_EXP_LO), splat(TP_EXP_LO), x);
  vf t = x * splat(TP_LOG2E);
  vf n = (t + splat(TP_ROUND_MAGIC)) - splat(TP_ROUND_MAGIC); /* round to nearest */
  vf r = x - n * splat(TP_LN2_HI);
  r = r - n * splat(TP_LN2_LO);
  vf p = splat(tp_exp_poly[0]);
  p = p * r + splat(tp_exp_poly[1]);
  p = p * r + splat(tp_exp_poly[2]);
  p = p * r + splat(tp_exp_poly[3]);
  p = p * r + splat(tp_exp_poly[4]);
  p = p * r + splat(tp_exp_poly[5]);
  p = p * (r * r) + r + splat(1.0f);
  vi ni = __builtin_convertvector(n, vi);
  vi n1 = ni >> 1, n2 = ni - n1; /* both in [-75, 64] */
  p = p * (vf)((n1 + 127) << 23);
  p = p * (vf)((n2 + 127) << 23);
  p = sel(big, splat(INFINITY), p);
  return sel(tiny, splat(0.0f), p);
}

static inline vf vlog(vf x) {
  vi bits = (vi)x;
  vi invalid = x < splat(0.0f), zero = x == splat(0.0f), inf = x == splat(INFINITY);
  vf e = __builtin_convertvector(((bits >> 23) & 0xff) - 126, vf);
  vf m = (vf)((bits & 0x807fffff) | 0x3f000000); /* [0.5, 1) */
  vi small = m < splat(TP_SQRT1_2);
  e = sel(small, e - splat(1.0f), e);
  m = sel(small, m + m, m) - splat(1.0f);
  vf z = m * m;
  vf y = splat(tp_log_poly[0]);
  y = y * m + splat(tp_log_poly[1]);
  y = y * m + splat(tp_log_poly[2]);
  y = y * m + splat(tp_log_poly[3]);
  y = y * m + splat(tp_log_poly[4]);
  y = y * m + splat(tp_log_poly[5]);
  y = y * m + splat(tp_log_poly[6]);
  y = y * m + splat(tp_log_poly[7]);
  y = y * m + splat(tp_log_poly[8]);
  y = y * m * z;
  y = y + e * splat(TP_LN2_LO);
  y = y - z * splat(0.5f);
  vf r = m + y + e * splat(TP_LN2_HI);
  r = sel(inf, splat(INFINITY), r);
  r = sel(zero, splat(-INFINITY), r);
  r = sel(invalid | (x != x), splat(NAN), r);
  return r;
}

#ifdef FAST_TRANSCENDENTALS
/* The fast family (stax's fused kernels, generated code): tanh as a
 * rational function (Eigen's 13/6 minimax, |error| < 4e-7), no exp;
 * sigmoid(x) = 0.5 tanh(x / 2) + 0.5 (|error| < 3e-7). The Wasm emitter
 * writes the same operations in the same order. */
static inline vf vtanh(vf x0) {
  const float c = TP_TANH_CLAMP;
  vf x = sel(x0 > splat(c), splat(c), x0);
  x = sel(x < splat(-c), splat(-c), x);
  vf x2 = x * x;
  vf p = splat(tp_tanh_p[0]);
  p = p * x2 + splat(tp_tanh_p[1]);
  p = p * x2 + splat(tp_tanh_p[2]);
  p = p * x2 + splat(tp_tanh_p[3]);
  p = p * x2 + splat(tp_tanh_p[4]);
  p = p * x2 + splat(tp_tanh_p[5]);
  p = p * x2 + splat(tp_tanh_p[6]);
  p = p * x;
  vf q = splat(tp_tanh_q[0]);
  q = q * x2 + splat(tp_tanh_q[1]);
  q = q * x2 + splat(tp_tanh_q[2]);
  q = q * x2 + splat(tp_tanh_q[3]);
  /* beyond the clamp the result is exactly +-1 (the rational gives
   * 1 - 2.4e-7 there): gelu(-85) is 0, not -1e-5, and gelu(-inf) is NaN
   * like the exact family's 0.5 x (1 + tanh) */
  vf r = VDIV(p, q);
  r = sel(x0 > splat(c), splat(1.0f), r);
  return sel(x0 < splat(-c), splat(-1.0f), r);
}

static inline vf vsigmoid(vf x) { return splat(0.5f) * vtanh(splat(0.5f) * x) + splat(0.5f); }
#else
/* tanh: odd polynomial below |x| = 0.625, 1 - 2/(e^2|x| + 1) above; the
 * sign of x is restored last (so tanh(-0) = -0). */
static inline vf vtanh(vf x) {
  vf ax = vabs(x);
  vf z = ax * ax;
  vf p = splat(tp_tanh_small_poly[0]);
  p = p * z + splat(tp_tanh_small_poly[1]);
  p = p * z + splat(tp_tanh_small_poly[2]);
  p = p * z + splat(tp_tanh_small_poly[3]);
  p = p * z + splat(tp_tanh_small_poly[4]);
  vf small = p * z * ax + ax;
  vf e = vexp(ax + ax);
  vf big = splat(1.0f) - VDIV(splat(2.0f), e + splat(1.0f));
  vf r = sel(ax < splat(TP_TANH_SMALL), small, big);
  return (vf)((vi)r | ((vi)x & splat_i((int32_t)0x80000000u)));
}

static inline vf vsigmoid(vf x) { return VDIV(splat(1.0f), splat(1.0f) + vexp(-x)); }
#endif

/* erf by Abramowitz-Stegun 7.1.26 (max abs error 1.5e-7). */
static inline vf verf(vf x) {
  vf ax = vabs(x);
  vf t = VDIV(splat(1.0f), splat(1.0f) + splat(TP_ERF_P) * ax);
  vf y = splat(tp_erf_poly[0]);
  y = y * t + splat(tp_erf_poly[1]);
  y = y * t + splat(tp_erf_poly[2]);
  y = y * t + splat(tp_erf_poly[3]);
  y = y * t + splat(tp_erf_poly[4]);
  y = splat(1.0f) - y * t * vexp(-(ax * ax));
  return (vf)((vi)y | ((vi)x & splat_i((int32_t)0x80000000u)));
}

static inline vf unary_vec(int op, vf x) {
  switch (op) {
    case TP_KU_NEG: return -x;
    case TP_KU_ABS: return vabs(x);
    case TP_KU_EXP: return vexp(x);
    case TP_KU_LOG: return vlog(x);
    case TP_KU_SQRT: return VSQRT(x);
    case TP_KU_RSQRT: return splat(1.0f) / VSQRT(x);
    case TP_KU_TANH: return vtanh(x);
    case TP_KU_SIGMOID: return vsigmoid(x);
    case TP_KU_RELU: return sel(x > splat(0.0f), x, sel(x != x, x, splat(0.0f)));
    case TP_KU_GELU_ERF: return splat(0.5f) * x * (splat(1.0f) + verf(x * splat(TP_SQRT1_2)));
    default: {
      vf inner = splat(TP_GELU_TANH_C) * (x + splat(TP_GELU_TANH_K) * x * x * x);
      return splat(0.5f) * x * (splat(1.0f) + vtanh(inner));
    }
  }
}

#ifdef VEC_UNARY_ONLY
void FN(tp_f32_vunary_ukernel)(int op, const float *a, float *y, int64_t n);
void FN(tp_f32_vunary_ukernel)(int op, const float *a, float *y, int64_t n) {
#else
static void FN(tp_f32_vunary_ukernel)(int op, const float *a, float *y, int64_t n) {
#endif
  int64_t i = 0;
  switch (op) { /* hoist the switch out of the loop for the common ops */
#define LOOP(OP)                                              \
  case OP:                                                    \
    for (; i + VW <= n; i += VW) st(y + i, unary_vec(OP, ld(a + i))); \
    break;
    LOOP(TP_KU_NEG) LOOP(TP_KU_ABS) LOOP(TP_KU_EXP) LOOP(TP_KU_LOG) LOOP(TP_KU_SQRT)
    LOOP(TP_KU_RSQRT) LOOP(TP_KU_TANH) LOOP(TP_KU_SIGMOID) LOOP(TP_KU_RELU)
    LOOP(TP_KU_GELU_ERF) LOOP(TP_KU_GELU_TANH)
#undef LOOP
  }
  if (i < n) {
    float buf[VW] = {0};
    memcpy(buf, a + i, sizeof(float) * (size_t)(n - i));
    st(buf, unary_vec(op, ld(buf)));
    memcpy(y + i, buf, sizeof(float) * (size_t)(n - i));
  }
}

#ifndef VEC_UNARY_ONLY
static inline vf binary_vec(int op, vf a, vf b) {
  switch (op) {
    case TP_KBIN_ADD: return a + b;
    case TP_KBIN_SUB: return a - b;
    case TP_KBIN_MUL: return a * b;
    case TP_KBIN_PMAX: return sel(a < b, b, a);
    case TP_KBIN_PMIN: return sel(b < a, b, a);
    case TP_KBIN_MASKPOS: return sel(a > splat(0), b, splat(0));
    default: return a / b;
  }
}

/* One loop per (op, operand layout): the switch is outside the loops. */
#define BIN_LOOPS(OP, EXPR)                                                    \
  case OP:                                                                     \
    if (mode == TP_KBMODE_VV) {                                                    \
      for (; i + VW <= n; i += VW) {                                           \
        vf x = ld(a + i), z = ld(b + i);                                       \
        st(y + i, EXPR);                                                       \
      }                                                                        \
      for (; i < n; i++) {                                                     \
        vf x = splat(a[i]), z = splat(b[i]);                                   \
        y[i] = (EXPR)[0];                                                      \
      }                                                                        \
    } else if (mode == TP_KBMODE_SV) {                                             \
      vf x = splat(a[0]);                                                      \
      for (; i + VW <= n; i += VW) {                                           \
        vf z = ld(b + i);                                                      \
        st(y + i, EXPR);                                                       \
      }                                                                        \
      for (; i < n; i++) {                                                     \
        vf z = splat(b[i]);                                                    \
        y[i] = (EXPR)[0];                                                      \
      }                                                                        \
    } else {                                                                   \
      vf z = splat(b[0]);                                                      \
      for (; i + VW <= n; i += VW) {                                           \
        vf x = ld(a + i);                                                      \
        st(y + i, EXPR);                                                       \
      }                                                                        \
      for (; i < n; i++) {                                                     \
        vf x = splat(a[i]);                                                    \
        y[i] = (EXPR)[0];                                                      \
      }                                                                        \
    }                                                                          \
    break;

static void FN(tp_f32_vbinary_ukernel)(int op, int mode, const float *a, const float *b, float *y,
                                       int64_t n) {
  int64_t i = 0;
  switch (op) {
    BIN_LOOPS(TP_KBIN_ADD, x + z)
    BIN_LOOPS(TP_KBIN_SUB, x - z)
    BIN_LOOPS(TP_KBIN_MUL, x * z)
    BIN_LOOPS(TP_KBIN_DIV, x / z)
    BIN_LOOPS(TP_KBIN_PMAX, sel(x < z, z, x))
    BIN_LOOPS(TP_KBIN_PMIN, sel(z < x, z, x))
    BIN_LOOPS(TP_KBIN_MASKPOS, sel(x > splat(0), z, splat(0)))
  }
}
#undef BIN_LOOPS

static float hsum(vf v) {
  float s = 0;
  for (int i = 0; i < VW; i++) s += v[i];
  return s;
}

static float FN(tp_f32_rsum_ukernel)(const float *a, int64_t n) {
  vf s0 = splat(0), s1 = splat(0), s2 = splat(0), s3 = splat(0);
  int64_t i = 0;
  for (; i + 4 * VW <= n; i += 4 * VW) {
    s0 += ld(a + i);
    s1 += ld(a + i + VW);
    s2 += ld(a + i + 2 * VW);
    s3 += ld(a + i + 3 * VW);
  }
  for (; i + VW <= n; i += VW) s0 += ld(a + i);
  float s = hsum((s0 + s1) + (s2 + s3));
  for (; i < n; i++) s += a[i];
  return s;
}

static float FN(tp_f32_rmax_ukernel)(const float *a, int64_t n) {
  if (n <= 0) return -INFINITY;
  vf m = splat(a[0]), m1 = m, m2 = m, m3 = m;
  int64_t i = 0;
  for (; i + 4 * VW <= n; i += 4 * VW) { /* four chains: the compare-select's latency hidden */
    vf x0 = ld(a + i), x1 = ld(a + i + VW), x2 = ld(a + i + 2 * VW), x3 = ld(a + i + 3 * VW);
    m = sel((x0 > m) | (x0 != x0), x0, m);
    m1 = sel((x1 > m1) | (x1 != x1), x1, m1);
    m2 = sel((x2 > m2) | (x2 != x2), x2, m2);
    m3 = sel((x3 > m3) | (x3 != x3), x3, m3);
  }
  m = sel((m1 > m) | (m1 != m1), m1, m);
  m = sel((m2 > m) | (m2 != m2), m2, m);
  m = sel((m3 > m) | (m3 != m3), m3, m);
  for (; i + VW <= n; i += VW) {
    vf x = ld(a + i);
    m = sel((x > m) | (x != x), x, m);
  }
  float r = m[0];
  for (int k = 1; k < VW; k++) r = (m[k] > r || m[k] != m[k]) ? m[k] : r;
  for (; i < n; i++) r = (a[i] > r || a[i] != a[i]) ? a[i] : r;
  return r;
}

/* min, NaN propagating: with a NaN anywhere the last NaN of a (the
 * sequential loop's answer), found by a backward scan only then. */
static float FN(tp_f32_rmin_ukernel)(const float *a, int64_t n) {
  if (n <= 0) return INFINITY;
  vf m = splat(a[0]), m1 = m, m2 = m, m3 = m;
  vi nan = m != m;
  int64_t i = 0;
  for (; i + 4 * VW <= n; i += 4 * VW) { /* four chains, as rmax */
    vf x0 = ld(a + i), x1 = ld(a + i + VW), x2 = ld(a + i + 2 * VW), x3 = ld(a + i + 3 * VW);
    nan |= (x0 != x0) | (x1 != x1) | (x2 != x2) | (x3 != x3);
    m = sel(x0 < m, x0, m);
    m1 = sel(x1 < m1, x1, m1);
    m2 = sel(x2 < m2, x2, m2);
    m3 = sel(x3 < m3, x3, m3);
  }
  m = sel(m1 < m, m1, m);
  m = sel(m2 < m, m2, m);
  m = sel(m3 < m, m3, m);
  for (; i + VW <= n; i += VW) {
    vf x = ld(a + i);
    nan |= x != x;
    m = sel(x < m, x, m);
  }
  int any = 0;
  float r = m[0];
  for (int k = 0; k < VW; k++) any |= nan[k] != 0, r = m[k] < r ? m[k] : r;
  for (; i < n; i++) any |= a[i] != a[i], r = a[i] < r ? a[i] : r;
  if (any)
    for (i = n - 1; i >= 0; i--)
      if (a[i] != a[i]) return a[i];
  return r;
}

/* min and max in one pass (mm[0] = min, mm[1] = max; DynamicQuantizeLinear's
 * extremes, executor.c minmax_row): with a NaN anywhere both are the last
 * NaN of a (min_f32's answer; max_f32's is a NaN). Otherwise min_f32's and
 * max_f32's values (+0 and -0 compare equal: either may come back). */
static void FN(tp_f32_rminmax_ukernel)(const float *a, int64_t n, float *mm) {
  if (n <= 0) {
    mm[0] = INFINITY, mm[1] = -INFINITY;
    return;
  }
  vf lo = splat(a[0]), lo1 = lo, lo2 = lo, lo3 = lo, hi = lo, hi1 = lo, hi2 = lo, hi3 = lo;
  vi nan = lo != lo;
  int64_t i = 0;
  for (; i + 4 * VW <= n; i += 4 * VW) { /* four chains each, one load per element */
    vf x0 = ld(a + i), x1 = ld(a + i + VW), x2 = ld(a + i + 2 * VW), x3 = ld(a + i + 3 * VW);
    nan |= (x0 != x0) | (x1 != x1) | (x2 != x2) | (x3 != x3);
    lo = sel(x0 < lo, x0, lo), hi = sel(x0 > hi, x0, hi);
    lo1 = sel(x1 < lo1, x1, lo1), hi1 = sel(x1 > hi1, x1, hi1);
    lo2 = sel(x2 < lo2, x2, lo2), hi2 = sel(x2 > hi2, x2, hi2);
    lo3 = sel(x3 < lo3, x3, lo3), hi3 = sel(x3 > hi3, x3, hi3);
  }
  lo = sel(lo1 < lo, lo1, lo), hi = sel(hi1 > hi, hi1, hi);
  lo = sel(lo2 < lo, lo2, lo), hi = sel(hi2 > hi, hi2, hi);
  lo = sel(lo3 < lo, lo3, lo), hi = sel(hi3 > hi, hi3, hi);
  for (; i + VW <= n; i += VW) {
    vf x = ld(a + i);
    nan |= x != x;
    lo = sel(x < lo, x, lo), hi = sel(x > hi, x, hi);
  }
  int any = 0;
  float rl = lo[0], rh = hi[0];
  for (int k = 0; k < VW; k++) any |= nan[k] != 0, rl = lo[k] < rl ? lo[k] : rl, rh = hi[k] > rh ? hi[k] : rh;
  for (; i < n; i++) any |= a[i] != a[i], rl = a[i] < rl ? a[i] : rl, rh = a[i] > rh ? a[i] : rh;
  if (any)
    for (i = n - 1; i >= 0; i--)
      if (a[i] != a[i]) {
        rl = rh = a[i];
        break;
      }
  mm[0] = rl, mm[1] = rh;
}

/* ONNX QuantizeLinear of float32 with one scale and zero point (exact:
 * the same float32 operations per element on every ISA):
 * q = saturate(round_half_even(x / scale) + zp), NaN -> zp; int8 (s8) or
 * uint8 bytes. The rounding adds and subtracts 1.5 * 2^23 after clamping
 * to +-2^22 (beyond which everything saturates anyway). */
static inline float FN(quant_one)(float q, float zp, float lo, float hi) {
  const float big = 4194304.0f, magic = 12582912.0f;
  q = q == q ? q : -zp;
  q = q < -big ? -big : q;
  q = q > big ? big : q;
  q = ((q + magic) - magic) + zp;
  q = q < lo ? lo : q;
  return q > hi ? hi : q;
}
static void FN(tp_f32_quantize_ukernel)(const float *x, float scale, float zp, int s8, void *y, int64_t n) {
  const float lo = s8 ? -128.0f : 0.0f, hi = s8 ? 127.0f : 255.0f;
  const vf vs = splat(scale), vz = splat(zp), vnz = splat(-zp), vlo = splat(lo), vhi = splat(hi);
  const vf vbig = splat(4194304.0f), vnbig = splat(-4194304.0f), vmagic = splat(12582912.0f);
  int64_t i = 0;
  for (; i + VW <= n; i += VW) {
    vf q = ld(x + i) / vs;
    q = sel(q == q, q, vnz);
    q = sel(q < vnbig, vnbig, q);
    q = sel(q > vbig, vbig, q);
    q = ((q + vmagic) - vmagic) + vz;
    q = sel(q < vlo, vlo, q);
    q = sel(q > vhi, vhi, q);
    vi qi = __builtin_convertvector(q, vi); /* exact: whole numbers in [-128, 255] */
    if (s8) {
      typedef int8_t vb __attribute__((vector_size(VW)));
      vb b = __builtin_convertvector(qi, vb);
      memcpy((int8_t *)y + i, &b, VW);
    } else {
      typedef uint8_t vb __attribute__((vector_size(VW)));
      vb b = __builtin_convertvector(qi, vb);
      memcpy((uint8_t *)y + i, &b, VW);
    }
  }
  for (; i < n; i++) {
    float q = FN(quant_one)(x[i] / scale, zp, lo, hi);
    if (s8) ((int8_t *)y)[i] = (int8_t)(int32_t)q;
    else ((uint8_t *)y)[i] = (uint8_t)(int32_t)q;
  }
}

static void FN(tp_f32_softmax_ukernel)(float *y, int64_t n, int log) {
  if (n <= 0) return;
  float m = FN(tp_f32_rmax_ukernel)(y, n);
  if (m == -INFINITY) m = 0; /* all -inf row: keep it finite */
  vf vm = splat(m), acc = splat(0);
  int64_t i = 0;
  float tail[VW];
  for (; i + VW <= n; i += VW) {
    vf e = vexp(ld(y + i) - vm);
    acc += e;
    if (!log) st(y + i, e);
  }
  if (i < n) {
    for (int k = 0; k < VW; k++) tail[k] = i + k < n ? y[i + k] : -INFINITY;
    vf e = vexp(ld(tail) - vm);
    acc += e;
    if (!log)
      for (int k = 0; i + k < n; k++) y[i + k] = e[k];
  }
  float s = hsum(acc);
  if (log) {
    vf ls = splat(vlog(splat(s))[0]); /* (x - max) - log(sum): exact near large x */
    for (i = 0; i + VW <= n; i += VW) st(y + i, (ld(y + i) - vm) - ls);
    for (; i < n; i++) y[i] = ((splat(y[i]) - vm) - ls)[0];
  } else {
    vf inv = splat(1.0f / s);
    for (i = 0; i + VW <= n; i += VW) st(y + i, ld(y + i) * inv);
    for (; i < n; i++) y[i] = (splat(y[i]) * inv)[0];
  }
}

/* ---- GEMM: Goto-style packing + an MR x NR register tile ----
 * A kernel file that brings its own GEMM (kern_avx512.c: gemm_avx512.c)
 * defines GEMM_EXTERNAL and the names GEMM_F32, GEMM_PACK_B_SIZE,
 * GEMM_PACK_B, GEMM_F32_PACKED; this generic one is then left out. */
#ifndef GEMM_TUNE
#define GEMM_TUNE FN(tp_f32_gemm_tune)
#endif
#ifndef GEMM_RELEASE
#define GEMM_RELEASE FN(tp_f32_gemm_release)
#endif
#ifndef GEMM_EXTERNAL
#define GEMM_F32 FN(tp_f32_gemm)
#define GEMM_PACK_B_SIZE FN(tp_f32_gemm_pack_b_size)
#define GEMM_PACK_B FN(tp_f32_gemm_pack_b)
#define GEMM_PACK_A_SIZE FN(tp_f32_gemm_pack_a_size)
#define GEMM_PACK_A FN(tp_f32_gemm_pack_a)
#define GEMM_F32_PACKED_A FN(tp_f32_gemm_packed_a)
#define GEMM_F32_PACKED_A_ROWS FN(tp_f32_gemm_packed_a_rows)
#define GEMM_F32_PACKED FN(tp_f32_gemm_packed)
#define GEMM_F32_PACKED_COLS FN(tp_f32_gemm_packed_cols)
/* Blocking: defaults, or set per thread by max-autotune (gemm_tune). The
 * pack buffer is sized for the largest. */
#define KC_MAX 768
#define MC_MAX (MR * 48)
static KTLS int tune_kc, tune_mc;
#define KC (tune_kc ? (int64_t)tune_kc : (int64_t)256) /* 256 = TP_WASMSIMD_KC */
#define MC (tune_mc ? (int64_t)tune_mc : (int64_t)(MR * 16))
/* columns per packed B block: KC x NC x 4 bytes = 1 MB stays in a 2 MB L2
 * with A and C around it (2048, 2 MB, did not: the 24x864x2240 GEMM of a
 * 3x3 conv took 3.63-3.79 ms in Wasm, 3.38-3.48 with 1024; 512^3 7.26-7.58
 * vs 7.02-7.06; same runs, alternating) */
#define NC 1024
static void FN(tp_f32_gemm_tune)(int kc, int mc) {
  tune_kc = kc <= 0 ? 0 : kc < 16 ? 16 : kc > KC_MAX ? KC_MAX : kc;
  tune_mc = mc <= 0 ? 0 : mc < MR ? MR : mc > MC_MAX ? MC_MAX : mc / MR * MR;
}


static void pack_a(int64_t mc, int64_t kc, const float *A, int64_t rsa, int64_t csa, float *dst) {
  for (int64_t i0 = 0; i0 < mc; i0 += MR) {
    int64_t mr = mc - i0 < MR ? mc - i0 : MR;
    int64_t k0 = 0;
#if MR == 4
    if (mr == 4 && csa == 1) {
      /* rows contiguous: 4x4 blocks transposed in vectors (a conv's weights, packed
       * per call: 96x288 in Wasm cost about as much as the GEMM of a 10x2 plane) */
      typedef float p4 __attribute__((vector_size(16)));
      const float *r[4] = {A + i0 * rsa, A + (i0 + 1) * rsa, A + (i0 + 2) * rsa, A + (i0 + 3) * rsa};
      for (; k0 + 4 <= kc; k0 += 4) {
        p4 v0, v1, v2, v3;
        memcpy(&v0, r[0] + k0, sizeof v0), memcpy(&v1, r[1] + k0, sizeof v1);
        memcpy(&v2, r[2] + k0, sizeof v2), memcpy(&v3, r[3] + k0, sizeof v3);
        p4 t0 = __builtin_shufflevector(v0, v1, 0, 4, 1, 5), t1 = __builtin_shufflevector(v0, v1, 2, 6, 3, 7);
        p4 t2 = __builtin_shufflevector(v2, v3, 0, 4, 1, 5), t3 = __builtin_shufflevector(v2, v3, 2, 6, 3, 7);
        p4 c[4] = {__builtin_shufflevector(t0, t2, 0, 1, 4, 5), __builtin_shufflevector(t0, t2, 2, 3, 6, 7),
                   __builtin_shufflevector(t1, t3, 0, 1, 4, 5), __builtin_shufflevector(t1, t3, 2, 3, 6, 7)};
        memcpy(dst, c, sizeof c);
        dst += 16;
      }
    }
#endif
    for (int64_t k = k0; k < kc; k++) {
      for (int64_t i = 0; i < mr; i++) dst[i] = A[(i0 + i) * rsa + k * csa];
      for (int64_t i = mr; i < MR; i++) dst[i] = 0;
      dst += MR;
    }
  }
}

static void pack_b(int64_t kc, int64_t nc, const float *B, int64_t rsb, int64_t csb, float *dst) {
  for (int64_t j0 = 0; j0 < nc; j0 += NR) {
    int64_t nr = nc - j0 < NR ? nc - j0 : NR;
    for (int64_t k = 0; k < kc; k++) {
      const float *src = B + k * rsb + j0 * csb;
      if (csb == 1 && nr == NR) {
        memcpy(dst, src, sizeof(float) * NR);
      } else {
        for (int64_t j = 0; j < nr; j++) dst[j] = src[j * csb];
        for (int64_t j = nr; j < NR; j++) dst[j] = 0;
      }
      dst += NR;
    }
  }
}

/* C[mr x nr] (+)= a_panel * b_panel; first: overwrite (plus bias). */
CONTRACT_ATTR
static void FN(tp_f32_gemm_ukernel)(int64_t kc, const float *a, const float *b, float *c,
                                    int64_t ldc, int first, const float *bias, int64_t mr,
                                    int64_t nr, const float *pf) {
  CONTRACT
  vf acc[MR][NRV];
  for (int i = 0; i < MR; i++)
    for (int j = 0; j < NRV; j++) acc[i][j] = splat(0);
  for (int64_t k = 0; k < kc; k++) {
    vf bv[NRV];
    for (int j = 0; j < NRV; j++) bv[j] = ld(b + k * NR + j * VW);
    if (pf) /* the next pre-packed B panel, towards L2 (no-op in Wasm) */
      for (int j = 0; j < NR; j += 16) __builtin_prefetch(pf + k * NR + j, 0, 2);
    for (int i = 0; i < MR; i++) {
      vf av = bcast(a[k * MR + i]);
      for (int j = 0; j < NRV; j++) acc[i][j] += av * bv[j];
    }
  }
  if (mr == MR && nr == NR) {
    for (int i = 0; i < MR; i++)
      for (int j = 0; j < NRV; j++) {
        float *p = c + i * ldc + j * VW;
        vf base = first ? (bias ? ld(bias + j * VW) : splat(0)) : ld(p);
        st(p, base + acc[i][j]);
      }
    return;
  }
  float tmp[MR * NR];
  for (int i = 0; i < MR; i++)
    for (int j = 0; j < NRV; j++) st(tmp + i * NR + j * VW, acc[i][j]);
  for (int64_t i = 0; i < mr; i++)
    for (int64_t j = 0; j < nr; j++) {
      float base = first ? (bias ? bias[j] : 0.0f) : c[i * ldc + j];
      c[i * ldc + j] = base + tmp[i * NR + j];
    }
}

static KTLS float *pack_buf;

static void FN(tp_f32_gemm_release)(void) {
  free(pack_buf);
  pack_buf = NULL;
}

static int64_t round_up_nr(int64_t n) { return (n + NR - 1) / NR * NR; }

static int64_t round_up_mr(int64_t m) { return (m + MR - 1) / MR * MR; }

/* pbp: B packed by FN(tp_f32_gemm_pack_b) (per KC block of depth pc, the
 * panels of kc x NR at pbp + pc * round_up(N, NR) + j * kc), or NULL.
 * pap: A packed by FN(tp_f32_gemm_pack_a) (per KC block, the panels of
 * MR x kc at pap + pc * round_up(M, MR) + i * kc), or NULL; A is then not
 * read. */
static void FN(gemm_drive)(int64_t M, int64_t N, int64_t K, const float *A, int64_t rsa,
                           int64_t csa, const float *B, int64_t rsb, int64_t csb,
                           const float *pbp, const float *pap, float *C, int64_t ldc,
                           const float *bias, int64_t j0, int64_t j1, int64_t i0, int64_t i1) {
  if (M <= 0 || N <= 0 || j0 >= j1 || i0 >= i1) return;
  if (K <= 0) {
    for (int64_t i = i0; i < i1; i++)
      for (int64_t j = j0; j < j1; j++) C[i * ldc + j] = bias ? bias[j] : 0.0f;
    return;
  }
  int64_t Np = round_up_nr(N);
  if (!pack_buf) {
    /* one buffer per thread, kept for the life of the thread */
    pack_buf = aligned_alloc(64, sizeof(float) * ((size_t)MC_MAX * KC_MAX + (size_t)KC_MAX * (NC + NR)));
    if (!pack_buf) { /* out of memory: unpacked scalar fallback */
      for (int64_t i = i0; i < i1; i++)
        for (int64_t j = j0; j < j1; j++) {
          float s = bias ? bias[j] : 0.0f;
          for (int64_t k = 0; k < K; k++) {
            float b;
            if (pbp) {
              int64_t pc = k / KC * KC, kc = K - pc < KC ? K - pc : KC;
              b = pbp[pc * Np + j / NR * NR * kc + (k - pc) * NR + j % NR];
            } else {
              b = B[k * rsb + j * csb];
            }
            int64_t pc = k / KC * KC, kc = K - pc < KC ? K - pc : KC;
            float a = pap ? pap[pc * round_up_mr(M) + i / MR * MR * kc + (k - pc) * MR + i % MR]
                          : A[i * rsa + k * csa];
            s += a * b;
          }
          C[i * ldc + j] = s;
        }
      return;
    }
  }
  float *pa = pack_buf, *pb = pack_buf + (size_t)MC_MAX * KC_MAX;
  for (int64_t jc = j0; jc < j1; jc += NC) {
    int64_t nc = j1 - jc < NC ? j1 - jc : NC;
    for (int64_t pc = 0; pc < K; pc += KC) {
      int64_t kc = K - pc < KC ? K - pc : KC;
      const float *bb = pb;
      if (pbp)
        bb = pbp + pc * Np + jc * kc;
      else
        pack_b(kc, nc, B + pc * rsb + jc * csb, rsb, csb, pb);
      for (int64_t ic = i0; ic < i1; ic += MC) {
        int64_t mc = i1 - ic < MC ? i1 - ic : MC;
        const float *aa = pa;
        if (pap)
          aa = pap + pc * round_up_mr(M) + ic * kc;
        else
          pack_a(mc, kc, A + ic * rsa + pc * csa, rsa, csa, pa);
        for (int64_t jr = 0; jr < nc; jr += NR) {
          int64_t nr = nc - jr < NR ? nc - jr : NR;
          for (int64_t ir = 0; ir < mc; ir += MR) {
            int64_t mr = mc - ir < MR ? mc - ir : MR;
            FN(tp_f32_gemm_ukernel)(kc, aa + ir * kc, bb + jr * kc,
                                    C + (ic + ir) * ldc + jc + jr, ldc, pc == 0,
                                    bias ? bias + jc + jr : NULL, mr, nr,
                                    pbp && ir == 0 && jr + NR < nc ? bb + (jr + NR) * kc : NULL);
          }
        }
      }
    }
  }
}

static void FN(tp_f32_gemm)(int64_t M, int64_t N, int64_t K, const float *A, int64_t rsa,
                            int64_t csa, const float *B, int64_t rsb, int64_t csb, float *C,
                            int64_t ldc, const float *bias) {
  FN(gemm_drive)(M, N, K, A, rsa, csa, B, rsb, csb, NULL, NULL, C, ldc, bias, 0, N, 0, M);
}

static size_t FN(tp_f32_gemm_pack_b_size)(int64_t K, int64_t N) {
  if (K <= 0 || N <= 0) return 0;
  return sizeof(float) * (size_t)K * (size_t)round_up_nr(N);
}

static void FN(tp_f32_gemm_pack_b)(int64_t K, int64_t N, const float *B, int64_t rsb,
                                   int64_t csb, float *packed_out) {
  if (K <= 0 || N <= 0) return;
  for (int64_t pc = 0; pc < K; pc += KC) {
    int64_t kc = K - pc < KC ? K - pc : KC;
    pack_b(kc, N, B + pc * rsb, rsb, csb, packed_out + pc * round_up_nr(N));
  }
}

static void FN(tp_f32_gemm_packed)(int64_t M, int64_t N, int64_t K, const float *A, int64_t rsa,
                                   int64_t csa, const float *packed_b, float *C, int64_t ldc,
                                   const float *bias) {
  FN(gemm_drive)(M, N, K, A, rsa, csa, NULL, 0, 0, packed_b, NULL, C, ldc, bias, 0, N, 0, M);
}

static size_t FN(tp_f32_gemm_pack_a_size)(int64_t M, int64_t K) {
  if (K <= 0 || M <= 0) return 0;
  return sizeof(float) * (size_t)K * (size_t)round_up_mr(M);
}

static void FN(tp_f32_gemm_pack_a)(int64_t M, int64_t K, const float *A, int64_t rsa,
                                   int64_t csa, float *packed_out) {
  if (K <= 0 || M <= 0) return;
  for (int64_t pc = 0; pc < K; pc += KC) {
    int64_t kc = K - pc < KC ? K - pc : KC;
    pack_a(M, kc, A + pc * csa, rsa, csa, packed_out + pc * round_up_mr(M));
  }
}

static void FN(tp_f32_gemm_packed_a)(int64_t M, int64_t N, int64_t K, const float *packed_a,
                                     const float *B, int64_t rsb, int64_t csb, float *C,
                                     int64_t ldc, const float *bias) {
  FN(gemm_drive)(M, N, K, NULL, 0, 0, B, rsb, csb, NULL, packed_a, C, ldc, bias, 0, N, 0, M);
}

static void FN(tp_f32_gemm_packed_a_rows)(int64_t M, int64_t N, int64_t K, const float *packed_a,
                                          int64_t i0, int64_t i1, const float *B, int64_t rsb,
                                          int64_t csb, float *C, int64_t ldc, const float *bias) {
  if (i0 < 0 || i1 > M || i0 % MR) return; /* the caller's contract (kernels.h) */
  FN(gemm_drive)(M, N, K, NULL, 0, 0, B, rsb, csb, NULL, packed_a, C, ldc, bias, 0, N, i0, i1);
}

static void FN(tp_f32_gemm_packed_cols)(int64_t M, int64_t N, int64_t K, const float *A,
                                        int64_t rsa, int64_t csa, const float *packed_b,
                                        int64_t j0, int64_t j1, float *C, int64_t ldc,
                                        const float *bias) {
  if (j0 < 0 || j1 > N || j0 % NR) return; /* the caller's contract (kernels.h) */
  FN(gemm_drive)(M, N, K, A, rsa, csa, NULL, 0, 0, packed_b, NULL, C, ldc, bias, j0, j1, 0, M);
}
#endif /* GEMM_EXTERNAL */

/* ---- depthwise convolution: one output row ----
 * y[j] = bias + sum over kh < KH (rows[kh] != NULL: input rows that exist)
 * and kw < KW of w[kh KW + kw] * rows[kh][j sw + kw dw - pl], j < OW, taps
 * outside [0, W) skipped (zero padding). Columns whose taps all lie inside
 * the row are computed a vector at a time with the sum in registers (VW
 * lanes, then 4, then 1); a strided row computes those columns at unit
 * stride in chunks and keeps every sw-th. Border columns check each tap.
 * May contract to FMA. */
typedef float v4f __attribute__((vector_size(16)));

/* z[i] = bias + sum w[kh KW + kw] * rows[kh][c0 + i + kw dw], i < n, every
 * tap inside its row */
CONTRACT_ATTR static void FN(dw_unit)(const float *const *rows, int64_t KH, int64_t KW,
                                      const float *w, float bias, float *z, int64_t n, int64_t c0,
                                      int64_t dw) {
  CONTRACT
  int64_t i = 0;
  /* 3x3 and 5x5 (most depthwise layers): the weights splatted once, in
   * registers, two vectors per step; same order of sums as below */
#define DW_FIXED(KH_, KW_)                                                     \
  if (KH == KH_ && KW == KW_ && n >= 2 * VW) {                                 \
    vf wv[KH_ * KW_];                                                          \
    for (int t = 0; t < KH_ * KW_; t++) wv[t] = bcast(w[t]);                   \
    for (; i + 2 * VW <= n; i += 2 * VW) {                                     \
      vf a0 = bcast(bias), a1 = a0;                                            \
      for (int kh = 0; kh < KH_; kh++) {                                       \
        if (!rows[kh]) continue;                                               \
        const float *p = rows[kh] + c0 + i;                                    \
        for (int kw = 0; kw < KW_; kw++) {                                     \
          a0 += wv[kh * KW_ + kw] * ld(p + kw * dw);                           \
          a1 += wv[kh * KW_ + kw] * ld(p + kw * dw + VW);                      \
        }                                                                      \
      }                                                                        \
      st(z + i, a0);                                                           \
      st(z + i + VW, a1);                                                      \
    }                                                                          \
  }
  DW_FIXED(3, 3)
  else DW_FIXED(5, 5)
#undef DW_FIXED
  for (; i + VW <= n; i += VW) {
    vf acc = bcast(bias);
    for (int64_t kh = 0; kh < KH; kh++) {
      if (!rows[kh]) continue;
      const float *p = rows[kh] + c0 + i, *wk = w + kh * KW;
      for (int64_t kw = 0; kw < KW; kw++) acc += bcast(wk[kw]) * ld(p + kw * dw);
    }
    st(z + i, acc);
  }
#if VW > 4
  for (; i + 4 <= n; i += 4) {
    v4f acc = (v4f){bias, bias, bias, bias};
    for (int64_t kh = 0; kh < KH; kh++) {
      if (!rows[kh]) continue;
      const float *p = rows[kh] + c0 + i, *wk = w + kh * KW;
      for (int64_t kw = 0; kw < KW; kw++) {
        v4f xv;
        memcpy(&xv, p + kw * dw, sizeof xv);
        acc += (v4f){wk[kw], wk[kw], wk[kw], wk[kw]} * xv;
      }
    }
    memcpy(z + i, &acc, sizeof acc);
  }
#endif
  for (; i < n; i++) {
    float acc = bias;
    for (int64_t kh = 0; kh < KH; kh++) {
      if (!rows[kh]) continue;
      const float *p = rows[kh] + c0 + i, *wk = w + kh * KW;
      for (int64_t kw = 0; kw < KW; kw++) acc += wk[kw] * p[kw * dw];
    }
    z[i] = acc;
  }
}

CONTRACT_ATTR static void FN(tp_f32_dwconv_row)(const float *const *rows, int64_t KH, int64_t KW,
                                                const float *w, float bias, float *y, int64_t OW,
                                                int64_t W, int64_t sw, int64_t dw, int64_t pl) {
  CONTRACT
  int64_t j0 = pl > 0 ? (pl + sw - 1) / sw : 0, last = W - 1 - (KW - 1) * dw + pl;
  int64_t j1 = last < 0 ? 0 : last / sw + 1;
  if (j1 > OW) j1 = OW;
  if (j0 > j1) j0 = j1;
  for (int64_t j = 0; j < OW; j++) { /* border columns: bounds per tap */
    if (j == j0) j = j1;
    if (j >= OW) break;
    float acc = bias;
    for (int64_t kh = 0; kh < KH; kh++) {
      const float *r = rows[kh];
      if (!r) continue;
      for (int64_t kw = 0; kw < KW; kw++) {
        int64_t c = j * sw + kw * dw - pl;
        if (c >= 0 && c < W) acc += w[kh * KW + kw] * r[c];
      }
    }
    y[j] = acc;
  }
  if (sw == 1) {
    FN(dw_unit)(rows, KH, KW, w, bias, y + j0, j1 - j0, j0 - pl, dw);
    return;
  }
  float z[512]; /* unit-stride columns j sw .. (j + m - 1) sw of a chunk of m outputs */
  int64_t per = (int64_t)(sizeof z / sizeof z[0] - 1) / sw + 1;
  for (int64_t j = j0; j < j1; j += per) {
    int64_t m = j1 - j < per ? j1 - j : per;
    FN(dw_unit)(rows, KH, KW, w, bias, z, (m - 1) * sw + 1, j * sw - pl, dw);
    for (int64_t q = 0; q < m; q++) y[j + q] = z[q * sw];
  }
}

/* kernels.h's dwconv_row_s2_f32: stride 2 as unit-stride loads from the
 * even and odd columns, the taps in the row kernel's order */
CONTRACT_ATTR static void FN(tp_f32_dwconv_row_s2)(const float *const *ev, const float *const *od, int64_t KH,
                                                   int64_t KW, const float *w, float bias, float *y, int64_t OW) {
  CONTRACT
  int64_t j = 0;
  for (; j + VW <= OW; j += VW) {
    vf acc = bcast(bias);
    for (int64_t kh = 0; kh < KH; kh++) {
      if (!ev[kh]) continue;
      const float *e = ev[kh] + j, *o = od[kh] + j, *wk = w + kh * KW;
      for (int64_t kw = 0; kw < KW; kw++) acc += bcast(wk[kw]) * ld((kw & 1 ? o : e) + (kw >> 1));
    }
    st(y + j, acc);
  }
#if VW > 4
  for (; j + 4 <= OW; j += 4) {
    v4f acc = (v4f){bias, bias, bias, bias};
    for (int64_t kh = 0; kh < KH; kh++) {
      if (!ev[kh]) continue;
      const float *e = ev[kh] + j, *o = od[kh] + j, *wk = w + kh * KW;
      for (int64_t kw = 0; kw < KW; kw++) {
        v4f xv;
        memcpy(&xv, (kw & 1 ? o : e) + (kw >> 1), sizeof xv);
        acc += (v4f){wk[kw], wk[kw], wk[kw], wk[kw]} * xv;
      }
    }
    memcpy(y + j, &acc, sizeof acc);
  }
#endif
  for (; j < OW; j++) {
    float acc = bias;
    for (int64_t kh = 0; kh < KH; kh++) {
      if (!ev[kh]) continue;
      const float *wk = w + kh * KW;
      for (int64_t kw = 0; kw < KW; kw++) acc += wk[kw] * (kw & 1 ? od[kh] : ev[kh])[j + (kw >> 1)];
    }
    y[j] = acc;
  }
}

/* kernels.h's gemv_f32: blocks of 4 vectors of columns, each accumulated
 * over the whole depth in registers (B streamed once, row by row) */
CONTRACT_ATTR static void FN(tp_f32_gemv)(int64_t N, int64_t K, const float *x, const float *B, int64_t ldb, float *y,
                                          const float *bias) {
  CONTRACT
  int64_t j = 0;
  for (; j + 4 * VW <= N; j += 4 * VW) {
    vf a0 = bias ? ld(bias + j) : splat(0), a1 = bias ? ld(bias + j + VW) : splat(0);
    vf a2 = bias ? ld(bias + j + 2 * VW) : splat(0), a3 = bias ? ld(bias + j + 3 * VW) : splat(0);
    for (int64_t k = 0; k < K; k++) {
      const float *b = B + k * ldb + j;
      vf xv = bcast(x[k]);
      a0 += xv * ld(b), a1 += xv * ld(b + VW), a2 += xv * ld(b + 2 * VW), a3 += xv * ld(b + 3 * VW);
    }
    st(y + j, a0), st(y + j + VW, a1), st(y + j + 2 * VW, a2), st(y + j + 3 * VW, a3);
  }
  for (; j + VW <= N; j += VW) {
    vf a = bias ? ld(bias + j) : splat(0);
    for (int64_t k = 0; k < K; k++) a += bcast(x[k]) * ld(B + k * ldb + j);
    st(y + j, a);
  }
  for (; j < N; j++) {
    float a = bias ? bias[j] : 0.0f;
    for (int64_t k = 0; k < K; k++) a += x[k] * B[k * ldb + j];
    y[j] = a;
  }
}

#include "gemm_f16_impl.h"

static void FN(gemm_release_all)(void) {
  GEMM_RELEASE();
  FN(gemm_release_h)();
}

const tp_kernels CAT(tp_kernels, SFX) = {
    .isa = ISA_NAME,
    .vec_width = VW,
    .unary_f32 = FN(tp_f32_vunary_ukernel),
    .binary_f32 = FN(tp_f32_vbinary_ukernel),
    .sum_f32 = FN(tp_f32_rsum_ukernel),
    .max_f32 = FN(tp_f32_rmax_ukernel),
    .min_f32 = FN(tp_f32_rmin_ukernel),
    .minmax_f32 = FN(tp_f32_rminmax_ukernel),
    .quantize_f32 = FN(tp_f32_quantize_ukernel),
    .softmax_f32 = FN(tp_f32_softmax_ukernel),
    .gemm_f32 = GEMM_F32,
    .gemm_pack_b_size = GEMM_PACK_B_SIZE,
    .gemm_pack_b = GEMM_PACK_B,
    .gemm_f32_packed = GEMM_F32_PACKED,
    .gemm_f32_packed_cols = GEMM_F32_PACKED_COLS,
    .gemm_pack_a_size = GEMM_PACK_A_SIZE,
    .gemm_pack_a = GEMM_PACK_A,
    .gemm_f32_packed_a = GEMM_F32_PACKED_A,
    .gemm_f32_packed_a_rows = GEMM_F32_PACKED_A_ROWS,
#ifdef UNARY_FAST
    .unary_fast_f32 = UNARY_FAST,
#else
    .unary_fast_f32 = FN(tp_f32_vunary_ukernel),
#endif
    .gemm_tune = GEMM_TUNE,
    .gemm_release = FN(gemm_release_all),
    .dwconv_row_f32 = FN(tp_f32_dwconv_row),
    .dwconv_row_s2_f32 = FN(tp_f32_dwconv_row_s2),
    .gemv_f32 = FN(tp_f32_gemv),
    .f16_to_f32 = FN(f16_to_f32),
    .f32_to_f16 = FN(f32_to_f16),
    .gemm_pack_b_f16_size = FN(tp_f16_gemm_pack_b_size),
    .gemm_pack_b_f16 = FN(tp_f16_gemm_pack_b),
    .gemm_f32_packed_f16 = FN(tp_f32_gemm_packed_f16),
    .gemm_f32_packed_f16_cols = FN(tp_f32_gemm_packed_f16_cols),
};
#endif /* VEC_UNARY_ONLY */
