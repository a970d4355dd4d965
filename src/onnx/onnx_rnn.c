/* onnx_rnn.c - RNN, GRU and LSTM as the rnn / gru / lstm ops (ops.def,
 * src/ops/recurrent.c): the attributes become op attributes, layout 1
 * becomes transposes around the op, and the outputs Y, Y_h, Y_c are slices
 * of the op's packed result [2, seq + 1, dirs, batch, hidden]. */
#include "import.h"
#include <math.h>

static tp_status permute(imp *m, ref x, int nd, const int64_t *perm, ref *out) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.nints = nd;
  memcpy(at.ints, perm, sizeof(int64_t) * (size_t)nd);
  return tp_onnx_emit(m, TP_OP_PERMUTE, 1, &x, &at, out);
}

/* y = packed[plane, t] as [dirs, batch, hidden] (t = seq: the final state)
 * or packed[0, :seq] as [seq, dirs, batch, hidden]. */
static tp_status unpack(imp *m, ref packed, int plane, int64_t t, int all, ref *y) {
  tp_desc d = tp_onnx_desc(m, packed);
  int64_t S = d.shape[1] - 1;
  TP_TRY(tp_onnx_slice(m, packed, 0, plane, plane + 1, 1, y));
  TP_TRY(tp_onnx_slice(m, *y, 1, all ? 0 : t, all ? S : t + 1, 1, y));
  int64_t sh[4] = {S, d.shape[2], d.shape[3], d.shape[4]};
  return all ? tp_onnx_reshape(m, *y, 4, sh, y) : tp_onnx_reshape(m, *y, 3, sh + 1, y);
}

/* arg: the tp_op (TP_OP_RNN, TP_OP_GRU, TP_OP_LSTM) */
tp_status tp_onnx_cv_recurrent(imp *m, onode *n, int arg) {
  tp_op op = (tp_op)arg;
  int nops = op == TP_OP_LSTM ? 8 : 6, nact = op == TP_OP_LSTM ? 3 : op == TP_OP_GRU ? 2 : 1;
  ref a[8], y;
  for (int i = 0; i < nops; i++) TP_TRY(i < 3 ? tp_onnx_need_in(m, n, i, &a[i]) : tp_onnx_in(m, n, i, &a[i]));
  tp_attrs at;
  tp_attrs_init(&at);
  at.clip = tp_onnx_attr_float(m, n, "clip", 0);
  if (!(at.clip >= 0)) return tp_fail(TP_ERR_INVALID_ARG, "clip must be >= 0, got %g", at.clip);
  at.dim = tp_onnx_attr_int(m, n, "hidden_size", 0);
  const char *dir = tp_onnx_attr_str(m, n, "direction", "forward");
  at.dim1 = !strcmp(dir, "forward") ? 0 : !strcmp(dir, "reverse") ? 1 : !strcmp(dir, "bidirectional") ? 2 : -1;
  if (at.dim1 < 0) return tp_fail(TP_ERR_INVALID_ARG, "direction '%s' is not forward, reverse or bidirectional", dir);
  int D = at.dim1 == 2 ? 2 : 1;
  at.keepdim = (int)tp_onnx_attr_int(m, n, op == TP_OP_LSTM ? "input_forget" : "linear_before_reset", 0);
  if (op == TP_OP_RNN && at.keepdim) return tp_fail(TP_ERR_INVALID_ARG, "RNN has no linear_before_reset");
  attr *acts = tp_onnx_attr(m, n, "activations", A_STRINGS);
  attr *alpha = tp_onnx_attr(m, n, "activation_alpha", A_FLOATS), *beta = tp_onnx_attr(m, n, "activation_beta", A_FLOATS);
  int nalpha = alpha ? (int)alpha->nfloats : 0, nbeta = beta ? (int)beta->nfloats : 0, ua = 0, ub = 0;
  if (acts) {
    if ((int)acts->nstrings != nact * D)
      return tp_fail(TP_ERR_INVALID_ARG, "%d activations, expected %d (%d per direction)", (int)acts->nstrings, nact * D, nact);
    at.nints = (int)acts->nstrings;
    at.nfloats = 2 * at.nints;
    /* ONNX: alpha and beta are consumed in the order of the activations,
     * each by the activations that read one; missing ones are the defaults */
    for (int i = 0; i < at.nints; i++) {
      int k = tp_rnn_act_lookup(acts->strings[i]);
      if (k < 0)
        return tp_fail(TP_ERR_INVALID_ARG, "activation '%s' is not one ONNX allows for %s (Sigmoid, Tanh, Relu, Affine, "
                       "LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus)",
                       acts->strings[i], n->op);
      at.ints[i] = k;
      int np = tp_rnn_act_nparams(k, &at.floats[2 * i], &at.floats[2 * i + 1]);
      if (np >= 1 && ua < nalpha) at.floats[2 * i] = alpha->floats[ua++];
      if (np >= 2 && ub < nbeta) at.floats[2 * i + 1] = beta->floats[ub++];
    }
  }
  if (ua < nalpha || ub < nbeta)
    return tp_fail(TP_ERR_INVALID_ARG, "activation_alpha has %d values and activation_beta %d, but the activations read %d and %d",
                   nalpha, nbeta, ua, ub);
  int layout = (int)tp_onnx_attr_int(m, n, "layout", 0);
  if (layout != 0 && layout != 1) return tp_fail(TP_ERR_INVALID_ARG, "layout %d is not 0 or 1", layout);
  static const int64_t swap01[3] = {1, 0, 2};
  if (layout) { /* X [batch, seq, in] and the initial states [batch, dirs, hidden] */
    TP_TRY(permute(m, a[0], 3, swap01, &a[0]));
    for (int i = 5; i < nops && i < 7; i++)
      if (a[i].kind != R_NONE) TP_TRY(permute(m, a[i], 3, swap01, &a[i]));
  }
  ref packed;
  TP_TRY(tp_onnx_emit(m, op, nops, a, &at, &packed));
  static const int64_t yperm[4] = {2, 0, 1, 3};
  if (tp_onnx_has_out(n, 0)) {
    TP_TRY(unpack(m, packed, 0, 0, 1, &y));
    if (layout) TP_TRY(permute(m, y, 4, yperm, &y));
    TP_TRY(tp_onnx_set_out(m, n, 0, y));
  }
  int64_t S = tp_onnx_desc(m, packed).shape[1] - 1;
  for (int o = 1; o <= (op == TP_OP_LSTM ? 2 : 1); o++) {
    if (!tp_onnx_has_out(n, o)) continue;
    TP_TRY(unpack(m, packed, o - 1, S, 0, &y));
    if (layout) TP_TRY(permute(m, y, 3, swap01, &y));
    TP_TRY(tp_onnx_set_out(m, n, o, y));
  }
  return TP_OK;
}
