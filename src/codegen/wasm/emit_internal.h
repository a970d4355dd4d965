/* emit_internal.h - what the files of the SIMD128 emitter share (not part of
 * the emitter's interface, which is emit.h):
 *
 *   emit.c            module assembly: one function per kernel (two passes:
 *                     gather the vector constants, then emit), the run
 *                     entry, exports; the instruction stream (tp_em_put)
 *   emit_math.c       exp, log, tanh, sigmoid, erf, the GELUs ... as SIMD128
 *                     instruction sequences (the fast family of vec_impl.h,
 *                     constants from runtime/kernels/mathconst.h)
 *   emit_pointwise.c  pointwise and row kernels: KIR expressions over 4
 *                     lanes, loop nests, interleaved loops, reductions
 *   emit_gemm.c       constant-weight GEMMs: register tile, fused epilogue
 *
 * The helpers below write one instruction each into the current function
 * (or the recording, see tp_em_put) and do nothing once e->s holds an
 * error, so emitting code checks the status once at the end. */
#ifndef TP_CODEGEN_WASM_EMIT_INTERNAL_H
#define TP_CODEGEN_WASM_EMIT_INTERNAL_H
#include "emit.h"
#include "writer.h"
#include <math.h>
#include <string.h>

#define POOL_MAX 96 /* distinct v128 constants kept in locals per function */
#define PPOOL_MAX 512 /* i32 / f32 numbers read from the parameter block per function */

/* The module's parameter block being filled (emit.h, params). */
typedef struct em_block {
  uint8_t *b;
  size_t len;
  int cap;
  uint32_t slot;  /* the pointer table's index of the block's address */
} em_block;

/* One recorded instruction. */
enum { RK_OP, RK_LOCAL, RK_I32, RK_F32, RK_V128, RK_MEM, RK_LANE,
       RK_NUM, RK_FNUM }; /* an i32 / f32 number of the program (emit.h params), else constants alike */
typedef struct rins {
  uint8_t kind;
  tp_wasm_op op;
  uint32_t a;  /* local index, memory offset, lane */
  int32_t i;
  float f;
  uint8_t b[16];
} rins;

/* The state of one function being emitted. */
typedef struct em {
  tp_wasm_func *f;
  tp_status s;                 /* sticky: the first error */
  int collect;                 /* first pass: only gather the vector constants */
  int npool;                   /* distinct v128 constants, kept in locals */
  uint8_t pool[POOL_MAX][16];
  uint32_t pool_local[POOL_MAX];
  int relaxed;                 /* f32x4.relaxed_madd for p * r + c */
  int mr;                      /* GEMM register tile rows (1..GMR_MAX) */
  int ranged;                  /* a map kernel of (ptrs, r0, r1): split_rows (emit.h) */
  uint32_t v0; int vn, vtop;   /* v128 temporaries */
  uint32_t i0; int in, itop;   /* i32 temporaries */
  uint32_t f0; int fn, ftop;   /* f32 temporaries */
  /* recording (pointwise loop bodies, replayed interleaved: row_loop) */
  rins *rec;
  int nrec, caprec, recording;
  int banks;                   /* locals for the interleaved copies, made once */
  uint32_t bank_v[4], bank_i[4];
  /* params: the numbers read from the parameter block (emit.h) */
  em_block *blk;               /* NULL: numbers are constants */
  int npp, pcur;               /* numbers gathered (first pass); the next one (second) */
  int32_t pp[PPOOL_MAX];       /* bits of an i32 or f32, in the order the first pass met them */
  uint32_t pp_site[PPOOL_MAX];
  uint64_t sig;                /* first pass: a hash of everything but the numbers' values */
  int mismatch;                /* second pass: a number not at its position (the bytes depend on values) */
  uint8_t pp_f32[PPOOL_MAX];
  uint32_t pp_local[PPOOL_MAX];
} em;

/* ---- the instruction stream (emit.c) ---- */
/* Writes r into the function now. */
tp_status tp_em_raw(tp_wasm_func *f, const rins *r);
/* Emits r now, or appends it to the recording. */
void tp_em_put(em *e, rins r);
/* A v128 constant: gathered in the first pass, then read from its local
 * (set once at function entry) so loops do not rematerialize it. */
void tp_em_vconst(em *e, const uint8_t b[16]);

#define OK(e) ((e)->s == TP_OK && !(e)->collect)
static inline void op(em *e, tp_wasm_op o) { tp_em_put(e, (rins){.kind = RK_OP, .op = o}); }
static inline void lget(em *e, uint32_t l) { tp_em_put(e, (rins){.kind = RK_LOCAL, .op = TP_WASM_OP_LOCAL_GET, .a = l}); }
static inline void lset(em *e, uint32_t l) { tp_em_put(e, (rins){.kind = RK_LOCAL, .op = TP_WASM_OP_LOCAL_SET, .a = l}); }
static inline void ltee(em *e, uint32_t l) { tp_em_put(e, (rins){.kind = RK_LOCAL, .op = TP_WASM_OP_LOCAL_TEE, .a = l}); }
static inline void i32c(em *e, int32_t v) { tp_em_put(e, (rins){.kind = RK_I32, .i = v}); }
static inline void f32c(em *e, float v) { tp_em_put(e, (rins){.kind = RK_F32, .f = v}); }
/* A number of the program (an extent, a stride, an offset, a bound, a
 * row's 1/R): a constant, or with params read from the block (emit.h).
 * i32c and f32c are the emitter's own constants (element size, lanes). */
static inline void i32n_at(em *e, int64_t v, uint32_t site) { tp_em_put(e, (rins){.kind = RK_NUM, .a = site, .i = (int32_t)v}); }
static inline void f32n_at(em *e, float v, uint32_t site) { tp_em_put(e, (rins){.kind = RK_FNUM, .a = site, .f = v}); }
/* (the site, file and line, names the number: params match the two passes'
 * numbers by position and site, emit.c) */
#ifndef EM_FILE
#define EM_FILE 0
#endif
#define i32n(e, v) i32n_at((e), (v), (uint32_t)(EM_FILE << 16 | __LINE__))
#define f32n(e, v) f32n_at((e), (v), (uint32_t)(EM_FILE << 16 | __LINE__))
/* v128 constants: 4 lanes of a float or an int32 */
static inline void vf(em *e, float v) {
  uint8_t b[16];
  for (int k = 0; k < 4; k++) memcpy(b + 4 * k, &v, 4);
  tp_em_vconst(e, b);
}
static inline void vi(em *e, int32_t v) {
  uint8_t b[16];
  for (int k = 0; k < 4; k++) memcpy(b + 4 * k, &v, 4);
  tp_em_vconst(e, b);
}
static inline void mem(em *e, tp_wasm_op o, uint32_t offset) { tp_em_put(e, (rins){.kind = RK_MEM, .op = o, .a = offset}); }
/* A load at the address on the stack + offset, where offset is a number of
 * the program (a gather's stride): with params it is added from the block. */
static inline void memd(em *e, tp_wasm_op o, uint32_t offset) {
  if (e->blk && offset) {
    tp_em_put(e, (rins){.kind = RK_NUM, .a = 0xffff0000u | __LINE__, .i = (int32_t)offset});
    tp_em_put(e, (rins){.kind = RK_OP, .op = TP_WASM_OP_I32_ADD});
    offset = 0;
  }
  mem(e, o, offset);
}
static inline void lane(em *e, tp_wasm_op o, uint32_t l) { tp_em_put(e, (rins){.kind = RK_LANE, .op = o, .a = l}); }
static inline void block(em *e, tp_wasm_op o) { if (OK(e)) e->s = tp_wasm_emit_block(e->f, o, TP_WASM_BT_VOID); }
static inline void br(em *e, tp_wasm_op o, uint32_t d) { if (OK(e)) e->s = tp_wasm_emit_br(e->f, o, d); }

/* Temporaries: locals handed out as a stack (callers restore the top). */
static inline uint32_t vtmp(em *e) {
  if (e->vtop >= e->vn) {
    if (OK(e)) e->s = tp_fail(TP_ERR_UNSUPPORTED, "wasm emitter: out of v128 temporaries");
    return e->v0;
  }
  return e->v0 + (uint32_t)e->vtop++;
}
static inline uint32_t itmp(em *e) {
  if (e->itop >= e->in) {
    if (OK(e)) e->s = tp_fail(TP_ERR_UNSUPPORTED, "wasm emitter: out of i32 temporaries");
    return e->i0;
  }
  return e->i0 + (uint32_t)e->itop++;
}
static inline uint32_t ftmp(em *e) {
  if (e->ftop >= e->fn) {
    if (OK(e)) e->s = tp_fail(TP_ERR_UNSUPPORTED, "wasm emitter: out of f32 temporaries");
    return e->f0;
  }
  return e->f0 + (uint32_t)e->ftop++;
}

/* sel(m, a, b) = (a & m) | (b & ~m), with a, b, m in locals */
static inline void sel(em *e, uint32_t m, uint32_t a, uint32_t b) {
  lget(e, a), lget(e, b), lget(e, m), op(e, TP_WASM_OP_V128_BITSELECT);
}

/* ---- math (emit_math.c) ---- */
/* out = f(x) for the unary sub (enum tp_kunary), x and out v128 locals
 * (may be the same); uses temporaries above the current top. */
void tp_em_unary(em *e, int sub, uint32_t x, uint32_t out);

/* ---- kernels ---- */
/* What the expression evaluator needs of the kernel being emitted. */
typedef struct kctx {
  const tp_kir_kernel *k;
  const tp_kir_prep *pr;
  uint32_t ptrs;                   /* param: the buffer address table */
  uint32_t base[TP_KIR_MAX_IN];    /* per slot: byte address at the start of this row */
  uint32_t out;                    /* output byte address of this row */
  uint32_t hoist[TP_KIR_MAX_IN];   /* broadcast slots: splat per row */
  uint32_t rowval[TP_KIR_MAX_PHASES];
  uint32_t vals[TP_KIR_MAX_INS];   /* per instruction */
  uint32_t acc;                    /* GEMM epilogue: the accumulator (v128 local) */
  uint32_t origin[TP_KIR_MAX_IN];  /* GEMM epilogue: slot address of element (0, 0) */
} kctx;

/* emit_pointwise.c: evaluates x over 4 lanes (vector: loads at off) or
 * lane 0 (tail) into c->vals; off: an i32 local holding the element index
 * of this step within the row. */
void tp_em_expr(em *e, kctx *c, const tp_kir_expr *x, uint32_t off, int tail);
/* 1 when pointwise or row kernel k (prepared as pr) can be generated. */
int tp_em_map_supported(const tp_kir_program *p, const tp_kir_kernel *k, const tp_kir_prep *pr);
void tp_em_map_body(em *e, const tp_kir_kernel *k, const tp_kir_prep *pr);

/* emit_gemm.c: 1 when GEMM kernel k can be generated; then rs, cs hold the
 * (row, column) strides of its epilogue loads over the flattened [M, N]. */
int tp_em_gemm_supported(const tp_kir_program *p, const tp_kir_kernel *k, int64_t *rs, int64_t *cs);
void tp_em_gemm_body(em *e, const tp_kir_program *p, int ki, const int64_t *rs, const int64_t *cs);

#endif
