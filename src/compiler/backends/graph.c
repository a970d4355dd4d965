/* graph.c - the built-in backends that run the captured graph as it is:
 * eager (debug) on the eager kernels, reference (debug) on the scalar
 * reference kernels; and the graph runner stax falls back to. */
#include "backends.h"

/* The runner of stax and eager: the backend's own copy of the graph, run
 * node by node on the eager kernels. */
static tp_status graph_runner(void *ud, int nin, tp_tensor *const *in, int max_out,
                              tp_tensor **outs, int *nout) {
  return tp_graph_run((const tp_graph *)ud, nin, in, max_out, outs, nout);
}
static void graph_runner_free(void *ud) { tp_graph_free((tp_graph *)ud); }

/* The runner keeps its own copy: it must not depend on the caller keeping
 * g alive (constants are shared by reference). */
static tp_status copy_graph(const tp_graph *g, tp_graph **out) { return tp_graph_copy(g, out); }

void tp_backend_graph_runner(tp_graph *g, tp_backend_run *out) {
  out->run = graph_runner;
  out->ud = g;
  out->free = graph_runner_free;
}

/* eager (debug): no compilation at all; the graph runs node by node on the
 * eager kernels, exactly what the captured function did. Ignores options. */
tp_status tp_backend_eager(void *ud, const tp_graph *g, int nin, tp_tensor *const *examples,
                           const tp_backend_opts *opts, tp_backend_run *out) {
  (void)ud, (void)nin, (void)examples, (void)opts;
  tp_graph *copy;
  TP_TRY(copy_graph(g, &copy));
  out->run = graph_runner;
  out->ud = copy;
  out->free = graph_runner_free;
  return TP_OK;
}

/* reference (debug): every node on the scalar reference kernels (the
 * oracle of the tests), through the graph runner. */
static tp_status ref_runner(void *ud, int nin, tp_tensor *const *in, int max_out,
                            tp_tensor **outs, int *nout) {
  return tp_graph_run_ex((const tp_graph *)ud, 1, nin, in, max_out, outs, nout);
}

tp_status tp_backend_reference(void *ud, const tp_graph *g, int nin, tp_tensor *const *examples,
                               const tp_backend_opts *opts, tp_backend_run *out) {
  (void)ud, (void)nin, (void)examples, (void)opts;
  tp_graph *copy;
  TP_TRY(copy_graph(g, &copy));
  out->run = ref_runner;
  out->ud = copy;
  out->free = graph_runner_free;
  return TP_OK;
}
