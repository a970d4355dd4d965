/* onnx_dyn.c - operators whose output shape depends on input values:
 * NonZero, Compress, Unique, NonMaxSuppression.
 *
 * The graph IR gives every value a shape fixed when the graph is built, so
 * these import as value specializations (docs/onnx.md, "Data-dependent
 * output shapes"): the inputs that decide the output shape must be
 * constants; when one is computed from graph inputs, the import fails with
 * "... must be a constant" and records those inputs in m->need, and
 * tp_onnx_model binds them to the call's values and imports again (a new
 * specialization per distinct value, guarded, LRU-cached). Compress only
 * needs its condition: the data stays a run-time input of a gather with the
 * selected indices. NonZero, Unique and NonMaxSuppression need every value
 * they read and fold to constants here. */
#include "import.h"
#include <math.h>
#include <string.h>

/* The constant tensor behind r (a value input: see the top comment). */
static tp_status need_value(imp *m, ref r, const char *what, tp_tensor **t) {
  *t = NULL;
  if (r.kind == R_SCALAR) {
    ref c;
    TP_TRY(tp_onnx_full(m, r.is_int ? TP_I64 : TP_F32, 0, NULL, r.s, &c));
    r = c;
  }
  if (r.kind != R_CONST) {
    if (r.kind == R_NODE) TP_TRY(tp_onnx_note_need(m, r.node));
    return tp_fail(TP_ERR_UNSUPPORTED, "%s must be a constant (its value decides the output shape; "
                   "tp_onnx_model specializes on it)", what);
  }
  *t = m->consts[r.c];
  return TP_OK;
}

/* Element i of a contiguous constant as int64 (exact for int64). */
static int64_t get_i64(const tp_tensor *t, int64_t i) {
  if (t->dtype == TP_I64) return ((const int64_t *)tp_tensor_ptr(t))[i];
  return (int64_t)tp_tensor_get_f64(t, i);
}

/* Three-way compare of elements a and b of t (exact for int64; a total order). */
static int elem_cmp(const tp_tensor *t, int64_t a, int64_t b) {
  if (t->dtype == TP_I64) {
    int64_t x = get_i64(t, a), y = get_i64(t, b);
    return x < y ? -1 : x > y;
  }
  double x = tp_tensor_get_f64(t, a), y = tp_tensor_get_f64(t, b);
  if (isnan(x) || isnan(y)) return isnan(x) - isnan(y); /* NaNs equal, after every number (numpy) */
  return x < y ? -1 : x > y;
}

static tp_status new_i64(int nd, const int64_t *sh, tp_tensor **t) {
  TP_TRY(tp_tensor_empty(TP_I64, nd, sh, t));
  return TP_OK;
}

/* NonZero's kernel (the converter's, and model.c's at run time when the
 * model is split at the node): int64 [rank, count], the indices of the
 * non-zero elements of t in row-major order (a 0-d input counts as rank 1). */
tp_status tp_onnx_nonzero_compute(tp_tensor *x, tp_tensor **res) {
  *res = NULL;
  tp_tensor *t;
  TP_TRY(tp_contiguous(x, &t));
  int nd = t->ndim ? t->ndim : 1;
  int64_t tot = tp_tensor_numel(t), cnt = 0;
  for (int64_t i = 0; i < tot; i++) cnt += tp_tensor_get_f64(t, i) != 0;
  int64_t sh[2] = {nd, cnt};
  tp_tensor *o;
  tp_status s = new_i64(2, sh, &o);
  if (s) {
    tp_tensor_release(t);
    return s;
  }
  int64_t *ov = tp_tensor_ptr(o), c = 0;
  for (int64_t i = 0; i < tot; i++) {
    if (tp_tensor_get_f64(t, i) == 0) continue;
    int64_t r = i;
    for (int d = t->ndim - 1; d >= 0; d--) {
      ov[d * cnt + c] = r % t->shape[d];
      r /= t->shape[d];
    }
    if (!t->ndim) ov[c] = 0;
    c++;
  }
  tp_tensor_release(t);
  *res = o;
  return TP_OK;
}

/* NonZero of a constant (a value specialization; a model whose input comes
 * from its runtime inputs is split at the node instead: model.c). */
tp_status tp_onnx_cv_nonzero(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, y;
  tp_tensor *t, *o;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(need_value(m, x, "NonZero's input", &t));
  TP_TRY(tp_onnx_nonzero_compute(t, &o));
  TP_TRY(tp_onnx_add_const(m, o, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* Compress: gather(x, the indices where condition is true, axis); no
 * axis: of the flattened x. The condition is a value input; x is not. */
tp_status tp_onnx_cv_compress(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, c, y;
  tp_tensor *ct;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  TP_TRY(tp_onnx_need_in(m, n, 1, &c));
  tp_desc d = tp_onnx_desc(m, x);
  attr *ax = tp_onnx_attr(m, n, "axis", A_INT);
  int64_t axis = 0;
  if (ax) {
    TP_TRY(tp_onnx_axis(ax->i, d.ndim, "axis", &axis));
  } else {
    int64_t flat = -1;
    TP_TRY(tp_onnx_reshape(m, x, 1, &flat, &x));
    d = tp_onnx_desc(m, x);
  }
  tp_desc dc = tp_onnx_desc(m, c);
  if (dc.ndim != 1 || dc.dtype != TP_BOOL)
    return tp_fail(TP_ERR_INVALID_ARG, "condition must be a 1-d bool tensor, got %s of rank %d", tp_dtype_name(dc.dtype), dc.ndim);
  TP_TRY(need_value(m, c, "Compress's condition", &ct));
  int64_t len = tp_tensor_numel(ct), dim = d.shape[axis], k = 0;
  for (int64_t i = 0; i < len; i++)
    if (tp_tensor_get_f64(ct, i) != 0) {
      if (i >= dim)
        return tp_fail(TP_ERR_INVALID_ARG, "condition is true at %lld, past the axis' extent %lld", (long long)i, (long long)dim);
      k++;
    }
  if (!k) {
    TP_TRY(tp_onnx_slice(m, x, axis, 0, 0, 1, &y));
    return tp_onnx_set_out(m, n, 0, y);
  }
  tp_tensor *it;
  TP_TRY(new_i64(1, &k, &it));
  int64_t *iv = tp_tensor_ptr(it);
  for (int64_t i = 0, j = 0; i < len; i++)
    if (tp_tensor_get_f64(ct, i) != 0) iv[j++] = i;
  ref a[2] = {x, {0}};
  TP_TRY(tp_onnx_add_const(m, it, &a[1]));
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = axis;
  TP_TRY(tp_onnx_emit(m, TP_OP_GATHER, 2, a, &at, &y));
  return tp_onnx_set_out(m, n, 0, y);
}

/* ---- Unique ---- */

typedef struct slices {
  const tp_tensor *t;
  int64_t outer, n, inner; /* t viewed as [outer, n, inner]; slice i = t[:, i, :] */
} slices;

/* Lexicographic compare of slices a and b, elements in (outer, inner) order. */
static int slice_cmp(const slices *s, int64_t a, int64_t b) {
  for (int64_t o = 0; o < s->outer; o++)
    for (int64_t i = 0; i < s->inner; i++) {
      int c = elem_cmp(s->t, (o * s->n + a) * s->inner + i, (o * s->n + b) * s->inner + i);
      if (c) return c;
    }
  return 0;
}

/* Stable merge sort of idx[0..k) (tmp: k scratch entries): b goes before
 * a only when before(ctx, b, a); equal entries keep their order. Unique's
 * slices and NonMaxSuppression's scores both sort with it. */
typedef int (*before_fn)(const void *ctx, int64_t a, int64_t b);
static void merge_sort(before_fn before, const void *ctx, int64_t *idx, int64_t *tmp, int64_t k) {
  if (k < 2) return;
  int64_t h = k / 2;
  merge_sort(before, ctx, idx, tmp, h);
  merge_sort(before, ctx, idx + h, tmp, k - h);
  int64_t i = 0, j = h, o = 0;
  while (i < h && j < k) tmp[o++] = before(ctx, idx[j], idx[i]) ? idx[j++] : idx[i++];
  while (i < h) tmp[o++] = idx[i++];
  while (j < k) tmp[o++] = idx[j++];
  memcpy(idx, tmp, sizeof(int64_t) * (size_t)k);
}

static int slice_before(const void *ctx, int64_t a, int64_t b) { return slice_cmp(ctx, a, b) < 0; }

/* Unique's kernel (the converter's on a constant, and model.c's at run
 * time when the model is split at the node): the distinct elements (no
 * axis: of the flattened input) or slices along axis; sorted ascending,
 * lexicographically for slices, else in order of first occurrence.
 * out: Y, indices (first occurrences), inverse_indices, counts (int64). */
tp_status tp_onnx_unique_compute(tp_tensor *x, int has_axis, int64_t axis_attr, int sorted, tp_tensor *out[4]) {
  for (int k = 0; k < 4; k++) out[k] = NULL;
  int64_t axis = 0;
  if (has_axis) TP_TRY(tp_onnx_axis(axis_attr, x->ndim, "axis", &axis));
  tp_tensor *t;
  TP_TRY(tp_contiguous(x, &t));
  slices s = {t, 1, has_axis ? t->shape[axis] : tp_tensor_numel(t), 1};
  for (int i = 0; has_axis && i < axis; i++) s.outer *= t->shape[i];
  for (int i = (int)axis + 1; has_axis && i < t->ndim; i++) s.inner *= t->shape[i];
  int64_t N = s.n, K = 0;
  tp_status st = TP_OK;
  int64_t *buf = tp_alloc(sizeof(int64_t) * (size_t)(5 * N + 1));
  if (!buf) {
    tp_tensor_release(t);
    return TP_ERR_OUT_OF_MEMORY;
  }
  int64_t *ord = buf, *tmp = buf + N, *first = buf + 2 * N, *cnt = buf + 3 * N, *inv = buf + 4 * N;
  for (int64_t i = 0; i < N; i++) ord[i] = i;
  merge_sort(slice_before, &s, ord, tmp, N);
  /* groups of equal slices in sorted order: the first of each is its first occurrence (stable sort) */
  for (int64_t i = 0; i < N; i++) {
    if (!i || slice_cmp(&s, ord[i - 1], ord[i])) first[K] = ord[i], cnt[K++] = 0;
    cnt[K - 1]++;
    inv[ord[i]] = K - 1;
  }
  if (!sorted) { /* renumber the groups by first occurrence */
    int64_t *perm = tmp; /* perm[new] = old */
    for (int64_t g = 0; g < K; g++) perm[g] = g;
    for (int64_t g = 1; g < K; g++) /* insertion sort by first index */
      for (int64_t h = g; h > 0 && first[perm[h - 1]] > first[perm[h]]; h--) {
        int64_t v = perm[h]; perm[h] = perm[h - 1]; perm[h - 1] = v;
      }
    int64_t *rank = ord; /* rank[old] = new */
    int64_t *f2 = tp_alloc(sizeof(int64_t) * (size_t)(2 * K + 1));
    if (!f2) st = TP_ERR_OUT_OF_MEMORY;
    for (int64_t g = 0; f2 && g < K; g++) rank[perm[g]] = g, f2[g] = first[perm[g]], f2[K + g] = cnt[perm[g]];
    if (f2) {
      memcpy(first, f2, sizeof(int64_t) * (size_t)K);
      memcpy(cnt, f2 + K, sizeof(int64_t) * (size_t)K);
      for (int64_t i = 0; i < N; i++) inv[i] = rank[inv[i]];
    }
    tp_free(f2);
  }
  /* Y: the first occurrences' slices, [.., K, ..] (no axis: [K]) */
  int64_t ysh[TP_MAX_DIMS];
  int yn = has_axis ? t->ndim : 1;
  for (int i = 0; i < yn; i++) ysh[i] = has_axis ? t->shape[i] : K;
  if (has_axis) ysh[axis] = K;
  if (!st) st = tp_tensor_empty(t->dtype, yn, ysh, &out[0]);
  if (!st) {
    size_t es = tp_dtype_size(t->dtype), row = (size_t)s.inner * es;
    const char *src = tp_tensor_ptr(t);
    char *dst = tp_tensor_ptr(out[0]);
    for (int64_t o = 0; o < s.outer; o++)
      for (int64_t g = 0; g < K; g++)
        if (row) memcpy(dst + (size_t)(o * K + g) * row, src + (size_t)(o * N + first[g]) * row, row);
  }
  const int64_t *vals[3] = {first, inv, cnt};
  int64_t lens[3] = {K, N, K};
  for (int k = 0; k < 3 && !st; k++) {
    st = new_i64(1, &lens[k], &out[1 + k]);
    if (!st && lens[k]) memcpy(tp_tensor_ptr(out[1 + k]), vals[k], sizeof(int64_t) * (size_t)lens[k]);
  }
  tp_free(buf);
  tp_tensor_release(t);
  if (st)
    for (int k = 0; k < 4; k++) tp_tensor_release(out[k]), out[k] = NULL;
  return st;
}

/* Unique on a constant (the input a value input otherwise; a model split
 * at the node runs tp_onnx_unique_compute at run time instead). */
tp_status tp_onnx_cv_unique(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, r;
  tp_tensor *t, *o[4];
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  attr *ax = tp_onnx_attr(m, n, "axis", A_INT);
  int sorted = tp_onnx_attr_int(m, n, "sorted", 1) != 0;
  TP_TRY(need_value(m, x, "Unique's input", &t));
  TP_TRY(tp_onnx_unique_compute(t, ax != NULL, ax ? ax->i : 0, sorted, o));
  tp_status st = TP_OK;
  for (int k = 0; k < 4; k++) {
    if (!st) st = tp_onnx_add_const(m, o[k], &r);
    else tp_tensor_release(o[k]);
    if (!st && tp_onnx_has_out(n, k)) st = tp_onnx_set_out(m, n, k, r);
  }
  return st;
}

/* ---- NonMaxSuppression ---- */

/* One box's extent as [ymin, xmin, ymax, xmax] in float32, as ONNX's
 * reference computes it (corners sorted; centers +- half the size). */
static void box_extent(const float *b, int center, float e[4]) {
  if (!center) {
    e[0] = fminf(b[0], b[2]), e[2] = fmaxf(b[0], b[2]);
    e[1] = fminf(b[1], b[3]), e[3] = fmaxf(b[1], b[3]);
  } else {
    float hw = b[2] / 2, hh = b[3] / 2;
    e[1] = b[0] - hw, e[3] = b[0] + hw;
    e[0] = b[1] - hh, e[2] = b[1] + hh;
  }
}

/* ONNX's suppress_by_iou: IoU(a, b) > thr, with its early outs. */
static int suppress(const float *a, const float *b, int center, float thr) {
  float ea[4], eb[4];
  box_extent(a, center, ea);
  box_extent(b, center, eb);
  float ix0 = fmaxf(ea[1], eb[1]), ix1 = fminf(ea[3], eb[3]);
  if (ix1 <= ix0) return 0;
  float iy0 = fmaxf(ea[0], eb[0]), iy1 = fminf(ea[2], eb[2]);
  if (iy1 <= iy0) return 0;
  float inter = (ix1 - ix0) * (iy1 - iy0);
  if (inter <= 0) return 0;
  float a1 = (ea[3] - ea[1]) * (ea[2] - ea[0]), a2 = (eb[3] - eb[1]) * (eb[2] - eb[0]);
  float uni = a1 + a2 - inter;
  if (a1 <= 0 || a2 <= 0 || uni <= 0) return 0;
  return inter / uni > thr;
}

/* NonMaxSuppression's order: score descending (merge_sort keeps equal
 * scores in ascending box index). */
static int score_before(const void *ctx, int64_t a, int64_t b) {
  const float *sc = ctx;
  return sc[a] > sc[b];
}

/* An optional one-element parameter: *present = 0 when absent or empty. */
static tp_status nms_scalar(const tp_tensor *t, int want_int, const char *what, double *v, int *present) {
  *present = 0;
  if (!t) return TP_OK;
  int64_t k = tp_tensor_numel(t);
  if (!k) return TP_OK;
  if (k != 1) return tp_fail(TP_ERR_INVALID_ARG, "%s must have one element, got %lld", what, (long long)k);
  if (want_int ? (t->dtype != TP_I64 && t->dtype != TP_I32) : t->dtype != TP_F32)
    return tp_fail(TP_ERR_INVALID_ARG, "%s must be %s, got %s", what, want_int ? "int64" : "float32", tp_dtype_name(t->dtype));
  if (want_int && t->dtype == TP_I64) {
    int64_t x;
    tp_tensor_gather(t, &x);
    *v = (double)x;
  } else {
    *v = tp_tensor_get_f64(t, 0);
  }
  *present = 1;
  return TP_OK;
}

tp_status tp_onnx_nms_check(const tp_desc *db, const tp_desc *ds) {
  if (db->dtype != TP_F32 || db->ndim != 3 || db->shape[2] != 4)
    return tp_fail(TP_ERR_INVALID_ARG, "boxes must be float32 [batches, boxes, 4], got %s of rank %d",
                   tp_dtype_name(db->dtype), db->ndim);
  if (ds->dtype != TP_F32 || ds->ndim != 3 || ds->shape[0] != db->shape[0] || ds->shape[2] != db->shape[1])
    return tp_fail(TP_ERR_INVALID_ARG, "scores must be float32 [batches, classes, boxes] = [%lld, classes, %lld]",
                   (long long)db->shape[0], (long long)db->shape[1]);
  return TP_OK;
}

/* NonMaxSuppression's kernel (the converter's, and model.c's at run time
 * when the model is split at the node): per batch and class, the boxes in
 * descending score order (equal scores: the lower index first) above
 * score_threshold (when given), each kept unless its IoU with a kept box
 * exceeds iou_threshold, at most max_output_boxes_per_class (absent: 0)
 * of them; int64 [selected, 3] rows (batch, class, box). */
tp_status tp_onnx_nms_compute(tp_tensor *boxes_t, tp_tensor *scores_t, const tp_tensor *maxo_t,
                              const tp_tensor *iou_t, const tp_tensor *sthr_t, int center, tp_tensor **res) {
  *res = NULL;
  tp_desc db, ds;
  tp_desc_of(boxes_t, &db);
  tp_desc_of(scores_t, &ds);
  TP_TRY(tp_onnx_nms_check(&db, &ds));
  double maxo = 0, iou = 0, sthr = 0;
  int has_max, has_iou, has_sthr;
  TP_TRY(nms_scalar(maxo_t, 1, "max_output_boxes_per_class", &maxo, &has_max));
  TP_TRY(nms_scalar(iou_t, 0, "iou_threshold", &iou, &has_iou));
  TP_TRY(nms_scalar(sthr_t, 0, "score_threshold", &sthr, &has_sthr));
  if (maxo < 0)
    return tp_fail(TP_ERR_INVALID_ARG, "max_output_boxes_per_class must be >= 0, got %lld", (long long)maxo);
  if (has_iou && !(iou >= 0 && iou <= 1)) return tp_fail(TP_ERR_INVALID_ARG, "iou_threshold must be in [0, 1], got %g", iou);
  if (has_sthr && isnan(sthr)) return tp_fail(TP_ERR_INVALID_ARG, "score_threshold is NaN");
  int64_t B = db.shape[0], C = ds.shape[1], N = db.shape[1];
  if (maxo > (double)N) maxo = (double)N; /* more than N per class cannot be selected */
  tp_tensor *bt = NULL, *stt = NULL;
  TP_TRY(tp_contiguous(boxes_t, &bt));
  tp_status s = tp_contiguous(scores_t, &stt);
  if (s) {
    tp_tensor_release(bt);
    return s;
  }
  const float *boxes = tp_tensor_ptr(bt), *scores = tp_tensor_ptr(stt);
  float fiou = (float)iou, fs = (float)sthr;
  int64_t cap = B * C * (int64_t)maxo, k = 0;
  int64_t *out = tp_alloc(sizeof(int64_t) * (size_t)(3 * cap + 1));
  int64_t *cand = tp_alloc(sizeof(int64_t) * (size_t)(3 * N + 1));
  if (!out || !cand) {
    tp_free(out);
    tp_free(cand);
    tp_tensor_release(bt);
    tp_tensor_release(stt);
    return TP_ERR_OUT_OF_MEMORY;
  }
  int64_t *kept = cand + N, *tmp = cand + 2 * N;
  for (int64_t b = 0; b < B; b++)
    for (int64_t c = 0; c < C; c++) {
      const float *sc = scores + (b * C + c) * N, *bx = boxes + b * N * 4;
      int64_t nc = 0, nk = 0;
      for (int64_t i = 0; i < N; i++)
        if (!has_sthr || sc[i] > fs) cand[nc++] = i;
      merge_sort(score_before, sc, cand, tmp, nc); /* score descending, equal scores: index ascending */
      for (int64_t i = 0; i < nc && nk < (int64_t)maxo; i++) {
        int keep = 1;
        for (int64_t j = 0; j < nk && keep; j++)
          if (suppress(bx + cand[i] * 4, bx + kept[j] * 4, center, fiou)) keep = 0;
        if (!keep) continue;
        kept[nk++] = cand[i];
        out[3 * k] = b, out[3 * k + 1] = c, out[3 * k + 2] = cand[i];
        k++;
      }
    }
  int64_t sh[2] = {k, 3};
  s = new_i64(2, sh, res);
  if (!s && k) memcpy(tp_tensor_ptr(*res), out, sizeof(int64_t) * (size_t)(3 * k));
  tp_free(out);
  tp_free(cand);
  tp_tensor_release(bt);
  tp_tensor_release(stt);
  return s;
}

/* An optional input's constant value (NULL when absent). */
static tp_status opt_value(imp *m, onode *n, int i, const char *what, tp_tensor **t) {
  ref r;
  *t = NULL;
  TP_TRY(tp_onnx_in(m, n, i, &r));
  if (r.kind == R_NONE) return TP_OK;
  return need_value(m, r, what, t);
}

/* NonMaxSuppression with constant inputs (a value specialization; a model
 * whose boxes come from its inputs is split at the node instead: model.c). */
tp_status tp_onnx_cv_nms(imp *m, onode *n, int arg) {
  (void)arg;
  ref rb, rs, y;
  tp_tensor *bt, *stt, *mt, *it, *st;
  TP_TRY(tp_onnx_need_in(m, n, 0, &rb));
  TP_TRY(tp_onnx_need_in(m, n, 1, &rs));
  int center = (int)tp_onnx_attr_int(m, n, "center_point_box", 0);
  if (center != 0 && center != 1) return tp_fail(TP_ERR_INVALID_ARG, "center_point_box must be 0 or 1, got %d", center);
  tp_desc db = tp_onnx_desc(m, rb), ds = tp_onnx_desc(m, rs);
  TP_TRY(tp_onnx_nms_check(&db, &ds));
  TP_TRY(opt_value(m, n, 2, "max_output_boxes_per_class", &mt));
  TP_TRY(opt_value(m, n, 3, "iou_threshold", &it));
  TP_TRY(opt_value(m, n, 4, "score_threshold", &st));
  TP_TRY(need_value(m, rb, "NonMaxSuppression's boxes", &bt));
  TP_TRY(need_value(m, rs, "NonMaxSuppression's scores", &stt));
  tp_tensor *o;
  TP_TRY(tp_onnx_nms_compute(bt, stt, mt, it, st, center, &o));
  TP_TRY(tp_onnx_add_const(m, o, &y));
  return tp_onnx_set_out(m, n, 0, y);
}
