/* capture.h - the tracer's internal API (see tracer.c). */
#ifndef TP_CAPTURE_H
#define TP_CAPTURE_H
#include "../graph/graph.h"

/* tp_trace with placeholder names (NULL or "" entries: x0, x1, ...). */
tp_status tp_trace_named(const tp_callable *fn, int nin, tp_tensor *const *in,
                         const char *const *names, int fullgraph, tp_trace_result *out);
/* disable_capture(): while set, ops on proxies raise GraphCaptureError. */
tp_status tp_capture_set_disabled(int disabled, int *prev);
#endif
