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
