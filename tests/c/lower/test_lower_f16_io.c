/* test_lower_f16_io.c - float16 loads and stores in the Kernel IR (issue 17):
 * on stax a cast of a float16 buffer to float32 is a load that converts in
 * the kernel reading it, and a cast of a float32 value to float16 is the
 * store of the kernel computing it (rounded to nearest even, as ONNX Cast):
 * no cast kernels, no float32 copies (schedule.c try_cast_h16, executor.c
 * slot_at / store_h16). Every case runs through the public API (tp_lower,
 * tp_plan_run, inputs fed at run time) on every ISA table, and is compared
 *   - with a scalar oracle where one is written here (the float32 formula
 *     on the converted inputs, rounded once by tp_f32_to_f16): bit for bit;
 *   - with the graph executor (eager cast kernels, the same float32
 *     operations): bit for bit where the ops are exact roundings (add, mul,
 *     the conversions, min, max), within 1 float16 ulp for softmax (its exp
 *     is the fast family on stax) and 2^-20 relative for float32 outputs of
 *     a GEMM (the summation order);
 * and the plan has no op kernel. Pointwise kernels with long rows, short
 * (gathered, strided) rows, broadcast loads, a row kernel (softmax), the
 * one-pass min/max, a GEMM and a float16 residual (kept out of the GEMM's
 * epilogue: a pointwise kernel after it, as generated Wasm GEMMs read
 * float32 only), threads
 * (the same bits on 1-4), and the special values (NaN, infinities, overflow
 * to infinity, subnormals, ties). */
#include "core/num.h"
#include "lower/lower.h"
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "check.h"

static const char *const isas[] = {"avx512", "avx2", "sse2", "generic"};

/* a float16 tensor from a fixed sequence (special: the float16 specials in
 * some lanes) */
static tp_tensor *half_input(int nd, const int64_t *shape, int seed, int special) {
  static const uint16_t sp[] = {0x7e00, 0x7c00, 0xfc00, 0x0001, 0x8001, 0x03ff, 0x7bff, 0xfbff, 0x0000, 0x8000};
  tp_tensor *t = NULL;
  if (tp_tensor_new(TP_F16, nd, shape, NULL, &t) != TP_OK) return NULL;
  uint16_t *h = tp_tensor_ptr(t);
  int64_t n = tp_shape_numel(nd, shape);
  for (int64_t i = 0; i < n; i++) {
    h[i] = tp_f64_to_f16(sin((double)(i * 7 + seed)) * 3.0);
    if (special && i % 13 == 5) h[i] = sp[(i / 13) % 10];
  }
  return t;
}

static int op_kernels(const tp_kir_program *p) {
  int n = 0;
  for (int i = 0; i < p->nkernels; i++) n += p->kernels[i].kind == TP_KK_OP;
  return n;
}

static int f16_ulps(uint16_t a, uint16_t b) {
  if ((a & 0x7c00) == 0x7c00 && (a & 0x3ff) && (b & 0x7c00) == 0x7c00 && (b & 0x3ff)) return 0; /* both NaN */
  int ia = a & 0x8000 ? -(a & 0x7fff) : a, ib = b & 0x8000 ? -(b & 0x7fff) : b;
  return ia > ib ? ia - ib : ib - ia;
}

typedef uint16_t (*oracle_fn)(tp_tensor *const *in, int64_t i);

/* Runs text on stax and eagerly with inputs in; output 0 compared element
 * by element (tol: float16 ulps, or relative for a float32 output). */
static void one_case(const char *name, const char *text, int nin, tp_tensor *const *in, oracle_fn oracle, double tol) {
  tp_graph *g = NULL;
  if (tp_graph_parse(text, strlen(text), &g) != TP_OK) {
    FAILF("%s: parse: %s", name, tp_last_error());
    return;
  }
  for (int is = 0; is < 4; is++) {
    if (tp_set_isa(isas[is]) != TP_OK) continue;
    tp_plan *pl = NULL;
    tp_tensor *y = NULL, *e = NULL;
    int n;
    if (tp_lower(g, NULL, &pl) != TP_OK) {
      FAILF("%s: lower: %s", name, tp_last_error());
      break;
    }
    int ops = op_kernels(tp_plan_program(pl));
    CHECKF(ops == 0, "%s (%s): %d op kernels (want none)", name, isas[is], ops);
    CHECK_OK(tp_plan_run(pl, nin, in, 1, &y, &n));
    CHECK_OK(tp_graph_run(g, nin, in, 1, &e, &n));
    if (y && e) {
      int64_t cnt = tp_tensor_numel(y);
      int bad = 0;
      for (int64_t i = 0; i < cnt && bad < 3; i++) {
        if (y->dtype == TP_F16) {
          uint16_t a = ((const uint16_t *)tp_tensor_ptr(y))[i], b = ((const uint16_t *)tp_tensor_ptr(e))[i];
          int u = f16_ulps(a, b);
          if (u > tol) {
            FAILF("%s (%s) [%lld]: stax %04x, eager %04x (%d ulps)", name, isas[is], (long long)i, a, b, u);
            bad++;
          }
          if (oracle) {
            uint16_t o = oracle(in, i);
            if (f16_ulps(a, o) != 0) {
              FAILF("%s (%s) [%lld]: stax %04x, oracle %04x", name, isas[is], (long long)i, a, o);
              bad++;
            }
          }
        } else {
          double a = tp_tensor_get_f64(y, i), b = tp_tensor_get_f64(e, i);
          if (!(fabs(a - b) <= tol * fabs(b) + 1e-6)) {
            FAILF("%s (%s) [%lld]: stax %.9g, eager %.9g", name, isas[is], (long long)i, a, b);
            bad++;
          }
        }
        checks++;
      }
    }
    tp_tensor_release(y), tp_tensor_release(e);
    tp_plan_free(pl);
  }
  tp_set_isa("best");
  tp_graph_free(g);
}

/* y = f16(x * 1.5 + z), z broadcast along the rows */
static uint16_t o_affine(tp_tensor *const *in, int64_t i) {
  const uint16_t *x = tp_tensor_ptr(in[0]), *z = tp_tensor_ptr(in[1]);
  int64_t cols = in[1]->shape[0];
  float v = tp_f16_to_f32(x[i]) * 1.5f;
  return tp_f32_to_f16(v + tp_f16_to_f32(z[i % cols]));
}

/* y[i, j] = f16(2 x[j, i]) of x [3, 64] (y [64, 3]) */
static uint16_t o_transposed(tp_tensor *const *in, int64_t i) {
  const uint16_t *x = tp_tensor_ptr(in[0]);
  int64_t r = i / 3, c = i % 3;
  return tp_f32_to_f16(tp_f16_to_f32(x[c * 64 + r]) * 2.0f);
}

/* float32 x -> f16(x * 2): overflow, ties, subnormals, NaN */
static uint16_t o_store(tp_tensor *const *in, int64_t i) {
  return tp_f32_to_f16(((const float *)tp_tensor_ptr(in[0]))[i] * 2.0f);
}

static uint16_t o_minmax(tp_tensor *const *in, int64_t i) {
  const uint16_t *x = tp_tensor_ptr(in[0]);
  int64_t n = tp_tensor_numel(in[0]);
  float lo = INFINITY, hi = -INFINITY;
  for (int64_t k = 0; k < n; k++) {
    float v = tp_f16_to_f32(x[k]) * 3.0f;
    lo = v < lo ? v : lo, hi = v > hi ? v : hi;
  }
  (void)i;
  return tp_f32_to_f16(hi - lo);
}

/* A large float16 pointwise kernel split over 1-4 threads: the same bits. */
static void threads_case(void) {
  const char *text = "tpgraph v1\n%x = placeholder : f16[300,1000]\n%a = cast(%x, dtype=f32) : f32[300,1000]\n"
                     "%b = mul(%a, 0.75) : f32[300,1000]\n%c = tanh(%b) : f32[300,1000]\n"
                     "%y = cast(%c, dtype=f16) : f16[300,1000]\noutput(%y)\n";
  tp_graph *g = NULL;
  int64_t xs[2] = {300, 1000};
  tp_tensor *x = half_input(2, xs, 11, 1), *first = NULL;
  tp_plan *pl = NULL;
  if (tp_graph_parse(text, strlen(text), &g) != TP_OK || !x) FAILF("threads: setup: %s", tp_last_error());
  else CHECK_OK(tp_lower(g, NULL, &pl));
  for (int t = 1; t <= 4 && pl; t++) {
    tp_tensor *y = NULL;
    int n;
    CHECK_OK(tp_config_set(TP_CFG_THREADS, tp_value_int(t)));
    CHECK_OK(tp_plan_run(pl, 1, &x, 1, &y, &n));
    if (!y) break;
    if (!first) {
      first = y;
      continue;
    }
    CHECKF(!memcmp(tp_tensor_ptr(first), tp_tensor_ptr(y), 2 * 300 * 1000), "float16 pointwise on %d threads: bits differ from 1 thread", t);
    tp_tensor_release(y);
  }
  tp_config_set(TP_CFG_THREADS, tp_value_int(1));
  tp_tensor_release(first), tp_tensor_release(x);
  tp_plan_free(pl);
  tp_graph_free(g);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  size_t base = tp_live_tensors();
  int64_t s1[2] = {37, 300}, s2[1] = {300}, s3[2] = {3, 64}, s4[2] = {8, 200}, s5[2] = {5, 24}, s6[2] = {5, 16};
  int64_t s7[2] = {16, 24};
  tp_tensor *x1 = half_input(2, s1, 1, 1), *z1 = half_input(1, s2, 2, 0), *x3 = half_input(2, s3, 3, 1);
  tp_tensor *x4 = half_input(2, s4, 4, 0), *r5 = half_input(2, s5, 5, 0), *a6 = NULL, *w7 = NULL, *f8 = NULL;
  tp_randn(2, s6, 6, &a6);
  tp_randn(2, s7, 7, &w7);
  int64_t n8 = 4096 + 77;
  tp_tensor_new(TP_F32, 1, &n8, NULL, &f8);
  if (f8) { /* float32 values that round in every way once doubled */
    float *f = tp_tensor_ptr(f8);
    static const float sp[] = {32752.0f, 32768.0f, 40000.0f, -40000.0f, NAN, INFINITY, -INFINITY, 3e-8f, -3e-8f,
                               2.98e-8f, 1e-10f, 0.0f, -0.0f, 1.00048828125f / 2, 1.000732421875f / 2, 6.1e-5f};
    for (int64_t i = 0; i < n8; i++) f[i] = i % 7 == 3 ? sp[(i / 7) % 16] : (float)(sin((double)i) * 1000.0);
  }
  tp_tensor *in1[2] = {x1, z1};
  one_case("pointwise, broadcast load, float16 store",
           "tpgraph v1\n%x = placeholder : f16[37,300]\n%z = placeholder : f16[300]\n"
           "%a = cast(%x, dtype=f32) : f32[37,300]\n%b = cast(%z, dtype=f32) : f32[300]\n"
           "%c = mul(%a, 1.5) : f32[37,300]\n%d = add(%c, %b) : f32[37,300]\n%y = cast(%d, dtype=f16) : f16[37,300]\noutput(%y)\n",
           2, in1, o_affine, 0);
  one_case("short rows (a transpose gathered)",
           "tpgraph v1\n%x = placeholder : f16[3,64]\n%a = cast(%x, dtype=f32) : f32[3,64]\n"
           "%t = transpose(%a, dim0=0, dim1=1) : f32[64,3]\n%c = mul(%t, 2.0) : f32[64,3]\n"
           "%y = cast(%c, dtype=f16) : f16[64,3]\noutput(%y)\n",
           1, &x3, o_transposed, 0);
  one_case("float32 to float16 store: overflow, ties, subnormals, NaN",
           "tpgraph v1\n%x = placeholder : f32[4173]\n%c = mul(%x, 2.0) : f32[4173]\n"
           "%y = cast(%c, dtype=f16) : f16[4173]\noutput(%y)\n",
           1, &f8, o_store, 0);
  one_case("softmax row kernel over a float16 load",
           "tpgraph v1\n%x = placeholder : f16[8,200]\n%a = cast(%x, dtype=f32) : f32[8,200]\n"
           "%s = softmax(%a, dim=-1) : f32[8,200]\n%y = cast(%s, dtype=f16) : f16[8,200]\noutput(%y)\n",
           1, &x4, NULL, 1);
  one_case("min and max in one pass over a float16 load",
           "tpgraph v1\n%x = placeholder : f16[8,200]\n%a = cast(%x, dtype=f32) : f32[8,200]\n%b = mul(%a, 3.0) : f32[8,200]\n"
           "%1 = max(%b, dims=[], keepdim=false) : f32[]\n%2 = min(%b, dims=[], keepdim=false) : f32[]\n"
           "%3 = sub(%1, %2) : f32[]\n%y = cast(%3, dtype=f16) : f16[]\noutput(%y)\n",
           1, &x4, o_minmax, 0);
  one_case("GEMM, then a float16 residual",
           "tpgraph v1\n%a = placeholder : f32[5,16]\n%r = placeholder : f16[5,24]\n%w = placeholder : f32[16,24]\n"
           "%m = matmul(%a, %w) : f32[5,24]\n%rr = cast(%r, dtype=f32) : f32[5,24]\n%y = add(%m, %rr) : f32[5,24]\noutput(%y)\n",
           3, (tp_tensor *[]){a6, r5, w7}, NULL, 1.0 / (1 << 20));
  /* a float16 temporary of 2N elements whose first half is read as float32
   * (N elements, the same bytes): never computed in place (the memory
   * plan's in-place rule wants one dtype; in place, chunk 0's float32
   * stores overwrote float16 elements chunks 1-3 still had to read) */
  {
    int64_t sx[2] = {2, 1024}, sw[2] = {1024, 8};
    tp_tensor *xa = NULL, *wa = NULL;
    tp_randn(2, sx, 8, &xa);
    tp_randn(2, sw, 9, &wa);
    one_case("float16 temporary, half of it loaded as float32",
             "tpgraph v1\n%x = placeholder : f32[2,1024]\n%w = placeholder : f32[1024,8]\n%a = mul(%x, 2.0) : f32[2,1024]\n"
             "%h = cast(%a, dtype=f16) : f16[2,1024]\n%s = slice(%h, dim=0, start=0, end=1, step=1) : f16[1,1024]\n"
             "%f = cast(%s, dtype=f32) : f32[1,1024]\n%d = mul(%f, 3.0) : f32[1,1024]\n%m = matmul(%d, %w) : f32[1,8]\noutput(%m)\n",
             2, (tp_tensor *[]){xa, wa}, NULL, 1.0 / (1 << 20));
    tp_tensor_release(xa), tp_tensor_release(wa);
  }
  threads_case();
  tp_tensor_release(x1), tp_tensor_release(z1), tp_tensor_release(x3), tp_tensor_release(x4);
  tp_tensor_release(r5), tp_tensor_release(a6), tp_tensor_release(w7), tp_tensor_release(f8);
  if (tp_live_tensors() != base) FAILF("%zu tensors leaked", tp_live_tensors() - base);
  printf("test_lower_f16_io: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
