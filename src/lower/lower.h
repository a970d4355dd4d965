/* lower.h - the lowering core: graph passes, the scheduler that turns a
 * graph into Kernel IR (KIR), the memory plan, and the KIR executor.
 * docs/kernel-ir.md describes the IR; tp_kir_print gives its text form.
 *
 *   graph --passes--> graph --schedule--> KIR program --plan--> arena offsets
 *                                             \--> executor (every build)
 *                                             \--> Wasm emitter (codegen issue)
 */
#ifndef TP_LOWER_H
#define TP_LOWER_H
#include "../graph/graph.h"

/* ---- passes: each a function from graph to graph (a new graph) ---- */
typedef tp_status (*tp_pass_fn)(const tp_graph *in, tp_graph **out);
tp_status tp_pass_shapes(const tp_graph *in, tp_graph **out);     /* re-infer every desc */
tp_status tp_pass_decompose(const tp_graph *in, tp_graph **out);  /* gelu, softmax, ... -> primitives */
tp_status tp_pass_fold(const tp_graph *in, tp_graph **out);       /* constant folding */
tp_status tp_pass_cse(const tp_graph *in, tp_graph **out);        /* common subexpressions */
tp_status tp_pass_dce(const tp_graph *in, tp_graph **out);        /* dead code */
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
  TP_KI_ACC,     /* GEMM epilogue: the accumulator (x @ w) at this element */
  TP_KI_UNARY,   /* sub = enum tp_kunary; a */
  TP_KI_BINARY,  /* sub = enum tp_kbinary; a, b */
  TP_KI_MAX, TP_KI_MIN,  /* a, b (NaN propagates) */
  TP_KI_CMP,     /* sub = 0 eq, 1 lt, 2 gt: 1.0 or 0.0 */
  TP_KI_WHERE,   /* a != 0 ? b : c */
  TP_KI_OPCODE_COUNT
} tp_kir_opcode;

typedef struct tp_kir_ins {
  uint8_t op, sub;
  int16_t a, b, c;  /* operands: earlier instruction indices */
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
  TP_KK_KIND_COUNT
} tp_kir_kind;

typedef enum tp_kir_reduce { TP_KR_SUM, TP_KR_MAX, TP_KR_MIN } tp_kir_reduce;

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
  tp_kir_expr expr;          /* POINTWISE body; GEMM epilogue (empty: none) */
  int nphases;               /* ROW */
  tp_kir_phase phases[TP_KIR_MAX_PHASES];
  /* GEMM: C[b, M, N] = A[b, M, K] @ B[b, K, N] (+ bias[N]) */
  int64_t M, N, K, batch;
  int a_buf, b_buf, bias_buf;     /* bias_buf -1: none */
  int64_t a_off, a_rs, a_cs, a_bs; /* offset, row/col/batch strides of A */
  int64_t b_off, b_rs, b_cs, b_bs;
  int b_const;               /* B is a constant: packed once at plan time */
  int tune_kc, tune_mc;      /* GEMM blocking chosen by max-autotune (0: defaults) */
  /* OP: the node to run eagerly; its operands are buffers (or scalars) */
  int node;                  /* index in the lowered graph */
  int nops;
  int op_bufs[64];           /* -1: scalar operand / absent */
} tp_kir_kernel;

typedef enum tp_kir_buf_kind { TP_KB_INPUT, TP_KB_CONST, TP_KB_TEMP, TP_KB_OUTPUT, TP_KB_VIEW } tp_kir_buf_kind;
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
  int outputs[64];       /* buffer per graph output */
  int64_t arena_bytes;   /* peak arena size from the memory plan */
  int64_t naive_bytes;   /* sum of all temporaries, for comparison */
  /* options */
  int fusion;            /* stax.fusion */
  int epilogue_fusion;   /* stax.epilogue_fusion */
  int memory_planning;   /* stax.memory_planning */
  int autotune;          /* stax.max_autotune: time GEMM blockings at plan time */
  int coordinate_descent;/* stax.coordinate_descent_tuning: search one knob at a time */
  int use_cache;         /* reuse tuning results (not config.force_disable_caches) */
  int tuned;             /* GEMMs whose blocking was measured (not from the cache) */
} tp_kir_program;

typedef struct tp_lower_options {
  int fusion, epilogue_fusion, memory_planning, decompose;
  int codegen; /* stax.codegen: generated Wasm kernels on a Wasm host */
  int autotune, coordinate_descent, use_cache; /* stax.max_autotune, ... */
} tp_lower_options;
void tp_lower_options_init(tp_lower_options *o);

/* graph (after passes) -> program; takes ownership of g. */
tp_status tp_schedule(tp_graph *g, const tp_lower_options *o, tp_kir_program **out);
tp_status tp_memplan(tp_kir_program *p);
void tp_kir_program_free(tp_kir_program *p);
tp_status tp_kir_print(const tp_kir_program *p, char **out);
tp_status tp_kir_verify(const tp_kir_program *p);

/* A kernel's iteration space with the dims that are contiguous for every
 * load merged (row kernels keep their last dim apart): what the executor
 * and the Wasm emitter loop over. */
typedef struct tp_kir_prep {
  int nd;
  int64_t shape[TP_MAX_DIMS];
  int64_t st[TP_KIR_MAX_IN][TP_MAX_DIMS];
} tp_kir_prep;
void tp_kir_prepare(const tp_kir_kernel *k, tp_kir_prep *pr);

/* ---- executor ---- */
typedef struct tp_plan tp_plan;
/* Prepares buffers (arena, packed constants) for repeated runs. Takes
 * ownership of p. */
tp_status tp_plan_new(tp_kir_program *p, tp_plan **out);
tp_status tp_plan_run(tp_plan *pl, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                      int *nout);
const tp_kir_program *tp_plan_program(const tp_plan *pl);
/* Generated code (src/codegen/plan_jit.c): per kernel, the function table
 * index of its generated function, or -1 when it runs in the executor, and
 * at fn[nkernels] the module's run entry, which tp_plan_run then calls once
 * per run. A pending load (token) switches to the generated code once the
 * host has installed it. Takes ownership of fn (nkernels + 1 entries). */
void tp_plan_attach_jit(tp_plan *pl, int32_t *fn, int32_t pending_token);
/* Keeps the bytes of the module attached above (takes ownership of a
 * tp_alloc'ed copy), for tp_plan_jit_module. */
void tp_plan_keep_jit_module(tp_plan *pl, uint8_t *bytes, size_t len);
/* The generated module the plan runs or will run once the host has
 * compiled it (borrowed), or NULL with *len = 0. */
const uint8_t *tp_plan_jit_module(tp_plan *pl, size_t *len);
/* The run entry's callback for the kernels it does not generate: runs
 * kernel k of the run whose context is ctx (exported as tpw_jit_kernel,
 * imported by generated modules as env.tp_jit_kernel). Returns a status. */
int32_t tp_plan_jit_kernel(int32_t ctx, int32_t k);
/* The packed B of constant-weight GEMM kernel ki (NULL if not packed, or
 * packed for another ISA table than the current one). */
const void *tp_plan_packed_b(const tp_plan *pl, int ki);
/* A monotonic clock in ms (max-autotune's timings). */
double tp_now_ms(void);
/* Adds n to the program's count of measured (autotuned) kernels. */
void tp_plan_count_tuned(tp_plan *pl, int n);
/* Number of kernels this plan runs as generated code right now. */
int tp_plan_jit_kernels(tp_plan *pl);
void tp_plan_free(tp_plan *pl);

/* The whole stax lowering: passes, schedule, memory plan, plan. */
tp_status tp_lower(const tp_graph *g, const tp_lower_options *o, tp_plan **out);

#endif
