/* test_abi.c - the flat ABI the JS package calls, driven natively under
 * ASan: handles with generations (stale and double frees fail cleanly),
 * ops by id with packed attributes, and compile() calling back into a
 * "host" (here a C function standing in for JS) with ownership transfer. */
#include "wasm/abi_native.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h" /* its tp_last_error() is what tpw_last_error() returns */

static int op_id(const char *name) {
  for (int i = 0; i < tpw_op_count(); i++)
    if (!strcmp(tpw_op_name(i), name)) return i;
  return -1;
}


/* host: y = relu(x) + x, or throws when fn_id == 2 */
static int host_calls;
static int32_t host(int32_t fn_id, const uint32_t *in, int32_t nin, uint32_t *out, int32_t max_out) {
  host_calls++;
  if (fn_id == 2) {
    tpw_set_host_error("TypeError: boom");
    return -1;
  }
  if (nin != 1 || max_out < 1) return -1;
  tp_attrs a;
  tpw_attrs_init(&a);
  uint32_t r = tpw_op(op_id("relu"), 1, in, &a);
  uint32_t ops[2] = {r, in[0]};
  uint32_t y = tpw_op(op_id("add"), 2, ops, &a);
  tpw_tensor_free(r);
  out[0] = y;
  return y ? 1 : -1;
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  int base = tpw_live_tensors();
  int64_t shape[2] = {2, 3};
  float data[6] = {-1, 2, -3, 4, -5, 6};
  uint32_t x = tpw_tensor_new(0, 2, shape, data);
  CHECK(x != 0 && tpw_tensor_ndim(x) == 2 && tpw_tensor_dtype(x) == 0);
  int64_t got[2];
  CHECK(tpw_tensor_shape(x, got) == 0 && got[0] == 2 && got[1] == 3);

  /* transpose via packed attrs, then read */
  tp_attrs a;
  tpw_attrs_init(&a);
  a.dim = 0, a.dim1 = 1;
  uint32_t t = tpw_op(op_id("transpose"), 1, &x, &a);
  float tr[6];
  CHECK(t && tpw_tensor_read(t, tr, sizeof tr) == 0);
  CHECK(tr[0] == -1 && tr[1] == 4 && tr[2] == 2 && tr[5] == 6);

  /* tpw_tensor_data_ptr: an address only for a contiguous tensor with
   * elements (natively the low 32 bits of one; in Wasm the address); 0 for
   * a transposed view, an empty tensor and a stale handle */
  /* natively the low 32 bits of an address can be 0 (ThreadSanitizer's heap
   * sits at multiples of 2^32), so "not 0" is checked where addresses are
   * 32 bits (the JS tests read through it in Wasm) */
  CHECK((sizeof(void *) > 4 || tpw_tensor_data_ptr(x) != 0) && tpw_tensor_data_ptr(t) == 0);
  int64_t eshape[2] = {0, 3};
  uint32_t e = tpw_tensor_new(0, 2, eshape, NULL);
  CHECK(e && tpw_tensor_data_ptr(e) == 0);
  CHECK(tpw_tensor_free(e) == 0 && tpw_tensor_data_ptr(e) == 0);

  /* stale handle and double free */
  CHECK(tpw_tensor_free(t) == 0);
  CHECK(tpw_tensor_free(t) == 7 && strstr(tpw_last_error(), "disposed"));
  CHECK(tpw_tensor_ndim(t) == -1);
  uint32_t ops[2] = {x, t};
  CHECK(tpw_op(op_id("add"), 2, ops, &a) == 0 && tpw_last_status() == 7);
  CHECK(strstr(tpw_last_error(), "add: operand 1") != NULL);
  CHECK(tpw_tensor_free(0) == 7 && tpw_tensor_free(0x12345) == 7);
  /* a slot reused by a new tensor does not revive the old handle */
  uint32_t t2 = tpw_scalar(1.5, 0);
  CHECK(t2 != 0 && t2 != t && tpw_tensor_ndim(t) == -1);
  tpw_tensor_free(t2);

  /* bad op id / bad attrs */
  CHECK(tpw_op(999, 1, &x, &a) == 0 && strstr(tpw_last_error(), "unknown operator"));
  a.nints = 99;
  CHECK(tpw_op(op_id("sum"), 1, &x, &a) == 0 && tpw_last_status() == 1);
  tpw_attrs_init(&a);

  /* compile through the host bridge */
  tpw_set_native_host(host);
  int32_t opts[4] = {0, -1, 0, 0};
  uint32_t c = tpw_compile(1, opts, "eager", "f");
  CHECK(c != 0);
  CHECK(tpw_compiled_set_input_names(c, "x") == 0);
  uint32_t y = 0;
  for (int k = 0; k < 3; k++) {
    CHECK(tpw_compiled_call(c, 1, &x, &y, 1) == 1);
    float v[6];
    CHECK(tpw_tensor_read(y, v, sizeof v) == 0);
    CHECK(v[0] == -1 && v[1] == 4 && v[2] == -3 && v[5] == 12);
    tpw_tensor_free(y);
  }
  CHECK(host_calls == 1 && tpw_compiled_num_captures(c) == 1);
  char *text = tpw_compiled_graph_text(c, 0);
  CHECK(text && strstr(text, "%x = placeholder : f32[2,3]") && strstr(text, "relu(%x)"));
  tpw_free(text);
  /* the graph text runs through the graph handle API too */
  text = tpw_compiled_graph_text(c, 1);
  CHECK(text != NULL);
  if (!text) return 1;
  uint32_t g = tpw_graph_parse(text, (int32_t)strlen(text));
  tpw_free(text);
  CHECK(g != 0 && tpw_graph_run(g, 1, &x, &y, 1) == 1);
  tpw_tensor_free(y);
  /* a built-in backend's compile step called directly (lookupBackend('stax')
   * in JS): a runner handle computing relu(x) + x */
  uint32_t r = tpw_backend_compile("stax", g, 1, &x, "max-autotune", 1, "f", 0, 0, NULL, NULL);
  CHECK(r != 0 && tpw_runner_call(r, 1, &x, &y, 1) == 1);
  float rv[6] = {0};
  CHECK(y && tpw_tensor_read(y, rv, sizeof rv) == 0 && rv[0] == -1 && rv[1] == 4 && rv[5] == 12);
  tpw_tensor_free(y);
  CHECK(tpw_tensor_free(r) != 0 && strstr(tpw_last_error(), "backend runner"));
  CHECK(tpw_runner_free(r) == 0 && tpw_runner_free(r) == 7 && tpw_runner_call(r, 1, &x, &y, 1) == -1);
  CHECK(tpw_backend_compile("stx", g, 1, &x, NULL, -1, NULL, 0, 0, NULL, NULL) == 0 && tpw_last_status() == 14);
  CHECK(tpw_backend_compile("stax", g, 1, &x, "fastest", -1, NULL, 0, 0, NULL, NULL) == 0 &&
        strstr(tpw_last_error(), "Unrecognized mode=fastest"));
  const char *okeys[1] = {"stax.fusio"};
  int32_t ovals[1] = {1};
  CHECK(tpw_backend_compile("stax", g, 1, &x, NULL, -1, NULL, 0, 1, okeys, ovals) == 0 &&
        strstr(tpw_last_error(), "stax.fusio"));
  CHECK(tpw_backend_compile("stax", g, 1, &x, NULL, 2, NULL, 0, 0, NULL, NULL) == 0 && tpw_last_status() == 1);
  CHECK(tpw_backend_compile("stax", x, 1, &x, NULL, -1, NULL, 0, 0, NULL, NULL) == 0 &&
        strstr(tpw_last_error(), "expected a graph"));
  CHECK(tpw_graph_free(g) == 0 && tpw_graph_free(g) == 7);
  CHECK(tpw_graph_parse("tpgraph v1\n%x = bogus\n", 22) == 0 && tpw_last_status() == 5);
  /* a handle of the wrong kind */
  CHECK(tpw_tensor_free(c) != 0 && strstr(tpw_last_error(), "compiled function"));
  CHECK(tpw_compiled_free(c) == 0);

  /* the host throws: the message arrives, nothing leaks, runtime usable */
  uint32_t cf = tpw_compile(2, opts, NULL, NULL);
  CHECK(tpw_compiled_call(cf, 1, &x, &y, 1) == -1 && tpw_last_status() == 8);
  CHECK(strstr(tpw_last_error(), "TypeError: boom") != NULL);
  tpw_compiled_free(cf);
  CHECK(tpw_compile(1, opts, "nope", NULL) == 0 && strstr(tpw_last_error(), "Invalid backend"));

  /* npy bytes round trip */
  intptr_t enc[2];
  CHECK(tpw_npy_encode(x, enc) == 0);
  uint32_t x2 = tpw_npy_decode((void *)enc[0], (int32_t)enc[1]);
  float back[6];
  CHECK(x2 && tpw_tensor_read(x2, back, sizeof back) == 0 && !memcmp(back, data, sizeof data));
  tpw_free((void *)enc[0]);
  tpw_tensor_free(x2);
  CHECK(tpw_npy_decode("garbage", 7) == 0 && tpw_last_status() == 5);

  tpw_tensor_free(x);
  CHECK(tpw_live_tensors() == base);
  printf("%s: %d failures\n", failures ? "FAIL" : "ok", failures);
  return failures != 0;
}
