/* jit.h - loading generated Wasm modules into the running core (Wasm
 * builds): the host compiles a module that imports the core's memory and
 * installs its exports f0..f(n-1) in the core's function table; C calls
 * them through function pointers. Natively, loading is unsupported (the
 * native build still emits the same bytes for inspection). */
#ifndef TP_JIT_H
#define TP_JIT_H
#include "../lower/lower.h"

/* Host features (env.tp_host_features; js/src/jit.js sets the same bits),
 * 0 natively. */
enum { TP_JIT_FEATURE_SIMD128 = 1 << 0, TP_JIT_FEATURE_RELAXED_SIMD = 1 << 1 };
int tp_jit_features(void);
/* Loads a module. On success *base is the table index of f0, or, when the
 * host compiles asynchronously, *base is -1 and *token identifies the
 * pending load (poll it with tp_jit_poll). use_cache: the host may reuse a
 * module compiled from the same bytes. */
tp_status tp_jit_load(const void *bytes, size_t len, int nexports, int use_cache, int32_t *base,
                      int32_t *token);
/* OR'ed into tp_plan_accelerate's use_cache for tp_wasm_accel (bit 0 is
 * use_cache itself): TP_JIT_PARAMS emits the module with its numbers in a
 * parameter block (emit.h, params: one module for the plans of a template
 * at every size); TP_JIT_SEEN_ONLY attaches it only when this process has
 * loaded the same bytes before (the host's cache has it compiled: no
 * compile on this call), else leaves the plan on the executor. */
#define TP_JIT_PARAMS 0x2
#define TP_JIT_SEEN_ONLY 0x4
/* The core's 64-bit hash of module bytes (FNV-1a; the host's cache key
 * with the length). */
uint64_t tp_jit_hash(const void *bytes, size_t len);
/* OR'ed into nexports: the load must complete now; a host that would
 * compile asynchronously fails it instead (max-autotune's variant modules,
 * which are timed at once and never used after). */
#define TP_JIT_SYNC_ONLY 0x40000000
/* At out_ptr[0] on entry to env.tp_host_load_module: out_ptr[1..2] hold
 * the core's hash of the bytes ("TPH1"; js/src/jit.js hashes the bytes
 * itself when it is missing, i.e. with a core from before the hash). */
#define TP_JIT_HASHED 0x31485054
/* A pending load: 1 and *base when installed, 0 while pending, -1 failed. */
int tp_jit_poll(int32_t token, int32_t *base);
/* Generated Wasm kernels as lower's accelerator (plan_jit.c): attach with
 * tp_plan_accelerate(plan, &tp_wasm_accel, use_cache); off a Wasm host with
 * SIMD128 its prepare finds nothing to do. */
extern const tp_lower_accel tp_wasm_accel;
/* Generated modules' env.tp_jit_kernel (the ABI exports it as
 * tpw_jit_kernel): runs kernel k of the run whose context is run on the
 * executor; returns a status. */
int32_t tp_jit_kernel_callback(int32_t run, int32_t k);
/* The host finished a pending load (base -1: it failed). A load cancelled
 * before (tp_jit_cancel) is unloaded at once. */
void tp_jit_resolve(int32_t token, int32_t base);
/* Frees the n table slots from base of a loaded module
 * (env.tp_host_unload_module): the host clears them and reuses them for
 * later loads. No-op natively. */
void tp_jit_unload(int32_t base, int n);
/* A pending load of n exports nobody waits for any more: unloaded when the
 * host resolves it. */
void tp_jit_cancel(int32_t token, int n);
#endif
