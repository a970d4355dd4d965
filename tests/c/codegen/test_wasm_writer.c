/* test_wasm_writer.c - the Wasm binary writer (src/codegen/wasm):
 *   1. LEB128 golden encodings (and decoding back);
 *   2. a tiny module (exported i32 add) byte-for-byte against a hand-written
 *      array, and its annotated dump;
 *   3. a SIMD module (y[i] = x[i] * a + b over n floats, f32x4 body and
 *      scalar tail, memory imported as env.memory) checked by wabt's
 *      wasm-validate, written to build/test-artifacts/ for
 *      tests/js/wasm_writer.test.js, which runs it in Node; the same with
 *      f32x4.relaxed_madd;
 *   4. every opcode of opcodes.def with a fixed signature, one function
 *      each, validated by wasm-validate and named back by wasm2wat (so the
 *      table's encodings and names agree with wabt's);
 *   5. the emit-time checks: wrong operand types, wrong stack height at end,
 *      bad indices, lanes, alignment, sticky errors; valid control flow
 *      (if/else, multi-value block, br_if with a value, br_table, select,
 *      unreachable code, calls, call_indirect) validated by wabt.
 * Every module validated also goes through wasm2wat | wat2wasm and must
 * come back as the same bytes.
 * Parts needing wabt print a message and are skipped when it is missing. */
#include "codegen/wasm/writer.h"
#include "core/internal.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "check.h"

static int skipped;
#define OK(e) CHECK((e) == TP_OK)

static const uint8_t I32 = TP_WASM_I32, F32 = TP_WASM_F32, V128 = TP_WASM_V128;

/* ---- 1. LEB128 ---- */
static void check_uleb(uint64_t v, const uint8_t *want, size_t n) {
  tp_wasm_buf b = {0};
  OK(tp_wasm_write_uleb(&b, v));
  int same = b.n == n && !memcmp((const uint8_t *)b.p, want, n);
  if (!same) {
    printf("FAIL uleb %llu: got", (unsigned long long)v);
    for (size_t i = 0; i < b.n; i++) printf(" %02x", ((const uint8_t *)b.p)[i]);
    printf("\n");
    failures++;
  }
  uint64_t back = 0;
  CHECK(tp_wasm_read_uleb((const uint8_t *)b.p, b.n, &back) == n && back == v);
  tp_wasm_buf_free(&b);
}

static void check_sleb(int64_t v, const uint8_t *want, size_t n) {
  tp_wasm_buf b = {0};
  OK(tp_wasm_write_sleb(&b, v));
  int same = b.n == n && !memcmp((const uint8_t *)b.p, want, n);
  if (!same) {
    printf("FAIL sleb %lld: got", (long long)v);
    for (size_t i = 0; i < b.n; i++) printf(" %02x", ((const uint8_t *)b.p)[i]);
    printf("\n");
    failures++;
  }
  int64_t back = 0;
  CHECK(tp_wasm_read_sleb((const uint8_t *)b.p, b.n, &back) == n && back == v);
  tp_wasm_buf_free(&b);
}

#define U(v, ...) check_uleb(v, (const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__}))
#define S(v, ...) check_sleb(v, (const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__}))

static void test_leb(void) {
  U(0, 0x00);
  U(1, 0x01);
  U(127, 0x7f);
  U(128, 0x80, 0x01);
  U(255, 0xff, 0x01);
  U(16383, 0xff, 0x7f);
  U(16384, 0x80, 0x80, 0x01);
  U(624485, 0xe5, 0x8e, 0x26);
  U(UINT32_MAX, 0xff, 0xff, 0xff, 0xff, 0x0f);
  U((uint64_t)1 << 32, 0x80, 0x80, 0x80, 0x80, 0x10);
  U(UINT64_MAX, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01);
  S(0, 0x00);
  S(1, 0x01);
  S(-1, 0x7f);
  S(63, 0x3f);
  S(64, 0xc0, 0x00);
  S(-64, 0x40);
  S(-65, 0xbf, 0x7f);
  S(127, 0xff, 0x00);
  S(-128, 0x80, 0x7f);
  S(-123456, 0xc0, 0xbb, 0x78);
  S(INT32_MAX, 0xff, 0xff, 0xff, 0xff, 0x07);
  S(INT32_MIN, 0x80, 0x80, 0x80, 0x80, 0x78);
  S(INT64_MAX, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00);
  S(INT64_MIN, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f);
  /* padded placeholders decode to the same value */
  tp_wasm_buf b = {0};
  OK(tp_wasm_write_uleb_padded(&b, 0, 5));
  OK(tp_wasm_write_uleb_padded(&b, 624485, 5));
  const uint8_t want[10] = {0x80, 0x80, 0x80, 0x80, 0x00, 0xe5, 0x8e, 0xa6, 0x80, 0x00};
  CHECK(b.n == 10 && !memcmp((const uint8_t *)b.p, want, 10));
  uint64_t v = 1;
  CHECK(tp_wasm_read_uleb((const uint8_t *)b.p, 5, &v) == 5 && v == 0);
  CHECK(tp_wasm_read_uleb((const uint8_t *)b.p + 5, 5, &v) == 5 && v == 624485);
  CHECK(tp_wasm_write_uleb_padded(&b, 128, 1) == TP_ERR_INTERNAL); /* does not fit */
  CHECK(tp_wasm_read_uleb(want, 3, &v) == 0);                      /* truncated */
  tp_wasm_buf_free(&b);
}

/* ---- 2. the tiny module ---- */
static void test_tiny_module(void) {
  tp_wasm_module *m;
  tp_wasm_func *f;
  uint32_t t, fi;
  OK(tp_wasm_module_init(&m));
  OK(tp_wasm_module_add_type(m, 2, (const uint8_t[]){I32, I32}, 1, &I32, &t));
  CHECK(t == 0);
  uint32_t t2;
  OK(tp_wasm_module_add_type(m, 2, (const uint8_t[]){I32, I32}, 1, &I32, &t2));
  CHECK(t2 == 0); /* shared */
  OK(tp_wasm_func_begin(m, t, "add", &f, &fi));
  CHECK(fi == 0);
  OK(tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, 0));
  OK(tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, 1));
  OK(tp_wasm_emit(f, TP_WASM_OP_I32_ADD));
  OK(tp_wasm_func_end(f));
  OK(tp_wasm_module_export_func(m, "add", fi));
  const uint8_t *bytes;
  size_t len;
  OK(tp_wasm_module_finish(m, &bytes, &len));
  static const uint8_t want[] = {
      0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,       /* \0asm, version 1 */
      0x01, 0x07, 0x01, 0x60, 0x02, 0x7f, 0x7f, 0x01, 0x7f, /* type: (i32 i32) -> i32 */
      0x03, 0x02, 0x01, 0x00,                               /* function: type 0 */
      0x07, 0x07, 0x01, 0x03, 'a', 'd', 'd', 0x00, 0x00,    /* export "add" func 0 */
      0x0a, 0x09, 0x01, 0x07, 0x00,                         /* code: 1 body, 7 bytes, no locals */
      0x20, 0x00, 0x20, 0x01, 0x6a, 0x0b,                   /* local.get 0 1, i32.add, end */
  };
  CHECK(len == sizeof want && !memcmp(bytes, want, len));
  if (len != sizeof want || memcmp(bytes, want, len)) {
    printf("got:");
    for (size_t i = 0; i < len; i++) printf(" %02x", bytes[i]);
    printf("\n");
  }
  /* finishing twice gives the same bytes */
  const uint8_t *again;
  size_t len2;
  OK(tp_wasm_module_finish(m, &again, &len2));
  CHECK(len2 == len && !memcmp(again, want, len2 < sizeof want ? len2 : sizeof want));

  const tp_wasm_label *labels;
  size_t nl;
  tp_wasm_module_labels(m, &labels, &nl);
  CHECK(nl > 5);
  int saw_code = 0, saw_body = 0;
  for (size_t i = 0; i < nl; i++) {
    if (!strcmp(labels[i].text, "section code (id 10)")) saw_code = labels[i].offset == 30;
    if (!strcmp(labels[i].text, "func 0 'add': body")) saw_body = labels[i].offset == 33;
    if (i) CHECK(labels[i].offset >= labels[i - 1].offset);
  }
  CHECK(saw_code);
  CHECK(saw_body);
  char *text = NULL;
  OK(tp_wasm_dump(again, len2, labels, nl, &text));
  CHECK(text && strstr(text, "000000: 00 61 73 6d 01 00 00 00"));
  CHECK(text && strstr(text, "00001e: 0a 09"));
  CHECK(text && strstr(text, "; section export (id 7)"));
  CHECK(text && strstr(text, "; type 0: (i32, i32) -> (i32)"));
  CHECK(text && strstr(text, "00002b: 0b") == NULL); /* `end` is inside the code line */
  if (getenv("TP_WASM_DUMP")) printf("%s", text);
  tp_free(text);
  OK(tp_wasm_dump(again, len2, NULL, 0, &text));
  CHECK(text && strstr(text, "000010: 7f 03 02 01 00"));
  tp_free(text);
  tp_wasm_module_free(m);
}

/* ---- 3. the SIMD module ---- */
/* axpb(x, y, n, a, b): y[i] = x[i] * a + b for i < n (byte pointers x, y). */
static tp_status build_axpb(tp_wasm_module *m, int relaxed) {
  tp_wasm_func *f;
  uint32_t t, fi, i, va, vb, n4;
  TP_TRY(tp_wasm_module_import_memory(m, "env", "memory", (tp_wasm_limits){.min = 1}));
  TP_TRY(tp_wasm_module_add_type(m, 5, (const uint8_t[]){I32, I32, I32, F32, F32}, 0, NULL, &t));
  TP_TRY(tp_wasm_func_begin(m, t, "axpb", &f, &fi));
  TP_TRY(tp_wasm_func_add_locals(f, 2, I32, &i)); /* i, n4 */
  n4 = i + 1;
  TP_TRY(tp_wasm_func_add_locals(f, 2, V128, &va)); /* va, vb */
  vb = va + 1;
  enum { X = 0, Y = 1, N = 2, A = 3, B = 4 };
  tp_wasm_func_label(f, "splat a, b; n4 = n & ~3");
  tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, A);
  tp_wasm_emit(f, TP_WASM_OP_F32X4_SPLAT);
  tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_SET, va);
  tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, B);
  tp_wasm_emit(f, TP_WASM_OP_F32X4_SPLAT);
  tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_SET, vb);
  tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, N);
  tp_wasm_emit_i32_const(f, -4);
  tp_wasm_emit(f, TP_WASM_OP_I32_AND);
  tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_SET, n4);
  /* vector loop */
  tp_wasm_func_label(f, "f32x4 loop");
  tp_wasm_emit_block(f, TP_WASM_OP_BLOCK, TP_WASM_BT_VOID);
  tp_wasm_emit_block(f, TP_WASM_OP_LOOP, TP_WASM_BT_VOID);
  tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, i);
  tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, n4);
  tp_wasm_emit(f, TP_WASM_OP_I32_GE_U);
  tp_wasm_emit_br(f, TP_WASM_OP_BR_IF, 1);
  /* address y + 4i */
  tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, Y);
  tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, i);
  tp_wasm_emit_i32_const(f, 2);
  tp_wasm_emit(f, TP_WASM_OP_I32_SHL);
  tp_wasm_emit(f, TP_WASM_OP_I32_ADD);
  /* x[i..i+3] */
  tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, X);
  tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, i);
  tp_wasm_emit_i32_const(f, 2);
  tp_wasm_emit(f, TP_WASM_OP_I32_SHL);
  tp_wasm_emit(f, TP_WASM_OP_I32_ADD);
  tp_wasm_emit_mem(f, TP_WASM_OP_V128_LOAD, 2, 0); /* 4-byte aligned */
  tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, va);
  if (relaxed) {
    tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, vb);
    tp_wasm_emit(f, TP_WASM_OP_F32X4_RELAXED_MADD);
  } else {
    tp_wasm_emit(f, TP_WASM_OP_F32X4_MUL);
    tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, vb);
    tp_wasm_emit(f, TP_WASM_OP_F32X4_ADD);
  }
  tp_wasm_emit_mem(f, TP_WASM_OP_V128_STORE, 2, 0);
  tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, i);
  tp_wasm_emit_i32_const(f, 4);
  tp_wasm_emit(f, TP_WASM_OP_I32_ADD);
  tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_SET, i);
  tp_wasm_emit_br(f, TP_WASM_OP_BR, 0);
  tp_wasm_emit(f, TP_WASM_OP_END);
  tp_wasm_emit(f, TP_WASM_OP_END);
  /* scalar tail */
  tp_wasm_func_label(f, "scalar tail");
  tp_wasm_emit_block(f, TP_WASM_OP_BLOCK, TP_WASM_BT_VOID);
  tp_wasm_emit_block(f, TP_WASM_OP_LOOP, TP_WASM_BT_VOID);
  tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, i);
  tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, N);
  tp_wasm_emit(f, TP_WASM_OP_I32_GE_U);
  tp_wasm_emit_br(f, TP_WASM_OP_BR_IF, 1);
  tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, Y);
  tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, i);
  tp_wasm_emit_i32_const(f, 2);
  tp_wasm_emit(f, TP_WASM_OP_I32_SHL);
  tp_wasm_emit(f, TP_WASM_OP_I32_ADD);
  tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, X);
  tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, i);
  tp_wasm_emit_i32_const(f, 2);
  tp_wasm_emit(f, TP_WASM_OP_I32_SHL);
  tp_wasm_emit(f, TP_WASM_OP_I32_ADD);
  tp_wasm_emit_mem(f, TP_WASM_OP_F32_LOAD, TP_WASM_ALIGN_NATURAL, 0);
  tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, A);
  tp_wasm_emit(f, TP_WASM_OP_F32_MUL);
  tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, B);
  tp_wasm_emit(f, TP_WASM_OP_F32_ADD);
  tp_wasm_emit_mem(f, TP_WASM_OP_F32_STORE, TP_WASM_ALIGN_NATURAL, 0);
  tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, i);
  tp_wasm_emit_i32_const(f, 1);
  tp_wasm_emit(f, TP_WASM_OP_I32_ADD);
  tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_SET, i);
  tp_wasm_emit_br(f, TP_WASM_OP_BR, 0);
  tp_wasm_emit(f, TP_WASM_OP_END);
  tp_wasm_emit(f, TP_WASM_OP_END);
  TP_TRY(tp_wasm_func_end(f)); /* the first error of any emit above, if one failed */
  return tp_wasm_module_export_func(m, "axpb", fi);
}

static int have_tool(const char *name) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", name);
  return system(cmd) == 0;
}

static int write_file(const char *path, const uint8_t *p, size_t n) {
  if (!p) return -1;
  FILE *fp = fopen(path, "wb");
  if (!fp) return -1;
  size_t w = fwrite(p, 1, n, fp);
  return fclose(fp) == 0 && w == n ? 0 : -1;
}

static char *read_text(const char *path) {
  FILE *fp = fopen(path, "rb");
  if (!fp) return NULL;
  fseek(fp, 0, SEEK_END);
  long n = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  if (s && fread(s, 1, (size_t)n, fp) != (size_t)n) {
    free(s);
    s = NULL;
  }
  if (s) s[n] = 0;
  fclose(fp);
  return s;
}

static char artifacts[1024];

/* wasm-validate, then (if wabt's wasm2wat and wat2wasm exist) a round trip
 * through the text format must give the same bytes: the writer's output is
 * what wat2wasm writes (minimal LEB128 sizes, same section layout). */
static int validate(const char *path) {
  char cmd[5000];
  snprintf(cmd, sizeof cmd, "wasm-validate --enable-all '%s'", path);
  int rc = system(cmd);
  if (rc != 0) {
    printf("FAIL wasm-validate %s (exit %d)\n", path, rc);
    return 0;
  }
  if (have_tool("wasm2wat") && have_tool("wat2wasm")) {
    snprintf(cmd, sizeof cmd,
             "wasm2wat --enable-all '%s' -o '%s.rt.wat' && wat2wasm --enable-all '%s.rt.wat' -o "
             "'%s.rt' && cmp -s '%s' '%s.rt'",
             path, path, path, path, path, path);
    rc = system(cmd);
    if (rc != 0) {
      printf("FAIL %s: wasm2wat | wat2wasm gives other bytes (%s.rt)\n", path, path);
      return 0;
    }
  }
  return 1;
}

static void test_simd_module(int relaxed) {
  tp_wasm_module *m;
  const uint8_t *bytes;
  size_t len;
  OK(tp_wasm_module_init(&m));
  tp_status s = build_axpb(m, relaxed);
  OK(s);
  if (s == TP_OK) {
    s = tp_wasm_module_finish(m, &bytes, &len);
    OK(s);
  }
  if (s == TP_OK) {
    char path[1200];
    snprintf(path, sizeof path, "%s/wasm_writer_axpb%s.wasm", artifacts,
             relaxed ? "_relaxed" : "");
    CHECK(write_file(path, bytes, len) == 0);
    if (getenv("TP_WASM_DUMP")) {
      const tp_wasm_label *l;
      size_t nl;
      char *text;
      tp_wasm_module_labels(m, &l, &nl);
      if (tp_wasm_dump(bytes, len, l, nl, &text) == TP_OK) printf("%s", text);
      tp_free(text);
    }
    if (have_tool("wasm-validate"))
      CHECK(validate(path));
    else {
      printf("SKIP wasm-validate not found (Debian: wabt): %s not validated\n", path);
      skipped++;
    }
  }
  tp_wasm_module_free(m);
}

/* ---- 4. every fixed-signature opcode, validated and named by wabt ---- */
static uint8_t sigc(char c) {
  switch (c) {
  case 'i': return TP_WASM_I32;
  case 'I': return TP_WASM_I64;
  case 'f': return TP_WASM_F32;
  case 'F': return TP_WASM_F64;
  default: return TP_WASM_V128;
  }
}

static void test_all_opcodes(void) {
  tp_wasm_module *m;
  OK(tp_wasm_module_init(&m));
  OK(tp_wasm_module_import_memory(m, "env", "memory", (tp_wasm_limits){.min = 1}));
  int ops[TP_WASM_OP_COUNT], nops = 0;
  for (int op = 0; op < TP_WASM_OP_COUNT; op++) {
    const tp_wasm_opinfo *in = tp_wasm_op_info((tp_wasm_op)op);
    if (in->sig[0] == '*') continue;
    uint8_t p[4], r[4];
    uint32_t np = 0, nr = 0;
    const char *s = in->sig;
    for (; *s != ':'; s++) p[np++] = sigc(*s);
    for (s++; *s; s++) r[nr++] = sigc(*s);
    uint32_t t, fi;
    tp_wasm_func *f;
    OK(tp_wasm_module_add_type(m, np, p, nr, r, &t));
    OK(tp_wasm_func_begin(m, t, in->name, &f, &fi));
    for (uint32_t k = 0; k < np; k++) tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, k);
    static const uint8_t zero16[16];
    switch (in->imm) {
    case TP_WASM_IMM_NONE: case TP_WASM_IMM_MEMIDX: tp_wasm_emit(f, (tp_wasm_op)op); break;
    case TP_WASM_IMM_I32: tp_wasm_emit_i32_const(f, -7); break;
    case TP_WASM_IMM_I64: tp_wasm_emit_i64_const(f, INT64_MIN); break;
    case TP_WASM_IMM_F32: tp_wasm_emit_f32_const(f, 1.5f); break;
    case TP_WASM_IMM_F64: tp_wasm_emit_f64_const(f, -2.25); break;
    case TP_WASM_IMM_V128: tp_wasm_emit_v128_const(f, zero16); break;
    case TP_WASM_IMM_SHUFFLE: {
      uint8_t lanes[16];
      for (int k = 0; k < 16; k++) lanes[k] = (uint8_t)(31 - k);
      tp_wasm_emit_shuffle(f, lanes);
      break;
    }
    case TP_WASM_IMM_LANE2: case TP_WASM_IMM_LANE4: case TP_WASM_IMM_LANE8:
    case TP_WASM_IMM_LANE16: tp_wasm_emit_lane(f, (tp_wasm_op)op, 1); break;
    default: tp_wasm_emit_mem(f, (tp_wasm_op)op, TP_WASM_ALIGN_NATURAL, 0); break;
    }
    OK(tp_wasm_func_end(f));
    CHECK(fi == (uint32_t)nops);
    ops[nops++] = op;
  }
  const uint8_t *bytes;
  size_t len;
  OK(tp_wasm_module_finish(m, &bytes, &len));
  char path[1200], wat[1300], cmd[3000];
  snprintf(path, sizeof path, "%s/wasm_writer_allops.wasm", artifacts);
  snprintf(wat, sizeof wat, "%s/wasm_writer_allops.wat", artifacts);
  CHECK(write_file(path, bytes, len) == 0);
  printf("all-opcodes module: %d functions, %zu bytes\n", nops, len);
  if (!have_tool("wasm-validate") || !have_tool("wasm2wat")) {
    printf("SKIP wasm-validate / wasm2wat not found (Debian: wabt): opcode table not checked\n");
    skipped++;
  } else {
    CHECK(validate(path));
    snprintf(cmd, sizeof cmd, "wasm2wat --enable-all '%s' -o '%s'", path, wat);
    CHECK(system(cmd) == 0);
    char *text = read_text(wat);
    CHECK(text != NULL);
    /* function k's text is between its "(func (;k;)" and the next */
    for (int k = 0; text && k < nops; k++) {
      char head[64], next[64];
      snprintf(head, sizeof head, "(func (;%d;)", k);
      snprintf(next, sizeof next, "(func (;%d;)", k + 1);
      char *a = strstr(text, head), *b = a ? strstr(a, next) : NULL;
      if (!a) {
        printf("FAIL wasm2wat: no function %d\n", k);
        failures++;
        continue;
      }
      char save = 0;
      if (b) save = *b, *b = 0;
      const char *name = tp_wasm_op_name((tp_wasm_op)ops[k]);
      size_t nl = strlen(name);
      int found = 0;
      for (const char *p = strstr(a, name); p && !found; p = strstr(p + 1, name))
        found = (p[-1] == ' ' || p[-1] == '\n' || p[-1] == '(') &&
                (p[nl] == ' ' || p[nl] == '\n' || p[nl] == ')');
      if (!found) {
        printf("FAIL opcode %s: wasm2wat shows another instruction:\n%s\n", name, a);
        failures++;
      }
      if (b) *b = save;
    }
    free(text);
  }
  tp_wasm_module_free(m);
}

/* ---- 5. emit-time checks ---- */
static int msg_has(const char *s) {
  if (strstr(tp_last_error(), s)) return 1;
  printf("  message was: %s\n  expected to contain: %s\n", tp_last_error(), s);
  return 0;
}

static void test_checks(void) {
  tp_wasm_module *m;
  tp_wasm_func *f;
  uint32_t t, tv, fi, v;
  OK(tp_wasm_module_init(&m));
  OK(tp_wasm_module_add_type(m, 1, &F32, 0, NULL, &t));
  OK(tp_wasm_module_add_type(m, 0, NULL, 1, &V128, &tv));

  /* always-on checks: indices, immediates, lanes, alignment, memory */
  OK(tp_wasm_func_begin(m, t, "idx", &f, &fi));
  CHECK(tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, 3) == TP_ERR_INVALID_ARG);
  CHECK(msg_has("wasm function 'idx' (#0)") && msg_has("local.get 3: only 1 locals"));
  /* sticky: later emits fail with the first error and write nothing */
  CHECK(tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, 0) == TP_ERR_INVALID_ARG);
  CHECK(tp_wasm_func_end(f) == TP_ERR_INVALID_ARG);
  CHECK(strstr(tp_wasm_func_error(f), "local.get 3") != NULL);
  const uint8_t *bytes;
  size_t len;
  CHECK(tp_wasm_module_finish(m, &bytes, &len) == TP_ERR_INVALID_ARG);
  CHECK(msg_has("function 'idx' (#0) failed") && msg_has("local.get 3"));
  tp_wasm_module_free(m);

  OK(tp_wasm_module_init(&m));
  OK(tp_wasm_module_add_type(m, 1, &F32, 0, NULL, &t));
  OK(tp_wasm_module_add_type(m, 0, NULL, 1, &V128, &tv));
  struct {
    const char *name, *want;
    tp_status status;
  } cases[] = {
      {"f32x4.add on f32", "f32x4.add expects v128, v128 on the stack, found f32", TP_ERR_INTERNAL},
      {"f32x4.add on v128, f32", "f32x4.add expects v128, v128 on the stack, found v128, f32",
       TP_ERR_INTERNAL},
      {"block end height", "end of block expects nothing on the stack, found i32",
       TP_ERR_INTERNAL},
      {"function end", "end of function expects v128 on the stack, found f32", TP_ERR_INTERNAL},
      {"br depth", "br 5: only 2 enclosing labels", TP_ERR_INVALID_ARG},
      {"lane", "f32x4.extract_lane: lane 4 out of range (4 lanes)", TP_ERR_INVALID_ARG},
      {"no memory", "v128.load needs a memory", TP_ERR_INVALID_ARG},
      {"open block", "1 block(s) still open at the end (innermost: loop", TP_ERR_INTERNAL},
      {"wrong api", "tp_wasm_emit cannot emit local.get", TP_ERR_INVALID_ARG},
      {"if cond", "if (condition) expects i32 on the stack, found f32", TP_ERR_INTERNAL},
      {"local.set type", "local.set 0 expects f32 on the stack, found v128", TP_ERR_INTERNAL},
  };
  int ncases = (int)(sizeof cases / sizeof cases[0]);
  for (int c = 0; c < ncases; c++) {
    int typed = cases[c].status == TP_ERR_INTERNAL && c != 7; /* needs TP_WASM_CHECKS */
    if (typed && !tp_wasm_checks_enabled()) continue;
    char nm[64];
    snprintf(nm, sizeof nm, "case%d", c);
    OK(tp_wasm_func_begin(m, c == 3 ? tv : t, nm, &f, &fi));
    OK(tp_wasm_func_add_locals(f, 1, V128, &v));
    tp_status s = TP_OK;
    switch (c) {
    case 0:
      tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, 0);
      s = tp_wasm_emit(f, TP_WASM_OP_F32X4_ADD);
      break;
    case 1:
      tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, v);
      tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, 0);
      s = tp_wasm_emit(f, TP_WASM_OP_F32X4_ADD);
      break;
    case 2:
      tp_wasm_emit_block(f, TP_WASM_OP_BLOCK, TP_WASM_BT_VOID);
      tp_wasm_emit_i32_const(f, 1);
      s = tp_wasm_emit(f, TP_WASM_OP_END);
      break;
    case 3:
      tp_wasm_emit_f32_const(f, 1);
      s = tp_wasm_func_end(f);
      break;
    case 4:
      tp_wasm_emit_block(f, TP_WASM_OP_BLOCK, TP_WASM_BT_VOID);
      s = tp_wasm_emit_br(f, TP_WASM_OP_BR, 5);
      break;
    case 5:
      tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, v);
      s = tp_wasm_emit_lane(f, TP_WASM_OP_F32X4_EXTRACT_LANE, 4);
      break;
    case 6:
      tp_wasm_emit_i32_const(f, 0);
      s = tp_wasm_emit_mem(f, TP_WASM_OP_V128_LOAD, TP_WASM_ALIGN_NATURAL, 0);
      break;
    case 7:
      tp_wasm_emit_block(f, TP_WASM_OP_LOOP, TP_WASM_BT_VOID);
      s = tp_wasm_func_end(f);
      break;
    case 8: s = tp_wasm_emit(f, TP_WASM_OP_LOCAL_GET); break;
    case 9:
      tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, 0);
      s = tp_wasm_emit_block(f, TP_WASM_OP_IF, TP_WASM_BT_VOID);
      break;
    case 10:
      tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, v);
      s = tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_SET, 0);
      break;
    }
    if (s != cases[c].status || !strstr(tp_last_error(), cases[c].want) ||
        !strstr(tp_last_error(), nm)) {
      printf("FAIL check '%s': status %s, message: %s\n  expected %s containing: %s (and %s)\n",
             cases[c].name, tp_status_name(s), tp_last_error(), tp_status_name(cases[c].status),
             cases[c].want, nm);
      failures++;
    }
    CHECK(tp_wasm_func_status(f) == cases[c].status);
  }
  tp_wasm_module_free(m);

  /* valid sequences pass: if/else with a result, br_if carrying a value,
   * select, unreachable code, multi-value block, call, alignment limit */
  OK(tp_wasm_module_init(&m));
  OK(tp_wasm_module_define_memory(m, (tp_wasm_limits){.min = 1, .max = 2, .has_max = true}));
  OK(tp_wasm_module_export_memory(m, "mem"));
  uint32_t ti, tii_i, g;
  OK(tp_wasm_module_add_type(m, 1, &I32, 1, &I32, &ti));
  OK(tp_wasm_module_add_type(m, 2, (const uint8_t[]){I32, I32}, 1, &I32, &tii_i));
  OK(tp_wasm_module_add_global(m, TP_WASM_I32, true, 5, &g));
  uint32_t callee;
  tp_wasm_func *h;
  OK(tp_wasm_func_begin(m, ti, "callee", &h, &callee));
  OK(tp_wasm_func_begin(m, ti, "ok", &f, &fi));
  OK(tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, 0));
  OK(tp_wasm_emit_block(f, TP_WASM_OP_IF, TP_WASM_BT_VAL(TP_WASM_I32)));
  OK(tp_wasm_emit_i32_const(f, 1));
  OK(tp_wasm_emit(f, TP_WASM_OP_ELSE));
  OK(tp_wasm_emit_global(f, TP_WASM_OP_GLOBAL_GET, g));
  OK(tp_wasm_emit(f, TP_WASM_OP_END));
  OK(tp_wasm_emit_block(f, TP_WASM_OP_BLOCK, TP_WASM_BT_TYPE(ti))); /* multi-value: i32 -> i32 */
  OK(tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, 0));
  OK(tp_wasm_emit_br(f, TP_WASM_OP_BR_IF, 0));
  OK(tp_wasm_emit_call(f, callee));
  OK(tp_wasm_emit(f, TP_WASM_OP_END));
  OK(tp_wasm_emit_i32_const(f, 2));
  OK(tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, 0));
  OK(tp_wasm_emit(f, TP_WASM_OP_SELECT));
  OK(tp_wasm_emit_block(f, TP_WASM_OP_BLOCK, TP_WASM_BT_VOID));
  OK(tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, 0));
  OK(tp_wasm_emit_br_table(f, 2, (const uint32_t[]){0, 0}, 0));
  OK(tp_wasm_emit(f, TP_WASM_OP_F32X4_ADD)); /* unreachable: polymorphic stack */
  OK(tp_wasm_emit(f, TP_WASM_OP_DROP));
  OK(tp_wasm_emit(f, TP_WASM_OP_END));
  OK(tp_wasm_emit_i32_const(f, 0));
  OK(tp_wasm_emit_mem(f, TP_WASM_OP_I32_LOAD, 2, 16));
  OK(tp_wasm_emit(f, TP_WASM_OP_I32_ADD));
  OK(tp_wasm_emit(f, TP_WASM_OP_MEMORY_SIZE));
  OK(tp_wasm_emit(f, TP_WASM_OP_I32_ADD));
  OK(tp_wasm_func_label(f, "return"));
  OK(tp_wasm_emit(f, TP_WASM_OP_RETURN));
  OK(tp_wasm_func_end(f));
  OK(tp_wasm_emit_local(h, TP_WASM_OP_LOCAL_GET, 0));
  OK(tp_wasm_func_end(h));
  OK(tp_wasm_module_export_func(m, "ok", fi));
  CHECK(tp_wasm_module_export_func(m, "ok", fi) == TP_ERR_INVALID_ARG); /* duplicate */
  CHECK(tp_wasm_module_export_func(m, "nope", 9) == TP_ERR_INVALID_ARG);
  OK(tp_wasm_module_finish(m, &bytes, &len));
  char path[1200];
  snprintf(path, sizeof path, "%s/wasm_writer_control.wasm", artifacts);
  CHECK(write_file(path, bytes, len) == 0);
  if (have_tool("wasm-validate")) CHECK(validate(path));
  tp_wasm_module_free(m);

  /* alignment above natural is refused in any build */
  OK(tp_wasm_module_init(&m));
  OK(tp_wasm_module_import_memory(m, "env", "memory", (tp_wasm_limits){.min = 1}));
  OK(tp_wasm_module_add_type(m, 1, &I32, 1, &I32, &ti));
  tp_wasm_func *bad;
  OK(tp_wasm_func_begin(m, ti, "align", &bad, NULL));
  OK(tp_wasm_emit_i32_const(bad, 0));
  CHECK(tp_wasm_emit_mem(bad, TP_WASM_OP_I32_LOAD, 3, 0) == TP_ERR_INVALID_ARG);
  CHECK(msg_has("wasm function 'align' (#0), code offset 2: i32.load: alignment 2^3 exceeds the natural 2^2"));
  CHECK(tp_wasm_module_finish(m, &bytes, &len) == TP_ERR_INVALID_ARG);
  /* a function left open */
  tp_wasm_func *open_;
  OK(tp_wasm_func_begin(m, ti, NULL, &open_, NULL));
  tp_wasm_module_free(m);
}

/* call_indirect, imports of functions and a table */
static void test_imports(void) {
  tp_wasm_module *m;
  tp_wasm_func *f;
  uint32_t t, imp, fi;
  OK(tp_wasm_module_init(&m));
  OK(tp_wasm_module_add_type(m, 1, &F32, 1, &F32, &t));
  OK(tp_wasm_module_import_func(m, "env", "expf", t, &imp));
  CHECK(imp == 0);
  OK(tp_wasm_module_import_table(m, "env", "__indirect_function_table", (tp_wasm_limits){.min = 1}));
  OK(tp_wasm_func_begin(m, t, "k", &f, &fi));
  CHECK(fi == 1);
  uint32_t late;
  CHECK(tp_wasm_module_import_func(m, "env", "late", t, &late) == TP_ERR_INVALID_ARG);
  OK(tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, 0));
  OK(tp_wasm_emit_call(f, imp));
  OK(tp_wasm_emit_i32_const(f, 0));
  OK(tp_wasm_emit_call_indirect(f, t));
  OK(tp_wasm_func_end(f));
  OK(tp_wasm_module_export_func(m, "k", fi));
  const uint8_t *bytes;
  size_t len;
  OK(tp_wasm_module_finish(m, &bytes, &len));
  char path[1200];
  snprintf(path, sizeof path, "%s/wasm_writer_imports.wasm", artifacts);
  CHECK(write_file(path, bytes, len) == 0);
  if (have_tool("wasm-validate")) CHECK(validate(path));
  tp_wasm_module_free(m);
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
  printf("emit-time type checks: %s\n", tp_wasm_checks_enabled() ? "on" : "off (NDEBUG)");
  test_leb();
  test_tiny_module();
  test_simd_module(0);
  test_simd_module(1);
  test_all_opcodes();
  test_checks();
  test_imports();
  if (failures) {
    printf("%d failure(s)\n", failures);
    return 1;
  }
  printf("ok%s\n", skipped ? " (wabt checks skipped)" : "");
  return 0;
}
