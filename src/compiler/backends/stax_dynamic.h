/* stax_dynamic.h - stax's runs at input shapes other than the captured
 * ones (a dynamic compile): one Kernel IR template for every size of the
 * dim that changes (src/lower/symbolic.c), instantiated per size and
 * cached; a size the template does not serve is a specialization (its
 * own lowering) with the reason; explain() reports both. */
#ifndef TP_STAX_DYNAMIC_H
#define TP_STAX_DYNAMIC_H
#include "../../lower/lower.h"

typedef struct stax_dyn stax_dyn;
/* g: the captured graph (borrowed; outlives d); base: the plan at the
 * captured shapes (borrowed); attach: NULL, or what to call on a new plan
 * (stax attaches generated kernels; mode 0: as for any plan, 2: a
 * template's plan, its numbers read at run time so that one module serves
 * every size, 1: the same, only if that module was loaded before, i.e.
 * nothing to compile). */
/* graph_for (NULL: g with its placeholders' shapes replaced) gives the
 * graph for other shapes (tp_backend_opts.graph_for); with it, shapes no
 * plan serves run on that graph's executor here (never on g). */
tp_status tp_stax_dyn_new(const tp_graph *g, const tp_lower_options *lo, const tp_plan *base,
                          tp_status (*attach)(tp_plan *pl, const tp_lower_options *lo, int mode),
                          tp_status (*graph_for)(void *ud, int nin, tp_tensor *const *examples, tp_graph **out),
                          void *graph_for_ud, stax_dyn **out);
/* Runs the call at shapes other than base's. *handled 0: the caller runs
 * the graph executor (no plan for these shapes: the reason is kept). */
tp_status tp_stax_dyn_run(stax_dyn *d, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout,
                          int *handled);
/* Appends "\"dynamic\": {...}, " (or "\"dynamic\": null, ") at json[*pos]
 * of n bytes; 0 when it does not fit. */
int tp_stax_dyn_describe(const stax_dyn *d, char *json, size_t n, size_t *pos);
void tp_stax_dyn_free(stax_dyn *d);
#endif
