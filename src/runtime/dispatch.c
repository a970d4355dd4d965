/* dispatch.c - picks the kernel table for this CPU once (SSE2 baseline,
 * AVX2+FMA, AVX-512F natively; SIMD128 in Wasm). tp_set_isa lowers it for
 * tests and benchmarks. */
#include "dispatch.h"

static const tp_kernels *active;

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
static int f16c(void) {
  unsigned a, b, c, d;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#endif

static const tp_kernels *best(void) {
#if defined(__wasm_simd128__)
  return &tp_kernels_wasmsimd;
#elif defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return &tp_kernels_avx512;
  /* F16C: the float16-B GEMM's vcvtph2ps (every AVX2 CPU has it) */
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c()) return &tp_kernels_avx2;
  return &tp_kernels_sse2;
#else
  return &tp_kernels_generic;
#endif
}

/* atomic: a racing first call computes the same table */
const tp_kernels *tp_kern(void) {
  const tp_kernels *k = __atomic_load_n(&active, __ATOMIC_ACQUIRE);
  if (!k) __atomic_store_n(&active, k = best(), __ATOMIC_RELEASE);
  return k;
}

/* Every table this build has, best first. */
static const tp_kernels *const all_tables[] = {
#if defined(__wasm_simd128__)
    &tp_kernels_wasmsimd,
#endif
#if defined(__x86_64__) || defined(__i386__)
    &tp_kernels_avx512, &tp_kernels_avx2, &tp_kernels_sse2,
#endif
    &tp_kernels_generic};
#define NTABLES ((int)(sizeof all_tables / sizeof all_tables[0]))

void tp_kern_thread_release(void) {
  const tp_kernels *const *all = all_tables;
  for (int i = 0; i < NTABLES; i++)
    if (all[i]->gemm_release) all[i]->gemm_release();
}

const char *tp_isa_name(void) { return tp_kern()->isa; }

tp_status tp_set_isa(const char *name) {
  const tp_kernels *const *all = all_tables;
  const tp_kernels *b = best();
  int allowed = 0; /* only ISAs at or below the best one */
  for (int i = 0; i < NTABLES; i++) {
    if (all[i] == b) allowed = 1;
    if (allowed && name && !strcmp(name, all[i]->isa)) {
      __atomic_store_n(&active, all[i], __ATOMIC_RELEASE);
      return TP_OK;
    }
  }
  if (name && !strcmp(name, "best")) {
    __atomic_store_n(&active, b, __ATOMIC_RELEASE);
    return TP_OK;
  }
  return tp_fail(TP_ERR_UNSUPPORTED, "isa '%s' is not available on this CPU (best: %s)",
                 name ? name : "(null)", b->isa);
}
