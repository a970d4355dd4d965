/* tpc_lower.c - `tpc compile` (dumps of the lowering) and `tpc bench`. */
#include "../lower/lower.h"
#include "../codegen/wasm/emit.h"
#include "../onnx/onnx.h"
#include "../runtime/pool.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int tpc_load_graph(const char *path, tp_graph **g);

/* TPC_CLOCK=cpu: the process's CPU time instead of the wall clock (one
 * thread on a shared machine: the time it computed, not the time it waited
 * for a core; tpc's usage) */
static double now_ms(void) {
  static int cpu = -1;
  if (cpu < 0) cpu = getenv("TPC_CLOCK") && !strcmp(getenv("TPC_CLOCK"), "cpu");
  struct timespec ts;
  clock_gettime(cpu ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_MONOTONIC, &ts);
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
  extern int tpc_onnx_for_backend;
  tpc_onnx_for_backend = 1; /* stax lowers it: an ONNX model imported as a backend's (issue 17) */
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
    tp_emit_options eo = {0, has(dump, "wasm"), NULL, NULL, 0, 0, 0};
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

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && !strcmp(s + n - k, suffix);
}

/* An ONNX model with the given inputs (NAME=FILE.npy|FILE.pb): the graph
 * of its specialization for them (symbolic dims and inputs that set shapes
 * resolved as tp_onnx_model does), and in[] the tensors of its
 * placeholders in order. */
int tpc_load_specialized(const char *cmd, const char *path, int nbind, char **binds, tp_graph **g, tp_tensor **in,
                         int *nin) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "tpc: %s: cannot open %s\n", cmd, path);
    return 2;
  }
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *bytes = len > 0 ? malloc((size_t)len) : NULL;
  int rc = !bytes || fread(bytes, 1, (size_t)len, f) != (size_t)len;
  fclose(f);
  tp_onnx_model *m = NULL;
  tp_tensor *vals[TP_MAX_OPERANDS] = {0}, *outs[TP_MAX_OPERANDS] = {0};
  int nm = 0, nout = 0;
  if (rc) fprintf(stderr, "tpc: %s: cannot read %s\n", cmd, path), rc = 2;
  else if (tp_onnx_model_load(bytes, (size_t)len, &m)) fprintf(stderr, "tpc: %s: %s: %s\n", cmd, path, tp_last_error()), rc = 2;
  free(bytes);
  if (!rc) nm = tp_onnx_model_num_inputs(m);
  if (!rc && nm > TP_MAX_OPERANDS) fprintf(stderr, "tpc: %s: %d inputs (at most %d)\n", cmd, nm, TP_MAX_OPERANDS), rc = 1;
  for (int b = 0; b < nbind && !rc; b++) {
    const char *eq = strchr(binds[b], '=');
    int k = -1;
    for (int i = 0; eq && i < nm; i++) {
      const char *n = tp_onnx_model_input_name(m, i);
      if (strlen(n) == (size_t)(eq - binds[b]) && !strncmp(n, binds[b], (size_t)(eq - binds[b]))) k = i;
    }
    if (k < 0) {
      fprintf(stderr, "tpc: %s: --input %s: expected NAME=FILE with NAME an input of the model\n", cmd, binds[b]);
      rc = 2;
    } else if (vals[k]) {
      fprintf(stderr, "tpc: %s: input '%s' given twice\n", cmd, tp_onnx_model_input_name(m, k));
      rc = 2;
    } else if (ends_with(eq + 1, ".pb") ? tp_onnx_tensor_load(eq + 1, &vals[k]) : tp_npy_load(eq + 1, &vals[k])) {
      fprintf(stderr, "tpc: %s: %s: %s\n", cmd, eq + 1, tp_last_error());
      rc = 2;
    }
  }
  for (int i = 0; i < nm && !rc; i++)
    if (!vals[i]) fprintf(stderr, "tpc: %s: missing input '%s': pass --input %s=FILE.npy|FILE.pb\n", cmd, tp_onnx_model_input_name(m, i), tp_onnx_model_input_name(m, i)), rc = 2;
  if (!rc && tp_onnx_model_run(m, nm, vals, TP_MAX_OPERANDS, outs, &nout))
    fprintf(stderr, "tpc: %s: %s: %s\n", cmd, path, tp_last_error()), rc = 1;
  for (int i = 0; i < nout; i++) tp_tensor_release(outs[i]);
  if (!rc && tp_graph_copy(tp_onnx_model_graph(m), g)) fprintf(stderr, "tpc: %s: %s: %s\n", cmd, path, tp_last_error()), rc = 1;
  /* the specialization's placeholders: the inputs not bound as values */
  for (int i = 0, k = 0; !rc && i < (*g)->n; i++) {
    if ((*g)->nodes[i].kind != TP_NODE_PLACEHOLDER) continue;
    int found = -1;
    for (int j = 0; j < nm && found < 0; j++) {
      char nmz[128];
      tp_onnx_sanitize_name(tp_onnx_model_input_name(m, j), nmz, sizeof nmz);
      if (!strcmp(nmz, (*g)->nodes[i].name)) found = j;
    }
    if (found < 0) {
      fprintf(stderr, "tpc: %s: placeholder %%%s matches no model input\n", cmd, (*g)->nodes[i].name);
      rc = 1;
      break;
    }
    tp_tensor_retain(vals[found]);
    in[k++] = vals[found];
    *nin = k;
  }
  for (int i = 0; i < nm && i < TP_MAX_OPERANDS; i++) tp_tensor_release(vals[i]);
  tp_onnx_model_free(m);
  return rc;
}

/* tpc bench GRAPH [--runs N] [--backend eager|stax|both] [--max-autotune] [--cold N] [--threads N]
 *   [--input NAME=FILE]... [--profile] : random inputs of the declared
 * shapes, or (ONNX models, needed for symbolic dims) the given ones.
 * Also times the cold path: load (parse or ONNX import) + stax compile + first
 * stax run, the median of --cold N repetitions (default 1). --profile: the
 * stax plan's per-kernel table (lower/profile.c) over the timed runs. */
int tpc_cmd_bench(int argc, char **argv) {
  const char *path = NULL, *backend = "both";
  int runs = 50, cold = 1, profile = 0, nbind = 0;
  char *binds[TP_MAX_OPERANDS];
  tp_lower_options lo;
  tp_lower_options_init(&lo);
  for (int i = 2; i < argc; i++) {
    if (!strcmp(argv[i], "--max-autotune")) {
      lo.autotune = 1;
      continue;
    }
    if (!strcmp(argv[i], "--profile")) {
      profile = 1;
      continue;
    }
    if (!strcmp(argv[i], "--input") || !strncmp(argv[i], "--input=", 8)) {
      const char *v = argv[i][7] == '=' ? argv[i] + 8 : i + 1 < argc ? argv[++i] : "";
      if (nbind == TP_MAX_OPERANDS) {
        fprintf(stderr, "tpc: bench: at most %d --input\n", TP_MAX_OPERANDS);
        return 2;
      }
      binds[nbind++] = (char *)v;
      continue;
    }
    if (!strcmp(argv[i], "--threads") || !strncmp(argv[i], "--threads=", 10)) {
      const char *v = argv[i][9] == '=' ? argv[i] + 10 : i + 1 < argc ? argv[++i] : "";
      char *end = NULL;
      long n = strtol(v, &end, 10);
      tp_status s = !*v || *end ? tp_fail(TP_ERR_VALUE, "'%s' is not a whole number", v)
                                : tp_config_set(TP_CFG_THREADS, tp_value_int(n));
      if (s) {
        fprintf(stderr, "tpc: bench: --threads: %s\n", tp_last_error());
        return 2;
      }
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
  /* stax alone: an ONNX model imported as a backend gets it (float16 MatMul
   * weights stay float16 for the GEMM; with both, eager would cast them per run) */
  extern int tpc_onnx_for_backend;
  tpc_onnx_for_backend = !strcmp(backend, "stax");
  if (strcmp(backend, "eager") && strcmp(backend, "stax") && strcmp(backend, "both")) {
    fprintf(stderr, "tpc: bench: unknown backend '%s' (eager, stax, both)\n", backend);
    return 2;
  }
  if (!path || runs < 1 || runs > 100000 || cold < 1 || cold > 1000) {
    fprintf(stderr, "tpc: bench: usage: tpc bench GRAPH.tpg|MODEL.onnx [--runs N] [--backend=eager|stax|both] [--cold N] [--input NAME=FILE]... [--profile] [--threads N]\n");
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
    if (nbind) {
      if (!ends_with(path, ".onnx")) {
        fprintf(stderr, "tpc: bench: --input is for ONNX models (graph texts run on random inputs)\n");
        rc = 2;
        break;
      }
      for (int i = 0; i < nin; i++) tp_tensor_release(in[i]), in[i] = NULL;
      rc = tpc_load_specialized("bench", path, nbind, binds, &g, in, &nin);
    } else {
      rc = tpc_load_graph(path, &g);
    }
    if (rc) break;
    double t1 = now_ms();
    if (!c && !nbind) {
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
    int nth = 1;
    if (tp_pool_threads(&nth)) { /* an invalid TP_NUM_THREADS: every run would fail */
      fprintf(stderr, "tpc: bench: %s\n", tp_last_error());
      rc = 1;
    }
    if (!rc) printf("tpc bench %s: %d runs, isa %s, %d thread%s, stax compile %.3f ms\n", path, runs,
           tp_isa_name(), nth, nth == 1 ? "" : "s", tc[cold / 2]);
    if (!rc) printf("  cold (median of %d): load %.3f ms + stax compile %.3f ms = %.3f ms; first stax run %.3f ms; "
           "total %.3f ms\n",
           cold, tl[cold / 2], tc[cold / 2], tl[cold / 2] + tc[cold / 2], tf[cold / 2], tt[cold / 2]);
  }
  for (int which = 0; which < 2 && !rc && ts; which++) {
    if ((which == 0 && !strcmp(backend, "stax")) || (which == 1 && !strcmp(backend, "eager"))) continue;
    if (which == 1 && profile && tp_plan_set_profiling(pl, 1)) {
      fprintf(stderr, "tpc: %s\n", tp_last_error());
      rc = 1;
      break;
    }
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
    printf("  %-5s median %.4f ms  min %.4f ms%s\n", which ? "stax" : "eager", ts[runs / 2], ts[0],
           which && profile ? " (profiled: a clock read per kernel)" : "");
    if (which && profile) {
      char *rep = NULL;
      if (tp_plan_profile_report(pl, getenv("TPC_PROFILE_ROWS") ? atoi(getenv("TPC_PROFILE_ROWS")) : 25, &rep)) {
        fprintf(stderr, "tpc: %s\n", tp_last_error());
        rc = 1;
        break;
      }
      fputs(rep, stdout);
      tp_free_buffer(rep);
    }
  }
  free(ts);
  free(tl);
  tp_plan_free(pl);
  for (int i = 0; i < nin && i < TP_MAX_OPERANDS; i++) tp_tensor_release(in[i]);
  tp_graph_free(g);
  return rc;
}
