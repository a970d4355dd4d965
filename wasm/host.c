/* host.c - the host's side of the bridge: the env.* imports the core calls
 * (tp_host_call, tp_host_backend, tp_host_release; abi.h), their native
 * stand-ins for tests, and the dispatch that turns tensors into handles
 * for a host function and its results back into tensors. */
#include "handles.h"

#if defined(__wasm__)
__attribute__((import_module("env"), import_name("tp_host_call"))) int32_t
tp_host_call(int32_t fn_id, int32_t in_ptr, int32_t nin, int32_t out_ptr, int32_t max_out);
__attribute__((import_module("env"), import_name("tp_host_backend"))) int32_t
tp_host_backend(int32_t fn_id, uint32_t graph, int32_t in_ptr, int32_t nin, int32_t opts_json);
__attribute__((import_module("env"), import_name("tp_host_release"))) void
tp_host_release(int32_t fn_id);

static int32_t host_call(int32_t id, const uint32_t *in, int32_t nin, uint32_t *out, int32_t max) {
  return tp_host_call(id, (int32_t)(intptr_t)in, nin, (int32_t)(intptr_t)out, max);
}
int32_t abi_host_backend(int32_t fn_id, uint32_t graph, const uint32_t *in, int32_t nin,
                         const char *opts_json) {
  return tp_host_backend(fn_id, graph, (int32_t)(intptr_t)in, nin, (int32_t)(intptr_t)opts_json);
}
void abi_host_release(int32_t fn_id) { tp_host_release(fn_id); }
#else
/* Native builds (tests) install the host with tpw_set_native_host. */
static tpw_native_host_fn native_host;
void tpw_set_native_host(tpw_native_host_fn fn) { native_host = fn; }
static int32_t host_call(int32_t id, const uint32_t *in, int32_t nin, uint32_t *out, int32_t max) {
  return native_host ? native_host(id, in, nin, out, max) : -1;
}
int32_t abi_host_backend(int32_t fn_id, uint32_t graph, const uint32_t *in, int32_t nin,
                         const char *opts_json) {
  (void)fn_id, (void)graph, (void)in, (void)nin, (void)opts_json;
  return -1; /* no host backends natively */
}
void abi_host_release(int32_t fn_id) { (void)fn_id; }
#endif

tp_status abi_host_dispatch(int64_t fn_id, int nin, tp_tensor *const *in, int max_out,
                            tp_tensor **outs, int *nout) {
  int32_t id = (int32_t)fn_id;
  uint32_t hin[TP_MAX_OPERANDS] = {0}, hout[TP_MAX_OPERANDS] = {0};
  tp_status s = TP_OK;
  int made = 0;
  if (max_out > TP_MAX_OPERANDS) max_out = TP_MAX_OPERANDS;
  if (nin > TP_MAX_OPERANDS)
    return tp_fail(TP_ERR_INVALID_ARG, "host function %d: %d inputs (max %d)", id, nin,
                   TP_MAX_OPERANDS);
  for (; made < nin; made++) {
    tp_tensor_retain(in[made]);
    if (!(hin[made] = abi_wrap_tensor(TP_OK, (tp_tensor **)&in[made]))) {
      s = tp_last_status();
      break;
    }
  }
  int32_t n = s ? -1 : host_call(id, hin, nin, hout, max_out);
  for (int i = 0; i < made; i++) tpw_tensor_free(hin[i]);
  if (s) return s;
  if (n < 0) {
    if (tp_last_status() != TP_ERR_HOST && tp_last_status() != TP_ERR_CAPTURE)
      return tp_fail(TP_ERR_HOST, "host function %d failed", id);
    return tp_last_status();
  }
  if (n > max_out) return tp_fail(TP_ERR_HOST, "host function returned %d outputs (max %d)", n, max_out);
  *nout = 0;
  for (int i = 0; i < n; i++) {
    tp_tensor *t = abi_handle_get(hout[i], ABI_TENSOR);
    if (!t) { /* release what was taken so far and the rest of the handles */
      s = tp_fail_context(TP_ERR_HOST, "host function output %d", i);
      for (int k = 0; k < *nout; k++) tp_tensor_release(outs[k]);
      for (int k = i + 1; k < n; k++)
        if (abi_handle_peek(hout[k], ABI_TENSOR)) tpw_tensor_free(hout[k]);
      *nout = 0;
      return s;
    }
    tp_tensor_retain(t);
    tpw_tensor_free(hout[i]); /* ownership moves to C */
    outs[(*nout)++] = t;
  }
  return TP_OK;
}

static tp_status host_fn(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                         int *nout) {
  return abi_host_dispatch((int64_t)(intptr_t)ud, nin, in, max_out, outs, nout);
}

tp_callable abi_host_callable(int32_t fn_id) {
  tp_callable fn = {host_fn, (void *)(intptr_t)fn_id};
  return fn;
}

/* call_host nodes and opaque regions reach JS through the same import */
__attribute__((constructor)) static void install_dispatch(void) {
  tp_set_host_dispatch(abi_host_dispatch);
}
