/* bigalloc.c - large blocks (>= 64 MiB) on WASI builds, outside malloc.
 *
 * wasi-libc's dlmalloc cannot hand out a block of 2 GiB or more (its
 * requests to sbrk are limited to half the 32-bit address space, so
 * tp.zeros([576716800]), 2.3 GB, failed in a fresh runtime though 4 GiB of
 * memory may exist), and it zero-fills what calloc returns although pages
 * fresh from memory.grow are zero already: on hosts where first touching a
 * page is expensive (21 ms per MiB measured in this sandbox's V8) that
 * memset is most of the cost of a large zeros() or ConstantOfShape.
 *
 * So on WASI a large block is its own run of pages from memory.grow,
 * tracked in a small table of regions: freed regions are kept (Wasm memory
 * never shrinks), merged with free neighbours and reused first-fit (split
 * when the rest is large); a region knows whether it is still untouched
 * since memory.grow, and a zeroed allocation from an untouched region skips
 * the memset. dlmalloc copes with the pages it did not grow (wasi-libc's
 * sbrk asks memory.size each time; a later sbrk starts a new segment).
 * Emscripten's sbrk keeps its own break, so there (and natively, where
 * large callocs are fresh zero pages from mmap) this is off. */
#include "internal.h"
#include "lock.h"
#include <string.h>

#if defined(__wasm__) && defined(__wasi__) && !defined(__EMSCRIPTEN__)

#define PAGE ((size_t)65536)
#define MAX_REGIONS 64

typedef struct region {
  uintptr_t base;
  size_t size;  /* multiple of PAGE */
  int used;
  int dirty;    /* written since memory.grow */
} region;

static region regions[MAX_REGIONS]; /* sorted by base */
static int nregions;
static tp_spinlock big_lock = TP_SPINLOCK_INIT;

static void insert_at(int i, region r) {
  memmove(regions + i + 1, regions + i, sizeof(region) * (size_t)(nregions - i));
  regions[i] = r;
  nregions++;
}

static void remove_at(int i) {
  memmove(regions + i, regions + i + 1, sizeof(region) * (size_t)(nregions - i - 1));
  nregions--;
}

void *tp_big_alloc(size_t n, int zero) {
  if (n > SIZE_MAX - PAGE) return NULL;
  size_t size = (n + PAGE - 1) & ~(PAGE - 1);
  void *p = NULL;
  int dirty = 0;
  tp_spin_lock(&big_lock);
  for (int i = 0; i < nregions && !p; i++) {
    region *r = &regions[i];
    if (r->used || r->size < size) continue;
    if (r->size - size >= TP_BIG_MIN && nregions < MAX_REGIONS) { /* split: the rest stays free */
      region rest = {r->base + size, r->size - size, 0, r->dirty};
      r->size = size;
      insert_at(i + 1, rest);
      r = &regions[i];
    }
    r->used = 1;
    dirty = r->dirty;
    r->dirty = 1;
    p = (void *)r->base;
  }
  if (!p && nregions < MAX_REGIONS) {
    size_t old = __builtin_wasm_memory_grow(0, size / PAGE);
    if (old != SIZE_MAX) {
      region r = {old * PAGE, size, 1, 1};
      int i = nregions;
      while (i > 0 && regions[i - 1].base > r.base) i--;
      insert_at(i, r);
      p = (void *)r.base;
      dirty = 0; /* fresh pages are zero */
    }
  }
  tp_spin_unlock(&big_lock);
  if (p && zero && dirty) memset(p, 0, n);
  return p;
}

int tp_big_owns(const void *p) {
  uintptr_t a = (uintptr_t)p;
  int yes = 0;
  tp_spin_lock(&big_lock);
  for (int i = 0; i < nregions && !yes; i++) yes = regions[i].used && regions[i].base == a;
  tp_spin_unlock(&big_lock);
  return yes;
}

void tp_big_free(void *p) {
  uintptr_t a = (uintptr_t)p;
  tp_spin_lock(&big_lock);
  for (int i = 0; i < nregions; i++) {
    if (regions[i].base != a || !regions[i].used) continue;
    regions[i].used = 0;
    /* merge with free neighbours that touch it */
    if (i + 1 < nregions && !regions[i + 1].used && regions[i].base + regions[i].size == regions[i + 1].base) {
      regions[i].size += regions[i + 1].size;
      regions[i].dirty |= regions[i + 1].dirty;
      remove_at(i + 1);
    }
    if (i > 0 && !regions[i - 1].used && regions[i - 1].base + regions[i - 1].size == regions[i].base) {
      regions[i - 1].size += regions[i].size;
      regions[i - 1].dirty |= regions[i].dirty;
      remove_at(i);
    }
    break;
  }
  tp_spin_unlock(&big_lock);
}

#else
void *tp_big_alloc(size_t n, int zero) {
  (void)n, (void)zero;
  return NULL;
}
int tp_big_owns(const void *p) {
  (void)p;
  return 0;
}
void tp_big_free(void *p) { (void)p; }
#endif
