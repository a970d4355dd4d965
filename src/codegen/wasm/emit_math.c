/* emit_math.c - the unary math of the SIMD128 emitter: exp, log, tanh,
 * sigmoid, erf and the two GELUs as v128 instruction sequences.
 *
 * Each function writes vec_impl.h's fast family (unary_fast_f32 with
 * FAST_TRANSCENDENTALS: the rational tanh, tanh-based sigmoid) operation
 * for operation, with the constants of runtime/kernels/mathconst.h and no
 * FMA, so generated kernels and the executor's SIMD128 fast table give the
 * same bits (tests/js/codegen.test.js). With relaxed SIMD (e->relaxed) the
 * Horner steps become f32x4.relaxed_madd: within rounding, not the same
 * bits. */
#include "emit_internal.h"
#include "../../runtime/kernels/mathconst.h"

/* p = p * r + c, p and r locals; one fused relaxed_madd where the host has
 * relaxed SIMD (then not bit-identical to the core's kernels) */
static void mad(em *e, uint32_t p, uint32_t r, float c) {
  if (e->relaxed) {
    lget(e, p), lget(e, r), vf(e, c), op(e, TP_WASM_OP_F32X4_RELAXED_MADD), lset(e, p);
    return;
  }
  lget(e, p), lget(e, r), op(e, TP_WASM_OP_F32X4_MUL), vf(e, c), op(e, TP_WASM_OP_F32X4_ADD), lset(e, p);
}

/* p = Horner(c[0..n-1]) at r, highest degree first (mathconst.h) */
#define NPOLY(c) ((int)(sizeof(c) / sizeof((c)[0])))
static void horner(em *e, uint32_t p, uint32_t r, const float *c, int n) {
  vf(e, c[0]), lset(e, p);
  for (int k = 1; k < n; k++) mad(e, p, r, c[k]);
}

/* exp(x) -> out (locals); uses temporaries above the current top */
static void m_exp(em *e, uint32_t x, uint32_t out) {
  int save = e->vtop;
  uint32_t big = vtmp(e), tiny = vtmp(e), xx = vtmp(e), c = vtmp(e), n = vtmp(e), r = vtmp(e), p = vtmp(e);
  const float hi = TP_EXP_HI, lo = TP_EXP_LO;
  lget(e, x), vf(e, hi), op(e, TP_WASM_OP_F32X4_GT), lset(e, big);
  lget(e, x), vf(e, lo), op(e, TP_WASM_OP_F32X4_LT), lset(e, tiny);
  vf(e, hi), lset(e, c);
  sel(e, big, c, x), lset(e, xx);                       /* x = sel(x > hi, hi, x) */
  vf(e, lo), lset(e, c);
  lget(e, xx), vf(e, lo), op(e, TP_WASM_OP_F32X4_LT), lset(e, n);
  sel(e, n, c, xx), lset(e, xx);                        /* x = sel(x < lo, lo, x) */
  lget(e, xx), vf(e, TP_LOG2E), op(e, TP_WASM_OP_F32X4_MUL);        /* t */
  vf(e, TP_ROUND_MAGIC), op(e, TP_WASM_OP_F32X4_ADD), vf(e, TP_ROUND_MAGIC), op(e, TP_WASM_OP_F32X4_SUB);
  lset(e, n);
  lget(e, xx), lget(e, n), vf(e, TP_LN2_HI), op(e, TP_WASM_OP_F32X4_MUL), op(e, TP_WASM_OP_F32X4_SUB), lset(e, r);
  lget(e, r), lget(e, n), vf(e, TP_LN2_LO), op(e, TP_WASM_OP_F32X4_MUL), op(e, TP_WASM_OP_F32X4_SUB), lset(e, r);
  horner(e, p, r, tp_exp_poly, NPOLY(tp_exp_poly));
  /* p = p * (r * r) + r + 1 */
  lget(e, p), lget(e, r), lget(e, r), op(e, TP_WASM_OP_F32X4_MUL), op(e, TP_WASM_OP_F32X4_MUL);
  lget(e, r), op(e, TP_WASM_OP_F32X4_ADD), vf(e, 1.0f), op(e, TP_WASM_OP_F32X4_ADD), lset(e, p);
  /* ni = int(n); n1 = ni >> 1; n2 = ni - n1; p *= 2^n1 * 2^n2 */
  lget(e, n), op(e, TP_WASM_OP_I32X4_TRUNC_SAT_F32X4_S), lset(e, n);
  lget(e, n), i32c(e, 1), op(e, TP_WASM_OP_I32X4_SHR_S), lset(e, c);          /* n1 */
  lget(e, n), lget(e, c), op(e, TP_WASM_OP_I32X4_SUB), lset(e, n);            /* n2 */
  lget(e, p), lget(e, c), vi(e, 127), op(e, TP_WASM_OP_I32X4_ADD), i32c(e, 23), op(e, TP_WASM_OP_I32X4_SHL);
  op(e, TP_WASM_OP_F32X4_MUL);
  lget(e, n), vi(e, 127), op(e, TP_WASM_OP_I32X4_ADD), i32c(e, 23), op(e, TP_WASM_OP_I32X4_SHL);
  op(e, TP_WASM_OP_F32X4_MUL), lset(e, p);
  vf(e, INFINITY), lset(e, c);
  sel(e, big, c, p), lset(e, p);
  vf(e, 0.0f), lset(e, c);
  sel(e, tiny, c, p), lset(e, out);
  e->vtop = save;
}

static void m_abs(em *e, uint32_t x) { lget(e, x), vi(e, 0x7fffffff), op(e, TP_WASM_OP_V128_AND); }

/* a / b with b on the stack and a a constant: c / (stack) */
static void div_const_by(em *e, float c, uint32_t d) {
  vf(e, c), lget(e, d), op(e, TP_WASM_OP_F32X4_DIV);
}

/* tanh and sigmoid of the fast family (vec_impl.h, FAST_TRANSCENDENTALS):
 * a 13/6 rational function, sigmoid(x) = 0.5 tanh(x / 2) + 0.5 */
static void m_tanh(em *e, uint32_t x, uint32_t out) {
  int save = e->vtop;
  uint32_t xx = vtmp(e), cl = vtmp(e), m = vtmp(e), x2 = vtmp(e), p = vtmp(e), q = vtmp(e);
  const float c = TP_TANH_CLAMP;
  vf(e, c), lset(e, cl);
  lget(e, x), vf(e, c), op(e, TP_WASM_OP_F32X4_GT), lset(e, m);
  sel(e, m, cl, x), lset(e, xx);
  vf(e, -c), lset(e, cl);
  lget(e, xx), vf(e, -c), op(e, TP_WASM_OP_F32X4_LT), lset(e, m);
  sel(e, m, cl, xx), lset(e, xx);
  lget(e, xx), lget(e, xx), op(e, TP_WASM_OP_F32X4_MUL), lset(e, x2);
  horner(e, p, x2, tp_tanh_p, NPOLY(tp_tanh_p));
  lget(e, p), lget(e, xx), op(e, TP_WASM_OP_F32X4_MUL), lset(e, p);
  horner(e, q, x2, tp_tanh_q, NPOLY(tp_tanh_q));
  lget(e, p), lget(e, q), op(e, TP_WASM_OP_F32X4_DIV), lset(e, p);
  /* +-1 beyond the clamp (vec_impl.h); x is read before out is written */
  lget(e, x), vf(e, c), op(e, TP_WASM_OP_F32X4_GT), lset(e, m);
  vf(e, 1.0f), lset(e, cl);
  sel(e, m, cl, p), lset(e, p);
  lget(e, x), vf(e, -c), op(e, TP_WASM_OP_F32X4_LT), lset(e, m);
  vf(e, -1.0f), lset(e, cl);
  sel(e, m, cl, p), lset(e, out);
  e->vtop = save;
}

static void m_sigmoid(em *e, uint32_t x, uint32_t out) {
  int save = e->vtop;
  uint32_t t = vtmp(e);
  vf(e, 0.5f), lget(e, x), op(e, TP_WASM_OP_F32X4_MUL), lset(e, t);
  m_tanh(e, t, t);
  vf(e, 0.5f), lget(e, t), op(e, TP_WASM_OP_F32X4_MUL), vf(e, 0.5f), op(e, TP_WASM_OP_F32X4_ADD), lset(e, out);
  e->vtop = save;
}

static void m_erf(em *e, uint32_t x, uint32_t out) {
  int save = e->vtop;
  uint32_t ax = vtmp(e), t = vtmp(e), y = vtmp(e), q = vtmp(e);
  m_abs(e, x), lset(e, ax);
  vf(e, 1.0f), vf(e, TP_ERF_P), lget(e, ax), op(e, TP_WASM_OP_F32X4_MUL), op(e, TP_WASM_OP_F32X4_ADD), lset(e, t);
  div_const_by(e, 1.0f, t), lset(e, t);
  horner(e, y, t, tp_erf_poly, NPOLY(tp_erf_poly));
  lget(e, ax), lget(e, ax), op(e, TP_WASM_OP_F32X4_MUL), op(e, TP_WASM_OP_F32X4_NEG), lset(e, q);
  m_exp(e, q, q);
  vf(e, 1.0f), lget(e, y), lget(e, t), op(e, TP_WASM_OP_F32X4_MUL), lget(e, q), op(e, TP_WASM_OP_F32X4_MUL);
  op(e, TP_WASM_OP_F32X4_SUB);
  lget(e, x), vi(e, (int32_t)0x80000000u), op(e, TP_WASM_OP_V128_AND), op(e, TP_WASM_OP_V128_OR);
  lset(e, out);
  e->vtop = save;
}

static void m_log(em *e, uint32_t x, uint32_t out) {
  int save = e->vtop;
  uint32_t inval = vtmp(e), zero = vtmp(e), inf = vtmp(e), ee = vtmp(e), m = vtmp(e), sm = vtmp(e),
           z = vtmp(e), y = vtmp(e), r = vtmp(e), c = vtmp(e);
  lget(e, x), vf(e, 0.0f), op(e, TP_WASM_OP_F32X4_LT), lset(e, inval);
  lget(e, x), vf(e, 0.0f), op(e, TP_WASM_OP_F32X4_EQ), lset(e, zero);
  lget(e, x), vf(e, INFINITY), op(e, TP_WASM_OP_F32X4_EQ), lset(e, inf);
  lget(e, x), i32c(e, 23), op(e, TP_WASM_OP_I32X4_SHR_S), vi(e, 0xff), op(e, TP_WASM_OP_V128_AND);
  vi(e, 126), op(e, TP_WASM_OP_I32X4_SUB), op(e, TP_WASM_OP_F32X4_CONVERT_I32X4_S), lset(e, ee);
  lget(e, x), vi(e, (int32_t)0x807fffff), op(e, TP_WASM_OP_V128_AND), vi(e, 0x3f000000), op(e, TP_WASM_OP_V128_OR);
  lset(e, m);
  lget(e, m), vf(e, TP_SQRT1_2), op(e, TP_WASM_OP_F32X4_LT), lset(e, sm);
  lget(e, ee), vf(e, 1.0f), op(e, TP_WASM_OP_F32X4_SUB), lset(e, c);
  sel(e, sm, c, ee), lset(e, ee);
  lget(e, m), lget(e, m), op(e, TP_WASM_OP_F32X4_ADD), lset(e, c);
  sel(e, sm, c, m), vf(e, 1.0f), op(e, TP_WASM_OP_F32X4_SUB), lset(e, m);
  lget(e, m), lget(e, m), op(e, TP_WASM_OP_F32X4_MUL), lset(e, z);
  horner(e, y, m, tp_log_poly, NPOLY(tp_log_poly));
  lget(e, y), lget(e, m), op(e, TP_WASM_OP_F32X4_MUL), lget(e, z), op(e, TP_WASM_OP_F32X4_MUL), lset(e, y);
  lget(e, y), lget(e, ee), vf(e, TP_LN2_LO), op(e, TP_WASM_OP_F32X4_MUL), op(e, TP_WASM_OP_F32X4_ADD), lset(e, y);
  lget(e, y), lget(e, z), vf(e, 0.5f), op(e, TP_WASM_OP_F32X4_MUL), op(e, TP_WASM_OP_F32X4_SUB), lset(e, y);
  lget(e, m), lget(e, y), op(e, TP_WASM_OP_F32X4_ADD), lget(e, ee), vf(e, TP_LN2_HI), op(e, TP_WASM_OP_F32X4_MUL);
  op(e, TP_WASM_OP_F32X4_ADD), lset(e, r);
  vf(e, INFINITY), lset(e, c);
  sel(e, inf, c, r), lset(e, r);
  vf(e, -INFINITY), lset(e, c);
  sel(e, zero, c, r), lset(e, r);
  lget(e, inval), lget(e, x), lget(e, x), op(e, TP_WASM_OP_F32X4_NE), op(e, TP_WASM_OP_V128_OR), lset(e, inval);
  vf(e, NAN), lset(e, c);
  sel(e, inval, c, r), lset(e, out);
  e->vtop = save;
}

void tp_em_unary(em *e, int sub, uint32_t x, uint32_t out) {
  int save = e->vtop;
  switch (sub) {
    case TP_KU_NEG: lget(e, x), op(e, TP_WASM_OP_F32X4_NEG), lset(e, out); break;
    case TP_KU_ABS: m_abs(e, x), lset(e, out); break;
    case TP_KU_EXP: m_exp(e, x, out); break;
    case TP_KU_LOG: m_log(e, x, out); break;
    case TP_KU_SQRT: lget(e, x), op(e, TP_WASM_OP_F32X4_SQRT), lset(e, out); break;
    case TP_KU_RSQRT: vf(e, 1.0f), lget(e, x), op(e, TP_WASM_OP_F32X4_SQRT), op(e, TP_WASM_OP_F32X4_DIV), lset(e, out); break;
    case TP_KU_TANH: m_tanh(e, x, out); break;
    case TP_KU_SIGMOID: m_sigmoid(e, x, out); break;
    case TP_KU_RELU: { /* sel(x > 0, x, sel(x != x, x, 0)) */
      uint32_t z = vtmp(e), m = vtmp(e);
      vf(e, 0.0f), lset(e, z);
      lget(e, x), lget(e, x), op(e, TP_WASM_OP_F32X4_NE), lset(e, m);
      sel(e, m, x, z), lset(e, z);
      lget(e, x), vf(e, 0.0f), op(e, TP_WASM_OP_F32X4_GT), lset(e, m);
      sel(e, m, x, z), lset(e, out);
      break;
    }
    case TP_KU_GELU_ERF: {
      uint32_t t = vtmp(e);
      lget(e, x), vf(e, TP_SQRT1_2), op(e, TP_WASM_OP_F32X4_MUL), lset(e, t);
      m_erf(e, t, t);
      vf(e, 0.5f), lget(e, x), op(e, TP_WASM_OP_F32X4_MUL), vf(e, 1.0f), lget(e, t), op(e, TP_WASM_OP_F32X4_ADD);
      op(e, TP_WASM_OP_F32X4_MUL), lset(e, out);
      break;
    }
    default: { /* gelu tanh: 0.5 x (1 + tanh(0.79788456 (x + 0.044715 x x x))) */
      uint32_t t = vtmp(e);
      vf(e, TP_GELU_TANH_C), lget(e, x), vf(e, TP_GELU_TANH_K), lget(e, x), op(e, TP_WASM_OP_F32X4_MUL);
      lget(e, x), op(e, TP_WASM_OP_F32X4_MUL), lget(e, x), op(e, TP_WASM_OP_F32X4_MUL);
      op(e, TP_WASM_OP_F32X4_ADD), op(e, TP_WASM_OP_F32X4_MUL), lset(e, t);
      m_tanh(e, t, t);
      vf(e, 0.5f), lget(e, x), op(e, TP_WASM_OP_F32X4_MUL), vf(e, 1.0f), lget(e, t), op(e, TP_WASM_OP_F32X4_ADD);
      op(e, TP_WASM_OP_F32X4_MUL), lset(e, out);
      break;
    }
  }
  e->vtop = save;
}
