/* checked.h - conversions from double to the integer types that say when
 * the value does not fit instead of invoking undefined behaviour. A C cast
 * of an out-of-range double to int64_t is undefined: x86-64 gives
 * INT64_MIN, Wasm's saturating truncation INT64_MAX (issue 15, defect 7), so
 * every conversion of a value that may be out of range goes through these. */
#ifndef TP_CORE_CHECKED_H
#define TP_CORE_CHECKED_H
#include <stdint.h>

/* 1 and *out = v truncated toward zero when -2^63 <= v < 2^63; 0 (and *out
 * untouched) for NaN, infinities and everything outside that range. The
 * bounds are exact doubles: 2^63 itself (the double nearest INT64_MAX) does
 * not fit. */
static inline int tp_f64_to_i64(double v, int64_t *out) {
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0)) return 0;
  *out = (int64_t)v;
  return 1;
}

/* The same for int32_t: -2^31 - 1 < v < 2^31. */
static inline int tp_f64_to_i32(double v, int32_t *out) {
  if (!(v > -2147483649.0 && v < 2147483648.0)) return 0;
  *out = (int32_t)v;
  return 1;
}

#endif
