/* mathconst.h - the constants of the vector math, written once: the kernel
 * family (vec_impl.h, compiled per ISA) evaluates its polynomials with
 * them, and the Wasm code generator (src/codegen/wasm/emit_math.c) emits
 * the same polynomials as SIMD128 instructions with the same constants, so
 * generated kernels and the executor's fast family agree to the bit (tested
 * by tests/js/codegen.test.js). Changing a value here changes both.
 *
 * Polynomials are lists for Horner's rule, highest degree first:
 *   p = c[0]; p = p * r + c[1]; ...; p = p * r + c[n - 1]
 * Each user writes the steps out in this order (no loop in vec_impl.h, so
 * the compiler sees straight-line code). */
#ifndef TP_MATHCONST_H
#define TP_MATHCONST_H

/* ---- exp (Cephes expf): x = n ln2 + r, |r| <= ln2/2, degree-6 polynomial ---- */
#define TP_EXP_HI 88.72283935546875f    /* above: +inf (e^x > FLT_MAX) */
#define TP_EXP_LO (-104.0f)             /* below: 0 (under the smallest denormal) */
#define TP_LOG2E 1.44269504088896341f
#define TP_ROUND_MAGIC 12582912.0f      /* 1.5 * 2^23: (t + M) - M rounds t to nearest */
#define TP_LN2_HI 0.693359375f          /* ln 2 = HI - LO, HI exact in few bits */
#define TP_LN2_LO (-2.12194440e-4f)
static const float tp_exp_poly[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                     4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

/* ---- log (Cephes logf): mantissa in [sqrt(1/2), sqrt(2)), degree-8 polynomial ---- */
#define TP_SQRT1_2 0.707106781186547524f /* sqrt(1/2): log's mantissa split, erf-GELU's 1/sqrt(2) */
static const float tp_log_poly[9] = {7.0376836292e-2f,  -1.1514610310e-1f, 1.1676998740e-1f,
                                     -1.2420140846e-1f, 1.4249322787e-1f,  -1.6668057665e-1f,
                                     2.0000714765e-1f,  -2.4999993993e-1f, 3.3333331174e-1f};

/* ---- tanh, fast family: Eigen's 13/6 rational minimax, |error| < 4e-7 ----
 * tanh(x) = x P(x^2) / Q(x^2) on x clamped to +-TP_TANH_CLAMP, exactly +-1
 * beyond it. */
#define TP_TANH_CLAMP 7.90531110763549805f
static const float tp_tanh_p[7] = {-2.76076847742355e-16f, 2.00018790482477e-13f, -8.60467152213735e-11f,
                                   5.12229709037114e-08f,  1.48572235717979e-05f, 6.37261928875436e-04f,
                                   4.89352455891786e-03f};
static const float tp_tanh_q[4] = {1.19825839466702e-06f, 1.18534705686654e-04f, 2.26843463243900e-03f,
                                   4.89352518554385e-03f};

/* ---- tanh, exact family: odd polynomial below |x| = TP_TANH_SMALL ---- */
#define TP_TANH_SMALL 0.625f
static const float tp_tanh_small_poly[5] = {-5.70498872745e-3f, 2.06390887954e-2f, -5.37397155531e-2f,
                                            1.33314422036e-1f, -3.33332819422e-1f};

/* ---- erf (Abramowitz-Stegun 7.1.26, max abs error 1.5e-7) ----
 * t = 1 / (1 + TP_ERF_P |x|); erf = 1 - t poly(t) e^(-x^2), sign of x */
#define TP_ERF_P 0.3275911f
static const float tp_erf_poly[5] = {1.061405429f, -1.453152027f, 1.421413741f, -0.284496736f,
                                     0.254829592f};

/* ---- GELU, tanh form: 0.5 x (1 + tanh(C (x + K x^3))) ---- */
#define TP_GELU_TANH_C 0.7978845608028654f /* sqrt(2 / pi) */
#define TP_GELU_TANH_K 0.044715f

#endif
