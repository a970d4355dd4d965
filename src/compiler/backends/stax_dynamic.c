/* stax_dynamic.c - one plan for every size of the dynamic dims (stax).
 *
 * The rule (docs/kernel-ir.md, "Dynamic extents"): the first call whose
 * shapes differ from the captured ones names the symbols: the input dims
 * that changed, grouped by duck sizing (dims that change together to the
 * same value are one symbol; dims that change apart are symbols of their
 * own: an image's H and W), at most 4. The graph is then lowered at the
 * points of the template's design (src/lower/symbolic.c: one symbol s =
 * 128, 192, 256 and 320 when a number is quadratic; k symbols: 128 and
 * +64, +128 per symbol, +64 on each pair, and the check point +128 on all.
 * When the captured sizes are multiples of 64 (else of 32) the design
 * starts at them - 2 steps of 64 (32), the captured plan's program being
 * the third sample (one symbol) or the check point (more)) and the
 * programs fitted into a template; every call whose symbols' dims are
 * >= 2 and agree and whose other dims are the captured ones is the
 * template instantiated there (numbers evaluated, memory re-planned, the
 * packed weights shared), cached per binding. A later binding that
 * changes a dim the symbols do not cover (or splits one symbol's dims)
 * fits the template again with the dims as the symbols (the cache is
 * emptied; at most 4 symbols; a fit that fails keeps the template and
 * does not try again). Anything else is a specialization: the graph
 * lowered at exactly those shapes, with the reason (a symbol at 0 or 1,
 * an extent not whole there, a static dim changed, the samples not one
 * program), cached the same way. On a Wasm host these plans run on the
 * executor until a binding's 16th call, which attaches generated kernels
 * (the emitter bakes extents into the code: a module per binding, made
 * only for bindings called often enough to repay it; a run on them is
 * ~10% faster for the OCR recognizer, and making one costs about a run). */
#include "stax_dynamic.h"
#include <stdarg.h>
#include <stdio.h>

#define DYN_S0 128
#define DYN_H 64
#define DYN_CACHE 8
#define DYN_MAX_POS 16
#define DYN_GEN_CALLS 16 /* a binding's plan gets generated kernels at its 16th call (Wasm) */

typedef struct dyn_plan {
  int64_t *key;     /* every input dim of the binding */
  tp_plan *plan;
  uint64_t used;
  int pinned;       /* the donor of the packed weights: never evicted */
  int gen_pending;  /* generated kernels are attached at its DYN_GEN_CALLS-th call */
  int templ;        /* instantiated from the template (not a specialization) */
  int64_t calls;
} dyn_plan;

/* The symbols: which input dims (flat key positions) are which symbol. */
typedef struct dyn_syms {
  int k, npos, pos[DYN_MAX_POS], sym[DYN_MAX_POS];
} dyn_syms;

struct stax_dyn {
  const tp_graph *g;
  tp_lower_options lo;
  tp_status (*attach)(tp_plan *pl, const tp_lower_options *lo, int mode);
  tp_status (*graph_for)(void *ud, int nin, tp_tensor *const *examples, tp_graph **out);
  void *graph_for_ud;
  int nin, nkey;
  tp_desc *cap;     /* per input: the captured desc (ndim -1: not read by the plan) */
  int64_t *capkey;  /* the captured dims, flat (the key's order) */
  int *key_in, *key_dim; /* per flat position: its input and dim */
  int state;        /* 0: no symbol yet, 1: template, 2: no template (reason) */
  dyn_syms sy;
  int64_t *hist[TP_KIR_MAX_SYMS + 1]; /* the bindings that named symbols (duck sizing over them) */
  int nhist, refits, no_refit;
  tp_kir_template *tpl;
  tp_plan *donor;
  dyn_plan cache[DYN_CACHE];
  uint64_t clock;
  int64_t lowerings, instantiations, specializations, hits, graph_runs;
  int nsamples;
  int64_t pts[TP_KIR_MAX_DESIGN][TP_KIR_MAX_SYMS]; /* the design's points */
  const tp_kir_program *base_prog; /* the base plan's program (read only) */
  double fit_graph_ms, fit_lower_ms; /* of fit_ms: making the samples' graphs (an import), lowering them */
  double fit_ms, inst_ms_last, inst_ms_max, gen_ms_last;
  int64_t generated, generated_first; /* plans with generated kernels; of them, attached at their first call */
  char reason[320];     /* why there is no template */
  char refit_reason[320]; /* why a later fit with more symbols was refused */
  char last_spec[320];  /* why the last specialization was made */
};

tp_status tp_stax_dyn_new(const tp_graph *g, const tp_lower_options *lo, const tp_plan *base,
                          tp_status (*attach)(tp_plan *pl, const tp_lower_options *lo, int mode),
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
  d->base_prog = p;
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
  size_t m = (size_t)(d->nkey ? d->nkey : 1);
  d->capkey = tp_alloc(sizeof(int64_t) * m), d->key_in = tp_alloc(sizeof(int) * m), d->key_dim = tp_alloc(sizeof(int) * m);
  if (!d->capkey || !d->key_in || !d->key_dim) {
    tp_stax_dyn_free(d);
    return TP_ERR_OUT_OF_MEMORY;
  }
  for (int i = 0, q = 0; i < nin; i++)
    for (int k = 0; k < d->cap[i].ndim; k++, q++) d->capkey[q] = d->cap[i].shape[k], d->key_in[q] = i, d->key_dim[q] = k;
  *out = d;
  return TP_OK;
}

/* Frees every cached plan (the donor last: the others borrowed from it). */
static void flush(stax_dyn *d) {
  for (int i = 0; i < DYN_CACHE; i++)
    if (d->cache[i].plan && !d->cache[i].pinned) tp_plan_free(d->cache[i].plan), tp_free(d->cache[i].key);
  for (int i = 0; i < DYN_CACHE; i++)
    if (d->cache[i].plan && d->cache[i].pinned) tp_plan_free(d->cache[i].plan), tp_free(d->cache[i].key);
  memset(d->cache, 0, sizeof d->cache);
  d->donor = NULL;
}

void tp_stax_dyn_free(stax_dyn *d) {
  if (!d) return;
  flush(d);
  tp_kir_template_free(d->tpl);
  for (int i = 0; i < d->nhist; i++) tp_free(d->hist[i]);
  tp_free(d->cap), tp_free(d->capkey), tp_free(d->key_in), tp_free(d->key_dim);
  tp_free(d);
}

/* The graph with the placeholders' shapes of the binding in[] (NULL: the
 * captured ones with the dims of symbols sy set to sv). */
static tp_status graph_at(const stax_dyn *d, tp_tensor *const *in, const dyn_syms *sy, const int64_t *sv,
                          tp_graph **out) {
  *out = NULL;
  if (d->graph_for) { /* the graph's owner derives it (an ONNX import at these shapes) */
    if (in) return d->graph_for(d->graph_for_ud, d->nin, in, out);
    tp_tensor *ex[64] = {0};
    if (d->nin > 64) return tp_fail(TP_ERR_UNSUPPORTED, "stax: %d inputs (at most 64 for a dynamic dim)", d->nin);
    tp_status st = TP_OK;
    for (int k = 0; k < d->nin && !st; k++) {
      tp_desc c = d->cap[k];
      for (int j = 0; j < sy->npos; j++)
        if (d->key_in[sy->pos[j]] == k) c.shape[d->key_dim[sy->pos[j]]] = sv[sy->sym[j]];
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
      for (int j = 0; j < sy->npos; j++)
        if (d->key_in[sy->pos[j]] == k) n->desc.shape[d->key_dim[sy->pos[j]]] = sv[sy->sym[j]];
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

/* The template for symbols sy: lowered at the design's points and fitted;
 * *out NULL with why when there is none. */
static tp_status fit(stax_dyn *d, const dyn_syms *sy, tp_kir_template **out, char *why, size_t nwhy) {
  *out = NULL;
  int k = sy->k, base_at = -1, on64 = !d->lo.autotune, on32 = on64;
  int64_t base[TP_KIR_MAX_SYMS], cap[TP_KIR_MAX_SYMS] = {0}, pts[TP_KIR_MAX_DESIGN][TP_KIR_MAX_SYMS], h = DYN_H;
  for (int j = 0; j < sy->npos; j++) cap[sy->sym[j]] = d->capkey[sy->pos[j]];
  /* the captured sizes on the design's lattice (step 64, else 32): the
   * captured plan's program is a sample (the third with one symbol, the
   * check point with more; not when autotuned: its blockings differ) */
  for (int i = 0; i < k; i++) {
    on64 &= cap[i] % 64 == 0 && cap[i] - 2 * 64 >= 64;
    on32 &= cap[i] % 32 == 0 && cap[i] - 2 * 32 >= 32;
  }
  if (!on64 && on32) h = 32;
  int onlat = on64 || on32;
  for (int i = 0; i < k; i++) base[i] = onlat ? cap[i] - 2 * h : DYN_S0;
  int nd = tp_kir_template_design(k, base, h, pts);
  if (onlat) base_at = k == 1 ? 2 : nd - 1;
  tp_kir_program *progs[TP_KIR_MAX_DESIGN] = {0};
  int n = k == 1 ? 3 : nd, need_more = 0, lowered = 0;
  double t0 = tp_now_ms();
  tp_status s = TP_OK;
  for (int i = 0; i < nd && !s; i++) {
    if (i == n && !need_more) break;
    if (i == base_at) {
      progs[i] = (tp_kir_program *)d->base_prog; /* read only, not freed here */
    } else {
      tp_graph *g = NULL;
      double t1 = tp_now_ms();
      s = graph_at(d, NULL, sy, pts[i], &g);
      double t2 = tp_now_ms();
      if (!s) s = lower_graph(d, g, &progs[i]);
      d->fit_graph_ms += t2 - t1, d->fit_lower_ms += tp_now_ms() - t2;
    }
    lowered = i + 1;
    if (s && s != TP_ERR_OUT_OF_MEMORY) {
      char at[96] = "";
      for (int q = 0, o = 0; q < k; q++)
        o += snprintf(at + o, sizeof at - (size_t)o, "%s%lld", q ? ", " : "", (long long)pts[i][q]);
      snprintf(why, nwhy, "lowering at the sample size%s %s failed: %s", k > 1 ? "s" : "", at, tp_last_error());
      tp_clear_error();
      s = TP_OK;
      break;
    }
    if (s) break;
    if (k == 1 ? i >= 2 : i == nd - 1) {
      n = i + 1;
      s = tp_kir_template_fit(progs, n, k, base, h, &need_more, out, why, nwhy);
      if (s || *out || !need_more) break;
    }
  }
  if (*out) {
    d->nsamples = n;
    memcpy(d->pts, pts, sizeof pts);
  }
  d->fit_ms += tp_now_ms() - t0;
  for (int i = *out ? 1 : 0; i < lowered; i++)
    if (i != base_at) tp_kir_program_free(progs[i]);
  if (!s && !*out && !why[0]) snprintf(why, nwhy, "the samples are not one program");
  return s;
}

/* The symbols of a binding that the current ones do not serve: the dims
 * that changed from the captured ones or are symbols already, grouped by
 * duck sizing over the captured binding and every binding that named
 * symbols (this one last). 0: none named (a dim at 0 or 1: the 0/1 rule),
 * -1: more than the template takes (why). */
static int name_symbols(stax_dyn *d, const int64_t *key, dyn_syms *sy, char *why, size_t nwhy) {
  memset(sy, 0, sizeof *sy);
  for (int q = 0; q < d->nkey; q++) {
    int was = 0;
    for (int j = 0; j < d->sy.npos; j++) was |= d->sy.pos[j] == q;
    if (!was && key[q] == d->capkey[q]) continue;
    if (key[q] < 2) return 0; /* a size 0 or 1 names no symbol */
    if (sy->npos == DYN_MAX_POS) {
      snprintf(why, nwhy, "more than %d dims change (inputs[%d].shape[%d] is one more)", DYN_MAX_POS, d->key_in[q],
               d->key_dim[q]);
      return -1;
    }
    int s = -1;
    for (int j = 0; j < sy->npos && s < 0; j++) { /* the same values in every binding: one symbol */
      int p = sy->pos[j], same = d->capkey[p] == d->capkey[q] && key[p] == key[q];
      for (int h = 0; h < d->nhist && same; h++) same = d->hist[h][p] == d->hist[h][q];
      if (same) s = sy->sym[j];
    }
    if (s < 0) {
      if (sy->k == TP_KIR_MAX_SYMS) {
        snprintf(why, nwhy, "dims change apart into more than %d symbols (inputs[%d].shape[%d] would be s%d): each "
                 "binding is a specialization", TP_KIR_MAX_SYMS, d->key_in[q], d->key_dim[q], TP_KIR_MAX_SYMS);
        return -1;
      }
      s = sy->k++;
    }
    sy->pos[sy->npos] = q, sy->sym[sy->npos++] = s;
  }
  return sy->k > 0;
}

/* A binding the symbols do not serve: the symbols named from it, the
 * template fitted for them (the first time: state 1 or 2; later: the new
 * template replaces the old one, or the old one stays and no fit is tried
 * again). */
static tp_status find_symbols(stax_dyn *d, const int64_t *key) {
  dyn_syms sy;
  char why[320] = "";
  int r = name_symbols(d, key, &sy, why, sizeof why);
  if (r == 0) return TP_OK; /* the 0/1 rule: the symbols wait for sizes >= 2 */
  tp_kir_template *t = NULL;
  if (r > 0) {
    if (d->nhist == TP_KIR_MAX_SYMS + 1) return TP_OK; /* (every fit adds a symbol: not reached) */
    TP_TRY(fit(d, &sy, &t, why, sizeof why));
  }
  if (!t) {
    if (d->state == 0) d->state = 2, snprintf(d->reason, sizeof d->reason, "%s", why);
    else d->no_refit = 1, snprintf(d->refit_reason, sizeof d->refit_reason, "%s", why);
    return TP_OK;
  }
  int64_t *h = tp_alloc(sizeof(int64_t) * (size_t)(d->nkey ? d->nkey : 1));
  if (!h) {
    tp_kir_template_free(t);
    return TP_ERR_OUT_OF_MEMORY;
  }
  memcpy(h, key, sizeof(int64_t) * (size_t)d->nkey);
  d->hist[d->nhist++] = h;
  if (d->tpl) { /* the plans of the old template (and the specializations) go with it */
    flush(d);
    tp_kir_template_free(d->tpl);
    d->refits++;
  }
  d->tpl = t, d->sy = sy, d->state = 1;
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
  e->plan = pl, e->key = k, e->pinned = pinned, e->used = ++d->clock, e->calls = 0, e->gen_pending = 0, e->templ = 0;
  *out = e;
  return TP_OK;
}

/* Whether the template serves this binding: 1 and the symbols' values in
 * sv, or 0 and why. */
static int symbol_values(const stax_dyn *d, const int64_t *key, int64_t *sv, char *why, size_t n) {
  int first[TP_KIR_MAX_SYMS];
  for (int i = 0; i < d->sy.k; i++) first[i] = -1;
  for (int j = 0; j < d->sy.npos; j++) {
    int s = d->sy.sym[j], q = d->sy.pos[j];
    if (first[s] < 0) {
      first[s] = q, sv[s] = key[q];
    } else if (key[q] != sv[s]) {
      if (why)
        snprintf(why, n, "inputs[%d].shape[%d] == inputs[%d].shape[%d] (one symbol s%d) failed", d->key_in[q],
                 d->key_dim[q], d->key_in[first[s]], d->key_dim[first[s]], s);
      return 0;
    }
  }
  for (int q = 0; q < d->nkey; q++) {
    int sym = 0;
    for (int j = 0; j < d->sy.npos; j++) sym |= d->sy.pos[j] == q;
    if (!sym && key[q] != d->capkey[q]) {
      if (why)
        snprintf(why, n, "inputs[%d].shape[%d] == %lld failed (a static dim of the plan)", d->key_in[q], d->key_dim[q],
                 (long long)d->capkey[q]);
      return 0;
    }
  }
  return 1;
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
    int64_t sv[TP_KIR_MAX_SYMS];
    if (d->state == 0 || (d->state == 1 && !d->no_refit && !symbol_values(d, key, sv, NULL, 0)))
      TP_TRY(find_symbols(d, key));
    char why[320] = "";
    tp_kir_program *p = NULL;
    if (d->state == 1 && symbol_values(d, key, sv, why, sizeof why)) {
      double t0 = tp_now_ms();
      TP_TRY(tp_kir_template_instantiate(d->tpl, sv, &p, why, sizeof why));
      if (p) {
        tp_plan *pl = NULL;
        TP_TRY(tp_plan_new_shared(p, d->donor, &pl));
        TP_TRY(store(d, key, pl, !d->donor, &e));
        e->templ = 1;
        e->gen_pending = d->attach != NULL; /* the executor until the binding is hot */
        double inst_ms = tp_now_ms() - t0;
        if (d->attach && d->generated) {
          /* a template plan has generated kernels: their module reads its
           * numbers at run time, so this size most likely has the same
           * bytes, compiled already: attached now, at no compile (else
           * at its DYN_GEN_CALLS-th call) */
          double t1 = tp_now_ms();
          TP_TRY(d->attach(pl, &d->lo, 1));
          if (tp_plan_accel_kernels(pl) > 0) {
            e->gen_pending = 0, d->generated++, d->generated_first++;
            d->gen_ms_last = tp_now_ms() - t1;
          }
        }
        if (!d->donor) d->donor = pl;
        d->instantiations++;
        d->inst_ms_last = inst_ms;
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
      TP_TRY(graph_at(d, in, NULL, NULL, &g));
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
    if (e->gen_pending && ++e->calls >= DYN_GEN_CALLS - 1) { /* a hot binding: its generated kernels (Wasm hosts) */
      double t0 = tp_now_ms();
      e->gen_pending = 0;
      TP_TRY(d->attach(e->plan, &d->lo, e->templ ? 2 : 0));
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
  char reason[700], refit[700], last[700], dims[400] = "", dsyms[200] = "", syms[64] = "", samples[600] = "";
  size_t q = 0, r = 0;
  for (int j = 0; j < d->sy.npos && q < sizeof dims - 40 && r < sizeof dsyms - 10; j++) {
    q += (size_t)snprintf(dims + q, sizeof dims - q, "%s\"inputs[%d].shape[%d]\"", j ? ", " : "",
                          d->key_in[d->sy.pos[j]], d->key_dim[d->sy.pos[j]]);
    r += (size_t)snprintf(dsyms + r, sizeof dsyms - r, "%s\"s%d\"", j ? ", " : "", d->sy.sym[j]);
  }
  for (int i = 0, o = 0; i < d->sy.k; i++) o += snprintf(syms + o, sizeof syms - (size_t)o, "%s\"s%d\"", i ? ", " : "", i);
  /* one symbol: [128, 192, 256]; more: [[128, 128], [192, 128], ...] */
  q = 0;
  for (int i = 0; d->state == 1 && i < d->nsamples && q < sizeof samples - 60; i++) {
    q += (size_t)snprintf(samples + q, sizeof samples - q, "%s%s", i ? ", " : "", d->sy.k > 1 ? "[" : "");
    for (int j = 0; j < d->sy.k; j++)
      q += (size_t)snprintf(samples + q, sizeof samples - q, "%s%lld", j ? ", " : "", (long long)d->pts[i][j]);
    if (d->sy.k > 1) q += (size_t)snprintf(samples + q, sizeof samples - q, "]");
  }
  esc(d->state == 2 ? d->reason : "", reason, sizeof reason);
  esc(d->refit_reason, refit, sizeof refit);
  esc(d->last_spec, last, sizeof last);
  return app(json, n, pos,
             "\"dynamic\": {\"symbols\": [%s], \"dims\": [%s], \"template\": %s, \"dim_symbols\": [%s], "
             "\"no_template_reason\": %s%s%s, \"samples\": [%s], \"dynamic_numbers\": %d, \"quadratic\": %s, "
             "\"bilinear\": %s, \"refits\": %d, \"refit_refused\": %s%s%s, \"lowerings\": %lld, "
             "\"fit_ms\": %.3f, \"fit_graph_ms\": %.3f, \"fit_lower_ms\": %.3f, \"instantiations\": %lld, \"instantiate_ms_last\": %.3f, \"instantiate_ms_max\": %.3f, "
             "\"specializations\": %lld, \"last_specialization\": %s%s%s, \"cache_hits\": %lld, \"graph_runs\": %lld, "
             "\"generated_plans\": %lld, \"generated_at_first_call\": %lld, \"codegen_ms_last\": %.3f}, ",
             syms, dims, d->state == 1 ? "true" : "false", dsyms, d->state == 2 ? "\"" : "",
             d->state == 2 ? reason : "null", d->state == 2 ? "\"" : "", samples, tp_kir_template_dynamic(d->tpl),
             tp_kir_template_quadratic(d->tpl) ? "true" : "false", tp_kir_template_bilinear(d->tpl) ? "true" : "false",
             d->refits, d->refit_reason[0] ? "\"" : "", d->refit_reason[0] ? refit : "null", d->refit_reason[0] ? "\"" : "",
             (long long)d->lowerings, d->fit_ms, d->fit_graph_ms, d->fit_lower_ms,
             (long long)d->instantiations, d->inst_ms_last, d->inst_ms_max, (long long)d->specializations,
             d->last_spec[0] ? "\"" : "", d->last_spec[0] ? last : "null", d->last_spec[0] ? "\"" : "",
             (long long)d->hits, (long long)d->graph_runs, (long long)d->generated,
             (long long)d->generated_first, d->gen_ms_last);
}
