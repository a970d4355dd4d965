/* onnx_tfidf.c - TfIdfVectorizer (int64/int32 tokens) as a composition of
 * run-time ops: its output shape [B, max(ngram_indexes) + 1] depends only
 * on attributes, so the tokens stay a run-time input.
 *
 * ONNX's semantics (its reference walks a trie of the pool): for each skip
 * distance d in 1..max_skip_count+1 and each start s, the n-gram
 * x[s], x[s+d], ..., x[s+(k-1)d] of every length k in
 * [min_gram_length, max_gram_length] that is in the pool counts once for
 * its output column (ngram_indexes[id]); unigrams are counted for d = 1
 * only. A pool n-gram listed twice counts for its last id. Here, per
 * length k and distance d, with L = C - (k-1)d starts:
 *   hits[r, g, s] = prod_j (x[r, s + j d] == pool_g[j])     [R, K, L]
 *   counts[r, g] += sum_s hits                               [R, K]
 * and the columns: F = sum_k counts_k @ onehot(column of g) [R, O], then
 * TF: F, IDF: w * (F > 0) (1 without weights), TFIDF: w * F. */
#include "import.h"
#include <string.h>

typedef struct gram {
  int64_t off;  /* first token in pool_int64s */
  int64_t col;  /* output column */
} gram;

static tp_status mode_of(const char *s, int *mode) {
  static const char *const names[] = {"TF", "IDF", "TFIDF"};
  for (int i = 0; i < 3; i++)
    if (!strcmp(s, names[i])) {
      *mode = i;
      return TP_OK;
    }
  return tp_fail(TP_ERR_INVALID_ARG, "mode '%s' is not TF, IDF or TFIDF", s);
}

/* counts_k @ onehot columns for the n grams g[0..K) of length k, summed
 * over the skip distances; *out R_NONE when no n-gram fits. */
static tp_status grams_of_length(imp *m, ref x, int64_t R, int64_t C, int64_t k, int64_t dmax, const int64_t *pool,
                                 const gram *g, int64_t K, int64_t O, ref *out) {
  *out = tp_onnx_none();
  ref acc = tp_onnx_none();
  for (int64_t d = 1; d <= (k == 1 ? 1 : dmax); d++) {
    int64_t L = C - (k - 1) * d;
    if (L <= 0) break;
    ref prod = tp_onnx_none();
    for (int64_t j = 0; j < k; j++) {
      ref s, p, e;
      int64_t sh3[3] = {R, 1, L}, psh[3] = {1, K, 1};
      TP_TRY(tp_onnx_slice(m, x, 1, j * d, j * d + L, 1, &s));
      TP_TRY(tp_onnx_reshape(m, s, 3, sh3, &s));
      tp_tensor *pt;
      TP_TRY(tp_tensor_empty(TP_I64, 3, psh, &pt));
      for (int64_t i = 0; i < K; i++) ((int64_t *)tp_tensor_ptr(pt))[i] = pool[g[i].off + j];
      TP_TRY(tp_onnx_add_const(m, pt, &p));
      TP_TRY(tp_onnx_binary(m, TP_OP_EQ, s, p, &e));
      TP_TRY(tp_onnx_cast(m, e, TP_F32, &e));
      if (prod.kind == R_NONE) prod = e;
      else TP_TRY(tp_onnx_binary(m, TP_OP_MUL, prod, e, &prod));
    }
    int64_t two = 2;
    TP_TRY(tp_onnx_reduce(m, TP_OP_SUM, prod, 1, &two, 0, &prod));
    if (acc.kind == R_NONE) acc = prod;
    else TP_TRY(tp_onnx_binary(m, TP_OP_ADD, acc, prod, &acc));
  }
  if (acc.kind == R_NONE) return TP_OK;
  int64_t msh[2] = {K, O};
  tp_tensor *mt;
  TP_TRY(tp_full(TP_F32, 2, msh, 0, &mt));
  for (int64_t i = 0; i < K; i++) ((float *)tp_tensor_ptr(mt))[i * O + g[i].col] = 1;
  ref a[2] = {acc, {0}};
  TP_TRY(tp_onnx_add_const(m, mt, &a[1]));
  tp_attrs at;
  tp_attrs_init(&at);
  return tp_onnx_emit(m, TP_OP_MATMUL, 2, a, &at, out);
}

static tp_status tfidf(imp *m, onode *n, ref x, gram *g, ref *y) {
  tp_desc d = tp_onnx_desc(m, x);
  if (tp_onnx_attr(m, n, "pool_strings", A_STRINGS))
    return tp_fail(TP_ERR_UNSUPPORTED, "pool_strings: string tensors are not supported (pool_int64s only)");
  if (d.dtype != TP_I64 && d.dtype != TP_I32)
    return tp_fail(TP_ERR_INVALID_ARG, "X must be int32 or int64 tokens, got %s", tp_dtype_name(d.dtype));
  if (d.ndim > 2) return tp_fail(TP_ERR_INVALID_ARG, "X must be [C] or [B, C], got rank %d", d.ndim);
  int64_t R = d.ndim == 2 ? d.shape[0] : 1, C = d.ndim ? d.shape[d.ndim - 1] : 1;
  if (d.ndim == 2 && R < 1) return tp_fail(TP_ERR_INVALID_ARG, "X [B, C] needs B > 0, got B = %lld", (long long)R);
  int mode = 0;
  TP_TRY(mode_of(tp_onnx_attr_str(m, n, "mode", ""), &mode));
  int64_t mn = tp_onnx_attr_int(m, n, "min_gram_length", 0), mx = tp_onnx_attr_int(m, n, "max_gram_length", 0),
          skip = tp_onnx_attr_int(m, n, "max_skip_count", 0);
  if (mn < 1 || mx < mn) return tp_fail(TP_ERR_INVALID_ARG, "gram lengths %lld..%lld: need 1 <= min <= max", (long long)mn, (long long)mx);
  if (skip < 0) return tp_fail(TP_ERR_INVALID_ARG, "max_skip_count %lld is negative", (long long)skip);
  attr *pa = tp_onnx_attr(m, n, "pool_int64s", A_INTS), *ca = tp_onnx_attr(m, n, "ngram_counts", A_INTS),
       *ia = tp_onnx_attr(m, n, "ngram_indexes", A_INTS), *wa = tp_onnx_attr(m, n, "weights", A_FLOATS);
  if (!pa || !ca || !ia || !ia->nints) return tp_fail(TP_ERR_INVALID_ARG, "pool_int64s, ngram_counts and ngram_indexes are required");
  int64_t total = (int64_t)pa->nints, O = 0;
  for (size_t i = 0; i < ia->nints; i++) {
    if (ia->ints[i] < 0 || ia->ints[i] >= (1 << 24))
      return tp_fail(TP_ERR_INVALID_ARG, "ngram_indexes[%zu] = %lld is out of range", i, (long long)ia->ints[i]);
    if (ia->ints[i] + 1 > O) O = ia->ints[i] + 1;
  }
  if (wa && wa->nfloats && (int64_t)wa->nfloats < O)
    return tp_fail(TP_ERR_INVALID_ARG, "weights has %zu values, the output %lld columns", wa->nfloats, (long long)O);
  ref F = tp_onnx_none(), xx;
  int64_t sh2[2] = {R, C};
  TP_TRY(tp_onnx_cast(m, x, TP_I64, &xx));
  TP_TRY(tp_onnx_reshape(m, xx, 2, sh2, &xx));
  int64_t id = 0; /* ids of all n-grams, 0-based */
  for (size_t i = 0; i < ca->nints; i++) {
    int64_t k = (int64_t)i + 1, start = ca->ints[i], end = i + 1 < ca->nints ? ca->ints[i + 1] : total;
    if (start < 0 || end < start || end > total)
      return tp_fail(TP_ERR_INVALID_ARG, "ngram_counts[%zu] = %lld does not fit the pool of %lld", i, (long long)start, (long long)total);
    int64_t cnt = (end - start) / k, K = 0;
    if (id + cnt > (int64_t)ia->nints)
      return tp_fail(TP_ERR_INVALID_ARG, "ngram_indexes has %zu values, the pool more n-grams", ia->nints);
    if (k >= mn && k <= mx) {
      for (int64_t q = 0; q < cnt; q++) {
        int64_t off = start + q * k, dup = 0;
        for (int64_t r = q + 1; r < cnt && !dup; r++) /* listed again later: the last id wins */
          dup = !memcmp(pa->ints + off, pa->ints + start + r * k, sizeof(int64_t) * (size_t)k);
        if (!dup) g[K].off = off, g[K++].col = ia->ints[id + q];
      }
      ref part;
      if (K) TP_TRY(grams_of_length(m, xx, R, C, k, skip + 1, pa->ints, g, K, O, &part));
      if (K && part.kind != R_NONE) {
        if (F.kind == R_NONE) F = part;
        else TP_TRY(tp_onnx_binary(m, TP_OP_ADD, F, part, &F));
      }
    }
    id += cnt;
  }
  int64_t osh[2] = {R, O};
  if (F.kind == R_NONE) TP_TRY(tp_onnx_full(m, TP_F32, 2, osh, 0, &F));
  ref w = tp_onnx_none();
  if (wa && wa->nfloats && mode) {
    tp_tensor *wt;
    TP_TRY(tp_tensor_empty(TP_F32, 1, &O, &wt));
    memcpy(tp_tensor_ptr(wt), wa->floats, sizeof(float) * (size_t)O);
    TP_TRY(tp_onnx_add_const(m, wt, &w));
  }
  if (mode == 1) { /* IDF */
    TP_TRY(tp_onnx_binary(m, TP_OP_GT, F, tp_onnx_scalar(0), &F));
    TP_TRY(tp_onnx_cast(m, F, TP_F32, &F));
  }
  if (w.kind != R_NONE) TP_TRY(tp_onnx_binary(m, TP_OP_MUL, F, w, &F));
  if (d.ndim < 2) TP_TRY(tp_onnx_reshape(m, F, 1, &O, &F));
  *y = F;
  return TP_OK;
}

/* TfIdfVectorizer: see the top comment. */
tp_status tp_onnx_cv_tfidf(imp *m, onode *n, int arg) {
  (void)arg;
  ref x, y;
  TP_TRY(tp_onnx_need_in(m, n, 0, &x));
  attr *pa = tp_onnx_attr(m, n, "pool_int64s", A_INTS);
  gram *g = tp_alloc(sizeof(gram) * ((pa ? pa->nints : 0) + 1));
  if (!g) return TP_ERR_OUT_OF_MEMORY;
  tp_status s = tfidf(m, n, x, g, &y);
  tp_free(g);
  TP_TRY(s);
  return tp_onnx_set_out(m, n, 0, y);
}
