/* kir.c - Kernel IR utilities: the memory plan (liveness -> arena offsets,
 * in place where safe), the verifier and the printer. */
#include "lower.h"
#include <stdio.h>

static int root(const tp_kir_program *p, int b) {
  while (b >= 0 && p->bufs[b].kind == TP_KBUF_VIEW) b = p->bufs[b].base;
  return b;
}

static size_t buf_bytes(const tp_kir_buf *b) {
  return (size_t)tp_shape_numel(b->desc.ndim, b->desc.shape) * tp_dtype_size(b->desc.dtype);
}

/* Calls fn(buffer) for every buffer kernel k reads. */
static void reads(const tp_kir_program *p, const tp_kir_kernel *k, void (*fn)(void *, int), void *ud) {
  int used[TP_KIR_MAX_IN] = {0};
  const tp_kir_expr *es[TP_KIR_MAX_PHASES + 1];
  int ne = 0;
  if (k->kind == TP_KK_POINTWISE || k->kind == TP_KK_GEMM || k->kind == TP_KK_CONV) es[ne++] = &k->expr;
  if (k->kind == TP_KK_ROW)
    for (int q = 0; q < k->nphases; q++) es[ne++] = &k->phases[q].expr;
  for (int q = 0; q < ne; q++)
    for (int i = 0; i < es[q]->n; i++)
      if (es[q]->ins[i].op == TP_KI_LOAD) used[es[q]->ins[i].in] = 1;
  for (int i = 0; i < k->nin; i++)
    if (used[i]) fn(ud, root(p, k->in[i].buf));
  if (k->kind == TP_KK_GEMM) {
    fn(ud, root(p, k->a_buf));
    fn(ud, root(p, k->b_buf));
    if (k->bias_buf >= 0) fn(ud, root(p, k->bias_buf));
  }
  if (k->kind == TP_KK_OP || k->kind == TP_KK_CONV)
    for (int i = 0; i < k->nops; i++)
      if (k->op_bufs[i] >= 0) fn(ud, root(p, k->op_bufs[i]));
}

typedef struct live_ctx { tp_kir_program *p; int k; } live_ctx;
static void mark_read(void *ud, int b) {
  live_ctx *c = ud;
  if (b < 0) return;
  if (c->p->bufs[b].last < c->k) c->p->bufs[b].last = c->k;
}

typedef struct blk { int64_t off, size; } blk;

tp_status tp_memplan(tp_kir_program *p) {
  for (int b = 0; b < p->nbufs; b++) p->bufs[b].first = p->bufs[b].last = -1;
  for (int k = 0; k < p->nkernels; k++) {
    tp_kir_buf *o = &p->bufs[p->kernels[k].out];
    if (o->first < 0) o->first = o->last = k;
    live_ctx c = {p, k};
    reads(p, &p->kernels[k], mark_read, &c);
  }
  /* greedy best fit over a free list, in kernel order */
  blk *freel = tp_alloc(sizeof(blk) * (size_t)(p->nbufs + 1));
  if (!freel) return TP_ERR_OUT_OF_MEMORY;
  int nfree = 0;
  int64_t top = 0;
  p->naive_bytes = 0;
  for (int k = 0; k < p->nkernels; k++) {
    tp_kir_kernel *kk = &p->kernels[k];
    tp_kir_buf *o = &p->bufs[kk->out];
    if (o->kind == TP_KBUF_TEMP && o->first == k) {
      int64_t size = ((int64_t)buf_bytes(o) + TP_ALIGN - 1) & ~(int64_t)(TP_ALIGN - 1);
      if (size == 0) size = TP_ALIGN;
      p->naive_bytes += size;
      o->inplace_of = -1;
      /* in place: a pointwise input of the same size dying here, read
       * element for element like the output */
      if (p->memory_planning && kk->kind == TP_KK_POINTWISE) {
        int64_t cst[TP_MAX_DIMS], s = 1;
        for (int d = kk->nd - 1; d >= 0; d--) cst[d] = s, s *= kk->shape[d];
        for (int i = 0; i < kk->nin && o->inplace_of < 0; i++) {
          tp_kir_buf *b = &p->bufs[kk->in[i].buf];
          if (b->kind != TP_KBUF_TEMP || b->last != k || buf_bytes(b) != buf_bytes(o) || kk->in[i].offset ||
              b->desc.dtype != o->desc.dtype || /* a float16 load of half a buffer into float32: not in place */
              memcmp(kk->in[i].strides, cst, sizeof(int64_t) * (size_t)kk->nd))
            continue;
          int same_everywhere = 1;
          for (int j = 0; j < kk->nin; j++)
            if (j != i && kk->in[j].buf == kk->in[i].buf) same_everywhere = 0;
          if (!same_everywhere) continue;
          o->inplace_of = kk->in[i].buf;
          o->arena_off = b->arena_off;
          b->last = -2; /* its memory now belongs to o */
        }
      }
      if (o->inplace_of < 0) {
        int best = -1;
        if (p->memory_planning)
          for (int f = 0; f < nfree; f++)
            if (freel[f].size >= size && (best < 0 || freel[f].size < freel[best].size)) best = f;
        if (best >= 0) {
          o->arena_off = freel[best].off;
          freel[best].off += size;
          freel[best].size -= size;
          if (!freel[best].size) freel[best] = freel[--nfree];
        } else {
          o->arena_off = top;
          top += size;
        }
      }
    }
    /* free what dies at k */
    for (int b = 0; b < p->nbufs && p->memory_planning; b++) {
      tp_kir_buf *x = &p->bufs[b];
      if (x->kind != TP_KBUF_TEMP || x->first < 0 || x->first > k) continue;
      int dies = x->last == k || (x->last < 0 && x->first == k && x->last != -2);
      if (!dies || b == kk->out) continue;
      int64_t size = ((int64_t)buf_bytes(x) + TP_ALIGN - 1) & ~(int64_t)(TP_ALIGN - 1);
      if (!size) size = TP_ALIGN;
      freel[nfree++] = (blk){x->arena_off, size};
    }
    /* an output nobody reads dies right after its kernel */
    if (p->memory_planning && o->kind == TP_KBUF_TEMP && o->last == k && o->first == k) {
      int64_t size = ((int64_t)buf_bytes(o) + TP_ALIGN - 1) & ~(int64_t)(TP_ALIGN - 1);
      if (!size) size = TP_ALIGN;
      freel[nfree++] = (blk){o->arena_off, size};
    }
  }
  tp_free(freel);
  p->arena_bytes = top;
  return TP_OK;
}

/* ---- verify ---- */
tp_status tp_kir_verify(const tp_kir_program *p) {
  for (int k = 0; k < p->nkernels; k++) {
    const tp_kir_kernel *kk = &p->kernels[k];
    if (kk->out < 0 || kk->out >= p->nbufs)
      return tp_fail(TP_ERR_INTERNAL, "kir: %s writes buffer %d of %d", kk->name, kk->out, p->nbufs);
    const tp_kir_expr *es[TP_KIR_MAX_PHASES + 1];
    int ne = 0, rowvals = 0;
    if (kk->kind == TP_KK_POINTWISE || kk->kind == TP_KK_GEMM || kk->kind == TP_KK_CONV) es[ne++] = &kk->expr;
    if (kk->kind == TP_KK_ROW)
      for (int q = 0; q < kk->nphases; q++) es[ne++] = &kk->phases[q].expr;
    for (int q = 0; q < ne; q++) {
      const tp_kir_expr *e = es[q];
      if (kk->kind != TP_KK_GEMM && kk->kind != TP_KK_CONV && e->n < 1)
        return tp_fail(TP_ERR_INTERNAL, "kir: %s has an empty expression", kk->name);
      for (int i = 0; i < e->n; i++) {
        const tp_kir_ins *x = &e->ins[i];
        if (x->op >= TP_KI_OPCODE_COUNT) return tp_fail(TP_ERR_INTERNAL, "kir: %s: bad opcode", kk->name);
        int16_t ops[2] = {x->a, x->b};
        int need = x->op == TP_KI_UNARY ? 1 : x->op == TP_KI_BINARY ? 2 : 0;
        for (int o = 0; o < need; o++)
          if (ops[o] < 0 || ops[o] >= i)
            return tp_fail(TP_ERR_INTERNAL, "kir: %s: instruction %d uses %d", kk->name, i, ops[o]);
        if (x->op == TP_KI_LOAD && (x->in < 0 || x->in >= kk->nin))
          return tp_fail(TP_ERR_INTERNAL, "kir: %s: load of slot %d (of %d)", kk->name, x->in, kk->nin);
        if (x->op == TP_KI_ROWVAL && (kk->kind != TP_KK_ROW || x->in < 0 || x->in >= rowvals))
          return tp_fail(TP_ERR_INTERNAL, "kir: %s: row value %d is not computed yet", kk->name, x->in);
        if (x->op == TP_KI_ACC && kk->kind != TP_KK_GEMM && kk->kind != TP_KK_CONV)
          return tp_fail(TP_ERR_INTERNAL, "kir: %s: acc outside a GEMM or conv epilogue", kk->name);
      }
      if (kk->kind == TP_KK_ROW && kk->phases[q].is_reduce) rowvals++;
    }
    for (int i = 0; i < kk->nin; i++)
      if (kk->in[i].buf < 0 || kk->in[i].buf >= p->nbufs)
        return tp_fail(TP_ERR_INTERNAL, "kir: %s: slot %d reads buffer %d", kk->name, i, kk->in[i].buf);
  }
  return TP_OK;
}

/* ---- print ---- */
static const char *const kind_names[] = {"input", "const", "temp", "output", "view"};
static const char *const un_names[TP_KU_COUNT] = {"neg", "abs", "exp", "log", "sqrt", "rsqrt",
                                                  "tanh", "sigmoid", "relu", "gelu_erf", "gelu_tanh"};
static const char *const bin_names[TP_KBIN_COUNT] = {"add", "sub", "mul", "div", "pmax", "pmin", "maskpos"};

static void put_shape(tp_buf *b, int nd, const int64_t *s) {
  tp_buf_printf(b, "[");
  for (int i = 0; i < nd; i++) tp_buf_printf(b, i ? ",%lld" : "%lld", (long long)s[i]);
  tp_buf_printf(b, "]");
}

static void put_expr(tp_buf *b, const tp_kir_kernel *k, const tp_kir_expr *e, const char *indent) {
  for (int i = 0; i < e->n; i++) {
    const tp_kir_ins *x = &e->ins[i];
    tp_buf_printf(b, "%s  t%d = ", indent, i);
    switch (x->op) {
      case TP_KI_LOAD: {
        const tp_kir_load *L = &k->in[x->in];
        tp_buf_printf(b, "load b%d[%lld + ", L->buf, (long long)L->offset);
        put_shape(b, k->nd, L->strides);
        tp_buf_printf(b, ".i]");
        break;
      }
      case TP_KI_CONST: tp_buf_printf(b, "const %.9g", (double)x->imm); break;
      case TP_KI_ROWVAL: tp_buf_printf(b, "rowval r%d", x->in); break;
      case TP_KI_ACC: tp_buf_printf(b, "acc"); break;
      case TP_KI_UNARY: tp_buf_printf(b, "%s t%d", x->sub < TP_KU_COUNT ? un_names[x->sub] : "?", x->a); break;
      case TP_KI_BINARY: tp_buf_printf(b, "%s t%d, t%d", x->sub < TP_KBIN_COUNT ? bin_names[x->sub] : "?", x->a, x->b); break;
      default: tp_buf_printf(b, "?"); break;
    }
    tp_buf_printf(b, "\n");
  }
}

tp_status tp_kir_print(const tp_kir_program *p, char **out) {
  tp_buf b = {0};
  tp_buf_printf(&b, "kir program: %d kernels, %d buffers, arena %lld bytes (without reuse %lld)\n",
      p->nkernels, p->nbufs, (long long)p->arena_bytes, (long long)p->naive_bytes);
  for (int i = 0; i < p->nbufs; i++) {
    const tp_kir_buf *x = &p->bufs[i];
    tp_buf_printf(&b, "  b%d %s %s", i, kind_names[x->kind], tp_dtype_short(x->desc.dtype));
    put_shape(&b, x->desc.ndim, x->desc.shape);
    if (x->kind == TP_KBUF_TEMP) tp_buf_printf(&b, " @%lld%s", (long long)x->arena_off, x->inplace_of >= 0 ? " (in place)" : "");
    if (x->kind == TP_KBUF_VIEW) {
      tp_buf_printf(&b, " of b%d +%lld strides ", x->base, (long long)x->offset);
      put_shape(&b, x->desc.ndim, x->strides);
    }
    if (x->kind == TP_KBUF_INPUT || x->kind == TP_KBUF_OUTPUT) tp_buf_printf(&b, " #%d", x->index);
    tp_buf_printf(&b, "\n");
  }
  for (int k = 0; k < p->nkernels; k++) {
    const tp_kir_kernel *kk = &p->kernels[k];
    switch (kk->kind) {
      case TP_KK_POINTWISE:
        tp_buf_printf(&b, "kernel %s -> b%d over ", kk->name, kk->out);
        put_shape(&b, kk->nd, kk->shape);
        tp_buf_printf(&b, "\n");
        put_expr(&b, kk, &kk->expr, "");
        tp_buf_printf(&b, "  store t%d\n", kk->expr.n - 1);
        break;
      case TP_KK_ROW:
        tp_buf_printf(&b, "kernel %s -> b%d rows of ", kk->name, kk->out);
        put_shape(&b, kk->nd, kk->shape);
        tp_buf_printf(&b, "\n");
        for (int q = 0, rv = 0; q < kk->nphases; q++) {
          const tp_kir_phase *ph = &kk->phases[q];
          if (ph->is_reduce)
            tp_buf_printf(&b, "  r%d = %s over the row%s\n", rv++,
                ph->reduce == TP_KR_SUM ? "sum" : ph->reduce == TP_KR_MAX ? "max" : ph->reduce == TP_KR_MIN ? "min" : "minmax",
                ph->scale != 1.0f ? " (scaled)" : "");
          else
            tp_buf_printf(&b, "  map over the row:\n");
          put_expr(&b, kk, &ph->expr, "  ");
        }
        if (!kk->phases[kk->nphases - 1].is_reduce) tp_buf_printf(&b, "  store the map\n");
        else tp_buf_printf(&b, "  store r%d per row\n", 0);
        break;
      case TP_KK_GEMM:
        tp_buf_printf(&b, "kernel %s -> b%d gemm M=%lld N=%lld K=%lld batch=%lld A=b%d B=b%d%s bias=", kk->name,
            kk->out, (long long)kk->M, (long long)kk->N, (long long)kk->K, (long long)kk->batch,
            kk->a_buf, kk->b_buf, kk->b_f16 ? " (const float16, packed as float16)" : kk->b_const ? " (const, packed)" : "");
        if (kk->bias_buf >= 0) tp_buf_printf(&b, "b%d", kk->bias_buf);
        else tp_buf_printf(&b, "none");
        if (kk->tune_kc || kk->tune_mc) tp_buf_printf(&b, " tuned kc=%d mc=%d", kk->tune_kc, kk->tune_mc);
        tp_buf_printf(&b, "\n");
        if (kk->expr.n) {
          tp_buf_printf(&b, "  epilogue:\n");
          put_expr(&b, kk, &kk->expr, "  ");
        }
        break;
      case TP_KK_OP:
        if (kk->node >= 0)
          tp_buf_printf(&b, "kernel %s -> b%d eager %s(", kk->name, kk->out, tp_op_name(p->graph->nodes[kk->node].op));
        else
          tp_buf_printf(&b, "kernel %s -> b%d copy(", kk->name, kk->out);
        for (int i = 0; i < kk->nops; i++) tp_buf_printf(&b, i ? ", b%d" : "b%d", kk->op_bufs[i]);
        tp_buf_printf(&b, ")\n");
        break;
      case TP_KK_CONV:
        tp_buf_printf(&b, "kernel %s -> b%d conv2d(", kk->name, kk->out);
        for (int i = 0; i < kk->nops; i++) tp_buf_printf(&b, i ? ", b%d" : "b%d", kk->op_bufs[i]);
        tp_buf_printf(&b, ") over ");
        put_shape(&b, kk->nd, kk->shape);
        tp_buf_printf(&b, "\n");
        if (kk->expr.n) {
          tp_buf_printf(&b, "  epilogue:\n");
          put_expr(&b, kk, &kk->expr, "  ");
        }
        break;
      default: break;
    }
  }
  if (b.oom) {
    tp_free(b.p);
    return tp_fail(TP_ERR_OUT_OF_MEMORY, "kir print: out of memory");
  }
  *out = b.p;
  return TP_OK;
}

/* Appends expression e (its loads in[0 .. nin)) to GEMM / conv kernel k's
 * epilogue, whose value (its last instruction) stands for every load of
 * buffer B in e; e's other loads join k's slots (shared when equal), k's
 * slots reading B (the unused accumulator slot) now name ob. 0 (k
 * unchanged) when the slots or instructions do not fit. */
int tp_kir_append_epilogue(tp_kir_kernel *k, const tp_kir_expr *e, const tp_kir_load *in, int nin, int B,
                           int ob) {
  tp_kir_expr x = k->expr;
  tp_kir_load sl[TP_KIR_MAX_IN];
  int ns = k->nin, val = x.n - 1, smap[TP_KIR_MAX_IN], imap[TP_KIR_MAX_INS];
  if (e->n < 1 || val < 0) return 0;
  memcpy(sl, k->in, sizeof sl);
  for (int q = 0; q < ns; q++)
    if (sl[q].buf == B) sl[q].buf = ob;
  for (int q = 0; q < nin; q++) {
    smap[q] = -2; /* B */
    if (in[q].buf == B) continue;
    for (int j = 0; j < ns && smap[q] < 0; j++)
      if (sl[j].buf == in[q].buf && sl[j].offset == in[q].offset && !memcmp(sl[j].strides, in[q].strides, sizeof sl[j].strides))
        smap[q] = j;
    if (smap[q] < 0) {
      if (ns >= TP_KIR_MAX_IN) return 0;
      sl[ns] = in[q];
      smap[q] = ns++;
    }
  }
  for (int q = 0; q < e->n; q++) {
    tp_kir_ins I = e->ins[q];
    if (I.op == TP_KI_LOAD && smap[I.in] == -2) {
      imap[q] = val;
      continue;
    }
    if (I.op == TP_KI_LOAD) I.in = (int16_t)smap[I.in];
    else {
      if (I.a >= 0) I.a = (int16_t)imap[I.a];
      if (I.b >= 0) I.b = (int16_t)imap[I.b];
    }
    if (x.n >= TP_KIR_MAX_INS) return 0;
    x.ins[x.n] = I;
    imap[q] = x.n++;
  }
  if (imap[e->n - 1] != x.n - 1) return 0; /* the value must be the last instruction */
  k->expr = x;
  k->nin = ns;
  memcpy(k->in, sl, sizeof sl);
  return 1;
}

void tp_kir_program_free(tp_kir_program *p) {
  if (!p) return;
  for (int i = 0; i < p->nbufs; i++) tp_tensor_release(p->bufs[i].value);
  tp_free(p->bufs);
  tp_free(p->kernels);
  tp_free(p->node_kernel);
  if (p->graph_shallow && p->graph) { /* an instantiated template's: its own nodes array only */
    tp_free(p->graph->nodes);
    tp_free(p->graph);
  } else {
    tp_graph_free(p->graph);
  }
  tp_free(p);
}
