/* hostfn.c - host functions by id: what call_host nodes call (the graph
 * runner, the executor and capture's opaque regions all go through
 * tp_host_invoke). The Wasm ABI installs a dispatcher that forwards host
 * ids to JS (env.tp_host_call); C callables registered here get ids from
 * TP_HOST_FN_C_BASE up, always served here.
 *
 * Threads: the table is guarded by a spinlock (lock.h); a callable is
 * copied out under the lock and called outside it, so a host function may
 * register or invoke others. The dispatcher pointer is set once at start-up
 * and read with atomic loads. */
#include "internal.h"
#include "lock.h"

static tp_host_dispatch_fn dispatch;
static tp_callable *fns;
static int nfns, capfns;
static tp_spinlock fns_lock = TP_SPINLOCK_INIT;

void tp_set_host_dispatch(tp_host_dispatch_fn fn) { __atomic_store_n(&dispatch, fn, __ATOMIC_RELEASE); }

tp_status tp_host_fn_register(const tp_callable *fn, int64_t *id) {
  if (!fn || !fn->fn || !id) return tp_fail(TP_ERR_INVALID_ARG, "host function: NULL argument");
  tp_status s = TP_OK;
  tp_spin_lock(&fns_lock);
  int slot = -1;
  for (int i = 0; i < nfns && slot < 0; i++)
    if (!fns[i].fn) slot = i;
  if (slot < 0) {
    s = TP_ARRAY_RESERVE(fns, capfns, nfns + 1);
    if (!s) slot = nfns++;
  }
  if (!s) {
    fns[slot] = *fn;
    *id = TP_HOST_FN_C_BASE + slot;
  }
  tp_spin_unlock(&fns_lock);
  return s;
}

void tp_host_fn_unregister(int64_t id) {
  tp_spin_lock(&fns_lock);
  if (id >= TP_HOST_FN_C_BASE && id < TP_HOST_FN_C_BASE + nfns) fns[id - TP_HOST_FN_C_BASE].fn = NULL;
  tp_spin_unlock(&fns_lock);
}

tp_status tp_host_invoke(int64_t id, int nin, tp_tensor *const *in, int max_out,
                         tp_tensor **outs, int *nout) {
  *nout = 0;
  tp_host_dispatch_fn d = __atomic_load_n(&dispatch, __ATOMIC_ACQUIRE);
  if (id < TP_HOST_FN_C_BASE && d) return d(id, nin, in, max_out, outs, nout);
  tp_callable c = {0};
  tp_spin_lock(&fns_lock);
  if (id >= TP_HOST_FN_C_BASE && id < TP_HOST_FN_C_BASE + nfns) c = fns[id - TP_HOST_FN_C_BASE];
  tp_spin_unlock(&fns_lock);
  if (!c.fn)
    return tp_fail(TP_ERR_HOST, "host function %lld is not registered in this process", (long long)id);
  return c.fn(c.ud, nin, in, max_out, outs, nout);
}
