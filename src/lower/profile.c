/* profile.c - per-kernel profiling of a plan (stax.profile, `tpc bench
 * --profile`, explain()): while on, tp_plan_run times each kernel and this
 * file keeps the sums and writes the table: what each kernel is, its time
 * per run and share, and the rate it reached. The work a rate is computed
 * from: GEMM kernels 2*M*N*K*batch flops; conv2d op kernels 2 * |y| *
 * |w| / M (a multiply-add per output element and weight of its group);
 * every other kernel the bytes of its operands and result, read or written
 * once (a lower bound on its traffic).
 *
 * The clock is tp_now_ms (CLOCK_MONOTONIC; on Wasm hosts WASI's clock, i.e.
 * performance.now(), which browsers coarsen to 5-100 us): kernels shorter
 * than that are only meaningful summed over many runs. Profiling adds a
 * clock read per kernel and runs generated Wasm kernels one call each
 * instead of the module's single run entry. */
#include "lower.h"
#include "../core/buf.h"
#include "../ops/ops.h"
#include <stdio.h>

struct tp_plan_prof {
  int nkernels;
  int64_t runs;
  double *ms;     /* per kernel, summed over runs */
  int64_t *calls; /* per kernel */
};

void tp_plan_prof_free(tp_plan_prof *pr) {
  if (!pr) return;
  tp_free(pr->ms);
  tp_free(pr->calls);
  tp_free(pr);
}

void tp_plan_prof_run(tp_plan_prof *pr) {
  if (pr) pr->runs++;
}

tp_status tp_plan_set_profiling(tp_plan *pl, int on) {
  if (!pl) return tp_fail(TP_ERR_INVALID_ARG, "plan profiling: NULL plan");
  tp_plan_prof **slot = tp_plan_prof_slot(pl);
  tp_plan_prof_free(*slot);
  *slot = NULL;
  if (!on) return TP_OK;
  int n = tp_plan_program(pl)->nkernels;
  tp_plan_prof *pr = tp_alloc(sizeof *pr);
  size_t cnt = (size_t)(n ? n : 1);
  if (pr) {
    memset(pr, 0, sizeof *pr);
    pr->nkernels = n;
    pr->ms = tp_alloc(sizeof(double) * cnt);
    pr->calls = tp_alloc(sizeof(int64_t) * cnt);
  }
  if (!pr || !pr->ms || !pr->calls) {
    tp_plan_prof_free(pr);
    return tp_fail(TP_ERR_OUT_OF_MEMORY, "plan profiling: no memory for %d kernels' counters", n);
  }
  memset(pr->ms, 0, sizeof(double) * cnt);
  memset(pr->calls, 0, sizeof(int64_t) * cnt);
  *slot = pr;
  return TP_OK;
}

int tp_plan_profiling(const tp_plan *pl) { return pl && tp_plan_prof_of(pl) != NULL; }

void tp_plan_profile_add(const tp_plan *pl, int k, double ms) {
  tp_plan_prof *pr = pl ? tp_plan_prof_of(pl) : NULL;
  if (!pr || k < 0 || k >= pr->nkernels) return;
  pr->ms[k] += ms;
  pr->calls[k]++;
}

static int64_t buf_bytes(const tp_kir_program *p, int b) {
  if (b < 0 || b >= p->nbufs) return 0;
  const tp_desc *d = &p->bufs[b].desc;
  return tp_shape_numel(d->ndim, d->shape) * (int64_t)tp_dtype_size(d->dtype);
}

/* What kernel k is ("gemm 64x320x96", "conv2d", "pointwise") and its work:
 * *flops > 0 for GEMMs and convolutions, else *bytes. */
static void kernel_work(const tp_kir_program *p, const tp_kir_kernel *k, char *what, size_t n,
                        double *flops, double *bytes) {
  *flops = 0, *bytes = 0;
  switch (k->kind) {
    case TP_KK_GEMM:
      snprintf(what, n, "gemm %lldx%lldx%lld%s%s%s", (long long)k->M, (long long)k->N, (long long)k->K,
               k->batch > 1 ? " batched" : "", k->b_f16 ? " B f16" : "", k->expr.n ? " +epilogue" : "");
      *flops = 2.0 * (double)k->M * (double)k->N * (double)k->K * (double)(k->batch > 0 ? k->batch : 1);
      return;
    case TP_KK_OP:
    case TP_KK_CONV: {
      const tp_node *node = k->node >= 0 && p->graph ? &p->graph->nodes[k->node] : NULL;
      snprintf(what, n, "op %s", node ? tp_op_name(node->op) : "copy");
      if (node && node->op == TP_OP_CONV2D && k->nops > 1 && k->op_bufs[0] >= 0 && k->op_bufs[1] >= 0) {
        const tp_desc *w = &p->bufs[k->op_bufs[1]].desc, *y = &p->bufs[k->out].desc;
        tp_conv2d_geom cg;
        if (tp_conv2d_geometry(&p->bufs[k->op_bufs[0]].desc, w, &node->attrs, &cg) == TP_OK)
          snprintf(what, n, "conv %lld->%lld %lldx%lld/%lld%s %lldx%lld%s", (long long)cg.C, (long long)cg.M,
                   (long long)cg.KH, (long long)cg.KW, (long long)cg.sh, cg.G == 1 ? "" : cg.G == cg.C ? " dw" : " grouped",
                   (long long)cg.OH, (long long)cg.OW, k->expr.n ? " +epilogue" : "");
        else tp_clear_error();
        if (w->ndim == 4 && w->shape[0] > 0)
          *flops = 2.0 * (double)tp_shape_numel(y->ndim, y->shape) *
                   (double)tp_shape_numel(w->ndim, w->shape) / (double)w->shape[0];
        if (*flops > 0) return;
      }
      for (int i = 0; i < k->nops; i++) *bytes += (double)buf_bytes(p, k->op_bufs[i]);
      *bytes += (double)buf_bytes(p, k->out);
      return;
    }
    case TP_KK_POINTWISE: snprintf(what, n, "pointwise"); break;
    case TP_KK_ROW: snprintf(what, n, "row (reduction)"); break;
    default: snprintf(what, n, "?"); break;
  }
  for (int i = 0; i < k->nin; i++) *bytes += (double)buf_bytes(p, k->in[i].buf);
  *bytes += (double)buf_bytes(p, k->out);
}

/* Kernel indices by time, slowest first (insertion sort: plans are small). */
static int *by_time(const tp_plan_prof *pr) {
  int *ord = tp_alloc(sizeof(int) * (size_t)(pr->nkernels ? pr->nkernels : 1));
  if (!ord) return NULL;
  for (int i = 0; i < pr->nkernels; i++) {
    int j = i;
    while (j > 0 && pr->ms[ord[j - 1]] < pr->ms[i]) ord[j] = ord[j - 1], j--;
    ord[j] = i;
  }
  return ord;
}

static tp_status report(const tp_plan *pl, int max_rows, int json, char **out) {
  if (!out) return tp_fail(TP_ERR_INVALID_ARG, "plan profile: NULL argument");
  *out = NULL;
  const tp_plan_prof *pr = pl ? tp_plan_prof_of(pl) : NULL;
  if (!pr) return tp_fail(TP_ERR_INVALID_ARG, "plan profile: profiling is off for this plan (stax.profile)");
  const tp_kir_program *p = tp_plan_program(pl);
  int *ord = by_time(pr);
  if (!ord) return tp_fail(TP_ERR_OUT_OF_MEMORY, "plan profile: no memory");
  double total = 0, runs = pr->runs > 0 ? (double)pr->runs : 1;
  for (int i = 0; i < pr->nkernels; i++) total += pr->ms[i];
  int rows = max_rows > 0 && max_rows < pr->nkernels ? max_rows : pr->nkernels;
  tp_buf b = {0};
  if (json)
    tp_buf_printf(&b, "{\"runs\": %lld, \"total_ms\": %.6f, \"kernels\": [", (long long)pr->runs, total / runs);
  else
    tp_buf_printf(&b, "profile: %lld run%s, %.3f ms of kernels per run, %d kernels (slowest first)\n"
                  "  %-16s %-34s %10s %7s %14s\n", (long long)pr->runs, pr->runs == 1 ? "" : "s",
                  total / runs, pr->nkernels, "kernel", "what", "ms/run", "share", "rate");
  double rest = 0;
  int nrest = 0;
  for (int r = 0; r < pr->nkernels; r++) {
    int k = ord[r];
    if (r >= rows) {
      rest += pr->ms[k], nrest++;
      continue;
    }
    const tp_kir_kernel *kk = &p->kernels[k];
    char what[64], rate[32];
    double flops, bytes, ms = pr->ms[k] / runs, share = total > 0 ? 100.0 * pr->ms[k] / total : 0;
    kernel_work(p, kk, what, sizeof what, &flops, &bytes);
    double sec = ms / 1e3;
    if (flops > 0) snprintf(rate, sizeof rate, "%.2f GFLOP/s", sec > 0 ? flops / sec / 1e9 : 0);
    else snprintf(rate, sizeof rate, "%.2f GB/s", sec > 0 ? bytes / sec / 1e9 : 0);
    if (json)
      tp_buf_printf(&b, "%s{\"kernel\": \"%s\", \"what\": \"%s\", \"ms\": %.6f, \"share\": %.4f, \"%s\": %.4f}",
                    r ? ", " : "", kk->name, what, ms, share, flops > 0 ? "gflops" : "gbps",
                    sec > 0 ? (flops > 0 ? flops : bytes) / sec / 1e9 : 0);
    else tp_buf_printf(&b, "  %-16s %-34s %10.4f %6.1f%% %14s\n", kk->name, what, ms, share, rate);
  }
  if (nrest) {
    if (json) tp_buf_printf(&b, ", {\"kernel\": \"%d more\", \"what\": \"\", \"ms\": %.6f, \"share\": %.4f}", nrest, rest / runs, total > 0 ? 100.0 * rest / total : 0);
    else tp_buf_printf(&b, "  %-16s %-34s %10.4f %6.1f%%\n", "...", "(the other kernels)", rest / runs, total > 0 ? 100.0 * rest / total : 0);
  }
  if (json) tp_buf_puts(&b, "]}");
  tp_free(ord);
  if (!(*out = tp_buf_take(&b))) return TP_ERR_OUT_OF_MEMORY;
  return TP_OK;
}

tp_status tp_plan_profile_report(const tp_plan *pl, int max_rows, char **out) {
  return report(pl, max_rows, 0, out);
}

tp_status tp_plan_profile_json(const tp_plan *pl, int max_rows, char **out) {
  return report(pl, max_rows, 1, out);
}
