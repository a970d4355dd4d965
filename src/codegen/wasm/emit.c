/* emit.c - Kernel IR -> SIMD128 Wasm (see emit.h).
 *
 * A pointwise kernel becomes a loop nest over its merged iteration space
 * whose innermost loop computes 4 elements per step in v128 locals (loads
 * with unit stride are v128.load, broadcast loads are hoisted splats, other
 * strides gather 4 lanes) and a tail loop that computes one element in lane
 * 0. Row kernels loop over rows; each phase is a vector reduction or a map
 * over the row. Transcendental functions are inlined polynomials that
 * repeat vec_impl.h's fast family (unary_fast_f32) operation for
 * operation, so generated code and the executor give the same bits. */
#include "emit.h"
#include "writer.h"
#include <math.h>
#include <stdio.h>

#define POOL_MAX 96
typedef struct em {
  tp_wasm_func *f;
  tp_status s;
  int collect;                 /* first pass: only gather the vector constants */
  int npool;                   /* distinct v128 constants, kept in locals */
  uint8_t pool[POOL_MAX][16];
  uint32_t pool_local[POOL_MAX];
  int relaxed;                 /* f32x4.relaxed_madd for p * r + c */
  int mr;                      /* GEMM register tile rows (1..GMR_MAX) */
  uint32_t v0; int vn, vtop;   /* v128 temporaries */
  uint32_t i0; int in, itop;   /* i32 temporaries */
  uint32_t f0; int fn, ftop;   /* f32 temporaries */
  /* recording (pointwise loop bodies, replayed interleaved: row_loop) */
  struct rins *rec;
  int nrec, caprec, recording;
  int banks;                   /* locals for the interleaved copies, made once */
  uint32_t bank_v[4], bank_i[4];
} em;

/* One recorded instruction. */
enum { RK_OP, RK_LOCAL, RK_I32, RK_F32, RK_V128, RK_MEM, RK_LANE };
typedef struct rins {
  uint8_t kind;
  tp_wasm_op op;
  uint32_t a;  /* local index, memory offset, lane */
  int32_t i;
  float f;
  uint8_t b[16];
} rins;

static tp_status emit_raw(tp_wasm_func *f, const rins *r) {
  switch (r->kind) {
    case RK_OP: return tp_wasm_emit(f, r->op);
    case RK_LOCAL: return tp_wasm_emit_local(f, r->op, r->a);
    case RK_I32: return tp_wasm_emit_i32_const(f, r->i);
    case RK_F32: return tp_wasm_emit_f32_const(f, r->f);
    case RK_V128: return tp_wasm_emit_v128_const(f, r->b);
    case RK_MEM: return tp_wasm_emit_mem(f, r->op, 0, r->a);
    default: return tp_wasm_emit_lane(f, r->op, r->a);
  }
}
/* Emit r now, or append it to the recording. */
static void put(em *e, rins r) {
  if (e->s || e->collect) return;
  if (!e->recording) {
    e->s = emit_raw(e->f, &r);
    return;
  }
  if (e->nrec == e->caprec) {
    int cap = e->caprec ? 2 * e->caprec : 256;
    rins *n = tp_realloc(e->rec, sizeof(rins) * (size_t)cap);
    if (!n) {
      e->s = TP_ERR_OUT_OF_MEMORY;
      return;
    }
    e->rec = n, e->caprec = cap;
  }
  e->rec[e->nrec++] = r;
}

#define OK(e) ((e)->s == TP_OK && !(e)->collect)
static void op(em *e, tp_wasm_op o) { put(e, (rins){.kind = RK_OP, .op = o}); }
static void lget(em *e, uint32_t l) { put(e, (rins){.kind = RK_LOCAL, .op = TP_WASM_OP_LOCAL_GET, .a = l}); }
static void lset(em *e, uint32_t l) { put(e, (rins){.kind = RK_LOCAL, .op = TP_WASM_OP_LOCAL_SET, .a = l}); }
static void ltee(em *e, uint32_t l) { put(e, (rins){.kind = RK_LOCAL, .op = TP_WASM_OP_LOCAL_TEE, .a = l}); }
static void i32c(em *e, int32_t v) { put(e, (rins){.kind = RK_I32, .i = v}); }
static void f32c(em *e, float v) { put(e, (rins){.kind = RK_F32, .f = v}); }
/* A v128 constant: gathered in the first pass, then read from its local
 * (set once at function entry) so loops do not rematerialize it. */
static void vconst(em *e, const uint8_t b[16]) {
  if (e->s) return;
  int i = 0;
  while (i < e->npool && memcmp(e->pool[i], b, 16)) i++;
  if (e->collect) {
    if (i == e->npool && e->npool < POOL_MAX) memcpy(e->pool[e->npool++], b, 16);
    return;
  }
  if (i < e->npool && e->pool_local[i]) {
    lget(e, e->pool_local[i]);
  } else {
    rins r = {.kind = RK_V128};
    memcpy(r.b, b, 16);
    put(e, r);
  }
}
static void vf(em *e, float v) {
  uint8_t b[16];
  for (int k = 0; k < 4; k++) memcpy(b + 4 * k, &v, 4);
  vconst(e, b);
}
static void vi(em *e, int32_t v) {
  uint8_t b[16];
  for (int k = 0; k < 4; k++) memcpy(b + 4 * k, &v, 4);
  vconst(e, b);
}
static void mem(em *e, tp_wasm_op o, uint32_t offset) { put(e, (rins){.kind = RK_MEM, .op = o, .a = offset}); }
static void lane(em *e, tp_wasm_op o, uint32_t l) { put(e, (rins){.kind = RK_LANE, .op = o, .a = l}); }
static void block(em *e, tp_wasm_op o) { if (OK(e)) e->s = tp_wasm_emit_block(e->f, o, TP_WASM_BT_VOID); }
static void br(em *e, tp_wasm_op o, uint32_t d) { if (OK(e)) e->s = tp_wasm_emit_br(e->f, o, d); }

static uint32_t vtmp(em *e) {
  if (e->vtop >= e->vn) {
    if (OK(e)) e->s = tp_fail(TP_ERR_UNSUPPORTED, "wasm emitter: out of v128 temporaries");
    return e->v0;
  }
  return e->v0 + (uint32_t)e->vtop++;
}
static uint32_t itmp(em *e) {
  if (e->itop >= e->in) {
    if (OK(e)) e->s = tp_fail(TP_ERR_UNSUPPORTED, "wasm emitter: out of i32 temporaries");
    return e->i0;
  }
  return e->i0 + (uint32_t)e->itop++;
}
static uint32_t ftmp(em *e) {
  if (e->ftop >= e->fn) {
    if (OK(e)) e->s = tp_fail(TP_ERR_UNSUPPORTED, "wasm emitter: out of f32 temporaries");
    return e->f0;
  }
  return e->f0 + (uint32_t)e->ftop++;
}

/* sel(m, a, b) = (a & m) | (b & ~m), with a, b, m in locals */
static void sel(em *e, uint32_t m, uint32_t a, uint32_t b) {
  lget(e, a), lget(e, b), lget(e, m), op(e, TP_WASM_OP_V128_BITSELECT);
}
/* ---- math, operation for operation as vec_impl.h ---- */
/* p = p * r + c, p and r locals; one fused relaxed_madd where the host has
 * relaxed SIMD (then not bit-identical to the core's kernels) */
static void mad(em *e, uint32_t p, uint32_t r, float c) {
  if (e->relaxed) {
    lget(e, p), lget(e, r), vf(e, c), op(e, TP_WASM_OP_F32X4_RELAXED_MADD), lset(e, p);
    return;
  }
  lget(e, p), lget(e, r), op(e, TP_WASM_OP_F32X4_MUL), vf(e, c), op(e, TP_WASM_OP_F32X4_ADD), lset(e, p);
}

/* exp(x) -> out (locals); uses temporaries above the current top */
static void m_exp(em *e, uint32_t x, uint32_t out) {
  int save = e->vtop;
  uint32_t big = vtmp(e), tiny = vtmp(e), xx = vtmp(e), c = vtmp(e), n = vtmp(e), r = vtmp(e), p = vtmp(e);
  const float hi = 88.72283935546875f, lo = -104.0f;
  lget(e, x), vf(e, hi), op(e, TP_WASM_OP_F32X4_GT), lset(e, big);
  lget(e, x), vf(e, lo), op(e, TP_WASM_OP_F32X4_LT), lset(e, tiny);
  vf(e, hi), lset(e, c);
  sel(e, big, c, x), lset(e, xx);                       /* x = sel(x > hi, hi, x) */
  vf(e, lo), lset(e, c);
  lget(e, xx), vf(e, lo), op(e, TP_WASM_OP_F32X4_LT), lset(e, n);
  sel(e, n, c, xx), lset(e, xx);                        /* x = sel(x < lo, lo, x) */
  lget(e, xx), vf(e, 1.44269504088896341f), op(e, TP_WASM_OP_F32X4_MUL);        /* t */
  vf(e, 12582912.0f), op(e, TP_WASM_OP_F32X4_ADD), vf(e, 12582912.0f), op(e, TP_WASM_OP_F32X4_SUB);
  lset(e, n);
  lget(e, xx), lget(e, n), vf(e, 0.693359375f), op(e, TP_WASM_OP_F32X4_MUL), op(e, TP_WASM_OP_F32X4_SUB), lset(e, r);
  lget(e, r), lget(e, n), vf(e, -2.12194440e-4f), op(e, TP_WASM_OP_F32X4_MUL), op(e, TP_WASM_OP_F32X4_SUB), lset(e, r);
  vf(e, 1.9875691500e-4f), lset(e, p);
  mad(e, p, r, 1.3981999507e-3f);
  mad(e, p, r, 8.3334519073e-3f);
  mad(e, p, r, 4.1665795894e-2f);
  mad(e, p, r, 1.6666665459e-1f);
  mad(e, p, r, 5.0000001201e-1f);
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
  const float c = 7.90531110763549805f;
  vf(e, c), lset(e, cl);
  lget(e, x), vf(e, c), op(e, TP_WASM_OP_F32X4_GT), lset(e, m);
  sel(e, m, cl, x), lset(e, xx);
  vf(e, -c), lset(e, cl);
  lget(e, xx), vf(e, -c), op(e, TP_WASM_OP_F32X4_LT), lset(e, m);
  sel(e, m, cl, xx), lset(e, xx);
  lget(e, xx), lget(e, xx), op(e, TP_WASM_OP_F32X4_MUL), lset(e, x2);
  vf(e, -2.76076847742355e-16f), lset(e, p);
  mad(e, p, x2, 2.00018790482477e-13f);
  mad(e, p, x2, -8.60467152213735e-11f);
  mad(e, p, x2, 5.12229709037114e-08f);
  mad(e, p, x2, 1.48572235717979e-05f);
  mad(e, p, x2, 6.37261928875436e-04f);
  mad(e, p, x2, 4.89352455891786e-03f);
  lget(e, p), lget(e, xx), op(e, TP_WASM_OP_F32X4_MUL), lset(e, p);
  vf(e, 1.19825839466702e-06f), lset(e, q);
  mad(e, q, x2, 1.18534705686654e-04f);
  mad(e, q, x2, 2.26843463243900e-03f);
  mad(e, q, x2, 4.89352518554385e-03f);
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
  vf(e, 1.0f), vf(e, 0.3275911f), lget(e, ax), op(e, TP_WASM_OP_F32X4_MUL), op(e, TP_WASM_OP_F32X4_ADD), lset(e, t);
  div_const_by(e, 1.0f, t), lset(e, t);
  vf(e, 1.061405429f), lset(e, y);
  mad(e, y, t, -1.453152027f);
  mad(e, y, t, 1.421413741f);
  mad(e, y, t, -0.284496736f);
  mad(e, y, t, 0.254829592f);
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
  lget(e, m), vf(e, 0.707106781186547524f), op(e, TP_WASM_OP_F32X4_LT), lset(e, sm);
  lget(e, ee), vf(e, 1.0f), op(e, TP_WASM_OP_F32X4_SUB), lset(e, c);
  sel(e, sm, c, ee), lset(e, ee);
  lget(e, m), lget(e, m), op(e, TP_WASM_OP_F32X4_ADD), lset(e, c);
  sel(e, sm, c, m), vf(e, 1.0f), op(e, TP_WASM_OP_F32X4_SUB), lset(e, m);
  lget(e, m), lget(e, m), op(e, TP_WASM_OP_F32X4_MUL), lset(e, z);
  static const float coef[] = {-1.1514610310e-1f, 1.1676998740e-1f, -1.2420140846e-1f, 1.4249322787e-1f,
                               -1.6668057665e-1f, 2.0000714765e-1f, -2.4999993993e-1f, 3.3333331174e-1f};
  vf(e, 7.0376836292e-2f), lset(e, y);
  for (int k = 0; k < 8; k++) mad(e, y, m, coef[k]);
  lget(e, y), lget(e, m), op(e, TP_WASM_OP_F32X4_MUL), lget(e, z), op(e, TP_WASM_OP_F32X4_MUL), lset(e, y);
  lget(e, y), lget(e, ee), vf(e, -2.12194440e-4f), op(e, TP_WASM_OP_F32X4_MUL), op(e, TP_WASM_OP_F32X4_ADD), lset(e, y);
  lget(e, y), lget(e, z), vf(e, 0.5f), op(e, TP_WASM_OP_F32X4_MUL), op(e, TP_WASM_OP_F32X4_SUB), lset(e, y);
  lget(e, m), lget(e, y), op(e, TP_WASM_OP_F32X4_ADD), lget(e, ee), vf(e, 0.693359375f), op(e, TP_WASM_OP_F32X4_MUL);
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

static void m_unary(em *e, int sub, uint32_t x, uint32_t out) {
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
      lget(e, x), vf(e, 0.70710678118654752f), op(e, TP_WASM_OP_F32X4_MUL), lset(e, t);
      m_erf(e, t, t);
      vf(e, 0.5f), lget(e, x), op(e, TP_WASM_OP_F32X4_MUL), vf(e, 1.0f), lget(e, t), op(e, TP_WASM_OP_F32X4_ADD);
      op(e, TP_WASM_OP_F32X4_MUL), lset(e, out);
      break;
    }
    default: { /* gelu tanh: 0.5 x (1 + tanh(0.79788456 (x + 0.044715 x x x))) */
      uint32_t t = vtmp(e);
      vf(e, 0.7978845608028654f), lget(e, x), vf(e, 0.044715f), lget(e, x), op(e, TP_WASM_OP_F32X4_MUL);
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

/* ---- kernels ---- */
typedef struct kctx {
  const tp_kir_kernel *k;
  const tp_kir_prep *pr;
  uint32_t ptrs;                   /* param: the buffer address table */
  uint32_t base[TP_KIR_MAX_IN];    /* per slot: byte address at the start of this row */
  uint32_t out;                    /* output byte address of this row */
  uint32_t hoist[TP_KIR_MAX_IN];   /* broadcast slots: splat per row */
  uint32_t rowval[TP_KIR_MAX_PHASES];
  uint32_t vals[TP_KIR_MAX_INS];   /* per instruction */
  uint32_t acc;                    /* GEMM epilogue: the accumulator (v128 local) */
  uint32_t origin[TP_KIR_MAX_IN];  /* GEMM epilogue: slot address of element (0, 0) */
} kctx;

static int64_t inner_st(const kctx *c, int slot) { return c->pr->st[slot][c->pr->nd - 1]; }

/* Evaluates e over 4 lanes (vector: loads at off) or lane 0 (tail). off:
 * an i32 local holding the element index of this step within the row. */
static void eval_expr(em *e, kctx *c, const tp_kir_expr *x, uint32_t off, int tail) {
  for (int i = 0; i < x->n && !e->s; i++) {
    const tp_kir_ins *I = &x->ins[i];
    uint32_t v = c->vals[i];
    switch (I->op) {
      case TP_KI_LOAD: {
        int64_t st = inner_st(c, I->in);
        if (st == 0) {
          lget(e, c->hoist[I->in]), lset(e, v);
        } else if (tail) {
          lget(e, c->base[I->in]), lget(e, off), i32c(e, (int32_t)(st * 4)), op(e, TP_WASM_OP_I32_MUL);
          op(e, TP_WASM_OP_I32_ADD), mem(e, TP_WASM_OP_F32_LOAD, 0), op(e, TP_WASM_OP_F32X4_SPLAT), lset(e, v);
        } else if (st == 1) {
          lget(e, c->base[I->in]), lget(e, off), i32c(e, 4), op(e, TP_WASM_OP_I32_MUL), op(e, TP_WASM_OP_I32_ADD);
          mem(e, TP_WASM_OP_V128_LOAD, 0), lset(e, v);
        } else { /* gather 4 lanes */
          lget(e, c->base[I->in]), lget(e, off), i32c(e, (int32_t)(st * 4)), op(e, TP_WASM_OP_I32_MUL);
          op(e, TP_WASM_OP_I32_ADD);
          uint32_t adr = itmp(e);
          ltee(e, adr), mem(e, TP_WASM_OP_F32_LOAD, 0), op(e, TP_WASM_OP_F32X4_SPLAT);
          for (int l = 1; l < 4; l++) {
            lget(e, adr), mem(e, TP_WASM_OP_F32_LOAD, (uint32_t)(l * st * 4));
            lane(e, TP_WASM_OP_F32X4_REPLACE_LANE, (uint32_t)l);
          }
          lset(e, v);
          e->itop--;
        }
        break;
      }
      case TP_KI_CONST: vf(e, I->imm), lset(e, v); break;
      case TP_KI_ACC: lget(e, c->acc), lset(e, v); break;
      case TP_KI_ROWVAL: lget(e, c->rowval[I->in]), op(e, TP_WASM_OP_F32X4_SPLAT), lset(e, v); break;
      case TP_KI_UNARY: m_unary(e, I->sub, c->vals[I->a], v); break;
      case TP_KI_BINARY: {
        static const tp_wasm_op b[TP_KBIN_COUNT] = {TP_WASM_OP_F32X4_ADD, TP_WASM_OP_F32X4_SUB, TP_WASM_OP_F32X4_MUL,
                                                  TP_WASM_OP_F32X4_DIV};
        lget(e, c->vals[I->a]), lget(e, c->vals[I->b]), op(e, b[I->sub]), lset(e, v);
        break;
      }
      default:
        if (OK(e)) e->s = tp_fail(TP_ERR_UNSUPPORTED, "wasm emitter: instruction %d", I->op);
        break;
    }
  }
}

/* Loop over [0, n): a vector loop of 4 and a tail loop of 1. body(tail). */
typedef void (*body_fn)(em *e, kctx *c, uint32_t i, int tail, void *ud);

/* Vectors per iteration of an interleaved pointwise loop. A transcendental
 * body is a long dependent chain (tanh: clamp, polynomial, divide, select);
 * V8 keeps the emitted order (no instruction scheduling on x64), so the
 * core overlaps few iterations of one chain. Emitting UNROLL independent
 * vectors statement by statement gives it UNROLL chains side by side. */
#define UNROLL 2 /* at most 4 (em.bank_v) */

/* Marks in w (v128 temporaries, then i32 ones) the locals the recorded
 * body writes. 0 if it writes any other local (an f32 temporary): such a
 * body is not replayed. */
static int rec_written(const em *e, uint8_t *w) {
  for (int q = 0; q < e->nrec; q++) {
    const rins *r = &e->rec[q];
    if (r->kind != RK_LOCAL || r->op == TP_WASM_OP_LOCAL_GET) continue;
    if (r->a >= e->v0 && r->a < e->v0 + (uint32_t)e->vn) w[r->a - e->v0] = 1;
    else if (r->a >= e->i0 && r->a < e->i0 + (uint32_t)e->in) w[e->vn + r->a - e->i0] = 1;
    else return 0;
  }
  return 1;
}

/* Replays the recorded body UNROLL times, one statement (up to a local.set
 * or a store) of each copy in turn. Copy k reads idx[k] for the index local
 * idx[0] and has its own copy of every local the body writes (w, from
 * rec_written: banks vb[k] and ib[k] for the v128 and i32 temporaries). */
static void replay(em *e, const uint8_t *w, const uint32_t *idx, const uint32_t *vb, const uint32_t *ib) {
  for (int q0 = 0; q0 < e->nrec && !e->s;) {
    int q1 = q0;
    while (q1 < e->nrec) {
      const rins *r = &e->rec[q1++];
      if ((r->kind == RK_LOCAL && r->op == TP_WASM_OP_LOCAL_SET) ||
          (r->kind == RK_MEM && (r->op == TP_WASM_OP_V128_STORE || r->op == TP_WASM_OP_F32_STORE)))
        break;
    }
    for (int k = 0; k < UNROLL && !e->s; k++)
      for (int q = q0; q < q1 && !e->s; q++) {
        rins r = e->rec[q];
        if (r.kind == RK_LOCAL) {
          if (r.a == idx[0]) r.a = idx[k];
          else if (r.a >= e->v0 && r.a < e->v0 + (uint32_t)e->vn && w[r.a - e->v0]) r.a = vb[k] + (r.a - e->v0);
          else if (r.a >= e->i0 && r.a < e->i0 + (uint32_t)e->in && w[e->vn + r.a - e->i0])
            r.a = ib[k] + (r.a - e->i0);
        }
        e->s = emit_raw(e->f, &r);
      }
    q0 = q1;
  }
}

/* Loop over [0, n) for a pointwise (store) body: an interleaved loop of
 * UNROLL vectors, then the plain loops of row_loop for the rest. */
static void row_loop(em *e, kctx *c, int64_t n, body_fn body, void *ud);
static void row_loop_from(em *e, kctx *c, int64_t n, body_fn body, void *ud, uint32_t i);
static void row_loop_unrolled(em *e, kctx *c, int64_t n, body_fn body, void *ud) {
  uint32_t idx[UNROLL], vb[UNROLL], ib[UNROLL];
  int64_t step = 4 * UNROLL;
  if (n < step || e->collect || e->s) {
    row_loop(e, c, n, body, ud);
    return;
  }
  uint32_t i = itmp(e);
  idx[0] = i;
  for (int k = 1; k < UNROLL; k++) idx[k] = itmp(e);
  /* record one vector step of the body; a body that cannot be replayed
   * runs in the plain loops */
  e->recording = 1, e->nrec = 0;
  body(e, c, i, 0, ud);
  e->recording = 0;
  uint8_t *w = tp_alloc((size_t)(e->vn + e->in));
  if (!w) {
    e->s = TP_ERR_OUT_OF_MEMORY;
    return;
  }
  memset(w, 0, (size_t)(e->vn + e->in));
  if (!rec_written(e, w)) {
    tp_free(w);
    e->itop -= UNROLL;
    row_loop(e, c, n, body, ud);
    return;
  }
  /* banks of locals for the copies (copy 0 uses the originals), made the
   * first time and shared by the function's interleaved loops */
  for (int k = 1; k < UNROLL && !e->banks && !e->s; k++) {
    e->s = tp_wasm_func_add_locals(e->f, (uint32_t)e->vn, TP_WASM_V128, &e->bank_v[k]);
    if (!e->s) e->s = tp_wasm_func_add_locals(e->f, (uint32_t)e->in, TP_WASM_I32, &e->bank_i[k]);
  }
  e->banks = 1;
  vb[0] = e->v0, ib[0] = e->i0;
  for (int k = 1; k < UNROLL; k++) vb[k] = e->bank_v[k], ib[k] = e->bank_i[k];
  i32c(e, 0), lset(e, i);
  block(e, TP_WASM_OP_BLOCK);
  block(e, TP_WASM_OP_LOOP);
  lget(e, i), i32c(e, (int32_t)(n - step)), op(e, TP_WASM_OP_I32_GT_S), br(e, TP_WASM_OP_BR_IF, 1);
  for (int k = 1; k < UNROLL; k++) lget(e, i), i32c(e, 4 * k), op(e, TP_WASM_OP_I32_ADD), lset(e, idx[k]);
  replay(e, w, idx, vb, ib);
  tp_free(w);
  lget(e, i), i32c(e, (int32_t)step), op(e, TP_WASM_OP_I32_ADD), lset(e, i);
  br(e, TP_WASM_OP_BR, 0);
  op(e, TP_WASM_OP_END);
  op(e, TP_WASM_OP_END);
  /* the rest (fewer than UNROLL vectors, then lanes) from i on */
  row_loop_from(e, c, n, body, ud, i);
  e->itop -= UNROLL; /* i and the copies' indices, free only now */
}

static void row_loop(em *e, kctx *c, int64_t n, body_fn body, void *ud) {
  uint32_t i = itmp(e);
  i32c(e, 0), lset(e, i);
  row_loop_from(e, c, n, body, ud, i);
  e->itop--;
}

/* The plain loops of [i, n): vectors of 4, then single lanes. */
static void row_loop_from(em *e, kctx *c, int64_t n, body_fn body, void *ud, uint32_t i) {
  if (n >= 4) {
    block(e, TP_WASM_OP_BLOCK);
    block(e, TP_WASM_OP_LOOP);
    lget(e, i), i32c(e, (int32_t)(n - 4)), op(e, TP_WASM_OP_I32_GT_S), br(e, TP_WASM_OP_BR_IF, 1);
    body(e, c, i, 0, ud);
    lget(e, i), i32c(e, 4), op(e, TP_WASM_OP_I32_ADD), lset(e, i);
    br(e, TP_WASM_OP_BR, 0);
    op(e, TP_WASM_OP_END);
    op(e, TP_WASM_OP_END);
  }
  if (n % 4) {
    block(e, TP_WASM_OP_BLOCK);
    block(e, TP_WASM_OP_LOOP);
    lget(e, i), i32c(e, (int32_t)n), op(e, TP_WASM_OP_I32_GE_S), br(e, TP_WASM_OP_BR_IF, 1);
    body(e, c, i, 1, ud);
    lget(e, i), i32c(e, 1), op(e, TP_WASM_OP_I32_ADD), lset(e, i);
    br(e, TP_WASM_OP_BR, 0);
    op(e, TP_WASM_OP_END);
    op(e, TP_WASM_OP_END);
  }
}

/* store the last value at out + 4 i */
static void store_body(em *e, kctx *c, uint32_t i, int tail, void *ud) {
  const tp_kir_expr *x = ud;
  eval_expr(e, c, x, i, tail);
  lget(e, c->out), lget(e, i), i32c(e, 4), op(e, TP_WASM_OP_I32_MUL), op(e, TP_WASM_OP_I32_ADD);
  lget(e, c->vals[x->n - 1]);
  if (tail) lane(e, TP_WASM_OP_F32X4_EXTRACT_LANE, 0), mem(e, TP_WASM_OP_F32_STORE, 0);
  else mem(e, TP_WASM_OP_V128_STORE, 0);
}

typedef struct red { const tp_kir_expr *x; tp_kir_reduce r; uint32_t vacc, facc; } red;
static void reduce_body(em *e, kctx *c, uint32_t i, int tail, void *ud) {
  red *rd = ud;
  eval_expr(e, c, rd->x, i, tail);
  uint32_t v = c->vals[rd->x->n - 1];
  tp_wasm_op vop = rd->r == TP_KR_SUM ? TP_WASM_OP_F32X4_ADD : rd->r == TP_KR_MAX ? TP_WASM_OP_F32X4_MAX : TP_WASM_OP_F32X4_MIN;
  tp_wasm_op fop = rd->r == TP_KR_SUM ? TP_WASM_OP_F32_ADD : rd->r == TP_KR_MAX ? TP_WASM_OP_F32_MAX : TP_WASM_OP_F32_MIN;
  if (tail) {
    lget(e, rd->facc), lget(e, v), lane(e, TP_WASM_OP_F32X4_EXTRACT_LANE, 0), op(e, fop), lset(e, rd->facc);
  } else {
    lget(e, rd->vacc), lget(e, v), op(e, vop), lset(e, rd->vacc);
  }
}

/* Per row: hoisted splats, then the kernel's work on this row. */
static void row_work(em *e, kctx *c) {
  const tp_kir_kernel *k = c->k;
  const tp_kir_prep *pr = c->pr;
  int64_t n = pr->shape[pr->nd - 1];
  for (int s = 0; s < k->nin; s++)
    if (inner_st(c, s) == 0) {
      lget(e, c->base[s]), mem(e, TP_WASM_OP_F32_LOAD, 0), op(e, TP_WASM_OP_F32X4_SPLAT), lset(e, c->hoist[s]);
    }
  if (k->kind == TP_KK_POINTWISE) {
    row_loop_unrolled(e, c, n, store_body, (void *)&k->expr);
    return;
  }
  int nrv = 0;
  for (int q = 0; q < k->nphases && !e->s; q++) {
    const tp_kir_phase *ph = &k->phases[q];
    if (!ph->is_reduce) {
      row_loop_unrolled(e, c, n, store_body, (void *)&ph->expr);
      continue;
    }
    float init = ph->reduce == TP_KR_SUM ? 0.0f : ph->reduce == TP_KR_MAX ? -INFINITY : INFINITY;
    red rd = {&ph->expr, ph->reduce, vtmp(e), ftmp(e)};
    vf(e, init), lset(e, rd.vacc);
    f32c(e, init), lset(e, rd.facc);
    row_loop(e, c, n, reduce_body, &rd);
    /* horizontal: facc op lanes 0..3 */
    tp_wasm_op fop = ph->reduce == TP_KR_SUM ? TP_WASM_OP_F32_ADD : ph->reduce == TP_KR_MAX ? TP_WASM_OP_F32_MAX : TP_WASM_OP_F32_MIN;
    for (int l = 0; l < 4; l++) {
      lget(e, rd.facc), lget(e, rd.vacc), lane(e, TP_WASM_OP_F32X4_EXTRACT_LANE, (uint32_t)l), op(e, fop);
      lset(e, rd.facc);
    }
    int last = q == k->nphases - 1;
    if (ph->reduce == TP_KR_MAX && !last) { /* an all -inf row: 0, as the executor */
      lget(e, rd.facc), f32c(e, -INFINITY), op(e, TP_WASM_OP_F32_EQ);
      block(e, TP_WASM_OP_IF), f32c(e, 0.0f), lset(e, rd.facc), op(e, TP_WASM_OP_END);
    }
    if (ph->scale != 1.0f) lget(e, rd.facc), f32c(e, ph->scale), op(e, TP_WASM_OP_F32_MUL), lset(e, rd.facc);
    lget(e, rd.facc), lset(e, c->rowval[nrv++]);
    e->vtop--, e->ftop--;
  }
  if (k->phases[k->nphases - 1].is_reduce) /* reductions: one value per row */
    lget(e, c->out), lget(e, c->rowval[0]), mem(e, TP_WASM_OP_F32_STORE, 0);
}

/* Loop nest over dims 0..nd-2: bases advance by their strides. */
static void nest(em *e, kctx *c, int d, const int64_t *out_st) {
  const tp_kir_prep *pr = c->pr;
  if (d == pr->nd - 1) {
    row_work(e, c);
    return;
  }
  const tp_kir_kernel *k = c->k;
  uint32_t cnt = itmp(e);
  i32c(e, 0), lset(e, cnt);
  block(e, TP_WASM_OP_BLOCK);
  block(e, TP_WASM_OP_LOOP);
  lget(e, cnt), i32c(e, (int32_t)pr->shape[d]), op(e, TP_WASM_OP_I32_GE_S), br(e, TP_WASM_OP_BR_IF, 1);
  /* the inner levels move their own copies: save, recurse, restore + step */
  uint32_t saved[TP_KIR_MAX_IN + 1];
  for (int s = 0; s < k->nin; s++) saved[s] = itmp(e), lget(e, c->base[s]), lset(e, saved[s]);
  saved[k->nin] = itmp(e), lget(e, c->out), lset(e, saved[k->nin]);
  nest(e, c, d + 1, out_st);
  for (int s = 0; s < k->nin; s++) {
    lget(e, saved[s]), i32c(e, (int32_t)(pr->st[s][d] * 4)), op(e, TP_WASM_OP_I32_ADD), lset(e, c->base[s]);
  }
  lget(e, saved[k->nin]), i32c(e, (int32_t)(out_st[d] * 4)), op(e, TP_WASM_OP_I32_ADD), lset(e, c->out);
  e->itop -= k->nin + 1;
  lget(e, cnt), i32c(e, 1), op(e, TP_WASM_OP_I32_ADD), lset(e, cnt);
  br(e, TP_WASM_OP_BR, 0);
  op(e, TP_WASM_OP_END);
  op(e, TP_WASM_OP_END);
  e->itop--;
}

static int supported(const tp_kir_program *p, const tp_kir_kernel *k, const tp_kir_prep *pr) {
  if (k->kind != TP_KK_POINTWISE && k->kind != TP_KK_ROW) return 0;
  if (p->bufs[k->out].desc.dtype != TP_F32) return 0;
  int64_t total = tp_shape_numel(pr->nd, pr->shape);
  if (total <= 0 || total > ((int64_t)1 << 29)) return 0;
  const tp_kir_expr *es[TP_KIR_MAX_PHASES + 1];
  int ne = 0;
  if (k->kind == TP_KK_POINTWISE) es[ne++] = &k->expr;
  else for (int q = 0; q < k->nphases; q++) es[ne++] = &k->phases[q].expr;
  for (int q = 0; q < ne; q++)
    for (int i = 0; i < es[q]->n; i++) {
      int o = es[q]->ins[i].op;
      if (o != TP_KI_LOAD && o != TP_KI_CONST && o != TP_KI_ROWVAL && o != TP_KI_UNARY && o != TP_KI_BINARY)
        return 0;
    }
  for (int s = 0; s < k->nin; s++) {
    if (p->bufs[k->in[s].buf].desc.dtype != TP_F32 || k->in[s].offset < 0) return 0;
    for (int d = 0; d < pr->nd; d++)
      if (pr->st[s][d] < 0 || pr->st[s][d] * 4 > INT32_MAX / 8) return 0;
  }
  return 1;
}

static void kernel_body(em *e, const tp_kir_kernel *k, const tp_kir_prep *pr) {
  kctx c;
  memset(&c, 0, sizeof c);
  c.k = k, c.pr = pr, c.ptrs = 0;
  for (int i = 0; i < TP_KIR_MAX_INS; i++) c.vals[i] = vtmp(e);
  for (int q = 0; q < TP_KIR_MAX_IN; q++) c.hoist[q] = vtmp(e);
  for (int q = 0; q < TP_KIR_MAX_PHASES; q++) c.rowval[q] = ftmp(e);
  if (!e->collect) tp_wasm_func_label(e->f, "kernel %s", k->name);
  /* bases: ptrs[buf] + 4 * offset */
  for (int s2 = 0; s2 < k->nin; s2++) {
    c.base[s2] = itmp(e);
    lget(e, c.ptrs), mem(e, TP_WASM_OP_I32_LOAD, (uint32_t)(4 * k->in[s2].buf));
    i32c(e, (int32_t)(k->in[s2].offset * 4)), op(e, TP_WASM_OP_I32_ADD), lset(e, c.base[s2]);
  }
  c.out = itmp(e);
  lget(e, c.ptrs), mem(e, TP_WASM_OP_I32_LOAD, (uint32_t)(4 * k->out)), lset(e, c.out);
  /* output strides per dim: contiguous; reductions store one value per row */
  int64_t out_st[TP_MAX_DIMS], acc = k->kind == TP_KK_ROW && k->phases[k->nphases - 1].is_reduce ? 1 : pr->shape[pr->nd - 1];
  for (int d = pr->nd - 2; d >= 0; d--) {
    out_st[d] = acc;
    acc *= pr->shape[d];
  }
  nest(e, &c, 0, out_st);
}
/* ---- GEMM: C[M,N] = A[M,K] @ B (+ bias), B packed by the SIMD128 table ----
 * B is read from the plan's packed copy (ptrs[nbufs + kernel]): per depth
 * block pc (KC deep), panels of NR = 8 columns, kc rows of 8 floats. The
 * register tile is mr rows x 8 columns (2 mr v128 accumulators; mr = 4
 * unless max-autotune timed another, emit.h); A is read in
 * place (f32.load + splat per row and k). Rows past M reuse row M-1 and are
 * not stored; a partial last panel stores its valid lanes. The epilogue
 * (bias, activation, residual) runs on the tile before it is stored. */
#define GMR 4     /* default tile rows: 4 x 8 = 8 v128 accumulators */
#define GMR_MAX 6 /* tile rows the emitter accepts (max-autotune tries 2..4) */
#define GNR TP_WASMSIMD_NR

/* Epilogue over the columns of one 4-lane half of a tile row, then store. */
static void gemm_store(em *e, kctx *c, const tp_kir_kernel *k, uint32_t acc, uint32_t crow,
                       uint32_t col, int64_t valid, const int64_t *rs, uint32_t row) {
  /* slot bases for this row: origin + row * rs; column-broadcast slots
   * are one value per row (splat) */
  for (int s2 = 0; s2 < k->nin; s2++) {
    lget(e, c->origin[s2]), lget(e, row), i32c(e, (int32_t)(rs[s2] * 4)), op(e, TP_WASM_OP_I32_MUL);
    op(e, TP_WASM_OP_I32_ADD), lset(e, c->base[s2]);
    if (c->pr->st[s2][0] == 0)
      lget(e, c->base[s2]), mem(e, TP_WASM_OP_F32_LOAD, 0), op(e, TP_WASM_OP_F32X4_SPLAT), lset(e, c->hoist[s2]);
  }
  if (valid >= 4) {
    c->acc = acc;
    if (k->expr.n) eval_expr(e, c, &k->expr, col, 0);
    lget(e, crow), lget(e, col), i32c(e, 4), op(e, TP_WASM_OP_I32_MUL), op(e, TP_WASM_OP_I32_ADD);
    lget(e, k->expr.n ? c->vals[k->expr.n - 1] : acc), mem(e, TP_WASM_OP_V128_STORE, 0);
    return;
  }
  for (int64_t l = 0; l < valid; l++) { /* partial: one lane at a time */
    uint32_t one = vtmp(e);
    lget(e, acc), lane(e, TP_WASM_OP_F32X4_EXTRACT_LANE, (uint32_t)l), op(e, TP_WASM_OP_F32X4_SPLAT), lset(e, one);
    c->acc = one;
    if (l) lget(e, col), i32c(e, 1), op(e, TP_WASM_OP_I32_ADD), lset(e, col);
    if (k->expr.n) eval_expr(e, c, &k->expr, col, 1);
    lget(e, crow), lget(e, col), i32c(e, 4), op(e, TP_WASM_OP_I32_MUL), op(e, TP_WASM_OP_I32_ADD);
    lget(e, k->expr.n ? c->vals[k->expr.n - 1] : one), lane(e, TP_WASM_OP_F32X4_EXTRACT_LANE, 0);
    mem(e, TP_WASM_OP_F32_STORE, 0);
    e->vtop--;
  }
  if (valid > 1) lget(e, col), i32c(e, (int32_t)(valid - 1)), op(e, TP_WASM_OP_I32_SUB), lset(e, col);
}

static int gemm_supported(const tp_kir_program *p, const tp_kir_kernel *k, int64_t *rs, int64_t *cs) {
  if (k->kind != TP_KK_GEMM || !k->b_const || k->batch != 1 || k->M < 1 || k->N < 1 || k->K < 1) return 0;
  if (p->bufs[k->a_buf].desc.dtype != TP_F32 || k->a_rs < 0 || k->a_cs < 1) return 0;
  if ((int64_t)k->M * k->K > ((int64_t)1 << 28) || (int64_t)k->M * k->N > ((int64_t)1 << 28)) return 0;
  for (int i = 0; i < k->expr.n; i++) {
    int o = k->expr.ins[i].op;
    if (o != TP_KI_LOAD && o != TP_KI_CONST && o != TP_KI_ACC && o != TP_KI_UNARY && o != TP_KI_BINARY) return 0;
  }
  /* epilogue loads as (row, column) strides over the flattened [M, N] */
  for (int s2 = 0; s2 < k->nin; s2++) {
    const int64_t *st = k->in[s2].strides;
    int nd = k->nd;
    if (nd < 1 || k->in[s2].offset < 0) return 0;
    for (int d = 0; d + 2 < nd; d++)
      if (k->shape[d] != 1 && st[d] != st[d + 1] * k->shape[d + 1]) return 0;
    rs[s2] = nd >= 2 ? st[nd - 2] : 0;
    cs[s2] = st[nd - 1];
    if (rs[s2] < 0 || cs[s2] < 0) return 0;
  }
  return 1;
}

static void gemm_body(em *e, const tp_kir_program *p, int ki, const int64_t *rs, const int64_t *cs) {
  const tp_kir_kernel *k = &p->kernels[ki];
  kctx c;
  memset(&c, 0, sizeof c);
  c.k = k;
  tp_kir_prep pr; /* epilogue loads: inner stride = column stride */
  memset(&pr, 0, sizeof pr);
  pr.nd = 1;
  for (int s2 = 0; s2 < k->nin; s2++) pr.st[s2][0] = cs[s2];
  c.pr = &pr;
  for (int i = 0; i < TP_KIR_MAX_INS; i++) c.vals[i] = vtmp(e);
  for (int q = 0; q < TP_KIR_MAX_IN; q++) c.hoist[q] = vtmp(e);
  for (int q = 0; q < k->nin; q++) c.origin[q] = itmp(e), c.base[q] = itmp(e);
  const uint32_t P = 0;
  int64_t M = k->M, N = k->N, K = k->K, KCb = k->tune_kc ? k->tune_kc : TP_WASMSIMD_KC;
  int64_t Np = (N + GNR - 1) / GNR * GNR;
  uint32_t A = itmp(e), B = itmp(e), C = itmp(e), bias = itmp(e);
  lget(e, P), mem(e, TP_WASM_OP_I32_LOAD, (uint32_t)(4 * k->a_buf)), i32c(e, (int32_t)(k->a_off * 4));
  op(e, TP_WASM_OP_I32_ADD), lset(e, A);
  lget(e, P), mem(e, TP_WASM_OP_I32_LOAD, (uint32_t)(4 * (p->nbufs + ki))), lset(e, B);
  lget(e, P), mem(e, TP_WASM_OP_I32_LOAD, (uint32_t)(4 * k->out)), lset(e, C);
  if (k->bias_buf >= 0) lget(e, P), mem(e, TP_WASM_OP_I32_LOAD, (uint32_t)(4 * k->bias_buf)), lset(e, bias);
  for (int s2 = 0; s2 < k->nin; s2++) {
    lget(e, P), mem(e, TP_WASM_OP_I32_LOAD, (uint32_t)(4 * k->in[s2].buf));
    i32c(e, (int32_t)(k->in[s2].offset * 4)), op(e, TP_WASM_OP_I32_ADD), lset(e, c.origin[s2]);
  }
  const int mr = e->mr >= 1 && e->mr <= GMR_MAX ? e->mr : GMR;
  uint32_t acc[GMR_MAX][2], a = vtmp(e), b0 = vtmp(e), b1 = vtmp(e);
  for (int i = 0; i < mr; i++) acc[i][0] = vtmp(e), acc[i][1] = vtmp(e);
  uint32_t jr = itmp(e), ir = itmp(e), kk = itmp(e), bp = itmp(e), col = itmp(e), row = itmp(e), crow = itmp(e);
  uint32_t ap[GMR_MAX];
  for (int i = 0; i < mr; i++) ap[i] = itmp(e);
  int64_t npanels = Np / GNR;
  /* for each panel: full panels in a loop, the partial last panel apart */
  int64_t full = N / GNR, edge = N % GNR;
  for (int part = 0; part < 2; part++) {
    int64_t p0 = part == 0 ? 0 : full, p1 = part == 0 ? full : npanels;
    if (p1 <= p0) continue;
    int64_t valid_cols = part == 0 ? GNR : edge;
    i32c(e, (int32_t)p0), lset(e, jr);
    block(e, TP_WASM_OP_BLOCK), block(e, TP_WASM_OP_LOOP);
    lget(e, jr), i32c(e, (int32_t)p1), op(e, TP_WASM_OP_I32_GE_S), br(e, TP_WASM_OP_BR_IF, 1);
    i32c(e, 0), lset(e, ir);
    block(e, TP_WASM_OP_BLOCK), block(e, TP_WASM_OP_LOOP);
    lget(e, ir), i32c(e, (int32_t)M), op(e, TP_WASM_OP_I32_GE_S), br(e, TP_WASM_OP_BR_IF, 1);
    /* row pointers of A (rows past M clamp to M-1) */
    for (int i = 0; i < mr; i++) {
      lget(e, ir), i32c(e, i), op(e, TP_WASM_OP_I32_ADD), lset(e, row);
      /* min(row, M - 1) = select(M - 1, row, row > M - 1) */
      i32c(e, (int32_t)(M - 1)), lget(e, row), lget(e, row), i32c(e, (int32_t)(M - 1)), op(e, TP_WASM_OP_I32_GT_S);
      op(e, TP_WASM_OP_SELECT);
      i32c(e, (int32_t)(k->a_rs * 4)), op(e, TP_WASM_OP_I32_MUL), lget(e, A), op(e, TP_WASM_OP_I32_ADD), lset(e, ap[i]);
    }
    /* accumulators: bias (or 0) */
    for (int h = 0; h < 2; h++) {
      if (k->bias_buf >= 0 && valid_cols == GNR) {
        lget(e, bias), lget(e, jr), i32c(e, GNR * 4), op(e, TP_WASM_OP_I32_MUL), op(e, TP_WASM_OP_I32_ADD);
        mem(e, TP_WASM_OP_V128_LOAD, (uint32_t)(16 * h));
      } else if (k->bias_buf >= 0) { /* partial panel: lanes that exist */
        vf(e, 0.0f);
        for (int l = 0; l < 4; l++) {
          if (h * 4 + l >= valid_cols) break;
          lget(e, bias), lget(e, jr), i32c(e, GNR * 4), op(e, TP_WASM_OP_I32_MUL), op(e, TP_WASM_OP_I32_ADD);
          mem(e, TP_WASM_OP_F32_LOAD, (uint32_t)(4 * (h * 4 + l)));
          lane(e, TP_WASM_OP_F32X4_REPLACE_LANE, (uint32_t)l);
        }
      } else {
        vf(e, 0.0f);
      }
      lset(e, acc[0][h]);
    }
    for (int i = 1; i < mr; i++)
      for (int h = 0; h < 2; h++) lget(e, acc[0][h]), lset(e, acc[i][h]);
    /* depth blocks */
    for (int64_t pc = 0; pc < K; pc += KCb) {
      int64_t kc = K - pc < KCb ? K - pc : KCb;
      /* bp = B + 4 * (pc * Np + jr * 8 * kc) */
      lget(e, B), lget(e, jr), i32c(e, (int32_t)(GNR * kc * 4)), op(e, TP_WASM_OP_I32_MUL), op(e, TP_WASM_OP_I32_ADD);
      i32c(e, (int32_t)(pc * Np * 4)), op(e, TP_WASM_OP_I32_ADD), lset(e, bp);
      /* kk: byte offset of column k in a row of A, from pc on */
      i32c(e, (int32_t)(pc * k->a_cs * 4)), lset(e, kk);
      /* K within one depth block: the k range is emitted as two loops
       * (bp and kk run on from the first into the second). V8 (Node 20)
       * compiles this tile with a single k loop much worse: 29 vs 41
       * GFLOP/s on 256x256x256, for every K <= 256 measured
       * (docs/codegen.md); with two loops it matches the prebuilt kernel. */
      int nsplit = K <= KCb && kc > 1 ? 2 : 1;
      for (int half = 0; half < nsplit; half++) {
        int64_t kend = pc + (half + 1 < nsplit ? kc / 2 : kc);
        block(e, TP_WASM_OP_BLOCK), block(e, TP_WASM_OP_LOOP);
        lget(e, kk), i32c(e, (int32_t)(kend * k->a_cs * 4)), op(e, TP_WASM_OP_I32_GE_S), br(e, TP_WASM_OP_BR_IF, 1);
        lget(e, bp), mem(e, TP_WASM_OP_V128_LOAD, 0), lset(e, b0);
        lget(e, bp), mem(e, TP_WASM_OP_V128_LOAD, 16), lset(e, b1);
        for (int i = 0; i < mr; i++) {
          lget(e, ap[i]), lget(e, kk), op(e, TP_WASM_OP_I32_ADD), mem(e, TP_WASM_OP_V128_LOAD32_SPLAT, 0), lset(e, a);
          for (int h = 0; h < 2; h++) {
            if (e->relaxed) {
              lget(e, a), lget(e, h ? b1 : b0), lget(e, acc[i][h]), op(e, TP_WASM_OP_F32X4_RELAXED_MADD);
            } else {
              lget(e, acc[i][h]), lget(e, a), lget(e, h ? b1 : b0), op(e, TP_WASM_OP_F32X4_MUL), op(e, TP_WASM_OP_F32X4_ADD);
            }
            lset(e, acc[i][h]);
          }
        }
        lget(e, bp), i32c(e, GNR * 4), op(e, TP_WASM_OP_I32_ADD), lset(e, bp);
        lget(e, kk), i32c(e, (int32_t)(k->a_cs * 4)), op(e, TP_WASM_OP_I32_ADD), lset(e, kk);
        br(e, TP_WASM_OP_BR, 0), op(e, TP_WASM_OP_END), op(e, TP_WASM_OP_END);
      }
    }
    /* store rows that exist (with the epilogue) */
    for (int i = 0; i < mr; i++) {
      lget(e, ir), i32c(e, i), op(e, TP_WASM_OP_I32_ADD), ltee(e, row), i32c(e, (int32_t)M), op(e, TP_WASM_OP_I32_LT_S);
      block(e, TP_WASM_OP_IF);
      lget(e, C), lget(e, row), i32c(e, (int32_t)(N * 4)), op(e, TP_WASM_OP_I32_MUL), op(e, TP_WASM_OP_I32_ADD), lset(e, crow);
      for (int h = 0; h < 2; h++) {
        int64_t valid = valid_cols - h * 4;
        if (valid <= 0) break;
        lget(e, jr), i32c(e, GNR), op(e, TP_WASM_OP_I32_MUL), i32c(e, h * 4), op(e, TP_WASM_OP_I32_ADD), lset(e, col);
        gemm_store(e, &c, k, acc[i][h], crow, col, valid > 4 ? 4 : valid, rs, row);
      }
      op(e, TP_WASM_OP_END);
    }
    lget(e, ir), i32c(e, mr), op(e, TP_WASM_OP_I32_ADD), lset(e, ir);
    br(e, TP_WASM_OP_BR, 0), op(e, TP_WASM_OP_END), op(e, TP_WASM_OP_END);
    lget(e, jr), i32c(e, 1), op(e, TP_WASM_OP_I32_ADD), lset(e, jr);
    br(e, TP_WASM_OP_BR, 0), op(e, TP_WASM_OP_END), op(e, TP_WASM_OP_END);
  }
}

static tp_status emit_kernel(tp_wasm_module *m, uint32_t type, const tp_kir_program *p, int ki,
                             const tp_kir_prep *pr, int relaxed, int mr, uint32_t *fidx) {
  const tp_kir_kernel *k = &p->kernels[ki];
  em e;
  memset(&e, 0, sizeof e);
  e.relaxed = relaxed;
  e.mr = mr;
  TP_TRY(tp_wasm_func_begin(m, type, k->name, &e.f, fidx));
  e.vn = 96 + TP_KIR_MAX_INS, e.in = 64, e.fn = 16;
  tp_status s = tp_wasm_func_add_locals(e.f, (uint32_t)e.vn, TP_WASM_V128, &e.v0);
  if (!s) s = tp_wasm_func_add_locals(e.f, (uint32_t)e.in, TP_WASM_I32, &e.i0);
  if (!s) s = tp_wasm_func_add_locals(e.f, (uint32_t)e.fn, TP_WASM_F32, &e.f0);
  if (s) return s;
  /* pass 1 gathers the vector constants, pass 2 emits with them in locals */
  for (int pass = 0; pass < 2 && !e.s; pass++) {
    e.collect = pass == 0;
    e.vtop = e.itop = e.ftop = 0;
    if (pass == 1) {
      uint32_t first;
      if (e.npool) e.s = tp_wasm_func_add_locals(e.f, (uint32_t)e.npool, TP_WASM_V128, &first);
      for (int q = 0; q < e.npool && !e.s; q++) {
        e.pool_local[q] = first + (uint32_t)q;
        e.s = tp_wasm_emit_v128_const(e.f, e.pool[q]);
        if (!e.s) e.s = tp_wasm_emit_local(e.f, TP_WASM_OP_LOCAL_SET, e.pool_local[q]);
      }
    }
    if (k->kind == TP_KK_GEMM) {
      int64_t rs[TP_KIR_MAX_IN], cs[TP_KIR_MAX_IN];
      gemm_supported(p, k, rs, cs);
      gemm_body(&e, p, ki, rs, cs);
    } else {
      kernel_body(&e, k, pr);
    }
  }
  tp_free(e.rec);
  if (e.s) return e.s;
  return tp_wasm_func_end(e.f);
}

void tp_emitted_clear(tp_emitted *e) {
  if (!e) return;
  tp_free(e->bytes);
  tp_free(e->kernel_func);
  tp_free(e->dump);
  memset(e, 0, sizeof *e);
}

/* Finishes m (when s is TP_OK) into out->bytes (and out->dump when dump),
 * frees m; on an error out is cleared. Returns the status. */
static tp_status finish_module(tp_wasm_module *m, tp_status s, int dump, tp_emitted *out) {
  const uint8_t *bytes = NULL;
  size_t len = 0;
  if (!s) s = tp_wasm_module_finish(m, &bytes, &len);
  if (!s && !(out->bytes = tp_alloc(len ? len : 1))) s = TP_ERR_OUT_OF_MEMORY;
  if (!s) {
    memcpy(out->bytes, bytes, len);
    out->len = len;
    if (dump) {
      const tp_wasm_label *labels;
      size_t nl;
      tp_wasm_module_labels(m, &labels, &nl);
      s = tp_wasm_dump(bytes, len, labels, nl, &out->dump);
    }
  }
  tp_wasm_module_free(m);
  if (s) tp_emitted_clear(out);
  return s;
}

/* The run entry: (i32 ptrs, i32 ctx) -> i32 status. Calls every kernel of
 * the program in order: generated ones directly, the others through the
 * imported env.tp_jit_kernel(ctx, k) (the core's executor); stops at the
 * first non-zero status and returns it. */
static tp_status emit_run(tp_wasm_module *m, uint32_t type, const tp_kir_program *p,
                          const uint32_t *fidx, uint32_t cb, uint32_t *run_idx) {
  tp_wasm_func *f;
  uint32_t st;
  TP_TRY(tp_wasm_func_begin(m, type, "run", &f, run_idx));
  tp_status s = tp_wasm_func_add_locals(f, 1, TP_WASM_I32, &st);
  if (!s) s = tp_wasm_emit_block(f, TP_WASM_OP_BLOCK, TP_WASM_BT_VOID);
  for (int k = 0; k < p->nkernels && !s; k++) {
    if (fidx[k] != UINT32_MAX) {
      s = tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, 0);
      if (!s) s = tp_wasm_emit_call(f, fidx[k]);
    } else {
      s = tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, 1);
      if (!s) s = tp_wasm_emit_i32_const(f, k);
      if (!s) s = tp_wasm_emit_call(f, cb);
      if (!s) s = tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_TEE, st);
      if (!s) s = tp_wasm_emit_br(f, TP_WASM_OP_BR_IF, 0);
    }
  }
  if (!s) s = tp_wasm_emit(f, TP_WASM_OP_END);
  if (!s) s = tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, st);
  if (!s) s = tp_wasm_func_end(f);
  return s;
}

tp_status tp_emit_wasm(const tp_kir_program *p, const tp_emit_options *o, tp_emitted *out) {
  memset(out, 0, sizeof *out);
  tp_wasm_module *m = NULL;
  TP_TRY(tp_wasm_module_init(&m));
  uint32_t type, run_type, cb = 0;
  const uint8_t params[2] = {TP_WASM_I32, TP_WASM_I32}, results[1] = {TP_WASM_I32};
  tp_status s = tp_wasm_module_add_type(m, 1, params, 0, NULL, &type);
  if (!s) s = tp_wasm_module_add_type(m, 2, params, 1, results, &run_type);
  tp_wasm_limits lim = {1, 0, false, false};
  if (!s) s = tp_wasm_module_import_memory(m, "env", "memory", lim);
  out->kernel_func = tp_alloc(sizeof(int) * (size_t)(p->nkernels ? p->nkernels : 1));
  uint32_t *fidx = tp_alloc(sizeof(uint32_t) * (size_t)(p->nkernels ? p->nkernels : 1));
  tp_kir_prep *preps = tp_alloc(sizeof(tp_kir_prep) * (size_t)(p->nkernels ? p->nkernels : 1));
  if (!out->kernel_func || !fidx || !preps) s = TP_ERR_OUT_OF_MEMORY;
  /* which kernels are generated; the others run in C (through the import) */
  int nhost = 0, ngen = 0;
  for (int ki = 0; ki < p->nkernels && !s; ki++) {
    tp_kir_prepare(&p->kernels[ki], &preps[ki]);
    int64_t rs[TP_KIR_MAX_IN], cs[TP_KIR_MAX_IN];
    int gen = (!o || !o->host_kernel || !o->host_kernel[ki]) &&
              (supported(p, &p->kernels[ki], &preps[ki]) || gemm_supported(p, &p->kernels[ki], rs, cs));
    fidx[ki] = gen ? 0 : UINT32_MAX;
    out->kernel_func[ki] = -1;
    nhost += !gen, ngen += gen;
  }
  if (!s && ngen == 0) s = tp_fail(TP_ERR_UNSUPPORTED, "wasm emitter: no kernel to emit");
  if (!s && nhost) s = tp_wasm_module_import_func(m, "env", "tp_jit_kernel", run_type, &cb);
  for (int ki = 0; ki < p->nkernels && !s; ki++) {
    if (fidx[ki] == UINT32_MAX) continue;
    s = emit_kernel(m, type, p, ki, &preps[ki], o && o->relaxed_simd, o && o->gemm_mr ? o->gemm_mr[ki] : 0,
                    &fidx[ki]);
    if (s) {
      tp_fail_context(s, "wasm emitter: kernel %s", p->kernels[ki].name);
      break;
    }
    char name[16];
    snprintf(name, sizeof name, "f%d", out->nfuncs);
    s = tp_wasm_module_export_func(m, name, fidx[ki]);
    out->kernel_func[ki] = out->nfuncs++;
  }
  uint32_t run_idx = 0;
  if (!s) s = emit_run(m, run_type, p, fidx, cb, &run_idx);
  if (!s) { /* the run entry: export f<nfuncs>, also named "run" */
    char name[16];
    snprintf(name, sizeof name, "f%d", out->nfuncs);
    s = tp_wasm_module_export_func(m, name, run_idx);
    if (!s) s = tp_wasm_module_export_func(m, "run", run_idx);
    out->run_func = out->nfuncs;
  }
  tp_free(fidx);
  tp_free(preps);
  return finish_module(m, s, o && o->want_dump, out);
}

tp_status tp_emit_gemm_variants(const tp_kir_program *p, const tp_emit_options *o, int ki, int nmr,
                                const int *mrs, tp_emitted *out) {
  memset(out, 0, sizeof *out);
  int64_t rs[TP_KIR_MAX_IN], cs[TP_KIR_MAX_IN];
  if (ki < 0 || ki >= p->nkernels || !gemm_supported(p, &p->kernels[ki], rs, cs))
    return tp_fail(TP_ERR_UNSUPPORTED, "wasm emitter: kernel %d is not a generated GEMM", ki);
  tp_wasm_module *m = NULL;
  TP_TRY(tp_wasm_module_init(&m));
  uint32_t type;
  const uint8_t params[1] = {TP_WASM_I32};
  tp_status s = tp_wasm_module_add_type(m, 1, params, 0, NULL, &type);
  tp_wasm_limits lim = {1, 0, false, false};
  if (!s) s = tp_wasm_module_import_memory(m, "env", "memory", lim);
  tp_kir_prep pr;
  tp_kir_prepare(&p->kernels[ki], &pr);
  for (int v = 0; v < nmr && !s; v++) {
    uint32_t fidx;
    char name[16];
    s = emit_kernel(m, type, p, ki, &pr, o && o->relaxed_simd, mrs[v], &fidx);
    snprintf(name, sizeof name, "f%d", v);
    if (!s) s = tp_wasm_module_export_func(m, name, fidx);
    if (!s) out->nfuncs++;
  }
  return finish_module(m, s, 0, out);
}
