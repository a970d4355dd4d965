/* test_lower_minmax.c - the min and the max of the same tensor over all
 * dims (DynamicQuantizeLinear's composition, src/onnx/onnx_quant.c) become
 * one TP_KR_MINMAX row kernel on stax: one pass over x for both extremes
 * (schedule.c minmax_partner, executor.c minmax_row). Every result against
 * a scalar loop over the input (min and max are exact) and the graph
 * executor; NaN anywhere gives NaN for both; a lone max, or a min over some
 * dims, keeps its own kernel. */
#include "lower/lower.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "check.h"

static int count_kind(const tp_kir_program *p, tp_kir_kind kind, int minmax) {
  int n = 0;
  for (int i = 0; i < p->nkernels; i++)
    n += p->kernels[i].kind == kind &&
         (!minmax || (kind == TP_KK_ROW && p->kernels[i].phases[0].reduce == TP_KR_MINMAX));
  return n;
}

/* x [n0, n1] filled from a sequence (nan_at >= 0: a NaN there); the graph's
 * outputs: mx = max(f(x)), mn = min(f(x)), then d = mx - mn where f is x
 * (plain) or 2 x + 1 (a lazy prologue). want_minmax: one minmax kernel and
 * no op kernel expected. */
static void one_case(const char *name, const char *text, int64_t n0, int64_t n1, int lazy, int64_t nan_at,
                     int want_minmax) {
  tp_graph *g = NULL;
  if (tp_graph_parse(text, strlen(text), &g) != TP_OK) {
    FAILF("%s: parse: %s", name, tp_last_error());
    return;
  }
  int64_t shape[2] = {n0, n1};
  tp_tensor *x = NULL, *y[3] = {NULL, NULL, NULL}, *e[3] = {NULL, NULL, NULL};
  tp_plan *pl = NULL;
  int n;
  CHECK_OK(tp_tensor_new(TP_F32, 2, shape, NULL, &x));
  if (!x) goto out;
  float *xv = tp_tensor_ptr(x);
  double lo = INFINITY, hi = -INFINITY;
  for (int64_t i = 0; i < n0 * n1; i++) {
    /* the extremes somewhere inside, not at the ends */
    xv[i] = (float)(sin((double)i * 0.37) * 3.0 + (i == n0 * n1 / 3 ? 50.0 : 0) - (i == n0 * n1 / 2 ? 60.0 : 0));
    if (i == nan_at) xv[i] = NAN;
    float f = lazy ? 2.0f * xv[i] + 1.0f : xv[i]; /* the kernel's float32 arithmetic */
    lo = f < lo ? f : lo, hi = f > hi ? f : hi;
  }
  if (nan_at >= 0) lo = hi = NAN;
  if (tp_lower(g, NULL, &pl) != TP_OK) {
    FAILF("%s: lower: %s", name, tp_last_error());
    goto out;
  }
  const tp_kir_program *p = tp_plan_program(pl);
  int mm = count_kind(p, TP_KK_ROW, 1), ops = count_kind(p, TP_KK_OP, 0);
  if (want_minmax) CHECKF(mm == 1 && ops == 0, "%s: %d minmax kernels, %d op kernels (want 1, 0)", name, mm, ops);
  else CHECKF(mm == 0, "%s: %d minmax kernels (want none)", name, mm);
  CHECK_OK(tp_plan_run(pl, 1, &x, 3, y, &n));
  CHECK_OK(tp_graph_run(g, 1, &x, 3, e, &n));
  if (!y[0] || !e[0]) goto out;
  double want[3] = {hi, lo, (float)((float)hi - (float)lo)};
  for (int q = 0; q < 3; q++) {
    double a = tp_tensor_get_f64(y[q], 0), b = tp_tensor_get_f64(e[q], 0);
    int same = isnan(want[q]) ? isnan(a) && isnan(b) : a == want[q] && b == want[q];
    CHECKF(same, "%s: output %d: stax %.9g, eager %.9g, want %.9g", name, q, a, b, want[q]);
  }
out:
  for (int q = 0; q < 3; q++) tp_tensor_release(y[q]), tp_tensor_release(e[q]);
  tp_tensor_release(x);
  tp_plan_free(pl);
  tp_graph_free(g);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  size_t base = tp_live_tensors();
  char t[1024];
  const char *plain = "tpgraph v1\n%%x = placeholder : f32[%lld,%lld]\n"
                      "%%1 = max(%%x, dims=[], keepdim=false) : f32[]\n%%2 = min(%%x, dims=[], keepdim=false) : f32[]\n%%3 = sub(%%1, %%2) : f32[]\n"
                      "output(%%1, %%2, %%3)\n";
  const char *lazy = "tpgraph v1\n%%x = placeholder : f32[%lld,%lld]\n%%a = mul(%%x, 2.0) : f32[%lld,%lld]\n"
                     "%%b = add(%%a, 1.0) : f32[%lld,%lld]\n"
                     "%%1 = max(%%b, dims=[], keepdim=false) : f32[]\n%%2 = min(%%b, dims=[], keepdim=false) : f32[]\n%%3 = sub(%%1, %%2) : f32[]\n"
                     "output(%%1, %%2, %%3)\n";
  int64_t sizes[][2] = {{1, 1}, {3, 7}, {64, 300}, {3, 4096 * 2 + 5}};
  for (int s = 0; s < 4; s++) {
    long long a = sizes[s][0], b = sizes[s][1];
    char name[96];
    snprintf(t, sizeof t, plain, a, b);
    snprintf(name, sizeof name, "plain [%lld,%lld]", a, b);
    one_case(name, t, a, b, 0, -1, 1);
    snprintf(name, sizeof name, "plain [%lld,%lld], NaN", a, b);
    one_case(name, t, a, b, 0, a * b - 1, 1);
    snprintf(t, sizeof t, lazy, a, b, a, b, a, b);
    snprintf(name, sizeof name, "lazy prologue [%lld,%lld]", a, b);
    one_case(name, t, a, b, 1, -1, 1);
    snprintf(name, sizeof name, "lazy prologue [%lld,%lld], NaN", a, b);
    one_case(name, t, a, b, 1, 0, 1);
  }
  /* min first, then max: the same kernel */
  one_case("min first",
           "tpgraph v1\n%x = placeholder : f32[5,9]\n%2 = min(%x, dims=[], keepdim=false) : f32[]\n%1 = max(%x, dims=[], keepdim=false) : f32[]\n"
           "%3 = sub(%1, %2) : f32[]\noutput(%1, %2, %3)\n",
           5, 9, 0, -1, 1);
  /* the min over one dim only: no pairing (op and row kernels as before) */
  one_case("min over dim 1, then over all",
           "tpgraph v1\n%x = placeholder : f32[5,9]\n%1 = max(%x, dims=[], keepdim=false) : f32[]\n%m = min(%x, dims=[1], keepdim=false) : f32[5]\n"
           "%2 = min(%m, dims=[], keepdim=false) : f32[]\n%3 = sub(%1, %2) : f32[]\noutput(%1, %2, %3)\n",
           5, 9, 0, -1, 0);
  if (tp_live_tensors() != base) FAILF("%zu tensors leaked", tp_live_tensors() - base);
  printf("test_lower_minmax: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
