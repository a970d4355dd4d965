/* lock.h - a spinlock for the small global tables of every layer (config,
 * backend registry, host functions, the storage cache, tuning caches).
 * Built on the __atomic builtins so the core needs no pthread link; on
 * single-threaded Wasm the builtins compile to plain loads and stores.
 * Critical sections are short (table edits, string copies) and call no user
 * code but the allocator hook (tp_set_allocator: a table that grows under
 * its lock allocates), which therefore must not call back into the core;
 * backend and host functions run outside the locks. */
#ifndef TP_LOCK_H
#define TP_LOCK_H

typedef struct tp_spinlock { int held; } tp_spinlock;
#define TP_SPINLOCK_INIT {0}

static inline void tp_spin_lock(tp_spinlock *l) {
  while (__atomic_exchange_n(&l->held, 1, __ATOMIC_ACQUIRE))
    while (__atomic_load_n(&l->held, __ATOMIC_RELAXED)) {
    }
}
static inline void tp_spin_unlock(tp_spinlock *l) {
  __atomic_store_n(&l->held, 0, __ATOMIC_RELEASE);
}
#endif
