/* emit_pointwise.c - pointwise and row kernels as SIMD128 code.
 *
 * A pointwise kernel becomes a loop nest over its merged iteration space
 * whose innermost loop computes 4 elements per step in v128 locals (loads
 * with unit stride are v128.load, broadcast loads are hoisted splats, other
 * strides gather 4 lanes) and a tail loop that computes one element in lane
 * 0; map loops record one vector step and replay it for UNROLL vectors
 * interleaved (docs/codegen.md). Row kernels loop over rows; each phase is a
 * vector reduction or a map over the row. The expression evaluator
 * (tp_em_expr) also computes GEMM epilogues (emit_gemm.c). */
#define EM_FILE 1
#include "emit_internal.h"

static int64_t inner_st(const kctx *c, int slot) { return c->pr->st[slot][c->pr->nd - 1]; }

/* (emit_internal.h) */
void tp_em_expr(em *e, kctx *c, const tp_kir_expr *x, uint32_t off, int tail) {
  for (int i = 0; i < x->n && !e->s; i++) {
    const tp_kir_ins *I = &x->ins[i];
    uint32_t v = c->vals[i];
    switch (I->op) {
      case TP_KI_LOAD: {
        int64_t st = inner_st(c, I->in);
        if (st == 0) {
          lget(e, c->hoist[I->in]), lset(e, v);
        } else if (tail) {
          lget(e, c->base[I->in]), lget(e, off), i32n(e, st * 4), op(e, TP_WASM_OP_I32_MUL);
          op(e, TP_WASM_OP_I32_ADD), mem(e, TP_WASM_OP_F32_LOAD, 0), op(e, TP_WASM_OP_F32X4_SPLAT), lset(e, v);
        } else if (st == 1) {
          lget(e, c->base[I->in]), lget(e, off), i32c(e, 4), op(e, TP_WASM_OP_I32_MUL), op(e, TP_WASM_OP_I32_ADD);
          mem(e, TP_WASM_OP_V128_LOAD, 0), lset(e, v);
        } else { /* gather 4 lanes */
          lget(e, c->base[I->in]), lget(e, off), i32n(e, st * 4), op(e, TP_WASM_OP_I32_MUL);
          op(e, TP_WASM_OP_I32_ADD);
          uint32_t adr = itmp(e);
          ltee(e, adr), mem(e, TP_WASM_OP_F32_LOAD, 0), op(e, TP_WASM_OP_F32X4_SPLAT);
          for (int l = 1; l < 4; l++) {
            lget(e, adr), memd(e, TP_WASM_OP_F32_LOAD, (uint32_t)(l * st * 4));
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
      case TP_KI_UNARY: tp_em_unary(e, I->sub, c->vals[I->a], v); break;
      case TP_KI_BINARY: {
        static const tp_wasm_op b[TP_KBIN_COUNT] = {TP_WASM_OP_F32X4_ADD, TP_WASM_OP_F32X4_SUB, TP_WASM_OP_F32X4_MUL,
                                                  TP_WASM_OP_F32X4_DIV, TP_WASM_OP_F32X4_PMAX, TP_WASM_OP_F32X4_PMIN};
        if (I->sub == TP_KBIN_MASKPOS) { /* (a > 0) & b: the lanes of b where a > 0, else +0 */
          lget(e, c->vals[I->a]), vf(e, 0.0f), op(e, TP_WASM_OP_F32X4_GT);
          lget(e, c->vals[I->b]), op(e, TP_WASM_OP_V128_AND), lset(e, v);
          break;
        }
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
        e->s = tp_em_raw(e->f, &r);
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
  /* (the first pass takes the same way: emit.h params match by position;
   * with params the loops do not depend on n: they run 0 times when short) */
  if ((n < step && !e->blk) || e->s) {
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
  lget(e, i), i32n(e, n - step), op(e, TP_WASM_OP_I32_GT_S), br(e, TP_WASM_OP_BR_IF, 1);
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
  if (n >= 4 || e->blk) {
    block(e, TP_WASM_OP_BLOCK);
    block(e, TP_WASM_OP_LOOP);
    lget(e, i), i32n(e, n - 4), op(e, TP_WASM_OP_I32_GT_S), br(e, TP_WASM_OP_BR_IF, 1);
    body(e, c, i, 0, ud);
    lget(e, i), i32c(e, 4), op(e, TP_WASM_OP_I32_ADD), lset(e, i);
    br(e, TP_WASM_OP_BR, 0);
    op(e, TP_WASM_OP_END);
    op(e, TP_WASM_OP_END);
  }
  if (n % 4 || e->blk) {
    block(e, TP_WASM_OP_BLOCK);
    block(e, TP_WASM_OP_LOOP);
    lget(e, i), i32n(e, n), op(e, TP_WASM_OP_I32_GE_S), br(e, TP_WASM_OP_BR_IF, 1);
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
  tp_em_expr(e, c, x, i, tail);
  lget(e, c->out), lget(e, i), i32c(e, 4), op(e, TP_WASM_OP_I32_MUL), op(e, TP_WASM_OP_I32_ADD);
  lget(e, c->vals[x->n - 1]);
  if (tail) lane(e, TP_WASM_OP_F32X4_EXTRACT_LANE, 0), mem(e, TP_WASM_OP_F32_STORE, 0);
  else mem(e, TP_WASM_OP_V128_STORE, 0);
}

typedef struct red { const tp_kir_expr *x; tp_kir_reduce r; uint32_t vacc, facc; } red;
static void reduce_body(em *e, kctx *c, uint32_t i, int tail, void *ud) {
  red *rd = ud;
  tp_em_expr(e, c, rd->x, i, tail);
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
    if (ph->scale != 1.0f) lget(e, rd.facc), f32n(e, ph->scale), op(e, TP_WASM_OP_F32_MUL), lset(e, rd.facc);
    lget(e, rd.facc), lset(e, c->rowval[nrv++]);
    e->vtop--, e->ftop--;
  }
  if (k->phases[k->nphases - 1].is_reduce) /* reductions: one value per row */
    lget(e, c->out), lget(e, c->rowval[0]), mem(e, TP_WASM_OP_F32_STORE, 0);
}

/* Loop nest over dims 0..nd-2: bases advance by their strides. A ranged
 * kernel (ptrs, r0, r1) runs rows [r0, min(r1, shape[0])) of dim 0. */
static void nest(em *e, kctx *c, int d, const int64_t *out_st) {
  const tp_kir_prep *pr = c->pr;
  if (d == pr->nd - 1) {
    row_work(e, c);
    return;
  }
  const tp_kir_kernel *k = c->k;
  const uint32_t R0 = 1, R1 = 2; /* params */
  int ranged = d == 0 && e->ranged;
  uint32_t cnt = itmp(e), lim = 0;
  if (ranged) {
    lim = itmp(e);
    lget(e, R1), i32n(e, pr->shape[0]), lget(e, R1), i32n(e, pr->shape[0]), op(e, TP_WASM_OP_I32_LT_S);
    op(e, TP_WASM_OP_SELECT), lset(e, lim);
    lget(e, R0), lset(e, cnt);
    for (int s = 0; s < k->nin; s++) {
      lget(e, c->base[s]), lget(e, R0), i32n(e, pr->st[s][0] * 4), op(e, TP_WASM_OP_I32_MUL);
      op(e, TP_WASM_OP_I32_ADD), lset(e, c->base[s]);
    }
    lget(e, c->out), lget(e, R0), i32n(e, out_st[0] * 4), op(e, TP_WASM_OP_I32_MUL);
    op(e, TP_WASM_OP_I32_ADD), lset(e, c->out);
  } else {
    i32c(e, 0), lset(e, cnt);
  }
  block(e, TP_WASM_OP_BLOCK);
  block(e, TP_WASM_OP_LOOP);
  lget(e, cnt);
  if (ranged) lget(e, lim);
  else i32n(e, pr->shape[d]);
  op(e, TP_WASM_OP_I32_GE_S), br(e, TP_WASM_OP_BR_IF, 1);
  /* the inner levels move their own copies: save, recurse, restore + step */
  uint32_t saved[TP_KIR_MAX_IN + 1];
  for (int s = 0; s < k->nin; s++) saved[s] = itmp(e), lget(e, c->base[s]), lset(e, saved[s]);
  saved[k->nin] = itmp(e), lget(e, c->out), lset(e, saved[k->nin]);
  nest(e, c, d + 1, out_st);
  for (int s = 0; s < k->nin; s++) {
    lget(e, saved[s]), i32n(e, pr->st[s][d] * 4), op(e, TP_WASM_OP_I32_ADD), lset(e, c->base[s]);
  }
  lget(e, saved[k->nin]), i32n(e, out_st[d] * 4), op(e, TP_WASM_OP_I32_ADD), lset(e, c->out);
  e->itop -= k->nin + 1;
  lget(e, cnt), i32c(e, 1), op(e, TP_WASM_OP_I32_ADD), lset(e, cnt);
  br(e, TP_WASM_OP_BR, 0);
  op(e, TP_WASM_OP_END);
  op(e, TP_WASM_OP_END);
  e->itop -= ranged ? 2 : 1;
}

void tp_emit_map_view(const tp_kir_kernel *k, const tp_kir_prep *pr, int rows_1d, tp_kir_prep *v) {
  *v = *pr;
  if (rows_1d && k->kind == TP_KK_ROW && pr->nd > 2) {
    /* a row kernel keeps its dims (tp_kir_prepare): its outer dims merged
     * where every load allows and size-1 ones dropped, so that the rows
     * of [1, 4, 128, 128] (W4's softmax) are 512, not 1 */
    int m = 0, nd = pr->nd;
    for (int d = 0; d < nd - 1; d++) {
      if (pr->shape[d] == 1) continue;
      int ok = m > 0;
      for (int s = 0; s < k->nin && ok; s++)
        if (v->st[s][m - 1] != pr->st[s][d] * pr->shape[d]) ok = 0;
      if (ok) {
        v->shape[m - 1] *= pr->shape[d];
        for (int s = 0; s < k->nin; s++) v->st[s][m - 1] = pr->st[s][d];
        continue;
      }
      v->shape[m] = pr->shape[d];
      for (int s = 0; s < k->nin; s++) v->st[s][m] = pr->st[s][d];
      m++;
    }
    if (m == 0) {
      v->shape[0] = 1;
      for (int s = 0; s < k->nin; s++) v->st[s][0] = 0;
      m = 1;
    }
    v->shape[m] = pr->shape[nd - 1];
    for (int s = 0; s < k->nin; s++) v->st[s][m] = pr->st[s][nd - 1];
    v->nd = m + 1;
    return;
  }
  if (!rows_1d || k->kind != TP_KK_POINTWISE || pr->nd != 1) return;
  int64_t n = pr->shape[0];
  for (int s = 0; s < k->nin; s++)
    if (pr->st[s][0] * 4 * 4096 > INT32_MAX / 8) return;
  for (int64_t C = 4096; C >= 256; C -= 16)
    if (n % C == 0 && n / C >= 2) {
      v->nd = 2, v->shape[0] = n / C, v->shape[1] = C;
      for (int s = 0; s < k->nin; s++) v->st[s][0] = pr->st[s][0] * C, v->st[s][1] = pr->st[s][0];
      return;
    }
}

int64_t tp_emit_map_rows(const tp_kir_kernel *k, const tp_kir_prep *pr, int rows_1d) {
  tp_kir_prep v;
  tp_emit_map_view(k, pr, rows_1d, &v);
  return v.nd >= 2 ? v.shape[0] : 1;
}

int tp_em_map_supported(const tp_kir_program *p, const tp_kir_kernel *k, const tp_kir_prep *pr) {
  if (k->kind != TP_KK_POINTWISE && k->kind != TP_KK_ROW) return 0;
  if (p->bufs[k->out].desc.dtype != TP_F32) return 0;
  int64_t total = tp_shape_numel(pr->nd, pr->shape);
  if (total <= 0 || total > ((int64_t)1 << 29)) return 0;
  const tp_kir_expr *es[TP_KIR_MAX_PHASES + 1];
  int ne = 0;
  if (k->kind == TP_KK_POINTWISE) es[ne++] = &k->expr;
  else for (int q = 0; q < k->nphases; q++) {
    if (k->phases[q].reduce == TP_KR_MINMAX) return 0; /* the executor's (two values per row) */
    es[ne++] = &k->phases[q].expr;
  }
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

void tp_em_map_body(em *e, const tp_kir_kernel *k, const tp_kir_prep *pr0) {
  tp_kir_prep view, *pr = &view;
  tp_emit_map_view(k, pr0, e->ranged && !e->blk, &view);
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
    i32n(e, k->in[s2].offset * 4), op(e, TP_WASM_OP_I32_ADD), lset(e, c.base[s2]);
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
