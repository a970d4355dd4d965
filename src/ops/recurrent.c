/* recurrent.c - rnn, gru and lstm (ops.def) with ONNX's semantics: gate
 * order (lstm i o f c, gru z r h), peepholes (i o f), clip applied to the
 * input of every activation (not to lstm's h activation of C), every
 * activation ONNX allows with its alpha and beta (ops.h's TP_RNN_ACTS),
 * linear_before_reset (gru), input_forget (lstm: f = 1 - i), per-direction
 * activations, and sequence_lens: the steps of a sequence past its length
 * give zeros and keep its state, and a reverse direction starts at its last
 * valid step.
 *
 * Two implementations of one semantics:
 * - the reference (tp_op_exec_ref): the plain per-row, per-step algorithm
 *   in double (matrix-vector products in loops);
 * - the float32 kernel (eager, and stax's plan step for the op): per
 *   direction, the input projection X W^T of every step as ONE GEMM on the
 *   kernel table's packed tiles (AVX2 / AVX-512 natively, SIMD128 in Wasm)
 *   with W's and R's biases folded into its bias, then per step the
 *   recurrent GEMM H_{t-1} R^T over the whole batch and one gate pass per
 *   row (clip, peepholes, activations on the table's vector unary kernels,
 *   the state update, sequence_lens masking). At 1-2 rows (batch 1, or a
 *   one-step projection) the products run on the table's gemv instead.
 *   W^T and R^T are packed per call, or once per plan when they are
 *   constants (tp_recurrent_pack, src/lower/executor.c), like a constant
 *   GEMM weight.
 * ONNX's node tests (LSTM, GRU, RNN: expected outputs from ONNX's own
 * evaluator), onnxruntime-node (tests/js/recurrent.test.js) and the
 * hand-computed cases in tests/c/ops/test_ops_seq.c and
 * tests/c/lower/test_recurrent.c are the independent checks;
 * test_recurrent.c also holds the float32 kernel against the reference over
 * every ISA table, direction, sequence_lens and odd hidden sizes, eagerly
 * and in stax plans. */
#include "ops.h"
#include <stdint.h>
#include <math.h>

static const struct {
  const char *name;
  int nparams;
  double alpha, beta;
} act_table[TP_RNN_ACT_COUNT] = {
#define X(id, name, np, a, b) {name, np, a, b},
    TP_RNN_ACTS(X)
#undef X
};

const char *tp_rnn_act_name(int c) { return c >= 0 && c < TP_RNN_ACT_COUNT ? act_table[c].name : NULL; }

int tp_rnn_act_lookup(const char *name) {
  for (int c = 0; name && c < TP_RNN_ACT_COUNT; c++) {
    const char *a = act_table[c].name, *b = name;
    while (*a && *b && (*a | 32) == (*b | 32)) a++, b++;
    if (!*a && !*b) return c;
  }
  return -1;
}

int tp_rnn_act_nparams(int c, double *alpha, double *beta) {
  if (c < 0 || c >= TP_RNN_ACT_COUNT) return 0;
  if (alpha) *alpha = act_table[c].alpha;
  if (beta) *beta = act_table[c].beta;
  return act_table[c].nparams;
}

/* one activation with its parameters */
typedef struct {
  int code;
  double a, b;
} ract;

/* the activations of direction d: f, g, h (rnn f; gru f g) */
static void resolve_acts(tp_op op, const tp_attrs *at, int64_t d, ract *f) {
  int nact = op == TP_OP_LSTM ? 3 : op == TP_OP_GRU ? 2 : 1;
  for (int k = 0; k < nact; k++) {
    int i = (int)d * nact + k;
    f[k].code = at->nints ? (int)at->ints[i] : (op == TP_OP_RNN || k > 0) ? TP_RNN_TANH : TP_RNN_SIGMOID;
    tp_rnn_act_nparams(f[k].code, &f[k].a, &f[k].b);
    if (at->nfloats) f[k].a = at->floats[2 * i], f[k].b = at->floats[2 * i + 1];
  }
}

static double act_d(const ract *f, double v) {
  switch (f->code) {
    case TP_RNN_SIGMOID: return 1 / (1 + exp(-v));
    case TP_RNN_TANH: return tanh(v);
    case TP_RNN_RELU: return v > 0 ? v : 0;
    case TP_RNN_AFFINE: return f->a * v + f->b;
    case TP_RNN_LEAKY_RELU: return v >= 0 ? v : f->a * v;
    case TP_RNN_THRESHOLDED_RELU: return v > f->a ? v : 0;
    case TP_RNN_SCALED_TANH: return f->a * tanh(f->b * v);
    case TP_RNN_HARD_SIGMOID: {
      double y = f->a * v + f->b;
      return y < 0 ? 0 : y > 1 ? 1 : y;
    }
    case TP_RNN_ELU: return v >= 0 ? v : f->a * expm1(v);
    case TP_RNN_SOFTSIGN: return v / (1 + fabs(v));
    case TP_RNN_SOFTPLUS: return v > 0 ? v + log1p(exp(-v)) : log1p(exp(v));
    default: return v != v ? v : NAN;
  }
}

static double clip_d(double v, double c) { return c > 0 ? (v > c ? c : v < -c ? -c : v) : v; }

/* ---- the reference: per row and step, in double ---- */

/* w: [rows, k] row major; y[r] = sum_k w[r, k] x[k] */
static void mv_d(const double *w, const double *x, int64_t rows, int64_t k, double *y) {
  for (int64_t r = 0; r < rows; r++) {
    double s = 0;
    for (int64_t j = 0; j < k; j++) s += w[r * k + j] * x[j];
    y[r] = s;
  }
}

static tp_status ref_run(tp_op op, const tp_attrs *at, int64_t S, int64_t N, int64_t I, int64_t H, int64_t D,
                         const double *X, const double *W, const double *R, const double *B, const int64_t *lens,
                         const double *h0, const double *c0, const double *P, double *Y) {
  int G = op == TP_OP_LSTM ? 4 : op == TP_OP_GRU ? 3 : 1;
  int64_t GH = G * H, plane = (S + 1) * D * N * H;
  double clip = at->clip;
  double *gx = tp_alloc(sizeof(double) * (size_t)(2 * GH + 3 * H));
  if (!gx) return TP_ERR_OUT_OF_MEMORY;
  double *gh = gx + GH, *h = gh + GH, *c = h + H, *rh = c + H;
  for (int64_t d = 0; d < D; d++) {
    int rev = at->dim1 == 1 || (at->dim1 == 2 && d == 1);
    ract act[3];
    resolve_acts(op, at, d, act);
    const double *Wd = W + d * GH * I, *Rd = R + d * GH * H, *Bd = B ? B + d * 2 * GH : NULL;
    const double *Pd = P ? P + d * 3 * H : NULL;
    for (int64_t b = 0; b < N; b++) {
      int64_t L = lens ? lens[b] : S;
      for (int64_t j = 0; j < H; j++) {
        h[j] = h0 ? h0[(d * N + b) * H + j] : 0;
        c[j] = c0 ? c0[(d * N + b) * H + j] : 0;
      }
      for (int64_t s = 0; s < L; s++) {
        int64_t t = rev ? L - 1 - s : s;
        mv_d(Wd, X + (t * N + b) * I, GH, I, gx);
        if (Bd)
          for (int64_t j = 0; j < GH; j++) gx[j] += Bd[j];
        if (op == TP_OP_GRU) { /* z and r see R h; the h gate per linear_before_reset */
          mv_d(Rd, h, 2 * H, H, gh);
          for (int64_t j = 0; j < 2 * H; j++) gx[j] = act_d(&act[0], clip_d(gx[j] + gh[j] + (Bd ? Bd[GH + j] : 0), clip));
          const double *z = gx, *r = gx + H;
          if (at->keepdim) {
            mv_d(Rd + 2 * H * H, h, H, H, gh);
            for (int64_t j = 0; j < H; j++) gh[j] = r[j] * (gh[j] + (Bd ? Bd[GH + 2 * H + j] : 0));
          } else {
            for (int64_t j = 0; j < H; j++) rh[j] = r[j] * h[j];
            mv_d(Rd + 2 * H * H, rh, H, H, gh);
            for (int64_t j = 0; j < H; j++) gh[j] += Bd ? Bd[GH + 2 * H + j] : 0;
          }
          for (int64_t j = 0; j < H; j++) {
            double hh = act_d(&act[1], clip_d(gx[2 * H + j] + gh[j], clip));
            h[j] = (1 - z[j]) * hh + z[j] * h[j];
          }
        } else {
          mv_d(Rd, h, GH, H, gh);
          for (int64_t j = 0; j < GH; j++) gx[j] += gh[j] + (Bd ? Bd[GH + j] : 0);
          if (op == TP_OP_RNN) {
            for (int64_t j = 0; j < H; j++) h[j] = act_d(&act[0], clip_d(gx[j], clip));
          } else { /* lstm: gates i o f c at 0, H, 2H, 3H; peepholes i o f */
            for (int64_t j = 0; j < H; j++) {
              double i = act_d(&act[0], clip_d(gx[j] + (Pd ? Pd[j] * c[j] : 0), clip));
              double f = at->keepdim ? 1 - i : act_d(&act[0], clip_d(gx[2 * H + j] + (Pd ? Pd[2 * H + j] * c[j] : 0), clip));
              double g = act_d(&act[1], clip_d(gx[3 * H + j], clip));
              c[j] = f * c[j] + i * g;
              double o = act_d(&act[0], clip_d(gx[H + j] + (Pd ? Pd[H + j] * c[j] : 0), clip));
              h[j] = o * act_d(&act[2], c[j]);
            }
          }
        }
        for (int64_t j = 0; j < H; j++) {
          Y[((t * D + d) * N + b) * H + j] = h[j];
          Y[plane + ((t * D + d) * N + b) * H + j] = op == TP_OP_LSTM ? c[j] : 0;
        }
      }
      for (int64_t j = 0; j < H; j++) {
        Y[((S * D + d) * N + b) * H + j] = h[j];
        Y[plane + ((S * D + d) * N + b) * H + j] = op == TP_OP_LSTM ? c[j] : 0;
      }
    }
  }
  tp_free(gx);
  return TP_OK;
}

/* ---- the float32 kernel: GEMMs on the kernel table and a gate pass ---- */

/* W_d^T [I, GH] and R_d^T [H, GH] of every direction packed for the table
 * k's GEMM; gru with linear_before_reset 0 keeps R's z r columns [H, 2H]
 * and its h columns [H, H] apart (the h product needs r first). Also W_d^T
 * and R_d^T as plain row-major copies for the table's gemv, which runs the
 * products of few rows (a batch of 1: the GEMM would compute a whole tile
 * of rows for one). One allocation: tp_free frees it. */
struct tp_rnn_pack {
  const tp_kernels *k;
  int D, split;
  int64_t I, H, GH, cb; /* cb: the gemv blocks' width, 4 vectors */
  size_t wbytes, rbytes, hbytes, wtbytes, rtbytes; /* per direction, each a multiple of 64 */
  char *base;                    /* 64-aligned inside the block */
};

/* rows up to this many run on gemv, row by row */
#define GEMV_ROWS 2

static size_t up64(size_t n) { return (n + 63) & ~(size_t)63; }

static const float *pk_w(const tp_rnn_pack *p, int64_t d) {
  return (const float *)(p->base + (size_t)d * (p->wbytes + p->rbytes + p->hbytes + p->wtbytes + p->rtbytes));
}
static const float *pk_r(const tp_rnn_pack *p, int64_t d) { return (const float *)((const char *)pk_w(p, d) + p->wbytes); }
static const float *pk_rh(const tp_rnn_pack *p, int64_t d) { return (const float *)((const char *)pk_r(p, d) + p->rbytes); }
static const float *pk_wt(const tp_rnn_pack *p, int64_t d) { return (const float *)((const char *)pk_rh(p, d) + p->hbytes); }
static const float *pk_rt(const tp_rnn_pack *p, int64_t d) { return (const float *)((const char *)pk_wt(p, d) + p->wtbytes); }

/* For gemv: src [n, K] (W or R of one direction: row j holds output column
 * j) as blocks of cb columns from c0 to c1, each block [K, w] row major at
 * dst + j0 K, so that each gemv call streams contiguous memory. */
static void block_t(const float *src, int64_t K, int64_t c0, int64_t c1, int64_t cb, float *dst) {
  for (int64_t j0 = c0; j0 < c1; j0 += cb) {
    int64_t w = c1 - j0 < cb ? c1 - j0 : cb;
    float *blk = dst + j0 * K;
    for (int64_t k = 0; k < K; k++)
      for (int64_t j = 0; j < w; j++) blk[k * w + j] = src[(j0 + j) * K + k];
  }
}
/* y[c0, c1) = x B[:, c0:c1] (+ bias[c0, c1)) over block_t's blocks */
static void gemv_blocked(const tp_kernels *k, const float *x, int64_t K, const float *B, int64_t c0, int64_t c1,
                         int64_t cb, float *y, const float *bias) {
  for (int64_t j0 = c0; j0 < c1; j0 += cb) {
    int64_t w = c1 - j0 < cb ? c1 - j0 : cb;
    k->gemv_f32(w, K, x, B + j0 * K, w, y + j0, bias ? bias + j0 : NULL);
  }
}

/* gemm, gemv: which layouts to make (a per-call pack makes only the ones its rows use) */
static tp_status pack_new(tp_op op, const tp_attrs *at, int64_t D, int64_t I, int64_t H, const float *W, const float *R,
                          int gemm, int gemv, tp_rnn_pack **out) {
  const tp_kernels *k = tp_kern();
  int G = op == TP_OP_LSTM ? 4 : op == TP_OP_GRU ? 3 : 1, split = op == TP_OP_GRU && !at->keepdim;
  int64_t GH = G * H, RN = split ? 2 * H : GH;
  /* every layout of W and R, with room for the packing's padding: more than a
   * 32-bit (Wasm) size_t holds is an error, never a wrapped size */
  double need = (double)D * (double)GH * ((double)I + (double)H) * sizeof(float) * 6.0 + 65536.0;
  if (need > (double)(SIZE_MAX / 2))
    return tp_fail(TP_ERR_OUT_OF_MEMORY, "%s: packing W and R needs about %.0f bytes, more than this build can address",
                   tp_op_name(op), need);
  size_t wb = gemm ? up64(k->gemm_pack_b_size(I, GH)) : 0, rb = gemm ? up64(k->gemm_pack_b_size(H, RN)) : 0,
         hb = gemm && split ? up64(k->gemm_pack_b_size(H, H)) : 0, wtb = gemv ? up64(sizeof(float) * (size_t)(I * GH)) : 0,
         rtb = gemv ? up64(sizeof(float) * (size_t)(H * GH)) : 0;
  size_t total = sizeof(tp_rnn_pack) + 64 + (size_t)D * (wb + rb + hb + wtb + rtb);
  tp_rnn_pack *p = tp_alloc(total);
  if (!p) return tp_fail(TP_ERR_OUT_OF_MEMORY, "%s: out of memory packing W and R (%zu bytes)", tp_op_name(op), total);
  *p = (tp_rnn_pack){k, (int)D, split, I, H, GH, 4 * (int64_t)k->vec_width, wb, rb, hb, wtb, rtb, NULL};
  p->base = (char *)(((uintptr_t)(p + 1) + 63) & ~(uintptr_t)63);
  for (int64_t d = 0; d < D; d++) {
    const float *Wd = W + d * GH * I, *Rd = R + d * GH * H;
    if (wb) k->gemm_pack_b(I, GH, Wd, 1, I, (float *)pk_w(p, d)); /* B[i, j] = W[j, i] */
    if (rb) k->gemm_pack_b(H, RN, Rd, 1, H, (float *)pk_r(p, d));
    if (hb) k->gemm_pack_b(H, H, Rd + 2 * H * H, 1, H, (float *)pk_rh(p, d));
    if (gemv) block_t(Wd, I, 0, GH, p->cb, (float *)pk_wt(p, d));
    if (gemv) block_t(Rd, H, 0, RN, p->cb, (float *)pk_rt(p, d));
    if (gemv && split) block_t(Rd, H, 2 * H, GH, p->cb, (float *)pk_rt(p, d));
  }
  *out = p;
  return TP_OK;
}

tp_status tp_recurrent_pack(tp_op op, const tp_attrs *at, const tp_tensor *w, const tp_tensor *r, tp_rnn_pack **out) {
  *out = NULL;
  if (w->dtype != TP_F32 || r->dtype != TP_F32 || w->ndim != 3 || r->ndim != 3 || !tp_tensor_is_contiguous(w) ||
      !tp_tensor_is_contiguous(r))
    return TP_OK; /* packed per call */
  return pack_new(op, at, w->shape[0], w->shape[2], r->shape[2], tp_tensor_ptr((tp_tensor *)w),
                  tp_tensor_ptr((tp_tensor *)r), 1, 1, out);
}

/* v[0, n) = f(v), in place: the table's vector kernels for sigmoid, tanh
 * and relu, the double formulas for the rest */
static void act_f(const tp_kernels *k, const ract *f, float *v, int64_t n) {
  switch (f->code) {
    case TP_RNN_SIGMOID: k->unary_f32(TP_KU_SIGMOID, v, v, n); return;
    case TP_RNN_TANH: k->unary_f32(TP_KU_TANH, v, v, n); return;
    case TP_RNN_RELU: k->unary_f32(TP_KU_RELU, v, v, n); return;
    default:
      for (int64_t j = 0; j < n; j++) v[j] = (float)act_d(f, v[j]);
  }
}
static void clip_f(float *v, int64_t n, double c) {
  if (!(c > 0)) return;
  float hi = (float)c, lo = -hi;
  for (int64_t j = 0; j < n; j++) v[j] = v[j] > hi ? hi : v[j] < lo ? lo : v[j];
}

typedef struct {
  tp_op op;
  const tp_attrs *at;
  int64_t S, N, I, H, D;
  const float *X, *W, *R, *B, *h0, *c0, *P;
  const int64_t *lens;
  float *Y;
} rjob;

static tp_status f32_run(const rjob *j, const tp_rnn_pack *pk) {
  const tp_kernels *k = pk->k;
  tp_op op = j->op;
  const tp_attrs *at = j->at;
  int G = op == TP_OP_LSTM ? 4 : op == TP_OP_GRU ? 3 : 1, lbr = op == TP_OP_GRU && at->keepdim;
  int64_t S = j->S, N = j->N, I = j->I, H = j->H, D = j->D, GH = G * H, plane = (S + 1) * D * N * H;
  double clip = at->clip;
  /* xw [S*N, GH], gh [N, GH], h c rh [N, H], bx br [GH], tmp [H] */
  double nfd = (double)S * (double)N * (double)GH + (double)N * (double)GH + 3.0 * (double)N * (double)H + 2.0 * (double)GH + (double)H;
  if (nfd * sizeof(float) > (double)(SIZE_MAX / 2)) /* a 32-bit (Wasm) size_t: an error, never a wrapped size */
    return tp_fail(TP_ERR_OUT_OF_MEMORY, "%s: the work space of %.0f floats is more than this build can address",
                   tp_op_name(op), nfd);
  size_t nf = (size_t)(S * N * GH + N * GH + 3 * N * H + 2 * GH + H);
  float *xw = tp_alloc(sizeof(float) * (nf ? nf : 1));
  if (!xw) return tp_fail(TP_ERR_OUT_OF_MEMORY, "%s: out of memory (%zu floats of work space)", tp_op_name(op), nf);
  float *gh = xw + S * N * GH, *h = gh + N * GH, *c = h + N * H, *rh = c + N * H, *bx = rh + N * H, *br = bx + GH,
        *tmp = br + GH;
  memset(rh, 0, sizeof(float) * (size_t)(N * H)); /* rows past their length stay defined */
  int64_t maxL = 0;
  for (int64_t b = 0; b < N; b++) maxL = j->lens ? (j->lens[b] > maxL ? j->lens[b] : maxL) : S;
  for (int64_t d = 0; d < D; d++) {
    int rev = at->dim1 == 1 || (at->dim1 == 2 && d == 1);
    ract act[3];
    resolve_acts(op, at, d, act);
    const float *Bd = j->B ? j->B + d * 2 * GH : NULL, *Pd = j->P ? j->P + d * 3 * H : NULL;
    /* biases: Wb + Rb into the input GEMM, except gru's Rbh with
     * linear_before_reset, which the recurrent GEMM adds (inside r * (.)) */
    for (int64_t q = 0; q < GH; q++) {
      int rec = lbr && q >= 2 * H;
      bx[q] = Bd ? Bd[q] + (rec ? 0 : Bd[GH + q]) : 0;
      br[q] = Bd && rec ? Bd[GH + q] : 0;
    }
    /* the input projection of every step: one GEMM */
    if (S * N > GEMV_ROWS && pk->wbytes) k->gemm_f32_packed(S * N, GH, I, j->X, I, 1, pk_w(pk, d), xw, GH, bx);
    else
      for (int64_t r = 0; r < S * N; r++) /* (or I = 0: no packed W, the bias) */
        gemv_blocked(k, j->X + r * I, I, pk_wt(pk, d), 0, GH, pk->cb, xw + r * GH, bx);
    for (int64_t b = 0; b < N; b++)
      for (int64_t q = 0; q < H; q++) {
        h[b * H + q] = j->h0 ? j->h0[(d * N + b) * H + q] : 0;
        c[b * H + q] = j->c0 ? j->c0[(d * N + b) * H + q] : 0;
      }
    int64_t RN = pk->split ? 2 * H : GH;
    for (int64_t s = 0; s < maxL; s++) {
      /* the recurrent GEMM over the whole batch: gh = H_{t-1} R^T (+ Rbh) */
      if (N > GEMV_ROWS) k->gemm_f32_packed(N, RN, H, h, H, 1, pk_r(pk, d), gh, GH, lbr ? br : NULL);
      else
        for (int64_t b = 0; b < N; b++) gemv_blocked(k, h + b * H, H, pk_rt(pk, d), 0, RN, pk->cb, gh + b * GH, lbr ? br : NULL);
      if (pk->split) { /* gru, linear_before_reset 0: z r first, then R_h (r h) */
        for (int64_t b = 0; b < N; b++) {
          int64_t L = j->lens ? j->lens[b] : S;
          if (s >= L) continue;
          int64_t t = rev ? L - 1 - s : s;
          float *g = gh + b * GH;
          const float *x = xw + (t * N + b) * GH;
          for (int64_t q = 0; q < 2 * H; q++) g[q] += x[q];
          clip_f(g, 2 * H, clip);
          act_f(k, &act[0], g, 2 * H);
          for (int64_t q = 0; q < H; q++) rh[b * H + q] = g[H + q] * h[b * H + q];
        }
        if (N > GEMV_ROWS) k->gemm_f32_packed(N, H, H, rh, H, 1, pk_rh(pk, d), gh + 2 * H, GH, NULL);
        else
          for (int64_t b = 0; b < N; b++) gemv_blocked(k, rh + b * H, H, pk_rt(pk, d), 2 * H, GH, pk->cb, gh + b * GH, NULL);
      }
      /* the gate pass, one row at a time */
      for (int64_t b = 0; b < N; b++) {
        int64_t L = j->lens ? j->lens[b] : S;
        if (s >= L) continue;
        int64_t t = rev ? L - 1 - s : s;
        float *g = gh + b * GH, *hb = h + b * H, *cb = c + b * H;
        const float *x = xw + (t * N + b) * GH;
        if (op == TP_OP_RNN) {
          for (int64_t q = 0; q < H; q++) g[q] += x[q];
          clip_f(g, H, clip);
          act_f(k, &act[0], g, H);
          memcpy(hb, g, sizeof(float) * (size_t)H);
        } else if (op == TP_OP_GRU) {
          float *z = g, *r = g + H, *hh = g + 2 * H;
          if (!pk->split) { /* linear_before_reset: z r here; hh = x_h + r (R_h h + Rbh) */
            for (int64_t q = 0; q < 2 * H; q++) g[q] += x[q];
            clip_f(g, 2 * H, clip);
            act_f(k, &act[0], g, 2 * H);
            for (int64_t q = 0; q < H; q++) hh[q] = x[2 * H + q] + r[q] * hh[q];
          } else {
            for (int64_t q = 0; q < H; q++) hh[q] += x[2 * H + q];
          }
          clip_f(hh, H, clip);
          act_f(k, &act[1], hh, H);
          for (int64_t q = 0; q < H; q++) hb[q] = (1 - z[q]) * hh[q] + z[q] * hb[q];
        } else { /* lstm: i o f c at 0, H, 2H, 3H */
          float *gi = g, *go = g + H, *gf = g + 2 * H, *gc = g + 3 * H;
          for (int64_t q = 0; q < GH; q++) g[q] += x[q];
          if (Pd)
            for (int64_t q = 0; q < H; q++) gi[q] += Pd[q] * cb[q], gf[q] += Pd[2 * H + q] * cb[q];
          if (!Pd) { /* i o f contiguous */
            clip_f(g, 3 * H, clip);
            act_f(k, &act[0], g, at->keepdim ? 2 * H : 3 * H);
          } else {
            clip_f(gi, H, clip);
            act_f(k, &act[0], gi, H);
            if (!at->keepdim) {
              clip_f(gf, H, clip);
              act_f(k, &act[0], gf, H);
            }
          }
          if (at->keepdim)
            for (int64_t q = 0; q < H; q++) gf[q] = 1 - gi[q];
          clip_f(gc, H, clip);
          act_f(k, &act[1], gc, H);
          for (int64_t q = 0; q < H; q++) cb[q] = gf[q] * cb[q] + gi[q] * gc[q];
          if (Pd) {
            for (int64_t q = 0; q < H; q++) go[q] += Pd[H + q] * cb[q];
            clip_f(go, H, clip);
            act_f(k, &act[0], go, H);
          }
          memcpy(tmp, cb, sizeof(float) * (size_t)H);
          act_f(k, &act[2], tmp, H);
          for (int64_t q = 0; q < H; q++) hb[q] = go[q] * tmp[q];
        }
        float *y = j->Y + ((t * D + d) * N + b) * H;
        memcpy(y, hb, sizeof(float) * (size_t)H);
        if (op == TP_OP_LSTM) memcpy(y + plane, cb, sizeof(float) * (size_t)H);
      }
    }
    for (int64_t b = 0; b < N; b++) {
      float *y = j->Y + ((S * D + d) * N + b) * H;
      memcpy(y, h + b * H, sizeof(float) * (size_t)H);
      if (op == TP_OP_LSTM) memcpy(y + plane, c + b * H, sizeof(float) * (size_t)H);
    }
  }
  tp_free(xw);
  return TP_OK;
}

/* The elements of t (any layout; NULL: none) as float or double; *owned:
 * whether *out was allocated (a contiguous float32 t is read in place when
 * can_borrow). */
static tp_status load(tp_tensor *t, int dbl, int can_borrow, void **out, int *owned) {
  *out = NULL, *owned = 0;
  if (!t) return TP_OK;
  if (!dbl && can_borrow && t->dtype == TP_F32 && tp_tensor_is_contiguous(t)) {
    *out = tp_tensor_ptr(t);
    return TP_OK;
  }
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
  *out = p, *owned = 1;
  return TP_OK;
}

/* the sequence lengths (NULL: none), each checked against 0..S */
static tp_status load_lens(tp_op op, int nin, tp_tensor *const *in, int64_t S, int64_t N, int64_t **out) {
  *out = NULL;
  if (nin <= 4 || !in[4]) return TP_OK;
  int64_t *lens = tp_alloc(sizeof(int64_t) * (size_t)(N ? N : 1));
  if (!lens) return TP_ERR_OUT_OF_MEMORY;
  for (int64_t b = 0; b < N; b++) {
    double v = tp_tensor_get_f64(in[4], b);
    if (v < 0 || v > (double)S) {
      tp_free(lens);
      return tp_fail(TP_ERR_INVALID_ARG, "%s: sequence_lens[%lld] = %.0f is outside 0..%lld", tp_op_name(op),
                     (long long)b, v, (long long)S);
    }
    lens[b] = (int64_t)v;
  }
  *out = lens;
  return TP_OK;
}

tp_status tp_recurrent_into(tp_op op, int nin, tp_tensor *const *in, const tp_attrs *at, const tp_rnn_pack *pre,
                            tp_tensor *y) {
  int64_t S = in[0]->shape[0], N = in[0]->shape[1], I = in[0]->shape[2], H = y->shape[4], D = y->shape[2];
  void *buf[8] = {0};
  int own[8] = {0};
  int64_t *lens = NULL;
  tp_rnn_pack *mine = NULL;
  tp_status s = load_lens(op, nin, in, S, N, &lens);
  int need_wr = !pre || pre->k != tp_kern() || pre->I != I || pre->H != H || pre->D != D;
  for (int i = 0; i < nin && i < 8 && !s; i++)
    if (i != 4 && (need_wr || (i != 1 && i != 2))) s = load(in[i], 0, 1, &buf[i], &own[i]);
  if (!s && need_wr) {
    int gemm = S * N > GEMV_ROWS || N > GEMV_ROWS, gemv = S * N <= GEMV_ROWS || N <= GEMV_ROWS;
    s = pack_new(op, at, D, I, H, buf[1], buf[2], gemm, gemv, &mine), pre = mine;
  }
  if (!s) {
    memset(tp_tensor_ptr(y), 0, sizeof(float) * (size_t)tp_tensor_numel(y));
    rjob j = {op, at, S, N, I, H, D, buf[0], buf[1], buf[2], buf[3], buf[5], nin > 6 ? buf[6] : NULL,
              nin > 7 ? buf[7] : NULL, lens, tp_tensor_ptr(y)};
    s = f32_run(&j, pre);
  }
  for (int i = 0; i < 8; i++)
    if (own[i]) tp_free(buf[i]);
  tp_free(lens);
  tp_free(mine);
  return s;
}

tp_status tp_recurrent_exec(tp_op op, int nin, tp_tensor *const *in, const tp_attrs *at, const tp_desc *od,
                            int reference, tp_tensor **out) {
  int64_t S = in[0]->shape[0], N = in[0]->shape[1], I = in[0]->shape[2], H = od->shape[4], D = od->shape[2];
  tp_tensor *y = NULL;
  tp_status s = tp_tensor_empty(TP_F32, od->ndim, od->shape, &y);
  if (!s && !reference) s = tp_recurrent_into(op, nin, in, at, NULL, y);
  else if (!s) {
    void *buf[8] = {0};
    int own[8] = {0};
    int64_t *lens = NULL;
    int64_t n = tp_tensor_numel(y);
    double *Y = tp_alloc(sizeof(double) * (size_t)(n ? n : 1));
    s = Y ? load_lens(op, nin, in, S, N, &lens) : TP_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < nin && i < 8 && !s; i++)
      if (i != 4) s = load(in[i], 1, 0, &buf[i], &own[i]);
    if (!s) {
      memset(Y, 0, sizeof(double) * (size_t)n);
      s = ref_run(op, at, S, N, I, H, D, buf[0], buf[1], buf[2], buf[3], lens, buf[5], buf[6], buf[7], Y);
      for (int64_t i = 0; !s && i < n; i++) ((float *)tp_tensor_ptr(y))[i] = (float)Y[i];
    }
    for (int i = 0; i < 8; i++)
      if (own[i]) tp_free(buf[i]);
    tp_free(lens);
    tp_free(Y);
  }
  if (s) tp_tensor_release(y);
  else *out = y;
  return s;
}
