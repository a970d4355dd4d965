/* onnx_build.h - a small ModelProto builder for the C ONNX tests (the
 * protobuf writer, onnx/pb.h): value infos, attributes, nodes, a model of
 * one graph. Each function is static inline so a test includes what it
 * uses without unused-function warnings. */
#ifndef TP_TESTS_ONNX_BUILD_H
#define TP_TESTS_ONNX_BUILD_H
#include "onnx/pb.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static inline void sub(tp_pbw *w, uint32_t num, tp_pbw *s) {
  tp_pbw_bytes(w, num, s->p, s->n);
  tp_buf_free(s);
}
static inline void str(tp_pbw *w, uint32_t num, const char *s) { tp_pbw_bytes(w, num, s, strlen(s)); }

/* dims: "3,batch,?" (numbers are fixed dims, names dim_params, '?' an
 * unknown dim), "" for a scalar, NULL for no shape (unknown rank). elem:
 * 1 float, 7 int64, 9 bool. */
static inline void value_info(tp_pbw *g, uint32_t num, const char *name, int elem, const char *dims) {
  tp_pbw vi = {0}, ty = {0}, tt = {0}, sh = {0};
  if (dims) {
    char buf[128];
    snprintf(buf, sizeof buf, "%s", dims);
    for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
      tp_pbw dim = {0};
      if (t[0] >= '0' && t[0] <= '9') tp_pbw_varint(&dim, 1, (uint64_t)atoll(t));
      else if (strcmp(t, "?")) str(&dim, 2, t);
      sub(&sh, 1, &dim);
    }
  }
  tp_pbw_varint(&tt, 1, (uint64_t)elem);
  if (dims) {
    if (sh.n) sub(&tt, 2, &sh);
    else tp_pbw_bytes(&tt, 2, "", 0); /* a 0-d shape */
  }
  sub(&ty, 1, &tt);
  str(&vi, 1, name);
  sub(&vi, 2, &ty);
  sub(g, num, &vi);
}

/* AttributeProtos (consumed by node()). */
static inline tp_pbw attr_int(const char *name, int64_t v) {
  tp_pbw a = {0};
  str(&a, 1, name);
  tp_pbw_varint(&a, 3, (uint64_t)v);
  tp_pbw_varint(&a, 20, 2); /* INT */
  return a;
}
static inline tp_pbw attr_ints(const char *name, int n, const int64_t *v) {
  tp_pbw a = {0};
  str(&a, 1, name);
  for (int i = 0; i < n; i++) tp_pbw_varint(&a, 8, (uint64_t)v[i]);
  tp_pbw_varint(&a, 20, 7); /* INTS */
  return a;
}
static inline tp_pbw attr_graph(const char *name, tp_pbw *body) {
  tp_pbw a = {0};
  str(&a, 1, name);
  str(body, 2, name);
  sub(&a, 6, body);
  tp_pbw_varint(&a, 20, 5); /* GRAPH */
  return a;
}

/* ins/outs: NULL-terminated lists ("" = an absent optional input). */
static inline void node(tp_pbw *g, const char *op, const char *const *ins, const char *const *outs, int nattr, tp_pbw *attrs) {
  tp_pbw n = {0};
  for (; *ins; ins++) str(&n, 1, *ins);
  for (const char *const *o = outs; *o; o++) str(&n, 2, *o);
  str(&n, 3, outs[0] ? outs[0] : op); /* (a node without outputs: named by its op) */
  str(&n, 4, op);
  for (int i = 0; i < nattr; i++) sub(&n, 5, &attrs[i]);
  sub(g, 1, &n);
}
#define L(...) ((const char *const[]){__VA_ARGS__, NULL})

static inline uint8_t *finish_opset(tp_pbw *g, int64_t opset, size_t *len) {
  tp_pbw m = {0}, os = {0};
  tp_pbw_varint(&m, 1, 8);
  str(&os, 1, "");
  tp_pbw_varint(&os, 2, (uint64_t)opset);
  sub(&m, 8, &os);
  str(g, 2, "test");
  sub(&m, 7, g);
  *len = m.n;
  return (uint8_t *)m.p;
}

static inline uint8_t *finish(tp_pbw *g, size_t *len) { return finish_opset(g, 17, len); }

#endif
