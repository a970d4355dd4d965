/* capture.h - the tracer's internal API (see tracer.c). */
#ifndef TP_CAPTURE_H
#define TP_CAPTURE_H
#include "../graph/graph.h"

/* tp_trace with placeholder names (NULL or "" entries: x0, x1, ...). */
tp_status tp_trace_named(const tp_callable *fn, int nin, tp_tensor *const *in,
                         const char *const *names, int fullgraph, tp_trace_result *out);
/* Compiled training's joint trace (src/compiler/aot.c): while on, operands
 * that require grad are recorded (no graph break). */
void tp_capture_allow_grad(int on, int *prev);
/* A placeholder added to the live trace (after its nodes so far), its proxy
 * a new view of sample (the caller releases it). */
tp_status tp_capture_add_input(tp_tensor *sample, const char *name, tp_tensor **proxy);
/* disable_capture(): while set, ops on proxies raise GraphCaptureError. */
tp_status tp_capture_set_disabled(int disabled, int *prev);
/* True inside disable_capture(), with or without a live trace. */
int tp_capture_disabled(void);
/* True when some operand is a value of the live trace (the seed's
 * _tracer_for(args) is not None). */
int tp_capture_sees(int nin, tp_tensor *const *in);
/* The seed's _capture_opaque_region for host function call_id (see
 * tracer.c). mode: "allow", "nonstrict" or "disabled"; suspend: run with
 * capture disabled (disabled + recursive). outs: proxies of the results. */
tp_status tp_capture_opaque(int64_t call_id, int nin, tp_tensor *const *in, const char *mode,
                            int suspend, int recursive, const char *reason, int max_out,
                            tp_tensor **outs, int *nout);
/* The seed's _capture_nested_region: trace host function call_id into a
 * child graph once per (record, key) in this capture and invoke it. key:
 * "hash:<int>" from reuse_hash_fn, else the host's key of non-tensor
 * arguments (the core adds shapes, dtypes and a digest of the values). More
 * than max_entries keys: "nested compile region reuse limit reached". */
tp_status tp_capture_nested(uint32_t rec, int max_entries, int64_t call_id, const char *key,
                            int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                            int *nout);
/* Records a cond (pred non-NULL) or while_loop node on the live trace:
 * sub0/sub1 (ownership moves, also on failure) become child graphs, in
 * its operands, res[0..nres) the results' samples (owned; replaced by
 * proxies on success). */
tp_status tp_capture_control(tp_op op, tp_graph *sub0, tp_graph *sub1, tp_tensor *pred, int nin,
                             tp_tensor *const *in, int nres, tp_tensor **res);
/* A host function call recorded as one call_host node plus a getitem per
 * result, with no grad check (compiled training's nested regions: their
 * compiled forward and backward, aot.c). The function runs on plain views
 * of the operands with capture disabled and grad mode off; tag goes into
 * the node's "nested_region" custom attribute. outs: proxies. */
tp_status tp_capture_host_call(int64_t call_id, int nin, tp_tensor *const *in, const char *tag,
                               int max_out, tp_tensor **outs, int *nout);
/* Compiled training through nested regions: while a joint trace runs, a
 * nested region call whose operands require grad goes to this hook
 * (installed by aot.c; capture never calls up otherwise). It either
 * handles the call (*handled = 1: outs filled), or hands back the child
 * trace it made for the plain path (plain->graph set), or leaves both
 * (the tracer traces the region itself); why set: the region cannot be
 * differentiated (a graph break, or with fullgraph an error). */
typedef struct tp_nested_call {
  uint32_t rec;
  int max_entries;
  const char *key;
  tp_callable fn;          /* the region, called on samples */
  int fullgraph;
  tp_backend_fn fw_fn, bw_fn; /* the region's fw_compiler / bw_compiler, NULL: None */
  void *fw_ud, *bw_ud;
} tp_nested_call;
typedef tp_status (*tp_nested_grad_hook)(const tp_nested_call *c, int nin, tp_tensor *const *in,
                                         int max_out, tp_tensor **outs, int *nout, int *handled,
                                         tp_trace_result *plain, char *why, size_t nwhy);
void tp_capture_set_nested_grad_hook(tp_nested_grad_hook fn);
/* True while a trace is active on this thread. */
int tp_capture_active(void);
/* Installs capture's operator observer (tp_ops_set_observer) once; every
 * trace start calls it, so no constructor is needed. */
void tp_capture_install(void);
/* A data read (toArray, item) of t: graph break handling. */
tp_status tp_capture_on_read(tp_tensor *t, const char *what);
/* The operator observer's two calls (see core/internal.h). */
tp_status tp_capture_check(const char *what, int nin, tp_tensor *const *in);
tp_status tp_capture_record(tp_op op, int nin, tp_tensor *const *in, const tp_attrs *attrs,
                            tp_tensor *out);
#endif
