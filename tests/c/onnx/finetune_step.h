/* finetune_step.h - shared by the ONNX fine-tuning tests (float32 and
 * float16 initializers): the parameters W [3,4] and b [4] after a
 * backward pass. Their gradients must equal the double reference dw, db
 * (within 1e-5); one SGD step (lr 0.1) must move W to w - 0.1 dw; w and b
 * then hold the parameters as read back (the next reference forward's). */
#ifndef TP_TEST_FINETUNE_STEP_H
#define TP_TEST_FINETUNE_STEP_H
#include "check.h"
#include <math.h>

static void check_grads_step(tp_tensor *W, tp_tensor *B, const double *dw, const double *db, double *w, double *b) {
  tp_tensor *gw = W ? tp_tensor_grad(W) : NULL, *gb = B ? tp_tensor_grad(B) : NULL;
  CHECKF(gw && gb, "no gradients reached the parameters");
  if (!gw || !gb) return;
  float g[12];
  CHECK_OK(tp_tensor_read(gw, g, sizeof g));
  for (int i = 0; i < 12; i++) CHECKF(fabs(g[i] - dw[i]) <= 1e-5, "dW[%d] = %.9g, expected %.9g", i, g[i], dw[i]);
  CHECK_OK(tp_tensor_read(gb, g, 4 * sizeof(float)));
  for (int i = 0; i < 4; i++) CHECKF(fabs(g[i] - db[i]) <= 1e-5, "db[%d] = %.9g, expected %.9g", i, g[i], db[i]);
  CHECK_OK(tp_sgd_step(W, gw, NULL, 0.1, 0, 0));
  CHECK_OK(tp_sgd_step(B, gb, NULL, 0.1, 0, 0));
  float wf[12], bf[4];
  CHECK_OK(tp_tensor_read(W, wf, sizeof wf));
  CHECK_OK(tp_tensor_read(B, bf, sizeof bf));
  for (int i = 0; i < 12; i++) CHECKF(fabs(wf[i] - (w[i] - 0.1 * dw[i])) <= 1e-5, "W[%d] after the step", i);
  for (int i = 0; i < 12; i++) w[i] = wf[i];
  for (int i = 0; i < 4; i++) b[i] = bf[i];
}

#endif
