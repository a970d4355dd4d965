/* num.h - checked conversions of doubles to integers (core layer; every
 * layer may include it). In C, casting a double whose truncation is outside
 * the target type (or NaN) is undefined behaviour: x86 gives INT64_MIN,
 * Wasm's trunc_sat saturates, and UBSan does not flag it. Every conversion
 * of a double that may be out of range goes through these instead, so the
 * native and the Wasm builds give the same results (docs/reliability.md,
 * "Numbers: promotion and overflow").
 *
 *   tp_f64_to_i64_sat / tp_f64_to_i32_sat  the cast rule: truncate toward
 *       zero, saturate at the type's limits, NaN -> 0 (Wasm's
 *       i64.trunc_sat_f64_s; the cast operator and ONNX Cast).
 *   tp_f64_fits_i64 / tp_f64_fits_i32      1 when the value truncated toward
 *       zero is representable (NaN and +-Inf never are).
 *   tp_f64_is_int64                        1 when v is a whole number in
 *       [-2^63, 2^63): exactly an int64.
 *   tp_f64_fits_dtype                      the same test for a tp_dtype
 *       (floats and bool: always 1).
 *   tp_f64_to_i64 / tp_f64_to_i32          1 and *out = v truncated toward
 *       zero when it fits, else 0 with *out untouched. */
#ifndef TP_CORE_NUM_H
#define TP_CORE_NUM_H

#include "../tensorplay.h"
#include <math.h>
#include <stdint.h>

/* 2^63 and 2^31 as exact doubles: the first values past the top. */
#define TP_F64_2P63 9223372036854775808.0
#define TP_F64_2P31 2147483648.0

static inline int tp_f64_fits_i64(double v) {
  /* no double lies strictly between -2^63 - 1 and -2^63: [-2^63, 2^63) */
  return v >= -TP_F64_2P63 && v < TP_F64_2P63;
}

static inline int tp_f64_fits_i32(double v) {
  /* (-2^31 - 1, 2^31): truncation toward zero lands in [INT32_MIN, INT32_MAX] */
  return v > -TP_F64_2P31 - 1.0 && v < TP_F64_2P31;
}

static inline int64_t tp_f64_to_i64_sat(double v) {
  if (v != v) return 0;
  if (v >= TP_F64_2P63) return INT64_MAX;
  if (v < -TP_F64_2P63) return INT64_MIN;
  return (int64_t)v;
}

static inline int32_t tp_f64_to_i32_sat(double v) {
  if (v != v) return 0;
  if (v >= TP_F64_2P31) return INT32_MAX;
  if (v <= -TP_F64_2P31 - 1.0) return INT32_MIN;
  return (int32_t)v;
}

static inline int tp_f64_is_int64(double v) {
  return tp_f64_fits_i64(v) && (double)(int64_t)v == v;
}

static inline int tp_f64_fits_dtype(double v, tp_dtype d) {
  switch (d) {
    case TP_I32: return tp_f64_fits_i32(v);
    case TP_I64: return tp_f64_fits_i64(v);
    case TP_I8: return v > -129.0 && v < 128.0;
    case TP_U8: return v > -1.0 && v < 256.0;
    default: return 1;
  }
}

/* float -> int8 / uint8: truncate toward zero, saturate, NaN -> 0 (the
 * cast rule of the wider ints above). */
static inline int8_t tp_f64_to_i8_sat(double v) {
  if (v != v) return 0;
  if (v >= 127.0) return 127;
  if (v <= -128.0) return -128;
  return (int8_t)v;
}
static inline uint8_t tp_f64_to_u8_sat(double v) {
  if (v != v) return 0;
  if (v >= 255.0) return 255;
  if (v <= 0.0) return 0;
  return (uint8_t)v;
}

/* ---- float16 / bfloat16 (IEEE binary16, bfloat16 = float32's top half) ----
 * To them: round to nearest, ties to even, from the double directly (one
 * rounding, no double rounding through float32); past the largest finite
 * value -> +-Inf; NaN stays NaN (quiet, sign kept). */
static inline float tp_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ffu, bits;
  if (e == 0x1f) bits = sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0); /* inf / NaN */
  else if (e) bits = sign | ((e + 112) << 23) | (m << 13);
  else if (!m) bits = sign;
  else { /* subnormal: m * 2^-24, exact in float32 */
    float f = (float)m * (1.0f / 16777216.0f);
    return sign ? -f : f;
  }
  union { uint32_t u; float f; } u = {bits};
  return u.f;
}

static inline uint16_t tp_f64_to_f16(double v) {
  union { double d; uint64_t u; } x = {v};
  uint16_t sign = (uint16_t)((x.u >> 48) & 0x8000u);
  double a = v < 0 ? -v : v;
  if (v != v) return (uint16_t)(sign | 0x7e00u | ((x.u >> 42) & 0x1ffu));
  if (a >= 65520.0) return (uint16_t)(sign | 0x7c00u); /* 65520 = max + half an ulp: ties go to even = inf */
  if (a < 6.103515625e-05) { /* subnormal range: units of 2^-24, ties to even */
    double q = a * 16777216.0, f = (double)(int64_t)q, r = q - f;
    int64_t m = (int64_t)f + (r > 0.5 || (r == 0.5 && ((int64_t)f & 1)));
    return (uint16_t)(sign | (uint16_t)m); /* m == 1024 is the smallest normal: still right */
  }
  int e;
  double fr = frexp(a, &e); /* a = fr * 2^e, fr in [0.5, 1) */
  double q = fr * 2048.0, f = (double)(int64_t)q, r = q - f; /* 11 significant bits */
  int64_t m = (int64_t)f + (r > 0.5 || (r == 0.5 && ((int64_t)f & 1)));
  if (m == 2048) m = 1024, e++;
  int be = e - 1 + 15; /* biased exponent of 1.m * 2^(e-1) */
  if (be >= 31) return (uint16_t)(sign | 0x7c00u);
  return (uint16_t)(sign | (uint16_t)(be << 10) | (uint16_t)(m - 1024));
}

/* The same rounding from a float32, on its bits (the cast's fast path;
 * tests/c/core/test_lowp.c compares it with the compiler's _Float16 over a
 * sweep of float32 bit patterns). */
static inline uint16_t tp_f32_to_f16(float f) {
  union { float f; uint32_t u; } x = {f};
  uint16_t sign = (uint16_t)((x.u >> 16) & 0x8000u);
  uint32_t ax = x.u & 0x7fffffffu;
  if (ax >= 0x7f800000u) /* Inf, NaN (quiet, top payload bits kept) */
    return (uint16_t)(sign | (ax > 0x7f800000u ? 0x7e00u | ((ax >> 13) & 0x3ffu) : 0x7c00u));
  if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* >= 65520: Inf */
  if (ax <= 0x33000000u) return sign;                      /* <= 2^-25: 0 (2^-25 ties to even 0) */
  if (ax < 0x38800000u) { /* below 2^-14: a subnormal, m = round(|f| * 2^24) */
    uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
    int shift = 126 - (int)(ax >> 23); /* 14..24 */
    uint32_t m = mant >> shift, rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
    m += rem > half || (rem == half && (m & 1u));
    return (uint16_t)(sign | m);
  }
  uint32_t r = (ax - 0x38000000u) >> 13, rem = ax & 0x1fffu; /* rebias 127 -> 15, 23 -> 10 bits */
  r += rem > 0x1000u || (rem == 0x1000u && (r & 1u));        /* a carry moves into the exponent */
  return (uint16_t)(sign | r);
}

static inline float tp_bf16_to_f32(uint16_t h) {
  union { uint32_t u; float f; } u = {(uint32_t)h << 16};
  return u.f;
}

static inline uint16_t tp_f64_to_bf16(double v) {
  union { float f; uint32_t u; } x;
  if (v != v) {
    x.f = (float)v;
    return (uint16_t)((x.u >> 16) | 0x40u);
  }
  /* from the double: 8 significant bits, ties to even; via frexp so that no
   * float32 rounding happens first */
  double a = v < 0 ? -v : v;
  uint16_t sign = v < 0 || (v == 0 && signbit(v)) ? 0x8000u : 0;
  if (a == 0) return sign;
  if (a >= 3.3961775292304470e38) return (uint16_t)(sign | 0x7f80u); /* max + half an ulp */
  int e;
  double fr = frexp(a, &e);
  if (e - 1 < -126) { /* subnormal: units of 2^-133 */
    double q = ldexp(a, 133), f = floor(q), r = q - f;
    int64_t m = (int64_t)f + (r > 0.5 || (r == 0.5 && ((int64_t)f & 1)));
    return (uint16_t)(sign | (uint16_t)m);
  }
  double q = fr * 256.0, f = floor(q), r = q - f;
  int64_t m = (int64_t)f + (r > 0.5 || (r == 0.5 && ((int64_t)f & 1)));
  if (m == 256) m = 128, e++;
  int be = e - 1 + 127;
  if (be >= 255) return (uint16_t)(sign | 0x7f80u);
  return (uint16_t)(sign | (uint16_t)(be << 7) | (uint16_t)(m - 128));
}

static inline int tp_f64_to_i64(double v, int64_t *out) {
  if (!tp_f64_fits_i64(v)) return 0;
  *out = (int64_t)v;
  return 1;
}

static inline int tp_f64_to_i32(double v, int32_t *out) {
  if (!tp_f64_fits_i32(v)) return 0;
  *out = (int32_t)v;
  return 1;
}

#endif
