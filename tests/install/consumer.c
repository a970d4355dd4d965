/* consumer.c - a program outside the tree, built against an installed
 * tensorplay (tests/install/run.sh): only the public header, only the
 * public API. Makes two tensors, adds them, compiles f(x) = relu(x*x - 4)
 * with the default backend and checks every number. Prints "ok" and exits
 * 0 when all match. */
#include <stdio.h>

#include "tensorplay.h"

static int failures;
#define CHECK(c)                                                                            \
  do {                                                                                      \
    if (!(c)) {                                                                             \
      printf("FAIL %s:%d: %s (last error: %s)\n", __FILE__, __LINE__, #c, tp_last_error()); \
      failures++;                                                                           \
    }                                                                                       \
  } while (0)

/* f(x) = relu(x * x - 4) */
static tp_status square_minus_four(void *ud, int nin, tp_tensor *const *in, int max_out,
                                   tp_tensor **outs, int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_tensor *sq = NULL, *four = NULL, *d = NULL;
  tp_status s = tp_mul(in[0], in[0], &sq);
  if (!s) s = tp_scalar(4, 0, &four);
  if (!s) s = tp_sub(sq, four, &d);
  if (!s) s = tp_relu(d, &outs[0]);
  tp_tensor_release(sq);
  tp_tensor_release(four);
  tp_tensor_release(d);
  *nout = s ? 0 : 1;
  return s;
}

int main(void) {
  const int64_t shape[1] = {4};
  const float av[4] = {1, 2, 3, 4}, bv[4] = {10, 20, 30, 40};
  tp_tensor *a = NULL, *b = NULL, *sum = NULL, *y = NULL;
  CHECK(tp_tensor_new(TP_F32, 1, shape, av, &a) == TP_OK);
  CHECK(tp_tensor_new(TP_F32, 1, shape, bv, &b) == TP_OK);

  /* an eager op */
  float out[4] = {0};
  CHECK(tp_add(a, b, &sum) == TP_OK);
  CHECK(sum && tp_tensor_read(sum, out, sizeof out) == TP_OK);
  for (int i = 0; i < 4; i++) CHECK(out[i] == av[i] + bv[i]);

  /* a compiled function, called twice (capture, then the cached graph) */
  tp_callable fn = {square_minus_four, NULL};
  tp_compiled *g = NULL;
  CHECK(tp_compile(&fn, NULL, &g) == TP_OK);
  const float want[4] = {0, 0, 5, 12};
  for (int call = 0; g && call < 2; call++) {
    int nout = 0;
    CHECK(tp_compiled_call(g, 1, &a, 1, &y, &nout) == TP_OK && nout == 1);
    float got[4] = {-1, -1, -1, -1};
    CHECK(y && tp_tensor_read(y, got, sizeof got) == TP_OK);
    for (int i = 0; i < 4; i++) CHECK(got[i] == want[i]);
    tp_tensor_release(y);
    y = NULL;
  }
  tp_compiled_free(g);
  tp_tensor_release(a);
  tp_tensor_release(b);
  tp_tensor_release(sum);
  CHECK(tp_live_tensors() == 0);
  printf("%s\n", failures ? "FAILED" : "ok");
  return failures != 0;
}
