/* pb.h - a bounds-checked protobuf wire-format reader.
 *
 * A tp_pb is a cursor over one message: [p, end). Every read checks the
 * remaining length; nested messages are read through tp_pb_sub, which
 * checks the nesting depth. Errors are TP_ERR_PARSE with the field number,
 * the message name and the absolute byte offset:
 *   "onnx: truncated field 7 of TensorProto at byte 1234" */
#ifndef TP_ONNX_PB_H
#define TP_ONNX_PB_H
#include "../core/buf.h"
#include "../core/internal.h"

#define TP_PB_MAX_DEPTH 32

enum { TP_PB_VARINT = 0, TP_PB_I64 = 1, TP_PB_LEN = 2, TP_PB_I32 = 5 };

typedef struct tp_pb {
  const uint8_t *base; /* start of the whole buffer (for offsets in messages) */
  const uint8_t *p, *end;
  const char *msg;     /* message name for errors ("TensorProto") */
  int depth;
} tp_pb;

/* One field as read by tp_pb_next. */
typedef struct tp_pb_field {
  uint32_t num;
  int wire;
  uint64_t u;               /* VARINT, I64, I32 value */
  const uint8_t *data;      /* LEN: payload */
  size_t len;
  size_t at;                /* byte offset of the field's key */
} tp_pb_field;

void tp_pb_init(tp_pb *r, const void *bytes, size_t len, const char *msg);
/* 1: a field was read into *f; 0: end of message; <0: error (status set,
 * returned as -status). */
int tp_pb_next(tp_pb *r, tp_pb_field *f);
/* A reader over a LEN field's payload as message msg (depth checked). */
tp_status tp_pb_sub(const tp_pb *r, const tp_pb_field *f, const char *msg, tp_pb *out);
/* Field values. A LEN field holding a packed repeated scalar is iterated with
 * tp_pb_packed_*: *n receives the count. */
tp_status tp_pb_string(const tp_pb *r, const tp_pb_field *f, char **out); /* tp_alloc, NUL ended */
tp_status tp_pb_need(const tp_pb *r, const tp_pb_field *f, int wire);
/* Appends the values of a repeated int64/int32 field (packed or not) to
 * *arr (tp_realloc'ed, *n entries). */
tp_status tp_pb_ints(const tp_pb *r, const tp_pb_field *f, int64_t **arr, size_t *n);
/* The same for float (fixed32) fields. */
tp_status tp_pb_floats(const tp_pb *r, const tp_pb_field *f, float **arr, size_t *n);
tp_status tp_pb_error(const tp_pb *r, size_t at, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ---- writer ----
 * A tp_buf (core/buf.h): bytes in .p[0..n), a sticky .oom after a failed
 * allocation (later writes do nothing), freed with tp_free(.p) or
 * tp_buf_free. */
typedef tp_buf tp_pbw;
void tp_pbw_varint(tp_pbw *w, uint32_t num, uint64_t v);
void tp_pbw_bytes(tp_pbw *w, uint32_t num, const void *data, size_t len);
void tp_pbw_raw_varint(tp_pbw *w, uint64_t v);
void tp_pbw_put(tp_pbw *w, const void *data, size_t len);

#endif
