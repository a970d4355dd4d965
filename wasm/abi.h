/* abi.h - the flat ABI the JS package calls (exported as tpw_*).
 *
 * Only i32/f64 cross the boundary. Tensors and compiled functions are
 * HANDLES: nonzero u32 values = (slot index + 1) | generation << 20, checked on
 * every call, so a disposed or stale handle gives TP_ERR_DISPOSED with a
 * message ("tensor handle 0x... was disposed or never existed") instead of a
 * crash. Functions returning a handle return 0 on failure; functions
 * returning a status return 0 (TP_OK) or a tp_status code. After any
 * failure, tpw_last_error() points at the NUL-terminated message and
 * tpw_last_status() gives the code.
 *
 * The same file compiles natively (tests/c/test_abi.c drives it under ASan).
 *
 * Imports the core needs from the host (module "env"):
 *   int32 tp_host_call(int32 fn_id, int32 in_ptr, int32 nin,
 *                      int32 out_ptr, int32 max_out)
 *     Calls JS function fn_id with nin tensor handles read from in_ptr
 *     (u32 each, borrowed: the host must not dispose them). Writes up to
 *     max_out new tensor handles (ownership passes to C) at out_ptr and
 *     returns their count, or -1 after calling tpw_set_host_error() with
 *     the message of the JS exception.
 */
#ifndef TP_WASM_ABI_H
#define TP_WASM_ABI_H
#include "../src/tensorplay.h"

/* memory */
void *tpw_malloc(int32_t bytes);
void tpw_free(void *p);
/* errors */
const char *tpw_last_error(void);
int32_t tpw_last_status(void);
void tpw_set_host_error(const char *msg);
/* info */
const char *tpw_version(void);
const char *tpw_isa(void);
int32_t tpw_op_count(void);
const char *tpw_op_name(int32_t op);
int32_t tpw_op_arity(int32_t op);
int32_t tpw_live_tensors(void);

/* tensors. shape_ptr: int32[ndim]. data may be 0 (zeros). */
uint32_t tpw_tensor_new(int32_t dtype, int32_t ndim, const int32_t *shape, const void *data);
uint32_t tpw_full(int32_t dtype, int32_t ndim, const int32_t *shape, double value);
uint32_t tpw_scalar(double value, int32_t is_int);
uint32_t tpw_arange(double start, double end, double step, int32_t dtype);
/* kind 0 randn, 1 rand. seed as two u32 halves. */
uint32_t tpw_random(int32_t kind, int32_t ndim, const int32_t *shape, uint32_t seed_lo, uint32_t seed_hi);
int32_t tpw_tensor_free(uint32_t h);     /* status; double free = TP_ERR_DISPOSED */
int32_t tpw_tensor_ndim(uint32_t h);     /* -1 on a bad handle */
int32_t tpw_tensor_dtype(uint32_t h);    /* -1 on a bad handle */
/* Writes ndim int32 at out. status. */
int32_t tpw_tensor_shape(uint32_t h, int32_t *out);
double tpw_tensor_numel(uint32_t h);     /* -1 on a bad handle */
/* Copies numel*itemsize bytes in C order into dst. status (graph break aware). */
int32_t tpw_tensor_read(uint32_t h, void *dst, int32_t bytes);
/* item: writes one double at out. status. */
int32_t tpw_tensor_item(uint32_t h, double *out);
/* A new handle to the same tensor (retain). */
uint32_t tpw_tensor_dup(uint32_t h);

/* ops. in: uint32[nin] handles (0 = absent optional operand).
 * attrs: double[20] = { nints, ints[8], dim, dim1, start, end, step, eps,
 *                       keepdim, approximate, dtype, 0 } */
#define TPW_ATTR_LEN 20
uint32_t tpw_op(int32_t op, int32_t nin, const uint32_t *in, const double *attrs);

/* compile. fn_id: the host's id for the JS function (see tp_host_call).
 * opts: int32[4] = { fullgraph, dynamic (-1/0/1), disable, 0 };
 * backend/name: NUL-terminated strings or 0. */
uint32_t tpw_compile(int32_t fn_id, const int32_t *opts, const char *backend, const char *name);
/* Runs the compiled function. Writes up to max_out new handles at outs;
 * returns the count or -1. */
int32_t tpw_compiled_call(uint32_t h, int32_t nin, const uint32_t *in, uint32_t *outs, int32_t max_out);
int32_t tpw_compiled_free(uint32_t h);
/* Placeholder names for later captures ("x,w"): the JS parameter names. */
int32_t tpw_compiled_set_input_names(uint32_t h, const char *names);
int32_t tpw_compiled_num_captures(uint32_t h);
int32_t tpw_compiled_num_entries(uint32_t h);
/* Text of the last captured graph (malloc'ed; free with tpw_free), 0 if none. */
char *tpw_compiled_graph_text(uint32_t h, int32_t with_data);
int32_t tpw_is_compiling(void);

/* graphs as text: run a graph text directly (parity tests). Returns a
 * graph handle; tpw_graph_run like tpw_compiled_call. */
uint32_t tpw_graph_parse(const char *text, int32_t len);
int32_t tpw_graph_run(uint32_t h, int32_t nin, const uint32_t *in, uint32_t *outs, int32_t max_out);
char *tpw_graph_print(uint32_t h, int32_t with_data);
int32_t tpw_graph_free(uint32_t h);

/* npy bytes <-> tensors */
uint32_t tpw_npy_decode(const void *bytes, int32_t len);
/* Writes the malloc'ed buffer pointer and length at out[0], out[1]. status. */
int32_t tpw_npy_encode(uint32_t h, intptr_t *out);

#endif
