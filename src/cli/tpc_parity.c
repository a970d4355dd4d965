/* tpc_parity.c - `tpc parity MODEL.onnx [--input NAME=FILE.npy|FILE.pb]...`:
 * runs a model with the reference backend (the scalar oracle,
 * tp_graph_run_ex(g, 1, ...)), eagerly (tp_graph_run) and with stax
 * (tp_lower + tp_plan_run), and prints, per output, the max abs and max
 * relative error of eager and stax against the reference (and of all three
 * against the expected outputs of test_data_set_0 when those are the inputs).
 * Exit 1 when an error is beyond ONNX's tolerance
 * (|got - ref| <= 1e-7 + 1e-3 |ref|, NaN = NaN, ints and bools exact),
 * 2 on a usage or input error, 0 otherwise.
 *
 * Inputs: the --input files (by graph input name); without any, the
 * model's test_data_set_0/input_*.pb next to it if present, else seeded
 * random inputs of the declared shapes (float32 ~ N(0, 1), ints and bools 0). */
#include "../lower/lower.h"
#include "../onnx/onnx.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#define MAXIO 64

int tpc_load_specialized(const char *cmd, const char *path, int nbind, char **binds, tp_graph **g, tp_tensor **in,
                         int *nin); /* tpc_lower.c */

int tpc_fail(int code, const char *fmt, ...); /* tpc.c */
/* "tpc: parity: MESSAGE"; fmt must be a string literal */
#define pfail(code, ...) tpc_fail(code, "parity: " __VA_ARGS__)

static int file_exists(const char *p) {
  struct stat st;
  return stat(p, &st) == 0;
}

static int has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && !strcmp(s + n - k, suffix);
}

static void type_of(tp_dtype dt, int ndim, const int64_t *shape, char *buf, size_t n) {
  char b[96];
  snprintf(buf, n, "%s%s", tp_dtype_short(dt), tp_shape_str(ndim, shape, b, sizeof b));
}

/* Error statistics of got against ref; returns 1 beyond tolerance. */
typedef struct errstat { double max_abs, max_rel; int64_t bad; const char *why; } errstat;

static int compare_out(tp_tensor *got, tp_tensor *ref, errstat *e) {
  memset(e, 0, sizeof *e);
  if (tp_tensor_dtype(got) != tp_tensor_dtype(ref) || tp_tensor_ndim(got) != tp_tensor_ndim(ref) ||
      memcmp(tp_tensor_shape(got), tp_tensor_shape(ref), sizeof(int64_t) * (size_t)tp_tensor_ndim(got))) {
    e->why = "dtype or shape differs";
    e->max_abs = e->max_rel = INFINITY;
    return 1;
  }
  int isf = tp_tensor_dtype(got) == TP_F32;
  int64_t n = tp_tensor_numel(got);
  for (int64_t i = 0; i < n; i++) {
    double g = tp_tensor_get_f64(got, i), r = tp_tensor_get_f64(ref, i);
    if (isnan(g) && isnan(r)) continue;
    if (g == r) continue;
    double d = fabs(g - r);
    if (isnan(d)) d = INFINITY; /* NaN vs number, or inf vs -inf */
    if (d > e->max_abs) e->max_abs = d;
    double rel = r != 0 ? d / fabs(r) : INFINITY;
    if (rel > e->max_rel) e->max_rel = rel;
    if (!isf || !(d <= 1e-7 + 1e-3 * fabs(r))) e->bad++;
  }
  return e->bad > 0;
}

typedef struct binding { const char *name; size_t len; const char *file; } binding;

static tp_status load_tensor(const char *file, tp_tensor **t) {
  return has_suffix(file, ".pb") ? tp_onnx_tensor_load(file, t) : tp_npy_load(file, t);
}

int tpc_cmd_parity(int argc, char **argv) {
  binding ins[MAXIO];
  int nins = 0, rc = 0;
  const char *path = NULL;
  for (int i = 2; i < argc; i++) {
    const char *v = NULL;
    if (!strcmp(argv[i], "--input") || !strcmp(argv[i], "-i")) {
      if (i + 1 >= argc) return pfail(2, "--input expects NAME=FILE.npy|FILE.pb");
      v = argv[++i];
    } else if (!strncmp(argv[i], "--input=", 8)) {
      v = argv[i] + 8;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return pfail(2, "unknown option '%s' (usage: tpc parity MODEL.onnx [--input NAME=FILE.npy|FILE.pb]...)",
                   argv[i]);
    } else if (!path) {
      path = argv[i];
      continue;
    } else {
      return pfail(2, "more than one model ('%s' and '%s')", path, argv[i]);
    }
    const char *eq = strchr(v, '=');
    if (!eq || eq == v || !eq[1]) return pfail(2, "--input expects NAME=FILE.npy|FILE.pb, got '%s'", v);
    if (nins == MAXIO) return pfail(2, "too many --input flags");
    ins[nins++] = (binding){v, (size_t)(eq - v), eq + 1};
  }
  if (!path) return pfail(2, "missing MODEL.onnx (usage: tpc parity MODEL.onnx [--input NAME=FILE]...)");
  if (!file_exists(path)) return pfail(2, "%s: cannot open: %s", path, strerror(errno));

  tp_graph *g = NULL;
  tp_plan *pl = NULL;
  tp_tensor *in[MAXIO] = {0}, *want[MAXIO] = {0}, *ref[MAXIO] = {0}, *got[2][MAXIO] = {{0}};
  int nin = 0, nwant = 0, nref = 0, ngot[2] = {0, 0};
  int spec = 0; /* the model's specialization for the --input tensors */
  tp_status ls = tp_onnx_load_file(path, &g);
  if (ls == TP_ERR_UNSUPPORTED && nins) {
    /* symbolic dims or inputs that set shapes: the graph tp_onnx_model
     * specializes for these inputs, with its placeholders bound in order */
    char *binds[MAXIO];
    for (int b = 0; b < nins; b++) binds[b] = (char *)ins[b].name; /* "NAME=FILE" */
    g = NULL;
    if ((rc = tpc_load_specialized("parity", path, nins, binds, &g, in, &nin))) goto done;
    spec = 1;
  } else if (ls == TP_ERR_UNSUPPORTED) {
    return pfail(2, "%s (symbolic dims and inputs that set shapes need the inputs: pass every input with --input "
                 "NAME=FILE.npy|FILE.pb)", tp_last_error());
  } else if (ls) {
    return tpc_fail(ls == TP_ERR_OUT_OF_MEMORY ? 1 : 2, "%s", tp_last_error());
  }
  if (!spec) nin = tp_graph_num_inputs(g);
  if (nin > MAXIO) {
    rc = pfail(2, "%s: too many graph inputs (%d)", path, nin);
    nin = 0;
    goto done;
  }

  /* where the inputs come from */
  char dir[1024], set0[1200], p[1400];
  snprintf(dir, sizeof dir, "%s", path);
  char *slash = strrchr(dir, '/');
  if (slash) *slash = 0;
  else snprintf(dir, sizeof dir, ".");
  snprintf(set0, sizeof set0, "%s/test_data_set_0", dir);
  snprintf(p, sizeof p, "%s/input_0.pb", set0);
  int from_set = !nins && file_exists(set0) && (nin == 0 || file_exists(p));
  const char *source = nins ? "--input files" : from_set ? set0 : "random inputs (seeded)";

  for (int b = 0; b < nins && !spec; b++) {
    int found = 0;
    for (int k = 0; k < nin; k++)
      if (strlen(tp_graph_input_name(g, k)) == ins[b].len && !memcmp(tp_graph_input_name(g, k), ins[b].name, ins[b].len))
        found = 1;
    if (!found) {
      rc = pfail(2, "the model has no input named '%.*s'", (int)ins[b].len, ins[b].name);
      goto done;
    }
  }
  for (int i = 0, k = 0; i < g->n && k < nin && !spec; i++) {
    const tp_node *nd = &g->nodes[i];
    if (nd->kind != TP_NODE_PLACEHOLDER) continue;
    const char *nm = tp_graph_input_name(g, k);
    const tp_desc *d = &nd->desc;
    tp_status s = TP_OK;
    const char *file = NULL;
    if (nins) {
      for (int b = 0; b < nins; b++)
        if (strlen(nm) == ins[b].len && !memcmp(nm, ins[b].name, ins[b].len)) file = ins[b].file;
      if (!file) {
        rc = pfail(2, "missing input '%s': pass --input %s=FILE.npy|FILE.pb (or no --input at all)", nm, nm);
        goto done;
      }
      s = load_tensor(file, &in[k]);
    } else if (from_set) {
      snprintf(p, sizeof p, "%s/input_%d.pb", set0, k);
      file = p;
      if (!file_exists(p)) {
        rc = pfail(2, "%s: no %s for model input %d ('%s')", set0, strrchr(p, '/') + 1, k, nm);
        goto done;
      }
      s = tp_onnx_tensor_load(p, &in[k]);
    } else if (d->dtype == TP_F32) {
      s = tp_randn(d->ndim, d->shape, 0x5eed + (uint64_t)k, &in[k]);
    } else {
      s = tp_zeros(d->dtype, d->ndim, d->shape, &in[k]);
    }
    if (s) {
      rc = pfail(s == TP_ERR_OUT_OF_MEMORY ? 1 : 2, "input '%s'%s%s%s: %s", nm, file ? " (" : "", file ? file : "",
                 file ? ")" : "", tp_last_error());
      goto done;
    }
    if (tp_tensor_dtype(in[k]) != d->dtype || tp_tensor_ndim(in[k]) != d->ndim ||
        memcmp(tp_tensor_shape(in[k]), d->shape, sizeof(int64_t) * (size_t)d->ndim)) {
      char a[160], w[160];
      type_of(tp_tensor_dtype(in[k]), tp_tensor_ndim(in[k]), tp_tensor_shape(in[k]), a, sizeof a);
      type_of(d->dtype, d->ndim, d->shape, w, sizeof w);
      rc = pfail(2, "input '%s' (%s) is %s, but the model expects %s", nm, file ? file : "random", a, w);
      goto done;
    }
    k++;
  }
  if (from_set)
    for (; nwant < MAXIO; nwant++) {
      snprintf(p, sizeof p, "%s/output_%d.pb", set0, nwant);
      if (!file_exists(p)) break;
      if (tp_onnx_tensor_load(p, &want[nwant])) {
        rc = pfail(2, "%s: %s", p, tp_last_error());
        goto done;
      }
    }

  printf("tpc parity %s: inputs from %s\n", path, source);
  if (tp_graph_run_ex(g, 1, nin, in, MAXIO, ref, &nref)) {
    nref = 0;
    rc = pfail(1, "reference run failed: %s", tp_last_error());
    goto done;
  }
  if (tp_graph_run(g, nin, in, MAXIO, got[0], &ngot[0])) {
    ngot[0] = 0;
    rc = pfail(1, "eager run failed: %s", tp_last_error());
    goto done;
  }
  if (tp_lower(g, NULL, &pl)) {
    pl = NULL;
    rc = pfail(1, "stax lower failed: %s", tp_last_error());
    goto done;
  }
  if (tp_plan_run(pl, nin, in, MAXIO, got[1], &ngot[1])) {
    ngot[1] = 0;
    rc = pfail(1, "stax run failed: %s", tp_last_error());
    goto done;
  }
  if (nwant && nwant != nref)
    printf("note: test_data_set_0 has %d outputs, the model %d; not compared with them\n", nwant, nref);
  const char *onames = tp_graph_get_custom(g, tp_graph_output(g), "onnx_outputs");
  printf("%-4s %-24s %-16s %-9s %-12s %-12s %s\n", "out", "name", "type", "backend", "max_abs_err", "max_rel_err",
         "within ONNX tolerance");
  for (int k = 0; k < nref; k++) {
    char nm[64] = "", ty[160];
    if (onames) { /* the k-th comma-separated name */
      const char *s = onames;
      for (int j = 0; j < k && s; j++) s = strchr(s, ','), s = s ? s + 1 : NULL;
      if (s) snprintf(nm, sizeof nm, "%.*s", (int)strcspn(s, ","), s);
    }
    type_of(tp_tensor_dtype(ref[k]), tp_tensor_ndim(ref[k]), tp_tensor_shape(ref[k]), ty, sizeof ty);
    for (int b = 0; b < 5; b++) { /* eager, stax vs reference; reference, eager, stax vs expected */
      static const char *const label[5] = {"eager", "stax", "ref/exp", "eager/exp", "stax/exp"};
      tp_tensor *x = b == 0 || b == 3 ? got[0][k] : b == 1 || b == 4 ? got[1][k] : ref[k];
      tp_tensor *y = b < 2 ? ref[k] : nwant == nref ? want[k] : NULL;
      if (!y || !x) continue;
      errstat e;
      int over = compare_out(x, y, &e);
      if (over) rc = 1;
      printf("%-4d %-24s %-16s %-9s %-12.4g %-12.4g %s\n", k, nm[0] ? nm : "-", ty, label[b], e.max_abs, e.max_rel,
             over ? (e.why ? e.why : "NO") : "yes");
    }
  }
  if (ngot[0] != nref || ngot[1] != nref) {
    rc = pfail(1, "output counts differ: reference %d, eager %d, stax %d", nref, ngot[0], ngot[1]);
  }
  printf("%s\n", rc ? "parity: FAIL (beyond ONNX tolerance: |err| <= 1e-7 + 1e-3 |ref|)"
                    : "parity: ok (within ONNX tolerance: |err| <= 1e-7 + 1e-3 |ref|)");
done:
  for (int k = 0; k < MAXIO; k++) {
    tp_tensor_release(in[k]);
    tp_tensor_release(want[k]);
    tp_tensor_release(ref[k]);
    tp_tensor_release(got[0][k]);
    tp_tensor_release(got[1][k]);
  }
  tp_plan_free(pl);
  tp_graph_free(g);
  return rc;
}
