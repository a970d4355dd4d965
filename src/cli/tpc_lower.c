/* tpc_lower.c - `tpc compile` (dumps of the lowering) and `tpc bench`. */
#include "../lower/lower.h"
#include "../codegen/wasm/emit.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int tpc_load_graph(const char *path, tp_graph **g);

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int has(const char *list, const char *word) {
  size_t n = strlen(word);
  for (const char *p = list; p && *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len == n && !strncmp(p, word, n)) return 1;
    p = e ? e + 1 : p + len;
  }
  return 0;
}

/* tpc compile GRAPH [--dump=graph,passes,kernels,wasm] [--dump-after=PASS] [--no-fusion]
 *   [--decompose] [--emit-wasm OUT.wasm] */
int tpc_cmd_compile(int argc, char **argv) {
  const char *path = NULL, *dump = "kernels", *after = NULL, *emit = NULL;
  tp_lower_options o;
  tp_lower_options_init(&o);
  for (int i = 2; i < argc; i++) {
    if (!strncmp(argv[i], "--dump=", 7)) dump = argv[i] + 7;
    else if (!strncmp(argv[i], "--dump-after=", 13)) after = argv[i] + 13;
    else if (!strcmp(argv[i], "--no-fusion")) o.fusion = o.epilogue_fusion = 0;
    else if (!strcmp(argv[i], "--no-memory-planning")) o.memory_planning = 0;
    else if (!strcmp(argv[i], "--decompose")) o.decompose = 1;
    else if (!strncmp(argv[i], "--emit-wasm=", 12)) emit = argv[i] + 12;
    else if (!strcmp(argv[i], "--emit-wasm") && i + 1 < argc) emit = argv[++i];
    else if (argv[i][0] == '-') {
      fprintf(stderr, "tpc: compile: unknown option '%s' (see tpc --help)\n", argv[i]);
      return 2;
    } else if (!path) path = argv[i];
    else {
      fprintf(stderr, "tpc: compile: more than one graph file\n");
      return 2;
    }
  }
  if (!path) {
    fprintf(stderr, "tpc: compile: missing GRAPH.tpg (see tpc --help)\n");
    return 2;
  }
  for (const char *p = dump; *p;) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (!((len == 5 && !strncmp(p, "graph", 5)) || (len == 6 && !strncmp(p, "passes", 6)) ||
          (len == 7 && !strncmp(p, "kernels", 7)) || (len == 4 && !strncmp(p, "wasm", 4)))) {
      fprintf(stderr, "tpc: compile: unknown dump '%.*s' (graph, passes, kernels, wasm)\n", (int)len, p);
      return 2;
    }
    p = e ? e + 1 : p + len;
  }
  tp_graph *g = NULL;
  int rc = tpc_load_graph(path, &g);
  if (rc) return rc;
  char *text = NULL;
  if (has(dump, "graph") && tp_graph_print(g, 0, &text) == TP_OK) {
    printf("# graph\n%s", text);
    tp_free_buffer(text);
  }
  double t0 = now_ms();
  tp_graph *lg = NULL;
  char *passes = NULL;
  const char *which = after ? after : has(dump, "passes") ? "all" : NULL;
  if (tp_run_passes(g, o.decompose, which, &passes, &lg) != TP_OK) {
    fprintf(stderr, "tpc: %s: %s\n", path, tp_last_error());
    tp_graph_free(g);
    return 1;
  }
  if (passes) {
    fputs(passes, stdout);
    tp_free_buffer(passes);
  }
  tp_kir_program *p = NULL;
  if (tp_schedule(lg, &o, &p) != TP_OK || tp_kir_verify(p) != TP_OK || tp_memplan(p) != TP_OK) {
    fprintf(stderr, "tpc: %s: %s\n", path, tp_last_error());
    tp_kir_program_free(p);
    tp_graph_free(g);
    return 1;
  }
  double t1 = now_ms();
  if (has(dump, "kernels") && tp_kir_print(p, &text) == TP_OK) {
    printf("# kernels\n%s", text);
    tp_free_buffer(text);
  }
  printf("# compile: %.3f ms (passes + schedule + memory plan), %d kernels, arena %lld bytes\n", t1 - t0,
         p->nkernels, (long long)p->arena_bytes);
  if (emit || has(dump, "wasm")) { /* the module a Wasm host would load */
    tp_emitted em;
    tp_emit_options eo = {0, has(dump, "wasm"), NULL, NULL};
    double t2 = now_ms();
    if (tp_emit_wasm(p, &eo, &em) != TP_OK) {
      fprintf(stderr, "tpc: %s: %s\n", path, tp_last_error());
      tp_kir_program_free(p);
      tp_graph_free(g);
      return 1;
    }
    printf("# wasm: %zu bytes, %d kernel functions, emitted in %.3f ms\n", em.len, em.nfuncs, now_ms() - t2);
    if (em.dump) fputs(em.dump, stdout);
    if (emit) {
      FILE *f = fopen(emit, "wb");
      if (!f || fwrite(em.bytes, 1, em.len, f) != em.len || fclose(f) != 0) {
        fprintf(stderr, "tpc: cannot write %s\n", emit);
        tp_emitted_clear(&em);
        tp_kir_program_free(p);
        tp_graph_free(g);
        return 1;
      }
    }
    tp_emitted_clear(&em);
  }
  tp_kir_program_free(p);
  tp_graph_free(g);
  return 0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* tpc bench GRAPH [--runs N] [--backend eager|stax|both] [--max-autotune] [--cold N] : random inputs.
 * Also times the cold path: load (parse or ONNX import) + stax compile + first
 * stax run, the median of --cold N repetitions (default 1). */
int tpc_cmd_bench(int argc, char **argv) {
  const char *path = NULL, *backend = "both";
  int runs = 50, cold = 1;
  tp_lower_options lo;
  tp_lower_options_init(&lo);
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--max-autotune")) {
      lo.autotune = 1;
      continue;
    }
    if (!strncmp(argv[i], "--runs=", 7)) runs = atoi(argv[i] + 7);
    else if (!strcmp(argv[i], "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
    else if (!strncmp(argv[i], "--cold=", 7)) cold = atoi(argv[i] + 7);
    else if (!strcmp(argv[i], "--cold") && i + 1 < argc) cold = atoi(argv[++i]);
    else if (!strncmp(argv[i], "--backend=", 10)) backend = argv[i] + 10;
    else if (argv[i][0] == '-') {
      fprintf(stderr, "tpc: bench: unknown option '%s'\n", argv[i]);
      return 2;
    } else path = argv[i];
  }
  if (strcmp(backend, "eager") && strcmp(backend, "stax") && strcmp(backend, "both")) {
    fprintf(stderr, "tpc: bench: unknown backend '%s' (eager, stax, both)\n", backend);
    return 2;
  }
  if (!path || runs < 1 || runs > 100000 || cold < 1 || cold > 1000) {
    fprintf(stderr, "tpc: bench: usage: tpc bench GRAPH.tpg|MODEL.onnx [--runs N] [--backend=eager|stax|both] [--cold N]\n");
    return 2;
  }
  double *tl = malloc(sizeof(double) * (size_t)cold * 4);
  if (!tl) return 1;
  double *tc = tl + cold, *tf = tc + cold, *tt = tf + cold;
  tp_graph *g = NULL;
  tp_plan *pl = NULL;
  int nin = 0, rc = 0;
  tp_tensor *in[TP_MAX_OPERANDS] = {0};
  for (int c = 0; c < cold && !rc; c++) {
    if (c) { /* a fresh load and compile; the last one is kept for the runs */
      tp_plan_free(pl);
      tp_graph_free(g);
      pl = NULL;
      g = NULL;
    }
    double t0 = now_ms();
    rc = tpc_load_graph(path, &g);
    if (rc) break;
    double t1 = now_ms();
    if (!c) {
      nin = tp_graph_num_inputs(g);
      if (nin > TP_MAX_OPERANDS) {
        fprintf(stderr, "tpc bench: the graph has %d inputs (at most %d)\n", nin, TP_MAX_OPERANDS);
        rc = 1;
        break;
      }
      for (int i = 0, k = 0; i < g->n && k < TP_MAX_OPERANDS; i++)
        if (g->nodes[i].kind == TP_NODE_PLACEHOLDER) {
          const tp_desc *d = &g->nodes[i].desc;
          if (d->dtype == TP_F32) tp_randn(d->ndim, d->shape, (uint64_t)k + 1, &in[k]);
          else tp_zeros(d->dtype, d->ndim, d->shape, &in[k]);
          k++;
        }
    }
    if (tp_lower(g, &lo, &pl) != TP_OK) {
      fprintf(stderr, "tpc: %s: %s\n", path, tp_last_error());
      pl = NULL;
      rc = 1;
      break;
    }
    double t2 = now_ms();
    tp_tensor *outs[TP_MAX_OPERANDS] = {0};
    int n = 0;
    tp_status s = tp_plan_run(pl, nin, in, TP_MAX_OPERANDS, outs, &n);
    double t3 = now_ms();
    for (int i = 0; i < n; i++) tp_tensor_release(outs[i]);
    if (s) {
      fprintf(stderr, "tpc: %s: %s\n", path, tp_last_error());
      rc = 1;
      break;
    }
    tl[c] = t1 - t0, tc[c] = t2 - t1, tf[c] = t3 - t2, tt[c] = t3 - t0;
  }
  double *ts = rc ? NULL : malloc(sizeof(double) * (size_t)runs);
  if (!rc) {
    qsort(tl, (size_t)cold, sizeof *tl, cmp_double);
    qsort(tc, (size_t)cold, sizeof *tc, cmp_double);
    qsort(tf, (size_t)cold, sizeof *tf, cmp_double);
    qsort(tt, (size_t)cold, sizeof *tt, cmp_double);
    printf("tpc bench %s: %d runs, isa %s, stax compile %.3f ms\n", path, runs, tp_isa_name(), tc[cold / 2]);
    printf("  cold (median of %d): load %.3f ms + stax compile %.3f ms = %.3f ms; first stax run %.3f ms; "
           "total %.3f ms\n",
           cold, tl[cold / 2], tc[cold / 2], tl[cold / 2] + tc[cold / 2], tf[cold / 2], tt[cold / 2]);
  }
  for (int which = 0; which < 2 && !rc && ts; which++) {
    if ((which == 0 && !strcmp(backend, "stax")) || (which == 1 && !strcmp(backend, "eager"))) continue;
    for (int r = -3; r < runs; r++) {
      tp_tensor *outs[TP_MAX_OPERANDS] = {0};
      int n = 0;
      double t0 = now_ms();
      tp_status s = which ? tp_plan_run(pl, nin, in, TP_MAX_OPERANDS, outs, &n) : tp_graph_run(g, nin, in, TP_MAX_OPERANDS, outs, &n);
      double t = now_ms() - t0;
      for (int i = 0; i < n; i++) tp_tensor_release(outs[i]);
      if (s) {
        fprintf(stderr, "tpc: %s: %s\n", path, tp_last_error());
        rc = 1;
        break;
      }
      if (r >= 0) ts[r] = t;
    }
    if (rc) break;
    qsort(ts, (size_t)runs, sizeof *ts, cmp_double);
    printf("  %-5s median %.4f ms  min %.4f ms\n", which ? "stax" : "eager", ts[runs / 2], ts[0]);
  }
  free(ts);
  free(tl);
  tp_plan_free(pl);
  for (int i = 0; i < nin && i < TP_MAX_OPERANDS; i++) tp_tensor_release(in[i]);
  tp_graph_free(g);
  return rc;
}
