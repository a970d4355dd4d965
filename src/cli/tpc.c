/* tpc - the tensorplay command line.
 *
 *   tpc run GRAPH.tpg --input x=x.npy --output y.npy [--print]
 *   tpc graph GRAPH.tpg
 *   tpc parity MODEL.onnx [--input x=x.npy|x.pb]   (tpc_parity.c)
 *   tpc version
 *
 * Exit codes: 0 success, 1 a runtime failure (the graph failed to run, an
 * output could not be written), 2 a usage or input error (bad arguments,
 * unreadable or malformed graph or .npy, missing or mismatched inputs). */
#include "graph/graph.h"
#include "graph/text.h"
#include "onnx/onnx.h"
#include "onnx/tensor_pb.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#define EXIT_RUNTIME 1
#define EXIT_USAGE 2
#define MAX_BINDINGS 256

static const char usage_text[] =
    "usage: tpc <command> [options]\n"
    "\n"
    "commands:\n"
    "  run GRAPH.tpg|MODEL.onnx [--input NAME=FILE.npy|FILE.pb]... [--output FILE.npy|FILE.pb]...\n"
    "        [--print]\n"
    "        run a graph (text form, with data) on .npy inputs. Each graph\n"
    "        input (placeholder) is bound by name; the i-th --output receives\n"
    "        the i-th graph output. Outputs without --output, and all outputs\n"
    "        with --print, are summarized on stdout (shape, dtype, values).\n"
    "        A .onnx file runs as a model (docs/onnx.md, \"Models\": symbolic dims, inputs that\n"
    "        set shapes) on --backend=eager (default), stax or another registered backend;\n"
    "        inputs by ONNX input name; .pb files are ONNX TensorProtos.\n"
    "  graph GRAPH.tpg\n"
    "        parse a graph text file and print it back (without data): a checker.\n"
    "  compile GRAPH.tpg [--dump=graph,passes,kernels] [--dump-after=PASS]\n"
    "        [--no-fusion] [--no-memory-planning] [--decompose]\n"
    "        lower a graph with stax (an ONNX model imported as a backend does) and\n"
    "        print the graph, the graph after each pass (or after PASS), and the\n"
    "        Kernel IR with the memory plan.\n"
    "  bench GRAPH.tpg|MODEL.onnx [--runs N] [--backend=eager|stax|both] [--max-autotune] [--threads N]\n"
    "        [--cold N] [--input NAME=FILE.npy|FILE.pb]... [--profile]\n"
    "        time the graph on random inputs: medians of N runs after 3 warm-ups;\n"
    "        and the cold path: load (parse / ONNX import) + stax compile + first\n"
    "        stax run, the median of --cold N repetitions (default 1).\n"
    "        --input (ONNX models; needed for symbolic dims): the inputs to time on.\n"
    "        --backend=stax imports an ONNX model as a compiling backend does (float16\n"
    "        MatMul weights stay float16: the GEMM's float16 panels).\n"
    "        --profile: the stax plan's kernels, slowest first, with time share and\n"
    "        GFLOP/s (GEMMs, convolutions) or GB/s.\n"
    "        TPC_CLOCK=cpu times the runs and the cold path (not the profile) by the\n"
    "        process's CPU time: on a shared machine, with --threads 1, the time it\n"
    "        computed rather than the time it waited for a core.\n"
    "  parity MODEL.onnx [--input NAME=FILE.npy|FILE.pb]...\n"
    "        run an ONNX model with the reference backend, eager and stax; print\n"
    "        per output the max abs and max relative error against the reference\n"
    "        (and against test_data_set_0's outputs when those are the inputs);\n"
    "        exit 1 beyond ONNX tolerance (|err| <= 1e-7 + 1e-3 |ref|). Without\n"
    "        --input: test_data_set_0/input_*.pb next to the model if present,\n"
    "        else seeded random inputs of the declared shapes. Models with symbolic\n"
    "        dims or inputs that set shapes need every input as --input: parity\n"
    "        then checks the model's specialization for them.\n"
    "  version\n"
    "        print the version and the ISA the kernels use.\n"
    "  help, --help, -h\n"
    "        print this text.\n"
    "\n"
    "exit codes: 0 ok, 1 runtime failure, 2 usage or input error.\n"
    "graph text format: docs/graph-format.md\n";

/* "tpc: MESSAGE" on stderr; returns code (also used by tpc_parity.c). */
int tpc_fail(int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
int tpc_fail(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("tpc: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return code;
}

/* Whole file into a NUL-terminated buffer (tp_alloc'ed). */
static int read_file(const char *path, char **out, size_t *len) {
  uint8_t *b = NULL;
  tp_status s = tp_onnx_read_file(path, &b, len);
  if (s) return tpc_fail(s == TP_ERR_OUT_OF_MEMORY ? EXIT_RUNTIME : EXIT_USAGE, "%s", tp_last_error());
  *out = (char *)b;
  return 0;
}

int tpc_load_graph(const char *path, tp_graph **g);
int tpc_cmd_compile(int argc, char **argv);
int tpc_cmd_bench(int argc, char **argv);
int tpc_cmd_parity(int argc, char **argv);

static int ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && !strcmp(s + n - k, suffix);
}

int tpc_onnx_for_backend; /* tpc bench --backend=stax: import as a backend does (float16 weights stay) */

static int load_graph(const char *path, tp_graph **g) {
  if (ends_with(path, ".onnx")) { /* an ONNX model (docs/onnx.md) */
    tp_status s = tpc_onnx_for_backend ? tp_onnx_load_file_for_backend(path, g) : tp_onnx_load_file(path, g);
    if (s != TP_OK)
      return tpc_fail(s == TP_ERR_OUT_OF_MEMORY ? EXIT_RUNTIME : EXIT_USAGE, "%s", tp_last_error());
    return 0;
  }
  char *text = NULL;
  size_t len = 0;
  int rc = read_file(path, &text, &len);
  if (rc) return rc;
  tp_status s = tp_graph_parse(text, len, g);
  tp_free(text);
  if (s != TP_OK)
    return tpc_fail(s == TP_ERR_OUT_OF_MEMORY ? EXIT_RUNTIME : EXIT_USAGE, "%s: %s", path,
                tp_last_error());
  return 0;
}

static void type_str(tp_dtype dt, int ndim, const int64_t *shape, char *buf, size_t n) {
  tp_buf b = { 0 };
  tp_text_put_type(&b, dt, ndim, shape);
  snprintf(buf, n, "%s", b.p ? b.p : "?");
  tp_free(b.p);
}

/* "output 0: f32[2,2] = [1, 2, 3, 4]" (the first 16 values). */
static int summarize(int i, tp_tensor *t) {
  enum { SHOW = 16 };
  char ty[160];
  type_str(tp_tensor_dtype(t), tp_tensor_ndim(t), tp_tensor_shape(t), ty, sizeof ty);
  int64_t numel = tp_tensor_numel(t);
  size_t isz = tp_dtype_size(tp_tensor_dtype(t));
  void *buf = tp_alloc((size_t)numel * isz + 1);
  if (!buf) return tpc_fail(EXIT_RUNTIME, "output %d: out of memory", i);
  if (tp_tensor_read(t, buf, (size_t)numel * isz) != TP_OK) {
    tp_free(buf);
    return tpc_fail(EXIT_RUNTIME, "output %d: %s", i, tp_last_error());
  }
  printf("output %d: %s = [", i, ty);
  for (int64_t k = 0; k < numel && k < SHOW; k++) {
    if (k) printf(", ");
    switch (tp_tensor_dtype(t)) {
    case TP_F32: printf("%.9g", (double)((float *)buf)[k]); break;
    case TP_I32: printf("%d", (int)((int32_t *)buf)[k]); break;
    case TP_I64: printf("%lld", (long long)((int64_t *)buf)[k]); break;
    case TP_BOOL: printf("%s", ((unsigned char *)buf)[k] ? "true" : "false"); break;
    case TP_I8: printf("%d", (int)((int8_t *)buf)[k]); break;
    case TP_U8: printf("%u", (unsigned)((uint8_t *)buf)[k]); break;
    default: printf("%.9g", tp_tensor_get_f64(t, k)); break; /* float16, bfloat16: their values */
    }
  }
  printf("%s]\n", numel > SHOW ? ", ..." : "");
  tp_free(buf);
  return 0;
}

typedef struct binding {
  const char *name; /* points into argv */
  size_t name_len;
  const char *file;
  int used;
} binding;

/* --flag VALUE or --flag=VALUE; returns the value or NULL. */
static const char *flag_value(int argc, char **argv, int *i, const char *flag) {
  size_t n = strlen(flag);
  if (strncmp(argv[*i], flag, n) != 0) return NULL;
  if (argv[*i][n] == '=') return argv[*i] + n + 1;
  if (argv[*i][n] != 0) return NULL;
  if (*i + 1 >= argc) return "";
  return argv[++*i];
}

/* tpc run MODEL.onnx: the model as applications run it (tp_onnx_model:
 * symbolic dims, inputs that set shapes, If on inputs), inputs bound by the
 * ONNX input names, on the eager graph runner or a backend (--backend). */
static int run_model(const char *path, const binding *ins, int nins, const char *const *outs, int nouts, int print,
                     const char *backend) {
  uint8_t *bytes = NULL;
  size_t len = 0;
  tp_onnx_model *m = NULL;
  tp_tensor *inputs[MAX_BINDINGS] = {0}, *results[MAX_BINDINGS] = {0};
  int nin = 0, nres = 0, rc = 0;
  tp_status s = tp_onnx_read_file(path, &bytes, &len);
  if (!s) s = tp_onnx_model_load(bytes, len, &m);
  tp_free_buffer(bytes);
  if (!s && backend && strcmp(backend, "eager")) s = tp_onnx_model_use_backend(m, backend);
  if (s) {
    rc = tpc_fail(s == TP_ERR_OUT_OF_MEMORY ? EXIT_RUNTIME : EXIT_USAGE, "%s: %s", path, tp_last_error());
    goto done;
  }
  nin = tp_onnx_model_num_inputs(m);
  if (nin > MAX_BINDINGS) {
    rc = tpc_fail(EXIT_USAGE, "%s: too many inputs (%d)", path, nin);
    goto done;
  }
  for (int b = 0; b < nins; b++) {
    int found = 0;
    for (int k = 0; k < nin; k++) {
      const char *nm = tp_onnx_model_input_name(m, k);
      found |= strlen(nm) == ins[b].name_len && !memcmp(nm, ins[b].name, ins[b].name_len);
    }
    if (!found) {
      rc = tpc_fail(EXIT_USAGE, "the model has no input named '%.*s'", (int)ins[b].name_len, ins[b].name);
      goto done;
    }
  }
  for (int k = 0; k < nin; k++) {
    const char *nm = tp_onnx_model_input_name(m, k);
    const binding *bd = NULL;
    for (int b = 0; b < nins; b++)
      if (strlen(nm) == ins[b].name_len && !memcmp(nm, ins[b].name, ins[b].name_len)) bd = &ins[b];
    if (!bd) {
      rc = tpc_fail(EXIT_USAGE, "missing input '%s': pass --input %s=FILE.npy|FILE.pb", nm, nm);
      goto done;
    }
    s = ends_with(bd->file, ".pb") ? tp_onnx_tensor_load(bd->file, &inputs[k]) : tp_npy_load(bd->file, &inputs[k]);
    if (s) {
      rc = tpc_fail(s == TP_ERR_OUT_OF_MEMORY ? EXIT_RUNTIME : EXIT_USAGE, "input '%s': %s", nm, tp_last_error());
      goto done;
    }
  }
  s = tp_onnx_model_run(m, nin, inputs, MAX_BINDINGS, results, &nres);
  if (s) {
    nres = 0;
    rc = tpc_fail(s == TP_ERR_INVALID_ARG ? EXIT_USAGE : EXIT_RUNTIME, "run failed: %s", tp_last_error());
    goto done;
  }
  if (nouts > nres) {
    rc = tpc_fail(EXIT_USAGE, "%d --output files given, but the model has %d output%s", nouts, nres, nres == 1 ? "" : "s");
    goto done;
  }
  for (int k = 0; k < nres; k++) {
    if (k < nouts && (ends_with(outs[k], ".pb") ? tp_onnx_tensor_save(outs[k], results[k])
                                                 : tp_npy_save(outs[k], results[k])) != TP_OK) {
      rc = tpc_fail(EXIT_RUNTIME, "output %d: %s", k, tp_last_error());
      goto done;
    }
    if ((print || k >= nouts) && (rc = summarize(k, results[k]))) goto done;
  }
done:
  for (int k = 0; k < nres; k++) tp_tensor_release(results[k]);
  for (int k = 0; k < nin && k < MAX_BINDINGS; k++) tp_tensor_release(inputs[k]);
  tp_onnx_model_free(m);
  return rc;
}

static int cmd_run(int argc, char **argv) {
  binding ins[MAX_BINDINGS];
  const char *outs[MAX_BINDINGS];
  const char *graph_path = NULL, *backend = NULL;
  int nins = 0, nouts = 0, print = 0, rc = 0;
  tp_graph *g = NULL;
  tp_tensor *inputs[MAX_BINDINGS] = { 0 };
  tp_tensor *results[MAX_BINDINGS] = { 0 };
  int ninputs = 0, nres = 0;

  for (int i = 2; i < argc; i++) {
    const char *v;
    if ((v = flag_value(argc, argv, &i, "--input")) || (v = flag_value(argc, argv, &i, "-i"))) {
      const char *eq = strchr(v, '=');
      if (!eq || eq == v || !eq[1])
        return tpc_fail(EXIT_USAGE, "--input expects NAME=FILE.npy, got '%s'", v);
      if (nins == MAX_BINDINGS) return tpc_fail(EXIT_USAGE, "too many --input flags");
      for (int k = 0; k < nins; k++)
        if (ins[k].name_len == (size_t)(eq - v) && !memcmp(ins[k].name, v, ins[k].name_len))
          return tpc_fail(EXIT_USAGE, "input '%.*s' is given twice", (int)(eq - v), v);
      ins[nins++] = (binding){ v, (size_t)(eq - v), eq + 1, 0 };
    } else if ((v = flag_value(argc, argv, &i, "--output")) ||
               (v = flag_value(argc, argv, &i, "-o"))) {
      if (!*v) return tpc_fail(EXIT_USAGE, "--output expects FILE.npy");
      if (nouts == MAX_BINDINGS) return tpc_fail(EXIT_USAGE, "too many --output flags");
      outs[nouts++] = v;
    } else if (!strcmp(argv[i], "--print")) {
      print = 1;
    } else if ((v = flag_value(argc, argv, &i, "--backend"))) {
      backend = v;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return tpc_fail(EXIT_USAGE, "run: unknown option '%s' (see tpc --help)", argv[i]);
    } else if (!graph_path) {
      graph_path = argv[i];
    } else {
      return tpc_fail(EXIT_USAGE, "run: more than one graph file ('%s' and '%s')", graph_path,
                  argv[i]);
    }
  }
  if (!graph_path) return tpc_fail(EXIT_USAGE, "run: missing GRAPH.tpg (see tpc --help)");
  if (ends_with(graph_path, ".onnx")) return run_model(graph_path, ins, nins, outs, nouts, print, backend);
  if (backend) return tpc_fail(EXIT_USAGE, "run: --backend applies to .onnx models");
  if ((rc = load_graph(graph_path, &g))) return rc;

  /* bind inputs by placeholder name, in placeholder order */
  ninputs = tp_graph_num_inputs(g);
  if (ninputs > MAX_BINDINGS) {
    rc = tpc_fail(EXIT_USAGE, "%s: too many graph inputs (%d)", graph_path, ninputs);
    goto done;
  }
  char names[1024];
  {
    size_t j = 0;
    names[0] = 0;
    for (int k = 0; k < ninputs && j < sizeof names; k++)
      j += (size_t)snprintf(names + j, sizeof names - j, "%s%s", k ? ", " : "",
                            tp_graph_input_name(g, k));
    if (!ninputs) snprintf(names, sizeof names, "none");
  }
  for (int b = 0; b < nins; b++) {
    int found = 0;
    for (int k = 0; k < ninputs; k++) {
      const char *nm = tp_graph_input_name(g, k);
      if (strlen(nm) == ins[b].name_len && !memcmp(nm, ins[b].name, ins[b].name_len)) found = 1;
    }
    if (!found) {
      rc = tpc_fail(EXIT_USAGE, "the graph has no input named '%.*s' (its inputs: %s)",
                (int)ins[b].name_len, ins[b].name, names);
      goto done;
    }
  }
  int ph = 0;
  for (int n = 0; n < g->n; n++) {
    const tp_node *nd = &g->nodes[n];
    if (nd->kind != TP_NODE_PLACEHOLDER) continue;
    const char *nm = tp_graph_input_name(g, ph);
    binding *bd = NULL;
    for (int b = 0; b < nins; b++)
      if (strlen(nm) == ins[b].name_len && !memcmp(nm, ins[b].name, ins[b].name_len)) bd = &ins[b];
    if (!bd) {
      rc = tpc_fail(EXIT_USAGE, "missing input '%s': pass --input %s=FILE.npy (graph inputs: %s)", nm,
                nm, names);
      goto done;
    }
    tp_tensor *t = NULL;
    tp_status s = ends_with(bd->file, ".pb") ? tp_onnx_tensor_load(bd->file, &t)
                                             : tp_npy_load(bd->file, &t);
    if (s != TP_OK) {
      rc = tpc_fail(s == TP_ERR_OUT_OF_MEMORY ? EXIT_RUNTIME : EXIT_USAGE, "input '%s': %s", nm,
                tp_last_error());
      goto done;
    }
    inputs[ph++] = t;
    const tp_desc *want = &nd->desc;
    if (tp_tensor_dtype(t) != want->dtype || tp_tensor_ndim(t) != want->ndim ||
        memcmp(tp_tensor_shape(t), want->shape, sizeof(int64_t) * (size_t)want->ndim) != 0) {
      char got_s[160], want_s[160];
      type_str(tp_tensor_dtype(t), tp_tensor_ndim(t), tp_tensor_shape(t), got_s, sizeof got_s);
      type_str(want->dtype, want->ndim, want->shape, want_s, sizeof want_s);
      rc = tpc_fail(EXIT_USAGE, "input '%s' (%s) is %s, but the graph expects %s", nm, bd->file,
                got_s, want_s);
      goto done;
    }
    if (ph == ninputs) break;
  }
  if (ph != ninputs) {
    rc = tpc_fail(EXIT_RUNTIME, "%s: found %d placeholders, expected %d", graph_path, ph, ninputs);
    goto done;
  }

  int noutputs = tp_graph_num_outputs(g);
  if (nouts > noutputs) {
    rc = tpc_fail(EXIT_USAGE, "%d --output files given, but the graph has %d output%s", nouts,
              noutputs, noutputs == 1 ? "" : "s");
    goto done;
  }
  if (noutputs > MAX_BINDINGS) {
    rc = tpc_fail(EXIT_USAGE, "%s: too many graph outputs (%d)", graph_path, noutputs);
    goto done;
  }
  tp_status s = tp_graph_run(g, ninputs, inputs, MAX_BINDINGS, results, &nres);
  if (s != TP_OK) {
    nres = 0;
    rc = tpc_fail(EXIT_RUNTIME, "run failed: %s", tp_last_error());
    goto done;
  }
  for (int k = 0; k < nres; k++) {
    if (k < nouts) {
      if ((ends_with(outs[k], ".pb") ? tp_onnx_tensor_save(outs[k], results[k])
                                     : tp_npy_save(outs[k], results[k])) != TP_OK) {
        rc = tpc_fail(EXIT_RUNTIME, "output %d: %s", k, tp_last_error());
        goto done;
      }
    }
    if (print || k >= nouts) {
      if ((rc = summarize(k, results[k]))) goto done;
    }
  }

done:
  for (int k = 0; k < nres; k++) tp_tensor_release(results[k]);
  for (int k = 0; k < ninputs && k < MAX_BINDINGS; k++) tp_tensor_release(inputs[k]);
  tp_graph_free(g);
  return rc;
}

int tpc_load_graph(const char *path, tp_graph **g) { return load_graph(path, g); }

static int cmd_graph(int argc, char **argv) {
  if (argc != 3 || argv[2][0] == '-')
    return tpc_fail(EXIT_USAGE, "graph: expects exactly one GRAPH.tpg (see tpc --help)");
  tp_graph *g = NULL;
  int rc = load_graph(argv[2], &g);
  if (rc) return rc;
  char *text = NULL;
  if (tp_graph_print(g, 0, &text) != TP_OK) {
    rc = tpc_fail(EXIT_RUNTIME, "%s: %s", argv[2], tp_last_error());
  } else {
    fputs(text, stdout);
    tp_free_buffer(text);
  }
  tp_graph_free(g);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage_text, stderr);
    return EXIT_USAGE;
  }
  const char *cmd = argv[1];
  int rc;
  if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
    fputs(usage_text, stdout);
    rc = 0;
  } else if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
    printf("tpc %s (isa: %s)\n", TP_VERSION_STRING, tp_isa_name());
    rc = 0;
  } else if (!strcmp(cmd, "run")) {
    rc = cmd_run(argc, argv);
  } else if (!strcmp(cmd, "graph")) {
    rc = cmd_graph(argc, argv);
  } else if (!strcmp(cmd, "compile")) {
    rc = tpc_cmd_compile(argc, argv);
  } else if (!strcmp(cmd, "bench")) {
    rc = tpc_cmd_bench(argc, argv);
  } else if (!strcmp(cmd, "parity")) {
    rc = tpc_cmd_parity(argc, argv);
  } else {
    rc = tpc_fail(EXIT_USAGE, "unknown command '%s' (commands: run, graph, compile, bench, parity, version, help)", cmd);
  }
  if (fflush(stdout) != 0 && rc == 0) rc = tpc_fail(EXIT_RUNTIME, "cannot write to stdout");
  return rc;
}
