/* writer.c - Graph IR -> ONNX ModelProto (tp_onnx_save, docs/onnx.md "Export").
 *
 * ir_version 8, default-domain opset 17, producer "tensorplay". Placeholders
 * become graph inputs (elem type + fixed shape), get_attr constants become
 * initializers (raw_data, little-endian), call nodes become one or a few
 * ONNX nodes each, the output node's operands become the graph outputs.
 * Every ONNX value made here that is not a graph node's own value is named
 * "tp:N": ':' is outside the graph-name alphabet, so these names never clash
 * with node names. The protobuf encoder is tp_pbw (pb.c), a tp_buf: it
 * records an allocation failure in .oom and ignores later writes, so the
 * code below writes freely and checks once at the end. */
#include "onnx.h"
#include "pb.h"
#include "tensor_pb.h"
#include "../core/num.h"
#include <math.h>
#include <stdio.h>

#define TP_ONNX_SAVE_OPSET 17
#define TP_ONNX_IR_VERSION 8

enum { AT_FLOAT = 1, AT_INT = 2, AT_INTS = 7 };

typedef struct wr {
  const tp_graph *g;
  tp_pbw nodes, inits, inputs, outputs; /* GraphProto fields 1, 5, 11, 12 */
  int aux;
  int oom;
  /* a subgraph (a cond branch): its values' ONNX names (a prefix + the
   * node's name; placeholders: the outer values passed as operands), NULL
   * for the top graph, whose values keep their node names */
  const char *const *names;
  const tp_graph *root; /* the top graph (aux names avoid its names too) */
} wr;

typedef char vname[48]; /* an aux name "tp:N" or a copy of a short node name */

static void pbw_free(tp_pbw *b) {
  tp_free(b->p);
  memset(b, 0, sizeof *b);
}

/* Appends message m as LEN field num of w and frees m. */
static void put_msg(tp_pbw *w, uint32_t num, tp_pbw *m) {
  if (m->oom) w->oom = 1;
  else tp_pbw_bytes(w, num, m->p, m->n);
  pbw_free(m);
}

static void put_str(tp_pbw *w, uint32_t num, const char *s) { tp_pbw_bytes(w, num, s, strlen(s)); }

/* A graph imported from ONNX keeps ONNX's value names, which may be "tp:N"
 * (a model this writer exported): skip the numbers the graph already uses. */
static void fresh(wr *w, vname out) {
  do snprintf(out, sizeof(vname), "tp:%d", w->aux++);
  while (tp_graph_find(w->g, out) >= 0 || (w->root && tp_graph_find(w->root, out) >= 0));
}

/* ---- attributes (AttributeProto: name 1, f 2, i 3, ints 8, type 20) ---- */
static void attr_int(tp_pbw *a, const char *name, int64_t v) {
  tp_pbw m = {0};
  put_str(&m, 1, name);
  tp_pbw_varint(&m, 3, (uint64_t)v);
  tp_pbw_varint(&m, 20, AT_INT);
  put_msg(a, 5, &m);
}

static void attr_str(tp_pbw *a, const char *name, const char *v) {
  tp_pbw m = {0};
  put_str(&m, 1, name);
  put_str(&m, 4, v);
  tp_pbw_varint(&m, 20, 3); /* STRING */
  put_msg(a, 5, &m);
}

static void attr_ints(tp_pbw *a, const char *name, const int64_t *v, int n) {
  tp_pbw m = {0};
  put_str(&m, 1, name);
  for (int i = 0; i < n; i++) tp_pbw_varint(&m, 8, (uint64_t)v[i]);
  tp_pbw_varint(&m, 20, AT_INTS);
  put_msg(a, 5, &m);
}

static void attr_float(tp_pbw *a, const char *name, float f) {
  tp_pbw m = {0};
  uint8_t b[4];
  uint32_t u;
  memcpy(&u, &f, 4);
  for (int i = 0; i < 4; i++) b[i] = (uint8_t)(u >> (8 * i));
  put_str(&m, 1, name);
  tp_pbw_raw_varint(&m, (uint64_t)2 << 3 | TP_PB_I32);
  tp_pbw_put(&m, b, 4);
  tp_pbw_varint(&m, 20, AT_FLOAT);
  put_msg(a, 5, &m);
}

/* ---- nodes (NodeProto: input 1, output 2, name 3, op_type 4, attribute 5).
 * attrs: concatenated attribute fields (freed here), may be NULL. */
static void node(wr *w, const char *op, int nin, const char *const *ins, const char *out,
                 tp_pbw *attrs) {
  tp_pbw m = {0};
  char nm[64];
  for (int i = 0; i < nin; i++) put_str(&m, 1, ins[i]);
  put_str(&m, 2, out);
  snprintf(nm, sizeof nm, "%s_%d", op, w->aux++);
  put_str(&m, 3, nm);
  put_str(&m, 4, op);
  if (attrs) {
    if (attrs->oom) m.oom = 1;
    else tp_pbw_put(&m, attrs->p, attrs->n);
    pbw_free(attrs);
  }
  put_msg(&w->nodes, 1, &m);
}

static void node1(wr *w, const char *op, const char *a, const char *out) { node(w, op, 1, &a, out, NULL); }
static void node2(wr *w, const char *op, const char *a, const char *b, const char *out) {
  const char *in[2] = {a, b};
  node(w, op, 2, in, out, NULL);
}

/* ---- initializers (TensorProto: dims 1, data_type 2, name 8, raw_data 9) ---- */
static void init_raw(wr *w, const char *name, tp_dtype dt, int ndim, const int64_t *shape,
                     const void *data, size_t bytes) {
  tp_pbw m = {0};
  for (int i = 0; i < ndim; i++) tp_pbw_varint(&m, 1, (uint64_t)shape[i]);
  tp_pbw_varint(&m, 2, (uint64_t)tp_onnx_from_dtype(dt));
  put_str(&m, 8, name);
  tp_pbw_bytes(&m, 9, data, bytes); /* little-endian hosts only (x86, Wasm) */
  put_msg(&w->inits, 5, &m);
}

static void init_i64(wr *w, vname out, int n, const int64_t *v) {
  int64_t sh[1] = {n};
  fresh(w, out);
  init_raw(w, out, TP_I64, 1, sh, v, sizeof(int64_t) * (size_t)n);
}

/* A 0-d constant of dtype dt holding v. */
static void init_scalar(wr *w, vname out, tp_dtype dt, double v) {
  union { float f; int32_t i; int64_t l; uint8_t b; int8_t c; uint16_t h; } u;
  size_t n;
  switch (dt) {
    case TP_F32: u.f = (float)v; n = 4; break;
    case TP_F16: u.h = tp_f64_to_f16(v); n = 2; break;
    case TP_BF16: u.h = tp_f64_to_bf16(v); n = 2; break;
    case TP_I8: u.c = tp_f64_to_i8_sat(v); n = 1; break;
    case TP_U8: u.b = tp_f64_to_u8_sat(v); n = 1; break;
    case TP_I32: u.i = tp_f64_to_i32_sat(v); n = 4; break; /* no UB past the range */
    case TP_I64: u.l = tp_f64_to_i64_sat(v); n = 8; break;
    default: u.b = v != 0; n = 1; break;
  }
  fresh(w, out);
  init_raw(w, out, dt, 0, NULL, &u, n);
}

/* ---- value infos (ValueInfoProto: name 1, type 2 -> TypeProto.tensor_type 1
 * -> elem_type 1, shape 2 -> dim 1 -> dim_value 1) ---- */
/* dyn0: dim 0 is known only at run time (dim_param "steps": a scan output
 * of a loop that ends on data, declared with 0 rows, onnx_cond.c) */
static void add_vi_dyn(wr *w, tp_pbw *section, uint32_t num, const char *name, const tp_desc *d, int dyn0) {
  tp_pbw vi = {0}, tp = {0}, tt = {0}, sh = {0};
  (void)w;
  for (int i = 0; i < d->ndim; i++) {
    tp_pbw dm = {0};
    if (i == 0 && dyn0) put_str(&dm, 2, "steps");
    else tp_pbw_varint(&dm, 1, (uint64_t)d->shape[i]);
    put_msg(&sh, 1, &dm);
  }
  tp_pbw_varint(&tt, 1, (uint64_t)tp_onnx_from_dtype(d->dtype));
  put_msg(&tt, 2, &sh); /* a 0-d tensor has an empty (but present) shape */
  put_msg(&tp, 1, &tt);
  put_str(&vi, 1, name);
  put_msg(&vi, 2, &tp);
  put_msg(section, num, &vi);
}

static void add_vi(wr *w, tp_pbw *section, uint32_t num, const char *name, const tp_desc *d) {
  add_vi_dyn(w, section, num, name, d, 0);
}

/* ---- operands ---- */
static const char *vn(const wr *w, int i) { return w->names ? w->names[i] : w->g->nodes[i].name; }

static tp_desc arg_desc(const tp_graph *g, const tp_arg *a) {
  tp_desc d;
  memset(&d, 0, sizeof d);
  if (a->kind == TP_ARG_SCALAR) {
    d.dtype = a->is_int ? TP_I64 : TP_F32;
    d.weak = a->is_int ? 1 : 2;
  } else if (a->kind == TP_ARG_NODE) {
    d = g->nodes[a->node].desc;
  }
  return d;
}

/* The ONNX name of operand a as dtype dt: the node's own value, a Cast of
 * it, or a typed 0-d initializer for an immediate scalar; "" when absent.
 * *out points at the node name or at buf. */
static void operand(wr *w, const tp_arg *a, tp_dtype dt, vname buf, const char **out) {
  if (a->kind == TP_ARG_NONE) {
    *out = "";
  } else if (a->kind == TP_ARG_SCALAR) {
    init_scalar(w, buf, dt, a->scalar);
    *out = buf;
  } else if (w->g->nodes[a->node].desc.dtype == dt) {
    *out = vn(w, a->node);
  } else {
    tp_pbw at = {0};
    const char *src = vn(w, a->node);
    attr_int(&at, "to", tp_onnx_from_dtype(dt));
    fresh(w, buf);
    node(w, "Cast", 1, &src, buf, &at);
    *out = buf;
  }
}

static void cast_to(wr *w, const char *src, tp_dtype dt, const char *out) {
  tp_pbw at = {0};
  attr_int(&at, "to", tp_onnx_from_dtype(dt));
  node(w, "Cast", 1, &src, out, &at);
}

static const char *unary_name(tp_op op) {
  switch (op) {
    case TP_OP_NEG: return "Neg";
    case TP_OP_ABS: return "Abs";
    case TP_OP_EXP: return "Exp";
    case TP_OP_LOG: return "Log";
    case TP_OP_SQRT: return "Sqrt";
    case TP_OP_TANH: return "Tanh";
    case TP_OP_SIGMOID: return "Sigmoid";
    case TP_OP_RELU: return "Relu";
    case TP_OP_FLOOR: return "Floor";
    case TP_OP_CEIL: return "Ceil";
    case TP_OP_ROUND: return "Round";
    case TP_OP_ERF: return "Erf";
    case TP_OP_SIN: return "Sin";
    case TP_OP_COS: return "Cos";
    case TP_OP_TAN: return "Tan";
    case TP_OP_ASIN: return "Asin";
    case TP_OP_ACOS: return "Acos";
    case TP_OP_ATAN: return "Atan";
    case TP_OP_SINH: return "Sinh";
    case TP_OP_COSH: return "Cosh";
    case TP_OP_ASINH: return "Asinh";
    case TP_OP_ACOSH: return "Acosh";
    case TP_OP_ATANH: return "Atanh";
    default: return NULL;
  }
}

/* The get_attr weight of a linear whose input is not 2-D (stored as w^T),
 * NULL otherwise. */
static const tp_node *linear_weight_const(const tp_graph *g, const tp_node *n) {
  if (n->args[0].kind == TP_ARG_NODE && g->nodes[n->args[0].node].desc.ndim == 2) return NULL;
  const tp_node *wn = n->args[1].kind == TP_ARG_NODE ? &g->nodes[n->args[1].node] : NULL;
  if (wn && wn->kind == TP_NODE_GET_ATTR && wn->val && wn->desc.dtype == TP_F32 && wn->desc.ndim == 2)
    return wn;
  return NULL;
}

static tp_status quant_node(wr *w, const tp_node *n, const char *out);

static tp_status convert_as(wr *w, const tp_node *n, const char *out) {
  const tp_graph *g = w->g;
  const tp_attrs *at = &n->attrs;
  tp_dtype od = n->desc.dtype;
  vname b0, b1, b2, t0, t1, t2, t3, t4, t5;
  const char *a0 = NULL, *a1 = NULL, *a2 = NULL;
  tp_desc d0 = n->nargs > 0 ? arg_desc(g, &n->args[0]) : n->desc;
  tp_pbw atb = {0};
  switch (n->op) {
    case TP_OP_ADD: case TP_OP_SUB: case TP_OP_MUL: case TP_OP_DIV: {
      static const char *nm[] = {"Add", "Sub", "Mul", "Div"};
      operand(w, &n->args[0], od, b0, &a0);
      operand(w, &n->args[1], od, b1, &a1);
      node2(w, nm[n->op - TP_OP_ADD], a0, a1, out);
      return TP_OK;
    }
    case TP_OP_EQ: case TP_OP_LT: case TP_OP_GT: {
      tp_desc d1 = arg_desc(g, &n->args[1]);
      tp_dtype cd = tp_promote(&d0, &d1);
      if (cd == TP_BOOL && n->op != TP_OP_EQ) cd = TP_I32; /* Less/Greater: numbers only */
      operand(w, &n->args[0], cd, b0, &a0);
      operand(w, &n->args[1], cd, b1, &a1);
      node2(w, n->op == TP_OP_EQ ? "Equal" : n->op == TP_OP_LT ? "Less" : "Greater", a0, a1, out);
      return TP_OK;
    }
    case TP_OP_WHERE: {
      operand(w, &n->args[0], TP_BOOL, b0, &a0);
      operand(w, &n->args[1], od, b1, &a1);
      operand(w, &n->args[2], od, b2, &a2);
      if (od == TP_BOOL) { /* onnxruntime has no bool Where: (c and a) or (not c and b) */
        vname t0, t1, t2;
        fresh(w, t0), fresh(w, t1), fresh(w, t2);
        node2(w, "And", a0, a1, t0);
        node1(w, "Not", a0, t1);
        node2(w, "And", t1, a2, t2);
        node2(w, "Or", t0, t2, out);
        return TP_OK;
      }
      const char *in[3] = {a0, a1, a2};
      node(w, "Where", 3, in, out, NULL);
      return TP_OK;
    }
    case TP_OP_NEG: case TP_OP_ABS: case TP_OP_RELU:
    case TP_OP_EXP: case TP_OP_LOG: case TP_OP_SQRT: case TP_OP_TANH: case TP_OP_SIGMOID:
    case TP_OP_FLOOR: case TP_OP_CEIL: case TP_OP_ROUND: case TP_OP_ERF:
    case TP_OP_SIN: case TP_OP_COS: case TP_OP_TAN: case TP_OP_ASIN: case TP_OP_ACOS: case TP_OP_ATAN: case TP_OP_SINH: case TP_OP_COSH: case TP_OP_ASINH: case TP_OP_ACOSH: case TP_OP_ATANH:
      operand(w, &n->args[0], od, b0, &a0);
      node1(w, unary_name(n->op), a0, out);
      return TP_OK;
    case TP_OP_RSQRT:
      operand(w, &n->args[0], TP_F32, b0, &a0);
      fresh(w, t0);
      node1(w, "Sqrt", a0, t0);
      node1(w, "Reciprocal", t0, out);
      return TP_OK;
    case TP_OP_GELU: { /* opset 17 has no Gelu: the formulas of ref.c */
      tp_arg one = {TP_ARG_SCALAR, 0, 1.0, 0}, half = {TP_ARG_SCALAR, 0, 0.5, 0};
      const char *c1, *ch;
      operand(w, &n->args[0], TP_F32, b0, &a0);
      operand(w, &one, TP_F32, b1, &c1);
      operand(w, &half, TP_F32, b2, &ch);
      fresh(w, t0), fresh(w, t1), fresh(w, t2), fresh(w, t3);
      if (at->approximate == 0) { /* 0.5 x (1 + erf(x / sqrt 2)) */
        vname cs;
        init_scalar(w, cs, TP_F32, sqrt(2.0));
        node2(w, "Div", a0, cs, t0);
        node1(w, "Erf", t0, t1);
      } else { /* 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) */
        vname ck, cc, u0, u1;
        init_scalar(w, ck, TP_F32, 0.044715);
        init_scalar(w, cc, TP_F32, sqrt(2.0 / 3.14159265358979323846));
        fresh(w, t4), fresh(w, t5), fresh(w, u0), fresh(w, u1);
        node2(w, "Mul", a0, a0, t4);
        node2(w, "Mul", t4, a0, t5);   /* x^3 */
        node2(w, "Mul", t5, ck, u0);   /* 0.044715 x^3 */
        node2(w, "Add", a0, u0, u1);   /* x + ... */
        node2(w, "Mul", u1, cc, t0);
        node1(w, "Tanh", t0, t1);
      }
      node2(w, "Add", t1, c1, t2);
      node2(w, "Mul", a0, t2, t3);
      node2(w, "Mul", t3, ch, out);
      return TP_OK;
    }
    case TP_OP_MATMUL:
      operand(w, &n->args[0], TP_F32, b0, &a0);
      operand(w, &n->args[1], TP_F32, b1, &a1);
      node2(w, "MatMul", a0, a1, out);
      return TP_OK;
    case TP_OP_LINEAR: {
      operand(w, &n->args[0], TP_F32, b0, &a0);
      if (!linear_weight_const(g, n)) operand(w, &n->args[1], TP_F32, b1, &a1);
      operand(w, &n->args[2], TP_F32, b2, &a2);
      int has_b = n->args[2].kind != TP_ARG_NONE;
      if (d0.ndim == 2) { /* Gemm(x, w, b, transB=1) */
        const char *in[3] = {a0, a1, a2};
        attr_int(&atb, "transB", 1);
        node(w, "Gemm", has_b ? 3 : 2, in, out, &atb);
        return TP_OK;
      }
      const tp_node *wn = linear_weight_const(g, n);
      fresh(w, t0);
      if (wn) {
        /* a constant weight: store w^T */
        tp_tensor *c = NULL;
        int64_t R = wn->desc.shape[0], C = wn->desc.shape[1], sh[2] = {C, R};
        TP_TRY(tp_contiguous(wn->val, &c));
        float *tr = tp_alloc(sizeof(float) * (size_t)((R * C) > 0 ? R * C : 1));
        if (!tr) {
          tp_tensor_release(c);
          return TP_ERR_OUT_OF_MEMORY;
        }
        const float *src = tp_tensor_ptr(c);
        for (int64_t r = 0; r < R; r++)
          for (int64_t k = 0; k < C; k++) tr[k * R + r] = src[r * C + k];
        init_raw(w, t0, TP_F32, 2, sh, tr, sizeof(float) * (size_t)(R * C));
        tp_free(tr);
        tp_tensor_release(c);
      } else {
        int64_t perm[2] = {1, 0};
        attr_ints(&atb, "perm", perm, 2);
        node(w, "Transpose", 1, &a1, t0, &atb);
      }
      fresh(w, t1);
      node2(w, "MatMul", a0, t0, has_b ? t1 : out);
      if (has_b) node2(w, "Add", t1, a2, out);
      return TP_OK;
    }
    case TP_OP_SUM: case TP_OP_MEAN: case TP_OP_MAX: case TP_OP_MIN: {
      static const char *nm[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin"};
      int64_t axes[TP_MAX_DIMS];
      int nax = d0.ndim ? at->nints : 0;
      for (int i = 0; i < nax; i++) TP_TRY(tp_norm_dim(tp_op_name(n->op), at->ints[i], d0.ndim, &axes[i]));
      tp_dtype cd = od == TP_BOOL ? TP_I32 : od; /* ReduceMax/Min: numbers only */
      operand(w, &n->args[0], cd, b0, &a0);
      attr_int(&atb, "keepdims", at->keepdim ? 1 : 0);
      const char *res = out;
      if (cd != od) fresh(w, t1), res = t1;
      if (n->op == TP_OP_SUM) { /* opset 13+: axes is an input */
        const char *in[2] = {a0, ""};
        if (nax) init_i64(w, t0, nax, axes), in[1] = t0;
        node(w, nm[0], nax ? 2 : 1, in, res, &atb);
      } else { /* opset 17: the other reductions take axes as an attribute (an input from 18) */
        if (nax) attr_ints(&atb, "axes", axes, nax);
        node(w, nm[n->op - TP_OP_SUM], 1, &a0, res, &atb);
      }
      if (cd != od) cast_to(w, t1, od, out);
      return TP_OK;
    }
    case TP_OP_SOFTMAX: case TP_OP_LOG_SOFTMAX: {
      int64_t ax = 0;
      if (d0.ndim) TP_TRY(tp_norm_dim(tp_op_name(n->op), at->dim, d0.ndim, &ax));
      operand(w, &n->args[0], TP_F32, b0, &a0);
      attr_int(&atb, "axis", ax);
      node(w, n->op == TP_OP_SOFTMAX ? "Softmax" : "LogSoftmax", 1, &a0, out, &atb);
      return TP_OK;
    }
    case TP_OP_MAX_POOL2D:
    case TP_OP_AVG_POOL2D: { /* window [kh kw sh sw pt pl pb pr] */
      operand(w, &n->args[0], TP_F32, b0, &a0);
      attr_ints(&atb, "kernel_shape", at->ints, 2);
      attr_ints(&atb, "strides", at->ints + 2, 2);
      attr_ints(&atb, "pads", at->ints + 4, 4);
      if (n->op == TP_OP_AVG_POOL2D) attr_int(&atb, "count_include_pad", at->dim);
      node(w, n->op == TP_OP_MAX_POOL2D ? "MaxPool" : "AveragePool", 1, &a0, out, &atb);
      return TP_OK;
    }
    case TP_OP_CONV2D: { /* window [sh sw pt pl pb pr dh dw] is Conv's strides, pads, dilations */
      operand(w, &n->args[0], TP_F32, b0, &a0);
      operand(w, &n->args[1], TP_F32, b1, &a1);
      operand(w, &n->args[2], TP_F32, b2, &a2);
      const char *in[3] = {a0, a1, a2};
      attr_ints(&atb, "strides", at->ints, 2);
      attr_ints(&atb, "pads", at->ints + 2, 4);
      attr_ints(&atb, "dilations", at->ints + 6, 2);
      attr_int(&atb, "group", at->dim);
      node(w, "Conv", *a2 ? 3 : 2, in, out, &atb);
      return TP_OK;
    }
    case TP_OP_CONV2D_INT: { /* ConvInteger: the window as Conv's; zero points as given (a per-channel w one is [M]) */
      tp_desc d1 = arg_desc(g, &n->args[1]);
      const char *in[4] = {"", "", "", ""};
      vname bz[2];
      operand(w, &n->args[0], d0.dtype, b0, &in[0]);
      operand(w, &n->args[1], d1.dtype, b1, &in[1]);
      int nin = 2;
      for (int k = 2; k < n->nargs && k < 4; k++)
        if (n->args[k].kind != TP_ARG_NONE) operand(w, &n->args[k], k == 2 ? d0.dtype : d1.dtype, bz[k - 2], &in[k]), nin = k + 1;
      attr_ints(&atb, "strides", at->ints, 2);
      attr_ints(&atb, "pads", at->ints + 2, 4);
      attr_ints(&atb, "dilations", at->ints + 6, 2);
      attr_int(&atb, "group", at->dim);
      node(w, "ConvInteger", nin, in, out, &atb);
      return TP_OK;
    }
    case TP_OP_QCONV2D: { /* QLinearConv: a quantized output with an int32 bias or none */
      if (n->desc.dtype == TP_F32 || (n->args[6].kind != TP_ARG_NONE && arg_desc(g, &n->args[6]).dtype != TP_I32) || at->keepdim)
        return tp_fail(TP_ERR_UNSUPPORTED,
                       "onnx: node '%s' (qconv2d): only a quantized output without relu and with an int32 bias (QLinearConv) "
                       "can be exported", n->name);
      static const int order[9] = {0, 4, 2, 1, 5, 3, 7, 8, 6}; /* QLinearConv's inputs in qconv2d's operand numbers */
      const char *in[9];
      vname bufs[9];
      for (int k = 0; k < 9; k++) {
        int a = order[k];
        tp_dtype dt = a == 2 ? d0.dtype : a == 3 ? arg_desc(g, &n->args[1]).dtype : a == 8 ? n->desc.dtype
                      : a == 6 ? TP_I32 : a <= 1 ? arg_desc(g, &n->args[a]).dtype : TP_F32;
        if (n->args[a].kind == TP_ARG_NONE && (a == 2 || a == 3)) { /* QLinearConv needs both zero points: 0 */
          fresh(w, bufs[k]);
          int64_t zero = 0;
          init_raw(w, bufs[k], dt, 0, NULL, &zero, 1);
          in[k] = bufs[k];
          continue;
        }
        operand(w, &n->args[a], dt, bufs[k], &in[k]);
      }
      attr_ints(&atb, "strides", at->ints, 2);
      attr_ints(&atb, "pads", at->ints + 2, 4);
      attr_ints(&atb, "dilations", at->ints + 6, 2);
      attr_int(&atb, "group", at->dim);
      node(w, "QLinearConv", *in[8] ? 9 : 8, in, out, &atb);
      return TP_OK;
    }
    case TP_OP_LAYER_NORM: {
      operand(w, &n->args[0], TP_F32, b0, &a0);
      if (n->args[1].kind == TP_ARG_NONE) { /* ONNX requires Scale: ones */
        int64_t cnt = tp_shape_numel(at->nints, at->ints);
        float *ones = tp_alloc(sizeof(float) * (size_t)(cnt ? cnt : 1));
        if (!ones) return TP_ERR_OUT_OF_MEMORY;
        for (int64_t i = 0; i < cnt; i++) ones[i] = 1.0f;
        fresh(w, b1);
        init_raw(w, b1, TP_F32, at->nints, at->ints, ones, sizeof(float) * (size_t)cnt);
        tp_free(ones);
        a1 = b1;
      } else {
        operand(w, &n->args[1], TP_F32, b1, &a1);
      }
      operand(w, &n->args[2], TP_F32, b2, &a2);
      const char *in[3] = {a0, a1, a2};
      attr_int(&atb, "axis", d0.ndim - at->nints);
      attr_float(&atb, "epsilon", (float)at->eps);
      node(w, "LayerNormalization", *a2 ? 3 : 2, in, out, &atb);
      return TP_OK;
    }
    case TP_OP_RESHAPE: {
      int zero = 0;
      for (int i = 0; i < n->desc.ndim; i++) zero |= n->desc.shape[i] == 0;
      operand(w, &n->args[0], od, b0, &a0);
      init_i64(w, t0, n->desc.ndim, n->desc.shape); /* the resolved shape: no -1 */
      if (zero) attr_int(&atb, "allowzero", 1);
      const char *in[2] = {a0, t0};
      node(w, "Reshape", 2, in, out, zero ? &atb : NULL);
      return TP_OK;
    }
    case TP_OP_TRANSPOSE: case TP_OP_PERMUTE: {
      int64_t perm[TP_MAX_DIMS], p0 = 0, p1 = 0;
      for (int i = 0; i < d0.ndim; i++) perm[i] = i;
      if (n->op == TP_OP_TRANSPOSE) {
        if (d0.ndim) {
          TP_TRY(tp_norm_dim("transpose", at->dim, d0.ndim, &p0));
          TP_TRY(tp_norm_dim("transpose", at->dim1, d0.ndim, &p1));
        }
        if (d0.ndim) perm[p0] = p1, perm[p1] = p0;
      } else {
        for (int i = 0; i < d0.ndim && i < at->nints; i++)
          TP_TRY(tp_norm_dim("permute", at->ints[i], d0.ndim, &perm[i]));
      }
      operand(w, &n->args[0], od, b0, &a0);
      attr_ints(&atb, "perm", perm, d0.ndim);
      node(w, "Transpose", 1, &a0, out, &atb);
      return TP_OK;
    }
    case TP_OP_SLICE: {
      int64_t ax, s, len;
      TP_TRY(tp_norm_dim("slice", at->dim, d0.ndim, &ax));
      int64_t dimn = d0.shape[ax], step = at->step;
      tp_slice_bounds(dimn, at->start, at->end, step, &s, &len);
      int64_t e = s + len * step;
      if (e > dimn) e = dimn;
      int64_t v_s[1] = {s}, v_e[1] = {e}, v_a[1] = {ax}, v_p[1] = {step};
      operand(w, &n->args[0], od, b0, &a0);
      init_i64(w, t0, 1, v_s);
      init_i64(w, t1, 1, v_e);
      init_i64(w, t2, 1, v_a);
      init_i64(w, t3, 1, v_p);
      const char *in[5] = {a0, t0, t1, t2, t3};
      node(w, "Slice", 5, in, out, NULL);
      return TP_OK;
    }
    case TP_OP_CONCAT: {
      const char **in = tp_alloc(sizeof(char *) * (size_t)(n->nargs ? n->nargs : 1));
      vname *bufs = tp_alloc(sizeof(vname) * (size_t)(n->nargs ? n->nargs : 1));
      int64_t ax = 0;
      tp_status s = in && bufs ? TP_OK : TP_ERR_OUT_OF_MEMORY;
      if (!s && d0.ndim) s = tp_norm_dim("concat", at->dim, d0.ndim, &ax);
      for (int i = 0; !s && i < n->nargs; i++) operand(w, &n->args[i], od, bufs[i], &in[i]);
      if (!s) {
        attr_int(&atb, "axis", ax);
        node(w, "Concat", n->nargs, in, out, &atb);
      }
      tp_free(in);
      tp_free(bufs);
      return s;
    }
    case TP_OP_GRID_SAMPLE: { /* opset 17: GridSample of opset 16, 4-D only */
      static const char *const modes[] = {"bilinear", "nearest", "bicubic"}, *const pads[] = {"zeros", "border", "reflection"};
      const char *a1;
      if (d0.ndim != 4)
        return tp_fail(TP_ERR_UNSUPPORTED, "onnx: node '%s' (grid_sample): a volumetric (5-D) GridSample needs opset 20; the export writes opset %d",
                       n->name, TP_ONNX_SAVE_OPSET);
      operand(w, &n->args[0], od, b0, &a0);
      operand(w, &n->args[1], od, b1, &a1);
      attr_str(&atb, "mode", modes[at->dim >= 0 && at->dim < 3 ? at->dim : 0]);
      attr_str(&atb, "padding_mode", pads[at->dim1 >= 0 && at->dim1 < 3 ? at->dim1 : 0]);
      attr_int(&atb, "align_corners", at->keepdim ? 1 : 0);
      const char *in[2] = {a0, a1};
      node(w, "GridSample", 2, in, out, &atb);
      return TP_OK;
    }
    case TP_OP_ROI_ALIGN: {
      const char *a1, *a2;
      operand(w, &n->args[0], od, b0, &a0);
      operand(w, &n->args[1], od, b1, &a1);
      operand(w, &n->args[2], TP_I64, b2, &a2);
      attr_str(&atb, "mode", at->dim == 1 ? "max" : "avg");
      attr_str(&atb, "coordinate_transformation_mode", at->keepdim ? "half_pixel" : "output_half_pixel");
      attr_int(&atb, "output_height", at->ints[0]);
      attr_int(&atb, "output_width", at->ints[1]);
      attr_int(&atb, "sampling_ratio", at->ints[2]);
      attr_float(&atb, "spatial_scale", (float)at->eps);
      const char *in[3] = {a0, a1, a2};
      node(w, "RoiAlign", 3, in, out, &atb);
      return TP_OK;
    }
    case TP_OP_GATHER_ND: {
      const char *a1;
      operand(w, &n->args[0], od, b0, &a0);
      operand(w, &n->args[1], TP_I64, b1, &a1);
      if (at->dim) attr_int(&atb, "batch_dims", at->dim);
      const char *in[2] = {a0, a1};
      node(w, "GatherND", 2, in, out, &atb);
      return TP_OK;
    }
    case TP_OP_SCATTER_ELEMENTS:
    case TP_OP_SCATTER_ND: {
      static const char *const reds[] = {"none", "add", "mul", "max", "min"};
      const char *a1, *a2;
      operand(w, &n->args[0], od, b0, &a0);
      operand(w, &n->args[1], TP_I64, b1, &a1);
      operand(w, &n->args[2], od, b2, &a2);
      if (n->op == TP_OP_SCATTER_ELEMENTS) {
        int64_t ax;
        TP_TRY(tp_norm_dim(tp_op_name(n->op), at->dim, d0.ndim, &ax));
        attr_int(&atb, "axis", ax);
      }
      if (at->reduction) attr_str(&atb, "reduction", reds[at->reduction < 5 ? at->reduction : 0]);
      const char *in[3] = {a0, a1, a2};
      node(w, n->op == TP_OP_SCATTER_ND ? "ScatterND" : "ScatterElements", 3, in, out, &atb);
      return TP_OK;
    }
    case TP_OP_GATHER:
    case TP_OP_GATHER_ELEMENTS: {
      int64_t ax;
      const char *a1;
      TP_TRY(tp_norm_dim(tp_op_name(n->op), at->dim, d0.ndim, &ax));
      operand(w, &n->args[0], od, b0, &a0);
      operand(w, &n->args[1], TP_I64, b1, &a1);
      attr_int(&atb, "axis", ax);
      const char *in[2] = {a0, a1};
      node(w, n->op == TP_OP_GATHER ? "Gather" : "GatherElements", 2, in, out, &atb);
      return TP_OK;
    }
    case TP_OP_MOD: case TP_OP_FMOD: /* Mod: fmod 0 the divisor's sign, 1 the dividend's */
      operand(w, &n->args[0], od, b0, &a0);
      operand(w, &n->args[1], od, b1, &a1);
      attr_int(&atb, "fmod", n->op == TP_OP_FMOD);
      node(w, "Mod", 2, (const char *[]){a0, a1}, out, &atb);
      return TP_OK;
    case TP_OP_DET:
      operand(w, &n->args[0], TP_F32, b0, &a0);
      node1(w, "Det", a0, out);
      return TP_OK;
    case TP_OP_CAST: {
      const char *src;
      operand(w, &n->args[0], d0.dtype, b0, &src); /* a scalar operand keeps its kind */
      cast_to(w, src, at->dtype, out);
      return TP_OK;
    }
    case TP_OP_QUANTIZE:
    case TP_OP_DEQUANTIZE: return quant_node(w, n, out);
    case TP_OP_MATMUL_INT: { /* int8/uint8 operands: MatMulInteger; with an int32 one: MatMul on int32 */
      tp_desc d1 = arg_desc(g, &n->args[1]);
      int q = (d0.dtype == TP_I8 || d0.dtype == TP_U8) && (d1.dtype == TP_I8 || d1.dtype == TP_U8);
      int zps = 0; /* the zero points (ops.def's shapes are MatMulInteger's) */
      for (int k = 2; k < n->nargs; k++) zps |= n->args[k].kind != TP_ARG_NONE;
      if (zps && !q)
        return tp_fail(TP_ERR_UNSUPPORTED, "onnx: node '%s' (matmul_int): zero points of int32 operands cannot be exported",
                       n->name);
      operand(w, &n->args[0], q ? d0.dtype : TP_I32, b0, &a0);
      operand(w, &n->args[1], q ? d1.dtype : TP_I32, b1, &a1);
      if (!zps) {
        node2(w, q ? "MatMulInteger" : "MatMul", a0, a1, out);
        return TP_OK;
      }
      const char *in[4] = {a0, a1, "", ""};
      vname bz[2];
      for (int k = 2; k < n->nargs && k < 4; k++)
        if (n->args[k].kind != TP_ARG_NONE) operand(w, &n->args[k], k == 2 ? d0.dtype : d1.dtype, bz[k - 2], &in[k]);
      node(w, "MatMulInteger", n->nargs, in, out, NULL);
      return TP_OK;
    }
    default:
      break;
  }
  if (n->op == TP_OP_BITCAST)
    return tp_fail(TP_ERR_UNSUPPORTED, "onnx: node '%s' (bitcast): ONNX's BitCast needs opset 26; the export writes opset %d",
                   n->name, TP_ONNX_SAVE_OPSET);
  if (n->op == TP_OP_ARGTOPK)
    return tp_fail(TP_ERR_UNSUPPORTED, "onnx: node '%s' (argtopk): exporting it is not supported yet", n->name);
  if (n->op == TP_OP_BITWISE_AND || n->op == TP_OP_BITWISE_OR || n->op == TP_OP_BITWISE_XOR ||
      n->op == TP_OP_BITWISE_NOT)
    return tp_fail(TP_ERR_UNSUPPORTED, "onnx: node '%s' (%s): ONNX's Bitwise ops need opset 18; the export writes opset 17",
                   n->name, tp_op_name(n->op));
  const char *why = n->op == TP_OP_INVOKE ? "a nested compiled region"
                    : (tp_op_flags(n->op) & TP_OPF_OPAQUE) ? "an opaque host region"
                                                              : "an operator";
  return tp_fail(TP_ERR_UNSUPPORTED,
                 "onnx: node '%s' (%s) has no ONNX equivalent: it is %s that only the host can run",
                 n->name, tp_op_name(n->op), why);
}

/* quantize / dequantize -> QuantizeLinear / DequantizeLinear (opset 13
 * forms): one scale value, or one per element of one axis (the graph holds
 * it shaped to broadcast: [C, 1, ..., 1]); blocked scales need opset 21. */
static tp_status quant_node(wr *w, const tp_node *n, const char *out) {
  const tp_graph *g = w->g;
  tp_desc x = arg_desc(g, &n->args[0]);
  const char *in[3] = {"", "", ""};
  vname buf[3];
  int axis = -1;
  for (int k = 1; k < 3; k++) {
    if (n->args[k].kind == TP_ARG_NONE) continue;
    tp_desc p = arg_desc(g, &n->args[k]);
    int64_t numel = tp_shape_numel(p.ndim, p.shape);
    int ax = -1, many = 0;
    for (int d = 0; d < p.ndim; d++)
      if (p.shape[d] != 1) many += ax >= 0, ax = x.ndim - p.ndim + d;
    if (many)
      return tp_fail(TP_ERR_UNSUPPORTED, "onnx: node '%s' (%s): blocked quantization needs opset 21; the export writes opset %d",
                     n->name, tp_op_name(n->op), TP_ONNX_SAVE_OPSET);
    if (ax >= 0 && axis >= 0 && ax != axis)
      return tp_fail(TP_ERR_UNSUPPORTED, "onnx: node '%s' (%s): the scale and the zero point run along different axes",
                     n->name, tp_op_name(n->op));
    if (ax >= 0) axis = ax;
    const char *src = vn(w, n->args[k].node);
    if (p.ndim == 0 || (p.ndim == 1 && ax >= 0)) {
      in[k] = src;
      continue;
    }
    int64_t sh = numel;
    vname shn;
    init_i64(w, shn, ax >= 0 ? 1 : 0, &sh); /* the shape [C], or [] for one value */
    fresh(w, buf[k]);
    node2(w, "Reshape", src, shn, buf[k]);
    in[k] = buf[k];
  }
  in[0] = vn(w, n->args[0].node);
  tp_pbw at = {0};
  if (axis >= 0) attr_int(&at, "axis", axis);
  node(w, n->op == TP_OP_QUANTIZE ? "QuantizeLinear" : "DequantizeLinear", n->args[2].kind == TP_ARG_NONE ? 2 : 3, in, out,
       axis >= 0 ? &at : NULL);
  if (n->op == TP_OP_QUANTIZE && n->args[2].kind == TP_ARG_NONE && n->desc.dtype != TP_U8)
    return tp_fail(TP_ERR_UNSUPPORTED, "onnx: node '%s' (quantize): an int8 result needs a zero point at opset %d", n->name,
                   TP_ONNX_SAVE_OPSET);
  return TP_OK;
}

/* A node on float16/bfloat16/int8/uint8 values: ONNX's operators are
 * written on the compute dtype (float32/int32) and the result cast back
 * (the op layer's rule, so the file computes what the graph does); cast,
 * views and the quantization ops take them as they are. */
static tp_status cond_node(wr *w, int idx);
static tp_status while_node(wr *w, int idx);
static tp_status getitem_node(wr *w, int idx);
/* Whether the graph reads only what an ONNX LSTM outputs of lstm node idx's
 * packed result [2, S + 1, D, B, H]: plane 0 (Y and the final H), and of
 * plane 1 (the cell states) only row S (the final C). Every reader must
 * slice axis 0 (as the importer's and JS's unpacking do); a reader of plane
 * 1 must be slices of axis 1 from row S on. 1, or 0 and *why. */
static int lstm_reads_exportable(const tp_graph *g, int idx, int64_t S, const char **why) {
  for (int j = 0; j < g->n; j++)
    for (int a = 0; a < g->nodes[j].nargs; a++) {
      if (g->nodes[j].args[a].kind != TP_ARG_NODE || g->nodes[j].args[a].node != idx) continue;
      const tp_node *r = &g->nodes[j];
      int64_t ax = -1, s = 0, len = 0;
      if (r->kind == TP_NODE_CALL && r->op == TP_OP_SLICE && tp_norm_dim("slice", r->attrs.dim, 5, &ax) == TP_OK && ax == 0)
        tp_slice_bounds(2, r->attrs.start, r->attrs.end, r->attrs.step, &s, &len);
      else {
        tp_clear_error();
        *why = "the whole packed result is read (only slices of it have an ONNX equivalent)";
        return 0;
      }
      if (len == 1 && s == 0) continue; /* plane 0: Y and the final H */
      if (len != 1 || s != 1) {
        *why = "both planes are read together";
        return 0;
      }
      for (int k = 0; k < g->n; k++) /* plane 1: only its row S (the final C) */
        for (int b = 0; b < g->nodes[k].nargs; b++) {
          if (g->nodes[k].args[b].kind != TP_ARG_NODE || g->nodes[k].args[b].node != j) continue;
          const tp_node *q = &g->nodes[k];
          int64_t ax1 = -1, s1 = 0, len1 = 0;
          if (q->kind == TP_NODE_CALL && q->op == TP_OP_SLICE &&
              tp_norm_dim("slice", q->attrs.dim, 5, &ax1) == TP_OK && ax1 == 1)
            tp_slice_bounds(S + 1, q->attrs.start, q->attrs.end, q->attrs.step, &s1, &len1);
          else
            tp_clear_error();
          if (ax1 != 1 || s1 < S) {
            *why = "its cell states before the last step are read (ONNX's LSTM outputs only the last, Y_c)";
            return 0;
          }
        }
    }
  return 1;
}

/* rnn / gru / lstm -> RNN / GRU / LSTM (layout 0, the op's attributes), and
 * the op's packed result [2, S + 1, D, B, H] rebuilt from the outputs:
 * plane 0 = Y then Y_h; plane 1 = zeros (rnn, gru: the op's own zeros) or,
 * for lstm, zeros then Y_c, which is the packed result wherever the graph
 * reads it (lstm_reads_exportable: else a clear error). */
static tp_status recurrent_node(wr *w, int idx) {
  const tp_graph *g = w->g;
  const tp_node *n = &g->nodes[idx];
  const tp_attrs *at = &n->attrs;
  int lstm = n->op == TP_OP_LSTM, nops = lstm ? 8 : 6, nact = lstm ? 3 : n->op == TP_OP_GRU ? 2 : 1;
  const char *op = lstm ? "LSTM" : n->op == TP_OP_GRU ? "GRU" : "RNN";
  int64_t S = n->desc.shape[1] - 1, D = n->desc.shape[2], B = n->desc.shape[3], H = n->desc.shape[4];
  const char *why = NULL;
  if (lstm && !lstm_reads_exportable(g, idx, S, &why))
    return tp_fail(TP_ERR_UNSUPPORTED, "onnx: node '%s' (lstm): cannot be exported: %s", n->name, why);
  vname buf[8], y, yh, yc, t[9];
  const char *in[8];
  for (int i = 0; i < nops; i++) {
    if (i < n->nargs) operand(w, &n->args[i], i == 4 ? TP_I32 : TP_F32, buf[i], &in[i]);
    else in[i] = "";
  }
  int nin = nops;
  while (nin > 3 && !*in[nin - 1]) nin--; /* trailing absent optional inputs */
  tp_pbw atb = {0};
  attr_int(&atb, "hidden_size", H);
  attr_str(&atb, "direction", at->dim1 == 0 ? "forward" : at->dim1 == 1 ? "reverse" : "bidirectional");
  if (at->clip > 0) attr_float(&atb, "clip", (float)at->clip);
  if (n->op != TP_OP_RNN && at->keepdim) attr_int(&atb, lstm ? "input_forget" : "linear_before_reset", 1);
  if (at->nints > 0) { /* activations, and the alphas and betas they read, in order */
    if (at->nints != nact * (int)D) {
      pbw_free(&atb);
      return tp_fail(TP_ERR_INVALID_ARG, "onnx: node '%s' (%s): %d activations, expected %d", n->name,
                     tp_op_name(n->op), at->nints, nact * (int)D);
    }
    tp_pbw ma = {0}, mb = {0}, mc = {0};
    int na = 0, nb = 0;
    put_str(&ma, 1, "activations");
    put_str(&mb, 1, "activation_alpha");
    put_str(&mc, 1, "activation_beta");
    for (int i = 0; i < at->nints; i++) {
      const char *nm = tp_rnn_act_name((int)at->ints[i]);
      double da, db;
      int np = tp_rnn_act_nparams((int)at->ints[i], &da, &db);
      if (!nm) {
        pbw_free(&ma), pbw_free(&mb), pbw_free(&mc), pbw_free(&atb);
        return tp_fail(TP_ERR_INVALID_ARG, "onnx: node '%s': activation code %lld is unknown", n->name, (long long)at->ints[i]);
      }
      put_str(&ma, 9, nm);
      float fa = (float)(2 * i < at->nfloats ? at->floats[2 * i] : da);
      float fb = (float)(2 * i + 1 < at->nfloats ? at->floats[2 * i + 1] : db);
      if (np >= 1) tp_pbw_raw_varint(&mb, (uint64_t)7 << 3 | TP_PB_I32), tp_pbw_put(&mb, &fa, 4), na++;
      if (np >= 2) tp_pbw_raw_varint(&mc, (uint64_t)7 << 3 | TP_PB_I32), tp_pbw_put(&mc, &fb, 4), nb++;
    }
    tp_pbw_varint(&ma, 20, 8); /* STRINGS */
    tp_pbw_varint(&mb, 20, 6); /* FLOATS */
    tp_pbw_varint(&mc, 20, 6);
    put_msg(&atb, 5, &ma);
    if (na) put_msg(&atb, 5, &mb);
    else pbw_free(&mb);
    if (nb) put_msg(&atb, 5, &mc);
    else pbw_free(&mc);
  }
  /* the node itself (NodeProto with three outputs) */
  fresh(w, y), fresh(w, yh), fresh(w, yc);
  {
    tp_pbw m = {0};
    char nm[64];
    for (int i = 0; i < nin; i++) put_str(&m, 1, in[i]);
    put_str(&m, 2, y);
    put_str(&m, 2, yh);
    if (lstm) put_str(&m, 2, yc);
    snprintf(nm, sizeof nm, "%s_%d", op, w->aux++);
    put_str(&m, 3, nm);
    put_str(&m, 4, op);
    if (atb.oom) m.oom = 1;
    else tp_pbw_put(&m, atb.p, atb.n);
    pbw_free(&atb);
    put_msg(&w->nodes, 1, &m);
  }
  /* plane 0 = concat(Y, unsqueeze(Y_h)), plane 1 = zeros [S or S + 1, D, B, H] (+ unsqueeze(Y_c)) */
  static const int64_t zero[1] = {0};
  int64_t zs[4] = {lstm ? S : S + 1, D, B, H};
  init_i64(w, t[0], 1, zero); /* the axes of every Unsqueeze */
  for (int i = 1; i < 9; i++)
    if (i != 3) fresh(w, t[i]);
  node2(w, "Unsqueeze", yh, t[0], t[1]);
  const char *c0[2] = {y, t[1]};
  tp_pbw a0 = {0};
  attr_int(&a0, "axis", 0);
  node(w, "Concat", 2, c0, t[2], &a0);
  init_i64(w, t[3], 4, zs);
  node1(w, "ConstantOfShape", t[3], t[4]); /* float32 zeros (its default value) */
  const char *p1 = t[4];
  if (lstm) {
    node2(w, "Unsqueeze", yc, t[0], t[5]);
    const char *c1[2] = {t[4], t[5]};
    tp_pbw a1 = {0};
    attr_int(&a1, "axis", 0);
    node(w, "Concat", 2, c1, t[6], &a1);
    p1 = t[6];
  }
  node2(w, "Unsqueeze", t[2], t[0], t[7]);
  node2(w, "Unsqueeze", p1, t[0], t[8]);
  const char *c2[2] = {t[7], t[8]};
  tp_pbw a2 = {0};
  attr_int(&a2, "axis", 0);
  node(w, "Concat", 2, c2, vn(w, idx), &a2);
  return TP_OK;
}

static tp_status convert(wr *w, int idx) {
  const tp_node *n = &w->g->nodes[idx];
  if (n->kind == TP_NODE_CALL && (n->op == TP_OP_RNN || n->op == TP_OP_GRU || n->op == TP_OP_LSTM))
    return recurrent_node(w, idx);
  if (n->kind == TP_NODE_CALL && n->op == TP_OP_COND) return cond_node(w, idx);
  if (n->kind == TP_NODE_CALL && n->op == TP_OP_GETITEM &&
      (w->g->nodes[n->args[0].node].op == TP_OP_COND || w->g->nodes[n->args[0].node].op == TP_OP_WHILE_LOOP))
    return getitem_node(w, idx);
  if (n->kind == TP_NODE_CALL && n->op == TP_OP_WHILE_LOOP) return while_node(w, idx);
  if (n->kind != TP_NODE_CALL || !tp_dtype_is_storage(n->desc.dtype) || (tp_op_flags(n->op) & (TP_OPF_LOWP | TP_OPF_VIEW)))
    return convert_as(w, n, vn(w, idx));
  tp_node c = *n;
  c.desc.dtype = tp_dtype_compute(n->desc.dtype);
  vname t;
  fresh(w, t);
  TP_TRY(convert_as(w, &c, t));
  cast_to(w, t, n->desc.dtype, vn(w, idx));
  return TP_OK;
}

/* The nodes, initializers, inputs (top graph only: a subgraph's
 * placeholders are outer values) and outputs of w->g into w's sections. */
static tp_status emit_graph_ex(wr *w, int outputs);
static tp_status emit_graph(wr *w) { return emit_graph_ex(w, 1); }
/* outputs = 0: the nodes and initializers only (a graph inlined into
 * another: its outputs are read by name) */
static tp_status emit_graph_ex(wr *w, int outputs) {
  const tp_graph *g = w->g;
  int oi = tp_graph_output(g);
  if (oi < 0) return tp_fail(TP_ERR_INVALID_ARG, "onnx: save: the graph has no output node");
  tp_status s = TP_OK;
  char *used = tp_alloc((size_t)g->n + 1), *shown = NULL;
  if (!used) return tp_fail(TP_ERR_OUT_OF_MEMORY, "onnx: save: out of memory");
  memset(used, 0, (size_t)g->n + 1);
  for (int i = 0; i < g->n; i++)
    for (int k = 0; k < g->nodes[i].nargs; k++) {
      const tp_node *n = &g->nodes[i];
      if (n->args[k].kind != TP_ARG_NODE) continue;
      /* a constant weight of a linear that is not 2-D is stored transposed
       * (see convert), not as itself */
      if (n->kind == TP_NODE_CALL && n->op == TP_OP_LINEAR && k == 1 &&
          linear_weight_const(g, n))
        continue;
      used[n->args[k].node] = 1;
    }
  for (int i = 0; i < g->n && !s; i++) {
    const tp_node *n = &g->nodes[i];
    switch (n->kind) {
      case TP_NODE_PLACEHOLDER:
        if (!w->names) add_vi(w, &w->inputs, 11, n->name, &n->desc);
        break;
      case TP_NODE_GET_ATTR: {
        if (!used[i] || n->desc.ndim == TP_DESC_GRAPH) break; /* subgraphs: see invoke and cond */
        if (!n->val) {
          s = tp_fail(TP_ERR_INVALID_ARG, "onnx: save: constant '%s' has no value", n->name);
          break;
        }
        tp_tensor *c = NULL;
        if ((s = tp_contiguous(n->val, &c))) break;
        init_raw(w, vn(w, i), c->dtype, c->ndim, c->shape, tp_tensor_ptr(c),
                 (size_t)tp_tensor_numel(c) * tp_dtype_size(c->dtype));
        tp_tensor_release(c);
        break;
      }
      case TP_NODE_CALL:
        s = convert(w, i);
        if (s && s != TP_ERR_OUT_OF_MEMORY && s != TP_ERR_UNSUPPORTED)
          tp_fail_context(s, "onnx: save: node '%s' (%s)", n->name, tp_op_name(n->op));
        break;
      default:
        break;
    }
  }
  /* outputs: a call node's value directly the first time, else an Identity */
  const tp_node *on = &g->nodes[oi];
  if (!outputs) {
    tp_free(used);
    return s;
  }
  if (!s && !(shown = tp_alloc((size_t)g->n + 1))) s = TP_ERR_OUT_OF_MEMORY;
  if (shown) memset(shown, 0, (size_t)g->n + 1);
  for (int k = 0; !s && k < on->nargs; k++) {
    const tp_arg *a = &on->args[k];
    vname b0, nm;
    const char *src;
    tp_desc d = arg_desc(g, a);
    if (a->kind == TP_ARG_NONE) {
      s = tp_fail(TP_ERR_UNSUPPORTED, "onnx: save: output %d is None", k);
      break;
    }
    if (a->kind == TP_ARG_NODE && g->nodes[a->node].kind == TP_NODE_CALL && !shown[a->node]) {
      shown[a->node] = 1;
      const tp_node *x = &g->nodes[a->node], *src0 = x->op == TP_OP_GETITEM && x->nargs == 1 ? &g->nodes[x->args[0].node] : NULL;
      int dyn0 = src0 && src0->op == TP_OP_WHILE_LOOP && x->attrs.result_index >= src0->attrs.nresults && d.ndim >= 1 &&
                 d.shape[0] == 0;
      add_vi_dyn(w, &w->outputs, 12, vn(w, a->node), &d, dyn0);
      continue;
    }
    if (a->kind == TP_ARG_SCALAR) d.weak = 0;
    operand(w, a, d.dtype, b0, &src);
    snprintf(nm, sizeof nm, "output_%d", k);
    /* output_K may be a node name (or used by another graph): an aux name then */
    if (w->names || tp_graph_find(g, nm) >= 0) fresh(w, nm);
    node1(w, "Identity", src, nm);
    add_vi(w, &w->outputs, 12, nm, &d);
  }
  tp_free(used);
  tp_free(shown);
  return s;
}

static void wr_free(wr *w) {
  pbw_free(&w->nodes);
  pbw_free(&w->inits);
  pbw_free(&w->inputs);
  pbw_free(&w->outputs);
}

/* w's sections as one GraphProto (name: field 2) into *graph. */
static void assemble(wr *w, const char *name, tp_pbw *graph) {
  tp_pbw *parts[4] = {&w->nodes, &w->inits, &w->inputs, &w->outputs};
  for (int i = 0; i < 4; i++) {
    if (parts[i]->oom) graph->oom = 1;
    else tp_pbw_put(graph, parts[i]->p, parts[i]->n);
  }
  put_str(graph, 2, name);
}

/* ---- control flow: cond -> If (branches as GraphProto attributes that
 * read the outer values the cond passes as operands) ---- */

/* Subgraph sub of w->g as a GraphProto attribute `attr` of the If: its
 * placeholders named after ops[0..], its own values prefixed (unique over
 * the model: ONNX names are one scope). */
/* The ONNX names of sub's values: placeholder k is ops[k], every other
 * value its name after a prefix unique in the model. *out: free_names. */
static void free_names(const tp_graph *sub, char **names) {
  for (int i = 0; names && i < sub->n; i++) tp_free(names[i]);
  tp_free(names);
}
static tp_status make_names(wr *w, const tp_graph *sub, const char *const *ops, const char *tag, char ***out) {
  char **names = tp_alloc(sizeof(char *) * (size_t)(sub->n ? sub->n : 1));
  if (!names) return TP_ERR_OUT_OF_MEMORY;
  memset(names, 0, sizeof(char *) * (size_t)(sub->n ? sub->n : 1));
  char prefix[40];
  snprintf(prefix, sizeof prefix, "tp:%s%d/", tag, w->aux++);
  tp_status s = TP_OK;
  for (int i = 0, ph = 0; i < sub->n && !s; i++) {
    const tp_node *n = &sub->nodes[i];
    const char *base = n->kind == TP_NODE_PLACEHOLDER ? ops[ph++] : n->name ? n->name : "";
    size_t len = strlen(base) + (n->kind == TP_NODE_PLACEHOLDER ? 0 : strlen(prefix)) + 1;
    if (!(names[i] = tp_alloc(len))) s = TP_ERR_OUT_OF_MEMORY;
    else snprintf(names[i], len, "%s%s", n->kind == TP_NODE_PLACEHOLDER ? "" : prefix, base);
  }
  if (s) {
    free_names(sub, names);
    return s;
  }
  *out = names;
  return TP_OK;
}

static tp_status branch_attr(wr *w, const tp_graph *sub, const char *const *ops, const char *attr, tp_pbw *attrs) {
  char **names = NULL;
  TP_TRY(make_names(w, sub, ops, attr, &names));
  tp_status s = TP_OK;
  wr c;
  memset(&c, 0, sizeof c);
  c.g = sub;
  c.names = (const char *const *)names;
  c.root = w->root ? w->root : w->g;
  c.aux = w->aux;
  if (!s) s = emit_graph(&c);
  w->aux = c.aux;
  if (!s) {
    tp_pbw gp = {0}, a = {0};
    assemble(&c, attr, &gp);
    put_str(&a, 1, attr);
    put_msg(&a, 6, &gp);
    tp_pbw_varint(&a, 20, 5); /* GRAPH */
    put_msg(attrs, 5, &a);
  }
  wr_free(&c);
  free_names(sub, names);
  return s;
}

/* The first getitem of cond node ci selecting result k (-1: none). */
static int first_getitem(const tp_graph *g, int ci, int k) {
  for (int i = ci + 1; i < g->n; i++) {
    const tp_node *x = &g->nodes[i];
    if (x->kind == TP_NODE_CALL && x->op == TP_OP_GETITEM && x->args[0].node == ci && x->attrs.result_index == k)
      return i;
  }
  return -1;
}

/* An If / Loop node m (its inputs written) finished and added: outputs
 * named after the first getitem of each of its n results, its name, its
 * op and its graph attributes (freed here). */
static void finish_control(wr *w, const tp_graph *g, int idx, int n, const char *op, tp_pbw *m, tp_pbw *attrs) {
  char nm[64];
  for (int k = 0; k < n; k++) {
    int gi = first_getitem(g, idx, k);
    vname t;
    if (gi < 0) fresh(w, t);
    put_str(m, 2, gi >= 0 ? vn(w, gi) : t);
  }
  snprintf(nm, sizeof nm, "%s_%d", op, w->aux++);
  put_str(m, 3, nm);
  put_str(m, 4, op);
  if (attrs->oom) m->oom = 1;
  else tp_pbw_put(m, attrs->p, attrs->n);
  pbw_free(attrs);
  put_msg(&w->nodes, 1, m);
}

static tp_status cond_node(wr *w, int idx) {
  const tp_graph *g = w->g;
  const tp_node *n = &g->nodes[idx];
  const tp_graph *th = tp_node_subgraph(g, n, 1), *el = tp_node_subgraph(g, n, 2);
  if (!th || !el) return tp_fail(TP_ERR_INVALID_ARG, "onnx: save: cond '%s' names no subgraphs", n->name);
  int nops = n->nargs - 3, nres = (int)n->attrs.nresults;
  const char *ops[TP_MAX_OPERANDS];
  for (int k = 0; k < nops; k++) ops[k] = vn(w, n->args[3 + k].node);
  /* the condition: a bool (an integer predicate compared with 0) */
  vname cb, zero;
  const char *pred = vn(w, n->args[0].node);
  if (g->nodes[n->args[0].node].desc.dtype != TP_BOOL) {
    init_scalar(w, zero, g->nodes[n->args[0].node].desc.dtype, 0);
    vname eq;
    fresh(w, eq);
    node2(w, "Equal", pred, zero, eq);
    fresh(w, cb);
    node1(w, "Not", eq, cb);
    pred = cb;
  }
  tp_pbw attrs = {0};
  TP_TRY(branch_attr(w, th, ops, "then_branch", &attrs));
  tp_status s = branch_attr(w, el, ops, "else_branch", &attrs);
  if (s) {
    pbw_free(&attrs);
    return s;
  }
  /* If's outputs: named after the first getitem of each result */
  tp_pbw m = {0};
  put_str(&m, 1, pred);
  finish_control(w, g, idx, nres, "If", &m, &attrs);
  return TP_OK;
}

/* A getitem of a cond: the If's output itself (the first one of its
 * result), else an Identity of it. */
static tp_status getitem_node(wr *w, int idx) {
  const tp_node *n = &w->g->nodes[idx];
  int first = first_getitem(w->g, n->args[0].node, (int)n->attrs.result_index);
  if (first != idx) node1(w, "Identity", vn(w, first), vn(w, idx));
  return TP_OK;
}

/* ---- while_loop -> Loop: no trip count; the initial cond is the cond
 * graph inlined on the initial values; the body is our body followed by
 * our cond graph inlined on its results (ONNX computes the next condition
 * in the body); captured values are read from the outer scope. ---- */

/* sub inlined into w (its nodes and initializers appended), placeholders
 * named ins[]; out[k]: a copy of output k's ONNX name. */
static tp_status inline_graph(wr *w, const tp_graph *sub, const char *const *ins, const char *tag, vname *out) {
  char **names = NULL;
  TP_TRY(make_names(w, sub, ins, tag, &names));
  wr c;
  memset(&c, 0, sizeof c);
  c.g = sub;
  c.names = (const char *const *)names;
  c.root = w->root ? w->root : w->g;
  c.aux = w->aux;
  tp_status s = emit_graph_ex(&c, 0);
  w->aux = c.aux;
  if (!s) {
    if (c.nodes.oom || c.inits.oom) w->nodes.oom = 1;
    tp_pbw_put(&w->nodes, c.nodes.p, c.nodes.n);
    tp_pbw_put(&w->inits, c.inits.p, c.inits.n);
    const tp_node *on = &sub->nodes[tp_graph_output(sub)];
    for (int k = 0; k < on->nargs; k++) {
      if (on->args[k].kind != TP_ARG_NODE || strlen(names[on->args[k].node]) >= sizeof(vname)) {
        s = tp_fail(TP_ERR_UNSUPPORTED, "onnx: save: output %d of a loop subgraph cannot be named", k);
        break;
      }
      snprintf(out[k], sizeof(vname), "%s", names[on->args[k].node]);
    }
  }
  wr_free(&c);
  free_names(sub, names);
  return s;
}

/* name (one bool/int value of type d) as a new bool scalar value *out of w */
static void as_bool(wr *w, const char *name, const tp_desc *d, vname out) {
  const char *cur = name;
  vname a, b, z;
  if (d->dtype != TP_BOOL) {
    init_scalar(w, z, d->dtype, 0);
    fresh(w, a);
    node2(w, "Equal", cur, z, a);
    fresh(w, b);
    node1(w, "Not", a, b);
    cur = b;
  }
  if (d->ndim) {
    vname shp;
    int64_t none = 0;
    init_i64(w, shp, 0, &none); /* the shape [] */
    fresh(w, out);
    node2(w, "Reshape", cur, shp, out);
    return;
  }
  fresh(w, out);
  node1(w, "Identity", cur, out);
}

static tp_status while_node(wr *w, int idx) {
  const tp_graph *g = w->g;
  const tp_node *n = &g->nodes[idx];
  const tp_graph *cg = tp_node_subgraph(g, n, 0), *bg = tp_node_subgraph(g, n, 1);
  if (!cg || !bg) return tp_fail(TP_ERR_INVALID_ARG, "onnx: save: while_loop '%s' names no subgraphs", n->name);
  int nin = n->nargs - 2, N = (int)n->attrs.nresults, S = tp_node_nresults(g, n); /* S: with the scan outputs */
  const char *ops[TP_MAX_OPERANDS];
  for (int k = 0; k < nin; k++) ops[k] = vn(w, n->args[2 + k].node);
  const tp_desc *cd = &cg->nodes[cg->nodes[tp_graph_output(cg)].args[0].node].desc;
  /* the initial condition, in the outer graph */
  vname c0[1], cond0;
  TP_TRY(inline_graph(w, cg, ops, "loop_cond", c0));
  as_bool(w, c0[0], cd, cond0);
  /* the body graph: (iteration, cond, carried...) -> (next cond, carried...) */
  wr b;
  memset(&b, 0, sizeof b);
  b.g = bg;
  b.root = w->root ? w->root : w->g;
  b.aux = w->aux;
  vname iter, cin, vin[TP_MAX_OPERANDS], bout[TP_MAX_OPERANDS], cout[1], cnext, outn[TP_MAX_OPERANDS];
  fresh(&b, iter);
  fresh(&b, cin);
  const char *bins[TP_MAX_OPERANDS] = {0};
  for (int k = 0; k < nin; k++) {
    if (k < N) fresh(&b, vin[k]);
    bins[k] = k < N ? vin[k] : ops[k];
  }
  tp_status s = inline_graph(&b, bg, bins, "loop_body", bout);
  const char *cins[TP_MAX_OPERANDS] = {0};
  for (int k = 0; k < nin; k++) cins[k] = k < N ? bout[k] : ops[k];
  if (!s) s = inline_graph(&b, cg, cins, "loop_next", cout);
  if (!s) {
    as_bool(&b, cout[0], cd, cnext);
    tp_desc i64d, bd;
    memset(&i64d, 0, sizeof i64d);
    i64d.dtype = TP_I64;
    memset(&bd, 0, sizeof bd);
    bd.dtype = TP_BOOL;
    add_vi(&b, &b.inputs, 11, iter, &i64d);
    add_vi(&b, &b.inputs, 11, cin, &bd);
    add_vi(&b, &b.outputs, 12, cnext, &bd);
    for (int k = 0; k < N; k++) {
      const tp_desc *d = &g->nodes[n->args[2 + k].node].desc;
      add_vi(&b, &b.inputs, 11, vin[k], d);
      fresh(&b, outn[k]); /* each carried result a value of the body's own */
      node1(&b, "Identity", bout[k], outn[k]);
      add_vi(&b, &b.outputs, 12, outn[k], d);
    }
    for (int k = N; k < S; k++) { /* scan outputs: ONNX Loop's, after the carried values */
      const tp_desc *d = &bg->nodes[bg->nodes[tp_graph_output(bg)].args[k].node].desc;
      fresh(&b, outn[k]);
      node1(&b, "Identity", bout[k], outn[k]);
      add_vi(&b, &b.outputs, 12, outn[k], d);
    }
  }
  w->aux = b.aux;
  tp_pbw attrs = {0};
  if (!s) {
    tp_pbw gp = {0}, a = {0};
    assemble(&b, "body", &gp);
    put_str(&a, 1, "body");
    put_msg(&a, 6, &gp);
    tp_pbw_varint(&a, 20, 5); /* GRAPH */
    put_msg(&attrs, 5, &a);
  }
  wr_free(&b);
  if (s) {
    pbw_free(&attrs);
    return s;
  }
  tp_pbw m = {0};
  put_str(&m, 1, ""); /* no trip count */
  put_str(&m, 1, cond0);
  for (int k = 0; k < N; k++) put_str(&m, 1, ops[k]);
  finish_control(w, g, idx, S, "Loop", &m, &attrs);
  return TP_OK;
}

tp_status tp_onnx_save(const tp_graph *g, uint8_t **bytes, size_t *len) {
  if (!g || !bytes || !len) return tp_fail(TP_ERR_INVALID_ARG, "onnx: save: NULL argument");
  *bytes = NULL;
  *len = 0;
  wr w;
  memset(&w, 0, sizeof w);
  w.g = g;
  tp_status s = emit_graph(&w);
  tp_pbw graph = {0}, model = {0}, opset = {0};
  if (!s) {
    assemble(&w, "tensorplay", &graph);
    tp_pbw_varint(&model, 1, TP_ONNX_IR_VERSION);
    put_str(&model, 2, "tensorplay");
    put_str(&model, 3, TP_VERSION_STRING);
    put_msg(&model, 7, &graph);
    put_str(&opset, 1, "");
    tp_pbw_varint(&opset, 2, TP_ONNX_SAVE_OPSET);
    put_msg(&model, 8, &opset);
    if (model.oom) s = TP_ERR_OUT_OF_MEMORY;
  }
  pbw_free(&graph);
  pbw_free(&opset);
  wr_free(&w);
  if (s) {
    pbw_free(&model);
    if (s == TP_ERR_OUT_OF_MEMORY) tp_fail(s, "onnx: save: out of memory");
    return s;
  }
  if (!model.p && !(model.p = tp_alloc(1))) return tp_fail(TP_ERR_OUT_OF_MEMORY, "onnx: save: out of memory");
  *bytes = (uint8_t *)model.p;
  *len = model.n;
  return TP_OK;
}

tp_status tp_onnx_save_file(const tp_graph *g, const char *path) {
  uint8_t *b;
  size_t n;
  if (!path) return tp_fail(TP_ERR_INVALID_ARG, "onnx: save: NULL path");
  TP_TRY(tp_onnx_save(g, &b, &n));
  tp_status s = tp_onnx_write_file(path, b, n);
  tp_free(b);
  return s;
}
