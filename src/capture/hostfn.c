/* hostfn.c - host functions by id: what call_host nodes call. The Wasm ABI
 * installs a dispatcher that forwards host ids to JS (env.tp_host_call);
 * C callables registered here get ids from C_BASE up, always served here. */
#define C_BASE ((int64_t)1 << 40)
#include "capture.h"

static tp_host_dispatch_fn dispatch;
static tp_callable *fns;
static int nfns, capfns;

void tp_set_host_dispatch(tp_host_dispatch_fn fn) { dispatch = fn; }

tp_status tp_host_fn_register(const tp_callable *fn, int64_t *id) {
  if (!fn || !fn->fn || !id) return tp_fail(TP_ERR_INVALID_ARG, "host function: NULL argument");
  for (int i = 0; i < nfns; i++)
    if (!fns[i].fn) {
      fns[i] = *fn;
      *id = C_BASE + i;
      return TP_OK;
    }
  if (nfns == capfns) {
    int nc = capfns ? capfns * 2 : 16;
    tp_callable *n = tp_realloc(fns, sizeof(tp_callable) * (size_t)nc);
    if (!n) return TP_ERR_OUT_OF_MEMORY;
    fns = n;
    capfns = nc;
  }
  fns[nfns] = *fn;
  *id = C_BASE + nfns++;
  return TP_OK;
}

void tp_host_fn_unregister(int64_t id) {
  if (id >= C_BASE && id < C_BASE + nfns) fns[id - C_BASE].fn = NULL;
}

tp_status tp_host_invoke(int64_t id, int nin, tp_tensor *const *in, int max_out,
                         tp_tensor **outs, int *nout) {
  *nout = 0;
  if (id < C_BASE && dispatch) return dispatch(id, nin, in, max_out, outs, nout);
  if (id < C_BASE || id >= C_BASE + nfns || !fns[id - C_BASE].fn)
    return tp_fail(TP_ERR_HOST, "host function %lld is not registered in this process", (long long)id);
  return fns[id - C_BASE].fn(fns[id - C_BASE].ud, nin, in, max_out, outs, nout);
}
