/* graphs.c - graphs through the ABI: graph text in and out, running a
 * graph, the Wasm module stax would generate for it, and the two entries
 * generated modules call back (tpw_jit_ready, tpw_jit_kernel). */
#include "handles.h"
#include "../src/codegen/jit.h"
#include "../src/codegen/wasm/emit.h"

#include <string.h>

/* ---- graphs ---- */
uint32_t tpw_graph_parse(const char *text, int32_t len) {
  tp_graph *g = NULL;
  if (len < 0 || (len && !text)) {
    tp_fail(TP_ERR_INVALID_ARG, "graph parse: bad text buffer");
    return 0;
  }
  if (tp_graph_parse(text, (size_t)len, &g)) return 0;
  uint32_t h = abi_handle_new(ABI_GRAPH, g);
  if (!h) tp_graph_free(g);
  return h;
}
int32_t tpw_graph_run(uint32_t h, int32_t nin, const uint32_t *in, uint32_t *outs, int32_t max_out) {
  tp_graph *g = abi_handle_get(h, ABI_GRAPH);
  tp_tensor *ts[TP_MAX_OPERANDS], *os[TP_MAX_OPERANDS];
  int n = 0;
  if (!g || abi_gather_inputs(nin, in, ts)) return -1;
  tp_status s = tp_graph_run(g, nin, ts, max_out < TP_MAX_OPERANDS ? max_out : TP_MAX_OPERANDS, os, &n);
  return abi_return_tensors(s, n, os, outs, max_out);
}
char *tpw_graph_print(uint32_t h, int32_t with_data) {
  tp_graph *g = abi_handle_get(h, ABI_GRAPH);
  return g ? abi_give_graph_text(g, with_data) : NULL;
}
int32_t tpw_graph_free(uint32_t h) {
  tp_graph *g = abi_handle_get(h, ABI_GRAPH);
  if (!g) return tp_last_status();
  abi_handle_drop(h);
  tp_graph_free(g);
  return TP_OK;
}

void tpw_jit_ready(int32_t token, int32_t base) { tp_jit_resolve(token, base); }
int32_t tpw_jit_kernel(int32_t ctx, int32_t k) { return tp_jit_kernel_callback(ctx, k); }
int32_t tpw_graph_emit_wasm(uint32_t h, intptr_t *out) {
  tp_graph *g = abi_handle_get(h, ABI_GRAPH);
  if (!g) return tp_last_status();
  tp_graph *lg = NULL;
  tp_kir_program *p = NULL;
  tp_status s = tp_run_passes(g, 0, NULL, NULL, &lg);
  if (!s) s = tp_schedule(lg, NULL, &p); /* takes lg */
  if (!s) s = tp_memplan(p);
  tp_emitted em;
  memset(&em, 0, sizeof em);
  if (!s) s = tp_emit_wasm(p, NULL, &em);
  tp_kir_program_free(p);
  if (s) return s;
  s = abi_give_bytes(em.bytes, em.len, out);
  tp_emitted_clear(&em);
  return s;
}
