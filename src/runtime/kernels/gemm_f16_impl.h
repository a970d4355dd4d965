/* gemm_f16_impl.h - f32 GEMM whose packed B panels are float16 (included by
 * vec_impl.h, compiled once per ISA table, the AVX-512 one included).
 *
 *   C[M,N] = A[M,K] B[K,N] (+ bias[N]), A float32, B float16 packed once
 *   (gemm_pack_b_f16: half the bytes of the float32 panels).
 *
 * The micro-kernel converts each B vector to float32 in registers as it loads
 * it: F16C vcvtph2ps on the AVX2 table (built with -mf16c, chosen only on a
 * CPU with F16C), AVX-512F's 512-bit vcvtph2ps on the AVX-512 table.
 * Elsewhere (SSE2, generic, Wasm SIMD128) an exact integer conversion,
 * (h & 0x7fff) << 13 read as float32 times 2^112 (normal and subnormal
 * values), exponent 31 mapped to Inf / quiet NaN, the sign or-ed back,
 * converts each B panel once per block of MC_H rows into an L1 buffer that
 * the table's float32 micro-kernel reads (in registers it cost a 4x8 tile
 * about as much as its multiply-adds).
 * The conversion is exact, so the result equals the float32 GEMM of the
 * converted B up to summation order (the same tile and FMA use as the
 * float32 kernel of the table, so in practice the same bits).
 *
 * Layout: per KC_H block of depth, ceil(N/NR) panels of kc x NR halves
 * (zero-padded columns); panel (pc, jr) at pc * Npad + jr * kc. The blocking
 * is fixed (not changed by gemm_tune). */
#ifndef MR_H
#define MR_H MR
#define NRV_H NRV
#endif
#define NR_H (NRV_H * VW)
#define KC_H 256
#define MC_H (MR_H * 16)

/* 1: the micro-kernel converts B in registers (vcvtph2ps); 0: the integer
 * conversion, once per B panel and block of rows (below) */
#if (VW == 8 && defined(__F16C__)) || (VW == 16 && defined(__AVX512F__))
#define CVT_IN_REGISTERS 1
#else
#define CVT_IN_REGISTERS 0
#endif

typedef uint16_t vh16 __attribute__((vector_size(VW * 2)));
typedef uint32_t vu32 __attribute__((vector_size(VW * 4)));

/* VW float16 bit patterns at p -> float32, exact (kernels.h: f16_to_f32) */
static inline vf FN(cvt_h)(const uint16_t *p) {
#if CVT_IN_REGISTERS && VW == 8
  return (vf)_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)p));
#elif CVT_IN_REGISTERS && VW == 16
  return (vf)_mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)p));
#else
  vh16 h;
  memcpy(&h, p, sizeof h);
  vu32 x = __builtin_convertvector(h, vu32);
  vu32 m = (x & 0x7fffu) << 13;
  vu32 f = (vu32)((vf)m * splat(0x1p112f));        /* normal and subnormal: exact */
  vu32 special = (vu32)((x & 0x7c00u) == 0x7c00u); /* all ones where Inf / NaN */
  vu32 nanq = (vu32)((x & 0x3ffu) != 0) & 0x400000u;
  vu32 inf = m | 0x7f800000u | nanq;               /* Inf, or NaN made quiet */
  f = (special & inf) | (~special & f);
  return (vf)(f | ((x & 0x8000u) << 16));
#endif
}

static void FN(f16_to_f32)(const uint16_t *h, float *y, int64_t n) {
  int64_t i = 0;
  for (; i + VW <= n; i += VW) st(y + i, FN(cvt_h)(h + i));
  if (i < n) { /* the tail through a padded copy: the same vector formula */
    uint16_t t[VW] = {0};
    float o[VW];
    memcpy(t, h + i, sizeof(uint16_t) * (size_t)(n - i));
    st(o, FN(cvt_h)(t));
    memcpy(y + i, o, sizeof(float) * (size_t)(n - i));
  }
}

/* VW float32 -> float16 bit patterns, round to nearest, ties to even
 * (kernels.h: f32_to_f16; the bits of tp_f32_to_f16): F16C / AVX-512F
 * vcvtps2ph with the rounding in its immediate, else integer ops: normal
 * results (ax - 0x38000000 + 0xfff + lsb) >> 13, whose carry rounds into the
 * exponent and reaches Inf at 65520; subnormal ones by the float addition
 * ax + 0.5 (2^-24 is then the unit of its last place, so the hardware's
 * rounding, to nearest even, does it); NaN quiet with its top payload bits. */
static inline void FN(cvt_f)(const float *p, uint16_t *o) {
#if CVT_IN_REGISTERS && VW == 8
  _mm_storeu_si128((__m128i *)o, _mm256_cvtps_ph(_mm256_loadu_ps(p), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#elif CVT_IN_REGISTERS && VW == 16
  _mm256_storeu_si256((__m256i *)o, _mm512_cvtps_ph(_mm512_loadu_ps(p), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#else
  vu32 x;
  memcpy(&x, p, sizeof x);
  vu32 ax = x & 0x7fffffffu, sign = (x >> 16) & 0x8000u;
  vu32 nrm = (ax - 0x38000000u + 0xfffu + ((ax >> 13) & 1u)) >> 13;
  vf sf;
  memcpy(&sf, &ax, sizeof sf);
  vu32 sub = (vu32)(sf + splat(0.5f)) - 0x3f000000u;
  vu32 is_sub = (vu32)(ax < 0x38800000u), is_big = (vu32)(ax >= 0x477ff000u), is_nan = (vu32)(ax > 0x7f800000u);
  vu32 r = (is_sub & sub) | (~is_sub & nrm);
  r = (is_big & 0x7c00u) | (~is_big & r);
  r = (is_nan & (0x7e00u | ((ax >> 13) & 0x3ffu))) | (~is_nan & r);
  vh16 h = __builtin_convertvector(r | sign, vh16);
  memcpy(o, &h, sizeof h);
#endif
}

static void FN(f32_to_f16)(const float *x, uint16_t *h, int64_t n) {
  int64_t i = 0;
  for (; i + VW <= n; i += VW) FN(cvt_f)(x + i, h + i);
  if (i < n) { /* the tail through a padded copy: the same vector formula */
    float t[VW] = {0};
    uint16_t o[VW];
    memcpy(t, x + i, sizeof(float) * (size_t)(n - i));
    FN(cvt_f)(t, o);
    memcpy(h + i, o, sizeof(uint16_t) * (size_t)(n - i));
  }
}

static void FN(pack_a_h)(int64_t mc, int64_t kc, const float *A, int64_t rsa, int64_t csa,
                         float *dst) {
  for (int64_t i0 = 0; i0 < mc; i0 += MR_H) {
    int64_t mr = mc - i0 < MR_H ? mc - i0 : MR_H;
    for (int64_t k = 0; k < kc; k++) {
      for (int64_t i = 0; i < mr; i++) dst[i] = A[(i0 + i) * rsa + k * csa];
      for (int64_t i = mr; i < MR_H; i++) dst[i] = 0;
      dst += MR_H;
    }
  }
}

static void FN(pack_b_h)(int64_t kc, int64_t nc, const uint16_t *B, int64_t rsb, int64_t csb,
                         uint16_t *dst) {
  for (int64_t j0 = 0; j0 < nc; j0 += NR_H) {
    int64_t nr = nc - j0 < NR_H ? nc - j0 : NR_H;
    for (int64_t k = 0; k < kc; k++) {
      const uint16_t *src = B + k * rsb + j0 * csb;
      for (int64_t j = 0; j < nr; j++) dst[j] = src[j * csb];
      for (int64_t j = nr; j < NR_H; j++) dst[j] = 0;
      dst += NR_H;
    }
  }
}

#if CVT_IN_REGISTERS
CONTRACT_ATTR
static void FN(ukernel_h)(int64_t kc, const float *a, const uint16_t *b, float *c, int64_t ldc,
                          int first, const float *bias, int64_t mr, int64_t nr) {
  CONTRACT
  vf acc[MR_H][NRV_H];
  for (int i = 0; i < MR_H; i++)
    for (int j = 0; j < NRV_H; j++) acc[i][j] = splat(0);
  for (int64_t k = 0; k < kc; k++) {
    vf bv[NRV_H];
    for (int j = 0; j < NRV_H; j++) bv[j] = FN(cvt_h)(b + k * NR_H + j * VW);
    for (int i = 0; i < MR_H; i++) {
      vf av = bcast(a[k * MR_H + i]);
      for (int j = 0; j < NRV_H; j++) acc[i][j] += av * bv[j];
    }
  }
  if (mr == MR_H && nr == NR_H) {
    for (int i = 0; i < MR_H; i++)
      for (int j = 0; j < NRV_H; j++) {
        float *p = c + i * ldc + j * VW;
        vf base = first ? (bias ? ld(bias + j * VW) : splat(0)) : ld(p);
        st(p, base + acc[i][j]);
      }
    return;
  }
  float tmp[MR_H * NR_H];
  for (int i = 0; i < MR_H; i++)
    for (int j = 0; j < NRV_H; j++) st(tmp + i * NR_H + j * VW, acc[i][j]);
  for (int64_t i = 0; i < mr; i++)
    for (int64_t j = 0; j < nr; j++) {
      float base = first ? (bias ? bias[j] : 0.0f) : c[i * ldc + j];
      c[i * ldc + j] = base + tmp[i * NR_H + j];
    }
}
#endif

static KTLS float *pack_buf_h;

static void FN(gemm_release_h)(void) {
  free(pack_buf_h);
  pack_buf_h = NULL;
}

static size_t FN(tp_f16_gemm_pack_b_size)(int64_t K, int64_t N) {
  if (K <= 0 || N <= 0) return 0;
  return sizeof(uint16_t) * (size_t)K * (size_t)((N + NR_H - 1) / NR_H * NR_H);
}

static void FN(tp_f16_gemm_pack_b)(int64_t K, int64_t N, const uint16_t *B, int64_t rsb,
                                   int64_t csb, uint16_t *packed_out) {
  if (K <= 0 || N <= 0) return;
  int64_t Np = (N + NR_H - 1) / NR_H * NR_H;
  for (int64_t pc = 0; pc < K; pc += KC_H) {
    int64_t kc = K - pc < KC_H ? K - pc : KC_H;
    FN(pack_b_h)(kc, N, B + pc * rsb, rsb, csb, packed_out + pc * Np);
  }
}

/* columns [j0, j1) of C (j0 a multiple of NR_H, or 0) from the f16 panels */
static void FN(tp_f32_gemm_packed_f16_cols)(int64_t M, int64_t N, int64_t K, const float *A,
                                            int64_t rsa, int64_t csa, const uint16_t *pbp,
                                            int64_t j0, int64_t j1, float *C, int64_t ldc,
                                            const float *bias) {
  if (M <= 0 || N <= 0 || j0 < 0 || j1 > N || j0 >= j1 || j0 % NR_H) return;
  int64_t Np = (N + NR_H - 1) / NR_H * NR_H;
  if (K <= 0) {
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = j0; j < j1; j++) C[i * ldc + j] = bias ? bias[j] : 0.0f;
    return;
  }
  /* A block, then (integer conversion) one B panel converted to float32 */
  if (!pack_buf_h) pack_buf_h = aligned_alloc(64, sizeof(float) * ((size_t)MC_H * KC_H + (size_t)KC_H * NR_H));
  if (!pack_buf_h) { /* out of memory: unpacked scalar fallback, the same values */
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = j0; j < j1; j++) {
        float s = bias ? bias[j] : 0.0f;
        for (int64_t k = 0; k < K; k++) {
          int64_t pc = k / KC_H * KC_H, kc = K - pc < KC_H ? K - pc : KC_H;
          uint16_t h = pbp[pc * Np + j / NR_H * NR_H * kc + (k - pc) * NR_H + j % NR_H];
          float b[VW];
          uint16_t hv[VW] = {h};
          st(b, FN(cvt_h)(hv));
          s += A[i * rsa + k * csa] * b[0];
        }
        C[i * ldc + j] = s;
      }
    return;
  }
  float *pa = pack_buf_h;
  for (int64_t pc = 0; pc < K; pc += KC_H) {
    int64_t kc = K - pc < KC_H ? K - pc : KC_H;
    const uint16_t *bb = pbp + pc * Np;
    for (int64_t ic = 0; ic < M; ic += MC_H) {
      int64_t mc = M - ic < MC_H ? M - ic : MC_H;
      FN(pack_a_h)(mc, kc, A + ic * rsa + pc * csa, rsa, csa, pa);
      for (int64_t jr = j0; jr < j1; jr += NR_H) {
        int64_t nr = j1 - jr < NR_H ? j1 - jr : NR_H;
#if CVT_IN_REGISTERS
        for (int64_t ir = 0; ir < mc; ir += MR_H) {
          int64_t mr = mc - ir < MR_H ? mc - ir : MR_H;
          FN(ukernel_h)(kc, pa + ir * kc, bb + jr * kc, C + (ic + ir) * ldc + jr, ldc, pc == 0,
                        bias ? bias + jr : NULL, mr, nr);
        }
#else
        /* the integer conversion costs about as much as the FMAs it feeds:
         * the panel converted once (into L1) for the MC_H / MR_H row panels
         * of the block, then the table's float32 micro-kernel (the same
         * products in the same order as ukernel_h) */
        float *pbf = pa + (size_t)MC_H * KC_H;
        FN(f16_to_f32)(bb + jr * kc, pbf, kc * NR_H);
        for (int64_t ir = 0; ir < mc; ir += MR_H) {
          int64_t mr = mc - ir < MR_H ? mc - ir : MR_H;
          FN(tp_f32_gemm_ukernel)(kc, pa + ir * kc, pbf, C + (ic + ir) * ldc + jr, ldc, pc == 0,
                                  bias ? bias + jr : NULL, mr, nr, NULL);
        }
#endif
      }
    }
  }
}

static void FN(tp_f32_gemm_packed_f16)(int64_t M, int64_t N, int64_t K, const float *A,
                                       int64_t rsa, int64_t csa, const uint16_t *packed_b,
                                       float *C, int64_t ldc, const float *bias) {
  FN(tp_f32_gemm_packed_f16_cols)(M, N, K, A, rsa, csa, packed_b, 0, N, C, ldc, bias);
}
