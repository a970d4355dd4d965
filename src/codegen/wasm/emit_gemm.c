/* emit_gemm.c - constant-weight GEMMs as SIMD128 code:
 * C[M,N] = epilogue(A[M,K] @ B (+ bias)), B packed by the SIMD128 table.
 *
 * B is read from the plan's packed copy (ptrs[nbufs + kernel]): per depth
 * block pc (KC deep), panels of NR = 8 columns, kc rows of 8 floats. The
 * register tile is mr rows x 8 columns (2 mr v128 accumulators; mr = 4
 * unless max-autotune timed another, emit.h); A is read in
 * place (f32.load + splat per row and k). Rows past M reuse row M-1 and are
 * not stored; a partial last panel stores its valid lanes. The epilogue
 * (bias, activation, residual) runs on the tile before it is stored.
 *
 * A float16 B (b_f16, issue 17): the plan's float16 panels (gemm_pack_b_f16,
 * the same layout in halves, depth blocks of TP_WASMSIMD_KC). For each
 * panel, its K x 8 halves are first converted to float32 into a scratch
 * (ptrs[nbufs + nkernels], K x 8 floats, plan_jit.c), once per call, then
 * every row tile reads the scratch as it would a float32 panel: one v128
 * of 8 halves sign-extended to i32x4 (low and high halves), shifted left by
 * 13 and masked with 0x8fffe000 (the sign, exponent and mantissa at
 * float32's places), times 2^112 (the rebias: exact for normal and
 * subnormal halves). Only for weights without Inf / NaN (checked when the
 * kernel is emitted): the core's kernel runs the others. Converting in
 * registers per tile instead cost the 128x1024x256 GEMM 1.5x in V8.
 *
 * The kernel is (i32 ptrs, i32 p0, i32 p1) -> (): it computes the column
 * panels [p0, p1) (of 8 columns; tp_emit_gemm_panels) and nothing else, so the
 * core's thread pool can split the panels over its threads (plan_jit.c);
 * every output element is computed the same way whatever the split. */
#define EM_FILE 2
#include "emit_internal.h"

#define GMR 4     /* default tile rows: 4 x 8 = 8 v128 accumulators */
#define GMR_MAX 6 /* tile rows the emitter accepts (max-autotune tries 2..4) */
#define GNR TP_WASMSIMD_NR

/* Epilogue over the columns of one 4-lane half of a tile row, then store. */
static void gemm_store(em *e, kctx *c, const tp_kir_kernel *k, uint32_t acc, uint32_t crow,
                       uint32_t col, int64_t valid, const int64_t *rs, uint32_t row) {
  /* slot bases for this row: origin + row * rs; column-broadcast slots
   * are one value per row (splat) */
  for (int s2 = 0; s2 < k->nin; s2++) {
    lget(e, c->origin[s2]), lget(e, row), i32n(e, rs[s2] * 4), op(e, TP_WASM_OP_I32_MUL);
    op(e, TP_WASM_OP_I32_ADD), lset(e, c->base[s2]);
    if (c->pr->st[s2][0] == 0)
      lget(e, c->base[s2]), mem(e, TP_WASM_OP_F32_LOAD, 0), op(e, TP_WASM_OP_F32X4_SPLAT), lset(e, c->hoist[s2]);
  }
  if (valid >= 4) {
    c->acc = acc;
    if (k->expr.n) tp_em_expr(e, c, &k->expr, col, 0);
    lget(e, crow), lget(e, col), i32c(e, 4), op(e, TP_WASM_OP_I32_MUL), op(e, TP_WASM_OP_I32_ADD);
    lget(e, k->expr.n ? c->vals[k->expr.n - 1] : acc), mem(e, TP_WASM_OP_V128_STORE, 0);
    return;
  }
  for (int64_t l = 0; l < valid; l++) { /* partial: one lane at a time */
    uint32_t one = vtmp(e);
    lget(e, acc), lane(e, TP_WASM_OP_F32X4_EXTRACT_LANE, (uint32_t)l), op(e, TP_WASM_OP_F32X4_SPLAT), lset(e, one);
    c->acc = one;
    if (l) lget(e, col), i32c(e, 1), op(e, TP_WASM_OP_I32_ADD), lset(e, col);
    if (k->expr.n) tp_em_expr(e, c, &k->expr, col, 1);
    lget(e, crow), lget(e, col), i32c(e, 4), op(e, TP_WASM_OP_I32_MUL), op(e, TP_WASM_OP_I32_ADD);
    lget(e, k->expr.n ? c->vals[k->expr.n - 1] : one), lane(e, TP_WASM_OP_F32X4_EXTRACT_LANE, 0);
    mem(e, TP_WASM_OP_F32_STORE, 0);
    e->vtop--;
  }
  if (valid > 1) lget(e, col), i32c(e, (int32_t)(valid - 1)), op(e, TP_WASM_OP_I32_SUB), lset(e, col);
}

int64_t tp_emit_gemm_panels(const tp_kir_kernel *k) { return (k->N + GNR - 1) / GNR; }

/* Whether a float16 constant has no Inf / NaN (exponent 31): the in-register
 * conversion of tp_em_gemm_body is exact for every other half. */
static int f16_finite(const tp_kir_program *p, const tp_kir_kernel *k) {
  const tp_tensor *w = p->bufs[k->b_buf].value;
  if (!w || w->dtype != TP_F16 || !tp_tensor_is_contiguous(w)) return 0;
  const uint16_t *h = tp_tensor_ptr((tp_tensor *)w);
  int64_t n = tp_tensor_numel(w);
  for (int64_t i = 0; i < n; i++)
    if ((h[i] & 0x7c00u) == 0x7c00u) return 0;
  return 1;
}

int tp_em_gemm_supported(const tp_kir_program *p, const tp_kir_kernel *k, int64_t *rs, int64_t *cs) {
  if (k->kind != TP_KK_GEMM || !k->b_const || k->batch != 1 || k->M < 1 || k->N < 1 || k->K < 1) return 0;
  if (k->b_f16 && !f16_finite(p, k)) return 0; /* Inf / NaN weights: the core's kernel (exact) */
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
    if (nd < 1 || k->in[s2].offset < 0 || p->bufs[k->in[s2].buf].desc.dtype != TP_F32) return 0; /* float16: the executor's */
    for (int d = 0; d + 2 < nd; d++)
      if (k->shape[d] != 1 && st[d] != st[d + 1] * k->shape[d + 1]) return 0;
    rs[s2] = nd >= 2 ? st[nd - 2] : 0;
    cs[s2] = st[nd - 1];
    if (rs[s2] < 0 || cs[s2] < 0) return 0;
  }
  return 1;
}

void tp_em_gemm_body(em *e, const tp_kir_program *p, int ki, const int64_t *rs, const int64_t *cs) {
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
  const uint32_t P = 0, PB = 1, PE = 2; /* params: ptrs, first panel, end panel */
  /* a float16 B: packed with the fixed depth block */
  int64_t M = k->M, N = k->N, K = k->K, KCb = k->tune_kc && !k->b_f16 ? k->tune_kc : TP_WASMSIMD_KC;
  int64_t Np = (N + GNR - 1) / GNR * GNR;
  uint32_t A = itmp(e), B = itmp(e), C = itmp(e), bias = itmp(e);
  lget(e, P), mem(e, TP_WASM_OP_I32_LOAD, (uint32_t)(4 * k->a_buf)), i32n(e, k->a_off * 4);
  op(e, TP_WASM_OP_I32_ADD), lset(e, A);
  lget(e, P), mem(e, TP_WASM_OP_I32_LOAD, (uint32_t)(4 * (p->nbufs + ki))), lset(e, B);
  lget(e, P), mem(e, TP_WASM_OP_I32_LOAD, (uint32_t)(4 * k->out)), lset(e, C);
  if (k->bias_buf >= 0) lget(e, P), mem(e, TP_WASM_OP_I32_LOAD, (uint32_t)(4 * k->bias_buf)), lset(e, bias);
  for (int s2 = 0; s2 < k->nin; s2++) {
    lget(e, P), mem(e, TP_WASM_OP_I32_LOAD, (uint32_t)(4 * k->in[s2].buf));
    i32n(e, k->in[s2].offset * 4), op(e, TP_WASM_OP_I32_ADD), lset(e, c.origin[s2]);
  }
  /* no more tile rows than M: a GEMV (M = 1, the hey_jarvis head's 1x128x1536)
   * with 4 rows computed 4 times the work (4.4 GFLOP/s) */
  const int mr0 = e->mr >= 1 && e->mr <= GMR_MAX ? e->mr : GMR, mr = mr0 < M ? mr0 : (int)M;
  uint32_t acc[GMR_MAX][2], a = vtmp(e), b0 = vtmp(e), b1 = vtmp(e), hmask = 0, hscale = 0, hs = 0, hd = 0, hq = 0,
                           S = 0;
  if (k->b_f16) { /* the float32 scratch panel and the conversion's constants */
    hmask = vtmp(e), hscale = vtmp(e), hs = itmp(e), hd = itmp(e), hq = itmp(e), S = itmp(e);
    vi(e, (int32_t)0x8fffe000u), lset(e, hmask);
    vf(e, 0x1p112f), lset(e, hscale);
    lget(e, P), mem(e, TP_WASM_OP_I32_LOAD, (uint32_t)(4 * (p->nbufs + p->nkernels))), lset(e, S);
  }
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
    /* jr from max(p0, PB) while jr < min(p1, PE) */
    i32n(e, p0), lget(e, PB), i32n(e, p0), lget(e, PB), op(e, TP_WASM_OP_I32_GT_S);
    op(e, TP_WASM_OP_SELECT), lset(e, jr);
    block(e, TP_WASM_OP_BLOCK), block(e, TP_WASM_OP_LOOP);
    lget(e, jr), i32n(e, p1), op(e, TP_WASM_OP_I32_GE_S), br(e, TP_WASM_OP_BR_IF, 1);
    lget(e, jr), lget(e, PE), op(e, TP_WASM_OP_I32_GE_S), br(e, TP_WASM_OP_BR_IF, 1);
    for (int64_t pc = 0; k->b_f16 && pc < K; pc += KCb) { /* panel jr's halves -> float32 scratch [K][8] */
      int64_t kc = K - pc < KCb ? K - pc : KCb;
      lget(e, B), lget(e, jr), i32c(e, (int32_t)(GNR * kc * 2)), op(e, TP_WASM_OP_I32_MUL), op(e, TP_WASM_OP_I32_ADD);
      i32c(e, (int32_t)(pc * Np * 2)), op(e, TP_WASM_OP_I32_ADD), lset(e, hs);
      lget(e, S), i32c(e, (int32_t)(pc * GNR * 4)), op(e, TP_WASM_OP_I32_ADD), lset(e, hd);
      i32c(e, 0), lset(e, hq);
      block(e, TP_WASM_OP_BLOCK), block(e, TP_WASM_OP_LOOP);
      lget(e, hq), i32c(e, (int32_t)kc), op(e, TP_WASM_OP_I32_GE_S), br(e, TP_WASM_OP_BR_IF, 1);
      lget(e, hs), mem(e, TP_WASM_OP_V128_LOAD, 0), lset(e, b1);
      for (int h = 0; h < 2; h++) {
        lget(e, hd);
        lget(e, b1), op(e, h ? TP_WASM_OP_I32X4_EXTEND_HIGH_I16X8_S : TP_WASM_OP_I32X4_EXTEND_LOW_I16X8_S);
        i32c(e, 13), op(e, TP_WASM_OP_I32X4_SHL), lget(e, hmask), op(e, TP_WASM_OP_V128_AND);
        lget(e, hscale), op(e, TP_WASM_OP_F32X4_MUL), mem(e, TP_WASM_OP_V128_STORE, (uint32_t)(16 * h));
      }
      lget(e, hs), i32c(e, GNR * 2), op(e, TP_WASM_OP_I32_ADD), lset(e, hs);
      lget(e, hd), i32c(e, GNR * 4), op(e, TP_WASM_OP_I32_ADD), lset(e, hd);
      lget(e, hq), i32c(e, 1), op(e, TP_WASM_OP_I32_ADD), lset(e, hq);
      br(e, TP_WASM_OP_BR, 0), op(e, TP_WASM_OP_END), op(e, TP_WASM_OP_END);
    }
    i32c(e, 0), lset(e, ir);
    block(e, TP_WASM_OP_BLOCK), block(e, TP_WASM_OP_LOOP);
    lget(e, ir), i32n(e, M), op(e, TP_WASM_OP_I32_GE_S), br(e, TP_WASM_OP_BR_IF, 1);
    /* row pointers of A (rows past M clamp to M-1) */
    for (int i = 0; i < mr; i++) {
      lget(e, ir), i32c(e, i), op(e, TP_WASM_OP_I32_ADD), lset(e, row);
      /* min(row, M - 1) = select(M - 1, row, row > M - 1) */
      i32n(e, M - 1), lget(e, row), lget(e, row), i32n(e, M - 1), op(e, TP_WASM_OP_I32_GT_S);
      op(e, TP_WASM_OP_SELECT);
      i32n(e, k->a_rs * 4), op(e, TP_WASM_OP_I32_MUL), lget(e, A), op(e, TP_WASM_OP_I32_ADD), lset(e, ap[i]);
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
      /* bp = B + 4 * (pc * Np + jr * 8 * kc); a float16 B: the scratch, S + 4 * pc * 8 */
      if (k->b_f16) {
        lget(e, S), i32n(e, pc * GNR * 4), op(e, TP_WASM_OP_I32_ADD), lset(e, bp);
      } else {
        lget(e, B), lget(e, jr), i32n(e, GNR * kc * 4), op(e, TP_WASM_OP_I32_MUL), op(e, TP_WASM_OP_I32_ADD);
        i32n(e, pc * Np * 4), op(e, TP_WASM_OP_I32_ADD), lset(e, bp);
      }
      /* kk: byte offset of column k in a row of A, from pc on */
      i32n(e, pc * k->a_cs * 4), lset(e, kk);
      /* K within one depth block: the k range is emitted as two loops
       * (bp and kk run on from the first into the second). V8 (Node 20)
       * compiles this tile with a single k loop much worse: 29 vs 41
       * GFLOP/s on 256x256x256, for every K <= 256 measured
       * (docs/codegen.md); with two loops it matches the prebuilt kernel. */
      int nsplit = K <= KCb && kc > 1 ? 2 : 1;
      for (int half = 0; half < nsplit; half++) {
        int64_t kend = pc + (half + 1 < nsplit ? kc / 2 : kc);
        block(e, TP_WASM_OP_BLOCK), block(e, TP_WASM_OP_LOOP);
        lget(e, kk), i32n(e, kend * k->a_cs * 4), op(e, TP_WASM_OP_I32_GE_S), br(e, TP_WASM_OP_BR_IF, 1);
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
        lget(e, kk), i32n(e, k->a_cs * 4), op(e, TP_WASM_OP_I32_ADD), lset(e, kk);
        br(e, TP_WASM_OP_BR, 0), op(e, TP_WASM_OP_END), op(e, TP_WASM_OP_END);
      }
    }
    /* store rows that exist (with the epilogue) */
    for (int i = 0; i < mr; i++) {
      lget(e, ir), i32c(e, i), op(e, TP_WASM_OP_I32_ADD), ltee(e, row), i32n(e, M), op(e, TP_WASM_OP_I32_LT_S);
      block(e, TP_WASM_OP_IF);
      lget(e, C), lget(e, row), i32n(e, N * 4), op(e, TP_WASM_OP_I32_MUL), op(e, TP_WASM_OP_I32_ADD), lset(e, crow);
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
