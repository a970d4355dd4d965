/* alloc.c - every allocation of the core goes through one replaceable hook
 * (Lua's lua_Alloc), so tests can fail the Nth allocation. */
#include "internal.h"
#include <stdlib.h>

/* malloc, but for large blocks on WASI (bigalloc.c). */
static void *default_alloc(void *ud, void *p, size_t old_n, size_t new_n) {
  (void)ud;
  if (p && tp_big_owns(p)) {
    void *q = NULL;
    if (new_n) {
      q = new_n >= TP_BIG_MIN ? tp_big_alloc(new_n, 0) : malloc(new_n);
      if (!q) return NULL;
      memcpy(q, p, old_n < new_n ? old_n : new_n);
    }
    tp_big_free(p);
    return q;
  }
  if (new_n == 0) {
    free(p);
    return NULL;
  }
  if (!p && new_n >= TP_BIG_MIN) {
    void *q = tp_big_alloc(new_n, 0);
    if (q) return q;
  }
  return realloc(p, new_n);
}

static tp_alloc_fn alloc_fn = default_alloc;
static void *alloc_ud;

void tp_set_allocator(tp_alloc_fn fn, void *ud) {
  tp_release_cached_memory(); /* blocks of the old allocator go back to it */
  alloc_fn = fn ? fn : default_alloc;
  alloc_ud = fn ? ud : NULL;
}

void *tp_alloc_sized(size_t n) {
  void *p = alloc_fn(alloc_ud, NULL, 0, n ? n : 1);
  if (!p) tp_fail(TP_ERR_OUT_OF_MEMORY, "out of memory: failed to allocate %zu bytes", n);
  return p;
}

void *tp_calloc_sized(size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) {
    tp_fail(TP_ERR_OUT_OF_MEMORY, "out of memory: %zu x %zu bytes overflows", n, size);
    return NULL;
  }
  if (alloc_fn == default_alloc) {
    /* pages fresh from the system are zero already: calloc (an mmap for a
     * large block natively) and bigalloc.c's untouched regions skip the
     * memset that would fault every page in */
    size_t b = (n * size) != 0 ? n * size : 1;
    void *p = b >= TP_BIG_MIN ? tp_big_alloc(b, 1) : NULL;
    if (!p) p = calloc(b, 1);
    if (!p) tp_fail(TP_ERR_OUT_OF_MEMORY, "out of memory: failed to allocate %zu bytes", b);
    return p;
  }
  void *p = tp_alloc_sized(n * size);
  if (p) memset(p, 0, n * size);
  return p;
}

void *tp_realloc_sized(void *p, size_t old_n, size_t new_n) {
  void *q = alloc_fn(alloc_ud, p, old_n, new_n ? new_n : 1);
  if (!q) tp_fail(TP_ERR_OUT_OF_MEMORY, "out of memory: failed to grow to %zu bytes", new_n);
  return q;
}

void tp_free_sized(void *p, size_t n) {
  if (p) alloc_fn(alloc_ud, p, n, 0);
}

/* Sized header so callers need not remember sizes (16 bytes keeps alignment). */
#define HDR 16
void *tp_alloc(size_t n) {
  if (n > SIZE_MAX - HDR) {
    tp_fail(TP_ERR_OUT_OF_MEMORY, "out of memory: %zu bytes", n);
    return NULL;
  }
  char *p = tp_alloc_sized(n + HDR);
  if (!p) return NULL;
  *(size_t *)p = n + HDR;
  return p + HDR;
}

void *tp_realloc(void *q, size_t n) {
  if (!q) return tp_alloc(n);
  char *p = (char *)q - HDR;
  size_t old = *(size_t *)p;
  char *r = tp_realloc_sized(p, old, n + HDR);
  if (!r) return NULL;
  *(size_t *)r = n + HDR;
  return r + HDR;
}

void tp_free(void *q) {
  if (!q) return;
  char *p = (char *)q - HDR;
  tp_free_sized(p, *(size_t *)p);
}

char *tp_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = tp_alloc(n);
  if (d) memcpy(d, s, n);
  return d;
}


/* The public name for freeing what the library returns (tensorplay.h). */
void tp_free_buffer(void *p) { tp_free(p); }
