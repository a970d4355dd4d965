/* test_ops_sample.c - grid_sample and roi_align (src/ops/sample.c) against
 * values computed by hand from ONNX GridSample's and RoiAlign's
 * definitions: every mode, every padding mode, both align_corners, 2-D and
 * 3-D, avg and max, both coordinate modes, and the errors. */
#include "op_expect.h"

static tp_attrs Ags(int mode, int pad, int ac) {
  tp_attrs a = A0();
  a.dim = mode;
  a.dim1 = pad;
  a.keepdim = ac;
  return a;
}
enum { LIN, NEAR, CUB };
enum { ZEROS, BORDER, REFL };

static void test_grid_sample_2d(void) {
  /* x = [[1 2 3] [4 5 6]] (H 2, W 3) */
  tp_tensor *x = F32((1, 1, 2, 3), 1, 2, 3, 4, 5, 6);
  /* (x, y) points: (0, 0), (-1, -1), (0.5, 1), (1.5, 0) */
  tp_tensor *g = F32((1, 1, 4, 2), 0, 0, -1, -1, 0.5f, 1, 1.5f, 0);
  /* align_corners 1: px = gx + 1, py = (gy + 1) / 2. (1, .5) is the mean
   * of 2 and 5; (2.5, .5) has its right taps outside: zeros 0.5 * (3 + 6)
   * / 2, border clamps to px 2 ((3 + 6) / 2), reflection folds 2.5 to 1.5
   * ((2 + 5 + 3 + 6) / 4) */
  EXPECT(OPA(TP_OP_GRID_SAMPLE, Ags(LIN, ZEROS, 1), x, g), TP_F32, (1, 1, 1, 4), 3.5, 1, 5.5, 2.25);
  EXPECT(OPA(TP_OP_GRID_SAMPLE, Ags(LIN, BORDER, 1), x, g), TP_F32, (1, 1, 1, 4), 3.5, 1, 5.5, 4.5);
  EXPECT(OPA(TP_OP_GRID_SAMPLE, Ags(LIN, REFL, 1), x, g), TP_F32, (1, 1, 1, 4), 3.5, 1, 5.5, 4.0);
  /* align_corners 0: px = (3 (gx + 1) - 1) / 2, py = (2 (gy + 1) - 1) / 2;
   * nearest rounds half to even: (1, .5) -> (1, 0) = 2; (-.5, -.5) -> (0,
   * 0) = 1; (1.75, 1.5) -> (2, 2): row 2 is outside (zeros 0; border: 6);
   * (3.25, .5) -> (3, 0): outside (zeros 0; border: (2, 0) = 3) */
  EXPECT(OPA(TP_OP_GRID_SAMPLE, Ags(NEAR, ZEROS, 0), x, g), TP_F32, (1, 1, 1, 4), 2, 1, 0, 0);
  EXPECT(OPA(TP_OP_GRID_SAMPLE, Ags(NEAR, BORDER, 0), x, g), TP_F32, (1, 1, 1, 4), 2, 1, 6, 3);
  /* bicubic (Keys, a = -0.75) at px 0.5, py 0 (align_corners 1): the
   * weights at t = .5 are -0.09375, 0.59375, 0.59375, -0.09375 on columns
   * -1, 0, 1, 2 of row 0; column -1 reads 1 (border) or 0 (zeros) */
  tp_tensor *gc = F32((1, 1, 2, 2), -0.5f, -1, 0, -1);
  EXPECT(OPA(TP_OP_GRID_SAMPLE, Ags(CUB, BORDER, 1), x, gc), TP_F32, (1, 1, 1, 2), 1.40625, 2);
  EXPECT(OPA(TP_OP_GRID_SAMPLE, Ags(CUB, ZEROS, 1), x, gc), TP_F32, (1, 1, 1, 2), 1.5, 2);
  /* two channels share the grid */
  tp_tensor *x2 = F32((1, 2, 1, 2), 1, 3, 10, 30), *g2 = F32((1, 1, 1, 2), 0, 0);
  EXPECT(OPA(TP_OP_GRID_SAMPLE, Ags(LIN, ZEROS, 1), x2, g2), TP_F32, (1, 2, 1, 1), 2, 20);
}

static void test_grid_sample_3d(void) {
  /* x = 1..8 as [D 2, H 2, W 2]; (0, 0, 0) is the mean of all, (1, -1, 1)
   * is (d 1, h 0, w 1) = 6 */
  tp_tensor *x = F32((1, 1, 2, 2, 2), 1, 2, 3, 4, 5, 6, 7, 8);
  tp_tensor *g = F32((1, 1, 1, 2, 3), 0, 0, 0, 1, -1, 1);
  EXPECT(OPA(TP_OP_GRID_SAMPLE, Ags(LIN, ZEROS, 1), x, g), TP_F32, (1, 1, 1, 1, 2), 4.5, 6);
  EXPECT(OPA(TP_OP_GRID_SAMPLE, Ags(NEAR, ZEROS, 1), x, g), TP_F32, (1, 1, 1, 1, 2), 1, 6);
}

static void test_grid_sample_errors(void) {
  tp_tensor *x = F32((1, 1, 2, 2), 1, 2, 3, 4), *g = F32((1, 1, 1, 2), 0, 0);
  ERRA(TP_OP_GRID_SAMPLE, Ags(LIN, ZEROS, 0), (F32((1, 2), 1, 2), g), TP_ERR_INVALID_ARG, "x must be");
  ERRA(TP_OP_GRID_SAMPLE, Ags(LIN, ZEROS, 0), (x, F32((1, 1, 1, 3), 0, 0, 0)), TP_ERR_INVALID_ARG, "grid must be");
  ERRA(TP_OP_GRID_SAMPLE, Ags(LIN, ZEROS, 0), (x, F32((2, 1, 1, 2), 0, 0, 0, 0)), TP_ERR_INVALID_ARG, "grid must be");
  ERRA(TP_OP_GRID_SAMPLE, Ags(3, ZEROS, 0), (x, g), TP_ERR_INVALID_ARG, "mode 3");
  ERRA(TP_OP_GRID_SAMPLE, Ags(LIN, 5, 0), (x, g), TP_ERR_INVALID_ARG, "padding 5");
  ERRA(TP_OP_GRID_SAMPLE, Ags(LIN, ZEROS, 0), (I32((1, 1, 1, 1), 1), g), TP_ERR_INVALID_ARG, "float32");
}

static tp_attrs Aroi(int64_t oh, int64_t ow, int64_t sr, int maxmode, int half) {
  tp_attrs a = A0();
  a.nints = 3;
  a.ints[0] = oh, a.ints[1] = ow, a.ints[2] = sr;
  a.dim = maxmode;
  a.keepdim = half;
  a.eps = 1.0;
  return a;
}

/* roi_align on x = [[1 2] [3 4]]: region (0,0)-(1,1) with one sample at
 * (.5, .5) = 2.5 (avg) or max(.25 * {1 2 3 4}) = 1 (max); half_pixel moves
 * it to (0, 0) = 1; (0,0)-(2,2): one sample at (1, 1) = 4 (the last row
 * and column clamp), adaptive 2 x 2 samples at .5 and 1.5: (2.5 + 3 + 3.5
 * + 4) / 4; a region beyond the image reads 0. */
static void test_roi_align(void) {
  tp_tensor *x = F32((1, 1, 2, 2), 1, 2, 3, 4);
  tp_tensor *rois = F32((3, 4), 0, 0, 1, 1, 0, 0, 2, 2, 5, 5, 6, 6), *bi = I64((3), 0, 0, 0);
  EXPECT(OPA(TP_OP_ROI_ALIGN, Aroi(1, 1, 1, 0, 0), x, rois, bi), TP_F32, (3, 1, 1, 1), 2.5, 4, 0);
  EXPECT(OPA(TP_OP_ROI_ALIGN, Aroi(1, 1, 1, 1, 0), x, rois, bi), TP_F32, (3, 1, 1, 1), 1, 4, 0);
  EXPECT(OPA(TP_OP_ROI_ALIGN, Aroi(1, 1, 0, 0, 0), x, rois, bi), TP_F32, (3, 1, 1, 1), 2.5, 3.25, 0);
  EXPECT(OPA(TP_OP_ROI_ALIGN, Aroi(1, 1, 1, 0, 1), x, F32((1, 4), 0, 0, 1, 1), I32((1), 0)), TP_F32, (1, 1, 1, 1), 1);
  /* a 2 x 1 output over (0,0)-(2,2): rows at y .5 and 1.5 (clamped to 1) */
  EXPECT(OPA(TP_OP_ROI_ALIGN, Aroi(2, 1, 1, 0, 0), x, F32((1, 4), 0, 0, 2, 2), I32((1), 0)), TP_F32, (1, 1, 2, 1), 3,
         4);
  ERRA(TP_OP_ROI_ALIGN, Aroi(1, 1, 1, 0, 0), (x, F32((1, 4), 0, 0, 1, 1), I64((1), 1)), TP_ERR_INVALID_ARG,
       "batch index 1 of region 0 is out of range");
  ERRA(TP_OP_ROI_ALIGN, Aroi(1, 1, 1, 0, 0), (x, F32((1, 4), 0, 0, 1, 1), I64((1), -1)), TP_ERR_INVALID_ARG,
       "batch index -1");
  ERRA(TP_OP_ROI_ALIGN, Aroi(1, 1, 1, 0, 0), (x, F32((1, 3), 0, 0, 1), I64((1), 0)), TP_ERR_INVALID_ARG, "rois must be");
  ERRA(TP_OP_ROI_ALIGN, Aroi(1, 1, 1, 0, 0), (x, F32((1, 4), 0, NAN, 1, 1), I64((1), 0)), TP_ERR_INVALID_ARG,
       "region 0 has a non-finite coordinate");
  ERRA(TP_OP_ROI_ALIGN, Aroi(1, 1, 2, 0, 0), (x, F32((1, 4), 0, 0, INFINITY, 1), I64((1), 0)), TP_ERR_INVALID_ARG,
       "non-finite");
  ERRA(TP_OP_ROI_ALIGN, Aroi(1, 1, 1, 0, 0), (x, rois, I64((2), 0, 0)), TP_ERR_INVALID_ARG, "batch_indices must be");
  ERRA(TP_OP_ROI_ALIGN, Aroi(0, 1, 1, 0, 0), (x, rois, bi), TP_ERR_INVALID_ARG, "output_height >= 1");
  ERRA(TP_OP_ROI_ALIGN, Aroi(1, 1, 1, 2, 0), (x, rois, bi), TP_ERR_INVALID_ARG, "mode 2");
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  size_t live0 = tp_live_tensors();
  static const op_test tests[] = {{"test_grid_sample_2d", test_grid_sample_2d},
                                   {"test_grid_sample_3d", test_grid_sample_3d},
                                   {"test_grid_sample_errors", test_grid_sample_errors},
                                   {"test_roi_align", test_roi_align}};
  run_op_tests(tests, sizeof tests / sizeof tests[0]);
  if (tp_live_tensors() != live0) FAILF("leak: %zu live tensors at the end, %zu at the start", tp_live_tensors(), live0);
  printf("test_ops_sample: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
