/* abi_native.h - native-only additions to the flat ABI (tests): a stand-in
 * for the host function the Wasm build imports as env.tp_host_call (abi.h).
 * Backends written in the host (env.tp_host_backend / tp_host_release) have
 * no native stand-in: natively abi_host_backend answers -1 (no host). */
#ifndef TP_WASM_ABI_NATIVE_H
#define TP_WASM_ABI_NATIVE_H
#include "abi.h"
#if !defined(__wasm__)
typedef int32_t (*tpw_native_host_fn)(int32_t fn_id, const uint32_t *in, int32_t nin,
                                      uint32_t *out, int32_t max_out);
void tpw_set_native_host(tpw_native_host_fn fn);
#endif
#endif
