/* plan.c - builds a plan for a Kernel IR program (tp_plan_new): the
 * arena of temporaries, each kernel's prepared loads, constant weights packed
 * once in the current ISA table's layout (GEMM B panels, float16 panels,
 * 1x1-conv A, conv weights, integer GEMM B, recurrent weights), shared with a
 * donor plan packed the same way; sub-plans of control flow; the
 * accelerator's attachment; and frees it. executor.c runs it. */
#include "plan_impl.h"
#include "../core/num.h"
#include <stdlib.h>
#include <string.h>

tp_plan_prof **tp_plan_prof_slot(tp_plan *pl) { return &pl->prof; }
tp_plan_prof *tp_plan_prof_of(const tp_plan *pl) { return pl->prof; }

const tp_kir_program *tp_plan_program(const tp_plan *pl) { return pl->p; }

void tp_plan_count_tuned(tp_plan *pl, int n) { pl->p->tuned += n; }

tp_status tp_plan_accelerate(tp_plan *pl, const tp_lower_accel *a, int use_cache) {
  if (!a || pl->accel) return TP_OK;
  void *state = NULL;
  TP_TRY(a->prepare(pl, use_cache, &state));
  if (state) pl->accel = a, pl->accel_state = state;
  return TP_OK;
}

int tp_plan_accel_kernels(tp_plan *pl) {
  return pl->accel && pl->accel->kernels ? pl->accel->kernels(pl->accel_state, pl) : 0;
}

int tp_plan_accel_generated(tp_plan *pl, int k) {
  return pl->accel && pl->accel->generated ? pl->accel->generated(pl->accel_state, pl, k) : 0;
}

const uint8_t *tp_plan_accel_module(tp_plan *pl, size_t *len) {
  *len = 0;
  return pl->accel && pl->accel->module ? pl->accel->module(pl->accel_state, len) : NULL;
}

void tp_plan_free(tp_plan *pl) {
  if (!pl) return;
  for (int i = 0; pl->tuples && i < pl->p->nkernels; i++) {
    for (int q = 0; pl->tuples[i] && pl->tuples[i][q]; q++) tp_tensor_release(pl->tuples[i][q]);
    tp_free(pl->tuples[i]);
  }
  tp_free(pl->tuples);
  for (int i = 0; pl->subs && i < 2 * pl->p->nkernels; i++) tp_plan_free(pl->subs[i]);
  tp_free(pl->subs);
#define OWN(i, bit) (!pl->borrowed || !(pl->borrowed[i] & (bit)))
  for (int i = 0; pl->packed && i < pl->p->nkernels; i++)
    if (OWN(i, 1)) tp_free(pl->packed[i]);
  tp_free(pl->packed);
  for (int i = 0; pl->packed_a && i < pl->p->nkernels; i++)
    if (OWN(i, 2)) tp_free(pl->packed_a[i]);
  tp_free(pl->packed_a);
  for (int i = 0; pl->packed_h && i < pl->p->nkernels; i++) tp_free(pl->packed_h[i]);
  tp_free(pl->packed_h);
  for (int i = 0; pl->qmm && i < pl->p->nkernels; i++)
    if (OWN(i, 4)) tp_qmm_b_free(&pl->qmm[i]);
  tp_free(pl->qmm);
  tp_free(pl->borrowed);
#undef OWN
  if (pl->accel) pl->accel->release(pl->accel_state);
  tp_free(pl->arena_raw);
  tp_free(pl->preps);
  tp_free(pl->scratch);
  tp_free(pl->par_scratch);
  tp_free(pl->bpack);
  tp_plan_prof_free(pl->prof);
  tp_kir_program_free(pl->p);
  tp_free(pl);
}

tp_status tp_plan_set_subplan(tp_plan *pl, int k, int which, tp_plan *sub) {
  int n = 2 * pl->p->nkernels;
  if (k < 0 || k >= pl->p->nkernels || which < 0 || which > 1) {
    tp_plan_free(sub);
    return tp_fail(TP_ERR_INTERNAL, "plan: sub-plan %d of kernel %d out of range", which, k);
  }
  if (!pl->subs) {
    pl->subs = tp_alloc(sizeof(tp_plan *) * (size_t)n);
    if (!pl->subs) {
      tp_plan_free(sub);
      return TP_ERR_OUT_OF_MEMORY;
    }
    memset(pl->subs, 0, sizeof(tp_plan *) * (size_t)n);
  }
  tp_plan_free(pl->subs[2 * k + which]);
  pl->subs[2 * k + which] = sub;
  return TP_OK;
}

int tp_plan_nsubplans(const tp_plan *pl) { return pl->subs ? 2 * pl->p->nkernels : 0; }
tp_plan *tp_plan_subplan(const tp_plan *pl, int i) {
  return pl->subs && i >= 0 && i < 2 * pl->p->nkernels ? pl->subs[i] : NULL;
}

/* A constant buffer (or a view of one) as a tensor shell over the
 * constant's data; 0 when b is not constant. */
static int const_shell(const tp_kir_program *p, int b, tp_storage *st, tp_tensor *t) {
  int base = b;
  int64_t off = 0;
  while (p->bufs[base].kind == TP_KBUF_VIEW) {
    off += p->bufs[base].offset;
    base = p->bufs[base].base;
  }
  if (p->bufs[base].kind != TP_KBUF_CONST || !p->bufs[base].value) return 0;
  const tp_kir_buf *x = &p->bufs[b];
  memset(st, 0, sizeof *st);
  memset(t, 0, sizeof *t);
  st->refs = t->refs = 1 << 30; /* never freed through the shell */
  st->data = st->raw = tp_tensor_ptr(p->bufs[base].value);
  st->bytes = (size_t)tp_tensor_numel(p->bufs[base].value) * tp_dtype_size(x->desc.dtype);
  t->dtype = x->desc.dtype;
  t->ndim = x->desc.ndim;
  memcpy(t->shape, x->desc.shape, sizeof t->shape);
  memcpy(t->strides, x->strides, sizeof t->strides);
  t->offset = off;
  t->storage = st;
  t->node = -1;
  return 1;
}

/* matmul_int kernels whose B (and B's zero point) are constants: B packed
 * once for the integer GEMM (ops.h's tp_qmm_pack_b), not on every run. */
static tp_status pack_qmm(tp_plan *pl) {
  const tp_kir_program *p = pl->p;
  for (int k = 0; k < p->nkernels; k++) {
    const tp_kir_kernel *kk = &p->kernels[k];
    if (pl->borrowed && (pl->borrowed[k] & 4)) continue;
    tp_op op = kk->kind == TP_KK_OP && kk->node >= 0 ? p->graph->nodes[kk->node].op : TP_OP_COUNT;
    int conv = op == TP_OP_CONV2D_INT || op == TP_OP_QCONV2D;
    if ((op != TP_OP_MATMUL_INT && op != TP_OP_QMATMUL && !conv) || kk->nops < 2 || kk->op_bufs[1] < 0)
      continue;
    tp_storage sb, sz, ss, sbi;
    tp_tensor b, z, sc, bi;
    int has_z = kk->nops > 3 && kk->op_bufs[3] >= 0, has_s = op == TP_OP_QMATMUL || op == TP_OP_QCONV2D;
    /* qconv2d's int32 bias is packed with the weight (added to the sum) */
    int has_bi = op == TP_OP_QCONV2D && kk->nops > 6 && kk->op_bufs[6] >= 0 && p->bufs[kk->op_bufs[6]].desc.dtype == TP_I32;
    if (!const_shell(p, kk->op_bufs[1], &sb, &b) || (has_z && !const_shell(p, kk->op_bufs[3], &sz, &z)) ||
        (has_s && (kk->op_bufs[5] < 0 || !const_shell(p, kk->op_bufs[5], &ss, &sc))) ||
        (has_bi && !const_shell(p, kk->op_bufs[6], &sbi, &bi)))
      continue;
    if (!pl->qmm) {
      size_t bytes = sizeof(tp_qmm_b) * (size_t)p->nkernels;
      if (!(pl->qmm = tp_alloc(bytes))) return TP_ERR_OUT_OF_MEMORY;
      memset(pl->qmm, 0, bytes);
    }
    if (conv) /* w [M, C, KH, KW] as W^T */
      TP_TRY(tp_qconv_pack_w(&b, has_z ? &z : NULL, has_s ? &sc : NULL, has_bi ? &bi : NULL,
                             p->graph->nodes[kk->node].attrs.dim, &pl->qmm[k]));
    else
      TP_TRY(tp_qmm_pack_b(&b, has_z ? &z : NULL, has_s ? &sc : NULL, &pl->qmm[k]));
  }
  return TP_OK;
}

/* rnn / gru / lstm kernels whose W and R are constants: both packed once
 * for the op's GEMMs (tp_recurrent_pack), kept in packed[] (a TP_KK_OP
 * kernel has no GEMM B of its own there). */
static tp_status pack_recurrent(tp_plan *pl) {
  const tp_kir_program *p = pl->p;
  for (int k = 0; k < p->nkernels; k++) {
    const tp_kir_kernel *kk = &p->kernels[k];
    tp_op op = kk->kind == TP_KK_OP && kk->node >= 0 ? p->graph->nodes[kk->node].op : TP_OP_COUNT;
    if ((op != TP_OP_RNN && op != TP_OP_GRU && op != TP_OP_LSTM) || kk->nops < 3 || pl->packed[k]) continue;
    tp_storage sw, sr;
    tp_tensor w, r;
    if (kk->op_bufs[1] < 0 || kk->op_bufs[2] < 0 || !const_shell(p, kk->op_bufs[1], &sw, &w) ||
        !const_shell(p, kk->op_bufs[2], &sr, &r))
      continue;
    tp_rnn_pack *pk = NULL;
    TP_TRY(tp_recurrent_pack(op, &p->graph->nodes[kk->node].attrs, &w, &r, &pk));
    pl->packed[k] = pk;
  }
  return TP_OK;
}

/* Whether kernel k of a and b packs the same constant operand (bit 1: B,
 * 2: A) the same way. */
static int same_packing(const tp_kir_program *a, const tp_kir_program *b, int k, int bit) {
  if (k >= a->nkernels || k >= b->nkernels) return 0;
  const tp_kir_kernel *x = &a->kernels[k], *y = &b->kernels[k];
  if (x->kind != y->kind || x->tune_kc != y->tune_kc || x->tune_mc != y->tune_mc || x->batch != y->batch ||
      x->b_f16 != y->b_f16)
    return 0;
  if (x->kind == TP_KK_OP) /* integer GEMM, recurrent weights: the same constant operands */
    return x->node == y->node && x->nops == y->nops && !memcmp(x->op_bufs, y->op_bufs, sizeof x->op_bufs) &&
           x->nops > 1 && x->op_bufs[1] >= 0 && a->bufs[x->op_bufs[1]].desc.ndim == b->bufs[y->op_bufs[1]].desc.ndim &&
           !memcmp(a->bufs[x->op_bufs[1]].desc.shape, b->bufs[y->op_bufs[1]].desc.shape, sizeof(int64_t) * TP_MAX_DIMS);
  if (x->kind != TP_KK_GEMM) return 0;
  if (bit == 1)
    return x->b_buf == y->b_buf && a->bufs[x->b_buf].value == b->bufs[y->b_buf].value && x->K == y->K && x->N == y->N &&
           x->b_off == y->b_off && x->b_rs == y->b_rs && x->b_cs == y->b_cs;
  return x->a_buf == y->a_buf && a->bufs[x->a_buf].value == b->bufs[y->a_buf].value && x->M == y->M && x->K == y->K &&
         x->a_off == y->a_off && x->a_rs == y->a_rs && x->a_cs == y->a_cs;
}

/* Subnormal values in a packed constant weight set to zero (the sign kept).
 * A subnormal operand costs x86 an FMA microcode assist (about 150 cycles):
 * PP-OCRv4 rec's squeeze-excite weights (pruned channels, many subnormal)
 * ran its 120x1x480 GEMM at 0.18 GFLOP/s (0.63 ms, against 0.048 ms with
 * them flushed). A subnormal weight's product is below 2^-126 |x|, absorbed
 * by any sum above about 2^-102 |x|: results change only for sums that
 * small next to the activation x (docs/architecture.md, "Threads").
 * Applied to the plan's packed copies only (eager and the graph's
 * constants keep them). */
static void flush_subnormals(float *p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    uint32_t u;
    memcpy(&u, &p[i], sizeof u);
    if (!(u & 0x7f800000u) && (u & 0x007fffffu)) {
      u &= 0x80000000u;
      memcpy(&p[i], &u, sizeof u);
    }
  }
}

static tp_status plan_new(tp_kir_program *p, const tp_plan *donor, tp_plan **out);
tp_status tp_plan_new(tp_kir_program *p, tp_plan **out) { return plan_new(p, NULL, out); }
tp_status tp_plan_new_shared(tp_kir_program *p, const tp_plan *donor, tp_plan **out) {
  return plan_new(p, donor, out);
}

static tp_status plan_new(tp_kir_program *p, const tp_plan *donor, tp_plan **out) {
  tp_plan *pl = tp_alloc(sizeof *pl);
  if (!pl) {
    tp_kir_program_free(p);
    return TP_ERR_OUT_OF_MEMORY;
  }
  memset(pl, 0, sizeof *pl);
  pl->p = p;
  if ((uint64_t)p->arena_bytes > (uint64_t)(SIZE_MAX - 2 * TP_ALIGN)) { /* wasm32 */
    tp_plan_free(pl);
    return tp_fail(TP_ERR_OUT_OF_MEMORY,
                   "stax: the plan's temporaries need %lld bytes, more than this build's "
                   "address space", (long long)p->arena_bytes);
  }
  pl->preps = tp_alloc(sizeof(prep) * (size_t)(p->nkernels ? p->nkernels : 1));
  pl->scratch = tp_alloc(sizeof(float) * SCRATCH_FLOATS);
  pl->arena_raw = tp_alloc((size_t)p->arena_bytes + TP_ALIGN);
  pl->tuples = tp_alloc(sizeof(tp_tensor **) * (size_t)(p->nkernels ? p->nkernels : 1));
  if (pl->tuples) memset(pl->tuples, 0, sizeof(tp_tensor **) * (size_t)(p->nkernels ? p->nkernels : 1));
  if (!pl->preps || !pl->scratch || !pl->arena_raw || !pl->tuples) {
    tp_plan_free(pl);
    return TP_ERR_OUT_OF_MEMORY;
  }
  pl->arena = (char *)(((uintptr_t)pl->arena_raw + TP_ALIGN - 1) & ~(uintptr_t)(TP_ALIGN - 1));
  for (int k = 0; k < p->nkernels; k++) tp_kir_prepare(&p->kernels[k], &pl->preps[k]);
  /* constant weights: pack B once, in the layout of the current ISA table */
  const tp_kernels *K = tp_kern();
  size_t nptr = sizeof(void *) * (size_t)(p->nkernels ? p->nkernels : 1);
  if ((pl->packed = tp_alloc(nptr))) memset(pl->packed, 0, nptr);
  if ((pl->packed_a = tp_alloc(nptr))) memset(pl->packed_a, 0, nptr);
  if ((pl->packed_h = tp_alloc(nptr))) memset(pl->packed_h, 0, nptr);
  if (!pl->packed || !pl->packed_a || !pl->packed_h) {
    tp_plan_free(pl);
    return TP_ERR_OUT_OF_MEMORY;
  }
  pl->packed_by = K;
  if (donor && donor->packed_by == K) { /* borrow what the donor packed the same way */
    size_t nb = (size_t)(p->nkernels ? p->nkernels : 1);
    if (!(pl->borrowed = tp_alloc(nb))) {
      tp_plan_free(pl);
      return TP_ERR_OUT_OF_MEMORY;
    }
    memset(pl->borrowed, 0, nb);
    for (int k = 0; k < p->nkernels; k++) {
      if (k >= donor->p->nkernels) break;
      if (donor->packed && donor->packed[k] && same_packing(p, donor->p, k, 1))
        pl->packed[k] = donor->packed[k], pl->borrowed[k] |= 1;
      if (donor->packed_a && donor->packed_a[k] && same_packing(p, donor->p, k, 2))
        pl->packed_a[k] = donor->packed_a[k], pl->borrowed[k] |= 2;
    }
    if (donor->qmm) {
      size_t bytes = sizeof(tp_qmm_b) * (size_t)p->nkernels;
      int any = 0;
      for (int k = 0; k < p->nkernels && k < donor->p->nkernels; k++) any |= donor->qmm[k].p && same_packing(p, donor->p, k, 4);
      if (any) {
        if (!(pl->qmm = tp_alloc(bytes))) {
          tp_plan_free(pl);
          return TP_ERR_OUT_OF_MEMORY;
        }
        memset(pl->qmm, 0, bytes);
        for (int k = 0; k < p->nkernels && k < donor->p->nkernels; k++)
          if (donor->qmm[k].p && same_packing(p, donor->p, k, 4)) pl->qmm[k] = donor->qmm[k], pl->borrowed[k] |= 4;
      }
    }
  }
  for (int k = 0; p->autotune && !donor && k < p->nkernels; k++)
    if (p->kernels[k].kind == TP_KK_GEMM && p->kernels[k].batch == 1 && !p->kernels[k].b_f16) {
      tp_status s = tp_autotune_gemm(p, &p->kernels[k]);
      if (s) {
        tp_plan_free(pl);
        return s;
      }
    }
  for (int k = 0; K->gemm_pack_b && k < p->nkernels; k++) {
    const tp_kir_kernel *kk = &p->kernels[k];
    if (kk->kind != TP_KK_GEMM || !kk->b_const || kk->batch != 1 || kk->b_f16 || pl->packed[k]) continue;
    size_t bytes = K->gemm_pack_b_size(kk->K, kk->N);
    if (!bytes) continue;
    /* 64-byte alignment: tp_alloc gives 16; over-allocate and align */
    char *raw = tp_alloc(bytes + 64 + sizeof(void *));
    if (!raw) {
      tp_plan_free(pl);
      return TP_ERR_OUT_OF_MEMORY;
    }
    pl->packed[k] = raw;
    char *aligned = (char *)(((uintptr_t)raw + sizeof(void *) + 63) & ~(uintptr_t)63);
    const tp_tensor *B = p->bufs[kk->b_buf].value;
    if (K->gemm_tune) K->gemm_tune(kk->tune_kc, kk->tune_mc); /* the layout follows KC */
    K->gemm_pack_b(kk->K, kk->N, (const float *)tp_tensor_ptr(B) + kk->b_off, kk->b_rs, kk->b_cs,
                   (float *)aligned);
    if (K->gemm_tune) K->gemm_tune(0, 0);
    flush_subnormals((float *)aligned, bytes / sizeof(float));
  }
  /* a constant A (the weight of a 1x1 convolution, whose activation is B):
   * packed once too, where B is not (the GEMM packed it on every call:
   * pack_a was 7.8% of PP-OCRv4 detection's CPU time natively) */
  for (int k = 0; K->gemm_pack_a && k < p->nkernels; k++) {
    const tp_kir_kernel *kk = &p->kernels[k];
    if (kk->kind != TP_KK_GEMM || pl->packed[k] || pl->packed_a[k] || kk->b_f16 || kk->batch != 1 ||
        p->bufs[kk->a_buf].kind != TP_KBUF_CONST || !p->bufs[kk->a_buf].value)
      continue;
    size_t bytes = K->gemm_pack_a_size(kk->M, kk->K);
    if (!bytes) continue;
    char *raw = tp_alloc(bytes + 64 + sizeof(void *));
    if (!raw) {
      tp_plan_free(pl);
      return TP_ERR_OUT_OF_MEMORY;
    }
    pl->packed_a[k] = raw;
    char *aligned = (char *)(((uintptr_t)raw + sizeof(void *) + 63) & ~(uintptr_t)63);
    const tp_tensor *A = p->bufs[kk->a_buf].value;
    if (K->gemm_tune) K->gemm_tune(kk->tune_kc, kk->tune_mc);
    K->gemm_pack_a(kk->M, kk->K, (const float *)tp_tensor_ptr(A) + kk->a_off, kk->a_rs, kk->a_cs,
                   (float *)aligned);
    if (K->gemm_tune) K->gemm_tune(0, 0);
    flush_subnormals((float *)aligned, bytes / sizeof(float));
  }
  /* a convolution's constant weight: packed (Winograd: transformed and
   * packed) once, in packed_a[k] (tp_conv_prep, ops.h); the conv checks it
   * matches before using it. A donor's (a dynamic template's first plan)
   * is borrowed when it was made for the path this size takes. */
  for (int k = 0; k < p->nkernels; k++) {
    const tp_kir_kernel *kk = &p->kernels[k];
    if ((kk->kind != TP_KK_CONV && kk->kind != TP_KK_OP) || kk->node < 0) continue;
    const tp_node *n = &p->graph->nodes[kk->node];
    if (n->op != TP_OP_CONV2D || kk->op_bufs[0] < 0 || kk->op_bufs[1] < 0) continue;
    const tp_kir_buf *wb = &p->bufs[kk->op_bufs[1]];
    tp_conv2d_geom g;
    if (wb->kind != TP_KBUF_CONST || !wb->value || wb->value->dtype != TP_F32 || !tp_tensor_is_contiguous(wb->value) ||
        tp_conv2d_geometry(&p->bufs[kk->op_bufs[0]].desc, &wb->desc, &n->attrs, &g))
      continue;
    const tp_kir_kernel *dk = donor && pl->borrowed && k < donor->p->nkernels ? &donor->p->kernels[k] : NULL;
    const tp_conv_prep *dp = dk && dk->node == kk->node && (dk->kind == TP_KK_CONV || dk->kind == TP_KK_OP)
                                 ? donor->packed_a[k] : NULL;
    if (dp && dp->path == tp_conv2d_path(&g) && dp->w == tp_tensor_ptr(wb->value) && dp->M == g.M && dp->C == g.C &&
        dp->KH == g.KH && dp->KW == g.KW && dp->G == g.G) {
      pl->packed_a[k] = (void *)dp, pl->borrowed[k] |= 2;
      continue;
    }
    if (pl->packed_a[k] && !(pl->borrowed && (pl->borrowed[k] & 2))) continue;
    if (pl->packed_a[k]) pl->packed_a[k] = NULL, pl->borrowed[k] &= (unsigned char)~2; /* for another path */
    tp_conv_prep *cp = NULL;
    tp_status s = tp_conv2d_prepare(&g, tp_tensor_ptr(wb->value), &cp);
    if (s) {
      tp_plan_free(pl);
      return s;
    }
    pl->packed_a[k] = cp;
  }
  /* a float16 constant B: float16 panels, packed once (half the bytes of
   * float32 ones; the float32 copy of the weight is never made) */
  for (int k = 0; K->gemm_pack_b_f16 && k < p->nkernels; k++) {
    const tp_kir_kernel *kk = &p->kernels[k];
    if (kk->kind != TP_KK_GEMM || !kk->b_f16 || kk->batch != 1) continue;
    size_t bytes = K->gemm_pack_b_f16_size(kk->K, kk->N);
    if (!bytes) continue;
    char *raw = tp_alloc(bytes + 64 + sizeof(void *));
    if (!raw) {
      tp_plan_free(pl);
      return TP_ERR_OUT_OF_MEMORY;
    }
    pl->packed_h[k] = raw;
    char *aligned = (char *)(((uintptr_t)raw + sizeof(void *) + 63) & ~(uintptr_t)63);
    K->gemm_pack_b_f16(kk->K, kk->N, (const uint16_t *)tp_tensor_ptr(p->bufs[kk->b_buf].value) + kk->b_off,
                       kk->b_rs, kk->b_cs, (uint16_t *)aligned);
  }
  tp_status qs = pack_qmm(pl);
  if (!qs) qs = pack_recurrent(pl);
  if (qs) {
    tp_plan_free(pl);
    return qs;
  }
  *out = pl;
  return TP_OK;
}
