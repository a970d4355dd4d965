/* text.h - shared pieces of the graph text format (print.c, parse.c):
 * the per-op attribute table and the number and string spellings.
 * The format itself is described in docs/graph-format.md. */
#ifndef TP_GRAPH_TEXT_H
#define TP_GRAPH_TEXT_H
#include "graph.h"
#include "../core/buf.h"

/* How one attribute is spelled. */
typedef enum tp_attr_kind {
  TP_ATTR_INTS,     /* [1,2,3] -> attrs.ints / attrs.nints */
  TP_ATTR_INT,      /* -3 -> an int64_t field */
  TP_ATTR_INT_MAX,  /* an int, or "max" for INT64_MAX (slice end) */
  TP_ATTR_BOOL,     /* true | false -> an int field */
  TP_ATTR_FLOAT,    /* float text -> a double field */
  TP_ATTR_FLOATS,   /* [0.5,1] -> attrs.floats / attrs.nfloats */
  TP_ATTR_DTYPE,    /* f32 | i32 | i64 | b8 -> attrs.dtype */
  TP_ATTR_GELU,     /* none | tanh -> attrs.approximate 0 | 1 */
  TP_ATTR_KIND_COUNT
} tp_attr_kind;

typedef struct tp_attr_spec {
  const char *name;   /* "dims" */
  tp_attr_kind kind;
  size_t offset;      /* of the field in tp_attrs */
} tp_attr_spec;

#define TP_TEXT_MAX_ATTRS 6
typedef struct tp_op_text {
  int nattrs;
  tp_attr_spec attrs[TP_TEXT_MAX_ATTRS];
} tp_op_text;

/* The attributes each op reads, in printed order; indexed by tp_op. */
extern const tp_op_text tp_text_ops[TP_OP_COUNT];

/* Node names and bare custom keys: [A-Za-z0-9_.]+ */
int tp_text_is_name_char(int c);
int tp_text_is_name(const char *s);

/* Shortest text of d that reads back to the same double and always holds
 * '.', 'e', "inf" or "nan" ("1.5", "2.0", "1e-05", "-inf", "nan").
 * buf must hold at least 32 bytes. */
const char *tp_text_format_float(double d, char *buf, size_t n);
/* Integer text of an integral double ("2", "-3"). buf >= 32 bytes. */
const char *tp_text_format_int(double d, char *buf, size_t n);

/* "quoted" with \" \\ \n \t \xHH escapes. */
void tp_text_put_quoted(tp_buf *b, const char *s);
/* dtype and shape: f32[2,3], f32[] */
void tp_text_put_type(tp_buf *b, tp_dtype dt, int ndim, const int64_t *shape);

/* Standard base64 ('=' padded). */
void tp_text_put_base64(tp_buf *b, const unsigned char *data, size_t n);


/* The dtype whose short name is s[0..n), -1 if none. */
int tp_text_dtype_lookup(const char *s, size_t n);

#endif
