/* test_ops_int.c - hand-computed tests of the integer ops (mod, fmod,
 * bitwise_and / _or / _xor / _not): signs of the remainder, broadcasting,
 * int32 and int64, the extremes (INT_MIN, INT64_MIN, INT64_MAX, x by -1),
 * a zero divisor as an error that leaves the library usable, and non-int
 * operands refused. Eager (tp_op_call) and the reference (tp_op_exec_ref)
 * must both give the values worked out by hand. test_ops.c checks that
 * every op of ops.def has a test here or there. */
#include "op_expect.h"
#include <stdint.h>

/* exact int64 values of t (EXPECT compares in double) */
static void expect_i64_(int line, tp_tensor *t, int n, const int64_t *want) {
  checks++;
  int64_t got[16];
  if (!t || tp_tensor_dtype(t) != TP_I64 || tp_tensor_numel(t) != n ||
      tp_tensor_read(t, got, sizeof(int64_t) * (size_t)n) != TP_OK) {
    FAILF_AT(line, "not an int64 tensor of %d values", n);
    return;
  }
  for (int i = 0; i < n; i++)
    if (got[i] != want[i]) FAILF_AT(line, "element %d is %lld, expected %lld", i, (long long)got[i], (long long)want[i]);
}
#define EXPECT_I64(t, ...) \
  expect_i64_(__LINE__, t, NARGS_I64(__VA_ARGS__), (const int64_t[]){__VA_ARGS__})

static tp_tensor *ref_(int line, tp_op op, int nin, tp_tensor *const *in) {
  tp_tensor *y = NULL;
  if (tp_op_exec_ref(op, nin, in, NULL, &y) != TP_OK) {
    FAILF_AT(line, "reference %s failed: %s", tp_op_name(op), tp_last_error());
    return NULL;
  }
  return track(y);
}
#define REF(op, ...) ref_(__LINE__, op, NARGS_T(__VA_ARGS__), (tp_tensor *[]){__VA_ARGS__})

static void test_mod(void) {
  /* Python: 7 % 3 = 1, -7 % 3 = 2, 7 % -3 = -2, -7 % -3 = -1, 6 % -3 = 0;
   * C: 7 % 3 = 1, -7 % 3 = -1, 7 % -3 = 1, -7 % -3 = -1 */
  tp_tensor *a = I32((5), 7, -7, 7, -7, 6), *b = I32((5), 3, 3, -3, -3, -3);
  for (int r = 0; r < 2; r++) {
    EXPECT(r ? REF(TP_OP_MOD, a, b) : OP(TP_OP_MOD, NULL, a, b), TP_I32, (5), 1, 2, -2, -1, 0);
    EXPECT(r ? REF(TP_OP_FMOD, a, b) : OP(TP_OP_FMOD, NULL, a, b), TP_I32, (5), 1, -1, 1, -1, 0);
  }
  /* broadcast [2,1] by [3], int64, and a weak int scalar */
  tp_tensor *c = I64((2, 1), 10, -10), *d = I64((3), 4, -4, 3);
  EXPECT(OP(TP_OP_MOD, NULL, c, d), TP_I64, (2, 3), 2, -2, 1, 2, -2, 2);
  EXPECT(OP(TP_OP_FMOD, NULL, c, d), TP_I64, (2, 3), 2, 2, 1, -2, -2, -1);
  EXPECT(REF(TP_OP_MOD, c, d), TP_I64, (2, 3), 2, -2, 1, 2, -2, 2);
  EXPECT(OP(TP_OP_MOD, NULL, c, wint(3)), TP_I64, (2, 1), 1, 2);
  EXPECT(OP(TP_OP_MOD, NULL, I32((2), -5, 5), wint(-2)), TP_I32, (2), -1, -1);
  /* the extremes: INT_MIN by -1 is 0 (the quotient overflows, never computed) */
  tp_tensor *mn = I32((3), INT32_MIN, INT32_MIN, INT32_MAX), *dv = I32((3), -1, 3, -2);
  /* INT32_MIN = -2147483648: Python % 3 = 1 (-715827883 * 3 = -2147483649), C: -2; INT32_MAX % -2: -1 / 1 */
  EXPECT(OP(TP_OP_MOD, NULL, mn, dv), TP_I32, (3), 0, 1, -1);
  EXPECT(OP(TP_OP_FMOD, NULL, mn, dv), TP_I32, (3), 0, -2, 1);
  EXPECT(REF(TP_OP_MOD, mn, dv), TP_I32, (3), 0, 1, -1);
  EXPECT(REF(TP_OP_FMOD, mn, dv), TP_I32, (3), 0, -2, 1);
  /* INT64_MIN = -9223372036854775808 = -3074457345618258602 * 3 - 2:
   * % 3 = 1 (Python), -2 (C); INT64_MAX % INT64_MIN = -1 (Python: 2^63-1 - 2^63), C: INT64_MAX */
  tp_tensor *e = I64((4), INT64_MIN, INT64_MIN, INT64_MIN, INT64_MAX),
            *f = I64((4), -1, 3, 7, INT64_MIN);
  /* INT64_MIN % 7: 2^63 = 1317624576693539401 * 7 + 1, so C -1, Python 6 */
  EXPECT_I64(OP(TP_OP_MOD, NULL, e, f), 0, 1, 6, -1);
  EXPECT_I64(OP(TP_OP_FMOD, NULL, e, f), 0, -2, -1, INT64_MAX);
  EXPECT_I64(REF(TP_OP_MOD, e, f), 0, 1, 6, -1);
  EXPECT_I64(REF(TP_OP_FMOD, e, f), 0, -2, -1, INT64_MAX);
  /* a zero divisor: an error naming the element, the library still usable */
  ERR(TP_OP_MOD, NULL, (I32((2, 2), 1, 2, 3, 4), I32((2), 5, 0)), TP_ERR_INVALID_ARG, "mod", "division by zero",
      "[0,1]");
  ERR(TP_OP_FMOD, NULL, (I64((1), 1), I64((1), 0)), TP_ERR_INVALID_ARG, "fmod", "division by zero");
  tp_tensor *y = NULL;
  CHECK(tp_op_exec_ref(TP_OP_MOD, 2, (tp_tensor *[]){I64((1), 1), I64((1), 0)}, NULL, &y) == TP_ERR_INVALID_ARG);
  CHECK(y == NULL);
  /* non-int operands */
  ERR(TP_OP_MOD, NULL, (F32((1), 1), F32((1), 2)), TP_ERR_INVALID_ARG, "mod", "float32", "int32 or int64");
  ERR(TP_OP_FMOD, NULL, (I32((1), 1), wflt(2.5)), TP_ERR_INVALID_ARG, "fmod", "int32 or int64");
  ERR(TP_OP_BITWISE_AND, NULL, (B8((1), 1), B8((1), 1)), TP_ERR_INVALID_ARG, "bitwise_and", "bool");
  ERR(TP_OP_BITWISE_NOT, NULL, (F32((1), 1)), TP_ERR_INVALID_ARG, "bitwise_not", "float32");
  ERR(TP_OP_MOD, NULL, (I32((2), 1, 2), I32((3), 1, 2, 3)), TP_ERR_INVALID_ARG, "mod", "broadcast");
  /* int32 with int64 promotes to int64 */
  EXPECT(OP(TP_OP_MOD, NULL, I32((1), -9), I64((1), 4)), TP_I64, (1), 3);
}

static void test_bitwise(void) {
  /* 12 = 0b1100, 10 = 0b1010: and 8, or 14, xor 6; -1 & x = x; -8 & 7 = 0; -8 | 7 = -1 */
  tp_tensor *a = I32((4), 12, -1, -8, -8), *b = I32((4), 10, 5, 7, 7);
  for (int r = 0; r < 2; r++) {
    EXPECT(r ? REF(TP_OP_BITWISE_AND, a, b) : OP(TP_OP_BITWISE_AND, NULL, a, b), TP_I32, (4), 8, 5, 0, 0);
    EXPECT(r ? REF(TP_OP_BITWISE_OR, a, b) : OP(TP_OP_BITWISE_OR, NULL, a, b), TP_I32, (4), 14, -1, -1, -1);
    EXPECT(r ? REF(TP_OP_BITWISE_XOR, a, b) : OP(TP_OP_BITWISE_XOR, NULL, a, b), TP_I32, (4), 6, -6, -1, -1);
    /* ~x = -x - 1 */
    EXPECT(r ? REF(TP_OP_BITWISE_NOT, a) : OP(TP_OP_BITWISE_NOT, NULL, a), TP_I32, (4), -13, 0, 7, 7);
  }
  /* broadcast [2,1] with [2] */
  EXPECT(OP(TP_OP_BITWISE_XOR, NULL, I64((2, 1), 3, 5), I64((2), 1, 6)), TP_I64, (2, 2), 2, 5, 4, 3);
  EXPECT(OP(TP_OP_BITWISE_AND, NULL, I32((2), 6, 7), wint(3)), TP_I32, (2), 2, 3);
  /* the extremes */
  tp_tensor *e = I64((3), INT64_MIN, INT64_MAX, 0);
  EXPECT_I64(OP(TP_OP_BITWISE_NOT, NULL, e), INT64_MAX, INT64_MIN, -1);
  EXPECT_I64(REF(TP_OP_BITWISE_NOT, e), INT64_MAX, INT64_MIN, -1);
  EXPECT_I64(OP(TP_OP_BITWISE_OR, NULL, e, I64((1), 1)), INT64_MIN + 1, INT64_MAX, 1);
  EXPECT(OP(TP_OP_BITWISE_NOT, NULL, I32((2), INT32_MIN, INT32_MAX)), TP_I32, (2), INT32_MAX, INT32_MIN);
  /* a non-contiguous operand: the transpose of [[1,2],[3,4]] xor 1 */
  tp_attrs tr = A0();
  tr.dim = 0, tr.dim1 = 1;
  tp_tensor *t = OPA(TP_OP_TRANSPOSE, tr, I32((2, 2), 1, 2, 3, 4));
  EXPECT(OP(TP_OP_BITWISE_XOR, NULL, t, wint(1)), TP_I32, (2, 2), 0, 2, 3, 5);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  size_t live0 = tp_live_tensors();
  static const op_test tests[] = {{"test_mod", test_mod}, {"test_bitwise", test_bitwise}};
  run_op_tests(tests, sizeof tests / sizeof tests[0]);
  if (tp_live_tensors() != live0) FAILF("leak: %zu live tensors at the end, %zu at the start", tp_live_tensors(), live0);
  printf("test_ops_int: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
