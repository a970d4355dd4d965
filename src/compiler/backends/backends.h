/* backends.h - the built-in backends, registered by tp_backends_init
 * (registry.c). Each is a tp_backend_fn (tensorplay.h). */
#ifndef TP_BACKENDS_H
#define TP_BACKENDS_H
#include "../compiler.h"

/* stax.c: lower the graph (src/lower) and run the plan, with generated
 * Wasm kernels attached on a Wasm host (src/codegen). */
tp_status tp_backend_stax(void *ud, const tp_graph *g, int nin, tp_tensor *const *examples,
                          const tp_backend_opts *opts, tp_backend_run *out);
/* graph.c: eager (debug) runs the graph node by node on the eager kernels;
 * reference (debug) on the scalar reference kernels. */
tp_status tp_backend_eager(void *ud, const tp_graph *g, int nin, tp_tensor *const *examples,
                           const tp_backend_opts *opts, tp_backend_run *out);
tp_status tp_backend_reference(void *ud, const tp_graph *g, int nin, tp_tensor *const *examples,
                               const tp_backend_opts *opts, tp_backend_run *out);
/* graph.c: a runner over g (taken over; freed with the runner) that runs
 * it node by node on the eager kernels: eager's, and stax's fallback. */
void tp_backend_graph_runner(tp_graph *g, tp_backend_run *out);
#endif
