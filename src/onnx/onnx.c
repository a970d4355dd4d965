/* onnx.c - ModelProto -> Graph IR.
 *
 * Two steps: decode the protobuf subset into small structs (nodes,
 * attributes, value infos; tensors stay as readers into the caller's bytes),
 * then convert node by node. Every ONNX value maps to a ref: a graph node, a
 * constant tensor (initializers, Constant, and anything computed only from
 * constants, which is folded at load time so that Shape -> Gather -> Concat
 * -> Reshape chains become constants) or nothing (an absent optional). A
 * constant becomes a get_attr node only when a graph node uses it.
 * The converters are one table at the bottom (op type -> function). */
#include "onnx.h"
#include "pb.h"
#include "tensor_pb.h"
#include <math.h>
#include <stdio.h>

/* ---- arena: every decoded struct lives here until the load ends ---- */
typedef struct blk { struct blk *next; double align_; } blk;

typedef struct attr {
  char *name;
  int type;              /* AttributeProto.AttributeType */
  double f;
  int64_t i;
  char *s;
  int has_t;
  tp_pb t;               /* TENSOR: a reader over the TensorProto */
  float *floats;
  size_t nfloats;
  int64_t *ints;
  size_t nints;
  int used;
} attr;

typedef struct onode {
  char *name, *op, *domain;
  int nin, nout, nattrs;
  char **in, **out;
  attr *attrs;
} onode;

typedef struct vinfo {
  char *name;
  int is_tensor, elem, has_shape, ndim;
  int64_t dims[TP_MAX_DIMS];
  char *sym;             /* first symbolic dim (dim_param), NULL if none */
  int too_many_dims;
} vinfo;

enum { R_NONE, R_NODE, R_CONST, R_SCALAR };
typedef struct ref {
  int kind;
  int node;              /* R_NODE */
  int c;                 /* R_CONST: index in the constant pool */
  double s;              /* R_SCALAR */
  int is_int;
} ref;

typedef struct entry { char *name; ref r; } entry;

typedef struct imp {
  blk *arena;
  tp_graph *g;
  int64_t opset;
  /* decoded model */
  onode *nodes; int nnodes, capnodes;
  vinfo *inputs; int ninputs, capinputs;
  vinfo *outputs; int noutputs, capoutputs;
  tp_pb *inits; int ninits, capinits;
  /* constant pool */
  tp_tensor **consts; int *const_node; int nconsts, capconsts;
  /* name -> ref (open addressing) */
  entry *tab; int tabcap, tabn;
  /* inputs bound to values (tp_onnx_load_with) */
  int nbind; const char *const *bind_names; tp_tensor *const *bind_vals;
  onode *cur;            /* node being converted (errors) */
  const char *bad_attr;  /* an attribute read with the wrong type */
} imp;

static void *amalloc(imp *m, size_t n) {
  blk *b = tp_alloc(sizeof(blk) + n);
  if (!b) return NULL;
  b->next = m->arena;
  m->arena = b;
  memset(b + 1, 0, n);
  return b + 1;
}

static char *astr(imp *m, const uint8_t *p, size_t n) {
  char *s = amalloc(m, n + 1);
  if (s && n) memcpy(s, p, n);
  return s;
}

/* Grows arena array *arr (elem bytes each) to hold n+1. */
static tp_status apush(imp *m, void **arr, int *n, int *cap, size_t elem) {
  if (*n < *cap) return TP_OK;
  int nc = *cap ? *cap * 2 : 8;
  void *p = amalloc(m, (size_t)nc * elem);
  if (!p) return TP_ERR_OUT_OF_MEMORY;
  if (*n) memcpy(p, *arr, (size_t)*n * elem);
  *arr = p;
  *cap = nc;
  return TP_OK;
}
#define APUSH(m, arr, n, cap) apush(m, (void **)&(arr), &(n), &(cap), sizeof *(arr))

/* ---- decoding ---- */
static tp_status read_typeproto(imp *m, tp_pb *r, vinfo *v) {
  tp_pb_field f;
  int k;
  while ((k = tp_pb_next(r, &f)) > 0) {
    if (f.num != 1) continue; /* sequence, map, optional, sparse: not a tensor */
    tp_pb tt, sh, dm;
    TP_TRY(tp_pb_sub(r, &f, "TypeProto.Tensor", &tt));
    v->is_tensor = 1;
    tp_pb_field g;
    int k2;
    while ((k2 = tp_pb_next(&tt, &g)) > 0) {
      if (g.num == 1 && g.wire == TP_PB_VARINT) v->elem = (int)g.u;
      if (g.num != 2) continue;
      TP_TRY(tp_pb_sub(&tt, &g, "TensorShapeProto", &sh));
      v->has_shape = 1;
      v->ndim = 0;
      tp_pb_field h;
      int k3;
      while ((k3 = tp_pb_next(&sh, &h)) > 0) {
        if (h.num != 1) continue;
        TP_TRY(tp_pb_sub(&sh, &h, "TensorShapeProto.Dimension", &dm));
        int64_t val = -1;
        tp_pb_field d;
        int k4;
        while ((k4 = tp_pb_next(&dm, &d)) > 0) {
          if (d.num == 1 && d.wire == TP_PB_VARINT) val = (int64_t)d.u;
          if (d.num == 2 && d.wire == TP_PB_LEN && !v->sym) {
            v->sym = astr(m, d.data, d.len);
            if (!v->sym) return TP_ERR_OUT_OF_MEMORY;
          }
        }
        if (k4 < 0) return (tp_status)-k4;
        if (val < 0 && !v->sym) v->sym = "?";
        if (v->ndim == TP_MAX_DIMS) v->too_many_dims = 1;
        else v->dims[v->ndim++] = val;
      }
      if (k3 < 0) return (tp_status)-k3;
    }
    if (k2 < 0) return (tp_status)-k2;
  }
  return k < 0 ? (tp_status)-k : TP_OK;
}

static tp_status read_valueinfo(imp *m, tp_pb *r, vinfo *v) {
  tp_pb_field f;
  int k;
  memset(v, 0, sizeof *v);
  while ((k = tp_pb_next(r, &f)) > 0) {
    if (f.num == 1) {
      TP_TRY(tp_pb_need(r, &f, TP_PB_LEN));
      if (!(v->name = astr(m, f.data, f.len))) return TP_ERR_OUT_OF_MEMORY;
    } else if (f.num == 2) {
      tp_pb t;
      TP_TRY(tp_pb_sub(r, &f, "TypeProto", &t));
      TP_TRY(read_typeproto(m, &t, v));
    }
  }
  if (k < 0) return (tp_status)-k;
  if (!v->name) v->name = "";
  return TP_OK;
}

/* Append n elements of size el read from a packed or repeated field to the
 * arena array *arr of *count elements (repeated fields may come in pieces). */
static tp_status append_elems(imp *m, void **arr, size_t *count, const void *src, size_t n,
                              size_t el) {
  if (!n) return TP_OK;
  char *p = amalloc(m, el * (*count + n));
  if (!p) return TP_ERR_OUT_OF_MEMORY;
  if (*count) memcpy(p, *arr, el * *count);
  memcpy(p + el * *count, src, el * n);
  *arr = p;
  *count += n;
  return TP_OK;
}

static tp_status copy_ints(imp *m, const tp_pb *r, const tp_pb_field *f, attr *a) {
  int64_t *tmp = NULL;
  size_t n = 0;
  tp_status s = tp_pb_ints(r, f, &tmp, &n);
  void *arr = a->ints;
  if (!s) s = append_elems(m, &arr, &a->nints, tmp, n, sizeof(int64_t));
  a->ints = arr;
  tp_free(tmp);
  return s;
}

static tp_status copy_floats(imp *m, const tp_pb *r, const tp_pb_field *f, attr *a) {
  float *tmp = NULL;
  size_t n = 0;
  tp_status s = tp_pb_floats(r, f, &tmp, &n);
  void *arr = a->floats;
  if (!s) s = append_elems(m, &arr, &a->nfloats, tmp, n, sizeof(float));
  a->floats = arr;
  tp_free(tmp);
  return s;
}

static tp_status read_attr(imp *m, tp_pb *r, attr *a) {
  tp_pb_field f;
  int k;
  memset(a, 0, sizeof *a);
  while ((k = tp_pb_next(r, &f)) > 0) {
    switch (f.num) {
      case 1:
        TP_TRY(tp_pb_need(r, &f, TP_PB_LEN));
        if (!(a->name = astr(m, f.data, f.len))) return TP_ERR_OUT_OF_MEMORY;
        break;
      case 20: if (f.wire == TP_PB_VARINT) a->type = (int)f.u; break;
      case 2: {
        TP_TRY(tp_pb_need(r, &f, TP_PB_I32));
        uint32_t u = (uint32_t)f.u;
        float x;
        memcpy(&x, &u, 4);
        a->f = x;
        break;
      }
      case 3: TP_TRY(tp_pb_need(r, &f, TP_PB_VARINT)); a->i = (int64_t)f.u; break;
      case 4:
        TP_TRY(tp_pb_need(r, &f, TP_PB_LEN));
        if (!(a->s = astr(m, f.data, f.len))) return TP_ERR_OUT_OF_MEMORY;
        break;
      case 5: TP_TRY(tp_pb_sub(r, &f, "TensorProto", &a->t)); a->has_t = 1; break;
      case 7: TP_TRY(copy_floats(m, r, &f, a)); break;
      case 8: TP_TRY(copy_ints(m, r, &f, a)); break;
      default: break; /* graphs, strings, tensors, sparse, type protos: rejected by type */
    }
  }
  if (k < 0) return (tp_status)-k;
  if (!a->name) a->name = "";
  return TP_OK;
}

static tp_status read_node(imp *m, tp_pb *r, onode *n) {
  tp_pb_field f;
  int k, capin = 0, capout = 0, capattr = 0;
  memset(n, 0, sizeof *n);
  while ((k = tp_pb_next(r, &f)) > 0) {
    switch (f.num) {
      case 1: case 2: {
        TP_TRY(tp_pb_need(r, &f, TP_PB_LEN));
        char *s = astr(m, f.data, f.len);
        if (!s) return TP_ERR_OUT_OF_MEMORY;
        if (f.num == 1) {
          TP_TRY(APUSH(m, n->in, n->nin, capin));
          n->in[n->nin++] = s;
        } else {
          TP_TRY(APUSH(m, n->out, n->nout, capout));
          n->out[n->nout++] = s;
        }
        break;
      }
      case 3: case 4: case 7: {
        TP_TRY(tp_pb_need(r, &f, TP_PB_LEN));
        char *s = astr(m, f.data, f.len);
        if (!s) return TP_ERR_OUT_OF_MEMORY;
        if (f.num == 3) n->name = s;
        else if (f.num == 4) n->op = s;
        else n->domain = s;
        break;
      }
      case 5: {
        tp_pb sub;
        TP_TRY(tp_pb_sub(r, &f, "AttributeProto", &sub));
        TP_TRY(APUSH(m, n->attrs, n->nattrs, capattr));
        TP_TRY(read_attr(m, &sub, &n->attrs[n->nattrs]));
        n->nattrs++;
        break;
      }
      default: break;
    }
  }
  if (k < 0) return (tp_status)-k;
  if (!n->op) n->op = "";
  if (!n->domain) n->domain = "";
  if (!n->name || !*n->name) n->name = n->nout ? n->out[0] : "";
  return TP_OK;
}

static tp_status read_graph(imp *m, tp_pb *r) {
  tp_pb_field f;
  int k;
  while ((k = tp_pb_next(r, &f)) > 0) {
    tp_pb sub;
    switch (f.num) {
      case 1:
        TP_TRY(tp_pb_sub(r, &f, "NodeProto", &sub));
        TP_TRY(APUSH(m, m->nodes, m->nnodes, m->capnodes));
        TP_TRY(read_node(m, &sub, &m->nodes[m->nnodes]));
        m->nnodes++;
        break;
      case 5:
        TP_TRY(tp_pb_sub(r, &f, "TensorProto", &sub));
        TP_TRY(APUSH(m, m->inits, m->ninits, m->capinits));
        m->inits[m->ninits++] = sub;
        break;
      case 11: case 12:
        TP_TRY(tp_pb_sub(r, &f, "ValueInfoProto", &sub));
        if (f.num == 11) {
          TP_TRY(APUSH(m, m->inputs, m->ninputs, m->capinputs));
          TP_TRY(read_valueinfo(m, &sub, &m->inputs[m->ninputs]));
          m->ninputs++;
        } else {
          TP_TRY(APUSH(m, m->outputs, m->noutputs, m->capoutputs));
          TP_TRY(read_valueinfo(m, &sub, &m->outputs[m->noutputs]));
          m->noutputs++;
        }
        break;
      case 15:
        return tp_fail(TP_ERR_UNSUPPORTED, "onnx: sparse initializers are not supported");
      default: break; /* name, doc_string, value_info (shapes are inferred) */
    }
  }
  return k < 0 ? (tp_status)-k : TP_OK;
}

static tp_status read_model(imp *m, const void *bytes, size_t len) {
  tp_pb r, sub;
  tp_pb_field f;
  int k, has_graph = 0, has_opset = 0;
  tp_pb_init(&r, bytes, len, "ModelProto");
  m->opset = -1;
  while ((k = tp_pb_next(&r, &f)) > 0) {
    if (f.num == 7) {
      if (has_graph) return tp_pb_error(&r, f.at, "field 7 (graph) appears twice");
      TP_TRY(tp_pb_sub(&r, &f, "GraphProto", &sub));
      TP_TRY(read_graph(m, &sub));
      has_graph = 1;
    } else if (f.num == 8) {
      TP_TRY(tp_pb_sub(&r, &f, "OperatorSetIdProto", &sub));
      tp_pb_field g;
      int k2, is_default = 1;
      int64_t ver = -1;
      while ((k2 = tp_pb_next(&sub, &g)) > 0) {
        if (g.num == 1 && g.wire == TP_PB_LEN)
          is_default = g.len == 0 || (g.len == 7 && !memcmp(g.data, "ai.onnx", 7));
        if (g.num == 2 && g.wire == TP_PB_VARINT) ver = (int64_t)g.u;
      }
      if (k2 < 0) return (tp_status)-k2;
      if (is_default) m->opset = ver, has_opset = 1;
    }
  }
  if (k < 0) return (tp_status)-k;
  if (!has_graph) return tp_fail(TP_ERR_PARSE, "onnx: the model has no graph (field 7 of ModelProto)");
  if (!has_opset)
    return tp_fail(TP_ERR_PARSE, "onnx: the model imports no opset of the default domain (ai.onnx)");
  if (m->opset < TP_ONNX_MIN_OPSET)
    return tp_fail(TP_ERR_UNSUPPORTED,
                   "onnx: the model imports opset %lld of the default domain; opset %d or newer "
                   "is required",
                   (long long)m->opset, TP_ONNX_MIN_OPSET);
  return TP_OK;
}

/* ---- value table ---- */
static uint32_t hash(const char *s) {
  uint32_t h = 2166136261u;
  while (*s) h = (h ^ (uint8_t)*s++) * 16777619u;
  return h;
}

static entry *lookup(imp *m, const char *name) {
  if (!m->tabcap) return NULL;
  for (uint32_t i = hash(name) & (uint32_t)(m->tabcap - 1);; i = (i + 1) & (uint32_t)(m->tabcap - 1)) {
    if (!m->tab[i].name) return NULL;
    if (!strcmp(m->tab[i].name, name)) return &m->tab[i];
  }
}

static tp_status define(imp *m, const char *name, ref r) {
  entry *e = lookup(m, name);
  if (e) {
    e->r = r; /* ONNX forbids redefinition; the last one wins */
    return TP_OK;
  }
  if ((m->tabn + 1) * 2 > m->tabcap) {
    int nc = m->tabcap ? m->tabcap * 2 : 64;
    entry *nt = amalloc(m, sizeof(entry) * (size_t)nc);
    if (!nt) return TP_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < m->tabcap; i++)
      if (m->tab[i].name) {
        uint32_t j = hash(m->tab[i].name) & (uint32_t)(nc - 1);
        while (nt[j].name) j = (j + 1) & (uint32_t)(nc - 1);
        nt[j] = m->tab[i];
      }
    m->tab = nt;
    m->tabcap = nc;
  }
  uint32_t j = hash(name) & (uint32_t)(m->tabcap - 1);
  while (m->tab[j].name) j = (j + 1) & (uint32_t)(m->tabcap - 1);
  m->tab[j].name = (char *)name;
  m->tab[j].r = r;
  m->tabn++;
  return TP_OK;
}

/* ---- refs ---- */
static tp_status add_const(imp *m, tp_tensor *t /* owned */, ref *out) {
  if (m->nconsts == m->capconsts) {
    int nc = m->capconsts ? m->capconsts * 2 : 16;
    tp_tensor **p = tp_realloc(m->consts, sizeof(tp_tensor *) * (size_t)nc);
    if (!p) {
      tp_tensor_release(t);
      return TP_ERR_OUT_OF_MEMORY;
    }
    m->consts = p;
    int *q = tp_realloc(m->const_node, sizeof(int) * (size_t)nc);
    if (!q) {
      tp_tensor_release(t);
      return TP_ERR_OUT_OF_MEMORY;
    }
    m->const_node = q;
    m->capconsts = nc;
  }
  m->consts[m->nconsts] = t;
  m->const_node[m->nconsts] = -1;
  memset(out, 0, sizeof *out);
  out->kind = R_CONST;
  out->c = m->nconsts++;
  return TP_OK;
}

static ref scal(double v) { ref r = {R_SCALAR, 0, 0, v, 0}; return r; }
static ref none(void) { ref r = {R_NONE, 0, 0, 0, 0}; return r; }

static tp_desc rdesc(const imp *m, ref r) {
  tp_desc d;
  memset(&d, 0, sizeof d);
  if (r.kind == R_NODE) d = m->g->nodes[r.node].desc;
  else if (r.kind == R_CONST) tp_desc_of(m->consts[r.c], &d);
  else if (r.kind == R_SCALAR) d.dtype = r.is_int ? TP_I64 : TP_F32, d.weak = r.is_int ? 1 : 2;
  return d;
}

static tp_status to_arg(imp *m, ref r, tp_arg *a) {
  memset(a, 0, sizeof *a);
  if (r.kind == R_NONE) {
    a->kind = TP_ARG_NONE;
  } else if (r.kind == R_SCALAR) {
    a->kind = TP_ARG_SCALAR;
    a->scalar = r.s;
    a->is_int = r.is_int;
  } else if (r.kind == R_NODE) {
    a->kind = TP_ARG_NODE;
    a->node = r.node;
  } else {
    if (m->const_node[r.c] < 0) {
      tp_desc d;
      char name[32];
      int idx;
      tp_desc_of(m->consts[r.c], &d);
      do snprintf(name, sizeof name, "c%d", m->g->next_id++);
      while (tp_graph_find(m->g, name) >= 0);
      TP_TRY(tp_graph_add_node(m->g, TP_NODE_GET_ATTR, name, TP_OP_ADD, 0, NULL, NULL, &d, &idx));
      m->g->nodes[idx].target = tp_strdup(name);
      if (!m->g->nodes[idx].target) return TP_ERR_OUT_OF_MEMORY;
      tp_graph_set_val(m->g, idx, m->consts[r.c]);
      m->const_node[r.c] = idx;
    }
    a->kind = TP_ARG_NODE;
    a->node = m->const_node[r.c];
  }
  return TP_OK;
}

/* One op: folded when no operand is a graph node, else a call node. */
static tp_status emit(imp *m, tp_op op, int n, const ref *args, const tp_attrs *at, ref *out) {
  tp_desc descs[64], od;
  const tp_desc *dp[64];
  tp_attrs a0;
  int folded = 1;
  if (!at) tp_attrs_init(&a0), at = &a0;
  if (n > 64) return tp_fail(TP_ERR_UNSUPPORTED, "too many operands (%d)", n);
  for (int i = 0; i < n; i++) {
    descs[i] = rdesc(m, args[i]);
    dp[i] = args[i].kind == R_NONE ? NULL : &descs[i];
    if (args[i].kind == R_NODE) folded = 0;
  }
  TP_TRY(tp_op_infer(op, n, dp, at, &od));
  if (folded) {
    tp_tensor *ts[64] = {0}, *y = NULL, *c = NULL;
    tp_status s = TP_OK;
    for (int i = 0; i < n && !s; i++) {
      if (args[i].kind == R_CONST) ts[i] = m->consts[args[i].c], tp_tensor_retain(ts[i]);
      else if (args[i].kind == R_SCALAR) s = tp_scalar(args[i].s, args[i].is_int, &ts[i]);
    }
    if (!s) s = tp_op_call(op, n, ts, at, &y);
    if (!s) s = tp_contiguous(y, &c);
    for (int i = 0; i < n; i++) tp_tensor_release(ts[i]);
    tp_tensor_release(y);
    if (s) return s;
    return add_const(m, c, out);
  }
  tp_arg targs[64];
  int idx;
  for (int i = 0; i < n; i++) TP_TRY(to_arg(m, args[i], &targs[i]));
  TP_TRY(tp_graph_add_node(m->g, TP_NODE_CALL, NULL, op, n, targs, at, &od, &idx));
  memset(out, 0, sizeof *out);
  out->kind = R_NODE;
  out->node = idx;
  return TP_OK;
}

static tp_status un(imp *m, tp_op op, ref x, ref *out) { return emit(m, op, 1, &x, NULL, out); }
static tp_status bin(imp *m, tp_op op, ref a, ref b, ref *out) {
  ref args[2] = {a, b};
  return emit(m, op, 2, args, NULL, out);
}
static tp_status where3(imp *m, ref c, ref a, ref b, ref *out) {
  ref args[3] = {c, a, b};
  return emit(m, TP_OP_WHERE, 3, args, NULL, out);
}
static tp_status reshape(imp *m, ref x, int nd, const int64_t *shape, ref *out) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.nints = nd;
  memcpy(at.ints, shape, sizeof(int64_t) * (size_t)nd);
  return emit(m, TP_OP_RESHAPE, 1, &x, &at, out);
}
static tp_status cast(imp *m, ref x, tp_dtype d, ref *out) {
  if (rdesc(m, x).dtype == d && x.kind != R_SCALAR) {
    *out = x;
    return TP_OK;
  }
  tp_attrs at;
  tp_attrs_init(&at);
  at.dtype = d;
  return emit(m, TP_OP_CAST, 1, &x, &at, out);
}
static tp_status reduce(imp *m, tp_op op, ref x, int n, const int64_t *dims, int keep, ref *out) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.nints = n;
  memcpy(at.ints, dims, sizeof(int64_t) * (size_t)n);
  at.keepdim = keep;
  return emit(m, op, 1, &x, &at, out);
}

/* ---- node inputs, outputs, attributes ---- */
static tp_status in(imp *m, onode *n, int i, ref *out) {
  *out = none(); /* defined on every path (and for GCC's -Wmaybe-uninitialized) */
  if (i >= n->nin || !*n->in[i]) {
    *out = none();
    return TP_OK;
  }
  entry *e = lookup(m, n->in[i]);
  if (!e) return tp_fail(TP_ERR_PARSE, "input %d '%s' is not defined before the node", i, n->in[i]);
  *out = e->r;
  return TP_OK;
}
static tp_status need_in(imp *m, onode *n, int i, ref *out) {
  TP_TRY(in(m, n, i, out));
  if (out->kind == R_NONE) return tp_fail(TP_ERR_INVALID_ARG, "input %d is required", i);
  return TP_OK;
}
static int has_out(onode *n, int i) { return i < n->nout && *n->out[i]; }
static tp_status set_out(imp *m, onode *n, int i, ref r) {
  if (!has_out(n, i)) return TP_OK;
  return define(m, n->out[i], r);
}

static attr *fa(imp *m, onode *n, const char *name, int type) {
  for (int i = 0; i < n->nattrs; i++)
    if (!strcmp(n->attrs[i].name, name)) {
      n->attrs[i].used = 1;
      if (n->attrs[i].type != type && !m->bad_attr) m->bad_attr = n->attrs[i].name;
      return n->attrs[i].type == type ? &n->attrs[i] : NULL;
    }
  return NULL;
}
enum { A_FLOAT = 1, A_INT = 2, A_STRING = 3, A_TENSOR = 4, A_FLOATS = 6, A_INTS = 7 };
static int64_t ai(imp *m, onode *n, const char *name, int64_t def) {
  attr *a = fa(m, n, name, A_INT);
  return a ? a->i : def;
}
static double af(imp *m, onode *n, const char *name, double def) {
  attr *a = fa(m, n, name, A_FLOAT);
  return a ? a->f : def;
}
static const char *as(imp *m, onode *n, const char *name, const char *def) {
  attr *a = fa(m, n, name, A_STRING);
  return a && a->s ? a->s : def;
}
static void ignore_attr(onode *n, const char *name) {
  for (int i = 0; i < n->nattrs; i++)
    if (!strcmp(n->attrs[i].name, name)) n->attrs[i].used = 1;
}

/* Constant int list from a tensor ref (0-d or 1-d int32/int64). */
static tp_status const_ints(imp *m, ref r, const char *what, int64_t *v, int max, int *nv) {
  if (r.kind == R_SCALAR) {
    v[0] = (int64_t)r.s;
    *nv = 1;
    return TP_OK;
  }
  if (r.kind != R_CONST)
    return tp_fail(TP_ERR_UNSUPPORTED, "%s must be a constant (computed only from initializers "
                   "and shapes)", what);
  tp_tensor *t = m->consts[r.c];
  if (t->ndim > 1 || (t->dtype != TP_I64 && t->dtype != TP_I32))
    return tp_fail(TP_ERR_INVALID_ARG, "%s must be a 1-d int64 tensor", what);
  int64_t k = tp_tensor_numel(t);
  if (k > max) return tp_fail(TP_ERR_UNSUPPORTED, "%s has %lld values (at most %d)", what, (long long)k, max);
  for (int64_t i = 0; i < k; i++) v[i] = (int64_t)tp_tensor_get_f64(t, i);
  if (t->dtype == TP_I64) /* exact, also beyond 2^53 */
    for (int64_t i = 0; i < k; i++) v[i] = ((const int64_t *)tp_tensor_ptr(t))[i];
  *nv = (int)k;
  return TP_OK;
}

static tp_status const_scalar(imp *m, ref r, const char *what, double *v) {
  *v = 0;
  if (r.kind == R_SCALAR) {
    *v = r.s;
    return TP_OK;
  }
  if (r.kind != R_CONST || tp_tensor_numel(m->consts[r.c]) != 1)
    return tp_fail(TP_ERR_UNSUPPORTED, "%s must be a one-element constant", what);
  *v = tp_tensor_get_f64(m->consts[r.c], 0);
  return TP_OK;
}

static tp_status norm_axis(int64_t axis, int nd, const char *what, int64_t *out) {
  *out = 0;
  if (axis < -nd || axis >= nd)
    return tp_fail(TP_ERR_INVALID_ARG, "%s %lld is out of range for rank %d", what, (long long)axis, nd);
  *out = axis < 0 ? axis + nd : axis;
  return TP_OK;
}

/* ---- converters ---- */
static tp_status slice1(imp *m, ref x, int64_t dim, int64_t start, int64_t end, int64_t step, ref *out);
static tp_status concat_many(imp *m, int k, ref *args, int64_t dim, ref *out);
typedef tp_status (*conv_fn)(imp *m, onode *n, int arg);

static tp_status cv_binary(imp *m, onode *n, int op) {
  ref a, b, y;
  TP_TRY(need_in(m, n, 0, &a));
  TP_TRY(need_in(m, n, 1, &b));
  tp_desc da = rdesc(m, a);
  TP_TRY(bin(m, (tp_op)op, a, b, &y));
  if (op == TP_OP_DIV && da.dtype != TP_F32) TP_TRY(cast(m, y, da.dtype, &y)); /* truncates */
  return set_out(m, n, 0, y);
}

static tp_status cv_unary(imp *m, onode *n, int op) {
  ref x, y;
  TP_TRY(need_in(m, n, 0, &x));
  if (op == TP_OP_GELU) {
    tp_attrs at;
    tp_attrs_init(&at);
    const char *ap = as(m, n, "approximate", "none");
    if (strcmp(ap, "none") && strcmp(ap, "tanh"))
      return tp_fail(TP_ERR_UNSUPPORTED, "approximate='%s' is not supported", ap);
    at.approximate = !strcmp(ap, "tanh");
    TP_TRY(emit(m, TP_OP_GELU, 1, &x, &at, &y));
  } else {
    TP_TRY(un(m, (tp_op)op, x, &y));
  }
  return set_out(m, n, 0, y);
}

static tp_status cv_reciprocal(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, y;
  TP_TRY(need_in(m, n, 0, &x));
  TP_TRY(bin(m, TP_OP_DIV, scal(1.0), x, &y));
  return set_out(m, n, 0, y);
}

static tp_status cv_identity(imp *m, onode *n, int arg) {
  (void)arg;
  ref x;
  TP_TRY(need_in(m, n, 0, &x));
  return set_out(m, n, 0, x);
}

static tp_status cv_not(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, y;
  TP_TRY(need_in(m, n, 0, &x));
  if (rdesc(m, x).dtype != TP_BOOL) return tp_fail(TP_ERR_INVALID_ARG, "input must be bool");
  ref f = scal(0);
  f.is_int = 1;
  TP_TRY(bin(m, TP_OP_EQ, x, f, &y));
  return set_out(m, n, 0, y);
}

static tp_status cv_pow(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, e, y;
  double v;
  TP_TRY(need_in(m, n, 0, &x));
  TP_TRY(need_in(m, n, 1, &e));
  tp_desc dx = rdesc(m, x);
  if (dx.dtype == TP_BOOL || rdesc(m, e).dtype == TP_BOOL)
    return tp_fail(TP_ERR_INVALID_ARG, "bool operands are not supported");
  if (const_scalar(m, e, "the exponent", &v) != TP_OK ||
      !(v == 0.5 || v == 0 || v == 1 || v == 2 || v == 3 || v == 4 || v == -1) ||
      ((v == 0.5 || v == -1) && dx.dtype != TP_F32)) {
    /* general case: |x|^y = exp(y log|x|) in float32; a negative base takes
     * the sign of (-1)^y for integral y and is NaN otherwise; x^0 = 1. */
    ref xf, yf, yi, h, odd, r, t, neg, c;
    ref z = scal(0), one = scal(1), two = scal(2);
    z.is_int = one.is_int = two.is_int = 1;
    TP_TRY(cast(m, x, TP_F32, &xf));
    TP_TRY(cast(m, e, TP_F32, &yf));
    TP_TRY(un(m, TP_OP_ABS, xf, &t));
    TP_TRY(un(m, TP_OP_LOG, t, &t));
    TP_TRY(bin(m, TP_OP_MUL, yf, t, &t));
    TP_TRY(un(m, TP_OP_EXP, t, &r));
    TP_TRY(cast(m, yf, TP_I64, &yi)); /* exponent parity (truncated) */
    TP_TRY(bin(m, TP_OP_DIV, yi, two, &h));
    TP_TRY(cast(m, h, TP_I64, &h));
    TP_TRY(bin(m, TP_OP_MUL, h, two, &h));
    TP_TRY(bin(m, TP_OP_SUB, yi, h, &odd));
    TP_TRY(bin(m, TP_OP_EQ, odd, z, &odd)); /* true: even */
    TP_TRY(bin(m, TP_OP_LT, xf, z, &neg));
    TP_TRY(un(m, TP_OP_NEG, r, &t));
    TP_TRY(where3(m, odd, r, t, &t));
    TP_TRY(where3(m, neg, t, r, &r));
    TP_TRY(cast(m, yi, TP_F32, &c)); /* non-integral exponent of a negative base: NaN */
    TP_TRY(bin(m, TP_OP_EQ, c, yf, &c));
    TP_TRY(where3(m, c, r, scal(NAN), &t));
    TP_TRY(where3(m, neg, t, r, &r));
    TP_TRY(bin(m, TP_OP_EQ, yf, z, &c));
    TP_TRY(where3(m, c, scal(1.0), r, &y));
    if (dx.dtype != TP_F32) { /* round to nearest before the int cast */
      TP_TRY(bin(m, TP_OP_LT, y, z, &c));
      TP_TRY(where3(m, c, scal(-0.5), scal(0.5), &t));
      TP_TRY(bin(m, TP_OP_ADD, y, t, &y));
      TP_TRY(cast(m, y, dx.dtype, &y));
    }
    return set_out(m, n, 0, y);
  }
  if (v == 0.5 && dx.dtype == TP_F32) {
    TP_TRY(un(m, TP_OP_SQRT, x, &y));
  } else if (v == 1) {
    y = x;
  } else if (v == 2 || v == 3 || v == 4) {
    y = x;
    for (int i = 1; i < (int)v; i++) TP_TRY(bin(m, TP_OP_MUL, y, x, &y));
  } else if (v == -1 && dx.dtype == TP_F32) {
    TP_TRY(bin(m, TP_OP_DIV, scal(1.0), x, &y));
  } else if (v == 0) {
    TP_TRY(bin(m, TP_OP_MUL, x, scal(0), &y));
    TP_TRY(bin(m, TP_OP_ADD, y, scal(1), &y));
    TP_TRY(cast(m, y, dx.dtype, &y));
  } else {
    return tp_fail(TP_ERR_UNSUPPORTED, "exponent %g is not supported (0, 0.5, 1, 2, 3, 4, -1 are)", v);
  }
  /* the exponent's shape can broadcast the result */
  tp_desc de = rdesc(m, e), dy = rdesc(m, y);
  if (de.ndim > dy.ndim) {
    int64_t sh[TP_MAX_DIMS];
    for (int i = 0; i < de.ndim; i++) sh[i] = i < de.ndim - dy.ndim ? 1 : dy.shape[i - (de.ndim - dy.ndim)];
    TP_TRY(reshape(m, y, de.ndim, sh, &y));
  }
  return set_out(m, n, 0, y);
}

static tp_status cv_matmul(imp *m, onode *n, int arg) {
  (void)arg;
  ref a, b, y;
  TP_TRY(need_in(m, n, 0, &a));
  TP_TRY(need_in(m, n, 1, &b));
  TP_TRY(bin(m, TP_OP_MATMUL, a, b, &y));
  return set_out(m, n, 0, y);
}

static tp_status transpose2(imp *m, ref x, ref *out) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = 0;
  at.dim1 = 1;
  return emit(m, TP_OP_TRANSPOSE, 1, &x, &at, out);
}

static tp_status cv_gemm(imp *m, onode *n, int arg) {
  (void)arg;
  ref a, b, c, y;
  double alpha = af(m, n, "alpha", 1.0), beta = af(m, n, "beta", 1.0);
  int ta = (int)ai(m, n, "transA", 0), tb = (int)ai(m, n, "transB", 0);
  TP_TRY(need_in(m, n, 0, &a));
  TP_TRY(need_in(m, n, 1, &b));
  TP_TRY(in(m, n, 2, &c));
  if (rdesc(m, a).ndim != 2 || rdesc(m, b).ndim != 2)
    return tp_fail(TP_ERR_INVALID_ARG, "A and B must be 2-d");
  if (ta) TP_TRY(transpose2(m, a, &a));
  /* linear wants w = [N, K]: B^T, folded when B is a constant */
  tp_desc dc = rdesc(m, c);
  int64_t N = rdesc(m, b).shape[tb ? 0 : 1];
  int bias_ok = c.kind != R_NONE && beta == 1.0 && dc.ndim == 1 && dc.shape[0] == N;
  if ((tb || b.kind == R_CONST) && rdesc(m, a).dtype == TP_F32) {
    ref w = b;
    if (!tb) TP_TRY(transpose2(m, b, &w));
    ref args[3] = {a, w, alpha == 1.0 && bias_ok ? c : none()};
    TP_TRY(emit(m, TP_OP_LINEAR, 3, args, NULL, &y));
    if (alpha != 1.0) TP_TRY(bin(m, TP_OP_MUL, y, scal(alpha), &y));
    if (!(alpha == 1.0 && bias_ok)) bias_ok = 0;
    else c = none();
  } else {
    if (tb) TP_TRY(transpose2(m, b, &b));
    TP_TRY(bin(m, TP_OP_MATMUL, a, b, &y));
    if (alpha != 1.0) TP_TRY(bin(m, TP_OP_MUL, y, scal(alpha), &y));
  }
  if (c.kind != R_NONE) {
    if (beta != 1.0) TP_TRY(bin(m, TP_OP_MUL, c, scal(beta), &c));
    TP_TRY(bin(m, TP_OP_ADD, y, c, &y));
  }
  return set_out(m, n, 0, y);
}

static tp_status cv_softmax(imp *m, onode *n, int op) {
  ref x, y;
  TP_TRY(need_in(m, n, 0, &x));
  tp_desc d = rdesc(m, x);
  int64_t axis;
  if (m->opset < 13) { /* opset < 13: coerce to 2-D [prod(:axis), prod(axis:)] */
    TP_TRY(norm_axis(ai(m, n, "axis", 1), d.ndim ? d.ndim : 1, "axis", &axis));
    int64_t s2[2] = {1, 1};
    for (int i = 0; i < d.ndim; i++) s2[i >= axis] *= d.shape[i];
    tp_attrs at;
    tp_attrs_init(&at);
    at.dim = 1;
    TP_TRY(reshape(m, x, 2, s2, &y));
    TP_TRY(emit(m, (tp_op)op, 1, &y, &at, &y));
    TP_TRY(reshape(m, y, d.ndim, d.shape, &y));
    return set_out(m, n, 0, y);
  }
  TP_TRY(norm_axis(ai(m, n, "axis", -1), d.ndim ? d.ndim : 1, "axis", &axis));
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = axis;
  TP_TRY(emit(m, (tp_op)op, 1, &x, &at, &y));
  return set_out(m, n, 0, y);
}

static tp_status cv_layernorm(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, sc, bi, y;
  TP_TRY(need_in(m, n, 0, &x));
  TP_TRY(need_in(m, n, 1, &sc));
  TP_TRY(in(m, n, 2, &bi));
  tp_desc d = rdesc(m, x);
  int64_t axis;
  TP_TRY(norm_axis(ai(m, n, "axis", -1), d.ndim, "axis", &axis));
  double eps = af(m, n, "epsilon", 1e-5);
  if (ai(m, n, "stash_type", 1) != 1)
    return tp_fail(TP_ERR_UNSUPPORTED, "stash_type other than 1 (float) is not supported");
  tp_attrs at;
  tp_attrs_init(&at);
  at.nints = d.ndim - (int)axis;
  memcpy(at.ints, d.shape + axis, sizeof(int64_t) * (size_t)at.nints);
  at.eps = (float)eps;
  tp_desc ns;
  memset(&ns, 0, sizeof ns);
  ns.dtype = TP_F32;
  ns.ndim = at.nints;
  memcpy(ns.shape, at.ints, sizeof(int64_t) * (size_t)at.nints);
  tp_desc ds = rdesc(m, sc), db = rdesc(m, bi);
  int sc_in = tp_desc_equal(&ds, &ns), bi_in = bi.kind == R_NONE || (sc_in && tp_desc_equal(&db, &ns));
  ref args[3] = {x, sc_in ? sc : none(), bi_in ? bi : none()};
  TP_TRY(emit(m, TP_OP_LAYER_NORM, 3, args, &at, &y));
  if (!sc_in) TP_TRY(bin(m, TP_OP_MUL, y, sc, &y));
  if (!bi_in) TP_TRY(bin(m, TP_OP_ADD, y, bi, &y));
  TP_TRY(set_out(m, n, 0, y));
  if (has_out(n, 1) || has_out(n, 2)) {
    int64_t dims[TP_MAX_DIMS];
    ref mean, dev, var, inv;
    for (int i = 0; i < at.nints; i++) dims[i] = axis + i;
    TP_TRY(reduce(m, TP_OP_MEAN, x, at.nints, dims, 1, &mean));
    TP_TRY(bin(m, TP_OP_SUB, x, mean, &dev));
    TP_TRY(bin(m, TP_OP_MUL, dev, dev, &dev));
    TP_TRY(reduce(m, TP_OP_MEAN, dev, at.nints, dims, 1, &var));
    TP_TRY(bin(m, TP_OP_ADD, var, scal((float)eps), &var));
    TP_TRY(un(m, TP_OP_RSQRT, var, &inv));
    TP_TRY(set_out(m, n, 1, mean));
    TP_TRY(set_out(m, n, 2, inv));
  }
  return TP_OK;
}

static tp_status cv_reshape(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, s, y;
  int64_t sh[TP_MAX_DIMS];
  int ns;
  TP_TRY(need_in(m, n, 0, &x));
  TP_TRY(need_in(m, n, 1, &s));
  TP_TRY(const_ints(m, s, "the shape input", sh, TP_MAX_DIMS, &ns));
  int allowzero = (int)ai(m, n, "allowzero", 0);
  tp_desc d = rdesc(m, x);
  for (int i = 0; i < ns; i++)
    if (sh[i] == 0 && !allowzero) {
      if (i >= d.ndim) return tp_fail(TP_ERR_INVALID_ARG, "shape[%d] = 0 copies a dim the input does not have", i);
      sh[i] = d.shape[i];
    }
  TP_TRY(reshape(m, x, ns, sh, &y));
  return set_out(m, n, 0, y);
}

static tp_status cv_flatten(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, y;
  TP_TRY(need_in(m, n, 0, &x));
  tp_desc d = rdesc(m, x);
  int64_t axis = ai(m, n, "axis", 1), sh[2] = {1, 1};
  if (axis < -d.ndim || axis > d.ndim)
    return tp_fail(TP_ERR_INVALID_ARG, "axis %lld is out of range for rank %d", (long long)axis, d.ndim);
  if (axis < 0) axis += d.ndim;
  for (int i = 0; i < d.ndim; i++) sh[i < axis ? 0 : 1] *= d.shape[i];
  TP_TRY(reshape(m, x, 2, sh, &y));
  return set_out(m, n, 0, y);
}

static tp_status cv_transpose(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, y;
  TP_TRY(need_in(m, n, 0, &x));
  tp_desc d = rdesc(m, x);
  tp_attrs at;
  tp_attrs_init(&at);
  attr *p = fa(m, n, "perm", A_INTS);
  at.nints = d.ndim;
  if (p && (int)p->nints != d.ndim)
    return tp_fail(TP_ERR_INVALID_ARG, "perm has %zu entries for rank %d", p->nints, d.ndim);
  for (int i = 0; i < d.ndim; i++) at.ints[i] = p ? p->ints[i] : d.ndim - 1 - i;
  TP_TRY(emit(m, TP_OP_PERMUTE, 1, &x, &at, &y));
  return set_out(m, n, 0, y);
}

/* axes from input 1 (opset 13+) or the attribute (older). present = 0: none. */
static tp_status axes_of(imp *m, onode *n, int input, int64_t *axes, int *nax, int *present) {
  ref a;
  TP_TRY(in(m, n, input, &a));
  attr *at = fa(m, n, "axes", A_INTS);
  *present = 0;
  *nax = 0;
  if (a.kind != R_NONE) {
    TP_TRY(const_ints(m, a, "the axes input", axes, TP_MAX_DIMS, nax));
    *present = 1;
  } else if (at) {
    if (at->nints > TP_MAX_DIMS) return tp_fail(TP_ERR_INVALID_ARG, "too many axes");
    if (at->nints) memcpy(axes, at->ints, sizeof(int64_t) * at->nints); /* ints is NULL when empty */
    *nax = (int)at->nints;
    *present = 1;
  }
  return TP_OK;
}

static tp_status cv_unsqueeze(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, y;
  int64_t axes[TP_MAX_DIMS], sh[TP_MAX_DIMS];
  int nax, present, mark[TP_MAX_DIMS] = {0};
  TP_TRY(need_in(m, n, 0, &x));
  TP_TRY(axes_of(m, n, 1, axes, &nax, &present));
  tp_desc d = rdesc(m, x);
  int r = d.ndim + nax;
  if (!present || r > TP_MAX_DIMS) return tp_fail(TP_ERR_INVALID_ARG, "needs axes (output rank %d)", r);
  for (int i = 0; i < nax; i++) {
    int64_t a;
    TP_TRY(norm_axis(axes[i], r, "axis", &a));
    if (mark[a]) return tp_fail(TP_ERR_INVALID_ARG, "axis %lld repeats", (long long)axes[i]);
    mark[a] = 1;
  }
  for (int i = 0, k = 0; i < r; i++) sh[i] = mark[i] ? 1 : d.shape[k++];
  TP_TRY(reshape(m, x, r, sh, &y));
  return set_out(m, n, 0, y);
}

static tp_status cv_squeeze(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, y;
  int64_t axes[TP_MAX_DIMS], sh[TP_MAX_DIMS];
  int nax, present, mark[TP_MAX_DIMS] = {0}, r = 0;
  TP_TRY(need_in(m, n, 0, &x));
  TP_TRY(axes_of(m, n, 1, axes, &nax, &present));
  tp_desc d = rdesc(m, x);
  for (int i = 0; i < nax; i++) {
    int64_t a;
    TP_TRY(norm_axis(axes[i], d.ndim, "axis", &a));
    if (d.shape[a] != 1) return tp_fail(TP_ERR_INVALID_ARG, "cannot squeeze axis %lld of size %lld", (long long)axes[i], (long long)d.shape[a]);
    mark[a] = 1;
  }
  for (int i = 0; i < d.ndim; i++)
    if (!(present ? mark[i] : d.shape[i] == 1)) sh[r++] = d.shape[i];
  TP_TRY(reshape(m, x, r, sh, &y));
  return set_out(m, n, 0, y);
}

static tp_status cv_concat(imp *m, onode *n, int arg) {
  (void)arg;
  ref args[64], y;
  int k = 0;
  if (n->nin > 64) return tp_fail(TP_ERR_UNSUPPORTED, "more than 64 inputs");
  for (int i = 0; i < n->nin; i++) {
    TP_TRY(need_in(m, n, i, &args[k]));
    if (tp_shape_numel(rdesc(m, args[k]).ndim, rdesc(m, args[k]).shape) > 0 || n->nin == 1) k++;
  }
  if (!k) TP_TRY(need_in(m, n, 0, &args[k++])); /* all empty */
  tp_desc d = rdesc(m, args[0]);
  tp_attrs at;
  tp_attrs_init(&at);
  int64_t axis;
  TP_TRY(norm_axis(ai(m, n, "axis", 0), d.ndim, "axis", &axis));
  at.dim = axis;
  if (k == 1) y = args[0];
  else TP_TRY(emit(m, TP_OP_CONCAT, k, args, &at, &y));
  return set_out(m, n, 0, y);
}

static tp_status cv_slice(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, r1, r2, r3, r4, y;
  int64_t st[TP_MAX_DIMS], en[TP_MAX_DIMS], ax[TP_MAX_DIMS], sp[TP_MAX_DIMS];
  int ns, ne, na, nsp;
  TP_TRY(need_in(m, n, 0, &x));
  tp_desc d = rdesc(m, x);
  if (m->opset < 10) { /* opset 1..9: starts, ends, axes are attributes */
    attr *as_ = fa(m, n, "starts", A_INTS), *ae = fa(m, n, "ends", A_INTS), *aa = fa(m, n, "axes", A_INTS);
    if (!as_ || !ae) return tp_fail(TP_ERR_INVALID_ARG, "attributes starts and ends are required (opset < 10)");
    if (as_->nints > TP_MAX_DIMS || as_->nints != ae->nints || (aa && aa->nints != as_->nints))
      return tp_fail(TP_ERR_INVALID_ARG, "starts, ends and axes differ in length (or have more than %d values)", TP_MAX_DIMS);
    ns = ne = na = nsp = (int)as_->nints;
    for (int i = 0; i < ns; i++)
      st[i] = as_->ints[i], en[i] = ae->ints[i], ax[i] = aa ? aa->ints[i] : i, sp[i] = 1;
  } else {
  TP_TRY(need_in(m, n, 1, &r1));
  TP_TRY(need_in(m, n, 2, &r2));
  TP_TRY(in(m, n, 3, &r3));
  TP_TRY(in(m, n, 4, &r4));
  TP_TRY(const_ints(m, r1, "starts", st, TP_MAX_DIMS, &ns));
  TP_TRY(const_ints(m, r2, "ends", en, TP_MAX_DIMS, &ne));
  if (ns != ne) return tp_fail(TP_ERR_INVALID_ARG, "starts and ends differ in length");
  if (r3.kind != R_NONE) TP_TRY(const_ints(m, r3, "axes", ax, TP_MAX_DIMS, &na));
  else for (na = 0; na < ns; na++) ax[na] = na;
  if (r4.kind != R_NONE) TP_TRY(const_ints(m, r4, "steps", sp, TP_MAX_DIMS, &nsp));
  else for (nsp = 0; nsp < ns; nsp++) sp[nsp] = 1;
  }
  if (na != ns || nsp != ns) return tp_fail(TP_ERR_INVALID_ARG, "starts, axes and steps differ in length");
  y = x;
  for (int i = 0; i < ns; i++) {
    int64_t a;
    TP_TRY(norm_axis(ax[i], d.ndim, "axis", &a));
    if (sp[i] == 0) return tp_fail(TP_ERR_INVALID_ARG, "step 0 on axis %lld", (long long)ax[i]);
    if (sp[i] < 0) { /* negative step: one slice per element, concatenated */
      int64_t len = rdesc(m, y).shape[a], b = st[i], e = en[i];
      if (b < 0) b += len;
      if (e < 0) e += len;
      b = b < -1 ? -1 : b > len - 1 ? len - 1 : b;
      e = e < -1 ? -1 : e > len - 1 ? len - 1 : e;
      int64_t cnt = b > e ? (b - e - 1) / -sp[i] + 1 : 0;
      if (cnt > 4096) return tp_fail(TP_ERR_UNSUPPORTED, "a negative-step slice of %lld elements (at most 4096)", (long long)cnt);
      if (cnt == 0) {
        TP_TRY(slice1(m, y, a, 0, 0, 1, &y));
        continue;
      }
      ref *parts = tp_alloc(sizeof(ref) * (size_t)cnt);
      if (!parts) return TP_ERR_OUT_OF_MEMORY;
      tp_status s2 = TP_OK;
      for (int64_t k = 0; k < cnt && !s2; k++) s2 = slice1(m, y, a, b + k * sp[i], b + k * sp[i] + 1, 1, &parts[k]);
      if (!s2) s2 = concat_many(m, (int)cnt, parts, a, &y);
      tp_free(parts);
      TP_TRY(s2);
      continue;
    }
    tp_attrs at;
    tp_attrs_init(&at);
    at.dim = a;
    at.start = st[i];
    at.end = en[i];
    at.step = sp[i];
    TP_TRY(emit(m, TP_OP_SLICE, 1, &y, &at, &y));
  }
  return set_out(m, n, 0, y);
}

static tp_status cv_where(imp *m, onode *n, int arg) {
  (void)arg;
  ref c, a, b, y;
  TP_TRY(need_in(m, n, 0, &c));
  TP_TRY(need_in(m, n, 1, &a));
  TP_TRY(need_in(m, n, 2, &b));
  TP_TRY(where3(m, c, a, b, &y));
  return set_out(m, n, 0, y);
}

static tp_status cv_cast(imp *m, onode *n, int like) {
  ref x, y;
  tp_dtype d;
  TP_TRY(need_in(m, n, 0, &x));
  if (like) {
    ref t;
    TP_TRY(need_in(m, n, 1, &t));
    d = rdesc(m, t).dtype;
  } else {
    int64_t to = ai(m, n, "to", 0);
    ignore_attr(n, "saturate");
    if (!tp_onnx_to_dtype(to, &d))
      return tp_fail(TP_ERR_UNSUPPORTED, "cast to %s is not supported", tp_onnx_dtype_name((int)to));
  }
  TP_TRY(cast(m, x, d, &y));
  return set_out(m, n, 0, y);
}

static tp_status cv_dropout(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, tm;
  TP_TRY(need_in(m, n, 0, &x));
  TP_TRY(in(m, n, 2, &tm));
  ignore_attr(n, "seed");
  ignore_attr(n, "ratio");
  if (tm.kind != R_NONE) {
    double v;
    TP_TRY(const_scalar(m, tm, "training_mode", &v));
    if (v != 0) return tp_fail(TP_ERR_UNSUPPORTED, "training_mode=true is not supported (inference only)");
  }
  TP_TRY(set_out(m, n, 0, x));
  if (has_out(n, 1)) {
    tp_desc d = rdesc(m, x);
    tp_tensor *t;
    ref r;
    TP_TRY(tp_ones(TP_BOOL, d.ndim, d.shape, &t));
    TP_TRY(add_const(m, t, &r));
    TP_TRY(set_out(m, n, 1, r));
  }
  return TP_OK;
}

static tp_status full_const(imp *m, tp_dtype dt, int nd, const int64_t *sh, double v, ref *out) {
  tp_tensor *t;
  TP_TRY(tp_full(dt, nd, sh, v, &t));
  return add_const(m, t, out);
}

static tp_status cv_reduce(imp *m, onode *n, int op) {
  ref x, y;
  int64_t axes[TP_MAX_DIMS];
  int nax, present, l2 = op == -1;
  TP_TRY(need_in(m, n, 0, &x));
  TP_TRY(axes_of(m, n, 1, axes, &nax, &present));
  int keep = (int)ai(m, n, "keepdims", 1);
  int noop = (int)ai(m, n, "noop_with_empty_axes", 0);
  tp_desc d = rdesc(m, x);
  if (nax == 0 && noop) return set_out(m, n, 0, x);
  int mask[TP_MAX_DIMS] = {0};
  for (int i = 0; i < nax; i++) {
    int64_t a;
    TP_TRY(norm_axis(axes[i], d.ndim, "axis", &a));
    axes[i] = a;
    mask[a] = 1;
  }
  if (nax == 0)
    for (int i = 0; i < d.ndim; i++) mask[i] = 1;
  int64_t osh[TP_MAX_DIMS], red = 1;
  int ond = 0;
  for (int i = 0; i < d.ndim; i++) {
    if (mask[i]) red *= d.shape[i];
    if (!mask[i]) osh[ond++] = d.shape[i];
    else if (keep) osh[ond++] = 1;
  }
  if (red == 0 || tp_shape_numel(d.ndim, d.shape) == 0) { /* empty set: the identity */
    double v = op == TP_OP_MAX ? -INFINITY : op == TP_OP_MIN ? INFINITY : op == TP_OP_MEAN ? NAN : op == -2 ? 1 : 0;
    if (d.dtype != TP_F32 && isinf(v)) v = op == TP_OP_MAX ? (d.dtype == TP_I32 ? INT32_MIN : (double)INT64_MIN) : (d.dtype == TP_I32 ? INT32_MAX : 9.2233720368547748e18);
    TP_TRY(full_const(m, d.dtype, ond, osh, v, &y));
    return set_out(m, n, 0, y);
  }
  if (op == -2) { /* ReduceProd: multiply the slices of each reduced axis */
    y = x;
    for (int a = 0; a < d.ndim; a++) {
      if (!mask[a]) continue;
      if (d.shape[a] > 4096) return tp_fail(TP_ERR_UNSUPPORTED, "axis size %lld (at most 4096)", (long long)d.shape[a]);
      ref acc, e;
      TP_TRY(slice1(m, y, a, 0, 1, 1, &acc));
      for (int64_t i = 1; i < d.shape[a]; i++) {
        TP_TRY(slice1(m, y, a, i, i + 1, 1, &e));
        TP_TRY(bin(m, TP_OP_MUL, acc, e, &acc));
      }
      y = acc;
    }
    if (!keep) TP_TRY(reshape(m, y, ond, osh, &y));
    if (rdesc(m, y).dtype != d.dtype) TP_TRY(cast(m, y, d.dtype, &y));
    return set_out(m, n, 0, y);
  }
  if (l2) {
    TP_TRY(bin(m, TP_OP_MUL, x, x, &x));
    op = TP_OP_SUM;
  }
  TP_TRY(reduce(m, (tp_op)op, x, nax, axes, keep, &y));
  if (l2) TP_TRY(un(m, TP_OP_SQRT, y, &y));
  if (rdesc(m, y).dtype != d.dtype) TP_TRY(cast(m, y, d.dtype, &y));
  return set_out(m, n, 0, y);
}

static tp_status cv_shape(imp *m, onode *n, int size) {
  ref x, y;
  TP_TRY(need_in(m, n, 0, &x));
  tp_desc d = rdesc(m, x);
  tp_tensor *t;
  if (size) {
    int64_t v = tp_shape_numel(d.ndim, d.shape);
    TP_TRY(tp_tensor_new(TP_I64, 0, NULL, &v, &t));
  } else {
    int64_t s = ai(m, n, "start", 0), e = ai(m, n, "end", d.ndim);
    if (s < 0) s += d.ndim;
    if (e < 0) e += d.ndim;
    s = s < 0 ? 0 : s > d.ndim ? d.ndim : s;
    e = e < 0 ? 0 : e > d.ndim ? d.ndim : e;
    int64_t len = e > s ? e - s : 0;
    TP_TRY(tp_tensor_new(TP_I64, 1, &len, d.shape + s, &t));
  }
  TP_TRY(add_const(m, t, &y));
  return set_out(m, n, 0, y);
}

static tp_status attr_tensor(imp *m, attr *a, tp_tensor **out) {
  tp_pb r = a->t;
  (void)m;
  return tp_onnx_tensor_read(&r, "constant", out, NULL);
}

static tp_status cv_constant(imp *m, onode *n, int arg) {
  (void)arg;
  tp_tensor *t = NULL;
  ref y;
  attr *a;
  if ((a = fa(m, n, "value", A_TENSOR)) && a->has_t) {
    TP_TRY(attr_tensor(m, a, &t));
  } else if ((a = fa(m, n, "value_float", A_FLOAT))) {
    float v = (float)a->f;
    TP_TRY(tp_tensor_new(TP_F32, 0, NULL, &v, &t));
  } else if ((a = fa(m, n, "value_int", A_INT))) {
    TP_TRY(tp_tensor_new(TP_I64, 0, NULL, &a->i, &t));
  } else if ((a = fa(m, n, "value_floats", A_FLOATS))) {
    int64_t k = (int64_t)a->nfloats;
    TP_TRY(tp_tensor_new(TP_F32, 1, &k, a->floats, &t));
  } else if ((a = fa(m, n, "value_ints", A_INTS))) {
    int64_t k = (int64_t)a->nints;
    TP_TRY(tp_tensor_new(TP_I64, 1, &k, a->ints, &t));
  } else {
    return tp_fail(TP_ERR_UNSUPPORTED, "needs a value, value_float(s) or value_int(s) attribute");
  }
  TP_TRY(add_const(m, t, &y));
  return set_out(m, n, 0, y);
}

static tp_status cv_constant_of_shape(imp *m, onode *n, int arg) {
  (void)arg;
  ref s, y;
  int64_t sh[TP_MAX_DIMS];
  int ns;
  tp_tensor *v = NULL, *t;
  TP_TRY(need_in(m, n, 0, &s));
  TP_TRY(const_ints(m, s, "the shape input", sh, TP_MAX_DIMS, &ns));
  attr *a = fa(m, n, "value", A_TENSOR);
  tp_dtype dt = TP_F32;
  double val = 0;
  if (a && a->has_t) {
    TP_TRY(attr_tensor(m, a, &v));
    dt = v->dtype;
    val = tp_tensor_numel(v) ? tp_tensor_get_f64(v, 0) : 0;
    tp_tensor_release(v);
  }
  for (int i = 0; i < ns; i++)
    if (sh[i] < 0 || sh[i] > (1 << 30)) return tp_fail(TP_ERR_INVALID_ARG, "invalid shape[%d] = %lld", i, (long long)sh[i]);
  if (tp_shape_numel(ns, sh) > ((int64_t)1 << 28)) return tp_fail(TP_ERR_UNSUPPORTED, "constant too large");
  TP_TRY(tp_full(dt, ns, sh, val, &t));
  TP_TRY(add_const(m, t, &y));
  return set_out(m, n, 0, y);
}

static tp_status cv_range(imp *m, onode *n, int arg) {
  (void)arg;
  ref r0, r1, r2, y;
  double s, l, dl;
  TP_TRY(need_in(m, n, 0, &r0));
  TP_TRY(need_in(m, n, 1, &r1));
  TP_TRY(need_in(m, n, 2, &r2));
  TP_TRY(const_scalar(m, r0, "start", &s));
  TP_TRY(const_scalar(m, r1, "limit", &l));
  TP_TRY(const_scalar(m, r2, "delta", &dl));
  tp_dtype dt = rdesc(m, r0).dtype;
  if (dl == 0) return tp_fail(TP_ERR_INVALID_ARG, "delta is 0");
  double cnt = ceil((l - s) / dl);
  if (!(cnt >= 0)) cnt = 0;
  if (cnt > (1 << 28)) return tp_fail(TP_ERR_UNSUPPORTED, "range too large");
  int64_t k = (int64_t)cnt;
  tp_tensor *t;
  TP_TRY(tp_tensor_empty(dt, 1, &k, &t));
  for (int64_t i = 0; i < k; i++) {
    double v = s + (double)i * dl;
    switch (dt) {
      case TP_F32: ((float *)tp_tensor_ptr(t))[i] = (float)((float)s + (float)i * (float)dl); break;
      case TP_I32: ((int32_t *)tp_tensor_ptr(t))[i] = (int32_t)v; break;
      case TP_I64: ((int64_t *)tp_tensor_ptr(t))[i] = (int64_t)v; break;
      default: ((uint8_t *)tp_tensor_ptr(t))[i] = v != 0; break;
    }
  }
  TP_TRY(add_const(m, t, &y));
  return set_out(m, n, 0, y);
}

/* Gather on constants only (shape arithmetic). */
static tp_status cv_gather_data(imp *m, onode *n, ref x, ref ix);
static tp_status cv_gather(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, ix, y;
  TP_TRY(need_in(m, n, 0, &x));
  TP_TRY(need_in(m, n, 1, &ix));
  if (x.kind != R_CONST || ix.kind != R_CONST) return cv_gather_data(m, n, x, ix);
  tp_tensor *t = m->consts[x.c], *it = m->consts[ix.c], *o;
  int64_t axis;
  TP_TRY(norm_axis(ai(m, n, "axis", 0), t->ndim, "axis", &axis));
  if (it->dtype != TP_I64 && it->dtype != TP_I32) return tp_fail(TP_ERR_INVALID_ARG, "indices must be int");
  int nd = t->ndim - 1 + it->ndim;
  if (nd > TP_MAX_DIMS) return tp_fail(TP_ERR_UNSUPPORTED, "result rank %d", nd);
  int64_t sh[TP_MAX_DIMS], outer = 1, inner = 1, ni = tp_tensor_numel(it), dim = t->shape[axis];
  int k = 0;
  for (int i = 0; i < axis; i++) sh[k++] = t->shape[i], outer *= t->shape[i];
  for (int i = 0; i < it->ndim; i++) sh[k++] = it->shape[i];
  for (int i = (int)axis + 1; i < t->ndim; i++) sh[k++] = t->shape[i], inner *= t->shape[i];
  TP_TRY(tp_tensor_empty(t->dtype, nd, sh, &o));
  size_t isz = tp_dtype_size(t->dtype);
  for (int64_t j = 0; j < ni; j++) {
    int64_t v = (int64_t)tp_tensor_get_f64(it, j);
    if (v < 0) v += dim;
    if (v < 0 || v >= dim) {
      tp_tensor_release(o);
      return tp_fail(TP_ERR_INVALID_ARG, "index %lld is out of range for size %lld", (long long)v, (long long)dim);
    }
    for (int64_t a = 0; a < outer; a++)
      memcpy((char *)tp_tensor_ptr(o) + ((a * ni + j) * inner) * isz,
             (char *)tp_tensor_ptr(t) + ((a * dim + v) * inner) * isz, (size_t)inner * isz);
  }
  TP_TRY(add_const(m, o, &y));
  return set_out(m, n, 0, y);
}

static tp_status cv_clip(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, lo, hi, y;
  TP_TRY(need_in(m, n, 0, &x));
  TP_TRY(in(m, n, 1, &lo));
  TP_TRY(in(m, n, 2, &hi));
  if (m->opset < 11) { /* opset 6..10: min and max are float attributes */
    attr *amin = fa(m, n, "min", A_FLOAT), *amax = fa(m, n, "max", A_FLOAT);
    lo = amin ? scal(amin->f) : none();
    hi = amax ? scal(amax->f) : none();
  }
  y = x;
  if (lo.kind != R_NONE) {
    ref c;
    TP_TRY(bin(m, TP_OP_LT, y, lo, &c));
    TP_TRY(where3(m, c, lo, y, &y));
  }
  if (hi.kind != R_NONE) {
    ref c;
    TP_TRY(bin(m, TP_OP_GT, y, hi, &c));
    TP_TRY(where3(m, c, hi, y, &y));
  }
  return set_out(m, n, 0, y);
}

/* Max, Min, Sum, Mean of one or more inputs. */
static tp_status cv_variadic(imp *m, onode *n, int op) {
  ref y, b;
  TP_TRY(need_in(m, n, 0, &y));
  for (int i = 1; i < n->nin; i++) {
    TP_TRY(need_in(m, n, i, &b));
    if (op == TP_OP_MAX || op == TP_OP_MIN) {
      ref c;
      TP_TRY(bin(m, op == TP_OP_MAX ? TP_OP_GT : TP_OP_LT, b, y, &c));
      TP_TRY(where3(m, c, b, y, &y));
    } else {
      TP_TRY(bin(m, TP_OP_ADD, y, b, &y));
    }
  }
  if (op == TP_OP_MEAN && n->nin > 1) TP_TRY(bin(m, TP_OP_DIV, y, scal(n->nin), &y));
  return set_out(m, n, 0, y);
}

/* Activations composed from where/exp/mul. */
enum { ACT_LEAKY, ACT_ELU, ACT_SELU, ACT_HSIG, ACT_HSWISH, ACT_SOFTPLUS };
static tp_status cv_act(imp *m, onode *n, int kind) {
  ref x, y, c, t;
  TP_TRY(need_in(m, n, 0, &x));
  if (rdesc(m, x).dtype != TP_F32) return tp_fail(TP_ERR_INVALID_ARG, "input must be float32");
  switch (kind) {
    case ACT_LEAKY: {
      double alpha = af(m, n, "alpha", 0.01);
      TP_TRY(bin(m, TP_OP_LT, x, scal(0), &c));
      TP_TRY(bin(m, TP_OP_MUL, x, scal((float)alpha), &t));
      TP_TRY(where3(m, c, t, x, &y));
      break;
    }
    case ACT_ELU: case ACT_SELU: {
      double alpha = af(m, n, "alpha", kind == ACT_ELU ? 1.0 : 1.67326319217681884765625);
      double gamma = kind == ACT_SELU ? af(m, n, "gamma", 1.05070102214813232421875) : 1.0;
      TP_TRY(bin(m, kind == ACT_ELU ? TP_OP_LT : TP_OP_GT, x, scal(0), &c));
      TP_TRY(un(m, TP_OP_EXP, x, &t));
      TP_TRY(bin(m, TP_OP_SUB, t, scal(1), &t));
      TP_TRY(bin(m, TP_OP_MUL, t, scal((float)alpha), &t));
      if (kind == ACT_ELU) TP_TRY(where3(m, c, t, x, &y));
      else {
        TP_TRY(where3(m, c, x, t, &y));
        TP_TRY(bin(m, TP_OP_MUL, y, scal((float)gamma), &y));
      }
      break;
    }
    case ACT_HSIG: case ACT_HSWISH: {
      double alpha = kind == ACT_HSIG ? af(m, n, "alpha", 0.2) : 1.0 / 6;
      double beta = kind == ACT_HSIG ? af(m, n, "beta", 0.5) : 0.5;
      TP_TRY(bin(m, TP_OP_MUL, x, scal((float)alpha), &t));
      TP_TRY(bin(m, TP_OP_ADD, t, scal((float)beta), &t));
      TP_TRY(bin(m, TP_OP_LT, t, scal(0), &c));
      TP_TRY(where3(m, c, scal(0), t, &t));
      TP_TRY(bin(m, TP_OP_GT, t, scal(1), &c));
      TP_TRY(where3(m, c, scal(1), t, &y));
      if (kind == ACT_HSWISH) TP_TRY(bin(m, TP_OP_MUL, x, y, &y));
      break;
    }
    default: { /* softplus: log(exp(x) + 1), x itself above 30 */
      TP_TRY(un(m, TP_OP_EXP, x, &t));
      TP_TRY(bin(m, TP_OP_ADD, t, scal(1), &t));
      TP_TRY(un(m, TP_OP_LOG, t, &t));
      TP_TRY(bin(m, TP_OP_GT, x, scal(30), &c));
      TP_TRY(where3(m, c, x, t, &y));
      break;
    }
  }
  return set_out(m, n, 0, y);
}

/* ---- convolution, pooling, normalization and data movement as
 * compositions of existing ops (slices, concat, matmul, reductions). ---- */
static tp_status slice1(imp *m, ref x, int64_t dim, int64_t start, int64_t end, int64_t step, ref *out) {
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = dim;
  at.start = start;
  at.end = end;
  at.step = step;
  return emit(m, TP_OP_SLICE, 1, &x, &at, out);
}
static tp_status concatn(imp *m, int k, const ref *args, int64_t dim, ref *out) {
  if (k == 1) {
    *out = args[0];
    return TP_OK;
  }
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = dim;
  return emit(m, TP_OP_CONCAT, k, args, &at, out);
}
/* Concat of k refs in chunks of 64 (the operand limit). */
static tp_status concat_many(imp *m, int k, ref *args, int64_t dim, ref *out) {
  while (k > 64) {
    int j = 0;
    for (int i = 0; i < k; i += 64) {
      int c = k - i < 64 ? k - i : 64;
      TP_TRY(concatn(m, c, args + i, dim, &args[j]));
      j++;
    }
    k = j;
  }
  return concatn(m, k, args, dim, out);
}
/* Constant padding of x along dim (before/after >= 0) with value v. */
static tp_status pad_const_dim(imp *m, ref x, int dim, int64_t before, int64_t after, double v, ref *out) {
  tp_desc d = rdesc(m, x);
  ref parts[3];
  int k = 0;
  int64_t sh[TP_MAX_DIMS];
  memcpy(sh, d.shape, sizeof sh);
  if (before > 0) {
    sh[dim] = before;
    TP_TRY(full_const(m, d.dtype, d.ndim, sh, v, &parts[k++]));
  }
  parts[k++] = x;
  if (after > 0) {
    sh[dim] = after;
    TP_TRY(full_const(m, d.dtype, d.ndim, sh, v, &parts[k++]));
  }
  return concatn(m, k, parts, dim, out);
}

static tp_status ints_attr(imp *m, onode *n, const char *name, int64_t *v, int want, int64_t def) {
  attr *a = fa(m, n, name, A_INTS);
  for (int i = 0; i < want; i++) v[i] = def;
  if (!a) return TP_OK;
  if ((int)a->nints != want)
    return tp_fail(TP_ERR_INVALID_ARG, "attribute '%s' has %d values, expected %d", name, (int)a->nints, want);
  memcpy(v, a->ints, sizeof(int64_t) * (size_t)want);
  return TP_OK;
}

/* Window geometry shared by Conv and the pools: nsp spatial dims of x
 * (rank 2 + nsp), kernel K, strides S, dilations D, pads P[2*nsp]
 * (begins then ends), output O. ceil: pooling's ceil_mode. */
typedef struct win {
  int nsp;
  int64_t K[6], S[6], D[6], P[12], O[6], extra[6];
} win;

static tp_status win_setup(imp *m, onode *n, const tp_desc *dx, win *w, int dil, int ceil_mode) {
  int nsp = w->nsp;
  TP_TRY(ints_attr(m, n, "strides", w->S, nsp, 1));
  if (dil) TP_TRY(ints_attr(m, n, "dilations", w->D, nsp, 1));
  else for (int i = 0; i < nsp; i++) w->D[i] = 1;
  TP_TRY(ints_attr(m, n, "pads", w->P, 2 * nsp, 0));
  const char *ap = as(m, n, "auto_pad", "NOTSET");
  for (int i = 0; i < nsp; i++) {
    if (w->S[i] < 1 || w->D[i] < 1 || w->K[i] < 1)
      return tp_fail(TP_ERR_INVALID_ARG, "kernel, strides and dilations must be >= 1 (axis %d: %lld, %lld, %lld)",
                     i, (long long)w->K[i], (long long)w->S[i], (long long)w->D[i]);
    if (w->P[i] < 0 || w->P[i + nsp] < 0) return tp_fail(TP_ERR_INVALID_ARG, "pads must be >= 0");
    if (w->K[i] > (1 << 20) || w->S[i] > (1 << 20) || w->D[i] > (1 << 20) || w->P[i] > (1 << 20) ||
        w->P[i + nsp] > (1 << 20))
      return tp_fail(TP_ERR_INVALID_ARG, "kernel, strides, dilations and pads must be at most 2^20");
  }
  for (int i = 0; i < nsp; i++) {
    int64_t in = dx->shape[2 + i], ke = (w->K[i] - 1) * w->D[i] + 1;
    w->extra[i] = 0;
    if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER")) {
      int64_t o = (in + w->S[i] - 1) / w->S[i], tot = (o - 1) * w->S[i] + ke - in;
      if (tot < 0) tot = 0;
      int64_t b = !strcmp(ap, "SAME_UPPER") ? tot / 2 : tot - tot / 2;
      w->P[i] = b, w->P[i + nsp] = tot - b;
    } else if (!strcmp(ap, "VALID")) {
      w->P[i] = w->P[i + nsp] = 0;
    } else if (strcmp(ap, "NOTSET")) {
      return tp_fail(TP_ERR_INVALID_ARG, "auto_pad '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", ap);
    }
    int64_t span = in + w->P[i] + w->P[i + nsp] - ke;
    if (span < 0)
      return tp_fail(TP_ERR_INVALID_ARG, "kernel extent %lld is larger than the padded input %lld on spatial axis %d",
                     (long long)ke, (long long)(in + w->P[i] + w->P[i + nsp]), i);
    int64_t o = span / w->S[i] + 1;
    if (ceil_mode && span % w->S[i]) {
      o++;
      if ((o - 1) * w->S[i] >= in + w->P[i]) o--; /* the last window must start inside */
    }
    w->O[i] = o;
    int64_t need = (o - 1) * w->S[i] + ke - (in + w->P[i] + w->P[i + nsp]);
    w->extra[i] = need > 0 ? need : 0;
  }
  return TP_OK;
}

/* Pads x (explicit pads with v, ceil-mode extra with ev) and stacks the
 * windows: [N, C, K1*..*Kk, O1*..*Ok]. */
static tp_status windows(imp *m, ref x, const win *w, double v, double ev, ref *out) {
  tp_desc d = rdesc(m, x);
  int nsp = w->nsp;
  for (int i = 0; i < nsp; i++) {
    TP_TRY(pad_const_dim(m, x, 2 + i, w->P[i], w->P[i + nsp], v, &x));
    if (w->extra[i]) TP_TRY(pad_const_dim(m, x, 2 + i, 0, w->extra[i], ev, &x));
  }
  int64_t KK = 1, P = 1;
  for (int i = 0; i < nsp; i++) KK *= w->K[i], P *= w->O[i];
  if (KK > 4096) return tp_fail(TP_ERR_UNSUPPORTED, "kernel of %lld elements is too large", (long long)KK);
  ref *parts = tp_alloc(sizeof(ref) * (size_t)KK);
  if (!parts) return TP_ERR_OUT_OF_MEMORY;
  tp_status s = TP_OK;
  int64_t sh[4] = {d.shape[0], d.shape[1], 1, P};
  for (int64_t kk = 0; kk < KK && !s; kk++) {
    int64_t rem = kk;
    ref y = x;
    for (int i = nsp - 1; i >= 0 && !s; i--) {
      int64_t k = rem % w->K[i];
      rem /= w->K[i];
      int64_t st = k * w->D[i];
      s = slice1(m, y, 2 + i, st, st + (w->O[i] - 1) * w->S[i] + 1, w->S[i], &y);
    }
    if (!s) s = reshape(m, y, 4, sh, &parts[kk]);
  }
  if (!s) s = concat_many(m, (int)KK, parts, 2, out);
  tp_free(parts);
  return s;
}

static tp_status check_spatial(const tp_desc *d, const char *what, int min_nd) {
  if (d->ndim < min_nd || d->ndim > 5)
    return tp_fail(TP_ERR_INVALID_ARG, "%s must have rank 3 to 5 ([N, C, spatial...]), got rank %d", what, d->ndim);
  if (d->dtype != TP_F32)
    return tp_fail(TP_ERR_UNSUPPORTED, "%s has dtype %s; only float32 is supported", what, tp_dtype_name(d->dtype));
  return TP_OK;
}

static tp_status conv_apply(imp *m, ref x, ref wt, ref b, int64_t G, const win *wp, ref *out);
static tp_status cv_conv(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, wt, b, y;
  TP_TRY(need_in(m, n, 0, &x));
  TP_TRY(need_in(m, n, 1, &wt));
  TP_TRY(in(m, n, 2, &b));
  tp_desc dx = rdesc(m, x), dw = rdesc(m, wt);
  TP_TRY(check_spatial(&dx, "input X", 3));
  TP_TRY(check_spatial(&dw, "weight W", 3));
  if (dw.ndim != dx.ndim)
    return tp_fail(TP_ERR_INVALID_ARG, "weight W has rank %d, input X rank %d (they must match)", dw.ndim, dx.ndim);
  win w;
  memset(&w, 0, sizeof w);
  w.nsp = dx.ndim - 2;
  int64_t ks[6];
  TP_TRY(ints_attr(m, n, "kernel_shape", ks, w.nsp, -1));
  for (int i = 0; i < w.nsp; i++) {
    w.K[i] = dw.shape[2 + i];
    if (ks[i] != -1 && ks[i] != w.K[i])
      return tp_fail(TP_ERR_INVALID_ARG, "kernel_shape[%d] = %lld does not match the weight (%lld)", i, (long long)ks[i], (long long)w.K[i]);
  }
  int64_t G = ai(m, n, "group", 1), C = dx.shape[1], M = dw.shape[0];
  if (G < 1 || C % G || M % G || dw.shape[1] * G != C)
    return tp_fail(TP_ERR_INVALID_ARG, "group %lld does not fit input channels %lld and weight %lld x %lld",
                   (long long)G, (long long)C, (long long)M, (long long)dw.shape[1]);
  TP_TRY(win_setup(m, n, &dx, &w, 1, 0));
  TP_TRY(conv_apply(m, x, wt, b, G, &w, &y));
  return set_out(m, n, 0, y);
}

/* 1-D and 2-D: the conv2d op (1-D as H = 1), window from w. */
static tp_status conv2d_apply(imp *m, ref x, ref wt, ref b, int64_t G, const win *w, ref *out) {
  tp_desc dx = rdesc(m, x), dw = rdesc(m, wt);
  tp_attrs at;
  tp_attrs_init(&at);
  at.nints = 8;
  at.dim = G;
  if (w->nsp == 1) {
    int64_t sx[4] = {dx.shape[0], dx.shape[1], 1, dx.shape[2]}, sw[4] = {dw.shape[0], dw.shape[1], 1, dw.shape[2]};
    TP_TRY(reshape(m, x, 4, sx, &x));
    TP_TRY(reshape(m, wt, 4, sw, &wt));
    int64_t v[8] = {1, w->S[0], 0, w->P[0], 0, w->P[1], 1, w->D[0]};
    memcpy(at.ints, v, sizeof v);
  } else {
    int64_t v[8] = {w->S[0], w->S[1], w->P[0], w->P[1], w->P[2], w->P[3], w->D[0], w->D[1]};
    memcpy(at.ints, v, sizeof v);
  }
  if (b.kind != R_NONE) {
    tp_desc db = rdesc(m, b);
    if (db.ndim != 1 || db.shape[0] != dw.shape[0])
      return tp_fail(TP_ERR_INVALID_ARG, "bias B must have shape [%lld]", (long long)dw.shape[0]);
  }
  ref args[3] = {x, wt, b};
  ref y;
  TP_TRY(emit(m, TP_OP_CONV2D, 3, args, &at, &y));
  if (w->nsp == 1) {
    tp_desc dy = rdesc(m, y);
    int64_t so[3] = {dy.shape[0], dy.shape[1], dy.shape[3]};
    TP_TRY(reshape(m, y, 3, so, &y));
  }
  *out = y;
  return TP_OK;
}

/* y = conv(x, wt) (+ b) over the window geometry w; [N, M, O...]. 1-D and
 * 2-D run the conv2d op; 3-D is im2col by strided slices plus a batched
 * matmul. */
static tp_status conv_apply(imp *m, ref x, ref wt, ref b, int64_t G, const win *wp, ref *out) {
  win w = *wp;
  ref y;
  if (w.nsp <= 2) return conv2d_apply(m, x, wt, b, G, &w, out);
  tp_desc dx = rdesc(m, x), dw = rdesc(m, wt);
  int64_t N = dx.shape[0], C = dx.shape[1], M = dw.shape[0];
  int64_t KK = 1, P = 1;
  for (int i = 0; i < w.nsp; i++) KK *= w.K[i], P *= w.O[i];
  ref cols;
  TP_TRY(windows(m, x, &w, 0, 0, &cols)); /* [N, C, KK, P] */
  int64_t Cg = C / G, Mg = M / G;
  int64_t s5[4] = {N, G, Cg * KK, P}, sw[3] = {G, Mg, Cg * KK}, s3[3] = {N, M, P};
  TP_TRY(reshape(m, cols, 4, s5, &cols));
  TP_TRY(reshape(m, wt, 3, sw, &wt));
  TP_TRY(bin(m, TP_OP_MATMUL, wt, cols, &y)); /* [N, G, Mg, P] */
  TP_TRY(reshape(m, y, 3, s3, &y));
  if (b.kind != R_NONE) {
    tp_desc db = rdesc(m, b);
    if (db.ndim != 1 || db.shape[0] != M)
      return tp_fail(TP_ERR_INVALID_ARG, "bias B must have shape [%lld]", (long long)M);
    int64_t sb[2] = {M, 1};
    TP_TRY(reshape(m, b, 2, sb, &b));
    TP_TRY(bin(m, TP_OP_ADD, y, b, &y));
  }
  int64_t so[TP_MAX_DIMS] = {N, M};
  for (int i = 0; i < w.nsp; i++) so[2 + i] = w.O[i];
  return reshape(m, y, dx.ndim, so, out);
}

/* Reverses x along axis a (one slice per element). */
static tp_status flip(imp *m, ref x, int a, ref *out) {
  int64_t len = rdesc(m, x).shape[a];
  if (len <= 1) {
    *out = x;
    return TP_OK;
  }
  if (len > 4096) return tp_fail(TP_ERR_UNSUPPORTED, "cannot reverse an axis of %lld elements", (long long)len);
  ref *parts = tp_alloc(sizeof(ref) * (size_t)len);
  if (!parts) return TP_ERR_OUT_OF_MEMORY;
  tp_status s = TP_OK;
  for (int64_t k = 0; k < len && !s; k++) s = slice1(m, x, a, len - 1 - k, len - k, 1, &parts[k]);
  if (!s) s = concat_many(m, (int)len, parts, a, out);
  tp_free(parts);
  return s;
}

/* ConvTranspose = Conv of the zero-upsampled input with the flipped,
 * channel-transposed weight and complementary padding. */
static tp_status cv_convtranspose(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, wt, b, y;
  TP_TRY(need_in(m, n, 0, &x));
  TP_TRY(need_in(m, n, 1, &wt));
  TP_TRY(in(m, n, 2, &b));
  tp_desc dx = rdesc(m, x), dw = rdesc(m, wt);
  TP_TRY(check_spatial(&dx, "input X", 3));
  TP_TRY(check_spatial(&dw, "weight W", 3));
  if (dw.ndim != dx.ndim)
    return tp_fail(TP_ERR_INVALID_ARG, "weight W has rank %d, input X rank %d (they must match)", dw.ndim, dx.ndim);
  int nsp = dx.ndim - 2;
  int64_t G = ai(m, n, "group", 1), C = dx.shape[1];
  if (G < 1 || C % G || dw.shape[0] != C)
    return tp_fail(TP_ERR_INVALID_ARG, "group %lld does not fit input channels %lld and weight channels %lld",
                   (long long)G, (long long)C, (long long)dw.shape[0]);
  int64_t Cg = C / G, Mg = dw.shape[1], M = Mg * G;
  int64_t S[6], D[6], P[12], OP[6], OS[6], K[6], ks[6];
  TP_TRY(ints_attr(m, n, "kernel_shape", ks, nsp, -1));
  TP_TRY(ints_attr(m, n, "strides", S, nsp, 1));
  TP_TRY(ints_attr(m, n, "dilations", D, nsp, 1));
  TP_TRY(ints_attr(m, n, "pads", P, 2 * nsp, 0));
  TP_TRY(ints_attr(m, n, "output_padding", OP, nsp, 0));
  attr *osa = fa(m, n, "output_shape", A_INTS);
  const char *ap = as(m, n, "auto_pad", "NOTSET");
  int same = !strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER");
  if (!same && strcmp(ap, "NOTSET") && strcmp(ap, "VALID"))
    return tp_fail(TP_ERR_INVALID_ARG, "auto_pad '%s' is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID", ap);
  if (osa && (int)osa->nints != nsp && (int)osa->nints != dx.ndim)
    return tp_fail(TP_ERR_INVALID_ARG, "output_shape has %d values, expected %d", (int)osa->nints, nsp);
  for (int i = 0; i < nsp; i++) {
    K[i] = dw.shape[2 + i];
    if (ks[i] != -1 && ks[i] != K[i])
      return tp_fail(TP_ERR_INVALID_ARG, "kernel_shape[%d] = %lld does not match the weight (%lld)", i, (long long)ks[i], (long long)K[i]);
    if (S[i] < 1 || D[i] < 1 || OP[i] < 0 || P[i] < 0 || P[i + nsp] < 0 ||
        (osa && osa->ints[osa->nints == (size_t)nsp ? i : 2 + i] < 1))
      return tp_fail(TP_ERR_INVALID_ARG, "strides and dilations must be >= 1, pads and output_padding >= 0");
    if (S[i] > 4096 || D[i] > 4096 || OP[i] > 4096 || P[i] > (1 << 20) || P[i + nsp] > (1 << 20) ||
        (osa && osa->ints[osa->nints == (size_t)nsp ? i : 2 + i] > (1 << 24)))
      return tp_fail(TP_ERR_INVALID_ARG, "strides, dilations, output_padding, pads or output_shape out of range");
    if (!strcmp(ap, "VALID")) P[i] = P[i + nsp] = 0;
    int64_t in = dx.shape[2 + i], ke = (K[i] - 1) * D[i] + 1;
    if (osa || same) {
      OS[i] = osa ? osa->ints[osa->nints == (size_t)nsp ? i : 2 + i] : in * S[i];
      int64_t tot = S[i] * (in - 1) + OP[i] + ke - OS[i];
      int64_t half = tot >= 0 ? tot / 2 : -((-tot + 1) / 2); /* floor(tot / 2); tot < 0 grows the output */
      if (!strcmp(ap, "SAME_UPPER")) P[i] = half, P[i + nsp] = tot - half;
      else P[i] = tot - half, P[i + nsp] = half;
    }
  }
  /* weight [C, Mg, K...] -> [M, Cg, K...], flipped spatially */
  int64_t sh[TP_MAX_DIMS], perm[TP_MAX_DIMS];
  sh[0] = G, sh[1] = Cg, sh[2] = Mg;
  for (int i = 0; i < nsp; i++) sh[3 + i] = K[i];
  TP_TRY(reshape(m, wt, 3 + nsp, sh, &wt));
  tp_attrs at;
  tp_attrs_init(&at);
  at.nints = 3 + nsp;
  perm[0] = 0, perm[1] = 2, perm[2] = 1;
  for (int i = 0; i < nsp; i++) perm[3 + i] = 3 + i;
  memcpy(at.ints, perm, sizeof(int64_t) * (size_t)at.nints);
  TP_TRY(emit(m, TP_OP_PERMUTE, 1, &wt, &at, &wt));
  sh[0] = M, sh[1] = Cg;
  for (int i = 0; i < nsp; i++) sh[2 + i] = K[i];
  TP_TRY(reshape(m, wt, 2 + nsp, sh, &wt));
  for (int i = 0; i < nsp; i++) TP_TRY(flip(m, wt, 2 + i, &wt));
  /* zero-upsample x by the strides */
  for (int i = 0; i < nsp; i++) {
    if (S[i] == 1) continue;
    tp_desc d = rdesc(m, x);
    int a = 2 + i;
    int64_t s2[TP_MAX_DIMS];
    int k = 0;
    for (int j = 0; j < d.ndim; j++) {
      s2[k++] = d.shape[j];
      if (j == a) s2[k++] = 1;
    }
    ref parts[2];
    TP_TRY(reshape(m, x, d.ndim + 1, s2, &parts[0]));
    s2[a + 1] = S[i] - 1;
    TP_TRY(full_const(m, d.dtype, d.ndim + 1, s2, 0, &parts[1]));
    TP_TRY(concat_many(m, 2, parts, a + 1, &x));
    memcpy(s2, d.shape, sizeof s2);
    s2[a] = d.shape[a] * S[i];
    TP_TRY(reshape(m, x, d.ndim, s2, &x));
    TP_TRY(slice1(m, x, a, 0, (d.shape[a] - 1) * S[i] + 1, 1, &x));
  }
  win w;
  memset(&w, 0, sizeof w);
  w.nsp = nsp;
  for (int i = 0; i < nsp; i++) {
    int64_t ke = (K[i] - 1) * D[i] + 1;
    int64_t pb = ke - 1 - P[i], pe = ke - 1 - P[i + nsp] + OP[i];
    if (pb < 0 || pe < 0) { /* crop instead */
      int64_t len = rdesc(m, x).shape[2 + i];
      TP_TRY(slice1(m, x, 2 + i, pb < 0 ? -pb : 0, pe < 0 ? len + pe : len, 1, &x));
      if (pb < 0) pb = 0;
      if (pe < 0) pe = 0;
    }
    int64_t len = rdesc(m, x).shape[2 + i];
    w.K[i] = K[i], w.S[i] = 1, w.D[i] = D[i], w.P[i] = pb, w.P[i + nsp] = pe;
    w.O[i] = len + pb + pe - ke + 1;
    if (w.O[i] < 1) return tp_fail(TP_ERR_INVALID_ARG, "the output would be empty on spatial axis %d", i);
  }
  if (b.kind != R_NONE) {
    tp_desc db = rdesc(m, b);
    if (db.ndim != 1 || db.shape[0] != M) return tp_fail(TP_ERR_INVALID_ARG, "bias B must have shape [%lld]", (long long)M);
  }
  TP_TRY(conv_apply(m, x, wt, b, G, &w, &y));
  return set_out(m, n, 0, y);
}

/* arg 0: MaxPool, 1: AveragePool */
static tp_status cv_pool(imp *m, onode *n, int avg) {
  ref x, y;
  TP_TRY(need_in(m, n, 0, &x));
  tp_desc dx = rdesc(m, x);
  TP_TRY(check_spatial(&dx, "input X", 3));
  win w;
  memset(&w, 0, sizeof w);
  w.nsp = dx.ndim - 2;
  attr *ka = fa(m, n, "kernel_shape", A_INTS);
  if (!ka || (int)ka->nints != w.nsp)
    return tp_fail(TP_ERR_INVALID_ARG, "kernel_shape must be given with %d values", w.nsp);
  memcpy(w.K, ka->ints, sizeof(int64_t) * (size_t)w.nsp);
  int ceil_mode = (int)ai(m, n, "ceil_mode", 0);
  int incl = avg ? (int)ai(m, n, "count_include_pad", 0) : 0;
  int64_t order = avg ? 0 : ai(m, n, "storage_order", 0);
  if (order != 0 && order != 1) return tp_fail(TP_ERR_INVALID_ARG, "storage_order must be 0 or 1");
  TP_TRY(win_setup(m, n, &dx, &w, 1, ceil_mode));
  /* 2-D, no dilation, no ceil-mode window, no Indices output, pads smaller
   * than the kernel: the max_pool2d / avg_pool2d ops */
  int simple = w.nsp == 2 && !ceil_mode && !(!avg && has_out(n, 1));
  for (int i = 0; simple && i < 2; i++)
    simple = w.D[i] == 1 && w.extra[i] == 0 && w.P[i] < w.K[i] && w.P[i + 2] < w.K[i];
  if (simple) {
    tp_attrs pa;
    tp_attrs_init(&pa);
    int64_t v[8] = {w.K[0], w.K[1], w.S[0], w.S[1], w.P[0], w.P[1], w.P[2], w.P[3]};
    memcpy(pa.ints, v, sizeof v);
    pa.nints = 8;
    pa.dim = incl;
    TP_TRY(emit(m, avg ? TP_OP_AVG_POOL2D : TP_OP_MAX_POOL2D, 1, &x, &pa, &y));
    return set_out(m, n, 0, y);
  }
  ref st;
  int64_t dim2 = 2;
  if (!avg) {
    TP_TRY(windows(m, x, &w, -INFINITY, -INFINITY, &st));
    TP_TRY(reduce(m, TP_OP_MAX, st, 1, &dim2, 0, &y));
    if (has_out(n, 1)) { /* Indices: the flat input index of the first max of each window */
      int64_t tot = tp_shape_numel(dx.ndim, dx.shape), S = 1, KK = 1;
      for (int i = 0; i < w.nsp; i++) S *= dx.shape[2 + i], KK *= w.K[i];
      tp_tensor *it;
      TP_TRY(tp_tensor_empty(TP_I64, dx.ndim, dx.shape, &it));
      int64_t *iv = tp_tensor_ptr(it);
      for (int64_t p = 0; p < tot; p++) {
        int64_t nc = p / S, r = p % S, c = 0, mul = 1;
        if (order == 0) c = r;
        else /* column major over the spatial dims */
          for (int i = 0; i < w.nsp; i++) {
            int64_t e = 1;
            for (int j = i + 1; j < w.nsp; j++) e *= dx.shape[2 + j];
            c += (r / e % dx.shape[2 + i]) * mul;
            mul *= dx.shape[2 + i];
          }
        iv[p] = nc * S + c;
      }
      ref idx, mx, eq, kk, first, sel;
      TP_TRY(add_const(m, it, &idx));
      TP_TRY(windows(m, idx, &w, -1, -1, &idx)); /* folded: [N, C, KK, P] */
      TP_TRY(reduce(m, TP_OP_MAX, st, 1, &dim2, 1, &mx));
      TP_TRY(bin(m, TP_OP_EQ, st, mx, &eq));
      int64_t ksh[2] = {KK, 1};
      tp_tensor *kt;
      TP_TRY(tp_tensor_empty(TP_I64, 2, ksh, &kt));
      for (int64_t i = 0; i < KK; i++) ((int64_t *)tp_tensor_ptr(kt))[i] = i;
      TP_TRY(add_const(m, kt, &kk));
      ref big = scal((double)KK), zero = scal(0);
      big.is_int = zero.is_int = 1;
      TP_TRY(where3(m, eq, kk, big, &first));
      TP_TRY(reduce(m, TP_OP_MIN, first, 1, &dim2, 1, &first));
      TP_TRY(bin(m, TP_OP_EQ, kk, first, &sel));
      TP_TRY(where3(m, sel, idx, zero, &sel));
      TP_TRY(reduce(m, TP_OP_SUM, sel, 1, &dim2, 0, &sel));
      int64_t so[TP_MAX_DIMS] = {dx.shape[0], dx.shape[1]};
      for (int i = 0; i < w.nsp; i++) so[2 + i] = w.O[i];
      TP_TRY(reshape(m, sel, dx.ndim, so, &sel));
      TP_TRY(set_out(m, n, 1, sel));
    }
  } else {
    TP_TRY(windows(m, x, &w, 0, 0, &st));
    TP_TRY(reduce(m, TP_OP_SUM, st, 1, &dim2, 0, &y));
    /* the divisor: the same window sum over ones (folded at load time) */
    int64_t sh1[TP_MAX_DIMS] = {1, 1};
    for (int i = 0; i < w.nsp; i++) sh1[2 + i] = dx.shape[2 + i];
    ref ones, cnt;
    TP_TRY(full_const(m, TP_F32, dx.ndim, sh1, 1.0, &ones));
    TP_TRY(windows(m, ones, &w, incl ? 1.0 : 0.0, 0.0, &cnt));
    TP_TRY(reduce(m, TP_OP_SUM, cnt, 1, &dim2, 0, &cnt));
    TP_TRY(bin(m, TP_OP_DIV, y, cnt, &y));
  }
  int64_t so[TP_MAX_DIMS] = {dx.shape[0], dx.shape[1]};
  for (int i = 0; i < w.nsp; i++) so[2 + i] = w.O[i];
  TP_TRY(reshape(m, y, dx.ndim, so, &y));
  return set_out(m, n, 0, y);
}

/* GlobalAveragePool (arg 0) / GlobalMaxPool (1) */
static tp_status cv_global_pool(imp *m, onode *n, int mx) {
  ref x, y;
  TP_TRY(need_in(m, n, 0, &x));
  tp_desc dx = rdesc(m, x);
  if (dx.ndim < 3) return tp_fail(TP_ERR_INVALID_ARG, "input X must have rank >= 3 ([N, C, spatial...]), got %d", dx.ndim);
  if (dx.dtype != TP_F32) return tp_fail(TP_ERR_UNSUPPORTED, "only float32 input is supported");
  int64_t axes[TP_MAX_DIMS];
  for (int i = 2; i < dx.ndim; i++) axes[i - 2] = i;
  TP_TRY(reduce(m, mx ? TP_OP_MAX : TP_OP_MEAN, x, dx.ndim - 2, axes, 1, &y));
  return set_out(m, n, 0, y);
}

static tp_status cv_batchnorm(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, sc, b, mean, var, a, c, y;
  TP_TRY(need_in(m, n, 0, &x));
  TP_TRY(need_in(m, n, 1, &sc));
  TP_TRY(need_in(m, n, 2, &b));
  TP_TRY(need_in(m, n, 3, &mean));
  TP_TRY(need_in(m, n, 4, &var));
  double eps = af(m, n, "epsilon", 1e-5);
  ignore_attr(n, "momentum");
  if (ai(m, n, "training_mode", 0) != 0)
    return tp_fail(TP_ERR_UNSUPPORTED, "training_mode=1 is not supported (inference only)");
  if (ai(m, n, "spatial", 1) != 1) return tp_fail(TP_ERR_UNSUPPORTED, "spatial=0 is not supported");
  ignore_attr(n, "is_test");
  if (has_out(n, 1) || has_out(n, 2) || has_out(n, 3) || has_out(n, 4))
    return tp_fail(TP_ERR_UNSUPPORTED, "only the Y output (inference) is supported");
  tp_desc dx = rdesc(m, x);
  if (dx.ndim < 2) return tp_fail(TP_ERR_INVALID_ARG, "input X must have rank >= 2, got %d", dx.ndim);
  if (dx.dtype != TP_F32) return tp_fail(TP_ERR_UNSUPPORTED, "only float32 input is supported");
  int64_t C = dx.shape[1];
  ref ps[4] = {sc, b, mean, var};
  static const char *const nm[4] = {"scale", "B", "input_mean", "input_var"};
  for (int i = 0; i < 4; i++) {
    tp_desc d = rdesc(m, ps[i]);
    if (d.ndim != 1 || d.shape[0] != C)
      return tp_fail(TP_ERR_INVALID_ARG, "%s must have shape [%lld] (the channel count)", nm[i], (long long)C);
  }
  int64_t sh[TP_MAX_DIMS];
  sh[0] = C;
  for (int i = 1; i < dx.ndim - 1; i++) sh[i] = 1;
  TP_TRY(bin(m, TP_OP_ADD, var, scal(eps), &a));
  TP_TRY(un(m, TP_OP_RSQRT, a, &a));
  TP_TRY(bin(m, TP_OP_MUL, a, sc, &a)); /* scale / sqrt(var + eps) */
  TP_TRY(bin(m, TP_OP_MUL, mean, a, &c));
  TP_TRY(bin(m, TP_OP_SUB, b, c, &c)); /* B - mean * a */
  TP_TRY(reshape(m, a, dx.ndim - 1, sh, &a));
  TP_TRY(reshape(m, c, dx.ndim - 1, sh, &c));
  TP_TRY(bin(m, TP_OP_MUL, x, a, &y));
  TP_TRY(bin(m, TP_OP_ADD, y, c, &y));
  return set_out(m, n, 0, y);
}

static tp_status cv_split(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, r1, y;
  int64_t sp[64];
  int nsp = 0, nout = n->nout;
  TP_TRY(need_in(m, n, 0, &x));
  TP_TRY(in(m, n, 1, &r1));
  tp_desc d = rdesc(m, x);
  int64_t axis;
  TP_TRY(norm_axis(ai(m, n, "axis", 0), d.ndim, "axis", &axis));
  attr *sa = fa(m, n, "split", A_INTS);
  int64_t num = ai(m, n, "num_outputs", 0);
  if (nout < 1 || nout > 64) return tp_fail(TP_ERR_UNSUPPORTED, "%d outputs (1..64 are supported)", nout);
  if (r1.kind != R_NONE) {
    TP_TRY(const_ints(m, r1, "the split input", sp, 64, &nsp));
  } else if (sa) {
    if (sa->nints > 64) return tp_fail(TP_ERR_UNSUPPORTED, "more than 64 splits");
    nsp = (int)sa->nints;
    if (nsp) memcpy(sp, sa->ints, sizeof(int64_t) * (size_t)nsp);
  } else {
    int64_t k = num ? num : nout, len = d.shape[axis];
    if (k != nout) return tp_fail(TP_ERR_INVALID_ARG, "num_outputs %lld differs from the %d outputs", (long long)k, nout);
    int64_t chunk = (len + k - 1) / k;
    if (!num && len % k)
      return tp_fail(TP_ERR_INVALID_ARG, "axis size %lld cannot be split evenly into %d outputs", (long long)len, nout);
    for (int i = 0; i < nout; i++) {
      int64_t b = i * chunk, e = b + chunk > len ? len : b + chunk;
      sp[nsp++] = e > b ? e - b : 0;
    }
  }
  if (nsp != nout) return tp_fail(TP_ERR_INVALID_ARG, "split has %d values for %d outputs", nsp, nout);
  int64_t tot = 0;
  for (int i = 0; i < nsp; i++) {
    if (sp[i] < 0) return tp_fail(TP_ERR_INVALID_ARG, "split sizes must be >= 0");
    tot += sp[i];
  }
  if (tot != d.shape[axis])
    return tp_fail(TP_ERR_INVALID_ARG, "split sizes add up to %lld, the axis has %lld", (long long)tot, (long long)d.shape[axis]);
  int64_t off = 0;
  for (int i = 0; i < nsp; i++) {
    TP_TRY(slice1(m, x, axis, off, off + sp[i], 1, &y));
    TP_TRY(set_out(m, n, i, y));
    off += sp[i];
  }
  return TP_OK;
}

/* ArgMax (arg 0) / ArgMin (1): the first (or last) index where x equals
 * its max along the axis. */
static tp_status cv_argmax(imp *m, onode *n, int mn) {
  ref x, mx, eq, idx, y;
  TP_TRY(need_in(m, n, 0, &x));
  tp_desc d = rdesc(m, x);
  if (d.ndim < 1) return tp_fail(TP_ERR_INVALID_ARG, "input must have rank >= 1");
  if (d.dtype == TP_BOOL) return tp_fail(TP_ERR_INVALID_ARG, "bool input is not supported");
  int64_t axis;
  TP_TRY(norm_axis(ai(m, n, "axis", 0), d.ndim, "axis", &axis));
  int keep = (int)ai(m, n, "keepdims", 1), last = (int)ai(m, n, "select_last_index", 0);
  int64_t len = d.shape[axis];
  if (len == 0) return tp_fail(TP_ERR_INVALID_ARG, "cannot take the arg%s of an empty axis", mn ? "min" : "max");
  TP_TRY(reduce(m, mn ? TP_OP_MIN : TP_OP_MAX, x, 1, &axis, 1, &mx));
  TP_TRY(bin(m, TP_OP_EQ, x, mx, &eq));
  int64_t sh[TP_MAX_DIMS];
  int r = d.ndim - (int)axis;
  sh[0] = len;
  for (int i = 1; i < r; i++) sh[i] = 1;
  tp_tensor *t;
  TP_TRY(tp_tensor_empty(TP_I64, r, sh, &t));
  for (int64_t i = 0; i < len; i++) ((int64_t *)tp_tensor_ptr(t))[i] = i;
  TP_TRY(add_const(m, t, &idx));
  ref fill = scal(last ? -1.0 : (double)len);
  fill.is_int = 1;
  TP_TRY(where3(m, eq, idx, fill, &y));
  TP_TRY(reduce(m, last ? TP_OP_MAX : TP_OP_MIN, y, 1, &axis, keep, &y));
  TP_TRY(cast(m, y, TP_I64, &y));
  return set_out(m, n, 0, y);
}

static tp_status cv_tile(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, r1, y;
  int64_t rep[TP_MAX_DIMS];
  int nr;
  TP_TRY(need_in(m, n, 0, &x));
  TP_TRY(need_in(m, n, 1, &r1));
  TP_TRY(const_ints(m, r1, "repeats", rep, TP_MAX_DIMS, &nr));
  tp_desc d = rdesc(m, x);
  if (nr != d.ndim) return tp_fail(TP_ERR_INVALID_ARG, "repeats has %d values, the input rank is %d", nr, d.ndim);
  y = x;
  for (int a = 0; a < nr; a++) {
    if (rep[a] < 0 || rep[a] > 4096) return tp_fail(TP_ERR_INVALID_ARG, "repeats[%d] = %lld is out of range (0..4096)", a, (long long)rep[a]);
    if (rep[a] == 0) {
      TP_TRY(slice1(m, y, a, 0, 0, 1, &y));
      continue;
    }
    ref *parts = tp_alloc(sizeof(ref) * (size_t)rep[a]);
    if (!parts) return TP_ERR_OUT_OF_MEMORY;
    for (int64_t i = 0; i < rep[a]; i++) parts[i] = y;
    tp_status s = concat_many(m, (int)rep[a], parts, a, &y);
    tp_free(parts);
    TP_TRY(s);
  }
  return set_out(m, n, 0, y);
}

static tp_status cv_expand(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, r1, t, y;
  int64_t sh[TP_MAX_DIMS];
  int ns;
  TP_TRY(need_in(m, n, 0, &x));
  TP_TRY(need_in(m, n, 1, &r1));
  TP_TRY(const_ints(m, r1, "shape", sh, TP_MAX_DIMS, &ns));
  for (int i = 0; i < ns; i++)
    if (sh[i] < 0) return tp_fail(TP_ERR_INVALID_ARG, "shape[%d] = %lld is negative", i, (long long)sh[i]);
  TP_TRY(full_const(m, TP_BOOL, ns, sh, 1.0, &t));
  TP_TRY(where3(m, t, x, x, &y)); /* broadcasts x against shape */
  return set_out(m, n, 0, y);
}

static tp_status cv_sign(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, p, q, y;
  TP_TRY(need_in(m, n, 0, &x));
  tp_desc d = rdesc(m, x);
  if (d.dtype == TP_BOOL) return tp_fail(TP_ERR_INVALID_ARG, "bool input is not supported");
  ref z = scal(0);
  z.is_int = 1;
  TP_TRY(bin(m, TP_OP_GT, x, z, &p));
  TP_TRY(bin(m, TP_OP_LT, x, z, &q));
  TP_TRY(cast(m, p, d.dtype, &p));
  TP_TRY(cast(m, q, d.dtype, &q));
  TP_TRY(bin(m, TP_OP_SUB, p, q, &y));
  return set_out(m, n, 0, y);
}

/* Gather with constant indices on any data: one slice per index. */
static tp_status cv_gather_data(imp *m, onode *n, ref x, ref ix) {
  if (ix.kind != R_CONST)
    return tp_fail(TP_ERR_UNSUPPORTED, "Gather indices must be a constant (computed only from initializers and shapes)");
  tp_tensor *it = m->consts[ix.c];
  tp_desc d = rdesc(m, x);
  if (d.ndim < 1) return tp_fail(TP_ERR_INVALID_ARG, "data must have rank >= 1");
  int64_t axis;
  TP_TRY(norm_axis(ai(m, n, "axis", 0), d.ndim, "axis", &axis));
  if (it->dtype != TP_I64 && it->dtype != TP_I32) return tp_fail(TP_ERR_INVALID_ARG, "indices must be int");
  int nd = d.ndim - 1 + it->ndim;
  if (nd > TP_MAX_DIMS) return tp_fail(TP_ERR_UNSUPPORTED, "result rank %d", nd);
  int64_t ni = tp_tensor_numel(it), dim = d.shape[axis];
  if (ni < 1 || ni > 4096) return tp_fail(TP_ERR_UNSUPPORTED, "%lld indices (1..4096 are supported)", (long long)ni);
  ref *parts = tp_alloc(sizeof(ref) * (size_t)ni), y;
  if (!parts) return TP_ERR_OUT_OF_MEMORY;
  tp_status s = TP_OK;
  for (int64_t j = 0; j < ni && !s; j++) {
    int64_t v = (int64_t)tp_tensor_get_f64(it, j);
    if (v < 0) v += dim;
    if (v < 0 || v >= dim)
      s = tp_fail(TP_ERR_INVALID_ARG, "index %lld is out of range for size %lld", (long long)v, (long long)dim);
    else s = slice1(m, x, axis, v, v + 1, 1, &parts[j]);
  }
  if (!s) s = concat_many(m, (int)ni, parts, axis, &y);
  tp_free(parts);
  TP_TRY(s);
  int64_t sh[TP_MAX_DIMS];
  int k = 0;
  for (int i = 0; i < axis; i++) sh[k++] = d.shape[i];
  for (int i = 0; i < it->ndim; i++) sh[k++] = it->shape[i];
  for (int i = (int)axis + 1; i < d.ndim; i++) sh[k++] = d.shape[i];
  TP_TRY(reshape(m, y, nd, sh, &y));
  return set_out(m, n, 0, y);
}

static tp_status cv_cumsum(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, r1, y;
  int64_t ax;
  int na;
  TP_TRY(need_in(m, n, 0, &x));
  TP_TRY(need_in(m, n, 1, &r1));
  TP_TRY(const_ints(m, r1, "axis", &ax, 1, &na));
  tp_desc d = rdesc(m, x);
  if (d.ndim < 1 || d.dtype == TP_BOOL) return tp_fail(TP_ERR_INVALID_ARG, "input must have rank >= 1 and a numeric dtype");
  int64_t axis;
  TP_TRY(norm_axis(ax, d.ndim, "axis", &axis));
  int excl = (int)ai(m, n, "exclusive", 0), rev = (int)ai(m, n, "reverse", 0);
  int64_t len = d.shape[axis];
  if (len == 0) return set_out(m, n, 0, x);
  if (len > 4096) return tp_fail(TP_ERR_UNSUPPORTED, "axis size %lld (at most 4096)", (long long)len);
  ref *parts = tp_alloc(sizeof(ref) * (size_t)len), acc;
  if (!parts) return TP_ERR_OUT_OF_MEMORY;
  tp_status s = TP_OK;
  for (int64_t k = 0; k < len && !s; k++) {
    int64_t i = rev ? len - 1 - k : k;
    ref e;
    s = slice1(m, x, axis, i, i + 1, 1, &e);
    if (s) break;
    if (excl) {
      if (k == 0) {
        int64_t sh[TP_MAX_DIMS];
        memcpy(sh, d.shape, sizeof sh);
        sh[axis] = 1;
        s = full_const(m, d.dtype, d.ndim, sh, 0, &parts[i]);
        if (!s) acc = e;
      } else {
        parts[i] = acc;
        s = bin(m, TP_OP_ADD, acc, e, &acc);
      }
    } else {
      if (k == 0) acc = e;
      else s = bin(m, TP_OP_ADD, acc, e, &acc);
      parts[i] = acc;
    }
  }
  if (!s) s = concat_many(m, (int)len, parts, axis, &y);
  tp_free(parts);
  TP_TRY(s);
  if (rdesc(m, y).dtype != d.dtype) TP_TRY(cast(m, y, d.dtype, &y));
  return set_out(m, n, 0, y);
}

static tp_status cv_pad(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, rp, rc, ra, y;
  int64_t pads[2 * TP_MAX_DIMS], axes[TP_MAX_DIMS];
  int np = 0, na = 0;
  double cval = 0;
  TP_TRY(need_in(m, n, 0, &x));
  tp_desc d = rdesc(m, x);
  const char *mode = as(m, n, "mode", "constant");
  if (m->opset < 11) {
    attr *pa = fa(m, n, "pads", A_INTS);
    if (!pa || pa->nints > 2 * TP_MAX_DIMS) return tp_fail(TP_ERR_INVALID_ARG, "attribute pads is required");
    np = (int)pa->nints;
    if (np) memcpy(pads, pa->ints, sizeof(int64_t) * (size_t)np);
    cval = af(m, n, "value", 0);
  } else {
    TP_TRY(need_in(m, n, 1, &rp));
    TP_TRY(const_ints(m, rp, "pads", pads, 2 * TP_MAX_DIMS, &np));
    TP_TRY(in(m, n, 2, &rc));
    if (rc.kind != R_NONE) TP_TRY(const_scalar(m, rc, "constant_value", &cval));
    TP_TRY(in(m, n, 3, &ra));
    if (ra.kind != R_NONE) TP_TRY(const_ints(m, ra, "axes", axes, TP_MAX_DIMS, &na));
  }
  if (!na) for (na = 0; na < d.ndim; na++) axes[na] = na;
  if (np != 2 * na) return tp_fail(TP_ERR_INVALID_ARG, "pads has %d values, expected %d", np, 2 * na);
  int md = !strcmp(mode, "constant") ? 0 : !strcmp(mode, "reflect") ? 1 : !strcmp(mode, "edge") ? 2
         : !strcmp(mode, "wrap") ? 3 : -1;
  if (md < 0) return tp_fail(TP_ERR_UNSUPPORTED, "mode '%s' is not supported (constant, reflect, edge, wrap are)", mode);
  y = x;
  for (int i = 0; i < na; i++) {
    int64_t a;
    TP_TRY(norm_axis(axes[i], d.ndim, "axis", &a));
    int64_t b = pads[i], e = pads[i + na];
    /* negative pads crop */
    if (b < 0 || e < 0) {
      int64_t len = rdesc(m, y).shape[a];
      TP_TRY(slice1(m, y, a, b < 0 ? -b : 0, e < 0 ? len + e : len, 1, &y));
      if (b < 0) b = 0;
      if (e < 0) e = 0;
    }
    if (!b && !e) continue;
    int64_t len = rdesc(m, y).shape[a];
    if (md == 0) {
      TP_TRY(pad_const_dim(m, y, (int)a, b, e, cval, &y));
      continue;
    }
    if (len == 0 || (md == 1 && (b >= len || e >= len)) || (md == 3 && (b > len || e > len)))
      return tp_fail(TP_ERR_INVALID_ARG, "%s padding of %lld/%lld does not fit axis %lld of size %lld", mode,
                     (long long)b, (long long)e, (long long)a, (long long)len);
    if (b + e + 1 > 4096) return tp_fail(TP_ERR_UNSUPPORTED, "padding too large");
    ref *parts = tp_alloc(sizeof(ref) * (size_t)(b + e + 1));
    if (!parts) return TP_ERR_OUT_OF_MEMORY;
    int k = 0;
    tp_status s = TP_OK;
    for (int64_t j = b; j >= 1 && !s; j--) {
      int64_t src = md == 1 ? j : md == 3 ? len - j : 0;
      s = slice1(m, y, a, src, src + 1, 1, &parts[k++]);
    }
    parts[k++] = y;
    for (int64_t j = 1; j <= e && !s; j++) {
      int64_t src = md == 1 ? len - 1 - j : md == 3 ? j - 1 : len - 1;
      s = slice1(m, y, a, src, src + 1, 1, &parts[k++]);
    }
    if (!s) s = concat_many(m, k, parts, a, &y);
    tp_free(parts);
    TP_TRY(s);
  }
  return set_out(m, n, 0, y);
}

static const struct {
  const char *op;
  conv_fn fn;
  int arg;
} converters[] = {
  {"Add", cv_binary, TP_OP_ADD},         {"Sub", cv_binary, TP_OP_SUB},
  {"Mul", cv_binary, TP_OP_MUL},         {"Div", cv_binary, TP_OP_DIV},
  {"Equal", cv_binary, TP_OP_EQ},        {"Less", cv_binary, TP_OP_LT},
  {"Greater", cv_binary, TP_OP_GT},      {"Pow", cv_pow, 0},
  {"Relu", cv_unary, TP_OP_RELU},        {"Sigmoid", cv_unary, TP_OP_SIGMOID},
  {"Tanh", cv_unary, TP_OP_TANH},        {"Exp", cv_unary, TP_OP_EXP},
  {"Log", cv_unary, TP_OP_LOG},          {"Sqrt", cv_unary, TP_OP_SQRT},
  {"Neg", cv_unary, TP_OP_NEG},          {"Abs", cv_unary, TP_OP_ABS},
  {"Gelu", cv_unary, TP_OP_GELU},        {"Reciprocal", cv_reciprocal, 0},
  {"Not", cv_not, 0},                    {"LeakyRelu", cv_act, ACT_LEAKY},
  {"Elu", cv_act, ACT_ELU},              {"Selu", cv_act, ACT_SELU},
  {"HardSigmoid", cv_act, ACT_HSIG},     {"HardSwish", cv_act, ACT_HSWISH},
  {"Softplus", cv_act, ACT_SOFTPLUS},    {"MatMul", cv_matmul, 0},
  {"Gemm", cv_gemm, 0},                  {"Softmax", cv_softmax, TP_OP_SOFTMAX},
  {"LogSoftmax", cv_softmax, TP_OP_LOG_SOFTMAX},
  {"LayerNormalization", cv_layernorm, 0},
  {"Reshape", cv_reshape, 0},            {"Flatten", cv_flatten, 0},
  {"Transpose", cv_transpose, 0},        {"Unsqueeze", cv_unsqueeze, 0},
  {"Squeeze", cv_squeeze, 0},            {"Concat", cv_concat, 0},
  {"Slice", cv_slice, 0},                {"Where", cv_where, 0},
  {"Cast", cv_cast, 0},                  {"CastLike", cv_cast, 1},
  {"Identity", cv_identity, 0},          {"Dropout", cv_dropout, 0},
  {"ReduceSum", cv_reduce, TP_OP_SUM},   {"ReduceMean", cv_reduce, TP_OP_MEAN},
  {"ReduceMax", cv_reduce, TP_OP_MAX},   {"ReduceMin", cv_reduce, TP_OP_MIN},
  {"ReduceL2", cv_reduce, -1},           {"Shape", cv_shape, 0},
  {"Size", cv_shape, 1},                 {"Constant", cv_constant, 0},
  {"ConstantOfShape", cv_constant_of_shape, 0},
  {"Range", cv_range, 0},                {"Gather", cv_gather, 0},
  {"Clip", cv_clip, 0},                  {"Max", cv_variadic, TP_OP_MAX},
  {"Min", cv_variadic, TP_OP_MIN},       {"Sum", cv_variadic, TP_OP_SUM},
  {"Mean", cv_variadic, TP_OP_MEAN},
  {"Conv", cv_conv, 0},                  {"MaxPool", cv_pool, 0},
  {"AveragePool", cv_pool, 1},           {"GlobalAveragePool", cv_global_pool, 0},
  {"GlobalMaxPool", cv_global_pool, 1},  {"BatchNormalization", cv_batchnorm, 0},
  {"Split", cv_split, 0},                {"ArgMax", cv_argmax, 0},
  {"ArgMin", cv_argmax, 1},              {"Tile", cv_tile, 0},
  {"Expand", cv_expand, 0},              {"Sign", cv_sign, 0},
  {"CumSum", cv_cumsum, 0},              {"Pad", cv_pad, 0},
  {"Floor", cv_unary, TP_OP_FLOOR},      {"Ceil", cv_unary, TP_OP_CEIL},
  {"Round", cv_unary, TP_OP_ROUND},      {"Erf", cv_unary, TP_OP_ERF},
  {"ReduceProd", cv_reduce, -2},        {"ConvTranspose", cv_convtranspose, 0},
};

static tp_status convert_node(imp *m, onode *n) {
  int i;
  for (i = 0; i < TP_ARRAY_LEN(converters); i++)
    if (!strcmp(converters[i].op, n->op)) break;
  int default_domain = !*n->domain || !strcmp(n->domain, "ai.onnx");
  if (i == TP_ARRAY_LEN(converters) || !default_domain) {
    if (!default_domain)
      return tp_fail(TP_ERR_UNSUPPORTED, "onnx: node '%s' (%s of domain '%s') is not supported yet",
                     n->name, n->op, n->domain);
    return tp_fail(TP_ERR_UNSUPPORTED, "onnx: node '%s' (%s) is not supported yet", n->name, n->op);
  }
  m->cur = n;
  m->bad_attr = NULL;
  tp_status s = converters[i].fn(m, n, converters[i].arg);
  if (!s && m->bad_attr)
    s = tp_fail(TP_ERR_INVALID_ARG, "attribute '%s' has the wrong type", m->bad_attr);
  for (int k = 0; !s && k < n->nattrs; k++)
    if (!n->attrs[k].used)
      s = tp_fail(TP_ERR_UNSUPPORTED, "attribute '%s' is not supported", n->attrs[k].name);
  for (int k = 0; !s && k < n->nout; k++)
    if (*n->out[k] && !lookup(m, n->out[k]))
      s = tp_fail(TP_ERR_UNSUPPORTED, "output %d ('%s') is not supported", k, n->out[k]);
  if (s && s != TP_ERR_OUT_OF_MEMORY && strncmp(tp_last_error(), "onnx: ", 6))
    tp_fail_context(s, "onnx: node '%s' (%s)", n->name, n->op);
  return s;
}

static void sanitize(const char *in, char *out, size_t n) {
  size_t k = 0;
  for (; *in && k + 1 < n; in++) {
    char c = *in;
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
    out[k++] = ok ? c : '_';
  }
  if (!k) out[k++] = 'x';
  out[k] = 0;
}

static tp_status build(imp *m) {
  tp_status s;
  /* initializers */
  for (int i = 0; i < m->ninits; i++) {
    tp_tensor *t;
    char *name = NULL;
    ref r;
    TP_TRY(tp_onnx_tensor_read(&m->inits[i], "initializer", &t, &name));
    char *an = astr(m, (const uint8_t *)(name ? name : ""), name ? strlen(name) : 0);
    tp_free(name);
    if (!an) {
      tp_tensor_release(t);
      return TP_ERR_OUT_OF_MEMORY;
    }
    TP_TRY(add_const(m, t, &r));
    TP_TRY(define(m, an, r));
  }
  /* inputs without an initializer -> placeholders */
  for (int i = 0; i < m->ninputs; i++) {
    vinfo *v = &m->inputs[i];
    if (lookup(m, v->name)) continue;
    int b = 0;
    while (b < m->nbind && strcmp(m->bind_names[b], v->name)) b++;
    if (b < m->nbind) {
      ref r;
      tp_tensor *c;
      TP_TRY(tp_contiguous(m->bind_vals[b], &c));
      TP_TRY(add_const(m, c, &r));
      TP_TRY(define(m, v->name, r));
      continue;
    }
    tp_desc d;
    memset(&d, 0, sizeof d);
    if (!v->is_tensor)
      return tp_fail(TP_ERR_UNSUPPORTED, "onnx: input '%s' is not a tensor (sequences, maps and optionals are not supported)", v->name);
    if (!tp_onnx_to_dtype(v->elem, &d.dtype))
      return tp_fail(TP_ERR_UNSUPPORTED, "onnx: input '%s' has dtype %s, which is not supported (float32, int32, int64, bool)",
                     v->name, tp_onnx_dtype_name(v->elem));
    if (!v->has_shape)
      return tp_fail(TP_ERR_UNSUPPORTED, "onnx: input '%s' has no shape; a fixed shape is required", v->name);
    if (v->too_many_dims)
      return tp_fail(TP_ERR_UNSUPPORTED, "onnx: input '%s' has more than %d dims", v->name, TP_MAX_DIMS);
    if (v->sym)
      return tp_fail(TP_ERR_UNSUPPORTED, "onnx: input '%s' has a symbolic dim '%s'; a fixed shape is required",
                     v->name, v->sym);
    d.ndim = v->ndim;
    memcpy(d.shape, v->dims, sizeof(int64_t) * (size_t)v->ndim);
    char nm[128], un_[160];
    int idx;
    sanitize(v->name, nm, sizeof nm);
    snprintf(un_, sizeof un_, "%s", nm);
    for (int k = 2; tp_graph_find(m->g, un_) >= 0; k++) snprintf(un_, sizeof un_, "%s_%d", nm, k);
    TP_TRY(tp_graph_add_node(m->g, TP_NODE_PLACEHOLDER, un_, TP_OP_ADD, 0, NULL, NULL, &d, &idx));
    ref r = {R_NODE, idx, 0, 0, 0};
    TP_TRY(define(m, v->name, r));
  }
  for (int i = 0; i < m->nnodes; i++) TP_TRY(convert_node(m, &m->nodes[i]));
  if (m->noutputs > 64) return tp_fail(TP_ERR_UNSUPPORTED, "onnx: %d graph outputs (at most 64)", m->noutputs);
  tp_arg outs[64];
  for (int i = 0; i < m->noutputs; i++) {
    entry *e = lookup(m, m->outputs[i].name);
    if (!e || e->r.kind == R_NONE)
      return tp_fail(TP_ERR_PARSE, "onnx: graph output '%s' is not computed by any node", m->outputs[i].name);
    TP_TRY(to_arg(m, e->r, &outs[i]));
  }
  int oidx;
  TP_TRY(tp_graph_add_node(m->g, TP_NODE_OUTPUT, "output", TP_OP_ADD, m->noutputs, outs, NULL, NULL, &oidx));
  { /* the ONNX output names, comma separated (read by the JS wrapper) */
    size_t len = 1, k = 0;
    char nm[128];
    for (int i = 0; i < m->noutputs; i++) { /* sized by the sanitized names: an empty name becomes "x" */
      sanitize(m->outputs[i].name, nm, sizeof nm);
      len += strlen(nm) + 1;
    }
    char *names = amalloc(m, len);
    if (!names) return TP_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < m->noutputs; i++) {
      sanitize(m->outputs[i].name, nm, sizeof nm);
      if (i) names[k++] = ',';
      size_t n = strlen(nm);
      memcpy(names + k, nm, n);
      k += n;
    }
    names[k] = 0;
    TP_TRY(tp_graph_set_custom(m->g, oidx, "onnx_outputs", names));
  }
  s = tp_graph_verify(m->g);
  if (s) tp_fail_context(s, "onnx: the imported graph is invalid");
  return s;
}

tp_status tp_onnx_load(const void *bytes, size_t len, tp_graph **out) {
  return tp_onnx_load_with(bytes, len, 0, NULL, NULL, out);
}

tp_status tp_onnx_load_with(const void *bytes, size_t len, int nbind, const char *const *names,
                            tp_tensor *const *values, tp_graph **out) {
  if (!out || (len && !bytes) || nbind < 0 || (nbind && (!names || !values)))
    return tp_fail(TP_ERR_INVALID_ARG, "onnx: load: NULL argument");
  *out = NULL;
  imp m;
  memset(&m, 0, sizeof m);
  m.nbind = nbind;
  m.bind_names = names;
  m.bind_vals = values;
  tp_status s = read_model(&m, bytes, len);
  if (!s) s = tp_graph_new(&m.g);
  if (!s) s = build(&m);
  if (s == TP_ERR_OUT_OF_MEMORY && strncmp(tp_last_error(), "onnx", 4))
    tp_fail(s, "onnx: out of memory");
  if (!s) *out = m.g, m.g = NULL;
  tp_graph_free(m.g);
  for (int i = 0; i < m.nconsts; i++) tp_tensor_release(m.consts[i]);
  tp_free(m.consts);
  tp_free(m.const_node);
  while (m.arena) {
    blk *b = m.arena;
    m.arena = b->next;
    tp_free(b);
  }
  return s;
}

tp_status tp_onnx_load_file(const char *path, tp_graph **out) {
  uint8_t *b;
  size_t n;
  TP_TRY(tp_onnx_read_file(path, &b, &n));
  tp_status s = tp_onnx_load(b, n, out);
  tp_free(b);
  if (s) tp_fail_context(s, "%s", path);
  return s;
}
