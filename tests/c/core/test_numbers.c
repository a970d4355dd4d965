/* test_numbers.c - numbers at the API edge (docs/reliability.md, "Numbers:
 * promotion and overflow"): shapes past the core's limits, the checked
 * double -> integer conversions of src/core/num.h, integer creation
 * values, weak scalars against integer and float tensors, and the cast
 * rule, at the int32/int64/float edges. Expected values are hand-computed. */
#include "core/internal.h"
#include "core/num.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include "check.h"

#define P63 9223372036854775808.0 /* 2^63 */
#define P53 9007199254740992.0    /* 2^53 */

static void test_num_helpers(void) {
  CHECK(tp_f64_fits_i32(2147483647.0) && tp_f64_fits_i32(2147483647.9));
  CHECK(!tp_f64_fits_i32(2147483648.0)); /* INT32_MAX + 1 */
  CHECK(tp_f64_fits_i32(-2147483648.0) && tp_f64_fits_i32(-2147483648.5));
  CHECK(!tp_f64_fits_i32(-2147483649.0));
  CHECK(tp_f64_fits_i64(-P63) && !tp_f64_fits_i64(P63) && tp_f64_fits_i64(P53));
  CHECK(tp_f64_fits_i64(9223372036854774784.0)); /* the largest double below 2^63 */
  CHECK(!tp_f64_fits_i64(NAN) && !tp_f64_fits_i64(INFINITY) && !tp_f64_fits_i32(-INFINITY));
  CHECK(tp_f64_to_i64_sat(P63) == INT64_MAX && tp_f64_to_i64_sat(-P63) == INT64_MIN);
  CHECK(tp_f64_to_i64_sat(1e300) == INT64_MAX && tp_f64_to_i64_sat(-INFINITY) == INT64_MIN);
  CHECK(tp_f64_to_i64_sat(NAN) == 0 && tp_f64_to_i64_sat(-2.9) == -2);
  CHECK(tp_f64_to_i64_sat(P53) == 9007199254740992LL);
  CHECK(tp_f64_to_i32_sat(2147483648.0) == INT32_MAX);
  CHECK(tp_f64_to_i32_sat(-2147483649.0) == INT32_MIN);
  CHECK(tp_f64_to_i32_sat(-2147483648.9) == INT32_MIN);
  CHECK(tp_f64_to_i32_sat(NAN) == 0 && tp_f64_to_i32_sat(7.9) == 7);
  CHECK(tp_f64_is_int64(-P63) && !tp_f64_is_int64(0.5) && !tp_f64_is_int64(P63));
}

static void test_shapes(void) {
  tp_tensor *t = NULL;
  int64_t neg[2] = {2, -3};
  CHECK(tp_zeros(TP_F32, 2, neg, &t) == TP_ERR_INVALID_ARG);
  CHECK(strstr(tp_last_error(), "dimension 1 is negative (-3)") != NULL);
  int64_t neg31[1] = {-((int64_t)1 << 31)};
  CHECK(tp_zeros(TP_F32, 1, neg31, &t) == TP_ERR_INVALID_ARG && t == NULL);
  /* an empty tensor keeps large dims exactly (int64 all the way) */
  int64_t edge[2] = {0, ((int64_t)1 << 32) + 2};
  CHECK_OK(tp_zeros(TP_F32, 2, edge, &t));
  if (t) CHECK(tp_tensor_shape(t)[1] == ((int64_t)1 << 32) + 2 && tp_tensor_numel(t) == 0);
  tp_tensor_release(t);
  t = NULL;
  int64_t prod[2] = {(int64_t)1 << 21, (int64_t)1 << 20}; /* 2^41 elements */
  CHECK(tp_zeros(TP_F32, 2, prod, &t) != TP_OK && t == NULL);
  CHECK(strstr(tp_last_error(), "dimension 1 (1048576) takes the shape past 2^40") != NULL);
  /* reshape's shape: huge or negative dims are errors, no overflow on the way */
  int64_t six[1] = {6};
  tp_tensor *x = NULL, *y = NULL;
  CHECK_OK(tp_zeros(TP_F32, 1, six, &x));
  int64_t r1[2] = {INT64_MAX, 2}, r2[2] = {-2, 3}, r3[3] = {-1, INT64_MAX, 0};
  int64_t r4[2] = {((int64_t)1 << 32) + 2, 3}, r5[3] = {INT64_MIN, 1, 1};
  CHECK(tp_reshape(x, 2, r1, &y) == TP_ERR_INVALID_ARG && !y);
  CHECK(tp_reshape(x, 2, r2, &y) == TP_ERR_INVALID_ARG && !y);
  CHECK(tp_reshape(x, 3, r3, &y) != TP_OK && !y);
  CHECK(tp_reshape(x, 2, r4, &y) == TP_ERR_INVALID_ARG && !y);
  CHECK(strstr(tp_last_error(), "4294967298") != NULL);
  CHECK(tp_reshape(x, 3, r5, &y) == TP_ERR_INVALID_ARG && !y);
  tp_tensor_release(x);
  int64_t imax[1] = {INT64_MAX};
  CHECK(tp_randn(1, imax, 1, &t) != TP_OK && t == NULL);
  CHECK(strstr(tp_last_error(), "dimension 0 (9223372036854775807)") != NULL);
}

static void check_full_refused(tp_dtype d, double v) {
  tp_tensor *t = NULL;
  int64_t s[1] = {2};
  CHECKF(tp_full(d, 1, s, v, &t) == TP_ERR_INVALID_ARG && t == NULL, "full(%s, %.17g) accepted",
         tp_dtype_name(d), v);
  CHECKF(strstr(tp_last_error(), "cannot be converted to") && strstr(tp_last_error(), "without overflow"), "full(%.17g): %s", v,
         tp_last_error());
}

static void test_full_values(void) {
  int64_t s[1] = {2};
  tp_tensor *t = NULL;
  check_full_refused(TP_I32, 2147483648.0);
  check_full_refused(TP_I32, -2147483649.0);
  check_full_refused(TP_I32, NAN);
  check_full_refused(TP_I64, P63);
  check_full_refused(TP_I64, 1e30);
  check_full_refused(TP_I64, -INFINITY);
  CHECK(strstr(tp_last_error(), "full: value -inf cannot be converted to int64") != NULL);
  check_full_refused(TP_I64, 1e19);
  CHECK(strstr(tp_last_error(), "full: value 10000000000000000000 cannot") != NULL);
  check_full_refused(TP_I32, 2147483648.5);
  CHECK(strstr(tp_last_error(), "full: value 2147483648.5 cannot be converted to int32") != NULL);
  CHECK_OK(tp_full(TP_I32, 1, s, 2147483647.0, &t));
  int32_t i32[2] = {0, 0};
  if (t) CHECK_OK(tp_tensor_read(t, i32, sizeof i32));
  CHECK(i32[0] == INT32_MAX && i32[1] == INT32_MAX);
  tp_tensor_release(t);
  CHECK_OK(tp_full(TP_I64, 1, s, -P63, &t));
  int64_t i64[2] = {0, 0};
  if (t) CHECK_OK(tp_tensor_read(t, i64, sizeof i64));
  CHECK(i64[0] == INT64_MIN);
  tp_tensor_release(t);
  CHECK_OK(tp_full(TP_I32, 1, s, -7.9, &t)); /* truncation toward zero */
  if (t) CHECK_OK(tp_tensor_read(t, i32, sizeof i32));
  CHECK(i32[0] == -7);
  tp_tensor_release(t);
  CHECK_OK(tp_full(TP_F32, 1, s, 1e300, &t)); /* float32 rounds to +Inf */
  float f[2] = {0, 0};
  if (t) CHECK_OK(tp_tensor_read(t, f, sizeof f));
  CHECK(isinf(f[0]) && f[0] > 0);
  tp_tensor_release(t);
  t = NULL;
  CHECK(tp_arange(2147483640.0, 2147483650.0, 1, TP_I32, &t) == TP_ERR_INVALID_ARG && !t);
  CHECK_OK(tp_arange(2147483640.0, 2147483648.0, 1, TP_I32, &t));
  if (t) CHECK(tp_tensor_numel(t) == 8);
  tp_tensor_release(t);
}

/* x (dtype d, values v[0..1]) op weak scalar s: the result dtype and
 * values, or an error. */
static tp_tensor *bin_scalar(tp_op op, tp_dtype d, const double *v, double s, int is_int) {
  int64_t sh[1] = {2};
  tp_tensor *x = NULL, *k = NULL, *y = NULL;
  union { float f[2]; int32_t i[2]; int64_t l[2]; } u;
  for (int i = 0; i < 2; i++) {
    if (d == TP_F32) u.f[i] = (float)v[i];
    else if (d == TP_I32) u.i[i] = (int32_t)v[i];
    else u.l[i] = (int64_t)v[i];
  }
  if (tp_tensor_new(d, 1, sh, &u, &x) || tp_scalar(s, is_int, &k)) goto done;
  tp_tensor *in[2] = {x, k};
  (void)tp_op_call(op, 2, in, NULL, &y);
done:
  tp_tensor_release(x);
  tp_tensor_release(k);
  return y;
}

static void test_weak_scalars(void) {
  const double one_two[2] = {1, 2};
  /* defect 2: a whole number past int64 with a float tensor is a float: Inf */
  tp_tensor *y = bin_scalar(TP_OP_MUL, TP_F32, one_two, 1e300, 1);
  float f[2] = {0, 0};
  CHECK(y && tp_tensor_dtype(y) == TP_F32);
  if (y) CHECK_OK(tp_tensor_read(y, f, sizeof f));
  CHECK(isinf(f[0]) && f[0] > 0 && isinf(f[1]));
  tp_tensor_release(y);
  y = bin_scalar(TP_OP_ADD, TP_F32, one_two, 1e19, 1);
  if (y) CHECK_OK(tp_tensor_read(y, f, sizeof f));
  CHECK(y && f[0] == (float)1e19); /* not 9.22e18 */
  tp_tensor_release(y);
  /* defect 3: an int scalar that does not fit the int tensor's dtype */
  y = bin_scalar(TP_OP_ADD, TP_I32, one_two, 1e19, 1);
  CHECK(y == NULL && strstr(tp_last_error(), "does not fit int32") != NULL);
  y = bin_scalar(TP_OP_ADD, TP_I32, one_two, 2147483648.0, 1); /* INT32_MAX + 1 */
  CHECK(y == NULL && strstr(tp_last_error(), "scalar 2147483648 does not fit int32") != NULL);
  y = bin_scalar(TP_OP_ADD, TP_I64, one_two, P63, 1);
  CHECK(y == NULL && strstr(tp_last_error(), "scalar 9223372036854775808 does not fit int64") != NULL);
  y = bin_scalar(TP_OP_EQ, TP_I32, one_two, -2147483649.0, 1);
  CHECK(y == NULL && strstr(tp_last_error(), "does not fit int32") != NULL);
  /* at the edges it fits; int32 arithmetic wraps like PyTorch's (two's complement) */
  const double max_min[2] = {2147483647.0, -2147483648.0};
  y = bin_scalar(TP_OP_ADD, TP_I32, max_min, 2147483647.0, 1);
  int32_t i32[2] = {0, 0};
  CHECK(y && tp_tensor_dtype(y) == TP_I32);
  if (y) CHECK_OK(tp_tensor_read(y, i32, sizeof i32));
  CHECK(i32[0] == -2 && i32[1] == -1);
  tp_tensor_release(y);
  y = bin_scalar(TP_OP_ADD, TP_I64, one_two, -P63, 1);
  int64_t i64[2] = {0, 0};
  if (y) CHECK_OK(tp_tensor_read(y, i64, sizeof i64));
  CHECK(y && i64[0] == INT64_MIN + 1 && i64[1] == INT64_MIN + 2);
  tp_tensor_release(y);
  y = bin_scalar(TP_OP_ADD, TP_I64, one_two, P53, 1); /* 2^53 + 1 exactly in int64 */
  if (y) CHECK_OK(tp_tensor_read(y, i64, sizeof i64));
  CHECK(y && i64[0] == 9007199254740993LL);
  tp_tensor_release(y);
  /* a float scalar with an int tensor promotes to float32 */
  y = bin_scalar(TP_OP_ADD, TP_I32, one_two, 0.5, 0);
  CHECK(y && tp_tensor_dtype(y) == TP_F32);
  if (y) CHECK_OK(tp_tensor_read(y, f, sizeof f));
  CHECK(f[0] == 1.5f && f[1] == 2.5f);
  tp_tensor_release(y);
  /* is_int with a value that is not whole */
  tp_tensor *k = NULL;
  CHECK(tp_scalar(0.5, 1, &k) == TP_ERR_INVALID_ARG && k == NULL);
  CHECK(tp_scalar(NAN, 1, &k) == TP_ERR_INVALID_ARG && k == NULL);
}

/* cast: float -> int saturates, NaN -> 0; int64 -> int32 wraps */
static void test_cast(void) {
  int64_t sh[1] = {6};
  float in[6] = {3e9f, -3e9f, NAN, INFINITY, -7.9f, 9.3e18f};
  tp_tensor *x = NULL, *y = NULL;
  CHECK_OK(tp_tensor_new(TP_F32, 1, sh, in, &x));
  tp_attrs a;
  tp_attrs_init(&a);
  a.dtype = TP_I32;
  CHECK_OK(tp_op_call(TP_OP_CAST, 1, &x, &a, &y));
  int32_t i32[6] = {0};
  if (y) CHECK_OK(tp_tensor_read(y, i32, sizeof i32));
  CHECK(i32[0] == INT32_MAX && i32[1] == INT32_MIN && i32[2] == 0 && i32[3] == INT32_MAX &&
        i32[4] == -7 && i32[5] == INT32_MAX);
  tp_tensor_release(y);
  a.dtype = TP_I64;
  CHECK_OK(tp_op_call(TP_OP_CAST, 1, &x, &a, &y));
  int64_t i64[6] = {0};
  if (y) CHECK_OK(tp_tensor_read(y, i64, sizeof i64));
  CHECK(i64[0] == 3000000000LL && i64[2] == 0 && i64[3] == INT64_MAX && i64[5] == INT64_MAX);
  tp_tensor_release(y);
  tp_tensor_release(x);
  int64_t l[2] = {((int64_t)1 << 32) + 5, -((int64_t)1 << 31) - 1};
  int64_t sh2[1] = {2};
  CHECK_OK(tp_tensor_new(TP_I64, 1, sh2, l, &x));
  a.dtype = TP_I32;
  CHECK_OK(tp_op_call(TP_OP_CAST, 1, &x, &a, &y));
  if (y) CHECK_OK(tp_tensor_read(y, i32, 2 * sizeof(int32_t)));
  CHECK(i32[0] == 5 && i32[1] == INT32_MAX);
  tp_tensor_release(y);
  tp_tensor_release(x);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  test_num_helpers();
  test_shapes();
  test_full_values();
  test_weak_scalars();
  test_cast();
  if (tp_live_tensors() != 0) {
    fprintf(stderr, "leak: %zu live tensors at exit\n", tp_live_tensors());
    failures++;
  }
  if (failures) {
    fprintf(stderr, "test_numbers: %d failure(s)\n", failures);
    return 1;
  }
  printf("test_numbers: ok (%d checks)\n", checks);
  return 0;
}
