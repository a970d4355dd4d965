/* ops.h - the ops layer's API (src/ops): operator flags, shape rules, eager
 * and reference execution, the broadcast iterator, conv/pool geometry, and
 * the operator observer an upper layer installs. The public entry point,
 * tp_op_call, is in tensorplay.h; this header is for the layers above ops
 * (graph, lower, onnx, capture, compiler, the ABI) and for src/ops itself.
 * Core below it does not include it (scripts/check-layers.sh). */
#ifndef TP_OPS_H
#define TP_OPS_H
#include "../core/internal.h"
#include "../runtime/dispatch.h"

/* ---- ops (src/ops) ---- */
enum {
  TP_OPF_BINARY = 1 << 0,
  TP_OPF_UNARY = 1 << 1,
  TP_OPF_FLOAT_OUT = 1 << 2, /* integer inputs give float32 */
  TP_OPF_BOOL_OUT = 1 << 3,
  TP_OPF_REDUCE = 1 << 4,
  TP_OPF_VIEW = 1 << 5,
  TP_OPF_OPT = 1 << 6,       /* operands after the first may be NULL */
  TP_OPF_OPAQUE = 1 << 7,    /* host-run region: no shape rule, graphs only */
  TP_OPF_LOWP = 1 << 8,      /* reads float16/bfloat16/int8/uint8 operands itself; other ops
                              * get them widened to float32/int32 and the result rounded back
                              * once (tp_op_call, docs/quantization.md) */
};
int tp_op_flags(tp_op op);
/* The shape rule: descs[i] NULL for an absent optional operand. */
tp_status tp_op_infer(tp_op op, int nin, const tp_desc *const *in,
                      const tp_attrs *attrs, tp_desc *out);
/* Execute without capture (inputs already validated by tp_op_infer). */
tp_status tp_op_exec(tp_op op, int nin, tp_tensor *const *in,
                     const tp_attrs *attrs, const tp_desc *od, tp_tensor **out);
/* numpy matmul's batch broadcast of a [..., M, K] by b [..., K, N] (1-D
 * operands as [1, K] / [K, 1]): the matrix sizes and strides, the batch
 * count, and per batch entry the element offsets of a's and b's matrices. */
typedef struct tp_matmul_geom {
  int64_t M, N, K, nbatch;
  int64_t ars, acs, brs, bcs, aoff, boff;
  int nb;
  int64_t bshape[TP_MAX_DIMS], sta[TP_MAX_DIMS], stb[TP_MAX_DIMS];
} tp_matmul_geom;
void tp_matmul_geom_init(const tp_tensor *a, const tp_tensor *b, tp_matmul_geom *g);
void tp_matmul_batch_offsets(const tp_matmul_geom *g, int64_t bi, int64_t *oa, int64_t *ob);

/* 1 when op computes on widened copies of its float16/bfloat16/int8/uint8
 * operands (float32/int32) and rounds the result back once to *lp (the
 * rule of tp_op_call, which the reference follows too). */
int tp_op_lowp_widen(tp_op op, int nin, const tp_desc *const *in, tp_dtype *lp);
/* Reference (scalar, double-accumulating) execution: the test oracle. */
tp_status tp_op_exec_ref(tp_op op, int nin, tp_tensor *const *in,
                         const tp_attrs *attrs, tp_tensor **out);
/* Normalize a dim index against ndim (python rules); error names op. */
tp_status tp_norm_dim(const char *op, int64_t dim, int ndim, int64_t *out);
tp_dtype tp_promote(const tp_desc *a, const tp_desc *b);
/* Python slice rules (positive step): first index and length. */
void tp_slice_bounds(int64_t n, int64_t start, int64_t end, int64_t step, int64_t *s_out,
                     int64_t *len_out);
/* Broadcast iteration over an output and up to 3 inputs (src/ops/iter.c). */
typedef struct tp_iter {
  int nd, nops;             /* nops = 1 (output) + inputs */
  int64_t shape[TP_MAX_DIMS];
  int64_t st[4][TP_MAX_DIMS];
  int64_t off[4];
  int64_t idx[TP_MAX_DIMS];
  int64_t inner, outer;     /* inner run length, number of runs */
} tp_iter;
/* out: the (contiguous or strided) output; inputs are broadcast to it. */
void tp_iter_init(tp_iter *it, const tp_tensor *out, int nin, tp_tensor *const *in);
void tp_iter_next(tp_iter *it); /* advance off[] to the next inner run */
/* Strides viewing (xshape, xstrides) as shape without a copy; 0 if none. */
int tp_view_strides(int xnd, const int64_t *xshape, const int64_t *xstrides, int nd,
                    const int64_t *shape, int64_t *st);
/* dst = src converted to dtype d (a new reference when already d). */
tp_status tp_to_dtype(tp_tensor *src, tp_dtype d, tp_tensor **out);
/* quantize / dequantize (quant.c) */
/* fast 0: the scalar loop only (the reference) */
tp_status tp_exec_quant(tp_op op, int nin, tp_tensor *const *in, const tp_desc *od, int fast, tp_tensor **out);
/* quantize of a contiguous float32 x with one scale and zero point straight
 * into y (contiguous, x's shape, the zero point's dtype): *done 1; 0 when
 * it does not apply (nothing written). The scale is checked as by the op. */
tp_status tp_quantize_into(int nin, tp_tensor *const *in, tp_tensor *y, int *done);
/* matmul_int(a, b, a_zero_point?, b_zero_point?) (quant.c): int8/uint8
 * operands on the integer GEMM (pre: B packed once by tp_qmm_pack_b, or
 * NULL: packed per call), otherwise the scalar loop; _ref is the loop. */
typedef struct tp_qgemm_packed tp_qgemm_packed;
typedef struct tp_qmm_b {
  tp_qgemm_packed *p;     /* NULL: B is not for the integer GEMM */
  int64_t K, N;
  int32_t zb_min, zb_max; /* B's zero points as packed (uint8 B shifted by -128) */
  int64_t bias_absmax;    /* the largest |int32 bias| packed with B (0: none) */
} tp_qmm_b;
/* b_scale NULL: an S32 output only (matmul_int); else qmatmul's. */
tp_status tp_qmm_pack_b(const tp_tensor *b, const tp_tensor *b_zero_point, const tp_tensor *b_scale, tp_qmm_b *out);
void tp_qmm_b_free(tp_qmm_b *b);
/* The same for B [K, N] of dtype bd (int8/uint8) at b with element strides rs, cs. */
tp_status tp_qmm_pack_raw(const void *b, tp_dtype bd, int64_t K, int64_t N, int64_t rs, int64_t cs, const tp_tensor *bz,
                          const tp_tensor *bs, const tp_tensor *bias_i32, tp_qmm_b *out);
/* qmatmul's epilogue of one int32 sum (the scalar loops' formula, as the
 * integer GEMM computes it): float32 out y = acc * mult (+ *bias), relu;
 * quantized out saturate(round half even(acc * mult) + zy), relu at zy. */
double tp_qmm_epilogue(int32_t acc, float mult, const float *bias, int relu, const tp_desc *od, float zy);
/* conv2d_int (ops.def, src/ops/qconv.c): w [M, C, KH, KW] packed as W^T for
 * the integer GEMM (out->p NULL when it is not for the GEMM: groups > 1,
 * not 8-bit); the kernel (pre: the packed weight or NULL: packed per call;
 * into: the executor's contiguous int32 buffer, or NULL: *out is new), and
 * the scalar loop. */
tp_status tp_qconv_pack_w(const tp_tensor *w, const tp_tensor *w_zero_point, const tp_tensor *w_scale,
                          const tp_tensor *bias_i32, int64_t groups, tp_qmm_b *out);
/* qconv2d (ops.def) likewise (pre packed with w's scales and an int32 bias). */
tp_status tp_exec_qconv2d(int nin, tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, const tp_qmm_b *pre,
                          tp_tensor *into, tp_tensor **out);
tp_status tp_exec_qconv2d_ref(int nin, tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, tp_tensor **out);
tp_status tp_exec_conv2d_int(int nin, tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, const tp_qmm_b *pre,
                             tp_tensor *into, tp_tensor **out);
tp_status tp_exec_conv2d_int_ref(int nin, tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, tp_tensor **out);
tp_status tp_exec_matmul_int(int nin, tp_tensor *const *in, const tp_desc *od, const tp_qmm_b *pre, tp_tensor **out);
tp_status tp_exec_matmul_int_ref(int nin, tp_tensor *const *in, const tp_desc *od, tp_tensor **out);
/* qmatmul (ops.def) on the integer GEMM (pre as above, with b's scales), and its scalar loop. */
tp_status tp_exec_qmatmul(int nin, tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, const tp_qmm_b *pre,
                          tp_tensor **out);
/* The same written into `into` (contiguous, od's dtype and shape: the
 * executor's arena buffer); *out is set to NULL. */
tp_status tp_exec_qmatmul_into(int nin, tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, const tp_qmm_b *pre,
                               tp_tensor *into, tp_tensor **out);
tp_status tp_exec_qmatmul_ref(int nin, tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, tp_tensor **out);
/* conv2d geometry (ops.def): sizes from x [N,C,H,W] and w [M,C/G,KH,KW],
 * the window attributes and the output size OHxOW. Filled by the shape rule,
 * read by the eager and reference kernels. */
typedef struct tp_conv2d_geom {
  int64_t N, C, H, W, M, KH, KW, G, OH, OW;
  int64_t sh, sw, pt, pl, dh, dw;
} tp_conv2d_geom;
tp_status tp_conv2d_geometry(const tp_desc *x, const tp_desc *w, const tp_attrs *a,
                             tp_conv2d_geom *g);
/* conv2d into y, a contiguous float32 tensor of the output shape (the
 * executor's arena buffer); inputs already checked by the shape rule. */
tp_status tp_conv2d_into(tp_tensor *const *in, const tp_attrs *at, tp_tensor *y);
/* A fused epilogue (the Kernel IR's conv kernels, src/lower/executor.c):
 * fn is called as soon as outputs y[n, m, p] for m in [m0, m1) and flat
 * output positions p in [p0, p1) hold their final conv + bias values,
 * while they are in cache, and rewrites them in place. slot: the pool
 * slot calling (< nslots; the conv uses at most nslots threads). Every
 * output element is passed exactly once. */
typedef struct tp_conv_epi {
  void (*fn)(void *ctx, int slot, float *y, int64_t n, int64_t m0, int64_t m1, int64_t p0, int64_t p1);
  void *ctx;
  int nslots;
} tp_conv_epi;
tp_status tp_conv2d_into_epi(tp_tensor *const *in, const tp_attrs *at, tp_tensor *y, const tp_conv_epi *epi);
/* The path tp_conv2d_into_epi takes for a geometry. */
/* TP_CONV_IM2COL_T: im2col with fewer than 16 output positions and at
 * least 32 outputs per group (an STFT-like conv's 5 frames, a deep layer's
 * tiny plane): the GEMM transposed, [positions, Kd] x [Kd, outputs], so the
 * tile's vector lanes run over the outputs, then transposed into y; its
 * prep is the weight packed as that B operand. */
enum { TP_CONV_DEPTHWISE, TP_CONV_IM2COL, TP_CONV_DIRECT, TP_CONV_WINO2D, TP_CONV_WINO1D, TP_CONV_IM2COL_T };
int tp_conv2d_path(const tp_conv2d_geom *g);
/* A constant weight prepared once for that path (a plan's, per conv kernel;
 * winograd.c): the GEMM operand A packed in the ISA table's layout (at the
 * default depth blocking) per group (im2col, direct 1x1), or the Winograd
 * transform U (G g G^T, or G g in 1-D) packed per slab, so a call neither
 * transforms nor packs the weight. The results are the same bits as
 * without it (the same values reach the same micro-kernel). The conv uses
 * it only when it matches: the same path, weight geometry, weight pointer
 * and ISA table; otherwise it prepares per call as before. */
typedef struct tp_conv_prep {
  int path;
  int64_t M, C, KH, KW, G; /* the weight's geometry */
  const float *w;          /* the weight it was made from */
  const void *kern;        /* the ISA table that packed it (tp_kern()) */
  int64_t stride;          /* floats between packed matrices */
  float *a;                /* the packed matrices (64-byte aligned, same allocation) */
} tp_conv_prep;
/* *out: a new prep (tp_free it) or NULL when the path has nothing to
 * prepare (depthwise) or the ISA table cannot pack A. */
tp_status tp_conv2d_prepare(const tp_conv2d_geom *g, const float *w, tp_conv_prep **out);
/* tp_conv2d_into_epi with a prep (NULL: none; epi may be NULL). */
tp_status tp_conv2d_into_prep(tp_tensor *const *in, const tp_attrs *at, tp_tensor *y, const tp_conv_epi *epi,
                              const tp_conv_prep *prep);
/* How many convs used a prep so far (tests check the plan's are used). */
int64_t tp_conv2d_prep_uses(void);
/* winograd.c: 3x3, stride 1, no dilation, one group, enough channels and
 * outputs (tp_conv2d_winograd_fits) as Winograd F(2x2, 3x3); x, w, bias
 * and y contiguous float32 (bias may be NULL). */
int tp_conv2d_winograd_fits(const tp_conv2d_geom *g);
tp_status tp_conv2d_winograd(const tp_conv2d_geom *g, const float *x, const float *w,
                             const float *bias, float *y, const tp_conv_epi *epi, const tp_conv_prep *pp);
/* winograd.c: 3x1 / 1x3 stride 1, no dilation, one group, no padding across
 * the kernel's axis (tp_conv2d_winograd1d_fits) as 1-D Winograd F(2, 3);
 * operands as above. */
int tp_conv2d_winograd1d_fits(const tp_conv2d_geom *g);
tp_status tp_conv2d_winograd1d(const tp_conv2d_geom *g, const float *x, const float *w,
                               const float *bias, float *y, const tp_conv_epi *epi, const tp_conv_prep *pp);
/* max_pool2d / avg_pool2d geometry (ops.def) in the conv2d struct: KH, KW,
 * strides, pt, pl; C = M = G; dilations 1. */
tp_status tp_pool2d_geometry(tp_op op, const tp_desc *x, const tp_attrs *a, tp_conv2d_geom *g);
/* max_pool2d / avg_pool2d into y, a contiguous float32 tensor of the output
 * shape (the executor's arena buffer), as tp_conv2d_into. */
tp_status tp_pool2d_into(tp_op op, tp_tensor *x, const tp_attrs *at, tp_tensor *y);
/* The activations of rnn / gru / lstm (ops.def's codes, in order): ONNX's
 * name, how many of alpha, beta it reads (0, 1: alpha, 2: both) and their
 * defaults (ONNX's operators of the same name) when act_params is empty. */
#define TP_RNN_ACTS(X)                          \
  X(SIGMOID, "Sigmoid", 0, 0, 0)                \
  X(TANH, "Tanh", 0, 0, 0)                      \
  X(RELU, "Relu", 0, 0, 0)                      \
  X(AFFINE, "Affine", 2, 1, 0)                  \
  X(LEAKY_RELU, "LeakyRelu", 1, 0.01, 0)        \
  X(THRESHOLDED_RELU, "ThresholdedRelu", 1, 1, 0) \
  X(SCALED_TANH, "ScaledTanh", 2, 1, 1)         \
  X(HARD_SIGMOID, "HardSigmoid", 2, 0.2, 0.5)   \
  X(ELU, "Elu", 1, 1, 0)                        \
  X(SOFTSIGN, "Softsign", 0, 0, 0)              \
  X(SOFTPLUS, "Softplus", 0, 0, 0)
enum {
#define X(id, name, np, a, b) TP_RNN_##id,
  TP_RNN_ACTS(X)
#undef X
  TP_RNN_ACT_COUNT
};
/* the name of code c (NULL if none); the code of an ONNX name (any case), or -1 */
const char *tp_rnn_act_name(int c);
int tp_rnn_act_lookup(const char *name);
/* how many parameters code c reads (0, 1, 2); its default alpha, beta */
int tp_rnn_act_nparams(int c, double *alpha, double *beta);
/* rnn / gru / lstm (src/ops/recurrent.c): float32, or double when reference. */
tp_status tp_recurrent_exec(tp_op op, int nin, tp_tensor *const *in, const tp_attrs *at, const tp_desc *od,
                            int reference, tp_tensor **out);
/* W^T and R^T packed once for the float32 kernel's GEMMs (the current
 * kernel table's layout): *out NULL when w, r are not contiguous float32.
 * One allocation: tp_free frees it. tp_recurrent_into runs the op into y
 * (contiguous float32 of the op's shape) with pre (or NULL: packed per
 * call; a pre of another table or shape is ignored). */
typedef struct tp_rnn_pack tp_rnn_pack;
tp_status tp_recurrent_pack(tp_op op, const tp_attrs *at, const tp_tensor *w, const tp_tensor *r, tp_rnn_pack **out);
tp_status tp_recurrent_into(tp_op op, int nin, tp_tensor *const *in, const tp_attrs *at, const tp_rnn_pack *pre,
                            tp_tensor *y);
/* mod, fmod, bitwise_* (src/ops/intops.c): eager and reference; a zero
 * divisor is an INVALID_ARG error. */
tp_status tp_intop_exec(tp_op op, tp_tensor *const *in, const tp_desc *od, tp_tensor **out);
tp_status tp_intop_ref(tp_op op, tp_tensor *const *in, const tp_desc *od, tp_tensor **out);
/* det (src/ops/linalg.c): LU in double, or the reference's complete
 * pivoting in long double. */
tp_status tp_det_exec(tp_tensor *const *in, const tp_desc *od, int reference, tp_tensor **out);
/* grid_sample (src/ops/sample.c): computed in double, float32 out. */
tp_status tp_grid_sample_exec(tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, tp_tensor **out);
/* roi_align (src/ops/sample.c): likewise; a batch index out of range fails. */
tp_status tp_roi_align_exec(tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, tp_tensor **out);
/* its bilinear sample: the four taps' weights and flat indices (-1: none) */
void tp_roi_bilinear(double yy, double xx, int64_t H, int64_t W, double wq[4], int64_t pq[4]);
/* argtopk (src/ops/index.c). */
tp_status tp_argtopk_exec(tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, tp_tensor **out);
/* gather_nd (src/ops/index.c): bounds-checked index tuples. */
tp_status tp_gather_nd_exec(tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, tp_tensor **out);
/* scatter_elements / scatter_nd (src/ops/index.c): bounds-checked indices. */
tp_status tp_scatter_exec(tp_op op, tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, tp_tensor **out);
/* gather / gather_elements (src/ops/index.c): bounds-checked indices. */
tp_status tp_gather_exec(tp_op op, tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, tp_tensor **out);
tp_status tp_gather_into(tp_op op, tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, tp_tensor *into,
                         tp_tensor **out);
/* concat, gather (x of y's dtype) and quantize (tp_quantize_into) written straight into y, contiguous
 * with the result's dtype and shape (a plan's arena buffer): *done 1; 0
 * (nothing written) for other ops and operands, which take tp_op_call. */
tp_status tp_exec_into(tp_op op, int nin, tp_tensor *const *in, const tp_attrs *at, tp_tensor *y, int *done);
/* Printing/parsing of attributes, shared by graph print and parse. */
int tp_attrs_equal(tp_op op, const tp_attrs *a, const tp_attrs *b);

/* ---- operator observer (src/ops/ops.c) ----
 * tp_op_call reports every call to one observer that an upper layer
 * installs (capture does, when its first trace starts): check runs before
 * the shape rule and may refuse the call; record runs after execution with
 * the result and may tag it. Ops never knows what the observer does; with
 * none installed, operators just run. Installing is an atomic pointer store,
 * so it is safe from any thread; the observer must be static data. */
typedef struct tp_op_observer {
  tp_status (*check)(const char *what, int nin, tp_tensor *const *in);
  tp_status (*record)(tp_op op, int nin, tp_tensor *const *in, const tp_attrs *attrs,
                      tp_tensor *out);
} tp_op_observer;
void tp_ops_set_observer(const tp_op_observer *obs);

#endif
