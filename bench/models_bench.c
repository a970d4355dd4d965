/* models_bench.c - our side of W2/W3/W4 (bench/workloads/models-native.sh),
 * driven over stdin/stdout by bench/lib/models_native.mjs so that our runs
 * and onnxruntime-node's runs can be interleaved sample by sample with no
 * process start in the loop.
 *
 * Commands (one per line on stdin; one reply line on stdout):
 *   load ID GRAPH.tpg X.bin      parse the graph text, lower it with tp_lower
 *                                (timed: the median of 15 lowerings is
 *                                reported), read the input (f32 raw)
 *        -> "ok ID lower_ms=MED lower_min_ms=MIN lower_first_ms=F kernels=K arena=B"
 *   dump ID stax|eager OUT.bin   run once, write output 0 (f32 raw) -> "ok"
 *   calib ID IMPL                warm up, then run for ~20 ms -> "ok PER_CALL_MS"
 *   time ID IMPL INNER           INNER calls -> "ok TOTAL_MS"
 *   quit
 * IMPL: stax (tp_plan_run), eager (tp_graph_run), memcpy (the W3 anchor:
 * memcpy of the input's bytes into a preallocated, reused buffer).
 * Errors: "err MESSAGE". */
#include "lib/bench_util.h"

#include "lower/lower.h"
#include "tensorplay.h"

#define MAXW 8
typedef struct wl {
  char id[32];
  tp_graph *g;
  tp_plan *pl;
  tp_tensor *x;
  void *copy_src, *copy_dst;
  size_t bytes;
} wl;
static wl W[MAXW];
static int nw;

static wl *find(const char *id) {
  for (int i = 0; i < nw; i++)
    if (!strcmp(W[i].id, id)) return &W[i];
  return NULL;
}

static char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *p = malloc((size_t)n + 1);
  if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
    free(p);
    p = NULL;
  }
  if (p) p[n] = 0;
  fclose(f);
  *len = (size_t)n;
  return p;
}

/* one call of an implementation; returns 0 on success */
static int run1(wl *w, const char *impl, int keep_out, tp_tensor **out0) {
  if (!strcmp(impl, "memcpy")) {
    memcpy(w->copy_dst, w->copy_src, w->bytes);
    return 0;
  }
  tp_tensor *outs[8] = {0};
  int n = 0;
  tp_status s = !strcmp(impl, "stax") ? tp_plan_run(w->pl, 1, &w->x, 8, outs, &n)
                : !strcmp(impl, "eager") ? tp_graph_run(w->g, 1, &w->x, 8, outs, &n)
                                         : TP_ERR_INVALID_ARG;
  if (s != TP_OK) return 1;
  for (int i = 0; i < n; i++) {
    if (i == 0 && keep_out) *out0 = outs[0];
    else tp_tensor_release(outs[i]);
  }
  return 0;
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  char line[4096];
  while (fgets(line, sizeof line, stdin)) {
    char cmd[32] = "", id[32] = "", a[2048] = "", b[2048] = "";
    int nf = sscanf(line, "%31s %31s %2047s %2047s", cmd, id, a, b);
    if (nf < 1) continue;
    if (!strcmp(cmd, "quit")) break;
    wl *w = find(id);
    if (!strcmp(cmd, "load") && nf == 4) {
      if (w || nw == MAXW) { printf("err %s: loaded twice or too many\n", id); continue; }
      size_t len = 0, xlen = 0;
      char *text = slurp(a, &len), *xb = slurp(b, &xlen);
      w = &W[nw];
      memset(w, 0, sizeof *w);
      snprintf(w->id, sizeof w->id, "%s", id);
      if (!text || !xb || tp_graph_parse(text, len, &w->g) != TP_OK) {
        printf("err %s: cannot read/parse %s or %s: %s\n", id, a, b, tp_last_error());
        free(text), free(xb);
        continue;
      }
      free(text);
      /* the input: the graph's placeholder shape, f32 */
      const tp_desc *d = NULL;
      for (int i = 0; i < w->g->n; i++)
        if (w->g->nodes[i].kind == TP_NODE_PLACEHOLDER) { d = &w->g->nodes[i].desc; break; }
      if (!d || tp_graph_num_inputs(w->g) != 1 || d->dtype != TP_F32) {
        printf("err %s: want one f32 input\n", id);
        continue;
      }
      int64_t numel = 1;
      for (int k = 0; k < d->ndim; k++) numel *= d->shape[k];
      if ((size_t)numel * 4 != xlen || tp_tensor_new(TP_F32, d->ndim, d->shape, xb, &w->x) != TP_OK) {
        printf("err %s: input size %zu != %lld floats\n", id, xlen, (long long)numel);
        continue;
      }
      w->copy_src = xb; /* the memcpy anchor's source: the same bytes */
      w->bytes = xlen;
      /* compile time: tp_lower = passes + schedule + memory plan + plan
       * (packed constants), 15 times, median reported */
      double tl[15], first = 0;
      for (int r = 0; r < 15; r++) {
        tp_plan *pl = NULL;
        double t0 = bench_now_ms();
        tp_status s = tp_lower(w->g, NULL, &pl);
        tl[r] = bench_now_ms() - t0;
        if (r == 0) first = tl[r];
        if (s != TP_OK) { printf("err %s: tp_lower: %s\n", id, tp_last_error()); break; }
        if (r < 14) tp_plan_free(pl);
        else w->pl = pl;
      }
      if (!w->pl) continue;
      double lmin = 0, lmed = bench_median(tl, 15, &lmin);
      w->copy_dst = aligned_alloc(64, (w->bytes + 63) / 64 * 64);
      memset(w->copy_dst, 1, w->bytes); /* first touch outside timing */
      const tp_kir_program *p = tp_plan_program(w->pl);
      nw++;
      printf("ok %s lower_ms=%.4f lower_min_ms=%.4f lower_first_ms=%.4f kernels=%d arena=%lld isa=%s\n", id,
             lmed, lmin, first, p->nkernels, (long long)p->arena_bytes, tp_isa_name());
    } else if (!w) {
      printf("err unknown workload '%s'\n", id);
    } else if (!strcmp(cmd, "dump") && nf == 4) {
      tp_tensor *y = NULL;
      if (run1(w, a, 1, &y) || !y) { printf("err %s: run %s: %s\n", id, a, tp_last_error()); continue; }
      size_t n = (size_t)tp_tensor_numel(y) * 4;
      float *buf = malloc(n);
      FILE *f = fopen(b, "wb");
      int ok = buf && f && tp_tensor_read(y, buf, n) == TP_OK && fwrite(buf, 1, n, f) == n;
      if (f) fclose(f);
      free(buf);
      tp_tensor_release(y);
      printf(ok ? "ok\n" : "err %s: write %s\n", id, b);
    } else if (!strcmp(cmd, "calib") && nf == 3) {
      if (run1(w, a, 0, NULL)) { printf("err %s: run %s: %s\n", id, a, tp_last_error()); continue; }
      double t0 = bench_now_ms();
      int c = 0;
      do run1(w, a, 0, NULL), c++;
      while (bench_now_ms() - t0 < 20.0 && c < 1000);
      printf("ok %.6f\n", (bench_now_ms() - t0) / c);
    } else if (!strcmp(cmd, "time") && nf == 4) {
      int inner = atoi(b), bad = 0;
      double t0 = bench_now_ms();
      for (int k = 0; k < inner; k++) bad |= run1(w, a, 0, NULL);
      double t = bench_now_ms() - t0;
      if (bad) printf("err %s: run %s: %s\n", id, a, tp_last_error());
      else printf("ok %.6f\n", t);
    } else {
      printf("err bad command: %s", line);
    }
  }
  return 0;
}
