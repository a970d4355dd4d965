/* quant.c - quantize / dequantize (ops.def; docs/quantization.md): scalar
 * reference loops, exact to ONNX's QuantizeLinear / DequantizeLinear:
 *   quantize   y = saturate(round half to even(x / scale) + zero_point)
 *              x / scale in float32 (as ONNX's reference), int8 [-128, 127]
 *              or uint8 [0, 255]; NaN -> 0
 *   dequantize y = (x - zero_point) * scale in float32, rounded once to
 *              the scale's dtype (float16/bfloat16 scales)
 * scale and zero_point broadcast against x (shape_quant checked it). Every
 * scale element must be finite and > 0: checked here, on every call, so
 * scales fed at run time are checked too.
 *   matmul_int numpy matmul of int8/uint8/int32 operands, exact: int64
 *              sums wrapped to int32 (ONNX MatMulInteger's int32 result);
 *              the reference the integer GEMM kernels are compared with */
#include "ops.h"
#include "../core/num.h"
#include <math.h>

/* Linear index into p (shape right-aligned to x's) of x's element i. */
static int64_t bindex(const tp_tensor *x, const tp_tensor *p, int64_t i) {
  int64_t j = 0, mul = 1;
  for (int d = x->ndim - 1; d >= 0; d--) {
    int64_t c = x->shape[d] ? i % x->shape[d] : 0;
    i = x->shape[d] ? i / x->shape[d] : 0;
    int pd = d - (x->ndim - p->ndim);
    if (pd < 0) break;
    if (p->shape[pd] != 1) j += c * mul;
    mul *= p->shape[pd];
  }
  return j;
}

static double round_even(double v) {
  double f = floor(v), d = v - f;
  if (v != v || isinf(v)) return v;
  if (d > 0.5) return f + 1;
  if (d < 0.5) return f;
  return fmod(f, 2.0) == 0 ? f : f + 1;
}

tp_status tp_exec_quant(tp_op op, int nin, tp_tensor *const *in, const tp_desc *od, tp_tensor **out) {
  tp_tensor *x = in[0], *s = in[1], *z = nin > 2 ? in[2] : NULL, *y = NULL;
  const char *nm = tp_op_name(op);
  int64_t ns = tp_tensor_numel(s);
  for (int64_t k = 0; k < ns; k++) {
    double v = tp_tensor_get_f64(s, k);
    if (!(v > 0) || isinf(v))
      return tp_fail(TP_ERR_INVALID_ARG, "%s: scale element %lld is %g; a scale must be finite and > 0", nm,
                     (long long)k, v);
  }
  TP_TRY(tp_tensor_empty(od->dtype, od->ndim, od->shape, &y));
  int64_t n = tp_tensor_numel(x);
  void *p = tp_tensor_ptr(y);
  if (op == TP_OP_QUANTIZE) {
    double lo = od->dtype == TP_I8 ? -128 : 0, hi = od->dtype == TP_I8 ? 127 : 255;
    for (int64_t i = 0; i < n; i++) {
      float q = (float)tp_tensor_get_f64(x, i) / (float)tp_tensor_get_f64(s, bindex(x, s, i));
      double r = round_even(q) + (z ? tp_tensor_get_f64(z, bindex(x, z, i)) : 0);
      r = r != r ? 0 : r < lo ? lo : r > hi ? hi : r;
      if (od->dtype == TP_I8) ((int8_t *)p)[i] = (int8_t)r;
      else ((uint8_t *)p)[i] = (uint8_t)r;
    }
  } else {
    for (int64_t i = 0; i < n; i++) {
      /* int32 x - zero_point: exact in double, one float32 rounding after the scale */
      double c = tp_tensor_get_f64(x, i) - (z ? tp_tensor_get_f64(z, bindex(x, z, i)) : 0);
      float v = (float)c * (float)tp_tensor_get_f64(s, bindex(x, s, i));
      switch (od->dtype) {
        case TP_F16: ((uint16_t *)p)[i] = tp_f64_to_f16(v); break;
        case TP_BF16: ((uint16_t *)p)[i] = tp_f64_to_bf16(v); break;
        default: ((float *)p)[i] = v; break;
      }
    }
  }
  *out = y;
  return TP_OK;
}

tp_status tp_exec_matmul_int(tp_tensor *a0, tp_tensor *b0, const tp_desc *od, tp_tensor **out) {
  tp_tensor *ai = NULL, *bi = NULL, *y = NULL;
  tp_status s = tp_to_dtype(a0, TP_I32, &ai);
  if (!s) s = tp_to_dtype(b0, TP_I32, &bi);
  if (!s) s = tp_tensor_empty(TP_I32, od->ndim, od->shape, &y);
  if (s) goto done;
  tp_matmul_geom g;
  tp_matmul_geom_init(ai, bi, &g);
  const int32_t *A = (const int32_t *)ai->storage->data, *B = (const int32_t *)bi->storage->data;
  int32_t *C = tp_tensor_ptr(y);
  for (int64_t q = 0; q < g.nbatch; q++) {
    int64_t oa, ob;
    tp_matmul_batch_offsets(&g, q, &oa, &ob);
    for (int64_t i = 0; i < g.M; i++)
      for (int64_t j = 0; j < g.N; j++) {
        uint64_t acc = 0; /* wraps like int32 sums do in ONNX (no undefined overflow) */
        for (int64_t k = 0; k < g.K; k++)
          acc += (uint64_t)((int64_t)A[oa + i * g.ars + k * g.acs] * (int64_t)B[ob + k * g.brs + j * g.bcs]);
        C[(q * g.M + i) * g.N + j] = (int32_t)(uint32_t)acc;
      }
  }
  *out = y;
  y = NULL;
done:
  tp_tensor_release(ai);
  tp_tensor_release(bi);
  tp_tensor_release(y);
  return s;
}
