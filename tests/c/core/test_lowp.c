/* test_lowp.c - float16 / bfloat16 / int8 / uint8 (docs/quantization.md)
 * through the public API, against hand-computed bit patterns and values:
 * casts at the rounding and saturation edges, arithmetic computed in
 * float32/int32 and rounded (or wrapped) once, .npy round trips, names. */
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include "check.h"

static int contains(const void *b, size_t n, const char *s) {
  size_t k = strlen(s);
  for (size_t i = 0; i + k <= n; i++)
    if (!memcmp((const char *)b + i, s, k)) return 1;
  return 0;
}

static tp_tensor *f32s(int n, const float *v) {
  int64_t sh[1] = {n};
  tp_tensor *t = NULL;
  CHECK_OK(tp_tensor_new(TP_F32, 1, sh, v, &t));
  return t;
}

static tp_tensor *typed(tp_dtype d, int n, const void *v) {
  int64_t sh[1] = {n};
  tp_tensor *t = NULL;
  CHECK_OK(tp_tensor_new(d, 1, sh, v, &t));
  return t;
}

static tp_tensor *cast(tp_tensor *x, tp_dtype d) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.dtype = d;
  tp_tensor *y = NULL;
  CHECK_OK(tp_op_call(TP_OP_CAST, 1, &x, &at, &y));
  return y;
}

/* the n raw elements of t (its dtype's size each) equal want */
static void expect_bytes(const char *what, tp_tensor *t, tp_dtype d, const void *want, size_t es, int n) {
  unsigned char got[256];
  CHECKF(t && tp_tensor_dtype(t) == d, "%s: dtype %s, expected %s", what, t ? tp_dtype_name(tp_tensor_dtype(t)) : "-",
         tp_dtype_name(d));
  if (!t || tp_tensor_dtype(t) != d) return;
  CHECK_OK(tp_tensor_read(t, got, es * (size_t)n));
  for (int i = 0; i < n; i++)
    if (memcmp(got + es * (size_t)i, (const unsigned char *)want + es * (size_t)i, es)) {
      unsigned long g = 0, w = 0;
      memcpy(&g, got + es * (size_t)i, es);
      memcpy(&w, (const unsigned char *)want + es * (size_t)i, es);
      FAILF("%s: element %d is 0x%lx, expected 0x%lx", what, i, g, w);
    }
}

static void test_names(void) {
  static const struct { tp_dtype d; const char *name, *short_name; size_t size; } rows[] = {
      {TP_F16, "float16", "f16", 2}, {TP_BF16, "bfloat16", "bf16", 2}, {TP_I8, "int8", "i8", 1}, {TP_U8, "uint8", "u8", 1}};
  for (int i = 0; i < 4; i++) {
    tp_dtype p;
    CHECK(!strcmp(tp_dtype_name(rows[i].d), rows[i].name));
    CHECK(!strcmp(tp_dtype_short(rows[i].d), rows[i].short_name));
    CHECK(tp_dtype_size(rows[i].d) == rows[i].size);
    CHECK(tp_dtype_parse(rows[i].name, &p) == TP_OK && p == rows[i].d);
    CHECK(tp_dtype_parse(rows[i].short_name, &p) == TP_OK && p == rows[i].d);
  }
  tp_dtype p;
  CHECK(tp_dtype_parse("float8", &p) == TP_ERR_INVALID_ARG && strstr(tp_last_error(), "float16"));
}

static void test_f16_cast(void) {
  /* hand-computed: 1 = 0x3c00; 65504 = max (0x7bff); 65519 rounds down, 65520
   * is the half-way point to 2^16 and ties to even = Inf; 2^-24 the smallest
   * subnormal (0x0001); 2^-25 ties to 0; 3*2^-25 ties to 2 (even); 1 + 2^-11
   * ties to 1; 1 + 3*2^-11 ties up to 0x3c02; -0 keeps its sign; +-Inf. */
  const float x[] = {1.0f, 65504.0f, 65519.0f, 65520.0f, -65520.0f, 0x1p-24f, 0x1p-25f, 0x3p-25f,
                     1.0f + 0x1p-11f, 1.0f + 0x3p-11f, -0.0f, INFINITY, -2.5f, 0.1f};
  const uint16_t want[] = {0x3c00, 0x7bff, 0x7bff, 0x7c00, 0xfc00, 0x0001, 0x0000, 0x0002,
                           0x3c00, 0x3c02, 0x8000, 0x7c00, 0xc100, 0x2e66};
  int n = (int)(sizeof x / sizeof *x);
  tp_tensor *t = f32s(n, x), *h = cast(t, TP_F16);
  expect_bytes("float32 -> float16", h, TP_F16, want, 2, n);
  /* back to float32: exact */
  tp_tensor *b = cast(h, TP_F32);
  float back[14];
  CHECK_OK(tp_tensor_read(b, back, sizeof back));
  CHECK(back[0] == 1.0f && back[1] == 65504.0f && isinf(back[3]) && back[5] == 0x1p-24f && back[7] == 0x1p-23f);
  CHECK(signbit(back[10]) && back[12] == -2.5f && back[13] == 0.0999755859375f);
  /* NaN stays NaN */
  float nan = NAN;
  tp_tensor *tn = f32s(1, &nan), *hn = cast(tn, TP_F16);
  uint16_t hb = 0;
  CHECK_OK(tp_tensor_read(hn, &hb, 2));
  CHECKF((hb & 0x7c00) == 0x7c00 && (hb & 0x3ff), "NaN -> 0x%x", hb);
  tp_tensor_release(t), tp_tensor_release(h), tp_tensor_release(b), tp_tensor_release(tn), tp_tensor_release(hn);
}

static void test_bf16_cast(void) {
  /* 1 = 0x3f80; 1 + 2^-8 ties to even (1); 1 + 3*2^-8 ties up; FLT_MAX
   * rounds past bfloat16's max -> Inf; 3.3895e38 is bfloat16's max */
  const float x[] = {1.0f, 1.0f + 0x1p-8f, 1.0f + 0x3p-8f, 3.4028235e38f, 0x1.fep127f, -2.0f, 0x1p-133f};
  const uint16_t want[] = {0x3f80, 0x3f80, 0x3f82, 0x7f80, 0x7f7f, 0xc000, 0x0001};
  int n = (int)(sizeof x / sizeof *x);
  tp_tensor *t = f32s(n, x), *h = cast(t, TP_BF16);
  expect_bytes("float32 -> bfloat16", h, TP_BF16, want, 2, n);
  tp_tensor_release(t), tp_tensor_release(h);
}

static void test_int_casts(void) {
  /* float -> int8/uint8: truncate toward zero, saturate, NaN -> 0 */
  const float x[] = {127.9f, 200.0f, -200.0f, NAN, -0.5f, -128.5f, 255.5f, 300.0f, -1.0f};
  const int8_t wi8[] = {127, 127, -128, 0, 0, -128, 127, 127, -1};
  const uint8_t wu8[] = {127, 200, 0, 0, 0, 0, 255, 255, 0};
  int n = (int)(sizeof x / sizeof *x);
  tp_tensor *t = f32s(n, x), *a = cast(t, TP_I8), *b = cast(t, TP_U8);
  expect_bytes("float32 -> int8", a, TP_I8, wi8, 1, n);
  expect_bytes("float32 -> uint8", b, TP_U8, wu8, 1, n);
  /* int -> int8/uint8 wraps (two's complement, as ONNX's reference / numpy) */
  const int32_t xi[] = {200, 256, -1, -129, 127};
  const int8_t wi[] = {-56, 0, -1, 127, 127};
  const uint8_t wu[] = {200, 0, 255, 127, 127};
  tp_tensor *ti = typed(TP_I32, 5, xi), *ci = cast(ti, TP_I8), *cu = cast(ti, TP_U8);
  expect_bytes("int32 -> int8", ci, TP_I8, wi, 1, 5);
  expect_bytes("int32 -> uint8", cu, TP_U8, wu, 1, 5);
  /* int32 -> float16 (the rounding from the exact value): 2049 ties to 2048,
   * 2051 ties to 2052, 65519 -> 65504, 65520 -> Inf */
  const int32_t xh[] = {2049, 2051, 65519, 65520, -70000};
  const uint16_t wh[] = {0x6800, 0x6802, 0x7bff, 0x7c00, 0xfc00};
  tp_tensor *th = typed(TP_I32, 5, xh), *ch = cast(th, TP_F16);
  expect_bytes("int32 -> float16", ch, TP_F16, wh, 2, 5);
  tp_tensor_release(th), tp_tensor_release(ch);
  /* int8 -> uint8 -> int8 round trip is the identity on bits */
  tp_tensor *u = cast(ci, TP_U8), *back = cast(u, TP_I8);
  expect_bytes("int8 -> uint8 -> int8", back, TP_I8, wi, 1, 5);
  tp_tensor_release(t), tp_tensor_release(a), tp_tensor_release(b), tp_tensor_release(ti);
  tp_tensor_release(ci), tp_tensor_release(cu), tp_tensor_release(u), tp_tensor_release(back);
}

static void test_arith(void) {
  /* int8: computed in int32, wrapped once: 100 + 100 = -56, -100 - 100 = 56 */
  const int8_t a[] = {100, -100, 7}, b[] = {100, 100, -3};
  tp_tensor *ta = typed(TP_I8, 3, a), *tb = typed(TP_I8, 3, b), *y = NULL, *z = NULL, *w = NULL;
  CHECK_OK(tp_add(ta, tb, &y));
  const int8_t wadd[] = {-56, 0, 4};
  expect_bytes("int8 add", y, TP_I8, wadd, 1, 3);
  CHECK_OK(tp_sub(ta, tb, &z));
  const int8_t wsub[] = {0, 56, 10};
  expect_bytes("int8 sub", z, TP_I8, wsub, 1, 3);
  /* uint8 mul wraps: 16 * 16 = 0 (mod 256), 15 * 17 = 255 */
  const uint8_t c[] = {16, 15}, d[] = {16, 17};
  tp_tensor *tc = typed(TP_U8, 2, c), *td = typed(TP_U8, 2, d);
  CHECK_OK(tp_mul(tc, td, &w));
  const uint8_t wmul[] = {0, 255};
  expect_bytes("uint8 mul", w, TP_U8, wmul, 1, 2);
  /* float16: computed in float32 and rounded once. 1 + 2^-11 ties to 1;
   * 2049 = 2048 + 1 ties to 2048 (even); 0.1 + 0.2 in float16 */
  const uint16_t h1[] = {0x3c00, 0x6800, 0x2e66}, h2[] = {0x1000, 0x3c00, 0x3266};
  /* 0x1000 = 2^-11; 0x6800 = 2048; 0x2e66 ~ 0.1, 0x3266 ~ 0.2: sum 0.29992676 -> 0x34cc (0.2998) */
  tp_tensor *th1 = typed(TP_F16, 3, h1), *th2 = typed(TP_F16, 3, h2), *hs = NULL;
  CHECK_OK(tp_add(th1, th2, &hs));
  const uint16_t whs[] = {0x3c00, 0x6800, 0x34cc};
  expect_bytes("float16 add", hs, TP_F16, whs, 2, 3);
  /* a float32 (int32) tensor operand promotes: float16 + float32 is float32,
   * int8 + int32 is int32 (no wrap: 100 + 100 = 200) */
  const float f1[] = {0.5f, 0.5f, 0.5f};
  const int32_t i1[] = {100, 100, 100};
  tp_tensor *tf = f32s(3, f1), *tii = typed(TP_I32, 3, i1), *pf = NULL, *pi = NULL;
  CHECK_OK(tp_add(th1, tf, &pf));
  CHECK(pf && tp_tensor_dtype(pf) == TP_F32);
  CHECK_OK(tp_add(ta, tii, &pi));
  const int32_t wpi[] = {200, 0, 107};
  expect_bytes("int8 + int32", pi, TP_I32, wpi, 4, 3);
  tp_tensor_release(tf), tp_tensor_release(tii), tp_tensor_release(pf), tp_tensor_release(pi);
  /* comparisons of int8 give bool */
  tp_tensor *lt = NULL;
  tp_tensor *in2[2] = {ta, tb};
  CHECK_OK(tp_op_call(TP_OP_LT, 2, in2, NULL, &lt));
  const uint8_t wlt[] = {0, 1, 0};
  expect_bytes("int8 lt", lt, TP_BOOL, wlt, 1, 3);
  tp_tensor_release(ta), tp_tensor_release(tb), tp_tensor_release(y), tp_tensor_release(z), tp_tensor_release(w);
  tp_tensor_release(tc), tp_tensor_release(td), tp_tensor_release(th1), tp_tensor_release(th2), tp_tensor_release(hs);
  tp_tensor_release(lt);
}

static void test_full_arange(void) {
  int64_t sh[1] = {2};
  tp_tensor *t = NULL;
  CHECK_OK(tp_full(TP_F16, 1, sh, 65520.0, &t)); /* rounds to Inf */
  const uint16_t winf[] = {0x7c00, 0x7c00};
  expect_bytes("full float16", t, TP_F16, winf, 2, 2);
  tp_tensor_release(t);
  CHECK(tp_full(TP_I8, 1, sh, 128.0, &t) == TP_ERR_INVALID_ARG && strstr(tp_last_error(), "int8"));
  CHECK(tp_full(TP_U8, 1, sh, -1.0, &t) == TP_ERR_INVALID_ARG && strstr(tp_last_error(), "uint8"));
  CHECK_OK(tp_full(TP_U8, 1, sh, 255.0, &t));
  const uint8_t w255[] = {255, 255};
  expect_bytes("full uint8", t, TP_U8, w255, 1, 2);
  tp_tensor_release(t);
  CHECK_OK(tp_arange(0, 3, 1, TP_I8, &t));
  const int8_t wr[] = {0, 1, 2};
  expect_bytes("arange int8", t, TP_I8, wr, 1, 3);
  tp_tensor_release(t);
  CHECK(tp_arange(0, 200, 1, TP_I8, &t) == TP_ERR_INVALID_ARG);
  CHECK_OK(tp_arange(0, 1.5, 0.5, TP_F16, &t));
  const uint16_t wh[] = {0x0000, 0x3800, 0x3c00};
  expect_bytes("arange float16", t, TP_F16, wh, 2, 3);
  tp_tensor_release(t);
}

static void test_npy(void) {
  const uint16_t h[] = {0x3c00, 0xc100};
  const int8_t i8[] = {-128, 127};
  tp_tensor *th = typed(TP_F16, 2, h), *ti = typed(TP_I8, 2, i8), *back = NULL;
  void *b = NULL;
  size_t n = 0;
  CHECK_OK(tp_npy_encode(th, &b, &n));
  CHECK(b && contains(b, n, "'<f2'"));
  CHECK_OK(tp_npy_decode(b, n, &back));
  expect_bytes("npy float16", back, TP_F16, h, 2, 2);
  tp_free_buffer(b), tp_tensor_release(back), back = NULL;
  CHECK_OK(tp_npy_encode(ti, &b, &n));
  CHECK(b && contains(b, n, "'|i1'"));
  CHECK_OK(tp_npy_decode(b, n, &back));
  expect_bytes("npy int8", back, TP_I8, i8, 1, 2);
  tp_free_buffer(b), tp_tensor_release(back);
  tp_tensor *bf = cast(th, TP_BF16);
  b = NULL;
  CHECK(tp_npy_encode(bf, &b, &n) == TP_ERR_UNSUPPORTED && strstr(tp_last_error(), "bfloat16") && !b);
  tp_tensor_release(th), tp_tensor_release(ti), tp_tensor_release(bf);
}

static tp_status q3(tp_op op, tp_tensor *x, tp_tensor *s, tp_tensor *z, tp_dtype d, tp_tensor **y) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.dtype = d;
  tp_tensor *in[3] = {x, s, z};
  *y = NULL;
  return tp_op_call(op, 3, in, &at, y);
}

static void test_quantize_ops(void) {
  /* x / 0.5 = -2 0.5 1.5 2.5 600 2 NaN; round half to even; + 10; saturate
   * to uint8; NaN -> 0 */
  const float x[] = {-1, 0.25f, 0.75f, 1.25f, 300, 1, NAN};
  const float half = 0.5f;
  const uint8_t zp = 10;
  tp_tensor *tx = f32s(7, x), *ts = NULL, *tz = NULL, *y = NULL;
  CHECK_OK(tp_tensor_new(TP_F32, 0, NULL, &half, &ts));
  CHECK_OK(tp_tensor_new(TP_U8, 0, NULL, &zp, &tz));
  CHECK_OK(q3(TP_OP_QUANTIZE, tx, ts, tz, TP_F32, &y));
  const uint8_t want[] = {8, 10, 12, 12, 255, 12, 0};
  expect_bytes("quantize uint8", y, TP_U8, want, 1, 7);
  tp_tensor_release(y);
  /* no zero point: the dtype attribute; int8 saturates at -128 / 127 */
  CHECK_OK(q3(TP_OP_QUANTIZE, tx, ts, NULL, TP_I8, &y));
  const int8_t want8[] = {-2, 0, 2, 2, 127, 2, 0};
  expect_bytes("quantize int8", y, TP_I8, want8, 1, 7);
  tp_tensor_release(y);
  /* per axis: scale [2] along the last dim of [2, 2]: 1/1 2/2 3/1 4/2 */
  const float x4[] = {1, 2, 3, 4}, s2[] = {1, 2};
  int64_t sh22[2] = {2, 2};
  tp_tensor *t4 = NULL, *ts2 = f32s(2, s2);
  CHECK_OK(tp_tensor_new(TP_F32, 2, sh22, x4, &t4));
  CHECK_OK(q3(TP_OP_QUANTIZE, t4, ts2, NULL, TP_U8, &y));
  const uint8_t want4[] = {1, 1, 3, 2};
  expect_bytes("quantize per axis", y, TP_U8, want4, 1, 4);
  tp_tensor_release(y);
  /* bad scales, checked on every call and named */
  static const float bad[] = {0.0f, -1.0f, NAN, INFINITY};
  static const char *const badtxt[] = {"is 0;", "is -1;", "is nan;", "is inf;"};
  for (int k = 0; k < 4; k++) {
    tp_tensor *tb = NULL;
    CHECK_OK(tp_tensor_new(TP_F32, 0, NULL, &bad[k], &tb));
    char needle[96];
    snprintf(needle, sizeof needle, "quantize: scale element 0 %s a scale must be finite and > 0", badtxt[k]);
    CHECKF(q3(TP_OP_QUANTIZE, tx, tb, tz, TP_F32, &y) == TP_ERR_INVALID_ARG && strstr(tp_last_error(), needle) && !y,
           "bad scale %g: %s", bad[k], tp_last_error());
    tp_tensor_release(tb);
  }
  /* a zero point of another dtype, scales that do not broadcast, x of the wrong dtype */
  const int32_t zi = 300;
  tp_tensor *tzi = NULL, *ts3 = f32s(3, x);
  CHECK_OK(tp_tensor_new(TP_I32, 0, NULL, &zi, &tzi));
  CHECK(q3(TP_OP_QUANTIZE, tx, ts, tzi, TP_F32, &y) == TP_ERR_INVALID_ARG &&
        strstr(tp_last_error(), "quantize: zero_point has dtype int32; int8 or uint8 is required"));
  CHECK(q3(TP_OP_QUANTIZE, t4, ts3, NULL, TP_U8, &y) == TP_ERR_INVALID_ARG &&
        strstr(tp_last_error(), "quantize: scale of shape [3] does not broadcast to x's shape [2,2]"));
  CHECK(q3(TP_OP_QUANTIZE, tx, ts, NULL, TP_I32, &y) == TP_ERR_INVALID_ARG &&
        strstr(tp_last_error(), "quantize: dtype int32; int8 or uint8 is required"));
  /* dequantize: (x - 128) * 0.5 -> -64 0 63.5; a float16 scale gives float16 */
  const uint8_t xq[] = {0, 128, 255}, z128 = 128;
  tp_tensor *txq = typed(TP_U8, 3, xq), *tz128 = NULL, *ts16 = NULL;
  CHECK_OK(tp_tensor_new(TP_U8, 0, NULL, &z128, &tz128));
  CHECK_OK(q3(TP_OP_DEQUANTIZE, txq, ts, tz128, TP_F32, &y));
  const float wdq[] = {-64, 0, 63.5f};
  expect_bytes("dequantize", y, TP_F32, wdq, 4, 3);
  tp_tensor_release(y);
  const uint16_t h05 = 0x3800; /* 0.5 */
  CHECK_OK(tp_tensor_new(TP_F16, 0, NULL, &h05, &ts16));
  CHECK_OK(q3(TP_OP_DEQUANTIZE, txq, ts16, tz128, TP_F32, &y));
  const uint16_t wdq16[] = {0xd400, 0x0000, 0x53f0};
  expect_bytes("dequantize float16 scale", y, TP_F16, wdq16, 2, 3);
  tp_tensor_release(y);
  CHECK(q3(TP_OP_DEQUANTIZE, txq, ts, tz, TP_F32, &y) == TP_OK); /* uint8 zero point: fine */
  tp_tensor_release(y);
  tp_tensor *tz8 = cast(tz, TP_I8);
  CHECK(q3(TP_OP_DEQUANTIZE, txq, ts, tz8, TP_F32, &y) == TP_ERR_INVALID_ARG &&
        strstr(tp_last_error(), "dequantize: zero_point has dtype int8; it must be x's dtype"));
  CHECK(q3(TP_OP_DEQUANTIZE, tx, ts, NULL, TP_F32, &y) == TP_ERR_INVALID_ARG &&
        strstr(tp_last_error(), "dequantize: x has dtype float32; int8, uint8 or int32 is required"));
  /* quantize then dequantize: within half a step of x where not saturated */
  tp_tensor *q = NULL, *dq = NULL;
  CHECK_OK(q3(TP_OP_QUANTIZE, t4, ts2, NULL, TP_U8, &q));
  CHECK_OK(q3(TP_OP_DEQUANTIZE, q, ts2, NULL, TP_F32, &dq));
  float back[4];
  CHECK_OK(tp_tensor_read(dq, back, sizeof back));
  for (int i = 0; i < 4; i++) CHECKF(fabsf(back[i] - x4[i]) <= 0.5f * s2[i % 2], "round trip %d: %g", i, back[i]);
  tp_tensor_release(q), tp_tensor_release(dq), tp_tensor_release(tz8);
  tp_tensor_release(tx), tp_tensor_release(ts), tp_tensor_release(tz), tp_tensor_release(t4), tp_tensor_release(ts2);
  tp_tensor_release(tzi), tp_tensor_release(ts3), tp_tensor_release(txq), tp_tensor_release(tz128), tp_tensor_release(ts16);
}

static void test_bitcast(void) {
  /* the bytes as another dtype of the same size: 1.0f = 0x3f800000, -2.0f =
   * 0xc0000000; int8 -1 = uint8 255; sizes must match; to bool only from bool */
  const float x[] = {1.0f, -2.0f};
  tp_tensor *t = f32s(2, x), *y = NULL;
  tp_attrs at;
  tp_attrs_init(&at);
  at.dtype = TP_I32;
  CHECK_OK(tp_op_call(TP_OP_BITCAST, 1, &t, &at, &y));
  const uint32_t want[] = {0x3f800000u, 0xc0000000u};
  expect_bytes("bitcast float32 -> int32", y, TP_I32, want, 4, 2);
  tp_tensor_release(y);
  const int8_t m[] = {-1, 5};
  tp_tensor *t8 = typed(TP_I8, 2, m);
  at.dtype = TP_U8;
  CHECK_OK(tp_op_call(TP_OP_BITCAST, 1, &t8, &at, &y));
  const uint8_t w8[] = {255, 5};
  expect_bytes("bitcast int8 -> uint8", y, TP_U8, w8, 1, 2);
  tp_tensor_release(y);
  at.dtype = TP_F16;
  CHECK(tp_op_call(TP_OP_BITCAST, 1, &t, &at, &y) == TP_ERR_INVALID_ARG &&
        strstr(tp_last_error(), "bitcast: float32 (4 bytes) to float16 (2 bytes): the sizes must be equal"));
  at.dtype = TP_BOOL;
  CHECK(tp_op_call(TP_OP_BITCAST, 1, &t8, &at, &y) == TP_ERR_INVALID_ARG &&
        strstr(tp_last_error(), "bitcast: to bool only from bool"));
  tp_tensor_release(t), tp_tensor_release(t8);
}

/* The graph text carries the dtypes and the ops' attributes; a graph of
 * them runs: x = 1.5 -3 (float16), scale 0.5 -> q = 3 -6 (int8), back to
 * 1.5 -3, and q's bytes as uint8 3 250. */
static void test_graph_text(void) {
  static const char text[] = "tpgraph v1\n"
                             "%x = placeholder : f16[2]\n"
                             "%s = placeholder : f32[]\n"
                             "%q = quantize(%x, %s, none, dtype=i8) : i8[2]\n"
                             "%d = dequantize(%q, %s, none) : f32[2]\n"
                             "%b = bitcast(%q, dtype=u8) : u8[2]\n"
                             "%h = add(%x, %x) : f16[2]\n"
                             "output(%q, %d, %b, %h)\n";
  tp_graph *g = NULL, *g2 = NULL;
  char *p1 = NULL, *p2 = NULL;
  CHECK_OK(tp_graph_parse(text, sizeof text - 1, &g));
  if (!g) return;
  CHECK_OK(tp_graph_print(g, 1, &p1));
  CHECK(p1 && strstr(p1, "f16[2]") && strstr(p1, "dtype=i8") && strstr(p1, "bitcast(%q, dtype=u8) : u8[2]"));
  CHECK_OK(tp_graph_parse(p1, strlen(p1), &g2));
  if (g2) CHECK_OK(tp_graph_print(g2, 1, &p2));
  CHECKF(p1 && p2 && !strcmp(p1, p2), "the text does not round-trip:\n%s\n%s", p1, p2);
  const uint16_t xh[] = {0x3e00, 0xc200};
  const float half = 0.5f;
  tp_tensor *in[2] = {typed(TP_F16, 2, xh), NULL}, *out[4] = {0};
  int nout = 0;
  CHECK_OK(tp_tensor_new(TP_F32, 0, NULL, &half, &in[1]));
  CHECK_OK(tp_graph_run(g, 2, in, 4, out, &nout));
  if (nout == 4) {
    const int8_t wq[] = {3, -6};
    const float wd[] = {1.5f, -3.0f};
    const uint8_t wb[] = {3, 250};
    const uint16_t wh[] = {0x4200, 0xc600}; /* 3, -6 */
    expect_bytes("graph quantize", out[0], TP_I8, wq, 1, 2);
    expect_bytes("graph dequantize", out[1], TP_F32, wd, 4, 2);
    expect_bytes("graph bitcast", out[2], TP_U8, wb, 1, 2);
    expect_bytes("graph float16 add", out[3], TP_F16, wh, 2, 2);
  }
  for (int i = 0; i < nout; i++) tp_tensor_release(out[i]);
  tp_tensor_release(in[0]), tp_tensor_release(in[1]);
  tp_free_buffer(p1), tp_free_buffer(p2);
  tp_graph_free(g), tp_graph_free(g2);
}

/* float32 -> float16 over a sweep of float32 bit patterns (every 997th,
 * all exponents and signs, NaNs and infinities) against the compiler's
 * _Float16 conversion (IEEE round to nearest even). */
static void test_f16_sweep(void) {
#if defined(__clang__) && (defined(__x86_64__) || defined(__i386__)) && __clang_major__ < 15
  /* clang 14 has no _Float16 on x86 (the TSan tree builds with it); the
   * gcc builds (native, asan) run the sweep */
  printf("skip f16 sweep: _Float16 is not supported by clang %d on x86; the gcc builds run it\n", __clang_major__);
  return;
#else
  const int64_t n = ((int64_t)1 << 32) / 997 + 1;
  float *x = malloc(sizeof(float) * (size_t)n);
  uint16_t *got = malloc(2 * (size_t)n);
  if (!x || !got) {
    FAILF("sweep: out of memory");
    free(x), free(got);
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    uint32_t u = (uint32_t)((uint64_t)i * 997u);
    memcpy(&x[i], &u, 4);
  }
  tp_tensor *t = NULL;
  CHECK_OK(tp_tensor_new(TP_F32, 1, &n, x, &t));
  tp_tensor *h = cast(t, TP_F16);
  CHECK_OK(tp_tensor_read(h, got, 2 * (size_t)n));
  int64_t bad = 0;
  for (int64_t i = 0; i < n; i++) {
    _Float16 r = (_Float16)x[i];
    uint16_t w;
    memcpy(&w, &r, 2);
    int both_nan = (w & 0x7c00) == 0x7c00 && (w & 0x3ff) && (got[i] & 0x7c00) == 0x7c00 && (got[i] & 0x3ff);
    if (w != got[i] && !both_nan && bad++ < 5) FAILF("sweep: %a -> 0x%04x, _Float16 0x%04x", (double)x[i], got[i], w);
  }
  CHECKF(bad == 0, "sweep: %lld of %lld conversions differ", (long long)bad, (long long)n);
  tp_tensor_release(t), tp_tensor_release(h);
  free(x), free(got);
#endif
}

/* matmul_int against hand-computed sums: int8 x uint8; int32 sums wrap
 * (2^30 * 2 + 2^30 * 2 = 2^32 -> 0); K = 1000 of 255 * 255 exact; float
 * operands refused */
static void test_matmul_int(void) {
  const int8_t a[] = {1, 2, 3, -4};
  const uint8_t b[] = {5, 6, 7, 200};
  int64_t s22[2] = {2, 2};
  tp_tensor *ta = NULL, *tb = NULL, *y = NULL;
  CHECK_OK(tp_tensor_new(TP_I8, 2, s22, a, &ta));
  CHECK_OK(tp_tensor_new(TP_U8, 2, s22, b, &tb));
  tp_tensor *in[2] = {ta, tb};
  CHECK_OK(tp_op_call(TP_OP_MATMUL_INT, 2, in, NULL, &y));
  const int32_t want[] = {19, 406, -13, -782};
  expect_bytes("matmul_int int8 x uint8", y, TP_I32, want, 4, 4);
  tp_tensor_release(y), tp_tensor_release(ta), tp_tensor_release(tb);
  const int32_t big[] = {1 << 30, 1 << 30}, two[] = {2, 2};
  int64_t s12[2] = {1, 2}, s21[2] = {2, 1};
  CHECK_OK(tp_tensor_new(TP_I32, 2, s12, big, &ta));
  CHECK_OK(tp_tensor_new(TP_I32, 2, s21, two, &tb));
  in[0] = ta, in[1] = tb;
  CHECK_OK(tp_op_call(TP_OP_MATMUL_INT, 2, in, NULL, &y));
  const int32_t wz[] = {0};
  expect_bytes("matmul_int wraps", y, TP_I32, wz, 4, 1);
  tp_tensor_release(y), tp_tensor_release(ta), tp_tensor_release(tb);
  int64_t s1k[2] = {1, 1000}, sk1[2] = {1000, 1};
  CHECK_OK(tp_full(TP_U8, 2, s1k, 255, &ta));
  CHECK_OK(tp_full(TP_U8, 2, sk1, 255, &tb));
  in[0] = ta, in[1] = tb;
  CHECK_OK(tp_op_call(TP_OP_MATMUL_INT, 2, in, NULL, &y));
  const int32_t wk[] = {1000 * 255 * 255};
  expect_bytes("matmul_int K = 1000", y, TP_I32, wk, 4, 1);
  tp_tensor_release(y), tp_tensor_release(tb);
  const float f[] = {1, 2};
  tp_tensor *tf = NULL;
  CHECK_OK(tp_tensor_new(TP_F32, 2, sk1, NULL, &tf));
  (void)f;
  in[1] = tf;
  CHECK(tp_op_call(TP_OP_MATMUL_INT, 2, in, NULL, &y) == TP_ERR_INVALID_ARG &&
        strstr(tp_last_error(), "matmul_int: b has dtype float32, expected int8, uint8 or int32"));
  tp_tensor_release(ta), tp_tensor_release(tf);
}

/* matmul_int with zero points: hand-computed; per row / per column; the
 * integer GEMM's int32 edge (K = 33025 of 255 x -255, exact) and one past it
 * (the wrapping scalar loop); every int8/uint8 pairing of the same values;
 * bad zero points named. */
static tp_tensor *filled(tp_dtype d, int64_t r, int64_t c, double v) {
  int64_t s[2] = {r, c};
  tp_tensor *t = NULL;
  CHECK_OK(tp_full(d, 2, s, v, &t));
  return t;
}

static void test_matmul_int_zp(void) {
  const uint8_t a[] = {10, 20, 30, 40, 50, 60}; /* [2,3] */
  const int8_t b[] = {1, -2, 3, -4, 5, -6};     /* [3,2] */
  const uint8_t za[] = {10, 20};                /* per row */
  const int8_t zb[] = {1, -1};                  /* per column */
  int64_t s23[2] = {2, 3}, s32[2] = {3, 2}, s2[1] = {2};
  tp_tensor *ta = NULL, *tb = NULL, *tza = NULL, *tzb = NULL, *y = NULL;
  CHECK_OK(tp_tensor_new(TP_U8, 2, s23, a, &ta));
  CHECK_OK(tp_tensor_new(TP_I8, 2, s32, b, &tb));
  CHECK_OK(tp_tensor_new(TP_U8, 1, s2, za, &tza));
  CHECK_OK(tp_tensor_new(TP_I8, 1, s2, zb, &tzb));
  /* (a - za[row]) @ (b - zb[col]): rows [0,10,20], [20,30,40]; b - zb = [[0,-1],[2,-3],[4,-5]] */
  tp_tensor *in[4] = {ta, tb, tza, tzb};
  CHECK_OK(tp_op_call(TP_OP_MATMUL_INT, 4, in, NULL, &y));
  const int32_t want[] = {0 + 20 + 80, 0 - 30 - 100, 0 + 60 + 160, -20 - 90 - 200};
  expect_bytes("matmul_int per-row / per-column zero points", y, TP_I32, want, 4, 4);
  tp_tensor_release(y);
  tp_tensor *in3[3] = {ta, tb, NULL}; /* a NULL zero point is 0 */
  CHECK_OK(tp_op_call(TP_OP_MATMUL_INT, 3, in3, NULL, &y));
  const int32_t w0[] = {10 * 1 + 20 * 3 + 30 * 5, 10 * -2 + 20 * -4 + 30 * -6, 40 + 150 + 300, -80 - 200 - 360};
  expect_bytes("matmul_int no zero points", y, TP_I32, w0, 4, 4);
  tp_tensor_release(y);
  /* bad zero points */
  tp_tensor *in_bad[4] = {ta, tb, tzb, NULL};
  CHECK(tp_op_call(TP_OP_MATMUL_INT, 4, in_bad, NULL, &y) == TP_ERR_INVALID_ARG &&
        strstr(tp_last_error(), "matmul_int: a_zero_point has dtype int8, a uint8; they must match"));
  tp_tensor *z3 = filled(TP_I8, 1, 3, 0);
  tp_tensor *in_sh[4] = {ta, tb, NULL, z3};
  CHECK(tp_op_call(TP_OP_MATMUL_INT, 4, in_sh, NULL, &y) == TP_ERR_INVALID_ARG &&
        strstr(tp_last_error(), "matmul_int: b_zero_point has shape [1,3]; one value or one per column of b (2"));
  tp_tensor *in5[5] = {ta, tb, NULL, NULL, NULL};
  CHECK(tp_op_call(TP_OP_MATMUL_INT, 5, in5, NULL, &y) == TP_ERR_INVALID_ARG &&
        strstr(tp_last_error(), "matmul_int: expected 2 to 4 operands"));
  tp_tensor_release(z3);
  tp_tensor_release(ta), tp_tensor_release(tb), tp_tensor_release(tza), tp_tensor_release(tzb);
  /* the int32 edge: every product (255 - 0) (-128 - 127) = -65025 */
  static const int64_t ks[2] = {33025, 33026};
  for (int e = 0; e < 2; e++) {
    int64_t K = ks[e];
    int64_t exact = -65025 * K;
    int32_t want1 = (int32_t)(uint32_t)(uint64_t)exact; /* the wrapped int32 (K = 33026 overflows) */
    /* the same values as every pairing: uint8 a = 255 (za 0) or int8 a = 127 (za -128);
     * int8 b = -128 (zb 127) or uint8 b = 0 (zb 255) */
    for (int pa = 0; pa < 2; pa++)
      for (int pb = 0; pb < 2; pb++) {
        tp_tensor *A = filled(pa ? TP_I8 : TP_U8, 2, K, pa ? 127 : 255), *B = filled(pb ? TP_U8 : TP_I8, K, 3, pb ? 0 : -128);
        tp_tensor *ZA = filled(pa ? TP_I8 : TP_U8, 1, 1, pa ? -128 : 0), *ZB = filled(pb ? TP_U8 : TP_I8, 1, 1, pb ? 255 : 127);
        tp_tensor *i4[4] = {A, B, ZA, ZB};
        y = NULL;
        CHECK_OK(tp_op_call(TP_OP_MATMUL_INT, 4, i4, NULL, &y));
        int32_t w6[6] = {want1, want1, want1, want1, want1, want1};
        char lbl[96];
        snprintf(lbl, sizeof lbl, "matmul_int K=%lld %s x %s (sum %lld)", (long long)K, pa ? "i8" : "u8", pb ? "u8" : "i8",
                 (long long)exact);
        if (y) expect_bytes(lbl, y, TP_I32, w6, 4, 6);
        tp_tensor_release(y), tp_tensor_release(A), tp_tensor_release(B), tp_tensor_release(ZA), tp_tensor_release(ZB);
      }
  }
}

/* qmatmul (the fused quantized linear layer) by hand: float output with
 * per-column scales, bias and relu; uint8 output with the tie 2.5 -> 2;
 * int8 saturation; bad scales and operands named. */
static tp_tensor *t_of(tp_dtype d, int nd, int64_t d0, int64_t d1, const void *v) {
  int64_t s[2] = {d0, d1};
  tp_tensor *t = NULL;
  CHECK_OK(tp_tensor_new(d, nd, s, v, &t));
  return t;
}

static void test_qmatmul(void) {
  const uint8_t a[] = {10, 20}, za[] = {10};
  const int8_t b[] = {1, 2, 3, 4}, zb[] = {0};
  const float sa[] = {0.5f}, sb[] = {0.25f, 0.5f}, bias[] = {1.0f, -20.0f};
  tp_tensor *A = t_of(TP_U8, 2, 1, 2, a), *B = t_of(TP_I8, 2, 2, 2, b), *ZA = t_of(TP_U8, 0, 0, 0, za),
            *ZB = t_of(TP_I8, 0, 0, 0, zb), *SA = t_of(TP_F32, 0, 0, 0, sa), *SB = t_of(TP_F32, 1, 2, 0, sb),
            *BI = t_of(TP_F32, 1, 2, 0, bias), *y = NULL;
  tp_attrs at;
  tp_attrs_init(&at);
  /* acc = (0, 10) @ [[1,2],[3,4]] = (30, 40); * (0.125, 0.25) = (3.75, 10); + bias = (4.75, -10) */
  tp_tensor *in[9] = {A, B, ZA, ZB, SA, SB, BI, NULL, NULL};
  CHECK_OK(tp_op_call(TP_OP_QMATMUL, 9, in, &at, &y));
  const float w0[] = {4.75f, -10.0f};
  expect_bytes("qmatmul float32, bias", y, TP_F32, w0, 4, 2);
  tp_tensor_release(y);
  at.keepdim = 1;
  CHECK_OK(tp_op_call(TP_OP_QMATMUL, 9, in, &at, &y));
  const float w1[] = {4.75f, 0.0f};
  expect_bytes("qmatmul float32, bias, relu", y, TP_F32, w1, 4, 2);
  tp_tensor_release(y);
  /* uint8: a = (10, 11) - 10 = (0, 1): acc = (3, 4); sb = (1, 0.625), ys = 0.5: 3 * 1 = 3, 4 * 0.625 = 2.5 -> 2 (even) */
  const uint8_t a2[] = {10, 11}, yz[] = {100};
  const float sb2[] = {1.0f, 0.625f}, ys[] = {0.5f};
  const int8_t yz8[] = {125};
  tp_tensor *A2 = t_of(TP_U8, 2, 1, 2, a2), *SB2 = t_of(TP_F32, 1, 2, 0, sb2), *YS = t_of(TP_F32, 0, 0, 0, ys),
            *YZ = t_of(TP_U8, 0, 0, 0, yz), *YZ8 = t_of(TP_I8, 0, 0, 0, yz8);
  at.keepdim = 0;
  tp_tensor *in2[9] = {A2, B, ZA, ZB, SA, SB2, NULL, YS, YZ};
  CHECK_OK(tp_op_call(TP_OP_QMATMUL, 9, in2, &at, &y));
  const uint8_t w2[] = {103, 102};
  expect_bytes("qmatmul uint8, tie to even", y, TP_U8, w2, 1, 2);
  tp_tensor_release(y);
  in2[8] = YZ8; /* 125 + 3 = 128 -> 127, 125 + 2 = 127 */
  CHECK_OK(tp_op_call(TP_OP_QMATMUL, 9, in2, &at, &y));
  const int8_t w3[] = {127, 127};
  expect_bytes("qmatmul int8, saturates", y, TP_I8, w3, 1, 2);
  tp_tensor_release(y);
  /* bad input */
  const float zero[] = {0.0f};
  tp_tensor *Z = t_of(TP_F32, 0, 0, 0, zero);
  /* a_scale 0 (DynamicQuantizeLinear's scale of an all-zero input) multiplies as in the graph: (30, 40) * 0 */
  tp_tensor *in3[9] = {A, B, ZA, ZB, Z, SB, NULL, NULL, NULL};
  CHECK_OK(tp_op_call(TP_OP_QMATMUL, 9, in3, &at, &y));
  const float wz0[] = {0.0f, 0.0f};
  expect_bytes("qmatmul a_scale 0", y, TP_F32, wz0, 4, 2);
  tp_tensor_release(y);
  in3[4] = SA, in3[7] = YS;
  CHECK(tp_op_call(TP_OP_QMATMUL, 9, in3, &at, &y) == TP_ERR_INVALID_ARG &&
        strstr(tp_last_error(), "qmatmul: y_scale and y_zero_point come together"));
  in3[6] = BI, in3[8] = YZ;
  CHECK(tp_op_call(TP_OP_QMATMUL, 9, in3, &at, &y) == TP_ERR_INVALID_ARG &&
        strstr(tp_last_error(), "qmatmul: a float bias needs a float output"));
  in3[6] = NULL, in3[7] = NULL, in3[8] = NULL, in3[5] = Z;
  /* a negative weight scale: the loop, as the graph multiplies: (30, 40) * (0.5, -0.5) */
  in3[5] = t_of(TP_F32, 1, 2, 0, (const float[]){1.0f, -1.0f});
  CHECK_OK(tp_op_call(TP_OP_QMATMUL, 9, in3, &at, &y));
  const float wneg[] = {15.0f, -20.0f};
  expect_bytes("qmatmul negative b_scale", y, TP_F32, wneg, 4, 2);
  tp_tensor_release(y);
  tp_tensor_release(in3[5]);
  /* a quantized output's y_scale is checked as quantize does */
  tp_tensor *in5[9] = {A2, B, ZA, ZB, SA, SB2, NULL, Z, YZ};
  CHECK(tp_op_call(TP_OP_QMATMUL, 9, in5, &at, &y) == TP_ERR_INVALID_ARG &&
        strstr(tp_last_error(), "qmatmul: y_scale element 0 is 0; a scale must be finite and > 0"));
  tp_tensor *bad[4] = {A, B, ZA, ZB};
  tp_tensor *in4[9] = {bad[0], bad[1], bad[3], NULL, SA, SB, NULL, NULL, NULL};
  CHECK(tp_op_call(TP_OP_QMATMUL, 9, in4, &at, &y) == TP_ERR_INVALID_ARG &&
        strstr(tp_last_error(), "qmatmul: a_zero_point has dtype int8, expected uint8"));
  tp_tensor *ts[] = {A, B, ZA, ZB, SA, SB, BI, A2, SB2, YS, YZ, YZ8, Z};
  for (size_t k = 0; k < sizeof ts / sizeof ts[0]; k++) tp_tensor_release(ts[k]);
}

int main(void) {
  size_t live0 = tp_live_tensors();
  test_names();
  test_f16_cast();
  test_f16_sweep();
  test_bf16_cast();
  test_int_casts();
  test_arith();
  test_full_arange();
  test_npy();
  test_quantize_ops();
  test_bitcast();
  test_graph_text();
  test_matmul_int();
  test_matmul_int_zp();
  test_qmatmul();
  CHECKF(tp_live_tensors() == live0, "%zu tensors leaked", tp_live_tensors() - live0);
  printf("test_lowp: %d checks, %d failure(s)\n", checks, failures);
  return failures != 0;
}
