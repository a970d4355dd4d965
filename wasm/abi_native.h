/* abi_native.h - native-only additions to the flat ABI (tests): stand-ins
 * for the host functions that the Wasm build imports as env.tp_host_call,
 * env.tp_host_backend and env.tp_host_release (abi.h). */
#ifndef TP_WASM_ABI_NATIVE_H
#define TP_WASM_ABI_NATIVE_H
#include "abi.h"
#if !defined(__wasm__)
typedef int32_t (*tpw_native_host_fn)(int32_t fn_id, const uint32_t *in, int32_t nin,
                                      uint32_t *out, int32_t max_out);
typedef int32_t (*tpw_native_backend_fn)(int32_t fn_id, uint32_t graph, const uint32_t *in,
                                         int32_t nin, const char *opts_json);
void tpw_set_native_host(tpw_native_host_fn fn);
void tpw_set_native_backend_host(tpw_native_backend_fn backend, void (*release)(int32_t fn_id));
#endif
#endif
