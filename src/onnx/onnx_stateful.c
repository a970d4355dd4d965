/* onnx_stateful.c - opset-27 ops that carry a state across a sequence:
 * LinearAttention (a recurrence over time steps, unrolled at import like
 * Scan, one step per position of the fixed sequence length) and
 * CausalConvWithState (a depthwise causal conv1d: k shifted slices of the
 * state-padded input). */
#include "import.h"
#include <math.h>

#define TP_ONNX_MAX_STEPS 4096

static tp_status take_step(imp *m, ref x, int64_t t, int nd, const int64_t *sh, ref *out) {
  ref s;
  TP_TRY(tp_onnx_slice(m, x, 1, t, t + 1, 1, &s));
  return tp_onnx_reshape(m, s, nd, sh, out);
}

static tp_status check_rank3(imp *m, ref x, const char *what, tp_desc *d) {
  *d = tp_onnx_desc(m, x);
  if (d->ndim != 3) return tp_fail(TP_ERR_INVALID_ARG, "%s must have rank 3 (B, T, H*D), got rank %d", what, d->ndim);
  if (d->dtype != TP_F32) return tp_fail(TP_ERR_UNSUPPORTED, "%s must be float32", what);
  return TP_OK;
}

/* LinearAttention(query, key, value, past_state?, decay?, beta?) ->
 * (output, present_state). Per step t, with S (B, Hkv, dk, dv):
 *   gated:  S *= exp(decay_t)            (decay per head or per key dim)
 *   delta:  v_t = beta_t (v_t - S^T k_t)
 *   S += k_t v_t^T;  o_t = scale q_t S   (query heads grouped on kv heads) */
tp_status tp_onnx_cv_linear_attention(imp *m, onode *n, int arg) {
  (void)arg;
  ref q, k, v, past, decay, beta;
  tp_desc qd, kd, vd;
  TP_TRY(tp_onnx_need_in(m, n, 0, &q));
  TP_TRY(tp_onnx_need_in(m, n, 1, &k));
  TP_TRY(tp_onnx_need_in(m, n, 2, &v));
  TP_TRY(tp_onnx_in(m, n, 3, &past));
  TP_TRY(tp_onnx_in(m, n, 4, &decay));
  TP_TRY(tp_onnx_in(m, n, 5, &beta));
  TP_TRY(check_rank3(m, q, "query", &qd));
  TP_TRY(check_rank3(m, k, "key", &kd));
  TP_TRY(check_rank3(m, v, "value", &vd));
  int64_t hq = tp_onnx_attr_int(m, n, "q_num_heads", 0), hkv = tp_onnx_attr_int(m, n, "kv_num_heads", 0);
  double scale = tp_onnx_attr_float(m, n, "scale", 0);
  const char *rule = tp_onnx_attr_str(m, n, "update_rule", "gated_delta");
  tp_onnx_attr_ignore(n, "chunk_size"); /* a tuning hint */
  if (hq <= 0 || hkv <= 0 || hq % hkv)
    return tp_fail(TP_ERR_INVALID_ARG, "q_num_heads (%lld) must be a positive multiple of kv_num_heads (%lld)",
                   (long long)hq, (long long)hkv);
  int gating = !strcmp(rule, "gated") || !strcmp(rule, "gated_delta");
  int delta = !strcmp(rule, "delta") || !strcmp(rule, "gated_delta");
  if (!gating && !delta && strcmp(rule, "linear"))
    return tp_fail(TP_ERR_INVALID_ARG, "update_rule '%s' is not linear, gated, delta or gated_delta", rule);
  if (gating != (decay.kind != R_NONE))
    return tp_fail(TP_ERR_INVALID_ARG, "update_rule '%s' %s the decay input", rule, gating ? "requires" : "forbids");
  if (delta != (beta.kind != R_NONE))
    return tp_fail(TP_ERR_INVALID_ARG, "update_rule '%s' %s the beta input", rule, delta ? "requires" : "forbids");
  int64_t B = qd.shape[0], T = qd.shape[1], G = hq / hkv;
  if (qd.shape[2] % hq || vd.shape[2] % hkv)
    return tp_fail(TP_ERR_INVALID_ARG, "the last dims of query (%lld) and value (%lld) must divide by q_num_heads and "
                   "kv_num_heads", (long long)qd.shape[2], (long long)vd.shape[2]);
  int64_t dk = qd.shape[2] / hq, dv = vd.shape[2] / hkv;
  if (kd.shape[0] != B || vd.shape[0] != B || kd.shape[1] != T || vd.shape[1] != T || kd.shape[2] != hkv * dk)
    return tp_fail(TP_ERR_INVALID_ARG, "key must be (%lld, %lld, %lld) and value (%lld, %lld, H*dv)", (long long)B,
                   (long long)T, (long long)(hkv * dk), (long long)B, (long long)T);
  if (T < 1 || T > TP_ONNX_MAX_STEPS)
    return tp_fail(TP_ERR_UNSUPPORTED, "a sequence of %lld steps (unrolled at import: 1..%d)", (long long)T,
                   TP_ONNX_MAX_STEPS);
  int64_t dlast = 0, blast = 0;
  if (gating) {
    tp_desc dd;
    TP_TRY(check_rank3(m, decay, "decay", &dd));
    dlast = dd.shape[2];
    if (dd.shape[0] != B || dd.shape[1] != T || (dlast != hkv && dlast != hkv * dk))
      return tp_fail(TP_ERR_INVALID_ARG, "decay must be (%lld, %lld, %lld or %lld)", (long long)B, (long long)T,
                     (long long)hkv, (long long)(hkv * dk));
  }
  if (delta) {
    tp_desc bd;
    TP_TRY(check_rank3(m, beta, "beta", &bd));
    blast = bd.shape[2];
    if (bd.shape[0] != B || bd.shape[1] != T || (blast != hkv && blast != 1))
      return tp_fail(TP_ERR_INVALID_ARG, "beta must be (%lld, %lld, %lld or 1)", (long long)B, (long long)T,
                     (long long)hkv);
  }
  int64_t ssh[4] = {B, hkv, dk, dv};
  ref S;
  if (past.kind != R_NONE) {
    tp_desc pd = tp_onnx_desc(m, past);
    if (pd.dtype != TP_F32 || pd.ndim != 4 || memcmp(pd.shape, ssh, sizeof ssh))
      return tp_fail(TP_ERR_INVALID_ARG, "past_state must be float32 (%lld, %lld, %lld, %lld)", (long long)B,
                     (long long)hkv, (long long)dk, (long long)dv);
    S = past;
  } else {
    TP_TRY(tp_onnx_full(m, TP_F32, 4, ssh, 0, &S));
  }
  if (scale == 0) scale = 1 / sqrt((double)dk);
  ref *outs = tp_alloc(sizeof(ref) * (size_t)T);
  if (!outs) return TP_ERR_OUT_OF_MEMORY;
  tp_status s = TP_OK;
  for (int64_t t = 0; !s && t < T; t++) {
    ref qt, kcol, krow, vt, x;
    int64_t qsh[4] = {B, hkv, G, dk}, kcsh[4] = {B, hkv, dk, 1}, krsh[4] = {B, hkv, 1, dk}, vsh[4] = {B, hkv, 1, dv};
    s = take_step(m, q, t, 4, qsh, &qt);
    if (!s) s = take_step(m, k, t, 4, kcsh, &kcol);
    if (!s) s = take_step(m, k, t, 4, krsh, &krow);
    if (!s) s = take_step(m, v, t, 4, vsh, &vt);
    if (!s && gating) { /* S *= exp(g_t)[..., None] */
      int64_t gsh[4] = {B, hkv, dlast == hkv ? 1 : dk, 1};
      s = take_step(m, decay, t, 4, gsh, &x);
      if (!s) s = tp_onnx_unary(m, TP_OP_EXP, x, &x);
      if (!s) s = tp_onnx_binary(m, TP_OP_MUL, S, x, &S);
    }
    if (!s && delta) { /* v_t = beta_t (v_t - k_t^T S) */
      int64_t bsh[4] = {B, blast, 1, 1};
      ref r, bt;
      s = tp_onnx_binary(m, TP_OP_MATMUL, krow, S, &r);
      if (!s) s = tp_onnx_binary(m, TP_OP_SUB, vt, r, &vt);
      if (!s) s = take_step(m, beta, t, 4, bsh, &bt);
      if (!s) s = tp_onnx_binary(m, TP_OP_MUL, bt, vt, &vt);
    }
    if (!s) s = tp_onnx_binary(m, TP_OP_MUL, kcol, vt, &x); /* outer product (B, Hkv, dk, dv) */
    if (!s) s = tp_onnx_binary(m, TP_OP_ADD, S, x, &S);
    if (!s) s = tp_onnx_binary(m, TP_OP_MATMUL, qt, S, &x); /* (B, Hkv, G, dv): query head h reads kv head h / G */
    if (!s) s = tp_onnx_binary(m, TP_OP_MUL, x, tp_onnx_scalar(scale), &x);
    int64_t osh[3] = {B, 1, hq * dv};
    if (!s) s = tp_onnx_reshape(m, x, 3, osh, &outs[t]);
  }
  ref y;
  if (!s) s = tp_onnx_concat(m, (int)T, outs, 1, &y);
  tp_free(outs);
  if (!s) s = tp_onnx_set_out(m, n, 0, y);
  if (!s) s = tp_onnx_set_out(m, n, 1, S);
  return s;
}

/* CausalConvWithState(input (B, C, L), weight (C, 1, k), bias?, past_state?
 * (B, C, k-1)) -> (output (B, C, L), present_state (B, C, k-1)):
 * padded = concat(past_state or zeros, input); output[:, c, i] = bias[c] +
 * sum_j w[c, 0, j] padded[:, c, i + j], optionally times sigmoid of itself
 * (activation silu / swish); present_state = padded's last k-1 steps. */
tp_status tp_onnx_cv_causal_conv_with_state(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, w, b, past, padded, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_need_in(m, n, 1, &w));
  TP_TRY(tp_onnx_in(m, n, 2, &b));
  TP_TRY(tp_onnx_in(m, n, 3, &past));
  const char *act = tp_onnx_attr_str(m, n, "activation", "none");
  int silu = !strcmp(act, "silu") || !strcmp(act, "swish");
  if (!silu && strcmp(act, "none"))
    return tp_fail(TP_ERR_INVALID_ARG, "activation '%s' is not none, silu or swish", act);
  tp_desc xd = tp_onnx_desc(m, x), wd = tp_onnx_desc(m, w);
  if (xd.ndim != 3 || xd.dtype != TP_F32)
    return tp_fail(TP_ERR_INVALID_ARG, "input must be float32 of rank 3 (batch, channels, length)");
  int64_t B = xd.shape[0], C = xd.shape[1], L = xd.shape[2];
  if (wd.ndim != 3 || wd.dtype != TP_F32 || wd.shape[0] != C || wd.shape[1] != 1 || wd.shape[2] < 1)
    return tp_fail(TP_ERR_INVALID_ARG, "weight must be float32 (%lld, 1, k)", (long long)C);
  int64_t K = wd.shape[2];
  if (K > 1024) return tp_fail(TP_ERR_UNSUPPORTED, "a kernel of %lld taps (at most 1024)", (long long)K);
  if (b.kind != R_NONE) {
    tp_desc bd = tp_onnx_desc(m, b);
    if (bd.ndim != 1 || bd.shape[0] != C || bd.dtype != TP_F32)
      return tp_fail(TP_ERR_INVALID_ARG, "bias must be float32 (%lld)", (long long)C);
  }
  int64_t psh[3] = {B, C, K - 1};
  if (past.kind != R_NONE) {
    tp_desc pd = tp_onnx_desc(m, past);
    if (pd.ndim != 3 || pd.dtype != TP_F32 || memcmp(pd.shape, psh, sizeof psh))
      return tp_fail(TP_ERR_INVALID_ARG, "past_state must be float32 (%lld, %lld, %lld)", (long long)B, (long long)C,
                     (long long)(K - 1));
  }
  if (K == 1) {
    padded = x;
  } else {
    ref parts[2] = {past, x};
    if (past.kind == R_NONE) TP_TRY(tp_onnx_full(m, TP_F32, 3, psh, 0, &parts[0]));
    TP_TRY(tp_onnx_concat(m, 2, parts, 2, &padded));
  }
  int64_t wsh[3] = {1, C, 1};
  for (int64_t j = 0; j < K; j++) {
    ref sl, wj, term;
    TP_TRY(tp_onnx_slice(m, padded, 2, j, j + L, 1, &sl));
    TP_TRY(tp_onnx_slice(m, w, 2, j, j + 1, 1, &wj));
    TP_TRY(tp_onnx_reshape(m, wj, 3, wsh, &wj));
    TP_TRY(tp_onnx_binary(m, TP_OP_MUL, sl, wj, &term));
    if (j) TP_TRY(tp_onnx_binary(m, TP_OP_ADD, y, term, &y));
    else y = term;
  }
  if (b.kind != R_NONE) {
    TP_TRY(tp_onnx_reshape(m, b, 3, wsh, &b));
    TP_TRY(tp_onnx_binary(m, TP_OP_ADD, y, b, &y));
  }
  if (silu) {
    ref sg;
    TP_TRY(tp_onnx_unary(m, TP_OP_SIGMOID, y, &sg));
    TP_TRY(tp_onnx_binary(m, TP_OP_MUL, y, sg, &y));
  }
  ref st;
  TP_TRY(tp_onnx_slice(m, padded, 2, L, L + K - 1, 1, &st));
  TP_TRY(tp_onnx_set_out(m, n, 0, y));
  return tp_onnx_set_out(m, n, 1, st);
}
