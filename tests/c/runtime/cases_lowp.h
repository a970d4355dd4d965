/* cases_lowp.h - differential cases of the low-precision operators
 * (bitcast, quantize, dequantize, matmul_int; docs/quantization.md), included by
 * test_kernels.c after its runner (run_case). */
/* bitcast between the dtypes of one size, contiguous and transposed */
static void cases_bitcast(void) {
  static const int pairs[][2] = {{TP_F32, TP_I32}, {TP_I32, TP_F32}, {TP_I8, TP_U8}, {TP_U8, TP_I8}, {TP_F16, TP_BF16},
                                 {TP_BOOL, TP_U8}};
  static const int64_t sh[2] = {3, 5};
  for (int p = 0; p < 6; p++)
    for (int tr = 0; tr < 2; tr++) {
      tp_tensor *r = NULL, *x = NULL, *in[1];
      tp_attrs a;
      tp_attrs_init(&a);
      a.dtype = (tp_dtype)pairs[p][0];
      tp_randn(2, sh, 77 + (uint64_t)p, &r);
      tp_tensor *m = NULL, *s = NULL;
      tp_scalar(40, 1, &s);
      tp_mul(r, s, &m);
      tp_op_call(TP_OP_CAST, 1, &m, &a, &x);
      tp_tensor_release(r), tp_tensor_release(m), tp_tensor_release(s);
      if (tr) {
        tp_tensor *t = NULL;
        tp_transpose(x, 0, 1, &t);
        tp_tensor_release(x);
        x = t;
      }
      in[0] = x;
      a.dtype = (tp_dtype)pairs[p][1];
      char lbl[64];
      snprintf(lbl, sizeof lbl, "%s -> %s%s", tp_dtype_short((tp_dtype)pairs[p][0]), tp_dtype_short((tp_dtype)pairs[p][1]),
               tr ? " transposed" : "");
      run_case(lbl, TP_OP_BITCAST, 1, in, &a);
    }
}

/* quantize / dequantize: per tensor and per last-axis scales, with and
 * without zero points, values past the saturation range */
static void cases_quant(tp_op op) {
  static const int64_t xs[2] = {3, 4}, one = 1, four = 4;
  for (int c = 0; c < 4; c++) {
    tp_tensor *in[3] = {NULL, NULL, NULL};
    float xv[12], sv[4];
    uint8_t xq[12], zq[4];
    for (int i = 0; i < 12; i++) xv[i] = (float)(i * 37 % 23) * 7.5f - 60.0f, xq[i] = (uint8_t)(i * 53 % 256);
    for (int i = 0; i < 4; i++) sv[i] = 0.25f + 0.5f * (float)i, zq[i] = (uint8_t)(i * 60);
    int per_axis = c & 1, with_zp = c >> 1;
    if (op == TP_OP_QUANTIZE) tp_tensor_new(TP_F32, 2, xs, xv, &in[0]);
    else tp_tensor_new(TP_U8, 2, xs, xq, &in[0]);
    tp_tensor_new(TP_F32, 1, per_axis ? &four : &one, sv, &in[1]);
    if (with_zp) tp_tensor_new(TP_U8, 1, per_axis ? &four : &one, zq, &in[2]);
    tp_attrs at;
    tp_attrs_init(&at);
    at.dtype = TP_I8; /* without a zero point: int8 */
    char lbl[64];
    snprintf(lbl, sizeof lbl, "%s scale, %s zero point", per_axis ? "per-axis" : "one", with_zp ? "a" : "no");
    run_case(lbl, op, 3, in, &at);
  }
  /* long rows (the ISA table's vector loop, quantize_f32, and its tail): halves that tie (x / scale =
   * k + 0.5), values past the saturation range and past 2^22, NaN, +-inf, -0; uint8 and int8 */
  if (op == TP_OP_QUANTIZE)
    for (int c = 0; c < 2; c++) {
      static const int64_t n1[1] = {1031};
      float xv[1031];
      for (int i = 0; i < 1031; i++) xv[i] = (float)(i % 611) * 0.25f - 76.0f;
      xv[5] = NAN, xv[77] = INFINITY, xv[78] = -INFINITY, xv[300] = -0.0f, xv[301] = 3e9f, xv[302] = -3e9f, xv[1030] = NAN;
      tp_tensor *in[3] = {NULL, NULL, NULL};
      tp_tensor_new(TP_F32, 1, n1, xv, &in[0]);
      float sc = 0.5f;
      tp_tensor_new(TP_F32, 0, NULL, &sc, &in[1]);
      if (c) {
        int8_t z = -3;
        tp_tensor_new(TP_I8, 0, NULL, &z, &in[2]);
      } else {
        uint8_t z = 131;
        tp_tensor_new(TP_U8, 0, NULL, &z, &in[2]);
      }
      tp_attrs at;
      tp_attrs_init(&at);
      run_case(c ? "1031 values, int8, ties and specials" : "1031 values, uint8, ties and specials", op, 3, in, &at);
    }
  /* per first-dim scale and zero point ([3, 1]: a weight's output channels), int8 x, and a strided x (the
   * eager fast paths' other layouts, and one they leave to the loop) */
  static const int64_t s31[2] = {3, 1};
  for (int c = 0; c < 3; c++) {
    float xv[12], sv[3] = {0.5f, 0.125f, 3.0f};
    int8_t xq[12], zq[3] = {-3, 0, 100};
    for (int i = 0; i < 12; i++) xv[i] = (float)(i * 37 % 23) * 7.5f - 60.0f, xq[i] = (int8_t)(i * 53 % 256 - 128);
    tp_tensor *in[3] = {NULL, NULL, NULL};
    if (op == TP_OP_QUANTIZE) tp_tensor_new(TP_F32, 2, xs, xv, &in[0]);
    else tp_tensor_new(TP_I8, 2, xs, xq, &in[0]);
    if (c == 2) { /* strided: x transposed, the parameters along its last dim of 3 */
      tp_tensor *t = NULL;
      tp_transpose(in[0], 0, 1, &t);
      tp_tensor_release(in[0]);
      in[0] = t;
    }
    int64_t three = 3;
    tp_tensor_new(TP_F32, c == 2 ? 1 : 2, c == 2 ? &three : s31, sv, &in[1]);
    if (c) tp_tensor_new(TP_I8, c == 2 ? 1 : 2, c == 2 ? &three : s31, zq, &in[2]);
    tp_attrs at;
    tp_attrs_init(&at);
    at.dtype = TP_I8;
    run_case(c == 0 ? "per first dim scale, int8" : c == 1 ? "per first dim scale and zero point, int8" : "strided x, per last dim, int8",
             op, 3, in, &at);
  }
}


/* An int8/uint8 tensor of shape s (nd dims) with values uniform-ish in its range. */
static tp_tensor *q8_rand(tp_dtype d, int nd, const int64_t *s, uint64_t seed) {
  tp_tensor *r = NULL, *sc = NULL, *m = NULL, *x = NULL;
  tp_attrs a;
  tp_attrs_init(&a);
  a.dtype = d;
  tp_randn(nd, s, seed, &r);
  tp_scalar(100, 1, &sc);
  tp_mul(r, sc, &m);
  if (d == TP_U8) {
    tp_tensor *o = NULL, *t = NULL;
    tp_scalar(128, 1, &o);
    tp_add(m, o, &t);
    tp_tensor_release(o), tp_tensor_release(m);
    m = t;
  }
  tp_op_call(TP_OP_CAST, 1, &m, &a, &x); /* saturating */
  tp_tensor_release(r), tp_tensor_release(sc), tp_tensor_release(m);
  return x;
}

/* matmul_int with zero points on the integer GEMM against the scalar loop:
 * shapes around the tiles (M, N, K 1..70), every int8/uint8 pairing, zero
 * points none / one value / per row of a and per column of b, transposed b,
 * batched a over a shared b, batched b. */
static void cases_matmul_int_zp(void) {
  static const struct { int na, nb; int64_t a[3], b[3]; } sh[] = {
      {2, 2, {7, 37}, {37, 45}}, {2, 2, {1, 70}, {70, 1}}, {2, 2, {33, 5}, {5, 17}}, {3, 2, {3, 9, 64}, {64, 33}},
      {3, 3, {2, 5, 19}, {2, 19, 8}}, {1, 2, {21}, {21, 6}}};
  static const int dts[][2] = {{TP_U8, TP_I8}, {TP_I8, TP_I8}, {TP_U8, TP_U8}, {TP_I8, TP_U8}};
  for (int c = 0; c < 6; c++)
    for (int d = 0; d < 4; d++)
      for (int zm = 0; zm < 3; zm++) { /* 0: none, 1: one value each, 2: per row / per column */
        int na = sh[c].na, nb = sh[c].nb, tr = (c + d) % 2 && nb == 2;
        int64_t sb[3];
        memcpy(sb, sh[c].b, sizeof sb);
        if (tr) { int64_t t = sb[0]; sb[0] = sb[1]; sb[1] = t; }
        uint64_t seed = 5000 + (uint64_t)(c * 100 + d * 10 + zm * 3);
        tp_tensor *in[4] = {q8_rand((tp_dtype)dts[d][0], na, sh[c].a, seed), q8_rand((tp_dtype)dts[d][1], nb, sb, seed + 1), NULL,
                            NULL};
        if (tr) {
          tp_tensor *t = NULL;
          tp_transpose(in[1], -1, -2, &t);
          tp_tensor_release(in[1]);
          in[1] = t;
        }
        int64_t M = na >= 2 ? sh[c].a[na - 2] : 1, N = sh[c].b[nb - 1];
        if (zm) {
          int64_t one[1] = {1}, rows[1] = {M}, cols[1] = {N};
          in[2] = q8_rand((tp_dtype)dts[d][0], 1, zm == 2 && na >= 2 ? rows : one, seed + 2);
          in[3] = q8_rand((tp_dtype)dts[d][1], 1, zm == 2 && nb == 2 ? cols : one, seed + 3);
        }
        char lbl[128];
        snprintf(lbl, sizeof lbl, "zero points %s, case %d, %s x %s%s", zm == 0 ? "none" : zm == 1 ? "one value" : "per row/column",
                 c, tp_dtype_short((tp_dtype)dts[d][0]), tp_dtype_short((tp_dtype)dts[d][1]), tr ? ", b transposed" : "");
        run_case(lbl, TP_OP_MATMUL_INT, zm ? 4 : 2, in, NULL);
      }
}

/* matmul_int: int8 / uint8 / int32 operands, 1-D, batched with broadcast,
 * transposed (strided) b */
static void cases_matmul_int(void) {
  static const struct { int na, nb; int64_t a[3], b[3]; } sh[] = {
      {2, 2, {3, 5}, {5, 4}}, {1, 2, {5}, {5, 2}}, {2, 1, {3, 5}, {5}}, {3, 2, {2, 3, 4}, {4, 2}}, {3, 3, {2, 1, 3}, {1, 3, 2}}};
  static const int dts[][2] = {{TP_I8, TP_U8}, {TP_U8, TP_I8}, {TP_I32, TP_I8}, {TP_U8, TP_U8}};
  for (int c = 0; c < 5; c++)
    for (int d = 0; d < 4; d++)
      for (int tr = 0; tr < 2; tr++) {
        if (tr && sh[c].nb < 2) continue;
        tp_tensor *in[2] = {NULL, NULL};
        for (int k = 0; k < 2; k++) {
          int nd = k ? sh[c].nb : sh[c].na;
          int64_t s[3];
          memcpy(s, k ? sh[c].b : sh[c].a, sizeof s);
          if (k && tr) { int64_t t = s[nd - 1]; s[nd - 1] = s[nd - 2]; s[nd - 2] = t; }
          tp_tensor *r = NULL, *m = NULL, *sc = NULL, *x = NULL;
          tp_attrs a;
          tp_attrs_init(&a);
          a.dtype = (tp_dtype)dts[d][k];
          tp_randn(nd, s, 900 + (uint64_t)(c * 10 + d * 2 + k), &r);
          tp_scalar(dts[d][k] == TP_I32 ? 1e6 : 90, 1, &sc);
          tp_mul(r, sc, &m);
          tp_op_call(TP_OP_CAST, 1, &m, &a, &x);
          tp_tensor_release(r), tp_tensor_release(sc), tp_tensor_release(m);
          if (k && tr) {
            tp_tensor *t = NULL;
            tp_transpose(x, -1, -2, &t);
            tp_tensor_release(x);
            x = t;
          }
          in[k] = x;
        }
        char lbl[96];
        snprintf(lbl, sizeof lbl, "case %d, %s x %s%s", c, tp_dtype_short((tp_dtype)dts[d][0]), tp_dtype_short((tp_dtype)dts[d][1]),
                 tr ? ", b transposed" : "");
        run_case(lbl, TP_OP_MATMUL_INT, 2, in, NULL);
      }
  cases_matmul_int_zp();
}

/* conv2d_int: windows with padding, strides, dilations and two groups;
 * every int8/uint8 pairing; zero points none, one value, per output
 * channel; x as a strided view (every other column of a wider tensor). */
static void cases_conv2d_int(void) {
  static const struct { int64_t x[4], w[4], win[8], g; } sh[] = {
      {{1, 3, 7, 9}, {5, 3, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1}, 1}, {{2, 4, 9, 8}, {6, 2, 2, 3}, {2, 1, 0, 2, 1, 0, 1, 2}, 2},
      {{1, 17, 5, 5}, {33, 17, 1, 1}, {1, 1, 0, 0, 0, 0, 1, 1}, 1}, {{1, 2, 20, 21}, {3, 2, 5, 4}, {3, 2, 2, 1, 0, 2, 2, 1}, 1},
      {{2, 6, 9, 8}, {12, 1, 3, 3}, {1, 2, 1, 1, 1, 1, 1, 1}, 6}}; /* depthwise, depth multiplier 2 */
  static const int dts[][2] = {{TP_U8, TP_I8}, {TP_I8, TP_I8}, {TP_U8, TP_U8}, {TP_I8, TP_U8}};
  for (int c = 0; c < 5; c++)
    for (int d = 0; d < 4; d++)
      for (int zm = 0; zm < 3; zm++) {
        uint64_t seed = 7000 + (uint64_t)(c * 100 + d * 10 + zm);
        int strided = (c + d + zm) % 3 == 0;
        int64_t xs[4];
        memcpy(xs, sh[c].x, sizeof xs);
        if (strided) xs[3] *= 2;
        tp_tensor *in[4] = {q8_rand((tp_dtype)dts[d][0], 4, xs, seed), q8_rand((tp_dtype)dts[d][1], 4, sh[c].w, seed + 1), NULL, NULL};
        if (strided) {
          tp_tensor *v = NULL;
          tp_attrs sl;
          tp_attrs_init(&sl);
          sl.dim = 3, sl.start = 0, sl.end = xs[3], sl.step = 2;
          tp_op_call(TP_OP_SLICE, 1, &in[0], &sl, &v);
          tp_tensor_release(in[0]);
          in[0] = v;
        }
        if (zm) {
          int64_t one[1] = {1}, ms[1] = {sh[c].w[0]};
          in[2] = q8_rand((tp_dtype)dts[d][0], 1, one, seed + 2);
          in[3] = q8_rand((tp_dtype)dts[d][1], 1, zm == 2 ? ms : one, seed + 3);
        }
        tp_attrs a;
        tp_attrs_init(&a);
        a.nints = 8;
        memcpy(a.ints, sh[c].win, sizeof sh[c].win);
        a.dim = sh[c].g;
        char lbl[128];
        snprintf(lbl, sizeof lbl, "case %d, %s x %s, zero points %s%s", c, tp_dtype_short((tp_dtype)dts[d][0]),
                 tp_dtype_short((tp_dtype)dts[d][1]), zm == 0 ? "none" : zm == 1 ? "one value" : "per channel",
                 strided ? ", x strided" : "");
        run_case(lbl, TP_OP_CONV2D_INT, 4, in, &a);
      }
}

/* A float32 tensor of shape s with values in [lo, hi) (positive scales, biases). */
static tp_tensor *f32_uniform(int nd, const int64_t *s, double lo, double hi, uint64_t seed) {
  tp_tensor *t = NULL;
  int64_t n = 1;
  for (int d = 0; d < nd; d++) n *= s[d];
  float *p = malloc(sizeof(float) * (size_t)n);
  if (!p) return NULL;
  for (int64_t i = 0; i < n; i++) {
    seed = seed * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = (float)(lo + (hi - lo) * (double)(seed >> 11) / 9007199254740992.0);
  }
  tp_tensor_new(TP_F32, nd, s, p, &t);
  free(p);
  return t;
}

/* qmatmul on the integer GEMM against its scalar loop (the epilogue's
 * formula): exact, float32 and uint8/int8 outputs, every int8/uint8
 * pairing, scales and zero points per tensor and per column, bias, relu,
 * batched a, shapes around the tiles. */
static void cases_qmatmul(void) {
  static const struct { int na; int64_t a[3]; int64_t n; } sh[] = {
      {2, {7, 37}, 45}, {2, {1, 70}, 1}, {3, {3, 9, 64}, 33}, {1, {21}, 6}, {2, {65, 16}, 17}};
  static const int dts[][2] = {{TP_U8, TP_I8}, {TP_I8, TP_I8}, {TP_U8, TP_U8}, {TP_I8, TP_U8}};
  for (int c = 0; c < 5; c++)
    for (int d = 0; d < 4; d++)
      for (int v = 0; v < 4; v++) { /* 0: f32 per tensor, 1: f32 per column + bias + relu, 2: u8 out, 3: s8 out + relu, per column */
        int na = sh[c].na;
        int64_t K = sh[c].a[na - 1], N = sh[c].n, sb_[2] = {K, N}, one[1] = {1}, cols[1] = {N};
        uint64_t seed = 7000 + (uint64_t)(c * 100 + d * 10 + v);
        int per = v == 1 || v == 3;
        tp_tensor *in[9] = {q8_rand((tp_dtype)dts[d][0], na, sh[c].a, seed), q8_rand((tp_dtype)dts[d][1], 2, sb_, seed + 1),
                            q8_rand((tp_dtype)dts[d][0], 1, one, seed + 2), q8_rand((tp_dtype)dts[d][1], 1, per ? cols : one, seed + 3),
                            f32_uniform(1, one, 0.001, 0.02, seed + 4), f32_uniform(1, per ? cols : one, 0.001, 0.02, seed + 5),
                            v == 1 ? f32_uniform(1, cols, -3, 3, seed + 6) : NULL, v >= 2 ? f32_uniform(0, NULL, 0.05, 0.2, seed + 7) : NULL,
                            v >= 2 ? q8_rand(v == 2 ? TP_U8 : TP_I8, 1, one, seed + 8) : NULL};
        tp_attrs at;
        tp_attrs_init(&at);
        at.keepdim = v == 1 || v == 3;
        char lbl[128];
        snprintf(lbl, sizeof lbl, "case %d, %s x %s, %s", c, tp_dtype_short((tp_dtype)dts[d][0]), tp_dtype_short((tp_dtype)dts[d][1]),
                 v == 0 ? "f32 per tensor" : v == 1 ? "f32 per column + bias + relu" : v == 2 ? "u8 out" : "s8 out + relu, per column");
        run_case(lbl, TP_OP_QMATMUL, 9, in, &at);
      }
}

/* qconv2d: conv2d_int's windows with the epilogue: float32 out with a
 * float or int32 bias, uint8 / int8 out with an int32 bias, relu, scales
 * and zero points per tensor or per output channel. */
static void cases_qconv2d(void) {
  static const struct { int64_t x[4], w[4], win[8], g; } sh[] = {
      {{1, 3, 7, 9}, {5, 3, 3, 3}, {1, 1, 1, 1, 1, 1, 1, 1}, 1}, {{2, 4, 9, 8}, {6, 2, 2, 3}, {2, 1, 0, 2, 1, 0, 1, 2}, 2},
      {{1, 17, 5, 5}, {33, 17, 1, 1}, {1, 1, 0, 0, 0, 0, 1, 1}, 1}};
  for (int c = 0; c < 3; c++)
    for (int k = 0; k < 6; k++) { /* out: float32 (float bias, int bias), uint8, int8; relu on odd k */
      uint64_t seed = 8000 + (uint64_t)(c * 10 + k);
      int64_t M = sh[c].w[0], one[1] = {1}, ms[1] = {M};
      int per = (c + k) % 2, out = k / 2; /* 0 float, 1 uint8, 2 int8 */
      tp_tensor *in[9] = {q8_rand(k % 2 ? TP_I8 : TP_U8, 4, sh[c].x, seed), q8_rand(TP_I8, 4, sh[c].w, seed + 1),
                          q8_rand(k % 2 ? TP_I8 : TP_U8, 1, one, seed + 2), q8_rand(TP_I8, 1, per ? ms : one, seed + 3),
                          f32_uniform(1, one, 0.01, 0.05, seed + 4), f32_uniform(1, per ? ms : one, 0.001, 0.01, seed + 5),
                          NULL, NULL, NULL};
      if (out == 0 && k == 0) in[6] = f32_uniform(1, ms, -2, 2, seed + 6);
      else {
        int32_t *b = malloc(sizeof(int32_t) * (size_t)M);
        for (int64_t m = 0; m < M; m++) b[m] = (int32_t)((m * 7919 + (int64_t)seed) % 4001) - 2000;
        tp_tensor_new(TP_I32, 1, ms, b, &in[6]);
        free(b);
      }
      if (out) {
        in[7] = f32_uniform(1, one, 0.05, 0.2, seed + 7);
        in[8] = q8_rand(out == 1 ? TP_U8 : TP_I8, 1, one, seed + 8);
      }
      tp_attrs a;
      tp_attrs_init(&a);
      a.nints = 8;
      memcpy(a.ints, sh[c].win, sizeof sh[c].win);
      a.dim = sh[c].g;
      a.keepdim = k % 2;
      char lbl[128];
      snprintf(lbl, sizeof lbl, "case %d, out %s, %s bias, %s, relu %d", c, out == 0 ? "f32" : out == 1 ? "u8" : "i8",
               in[6] && tp_tensor_dtype(in[6]) == TP_F32 ? "float" : "int32", per ? "per channel" : "per tensor", k % 2);
      run_case(lbl, TP_OP_QCONV2D, 9, in, &a);
    }
}
