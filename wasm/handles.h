/* handles.h - what the files of the flat ABI (the .c files in wasm/) share: the handle
 * table, the conversions between handles and tensors, and the buffers
 * handed to the host. The conventions are in docs/c-api.md (the ABI). */
#ifndef TP_WASM_HANDLES_H
#define TP_WASM_HANDLES_H
#include "abi_native.h"
#include "../src/core/internal.h"
#include "../src/graph/graph.h"

/* What a handle refers to. */
typedef enum abi_kind {
  ABI_FREE, ABI_TENSOR, ABI_COMPILED, ABI_GRAPH, ABI_MODEL, ABI_RUNNER, ABI_KIND_COUNT
} abi_kind;

/* A new handle to ptr (owned by the table until abi_handle_drop); 0 with
 * TP_ERR_OUT_OF_MEMORY when the table is full. */
uint32_t abi_handle_new(abi_kind kind, void *ptr);
/* The object of h, or NULL with TP_ERR_DISPOSED (stale, freed or never
 * made) or TP_ERR_INVALID_ARG (a handle of another kind). */
void *abi_handle_get(uint32_t h, abi_kind kind);
/* The object of h if it is a live handle of this kind, else NULL; never
 * sets an error (for calls that must not fail, e.g. tpw_note_shape_read). */
void *abi_handle_peek(uint32_t h, abi_kind kind);
/* Frees the slot of a handle abi_handle_get accepted. */
void abi_handle_drop(uint32_t h);

/* A tensor handle for the tensor the call that returned s made: tp points
 * at that call's out-parameter, read here after the call, whatever order the
 * arguments were evaluated in. 0 when s failed or the table is full (the
 * tensor is then released). */
uint32_t abi_wrap_tensor(tp_status s, tp_tensor **tp);
/* The tensors of nin handles (borrowed). INVALID_ARG when nin is outside
 * 0..TP_MAX_OPERANDS; the first bad handle's error names its position. */
tp_status abi_gather_inputs(int32_t nin, const uint32_t *in, tp_tensor **ts);
/* Handles for the n tensors a call made (ownership moves to them) at hout;
 * returns n, or -1 when s failed or handles ran out (all n released). */
int32_t abi_return_tensors(tp_status s, int n, tp_tensor **outs, uint32_t *hout, int32_t max_out);

/* A malloc'ed copy of n bytes for the host: out[0] the copy (tpw_free),
 * out[1] its length. */
tp_status abi_give_bytes(const void *bytes, size_t n, intptr_t *out);
/* The bytes a library call s made (tp_free_buffer'ed here either way) as
 * abi_give_bytes gives them; s when the call failed. */
tp_status abi_give_library_bytes(tp_status s, void *bytes, size_t n, intptr_t *out);
/* A library string (tp_free_buffer) as a malloc'ed copy for tpw_free; s is
 * freed either way. NULL for NULL. */
char *abi_give_string(char *s);
/* The text of g (tp_graph_print) for tpw_free; NULL with INVALID_ARG when
 * g is NULL (nothing captured). */
char *abi_give_graph_text(const tp_graph *g, int32_t with_data);

/* Runs host function fn_id through the env.tp_host_call import (host.c). */
tp_status abi_host_dispatch(int64_t fn_id, int nin, tp_tensor *const *in, int max_out,
                            tp_tensor **outs, int *nout);
/* env.tp_host_backend / env.tp_host_release (abi.h, backends): -1 when
 * no host is installed (native builds). */
int32_t abi_host_backend(int32_t fn_id, uint32_t graph, const uint32_t *in, int32_t nin,
                         const char *opts_json);
void abi_host_release(int32_t fn_id);
/* The tp_callable of a host function. */
tp_callable abi_host_callable(int32_t fn_id);
/* A backend whose compile step is the host function ud (backends.c). */
tp_status abi_host_backend_compile(void *ud, const tp_graph *g, int nin, tp_tensor *const *examples,
                                   const tp_backend_opts *o, tp_backend_run *out);

#endif
