/* plan_impl.h - the executor's plan (struct tp_plan), private to
 * src/lower: plan.c builds and frees it (arena, constant packing, donor
 * sharing), executor.c runs it. */
#ifndef TP_PLAN_IMPL_H
#define TP_PLAN_IMPL_H
#include "lower.h"

#define CH 256
#define SCRATCH_FLOATS ((size_t)CH * (TP_KIR_MAX_INS + 2 + TP_KIR_MAX_IN)) /* a chunk's evaluation scratch, then gather chunks (short rows) */

typedef tp_kir_prep prep;

struct tp_plan {
  tp_kir_program *p;
  char *arena_raw, *arena;
  prep *preps;
  float *scratch;          /* SCRATCH_FLOATS: TP_KIR_MAX_INS + 2 + TP_KIR_MAX_IN chunks of CH floats */
  float *par_scratch;      /* per pool thread: SCRATCH_FLOATS each (grown on demand) */
  char *bpack;             /* a GEMM's B packed once per run for the threads (grown on demand) */
  size_t bpack_bytes;
  int par_nscratch;
  tp_tensor ***tuples;     /* per kernel: results of call_host / invoke (NULL terminated) */
  void **packed;           /* per kernel: B of a constant-weight GEMM, packed once */
  void **packed_a;         /* per kernel: a constant A (1x1 conv weight) when B is not; a conv's tp_conv_prep */
  void **packed_h;         /* per kernel: a float16 constant B (b_f16) packed as float16 panels */
  tp_qmm_b *qmm;           /* per kernel: a matmul_int's constant int8/uint8 B packed for the integer GEMM */
  unsigned char *borrowed; /* per kernel (or NULL): 1 packed, 2 packed_a, 4 qmm belong to a donor plan */
  const tp_lower_accel *accel; /* attached by tp_plan_accelerate, or NULL */
  void *accel_state;       /* the accelerator's, opaque here */
  const tp_kernels *packed_by; /* the table whose layout packed[] uses */
  int running;
  tp_plan_prof *prof;      /* per-kernel times while profiling (profile.c), else NULL */
  tp_plan **subs;          /* 2 per kernel: a cond's then/else or a while_loop's cond/body plans (tp_lower), or NULL */
};

#endif
