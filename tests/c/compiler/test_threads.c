/* test_threads.c - the thread pool through the public API: config.threads
 * (checked when set, clear errors, None = the default), and compiled
 * functions (the stax backend) whose kernels split over the pool give the
 * same bits with 1, 2, 3 and 4 threads: GEMM with a constant weight (packed
 * once, split by rows) and with a weight fed at run time (split by columns,
 * batched too), conv2d (im2col, 1x1 and depthwise), large pointwise chains
 * and row kernels (softmax, layer_norm). The 1-thread results are also
 * checked against a double-precision reference, so a split that dropped or
 * doubled work would fail even if every thread count agreed. Shapes are
 * large enough to pass every kernel kind's work-sizing threshold. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "check.h"

#define OK(e) CHECK_OK(e)
#define IMG 96 /* image side: each conv kind passes its work-sizing threshold */

static tp_tensor *W_const, *B_const, *CW_const, *DW_const, *PW_const, *DW5_const, *PW2_const;

/* in: x [256,512], w [384,512] (fed at run time), a [8,64,256], b [8,256,96],
 * img [1,16,IMG,IMG], xs [16,512]. Constant weights: W_const [512,512] (packed once),
 * B_const [512]; CW_const [32,16,3,3]; PW_const [48,16,1,1] (1x1: stax makes it a GEMM); DW_const [16,1,3,3];
 * DW5_const [16,1,5,5] (pad 2: depthwise through padded planes, one per thread); PW2_const
 * [576,512,1,1] (1x1 over 16 positions: a packed constant A with one column block, split by rows). */
static tp_status model(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                       int *nout) {
  (void)ud, (void)nin, (void)max_out;
  tp_tensor *t[17] = {0};
  tp_attrs at;
  tp_status s = TP_OK;
  /* 0: linear with a constant weight + bias + gelu epilogue */
  if (!s) s = tp_linear(in[0], W_const, B_const, &t[0]);
  tp_attrs_init(&at);
  if (!s) s = tp_op_call(TP_OP_GELU, 1, &t[0], &at, &t[1]);
  /* 1: linear with the weight fed at run time */
  if (!s) s = tp_linear(in[0], in[1], NULL, &t[2]);
  /* 2: batched matmul of two inputs */
  if (!s) s = tp_matmul(in[2], in[3], &t[3]);
  /* 3: softmax over rows of t[2] */
  tp_attrs_init(&at);
  at.dim = 1;
  if (!s) s = tp_op_call(TP_OP_SOFTMAX, 1, &t[2], &at, &t[4]);
  /* 4: layer_norm over the last dim of t[1] */
  tp_attrs_init(&at);
  at.ints[0] = 512, at.nints = 1, at.eps = 1e-5;
  tp_tensor *ln_in[3] = {t[1], NULL, NULL};
  if (!s) s = tp_op_call(TP_OP_LAYER_NORM, 3, ln_in, &at, &t[5]);
  /* 5: a pointwise chain over t[0]: tanh(x * x) - x */
  if (!s) s = tp_mul(t[0], t[0], &t[6]);
  tp_attrs_init(&at);
  if (!s) s = tp_op_call(TP_OP_TANH, 1, &t[6], &at, &t[7]);
  if (!s) s = tp_sub(t[7], t[0], &t[8]);
  /* 6: conv2d 3x3 pad 1 (im2col), 7: 1x1 (direct GEMM), 8: depthwise 3x3 */
  const int64_t pads[4] = {1, 1, 1, 1};
  if (!s) s = tp_conv2d(in[4], CW_const, NULL, NULL, pads, NULL, 1, &t[9]);
  if (!s) s = tp_conv2d(in[4], PW_const, NULL, NULL, NULL, NULL, 1, &t[10]);
  if (!s) s = tp_conv2d(in[4], DW_const, NULL, NULL, pads, NULL, 16, &t[11]);
  const int64_t pads2[4] = {2, 2, 2, 2};
  if (!s) s = tp_conv2d(in[4], DW5_const, NULL, NULL, pads2, NULL, 16, &t[15]);
  /* 12: a 1x1 convolution over xs as [1,512,4,4]: 576 channels, 16 positions */
  const int64_t img4[4] = {1, 512, 4, 4};
  tp_tensor *x4 = NULL;
  if (!s) s = tp_reshape(in[5], 4, img4, &x4);
  if (!s) s = tp_conv2d(x4, PW2_const, NULL, NULL, NULL, NULL, 1, &t[16]);
  tp_tensor_release(x4);
  /* 9: few rows (16) with the constant weight: split over its packed columns */
  if (!s) s = tp_linear(in[5], W_const, B_const, &t[12]);
  /* 10: softmax over short rows of xs (4,096 rows of 2: 8,192 elements,
   * below PAR_ROW_ELEMS, but the fixed cost per row makes it split,
   * PAR_ROW_COST) */
  const int64_t short_rows[2] = {4096, 2};
  if (!s) s = tp_reshape(in[5], 2, short_rows, &t[13]);
  tp_attrs_init(&at);
  at.dim = 1;
  if (!s) s = tp_op_call(TP_OP_SOFTMAX, 1, &t[13], &at, &t[14]);
  if (!s) {
    int o[] = {1, 3, 4, 5, 8, 9, 10, 11, 12, 14, 15, 16};
    for (int i = 0; i < 12; i++) outs[i] = t[o[i]], t[o[i]] = NULL;
    *nout = 12;
  }
  for (int i = 0; i < 17; i++) tp_tensor_release(t[i]);
  return s;
}
#define NOUT 12
static const char *const out_names[NOUT] = {"linear+gelu (const W)", "batched matmul",
                                            "softmax rows", "layer_norm rows",
                                            "pointwise chain", "conv2d 3x3 im2col",
                                            "conv2d 1x1", "conv2d depthwise",
                                            "linear, 16 rows (const W, column split)",
                                            "softmax, rows of 2", "conv2d depthwise 5x5 (padded planes)",
                                            "conv2d 1x1, 16 positions (packed A, row split)"};

static tp_status set_threads_value(tp_value v) { return tp_config_set(TP_CFG_THREADS, v); }

static void test_config(void) {
  tp_config_key k;
  OK(tp_config_lookup("threads", &k));
  CHECK(k == TP_CFG_THREADS);
  CHECK(tp_config_get(TP_CFG_THREADS).kind == TP_VAL_NONE); /* the default */
  OK(set_threads_value(tp_value_int(3)));
  CHECK(tp_config_get(TP_CFG_THREADS).kind == TP_VAL_INT && tp_config_get(TP_CFG_THREADS).i == 3);
  struct { tp_value v; const char *msg; } bad[] = {
      {tp_value_int(0), "config.threads must be from 1 to 256 (None: the default), got 0"},
      {tp_value_int(-2), "got -2"},
      {tp_value_int(100000), "got 100000 (too many threads)"},
      {tp_value_bool(1), "config.threads must be an int from 1 to 256 or None"},
  };
  for (int i = 0; i < 4; i++) {
    CHECK(set_threads_value(bad[i].v) == TP_ERR_VALUE);
    CHECKF(strstr(tp_last_error(), bad[i].msg), "case %d: %s", i, tp_last_error());
    CHECK(tp_config_get(TP_CFG_THREADS).i == 3); /* unchanged */
  }
  tp_value f = tp_value_none();
  f.kind = TP_VAL_FLOAT, f.f = 2.5;
  CHECK(set_threads_value(f) == TP_ERR_VALUE && strstr(tp_last_error(), "<class 'float'>"));
  OK(set_threads_value(tp_value_none()));
  OK(set_threads_value(tp_value_int(1))); /* stops the workers; runs on */
  tp_config_reset();
  CHECK(tp_config_get(TP_CFG_THREADS).kind == TP_VAL_NONE);
}

/* ---- references (double) for the 1-thread outputs ---- */
static double max_rel_err(const float *got, const double *ref, int64_t n) {
  double m = 0, scale = 1e-3;
  for (int64_t i = 0; i < n; i++) scale = fmax(scale, fabs(ref[i]));
  for (int64_t i = 0; i < n; i++) m = fmax(m, fabs(got[i] - ref[i]) / scale);
  return m;
}

static float *data_of(tp_tensor *t, int64_t *n) {
  *n = tp_tensor_numel(t);
  float *p = malloc(sizeof(float) * (size_t)*n);
  if (p) tp_tensor_read(t, p, sizeof(float) * (size_t)*n);
  return p;
}

static void check_reference(tp_tensor *const *in, tp_tensor *const *o) {
  int64_t n;
  float *x = data_of(in[0], &n), *w = data_of(W_const, &n), *b = data_of(B_const, &n);
  float *a = data_of(in[2], &n), *bb = data_of(in[3], &n), *img = data_of(in[4], &n);
  float *cw = data_of(CW_const, &n), *dw = data_of(DW_const, &n), *pw = data_of(PW_const, &n);
  /* linear + gelu(erf) */
  double *r = malloc(sizeof(double) * 256 * 512);
  for (int i = 0; i < 256; i++)
    for (int j = 0; j < 512; j++) {
      double acc = b[j];
      for (int k = 0; k < 512; k++) acc += (double)x[i * 512 + k] * w[j * 512 + k];
      r[i * 512 + j] = 0.5 * acc * (1 + erf(acc / sqrt(2.0)));
    }
  float *g = data_of(o[0], &n);
  CHECKF(max_rel_err(g, r, n) < 1e-5, "linear+gelu: max rel err %g", max_rel_err(g, r, n));
  free(g);
  float *xs = data_of(in[5], &n);
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 512; j++) {
      double acc = b[j];
      for (int k = 0; k < 512; k++) acc += (double)xs[i * 512 + k] * w[j * 512 + k];
      r[i * 512 + j] = acc;
    }
  g = data_of(o[8], &n);
  CHECKF(n == 16 * 512 && max_rel_err(g, r, n) < 1e-5, "linear, 16 rows: max rel err %g",
         max_rel_err(g, r, n));
  free(g);
  free(xs);
  /* batched matmul */
  double *rm = malloc(sizeof(double) * 8 * 64 * 96);
  for (int q = 0; q < 8; q++)
    for (int i = 0; i < 64; i++)
      for (int j = 0; j < 96; j++) {
        double acc = 0;
        for (int k = 0; k < 256; k++) acc += (double)a[(q * 64 + i) * 256 + k] * bb[(q * 256 + k) * 96 + j];
        rm[(q * 64 + i) * 96 + j] = acc;
      }
  g = data_of(o[1], &n);
  CHECKF(max_rel_err(g, rm, n) < 1e-5, "bmm: max rel err %g", max_rel_err(g, rm, n));
  free(g);
  /* conv 3x3 pad 1 */
  double *rc = malloc(sizeof(double) * 48 * IMG * IMG);
  for (int m = 0; m < 32; m++)
    for (int i = 0; i < IMG; i++)
      for (int j = 0; j < IMG; j++) {
        double acc = 0;
        for (int c = 0; c < 16; c++)
          for (int kh = 0; kh < 3; kh++)
            for (int kw = 0; kw < 3; kw++) {
              int ih = i + kh - 1, iw = j + kw - 1;
              if (ih >= 0 && ih < IMG && iw >= 0 && iw < IMG)
                acc += (double)img[(c * IMG + ih) * IMG + iw] * cw[((m * 16 + c) * 3 + kh) * 3 + kw];
            }
        rc[(m * IMG + i) * IMG + j] = acc;
      }
  g = data_of(o[5], &n);
  CHECKF(max_rel_err(g, rc, n) < 1e-5, "conv 3x3: max rel err %g", max_rel_err(g, rc, n));
  free(g);
  /* conv 1x1 */
  for (int m = 0; m < 48; m++)
    for (int p = 0; p < IMG * IMG; p++) {
      double acc = 0;
      for (int c = 0; c < 16; c++) acc += (double)img[c * IMG * IMG + p] * pw[m * 16 + c];
      rc[m * IMG * IMG + p] = acc;
    }
  g = data_of(o[6], &n);
  CHECKF(max_rel_err(g, rc, n) < 1e-5, "conv 1x1: max rel err %g", max_rel_err(g, rc, n));
  free(g);
  /* depthwise 3x3 pad 1 */
  for (int c = 0; c < 16; c++)
    for (int i = 0; i < IMG; i++)
      for (int j = 0; j < IMG; j++) {
        double acc = 0;
        for (int kh = 0; kh < 3; kh++)
          for (int kw = 0; kw < 3; kw++) {
            int ih = i + kh - 1, iw = j + kw - 1;
            if (ih >= 0 && ih < IMG && iw >= 0 && iw < IMG)
              acc += (double)img[(c * IMG + ih) * IMG + iw] * dw[c * 9 + kh * 3 + kw];
          }
        rc[(c * IMG + i) * IMG + j] = acc;
      }
  g = data_of(o[7], &n);
  CHECKF(max_rel_err(g, rc, n) < 1e-5, "depthwise: max rel err %g", max_rel_err(g, rc, n));
  free(g);
  /* depthwise 5x5 pad 2 */
  float *dw5 = data_of(DW5_const, &n);
  for (int c = 0; c < 16 && dw5; c++)
    for (int i = 0; i < IMG; i++)
      for (int j = 0; j < IMG; j++) {
        double acc = 0;
        for (int kh = 0; kh < 5; kh++)
          for (int kw = 0; kw < 5; kw++) {
            int ih = i + kh - 2, iw = j + kw - 2;
            if (ih >= 0 && ih < IMG && iw >= 0 && iw < IMG)
              acc += (double)img[(c * IMG + ih) * IMG + iw] * dw5[c * 25 + kh * 5 + kw];
          }
        rc[(c * IMG + i) * IMG + j] = acc;
      }
  g = data_of(o[10], &n);
  CHECKF(dw5 && max_rel_err(g, rc, n) < 1e-5, "depthwise 5x5: max rel err %g", max_rel_err(g, rc, n));
  free(g), free(dw5);
  /* 1x1 over 16 positions: y[m, p] = sum_c w[m, c] xs[c, p] (xs [16,512] read as [512,16]) */
  float *xs5 = data_of(in[5], &n), *w2 = data_of(PW2_const, &n);
  double *r2 = malloc(sizeof(double) * 576 * 16);
  for (int m = 0; m < 576 && xs5 && w2 && r2; m++)
    for (int q = 0; q < 16; q++) {
      double acc = 0;
      for (int c = 0; c < 512; c++) acc += (double)w2[m * 512 + c] * xs5[c * 16 + q];
      r2[m * 16 + q] = acc;
    }
  g = data_of(o[11], &n);
  CHECKF(xs5 && w2 && r2 && n == 576 * 16 && max_rel_err(g, r2, n) < 1e-5, "1x1 over 16 positions: max rel err %g",
         r2 ? max_rel_err(g, r2, n) : 1.0);
  free(g), free(xs5), free(w2), free(r2);
  /* softmax rows sum to 1 */
  g = data_of(o[2], &n);
  double worst = 0;
  for (int i = 0; i < 256; i++) {
    double s = 0;
    for (int j = 0; j < 384; j++) s += g[i * 384 + j];
    worst = fmax(worst, fabs(s - 1));
  }
  CHECKF(worst < 1e-4, "softmax: a row sums to 1 +- %g", worst);
  free(g);
  /* softmax over rows of 2 of xs (flat [4096, 2]): e^a / (e^a + e^b) */
  {
    float *xs = data_of(in[5], &n);
    g = data_of(o[9], &n);
    worst = 0;
    for (int p = 0; p < 4096 && n == 8192; p++) {
      double m = fmax(xs[2 * p], xs[2 * p + 1]), e0 = exp(xs[2 * p] - m), e1 = exp(xs[2 * p + 1] - m);
      worst = fmax(worst, fmax(fabs(g[2 * p] - e0 / (e0 + e1)), fabs(g[2 * p + 1] - e1 / (e0 + e1))));
    }
    CHECKF(n == 8192 && worst < 1e-6, "softmax, rows of 2: %lld values, max abs err %g", (long long)n, worst);
    free(g), free(xs);
  }
  /* layer_norm rows: mean 0, variance 1 */
  g = data_of(o[3], &n);
  worst = 0;
  for (int i = 0; i < 256; i++) {
    double m = 0, v = 0;
    for (int j = 0; j < 512; j++) m += g[i * 512 + j];
    m /= 512;
    for (int j = 0; j < 512; j++) v += (g[i * 512 + j] - m) * (g[i * 512 + j] - m);
    worst = fmax(worst, fmax(fabs(m), fabs(v / 512 - 1)));
  }
  CHECKF(worst < 1e-3, "layer_norm: rows off mean 0 / variance 1 by %g", worst);
  free(g);
  free(r), free(rm), free(rc);
  free(x), free(w), free(b), free(a), free(bb), free(img), free(cw), free(dw), free(pw);
}

static void test_same_bits(const char *isa, int with_reference) {
  const int64_t xs[2] = {256, 512}, ws[2] = {384, 512}, as[3] = {8, 64, 256}, bs[3] = {8, 256, 96},
                is[4] = {1, 16, IMG, IMG}, Ws[2] = {512, 512}, Bs[1] = {512}, cs[4] = {32, 16, 3, 3},
                ps[4] = {48, 16, 1, 1}, ds[4] = {16, 1, 3, 3}, d5[4] = {16, 1, 5, 5}, p2[4] = {576, 512, 1, 1}, ss[2] = {16, 512};
  tp_tensor *in[6] = {0};
  OK(tp_randn(2, xs, 1, &in[0]));
  OK(tp_randn(2, ws, 2, &in[1]));
  OK(tp_randn(3, as, 3, &in[2]));
  OK(tp_randn(3, bs, 4, &in[3]));
  OK(tp_randn(4, is, 5, &in[4]));
  OK(tp_randn(2, ss, 16, &in[5]));
  OK(tp_randn(2, Ws, 6, &W_const));
  OK(tp_randn(1, Bs, 7, &B_const));
  OK(tp_randn(4, cs, 8, &CW_const));
  OK(tp_randn(4, ps, 9, &PW_const));
  OK(tp_randn(4, ds, 10, &DW_const));
  OK(tp_randn(4, d5, 18, &DW5_const));
  OK(tp_randn(4, p2, 19, &PW2_const));
  tp_callable fn = {model, NULL};
  tp_compiled *c = NULL;
  OK(tp_compile(&fn, NULL, &c)); /* the plan is made (and B packed) on the first call, with this ISA */
  /* Different inputs of the same shapes run (on one thread: every value
   * written) before each compared call, so a chunk that was skipped would
   * leave their values behind (the arena and the storage cache reuse
   * memory). Setting 1 thread also stops the workers: each count starts
   * them again. */
  tp_tensor *poison[6] = {0};
  OK(tp_randn(2, xs, 11, &poison[0]));
  OK(tp_randn(2, ws, 12, &poison[1]));
  OK(tp_randn(3, as, 13, &poison[2]));
  OK(tp_randn(3, bs, 14, &poison[3]));
  OK(tp_randn(4, is, 15, &poison[4]));
  OK(tp_randn(2, ss, 17, &poison[5]));
  float *first[NOUT] = {0}, *eager_first[4] = {0};
  int64_t len[NOUT] = {0};
  const int64_t pads1[4] = {1, 1, 1, 1}, pads2[4] = {2, 2, 2, 2};
  for (int threads = 1; threads <= 4 && c; threads++) {
    for (int rep = 0; rep < 1; rep++) {
      tp_tensor *o[NOUT] = {0};
      int n = 0;
      OK(tp_config_set(TP_CFG_THREADS, tp_value_int(1)));
      OK(tp_compiled_call(c, 6, poison, NOUT, o, &n));
      for (int i = 0; i < NOUT; i++) tp_tensor_release(o[i]), o[i] = NULL;
      OK(tp_config_set(TP_CFG_THREADS, tp_value_int(threads)));
      if (rep == 0 && threads == 3) tp_threads_shutdown(); /* the next call starts them again */
      OK(tp_compiled_call(c, 6, in, NOUT, o, &n));
      CHECK(n == NOUT);
      if (n == NOUT && threads == 1 && rep == 0 && with_reference) check_reference(in, o);
      for (int i = 0; i < n && n == NOUT; i++) {
        int64_t m;
        float *d = data_of(o[i], &m);
        if (!first[i]) {
          first[i] = d, len[i] = m;
          continue;
        }
        CHECKF(m == len[i] && !memcmp(d, first[i], sizeof(float) * (size_t)m),
               "%s: %d threads (call %d) differs from 1 thread (isa %s)", out_names[i], threads,
               rep, isa);
        free(d);
      }
      for (int i = 0; i < NOUT; i++) tp_tensor_release(o[i]);
      /* eager conv2d (ops/exec.c's direct 1x1, im2col and depthwise paths),
       * after the same kind of poison run on one thread */
      for (int e = 0; e < 4; e++) {
        tp_tensor *wt = e == 0 ? PW_const : e == 1 ? CW_const : e == 2 ? DW_const : DW5_const, *y = NULL;
        const int64_t *pd = e == 0 ? NULL : e == 3 ? pads2 : pads1;
        int64_t groups = e >= 2 ? 16 : 1, m;
        OK(tp_config_set(TP_CFG_THREADS, tp_value_int(1)));
        OK(tp_conv2d(poison[4], wt, NULL, NULL, pd, NULL, groups, &y));
        tp_tensor_release(y), y = NULL;
        OK(tp_config_set(TP_CFG_THREADS, tp_value_int(threads)));
        OK(tp_conv2d(in[4], wt, NULL, NULL, pd, NULL, groups, &y));
        float *d = y ? data_of(y, &m) : NULL;
        tp_tensor_release(y);
        if (!d) continue;
        if (!eager_first[e]) {
          eager_first[e] = d;
          continue;
        }
        CHECKF(!memcmp(d, eager_first[e], sizeof(float) * (size_t)m),
               "eager conv2d #%d: %d threads differs from 1 thread (isa %s)", e, threads, isa);
        free(d);
      }
    }
  }
  for (int e = 0; e < 4; e++) free(eager_first[e]);
  for (int i = 0; i < 6; i++) tp_tensor_release(poison[i]);
  /* explain() names the pool and the count */
  char *ex = NULL;
  OK(tp_compiled_explain(c, &ex));
  CHECKF(ex && strstr(ex, "\"threads\": \"pthreads: 4 threads (config.threads)\""), "explain: %s",
         ex ? ex : "(null)");
  tp_free_buffer(ex);
  tp_config_reset();
  tp_threads_shutdown();
  tp_threads_shutdown(); /* twice: nothing left to stop */
  for (int i = 0; i < NOUT; i++) free(first[i]);
  tp_compiled_free(c);
  for (int i = 0; i < 6; i++) tp_tensor_release(in[i]);
  tp_tensor_release(W_const), tp_tensor_release(B_const), tp_tensor_release(CW_const);
  tp_tensor_release(PW_const), tp_tensor_release(DW_const), tp_tensor_release(DW5_const), tp_tensor_release(PW2_const);
}

static int sanitized(void) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return 1;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
  return 1;
#endif
#endif
  return 0;
}

/* A child forked after the workers started runs threaded kernels with its
 * own workers and exits (its atexit stop has no parent workers to join).
 * Not under a sanitizer: TSan refuses threads after a multi-threaded fork,
 * and LSan reports the parent's worker buffers, which the child inherits but
 * has no thread to free. */
static void test_fork(void) {
  if (sanitized()) return;
  const int64_t is[4] = {1, 16, 96, 96}, cs[4] = {32, 16, 3, 3}, pads[4] = {1, 1, 1, 1};
  tp_tensor *x = NULL, *w = NULL, *y = NULL;
  OK(tp_randn(4, is, 21, &x));
  OK(tp_randn(4, cs, 22, &w));
  OK(tp_config_set(TP_CFG_THREADS, tp_value_int(2)));
  OK(tp_conv2d(x, w, NULL, NULL, pads, NULL, 1, &y)); /* starts the workers */
  int64_t n = 0;
  float *want = y ? data_of(y, &n) : NULL;
  tp_tensor_release(y), y = NULL;
  fflush(stdout);
  pid_t pid = fork();
  if (pid == 0) {
    int ok = tp_conv2d(x, w, NULL, NULL, pads, NULL, 1, &y) == TP_OK;
    int64_t m = 0;
    float *got = ok ? data_of(y, &m) : NULL;
    ok = ok && got && want && m == n && !memcmp(got, want, sizeof(float) * (size_t)n);
    exit(ok ? 0 : 1); /* exit(): the atexit stop runs in the child */
  }
  int st = 0;
  CHECKF(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0,
         "forked child: status %d", st);
  free(want);
  tp_tensor_release(x), tp_tensor_release(w);
  tp_config_reset();
}

int main(void) {
  test_config();
  test_fork();
  /* every ISA table this CPU has: each has its own GEMM (packing, tiles);
   * under a sanitizer (slow) the best one and SSE2 (the family of vec_impl.h) */
  const char *isas[] = {"avx512", "avx2", "sse2", "generic"};
  for (int i = 0, first = 1; i < 4; i++) {
    if (sanitized() && !first && strcmp(isas[i], "sse2")) continue;
    if (tp_set_isa(isas[i]) != TP_OK) continue;
    printf("isa %s\n", isas[i]);
    test_same_bits(isas[i], first); /* the double reference once: it is slow under ASan */
    first = 0;
  }
  tp_set_isa("best");
  printf("test_threads: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
