/* control.c - tp_cond and tp_while_loop (tensorplay.h): eager outside a
 * capture (only the chosen branch, each step in turn); inside one, each
 * callable is traced into a child graph on samples of the operands and one
 * cond / while_loop node (src/graph/control.c) is recorded, so a compiled
 * function chooses at run time. The signature rules are checked here with
 * messages in the API's terms, before anything is recorded. */
#include "capture.h"
#include "../core/internal.h"
#include <stdio.h>

static tp_status check_flag(tp_tensor *t, const char *what) {
  if (!t) return tp_fail(TP_ERR_INVALID_ARG, "%s is None", what);
  if (tp_tensor_numel(t) != 1 || tp_dtype_is_float(t->dtype)) {
    char b[96];
    return tp_fail(TP_ERR_INVALID_ARG, "%s is %s%s; it must be one bool or integer value", what,
                   tp_dtype_short(t->dtype), tp_shape_str(t->ndim, t->shape, b, sizeof b));
  }
  return TP_OK;
}

static tp_status read_flag(tp_tensor *t, const char *what, int *out) {
  TP_TRY(check_flag(t, what));
  double v = 0;
  TP_TRY(tp_tensor_item_plain(t, &v));
  *out = v != 0;
  return TP_OK;
}

static tp_status check_args(const char *api, const tp_callable *a, const tp_callable *b, int nin,
                            tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  if (!a || !a->fn || !b || !b->fn || !nout || (nin && !in) || (max_out && !outs))
    return tp_fail(TP_ERR_INVALID_ARG, "%s: NULL argument", api);
  *nout = 0;
  if (nin < 0 || nin > TP_MAX_OPERANDS - 3)
    return tp_fail(TP_ERR_INVALID_ARG, "%s: %d operands (at most %d)", api, nin, TP_MAX_OPERANDS - 3);
  for (int i = 0; i < nin; i++)
    if (!in[i]) return tp_fail(TP_ERR_INVALID_ARG, "%s: operand %d is None", api, i);
  return TP_OK;
}

static void release_all(int n, tp_tensor **t) {
  for (int i = 0; i < n; i++) {
    tp_tensor_release(t[i]);
    t[i] = NULL;
  }
}

/* fresh untagged views of the operands: the child traces' samples */
static tp_status samples_of(int nin, tp_tensor *const *in, tp_tensor **out) {
  for (int i = 0; i < nin; i++) out[i] = NULL; /* all of them: a failure leaves no stale pointer for the caller */
  for (int i = 0; i < nin; i++) {
    tp_status s = tp_tensor_view(in[i], in[i]->ndim, in[i]->shape, in[i]->strides, in[i]->offset, &out[i]);
    if (s) {
      release_all(i, out);
      return s;
    }
  }
  return TP_OK;
}

static tp_status trace_branch(const char *api, const char *which, const tp_callable *fn, int nin, tp_tensor **samples,
                              tp_trace_result *r) {
  tp_status s = tp_trace_named(fn, nin, samples, NULL, 1, r);
  if (s && strstr(tp_last_error(), "different traces"))
    return tp_fail(s, "%s: the %s function reads a traced value that is not one of its operands; pass it as an "
                   "operand", api, which);
  if (s) return tp_fail_context(s, "%s: the %s function", api, which);
  if (r->broken) {
    tp_status e = tp_fail(TP_ERR_CAPTURE, "%s: the %s function breaks the graph (%s)", api, which, r->break_reason);
    tp_trace_result_clear(r);
    return e;
  }
  if (r->nout < 1) {
    tp_trace_result_clear(r);
    return tp_fail(TP_ERR_CAPTURE, "%s: the %s function returns no tensor", api, which);
  }
  return TP_OK;
}

static int same_type(const tp_tensor *a, const tp_tensor *b) {
  tp_desc x, y;
  tp_desc_of(a, &x);
  tp_desc_of(b, &y);
  x.weak = y.weak = 0;
  return tp_desc_equal(&x, &y);
}

static tp_status type_mismatch(const char *api, int k, const char *wa, const tp_tensor *a, const char *wb,
                               const tp_tensor *b) {
  char b0[96], b1[96];
  return tp_fail(TP_ERR_INVALID_ARG, "%s: output %d is %s%s in the %s but %s%s in the %s", api, k,
                 tp_dtype_short(a->dtype), tp_shape_str(a->ndim, a->shape, b0, sizeof b0), wa, tp_dtype_short(b->dtype),
                 tp_shape_str(b->ndim, b->shape, b1, sizeof b1), wb);
}

tp_status tp_cond(tp_tensor *pred, const tp_callable *then_fn, const tp_callable *else_fn, int nin,
                  tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  TP_TRY(check_args("cond", then_fn, else_fn, nin, in, max_out, outs, nout));
  TP_TRY(check_flag(pred, "cond: the predicate"));
  int traced = tp_capture_active() && !tp_capture_disabled() &&
               (tp_capture_sees(1, &pred) || tp_capture_sees(nin, in));
  if (!traced) { /* eager: the chosen branch only */
    int take = 0;
    TP_TRY(read_flag(pred, "cond: the predicate", &take));
    const tp_callable *fn = take ? then_fn : else_fn;
    return fn->fn(fn->ud, nin, in, max_out, outs, nout);
  }
  tp_tensor *samples[TP_MAX_OPERANDS];
  TP_TRY(samples_of(nin, in, samples));
  tp_trace_result r[2];
  memset(r, 0, sizeof r);
  tp_status s = trace_branch("cond", "then", then_fn, nin, samples, &r[0]);
  if (!s) s = trace_branch("cond", "else", else_fn, nin, samples, &r[1]);
  release_all(nin, samples);
  if (!s && r[0].nout != r[1].nout)
    s = tp_fail(TP_ERR_INVALID_ARG, "cond: the then function returns %d tensors, the else function %d", r[0].nout,
                r[1].nout);
  for (int k = 0; k < r[0].nout && !s; k++)
    if (!same_type(r[0].outs[k], r[1].outs[k]))
      s = type_mismatch("cond", k, "then function", r[0].outs[k], "else function", r[1].outs[k]);
  if (!s && r[0].nout > max_out)
    s = tp_fail(TP_ERR_INVALID_ARG, "cond: %d results do not fit in %d slots", r[0].nout, max_out);
  int take = 0;
  if (!s) s = read_flag(pred, "cond: the predicate", &take); /* the sample's choice gives the samples */
  if (s) {
    tp_trace_result_clear(&r[0]);
    tp_trace_result_clear(&r[1]);
    return s;
  }
  int n = r[0].nout, w = take ? 0 : 1;
  tp_tensor *res[TP_MAX_OPERANDS];
  for (int k = 0; k < n; k++) res[k] = r[w].outs[k], r[w].outs[k] = NULL;
  r[w].nout = 0;
  tp_graph *g0 = r[0].graph, *g1 = r[1].graph;
  r[0].graph = r[1].graph = NULL;
  tp_trace_result_clear(&r[0]);
  tp_trace_result_clear(&r[1]);
  s = tp_capture_control(TP_OP_COND, g0, g1, pred, nin, in, n, res);
  if (s) {
    release_all(n, res);
    return s;
  }
  for (int k = 0; k < n; k++) outs[k] = res[k];
  *nout = n;
  return TP_OK;
}

/* one step's cond: *go */
static tp_status eager_cond(const tp_callable *cond_fn, int nin, tp_tensor *const *cur, int *go) {
  tp_tensor *f[TP_MAX_OPERANDS] = {0};
  int nf = 0;
  tp_status s = cond_fn->fn(cond_fn->ud, nin, cur, TP_MAX_OPERANDS, f, &nf);
  if (!s && nf != 1) s = tp_fail(TP_ERR_INVALID_ARG, "while_loop: the cond function returns %d tensors; it must return one", nf);
  if (!s) s = read_flag(f[0], "while_loop: the cond function's result", go);
  release_all(nf, f);
  return s;
}

tp_status tp_while_loop(const tp_callable *cond_fn, const tp_callable *body_fn, int ncarried, int nin,
                        tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  TP_TRY(check_args("while_loop", cond_fn, body_fn, nin, in, max_out, outs, nout));
  if (ncarried < 1 || ncarried > nin)
    return tp_fail(TP_ERR_INVALID_ARG, "while_loop: %d carried values of %d operands (1..%d)", ncarried, nin, nin);
  if (ncarried > max_out)
    return tp_fail(TP_ERR_INVALID_ARG, "while_loop: %d results do not fit in %d slots", ncarried, max_out);
  int traced = tp_capture_active() && !tp_capture_disabled() && tp_capture_sees(nin, in);
  tp_graph *graphs[2] = {NULL, NULL};
  tp_status s = TP_OK;
  if (traced) { /* trace cond and body once, on samples of the initial values */
    tp_tensor *samples[TP_MAX_OPERANDS];
    TP_TRY(samples_of(nin, in, samples));
    tp_trace_result r[2];
    memset(r, 0, sizeof r);
    s = trace_branch("while_loop", "cond", cond_fn, nin, samples, &r[0]);
    if (!s) s = trace_branch("while_loop", "body", body_fn, nin, samples, &r[1]);
    release_all(nin, samples);
    if (!s && r[0].nout != 1)
      s = tp_fail(TP_ERR_INVALID_ARG, "while_loop: the cond function returns %d tensors; it must return one", r[0].nout);
    if (!s) s = check_flag(r[0].outs[0], "while_loop: the cond function's result");
    if (!s && r[1].nout != ncarried)
      s = tp_fail(TP_ERR_INVALID_ARG, "while_loop: the body function returns %d tensors for %d carried values",
                  r[1].nout, ncarried);
    for (int k = 0; k < ncarried && !s; k++)
      if (!same_type(r[1].outs[k], in[k]))
        s = type_mismatch("while_loop", k, "body function's result", r[1].outs[k], "initial value", in[k]);
    graphs[0] = r[0].graph, graphs[1] = r[1].graph;
    r[0].graph = r[1].graph = NULL;
    tp_trace_result_clear(&r[0]);
    tp_trace_result_clear(&r[1]);
    if (s) {
      tp_graph_free(graphs[0]);
      tp_graph_free(graphs[1]);
      return s;
    }
  }
  /* the loop on values (eager), or on samples through the traced graphs
   * (nothing recorded: the samples are no values of the trace) */
  tp_tensor *cur[TP_MAX_OPERANDS], *next[TP_MAX_OPERANDS];
  if (traced) s = samples_of(nin, in, cur);
  else
    for (int k = 0; k < nin; k++) cur[k] = in[k], tp_tensor_retain(in[k]);
  for (;;) {
    int go = 0, got = 0;
    if (s) break;
    if (traced) {
      tp_tensor *f = NULL;
      s = tp_graph_run(graphs[0], nin, cur, 1, &f, &got);
      if (!s) s = read_flag(f, "while_loop: the cond function's result", &go);
      tp_tensor_release(f);
    } else {
      s = eager_cond(cond_fn, nin, cur, &go);
    }
    if (s || !go) break;
    memset(next, 0, sizeof next);
    if (traced) s = tp_graph_run(graphs[1], nin, cur, ncarried, next, &got);
    else s = body_fn->fn(body_fn->ud, nin, cur, TP_MAX_OPERANDS, next, &got);
    if (!s && got != ncarried)
      s = tp_fail(TP_ERR_INVALID_ARG, "while_loop: the body function returns %d tensors for %d carried values", got,
                  ncarried);
    for (int k = 0; k < ncarried && !s; k++)
      if (!same_type(next[k], cur[k]))
        s = type_mismatch("while_loop", k, "body function's result", next[k], "carried value", cur[k]);
    if (s) {
      release_all(got, next);
      break;
    }
    for (int k = 0; k < ncarried; k++) {
      tp_tensor_release(cur[k]);
      cur[k] = next[k];
    }
  }
  for (int k = ncarried; k < nin; k++) tp_tensor_release(cur[k]);
  if (!s && traced) {
    s = tp_capture_control(TP_OP_WHILE_LOOP, graphs[0], graphs[1], NULL, nin, in, ncarried, cur);
    graphs[0] = graphs[1] = NULL;
  }
  tp_graph_free(graphs[0]);
  tp_graph_free(graphs[1]);
  if (s) {
    release_all(ncarried, cur);
    return s;
  }
  for (int k = 0; k < ncarried; k++) outs[k] = cur[k];
  *nout = ncarried;
  return TP_OK;
}
