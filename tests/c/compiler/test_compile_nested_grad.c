/* test_compile_nested_grad.c - compiled training through a nested compile
 * region (src/compiler/aot.c, docs/training.md): the region is
 * differentiated on its own, its forward graph goes to its fw_compiler and
 * its backward graph to its bw_compiler (tp_nested_compile_region_ex),
 * exactly once per region and input key per specialization, with graphs
 * whose text is checked; the compiled function's loss and gradients equal
 * eager's (the same function run without compile); without options the
 * compiled function's backend compiles both; compilers that fail, return no
 * runner, or whose runner returns the wrong tensors are errors naming the
 * problem, and the runtime stays usable. */
#include "check.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ERR(e, st, msg)                                                                          \
  CHECKF((e) == (st) && strstr(tp_last_error(), (msg)) != NULL, "status %d, error: %s", (int)(e), \
         tp_last_error())

static tp_tensor *W; /* a parameter the region reads */

/* the region: tanh(x * W) + x */
static tp_status region_fn(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_tensor *p = NULL, *q = NULL;
  tp_status s = tp_mul(in[0], W, &p);
  if (!s) s = tp_op_call(TP_OP_TANH, 1, &p, NULL, &q);
  if (!s) s = tp_add(q, in[0], &outs[0]);
  tp_tensor_release(p), tp_tensor_release(q);
  *nout = s ? 0 : 1;
  return s;
}
static tp_callable region = {region_fn, NULL};

/* the compiled function: sum(region(x * 2) * region(x * 2) * x) (the same
 * key twice); ud: another region record, else `region` */
static tp_status fn(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)nin, (void)max_out;
  const tp_callable *rg = ud ? ud : &region;
  tp_tensor *x2 = NULL, *a = NULL, *b = NULL, *ab = NULL, *abx = NULL, *two = NULL;
  int n = 0;
  tp_status s = tp_scalar(2.0, 0, &two);
  if (!s) s = tp_mul(in[0], two, &x2);
  if (!s) s = tp_call(rg, 1, &x2, 1, &a, &n);
  if (!s) s = tp_call(rg, 1, &x2, 1, &b, &n);
  if (!s) s = tp_mul(a, b, &ab);
  if (!s) s = tp_mul(ab, in[0], &abx);
  if (!s) s = tp_sum(abx, 0, NULL, 0, &outs[0]);
  tp_tensor *t[] = {x2, a, b, ab, abx, two};
  for (int i = 0; i < 6; i++) tp_tensor_release(t[i]);
  *nout = s ? 0 : 1;
  return s;
}

/* a region with two outputs requiring grad: x * W and tanh(x) */
static tp_status region2_fn(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_status s = tp_mul(in[0], W, &outs[0]);
  if (!s) s = tp_op_call(TP_OP_TANH, 1, (tp_tensor *const *)in, NULL, &outs[1]);
  if (s) tp_tensor_release(outs[0]);
  *nout = s ? 0 : 2;
  return s;
}
static tp_callable two_out = {region2_fn, NULL};
/* sum(a * b) over the two outputs */
static tp_status fn_two(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_tensor *r[2] = {0}, *ab = NULL;
  int n = 0;
  tp_status s = tp_call(&two_out, 1, in, 2, r, &n);
  if (!s) s = tp_mul(r[0], r[1], &ab);
  if (!s) s = tp_sum(ab, 0, NULL, 0, &outs[0]);
  tp_tensor_release(r[0]), tp_tensor_release(r[1]), tp_tensor_release(ab);
  *nout = s ? 0 : 1;
  return s;
}

/* ---- compilers ---- */
typedef struct compiler_state {
  int calls;
  int mode; /* 0 delegate to stax, 1 fail, 2 no runner, 3 runner gives too few, 4 wrong shape */
  char text[4096];
  tp_backend_run inner;
} compiler_state;

static tp_status bad_run(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  compiler_state *c = ud;
  (void)max_out;
  *nout = 0;
  if (c->mode == 3) return TP_OK; /* nothing */
  /* mode 4: the first input where the first output should be */
  (void)nin;
  tp_tensor *t = NULL;
  tp_status s = tp_full(TP_F32, 1, (int64_t[]){7}, 0.0, &t);
  if (s) return s;
  outs[0] = t;
  (void)in;
  *nout = 1;
  return TP_OK;
}

static tp_status compiler(void *ud, const tp_graph *g, int nin, tp_tensor *const *ex, const tp_backend_opts *o,
                          tp_backend_run *out) {
  compiler_state *c = ud;
  c->calls++;
  char *text = NULL;
  if (!tp_graph_print(g, 0, &text) && text) {
    snprintf(c->text, sizeof c->text, "%s", text);
    tp_free_buffer(text);
  }
  const tp_backend *b = NULL;
  if (c->mode == 1) return tp_lookup_backend("no_such_compiler", &b); /* fails with a message */
  if (c->mode == 2) return TP_OK; /* no runner */
  if (c->mode >= 3) {
    memset(out, 0, sizeof *out);
    out->run = bad_run, out->ud = c;
    return TP_OK;
  }
  tp_status s = tp_lookup_backend("stax", &b);
  if (s) return s;
  return b->fn(b->ud, g, nin, ex, o, out);
}

static compiler_state fwc, bwc;

static float maxdiff(tp_tensor *a, tp_tensor *b) {
  float x[8] = {0}, y[8] = {0};
  if (!a || !b || tp_tensor_read(a, x, sizeof(float) * 3) || tp_tensor_read(b, y, sizeof(float) * 3)) return INFINITY;
  float m = 0;
  for (int i = 0; i < 3; i++) m = fmaxf(m, fabsf(x[i] - y[i]));
  return m;
}

static tp_tensor *f3(float a, float b, float c) {
  tp_tensor *t = NULL;
  tp_tensor_new(TP_F32, 1, (int64_t[]){3}, (float[]){a, b, c}, &t);
  return t;
}

/* eager reference: loss, x.grad, W.grad (copied) */
static void eager(tp_tensor *x, float *loss, tp_tensor **gx, tp_tensor **gw) {
  tp_tensor *y = NULL;
  int n = 0;
  tp_callable c = {fn, NULL};
  CHECK_OK(tp_call(&c, 1, &x, 1, &y, &n));
  CHECK_OK(tp_tensor_read(y, loss, sizeof *loss));
  CHECK_OK(tp_backward(y, NULL));
  tp_tensor_release(y);
  CHECK_OK(tp_tensor_detach(tp_tensor_grad(x), gx));
  CHECK_OK(tp_tensor_detach(tp_tensor_grad(W), gw));
  tp_tensor_set_grad(x, NULL), tp_tensor_set_grad(W, NULL);
}

/* compiled: loss and grads, compared with eager's */
static void compiled_matches(int line, tp_compiled *g, tp_tensor *x, float eloss, tp_tensor *egx, tp_tensor *egw) {
  tp_tensor *y = NULL, *gx = NULL, *gw = NULL;
  int n = 0;
  tp_status s = tp_compiled_call(g, 1, &x, 1, &y, &n);
  if (s) {
    FAILF_AT(line, "compiled call: %s", tp_last_error());
    return;
  }
  float loss = 0;
  tp_tensor_read(y, &loss, sizeof loss);
  checks++;
  if (fabsf(loss - eloss) > 1e-5f * (1 + fabsf(eloss))) FAILF_AT(line, "loss %g, eager %g", loss, eloss);
  checks++;
  if (tp_backward(y, NULL)) FAILF_AT(line, "backward: %s", tp_last_error());
  tp_tensor_release(y);
  gx = tp_tensor_grad(x), gw = tp_tensor_grad(W);
  float dx = maxdiff(gx, egx), dw = maxdiff(gw, egw);
  checks++;
  if (!(dx <= 1e-5f && dw <= 1e-5f)) FAILF_AT(line, "gradients differ from eager's: x by %g, W by %g", dx, dw);
  tp_tensor_set_grad(x, NULL), tp_tensor_set_grad(W, NULL);
}
#define MATCHES(g, x, l, gx, gw) compiled_matches(__LINE__, g, x, l, gx, gw)

static char *explain(tp_compiled *g) {
  char *ex = NULL;
  tp_compiled_explain(g, &ex);
  return ex;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  size_t live0 = tp_live_tensors();
  W = f3(0.5f, -1.0f, 2.0f);
  tp_tensor_set_requires_grad(W, 1);
  tp_tensor *x = f3(0.3f, -0.2f, 0.1f);
  tp_tensor_set_requires_grad(x, 1);
  tp_nested_region_options opts = {compiler, &fwc, compiler, &bwc};
  CHECK_OK(tp_nested_compile_region_ex(&region, 8, &opts));
  float eloss = 0;
  tp_tensor *egx = NULL, *egw = NULL;
  eager(x, &eloss, &egx, &egw);
  CHECK(fwc.calls == 0 && bwc.calls == 0); /* eager: the original region */

  /* compiled: both compilers once (the region's two calls share a key) */
  tp_callable c = {fn, NULL};
  tp_compiled *g = NULL;
  CHECK_OK(tp_compile(&c, NULL, &g));
  for (int it = 0; it < 3; it++) MATCHES(g, x, eloss, egx, egw);
  CHECKF(fwc.calls == 1 && bwc.calls == 1, "compiler calls: fw %d, bw %d", fwc.calls, bwc.calls);
  CHECK(tp_compiled_num_entries(g) == 1);
  /* the region's forward: (x, W) -> its output, then the values its backward saves */
  CHECKF(strstr(fwc.text, "%x0 = placeholder : f32[3]\n%param0 = placeholder : f32[3]\n") &&
             strstr(fwc.text, "mul(%x0, %param0) : f32[3]") && strstr(fwc.text, "tanh(") &&
             strstr(fwc.text, "add(") && strstr(fwc.text, "output("),
         "forward graph:\n%s", fwc.text);
  /* its backward: (saved..., grad_out) -> the gradients of x and W */
  CHECKF(strstr(bwc.text, "%saved0 = placeholder") && strstr(bwc.text, "%grad_out = placeholder : f32[3]") &&
             strstr(bwc.text, "output("),
         "backward graph:\n%s", bwc.text);
  printf("region forward graph:\n%s\nregion backward graph:\n%s\n", fwc.text, bwc.text);
  char *ex = explain(g);
  CHECKF(ex && strstr(ex, "\"eager_for_autograd\": 0") && strstr(ex, "call_host"), "explain: %s", ex ? ex : "(null)");
  tp_free_buffer(ex);
  /* other values: the same entry, no new compiler calls */
  tp_tensor *xb = f3(-0.7f, 0.4f, 1.1f), *egxb = NULL, *egwb = NULL;
  float elb = 0;
  tp_tensor_set_requires_grad(xb, 1);
  eager(xb, &elb, &egxb, &egwb);
  MATCHES(g, xb, elb, egxb, egwb);
  CHECKF(fwc.calls == 1 && bwc.calls == 1 && tp_compiled_num_entries(g) == 1, "compiler calls: fw %d, bw %d",
         fwc.calls, bwc.calls);
  tp_compiled_free(g);
  /* a new specialization (a recompile): the compilers once more each */
  CHECK_OK(tp_compile(&c, NULL, &g));
  MATCHES(g, x, eloss, egx, egw);
  CHECKF(fwc.calls == 2 && bwc.calls == 2, "compiler calls: fw %d, bw %d", fwc.calls, bwc.calls);
  tp_compiled_free(g);

  /* no options: the compiled function's backend compiles both graphs */
  tp_callable region2 = {region_fn, (void *)1}, c2 = {fn, &region2};
  CHECK_OK(tp_nested_compile_region(&region2, 8));
  CHECK_OK(tp_compile(&c2, NULL, &g));
  MATCHES(g, x, eloss, egx, egw);
  MATCHES(g, xb, elb, egxb, egwb);
  ex = explain(g);
  CHECKF(ex && strstr(ex, "\"eager_for_autograd\": 0"), "explain: %s", ex ? ex : "(null)");
  tp_free_buffer(ex);
  CHECK(fwc.calls == 2 && bwc.calls == 2);
  tp_compiled_free(g);
  tp_tensor_release(xb), tp_tensor_release(egxb), tp_tensor_release(egwb);

  /* bad compilers: a clear error, then a good call works */
  const struct {
    compiler_state *st;
    int mode;
    tp_status want;
    const char *msg;
  } bad[] = {
      {&fwc, 1, TP_ERR_INVALID_BACKEND, "no_such_compiler"},
      {&fwc, 2, TP_ERR_TYPE, "fw_compiler returned a non-callable"},
      {&bwc, 2, TP_ERR_TYPE, "bw_compiler returned a non-callable"},
      {&fwc, 3, TP_ERR_RUNTIME, "the function fw_compiler returned gave 0 tensors; its graph has"},
      {&bwc, 3, TP_ERR_RUNTIME, "the function bw_compiler returned gave 0 tensors; its graph has 2 outputs"},
      {&fwc, 4, TP_ERR_RUNTIME, "result 0 of the function fw_compiler returned is float32 [7]; its graph gives float32 [3]"},
  };
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    fwc.mode = bwc.mode = 0;
    bad[k].st->mode = bad[k].mode;
    CHECK_OK(tp_compile(&c, NULL, &g));
    tp_tensor *y = NULL;
    int n = 0;
    ERR(tp_compiled_call(g, 1, &x, 1, &y, &n), bad[k].want, bad[k].msg);
    tp_compiled_free(g);
    fwc.mode = bwc.mode = 0;
    CHECK_OK(tp_compile(&c, NULL, &g));
    MATCHES(g, x, eloss, egx, egw);
    tp_compiled_free(g);
  }

  /* fullgraph: compiled for training too (no eager fallback needed) */
  tp_compile_options o;
  tp_compile_options_init(&o);
  o.fullgraph = 1;
  CHECK_OK(tp_compile(&c, &o, &g));
  MATCHES(g, x, eloss, egx, egw);
  tp_compiled_free(g);

  /* a region with two outputs requiring grad cannot be compiled for
   * training: the function runs eagerly (right gradients, the reason in
   * explain), the compilers are not called; with fullgraph an error */
  {
    tp_nested_region_options o2 = {compiler, &fwc, compiler, &bwc};
    CHECK_OK(tp_nested_compile_region_ex(&two_out, 8, &o2));
    int calls = fwc.calls;
    tp_callable ct = {fn_two, NULL};
    tp_tensor *y = NULL, *ye = NULL;
    int n = 0;
    CHECK_OK(tp_call(&ct, 1, &x, 1, &ye, &n)); /* eager reference */
    CHECK_OK(tp_backward(ye, NULL));
    tp_tensor *rx = NULL, *rw = NULL;
    CHECK_OK(tp_tensor_detach(tp_tensor_grad(x), &rx));
    CHECK_OK(tp_tensor_detach(tp_tensor_grad(W), &rw));
    tp_tensor_set_grad(x, NULL), tp_tensor_set_grad(W, NULL);
    CHECK_OK(tp_compile(&ct, NULL, &g));
    CHECK_OK(tp_compiled_call(g, 1, &x, 1, &y, &n));
    CHECK_OK(tp_backward(y, NULL));
    CHECK(maxdiff(tp_tensor_grad(x), rx) <= 1e-6f && maxdiff(tp_tensor_grad(W), rw) <= 1e-6f);
    tp_tensor_set_grad(x, NULL), tp_tensor_set_grad(W, NULL);
    ex = explain(g);
    CHECKF(ex && strstr(ex, "\"eager_for_autograd\": 1") && strstr(ex, "more than one output requires grad"),
           "explain: %s", ex ? ex : "(null)");
    tp_free_buffer(ex);
    CHECK(fwc.calls == calls);
    tp_compiled_free(g);
    tp_compile_options of;
    tp_compile_options_init(&of);
    of.fullgraph = 1;
    CHECK_OK(tp_compile(&ct, &of, &g));
    tp_tensor *y2 = NULL;
    ERR(tp_compiled_call(g, 1, &x, 1, &y2, &n), TP_ERR_UNSUPPORTED, "more than one output requires grad");
    tp_compiled_free(g);
    tp_tensor_release(y), tp_tensor_release(ye), tp_tensor_release(rx), tp_tensor_release(rw);
  }

  tp_tensor_release(egx), tp_tensor_release(egw);
  tp_tensor_release(x), tp_tensor_release(W);
  CHECKF(tp_live_tensors() == live0, "leaked %zu tensors", tp_live_tensors() - live0);
  printf("%d checks, %d failures\n", checks, failures);
  return failures != 0;
}
