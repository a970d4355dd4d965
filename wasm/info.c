/* info.c - the ABI's memory, errors and facts about the core. */
#include "handles.h"
#include "../src/runtime/pool.h"

#include <stdlib.h>

void *tpw_malloc(int32_t bytes) {
  if (bytes < 0) {
    tp_fail(TP_ERR_INVALID_ARG, "malloc: negative size %d", bytes);
    return NULL;
  }
  void *p = malloc(bytes ? (size_t)bytes : 1);
  if (!p) tp_fail(TP_ERR_OUT_OF_MEMORY, "out of memory: failed to allocate %d bytes", bytes);
  return p;
}
void tpw_free(void *p) { free(p); }
const char *tpw_last_error(void) { return tp_last_error(); }
int32_t tpw_last_status(void) { return (int32_t)tp_last_status(); }
void tpw_set_host_error(const char *msg) { tp_fail(TP_ERR_HOST, "%s", msg ? msg : "host error"); }
const char *tpw_version(void) { return TP_VERSION_STRING; }
const char *tpw_isa(void) { return tp_isa_name(); }
int32_t tpw_pool_worker(int32_t slot, int32_t gen) { return tp_pool_worker_loop(slot, (uint32_t)gen); }
int32_t tpw_pool_jit_published(void) { return (int32_t)tp_pool_jit_published(); }
int32_t tpw_pool_jit_gen(void) { return (int32_t)tp_pool_jit_gen(); }
void tpw_pool_worker_trapped(int32_t slot) { tp_pool_worker_trapped(slot); }
int32_t tpw_pool_has_threads(void) { return tp_pool_has_threads(); }
double tpw_pool_worker_chunks(void) { return (double)tp_pool_worker_chunks(); }
int32_t tpw_live_tensors(void) { return (int32_t)tp_live_tensors(); }
double tpw_live_storage_bytes(void) { return (double)tp_live_storage_bytes(); }
double tpw_live_storage_peak(int32_t reset) { return (double)tp_live_storage_peak(reset); }
