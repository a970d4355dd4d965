/* writer.c - the WebAssembly binary writer (see writer.h). Sections are
 * written with 5-byte placeholder sizes and patched when their end is known
 * (wabt), then shrunk to minimal LEB128; every write that matters carries a
 * label for the annotated dump. Operand types are checked at emit time with
 * the spec's validation algorithm (an operand stack and a control stack). */
#include "writer.h"
#include "../../core/internal.h"
#include <stdio.h>
#include <stdlib.h>

/* ---- the opcode table ---- */
static const tp_wasm_opinfo op_table[TP_WASM_OP_COUNT] = {
#define WASM_OP(prefix, code, id, name, imm, sig) {prefix, code, name, TP_WASM_IMM_##imm, sig},
#include "opcodes.def"
#undef WASM_OP
};

const tp_wasm_opinfo *tp_wasm_op_info(tp_wasm_op op) {
  return (unsigned)op < TP_WASM_OP_COUNT ? &op_table[op] : NULL;
}
const char *tp_wasm_op_name(tp_wasm_op op) {
  return (unsigned)op < TP_WASM_OP_COUNT ? op_table[op].name : "?";
}
int tp_wasm_checks_enabled(void) { return TP_WASM_CHECKS; }

const char *tp_wasm_valtype_name(uint8_t t) {
  switch (t) {
  case TP_WASM_I32: return "i32";
  case TP_WASM_I64: return "i64";
  case TP_WASM_F32: return "f32";
  case TP_WASM_F64: return "f64";
  case TP_WASM_V128: return "v128";
  case 0: return "any"; /* unknown: below an unreachable instruction */
  default: return "?";
  }
}
static int valtype_ok(uint8_t t) { return t >= TP_WASM_V128 && t <= TP_WASM_I32; }

/* ---- buffers and LEB128 ---- */
void tp_wasm_buf_free(tp_wasm_buf *b) { tp_buf_free(b); }

/* The status of b after a write: a failed write (out of memory) sets b->oom
 * and every later write does nothing, so one check at the end suffices. */
static tp_status buf_status(const tp_wasm_buf *b) { return b->oom ? TP_ERR_OUT_OF_MEMORY : TP_OK; }

tp_status tp_wasm_write_bytes(tp_wasm_buf *b, const void *p, size_t n) {
  tp_buf_putn(b, p, n);
  return buf_status(b);
}

tp_status tp_wasm_write_byte(tp_wasm_buf *b, uint8_t v) {
  tp_buf_putn(b, &v, 1);
  return buf_status(b);
}

/* Minimal unsigned LEB128 of v into out (10 bytes suffice); its length. */
static size_t uleb_encode(uint8_t *out, uint64_t v) {
  size_t k = 0;
  do {
    uint8_t byte = v & 0x7f;
    v >>= 7;
    if (v) byte |= 0x80;
    out[k++] = byte;
  } while (v);
  return k;
}

tp_status tp_wasm_write_uleb(tp_wasm_buf *b, uint64_t v) {
  uint8_t tmp[10];
  return tp_wasm_write_bytes(b, tmp, uleb_encode(tmp, v));
}

tp_status tp_wasm_write_sleb(tp_wasm_buf *b, int64_t v) {
  uint8_t tmp[10];
  size_t k = 0;
  for (;;) {
    uint8_t byte = (uint8_t)((uint64_t)v & 0x7f);
    v = v < 0 ? ~(~v >> 7) : v >> 7; /* arithmetic shift, portably */
    int done = (v == 0 && !(byte & 0x40)) || (v == -1 && (byte & 0x40));
    tmp[k++] = done ? byte : (uint8_t)(byte | 0x80);
    if (done) return tp_wasm_write_bytes(b, tmp, k);
  }
}

tp_status tp_wasm_write_uleb_padded(tp_wasm_buf *b, uint64_t v, int width) {
  if (width < 1 || width > 10 || (width < 10 && v >> (7 * width)))
    return tp_fail(TP_ERR_INTERNAL, "wasm: %llu does not fit a %d-byte LEB128",
                   (unsigned long long)v, width);
  uint8_t tmp[10];
  for (int i = 0; i < width; i++) {
    uint8_t byte = v & 0x7f;
    v >>= 7;
    tmp[i] = i < width - 1 ? (uint8_t)(byte | 0x80) : byte;
  }
  return tp_wasm_write_bytes(b, tmp, (size_t)width);
}

size_t tp_wasm_read_uleb(const uint8_t *p, size_t n, uint64_t *v_out) {
  uint64_t v = 0;
  for (size_t i = 0; i < n && i < 10; i++) {
    v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
    if (!(p[i] & 0x80)) {
      *v_out = v;
      return i + 1;
    }
  }
  return 0;
}

size_t tp_wasm_read_sleb(const uint8_t *p, size_t n, int64_t *v_out) {
  uint64_t v = 0;
  for (size_t i = 0; i < n && i < 10; i++) {
    v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
    if (!(p[i] & 0x80)) {
      unsigned shift = 7 * (unsigned)(i + 1);
      if (shift < 64 && (p[i] & 0x40)) v |= ~(uint64_t)0 << shift;
      *v_out = (int64_t)v;
      return i + 1;
    }
  }
  return 0;
}

static tp_status write_name(tp_wasm_buf *b, const char *s) {
  size_t n = strlen(s);
  TP_TRY(tp_wasm_write_uleb(b, n));
  return tp_wasm_write_bytes(b, s, n);
}

/* Append printf-style text (no NUL counted in the length). */
static tp_status appendv(tp_wasm_buf *b, const char *fmt, va_list ap) {
  tp_buf_vprintf(b, fmt, ap);
  return buf_status(b);
}
static tp_status appendf(tp_wasm_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static tp_status appendf(tp_wasm_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tp_status s = appendv(b, fmt, ap);
  va_end(ap);
  return s;
}

/* ---- module state ---- */
typedef struct ftype {
  uint32_t np, nr;
  uint8_t *vals; /* params then results */
} ftype;

enum { KIND_FUNC = 0, KIND_TABLE = 1, KIND_MEMORY = 2, KIND_GLOBAL = 3 };

typedef struct import_ {
  char *module, *name;
  uint8_t kind;
  uint32_t type; /* functions */
  tp_wasm_limits limits;
} import_;

typedef struct export_ {
  char *name;
  uint8_t kind;
  uint32_t index;
} export_;

typedef struct global_ {
  uint8_t type;
  bool mut;
  uint64_t bits;
} global_;

/* A label kept while writing: offset, and text as an offset in a pool. */
typedef struct plabel {
  size_t offset, text;
} plabel;

typedef struct ctrl {
  tp_wasm_op op;      /* BLOCK, LOOP, IF, ELSE, or END for the function frame */
  int64_t bt;         /* block type */
  uint32_t height;    /* operand stack height at entry (after params) */
  bool unreachable;
  size_t at;          /* code offset of the opening instruction */
} ctrl;

struct tp_wasm_func {
  tp_wasm_module *m;
  uint32_t index, type;
  char *name;
  tp_wasm_buf code;
  uint8_t *ltypes; /* params, then declared locals */
  uint32_t nlocals, nparams;
  int lcap;
  plabel *labels;
  size_t nlabels;
  int labcap;
  tp_wasm_buf pool; /* label texts */
  ctrl *ctrl;
  uint32_t nctrl;
  int ctrlcap;
  uint8_t *vals; /* operand types (TP_WASM_CHECKS); 0 = unknown */
  uint32_t nvals;
  int vcap;
  tp_status status;
  bool ended;
  char err[512];
};

struct tp_wasm_module {
  ftype *types;
  uint32_t ntypes;
  int typecap;
  import_ *imports;
  uint32_t nimports, nimport_funcs;
  int impcap;
  export_ *exports;
  uint32_t nexports;
  int expcap;
  global_ *globals;
  uint32_t nglobals;
  int globcap;
  tp_wasm_func **funcs; /* defined functions */
  uint32_t nfuncs;
  int funccap;
  bool has_memory, memory_imported, has_table;
  tp_wasm_limits memory;
  /* output of finish */
  tp_wasm_buf out;
  plabel *labels;
  size_t nlabels;
  int labcap;
  tp_wasm_buf pool;
  tp_wasm_label *pub; /* labels with text pointers, for callers */
};

/* Room for one more element after the n in arr. */
#define GROW(arr, cap, n) TP_ARRAY_RESERVE(arr, cap, (int64_t)(n) + 1)

tp_status tp_wasm_module_init(tp_wasm_module **m_out) {
  *m_out = NULL;
  tp_wasm_module *m = tp_alloc(sizeof *m);
  if (!m) return TP_ERR_OUT_OF_MEMORY;
  memset(m, 0, sizeof *m);
  *m_out = m;
  return TP_OK;
}

static void func_free(tp_wasm_func *f) {
  if (!f) return;
  tp_free(f->name);
  tp_wasm_buf_free(&f->code);
  tp_free(f->ltypes);
  tp_free(f->labels);
  tp_wasm_buf_free(&f->pool);
  tp_free(f->ctrl);
  tp_free(f->vals);
  tp_free(f);
}

void tp_wasm_module_free(tp_wasm_module *m) {
  if (!m) return;
  for (uint32_t i = 0; i < m->ntypes; i++) tp_free(m->types[i].vals);
  tp_free(m->types);
  for (uint32_t i = 0; i < m->nimports; i++) {
    tp_free(m->imports[i].module);
    tp_free(m->imports[i].name);
  }
  tp_free(m->imports);
  for (uint32_t i = 0; i < m->nexports; i++) tp_free(m->exports[i].name);
  tp_free(m->exports);
  tp_free(m->globals);
  for (uint32_t i = 0; i < m->nfuncs; i++) func_free(m->funcs[i]);
  tp_free(m->funcs);
  tp_wasm_buf_free(&m->out);
  tp_free(m->labels);
  tp_wasm_buf_free(&m->pool);
  tp_free(m->pub);
  tp_free(m);
}

static void type_str(const uint8_t *v, uint32_t n, char *buf, size_t cap) {
  size_t k = 0;
  buf[0] = 0;
  for (uint32_t i = 0; i < n && k + 8 < cap; i++)
    k += (size_t)snprintf(buf + k, cap - k, "%s%s", i ? ", " : "", tp_wasm_valtype_name(v[i]));
}

tp_status tp_wasm_module_add_type(tp_wasm_module *m, uint32_t nparams, const uint8_t *params,
                                  uint32_t nresults, const uint8_t *results,
                                  uint32_t *type_index_out) {
  for (uint32_t i = 0; i < nparams; i++)
    if (!valtype_ok(params[i]))
      return tp_fail(TP_ERR_INVALID_ARG, "wasm type: parameter %u has no value type (0x%02x)", i,
                     params[i]);
  for (uint32_t i = 0; i < nresults; i++)
    if (!valtype_ok(results[i]))
      return tp_fail(TP_ERR_INVALID_ARG, "wasm type: result %u has no value type (0x%02x)", i,
                     results[i]);
  for (uint32_t t = 0; t < m->ntypes; t++) {
    ftype *ft = &m->types[t];
    if (ft->np == nparams && ft->nr == nresults &&
        (!nparams || !memcmp(ft->vals, params, nparams)) &&
        (!nresults || !memcmp(ft->vals + nparams, results, nresults))) {
      *type_index_out = t;
      return TP_OK;
    }
  }
  TP_TRY(GROW(m->types, m->typecap, m->ntypes));
  uint8_t *v = tp_alloc(nparams + nresults);
  if (!v) return TP_ERR_OUT_OF_MEMORY;
  if (nparams) memcpy(v, params, nparams);
  if (nresults) memcpy(v + nparams, results, nresults);
  m->types[m->ntypes] = (ftype){nparams, nresults, v};
  *type_index_out = m->ntypes++;
  return TP_OK;
}

static tp_status add_import(tp_wasm_module *m, const char *mod, const char *name, uint8_t kind,
                            uint32_t type, tp_wasm_limits lim) {
  TP_TRY(GROW(m->imports, m->impcap, m->nimports));
  char *a = tp_strdup(mod), *b = a ? tp_strdup(name) : NULL;
  if (!b) {
    tp_free(a);
    return TP_ERR_OUT_OF_MEMORY;
  }
  m->imports[m->nimports++] = (import_){a, b, kind, type, lim};
  return TP_OK;
}

tp_status tp_wasm_module_import_func(tp_wasm_module *m, const char *module, const char *name,
                                     uint32_t type_index, uint32_t *func_index_out) {
  if (m->nfuncs)
    return tp_fail(TP_ERR_INVALID_ARG,
                   "wasm import %s.%s: function imports must come before the first function",
                   module, name);
  if (type_index >= m->ntypes)
    return tp_fail(TP_ERR_INVALID_ARG, "wasm import %s.%s: type %u does not exist (%u types)",
                   module, name, type_index, m->ntypes);
  TP_TRY(add_import(m, module, name, KIND_FUNC, type_index, (tp_wasm_limits){0}));
  *func_index_out = m->nimport_funcs++;
  return TP_OK;
}

static tp_status check_limits(const char *what, tp_wasm_limits l, uint64_t cap) {
  if (l.min > cap || (l.has_max && (l.max > cap || l.max < l.min)))
    return tp_fail(TP_ERR_INVALID_ARG, "wasm %s: bad limits (min %u, max %u, at most %llu)", what,
                   l.min, l.max, (unsigned long long)cap);
  if (l.shared && !l.has_max)
    return tp_fail(TP_ERR_INVALID_ARG, "wasm %s: a shared memory needs a maximum", what);
  return TP_OK;
}

tp_status tp_wasm_module_import_memory(tp_wasm_module *m, const char *module, const char *name,
                                       tp_wasm_limits limits) {
  if (m->has_memory) return tp_fail(TP_ERR_INVALID_ARG, "wasm: the module already has a memory");
  TP_TRY(check_limits("memory", limits, 65536));
  TP_TRY(add_import(m, module, name, KIND_MEMORY, 0, limits));
  m->has_memory = m->memory_imported = true;
  m->memory = limits;
  return TP_OK;
}

tp_status tp_wasm_module_define_memory(tp_wasm_module *m, tp_wasm_limits limits) {
  if (m->has_memory) return tp_fail(TP_ERR_INVALID_ARG, "wasm: the module already has a memory");
  TP_TRY(check_limits("memory", limits, 65536));
  m->has_memory = true;
  m->memory = limits;
  return TP_OK;
}

tp_status tp_wasm_module_import_table(tp_wasm_module *m, const char *module, const char *name,
                                      tp_wasm_limits limits) {
  if (m->has_table) return tp_fail(TP_ERR_INVALID_ARG, "wasm: the module already has a table");
  if (limits.shared) return tp_fail(TP_ERR_INVALID_ARG, "wasm: a table cannot be shared");
  TP_TRY(check_limits("table", limits, UINT32_MAX));
  TP_TRY(add_import(m, module, name, KIND_TABLE, 0, limits));
  m->has_table = true;
  return TP_OK;
}

tp_status tp_wasm_module_add_global(tp_wasm_module *m, uint8_t type, bool mutable_,
                                    uint64_t bits, uint32_t *global_index_out) {
  if (!valtype_ok(type) || type == TP_WASM_V128)
    return tp_fail(TP_ERR_INVALID_ARG, "wasm global: type 0x%02x is not i32, i64, f32 or f64",
                   type);
  TP_TRY(GROW(m->globals, m->globcap, m->nglobals));
  m->globals[m->nglobals] = (global_){type, mutable_, bits};
  *global_index_out = m->nglobals++;
  return TP_OK;
}

static tp_status add_export(tp_wasm_module *m, const char *name, uint8_t kind, uint32_t index) {
  for (uint32_t i = 0; i < m->nexports; i++)
    if (!strcmp(m->exports[i].name, name))
      return tp_fail(TP_ERR_INVALID_ARG, "wasm export '%s': the name is already exported", name);
  TP_TRY(GROW(m->exports, m->expcap, m->nexports));
  char *s = tp_strdup(name);
  if (!s) return TP_ERR_OUT_OF_MEMORY;
  m->exports[m->nexports++] = (export_){s, kind, index};
  return TP_OK;
}

tp_status tp_wasm_module_export_func(tp_wasm_module *m, const char *name, uint32_t func_index) {
  if (func_index >= m->nimport_funcs + m->nfuncs)
    return tp_fail(TP_ERR_INVALID_ARG, "wasm export '%s': function %u does not exist (%u functions)",
                   name, func_index, m->nimport_funcs + m->nfuncs);
  return add_export(m, name, KIND_FUNC, func_index);
}

tp_status tp_wasm_module_export_memory(tp_wasm_module *m, const char *name) {
  if (!m->has_memory)
    return tp_fail(TP_ERR_INVALID_ARG, "wasm export '%s': the module has no memory", name);
  return add_export(m, name, KIND_MEMORY, 0);
}

/* The type of function index fi (imports first), or NULL. */
static const ftype *func_type(const tp_wasm_module *m, uint32_t fi) {
  if (fi < m->nimport_funcs) {
    for (uint32_t i = 0, k = 0; i < m->nimports; i++)
      if (m->imports[i].kind == KIND_FUNC && k++ == fi) return &m->types[m->imports[i].type];
    return NULL;
  }
  fi -= m->nimport_funcs;
  return fi < m->nfuncs ? &m->types[m->funcs[fi]->type] : NULL;
}

/* ---- function bodies: failure ---- */
static void fname(const tp_wasm_func *f, char *buf, size_t cap) {
  if (f->name)
    snprintf(buf, cap, "'%s' (#%u)", f->name, f->index);
  else
    snprintf(buf, cap, "#%u", f->index);
}

/* Record the first failure of f: "wasm function 'NAME' (#i), code offset N: msg". */
static tp_status ffail(tp_wasm_func *f, tp_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static tp_status ffail(tp_wasm_func *f, tp_status s, const char *fmt, ...) {
  char msg[400], nm[160];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fname(f, nm, sizeof nm);
  tp_fail(s, "wasm function %s, code offset %zu: %s", nm, f->code.n, msg);
  if (f->status == TP_OK) {
    f->status = s;
    snprintf(f->err, sizeof f->err, "%s", tp_last_error());
  }
  return s;
}

/* A failure already recorded by tp_fail (allocation): keep it on f. */
static tp_status fsticky(tp_wasm_func *f, tp_status s) {
  if (s != TP_OK && f->status == TP_OK) {
    f->status = s;
    snprintf(f->err, sizeof f->err, "%s", tp_last_error());
  }
  return s;
}

tp_status tp_wasm_func_status(const tp_wasm_func *f) { return f->status; }
const char *tp_wasm_func_error(const tp_wasm_func *f) { return f->err; }

/* ---- function bodies: the operand and control stacks ---- */
static ctrl *top_ctrl(tp_wasm_func *f) { return &f->ctrl[f->nctrl - 1]; }

#if TP_WASM_CHECKS
/* Params and results of a block type (one value type uses *one). */
static void bt_types(const tp_wasm_module *m, int64_t bt, uint8_t *one, const uint8_t **p,
                     uint32_t *np, const uint8_t **r, uint32_t *nr) {
  *np = *nr = 0;
  *p = *r = NULL;
  if (bt == TP_WASM_BT_VOID) return;
  if (bt < 0) {
    *one = (uint8_t)(bt + 0x80);
    *r = one;
    *nr = 1;
    return;
  }
  const ftype *t = &m->types[bt];
  *p = t->vals;
  *np = t->np;
  *r = t->vals + t->np;
  *nr = t->nr;
}
#endif

#if TP_WASM_CHECKS
/* The types a branch to frame c carries: a loop's params, else results. */
static void label_types(tp_wasm_func *f, const ctrl *c, uint8_t *one, const uint8_t **t,
                        uint32_t *n) {
  const uint8_t *p, *r;
  uint32_t np, nr;
  if (c->op == TP_WASM_OP_END) { /* the function frame */
    const ftype *ft = &f->m->types[f->type];
    *t = ft->vals + ft->np;
    *n = ft->nr;
    return;
  }
  bt_types(f->m, c->bt, one, &p, &np, &r, &nr);
  if (c->op == TP_WASM_OP_LOOP) {
    *t = p;
    *n = np;
  } else {
    *t = r;
    *n = nr;
  }
}
#endif

static const char *ctrl_name(const ctrl *c) {
  switch (c->op) {
  case TP_WASM_OP_BLOCK: return "block";
  case TP_WASM_OP_LOOP: return "loop";
  case TP_WASM_OP_IF: return "if";
  case TP_WASM_OP_ELSE: return "else";
  default: return "function";
  }
}

#if TP_WASM_CHECKS
static void list_str(const uint8_t *v, uint32_t n, char *buf, size_t cap) {
  if (!n)
    snprintf(buf, cap, "nothing");
  else
    type_str(v, n, buf, cap);
}
#endif

static tp_status push_ctrl(tp_wasm_func *f, tp_wasm_op op, int64_t bt, uint32_t height) {
  tp_status s = GROW(f->ctrl, f->ctrlcap, f->nctrl);
  if (s) return fsticky(f, s);
  f->ctrl[f->nctrl++] = (ctrl){op, bt, height, false, f->code.n};
  return TP_OK;
}

#if TP_WASM_CHECKS
static tp_status push_vals(tp_wasm_func *f, const uint8_t *t, uint32_t n) {
  if (TP_ARRAY_RESERVE(f->vals, f->vcap, (int64_t)f->nvals + n)) return fsticky(f, TP_ERR_OUT_OF_MEMORY);
  if (n) memcpy(f->vals + f->nvals, t, n);
  f->nvals += n;
  return TP_OK;
}

/* Pop n values of types t (bottom first) for instruction `what`. exact: the
 * frame must hold exactly these (end, else, function end). */
static tp_status pop_vals(tp_wasm_func *f, const char *what, const uint8_t *t, uint32_t n,
                          bool exact) {
  ctrl *c = top_ctrl(f);
  uint32_t avail = f->nvals - c->height;
  bool bad = exact ? (avail > n || (avail < n && !c->unreachable))
                   : (avail < n && !c->unreachable);
  for (uint32_t i = 0; i < n && !bad; i++) {
    if (i >= avail) break; /* unknown values below an unreachable */
    uint8_t have = f->vals[f->nvals - 1 - i], want = t[n - 1 - i];
    if (have && want && have != want) bad = true;
  }
  if (bad) {
    char want_s[160], have_s[160];
    uint32_t show = exact ? avail : (avail < n ? avail : n);
    list_str(t, n, want_s, sizeof want_s);
    if (show > 12) {
      type_str(f->vals + f->nvals - 12, 12, have_s + 5, sizeof have_s - 5);
      memcpy(have_s, "..., ", 5);
    } else {
      list_str(f->vals + f->nvals - show, show, have_s, sizeof have_s);
    }
    return ffail(f, TP_ERR_INTERNAL, "%s expects %s on the stack, found %s", what, want_s,
                 have_s);
  }
  f->nvals -= avail < n ? avail : n;
  return TP_OK;
}

static tp_status pop1(tp_wasm_func *f, const char *what, uint8_t t) {
  return pop_vals(f, what, &t, 1, false);
}

/* Pop one value of any type into *t (0 if unknown). */
static tp_status pop_any(tp_wasm_func *f, const char *what, uint8_t *t) {
  ctrl *c = top_ctrl(f);
  if (f->nvals == c->height) {
    if (c->unreachable) {
      *t = 0;
      return TP_OK;
    }
    return ffail(f, TP_ERR_INTERNAL, "%s expects a value on the stack, found nothing", what);
  }
  *t = f->vals[--f->nvals];
  return TP_OK;
}

static void set_unreachable(tp_wasm_func *f) {
  ctrl *c = top_ctrl(f);
  f->nvals = c->height;
  c->unreachable = true;
}

static const uint8_t sig_code[128] = {
    ['i'] = TP_WASM_I32, ['I'] = TP_WASM_I64, ['f'] = TP_WASM_F32,
    ['F'] = TP_WASM_F64, ['v'] = TP_WASM_V128,
};

/* Check a fixed signature "ab:c" from the table. */
static tp_status check_sig(tp_wasm_func *f, const tp_wasm_opinfo *info) {
  uint8_t in[4], out[4];
  uint32_t nin = 0, nout = 0;
  const char *s = info->sig;
  for (; *s && *s != ':'; s++) in[nin++] = sig_code[(unsigned char)*s & 127];
  if (*s == ':')
    for (s++; *s; s++) out[nout++] = sig_code[(unsigned char)*s & 127];
  TP_TRY(pop_vals(f, info->name, in, nin, false));
  return push_vals(f, out, nout);
}
#define CHECK(expr) TP_TRY(expr)
#else
#define CHECK(expr) ((void)0)
#endif

/* ---- function bodies: emitting ---- */
tp_status tp_wasm_func_begin(tp_wasm_module *m, uint32_t type_index, const char *name,
                             tp_wasm_func **f_out, uint32_t *func_index_out) {
  *f_out = NULL;
  if (type_index >= m->ntypes)
    return tp_fail(TP_ERR_INVALID_ARG, "wasm function %s: type %u does not exist (%u types)",
                   name ? name : "", type_index, m->ntypes);
  TP_TRY(GROW(m->funcs, m->funccap, m->nfuncs));
  tp_wasm_func *f = tp_alloc(sizeof *f);
  if (!f) return TP_ERR_OUT_OF_MEMORY;
  memset(f, 0, sizeof *f);
  f->m = m;
  f->type = type_index;
  f->index = m->nimport_funcs + m->nfuncs;
  const ftype *ft = &m->types[type_index];
  tp_status s = TP_OK;
  if (name && !(f->name = tp_strdup(name))) s = TP_ERR_OUT_OF_MEMORY;
  if (!s && ft->np) {
    f->ltypes = tp_alloc(ft->np);
    if (!f->ltypes) s = TP_ERR_OUT_OF_MEMORY;
    else memcpy(f->ltypes, ft->vals, ft->np);
    f->nlocals = f->lcap = f->nparams = ft->np;
  }
  if (!s) s = push_ctrl(f, TP_WASM_OP_END, 0, 0);
  if (s) {
    func_free(f);
    return s;
  }
  m->funcs[m->nfuncs++] = f;
  *f_out = f;
  if (func_index_out) *func_index_out = f->index;
  return TP_OK;
}

/* Common entry of every emit: sticky status, op range, immediate kind. */
#define IMM(k) (1u << TP_WASM_IMM_##k)
#define IMM_MEM (IMM(MEM1) | IMM(MEM2) | IMM(MEM4) | IMM(MEM8) | IMM(MEM16))
#define IMM_LANE (IMM(LANE2) | IMM(LANE4) | IMM(LANE8) | IMM(LANE16))
static tp_status enter(tp_wasm_func *f, tp_wasm_op op, const char *api, unsigned imm_mask) {
  if (f->status) return f->status;
  if (f->ended) return ffail(f, TP_ERR_INVALID_ARG, "%s after tp_wasm_func_end", api);
  if ((unsigned)op >= TP_WASM_OP_COUNT)
    return ffail(f, TP_ERR_INVALID_ARG, "%s: opcode %d out of range", api, (int)op);
  if (!(imm_mask & (1u << op_table[op].imm)))
    return ffail(f, TP_ERR_INVALID_ARG, "%s cannot emit %s (another immediate kind)", api,
                 op_table[op].name);
  return TP_OK;
}

static tp_status put_op(tp_wasm_func *f, tp_wasm_op op) {
  const tp_wasm_opinfo *in = &op_table[op];
  tp_status s;
  if (in->prefix) {
    s = tp_wasm_write_byte(&f->code, in->prefix);
    if (!s) s = tp_wasm_write_uleb(&f->code, in->code);
  } else {
    s = tp_wasm_write_byte(&f->code, (uint8_t)in->code);
  }
  return fsticky(f, s);
}

tp_status tp_wasm_func_add_locals(tp_wasm_func *f, uint32_t count, uint8_t type,
                                  uint32_t *first_index_out) {
  if (f->status) return f->status;
  if (f->ended) return ffail(f, TP_ERR_INVALID_ARG, "locals added after tp_wasm_func_end");
  if (!valtype_ok(type))
    return ffail(f, TP_ERR_INVALID_ARG, "local type 0x%02x is not a value type", type);
  if (count > 50000 - f->nlocals) /* engines' limit (V8: 50000 locals) */
    return ffail(f, TP_ERR_INVALID_ARG, "too many locals (%u + %u)", f->nlocals, count);
  if (TP_ARRAY_RESERVE(f->ltypes, f->lcap, (int64_t)f->nlocals + count))
    return fsticky(f, TP_ERR_OUT_OF_MEMORY);
  memset(f->ltypes + f->nlocals, type, count);
  if (first_index_out) *first_index_out = f->nlocals;
  f->nlocals += count;
  return TP_OK;
}

tp_status tp_wasm_func_label(tp_wasm_func *f, const char *fmt, ...) {
  if (f->status) return f->status;
  tp_status s;
  if (GROW(f->labels, f->labcap, f->nlabels)) return fsticky(f, TP_ERR_OUT_OF_MEMORY);
  size_t at = f->pool.n;
  va_list ap;
  va_start(ap, fmt);
  s = appendv(&f->pool, fmt, ap);
  va_end(ap);
  if (!s) s = tp_wasm_write_byte(&f->pool, 0);
  if (s) return fsticky(f, s);
  f->labels[f->nlabels++] = (plabel){f->code.n, at};
  return TP_OK;
}

tp_status tp_wasm_emit(tp_wasm_func *f, tp_wasm_op op) {
  TP_TRY(enter(f, op, "tp_wasm_emit", IMM(NONE) | IMM(MEMIDX)));
  const tp_wasm_opinfo *info = &op_table[op];
  if (info->imm == TP_WASM_IMM_MEMIDX && !f->m->has_memory)
    return ffail(f, TP_ERR_INVALID_ARG, "%s needs a memory: import or define one first",
                 info->name);
  ctrl *c = top_ctrl(f);
  switch (op) {
  case TP_WASM_OP_ELSE: {
    if (c->op != TP_WASM_OP_IF)
      return ffail(f, TP_ERR_INTERNAL, "else without an open if (innermost: %s)", ctrl_name(c));
#if TP_WASM_CHECKS
    uint8_t one;
    const uint8_t *p, *r;
    uint32_t np, nr;
    bt_types(f->m, c->bt, &one, &p, &np, &r, &nr);
    TP_TRY(pop_vals(f, "else", r, nr, true));
    TP_TRY(push_vals(f, p, np));
#endif
    c->op = TP_WASM_OP_ELSE;
    c->unreachable = false;
    break;
  }
  case TP_WASM_OP_END: {
    if (f->nctrl == 1)
      return ffail(f, TP_ERR_INTERNAL, "end with no open block (close the body with tp_wasm_func_end)");
#if TP_WASM_CHECKS
    uint8_t one;
    const uint8_t *p, *r;
    uint32_t np, nr;
    char what[32];
    bt_types(f->m, c->bt, &one, &p, &np, &r, &nr);
    snprintf(what, sizeof what, "end of %s", ctrl_name(c));
    if (c->op == TP_WASM_OP_IF && (np != nr || (np && memcmp(p, r, np))))
      return ffail(f, TP_ERR_INTERNAL,
                   "if without else must leave its params as its results (block type %lld)",
                   (long long)c->bt);
    TP_TRY(pop_vals(f, what, r, nr, true));
    f->nctrl--;
    TP_TRY(push_vals(f, r, nr));
#else
    f->nctrl--;
#endif
    break;
  }
  case TP_WASM_OP_RETURN: {
#if TP_WASM_CHECKS
    const ftype *ft = &f->m->types[f->type];
    TP_TRY(pop_vals(f, "return", ft->vals + ft->np, ft->nr, false));
    set_unreachable(f);
#endif
    break;
  }
  case TP_WASM_OP_UNREACHABLE:
    CHECK((set_unreachable(f), TP_OK));
    break;
  case TP_WASM_OP_DROP: {
#if TP_WASM_CHECKS
    uint8_t t;
    TP_TRY(pop_any(f, "drop", &t));
#endif
    break;
  }
  case TP_WASM_OP_SELECT: {
#if TP_WASM_CHECKS
    uint8_t a, b;
    TP_TRY(pop1(f, "select (condition)", TP_WASM_I32));
    TP_TRY(pop_any(f, "select", &a));
    TP_TRY(pop_any(f, "select", &b));
    if (a && b && a != b)
      return ffail(f, TP_ERR_INTERNAL, "select expects two values of one type, found %s, %s",
                   tp_wasm_valtype_name(b), tp_wasm_valtype_name(a));
    uint8_t t = a ? a : b;
    if (t) TP_TRY(push_vals(f, &t, 1));
    else TP_TRY(push_vals(f, (const uint8_t[]){0}, 1));
#endif
    break;
  }
  default:
    if (info->sig[0] == '*')
      return ffail(f, TP_ERR_INVALID_ARG, "tp_wasm_emit cannot emit %s", info->name);
    CHECK(check_sig(f, info));
    break;
  }
  TP_TRY(put_op(f, op));
  if (info->imm == TP_WASM_IMM_MEMIDX) TP_TRY(fsticky(f, tp_wasm_write_byte(&f->code, 0)));
  return TP_OK;
}

tp_status tp_wasm_emit_block(tp_wasm_func *f, tp_wasm_op op, int64_t bt) {
  TP_TRY(enter(f, op, "tp_wasm_emit_block", IMM(BLOCK)));
  const char *nm = op_table[op].name;
  if (!(bt == TP_WASM_BT_VOID || (bt < 0 && bt >= -5) || (bt >= 0 && bt < f->m->ntypes)))
    return ffail(f, TP_ERR_INVALID_ARG, "%s: bad block type %lld", nm, (long long)bt);
  uint32_t height = 0;
#if TP_WASM_CHECKS
  uint8_t one;
  const uint8_t *p, *r;
  uint32_t np, nr;
  bt_types(f->m, bt, &one, &p, &np, &r, &nr);
  if (op == TP_WASM_OP_IF) TP_TRY(pop1(f, "if (condition)", TP_WASM_I32));
  TP_TRY(pop_vals(f, nm, p, np, false));
  height = f->nvals;
#endif
  size_t at = f->code.n;
  TP_TRY(put_op(f, op));
  TP_TRY(fsticky(f, tp_wasm_write_sleb(&f->code, bt)));
  TP_TRY(push_ctrl(f, op, bt, height));
  top_ctrl(f)->at = at;
#if TP_WASM_CHECKS
  TP_TRY(push_vals(f, p, np));
#endif
  return TP_OK;
}

static tp_status check_depth(tp_wasm_func *f, const char *what, uint32_t depth) {
  if (depth >= f->nctrl)
    return ffail(f, TP_ERR_INVALID_ARG, "%s %u: only %u enclosing labels", what, depth, f->nctrl);
  return TP_OK;
}

tp_status tp_wasm_emit_br(tp_wasm_func *f, tp_wasm_op op, uint32_t depth) {
  TP_TRY(enter(f, op, "tp_wasm_emit_br", IMM(LABEL)));
  TP_TRY(check_depth(f, op_table[op].name, depth));
#if TP_WASM_CHECKS
  uint8_t one;
  const uint8_t *t;
  uint32_t n;
  label_types(f, &f->ctrl[f->nctrl - 1 - depth], &one, &t, &n);
  if (op == TP_WASM_OP_BR_IF) {
    TP_TRY(pop1(f, "br_if (condition)", TP_WASM_I32));
    TP_TRY(pop_vals(f, "br_if", t, n, false));
    TP_TRY(push_vals(f, t, n));
  } else {
    TP_TRY(pop_vals(f, "br", t, n, false));
    set_unreachable(f);
  }
#endif
  TP_TRY(put_op(f, op));
  return fsticky(f, tp_wasm_write_uleb(&f->code, depth));
}

tp_status tp_wasm_emit_br_table(tp_wasm_func *f, uint32_t n, const uint32_t *depths,
                                uint32_t default_depth) {
  TP_TRY(enter(f, TP_WASM_OP_BR_TABLE, "tp_wasm_emit_br_table", IMM(LABELS)));
  TP_TRY(check_depth(f, "br_table", default_depth));
  for (uint32_t i = 0; i < n; i++) TP_TRY(check_depth(f, "br_table", depths[i]));
#if TP_WASM_CHECKS
  uint8_t one, one2;
  const uint8_t *t, *t2;
  uint32_t nt, nt2;
  TP_TRY(pop1(f, "br_table (index)", TP_WASM_I32));
  label_types(f, &f->ctrl[f->nctrl - 1 - default_depth], &one, &t, &nt);
  for (uint32_t i = 0; i < n; i++) {
    label_types(f, &f->ctrl[f->nctrl - 1 - depths[i]], &one2, &t2, &nt2);
    if (nt2 != nt || (nt && memcmp(t, t2, nt)))
      return ffail(f, TP_ERR_INTERNAL, "br_table: label %u carries other types than the default",
                   depths[i]);
  }
  TP_TRY(pop_vals(f, "br_table", t, nt, false));
  set_unreachable(f);
#endif
  TP_TRY(put_op(f, TP_WASM_OP_BR_TABLE));
  tp_status s = tp_wasm_write_uleb(&f->code, n);
  for (uint32_t i = 0; i < n && !s; i++) s = tp_wasm_write_uleb(&f->code, depths[i]);
  if (!s) s = tp_wasm_write_uleb(&f->code, default_depth);
  return fsticky(f, s);
}

static tp_status check_call(tp_wasm_func *f, const char *what, const ftype *t) {
#if TP_WASM_CHECKS
  TP_TRY(pop_vals(f, what, t->vals, t->np, false));
  return push_vals(f, t->vals + t->np, t->nr);
#else
  (void)f, (void)what, (void)t;
  return TP_OK;
#endif
}

tp_status tp_wasm_emit_call(tp_wasm_func *f, uint32_t func_index) {
  TP_TRY(enter(f, TP_WASM_OP_CALL, "tp_wasm_emit_call", IMM(FUNC)));
  const ftype *t = func_type(f->m, func_index);
  if (!t)
    return ffail(f, TP_ERR_INVALID_ARG, "call %u: no such function (%u functions)", func_index,
                 f->m->nimport_funcs + f->m->nfuncs);
  char what[48];
  snprintf(what, sizeof what, "call %u", func_index);
  TP_TRY(check_call(f, what, t));
  TP_TRY(put_op(f, TP_WASM_OP_CALL));
  return fsticky(f, tp_wasm_write_uleb(&f->code, func_index));
}

tp_status tp_wasm_emit_call_indirect(tp_wasm_func *f, uint32_t type_index) {
  TP_TRY(enter(f, TP_WASM_OP_CALL_INDIRECT, "tp_wasm_emit_call_indirect", IMM(CALLIND)));
  if (!f->m->has_table)
    return ffail(f, TP_ERR_INVALID_ARG, "call_indirect needs a table: import one first");
  if (type_index >= f->m->ntypes)
    return ffail(f, TP_ERR_INVALID_ARG, "call_indirect: type %u does not exist", type_index);
  CHECK(pop1(f, "call_indirect (table index)", TP_WASM_I32));
  TP_TRY(check_call(f, "call_indirect", &f->m->types[type_index]));
  TP_TRY(put_op(f, TP_WASM_OP_CALL_INDIRECT));
  tp_status s = tp_wasm_write_uleb(&f->code, type_index);
  if (!s) s = tp_wasm_write_byte(&f->code, 0); /* table 0 */
  return fsticky(f, s);
}

tp_status tp_wasm_emit_local(tp_wasm_func *f, tp_wasm_op op, uint32_t index) {
  TP_TRY(enter(f, op, "tp_wasm_emit_local", IMM(LOCAL)));
  if (index >= f->nlocals)
    return ffail(f, TP_ERR_INVALID_ARG, "%s %u: only %u locals", op_table[op].name, index,
                 f->nlocals);
#if TP_WASM_CHECKS
  uint8_t t = f->ltypes[index];
  char what[48];
  snprintf(what, sizeof what, "%s %u", op_table[op].name, index);
  if (op != TP_WASM_OP_LOCAL_GET) TP_TRY(pop1(f, what, t));
  if (op != TP_WASM_OP_LOCAL_SET) TP_TRY(push_vals(f, &t, 1));
#endif
  TP_TRY(put_op(f, op));
  return fsticky(f, tp_wasm_write_uleb(&f->code, index));
}

tp_status tp_wasm_emit_global(tp_wasm_func *f, tp_wasm_op op, uint32_t index) {
  TP_TRY(enter(f, op, "tp_wasm_emit_global", IMM(GLOBAL)));
  if (index >= f->m->nglobals)
    return ffail(f, TP_ERR_INVALID_ARG, "%s %u: only %u globals", op_table[op].name, index,
                 f->m->nglobals);
  const global_ *g = &f->m->globals[index];
  if (op == TP_WASM_OP_GLOBAL_SET && !g->mut)
    return ffail(f, TP_ERR_INVALID_ARG, "global.set %u: the global is immutable", index);
#if TP_WASM_CHECKS
  char what[48];
  snprintf(what, sizeof what, "%s %u", op_table[op].name, index);
  if (op == TP_WASM_OP_GLOBAL_SET) TP_TRY(pop1(f, what, g->type));
  else TP_TRY(push_vals(f, &g->type, 1));
#endif
  TP_TRY(put_op(f, op));
  return fsticky(f, tp_wasm_write_uleb(&f->code, index));
}

static tp_status put_le(tp_wasm_func *f, uint64_t bits, int n) {
  uint8_t b[8];
  for (int i = 0; i < n; i++) b[i] = (uint8_t)(bits >> (8 * i));
  return fsticky(f, tp_wasm_write_bytes(&f->code, b, (size_t)n));
}

tp_status tp_wasm_emit_mem(tp_wasm_func *f, tp_wasm_op op, uint32_t align_log2, uint32_t offset) {
  TP_TRY(enter(f, op, "tp_wasm_emit_mem", IMM_MEM));
  const tp_wasm_opinfo *info = &op_table[op];
  uint32_t natural = (uint32_t)(info->imm - TP_WASM_IMM_MEM1); /* MEM1..MEM16 -> 0..4 */
  if (!f->m->has_memory)
    return ffail(f, TP_ERR_INVALID_ARG, "%s needs a memory: import or define one first",
                 info->name);
  if (align_log2 == TP_WASM_ALIGN_NATURAL) align_log2 = natural;
  if (align_log2 > natural)
    return ffail(f, TP_ERR_INVALID_ARG, "%s: alignment 2^%u exceeds the natural 2^%u", info->name,
                 align_log2, natural);
  CHECK(check_sig(f, info));
  TP_TRY(put_op(f, op));
  tp_status s = tp_wasm_write_uleb(&f->code, align_log2);
  if (!s) s = tp_wasm_write_uleb(&f->code, offset);
  return fsticky(f, s);
}

tp_status tp_wasm_emit_i32_const(tp_wasm_func *f, int32_t v) {
  TP_TRY(enter(f, TP_WASM_OP_I32_CONST, "tp_wasm_emit_i32_const", IMM(I32)));
  CHECK(check_sig(f, &op_table[TP_WASM_OP_I32_CONST]));
  TP_TRY(put_op(f, TP_WASM_OP_I32_CONST));
  return fsticky(f, tp_wasm_write_sleb(&f->code, v));
}

tp_status tp_wasm_emit_i64_const(tp_wasm_func *f, int64_t v) {
  TP_TRY(enter(f, TP_WASM_OP_I64_CONST, "tp_wasm_emit_i64_const", IMM(I64)));
  CHECK(check_sig(f, &op_table[TP_WASM_OP_I64_CONST]));
  TP_TRY(put_op(f, TP_WASM_OP_I64_CONST));
  return fsticky(f, tp_wasm_write_sleb(&f->code, v));
}

tp_status tp_wasm_emit_f32_const(tp_wasm_func *f, float v) {
  TP_TRY(enter(f, TP_WASM_OP_F32_CONST, "tp_wasm_emit_f32_const", IMM(F32)));
  CHECK(check_sig(f, &op_table[TP_WASM_OP_F32_CONST]));
  uint32_t bits;
  memcpy(&bits, &v, 4);
  TP_TRY(put_op(f, TP_WASM_OP_F32_CONST));
  return put_le(f, bits, 4);
}

tp_status tp_wasm_emit_f64_const(tp_wasm_func *f, double v) {
  TP_TRY(enter(f, TP_WASM_OP_F64_CONST, "tp_wasm_emit_f64_const", IMM(F64)));
  CHECK(check_sig(f, &op_table[TP_WASM_OP_F64_CONST]));
  uint64_t bits;
  memcpy(&bits, &v, 8);
  TP_TRY(put_op(f, TP_WASM_OP_F64_CONST));
  return put_le(f, bits, 8);
}

tp_status tp_wasm_emit_v128_const(tp_wasm_func *f, const uint8_t bytes[16]) {
  TP_TRY(enter(f, TP_WASM_OP_V128_CONST, "tp_wasm_emit_v128_const", IMM(V128)));
  CHECK(check_sig(f, &op_table[TP_WASM_OP_V128_CONST]));
  TP_TRY(put_op(f, TP_WASM_OP_V128_CONST));
  return fsticky(f, tp_wasm_write_bytes(&f->code, bytes, 16));
}

tp_status tp_wasm_emit_f32x4_const(tp_wasm_func *f, float a, float b, float c, float d) {
  float v[4] = {a, b, c, d};
  uint8_t bytes[16];
  for (int i = 0; i < 4; i++) {
    uint32_t bits;
    memcpy(&bits, &v[i], 4);
    for (int k = 0; k < 4; k++) bytes[4 * i + k] = (uint8_t)(bits >> (8 * k));
  }
  return tp_wasm_emit_v128_const(f, bytes);
}

tp_status tp_wasm_emit_lane(tp_wasm_func *f, tp_wasm_op op, uint32_t lane) {
  TP_TRY(enter(f, op, "tp_wasm_emit_lane", IMM_LANE));
  const tp_wasm_opinfo *info = &op_table[op];
  uint32_t n = info->imm == TP_WASM_IMM_LANE2   ? 2
               : info->imm == TP_WASM_IMM_LANE4 ? 4
               : info->imm == TP_WASM_IMM_LANE8 ? 8
                                                : 16;
  if (lane >= n)
    return ffail(f, TP_ERR_INVALID_ARG, "%s: lane %u out of range (%u lanes)", info->name, lane, n);
  CHECK(check_sig(f, info));
  TP_TRY(put_op(f, op));
  return fsticky(f, tp_wasm_write_byte(&f->code, (uint8_t)lane));
}

tp_status tp_wasm_emit_shuffle(tp_wasm_func *f, const uint8_t lanes[16]) {
  TP_TRY(enter(f, TP_WASM_OP_I8X16_SHUFFLE, "tp_wasm_emit_shuffle", IMM(SHUFFLE)));
  for (int i = 0; i < 16; i++)
    if (lanes[i] >= 32)
      return ffail(f, TP_ERR_INVALID_ARG, "i8x16.shuffle: lane index %u at %d is not < 32",
                   lanes[i], i);
  CHECK(check_sig(f, &op_table[TP_WASM_OP_I8X16_SHUFFLE]));
  TP_TRY(put_op(f, TP_WASM_OP_I8X16_SHUFFLE));
  return fsticky(f, tp_wasm_write_bytes(&f->code, lanes, 16));
}

tp_status tp_wasm_func_end(tp_wasm_func *f) {
  if (f->status) return f->status;
  if (f->ended) return ffail(f, TP_ERR_INVALID_ARG, "tp_wasm_func_end called twice");
  if (f->nctrl != 1) {
    const ctrl *c = top_ctrl(f);
    return ffail(f, TP_ERR_INTERNAL, "%u block(s) still open at the end (innermost: %s opened at code offset %zu)",
                 f->nctrl - 1, ctrl_name(c), c->at);
  }
#if TP_WASM_CHECKS
  const ftype *ft = &f->m->types[f->type];
  TP_TRY(pop_vals(f, "end of function", ft->vals + ft->np, ft->nr, true));
#endif
  TP_TRY(fsticky(f, tp_wasm_write_byte(&f->code, 0x0b)));
  f->nctrl = 0;
  f->ended = true;
  return TP_OK;
}

/* ---- finish: sections with patched sizes ---- */
static tp_status mlabel(tp_wasm_module *m, size_t offset, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static tp_status mlabel(tp_wasm_module *m, size_t offset, const char *fmt, ...) {
  TP_TRY(GROW(m->labels, m->labcap, m->nlabels));
  size_t at = m->pool.n;
  va_list ap;
  va_start(ap, fmt);
  tp_status s = appendv(&m->pool, fmt, ap);
  va_end(ap);
  TP_TRY(s);
  TP_TRY(tp_wasm_write_byte(&m->pool, 0));
  m->labels[m->nlabels++] = (plabel){offset, at};
  return TP_OK;
}

/* A size placeholder at the current end: returns its offset. */
static tp_status open_size(tp_wasm_module *m, size_t *at) {
  *at = m->out.n;
  return tp_wasm_write_uleb_padded(&m->out, 0, 5);
}

/* Patch the size at `at` with the byte count after it, shrinking the 5-byte
 * placeholder to the minimal LEB128 (moving the content and its labels). */
static tp_status close_size(tp_wasm_module *m, size_t at, const char *what) {
  size_t n = m->out.n - at - 5;
  if (n > UINT32_MAX)
    return tp_fail(TP_ERR_UNSUPPORTED, "wasm %s: %zu bytes exceed the 4 GiB limit", what, n);
  uint8_t tmp[10];
  size_t k = uleb_encode(tmp, n), shift = 5 - k; /* a u32 takes <= 5 bytes */
  uint8_t *d = (uint8_t *)m->out.p;
  memmove(d + at + k, d + at + 5, n);
  memcpy(d + at, tmp, k);
  m->out.n -= shift;
  for (size_t i = m->nlabels; i-- > 0 && m->labels[i].offset >= at + 5;) m->labels[i].offset -= shift;
  return TP_OK;
}

static const char *const section_names[] = {"custom", "type", "import", "function", "table",
                                            "memory", "global", "export", "start", "element",
                                            "code", "data"};

static tp_status open_section(tp_wasm_module *m, uint8_t id, size_t *at) {
  TP_TRY(mlabel(m, m->out.n, "section %s (id %u)", section_names[id], id));
  TP_TRY(tp_wasm_write_byte(&m->out, id));
  return open_size(m, at);
}

static tp_status write_limits(tp_wasm_buf *b, tp_wasm_limits l) {
  TP_TRY(tp_wasm_write_byte(b, (uint8_t)((l.has_max ? 1 : 0) | (l.shared ? 2 : 0))));
  TP_TRY(tp_wasm_write_uleb(b, l.min));
  return l.has_max ? tp_wasm_write_uleb(b, l.max) : TP_OK;
}

static void limits_str(tp_wasm_limits l, char *buf, size_t cap) {
  if (l.has_max)
    snprintf(buf, cap, "min %u, max %u%s", l.min, l.max, l.shared ? ", shared" : "");
  else
    snprintf(buf, cap, "min %u", l.min);
}

static tp_status write_module(tp_wasm_module *m) {
  tp_wasm_buf *o = &m->out;
  size_t at;
  char a[200], b[200];
  static const uint8_t header[8] = {0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00};
  TP_TRY(mlabel(m, 0, "header: \\0asm, version 1"));
  TP_TRY(tp_wasm_write_bytes(o, header, 8));

  if (m->ntypes) {
    TP_TRY(open_section(m, 1, &at));
    TP_TRY(tp_wasm_write_uleb(o, m->ntypes));
    for (uint32_t i = 0; i < m->ntypes; i++) {
      const ftype *t = &m->types[i];
      type_str(t->vals, t->np, a, sizeof a);
      type_str(t->vals + t->np, t->nr, b, sizeof b);
      TP_TRY(mlabel(m, o->n, "type %u: (%s) -> (%s)", i, a, b));
      TP_TRY(tp_wasm_write_byte(o, 0x60));
      TP_TRY(tp_wasm_write_uleb(o, t->np));
      TP_TRY(tp_wasm_write_bytes(o, t->vals, t->np));
      TP_TRY(tp_wasm_write_uleb(o, t->nr));
      TP_TRY(tp_wasm_write_bytes(o, t->vals + t->np, t->nr));
    }
    TP_TRY(close_size(m, at, "type section"));
  }
  if (m->nimports) {
    TP_TRY(open_section(m, 2, &at));
    TP_TRY(tp_wasm_write_uleb(o, m->nimports));
    for (uint32_t i = 0, fi = 0; i < m->nimports; i++) {
      const import_ *im = &m->imports[i];
      if (im->kind == KIND_FUNC)
        TP_TRY(mlabel(m, o->n, "import %u: %s.%s (func %u, type %u)", i, im->module, im->name,
                      fi++, im->type));
      else {
        limits_str(im->limits, a, sizeof a);
        TP_TRY(mlabel(m, o->n, "import %u: %s.%s (%s, %s)", i, im->module, im->name,
                      im->kind == KIND_TABLE ? "table funcref" : "memory", a));
      }
      TP_TRY(write_name(o, im->module));
      TP_TRY(write_name(o, im->name));
      TP_TRY(tp_wasm_write_byte(o, im->kind));
      if (im->kind == KIND_FUNC) {
        TP_TRY(tp_wasm_write_uleb(o, im->type));
      } else {
        if (im->kind == KIND_TABLE) TP_TRY(tp_wasm_write_byte(o, 0x70)); /* funcref */
        TP_TRY(write_limits(o, im->limits));
      }
    }
    TP_TRY(close_size(m, at, "import section"));
  }
  if (m->nfuncs) {
    TP_TRY(open_section(m, 3, &at));
    TP_TRY(tp_wasm_write_uleb(o, m->nfuncs));
    for (uint32_t i = 0; i < m->nfuncs; i++) TP_TRY(tp_wasm_write_uleb(o, m->funcs[i]->type));
    TP_TRY(close_size(m, at, "function section"));
  }
  if (m->has_memory && !m->memory_imported) {
    TP_TRY(open_section(m, 5, &at));
    limits_str(m->memory, a, sizeof a);
    TP_TRY(mlabel(m, o->n, "memory 0: %s", a));
    TP_TRY(tp_wasm_write_uleb(o, 1));
    TP_TRY(write_limits(o, m->memory));
    TP_TRY(close_size(m, at, "memory section"));
  }
  if (m->nglobals) {
    TP_TRY(open_section(m, 6, &at));
    TP_TRY(tp_wasm_write_uleb(o, m->nglobals));
    for (uint32_t i = 0; i < m->nglobals; i++) {
      const global_ *g = &m->globals[i];
      TP_TRY(mlabel(m, o->n, "global %u: %s%s", i, g->mut ? "mut " : "",
                    tp_wasm_valtype_name(g->type)));
      TP_TRY(tp_wasm_write_byte(o, g->type));
      TP_TRY(tp_wasm_write_byte(o, g->mut ? 1 : 0));
      uint8_t le[8];
      for (int k = 0; k < 8; k++) le[k] = (uint8_t)(g->bits >> (8 * k));
      switch (g->type) {
      case TP_WASM_I32:
        TP_TRY(tp_wasm_write_byte(o, 0x41));
        TP_TRY(tp_wasm_write_sleb(o, (int32_t)(uint32_t)g->bits));
        break;
      case TP_WASM_I64:
        TP_TRY(tp_wasm_write_byte(o, 0x42));
        TP_TRY(tp_wasm_write_sleb(o, (int64_t)g->bits));
        break;
      case TP_WASM_F32:
        TP_TRY(tp_wasm_write_byte(o, 0x43));
        TP_TRY(tp_wasm_write_bytes(o, le, 4));
        break;
      default:
        TP_TRY(tp_wasm_write_byte(o, 0x44));
        TP_TRY(tp_wasm_write_bytes(o, le, 8));
        break;
      }
      TP_TRY(tp_wasm_write_byte(o, 0x0b));
    }
    TP_TRY(close_size(m, at, "global section"));
  }
  if (m->nexports) {
    TP_TRY(open_section(m, 7, &at));
    TP_TRY(tp_wasm_write_uleb(o, m->nexports));
    for (uint32_t i = 0; i < m->nexports; i++) {
      const export_ *e = &m->exports[i];
      TP_TRY(mlabel(m, o->n, "export '%s': %s %u", e->name,
                    e->kind == KIND_FUNC ? "func" : "memory", e->index));
      TP_TRY(write_name(o, e->name));
      TP_TRY(tp_wasm_write_byte(o, e->kind));
      TP_TRY(tp_wasm_write_uleb(o, e->index));
    }
    TP_TRY(close_size(m, at, "export section"));
  }
  if (m->nfuncs) {
    TP_TRY(open_section(m, 10, &at));
    TP_TRY(tp_wasm_write_uleb(o, m->nfuncs));
    for (uint32_t i = 0; i < m->nfuncs; i++) {
      const tp_wasm_func *f = m->funcs[i];
      size_t body;
      if (f->name)
        TP_TRY(mlabel(m, o->n, "func %u '%s': body", f->index, f->name));
      else
        TP_TRY(mlabel(m, o->n, "func %u: body", f->index));
      TP_TRY(open_size(m, &body));
      /* locals: runs of one type */
      uint32_t runs = 0;
      for (uint32_t k = f->nparams; k < f->nlocals; k++)
        if (k == f->nparams || f->ltypes[k] != f->ltypes[k - 1]) runs++;
      TP_TRY(mlabel(m, o->n, "locals: %u in %u run(s)", f->nlocals - f->nparams, runs));
      TP_TRY(tp_wasm_write_uleb(o, runs));
      for (uint32_t k = f->nparams; k < f->nlocals;) {
        uint32_t e = k;
        while (e < f->nlocals && f->ltypes[e] == f->ltypes[k]) e++;
        TP_TRY(tp_wasm_write_uleb(o, e - k));
        TP_TRY(tp_wasm_write_byte(o, f->ltypes[k]));
        k = e;
      }
      size_t base = o->n;
      TP_TRY(mlabel(m, base, "code"));
      for (size_t k = 0; k < f->nlabels; k++)
        TP_TRY(mlabel(m, base + f->labels[k].offset, "%s",
                      f->pool.p + f->labels[k].text));
      TP_TRY(tp_wasm_write_bytes(o, f->code.p, f->code.n));
      TP_TRY(close_size(m, body, "function body"));
    }
    TP_TRY(close_size(m, at, "code section"));
  }
  TP_TRY(mlabel(m, o->n, "end of module (%zu bytes)", o->n));
  return TP_OK;
}

tp_status tp_wasm_module_finish(tp_wasm_module *m, const uint8_t **bytes_out, size_t *len_out) {
  *bytes_out = NULL;
  *len_out = 0;
  for (uint32_t i = 0; i < m->nfuncs; i++) {
    const tp_wasm_func *f = m->funcs[i];
    char nm[160];
    fname(f, nm, sizeof nm);
    if (f->status)
      return tp_fail(f->status, "wasm module: function %s failed: %s", nm, f->err);
    if (!f->ended)
      return tp_fail(TP_ERR_INTERNAL, "wasm module: function %s was not ended (tp_wasm_func_end)",
                     nm);
  }
  m->out.n = m->pool.n = 0; /* again from the start (and after a failed finish) */
  m->out.oom = m->pool.oom = 0;
  m->nlabels = 0;
  TP_TRY(write_module(m));
  tp_wasm_label *pub = tp_realloc(m->pub, (m->nlabels ? m->nlabels : 1) * sizeof *pub);
  if (!pub) return TP_ERR_OUT_OF_MEMORY;
  m->pub = pub;
  for (size_t i = 0; i < m->nlabels; i++)
    pub[i] = (tp_wasm_label){m->labels[i].offset, m->pool.p + m->labels[i].text};
  *bytes_out = (const uint8_t *)m->out.p;
  *len_out = m->out.n;
  return TP_OK;
}

void tp_wasm_module_labels(const tp_wasm_module *m, const tp_wasm_label **labels_out,
                           size_t *n_out) {
  *labels_out = m->pub;
  *n_out = m->pub ? m->nlabels : 0;
}

/* ---- the annotated dump ---- */
typedef struct sorted_label {
  size_t offset, idx;
} sorted_label;

static int cmp_label(const void *a, const void *b) {
  const sorted_label *x = a, *y = b;
  if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

tp_status tp_wasm_dump(const uint8_t *bytes, size_t len, const tp_wasm_label *labels,
                       size_t nlabels, char **text_out) {
  *text_out = NULL;
  tp_wasm_buf t = {0};
  sorted_label *s = NULL;
  tp_status st = TP_OK;
  if (!labels) nlabels = 0;
  if (nlabels) {
    s = tp_alloc(nlabels * sizeof *s);
    if (!s) return TP_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < nlabels; i++) s[i] = (sorted_label){labels[i].offset, i};
    qsort(s, nlabels, sizeof *s, cmp_label);
  }
  size_t cur = 0, li = 0;
  while (!st && (cur < len || li < nlabels)) {
    size_t end = cur + 16 < len ? cur + 16 : len;
    size_t lj = li;
    while (lj < nlabels && (s[lj].offset <= cur || cur >= len)) lj++;
    if (lj < nlabels && s[lj].offset < end) end = s[lj].offset;
    if (cur >= len) end = cur; /* labels past the end: no bytes */
    st = appendf(&t, "%06zx:", cur);
    for (size_t i = cur; i < end && !st; i++) st = appendf(&t, " %02x", bytes[i]);
    if (!st && li < lj) {
      st = appendf(&t, "%*s ;", (int)(3 * (16 - (end - cur))), "");
      for (size_t k = li; k < lj && !st; k++)
        st = appendf(&t, "%s %s", k > li ? " |" : "", labels[s[k].idx].text);
    }
    if (!st) st = appendf(&t, "\n");
    li = lj;
    if (cur >= len) li = nlabels;
    cur = end;
  }
  tp_free(s);
  if (st) {
    tp_wasm_buf_free(&t);
    return st;
  }
  *text_out = tp_buf_take(&t);
  return *text_out ? TP_OK : TP_ERR_OUT_OF_MEMORY;
}
