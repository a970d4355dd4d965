/* cases_ops.h - differential cases of the float operators (unary, binary,
 * where, matmul, linear, conv2d, pools, reductions, softmax, layer_norm,
 * views, concat, gathers, recurrent, scatters, argtopk, integer ops, det,
 * grid_sample, roi_align; and, through cases_lowp.h, the low-precision
 * ones), included by test_kernels.c after its runner (run_case) and input
 * makers. Each generates shapes, strides and attributes and hands every
 * case to run_case, which compares every ISA with the reference. */
static void cases_unary(tp_op op) {
  char b[64], lbl[256];
  int napprox = op == TP_OP_GELU ? 2 : 1;
  for (int ap = 0; ap < napprox; ap++) {
    tp_attrs at;
    tp_attrs_init(&at);
    at.approximate = ap;
    for (int si = 0; si < NUNARY_SHAPES; si++) {
      S s = unary_shapes[si];
      for (int l = 0; l < L_COUNT; l++) {
        if (l && s.nd == 0) break;
        if (l == L_ROWSTEP && s.nd < 2) continue;
        snprintf(lbl, sizeof lbl, "f32 %s %s%s", sstr(s, b), layout_name[l],
                 op == TP_OP_GELU ? (ap ? " tanh" : " erf") : "");
        tp_tensor *in[1] = {gen(TP_F32, s.nd, s.d, unary_dist(op), l)};
        run_case(lbl, op, 1, in, &at);
      }
    }
    /* integer inputs: neg/abs/relu keep the dtype, the others give float32 */
    static const S ishapes[] = {S1(17), S2(3, 5), {0, {0}}, S1(0)};
    for (int si = 0; si < 4; si++) {
      for (int dt = TP_I32; dt <= TP_I64; dt++) {
        dist d = {D_INT, 20, 0};
        if (op == TP_OP_LOG || op == TP_OP_SQRT || op == TP_OP_RSQRT) d = (dist){D_INT, 20, 0};
        snprintf(lbl, sizeof lbl, "%s %s", tp_dtype_short((tp_dtype)dt), sstr(ishapes[si], b));
        tp_tensor *in[1] = {gen((tp_dtype)dt, ishapes[si].nd, ishapes[si].d, d,
                                ishapes[si].nd >= 2 ? L_TRANSPOSED : L_CONTIG)};
        run_case(lbl, op, 1, in, &at);
      }
    }
  }
}

static void cases_binary(tp_op op) {
  char b0[64], b1[64], lbl[256];
  int cmp = op == TP_OP_EQ || op == TP_OP_LT || op == TP_OP_GT;
  for (int pi = 0; pi < NBPAIRS; pi++) {
    S sa = bpairs[pi][0], sb = bpairs[pi][1];
    static const int lay[][2] = {{L_CONTIG, L_CONTIG}, {L_TRANSPOSED, L_CONTIG},
                                 {L_CONTIG, L_STRIDED}, {L_ROWSTEP, L_TRANSPOSED}};
    for (int li = 0; li < 4; li++) {
      snprintf(lbl, sizeof lbl, "f32 %s %s, %s %s", sstr(sa, b0), layout_name[lay[li][0]],
               sstr(sb, b1), layout_name[lay[li][1]]);
      dist da = NORMAL1, db = NORMAL1;
      if (op == TP_OP_DIV) db = (dist){D_POSEXP, 1, 0};
      if (cmp) da = db = (dist){D_INT, 2, 0}; /* many equal values */
      tp_tensor *in[2] = {gen(TP_F32, sa.nd, sa.d, da, lay[li][0]),
                          gen(TP_F32, sb.nd, sb.d, db, lay[li][1])};
      run_case(lbl, op, 2, in, NULL);
    }
  }
  /* dtype mixes (and weak scalars on both sides) */
  static const struct {
    int da, db; /* dtype or -1 weak int, -2 weak float */
  } mixes[] = {{TP_I32, TP_I32}, {TP_I64, TP_I64}, {TP_I32, TP_I64}, {TP_I32, TP_F32},
               {TP_I64, TP_F32}, {TP_BOOL, TP_I32}, {TP_BOOL, TP_F32}, {TP_F32, -1},
               {-1, TP_F32},     {TP_F32, -2},      {-2, TP_F32},      {TP_I32, -1},
               {TP_I32, -2},     {-2, TP_I64},      {TP_BOOL, -1},     {TP_BOOL, -2},
               {-1, -2},         {TP_BOOL, TP_BOOL}};
  for (int mi = 0; mi < (int)(sizeof mixes / sizeof mixes[0]); mi++) {
    int da = mixes[mi].da, dbb = mixes[mi].db;
    if (da == TP_BOOL && dbb == TP_BOOL && !cmp) continue; /* bool arithmetic is rejected */
    static const S ps[][2] = {{S2(3, 5), S1(5)}, {S1(33), S1(33)}, {S2(7, 1), S2(1, 17)}};
    for (int pi = 0; pi < 3; pi++) {
      tp_tensor *in[2];
      int dts[2] = {da, dbb};
      for (int k = 0; k < 2; k++) {
        S s = ps[pi][k];
        if (dts[k] == -1) in[k] = weak(k ? 3 : -2, 1);
        else if (dts[k] == -2) in[k] = weak(k ? 1.5 : -0.75, 0);
        else {
          dist d = dts[k] == TP_BOOL ? (dist){D_BOOL, 0, 0}
                   : dts[k] == TP_F32 ? NORMAL1 : (dist){D_INT, 5, 0};
          if (op == TP_OP_DIV && k == 1 && dts[k] == TP_F32) d = (dist){D_POSEXP, 1, 0};
          in[k] = gen((tp_dtype)dts[k], s.nd, s.d, d, pi == 2 ? L_TRANSPOSED : L_CONTIG);
        }
      }
      snprintf(lbl, sizeof lbl, "%s %s, %s %s",
               da < 0 ? (da == -1 ? "weak-int" : "weak-float") : tp_dtype_short((tp_dtype)da),
               sstr(ps[pi][0], b0),
               dbb < 0 ? (dbb == -1 ? "weak-int" : "weak-float") : tp_dtype_short((tp_dtype)dbb),
               sstr(ps[pi][1], b1));
      run_case(lbl, op, 2, in, NULL);
    }
  }
}

static void cases_where(void) {
  char b0[64], lbl[256];
  static const S sh[][3] = {{S1(1000), S1(1000), S1(1000)}, {S2(3, 1), S1(5), S2(3, 5)},
                            {S1(17), S2(4, 17), {0, {0}}},  {S3(2, 3, 5), S2(3, 1), S1(5)},
                            {S2(0, 3), S1(3), S1(1)},       {S2(7, 9), S2(7, 9), S2(7, 9)}};
  static const int dts[][2] = {{TP_F32, TP_F32}, {TP_I32, TP_F32}, {TP_I64, TP_I32},
                               {TP_BOOL, TP_BOOL}, {TP_F32, -1}, {TP_I32, -2}};
  for (int si = 0; si < 6; si++)
    for (int di = 0; di < 6; di++)
      for (int l = 0; l < 2; l++) {
        tp_tensor *in[3];
        in[0] = gen(TP_BOOL, sh[si][0].nd, sh[si][0].d, (dist){D_BOOL, 0, 0}, l ? L_TRANSPOSED : 0);
        for (int k = 0; k < 2; k++) {
          S s = sh[si][k + 1];
          int dt = dts[di][k];
          if (dt == -1) in[k + 1] = weak(7, 1);
          else if (dt == -2) in[k + 1] = weak(0.5, 0);
          else
            in[k + 1] = gen((tp_dtype)dt, s.nd, s.d,
                            dt == TP_F32 ? NORMAL1 : dt == TP_BOOL ? (dist){D_BOOL, 0, 0}
                                                                   : (dist){D_INT, 9, 0},
                            l ? L_STRIDED : 0);
        }
        snprintf(lbl, sizeof lbl, "cond %s, dtypes %d/%d, %s", sstr(sh[si][0], b0), dts[di][0],
                 dts[di][1], l ? "strided" : "contig");
        run_case(lbl, TP_OP_WHERE, 3, in, NULL);
      }
}

static void cases_matmul(void) {
  char b0[64], b1[64], lbl[256];
  static const S mm[][2] = {
      {S2(3, 5), S2(5, 7)},       {S2(1, 1), S2(1, 1)},       {S2(17, 33), S2(33, 15)},
      {S1(7), S1(7)},             {S1(16), S2(16, 3)},        {S2(5, 16), S1(16)},
      {S3(2, 3, 5), S2(5, 4)},    {S2(3, 5), S3(2, 5, 4)},    {S3(1, 1, 5), S3(3, 5, 2)},
      {S3(3, 7, 1), S3(1, 1, 9)}, {S1(5), S3(2, 5, 3)},       {S3(2, 3, 5), S1(5)},
      {S2(0, 5), S2(5, 3)},       {S2(3, 0), S2(0, 4)},       {S2(3, 5), S2(5, 0)},
      {S3(0, 2, 3), S2(3, 2)},    {S2(100, 33), S2(33, 17)},  {S2(16, 16), S2(16, 16)},
      /* empty batch dims broadcast against missing / size-1 batch dims */
      {S3(0, 8, 8), S2(8, 8)},    {S2(8, 8), S3(0, 8, 8)},    {S3(1, 8, 8), S3(0, 8, 8)},
      {S1(8), S3(0, 8, 8)}};
  for (int i = 0; i < (int)(sizeof mm / sizeof mm[0]); i++)
    for (int la = 0; la < 3; la++)
      for (int lb = 0; lb < 3; lb++) {
        if ((la || lb) && (la + lb) % 2) continue; /* a few layout combos */
        S a = mm[i][0], b = mm[i][1];
        snprintf(lbl, sizeof lbl, "%s %s @ %s %s", sstr(a, b0), layout_name[la], sstr(b, b1),
                 layout_name[lb]);
        tp_tensor *in[2] = {gen(TP_F32, a.nd, a.d, NORMAL1, la), gen(TP_F32, b.nd, b.d, NORMAL1, lb)};
        run_case(lbl, TP_OP_MATMUL, 2, in, NULL);
      }
}

static void cases_linear(void) {
  char b0[64], lbl[256];
  static const S xs[] = {S2(3, 5), S1(5), S3(2, 3, 5), S2(0, 5), S2(17, 5)};
  static const int64_t outs[] = {7, 1, 16, 0};
  for (int xi = 0; xi < 5; xi++)
    for (int oi = 0; oi < 4; oi++)
      for (int var = 0; var < 4; var++) {
        S x = xs[xi];
        int64_t K = x.d[x.nd - 1], N = outs[oi];
        int64_t ws[2] = {N, K}, bs[1] = {N};
        int lx = (var & 1) ? (x.nd >= 2 ? L_TRANSPOSED : L_STRIDED) : L_CONTIG;
        int lw = (var & 2) ? L_TRANSPOSED : L_CONTIG;
        snprintf(lbl, sizeof lbl, "x %s %s, w [%lld,%lld] %s, bias %s", sstr(x, b0),
                 layout_name[lx], (long long)N, (long long)K, layout_name[lw],
                 var == 3 ? "none" : "yes");
        tp_tensor *in[3] = {gen(TP_F32, x.nd, x.d, NORMAL1, lx), gen(TP_F32, 2, ws, NORMAL1, lw),
                            var == 3 ? NULL : gen(TP_F32, 1, bs, NORMAL1, var == 2 ? L_STRIDED : 0)};
        run_case(lbl, TP_OP_LINEAR, 3, in, NULL);
      }
}

/* conv2d: depthwise (with and without a channel multiplier), grouped,
 * dense, 1x1 (the no-copy GEMM path), strides, dilations, asymmetric
 * pads, a kernel as large as the padded input, empty batch, bias or not,
 * and non-contiguous inputs. Columns per case: N C H W, M KH KW, groups,
 * window (sh sw pt pl pb pr dh dw). */
static void cases_conv2d(void) {
  static const int64_t cfg[][16] = {
      {1, 3, 7, 9, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},     /* dense 3x3, pad 1 */
      {2, 4, 8, 8, 6, 3, 3, 1, 2, 2, 1, 1, 0, 0, 1, 1},     /* stride 2, pads top/left only */
      {1, 6, 9, 11, 6, 3, 3, 6, 1, 1, 1, 1, 1, 1, 1, 1},    /* depthwise 3x3 */
      {1, 4, 10, 13, 8, 3, 3, 4, 2, 2, 1, 1, 1, 1, 1, 1},   /* depthwise, multiplier 2, stride 2 */
      {1, 5, 12, 12, 5, 5, 5, 5, 1, 1, 2, 3, 1, 0, 1, 1},   /* depthwise 5x5, asymmetric pads */
      {1, 3, 12, 14, 3, 3, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2},   /* depthwise, dilation 2 */
      {1, 16, 6, 5, 24, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},   /* 1x1: GEMM on x directly */
      {2, 8, 5, 7, 12, 1, 1, 2, 1, 1, 0, 0, 0, 0, 1, 1},    /* 1x1 grouped */
      {1, 8, 5, 7, 4, 1, 1, 1, 2, 2, 0, 0, 0, 0, 1, 1},     /* 1x1 stride 2 (im2col) */
      {1, 6, 9, 9, 8, 3, 2, 2, 1, 2, 0, 1, 2, 0, 2, 1},     /* grouped, rect kernel, mixed */
      {1, 2, 4, 4, 3, 6, 6, 1, 1, 1, 1, 1, 1, 1, 1, 1},     /* kernel = padded input: 1x1 out */
      {0, 3, 5, 5, 2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},     /* empty batch */
      {1, 1, 1, 40, 2, 1, 7, 1, 1, 3, 0, 3, 0, 3, 1, 1},    /* a 1-D conv as H = 1 */
      {1, 32, 20, 20, 48, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, /* larger dense (GEMM tiles) */
      {1, 3, 300, 40, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},  /* several im2col row blocks */
      {1, 4, 6, 100, 4, 3, 3, 4, 1, 1, 1, 1, 1, 1, 1, 1},   /* depthwise: full vectors, 4-lane and 1-lane tails */
      {1, 2, 5, 1100, 2, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1},  /* depthwise stride 2: several unit-stride chunks */
      {1, 2, 4, 300, 2, 2, 5, 2, 1, 3, 0, 2, 1, 3, 1, 2},   /* depthwise, stride 3, dilation 2, uneven pads */
      /* Winograd F(2x2, 3x3) (winograd.c): odd output sizes, no padding,
       * uneven pads, batch 2, several tile blocks */
      {1, 9, 7, 11, 10, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1},   /* 7x11 out: half tiles on both edges */
      {2, 8, 10, 9, 8, 3, 3, 1, 1, 1, 0, 0, 0, 0, 1, 1},    /* valid, batch 2 */
      {1, 12, 9, 8, 17, 3, 3, 1, 1, 1, 2, 0, 1, 2, 1, 1},   /* uneven pads */
      {1, 96, 40, 56, 24, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1}, /* PP-OCRv4 detection's head: tile blocks */
      /* 1-D Winograd F(2, 3) (winograd.c, tp_conv2d_winograd1d): 3x1 and 1x3, odd
       * outputs (a half tile at the end), pads on the kernel's axis, batch 2 (each at
       * least 64 tiles: tp_conv2d_winograd1d_fits), and the
       * openwakeword embedding's shapes (24 channels on 74x32, tile blocks) */
      {1, 8, 11, 13, 10, 3, 1, 1, 1, 1, 1, 0, 1, 0, 1, 1},   /* 3x1 pad 1: 11 rows out */
      {2, 9, 10, 17, 8, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1},   /* 3x1 valid, batch 2 */
      {1, 8, 9, 21, 12, 1, 3, 1, 1, 1, 0, 1, 0, 1, 1, 1},   /* 1x3 pad 1: 21 columns out */
      {1, 10, 11, 12, 9, 1, 3, 1, 1, 1, 0, 2, 0, 0, 1, 1},   /* 1x3 left pad 2 only */
      {2, 8, 5, 40, 8, 1, 3, 1, 1, 1, 0, 0, 0, 0, 1, 1},    /* 1x3 valid, batch 2 */
      {1, 24, 74, 32, 24, 1, 3, 1, 1, 1, 0, 1, 0, 1, 1, 1}, /* the embedding's 1x3 */
      {1, 24, 74, 32, 24, 3, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1}, /* the embedding's 3x1 */
      {1, 96, 200, 30, 64, 3, 1, 1, 1, 1, 1, 0, 1, 0, 1, 1}, /* several tile blocks */
      /* small padded planes (exec.c: conv_dw_padded, through a zero-padded copy) */
      {1, 5, 10, 14, 5, 5, 5, 5, 1, 1, 2, 2, 2, 2, 1, 1},  /* 5x5 pad 2 on 10x14 (PP-OCRv4 detection) */
      {2, 3, 10, 14, 3, 5, 5, 3, 2, 2, 2, 2, 2, 2, 1, 1},  /* the same, stride 2, batch 2 */
      {1, 4, 7, 9, 8, 3, 3, 4, 1, 1, 1, 0, 2, 1, 2, 1},    /* multiplier 2, uneven pads, dilation 2x1 */
      {1, 3, 6, 9, 3, 3, 5, 3, 2, 1, 0, 3, 1, 0, 1, 2},    /* stride 2x1, left pad only, dilation 1x2 */
      {1, 2, 5, 33, 2, 3, 3, 2, 1, 2, 1, 1, 1, 1, 1, 1},   /* stride 1x2, 17 columns out */
      {1, 3, 12, 80, 3, 5, 5, 3, 1, 1, 2, 2, 2, 2, 1, 1},  /* 5x5 on 12x80 (PP-OCRv4 recognition): padded at any width */
      /* planes of few, wide rows (exec.c: depthwise on padded rows, kind 3): the input rows
       * copied between zero columns, rows outside the input skipped */
      {1, 4, 2, 96, 4, 5, 5, 4, 1, 1, 2, 2, 2, 2, 1, 1},   /* 5x5 pad 2 on 2x96 (PP-OCR classifier) */
      {1, 3, 3, 96, 3, 5, 5, 3, 2, 1, 2, 2, 2, 2, 1, 1},   /* stride 2x1 on 3x96 */
      {2, 2, 6, 192, 4, 3, 3, 2, 2, 2, 1, 1, 1, 1, 1, 1},  /* multiplier 2, stride 2, batch 2 */
      {2, 3, 4, 100, 3, 3, 5, 3, 1, 1, 1, 0, 1, 3, 1, 2},  /* right pad only, dilation 1x2 */
      {1, 2, 170, 100, 2, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1}, /* too many rows for it: the row kernel, border columns */
      /* fewer than 16 positions, >= 32 outputs per group: the transposed GEMM (exec.c, TP_CONV_IM2COL_T) */
      {1, 1, 1, 1280, 40, 1, 512, 1, 1, 160, 0, 0, 0, 0, 1, 1}, /* STFT-like: 5 frames */
      {1, 12, 3, 5, 64, 3, 3, 2, 1, 1, 1, 1, 1, 1, 1, 1},   /* grouped, 15 positions */
      /* stride 2 along rows, >= 16 columns out (dwconv_row_s2_f32 on the even and odd columns) */
      {1, 3, 7, 41, 3, 2, 4, 3, 2, 2, 0, 1, 1, 2, 1, 1},   /* even kernel width, uneven pads, odd W */
      {1, 4, 20, 80, 4, 3, 3, 4, 2, 2, 1, 1, 1, 1, 1, 1},  /* 40 columns out: vectors, 4-lane and 1-lane tails */
      {1, 2, 9, 40, 2, 5, 5, 2, 1, 2, 2, 2, 2, 2, 1, 1},   /* 5x5, stride 1x2 */
  };
  char lbl[256];
  for (int ci = 0; ci < (int)(sizeof cfg / sizeof cfg[0]); ci++)
    for (int var = 0; var < 3; var++) {
      const int64_t *c = cfg[ci];
      int64_t xs[4] = {c[0], c[1], c[2], c[3]}, ws[4] = {c[4], c[1] / c[7], c[5], c[6]}, bs[1] = {c[4]};
      tp_attrs at;
      tp_attrs_init(&at);
      at.nints = 8;
      memcpy(at.ints, c + 8, sizeof(int64_t) * 8);
      at.dim = c[7];
      /* var 0: contiguous, bias; 1: no bias; 2: strided x, transposed w, strided bias */
      snprintf(lbl, sizeof lbl,
               "conv2d x [%lld,%lld,%lld,%lld] w [%lld,%lld,%lld,%lld] groups %lld window "
               "[%lld %lld %lld %lld %lld %lld %lld %lld] %s",
               (long long)xs[0], (long long)xs[1], (long long)xs[2], (long long)xs[3], (long long)ws[0],
               (long long)ws[1], (long long)ws[2], (long long)ws[3], (long long)c[7], (long long)c[8],
               (long long)c[9], (long long)c[10], (long long)c[11], (long long)c[12], (long long)c[13],
               (long long)c[14], (long long)c[15],
               var == 0 ? "bias" : var == 1 ? "no bias" : "non-contiguous");
      tp_tensor *in[3] = {gen(TP_F32, 4, xs, NORMAL1, var == 2 ? L_STRIDED : L_CONTIG),
                          gen(TP_F32, 4, ws, NORMAL1, var == 2 ? L_TRANSPOSED : L_CONTIG),
                          var == 1 ? NULL : gen(TP_F32, 1, bs, NORMAL1, var == 2 ? L_STRIDED : 0)};
      run_case(lbl, TP_OP_CONV2D, 3, in, &at);
    }
}

/* pooling: kernels, strides, asymmetric pads (smaller than the kernel),
 * overlapping and gapped windows, count_include_pad, non-contiguous input.
 * Columns: N C H W, window (kh kw sh sw pt pl pb pr). */
static void cases_pool2d(tp_op op) {
  static const int64_t cfg[][12] = {
      {1, 2, 6, 6, 2, 2, 2, 2, 0, 0, 0, 0},     /* the classic 2x2 / 2 */
      {2, 3, 7, 9, 3, 3, 2, 2, 1, 1, 1, 1},     /* overlapping, padded */
      {1, 1, 5, 11, 3, 2, 1, 3, 2, 0, 0, 1},    /* rect, stride 3 (gaps), uneven pads */
      {1, 4, 1, 20, 1, 4, 1, 4, 0, 2, 0, 3},    /* a 1-D pool as H = 1 */
      {0, 2, 4, 4, 2, 2, 2, 2, 0, 0, 0, 0},     /* empty batch */
      {1, 2, 9, 9, 9, 9, 1, 1, 4, 4, 4, 4},     /* global-size kernel with pads */
      /* max without padding, every window inside (exec.c's chunked path) */
      {1, 3, 9, 11, 3, 3, 2, 2, 0, 0, 0, 0},    /* 3x3/2, the last row and column unused */
      {2, 2, 5, 300, 2, 2, 1, 1, 0, 0, 0, 0},   /* stride 1, more than one chunk of outputs */
      {1, 200, 2, 96, 2, 2, 2, 2, 0, 0, 0, 0},  /* cls's 2x2/2 on 2x96 */
      /* 2-wide windows, stride 2: four outputs a vector (exec.c), then the scalar tail */
      {1, 24, 72, 32, 2, 2, 2, 2, 0, 0, 0, 0},  /* the openwakeword embedding's 2x2/2 */
      {1, 3, 6, 19, 2, 2, 2, 2, 0, 0, 0, 0},    /* 9 outputs a row: a 1-lane tail, a column unused */
      {1, 2, 7, 22, 3, 2, 2, 2, 0, 0, 0, 0},    /* 3x2 windows: three rows of taps */
      /* 1x2 windows, stride 1x2, W = 2 OW: one flat run over the tensor (exec.c) */
      {1, 96, 10, 4, 1, 2, 1, 2, 0, 0, 0, 0},   /* the embedding net's 1x2/1x2 on 10x4 */
      {2, 3, 5, 6, 1, 2, 1, 2, 0, 0, 0, 0},     /* 90 outputs: a 2-output scalar tail */
      {1, 2, 4, 7, 1, 2, 1, 2, 0, 0, 0, 0},     /* W odd: a column left over, the per-row path */
  };
  char lbl[256];
  for (int ci = 0; ci < (int)(sizeof cfg / sizeof cfg[0]); ci++)
    for (int var = 0; var < (op == TP_OP_AVG_POOL2D ? 3 : 2); var++) {
      const int64_t *c = cfg[ci];
      int64_t xs[4] = {c[0], c[1], c[2], c[3]};
      tp_attrs at;
      tp_attrs_init(&at);
      at.nints = 8;
      memcpy(at.ints, c + 4, sizeof(int64_t) * 8);
      at.dim = var == 2; /* count_include_pad */
      snprintf(lbl, sizeof lbl, "%s x [%lld,%lld,%lld,%lld] window [%lld %lld %lld %lld %lld %lld %lld %lld]%s%s",
               tp_op_name(op), (long long)xs[0], (long long)xs[1], (long long)xs[2], (long long)xs[3],
               (long long)c[4], (long long)c[5], (long long)c[6], (long long)c[7], (long long)c[8],
               (long long)c[9], (long long)c[10], (long long)c[11], var == 1 ? " strided" : "",
               var == 2 ? " count_include_pad" : "");
      tp_tensor *in[1] = {gen(TP_F32, 4, xs, NORMAL1, var == 1 ? L_STRIDED : L_CONTIG)};
      run_case(lbl, op, 1, in, &at);
    }
}

static void cases_reduce(tp_op op) {
  char b0[64], lbl[256];
  static const S rs[] = {{0, {0}}, S1(0),     S1(1),       S1(7),        S1(16),      S1(17),
                         S1(33),   S1(100),   S1(1000),    S2(3, 5),     S2(33, 17),  S2(0, 4),
                         S2(4, 0), S3(2, 3, 5), S3(7, 1, 17), S3(4, 5, 6)};
  static const int dts[] = {TP_F32, TP_I32, TP_I64, TP_BOOL};
  for (int si = 0; si < (int)(sizeof rs / sizeof rs[0]); si++) {
    S s = rs[si];
    /* dim sets: all (none given), each single dim (positive and negative), pairs */
    int64_t sets[16][3];
    int nsets = 0, setn[16];
    setn[nsets++] = 0;
    for (int d = 0; d < s.nd; d++) {
      sets[nsets][0] = d, setn[nsets++] = 1;
      sets[nsets][0] = d - s.nd, setn[nsets++] = 1;
    }
    for (int d = 0; d + 1 < s.nd; d++) sets[nsets][0] = d, sets[nsets][1] = s.nd - 1, setn[nsets++] = 2;
    if (s.nd == 0) sets[nsets][0] = 0, setn[nsets++] = 1;
    for (int k = 0; k < nsets; k++)
      for (int keep = 0; keep < 2; keep++)
        for (int di = 0; di < 4; di++) {
          if (di && (s.nd > 2 ? keep : 0)) continue;
          int empty_reduce = 0;
          for (int d = 0; d < s.nd; d++) {
            int m = setn[k] == 0;
            for (int j = 0; j < setn[k]; j++) m |= (sets[k][j] < 0 ? sets[k][j] + s.nd : sets[k][j]) == d;
            if (m && s.d[d] == 0) empty_reduce = 1;
          }
          if (empty_reduce && (op == TP_OP_MAX || op == TP_OP_MIN)) continue; /* an error */
          tp_attrs at;
          tp_attrs_init(&at);
          at.nints = setn[k];
          for (int j = 0; j < setn[k]; j++) at.ints[j] = sets[k][j];
          at.keepdim = keep;
          int lay = (di == 0 && s.nd >= 2) ? (k % 3 == 1 ? L_TRANSPOSED : k % 3 == 2 ? L_ROWSTEP : 0) : 0;
          snprintf(lbl, sizeof lbl, "%s %s %s dims=[%s%lld%s%lld] keepdim=%d",
                   tp_dtype_short((tp_dtype)dts[di]), sstr(s, b0), layout_name[lay],
                   setn[k] ? "" : "all", setn[k] ? (long long)sets[k][0] : 0LL,
                   setn[k] > 1 ? "," : "", setn[k] > 1 ? (long long)sets[k][1] : 0LL, keep);
          dist d = dts[di] == TP_F32 ? (dist){D_NORMAL, 10, 0}
                   : dts[di] == TP_BOOL ? (dist){D_BOOL, 0, 0} : (dist){D_INT, 1000, 0};
          tp_tensor *in[1] = {gen((tp_dtype)dts[di], s.nd, s.d, d, lay)};
          run_case(lbl, op, 1, in, &at);
        }
  }
}

static void cases_softmax(tp_op op) {
  char b0[64], lbl[256];
  static const S ss[] = {{0, {0}}, S1(1), S1(3), S1(7), S1(16), S1(17), S1(33), S1(1000),
                         S2(3, 5), S2(17, 33), S2(1, 7), S2(7, 1), S2(0, 5), S2(5, 0),
                         S3(2, 3, 5), S3(4, 1, 17), S3(3, 16, 2)};
  for (int si = 0; si < (int)(sizeof ss / sizeof ss[0]); si++) {
    S s = ss[si];
    int nd1 = s.nd ? s.nd : 1;
    for (int d = -nd1; d < nd1; d++)
      for (int l = 0; l < 3; l++) {
        if (l && s.nd == 0) continue;
        tp_attrs at;
        tp_attrs_init(&at);
        at.dim = d;
        snprintf(lbl, sizeof lbl, "%s %s dim=%d", sstr(s, b0), layout_name[l], d);
        tp_tensor *in[1] = {gen(TP_F32, s.nd, s.d, (dist){D_NORMAL, 3, 0}, l)};
        run_case(lbl, op, 1, in, &at);
      }
  }
  /* int input */
  int64_t sh[2] = {3, 7};
  tp_attrs at;
  tp_attrs_init(&at);
  at.dim = 1;
  tp_tensor *in[1] = {gen(TP_I32, 2, sh, (dist){D_INT, 3, 0}, L_CONTIG)};
  run_case("i32 [3,7] dim=1", op, 1, in, &at);
}

static void cases_layer_norm(void) {
  char b0[64], lbl[256];
  static const S ls[] = {S1(1), S1(7), S1(16), S1(17), S1(1000), S2(3, 5), S2(17, 33),
                         S3(2, 3, 5), S3(4, 5, 6), S2(0, 5), S3(2, 16, 17)};
  for (int si = 0; si < (int)(sizeof ls / sizeof ls[0]); si++) {
    S s = ls[si];
    for (int nn = 1; nn <= 2 && nn <= s.nd; nn++)
      for (int var = 0; var < 4; var++) {
        tp_attrs at;
        tp_attrs_init(&at);
        at.nints = nn;
        for (int j = 0; j < nn; j++) at.ints[j] = s.d[s.nd - nn + j];
        at.eps = var == 3 ? 1e-3 : 1e-5;
        int lay = var == 1 ? L_TRANSPOSED : var == 2 ? L_STRIDED : 0;
        snprintf(lbl, sizeof lbl, "%s %s normalized %d dims, %s, eps %g", sstr(s, b0),
                 layout_name[lay], nn, var == 0 ? "no affine" : "weight+bias", at.eps);
        tp_tensor *in[3] = {gen(TP_F32, s.nd, s.d, (dist){D_NORMAL, 2, 0}, lay), NULL, NULL};
        if (var) {
          in[1] = gen(TP_F32, nn, s.d + s.nd - nn, NORMAL1, var == 2 && nn == 1 ? L_STRIDED : 0);
          if (var != 2) in[2] = gen(TP_F32, nn, s.d + s.nd - nn, NORMAL1, 0);
        }
        run_case(lbl, TP_OP_LAYER_NORM, 3, in, &at);
      }
  }
}

static void cases_views(tp_op op) {
  char b0[64], lbl[256];
  static const S vs[] = {{0, {0}}, S1(0),  S1(1),  S1(7),  S1(17),     S1(100),
                         S2(3, 5), S2(16, 17), S2(0, 3), S3(2, 3, 5), S3(4, 1, 6)};
  static const int dts[] = {TP_F32, TP_I32, TP_I64, TP_BOOL};
  for (int si = 0; si < (int)(sizeof vs / sizeof vs[0]); si++) {
    S s = vs[si];
    for (int l = 0; l < L_COUNT; l++) {
      if (l && s.nd == 0) break;
      if (l == L_ROWSTEP && s.nd < 2) continue;
      tp_dtype dt = (tp_dtype)dts[(si + l) % 4];
      dist d = dt == TP_F32 ? NORMAL1 : dt == TP_BOOL ? (dist){D_BOOL, 0, 0} : (dist){D_INT, 50, 0};
      tp_attrs at[16];
      int nat = 0;
      for (int k = 0; k < 16; k++) tp_attrs_init(&at[k]);
      int64_t n = tp_shape_numel(s.nd, s.d);
      if (op == TP_OP_RESHAPE) {
        at[nat].nints = 1, at[nat++].ints[0] = -1;
        at[nat].nints = 1, at[nat++].ints[0] = n;
        if (s.nd >= 2 && s.d[0] != 0) { /* [0,-1] is ambiguous: an error in torch too */
          at[nat].nints = 2, at[nat].ints[0] = s.d[0], at[nat++].ints[1] = -1;
          at[nat].nints = 2, at[nat].ints[0] = -1, at[nat++].ints[1] = s.d[s.nd - 1];
          at[nat].nints = 3, at[nat].ints[0] = 1, at[nat].ints[1] = -1, at[nat++].ints[2] = 1;
        }
        if (s.nd == 3) {
          at[nat].nints = 2, at[nat].ints[0] = s.d[0] * s.d[1], at[nat++].ints[1] = s.d[2];
          at[nat].nints = 4, at[nat].ints[0] = s.d[0], at[nat].ints[1] = s.d[1], at[nat].ints[2] = 1,
          at[nat++].ints[3] = s.d[2];
        }
        if (n == 1) at[nat++].nints = 0;
      } else if (op == TP_OP_TRANSPOSE) {
        int nd1 = s.nd ? s.nd : 1;
        for (int a = -nd1; a < nd1 && nat < 16; a += 1)
          for (int b = 0; b < nd1 && nat < 16; b++) at[nat].dim = a, at[nat++].dim1 = b;
      } else if (op == TP_OP_PERMUTE) {
        at[nat++].nints = s.nd;
        for (int k = 0; k < s.nd; k++) at[0].ints[k] = k;
        if (s.nd >= 2) {
          at[nat].nints = s.nd;
          for (int k = 0; k < s.nd; k++) at[nat].ints[k] = s.nd - 1 - k;
          nat++;
        }
        if (s.nd == 3) {
          at[nat].nints = 3, at[nat].ints[0] = 1, at[nat].ints[1] = -1, at[nat++].ints[2] = 0;
          at[nat].nints = 3, at[nat].ints[0] = 2, at[nat].ints[1] = 0, at[nat++].ints[2] = 1;
        }
      } else if (op == TP_OP_SLICE) {
        if (s.nd == 0) continue;
        static const int64_t sl[][3] = {{0, INT64_MAX, 1}, {-3, INT64_MAX, 1}, {0, INT64_MAX, 2},
                                        {1, 100, 3},       {-100, 2, 1},       {5, 2, 1},
                                        {2, -1, 2},        {-1, INT64_MAX, 7}};
        for (int k = 0; k < 8; k++) {
          at[nat].dim = (k % 2 && s.nd > 1) ? -1 : (k % s.nd);
          at[nat].start = sl[k][0], at[nat].end = sl[k][1], at[nat++].step = sl[k][2];
        }
      } else if (op == TP_OP_CAST) {
        for (int k = 0; k < TP_DTYPE_COUNT; k++) at[nat++].dtype = (tp_dtype)k;
        /* float -> int truncation needs fractional values */
        if (dt == TP_F32) d = (dist){D_NORMAL, 50, 0};
      }
      for (int k = 0; k < nat; k++) {
        snprintf(lbl, sizeof lbl, "%s %s %s #%d", tp_dtype_short(dt), sstr(s, b0), layout_name[l],
                 k);
        tp_tensor *in[1] = {gen(dt, s.nd, s.d, d, l)};
        run_case(lbl, op, 1, in, &at[k]);
      }
    }
  }
}

static void cases_concat(void) {
  char lbl[256];
  /* shapes along dim d: base shape with sizes ks along d */
  static const S base[] = {S1(5), S2(3, 4), S3(2, 3, 4)};
  static const int64_t ks[][3] = {{1, 2, 3}, {0, 7, 1}, {17, 16, 0}, {5, 5, 5}};
  static const int dts[][3] = {{TP_F32, TP_F32, TP_F32}, {TP_I32, TP_F32, TP_BOOL},
                               {TP_I64, TP_I32, TP_I32}, {TP_BOOL, TP_BOOL, TP_BOOL}};
  for (int bi = 0; bi < 3; bi++)
    for (int d = -base[bi].nd; d < base[bi].nd; d++)
      for (int ki = 0; ki < 4; ki++)
        for (int di = 0; di < 4; di++) {
          int nin = 1 + (ki + di) % 3;
          tp_tensor *in[3] = {NULL, NULL, NULL};
          for (int k = 0; k < nin; k++) {
            S s = base[bi];
            s.d[d < 0 ? d + s.nd : d] = ks[ki][k];
            tp_dtype dt = (tp_dtype)dts[di][k];
            dist dd = dt == TP_F32 ? NORMAL1 : dt == TP_BOOL ? (dist){D_BOOL, 0, 0} : (dist){D_INT, 50, 0};
            in[k] = gen(dt, s.nd, s.d, dd, (k + ki) % L_COUNT);
          }
          tp_attrs at;
          tp_attrs_init(&at);
          at.dim = d;
          snprintf(lbl, sizeof lbl, "%d inputs, ndim %d, dim %d, sizes %lld/%lld/%lld, dtypes #%d",
                   nin, base[bi].nd, d, (long long)ks[ki][0], (long long)ks[ki][1],
                   (long long)ks[ki][2], di);
          run_case(lbl, TP_OP_CONCAT, nin, in, &at);
        }
}

/* gather / gather_elements: random in-range indices (negative ones too),
 * int32 and int64, every dim, data of each dtype and layout. */
static void cases_gather(tp_op op) {
  char lbl[256];
  static const S base[] = {S1(7), S2(3, 5), S3(2, 4, 3)};
  static const int dts[] = {TP_F32, TP_I64, TP_I32, TP_BOOL};
  uint64_t seed = 12345;
  for (int bi = 0; bi < 3; bi++)
    for (int d = -base[bi].nd; d < base[bi].nd; d++)
      for (int di = 0; di < 4; di++)
        for (int idt = 0; idt < 2; idt++) {
          S xs = base[bi];
          int dd = d < 0 ? d + xs.nd : d;
          tp_dtype dt = (tp_dtype)dts[di];
          dist dist_x = dt == TP_F32 ? NORMAL1 : dt == TP_BOOL ? (dist){D_BOOL, 0, 0} : (dist){D_INT, 50, 0};
          tp_tensor *in[2] = {gen(dt, xs.nd, xs.d, dist_x, (di + bi) % L_COUNT), NULL};
          /* indices: gather takes any shape (here [2, 3] or [4]), gather_elements x's shape
           * with dim d resized */
          S is = op == TP_OP_GATHER ? ((di & 1) ? S1(4) : S2(2, 3)) : xs;
          if (op == TP_OP_GATHER_ELEMENTS) is.d[dd] = 1 + (di + idt) % 4;
          int64_t n = tp_shape_numel(is.nd, is.d);
          double v[64];
          for (int64_t i = 0; i < n; i++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            v[i] = (double)(int64_t)((seed >> 33) % (uint64_t)(2 * xs.d[dd])) - (double)xs.d[dd];
          }
          in[1] = from_values(idt ? TP_I64 : TP_I32, is.nd, is.d, v);
          tp_attrs at;
          tp_attrs_init(&at);
          at.dim = d;
          snprintf(lbl, sizeof lbl, "x ndim %d, dim %d, dtype #%d, %s indices of %lld", xs.nd, d, di,
                   idt ? "int64" : "int32", (long long)n);
          run_case(lbl, op, 2, in, &at);
        }
  /* out of range: an error naming the index, never a read outside x */
  int64_t sx = 3, si = 2;
  double xv[3] = {1, 2, 3}, iv[2] = {0, 3}, nv[2] = {-4, 0};
  tp_tensor *x = from_values(TP_F32, 1, &sx, xv), *ix = from_values(TP_I64, 1, &si, iv),
            *neg = from_values(TP_I32, 1, &si, nv), *ins[2] = {x, ix}, *y = NULL;
  tp_attrs at;
  tp_attrs_init(&at);
  ncases++;
  if (tp_op_call(op, 2, ins, &at, &y) != TP_ERR_INVALID_ARG || y || !strstr(tp_last_error(), "index 3"))
    FAILF("%s: index 3 of a dim of size 3 was not refused (%s)", tp_op_name(op), tp_last_error());
  ins[1] = neg;
  ncases++;
  if (tp_op_call(op, 2, ins, &at, &y) != TP_ERR_INVALID_ARG || y || !strstr(tp_last_error(), "index -4"))
    FAILF("%s: index -4 of a dim of size 3 was not refused (%s)", tp_op_name(op), tp_last_error());
  tp_tensor_release(x);
  tp_tensor_release(ix);
  tp_tensor_release(neg);
}

/* rnn / gru / lstm: random weights (scaled so the gates are not saturated),
 * every direction, with and without bias, lengths, initial states and
 * peepholes, a clip, both gru reset forms, relu activations. */
static void cases_recurrent(tp_op op) {
  char lbl[256];
  int G = op == TP_OP_LSTM ? 4 : op == TP_OP_GRU ? 3 : 1, nact = op == TP_OP_LSTM ? 3 : op == TP_OP_GRU ? 2 : 1;
  int nops = op == TP_OP_LSTM ? 8 : 6;
  static const int64_t dims[][4] = {{1, 1, 1, 1}, {3, 2, 4, 5}, {5, 3, 2, 7}, {2, 4, 8, 16}}; /* S N I H */
  dist small = {D_NORMAL, 0.5, 0};
  for (int di = 0; di < 4; di++)
    for (int dir = 0; dir < 3; dir++)
      for (int variant = 0; variant < 4; variant++) {
        int64_t S = dims[di][0], N = dims[di][1], I = dims[di][2], H = dims[di][3], D = dir == 2 ? 2 : 1;
        int64_t xs[3] = {S, N, I}, ws[3] = {D, G * H, I}, rs[3] = {D, G * H, H}, bs[2] = {D, 2 * G * H};
        int64_t hs[3] = {D, N, H}, ps[2] = {D, 3 * H};
        tp_tensor *in[8] = {0};
        in[0] = gen(TP_F32, 3, xs, NORMAL1, variant % L_COUNT);
        in[1] = gen(TP_F32, 3, ws, small, 0);
        in[2] = gen(TP_F32, 3, rs, small, 0);
        if (variant & 1) in[3] = gen(TP_F32, 2, bs, small, 0);
        if (variant >= 2) {
          double lv[8];
          for (int64_t b = 0; b < N; b++) lv[b] = (double)((b * 3 + variant) % (S + 1));
          in[4] = from_values(variant == 2 ? TP_I32 : TP_I64, 1, &N, lv);
          in[5] = gen(TP_F32, 3, hs, small, 0);
          if (op == TP_OP_LSTM) in[6] = gen(TP_F32, 3, hs, small, 0), in[7] = gen(TP_F32, 2, ps, small, 0);
        }
        tp_attrs at;
        tp_attrs_init(&at);
        at.dim1 = dir;
        at.clip = variant == 3 ? 0.75 : 0;
        at.keepdim = op != TP_OP_RNN && variant == 1;
        if (variant == 2) { /* explicit activations: relu for the last function */
          at.nints = (int)(nact * D);
          for (int k = 0; k < at.nints; k++) at.ints[k] = (k % nact == nact - 1) ? 2 : (k % nact == 0 && op != TP_OP_RNN) ? 0 : 1;
        }
        snprintf(lbl, sizeof lbl, "S %lld N %lld I %lld H %lld, direction %d, variant %d", (long long)S, (long long)N,
                 (long long)I, (long long)H, dir, variant);
        run_case(lbl, op, nops, in, &at);
      }
}

/* scatter_elements / scatter_nd: random in-range indices (duplicates and
 * negatives included), each reduction, float32 and int32 data. */
static void cases_scatter(tp_op op) {
  char lbl[256];
  uint64_t seed = 777;
  static const S xs_list[] = {S1(6), S2(4, 5), S3(3, 4, 2)};
  for (int xi = 0; xi < 3; xi++)
    for (int red = 0; red < 5; red++)
      for (int di = 0; di < 2; di++) {
        S xs = xs_list[xi];
        tp_dtype dt = di ? TP_I32 : TP_F32;
        dist dd = di ? (dist){D_INT, 20, 0} : NORMAL1;
        tp_tensor *in[3] = {gen(dt, xs.nd, xs.d, dd, red % L_COUNT), NULL, NULL};
        double v[64];
        tp_attrs at;
        tp_attrs_init(&at);
        at.reduction = red;
        if (op == TP_OP_SCATTER_ELEMENTS) {
          int d = (xi + red) % xs.nd;
          S is = xs;
          is.d[d] = 1 + red % 3;
          int64_t ni = tp_shape_numel(is.nd, is.d);
          for (int64_t i = 0; i < ni; i++) {
            seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
            v[i] = (double)(int64_t)((seed >> 33) % (uint64_t)(2 * xs.d[d])) - (double)xs.d[d];
          }
          in[1] = from_values(TP_I64, is.nd, is.d, v);
          in[2] = gen(dt, is.nd, is.d, dd, 0);
          at.dim = d;
        } else {
          int k = 1 + red % xs.nd;
          int64_t ish[2] = {3, k}, ush[TP_MAX_DIMS];
          ush[0] = 3;
          for (int i = k; i < xs.nd; i++) ush[1 + i - k] = xs.d[i];
          for (int j = 0; j < 3; j++)
            for (int c = 0; c < k; c++) {
              seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
              v[j * k + c] = (double)(int64_t)((seed >> 33) % (uint64_t)xs.d[c]);
            }
          in[1] = from_values(TP_I64, 2, ish, v);
          in[2] = gen(dt, 1 + xs.nd - k, ush, dd, 0);
        }
        snprintf(lbl, sizeof lbl, "x ndim %d, reduction %d, %s", xs.nd, red, di ? "int32" : "float32");
        run_case(lbl, op, 3, in, &at);
      }
}

/* gather_nd: random in-range tuples (negatives too), batch_dims 0 and 1. */
static void cases_gather_nd(void) {
  char lbl[256];
  uint64_t seed = 4242;
  static const S xs_list[] = {S2(4, 5), S3(3, 4, 2)};
  for (int xi = 0; xi < 2; xi++)
    for (int b = 0; b < 2; b++)
      for (int k = 1; k + b <= xs_list[xi].nd; k++) {
        S xs = xs_list[xi];
        tp_tensor *in[2] = {gen(TP_F32, xs.nd, xs.d, NORMAL1, k % L_COUNT), NULL};
        int64_t ish[3];
        int ind = 0;
        if (b) ish[ind++] = xs.d[0];
        ish[ind++] = 3;
        ish[ind++] = k;
        int64_t ni = tp_shape_numel(ind, ish);
        double v[64];
        for (int64_t i = 0; i < ni; i++) {
          int64_t dn = xs.d[b + i % k];
          seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
          v[i] = (double)(int64_t)((seed >> 33) % (uint64_t)(2 * dn)) - (double)dn;
        }
        in[1] = from_values(TP_I64, ind, ish, v);
        tp_attrs at;
        tp_attrs_init(&at);
        at.dim = b;
        snprintf(lbl, sizeof lbl, "x ndim %d, batch_dims %d, k %d", xs.nd, b, k);
        run_case(lbl, TP_OP_GATHER_ND, 2, in, &at);
      }
}

/* argtopk: every dim, k from 0 to the dim, largest and smallest, float32
 * (with ties from small ints) and int64. */
static void cases_argtopk(void) {
  char lbl[256];
  static const S xs_list[] = {S1(7), S2(3, 5), S3(2, 4, 3)};
  for (int xi = 0; xi < 3; xi++)
    for (int d = 0; d < xs_list[xi].nd; d++)
      for (int largest = 0; largest < 2; largest++)
        for (int di = 0; di < 2; di++) {
          S xs = xs_list[xi];
          int64_t k = (xi + d + largest) % (xs.d[d] + 1);
          tp_tensor *in[1] = {gen(di ? TP_I64 : TP_F32, xs.nd, xs.d, di ? (dist){D_INT, 4, 0} : NORMAL1, d % L_COUNT)};
          tp_attrs at;
          tp_attrs_init(&at);
          at.dim = d;
          at.k = k;
          at.largest = largest;
          snprintf(lbl, sizeof lbl, "x ndim %d, dim %d, k %lld, largest %d, %s", xs.nd, d, (long long)k, largest,
                   di ? "int64" : "float32");
          run_case(lbl, TP_OP_ARGTOPK, 1, in, &at);
        }
}

/* mod, fmod, bitwise_*: int32 / int64, broadcast and strided layouts;
 * divisors nonzero, both signs (the zero divisor is test_ops_int.c's). */
static void cases_int(tp_op op) {
  char lbl[256];
  static const S as[] = {S2(4, 5), S2(4, 5), S3(2, 3, 4)}, bs[] = {S2(4, 5), S1(5), S2(3, 1)};
  for (int si = 0; si < 3; si++)
    for (int di = 0; di < 2; di++)
      for (int l = 0; l < L_COUNT; l++) {
        tp_dtype dt = di ? TP_I64 : TP_I32;
        tp_tensor *in[2] = {gen(dt, as[si].nd, as[si].d, (dist){D_INT, 60, 0}, l), NULL};
        double v[64];
        int64_t nb = tp_shape_numel(bs[si].nd, bs[si].d);
        for (int64_t i = 0; i < nb; i++) v[i] = (double)((i * 7 + si + l) % 13 - 6) + ((i * 7 + si + l) % 13 == 6);
        in[1] = from_values(dt, bs[si].nd, bs[si].d, v);
        snprintf(lbl, sizeof lbl, "a ndim %d, b ndim %d, %s, layout %d", as[si].nd, bs[si].nd, tp_dtype_name(dt), l);
        if (op == TP_OP_BITWISE_NOT) tp_tensor_release(in[1]), in[1] = NULL;
        run_case(lbl, op, op == TP_OP_BITWISE_NOT ? 1 : 2, in, NULL);
      }
}

/* det: n 0..5, batched, strided layouts; one singular matrix (rows equal). */
static void cases_det(void) {
  char lbl[256];
  static const S xs[] = {S2(1, 1), S2(2, 2), S2(3, 3), S3(4, 4, 4), S3(2, 5, 5), S3(3, 0, 0)};
  for (int si = 0; si < 6; si++)
    for (int l = 0; l < L_COUNT; l++) {
      tp_tensor *in[1] = {gen(TP_F32, xs[si].nd, xs[si].d, NORMAL1, l)};
      snprintf(lbl, sizeof lbl, "x ndim %d, n %lld, layout %d", xs[si].nd, (long long)xs[si].d[xs[si].nd - 1], l);
      run_case(lbl, TP_OP_DET, 1, in, NULL);
    }
  int64_t sh[2] = {3, 3};
  double v[9] = {1, 2, 3, 1, 2, 3, 4, 5, 6};
  tp_tensor *in[1] = {from_values(TP_F32, 2, sh, v)};
  run_case("singular 3x3", TP_OP_DET, 1, in, NULL);
}

/* grid_sample: every mode, padding and align_corners, 2-D and 3-D, the
 * grid from N(0, 1) (so many points fall outside [-1, 1]) and x in every
 * layout. */
static void cases_grid_sample(void) {
  char lbl[256];
  static const int64_t x2[4] = {2, 3, 4, 5}, g2[4] = {2, 3, 2, 2}, x3[5] = {1, 2, 3, 2, 4}, g3[5] = {1, 2, 3, 2, 3};
  for (int k = 2; k <= 3; k++)
    for (int mode = 0; mode < 3; mode++)
      for (int pad = 0; pad < 3; pad++)
        for (int ac = 0; ac < 2; ac++) {
          int lay = (mode + pad + ac) % L_COUNT;
          tp_tensor *in[2] = {gen(TP_F32, k + 2, k == 2 ? x2 : x3, NORMAL1, lay),
                              gen(TP_F32, k + 2, k == 2 ? g2 : g3, NORMAL1, 0)};
          tp_attrs at;
          tp_attrs_init(&at);
          at.dim = mode, at.dim1 = pad, at.keepdim = ac;
          snprintf(lbl, sizeof lbl, "%d-D, mode %d, padding %d, align_corners %d, layout %d", k, mode, pad, ac, lay);
          run_case(lbl, TP_OP_GRID_SAMPLE, 2, in, &at);
        }
}

/* roi_align: avg and max, both coordinate modes, fixed and adaptive
 * sampling, regions inside, across and outside the image, x in every layout. */
#include "cases_lowp.h" /* bitcast, quantize, dequantize, matmul_int */

static void cases_roi_align(void) {
  char lbl[256];
  static const int64_t xs[4] = {2, 3, 6, 5}, rs[2] = {4, 4}, bs[1] = {4};
  static const double rv[16] = {0, 0, 4, 5, 1.5, 0.5, 3.2, 2.9, -2, -1, 7, 8, 9, 9, 12, 11}, bv[4] = {0, 1, 1, 0};
  for (int mode = 0; mode < 2; mode++)
    for (int half = 0; half < 2; half++)
      for (int sr = 0; sr < 3; sr += 2) {
        int lay = (mode + half + sr) % L_COUNT;
        tp_tensor *in[3] = {gen(TP_F32, 4, xs, NORMAL1, lay), from_values(TP_F32, 2, rs, rv), from_values(TP_I64, 1, bs, bv)};
        tp_attrs at;
        tp_attrs_init(&at);
        at.nints = 3;
        at.ints[0] = 3, at.ints[1] = 2, at.ints[2] = sr;
        at.dim = mode, at.keepdim = half, at.eps = 0.75;
        snprintf(lbl, sizeof lbl, "mode %d, half_pixel %d, sampling_ratio %d, layout %d", mode, half, sr, lay);
        run_case(lbl, TP_OP_ROI_ALIGN, 3, in, &at);
      }
}

