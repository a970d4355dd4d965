/* onnx_control.c - Scan and Loop, unrolled at import (a Scan first tries
 * the loop in the plan, tp_onnx_scan_as_while), and the Optional ops.
 *
 * The model specializes on its input shapes (and, through value inputs, on
 * the values a converter needs), so the iteration count of a Scan (a scan
 * input's extent) and of a Loop (its trip count M and a condition known at
 * import) is a number when the model is imported: the body subgraph is
 * imported once per iteration (tp_onnx_subgraph, shared with If), its
 * state inputs bound to the previous iteration's outputs and its scan
 * inputs to slices; the scan outputs are stacked. At most
 * TP_ONNX_MAX_UNROLL iterations; beyond that, and for a Loop whose exit
 * condition is computed from float run-time data and that has scan outputs,
 * the import fails naming the node. A loop whose count or exit comes from run-time data runs inside
 * the plan instead (tp_onnx_loop_as_while, onnx_cond.c: one while_loop
 * node, docs/onnx.md "Control flow"). */
#include "import.h"
#include <stdio.h>

#define TP_ONNX_MAX_UNROLL 4096
/* A Scan (or a Loop with scan outputs and a known count) of more steps
 * than this runs as one while_loop in the plan; a shorter one is
 * unrolled: straight-line code that stax fuses across steps, faster per
 * call (on stax 0.11 ms against 0.54 ms at 256 steps, 0.01 against 0.05 at
 * 16: the loop pays two sub-plan calls per step), while its import and
 * compile (which grow with the step count, 12 s for 4096 steps on stax)
 * stay small. The loop form writes its scan outputs in place (one slice
 * per step); its first call is cheaper, but not its calls, so the
 * threshold stays (docs/onnx.md "Control flow"). */
#ifndef TP_ONNX_SCAN_LOOP_MIN
#define TP_ONNX_SCAN_LOOP_MIN 256
#endif
#define MAXV 64 /* states, scan inputs and scan outputs per node */

/* x[.., i, ..] along axis: a slice of extent 1 reshaped without the axis. */
static tp_status take(imp *m, ref x, int axis, int64_t i, ref *out) {
  ref s;
  TP_TRY(tp_onnx_slice(m, x, axis, i, i + 1, 1, &s));
  tp_desc d = tp_onnx_desc(m, s);
  int64_t sh[TP_MAX_DIMS];
  int k = 0;
  for (int j = 0; j < d.ndim; j++)
    if (j != axis) sh[k++] = d.shape[j];
  return tp_onnx_reshape(m, s, k, sh, out);
}

/* x with a new axis of extent 1 at position axis (0..ndim). */
static tp_status unsqueeze(imp *m, ref x, int axis, ref *out) {
  tp_desc d = tp_onnx_desc(m, x);
  int64_t sh[TP_MAX_DIMS];
  if (d.ndim + 1 > TP_MAX_DIMS) return tp_fail(TP_ERR_UNSUPPORTED, "a stacked output would have more than %d dims", TP_MAX_DIMS);
  for (int j = 0, k = 0; j <= d.ndim; j++) sh[j] = j == axis ? 1 : d.shape[k++];
  return tp_onnx_reshape(m, x, d.ndim + 1, sh, out);
}

/* Stacks parts[0..L) (same shape) along a new axis (in [-(r+1), r] for
 * rank r), in reverse order when rev; parts is overwritten. */
static tp_status stack(imp *m, ref *parts, int64_t L, int64_t axis, int rev, const char *what, ref *out) {
  int r = tp_onnx_desc(m, parts[0]).ndim;
  int64_t ax;
  TP_TRY(tp_onnx_axis(axis, r + 1, what, &ax));
  if (rev)
    for (int64_t i = 0; i < L / 2; i++) {
      ref t = parts[i];
      parts[i] = parts[L - 1 - i], parts[L - 1 - i] = t;
    }
  for (int64_t i = 0; i < L; i++) TP_TRY(unsqueeze(m, parts[i], (int)ax, &parts[i]));
  return tp_onnx_concat(m, (int)L, parts, ax, out);
}

/* Undoes a failed attempt at a Loop or Scan in the plan (nodes, subgraphs, get_attr cache,
 * value-input needs since the marks). */
typedef struct mark { int n, nsubs, nconsts; uint64_t need; } mark;
static void rollback(imp *m, const mark *k) {
  tp_clear_error();
  tp_graph_truncate(m->g, k->n, k->nsubs);
  for (int i = 0; i < m->nconsts; i++)
    if (i >= k->nconsts || m->const_node[i] >= k->n) m->const_node[i] = -1;
  m->need = k->need;
  while (m->nragged && m->ragged[m->nragged - 1].node >= k->n) m->nragged--;
}

/* x with axis 0 moved to position axis (in [-r, r) for rank r). */
static tp_status axis0_to(imp *m, ref x, int64_t axis, ref *out) {
  int r = tp_onnx_desc(m, x).ndim;
  int64_t a;
  TP_TRY(tp_onnx_axis(axis, r, "scan_output_axes value", &a));
  if (a == 0) {
    *out = x;
    return TP_OK;
  }
  tp_attrs at;
  tp_attrs_init(&at);
  at.nints = r;
  for (int d = 0; d < r; d++) at.ints[d] = d < a ? d + 1 : d == a ? 0 : d;
  return tp_onnx_emit(m, TP_OP_PERMUTE, 1, &x, &at, out);
}

/* One Scan over states[0..N) and scan inputs scans[0..K): the body run L
 * times; finals[0..N) and stacked[0..M) the results. */
typedef struct scan_spec {
  int N, K, M;
  int64_t in_axes[MAXV], in_dir[MAXV], out_axes[MAXV], out_dir[MAXV];
} scan_spec;

static tp_status scan_run(imp *m, omodel *sub, const scan_spec *sp, const ref *states, const ref *scans, ref *finals,
                          ref *stacked) {
  int64_t L = -1, ax[MAXV];
  for (int k = 0; k < sp->K; k++) {
    tp_desc d = tp_onnx_desc(m, scans[k]);
    TP_TRY(tp_onnx_axis(sp->in_axes[k], d.ndim, "scan_input_axes value", &ax[k]));
    if (L >= 0 && d.shape[ax[k]] != L)
      return tp_fail(TP_ERR_INVALID_ARG, "scan input %d has %lld steps along axis %lld, scan input 0 has %lld", k,
                     (long long)d.shape[ax[k]], (long long)ax[k], (long long)L);
    L = d.shape[ax[k]];
  }
  if (sub->ninputs != sp->N + sp->K || sub->noutputs != sp->N + sp->M)
    return tp_fail(TP_ERR_INVALID_ARG, "the body has %d inputs and %d outputs; the Scan needs %d and %d", sub->ninputs,
                   sub->noutputs, sp->N + sp->K, sp->N + sp->M);
  char why[200] = "";
  /* in the plan: one while_loop, the body imported once (a Scan of 0
   * steps too: its stacks [0, ...] take their shapes from the body) */
  if (L > TP_ONNX_SCAN_LOOP_MIN || (L == 0 && sp->M)) {
    mark mk = {m->g->n, m->g->nsubs, m->nconsts, m->need};
    tp_onnx_scan_form *sf = tp_alloc(sizeof *sf);
    if (!sf) return TP_ERR_OUT_OF_MEMORY;
    memset(sf, 0, sizeof *sf);
    sf->N = sp->N, sf->K = sp->K, sf->M = sp->M, sf->L = L;
    sf->states = states, sf->scans = scans, sf->in_axes = ax, sf->in_dir = sp->in_dir, sf->out_dir = sp->out_dir;
    tp_status s = tp_onnx_scan_as_while(m, sub, sf);
    for (int j = 0; !s && j < sp->N; j++) finals[j] = sf->results[j];
    for (int j = 0; !s && j < sp->M; j++) s = axis0_to(m, sf->results[sp->N + j], sp->out_axes[j], &stacked[j]);
    tp_free(sf);
    if (s != TP_ERR_UNSUPPORTED) return s;
    snprintf(why, sizeof why, "%s", tp_last_error());
    rollback(m, &mk); /* unrolled instead */
  }
  if (L == 0 && sp->M)
    return tp_fail(TP_ERR_UNSUPPORTED, "a Scan of 0 iterations with scan outputs cannot run in the plan: %s", why);
  if (L > TP_ONNX_MAX_UNROLL)
    return tp_fail(TP_ERR_UNSUPPORTED, "a Scan of %lld iterations (it is unrolled at import, at most %d, because it "
                   "cannot run in the plan: %s)", (long long)L, TP_ONNX_MAX_UNROLL, why);
  ref ins[2 * MAXV], outs[2 * MAXV];
  ref *col = L && sp->M ? tp_alloc(sizeof(ref) * (size_t)(L * sp->M)) : NULL;
  if (L && sp->M && !col) return TP_ERR_OUT_OF_MEMORY;
  tp_status s = TP_OK;
  for (int j = 0; j < sp->N; j++) finals[j] = states[j];
  for (int64_t t = 0; !s && t < L; t++) {
    for (int j = 0; j < sp->N; j++) ins[j] = finals[j];
    for (int k = 0; !s && k < sp->K; k++)
      s = take(m, scans[k], (int)ax[k], sp->in_dir[k] ? L - 1 - t : t, &ins[sp->N + k]);
    if (!s) s = tp_onnx_subgraph(m, sub, sp->N + sp->K, ins, outs);
    for (int j = 0; !s && j < sp->N; j++) finals[j] = outs[j];
    for (int j = 0; !s && j < sp->M; j++) col[j * L + t] = outs[sp->N + j];
  }
  for (int j = 0; !s && j < sp->M; j++)
    s = stack(m, col + j * L, L, sp->out_axes[j], (int)sp->out_dir[j], "scan_output_axes value", &stacked[j]);
  tp_free(col);
  return s;
}

static tp_status body_graph(imp *m, onode *n, omodel *sub) {
  attr *b = tp_onnx_attr(m, n, "body", A_GRAPH);
  memset(sub, 0, sizeof *sub);
  if (!b || !b->has_g) return tp_fail(TP_ERR_INVALID_ARG, "the body attribute (a graph) is required");
  return tp_onnx_decode_subgraph(&m->md, &b->g, sub);
}

static tp_status directions(imp *m, onode *n, const char *name, int64_t *v, int k) {
  TP_TRY(tp_onnx_attr_ints(m, n, name, v, k, 0));
  for (int i = 0; i < k; i++)
    if (v[i] != 0 && v[i] != 1) return tp_fail(TP_ERR_INVALID_ARG, "%s value %lld is not 0 or 1", name, (long long)v[i]);
  return TP_OK;
}

/* Scan. Opset 9+: inputs = N states then K scan inputs (num_scan_inputs),
 * each sliced along scan_input_axes (reversed when scan_input_directions
 * is 1); outputs = N final states then M scan outputs stacked along
 * scan_output_axes. Opset 8: a leading optional sequence_lens and a batch
 * axis 0 on every input and output; the scan axis is 1 (directions). */
tp_status tp_onnx_cv_scan(imp *m, onode *n, int arg) {
  (void)arg;
  int v8 = m->md.opset < 9, first = v8 ? 1 : 0;
  int64_t K = tp_onnx_attr_int(m, n, "num_scan_inputs", -1);
  int nin = n->nin - first;
  if (K < 1 || K > nin) return tp_fail(TP_ERR_INVALID_ARG, "num_scan_inputs %lld is not in 1..%d", (long long)K, nin);
  scan_spec sp;
  memset(&sp, 0, sizeof sp);
  sp.K = (int)K, sp.N = nin - sp.K, sp.M = n->nout - sp.N;
  if (sp.M < 0) return tp_fail(TP_ERR_INVALID_ARG, "%d outputs for %d states", n->nout, sp.N);
  if (sp.N > MAXV || sp.K > MAXV || sp.M > MAXV) return tp_fail(TP_ERR_UNSUPPORTED, "more than %d states, scan inputs or scan outputs", MAXV);
  ref states[MAXV], scans[MAXV], finals[MAXV], stacked[MAXV];
  for (int j = 0; j < sp.N; j++) TP_TRY(tp_onnx_need_in(m, n, first + j, &states[j]));
  for (int k = 0; k < sp.K; k++) TP_TRY(tp_onnx_need_in(m, n, first + sp.N + k, &scans[k]));
  if (!v8) {
    TP_TRY(tp_onnx_attr_ints(m, n, "scan_input_axes", sp.in_axes, sp.K, 0));
    TP_TRY(directions(m, n, "scan_input_directions", sp.in_dir, sp.K));
    TP_TRY(tp_onnx_attr_ints(m, n, "scan_output_axes", sp.out_axes, sp.M, 0));
    TP_TRY(directions(m, n, "scan_output_directions", sp.out_dir, sp.M));
  } else {
    TP_TRY(directions(m, n, "directions", sp.in_dir, sp.K));
  }
  omodel sub;
  tp_status s = body_graph(m, n, &sub);
  if (!s && !v8) {
    s = scan_run(m, &sub, &sp, states, scans, finals, stacked);
  } else if (!s) {
    /* opset 8: one scan per batch entry (axis 0), results restacked */
    ref len, bst[MAXV], bsc[MAXV], *fin = NULL, *stk = NULL;
    int64_t B = sp.K ? tp_onnx_desc(m, scans[0]).shape[0] : 0;
    s = tp_onnx_in(m, n, 0, &len);
    if (!s && len.kind != R_NONE) { /* sequence_lens: only the full length */
      int64_t v[1];
      tp_desc ld = tp_onnx_desc(m, len), sd = tp_onnx_desc(m, scans[0]);
      if (len.kind != R_CONST || ld.ndim != 1 || ld.shape[0] != B || sd.ndim < 2)
        s = tp_fail(TP_ERR_UNSUPPORTED, "sequence_lens must be a constant of %lld values", (long long)B);
      for (int64_t b = 0; !s && b < B; b++) {
        int nv;
        ref e;
        s = take(m, len, 0, b, &e);
        if (!s) s = tp_onnx_const_ints(m, e, "sequence_lens", v, 1, &nv);
        if (!s && v[0] != sd.shape[1])
          s = tp_fail(TP_ERR_UNSUPPORTED, "sequence_lens %lld shorter than the sequence (%lld) is not supported yet",
                      (long long)v[0], (long long)sd.shape[1]);
      }
    }
    for (int k = 0; k < sp.K; k++) sp.in_axes[k] = 0;
    if (!s && (B < 1 || B > TP_ONNX_MAX_UNROLL)) s = tp_fail(TP_ERR_UNSUPPORTED, "a batch of %lld", (long long)B);
    if (!s && !(fin = tp_alloc(sizeof(ref) * (size_t)(B * (sp.N + sp.M) + 1)))) s = TP_ERR_OUT_OF_MEMORY;
    if (fin) stk = fin + B * sp.N;
    for (int64_t b = 0; !s && b < B; b++) {
      for (int j = 0; !s && j < sp.N; j++) s = take(m, states[j], 0, b, &bst[j]);
      for (int k = 0; !s && k < sp.K; k++) s = take(m, scans[k], 0, b, &bsc[k]);
      if (!s) s = scan_run(m, &sub, &sp, bst, bsc, finals, stacked);
      for (int j = 0; !s && j < sp.N; j++) fin[j * B + b] = finals[j];
      for (int j = 0; !s && j < sp.M; j++) stk[j * B + b] = stacked[j];
    }
    for (int j = 0; !s && j < sp.N; j++) s = stack(m, fin + j * B, B, 0, 0, "batch axis", &finals[j]);
    for (int j = 0; !s && j < sp.M; j++) s = stack(m, stk + j * B, B, 0, 0, "batch axis", &stacked[j]);
    tp_free(fin);
  }
  for (int j = 0; !s && j < sp.N; j++) s = tp_onnx_set_out(m, n, j, finals[j]);
  for (int j = 0; !s && j < sp.M; j++) s = tp_onnx_set_out(m, n, sp.N + j, stacked[j]);
  tp_onnx_decoded_free(&sub);
  return s;
}

static tp_status scalar_const(imp *m, tp_dtype dt, double v, ref *out) { return tp_onnx_full(m, dt, 0, NULL, v, out); }

/* The Loop body's condition is not a constant: when it is computed only
 * from int or bool graph inputs (a count fed at run time), they become
 * value inputs (m->need; the model imports again with their values);
 * computed from float data (or from no graph input), it is refused. */
tp_status tp_onnx_need_ints(imp *m, int node, int only_ints, int *added_out) {
  uint64_t before = m->need, ints = 0;
  int floats = 0;
  *added_out = 0;
  TP_TRY(tp_onnx_note_need(m, node));
  uint64_t added = m->need & ~before;
  for (int i = 0; i < m->md.ninputs; i++) {
    int o = m->input_ord ? m->input_ord[i] : -1;
    if (o < 0 || o >= 64 || !(added >> o & 1)) continue;
    tp_dtype dt;
    if (!tp_onnx_to_dtype(m->md.inputs[i].elem, &dt) || tp_dtype_is_float(dt)) floats = 1;
    else ints |= (uint64_t)1 << o;
  }
  if (only_ints && floats) ints = 0;
  m->need = before | ints;
  *added_out = ints != 0;
  return TP_OK;
}

static tp_status data_cond(imp *m, ref c) {
  int ints_only = 0;
  if (c.kind == R_NODE) TP_TRY(tp_onnx_need_ints(m, c.node, 1, &ints_only));
  if (ints_only)
    return tp_fail(TP_ERR_UNSUPPORTED, "the loop condition must be a constant (it is computed from int inputs, "
                   "which a model binds as value inputs)");
  return tp_fail(TP_ERR_UNSUPPORTED, "the loop condition is computed from run-time data; a Loop that exits on data is "
                 "not supported yet");
}

/* Loop: inputs M (trip count, optional), cond (optional), N carried
 * values; the body takes (iteration, cond, carried...) and gives (cond,
 * carried..., K scan outputs). M and the initial cond must be known at
 * import (constants or value inputs: the model specializes on them); the
 * body's cond must fold to a constant each iteration (int inputs it reads
 * become value inputs; a condition computed from float data is refused).
 * Scan outputs are stacked along axis 0. */

static tp_status loop_as_while(imp *m, onode *n) {
  omodel sub;
  tp_status s = body_graph(m, n, &sub);
  if (!s) s = tp_onnx_loop_as_while(m, n, &sub, -1);
  tp_onnx_decoded_free(&sub);
  return s;
}

/* Loop: a trip count or initial condition fed at run time, or an exit
 * condition computed from run-time data, makes one while_loop node (body
 * compiled once); where that cannot be (scan outputs, carried shapes that
 * change), and for constant counts, the body is unrolled at import. */
static tp_status loop_unrolled(imp *m, onode *n);
tp_status tp_onnx_cv_loop(imp *m, onode *n, int arg) {
  (void)arg;
  mark k = {m->g->n, m->g->nsubs, m->nconsts, m->need};
  ref mr, cr;
  TP_TRY(tp_onnx_in(m, n, 0, &mr));
  TP_TRY(tp_onnx_in(m, n, 1, &cr));
  tp_status s;
  if (mr.kind == R_NODE || cr.kind == R_NODE) { /* run-time count: the plan loops */
    s = loop_as_while(m, n);
    if (s != TP_ERR_UNSUPPORTED) return s;
    rollback(m, &k);
    return loop_unrolled(m, n); /* a value input per count, unrolled */
  }
  s = loop_unrolled(m, n);
  if (s != TP_ERR_UNSUPPORTED) return s;
  int data = strstr(tp_last_error(), "computed from run-time data") != NULL;
  if (!data && !strstr(tp_last_error(), "computed from int inputs")) return s;
  /* an exit on data: one while_loop instead (its error says why not); an
   * exit on int inputs too (one plan for every value), else those inputs
   * become value inputs and the loop unrolls per value */
  char why[512];
  snprintf(why, sizeof why, "%s", tp_last_error());
  uint64_t need = m->need;
  rollback(m, &k);
  s = loop_as_while(m, n);
  if (s != TP_ERR_UNSUPPORTED || data) return s;
  rollback(m, &k);
  m->need = need;
  return tp_fail(TP_ERR_UNSUPPORTED, "%s", why);
}

/* The body's condition output is its condition input (directly or through
 * Identity): the loop ends only on its trip count. */
int tp_onnx_cond_passes(const omodel *sub) {
  if (sub->ninputs < 2 || sub->noutputs < 1) return 0;
  const char *in = sub->inputs[1].name, *out = sub->outputs[0].name;
  for (int hops = 0; hops < 8; hops++) {
    if (!strcmp(in, out)) return 1;
    const char *from = NULL;
    for (int i = 0; i < sub->nnodes && !from; i++) {
      const onode *q = &sub->nodes[i];
      for (int k = 0; k < q->nout && !from; k++)
        if (!strcmp(q->out[k], out)) from = strcmp(q->op, "Identity") || q->nin != 1 ? "" : q->in[0];
    }
    if (!from || !*from) return 0;
    out = from;
  }
  return 0;
}

static tp_status loop_unrolled(imp *m, onode *n) {
  ref mr, cr;
  int64_t trip = -1; /* -1: no trip count (the condition alone ends the loop) */
  double cond = 1;
  TP_TRY(tp_onnx_in(m, n, 0, &mr));
  TP_TRY(tp_onnx_in(m, n, 1, &cr));
  if (mr.kind != R_NONE) {
    int nv;
    TP_TRY(tp_onnx_const_ints(m, mr, "the trip count M", &trip, 1, &nv));
    if (nv != 1) return tp_fail(TP_ERR_INVALID_ARG, "the trip count M must hold one value");
    if (trip < 0) trip = 0; /* a negative trip count runs no iteration */
  }
  if (cr.kind != R_NONE) TP_TRY(tp_onnx_const_scalar(m, cr, "the initial condition cond", &cond));
  int N = n->nin - 2;
  if (N < 0) N = 0;
  if (N > MAXV) return tp_fail(TP_ERR_UNSUPPORTED, "more than %d loop-carried values", MAXV);
  ref carried[MAXV], ins[MAXV + 2], outs[2 * MAXV + 1];
  for (int j = 0; j < N; j++) TP_TRY(tp_onnx_need_in(m, n, 2 + j, &carried[j]));
  omodel sub;
  tp_status s = body_graph(m, n, &sub);
  int K = sub.noutputs - 1 - N;
  if (!s && (sub.ninputs != N + 2 || K < 0))
    s = tp_fail(TP_ERR_INVALID_ARG, "the body has %d inputs and %d outputs for %d loop-carried values", sub.ninputs,
                sub.noutputs, N);
  if (!s && K > MAXV) s = tp_fail(TP_ERR_UNSUPPORTED, "more than %d scan outputs", MAXV);
  if (!s && n->nout > N + K) s = tp_fail(TP_ERR_INVALID_ARG, "%d outputs, the body gives %d", n->nout, N + K);
  /* scan outputs, a known count and a body that never ends early (its
   * condition output is its condition input): one while_loop in the plan,
   * its stacks [count, ...] written in place, like a Scan (long loops and
   * 0 iterations); shorter ones unroll */
  int64_t rows = trip < 0 ? -1 : cond != 0 ? trip : 0;
  if (!s && K && rows >= 0 && (rows > TP_ONNX_SCAN_LOOP_MIN || rows == 0) && tp_onnx_cond_passes(&sub)) {
    mark mk = {m->g->n, m->g->nsubs, m->nconsts, m->need};
    s = tp_onnx_loop_as_while(m, n, &sub, rows);
    if (s != TP_ERR_UNSUPPORTED) {
      tp_onnx_decoded_free(&sub);
      return s;
    }
    rollback(m, &mk); /* unrolled instead */
    s = TP_OK;
  }
  ref *col = NULL;
  int capcol = 0;
  int64_t it = 0;
  for (; !s && (trip < 0 || it < trip) && cond != 0; it++) {
    if (it >= TP_ONNX_MAX_UNROLL) {
      s = tp_fail(TP_ERR_UNSUPPORTED, "a Loop of more than %d iterations (it is unrolled at import)", TP_ONNX_MAX_UNROLL);
      break;
    }
    s = scalar_const(m, TP_I64, (double)it, &ins[0]);
    if (!s) s = scalar_const(m, TP_BOOL, 1, &ins[1]);
    for (int j = 0; j < N; j++) ins[2 + j] = carried[j];
    if (!s) s = tp_onnx_subgraph(m, &sub, N + 2, ins, outs);
    if (!s && outs[0].kind != R_CONST && outs[0].kind != R_SCALAR) s = data_cond(m, outs[0]);
    if (!s) s = tp_onnx_const_scalar(m, outs[0], "the loop condition", &cond);
    for (int j = 0; !s && j < N; j++) carried[j] = outs[1 + j];
    if (!s && K && TP_ARRAY_RESERVE(col, capcol, (it + 1) * K)) s = TP_ERR_OUT_OF_MEMORY;
    for (int j = 0; !s && j < K; j++) col[it * K + j] = outs[1 + N + j];
  }
  for (int j = 0; !s && j < N; j++) s = tp_onnx_set_out(m, n, j, carried[j]);
  if (!s && K && !it && n->nout > N)
    s = tp_fail(TP_ERR_UNSUPPORTED, "a Loop of 0 iterations with scan outputs is not supported yet");
  for (int j = 0; !s && j < K && N + j < n->nout; j++) {
    ref *parts = tp_alloc(sizeof(ref) * (size_t)it);
    if (!parts) {
      s = TP_ERR_OUT_OF_MEMORY;
      break;
    }
    for (int64_t i = 0; i < it; i++) parts[i] = col[i * K + j];
    ref y;
    s = stack(m, parts, it, 0, 0, "scan output axis", &y);
    if (!s) s = tp_onnx_set_out(m, n, N + j, y);
    tp_free(parts);
  }
  tp_free(col);
  tp_onnx_decoded_free(&sub);
  return s;
}

/* Optional(x) is x; Optional() (an empty optional) is an absent value. */
tp_status tp_onnx_cv_optional(imp *m, onode *n, int arg) {
  (void)arg;
  ref x;
  tp_onnx_attr_ignore(n, "type");
  TP_TRY(tp_onnx_in(m, n, 0, &x));
  return tp_onnx_set_out(m, n, 0, x);
}

/* OptionalHasElement: true when the input is given (a tensor, or an
 * Optional holding one); false when absent or an empty optional. */
tp_status tp_onnx_cv_optional_has(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, y;
  TP_TRY(tp_onnx_in(m, n, 0, &x));
  TP_TRY(scalar_const(m, TP_BOOL, x.kind != R_NONE, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* OptionalGetElement: the tensor (a plain tensor input is returned as is);
 * an empty optional is an error. */
tp_status tp_onnx_cv_optional_get(imp *m, onode *n, int arg) {
  (void)arg;
  ref x;
  TP_TRY(tp_onnx_in(m, n, 0, &x));
  if (x.kind == R_NONE) return tp_fail(TP_ERR_INVALID_ARG, "the optional input is empty");
  return tp_onnx_set_out(m, n, 0, x);
}
