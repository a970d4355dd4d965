/* autograd.h - the tape and the derivatives table's calling convention
 * (src/ops/autograd.c, src/ops/derivatives.c; docs/training.md). Private
 * to src/ops: the public API is the autograd section of tensorplay.h. */
#ifndef TP_AUTOGRAD_H
#define TP_AUTOGRAD_H
#include "ops.h"

/* What a derivative formula gets: the op's saved operands (detached views,
 * NULL for an absent optional one), its saved result when its row asks for
 * it, the incoming gradient g (the result's shape), and which operands need
 * a gradient. It stores a new tensor (or NULL: zero) in gin[i] for each
 * needed operand; the engine sums it down to the operand's shape when it
 * was broadcast. Formulas call ordinary ops (tp_op_call), so a backward
 * pass is a graph of ops like any other. */
typedef struct tp_grad_shape {
  int ndim;
  int64_t shape[TP_MAX_DIMS];
} tp_grad_shape;
typedef struct tp_grad_ctx {
  tp_op op;
  const tp_attrs *at;
  int nin;
  tp_tensor *const *in;
  tp_tensor *out;
  tp_tensor *g;
  const int *needs;
  const tp_grad_shape *shapes; /* each operand's shape (absent: ndim -1) */
} tp_grad_ctx;
typedef tp_status (*tp_deriv_fn)(const tp_grad_ctx *c, tp_tensor **gin);

enum { TP_SAVE_IN = 1, TP_SAVE_OUT = 2 };
/* The row of op: kind, formula (NULL unless FORMULA), what it saves, reason. */
typedef struct tp_deriv_row {
  tp_grad_kind kind;
  tp_deriv_fn fn;
  int saves;
  const char *reason;
} tp_deriv_row;
const tp_deriv_row *tp_deriv_row_of(tp_op op);

/* Called by tp_op_call after a successful call while grad mode is on:
 * when an operand requires grad, gives y a tape node. */
int tp_autograd_wants(int nin, tp_tensor *const *in);
tp_status tp_autograd_record(tp_op op, int nin, tp_tensor *const *in, const tp_attrs *attrs,
                             tp_tensor *y);
/* Compiled training (src/compiler/aot.c). A sink, while set on this
 * thread, receives every gradient backward would add into a leaf's .grad
 * (the joint trace collects them as the backward graph's results). */
typedef tp_status (*tp_grad_sink)(void *ud, tp_tensor *leaf, tp_tensor *g);
void tp_autograd_set_sink(tp_grad_sink fn, void *ud, tp_grad_sink *prev_fn, void **prev_ud);
/* Gives y (float32, no grad_fn) one node with an edge to each in[i]; its
 * backward calls fn(ud, g, nin, needs, gin), which stores the gradient of
 * each needed in[i] (its exact shape) in gin[i]. free_ud(ud) when the
 * node dies (also on failure here). */
typedef tp_status (*tp_grad_custom_fn)(void *ud, tp_tensor *g, int nin, const int *needs,
                                       tp_tensor **gin);
/* Inside a custom node's fn: 1 when the backward running it retains the
 * graph (retain_graph), 0 when the node's saved state is released right
 * after (fn may then release its saved tensors early). */
int tp_autograd_custom_retains(void);
tp_status tp_autograd_attach(tp_tensor *y, int nin, tp_tensor *const *in, tp_grad_custom_fn fn,
                             void *ud, void (*free_ud)(void *ud));
/* g summed over the dims it was broadcast along, down to shape. */
tp_status tp_grad_sum_to(tp_tensor *g, int ndim, const int64_t *shape, tp_tensor **out);

#endif
