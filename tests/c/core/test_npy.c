/* test_npy.c - .npy decode/encode/load/save against hand-made bytes. */
#include "core/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "check.h"


/* numpy's own bytes for np.save(f, np.array([1, 2], dtype='<i4')) */
static const unsigned char numpy_i4[] =
    "\x93NUMPY\x01\x00\x76\x00"
    "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }"
    "                                                            \n"
    "\x01\x00\x00\x00\x02\x00\x00\x00";

/* A file of version major with header dict `dict` (padded to 64) + data. */
static unsigned char *make(int major, const char *dict, const void *data, size_t ndata,
                           size_t *len) {
  size_t pre = major == 1 ? 10 : 12, dl = strlen(dict);
  size_t hlen = (pre + dl + 1 + 63) / 64 * 64 - pre;
  *len = pre + hlen + ndata;
  unsigned char *b = malloc(*len);
  memcpy(b, "\x93NUMPY", 6);
  b[6] = (unsigned char)major;
  b[7] = 0;
  b[8] = (unsigned char)hlen;
  b[9] = (unsigned char)(hlen >> 8);
  if (major != 1) b[10] = b[11] = 0;
  memcpy(b + pre, dict, dl);
  memset(b + pre + dl, ' ', hlen - dl - 1);
  b[pre + hlen - 1] = '\n';
  if (ndata) memcpy(b + pre + hlen, data, ndata);
  return b;
}

static void check_tensor(tp_tensor *t, tp_dtype dt, int ndim, const int64_t *shape,
                         const void *want, size_t bytes) {
  CHECK(t != NULL);
  if (!t) return;
  CHECK(tp_tensor_dtype(t) == dt);
  CHECK(tp_tensor_ndim(t) == ndim);
  for (int i = 0; i < ndim && i < tp_tensor_ndim(t); i++) CHECK(tp_tensor_shape(t)[i] == shape[i]);
  unsigned char got[256];
  if (bytes > sizeof got) return;
  CHECK_OK(tp_tensor_read(t, got, bytes));
  CHECK(memcmp(got, want, bytes) == 0);
}

static void test_decode_good(void) {
  tp_tensor *t = NULL;
  /* numpy's exact bytes */
  CHECK_OK(tp_npy_decode(numpy_i4, sizeof numpy_i4 - 1, &t));
  int32_t i2[2] = { 1, 2 };
  check_tensor(t, TP_I32, 1, (int64_t[]){ 2 }, i2, sizeof i2);
  tp_tensor_release(t);

  /* f32 (2,2): 1.0, -2.0, 0.5, inf written as raw little-endian bytes */
  static const unsigned char f4[] = { 0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0,
                                      0, 0, 0, 0x3f,    0, 0, 0x80, 0x7f };
  float fw[4] = { 1.0f, -2.0f, 0.5f, 1.0f / 0.0f };
  /* i64 (3,): -1, 2^40, 7 */
  static const unsigned char i8[] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                      0, 0, 0, 0, 0, 1, 0, 0,
                                      7, 0, 0, 0, 0, 0, 0, 0 };
  int64_t lw[3] = { -1, (int64_t)1 << 40, 7 };
  /* b1 (1,3) */
  static const unsigned char b1[] = { 1, 0, 1 };
  /* i4 () 0-d: -5 */
  static const unsigned char i4[] = { 0xfb, 0xff, 0xff, 0xff };
  int32_t iw = -5;
  for (int major = 1; major <= 3; major++) {
    size_t n;
    unsigned char *b;
    b = make(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }", f4, sizeof f4, &n);
    t = NULL;
    CHECK_OK(tp_npy_decode(b, n, &t));
    check_tensor(t, TP_F32, 2, (int64_t[]){ 2, 2 }, fw, sizeof fw);
    tp_tensor_release(t);
    free(b);

    b = make(major, "{\"shape\": (3,), \"fortran_order\": False, \"descr\": \"<i8\"}", i8, sizeof i8,
             &n);
    t = NULL;
    CHECK_OK(tp_npy_decode(b, n, &t));
    check_tensor(t, TP_I64, 1, (int64_t[]){ 3 }, lw, sizeof lw);
    tp_tensor_release(t);
    free(b);

    b = make(major, "{'descr': '|b1', 'fortran_order': False, 'shape': (1L, 3L), }", b1, sizeof b1,
             &n);
    t = NULL;
    CHECK_OK(tp_npy_decode(b, n, &t));
    check_tensor(t, TP_BOOL, 2, (int64_t[]){ 1, 3 }, b1, sizeof b1);
    tp_tensor_release(t);
    free(b);

    b = make(major, "{'descr':'<i4','fortran_order':False,'shape':()}", i4, sizeof i4, &n);
    t = NULL;
    CHECK_OK(tp_npy_decode(b, n, &t));
    check_tensor(t, TP_I32, 0, NULL, &iw, sizeof iw);
    tp_tensor_release(t);
    free(b);

    /* empty (0, 3) */
    b = make(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 3), }", NULL, 0, &n);
    t = NULL;
    CHECK_OK(tp_npy_decode(b, n, &t));
    if (t) CHECK(tp_tensor_numel(t) == 0 && tp_tensor_ndim(t) == 2);
    tp_tensor_release(t);
    free(b);
  }
}

static void test_encode(void) {
  /* encode of i32 [1, 2] gives numpy's bytes */
  int32_t i2[2] = { 1, 2 };
  tp_tensor *t = NULL;
  void *out = NULL;
  size_t n = 0;
  CHECK_OK(tp_tensor_new(TP_I32, 1, (int64_t[]){ 2 }, i2, &t));
  CHECK_OK(tp_npy_encode(t, &out, &n));
  CHECK(n == sizeof numpy_i4 - 1 && out && memcmp(out, numpy_i4, n) == 0);
  tp_free_buffer(out);
  tp_tensor_release(t);

  /* every dtype and rank: encode -> decode gives the same tensor, header
   * padded to 64 and ending in '\n' */
  static const tp_dtype dts[] = { TP_F32, TP_I32, TP_I64, TP_BOOL };
  int64_t shapes[4][8] = { { 0 }, { 5 }, { 2, 3 }, { 1, 2, 1, 2, 1, 2, 1, 2 } };
  int ranks[4] = { 0, 1, 2, 8 };
  for (int d = 0; d < 4; d++)
    for (int r = 0; r < 4; r++) {
      unsigned char data[16 * 8];
      int64_t numel = tp_shape_numel(ranks[r], shapes[r]);
      size_t isz = tp_dtype_size(dts[d]);
      for (size_t k = 0; k < (size_t)numel * isz; k++)
        data[k] = dts[d] == TP_BOOL ? (unsigned char)(k % 3 == 0) : (unsigned char)(k * 37 + 1);
      t = NULL;
      CHECK_OK(tp_tensor_new(dts[d], ranks[r], shapes[r], data, &t));
      out = NULL;
      CHECK_OK(tp_npy_encode(t, &out, &n));
      if (out) {
        const unsigned char *b = out;
        size_t hlen = b[8] | (size_t)b[9] << 8;
        CHECK(b[6] == 1 && b[7] == 0);
        CHECK((10 + hlen) % 64 == 0);
        CHECK(b[10 + hlen - 1] == '\n');
        CHECK(n == 10 + hlen + (size_t)numel * isz);
        tp_tensor *t2 = NULL;
        CHECK_OK(tp_npy_decode(out, n, &t2));
        check_tensor(t2, dts[d], ranks[r], shapes[r], data, (size_t)numel * isz);
        tp_tensor_release(t2);
      }
      tp_free_buffer(out);
      tp_tensor_release(t);
    }

  /* a non-contiguous view is written in C order */
  float base[6] = { 1, 2, 3, 4, 5, 6 }, want[6] = { 1, 4, 2, 5, 3, 6 };
  tp_tensor *b = NULL, *v = NULL, *back = NULL;
  CHECK_OK(tp_tensor_new(TP_F32, 2, (int64_t[]){ 2, 3 }, base, &b));
  CHECK_OK(tp_tensor_view(b, 2, (int64_t[]){ 3, 2 }, (int64_t[]){ 1, 3 }, 0, &v));
  out = NULL;
  CHECK_OK(tp_npy_encode(v, &out, &n));
  if (out) {
    CHECK(strstr((const char *)out + 10, "'shape': (3, 2)") != NULL);
    CHECK_OK(tp_npy_decode(out, n, &back));
    check_tensor(back, TP_F32, 2, (int64_t[]){ 3, 2 }, want, sizeof want);
  }
  tp_free_buffer(out);
  tp_tensor_release(back);
  /* a view with an offset: the second row */
  tp_tensor *row = NULL;
  back = NULL;
  CHECK_OK(tp_tensor_view(b, 1, (int64_t[]){ 3 }, (int64_t[]){ 1 }, 3, &row));
  out = NULL;
  CHECK_OK(tp_npy_encode(row, &out, &n));
  if (out) {
    CHECK_OK(tp_npy_decode(out, n, &back));
    check_tensor(back, TP_F32, 1, (int64_t[]){ 3 }, base + 3, 3 * sizeof(float));
  }
  tp_free_buffer(out);
  tp_tensor_release(back);
  tp_tensor_release(row);
  tp_tensor_release(v);
  tp_tensor_release(b);
}

static void bad_bytes(const unsigned char *b, size_t n, const char *want) {
  tp_tensor *t = (tp_tensor *)(uintptr_t)1;
  unsigned char *copy = malloc(n ? n : 1); /* exact size for ASan */
  memcpy(copy, b, n);
  tp_status s = tp_npy_decode(copy, n, &t);
  free(copy);
  if (s != TP_ERR_PARSE || t != NULL || !strstr(tp_last_error(), want)) {
    fprintf(stderr, "bad npy: got %s \"%s\", want TP_ERR_PARSE with \"%s\"\n", tp_status_name(s),
            tp_last_error(), want);
    failures++;
    if (s == TP_OK) tp_tensor_release(t);
  }
}

static void bad_dict(int major, const char *dict, size_t ndata, const char *want) {
  unsigned char data[64] = { 0 };
  size_t n;
  unsigned char *b = make(major, dict, data, ndata, &n);
  bad_bytes(b, n, want);
  free(b);
}

#define D(descr, fo, shape) "{'descr': '" descr "', 'fortran_order': " fo ", 'shape': " shape ", }"
static void test_malformed(void) {
  bad_bytes((const unsigned char *)"", 0, "not a .npy file");
  bad_bytes((const unsigned char *)"\x93NUMP", 5, "not a .npy file");
  bad_bytes((const unsigned char *)"PK\x03\x04zipfile...", 15, "not a .npy file");
  bad_bytes((const unsigned char *)"\x93NUMPY\x04\x00\x10\x00{}", 12, "unsupported .npy version 4.0");
  bad_bytes((const unsigned char *)"\x93NUMPY\x01\x05\x10\x00{}", 12, "unsupported .npy version 1.5");
  bad_bytes((const unsigned char *)"\x93NUMPY\x02\x00\x10\x00", 10, "truncated .npy header");
  bad_bytes((const unsigned char *)"\x93NUMPY\x01\x00\x76\x00{'descr'", 17, "truncated .npy header");
  /* every prefix of a valid file is rejected, never read past */
  for (size_t k = 0; k < sizeof numpy_i4 - 1; k++) {
    tp_tensor *t = NULL;
    unsigned char *copy = malloc(k ? k : 1);
    memcpy(copy, numpy_i4, k);
    tp_status s = tp_npy_decode(copy, k, &t);
    free(copy);
    CHECK(s == TP_ERR_PARSE && t == NULL);
    if (s == TP_OK) tp_tensor_release(t);
  }
  bad_dict(1, D("<f4", "True", "(2, 2)"), 16, "fortran_order True is not supported");
  bad_dict(1, D(">f4", "False", "(2,)"), 8, "unsupported dtype '>f4': big-endian");
  bad_dict(1, D("<f8", "False", "(2,)"), 16,
           "npy: unsupported dtype '<f8' (supported: <f4, <i4, <i8, |b1, <f2, |i1, |u1)");
  bad_dict(2, D("|u2", "False", "(2,)"), 2, "unsupported dtype '|u2'");
  bad_dict(3, D("<U3", "False", "(2,)"), 24, "unsupported dtype '<U3'");
  bad_dict(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", 4,
           "structured arrays");
  bad_dict(1, D("<f4", "False", "(1, 1, 1, 1, 1, 1, 1, 1, 1)"), 4, "more than 8 dimensions");
  bad_dict(1, D("<f4", "False", "(2, 2)"), 12, "truncated data: shape needs 16 bytes, file has 12");
  bad_dict(2, D("<i8", "False", "(3,)"), 0, "truncated data: shape needs 24 bytes, file has 0");
  bad_dict(1, D("<f4", "False", "(4294967296, 4294967296, 4294967296)"), 4,
           "truncated data: shape needs more than");
  bad_dict(1, D("<f4", "False", "(2,)"), 12, "4 unexpected bytes after the data");
  bad_dict(1, D("<f4", "Maybe", "(2,)"), 8, "expected True or False for fortran_order");
  bad_dict(1, D("<f4", "False", "(2 2)"), 16, "expected ',' or ')' in the shape");
  bad_dict(1, D("<f4", "False", "(2)"), 8, "one-element tuple");
  bad_dict(1, D("<f4", "False", "[2]"), 8, "expected a shape tuple");
  bad_dict(1, D("<f4", "False", "(-2,)"), 8, "expected a dimension size");
  bad_dict(1, "{'descr': '<f4', 'shape': (2,), }", 8, "missing key 'fortran_order'");
  bad_dict(1, "{'descr': '<f4', 'fortran_order': False}", 8, "missing key 'shape'");
  bad_dict(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}", 8,
           "unexpected key 'extra'");
  bad_dict(1, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,)}", 8,
           "key 'descr' appears twice");
  bad_dict(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), } garbage", 8,
           "expected only spaces after the header dict");
  bad_dict(1, "{'descr: '<f4', 'fortran_order': False, 'shape': (2,), }", 8, "bad .npy header");
  bad_dict(1, "'descr': '<f4'", 8, "expected '{' starting the header dict");
  /* bool bytes other than 0/1 */
  {
    size_t n;
    unsigned char data[2] = { 1, 7 };
    unsigned char *b = make(1, D("|b1", "False", "(2,)"), data, 2, &n);
    bad_bytes(b, n, "bool element 1 has byte value 7");
    free(b);
  }
}

static void test_files(void) {
  char dir[] = "/tmp/tp_test_npy_XXXXXX";
  if (!mkdtemp(dir)) {
    fprintf(stderr, "mkdtemp failed; skipping file tests\n");
    return;
  }
  char path[256], bad_path[256], missing[256];
  snprintf(path, sizeof path, "%s/x.npy", dir);
  snprintf(bad_path, sizeof bad_path, "%s/no/such/dir/x.npy", dir);
  snprintf(missing, sizeof missing, "%s/missing.npy", dir);
  float v[3] = { 1.5f, -2.0f, 3.25f };
  tp_tensor *t = NULL, *t2 = NULL;
  CHECK_OK(tp_tensor_new(TP_F32, 1, (int64_t[]){ 3 }, v, &t));
  CHECK_OK(tp_npy_save(path, t));
  CHECK_OK(tp_npy_load(path, &t2));
  check_tensor(t2, TP_F32, 1, (int64_t[]){ 3 }, v, sizeof v);
  tp_tensor_release(t2);
  t2 = NULL;
  tp_status s = tp_npy_load(missing, &t2);
  CHECK(s == TP_ERR_IO && t2 == NULL);
  CHECK(strstr(tp_last_error(), "missing.npy: cannot open") != NULL);
  s = tp_npy_save(bad_path, t);
  CHECK(s == TP_ERR_IO && strstr(tp_last_error(), "cannot create") != NULL);
  /* a malformed file names the file */
  FILE *f = fopen(path, "wb");
  size_t n;
  unsigned char *b = make(1, D("<f8", "False", "(1,)"), "\0\0\0\0\0\0\0\0", 8, &n);
  fwrite(b, 1, n, f);
  fclose(f);
  free(b);
  s = tp_npy_load(path, &t2);
  CHECK(s == TP_ERR_PARSE && t2 == NULL);
  char want[512];
  snprintf(want, sizeof want, "%s: unsupported dtype '<f8' (supported: <f4, <i4, <i8, |b1, <f2, |i1, |u1)", path);
  if (!strstr(tp_last_error(), want)) {
    fprintf(stderr, "load message: \"%s\", want \"%s\"\n", tp_last_error(), want);
    failures++;
  }
  tp_tensor_release(t);
  remove(path);
  rmdir(dir);
}

int main(void) {
  test_decode_good();
  test_encode();
  test_malformed();
  test_files();
  if (tp_live_tensors() != 0) {
    fprintf(stderr, "leak: %zu live tensors at exit\n", tp_live_tensors());
    failures++;
  }
  if (failures) {
    fprintf(stderr, "test_npy: %d failure(s)\n", failures);
    return 1;
  }
  printf("test_npy: ok\n");
  return 0;
}
