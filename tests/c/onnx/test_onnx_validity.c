/* test_onnx_validity.c - invalid ONNX graphs are refused at load, as ONNX's
 * checker refuses them, with the names involved (src/onnx/check.c): a value
 * written by two nodes (issue 15, defect 6: Relu and Neg both to 'a'), a
 * node output that redefines a graph input or an initializer, duplicate
 * graph inputs and initializers, a cycle, an undefined input, and the same inside an If branch (whose nodes may read
 * the enclosing graph's values but not redefine them). Valid graphs of the
 * same shapes still load and compute the hand-computed values, and so do
 * nodes listed out of order (sorted as onnxruntime sorts them: order.c). */
#include "check.h"
#include "onnx/pb.h"

#include <string.h>

static void sub(tp_pbw *w, uint32_t num, tp_pbw *s) {
  tp_pbw_bytes(w, num, s->p, s->n);
  tp_buf_free(s);
}
static void str(tp_pbw *w, uint32_t num, const char *s) { tp_pbw_bytes(w, num, s, strlen(s)); }

/* float input/output of shape [2] */
static void vi(tp_pbw *g, uint32_t num, const char *name) {
  tp_pbw v = {0}, ty = {0}, tt = {0}, sh = {0}, dim = {0};
  tp_pbw_varint(&dim, 1, 2);
  sub(&sh, 1, &dim);
  tp_pbw_varint(&tt, 1, 1);
  sub(&tt, 2, &sh);
  sub(&ty, 1, &tt);
  str(&v, 1, name);
  sub(&v, 2, &ty);
  sub(g, num, &v);
}

/* node: op "in1,in2" -> "out", named name */
static void node(tp_pbw *g, const char *name, const char *op, const char *ins, const char *outs) {
  tp_pbw n = {0};
  char buf[128];
  snprintf(buf, sizeof buf, "%s", ins);
  for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) str(&n, 1, t);
  snprintf(buf, sizeof buf, "%s", outs);
  for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) str(&n, 2, t);
  str(&n, 3, name);
  str(&n, 4, op);
  sub(g, 1, &n);
}

/* initializer: float [2] = {v, v} */
static void init(tp_pbw *g, const char *name, float v) {
  tp_pbw t = {0};
  float b[2] = {v, v};
  tp_pbw_varint(&t, 1, 2);
  tp_pbw_varint(&t, 2, 1);
  str(&t, 8, name);
  tp_pbw_bytes(&t, 9, b, sizeof b);
  sub(g, 5, &t);
}

/* If on a bool initializer 'c' (true) with then = branch, else = a copy */
static void node_if(tp_pbw *g, const char *out, void (*branch)(tp_pbw *)) {
  tp_pbw n = {0}, ct = {0};
  uint8_t one = 1;
  tp_pbw_varint(&ct, 2, 9); /* BOOL, 0-d */
  str(&ct, 8, "c");
  tp_pbw_bytes(&ct, 9, &one, 1);
  sub(g, 5, &ct);
  str(&n, 1, "c");
  str(&n, 2, out);
  str(&n, 3, "if");
  str(&n, 4, "If");
  const char *names[2] = {"then_branch", "else_branch"};
  for (int i = 0; i < 2; i++) {
    tp_pbw a = {0}, b = {0};
    branch(&b);
    str(&b, 2, names[i]);
    str(&a, 1, names[i]);
    sub(&a, 6, &b);
    tp_pbw_varint(&a, 20, 5); /* GRAPH */
    sub(&n, 5, &a);
  }
  sub(g, 1, &n);
}

static uint8_t *finish(tp_pbw *g, size_t *len) {
  tp_pbw m = {0}, os = {0};
  tp_pbw_varint(&m, 1, 8);
  str(&os, 1, "");
  tp_pbw_varint(&os, 2, 17);
  sub(&m, 8, &os);
  str(g, 2, "test");
  sub(&m, 7, g);
  *len = m.n;
  return (uint8_t *)m.p;
}

/* Loads g (consumed) and checks that both loaders refuse it as invalid with
 * every one of the needles in the message. */
static void refused(int line, tp_pbw *g, const char *needle1, const char *needle2) {
  size_t len;
  uint8_t *b = finish(g, &len);
  tp_graph *gr = NULL;
  tp_status s = tp_onnx_load(b, len, &gr);
  const char *e = tp_last_error();
  if (s != TP_ERR_PARSE || gr || !strstr(e, "onnx: invalid model") || !strstr(e, needle1) ||
      (needle2 && !strstr(e, needle2)))
    FAILF_AT(line, "tp_onnx_load gave status %d, error '%s'; wanted an invalid model naming '%s'", (int)s, e,
             needle1);
  tp_graph_free(gr);
  tp_onnx_model *m = NULL;
  s = tp_onnx_model_load(b, len, &m);
  if (s != TP_ERR_PARSE || m || !strstr(tp_last_error(), needle1))
    FAILF_AT(line, "tp_onnx_model_load gave status %d, error '%s'", (int)s, tp_last_error());
  tp_onnx_model_free(m);
  tp_free_buffer(b);
}

/* Loads g (consumed), runs it on x = [1, -2] and checks y. */
static void runs(int line, tp_pbw *g, float y0, float y1) {
  size_t len;
  uint8_t *b = finish(g, &len);
  tp_graph *gr = NULL;
  tp_status s = tp_onnx_load(b, len, &gr);
  tp_free_buffer(b);
  if (s) {
    FAILF_AT(line, "a valid model was refused: %s", tp_last_error());
    return;
  }
  static const float x[2] = {1, -2};
  int64_t sh[1] = {2};
  tp_tensor *in = NULL, *out[1] = {0};
  int n = 0;
  float got[2] = {0, 0};
  CHECK_OK(tp_tensor_new(TP_F32, 1, sh, x, &in));
  s = tp_graph_run(gr, 1, &in, 1, out, &n);
  if (s || n != 1 || tp_tensor_read(out[0], got, sizeof got) || got[0] != y0 || got[1] != y1)
    FAILF_AT(line, "run: status %d, got [%g, %g], want [%g, %g]", (int)s, got[0], got[1], y0, y1);
  tp_tensor_release(out[0]);
  tp_tensor_release(in);
  tp_graph_free(gr);
}

static void branch_neg_x(tp_pbw *b) {
  node(b, "bneg", "Neg", "x", "t");
  vi(b, 12, "t");
}
static void branch_redefines_h(tp_pbw *b) {
  node(b, "bneg", "Neg", "x", "h");
  vi(b, 12, "h");
}
static void branch_undefined(tp_pbw *b) {
  node(b, "bneg", "Neg", "nowhere", "t");
  vi(b, 12, "t");
}

int main(void) {
  tp_pbw g;
  /* the reproducer: Relu and Neg both write 'a' */
  g = (tp_pbw){0};
  vi(&g, 11, "x");
  node(&g, "r", "Relu", "x", "a");
  node(&g, "n", "Neg", "x", "a");
  vi(&g, 12, "a");
  refused(__LINE__, &g, "value 'a' is defined twice", "node 'n'");
  /* the same graph with distinct names is fine: y = relu(x) + neg(x) */
  g = (tp_pbw){0};
  vi(&g, 11, "x");
  node(&g, "r", "Relu", "x", "a");
  node(&g, "n", "Neg", "x", "b");
  node(&g, "s", "Add", "a,b", "y");
  vi(&g, 12, "y");
  runs(__LINE__, &g, 0.0f, 2.0f);
  /* a node output redefining a graph input, an initializer */
  g = (tp_pbw){0};
  vi(&g, 11, "x");
  node(&g, "n", "Neg", "x", "x");
  vi(&g, 12, "x");
  refused(__LINE__, &g, "value 'x' is defined twice", "node 'n'");
  g = (tp_pbw){0};
  vi(&g, 11, "x");
  init(&g, "w", 3);
  node(&g, "n", "Neg", "x", "w");
  vi(&g, 12, "w");
  refused(__LINE__, &g, "value 'w' is defined twice", NULL);
  /* duplicate graph inputs, duplicate initializers */
  g = (tp_pbw){0};
  vi(&g, 11, "x");
  vi(&g, 11, "x");
  node(&g, "n", "Neg", "x", "y");
  vi(&g, 12, "y");
  refused(__LINE__, &g, "graph input 'x' is declared twice", NULL);
  g = (tp_pbw){0};
  vi(&g, 11, "x");
  init(&g, "w", 3);
  init(&g, "w", 4);
  node(&g, "m", "Mul", "x,w", "y");
  vi(&g, 12, "y");
  refused(__LINE__, &g, "initializer 'w' is declared twice", NULL);
  /* nodes out of order load as onnxruntime loads them (sorted: order.c):
   * y = -relu(x) = [-1, 0]; and a longer chain listed backwards with a
   * side branch: h = relu(x), k = h + x, y = -k = [-2, 2] */
  g = (tp_pbw){0};
  vi(&g, 11, "x");
  node(&g, "second", "Neg", "h", "y");
  node(&g, "first", "Relu", "x", "h");
  vi(&g, 12, "y");
  runs(__LINE__, &g, -1.0f, 0.0f);
  g = (tp_pbw){0};
  vi(&g, 11, "x");
  node(&g, "third", "Neg", "k", "y");
  node(&g, "second", "Add", "h,x", "k");
  node(&g, "first", "Relu", "x", "h");
  vi(&g, 12, "y");
  runs(__LINE__, &g, -2.0f, 2.0f);
  /* a cycle, an undefined input (and a cycle behind a valid node) */
  g = (tp_pbw){0};
  vi(&g, 11, "x");
  node(&g, "p", "Add", "x,q", "p_out");
  node(&g, "q", "Neg", "p_out", "q");
  vi(&g, 12, "q");
  refused(__LINE__, &g, "input 'q' of node 'p'", NULL);
  g = (tp_pbw){0};
  vi(&g, 11, "x");
  node(&g, "p", "Add", "x,q", "p_out");
  node(&g, "q", "Neg", "p_out", "q");
  node(&g, "r", "Relu", "x", "y");
  vi(&g, 12, "y");
  refused(__LINE__, &g, "input 'q' of node 'p'", "topological order");
  g = (tp_pbw){0};
  vi(&g, 11, "x");
  node(&g, "n", "Neg", "ghost", "y");
  vi(&g, 12, "y");
  refused(__LINE__, &g, "input 'ghost' of node 'n'", NULL);
  /* subgraphs: a branch reads the outer 'x' (valid: y = -x), may not
   * redefine the outer 'h' nor read an undefined value */
  g = (tp_pbw){0};
  vi(&g, 11, "x");
  node_if(&g, "y", branch_neg_x);
  vi(&g, 12, "y");
  runs(__LINE__, &g, -1.0f, 2.0f);
  g = (tp_pbw){0};
  vi(&g, 11, "x");
  node(&g, "r", "Relu", "x", "h");
  node_if(&g, "y", branch_redefines_h);
  vi(&g, 12, "y");
  refused(__LINE__, &g, "value 'h' is defined twice", "attribute 'then_branch' of node 'if'");
  g = (tp_pbw){0};
  vi(&g, 11, "x");
  node_if(&g, "y", branch_undefined);
  vi(&g, 12, "y");
  refused(__LINE__, &g, "input 'nowhere' of node 'bneg'", "then_branch");
  CHECK(tp_live_tensors() == 0);
  if (failures) printf("%d check(s) failed\n", failures);
  else printf("ok\n");
  return failures != 0;
}
