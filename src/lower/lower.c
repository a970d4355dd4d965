/* lower.c - the whole lowering, graph to plan: passes (passes.c), schedule
 * into Kernel IR (schedule.c), verify (kir.c), memory plan, then the
 * executor's plan (executor.c); plus the per-kernel iteration-space
 * preparation the executor and the Wasm emitter share. Executing a plan is
 * executor.c's business; accelerating one is an accelerator's (lower.h). */
#include "lower.h"

void tp_kir_prepare(const tp_kir_kernel *k, tp_kir_prep *pr) {
  int nd = k->nd;
  int64_t shape[TP_MAX_DIMS], st[TP_KIR_MAX_IN][TP_MAX_DIMS];
  memcpy(shape, k->shape, sizeof shape);
  for (int i = 0; i < k->nin; i++) memcpy(st[i], k->in[i].strides, sizeof st[i]);
  if (k->kind == TP_KK_ROW) { /* keep the row dim separate */
    pr->nd = nd;
    memcpy(pr->shape, shape, sizeof shape);
    for (int i = 0; i < k->nin; i++) memcpy(pr->st[i], st[i], sizeof st[i]);
    return;
  }
  int m = 0;
  for (int d = 0; d < nd; d++) {
    if (shape[d] == 1 && nd > 1) continue;
    if (m > 0) {
      int ok = 1;
      for (int i = 0; i < k->nin; i++)
        if (pr->st[i][m - 1] != st[i][d] * shape[d]) ok = 0;
      if (ok) {
        pr->shape[m - 1] *= shape[d];
        for (int i = 0; i < k->nin; i++) pr->st[i][m - 1] = st[i][d];
        continue;
      }
    }
    pr->shape[m] = shape[d];
    for (int i = 0; i < k->nin; i++) pr->st[i][m] = st[i][d];
    m++;
  }
  if (m == 0) {
    pr->shape[0] = tp_shape_numel(nd, shape) ? 1 : 0;
    for (int i = 0; i < k->nin; i++) pr->st[i][0] = 0;
    m = 1;
  }
  pr->nd = m;
}

/* ---- the whole lowering ---- */
tp_status tp_lower_program(const tp_graph *g, const tp_lower_options *o, tp_kir_program **out) {
  tp_lower_options def;
  if (!o) {
    tp_lower_options_init(&def);
    o = &def;
  }
  *out = NULL;
  tp_graph *lg = NULL;
  TP_TRY(tp_run_passes(g, o->decompose, NULL, NULL, &lg));
  tp_kir_program *p = NULL;
  TP_TRY(tp_schedule(lg, o, &p));
  tp_status s = tp_kir_verify(p);
  if (!s) s = tp_memplan(p);
  if (s) {
    tp_kir_program_free(p);
    return s;
  }
  *out = p;
  return TP_OK;
}

tp_status tp_lower(const tp_graph *g, const tp_lower_options *o, tp_plan **out) {
  tp_kir_program *p = NULL;
  TP_TRY(tp_lower_program(g, o, &p));
  tp_plan *pl = NULL;
  TP_TRY(tp_plan_new(p, &pl));
  tp_status s = TP_OK;
  /* control flow: each branch / loop step compiled as a plan of its own */
  for (int k = 0; k < p->nkernels && !s; k++) {
    const tp_kir_kernel *kk = &p->kernels[k];
    if (kk->kind != TP_KK_OP || kk->node < 0) continue;
    const tp_node *n = &p->graph->nodes[kk->node];
    if (n->kind != TP_NODE_CALL || (n->op != TP_OP_COND && n->op != TP_OP_WHILE_LOOP)) continue;
    for (int w = 0; w < 2 && !s; w++) {
      const tp_graph *sub = tp_node_subgraph(p->graph, n, n->op == TP_OP_COND ? w + 1 : w);
      tp_plan *sp = NULL;
      if (!sub) s = tp_fail(TP_ERR_INTERNAL, "lower: %%%s has no subgraph %d", n->name, w);
      if (!s) s = tp_lower(sub, o, &sp);
      if (s) tp_fail_context(s, "lower: %s %%%s's %s subgraph", tp_op_name(n->op), n->name,
                             n->op == TP_OP_COND ? (w ? "else" : "then") : (w ? "body" : "cond"));
      else s = tp_plan_set_subplan(pl, k, w, sp);
    }
  }
  if (s) {
    tp_plan_free(pl);
    return s;
  }
  *out = pl;
  return TP_OK;
}

int tp_kir_epilogue_kernel(const tp_kir_kernel *k, tp_kir_kernel *pw) {
  if ((k->kind != TP_KK_GEMM && k->kind != TP_KK_CONV) || !k->expr.n) return 0;
  int slot = -1; /* the slot kept pointing at the output (schedule.c, materialize) */
  for (int q = 0; q < k->nin && slot < 0; q++)
    if (k->in[q].buf == k->out) slot = q;
  if (slot < 0) return 0;
  *pw = *k;
  pw->kind = TP_KK_POINTWISE;
  for (int i = 0; i < pw->expr.n; i++)
    if (pw->expr.ins[i].op == TP_KI_ACC) {
      pw->expr.ins[i].op = TP_KI_LOAD;
      pw->expr.ins[i].in = (int16_t)slot;
    }
  return 1;
}
void tp_lower_options_init(tp_lower_options *o) {
  o->fusion = 1;
  o->epilogue_fusion = 1;
  o->memory_planning = 1;
  o->decompose = 0;
  o->codegen = 1;
  o->autotune = 0;
  o->coordinate_descent = 0;
  o->use_cache = 1;
}

