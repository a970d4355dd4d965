/* patterns.c - the graph patterns the scheduler (schedule.c) turns into
 * Kernel IR instructions: an elementwise op as a unary / binary
 * instruction, and where(compare) pairs as pmax / pmin / maskpos. Pure
 * functions of the graph. */
#include "lower.h"

int tp_sched_pointwise_op(tp_op op, int *kind, int *sub) {
  switch (op) {
    case TP_OP_ADD: *kind = TP_KI_BINARY, *sub = TP_KBIN_ADD; return 1;
    case TP_OP_SUB: *kind = TP_KI_BINARY, *sub = TP_KBIN_SUB; return 1;
    case TP_OP_MUL: *kind = TP_KI_BINARY, *sub = TP_KBIN_MUL; return 1;
    case TP_OP_DIV: *kind = TP_KI_BINARY, *sub = TP_KBIN_DIV; return 1;
    case TP_OP_NEG: *kind = TP_KI_UNARY, *sub = TP_KU_NEG; return 1;
    case TP_OP_ABS: *kind = TP_KI_UNARY, *sub = TP_KU_ABS; return 1;
    case TP_OP_EXP: *kind = TP_KI_UNARY, *sub = TP_KU_EXP; return 1;
    case TP_OP_LOG: *kind = TP_KI_UNARY, *sub = TP_KU_LOG; return 1;
    case TP_OP_SQRT: *kind = TP_KI_UNARY, *sub = TP_KU_SQRT; return 1;
    case TP_OP_RSQRT: *kind = TP_KI_UNARY, *sub = TP_KU_RSQRT; return 1;
    case TP_OP_TANH: *kind = TP_KI_UNARY, *sub = TP_KU_TANH; return 1;
    case TP_OP_SIGMOID: *kind = TP_KI_UNARY, *sub = TP_KU_SIGMOID; return 1;
    case TP_OP_RELU: *kind = TP_KI_UNARY, *sub = TP_KU_RELU; return 1;
    case TP_OP_GELU: *kind = TP_KI_UNARY, *sub = TP_KU_GELU_ERF; return 1;
    default: return 0;
  }
}

/* ---- where(compare) as pmax / pmin ----
 * where(lt(p, q), q, p) = pmax(p, q)   where(lt(p, q), p, q) = pmin(q, p)
 * where(gt(p, q), q, p) = pmin(p, q)   where(gt(p, q), p, q) = pmax(q, p)
 * with pmax(a, b) = a < b ? b : a and pmin(a, b) = b < a ? b : a (kernels.h),
 * the same values bit for bit, NaNs included. ONNX Clip, Max and Min import
 * as such pairs; as op kernels (a bool compare, then a where) they cost
 * two passes over memory at ~1 GB/s each (PP-OCRv4 recognition: 56 of its
 * 108 ms). Matched when the compare has no other user and every operand is
 * float32 (or a scalar), so the where always fuses. */
static int same_arg(const tp_arg *x, const tp_arg *y) {
  if (x->kind != y->kind) return 0;
  if (x->kind == TP_ARG_NODE) return x->node == y->node;
  return x->kind == TP_ARG_SCALAR && x->scalar == y->scalar;
}

static int f32_operand(const tp_graph *g, const tp_arg *a) {
  if (a->kind == TP_ARG_SCALAR) return 1;
  return a->kind == TP_ARG_NODE && g->nodes[a->node].desc.dtype == TP_F32 && g->nodes[a->node].desc.ndim >= 0;
}

/* sub (TP_KBIN_PMAX / PMIN / MASKPOS) and its operands if where node w of g
 * matches (its compare's graph_uses 1), else -1. */
int tp_sched_match_minmax(const tp_graph *g, const int *graph_uses, int w, tp_arg *a, tp_arg *b) {
  const tp_node *n = &g->nodes[w];
  if (n->kind != TP_NODE_CALL || n->op != TP_OP_WHERE || n->nargs != 3 || n->desc.dtype != TP_F32 ||
      n->args[0].kind != TP_ARG_NODE)
    return -1;
  int ci = n->args[0].node;
  const tp_node *c = &g->nodes[ci];
  if (c->kind != TP_NODE_CALL || (c->op != TP_OP_LT && c->op != TP_OP_GT) || c->nargs != 2 ||
      graph_uses[ci] != 1)
    return -1;
  const tp_arg *P = &c->args[0], *Q = &c->args[1], *U = &n->args[1], *V = &n->args[2];
  if (!f32_operand(g, P) || !f32_operand(g, Q)) return -1;
  int lt = c->op == TP_OP_LT;
  if (same_arg(U, Q) && same_arg(V, P)) { /* c ? q : p */
    *a = *P, *b = *Q;
    return lt ? TP_KBIN_PMAX : TP_KBIN_PMIN;
  }
  if (same_arg(U, P) && same_arg(V, Q)) { /* c ? p : q */
    *a = *Q, *b = *P;
    return lt ? TP_KBIN_PMIN : TP_KBIN_PMAX;
  }
  /* where(p > 0, u, 0) or where(0 < p, u, 0): maskpos(p, u), a relu's gradient */
  const tp_arg *Z = lt ? P : Q, *X = lt ? Q : P;
  if (Z->kind == TP_ARG_SCALAR && Z->scalar == 0 && V->kind == TP_ARG_SCALAR && V->scalar == 0 &&
      X->kind == TP_ARG_NODE && U->kind == TP_ARG_NODE && f32_operand(g, U)) {
    *a = *X, *b = *U;
    return TP_KBIN_MASKPOS;
  }
  return -1;
}
