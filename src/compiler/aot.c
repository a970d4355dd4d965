/* aot.c - compiled training (AOT autograd; docs/training.md).
 *
 * 1. Joint trace: the function runs under capture with grad mode on and
 *    the inputs' requires_grad copied onto their proxies; autograd records
 *    the proxies as eagerly. Then backward runs on the one output that
 *    requires grad, from a new placeholder (grad_out), still under capture:
 *    the derivative formulas are ordinary ops, so they are recorded too,
 *    and a sink collects what would be added into each leaf's .grad.
 *    The joint graph's outputs: the function's outputs, then one gradient
 *    per leaf (an input or a closed-over parameter that requires grad).
 * 2. Partition: the backward graph holds every node that depends on
 *    grad_out, plus the forward nodes it recomputes; any other forward value
 *    it reads is saved: the forward graph outputs it. Which forward nodes are
 *    recomputed: by default a minimum cut of the forward part as a flow
 *    network (partition.c: the fewest bytes saved; GEMMs, convs, reductions
 *    and values a backward GEMM reads never recomputed); with
 *    TP_PARTITIONER=rule the old rule: pointwise and view ops (unary,
 *    binary, where, reshape, transpose, ...) unless a GEMM reads them
 *    (through views: the forward materializes those anyway).
 *    Inputs and parameters are saved as they are (references, no copy).
 *    Parameters that require grad become inputs of both graphs (never
 *    constants: an optimizer updates them in place between calls).
 * 3. Both graphs go to the backend. A call runs the forward graph and gives
 *    the output one autograd node (tp_autograd_attach) whose backward runs
 *    the backward graph on (saved..., grad). */
#include "aot.h"
#include "partition.h"
#include "../ops/autograd.h"
#include <stdio.h>
#include <stdlib.h>

#define AOT_MAX TP_MAX_OPERANDS

/* A nested region differentiated on its own (one per region and key in a
 * joint trace): its partition, its compiled forward and backward, and the
 * host functions the joint graph calls them through. */
typedef struct nested_grad {
  uint32_t rec;
  char key[200];
  struct tp_aot *a;
  int64_t fw_id, bw_id; /* 0: not registered */
  int nin;
} nested_grad;
#define NESTED_MAX 32
struct tp_aot_nested {
  int n;
  nested_grad *e[NESTED_MAX];
  const tp_backend *b; /* the compiled function's backend: the compilers' default */
  tp_backend_opts bo;
};
static TP_THREAD_LOCAL struct tp_aot_nested *cur_nested;

/* ---- the joint trace ---- */
typedef struct joint_ctx {
  const tp_callable *fn;
  const int *rg; /* the real inputs' requires_grad */
  int nin;
  int nfw;            /* the function's outputs */
  int gout;           /* the output that requires grad, -1 none */
  int gnode;          /* grad_out's placeholder node */
  int nleaf;
  tp_tensor *leaf[AOT_MAX];      /* proxies of inputs, or closed-over parameters (borrowed) */
  tp_tensor *leaf_grad[AOT_MAX]; /* owned */
  /* per leaf, found while the trace's inputs are alive (joint_fn): the input
   * it is (-1 none), else the closed-over parameter (owned) */
  int leaf_input[AOT_MAX];
  tp_tensor *leaf_param[AOT_MAX];
  char why[200];      /* why this cannot be compiled for training ("" fine) */
} joint_ctx;

static tp_status sink(void *ud, tp_tensor *leaf, tp_tensor *g) {
  joint_ctx *j = ud;
  for (int i = 0; i < j->nleaf; i++)
    if (j->leaf[i] == leaf) {
      tp_tensor *in[2] = {j->leaf_grad[i], g}, *r = NULL;
      TP_TRY(tp_op_call(TP_OP_ADD, 2, in, NULL, &r));
      tp_tensor_release(j->leaf_grad[i]);
      j->leaf_grad[i] = r;
      return TP_OK;
    }
  if (j->nleaf == AOT_MAX) {
    snprintf(j->why, sizeof j->why, "more than %d tensors require grad", AOT_MAX);
    return TP_OK;
  }
  j->leaf[j->nleaf] = leaf;
  tp_tensor_retain(g);
  j->leaf_grad[j->nleaf++] = g;
  return TP_OK;
}

static tp_status joint_fn(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                          int *nout) {
  joint_ctx *j = ud;
  for (int i = 0; i < nin; i++)
    if (j->rg[i]) TP_TRY(tp_tensor_set_requires_grad(in[i], 1));
  TP_TRY(j->fn->fn(j->fn->ud, nin, in, max_out, outs, nout));
  j->nfw = *nout;
  j->gout = -1;
  for (int i = 0; i < *nout; i++)
    if (outs[i] && tp_tensor_requires_grad(outs[i])) {
      if (j->gout >= 0) {
        snprintf(j->why, sizeof j->why, "more than one output requires grad");
        return TP_OK;
      }
      j->gout = i;
    }
  if (j->gout < 0) return TP_OK; /* nothing to differentiate: a plain graph */
  tp_tensor *y = outs[j->gout], *ones = NULL, *g = NULL;
  TP_TRY(tp_full(TP_F32, y->ndim, y->shape, 1.0, &ones));
  tp_status s = tp_capture_add_input(ones, "grad_out", &g);
  tp_tensor_release(ones);
  if (s) return s;
  j->gnode = g->node;
  tp_grad_sink pf;
  void *pu;
  tp_autograd_set_sink(sink, j, &pf, &pu);
  s = tp_backward_ex(y, g, 1);
  tp_autograd_set_sink(pf, pu, NULL, NULL);
  tp_tensor_release(g);
  if (s) return s;
  if (*nout + j->nleaf > max_out) {
    snprintf(j->why, sizeof j->why, "%d outputs and %d gradients exceed %d", *nout, j->nleaf, max_out);
    return TP_OK;
  }
  for (int i = 0; i < j->nleaf; i++) {
    outs[(*nout)++] = j->leaf_grad[i];
    j->leaf_grad[i] = NULL;
    /* which input or parameter the leaf is: here, while in[] (the tracer's
     * proxies) is alive */
    j->leaf_input[i] = -1;
    for (int k = 0; k < nin; k++)
      if (in[k] == j->leaf[i]) j->leaf_input[i] = k;
    if (j->leaf_input[i] < 0) tp_tensor_retain(j->leaf_param[i] = j->leaf[i]);
  }
  return TP_OK;
}

static tp_status nested_hook(const tp_nested_call *c, int nin, tp_tensor *const *in, int max_out,
                             tp_tensor **outs, int *nout, int *handled, tp_trace_result *plain, char *why,
                             size_t nwhy);
static void nested_list_free(struct tp_aot_nested *l);

tp_status tp_aot_trace(const tp_callable *fn, int nin, tp_tensor *const *in, const char *const *names,
                       int fullgraph, const tp_backend *b, const tp_backend_opts *bo,
                       tp_trace_result *r, tp_aot_joint *jt) {
  memset(jt, 0, sizeof *jt);
  tp_capture_set_nested_grad_hook(nested_hook);
  /* the outermost joint trace owns what nested regions compile */
  struct tp_aot_nested *outer = cur_nested;
  if (!outer) {
    if (!(cur_nested = tp_alloc(sizeof *cur_nested))) return TP_ERR_OUT_OF_MEMORY;
    memset(cur_nested, 0, sizeof *cur_nested);
    cur_nested->b = b;
    if (bo) cur_nested->bo = *bo;
  }
  joint_ctx *j = tp_alloc(sizeof *j);
  if (!j) {
    if (!outer) nested_list_free(cur_nested), cur_nested = NULL;
    return TP_ERR_OUT_OF_MEMORY;
  }
  memset(j, 0, sizeof *j);
  int rg[TP_MAX_OPERANDS] = {0};
  for (int i = 0; i < nin; i++) rg[i] = tp_tensor_requires_grad(in[i]);
  j->fn = fn, j->rg = rg, j->nin = nin, j->gout = -1, j->gnode = -1;
  tp_callable jc = {joint_fn, j};
  int prev = 0;
  tp_capture_allow_grad(1, &prev);
  tp_status s = tp_trace_named(&jc, nin, in, names, fullgraph, r);
  tp_capture_allow_grad(prev, NULL);
  for (int i = 0; i < j->nleaf; i++) tp_tensor_release(j->leaf_grad[i]);
  if (!s) {
    jt->nfw = j->nfw;
    jt->gout = j->gout;
    jt->gnode = j->gnode;
    snprintf(jt->why, sizeof jt->why, "%s", j->why);
    jt->nleaf = j->why[0] ? 0 : j->nleaf;
    for (int i = 0; i < jt->nleaf; i++) {
      jt->leaf_input[i] = j->leaf_input[i];
      jt->leaf_param[i] = j->leaf_param[i]; /* the reference moves */
      j->leaf_param[i] = NULL;
    }
    /* the samples of the outputs were computed with autograd on proxies: the
     * results handed back are the function's outputs only */
    if (!r->broken && jt->gout >= 0 && !jt->why[0] && r->nout != jt->nfw + jt->nleaf)
      snprintf(jt->why, sizeof jt->why, "internal: %d joint outputs", r->nout);
  }
  for (int i = 0; i < j->nleaf; i++) tp_tensor_release(j->leaf_param[i]);
  tp_free(j);
  if (!outer) {
    if (!s && cur_nested->n) {
      jt->nested = cur_nested;
      if (jt->gout < 0 && !jt->why[0])
        snprintf(jt->why, sizeof jt->why, "a nested region's result requires grad but no output of the function does");
    } else {
      nested_list_free(cur_nested);
    }
    cur_nested = NULL;
  }
  return s;
}

void tp_aot_joint_clear(tp_aot_joint *jt) {
  for (int i = 0; i < jt->nleaf; i++) tp_tensor_release(jt->leaf_param[i]);
  nested_list_free(jt->nested);
  memset(jt, 0, sizeof *jt);
}

/* ---- partition ---- */
enum { SAVE_EXT, SAVE_FW }; /* an (extended) input as it is, or a forward output */

struct tp_aot {
  int refs;
  int nin;            /* the call's inputs */
  int nparam;         /* parameters that require grad, inputs nin.. of both graphs */
  tp_tensor *param[AOT_MAX];
  int nfw;            /* the function's outputs */
  int gout;
  int nsave;          /* the backward graph's inputs before grad_out */
  int save_kind[AOT_MAX], save_idx[AOT_MAX];
  int nsave_fw;       /* forward outputs after the function's */
  int nleaf;
  int leaf_ext[AOT_MAX]; /* the leaf's index among the extended inputs */
  tp_graph *fwg, *bwg;
  tp_backend_run fw, bw;
  int nrecompute, nbw_ops, nfw_ops;
  char saved_text[4096], recompute_text[4096]; /* the lists in explain (the counts are exact: an entry that does not fit is left out) */
  char saved_bytes_text[2048], recompute_bytes_text[2048];
  int64_t saved_total, recompute_total; /* bytes: saved forward outputs (inputs and parameters are references), recomputed values */
  tp_partition_policy policy;
  char policy_note[96]; /* why the min-cut fell back to the rule ("" none) */
  struct tp_aot_nested *nested; /* nested regions' compiled graphs the plans call */
};

static tp_status copy_node(tp_graph *dst, const tp_graph *src, int i, const int *map, int *idx) {
  const tp_node *n = &src->nodes[i];
  tp_arg args[TP_MAX_OPERANDS];
  if (n->nargs > TP_MAX_OPERANDS) return tp_fail(TP_ERR_INTERNAL, "aot: too many operands");
  for (int k = 0; k < n->nargs; k++) {
    args[k] = n->args[k];
    if (args[k].kind == TP_ARG_NODE) args[k].node = map[args[k].node];
  }
  TP_TRY(tp_graph_add_node(dst, n->kind, NULL, n->op, n->nargs, args, &n->attrs, &n->desc, idx));
  if (n->kind == TP_NODE_GET_ATTR) {
    tp_node *m = &dst->nodes[*idx];
    if (!(m->target = tp_strdup(n->target))) return TP_ERR_OUT_OF_MEMORY;
    tp_graph_set_val(dst, *idx, n->val);
  }
  return TP_OK;
}

static tp_status add_placeholder(tp_graph *g, const char *name, const tp_desc *d, int *idx) {
  tp_desc dd = *d;
  dd.weak = 0;
  return tp_graph_add_node(g, TP_NODE_PLACEHOLDER, name, TP_OP_COUNT, 0, NULL, NULL, &dd, idx);
}

static tp_status add_output(tp_graph *g, int n, const int *nodes) {
  tp_arg a[TP_MAX_OPERANDS];
  for (int i = 0; i < n; i++) a[i] = (tp_arg){TP_ARG_NODE, nodes[i], 0, 0};
  return tp_graph_add_node(g, TP_NODE_OUTPUT, "output", TP_OP_COUNT, n, a, NULL, NULL, NULL);
}

static void note(char *buf, size_t cap, char *bbuf, size_t bcap, const tp_node *n) {
  size_t k = strlen(buf), kb = strlen(bbuf);
  const char *what = n->kind == TP_NODE_CALL ? tp_op_name(n->op) : n->kind == TP_NODE_PLACEHOLDER ? "input" : "param";
  /* whole entries only (a name cut in the middle would leave explain's
   * JSON unterminated), the name and its bytes both or neither */
  int need = snprintf(NULL, 0, "%s\"%%%s (%s)\"", k ? ", " : "", n->name, what);
  int needb = snprintf(NULL, 0, "%s%lld", kb ? ", " : "", (long long)tp_partition_bytes(&n->desc));
  if (need < 0 || needb < 0 || k + (size_t)need >= cap || kb + (size_t)needb >= bcap) return;
  snprintf(buf + k, cap - k, "%s\"%%%s (%s)\"", k ? ", " : "", n->name, what);
  snprintf(bbuf + kb, bcap - kb, "%s%lld", kb ? ", " : "", (long long)tp_partition_bytes(&n->desc));
}

/* why: set (and TP_OK returned) when this graph cannot be partitioned. */
static tp_status partition(const tp_graph *jg, const tp_aot_joint *jt, int nin, tp_aot *a,
                           char *why, size_t nwhy) {
  int n = jg->n, o = tp_graph_output(jg);
  if (o < 0) return tp_fail(TP_ERR_INTERNAL, "aot: joint graph without output");
  int *tan = tp_alloc(sizeof(int) * (size_t)n * 7);
  if (!tan) return TP_ERR_OUT_OF_MEMORY;
  int *need_bw = tan + n, *need_fw = tan + 2 * n, *map = tan + 3 * n, *ext = tan + 4 * n, *gemm_in = tan + 5 * n;
  int *rc = tan + 6 * n; /* min-cut: recompute in the backward */
  memset(tan, 0, sizeof(int) * (size_t)n * 7);
  tp_status s = TP_OK;
  const tp_node *on = &jg->nodes[o];
  /* extended inputs: placeholders 0..nin-1, then parameters that require grad */
  int np = 0;
  for (int i = 0, k = 0; i < n; i++) {
    const tp_node *m = &jg->nodes[i];
    ext[i] = -1;
    if (m->kind == TP_NODE_PLACEHOLDER && i != jt->gnode) ext[i] = k++;
    if (m->kind == TP_NODE_GET_ATTR && m->desc.ndim != TP_DESC_GRAPH && tp_tensor_requires_grad(m->val)) {
      if (np == AOT_MAX) { snprintf(why, nwhy, "too many parameters"); goto out; }
      a->param[np] = m->val;
      tp_tensor_retain(m->val);
      ext[i] = nin + np++;
    }
    /* call_host: a nested region's compiled forward or backward (opaque
     * regions that a gradient flows through break the trace); control flow
     * has no compiled backward yet */
    if (m->kind == TP_NODE_CALL && (m->op == TP_OP_INVOKE || m->op == TP_OP_COND || m->op == TP_OP_WHILE_LOOP)) {
      snprintf(why, nwhy, "%s (a nested region, or control flow) inside a region that requires grad", tp_op_name(m->op));
      goto out;
    }
  }
  a->nparam = np;
  a->nin = nin;
  /* leaves -> extended inputs */
  a->nleaf = jt->nleaf;
  for (int l = 0; l < jt->nleaf; l++) {
    a->leaf_ext[l] = -1;
    if (jt->leaf_input[l] >= 0) a->leaf_ext[l] = jt->leaf_input[l];
    for (int p = 0; p < np && a->leaf_ext[l] < 0; p++)
      if (a->param[p] == jt->leaf_param[l]) a->leaf_ext[l] = nin + p;
    if (a->leaf_ext[l] < 0) { snprintf(why, nwhy, "a tensor that requires grad is not an input or a parameter of the graph"); goto out; }
  }
  /* tangent: depends on grad_out */
  for (int i = 0; i < n; i++) {
    const tp_node *m = &jg->nodes[i];
    if (i == jt->gnode) tan[i] = 1;
    if (m->kind == TP_NODE_CALL)
      for (int k = 0; k < m->nargs; k++)
        if (m->args[k].kind == TP_ARG_NODE && tan[m->args[k].node]) tan[i] = 1;
  }
  /* forward values a GEMM reads (through views): the forward materializes
   * them anyway, so saving costs no work, and recomputing one (a GELU, a
   * bias add) would be a pass over it in the backward graph */
  for (int i = n - 1; i >= 0; i--) {
    const tp_node *m = &jg->nodes[i];
    if (m->kind != TP_NODE_CALL || tan[i]) continue;
    int gemm = m->op == TP_OP_MATMUL || m->op == TP_OP_LINEAR || m->op == TP_OP_CONV2D;
    int view = (tp_op_flags(m->op) & TP_OPF_VIEW) && gemm_in[i];
    for (int k = 0; (gemm || view) && k < m->nargs; k++)
      if (m->args[k].kind == TP_ARG_NODE) gemm_in[m->args[k].node] = 1;
  }
  /* the min-cut (partition.c), else the rule above */
  if ((s = tp_partition_policy_get(&a->policy))) goto out;
  if (a->policy == TP_PARTITION_MINCUT) {
    const char *why_not = NULL;
    if ((s = tp_partition_mincut(jg, tan, ext, jt->gnode, rc, &why_not))) goto out;
    if (why_not) {
      a->policy = TP_PARTITION_RULE;
      snprintf(a->policy_note, sizeof a->policy_note, "min-cut not taken (%s)", why_not);
    }
  }
  /* backward membership, from the gradients down */
  for (int k = jt->nfw; k < on->nargs; k++) need_bw[on->args[k].node] = 1;
  for (int k = 0; k < jt->nfw; k++) need_fw[on->args[k].node] = 1;
  a->nsave = 0;
  for (int i = n - 1; i >= 0; i--) {
    const tp_node *m = &jg->nodes[i];
    if (!need_bw[i]) continue;
    int inbw = tan[i] || (a->policy == TP_PARTITION_MINCUT
                              ? rc[i] && m->kind == TP_NODE_CALL && ext[i] < 0
                              : tp_partition_recomputable(m) && ext[i] < 0 &&
                                    (!gemm_in[i] || (tp_op_flags(m->op) & TP_OPF_VIEW)));
    if (m->kind == TP_NODE_GET_ATTR && ext[i] < 0) inbw = 1; /* a constant: copied */
    if (inbw) {
      need_bw[i] = 2;
      if (!tan[i] && m->kind == TP_NODE_CALL) {
        a->nrecompute++, a->recompute_total += tp_partition_bytes(&m->desc) > 0 ? tp_partition_bytes(&m->desc) : 0;
        note(a->recompute_text, sizeof a->recompute_text, a->recompute_bytes_text, sizeof a->recompute_bytes_text, m);
      }
      for (int k = 0; m->kind == TP_NODE_CALL && k < m->nargs; k++)
        if (m->args[k].kind == TP_ARG_NODE) need_bw[m->args[k].node] = 1;
      continue;
    }
    if (a->nsave == AOT_MAX - 1) { snprintf(why, nwhy, "more than %d saved tensors", AOT_MAX - 1); goto out; }
    need_bw[i] = 3; /* saved */
    note(a->saved_text, sizeof a->saved_text, a->saved_bytes_text, sizeof a->saved_bytes_text, m);
    if (ext[i] < 0 && tp_partition_bytes(&m->desc) > 0) a->saved_total += tp_partition_bytes(&m->desc);
    if (ext[i] >= 0) a->save_kind[a->nsave] = SAVE_EXT, a->save_idx[a->nsave++] = ext[i];
    else a->save_kind[a->nsave] = SAVE_FW, a->save_idx[a->nsave++] = i, need_fw[i] = 1;
  }
  /* forward closure */
  for (int i = n - 1; i >= 0; i--) {
    const tp_node *m = &jg->nodes[i];
    if (!need_fw[i] || m->kind != TP_NODE_CALL) continue;
    if (tan[i]) { s = tp_fail(TP_ERR_INTERNAL, "aot: a forward value depends on grad_out"); goto out; }
    for (int k = 0; k < m->nargs; k++)
      if (m->args[k].kind == TP_ARG_NODE) need_fw[m->args[k].node] = 1;
  }
  /* the forward graph: inputs, parameters, what the outputs and saved values need */
  if ((s = tp_graph_new(&a->fwg))) goto out;
  for (int i = 0; i < n && !s; i++) map[i] = -1;
  for (int i = 0; i < n && !s; i++) {
    const tp_node *m = &jg->nodes[i];
    if (ext[i] >= 0 && ext[i] < nin) s = add_placeholder(a->fwg, m->name, &m->desc, &map[i]);
  }
  for (int p = 0; p < np && !s; p++)
    for (int i = 0; i < n && !s; i++)
      if (ext[i] == nin + p) {
        char nm[32];
        snprintf(nm, sizeof nm, "param%d", p);
        s = add_placeholder(a->fwg, nm, &jg->nodes[i].desc, &map[i]);
      }
  for (int i = 0; i < n && !s; i++)
    if (need_fw[i] && ext[i] < 0 && i != jt->gnode && jg->nodes[i].kind != TP_NODE_PLACEHOLDER)
      s = copy_node(a->fwg, jg, i, map, &map[i]), a->nfw_ops += jg->nodes[i].kind == TP_NODE_CALL;
  if (!s) {
    int outs[TP_MAX_OPERANDS], no = 0;
    for (int k = 0; k < jt->nfw; k++) outs[no++] = map[on->args[k].node];
    a->nsave_fw = 0;
    for (int q = 0; q < a->nsave; q++)
      if (a->save_kind[q] == SAVE_FW) {
        if (no == TP_MAX_OPERANDS) { snprintf(why, nwhy, "too many forward outputs"); goto out; }
        outs[no++] = map[a->save_idx[q]];
        a->save_idx[q] = a->nsave_fw++; /* now: its index among the saved forward outputs */
      }
    s = add_output(a->fwg, no, outs);
  }
  if (s) goto out;
  /* the backward graph: (saved..., grad_out) -> the gradients */
  if ((s = tp_graph_new(&a->bwg))) goto out;
  for (int i = 0; i < n; i++) map[i] = -1;
  for (int q = 0, i = n - 1; i >= 0 && !s; i--) /* saved, in the order found above */
    if (need_bw[i] == 3) {
      char nm[32];
      snprintf(nm, sizeof nm, "saved%d", q++);
      s = add_placeholder(a->bwg, nm, &jg->nodes[i].desc, &map[i]);
    }
  if (!s) s = add_placeholder(a->bwg, "grad_out", &jg->nodes[jt->gnode].desc, &map[jt->gnode]);
  for (int i = 0; i < n && !s; i++)
    if (need_bw[i] == 2 && i != jt->gnode)
      s = copy_node(a->bwg, jg, i, map, &map[i]), a->nbw_ops += jg->nodes[i].kind == TP_NODE_CALL;
  if (!s) {
    int outs[TP_MAX_OPERANDS], no = 0;
    for (int k = jt->nfw; k < on->nargs; k++) outs[no++] = map[on->args[k].node];
    s = add_output(a->bwg, no, outs);
  }
out:
  tp_free(tan);
  return s;
}

/* ---- the runtime ---- */
static void aot_release(tp_aot *a) {
  if (!a || --a->refs > 0) return;
  for (int p = 0; p < a->nparam; p++) tp_tensor_release(a->param[p]);
  tp_graph_free(a->fwg);
  tp_graph_free(a->bwg);
  if (a->fw.free) a->fw.free(a->fw.ud);
  if (a->bw.free) a->bw.free(a->bw.ud);
  nested_list_free(a->nested);
  tp_free(a);
}
void tp_aot_free(tp_aot *a) { aot_release(a); }

/* What one call's node keeps: the plan and the saved tensors. */
typedef struct aot_saved {
  tp_aot *a;
  int n;
  tp_tensor *t[AOT_MAX];
  uint64_t ver[AOT_MAX]; /* storage versions when saved (inputs and parameters can be written in place) */
  int donated;           /* the saved tensors went to a backward plan (released there) */
} aot_saved;

static void saved_free(void *ud) {
  aot_saved *sv = ud;
  for (int i = 0; i < sv->n; i++) tp_tensor_release(sv->t[i]);
  aot_release(sv->a);
  tp_free(sv);
}

static tp_status saved_backward(void *ud, tp_tensor *g, int nin, const int *needs, tp_tensor **gin) {
  aot_saved *sv = ud;
  tp_aot *a = sv->a;
  (void)needs;
  if (sv->donated)
    return tp_fail(TP_ERR_RUNTIME, "a compiled function's saved tensors were released by a backward that failed; "
                   "call the function again to backward through it");
  tp_tensor *in[AOT_MAX];
  for (int i = 0; i < sv->n; i++) {
    in[i] = sv->t[i];
    if (tp_tensor_version(in[i]) != sv->ver[i]) {
      char b[96];
      return tp_fail(TP_ERR_RUNTIME,
                     "one of the variables needed for gradient computation has been modified by an inplace "
                     "operation: saved tensor %d of a compiled function, float32 %s, is at version %llu; "
                     "expected version %llu instead",
                     i, tp_shape_str(in[i]->ndim, in[i]->shape, b, sizeof b),
                     (unsigned long long)tp_tensor_version(in[i]), (unsigned long long)sv->ver[i]);
    }
  }
  in[sv->n] = g;
  tp_tensor *outs[AOT_MAX] = {0};
  int no = 0;
  if (a->bw.run_donated && !tp_autograd_custom_retains() && sv->n < 64) {
    /* the graph is freed after this backward: the saved tensors move into
     * the plan, which releases each after its last use (a saved forward
     * value's storage goes before the backward ends, as eager frees each
     * node's saved tensors as it runs) */
    uint64_t donated = sv->n ? (((uint64_t)1 << sv->n) - 1) : 0;
    for (int i = 0; i < sv->n; i++) sv->t[i] = NULL;
    sv->n = 0;
    sv->donated = 1;
    TP_TRY(a->bw.run_donated(a->bw.ud, (int)__builtin_popcountll(donated) + 1, in, donated, AOT_MAX, outs, &no));
  } else {
    TP_TRY(a->bw.run(a->bw.ud, sv->n + 1, in, AOT_MAX, outs, &no));
  }
  if (no != a->nleaf || no != nin) {
    for (int i = 0; i < no; i++) tp_tensor_release(outs[i]);
    return tp_fail(TP_ERR_INTERNAL, "aot: the backward graph gave %d gradients, expected %d", no, a->nleaf);
  }
  for (int i = 0; i < no; i++) gin[i] = outs[i];
  return TP_OK;
}

/* Runs the forward graph: the function's outputs into outs, the saved tensors into sv. */
static tp_status run_forward(tp_aot *a, int nin, tp_tensor *const *in, tp_tensor **ext, tp_tensor **fo, int *nfo) {
  for (int i = 0; i < nin; i++) ext[i] = in[i];
  for (int p = 0; p < a->nparam; p++) ext[nin + p] = a->param[p];
  return a->fw.run(a->fw.ud, nin + a->nparam, ext, AOT_MAX, fo, nfo);
}

static tp_status collect_saved(tp_aot *a, tp_tensor *const *ext, tp_tensor **fo, aot_saved *sv) {
  sv->n = a->nsave;
  for (int q = 0; q < a->nsave; q++) {
    if (a->save_kind[q] == SAVE_EXT) TP_TRY(tp_tensor_detach(ext[a->save_idx[q]], &sv->t[q]));
    else {
      sv->t[q] = fo[a->nfw + a->save_idx[q]];
      tp_tensor_retain(sv->t[q]);
    }
    sv->ver[q] = tp_tensor_version(sv->t[q]);
  }
  return TP_OK;
}

/* Gives the output that requires grad (a new header over the forward
 * graph's result) one node whose backward runs the backward graph; sv
 * moves into the node. */
static tp_status attach(tp_aot *a, tp_tensor *const *ext, tp_tensor **fo, aot_saved *sv) {
  tp_tensor *y = fo[a->gout], *v = NULL;
  tp_status s = tp_tensor_detach(y, &v);
  if (s) {
    saved_free(sv);
    return s;
  }
  tp_tensor_release(y);
  fo[a->gout] = v;
  tp_tensor *edges[AOT_MAX];
  for (int l = 0; l < a->nleaf; l++) edges[l] = ext[a->leaf_ext[l]];
  sv->a = a;
  a->refs++;
  return tp_autograd_attach(v, a->nleaf, edges, saved_backward, sv, saved_free);
}

tp_status tp_aot_run(tp_aot *a, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  *nout = 0;
  if (a->nfw > max_out)
    return tp_fail(TP_ERR_INVALID_ARG, "compiled call: %d outputs do not fit in %d slots", a->nfw, max_out);
  tp_tensor *ext[AOT_MAX], *fo[AOT_MAX] = {0};
  int nfo = 0;
  int prev = tp_set_grad_enabled(0);
  tp_status s = run_forward(a, nin, in, ext, fo, &nfo);
  tp_set_grad_enabled(prev);
  if (s) return s;
  aot_saved *sv = tp_alloc(sizeof *sv);
  if (!sv) s = TP_ERR_OUT_OF_MEMORY;
  else memset(sv, 0, sizeof *sv);
  if (!s && nfo != a->nfw + a->nsave_fw) s = tp_fail(TP_ERR_INTERNAL, "aot: the forward graph gave %d results", nfo);
  if (!s) s = collect_saved(a, ext, fo, sv);
  if (!s) s = attach(a, ext, fo, sv);
  else if (sv) saved_free(sv);
  if (s) {
    for (int i = 0; i < nfo; i++) tp_tensor_release(fo[i]);
    return s;
  }
  for (int i = 0; i < a->nfw; i++) outs[i] = fo[i];
  for (int i = a->nfw; i < nfo; i++) tp_tensor_release(fo[i]);
  *nout = a->nfw;
  return TP_OK;
}

int tp_aot_params_require_grad(const tp_aot *a) {
  for (int p = 0; p < a->nparam; p++)
    if (!tp_tensor_requires_grad(a->param[p])) return 0;
  return 1;
}

/* The graph's text (docs/graph-format.md) as a JSON string. */
static void graph_json(const tp_graph *g, tp_buf *b) {
  char *text = NULL;
  if (tp_graph_print(g, 0, &text) || !text) {
    tp_buf_puts(b, "null");
    return;
  }
  tp_buf_putc(b, '"');
  for (const char *p = text; *p; p++) {
    if (*p == '\n') tp_buf_puts(b, "\\n");
    else if (*p == '"' || *p == '\\') tp_buf_putc(b, '\\'), tp_buf_putc(b, *p);
    else if ((unsigned char)*p >= 0x20) tp_buf_putc(b, *p);
  }
  tp_buf_putc(b, '"');
  tp_free_buffer(text);
}

void tp_aot_describe(const tp_aot *a, tp_buf *b) {
  tp_buf_printf(b, "{\"forward_ops\": %d, \"backward_ops\": %d, \"parameters\": %d, \"gradients\": %d, "
                "\"saved\": [%s], \"recomputed\": [%s], \"saved_bytes\": [%s], \"recomputed_bytes\": [%s], "
                "\"saved_count\": %d, \"recomputed_count\": %d, "
                "\"saved_total_bytes\": %lld, \"recomputed_total_bytes\": %lld, \"partitioner\": \"%s%s%s\", "
                "\"forward_plan\": ",
                a->nfw_ops, a->nbw_ops, a->nparam, a->nleaf, a->saved_text, a->recompute_text, a->saved_bytes_text,
                a->recompute_bytes_text, a->nsave, a->nrecompute, (long long)a->saved_total, (long long)a->recompute_total,
                a->policy == TP_PARTITION_RULE ? "rule" : "min-cut", a->policy_note[0] ? ": " : "", a->policy_note);
  const tp_backend_run *r[2] = {&a->fw, &a->bw};
  for (int k = 0; k < 2; k++) {
    if (k) tp_buf_puts(b, ", \"backward_plan\": ");
    char *d = r[k]->describe ? tp_alloc((size_t)1 << 18) : NULL;
    if (d) {
      d[0] = 0;
      r[k]->describe(r[k]->ud, d, (size_t)1 << 18);
    }
    tp_buf_puts(b, d && d[0] ? d : "null");
    tp_free(d);
  }
  /* with stax.profile: each plan's kernel table (slowest first) */
  for (int k = 0; k < 2; k++) {
    char *t = r[k]->profile ? r[k]->profile(r[k]->ud) : NULL;
    if (!t) continue;
    tp_buf_puts(b, k ? ", \"backward_profile\": \"" : ", \"forward_profile\": \"");
    for (const char *p = t; *p; p++) {
      if (*p == '\n') tp_buf_puts(b, "\\n");
      else if (*p == '"' || *p == '\\') tp_buf_putc(b, '\\'), tp_buf_putc(b, *p);
      else if ((unsigned char)*p >= 0x20) tp_buf_putc(b, *p);
    }
    tp_buf_putc(b, '"');
    tp_free_buffer(t);
  }
  /* where the backward graph's saved<k> comes from: the call's input i, the
   * parameter p (the forward graph's param<p>), or forward output j */
  tp_buf_puts(b, ", \"saved_sources\": [");
  for (int q = 0; q < a->nsave; q++) {
    const char *sep = q ? ", " : "";
    if (a->save_kind[q] == SAVE_FW) tp_buf_printf(b, "%s\"output %d\"", sep, a->nfw + a->save_idx[q]);
    else if (a->save_idx[q] < a->nin) tp_buf_printf(b, "%s\"input %d\"", sep, a->save_idx[q]);
    else tp_buf_printf(b, "%s\"param %d\"", sep, a->save_idx[q] - a->nin);
  }
  tp_buf_puts(b, "]");
  /* what the backward graph's outputs are the gradients of, in order */
  tp_buf_puts(b, ", \"gradient_targets\": [");
  for (int l = 0; l < a->nleaf; l++) {
    const char *sep = l ? ", " : "";
    if (a->leaf_ext[l] < 0) tp_buf_printf(b, "%snull", sep);
    else if (a->leaf_ext[l] < a->nin) tp_buf_printf(b, "%s\"input %d\"", sep, a->leaf_ext[l]);
    else tp_buf_printf(b, "%s\"param %d\"", sep, a->leaf_ext[l] - a->nin);
  }
  tp_buf_puts(b, "]");
  tp_buf_puts(b, ", \"forward_graph\": ");
  graph_json(a->fwg, b);
  tp_buf_puts(b, ", \"backward_graph\": ");
  graph_json(a->bwg, b);
  tp_buf_puts(b, "}");
}

const tp_graph *tp_aot_graph(const tp_aot *a, int backward) { return backward ? a->bwg : a->fwg; }

tp_status tp_aot_build(const tp_graph *joint, tp_aot_joint *jt, const tp_backend *b,
                       const tp_backend_opts *bo, int nin, tp_tensor *const *in, int max_out,
                       tp_tensor **outs, int *nout, tp_aot **out, char *why, size_t nwhy) {
  *out = NULL;
  *nout = 0;
  why[0] = 0;
  tp_aot *a = tp_alloc(sizeof *a);
  if (!a) return TP_ERR_OUT_OF_MEMORY;
  memset(a, 0, sizeof *a);
  a->refs = 1;
  a->nfw = jt->nfw;
  a->gout = jt->gout;
  tp_status s = partition(joint, jt, nin, a, why, nwhy);
  if (s || why[0]) {
    aot_release(a);
    return s;
  }
  if (jt->nfw > max_out) {
    aot_release(a);
    return tp_fail(TP_ERR_INVALID_ARG, "compiled call: %d outputs do not fit in %d slots", jt->nfw, max_out);
  }
  tp_tensor *ext[AOT_MAX], *fo[AOT_MAX] = {0};
  int nfo = 0;
  tp_backend_opts o = *bo;
  o.has_dynamic = 0;
  for (int i = 0; i < nin; i++) ext[i] = in[i];
  for (int p = 0; p < a->nparam; p++) ext[nin + p] = a->param[p];
  s = b->fn(b->ud, a->fwg, nin + a->nparam, ext, &o, &a->fw);
  if (!s && !a->fw.run) s = tp_fail(TP_ERR_TYPE, "backend '%s' returned a non-callable", b->name);
  /* the forward's results are the samples the backward graph compiles with */
  int prev = tp_set_grad_enabled(0);
  if (!s) s = run_forward(a, nin, in, ext, fo, &nfo);
  tp_set_grad_enabled(prev);
  aot_saved *sv = NULL;
  if (!s && !(sv = tp_alloc(sizeof *sv))) s = TP_ERR_OUT_OF_MEMORY;
  if (sv) memset(sv, 0, sizeof *sv);
  if (!s) s = collect_saved(a, ext, fo, sv);
  tp_tensor *ones = NULL;
  if (!s) s = tp_full(TP_F32, fo[a->gout]->ndim, fo[a->gout]->shape, 1.0, &ones);
  if (!s) {
    tp_tensor *bin[AOT_MAX];
    for (int i = 0; i < sv->n; i++) bin[i] = sv->t[i];
    bin[sv->n] = ones;
    s = b->fn(b->ud, a->bwg, sv->n + 1, bin, &o, &a->bw);
    if (!s && !a->bw.run) s = tp_fail(TP_ERR_TYPE, "backend '%s' returned a non-callable", b->name);
  }
  tp_tensor_release(ones);
  if (!s) s = attach(a, ext, fo, sv);
  else if (sv) saved_free(sv);
  if (s) {
    for (int i = 0; i < nfo; i++) tp_tensor_release(fo[i]);
    aot_release(a);
    return s;
  }
  for (int i = 0; i < a->nfw; i++) outs[i] = fo[i];
  for (int i = a->nfw; i < nfo; i++) tp_tensor_release(fo[i]);
  *nout = a->nfw;
  a->nested = jt->nested; /* the plans call the nested regions' runners */
  jt->nested = NULL;
  *out = a;
  return TP_OK;
}

/* ---- nested regions (tp_capture_nested's hook during a joint trace) ----
 *
 * A nested compile region that a tensor requiring grad flows through is
 * traced jointly on its own (tp_aot_trace on plain samples), partitioned
 * like a compiled function, and its forward graph handed to its
 * fw_compiler, its backward graph to its bw_compiler (None: the compiled
 * function's backend), once per region and key in the trace. The outer
 * trace records the forward as one call_host node (its outputs, then its
 * saved values) and gives the output that requires grad an autograd node
 * whose backward, traced too, is one call_host of the compiled backward on
 * (saved..., grad): so the outer partition puts the first in the forward
 * graph and the second in the backward graph, and the plans call them. */

static void nested_list_free(struct tp_aot_nested *l) {
  if (!l) return;
  for (int i = 0; i < l->n; i++) {
    nested_grad *e = l->e[i];
    if (e->fw_id) tp_host_fn_unregister(e->fw_id);
    if (e->bw_id) tp_host_fn_unregister(e->bw_id);
    aot_release(e->a);
    tp_free(e);
  }
  tp_free(l);
}

/* The compiler's runner gave n results: their count, dtypes and shapes must
 * be the graph's outputs'. */
static tp_status check_results(const tp_graph *g, const char *which, int n, tp_tensor **t) {
  int o = tp_graph_output(g);
  const tp_node *on = &g->nodes[o];
  tp_status s = TP_OK;
  if (n != on->nargs)
    s = tp_fail(TP_ERR_RUNTIME, "nested compile region: the function %s returned gave %d tensors; its graph has %d "
                "outputs", which, n, on->nargs);
  for (int i = 0; i < n && !s; i++) {
    const tp_desc *d = &g->nodes[on->args[i].node].desc;
    tp_desc e;
    if (t[i]) tp_desc_of(t[i], &e);
    if (!t[i] || e.dtype != d->dtype || e.ndim != d->ndim || memcmp(e.shape, d->shape, sizeof(int64_t) * (size_t)e.ndim)) {
      char a[96], b[96];
      s = tp_fail(TP_ERR_RUNTIME, "nested compile region: result %d of the function %s returned is %s %s; its graph "
                  "gives %s %s", i, which, t[i] ? tp_dtype_name(e.dtype) : "None",
                  t[i] ? tp_shape_str(e.ndim, e.shape, a, sizeof a) : "", tp_dtype_name(d->dtype),
                  tp_shape_str(d->ndim, d->shape, b, sizeof b));
    }
  }
  if (s)
    for (int i = 0; i < n; i++) tp_tensor_release(t[i]), t[i] = NULL;
  return s;
}

static tp_status nested_fw_call(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  nested_grad *e = ud;
  TP_TRY(e->a->fw.run(e->a->fw.ud, nin, in, max_out, outs, nout));
  tp_status s = check_results(e->a->fwg, "fw_compiler", *nout, outs);
  if (s) *nout = 0;
  return s;
}

static tp_status nested_bw_call(void *ud, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs, int *nout) {
  nested_grad *e = ud;
  TP_TRY(e->a->bw.run(e->a->bw.ud, nin, in, max_out, outs, nout));
  tp_status s = check_results(e->a->bwg, "bw_compiler", *nout, outs);
  if (s) *nout = 0;
  return s;
}

/* The autograd node of a region's output in the outer trace. */
typedef struct nested_node {
  nested_grad *e;
  int n;
  tp_tensor *saved[AOT_MAX];
} nested_node;

static void nested_node_free(void *ud) {
  nested_node *nn = ud;
  for (int i = 0; i < nn->n; i++) tp_tensor_release(nn->saved[i]);
  tp_free(nn);
}

static tp_status nested_node_backward(void *ud, tp_tensor *g, int nin, const int *needs, tp_tensor **gin) {
  nested_node *nn = ud;
  (void)needs;
  if (!tp_capture_active())
    return tp_fail(TP_ERR_RUNTIME, "nested compile region: its traced backward ran outside the joint trace");
  tp_tensor *args[AOT_MAX + 1], *res[AOT_MAX] = {0};
  for (int i = 0; i < nn->n; i++) args[i] = nn->saved[i];
  args[nn->n] = g;
  int n = 0;
  TP_TRY(tp_capture_host_call(nn->e->bw_id, nn->n + 1, args, "backward", AOT_MAX, res, &n));
  if (n != nin) {
    for (int i = 0; i < n; i++) tp_tensor_release(res[i]);
    return tp_fail(TP_ERR_INTERNAL, "aot: a nested region's backward gave %d gradients, expected %d", n, nin);
  }
  for (int i = 0; i < n; i++) gin[i] = res[i];
  return TP_OK;
}

/* The region's call in the outer trace: one call_host of its compiled
 * forward on (inputs..., parameters...), the node on its output. */
static tp_status nested_emit(nested_grad *e, int nin, tp_tensor *const *in, int max_out, tp_tensor **outs,
                             int *nout) {
  tp_aot *a = e->a;
  if (a->nfw > max_out)
    return tp_fail(TP_ERR_CAPTURE, "nested compile region returned %d tensors (max %d)", a->nfw, max_out);
  tp_tensor *ext[AOT_MAX], *res[AOT_MAX] = {0};
  for (int i = 0; i < nin; i++) ext[i] = in[i];
  for (int p = 0; p < a->nparam; p++) ext[nin + p] = a->param[p];
  int n = 0;
  TP_TRY(tp_capture_host_call(e->fw_id, nin + a->nparam, ext, "forward", AOT_MAX, res, &n));
  tp_status s = TP_OK;
  nested_node *nn = tp_alloc(sizeof *nn);
  if (!nn) s = TP_ERR_OUT_OF_MEMORY;
  else memset(nn, 0, sizeof *nn), nn->e = e;
  for (int q = 0; q < a->nsave && !s; q++) {
    tp_tensor *t = a->save_kind[q] == SAVE_EXT ? ext[a->save_idx[q]] : res[a->nfw + a->save_idx[q]];
    tp_tensor_retain(t);
    nn->saved[nn->n++] = t;
  }
  if (!s) {
    tp_tensor *edges[AOT_MAX];
    for (int l = 0; l < a->nleaf; l++) edges[l] = ext[a->leaf_ext[l]];
    s = tp_autograd_attach(res[a->gout], a->nleaf, edges, nested_node_backward, nn, nested_node_free);
  } else if (nn) {
    nested_node_free(nn);
  }
  if (s) {
    for (int i = 0; i < n; i++) tp_tensor_release(res[i]);
    return s;
  }
  for (int i = 0; i < a->nfw; i++) outs[i] = res[i];
  for (int i = a->nfw; i < n; i++) tp_tensor_release(res[i]);
  *nout = a->nfw;
  return TP_OK;
}

/* Compiles one of the region's graphs with its compiler (or the default). */
static tp_status nested_compile(struct tp_aot_nested *l, tp_backend_fn fn, void *ud, const char *which,
                                const tp_graph *g, int nin, tp_tensor *const *ex, tp_backend_run *run) {
  tp_backend_opts o = l->bo;
  o.has_dynamic = 0;
  if (!fn) {
    if (!l->b) return tp_fail(TP_ERR_INTERNAL, "aot: no backend for a nested region");
    fn = l->b->fn, ud = l->b->ud;
  }
  tp_status s = fn(ud, g, nin, ex, &o, run);
  if (!s && !run->run) s = tp_fail(TP_ERR_TYPE, "nested compile region: %s returned a non-callable", which);
  return s;
}

static tp_status nested_build(const tp_nested_call *c, int nin, tp_tensor *const *samples, nested_grad *e,
                              tp_trace_result *plain, char *why, size_t nwhy) {
  struct tp_aot_nested *l = cur_nested;
  tp_trace_result r;
  tp_aot_joint jt;
  TP_TRY(tp_aot_trace(&c->fn, nin, samples, NULL, c->fullgraph, l->b, &l->bo, &r, &jt));
  tp_status s = TP_OK;
  if (r.broken) snprintf(why, nwhy, "its trace broke (%s)", r.break_reason);
  else if (jt.why[0]) snprintf(why, nwhy, "%s", jt.why);
  if (why[0] || jt.gout < 0) {
    if (!why[0]) *plain = r; /* nothing to differentiate: the plain child graph */
    else tp_trace_result_clear(&r);
    tp_aot_joint_clear(&jt);
    return TP_OK;
  }
  tp_aot *a = tp_alloc(sizeof *a);
  if (!a) s = TP_ERR_OUT_OF_MEMORY;
  else memset(a, 0, sizeof *a), a->refs = 1, a->nfw = jt.nfw, a->gout = jt.gout, e->a = a;
  if (!s) s = partition(r.graph, &jt, nin, a, why, nwhy);
  tp_trace_result_clear(&r);
  tp_aot_joint_clear(&jt);
  if (s || why[0]) return s;
  /* the forward: compiled on the samples (plain, no grad) and the parameters */
  tp_tensor *ext[AOT_MAX] = {0}, *fo[AOT_MAX] = {0}, *bin[AOT_MAX + 1] = {0}, *ones = NULL;
  int nfo = 0;
  for (int i = 0; i < nin && !s; i++) s = tp_tensor_detach(samples[i], &ext[i]);
  for (int p = 0; p < a->nparam && !s; p++) s = tp_tensor_detach(a->param[p], &ext[nin + p]);
  if (!s) s = nested_compile(l, c->fw_fn, c->fw_ud, "fw_compiler", a->fwg, nin + a->nparam, ext, &a->fw);
  int prev = tp_set_grad_enabled(0);
  if (!s) s = a->fw.run(a->fw.ud, nin + a->nparam, ext, AOT_MAX, fo, &nfo);
  tp_set_grad_enabled(prev);
  if (!s) s = check_results(a->fwg, "fw_compiler", nfo, fo);
  if (s) nfo = 0;
  /* the backward: compiled on (saved..., ones) */
  for (int q = 0; q < a->nsave && !s; q++) {
    bin[q] = a->save_kind[q] == SAVE_EXT ? ext[a->save_idx[q]] : fo[a->nfw + a->save_idx[q]];
    tp_tensor_retain(bin[q]);
  }
  if (!s) s = tp_full(TP_F32, fo[a->gout]->ndim, fo[a->gout]->shape, 1.0, &ones);
  if (!s) {
    bin[a->nsave] = ones;
    s = nested_compile(l, c->bw_fn, c->bw_ud, "bw_compiler", a->bwg, a->nsave + 1, bin, &a->bw);
  }
  tp_tensor_release(ones);
  for (int q = 0; q < a->nsave; q++) tp_tensor_release(bin[q]);
  for (int i = 0; i < nfo; i++) tp_tensor_release(fo[i]);
  for (int i = 0; i < nin + a->nparam; i++) tp_tensor_release(ext[i]);
  tp_callable fw = {nested_fw_call, e}, bw = {nested_bw_call, e};
  if (!s) s = tp_host_fn_register(&fw, &e->fw_id);
  if (!s) s = tp_host_fn_register(&bw, &e->bw_id);
  return s;
}

static tp_status nested_hook(const tp_nested_call *c, int nin, tp_tensor *const *in, int max_out,
                             tp_tensor **outs, int *nout, int *handled, tp_trace_result *plain, char *why,
                             size_t nwhy) {
  struct tp_aot_nested *l = cur_nested;
  *handled = 0;
  *nout = 0;
  if (!l) return TP_OK; /* not inside a joint trace of this layer */
  int count = 0;
  for (int i = 0; i < l->n; i++)
    if (l->e[i]->rec == c->rec) {
      count++;
      if (!strcmp(l->e[i]->key, c->key)) {
        *handled = 1;
        return nested_emit(l->e[i], nin, in, max_out, outs, nout);
      }
    }
  if (count >= c->max_entries) return tp_fail(TP_ERR_CAPTURE, "nested compile region reuse limit reached");
  if (l->n == NESTED_MAX) {
    snprintf(why, nwhy, "more than %d nested regions require grad", NESTED_MAX);
    return TP_OK;
  }
  nested_grad *e = tp_alloc(sizeof *e);
  if (!e) return TP_ERR_OUT_OF_MEMORY;
  memset(e, 0, sizeof *e);
  e->rec = c->rec;
  e->nin = nin;
  snprintf(e->key, sizeof e->key, "%s", c->key);
  tp_tensor *samples[AOT_MAX] = {0};
  tp_status s = TP_OK;
  for (int i = 0; i < nin && !s; i++) {
    if (!in[i]) continue;
    s = tp_tensor_view(in[i], in[i]->ndim, in[i]->shape, in[i]->strides, in[i]->offset, &samples[i]);
    if (!s && in[i]->requires_grad) s = tp_tensor_set_requires_grad(samples[i], 1);
  }
  if (!s) s = nested_build(c, nin, samples, e, plain, why, nwhy);
  for (int i = 0; i < nin; i++) tp_tensor_release(samples[i]);
  if (s || why[0] || plain->graph) {
    if (e->fw_id) tp_host_fn_unregister(e->fw_id);
    if (e->bw_id) tp_host_fn_unregister(e->bw_id);
    aot_release(e->a);
    tp_free(e);
    return s;
  }
  l->e[l->n++] = e;
  *handled = 1;
  return nested_emit(e, nin, in, max_out, outs, nout);
}
