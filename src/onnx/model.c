/* model.c - an ONNX model as users run it: decoded once, imported per
 * specialization.
 *
 * Graph inputs may have symbolic or unknown dims, and inputs may be used as
 * shape parameters (Reshape's shape, Slice's starts, Reduce*'s axes, Pad's
 * pads, ...). The importer needs both as concrete values (it folds shape
 * arithmetic into constants and ops take shapes as attributes), so a model
 * keeps a small cache of specializations:
 *
 *   key   the dtype and shape of every runtime input, and the values of the
 *         inputs that the import needed as constants ("value inputs")
 *   value the imported graph and, when a graph compiler is installed (stax,
 *         see tp_onnx_model_set_compiler), its compiled runner
 *
 * Which inputs are value inputs is learned: an import that fails because a
 * value computed from graph inputs must be a constant reports those inputs
 * (tp_onnx_import's need mask); they are bound to the call's values and the
 * import runs again. Data inputs (Gather indices, Where conditions) are
 * never bound. Every recompile records its reason (the first part of the
 * key that differs from the most recent specialization), and the cache
 * keeps at most `limit` entries (least recently used first out). This is
 * option 2 of ../shared/guides/DYNAMIC.md (specialize per concrete shape),
 * documented in docs/onnx.md. A backend whose runner takes other shapes
 * (tp_backend_run.other_shapes: stax) serves the other sizes of the
 * dynamic dims from the first specialization: the model hands it
 * graph_for (an import at given shapes), from which stax fits one Kernel IR
 * template for every size (docs/kernel-ir.md, "Dynamic extents").
 * A model with NonMaxSuppression, NonZero or Unique nodes on values
 * computed from its inputs is split at those nodes instead of bound
 * (split_plan below: each runs at run time between parts, the pre part
 * compiled once and the later ones per result count). */
#include "import.h"
#include <stdio.h>

#define MODEL_DEFAULT_LIMIT 16

#define SPLIT_MAX_K 8
typedef struct spec {
  tp_desc *descs;         /* one per runtime input */
  tp_tensor **values;     /* one per runtime input: the bound value, or NULL */
  tp_graph *graph;
  tp_backend_run run;     /* the backend's runner; run.run NULL: eager */
  uint64_t last_use;
  int64_t hits;
  tp_desc *fdescs;        /* split model: the fed values' types this part serves (nf of them) */
  int nf, nk;
  int64_t ks[SPLIT_MAX_K]; /* split model: the counts of the stages before this part */
} spec;

/* A model split at its NonMaxSuppression and NonZero nodes whose inputs
 * come from the runtime inputs (docs/onnx.md, "Data-dependent output
 * shapes"): each such node (a stage) runs at run time
 * (tp_onnx_nms_compute, tp_onnx_nonzero_compute, tp_onnx_unique_compute) between parts of the
 * model, in order: the pre part (every node before the first stages) is
 * imported and compiled once per input shapes; a part after stages takes
 * the runtime inputs and the values crossing the cut (the stages' results
 * among them) as placeholders and is a specialization per shape of those
 * (the selected counts K). Stages of one level (two NMS heads on the same
 * features) run between the same two parts; a NonZero feeding an NMS makes
 * three parts (pre / mid / post). */
enum { ST_NMS, ST_NONZERO, ST_UNIQUE, ST_LOOP };
typedef struct split_stage {
  int node;               /* md.nodes index */
  int kind;               /* ST_NMS, ST_NONZERO (one input; [rank, count]), ST_UNIQUE (four outputs) */
  int center, level;      /* center_point_box; runs after part `level` */
  int has_axis, sorted;   /* Unique's attributes */
  int64_t axis;
  int slot[5];            /* input k -> pool index, -1 absent */
  int result[4];          /* pool index of output k, -1 absent */
  struct split_part *part; /* ST_LOOP: the Loop alone, run as a part (its outputs into the pool) */
  int kout;               /* ST_LOOP: the part output whose length is the count (the first scan output) */
} split_stage;

typedef struct split_part {
  uint8_t *skip;          /* per md node: not in this part */
  int nfeed, nout;        /* placeholders after the runtime inputs; outputs (the last part: the graph's) */
  const char **feed_names, **out_names;
  int *feed_pool, *out_pool; /* their pool indices */
  struct spec *cache;     /* the parts before the last (the last: the model's specs) */
  int ncache, capcache;
  int64_t compiles, calls;
} split_part;

typedef struct split_plan {
  int nst, nparts, npool;
  split_stage *st;
  split_part *parts;
  const char **pool;      /* the values that cross a cut, by name */
} split_plan;

struct tp_onnx_model {
  uint8_t *bytes;         /* owned copy: the decoded model points into it */
  size_t len;
  omodel md;
  int nin;                /* runtime inputs: graph inputs without an initializer */
  int *in_index;          /* runtime input k -> md.inputs index */
  uint64_t value_inputs;  /* bits by runtime input: bound to their values */
  int nout;
  spec *specs;
  int nspecs, capspecs, limit;
  uint64_t clock;
  int64_t ncompiles, nevicted;
  char reason[256];       /* why the last specialization was made */
  int64_t dyn_calls;      /* calls at new shapes served by an earlier specialization's runner */
  tp_backend_fn backend; /* NULL: run the graphs eagerly */
  void *backend_ud;
  char backend_name[64];
  tp_backend_opts opts;   /* options for the backend (opts.noptions 0: none) */
  /* trainable parameters (tp_onnx_model_set_trainable): initializers fed as
   * placeholders after the runtime inputs; names point into train_buf */
  int ntrain;
  char **train_names;
  tp_tensor **train_vals;
  int train_all;          /* chosen by default (every float32 initializer the import allows) */
  int split;              /* 0: not planned yet, 1: split at a run-time NMS (sp), -1: not split */
  int split_ok;           /* a split call succeeded (later failures are errors, not a fallback) */
  split_plan sp;
};

static int has_initializer(const omodel *md, const char *name) {
  for (int i = 0; i < md->ninits; i++) {
    tp_pb r = md->inits[i];
    tp_pb_field f;
    int k;
    while ((k = tp_pb_next(&r, &f)) > 0)
      if (f.num == 8 && f.wire == TP_PB_LEN) /* TensorProto.name */
        if (f.len == strlen(name) && !memcmp(f.data, name, f.len)) return 1;
  }
  return 0;
}

tp_status tp_onnx_model_load(const void *bytes, size_t len, tp_onnx_model **out) {
  if (!out || (len && !bytes)) return tp_fail(TP_ERR_INVALID_ARG, "onnx: model load: NULL argument");
  *out = NULL;
  tp_onnx_model *m = tp_alloc(sizeof *m);
  if (!m) return TP_ERR_OUT_OF_MEMORY;
  memset(m, 0, sizeof *m);
  m->limit = MODEL_DEFAULT_LIMIT;
  tp_status s = TP_OK;
  if (!(m->bytes = tp_alloc(len ? len : 1))) s = TP_ERR_OUT_OF_MEMORY;
  if (!s) {
    if (len) memcpy(m->bytes, bytes, len);
    m->len = len;
    s = tp_onnx_decode(&m->md, m->bytes, len);
  }
  if (!s && m->md.ninputs && !(m->in_index = tp_alloc(sizeof(int) * (size_t)m->md.ninputs)))
    s = TP_ERR_OUT_OF_MEMORY;
  for (int i = 0; !s && i < m->md.ninputs; i++) {
    const vinfo *v = &m->md.inputs[i];
    if (has_initializer(&m->md, v->name)) continue; /* a default the model fixes */
    tp_dtype dt;
    if (!v->is_tensor)
      s = tp_fail(TP_ERR_UNSUPPORTED, "onnx: input '%s' is not a tensor (sequences, maps and optionals are not supported)",
                  v->name);
    else if (!tp_onnx_to_dtype(v->elem, &dt))
      s = tp_fail(TP_ERR_UNSUPPORTED, "onnx: input '%s' has dtype %s, which is not supported (" TP_ONNX_DTYPES ")",
                  v->name, tp_onnx_dtype_name(v->elem));
    else if (v->too_many_dims)
      s = tp_fail(TP_ERR_UNSUPPORTED, "onnx: input '%s' has more than %d dims", v->name, TP_MAX_DIMS);
    if (s) break;
    for (int k = 0; k < m->nin; k++)
      if (!strcmp(m->md.inputs[m->in_index[k]].name, v->name))
        s = tp_fail(TP_ERR_PARSE, "onnx: graph input '%s' is declared twice", v->name);
    m->in_index[m->nin++] = i;
  }
  m->nout = m->md.noutputs;
  if (!s && m->nin > TP_ONNX_MAX_INPUTS)
    s = tp_fail(TP_ERR_UNSUPPORTED, "onnx: %d graph inputs (at most %d)", m->nin, TP_ONNX_MAX_INPUTS);
  if (!s) s = tp_onnx_check_ops(&m->md);
  if (s == TP_ERR_OUT_OF_MEMORY && strncmp(tp_last_error(), "onnx", 4)) tp_fail(s, "onnx: out of memory");
  if (s) {
    tp_onnx_model_free(m);
    return s;
  }
  *out = m;
  return TP_OK;
}

/* Frees what a specialization holds (its arrays come from tp_calloc_sized). */
static void spec_clear(const tp_onnx_model *m, spec *e) {
  if (e->run.free) e->run.free(e->run.ud);
  tp_graph_free(e->graph);
  for (int k = 0; e->values && k < m->nin; k++) tp_tensor_release(e->values[k]);
  if (e->values) tp_free_sized(e->values, (size_t)(m->nin + 1) * sizeof(tp_tensor *));
  if (e->descs) tp_free_sized(e->descs, (size_t)(m->md.ninputs + 1) * sizeof(tp_desc));
  tp_free(e->fdescs);
  memset(e, 0, sizeof *e);
}

static void train_clear(tp_onnx_model *m) {
  for (int k = 0; k < m->ntrain; k++) {
    tp_free(m->train_names[k]);
    tp_tensor_release(m->train_vals[k]);
  }
  tp_free(m->train_names);
  tp_free(m->train_vals);
  m->train_names = NULL, m->train_vals = NULL, m->ntrain = 0, m->train_all = 0;
}

/* Drops the split parts' compiled specializations (not the plan). */
static void split_clear_caches(tp_onnx_model *m) {
  split_plan *p = &m->sp;
  for (int q = 0; p->parts && q < p->nparts + p->nst; q++) {
    for (int i = 0; i < p->parts[q].ncache; i++) spec_clear(m, &p->parts[q].cache[i]);
    p->parts[q].ncache = 0;
  }
}

static void split_free(tp_onnx_model *m) {
  split_plan *p = &m->sp;
  split_clear_caches(m);
  for (int q = 0; p->parts && q < p->nparts + p->nst; q++) {
    split_part *x = &p->parts[q];
    tp_free(x->cache);
    tp_free(x->skip);
    tp_free(x->feed_names);
    tp_free(x->out_names);
    tp_free(x->feed_pool);
    tp_free(x->out_pool);
  }
  tp_free(p->parts);
  tp_free(p->st);
  tp_free(p->pool);
  memset(p, 0, sizeof *p);
}

void tp_onnx_model_free(tp_onnx_model *m) {
  if (!m) return;
  split_free(m);
  train_clear(m);
  for (int i = 0; i < m->nspecs; i++) spec_clear(m, &m->specs[i]);
  tp_free(m->specs);
  tp_free(m->in_index);
  tp_onnx_decoded_free(&m->md);
  tp_free(m->bytes);
  tp_free(m);
}

void tp_onnx_model_set_backend(tp_onnx_model *m, const char *name, tp_backend_fn fn, void *ud) {
  if (!m) return;
  for (int i = 0; i < m->nspecs; i++) spec_clear(m, &m->specs[i]);
  m->nspecs = 0;
  split_clear_caches(m);
  m->backend = fn;
  m->backend_ud = ud;
  snprintf(m->backend_name, sizeof m->backend_name, "%s", fn ? (name ? name : "a backend") : "");
}

tp_status tp_onnx_model_set_backend_option(tp_onnx_model *m, const char *key, tp_value value) {
  if (!m || !key) return tp_fail(TP_ERR_INVALID_ARG, "onnx model: set option: NULL argument");
  int k = 0;
  while (k < m->opts.noptions && strcmp(m->opts.option_keys[k], key)) k++;
  if (k == m->opts.noptions) {
    if (k == TP_ARRAY_LEN(m->opts.option_keys))
      return tp_fail(TP_ERR_INVALID_ARG, "onnx model: at most %d backend options", k);
    if (strlen(key) >= sizeof m->opts.option_keys[0])
      return tp_fail(TP_ERR_INVALID_ARG, "onnx model: option key '%.60s...' is too long", key);
    snprintf(m->opts.option_keys[k], sizeof m->opts.option_keys[k], "%s", key);
    m->opts.noptions++;
  }
  m->opts.option_values[k] = value;
  m->opts.has_options = 1;
  for (int i = 0; i < m->nspecs; i++) spec_clear(m, &m->specs[i]);
  m->nspecs = 0;
  split_clear_caches(m);
  return TP_OK;
}

/* Drops least recently used specializations until at most `keep` remain. */
static void evict_to(tp_onnx_model *m, int keep) {
  while (m->nspecs > keep && m->nspecs > 0) {
    int lru = 0;
    for (int i = 1; i < m->nspecs; i++)
      if (m->specs[i].last_use < m->specs[lru].last_use) lru = i;
    spec_clear(m, &m->specs[lru]);
    m->specs[lru] = m->specs[--m->nspecs];
    m->nevicted++;
  }
}

tp_status tp_onnx_model_set_limit(tp_onnx_model *m, int limit) {
  if (!m) return tp_fail(TP_ERR_INVALID_ARG, "onnx model: NULL model");
  if (limit < 1) return tp_fail(TP_ERR_INVALID_ARG, "onnx model: the specialization limit must be at least 1, got %d", limit);
  m->limit = limit;
  evict_to(m, limit);
  return TP_OK;
}

int tp_onnx_model_num_inputs(const tp_onnx_model *m) { return m ? m->nin : 0; }
int tp_onnx_model_num_outputs(const tp_onnx_model *m) { return m ? m->nout : 0; }

const char *tp_onnx_model_input_name(const tp_onnx_model *m, int i) {
  return m && i >= 0 && i < m->nin ? m->md.inputs[m->in_index[i]].name : NULL;
}

const char *tp_onnx_model_output_name(const tp_onnx_model *m, int i) {
  return m && i >= 0 && i < m->nout ? m->md.outputs[i].name : NULL;
}

int tp_onnx_model_input_type(const tp_onnx_model *m, int i, tp_dtype *dtype, int64_t *dims,
                             const char **dim_names) {
  if (!m || i < 0 || i >= m->nin) return -2;
  const vinfo *v = &m->md.inputs[m->in_index[i]];
  tp_dtype d = TP_F32;
  int known = v->is_tensor && tp_onnx_to_dtype(v->elem, &d);
  if (dtype) *dtype = known ? d : (tp_dtype)-1;
  if (!v->has_shape || v->too_many_dims) return -1;
  for (int k = 0; k < v->ndim; k++) {
    if (dims) dims[k] = v->dims[k];
    if (dim_names) dim_names[k] = v->dim_param[k];
  }
  return v->ndim;
}

int tp_onnx_model_num_specializations(const tp_onnx_model *m) { return m ? m->nspecs : 0; }

const tp_graph *tp_onnx_model_graph(const tp_onnx_model *m) {
  const spec *best = NULL;
  for (int i = 0; m && i < m->nspecs; i++)
    if (!best || m->specs[i].last_use > best->last_use) best = &m->specs[i];
  return best ? best->graph : NULL;
}

/* Does the bound value of input k in e equal t (same dtype, shape, bytes)? */
static int same_value(const tp_tensor *a, tp_tensor *b) {
  if (a->dtype != b->dtype || a->ndim != b->ndim) return 0;
  if (memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim)) return 0;
  int64_t n = tp_shape_numel(a->ndim, a->shape);
  for (int64_t i = 0; i < n; i++)
    if (tp_tensor_get_f64(a, i) != tp_tensor_get_f64(b, i)) return 0;
  if (a->dtype == TP_I64) { /* exact beyond 2^53 (a is contiguous, b any layout) */
    for (int64_t i = 0; i < n; i++) {
      int64_t x = ((const int64_t *)tp_tensor_ptr(a))[i], y;
      tp_tensor *c = NULL;
      (void)c;
      y = (int64_t)tp_tensor_get_f64(b, i);
      if (x != y && (double)x == (double)y) { /* rounding hid a difference: compare exactly */
        int64_t *tmp = tp_alloc(sizeof(int64_t) * (size_t)n);
        if (!tmp) return 0;
        tp_tensor_gather(b, tmp);
        int eq = !memcmp(tmp, tp_tensor_ptr(a), sizeof(int64_t) * (size_t)n);
        tp_free(tmp);
        return eq;
      }
    }
  }
  return 1;
}

/* -1 when e matches the call; else writes why not into why. */
static int spec_match(const tp_onnx_model *m, const spec *e, tp_tensor *const *in, char *why, size_t wn) {
  char b0[96], b1[96];
  for (int k = 0; k < m->nin; k++) {
    const char *name = m->md.inputs[m->in_index[k]].name;
    const tp_desc *d = &e->descs[k];
    if (d->dtype != in[k]->dtype || d->ndim != in[k]->ndim ||
        memcmp(d->shape, in[k]->shape, sizeof(int64_t) * (size_t)d->ndim)) {
      if (why)
        snprintf(why, wn, "input '%s': %s%s, was %s%s", name, tp_dtype_short(in[k]->dtype),
                 tp_shape_str(in[k]->ndim, in[k]->shape, b0, sizeof b0), tp_dtype_short(d->dtype),
                 tp_shape_str(d->ndim, d->shape, b1, sizeof b1));
      return k;
    }
    if (e->values[k] && !same_value(e->values[k], in[k])) {
      if (why) snprintf(why, wn, "the value of input '%s' changed (it sets a shape or a parameter)", name);
      return k;
    }
  }
  return -1;
}

/* Checks each input against the model's declared types. */
static tp_status check_inputs(const tp_onnx_model *m, int nin, tp_tensor *const *in) {
  if (nin != m->nin)
    return tp_fail(TP_ERR_INVALID_ARG, "onnx model: expected %d input%s, got %d", m->nin, m->nin == 1 ? "" : "s", nin);
  for (int k = 0; k < nin; k++) {
    const vinfo *v = &m->md.inputs[m->in_index[k]];
    if (!in || !in[k]) return tp_fail(TP_ERR_INVALID_ARG, "onnx model: input %d ('%s') is NULL", k, v->name);
    tp_dtype want;
    if (v->is_tensor && tp_onnx_to_dtype(v->elem, &want) && in[k]->dtype != want)
      return tp_fail(TP_ERR_INVALID_ARG, "onnx model: input '%s' must be %s, got %s", v->name, tp_dtype_name(want),
                     tp_dtype_name(in[k]->dtype));
    if (!v->has_shape || v->too_many_dims) continue;
    char b[96];
    if (in[k]->ndim != v->ndim)
      return tp_fail(TP_ERR_INVALID_ARG, "onnx model: input '%s' must have rank %d, got shape %s", v->name, v->ndim,
                     tp_shape_str(in[k]->ndim, in[k]->shape, b, sizeof b));
    for (int d = 0; d < v->ndim; d++) {
      if (v->dims[d] >= 0 && in[k]->shape[d] != v->dims[d])
        return tp_fail(TP_ERR_INVALID_ARG, "onnx model: input '%s' dim %d must be %lld, got shape %s", v->name, d,
                       (long long)v->dims[d], tp_shape_str(in[k]->ndim, in[k]->shape, b, sizeof b));
      /* one symbol, one value: dims that share a dim_param must agree */
      for (int j = 0; v->dim_param[d] && strcmp(v->dim_param[d], "?") && j <= k; j++) {
        const vinfo *u = &m->md.inputs[m->in_index[j]];
        if (!u->has_shape || u->too_many_dims || in[j]->ndim != u->ndim) continue;
        for (int e = 0; e < (j == k ? d : u->ndim); e++)
          if (u->dim_param[e] && !strcmp(u->dim_param[e], v->dim_param[d]) && in[j]->shape[e] != in[k]->shape[d])
            return tp_fail(TP_ERR_INVALID_ARG,
                           "onnx model: dim '%s' is %lld in input '%s' (dim %d) but %lld in input '%s' (dim %d)",
                           v->dim_param[d], (long long)in[j]->shape[e], u->name, e, (long long)in[k]->shape[d],
                           v->name, d);
      }
    }
  }
  return TP_OK;
}

/* tp_backend_opts.graph_for: the graph imported for inputs shaped like
 * ex[] (the runtime inputs; a model whose inputs set shapes by their
 * values has no such graph: each value is its own specialization). */
static tp_status model_graph_for(void *ud, int nin, tp_tensor *const *ex, tp_graph **out) {
  tp_onnx_model *m = ud;
  *out = NULL;
  if (nin != m->nin) return tp_fail(TP_ERR_INVALID_ARG, "onnx model: %d inputs for a graph, the model has %d", nin, m->nin);
  for (int k = 0; k < m->nin; k++)
    if (m->value_inputs >> k & 1)
      return tp_fail(TP_ERR_UNSUPPORTED, "onnx model: input '%s' sets a shape by its value",
                     m->md.inputs[m->in_index[k]].name);
  const tp_desc **dp = tp_calloc_sized((size_t)m->md.ninputs + 1, sizeof(*dp));
  tp_desc *d = tp_calloc_sized((size_t)m->nin + 1, sizeof(tp_desc));
  tp_status s = dp && d ? TP_OK : TP_ERR_OUT_OF_MEMORY;
  for (int k = 0; k < m->nin && !s; k++) {
    tp_desc_of(ex[k], &d[k]);
    d[k].weak = 0;
    dp[m->in_index[k]] = &d[k];
  }
  uint64_t need = 0;
  if (!s) /* for the backend, as specialize_ex (float16 kept for it), with the trainable parameters */
    s = tp_onnx_import_train(&m->md, 0, NULL, NULL, dp, 1, m->ntrain, (const char *const *)m->train_names, out,
                             &need, NULL);
  tp_free_sized(dp, (size_t)(m->md.ninputs + 1) * sizeof(*dp));
  tp_free_sized(d, (size_t)(m->nin + 1) * sizeof(tp_desc));
  return s;
}

/* Whether e's runner serves the call at its shapes: it takes other shapes,
 * and the call differs from e only in the sizes of inputs that are not
 * bound to their values. */
static int serves_other_shapes(const tp_onnx_model *m, const spec *e, tp_tensor *const *in) {
  if (!e->run.run || !e->run.other_shapes) return 0;
  for (int k = 0; k < m->nin; k++)
    if (e->values[k] || (m->value_inputs >> k & 1) || e->descs[k].dtype != in[k]->dtype ||
        e->descs[k].ndim != in[k]->ndim)
      return 0;
  return 1;
}

/* Imports (and compiles) a specialization for the call into *e. probe: no
 * retry with bound values (tp_onnx_model_prepare: the inputs are stand-ins
 * whose values mean nothing); a failure that needs values then only marks
 * the value inputs. */
static tp_status specialize_ex(tp_onnx_model *m, tp_tensor *const *in, int probe, spec *e) {
  tp_status s = TP_OK;
  const tp_desc **dp = NULL;
  const char **names = NULL;
  tp_tensor **vals = NULL;
  uint8_t *train_needed = NULL;
  memset(e, 0, sizeof *e);
  if ((m->ntrain && !(train_needed = tp_calloc_sized((size_t)m->ntrain, 1))) ||
      !(e->descs = tp_calloc_sized((size_t)m->md.ninputs + 1, sizeof(tp_desc))) ||
      !(e->values = tp_calloc_sized((size_t)m->nin + 1, sizeof(tp_tensor *))) ||
      !(dp = tp_calloc_sized((size_t)m->md.ninputs + 1, sizeof(*dp))) ||
      !(names = tp_calloc_sized((size_t)m->nin + 1, sizeof(*names))) ||
      !(vals = tp_calloc_sized((size_t)m->nin + 1, sizeof(*vals)))) {
    s = TP_ERR_OUT_OF_MEMORY;
    goto done;
  }
  for (int k = 0; k < m->nin; k++) {
    tp_desc_of(in[k], &e->descs[k]);
    e->descs[k].weak = 0;
    dp[m->in_index[k]] = &e->descs[k];
  }
  /* at most one retry per input: each retry binds at least one more */
  for (int attempt = 0; attempt <= m->nin; attempt++) {
    int nb = 0;
    for (int k = 0; k < m->nin; k++) {
      if (!(m->value_inputs >> k & 1)) continue;
      if (!e->values[k] && (s = tp_contiguous(in[k], &e->values[k]))) goto done;
      names[nb] = m->md.inputs[m->in_index[k]].name;
      vals[nb++] = e->values[k];
    }
    uint64_t need = 0;
    /* a backend (a compiler) gets float16 MatMul weights as float16 (issue 17) */
    s = tp_onnx_import_train(&m->md, nb, names, vals, dp, m->backend != NULL, m->ntrain,
                             (const char *const *)m->train_names, &e->graph, &need, train_needed);
    if (s == TP_ERR_UNSUPPORTED && train_needed) /* a parameter's value was needed as a constant */
      for (int k = 0; k < m->ntrain; k++)
        if (train_needed[k]) {
          char why[256];
          snprintf(why, sizeof why, "%s", tp_last_error());
          s = tp_fail(TP_ERR_UNSUPPORTED,
                      "onnx model: initializer '%s' sets a shape or parameter of a node (the import needs its "
                      "value: %s), so it cannot be trained; leave it out of the trainable list",
                      m->train_names[k], why);
          goto done;
        }
    if (s != TP_ERR_UNSUPPORTED || !need) break;
    uint64_t more = 0; /* runtime input bits not bound yet */
    for (int k = 0; k < m->nin; k++)
      if ((need >> k & 1) && !(m->value_inputs >> k & 1)) more |= (uint64_t)1 << k;
    if (!more) break;
    m->value_inputs |= more;
    if (probe) break;
    tp_clear_error(); /* the failure is handled: bind and import again */
  }
  if (!s && m->backend) { /* the call's inputs (and the parameters) are the backend's example inputs */
    tp_tensor **args = tp_calloc_sized((size_t)(m->nin + m->ntrain) + 1, sizeof(tp_tensor *));
    int na = 0;
    if (!args) s = TP_ERR_OUT_OF_MEMORY;
    for (int k = 0; args && k < m->nin; k++)
      if (!e->values[k]) args[na++] = in[k];
    for (int k = 0; args && k < m->ntrain; k++) args[na++] = m->train_vals[k];
    tp_backend_opts o = m->opts; /* the options when set, and graph_for for other sizes */
    o.graph_for = m->value_inputs || m->ntrain ? NULL : model_graph_for;
    o.graph_for_ud = m;
    if (!s) s = m->backend(m->backend_ud, e->graph, na, args, &o, &e->run);
    if (!s && !e->run.run) s = tp_fail(TP_ERR_INTERNAL, "the backend returned no runner");
    if (s) tp_fail_context(s, "onnx model: backend '%s'", m->backend_name);
    if (args) tp_free_sized(args, (size_t)(m->nin + m->ntrain + 1) * sizeof(tp_tensor *));
  }
done:
  if (train_needed) tp_free_sized(train_needed, (size_t)m->ntrain);
  tp_free_sized(dp, (size_t)(m->md.ninputs + 1) * sizeof(*dp));
  tp_free_sized(names, (size_t)(m->nin + 1) * sizeof(*names));
  tp_free_sized(vals, (size_t)(m->nin + 1) * sizeof(*vals));
  if (s) spec_clear(m, e);
  return s;
}

static tp_status split_decide(tp_onnx_model *m);

static tp_status specialize(tp_onnx_model *m, tp_tensor *const *in, spec *e) {
  return specialize_ex(m, in, 0, e);
}

/* Stores the finished specialization e (taken over) as the newest. */
static tp_status spec_store(tp_onnx_model *m, spec *e, const char *why, spec **out) {
  evict_to(m, m->limit - 1);
  tp_status s = TP_ARRAY_RESERVE(m->specs, m->capspecs, m->nspecs + 1);
  if (s) {
    spec_clear(m, e);
    return s;
  }
  m->specs[m->nspecs] = *e;
  *out = &m->specs[m->nspecs++];
  m->ncompiles++;
  snprintf(m->reason, sizeof m->reason, "%s", why);
  tp_log(TP_LOG_RECOMPILES, "onnx model: specialization %lld: %s", (long long)m->ncompiles, why);
  return TP_OK;
}

tp_status tp_onnx_model_prepare(tp_onnx_model *m) {
  if (!m) return tp_fail(TP_ERR_INVALID_ARG, "onnx model: NULL model");
  if (m->nspecs || m->value_inputs) return TP_OK;
  if (!m->split) TP_TRY(split_decide(m));
  if (m->split == 1) return TP_OK; /* the first run's selection decides the post part */
  for (int k = 0; k < m->nin; k++) {
    const vinfo *v = &m->md.inputs[m->in_index[k]];
    if (!v->has_shape || v->sym) return TP_OK; /* the first run's shapes decide */
  }
  /* example inputs of the declared types (zeros: only their shapes are read,
   * unless an input turns out to set a shape, which stops here) */
  tp_tensor *ex[TP_ONNX_MAX_INPUTS] = {0};
  tp_status s = TP_OK;
  for (int k = 0; k < m->nin && !s; k++) {
    const vinfo *v = &m->md.inputs[m->in_index[k]];
    tp_dtype dt;
    tp_onnx_to_dtype(v->elem, &dt);
    s = tp_tensor_empty(dt, v->ndim, v->dims, &ex[k]);
    if (!s) memset(tp_tensor_ptr(ex[k]), 0, (size_t)tp_shape_numel(v->ndim, v->dims) * tp_dtype_size(dt));
  }
  spec e;
  memset(&e, 0, sizeof e);
  if (!s) {
    s = specialize_ex(m, ex, 1, &e);
    if (s == TP_ERR_UNSUPPORTED && m->value_inputs) { /* needs the values of a run */
      tp_clear_error();
      s = TP_OK;
    } else if (!s) {
      spec *stored;
      s = spec_store(m, &e, "prepared for the declared shapes", &stored);
      if (!s) stored->last_use = ++m->clock;
    }
  }
  for (int k = 0; k < m->nin; k++) tp_tensor_release(ex[k]);
  return s;
}

uint64_t tp_onnx_model_value_inputs(const tp_onnx_model *m) { return m ? m->value_inputs : 0; }

/* ---- split at run-time NonMaxSuppression / NonZero nodes (split_plan above) ---- */

/* The node writing value `name`, -1 for none (a graph input or initializer). */
static int producer(const omodel *md, const char *name) {
  if (!*name) return -1;
  for (int i = 0; i < md->nnodes; i++)
    for (int k = 0; k < md->nodes[i].nout; k++)
      if (!strcmp(md->nodes[i].out[k], name)) return i;
  return -1;
}

static int runtime_input(const tp_onnx_model *m, const char *name) {
  for (int k = 0; k < m->nin; k++)
    if (!strcmp(m->md.inputs[m->in_index[k]].name, name)) return 1;
  return 0;
}

/* The index of name in list (added when missing; *n grows). */
static int name_index(const char **list, int *n, const char *name) {
  for (int i = 0; i < *n; i++)
    if (!strcmp(list[i], name)) return i;
  list[*n] = name;
  return (*n)++;
}

static void *zalloc(size_t n) { /* tp_alloc'ed (tp_free), zeroed */
  void *p = tp_alloc(n ? n : 1);
  if (p) memset(p, 0, n ? n : 1);
  return p;
}

static int is_split_op(const onode *n) {
  if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx")) return 0;
  if (!strcmp(n->op, "Unique")) return n->nin >= 1 && n->nout >= 1 && n->nout <= 4;
  if (n->nout != 1) return 0;
  if (!strcmp(n->op, "NonMaxSuppression")) return n->nin >= 2;
  return !strcmp(n->op, "NonZero") && n->nin >= 1;
}

/* Value `name` read in part p (a node of it, or the graph outputs of the
 * last part) or, for_stage, by a stage that runs after part p: the pool
 * index it comes through (-1: computed inside part p). */
typedef struct split_build {
  const omodel *md;
  split_plan *p;
  const uint8_t *dyn, *stage;
  const int *level;
  int cap; /* names per list */
} split_build;

static int split_need(split_build *b, const char *name, int p, int for_stage) {
  split_plan *sp = b->p;
  int q = producer(b->md, name), pi = -1;
  if (q >= 0 && b->dyn[q] && b->stage[q]) {
    pi = name_index(sp->pool, &sp->npool, name); /* a stage's result */
  } else if (q >= 0 && b->dyn[q]) {
    int l = b->level[q];
    if (l == p && !for_stage) return -1; /* inside part p */
    pi = name_index(sp->pool, &sp->npool, name);
    split_part *src = &sp->parts[l];
    int before = src->nout, k = name_index(src->out_names, &src->nout, name);
    if (src->nout > before) src->out_pool[k] = pi;
  } else if (for_stage) { /* an input, an initializer or a constant: passed out of part p */
    pi = name_index(sp->pool, &sp->npool, name);
    split_part *src = &sp->parts[p];
    int before = src->nout, k = name_index(src->out_names, &src->nout, name);
    if (src->nout > before) src->out_pool[k] = pi;
    return pi;
  } else {
    return -1; /* read in every part (an input, an initializer, a constant node) */
  }
  if (!for_stage) {
    split_part *dst = &sp->parts[p];
    int before = dst->nfeed, k = name_index(dst->feed_names, &dst->nfeed, name);
    if (dst->nfeed > before) dst->feed_pool[k] = pi;
  }
  return pi;
}

/* The outer values (main-graph names: a node output or a runtime input,
 * as the outer graph's own strings) that subgraph sub and the graphs
 * nested in it read, added to out (names are unique across enclosing
 * graphs, check.c, so an inner name never shadows an outer one). */
static tp_status sub_reads(tp_onnx_model *m, omodel *sub, const char **out, int *n, int cap, int depth) {
  if (depth > 8) return tp_fail(TP_ERR_UNSUPPORTED, "onnx model: subgraphs nested deeper than 8");
  tp_status s = TP_OK;
  for (int i = 0; !s && i <= sub->nnodes; i++) {
    int nr = i < sub->nnodes ? sub->nodes[i].nin : sub->noutputs;
    for (int k = 0; k < nr && *n < cap; k++) {
      const char *nm = i < sub->nnodes ? sub->nodes[i].in[k] : sub->outputs[k].name;
      int q = producer(&m->md, nm);
      const char *outer = NULL;
      if (q >= 0) {
        for (int o = 0; o < m->md.nodes[q].nout && !outer; o++)
          if (!strcmp(m->md.nodes[q].out[o], nm)) outer = m->md.nodes[q].out[o];
      } else {
        for (int r = 0; r < m->nin && !outer; r++)
          if (!strcmp(m->md.inputs[m->in_index[r]].name, nm)) outer = m->md.inputs[m->in_index[r]].name;
      }
      if (outer) name_index(out, n, outer);
    }
    for (int a = 0; i < sub->nnodes && !s && a < sub->nodes[i].nattrs; a++) {
      if (!sub->nodes[i].attrs[a].has_g) continue;
      omodel inner;
      s = tp_onnx_decode_subgraph(&m->md, &sub->nodes[i].attrs[a].g, &inner);
      if (!s) s = sub_reads(m, &inner, out, n, cap, depth + 1);
      tp_onnx_decoded_free(&inner);
    }
  }
  return s;
}

/* The values node i reads: its inputs, then the outer values its
 * subgraphs read (reads[i] is n->in for a node without subgraphs). */
typedef struct node_reads { const char **v; int n, owned; } node_reads;

static tp_status reads_of(tp_onnx_model *m, int i, node_reads *r) {
  onode *n = &m->md.nodes[i];
  int g = 0;
  for (int a = 0; a < n->nattrs; a++) g |= n->attrs[a].has_g;
  r->v = (const char **)n->in, r->n = n->nin, r->owned = 0;
  if (!g) return TP_OK;
  int cap = n->nin + 256;
  const char **v = zalloc(sizeof(char *) * (size_t)cap);
  if (!v) return TP_ERR_OUT_OF_MEMORY;
  int k = 0;
  for (int q = 0; q < n->nin; q++) v[k++] = n->in[q]; /* (duplicates are harmless) */
  tp_status s = TP_OK;
  for (int a = 0; !s && a < n->nattrs; a++) {
    if (!n->attrs[a].has_g) continue;
    omodel sub;
    s = tp_onnx_decode_subgraph(&m->md, &n->attrs[a].g, &sub);
    if (!s) s = sub_reads(m, &sub, v, &k, cap, 0);
    tp_onnx_decoded_free(&sub);
  }
  if (s) {
    tp_free(v);
    return s;
  }
  r->v = v, r->n = k, r->owned = 1;
  return TP_OK;
}

/* A Loop whose scan outputs have a run-time length (it may end on data or
 * on a count fed at run time: not a constant M with a body that passes its
 * condition through) and are read by another node: a stage (its own part,
 * the loop run there; the nodes after it specialize on the stacks' length). */
static int loop_stage(tp_onnx_model *m, int i, const uint8_t *dyn, const node_reads *rd) {
  const onode *n = &m->md.nodes[i];
  if (strcmp(n->op, "Loop") || (n->domain && *n->domain && strcmp(n->domain, "ai.onnx"))) return 0;
  int N = n->nin > 2 ? n->nin - 2 : 0, scan_read = 0;
  for (int k = N; k < n->nout && !scan_read; k++) /* a scan output read by a node */
    for (int j = i + 1; *n->out[k] && j < m->md.nnodes && !scan_read; j++)
      for (int q = 0; q < rd[j].n && !scan_read; q++) scan_read = !strcmp(rd[j].v[q], n->out[k]);
  if (!scan_read) return 0;
  const attr *b = NULL;
  for (int a = 0; a < n->nattrs; a++)
    if (!strcmp(n->attrs[a].name, "body") && n->attrs[a].has_g) b = &n->attrs[a];
  if (!b) return 0;
  omodel sub;
  if (tp_onnx_decode_subgraph(&m->md, &b->g, &sub)) {
    tp_clear_error();
    return 0;
  }
  int passes = tp_onnx_cond_passes(&sub);
  tp_onnx_decoded_free(&sub);
  int mq = n->nin > 0 && *n->in[0] ? producer(&m->md, n->in[0]) : -1;
  int cq = n->nin > 1 && *n->in[1] ? producer(&m->md, n->in[1]) : -1;
  int m_const = n->nin > 0 && *n->in[0] && !runtime_input(m, n->in[0]) && (mq < 0 || !dyn[mq]);
  int c_const = n->nin < 2 || !*n->in[1] || (!runtime_input(m, n->in[1]) && (cq < 0 || !dyn[cq]));
  return !(m_const && c_const && passes);
}

/* Decides whether m is split (m->split 1 or -1): it needs a
 * NonMaxSuppression, NonZero or Unique in the main graph that reads the
 * runtime inputs, or a Loop whose scan outputs have a run-time length and
 * feed other nodes, and no trainable parameters. Each such node (a stage)
 * gets a level: the number of stages on its longest path from the inputs
 * (subgraphs' reads of outer values count as inputs of their node); part
 * p holds the other nodes of level p (and the constant ones), stages of
 * level p run after part p. */
static tp_status split_decide(tp_onnx_model *m) {
  const omodel *md = &m->md;
  split_plan *p = &m->sp;
  m->split = -1;
  int N = md->nnodes;
  if (m->ntrain || !N) return TP_OK;
  uint8_t *dyn = tp_calloc_sized((size_t)N, 1), *stage = tp_calloc_sized((size_t)N, 1);
  int *level = tp_calloc_sized((size_t)N, sizeof(int));
  node_reads *rd = tp_calloc_sized((size_t)N, sizeof(node_reads));
  tp_status s = dyn && stage && level && rd ? TP_OK : TP_ERR_OUT_OF_MEMORY;
  int nst = 0, maxl = -1, cap = 5 + md->noutputs;
  for (int i = 0; !s && i < N; i++) s = reads_of(m, i, &rd[i]);
  for (int i = 0; !s && i < N; i++) cap += rd[i].n + md->nodes[i].nout;
  for (int i = 0; !s && i < N; i++) { /* nodes are in topological order (order.c) */
    const onode *n = &md->nodes[i];
    for (int k = 0; k < rd[i].n; k++) {
      int q = producer(md, rd[i].v[k]);
      if ((q < 0 && *rd[i].v[k] && runtime_input(m, rd[i].v[k])) || (q >= 0 && q < i && dyn[q])) dyn[i] = 1;
      if (q >= 0 && q < i && dyn[q] && level[q] + stage[q] > level[i]) level[i] = level[q] + stage[q];
    }
    if (dyn[i] && (is_split_op(n) || loop_stage(m, i, dyn, rd))) {
      stage[i] = 1, nst++;
      if (level[i] > maxl) maxl = level[i];
    }
  }
  int np = maxl + 2;
  if (!s && nst) {
    p->nst = nst, p->nparts = np;
    if (!(p->st = zalloc((size_t)nst * sizeof(split_stage))) ||
        !(p->parts = zalloc((size_t)(np + nst) * sizeof(split_part))) || /* then one per stage (a Loop's) */
        !(p->pool = zalloc((size_t)cap * sizeof(char *))))
      s = TP_ERR_OUT_OF_MEMORY;
    for (int q = 0; !s && q < np + nst; q++) {
      split_part *x = &p->parts[q];
      if (!(x->skip = zalloc((size_t)N)) || !(x->feed_names = zalloc((size_t)cap * sizeof(char *))) ||
          !(x->feed_pool = zalloc((size_t)cap * sizeof(int))) ||
          !(x->out_names = zalloc((size_t)cap * sizeof(char *))) ||
          !(x->out_pool = zalloc((size_t)cap * sizeof(int))))
        s = TP_ERR_OUT_OF_MEMORY;
      for (int i = 0; !s && q < np && i < N; i++) x->skip[i] = dyn[i] && (stage[i] || level[i] != q);
    }
  }
  if (!s && nst) {
    split_build b = {md, p, dyn, stage, level, cap};
    for (int q = 0; q < np; q++)
      for (int i = 0; i < N; i++) {
        if (p->parts[q].skip[i] || !dyn[i]) continue;
        for (int k = 0; k < rd[i].n; k++) split_need(&b, rd[i].v[k], q, 0);
      }
    int j = 0;
    for (int i = 0; i < N; i++) {
      if (!stage[i]) continue;
      const onode *n = &md->nodes[i];
      split_stage *st = &p->st[j++];
      st->node = i, st->level = level[i], st->sorted = 1;
      st->kind = !strcmp(n->op, "NonMaxSuppression") ? ST_NMS : !strcmp(n->op, "NonZero") ? ST_NONZERO
                 : !strcmp(n->op, "Unique") ? ST_UNIQUE : ST_LOOP;
      for (int k = 0; k < 4; k++) st->result[k] = -1;
      if (st->kind == ST_LOOP) { /* its own part: the Loop alone, fed the values computed before it */
        split_part *x = st->part = &p->parts[np + j - 1];
        for (int q = 0; q < N; q++) x->skip[q] = q != i && dyn[q]; /* (and the constant nodes, as every part) */
        for (int k = 0; k < rd[i].n; k++) {
          int q = producer(md, rd[i].v[k]);
          if (q < 0 || !dyn[q]) continue; /* an input, an initializer, a constant: inside its part */
          int pi = split_need(&b, rd[i].v[k], level[i], 1), before = x->nfeed;
          int f = name_index(x->feed_names, &x->nfeed, rd[i].v[k]);
          if (x->nfeed > before) x->feed_pool[f] = pi;
        }
        st->kout = -1;
        for (int k = 0; k < n->nout; k++) {
          if (!*n->out[k]) continue;
          int f = name_index(x->out_names, &x->nout, n->out[k]);
          x->out_pool[f] = name_index(p->pool, &p->npool, n->out[k]);
          if (k >= (n->nin > 2 ? n->nin - 2 : 0) && st->kout < 0) st->kout = f; /* the first scan output: the count */
        }
        continue;
      }
      for (int k = 0; k < 5; k++)
        st->slot[k] = k < n->nin && *n->in[k] && (st->kind == ST_NMS || !k) ? split_need(&b, n->in[k], level[i], 1) : -1;
      for (int k = 0; k < 4; k++) st->result[k] = k < n->nout && *n->out[k] ? name_index(p->pool, &p->npool, n->out[k]) : -1;
      for (int a = 0; a < n->nattrs; a++) {
        if (!strcmp(n->attrs[a].name, "center_point_box")) st->center = (int)n->attrs[a].i;
        if (!strcmp(n->attrs[a].name, "axis")) st->has_axis = 1, st->axis = n->attrs[a].i;
        if (!strcmp(n->attrs[a].name, "sorted")) st->sorted = n->attrs[a].i != 0;
      }
    }
    for (int k = 0; k < md->noutputs; k++) split_need(&b, md->outputs[k].name, np - 1, 0);
    /* the parts' outputs and placeholders within the operand limits */
    int fits = 1;
    for (int q = 0; q < np + nst; q++)
      fits &= p->parts[q].nout <= TP_MAX_OPERANDS && m->nin + p->parts[q].nfeed <= TP_MAX_OPERANDS;
    if (fits) m->split = 1;
  }
  for (int i = 0; rd && i < N; i++)
    if (rd[i].owned) tp_free(rd[i].v);
  if (rd) tp_free_sized(rd, (size_t)N * sizeof(node_reads));
  tp_free_sized(dyn, (size_t)N);
  tp_free_sized(stage, (size_t)N);
  tp_free_sized(level, (size_t)N * sizeof(int));
  if (s || m->split != 1) {
    split_free(m);
    m->split = s ? 0 : -1; /* out of memory: decided again on the next call */
  }
  return s;
}

/* Imports part `cut` for the call's runtime inputs (and fed values fv)
 * into e, compiled by the backend when one is installed (example inputs:
 * in, then fv); e keeps the fed values' types. */
static tp_status split_import(tp_onnx_model *m, tp_tensor *const *in, const tp_onnx_cut *cut, tp_tensor *const *fv,
                              spec *e) {
  memset(e, 0, sizeof *e);
  const tp_desc **dp = NULL;
  tp_status s = TP_OK;
  if (!(e->descs = tp_calloc_sized((size_t)m->md.ninputs + 1, sizeof(tp_desc))) ||
      !(e->values = tp_calloc_sized((size_t)m->nin + 1, sizeof(tp_tensor *))) ||
      !(e->fdescs = tp_alloc(sizeof(tp_desc) * (size_t)(cut->nfeed + 1))) ||
      !(dp = tp_calloc_sized((size_t)m->md.ninputs + 1, sizeof(*dp))))
    s = TP_ERR_OUT_OF_MEMORY;
  for (int k = 0; !s && k < m->nin; k++) {
    tp_desc_of(in[k], &e->descs[k]);
    e->descs[k].weak = 0;
    dp[m->in_index[k]] = &e->descs[k];
  }
  if (!s) {
    e->nf = cut->nfeed;
    if (cut->nfeed) memcpy(e->fdescs, cut->feed_descs, sizeof(tp_desc) * (size_t)cut->nfeed);
  }
  uint64_t need = 0;
  if (!s) s = tp_onnx_import_cut(&m->md, dp, m->backend != NULL, cut, &e->graph, &need);
  if (!s && m->backend) {
    int na = m->nin + cut->nfeed;
    tp_tensor **args = tp_calloc_sized((size_t)na + 1, sizeof(tp_tensor *));
    if (!args) s = TP_ERR_OUT_OF_MEMORY;
    for (int k = 0; args && k < na; k++) args[k] = k < m->nin ? in[k] : fv[k - m->nin];
    tp_backend_opts o = m->opts;
    o.graph_for = NULL;
    if (!s) s = m->backend(m->backend_ud, e->graph, na, args, &o, &e->run);
    if (!s && !e->run.run) s = tp_fail(TP_ERR_INTERNAL, "the backend returned no runner");
    if (s) tp_fail_context(s, "onnx model: backend '%s'", m->backend_name);
    if (args) tp_free_sized(args, (size_t)(na + 1) * sizeof(tp_tensor *));
  }
  tp_free_sized(dp, (size_t)(m->md.ninputs + 1) * sizeof(*dp));
  if (s) spec_clear(m, e);
  return s;
}

static tp_status spec_call(const spec *e, int graph_only, int na, tp_tensor *const *args, int max_out,
                           tp_tensor **outs, int *nout) {
  if (e->run.run && !graph_only) return e->run.run(e->run.ud, na, args, max_out, outs, nout);
  return tp_graph_run(e->graph, na, args, max_out, outs, nout);
}

/* Does e serve a call with runtime inputs in and fed values of types fd? */
static int part_match(const tp_onnx_model *m, const spec *e, tp_tensor *const *in, int nf, const tp_desc *fd) {
  if (spec_match(m, e, in, NULL, 0) >= 0 || e->nf != nf) return 0;
  for (int k = 0; k < nf; k++)
    if (!tp_desc_equal(&e->fdescs[k], &fd[k])) return 0;
  return 1;
}

/* The counts of the stages run before part upto (K of each, in order) into e. */
static void note_counts(const split_plan *p, const int64_t *kcur, int upto, spec *e) {
  e->nk = 0;
  for (int j = 0; j < p->nst && j < SPLIT_MAX_K; j++)
    if (p->st[j].level < upto) e->ks[e->nk++] = kcur[j];
}

/* Runs part x (q: the parts before it count its stages; last: the model's
 * last part, whose specializations are the model's and whose outputs go
 * to the caller) for one call: its specialization for the fed values'
 * types found or made, then called; a part before the last writes its
 * outputs into vals. */
static tp_status part_run(tp_onnx_model *m, split_part *x, int q, int last, tp_tensor *const *in, tp_tensor **vals,
                          const int64_t *kcur, int graph_only, int max_out, tp_tensor **outs, int *nout, int *fallback) {
  split_plan *p = &m->sp;
  tp_tensor *args[TP_ONNX_MAX_INPUTS + TP_MAX_OPERANDS + 1];
  tp_desc fd[TP_MAX_OPERANDS + 1];
  tp_status s = TP_OK;
  int na = 0;
  for (int k = 0; k < m->nin; k++) args[na++] = in[k];
  for (int k = 0; k < x->nfeed; k++) {
    tp_tensor *v = vals[x->feed_pool[k]];
    if (!v) return tp_fail(TP_ERR_INTERNAL, "onnx model: split part %d reads '%s' before it is computed", q, x->feed_names[k]);
    args[na++] = v;
    tp_desc_of(v, &fd[k]);
    fd[k].weak = 0;
  }
  spec *e = NULL, *recent = NULL;
  spec *cache = last ? m->specs : x->cache;
  int nc = last ? m->nspecs : x->ncache;
  for (int i = 0; i < nc; i++) {
    if (part_match(m, &cache[i], in, x->nfeed, fd)) {
      e = &cache[i];
      break;
    }
    if (!recent || cache[i].last_use > recent->last_use) recent = &cache[i];
  }
  if (!e) {
    char why[256] = "first call";
    spec fresh;
    tp_onnx_cut c = {x->skip, x->nfeed, x->feed_names, fd, last ? 0 : x->nout, x->out_names};
    s = split_import(m, in, &c, args + m->nin, &fresh);
    if (s) {
      /* before any split call succeeded, a part that does not import (unsupported, or a cut this plan got
       * wrong) runs the model unsplit instead, which reports its own error if it has one */
      *fallback = !m->split_ok && s != TP_ERR_OUT_OF_MEMORY;
      return s;
    }
    note_counts(p, kcur, q, &fresh);
    if (recent && spec_match(m, recent, in, why, sizeof why) < 0) {
      int j = 0; /* the first count that changed */
      while (j < fresh.nk && j < recent->nk && fresh.ks[j] == recent->ks[j]) j++;
      int sj = 0;
      for (int t = 0, seen = 0; t < p->nst; t++)
        if (p->st[t].level < q && seen++ == j) sj = t;
      const onode *n = &m->md.nodes[p->st[sj].node];
      snprintf(why, sizeof why, "%s '%s' %s %lld, was %lld (the %s part specializes on the count)", n->op, n->name,
               p->st[sj].kind == ST_NMS ? "selected" : p->st[sj].kind == ST_LOOP ? "ran" : "found",
               (long long)(j < fresh.nk ? fresh.ks[j] : 0), (long long)(j < recent->nk ? recent->ks[j] : 0),
               last ? "post" : "mid");
    }
    x->compiles++;
    if (last) {
      s = spec_store(m, &fresh, why, &e);
    } else {
      while (x->ncache >= m->limit && x->ncache > 0) { /* least recently used out */
        int lru = 0;
        for (int i = 1; i < x->ncache; i++)
          if (x->cache[i].last_use < x->cache[lru].last_use) lru = i;
        spec_clear(m, &x->cache[lru]);
        x->cache[lru] = x->cache[--x->ncache];
      }
      s = TP_ARRAY_RESERVE(x->cache, x->capcache, x->ncache + 1);
      if (s) spec_clear(m, &fresh);
      else x->cache[x->ncache] = fresh, e = &x->cache[x->ncache++];
    }
    if (s) return s;
  }
  e->last_use = ++m->clock;
  e->hits++;
  x->calls++;
  if (last) return spec_call(e, graph_only, na, args, max_out, outs, nout);
  tp_tensor *po[TP_MAX_OPERANDS] = {0};
  int npo = 0;
  s = spec_call(e, graph_only, na, args, TP_MAX_OPERANDS, po, &npo);
  if (!s && npo != x->nout) s = tp_fail(TP_ERR_INTERNAL, "onnx model: split part %d returned %d values, not %d", q, npo, x->nout);
  for (int k = 0; k < npo; k++) {
    if (!s) vals[x->out_pool[k]] = po[k];
    else tp_tensor_release(po[k]);
  }
  return s;
}

/* One call of a split model. *fallback set: a part does not import (before
 * any split call succeeded): the caller runs the model as value
 * specializations instead. */
static tp_status split_run(tp_onnx_model *m, tp_tensor *const *in, int graph_only, int max_out, tp_tensor **outs,
                           int *nout, int *fallback) {
  split_plan *p = &m->sp;
  tp_status s = TP_OK;
  *fallback = 0;
  tp_tensor **vals = tp_calloc_sized((size_t)p->npool + 1, sizeof(tp_tensor *));
  int64_t kcur[SPLIT_MAX_K] = {0}; /* the stages' counts in this call */
  if (!vals) return TP_ERR_OUT_OF_MEMORY;
  for (int q = 0; !s && q < p->nparts; q++) {
    split_part *x = &p->parts[q];
    int last = q == p->nparts - 1;
    if (last || x->nout) /* (a part nothing later reads is skipped) */
      s = part_run(m, x, q, last, in, vals, kcur, graph_only, max_out, outs, nout, fallback);
    if (s || last) break;
    for (int j = 0; !s && j < p->nst; j++) { /* the run-time nodes after part q */
      const split_stage *st = &p->st[j];
      if (st->level != q) continue;
      const onode *n = &m->md.nodes[st->node];
      if (st->kind == ST_LOOP) { /* the Loop's own part: its stacks come back at their run-time length */
        s = part_run(m, st->part, q, 0, in, vals, kcur, graph_only, 0, NULL, NULL, fallback);
        tp_tensor *y = !s && st->kout >= 0 ? vals[st->part->out_pool[st->kout]] : NULL;
        if (y && j < SPLIT_MAX_K) kcur[j] = y->ndim ? y->shape[0] : 0;
        continue;
      }
      tp_tensor *a[5] = {0}, *r[4] = {0};
      for (int k = 0; k < 5; k++) a[k] = st->slot[k] >= 0 ? vals[st->slot[k]] : NULL;
      if (!a[0] || (st->kind == ST_NMS && !a[1]))
        s = tp_fail(TP_ERR_INTERNAL, "onnx model: split: the inputs of '%s' were not computed", n->name);
      else if (st->kind == ST_NONZERO) s = tp_onnx_nonzero_compute(a[0], &r[0]);
      else if (st->kind == ST_UNIQUE) s = tp_onnx_unique_compute(a[0], st->has_axis, st->axis, st->sorted, r);
      else s = tp_onnx_nms_compute(a[0], a[1], a[2], a[3], a[4], st->center, &r[0]);
      if (s && s != TP_ERR_OUT_OF_MEMORY) tp_fail_context(s, "onnx: node '%s' (%s)", n->name, n->op);
      if (!s && j < SPLIT_MAX_K) /* the count the later parts specialize on */
        kcur[j] = st->kind == ST_NONZERO ? r[0]->shape[1] : st->kind == ST_NMS ? r[0]->shape[0] : r[1]->shape[0];
      for (int k = 0; k < 4; k++) {
        if (!s && st->result[k] >= 0) vals[st->result[k]] = r[k];
        else tp_tensor_release(r[k]);
      }
    }
  }
  if (!s) m->split_ok = 1;
  for (int k = 0; k < p->npool; k++) tp_tensor_release(vals[k]);
  tp_free_sized(vals, (size_t)(p->npool + 1) * sizeof(tp_tensor *));
  return s;
}

static tp_status run_specs(tp_onnx_model *m, tp_tensor *const *in, int graph_only, int max_out, tp_tensor **outs,
                           int *nout);

tp_status tp_onnx_model_run_ex(tp_onnx_model *m, int nin, tp_tensor *const *in, int graph_only, int max_out,
                               tp_tensor **outs, int *nout) {
  if (!m) return tp_fail(TP_ERR_INVALID_ARG, "onnx model: NULL model");
  if (!outs || !nout || max_out < 0) return tp_fail(TP_ERR_INVALID_ARG, "onnx model: run: NULL output array");
  *nout = 0;
  TP_TRY(check_inputs(m, nin, in));
  if (!m->split) TP_TRY(split_decide(m));
  if (m->split != 1) return run_specs(m, in, graph_only, max_out, outs, nout);
  int fallback = 0;
  tp_status s = split_run(m, in, graph_only, max_out, outs, nout, &fallback);
  if (!fallback) return s;
  /* a part does not import: value specializations instead (the split's
   * part specializations go). Unless that fails too for another reason
   * than the split's (these inputs are wrong): then the split stays for
   * the next call */
  tp_status why = s;
  tp_clear_error();
  evict_to(m, 0);
  m->split = -1;
  s = run_specs(m, in, graph_only, max_out, outs, nout);
  if (s && why != TP_ERR_UNSUPPORTED && s != TP_ERR_OUT_OF_MEMORY) {
    evict_to(m, 0);
    m->split = 1;
    return s;
  }
  split_free(m);
  return s;
}

static tp_status run_specs(tp_onnx_model *m, tp_tensor *const *in, int graph_only, int max_out, tp_tensor **outs,
                           int *nout) {
  spec *e = NULL, *recent = NULL;
  for (int i = 0; i < m->nspecs; i++) {
    if (spec_match(m, &m->specs[i], in, NULL, 0) < 0) {
      e = &m->specs[i];
      break;
    }
    if (!recent || m->specs[i].last_use > recent->last_use) recent = &m->specs[i];
  }
  for (int i = 0; !e && i < m->nspecs; i++) /* another size of a dynamic dim: the same runner */
    if (serves_other_shapes(m, &m->specs[i], in)) e = &m->specs[i], m->dyn_calls++;
  if (!e) {
    char why[256] = "first call";
    if (recent) spec_match(m, recent, in, why, sizeof why);
    spec fresh;
    TP_TRY(specialize(m, in, &fresh));
    TP_TRY(spec_store(m, &fresh, why, &e));
  }
  e->last_use = ++m->clock;
  e->hits++;
  /* the graph's placeholders: the runtime inputs that are not bound, then
   * the trainable parameters */
  tp_tensor *small[TP_ONNX_MAX_INPUTS], **args = small;
  if (m->ntrain && !(args = tp_calloc_sized((size_t)(m->nin + m->ntrain), sizeof(tp_tensor *))))
    return TP_ERR_OUT_OF_MEMORY;
  int na = 0, grad = 0;
  for (int k = 0; k < m->nin; k++)
    if (!e->values[k]) args[na++] = in[k];
  for (int k = 0; k < m->ntrain; k++) {
    args[na++] = m->train_vals[k];
    if (tp_tensor_requires_grad(m->train_vals[k])) grad = 1;
  }
  /* a compiled runner does not record the tape: while grad mode is on and a
   * parameter requires grad the graph runs op by op (eager autograd; a
   * compiled training step is tp_compile over a function that runs the
   * model); under no_grad (evaluation) the backend's runner serves */
  if (grad && !tp_is_grad_enabled()) grad = 0;
  tp_status s;
  if (e->run.run && !graph_only && !grad) s = e->run.run(e->run.ud, na, args, max_out, outs, nout);
  else s = tp_graph_run(e->graph, na, args, max_out, outs, nout);
  if (args != small) tp_free_sized(args, (size_t)(m->nin + m->ntrain) * sizeof(tp_tensor *));
  return s;
}

/* ---- fine-tuning: initializers as trainable parameters ---- */

/* Whether an import (at the declared shapes, unknown dims taken as `guess`)
 * needs the value of one of the candidates: those get their byte set in
 * needed. Returns 0 when the probe could not decide (the import failed for
 * another reason, e.g. inputs that set shapes); the first run decides then. */
static tp_status probe_trainable(const tp_onnx_model *m, int n, const char *const *names, uint8_t *needed,
                                 int *decided_out) {
  tp_desc *d = tp_calloc_sized((size_t)m->nin + 1, sizeof(tp_desc));
  const tp_desc **dp = tp_calloc_sized((size_t)m->md.ninputs + 1, sizeof(*dp));
  int decided = 0;
  tp_status st = d && dp ? TP_OK : TP_ERR_OUT_OF_MEMORY;
  if (d && dp) {
    int ok = 1;
    for (int k = 0; k < m->nin && ok; k++) {
      const vinfo *v = &m->md.inputs[m->in_index[k]];
      if (!v->has_shape || !tp_onnx_to_dtype(v->elem, &d[k].dtype)) ok = 0;
      d[k].ndim = v->ndim;
      for (int j = 0; ok && j < v->ndim; j++) d[k].shape[j] = v->dims[j] >= 0 ? v->dims[j] : 16;
      dp[m->in_index[k]] = &d[k];
    }
    tp_graph *g = NULL;
    uint64_t need = 0;
    tp_status s = ok ? tp_onnx_import_train(&m->md, 0, NULL, NULL, dp, 0, n, names, &g, &need, needed)
                     : TP_ERR_UNSUPPORTED;
    if (!s) { /* imported: every candidate can be trained (a converter that
               * tried a constant and took its general path marks it too) */
      decided = 1;
      memset(needed, 0, (size_t)n);
    } else if (s == TP_ERR_OUT_OF_MEMORY) {
      st = s;
    } else {
      for (int k = 0; k < n; k++) decided |= needed[k];
      tp_clear_error();
    }
    tp_graph_free(g);
  }
  tp_free_sized(d, (size_t)(m->nin + 1) * sizeof(tp_desc));
  tp_free_sized(dp, (size_t)(m->md.ninputs + 1) * sizeof(*dp));
  *decided_out = decided;
  return st;
}

tp_status tp_onnx_model_set_trainable(tp_onnx_model *m, int n, const char *const *names) {
  if (!m) return tp_fail(TP_ERR_INVALID_ARG, "onnx model: NULL model");
  if (n < 0 || (n && !names)) return tp_fail(TP_ERR_INVALID_ARG, "onnx model: set_trainable: bad name list");
  char **cand = NULL;
  tp_tensor **vals = NULL;
  int nc = 0;
  uint8_t *needed = NULL;
  tp_status s = tp_onnx_float_initializers(&m->md, n, names, &cand, &vals, &nc);
  int nalloc = nc;
  if (!s && nc && !(needed = tp_calloc_sized((size_t)nc, 1))) s = TP_ERR_OUT_OF_MEMORY;
  if (!s && nc) {
    int decided = 0;
    s = probe_trainable(m, nc, (const char *const *)cand, needed, &decided);
    int k = 0;
    for (int i = 0; !s && decided && i < nc; i++) {
      if (needed[i] && n) { /* asked for by name: an error */
        s = tp_fail(TP_ERR_UNSUPPORTED,
                    "onnx model: initializer '%s' sets a shape or parameter of a node (the import needs its "
                    "value), so it cannot be trained",
                    cand[i]);
        break;
      }
      if (needed[i]) { /* the default list leaves it a constant */
        tp_free(cand[i]);
        tp_tensor_release(vals[i]);
        continue;
      }
      cand[k] = cand[i], vals[k] = vals[i], k++;
    }
    if (decided && !s) nc = k;
  }
  for (int i = 0; !s && i < nc; i++) s = tp_tensor_set_requires_grad(vals[i], 1);
  if (needed) tp_free_sized(needed, (size_t)nalloc);
  if (s) {
    for (int i = 0; i < nc; i++) tp_free(cand[i]), tp_tensor_release(vals[i]);
    tp_free(cand);
    tp_free(vals);
    return s;
  }
  train_clear(m);
  evict_to(m, 0); /* specializations were imported with the old parameters */
  split_free(m);
  m->split = nc ? -1 : 0, m->split_ok = 0;
  m->train_names = cand, m->train_vals = vals, m->ntrain = nc, m->train_all = n == 0;
  return TP_OK;
}

int tp_onnx_model_num_params(const tp_onnx_model *m) { return m ? m->ntrain : 0; }
const char *tp_onnx_model_param_name(const tp_onnx_model *m, int i) {
  return m && i >= 0 && i < m->ntrain ? m->train_names[i] : NULL;
}
tp_tensor *tp_onnx_model_param(const tp_onnx_model *m, int i) {
  return m && i >= 0 && i < m->ntrain ? m->train_vals[i] : NULL;
}

tp_status tp_onnx_model_save(const tp_onnx_model *m, uint8_t **bytes, size_t *len) {
  if (!m || !bytes || !len) return tp_fail(TP_ERR_INVALID_ARG, "onnx model: save: NULL argument");
  return tp_onnx_replace_initializers(m->bytes, m->len, m->ntrain, (const char *const *)m->train_names,
                                      m->train_vals, bytes, len);
}

tp_status tp_onnx_model_explain(const tp_onnx_model *m, char **out) {
  if (!m || !out) return tp_fail(TP_ERR_INVALID_ARG, "onnx model: explain: NULL argument");
  *out = NULL;
  tp_buf b = {0};
  tp_buf_printf(&b, "onnx model: %d input%s, %d output%s, opset %lld, runs on %s\n", m->nin, m->nin == 1 ? "" : "s",
                m->nout, m->nout == 1 ? "" : "s", (long long)m->md.opset, m->backend ? m->backend_name : "the graph executor (eager)");
  for (int k = 0; k < m->nin; k++) {
    const vinfo *v = &m->md.inputs[m->in_index[k]];
    tp_dtype dt;
    tp_buf_printf(&b, "  input '%s': %s", v->name,
                  v->is_tensor && tp_onnx_to_dtype(v->elem, &dt) ? tp_dtype_name(dt) : tp_onnx_dtype_name(v->elem));
    if (!v->has_shape) tp_buf_puts(&b, " of any rank (dynamic)");
    else {
      tp_buf_puts(&b, "[");
      int ndyn = 0;
      for (int d = 0; d < v->ndim; d++) {
        if (d) tp_buf_puts(&b, ",");
        if (v->dims[d] >= 0) tp_buf_printf(&b, "%lld", (long long)v->dims[d]);
        else tp_buf_puts(&b, v->dim_param[d] ? v->dim_param[d] : "?"), ndyn++;
      }
      tp_buf_puts(&b, "]");
      if (ndyn)
        tp_buf_printf(&b, " (%d dynamic dim%s: %s)", ndyn, ndyn == 1 ? "" : "s",
                      m->backend && !strcmp(m->backend_name, "stax")
                          ? "one stax plan serves their sizes where the rule allows (the plan's dynamic line)"
                          : "each new size is a specialization");
    }
    if (m->value_inputs >> k & 1) tp_buf_puts(&b, "; its value sets a shape or parameter (value guard)");
    tp_buf_puts(&b, "\n");
  }
  if (m->ntrain) {
    tp_buf_printf(&b, "trainable: %d parameter%s (initializers fed as inputs%s; eager while grad mode is on):",
                  m->ntrain, m->ntrain == 1 ? "" : "s", m->train_all ? ", every float32 initializer the import allows" : "");
    for (int k = 0; k < m->ntrain && k < 16; k++) tp_buf_printf(&b, " %s", m->train_names[k]);
    tp_buf_puts(&b, m->ntrain > 16 ? " ...\n" : "\n");
  }
  tp_buf_printf(&b, "specializations: %d cached (limit %d), %lld made, %lld evicted\n", m->nspecs, m->limit,
                (long long)m->ncompiles, (long long)m->nevicted);
  if (m->ncompiles) tp_buf_printf(&b, "last specialization because: %s\n", m->reason);
  if (m->split == 1) {
    const split_plan *p = &m->sp;
    tp_buf_puts(&b, "split at ");
    for (int j = 0; j < p->nst; j++)
      tp_buf_printf(&b, "%s%s '%s'", j ? ", " : "", m->md.nodes[p->st[j].node].op, m->md.nodes[p->st[j].node].name);
    const split_part *x0 = &p->parts[0];
    tp_buf_printf(&b, " (run time): pre part %lld compile%s, %lld call%s", (long long)x0->compiles,
                  x0->compiles == 1 ? "" : "s", (long long)x0->calls, x0->calls == 1 ? "" : "s");
    for (int q = 1; q + 1 < p->nparts; q++)
      tp_buf_printf(&b, "; mid part %d: %lld compile%s (one per count of the nodes before it), %lld call%s", q,
                    (long long)p->parts[q].compiles, p->parts[q].compiles == 1 ? "" : "s", (long long)p->parts[q].calls,
                    p->parts[q].calls == 1 ? "" : "s");
    for (int j = 0; j < p->nst; j++)
      if (p->st[j].kind == ST_LOOP)
        tp_buf_printf(&b, "; Loop '%s' in a part of its own: %lld compile%s, %lld call%s (its scan outputs' length is the "
                      "count)", m->md.nodes[p->st[j].node].name, (long long)p->st[j].part->compiles,
                      p->st[j].part->compiles == 1 ? "" : "s", (long long)p->st[j].part->calls,
                      p->st[j].part->calls == 1 ? "" : "s");
    tp_buf_puts(&b, "; post part: one specialization per selected count (K below)\n");
  }
  if (m->dyn_calls) tp_buf_printf(&b, "calls at other sizes served by a specialization's plan: %lld\n", (long long)m->dyn_calls);
  for (int i = 0; i < m->nspecs; i++) {
    const spec *e = &m->specs[i];
    tp_buf_printf(&b, "  #%d: %d nodes, %lld call%s:", i, e->graph->n, (long long)e->hits, e->hits == 1 ? "" : "s");
    for (int j = 0; m->split == 1 && j < e->nk; j++) tp_buf_printf(&b, "%s%lld", j ? "," : " K=", (long long)e->ks[j]);
    for (int k = 0; k < m->nin; k++) {
      char sh[96];
      tp_buf_printf(&b, " %s%s%s", tp_dtype_short(e->descs[k].dtype),
                    tp_shape_str(e->descs[k].ndim, e->descs[k].shape, sh, sizeof sh), e->values[k] ? "=value" : "");
    }
    tp_buf_puts(&b, "\n");
    char *dj = e->run.describe && e->run.other_shapes ? tp_alloc((size_t)1 << 18) : NULL;
    if (dj) { /* the plan's dynamic dims: "dynamic": {...} of its description */
      dj[0] = 0;
      e->run.describe(e->run.ud, dj, (size_t)1 << 18);
      const char *p = strstr(dj, "\"dynamic\": {");
      const char *q = p ? strchr(p, '}') : NULL;
      if (p && q) tp_buf_printf(&b, "    plan %.*s\n", (int)(q + 1 - p), p);
      tp_free(dj);
    }
    char *prof = e->run.profile ? e->run.profile(e->run.ud) : NULL;
    if (prof) { /* stax.profile: the specialization's kernels */
      for (const char *p = prof, *nl; *p; p = nl ? nl + 1 : p + strlen(p)) {
        nl = strchr(p, '\n');
        tp_buf_printf(&b, "    %.*s\n", (int)(nl ? nl - p : (ptrdiff_t)strlen(p)), p);
      }
      tp_free_buffer(prof);
    }
  }
  if (!(*out = tp_buf_take(&b))) return TP_ERR_OUT_OF_MEMORY;
  return TP_OK;
}
