/* test_onnx_resize_bilinear.c - ONNX Resize, mode linear over the last two
 * axes of a rank-4 or rank-2 float32 input (the bilinear case), against two
 * references:
 *   - onnxruntime's CPU formula (UpsampleBilinear), written out here in
 *     float32 as its source computes it: the source coordinate per output
 *     row and column in float32, the neighbours i1 = trunc(c) and
 *     i2 = min(i1 + 1, n - 1), the distances d1 = |c - i1|, d2 = |c - i2|
 *     (0.5 each where i1 == i2), and
 *       y = ((d2x d2y) X11 + (d1x d2y) X21) + (d2x d1y) X12 + (d1x d1y) X22;
 *     the import must give these values bit for bit (a quantized model that
 *     re-quantizes after a Resize depends on it: docs/onnx.md, "Real models
 *     from npm packages");
 *   - the exact bilinear value in double precision (ONNX's definition, the
 *     coordinates in double): within 4e-6 relative of the largest |x|.
 * Every coordinate_transformation_mode but tf_crop_and_resize, scales and
 * sizes, up- and downsampling by non-dyadic factors; the input is fed at run
 * time. A single resized axis still takes the per-axis path (checked against
 * the double-precision value only). */
#include "check.h"
#include "onnx_build.h"

#include <math.h>

static tp_pbw attr_str(const char *name, const char *v) {
  tp_pbw a = {0};
  str(&a, 1, name);
  tp_pbw_bytes(&a, 4, v, strlen(v));
  tp_pbw_varint(&a, 20, 3); /* STRING */
  return a;
}

/* initializer 'name' of n values: float32 (elem 1) or int64 (elem 7) */
static void init_1d(tp_pbw *g, const char *name, int elem, int n, const double *v) {
  tp_pbw t = {0};
  tp_pbw_varint(&t, 1, (uint64_t)n);
  tp_pbw_varint(&t, 2, (uint64_t)elem);
  str(&t, 8, name);
  if (elem == 1) {
    float f[8];
    for (int i = 0; i < n; i++) f[i] = (float)v[i];
    tp_pbw_bytes(&t, 9, f, sizeof(float) * (size_t)n);
  } else {
    int64_t q[8];
    for (int i = 0; i < n; i++) q[i] = (int64_t)v[i];
    tp_pbw_bytes(&t, 9, q, sizeof(int64_t) * (size_t)n);
  }
  sub(g, 5, &t);
}

enum { HALF_PIXEL, PYTORCH, ALIGN, ASYM, SYM };
static const char *const CTM[] = {"half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                                  "half_pixel_symmetric"};

/* onnxruntime's source coordinate (float32), the resized length taken as
 * scale x in as ONNX's reference takes it */
static float coord_f(int ctm, int64_t i, float scale, int64_t out, int64_t in) {
  float x = (float)i, len = scale * (float)in, fin = (float)in;
  if (scale == 1) return x;
  switch (ctm) {
    case ALIGN: return len == 1 ? 0.0f : x * (fin - 1) / (len - 1);
    case ASYM: return x / scale;
    case PYTORCH: return len > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
    case SYM: {
      float adj = (float)out / len, center = fin / 2, off = center * (1 - adj);
      return off + (x + 0.5f) / scale - 0.5f;
    }
    default: return (x + 0.5f) / scale - 0.5f;
  }
}

static double coord_d(int ctm, int64_t i, double scale, int64_t out, int64_t in) {
  double x = (double)i, len = scale * (double)in;
  if (scale == 1) return x;
  switch (ctm) {
    case ALIGN: return len == 1 ? 0 : x * (double)(in - 1) / (len - 1);
    case ASYM: return x / scale;
    case PYTORCH: return len > 1 ? (x + 0.5) / scale - 0.5 : 0;
    case SYM: return (double)in / 2 * (1 - (double)out / len) + (x + 0.5) / scale - 0.5;
    default: return (x + 0.5) / scale - 0.5;
  }
}

static void taps_f(int ctm, int64_t i, float scale, int64_t out, int64_t in, int64_t *a, int64_t *b, float *d1, float *d2) {
  float c = coord_f(ctm, i, scale, out, in), hi = (float)(in - 1);
  c = c < 0 ? 0 : c > hi ? hi : c;
  *a = (int64_t)c < in - 1 ? (int64_t)c : in - 1;
  *b = *a + 1 < in - 1 ? *a + 1 : in - 1;
  *d1 = fabsf(c - (float)*a), *d2 = fabsf(c - (float)*b);
  if (*a == *b) *d1 = *d2 = 0.5f;
}

static void taps_d(int ctm, int64_t i, double scale, int64_t out, int64_t in, int64_t *a, int64_t *b, double *t) {
  double c = coord_d(ctm, i, scale, out, in);
  c = c < 0 ? 0 : c > (double)(in - 1) ? (double)(in - 1) : c;
  *a = (int64_t)floor(c);
  *b = *a + 1 < in ? *a + 1 : in - 1;
  *t = c - (double)*a;
}

/* One case: x [lead.., H, W] resized to [OH, OW] by scales (sc) or sizes. */
static void one(int line, int ctm, int rank, int64_t H, int64_t W, int use_sizes, double s0, double s1) {
  int64_t lead = rank == 4 ? 2 * 3 : 1, C = rank == 4 ? 3 : 1;
  int64_t OH = use_sizes ? (int64_t)s0 : (int64_t)floor(s0 * (double)H);
  int64_t OW = use_sizes ? (int64_t)s1 : (int64_t)floor(s1 * (double)W);
  float fh = use_sizes ? (float)OH / (float)H : (float)s0, fw = use_sizes ? (float)OW / (float)W : (float)s1;
  char xd[64], yd[64];
  if (rank == 4) {
    snprintf(xd, sizeof xd, "2,%lld,%lld,%lld", (long long)C, (long long)H, (long long)W);
    snprintf(yd, sizeof yd, "2,%lld,%lld,%lld", (long long)C, (long long)OH, (long long)OW);
  } else {
    snprintf(xd, sizeof xd, "%lld,%lld", (long long)H, (long long)W);
    snprintf(yd, sizeof yd, "%lld,%lld", (long long)OH, (long long)OW);
  }
  tp_pbw g = {0};
  value_info(&g, 11, "x", 1, xd);
  double p4[4] = {1, 1, s0, s1}, p2[2] = {s0, s1};
  if (rank == 4 && use_sizes) p4[0] = 2, p4[1] = (double)C;
  init_1d(&g, use_sizes ? "sizes" : "scales", use_sizes ? 7 : 1, rank, rank == 4 ? p4 : p2);
  tp_pbw at[2] = {attr_str("mode", "linear"), attr_str("coordinate_transformation_mode", CTM[ctm])};
  node(&g, "Resize", use_sizes ? L("x", "", "", "sizes") : L("x", "", "scales"), L("y"), 2, at);
  value_info(&g, 12, "y", 1, yd);
  size_t len;
  uint8_t *b = finish_opset(&g, 19, &len);
  tp_graph *gr = NULL;
  tp_status s = tp_onnx_load(b, len, &gr);
  tp_free_buffer(b);
  if (s) {
    FAILF_AT(line, "load: %s", tp_last_error());
    return;
  }
  int64_t n = lead * H * W, on = lead * OH * OW, xs[4] = {2, C, H, W};
  if (rank == 2) xs[0] = H, xs[1] = W;
  float *x = malloc(sizeof(float) * (size_t)n), *y = malloc(sizeof(float) * (size_t)on);
  double amax = 0;
  for (int64_t i = 0; i < n; i++) {
    x[i] = (float)(sin((double)i * 0.77 + 0.3) * 300.0 + cos((double)i * 2.1) * 0.123456);
    amax = fmax(amax, fabs(x[i]));
  }
  tp_tensor *in = NULL, *out[1] = {0};
  int nout = 0;
  CHECK_OK(tp_tensor_new(TP_F32, rank, xs, x, &in));
  s = tp_graph_run(gr, 1, &in, 1, out, &nout);
  if (s || nout != 1 || tp_tensor_numel(out[0]) != on || tp_tensor_read(out[0], y, sizeof(float) * (size_t)on)) {
    FAILF_AT(line, "run: status %d (%s)", (int)s, s ? tp_last_error() : "wrong output size");
  } else {
    int both = OH != H && OW != W; /* the bilinear case: onnxruntime's bits */
    int64_t bad_bits = 0, bad_val = 0, first = -1;
    for (int64_t c = 0; c < lead; c++)
      for (int64_t i = 0; i < OH; i++)
        for (int64_t j = 0; j < OW; j++) {
          const float *X = x + c * H * W;
          float got = y[(c * OH + i) * OW + j];
          int64_t y1, y2, x1, x2;
          float dy1, dy2, dx1, dx2;
          taps_f(ctm, i, fh, OH, H, &y1, &y2, &dy1, &dy2);
          taps_f(ctm, j, fw, OW, W, &x1, &x2, &dx1, &dx2);
          float ort = dx2 * dy2 * X[y1 * W + x1] + dx1 * dy2 * X[y1 * W + x2] + dx2 * dy1 * X[y2 * W + x1] +
                      dx1 * dy1 * X[y2 * W + x2];
          double ty, tx;
          int64_t a1, a2, b1, b2;
          taps_d(ctm, i, fh, OH, H, &a1, &a2, &ty);
          taps_d(ctm, j, fw, OW, W, &b1, &b2, &tx);
          double exact = (1 - ty) * ((1 - tx) * X[a1 * W + b1] + tx * X[a1 * W + b2]) +
                         ty * ((1 - tx) * X[a2 * W + b1] + tx * X[a2 * W + b2]);
          if (both && memcmp(&got, &ort, sizeof got)) bad_bits++, first = first < 0 ? (c * OH + i) * OW + j : first;
          if (!(fabs(got - exact) <= 4e-6 * amax)) bad_val++;
        }
    if (bad_bits)
      FAILF_AT(line, "%s %lldx%lld -> %lldx%lld: %lld of %lld values differ from onnxruntime's float32 formula (first at %lld)",
               CTM[ctm], (long long)H, (long long)W, (long long)OH, (long long)OW, (long long)bad_bits, (long long)on,
               (long long)first);
    if (bad_val)
      FAILF_AT(line, "%s %lldx%lld -> %lldx%lld: %lld values off the exact bilinear value by more than 4e-6 max|x|",
               CTM[ctm], (long long)H, (long long)W, (long long)OH, (long long)OW, (long long)bad_val);
  }
  tp_tensor_release(out[0]);
  tp_tensor_release(in);
  tp_graph_free(gr);
  free(x);
  free(y);
}

/* A scale that makes an axis longer than 2^24 is refused at load naming the
 * scale, the axis and the length it would give (not a saturated size). */
static void too_long(void) {
  tp_pbw g = {0};
  value_info(&g, 11, "x", 1, "1,1,5,7");
  init_1d(&g, "scales", 1, 4, (const double[]){1, 1, 1e30, 2});
  tp_pbw at[1] = {attr_str("mode", "linear")};
  node(&g, "Resize", L("x", "", "scales"), L("y"), 1, at);
  value_info(&g, 12, "y", 1, "1,1,5,14");
  size_t len;
  uint8_t *b = finish_opset(&g, 19, &len);
  tp_graph *gr = NULL;
  tp_status s = tp_onnx_load(b, len, &gr);
  tp_free_buffer(b);
  const char *msg = tp_last_error();
  CHECKF(s != TP_OK && strstr(msg, "scales[2] = 1e+30") && strstr(msg, "axis 2") && strstr(msg, "5e+30"),
         "load: status %d, error '%s'", (int)s, msg);
  tp_graph_free(gr);
}

int main(void) {
  for (int ctm = 0; ctm < 5; ctm++) {
    one(__LINE__, ctm, 4, 5, 7, 0, 2, 2);     /* the ISNet case: 2x */
    one(__LINE__, ctm, 4, 5, 7, 0, 1.7, 2.6); /* non-dyadic upsampling */
    one(__LINE__, ctm, 4, 9, 11, 0, 0.6, 0.45); /* downsampling */
    one(__LINE__, ctm, 4, 6, 5, 1, 13, 3);    /* sizes */
    one(__LINE__, ctm, 2, 5, 7, 1, 8, 16);    /* rank 2 */
    one(__LINE__, ctm, 4, 5, 7, 0, 1, 2.5);   /* one axis: the per-axis path */
  }
  too_long();
  CHECK(tp_live_tensors() == 0);
  if (failures) printf("%d check(s) failed\n", failures);
  else printf("ok\n");
  return failures != 0;
}
