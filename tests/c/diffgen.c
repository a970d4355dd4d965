/* diffgen.c - random valid graphs from the op table, and the backend
 * comparison (diffgen.h). */
#include "diffgen.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "graph/graph.h"
#include "core/num.h"
#include "graph/text.h"
#include "ops/ops.h"

#define MAXV 40      /* values: inputs, constants, op results */
#define MAXNUMEL 4096 /* per value */

/* ---- the byte source ---- */
typedef struct src {
  const uint8_t *p;
  size_t n, i;
} src;
static unsigned u8(src *s) { return s->i < s->n ? s->p[s->i++] : 0; }
static unsigned pick(src *s, unsigned k) { return k ? u8(s) % k : 0; }

void dg_seed_bytes(uint64_t seed, uint8_t *out, size_t n) {
  uint64_t x = seed * 0x9e3779b97f4a7c15ULL + 0x1234567;
  for (size_t i = 0; i < n; i++) { /* splitmix64 */
    uint64_t z = (x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    out[i] = (uint8_t)(z ^ (z >> 31));
  }
}

/* ---- values under construction ---- */
enum { V_INPUT, V_CONST, V_OP };
typedef struct val {
  int kind;
  tp_desc d;
  int exact;     /* every backend computes these values bit for bit */
  int nonfinite; /* may hold an infinity or a NaN made from finite inputs */
  tp_tensor *t;  /* V_INPUT / V_CONST: the value */
  tp_op op;      /* V_OP */
  int nargs;
  tp_arg args[TP_MAX_OPERANDS]; /* TP_ARG_NODE: index into vals */
  tp_attrs at;
} val;

typedef struct gen {
  src s;
  val v[MAXV];
  int nv, nleaf;
} gen;

static int64_t numel_of(const tp_desc *d) {
  int64_t k = 1;
  for (int i = 0; i < d->ndim; i++) k *= d->shape[i];
  return k;
}

/* Element i of a leaf of dtype dt from one byte b: floats k/32 in [-4, 4)
 * (exact in every float dtype), small integers, bools. */
static void put_value(tp_dtype dt, void *p, int64_t i, unsigned b) {
  switch (dt) {
    case TP_F32: ((float *)p)[i] = ((int)b - 128) / 32.0f; break;
    case TP_I32: ((int32_t *)p)[i] = (int32_t)(b % 7) - 2; break;
    case TP_I64: ((int64_t *)p)[i] = (int64_t)(b % 7) - 2; break;
    case TP_F16: ((uint16_t *)p)[i] = tp_f32_to_f16(((int)b - 128) / 32.0f); break;
    case TP_BF16: ((uint16_t *)p)[i] = tp_f64_to_bf16(((int)b - 128) / 32.0); break;
    case TP_I8: ((int8_t *)p)[i] = (int8_t)((int)(b % 9) - 4); break;
    case TP_U8: ((uint8_t *)p)[i] = (uint8_t)(b % 9); break;
    default: ((uint8_t *)p)[i] = b & 1; break;
  }
}

/* A leaf (input or constant) of shape d with random values. */
static int add_leaf(gen *g, const tp_desc *d0) {
  if (g->nv >= MAXV || g->nleaf >= DG_MAXIN) return -1;
  tp_desc d = *d0;
  d.weak = 0;
  int64_t k = numel_of(&d);
  if (k > MAXNUMEL) return -1;
  tp_tensor *t = NULL;
  if (tp_tensor_empty(d.dtype, d.ndim, d.shape, &t) != TP_OK) return -1;
  void *p = tp_tensor_ptr(t);
  for (int64_t i = 0; i < k; i++) {
    unsigned b = u8(&g->s);
    put_value(d.dtype, p, i, b);
  }
  val *x = &g->v[g->nv];
  memset(x, 0, sizeof *x);
  x->kind = pick(&g->s, 4) == 0 ? V_CONST : V_INPUT;
  x->d = d;
  x->exact = 1;
  x->t = t;
  g->nleaf++;
  return g->nv++;
}

static void rand_desc(gen *g, tp_desc *d) {
  static const int64_t sizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 17};
  memset(d, 0, sizeof *d);
  static const tp_dtype dts[] = {TP_F32, TP_F32, TP_F32, TP_F32, TP_F32, TP_F32, TP_F32, TP_I32,
                                 TP_I64, TP_BOOL, TP_F16, TP_BF16, TP_I8, TP_U8};
  d->dtype = dts[pick(&g->s, sizeof dts / sizeof dts[0])];
  static const int ranks[] = {0, 1, 2, 2, 3, 3, 4, 1};
  d->ndim = ranks[pick(&g->s, 8)];
  for (int i = 0; i < d->ndim; i++) d->shape[i] = sizes[pick(&g->s, 10)];
  for (int i = 0; i < d->ndim && numel_of(d) > 512; i++) /* terminates on any bytes */
    if (d->shape[i] > 2) d->shape[i] = 2;
}

/* A shape made to go with a (same, broadcast-reduced, a suffix, a matmul
 * partner, the last dim) with a random dtype bias toward a's. */
static void partner_desc(gen *g, const tp_desc *a, tp_desc *d) {
  *d = *a;
  d->weak = 0;
  unsigned r = pick(&g->s, 8);
  if (r == 1) /* some dims 1 */
    for (int i = 0; i < d->ndim; i++) d->shape[i] = pick(&g->s, 2) ? 1 : d->shape[i];
  else if (r == 2 && d->ndim > 0) { /* a suffix */
    int drop = (int)pick(&g->s, (unsigned)d->ndim + 1);
    memmove(d->shape, d->shape + drop, sizeof(int64_t) * (size_t)(d->ndim - drop));
    d->ndim -= drop;
  } else if (r == 3 && d->ndim >= 1) { /* matmul partner: [..., K, N] */
    static const int64_t ns[] = {1, 3, 4, 8, 9};
    int64_t kdim = d->shape[d->ndim - 1];
    if (d->ndim == 1) d->ndim = 2;
    d->shape[d->ndim - 2] = kdim;
    d->shape[d->ndim - 1] = ns[pick(&g->s, 5)];
  } else if (r == 4 && d->ndim >= 1) { /* linear weight [N, K] */
    static const int64_t ns[] = {1, 3, 4, 8, 9};
    int64_t kdim = d->shape[d->ndim - 1];
    d->ndim = 2;
    d->shape[0] = ns[pick(&g->s, 5)];
    d->shape[1] = kdim;
  } else if (r == 5 && d->ndim >= 1) { /* the last dim (layer_norm weight, bias) */
    d->shape[0] = d->shape[d->ndim - 1];
    d->ndim = 1;
  }
  unsigned t = pick(&g->s, 8);
  if (t == 0) d->dtype = TP_I64;
  else if (t == 1) d->dtype = TP_BOOL;
  else if (t == 2) d->dtype = TP_F32;
  if (numel_of(d) > MAXNUMEL) *d = *a;
}

static int is_float(tp_dtype d) { return d == TP_F32 || d == TP_F16 || d == TP_BF16; }

/* Ops whose float results may differ in the last bits between backends
 * (vector math, summation order, fused epilogues). */
static int inexact_op(tp_op op) {
  switch (op) {
    case TP_OP_ADD: case TP_OP_SUB: case TP_OP_MUL: case TP_OP_NEG: case TP_OP_ABS:
    case TP_OP_RELU: case TP_OP_WHERE: case TP_OP_RESHAPE: case TP_OP_TRANSPOSE:
    case TP_OP_PERMUTE: case TP_OP_SLICE: case TP_OP_CONCAT: case TP_OP_GATHER:
    case TP_OP_GATHER_ELEMENTS: case TP_OP_GATHER_ND: case TP_OP_MAX: case TP_OP_MIN:
    case TP_OP_CAST: case TP_OP_EQ: case TP_OP_LT: case TP_OP_GT: case TP_OP_FLOOR:
    case TP_OP_CEIL: case TP_OP_ROUND: case TP_OP_ARGTOPK: case TP_OP_MAX_POOL2D:
    case TP_OP_BITWISE_AND: case TP_OP_BITWISE_OR: case TP_OP_BITWISE_XOR:
    case TP_OP_BITWISE_NOT:
      return 0;
    default:
      return 1;
  }
}
/* Ops that can make an infinity or a NaN from finite operands. */
static int makes_nonfinite(tp_op op) {
  switch (op) {
    case TP_OP_DIV: case TP_OP_LOG: case TP_OP_EXP: case TP_OP_SQRT: case TP_OP_RSQRT:
    case TP_OP_TAN: case TP_OP_ATANH: case TP_OP_ACOSH: case TP_OP_ASIN: case TP_OP_ACOS:
    case TP_OP_SINH: case TP_OP_COSH: case TP_OP_MOD: case TP_OP_FMOD: case TP_OP_DET:
    case TP_OP_LOG_SOFTMAX: case TP_OP_MUL: case TP_OP_MATMUL: case TP_OP_LINEAR: /* overflow */
      return 1;
    default:
      return 0;
  }
}

/* Ops whose result jumps with a small change of a float operand. */
static int jumpy_op(tp_op op, const tp_attrs *at) {
  switch (op) {
    case TP_OP_EQ: case TP_OP_LT: case TP_OP_GT: case TP_OP_FLOOR: case TP_OP_CEIL:
    case TP_OP_ROUND: case TP_OP_MOD: case TP_OP_FMOD: case TP_OP_ARGTOPK:
    case TP_OP_MAX_POOL2D: case TP_OP_MAX: case TP_OP_MIN: /* ties pick an index / value */
      return 1;
    case TP_OP_CAST: /* to an integer, or a rounding to a narrower float */
      return at->dtype != TP_F32;
    case TP_OP_BITCAST:  /* exposes the last bits (and NaN payloads) */
    case TP_OP_QUANTIZE: /* rounds to integers */
      return 1;
    /* ill-conditioned near a singularity or a domain edge: a last-bit
     * difference upstream moves the result far (atanh(tanh(8)), acosh of a
     * softmax that is 1 in one backend and 1 - 2^-24 in another) */
    case TP_OP_TAN: case TP_OP_ATANH: case TP_OP_ACOSH: case TP_OP_ASIN: case TP_OP_ACOS:
    case TP_OP_LOG: case TP_OP_RSQRT: case TP_OP_SQRT: case TP_OP_DIV: case TP_OP_DET:
    case TP_OP_SIN: case TP_OP_COS: /* of large arguments */
      return 1;
    default:
      return 0;
  }
}

static int64_t rand_dim(gen *g, int ndim) {
  if (ndim <= 0) return (int64_t)pick(&g->s, 2) - 1;
  return (int64_t)pick(&g->s, (unsigned)(2 * ndim)) - ndim; /* [-ndim, ndim) */
}

/* Attributes per the op's attribute table, with values that often fit a. */
static void rand_attrs(gen *g, tp_op op, const tp_desc *a, tp_attrs *at) {
  tp_attrs_init(at);
  const tp_op_text *t = &tp_text_ops[op];
  for (int i = 0; i < t->nattrs; i++) {
    const tp_attr_spec *sp = &t->attrs[i];
    char *f = (char *)at + sp->offset;
    switch (sp->kind) {
      case TP_ATTR_INTS: {
        if (op == TP_OP_RESHAPE) { /* [-1], [numel], [a, -1] */
          int64_t k = numel_of(a);
          unsigned r = pick(&g->s, 3);
          at->nints = r == 2 ? 2 : 1;
          at->ints[0] = r == 0 ? -1 : r == 1 ? k : (k % 2 == 0 ? 2 : 1);
          if (r == 2) at->ints[1] = -1;
        } else if (op == TP_OP_PERMUTE) { /* a random permutation */
          at->nints = a->ndim;
          for (int k = 0; k < a->ndim; k++) at->ints[k] = k;
          for (int k = a->ndim - 1; k > 0; k--) {
            int j = (int)pick(&g->s, (unsigned)k + 1);
            int64_t tmp = at->ints[k];
            at->ints[k] = at->ints[j], at->ints[j] = tmp;
          }
        } else {
          int n = (int)pick(&g->s, (unsigned)(a->ndim > 0 ? a->ndim : 1) + 1);
          at->nints = n;
          for (int k = 0; k < n; k++)
            at->ints[k] = pick(&g->s, 3) ? rand_dim(g, a->ndim) : (int64_t)pick(&g->s, 4) + 1;
        }
        break;
      }
      case TP_ATTR_INT:
      case TP_ATTR_INT_MAX: {
        int64_t v;
        if (sp->offset == offsetof(tp_attrs, step)) v = 1 + (int64_t)pick(&g->s, 2);
        else if (sp->offset == offsetof(tp_attrs, start)) v = (int64_t)pick(&g->s, 5) - 2;
        else if (sp->offset == offsetof(tp_attrs, end))
          v = pick(&g->s, 3) == 0 && sp->kind == TP_ATTR_INT_MAX ? INT64_MAX : (int64_t)pick(&g->s, 9) - 3;
        else if (sp->offset == offsetof(tp_attrs, k)) v = 1 + (int64_t)pick(&g->s, 3);
        else v = rand_dim(g, a->ndim);
        memcpy(f, &v, sizeof v);
        break;
      }
      case TP_ATTR_BOOL: {
        int v = (int)pick(&g->s, 2);
        memcpy(f, &v, sizeof v);
        break;
      }
      case TP_ATTR_FLOAT: {
        static const double fs[] = {1e-5, 0.5, 1, 2, 0};
        double v = fs[pick(&g->s, 5)];
        memcpy(f, &v, sizeof v);
        break;
      }
      case TP_ATTR_DTYPE: {
        static const tp_dtype ds[] = {TP_F32, TP_I32, TP_I64, TP_BOOL, TP_F16, TP_BF16, TP_I8, TP_U8};
        at->dtype = ds[pick(&g->s, 8)];
        break;
      }
      case TP_ATTR_GELU: at->approximate = (int)pick(&g->s, 2); break;
      default: break;
    }
  }
}

/* One op node on top of the values so far; 1 if one was added. */
static int add_op(gen *g) {
  if (g->nv >= MAXV - 3) return 0;
  tp_op op = (tp_op)pick(&g->s, TP_OP_COUNT);
  if (tp_op_flags(op) & TP_OPF_OPAQUE) return 0;
  int arity = tp_op_arity(op);
  int nargs = arity < 0 ? 2 + (int)pick(&g->s, 2) : arity;
  if (nargs > TP_MAX_OPERANDS) return 0;
  int first = pick(&g->s, 4) ? g->nv - 1 : (int)pick(&g->s, (unsigned)g->nv);
  val x;
  memset(&x, 0, sizeof x);
  x.kind = V_OP;
  x.op = op;
  x.nargs = nargs;
  tp_desc descs[TP_MAX_OPERANDS], sc;
  const tp_desc *dp[TP_MAX_OPERANDS];
  int nmade = 0; /* leaves made for this node (the newest values) */
  int exact_in = 1, cond_exact = 1, nonfinite_in = 0;
  for (int k = 0; k < nargs; k++) {
    tp_arg *a = &x.args[k];
    memset(a, 0, sizeof *a);
    unsigned r = pick(&g->s, 8);
    if (k > 0 && (tp_op_flags(op) & TP_OPF_OPT) && r == 0) {
      a->kind = TP_ARG_NONE;
      dp[k] = NULL;
      continue;
    }
    if (k > 0 && (tp_op_flags(op) & TP_OPF_BINARY) && r == 1) {
      static const double ss[] = {0.5, 2, -1, 3};
      int which = (int)pick(&g->s, 4);
      a->kind = TP_ARG_SCALAR;
      a->scalar = ss[which];
      a->is_int = which >= 2;
      memset(&sc, 0, sizeof sc);
      sc.dtype = a->is_int ? TP_I64 : TP_F32;
      sc.weak = a->is_int ? 1 : 2; /* a weak int / float scalar */
      descs[k] = sc;
      dp[k] = &descs[k];
      continue;
    }
    int vi;
    if (k == 0) vi = first;
    else if (r <= 3) vi = (int)pick(&g->s, (unsigned)g->nv);
    else {
      tp_desc pd;
      partner_desc(g, &g->v[first].d, &pd);
      if (r == 7) rand_desc(g, &pd);
      vi = add_leaf(g, &pd);
      if (vi < 0) goto undo;
      nmade++;
    }
    a->kind = TP_ARG_NODE;
    a->node = vi;
    descs[k] = g->v[vi].d;
    dp[k] = &descs[k];
    if (is_float(g->v[vi].d.dtype) && !g->v[vi].exact) exact_in = 0, cond_exact &= k != 0;
    nonfinite_in |= g->v[vi].nonfinite;
  }
  rand_attrs(g, op, &g->v[first].d, &x.at);
  if (!exact_in && jumpy_op(op, &x.at)) goto undo;
  if (op == TP_OP_WHERE && !cond_exact) goto undo; /* a float condition near 0 flips */
  /* an infinity times (or plus, ...) a value that is 0 in one backend and
   * a tiny number in another gives NaN or an infinity: only exact operands
   * meet values that may be non-finite (views move them unchanged) */
  if (nonfinite_in && !exact_in && !(tp_op_flags(op) & TP_OPF_VIEW) && op != TP_OP_CONCAT) goto undo;
  tp_desc od;
  if (tp_op_infer(op, nargs, dp, &x.at, &od) != TP_OK) {
    tp_clear_error();
    goto undo;
  }
  if (od.ndim < 0 || numel_of(&od) > MAXNUMEL) goto undo;
  x.d = od;
  x.d.weak = 0;
  x.exact = exact_in && !inexact_op(op);
  x.nonfinite = nonfinite_in || (is_float(od.dtype) && makes_nonfinite(op));
  g->v[g->nv++] = x;
  return 1;
undo: /* drop the leaves made for this attempt (they are the newest) */
  while (nmade > 0) {
    nmade--;
    g->nv--;
    g->nleaf--;
    tp_tensor_release(g->v[g->nv].t);
  }
  return 0;
}

tp_status dg_build(const uint8_t *data, size_t n, dg_case *c) {
  memset(c, 0, sizeof *c);
  gen *g = calloc(1, sizeof *g);
  if (!g) return TP_ERR_OUT_OF_MEMORY;
  g->s.p = data;
  g->s.n = n;
  int nin = 1 + (int)pick(&g->s, 3);
  for (int i = 0; i < nin; i++) {
    tp_desc d;
    rand_desc(g, &d);
    if (add_leaf(g, &d) < 0) break;
  }
  g->v[0].kind = V_INPUT; /* at least one input */
  int want = 1 + (int)pick(&g->s, 8), nops = 0;
  for (int tries = 0; nops < want && tries < 40 * want; tries++) nops += add_op(g);
  tp_status s = TP_OK;
  if (!nops) {
    s = tp_fail(TP_ERR_INVALID_ARG, "diffgen: no op node fits these bytes");
    goto done;
  }
  /* the graph: placeholders, constants, calls, one output (the last op and
   * sometimes another value) */
  int map[MAXV];
  s = tp_graph_new(&c->g);
  for (int pass = 0; pass < 3 && !s; pass++)
    for (int i = 0; i < g->nv && !s; i++) {
      val *x = &g->v[i];
      int want_kind = pass == 0 ? V_INPUT : pass == 1 ? V_CONST : V_OP;
      if (x->kind != want_kind) continue;
      char name[16];
      snprintf(name, sizeof name, "%s%d", x->kind == V_INPUT ? "x" : x->kind == V_CONST ? "c" : "v", i);
      if (x->kind == V_OP) {
        tp_arg args[TP_MAX_OPERANDS];
        for (int k = 0; k < x->nargs; k++) {
          args[k] = x->args[k];
          if (args[k].kind == TP_ARG_NODE) args[k].node = map[args[k].node];
        }
        s = tp_graph_add_node(c->g, TP_NODE_CALL, name, x->op, x->nargs, args, &x->at, &x->d, &map[i]);
      } else {
        s = tp_graph_add_node(c->g, x->kind == V_INPUT ? TP_NODE_PLACEHOLDER : TP_NODE_GET_ATTR, name,
                              TP_OP_COUNT, 0, NULL, NULL, &x->d, &map[i]);
        if (!s && x->kind == V_CONST) tp_graph_set_val(c->g, map[i], x->t);
        if (!s && x->kind == V_INPUT) {
          tp_tensor_retain(x->t);
          c->in[c->nin++] = x->t;
        }
      }
    }
  if (!s) {
    int last = g->nv - 1;
    while (g->v[last].kind != V_OP) last--;
    tp_arg outs[2];
    memset(outs, 0, sizeof outs);
    int nout = 1;
    outs[0].kind = TP_ARG_NODE;
    outs[0].node = map[last];
    int other = (int)pick(&g->s, (unsigned)g->nv);
    if (pick(&g->s, 3) == 0 && other != last && g->v[other].kind == V_OP) {
      outs[1] = outs[0];
      outs[1].node = map[other];
      nout = 2;
    }
    s = tp_graph_add_node(c->g, TP_NODE_OUTPUT, "output", TP_OP_COUNT, nout, outs, NULL, NULL, NULL);
  }
  c->nops = nops;
done:
  for (int i = 0; i < g->nv; i++) tp_tensor_release(g->v[i].t);
  free(g);
  if (s) dg_free(c);
  return s;
}

tp_status dg_from_text(const char *text, dg_case *c) {
  memset(c, 0, sizeof *c);
  TP_TRY(tp_graph_parse(text, strlen(text), &c->g));
  tp_status s = TP_OK;
  for (int i = 0; i < c->g->n && !s; i++) {
    const tp_node *nd = &c->g->nodes[i];
    if (nd->kind == TP_NODE_CALL) c->nops++;
    if (nd->kind != TP_NODE_PLACEHOLDER) continue;
    if (c->nin >= DG_MAXIN) {
      s = tp_fail(TP_ERR_INVALID_ARG, "diffgen: more than %d inputs", DG_MAXIN);
      break;
    }
    tp_tensor *t = NULL;
    s = tp_tensor_empty(nd->desc.dtype, nd->desc.ndim, nd->desc.shape, &t);
    if (s) break;
    int64_t k = tp_tensor_numel(t);
    void *p = tp_tensor_ptr(t);
    for (int64_t j = 0; j < k; j++) { /* the same value pattern as dg_build's */
      unsigned b = (unsigned)((j * 37 + i * 11 + 5) & 255);
      put_value(nd->desc.dtype, p, j, b);
    }
    c->in[c->nin++] = t;
  }
  if (s) dg_free(c);
  return s;
}

void dg_free(dg_case *c) {
  tp_graph_free(c->g);
  for (int i = 0; i < c->nin; i++) tp_tensor_release(c->in[i]);
  memset(c, 0, sizeof *c);
}

/* ---- running and comparing ---- */
typedef struct outs {
  int n;
  tp_tensor *t[8];
} outs;

static tp_status run_backend(const char *name, const dg_case *c, outs *o) {
  const tp_backend *b = NULL;
  tp_backend_run run;
  memset(&run, 0, sizeof run);
  memset(o, 0, sizeof *o);
  TP_TRY(tp_lookup_backend(name, &b));
  TP_TRY(b->fn(b->ud, c->g, c->nin, c->in, NULL, &run));
  tp_status s = run.run(run.ud, c->nin, c->in, 8, o->t, &o->n);
  if (run.free) run.free(run.ud);
  return s;
}

static void outs_free(outs *o) {
  for (int i = 0; i < o->n; i++) tp_tensor_release(o->t[i]);
  o->n = 0;
}

static int compare(const char *who, tp_tensor *got, tp_tensor *ref, int k, char *why, size_t n) {
  if (tp_tensor_dtype(got) != tp_tensor_dtype(ref) || tp_tensor_ndim(got) != tp_tensor_ndim(ref) ||
      memcmp(tp_tensor_shape(got), tp_tensor_shape(ref), sizeof(int64_t) * (size_t)tp_tensor_ndim(ref))) {
    snprintf(why, n, "%s: output %d: dtype or shape differs from the reference", who, k);
    return 1;
  }
  int64_t m = tp_tensor_numel(ref);
  double maxabs = 0;
  tp_dtype dt = tp_tensor_dtype(ref);
  int isf = dt == TP_F32 || dt == TP_F16 || dt == TP_BF16;
  /* a narrower float rounds once more: one unit in its last place */
  double rel = dt == TP_F16 ? 2e-3 : dt == TP_BF16 ? 1.6e-2 : 2e-3, abs_ = dt == TP_F32 ? 1e-4 : 2e-3;
  for (int64_t i = 0; i < m && isf; i++) {
    double r = tp_tensor_get_f64(ref, i);
    if (isfinite(r) && fabs(r) > maxabs) maxabs = fabs(r);
  }
  for (int64_t i = 0; i < m; i++) {
    double r = tp_tensor_get_f64(ref, i), v = tp_tensor_get_f64(got, i);
    int ok;
    if (!isf) ok = r == v;
    else if (isnan(r)) ok = isnan(v);
    else if (isinf(r)) ok = v == r;
    else ok = fabs(v - r) <= abs_ * (1 + maxabs) + rel * fabs(r);
    if (!ok) {
      snprintf(why, n, "%s: output %d element %lld: %.9g, reference %.9g", who, k, (long long)i, v, r);
      return 1;
    }
  }
  return 0;
}

void dg_dump(const dg_case *c) {
  static const char *const names[] = {"reference", "eager", "stax"};
  for (int b = 0; b < 3; b++) {
    outs o;
    if (run_backend(names[b], c, &o) != TP_OK) {
      printf("%s: %s\n", names[b], tp_last_error());
      tp_clear_error();
      continue;
    }
    for (int k = 0; k < o.n; k++) {
      printf("%s output %d:", names[b], k);
      for (int64_t i = 0; i < tp_tensor_numel(o.t[k]) && i < 24; i++) printf(" %.9g", tp_tensor_get_f64(o.t[k], i));
      printf("\n");
    }
    outs_free(&o);
  }
}

int dg_check(const dg_case *c, char *why, size_t n) {
  static const char *const names[] = {"eager", "stax"};
  return dg_check_backends(c, names, 2, why, n);
}

int dg_check_backends(const dg_case *c, const char *const *others, int nothers, char *why, size_t n) {
  outs ref, got;
  why[0] = 0;
  if (run_backend("reference", c, &ref) != TP_OK) {
    snprintf(why, n, "reference: %s", tp_last_error());
    tp_clear_error();
    return -1;
  }
  int bad = 0;
  for (int b = 0; b < nothers && !bad; b++) {
    tp_status s = run_backend(others[b], c, &got);
    if (s != TP_OK) {
      snprintf(why, n, "%s failed where the reference ran: %s: %s", others[b], tp_status_name(s),
               tp_last_error());
      tp_clear_error();
      bad = 1;
      break;
    }
    if (got.n != ref.n) {
      snprintf(why, n, "%s: %d outputs, reference %d", others[b], got.n, ref.n);
      bad = 1;
    }
    for (int k = 0; k < ref.n && !bad; k++) bad = compare(others[b], got.t[k], ref.t[k], k, why, n);
    outs_free(&got);
  }
  outs_free(&ref);
  return bad;
}
