/* qgemm.h - integer GEMM for quantized models (the runtime layer's API):
 *
 *   C[m,n] = epilogue( sum_k (A[m,k] - za) (B[k,n] - zb[n]) + bias[n] )
 *
 * A uint8 activations [M,K] (zero point za, scale sa), given per call; B int8
 * weights [K,N] with a zero point and a scale per tensor or per output
 * column n, packed once. The sum is exact in int32 (calls whose inputs
 * could overflow it are refused). The epilogue writes one of
 *   TP_QGEMM_S32  the sum itself (ONNX MatMulInteger)
 *   TP_QGEMM_F32  y = sum * (sa sb[n]) + bias_f32[n], optional relu
 *                 (DequantizeLinear -> MatMul -> Add -> Relu)
 *   TP_QGEMM_U8 / TP_QGEMM_S8
 *                 q = saturate(round_half_even(sum * (sa sb[n] / sy)) + zy),
 *                 optional relu (q >= zy) (QLinearMatMul, a QDQ MatMul
 *                 followed by QuantizeLinear); the multiplier is computed
 *                 once per column in float32.
 *
 *   tp_qgemm_weights w = {.K = K, .N = N, .b = B, .rsb = N, .csb = 1,
 *                         .nq = N, .zero_point = zb, .scale = sb};
 *   tp_qgemm_packed *p;
 *   tp_qgemm_pack(&w, &p);                       once per weight
 *   tp_qgemm_out o = {.kind = TP_QGEMM_U8, .c = y, .ldc = N,
 *                     .scale = sy, .zero_point = zy};
 *   tp_qgemm_run(p, M, a, K, za, sa, &o);        any number of times
 *   tp_qgemm_packed_free(p);
 *
 * The micro-kernel is chosen for this CPU when the weights are packed
 * (scalar; AVX2, AVX-VNNI, AVX512-VNNI natively; SIMD128 in Wasm; see
 * docs/quantization.md, "Integer kernels"); the packed layout belongs to it, so a
 * packed weight keeps using the variant it was packed for. Every call
 * checks its arguments and fails with a message naming the bad value
 * (tp_last_error), leaving nothing allocated. */
#ifndef TP_RUNTIME_QGEMM_H
#define TP_RUNTIME_QGEMM_H
#include <stdint.h>

#include "kernels/qgemm.h"
#include "../tensorplay.h"

typedef struct tp_qgemm_weights {
  int64_t K, N;
  const int8_t *b;           /* B[k,n] at b[k * rsb + n * csb] */
  int64_t rsb, csb;
  int64_t nq;                /* 1: per-tensor zero point/scale; N: per column */
  const int8_t *zero_point;  /* [nq]; NULL: 0 */
  const float *scale;        /* [nq], finite and > 0; NULL: only S32 outputs */
  const int32_t *bias;       /* [N] added to the int32 sum (ONNX QLinearConv's B); NULL: none */
} tp_qgemm_weights;

typedef struct tp_qgemm_out {
  int kind;                  /* enum tp_qgemm_kind */
  void *c;                   /* C[m,n] at c[m * ldc + n], elements of kind */
  int64_t ldc;
  float scale;               /* U8/S8: the output's scale (finite, > 0) */
  int32_t zero_point;        /* U8: [0,255]; S8: [-128,127] */
  const float *bias_f32;     /* F32: [N] added after scaling; NULL: none */
  int relu;                  /* F32/U8/S8: 1 applies relu */
} tp_qgemm_out;

typedef struct tp_qgemm_packed tp_qgemm_packed;

tp_status tp_qgemm_pack(const tp_qgemm_weights *w, tp_qgemm_packed **out);
void tp_qgemm_packed_free(tp_qgemm_packed *p);
/* The variant a packed weight runs with. */
const char *tp_qgemm_packed_variant(const tp_qgemm_packed *p);
tp_status tp_qgemm_run(const tp_qgemm_packed *p, int64_t M, const uint8_t *a, int64_t lda,
                       int32_t a_zero_point, float a_scale, const tp_qgemm_out *o);

/* Variants: the ones this host can run, best first (index 0 is what
 * tp_qgemm_pack uses unless tp_qgemm_set_variant chose another; "best"
 * goes back to index 0). Tests and benchmarks force each in turn. */
int tp_qgemm_variant_count(void);
const char *tp_qgemm_variant_name(int i);
/* The weights variant i takes: [-128, 127], or [-64, 63] for the 7-bit
 * kernels (avx2w7, wasmrelaxed), which tp_qgemm_pack skips for wider
 * weights unless forced (then it refuses them). Returns 0 if i is out of
 * range. */
int tp_qgemm_variant_weight_range(int i, int *lo_out, int *hi_out);
const char *tp_qgemm_variant(void);
tp_status tp_qgemm_set_variant(const char *name);
/* An upper layer may add a variant it built at run time (the Wasm relaxed-
 * SIMD kernel module): it becomes the best one. At most one is kept. */
void tp_qgemm_install_variant(const tp_qgemm_ukernel *uk);

/* The largest K the exact int32 sum allows for these zero points (and the
 * largest |bias|): K (max(za, 255 - za)) (max |B - zb|) + |bias| <= 2^31 - 1. */
int64_t tp_qgemm_max_k(int32_t a_zero_point, int32_t zb_min, int32_t zb_max, int64_t bias_absmax);

#endif
