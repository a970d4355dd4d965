/* writer.h - a WebAssembly binary writer: modules, function bodies, LEB128,
 * and an annotated hex dump. Internal to the core (the SIMD128 emitter,
 * emit*.c, sits on it); plain C, so it runs natively and inside the wasm32
 * core alike.
 *
 *   tp_wasm_module *m; tp_wasm_func *f; uint32_t add;
 *   const uint8_t ii[2] = {TP_WASM_I32, TP_WASM_I32}, i[1] = {TP_WASM_I32};
 *   uint32_t t;
 *   tp_wasm_module_init(&m);
 *   tp_wasm_module_add_type(m, 2, ii, 1, i, &t);     // (i32, i32) -> i32
 *   tp_wasm_func_begin(m, t, "add", &f, &add);
 *   tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, 0);
 *   tp_wasm_emit_local(f, TP_WASM_OP_LOCAL_GET, 1);
 *   tp_wasm_emit(f, TP_WASM_OP_I32_ADD);
 *   tp_wasm_func_end(f);                             // checks, emits `end`
 *   tp_wasm_module_export_func(m, "add", add);
 *   const uint8_t *bytes; size_t len;
 *   tp_wasm_module_finish(m, &bytes, &len);          // borrowed until free
 *   tp_wasm_module_free(m);
 *
 * Checks: with TP_WASM_CHECKS on (the default unless NDEBUG), every emit
 * call validates like the spec's algorithm: an operand-type stack and a
 * control stack per function; a mismatch fails with TP_ERR_INTERNAL and a
 * message naming the instruction and the function. Index, lane, alignment
 * and nesting checks are always on (they are cheap). A failed function
 * keeps its first error; later emits return it and write nothing, so an
 * emitter may check only tp_wasm_func_end (or tp_wasm_module_finish).
 *
 * Memory: the module owns its functions, labels and output; pointers it
 * returns are borrowed until tp_wasm_module_free. Strings passed in are
 * copied (not retained).
 */
#ifndef TP_CODEGEN_WASM_WRITER_H
#define TP_CODEGEN_WASM_WRITER_H

#include "../../tensorplay.h"
#include "../../core/buf.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifndef TP_WASM_CHECKS
#ifdef NDEBUG
#define TP_WASM_CHECKS 0
#else
#define TP_WASM_CHECKS 1
#endif
#endif

/* ---- value types (their binary encoding) ---- */
typedef enum tp_wasm_valtype {
  TP_WASM_I32 = 0x7f,
  TP_WASM_I64 = 0x7e,
  TP_WASM_F32 = 0x7d,
  TP_WASM_F64 = 0x7c,
  TP_WASM_V128 = 0x7b,
} tp_wasm_valtype;
const char *tp_wasm_valtype_name(uint8_t t); /* "i32" ... ("?" if unknown) */

/* Block types, as the spec's s33: no result, one value type, or a type
 * index (multi-value: params and results of that function type). */
#define TP_WASM_BT_VOID ((int64_t)-64)            /* encodes as 0x40 */
#define TP_WASM_BT_VAL(t) ((int64_t)(t) - 0x80)   /* 0x7f -> -1 (0x7f) */
#define TP_WASM_BT_TYPE(i) ((int64_t)(i))

/* Natural alignment for tp_wasm_emit_mem. */
#define TP_WASM_ALIGN_NATURAL UINT32_MAX

/* ---- opcodes, from opcodes.def ---- */
typedef enum tp_wasm_imm {
  TP_WASM_IMM_NONE, TP_WASM_IMM_BLOCK, TP_WASM_IMM_LABEL, TP_WASM_IMM_LABELS,
  TP_WASM_IMM_FUNC, TP_WASM_IMM_CALLIND, TP_WASM_IMM_LOCAL, TP_WASM_IMM_GLOBAL,
  TP_WASM_IMM_MEM1, TP_WASM_IMM_MEM2, TP_WASM_IMM_MEM4, TP_WASM_IMM_MEM8,
  TP_WASM_IMM_MEM16, TP_WASM_IMM_MEMIDX, TP_WASM_IMM_I32, TP_WASM_IMM_I64,
  TP_WASM_IMM_F32, TP_WASM_IMM_F64, TP_WASM_IMM_V128, TP_WASM_IMM_SHUFFLE,
  TP_WASM_IMM_LANE2, TP_WASM_IMM_LANE4, TP_WASM_IMM_LANE8, TP_WASM_IMM_LANE16,
  TP_WASM_IMM_COUNT
} tp_wasm_imm;

typedef enum tp_wasm_op {
#define WASM_OP(prefix, code, id, name, imm, sig) TP_WASM_OP_##id,
#include "opcodes.def"
#undef WASM_OP
  TP_WASM_OP_COUNT
} tp_wasm_op;

typedef struct tp_wasm_opinfo {
  uint8_t prefix;   /* 0, 0xfc or 0xfd */
  uint32_t code;    /* the byte, or the LEB128 u32 after the prefix */
  const char *name; /* text format name: "f32x4.add" */
  tp_wasm_imm imm;
  const char *sig;  /* "vv:v" (see opcodes.def) or "*" */
} tp_wasm_opinfo;
const tp_wasm_opinfo *tp_wasm_op_info(tp_wasm_op op); /* NULL if out of range */
const char *tp_wasm_op_name(tp_wasm_op op);
/* 1 when this build checks operand types at emit time (TP_WASM_CHECKS). */
int tp_wasm_checks_enabled(void);

/* ---- byte buffers and LEB128 ----
 * A tp_wasm_buf is the core's byte buffer (tp_buf, src/core/buf.h): b.p
 * holds b.n bytes. The first failed write (out of memory) sets b.oom; from
 * then on writes do nothing and return TP_ERR_OUT_OF_MEMORY, so a writer
 * may check only its last status. Start from {0}; free with
 * tp_wasm_buf_free. */
typedef tp_buf tp_wasm_buf;
void tp_wasm_buf_free(tp_wasm_buf *b); /* and zero it */
tp_status tp_wasm_write_bytes(tp_wasm_buf *b, const void *p, size_t n);
tp_status tp_wasm_write_byte(tp_wasm_buf *b, uint8_t v);
/* Minimal LEB128. For u32 / s32 values the encoding is the same as the
 * 64-bit one (at most 5 bytes); pass the value widened. */
tp_status tp_wasm_write_uleb(tp_wasm_buf *b, uint64_t v);
tp_status tp_wasm_write_sleb(tp_wasm_buf *b, int64_t v);
/* Unsigned LEB128 padded to exactly `width` bytes (1..10; v must fit):
 * the placeholder form used for section sizes before they are known. */
tp_status tp_wasm_write_uleb_padded(tp_wasm_buf *b, uint64_t v, int width);
/* Decoders (for the dump and tests): bytes consumed, 0 if malformed or
 * truncated. */
size_t tp_wasm_read_uleb(const uint8_t *p, size_t n, uint64_t *v_out);
size_t tp_wasm_read_sleb(const uint8_t *p, size_t n, int64_t *v_out);

/* ---- modules ---- */
typedef struct tp_wasm_module tp_wasm_module;
typedef struct tp_wasm_func tp_wasm_func;

typedef struct tp_wasm_limits {
  uint32_t min;     /* pages (memory) or elements (table) */
  uint32_t max;     /* used when has_max */
  bool has_max;
  bool shared;      /* memory only (threads); needs has_max */
} tp_wasm_limits;

/* The core's memory as a generated module imports it (env.memory): shared,
 * with the core's 4 GiB maximum, on the Wasm threads build, whose memory is
 * a shared one (an import must match it); plain otherwise. */
#ifdef TP_WASM_THREADS
#define TP_WASM_CORE_MEMORY(min) ((tp_wasm_limits){(min), 65536, true, true})
#else
#define TP_WASM_CORE_MEMORY(min) ((tp_wasm_limits){(min), 0, false, false})
#endif

tp_status tp_wasm_module_init(tp_wasm_module **m_out);
void tp_wasm_module_free(tp_wasm_module *m);

/* A function type; identical types are shared (the same index returned). */
tp_status tp_wasm_module_add_type(tp_wasm_module *m, uint32_t nparams, const uint8_t *params,
                                  uint32_t nresults, const uint8_t *results,
                                  uint32_t *type_index_out);
/* Imports must come before the first tp_wasm_func_begin and global (imports
 * take the low indices). */
tp_status tp_wasm_module_import_func(tp_wasm_module *m, const char *module, const char *name,
                                     uint32_t type_index, uint32_t *func_index_out);
/* At most one memory (imported or defined), index 0. */
tp_status tp_wasm_module_import_memory(tp_wasm_module *m, const char *module, const char *name,
                                       tp_wasm_limits limits);
tp_status tp_wasm_module_define_memory(tp_wasm_module *m, tp_wasm_limits limits);
/* At most one funcref table (imported), index 0, for call_indirect. */
tp_status tp_wasm_module_import_table(tp_wasm_module *m, const char *module, const char *name,
                                      tp_wasm_limits limits);
/* A defined global with a constant initializer (bits: the value's bytes,
 * little endian: an int32/int64 sign-extended, a float's bits, a double's
 * bits). No v128 globals. */
tp_status tp_wasm_module_add_global(tp_wasm_module *m, uint8_t type, bool mutable_,
                                    uint64_t bits, uint32_t *global_index_out);
tp_status tp_wasm_module_export_func(tp_wasm_module *m, const char *name, uint32_t func_index);
tp_status tp_wasm_module_export_memory(tp_wasm_module *m, const char *name);

/* Writes the binary: header, then the type, import, function, table,
 * memory, global, export and code sections (empty ones left out). Each
 * section and body size is written as a 5-byte placeholder and patched when
 * known (wabt's approach), then shrunk to its minimal LEB128 so the output
 * matches what wat2wasm writes. Fails if a function was not ended or failed
 * a check. *bytes_out is borrowed until tp_wasm_module_free; calling finish
 * again rewrites it. */
tp_status tp_wasm_module_finish(tp_wasm_module *m, const uint8_t **bytes_out, size_t *len_out);

/* Labels of the last finish: byte offsets in the output with text, sorted
 * by offset ("section code", "func 1 'axpy' body", and the emitter's own
 * tp_wasm_func_label marks). Borrowed until the next finish or free. */
typedef struct tp_wasm_label {
  size_t offset;
  const char *text;
} tp_wasm_label;
void tp_wasm_module_labels(const tp_wasm_module *m, const tp_wasm_label **labels_out,
                           size_t *n_out);

/* Annotated hex dump: one line per label (and per 16 bytes), e.g.
 *   000008: 01 07                    ; section type
 * *text_out is NUL-terminated, owned by the caller (tp_free). labels may
 * be NULL (plain dump); they need not be sorted. */
tp_status tp_wasm_dump(const uint8_t *bytes, size_t len, const tp_wasm_label *labels,
                       size_t nlabels, char **text_out);

/* ---- function bodies ---- */
/* A new function of the given type; its index (after the imports) is known
 * at once, so functions may call each other in any order. name (copied,
 * may be NULL) is used in labels and error messages. Bodies are
 * independent: several may be open at a time. */
tp_status tp_wasm_func_begin(tp_wasm_module *m, uint32_t type_index, const char *name,
                             tp_wasm_func **f_out, uint32_t *func_index_out);
/* count locals of one type; their first index (params come first). May be
 * called at any time before tp_wasm_func_end. */
tp_status tp_wasm_func_add_locals(tp_wasm_func *f, uint32_t count, uint8_t type,
                                  uint32_t *first_index_out);
/* Closes the body: emits the final `end` (checking the results on the
 * stack). Returns the function's status (its first error, if any). */
tp_status tp_wasm_func_end(tp_wasm_func *f);
/* The first error of f (TP_OK if none) and its message ("" if none). */
tp_status tp_wasm_func_status(const tp_wasm_func *f);
const char *tp_wasm_func_error(const tp_wasm_func *f);
/* Mark the current code offset with a label (printf-style) for the dump. */
tp_status tp_wasm_func_label(tp_wasm_func *f, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Emit one instruction. tp_wasm_emit takes ops without immediates (and
 * memory.size / memory.grow, else, end, return, drop, select, unreachable);
 * the others take their immediates. Each fails with TP_ERR_INVALID_ARG when
 * op has another immediate kind. */
tp_status tp_wasm_emit(tp_wasm_func *f, tp_wasm_op op);
tp_status tp_wasm_emit_block(tp_wasm_func *f, tp_wasm_op op /* BLOCK, LOOP, IF */,
                             int64_t blocktype);
tp_status tp_wasm_emit_br(tp_wasm_func *f, tp_wasm_op op /* BR, BR_IF */, uint32_t depth);
tp_status tp_wasm_emit_br_table(tp_wasm_func *f, uint32_t n, const uint32_t *depths,
                                uint32_t default_depth);
tp_status tp_wasm_emit_call(tp_wasm_func *f, uint32_t func_index);
tp_status tp_wasm_emit_call_indirect(tp_wasm_func *f, uint32_t type_index);
tp_status tp_wasm_emit_local(tp_wasm_func *f, tp_wasm_op op /* LOCAL_GET/SET/TEE */,
                             uint32_t index);
tp_status tp_wasm_emit_global(tp_wasm_func *f, tp_wasm_op op /* GLOBAL_GET/SET */,
                              uint32_t index);
/* Loads and stores: align_log2 <= the natural alignment's log2, or
 * TP_WASM_ALIGN_NATURAL. */
tp_status tp_wasm_emit_mem(tp_wasm_func *f, tp_wasm_op op, uint32_t align_log2, uint32_t offset);
tp_status tp_wasm_emit_i32_const(tp_wasm_func *f, int32_t v);
tp_status tp_wasm_emit_i64_const(tp_wasm_func *f, int64_t v);
tp_status tp_wasm_emit_f32_const(tp_wasm_func *f, float v);
tp_status tp_wasm_emit_f64_const(tp_wasm_func *f, double v);
tp_status tp_wasm_emit_v128_const(tp_wasm_func *f, const uint8_t bytes[16]);
tp_status tp_wasm_emit_f32x4_const(tp_wasm_func *f, float a, float b, float c, float d);
/* extract_lane / replace_lane. */
tp_status tp_wasm_emit_lane(tp_wasm_func *f, tp_wasm_op op, uint32_t lane);
tp_status tp_wasm_emit_shuffle(tp_wasm_func *f, const uint8_t lanes[16]);

#endif
