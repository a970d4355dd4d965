/* records.c - the frontend's records (allow_in_graph, substitute,
 * constant results, nested compile regions, disable) through the ABI. */
#include "handles.h"
#include "../src/compiler/compiler.h"
#include "../src/capture/records.h"

#include <stdio.h>

int32_t tpw_rec_register(int32_t key, const char *repr, int32_t mode, const int32_t *params,
                         const char *reason) {
  tp_rec_params p;
  tp_rec_params_init(&p);
  if (params) {
    p.replacement = (uint64_t)params[0];
    p.can_constant_fold_through = params[1];
    p.skip_signature_check = params[2];
    p.recursive = params[3];
    p.has_options = params[4];
    p.fw_compiler = (uint64_t)params[5];
    p.bw_compiler = (uint64_t)params[6];
    p.max_reuse_entries = params[7];
    p.reuse_hash_fn = (uint64_t)params[8];
    /* the JS compilers are backends the host runs (backends.c) */
    if (params[5]) p.fw_fn = abi_host_backend_compile, p.fw_ud = (void *)(intptr_t)params[5];
    if (params[6]) p.bw_fn = abi_host_backend_compile, p.bw_ud = (void *)(intptr_t)params[6];
  }
  p.reason = reason;
  tp_record *r = NULL;
  if (tp_rec_register((uint64_t)key, repr, (tp_rec_mode)mode, &p, &r)) return 0;
  return (int32_t)r->id;
}
int32_t tpw_rec_lookup(int32_t key) {
  tp_record *r = tp_rec_lookup((uint64_t)key);
  return r ? (int32_t)r->id : 0;
}
int32_t tpw_rec_mode(int32_t rec) {
  tp_record *r = tp_rec_by_id((uint32_t)rec);
  return r ? (int32_t)r->mode : -1;
}
static tp_record *rec_get(int32_t rec) {
  tp_record *r = tp_rec_by_id((uint32_t)rec);
  if (!r) tp_fail(TP_ERR_INVALID_ARG, "record %d does not exist", rec);
  return r;
}
int32_t tpw_rec_set_adapter(int32_t rec, int32_t key) {
  tp_record *r = rec_get(rec);
  return r ? tp_rec_set_adapter(r, (uint64_t)key) : tp_last_status();
}
int32_t tpw_rec_add_alias(int32_t rec, int32_t key) {
  tp_record *r = rec_get(rec);
  return r ? tp_rec_add_alias(r, (uint64_t)key) : tp_last_status();
}

static char rec_key[200];
void tpw_rec_set_key(const char *key) { snprintf(rec_key, sizeof rec_key, "%s", key ? key : ""); }

int32_t tpw_rec_invoke(int32_t rec, int32_t call_id, int32_t nin, const uint32_t *in,
                       uint32_t *outs, int32_t max_out) {
  tp_record *r = rec_get(rec);
  tp_tensor *ts[TP_MAX_OPERANDS], *os[TP_MAX_OPERANDS];
  int n = 0;
  if (!r || abi_gather_inputs(nin, in, ts)) return -1;
  if (!tp_capture_sees(nin, ts)) return TPW_REC_CALL_ORIGINAL;
  tp_status s;
  switch (r->mode) {
    case TP_REC_SUBSTITUTE: return TPW_REC_CALL_REPLACEMENT;
    case TP_REC_CONSTANT: return r->constant_ready ? TPW_REC_CONSTANT_READY : TPW_REC_NEED_CONSTANT;
    case TP_REC_NESTED:
      s = tp_capture_nested(r->id, r->p.max_reuse_entries, call_id, rec_key, nin, ts,
                            max_out < TP_MAX_OPERANDS ? max_out : TP_MAX_OPERANDS, os, &n);
      break;
    case TP_REC_DISABLED:
      s = tp_capture_opaque(call_id, nin, ts, "disabled", r->p.recursive, r->p.recursive, r->reason,
                            max_out < TP_MAX_OPERANDS ? max_out : TP_MAX_OPERANDS, os, &n);
      break;
    default:
      s = tp_capture_opaque(call_id, nin, ts, tp_rec_mode_name(r->mode), 0, 1, NULL,
                            max_out < TP_MAX_OPERANDS ? max_out : TP_MAX_OPERANDS, os, &n);
      break;
  }
  rec_key[0] = 0; /* a key serves one call */
  return abi_return_tensors(s, n, os, outs, max_out);
}

int32_t tpw_rec_set_constant(int32_t rec, int32_t n, const uint32_t *vals) {
  tp_record *r = rec_get(rec);
  tp_tensor *ts[TP_MAX_OPERANDS];
  if (!r) return tp_last_status();
  TP_TRY(abi_gather_inputs(n, vals, ts));
  return tp_rec_set_constant(r, n, ts, NULL);
}

int32_t tpw_rec_get_constant(int32_t rec, uint32_t *outs, int32_t max_out) {
  tp_record *r = rec_get(rec);
  tp_tensor *os[TP_MAX_OPERANDS];
  if (!r) return -1;
  if (!r->constant_ready) {
    tp_fail(TP_ERR_RUNTIME, "the constant of %s is not ready", r->repr);
    return -1;
  }
  for (int i = 0; i < r->nconst; i++) {
    os[i] = r->constant[i];
    tp_tensor_retain(os[i]);
  }
  return abi_return_tensors(TP_OK, r->nconst, os, outs, max_out);
}

int32_t tpw_set_capture_disabled(int32_t disabled) {
  int prev = 0;
  tp_capture_set_disabled(disabled != 0, &prev);
  return prev;
}
int32_t tpw_is_exporting(void) { return 0; }
