/* parse.c - read the stable graph text (docs/graph-format.md) back into a
 * graph: the inverse of tp_graph_print.
 *
 * One pass over the lines, no recursion. The cursor never moves past the
 * end of the current line, and a line never extends past len. Every error
 * is TP_ERR_PARSE (TP_ERR_OUT_OF_MEMORY stays itself) with a message
 * "graph text line N: ..." naming what was expected; on failure the
 * partial graph is freed. */
#include "text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define NAME_MAX_LEN 255

typedef struct parser {
  const char *c, *le; /* cursor and end of the current line */
  int line;
  tp_graph *g;
  int output_line;    /* line of the output statement, 0 if none yet */
  /* per-line scratch, freed by line_reset */
  tp_arg *args;
  int nargs, cap;
  char *strs[8];
  int nstrs;
} parser;

/* ---- errors ---------------------------------------------------------------- */
static tp_status perr(parser *p, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static tp_status perr(parser *p, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return tp_fail(TP_ERR_PARSE, "graph text line %d: %s", p->line, msg);
}

/* What the cursor is looking at, for "expected X, found Y" messages. */
static const char *found(const parser *p, char *buf, size_t n) {
  if (p->c >= p->le) return "end of line";
  size_t len = (size_t)(p->le - p->c);
  if (len > 16) len = 16;
  size_t j = 0;
  buf[j++] = '\'';
  for (size_t i = 0; i < len && j + 5 < n; i++) {
    unsigned char ch = (unsigned char)p->c[i];
    if (ch < 0x20 || ch == 0x7f) {
      snprintf(buf + j, n - j, "\\x%02x", ch);
      j += 4;
    } else {
      buf[j++] = (char)ch;
    }
  }
  if (len < (size_t)(p->le - p->c) && j + 4 < n) {
    memcpy(buf + j, "...", 3);
    j += 3;
  }
  buf[j++] = '\'';
  buf[j] = 0;
  return buf;
}

static tp_status expected(parser *p, const char *what) {
  char buf[96];
  return perr(p, "expected %s, found %s", what, found(p, buf, sizeof buf));
}

/* Turn a failure of a graph call into a parse error on this line. */
static tp_status wrap(parser *p, tp_status s) {
  if (s == TP_OK || s == TP_ERR_OUT_OF_MEMORY) return s;
  char msg[400];
  snprintf(msg, sizeof msg, "%s", tp_last_error());
  return perr(p, "%s", msg);
}

/* ---- the cursor -------------------------------------------------------------- */
static void skip_ws(parser *p) {
  while (p->c < p->le && (*p->c == ' ' || *p->c == '\t')) p->c++;
}

static int looking_at(parser *p, char ch) {
  skip_ws(p);
  return p->c < p->le && *p->c == ch;
}

static int eat(parser *p, char ch) {
  if (!looking_at(p, ch)) return 0;
  p->c++;
  return 1;
}

static tp_status need(parser *p, char ch) {
  char what[8] = { '\'', ch, '\'', 0 };
  return eat(p, ch) ? TP_OK : expected(p, what);
}

static int is_ident_start(int ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
}

/* [A-Za-z_][A-Za-z0-9_]*: operator, keyword, attribute. len 0 if none. */
static const char *ident(parser *p, size_t *len) {
  skip_ws(p);
  const char *s = p->c;
  if (p->c < p->le && is_ident_start((unsigned char)*p->c)) {
    p->c++;
    while (p->c < p->le && (is_ident_start((unsigned char)*p->c) ||
                            (*p->c >= '0' && *p->c <= '9')))
      p->c++;
  }
  *len = (size_t)(p->c - s);
  return s;
}

static int word_is(const char *s, size_t n, const char *w) {
  return strlen(w) == n && memcmp(s, w, n) == 0;
}

/* Peek: is the next identifier exactly w (not followed by a name char)? */
static int peek_word(parser *p, const char *w) {
  skip_ws(p);
  size_t n = strlen(w);
  if ((size_t)(p->le - p->c) < n || memcmp(p->c, w, n) != 0) return 0;
  return p->c + n == p->le || !tp_text_is_name_char((unsigned char)p->c[n]);
}

/* %name into buf (NUL-terminated). */
static tp_status node_ref(parser *p, char *buf) {
  if (!eat(p, '%')) return expected(p, "a node name such as %x");
  const char *s = p->c;
  while (p->c < p->le && tp_text_is_name_char((unsigned char)*p->c)) p->c++;
  size_t n = (size_t)(p->c - s);
  if (n == 0) return expected(p, "a node name ([A-Za-z0-9_.]+) after '%'");
  if (n > NAME_MAX_LEN) return perr(p, "node name longer than %d characters", NAME_MAX_LEN);
  memcpy(buf, s, n);
  buf[n] = 0;
  return TP_OK;
}

static tp_status int64_tok(parser *p, int64_t *out, const char *what) {
  skip_ws(p);
  const char *s = p->c;
  int neg = 0;
  if (p->c < p->le && *p->c == '-') {
    neg = 1;
    p->c++;
  }
  if (p->c >= p->le || *p->c < '0' || *p->c > '9') {
    p->c = s;
    return expected(p, what);
  }
  uint64_t v = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  while (p->c < p->le && *p->c >= '0' && *p->c <= '9') {
    unsigned dgt = (unsigned)(*p->c - '0');
    if (v > (lim - dgt) / 10) {
      p->c = s;
      return perr(p, "integer out of range for %s", what);
    }
    v = v * 10 + dgt;
    p->c++;
  }
  if (p->c < p->le && (tp_text_is_name_char((unsigned char)*p->c))) {
    p->c = s;
    return expected(p, what);
  }
  *out = neg ? (int64_t)(0 - v) : (int64_t)v;
  return TP_OK;
}

/* A number: -?D+(.D+)?([eE][+-]?D+)? or [-]inf / [-]nan. is_int when it has
 * neither '.' nor an exponent. */
static tp_status number_tok(parser *p, double *out, int *is_int) {
  skip_ws(p);
  const char *s = p->c, *q = p->c;
  while (q < p->le && (tp_text_is_name_char((unsigned char)*q) || *q == '+' || *q == '-')) q++;
  size_t n = (size_t)(q - s);
  char buf[64];
  if (n == 0 || n >= sizeof buf) return expected(p, "a number");
  memcpy(buf, s, n);
  buf[n] = 0;
  const char *b = buf[0] == '-' ? buf + 1 : buf;
  int neg = buf[0] == '-';
  if (!strcmp(b, "inf") || !strcmp(b, "nan")) {
    double v = b[0] == 'i' ? INFINITY : NAN;
    *out = neg ? -v : v;
    *is_int = 0;
    p->c = q;
    return TP_OK;
  }
  const char *r = b;
  int digits = 0, isint = 1;
  while (*r >= '0' && *r <= '9') r++, digits++;
  if (!digits) return expected(p, "a number");
  if (*r == '.') {
    isint = 0;
    r++;
    digits = 0;
    while (*r >= '0' && *r <= '9') r++, digits++;
    if (!digits) return expected(p, "digits after '.' in a number");
  }
  if (*r == 'e' || *r == 'E') {
    isint = 0;
    r++;
    if (*r == '+' || *r == '-') r++;
    digits = 0;
    while (*r >= '0' && *r <= '9') r++, digits++;
    if (!digits) return expected(p, "digits in the exponent of a number");
  }
  if (*r) return expected(p, "a number");
  *out = strtod(buf, NULL);
  *is_int = isint;
  if (isint && fabs(*out) > 9223372036854775808.0) {
    p->c = s;
    return perr(p, "integer literal %s is out of range for int64 (write a float such as 1e20)", buf);
  }
  p->c = q;
  return TP_OK;
}

static int hexval(int ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

/* "..." with \" \\ \n \t \xHH; the result is kept in p->strs until the end
 * of the line. */
static tp_status quoted(parser *p, char **out) {
  if (!eat(p, '"')) return expected(p, "a quoted string");
  if (p->nstrs >= TP_ARRAY_LEN(p->strs)) return perr(p, "too many strings on one line");
  const char *s = p->c;
  char *o = tp_alloc((size_t)(p->le - s) + 1);
  if (!o) return tp_fail(TP_ERR_OUT_OF_MEMORY, "graph text line %d: out of memory", p->line);
  p->strs[p->nstrs++] = o;
  size_t j = 0;
  for (;;) {
    if (p->c >= p->le) return perr(p, "unterminated string (missing '\"')");
    unsigned char ch = (unsigned char)*p->c++;
    if (ch == '"') break;
    if (ch == 0) return perr(p, "NUL byte inside a string");
    if (ch != '\\') {
      o[j++] = (char)ch;
      continue;
    }
    if (p->c >= p->le) return perr(p, "unterminated string (escape at end of line)");
    ch = (unsigned char)*p->c++;
    switch (ch) {
    case '"': o[j++] = '"'; break;
    case '\\': o[j++] = '\\'; break;
    case 'n': o[j++] = '\n'; break;
    case 't': o[j++] = '\t'; break;
    case 'x': {
      int h = p->le - p->c >= 2 ? hexval((unsigned char)p->c[0]) : -1;
      int l = h >= 0 ? hexval((unsigned char)p->c[1]) : -1;
      if (h < 0 || l < 0) return perr(p, "bad escape in string: \\x needs two hex digits");
      if (h == 0 && l == 0) return perr(p, "bad escape in string: \\x00 (strings cannot hold NUL)");
      o[j++] = (char)(h * 16 + l);
      p->c += 2;
      break;
    }
    default:
      return perr(p, "bad escape '\\%c' in string (known: \\\" \\\\ \\n \\t \\xHH)",
                  ch >= 0x20 && ch < 0x7f ? ch : '?');
    }
  }
  o[j] = 0;
  *out = o;
  return TP_OK;
}

/* f32[2,3] */
static tp_status type_tok(parser *p, tp_desc *d) {
  size_t n;
  const char *s = ident(p, &n);
  char buf[96];
  memset(d, 0, sizeof *d);
  int dt = n ? tp_text_dtype_lookup(s, n) : -1;
  if (dt < 0) {
    p->c = s;
    return perr(p, "expected a type such as f32[2,3] (dtypes: f32, i32, i64, b8), found %s",
                found(p, buf, sizeof buf));
  }
  d->dtype = (tp_dtype)dt;
  if (p->c >= p->le || *p->c != '[') return expected(p, "'[' after the dtype");
  p->c++;
  if (eat(p, ']')) return TP_OK;
  for (;;) {
    int64_t v;
    TP_TRY(int64_tok(p, &v, "a dimension size"));
    if (v < 0) return perr(p, "negative dimension size %lld", (long long)v);
    if (d->ndim == TP_MAX_DIMS) return perr(p, "more than %d dimensions", TP_MAX_DIMS);
    d->shape[d->ndim++] = v;
    if (eat(p, ']')) return TP_OK;
    if (!eat(p, ',')) return expected(p, "',' or ']' in a shape");
  }
}

/* {key="value", ...} */
static tp_status meta(parser *p, int idx) {
  if (!eat(p, '{')) return TP_OK;
  if (eat(p, '}')) return TP_OK;
  for (;;) {
    char keybuf[NAME_MAX_LEN + 1];
    const char *key;
    int mark = p->nstrs;
    char *value;
    skip_ws(p);
    if (looking_at(p, '"')) {
      char *k;
      TP_TRY(quoted(p, &k));
      key = k;
    } else {
      const char *s = p->c;
      while (p->c < p->le && tp_text_is_name_char((unsigned char)*p->c)) p->c++;
      size_t n = (size_t)(p->c - s);
      if (!n) return expected(p, "a meta key (name or quoted string)");
      if (n > NAME_MAX_LEN) return perr(p, "meta key longer than %d characters", NAME_MAX_LEN);
      memcpy(keybuf, s, n);
      keybuf[n] = 0;
      key = keybuf;
    }
    TP_TRY(need(p, '='));
    TP_TRY(quoted(p, &value));
    if (tp_graph_get_custom(p->g, idx, key)) return perr(p, "meta key '%s' given twice", key);
    TP_TRY(wrap(p, tp_graph_set_custom(p->g, idx, key, value)));
    while (p->nstrs > mark) tp_free(p->strs[--p->nstrs]);
    if (eat(p, '}')) return TP_OK;
    if (!eat(p, ',')) return expected(p, "',' or '}' in the meta braces");
  }
}

static tp_status end_of_line(parser *p) {
  skip_ws(p);
  if (p->c < p->le) return expected(p, "end of line");
  return TP_OK;
}

/* ---- operands and attributes --------------------------------------------------- */
static tp_status push_arg(parser *p, const tp_arg *a) {
  if (TP_ARRAY_RESERVE(p->args, p->cap, p->nargs + 1))
    return tp_fail(TP_ERR_OUT_OF_MEMORY, "graph text line %d: out of memory", p->line);
  p->args[p->nargs++] = *a;
  return TP_OK;
}

static void list_attrs(const tp_op_text *ot, char *buf, size_t n) {
  size_t j = 0;
  buf[0] = 0;
  for (int k = 0; k < ot->nattrs && j < n; k++)
    j += (size_t)snprintf(buf + j, n - j, "%s%s", k ? ", " : "", ot->attrs[k].name);
  if (!ot->nattrs) snprintf(buf, n, "none");
}

static tp_status attr_value(parser *p, const tp_attr_spec *s, tp_attrs *at) {
  char *field = (char *)at + s->offset;
  size_t n;
  const char *w;
  char what[80];
  switch (s->kind) {
  case TP_ATTR_INTS: {
    snprintf(what, sizeof what, "'[' starting the list %s", s->name);
    if (!eat(p, '[')) return expected(p, what);
    at->nints = 0;
    if (eat(p, ']')) return TP_OK;
    for (;;) {
      int64_t v;
      TP_TRY(int64_tok(p, &v, "an integer"));
      if (at->nints == TP_MAX_DIMS)
        return perr(p, "more than %d values in %s", TP_MAX_DIMS, s->name);
      at->ints[at->nints++] = v;
      if (eat(p, ']')) return TP_OK;
      if (!eat(p, ',')) return expected(p, "',' or ']' in a list");
    }
  }
  case TP_ATTR_FLOATS: {
    snprintf(what, sizeof what, "'[' starting the list %s", s->name);
    if (!eat(p, '[')) return expected(p, what);
    at->nfloats = 0;
    if (eat(p, ']')) return TP_OK;
    for (;;) {
      double v;
      int isint;
      TP_TRY(number_tok(p, &v, &isint));
      if (at->nfloats == TP_MAX_FLOATS)
        return perr(p, "more than %d values in %s", TP_MAX_FLOATS, s->name);
      at->floats[at->nfloats++] = v;
      if (eat(p, ']')) return TP_OK;
      if (!eat(p, ',')) return expected(p, "',' or ']' in a list");
    }
  }
  case TP_ATTR_INT_MAX:
    if (peek_word(p, "max")) {
      int64_t v = INT64_MAX;
      p->c += 3;
      memcpy(field, &v, sizeof v);
      return TP_OK;
    }
    /* fall through */
  case TP_ATTR_INT: {
    int64_t v;
    snprintf(what, sizeof what, "an integer for %s%s", s->name,
             s->kind == TP_ATTR_INT_MAX ? " (or max)" : "");
    TP_TRY(int64_tok(p, &v, what));
    memcpy(field, &v, sizeof v);
    return TP_OK;
  }
  case TP_ATTR_BOOL: {
    w = ident(p, &n);
    int v = word_is(w, n, "true") ? 1 : word_is(w, n, "false") ? 0 : -1;
    if (v < 0) {
      p->c = w;
      return expected(p, "true or false");
    }
    memcpy(field, &v, sizeof v);
    return TP_OK;
  }
  case TP_ATTR_FLOAT: {
    double v;
    int isint;
    TP_TRY(number_tok(p, &v, &isint));
    memcpy(field, &v, sizeof v);
    return TP_OK;
  }
  case TP_ATTR_DTYPE: {
    w = ident(p, &n);
    int dt = n ? tp_text_dtype_lookup(w, n) : -1;
    if (dt < 0) {
      p->c = w;
      return expected(p, "a dtype (f32, i32, i64, b8)");
    }
    tp_dtype v = (tp_dtype)dt;
    memcpy(field, &v, sizeof v);
    return TP_OK;
  }
  case TP_ATTR_GELU: {
    w = ident(p, &n);
    int v = word_is(w, n, "none") ? 0 : word_is(w, n, "tanh") ? 1 : -1;
    if (v < 0) {
      p->c = w;
      return expected(p, "none or tanh");
    }
    memcpy(field, &v, sizeof v);
    return TP_OK;
  }
  default:
    return tp_fail(TP_ERR_INTERNAL, "graph text: bad attribute kind %d", (int)s->kind);
  }
}

/* (operands..., attr=value, ...) ; op < 0 for output (no attributes). */
static tp_status arg_list(parser *p, int op, tp_attrs *at) {
  const tp_op_text *ot = op >= 0 ? &tp_text_ops[op] : NULL;
  const char *opname = op >= 0 ? tp_op_name((tp_op)op) : "output";
  unsigned seen = 0;
  int in_attrs = 0;
  TP_TRY(need(p, '('));
  if (!eat(p, ')')) {
    for (;;) {
      tp_arg a;
      memset(&a, 0, sizeof a);
      skip_ws(p);
      if (looking_at(p, '%')) {
        char name[NAME_MAX_LEN + 1];
        TP_TRY(node_ref(p, name));
        int idx = tp_graph_find(p->g, name);
        if (idx < 0) return perr(p, "%%%s is used before it is defined", name);
        a.kind = TP_ARG_NODE;
        a.node = idx;
      } else if (peek_word(p, "none")) {
        p->c += 4;
        a.kind = TP_ARG_NONE;
      } else if (p->c < p->le && is_ident_start((unsigned char)*p->c) && !peek_word(p, "inf") &&
                 !peek_word(p, "nan")) {
        size_t n;
        const char *w = ident(p, &n);
        char list[128];
        if (!looking_at(p, '=')) {
          p->c = w;
          return expected(p, "an operand (%name, none or a number) or attribute=value");
        }
        p->c++;
        int k = -1;
        for (int i = 0; ot && i < ot->nattrs; i++)
          if (word_is(w, n, ot->attrs[i].name)) k = i;
        if (k < 0) {
          if (ot) list_attrs(ot, list, sizeof list);
          else snprintf(list, sizeof list, "none");
          return perr(p, "unknown attribute '%.*s' for %s (it takes: %s)", (int)(n > 64 ? 64 : n),
                      w, opname, list);
        }
        if (seen & (1u << k)) return perr(p, "attribute %s given twice", ot->attrs[k].name);
        seen |= 1u << k;
        in_attrs = 1;
        TP_TRY(attr_value(p, &ot->attrs[k], at));
        goto next;
      } else {
        int isint;
        TP_TRY(number_tok(p, &a.scalar, &isint));
        a.kind = TP_ARG_SCALAR;
        a.is_int = isint;
      }
      if (in_attrs) return perr(p, "operand after the attributes of %s", opname);
      TP_TRY(push_arg(p, &a));
    next:
      if (eat(p, ')')) break;
      if (!eat(p, ',')) return expected(p, "',' or ')'");
    }
  }
  for (int k = 0; ot && k < ot->nattrs; k++)
    if (!(seen & (1u << k))) {
      char list[128];
      list_attrs(ot, list, sizeof list);
      return perr(p, "%s needs attribute %s (it takes: %s)", opname, ot->attrs[k].name, list);
    }
  if (op >= 0) {
    int arity = tp_op_arity((tp_op)op);
    if (arity >= 0 && p->nargs != arity)
      return perr(p, "%s takes %d operand%s, found %d", opname, arity, arity == 1 ? "" : "s",
                  p->nargs);
  }
  return TP_OK;
}

/* ---- statements ------------------------------------------------------------------ */
static tp_status add(parser *p, tp_node_kind kind, const char *name, tp_op op,
                     const tp_attrs *at, const tp_desc *d, int *idx) {
  return wrap(p, tp_graph_add_node(p->g, kind, name, op, p->nargs, p->args, at, d, idx));
}

/* %name = placeholder | get_attr "t" | op(...)  : TYPE {meta} */
static tp_status define(parser *p) {
  char name[NAME_MAX_LEN + 1], buf[96];
  tp_attrs at;
  tp_desc d;
  int idx, op = -1;
  tp_node_kind kind;
  char *target = NULL;
  size_t n;
  tp_attrs_init(&at);
  TP_TRY(node_ref(p, name));
  if (tp_graph_find(p->g, name) >= 0) return perr(p, "%%%s is defined twice", name);
  TP_TRY(need(p, '='));
  const char *w = ident(p, &n);
  if (word_is(w, n, "placeholder")) {
    kind = TP_NODE_PLACEHOLDER;
  } else if (word_is(w, n, "get_attr")) {
    kind = TP_NODE_GET_ATTR;
    TP_TRY(quoted(p, &target));
  } else if (word_is(w, n, "output")) {
    p->c = w;
    return perr(p, "output is written without a name: output(...)");
  } else {
    if (!n) return expected(p, "placeholder, get_attr or an operator");
    char opname[64];
    tp_op o;
    snprintf(opname, sizeof opname, "%.*s", (int)(n < 63 ? n : 63), w);
    if (n >= 63 || tp_op_lookup(opname, &o) != TP_OK) {
      tp_clear_error();
      return perr(p, "unknown operator '%s'", opname);
    }
    kind = TP_NODE_CALL;
    op = (int)o;
    TP_TRY(arg_list(p, op, &at));
  }
  skip_ws(p);
  if (!eat(p, ':')) return perr(p, "expected ':' and the type of %%%s, found %s", name,
                                found(p, buf, sizeof buf));
  if (kind == TP_NODE_GET_ATTR && peek_word(p, "graph")) { /* a subgraph reference */
    p->c += 5;
    memset(&d, 0, sizeof d);
    d.ndim = TP_DESC_GRAPH;
  } else {
    TP_TRY(type_tok(p, &d));
  }
  TP_TRY(add(p, kind, name, op < 0 ? (tp_op)0 : (tp_op)op, &at, &d, &idx));
  if (target) {
    tp_node *nd = &p->g->nodes[idx];
    char *t = tp_strdup(target);
    if (!t) return tp_fail(TP_ERR_OUT_OF_MEMORY, "graph text line %d: out of memory", p->line);
    tp_free(nd->target);
    nd->target = t;
  }
  TP_TRY(meta(p, idx));
  return end_of_line(p);
}

static tp_status output(parser *p) {
  tp_attrs at;
  tp_desc d;
  int idx;
  size_t n;
  tp_attrs_init(&at);
  memset(&d, 0, sizeof d);
  ident(p, &n); /* "output" */
  if (p->output_line)
    return perr(p, "a second output statement (the first is on line %d)", p->output_line);
  TP_TRY(arg_list(p, -1, &at));
  TP_TRY(add(p, TP_NODE_OUTPUT, tp_graph_find(p->g, "output") < 0 ? "output" : NULL, (tp_op)0,
             &at, &d, &idx));
  p->output_line = p->line;
  TP_TRY(meta(p, idx));
  return end_of_line(p);
}

static int b64val(int ch) {
  if (ch >= 'A' && ch <= 'Z') return ch - 'A';
  if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
  if (ch >= '0' && ch <= '9') return ch - '0' + 52;
  if (ch == '+') return 62;
  if (ch == '/') return 63;
  return -1;
}

/* Decode s[0..n) into out (at least n/4*3 bytes); -1 on bad text. */
static long long b64_decode(const char *s, size_t n, unsigned char *out, size_t *bad_at) {
  size_t j = 0;
  if (n % 4) {
    *bad_at = n;
    return -1;
  }
  for (size_t i = 0; i < n; i += 4) {
    int v[4], pad = 0;
    for (int k = 0; k < 4; k++) {
      unsigned char ch = (unsigned char)s[i + k];
      if (ch == '=' && i + 4 == n && k >= 2 && (k == 3 || s[i + 3] == '=')) {
        v[k] = 0;
        pad++;
        continue;
      }
      v[k] = b64val(ch);
      if (v[k] < 0 || pad) {
        *bad_at = i + (size_t)k;
        return -1;
      }
    }
    uint32_t x = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
    out[j++] = (unsigned char)(x >> 16);
    if (pad < 2) out[j++] = (unsigned char)(x >> 8);
    if (pad < 1) out[j++] = (unsigned char)x;
  }
  return (long long)j;
}

static void swap_to_host(unsigned char *d, size_t n, size_t isz) {
  const uint16_t one = 1;
  if (*(const unsigned char *)&one == 1 || isz < 2) return;
  for (size_t k = 0; k + isz <= n; k += isz)
    for (size_t i = 0; i < isz / 2; i++) {
      unsigned char c = d[k + i];
      d[k + i] = d[k + isz - 1 - i];
      d[k + isz - 1 - i] = c;
    }
}

/* data %name TYPE base64 */
static tp_status data(parser *p) {
  char name[NAME_MAX_LEN + 1], ta[96], tb[96];
  tp_desc d;
  size_t n;
  unsigned char *bytes = NULL;
  tp_tensor *t = NULL;
  tp_status s;
  ident(p, &n); /* "data" */
  TP_TRY(node_ref(p, name));
  int idx = tp_graph_find(p->g, name);
  if (idx < 0) return perr(p, "data for %%%s, which is not defined above", name);
  tp_node *nd = &p->g->nodes[idx];
  if (nd->kind != TP_NODE_GET_ATTR)
    return perr(p, "data for %%%s, which is a %s, not a get_attr", name,
                tp_node_kind_name(nd->kind));
  if (nd->val) return perr(p, "data for %%%s given twice", name);
  TP_TRY(type_tok(p, &d));
  if (d.dtype != nd->desc.dtype || d.ndim != nd->desc.ndim ||
      memcmp(d.shape, nd->desc.shape, sizeof(int64_t) * (size_t)d.ndim) != 0) {
    tp_buf a = { 0 }, b = { 0 };
    tp_text_put_type(&a, d.dtype, d.ndim, d.shape);
    tp_text_put_type(&b, nd->desc.dtype, nd->desc.ndim, nd->desc.shape);
    snprintf(ta, sizeof ta, "%s", a.p ? a.p : "?");
    snprintf(tb, sizeof tb, "%s", b.p ? b.p : "?");
    tp_free(a.p);
    tp_free(b.p);
    return perr(p, "data for %%%s is %s but the node is %s", name, ta, tb);
  }
  size_t isz = tp_dtype_size(d.dtype);
  uint64_t want = isz;
  for (int i = 0; i < d.ndim; i++) {
    if (d.shape[i] && want > UINT64_MAX / (uint64_t)d.shape[i]) {
      want = UINT64_MAX;
      break;
    }
    want *= (uint64_t)d.shape[i];
  }
  skip_ws(p);
  const char *b64 = p->c;
  while (p->c < p->le && *p->c != ' ' && *p->c != '\t') p->c++;
  size_t blen = (size_t)(p->c - b64);
  TP_TRY(end_of_line(p));
  size_t bad = 0;
  bytes = tp_alloc(blen / 4 * 3 + 1);
  if (!bytes) return tp_fail(TP_ERR_OUT_OF_MEMORY, "graph text line %d: out of memory", p->line);
  long long got = b64_decode(b64, blen, bytes, &bad);
  if (got < 0) {
    s = bad == blen ? perr(p, "base64 data of %%%s has length %zu, not a multiple of 4", name, blen)
                    : perr(p, "bad base64 character '%c' at offset %zu in the data of %%%s",
                           b64[bad] >= 0x20 && b64[bad] < 0x7f ? b64[bad] : '?', bad, name);
    goto fail;
  }
  if ((uint64_t)got != want) {
    s = perr(p, "data for %%%s has %lld bytes, expected %llu", name, got,
             (unsigned long long)want);
    goto fail;
  }
  if (d.dtype == TP_BOOL)
    for (long long i = 0; i < got; i++)
      if (bytes[i] > 1) {
        s = perr(p, "data for %%%s: bool element %lld is %u (expected 0 or 1)", name, i, bytes[i]);
        goto fail;
      }
  swap_to_host(bytes, (size_t)got, isz);
  s = tp_tensor_new(d.dtype, d.ndim, d.shape, bytes, &t);
  if (s != TP_OK) {
    s = wrap(p, s);
    goto fail;
  }
  tp_graph_set_val(p->g, idx, t);
  tp_tensor_release(t);
  tp_free(bytes);
  return TP_OK;
fail:
  tp_free(bytes);
  return s;
}

static tp_status statement(parser *p) {
  skip_ws(p);
  if (looking_at(p, '%')) return define(p);
  if (peek_word(p, "output")) return output(p);
  if (peek_word(p, "data")) return data(p);
  return expected(p, "'%name = ...', 'output(...)' or 'data %name ...'");
}

static void line_reset(parser *p) {
  for (int i = 0; i < p->nstrs; i++) tp_free(p->strs[i]);
  p->nstrs = 0;
  p->nargs = 0;
}

static tp_status parse_body(const char *text, size_t len, int need_header, int line0, int depth,
                            tp_graph **out);

/* subgraph "name" {   ...lines...   }  : the block is parsed as a graph of
 * its own (no header) and attached to p->g. *cur moves past the block. */
static tp_status subgraph_block(parser *p, const char **cur, const char *end, int depth) {
  char *name = NULL;
  p->c += 8; /* "subgraph" */
  TP_TRY(quoted(p, &name));
  if (!eat(p, '{')) return expected(p, "'{' after the subgraph name");
  TP_TRY(end_of_line(p));
  if (depth >= 8) return perr(p, "subgraphs nested deeper than 8");
  const char *body = *cur, *c = *cur;
  int level = 1, lines = 0, start_line = p->line;
  while (c < end) {
    const char *nl = memchr(c, '\n', (size_t)(end - c));
    const char *le = nl ? nl : end, *a = c;
    while (a < le && (*a == ' ' || *a == '\t')) a++;
    const char *z = le;
    while (z > a && (z[-1] == ' ' || z[-1] == '\t' || z[-1] == '\r')) z--;
    lines++;
    if (z - a >= 8 && !memcmp(a, "subgraph", 8) && z[-1] == '{') level++;
    if (z - a == 1 && *a == '}' && --level == 0) {
      tp_graph *sub = NULL;
      tp_status s = parse_body(body, (size_t)(a - body), 0, start_line, depth + 1, &sub);
      if (s) return s;
      char nm[256];
      snprintf(nm, sizeof nm, "%s", name);
      p->line += lines;
      *cur = nl ? nl + 1 : end;
      return wrap(p, tp_graph_add_subgraph(p->g, nm, sub));
    }
    c = nl ? nl + 1 : end;
  }
  return perr(p, "subgraph \"%s\" has no closing '}'", name);
}

static tp_status parse_body(const char *text, size_t len, int need_header, int line0, int depth,
                            tp_graph **out) {
  parser p;
  tp_status s = TP_OK;
  int header = !need_header;
  memset(&p, 0, sizeof p);
  p.line = line0;
  *out = NULL;
  TP_TRY(tp_graph_new(&p.g));
  const char *cur = text, *end = text + len;
  while (cur < end) {
    const char *nl = memchr(cur, '\n', (size_t)(end - cur));
    const char *le = nl ? nl : end;
    p.line++;
    p.c = cur;
    p.le = le;
    cur = nl ? nl + 1 : end;
    if (p.le > p.c && p.le[-1] == '\r') p.le--;
    skip_ws(&p);
    if (p.c == p.le || *p.c == '#') continue;
    if (!header) {
      size_t n;
      const char *w = ident(&p, &n);
      if (!word_is(w, n, "tpgraph")) {
        p.c = w;
        s = expected(&p, "the header 'tpgraph v1'");
        goto fail;
      }
      skip_ws(&p);
      if (!peek_word(&p, "v1")) {
        char buf[96];
        s = perr(&p, "unsupported version %s (this reader knows tpgraph v1)",
                 found(&p, buf, sizeof buf));
        goto fail;
      }
      p.c += 2;
      if ((s = end_of_line(&p)) != TP_OK) goto fail;
      header = 1;
      continue;
    }
    if (peek_word(&p, "subgraph")) s = subgraph_block(&p, &cur, end, depth);
    else s = statement(&p);
    line_reset(&p);
    if (s != TP_OK) goto fail;
  }
  if (!header) {
    s = tp_fail(TP_ERR_PARSE, "graph text: empty (expected the header 'tpgraph v1')");
    goto fail;
  }
  if (!p.output_line) {
    s = tp_fail(TP_ERR_PARSE, "graph text line %d: end of %s without an output(...) statement",
                p.line, depth ? "a subgraph" : "text");
    goto fail;
  }
  s = tp_graph_verify(p.g);
  if (s != TP_OK) {
    if (s != TP_ERR_OUT_OF_MEMORY && s != TP_ERR_PARSE) {
      char msg[400];
      snprintf(msg, sizeof msg, "%s", tp_last_error());
      s = tp_fail(TP_ERR_PARSE, "graph text: %s", msg);
    }
    goto fail;
  }
  tp_free(p.args);
  *out = p.g;
  return TP_OK;
fail:
  line_reset(&p);
  tp_free(p.args);
  tp_graph_free(p.g);
  return s;
}

tp_status tp_graph_parse(const char *text, size_t len, tp_graph **out) {
  if (!out) return tp_fail(TP_ERR_INVALID_ARG, "graph parse: out is NULL");
  *out = NULL;
  if (!text && len) return tp_fail(TP_ERR_INVALID_ARG, "graph parse: text is NULL");
  return parse_body(text, len, 1, 0, 0, out);
}
