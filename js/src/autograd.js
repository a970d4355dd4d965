// autograd.js - autograd in JS (docs/training.md, docs/js-api.md): the
// Tensor members requiresGrad, grad, isLeaf, version, backward(), detach(),
// assign(), and the functions noGrad, enableGrad, isGradEnabled, grad and
// valueAndGrad. The tape, the derivatives and every check live in the core
// (src/ops/autograd.c); this file marshals.

import { Tensor, core, ex } from './tensor.js';
import { TensorPlayError, Status, check, throwLast } from './errors.js';
import { zeros } from './creation.js';

function tensorArg(t, what) {
  if (!(t instanceof Tensor)) {
    throw new TypeError(`${what}: expected a Tensor, got ${t === null ? 'null' : typeof t}`);
  }
  return t._handle();
}

Object.defineProperties(Tensor.prototype, {
  /** Whether autograd records ops on this tensor (float32 only). */
  requiresGrad: {
    get() {
      const r = ex.tpw_tensor_requires_grad(this._handle());
      if (r < 0) throwLast(core, 'requiresGrad');
      return r === 1;
    },
    set(v) {
      if (typeof v !== 'boolean') throw new TypeError(`requiresGrad: expected a boolean, got ${typeof v}`);
      check(core, ex.tpw_tensor_set_requires_grad(this._handle(), v ? 1 : 0), 'requiresGrad');
    },
    configurable: true,
  },
  /** The accumulated gradient (a new Tensor each read), or null. Setting null clears it. */
  grad: {
    get() {
      const h = ex.tpw_tensor_grad(this._handle()) >>> 0;
      if (h === 0) {
        if (ex.tpw_last_status() !== Status.OK) throwLast(core, 'grad');
        return null;
      }
      return Tensor._fromHandle(h);
    },
    set(g) {
      const gh = g === null || g === undefined ? 0 : tensorArg(g, 'grad');
      check(core, ex.tpw_tensor_set_grad(this._handle(), gh), 'grad');
    },
    configurable: true,
  },
  /** True for a tensor no recorded op made. */
  isLeaf: {
    get() {
      const r = ex.tpw_tensor_is_leaf(this._handle());
      if (r < 0) throwLast(core, 'isLeaf');
      return r === 1;
    },
    configurable: true,
  },
  /** The storage's version: in-place writes (assign, optimizer steps) bump it. */
  version: {
    get() {
      const v = ex.tpw_tensor_version(this._handle());
      if (v < 0) throwLast(core, 'version');
      return v;
    },
    configurable: true,
  },
});

/**
 * Accumulates d(this)/d(leaf) into every leaf's .grad. grad: d(loss)/d(this)
 * (this tensor's shape), optional when this has one element.
 * options.retainGraph keeps the saved tensors for a second backward.
 */
Tensor.prototype.backward = function backward(grad, options = {}) {
  const h = this._handle();
  const gh = grad === undefined || grad === null ? 0 : tensorArg(grad, 'backward()');
  if (options === null || typeof options !== 'object') throw new TypeError('backward(): options must be an object');
  check(core, ex.tpw_backward(h, gh, options.retainGraph ? 1 : 0), 'backward()');
};

/** A leaf sharing this tensor's storage that requires no grad. */
Tensor.prototype.detach = function detach() {
  const h = ex.tpw_tensor_detach(this._handle()) >>> 0;
  if (h === 0) throwLast(core, 'detach()');
  return Tensor._fromHandle(h);
};

/** Marks this tensor as requiring grad (or not) and returns it. */
Tensor.prototype.requiresGrad_ = function requiresGrad_(v = true) {
  this.requiresGrad = v;
  return this;
};

/** In place: copies src's values (same shape) into this tensor; bumps its version. */
Tensor.prototype.assign = function assign(src) {
  check(core, ex.tpw_tensor_assign(this._handle(), tensorArg(src, 'assign()')), 'assign()');
  return this;
};

export function isGradEnabled() {
  const prev = ex.tpw_set_grad_enabled(1);
  ex.tpw_set_grad_enabled(prev);
  return prev === 1;
}

function withGradMode(on, fn, what) {
  if (typeof fn !== 'function') throw new TypeError(`${what}: expected a function`);
  const prev = ex.tpw_set_grad_enabled(on ? 1 : 0);
  try {
    return fn();
  } finally {
    ex.tpw_set_grad_enabled(prev);
  }
}
/** Runs fn with grad mode off (nothing recorded) and returns its result. */
export function noGrad(fn) {
  return withGradMode(false, fn, 'noGrad');
}
/** Runs fn with grad mode on. */
export function enableGrad(fn) {
  return withGradMode(true, fn, 'enableGrad');
}

function argnumList(argnums, nargs, what) {
  const list = Array.isArray(argnums) ? argnums : [argnums];
  for (const a of list) {
    if (!Number.isInteger(a) || a < 0 || a >= nargs) {
      throw new TensorPlayError(`${what}: argnums ${a} is out of range for ${nargs} arguments`, Status.INVALID_ARG);
    }
  }
  return list;
}

function valueAndGradImpl(fn, options, what) {
  if (typeof fn !== 'function') throw new TypeError(`${what}: expected a function`);
  const argnums = options && options.argnums !== undefined ? options.argnums : 0;
  return (...args) => {
    const list = argnumList(argnums, args.length, what);
    const leaves = new Map();
    const callArgs = args.slice();
    for (const a of list) {
      if (!(args[a] instanceof Tensor)) throw new TypeError(`${what}: argument ${a} is not a Tensor`);
      const leaf = args[a].detach();
      leaf.requiresGrad = true;
      leaves.set(a, leaf);
      callArgs[a] = leaf;
    }
    let value;
    try {
      value = enableGrad(() => fn(...callArgs));
      if (!(value instanceof Tensor)) throw new TypeError(`${what}: the function must return a Tensor (a scalar loss)`);
      if (value.size !== 1) {
        throw new TensorPlayError(`${what}: the function must return a one-element tensor, got shape [${value.shape}]`,
          Status.INVALID_ARG);
      }
      if (value.requiresGrad) value.backward();
      const grads = list.map((a) => {
        const g = leaves.get(a).grad; // null: fn does not depend on it
        return g !== null ? g : zeros(args[a].shape);
      });
      const out = Array.isArray(argnums) ? grads : grads[0];
      const v = value.detach();
      return [v, out];
    } finally {
      if (value instanceof Tensor) value.dispose();
      for (const leaf of leaves.values()) leaf.dispose();
    }
  };
}

/**
 * grad(fn, {argnums = 0}): a function returning d fn(...args) / d args[argnums]
 * (an array of gradients when argnums is an array; zeros for an argument fn
 * does not depend on). fn returns a one-element
 * Tensor. The arguments are not modified (their detached copies are differentiated).
 */
export function grad(fn, options) {
  const vg = valueAndGradImpl(fn, options, 'grad');
  return (...args) => {
    const [v, g] = vg(...args);
    v.dispose();
    return g;
  };
}
/** valueAndGrad(fn, {argnums = 0}): a function returning [fn(...args), the gradient(s)]. */
export function valueAndGrad(fn, options) {
  return valueAndGradImpl(fn, options, 'valueAndGrad');
}
