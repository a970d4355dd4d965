/* abi.h - the flat ABI the JS package calls (exported as tpw_*; every
 * tpw_ function declared here is exported, and only those). The code is in
 * the .c files of wasm/, one file per section below; handles.c keeps the handle table.
 *
 * Only i32/f64 cross the boundary. Tensors, compiled functions and graphs
 * are HANDLES: nonzero u32 values = (slot index + 1) | generation << 20,
 * checked on every call, so a disposed or stale handle gives TP_ERR_DISPOSED
 * with a message ("tensor handle 0x... was disposed or never existed")
 * instead of a crash.
 *
 * Return conventions (docs/c-api.md, "The Wasm ABI"), by return type:
 *   handle (uint32_t): nonzero, or 0 on failure
 *   status (int32_t, documented as "status"): 0 (TP_OK) or a tp_status
 *   count (int32_t, outputs written at outs): n >= 0, or -1 on failure
 *   query (int32_t/double of a handle: ndim, dtype, numel, counts): the
 *     value (>= 0), or -1 on failure
 *   char * (tpw_free) / const char * (borrowed): the text, or 0 on failure
 * After any failure tpw_last_status() gives the code and tpw_last_error()
 * the NUL-terminated message. Byte buffers for the host come back through
 * an intptr_t out[2] = { malloc'ed pointer (tpw_free), length }, written
 * only on success.
 *
 * The same files compile natively (tests/c/abi/test_abi.c drives them under ASan).
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
/* Threads (the Wasm threads build, docs/build.md): the loop of worker
 * `slot` (1, 2, ...), entered by each worker instance the loader starts
 * after it set the instance's stack and TLS, with the count of generated
 * modules the worker installed; it returns 1 when that count is behind
 * (install, enter again), 2 when the pool is off (-1 at once on the
 * single-threaded builds, or for a bad slot). tpw_pool_has_threads: 1
 * when workers run. */
int32_t tpw_pool_worker(int32_t slot, int32_t gen);
/* generated modules on the workers (pool.h, tp_pool_jit_published): the
 * host posted one more to every worker; the count; a worker's JS caught a
 * trap out of its loop */
int32_t tpw_pool_jit_published(void);
int32_t tpw_pool_jit_gen(void);
void tpw_pool_worker_trapped(int32_t slot);
int32_t tpw_pool_has_threads(void);
/* chunks of parallel work the workers ran so far (0 without workers) */
double tpw_pool_worker_chunks(void);
int32_t tpw_live_tensors(void);
/* tensor storage bytes live now; the most live at once since the last reset (then reset if asked) */
double tpw_live_storage_bytes(void);
double tpw_live_storage_peak(int32_t reset);

/* tensors. shape_ptr: int64[ndim] (8-byte aligned). data may be 0 (zeros). */
uint32_t tpw_tensor_new(int32_t dtype, int32_t ndim, const int64_t *shape, const void *data);
uint32_t tpw_full(int32_t dtype, int32_t ndim, const int64_t *shape, double value);
uint32_t tpw_scalar(double value, int32_t is_int);
uint32_t tpw_arange(double start, double end, double step, int32_t dtype);
/* kind 0 randn, 1 rand. seed as two u32 halves. */
uint32_t tpw_random(int32_t kind, int32_t ndim, const int64_t *shape, uint32_t seed_lo, uint32_t seed_hi);
int32_t tpw_tensor_free(uint32_t h);     /* status; double free = TP_ERR_DISPOSED */
int32_t tpw_tensor_ndim(uint32_t h);     /* -1 on a bad handle */
int32_t tpw_tensor_dtype(uint32_t h);    /* -1 on a bad handle */
/* Writes ndim int32 at out. status. */
int32_t tpw_tensor_shape(uint32_t h, int64_t *out); /* out: int64[ndim] */
double tpw_tensor_numel(uint32_t h);     /* -1 on a bad handle */
/* Copies numel*itemsize bytes in C order into dst. status (graph break aware). */
int32_t tpw_tensor_read(uint32_t h, void *dst, int32_t bytes);
/* item: writes one double at out. status. */
int32_t tpw_tensor_item(uint32_t h, double *out);
/* The address in this memory of a contiguous tensor's first element, for
 * reads that copy straight out of the core (JS toArray(out)); 0 when the
 * tensor is not contiguous, has no elements, or on a bad handle (the JS side
 * then reads through tpw_tensor_read). Not graph-break aware: callers use it
 * only outside a capture. */
uint32_t tpw_tensor_data_ptr(uint32_t h);
/* A new handle to the same tensor (retain). */
uint32_t tpw_tensor_dup(uint32_t h);

/* ops. in: uint32[nin] handles (0 = absent optional operand). attrs: a
 * tp_attrs the host wrote into memory (0: the defaults): it starts from
 * tpw_attrs_init and sets the fields tpw_attrs_layout describes, as
 * "<sizeof tp_attrs>;<field>:<i|f><bits>:<count>@<offset>;..." (ops.c). */
int32_t tpw_op_count(void);
const char *tpw_op_name(int32_t op);
int32_t tpw_op_arity(int32_t op);
const char *tpw_attrs_layout(void);
void tpw_attrs_init(tp_attrs *attrs);
uint32_t tpw_op(int32_t op, int32_t nin, const uint32_t *in, const tp_attrs *attrs);

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
/* Text of the last captured graph (malloc'ed; free with tpw_free), 0 if none.
 * flags: 1 with data; 2 a training entry's backward graph (0 with an error
 * when the last call did not compile for training). */
char *tpw_compiled_graph_text(uint32_t h, int32_t flags);
int32_t tpw_is_compiling(void);

/* control flow (tp_cond, tp_while_loop): then_id/else_id/cond_id/body_id
 * are host function ids (tp_host_call); in: nin tensor handles (for
 * tpw_while_loop the first ncarried are carried). Writes up to max_out new
 * handles at outs; returns the count or -1. */
int32_t tpw_cond(uint32_t pred, int32_t then_id, int32_t else_id, int32_t nin, const uint32_t *in, uint32_t *outs,
                 int32_t max_out);
int32_t tpw_while_loop(int32_t cond_id, int32_t body_id, int32_t ncarried, int32_t nin, const uint32_t *in,
                       uint32_t *outs, int32_t max_out);

/* graphs as text: run a graph text directly (parity tests). Returns a
 * graph handle; tpw_graph_run like tpw_compiled_call. */
uint32_t tpw_graph_parse(const char *text, int32_t len);
int32_t tpw_graph_run(uint32_t h, int32_t nin, const uint32_t *in, uint32_t *outs, int32_t max_out);
char *tpw_graph_print(uint32_t h, int32_t with_data);
int32_t tpw_graph_free(uint32_t h);

/* autograd (wasm/autograd.c; tensorplay.h's autograd section). Handles
 * out are new (0: none, or an error: tpw_last_status tells). */
int32_t tpw_tensor_set_requires_grad(uint32_t h, int32_t on); /* status */
int32_t tpw_tensor_requires_grad(uint32_t h); /* 0 / 1, -1 on a bad handle */
int32_t tpw_tensor_is_leaf(uint32_t h);       /* 0 / 1, -1 on a bad handle */
uint32_t tpw_tensor_grad(uint32_t h);         /* its .grad, 0 when none */
int32_t tpw_tensor_set_grad(uint32_t h, uint32_t g); /* g 0 clears */
uint32_t tpw_tensor_detach(uint32_t h);
int32_t tpw_tensor_assign(uint32_t dst, uint32_t src);
double tpw_tensor_version(uint32_t h);        /* -1 on a bad handle */
int32_t tpw_backward(uint32_t h, uint32_t grad, int32_t retain_graph); /* grad 0: implicit */
int32_t tpw_set_grad_enabled(int32_t on);     /* the previous state */
/* losses (tp_mse_loss, tp_cross_entropy): a new handle, 0 on failure */
uint32_t tpw_mse_loss(uint32_t pred, uint32_t target, int32_t reduction);
uint32_t tpw_cross_entropy(uint32_t logits, uint32_t target, double ignore_index, double label_smoothing,
                           int32_t reduction);
/* optimizer steps (tp_sgd_step, tp_adam_step); buf 0: none. status */
int32_t tpw_sgd_step(uint32_t p, uint32_t g, uint32_t buf, double lr, double momentum, double weight_decay);
int32_t tpw_adam_step(uint32_t p, uint32_t g, uint32_t m, uint32_t v, double step, double lr, double beta1,
                      double beta2, double eps, double weight_decay, int32_t decoupled);
/* npy bytes <-> tensors */
uint32_t tpw_npy_decode(const void *bytes, int32_t len);
/* Writes the malloc'ed buffer pointer and length at out[0], out[1]. status. */
int32_t tpw_npy_encode(uint32_t h, intptr_t *out);

/* ---- the frontend (records, compile options, config, backends) ----
 * A host value crosses as a tpw_value (24 bytes on wasm32):
 *   kind: 0 None, 1 bool, 2 int, 3 float, 4 str, 5 other
 *   id:   for kind 5 functions, the host's function id (else 0)
 *   num:  bool (0/1), int or float value
 *   str:  kind 4: the text; kind 5: unused
 *   type: kind 5: the host's type name ("function", "object", "Array")
 */
typedef struct tpw_value {
  int32_t kind;
  int32_t id;
  double num;
  const char *str;
  const char *type;
} tpw_value;

/* config: key in either spelling (recompile_limit / recompileLimit). */
int32_t tpw_config_set(const char *key, const tpw_value *v);
/* Writes the value; a str result points at storage valid until the next call. */
int32_t tpw_config_get(const char *key, tpw_value *out);
void tpw_config_reset(void);

/* compile() options as values, in this order (TPW_OPT_*): fullgraph,
 * dynamic, backend, mode, options, name, disable, recompile_limit,
 * isolate_recompiles, strict_native, dynamic_shapes, input_names. The
 * options dict: nopt keys and values (vals[TPW_OPT_OPTIONS] says whether a
 * dict was given: kind 5 with type "dict", or None, or another kind for the
 * type error). tpw_compile_check runs the seed's validations that come
 * before the decorator form; tpw_compile_v makes the wrapper (0 on error).
 * A backend given as a function: kind 5 with id = the host function id. */
#define TPW_OPT_COUNT 12
int32_t tpw_compile_check(const tpw_value *vals, int32_t nopt, const char *const *keys,
                          const tpw_value *optvals);
uint32_t tpw_compile_v(int32_t fn_id, const tpw_value *vals, int32_t nopt,
                       const char *const *keys, const tpw_value *optvals);
/* extra_key: the host's key of non-tensor arguments ("" or 0 for none). */
int32_t tpw_compiled_call_keyed(uint32_t h, int32_t nin, const uint32_t *in,
                                const char *extra_key, uint32_t *outs, int32_t max_out);
char *tpw_compiled_reasons(uint32_t h);  /* tpw_free; lines */
char *tpw_compiled_explain(uint32_t h);  /* tpw_free; JSON */
/* The generated Wasm module of the last specialization: out[0] a tpw_malloc'ed
 * copy (tpw_free), out[1] its length; both 0 when there is none. */
int32_t tpw_compiled_last_module(uint32_t h, intptr_t *out);
void tpw_reset(void);
/* The host reports a shape read of a tensor during capture (where: the
 * user's source location, or 0). */
void tpw_note_shape_read(uint32_t h, const char *where);

/* backends. A backend registered from the host is a host function id; the
 * core calls it through the import
 *   int32 tp_host_backend(int32 fn_id, uint32 graph_handle, int32 in_ptr,
 *                         int32 nin, int32 opts_json_ptr)
 * which returns the id of the host function to run (then called with
 * tp_host_call) or -1 after tpw_set_host_error. The graph handle is the
 * host's to free (tpw_graph_free). When the core drops a runner it calls
 *   void tp_host_release(int32 fn_id)
 * tags_csv / deps_csv: comma separated, or 0. has_caps: capabilities given. */
int32_t tpw_register_backend(int32_t fn_id, const char *name, const char *tags_csv,
                             int32_t has_caps, const char *deps_csv, int32_t contract_version,
                             const char *min_core, const char *max_core);
void tpw_unregister_backend(const char *name);
/* Newline separated sorted names (tpw_free); exclude_csv 0 = the default
 * ("debug,experimental"), "" = exclude nothing. */
char *tpw_list_backends(const char *exclude_csv, int32_t include_unavailable);
int32_t tpw_lookup_backend(const char *name);           /* status */
/* A backend's compile step called directly (lookup_backend(name) as a
 * callable, wasm/runners.c): graph and example inputs are borrowed; mode,
 * fn_name 0 = unset; dynamic -1 = None; keys 0 = no options dict. Returns
 * a runner handle (0 on error): tpw_runner_call like tpw_compiled_call,
 * tpw_runner_free when done. */
uint32_t tpw_backend_compile(const char *name, uint32_t graph, int32_t nin, const uint32_t *in,
                             const char *mode, int32_t dynamic, const char *fn_name,
                             int32_t strict_native, int32_t nopt, const char *const *keys,
                             const int32_t *vals);
int32_t tpw_runner_call(uint32_t h, int32_t nin, const uint32_t *in, uint32_t *outs, int32_t max_out);
int32_t tpw_runner_free(uint32_t h);
int32_t tpw_set_default_backend(const char *name);      /* 0 restores stax */
const char *tpw_get_default_backend(void);
char *tpw_backend_capabilities(const char *name);        /* JSON, tpw_free */
int32_t tpw_declares_capabilities(const char *name);
char *tpw_list_mode_options(const char *mode);           /* JSON, tpw_free; 0 on error */
int32_t tpw_core_backend_contract_version(void);

/* records. key: the host's id of the callable. params (int32[10]):
 * { replacement_key, can_constant_fold_through, skip_signature_check,
 *   recursive, has_options, fw_compiler_key, bw_compiler_key,
 *   max_reuse_entries, reuse_hash_fn_key, 0 }.
 * Returns the record id (> 0) or 0 on error (the seed's messages). */
int32_t tpw_rec_register(int32_t key, const char *repr, int32_t mode, const int32_t *params,
                         const char *reason);
int32_t tpw_rec_lookup(int32_t key);             /* record id, 0 if none */
int32_t tpw_rec_mode(int32_t rec);               /* -1 bad id */
int32_t tpw_rec_set_adapter(int32_t rec, int32_t key);
int32_t tpw_rec_add_alias(int32_t rec, int32_t key);
/* What an adapter does when called with these tensor arguments:
 *   TPW_REC_CALL_ORIGINAL (-2): no live trace sees them: call the original
 *   TPW_REC_CALL_REPLACEMENT (-3): substitute mode inside a capture: trace
 *       the replacement (call it)
 *   TPW_REC_NEED_CONSTANT (-4): constant mode, value not ready: evaluate
 *       the original on the samples, then tpw_rec_set_constant
 *   TPW_REC_CONSTANT_READY (-5): use the stored constant
 *   n >= 0: an opaque region was recorded; n output handles at outs (the
 *       core ran call_id on the samples, with capture suspended for
 *       disabled+recursive)
 *   -1: error (GraphCaptureError etc.)
 * call_id: the host function that runs this call site (arguments bound). */
#define TPW_REC_CALL_ORIGINAL (-2)
#define TPW_REC_CALL_REPLACEMENT (-3)
#define TPW_REC_NEED_CONSTANT (-4)
#define TPW_REC_CONSTANT_READY (-5)
int32_t tpw_rec_invoke(int32_t rec, int32_t call_id, int32_t nin, const uint32_t *in,
                       uint32_t *outs, int32_t max_out);
/* nested_compile_region: the key of the next tpw_rec_invoke: "hash:<int>"
 * (the integer reuseHashFn returned) or the host's key of the non-tensor
 * arguments (values / identities); the core adds shapes, dtypes and a
 * digest of the tensors' bytes. */
void tpw_rec_set_key(const char *key);
int32_t tpw_rec_set_constant(int32_t rec, int32_t n, const uint32_t *vals);
/* The stored constant's tensors as new handles; returns the count or -1. */
int32_t tpw_rec_get_constant(int32_t rec, uint32_t *outs, int32_t max_out);
/* disable_capture(): 1 enter (returns the previous state), 0 leave. */
int32_t tpw_set_capture_disabled(int32_t disabled);
int32_t tpw_is_exporting(void);

/* generated modules: the host finished compiling a module it reported as
 * pending (env.tp_host_load_module returned 1); base -1 when it failed. */
void tpw_jit_ready(int32_t token, int32_t base);
/* Imported by generated modules as env.tp_jit_kernel: runs a kernel that
 * the module's run entry leaves to the core (src/lower/lower.h). */
int32_t tpw_jit_kernel(int32_t ctx, int32_t k);
/* The module stax would generate for a graph (lowered with the default
 * options): writes the malloc'ed bytes' pointer and length at out[0],
 * out[1] (free with tpw_free). TP_ERR_UNSUPPORTED: nothing to generate. */
int32_t tpw_graph_emit_wasm(uint32_t graph, intptr_t *out);

/* ---- ONNX (src/onnx, docs/onnx.md) ---- */
/* tp_onnx_save of a graph handle / of the last graph a compiled function
 * captured: writes the malloc'ed ModelProto bytes' pointer and length at
 * out[0], out[1] (free with tpw_free). status (TP_ERR_UNSUPPORTED naming
 * the node for opaque regions; TP_ERR_INVALID_ARG when nothing was
 * captured, e.g. after a graph break). */
int32_t tpw_graph_onnx_save(uint32_t h, intptr_t *out);
int32_t tpw_compiled_onnx_save(uint32_t h, intptr_t *out);
/* A serialized TensorProto -> a tensor handle; 0 on failure. */
uint32_t tpw_onnx_tensor_decode(const void *bytes, int32_t len);
/* ONNX models as applications run them (tp_onnx_model, docs/onnx.md
 * "Models"): a model handle (K_MODEL), its specializations run on backend
 * (a registered name; 0 or "" runs them eagerly); 0 on failure. */
uint32_t tpw_onnx_model_load(const void *bytes, int32_t len, const char *backend);
int32_t tpw_onnx_model_free(uint32_t h);
/* count: outputs written at outs, or -1 */
int32_t tpw_onnx_model_run(uint32_t h, int32_t nin, const uint32_t *in, uint32_t *outs, int32_t max_out);
/* JSON of the inputs (name, dtype, dims with null for dynamic, dimNames)
 * and output names; the explain text (both for tpw_free). */
char *tpw_onnx_model_info(uint32_t h);
char *tpw_onnx_model_explain(uint32_t h);
/* handle: a graph with a copy of the latest specialization's graph */
uint32_t tpw_onnx_model_graph(uint32_t h);
int32_t tpw_onnx_model_set_limit(uint32_t h, int32_t limit);
/* A backend option (tp_onnx_model_set_option): kind 0 bool, 1 int, 2
 * float; then tpw_onnx_model_use_backend(h, name) picks the backend and
 * imports (and compiles) a static model's specialization now, as
 * tpw_onnx_model_load does with a backend. TP_OK or a status. */
int32_t tpw_onnx_model_set_option(uint32_t h, const char *key, int32_t kind, double value);
int32_t tpw_onnx_model_use_backend(uint32_t h, const char *name);
int32_t tpw_onnx_model_num_specializations(uint32_t h);
/* Fine-tuning (tp_onnx_model_set_trainable): names holds n NUL-terminated
 * names back to back (n 0: the default list). num_params: -1 for a bad
 * handle; param_name: a copy for tpw_free (NULL for a bad index); param: a
 * new handle to parameter i (shared with the model); save: the model's
 * bytes with the trained initializers (out[0] for tpw_free, out[1] length). */
int32_t tpw_onnx_model_set_trainable(uint32_t h, int32_t n, const char *names);
int32_t tpw_onnx_model_num_params(uint32_t h);
char *tpw_onnx_model_param_name(uint32_t h, int32_t i);
uint32_t tpw_onnx_model_param(uint32_t h, int32_t i);
int32_t tpw_onnx_model_save(uint32_t h, intptr_t *out);

#endif
