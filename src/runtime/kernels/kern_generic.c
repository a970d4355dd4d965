/* kern_generic.c - the vector family at 4 lanes with no ISA flags: the
 * baseline of any target (on x86-64 the compiler uses SSE2 anyway). */
#include <math.h>
#define VW 4
#define SFX generic
#define ISA_NAME "generic"
#define MR 4
#define NRV 2
static inline __attribute__((always_inline)) float sqrt_lane(float x) { return sqrtf(x); }
#define VSQRT(v) ((vf){sqrt_lane((v)[0]), sqrt_lane((v)[1]), sqrt_lane((v)[2]), sqrt_lane((v)[3])})
#include "vec_impl.h"
