/* handles.c - the handle table of the flat ABI and the helpers every
 * section shares (handles.h). A handle is (slot index + 1) | generation <<
 * 20: nonzero, below 2^31, and checked on every call, so a disposed or
 * stale handle fails with TP_ERR_DISPOSED instead of reaching freed memory.
 * Single-threaded, like the Wasm module that holds it. */
#include "handles.h"
#include "../src/core/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[ABI_KIND_COUNT] = {"free", "tensor", "compiled function",
                                                       "graph", "ONNX model", "backend runner"};
typedef struct slot {
  void *ptr;
  uint32_t gen;
  abi_kind kind;
  int next_free;
} slot;
static slot *slots;
static int nslots, capslots, free_head = -1;

#define IDX_BITS 20
#define IDX_MASK ((1u << IDX_BITS) - 1)
#define GEN_MASK 0x7ffu /* 11 bits: handles stay below 2^31 */

uint32_t abi_handle_new(abi_kind kind, void *ptr) {
  int i;
  if (free_head >= 0) {
    i = free_head;
    free_head = slots[i].next_free;
  } else {
    if (nslots >= (int)IDX_MASK) {
      tp_fail(TP_ERR_OUT_OF_MEMORY, "too many live handles (%d)", nslots);
      return 0;
    }
    if (TP_ARRAY_RESERVE(slots, capslots, nslots + 1)) return 0;
    i = nslots++;
    slots[i].gen = 1;
  }
  slots[i].ptr = ptr;
  slots[i].kind = kind;
  return (uint32_t)(i + 1) | ((slots[i].gen & GEN_MASK) << IDX_BITS);
}

static slot *slot_of(uint32_t h) {
  uint32_t idx = (h & IDX_MASK) - 1, gen = (h >> IDX_BITS) & GEN_MASK;
  if (h == 0 || idx >= (uint32_t)nslots || slots[idx].kind == ABI_FREE ||
      (slots[idx].gen & GEN_MASK) != gen)
    return NULL;
  return &slots[idx];
}

void *abi_handle_get(uint32_t h, abi_kind kind) {
  slot *s = slot_of(h);
  if (!s) {
    tp_fail(TP_ERR_DISPOSED, "%s handle 0x%x was disposed or never existed", kind_names[kind], h);
    return NULL;
  }
  if (s->kind != kind) {
    tp_fail(TP_ERR_INVALID_ARG, "handle 0x%x is a %s, expected a %s", h, kind_names[s->kind],
            kind_names[kind]);
    return NULL;
  }
  return s->ptr;
}

void *abi_handle_peek(uint32_t h, abi_kind kind) {
  slot *s = slot_of(h);
  return s && s->kind == kind ? s->ptr : NULL;
}

void abi_handle_drop(uint32_t h) {
  int i = (int)(h & IDX_MASK) - 1;
  slots[i].kind = ABI_FREE;
  slots[i].ptr = NULL;
  slots[i].gen++;
  slots[i].next_free = free_head;
  free_head = i;
}

uint32_t abi_wrap_tensor(tp_status s, tp_tensor **tp) {
  if (s != TP_OK) return 0;
  tp_tensor *t = *tp;
  uint32_t h = abi_handle_new(ABI_TENSOR, t);
  if (!h) tp_tensor_release(t);
  return h;
}

tp_status abi_gather_inputs(int32_t nin, const uint32_t *in, tp_tensor **ts) {
  if (nin < 0 || nin > TP_MAX_OPERANDS)
    return tp_fail(TP_ERR_INVALID_ARG, "%d inputs is out of range (0..%d)", nin, TP_MAX_OPERANDS);
  for (int i = 0; i < nin; i++)
    if (!(ts[i] = abi_handle_get(in[i], ABI_TENSOR)))
      return tp_fail_context(tp_last_status(), "input %d", i);
  return TP_OK;
}

int32_t abi_return_tensors(tp_status s, int n, tp_tensor **outs, uint32_t *hout, int32_t max_out) {
  if (s) return -1;
  if (n > max_out) { /* never write past the host's max_out slots */
    for (int k = 0; k < n; k++) tp_tensor_release(outs[k]);
    tp_fail(TP_ERR_INVALID_ARG, "%d outputs do not fit in the %d slots given", n, max_out < 0 ? 0 : max_out);
    return -1;
  }
  for (int i = 0; i < n; i++) {
    hout[i] = abi_handle_new(ABI_TENSOR, outs[i]);
    if (!hout[i]) { /* out of handles: release everything made so far */
      for (int k = 0; k < i; k++) abi_handle_drop(hout[k]);
      for (int k = 0; k < n; k++) tp_tensor_release(outs[k]);
      return -1;
    }
  }
  return n;
}

tp_status abi_give_bytes(const void *bytes, size_t n, intptr_t *out) {
  char *copy = malloc(n ? n : 1); /* the host frees it with tpw_free */
  if (!copy) return tp_fail(TP_ERR_OUT_OF_MEMORY, "out of memory copying %zu bytes for the host", n);
  if (n) memcpy(copy, bytes, n);
  out[0] = (intptr_t)copy;
  out[1] = (intptr_t)n;
  return TP_OK;
}

tp_status abi_give_library_bytes(tp_status s, void *bytes, size_t n, intptr_t *out) {
  if (s == TP_OK) s = abi_give_bytes(bytes, n, out);
  tp_free_buffer(bytes);
  return s;
}

char *abi_give_string(char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *out = malloc(n);
  if (out) memcpy(out, s, n);
  else tp_fail(TP_ERR_OUT_OF_MEMORY, "out of memory copying %zu bytes of text for the host", n);
  tp_free_buffer(s);
  return out;
}

char *abi_give_graph_text(const tp_graph *g, int32_t with_data) {
  char *text = NULL;
  if (!g) {
    tp_fail(TP_ERR_INVALID_ARG, "no graph has been captured");
    return NULL;
  }
  if (tp_graph_print(g, with_data, &text)) return NULL;
  return abi_give_string(text);
}
