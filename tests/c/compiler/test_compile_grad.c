/* test_compile_grad.c - compile() with tensors that require grad
 * (compiled training, src/compiler/aot.c): the compiled call's output
 * carries a node whose backward runs the compiled backward graph, and the
 * gradients equal hand-computed values: inputs that require grad, a
 * parameter the function closes over (an input of both graphs), a
 * parameter that starts requiring grad after a forward-only entry exists
 * (a recompile, the requires_grad guard named), no_grad calls (the
 * forward-only entry), explain()'s saved / recomputed lists; a function
 * with two outputs that require grad runs eagerly (fullgraph: an error
 * naming why); backward twice without retain_graph is an error. */
#include "check.h"
#include <stdlib.h>
#include <string.h>

static tp_tensor *W; /* the closed-over parameter */

/* y = sum((x * W)^2) -> dy/dx = 2 x W^2, dy/dW = 2 W x^2 */
static tp_status fn(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_tensor *p = NULL, *q = NULL;
  tp_status s = tp_mul(in[0], W, &p);
  if (!s) s = tp_mul(p, p, &q);
  if (!s) s = tp_sum(q, 0, NULL, 0, &outs[0]);
  tp_tensor_release(p), tp_tensor_release(q);
  *nout = s ? 0 : 1;
  return s;
}

/* two outputs that require grad: not compiled for training (eager) */
static tp_status fn2(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_tensor *p = NULL;
  tp_status s = tp_mul(in[0], W, &p);
  if (!s) s = tp_sum(p, 0, NULL, 0, &outs[0]);
  if (!s) s = tp_mul(p, p, &outs[1]);
  tp_tensor_release(p);
  *nout = s ? 0 : 2;
  return s;
}

static tp_tensor *f3(float a, float b, float c) {
  tp_tensor *t = NULL;
  tp_tensor_new(TP_F32, 1, (int64_t[]){3}, (float[]){a, b, c}, &t);
  return t;
}
static void expect3(int line, tp_tensor *t, float a, float b, float c) {
  float g[3] = {0};
  checks++;
  if (!t || tp_tensor_read(t, g, sizeof g)) {
    FAILF_AT(line, "no gradient (%s)", tp_last_error());
    return;
  }
  if (g[0] != a || g[1] != b || g[2] != c) FAILF_AT(line, "gradient %g %g %g, expected %g %g %g", g[0], g[1], g[2], a, b, c);
}
#define EXPECT3(t, a, b, c) expect3(__LINE__, t, a, b, c)

static tp_tensor *call(tp_compiled *g, tp_tensor *x) {
  tp_tensor *y = NULL;
  int n = 0;
  CHECK_OK(tp_compiled_call(g, 1, &x, 1, &y, &n));
  return y;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  size_t live0 = tp_live_tensors();
  W = f3(1, 2, 3);
  tp_tensor *x = f3(1, 1, 2);
  tp_callable c = {fn, NULL};
  tp_compiled *g = NULL;
  CHECK_OK(tp_compile(&c, NULL, &g));
  /* a compiled entry first, nothing requires grad */
  tp_tensor *y = call(g, x);
  CHECK(y && !tp_tensor_requires_grad(y));
  tp_tensor_release(y);
  CHECK(tp_compiled_num_entries(g) == 1);
  /* the input requires grad: eager, gradients as eager autograd gives them */
  tp_tensor_set_requires_grad(x, 1);
  for (int it = 0; it < 2; it++) {
    y = call(g, x);
    CHECK(y && tp_tensor_requires_grad(y));
    CHECK_OK(tp_backward(y, NULL));
    EXPECT3(tp_tensor_grad(x), 2, 8, 36); /* 2 x W^2 */
    tp_tensor_set_grad(x, NULL);
    tp_tensor_release(y);
  }
  tp_tensor_set_requires_grad(x, 0);
  /* the closed-over parameter requires grad after the entry was compiled */
  tp_tensor_set_requires_grad(W, 1);
  y = call(g, x);
  CHECK(y && tp_tensor_requires_grad(y));
  CHECK_OK(tp_backward(y, NULL));
  EXPECT3(tp_tensor_grad(W), 2, 4, 24); /* 2 W x^2 */
  tp_tensor_set_grad(W, NULL);
  tp_tensor_release(y);
  /* no_grad: the compiled entry runs, nothing is recorded */
  int prev = tp_set_grad_enabled(0);
  y = call(g, x);
  CHECK(y && !tp_tensor_requires_grad(y));
  tp_tensor_release(y);
  tp_set_grad_enabled(prev);
  char *ex = NULL;
  CHECK_OK(tp_compiled_explain(g, &ex));
  CHECKF(ex && strstr(ex, "\"eager_for_autograd\": 0"), "explain: %s", ex ? ex : "(null)");
  CHECKF(ex && strstr(ex, "\"recompile_reasons\": [\"inputs[0].requires_grad == False\", \"inputs[0].requires_grad == True\"]"),
         "explain names the requires_grad guards: %s", ex ? ex : "(null)");
  /* x * W is pointwise: recomputed in the backward from the saved input */
  CHECKF(ex && strstr(ex, "\"saved\": [\"%x0 (input)\"], \"recomputed\": [\"%0 (mul)\"]"), "explain: %s", ex ? ex : "(null)");
  CHECK(tp_compiled_num_entries(g) == 3);
  /* both graphs' text: the backward reads (saved x, grad_out) */
  CHECKF(ex && strstr(ex, "\"backward_graph\": \"tpgraph v1\\n%saved0 = placeholder : f32[3]\\n%grad_out = placeholder : f32[]") &&
         strstr(ex, "\"forward_graph\": \"tpgraph v1\\n%x0 = placeholder : f32[3]"), "explain: %s", ex ? ex : "(null)");
  tp_free_buffer(ex);
  tp_compiled_free(g);
  /* a fresh wrapper first traced with the parameter requiring grad: a graph break, eager */
  CHECK_OK(tp_compile(&c, NULL, &g));
  for (int it = 0; it < 2; it++) {
    y = call(g, x);
    CHECK(y && tp_tensor_requires_grad(y));
    CHECK_OK(tp_backward(y, NULL));
    EXPECT3(tp_tensor_grad(W), 2, 4, 24);
    tp_tensor_set_grad(W, NULL);
    tp_tensor_release(y);
  }
  CHECK_OK(tp_compiled_explain(g, &ex));
  CHECKF(ex && strstr(ex, "\"parameters\": 1, \"gradients\": 1"), "explain shows the training graphs: %s", ex ? ex : "(null)");
  tp_free_buffer(ex);
  tp_compiled_free(g);
  /* backward twice through a compiled call's saved tensors */
  CHECK_OK(tp_compile(&c, NULL, &g));
  y = call(g, x);
  CHECK_OK(tp_backward(y, NULL));
  tp_status s = tp_backward(y, NULL);
  CHECKF(s == TP_ERR_RUNTIME && strstr(tp_last_error(), "backward through the graph a second time"), "%s: %s",
         tp_status_name(s), tp_last_error());
  tp_tensor_set_grad(W, NULL);
  tp_tensor_release(y);
  y = call(g, x); /* still usable */
  CHECK_OK(tp_backward_ex(y, NULL, 1));
  CHECK_OK(tp_backward(y, NULL)); /* retain_graph: twice is fine, accumulated */
  EXPECT3(tp_tensor_grad(W), 4, 8, 48);
  tp_tensor_set_grad(W, NULL);
  tp_tensor_release(y);
  /* no room for the output: an error naming it, then still usable */
  {
    int n0 = -1;
    tp_status s0 = tp_compiled_call(g, 1, &x, 0, NULL, &n0);
    CHECKF(s0 == TP_ERR_INVALID_ARG && strstr(tp_last_error(), "do not fit") && n0 == 0, "%s: %s", tp_status_name(s0),
           tp_last_error());
  }
  /* a saved parameter written in place before backward: eager's error */
  y = call(g, x);
  prev = tp_set_grad_enabled(0);
  CHECK_OK(tp_tensor_assign(W, W));
  tp_set_grad_enabled(prev);
  s = tp_backward(y, NULL);
  CHECKF(s == TP_ERR_RUNTIME && strstr(tp_last_error(), "modified by an inplace operation"), "%s: %s",
         tp_status_name(s), tp_last_error());
  tp_tensor_release(y);
  y = call(g, x); /* the next call saves the new version */
  CHECK_OK(tp_backward(y, NULL));
  EXPECT3(tp_tensor_grad(W), 2, 4, 24);
  tp_tensor_set_grad(W, NULL);
  tp_tensor_release(y);
  tp_compiled_free(g);
  /* the wrapper freed (and the caches reset) before backward: the node keeps its graphs */
  CHECK_OK(tp_compile(&c, NULL, &g));
  y = call(g, x);
  tp_compiled_free(g);
  tp_reset();
  CHECK_OK(tp_backward(y, NULL));
  EXPECT3(tp_tensor_grad(W), 2, 4, 24);
  tp_tensor_set_grad(W, NULL);
  tp_tensor_release(y);
  /* two outputs that require grad: eager, with the reason */
  tp_callable c2 = {fn2, NULL};
  CHECK_OK(tp_compile(&c2, NULL, &g));
  tp_tensor *ys[2] = {0};
  int n = 0;
  CHECK_OK(tp_compiled_call(g, 1, &x, 2, ys, &n));
  CHECK(n == 2 && tp_tensor_requires_grad(ys[0]));
  if (n == 2) {
    CHECK_OK(tp_backward(ys[0], NULL));
    EXPECT3(tp_tensor_grad(W), 1, 1, 2); /* d sum(x W) / dW = x */
  }
  tp_tensor_set_grad(W, NULL);
  tp_tensor_release(ys[0]), tp_tensor_release(ys[1]);
  CHECK_OK(tp_compiled_explain(g, &ex));
  CHECKF(ex && strstr(ex, "\"eager_for_autograd\": 1") && strstr(ex, "training: more than one output requires grad"),
         "explain: %s", ex ? ex : "(null)");
  tp_free_buffer(ex);
  tp_compiled_free(g);
  /* fullgraph: an error naming why */
  tp_compile_options o;
  tp_compile_options_init(&o);
  o.fullgraph = 1;
  CHECK_OK(tp_compile(&c2, &o, &g));
  ys[0] = ys[1] = NULL;
  s = tp_compiled_call(g, 1, &x, 2, ys, &n);
  checks++;
  if (s != TP_ERR_UNSUPPORTED || !strstr(tp_last_error(), "more than one output requires grad"))
    FAILF("fullgraph with two outputs that require grad: %s (%s)", tp_status_name(s), tp_last_error());
  tp_tensor_release(ys[0]), tp_tensor_release(ys[1]);
  tp_compiled_free(g);
  tp_tensor_release(x);
  tp_tensor_release(W);
  tp_reset();
  if (tp_live_tensors() != live0) FAILF("leak: %zu live tensors at the end, %zu at the start", tp_live_tensors(), live0);
  printf("test_compile_grad: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
