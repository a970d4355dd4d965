/* models_bench.c - the native side of W1-W4, R1 and the real npm models
 * (bench/workloads/models-native.sh): our stax plan and eager runner, and
 * onnxruntime through its C API (bench/ort_capi.c: the libonnxruntime.so.1
 * of the onnxruntime-node package, dlopen()ed; 1 thread unless the `threads`
 * command says otherwise), all in this one
 * process, driven over stdin/stdout by bench/lib/models_native.mjs so that
 * every implementation's samples interleave (and onnxruntime-node's, timed
 * from JS, too) with no process start in the loop.
 *
 * Commands (one per line on stdin; one reply line on stdout):
 *   ortlib PATH                  load onnxruntime (version checked) -> "ok VERSION"
 *   threads N                    our thread count (config.threads) and
 *                                onnxruntime's intra-op threads for the
 *                                sessions loaded after it (default 1 each)
 *                                -> "ok N"
 *   load ID GRAPH.tpg X.bin [MODEL.onnx]
 *                                parse the graph text, lower it with tp_lower
 *                                (timed: the median of 15 lowerings is
 *                                reported), read the input (f32 raw); with
 *                                MODEL.onnx, an onnxruntime session on it
 *        -> "ok ID lower_ms=MED lower_min_ms=MIN lower_first_ms=F kernels=K arena=B ..."
 *   dump ID IMPL OUT.bin         run once, write output 0 (f32 raw) -> "ok"
 *   calib ID IMPL                warm up, then run for ~20 ms -> "ok PER_CALL_MS"
 *   time ID IMPL INNER           INNER calls -> "ok TOTAL_MS"
 *   quit
 * IMPL, resident (the input already in the runtime, output 0 not read):
 *   stax (tp_plan_run), eager (tp_graph_run), ort (OrtApi Run(), its output
 *   allocated by onnxruntime and released unread);
 * end to end (copy the input in from the caller's array, run, read output 0
 * into the caller's reused buffer):
 *   stax-e2e, eager-e2e (tp_tensor_new from the array, run,
 *   tp_tensor_read), ort-e2e (memcpy into the session's input buffer, Run(),
 *   memcpy out of the output value);
 * memcpy (the W3 anchor: memcpy of the input's bytes into a preallocated,
 * reused buffer).
 * Errors: "err MESSAGE". */
#include "lib/bench_util.h"

#include "lower/lower.h"
#include "ort_capi.h"
#include "tensorplay.h"

#define MAXW 16
typedef struct wl {
  char id[32];
  tp_graph *g;
  tp_plan *pl;
  tp_tensor *x;
  void *copy_src, *copy_dst; /* copy_src: the caller's input array */
  size_t bytes;
  float *ybuf; /* the caller's reused output buffer (e2e runs) */
  size_t ybytes;
  int has_ort;
  ort_model ort;
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

/* one end-to-end call of ours: the input copied in from the caller's array
 * (a new tensor), run, output 0 read into the caller's buffer */
static int run_e2e(wl *w, int stax) {
  tp_tensor *x = NULL, *outs[8] = {0};
  int n = 0;
  if (tp_tensor_new(TP_F32, w->x->ndim, w->x->shape, w->copy_src, &x) != TP_OK) return 1;
  tp_status s = stax ? tp_plan_run(w->pl, 1, &x, 8, outs, &n) : tp_graph_run(w->g, 1, &x, 8, outs, &n);
  tp_tensor_release(x);
  if (s != TP_OK) return 1;
  int bad = n < 1 || tp_tensor_read(outs[0], w->ybuf, w->ybytes) != TP_OK;
  for (int i = 0; i < n; i++) tp_tensor_release(outs[i]);
  return bad;
}

/* one call of an implementation; returns 0 on success */
static int run1(wl *w, const char *impl, int keep_out, tp_tensor **out0) {
  if (!strcmp(impl, "memcpy")) {
    memcpy(w->copy_dst, w->copy_src, w->bytes);
    return 0;
  }
  if (!strcmp(impl, "stax-e2e")) return run_e2e(w, 1);
  if (!strcmp(impl, "eager-e2e")) return run_e2e(w, 0);
  if (!strcmp(impl, "ort") || !strcmp(impl, "ort-e2e")) {
    if (!w->has_ort) return 1;
    return impl[3] ? ort_run_e2e(&w->ort, w->copy_src, w->ybuf, w->ybytes) != 0 : ort_run_resident(&w->ort) != 0;
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

static const char *run_error(const char *impl) {
  return !strncmp(impl, "ort", 3) ? ort_last_error() : tp_last_error();
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  char line[4096];
  while (fgets(line, sizeof line, stdin)) {
    char cmd[32] = "", id[2048] = "", a[2048] = "", b[2048] = "", c[2048] = "";
    int nf = sscanf(line, "%31s %2047s %2047s %2047s %2047s", cmd, id, a, b, c);
    if (nf < 1) continue;
    if (!strcmp(cmd, "quit")) break;
    if (!strcmp(cmd, "ortlib") && nf == 2) {
      char err[1024];
      if (ort_load(id, err, sizeof err)) printf("err %s\n", err);
      else printf("ok %s\n", ort_version());
      continue;
    }
    if (!strcmp(cmd, "threads") && nf == 2) {
      char *end = NULL;
      long n = strtol(id, &end, 10);
      if (*end || n < 1 || n > 64) { printf("err threads: '%s' is not a count from 1 to 64\n", id); continue; }
      if (ort_set_threads((int)n)) { printf("err threads: %s\n", ort_last_error()); continue; }
      if (tp_config_set(TP_CFG_THREADS, tp_value_int(n)) != TP_OK) { printf("err threads: %s\n", tp_last_error()); continue; }
      printf("ok %ld\n", n);
      continue;
    }
    if (strlen(id) >= sizeof W[0].id) { printf("err id too long: %s\n", id); continue; }
    wl *w = find(id);
    if (!strcmp(cmd, "load") && (nf == 4 || nf == 5)) {
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
      /* the caller's output buffer: output 0's size, from one run */
      tp_tensor *y0 = NULL;
      if (run1(w, "stax", 1, &y0) || !y0) { printf("err %s: run stax: %s\n", id, tp_last_error()); continue; }
      w->ybytes = (size_t)tp_tensor_numel(y0) * 4;
      tp_tensor_release(y0);
      w->ybuf = aligned_alloc(64, (w->ybytes + 63) / 64 * 64);
      memset(w->ybuf, 1, w->ybytes);
      if (nf == 5) {
        char err[1024];
        if (ort_model_open(&w->ort, c, (const float *)xb, d->ndim, d->shape, err, sizeof err)) {
          printf("err %s: %s\n", id, err);
          continue;
        }
        int64_t on = ort_out_numel(&w->ort);
        if (on < 0 || (size_t)on * 4 != w->ybytes) {
          printf("err %s: onnxruntime output 0 has %lld floats, ours %zu (%s)\n", id, (long long)on, w->ybytes / 4,
                 ort_last_error());
          ort_model_close(&w->ort);
          continue;
        }
        w->has_ort = 1;
      }
      w->copy_dst = aligned_alloc(64, (w->bytes + 63) / 64 * 64);
      memset(w->copy_dst, 1, w->bytes); /* first touch outside timing */
      const tp_kir_program *p = tp_plan_program(w->pl);
      nw++;
      printf("ok %s lower_ms=%.4f lower_min_ms=%.4f lower_first_ms=%.4f kernels=%d arena=%lld isa=%s out_bytes=%zu ort=%s\n",
             id, lmed, lmin, first, p->nkernels, (long long)p->arena_bytes, tp_isa_name(), w->ybytes,
             w->has_ort ? ort_version() : "none");
    } else if (!w) {
      printf("err unknown workload '%s'\n", id);
    } else if (!strcmp(cmd, "dump") && nf == 4 && (strstr(a, "-e2e") || !strcmp(a, "ort"))) {
      /* end-to-end impls (and ort, read out the same way) write ybuf */
      const char *impl = !strcmp(a, "ort") ? "ort-e2e" : a;
      memset(w->ybuf, 0xff, w->ybytes); /* NaNs: a run that writes nothing fails the check */
      if (run1(w, impl, 0, NULL)) { printf("err %s: run %s: %s\n", id, a, run_error(a)); continue; }
      FILE *f = fopen(b, "wb");
      int ok = f && fwrite(w->ybuf, 1, w->ybytes, f) == w->ybytes;
      if (f) fclose(f);
      printf(ok ? "ok\n" : "err %s: write %s\n", id, b);
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
      if (run1(w, a, 0, NULL)) { printf("err %s: run %s: %s\n", id, a, run_error(a)); continue; }
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
      if (bad) printf("err %s: run %s: %s\n", id, a, run_error(a));
      else printf("ok %.6f\n", t);
    } else {
      printf("err bad command: %s", line);
    }
  }
  return 0;
}
