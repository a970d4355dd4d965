/* alloc_sweep.h - allocation-failure sweeps shared by the C tests.
 *
 * A counting allocator (installed with tp_set_allocator) records every live
 * block with its size and can fail the Nth allocation attempt. sweep_run()
 * runs a scenario once to learn its baseline and its number of allocations
 * (a warm-up run first, so lazily created global state is made once), then
 * for every N = 1 .. total+1 runs it again in a forked child with the Nth
 * allocation failed, and checks:
 *   - the scenario returns TP_ERR_OUT_OF_MEMORY and tp_last_error() mentions
 *     memory, or it completes (the failure was absorbed by a fallback) with
 *     results equal to the baseline's;
 *   - a non-OK status only when an allocation was failed;
 *   - nothing leaks: live tensors, live storage bytes and the allocator's own
 *     live blocks and bytes are back to the baseline, and every free passes
 *     the size that was allocated;
 *   - the scenario then passes again with correct results (the runtime is
 *     usable after the failure);
 *   - no crash and no sanitizer report (each N runs in its own child).
 * The scenario reports where it stopped through SWEEP_STEP. */
#ifndef TP_TESTS_ALLOC_SWEEP_H
#define TP_TESTS_ALLOC_SWEEP_H
#include <stddef.h>
#include "tensorplay.h"

typedef struct sweep_alloc_state {
  long calls;        /* allocation attempts (malloc or growing realloc) */
  long fail_at;      /* fail the attempt with this number (0: never) */
  int failed;        /* the injected failure happened */
  size_t live_bytes; /* bytes in live blocks */
  long live_blocks;
  long bad_sizes; /* frees / reallocs whose old_size did not match */
  long unknown;   /* frees of blocks this allocator did not make */
} sweep_alloc_state;
extern sweep_alloc_state sweep_alloc;

/* Install / remove the counting allocator (tp_set_allocator). */
void sweep_install(void);
void sweep_uninstall(void);

/* Where the scenario stopped, for messages: set by SWEEP_STEP. */
extern const char *sweep_step;
extern tp_status sweep_status;
extern char sweep_msg[1100];
/* Call at the scenario's start. */
void sweep_begin(void);

/* SWEEP_STEP(name, call): run a tp_status call; on failure record the step,
 * status and message and `goto cleanup`. */
#define SWEEP_STEP(name, expr)                  \
  do {                                          \
    sweep_step = (name);                        \
    tp_status s_ = (expr);                      \
    if (s_ != TP_OK) {                          \
      sweep_fail_status(s_);                    \
      goto cleanup;                             \
    }                                           \
  } while (0)
void sweep_fail_status(tp_status s);

typedef struct sweep_case {
  const char *name;
  /* Runs the scenario, writing its results into res (res_size bytes, zeroed
   * before the call); returns sweep_status. Must free everything it made. */
  tp_status (*run)(void *ud, void *res);
  /* Results equal (NULL: memcmp of res_size bytes). */
  int (*same)(const void *a, const void *b, size_t res_size);
  size_t res_size;
  void *ud;
} sweep_case;

/* Runs the whole sweep of one case with the counting allocator installed
 * (and removed at the end). `base` (res_size bytes) receives the baseline
 * results for the caller's own checks. Prints one summary line and a FAIL
 * line per problem; returns the number of failures. *total receives the
 * number of allocations of one run (may be NULL). */
int sweep_run(const sweep_case *c, void *base, long *total);

#endif
