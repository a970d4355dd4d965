/* sample.c - grid_sample (ops.def): values of x read at the fractional
 * positions a grid names, with ONNX GridSample's semantics (opset 16/20,
 * 2-D and 3-D spatial):
 *
 *   - grid[n, o..., :] holds the normalized coordinates (x, y[, z]) in
 *     [-1, 1], the LAST spatial dim first; they are denormalized per dim of
 *     size d as ((g + 1) * d - 1) / 2 (align_corners 0: -1 and 1 are the
 *     outer edges of the corner pixels) or (g + 1) / 2 * (d - 1)
 *     (align_corners 1: the corner pixels' centers), rounded to float32 as
 *     ONNX's reference evaluator stores them;
 *   - nearest rounds half to even (nearbyint), in 2-D and 3-D (the
 *     expected outputs of ONNX 1.22's node tests; older versions of its
 *     evaluator rounded 3-D half away from zero);
 *   - a coordinate outside [lo, hi] (lo, hi = -0.5, d - 0.5, or 0, d - 1
 *     with align_corners) is first clamped to [0, d - 1] (border) or
 *     reflected into [lo, hi] (reflection); then every tap of the
 *     interpolation (2 per dim linear, 4 per dim cubic with Keys' a = -0.75,
 *     1 nearest) reads 0 outside the tensor (zeros), the clamped index
 *     (border) or the reflected index (reflection).
 *
 * One kernel computes in double and rounds each result to float32; the
 * reference (tp_op_exec_ref) is the same code. The independent checks are
 * ONNX's node tests (expected outputs of its evaluator) and the
 * hand-computed cases of tests/c/ops/test_ops.c. */
#include "ops.h"
#include <math.h>

enum { GS_LINEAR, GS_NEAREST, GS_CUBIC };
enum { GS_ZEROS, GS_BORDER, GS_REFLECTION };

/* ONNX's _gs_reflect: folds v into [lo, hi] by mirroring at the edges. */
static double reflect(double v, double lo, double hi) {
  double rng = hi - lo;
  if (!(rng > 0)) return lo;
  if (v < lo) {
    double dx = lo - v;
    double n = floor(dx / rng), r = dx - n * rng;
    return fmod(n, 2) == 0 ? lo + r : hi - r;
  }
  if (v > hi) {
    double dx = v - hi;
    double n = floor(dx / rng), r = dx - n * rng;
    return fmod(n, 2) == 0 ? hi - r : lo + r;
  }
  return v;
}

/* The index a tap at integer position i reads, or -1 for a zero. */
static int64_t tap(int64_t i, int64_t d, int pad, double lo, double hi) {
  if (pad == GS_ZEROS) return i >= 0 && i < d ? i : -1;
  if (pad == GS_BORDER) return i < 0 ? 0 : i >= d ? d - 1 : i;
  int64_t r = (int64_t)reflect((double)i, lo, hi); /* truncation, as int() */
  return r < 0 ? 0 : r >= d ? d - 1 : r;
}

static void cubic_coeffs(double t, double c[4]) {
  const double a = -0.75;
  double x = fabs(t);
  c[0] = ((a * (x + 1) - 5 * a) * (x + 1) + 8 * a) * (x + 1) - 4 * a;
  c[1] = ((a + 2) * x - (a + 3)) * x * x + 1;
  c[2] = ((a + 2) * (1 - x) - (a + 3)) * (1 - x) * (1 - x) + 1;
  c[3] = ((a * (2 - x) - 5 * a) * (2 - x) + 8 * a) * (2 - x) - 4 * a;
}

tp_status tp_grid_sample_exec(tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, tp_tensor **out) {
  const tp_tensor *x = in[0], *g = in[1];
  int k = x->ndim - 2, mode = (int)at->dim, pad = (int)at->dim1, ac = at->keepdim;
  int64_t N = x->shape[0], C = x->shape[1], S = 1, O = 1, dims[3];
  for (int i = 0; i < k; i++) dims[i] = x->shape[2 + i], S *= dims[i];
  for (int i = 0; i < k; i++) O *= g->shape[1 + i];
  int64_t nx = tp_tensor_numel(x), ng = tp_tensor_numel(g);
  float *X = tp_alloc(sizeof(float) * (size_t)(nx ? nx : 1)), *G = tp_alloc(sizeof(float) * (size_t)(ng ? ng : 1));
  tp_tensor *y = NULL;
  tp_status s = X && G ? tp_tensor_empty(TP_F32, od->ndim, od->shape, &y) : TP_ERR_OUT_OF_MEMORY;
  if (s) {
    tp_free(X);
    tp_free(G);
    return s;
  }
  tp_tensor_gather(x, X);
  tp_tensor_gather(g, G);
  float *Y = tp_tensor_ptr(y);
  double lo[3], hi[3];
  for (int i = 0; i < k; i++) {
    lo[i] = ac ? 0.0 : -0.5;
    hi[i] = ac ? (double)dims[i] - 1 : (double)dims[i] - 0.5;
  }
  int ntap = mode == GS_NEAREST ? 1 : mode == GS_LINEAR ? 2 : 4, ncomb = 1;
  for (int i = 0; i < k; i++) ncomb *= ntap;
  for (int64_t n = 0; n < N; n++)
    for (int64_t o = 0; o < O; o++) {
      const float *gp = G + (n * O + o) * k;
      int64_t idx[3][4];
      double w[3][4];
      int nan = 0;
      for (int i = 0; i < k; i++) { /* spatial dim i takes grid component k-1-i */
        double gv = gp[k - 1 - i], d = (double)dims[i];
        double v = (float)(ac ? (gv + 1) / 2.0 * (d - 1) : ((gv + 1) * d - 1) / 2.0);
        if (mode == GS_NEAREST) v = nearbyint(v);
        if (v < lo[i] || v > hi[i]) {
          if (pad == GS_BORDER) v = v < 0 ? 0 : v > d - 1 ? d - 1 : v;
          else if (pad == GS_REFLECTION) v = (float)reflect(v, lo[i], hi[i]);
        }
        if (isnan(v)) nan = 1;
        if (!isfinite(v) || fabs(v) > 1e15) { /* NaN, or (zeros) no tap inside */
          for (int q = 0; q < ntap; q++) idx[i][q] = -1, w[i][q] = 0;
          continue;
        }
        if (mode == GS_NEAREST) {
          idx[i][0] = tap((int64_t)v, dims[i], pad, lo[i], hi[i]); /* v is whole: the int32 cast */
          w[i][0] = 1;
          continue;
        }
        double f = floor(v);
        int64_t i0 = (int64_t)f;
        double t = v - f;
        if (mode == GS_LINEAR) {
          w[i][0] = 1 - fabs(t), w[i][1] = fabs(t);
          for (int q = 0; q < 2; q++) idx[i][q] = tap(i0 + q, dims[i], pad, lo[i], hi[i]);
        } else {
          cubic_coeffs(t, w[i]);
          for (int q = 0; q < 4; q++) idx[i][q] = tap(i0 - 1 + q, dims[i], pad, lo[i], hi[i]);
        }
      }
      for (int64_t c = 0; c < C; c++) {
        const float *xp = X + (n * C + c) * S;
        double acc = 0;
        for (int comb = 0; comb < ncomb; comb++) {
          int rem = comb, zero = 0;
          double wt = 1;
          int64_t pos = 0, stride = 1;
          for (int i = k - 1; i >= 0; i--, rem /= ntap) { /* the tap of dim i: digit i of comb */
            int64_t j = idx[i][rem % ntap];
            if (j < 0) zero = 1;
            wt *= w[i][rem % ntap];
            pos += j * stride;
            stride *= dims[i];
          }
          if (!zero) acc += wt * (double)xp[pos];
        }
        Y[(n * C + c) * O + o] = nan ? NAN : (float)acc;
      }
    }
  tp_free(X);
  tp_free(G);
  *out = y;
  return TP_OK;
}

/* RoiAlign's bilinear sample at (yy, xx) of an H x W map, as onnxruntime
 * does it: outside [-1, H] x [-1, W] no taps (index -1, weight 0), else
 * clamped to the map; the four taps' weights and flat indices. Shared by
 * the forward (below) and its derivative (derivatives.c). */
void tp_roi_bilinear(double yy, double xx, int64_t H, int64_t W, double wq[4], int64_t pq[4]) {
  for (int q = 0; q < 4; q++) wq[q] = 0, pq[q] = -1;
  if (yy < -1.0 || yy > (double)H || xx < -1.0 || xx > (double)W) return;
  if (yy < 0) yy = 0;
  if (xx < 0) xx = 0;
  int64_t yl = (int64_t)yy, xl = (int64_t)xx, yh, xh;
  if (yl >= H - 1) yh = yl = H - 1, yy = (double)yl;
  else yh = yl + 1;
  if (xl >= W - 1) xh = xl = W - 1, xx = (double)xl;
  else xh = xl + 1;
  double ly = yy - (double)yl, lx = xx - (double)xl, hy = 1 - ly, hx = 1 - lx;
  wq[0] = hy * hx, wq[1] = hy * lx, wq[2] = ly * hx, wq[3] = ly * lx;
  pq[0] = yl * W + xl, pq[1] = yl * W + xh, pq[2] = yh * W + xl, pq[3] = yh * W + xh;
}

/* roi_align (ops.def), ONNX RoiAlign: per region r, bin (ph, pw), a grid
 * of sampling points (sampling_ratio per side, or ceil(roi size / output
 * size) when 0), each read bilinearly: a point below -1 or beyond the
 * size reads 0, one in [-1, 0) reads at 0, the last row / column clamps.
 * avg: the mean of the points; max: the max over points of the largest of
 * the four weighted corners (ONNX's reference and onnxruntime). Region
 * coordinates * spatial_scale, minus 0.5 for half_pixel; without it a
 * region is at least 1 x 1. A batch index outside [0, N) or a non-finite
 * region coordinate is an error. */
tp_status tp_roi_align_exec(tp_tensor *const *in, const tp_attrs *at, const tp_desc *od, tp_tensor **out) {
  const tp_tensor *x = in[0], *rois = in[1], *bi = in[2];
  int64_t N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3], R = od->shape[0];
  int64_t PH = at->ints[0], PW = at->ints[1], sr = at->ints[2];
  int maxmode = at->dim == 1, half = at->keepdim;
  double scale = at->eps, offs = half ? 0.5 : 0.0;
  int64_t nx = tp_tensor_numel(x);
  float *X = tp_alloc(sizeof(float) * (size_t)(nx ? nx : 1));
  tp_tensor *y = NULL;
  tp_status s = X ? tp_tensor_empty(TP_F32, od->ndim, od->shape, &y) : TP_ERR_OUT_OF_MEMORY;
  if (s) {
    tp_free(X);
    return s;
  }
  tp_tensor_gather(x, X);
  float *Y = tp_tensor_ptr(y);
  for (int64_t r = 0; r < R && !s; r++) {
    double b = tp_tensor_get_f64(bi, r);
    if (!(b >= 0 && b < (double)N)) {
      s = tp_fail(TP_ERR_INVALID_ARG, "roi_align: batch index %.0f of region %lld is out of range for %lld images", b,
                  (long long)r, (long long)N);
      break;
    }
    double x0 = tp_tensor_get_f64(rois, r * 4 + 0) * scale - offs, y0 = tp_tensor_get_f64(rois, r * 4 + 1) * scale - offs;
    double x1 = tp_tensor_get_f64(rois, r * 4 + 2) * scale - offs, y1 = tp_tensor_get_f64(rois, r * 4 + 3) * scale - offs;
    if (!(x0 - x0 == 0 && y0 - y0 == 0 && x1 - x1 == 0 && y1 - y1 == 0)) {
      s = tp_fail(TP_ERR_INVALID_ARG, "roi_align: region %lld has a non-finite coordinate", (long long)r);
      break;
    }
    double rw = x1 - x0, rh = y1 - y0;
    if (!half) rw = rw > 1 ? rw : 1, rh = rh > 1 ? rh : 1;
    double bh = rh / (double)PH, bw = rw / (double)PW;
    double gh_d = sr > 0 ? (double)sr : ceil(rh / (double)PH), gw_d = sr > 0 ? (double)sr : ceil(rw / (double)PW);
    if (!(gh_d < 65536 && gw_d < 65536)) { /* NaN, or absurdly many points */
      s = tp_fail(TP_ERR_INVALID_ARG, "roi_align: region %lld needs %g x %g sampling points per bin", (long long)r, gh_d, gw_d);
      break;
    }
    int64_t gh = gh_d > 0 ? (int64_t)gh_d : 0, gw = gw_d > 0 ? (int64_t)gw_d : 0;
    double count = gh * gw > 1 ? (double)(gh * gw) : 1.0;
    for (int64_t c = 0; c < C; c++) {
      const float *xp = X + ((int64_t)b * C + c) * H * W;
      for (int64_t ph = 0; ph < PH; ph++)
        for (int64_t pw = 0; pw < PW; pw++) {
          double acc = 0;
          int first = 1;
          for (int64_t iy = 0; iy < gh; iy++)
            for (int64_t ix = 0; ix < gw; ix++) {
              double yy = y0 + (double)ph * bh + ((double)iy + 0.5) * bh / (double)gh;
              double xx = x0 + (double)pw * bw + ((double)ix + 0.5) * bw / (double)gw;
              double v[4], wq[4];
              int64_t pq[4];
              tp_roi_bilinear(yy, xx, H, W, wq, pq);
              for (int q = 0; q < 4; q++) v[q] = pq[q] >= 0 ? wq[q] * xp[pq[q]] : 0;
              if (maxmode) {
                double mv = v[0];
                for (int q = 1; q < 4; q++) mv = v[q] > mv ? v[q] : mv;
                acc = first || mv > acc ? mv : acc;
                first = 0;
              } else {
                acc += v[0] + v[1] + v[2] + v[3];
              }
            }
          Y[((r * C + c) * PH + ph) * PW + pw] = (float)(maxmode ? acc : acc / count);
        }
    }
  }
  tp_free(X);
  if (s) tp_tensor_release(y);
  else *out = y;
  return s;
}
