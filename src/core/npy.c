/* npy.c - numpy .npy files (format versions 1.0, 2.0, 3.0).
 *
 *   "\x93NUMPY" major minor  header_len (u16 LE in 1.0, u32 LE in 2.0/3.0)
 *   "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }" spaces '\n'
 *   data: C order, little-endian
 *
 * Supported dtypes: '<f4' f32, '<i4' i32, '<i8' i64, '|b1' bool, '<f2' f16,
 * '|i1' i8, '|u1' u8 (bfloat16 has no numpy spelling: refused). The writer
 * emits version 1.0 with magic + length + header a multiple of 64 bytes. */
#include "internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

static const struct {
  const char *descr;
  tp_dtype dtype;
} npy_dtypes[] = {
  { "<f4", TP_F32 },
  { "<i4", TP_I32 },
  { "<i8", TP_I64 },
  { "|b1", TP_BOOL },
  { "<f2", TP_F16 },
  { "|i1", TP_I8 },
  { "|u1", TP_U8 },
};
#define NPY_SUPPORTED "<f4, <i4, <i8, |b1, <f2, |i1, |u1"

static int host_is_le(void) {
  const uint16_t one = 1;
  return *(const unsigned char *)&one == 1;
}

static void swap_elems(unsigned char *d, size_t n, size_t isz) {
  if (host_is_le() || isz < 2) return;
  for (size_t k = 0; k + isz <= n; k += isz)
    for (size_t i = 0; i < isz / 2; i++) {
      unsigned char c = d[k + i];
      d[k + i] = d[k + isz - 1 - i];
      d[k + isz - 1 - i] = c;
    }
}

/* ---- header dict: a tiny reader for the python literal numpy writes ---- */
typedef struct hdr {
  const char *c, *end;
  const char *name; /* file name or "npy" for messages */
} hdr;

static void hskip(hdr *h) {
  while (h->c < h->end && (*h->c == ' ' || *h->c == '\t' || *h->c == '\n' || *h->c == '\r'))
    h->c++;
}

static int heat(hdr *h, char ch) {
  hskip(h);
  if (h->c < h->end && *h->c == ch) {
    h->c++;
    return 1;
  }
  return 0;
}

static tp_status hbad(hdr *h, const char *what) {
  char near[24];
  size_t n = (size_t)(h->end - h->c);
  if (n > 16) n = 16;
  size_t j = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)h->c[i];
    near[j++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
  }
  near[j] = 0;
  return tp_fail(TP_ERR_PARSE, "%s: bad .npy header: expected %s, found '%s'", h->name, what,
                 h->c < h->end ? near : "end of header");
}

/* A 'string' or "string" into buf (at most n-1 chars). */
static tp_status hstring(hdr *h, char *buf, size_t n, const char *what) {
  hskip(h);
  if (h->c >= h->end || (*h->c != '\'' && *h->c != '"')) return hbad(h, what);
  char q = *h->c++;
  size_t j = 0;
  while (h->c < h->end && *h->c != q) {
    if (*h->c == '\\' || j + 1 >= n) return hbad(h, what);
    buf[j++] = *h->c++;
  }
  if (h->c >= h->end) return hbad(h, "a closing quote");
  h->c++;
  buf[j] = 0;
  return TP_OK;
}

static int hword(hdr *h, const char *w) {
  hskip(h);
  size_t n = strlen(w);
  if ((size_t)(h->end - h->c) < n || memcmp(h->c, w, n) != 0) return 0;
  h->c += n;
  return 1;
}

/* (2, 3) or (3,) or () ; python 2 files may write 3L. */
static tp_status hshape(hdr *h, int *ndim, int64_t *shape) {
  *ndim = 0;
  if (!heat(h, '(')) return hbad(h, "a shape tuple such as (2, 3)");
  if (heat(h, ')')) return TP_OK;
  for (;;) {
    hskip(h);
    if (h->c >= h->end || *h->c < '0' || *h->c > '9') return hbad(h, "a dimension size");
    int64_t v = 0;
    while (h->c < h->end && *h->c >= '0' && *h->c <= '9') {
      if (v > (INT64_MAX - 9) / 10)
        return tp_fail(TP_ERR_PARSE, "%s: dimension size too large in the .npy shape", h->name);
      v = v * 10 + (*h->c++ - '0');
    }
    if (h->c < h->end && *h->c == 'L') h->c++;
    if (*ndim == TP_MAX_DIMS)
      return tp_fail(TP_ERR_PARSE, "%s: more than %d dimensions (tensorplay supports at most %d)",
                     h->name, TP_MAX_DIMS, TP_MAX_DIMS);
    shape[(*ndim)++] = v;
    int comma = heat(h, ',');
    if (heat(h, ')')) {
      if (*ndim == 1 && !comma) return hbad(h, "',' in the one-element tuple (n,)");
      return TP_OK;
    }
    if (!comma) return hbad(h, "',' or ')' in the shape");
  }
}

typedef struct npy_info {
  tp_dtype dtype;
  int ndim;
  int64_t shape[TP_MAX_DIMS];
  size_t data_off;
} npy_info;

static tp_status parse_header(const unsigned char *b, size_t len, const char *name,
                              npy_info *info) {
  if (len < 10 || memcmp(b, "\x93NUMPY", 6) != 0)
    return tp_fail(TP_ERR_PARSE, "%s: not a .npy file (missing the \\x93NUMPY magic)", name);
  unsigned major = b[6], minor = b[7];
  size_t hlen, pre;
  if (major == 1) {
    hlen = (size_t)b[8] | (size_t)b[9] << 8;
    pre = 10;
  } else if (major == 2 || major == 3) {
    if (len < 12)
      return tp_fail(TP_ERR_PARSE, "%s: truncated .npy header (file has %zu bytes)", name, len);
    hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
    pre = 12;
  } else {
    return tp_fail(TP_ERR_PARSE, "%s: unsupported .npy version %u.%u (supported: 1.0, 2.0, 3.0)",
                   name, major, minor);
  }
  if (minor != 0)
    return tp_fail(TP_ERR_PARSE, "%s: unsupported .npy version %u.%u (supported: 1.0, 2.0, 3.0)",
                   name, major, minor);
  if (hlen > len - pre)
    return tp_fail(TP_ERR_PARSE,
                   "%s: truncated .npy header (header length %zu, but only %zu bytes follow)",
                   name, hlen, len - pre);
  hdr h = { (const char *)b + pre, (const char *)b + pre + hlen, name };
  char key[32], descr[64];
  int have_descr = 0, have_fo = 0, have_shape = 0, fortran = 0;
  if (!heat(&h, '{')) return hbad(&h, "'{' starting the header dict");
  while (!heat(&h, '}')) {
    TP_TRY(hstring(&h, key, sizeof key, "a quoted key ('descr', 'fortran_order', 'shape')"));
    if (!heat(&h, ':')) return hbad(&h, "':' after the key");
    if (!strcmp(key, "descr") && !have_descr) {
      hskip(&h);
      if (h.c < h.end && *h.c == '[')
        return tp_fail(TP_ERR_PARSE,
                       "%s: unsupported dtype: structured arrays (supported: " NPY_SUPPORTED ")",
                       name);
      TP_TRY(hstring(&h, descr, sizeof descr, "a dtype string such as '<f4'"));
      have_descr = 1;
    } else if (!strcmp(key, "fortran_order") && !have_fo) {
      if (hword(&h, "False")) fortran = 0;
      else if (hword(&h, "True")) fortran = 1;
      else return hbad(&h, "True or False for fortran_order");
      have_fo = 1;
    } else if (!strcmp(key, "shape") && !have_shape) {
      TP_TRY(hshape(&h, &info->ndim, info->shape));
      have_shape = 1;
    } else if (!strcmp(key, "descr") || !strcmp(key, "fortran_order") || !strcmp(key, "shape")) {
      return tp_fail(TP_ERR_PARSE, "%s: bad .npy header: key '%s' appears twice", name, key);
    } else {
      return tp_fail(TP_ERR_PARSE,
                     "%s: bad .npy header: unexpected key '%s' (expected descr, fortran_order, shape)",
                     name, key);
    }
    if (!heat(&h, ',')) {
      if (!heat(&h, '}')) return hbad(&h, "',' or '}' in the header dict");
      break;
    }
  }
  hskip(&h);
  if (h.c != h.end) return hbad(&h, "only spaces after the header dict");
  if (!have_descr || !have_fo || !have_shape)
    return tp_fail(TP_ERR_PARSE, "%s: bad .npy header: missing key '%s'", name,
                   !have_descr ? "descr" : !have_fo ? "fortran_order" : "shape");
  int found = -1;
  for (int i = 0; i < TP_ARRAY_LEN(npy_dtypes); i++)
    if (!strcmp(descr, npy_dtypes[i].descr)) found = i;
  if (found < 0) {
    if (descr[0] == '>' && descr[1])
      return tp_fail(TP_ERR_PARSE,
                     "%s: unsupported dtype '%s': big-endian data (supported: " NPY_SUPPORTED ")",
                     name, descr);
    return tp_fail(TP_ERR_PARSE, "%s: unsupported dtype '%s' (supported: " NPY_SUPPORTED ")", name,
                   descr);
  }
  if (fortran) {
    /* numpy writes True only for arrays that are not also C-contiguous */
    return tp_fail(TP_ERR_PARSE,
                   "%s: fortran_order True is not supported (save a C-ordered array, e.g. "
                   "np.ascontiguousarray)",
                   name);
  }
  info->dtype = npy_dtypes[found].dtype;
  info->data_off = pre + hlen;
  return TP_OK;
}

static tp_status decode(const void *bytes, size_t len, const char *name, tp_tensor **out) {
  const unsigned char *b = bytes;
  npy_info info;
  memset(&info, 0, sizeof info);
  *out = NULL;
  if (!b && len) return tp_fail(TP_ERR_INVALID_ARG, "%s: bytes is NULL", name);
  TP_TRY(parse_header(b, len, name, &info));
  size_t isz = tp_dtype_size(info.dtype);
  uint64_t want = isz;
  int overflow = 0;
  for (int i = 0; i < info.ndim; i++) {
    uint64_t d = (uint64_t)info.shape[i];
    if (d && want > UINT64_MAX / d) overflow = 1;
    else want *= d;
  }
  size_t avail = len - info.data_off;
  if (overflow || want > avail)
    return tp_fail(TP_ERR_PARSE, "%s: truncated data: shape needs %s%llu bytes, file has %zu", name,
                   overflow ? "more than " : "", (unsigned long long)(overflow ? UINT64_MAX : want),
                   avail);
  if (want < avail)
    return tp_fail(TP_ERR_PARSE, "%s: %zu unexpected bytes after the data (shape needs %llu)", name,
                   avail - (size_t)want, (unsigned long long)want);
  const unsigned char *d = b + info.data_off;
  if (info.dtype == TP_BOOL)
    for (size_t i = 0; i < (size_t)want; i++)
      if (d[i] > 1)
        return tp_fail(TP_ERR_PARSE, "%s: bool element %zu has byte value %u (expected 0 or 1)",
                       name, i, d[i]);
  if (host_is_le() || isz == 1)
    return tp_tensor_new(info.dtype, info.ndim, info.shape, want ? d : NULL, out);
  unsigned char *tmp = tp_alloc((size_t)want + 1);
  if (!tmp) return tp_fail(TP_ERR_OUT_OF_MEMORY, "%s: out of memory", name);
  memcpy(tmp, d, (size_t)want);
  swap_elems(tmp, (size_t)want, isz);
  tp_status s = tp_tensor_new(info.dtype, info.ndim, info.shape, tmp, out);
  tp_free(tmp);
  return s;
}

tp_status tp_npy_decode(const void *bytes, size_t len, tp_tensor **out) {
  if (!out) return tp_fail(TP_ERR_INVALID_ARG, "npy: out is NULL");
  return decode(bytes, len, "npy", out);
}


tp_status tp_npy_encode(tp_tensor *t, void **out, size_t *len) {
  char hd[256];
  const char *descr = NULL;
  if (!out || !len) return tp_fail(TP_ERR_INVALID_ARG, "npy encode: out or len is NULL");
  *out = NULL;
  *len = 0;
  if (!t) return tp_fail(TP_ERR_INVALID_ARG, "npy encode: tensor is NULL");
  for (int i = 0; i < TP_ARRAY_LEN(npy_dtypes); i++)
    if (npy_dtypes[i].dtype == t->dtype) descr = npy_dtypes[i].descr;
  if (!descr)
    return tp_fail(TP_ERR_UNSUPPORTED, "npy encode: dtype %s has no .npy spelling (supported: " NPY_SUPPORTED ")",
                   tp_dtype_name(t->dtype));
  int n = snprintf(hd, sizeof hd, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  for (int i = 0; i < t->ndim; i++)
    n += snprintf(hd + n, sizeof hd - (size_t)n, i ? ", %lld" : "%lld", (long long)t->shape[i]);
  n += snprintf(hd + n, sizeof hd - (size_t)n, "%s), }", t->ndim == 1 ? "," : "");
  /* pad with spaces so 10 + header (ending in '\n') is a multiple of 64 */
  size_t hlen = ((size_t)n + 1 + 10 + 63) / 64 * 64 - 10;
  size_t isz = tp_dtype_size(t->dtype);
  size_t bytes = (size_t)tp_shape_numel(t->ndim, t->shape) * isz;
  size_t total = 10 + hlen + bytes;
  unsigned char *b = tp_alloc(total ? total : 1);
  if (!b) return tp_fail(TP_ERR_OUT_OF_MEMORY, "npy encode: no memory for %zu bytes", total);
  memcpy(b, "\x93NUMPY\x01\x00", 8);
  b[8] = (unsigned char)(hlen & 0xff);
  b[9] = (unsigned char)(hlen >> 8);
  memcpy(b + 10, hd, (size_t)n);
  memset(b + 10 + n, ' ', hlen - (size_t)n - 1);
  b[10 + hlen - 1] = '\n';
  tp_tensor_gather(t, b + 10 + hlen);
  *out = b;
  *len = total;
  return TP_OK;
}

tp_status tp_npy_load(const char *path, tp_tensor **out) {
  if (!out) return tp_fail(TP_ERR_INVALID_ARG, "npy load: out is NULL");
  *out = NULL;
  if (!path) return tp_fail(TP_ERR_INVALID_ARG, "npy load: path is NULL");
  FILE *f = fopen(path, "rb");
  if (!f) return tp_fail(TP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  tp_buf buf = {0}; /* the whole file */
  tp_status s = TP_OK;
  for (;;) {
    if (!tp_buf_reserve(&buf, 1 << 16)) {
      s = tp_fail(TP_ERR_OUT_OF_MEMORY, "%s: out of memory reading %zu bytes", path, buf.n + ((size_t)1 << 16));
      goto done;
    }
    size_t r = fread(buf.p + buf.n, 1, buf.cap - buf.n - 1, f);
    buf.n += r;
    if (r == 0) {
      if (ferror(f)) {
        s = tp_fail(TP_ERR_IO, "%s: read error: %s", path, strerror(errno));
        goto done;
      }
      break;
    }
  }
  s = decode((const unsigned char *)buf.p, buf.n, path, out);
done:
  fclose(f);
  tp_buf_free(&buf);
  return s;
}

tp_status tp_npy_save(const char *path, tp_tensor *t) {
  void *b = NULL;
  size_t n = 0;
  if (!path) return tp_fail(TP_ERR_INVALID_ARG, "npy save: path is NULL");
  TP_TRY(tp_npy_encode(t, &b, &n));
  tp_status s = TP_OK;
  FILE *f = fopen(path, "wb");
  if (!f) {
    s = tp_fail(TP_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
  } else {
    int bad = fwrite(b, 1, n, f) != n;
    if (fclose(f) != 0) bad = 1;
    if (bad) s = tp_fail(TP_ERR_IO, "%s: write error: %s", path, strerror(errno));
  }
  tp_free(b);
  return s;
}
