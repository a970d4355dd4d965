/* linalg.c - det: the determinant of each trailing n x n matrix of a
 * float32 [..., n, n] tensor (n = 0: 1). The eager kernel factors each
 * matrix by LU with partial pivoting in double; the reference expands
 * by Gaussian elimination with complete pivoting in long double. A
 * singular matrix gives 0 (a zero pivot), never a division by zero. */
#include "ops.h"
#include <math.h>

static int64_t mat_count(const tp_desc *od) { return tp_shape_numel(od->ndim, od->shape); }

tp_status tp_det_exec(tp_tensor *const *in, const tp_desc *od, int reference, tp_tensor **out) {
  tp_tensor *x = NULL, *y = NULL;
  tp_status s;
  int64_t n = in[0]->shape[in[0]->ndim - 1], cnt = mat_count(od);
  if ((s = tp_contiguous(in[0], &x)) || (s = tp_tensor_empty(TP_F32, od->ndim, od->shape, &y))) goto done;
  size_t nn = (size_t)(n * n);
  long double *a = tp_alloc(sizeof(long double) * (nn ? nn : 1));
  if (!a) {
    s = TP_ERR_OUT_OF_MEMORY;
    goto done;
  }
  const float *p = tp_tensor_ptr(x);
  float *q = y->storage->data;
  for (int64_t b = 0; b < cnt; b++) {
    long double det = 1;
    if (!reference) { /* LU, partial pivoting, in double */
      double *d = (double *)a; /* reuse the buffer: doubles fit in long doubles' room */
      for (size_t i = 0; i < nn; i++) d[i] = p[(size_t)b * nn + i];
      double dd = 1;
      for (int64_t k = 0; k < n && dd != 0; k++) {
        int64_t piv = k;
        for (int64_t i = k + 1; i < n; i++)
          if (fabs(d[i * n + k]) > fabs(d[piv * n + k])) piv = i;
        if (d[piv * n + k] == 0) {
          dd = 0;
          break;
        }
        if (piv != k) {
          for (int64_t j = 0; j < n; j++) {
            double t = d[k * n + j];
            d[k * n + j] = d[piv * n + j], d[piv * n + j] = t;
          }
          dd = -dd;
        }
        dd *= d[k * n + k];
        for (int64_t i = k + 1; i < n; i++) {
          double f = d[i * n + k] / d[k * n + k];
          for (int64_t j = k + 1; j < n; j++) d[i * n + j] -= f * d[k * n + j];
        }
      }
      det = dd;
    } else { /* complete pivoting, long double */
      for (size_t i = 0; i < nn; i++) a[i] = p[(size_t)b * nn + i];
      for (int64_t k = 0; k < n && det != 0; k++) {
        int64_t pr = k, pc = k;
        for (int64_t i = k; i < n; i++)
          for (int64_t j = k; j < n; j++)
            if (fabsl(a[i * n + j]) > fabsl(a[pr * n + pc])) pr = i, pc = j;
        long double pv = a[pr * n + pc];
        if (pv == 0) {
          det = 0;
          break;
        }
        if (pr != k) {
          for (int64_t j = 0; j < n; j++) {
            long double t = a[k * n + j];
            a[k * n + j] = a[pr * n + j], a[pr * n + j] = t;
          }
          det = -det;
        }
        if (pc != k) {
          for (int64_t i = 0; i < n; i++) {
            long double t = a[i * n + k];
            a[i * n + k] = a[i * n + pc], a[i * n + pc] = t;
          }
          det = -det;
        }
        det *= pv;
        for (int64_t i = k + 1; i < n; i++) {
          long double f = a[i * n + k] / pv;
          for (int64_t j = k; j < n; j++) a[i * n + j] -= f * a[k * n + j];
        }
      }
    }
    q[b] = (float)det;
  }
  tp_free(a);
  *out = y;
  y = NULL;
done:
  tp_tensor_release(x);
  tp_tensor_release(y);
  return s;
}
