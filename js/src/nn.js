// nn.js - training helpers (docs/training.md): tp.nn (Module, Linear,
// Conv2d, MaxPool2d, AvgPool2d, Flatten, LayerNorm, TransformerEncoderLayer,
// activations, Sequential, mlp, the
// losses mseLoss / crossEntropy) and tp.optim (SGD, Adam, AdamW). The losses and the optimizer updates run in
// the core (src/ops/loss.c, src/ops/optim.c: one fused in-place pass per
// parameter); this file keeps the parameters and the optimizer state.

import { Tensor, core, ex, wrapHandle, keepOutOfScopes } from './tensor.js';
import { TensorPlayError, Status, check } from './errors.js';
import { rand } from './creation.js';
import { relu, tanh, sigmoid } from './ops_gen.js';
import { linear, gelu, conv2d, maxPool2d, avgPool2d, reshape, layerNorm, softmax } from './ops.js';
import { matmul } from './ops_gen.js';
import { full } from './creation.js';
import { noGrad } from './autograd.js';

function tensorArg(t, what) {
  if (!(t instanceof Tensor)) throw new TypeError(`${what}: expected a Tensor, got ${t === null ? 'null' : typeof t}`);
  return t._handle();
}
function numArg(v, what, lo, hi, hiOpen = false) {
  if (typeof v !== 'number' || !Number.isFinite(v) || v < lo || (hiOpen ? v >= hi : v > hi)) {
    throw new TensorPlayError(`${what}: ${v} is out of range [${lo}, ${hi}${hiOpen ? ')' : ']'}`, Status.INVALID_ARG);
  }
  return v;
}
const REDUCTIONS = { none: 0, mean: 1, sum: 2 };
function reductionArg(r, what) {
  const code = REDUCTIONS[r ?? 'mean'];
  if (code === undefined) {
    throw new TensorPlayError(`${what}: reduction ${JSON.stringify(r)} is not 'none', 'mean' or 'sum'`, Status.INVALID_ARG);
  }
  return code;
}

// ---- losses -----------------------------------------------------------------

/** (pred - target)^2, reduced ('mean' by default, 'sum', 'none'). */
export function mseLoss(pred, target, options = {}) {
  const r = reductionArg(options.reduction, 'mseLoss');
  return wrapHandle(ex.tpw_mse_loss(tensorArg(pred, 'mseLoss'), tensorArg(target, 'mseLoss'), r), 'mseLoss');
}

/**
 * Cross-entropy from logits [N, C] and int32/int64 class indices [N]:
 * options.ignoreIndex (-100), options.labelSmoothing (0), options.reduction.
 */
export function crossEntropy(logits, target, options = {}) {
  const r = reductionArg(options.reduction, 'crossEntropy');
  const ii = options.ignoreIndex ?? -100;
  if (!Number.isSafeInteger(ii)) throw new TypeError(`crossEntropy: ignoreIndex must be an integer, got ${ii}`);
  const ls = numArg(options.labelSmoothing ?? 0, 'crossEntropy: labelSmoothing', 0, 1);
  return wrapHandle(ex.tpw_cross_entropy(tensorArg(logits, 'crossEntropy'), tensorArg(target, 'crossEntropy'),
    ii, ls, r), 'crossEntropy');
}

// ---- modules ------------------------------------------------------------------

/** A parameter container: parameters() lists its own and its children's. */
export class Module {
  constructor() {
    this._params = [];
    this._children = [];
  }
  /** Registers t (float32) as a trainable parameter (requiresGrad on, kept out of scopes). */
  _param(t) {
    keepOutOfScopes(t);
    t.requiresGrad = true;
    this._params.push(t);
    return t;
  }
  _child(m) {
    if (!(m instanceof Module)) throw new TypeError('a child must be a Module');
    this._children.push(m);
    return m;
  }
  parameters() {
    const out = [...this._params];
    for (const c of this._children) out.push(...c.parameters());
    return out;
  }
  /** Clears every parameter's .grad. */
  zeroGrad() {
    for (const p of this.parameters()) p.grad = null;
  }
  /** Frees the parameters. */
  dispose() {
    for (const p of this.parameters()) p.dispose();
  }
  forward() {
    throw new TypeError(`${this.constructor.name}.forward is not implemented`);
  }
}

let nextSeed = 1;
/** U(-bound, bound) float32 of the given shape, reproducible from seed. */
function uniformInit(shape, seed, bound) {
  return noGrad(() => {
    const u = rand(shape, { seed });
    const a = u.mul(2 * bound);
    const y = a.sub(bound);
    u.dispose();
    a.dispose();
    return y;
  });
}
/** y = x @ w^T + b; w [out, in], b [out]; PyTorch's init U(-1/sqrt(in), 1/sqrt(in)). */
export class Linear extends Module {
  constructor(inFeatures, outFeatures, options = {}) {
    super();
    for (const [v, n] of [[inFeatures, 'inFeatures'], [outFeatures, 'outFeatures']]) {
      if (!Number.isInteger(v) || v < 1) throw new TensorPlayError(`Linear: ${n} must be a positive integer, got ${v}`, Status.INVALID_ARG);
    }
    const seed = options.seed ?? nextSeed++;
    const bound = 1 / Math.sqrt(inFeatures);
    this.weight = this._param(uniformInit([outFeatures, inFeatures], seed, bound));
    this.bias = options.bias === false ? null : this._param(uniformInit([outFeatures], seed + 0x9e3779b9, bound));
  }
  forward(x) {
    return linear(x, this.weight, this.bias);
  }
}

/**
 * Conv2d(inChannels, outChannels, kernelSize, { stride, padding, dilation,
 * groups, bias, seed }): NCHW tp.conv2d with PyTorch's init
 * U(-1/sqrt(fanIn), 1/sqrt(fanIn)), fanIn = inChannels / groups * KH * KW.
 */
export class Conv2d extends Module {
  constructor(inChannels, outChannels, kernelSize, options = {}) {
    super();
    const groups = options.groups ?? 1;
    const [kh, kw] = Array.isArray(kernelSize) ? kernelSize : [kernelSize, kernelSize];
    for (const [v, n] of [[inChannels, 'inChannels'], [outChannels, 'outChannels'], [kh, 'kernelSize'], [kw, 'kernelSize'], [groups, 'groups']]) {
      if (!Number.isInteger(v) || v < 1) throw new TensorPlayError(`Conv2d: ${n} must be a positive integer, got ${v}`, Status.INVALID_ARG);
    }
    if (inChannels % groups || outChannels % groups) {
      throw new TensorPlayError(`Conv2d: groups ${groups} must divide inChannels ${inChannels} and outChannels ${outChannels}`, Status.INVALID_ARG);
    }
    const seed = options.seed ?? nextSeed++;
    const bound = 1 / Math.sqrt((inChannels / groups) * kh * kw);
    this.weight = this._param(uniformInit([outChannels, inChannels / groups, kh, kw], seed, bound));
    this.bias = options.bias === false ? null : this._param(uniformInit([outChannels], seed + 0x9e3779b9, bound));
    this.options = { stride: options.stride ?? 1, padding: options.padding ?? 0, dilation: options.dilation ?? 1, groups };
  }
  forward(x) {
    return this.bias ? conv2d(x, this.weight, this.bias, this.options) : conv2d(x, this.weight, this.options);
  }
}
/** MaxPool2d(kernelSize, { stride, padding }) / AvgPool2d(kernelSize, { stride, padding, countIncludePad }). */
export class MaxPool2d extends Module {
  constructor(kernelSize, options = {}) {
    super();
    this.kernelSize = kernelSize;
    this.options = options;
  }
  forward(x) {
    return maxPool2d(x, this.kernelSize, this.options);
  }
}
export class AvgPool2d extends MaxPool2d {
  forward(x) {
    return avgPool2d(x, this.kernelSize, this.options);
  }
}
/** [N, ...] -> [N, prod(...)] */
export class Flatten extends Module {
  forward(x) {
    return reshape(x, [x.shape[0], -1]);
  }
}

/** LayerNorm(normalizedShape, { eps = 1e-5 }): weight ones, bias zeros (PyTorch's init). */
export class LayerNorm extends Module {
  constructor(normalizedShape, options = {}) {
    super();
    const shape = Array.isArray(normalizedShape) ? normalizedShape : [normalizedShape];
    if (shape.length === 0 || !shape.every((d) => Number.isInteger(d) && d >= 1)) {
      throw new TensorPlayError(`LayerNorm: normalizedShape must be positive integers, got ${JSON.stringify(normalizedShape)}`, Status.INVALID_ARG);
    }
    this.normalizedShape = shape;
    this.eps = numArg(options.eps ?? 1e-5, 'LayerNorm: eps', 0, Infinity, true);
    this.weight = this._param(full(shape, 1));
    this.bias = this._param(full(shape, 0));
  }
  forward(x) {
    return layerNorm(x, this.normalizedShape, this.weight, this.bias, { eps: this.eps });
  }
}

/**
 * TransformerEncoderLayer(dModel, nHeads, dFF, { seed }): a pre-LN encoder
 * block (the W4 workload): x + attn(ln1(x)), then h + ffn(ln2(h)) with a
 * tanh GELU; x [B, S, dModel]. Self-attention without a mask.
 */
export class TransformerEncoderLayer extends Module {
  constructor(dModel, nHeads, dFF, options = {}) {
    super();
    if (!Number.isInteger(nHeads) || nHeads < 1 || !Number.isInteger(dModel) || dModel % nHeads) {
      throw new TensorPlayError(`TransformerEncoderLayer: nHeads ${nHeads} must divide dModel ${dModel}`, Status.INVALID_ARG);
    }
    const seed = options.seed ?? nextSeed++;
    this.nHeads = nHeads;
    this.dModel = dModel;
    this.ln1 = this._child(new LayerNorm(dModel));
    this.q = this._child(new Linear(dModel, dModel, { seed }));
    this.k = this._child(new Linear(dModel, dModel, { seed: seed + 1 }));
    this.v = this._child(new Linear(dModel, dModel, { seed: seed + 2 }));
    this.o = this._child(new Linear(dModel, dModel, { seed: seed + 3 }));
    this.ln2 = this._child(new LayerNorm(dModel));
    this.ff1 = this._child(new Linear(dModel, dFF, { seed: seed + 4 }));
    this.ff2 = this._child(new Linear(dFF, dModel, { seed: seed + 5 }));
  }
  forward(x) {
    const [B, S, D] = x.shape, H = this.nHeads, Dh = D / H;
    const a = this.ln1.forward(x);
    const heads = (t) => t.reshape(B, S, H, Dh).permute(0, 2, 1, 3); // [B, H, S, Dh]
    const q = heads(this.q.forward(a)), v = heads(this.v.forward(a));
    const kT = this.k.forward(a).reshape(B, S, H, Dh).permute(0, 2, 3, 1); // [B, H, Dh, S]
    const p = softmax(matmul(q, kT).mul(1 / Math.sqrt(Dh)), -1);
    const attn = matmul(p, v).permute(0, 2, 1, 3).reshape(B, S, D);
    const h = x.add(this.o.forward(attn));
    const u = gelu(this.ff1.forward(this.ln2.forward(h)), { approximate: 'tanh' });
    return h.add(this.ff2.forward(u));
  }
}

class Activation extends Module {
  constructor(fn) {
    super();
    this._fn = fn;
  }
  forward(x) {
    return this._fn(x);
  }
}
export class ReLU extends Activation { constructor() { super(relu); } }
export class Tanh extends Activation { constructor() { super(tanh); } }
export class Sigmoid extends Activation { constructor() { super(sigmoid); } }
export class GELU extends Activation { constructor() { super((x) => gelu(x)); } }

/** Runs its modules in order; intermediates of a step are the caller's (use tp.scope). */
export class Sequential extends Module {
  constructor(...modules) {
    super();
    this.layers = modules.map((m) => this._child(m));
  }
  forward(x) {
    let h = x;
    for (const m of this.layers) {
      const next = m.forward(h);
      h = next;
    }
    return h;
  }
}

const ACTIVATIONS = { relu: ReLU, tanh: Tanh, sigmoid: Sigmoid, gelu: GELU };
/** mlp([in, hidden..., out], {activation: 'relu', seed}): Linear layers with the activation between them. */
export function mlp(sizes, options = {}) {
  if (!Array.isArray(sizes) || sizes.length < 2) throw new TypeError('mlp: sizes must list at least [in, out]');
  const Act = ACTIVATIONS[options.activation ?? 'relu'];
  if (!Act) throw new TensorPlayError(`mlp: unknown activation ${JSON.stringify(options.activation)}`, Status.INVALID_ARG);
  const layers = [];
  const seed = options.seed ?? nextSeed;
  for (let i = 0; i + 1 < sizes.length; i++) {
    if (i > 0) layers.push(new Act());
    layers.push(new Linear(sizes[i], sizes[i + 1], { seed: seed + 2 * i }));
  }
  return new Sequential(...layers);
}

// ---- optimizers -------------------------------------------------------------

function paramList(params, what) {
  const list = params instanceof Module ? params.parameters() : params;
  if (!Array.isArray(list) || list.length === 0) throw new TypeError(`${what}: params must be a non-empty array of Tensors or a Module`);
  for (const p of list) {
    tensorArg(p, what);
    if (!p.requiresGrad || !p.isLeaf) {
      throw new TensorPlayError(`${what}: every parameter must be a leaf that requires grad`, Status.INVALID_ARG);
    }
  }
  return list;
}
function stateLike(p) {
  return keepOutOfScopes(noGrad(() => p.detach().mul(0)));
}

class Optimizer {
  constructor(params, what) {
    this.params = paramList(params, what);
    this._what = what;
    this._state = this.params.map(() => null);
  }
  zeroGrad() {
    for (const p of this.params) p.grad = null;
  }
  /** Updates every parameter that has a .grad (in place, one fused pass each). */
  step() {
    this.params.forEach((p, i) => {
      const g = p.grad;
      if (g === null) return;
      try {
        this._update(p, g, i);
      } finally {
        g.dispose();
      }
    });
  }
  /** Frees the optimizer state. */
  dispose() {
    for (const s of this._state) if (s) for (const t of Object.values(s)) if (t instanceof Tensor) t.dispose();
    this._state = this.params.map(() => null);
  }
}

/** SGD: lr, momentum (0), weightDecay (0); PyTorch's rule. */
export class SGD extends Optimizer {
  constructor(params, options = {}) {
    super(params, 'SGD');
    this.lr = numArg(options.lr ?? 0.01, 'SGD: lr', 0, Infinity, true);
    this.momentum = numArg(options.momentum ?? 0, 'SGD: momentum', 0, 1);
    this.weightDecay = numArg(options.weightDecay ?? 0, 'SGD: weightDecay', 0, Infinity, true);
  }
  _update(p, g, i) {
    let buf = 0;
    if (this.momentum !== 0) {
      this._state[i] ??= { buf: stateLike(p) };
      buf = this._state[i].buf._handle();
    }
    check(core, ex.tpw_sgd_step(p._handle(), g._handle(), buf, this.lr, this.momentum, this.weightDecay), 'SGD.step()');
  }
}

/** Adam: lr (1e-3), betas ([0.9, 0.999]), eps (1e-8), weightDecay (0, added to the gradient). */
export class Adam extends Optimizer {
  constructor(params, options = {}, decoupled = false, what = 'Adam') {
    super(params, what);
    this.lr = numArg(options.lr ?? 1e-3, `${what}: lr`, 0, Infinity, true);
    const betas = options.betas ?? [0.9, 0.999];
    if (!Array.isArray(betas) || betas.length !== 2) throw new TypeError(`${what}: betas must be [beta1, beta2]`);
    this.betas = [numArg(betas[0], `${what}: beta1`, 0, 1, true), numArg(betas[1], `${what}: beta2`, 0, 1, true)];
    this.eps = numArg(options.eps ?? 1e-8, `${what}: eps`, 0, Infinity, true);
    this.weightDecay = numArg(options.weightDecay ?? (decoupled ? 1e-2 : 0), `${what}: weightDecay`, 0, Infinity, true);
    this._decoupled = decoupled;
  }
  _update(p, g, i) {
    const s = (this._state[i] ??= { step: 0, m: stateLike(p), v: stateLike(p) });
    s.step++;
    check(core, ex.tpw_adam_step(p._handle(), g._handle(), s.m._handle(), s.v._handle(), s.step, this.lr,
      this.betas[0], this.betas[1], this.eps, this.weightDecay, this._decoupled ? 1 : 0), `${this._what}.step()`);
  }
}

/** AdamW: Adam with decoupled weight decay (default 1e-2): p *= 1 - lr * weightDecay. */
export class AdamW extends Adam {
  constructor(params, options = {}) {
    super(params, options, true, 'AdamW');
  }
}

export const nn = Object.freeze({
  Module, Linear, Conv2d, MaxPool2d, AvgPool2d, Flatten, LayerNorm, TransformerEncoderLayer, ReLU, Tanh, Sigmoid, GELU,
  Sequential, mlp, mseLoss, crossEntropy,
});
export const optim = Object.freeze({ SGD, Adam, AdamW });
