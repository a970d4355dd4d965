/* buf.h - the core's two containers, used everywhere instead of hand-written
 * copies:
 *
 *   tp_buf            a growable byte buffer (text or binary) with a sticky
 *                     out-of-memory flag: write freely, check b.oom once at
 *                     the end (the Wasm writer's rule). The bytes stay
 *                     NUL-terminated, so text can be read as b.p directly.
 *   tp_array_reserve  grows a (pointer, capacity) pair by doubling; the one
 *                     growth rule for every array of the core.
 *
 * Memory comes from tp_alloc / tp_realloc / tp_free (src/core/alloc.c), so
 * the allocator hook sees it and tests can fail it. */
#ifndef TP_BUF_H
#define TP_BUF_H
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include "../tensorplay.h"

typedef struct tp_buf {
  char *p;       /* NULL until the first write; owned (tp_buf_free) */
  size_t n, cap; /* bytes written (no NUL), bytes allocated */
  int oom;       /* sticky: a write failed; later writes do nothing */
} tp_buf;

/* Room for `extra` more bytes (and the NUL). 0 (and oom set) on failure. */
int tp_buf_reserve(tp_buf *b, size_t extra);
void tp_buf_putn(tp_buf *b, const void *s, size_t n);
void tp_buf_puts(tp_buf *b, const char *s);
void tp_buf_putc(tp_buf *b, int c);
void tp_buf_printf(tp_buf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void tp_buf_vprintf(tp_buf *b, const char *fmt, va_list ap);
/* The contents as a NUL-terminated string owned by the caller (free with
 * tp_free; "" when nothing was written), or NULL with TP_ERR_OUT_OF_MEMORY
 * recorded when any write failed. The buffer is left empty either way. */
char *tp_buf_take(tp_buf *b);
void tp_buf_free(tp_buf *b);

/* Make *items (elements of elem_size bytes, capacity *cap) hold at least
 * `need` elements, doubling from a first capacity of 8. On failure returns
 * TP_ERR_OUT_OF_MEMORY (message recorded) and leaves *items and *cap as
 * they were. Use TP_ARRAY_RESERVE to pass the element size. */
tp_status tp_array_reserve(void **items, int *cap, int64_t need, size_t elem_size);
#define TP_ARRAY_RESERVE(items, cap, need) \
  tp_array_reserve((void **)&(items), &(cap), (need), sizeof *(items))

#endif
