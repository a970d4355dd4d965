/* stax_dynamic.c - one plan for every size of a dynamic dim (stax).
 *
 * The rule (docs/kernel-ir.md, "Dynamic extents"): the first call whose
 * shapes differ from the captured ones names the symbol: the input dims
 * that changed, all to one value (duck sizing: dims that change together
 * to the same value are one symbol s; dims that change apart are two
 * symbols, which this does not serve). The graph is then lowered at the
 * sample sizes s = 128, 192, 256 (and 320 when a number is quadratic; when
 * the captured size is a multiple of 64, from it - 128 on, the captured
 * plan's program being the third sample) and
 * the programs fitted into a template (src/lower/symbolic.c); every call
 * at a size s >= 2 whose other dims are the captured ones is the template
 * instantiated at s (numbers evaluated, memory re-planned, the packed
 * weights shared), cached per size. Anything else is a specialization:
 * the graph lowered at exactly those shapes, with the reason (sizes 0
 * and 1, an extent not whole at s, another dim changed, the samples not
 * one program), cached the same way. On a Wasm host these plans run on the
 * executor until a size's 16th call, which attaches generated kernels (the
 * emitter bakes extents into the code: a module per size, made only for
 * sizes called often enough to repay it; a run on them is ~10% faster for
 * the OCR recognizer, and making one costs about a run). */
#include "stax_dynamic.h"
#include <stdarg.h>
#include <stdio.h>

#define DYN_S0 128
#define DYN_H 64
#define DYN_CACHE 8
#define DYN_MAX_POS 16
#define DYN_GEN_CALLS 16 /* a size's plan gets generated kernels at its 16th call (Wasm) */

typedef struct dyn_plan {
  int64_t *key;     /* every input dim of the binding */
  tp_plan *plan;
  uint64_t used;
  int pinned;       /* the donor of the packed weights: never evicted */
  int gen_pending;  /* generated kernels are attached at its DYN_GEN_CALLS-th call */
  int64_t calls;
} dyn_plan;

struct stax_dyn {
  const tp_graph *g;
  tp_lower_options lo;
  tp_status (*attach)(tp_plan *pl, const tp_lower_options *lo);
  tp_status (*graph_for)(void *ud, int nin, tp_tensor *const *examples, tp_graph **out);
  void *graph_for_ud;
  int nin, nkey;
  tp_desc *cap;     /* per input: the captured desc (ndim -1: not read by the plan) */
  int state;        /* 0: no symbol yet, 1: template, 2: no template (reason) */
  int npos, pos_in[DYN_MAX_POS], pos_dim[DYN_MAX_POS];
  tp_kir_template *tpl;
  tp_plan *donor;
  dyn_plan cache[DYN_CACHE];
  uint64_t clock;
  int64_t lowerings, instantiations, specializations, hits, graph_runs;
  int nsamples;
  int64_t s0;       /* the first sample size */
  const tp_kir_program *base_prog; /* the base plan's program (read only) */
  double fit_graph_ms, fit_lower_ms; /* of fit_ms: making the samples' graphs (an import), lowering them */
  double fit_ms, inst_ms_last, inst_ms_max, gen_ms_last;
  int64_t generated;
  char reason[320];     /* why there is no template */
  char last_spec[320];  /* why the last specialization was made */
};

tp_status tp_stax_dyn_new(const tp_graph *g, const tp_lower_options *lo, const tp_plan *base,
                          tp_status (*attach)(tp_plan *pl, const tp_lower_options *lo),
                          tp_status (*graph_for)(void *ud, int nin, tp_tensor *const *examples, tp_graph **out),
                          void *graph_for_ud, stax_dyn **out) {
  *out = NULL;
  const tp_kir_program *p = tp_plan_program(base);
  int nin = 0;
  for (int i = 0; i < g->n; i++) nin += g->nodes[i].kind == TP_NODE_PLACEHOLDER;
  stax_dyn *d = tp_alloc(sizeof *d);
  if (!d) return TP_ERR_OUT_OF_MEMORY;
  memset(d, 0, sizeof *d);
  d->g = g, d->lo = *lo, d->attach = attach, d->nin = nin;
  d->graph_for = graph_for, d->graph_for_ud = graph_for_ud;
  d->base_prog = p, d->s0 = DYN_S0;
  d->cap = tp_alloc(sizeof(tp_desc) * (size_t)(nin ? nin : 1));
  if (!d->cap) {
    tp_free(d);
    return TP_ERR_OUT_OF_MEMORY;
  }
  for (int i = 0; i < nin; i++) d->cap[i].ndim = -1;
  for (int b = 0; b < p->nbufs; b++)
    if (p->bufs[b].kind == TP_KBUF_INPUT && p->bufs[b].index < nin) d->cap[p->bufs[b].index] = p->bufs[b].desc;
  /* inputs the plan does not read: their placeholder's desc */
  for (int i = 0, k = 0; i < g->n; i++)
    if (g->nodes[i].kind == TP_NODE_PLACEHOLDER) {
      if (d->cap[k].ndim < 0) d->cap[k] = g->nodes[i].desc;
      d->nkey += d->cap[k].ndim > 0 ? d->cap[k].ndim : 0;
      k++;
    }
  *out = d;
  return TP_OK;
}

void tp_stax_dyn_free(stax_dyn *d) {
  if (!d) return;
  for (int i = 0; i < DYN_CACHE; i++)
    if (d->cache[i].plan && !d->cache[i].pinned) tp_plan_free(d->cache[i].plan), tp_free(d->cache[i].key);
  for (int i = 0; i < DYN_CACHE; i++) /* the donor last: the others borrowed from it */
    if (d->cache[i].plan && d->cache[i].pinned) tp_plan_free(d->cache[i].plan), tp_free(d->cache[i].key);
  tp_kir_template_free(d->tpl);
  tp_free(d->cap);
  tp_free(d);
}

/* The graph with the placeholders' shapes of the binding in[] (NULL: the
 * captured ones with the symbol's dims set to s). */
static tp_status graph_at(const stax_dyn *d, tp_tensor *const *in, int64_t s, tp_graph **out) {
  *out = NULL;
  if (d->graph_for) { /* the graph's owner derives it (an ONNX import at these shapes) */
    if (in) return d->graph_for(d->graph_for_ud, d->nin, in, out);
    tp_tensor *ex[64] = {0};
    if (d->nin > 64) return tp_fail(TP_ERR_UNSUPPORTED, "stax: %d inputs (at most 64 for a dynamic dim)", d->nin);
    tp_status st = TP_OK;
    for (int k = 0; k < d->nin && !st; k++) {
      tp_desc c = d->cap[k];
      for (int j = 0; j < d->npos; j++)
        if (d->pos_in[j] == k) c.shape[d->pos_dim[j]] = s;
      st = tp_tensor_empty(c.dtype, c.ndim < 0 ? 0 : c.ndim, c.shape, &ex[k]);
      if (!st) memset(tp_tensor_ptr(ex[k]), 0, (size_t)tp_tensor_numel(ex[k]) * tp_dtype_size(c.dtype));
    }
    if (!st) st = d->graph_for(d->graph_for_ud, d->nin, ex, out);
    for (int k = 0; k < d->nin; k++) tp_tensor_release(ex[k]);
    return st;
  }
  TP_TRY(tp_graph_copy(d->g, out));
  tp_graph *g = *out;
  for (int i = 0, k = 0; i < g->n; i++) {
    if (g->nodes[i].kind != TP_NODE_PLACEHOLDER) continue;
    tp_node *n = &g->nodes[i];
    if (in) {
      tp_desc_of(in[k], &n->desc);
      n->desc.weak = 0;
    } else {
      for (int j = 0; j < d->npos; j++)
        if (d->pos_in[j] == k) n->desc.shape[d->pos_dim[j]] = s;
    }
    tp_graph_set_val(g, i, NULL); /* the capture's sample value has the old shape */
    k++;
  }
  return TP_OK;
}

static tp_status lower_graph(stax_dyn *d, tp_graph *g, tp_kir_program **out) {
  tp_lower_options lo = d->lo;
  lo.autotune = 0; /* the samples are for their numbers */
  tp_status s = tp_lower_program(g, &lo, out);
  tp_graph_free(g);
  d->lowerings++;
  return s;
}

/* The first binding whose shapes differ: the symbol, then the template. */
static tp_status find_symbol(stax_dyn *d, tp_tensor *const *in) {
  int64_t val = -1, was = -1;
  d->npos = 0;
  for (int i = 0; i < d->nin; i++) {
    const tp_desc *c = &d->cap[i];
    for (int k = 0; k < c->ndim; k++) {
      int64_t v = tp_tensor_shape(in[i])[k];
      if (v == c->shape[k]) continue;
      if (d->npos == DYN_MAX_POS || (val >= 0 && (v != val || c->shape[k] != was))) {
        snprintf(d->reason, sizeof d->reason,
                 "dims change apart (inputs[%d].shape[%d] is %lld where an earlier changed dim is %lld): "
                 "one symbol per plan; each binding is a specialization", i, k, (long long)v, (long long)val);
        d->state = 2;
        return TP_OK;
      }
      val = v, was = c->shape[k];
      d->pos_in[d->npos] = i, d->pos_dim[d->npos] = k, d->npos++;
    }
  }
  if (!d->npos || val < 2) { /* a size 0 or 1: specialized; the symbol waits for a size >= 2 */
    d->npos = 0;
    return TP_OK;
  }
  tp_kir_program *progs[4] = {0};
  int n = 3, need_more = 0, base_at = -1;
  /* the captured size on the samples' lattice is the third sample: its
   * program is the base plan's (not when autotuned: its blockings differ) */
  if (!d->lo.autotune && was % DYN_H == 0 && was - 2 * DYN_H >= DYN_H) d->s0 = was - 2 * DYN_H, base_at = 2;
  double t0 = tp_now_ms();
  tp_status s = TP_OK;
  for (int i = 0; i < 4 && !s; i++) {
    if (i == 3 && !need_more) break;
    tp_graph *g = NULL;
    if (i == base_at) {
      progs[i] = (tp_kir_program *)d->base_prog; /* read only, not freed here */
    } else {
      double t1 = tp_now_ms();
      s = graph_at(d, NULL, d->s0 + (int64_t)i * DYN_H, &g);
      double t2 = tp_now_ms();
      if (!s) s = lower_graph(d, g, &progs[i]);
      d->fit_graph_ms += t2 - t1, d->fit_lower_ms += tp_now_ms() - t2;
    }
    if (s && s != TP_ERR_OUT_OF_MEMORY) {
      snprintf(d->reason, sizeof d->reason, "lowering at the sample size %lld failed: %s",
               (long long)(d->s0 + (int64_t)i * DYN_H), tp_last_error());
      tp_clear_error();
      d->state = 2;
      s = TP_OK;
      break;
    }
    if (s) break;
    if (i >= 2) {
      n = i + 1;
      s = tp_kir_template_fit(progs, n, d->s0, DYN_H, &need_more, &d->tpl, d->reason, sizeof d->reason);
      if (s || d->tpl || !need_more) break;
    }
  }
  d->nsamples = progs[3] ? 4 : 3;
  d->fit_ms = tp_now_ms() - t0;
  for (int i = d->tpl ? 1 : 0; i < 4; i++)
    if (i != base_at) tp_kir_program_free(progs[i]);
  if (s) return s;
  if (d->tpl) {
    d->state = 1;
  } else if (d->state != 2) {
    d->state = 2;
    if (!d->reason[0]) snprintf(d->reason, sizeof d->reason, "the samples are not one program");
  }
  return TP_OK;
}

static dyn_plan *lookup(stax_dyn *d, const int64_t *key) {
  for (int i = 0; i < DYN_CACHE; i++)
    if (d->cache[i].plan && !memcmp(d->cache[i].key, key, sizeof(int64_t) * (size_t)d->nkey)) return &d->cache[i];
  return NULL;
}

static tp_status store(stax_dyn *d, const int64_t *key, tp_plan *pl, int pinned, dyn_plan **out) {
  int slot = -1;
  for (int i = 0; i < DYN_CACHE && slot < 0; i++)
    if (!d->cache[i].plan) slot = i;
  if (slot < 0) /* the least recently used, never the donor */
    for (int i = 0; i < DYN_CACHE; i++)
      if (!d->cache[i].pinned && (slot < 0 || d->cache[i].used < d->cache[slot].used)) slot = i;
  dyn_plan *e = &d->cache[slot];
  int64_t *k = tp_alloc(sizeof(int64_t) * (size_t)(d->nkey ? d->nkey : 1));
  if (!k) {
    tp_plan_free(pl);
    return TP_ERR_OUT_OF_MEMORY;
  }
  memcpy(k, key, sizeof(int64_t) * (size_t)d->nkey);
  if (e->plan) tp_plan_free(e->plan), tp_free(e->key);
  e->plan = pl, e->key = k, e->pinned = pinned, e->used = ++d->clock, e->calls = 0, e->gen_pending = 0;
  *out = e;
  return TP_OK;
}

/* Whether the template serves this binding: s, or -1 and why. */
static int64_t symbol_value(const stax_dyn *d, tp_tensor *const *in, char *why, size_t n) {
  int64_t s = tp_tensor_shape(in[d->pos_in[0]])[d->pos_dim[0]];
  for (int j = 1; j < d->npos; j++)
    if (tp_tensor_shape(in[d->pos_in[j]])[d->pos_dim[j]] != s) {
      snprintf(why, n, "inputs[%d].shape[%d] == inputs[%d].shape[%d] (one symbol s0) failed", d->pos_in[j],
               d->pos_dim[j], d->pos_in[0], d->pos_dim[0]);
      return -1;
    }
  for (int i = 0; i < d->nin; i++)
    for (int k = 0; k < d->cap[i].ndim; k++) {
      int sym = 0;
      for (int j = 0; j < d->npos; j++) sym |= d->pos_in[j] == i && d->pos_dim[j] == k;
      if (!sym && tp_tensor_shape(in[i])[k] != d->cap[i].shape[k]) {
        snprintf(why, n, "inputs[%d].shape[%d] == %lld failed (a static dim of the plan)", i, k,
                 (long long)d->cap[i].shape[k]);
        return -1;
      }
    }
  return s;
}

tp_status tp_stax_dyn_run(stax_dyn *d, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout,
                          int *handled) {
  *handled = 0;
  if (nin != d->nin) return TP_OK;
  int64_t key[TP_MAX_DIMS * 64];
  if (d->nkey > (int)TP_ARRAY_LEN(key)) return TP_OK;
  for (int i = 0, q = 0; i < nin; i++) {
    if (tp_tensor_ndim(in[i]) != (d->cap[i].ndim < 0 ? 0 : d->cap[i].ndim) ||
        tp_tensor_dtype(in[i]) != d->cap[i].dtype)
      return TP_OK; /* not this plan's signature: the graph executor */
    for (int k = 0; k < d->cap[i].ndim; k++) key[q++] = tp_tensor_shape(in[i])[k];
  }
  dyn_plan *e = lookup(d, key);
  if (!e) {
    if (d->state == 0) TP_TRY(find_symbol(d, in));
    char why[320] = "";
    tp_kir_program *p = NULL;
    int64_t s = -1;
    if (d->state == 1 && (s = symbol_value(d, in, why, sizeof why)) >= 0) {
      double t0 = tp_now_ms();
      TP_TRY(tp_kir_template_instantiate(d->tpl, s, &p, why, sizeof why));
      if (p) {
        tp_plan *pl = NULL;
        TP_TRY(tp_plan_new_shared(p, d->donor, &pl));
        TP_TRY(store(d, key, pl, !d->donor, &e));
        e->gen_pending = d->attach != NULL; /* the executor until the size is hot */
        if (!d->donor) d->donor = pl;
        d->instantiations++;
        d->inst_ms_last = tp_now_ms() - t0;
        if (d->inst_ms_last > d->inst_ms_max) d->inst_ms_max = d->inst_ms_last;
      }
    } else if (d->state == 0) {
      snprintf(why, sizeof why, "a dim changed to 0 or 1: sizes 0 and 1 are specialized (a size 1 broadcasts); "
               "the symbol waits for a size >= 2");
    } else if (d->state == 2) {
      snprintf(why, sizeof why, "%s", d->reason);
    }
    if (!e) { /* a specialization: lowered at exactly these shapes */
      tp_graph *g = NULL, *keep = NULL;
      tp_plan *pl = NULL;
      TP_TRY(graph_at(d, in, 0, &g));
      if (d->graph_for && tp_graph_copy(g, &keep)) { /* to run it if it does not lower */
        tp_graph_free(g);
        return TP_ERR_OUT_OF_MEMORY;
      }
      tp_status st = tp_lower(g, &d->lo, &pl); /* the whole lowering (control flow's sub-plans too) */
      tp_graph_free(g);
      d->lowerings++;
      if (st == TP_ERR_OUT_OF_MEMORY) {
        tp_graph_free(keep);
        return st;
      }
      if (st) { /* the graph executor runs it, as before */
        tp_log(TP_LOG_FALLBACKS, "stax: no plan for these shapes, the graph executor runs them: %s", tp_last_error());
        tp_clear_error();
        d->graph_runs++;
        if (!keep) return TP_OK; /* the caller runs its graph */
        *handled = 1;
        st = tp_graph_run(keep, nin, in, max_out, outs, nout);
        tp_graph_free(keep);
        return st;
      }
      tp_graph_free(keep);
      TP_TRY(store(d, key, pl, 0, &e));
      e->gen_pending = d->attach != NULL;
      d->specializations++;
      snprintf(d->last_spec, sizeof d->last_spec, "%s", why);
      tp_log(TP_LOG_RECOMPILES, "stax: specialized for new shapes: %s", why);
    }
  } else {
    d->hits++;
    if (e->gen_pending && ++e->calls >= DYN_GEN_CALLS - 1) { /* a hot size: its generated kernels (Wasm hosts) */
      double t0 = tp_now_ms();
      e->gen_pending = 0;
      TP_TRY(d->attach(e->plan, &d->lo));
      d->gen_ms_last = tp_now_ms() - t0;
      d->generated += tp_plan_accel_kernels(e->plan) > 0;
    }
  }
  e->used = ++d->clock;
  *handled = 1;
  return tp_plan_run(e->plan, nin, in, max_out, outs, nout);
}

static int app(char *json, size_t n, size_t *pos, const char *fmt, ...) {
  if (*pos >= n) return 0;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(json + *pos, n - *pos, fmt, ap);
  va_end(ap);
  if (k < 0 || (size_t)k >= n - *pos) return 0;
  *pos += (size_t)k;
  return 1;
}

/* s with JSON's specials escaped (quotes and backslashes only occur in
 * reasons that quote an error). */
static void esc(const char *s, char *out, size_t n) {
  size_t k = 0;
  for (; *s && k + 2 < n; s++) {
    if (*s == '"' || *s == '\\') out[k++] = '\\';
    out[k++] = (unsigned char)*s < 0x20 ? ' ' : *s;
  }
  out[k] = 0;
}

int tp_stax_dyn_describe(const stax_dyn *d, char *json, size_t n, size_t *pos) {
  if (!d || (!d->lowerings && !d->hits && !d->graph_runs)) return app(json, n, pos, "\"dynamic\": null, ");
  char reason[700], last[700], dims[400] = "";
  size_t q = 0;
  for (int j = 0; j < d->npos && q < sizeof dims - 40; j++)
    q += (size_t)snprintf(dims + q, sizeof dims - q, "%s\"inputs[%d].shape[%d]\"", j ? ", " : "", d->pos_in[j],
                          d->pos_dim[j]);
  esc(d->state == 2 ? d->reason : "", reason, sizeof reason);
  char four[24] = "";
  if (d->nsamples > 3) snprintf(four, sizeof four, "%lld", (long long)(d->s0 + 3 * DYN_H));
  esc(d->last_spec, last, sizeof last);
  return app(json, n, pos,
             "\"dynamic\": {\"symbols\": %s, \"dims\": [%s], \"template\": %s, \"no_template_reason\": %s%s%s, "
             "\"samples\": [%lld, %lld, %lld%s%s], \"dynamic_numbers\": %d, \"quadratic\": %s, \"lowerings\": %lld, "
             "\"fit_ms\": %.3f, \"fit_graph_ms\": %.3f, \"fit_lower_ms\": %.3f, \"instantiations\": %lld, \"instantiate_ms_last\": %.3f, \"instantiate_ms_max\": %.3f, "
             "\"specializations\": %lld, \"last_specialization\": %s%s%s, \"cache_hits\": %lld, \"graph_runs\": %lld, "
             "\"generated_plans\": %lld, \"codegen_ms_last\": %.3f}, ",
             d->npos ? "[\"s0\"]" : "[]", dims, d->state == 1 ? "true" : "false", d->state == 2 ? "\"" : "",
             d->state == 2 ? reason : "null", d->state == 2 ? "\"" : "", (long long)d->s0,
             (long long)(d->s0 + DYN_H), (long long)(d->s0 + 2 * DYN_H), d->nsamples > 3 ? ", " : "", four, tp_kir_template_dynamic(d->tpl),
             tp_kir_template_quadratic(d->tpl) ? "true" : "false", (long long)d->lowerings, d->fit_ms, d->fit_graph_ms, d->fit_lower_ms,
             (long long)d->instantiations, d->inst_ms_last, d->inst_ms_max, (long long)d->specializations,
             d->last_spec[0] ? "\"" : "", d->last_spec[0] ? last : "null", d->last_spec[0] ? "\"" : "",
             (long long)d->hits, (long long)d->graph_runs, (long long)d->generated, d->gen_ms_last);
}
