/* recurrent.c - rnn, gru and lstm (ops.def) with ONNX's semantics: gate
 * order (lstm i o f c, gru z r h), peepholes (i o f), clip applied to the
 * input of every activation, linear_before_reset (gru), input_forget (lstm:
 * f = 1 - i), per-direction activations, and sequence_lens: the steps of a
 * sequence past its length give zeros and keep its state, and a reverse
 * direction starts at its last valid step.
 *
 * One algorithm, written once over a real type: the eager kernel runs it in
 * float32, the reference (tp_op_exec_ref) in double. ONNX's node tests
 * (LSTM, GRU, RNN: expected outputs from ONNX's own evaluator) and the
 * hand-computed cases in tests/c/ops/test_ops.c are the independent checks.
 * Per step and batch row the work is small matrix-vector products
 * (G*hidden x input and G*hidden x hidden), done here in plain loops; the
 * stax lowering to one input GEMM plus a per-step GEMM and a fused gate
 * kernel is still to come (docs/onnx.md). */
#include "ops.h"
#include <math.h>

enum { ACT_SIGMOID, ACT_TANH, ACT_RELU };

#define DEFINE_RECURRENT(NAME, T)                                                                            \
  static T NAME##_act(int code, T v) {                                                                        \
    return code == ACT_SIGMOID ? (T)1 / ((T)1 + (T)exp(-(double)v))                                          \
           : code == ACT_TANH  ? (T)tanh((double)v)                                                            \
                               : (v > 0 ? v : 0);                                                              \
  }                                                                                                           \
  static T NAME##_clip(T v, double c) { return c > 0 ? (v > (T)c ? (T)c : v < (T)-c ? (T)-c : v) : v; }      \
  /* w: [rows, k] row major; y[r] = sum_k w[r, k] x[k] */                                                    \
  static void NAME##_mv(const T *w, const T *x, int64_t rows, int64_t k, T *y) {                             \
    for (int64_t r = 0; r < rows; r++) {                                                                     \
      T s = 0;                                                                                               \
      for (int64_t j = 0; j < k; j++) s += w[r * k + j] * x[j];                                              \
      y[r] = s;                                                                                              \
    }                                                                                                        \
  }                                                                                                          \
  static tp_status NAME##_run(tp_op op, const tp_attrs *at, int64_t S, int64_t N, int64_t I, int64_t H,      \
                              int64_t D, const T *X, const T *W, const T *R, const T *B, const int64_t *lens, \
                              const T *h0, const T *c0, const T *P, T *Y) {                                   \
    int G = op == TP_OP_LSTM ? 4 : op == TP_OP_GRU ? 3 : 1, nact = op == TP_OP_LSTM ? 3 : op == TP_OP_GRU ? 2 : 1; \
    int64_t GH = G * H, plane = (S + 1) * D * N * H;                                                          \
    T *gx = tp_alloc(sizeof(T) * (size_t)(2 * GH + 3 * H));                                                  \
    if (!gx) return TP_ERR_OUT_OF_MEMORY;                                                                     \
    T *gh = gx + GH, *h = gh + GH, *c = h + H, *rh = c + H;                                                  \
    for (int64_t d = 0; d < D; d++) {                                                                         \
      int rev = at->dim1 == 1 || (at->dim1 == 2 && d == 1), act[3];                                           \
      for (int k = 0; k < nact; k++)                                                                          \
        act[k] = at->nints ? (int)at->ints[d * nact + k] : (op == TP_OP_RNN || k > 0) ? ACT_TANH : ACT_SIGMOID; \
      const T *Wd = W + d * GH * I, *Rd = R + d * GH * H, *Bd = B ? B + d * 2 * GH : NULL;                  \
      const T *Pd = P ? P + d * 3 * H : NULL;                                                                 \
      for (int64_t b = 0; b < N; b++) {                                                                       \
        int64_t L = lens ? lens[b] : S;                                                                       \
        for (int64_t j = 0; j < H; j++) {                                                                     \
          h[j] = h0 ? h0[(d * N + b) * H + j] : 0;                                                            \
          c[j] = c0 ? c0[(d * N + b) * H + j] : 0;                                                            \
        }                                                                                                     \
        for (int64_t s = 0; s < L; s++) {                                                                     \
          int64_t t = rev ? L - 1 - s : s;                                                                    \
          NAME##_mv(Wd, X + (t * N + b) * I, GH, I, gx);                                                      \
          if (Bd)                                                                                             \
            for (int64_t j = 0; j < GH; j++) gx[j] += Bd[j];                                                  \
          if (op == TP_OP_GRU) { /* z and r see R h; the h gate per linear_before_reset */                    \
            NAME##_mv(Rd, h, 2 * H, H, gh);                                                                   \
            for (int64_t j = 0; j < 2 * H; j++) {                                                             \
              T v = NAME##_clip(gx[j] + gh[j] + (Bd ? Bd[GH + j] : 0), at->clip);                             \
              gx[j] = NAME##_act(act[0], v);                                                                  \
            }                                                                                                 \
            const T *z = gx, *r = gx + H;                                                                     \
            if (at->keepdim) {                                                                                \
              NAME##_mv(Rd + 2 * H * H, h, H, H, gh);                                                         \
              for (int64_t j = 0; j < H; j++) gh[j] = r[j] * (gh[j] + (Bd ? Bd[GH + 2 * H + j] : 0));         \
            } else {                                                                                          \
              for (int64_t j = 0; j < H; j++) rh[j] = r[j] * h[j];                                            \
              NAME##_mv(Rd + 2 * H * H, rh, H, H, gh);                                                        \
              for (int64_t j = 0; j < H; j++) gh[j] += Bd ? Bd[GH + 2 * H + j] : 0;                           \
            }                                                                                                 \
            for (int64_t j = 0; j < H; j++) {                                                                 \
              T hh = NAME##_act(act[1], NAME##_clip(gx[2 * H + j] + gh[j], at->clip));                        \
              h[j] = ((T)1 - z[j]) * hh + z[j] * h[j];                                                        \
            }                                                                                                 \
          } else {                                                                                            \
            NAME##_mv(Rd, h, GH, H, gh);                                                                      \
            for (int64_t j = 0; j < GH; j++) gx[j] += gh[j] + (Bd ? Bd[GH + j] : 0);                          \
            if (op == TP_OP_RNN) {                                                                            \
              for (int64_t j = 0; j < H; j++) h[j] = NAME##_act(act[0], NAME##_clip(gx[j], at->clip));        \
            } else { /* lstm: gates i o f c at 0, H, 2H, 3H; peepholes i o f */                               \
              for (int64_t j = 0; j < H; j++) {                                                               \
                T i = NAME##_act(act[0], NAME##_clip(gx[j] + (Pd ? Pd[j] * c[j] : 0), at->clip));             \
                T f = at->keepdim ? (T)1 - i                                                                   \
                                  : NAME##_act(act[0], NAME##_clip(gx[2 * H + j] + (Pd ? Pd[2 * H + j] * c[j] : 0), at->clip)); \
                T g = NAME##_act(act[1], NAME##_clip(gx[3 * H + j], at->clip));                               \
                c[j] = f * c[j] + i * g;                                                                      \
                T o = NAME##_act(act[0], NAME##_clip(gx[H + j] + (Pd ? Pd[H + j] * c[j] : 0), at->clip));     \
                h[j] = o * NAME##_act(act[2], c[j]);                                                          \
              }                                                                                               \
            }                                                                                                 \
          }                                                                                                   \
          for (int64_t j = 0; j < H; j++) {                                                                   \
            Y[((t * D + d) * N + b) * H + j] = h[j];                                                          \
            Y[plane + ((t * D + d) * N + b) * H + j] = op == TP_OP_LSTM ? c[j] : 0;                           \
          }                                                                                                   \
        }                                                                                                     \
        for (int64_t j = 0; j < H; j++) {                                                                     \
          Y[((S * D + d) * N + b) * H + j] = h[j];                                                            \
          Y[plane + ((S * D + d) * N + b) * H + j] = op == TP_OP_LSTM ? c[j] : 0;                             \
        }                                                                                                     \
      }                                                                                                       \
    }                                                                                                         \
    tp_free(gx);                                                                                              \
    return TP_OK;                                                                                             \
  }

DEFINE_RECURRENT(f32, float)
DEFINE_RECURRENT(f64, double)

/* The elements of t (any layout; NULL: none) as float or double. */
static tp_status load(tp_tensor *t, int dbl, void **out) {
  *out = NULL;
  if (!t) return TP_OK;
  int64_t n = tp_tensor_numel(t);
  void *p = tp_alloc((dbl ? sizeof(double) : sizeof(float)) * (size_t)(n ? n : 1));
  if (!p) return TP_ERR_OUT_OF_MEMORY;
  if (!dbl && t->dtype == TP_F32) tp_tensor_gather(t, p);
  else
    for (int64_t i = 0; i < n; i++) {
      double v = tp_tensor_get_f64(t, i);
      if (dbl) ((double *)p)[i] = v;
      else ((float *)p)[i] = (float)v;
    }
  *out = p;
  return TP_OK;
}

tp_status tp_recurrent_exec(tp_op op, int nin, tp_tensor *const *in, const tp_attrs *at, const tp_desc *od,
                            int reference, tp_tensor **out) {
  int64_t S = in[0]->shape[0], N = in[0]->shape[1], I = in[0]->shape[2], H = od->shape[4], D = od->shape[2];
  void *buf[8] = {0};
  int64_t *lens = NULL;
  tp_tensor *y = NULL;
  tp_status s = TP_OK;
  for (int i = 0; i < nin && i < 8 && !s; i++)
    if (i != 4) s = load(in[i], reference, &buf[i]);
  if (!s && nin > 4 && in[4]) {
    if (!(lens = tp_alloc(sizeof(int64_t) * (size_t)(N ? N : 1)))) s = TP_ERR_OUT_OF_MEMORY;
    for (int64_t b = 0; !s && b < N; b++) {
      double v = tp_tensor_get_f64(in[4], b);
      if (v < 0 || v > (double)S)
        s = tp_fail(TP_ERR_INVALID_ARG, "%s: sequence_lens[%lld] = %.0f is outside 0..%lld", tp_op_name(op),
                    (long long)b, v, (long long)S);
      else lens[b] = (int64_t)v;
    }
  }
  if (!s) s = tp_tensor_empty(TP_F32, od->ndim, od->shape, &y);
  if (!s) {
    int64_t n = tp_tensor_numel(y);
    if (reference) {
      double *Y = tp_alloc(sizeof(double) * (size_t)(n ? n : 1));
      if (!Y) s = TP_ERR_OUT_OF_MEMORY;
      else {
        memset(Y, 0, sizeof(double) * (size_t)n);
        s = f64_run(op, at, S, N, I, H, D, buf[0], buf[1], buf[2], buf[3], lens, buf[5], buf[6], buf[7], Y);
        for (int64_t i = 0; !s && i < n; i++) ((float *)tp_tensor_ptr(y))[i] = (float)Y[i];
        tp_free(Y);
      }
    } else {
      memset(tp_tensor_ptr(y), 0, sizeof(float) * (size_t)n);
      s = f32_run(op, at, S, N, I, H, D, buf[0], buf[1], buf[2], buf[3], lens, buf[5], buf[6], buf[7],
                  tp_tensor_ptr(y));
    }
  }
  for (int i = 0; i < 8; i++) tp_free(buf[i]);
  tp_free(lens);
  if (s) tp_tensor_release(y);
  else *out = y;
  return s;
}
