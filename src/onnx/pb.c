/* pb.c - protobuf wire format: a bounds-checked reader and a small writer. */
#include "pb.h"
#include <stdint.h>
#include <stdio.h>

void tp_pb_init(tp_pb *r, const void *bytes, size_t len, const char *msg) {
  r->base = bytes;
  r->p = bytes;
  r->end = r->p + (bytes ? len : 0);
  r->msg = msg;
  r->depth = 0;
}

tp_status tp_pb_error(const tp_pb *r, size_t at, const char *fmt, ...) {
  char buf[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return tp_fail(TP_ERR_PARSE, "onnx: %s in %s at byte %zu", buf, r->msg, at);
}

static size_t off(const tp_pb *r, const uint8_t *p) { return (size_t)(p - r->base); }

/* Reads a varint at *pp (< end); 0 on success. */
static int varint(const uint8_t **pp, const uint8_t *end, uint64_t *out) {
  const uint8_t *p = *pp;
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (p >= end) return -1;
    uint8_t b = *p++;
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *pp = p;
      *out = v;
      return 0;
    }
  }
  return -2; /* more than 10 bytes */
}

int tp_pb_next(tp_pb *r, tp_pb_field *f) {
  if (r->p >= r->end) return 0;
  memset(f, 0, sizeof *f);
  f->at = off(r, r->p);
  uint64_t key;
  if (varint(&r->p, r->end, &key))
    return -(int)tp_pb_error(r, f->at, "truncated or overlong field key");
  f->num = (uint32_t)(key >> 3);
  f->wire = (int)(key & 7);
  if (f->num == 0 || (key >> 3) > 0x1fffffff)
    return -(int)tp_pb_error(r, f->at, "invalid field number %llu", (unsigned long long)(key >> 3));
  switch (f->wire) {
    case TP_PB_VARINT:
      if (varint(&r->p, r->end, &f->u))
        return -(int)tp_pb_error(r, f->at, "truncated field %u", f->num);
      return 1;
    case TP_PB_I64:
      if (r->end - r->p < 8) return -(int)tp_pb_error(r, f->at, "truncated field %u", f->num);
      for (int i = 7; i >= 0; i--) f->u = (f->u << 8) | r->p[i];
      r->p += 8;
      return 1;
    case TP_PB_I32:
      if (r->end - r->p < 4) return -(int)tp_pb_error(r, f->at, "truncated field %u", f->num);
      for (int i = 3; i >= 0; i--) f->u = (f->u << 8) | r->p[i];
      r->p += 4;
      return 1;
    case TP_PB_LEN: {
      uint64_t n;
      if (varint(&r->p, r->end, &n) || n > (uint64_t)(r->end - r->p))
        return -(int)tp_pb_error(r, f->at, "truncated field %u", f->num);
      f->data = r->p;
      f->len = (size_t)n;
      r->p += n;
      return 1;
    }
    default:
      return -(int)tp_pb_error(r, f->at, "field %u has unsupported wire type %d", f->num, f->wire);
  }
}

tp_status tp_pb_need(const tp_pb *r, const tp_pb_field *f, int wire) {
  if (f->wire == wire) return TP_OK;
  return tp_pb_error(r, f->at, "field %u has wire type %d, expected %d", f->num, f->wire, wire);
}

tp_status tp_pb_sub(const tp_pb *r, const tp_pb_field *f, const char *msg, tp_pb *out) {
  TP_TRY(tp_pb_need(r, f, TP_PB_LEN));
  if (r->depth + 1 > TP_PB_MAX_DEPTH)
    return tp_pb_error(r, f->at, "field %u nests deeper than %d messages", f->num, TP_PB_MAX_DEPTH);
  out->base = r->base;
  out->p = f->data;
  out->end = f->data + f->len;
  out->msg = msg;
  out->depth = r->depth + 1;
  return TP_OK;
}

tp_status tp_pb_string(const tp_pb *r, const tp_pb_field *f, char **out) {
  TP_TRY(tp_pb_need(r, f, TP_PB_LEN));
  char *s = tp_alloc(f->len + 1);
  if (!s) return TP_ERR_OUT_OF_MEMORY;
  if (f->len) memcpy(s, f->data, f->len);
  s[f->len] = 0;
  *out = s;
  return TP_OK;
}

/* The capacity of an array of n entries grown only by TP_ARRAY_RESERVE
 * (doubling from 8): the next power of two >= n. The callers keep only the
 * count, since a repeated field may arrive in pieces. */
static int cap_of(size_t n) {
  if (!n) return 0;
  size_t c = 8;
  while (c < n) c *= 2;
  return c > INT32_MAX ? INT32_MAX : (int)c;
}

tp_status tp_pb_ints(const tp_pb *r, const tp_pb_field *f, int64_t **arr, size_t *n) {
  int cap = cap_of(*n);
  if (f->wire == TP_PB_VARINT) {
    TP_TRY(TP_ARRAY_RESERVE(*arr, cap, (int64_t)*n + 1));
    (*arr)[(*n)++] = (int64_t)f->u;
    return TP_OK;
  }
  TP_TRY(tp_pb_need(r, f, TP_PB_LEN));
  const uint8_t *p = f->data, *end = f->data + f->len;
  while (p < end) {
    uint64_t v;
    if (varint(&p, end, &v)) return tp_pb_error(r, f->at, "truncated packed field %u", f->num);
    TP_TRY(TP_ARRAY_RESERVE(*arr, cap, (int64_t)*n + 1));
    (*arr)[(*n)++] = (int64_t)v;
  }
  return TP_OK;
}

tp_status tp_pb_floats(const tp_pb *r, const tp_pb_field *f, float **arr, size_t *n) {
  int cap = cap_of(*n);
  if (f->wire == TP_PB_I32) {
    TP_TRY(TP_ARRAY_RESERVE(*arr, cap, (int64_t)*n + 1));
    uint32_t u = (uint32_t)f->u;
    memcpy(&(*arr)[(*n)++], &u, 4);
    return TP_OK;
  }
  TP_TRY(tp_pb_need(r, f, TP_PB_LEN));
  if (f->len % 4) return tp_pb_error(r, f->at, "packed float field %u has %zu bytes (not a multiple of 4)", f->num, f->len);
  size_t k = f->len / 4;
  TP_TRY(TP_ARRAY_RESERVE(*arr, cap, (int64_t)(*n + k)));
  for (size_t i = 0; i < k; i++) {
    const uint8_t *b = f->data + 4 * i;
    uint32_t u = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    memcpy(&(*arr)[*n + i], &u, 4);
  }
  *n += k;
  return TP_OK;
}

/* ---- writer ---- */
void tp_pbw_put(tp_pbw *w, const void *data, size_t len) { tp_buf_putn(w, data, len); }

void tp_pbw_raw_varint(tp_pbw *w, uint64_t v) {
  uint8_t b[10];
  int n = 0;
  do {
    b[n] = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) b[n] |= 0x80;
    n++;
  } while (v);
  tp_pbw_put(w, b, (size_t)n);
}

void tp_pbw_varint(tp_pbw *w, uint32_t num, uint64_t v) {
  tp_pbw_raw_varint(w, (uint64_t)num << 3 | TP_PB_VARINT);
  tp_pbw_raw_varint(w, v);
}

void tp_pbw_bytes(tp_pbw *w, uint32_t num, const void *data, size_t len) {
  tp_pbw_raw_varint(w, (uint64_t)num << 3 | TP_PB_LEN);
  tp_pbw_raw_varint(w, len);
  tp_pbw_put(w, data, len);
}
