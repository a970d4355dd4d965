/* buf.c - tp_buf and tp_array_reserve (see buf.h). */
#include "buf.h"
#include "internal.h"
#include <stdio.h>

int tp_buf_reserve(tp_buf *b, size_t extra) {
  if (b->oom) return 0;
  if (extra > SIZE_MAX / 2 - b->n) {
    b->oom = 1;
    return 0;
  }
  if (b->n + extra + 1 <= b->cap) return 1;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->n + extra + 1) cap *= 2;
  char *p = tp_realloc(b->p, cap);
  if (!p) {
    b->oom = 1;
    return 0;
  }
  b->p = p;
  b->cap = cap;
  return 1;
}

void tp_buf_putn(tp_buf *b, const void *s, size_t n) {
  if (!tp_buf_reserve(b, n)) return;
  if (n) memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}

void tp_buf_puts(tp_buf *b, const char *s) { tp_buf_putn(b, s, strlen(s)); }

void tp_buf_putc(tp_buf *b, int c) {
  char ch = (char)c;
  tp_buf_putn(b, &ch, 1);
}

void tp_buf_vprintf(tp_buf *b, const char *fmt, va_list ap) {
  char small[256];
  va_list ap2;
  va_copy(ap2, ap);
  int len = vsnprintf(small, sizeof small, fmt, ap);
  if (len < 0) {
    b->oom = 1;
  } else if ((size_t)len < sizeof small) {
    tp_buf_putn(b, small, (size_t)len);
  } else if (tp_buf_reserve(b, (size_t)len)) {
    vsnprintf(b->p + b->n, (size_t)len + 1, fmt, ap2);
    b->n += (size_t)len;
  }
  va_end(ap2);
}

void tp_buf_printf(tp_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tp_buf_vprintf(b, fmt, ap);
  va_end(ap);
}

char *tp_buf_take(tp_buf *b) {
  if (b->oom) {
    tp_buf_free(b);
    tp_fail(TP_ERR_OUT_OF_MEMORY, "out of memory while building a buffer");
    return NULL;
  }
  if (!b->p) return tp_strdup("");
  char *p = b->p;
  b->p = NULL;
  b->n = b->cap = 0;
  return p;
}

void tp_buf_free(tp_buf *b) {
  tp_free(b->p);
  b->p = NULL;
  b->n = b->cap = 0;
  b->oom = 0;
}

tp_status tp_array_reserve(void **items, int *cap, int64_t need, size_t elem_size) {
  if (need <= *cap) return TP_OK;
  if (need > INT32_MAX || (elem_size && (uint64_t)need > SIZE_MAX / 2 / elem_size))
    return tp_fail(TP_ERR_OUT_OF_MEMORY, "out of memory: %lld elements of %zu bytes",
                   (long long)need, elem_size);
  int64_t nc = *cap ? *cap : 8;
  while (nc < need) nc *= 2;
  if (nc > INT32_MAX) nc = INT32_MAX;
  void *p = tp_realloc(*items, (size_t)nc * elem_size);
  if (!p) return TP_ERR_OUT_OF_MEMORY;
  *items = p;
  *cap = (int)nc;
  return TP_OK;
}
