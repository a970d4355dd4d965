/* stax.c - the default backend: the lowering core (src/lower) and, on a
 * Wasm host, generated kernels from src/codegen attached to the plan as
 * lower's accelerator. This file is where the two meet: lower never
 * includes codegen, codegen only reads Kernel IR.
 *
 * Threads: no globals; a runner is used by one thread at a time. */
#include "backends.h"
#include "stax_dynamic.h"
#include "../../codegen/jit.h"
#include "../../codegen/qgemm_jit.h"
#include "../../lower/lower.h"
#include "../modes.h"
#include <stdio.h>

/* Options and mode reach stax only when set; reject what it does not know. */
static tp_status check_opts(const tp_backend_opts *o) {
  if (!o) return TP_OK;
  if (o->has_mode) {
    const char *keys[8];
    int n;
    char mode[sizeof o->mode + 1];
    snprintf(mode, sizeof mode, "%.*s", (int)sizeof o->mode, o->mode);
    TP_TRY(tp_mode_patch(mode, 8, keys, &n));
  }
  if (o->has_options) {
    if (o->noptions < 0 || o->noptions > TP_ARRAY_LEN(o->option_keys))
      return tp_fail(TP_ERR_INVALID_ARG, "backend options: %d options (at most %d)", o->noptions,
                     TP_ARRAY_LEN(o->option_keys));
    TP_TRY(tp_check_mode_options(o->noptions, o->option_keys, o->option_values));
  }
  return TP_OK;
}

/* stax: the lowering core (src/lower): passes, fusion into Kernel IR,
 * memory plan, the KIR executor. Options come from the mode's patch and the
 * options dict (stax.fusion, stax.epilogue_fusion, stax.memory_planning).
 * Shapes other than the captured ones (dynamic) run on plans instantiated
 * from one Kernel IR template, or on specializations (stax_dynamic.c); if
 * lowering fails, the graph executor runs it (logged as a fallback),
 * unless strict_native, which raises. */
typedef struct stax_runner {
  tp_plan *plan;
  tp_graph *graph;
  stax_dyn *dyn;
  tp_lower_options lo;
  tp_status (*graph_for)(void *ud, int nin, tp_tensor *const *examples, tp_graph **out);
  void *graph_for_ud;
} stax_runner;

/* Generated kernels for a plan the dynamic path made, as for the first. */
static tp_status accelerate_all(tp_plan *pl, int use_cache, int depth);

/* Generated SIMD128 kernels for a plan and its sub-plans on a Wasm host
 * (also the dynamic path's plans, stax_dynamic.c); a failure leaves the
 * executor running the kernels, out of memory stays an error. */
static tp_status attach_codegen(tp_plan *pl, const tp_lower_options *lo, int mode) {
  if (!lo->codegen) return TP_OK;
  /* mode (stax_dynamic.h): 1, 2 a template's plan: its numbers in a
   * parameter block (one module for every size); 1 only when that module
   * was loaded before */
  int flags = (lo->use_cache ? 1 : 0) | (mode ? TP_JIT_PARAMS : 0) | (mode == 1 ? TP_JIT_SEEN_ONLY : 0);
  tp_status cs = accelerate_all(pl, flags, 0);
  if (cs == TP_ERR_OUT_OF_MEMORY) return cs;
  if (cs) {
    tp_log(TP_LOG_FALLBACKS, "stax: code generation failed, the executor runs the kernels: %s", tp_last_error());
    tp_clear_error();
  }
  return TP_OK;
}

/* Whether the inputs have the captured plan's shapes and dtypes. */
static int plan_fits(const stax_runner *r, int nin, tp_tensor *const *in) {
  const tp_kir_program *p = tp_plan_program(r->plan);
  int exact = 1;
  for (int b = 0; b < p->nbufs && exact; b++)
    if (p->bufs[b].kind == TP_KBUF_INPUT) {
      tp_desc d;
      if (p->bufs[b].index >= nin) break;
      tp_desc_of(in[p->bufs[b].index], &d);
      d.weak = 0;
      exact = tp_desc_equal(&d, &p->bufs[b].desc);
    }
  return exact;
}

static tp_status stax_run(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                          int *nout) {
  stax_runner *r = ud;
  if (plan_fits(r, nin, in)) return tp_plan_run(r->plan, nin, in, max_out, outs, nout);
  if (!r->dyn)
    TP_TRY(tp_stax_dyn_new(r->graph, &r->lo, r->plan, attach_codegen, r->graph_for, r->graph_for_ud, &r->dyn));
  int handled = 0;
  TP_TRY(tp_stax_dyn_run(r->dyn, nin, in, max_out, outs, nout, &handled));
  if (handled) return TP_OK;
  return tp_graph_run(r->graph, nin, in, max_out, outs, nout);
}

/* Donated inputs: the plan releases each after its last reading kernel. */
static tp_status stax_run_donated(void *ud, int nin, tp_tensor **in, uint64_t donated, int max_out,
                                  tp_tensor **outs, int *nout) {
  stax_runner *r = ud;
  if (nin <= 64 && plan_fits(r, nin, in)) return tp_plan_run_donated(r->plan, nin, in, donated, max_out, outs, nout);
  tp_status s = tp_graph_run(r->graph, nin, in, max_out, outs, nout);
  for (int i = 0; i < nin && i < 64; i++)
    if ((donated >> i) & 1) tp_tensor_release(in[i]), in[i] = NULL;
  return s;
}

/* Appends str (as a JSON string when quote) at *pos of json[n]; 0 when it
 * does not fit (json is then cut, and the caller rewrites it). */
static int put(char *json, size_t n, size_t *pos, const char *str, int quote) {
  const unsigned char *q = (const unsigned char *)(str ? str : "");
  if (quote && *pos + 1 < n) json[(*pos)++] = '"';
  else if (quote) return 0;
  for (; *q; q++) {
    char esc[8];
    const char *w = esc;
    if (quote && (*q == '"' || *q == '\\')) snprintf(esc, sizeof esc, "\\%c", *q);
    else if (quote && *q < 0x20) snprintf(esc, sizeof esc, "\\u%04x", *q);
    else esc[0] = (char)*q, esc[1] = 0;
    for (; *w; w++) {
      if (*pos + 1 >= n) return 0;
      json[(*pos)++] = *w;
    }
  }
  if (quote) {
    if (*pos + 1 >= n) return 0;
    json[(*pos)++] = '"';
  }
  json[*pos] = 0;
  return 1;
}

/* explain().backend_plans[i]: counts by kind; kernel_kinds: each kernel's
 * kind, in run order; kernel_generated: whether each runs as generated
 * code (Wasm; false natively and before the module is installed);
 * kernel_nodes: for each kernel the captured graph's nodes it computes
 * (g.graph()'s %names): a node a pass made stands for the node it was made
 * from (tp_node.from: a 1x1 conv's GEMM and reshapes, a decomposed
 * softmax's parts), each named once per kernel. The lists are null when
 * they do not fit in n bytes. Written in place: no allocation. */
static int named_before(const tp_kir_program *p, int k, int i) {
  const char *o = tp_node_origin(&p->graph->nodes[i]);
  for (int j = 0; j < i; j++)
    if (p->node_kernel[j] == k && !strcmp(tp_node_origin(&p->graph->nodes[j]), o)) return 1;
  return 0;
}

/* control flow: the sub-plans under pl (cond branches, while_loop cond and
 * body, nested) and how many of their kernels run as generated code */
static void count_subplans(tp_plan *pl, int depth, int *nsub, int *ngen) {
  for (int i = 0; i < tp_plan_nsubplans(pl) && depth < 8; i++) {
    tp_plan *sp = tp_plan_subplan(pl, i);
    if (!sp) continue;
    ++*nsub;
    *ngen += tp_plan_accel_kernels(sp);
    count_subplans(sp, depth + 1, nsub, ngen);
  }
}

static void stax_describe(void *ud, char *json, size_t n) {
  stax_runner *r = ud;
  const tp_kir_program *p = tp_plan_program(r->plan);
  int kinds[TP_KK_KIND_COUNT] = {0}, qmm = 0, mmi = 0, qcv = 0, cvi = 0;
  for (int k = 0; k < p->nkernels; k++) {
    kinds[p->kernels[k].kind]++;
    if (p->kernels[k].kind == TP_KK_OP && p->kernels[k].node >= 0) { /* the integer GEMM's op kernels */
      tp_op op = p->graph->nodes[p->kernels[k].node].op;
      qmm += op == TP_OP_QMATMUL, mmi += op == TP_OP_MATMUL_INT, qcv += op == TP_OP_QCONV2D, cvi += op == TP_OP_CONV2D_INT;
    }
  }
  if (!n) return;
  int nsub = 0, ngen = 0;
  count_subplans(r->plan, 0, &nsub, &ngen);
  int hn = snprintf(json, n,
                    "{\"kernels\": %d, \"pointwise\": %d, \"row\": %d, \"gemm\": %d, \"conv\": %d, \"op\": %d, "
                    "\"generated\": %d, \"arena_bytes\": %lld, \"autotuned\": %d, \"qmatmul\": %d, \"matmul_int\": %d, "
                    "\"qconv2d\": %d, \"conv2d_int\": %d, \"subplans\": %d, \"subplan_generated\": %d, ",
                    p->nkernels, kinds[TP_KK_POINTWISE], kinds[TP_KK_ROW], kinds[TP_KK_GEMM], kinds[TP_KK_CONV], kinds[TP_KK_OP],
                    tp_plan_accel_kernels(r->plan), (long long)p->arena_bytes, p->tuned, qmm, mmi, qcv, cvi, nsub, ngen);
  if (hn < 0 || (size_t)hn >= n) return; /* cut: the caller's buffer is too small for anything */
  size_t pos = (size_t)hn;
  if (!tp_stax_dyn_describe(r->dyn, json, n, &pos)) json[pos = (size_t)hn] = 0;
  hn = (int)pos;
  int ok = p->node_kernel && p->graph;
  static const char *const kn[] = {"pointwise", "row", "gemm", "op", "conv"};
  ok = ok && put(json, n, &pos, "\"kernel_kinds\": [", 0);
  for (int k = 0; ok && k < p->nkernels; k++)
    ok = (!k || put(json, n, &pos, ", ", 0)) && put(json, n, &pos, kn[p->kernels[k].kind], 1);
  ok = ok && put(json, n, &pos, "], \"kernel_generated\": [", 0);
  for (int k = 0; ok && k < p->nkernels; k++)
    ok = (!k || put(json, n, &pos, ", ", 0)) && put(json, n, &pos, tp_plan_accel_generated(r->plan, k) ? "true" : "false", 0);
  ok = ok && put(json, n, &pos, "], \"kernel_nodes\": [", 0);
  for (int k = 0; ok && k < p->nkernels; k++) {
    ok = put(json, n, &pos, k ? ", [" : "[", 0);
    for (int i = 0, first = 1; ok && i < p->graph->n; i++) {
      if (p->node_kernel[i] != k) continue;
      /* a made node: named by its origin, once per kernel (the scan is
       * over earlier nodes only for made nodes, which are few) */
      if (p->graph->nodes[i].from && named_before(p, k, i)) continue;
      ok = (first || put(json, n, &pos, ", ", 0)) && put(json, n, &pos, tp_node_origin(&p->graph->nodes[i]), 1);
      first = 0;
    }
    ok = ok && put(json, n, &pos, "]", 0);
  }
  ok = ok && put(json, n, &pos, "]}", 0);
  if (!ok) snprintf(json + hn, n - (size_t)hn, "\"kernel_kinds\": null, \"kernel_generated\": null, \"kernel_nodes\": null}");
}

static char *stax_profile(void *ud) {
  stax_runner *r = ud;
  char *text = NULL;
  if (!tp_plan_profiling(r->plan) || tp_plan_profile_report(r->plan, 40, &text)) {
    tp_clear_error();
    return NULL;
  }
  return text;
}

static const void *stax_module(void *ud, size_t *len) {
  stax_runner *r = ud;
  return tp_plan_accel_module(r->plan, len);
}

static void stax_free(void *ud) {
  stax_runner *r = ud;
  tp_stax_dyn_free(r->dyn); /* before the graph it borrows */
  tp_plan_free(r->plan);
  tp_graph_free(r->graph);
  tp_free(r);
}

static int opt_value(const tp_backend_opts *o, const char *key, int dflt) {
  if (o && o->has_mode) {
    const char *keys[8];
    int n = 0;
    char mode[sizeof o->mode + 1];
    snprintf(mode, sizeof mode, "%.*s", (int)sizeof o->mode, o->mode);
    if (tp_mode_patch(mode, 8, keys, &n) == TP_OK)
      for (int i = 0; i < n; i++)
        if (!strcmp(keys[i], key)) dflt = 1;
  }
  for (int i = 0; o && o->has_options && i < o->noptions; i++)
    if (!strcmp(o->option_keys[i], key)) dflt = (int)o->option_values[i].i;
  return dflt;
}

/* Generated kernels for a plan and its control-flow sub-plans (a cond's
 * branches, a while_loop's cond and body), each its own module. */
static tp_status accelerate_all(tp_plan *pl, int use_cache, int depth) {
  tp_status s = tp_plan_accelerate(pl, &tp_wasm_accel, use_cache);
  for (int i = 0; i < tp_plan_nsubplans(pl) && s == TP_OK && depth < 8; i++)
    if (tp_plan_subplan(pl, i)) s = accelerate_all(tp_plan_subplan(pl, i), use_cache, depth + 1);
  return s;
}

tp_status tp_backend_stax(void *ud, const tp_graph *g, int nin, tp_tensor *const *examples,
                          const tp_backend_opts *opts, tp_backend_run *out) {
  (void)ud, (void)nin, (void)examples;
  TP_TRY(check_opts(opts));
  stax_runner *r = tp_alloc(sizeof *r);
  if (!r) return TP_ERR_OUT_OF_MEMORY;
  memset(r, 0, sizeof *r);
  tp_status s = tp_graph_copy(g, &r->graph); /* the runner's own copy, for other shapes */
  if (!s) {
    tp_lower_options lo;
    tp_lower_options_init(&lo);
    lo.fusion = opt_value(opts, "stax.fusion", 1);
    lo.epilogue_fusion = opt_value(opts, "stax.epilogue_fusion", 1);
    lo.memory_planning = opt_value(opts, "stax.memory_planning", 1);
    lo.codegen = opt_value(opts, "stax.codegen", 1);
    lo.autotune = opt_value(opts, "stax.max_autotune", 0);
    lo.coordinate_descent = opt_value(opts, "stax.coordinate_descent_tuning", 0);
    tp_value nc0 = tp_config_get(TP_CFG_FORCE_DISABLE_CACHES);
    lo.use_cache = !(nc0.kind == TP_VAL_BOOL && nc0.i);
    int quant = 0; /* integer GEMMs ahead: the relaxed-SIMD tile first (plans pack their weights for the best variant) */
    for (int i = 0; i < g->n && !quant; i++)
      quant = g->nodes[i].kind == TP_NODE_CALL && (g->nodes[i].op == TP_OP_MATMUL_INT || g->nodes[i].op == TP_OP_QMATMUL ||
                                                   g->nodes[i].op == TP_OP_CONV2D_INT || g->nodes[i].op == TP_OP_QCONV2D ||
                                                   g->nodes[i].op == TP_OP_DEQUANTIZE);
    if (quant && lo.codegen && tp_qgemm_jit_install(NULL) != TP_OK) {
      tp_log(TP_LOG_FALLBACKS, "stax: the relaxed-SIMD integer GEMM tile did not load, SIMD128 runs: %s", tp_last_error());
      tp_clear_error();
    }
    r->lo = lo;
    s = tp_lower(g, &lo, &r->plan);
    if (!s && opt_value(opts, "stax.profile", 0)) s = tp_plan_set_profiling(r->plan, 1);
    if (!s) s = attach_codegen(r->plan, &lo, 0); /* generated SIMD128 kernels on a Wasm host */
    if (s && s != TP_ERR_OUT_OF_MEMORY) { /* out of memory stays an error */
      if (opts && opts->has_strict_native && opts->strict_native) {
        tp_fail_context(s, "stax could not lower the graph (strict_native)");
        s = tp_last_status();
      } else {
        tp_log(TP_LOG_FALLBACKS, "stax: lowering failed, the graph executor runs it: %s", tp_last_error());
        tp_clear_error();
        s = TP_OK;
        tp_backend_graph_runner(r->graph, out);
        r->graph = NULL;
        stax_free(r);
        return TP_OK;
      }
    }
  }
  if (s) {
    stax_free(r);
    return s;
  }
  r->graph_for = opts ? opts->graph_for : NULL;
  r->graph_for_ud = opts ? opts->graph_for_ud : NULL;
  out->other_shapes = r->graph_for != NULL;
  out->run = stax_run;
  out->run_donated = stax_run_donated;
  out->ud = r;
  out->free = stax_free;
  out->describe = stax_describe;
  out->module = stax_module;
  out->profile = stax_profile;
  return TP_OK;
}
