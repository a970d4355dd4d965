/* diffgen.h - differential testing of the backends on random valid graphs
 * (NNSmith-style), shared by the ctest driver (tests/c/compiler/test_diff.c,
 * fixed seeds) and the libFuzzer target (tests/fuzz/fuzz_diff.c).
 *
 * dg_build turns bytes into a graph: 1-3 inputs and sometimes constants
 * (float32 mostly; int32, int64, bool), then 1-8 op nodes, each op drawn
 * from the whole op table (src/ops/ops.def; only the opaque host-call ops
 * are left out) with operands drawn from the values so far or made to fit
 * (same shape, broadcast shapes, a matmul partner, scalars) and attributes
 * drawn per the op's attribute table (graph/text.h's tp_text_ops); a node
 * is kept when the op's shape rule (tp_op_infer) accepts it. Ops whose
 * result jumps (comparisons, floor/ceil/round, mod, casts to integers,
 * argtopk) and ops that are ill-conditioned near a domain edge (tan, atanh,
 * acosh, asin, acos, log, sqrt, rsqrt, div, det; sin and cos of large
 * arguments) only take float operands
 * whose values every backend computes exactly, so that a rounding
 * difference upstream cannot flip or blow up their results.
 *
 * dg_check runs the graph through the registered backends "reference"
 * (scalar, double-accumulating kernels: the oracle), "eager" and "stax",
 * every input fed at run time, and compares each output: dtype and shape
 * equal, integers and bools exact, floats within
 * |got - ref| <= 1e-4 * (1 + max|ref|) + 2e-3 * |ref| (NaN where the
 * reference has NaN, the same infinities). */
#ifndef TP_TESTS_DIFFGEN_H
#define TP_TESTS_DIFFGEN_H
#include <stddef.h>
#include <stdint.h>
#include "tensorplay.h"

#define DG_MAXIN 8

typedef struct dg_case {
  tp_graph *g;
  int nin;
  tp_tensor *in[DG_MAXIN]; /* the graph inputs' values */
  int nops;                /* op nodes */
} dg_case;

/* Builds a case from bytes (any bytes: when they run out, zeros are read).
 * TP_OK with c->nops >= 1, or an error status when no node could be made
 * (not a failure of the code under test). */
tp_status dg_build(const uint8_t *data, size_t n, dg_case *c);
void dg_free(dg_case *c);

/* A case from graph text (regression graphs): every placeholder is fed a
 * fixed pattern of values of its declared dtype and shape. */
tp_status dg_from_text(const char *text, dg_case *c);

/* 0: every backend agrees with the reference; 1: a mismatch or a backend
 * failed where the reference ran (described in why); -1: the reference
 * itself refused the graph at run time (nothing to compare). */
int dg_check(const dg_case *c, char *why, size_t n);

/* The same against the named backends instead of eager and stax. */
int dg_check_backends(const dg_case *c, const char *const *names, int n, char *why, size_t wn);

/* Prints the outputs of reference, eager and stax (a debugging aid). */
void dg_dump(const dg_case *c);

/* Bytes of a pseudo-random case from a seed (the ctest driver's source). */
void dg_seed_bytes(uint64_t seed, uint8_t *out, size_t n);

#endif
