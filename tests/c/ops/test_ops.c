/* test_ops.c - every operator of src/ops/ops.def against hand-computed
 * expected values on small tensors: broadcasting, weak scalars and dtype
 * promotion, int/bool inputs, views (transpose, slice, reshape), strided
 * inputs, empty and 0-d tensors, error statuses and messages, and a leak
 * check at the end.
 *
 * Written independently of the implementation: every expected number below
 * was worked out by hand (or with a calculator for transcendental values),
 * never by calling the library's own reference kernels. */
#include "ops/ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"

#include "op_expect.h"

static void test_add_broadcast(void) {
  tp_tensor *a = F32((2, 2), 1, 2, 3, 4), *b = F32((2), 10, 20);
  EXPECT(OP(TP_OP_ADD, NULL, a, b), TP_F32, (2, 2), 11, 22, 13, 24);
  EXPECT(OP(TP_OP_ADD, NULL, b, a), TP_F32, (2, 2), 11, 22, 13, 24);
  /* named wrapper */
  tp_tensor *y = NULL;
  CHECK(tp_add(a, b, &y) == TP_OK);
  track(y);
  EXPECT(y, TP_F32, (2, 2), 11, 22, 13, 24);

  /* [3,1] + [1,4] -> [3,4] */
  tp_tensor *c = F32((3, 1), 1, 2, 3), *d = F32((1, 4), 10, 20, 30, 40);
  EXPECT(OP(TP_OP_ADD, NULL, c, d), TP_F32, (3, 4), 11, 21, 31, 41, 12, 22, 32, 42, 13, 23, 33,
         43);
  /* [2,1,3] + [4,1] -> [2,4,3] */
  tp_tensor *e = F32((2, 1, 3), 1, 2, 3, 4, 5, 6), *f = F32((4, 1), 0, 10, 20, 30);
  EXPECT(OP(TP_OP_ADD, NULL, e, f), TP_F32, (2, 4, 3), 1, 2, 3, 11, 12, 13, 21, 22, 23, 31, 32,
         33, 4, 5, 6, 14, 15, 16, 24, 25, 26, 34, 35, 36);
  /* [4,1] + [2,1,3] (swapped operands) */
  EXPECT(OP(TP_OP_ADD, NULL, f, e), TP_F32, (2, 4, 3), 1, 2, 3, 11, 12, 13, 21, 22, 23, 31, 32,
         33, 4, 5, 6, 14, 15, 16, 24, 25, 26, 34, 35, 36);
  /* strong 0-d + [3] */
  EXPECT(OP(TP_OP_ADD, NULL, f0(5), F32((3), 1, 2, 3)), TP_F32, (3), 6, 7, 8);
  EXPECT(OP(TP_OP_ADD, NULL, F32((3), 1, 2, 3), f0(5)), TP_F32, (3), 6, 7, 8);
  /* 0-d + 0-d */
  EXPECT0(OP(TP_OP_ADD, NULL, f0(1.5f), f0(2)), TP_F32, 3.5);
  /* [1] + [3] and [3] + [1] */
  EXPECT(OP(TP_OP_ADD, NULL, F32((1), 100), F32((3), 1, 2, 3)), TP_F32, (3), 101, 102, 103);
  /* [2,1] + [1] -> [2,1] */
  EXPECT(OP(TP_OP_ADD, NULL, F32((2, 1), 1, 2), F32((1), 3)), TP_F32, (2, 1), 4, 5);
  /* long row + broadcast column (inner runs longer than a vector) */
  tp_tensor *r = F32((1, 9), 0, 1, 2, 3, 4, 5, 6, 7, 8), *col = F32((2, 1), 100, 200);
  EXPECT(OP(TP_OP_ADD, NULL, col, r), TP_F32, (2, 9), 100, 101, 102, 103, 104, 105, 106, 107,
         108, 200, 201, 202, 203, 204, 205, 206, 207, 208);
  /* empty broadcast: [0] + [1] -> [0]; [1,3] + [0,3] -> [0,3]; [0,1] + [1,5] -> [0,5] */
  EXPECT_SHAPE(OP(TP_OP_ADD, NULL, EMPTY(TP_F32, (0)), F32((1), 1)), TP_F32, (0));
  EXPECT_SHAPE(OP(TP_OP_ADD, NULL, F32((1, 3), 1, 2, 3), EMPTY(TP_F32, (0, 3))), TP_F32, (0, 3));
  EXPECT_SHAPE(OP(TP_OP_ADD, NULL, EMPTY(TP_F32, (0, 1)), EMPTY(TP_F32, (1, 5))), TP_F32, (0, 5));
  /* int32 / int64 elementwise with broadcasting */
  EXPECT(OP(TP_OP_ADD, NULL, I32((2, 2), 1, 2, 3, 4), I32((2), 10, 20)), TP_I32, (2, 2), 11, 22,
         13, 24);
  EXPECT(OP(TP_OP_ADD, NULL, I64((2, 1), 1, 2), I64((3), 10, 20, 30)), TP_I64, (2, 3), 11, 21, 31,
         12, 22, 32);
}

static void test_sub_mul_div(void) {
  EXPECT(OP(TP_OP_SUB, NULL, F32((3), 5, 7, 9), F32((3), 1, 2, 3)), TP_F32, (3), 4, 5, 6);
  EXPECT(OP(TP_OP_SUB, NULL, F32((2, 1), 10, 20), F32((3), 1, 2, 3)), TP_F32, (2, 3), 9, 8, 7, 19,
         18, 17);
  EXPECT(OP(TP_OP_SUB, NULL, I64((3), 1, 2, 3), I64((1), 5)), TP_I64, (3), -4, -3, -2);
  EXPECT(OP(TP_OP_MUL, NULL, F32((2, 2), 1, 2, 3, 4), F32((2, 1), 2, 3)), TP_F32, (2, 2), 2, 4, 9,
         12);
  EXPECT(OP(TP_OP_MUL, NULL, I32((3), -2, 3, 4), I32((3), 5, -6, 0)), TP_I32, (3), -10, -18, 0);
  EXPECT(OP(TP_OP_DIV, NULL, F32((3), 1, 2, 3), F32((1), 2)), TP_F32, (3), 0.5, 1, 1.5);
  EXPECT(OP(TP_OP_DIV, NULL, F32((4), 1, -1, 0, 6), F32((4), 0, 0, 0, -4)), TP_F32, (4), INFINITY,
         -INFINITY, NAN, -1.5);
  /* true division of integers */
  EXPECT(OP(TP_OP_DIV, NULL, I32((3), 7, -7, 1), I32((3), 2, 2, 0)), TP_F32, (3), 3.5, -3.5,
         INFINITY);
  EXPECT(OP(TP_OP_DIV, NULL, I64((2), 1, 3), I64((2), 4, 4)), TP_F32, (2), 0.25, 0.75);
  EXPECT(OP(TP_OP_DIV, NULL, B8((2), 1, 0), F32((2), 2, 2)), TP_F32, (2), 0.5, 0);
  /* integer overflow wraps (two's complement), like numpy and torch */
  EXPECT(OP(TP_OP_ADD, NULL, I32((2), 2147483647, -2147483647 - 1), I32((2), 1, -1)), TP_I32, (2),
         -2147483648.0, 2147483647);
  EXPECT(OP(TP_OP_MUL, NULL, I32((1), 65536), I32((1), 65536)), TP_I32, (1), 0);
}

static void test_scalars_and_promotion(void) {
  tp_tensor *x = F32((3), 1, 2, 3), *xi = I32((3), 1, 2, 3), *xl = I64((2), 1, 2);
  tp_tensor *y;
  /* x_f32 + 2 stays f32 (both sides) */
  EXPECT(OP(TP_OP_ADD, NULL, x, wint(2)), TP_F32, (3), 3, 4, 5);
  EXPECT(OP(TP_OP_ADD, NULL, wint(2), x), TP_F32, (3), 3, 4, 5);
  EXPECT(OP(TP_OP_ADD, NULL, x, wflt(0.5)), TP_F32, (3), 1.5, 2.5, 3.5);
  /* scalar on the left of non-commutative ops */
  EXPECT(OP(TP_OP_SUB, NULL, wint(10), x), TP_F32, (3), 9, 8, 7);
  EXPECT(OP(TP_OP_SUB, NULL, x, wint(1)), TP_F32, (3), 0, 1, 2);
  EXPECT(OP(TP_OP_DIV, NULL, wflt(1), F32((2), 2, 4)), TP_F32, (2), 0.5, 0.25);
  EXPECT(OP(TP_OP_DIV, NULL, F32((2), 2, 4), wflt(4)), TP_F32, (2), 0.5, 1);
  /* int32 tensor + 1.5 becomes f32; int32 + 3 stays int32 */
  EXPECT(OP(TP_OP_ADD, NULL, xi, wflt(1.5)), TP_F32, (3), 2.5, 3.5, 4.5);
  EXPECT(OP(TP_OP_ADD, NULL, wflt(1.5), xi), TP_F32, (3), 2.5, 3.5, 4.5);
  EXPECT(OP(TP_OP_ADD, NULL, xi, wint(3)), TP_I32, (3), 4, 5, 6);
  EXPECT(OP(TP_OP_MUL, NULL, wint(-2), xi), TP_I32, (3), -2, -4, -6);
  EXPECT(OP(TP_OP_SUB, NULL, wint(10), xi), TP_I32, (3), 9, 8, 7);
  EXPECT(OP(TP_OP_MUL, NULL, xl, wint(3)), TP_I64, (2), 3, 6);
  EXPECT(OP(TP_OP_ADD, NULL, xl, wflt(0.5)), TP_F32, (2), 1.5, 2.5);
  /* int / int scalar: true division */
  EXPECT(OP(TP_OP_DIV, NULL, xi, wint(2)), TP_F32, (3), 0.5, 1, 1.5);
  EXPECT(OP(TP_OP_DIV, NULL, wint(3), xi), TP_F32, (3), 3, 1.5, 1);
  /* strong tensor promotion */
  EXPECT(OP(TP_OP_ADD, NULL, xi, I64((3), 10, 20, 30)), TP_I64, (3), 11, 22, 33);
  EXPECT(OP(TP_OP_ADD, NULL, I64((3), 10, 20, 30), xi), TP_I64, (3), 11, 22, 33);
  EXPECT(OP(TP_OP_ADD, NULL, xi, F32((3), 0.5, 0.5, 0.5)), TP_F32, (3), 1.5, 2.5, 3.5);
  EXPECT(OP(TP_OP_MUL, NULL, xl, F32((1), 0.5)), TP_F32, (2), 0.5, 1);
  EXPECT(OP(TP_OP_ADD, NULL, B8((2), 1, 0), I32((2), 5, 5)), TP_I32, (2), 6, 5);
  EXPECT(OP(TP_OP_ADD, NULL, I64((2), 5, 5), B8((2), 1, 0)), TP_I64, (2), 6, 5);
  EXPECT(OP(TP_OP_MUL, NULL, B8((2), 1, 0), F32((2), 2.5, 2.5)), TP_F32, (2), 2.5, 0);
  /* bool tensor + weak int -> int64; + weak float -> float32 */
  EXPECT(OP(TP_OP_ADD, NULL, B8((2), 1, 0), wint(1)), TP_I64, (2), 2, 1);
  EXPECT(OP(TP_OP_ADD, NULL, B8((2), 1, 0), wflt(0.5)), TP_F32, (2), 1.5, 0.5);
  /* weak + weak */
  EXPECT0(OP(TP_OP_ADD, NULL, wint(2), wint(3)), TP_I64, 5);
  EXPECT0(OP(TP_OP_ADD, NULL, wint(2), wflt(0.5)), TP_F32, 2.5);
  EXPECT0(OP(TP_OP_MUL, NULL, wflt(1.5), wflt(2)), TP_F32, 3);
  /* weak scalar with a 0-d float tensor keeps float32 */
  EXPECT0(OP(TP_OP_MUL, NULL, f0(1.5f), wint(2)), TP_F32, 3);
  /* a large weak int added to int32 stays int32 (wraps) */
  y = OP(TP_OP_ADD, NULL, I32((1), 1), wint(2));
  EXPECT(y, TP_I32, (1), 3);
  /* the result of an op on weak scalars is not itself weak: result + i32 */
  tp_tensor *s = OP(TP_OP_ADD, NULL, wint(1), wint(1)); /* int64 0-d, strong now */
  EXPECT(OP(TP_OP_ADD, NULL, s, I64((1), 1)), TP_I64, (1), 3);
  /* float result of weak float ops combined with int32 tensor stays float32 */
  EXPECT(OP(TP_OP_MUL, NULL, OP(TP_OP_MUL, NULL, wflt(0.5), wflt(2)), I32((1), 4)), TP_F32, (1),
         4);
}

static void test_compare(void) {
  tp_tensor *a = F32((3), 1, 2, 3), *b = F32((3), 2, 2, 2);
  EXPECT(OP(TP_OP_EQ, NULL, a, b), TP_BOOL, (3), 0, 1, 0);
  EXPECT(OP(TP_OP_LT, NULL, a, b), TP_BOOL, (3), 1, 0, 0);
  EXPECT(OP(TP_OP_GT, NULL, a, b), TP_BOOL, (3), 0, 0, 1);
  /* broadcasting [3,1] vs [1,2] */
  tp_tensor *c = F32((3, 1), 1, 2, 3), *d = F32((1, 2), 2, 3);
  EXPECT(OP(TP_OP_LT, NULL, c, d), TP_BOOL, (3, 2), 1, 1, 0, 1, 0, 0);
  EXPECT(OP(TP_OP_EQ, NULL, c, d), TP_BOOL, (3, 2), 0, 0, 1, 0, 0, 1);
  /* int vs weak float compares in float: [1,2,3] < 1.5 */
  EXPECT(OP(TP_OP_LT, NULL, I32((3), 1, 2, 3), wflt(1.5)), TP_BOOL, (3), 1, 0, 0);
  EXPECT(OP(TP_OP_GT, NULL, wint(2), F32((3), 1, 2, 3)), TP_BOOL, (3), 1, 0, 0);
  EXPECT(OP(TP_OP_EQ, NULL, I32((2), 1, 2), F32((2), 1.0f, 2.5f)), TP_BOOL, (2), 1, 0);
  /* int64 compares exactly (2^53 + 1 vs 2^53 are different) */
  EXPECT(OP(TP_OP_EQ, NULL, I64((2), 9007199254740993LL, 5), I64((2), 9007199254740992LL, 5)),
         TP_BOOL, (2), 0, 1);
  EXPECT(OP(TP_OP_GT, NULL, I64((1), 9007199254740993LL), I64((1), 9007199254740992LL)), TP_BOOL,
         (1), 1);
  /* bool operands */
  EXPECT(OP(TP_OP_EQ, NULL, B8((3), 1, 0, 1), B8((3), 1, 1, 0)), TP_BOOL, (3), 1, 0, 0);
  EXPECT(OP(TP_OP_LT, NULL, B8((2), 0, 1), B8((2), 1, 1)), TP_BOOL, (2), 1, 0);
  /* NaN compares false; -0 == 0 */
  EXPECT(OP(TP_OP_EQ, NULL, F32((3), NAN, 0.0f, -0.0f), F32((3), NAN, -0.0f, 0.0f)), TP_BOOL, (3),
         0, 1, 1);
  EXPECT(OP(TP_OP_LT, NULL, F32((2), NAN, 1), F32((2), 1, NAN)), TP_BOOL, (2), 0, 0);
  EXPECT(OP(TP_OP_GT, NULL, F32((2), NAN, INFINITY), F32((2), 1, 1e30f)), TP_BOOL, (2), 0, 1);
  /* 0-d */
  EXPECT0(OP(TP_OP_GT, NULL, f0(2), wint(1)), TP_BOOL, 1);
}

static void test_where(void) {
  tp_tensor *cond = B8((2, 1), 1, 0), *a = F32((3), 10, 20, 30);
  /* where(cond[2,1], a[3], 0) -> [2,3] float32 */
  EXPECT(OP(TP_OP_WHERE, NULL, cond, a, wint(0)), TP_F32, (2, 3), 10, 20, 30, 0, 0, 0);
  EXPECT(OP(TP_OP_WHERE, NULL, cond, wflt(-1.5), a), TP_F32, (2, 3), -1.5, -1.5, -1.5, 10, 20, 30);
  /* cond broadcast along rows */
  tp_tensor *c2 = B8((3), 1, 0, 1), *x = F32((2, 3), 1, 2, 3, 4, 5, 6), *y = F32((2, 1), -1, -2);
  EXPECT(OP(TP_OP_WHERE, NULL, c2, x, y), TP_F32, (2, 3), 1, -1, 3, 4, -2, 6);
  /* dtype promotion: int32 / float32 -> float32; int32 / int64 -> int64 */
  EXPECT(OP(TP_OP_WHERE, NULL, c2, I32((3), 1, 2, 3), F32((3), 0.5, 0.5, 0.5)), TP_F32, (3), 1,
         0.5, 3);
  EXPECT(OP(TP_OP_WHERE, NULL, c2, I32((3), 1, 2, 3), I64((1), 9)), TP_I64, (3), 1, 9, 3);
  EXPECT(OP(TP_OP_WHERE, NULL, c2, I32((3), 1, 2, 3), wint(7)), TP_I32, (3), 1, 7, 3);
  EXPECT(OP(TP_OP_WHERE, NULL, c2, I32((3), 1, 2, 3), wflt(0.5)), TP_F32, (3), 1, 0.5, 3);
  /* bool values */
  EXPECT(OP(TP_OP_WHERE, NULL, c2, B8((3), 0, 0, 0), B8((3), 1, 1, 1)), TP_BOOL, (3), 0, 1, 0);
  /* 0-d condition */
  uint8_t t1 = 1;
  tp_tensor *c0 = mk_(__LINE__, TP_BOOL, 0, NULL, &t1);
  EXPECT(OP(TP_OP_WHERE, NULL, c0, F32((2), 1, 2), F32((2), 3, 4)), TP_F32, (2), 1, 2);
  /* empty */
  EXPECT_SHAPE(OP(TP_OP_WHERE, NULL, EMPTY(TP_BOOL, (0, 2)), F32((2), 1, 2), wint(0)), TP_F32,
               (0, 2));
}

static void test_unary(void) {
  tp_tensor *y;
  y = OP(TP_OP_NEG, NULL, F32((3), 1, -2, 0));
  EXPECT(y, TP_F32, (3), -1, 2, 0);
  if (y) { /* neg(0) is -0.0 */
    float v[3];
    tp_tensor_read(y, v, sizeof v);
    CHECK(signbit(v[2]));
  }
  EXPECT(OP(TP_OP_NEG, NULL, I32((3), 1, -2, -2147483647 - 1)), TP_I32, (3), -1, 2, -2147483648.0);
  EXPECT(OP(TP_OP_NEG, NULL, I64((2), 5, -7)), TP_I64, (2), -5, 7);
  EXPECT(OP(TP_OP_ABS, NULL, F32((4), -1.5, 2, -0.0f, -INFINITY)), TP_F32, (4), 1.5, 2, 0,
         INFINITY);
  EXPECT(OP(TP_OP_ABS, NULL, I64((3), -3, 4, 0)), TP_I64, (3), 3, 4, 0);
  EXPECT(OP(TP_OP_ABS, NULL, I32((2), -3, 4)), TP_I32, (2), 3, 4);
  EXPECT(OP(TP_OP_EXP, NULL, F32((4), 0, 1, -1, 2)), TP_F32, (4), 1, 2.718281828459045,
         0.36787944117144233, 7.38905609893065);
  EXPECT(OP(TP_OP_EXP, NULL, I32((2), 0, 1)), TP_F32, (2), 1, 2.718281828459045);
  EXPECT(OP(TP_OP_LOG, NULL, F32((5), 1, 2.718281828459045f, 0.5, 0, -1)), TP_F32, (5), 0, 1,
         -0.6931471805599453, -INFINITY, NAN);
  EXPECT(OP(TP_OP_LOG, NULL, I64((2), 1, 2)), TP_F32, (2), 0, 0.6931471805599453);
  EXPECT(OP(TP_OP_SQRT, NULL, F32((4), 4, 2, 0, 0.25)), TP_F32, (4), 2, 1.4142135623730951, 0,
         0.5);
  EXPECT(OP(TP_OP_SQRT, NULL, I32((2), 9, 16)), TP_F32, (2), 3, 4);
  EXPECT(OP(TP_OP_SQRT, NULL, F32((1), -4)), TP_F32, (1), NAN);
  EXPECT(OP(TP_OP_RSQRT, NULL, F32((4), 4, 0.25, 2, 0)), TP_F32, (4), 0.5, 2, 0.7071067811865475,
         INFINITY);
  EXPECT(OP(TP_OP_RSQRT, NULL, I32((1), 4)), TP_F32, (1), 0.5);
  EXPECT(OP(TP_OP_TANH, NULL, F32((4), 0, 1, -2, 0.5)), TP_F32, (4), 0, 0.7615941559557649,
         -0.9640275800758169, 0.46211715726000974);
  EXPECT(OP(TP_OP_SIGMOID, NULL, F32((3), 0, 2, -2)), TP_F32, (3), 0.5, 0.8807970779778823,
         0.11920292202211755);
  EXPECT(OP(TP_OP_SIGMOID, NULL, I32((1), 0)), TP_F32, (1), 0.5);
  EXPECT(OP(TP_OP_RELU, NULL, F32((4), -1, 0, 2.5, -0.25)), TP_F32, (4), 0, 0, 2.5, 0);
  EXPECT(OP(TP_OP_RELU, NULL, I32((3), -3, 5, 0)), TP_I32, (3), 0, 5, 0);
  EXPECT(OP(TP_OP_RELU, NULL, I64((2), -3, 5)), TP_I64, (2), 0, 5);
  EXPECT(OP(TP_OP_FLOOR, NULL, F32((6), -1.5, 1.5, 2, -0.25, INFINITY, NAN)), TP_F32, (6), -2, 1, 2,
         -1, INFINITY, NAN);
  EXPECT(OP(TP_OP_FLOOR, NULL, I32((2), -3, 4)), TP_F32, (2), -3, 4);
  EXPECT(OP(TP_OP_CEIL, NULL, F32((5), -1.5, 1.5, 2, -0.25, -INFINITY)), TP_F32, (5), -1, 2, 2, 0,
         -INFINITY);
  /* round: half to even */
  EXPECT(OP(TP_OP_ROUND, NULL, F32((9), 0.5, 1.5, 2.5, -0.5, -1.5, 2.4, 2.6, -2.6, NAN)), TP_F32,
         (9), 0, 2, 2, 0, -2, 2, 3, -3, NAN);
  EXPECT(OP(TP_OP_ERF, NULL, F32((5), 0, 0.5, -1, 3, INFINITY)), TP_F32, (5), 0,
         0.5204998778130465, -0.8427007929497149, 0.9999779095030014, 1);
  EXPECT(OP(TP_OP_ERF, NULL, I64((1), 1)), TP_F32, (1), 0.8427007929497149);
  /* trigonometric and hyperbolic: python's math module at 0, 0.5, -1 */
  tp_tensor *t3 = F32((3), 0, 0.5, -1);
  EXPECT(OP(TP_OP_SIN, NULL, t3), TP_F32, (3), 0, 0.479425538604203, -0.8414709848078965);
  EXPECT(OP(TP_OP_COS, NULL, t3), TP_F32, (3), 1, 0.8775825618903728, 0.5403023058681398);
  EXPECT(OP(TP_OP_TAN, NULL, t3), TP_F32, (3), 0, 0.5463024898437905, -1.5574077246549023);
  EXPECT(OP(TP_OP_ASIN, NULL, t3), TP_F32, (3), 0, 0.5235987755982989, -1.5707963267948966);
  EXPECT(OP(TP_OP_ACOS, NULL, t3), TP_F32, (3), 1.5707963267948966, 1.0471975511965979, 3.141592653589793);
  EXPECT(OP(TP_OP_ATAN, NULL, t3), TP_F32, (3), 0, 0.4636476090008061, -0.7853981633974483);
  EXPECT(OP(TP_OP_SINH, NULL, t3), TP_F32, (3), 0, 0.5210953054937474, -1.1752011936438014);
  EXPECT(OP(TP_OP_COSH, NULL, t3), TP_F32, (3), 1, 1.1276259652063807, 1.5430806348152437);
  EXPECT(OP(TP_OP_ASINH, NULL, t3), TP_F32, (3), 0, 0.48121182505960347, -0.881373587019543);
  EXPECT(OP(TP_OP_ACOSH, NULL, F32((3), 1, 2, 3)), TP_F32, (3), 0, 1.3169578969248166, 1.762747174039086);
  EXPECT(OP(TP_OP_ATANH, NULL, F32((3), 0, 0.5, -0.5)), TP_F32, (3), 0, 0.5493061443340548, -0.5493061443340548);
  /* outside the domain: NaN, as libm and ONNX give */
  EXPECT(OP(TP_OP_ASIN, NULL, F32((1), 2)), TP_F32, (1), NAN);
  EXPECT(OP(TP_OP_SIN, NULL, I32((1), 0)), TP_F32, (1), 0);
  ERR(TP_OP_FLOOR, NULL, (B8((1), 1)), TP_ERR_INVALID_ARG, "floor", "bool");
  y = NULL;
  CHECK(tp_relu(F32((2), -1, 1), &y) == TP_OK);
  EXPECT(track(y), TP_F32, (2), 0, 1);
  tp_attrs g0 = A0(), g1 = A0();
  g0.approximate = 0;
  g1.approximate = 1;
  EXPECT(OP(TP_OP_GELU, &g0, F32((5), 0, 1, -1, 2, -3)), TP_F32, (5), 0, 0.8413447460685429,
         -0.15865525393145707, 1.9544997361036416, -0.00404969409489031);
  EXPECT(OP(TP_OP_GELU, &g1, F32((5), 0, 1, -1, 2, -3)), TP_F32, (5), 0, 0.8411919906082768,
         -0.15880800939172324, 1.954597694087775, -0.0036373920817729943);
  EXPECT(OP(TP_OP_GELU, &g0, I32((1), 1)), TP_F32, (1), 0.8413447460685429);
  /* 0-d and empty */
  EXPECT0(OP(TP_OP_EXP, NULL, f0(0)), TP_F32, 1);
  EXPECT0(OP(TP_OP_NEG, NULL, wint(3)), TP_I64, -3);
  EXPECT_SHAPE(OP(TP_OP_EXP, NULL, EMPTY(TP_F32, (0))), TP_F32, (0));
  EXPECT_SHAPE(OP(TP_OP_RELU, NULL, EMPTY(TP_I32, (2, 0))), TP_I32, (2, 0));
  /* more than one vector of elements, including a tail: 19 values */
  tp_tensor *big = F32((19), -9, -8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9);
  EXPECT(OP(TP_OP_RELU, NULL, big), TP_F32, (19), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 5, 6,
         7, 8, 9);
  EXPECT(OP(TP_OP_ABS, NULL, big), TP_F32, (19), 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6,
         7, 8, 9);
  /* a weak float scalar through a unary op gives a strong f32 0-d */
  tp_tensor *e = OP(TP_OP_EXP, NULL, wflt(0));
  EXPECT0(e, TP_F32, 1);
  EXPECT(OP(TP_OP_ADD, NULL, e, I32((1), 1)), TP_F32, (1), 2);
}

static void test_noncontiguous_elementwise(void) {
  /* x = [[1,2,3],[4,5,6]]; x^T = [[1,4],[2,5],[3,6]] (a strided view) */
  tp_tensor *x = F32((2, 3), 1, 2, 3, 4, 5, 6);
  tp_tensor *xt = OPA(TP_OP_TRANSPOSE, ({ tp_attrs a = A0(); a.dim = 0; a.dim1 = 1; a; }), x);
  CHECK(xt && !tp_tensor_is_contiguous(xt));
  EXPECT(xt, TP_F32, (3, 2), 1, 4, 2, 5, 3, 6);
  EXPECT(OP(TP_OP_ADD, NULL, xt, F32((2), 10, 20)), TP_F32, (3, 2), 11, 24, 12, 25, 13, 26);
  EXPECT(OP(TP_OP_MUL, NULL, xt, xt), TP_F32, (3, 2), 1, 16, 4, 25, 9, 36);
  EXPECT(OP(TP_OP_SUB, NULL, xt, F32((3, 1), 1, 2, 3)), TP_F32, (3, 2), 0, 3, 0, 3, 0, 3);
  EXPECT(OP(TP_OP_DIV, NULL, wint(1), xt), TP_F32, (3, 2), 1, 0.25, 0.5, 0.2, 1.0 / 3, 1.0 / 6);
  EXPECT(OP(TP_OP_NEG, NULL, xt), TP_F32, (3, 2), -1, -4, -2, -5, -3, -6);
  EXPECT(OP(TP_OP_SQRT, NULL, xt), TP_F32, (3, 2), 1, 2, 1.4142135623730951, 2.23606797749979,
         1.7320508075688772, 2.449489742783178);
  EXPECT(OP(TP_OP_GT, NULL, xt, wflt(2.5)), TP_BOOL, (3, 2), 0, 1, 0, 1, 1, 1);
  /* transposed int view */
  tp_tensor *xi = I32((2, 3), 1, -2, 3, -4, 5, -6);
  tp_tensor *xit = OPA(TP_OP_TRANSPOSE, ({ tp_attrs a = A0(); a.dim = 1; a.dim1 = 0; a; }), xi);
  EXPECT(OP(TP_OP_RELU, NULL, xit), TP_I32, (3, 2), 1, 0, 0, 5, 3, 0);
  EXPECT(OP(TP_OP_ADD, NULL, xit, wint(1)), TP_I32, (3, 2), 2, -3, -1, 6, 4, -5);
  /* slices with step 2 as operands: v = [0..9]; v[::2] + v[1::2] */
  tp_tensor *v = F32((10), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9);
  tp_tensor *ev = OPA(TP_OP_SLICE, Aslice(0, 0, INT64_MAX, 2), v);
  tp_tensor *od = OPA(TP_OP_SLICE, Aslice(0, 1, INT64_MAX, 2), v);
  EXPECT(OP(TP_OP_ADD, NULL, ev, od), TP_F32, (5), 1, 5, 9, 13, 17);
  EXPECT(OP(TP_OP_EXP, NULL, OPA(TP_OP_SLICE, Aslice(0, 0, 3, 2), v)), TP_F32, (2), 1,
         7.38905609893065);
  /* a column slice of a matrix: m[:, 1:3] */
  tp_tensor *m = F32((3, 4), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
  tp_tensor *mc = OPA(TP_OP_SLICE, Aslice(1, 1, 3, 1), m);
  EXPECT(OP(TP_OP_MUL, NULL, mc, wint(2)), TP_F32, (3, 2), 2, 4, 10, 12, 18, 20);
  EXPECT(OP(TP_OP_WHERE, NULL, OP(TP_OP_GT, NULL, mc, wint(5)), mc, wint(0)), TP_F32, (3, 2), 0,
         0, 0, 6, 9, 10);
  /* output of a broadcast of two transposed views */
  tp_tensor *p = F32((2, 2), 1, 2, 3, 4);
  tp_tensor *pt = OPA(TP_OP_TRANSPOSE, ({ tp_attrs a = A0(); a.dim = 0; a.dim1 = 1; a; }), p);
  EXPECT(OP(TP_OP_ADD, NULL, pt, p), TP_F32, (2, 2), 2, 5, 5, 8);
}

static void test_matmul(void) {
  tp_tensor *a = F32((2, 3), 1, 2, 3, 4, 5, 6), *b = F32((3, 2), 7, 8, 9, 10, 11, 12);
  EXPECT(OP(TP_OP_MATMUL, NULL, a, b), TP_F32, (2, 2), 58, 64, 139, 154);
  EXPECT(OP(TP_OP_MATMUL, NULL, b, a), TP_F32, (3, 3), 39, 54, 69, 49, 68, 87, 59, 82, 105);
  tp_tensor *y = NULL;
  CHECK(tp_matmul(a, b, &y) == TP_OK);
  EXPECT(track(y), TP_F32, (2, 2), 58, 64, 139, 154);
  /* 1-D @ 1-D -> 0-d */
  EXPECT0(OP(TP_OP_MATMUL, NULL, F32((3), 1, 2, 3), F32((3), 4, 5, 6)), TP_F32, 32);
  /* 1-D @ 2-D -> [3]; 2-D @ 1-D -> [2] */
  EXPECT(OP(TP_OP_MATMUL, NULL, F32((2), 1, 2), F32((2, 3), 1, 2, 3, 4, 5, 6)), TP_F32, (3), 9,
         12, 15);
  EXPECT(OP(TP_OP_MATMUL, NULL, a, F32((3), 1, 0, -1)), TP_F32, (2), -2, -2);
  /* batched @ 2-D: [2,1,2] @ [2,2] -> [2,1,2] */
  tp_tensor *ab = F32((2, 1, 2), 1, 2, 3, 4), *w = F32((2, 2), 5, 6, 7, 8);
  EXPECT(OP(TP_OP_MATMUL, NULL, ab, w), TP_F32, (2, 1, 2), 19, 22, 43, 50);
  /* 2-D @ batched: [2,2] @ [2,2,1] -> [2,2,1] */
  tp_tensor *bb = F32((2, 2, 1), 1, 1, 1, -1);
  EXPECT(OP(TP_OP_MATMUL, NULL, w, bb), TP_F32, (2, 2, 1), 11, 15, -1, -1);
  /* broadcast batch dims: [2,1,1,2] @ [3,2,1] -> [2,3,1,1] */
  tp_tensor *a4 = F32((2, 1, 1, 2), 1, 2, 3, 4);
  tp_tensor *b3 = F32((3, 2, 1), 1, 0, 0, 1, 1, 1);
  EXPECT(OP(TP_OP_MATMUL, NULL, a4, b3), TP_F32, (2, 3, 1, 1), 1, 2, 3, 3, 4, 7);
  /* batch dim of 1 broadcasts against 3: [1,1,2] @ [3,2,1] -> [3,1,1] */
  EXPECT(OP(TP_OP_MATMUL, NULL, F32((1, 1, 2), 10, 1), b3), TP_F32, (3, 1, 1), 10, 1, 11);
  /* 1-D @ 3-D: [2] @ [2,2,2] -> [2,2]; 3-D @ 1-D: [2,2,2] @ [2] -> [2,2] */
  tp_tensor *c3 = F32((2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8);
  EXPECT(OP(TP_OP_MATMUL, NULL, F32((2), 1, 1), c3), TP_F32, (2, 2), 4, 6, 12, 14);
  EXPECT(OP(TP_OP_MATMUL, NULL, c3, F32((2), 1, -1)), TP_F32, (2, 2), -1, -1, -1, -1);
  /* transposed (non-contiguous) operands: A^T A with A = [[1,2],[3,4],[5,6]] */
  tp_tensor *A = F32((3, 2), 1, 2, 3, 4, 5, 6);
  tp_tensor *At = OPA(TP_OP_TRANSPOSE, ({ tp_attrs t = A0(); t.dim = 0; t.dim1 = 1; t; }), A);
  EXPECT(OP(TP_OP_MATMUL, NULL, At, A), TP_F32, (2, 2), 35, 44, 44, 56);
  EXPECT(OP(TP_OP_MATMUL, NULL, A, At), TP_F32, (3, 3), 5, 11, 17, 11, 25, 39, 17, 39, 61);
  EXPECT(OP(TP_OP_MATMUL, NULL, At, At ? OPA(TP_OP_TRANSPOSE,
                                             ({ tp_attrs t = A0(); t.dim = 0; t.dim1 = 1; t; }),
                                             At)
                                       : NULL),
         TP_F32, (2, 2), 35, 44, 44, 56);
  /* a sliced operand: rows 0 and 2 of A (step 2) @ [[1],[1]] */
  tp_tensor *As = OPA(TP_OP_SLICE, Aslice(0, 0, INT64_MAX, 2), A);
  EXPECT(OP(TP_OP_MATMUL, NULL, As, F32((2, 1), 1, 1)), TP_F32, (2, 1), 3, 11);
  /* batched transposed view: transpose(c3, 1, 2) */
  tp_tensor *c3t = OPA(TP_OP_TRANSPOSE, ({ tp_attrs t = A0(); t.dim = 1; t.dim1 = 2; t; }), c3);
  EXPECT(OP(TP_OP_MATMUL, NULL, c3t, F32((2, 1), 1, 0)), TP_F32, (2, 2, 1), 1, 2, 5, 6);
  /* empty dims: K = 0 gives zeros; M = 0 / N = 0 give empty */
  EXPECT(OP(TP_OP_MATMUL, NULL, EMPTY(TP_F32, (2, 0)), EMPTY(TP_F32, (0, 3))), TP_F32, (2, 3), 0,
         0, 0, 0, 0, 0);
  EXPECT_SHAPE(OP(TP_OP_MATMUL, NULL, EMPTY(TP_F32, (0, 3)), b), TP_F32, (0, 2));
  EXPECT_SHAPE(OP(TP_OP_MATMUL, NULL, a, EMPTY(TP_F32, (3, 0))), TP_F32, (2, 0));
  EXPECT_SHAPE(OP(TP_OP_MATMUL, NULL, EMPTY(TP_F32, (0, 2, 3)), b), TP_F32, (0, 2, 2));
  EXPECT0(OP(TP_OP_MATMUL, NULL, EMPTY(TP_F32, (0)), EMPTY(TP_F32, (0))), TP_F32, 0);
}

static void test_linear(void) {
  tp_tensor *x = F32((2, 3), 1, 2, 3, 4, 5, 6), *w = F32((2, 3), 1, 0, 0, 0, 1, 1),
            *b = F32((2), 10, 20);
  EXPECT(OP(TP_OP_LINEAR, NULL, x, w, b), TP_F32, (2, 2), 11, 25, 14, 31);
  EXPECT(OP(TP_OP_LINEAR, NULL, x, w, NULL), TP_F32, (2, 2), 1, 5, 4, 11);
  tp_tensor *y = NULL;
  CHECK(tp_linear(x, w, b, &y) == TP_OK);
  EXPECT(track(y), TP_F32, (2, 2), 11, 25, 14, 31);
  y = NULL;
  CHECK(tp_linear(x, w, NULL, &y) == TP_OK);
  EXPECT(track(y), TP_F32, (2, 2), 1, 5, 4, 11);
  /* 1-D input, 3-D input */
  EXPECT(OP(TP_OP_LINEAR, NULL, F32((3), 1, 2, 3), w, b), TP_F32, (2), 11, 25);
  EXPECT(OP(TP_OP_LINEAR, NULL, F32((2, 1, 3), 1, 2, 3, 4, 5, 6), w, b), TP_F32, (2, 1, 2), 11,
         25, 14, 31);
  /* w given as a transposed view of a [3,2] tensor: w = wt^T */
  tp_tensor *wt = F32((3, 2), 1, 0, 0, 1, 0, 1);
  tp_tensor *wv = OPA(TP_OP_TRANSPOSE, ({ tp_attrs t = A0(); t.dim = 0; t.dim1 = 1; t; }), wt);
  EXPECT(OP(TP_OP_LINEAR, NULL, x, wv, b), TP_F32, (2, 2), 11, 25, 14, 31);
  /* x as a transposed view: xt^T where xt = [[1,4],[2,5],[3,6]] */
  tp_tensor *xt = F32((3, 2), 1, 4, 2, 5, 3, 6);
  tp_tensor *xv = OPA(TP_OP_TRANSPOSE, ({ tp_attrs t = A0(); t.dim = 0; t.dim1 = 1; t; }), xt);
  EXPECT(OP(TP_OP_LINEAR, NULL, xv, w, b), TP_F32, (2, 2), 11, 25, 14, 31);
  /* a strided bias: every other element of [10,0,20,0] */
  tp_tensor *bv = OPA(TP_OP_SLICE, Aslice(0, 0, INT64_MAX, 2), F32((4), 10, 0, 20, 0));
  EXPECT(OP(TP_OP_LINEAR, NULL, x, w, bv), TP_F32, (2, 2), 11, 25, 14, 31);
  /* in = 0: y = bias; out = 0: empty; rows = 0: empty */
  EXPECT(OP(TP_OP_LINEAR, NULL, EMPTY(TP_F32, (2, 0)), EMPTY(TP_F32, (2, 0)), b), TP_F32, (2, 2),
         10, 20, 10, 20);
  EXPECT_SHAPE(OP(TP_OP_LINEAR, NULL, x, EMPTY(TP_F32, (0, 3)), NULL), TP_F32, (2, 0));
  EXPECT_SHAPE(OP(TP_OP_LINEAR, NULL, EMPTY(TP_F32, (0, 3)), w, b), TP_F32, (0, 2));
}

/* An 8-value window and dim: conv2d's [sh sw pt pl pb pr dh dw] + groups,
 * the pools' [kh kw sh sw pt pl pb pr] + count_include_pad. */
static tp_attrs Awin(int64_t a0, int64_t a1, int64_t a2, int64_t a3, int64_t a4, int64_t a5, int64_t a6,
                     int64_t a7, int64_t dim) {
  tp_attrs a = A0();
  int64_t v[8] = {a0, a1, a2, a3, a4, a5, a6, a7};
  memcpy(a.ints, v, sizeof v);
  a.nints = 8;
  a.dim = dim;
  return a;
}
#define Aconv Awin
#define Apool Awin

static void test_conv2d(void) {
  tp_tensor *x = F32((1, 1, 3, 3), 1, 2, 3, 4, 5, 6, 7, 8, 9);
  tp_tensor *diag = F32((1, 1, 2, 2), 1, 0, 0, 1), *b10 = F32((1), 10);
  /* the diagonal of each 2x2 window: 1+5, 2+6, 4+8, 5+9 */
  EXPECT(OPA(TP_OP_CONV2D, Aconv(1, 1, 0, 0, 0, 0, 1, 1, 1), x, diag, NULL), TP_F32, (1, 1, 2, 2),
         6, 8, 12, 14);
  EXPECT(OPA(TP_OP_CONV2D, Aconv(1, 1, 0, 0, 0, 0, 1, 1, 1), x, diag, b10), TP_F32, (1, 1, 2, 2),
         16, 18, 22, 24);
  /* 3x3 ones, pad 1, stride 2: sums of the in-bounds parts of 4 windows */
  tp_tensor *ones = F32((1, 1, 3, 3), 1, 1, 1, 1, 1, 1, 1, 1, 1);
  EXPECT(OPA(TP_OP_CONV2D, Aconv(2, 2, 1, 1, 1, 1, 1, 1, 1), x, ones, NULL), TP_F32, (1, 1, 2, 2),
         12, 16, 24, 28);
  /* pads on the top/left only: rows -1..0 and cols -1..0 of the first window */
  EXPECT(OPA(TP_OP_CONV2D, Aconv(2, 2, 1, 1, 0, 0, 1, 1, 1), x, ones, NULL), TP_F32, (1, 1, 1, 1),
         12);
  /* depthwise (groups = C = 2): ch0 * [1, -1], ch1 * [2, 0] over rows */
  tp_tensor *x2 = F32((1, 2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8);
  EXPECT(OPA(TP_OP_CONV2D, Aconv(1, 1, 0, 0, 0, 0, 1, 1, 2), x2, F32((2, 1, 1, 2), 1, -1, 2, 0),
             F32((2), 0, 1)),
         TP_F32, (1, 2, 2, 1), -1, -1, 11, 15);
  /* depthwise with channel multiplier 2 (M = 4, groups = 2) */
  EXPECT(OPA(TP_OP_CONV2D, Aconv(1, 1, 0, 0, 0, 0, 1, 1, 2), x2,
             F32((4, 1, 1, 2), 1, 0, 0, 1, 1, 1, -1, 1), NULL),
         TP_F32, (1, 4, 2, 1), 1, 3, 2, 4, 11, 15, 1, 1);
  /* 1x1 grouped: each channel scaled by its own weight */
  EXPECT(OPA(TP_OP_CONV2D, Aconv(1, 1, 0, 0, 0, 0, 1, 1, 2), F32((1, 2, 1, 2), 1, 2, 3, 4),
             F32((2, 1, 1, 1), 2, 3), NULL),
         TP_F32, (1, 2, 1, 2), 2, 4, 9, 12);
  /* dense 1x1 over 2 channels into 3 */
  EXPECT(OPA(TP_OP_CONV2D, Aconv(1, 1, 0, 0, 0, 0, 1, 1, 1), F32((1, 2, 1, 1), 1, 2),
             F32((3, 2, 1, 1), 1, 1, 1, -1, 0, 2), NULL),
         TP_F32, (1, 3, 1, 1), 3, -1, 4);
  /* dilation 2 along W: x[j] + x[j + 2] */
  EXPECT(OPA(TP_OP_CONV2D, Aconv(1, 1, 0, 0, 0, 0, 1, 2, 1), F32((1, 1, 1, 5), 1, 2, 3, 4, 5),
             F32((1, 1, 1, 2), 1, 1), NULL),
         TP_F32, (1, 1, 1, 3), 4, 6, 8);
  /* the C entry point: NULL stride/pads/dilation mean 1, 0, 1 */
  tp_tensor *y = NULL;
  CHECK(tp_conv2d(x, diag, b10, NULL, NULL, NULL, 1, &y) == TP_OK);
  EXPECT(track(y), TP_F32, (1, 1, 2, 2), 16, 18, 22, 24);
  y = NULL;
  CHECK(tp_conv2d(x, ones, NULL, (const int64_t[]){2, 2}, (const int64_t[]){1, 1, 1, 1}, NULL, 1,
                  &y) == TP_OK);
  EXPECT(track(y), TP_F32, (1, 1, 2, 2), 12, 16, 24, 28);
  /* an empty batch */
  EXPECT_SHAPE(OPA(TP_OP_CONV2D, Aconv(1, 1, 1, 1, 1, 1, 1, 1, 1), EMPTY(TP_F32, (0, 1, 3, 3)),
                   ones, NULL),
               TP_F32, (0, 1, 3, 3));
  /* bad input: each names the problem */
  tp_attrs a1 = Aconv(1, 1, 0, 0, 0, 0, 1, 1, 1);
  ERR(TP_OP_CONV2D, &a1, (F32((3, 3), 1, 2, 3, 4, 5, 6, 7, 8, 9), diag, NULL), TP_ERR_INVALID_ARG,
      "conv2d", "rank 4");
  ERR(TP_OP_CONV2D, &a1, (x2, diag, NULL), TP_ERR_INVALID_ARG, "groups 1", "weight");
  ERR(TP_OP_CONV2D, &a1, (x, diag, F32((2), 1, 2)), TP_ERR_INVALID_ARG, "bias", "[1]");
  ERR(TP_OP_CONV2D, &a1, (x, F32((1, 1, 4, 4), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), NULL),
      TP_ERR_INVALID_ARG, "kernel extent 4x4", "3x3");
  ERR(TP_OP_CONV2D, &a1, (I32((1, 1, 1, 1), 1), diag, NULL), TP_ERR_INVALID_ARG, "conv2d", "int32");
  ERR(TP_OP_CONV2D, &a1, (x, NULL, NULL), TP_ERR_INVALID_ARG, "weight is required");
  ERRA(TP_OP_CONV2D, Aconv(0, 1, 0, 0, 0, 0, 1, 1, 1), (x, diag, NULL), TP_ERR_INVALID_ARG, "stride 0");
  ERRA(TP_OP_CONV2D, Aconv(1, 1, -1, 0, 0, 0, 1, 1, 1), (x, diag, NULL), TP_ERR_INVALID_ARG, "padding -1");
  ERRA(TP_OP_CONV2D, Aconv(1, 1, 0, 0, 0, 0, 1, 1, 0), (x, diag, NULL), TP_ERR_INVALID_ARG, "groups 0");
  ERRA(TP_OP_CONV2D, A0(), (x, diag, NULL), TP_ERR_INVALID_ARG, "window has 0 values");
  /* sizes near int64 limits are errors, not overflow (UBSan aborts this test otherwise) */
  ERRA(TP_OP_CONV2D, Aconv(1, 1, 0, 0, 0, 0, 1, 1, (int64_t)1 << 62), (EMPTY(TP_F32, (1, 0, 1, 1)),
       EMPTY(TP_F32, (0, 4, 1, 1)), NULL), TP_ERR_INVALID_ARG, "groups");
  {
    tp_desc dx, dw, dy;
    memset(&dx, 0, sizeof dx), memset(&dw, 0, sizeof dw);
    dx.dtype = dw.dtype = TP_F32, dx.ndim = dw.ndim = 4;
    int64_t xs[4] = {1, 1, 1, (int64_t)1 << 60}, ws[4] = {1, 1, 1, (int64_t)1 << 44};
    memcpy(dx.shape, xs, sizeof xs), memcpy(dw.shape, ws, sizeof ws);
    const tp_desc *dp[3] = {&dx, &dw, NULL};
    tp_attrs at = Aconv(1, 1, 0, 0, 0, 0, 1, 1 << 20, 1);
    CHECK(tp_op_infer(TP_OP_CONV2D, 3, dp, &at, &dy) == TP_ERR_INVALID_ARG);
    CHECK(strstr(tp_last_error(), "too large") != NULL);
  }
}

static void test_pool2d(void) {
  tp_tensor *x = F32((1, 1, 4, 4), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
  /* 2x2 stride 2: max of each quarter, mean of each quarter */
  EXPECT(OPA(TP_OP_MAX_POOL2D, Apool(2, 2, 2, 2, 0, 0, 0, 0, 0), x), TP_F32, (1, 1, 2, 2), 6, 8, 14, 16);
  EXPECT(OPA(TP_OP_AVG_POOL2D, Apool(2, 2, 2, 2, 0, 0, 0, 0, 0), x), TP_F32, (1, 1, 2, 2), 3.5, 5.5, 11.5, 13.5);
  /* 3x3 stride 2 pad 1: corners see 2x2, edges 2x3 */
  EXPECT(OPA(TP_OP_MAX_POOL2D, Apool(3, 3, 2, 2, 1, 1, 1, 1, 0), x), TP_F32, (1, 1, 2, 2), 6, 8, 14, 16);
  /* avg, padding excluded: (1+2+5+6)/4; included: /9 */
  EXPECT(OPA(TP_OP_AVG_POOL2D, Apool(3, 3, 2, 2, 1, 1, 0, 0, 0), x), TP_F32, (1, 1, 2, 2), 3.5, 5, 9.5, 11);
  EXPECT(OPA(TP_OP_AVG_POOL2D, Apool(3, 3, 2, 2, 1, 1, 0, 0, 1), x), TP_F32, (1, 1, 2, 2), 14.0 / 9, 30.0 / 9,
         57.0 / 9, 99.0 / 9);
  /* NaN propagates through max */
  EXPECT(OPA(TP_OP_MAX_POOL2D, Apool(2, 2, 2, 2, 0, 0, 0, 0, 0), F32((1, 1, 2, 2), 1, NAN, 3, 2)), TP_F32,
         (1, 1, 1, 1), NAN);
  EXPECT(OPA(TP_OP_MAX_POOL2D, Apool(2, 2, 2, 2, 0, 0, 0, 0, 0), F32((1, 1, 2, 2), NAN, 5, 6, 7)), TP_F32,
         (1, 1, 1, 1), NAN);
  /* ties between -0 and +0: the first in the window's row-major order */
  tp_tensor *z = OPA(TP_OP_MAX_POOL2D, Apool(2, 2, 2, 2, 0, 0, 0, 0, 0), F32((1, 1, 2, 2), -1, -0.0, 0.0, -1));
  CHECK(z && tp_tensor_get_f64(z, 0) == 0 && signbit(tp_tensor_get_f64(z, 0)));
  z = OPA(TP_OP_MAX_POOL2D, Apool(2, 2, 2, 2, 0, 0, 0, 0, 0), F32((1, 1, 2, 2), 0.0, -1, -0.0, -1));
  CHECK(z && tp_tensor_get_f64(z, 0) == 0 && !signbit(tp_tensor_get_f64(z, 0)));
  /* the same on rows of 8 (four windows a vector, exec.c): NaN in either tap and row,
   * -0 / +0 ties to the first in row-major order, -inf */
  z = OPA(TP_OP_MAX_POOL2D, Apool(2, 2, 2, 2, 0, 0, 0, 0, 0),
          F32((1, 1, 2, 8), 1, NAN, -0.0, -1, 5, 2, -INFINITY, -INFINITY, 3, 2, 0.0, -1, NAN, 9, -INFINITY, -INFINITY));
  CHECK(z && isnan(tp_tensor_get_f64(z, 0)) && tp_tensor_get_f64(z, 1) == 0 && signbit(tp_tensor_get_f64(z, 1)) &&
        isnan(tp_tensor_get_f64(z, 2)) && tp_tensor_get_f64(z, 3) == -INFINITY);
  z = OPA(TP_OP_MAX_POOL2D, Apool(2, 2, 2, 2, 0, 0, 0, 0, 0),
          F32((1, 1, 2, 8), 0.0, -1, 1, 2, 4, 3, 7, 8, -0.0, -1, 6, 5, NAN, NAN, 8, 7));
  CHECK(z && tp_tensor_get_f64(z, 0) == 0 && !signbit(tp_tensor_get_f64(z, 0)) && tp_tensor_get_f64(z, 1) == 6 &&
        isnan(tp_tensor_get_f64(z, 2)) && tp_tensor_get_f64(z, 3) == 8);
  /* bad input */
  tp_attrs a = Apool(2, 2, 2, 2, 0, 0, 0, 0, 0);
  ERR(TP_OP_MAX_POOL2D, &a, (F32((4), 1, 2, 3, 4)), TP_ERR_INVALID_ARG, "max_pool2d", "rank 4");
  ERR(TP_OP_AVG_POOL2D, &a, (I32((1, 1, 2, 2), 1, 2, 3, 4)), TP_ERR_INVALID_ARG, "avg_pool2d", "int32");
  ERRA(TP_OP_MAX_POOL2D, Apool(5, 5, 1, 1, 0, 0, 0, 0, 0), (x), TP_ERR_INVALID_ARG, "kernel 5x5", "4x4");
  ERRA(TP_OP_MAX_POOL2D, Apool(2, 2, 1, 1, 2, 0, 0, 0, 0), (x), TP_ERR_INVALID_ARG, "smaller than the kernel");
  ERRA(TP_OP_MAX_POOL2D, Apool(2, 2, 0, 1, 0, 0, 0, 0, 0), (x), TP_ERR_INVALID_ARG, "stride 0");
  ERRA(TP_OP_MAX_POOL2D, Apool(2, 2, 2, 2, 0, 0, 0, 0, 1), (x), TP_ERR_INVALID_ARG, "count_include_pad must be 0");
  ERRA(TP_OP_AVG_POOL2D, A0(), (x), TP_ERR_INVALID_ARG, "window has 0 values");
}

static void test_reductions(void) {
  tp_tensor *x = F32((2, 3), 1, 2, 3, 4, 5, 6);
  int64_t d0[] = {0}, d1[] = {1}, dm1[] = {-1}, d01[] = {0, 1}, d10[] = {1, 0};
  EXPECT0(OPA(TP_OP_SUM, Adims(0, NULL, 0), x), TP_F32, 21);
  EXPECT(OPA(TP_OP_SUM, Adims(1, d0, 0), x), TP_F32, (3), 5, 7, 9);
  EXPECT(OPA(TP_OP_SUM, Adims(1, d1, 0), x), TP_F32, (2), 6, 15);
  EXPECT(OPA(TP_OP_SUM, Adims(1, dm1, 1), x), TP_F32, (2, 1), 6, 15);
  EXPECT(OPA(TP_OP_SUM, Adims(1, d0, 1), x), TP_F32, (1, 3), 5, 7, 9);
  EXPECT0(OPA(TP_OP_SUM, Adims(2, d01, 0), x), TP_F32, 21);
  EXPECT0(OPA(TP_OP_SUM, Adims(2, d10, 0), x), TP_F32, 21);
  EXPECT(OPA(TP_OP_SUM, Adims(0, NULL, 1), x), TP_F32, (1, 1), 21);
  tp_tensor *y = NULL;
  CHECK(tp_sum(x, 1, d1, 0, &y) == TP_OK);
  EXPECT(track(y), TP_F32, (2), 6, 15);
  /* 3-D, middle dim */
  tp_tensor *x3 = F32((2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8);
  EXPECT(OPA(TP_OP_SUM, Adims(1, d1, 0), x3), TP_F32, (2, 2), 4, 6, 12, 14);
  int64_t d02[] = {0, 2};
  EXPECT(OPA(TP_OP_SUM, Adims(2, d02, 0), x3), TP_F32, (2), 14, 22);
  /* leading dims reduced, dims of size 1 anywhere (the rows-into-columns path) */
  tp_tensor *x13 = F32((1, 3, 2), 1, 2, 3, 4, 5, 6), *x31 = F32((3, 2, 1), 1, 2, 3, 4, 5, 6);
  EXPECT(OPA(TP_OP_SUM, Adims(1, d1, 0), x13), TP_F32, (1, 2), 9, 12);
  EXPECT(OPA(TP_OP_MEAN, Adims(2, d01, 1), x13), TP_F32, (1, 1, 2), 3, 4);
  EXPECT(OPA(TP_OP_SUM, Adims(1, d0, 0), x31), TP_F32, (2, 1), 9, 12);
  /* integer sum gives int64, no int32 overflow */
  EXPECT0(OPA(TP_OP_SUM, A0(), I32((2, 3), 1, 2, 3, 4, 5, 6)), TP_I64, 21);
  EXPECT(OPA(TP_OP_SUM, Adims(1, d1, 0), I32((2, 2), 2147483647, 1, -2147483647 - 1, -1)), TP_I64,
         (2), 2147483648.0, -2147483649.0);
  EXPECT0(OPA(TP_OP_SUM, A0(), B8((4), 1, 0, 1, 1)), TP_I64, 3);
  EXPECT(OPA(TP_OP_SUM, Adims(1, d0, 0), I64((2, 2), 1, 2, 3, 4)), TP_I64, (2), 4, 6);
  /* mean gives float32 */
  EXPECT(OPA(TP_OP_MEAN, Adims(1, d1, 0), x), TP_F32, (2), 2, 5);
  EXPECT0(OPA(TP_OP_MEAN, A0(), x), TP_F32, 3.5);
  EXPECT0(OPA(TP_OP_MEAN, A0(), I32((2), 1, 2)), TP_F32, 1.5);
  EXPECT(OPA(TP_OP_MEAN, Adims(1, d0, 1), I64((2, 2), 1, 2, 4, 8)), TP_F32, (1, 2), 2.5, 5);
  EXPECT0(OPA(TP_OP_MEAN, A0(), B8((4), 1, 0, 1, 1)), TP_F32, 0.75);
  /* max / min keep the dtype */
  EXPECT(OPA(TP_OP_MAX, Adims(1, d1, 0), x), TP_F32, (2), 3, 6);
  EXPECT(OPA(TP_OP_MIN, Adims(1, d1, 0), x), TP_F32, (2), 1, 4);
  EXPECT(OPA(TP_OP_MAX, Adims(1, d0, 1), x), TP_F32, (1, 3), 4, 5, 6);
  EXPECT0(OPA(TP_OP_MIN, A0(), F32((3), 2, -7, 1)), TP_F32, -7);
  EXPECT(OPA(TP_OP_MAX, Adims(1, d1, 0), I32((2, 2), -5, -3, 7, 2)), TP_I32, (2), -3, 7);
  EXPECT(OPA(TP_OP_MIN, Adims(1, d1, 0), I64((2, 2), -5, -3, 7, 2)), TP_I64, (2), -5, 2);
  EXPECT0(OPA(TP_OP_MAX, A0(), B8((3), 0, 1, 0)), TP_BOOL, 1);
  EXPECT0(OPA(TP_OP_MIN, A0(), B8((3), 0, 1, 0)), TP_BOOL, 0);
  /* a run of middle dims with dims kept after it (slices combined in place;
   * stax's max pool): max / min over d1 of [2, 2, 2], NaN and -inf kept */
  EXPECT(OPA(TP_OP_MAX, Adims(1, d1, 0), F32((2, 2, 2), 1, 8, 3, 4, 5, NAN, -INFINITY, 2)), TP_F32, (2, 2), 3, 8, 5, NAN);
  EXPECT(OPA(TP_OP_MIN, Adims(1, d1, 1), F32((2, 2, 2), 1, 8, 3, 4, NAN, 6, -INFINITY, 2)), TP_F32, (2, 1, 2), 1, 4,
         NAN, 2);
  int64_t d12[] = {1, 2};
  EXPECT(OPA(TP_OP_MAX, Adims(2, d12, 0), F32((1, 2, 2, 3), 1, 9, 3, 4, 5, -6, 7, 2, 0, -1, 11, 12)), TP_F32, (1, 3),
         7, 11, 12);
  EXPECT(OPA(TP_OP_MIN, Adims(2, d02, 0), F32((2, 3, 2), 1, 9, 3, 4, 5, -6, 7, 2, 0, -1, 11, 12)), TP_F32, (3), 1,
         -1, -6); /* dims 0 and 2 are no run: the row path */
  /* max over a long row (several vectors + tail), maximum at the end */
  EXPECT0(OPA(TP_OP_MAX, A0(),
              F32((21), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21)),
          TP_F32, 21);
  EXPECT0(OPA(TP_OP_MIN, A0(),
              F32((21), 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, -21)),
          TP_F32, -21);
  /* the vectorized min: the minimum in a lane, in the tail, a NaN in a long row */
  EXPECT0(OPA(TP_OP_MIN, A0(), F32((19), 9, 8, 7, 6, 5, -4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6, 7, 8, -3)), TP_F32, -4);
  EXPECT0(OPA(TP_OP_MIN, A0(), F32((19), 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, 1, 2, 3, 4, 5, 6, 7, 8, -3)), TP_F32, -3);
  EXPECT0(OPA(TP_OP_MIN, A0(), F32((19), 9, 8, 7, 6, 5, 4, 3, 2, 1, 0, NAN, 2, 3, 4, 5, 6, 7, 8, -3)), TP_F32, NAN);
  /* NaN propagates through max / min / sum */
  EXPECT0(OPA(TP_OP_MAX, A0(), F32((3), 1, NAN, 2)), TP_F32, NAN);
  EXPECT0(OPA(TP_OP_MIN, A0(), F32((3), 1, NAN, 2)), TP_F32, NAN);
  EXPECT0(OPA(TP_OP_MAX, A0(), F32((3), NAN, 1, 2)), TP_F32, NAN);
  EXPECT0(OPA(TP_OP_MIN, A0(), F32((3), NAN, 1, 2)), TP_F32, NAN);
  EXPECT0(OPA(TP_OP_SUM, A0(), F32((3), 1, NAN, 2)), TP_F32, NAN);
  /* max of -inf values */
  EXPECT0(OPA(TP_OP_MAX, A0(), F32((2), -INFINITY, -INFINITY)), TP_F32, -INFINITY);
  /* non-contiguous input: sum over dim 0 of the transposed view */
  tp_tensor *xt = OPA(TP_OP_TRANSPOSE, ({ tp_attrs t = A0(); t.dim = 0; t.dim1 = 1; t; }), x);
  EXPECT(OPA(TP_OP_SUM, Adims(1, d0, 0), xt), TP_F32, (2), 6, 15);
  EXPECT(OPA(TP_OP_MAX, Adims(1, d1, 0), xt), TP_F32, (3), 4, 5, 6);
  /* empty: sum over an empty dim is 0; mean of nothing is NaN */
  EXPECT(OPA(TP_OP_SUM, Adims(1, d0, 0), EMPTY(TP_F32, (0, 3))), TP_F32, (3), 0, 0, 0);
  EXPECT(OPA(TP_OP_SUM, Adims(1, d0, 0), EMPTY(TP_I32, (0, 2))), TP_I64, (2), 0, 0);
  EXPECT_SHAPE(OPA(TP_OP_SUM, Adims(1, d1, 0), EMPTY(TP_F32, (0, 3))), TP_F32, (0));
  EXPECT0(OPA(TP_OP_SUM, A0(), EMPTY(TP_F32, (0))), TP_F32, 0);
  EXPECT0(OPA(TP_OP_MEAN, A0(), EMPTY(TP_F32, (0))), TP_F32, NAN);
  EXPECT_SHAPE(OPA(TP_OP_MAX, Adims(1, d1, 0), EMPTY(TP_F32, (0, 3))), TP_F32, (0));
  /* 0-d */
  EXPECT0(OPA(TP_OP_SUM, A0(), f0(4)), TP_F32, 4);
  EXPECT0(OPA(TP_OP_SUM, Adims(1, d0, 0), f0(4)), TP_F32, 4);
  EXPECT0(OPA(TP_OP_MAX, A0(), f0(-2)), TP_F32, -2);
  EXPECT0(OPA(TP_OP_MEAN, Adims(1, dm1, 0), f0(3)), TP_F32, 3);
}

static void test_softmax(void) {
  tp_tensor *x = F32((3), 1, 2, 3);
  EXPECT(OPA(TP_OP_SOFTMAX, Adim(0), x), TP_F32, (3), 0.09003057317038046, 0.24472847105479764,
         0.6652409557748218);
  EXPECT(OPA(TP_OP_LOG_SOFTMAX, Adim(-1), x), TP_F32, (3), -2.4076059644443806,
         -1.4076059644443804, -0.4076059644443804);
  /* the input is not modified */
  EXPECT(x, TP_F32, (3), 1, 2, 3);
  tp_tensor *y = OPA(TP_OP_SOFTMAX, Adim(0), x);
  CHECK(!same_storage(x, y));
  /* 2-D over dim 1 and dim 0: m = [[1,2],[1,3]] */
  tp_tensor *m = F32((2, 2), 1, 2, 1, 3);
  EXPECT(OPA(TP_OP_SOFTMAX, Adim(1), m), TP_F32, (2, 2), 0.2689414213699951, 0.7310585786300049,
         0.11920292202211755, 0.8807970779778823);
  EXPECT(OPA(TP_OP_SOFTMAX, Adim(0), m), TP_F32, (2, 2), 0.5, 0.2689414213699951, 0.5,
         0.7310585786300049);
  EXPECT(OPA(TP_OP_LOG_SOFTMAX, Adim(1), m), TP_F32, (2, 2), -1.3132616875182228,
         -0.31326168751822286, -2.1269280110429727, -0.1269280110429726);
  EXPECT(OPA(TP_OP_LOG_SOFTMAX, Adim(0), m), TP_F32, (2, 2), -0.6931471805599453,
         -1.3132616875182228, -0.6931471805599453, -0.31326168751822286);
  EXPECT(m, TP_F32, (2, 2), 1, 2, 1, 3);
  /* transposed input: mt = [[1,1],[2,3]]; softmax over dim 0 = rows of m */
  tp_tensor *mt = OPA(TP_OP_TRANSPOSE, ({ tp_attrs t = A0(); t.dim = 0; t.dim1 = 1; t; }), m);
  EXPECT(OPA(TP_OP_SOFTMAX, Adim(0), mt), TP_F32, (2, 2), 0.2689414213699951, 0.11920292202211755,
         0.7310585786300049, 0.8807970779778823);
  EXPECT(OPA(TP_OP_SOFTMAX, Adim(1), mt), TP_F32, (2, 2), 0.5, 0.5, 0.2689414213699951,
         0.7310585786300049);
  EXPECT(OPA(TP_OP_LOG_SOFTMAX, Adim(0), mt), TP_F32, (2, 2), -1.3132616875182228,
         -2.1269280110429727, -0.31326168751822286, -0.1269280110429726);
  /* a [3,1] column over dim 0 */
  EXPECT(OPA(TP_OP_SOFTMAX, Adim(0), F32((3, 1), 1, 2, 3)), TP_F32, (3, 1), 0.09003057317038046,
         0.24472847105479764, 0.6652409557748218);
  /* a [1,3] row over dim 0 (every element its own group) */
  EXPECT(OPA(TP_OP_SOFTMAX, Adim(0), F32((1, 3), 1, 2, 3)), TP_F32, (1, 3), 1, 1, 1);
  /* 3-D over the middle dim: x3[i,:,k] */
  tp_tensor *x3 = F32((2, 2, 2), 1, 1, 2, 3, 0, 0, 0, 0);
  EXPECT(OPA(TP_OP_SOFTMAX, Adim(1), x3), TP_F32, (2, 2, 2), 0.2689414213699951,
         0.11920292202211755, 0.7310585786300049, 0.8807970779778823, 0.5, 0.5, 0.5, 0.5);
  /* stability: large values */
  EXPECT(OPA(TP_OP_SOFTMAX, Adim(0), F32((2), 1000, 1000)), TP_F32, (2), 0.5, 0.5);
  EXPECT(OPA(TP_OP_LOG_SOFTMAX, Adim(0), F32((2), -1000, -1000)), TP_F32, (2),
         -0.6931471805599453, -0.6931471805599453);
  EXPECT(OPA(TP_OP_SOFTMAX, Adim(0), F32((3), 0, -INFINITY, 0)), TP_F32, (3), 0.5, 0, 0.5);
  /* integer input -> float32 */
  EXPECT(OPA(TP_OP_SOFTMAX, Adim(0), I32((2), 1, 1)), TP_F32, (2), 0.5, 0.5);
  /* a long row (tail handling): 17 equal values */
  tp_tensor *z = EMPTY(TP_F32, (17));
  double w17 = 1.0 / 17;
  EXPECT(OPA(TP_OP_SOFTMAX, Adim(0), z), TP_F32, (17), w17, w17, w17, w17, w17, w17, w17, w17, w17,
         w17, w17, w17, w17, w17, w17, w17, w17);
  /* 0-d and empty */
  EXPECT0(OPA(TP_OP_SOFTMAX, Adim(0), f0(5)), TP_F32, 1);
  EXPECT0(OPA(TP_OP_LOG_SOFTMAX, Adim(-1), f0(5)), TP_F32, 0);
  EXPECT_SHAPE(OPA(TP_OP_SOFTMAX, Adim(1), EMPTY(TP_F32, (0, 3))), TP_F32, (0, 3));
  EXPECT_SHAPE(OPA(TP_OP_SOFTMAX, Adim(1), EMPTY(TP_F32, (3, 0))), TP_F32, (3, 0));
  EXPECT_SHAPE(OPA(TP_OP_SOFTMAX, Adim(0), EMPTY(TP_F32, (0, 3))), TP_F32, (0, 3));
}

static void test_layer_norm(void) {
  tp_tensor *x = F32((2, 3), 1, 2, 3, 2, 4, 6);
  int64_t ns3[] = {3}, ns23[] = {2, 3};
  tp_attrs a = Adims(1, ns3, 0);
  a.eps = 0;
  EXPECT(OP(TP_OP_LAYER_NORM, &a, x, NULL, NULL), TP_F32, (2, 3), -1.224744871391589, 0,
         1.224744871391589, -1.224744871391589, 0, 1.224744871391589);
  /* default eps = 1e-5 */
  tp_attrs ad = Adims(1, ns3, 0);
  CHECK(ad.eps == 1e-5);
  EXPECT(OP(TP_OP_LAYER_NORM, &ad, F32((3), 1, 2, 3), NULL, NULL), TP_F32, (3),
         -1.2247356859083902, 0, 1.2247356859083902);
  /* weight and bias */
  tp_tensor *w = F32((3), 1, 2, 3), *b = F32((3), 0, 1, 0);
  EXPECT(OP(TP_OP_LAYER_NORM, &a, x, w, b), TP_F32, (2, 3), -1.224744871391589, 1,
         3.674234614174767, -1.224744871391589, 1, 3.674234614174767);
  EXPECT(OP(TP_OP_LAYER_NORM, &a, x, w, NULL), TP_F32, (2, 3), -1.224744871391589, 0,
         3.674234614174767, -1.224744871391589, 0, 3.674234614174767);
  EXPECT(OP(TP_OP_LAYER_NORM, &a, x, NULL, b), TP_F32, (2, 3), -1.224744871391589, 1,
         1.224744871391589, -1.224744871391589, 1, 1.224744871391589);
  /* normalized over the trailing [2,3] */
  tp_attrs a2 = Adims(2, ns23, 0);
  EXPECT(OP(TP_OP_LAYER_NORM, &a2, x, NULL, NULL), TP_F32, (2, 3), -1.2247425750014138,
         -0.6123712875007069, 0, -0.6123712875007069, 0.6123712875007069, 1.8371138625021208);
  /* constant row with eps: 0 */
  EXPECT(OP(TP_OP_LAYER_NORM, &ad, F32((3), 5, 5, 5), NULL, NULL), TP_F32, (3), 0, 0, 0);
  /* 3-D input [2,1,3] over [3], transposed input */
  EXPECT(OP(TP_OP_LAYER_NORM, &a, F32((2, 1, 3), 1, 2, 3, 2, 4, 6), NULL, NULL), TP_F32,
         (2, 1, 3), -1.224744871391589, 0, 1.224744871391589, -1.224744871391589, 0,
         1.224744871391589);
  tp_tensor *xt = OPA(TP_OP_TRANSPOSE, ({ tp_attrs t = A0(); t.dim = 0; t.dim1 = 1; t; }),
                      F32((3, 2), 1, 2, 2, 4, 3, 6));
  EXPECT(OP(TP_OP_LAYER_NORM, &a, xt, NULL, NULL), TP_F32, (2, 3), -1.224744871391589, 0,
         1.224744871391589, -1.224744871391589, 0, 1.224744871391589);
  /* empty rows */
  EXPECT_SHAPE(OP(TP_OP_LAYER_NORM, &a, EMPTY(TP_F32, (0, 3)), NULL, NULL), TP_F32, (0, 3));
}

static void test_reshape(void) {
  tp_tensor *x = F32((2, 3), 1, 2, 3, 4, 5, 6);
  int64_t s32[] = {3, 2}, sm1[] = {-1}, s3m1[] = {3, -1}, s1m1[] = {1, -1, 1};
  tp_tensor *r = OPA(TP_OP_RESHAPE, Adims(2, s32, 0), x);
  EXPECT(r, TP_F32, (3, 2), 1, 2, 3, 4, 5, 6);
  CHECK(same_storage(r, x)); /* a view */
  if (r) CHECK(tp_tensor_strides(r)[0] == 2 && tp_tensor_strides(r)[1] == 1);
  tp_tensor *f = OPA(TP_OP_RESHAPE, Adims(1, sm1, 0), x);
  EXPECT(f, TP_F32, (6), 1, 2, 3, 4, 5, 6);
  CHECK(same_storage(f, x));
  EXPECT(OPA(TP_OP_RESHAPE, Adims(2, s3m1, 0), x), TP_F32, (3, 2), 1, 2, 3, 4, 5, 6);
  EXPECT(OPA(TP_OP_RESHAPE, Adims(3, s1m1, 0), x), TP_F32, (1, 6, 1), 1, 2, 3, 4, 5, 6);
  tp_tensor *y = NULL;
  CHECK(tp_reshape(x, 2, s3m1, &y) == TP_OK);
  EXPECT(track(y), TP_F32, (3, 2), 1, 2, 3, 4, 5, 6);
  /* transposed: cannot be a view, values in the transposed order */
  tp_tensor *xt = OPA(TP_OP_TRANSPOSE, ({ tp_attrs t = A0(); t.dim = 0; t.dim1 = 1; t; }), x);
  tp_tensor *rt = OPA(TP_OP_RESHAPE, Adims(1, sm1, 0), xt);
  EXPECT(rt, TP_F32, (6), 1, 4, 2, 5, 3, 6);
  /* reshape of the transposed view to [3,1,2] only inserts a 1: still a view */
  int64_t s312[] = {3, 1, 2};
  tp_tensor *rv = OPA(TP_OP_RESHAPE, Adims(3, s312, 0), xt);
  EXPECT(rv, TP_F32, (3, 1, 2), 1, 4, 2, 5, 3, 6);
  CHECK(same_storage(rv, x));
  /* row slice of a matrix reshaped: contiguous rows -> view with offset */
  tp_tensor *m = F32((4, 2), 0, 1, 2, 3, 4, 5, 6, 7);
  tp_tensor *ms = OPA(TP_OP_SLICE, Aslice(0, 1, 3, 1), m);
  tp_tensor *msr = OPA(TP_OP_RESHAPE, Adims(1, sm1, 0), ms);
  EXPECT(msr, TP_F32, (4), 2, 3, 4, 5);
  CHECK(same_storage(msr, m));
  /* step-2 slice reshaped: values gathered correctly */
  tp_tensor *ms2 = OPA(TP_OP_SLICE, Aslice(0, 0, INT64_MAX, 2), m);
  EXPECT(OPA(TP_OP_RESHAPE, Adims(1, sm1, 0), ms2), TP_F32, (4), 0, 1, 4, 5);
  /* split a dim of a strided view: [3,4] column-slice [3,2] -> [6] copies, [3,2,1] views */
  /* int dtype keeps dtype */
  EXPECT(OPA(TP_OP_RESHAPE, Adims(2, s32, 0), I64((6), 1, 2, 3, 4, 5, 6)), TP_I64, (3, 2), 1, 2,
         3, 4, 5, 6);
  /* 0-d <-> [1] */
  int64_t one[] = {1};
  EXPECT(OPA(TP_OP_RESHAPE, Adims(1, one, 0), f0(7)), TP_F32, (1), 7);
  EXPECT0(OPA(TP_OP_RESHAPE, Adims(0, NULL, 0), F32((1, 1), 7)), TP_F32, 7);
  EXPECT(OPA(TP_OP_RESHAPE, Adims(1, sm1, 0), f0(7)), TP_F32, (1), 7);
  /* empty: [0,3] -> [-1] = [0]; -> [3,-1] = [3,0] */
  EXPECT_SHAPE(OPA(TP_OP_RESHAPE, Adims(1, sm1, 0), EMPTY(TP_F32, (0, 3))), TP_F32, (0));
  EXPECT_SHAPE(OPA(TP_OP_RESHAPE, Adims(2, s3m1, 0), EMPTY(TP_F32, (0, 3))), TP_F32, (3, 0));
}

static void test_transpose_permute(void) {
  tp_tensor *x = F32((2, 3), 1, 2, 3, 4, 5, 6);
  tp_tensor *t = NULL;
  CHECK(tp_transpose(x, 0, 1, &t) == TP_OK);
  track(t);
  EXPECT(t, TP_F32, (3, 2), 1, 4, 2, 5, 3, 6);
  if (t) {
    CHECK(tp_tensor_strides(t)[0] == 1 && tp_tensor_strides(t)[1] == 3);
    CHECK(!tp_tensor_is_contiguous(t));
    CHECK(same_storage(t, x));
    tp_tensor *c = NULL;
    CHECK(tp_contiguous(t, &c) == TP_OK);
    track(c);
    EXPECT(c, TP_F32, (3, 2), 1, 4, 2, 5, 3, 6);
    CHECK(c && tp_tensor_is_contiguous(c));
    CHECK(c && tp_tensor_strides(c)[0] == 2 && tp_tensor_strides(c)[1] == 1);
  }
  tp_tensor *t2 = NULL;
  CHECK(tp_transpose(x, -1, -2, &t2) == TP_OK);
  EXPECT(track(t2), TP_F32, (3, 2), 1, 4, 2, 5, 3, 6);
  tp_tensor *t3 = NULL;
  CHECK(tp_transpose(x, 1, 1, &t3) == TP_OK);
  EXPECT(track(t3), TP_F32, (2, 3), 1, 2, 3, 4, 5, 6);
  /* 3-D: x3[i][j][k] = 100 i + 10 j + k, shape [2,2,3]; transpose(0, 2) -> [3,2,2] */
  tp_tensor *x3 = F32((2, 2, 3), 0, 1, 2, 10, 11, 12, 100, 101, 102, 110, 111, 112);
  tp_tensor *x3t = NULL;
  CHECK(tp_transpose(x3, 0, 2, &x3t) == TP_OK);
  EXPECT(track(x3t), TP_F32, (3, 2, 2), 0, 100, 10, 110, 1, 101, 11, 111, 2, 102, 12, 112);
  /* permute [2,0,1]: y[k][i][j] = x3[i][j][k] */
  tp_attrs p = A0();
  p.nints = 3;
  p.ints[0] = 2, p.ints[1] = 0, p.ints[2] = 1;
  EXPECT(OP(TP_OP_PERMUTE, &p, x3), TP_F32, (3, 2, 2), 0, 10, 100, 110, 1, 11, 101, 111, 2, 12,
         102, 112);
  /* permute [1,2,0] with negative entries: [-2,-1,0]: y[j][k][i] */
  p.ints[0] = -2, p.ints[1] = -1, p.ints[2] = 0;
  EXPECT(OP(TP_OP_PERMUTE, &p, x3), TP_F32, (2, 3, 2), 0, 100, 1, 101, 2, 102, 10, 110, 11, 111,
         12, 112);
  /* permute of a transposed view composes */
  tp_attrs p2 = A0();
  p2.nints = 2;
  p2.ints[0] = 1, p2.ints[1] = 0;
  EXPECT(OP(TP_OP_PERMUTE, &p2, t), TP_F32, (2, 3), 1, 2, 3, 4, 5, 6);
  /* identity permute and 0-d */
  tp_attrs p0 = A0();
  EXPECT0(OP(TP_OP_PERMUTE, &p0, f0(3)), TP_F32, 3);
  EXPECT0(OPA(TP_OP_TRANSPOSE, A0(), f0(3)), TP_F32, 3);
  /* int/bool views */
  EXPECT(OPA(TP_OP_TRANSPOSE, ({ tp_attrs q = A0(); q.dim1 = 1; q; }), B8((1, 3), 1, 0, 1)),
         TP_BOOL, (3, 1), 1, 0, 1);
  /* empty */
  EXPECT_SHAPE(OPA(TP_OP_TRANSPOSE, ({ tp_attrs q = A0(); q.dim1 = 1; q; }), EMPTY(TP_I32, (0, 4))),
               TP_I32, (4, 0));
}

static void test_slice(void) {
  tp_tensor *v = I32((10), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9);
  EXPECT(OPA(TP_OP_SLICE, Aslice(0, -3, INT64_MAX, 1), v), TP_I32, (3), 7, 8, 9);
  tp_tensor *s2 = OPA(TP_OP_SLICE, Aslice(0, 0, INT64_MAX, 2), v);
  EXPECT(s2, TP_I32, (5), 0, 2, 4, 6, 8);
  CHECK(same_storage(s2, v));
  if (s2) CHECK(tp_tensor_strides(s2)[0] == 2);
  EXPECT(OPA(TP_OP_SLICE, Aslice(0, 1, 100, 3), v), TP_I32, (3), 1, 4, 7);
  EXPECT(OPA(TP_OP_SLICE, Aslice(0, 2, 5, 1), v), TP_I32, (3), 2, 3, 4);
  EXPECT(OPA(TP_OP_SLICE, Aslice(0, -100, 2, 1), v), TP_I32, (2), 0, 1);
  EXPECT(OPA(TP_OP_SLICE, Aslice(0, -4, -1, 1), v), TP_I32, (3), 6, 7, 8);
  EXPECT(OPA(TP_OP_SLICE, Aslice(0, 3, -5, 1), v), TP_I32, (2), 3, 4);
  EXPECT(OPA(TP_OP_SLICE, Aslice(0, 1, 10, 4), v), TP_I32, (3), 1, 5, 9);
  EXPECT(OPA(TP_OP_SLICE, Aslice(0, 0, 10, 10), v), TP_I32, (1), 0);
  EXPECT(OPA(TP_OP_SLICE, Aslice(0, 9, 10, 1000), v), TP_I32, (1), 9);
  EXPECT(OPA(TP_OP_SLICE, Aslice(0, 0, INT64_MAX, 3), v), TP_I32, (4), 0, 3, 6, 9);
  EXPECT_SHAPE(OPA(TP_OP_SLICE, Aslice(0, 5, 2, 1), v), TP_I32, (0));
  EXPECT_SHAPE(OPA(TP_OP_SLICE, Aslice(0, 10, INT64_MAX, 1), v), TP_I32, (0));
  EXPECT_SHAPE(OPA(TP_OP_SLICE, Aslice(0, 100, 200, 1), v), TP_I32, (0));
  EXPECT_SHAPE(OPA(TP_OP_SLICE, Aslice(0, -100, -50, 1), v), TP_I32, (0));
  /* slicing a slice: v[1::2][1:] = [3,5,7,9] */
  tp_tensor *o = OPA(TP_OP_SLICE, Aslice(0, 1, INT64_MAX, 2), v);
  EXPECT(OPA(TP_OP_SLICE, Aslice(0, 1, INT64_MAX, 1), o), TP_I32, (4), 3, 5, 7, 9);
  EXPECT(OPA(TP_OP_SLICE, Aslice(0, 0, INT64_MAX, 2), o), TP_I32, (3), 1, 5, 9);
  /* 2-D: rows and columns, negative dim */
  tp_tensor *m = F32((3, 4), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11);
  EXPECT(OPA(TP_OP_SLICE, Aslice(1, 1, 3, 1), m), TP_F32, (3, 2), 1, 2, 5, 6, 9, 10);
  EXPECT(OPA(TP_OP_SLICE, Aslice(-1, -1, INT64_MAX, 1), m), TP_F32, (3, 1), 3, 7, 11);
  EXPECT(OPA(TP_OP_SLICE, Aslice(0, -2, 99, 1), m), TP_F32, (2, 4), 4, 5, 6, 7, 8, 9, 10, 11);
  EXPECT(OPA(TP_OP_SLICE, Aslice(1, 0, INT64_MAX, 2), m), TP_F32, (3, 2), 0, 2, 4, 6, 8, 10);
  /* contiguous() of a slice */
  tp_tensor *c = NULL, *sl = OPA(TP_OP_SLICE, Aslice(1, 1, 3, 1), m);
  if (sl) {
    CHECK(!tp_tensor_is_contiguous(sl));
    CHECK(tp_contiguous(sl, &c) == TP_OK);
    track(c);
    EXPECT(c, TP_F32, (3, 2), 1, 2, 5, 6, 9, 10);
    CHECK(c && tp_tensor_is_contiguous(c));
  }
  /* default attrs: whole dim 0 */
  EXPECT(OP(TP_OP_SLICE, NULL, F32((2), 4, 5)), TP_F32, (2), 4, 5);
  /* bool */
  EXPECT(OPA(TP_OP_SLICE, Aslice(0, 1, INT64_MAX, 1), B8((3), 1, 0, 1)), TP_BOOL, (2), 0, 1);
}

static void test_concat(void) {
  /* along dim 1 with mixed dtypes: int32 [2,1] + float32 [2,2] -> float32 [2,3] */
  tp_tensor *a = I32((2, 1), 1, 2), *b = F32((2, 2), 0.5, 1.5, 2.5, 3.5);
  tp_attrs d1 = Adim(1);
  EXPECT(OP(TP_OP_CONCAT, &d1, a, b), TP_F32, (2, 3), 1, 0.5, 1.5, 2, 2.5, 3.5);
  EXPECT(OP(TP_OP_CONCAT, &d1, b, a), TP_F32, (2, 3), 0.5, 1.5, 1, 2.5, 3.5, 2);
  /* the middle dim of 3-D tensors: [2,1,2] (int64) + [2,2,2] (int32) -> [2,3,2] int64 */
  tp_tensor *p = I64((2, 1, 2), 1, 2, 3, 4), *q = I32((2, 2, 2), 10, 11, 12, 13, 20, 21, 22, 23);
  EXPECT(OP(TP_OP_CONCAT, &d1, p, q), TP_I64, (2, 3, 2), 1, 2, 10, 11, 12, 13, 3, 4, 20, 21, 22,
         23);
  /* bool + int64 -> int64; bool + bool -> bool */
  tp_attrs d0 = Adim(0);
  EXPECT(OP(TP_OP_CONCAT, &d0, B8((2), 1, 0), I64((1), 7)), TP_I64, (3), 1, 0, 7);
  EXPECT(OP(TP_OP_CONCAT, &d0, B8((2), 1, 0), B8((1), 1)), TP_BOOL, (3), 1, 0, 1);
  EXPECT(OP(TP_OP_CONCAT, &d0, I32((1), 3), B8((1), 1), F32((1), 0.25)), TP_F32, (3), 3, 1, 0.25);
  /* dim 0, three operands, dim -1 */
  EXPECT(OP(TP_OP_CONCAT, &d0, F32((1, 2), 1, 2), F32((2, 2), 3, 4, 5, 6), F32((1, 2), 7, 8)),
         TP_F32, (4, 2), 1, 2, 3, 4, 5, 6, 7, 8);
  tp_attrs dm1 = Adim(-1);
  EXPECT(OP(TP_OP_CONCAT, &dm1, F32((2, 1), 1, 2), F32((2, 1), 3, 4)), TP_F32, (2, 2), 1, 3, 2,
         4);
  /* a single operand */
  EXPECT(OP(TP_OP_CONCAT, &d0, F32((2), 1, 2)), TP_F32, (2), 1, 2);
  /* empty operands */
  EXPECT(OP(TP_OP_CONCAT, &d1, EMPTY(TP_F32, (2, 0)), F32((2, 1), 5, 6), EMPTY(TP_F32, (2, 0))),
         TP_F32, (2, 1), 5, 6);
  EXPECT_SHAPE(OP(TP_OP_CONCAT, &d0, EMPTY(TP_F32, (0, 3)), EMPTY(TP_F32, (0, 3))), TP_F32, (0, 3));
  /* non-contiguous operands: transposed view + slice */
  tp_tensor *x = F32((2, 2), 1, 2, 3, 4);
  tp_tensor *xt = OPA(TP_OP_TRANSPOSE, ({ tp_attrs t = A0(); t.dim = 0; t.dim1 = 1; t; }), x);
  tp_tensor *m = F32((2, 4), 0, 1, 2, 3, 4, 5, 6, 7);
  tp_tensor *ms = OPA(TP_OP_SLICE, Aslice(1, 1, INT64_MAX, 2), m); /* [[1,3],[5,7]] */
  EXPECT(OP(TP_OP_CONCAT, &d1, xt, ms), TP_F32, (2, 4), 1, 3, 1, 3, 2, 4, 5, 7);
  EXPECT(OP(TP_OP_CONCAT, &d0, xt, ms), TP_F32, (4, 2), 1, 3, 2, 4, 1, 3, 5, 7);
}

static void test_cast(void) {
  tp_tensor *x = F32((6), 1.7f, -1.7f, 2.5f, -0.5f, 0.0f, -0.0f);
  EXPECT(OPA(TP_OP_CAST, Acast(TP_I32), x), TP_I32, (6), 1, -1, 2, 0, 0, 0);
  EXPECT(OPA(TP_OP_CAST, Acast(TP_I64), x), TP_I64, (6), 1, -1, 2, 0, 0, 0);
  EXPECT(OPA(TP_OP_CAST, Acast(TP_BOOL), x), TP_BOOL, (6), 1, 1, 1, 1, 0, 0);
  EXPECT(OPA(TP_OP_CAST, Acast(TP_F32), x), TP_F32, (6), 1.7f, -1.7f, 2.5f, -0.5f, 0, 0);
  EXPECT(OPA(TP_OP_CAST, Acast(TP_I64), F32((2), 123456.9f, -99999.99f)), TP_I64, (2), 123456,
         -99999);
  EXPECT(OPA(TP_OP_CAST, Acast(TP_BOOL), I32((4), 0, 3, -1, 0)), TP_BOOL, (4), 0, 1, 1, 0);
  EXPECT(OPA(TP_OP_CAST, Acast(TP_BOOL), I64((2), 0, 4294967296LL)), TP_BOOL, (2), 0, 1);
  EXPECT(OPA(TP_OP_CAST, Acast(TP_F32), B8((2), 1, 0)), TP_F32, (2), 1, 0);
  EXPECT(OPA(TP_OP_CAST, Acast(TP_I32), B8((2), 1, 0)), TP_I32, (2), 1, 0);
  EXPECT(OPA(TP_OP_CAST, Acast(TP_F32), I32((2), -7, 16777217)), TP_F32, (2), -7, 16777216);
  /* int64 -> int32 keeps the low 32 bits (numpy / torch wrap) */
  EXPECT(OPA(TP_OP_CAST, Acast(TP_I32), I64((2), 4294967297LL, -1)), TP_I32, (2), 1, -1);
  EXPECT(OPA(TP_OP_CAST, Acast(TP_I64), I32((2), -2147483647 - 1, 5)), TP_I64, (2), -2147483648.0,
         5);
  /* int64 beyond 2^53 -> int64 copy is exact */
  tp_tensor *big = OPA(TP_OP_CAST, Acast(TP_I64), I64((1), 9007199254740993LL));
  if (big) {
    int64_t v = 0;
    CHECK(tp_tensor_read(big, &v, sizeof v) == TP_OK && v == 9007199254740993LL);
  }
  /* cast of a strided view, of 0-d, of empty */
  tp_tensor *m = F32((2, 2), 1.5, 2.5, 3.5, 4.5);
  tp_tensor *mt = OPA(TP_OP_TRANSPOSE, ({ tp_attrs t = A0(); t.dim = 0; t.dim1 = 1; t; }), m);
  EXPECT(OPA(TP_OP_CAST, Acast(TP_I32), mt), TP_I32, (2, 2), 1, 3, 2, 4);
  EXPECT0(OPA(TP_OP_CAST, Acast(TP_I32), f0(-3.9f)), TP_I32, -3);
  EXPECT_SHAPE(OPA(TP_OP_CAST, Acast(TP_BOOL), EMPTY(TP_F32, (0, 2))), TP_BOOL, (0, 2));
  /* cast result is independent of the source (value semantics) */
  tp_tensor *c = OPA(TP_OP_CAST, Acast(TP_I32), F32((1), 2));
  EXPECT(c, TP_I32, (1), 2);
}

/* ---- error paths ---------------------------------------------------------- */
static void test_errors(void) {
  const tp_status INV = TP_ERR_INVALID_ARG;
  tp_tensor *a43 = EMPTY(TP_F32, (4, 3)), *b52 = EMPTY(TP_F32, (5, 2));
  ERR(TP_OP_MATMUL, NULL, (a43, b52), INV, "inner dimensions", "[4,3]", "[5,2]");
  {
    tp_tensor *y = (tp_tensor *)0x1;
    CHECK(tp_matmul(a43, b52, &y) == INV && y == NULL);
    CHECK(strstr(tp_last_error(), "inner dimensions") != NULL);
    sanity_(__LINE__);
  }
  ERR(TP_OP_MATMUL, NULL, (f0(1), a43), INV, "matmul");
  ERR(TP_OP_MATMUL, NULL, (EMPTY(TP_I32, (2, 2)), EMPTY(TP_F32, (2, 2))), INV, "matmul", "int32");
  ERR(TP_OP_MATMUL, NULL, (EMPTY(TP_F32, (2, 2, 3)), EMPTY(TP_F32, (3, 3, 4))), INV, "batch",
      "[2,2,3]", "[3,3,4]");
  ERR(TP_OP_MATMUL, NULL, (EMPTY(TP_F32, (3)), EMPTY(TP_F32, (4))), INV, "inner dimensions");
  /* broadcasting */
  ERR(TP_OP_ADD, NULL, (EMPTY(TP_F32, (2, 3)), EMPTY(TP_F32, (4))), INV, "broadcast", "[2,3]",
      "[4]");
  ERR(TP_OP_MUL, NULL, (EMPTY(TP_F32, (2, 3)), EMPTY(TP_F32, (0, 3))), INV, "broadcast");
  ERR(TP_OP_EQ, NULL, (EMPTY(TP_F32, (3)), EMPTY(TP_F32, (2))), INV, "broadcast");
  ERR(TP_OP_WHERE, NULL, (EMPTY(TP_BOOL, (3)), EMPTY(TP_F32, (2)), EMPTY(TP_F32, (1))), INV,
      "broadcast");
  /* bool arithmetic and bool unary math are rejected */
  ERR(TP_OP_SUB, NULL, (EMPTY(TP_BOOL, (2)), EMPTY(TP_BOOL, (2))), INV, "bool");
  ERR(TP_OP_NEG, NULL, (EMPTY(TP_BOOL, (2))), INV, "bool");
  ERR(TP_OP_EXP, NULL, (EMPTY(TP_BOOL, (2))), INV, "bool");
  ERR(TP_OP_SOFTMAX, NULL, (EMPTY(TP_BOOL, (2))), INV, "bool");
  /* gelu approximate out of range */
  {
    tp_attrs g = A0();
    g.approximate = 2;
    ERR(TP_OP_GELU, &g, (EMPTY(TP_F32, (2))), INV, "gelu", "approximate");
  }
  /* reductions: dim out of range, duplicate, max over an empty dim */
  int64_t d2[] = {2}, dm3[] = {-3}, d00[] = {0, 0}, d0m2[] = {0, -2}, d0[] = {0};
  ERRA(TP_OP_SUM, Adims(1, d2, 0), (EMPTY(TP_F32, (2, 3))), INV, "dim 2", "out of range");
  ERRA(TP_OP_MEAN, Adims(1, dm3, 0), (EMPTY(TP_F32, (2, 3))), INV, "-3", "range");
  ERRA(TP_OP_SUM, Adims(2, d00, 0), (EMPTY(TP_F32, (2, 3))), INV, "more than once");
  ERRA(TP_OP_MAX, Adims(2, d0m2, 0), (EMPTY(TP_F32, (2, 3))), INV, "more than once");
  ERRA(TP_OP_MAX, Adims(1, d0, 0), (EMPTY(TP_F32, (0, 3))), INV, "max", "size 0");
  ERRA(TP_OP_MIN, A0(), (EMPTY(TP_F32, (0))), INV, "min");
  {
    tp_tensor *y = (tp_tensor *)0x1;
    CHECK(tp_sum(EMPTY(TP_F32, (2)), 1, d2, 0, &y) == INV && y == NULL);
    CHECK(strstr(tp_last_error(), "out of range") != NULL);
    sanity_(__LINE__);
  }
  /* softmax dim */
  ERRA(TP_OP_SOFTMAX, Adim(2), (EMPTY(TP_F32, (2, 3))), INV, "softmax", "dim 2");
  ERRA(TP_OP_LOG_SOFTMAX, Adim(-3), (EMPTY(TP_F32, (2, 3))), INV, "log_softmax", "-3");
  /* linear */
  ERR(TP_OP_LINEAR, NULL, (EMPTY(TP_F32, (2, 3)), EMPTY(TP_F32, (4, 5)), NULL), INV, "linear",
      "[2,3]", "[4,5]");
  ERR(TP_OP_LINEAR, NULL, (EMPTY(TP_F32, (2, 3)), EMPTY(TP_F32, (4, 3)), EMPTY(TP_F32, (3))), INV,
      "bias", "[3]");
  ERR(TP_OP_LINEAR, NULL, (EMPTY(TP_F32, (2, 3)), EMPTY(TP_F32, (3)), NULL), INV, "linear");
  ERR(TP_OP_LINEAR, NULL, (EMPTY(TP_F32, (2, 3)), NULL, NULL), INV, "weight");
  ERR(TP_OP_LINEAR, NULL, (EMPTY(TP_I32, (2, 3)), EMPTY(TP_F32, (4, 3)), NULL), INV, "int32");
  ERR(TP_OP_LINEAR, NULL, (f0(1), EMPTY(TP_F32, (4, 3)), NULL), INV, "linear");
  /* layer_norm */
  {
    int64_t ns4[] = {4}, ns3[] = {3}, ns123[] = {1, 2, 3};
    tp_attrs a = Adims(1, ns4, 0);
    ERR(TP_OP_LAYER_NORM, &a, (EMPTY(TP_F32, (2, 3)), NULL, NULL), INV, "normalized_shape", "[4]",
        "[2,3]");
    a = Adims(1, ns3, 0);
    ERR(TP_OP_LAYER_NORM, &a, (EMPTY(TP_F32, (2, 3)), EMPTY(TP_F32, (4)), NULL), INV, "weight",
        "[4]");
    ERR(TP_OP_LAYER_NORM, &a, (EMPTY(TP_F32, (2, 3)), NULL, EMPTY(TP_F32, (2, 3))), INV, "bias");
    ERR(TP_OP_LAYER_NORM, &a, (EMPTY(TP_I32, (2, 3)), NULL, NULL), INV, "int32");
    a.eps = -1;
    ERR(TP_OP_LAYER_NORM, &a, (EMPTY(TP_F32, (2, 3)), NULL, NULL), INV, "eps");
    a = Adims(3, ns123, 0);
    ERR(TP_OP_LAYER_NORM, &a, (EMPTY(TP_F32, (2, 3)), NULL, NULL), INV, "normalized_shape");
    a = Adims(0, NULL, 0);
    ERR(TP_OP_LAYER_NORM, &a, (EMPTY(TP_F32, (2, 3)), NULL, NULL), INV, "normalized_shape");
  }
  /* reshape */
  {
    int64_t s4[] = {4}, s2[] = {-1, -1}, sneg[] = {-2, 3}, s0[] = {-1, 0};
    ERRA(TP_OP_RESHAPE, Adims(1, s4, 0), (EMPTY(TP_F32, (2, 3))), INV, "reshape", "[2,3]", "[4]");
    ERRA(TP_OP_RESHAPE, Adims(2, s2, 0), (EMPTY(TP_F32, (2, 3))), INV, "-1");
    ERRA(TP_OP_RESHAPE, Adims(2, sneg, 0), (EMPTY(TP_F32, (2, 3))), INV, "-2");
    ERRA(TP_OP_RESHAPE, Adims(1, (int64_t[]){5}, 0), (EMPTY(TP_F32, (2, 3))), INV, "6");
    ERRA(TP_OP_RESHAPE, Adims(2, s0, 0), (EMPTY(TP_F32, (2, 0))), INV, "reshape");
    tp_tensor *y = (tp_tensor *)0x1;
    CHECK(tp_reshape(EMPTY(TP_F32, (2, 3)), 1, s4, &y) == INV && y == NULL);
    sanity_(__LINE__);
  }
  /* transpose / permute */
  ERRA(TP_OP_TRANSPOSE, ({ tp_attrs t = A0(); t.dim = 0; t.dim1 = 2; t; }),
       (EMPTY(TP_F32, (2, 3))), INV, "transpose", "dim 2");
  {
    tp_tensor *y = (tp_tensor *)0x1;
    CHECK(tp_transpose(EMPTY(TP_F32, (2, 3)), -3, 0, &y) == INV && y == NULL);
    sanity_(__LINE__);
  }
  {
    tp_attrs p = A0();
    p.nints = 2, p.ints[0] = 0, p.ints[1] = 0;
    ERR(TP_OP_PERMUTE, &p, (EMPTY(TP_F32, (2, 3))), INV, "permute", "more than once");
    p.nints = 1;
    ERR(TP_OP_PERMUTE, &p, (EMPTY(TP_F32, (2, 3))), INV, "permute");
    p.nints = 2, p.ints[0] = 0, p.ints[1] = 2;
    ERR(TP_OP_PERMUTE, &p, (EMPTY(TP_F32, (2, 3))), INV, "permute");
  }
  /* slice */
  ERRA(TP_OP_SLICE, Aslice(0, 0, 2, 0), (EMPTY(TP_F32, (4))), INV, "step");
  ERRA(TP_OP_SLICE, Aslice(0, 0, 2, -1), (EMPTY(TP_F32, (4))), INV, "step");
  ERRA(TP_OP_SLICE, Aslice(1, 0, 2, 1), (EMPTY(TP_F32, (4))), INV, "slice", "dim 1");
  ERRA(TP_OP_SLICE, Aslice(0, 0, 2, 1), (f0(1)), INV, "slice", "0-d");
  /* concat */
  ERRA(TP_OP_CONCAT, Adim(0), (EMPTY(TP_F32, (2, 3)), EMPTY(TP_F32, (2, 4))), INV, "concat",
       "tensor 1", "[2,4]", "[2,3]");
  ERRA(TP_OP_CONCAT, Adim(0), (EMPTY(TP_F32, (2, 3)), EMPTY(TP_F32, (3))), INV, "concat");
  ERRA(TP_OP_CONCAT, Adim(2), (EMPTY(TP_F32, (2, 3)), EMPTY(TP_F32, (2, 3))), INV, "dim 2");
  ERRA(TP_OP_CONCAT, Adim(0), (f0(1), f0(2)), INV, "concat", "0-d");
  {
    tp_tensor *y = (tp_tensor *)0x1;
    CHECK(tp_op_call(TP_OP_CONCAT, 0, NULL, NULL, &y) == INV && y == NULL);
    sanity_(__LINE__);
  }
  /* cast to an unknown dtype */
  ERRA(TP_OP_CAST, Acast((tp_dtype)17), (EMPTY(TP_F32, (2))), INV, "cast", "17");
  /* arity and missing operands */
  ERR(TP_OP_ADD, NULL, (EMPTY(TP_F32, (2))), INV, "add", "2", "1");
  ERR(TP_OP_EXP, NULL, (EMPTY(TP_F32, (2)), EMPTY(TP_F32, (2))), INV, "exp");
  ERR(TP_OP_ADD, NULL, (EMPTY(TP_F32, (2)), NULL), INV, "add", "missing");
  ERR(TP_OP_WHERE, NULL, (EMPTY(TP_BOOL, (2)), EMPTY(TP_F32, (2))), INV, "where");
  {
    tp_tensor *y = (tp_tensor *)0x1, *x = EMPTY(TP_F32, (2));
    CHECK(tp_op_call(TP_OP_COUNT, 1, &x, NULL, &y) == INV);
    CHECK(tp_op_call((tp_op)-1, 1, &x, NULL, &y) == INV);
    CHECK(tp_op_call(TP_OP_EXP, 1, &x, NULL, NULL) == INV);
    CHECK(tp_op_call(TP_OP_EXP, 1, NULL, NULL, &y) == INV);
    tp_tensor *ins[65];
    for (int i = 0; i < 65; i++) ins[i] = x;
    CHECK(tp_op_call(TP_OP_CONCAT, 65, ins, NULL, &y) == INV);
    CHECK(tp_op_call(TP_OP_EXP, -1, &x, NULL, &y) == INV);
    sanity_(__LINE__);
  }
  /* creation errors */
  {
    tp_tensor *t = NULL;
    CHECK(tp_tensor_new(TP_F32, 1, (int64_t[]){-1}, NULL, &t) == INV);
    CHECK(strstr(tp_last_error(), "negative") != NULL);
    CHECK(tp_tensor_new(TP_F32, TP_MAX_DIMS + 1, (int64_t[9]){1, 1, 1, 1, 1, 1, 1, 1, 1}, NULL,
                        &t) == INV);
    CHECK(tp_tensor_new((tp_dtype)9, 1, (int64_t[]){1}, NULL, &t) == INV);
    sanity_(__LINE__);
  }
  /* tp_tensor_read with the wrong size */
  {
    float buf[3];
    tp_tensor *t = F32((2), 1, 2);
    CHECK(tp_tensor_read(t, buf, sizeof buf) == INV);
    CHECK(strstr(tp_last_error(), "12") != NULL && strstr(tp_last_error(), "8") != NULL);
    double v;
    CHECK(tp_tensor_item(t, &v) == INV);
    CHECK(tp_tensor_item(F32((1), 2.5), &v) == TP_OK && v == 2.5);
    sanity_(__LINE__);
  }
}

/* Results must not alias inputs: an op result keeps its values after the
 * input is released, and inputs keep their values after ops. */
static void test_value_semantics(void) {
  tp_tensor *x = NULL;
  int64_t s = 4;
  float xv[4] = {1, 2, 3, 4};
  CHECK(tp_tensor_new(TP_F32, 1, &s, xv, &x) == TP_OK);
  if (!x) return;
  tp_attrs d0 = Adim(0);
  tp_tensor *sm = NULL, *ls = NULL, *ex = NULL, *ca = NULL;
  CHECK(tp_op_call(TP_OP_SOFTMAX, 1, &x, &d0, &sm) == TP_OK);
  CHECK(tp_op_call(TP_OP_LOG_SOFTMAX, 1, &x, &d0, &ls) == TP_OK);
  CHECK(tp_op_call(TP_OP_EXP, 1, &x, NULL, &ex) == TP_OK);
  tp_tensor *cin[1] = {x};
  CHECK(tp_op_call(TP_OP_CONCAT, 1, cin, &d0, &ca) == TP_OK);
  EXPECT(x, TP_F32, (4), 1, 2, 3, 4);
  tp_tensor_release(x);
  track(sm), track(ls), track(ex), track(ca);
  EXPECT(sm, TP_F32, (4), 0.03205860328008499, 0.08714431874203257, 0.23688281808991013,
         0.6439142598879722);
  EXPECT(ca, TP_F32, (4), 1, 2, 3, 4);
  EXPECT(ex, TP_F32, (4), 2.718281828459045, 7.38905609893065, 20.085536923187668,
         54.598150033144236);
  /* a view keeps the storage alive */
  tp_tensor *m = NULL, *v = NULL;
  float mv[4] = {1, 2, 3, 4};
  int64_t ms[2] = {2, 2};
  CHECK(tp_tensor_new(TP_F32, 2, ms, mv, &m) == TP_OK);
  if (m) {
    CHECK(tp_transpose(m, 0, 1, &v) == TP_OK);
    tp_tensor_release(m);
    track(v);
    EXPECT(v, TP_F32, (2, 2), 1, 3, 2, 4);
  }
}

/* Graph-only (opaque) ops: an eager call is an invalid argument. */
static void test_opaque_ops(void) {
  for (int op = 0; op < TP_OP_COUNT; op++) {
    if (!(tp_op_flags((tp_op)op) & TP_OPF_OPAQUE)) continue;
    tp_tensor *x = F32((2), 1, 2);
    ERR((tp_op)op, NULL, (x), TP_ERR_INVALID_ARG, tp_op_name((tp_op)op), "graph");
  }
}

/* Run fn in a child process: a sanitizer report or a signal there is a
 * failure here, and the rest of the suite still runs. */
static void isolated_(int line, const char *what, void (*fn)(void)) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid < 0) {
    fn();
    return;
  }
  if (pid == 0) {
    failures = 0;
    fn();
    release_all();
    fflush(stdout);
    _exit(failures ? 1 : 0);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  checks++;
  if (!WIFEXITED(st) || WEXITSTATUS(st))
    FAILF_AT(line, "%s: failed in a child process (%s %d; see the report above)", what,
             WIFEXITED(st) ? "exit status" : "signal",
             WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
}

/* matmul with an empty batch dim broadcast against a missing / size-1 batch
 * dim: the result is empty, nothing may be read or written. */
static void matmul_empty_batch_body(void) {
  tp_tensor *a = EMPTY(TP_F32, (0, 8, 8)), *b = EMPTY(TP_F32, (8, 8));
  EXPECT_SHAPE(OP(TP_OP_MATMUL, NULL, a, b), TP_F32, (0, 8, 8));
  EXPECT_SHAPE(OP(TP_OP_MATMUL, NULL, b, a), TP_F32, (0, 8, 8));
  EXPECT_SHAPE(OP(TP_OP_MATMUL, NULL, EMPTY(TP_F32, (1, 8, 8)), a), TP_F32, (0, 8, 8));
  EXPECT_SHAPE(OP(TP_OP_MATMUL, NULL, EMPTY(TP_F32, (8)), a), TP_F32, (0, 8));
}
/* python slicing with a huge step: v[0::2**63-1] == [v[0]]; v[3:-1:huge] == [v[3]] */
static void slice_huge_step_body(void) {
  tp_tensor *v = I32((10), 0, 1, 2, 3, 4, 5, 6, 7, 8, 9);
  EXPECT(OPA(TP_OP_SLICE, Aslice(0, 0, INT64_MAX, INT64_MAX), v), TP_I32, (1), 0);
  EXPECT(OPA(TP_OP_SLICE, Aslice(0, 3, -1, INT64_MAX), v), TP_I32, (1), 3);
  EXPECT(OPA(TP_OP_SLICE, Aslice(0, INT64_MIN, INT64_MAX, 4), v), TP_I32, (3), 0, 4, 8);
}
static void test_slice_huge_step(void) {
  isolated_(__LINE__, "slice with a huge step", slice_huge_step_body);
}

/* An empty tensor whose other dims multiply past int64: 0 elements, no
 * overflow in its strides or size (UBSan aborts this test otherwise; the
 * fuzzer found it through an ONNX initializer). */
static void test_empty_huge_dims(void) {
  int64_t sh[3] = {0, (int64_t)1 << 50, (int64_t)1 << 50};
  tp_tensor *t = NULL, *y = NULL;
  CHECK(tp_zeros(TP_F32, 3, sh, &t) == TP_OK);
  if (!t) return;
  track(t);
  CHECK(tp_tensor_numel(t) == 0);
  CHECK(tp_tensor_is_contiguous(t));
  CHECK(tp_add(t, t, &y) == TP_OK);
  if (y) {
    track(y);
    CHECK(tp_tensor_numel(y) == 0);
  }
}

static void test_matmul_empty_batch(void) {
  isolated_(__LINE__, "matmul with an empty batch dim", matmul_empty_batch_body);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  size_t live0 = tp_live_tensors(), bytes0 = tp_live_storage_bytes();
  struct {
    const char *name;
    void (*fn)(void);
  } tests[] = {
#define T(f) {#f, f}
      T(test_add_broadcast), T(test_sub_mul_div), T(test_scalars_and_promotion),
      T(test_compare), T(test_where), T(test_unary), T(test_noncontiguous_elementwise),
      T(test_matmul), T(test_linear), T(test_conv2d), T(test_pool2d), T(test_reductions), T(test_softmax), T(test_layer_norm),
      T(test_reshape), T(test_transpose_permute), T(test_slice), T(test_concat), T(test_cast),
      T(test_errors), T(test_value_semantics), T(test_opaque_ops), T(test_matmul_empty_batch),
      T(test_slice_huge_step), T(test_empty_huge_dims),
#undef T
  };
  /* every op in ops.def is covered by a test above, or in test_ops_seq.c
   * (indexing by data and the recurrent layers: gather, gather_elements,
   * rnn, gru, lstm) or test_ops_int.c (mod, fmod, bitwise_*) or test_ops_linalg.c (det) or test_ops_sample.c (grid_sample, roi_align)
   * or tests/c/core/test_lowp.c (quantize, dequantize, bitcast, matmul_int, qmatmul) or test_qconv.c (conv2d_int, qconv2d) */
  static const char *const covered[] = {
      "add", "sub", "mul", "div", "eq", "lt", "gt", "where", "neg", "abs", "exp", "log",
      "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "gelu", "matmul", "linear", "sum", "mean",
      "max", "min", "softmax", "log_softmax", "layer_norm", "reshape", "transpose", "permute",
      "slice", "concat", "gather", "gather_elements", "gather_nd", "argtopk", "scatter_elements", "scatter_nd", "rnn", "gru", "lstm", "cast", "floor", "ceil", "round", "erf", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "conv2d", "max_pool2d", "avg_pool2d", "mod", "fmod", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "det", "grid_sample", "roi_align", "quantize", "dequantize", "bitcast", "matmul_int", "qmatmul", "conv2d_int", "qconv2d"};
  for (int op = 0; op < TP_OP_COUNT; op++) {
    int found = 0;
    for (size_t i = 0; i < sizeof covered / sizeof covered[0]; i++)
      found |= !strcmp(covered[i], tp_op_name((tp_op)op));
    if (tp_op_flags((tp_op)op) & TP_OPF_OPAQUE) found = 1; /* test_opaque_ops */
    if (!found) {
      FAILF("op '%s' (ops.def) has no hand-computed test in test_ops.c", tp_op_name((tp_op)op));
    }
  }
  for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
    int before = failures;
    tests[i].fn();
    release_all();
    printf("%s %s\n", failures == before ? "ok  " : "FAIL", tests[i].name);
  }
  if (tp_live_tensors() != live0)
    FAILF("leak: %zu live tensors at the end, %zu at the start", tp_live_tensors(), live0);
  if (tp_live_storage_bytes() != bytes0)
    FAILF("leak: %zu live storage bytes at the end, %zu at the start", tp_live_storage_bytes(),
          bytes0);
  printf("test_ops: %d checks, %d failures\n", checks, failures);
  return failures ? 1 : 0;
}
