/* onnx_quant.c - ONNX's linear quantization operators as compositions of
 * ops.def operators (docs/quantization.md):
 *   QuantizeLinear     y = saturate(round_half_even(x / scale) + zero_point)
 *   DequantizeLinear   y = (x - zero_point) * scale
 *   (per tensor, per axis (1-D scale) and blocked (block_size > 0))
 *   DynamicQuantizeLinear, MatMulInteger, QLinearMatMul (ops.def's
 *   matmul_int: exact int32), ConvInteger, QLinearConv.
 * Quantize and dequantize are ops.def's quantize / dequantize (src/ops/
 * quant.c), which check every scale on every call. Integer convolutions
 * run through the float32 convolution with exact integer operands, in
 * chunks of input channels whose sums stay below 2^24 (conv_int32), added
 * in int32. Constant scales are also checked at load (zero, negative,
 * NaN or Inf), so such a model fails to load naming the node; zero points
 * are stored in their int8/uint8 dtype, so they cannot be out of range. */
#include "import.h"
#include <math.h>
#include <stdio.h>

#define EXACT_F32 16777216.0 /* 2^24 */

static int is_quant_dtype(tp_dtype d) { return d == TP_I8 || d == TP_U8; }

/* A constant scale: every value finite and > 0. */
static tp_status check_scale(imp *m, ref s, const char *what) {
  if (s.kind != R_CONST) return TP_OK;
  tp_tensor *t = m->consts[s.c];
  int64_t n = tp_tensor_numel(t);
  for (int64_t i = 0; i < n; i++) {
    double v = tp_tensor_get_f64(t, i);
    if (!(v > 0) || isinf(v))
      return tp_fail(TP_ERR_INVALID_ARG, "%s element %lld is %g; a scale must be finite and > 0", what, (long long)i, v);
  }
  return TP_OK;
}

/* QLinearMatMul / QLinearConv: inputs 0-7 (a or x, its scale and zero
 * point, b or w, its scale and zero point, y's scale and zero point), the
 * three scales checked and y's quantized dtype. */
static tp_status qlinear_inputs(imp *m, onode *n, const char *scale0, const char *scale1, ref r[8],
                                tp_dtype *qd) {
  for (int i = 0; i < 8; i++) TP_TRY(tp_onnx_need_in(m, n, i, &r[i]));
  TP_TRY(check_scale(m, r[1], scale0));
  TP_TRY(check_scale(m, r[4], scale1));
  TP_TRY(check_scale(m, r[6], "y_scale"));
  *qd = tp_onnx_desc(m, r[7]).dtype;
  if (!is_quant_dtype(*qd)) return tp_fail(TP_ERR_UNSUPPORTED, "y_zero_point has dtype %s (int8, uint8)", tp_dtype_name(*qd));
  return TP_OK;
}

/* scale (or zero point) p shaped to broadcast against x of rank nd:
 * 0-d / one element as is; 1-D of x's dim `axis` (per axis); or, with
 * block > 0, x's rank with dim axis = ceil(X[axis] / block), repeated
 * block times along axis and cut to X[axis]. */
static tp_status shape_param(imp *m, ref p, const tp_desc *x, int64_t axis, int64_t block, const char *what, ref *out) {
  tp_desc d = tp_onnx_desc(m, p);
  char b0[96], b1[96];
  int64_t numel = tp_shape_numel(d.ndim, d.shape);
  if (block <= 0 && (d.ndim == 0 || (d.ndim == 1 && numel == 1))) {
    *out = p;
    return TP_OK;
  }
  int64_t ax;
  TP_TRY(tp_onnx_axis(axis, x->ndim, "axis", &ax));
  if (block <= 0) {
    if (d.ndim != 1 || d.shape[0] != x->shape[ax])
      return tp_fail(TP_ERR_INVALID_ARG, "%s has shape %s; per-axis quantization along axis %lld of %s needs [%lld]", what,
                     tp_shape_str(d.ndim, d.shape, b0, sizeof b0), (long long)ax,
                     tp_shape_str(x->ndim, x->shape, b1, sizeof b1), (long long)x->shape[ax]);
    int64_t sh[TP_MAX_DIMS];
    for (int k = 0; k < x->ndim; k++) sh[k] = k == ax ? x->shape[ax] : 1;
    return tp_onnx_reshape(m, p, x->ndim, sh, out);
  }
  /* blocked */
  int64_t nb = (x->shape[ax] + block - 1) / block;
  int ok = d.ndim == x->ndim && x->ndim < TP_MAX_DIMS;
  for (int k = 0; ok && k < x->ndim; k++) ok = d.shape[k] == (k == ax ? nb : x->shape[k]);
  if (!ok)
    return tp_fail(TP_ERR_INVALID_ARG, "%s has shape %s; block_size %lld along axis %lld of %s needs %lld blocks there", what,
                   tp_shape_str(d.ndim, d.shape, b0, sizeof b0), (long long)block, (long long)ax,
                   tp_shape_str(x->ndim, x->shape, b1, sizeof b1), (long long)nb);
  int64_t sh[TP_MAX_DIMS], n2 = 0;
  for (int k = 0; k < x->ndim; k++) {
    sh[n2++] = d.shape[k];
    if (k == ax) sh[n2++] = 1;
  }
  ref r, z, y;
  TP_TRY(tp_onnx_reshape(m, p, n2, sh, &r));
  sh[ax + 1] = block;
  TP_TRY(tp_onnx_full(m, d.dtype, n2, sh, 0, &z)); /* zeros of p's dtype: p + 0 keeps it */
  TP_TRY(tp_onnx_binary(m, TP_OP_ADD, r, z, &y)); /* repeated block times */
  int64_t fl[TP_MAX_DIMS];
  for (int k = 0; k < x->ndim; k++) fl[k] = k == ax ? nb * block : x->shape[k];
  TP_TRY(tp_onnx_reshape(m, y, x->ndim, fl, &y));
  if (nb * block != x->shape[ax]) TP_TRY(tp_onnx_slice(m, y, ax, 0, x->shape[ax], 1, &y));
  *out = y;
  return TP_OK;
}

/* The graph node of r named after ONNX node n (sanitized, made unique),
 * so that a run-time error (a scale fed as 0) names the model's node. */
static tp_status name_after(imp *m, const onode *n, ref r) {
  if (r.kind != R_NODE) return TP_OK;
  char nm[128], un[160];
  tp_onnx_sanitize_name(*n->name ? n->name : n->op, nm, sizeof nm);
  snprintf(un, sizeof un, "%s", nm);
  for (int k = 2; tp_graph_find(m->g, un) >= 0; k++) snprintf(un, sizeof un, "%s_%d", nm, k);
  char *d = tp_strdup(un);
  if (!d) return TP_ERR_OUT_OF_MEMORY;
  tp_free(m->g->nodes[r.node].name);
  m->g->nodes[r.node].name = d;
  tp_graph_names_changed(m->g);
  return TP_OK;
}

/* saturate(round(xf / scale) + zp) as dtype qd: ops.def's quantize, which
 * checks every scale (run-time ones too); its node is named after n. */
static tp_status quantize(imp *m, onode *n, ref xf, ref scale, ref zp, tp_dtype qd, ref *out) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.dtype = qd;
  ref args[3] = {xf, scale, zp};
  TP_TRY(tp_onnx_emit(m, TP_OP_QUANTIZE, 3, args, &at, out));
  return name_after(m, n, *out);
}

static tp_status zero_point_dtype(imp *m, onode *n, ref zp, tp_dtype *qd) {
  int64_t od = tp_onnx_attr_int(m, n, "output_dtype", 0);
  *qd = TP_U8;
  if (zp.kind != R_NONE) *qd = tp_onnx_desc(m, zp).dtype;
  else if (od && !tp_onnx_to_dtype(od, qd))
    return tp_fail(TP_ERR_UNSUPPORTED, "output_dtype %s is not supported (int8, uint8)", tp_onnx_dtype_name((int)od));
  if (!is_quant_dtype(*qd))
    return tp_fail(TP_ERR_UNSUPPORTED, "quantized dtype %s is not supported (int8, uint8)", tp_dtype_name(*qd));
  return TP_OK;
}

tp_status tp_onnx_cv_quantize(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, s, z, y;
  tp_dtype qd;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_need_in(m, n, 1, &s));
  TP_TRY(tp_onnx_in(m, n, 2, &z));
  int64_t axis = tp_onnx_attr_int(m, n, "axis", 1), block = tp_onnx_attr_int(m, n, "block_size", 0);
  if (!tp_onnx_attr_int(m, n, "saturate", 1))
    return tp_fail(TP_ERR_UNSUPPORTED, "saturate 0 applies to float8 outputs only, which are not supported");
  TP_TRY(zero_point_dtype(m, n, z, &qd));
  TP_TRY(check_scale(m, s, "y_scale"));
  tp_desc xd = tp_onnx_desc(m, x);
  if (block < 0) return tp_fail(TP_ERR_INVALID_ARG, "block_size %lld must be >= 0", (long long)block);
  TP_TRY(tp_onnx_cast(m, x, TP_F32, &x));
  TP_TRY(shape_param(m, s, &xd, axis, block, "y_scale", &s));
  if (z.kind != R_NONE) TP_TRY(shape_param(m, z, &xd, axis, block, "y_zero_point", &z));
  TP_TRY(quantize(m, n, x, s, z, qd, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

tp_status tp_onnx_cv_dequantize(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, s, z, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_need_in(m, n, 1, &s));
  TP_TRY(tp_onnx_in(m, n, 2, &z));
  int64_t axis = tp_onnx_attr_int(m, n, "axis", 1), block = tp_onnx_attr_int(m, n, "block_size", 0);
  tp_onnx_attr_ignore(n, "output_dtype");
  tp_desc xd = tp_onnx_desc(m, x);
  if (!is_quant_dtype(xd.dtype) && xd.dtype != TP_I32)
    return tp_fail(TP_ERR_UNSUPPORTED, "x has dtype %s (int8, uint8 or int32 are supported)", tp_dtype_name(xd.dtype));
  if (z.kind != R_NONE && tp_onnx_desc(m, z).dtype != xd.dtype)
    return tp_fail(TP_ERR_INVALID_ARG, "x_zero_point has dtype %s, x %s; they must match",
                   tp_dtype_name(tp_onnx_desc(m, z).dtype), tp_dtype_name(xd.dtype));
  if (block < 0) return tp_fail(TP_ERR_INVALID_ARG, "block_size %lld must be >= 0", (long long)block);
  TP_TRY(check_scale(m, s, "x_scale"));
  tp_dtype outd = tp_onnx_desc(m, s).dtype;
  TP_TRY(shape_param(m, s, &xd, axis, block, "x_scale", &s));
  if (z.kind != R_NONE) TP_TRY(shape_param(m, z, &xd, axis, block, "x_zero_point", &z));
  ref args[3] = {x, s, z};
  /* a constant 2-D int8/uint8 weight (4-D: a conv weight; 1-D int32: a
   * conv bias) with float32 scales stays quantized in the graph (a quarter
   * of the memory), for stax's qlinear pass to put on the integer GEMM /
   * convolution; everything else folds at load (import.c fold_kept_dequant) */
  int keep = x.kind == R_CONST && outd == TP_F32 &&
             (((xd.ndim == 2 || xd.ndim == 4) && is_quant_dtype(xd.dtype)) || (xd.ndim == 1 && xd.dtype == TP_I32));
  TP_TRY((keep ? tp_onnx_emit_node : tp_onnx_emit)(m, TP_OP_DEQUANTIZE, 3, args, NULL, &y));
  TP_TRY(name_after(m, n, y));
  TP_TRY(tp_onnx_cast(m, y, outd, &y)); /* the scale's dtype: float16 scales give float16 */
  return tp_onnx_set_out(m, n, 0, y);
}

/* max(v, 0) / min(v, 0) of a float32 ref */
static tp_status clamp0(imp *m, ref v, int upper, ref *out) {
  ref c, zero = tp_onnx_scalar(0);
  TP_TRY(tp_onnx_binary(m, upper ? TP_OP_GT : TP_OP_LT, v, zero, &c));
  return tp_onnx_where(m, c, v, zero, out);
}

tp_status tp_onnx_cv_dynquant(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, hi, lo, scale, zp, zpq, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_cast(m, x, TP_F32, &x));
  TP_TRY(tp_onnx_reduce(m, TP_OP_MAX, x, 0, NULL, 0, &hi));
  /* min(x) by the min reduction (NaN propagates as in max); -max(-x) wrote
   * -x out first, a full pass over the activation (the quint8 ISNet: 119
   * of them, up to [1, 64, 512, 512]) */
  TP_TRY(tp_onnx_reduce(m, TP_OP_MIN, x, 0, NULL, 0, &lo));
  TP_TRY(clamp0(m, hi, 1, &hi));
  TP_TRY(clamp0(m, lo, 0, &lo));
  TP_TRY(tp_onnx_binary(m, TP_OP_SUB, hi, lo, &scale));
  TP_TRY(tp_onnx_binary(m, TP_OP_DIV, scale, tp_onnx_scalar(255), &scale));
  /* zero point: saturate(round(0 - min / scale)) */
  TP_TRY(tp_onnx_binary(m, TP_OP_DIV, lo, scale, &zp));
  TP_TRY(tp_onnx_unary(m, TP_OP_NEG, zp, &zp));
  TP_TRY(tp_onnx_unary(m, TP_OP_ROUND, zp, &zp));
  TP_TRY(tp_onnx_cast(m, zp, TP_U8, &zpq));
  /* y = quantize(x, scale > 0 ? scale : 1, zp): one kernel; the scale is 0
   * only for an all-zero x (or NaN for a NaN in x), where x / 1 + zp gives
   * ONNX's zeros (NaN -> 0) */
  ref pos, safe;
  TP_TRY(tp_onnx_binary(m, TP_OP_GT, scale, tp_onnx_scalar(0), &pos));
  TP_TRY(tp_onnx_where(m, pos, scale, tp_onnx_scalar(1), &safe));
  TP_TRY(quantize(m, n, x, safe, zpq, TP_U8, &y));
  TP_TRY(tp_onnx_set_out(m, n, 0, y));
  TP_TRY(tp_onnx_set_out(m, n, 1, scale));
  return tp_onnx_set_out(m, n, 2, zpq);
}

/* (q - zp) as int32 for the exact integer product; zp 1-D per row of a
 * (row = 1) or per column of b (row = 0). */
/* q int8 / uint8, and its zero point (when given) of the same dtype. */
static tp_status check_quant(imp *m, ref q, ref zp, const char *what) {
  tp_desc qd = tp_onnx_desc(m, q);
  if (!is_quant_dtype(qd.dtype))
    return tp_fail(TP_ERR_UNSUPPORTED, "%s has dtype %s (int8 or uint8 are supported)", what, tp_dtype_name(qd.dtype));
  if (zp.kind == R_NONE) return TP_OK;
  tp_desc zd = tp_onnx_desc(m, zp);
  if (zd.dtype != qd.dtype)
    return tp_fail(TP_ERR_INVALID_ARG, "the zero point of %s has dtype %s, %s %s; they must match", what,
                   tp_dtype_name(zd.dtype), what, tp_dtype_name(qd.dtype));
  return TP_OK;
}

static tp_status centered(imp *m, ref q, ref zp, int row, const char *what, ref *out) {
  TP_TRY(check_quant(m, q, zp, what));
  if (zp.kind == R_NONE) {
    *out = q; /* matmul_int reads int8 / uint8 itself */
    return TP_OK;
  }
  tp_desc zd = tp_onnx_desc(m, zp);
  ref y;
  TP_TRY(tp_onnx_cast(m, q, TP_I32, &y));
  TP_TRY(tp_onnx_cast(m, zp, TP_I32, &zp));
  if (row && zd.ndim == 1 && tp_shape_numel(1, zd.shape) > 1) {
    int64_t sh[2] = {zd.shape[0], 1};
    TP_TRY(tp_onnx_reshape(m, zp, 2, sh, &zp));
  }
  return tp_onnx_binary(m, TP_OP_SUB, y, zp, out);
}

/* A zero point matmul_int takes as an operand (ops.def): q's dtype, one
 * value, or one per row of a ([M], [M,1]) / column of b ([N], [1,N]). */
static int direct_zp(imp *m, ref q, ref zp, int row) {
  if (zp.kind == R_NONE) return 1;
  tp_desc qd = tp_onnx_desc(m, q), zd = tp_onnx_desc(m, zp);
  if (zd.dtype != qd.dtype || qd.ndim < 1) return 0;
  int64_t nz = tp_shape_numel(zd.ndim, zd.shape);
  if (nz == 1) return 1;
  int64_t want = qd.ndim < 2 ? 1 : row ? qd.shape[qd.ndim - 2] : qd.shape[qd.ndim - 1];
  return nz == want && (zd.ndim == 1 || (zd.ndim == 2 && zd.shape[row ? 1 : 0] == 1));
}

/* (a - azp) @ (b - bzp): matmul_int, exact, int32; int8/uint8 operands
 * with their zero points as operands (the integer GEMM), other zero point
 * shapes subtracted in int32 first. */
static tp_status int_matmul(imp *m, ref a, ref azp, ref b, ref bzp, ref *out) {
  ref ac, bc;
  if (is_quant_dtype(tp_onnx_desc(m, a).dtype) && is_quant_dtype(tp_onnx_desc(m, b).dtype) && direct_zp(m, a, azp, 1) &&
      direct_zp(m, b, bzp, 0)) {
    ref args[4] = {a, b, azp, bzp};
    int nin = bzp.kind != R_NONE ? 4 : azp.kind != R_NONE ? 3 : 2;
    return tp_onnx_emit(m, TP_OP_MATMUL_INT, nin, args, NULL, out);
  }
  TP_TRY(centered(m, a, azp, 1, "A", &ac));
  TP_TRY(centered(m, b, bzp, 0, "B", &bc));
  return tp_onnx_binary(m, TP_OP_MATMUL_INT, ac, bc, out);
}

tp_status tp_onnx_cv_matmulint(imp *m, onode *n, int arg) {
  (void)arg;
  ref a, b, az, bz, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &a));
  TP_TRY(tp_onnx_need_in(m, n, 1, &b));
  TP_TRY(tp_onnx_in(m, n, 2, &az));
  TP_TRY(tp_onnx_in(m, n, 3, &bz));
  TP_TRY(int_matmul(m, a, az, b, bz, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

tp_status tp_onnx_cv_qlinearmatmul(imp *m, onode *n, int arg) {
  (void)arg;
  ref r[8], y, s;
  tp_dtype qd;
  TP_TRY(qlinear_inputs(m, n, "a_scale", "b_scale", r, &qd));
  ref a = r[0], as = r[1], az = r[2], b = r[3], bs = r[4], bz = r[5], ys = r[6], yz = r[7];
  TP_TRY(int_matmul(m, a, az, b, bz, &y));
  TP_TRY(tp_onnx_cast(m, y, TP_F32, &y));
  /* y = saturate(round(acc * a_scale * b_scale / y_scale) + y_zp) */
  TP_TRY(tp_onnx_cast(m, as, TP_F32, &as));
  TP_TRY(tp_onnx_cast(m, bs, TP_F32, &bs));
  TP_TRY(tp_onnx_binary(m, TP_OP_MUL, as, bs, &s));
  TP_TRY(tp_onnx_binary(m, TP_OP_MUL, y, s, &y));
  TP_TRY(quantize(m, n, y, ys, yz, qd, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* ---- integer convolutions: the Conv converter on exact float32 operands ---- */

/* A fresh value name in the model's arena (\x01 never starts an ONNX name). */
static char *tmp_name(imp *m, const char *what) {
  static unsigned counter; /* only makes names distinct; the import is single-threaded per model */
  char b[48];
  int k = snprintf(b, sizeof b, "\x01q%s%u", what, __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
  return tp_onnx_arena_str(&m->md, b, (size_t)k);
}

static tp_status bind(imp *m, char *name, ref r) {
  char *outs[1] = {name};
  onode tmp;
  memset(&tmp, 0, sizeof tmp);
  tmp.nout = 1;
  tmp.out = outs;
  return tp_onnx_set_out(m, &tmp, 0, r);
}

/* Conv(x, w[, b]) with node n's attributes (pads, strides, dilations,
 * group, auto_pad, kernel_shape). */
static tp_status conv_of(imp *m, onode *n, ref x, ref w, ref b, ref *out) {
  char *ins[3], *outs[1];
  if (!(ins[0] = tmp_name(m, "x")) || !(ins[1] = tmp_name(m, "w")) || !(ins[2] = tmp_name(m, "b")) ||
      !(outs[0] = tmp_name(m, "y")))
    return TP_ERR_OUT_OF_MEMORY;
  TP_TRY(bind(m, ins[0], x));
  TP_TRY(bind(m, ins[1], w));
  if (b.kind != R_NONE) TP_TRY(bind(m, ins[2], b));
  onode c = *n;
  c.in = ins;
  c.nin = b.kind != R_NONE ? 3 : 2;
  c.out = outs;
  c.nout = 1;
  TP_TRY(tp_onnx_cv_conv(m, &c, 0));
  onode rd;
  memset(&rd, 0, sizeof rd);
  rd.in = outs;
  rd.nin = 1;
  return tp_onnx_need_in(m, &rd, 0, out);
}

/* (q - zp) for a conv operand; a 1-D zero point of w is per output channel. */
static tp_status conv_centered(imp *m, ref q, ref zp, int is_w, const char *what, ref *out) {
  TP_TRY(check_quant(m, q, zp, what));
  tp_desc qd = tp_onnx_desc(m, q);
  ref y;
  TP_TRY(tp_onnx_cast(m, q, TP_F32, &y));
  if (zp.kind == R_NONE) {
    *out = y;
    return TP_OK;
  }
  tp_desc zd = tp_onnx_desc(m, zp);
  int64_t zn = tp_shape_numel(zd.ndim, zd.shape);
  TP_TRY(tp_onnx_cast(m, zp, TP_F32, &zp));
  if (zd.ndim == 1 && zn > 1) {
    if (!is_w || zn != qd.shape[0])
      return tp_fail(TP_ERR_INVALID_ARG, "the zero point of %s has %lld values; a scalar%s is supported", what,
                     (long long)zn, is_w ? " or one per output channel" : "");
    int64_t sh[TP_MAX_DIMS];
    for (int k = 0; k < qd.ndim; k++) sh[k] = k ? 1 : zn;
    TP_TRY(tp_onnx_reshape(m, zp, qd.ndim, sh, &zp));
  }
  return tp_onnx_binary(m, TP_OP_SUB, y, zp, out);
}

/* The exact integer convolution of centered float32 operands, as int32:
 * one float32 convolution when every output sums at most 258 products of
 * 255 * 255 (exact below 2^24); with group 1, the input channels in chunks
 * of at most 258 / (kernel size) each, whose exact partial sums add in
 * int32. Otherwise (a kernel of more than 258 taps, or a grouped
 * convolution past the bound) refused, never inexact. b (float32, exact
 * integers, or none) joins the first chunk. */
static tp_status conv_int32(imp *m, onode *n, ref x, ref w, ref b, const char *op, ref *out) {
  tp_desc d = tp_onnx_desc(m, w);
  double taps = 1;
  for (int k = 2; k < d.ndim; k++) taps *= (double)d.shape[k];
  double K = taps * (double)(d.ndim > 1 ? d.shape[1] : 1);
  if (K * 255.0 * 255.0 <= EXACT_F32) {
    TP_TRY(conv_of(m, n, x, w, b, out));
    return tp_onnx_cast(m, *out, TP_I32, out);
  }
  int64_t group = tp_onnx_attr_int(m, n, "group", 1);
  int64_t per = (int64_t)(EXACT_F32 / (255.0 * 255.0) / taps); /* channels per exact chunk */
  if (group != 1 || per < 1)
    return tp_fail(TP_ERR_UNSUPPORTED,
                   "%s with %.0f products per output is not supported yet (exact up to 258 through the float32 "
                   "convolution%s; the integer kernels are to come)", op, K,
                   group != 1 ? " when grouped" : ", and the kernel alone has more");
  ref acc = tp_onnx_none();
  for (int64_t c0 = 0; c0 < d.shape[1]; c0 += per) {
    int64_t c1 = c0 + per < d.shape[1] ? c0 + per : d.shape[1];
    ref xs, ws, y;
    TP_TRY(tp_onnx_slice(m, x, 1, c0, c1, 1, &xs));
    TP_TRY(tp_onnx_slice(m, w, 1, c0, c1, 1, &ws));
    TP_TRY(conv_of(m, n, xs, ws, c0 ? tp_onnx_none() : b, &y));
    TP_TRY(tp_onnx_cast(m, y, TP_I32, &y));
    if (acc.kind == R_NONE) acc = y;
    else TP_TRY(tp_onnx_binary(m, TP_OP_ADD, acc, y, &acc));
  }
  *out = acc;
  return TP_OK;
}

tp_status tp_onnx_cv_convint(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, w, xz, wz, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_need_in(m, n, 1, &w));
  TP_TRY(tp_onnx_in(m, n, 2, &xz));
  TP_TRY(tp_onnx_in(m, n, 3, &wz));
  int taken;
  TP_TRY(check_quant(m, x, xz, "x"));
  TP_TRY(check_quant(m, w, wz, "w"));
  ref args[4] = {x, w, xz, wz};
  TP_TRY(tp_onnx_conv_op(m, n, TP_OP_CONV2D_INT, 4, args, &taken, &y)); /* 1-D, 2-D: the integer conv */
  if (!taken) {
    TP_TRY(conv_centered(m, x, xz, 0, "x", &x));
    TP_TRY(conv_centered(m, w, wz, 1, "w", &w));
    TP_TRY(conv_int32(m, n, x, w, tp_onnx_none(), "ConvInteger", &y));
  }
  return tp_onnx_set_out(m, n, 0, y);
}

tp_status tp_onnx_cv_qlinearconv(imp *m, onode *n, int arg) {
  (void)arg;
  ref r[8], b, y, s;
  tp_dtype qd;
  TP_TRY(qlinear_inputs(m, n, "x_scale", "w_scale", r, &qd));
  ref x = r[0], xs = r[1], xz = r[2], w = r[3], ws = r[4], wz = r[5], ys = r[6], yz = r[7];
  TP_TRY(tp_onnx_in(m, n, 8, &b));
  tp_desc xd = tp_onnx_desc(m, x), wd = tp_onnx_desc(m, w);
  if (b.kind != R_NONE) {
    tp_desc bd = tp_onnx_desc(m, b);
    if (bd.dtype != TP_I32) return tp_fail(TP_ERR_INVALID_ARG, "B has dtype %s; int32 is required", tp_dtype_name(bd.dtype));
    if (bd.ndim != 1 || bd.shape[0] != wd.shape[0])
      return tp_fail(TP_ERR_INVALID_ARG, "B has %lld values; one per output channel (%lld) is required",
                     (long long)tp_shape_numel(bd.ndim, bd.shape), (long long)wd.shape[0]);
  }
  int taken;
  TP_TRY(check_quant(m, x, xz, "x"));
  TP_TRY(check_quant(m, w, wz, "w"));
  { /* 1-D, 2-D: one qconv2d, the requantization in the integer GEMM's epilogue */
    ref fx, fw, args[9];
    TP_TRY(tp_onnx_cast(m, xs, TP_F32, &fx));
    TP_TRY(tp_onnx_cast(m, ws, TP_F32, &fw));
    ref cy;
    TP_TRY(tp_onnx_cast(m, ys, TP_F32, &cy));
    args[0] = x, args[1] = w, args[2] = xz, args[3] = wz, args[4] = fx, args[5] = fw, args[6] = b, args[7] = cy, args[8] = yz;
    TP_TRY(tp_onnx_conv_op(m, n, TP_OP_QCONV2D, 9, args, &taken, &y));
    if (taken) {
      TP_TRY(name_after(m, n, y)); /* a run-time error (a scale fed as 0) names the model's node */
      return tp_onnx_set_out(m, n, 0, y);
    }
  }
  TP_TRY(conv_centered(m, x, xz, 0, "x", &x));
  TP_TRY(conv_centered(m, w, wz, 1, "w", &w));
  TP_TRY(conv_int32(m, n, x, w, tp_onnx_none(), "QLinearConv", &y));
  if (b.kind != R_NONE) { /* the bias in int32, per output channel (dim 1) */
    int64_t sh[TP_MAX_DIMS];
    for (int k = 0; k < xd.ndim - 1; k++) sh[k] = k ? 1 : wd.shape[0];
    TP_TRY(tp_onnx_reshape(m, b, xd.ndim - 1, sh, &b));
    TP_TRY(tp_onnx_binary(m, TP_OP_ADD, y, b, &y));
  }
  TP_TRY(tp_onnx_cast(m, y, TP_F32, &y));
  /* y = saturate(round(acc * x_scale * w_scale / y_scale) + y_zero_point); w_scale per output channel */
  TP_TRY(tp_onnx_cast(m, xs, TP_F32, &xs));
  TP_TRY(tp_onnx_cast(m, ws, TP_F32, &ws));
  tp_desc sd = tp_onnx_desc(m, ws);
  if (sd.ndim == 1 && sd.shape[0] > 1) {
    if (sd.shape[0] != wd.shape[0])
      return tp_fail(TP_ERR_INVALID_ARG, "w_scale has %lld values; a scalar or one per output channel (%lld)",
                     (long long)sd.shape[0], (long long)wd.shape[0]);
    int64_t sh[TP_MAX_DIMS];
    for (int k = 0; k < xd.ndim; k++) sh[k] = k == 1 ? sd.shape[0] : 1;
    TP_TRY(tp_onnx_reshape(m, ws, xd.ndim, sh, &ws));
  }
  TP_TRY(tp_onnx_binary(m, TP_OP_MUL, xs, ws, &s));
  TP_TRY(tp_onnx_binary(m, TP_OP_MUL, y, s, &y));
  TP_TRY(quantize(m, n, y, ys, yz, qd, &y));
  return tp_onnx_set_out(m, n, 0, y);
}
