/* kernels.h - the per-ISA kernel table. One implementation (vec_impl.h,
 * written with GCC/Clang vector extensions) is compiled once per ISA:
 * scalar-width-4 generic, SSE2, AVX2, AVX-512 natively, SIMD128 in Wasm.
 * Elementwise kernels use only IEEE add/sub/mul/div/sqrt and bit operations
 * (no FMA contraction), so every ISA gives bit-identical results; GEMM and
 * reductions may use FMA and differ in summation order. */
#ifndef TP_KERNELS_H
#define TP_KERNELS_H
#include <stddef.h>
#include <stdint.h>

enum tp_kunary {
  TP_KU_NEG, TP_KU_ABS, TP_KU_EXP, TP_KU_LOG, TP_KU_SQRT, TP_KU_RSQRT,
  TP_KU_TANH, TP_KU_SIGMOID, TP_KU_RELU, TP_KU_GELU_ERF, TP_KU_GELU_TANH,
  TP_KU_COUNT
};
/* Binary kernel operations (binary_f32's op, KIR's BINARY sub). */
/* PMAX(a, b) = a < b ? b : a and PMIN(a, b) = b < a ? b : a: Wasm's
 * f32x4.pmax/pmin (x86 maxps(b, a)/minps(b, a)), exactly what where(a < b,
 * b, a) and where(b < a, b, a) compute, NaNs included (the scheduler turns
 * such where(lt/gt) pairs, e.g. ONNX Clip, into them). */
/* MASKPOS(a, b) = a > 0 ? b : 0 (a NaN a gives 0): where(a > 0, b, 0), a
 * relu's gradient (the scheduler folds that where and its compare). */
enum tp_kbinary { TP_KBIN_ADD, TP_KBIN_SUB, TP_KBIN_MUL, TP_KBIN_DIV, TP_KBIN_PMAX, TP_KBIN_PMIN, TP_KBIN_MASKPOS, TP_KBIN_COUNT };
/* Operand layout of a binary kernel (binary_f32's mode): both vectors, a is
 * a scalar, b is a scalar. */
enum tp_kbmode { TP_KBMODE_VV, TP_KBMODE_SV, TP_KBMODE_VS, TP_KBMODE_COUNT };

typedef struct tp_kernels {
  const char *isa;
  int vec_width; /* floats per vector */
  void (*unary_f32)(int op, const float *a, float *y, int64_t n);
  void (*binary_f32)(int op, int mode, const float *a, const float *b, float *y, int64_t n);
  float (*sum_f32)(const float *a, int64_t n);
  float (*max_f32)(const float *a, int64_t n);
  float (*min_f32)(const float *a, int64_t n); /* NaN propagating: the last NaN of a */
  /* mm[0] = min, mm[1] = max in one pass; a NaN anywhere: both the last NaN of a */
  void (*minmax_f32)(const float *a, int64_t n, float *mm);
  /* y = saturate(round_half_even(x / scale) + zp) as int8 (s8) or uint8
   * bytes, NaN -> 0 (ONNX QuantizeLinear, one scale and zero point) */
  void (*quantize_f32)(const float *x, float scale, float zp, int s8, void *y, int64_t n);
  /* In place over one row: y = softmax(y) or log_softmax(y). */
  void (*softmax_f32)(float *y, int64_t n, int log);
  /* C[M,N] = A[M,K] B[K,N] (+ bias[N]), any element strides (packing makes
   * them contiguous). ldc: row stride of C, contiguous columns. */
  void (*gemm_f32)(int64_t M, int64_t N, int64_t K,
                   const float *A, int64_t rsa, int64_t csa,
                   const float *B, int64_t rsb, int64_t csb,
                   float *C, int64_t ldc, const float *bias);
  /* GEMM with B packed once ahead of time (a constant weight):
   *   size_t n = k->gemm_pack_b_size(K, N);           bytes, 0 if K or N <= 0
   *   float *pb = aligned_alloc(64, round_up(n, 64));  (any alignment works)
   *   k->gemm_pack_b(K, N, B, rsb, csb, pb);           B[K,N], any strides
   *   k->gemm_f32_packed(M, N, K, A, rsa, csa, pb, C, ldc, bias);  any number of times
   * The packed layout belongs to this table (tile width and depth blocking
   * differ per ISA): pack with the same table that multiplies. pb is only
   * read, so one packed B may be shared by threads. */
  size_t (*gemm_pack_b_size)(int64_t K, int64_t N);
  void (*gemm_pack_b)(int64_t K, int64_t N, const float *B, int64_t rsb, int64_t csb,
                      float *packed_out);
  void (*gemm_f32_packed)(int64_t M, int64_t N, int64_t K, const float *A, int64_t rsa,
                          int64_t csa, const float *packed_b, float *C, int64_t ldc,
                          const float *bias);
  /* Only columns [j0, j1) of that product (C, bias: the whole matrices);
   * j0 a multiple of the table's panel width (8, 16 or 32: any multiple of
   * 32 works; 0 <= j0, j1 <= N). Each element gets the same operations as
   * in gemm_f32_packed, so threads splitting N get the same bits. */
  void (*gemm_f32_packed_cols)(int64_t M, int64_t N, int64_t K, const float *A, int64_t rsa,
                               int64_t csa, const float *packed_b, int64_t j0, int64_t j1,
                               float *C, int64_t ldc, const float *bias);
  /* The same for a constant A (a 1x1 convolution's weight, [M, K] with
   * the activation as B): gemm_pack_a_size(M, K) bytes, gemm_pack_a(M, K,
   * A, rsa, csa, pa), then gemm_f32_packed_a(M, N, K, pa, B, rsb, csb, C,
   * ldc, bias). The layout follows this table and its depth blocking (KC,
   * as gemm_tune sets it) like a packed B. */
  size_t (*gemm_pack_a_size)(int64_t M, int64_t K);
  void (*gemm_pack_a)(int64_t M, int64_t K, const float *A, int64_t rsa, int64_t csa,
                      float *packed_out);
  void (*gemm_f32_packed_a)(int64_t M, int64_t N, int64_t K, const float *packed_a,
                            const float *B, int64_t rsb, int64_t csb, float *C, int64_t ldc,
                            const float *bias);
  /* Only rows [i0, i1) of that product (packed_a, C: the whole matrices);
   * i0 a multiple of the table's MR (4, 6 or 12: any multiple of 12 works;
   * 0 <= i0, i1 <= M). Each element gets the same operations as in
   * gemm_f32_packed_a, so threads splitting M get the same bits. */
  void (*gemm_f32_packed_a_rows)(int64_t M, int64_t N, int64_t K, const float *packed_a, int64_t i0,
                                 int64_t i1, const float *B, int64_t rsb, int64_t csb, float *C,
                                 int64_t ldc, const float *bias);
  /* unary_f32 with FMA contraction and reciprocal estimates (+ one Newton
   * step) where the ISA has them: within a few ulp of unary_f32, not
   * bit-identical across ISAs. stax's fused kernels use it; eager and the
   * parity-checked paths use unary_f32. Equal to unary_f32 elsewhere. */
  void (*unary_fast_f32)(int op, const float *a, float *y, int64_t n);
  /* Cache blocking of the GEMMs on this thread (depth KC, rows MC; <= 0:
   * the defaults); max-autotune times candidates. A B packed with
   * gemm_pack_b must be used with the KC it was packed with. */
  void (*gemm_tune)(int kc, int mc);
  /* Frees this thread's GEMM pack buffers (kept per thread between calls);
   * the thread pool's workers call it before they exit. */
  void (*gemm_release)(void);
  /* y[0, N) = x[0, K) B (+ bias) for one row x and B [K, N] row major
   * (row stride ldb, contiguous columns): the matrix-vector product of a
   * recurrent step at batch 1, which the packed GEMM would run at one row
   * of its MR-row tile. May use FMA. */
  void (*gemv_f32)(int64_t N, int64_t K, const float *x, const float *B, int64_t ldb, float *y,
                   const float *bias);
  /* One output row of a depthwise convolution (conv2d with one input
   * channel per group): y[j] = bias + sum over kh < KH, kw < KW of
   * w[kh * KW + kw] * rows[kh][j * sw + kw * dw - pl] for j < OW; rows[kh]
   * is NULL for an input row in the padding, and columns outside [0, W)
   * are padding (zero). May use FMA. */
  void (*dwconv_row_f32)(const float *const *rows, int64_t KH, int64_t KW, const float *w,
                         float bias, float *y, int64_t OW, int64_t W, int64_t sw, int64_t dw,
                         int64_t pl);
  /* Depthwise convolution, one output row at column stride 2 (dilation 1)
   * over zero-padded input rows split into their even and odd columns:
   * y[j] = bias + sum over kh < KH (ev[kh] != NULL), kw < KW of
   * w[kh * KW + kw] * (kw even ? ev[kh][j + kw / 2] : od[kh][j + kw / 2]),
   * j < OW, summed in that order (as dwconv_row_f32 does). May use FMA. */
  void (*dwconv_row_s2_f32)(const float *const *ev, const float *const *od, int64_t KH, int64_t KW,
                            const float *w, float bias, float *y, int64_t OW);
  /* float16 bit patterns -> float32, exact, vectorized (F16C / AVX-512F
   * vcvtph2ps, else integer ops); equals tp_f16_to_f32 (src/core/num.h) on
   * all 65536 patterns, NaNs made quiet. */
  void (*f16_to_f32)(const uint16_t *h, float *y, int64_t n);
  /* float32 -> float16 bit patterns, round to nearest, ties to even, past
   * 65504 (from 65520) Inf, subnormals kept, NaN quiet with its sign and top
   * payload bits: the bits of tp_f32_to_f16 (src/core/num.h) for every
   * float32 (F16C / AVX-512F vcvtps2ph, else integer ops; test_gemm_f16). */
  void (*f32_to_f16)(const float *x, uint16_t *h, int64_t n);
  /* GEMM with a float16 B packed once (gemm_f16_impl.h; issue 17): panels
   * of halves, half the bytes of gemm_pack_b's, converted to float32 in
   * registers by the micro-kernel. C = A B(converted) (+ bias): the float32
   * GEMM's value up to summation order. Fixed blocking (gemm_tune does not
   * change it); _cols: columns [j0, j1), j0 a multiple of the panel width
   * (GEMM_COLS in the executor is). */
  size_t (*gemm_pack_b_f16_size)(int64_t K, int64_t N);
  void (*gemm_pack_b_f16)(int64_t K, int64_t N, const uint16_t *B, int64_t rsb, int64_t csb,
                          uint16_t *packed_out);
  void (*gemm_f32_packed_f16)(int64_t M, int64_t N, int64_t K, const float *A, int64_t rsa,
                              int64_t csa, const uint16_t *packed_b, float *C, int64_t ldc,
                              const float *bias);
  void (*gemm_f32_packed_f16_cols)(int64_t M, int64_t N, int64_t K, const float *A, int64_t rsa,
                                   int64_t csa, const uint16_t *packed_b, int64_t j0, int64_t j1,
                                   float *C, int64_t ldc, const float *bias);
} tp_kernels;

/* The SIMD128 table's GEMM panel width (columns per packed B panel) and
 * default depth block: the Wasm code generator reads B packed by that table
 * (src/codegen/wasm/emit_gemm.c). */
#define TP_WASMSIMD_NR 8
#define TP_WASMSIMD_KC 256

extern const tp_kernels tp_kernels_generic;
#if defined(__x86_64__) || defined(__i386__)
/* gemm_avx512.c: intrinsics GEMM (12x32 tile) used by tp_kernels_avx512. */
void tp_f32_gemm__avx512(int64_t M, int64_t N, int64_t K, const float *A, int64_t rsa,
                         int64_t csa, const float *B, int64_t rsb, int64_t csb, float *C,
                         int64_t ldc, const float *bias);
size_t tp_f32_gemm_pack_b_size__avx512(int64_t K, int64_t N);
void tp_f32_gemm_tune__avx512(int kc, int mc);
void tp_f32_gemm_release__avx512(void);
void tp_f32_gemm_pack_b__avx512(int64_t K, int64_t N, const float *B, int64_t rsb, int64_t csb,
                                float *packed_out);
void tp_f32_gemm_packed__avx512(int64_t M, int64_t N, int64_t K, const float *A, int64_t rsa,
                                int64_t csa, const float *packed_b, float *C, int64_t ldc,
                                const float *bias);
void tp_f32_gemm_packed_cols__avx512(int64_t M, int64_t N, int64_t K, const float *A, int64_t rsa,
                                     int64_t csa, const float *packed_b, int64_t j0, int64_t j1,
                                     float *C, int64_t ldc, const float *bias);
size_t tp_f32_gemm_pack_a_size__avx512(int64_t M, int64_t K);
void tp_f32_gemm_pack_a__avx512(int64_t M, int64_t K, const float *A, int64_t rsa, int64_t csa,
                                float *packed_out);
void tp_f32_gemm_packed_a__avx512(int64_t M, int64_t N, int64_t K, const float *packed_a,
                                  const float *B, int64_t rsb, int64_t csb, float *C, int64_t ldc,
                                  const float *bias);
void tp_f32_gemm_packed_a_rows__avx512(int64_t M, int64_t N, int64_t K, const float *packed_a, int64_t i0,
                                       int64_t i1, const float *B, int64_t rsb, int64_t csb, float *C,
                                       int64_t ldc, const float *bias);
extern const tp_kernels tp_kernels_sse2;
extern const tp_kernels tp_kernels_avx2;
extern const tp_kernels tp_kernels_avx512;
#endif
#if defined(__wasm_simd128__)
extern const tp_kernels tp_kernels_wasmsimd;
#endif

#endif
