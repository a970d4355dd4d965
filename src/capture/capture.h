/* capture.h - the tracer's internal API (see tracer.c). */
#ifndef TP_CAPTURE_H
#define TP_CAPTURE_H
#include "../graph/graph.h"

/* tp_trace with placeholder names (NULL or "" entries: x0, x1, ...). */
tp_status tp_trace_named(const tp_callable *fn, int nin, tp_tensor *const *in,
                         const char *const *names, int fullgraph, tp_trace_result *out);
/* disable_capture(): while set, ops on proxies raise GraphCaptureError. */
tp_status tp_capture_set_disabled(int disabled, int *prev);
/* True when some operand is a value of the live trace (the seed's
 * _tracer_for(args) is not None). */
int tp_capture_sees(int nin, tp_tensor *const *in);
/* The seed's _capture_opaque_region for host function call_id (see
 * tracer.c). mode: "allow", "nonstrict" or "disabled"; suspend: run with
 * capture disabled (disabled + recursive). outs: proxies of the results. */
tp_status tp_capture_opaque(int64_t call_id, int nin, tp_tensor *const *in, const char *mode,
                            int suspend, int recursive, const char *reason, int max_out,
                            tp_tensor **outs, int *nout);
/* C host functions by id, for opaque regions in C programs (the Wasm ABI
 * installs a dispatcher to JS instead). Ids start at 1. */
tp_status tp_host_fn_register(const tp_callable *fn, int64_t *id);
void tp_host_fn_unregister(int64_t id);
#endif
