/* dispatch.h - the runtime layer's API: the kernel table of the best ISA of
 * this CPU (or the one tp_set_isa chose), for ops and lower. */
#ifndef TP_RUNTIME_DISPATCH_H
#define TP_RUNTIME_DISPATCH_H
#include "../core/internal.h"
#include "kernels/kernels.h"

const tp_kernels *tp_kern(void);

#endif
