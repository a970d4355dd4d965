/* test_ops_seq.c - hand-computed tests of the operators that index by data
 * (gather, gather_elements, scatter_elements, scatter_nd) and of the
 * recurrent layers (rnn, gru, lstm);
 * the rest of ops.def is in test_ops.c, which checks that every op has a
 * test in one of the two. */
#include "op_expect.h"

static tp_attrs Arnn(int64_t direction) {
  tp_attrs a = A0();
  a.dim1 = direction;
  a.clip = 0;
  return a;
}

/* rnn / gru / lstm with hidden 1, input 1, batch 1 over x = [1, 2]; the
 * values computed by hand (python, math.tanh / 1/(1+exp(-v))). The result
 * packs [2, seq + 1, dirs, batch, hidden]: Y_0, Y_1, final H; C_0, C_1, final C. */
static void test_recurrent(void) {
  tp_tensor *x = F32((2, 1, 1), 1, 2);
  tp_tensor *w1 = F32((1, 1, 1), 0.5), *r1 = F32((1, 1, 1), 0.25), *b1 = F32((1, 2), 0.1f, -0.2f);
  /* h_t = tanh(0.5 x_t + 0.25 h_{t-1} + 0.1 - 0.2) */
  EXPECT(OPA(TP_OP_RNN, Arnn(0), x, w1, r1, b1, NULL, NULL), TP_F32, (2, 3, 1, 1, 1), 0.3799489622552249,
         0.7594808754663349, 0.7594808754663349, 0, 0, 0);
  /* reverse: starts at the last step; Y stays in time order */
  EXPECT(OPA(TP_OP_RNN, Arnn(1), x, w1, r1, b1, NULL, NULL), TP_F32, (2, 3, 1, 1, 1), 0.5219924080270243,
         0.7162978701990246, 0.5219924080270243, 0, 0, 0);
  /* sequence_lens [1]: step 1 is past the end: zeros, and the state stays */
  EXPECT(OPA(TP_OP_RNN, Arnn(0), x, w1, r1, b1, I64((1), 1), NULL), TP_F32, (2, 3, 1, 1, 1), 0.3799489622552249, 0,
         0.3799489622552249, 0, 0, 0);
  /* lstm, gates i o f c: W = [.1 .2 .3 .4], R = [.5 .6 .7 .8], no bias */
  tp_tensor *wl = F32((1, 4, 1), 0.1f, 0.2f, 0.3f, 0.4f), *rl = F32((1, 4, 1), 0.5f, 0.6f, 0.7f, 0.8f);
  EXPECT(OPA(TP_OP_LSTM, Arnn(0), x, wl, rl, NULL, NULL, NULL, NULL, NULL), TP_F32, (2, 3, 1, 1, 1),
         0.10824108714580925, 0.2990078049927056, 0.2990078049927056, 0.19946529748821443, 0.5319044286408334,
         0.5319044286408334);
  /* gru, gates z r h: W = [.1 .2 .3], R = [.4 .5 .6], no bias, linear_before_reset 0 */
  tp_tensor *wg = F32((1, 3, 1), 0.1f, 0.2f, 0.3f), *rg = F32((1, 3, 1), 0.4f, 0.5f, 0.6f);
  EXPECT(OPA(TP_OP_GRU, Arnn(0), x, wg, rg, NULL, NULL, NULL), TP_F32, (2, 3, 1, 1, 1), 0.13837955386438736,
         0.3278302879793118, 0.3278302879793118, 0, 0, 0);
  /* bidirectional: two directions of the rnn above side by side */
  tp_tensor *w2 = F32((2, 1, 1), 0.5, 0.5), *r2 = F32((2, 1, 1), 0.25, 0.25), *b2 = F32((2, 2), 0.1f, -0.2f, 0.1f, -0.2f);
  EXPECT(OPA(TP_OP_RNN, Arnn(2), x, w2, r2, b2, NULL, NULL), TP_F32, (2, 3, 2, 1, 1), 0.3799489622552249,
         0.5219924080270243, 0.7594808754663349, 0.7162978701990246, 0.7594808754663349, 0.5219924080270243, 0, 0,
         0, 0, 0, 0);
  /* errors: shapes, direction, lengths, activations */
  ERRA(TP_OP_RNN, Arnn(0), (x, wl, r1, NULL, NULL, NULL), TP_ERR_INVALID_ARG, "W must be [1, 1, 1]");
  ERRA(TP_OP_RNN, Arnn(3), (x, w1, r1, NULL, NULL, NULL), TP_ERR_INVALID_ARG, "direction 3");
  ERRA(TP_OP_RNN, Arnn(2), (x, w1, r1, NULL, NULL, NULL), TP_ERR_INVALID_ARG, "W must be [2, 1, 1]");
  ERRA(TP_OP_RNN, Arnn(0), (x, w1, r1, NULL, I64((1), 3), NULL), TP_ERR_INVALID_ARG, "sequence_lens[0] = 3");
  ERRA(TP_OP_RNN, ({ tp_attrs t = Arnn(0); t.nints = 1; t.ints[0] = 11; t; }), (x, w1, r1, NULL, NULL, NULL),
       TP_ERR_INVALID_ARG, "activation code 11");
  ERRA(TP_OP_RNN, ({ tp_attrs t = Arnn(0); t.nints = 1; t.ints[0] = 3; t.nfloats = 1; t; }), (x, w1, r1, NULL, NULL, NULL),
       TP_ERR_INVALID_ARG, "1 activation parameters, expected 2");
  ERRA(TP_OP_RNN, ({ tp_attrs t = Arnn(0); t.nints = 1; t.ints[0] = 3; t.nfloats = 2; t.floats[0] = NAN; t; }),
       (x, w1, r1, NULL, NULL, NULL), TP_ERR_INVALID_ARG, "activation parameter 0 is nan");
  /* found by the differential generator (test_diff): a missing W or R crashed the shape rule */
  ERRA(TP_OP_LSTM, Arnn(0), (x, NULL, rl, NULL, NULL, NULL, NULL, NULL), TP_ERR_INVALID_ARG, "W is required");
  ERRA(TP_OP_GRU, Arnn(0), (x, w1, NULL, NULL, NULL, NULL), TP_ERR_INVALID_ARG, "R is required");
  ERRA(TP_OP_LSTM, ({ tp_attrs t = Arnn(0); t.clip = -1; t; }), (x, wl, rl, NULL, NULL, NULL, NULL, NULL),
       TP_ERR_INVALID_ARG, "clip");
}

static void test_gather(void) {
  /* x = [[1 2 3] [4 5 6]]; take rows / columns by index, negatives from the end */
  tp_tensor *x = F32((2, 3), 1, 2, 3, 4, 5, 6);
  EXPECT(OPA(TP_OP_GATHER, Adim(0), x, I64((3), 1, 0, -1)), TP_F32, (3, 3), 4, 5, 6, 1, 2, 3, 4, 5, 6);
  EXPECT(OPA(TP_OP_GATHER, Adim(1), x, I32((2), 2, -3)), TP_F32, (2, 2), 3, 1, 6, 4);
  /* 2-D indices: y.shape = x.shape[:d] + indices.shape + x.shape[d+1:] */
  EXPECT(OPA(TP_OP_GATHER, Adim(-1), x, I64((2, 2), 0, 2, 1, 1)), TP_F32, (2, 2, 2), 1, 3, 2, 2, 4, 6, 5, 5);
  /* a 0-d index drops the dim; ints and bools move unchanged */
  EXPECT(OPA(TP_OP_GATHER, Adim(0), I64((3), 10, 20, 9007199254740993LL), I64((), 2)), TP_I64, (),
         9007199254740993.0);
  EXPECT(OPA(TP_OP_GATHER, Adim(0), B8((3), 1, 0, 1), I32((2), 1, 1)), TP_BOOL, (2), 0, 0);
  /* an empty index list */
  EXPECT_SHAPE(OPA(TP_OP_GATHER, Adim(1), x, EMPTY(TP_I64, (0))), TP_F32, (2, 0));
  /* errors: out of range (never a read outside x), float indices, rank */
  ERRA(TP_OP_GATHER, Adim(0), (x, I64((2), 0, 2)), TP_ERR_INVALID_ARG, "index 2", "position 1", "size 2");
  ERRA(TP_OP_GATHER, Adim(1), (x, I64((1), -4)), TP_ERR_INVALID_ARG, "index -4");
  ERRA(TP_OP_GATHER, Adim(0), (x, F32((1), 0)), TP_ERR_INVALID_ARG, "int32 or int64", "float32");
  ERRA(TP_OP_GATHER, Adim(2), (x, I64((1), 0)), TP_ERR_INVALID_ARG, "dim");
  ERRA(TP_OP_GATHER, Adim(0), (f0(1), I64((1), 0)), TP_ERR_INVALID_ARG, "0-d");

  /* gather_elements (torch.gather): y[i][j] = x[i][idx[i][j]] for dim 1 */
  EXPECT(OPA(TP_OP_GATHER_ELEMENTS, Adim(1), x, I64((2, 2), 2, 0, -1, 1)), TP_F32, (2, 2), 3, 1, 6, 5);
  /* dim 0: y[i][j] = x[idx[i][j]][j]; indices may be smaller than x */
  EXPECT(OPA(TP_OP_GATHER_ELEMENTS, Adim(0), x, I32((1, 3), 1, 0, 1)), TP_F32, (1, 3), 4, 2, 6);
  /* a strided (transposed) x */
  tp_tensor *xt = OPA(TP_OP_TRANSPOSE, ({ tp_attrs t = A0(); t.dim = 0; t.dim1 = 1; t; }), x); /* [[1 4][2 5][3 6]] */
  EXPECT(OPA(TP_OP_GATHER_ELEMENTS, Adim(1), xt, I64((3, 1), 1, 0, 1)), TP_F32, (3, 1), 4, 2, 6);
  ERRA(TP_OP_GATHER_ELEMENTS, Adim(1), (x, I64((2, 1), 0, 3)), TP_ERR_INVALID_ARG, "index 3");
  ERRA(TP_OP_GATHER_ELEMENTS, Adim(1), (x, I64((2), 0, 1)), TP_ERR_INVALID_ARG, "same rank");
  ERRA(TP_OP_GATHER_ELEMENTS, Adim(1), (x, I64((3, 1), 0, 0, 0)), TP_ERR_INVALID_ARG, "exceed");
}

static tp_attrs Atopk(int64_t dim, int64_t k, int largest) {
  tp_attrs a = A0();
  a.dim = dim;
  a.k = k;
  a.largest = largest;
  return a;
}

/* argtopk by hand: order, ties (the lower index first), smallest, NaN, dims */
static void test_argtopk(void) {
  tp_tensor *x = F32((2, 4), 3, 1, 4, 1, 5, 9, 2, 6);
  EXPECT(OPA(TP_OP_ARGTOPK, Atopk(1, 2, 1), x), TP_I64, (2, 2), 2, 0, 1, 3);
  EXPECT(OPA(TP_OP_ARGTOPK, Atopk(-1, 3, 0), x), TP_I64, (2, 3), 1, 3, 0, 2, 0, 3);
  EXPECT(OPA(TP_OP_ARGTOPK, Atopk(0, 1, 1), x), TP_I64, (1, 4), 1, 1, 0, 1);
  EXPECT(OPA(TP_OP_ARGTOPK, Atopk(0, 3, 1), I64((4), 7, 7, 2, 7)), TP_I64, (3), 0, 1, 3);
  EXPECT(OPA(TP_OP_ARGTOPK, Atopk(0, 2, 1), F32((3), 1, NAN, 5)), TP_I64, (2), 1, 2);
  EXPECT_SHAPE(OPA(TP_OP_ARGTOPK, Atopk(1, 0, 1), x), TP_I64, (2, 0));
  ERRA(TP_OP_ARGTOPK, Atopk(1, 5, 1), (x), TP_ERR_INVALID_ARG, "k = 5 is outside 0..4");
  ERRA(TP_OP_ARGTOPK, Atopk(0, 1, 1), (B8((2), 1, 0)), TP_ERR_INVALID_ARG, "bool");
}

/* gather_nd by hand (ONNX's examples), batch_dims, errors */
static void test_gather_nd(void) {
  tp_tensor *x = F32((2, 2), 0, 1, 2, 3);
  EXPECT(OPA(TP_OP_GATHER_ND, Adim(0), x, I64((2, 2), 0, 0, 1, 1)), TP_F32, (2), 0, 3);
  EXPECT(OPA(TP_OP_GATHER_ND, Adim(0), x, I64((2, 1), 1, -2)), TP_F32, (2, 2), 2, 3, 0, 1);
  /* batch_dims 1: x [2, 2, 2], one tuple per batch */
  tp_tensor *x3 = I32((2, 2, 2), 0, 1, 2, 3, 4, 5, 6, 7);
  EXPECT(OPA(TP_OP_GATHER_ND, Adim(1), x3, I64((2, 1), 1, 0)), TP_I32, (2, 2), 2, 3, 4, 5);
  ERRA(TP_OP_GATHER_ND, Adim(0), (x, I64((1, 2), 0, 2)), TP_ERR_INVALID_ARG, "index 2", "component 1");
  ERRA(TP_OP_GATHER_ND, Adim(0), (x, I64((1, 3), 0, 0, 0)), TP_ERR_INVALID_ARG, "k with 1 <= k <= 2");
  ERRA(TP_OP_GATHER_ND, Adim(0), (x, F32((1, 1), 0)), TP_ERR_INVALID_ARG, "int32 or int64");
}

static tp_attrs Ascatter(int64_t dim, int reduction) {
  tp_attrs a = A0();
  a.dim = dim;
  a.reduction = reduction;
  return a;
}

/* scatter_elements / scatter_nd: by hand, every reduction, negative and
 * duplicate indices, and the errors. */
static void test_scatter(void) {
  tp_tensor *x = F32((2, 3), 1, 2, 3, 4, 5, 6);
  /* dim 1: row 0 gets 10 at col 2 and 20 at col 0; row 1 gets 30 at col -1 (= 2) */
  tp_tensor *ix = I64((2, 2), 2, 0, -1, -1), *u = F32((2, 2), 10, 20, 30, 40);
  /* duplicates without a reduction: the last one (40) wins */
  EXPECT(OPA(TP_OP_SCATTER_ELEMENTS, Ascatter(1, 0), x, ix, u), TP_F32, (2, 3), 20, 2, 10, 4, 5, 40);
  EXPECT(OPA(TP_OP_SCATTER_ELEMENTS, Ascatter(1, 1), x, ix, u), TP_F32, (2, 3), 21, 2, 13, 4, 5, 76);
  EXPECT(OPA(TP_OP_SCATTER_ELEMENTS, Ascatter(1, 2), x, ix, u), TP_F32, (2, 3), 20, 2, 30, 4, 5, 7200);
  EXPECT(OPA(TP_OP_SCATTER_ELEMENTS, Ascatter(1, 3), x, ix, u), TP_F32, (2, 3), 20, 2, 10, 4, 5, 40);
  EXPECT(OPA(TP_OP_SCATTER_ELEMENTS, Ascatter(1, 4), x, ix, u), TP_F32, (2, 3), 1, 2, 3, 4, 5, 6);
  /* dim 0 with int32 data and indices smaller than x */
  EXPECT(OPA(TP_OP_SCATTER_ELEMENTS, Ascatter(0, 0), I32((2, 2), 1, 2, 3, 4), I32((1, 2), 1, 0), I32((1, 2), 9, 8)),
         TP_I32, (2, 2), 1, 8, 9, 4);
  /* scatter_nd: rows of a [3, 2] by index tuples of length 1; an element by a full tuple */
  tp_tensor *m = F32((3, 2), 1, 2, 3, 4, 5, 6);
  EXPECT(OPA(TP_OP_SCATTER_ND, Ascatter(0, 0), m, I64((2, 1), 2, 0), F32((2, 2), 7, 8, 9, 10)), TP_F32, (3, 2), 9, 10, 3,
         4, 7, 8);
  EXPECT(OPA(TP_OP_SCATTER_ND, Ascatter(0, 1), m, I64((2, 1), -1, -1), F32((2, 2), 1, 1, 2, 2)), TP_F32, (3, 2), 1, 2, 3,
         4, 8, 9);
  EXPECT(OPA(TP_OP_SCATTER_ND, Ascatter(0, 0), m, I64((1, 2), 1, 1), F32((1), 42)), TP_F32, (3, 2), 1, 2, 3, 42, 5, 6);
  /* errors: out of range (nothing written outside y), shapes, dtypes, reductions */
  ERRA(TP_OP_SCATTER_ELEMENTS, Ascatter(1, 0), (x, I64((2, 2), 0, 3, 0, 0), u), TP_ERR_INVALID_ARG, "index 3");
  ERRA(TP_OP_SCATTER_ND, Ascatter(0, 0), (m, I64((1, 1), 3), F32((1, 2), 0, 0)), TP_ERR_INVALID_ARG, "index 3", "component 0");
  ERRA(TP_OP_SCATTER_ELEMENTS, Ascatter(1, 0), (x, ix, F32((2, 1), 1, 2)), TP_ERR_INVALID_ARG, "one shape");
  ERRA(TP_OP_SCATTER_ND, Ascatter(0, 0), (m, I64((2, 1), 0, 1), F32((2, 3), 0, 0, 0, 0, 0, 0)), TP_ERR_INVALID_ARG,
       "indices.shape[:-1] + x.shape[k:]");
  ERRA(TP_OP_SCATTER_ELEMENTS, Ascatter(1, 0), (x, ix, I32((2, 2), 1, 2, 3, 4)), TP_ERR_INVALID_ARG, "updates must be float32");
  ERRA(TP_OP_SCATTER_ELEMENTS, Ascatter(1, 9), (x, ix, u), TP_ERR_INVALID_ARG, "reduction 9");
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  size_t live0 = tp_live_tensors();
  static const op_test tests[] = {{"test_gather", test_gather}, {"test_recurrent", test_recurrent},
                                   {"test_scatter", test_scatter}, {"test_gather_nd", test_gather_nd},
                                   {"test_argtopk", test_argtopk}};
  run_op_tests(tests, sizeof tests / sizeof tests[0]);
  if (tp_live_tensors() != live0) FAILF("leak: %zu live tensors at the end, %zu at the start", tp_live_tensors(), live0);
  printf("test_ops_seq: %d checks, %d failures\n", checks, failures);
  return failures != 0;
}
