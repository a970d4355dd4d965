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
  return d == TP_I32 ? tp_f64_fits_i32(v) : d == TP_I64 ? tp_f64_fits_i64(v) : 1;
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
