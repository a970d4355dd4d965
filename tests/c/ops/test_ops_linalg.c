/* test_ops_linalg.c - hand-computed tests of det: 1x1, 2x2, 3x3 (one
 * needing a row swap), batched [3, 2, 2] (ONNX's test_det_nd shape),
 * singular, n = 0 (1), a transposed (non-contiguous) input, and the
 * errors (not square, not float32), eager and the reference.
 * test_ops.c checks that every op of ops.def has a test somewhere. */
#include "op_expect.h"

static tp_tensor *ref_(int line, tp_op op, int nin, tp_tensor *const *in) {
  tp_tensor *y = NULL;
  if (tp_op_exec_ref(op, nin, in, NULL, &y) != TP_OK) {
    FAILF_AT(line, "reference %s failed: %s", tp_op_name(op), tp_last_error());
    return NULL;
  }
  return track(y);
}
#define REF(op, ...) ref_(__LINE__, op, NARGS_T(__VA_ARGS__), (tp_tensor *[]){__VA_ARGS__})
#define BOTH(x, ...)                                    \
  do {                                                  \
    EXPECT(OP(TP_OP_DET, NULL, x), TP_F32, __VA_ARGS__); \
    EXPECT(REF(TP_OP_DET, x), TP_F32, __VA_ARGS__);      \
  } while (0)

static void test_det(void) {
  BOTH(F32((1, 1), -2.5), (), -2.5);
  /* 1*4 - 2*3 = -2 */
  BOTH(F32((2, 2), 1, 2, 3, 4), (), -2);
  /* [[0,1,2],[3,4,5],[6,7,9]]: 0*(36-35) - 1*(27-30) + 2*(21-24) = 3 - 6 = -3 (first pivot 0: a swap) */
  BOTH(F32((3, 3), 0, 1, 2, 3, 4, 5, 6, 7, 9), (), -3);
  /* batched: 2*3-0 = 6; 1*1-1*1 = 0; 0*0-1*1 = -1 */
  BOTH(F32((3, 2, 2), 2, 0, 0, 3, 1, 1, 1, 1, 0, 1, 1, 0), (3), 6, 0, -1);
  /* singular 3x3 (row 3 = row 1 + row 2) */
  BOTH(F32((3, 3), 1, 2, 3, 4, 5, 6, 5, 7, 9), (), 0);
  /* n = 0: the empty product */
  BOTH(EMPTY(TP_F32, (2, 0, 0)), (2), 1, 1);
  /* [[2,1],[7,4]] transposed: det 2*4 - 1*7 = 1 either way */
  tp_attrs tr = A0();
  tr.dim = 0, tr.dim1 = 1;
  tp_tensor *t = OPA(TP_OP_TRANSPOSE, tr, F32((2, 2), 2, 1, 7, 4));
  BOTH(t, (), 1);
  ERR(TP_OP_DET, NULL, (F32((2, 3), 1, 2, 3, 4, 5, 6)), TP_ERR_INVALID_ARG, "det", "square", "[2,3]");
  ERR(TP_OP_DET, NULL, (F32((3), 1, 2, 3)), TP_ERR_INVALID_ARG, "det", "[..., n, n]");
  ERR(TP_OP_DET, NULL, (I32((1, 1), 1)), TP_ERR_INVALID_ARG, "det", "int32", "float32");
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  size_t live0 = tp_live_tensors();
  static const op_test tests[] = {{"test_det", test_det}};
  run_op_tests(tests, sizeof tests / sizeof tests[0]);
  if (tp_live_tensors() != live0) FAILF("leak: %zu live tensors at the end, %zu at the start", tp_live_tensors(), live0);
  printf("test_ops_linalg: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
