/* tensor_pb.c - ONNX TensorProto <-> tensors (initializers, Constant values
 * and the .pb files of the ONNX test data). */
#include "onnx.h"
#include "pb.h"
#include "tensor_pb.h"
#include <errno.h>
#include <stdio.h>

const char *tp_onnx_dtype_name(int t) {
  static const char *names[] = {"UNDEFINED", "FLOAT",  "UINT8",   "INT8",   "UINT16",
                                "INT16",     "INT32",  "INT64",   "STRING", "BOOL",
                                "FLOAT16",   "DOUBLE", "UINT32",  "UINT64", "COMPLEX64",
                                "COMPLEX128", "BFLOAT16"};
  return t >= 0 && t < TP_ARRAY_LEN(names) ? names[t] : "an unknown type";
}

int tp_onnx_to_dtype(int64_t t, tp_dtype *out) {
  switch (t) {
    case TP_ONNX_FLOAT: *out = TP_F32; return 1;
    case TP_ONNX_INT32: *out = TP_I32; return 1;
    case TP_ONNX_INT64: *out = TP_I64; return 1;
    case TP_ONNX_BOOL: *out = TP_BOOL; return 1;
    case TP_ONNX_FLOAT16: *out = TP_F16; return 1;
    case TP_ONNX_BFLOAT16: *out = TP_BF16; return 1;
    case TP_ONNX_INT8: *out = TP_I8; return 1;
    case TP_ONNX_UINT8: *out = TP_U8; return 1;
    default: return 0;
  }
}

int tp_onnx_from_dtype(tp_dtype d) {
  switch (d) {
    case TP_F32: return TP_ONNX_FLOAT;
    case TP_I32: return TP_ONNX_INT32;
    case TP_I64: return TP_ONNX_INT64;
    case TP_F16: return TP_ONNX_FLOAT16;
    case TP_BF16: return TP_ONNX_BFLOAT16;
    case TP_I8: return TP_ONNX_INT8;
    case TP_U8: return TP_ONNX_UINT8;
    default: return TP_ONNX_BOOL;
  }
}

tp_status tp_onnx_tensor_read(tp_pb *r, const char *what, tp_tensor **out, char **name_out) {
  int64_t *dims = NULL, *ints = NULL;
  float *floats = NULL;
  size_t ndims = 0, nints = 0, nfloats = 0;
  const uint8_t *raw = NULL;
  size_t rawlen = 0;
  int has_raw = 0, external = 0, has_double = 0;
  int64_t dtype = 0;
  char *name = NULL;
  tp_tensor *t = NULL;
  tp_status s = TP_OK;
  tp_pb_field f;
  int k;
  *out = NULL;
  while ((k = tp_pb_next(r, &f)) > 0 && !s) {
    switch (f.num) {
      case 1: s = tp_pb_ints(r, &f, &dims, &ndims); break;
      case 2: if (!(s = tp_pb_need(r, &f, TP_PB_VARINT))) dtype = (int64_t)f.u; break;
      case 4: s = tp_pb_floats(r, &f, &floats, &nfloats); break;
      case 5: case 7: s = tp_pb_ints(r, &f, &ints, &nints); break;
      case 8:
        tp_free(name);
        name = NULL;
        s = tp_pb_string(r, &f, &name);
        break;
      case 9:
        if (!(s = tp_pb_need(r, &f, TP_PB_LEN))) raw = f.data, rawlen = f.len, has_raw = 1;
        break;
      case 10: has_double = 1; break;
      case 13: external = 1; break;
      case 14: if (f.wire == TP_PB_VARINT && f.u == 1) external = 1; break;
      default: break; /* segment, string_data, uint64_data, doc_string: ignored */
    }
  }
  if (k < 0) s = (tp_status)-k;
  if (s) goto done;
  const char *nm = name ? name : "";
  tp_dtype dt;
  if (external) {
    s = tp_fail(TP_ERR_UNSUPPORTED, "onnx: %s '%s' uses external data, which is not supported",
                what, nm);
    goto done;
  }
  if (!tp_onnx_to_dtype(dtype, &dt)) {
    s = tp_fail(TP_ERR_UNSUPPORTED,
                "onnx: %s '%s' has dtype %s, which is not supported (" TP_ONNX_DTYPES ")",
                what, nm, tp_onnx_dtype_name((int)dtype));
    goto done;
  }
  (void)has_double;
  if (ndims > TP_MAX_DIMS) {
    s = tp_fail(TP_ERR_UNSUPPORTED, "onnx: %s '%s' has %zu dims (at most %d are supported)", what,
                nm, ndims, TP_MAX_DIMS);
    goto done;
  }
  int64_t numel = 1;
  for (size_t i = 0; i < ndims; i++) {
    if (dims[i] < 0 || (dims[i] && numel > TP_MAX_NUMEL / dims[i])) {
      s = tp_fail(TP_ERR_PARSE, "onnx: %s '%s' has an invalid dim %lld", what, nm,
                  (long long)dims[i]);
      goto done;
    }
    numel *= dims[i];
  }
  size_t isz = tp_dtype_size(dt);
  size_t have = has_raw ? rawlen / isz : dt == TP_F32 ? nfloats : nints;
  if ((has_raw && rawlen != (size_t)numel * isz) || (!has_raw && have != (size_t)numel)) {
    s = tp_fail(TP_ERR_PARSE, "onnx: %s '%s' has %zu bytes of data for %lld %s elements", what, nm,
                has_raw ? rawlen : have * isz, (long long)numel, tp_dtype_name(dt));
    goto done;
  }
  if ((s = tp_tensor_empty(dt, (int)ndims, dims, &t))) goto done;
  void *dst = tp_tensor_ptr(t);
  if (has_raw) {
    if (rawlen) memcpy(dst, raw, rawlen); /* little-endian hosts only (x86, Wasm) */
    if (dt == TP_BOOL)
      for (int64_t i = 0; i < numel; i++) ((uint8_t *)dst)[i] = ((uint8_t *)dst)[i] != 0;
  } else {
    for (int64_t i = 0; i < numel; i++) switch (dt) {
        case TP_F32: ((float *)dst)[i] = floats[i]; break;
        case TP_I32: ((int32_t *)dst)[i] = (int32_t)ints[i]; break;
        case TP_I64: ((int64_t *)dst)[i] = ints[i]; break;
        /* int32_data holds float16/bfloat16 bit patterns and int8/uint8 values */
        case TP_F16: case TP_BF16: ((uint16_t *)dst)[i] = (uint16_t)ints[i]; break;
        case TP_I8: ((int8_t *)dst)[i] = (int8_t)ints[i]; break;
        case TP_U8: ((uint8_t *)dst)[i] = (uint8_t)ints[i]; break;
        default: ((uint8_t *)dst)[i] = ints[i] != 0; break;
      }
  }
  *out = t;
  t = NULL;
  if (name_out) {
    *name_out = name;
    name = NULL;
  }
done:
  tp_tensor_release(t);
  tp_free(dims);
  tp_free(ints);
  tp_free(floats);
  tp_free(name);
  return s;
}

tp_status tp_onnx_tensor_decode(const void *bytes, size_t len, tp_tensor **out) {
  tp_pb r;
  if (!out || (len && !bytes)) return tp_fail(TP_ERR_INVALID_ARG, "onnx: tensor decode: NULL argument");
  tp_pb_init(&r, bytes, len, "TensorProto");
  return tp_onnx_tensor_read(&r, "tensor", out, NULL);
}

tp_status tp_onnx_tensor_encode(tp_tensor *t, const char *name, void **out, size_t *len) {
  if (!t || !out || !len) return tp_fail(TP_ERR_INVALID_ARG, "onnx: tensor encode: NULL argument");
  tp_tensor *c = NULL;
  TP_TRY(tp_contiguous(t, &c));
  tp_pbw w = {0};
  for (int i = 0; i < t->ndim; i++) tp_pbw_varint(&w, 1, (uint64_t)t->shape[i]);
  tp_pbw_varint(&w, 2, (uint64_t)tp_onnx_from_dtype(t->dtype));
  if (name && *name) tp_pbw_bytes(&w, 8, name, strlen(name));
  tp_pbw_bytes(&w, 9, tp_tensor_ptr(c), (size_t)tp_tensor_numel(c) * tp_dtype_size(c->dtype));
  tp_tensor_release(c);
  if (w.oom) {
    tp_free(w.p);
    return tp_fail(TP_ERR_OUT_OF_MEMORY, "onnx: tensor encode: out of memory");
  }
  if (!w.p) w.p = tp_alloc(1);
  *out = w.p;
  *len = w.n;
  return TP_OK;
}

tp_status tp_onnx_read_file(const char *path, uint8_t **out, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return tp_fail(TP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  tp_buf b = {0};
  for (;;) {
    /* tp_buf keeps room for the NUL that text readers rely on */
    if (!tp_buf_reserve(&b, (size_t)1 << 16)) {
      tp_buf_free(&b);
      fclose(f);
      return tp_fail(TP_ERR_OUT_OF_MEMORY, "%s: out of memory", path);
    }
    size_t r = fread(b.p + b.n, 1, b.cap - b.n - 1, f);
    b.n += r;
    if (r == 0) break;
  }
  int err = ferror(f);
  fclose(f);
  if (err) {
    tp_buf_free(&b);
    return tp_fail(TP_ERR_IO, "%s: read error", path);
  }
  b.p[b.n] = 0;
  *out = (uint8_t *)b.p;
  *len = b.n;
  return TP_OK;
}

tp_status tp_onnx_tensor_load(const char *path, tp_tensor **out) {
  uint8_t *b;
  size_t n;
  TP_TRY(tp_onnx_read_file(path, &b, &n));
  tp_status s = tp_onnx_tensor_decode(b, n, out);
  tp_free(b);
  if (s) tp_fail_context(s, "%s", path);
  return s;
}

tp_status tp_onnx_tensor_save(const char *path, tp_tensor *t) {
  void *b;
  size_t n;
  TP_TRY(tp_onnx_tensor_encode(t, NULL, &b, &n));
  tp_status s = tp_onnx_write_file(path, b, n);
  tp_free(b);
  return s;
}

tp_status tp_onnx_write_file(const char *path, const void *bytes, size_t n) {
  FILE *f = fopen(path, "wb");
  tp_status s = TP_OK;
  if (!f || fwrite(bytes, 1, n, f) != n) s = tp_fail(TP_ERR_IO, "%s: cannot write", path);
  if (f && fclose(f) && !s) s = tp_fail(TP_ERR_IO, "%s: cannot write", path);
  return s;
}
