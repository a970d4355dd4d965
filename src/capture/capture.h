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
/* The seed's _capture_nested_region: trace host function call_id into a
 * child graph once per (record, key) in this capture and invoke it. key:
 * "hash:<int>" from reuse_hash_fn, else the host's key of non-tensor
 * arguments (the core adds shapes, dtypes and a digest of the values). More
 * than max_entries keys: "nested compile region reuse limit reached". */
tp_status tp_capture_nested(uint32_t rec, int max_entries, int64_t call_id, const char *key,
                            int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                            int *nout);
/* C host functions by id, for opaque regions in C programs (the Wasm ABI
 * installs a dispatcher to JS for its own ids). C ids start at 2^40. */
tp_status tp_host_fn_register(const tp_callable *fn, int64_t *id);
void tp_host_fn_unregister(int64_t id);
#endif
