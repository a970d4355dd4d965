/* test_emit.c - the SIMD128 emitter (src/codegen/wasm/emit*.c), natively.
 * The emitter is plain C, so the native build writes the same module bytes
 * a Wasm host would load. For representative plans (a pointwise chain with
 * every fused unary, row kernels, GEMMs with fused epilogues, a plan with a
 * kernel left to the core, the max-autotune GEMM variants) this lowers the
 * graph, emits the module, checks structural facts read back from the
 * bytes (functions, exports, imports) and validates the module with wabt's
 * wasm-validate (build/test-artifacts/emit_*.wasm). Without wasm-validate
 * the test skips (exit 77) after the structural checks.
 *
 * Running the generated code against the executor is the JS side's job
 * (tests/js/codegen.test.js); this test keeps the emitter honest in the
 * native build and under ASan. */
#include "codegen/wasm/emit.h"
#include "codegen/wasm/writer.h"
#include "lower/lower.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "check.h"

static char artifacts[1200];
static int have_validate;

static int have_tool(const char *name) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", name);
  return system(cmd) == 0;
}

/* ---- graph text with data ---- */
static void b64(tp_buf *b, const uint8_t *p, size_t n) {
  static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  for (size_t i = 0; i < n; i += 3) {
    uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
    tp_buf_putc(b, t[v >> 18 & 63]);
    tp_buf_putc(b, t[v >> 12 & 63]);
    tp_buf_putc(b, i + 1 < n ? t[v >> 6 & 63] : '=');
    tp_buf_putc(b, i + 2 < n ? t[v & 63] : '=');
  }
}

/* Appends "data %name f32[r,c] ..." with pseudo-random values. */
static void data_line(tp_buf *b, const char *name, int r, int c) {
  size_t n = (size_t)r * (size_t)(c > 0 ? c : 1);
  float *v = malloc(n * sizeof *v);
  uint32_t x = 12345;
  for (size_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    v[i] = (float)((x >> 8) & 0xffff) / 65536.0f - 0.5f;
  }
  if (c > 0) tp_buf_printf(b, "data %%%s f32[%d,%d] ", name, r, c);
  else tp_buf_printf(b, "data %%%s f32[%d] ", name, r);
  b64(b, (const uint8_t *)v, n * sizeof *v);
  tp_buf_putc(b, '\n');
  free(v);
}

/* graph text -> passes -> KIR program with a memory plan (NULL on failure) */
static tp_kir_program *lower(const char *text) {
  tp_graph *g = NULL, *lg = NULL;
  tp_kir_program *p = NULL;
  tp_lower_options o;
  tp_lower_options_init(&o);
  CHECK_OK(tp_graph_parse(text, strlen(text), &g));
  if (g) CHECK_OK(tp_run_passes(g, 0, NULL, NULL, &lg));
  if (lg) CHECK_OK(tp_schedule(lg, &o, &p));
  if (p && (tp_kir_verify(p) != TP_OK || tp_memplan(p) != TP_OK)) {
    CHECK(!"verify / memplan");
    tp_kir_program_free(p);
    p = NULL;
  }
  tp_graph_free(g);
  return p;
}

static int count_kind(const tp_kir_program *p, tp_kir_kind k) {
  int n = 0;
  for (int i = 0; i < p->nkernels; i++) n += p->kernels[i].kind == k;
  return n;
}

/* ---- what the module holds, read back from its bytes ---- */
typedef struct modinfo {
  int ok;                  /* the section structure parsed */
  int nimport_funcs, nfuncs, nexports, imports_memory;
  char exports[32][64];
  uint32_t export_func[32];
  char import_func[130];   /* module.name of the (one) imported function, "" if none */
} modinfo;

static int rd(const uint8_t *b, size_t n, size_t *at, uint64_t *v) {
  size_t k = tp_wasm_read_uleb(b + *at, n - *at, v);
  *at += k;
  return k > 0;
}

static modinfo read_module(const uint8_t *b, size_t n) {
  modinfo m;
  memset(&m, 0, sizeof m);
  if (n < 8 || memcmp(b, "\0asm\1\0\0\0", 8)) return m;
  size_t at = 8;
  while (at < n) {
    uint8_t id = b[at++];
    uint64_t size, count, len, kind, idx;
    if (!rd(b, n, &at, &size) || at + size > n) return m;
    size_t end = at + (size_t)size, q = at;
    if (id == 2 || id == 3 || id == 7) {
      if (!rd(b, end, &q, &count)) return m;
      for (uint64_t i = 0; i < count; i++) {
        if (id == 3) { /* function: type indices */
          if (!rd(b, end, &q, &idx)) return m;
          m.nfuncs++;
          continue;
        }
        char mod[64] = "", name[64] = "";
        if (id == 2) {
          if (!rd(b, end, &q, &len) || q + len > end) return m;
          snprintf(mod, sizeof mod, "%.*s", (int)len, (const char *)b + q);
          q += len;
        }
        if (!rd(b, end, &q, &len) || q + len > end) return m;
        snprintf(name, sizeof name, "%.*s", (int)len, (const char *)b + q);
        q += len;
        if (q >= end) return m;
        kind = b[q++];
        if (id == 2 && kind == 0) { /* func import: type */
          if (!rd(b, end, &q, &idx)) return m;
          snprintf(m.import_func, sizeof m.import_func, "%s.%s", mod, name);
          m.nimport_funcs++;
        } else if (id == 2 && kind == 2) { /* memory: limits */
          uint64_t flags, lim;
          if (!rd(b, end, &q, &flags) || !rd(b, end, &q, &lim)) return m;
          if (flags & 1 && !rd(b, end, &q, &lim)) return m;
          m.imports_memory = !strcmp(mod, "env") && !strcmp(name, "memory");
        } else if (id == 2) {
          return m; /* the emitter imports nothing else */
        } else {
          if (!rd(b, end, &q, &idx)) return m;
          if (m.nexports < 32) {
            snprintf(m.exports[m.nexports], sizeof m.exports[0], "%s", name);
            m.export_func[m.nexports] = (uint32_t)idx;
          }
          m.nexports++;
        }
      }
    }
    at = end;
  }
  m.ok = at == n;
  return m;
}

static int export_index(const modinfo *m, const char *name) {
  for (int i = 0; i < m->nexports && i < 32; i++)
    if (!strcmp(m->exports[i], name)) return i;
  return -1;
}

/* Writes the module to build/test-artifacts/emit_<name>.wasm and runs
 * wasm-validate on it (relaxed: with relaxed SIMD enabled). */
static void validate(const char *name, const tp_emitted *em, int relaxed) {
  char path[1300], cmd[1500];
  snprintf(path, sizeof path, "%s/emit_%s.wasm", artifacts, name);
  FILE *fp = fopen(path, "wb");
  CHECK(fp != NULL);
  if (!fp) return;
  CHECK(fwrite(em->bytes, 1, em->len, fp) == em->len);
  CHECK(fclose(fp) == 0);
  if (!have_validate) return;
  snprintf(cmd, sizeof cmd, "wasm-validate%s '%s'", relaxed ? " --enable-relaxed-simd" : "", path);
  int rc = system(cmd);
  if (rc != 0) printf("FAIL wasm-validate %s (exit %d)\n", path, rc);
  CHECK(rc == 0);
}

/* The module of tp_emit_wasm: kernels f0..f(n-1) and the run entry f<n> =
 * "run", after the imported functions; env.memory imported; the core's
 * env.tp_jit_kernel imported exactly when some kernel stays in C. */
static void check_module(const char *name, const tp_kir_program *p, const tp_emitted *em, int ngen,
                         int relaxed) {
  modinfo m = read_module(em->bytes, em->len);
  CHECK(m.ok);
  CHECK(em->nfuncs == ngen && em->run_func == ngen);
  CHECK(m.nfuncs == ngen + 1); /* the kernels and run */
  CHECK(m.nexports == ngen + 2);
  CHECK(m.imports_memory);
  int nhost = 0;
  for (int k = 0; k < p->nkernels; k++) {
    nhost += em->kernel_func[k] < 0;
    if (em->kernel_func[k] < 0) continue;
    char f[16];
    snprintf(f, sizeof f, "f%d", em->kernel_func[k]);
    int e = export_index(&m, f);
    CHECK(e >= 0 && m.export_func[e] == (uint32_t)(m.nimport_funcs + em->kernel_func[k]));
  }
  CHECK(nhost == p->nkernels - ngen);
  CHECK(m.nimport_funcs == (nhost ? 1 : 0));
  if (nhost) CHECK(!strcmp(m.import_func, "env.tp_jit_kernel"));
  char f[16];
  snprintf(f, sizeof f, "f%d", ngen);
  int r = export_index(&m, "run"), fr = export_index(&m, f);
  CHECK(r >= 0 && fr >= 0 && m.export_func[r] == m.export_func[fr]);
  CHECK(r >= 0 && m.export_func[r] == (uint32_t)(m.nimport_funcs + ngen));
  validate(name, em, relaxed);
}

/* Lowers text, emits it (plain, with relaxed SIMD, and with the map
 * kernels taking a row range as the threads core emits them), checks and
 * validates each; returns the program (caller frees) for more checks. */
static tp_kir_program *emit_both(const char *name, const char *text, int ngen) {
  tp_kir_program *p = lower(text);
  if (!p) return NULL;
  for (int v = 0; v < 3; v++) {
    int relaxed = v == 1;
    tp_emit_options o = {relaxed, 0, NULL, NULL, 0, 0, v == 2};
    tp_emitted em;
    tp_status s = tp_emit_wasm(p, &o, &em);
    CHECK_OK(s);
    if (s) continue;
    char nm[64];
    snprintf(nm, sizeof nm, "%s%s", name, relaxed ? "_relaxed" : v == 2 ? "_rows" : "");
    check_module(nm, p, &em, ngen, relaxed);
    tp_emitted_clear(&em);
  }
  return p;
}

/* ---- the plans ---- */
static void test_pointwise(void) {
  /* every fused unary of the fast family in one chain, a broadcast operand,
   * a length that leaves a tail (37 = 4 x 9 + 1) */
  const char *text =
      "tpgraph v1\n"
      "%x = placeholder : f32[3,37]\n"
      "%y = placeholder : f32[37]\n"
      "%0 = exp(%x) : f32[3,37]\n"
      "%1 = log(%0) : f32[3,37]\n"
      "%2 = tanh(%1) : f32[3,37]\n"
      "%3 = sigmoid(%2) : f32[3,37]\n"
      "%4 = gelu(%3, approximate=none) : f32[3,37]\n"
      "%5 = gelu(%4, approximate=tanh) : f32[3,37]\n"
      "%6 = relu(%5) : f32[3,37]\n"
      "%7 = add(%6, %y) : f32[3,37]\n"
      "%8 = sqrt(%7) : f32[3,37]\n"
      "%9 = rsqrt(%8) : f32[3,37]\n"
      "%10 = abs(%9) : f32[3,37]\n"
      "%11 = neg(%10) : f32[3,37]\n"
      "%12 = mul(%11, 1.5) : f32[3,37]\n"
      "%13 = div(%12, %x) : f32[3,37]\n"
      "output(%13)\n";
  tp_kir_program *p = emit_both("pointwise", text, 1);
  if (!p) return;
  CHECK(p->nkernels == 1 && count_kind(p, TP_KK_POINTWISE) == 1);
  /* the dump names the kernel */
  tp_emit_options o = {0, 1, NULL, NULL, 0, 0, 0};
  tp_emitted em;
  CHECK_OK(tp_emit_wasm(p, &o, &em));
  CHECK(em.dump && strstr(em.dump, "kernel k0_pointwise") && strstr(em.dump, "export 'run'"));
  tp_emitted_clear(&em);
  /* every kernel left to the core: nothing to emit */
  uint8_t host[1] = {1};
  tp_emit_options all_host = {0, 0, host, NULL, 0, 0, 0};
  CHECK(tp_emit_wasm(p, &all_host, &em) == TP_ERR_UNSUPPORTED);
  CHECK(em.bytes == NULL && em.kernel_func == NULL);
  tp_kir_program_free(p);
}

static void test_rows(void) {
  const char *text =
      "tpgraph v1\n"
      "%x = placeholder : f32[5,19]\n"
      "%0 = softmax(%x, dim=-1) : f32[5,19]\n"
      "%1 = log_softmax(%x, dim=-1) : f32[5,19]\n"
      "%2 = layer_norm(%x, none, none, normalized_shape=[19], eps=1e-05) : f32[5,19]\n"
      "%3 = sum(%x, dims=[1], keepdim=true) : f32[5,1]\n"
      "%4 = mean(%x, dims=[1], keepdim=true) : f32[5,1]\n"
      "%5 = max(%x, dims=[1], keepdim=true) : f32[5,1]\n"
      "output(%0, %1, %2, %3, %4, %5)\n";
  tp_kir_program *p = emit_both("rows", text, 6);
  if (!p) return;
  CHECK(p->nkernels == 6 && count_kind(p, TP_KK_ROW) == 6);
  tp_kir_program_free(p);
}

static void test_gemm(void) {
  /* linear + bias + tanh-GELU + a residual, N = 21 (a partial panel of 8),
   * M = 7 (a partial tile of 4 rows); then K = 300 (two depth blocks) */
  tp_buf b = {0};
  tp_buf_puts(&b,
              "tpgraph v1\n"
              "%x = placeholder : f32[7,33]\n"
              "%w = get_attr \"w\" : f32[21,33]\n"
              "%b = get_attr \"b\" : f32[21]\n"
              "%r = placeholder : f32[7,21]\n"
              "%0 = linear(%x, %w, %b) : f32[7,21]\n"
              "%1 = gelu(%0, approximate=tanh) : f32[7,21]\n"
              "%2 = add(%1, %r) : f32[7,21]\n"
              "output(%2)\n");
  data_line(&b, "w", 21, 33);
  data_line(&b, "b", 21, 0);
  CHECK(!b.oom);
  tp_kir_program *p = emit_both("gemm_epilogue", b.p, 1);
  tp_buf_free(&b);
  if (p) {
    CHECK(p->nkernels == 1 && count_kind(p, TP_KK_GEMM) == 1);
    CHECK(p->kernels[0].b_const && p->kernels[0].bias_buf >= 0 && p->kernels[0].expr.n > 1);
    /* max-autotune's variants: 2, 3 and 4 tile rows, exported f0..f2 */
    const int mrs[3] = {2, 3, 4};
    tp_emitted em;
    CHECK_OK(tp_emit_gemm_variants(p, NULL, 0, 3, mrs, &em));
    if (em.bytes) {
      modinfo m = read_module(em.bytes, em.len);
      CHECK(m.ok && em.nfuncs == 3 && m.nfuncs == 3 && m.nexports == 3 && m.nimport_funcs == 0);
      CHECK(export_index(&m, "f0") >= 0 && export_index(&m, "f2") >= 0 && export_index(&m, "run") < 0);
      validate("gemm_variants", &em, 0);
    }
    tp_emitted_clear(&em);
    CHECK(tp_emit_gemm_variants(p, NULL, 1, 3, mrs, &em) == TP_ERR_UNSUPPORTED);
    tp_kir_program_free(p);
  }
  memset(&b, 0, sizeof b);
  tp_buf_puts(&b,
              "tpgraph v1\n"
              "%x = placeholder : f32[64,300]\n"
              "%w = get_attr \"w\" : f32[300,40]\n"
              "%0 = matmul(%x, %w) : f32[64,40]\n"
              "%1 = sigmoid(%0) : f32[64,40]\n"
              "output(%1)\n");
  data_line(&b, "w", 300, 40);
  p = emit_both("gemm_deep", b.p, 1);
  tp_buf_free(&b);
  if (p) CHECK(count_kind(p, TP_KK_GEMM) == 1 && p->kernels[0].K == 300);
  tp_kir_program_free(p);
}

static void test_mixed(void) {
  /* floor has no Kernel IR form: an op kernel the run entry hands back to
   * the core (env.tp_jit_kernel) between two generated kernels */
  const char *text =
      "tpgraph v1\n"
      "%x = placeholder : f32[4,10]\n"
      "%0 = mul(%x, 3.5) : f32[4,10]\n"
      "%1 = floor(%0) : f32[4,10]\n"
      "%2 = tanh(%1) : f32[4,10]\n"
      "output(%2)\n";
  tp_kir_program *p = emit_both("mixed", text, 2);
  if (!p) return;
  CHECK(p->nkernels == 3 && count_kind(p, TP_KK_OP) == 1 && count_kind(p, TP_KK_POINTWISE) == 2);
  tp_kir_program_free(p);
}

/* params (emit.h): the numbers in a parameter block. The same graph at two
 * sizes of its dims (a GEMM's M, a pointwise and a mean over rows of
 * dynamic length, 1/L) gives the same module bytes with params, with
 * different blocks; without params the bytes differ. Both validate. */
static tp_kir_program *sized(int64_t S, int64_t L) {
  tp_buf b = {0};
  tp_buf_printf(&b,
                "tpgraph v1\n"
                "%%x = placeholder : f32[%lld,33]\n"
                "%%y = placeholder : f32[3,%lld]\n"
                "%%w = get_attr \"w\" : f32[21,33]\n"
                "%%b = get_attr \"b\" : f32[21]\n"
                "%%0 = linear(%%x, %%w, %%b) : f32[%lld,21]\n"
                "%%1 = softmax(%%0, dim=-1) : f32[%lld,21]\n"
                "%%2 = relu(%%y) : f32[3,%lld]\n"
                "%%3 = mean(%%y, dims=[1], keepdim=true) : f32[3,1]\n"
                "%%4 = mul(%%2, %%3) : f32[3,%lld]\n"
                "output(%%1, %%4)\n",
                (long long)S, (long long)L, (long long)S, (long long)S, (long long)L, (long long)L);
  data_line(&b, "w", 21, 33);
  data_line(&b, "b", 21, 0);
  CHECK(!b.oom);
  tp_kir_program *p = lower(b.p);
  tp_buf_free(&b);
  return p;
}

static void test_params(void) {
  tp_kir_program *a = sized(37, 29), *c = sized(70, 54);
  if (!a || !c) {
    tp_kir_program_free(a), tp_kir_program_free(c);
    return;
  }
  CHECK(count_kind(a, TP_KK_GEMM) == 1 && count_kind(a, TP_KK_ROW) >= 1);
  tp_emitted ea, ec, pa, pc;
  tp_emit_options plain = {0, 0, NULL, NULL, 0, 0, 0}, params = {0, 0, NULL, NULL, 1, 0, 0};
  CHECK_OK(tp_emit_wasm(a, &plain, &pa));
  CHECK_OK(tp_emit_wasm(c, &plain, &pc));
  CHECK_OK(tp_emit_wasm(a, &params, &ea));
  CHECK_OK(tp_emit_wasm(c, &params, &ec));
  if (ea.bytes && ec.bytes && pa.bytes && pc.bytes) {
    CHECKF(pa.len != pc.len || memcmp(pa.bytes, pc.bytes, pa.len), "without params the sizes are baked in");
    CHECK(!pa.params && !pc.params);
    CHECKF(ea.len == ec.len && !memcmp(ea.bytes, ec.bytes, ea.len), "with params one module: %zu and %zu bytes",
           ea.len, ec.len);
    CHECKF(ea.params && ec.params && ea.params_len == ec.params_len && ea.params_len > 4 &&
               memcmp(ea.params, ec.params, ea.params_len),
           "the blocks hold each size's numbers: %zu and %zu bytes", ea.params_len, ec.params_len);
    int32_t want = 37, found = 0; /* M of the GEMM at 37 rows: a number of the block */
    for (size_t i = 0; i + 4 <= ea.params_len && !found; i += 4) found = !memcmp(ea.params + i, &want, 4);
    CHECK(found);
    check_module("params", a, &ea, ea.nfuncs, 0);
    /* the signature: the same for both sizes, and the first pass alone
     * (block_only) gives it and the same block as the whole emission */
    CHECK(ea.sig && ea.sig == ec.sig && !pa.sig);
    tp_emit_options bo = {0, 0, NULL, NULL, 1, 1, 0};
    tp_emitted bc;
    CHECK_OK(tp_emit_wasm(c, &bo, &bc));
    CHECKF(!bc.bytes && bc.sig == ec.sig && bc.params_len == ec.params_len &&
               !memcmp(bc.params, ec.params, ec.params_len),
           "block_only: signature %llx vs %llx, block %zu vs %zu bytes", (unsigned long long)bc.sig,
           (unsigned long long)ec.sig, bc.params_len, ec.params_len);
    tp_emitted_clear(&bc);
  }
  tp_emitted_clear(&ea), tp_emitted_clear(&ec), tp_emitted_clear(&pa), tp_emitted_clear(&pc);
  tp_kir_program_free(a), tp_kir_program_free(c);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  const char *src = getenv("TP_SOURCE_DIR");
#ifdef TP_SOURCE_DIR
  if (!src) src = TP_SOURCE_DIR;
#endif
  if (!src) src = ".";
  char build[1100];
  snprintf(build, sizeof build, "%s/build", src);
  snprintf(artifacts, sizeof artifacts, "%s/build/test-artifacts", src);
  if ((mkdir(build, 0777) && errno != EEXIST) || (mkdir(artifacts, 0777) && errno != EEXIST)) {
    printf("cannot create %s: %s\n", artifacts, strerror(errno));
    return 1;
  }
  have_validate = have_tool("wasm-validate");
  test_pointwise();
  test_rows();
  test_gemm();
  test_mixed();
  test_params();
  if (failures) {
    printf("%d failure(s)\n", failures);
    return 1;
  }
  if (!have_validate) {
    printf("SKIP wasm-validate not found (Debian: wabt): structure checked, modules not validated\n");
    return 77;
  }
  printf("ok\n");
  return 0;
}
