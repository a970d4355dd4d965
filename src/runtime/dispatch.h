/* dispatch.h - the runtime layer's API: the kernel table of the best ISA of
 * this CPU (or the one tp_set_isa chose), for ops and lower. */
#ifndef TP_RUNTIME_DISPATCH_H
#define TP_RUNTIME_DISPATCH_H
#include "../core/internal.h"
#include "kernels/kernels.h"

const tp_kernels *tp_kern(void);
/* Frees this thread's per-thread kernel buffers (every table's GEMM pack
 * buffers): the pool's workers call it before they exit. */
void tp_kern_thread_release(void);

#endif
