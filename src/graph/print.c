/* print.c - the stable text form of a graph (docs/graph-format.md).
 *
 *   tpgraph v1
 *   %x = placeholder : f32[64,784]
 *   %w = get_attr "w" : f32[512,784]
 *   %3 = linear(%x, %w, none) : f32[64,512] {note="a \"q\""}
 *   %4 = sum(%3, dims=[1], keepdim=true) : f32[64,1]
 *   output(%4)
 *   data %w f32[512,784] <base64>
 *
 * Also the pieces parse.c shares through text.h: the per-op attribute table,
 * the number spellings, string quoting and base64. */
#include "text.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- the attribute table ------------------------------------------------
 * Expanded from the TP_OP_ATTRS rows of ops.def; ops without one read no
 * attributes. Attributes print in row order. */
#define TP_ATTR(nm, kind, field) { nm, TP_ATTR_##kind, offsetof(tp_attrs, field) }
#define TP_OP_ATTRS(id, ...)                                                         \
  [TP_OP_##id] = { (int)(sizeof((tp_attr_spec[]){__VA_ARGS__}) / sizeof(tp_attr_spec)), \
                   { __VA_ARGS__ } },
const tp_op_text tp_text_ops[TP_OP_COUNT] = {
#include "../ops/ops.def"
};
#undef TP_ATTR

/* ---- small spellings ---------------------------------------------------- */
int tp_text_is_name_char(int c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         c == '_' || c == '.';
}

int tp_text_is_name(const char *s) {
  if (!s || !*s) return 0;
  for (; *s; s++)
    if (!tp_text_is_name_char((unsigned char)*s)) return 0;
  return 1;
}

const char *tp_text_format_float(double d, char *buf, size_t n) {
  if (isnan(d)) {
    snprintf(buf, n, "%s", signbit(d) ? "-nan" : "nan");
    return buf;
  }
  if (isinf(d)) {
    snprintf(buf, n, "%s", d < 0 ? "-inf" : "inf");
    return buf;
  }
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, n, "%.*g", prec, d);
    if (strtod(buf, NULL) == d && signbit(strtod(buf, NULL)) == signbit(d)) break;
  }
  if (!strchr(buf, '.') && !strchr(buf, 'e')) {
    size_t len = strlen(buf);
    if (len + 3 <= n) memcpy(buf + len, ".0", 3);
  }
  return buf;
}

const char *tp_text_format_int(double d, char *buf, size_t n) {
  snprintf(buf, n, "%.0f", d);
  return buf;
}

int tp_text_dtype_lookup(const char *s, size_t n) {
  for (int d = 0; d < TP_DTYPE_COUNT; d++) {
    const char *nm = tp_dtype_short((tp_dtype)d);
    if (nm && strlen(nm) == n && memcmp(nm, s, n) == 0) return d;
  }
  return -1;
}

/* ---- text pieces on a tp_buf (src/core/buf.h) ---------------------------- */
void tp_text_put_quoted(tp_buf *b, const char *s) {
  static const char hex[] = "0123456789abcdef";
  tp_buf_putn(b, "\"", 1);
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    unsigned c = *p;
    if (c == '"') tp_buf_putn(b, "\\\"", 2);
    else if (c == '\\') tp_buf_putn(b, "\\\\", 2);
    else if (c == '\n') tp_buf_putn(b, "\\n", 2);
    else if (c == '\t') tp_buf_putn(b, "\\t", 2);
    else if (c < 0x20 || c == 0x7f) {
      char e[4] = { '\\', 'x', hex[c >> 4], hex[c & 15] };
      tp_buf_putn(b, e, 4);
    } else {
      char ch = (char)c;
      tp_buf_putn(b, &ch, 1);
    }
  }
  tp_buf_putn(b, "\"", 1);
}

void tp_text_put_type(tp_buf *b, tp_dtype dt, int ndim, const int64_t *shape) {
  const char *nm = (unsigned)dt < TP_DTYPE_COUNT ? tp_dtype_short(dt) : NULL;
  tp_buf_puts(b, nm ? nm : "?");
  tp_buf_putn(b, "[", 1);
  for (int i = 0; i < ndim; i++) tp_buf_printf(b, i ? ",%lld" : "%lld", (long long)shape[i]);
  tp_buf_putn(b, "]", 1);
}

void tp_text_put_base64(tp_buf *b, const unsigned char *d, size_t n) {
  static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  if (!tp_buf_reserve(b, (n + 2) / 3 * 4)) return;
  char *o = b->p + b->n;
  size_t i = 0;
  for (; i + 3 <= n; i += 3) {
    uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 | d[i + 2];
    *o++ = al[v >> 18];
    *o++ = al[(v >> 12) & 63];
    *o++ = al[(v >> 6) & 63];
    *o++ = al[v & 63];
  }
  if (n - i == 1) {
    uint32_t v = (uint32_t)d[i] << 16;
    *o++ = al[v >> 18];
    *o++ = al[(v >> 12) & 63];
    *o++ = '=';
    *o++ = '=';
  } else if (n - i == 2) {
    uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8;
    *o++ = al[v >> 18];
    *o++ = al[(v >> 12) & 63];
    *o++ = al[(v >> 6) & 63];
    *o++ = '=';
  }
  b->n = (size_t)(o - b->p);
  b->p[b->n] = 0;
}

static int host_is_le(void) {
  const uint16_t one = 1;
  return *(const unsigned char *)&one == 1;
}


/* ---- the printer ---------------------------------------------------------- */
static void put_scalar(tp_buf *b, const tp_arg *a) {
  char buf[40];
  /* integer literals print exactly (every whole double is an exact
   * integer: "%.0f" gives all its digits), up to 2^63 in magnitude, the
   * parser's range for them; larger ones (not produced by the parser)
   * print as floats */
  if (a->is_int && fabs(a->scalar) <= 9223372036854775808.0 && a->scalar == floor(a->scalar))
    tp_buf_puts(b, tp_text_format_int(a->scalar, buf, sizeof buf));
  else
    tp_buf_puts(b, tp_text_format_float(a->scalar, buf, sizeof buf));
}

static void put_attr(tp_buf *b, const tp_attrs *at, const tp_attr_spec *s) {
  const char *field = (const char *)at + s->offset;
  char buf[40];
  tp_buf_puts(b, s->name);
  tp_buf_putn(b, "=", 1);
  switch (s->kind) {
  case TP_ATTR_INTS:
    tp_buf_putn(b, "[", 1);
    for (int i = 0; i < at->nints && i < TP_MAX_DIMS; i++)
      tp_buf_printf(b, i ? ",%lld" : "%lld", (long long)at->ints[i]);
    tp_buf_putn(b, "]", 1);
    break;
  case TP_ATTR_FLOATS:
    tp_buf_putn(b, "[", 1);
    for (int i = 0; i < at->nfloats && i < TP_MAX_FLOATS; i++) {
      if (i) tp_buf_putn(b, ",", 1);
      tp_buf_puts(b, tp_text_format_float(at->floats[i], buf, sizeof buf));
    }
    tp_buf_putn(b, "]", 1);
    break;
  case TP_ATTR_INT:
  case TP_ATTR_INT_MAX: {
    int64_t v;
    memcpy(&v, field, sizeof v);
    if (s->kind == TP_ATTR_INT_MAX && v == INT64_MAX) tp_buf_puts(b, "max");
    else tp_buf_printf(b, "%lld", (long long)v);
    break;
  }
  case TP_ATTR_BOOL: {
    int v;
    memcpy(&v, field, sizeof v);
    tp_buf_puts(b, v ? "true" : "false");
    break;
  }
  case TP_ATTR_FLOAT: {
    double v;
    memcpy(&v, field, sizeof v);
    tp_buf_puts(b, tp_text_format_float(v, buf, sizeof buf));
    break;
  }
  case TP_ATTR_DTYPE: {
    tp_dtype v;
    memcpy(&v, field, sizeof v);
    tp_buf_puts(b, (unsigned)v < TP_DTYPE_COUNT ? tp_dtype_short(v) : "?");
    break;
  }
  case TP_ATTR_GELU: {
    int v;
    memcpy(&v, field, sizeof v);
    tp_buf_puts(b, v ? "tanh" : "none");
    break;
  }
  default:
    TP_ASSERT(0);
  }
}

static tp_status check_node(const tp_graph *g, int i) {
  const tp_node *nd = &g->nodes[i];
  if ((unsigned)nd->kind >= TP_NODE_KIND_COUNT)
    return tp_fail(TP_ERR_INTERNAL, "graph print: node %d has kind %d", i, (int)nd->kind);
  if (nd->kind != TP_NODE_OUTPUT && !tp_text_is_name(nd->name))
    return tp_fail(TP_ERR_INVALID_ARG,
                   "graph print: node %d has name '%s', which is not [A-Za-z0-9_.]+", i,
                   nd->name ? nd->name : "(null)");
  if (nd->kind == TP_NODE_CALL && (unsigned)nd->op >= TP_OP_COUNT)
    return tp_fail(TP_ERR_INTERNAL, "graph print: node %%%s has op %d", nd->name, (int)nd->op);
  int is_sub = nd->kind == TP_NODE_GET_ATTR && nd->desc.ndim == TP_DESC_GRAPH;
  if (nd->kind != TP_NODE_OUTPUT && !is_sub &&
      ((unsigned)nd->desc.dtype >= TP_DTYPE_COUNT || nd->desc.ndim < 0 ||
       nd->desc.ndim > TP_MAX_DIMS))
    return tp_fail(TP_ERR_INTERNAL, "graph print: node %%%s has a bad type", nd->name);
  for (int a = 0; a < nd->nargs; a++) {
    const tp_arg *ar = &nd->args[a];
    if (ar->kind == TP_ARG_NODE && (ar->node < 0 || ar->node >= g->n || ar->node == i))
      return tp_fail(TP_ERR_INTERNAL, "graph print: node %d operand %d refers to node %d", i, a,
                     ar->node);
  }
  for (int c = 0; c < nd->ncustom; c++)
    if (!nd->custom[c].key || !nd->custom[c].value)
      return tp_fail(TP_ERR_INTERNAL, "graph print: node %d has a NULL custom entry", i);
  return TP_OK;
}

static void put_node(tp_buf *b, const tp_graph *g, const tp_node *nd) {
  if (nd->kind != TP_NODE_OUTPUT) tp_buf_printf(b, "%%%s = ", nd->name);
  switch (nd->kind) {
  case TP_NODE_PLACEHOLDER:
    tp_buf_puts(b, "placeholder");
    break;
  case TP_NODE_GET_ATTR:
    tp_buf_puts(b, "get_attr ");
    tp_text_put_quoted(b, nd->target ? nd->target : nd->name);
    break;
  case TP_NODE_CALL:
  case TP_NODE_OUTPUT: {
    tp_buf_puts(b, nd->kind == TP_NODE_OUTPUT ? "output" : tp_op_name(nd->op));
    tp_buf_putn(b, "(", 1);
    int first = 1;
    for (int a = 0; a < nd->nargs; a++, first = 0) {
      const tp_arg *ar = &nd->args[a];
      if (!first) tp_buf_putn(b, ", ", 2);
      if (ar->kind == TP_ARG_NODE) tp_buf_printf(b, "%%%s", g->nodes[ar->node].name);
      else if (ar->kind == TP_ARG_SCALAR) put_scalar(b, ar);
      else tp_buf_puts(b, "none");
    }
    if (nd->kind == TP_NODE_CALL) {
      const tp_op_text *ot = &tp_text_ops[nd->op];
      for (int k = 0; k < ot->nattrs; k++, first = 0) {
        if (!first) tp_buf_putn(b, ", ", 2);
        put_attr(b, &nd->attrs, &ot->attrs[k]);
      }
    }
    tp_buf_putn(b, ")", 1);
    break;
  }
  default:
    break;
  }
  if (nd->kind != TP_NODE_OUTPUT) {
    tp_buf_puts(b, " : ");
    if (nd->kind == TP_NODE_GET_ATTR && nd->desc.ndim == TP_DESC_GRAPH)
      tp_buf_puts(b, "graph");
    else
      tp_text_put_type(b, nd->desc.dtype, nd->desc.ndim, nd->desc.shape);
  }
  if (nd->ncustom > 0) {
    tp_buf_puts(b, " {");
    for (int c = 0; c < nd->ncustom; c++) {
      if (c) tp_buf_putn(b, ", ", 2);
      if (tp_text_is_name(nd->custom[c].key)) tp_buf_puts(b, nd->custom[c].key);
      else tp_text_put_quoted(b, nd->custom[c].key);
      tp_buf_putn(b, "=", 1);
      tp_text_put_quoted(b, nd->custom[c].value);
    }
    tp_buf_putn(b, "}", 1);
  }
  tp_buf_putn(b, "\n", 1);
}

static tp_status put_data(tp_buf *b, const tp_node *nd) {
  const tp_tensor *t = nd->val;
  int64_t numel = tp_shape_numel(t->ndim, t->shape);
  size_t bytes = (size_t)numel * tp_dtype_size(t->dtype);
  unsigned char *tmp = NULL;
  if (bytes) {
    tmp = tp_alloc(bytes);
    if (!tmp) return tp_fail(TP_ERR_OUT_OF_MEMORY, "graph print: no memory for data of %%%s",
                             nd->name);
    tp_tensor_gather(t, tmp);
    size_t isz = tp_dtype_size(t->dtype);
    if (!host_is_le() && isz > 1) /* the text holds little-endian bytes */
      for (size_t k = 0; k < bytes; k += isz)
        for (size_t q = 0; q < isz / 2; q++) {
          unsigned char c = tmp[k + q];
          tmp[k + q] = tmp[k + isz - 1 - q];
          tmp[k + isz - 1 - q] = c;
        }
  }
  tp_buf_printf(b, "data %%%s ", nd->name);
  tp_text_put_type(b, t->dtype, t->ndim, t->shape);
  if (bytes) {
    tp_buf_putn(b, " ", 1);
    tp_text_put_base64(b, tmp, bytes);
  }
  tp_buf_putn(b, "\n", 1);
  tp_free(tmp);
  return TP_OK;
}

/* The body of a graph: its subgraphs as `subgraph "name" {` ... `}` blocks
 * (recursively), its nodes, its data lines. */
static tp_status put_graph(tp_buf *b, const tp_graph *g, int with_data, int depth) {
  tp_status s;
  if (depth > 8) return tp_fail(TP_ERR_INVALID_ARG, "graph print: subgraphs nested deeper than 8");
  for (int i = 0; i < g->n; i++)
    if ((s = check_node(g, i)) != TP_OK) return s;
  for (int i = 0; i < g->nsubs; i++) {
    tp_buf_puts(b, "subgraph ");
    tp_text_put_quoted(b, g->subs[i].name);
    tp_buf_puts(b, " {\n");
    TP_TRY(put_graph(b, g->subs[i].g, with_data, depth + 1));
    tp_buf_puts(b, "}\n");
  }
  for (int i = 0; i < g->n; i++) put_node(b, g, &g->nodes[i]);
  if (with_data)
    for (int i = 0; i < g->n && !b->oom; i++) {
      const tp_node *nd = &g->nodes[i];
      if (nd->kind != TP_NODE_GET_ATTR || !nd->val) continue;
      TP_TRY(put_data(b, nd));
    }
  return TP_OK;
}

tp_status tp_graph_print(const tp_graph *g, int with_data, char **out) {
  tp_buf b = { 0 };
  tp_status s = TP_OK;
  if (!out) return tp_fail(TP_ERR_INVALID_ARG, "graph print: out is NULL");
  *out = NULL;
  if (!g) return tp_fail(TP_ERR_INVALID_ARG, "graph print: graph is NULL");
  tp_buf_puts(&b, "tpgraph v1\n");
  if ((s = put_graph(&b, g, with_data, 0)) != TP_OK) goto fail;
  if (b.oom) {
    s = tp_fail(TP_ERR_OUT_OF_MEMORY, "graph print: out of memory (%zu bytes of text)", b.n);
    goto fail;
  }
  *out = b.p;
  return TP_OK;
fail:
  tp_free(b.p);
  return s;
}

