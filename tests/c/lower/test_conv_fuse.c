/* test_conv_fuse.c - conv kernels (TP_KK_CONV) with fused epilogues: the
 * pointwise chain after a conv2d (bias add, per-channel scale and shift of
 * an unfolded BatchNorm, relu / leaky relu / clip / hardswish / sigmoid,
 * a residual add) becomes the conv kernel's epilogue, applied per output
 * tile inside the im2col + GEMM, depthwise (row and padded-plane) and
 * Winograd paths (1-D Winograd: per block of tile rows) (or, for planes under 64 elements, once over the whole
 * output after the conv). Each plan is checked for its kernel count, compared
 * element for element with the unfused plan (stax.epilogue_fusion off: the
 * same conv, then the same expression as a pointwise kernel) and with the
 * eager graph runner, on one thread and on two (the conv's tiles then run
 * on pool threads, each with its own evaluation scratch). Weights,
 * scales and residuals are placeholders fed at run time. */
#include "lower/lower.h"
#include "runtime/pool.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "check.h"

typedef struct ccase {
  const char *name;
  int64_t N, C, H, W, M, KH, KW, G;
  int win[8];     /* stride h w, pads top left bottom right, dilation h w */
  int bias;       /* the conv's own bias operand */
  int extra;      /* 0: none, 1: %s, %t [1,M,1,1], 2: %r [N,M,OH,OW] */
  const char *epi; /* lines after %0 = conv2d; "@" is the output type */
  int kernels;    /* expected kernels of the fused plan */
} ccase;

static const ccase cases[] = {
    /* im2col + GEMM (3x3 on 3 channels: not Winograd), bias as an add */
    {"conv + bias add + relu", 1, 3, 9, 11, 5, 3, 3, 1, {1, 1, 1, 1, 1, 1, 1, 1}, 0, 1,
     "%1 = add(%0, %s) : @\n%2 = relu(%1) : @\noutput(%2)\n", 1},
    /* stride 2, BatchNorm as mul + add by run-time per-channel tensors (the epilogue), read
     * twice by the leaky relu (a pmax), which is appended to that epilogue (computed once, the
     * BN's value standing for both reads); a 7x5 output plane: the epilogue runs once over the
     * whole output (CONV_EPI_MIN) */
    {"conv + BN (unfolded) + leaky", 2, 4, 13, 10, 6, 3, 3, 1, {2, 2, 1, 1, 1, 1, 1, 1}, 1, 1,
     "%1 = mul(%0, %s) : @\n%2 = add(%1, %t) : @\n%3 = mul(%2, 0.1) : @\n%4 = lt(%2, %3) : B\n"
     "%5 = where(%4, %3, %2) : @\noutput(%5)\n", 1},
    /* PP-LCNetV3's block (PP-OCRv4 detection): depthwise, BN, a learnable affine (scalars),
     * hardswish reading the affine's value twice, a second affine: one epilogue */
    {"depthwise + BN + affine + hardswish + affine", 1, 16, 20, 28, 16, 3, 3, 16, {1, 1, 1, 1, 1, 1, 1, 1}, 1, 1,
     "%1 = mul(%0, %s) : @\n%2 = add(%1, %t) : @\n%3 = mul(%2, 1.5) : @\n%4 = add(%3, -0.25) : @\n"
     "%5 = add(%4, 3.0) : @\n%6 = lt(%5, 0.0) : B\n%7 = where(%6, 0.0, %5) : @\n%8 = gt(%7, 6.0) : B\n"
     "%9 = where(%8, 6.0, %7) : @\n%10 = mul(%4, %9) : @\n%11 = div(%10, 6.0) : @\n%12 = mul(%11, 0.75) : @\n"
     "%13 = add(%12, 0.125) : @\noutput(%13)\n", 1},
    /* the same on a 1x1 conv (a GEMM after conv_gemm: the epilogue regrouped onto [M, H*W]) */
    {"1x1 (GEMM) + BN + affine + hardswish + affine", 1, 8, 12, 20, 24, 1, 1, 1, {1, 1, 0, 0, 0, 0, 1, 1}, 1, 1,
     "%1 = mul(%0, %s) : @\n%2 = add(%1, %t) : @\n%3 = mul(%2, 1.5) : @\n%4 = add(%3, -0.25) : @\n"
     "%5 = add(%4, 3.0) : @\n%6 = lt(%5, 0.0) : B\n%7 = where(%6, 0.0, %5) : @\n%8 = gt(%7, 6.0) : B\n"
     "%9 = where(%8, 6.0, %7) : @\n%10 = mul(%4, %9) : @\n%11 = div(%10, 6.0) : @\n%12 = mul(%11, 0.75) : @\n"
     "%13 = add(%12, 0.125) : @\noutput(%13)\n", 1},
    /* the same on one row (silero_vad's [1, C, 1, W]), the second affine per channel: the
     * appended expression (its loads over [1, M, 1, W]) regrouped onto the GEMM's [M, W] */
    {"1x1 (GEMM) on one row + BN + affine + hardswish + BN", 1, 8, 1, 20, 16, 1, 1, 1, {1, 1, 0, 0, 0, 0, 1, 1}, 1, 1,
     "%1 = mul(%0, %s) : @\n%2 = add(%1, %t) : @\n%3 = mul(%2, 1.5) : @\n%4 = add(%3, -0.25) : @\n"
     "%5 = add(%4, 3.0) : @\n%6 = lt(%5, 0.0) : B\n%7 = where(%6, 0.0, %5) : @\n%8 = gt(%7, 6.0) : B\n"
     "%9 = where(%8, 6.0, %7) : @\n%10 = mul(%4, %9) : @\n%11 = div(%10, 6.0) : @\n%12 = mul(%11, %t) : @\n"
     "%13 = add(%12, %s) : @\noutput(%13)\n", 1},
    {"1x1 (GEMM) + BN + hardswish + BN", 1, 8, 3, 20, 16, 1, 1, 1, {1, 1, 0, 0, 0, 0, 1, 1}, 1, 1,
     "%1 = mul(%0, %s) : @\n%2 = add(%1, %t) : @\n"
     "%5 = add(%2, 3.0) : @\n%6 = lt(%5, 0.0) : B\n%7 = where(%6, 0.0, %5) : @\n%8 = gt(%7, 6.0) : B\n"
     "%9 = where(%8, 6.0, %7) : @\n%10 = mul(%2, %9) : @\n%11 = div(%10, 6.0) : @\n%12 = mul(%11, %t) : @\n"
     "%13 = add(%12, %s) : @\noutput(%13)\n", 1},
    /* the BN's value also read by a second output: its epilogue stays alone (two kernels) */
    {"conv + BN, shared, + relu", 1, 4, 9, 11, 6, 3, 3, 1, {1, 1, 1, 1, 1, 1, 1, 1}, 1, 1,
     "%1 = mul(%0, %s) : @\n%2 = add(%1, %t) : @\n%3 = relu(%2) : @\noutput(%3, %2)\n", 2},
    /* grouped im2col, large enough to split over threads */
    {"grouped conv + residual add + relu", 1, 16, 64, 64, 32, 3, 3, 2, {1, 1, 1, 1, 1, 1, 1, 1}, 1, 2,
     "%1 = add(%r, %0) : @\n%2 = relu(%1) : @\noutput(%2)\n", 1},
    /* depthwise, padded small plane (conv_dw_padded) */
    {"depthwise (padded plane) + hardswish", 1, 6, 8, 9, 6, 3, 3, 6, {1, 1, 1, 1, 1, 1, 1, 1}, 1, 0,
     "%1 = add(%0, 3.0) : @\n%2 = lt(%1, 0.0) : B\n%3 = where(%2, 0.0, %1) : @\n%4 = gt(%3, 6.0) : B\n"
     "%5 = where(%4, 6.0, %3) : @\n%6 = mul(%0, %5) : @\n%7 = div(%6, 6.0) : @\noutput(%7)\n", 1},
    /* depthwise on the row kernel (OW >= 64, too many rows to copy), stride 2 rows */
    {"depthwise (rows) + hardswish", 1, 4, 130, 140, 4, 3, 3, 4, {2, 1, 1, 1, 1, 1, 1, 1}, 1, 0,
     "%1 = add(%0, 3.0) : @\n%2 = lt(%1, 0.0) : B\n%3 = where(%2, 0.0, %1) : @\n%4 = gt(%3, 6.0) : B\n"
     "%5 = where(%4, 6.0, %3) : @\n%6 = mul(%0, %5) : @\n%7 = div(%6, 6.0) : @\noutput(%7)\n", 1},
    /* depthwise on padded rows (few wide rows: 5x5 on 3x96, stride 2x1, multiplier 4), planes
     * split over two threads */
    {"depthwise (padded rows) + BN + relu", 1, 128, 3, 96, 512, 5, 5, 128, {2, 1, 2, 2, 2, 2, 1, 1}, 1, 1,
     "%1 = mul(%0, %s) : @\n%2 = add(%1, %t) : @\n%3 = relu(%2) : @\noutput(%3)\n", 1},
    /* depthwise, stride 2 (even and odd columns), planes split over two threads */
    {"depthwise (stride 2) + relu", 1, 256, 40, 56, 256, 3, 3, 256, {2, 2, 1, 1, 1, 1, 1, 1}, 1, 0,
     "%1 = relu(%0) : @\noutput(%1)\n", 1},
    {"depthwise (padded rows, 9x140) + hardswish", 1, 4, 9, 140, 4, 3, 3, 4, {2, 1, 1, 1, 1, 1, 1, 1}, 1, 0,
     "%1 = add(%0, 3.0) : @\n%2 = lt(%1, 0.0) : B\n%3 = where(%2, 0.0, %1) : @\n%4 = gt(%3, 6.0) : B\n"
     "%5 = where(%4, 6.0, %3) : @\n%6 = mul(%0, %5) : @\n%7 = div(%6, 6.0) : @\noutput(%7)\n", 1},
    /* Winograd, one block of tiles */
    {"winograd + clip", 1, 8, 10, 12, 8, 3, 3, 1, {1, 1, 1, 1, 1, 1, 1, 1}, 1, 0,
     "%1 = lt(%0, 0.0) : B\n%2 = where(%1, 0.0, %0) : @\n%3 = gt(%2, 6.0) : B\n%4 = where(%3, 6.0, %2) : @\noutput(%4)\n", 1},
    /* Winograd over several blocks of tiles, odd output sides (partial tile rows) */
    {"winograd (blocks) + BN + sigmoid", 2, 64, 29, 25, 64, 3, 3, 1, {1, 1, 1, 1, 1, 1, 1, 1}, 0, 1,
     "%1 = mul(%0, %s) : @\n%2 = add(%1, %t) : @\n%3 = sigmoid(%2) : @\noutput(%3)\n", 1},
    /* 1-D Winograd F(2, 3) (tp_conv2d_winograd1d): 3x1 with row pads and an unfolded BN +
     * sigmoid, batch 2; 1x3 with column pads, residual + relu */
    {"winograd 3x1 + BN + sigmoid", 2, 16, 21, 9, 12, 3, 1, 1, {1, 1, 1, 0, 1, 0, 1, 1}, 1, 1,
     "%1 = mul(%0, %s) : @\n%2 = add(%1, %t) : @\n%3 = sigmoid(%2) : @\noutput(%3)\n", 1},
    {"winograd 1x3 + residual add + relu", 1, 8, 9, 23, 16, 1, 3, 1, {1, 1, 0, 1, 0, 1, 1, 1}, 1, 2,
     "%1 = add(%r, %0) : @\n%2 = relu(%1) : @\noutput(%2)\n", 1},
    /* 1-D Winograd large enough for two blocks of tile rows on two threads (epilogue per block, slot 1) */
    {"winograd 3x1 (blocks over threads) + relu", 1, 32, 130, 30, 32, 3, 1, 1, {1, 1, 0, 0, 0, 0, 1, 1}, 1, 0,
     "%1 = relu(%0) : @\noutput(%1)\n", 1},
    /* the conv's output also read by a second output: no epilogue (two kernels) */
    {"shared conv output", 1, 3, 6, 7, 4, 3, 3, 1, {1, 1, 1, 1, 1, 1, 1, 1}, 1, 0,
     "%1 = relu(%0) : @\noutput(%1, %0)\n", 2},
};

static int count_kind(const tp_kir_program *p, tp_kir_kind k) {
  int n = 0;
  for (int i = 0; i < p->nkernels; i++) n += p->kernels[i].kind == k;
  return n;
}

/* s with "@" replaced by at and "B" (after ": ") by bt */
static void expand(char *dst, size_t cap, const char *s, const char *at, const char *bt) {
  size_t o = 0;
  for (; *s && o + 64 < cap; s++) {
    const char *r = *s == '@' ? at : (*s == 'B' && s[-1] == ' ' && s[-2] == ':') ? bt : NULL;
    if (r) o += (size_t)snprintf(dst + o, cap - o, "%s", r);
    else dst[o++] = *s;
  }
  dst[o] = 0;
}

static void run_case(const ccase *c, int threads) {
  int64_t OH = (c->H + c->win[2] + c->win[4] - c->win[6] * (c->KH - 1) - 1) / c->win[0] + 1;
  int64_t OW = (c->W + c->win[3] + c->win[5] - c->win[7] * (c->KW - 1) - 1) / c->win[1] + 1;
  char at[96], bt[96], epi[1024], text[2048];
  snprintf(at, sizeof at, "f32[%lld,%lld,%lld,%lld]", (long long)c->N, (long long)c->M, (long long)OH, (long long)OW);
  snprintf(bt, sizeof bt, "b8[%lld,%lld,%lld,%lld]", (long long)c->N, (long long)c->M, (long long)OH, (long long)OW);
  expand(epi, sizeof epi, c->epi, at, bt);
  int o = snprintf(text, sizeof text,
                   "tpgraph v1\n%%x = placeholder : f32[%lld,%lld,%lld,%lld]\n%%w = placeholder : f32[%lld,%lld,%lld,%lld]\n"
                   "%%b = placeholder : f32[%lld]\n",
                   (long long)c->N, (long long)c->C, (long long)c->H, (long long)c->W, (long long)c->M,
                   (long long)(c->C / c->G), (long long)c->KH, (long long)c->KW, (long long)c->M);
  if (c->extra == 1)
    o += snprintf(text + o, sizeof text - (size_t)o, "%%s = placeholder : f32[1,%lld,1,1]\n%%t = placeholder : f32[1,%lld,1,1]\n",
                  (long long)c->M, (long long)c->M);
  if (c->extra == 2) o += snprintf(text + o, sizeof text - (size_t)o, "%%r = placeholder : %s\n", at);
  o += snprintf(text + o, sizeof text - (size_t)o, "%%0 = conv2d(%%x, %%w, %s, window=[%d,%d,%d,%d,%d,%d,%d,%d], groups=%lld) : %s\n%s",
                c->bias ? "%b" : "none", c->win[0], c->win[1], c->win[2], c->win[3], c->win[4], c->win[5], c->win[6],
                c->win[7], (long long)c->G, at, epi);
  tp_graph *g = NULL;
  if (tp_graph_parse(text, strlen(text), &g) != TP_OK) {
    FAILF("%s: parse: %s\n%s", c->name, tp_last_error(), text);
    return;
  }
  int64_t shapes[5][4] = {{c->N, c->C, c->H, c->W}, {c->M, c->C / c->G, c->KH, c->KW}, {c->M}, {1, c->M, 1, 1}, {1, c->M, 1, 1}};
  int nd[5] = {4, 4, 1, 4, 4}, nin = 3 + (c->extra == 1 ? 2 : c->extra == 2 ? 1 : 0);
  if (c->extra == 2) memcpy(shapes[3], (int64_t[]){c->N, c->M, OH, OW}, sizeof shapes[3]);
  tp_tensor *in[5] = {0};
  for (int i = 0; i < nin; i++) tp_randn(nd[i], shapes[i], 100 + (uint64_t)i, &in[i]);
  tp_lower_options fo, uo;
  tp_lower_options_init(&fo);
  tp_lower_options_init(&uo);
  uo.epilogue_fusion = 0;
  tp_plan *fused = NULL, *unfused = NULL;
  if (tp_lower(g, &fo, &fused) != TP_OK) FAILF("%s: lower: %s", c->name, tp_last_error());
  if (tp_lower(g, &uo, &unfused) != TP_OK) FAILF("%s: lower (unfused): %s", c->name, tp_last_error());
  const tp_kir_program *p = fused ? tp_plan_program(fused) : NULL;
  if (p && (p->nkernels != c->kernels || count_kind(p, TP_KK_CONV) + count_kind(p, TP_KK_GEMM) != 1 ||
            (c->extra == 1 || c->kernels == 1) != (p->kernels[0].expr.n > 0)))
  {
    char *dump = NULL;
    tp_kir_print(p, &dump);
    FAILF("%s: fused plan has %d kernels (%d conv, epilogue %d), expected %d:\n%s", c->name, p->nkernels,
          count_kind(p, TP_KK_CONV), p->kernels[0].expr.n, c->kernels, dump ? dump : "");
    tp_free(dump);
  }
  const tp_kir_program *up = unfused ? tp_plan_program(unfused) : NULL;
  CHECK(up && up->nkernels >= 2 && (up->kernels[0].kind == TP_KK_CONV || up->kernels[0].kind == TP_KK_GEMM) &&
        up->kernels[0].expr.n == 0);
  CHECK(tp_pool_set_threads(threads) == TP_OK);
  tp_tensor *e[2] = {0}, *y[2] = {0}, *u[2] = {0};
  int ne = 0, ny = 0, nu = 0;
  CHECK(tp_graph_run(g, nin, in, 2, e, &ne) == TP_OK);
  CHECK(fused && tp_plan_run(fused, nin, in, 2, y, &ny) == TP_OK);
  CHECK(unfused && tp_plan_run(unfused, nin, in, 2, u, &nu) == TP_OK);
  CHECK(ne >= 1 && ne == ny && ne == nu);
  for (int q = 0; q < ne && q < ny && q < nu; q++) {
    int64_t cnt = tp_tensor_numel(e[q]);
    CHECK(tp_tensor_numel(y[q]) == cnt && tp_tensor_numel(u[q]) == cnt);
    const float *fy = tp_tensor_ptr(y[q]), *fu = tp_tensor_ptr(u[q]);
    for (int64_t i = 0; i < cnt; i++) {
      double a = tp_tensor_get_f64(e[q], i);
      if (memcmp(&fy[i], &fu[i], sizeof(float))) {
        FAILF("%s (%d threads) output %d element %lld: fused %.9g, unfused %.9g", c->name, threads, q,
              (long long)i, (double)fy[i], (double)fu[i]);
        break;
      }
      if (!(fabs(a - fy[i]) <= 1e-4 + 1e-4 * fabs(a))) {
        FAILF("%s (%d threads) output %d element %lld: fused %.9g, eager %.9g", c->name, threads, q,
              (long long)i, (double)fy[i], a);
        break;
      }
    }
  }
  CHECK(tp_pool_set_threads(0) == TP_OK);
  for (int q = 0; q < 2; q++) tp_tensor_release(e[q]), tp_tensor_release(y[q]), tp_tensor_release(u[q]);
  for (int i = 0; i < nin; i++) tp_tensor_release(in[i]);
  tp_plan_free(fused);
  tp_plan_free(unfused);
  tp_graph_free(g);
}

/* The fused kernel in the printed Kernel IR: a conv2d with an epilogue
 * whose first instruction is the accumulator. */
static void test_print(void) {
  const char *text = "tpgraph v1\n%x = placeholder : f32[1,3,6,6]\n%w = placeholder : f32[4,3,3,3]\n"
                     "%0 = conv2d(%x, %w, none, window=[1,1,0,0,0,0,1,1], groups=1) : f32[1,4,4,4]\n"
                     "%1 = relu(%0) : f32[1,4,4,4]\noutput(%1)\n";
  tp_graph *g = NULL;
  CHECK(tp_graph_parse(text, strlen(text), &g) == TP_OK);
  tp_plan *pl = NULL;
  CHECK(g && tp_lower(g, NULL, &pl) == TP_OK);
  char *s = NULL;
  CHECK(pl && tp_kir_print(tp_plan_program(pl), &s) == TP_OK);
  CHECK(s && strstr(s, "conv2d(") && strstr(s, "epilogue:") && strstr(s, "acc") && strstr(s, "relu"));
  tp_free(s);
  tp_plan_free(pl);
  tp_graph_free(g);
}

int main(void) {
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    run_case(&cases[i], 1);
    if (tp_pool_has_threads()) run_case(&cases[i], 2);
  }
  test_print();
  printf("%s: %d failures\n", failures ? "FAIL" : "ok", failures);
  return failures != 0;
}
