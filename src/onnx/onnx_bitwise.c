/* onnx_bitwise.c - BitwiseAnd / BitwiseOr / BitwiseXor / BitwiseNot on
 * int32, int64, int8 and uint8 (rows in onnx_ops.def): the bitwise_* ops of
 * ops.def (int8/uint8 computed in int32 and wrapped back, exact for these
 * ops). Other integer widths are refused at load with the model's dtype. */
#include "import.h"

tp_status tp_onnx_cv_bitwise(imp *m, onode *n, int op) {
  ref a, b, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &a));
  tp_desc da = tp_onnx_desc(m, a);
  if (da.dtype != TP_I32 && da.dtype != TP_I64 && da.dtype != TP_I8 && da.dtype != TP_U8)
    return tp_fail(TP_ERR_INVALID_ARG, "input 0 has dtype %s; int8, uint8, int32 or int64 is required", tp_dtype_name(da.dtype));
  if (op == TP_OP_BITWISE_NOT) {
    TP_TRY(tp_onnx_unary(m, TP_OP_BITWISE_NOT, a, &y));
    return tp_onnx_set_out(m, n, 0, y);
  }
  TP_TRY(tp_onnx_need_in(m, n, 1, &b));
  tp_desc db = tp_onnx_desc(m, b);
  if (db.dtype != da.dtype)
    return tp_fail(TP_ERR_INVALID_ARG, "inputs must have one dtype, got %s and %s", tp_dtype_name(da.dtype),
                   tp_dtype_name(db.dtype));
  TP_TRY(tp_onnx_binary(m, (tp_op)op, a, b, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* BitShift on uint8 (the one unsigned dtype here): left (x * 2^s) mod 256,
 * right floor(x / 2^s), with 2^s and 2^-s looked up (gather) in a table of
 * 256 entries that is 0 for s >= 8 (every bit shifted out); exact in
 * float32, the int32 -> uint8 cast wraps. */
tp_status tp_onnx_cv_bitshift(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, s, tab, f, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_need_in(m, n, 1, &s));
  tp_desc dx = tp_onnx_desc(m, x), ds = tp_onnx_desc(m, s);
  if (dx.dtype != TP_U8 || ds.dtype != TP_U8)
    return tp_fail(TP_ERR_UNSUPPORTED, "BitShift of %s by %s is not supported (uint8 only)", tp_dtype_name(dx.dtype),
                   tp_dtype_name(ds.dtype));
  const char *dir = tp_onnx_attr_str(m, n, "direction", "");
  int left = !strcmp(dir, "LEFT");
  if (!left && strcmp(dir, "RIGHT"))
    return tp_fail(TP_ERR_INVALID_ARG, "direction '%s' must be LEFT or RIGHT", dir);
  float t[256];
  for (int k = 0; k < 256; k++) t[k] = k < 8 ? (left ? (float)(1 << k) : 1.0f / (float)(1 << k)) : 0.0f;
  int64_t sh = 256;
  tp_tensor *tt;
  TP_TRY(tp_tensor_new(TP_F32, 1, &sh, t, &tt));
  TP_TRY(tp_onnx_add_const(m, tt, &tab));
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = 0;
  TP_TRY(tp_onnx_cast(m, s, TP_I64, &s));
  TP_TRY(tp_onnx_emit(m, TP_OP_GATHER, 2, (ref[2]){tab, s}, &at, &f));
  TP_TRY(tp_onnx_cast(m, x, TP_F32, &x));
  TP_TRY(tp_onnx_binary(m, TP_OP_MUL, x, f, &y));
  if (!left) TP_TRY(tp_onnx_unary(m, TP_OP_FLOOR, y, &y));
  TP_TRY(tp_onnx_cast(m, y, TP_I32, &y));
  TP_TRY(tp_onnx_cast(m, y, TP_U8, &y));
  return tp_onnx_set_out(m, n, 0, y);
}
