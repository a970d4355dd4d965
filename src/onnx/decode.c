/* decode.c - ModelProto bytes -> omodel (import.h): the subset of the
 * protobuf schema the importer reads. Nodes, attributes and value infos are
 * copied out (strings into an arena, arrays tp_alloc'ed); tensors stay as
 * tp_pb readers into the caller's bytes and are read when they are used.
 * Fields the importer does not know are skipped; a field it needs with the
 * wrong wire type is a parse error naming the field and byte offset. */
#include "import.h"

/* ---- arena: the decoded strings live here until the load ends ---- */
struct oblk { struct oblk *next; double align_; };

void *tp_onnx_arena_alloc(omodel *md, size_t n) {
  oblk *b = tp_alloc(sizeof(oblk) + n);
  if (!b) return NULL;
  b->next = md->arena;
  md->arena = b;
  memset(b + 1, 0, n);
  return b + 1;
}

void tp_onnx_arena_release(omodel *md, oblk *mark) {
  while (md->arena && md->arena != mark) {
    oblk *b = md->arena;
    md->arena = b->next;
    tp_free(b);
  }
}

char *tp_onnx_arena_str(omodel *md, const void *p, size_t n) {
  char *s = tp_onnx_arena_alloc(md, n + 1);
  if (s && n) memcpy(s, p, n);
  return s;
}

void tp_onnx_decoded_free(omodel *md) {
  for (int i = 0; i < md->nnodes; i++) {
    onode *n = &md->nodes[i];
    for (int k = 0; k < n->nattrs; k++) {
      tp_free(n->attrs[k].ints);
      tp_free(n->attrs[k].strings);
      tp_free(n->attrs[k].floats);
    }
    tp_free(n->attrs);
    tp_free(n->in);
    tp_free(n->out);
  }
  tp_free(md->nodes);
  tp_free(md->inputs);
  tp_free(md->outputs);
  tp_free(md->inits);
  while (md->arena) {
    oblk *b = md->arena;
    md->arena = b->next;
    tp_free(b);
  }
  memset(md, 0, sizeof *md);
}

/* ---- messages ---- */
static tp_status read_typeproto(omodel *m, tp_pb *r, vinfo *v) {
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
        const char *param = NULL;
        tp_pb_field d;
        int k4;
        while ((k4 = tp_pb_next(&dm, &d)) > 0) {
          if (d.num == 1 && d.wire == TP_PB_VARINT) val = (int64_t)d.u;
          if (d.num == 2 && d.wire == TP_PB_LEN && !param) {
            param = tp_onnx_arena_str(m, d.data, d.len);
            if (!param) return TP_ERR_OUT_OF_MEMORY;
          }
        }
        if (k4 < 0) return (tp_status)-k4;
        if (val >= 0) param = NULL;      /* a fixed dim; its name is only a label */
        else if (!param || !*param) param = "?";
        if (param && !v->sym) v->sym = param;
        if (v->ndim == TP_MAX_DIMS) v->too_many_dims = 1;
        else v->dim_param[v->ndim] = param, v->dims[v->ndim++] = val;
      }
      if (k3 < 0) return (tp_status)-k3;
    }
    if (k2 < 0) return (tp_status)-k2;
  }
  return k < 0 ? (tp_status)-k : TP_OK;
}

static tp_status read_valueinfo(omodel *m, tp_pb *r, vinfo *v) {
  tp_pb_field f;
  int k;
  memset(v, 0, sizeof *v);
  while ((k = tp_pb_next(r, &f)) > 0) {
    if (f.num == 1) {
      TP_TRY(tp_pb_need(r, &f, TP_PB_LEN));
      if (!(v->name = tp_onnx_arena_str(m, f.data, f.len))) return TP_ERR_OUT_OF_MEMORY;
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

static tp_status read_attr(omodel *m, tp_pb *r, attr *a) {
  tp_pb_field f;
  int k;
  memset(a, 0, sizeof *a);
  while ((k = tp_pb_next(r, &f)) > 0) {
    switch (f.num) {
      case 1:
        TP_TRY(tp_pb_need(r, &f, TP_PB_LEN));
        if (!(a->name = tp_onnx_arena_str(m, f.data, f.len))) return TP_ERR_OUT_OF_MEMORY;
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
        if (!(a->s = tp_onnx_arena_str(m, f.data, f.len))) return TP_ERR_OUT_OF_MEMORY;
        break;
      case 5: TP_TRY(tp_pb_sub(r, &f, "TensorProto", &a->t)); a->has_t = 1; break;
      case 6: TP_TRY(tp_pb_sub(r, &f, "GraphProto", &a->g)); a->has_g = 1; break;
      case 7: TP_TRY(tp_pb_floats(r, &f, &a->floats, &a->nfloats)); break;
      case 8: TP_TRY(tp_pb_ints(r, &f, &a->ints, &a->nints)); break;
      case 9: {
        TP_TRY(tp_pb_need(r, &f, TP_PB_LEN));
        char *s = tp_onnx_arena_str(m, f.data, f.len);
        if (!s) return TP_ERR_OUT_OF_MEMORY;
        TP_TRY(TP_ARRAY_RESERVE(a->strings, a->capstrings, a->nstrings + 1));
        a->strings[a->nstrings++] = s;
        break;
      }
      default: break; /* graphs, strings, tensors, sparse, type protos: rejected by type */
    }
  }
  if (k < 0) return (tp_status)-k;
  if (!a->name) a->name = "";
  return TP_OK;
}

static tp_status read_node(omodel *m, tp_pb *r, onode *n) {
  tp_pb_field f;
  int k, capin = 0, capout = 0, capattr = 0;
  memset(n, 0, sizeof *n);
  while ((k = tp_pb_next(r, &f)) > 0) {
    switch (f.num) {
      case 1: case 2: {
        TP_TRY(tp_pb_need(r, &f, TP_PB_LEN));
        char *s = tp_onnx_arena_str(m, f.data, f.len);
        if (!s) return TP_ERR_OUT_OF_MEMORY;
        if (f.num == 1) {
          TP_TRY(TP_ARRAY_RESERVE(n->in, capin, n->nin + 1));
          n->in[n->nin++] = s;
        } else {
          TP_TRY(TP_ARRAY_RESERVE(n->out, capout, n->nout + 1));
          n->out[n->nout++] = s;
        }
        break;
      }
      case 3: case 4: case 7: {
        TP_TRY(tp_pb_need(r, &f, TP_PB_LEN));
        char *s = tp_onnx_arena_str(m, f.data, f.len);
        if (!s) return TP_ERR_OUT_OF_MEMORY;
        if (f.num == 3) n->name = s;
        else if (f.num == 4) n->op = s;
        else n->domain = s;
        break;
      }
      case 5: {
        tp_pb sub;
        TP_TRY(tp_pb_sub(r, &f, "AttributeProto", &sub));
        TP_TRY(TP_ARRAY_RESERVE(n->attrs, capattr, n->nattrs + 1));
        /* counted before it is read, so that tp_onnx_decoded_free also
         * releases a half-read attribute */
        TP_TRY(read_attr(m, &sub, &n->attrs[n->nattrs++]));
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

static tp_status read_graph(omodel *m, tp_pb *r) {
  tp_pb_field f;
  int k;
  while ((k = tp_pb_next(r, &f)) > 0) {
    tp_pb sub;
    switch (f.num) {
      case 1:
        TP_TRY(tp_pb_sub(r, &f, "NodeProto", &sub));
        TP_TRY(TP_ARRAY_RESERVE(m->nodes, m->capnodes, m->nnodes + 1));
        TP_TRY(read_node(m, &sub, &m->nodes[m->nnodes++])); /* counted first, as attributes */
        break;
      case 5:
        TP_TRY(tp_pb_sub(r, &f, "TensorProto", &sub));
        TP_TRY(TP_ARRAY_RESERVE(m->inits, m->capinits, m->ninits + 1));
        m->inits[m->ninits++] = sub;
        break;
      case 11: case 12:
        TP_TRY(tp_pb_sub(r, &f, "ValueInfoProto", &sub));
        if (f.num == 11) {
          TP_TRY(TP_ARRAY_RESERVE(m->inputs, m->capinputs, m->ninputs + 1));
          TP_TRY(read_valueinfo(m, &sub, &m->inputs[m->ninputs]));
          m->ninputs++;
        } else {
          TP_TRY(TP_ARRAY_RESERVE(m->outputs, m->capoutputs, m->noutputs + 1));
          TP_TRY(read_valueinfo(m, &sub, &m->outputs[m->noutputs]));
          m->noutputs++;
        }
        break;
      case 15:
        return tp_fail(TP_ERR_UNSUPPORTED, "onnx: sparse initializers are not supported");
      default: break; /* name, doc_string, value_info (shapes are inferred) */
    }
  }
  if (k < 0) return (tp_status)-k;
  return tp_onnx_sort_nodes(m); /* order.c: as onnxruntime, nodes need not come in order */
}

tp_status tp_onnx_decode_subgraph(omodel *parent, const tp_pb *g, omodel *out) {
  memset(out, 0, sizeof *out);
  out->opset = parent->opset;
  tp_pb r = *g;
  tp_status s = read_graph(out, &r);
  /* the subgraph's strings join the parent's arena */
  while (out->arena) {
    oblk *b = out->arena;
    out->arena = b->next;
    b->next = parent->arena;
    parent->arena = b;
  }
  return s;
}

tp_status tp_onnx_decode(omodel *m, const void *bytes, size_t len) {
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
  if (m->opset < 1)
    return tp_fail(TP_ERR_PARSE, "onnx: the model imports opset %lld of the default domain; opsets start at 1",
                   (long long)m->opset);
  return tp_onnx_check_graph(m);
}
