/* finetune.c - what fine-tuning an ONNX model needs beyond running it
 * (issue 19, part 4; the model side is in model.c, tp_onnx_model_set_trainable):
 *
 *   - the float32, float16 and bfloat16 initializers of a model, by name
 *     (the candidates for trainable parameters), read into float32 tensors
 *     (a float16 / bfloat16 one: its float32 master copy, widened exactly);
 *   - the model's bytes with some initializers replaced by new values (the
 *     fine-tuned model saved back): every other byte of the ModelProto is
 *     copied as it was (opsets, metadata, nodes, value infos, the other
 *     initializers), so the saved file differs from the loaded one only in
 *     the trained weights. A replaced initializer is written as dims,
 *     data_type, name and raw_data (little endian), ONNX's usual encoding,
 *     in the initializer's own data_type (a float32 master copy of a
 *     float16 / bfloat16 initializer rounded to it, nearest even).
 */
#include "import.h"
#include "pb.h"
#include "tensor_pb.h"
#include <math.h>

static void free_list(char **names, tp_tensor **vals, int n) {
  for (int i = 0; i < n; i++) {
    if (names) tp_free(names[i]);
    if (vals) tp_tensor_release(vals[i]);
  }
  tp_free(names);
  tp_free(vals);
}

static int trainable_dtype(tp_dtype d) { return d == TP_F32 || d == TP_F16 || d == TP_BF16; }

tp_status tp_onnx_float_initializers(const omodel *md, int n, const char *const *want, char ***names_out,
                                     tp_tensor ***vals_out, int *count) {
  *names_out = NULL, *vals_out = NULL, *count = 0;
  for (int i = 0; i < n; i++) {
    if (!want[i]) return tp_fail(TP_ERR_INVALID_ARG, "onnx model: trainable name %d is NULL", i);
    for (int j = 0; j < i; j++)
      if (!strcmp(want[i], want[j]))
        return tp_fail(TP_ERR_INVALID_ARG, "onnx model: '%s' is named twice in the trainable list", want[i]);
  }
  int cap = n ? n : md->ninits;
  /* plain tp_alloc'ed (the model frees them with tp_free) */
  char **names = tp_alloc(((size_t)cap + 1) * sizeof(char *));
  tp_tensor **vals = tp_alloc(((size_t)cap + 1) * sizeof(tp_tensor *));
  if (names) memset(names, 0, ((size_t)cap + 1) * sizeof(char *));
  if (vals) memset(vals, 0, ((size_t)cap + 1) * sizeof(tp_tensor *));
  uint8_t *found = n ? tp_calloc_sized((size_t)n, 1) : NULL;
  tp_status s = names && vals && (!n || found) ? TP_OK : TP_ERR_OUT_OF_MEMORY;
  int got = 0;
  for (int i = 0; !s && i < md->ninits; i++) {
    tp_pb rd = md->inits[i]; /* a copy: reading advances it */
    tp_tensor *t = NULL;
    char *name = NULL;
    if ((s = tp_onnx_tensor_read(&rd, "initializer", &t, &name))) break;
    int slot = -1;
    if (n) {
      for (int k = 0; k < n; k++)
        if (name && !strcmp(name, want[k])) slot = k;
      if (slot >= 0 && !trainable_dtype(t->dtype))
        s = tp_fail(TP_ERR_INVALID_ARG,
                    "onnx model: initializer '%s' is %s; only float32 initializers can be trained (and float16 / "
                    "bfloat16 ones, as float32 master copies)",
                    name, tp_dtype_name(t->dtype));
      if (slot >= 0 && found[slot]) slot = -1; /* a second initializer of that name: the first one counts */
    } else if (trainable_dtype(t->dtype) && name && *name) {
      slot = got;
    }
    if (!s && slot >= 0 && t->dtype != TP_F32) { /* float16 / bfloat16: the float32 master copy */
      tp_attrs at;
      tp_attrs_init(&at);
      at.dtype = TP_F32;
      tp_tensor *w = NULL;
      s = tp_op_call(TP_OP_CAST, 1, &t, &at, &w);
      tp_tensor_release(t);
      t = w;
    }
    if (!s && slot >= 0) { /* t is a fresh contiguous tensor (the reader copies): the optimizer updates it */
      names[slot] = name, vals[slot] = t, name = NULL, t = NULL;
      if (found) found[slot] = 1;
      got++;
    }
    tp_free(name);
    tp_tensor_release(t);
  }
  for (int k = 0; !s && k < n; k++)
    if (!found[k]) s = tp_fail(TP_ERR_INVALID_ARG, "onnx model: the model has no initializer named '%s'", want[k]);
  if (found) tp_free_sized(found, (size_t)n);
  if (s) {
    free_list(names, vals, cap + 1);
    return s;
  }
  *names_out = names, *vals_out = vals, *count = got;
  return TP_OK;
}

/* The name of a TensorProto (field 8), or NULL (a pointer into the bytes,
 * len); *onnx_type: its data_type (field 2), 0 if absent. */
static const uint8_t *tensor_name(const uint8_t *p, size_t len, size_t *nlen, int64_t *onnx_type) {
  tp_pb r;
  tp_pb_field f;
  const uint8_t *name = NULL;
  *onnx_type = 0;
  tp_pb_init(&r, p, len, "TensorProto");
  while (tp_pb_next(&r, &f) > 0) {
    if (f.num == 8 && f.wire == TP_PB_LEN) name = f.data, *nlen = f.len;
    if (f.num == 2 && f.wire == TP_PB_VARINT) *onnx_type = (int64_t)f.u;
  }
  tp_clear_error();
  return name;
}

/* A float32 master copy saved as float16 or bfloat16: a finite value that
 * rounds to infinity there (float16: |v| >= 65520, the largest float16 being
 * 65504; bfloat16: |v| >= 0x1.ffp127, about 3.3962e38, the largest being
 * 0x1.fep127, about 3.3895e38) is an error naming the initializer and the
 * element, never an infinite weight in the saved file. Infinities and NaNs
 * already in the master copy are kept. */
static tp_status check_low_range(tp_tensor *v, tp_dtype dt, const char *name) {
  tp_tensor *c = NULL;
  int prev = tp_set_grad_enabled(0);
  tp_status s = tp_contiguous(v, &c);
  tp_set_grad_enabled(prev);
  if (s) return s;
  const float *p = tp_tensor_ptr(c);
  int64_t n = tp_tensor_numel(c);
  const float lim = dt == TP_F16 ? 65520.0f : 0x1.ffp127f;
  for (int64_t i = 0; i < n; i++)
    if (p[i] - p[i] == 0 && fabsf(p[i]) >= lim) {
      double bad = p[i];
      tp_tensor_release(c);
      return tp_fail(TP_ERR_VALUE,
                     "onnx model: save: initializer '%s' is %s, and its trained value [%lld] (flat index) is %g, "
                     "outside %s's range (largest %s): it would be saved as infinity",
                     name, tp_dtype_name(dt), (long long)i, bad, tp_dtype_name(dt),
                     dt == TP_F16 ? "65504" : "3.3895e+38");
    }
  tp_tensor_release(c);
  return TP_OK;
}

static int pick(const uint8_t *name, size_t nlen, int n, const char *const *names) {
  for (int k = 0; name && k < n; k++)
    if (strlen(names[k]) == nlen && !memcmp(names[k], name, nlen)) return k;
  return -1;
}

tp_status tp_onnx_replace_initializers(const uint8_t *bytes, size_t len, int n, const char *const *names,
                                       tp_tensor *const *vals, uint8_t **out, size_t *out_len) {
  *out = NULL, *out_len = 0;
  tp_pbw w = {0}, gw = {0};
  tp_pb r, g;
  tp_pb_field f, gf;
  tp_status s = TP_OK;
  int k, graphs = 0;
  uint8_t *written = n ? tp_calloc_sized((size_t)n, 1) : NULL;
  if (n && !written) return TP_ERR_OUT_OF_MEMORY;
  tp_pb_init(&r, bytes, len, "ModelProto");
  while (!s && (k = tp_pb_next(&r, &f)) > 0) {
    const uint8_t *raw = r.base + f.at; /* the field as it was: key and value */
    size_t rawlen = (size_t)(r.p - raw);
    if (f.num != 7 || f.wire != TP_PB_LEN) {
      tp_pbw_put(&w, raw, rawlen);
      continue;
    }
    graphs++;
    if ((s = tp_pb_sub(&r, &f, "GraphProto", &g))) break;
    gw.n = 0;
    while (!s && (k = tp_pb_next(&g, &gf)) > 0) {
      const uint8_t *graw = g.base + gf.at;
      size_t grawlen = (size_t)(g.p - graw);
      size_t nlen = 0;
      int64_t oty = 0;
      const uint8_t *nm = gf.num == 5 && gf.wire == TP_PB_LEN ? tensor_name(gf.data, gf.len, &nlen, &oty) : NULL;
      int j = pick(nm, nlen, n, names);
      if (j < 0 || written[j]) {
        tp_pbw_put(&gw, graw, grawlen);
        continue;
      }
      void *tb = NULL;
      size_t tl = 0;
      tp_dtype dt;
      tp_tensor *v = vals[j], *low = NULL;
      if (tp_onnx_to_dtype(oty, &dt) && (dt == TP_F16 || dt == TP_BF16) && v->dtype == TP_F32) {
        /* a float32 master copy: written back in the initializer's dtype */
        if ((s = check_low_range(v, dt, names[j]))) break;
        tp_attrs at;
        tp_attrs_init(&at);
        at.dtype = dt;
        int prev = tp_set_grad_enabled(0);
        s = tp_op_call(TP_OP_CAST, 1, &v, &at, &low);
        tp_set_grad_enabled(prev);
        if (s) break;
        v = low;
      }
      s = tp_onnx_tensor_encode(v, names[j], &tb, &tl);
      tp_tensor_release(low);
      if (s) break;
      tp_pbw_bytes(&gw, 5, tb, tl);
      tp_free(tb);
      written[j] = 1;
    }
    if (k < 0 && !s) s = (tp_status)-k;
    if (!s) tp_pbw_bytes(&w, 7, gw.p, gw.n);
  }
  if (k < 0 && !s) s = (tp_status)-k;
  for (int j = 0; !s && j < n; j++)
    if (!written[j]) s = tp_fail(TP_ERR_INVALID_ARG, "onnx model: save: the model has no initializer '%s'", names[j]);
  if (!s && graphs != 1) s = tp_fail(TP_ERR_PARSE, "onnx: save: the model has %d graphs (field 7), expected 1", graphs);
  if (!s && (w.oom || gw.oom)) s = tp_fail(TP_ERR_OUT_OF_MEMORY, "onnx model: save: out of memory");
  tp_free(gw.p);
  if (written) tp_free_sized(written, (size_t)n);
  if (s) {
    tp_free(w.p);
    return s;
  }
  if (!w.p && !(w.p = tp_alloc(1))) return TP_ERR_OUT_OF_MEMORY;
  *out = (uint8_t *)w.p, *out_len = w.n;
  return TP_OK;
}
