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
 *   matmul_int (a - a_zero_point) @ (b - b_zero_point), numpy matmul of
 *              int8/uint8/int32 operands, exact: int64 sums wrapped to int32
 *              (ONNX MatMulInteger's int32 result). int8/uint8 operands run
 *              on the integer GEMM (src/runtime/qgemm.h, the variant this
 *              CPU has) whenever its exact int32 sum cannot overflow;
 *              otherwise (int32 operands, K past tp_qgemm_max_k) the scalar
 *              loop, which is also the reference (tp_exec_matmul_int_ref). */
#include "ops.h"
#include "../core/num.h"
#include "../runtime/qgemm.h"
#include <string.h>
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

/* quantize of a contiguous float32 x by one scale and zero point, the same
 * values as the loop below: q = x / scale in float32, rounded half to even
 * as (q + 1.5 2^23) - 1.5 2^23 once |q| <= 2^22 (beyond, every result
 * saturates), + zero point, saturated; NaN -> 0 (the ISA table's
 * quantize_f32, vec_impl.h). 0 when it does not apply. */
static int quantize_fast(const tp_tensor *x, const tp_tensor *s, const tp_tensor *z, tp_dtype od, void *p) {
  if (x->dtype != TP_F32 || !tp_tensor_is_contiguous(x) || tp_tensor_numel(s) != 1 || (z && tp_tensor_numel(z) != 1))
    return 0;
  const float *X0 = tp_tensor_ptr(x);
  const float sc = (float)tp_tensor_get_f64(s, 0), zp = z ? (float)tp_tensor_get_f64(z, 0) : 0.0f;
  tp_kern()->quantize_f32(X0, sc, zp, od == TP_I8, p, tp_tensor_numel(x)); /* the ISA table's vector loop */
  return 1;
}

/* The broadcast layout of a scale / zero point p against contiguous x: 0
 * one value; 1 one per element of x's last dim; 2 one per element of x's
 * first dim (x at least 2-D); -1 anything else. */
static int param_layout(const tp_tensor *x, const tp_tensor *p) {
  if (!p || tp_tensor_numel(p) == 1) return 0;
  int64_t n = tp_tensor_numel(p), last = x->ndim ? x->shape[x->ndim - 1] : 1;
  if (!tp_tensor_is_contiguous(p)) return -1;
  if (p->ndim >= 1 && n == last && p->shape[p->ndim - 1] == last) return 1;
  if (x->ndim >= 2 && p->ndim == x->ndim && n == x->shape[0] && p->shape[0] == n) return 2;
  return -1;
}

/* dequantize of a contiguous int8/uint8 x to float32 by a scale and zero
 * point per tensor, per last-dim or per first-dim element (the weights'
 * per-channel forms): (float)(x - zp) * scale, as the loop below. 0 when it
 * does not apply. */
static int dequantize_fast(const tp_tensor *x, const tp_tensor *s, const tp_tensor *z, tp_dtype od, float *y) {
  if ((x->dtype != TP_I8 && x->dtype != TP_U8) || od != TP_F32 || s->dtype != TP_F32 || !tp_tensor_is_contiguous(x)) return 0;
  int ls = param_layout(x, s), lz = param_layout(x, z);
  if (ls < 0 || lz < 0 || (ls && lz && ls != lz)) return 0;
  int lay = ls ? ls : lz;
  int64_t n = tp_tensor_numel(x), last = x->ndim ? x->shape[x->ndim - 1] : 1, inner = lay == 2 ? n / x->shape[0] : last;
  int64_t groups = inner ? n / inner : 0;
  const float *S = tp_tensor_ptr(s);
  const void *Z = z ? tp_tensor_ptr(z) : NULL, *X = tp_tensor_ptr(x);
  int i8 = x->dtype == TP_I8;
#define ZP(c) (Z ? (i8 ? ((const int8_t *)Z)[lz ? (c) : 0] : ((const uint8_t *)Z)[lz ? (c) : 0]) : 0)
  for (int64_t g = 0; g < groups; g++) {
    const int64_t o = g * inner;
    if (lay == 1) { /* channel j */
      for (int64_t j = 0; j < inner; j++) {
        int32_t v = i8 ? ((const int8_t *)X)[o + j] : ((const uint8_t *)X)[o + j];
        y[o + j] = (float)(v - ZP(j)) * S[ls ? j : 0];
      }
    } else { /* one channel (g) or one value for the whole run */
      const int32_t zp = ZP(g);
      const float sc = S[ls ? g : 0];
      if (i8)
        for (int64_t j = 0; j < inner; j++) y[o + j] = (float)(((const int8_t *)X)[o + j] - zp) * sc;
      else
        for (int64_t j = 0; j < inner; j++) y[o + j] = (float)(((const uint8_t *)X)[o + j] - zp) * sc;
    }
  }
#undef ZP
  return 1;
}

static tp_status check_scales(const char *op, const char *what, const tp_tensor *t);

tp_status tp_quantize_into(int nin, tp_tensor *const *in, tp_tensor *y, int *done) {
  tp_tensor *x = in[0], *s = nin > 1 ? in[1] : NULL, *z = nin > 2 ? in[2] : NULL;
  *done = 0;
  if (!x || !s || s->dtype != TP_F32 || (y->dtype != TP_I8 && y->dtype != TP_U8) || (z && z->dtype != y->dtype) ||
      !tp_tensor_is_contiguous(y) || x->ndim != y->ndim || memcmp(x->shape, y->shape, sizeof(int64_t) * (size_t)x->ndim))
    return TP_OK;
  if (x->dtype != TP_F32 || !tp_tensor_is_contiguous(x) || tp_tensor_numel(s) != 1 || (z && tp_tensor_numel(z) != 1))
    return TP_OK;
  TP_TRY(check_scales("quantize", "scale", s));
  *done = quantize_fast(x, s, z, y->dtype, tp_tensor_ptr(y));
  return TP_OK;
}

tp_status tp_exec_quant(tp_op op, int nin, tp_tensor *const *in, const tp_desc *od, int fast, tp_tensor **out) {
  tp_tensor *x = in[0], *s = in[1], *z = nin > 2 ? in[2] : NULL, *y = NULL;
  const char *nm = tp_op_name(op);
  TP_TRY(check_scales(nm, "scale", s));
  TP_TRY(tp_tensor_empty(od->dtype, od->ndim, od->shape, &y));
  int64_t n = tp_tensor_numel(x);
  void *p = tp_tensor_ptr(y);
  if (fast && (op == TP_OP_QUANTIZE ? quantize_fast(x, s, z, od->dtype, p) : dequantize_fast(x, s, z, od->dtype, p))) {
    *out = y;
    return TP_OK;
  }
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

/* ---- matmul_int ---------------------------------------------------------- */

/* Every element of a scale finite and > 0, else an error naming it. */
static tp_status check_scales(const char *op, const char *what, const tp_tensor *t) {
  int64_t n = tp_tensor_numel(t);
  for (int64_t k = 0; k < n; k++) {
    double v = tp_tensor_get_f64(t, k);
    if (!(v > 0) || isinf(v))
      return tp_fail(TP_ERR_INVALID_ARG, "%s: %s element %lld is %g; a scale must be finite and > 0", op, what, (long long)k, v);
  }
  return TP_OK;
}

/* Zero point element of row i (a) / column j (b): one element, or one per row / column. */
static int32_t zp_at(const tp_tensor *z, int64_t i) {
  if (!z) return 0;
  return (int32_t)tp_tensor_get_f64(z, tp_tensor_numel(z) == 1 ? 0 : i);
}

/* The scalar loop: int64 sums of (A - za) (B - zb) wrapped to int32. */
tp_status tp_exec_matmul_int_ref(int nin, tp_tensor *const *in, const tp_desc *od, tp_tensor **out) {
  tp_tensor *ai = NULL, *bi = NULL, *y = NULL;
  tp_tensor *az = nin > 2 ? in[2] : NULL, *bz = nin > 3 ? in[3] : NULL;
  tp_status s = tp_to_dtype(in[0], TP_I32, &ai);
  if (!s) s = tp_to_dtype(in[1], TP_I32, &bi);
  if (!s) s = tp_tensor_empty(TP_I32, od->ndim, od->shape, &y);
  if (s) goto done;
  tp_matmul_geom g;
  tp_matmul_geom_init(ai, bi, &g);
  const int32_t *A = (const int32_t *)ai->storage->data, *B = (const int32_t *)bi->storage->data;
  int32_t *C = tp_tensor_ptr(y);
  for (int64_t q = 0; q < g.nbatch; q++) {
    int64_t oa, ob;
    tp_matmul_batch_offsets(&g, q, &oa, &ob);
    for (int64_t i = 0; i < g.M; i++) {
      int64_t za = zp_at(az, i);
      for (int64_t j = 0; j < g.N; j++) {
        int64_t zb = zp_at(bz, j);
        uint64_t acc = 0; /* wraps like int32 sums do in ONNX (no undefined overflow) */
        for (int64_t k = 0; k < g.K; k++)
          acc += (uint64_t)(((int64_t)A[oa + i * g.ars + k * g.acs] - za) *
                            ((int64_t)B[ob + k * g.brs + j * g.bcs] - zb));
        C[(q * g.M + i) * g.N + j] = (int32_t)(uint32_t)acc;
      }
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

static int is_q8(tp_dtype d) { return d == TP_I8 || d == TP_U8; }

/* B [K,N] at b (elements of dtype bd, strides rs, cs) minus its zero point
 * packed as int8 for the integer GEMM: uint8 B and its zero point shift by
 * -128 ((B - 128) - (zb - 128) = B - zb, exact). */
static tp_status pack_b(const void *b, tp_dtype bd, int64_t K, int64_t N, int64_t rs, int64_t cs, const tp_tensor *bz,
                        const tp_tensor *bs, const tp_tensor *bias, tp_qmm_b *o) {
  memset(o, 0, sizeof *o);
  int32_t *bi = NULL; /* an int32 bias [N] added to the sum */
  if (bias) {
    if (!(bi = tp_alloc(sizeof(int32_t) * (size_t)N))) return tp_fail(TP_ERR_OUT_OF_MEMORY, "matmul_int: out of memory");
    for (int64_t j = 0; j < N; j++) {
      bi[j] = (int32_t)tp_tensor_get_f64(bias, tp_tensor_numel(bias) == 1 ? 0 : j);
      int64_t m = bi[j] < 0 ? -(int64_t)bi[j] : bi[j];
      if (m > o->bias_absmax) o->bias_absmax = m;
    }
  }
  int64_t nq = (bz && tp_tensor_numel(bz) > 1) || (bs && tp_tensor_numel(bs) > 1) ? N : 1;
  int8_t *zb = tp_alloc((size_t)nq);
  float *sb = bs ? tp_alloc(sizeof(float) * (size_t)nq) : NULL;
  if (!zb || (bs && !sb)) return tp_free(zb), tp_free(sb), tp_free(bi), tp_fail(TP_ERR_OUT_OF_MEMORY, "matmul_int: out of memory");
  for (int64_t j = 0; bs && j < nq; j++) sb[j] = (float)tp_tensor_get_f64(bs, tp_tensor_numel(bs) == 1 ? 0 : j);
  o->zb_min = 127, o->zb_max = -128;
  for (int64_t j = 0; j < nq; j++) {
    int32_t z = (bz && tp_tensor_numel(bz) == 1 ? zp_at(bz, 0) : zp_at(bz, j)) - (bd == TP_U8 ? 128 : 0);
    zb[j] = (int8_t)z;
    if (z < o->zb_min) o->zb_min = z;
    if (z > o->zb_max) o->zb_max = z;
  }
  int8_t *conv = NULL;
  const int8_t *src = (const int8_t *)b;
  if (bd == TP_U8) { /* shifted copy, row-major [K,N] */
    conv = tp_alloc((size_t)(K * N));
    if (!conv) return tp_free(zb), tp_free(sb), tp_free(bi), tp_fail(TP_ERR_OUT_OF_MEMORY, "matmul_int: out of memory for a %lldx%lld weight", (long long)K, (long long)N);
    const uint8_t *u = (const uint8_t *)b;
    for (int64_t k = 0; k < K; k++)
      for (int64_t j = 0; j < N; j++) conv[k * N + j] = (int8_t)(u[k * rs + j * cs] ^ 0x80);
    src = conv, rs = N, cs = 1;
  }
  tp_qgemm_weights w = {.K = K, .N = N, .b = src, .rsb = rs, .csb = cs, .nq = nq, .zero_point = zb, .scale = sb, .bias = bi};
  int64_t babs = o->bias_absmax;
  tp_status s = tp_qgemm_pack(&w, &o->p);
  tp_free(conv);
  tp_free(zb);
  tp_free(sb);
  tp_free(bi);
  o->K = K, o->N = N, o->bias_absmax = babs;
  return s;
}

tp_status tp_qmm_pack_raw(const void *b, tp_dtype bd, int64_t K, int64_t N, int64_t rs, int64_t cs, const tp_tensor *bz,
                          const tp_tensor *bs, const tp_tensor *bias, tp_qmm_b *out) {
  return pack_b(b, bd, K, N, rs, cs, bz, bs, bias, out);
}

tp_status tp_qmm_pack_b(const tp_tensor *b, const tp_tensor *bz, const tp_tensor *bs, tp_qmm_b *out) {
  memset(out, 0, sizeof *out);
  if (!is_q8(b->dtype) || b->ndim != 2 || b->shape[0] <= 0 || b->shape[1] <= 0) return TP_OK; /* not for the GEMM */
  for (int64_t k = 0; bs && k < tp_tensor_numel(bs); k++) { /* the GEMM takes finite scales > 0; others take the loop */
    double v = tp_tensor_get_f64(bs, k);
    if (!(v > 0) || isinf(v)) return TP_OK;
  }
  return pack_b(tp_tensor_ptr(b), b->dtype, b->shape[0], b->shape[1], b->strides[0], b->strides[1], bz, bs, NULL, out);
}

void tp_qmm_b_free(tp_qmm_b *b) {
  if (b && b->p) tp_qgemm_packed_free(b->p);
  if (b) b->p = NULL;
}

/* C[M,N] = epilogue((A - za) @ packed B) on the integer GEMM (o: the
 * output kind and its parameters, c at row 0; es its element size); A rows
 * of uint8 or int8 (shifted by +128 with its zero point) copied contiguous
 * when they are not. 1 in *done when it ran (0: the sum could overflow
 * int32: the caller takes the scalar loop). */
static tp_status run_q(const tp_qmm_b *pb, const tp_tensor *a, int64_t oa, int64_t ars, int64_t acs, int64_t M,
                       const tp_tensor *az, float sa, const tp_qgemm_out *o0, size_t es, int *done) {
  int64_t K = pb->K;
  int shift = a->dtype == TP_I8 ? 128 : 0;
  *done = 0;
  for (int64_t i = 0; i < M; i++) { /* every row's zero point must keep the sum exact */
    int32_t za = zp_at(az, i) + shift;
    if (K > tp_qgemm_max_k(za, pb->zb_min, pb->zb_max, 0)) return TP_OK;
    if (!az || tp_tensor_numel(az) == 1) break;
  }
  const uint8_t *A = (const uint8_t *)a->storage->data + oa;
  uint8_t *copy = NULL;
  int64_t lda = ars;
  if (shift || acs != 1 || ars < K) {
    copy = tp_alloc((size_t)(M * K));
    if (!copy) return tp_fail(TP_ERR_OUT_OF_MEMORY, "matmul_int: out of memory for a %lldx%lld operand", (long long)M, (long long)K);
    for (int64_t i = 0; i < M; i++)
      for (int64_t k = 0; k < K; k++) copy[i * K + k] = (uint8_t)(A[i * ars + k * acs] ^ (shift ? 0x80 : 0));
    A = copy, lda = K;
  }
  tp_qgemm_out o = *o0;
  tp_status s = TP_OK;
  if (!az || tp_tensor_numel(az) == 1) {
    s = tp_qgemm_run(pb->p, M, A, lda, zp_at(az, 0) + shift, sa, &o);
  } else { /* a zero point per row: one row per call */
    for (int64_t i = 0; i < M && !s; i++) {
      o.c = (char *)o0->c + (size_t)(i * pb->N) * es;
      s = tp_qgemm_run(pb->p, 1, A + i * lda, lda, zp_at(az, i) + shift, sa, &o);
    }
  }
  tp_free(copy);
  if (!s) *done = 1;
  return s;
}

tp_status tp_exec_matmul_int(int nin, tp_tensor *const *in, const tp_desc *od, const tp_qmm_b *pre, tp_tensor **out) {
  tp_tensor *a = in[0], *b = in[1], *az = nin > 2 ? in[2] : NULL, *bz = nin > 3 ? in[3] : NULL, *y = NULL;
  if (!is_q8(a->dtype) || !is_q8(b->dtype) || tp_shape_numel(od->ndim, od->shape) == 0 || a->shape[a->ndim - 1] == 0)
    return tp_exec_matmul_int_ref(nin, in, od, out);
  tp_matmul_geom g;
  tp_matmul_geom_init(a, b, &g);
  TP_TRY(tp_tensor_empty(TP_I32, od->ndim, od->shape, &y));
  int32_t *C = tp_tensor_ptr(y);
  int b_batched = b->ndim > 2, done = 1;
  tp_qmm_b own = {0};
  const tp_qmm_b *pb = pre && pre->p && !b_batched ? pre : NULL;
  tp_status s = TP_OK;
  size_t bes = tp_dtype_size(b->dtype);
  for (int64_t q = 0; q < g.nbatch && !s && done; q++) {
    int64_t oa, ob;
    tp_matmul_batch_offsets(&g, q, &oa, &ob);
    if (!pb || b_batched) {
      tp_qmm_b_free(&own);
      s = pack_b((const char *)b->storage->data + (size_t)ob * bes, b->dtype, g.K, g.N, g.brs, g.bcs, bz, NULL, NULL, &own);
      if (s) break;
      if (!b_batched) pb = &own;
    }
    tp_qgemm_out o = {.kind = TP_QGEMM_S32, .c = C + q * g.M * g.N, .ldc = g.N};
    s = run_q(b_batched ? &own : pb, a, oa, g.ars, g.acs, g.M, az, 1.0f, &o, sizeof(int32_t), &done);
  }
  tp_qmm_b_free(&own);
  if (!s && !done) { /* the int32 sum could overflow: the wrapping scalar loop */
    tp_tensor_release(y);
    return tp_exec_matmul_int_ref(nin, in, od, out);
  }
  if (s) {
    tp_tensor_release(y);
    return s;
  }
  *out = y;
  return TP_OK;
}

/* ---- qmatmul: the quantized linear layer (ops.def) --------------------------- */

/* The epilogue of one accumulator, as qgemm_epi.h computes it (IEEE float
 * multiply / add / compare; round half to even of |v| <= 2^22). */
double tp_qmm_epilogue(int32_t acc, float mult, const float *bias, int relu, const tp_desc *od, float zy) {
  float v = (float)acc * mult;
  if (od->dtype == TP_F32) {
    if (bias) v = v + *bias;
    return relu && !(v > 0.0f) ? 0.0 : (double)v;
  }
  if (v != v) return 0.0; /* a NaN multiplier: 0, as quantize gives for NaN */
  float lo = od->dtype == TP_U8 ? 0.0f : -128.0f, hi = od->dtype == TP_U8 ? 255.0f : 127.0f, big = 4194304.0f;
  if (relu && lo < zy) lo = zy;
  v = v < -big ? -big : v > big ? big : v;
  v = (float)round_even(v) + zy;
  return v < lo ? lo : v > hi ? hi : v;
}

tp_status tp_exec_qmatmul_ref(int nin, tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, tp_tensor **out) {
  (void)nin;
  tp_tensor *a = in[0], *b = in[1], *az = in[2], *bz = in[3], *as = in[4], *bs = in[5], *bias = in[6], *ys = in[7],
            *yz = in[8], *y = NULL;
  if (ys) TP_TRY(check_scales("qmatmul", "y_scale", ys)); /* as quantize does; a_scale and b_scale multiply as in the graph */
  TP_TRY(tp_tensor_empty(od->dtype, od->ndim, od->shape, &y));
  int64_t K = b->shape[0], N = b->shape[1], M = K ? tp_tensor_numel(a) / K : 0;
  float sa = (float)tp_tensor_get_f64(as, 0), sy = ys ? (float)tp_tensor_get_f64(ys, 0) : 1.0f;
  float zy = yz ? (float)tp_tensor_get_f64(yz, 0) : 0.0f;
  int64_t za = zp_at(az, 0);
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      uint64_t acc = 0;
      int64_t zb = bz && tp_tensor_numel(bz) > 1 ? zp_at(bz, j) : zp_at(bz, 0);
      for (int64_t k = 0; k < K; k++)
        acc += (uint64_t)(((int64_t)tp_tensor_get_f64(a, i * K + k) - za) * ((int64_t)tp_tensor_get_f64(b, k * N + j) - zb));
      float sb = (float)tp_tensor_get_f64(bs, tp_tensor_numel(bs) > 1 ? j : 0);
      float mult = ys ? sa * sb / sy : sa * sb;
      float bj = bias ? (float)tp_tensor_get_f64(bias, j) : 0.0f;
      double v = tp_qmm_epilogue((int32_t)(uint32_t)acc, mult, bias ? &bj : NULL, at->keepdim != 0, od, zy);
      int64_t o = i * N + j;
      if (od->dtype == TP_F32) ((float *)tp_tensor_ptr(y))[o] = (float)v;
      else if (od->dtype == TP_U8) ((uint8_t *)tp_tensor_ptr(y))[o] = (uint8_t)v;
      else ((int8_t *)tp_tensor_ptr(y))[o] = (int8_t)v;
    }
  *out = y;
  return TP_OK;
}

tp_status tp_exec_qmatmul(int nin, tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, const tp_qmm_b *pre,
                          tp_tensor **out) {
  return tp_exec_qmatmul_into(nin, in, at, od, pre, NULL, out);
}

tp_status tp_exec_qmatmul_into(int nin, tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, const tp_qmm_b *pre,
                               tp_tensor *into, tp_tensor **out) {
  tp_tensor *a = in[0], *b = in[1], *az = in[2], *bz = in[3], *as = in[4], *bs = in[5], *bias = in[6], *ys = in[7],
            *yz = in[8], *y = NULL, *ac = NULL, *bc = NULL;
  int64_t K = b->shape[0], N = b->shape[1], M = K ? tp_tensor_numel(a) / K : 0;
  if (M == 0 || N == 0 || K == 0) return tp_exec_qmatmul_ref(nin, in, at, od, out);
  if (ys) TP_TRY(check_scales("qmatmul", "y_scale", ys));
  /* a_scale 0 (DynamicQuantizeLinear's of an all-zero x), negative or not
   * finite, or such b scales: the loop, which multiplies as the graph does */
  double sa = tp_tensor_get_f64(as, 0);
  if (!(sa > 0) || isinf(sa) || (float)sa == 0.0f) return tp_exec_qmatmul_ref(nin, in, at, od, out);
  tp_qmm_b own = {0};
  const tp_qmm_b *pb = pre && pre->p ? pre : NULL;
  tp_status s = TP_OK;
  if (!pb) {
    s = tp_qmm_pack_b(b, bz, bs, &own);
    if (!s && !own.p) return tp_exec_qmatmul_ref(nin, in, at, od, out);
    pb = &own;
  }
  if (!s && !tp_tensor_is_contiguous(a)) {
    s = tp_tensor_empty(a->dtype, a->ndim, a->shape, &ac);
    if (!s) tp_tensor_copy_into(a, ac);
  }
  if (!s && bias && !tp_tensor_is_contiguous(bias)) {
    s = tp_tensor_empty(TP_F32, bias->ndim, bias->shape, &bc);
    if (!s) tp_tensor_copy_into(bias, bc);
  }
  if (into) *out = NULL;
  if (!s && !into) s = tp_tensor_empty(od->dtype, od->ndim, od->shape, &y);
  int done = 0;
  if (!s) {
    const tp_tensor *A = ac ? ac : a;
    tp_qgemm_out o = {.kind = od->dtype == TP_F32 ? TP_QGEMM_F32 : od->dtype == TP_U8 ? TP_QGEMM_U8 : TP_QGEMM_S8,
                      .c = tp_tensor_ptr(into ? into : y), .ldc = N, .relu = at->keepdim != 0,
                      .bias_f32 = bias ? (const float *)tp_tensor_ptr(bc ? bc : bias) : NULL,
                      .scale = ys ? (float)tp_tensor_get_f64(ys, 0) : 0.0f,
                      .zero_point = yz ? (int32_t)tp_tensor_get_f64(yz, 0) : 0};
    s = run_q(pb, A, A->offset, K, 1, M, az, (float)tp_tensor_get_f64(as, 0), &o, tp_dtype_size(od->dtype), &done);
  }
  tp_qmm_b_free(&own);
  tp_tensor_release(ac), tp_tensor_release(bc);
  if (!s && !done) { /* the int32 sum could overflow: the scalar loop, which wraps as the unfused graph */
    tp_tensor_release(y);
    if (!into) return tp_exec_qmatmul_ref(nin, in, at, od, out);
    tp_tensor *r = NULL;
    TP_TRY(tp_exec_qmatmul_ref(nin, in, at, od, &r));
    tp_tensor_copy_into(r, into);
    tp_tensor_release(r);
    return TP_OK;
  }
  if (s) {
    tp_tensor_release(y);
    return s;
  }
  if (!into) *out = y;
  return TP_OK;
}
