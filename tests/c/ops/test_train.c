/* test_train.c - a training run in C, the path a C user takes: an MLP
 * 2-32-3 (tp_linear, tp_relu) on a fixed 3-class task (points of the unit
 * disc by angle sector, the generator of tests/js/train.test.js), mean
 * cross-entropy, tp_backward, one fused tp_adam_step per parameter, 150
 * steps. The parameters start as tp.nn.mlp([2, 32, 3], {seed: 7}) does in
 * JS (tp_rand, the same numbers in every build), so the run is the JS
 * test's: it must reach the loss stated there (< 0.15) and > 95% accuracy,
 * and the loss the Wasm core reaches (0.036986, within 5e-4), natively
 * and under the sanitizers, with nothing leaked. */
#include "op_expect.h"

enum { N = 192, IN = 2, HID = 32, OUT = 3, STEPS = 150 };

static tp_tensor *uniform_init(int nd, const int64_t *shape, uint64_t seed, double bound) {
  tp_tensor *u = NULL, *a = NULL, *y = NULL;
  CHECK_OK(tp_rand(nd, shape, seed, &u));
  CHECK_OK(tp_mul(u, wflt(2 * bound), &a));
  CHECK_OK(tp_sub(a, wflt(bound), &y));
  tp_tensor_release(u), tp_tensor_release(a);
  CHECK_OK(tp_tensor_set_requires_grad(y, 1));
  return track(y);
}

static void test_mlp(void) {
  /* the data: the LCG of train.test.js's sectors() */
  static float xs[N * IN];
  static int32_t ys[N];
  double s = 12345;
  for (int i = 0; i < N; i++) {
    s = fmod(s * 1103515245 + 12345, 2147483648.0);
    double th = s / 2147483648.0 * 2 * M_PI;
    s = fmod(s * 1103515245 + 12345, 2147483648.0);
    double rad = 0.2 + 0.8 * (s / 2147483648.0);
    xs[2 * i] = (float)(rad * cos(th)), xs[2 * i + 1] = (float)(rad * sin(th));
    ys[i] = (int32_t)floor(3 * th / (2 * M_PI));
  }
  tp_tensor *x = mk_(__LINE__, TP_F32, 2, (int64_t[]){N, IN}, xs), *y = mk_(__LINE__, TP_I32, 1, (int64_t[]){N}, ys);
  /* tp.nn.mlp([2, 32, 3], {seed: 7}): Linear seeds 7 and 9, biases seed + 0x9e3779b9 */
  const uint64_t golden = 0x9e3779b9u;
  tp_tensor *p[4] = {
      uniform_init(2, (int64_t[]){HID, IN}, 7, 1 / sqrt(IN)), uniform_init(1, (int64_t[]){HID}, 7 + golden, 1 / sqrt(IN)),
      uniform_init(2, (int64_t[]){OUT, HID}, 9, 1 / sqrt(HID)), uniform_init(1, (int64_t[]){OUT}, 9 + golden, 1 / sqrt(HID)),
  };
  tp_tensor *m[4], *v[4];
  for (int i = 0; i < 4; i++) {
    CHECK_OK(tp_zeros(TP_F32, p[i]->ndim, p[i]->shape, &m[i]));
    CHECK_OK(tp_zeros(TP_F32, p[i]->ndim, p[i]->shape, &v[i]));
    track(m[i]), track(v[i]);
  }
  double first = 0, last = 0;
  for (int step = 1; step <= STEPS && !failures; step++) {
    tp_tensor *h = NULL, *r = NULL, *o = NULL, *loss = NULL;
    CHECK_OK(tp_linear(x, p[0], p[1], &h));
    CHECK_OK(tp_relu(h, &r));
    CHECK_OK(tp_linear(r, p[2], p[3], &o));
    CHECK_OK(tp_cross_entropy(o, y, -100, 0, 1, &loss));
    if (loss) {
      CHECK_OK(tp_tensor_item(loss, &last));
      CHECK_OK(tp_backward(loss, NULL));
    }
    if (step == 1) first = last;
    for (int i = 0; i < 4; i++) {
      CHECK_OK(tp_adam_step(p[i], tp_tensor_grad(p[i]), m[i], v[i], step, 0.02, 0.9, 0.999, 1e-8, 0, 0));
      CHECK_OK(tp_tensor_set_grad(p[i], NULL));
    }
    tp_tensor_release(h), tp_tensor_release(r), tp_tensor_release(o), tp_tensor_release(loss);
  }
  /* accuracy without recording */
  int prev = tp_set_grad_enabled(0), right = 0;
  tp_tensor *h = NULL, *r = NULL, *o = NULL;
  CHECK_OK(tp_linear(x, p[0], p[1], &h));
  CHECK_OK(tp_relu(h, &r));
  CHECK_OK(tp_linear(r, p[2], p[3], &o));
  CHECK(!tp_tensor_requires_grad(o));
  float logits[N * OUT];
  CHECK_OK(tp_tensor_read(o, logits, sizeof logits));
  for (int i = 0; i < N; i++) {
    int best = 0;
    for (int c = 1; c < OUT; c++)
      if (logits[i * OUT + c] > logits[i * OUT + best]) best = c;
    right += best == ys[i];
  }
  tp_tensor_release(h), tp_tensor_release(r), tp_tensor_release(o);
  tp_set_grad_enabled(prev);
  printf("mlp: loss %.6f -> %.6f after %d steps, accuracy %.4f\n", first, last, STEPS, (double)right / N);
  CHECKF(first > 0.9, "the first loss %g is near ln 3", first);
  CHECKF(last < 0.15, "loss after %d steps: %g", STEPS, last);
  CHECKF(right > 0.95 * N, "accuracy %d / %d", right, N);
  /* the same run as tests/js/train.test.js in the Wasm core (1.108086 -> 0.036986) */
  CHECKF(fabs(first - 1.108086) < 1e-5 && fabs(last - 0.036986) < 5e-4,
         "native differs from the Wasm run: %.6f -> %.6f (Wasm 1.108086 -> 0.036986)", first, last);
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  size_t live0 = tp_live_tensors();
  static const op_test tests[] = {{"test_mlp", test_mlp}};
  run_op_tests(tests, sizeof tests / sizeof tests[0]);
  if (tp_live_tensors() != live0) FAILF("leak: %zu live tensors at the end, %zu at the start", tp_live_tensors(), live0);
  printf("test_train: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
