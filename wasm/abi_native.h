/* abi_native.h - native-only additions to the flat ABI (tests): the host
 * function that the Wasm build imports as env.tp_host_call. */
#ifndef TP_WASM_ABI_NATIVE_H
#define TP_WASM_ABI_NATIVE_H
#include "abi.h"
#if !defined(__wasm__)
void tpw_set_native_host(int32_t (*fn)(int32_t fn_id, const uint32_t *in, int32_t nin,
                                       uint32_t *out, int32_t max_out));
#endif
#endif
