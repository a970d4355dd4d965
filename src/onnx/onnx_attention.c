/* onnx_attention.c - the transformer-block operators of opsets 23/24 as
 * compositions of existing ops, every input fed at run time:
 *
 *   Attention       softmax(softcap(Q K^T * scale) + bias) V, with the KV
 *                   cache (past_* concatenated before K/V: present_*),
 *                   grouped-query heads (Q reshaped to [B, Hkv, r*S, d] so
 *                   each KV head serves its r query heads without copies),
 *                   the bias summed from the mask (bool: where(m, 0, -inf);
 *                   shorter than the keys: padded with -inf), the causal
 *                   mask (a constant; with nonpad_kv_seqlen built at run
 *                   time) and the padding of nonpad_kv_seqlen; rows whose
 *                   bias is all -inf give 0 (as ONNX's reference evaluator).
 *   RotaryEmbedding x1 cos - x2 sin, x1 sin + x2 cos on the first
 *                   rotary_embedding_dim features (halves or interleaved
 *                   pairs), the caches gathered by position_ids.
 *   TensorScatter   the KV-cache update: where(window, gather_elements of
 *                   the update, past), the window from write_indices.
 *
 * Semantics follow onnx/reference/ops/op_attention.py (qk_matmul_output:
 * modes 0 and 1 give the (softcapped) scores, 2 the scores plus the bias,
 * 3 the probabilities), op_rotary_embedding.py and op_tensor_scatter.py. */
#include "import.h"
#include <math.h>

static tp_status permute(imp *m, ref x, int nd, const int64_t *perm, ref *out) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.nints = nd;
  memcpy(at.ints, perm, sizeof(int64_t) * (size_t)nd);
  return tp_onnx_emit(m, TP_OP_PERMUTE, 1, &x, &at, out);
}

static const int64_t swap12[4] = {0, 2, 1, 3};

static const char *in_name(const onode *n, int i, const char *def) {
  return i < n->nin && *n->in[i] ? n->in[i] : def;
}

static tp_status need_f32(imp *m, const onode *n, int i, ref r, const char *what) {
  tp_desc d = tp_onnx_desc(m, r);
  if (d.dtype != TP_F32)
    return tp_fail(TP_ERR_UNSUPPORTED, "%s '%s' is %s; only float32 is supported", what, in_name(n, i, what),
                   tp_dtype_name(d.dtype));
  return TP_OK;
}

/* 3-D [B, S, H*d] -> 4-D [B, H, S, d] */
static tp_status split_heads(imp *m, const onode *n, int i, ref x, int64_t heads, const char *what, ref *out) {
  tp_desc d = tp_onnx_desc(m, x);
  if (heads <= 0 || d.shape[2] % heads)
    return tp_fail(TP_ERR_INVALID_ARG, "%s '%s' has hidden size %lld, not a multiple of %lld heads", what,
                   in_name(n, i, what), (long long)d.shape[2], (long long)heads);
  int64_t sh[4] = {d.shape[0], d.shape[1], heads, d.shape[2] / heads};
  TP_TRY(tp_onnx_reshape(m, x, 4, sh, out));
  return permute(m, *out, 4, swap12, out);
}

static tp_status add_bias(imp *m, ref *bias, ref b) {
  if (bias->kind == R_NONE) {
    *bias = b;
    return TP_OK;
  }
  return tp_onnx_binary(m, TP_OP_ADD, *bias, b, bias);
}

/* where(allowed, 0, -inf) as float32 */
static tp_status allowed_bias(imp *m, ref allowed, ref *out) {
  ref zero, ninf;
  TP_TRY(tp_onnx_full(m, TP_F32, 0, NULL, 0, &zero));
  TP_TRY(tp_onnx_full(m, TP_F32, 0, NULL, -INFINITY, &ninf));
  return tp_onnx_where(m, allowed, zero, ninf, out);
}

/* A constant int64 tensor of shape sh with t[i, j] = a * i + b * j + c
 * (rank 2) or t[j] = b * j + c (rank 1). */
static tp_status index_grid(imp *m, int nd, const int64_t *sh, int64_t a, int64_t b, int64_t c, ref *out) {
  tp_tensor *t;
  TP_TRY(tp_tensor_empty(TP_I64, nd, sh, &t));
  int64_t *p = tp_tensor_ptr(t), rows = nd == 2 ? sh[0] : 1, cols = sh[nd - 1];
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++) p[i * cols + j] = a * i + b * j + c;
  return tp_onnx_add_const(m, t, out);
}

/* The mask input: its dtype, rank and broadcast against [B, H, S, L] checked,
 * made additive and padded with -inf up to L keys. */
static tp_status mask_bias(imp *m, const onode *n, ref mask, const int64_t *full, ref *out) {
  tp_desc d = tp_onnx_desc(m, mask);
  char b0[96], b1[96];
  const char *nm = in_name(n, 3, "attn_mask");
  if (d.dtype != TP_BOOL && d.dtype != TP_F32)
    return tp_fail(TP_ERR_UNSUPPORTED, "attn_mask '%s' is %s; bool or float32 expected", nm, tp_dtype_name(d.dtype));
  int ok = d.ndim >= 1 && d.ndim <= 4 && d.shape[d.ndim - 1] <= full[3];
  for (int i = 0; ok && i < d.ndim - 1; i++) {
    int64_t w = full[4 - d.ndim + i];
    ok = d.shape[i] == w || d.shape[i] == 1;
  }
  if (!ok)
    return tp_fail(TP_ERR_INVALID_ARG,
                   "attn_mask '%s' has shape %s, which does not broadcast to [batch, heads, q_len, kv_len] = %s "
                   "(its last dim may be shorter than kv_len: padded as masked)",
                   nm, tp_shape_str(d.ndim, d.shape, b0, sizeof b0), tp_shape_str(4, full, b1, sizeof b1));
  ref r = mask;
  if (d.dtype == TP_BOOL) TP_TRY(allowed_bias(m, mask, &r));
  if (d.shape[d.ndim - 1] < full[3])
    TP_TRY(tp_onnx_pad_const(m, r, d.ndim - 1, 0, full[3] - d.shape[d.ndim - 1], -INFINITY, &r));
  *out = r;
  return TP_OK;
}

tp_status tp_onnx_cv_attention(imp *m, onode *n, int arg) {
  (void)arg;
  ref q, k, v, mask, pk, pv, nonpad;
  TP_TRY(tp_onnx_need_in(m, n, 0, &q));
  TP_TRY(tp_onnx_need_in(m, n, 1, &k));
  TP_TRY(tp_onnx_need_in(m, n, 2, &v));
  TP_TRY(tp_onnx_in(m, n, 3, &mask));
  TP_TRY(tp_onnx_in(m, n, 4, &pk));
  TP_TRY(tp_onnx_in(m, n, 5, &pv));
  TP_TRY(tp_onnx_in(m, n, 6, &nonpad));
  int causal = (int)tp_onnx_attr_int(m, n, "is_causal", 0);
  attr *aqh = tp_onnx_attr(m, n, "q_num_heads", A_INT), *akvh = tp_onnx_attr(m, n, "kv_num_heads", A_INT);
  attr *ascale = tp_onnx_attr(m, n, "scale", A_FLOAT);
  double softcap = tp_onnx_attr_float(m, n, "softcap", 0);
  int64_t prec = tp_onnx_attr_int(m, n, "softmax_precision", 1);
  int64_t mode = tp_onnx_attr_int(m, n, "qk_matmul_output_mode", 0);
  if (causal != 0 && causal != 1) return tp_fail(TP_ERR_INVALID_ARG, "is_causal %d is not 0 or 1", causal);
  if (!(softcap >= 0)) return tp_fail(TP_ERR_INVALID_ARG, "softcap %g is negative", softcap);
  if (prec != 1)
    return tp_fail(TP_ERR_UNSUPPORTED, "softmax_precision %lld is not supported (1: float32)", (long long)prec);
  if (mode < 0 || mode > 3) return tp_fail(TP_ERR_INVALID_ARG, "qk_matmul_output_mode %lld is not 0..3", (long long)mode);
  TP_TRY(need_f32(m, n, 0, q, "Q"));
  TP_TRY(need_f32(m, n, 1, k, "K"));
  TP_TRY(need_f32(m, n, 2, v, "V"));
  tp_desc dq = tp_onnx_desc(m, q), dk = tp_onnx_desc(m, k), dv = tp_onnx_desc(m, v);
  char b0[96], b1[96], b2[96];
  if ((dq.ndim != 3 && dq.ndim != 4) || dk.ndim != dq.ndim || dv.ndim != dq.ndim)
    return tp_fail(TP_ERR_INVALID_ARG, "Q %s, K %s and V %s must all be 3-D [batch, seq, hidden] or all 4-D "
                   "[batch, heads, seq, head_size]", tp_shape_str(dq.ndim, dq.shape, b0, sizeof b0),
                   tp_shape_str(dk.ndim, dk.shape, b1, sizeof b1), tp_shape_str(dv.ndim, dv.shape, b2, sizeof b2));
  int three = dq.ndim == 3;
  if (three) {
    if (!aqh || !akvh) return tp_fail(TP_ERR_INVALID_ARG, "3-D Q, K, V need the q_num_heads and kv_num_heads attributes");
    TP_TRY(split_heads(m, n, 0, q, aqh->i, "Q", &q));
    TP_TRY(split_heads(m, n, 1, k, akvh->i, "K", &k));
    TP_TRY(split_heads(m, n, 2, v, akvh->i, "V", &v));
    dq = tp_onnx_desc(m, q), dk = tp_onnx_desc(m, k), dv = tp_onnx_desc(m, v);
  } else {
    if (aqh && aqh->i != dq.shape[1])
      return tp_fail(TP_ERR_INVALID_ARG, "q_num_heads %lld differs from Q's %lld heads", (long long)aqh->i,
                     (long long)dq.shape[1]);
    if (akvh && akvh->i != dk.shape[1])
      return tp_fail(TP_ERR_INVALID_ARG, "kv_num_heads %lld differs from K's %lld heads", (long long)akvh->i,
                     (long long)dk.shape[1]);
  }
  /* now [B, H, S, d] each */
  int64_t B = dq.shape[0], Hq = dq.shape[1], S = dq.shape[2], D = dq.shape[3];
  int64_t Hkv = dk.shape[1], Skv = dk.shape[2], Dv = dv.shape[3];
  if (dk.shape[0] != B || dv.shape[0] != B || dv.shape[1] != Hkv || dv.shape[2] != Skv || dk.shape[3] != D)
    return tp_fail(TP_ERR_INVALID_ARG,
                   "as [batch, heads, seq, head_size], Q %s, K %s and V %s disagree (batch, K/V heads and "
                   "sequence, Q/K head size must match)",
                   tp_shape_str(4, dq.shape, b0, sizeof b0), tp_shape_str(4, dk.shape, b1, sizeof b1),
                   tp_shape_str(4, dv.shape, b2, sizeof b2));
  if (Hkv <= 0 || Hq % Hkv)
    return tp_fail(TP_ERR_INVALID_ARG, "Q's %lld heads are not a multiple of K/V's %lld heads", (long long)Hq,
                   (long long)Hkv);
  if ((pk.kind == R_NONE) != (pv.kind == R_NONE))
    return tp_fail(TP_ERR_INVALID_ARG, "past_key and past_value must be given together");
  if (nonpad.kind != R_NONE && pk.kind != R_NONE)
    return tp_fail(TP_ERR_INVALID_ARG, "nonpad_kv_seqlen cannot be combined with past_key / past_value");
  int64_t P = 0;
  if (pk.kind != R_NONE) {
    TP_TRY(need_f32(m, n, 4, pk, "past_key"));
    TP_TRY(need_f32(m, n, 5, pv, "past_value"));
    tp_desc dpk = tp_onnx_desc(m, pk), dpv = tp_onnx_desc(m, pv);
    if (dpk.ndim != 4 || dpv.ndim != 4 || dpk.shape[0] != B || dpk.shape[1] != Hkv || dpk.shape[3] != D ||
        dpv.shape[0] != B || dpv.shape[1] != Hkv || dpv.shape[3] != Dv || dpv.shape[2] != dpk.shape[2])
      return tp_fail(TP_ERR_INVALID_ARG,
                     "past_key %s and past_value %s must be [batch, kv_heads, past_len, head_size] = "
                     "[%lld, %lld, P, %lld] and [%lld, %lld, P, %lld]",
                     tp_shape_str(dpk.ndim, dpk.shape, b0, sizeof b0), tp_shape_str(dpv.ndim, dpv.shape, b1, sizeof b1),
                     (long long)B, (long long)Hkv, (long long)D, (long long)B, (long long)Hkv, (long long)Dv);
    P = dpk.shape[2];
    ref parts[2] = {pk, k};
    TP_TRY(tp_onnx_concat(m, 2, parts, 2, &k));
    ref parts2[2] = {pv, v};
    TP_TRY(tp_onnx_concat(m, 2, parts2, 2, &v));
  }
  int64_t L = P + Skv, r = Hq / Hkv;
  if (tp_onnx_has_out(n, 1)) TP_TRY(tp_onnx_set_out(m, n, 1, k));
  if (tp_onnx_has_out(n, 2)) TP_TRY(tp_onnx_set_out(m, n, 2, v));

  /* scores [B, Hq, S, L]: the r query heads of a KV head as one [r*S, D] block */
  ref qg, kt, sc;
  int64_t gsh[4] = {B, Hkv, r * S, D}, ssh[4] = {B, Hq, S, L};
  static const int64_t swap23[4] = {0, 1, 3, 2};
  TP_TRY(tp_onnx_reshape(m, q, 4, gsh, &qg));
  TP_TRY(permute(m, k, 4, swap23, &kt));
  TP_TRY(tp_onnx_emit(m, TP_OP_MATMUL, 2, (ref[2]){qg, kt}, NULL, &sc));
  TP_TRY(tp_onnx_reshape(m, sc, 4, ssh, &sc));
  double scale = ascale ? ascale->f : 1 / sqrt((double)D);
  TP_TRY(tp_onnx_binary(m, TP_OP_MUL, sc, tp_onnx_scalar(scale), &sc));
  if (softcap > 0) {
    TP_TRY(tp_onnx_binary(m, TP_OP_DIV, sc, tp_onnx_scalar(softcap), &sc));
    TP_TRY(tp_onnx_unary(m, TP_OP_TANH, sc, &sc));
    TP_TRY(tp_onnx_binary(m, TP_OP_MUL, sc, tp_onnx_scalar(softcap), &sc));
  }
  ref qk_out = sc;

  /* the additive bias */
  ref bias = tp_onnx_none(), t;
  int64_t full[4] = {B, Hq, S, L};
  if (mask.kind != R_NONE) {
    TP_TRY(mask_bias(m, n, mask, full, &t));
    TP_TRY(add_bias(m, &bias, t));
  }
  ref npr = tp_onnx_none();
  if (nonpad.kind != R_NONE) {
    tp_desc dn = tp_onnx_desc(m, nonpad);
    if ((dn.dtype != TP_I64 && dn.dtype != TP_I32) || dn.ndim != 1 || dn.shape[0] != B)
      return tp_fail(TP_ERR_INVALID_ARG, "nonpad_kv_seqlen '%s' must be an int64 vector of %lld (batch) lengths, got %s %s",
                     in_name(n, 6, "nonpad_kv_seqlen"), (long long)B, tp_dtype_name(dn.dtype),
                     tp_shape_str(dn.ndim, dn.shape, b0, sizeof b0));
    int64_t nsh[4] = {B, 1, 1, 1};
    TP_TRY(tp_onnx_cast(m, nonpad, TP_I64, &npr));
    TP_TRY(tp_onnx_reshape(m, npr, 4, nsh, &npr));
  }
  if (causal) {
    int64_t csh[2] = {S, L};
    ref allowed;
    if (npr.kind == R_NONE) { /* key j allowed for query i iff j <= i + P: j - i - P <= 0 */
      ref c;
      TP_TRY(index_grid(m, 2, csh, -1, 1, -P, &c));
      TP_TRY(tp_onnx_binary(m, TP_OP_GT, c, (ref){R_SCALAR, 0, 0, 0, 1}, &allowed));
    } else { /* external cache: j <= i + nonpad[b] - S, i.e. j - i + S <= nonpad[b] */
      ref c;
      TP_TRY(index_grid(m, 2, csh, -1, 1, S, &c));
      TP_TRY(tp_onnx_binary(m, TP_OP_GT, c, npr, &allowed));
    }
    TP_TRY(tp_onnx_not(m, allowed, &allowed));
    TP_TRY(allowed_bias(m, allowed, &t));
    TP_TRY(add_bias(m, &bias, t));
  }
  if (npr.kind != R_NONE) { /* keys at or past nonpad[b] are padding */
    ref j, allowed;
    TP_TRY(index_grid(m, 1, &L, 0, 1, 0, &j));
    TP_TRY(tp_onnx_binary(m, TP_OP_LT, j, npr, &allowed));
    TP_TRY(allowed_bias(m, allowed, &t));
    TP_TRY(add_bias(m, &bias, t));
  }
  ref sb = sc, p;
  if (bias.kind != R_NONE) TP_TRY(tp_onnx_binary(m, TP_OP_ADD, sc, bias, &sb));
  if (mode == 2) qk_out = sb;
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = 3;
  TP_TRY(tp_onnx_emit(m, TP_OP_SOFTMAX, 1, &sb, &at, &p));
  if (bias.kind != R_NONE) { /* a row with no allowed key gives 0, not NaN */
    ref mx, dead, zero;
    int64_t last = tp_onnx_desc(m, bias).ndim - 1;
    TP_TRY(tp_onnx_reduce(m, TP_OP_MAX, bias, 1, &last, 1, &mx));
    TP_TRY(tp_onnx_binary(m, TP_OP_EQ, mx, tp_onnx_scalar(-INFINITY), &dead));
    TP_TRY(tp_onnx_full(m, TP_F32, 0, NULL, 0, &zero));
    TP_TRY(tp_onnx_where(m, dead, zero, p, &p));
  }
  if (mode == 3) qk_out = p;

  /* Y = P V, again r query heads per KV head */
  ref y;
  int64_t psh[4] = {B, Hkv, r * S, L}, ysh[4] = {B, Hq, S, Dv};
  TP_TRY(tp_onnx_reshape(m, p, 4, psh, &y));
  TP_TRY(tp_onnx_emit(m, TP_OP_MATMUL, 2, (ref[2]){y, v}, NULL, &y));
  TP_TRY(tp_onnx_reshape(m, y, 4, ysh, &y));
  if (three) {
    int64_t y3[3] = {B, S, Hq * Dv};
    TP_TRY(permute(m, y, 4, swap12, &y));
    TP_TRY(tp_onnx_reshape(m, y, 3, y3, &y));
  }
  TP_TRY(tp_onnx_set_out(m, n, 0, y));
  if (tp_onnx_has_out(n, 3)) TP_TRY(tp_onnx_set_out(m, n, 3, qk_out));
  return TP_OK;
}

/* RotaryEmbedding. A 4-D input [B, H, S, D] is worked on in place (the
 * cos/sin rows as [B, 1, S, D/2]); a 3-D one [B, S, H*D] as [B, S, H, D]
 * (cos/sin as [B, S, 1, D/2]). */
tp_status tp_onnx_cv_rotary(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, cs[2], pos, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_need_in(m, n, 1, &cs[0]));
  TP_TRY(tp_onnx_need_in(m, n, 2, &cs[1]));
  TP_TRY(tp_onnx_in(m, n, 3, &pos));
  int64_t inter = tp_onnx_attr_int(m, n, "interleaved", 0), rd = tp_onnx_attr_int(m, n, "rotary_embedding_dim", 0);
  attr *anh = tp_onnx_attr(m, n, "num_heads", A_INT);
  if (inter != 0 && inter != 1) return tp_fail(TP_ERR_INVALID_ARG, "interleaved %lld is not 0 or 1", (long long)inter);
  TP_TRY(need_f32(m, n, 0, x, "input"));
  TP_TRY(need_f32(m, n, 1, cs[0], "cos_cache"));
  TP_TRY(need_f32(m, n, 2, cs[1], "sin_cache"));
  tp_desc dx = tp_onnx_desc(m, x);
  char b0[96], b1[96];
  if (dx.ndim != 3 && dx.ndim != 4)
    return tp_fail(TP_ERR_INVALID_ARG, "input '%s' has shape %s; expected [batch, heads, seq, head_size] or "
                   "[batch, seq, hidden]", in_name(n, 0, "input"), tp_shape_str(dx.ndim, dx.shape, b0, sizeof b0));
  int64_t B = dx.shape[0], S, H, D;
  int64_t csh[4]; /* where cos/sin rows go */
  if (dx.ndim == 4) {
    H = dx.shape[1], S = dx.shape[2], D = dx.shape[3];
    if (anh && anh->i != H)
      return tp_fail(TP_ERR_INVALID_ARG, "num_heads %lld differs from the input's %lld heads", (long long)anh->i,
                     (long long)H);
  } else {
    S = dx.shape[1];
    if (!anh || anh->i <= 0 || dx.shape[2] % anh->i)
      return tp_fail(TP_ERR_INVALID_ARG, "a 3-D input needs num_heads dividing its hidden size %lld (num_heads %lld)",
                     (long long)dx.shape[2], anh ? (long long)anh->i : 0LL);
    H = anh->i, D = dx.shape[2] / H;
    int64_t sh[4] = {B, S, H, D};
    TP_TRY(tp_onnx_reshape(m, x, 4, sh, &x));
  }
  if (rd == 0) rd = D;
  if (rd < 0 || rd > D || rd % 2)
    return tp_fail(TP_ERR_INVALID_ARG, "rotary_embedding_dim %lld must be even and at most the head size %lld",
                   (long long)rd, (long long)D);
  int64_t h = rd / 2;
  if (dx.ndim == 4) csh[0] = B, csh[1] = 1, csh[2] = S, csh[3] = h;
  else csh[0] = B, csh[1] = S, csh[2] = 1, csh[3] = h;
  tp_desc dp = tp_onnx_desc(m, pos);
  if (pos.kind != R_NONE && ((dp.dtype != TP_I64 && dp.dtype != TP_I32) || dp.ndim != 2 || dp.shape[0] != B ||
                             dp.shape[1] != S))
    return tp_fail(TP_ERR_INVALID_ARG, "position_ids '%s' must be int64 [batch, seq] = [%lld, %lld], got %s %s",
                   in_name(n, 3, "position_ids"), (long long)B, (long long)S, tp_dtype_name(dp.dtype),
                   tp_shape_str(dp.ndim, dp.shape, b0, sizeof b0));
  for (int c = 0; c < 2; c++) {
    tp_desc dc = tp_onnx_desc(m, cs[c]);
    int ok = pos.kind != R_NONE ? dc.ndim == 2 && dc.shape[1] == h
                                : dc.ndim == 3 && dc.shape[0] == B && dc.shape[1] == S && dc.shape[2] == h;
    if (!ok)
      return tp_fail(TP_ERR_INVALID_ARG, "%s '%s' has shape %s; expected %s with rotary_embedding_dim/2 = %lld",
                     c ? "sin_cache" : "cos_cache", in_name(n, 1 + c, "cache"), tp_shape_str(dc.ndim, dc.shape, b0, sizeof b0),
                     pos.kind != R_NONE ? "[max_position, rotary_dim/2] (position_ids given)"
                                        : "[batch, seq, rotary_dim/2] (no position_ids)",
                     (long long)h);
    if (pos.kind != R_NONE) { /* positions are run-time data: bounds-checked by gather */
      tp_attrs at;
      tp_attrs_init(&at);
      TP_TRY(tp_onnx_emit(m, TP_OP_GATHER, 2, (ref[2]){cs[c], pos}, &at, &cs[c]));
    }
    TP_TRY(tp_onnx_reshape(m, cs[c], 4, csh, &cs[c]));
  }
  (void)b1;
  ref xr, x1, x2, re, im, a, b;
  TP_TRY(tp_onnx_slice(m, x, 3, 0, rd, 1, &xr));
  int64_t s4[4];
  tp_desc dr = tp_onnx_desc(m, xr);
  if (inter) { /* pairs (x[2i], x[2i+1]) as [..., h, 2] */
    int64_t s5[5] = {dr.shape[0], dr.shape[1], dr.shape[2], h, 2}, c5[5] = {csh[0], csh[1], csh[2], h, 1};
    TP_TRY(tp_onnx_reshape(m, xr, 5, s5, &xr));
    TP_TRY(tp_onnx_slice(m, xr, 4, 0, 1, 1, &x1));
    TP_TRY(tp_onnx_slice(m, xr, 4, 1, 2, 1, &x2));
    for (int c = 0; c < 2; c++) TP_TRY(tp_onnx_reshape(m, cs[c], 5, c5, &cs[c]));
  } else {
    TP_TRY(tp_onnx_slice(m, xr, 3, 0, h, 1, &x1));
    TP_TRY(tp_onnx_slice(m, xr, 3, h, rd, 1, &x2));
  }
  TP_TRY(tp_onnx_binary(m, TP_OP_MUL, cs[0], x1, &a));
  TP_TRY(tp_onnx_binary(m, TP_OP_MUL, cs[1], x2, &b));
  TP_TRY(tp_onnx_binary(m, TP_OP_SUB, a, b, &re));
  TP_TRY(tp_onnx_binary(m, TP_OP_MUL, cs[1], x1, &a));
  TP_TRY(tp_onnx_binary(m, TP_OP_MUL, cs[0], x2, &b));
  TP_TRY(tp_onnx_binary(m, TP_OP_ADD, a, b, &im));
  ref parts[2] = {re, im};
  TP_TRY(tp_onnx_concat(m, 2, parts, inter ? 4 : 3, &y));
  if (inter) {
    memcpy(s4, dr.shape, sizeof s4);
    TP_TRY(tp_onnx_reshape(m, y, 4, s4, &y));
  }
  if (rd < D) {
    ref pass, parts2[2];
    TP_TRY(tp_onnx_slice(m, x, 3, rd, D, 1, &pass));
    parts2[0] = y, parts2[1] = pass;
    TP_TRY(tp_onnx_concat(m, 2, parts2, 3, &y));
  }
  if (dx.ndim == 3) TP_TRY(tp_onnx_reshape(m, y, 3, dx.shape, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* TensorScatter: present[b, ..., p, ...] (p along axis) is
 * update[b, ..., p - w[b], ...] when 0 <= p - w[b] < U (circular: p - w[b]
 * taken mod the cache length), else past[b, ..., p, ...]. write_indices are
 * run-time data, checked at run time by a gather over the valid starts
 * (0 ..= L - U for linear, 0 .. L - 1 for circular): an index outside is
 * an out-of-range error, never a write outside the cache. */
tp_status tp_onnx_cv_tensor_scatter(imp *m, onode *n, int arg) {
  (void)arg;
  ref past, upd, w, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &past));
  TP_TRY(tp_onnx_need_in(m, n, 1, &upd));
  TP_TRY(tp_onnx_in(m, n, 2, &w));
  const char *mode = tp_onnx_attr_str(m, n, "mode", "linear");
  int circ = !strcmp(mode, "circular");
  if (!circ && strcmp(mode, "linear")) return tp_fail(TP_ERR_INVALID_ARG, "mode '%s' is not linear or circular", mode);
  tp_desc dp = tp_onnx_desc(m, past), du = tp_onnx_desc(m, upd);
  char b0[96], b1[96];
  int64_t axis;
  if (dp.ndim < 2)
    return tp_fail(TP_ERR_INVALID_ARG, "past_cache '%s' has rank %d; at least 2 (batch, sequence) expected",
                   in_name(n, 0, "past_cache"), dp.ndim);
  TP_TRY(tp_onnx_axis(tp_onnx_attr_int(m, n, "axis", -2), dp.ndim, "axis", &axis));
  if (axis == 0) return tp_fail(TP_ERR_INVALID_ARG, "axis 0 is the batch axis; the sequence axis must follow it");
  int ok = du.ndim == dp.ndim && du.dtype == dp.dtype && du.shape[axis] <= dp.shape[axis];
  for (int i = 0; ok && i < dp.ndim; i++) ok = i == axis || du.shape[i] == dp.shape[i];
  if (!ok)
    return tp_fail(TP_ERR_INVALID_ARG,
                   "update '%s' (%s %s) must have past_cache's dtype and shape (%s %s) but at most as long on axis %lld",
                   in_name(n, 1, "update"), tp_dtype_name(du.dtype), tp_shape_str(du.ndim, du.shape, b0, sizeof b0),
                   tp_dtype_name(dp.dtype), tp_shape_str(dp.ndim, dp.shape, b1, sizeof b1), (long long)axis);
  int64_t B = dp.shape[0], L = dp.shape[axis], U = du.shape[axis];
  int64_t bsh[TP_MAX_DIMS], psh[TP_MAX_DIMS];
  for (int i = 0; i < dp.ndim; i++) bsh[i] = i == 0 ? B : 1, psh[i] = i == axis ? L : 1;
  if (w.kind == R_NONE) {
    TP_TRY(tp_onnx_full(m, TP_I64, 1, &B, 0, &w));
  } else {
    tp_desc dw = tp_onnx_desc(m, w);
    if ((dw.dtype != TP_I64 && dw.dtype != TP_I32) || dw.ndim != 1 || dw.shape[0] != B)
      return tp_fail(TP_ERR_INVALID_ARG, "write_indices '%s' must be an int64 vector of %lld (batch) values, got %s %s",
                     in_name(n, 2, "write_indices"), (long long)B, tp_dtype_name(dw.dtype),
                     tp_shape_str(dw.ndim, dw.shape, b0, sizeof b0));
    TP_TRY(tp_onnx_cast(m, w, TP_I64, &w));
    /* the check: gather(iota(nstart), w'), w' = w or (w < 0) w - nstart (out of range) */
    int64_t nstart = circ ? L : L - U + 1;
    ref iota, neg, wneg, chk;
    TP_TRY(index_grid(m, 1, &nstart, 0, 1, 0, &iota));
    TP_TRY(tp_onnx_binary(m, TP_OP_LT, w, (ref){R_SCALAR, 0, 0, 0, 1}, &neg));
    TP_TRY(tp_onnx_binary(m, TP_OP_SUB, w, (ref){R_SCALAR, 0, 0, (double)nstart, 1}, &wneg));
    TP_TRY(tp_onnx_where(m, neg, wneg, w, &chk));
    tp_attrs at;
    tp_attrs_init(&at);
    TP_TRY(tp_onnx_emit(m, TP_OP_GATHER, 2, (ref[2]){iota, chk}, &at, &w));
  }
  ref p, s, in, idx, g, zero = tp_onnx_scalar(0);
  zero.is_int = 1;
  TP_TRY(index_grid(m, 1, &L, 0, 1, 0, &p));
  TP_TRY(tp_onnx_reshape(m, p, dp.ndim, psh, &p));
  TP_TRY(tp_onnx_reshape(m, w, dp.ndim, bsh, &w));
  TP_TRY(tp_onnx_binary(m, TP_OP_SUB, p, w, &s)); /* p - w[b] */
  if (circ) {
    ref neg, wrapped;
    TP_TRY(tp_onnx_binary(m, TP_OP_LT, s, zero, &neg));
    TP_TRY(tp_onnx_binary(m, TP_OP_ADD, s, (ref){R_SCALAR, 0, 0, (double)L, 1}, &wrapped));
    TP_TRY(tp_onnx_where(m, neg, wrapped, s, &s));
  }
  ref lo, hi;
  TP_TRY(tp_onnx_binary(m, TP_OP_LT, s, zero, &lo));
  TP_TRY(tp_onnx_binary(m, TP_OP_LT, s, (ref){R_SCALAR, 0, 0, (double)U, 1}, &hi));
  TP_TRY(tp_onnx_not(m, lo, &lo));
  TP_TRY(tp_onnx_where(m, lo, hi, lo, &in)); /* lo and hi */
  TP_TRY(tp_onnx_where(m, in, s, zero, &idx));
  /* the index over the cache's full shape but U long on the axis' source */
  ref full;
  tp_tensor *ones;
  TP_TRY(tp_tensor_empty(TP_BOOL, dp.ndim, dp.shape, &ones));
  memset(tp_tensor_ptr(ones), 1, (size_t)tp_tensor_numel(ones));
  TP_TRY(tp_onnx_add_const(m, ones, &full));
  TP_TRY(tp_onnx_where(m, full, idx, idx, &idx));
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = axis;
  TP_TRY(tp_onnx_emit(m, TP_OP_GATHER_ELEMENTS, 2, (ref[2]){upd, idx}, &at, &g));
  TP_TRY(tp_onnx_where(m, in, g, past, &y));
  return tp_onnx_set_out(m, n, 0, y);
}
