/* lower.h - the lowering core: graph passes, the scheduler that turns a
 * graph into Kernel IR (KIR), the memory plan, and the KIR executor.
 * docs/kernel-ir.md describes the IR; tp_kir_print gives its text form.
 *
 *   graph --passes--> graph --schedule--> KIR program --plan--> arena offsets
 *                                             \--> executor (every build)
 *                                             \--> an accelerator, if one is
 *                                                  attached (tp_lower_accel)
 *
 * Lower knows no code generator: src/codegen reads Kernel IR and fills the
 * accelerator interface below; the stax backend (src/compiler/backends/
 * stax.c) attaches it to a plan.
 */
#ifndef TP_LOWER_H
#define TP_LOWER_H
#include "../core/lock.h"
#include "../graph/graph.h"

/* ---- passes: each a function from graph to graph (a new graph) ---- */
typedef tp_status (*tp_pass_fn)(const tp_graph *in, tp_graph **out);
tp_status tp_pass_shapes(const tp_graph *in, tp_graph **out);     /* re-infer every desc */
tp_status tp_pass_conv_gemm(const tp_graph *in, tp_graph **out);  /* 1x1 convolutions -> matmul (+ bias) */
tp_status tp_pass_decompose(const tp_graph *in, tp_graph **out);  /* gelu, softmax, ... -> primitives */
tp_status tp_pass_fold(const tp_graph *in, tp_graph **out);       /* constant folding */
tp_status tp_pass_conv_bn(const tp_graph *in, tp_graph **out);    /* per-channel mul/add after a conv into its weights */
tp_status tp_pass_qlinear(const tp_graph *in, tp_graph **out);    /* quantized matmul / conv patterns -> qmatmul / qconv2d (integer GEMM) */
tp_status tp_pass_cse(const tp_graph *in, tp_graph **out);        /* common subexpressions */
tp_status tp_pass_dce(const tp_graph *in, tp_graph **out);        /* dead code */
tp_status tp_pass_qlayout(const tp_graph *in, tp_graph **out);    /* channels last between chained qconv2ds */
tp_status tp_pass_simplify(const tp_graph *in, tp_graph **out);   /* x*1, x+0, double transpose, reshape chains */
typedef struct tp_pass_info { const char *name; tp_pass_fn fn; } tp_pass_info;
/* The pipeline, one flat list (QBE's func()): name and function per row. */
const tp_pass_info *tp_passes(int *n);
/* Runs the pipeline; dump: NULL, or a pass name after which the graph is
 * printed into *dump_out (tp_free_buffer), or "all". */
tp_status tp_run_passes(const tp_graph *in, int decompose, const char *dump, char **dump_out,
                        tp_graph **out);

/* ---- Kernel IR ---- */
typedef enum tp_kir_opcode {
  TP_KI_LOAD,    /* value of input slot `in` at the current element */
  TP_KI_CONST,   /* imm */
  TP_KI_ROWVAL,  /* per-row scalar number `in` computed by an earlier phase */
  TP_KI_ACC,     /* GEMM / conv epilogue: the accumulator (x @ w, conv + bias) at this element */
  TP_KI_UNARY,   /* sub = enum tp_kunary; a */
  TP_KI_BINARY,  /* sub = enum tp_kbinary; a, b */
  TP_KI_OPCODE_COUNT
} tp_kir_opcode;

typedef struct tp_kir_ins {
  uint8_t op, sub;
  int16_t a, b;     /* operands: earlier instruction indices (-1: none) */
  int16_t in;       /* LOAD: input slot; ROWVAL: row value index */
  float imm;        /* CONST */
} tp_kir_ins;

#define TP_KIR_MAX_INS 96
#define TP_KIR_MAX_IN 12
/* An expression over an iteration space: SSA instructions, the last one is
 * the value. Loads read input slots (see tp_kir_load). */
typedef struct tp_kir_expr {
  int n;
  tp_kir_ins ins[TP_KIR_MAX_INS];
} tp_kir_expr;

/* An input slot: a buffer read with per-dimension element strides over
 * the kernel's iteration space (0 = broadcast) plus an offset. */
typedef struct tp_kir_load {
  int buf;
  int64_t offset;
  int64_t strides[TP_MAX_DIMS];
} tp_kir_load;

typedef enum tp_kir_kind {
  TP_KK_POINTWISE, /* out[i] = expr(i) over an nd iteration space */
  TP_KK_ROW,       /* rows x R: phases of reductions then a map, per row */
  TP_KK_GEMM,      /* out = epilogue(A @ B (+ bias)), batched */
  TP_KK_OP,        /* one graph node on the eager kernels (anything else) */
  TP_KK_CONV,      /* out = epilogue(conv2d(x, w (+ bias))): float32 conv2d on the
                      conv kernels (im2col + GEMM, depthwise, Winograd), node and
                      op_bufs as OP; the epilogue (expr over the output [N, M, OH, OW],
                      ACC = conv + bias) runs on each output tile while it is hot */
  TP_KK_KIND_COUNT
} tp_kir_kind;

/* TP_KR_MINMAX: min and max of the row in one pass, stored as out[2 row] =
 * min, out[2 row + 1] = max (a row kernel of that one reduction phase only:
 * DynamicQuantizeLinear's two extremes, schedule.c's minmax_partner) */
typedef enum tp_kir_reduce { TP_KR_SUM, TP_KR_MAX, TP_KR_MIN, TP_KR_MINMAX } tp_kir_reduce;

#define TP_KIR_MAX_PHASES 4
typedef struct tp_kir_phase {
  int is_reduce;          /* 1: rowval[k] = reduce(expr) over the row; 0: out = expr */
  tp_kir_reduce reduce;
  float scale;            /* rowval multiplied by this after the reduction (mean: 1/R) */
  tp_kir_expr expr;
} tp_kir_phase;

typedef struct tp_kir_kernel {
  tp_kir_kind kind;
  char name[48];             /* "k3_pointwise", for dumps and the emitter */
  int out;                   /* output buffer */
  int nd;                    /* iteration space (pointwise: out shape; row: [rows, R]) */
  int64_t shape[TP_MAX_DIMS];
  int nin;
  tp_kir_load in[TP_KIR_MAX_IN];
  tp_kir_expr expr;          /* POINTWISE body; GEMM / CONV epilogue (empty: none) */
  int nphases;               /* ROW */
  tp_kir_phase phases[TP_KIR_MAX_PHASES];
  /* GEMM: C[b, M, N] = A[b, M, K] @ B[b, K, N] (+ bias[N]) */
  int64_t M, N, K, batch;
  int a_buf, b_buf, bias_buf;     /* bias_buf -1: none */
  int64_t a_off, a_rs, a_cs, a_bs; /* offset, row/col/batch strides of A */
  int64_t b_off, b_rs, b_cs, b_bs;
  int b_const;               /* B is a constant: packed once at plan time */
  int b_f16;                 /* B is a float16 constant (b_buf float16, read as float32):
                                packed once as float16 panels (issue 17) */
  int tune_kc, tune_mc;      /* GEMM blocking chosen by max-autotune (0: defaults) */
  /* OP: the node to run eagerly; its operands are buffers (or scalars) */
  int node;                  /* index in the lowered graph */
  int nops;
  int op_bufs[TP_MAX_OPERANDS]; /* -1: scalar operand / absent */
} tp_kir_kernel;

/* What a KIR buffer holds (tp_kir_buf.kind). */
typedef enum tp_kir_buf_kind {
  TP_KBUF_INPUT,  /* a graph placeholder, bound per run */
  TP_KBUF_CONST,  /* a constant tensor of the graph */
  TP_KBUF_TEMP,   /* an intermediate in the arena */
  TP_KBUF_OUTPUT, /* a graph output, allocated per run */
  TP_KBUF_VIEW,   /* strided view of another buffer, no storage */
  TP_KBUF_KIND_COUNT
} tp_kir_buf_kind;
typedef struct tp_kir_buf {
  tp_kir_buf_kind kind;
  tp_desc desc;          /* shape and dtype (contiguous unless VIEW) */
  int index;             /* INPUT: placeholder number; OUTPUT: output number */
  tp_tensor *value;      /* CONST: the tensor (owned reference) */
  int base;              /* VIEW: the buffer it views */
  int64_t offset;        /* VIEW: element offset and strides into base */
  int64_t strides[TP_MAX_DIMS];
  int64_t arena_off;     /* TEMP: byte offset in the arena (memory plan) */
  int first, last;       /* live range in kernel indices */
  int inplace_of;        /* TEMP reusing the memory of this buffer, -1 */
} tp_kir_buf;

typedef struct tp_kir_program {
  tp_graph *graph;       /* the lowered graph (owned): OP kernels run its nodes */
  int nbufs, capbufs;
  tp_kir_buf *bufs;
  int nkernels, capkernels;
  tp_kir_kernel *kernels;
  int noutputs;
  int outputs[TP_MAX_OPERANDS]; /* buffer per graph output (the output node's operands) */
  int64_t arena_bytes;   /* peak arena size from the memory plan */
  int64_t naive_bytes;   /* sum of all temporaries, for comparison */
  int *node_kernel;      /* per node of graph: the kernel that computes it (fused in
                            as a pointwise chain, an epilogue or a prologue), -1: none
                            (inputs, constants, views read by several kernels) */
  /* options */
  int fusion;            /* stax.fusion */
  int epilogue_fusion;   /* stax.epilogue_fusion */
  int memory_planning;   /* stax.memory_planning */
  int autotune;          /* stax.max_autotune: time GEMM blockings at plan time */
  int coordinate_descent;/* stax.coordinate_descent_tuning: search one knob at a time */
  int use_cache;         /* reuse tuning results (not config.force_disable_caches) */
  int tuned;             /* GEMMs whose blocking was measured (not from the cache) */
  int graph_shallow;     /* graph is an instantiated template's: its nodes array is its own,
                            what the nodes point to belongs to the template (symbolic.c) */
} tp_kir_program;

typedef struct tp_lower_options {
  int fusion, epilogue_fusion, memory_planning, decompose;
  int codegen; /* stax.codegen: the stax backend attaches generated kernels (lower ignores it) */
  int autotune, coordinate_descent, use_cache; /* stax.max_autotune, ... */
} tp_lower_options;
void tp_lower_options_init(tp_lower_options *o);

/* graph (after passes) -> program; takes ownership of g. */
tp_status tp_schedule(tp_graph *g, const tp_lower_options *o, tp_kir_program **out);
tp_status tp_memplan(tp_kir_program *p);
void tp_kir_program_free(tp_kir_program *p);
tp_status tp_kir_print(const tp_kir_program *p, char **out);
tp_status tp_kir_verify(const tp_kir_program *p);
/* Appends expression e (loads in[0 .. nin)) to kernel k's epilogue, the
 * epilogue's value standing for e's loads of buffer B (kir.c; the
 * scheduler's epilogue fusion). 0 when it does not fit. */
int tp_kir_append_epilogue(tp_kir_kernel *k, const tp_kir_expr *e, const tp_kir_load *in, int nin, int B, int ob);
/* The scheduler's graph patterns (patterns.c): an elementwise op as a KIR
 * unary / binary instruction (*kind, *sub; 0 when not elementwise), and a
 * where(compare) node w as TP_KBIN_PMAX / PMIN / MASKPOS with its operands
 * (-1 when it does not match; graph_uses: each node's user count). */
int tp_sched_pointwise_op(tp_op op, int *kind, int *sub);
int tp_sched_match_minmax(const tp_graph *g, const int *graph_uses, int w, tp_arg *a, tp_arg *b);

/* A kernel's iteration space with the dims that are contiguous for every
 * load merged (row kernels keep their last dim apart): what the executor
 * and the Wasm emitter loop over. */
typedef struct tp_kir_prep {
  int nd;
  int64_t shape[TP_MAX_DIMS];
  int64_t st[TP_KIR_MAX_IN][TP_MAX_DIMS];
} tp_kir_prep;
void tp_kir_prepare(const tp_kir_kernel *k, tp_kir_prep *pr);
/* The epilogue of GEMM or conv kernel k as a pointwise kernel over k's
 * output, in place (acc read as a load of the output): what the Wasm
 * emitter generates for a GEMM or conv the executor runs (it then runs
 * that kernel without its epilogue: tp_plan_run_kernel's k + nkernels).
 * 0 when k has no epilogue. */
int tp_kir_epilogue_kernel(const tp_kir_kernel *k, tp_kir_kernel *pw);

/* ---- dynamic extents (symbolic.c; docs/kernel-ir.md "Dynamic extents") ----
 * A template: one program whose numbers (extents, strides, offsets, GEMM
 * sizes, shapes, int attributes, mean's 1/R) are polynomials of k <= 4
 * symbols, of degree <= 2 in each with bilinear terms (H*W), fitted from
 * the programs scheduled at the points of tp_kir_template_design. One
 * symbol: s0, s0 + h, s0 + 2h (and s0 + 3h when a number is quadratic:
 * *need_more asks for it). k >= 2: b, b + h e_i, b + 2h e_i, b + h (e_i +
 * e_j) for i < j, and the check point b + 2h (1, .., 1) last (n = all of
 * them). Takes ownership of progs[0] when it returns a template; the
 * caller frees the other samples (and progs[0] when *out is NULL). *out
 * NULL with why: the samples are not one program (the reason names the
 * kernel) or a number is not of that form. */
#define TP_KIR_MAX_SYMS 4
#define TP_KIR_MAX_DESIGN 16 /* design points for 4 symbols */
typedef struct tp_kir_template tp_kir_template;
/* The design's points for k symbols from base by h (pts[i][0..k)): their
 * count (one symbol: 4, the last asked for only by *need_more). */
int tp_kir_template_design(int k, const int64_t *base, int64_t h, int64_t (*pts)[TP_KIR_MAX_SYMS]);
tp_status tp_kir_template_fit(tp_kir_program *const *progs, int n, int k, const int64_t *base, int64_t h,
                              int *need_more, tp_kir_template **out, char *why, size_t nwhy);
/* The program at the symbols' values s[0..k), memory planned (numbers
 * evaluated, no scheduling). *out NULL with why when s is not served: a
 * symbol < 2 (the 0/1 rule), an extent not whole at s, or a node's shape
 * rule disagreeing. Its graph is shallow: the template must outlive it. */
tp_status tp_kir_template_instantiate(const tp_kir_template *t, const int64_t *s, tp_kir_program **out, char *why,
                                      size_t nwhy);
int tp_kir_template_dynamic(const tp_kir_template *t);   /* numbers that depend on a symbol */
int tp_kir_template_quadratic(const tp_kir_template *t); /* 1: some are quadratic in a symbol */
int tp_kir_template_bilinear(const tp_kir_template *t);  /* 1: some have a product of two symbols */
int tp_kir_template_symbols(const tp_kir_template *t);   /* k */
void tp_kir_template_free(tp_kir_template *t);

/* ---- executor (executor.c) ---- */
typedef struct tp_plan tp_plan;
/* profile.c's per-plan counters (the plan holds them; NULL when off) */
typedef struct tp_plan_prof tp_plan_prof;
tp_plan_prof **tp_plan_prof_slot(tp_plan *pl);
tp_plan_prof *tp_plan_prof_of(const tp_plan *pl);
void tp_plan_prof_run(tp_plan_prof *pr);
void tp_plan_prof_free(tp_plan_prof *pr);
/* Prepares buffers (arena, packed constants) for repeated runs. Takes
 * ownership of p. */
tp_status tp_plan_new(tp_kir_program *p, tp_plan **out);
/* tp_plan_new that borrows donor's packed constant operands (GEMM B and A,
 * integer GEMM B) for the kernels where p and donor's program have the same
 * kernel with the same packed sizes: plans instantiated from one template
 * pack the weights once. donor (NULL: none) must outlive the plan. */
tp_status tp_plan_new_shared(tp_kir_program *p, const tp_plan *donor, tp_plan **out);
tp_status tp_plan_run(tp_plan *pl, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                      int *nout);
/* tp_plan_run with donated inputs (bit i of donated: in[i] is owned by the
 * call): each is released, and in[i] set to NULL, right after the last
 * kernel that reads it (the memory plan's live range), so its storage can
 * go before the plan ends; all of them by the end, on failure too. */
tp_status tp_plan_run_donated(tp_plan *pl, int nin, tp_tensor **in, uint64_t donated, int max_out,
                              tp_tensor **outs, int *nout);
const tp_kir_program *tp_plan_program(const tp_plan *pl);
/* Control flow (docs/kernel-ir.md "Control flow"): the op kernel of a cond
 * or while_loop node runs one compiled plan per subgraph; tp_lower makes
 * them. which: 0/1 = cond's then/else, while_loop's cond/body. Takes
 * ownership of sub (also on failure). */
tp_status tp_plan_set_subplan(tp_plan *pl, int k, int which, tp_plan *sub);
/* The sub-plans, for an upper layer to accelerate them as the plan:
 * tp_plan_subplan(pl, i) for i < tp_plan_nsubplans(pl) (NULL entries). */
int tp_plan_nsubplans(const tp_plan *pl);
tp_plan *tp_plan_subplan(const tp_plan *pl, int i);
/* The packed B of constant-weight GEMM kernel ki (NULL if not packed, or
 * packed for another ISA table than the current one). */
const void *tp_plan_packed_b(const tp_plan *pl, int ki);
/* The same for a GEMM with a float16 constant B (b_f16): its float16 panels
 * (kernels.h gemm_pack_b_f16: per depth block of 256, panels of the table's
 * width, kc rows of halves), read by generated SIMD128 GEMMs too. */
const void *tp_plan_packed_b_f16(const tp_plan *pl, int ki);
/* The plan's evaluation scratch (*nfloats floats, tp_alloc's alignment): not in
 * use between kernels, so an accelerator may use it inside one of its own
 * kernels (generated float16-B GEMMs: their float32 panel). */
float *tp_plan_scratch(const tp_plan *pl, size_t *nfloats);
/* A monotonic clock in ms (max-autotune's timings). */
double tp_now_ms(void);
/* Adds n to the program's count of measured (autotuned) kernels. */
void tp_plan_count_tuned(tp_plan *pl, int n);
void tp_plan_free(tp_plan *pl);

/* Per-kernel profiling (profile.c; stax.profile, `tpc bench --profile`):
 * while on, every tp_plan_run times each kernel (an accelerator runs its
 * kernels one at a time and reports each with tp_plan_profile_add). Turning
 * it on (again) clears the counts. */
tp_status tp_plan_set_profiling(tp_plan *pl, int on);
int tp_plan_profiling(const tp_plan *pl);
void tp_plan_profile_add(const tp_plan *pl, int k, double ms);
/* The table, slowest kernel first: per kernel its kind (op kernels: the op),
 * ms per run, share of the run, and the rate it reached (GEMMs and
 * convolutions: GFLOP/s from their multiply-adds; the rest: GB/s from the
 * bytes of their operands and result). At most max_rows rows (0: all), the
 * rest summed in one line. *out: tp_free_buffer. */
tp_status tp_plan_profile_report(const tp_plan *pl, int max_rows, char **out);
/* The same as JSON (an object with "runs", "total_ms" and "kernels"). */
tp_status tp_plan_profile_json(const tp_plan *pl, int max_rows, char **out);

/* ---- accelerators ----
 * Something that runs a plan faster than the executor: generated Wasm
 * kernels (src/codegen/plan_jit.c fills one). Lower defines and calls this
 * interface and never knows an implementation; an upper layer attaches one
 * to a plan with tp_plan_accelerate. The plan owns the state from then on. */
typedef struct tp_lower_accel {
  const char *name;
  /* Prepares code for pl's program. *state NULL: nothing to accelerate
   * here (e.g. not a Wasm host); an error leaves the plan on the executor. */
  tp_status (*prepare)(tp_plan *pl, int use_cache, void **state);
  /* Runs the whole plan once. bufs[b]: the address of buffer b this run.
   * Kernels it does not run itself go through tp_plan_run_kernel(run, k).
   * *ran = 0 (and TP_OK): not ready yet, e.g. the host is still compiling;
   * the executor runs the plan. */
  tp_status (*run)(void *state, const tp_plan *pl, void *const *bufs, void *run, int *ran);
  /* Number of kernels it runs right now (0 when not ready). */
  int (*kernels)(void *state, const tp_plan *pl);
  /* The code it runs or will run (borrowed), or NULL with *len = 0. */
  const uint8_t *(*module)(void *state, size_t *len);
  void (*release)(void *state);
  /* Whether it runs kernel k itself right now (generated code; 0: the
   * executor runs it, or not ready). NULL: none. */
  int (*generated)(void *state, const tp_plan *pl, int k);
} tp_lower_accel;
/* Attaches a (static) accelerator to pl; its prepare decides whether there
 * is anything to do. Errors come from prepare. */
tp_status tp_plan_accelerate(tp_plan *pl, const tp_lower_accel *a, int use_cache);
/* The attached accelerator's kernels() / module() (0 / NULL without one). */
int tp_plan_accel_kernels(tp_plan *pl);
/* Whether the attached accelerator runs kernel k (0 without one). */
int tp_plan_accel_generated(tp_plan *pl, int k);
const uint8_t *tp_plan_accel_module(tp_plan *pl, size_t *len);
/* Runs kernel k of the run `run` (the accelerator's run argument) on the
 * executor: the callback for the kernels an accelerator leaves to it.
 * k + nkernels: GEMM or conv kernel k without its epilogue (the
 * accelerator runs tp_kir_epilogue_kernel's pointwise form after it). */
tp_status tp_plan_run_kernel(void *run, int k);

/* ---- tuning results (executor.c) ----
 * One small keyed cache for max-autotune's measurements (the executor's
 * GEMM blocking, codegen's GEMM register tile): up to 64 entries of
 * key[TP_TUNE_KEY] -> val[2], compared bytewise (unused key slots 0); when
 * full, the newest result replaces the last entry. Locked (core/lock.h), so
 * any thread may use one. A zeroed static is an empty cache. tp_reset does
 * not clear these (a measurement stays true); config.force_disable_caches
 * bypasses them. */
#define TP_TUNE_KEY 6
typedef struct tp_tune_cache {
  tp_spinlock lock;
  int n;
  struct { int64_t key[TP_TUNE_KEY]; int val[2]; } e[64];
} tp_tune_cache;
int tp_tune_cache_get(tp_tune_cache *c, const int64_t *key, int *val); /* 1: hit */
void tp_tune_cache_put(tp_tune_cache *c, const int64_t *key, const int *val);
/* max-autotune (autotune.c): times kernel k's GEMM blockings and sets its
 * tune_kc / tune_mc (cached per shape when p->use_cache). */
tp_status tp_autotune_gemm(tp_kir_program *p, tp_kir_kernel *k);

/* ---- the whole lowering (lower.c) ---- */
/* Passes, schedule, verify, memory plan: the program (no plan). */
tp_status tp_lower_program(const tp_graph *g, const tp_lower_options *o, tp_kir_program **out);
/* Passes, schedule, verify, memory plan, plan. */
tp_status tp_lower(const tp_graph *g, const tp_lower_options *o, tp_plan **out);

#endif
