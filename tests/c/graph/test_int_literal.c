/* test_int_literal.c - integer literals in graph text (issue 15, defect 7):
 * `add(%x, 9223372036854775807)` gave -9.22e18 natively and +9.22e18 in Wasm
 * (an undefined double -> int64 cast). Integer literals are scalars stored
 * as doubles: 9223372036854775807 rounds to 2^63, which no int64 holds.
 * With a float tensor it is the float 2^63 (the same on every build); with an
 * integer tensor it is an error naming the value; a literal beyond int64 is
 * a parse error; the printer writes integer literals as integers, exactly
 * the value stored (never 9.223372036854776e+18), and re-parses them to the
 * same double. Reference values are hand-computed. */
#include "check.h"

#include <math.h>
#include <string.h>

static tp_graph *parse(const char *text) {
  tp_graph *g = NULL;
  if (tp_graph_parse(text, strlen(text), &g)) FAILF("parse failed: %s\n%s", tp_last_error(), text);
  return g;
}

static char *print(const tp_graph *g) {
  char *t = NULL;
  CHECK_OK(tp_graph_print(g, 0, &t));
  return t;
}

int main(void) {
  /* float tensor + 9223372036854775807: +2^63 in f32 */
  tp_graph *g = parse("tpgraph v1\n%x = placeholder : f32[2]\n%r = add(%x, 9223372036854775807) : f32[2]\noutput(%r)\n");
  if (g) {
    static const float x[2] = {1, -2};
    int64_t sh[1] = {2};
    tp_tensor *in = NULL, *out[1] = {0};
    int n = 0;
    float y[2] = {0, 0};
    CHECK_OK(tp_tensor_new(TP_F32, 1, sh, x, &in));
    CHECK_OK(tp_graph_run(g, 1, &in, 1, out, &n));
    CHECK(n == 1 && tp_tensor_read(out[0], y, sizeof y) == TP_OK);
    CHECKF(y[0] == 9223372036854775808.0f && y[1] == 9223372036854775808.0f, "got [%g, %g]", y[0], y[1]);
    tp_tensor_release(out[0]);
    tp_tensor_release(in);
    char *t = print(g);
    CHECKF(t && strstr(t, "add(%x, 9223372036854775808)") && !strstr(t, "e+18"), "printed:\n%s", t ? t : "");
    tp_graph *g2 = t ? parse(t) : NULL;
    char *t2 = g2 ? print(g2) : NULL;
    CHECK(t2 && !strcmp(t, t2));
    tp_free_buffer(t);
    tp_free_buffer(t2);
    tp_graph_free(g2);
    tp_graph_free(g);
  }
  /* int64 tensor + the same literal: an error naming it, not a wrapped value */
  g = parse("tpgraph v1\n%x = placeholder : i64[2]\n%r = add(%x, 9223372036854775807) : i64[2]\noutput(%r)\n");
  if (g) {
    static const int64_t x[2] = {1, -2};
    int64_t sh[1] = {2};
    tp_tensor *in = NULL, *out[1] = {0};
    int n = 0;
    CHECK_OK(tp_tensor_new(TP_I64, 1, sh, x, &in));
    CHECK(tp_graph_run(g, 1, &in, 1, out, &n) == TP_ERR_INVALID_ARG && !out[0]);
    CHECKF(strstr(tp_last_error(), "node %r: scalar 9223372036854775808 does not fit int64"), "error: %s",
           tp_last_error());
    /* the runtime still works: an in-range literal */
    tp_graph_free(g);
    g = parse("tpgraph v1\n%x = placeholder : i64[2]\n%r = add(%x, 9007199254740992) : i64[2]\noutput(%r)\n");
    int64_t y[2] = {0, 0};
    CHECK_OK(tp_graph_run(g, 1, &in, 1, out, &n));
    CHECK(n == 1 && tp_tensor_read(out[0], y, sizeof y) == TP_OK);
    CHECK(y[0] == 9007199254740993LL && y[1] == 9007199254740990LL);
    char *t = print(g);
    CHECKF(t && strstr(t, "add(%x, 9007199254740992)"), "printed:\n%s", t ? t : "");
    tp_free_buffer(t);
    tp_tensor_release(out[0]);
    tp_tensor_release(in);
    tp_graph_free(g);
  }
  /* integers between 1e18 and 2^63 print as integers (were floats) */
  g = parse("tpgraph v1\n%x = placeholder : i64[2]\n%r = mul(%x, -4611686018427387904) : i64[2]\noutput(%r)\n");
  if (g) {
    char *t = print(g);
    CHECKF(t && strstr(t, "mul(%x, -4611686018427387904)"), "printed:\n%s", t ? t : "");
    tp_free_buffer(t);
    tp_graph_free(g);
  }
  /* beyond int64: a parse error naming the literal */
  const char *big = "tpgraph v1\n%x = placeholder : f32[2]\n%r = add(%x, 99999999999999999999) : f32[2]\noutput(%r)\n";
  g = NULL;
  CHECK(tp_graph_parse(big, strlen(big), &g) == TP_ERR_PARSE && !g);
  CHECKF(strstr(tp_last_error(), "line 3: integer literal 99999999999999999999 is out of range for int64"), "error: %s",
         tp_last_error());
  /* the core's scalar: checked, not cast. A whole number past int64 is a
   * weak scalar stored as float32 (its exact value kept for the check
   * against an integer tensor, docs/reliability.md "Numbers"); NaN with
   * is_int is an error */
  tp_tensor *s = NULL;
  CHECK_OK(tp_scalar(1e300, 1, &s));
  CHECK(s && tp_tensor_dtype(s) == TP_F32);
  tp_tensor_release(s);
  s = NULL;
  CHECK(tp_scalar(NAN, 1, &s) == TP_ERR_INVALID_ARG && !s);
  CHECK_OK(tp_scalar(9223372036854775808.0, 1, &s));
  CHECK(s && tp_tensor_dtype(s) == TP_F32);
  tp_tensor_release(s);
  s = NULL;
  CHECK_OK(tp_scalar(-9223372036854775808.0, 1, &s));
  int64_t v = 0;
  CHECK(s && tp_tensor_read(s, &v, sizeof v) == TP_OK && v == INT64_MIN);
  tp_tensor_release(s);
  CHECK(tp_live_tensors() == 0);
  if (failures) printf("%d check(s) failed\n", failures);
  else printf("ok\n");
  return failures != 0;
}
