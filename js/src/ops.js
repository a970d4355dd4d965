// ops.js - calling the core's operators: callOp (operands and the
// tp_attrs struct written into Wasm memory, at the offsets the core reports
// through tpw_attrs_layout), and the operators whose JS arguments need more
// than a generated wrapper (TP_JS_CUSTOM rows of src/ops/ops.def). ops_gen.js
// (generated) exports them together with the plain unary/binary operators.

import { TensorPlayError, Status, throwLast } from './errors.js';
import { Tensor, MAX_DIMS, core, ex, dtypeCode, wrapHandle as wrap } from './tensor.js';
import { checkShape } from './creation.js';

function opId(name) {
  const id = core.ops.get(name);
  if (id === undefined) {
    throw new TensorPlayError(`${name}: this core has no such operator`, Status.UNSUPPORTED);
  }
  return id;
}

function intArg(v, what) {
  if (!Number.isInteger(v)) throw new TypeError(`${what} must be an integer, got ${String(v)}`);
  return v;
}
// ---- the tp_attrs layout --------------------------------------------------
// "<size>;<field>:<i|f><bits>:<count>@<offset>;..." (wasm/ops.c), read once
// per core: the struct is described in C only.
let layout = null;
let layoutCore = null;
const I64_MAX = (1n << 63n) - 1n;
const I64_MIN = -(1n << 63n);

/** The text of tpw_attrs_layout as { size, fields: Map(name -> { kind, bits, count, offset }) }. */
export function parseAttrsLayout(text) {
  const [size, ...rest] = text.split(';');
  const fields = new Map();
  for (const f of rest) {
    const m = /^(\w+):([if])(\d+):(\d+)@(\d+)$/.exec(f);
    if (!m) throw new Error(`tensorplay: cannot read the core's attribute layout ${JSON.stringify(text)}`);
    fields.set(m[1], { kind: m[2], bits: Number(m[3]), count: Number(m[4]), offset: Number(m[5]) });
  }
  return { size: Number(size), fields };
}

/** The loaded core's tp_attrs layout (parseAttrsLayout), read once. */
export function attrsLayout() {
  if (layoutCore !== core) {
    layout = parseAttrsLayout(core.readCString(ex.tpw_attrs_layout()));
    layoutCore = core;
  }
  return layout;
}

function putField(dv, p, f, i, v, what) {
  const o = p + f.offset + i * (f.bits >> 3);
  if (f.kind === 'f') {
    if (f.bits === 64) dv.setFloat64(o, Number(v), true);
    else dv.setFloat32(o, Number(v), true);
  } else if (f.bits === 64) {
    const b = BigInt(typeof v === 'boolean' ? Number(v) : v); // integers only (the callers check)
    if (b > I64_MAX || b < I64_MIN) {
      throw new TensorPlayError(`${what}: ${v} is out of the int64 range`, Status.INVALID_ARG);
    }
    dv.setBigInt64(o, b, true);
  } else if (f.bits === 32) {
    const n = Number(v);
    if (!(n >= -(2 ** 31) && n < 2 ** 31)) {
      throw new TensorPlayError(`${what}: ${v} is out of the int32 range`, Status.INVALID_ARG);
    }
    dv.setInt32(o, n, true);
  } else {
    throw new Error(`tensorplay: an attribute field of ${f.bits} bits`);
  }
}

/** Writes a tp_attrs at p: the core's defaults (tpw_attrs_init), then the fields given in a. */
function packAttrs(p, a, name) {
  const { fields } = attrsLayout();
  ex.tpw_attrs_init(p);
  const dv = core.views().dv;
  for (const [key, v] of Object.entries(a)) {
    if (v === undefined) continue; // the default
    const f = fields.get(key);
    if (!f) throw new Error(`tensorplay: the core's tp_attrs has no field ${key}`);
    if (f.count > 1) { // an array with its count in n<name> (ints, nints)
      if (v.length > f.count) throw new TensorPlayError(`${name}: at most ${f.count} values in ${key}, got ${v.length}`, Status.INVALID_ARG);
      for (let i = 0; i < v.length; i++) putField(dv, p, f, i, v[i], `${name}: ${key}[${i}]`);
      const n = fields.get(`n${key}`);
      if (n) putField(dv, p, n, 0, v.length, `${name}: n${key}`);
    } else {
      putField(dv, p, f, 0, v, `${name}: ${key}`);
    }
  }
}

/**
 * A JS scalar operand as [double, is_int] for tp_scalar (docs/reliability.md,
 * "Numbers: promotion and overflow"): a whole number (any magnitude: 1e300
 * is whole), a bigint or a boolean is an integer scalar; a fractional
 * number, NaN or +-Infinity a float scalar. The core refuses an integer
 * scalar that does not fit an integer tensor's dtype.
 */
export function scalarValue(t, what) {
  if (typeof t === 'boolean') return [t ? 1 : 0, 1];
  if (typeof t === 'bigint') {
    const v = Number(t);
    if (BigInt(v) !== t) {
      throw new TensorPlayError(`${what}: bigint ${t}n is not exactly a double (use a tensor of dtype int64)`,
        Status.INVALID_ARG);
    }
    return [v, 1];
  }
  if (typeof t !== 'number') throw new TypeError(`${what} must be a number, boolean or bigint, got ${typeof t}`);
  return [t, Number.isInteger(t) ? 1 : 0];
}

/**
 * Calls operator `name` on inputs (Tensors, numbers -> weak scalars, or
 * null for an absent optional operand) with attributes `attrs`: tp_attrs
 * field names (ints, dim, dim1, start, end, step, eps, keepdim, approximate,
 * dtype); fields not given, or all of them for attrs null, keep the core's
 * defaults (tp_attrs_init).
 */
export function callOp(name, inputs, attrs = null) {
  const id = opId(name);
  if (attrs && attrs.ints && attrs.ints.length > MAX_DIMS) {
    throw new TensorPlayError(`${name}: at most ${MAX_DIMS} dims, got ${attrs.ints.length}`, Status.INVALID_ARG);
  }
  const temps = [];
  const mark = core.stackSave();
  try {
    const handles = inputs.map((t, i) => {
      if (t === null || t === undefined) return 0;
      if (t instanceof Tensor) return t._handle();
      if (typeof t === 'number' || typeof t === 'boolean' || typeof t === 'bigint') {
        const [v, isInt] = scalarValue(t, `${name}: operand ${i}`);
        const h = ex.tpw_scalar(v, isInt) >>> 0;
        if (h === 0) throwLast(core, `${name}: scalar operand`);
        temps.push(h);
        return h;
      }
      throw new TypeError(`${name}: operand ${i} must be a Tensor, a number, a boolean or a bigint, got ${t === null ? 'null' : typeof t}`);
    });
    const inPtr = core.stackAlloc(4 * Math.max(handles.length, 1));
    let aPtr = 0;
    if (attrs) {
      aPtr = core.stackAlloc(attrsLayout().size);
      packAttrs(aPtr, attrs, name);
    }
    core.views().u32.set(handles, inPtr >> 2);
    return wrap(ex.tpw_op(id, handles.length, inPtr, aPtr), null);
  } finally {
    core.stackRestore(mark);
    for (const h of temps) ex.tpw_tensor_free(h);
  }
}

/** Tensor methods whose form is not x.f(...rest) = f(x, ...rest) (TP_JS_METHOD_BY_HAND rows). */
export const methodsByHand = {
  /** torch style: x.where(cond, y) = where(cond, x, y) */
  where(cond, other) { return where(cond, this, other); },
};

/** where(cond, a, b): cond ? a : b, broadcast. a and b may be numbers. */
export function where(cond, a, b) {
  return callOp('where', [cond, a, b]);
}

/** gelu(x, { approximate: 'none' | 'tanh' }) */
export function gelu(x, options = {}) {
  const ap = options.approximate ?? 'none';
  if (ap !== 'none' && ap !== 'tanh') {
    throw new TensorPlayError(`gelu: approximate must be 'none' or 'tanh', got ${JSON.stringify(ap)}`, Status.INVALID_ARG);
  }
  return callOp('gelu', [x], { approximate: ap === 'tanh' ? 1 : 0 });
}

/** linear(x, w, b?): x @ w^T + b, w is [out, in]. */
export function linear(x, w, b = null) {
  return callOp('linear', [x, w, b ?? null]);
}

function pairArg(v, what, min) {
  const p = typeof v === 'number' ? [v, v] : Array.isArray(v) && v.length === 2 ? v : null;
  if (!p || !p.every((e) => Number.isInteger(e) && e >= min)) {
    throw new TensorPlayError(`${what} must be an integer >= ${min} or a pair of them, got ${JSON.stringify(v)}`, Status.INVALID_ARG);
  }
  return p;
}

/**
 * conv2d(x, weight, bias?, { stride = 1, padding = 0, dilation = 1, groups = 1 }):
 * 2-D convolution, NCHW. x [N, C, H, W], weight [M, C/groups, KH, KW],
 * bias [M]. padding: an integer, [ph, pw], [top, left, bottom, right],
 * 'valid' (0) or 'same' (stride 1 only; output size = input size, the odd
 * pixel of padding goes bottom/right).
 */
export function conv2d(x, weight, bias = null, options = {}) {
  if (bias !== null && typeof bias === 'object' && Object.getPrototypeOf(bias) === Object.prototype) {
    options = bias; // conv2d(x, w, { stride }); anything else that is not a Tensor is rejected as an operand
    bias = null;
  }
  const [ints, groups] = convWindow('conv2d', weight, options);
  return callOp('conv2d', [x, weight, bias ?? null], { ints, dim: groups });
}

/* conv2d's window options as the op's ints [stride h w, pads t l b r, dilation h w] and its groups. */
function convWindow(name, weight, options) {
  const stride = pairArg(options.stride ?? 1, `${name}: stride`, 1);
  const dilation = pairArg(options.dilation ?? 1, `${name}: dilation`, 1);
  const groups = options.groups ?? 1;
  if (!Number.isInteger(groups) || groups < 1) {
    throw new TensorPlayError(`${name}: groups must be an integer >= 1, got ${JSON.stringify(groups)}`, Status.INVALID_ARG);
  }
  let pad = options.padding ?? 0;
  if (pad === 'valid') pad = 0;
  if (pad === 'same') {
    if (stride[0] !== 1 || stride[1] !== 1) {
      throw new TensorPlayError(`${name}: padding 'same' needs stride 1`, Status.INVALID_ARG);
    }
    if (!(weight instanceof Tensor)) throw new TypeError(`${name}: weight must be a Tensor`);
    const k = weight.shape.slice(-2);
    const tot = [0, 1].map((i) => dilation[i] * ((k[i] ?? 1) - 1));
    pad = [Math.floor(tot[0] / 2), Math.floor(tot[1] / 2), tot[0] - Math.floor(tot[0] / 2), tot[1] - Math.floor(tot[1] / 2)];
  } else if (Array.isArray(pad) && pad.length === 4) {
    if (!pad.every((e) => Number.isInteger(e) && e >= 0)) {
      throw new TensorPlayError(`${name}: padding must hold integers >= 0, got ${JSON.stringify(pad)}`, Status.INVALID_ARG);
    }
  } else {
    const p = pairArg(pad, `${name}: padding (or 'same', 'valid', [top, left, bottom, right])`, 0);
    pad = [p[0], p[1], p[0], p[1]];
  }
  return [[...stride, ...pad, ...dilation], groups];
}

function poolArgs(name, kernelSize, options) {
  const k = pairArg(kernelSize, `${name}: kernelSize`, 1);
  const stride = pairArg(options.stride ?? k, `${name}: stride`, 1);
  let pad = options.padding ?? 0;
  if (Array.isArray(pad) && pad.length === 4) {
    if (!pad.every((e) => Number.isInteger(e) && e >= 0)) {
      throw new TensorPlayError(`${name}: padding must hold integers >= 0, got ${JSON.stringify(pad)}`, Status.INVALID_ARG);
    }
  } else {
    const p = pairArg(pad, `${name}: padding (or [top, left, bottom, right])`, 0);
    pad = [p[0], p[1], p[0], p[1]];
  }
  return [...k, ...stride, ...pad];
}

/**
 * maxPool2d(x, kernelSize, { stride = kernelSize, padding = 0 }): NCHW max
 * pooling; padding never wins. kernelSize, stride: a number or [h, w];
 * padding: a number, [h, w] or [top, left, bottom, right], each smaller
 * than the kernel.
 */
export function maxPool2d(x, kernelSize, options = {}) {
  return callOp('max_pool2d', [x], { ints: poolArgs('maxPool2d', kernelSize, options) });
}

/**
 * avgPool2d(x, kernelSize, { stride = kernelSize, padding = 0, countIncludePad = true }):
 * NCHW average pooling (PyTorch's defaults); countIncludePad false divides
 * by the number of input elements in each window.
 */
export function avgPool2d(x, kernelSize, options = {}) {
  const incl = options.countIncludePad ?? true;
  if (typeof incl !== 'boolean') throw new TypeError(`avgPool2d: countIncludePad must be a boolean, got ${typeof incl}`);
  return callOp('avg_pool2d', [x], { ints: poolArgs('avgPool2d', kernelSize, options), dim: incl ? 1 : 0 });
}

const GRID_MODES = { bilinear: 0, nearest: 1, bicubic: 2 };
const GRID_PADDINGS = { zeros: 0, border: 1, reflection: 2 };

/**
 * gridSample(x, grid, { mode = 'bilinear', paddingMode = 'zeros', alignCorners = false }):
 * ONNX GridSample / torch.nn.functional.grid_sample. x [N, C, H, W] or
 * [N, C, D, H, W]; grid [N, oH, oW, 2] or [N, oD, oH, oW, 3] holding
 * normalized (x, y[, z]) in [-1, 1]; the result is [N, C, oH, oW] (or
 * [N, C, oD, oH, oW]). mode: 'bilinear' | 'nearest' | 'bicubic';
 * paddingMode: 'zeros' | 'border' | 'reflection'.
 */
export function gridSample(x, grid, options = {}) {
  if (options === null || typeof options !== 'object') throw new TypeError('gridSample: options must be an object');
  const mode = options.mode ?? 'bilinear', pad = options.paddingMode ?? 'zeros', ac = options.alignCorners ?? false;
  if (!Object.hasOwn(GRID_MODES, mode)) {
    throw new TypeError(`gridSample: mode must be bilinear, nearest or bicubic, got ${String(mode)}`);
  }
  if (!Object.hasOwn(GRID_PADDINGS, pad)) {
    throw new TypeError(`gridSample: paddingMode must be zeros, border or reflection, got ${String(pad)}`);
  }
  if (typeof ac !== 'boolean') throw new TypeError(`gridSample: alignCorners must be a boolean, got ${typeof ac}`);
  return callOp('grid_sample', [x, grid], { dim: GRID_MODES[mode], dim1: GRID_PADDINGS[pad], keepdim: ac ? 1 : 0 });
}

/**
 * roiAlign(x, rois, batchIndices, { outputHeight = 1, outputWidth = 1, samplingRatio = 0,
 * spatialScale = 1, mode = 'avg', halfPixel = true }): ONNX RoiAlign. x [N, C, H, W],
 * rois [R, 4] float32 (x1, y1, x2, y2), batchIndices [R] int32/int64 -> [R, C, oH, oW].
 * samplingRatio 0 is adaptive; halfPixel false is ONNX's output_half_pixel.
 */
export function roiAlign(x, rois, batchIndices, options = {}) {
  if (options === null || typeof options !== 'object') throw new TypeError('roiAlign: options must be an object');
  const oh = intArg(options.outputHeight ?? 1, 'roiAlign: outputHeight');
  const ow = intArg(options.outputWidth ?? 1, 'roiAlign: outputWidth');
  const sr = intArg(options.samplingRatio ?? 0, 'roiAlign: samplingRatio');
  if (oh < 1 || ow < 1 || sr < 0) throw new RangeError(`roiAlign: outputHeight and outputWidth must be >= 1 and samplingRatio >= 0, got ${oh}, ${ow}, ${sr}`);
  const scale = options.spatialScale ?? 1, mode = options.mode ?? 'avg', half = options.halfPixel ?? true;
  if (typeof scale !== 'number' || !Number.isFinite(scale)) throw new TypeError(`roiAlign: spatialScale must be a finite number, got ${String(scale)}`);
  if (mode !== 'avg' && mode !== 'max') throw new TypeError(`roiAlign: mode must be avg or max, got ${String(mode)}`);
  if (typeof half !== 'boolean') throw new TypeError(`roiAlign: halfPixel must be a boolean, got ${typeof half}`);
  return callOp('roi_align', [x, rois, batchIndices],
    { ints: [oh, ow, sr], dim: mode === 'max' ? 1 : 0, keepdim: half ? 1 : 0, eps: scale });
}

function reduceOpts(opts) {
  if (opts === undefined || opts === null) return {};
  if (typeof opts === 'number' || Array.isArray(opts)) return { dim: opts };
  return opts;
}

function reduce(name) {
  return (x, opts) => {
    const o = reduceOpts(opts);
    let dims = o.dim ?? o.dims;
    if (dims === undefined || dims === null) dims = [];
    else if (!Array.isArray(dims)) dims = [dims];
    dims.forEach((d) => intArg(d, `${name}: dim`));
    return callOp(name, [x], { ints: dims, keepdim: !!o.keepdim });
  };
}

/** sum(x, { dim: number | number[], keepdim }) (no dim: all dims) */
export const sum = reduce('sum');
export const mean = reduce('mean');
export const max = reduce('max');
export const min = reduce('min');

export function softmax(x, dim = -1) {
  return callOp('softmax', [x], { dim: intArg(dim, 'softmax: dim') });
}

export function logSoftmax(x, dim = -1) {
  return callOp('log_softmax', [x], { dim: intArg(dim, 'logSoftmax: dim') });
}

/** layerNorm(x, normalizedShape, weight?, bias?, { eps = 1e-5 }) */
export function layerNorm(x, normalizedShape, weight = null, bias = null, options = {}) {
  if (weight !== null && !(weight instanceof Tensor) && typeof weight === 'object') {
    options = weight; // layerNorm(x, shape, { eps })
    weight = null;
  }
  const ns = checkShape(normalizedShape, 'layerNorm: normalizedShape');
  return callOp('layer_norm', [x, weight ?? null, bias ?? null], { ints: ns, eps: options.eps ?? 1e-5 });
}

function dimsArg(args, what, isShape) {
  const dims = args.length === 1 && (Array.isArray(args[0]) || ArrayBuffer.isView(args[0])) ? Array.from(args[0]) : args;
  if (isShape) return checkShape(dims, what, true); // dims 0..2^40, or -1
  if (dims.length > MAX_DIMS) {
    throw new TensorPlayError(`${what}: at most ${MAX_DIMS} dims, got ${dims.length}`, Status.INVALID_ARG);
  }
  return dims.map((d, i) => intArg(d, `${what}[${i}]`));
}

/** reshape(x, shape) or reshape(x, ...dims); one -1 allowed. */
export function reshape(x, ...shape) {
  return callOp('reshape', [x], { ints: dimsArg(shape, 'reshape: shape', true) });
}

export function transpose(x, d0, d1) {
  return callOp('transpose', [x], { dim: intArg(d0, 'transpose: dim0'), dim1: intArg(d1, 'transpose: dim1') });
}

/** permute(x, perm) or permute(x, ...perm) */
export function permute(x, ...perm) {
  return callOp('permute', [x], { ints: dimsArg(perm, 'permute: perm') });
}

/** slice(x, dim, start = 0, end = to the end, step = 1), python rules. */
export function slice(x, dim, start, end, step) {
  return callOp('slice', [x], {
    dim: intArg(dim, 'slice: dim'),
    start: start === undefined || start === null ? 0 : intArg(start, 'slice: start'),
    end: end === undefined || end === null ? undefined : intArg(end, 'slice: end'), // undefined: to the end
    step: step === undefined || step === null ? 1 : intArg(step, 'slice: step'),
  });
}

/** concat(list, dim = 0) */
export function concat(list, dim = 0) {
  if (!Array.isArray(list)) throw new TypeError('concat: expected an array of tensors');
  return callOp('concat', list, { dim: intArg(dim, 'concat: dim') });
}

// ONNX's activation names (any case) in the core's code order (src/ops/ops.h TP_RNN_ACTS)
const RNN_ACTS = ['sigmoid', 'tanh', 'relu', 'affine', 'leakyrelu', 'thresholdedrelu', 'scaledtanh', 'hardsigmoid',
  'elu', 'softsign', 'softplus'];
const RNN_DIR = { forward: 0, reverse: 1, bidirectional: 2 };

function recurrent(op, name, x, w, r, opts, nops) {
  if (opts === null || typeof opts !== 'object') throw new TypeError(`${name}: options must be an object`);
  const dir = opts.direction ?? 'forward';
  if (!(dir in RNN_DIR)) throw new TypeError(`${name}: direction must be forward, reverse or bidirectional, got ${dir}`);
  const acts = (opts.activations ?? []).map((a) => {
    const k = typeof a === 'string' ? RNN_ACTS.indexOf(a.toLowerCase()) : -1;
    if (k < 0) throw new TypeError(`${name}: activation '${a}' is not one of ${RNN_ACTS.join(', ')}`);
    return k;
  });
  const params = opts.activationParams ?? [];
  if (!Array.isArray(params) || params.some((v) => typeof v !== 'number')) {
    throw new TypeError(`${name}: activationParams must be an array of numbers (an alpha and a beta per activation)`);
  }
  const clip = opts.clip ?? 0;
  if (typeof clip !== 'number') throw new TypeError(`${name}: clip must be a number`);
  const flag = op === 'lstm' ? opts.inputForget : opts.linearBeforeReset;
  const ins = [x, w, r, opts.bias ?? null, opts.sequenceLens ?? null, opts.initialH ?? null];
  if (nops === 8) ins.push(opts.initialC ?? null, opts.peepholes ?? null);
  // tp_attrs fields: dim hidden_size (0: from r), dim1 direction, ints activations, keepdim the gate flag
  const packed = callOp(op, ins, { dim: 0, dim1: RNN_DIR[dir], ints: acts, floats: params, clip, keepdim: op === 'rnn' ? 0 : (flag ? 1 : 0) });
  // packed [2, seq + 1, dirs, batch, hidden]: Y, the final H and C
  const S = packed.shape[1] - 1;
  const y = packed.slice(0, 0, 1).slice(1, 0, S).reshape(packed.shape.slice(1).map((d, i) => (i ? d : S)));
  const h = packed.slice(0, 0, 1).slice(1, S, S + 1).reshape(packed.shape.slice(2));
  const c = packed.slice(0, 1, 2).slice(1, S, S + 1).reshape(packed.shape.slice(2));
  packed.dispose();
  return op === 'lstm' ? { y, h, c } : (c.dispose(), { y, h });
}

/**
 * rnn / gru / lstm(x, w, r, options): ONNX's RNN / GRU / LSTM (x [seq, batch,
 * input], w [dirs, G*hidden, input], r [dirs, G*hidden, hidden]; options:
 * bias, sequenceLens, initialH, initialC and peepholes (lstm), direction,
 * activations (ONNX's names, any case: Sigmoid Tanh Relu Affine LeakyRelu
 * ThresholdedRelu ScaledTanh HardSigmoid Elu Softsign Softplus),
 * activationParams (an alpha and a beta per activation; none: ONNX's
 * defaults), clip, linearBeforeReset (gru), inputForget (lstm)).
 * Returns { y: [seq, dirs, batch, hidden], h: [dirs, batch, hidden] } (and c for lstm).
 */
export function rnn(x, w, r, options = {}) { return recurrent('rnn', 'rnn', x, w, r, options, 6); }
export function gru(x, w, r, options = {}) { return recurrent('gru', 'gru', x, w, r, options, 6); }
export function lstm(x, w, r, options = {}) { return recurrent('lstm', 'lstm', x, w, r, options, 8); }

/**
 * gather(x, indices, dim = 0): numpy's take along dim (ONNX Gather);
 * indices an int32/int64 Tensor of any shape (negative ones count from the
 * end); the result's shape is x.shape[:dim] + indices.shape +
 * x.shape[dim+1:]. An index outside [-n, n) is a TensorPlayError naming it.
 */
export function gather(x, indices, dim = 0) {
  return callOp('gather', [x, indices], { dim: intArg(dim, 'gather: dim') });
}

/** argtopk(x, k, { dim = -1, largest = true }): int64 indices of the k largest (or smallest) along dim, in order; ties: the lower index first. */
export function argtopk(x, k, options = {}) {
  if (options === null || typeof options !== 'object') throw new TypeError('argtopk: options must be an object');
  return callOp('argtopk', [x], { dim: intArg(options.dim ?? -1, 'argtopk: dim'), k: intArg(k, 'argtopk: k'), largest: options.largest === false ? 0 : 1 });
}

/** topk(x, k, { dim = -1, largest = true }) -> { values, indices } (ONNX TopK). */
export function topk(x, k, options = {}) {
  const indices = argtopk(x, k, options);
  return { values: gatherElements(x, indices, options.dim ?? -1), indices };
}

/** gatherND(x, indices, { batchDims = 0 }): ONNX GatherND. */
export function gatherND(x, indices, options = {}) {
  if (options === null || typeof options !== 'object') throw new TypeError('gatherND: options must be an object');
  return callOp('gather_nd', [x, indices], { dim: intArg(options.batchDims ?? 0, 'gatherND: batchDims') });
}

const REDUCTIONS = { none: 0, add: 1, mul: 2, max: 3, min: 4 };
function reductionArg(what, options) {
  if (options === null || typeof options !== 'object') throw new TypeError(`${what}: options must be an object`);
  const r = options.reduction ?? 'none';
  if (!(r in REDUCTIONS)) throw new TypeError(`${what}: reduction must be none, add, mul, max or min, got ${r}`);
  return REDUCTIONS[r];
}

/** scatterElements(x, indices, updates, dim, { reduction }): ONNX ScatterElements; a new tensor. */
export function scatterElements(x, indices, updates, dim, options = {}) {
  return callOp('scatter_elements', [x, indices, updates],
    { dim: intArg(dim, 'scatterElements: dim'), reduction: reductionArg('scatterElements', options) });
}

/** scatterND(x, indices, updates, { reduction }): ONNX ScatterND (indices [..., k]); a new tensor. */
export function scatterND(x, indices, updates, options = {}) {
  return callOp('scatter_nd', [x, indices, updates], { reduction: reductionArg('scatterND', options) });
}

/** gatherElements(x, indices, dim): torch.gather / ONNX GatherElements; the result has indices' shape. */
export function gatherElements(x, indices, dim) {
  return callOp('gather_elements', [x, indices], { dim: intArg(dim, 'gatherElements: dim') });
}

export function cast(x, dtype) {
  return callOp('cast', [x], { dtype: dtypeCode(dtype) });
}

/** The same bytes read as dtype, of the same element size (ONNX BitCast): float32 <-> int32, int8 <-> uint8, ... */
export function bitcast(x, dtype) {
  return callOp('bitcast', [x], { dtype: dtypeCode(dtype) });
}

// ---- linear quantization (ops.def quantize / dequantize; docs/quantization.md) ----

const QRANGE = { int8: [-128, 127], uint8: [0, 255] };

/** A scale or zero point as a tensor shaped for x: numbers become 0-d tensors; with axis, a 1-D one runs along x's dim axis. */
function quantParam(v, what, dtype, x, axis, temps) {
  if (v === null || v === undefined) return null;
  let t = v;
  if (!(v instanceof Tensor)) {
    if (typeof v !== 'number') throw new TypeError(`${what} must be a Tensor or a number, got ${typeof v}`);
    if (dtype !== 'float32') {
      const [lo, hi] = QRANGE[dtype];
      if (!Number.isInteger(v) || v < lo || v > hi) {
        throw new TensorPlayError(`${what} ${v} is out of range for ${dtype} (whole numbers ${lo}..${hi})`, Status.INVALID_ARG);
      }
    }
    t = tensorOf(v, dtype);
    temps.push(t);
  }
  if (axis === undefined || axis === null || t.ndim !== 1) return t;
  const nd = x.ndim;
  if (!Number.isInteger(axis) || axis < -nd || axis >= nd) {
    throw new TensorPlayError(`${what}: axis ${axis} is out of range for x of rank ${nd}`, Status.INVALID_ARG);
  }
  const a = axis < 0 ? axis + nd : axis;
  if (t.shape[0] !== x.shape[a] && t.shape[0] !== 1) {
    throw new TensorPlayError(`${what} has ${t.shape[0]} values; axis ${a} of x has ${x.shape[a]}`, Status.INVALID_ARG);
  }
  const r = t.reshape([t.shape[0], ...new Array(nd - a - 1).fill(1)]);
  temps.push(r);
  return r;
}

function tensorOf(v, dtype) {
  // a 0-d tensor through the core's full (creation.js is not imported here: no cycle)
  const mark = core.stackSave();
  try {
    const p = core.stackAlloc(8);
    return wrap(ex.tpw_full(dtypeCode(dtype), 0, p, v), 'quantize()');
  } finally {
    core.stackRestore(mark);
  }
}

/**
 * quantize(x, scale, zeroPoint?, { axis, dtype }): saturate(round half to
 * even(x / scale) + zeroPoint) as int8 or uint8 (ONNX QuantizeLinear).
 * scale: a number or a float32/float16 tensor (one value, or one per
 * element of axis with options.axis, or any shape that broadcasts to x);
 * zeroPoint: a number (whole, in range of dtype) or an int8/uint8 tensor,
 * whose dtype gives the result's. options.dtype: 'uint8' (default) or
 * 'int8'. Scales must be finite and > 0.
 */
export function quantize(x, scale, zeroPoint = null, options = {}) {
  const dtype = options.dtype ?? (zeroPoint instanceof Tensor ? zeroPoint.dtype : 'uint8');
  if (!(dtype in QRANGE)) {
    throw new TensorPlayError(`quantize(): dtype ${JSON.stringify(dtype)} is not supported (int8, uint8)`, Status.INVALID_ARG);
  }
  const temps = [];
  try {
    const s = quantParam(scale, 'quantize(): scale', 'float32', x, options.axis, temps);
    const z = quantParam(zeroPoint, 'quantize(): zeroPoint', dtype, x, options.axis, temps);
    return callOp('quantize', [x, s, z], { dtype: dtypeCode(dtype) });
  } finally {
    for (const t of temps) t.dispose();
  }
}

/**
 * dequantize(q, scale, zeroPoint?, { axis }): (q - zeroPoint) * scale for an
 * int8/uint8/int32 tensor q (ONNX DequantizeLinear): float32, or float16
 * with a float16 scale. zeroPoint: a number or a tensor of q's dtype.
 */
export function dequantize(q, scale, zeroPoint = null, options = {}) {
  if (!(q instanceof Tensor)) throw new TypeError('dequantize(): q must be a Tensor');
  const temps = [];
  try {
    const s = quantParam(scale, 'dequantize(): scale', 'float32', q, options.axis, temps);
    const zd = q.dtype in QRANGE ? q.dtype : 'int32';
    const z = quantParam(zeroPoint, 'dequantize(): zeroPoint', zd === 'int32' ? 'float32' : zd, q, options.axis, temps);
    const zc = z && !(zeroPoint instanceof Tensor) && zd === 'int32' ? z.cast('int32') : z;
    if (zc !== z) temps.push(zc);
    return callOp('dequantize', [q, s, zc]);
  } finally {
    for (const t of temps) t.dispose();
  }
}

/**
 * matmulInt(a, b, aZeroPoint?, bZeroPoint?): (a - aZeroPoint) @ (b -
 * bZeroPoint) with numpy matmul rules (ONNX MatMulInteger): int8 / uint8 /
 * int32 operands, an int32 result, exact (sums wrap in int32 as ONNX's).
 * A zero point is a number (whole, in range of its operand's dtype) or a
 * tensor of its operand's dtype: one value, one per row of a ([M]) or one
 * per column of b ([N]). int8/uint8 operands run on the integer GEMM.
 */
export function matmulInt(a, b, aZeroPoint = null, bZeroPoint = null) {
  if (!(a instanceof Tensor) || !(b instanceof Tensor)) throw new TypeError('matmulInt(): a and b must be Tensors');
  const temps = [];
  try {
    const zp = (v, x, what) => {
      if (v === null || v === undefined || v instanceof Tensor) return v ?? null;
      const dt = x.dtype in QRANGE ? x.dtype : 'int32';
      if (dt === 'int32') {
        if (typeof v !== 'number' || !Number.isInteger(v) || Math.abs(v) > 2147483647) {
          throw new TensorPlayError(`matmulInt(): ${what} ${v} is not a whole int32 number`, Status.INVALID_ARG);
        }
        const t = tensorOf(v, 'int32');
        temps.push(t);
        return t;
      }
      return quantParam(v, `matmulInt(): ${what}`, dt, x, undefined, temps);
    };
    const az = zp(aZeroPoint, a, 'aZeroPoint'), bz = zp(bZeroPoint, b, 'bZeroPoint');
    const ins = [a, b, az, bz];
    while (ins.length > 2 && ins[ins.length - 1] === null) ins.pop();
    return callOp('matmul_int', ins);
  } finally {
    for (const t of temps) t.dispose();
  }
}

/**
 * conv2dInt(x, weight, { xZeroPoint?, wZeroPoint?, stride, padding, dilation, groups }):
 * the exact integer convolution of ONNX ConvInteger, NCHW:
 * sum (x - xZeroPoint) (weight - wZeroPoint) over each window, an int32
 * result (sums wrap in int32 as ONNX's). x, weight int8 / uint8; window
 * options as conv2d's; padding adds 0. xZeroPoint: a number or a tensor of
 * x's dtype, one value; wZeroPoint: one value or one per output channel
 * ([M]). One group runs on the integer GEMM.
 */
export function conv2dInt(x, weight, options = {}) {
  if (!(x instanceof Tensor) || !(weight instanceof Tensor)) throw new TypeError('conv2dInt(): x and weight must be Tensors');
  const [ints, groups] = convWindow('conv2dInt', weight, options);
  const temps = [];
  try {
    const zp = (v, t, what) => {
      if (v === null || v === undefined || v instanceof Tensor) return v ?? null;
      if (!(t.dtype in QRANGE)) return null; // the op names the operand's dtype
      return quantParam(v, `conv2dInt(): ${what}`, t.dtype, t, undefined, temps);
    };
    const xz = zp(options.xZeroPoint, x, 'xZeroPoint'), wz = zp(options.wZeroPoint, weight, 'wZeroPoint');
    return callOp('conv2d_int', [x, weight, xz, wz], { ints, dim: groups });
  } finally {
    for (const t of temps) t.dispose();
  }
}

/**
 * qconv2d(x, weight, { xScale, wScale, xZeroPoint?, wZeroPoint?, bias?, yScale?, yZeroPoint?, yDtype?, relu?,
 *                      stride, padding, dilation, groups }):
 * the quantized convolution (ONNX QLinearConv) on the integer convolution
 * with the requantization in its epilogue: acc = conv2dInt(x, weight), plus
 * an int32 bias; without yScale the float32 acc * (xScale * wScale[m]) plus
 * a float32 bias; with yScale and yZeroPoint saturate(round half even(acc *
 * (xScale * wScale[m] / yScale)) + yZeroPoint) as yZeroPoint's int8/uint8;
 * relu. wScale, wZeroPoint and bias: one value or one per output channel.
 */
export function qconv2d(x, weight, options = {}) {
  if (!(x instanceof Tensor) || !(weight instanceof Tensor)) throw new TypeError('qconv2d(): x and weight must be Tensors');
  if (options === null || typeof options !== 'object') throw new TypeError('qconv2d(): options must be an object');
  if (options.xScale === undefined || options.wScale === undefined) {
    throw new TensorPlayError('qconv2d(): options.xScale and options.wScale are required', Status.INVALID_ARG);
  }
  if (!(x.dtype in QRANGE) || !(weight.dtype in QRANGE)) {
    throw new TensorPlayError(`qconv2d(): x and weight must be int8 or uint8, got ${x.dtype} and ${weight.dtype}`, Status.INVALID_ARG);
  }
  if (options.yDtype !== undefined && options.yDtype !== null && !(options.yDtype in QRANGE)) {
    throw new TensorPlayError(`qconv2d(): yDtype '${options.yDtype}' is not an output dtype (int8 or uint8)`, Status.INVALID_ARG);
  }
  const [ints, groups] = convWindow('qconv2d', weight, options);
  const temps = [];
  try {
    const f32 = (v, what) => (v === null || v === undefined ? null : quantParam(v, `qconv2d(): ${what}`, 'float32', x, undefined, temps));
    const zp = (v, dt, what) => (v === null || v === undefined ? null : quantParam(v, `qconv2d(): ${what}`, dt, x, undefined, temps));
    const yz = options.yZeroPoint;
    const ydt = yz instanceof Tensor ? yz.dtype : (options.yDtype ?? 'uint8');
    const bias = options.bias instanceof Tensor ? options.bias : f32(options.bias, 'bias'); // int32 tensors add to the sum
    const ins = [x, weight, zp(options.xZeroPoint, x.dtype, 'xZeroPoint'), zp(options.wZeroPoint, weight.dtype, 'wZeroPoint'),
      f32(options.xScale, 'xScale'), f32(options.wScale, 'wScale'), bias, f32(options.yScale, 'yScale'),
      yz === undefined || yz === null ? null : zp(yz, ydt in QRANGE ? ydt : 'uint8', 'yZeroPoint')];
    return callOp('qconv2d', ins, { ints, dim: groups, keepdim: options.relu ? 1 : 0 });
  } finally {
    for (const t of temps) t.dispose();
  }
}

/**
 * qmatmul(a, b, { aScale, bScale, aZeroPoint?, bZeroPoint?, bias?, yScale?, yZeroPoint?, relu? }):
 * the quantized linear layer on the integer GEMM (ops.def qmatmul; the
 * stax pass qlinear makes it of QDQ / dynamic-quantization patterns).
 * acc = (a - aZeroPoint) @ (b - bZeroPoint), exact int32; without yScale
 * the float32 acc * (aScale * bScale) + bias; with yScale and yZeroPoint
 * saturate(round half even(acc * (aScale * bScale / yScale)) + yZeroPoint)
 * as yZeroPoint's int8/uint8; relu. a int8/uint8 [..., M, K]; b int8/uint8
 * [K, N]; bScale, bZeroPoint and bias: one value or one per column. Scales
 * are numbers or float32 tensors, finite and > 0.
 */
export function qmatmul(a, b, options = {}) {
  if (!(a instanceof Tensor) || !(b instanceof Tensor)) throw new TypeError('qmatmul(): a and b must be Tensors');
  if (options === null || typeof options !== 'object') throw new TypeError('qmatmul(): options must be an object');
  const temps = [];
  try {
    const f32 = (v, what) => (v === null || v === undefined ? null : quantParam(v, `qmatmul(): ${what}`, 'float32', a, undefined, temps));
    const zp = (v, dt, what) => (v === null || v === undefined ? null : quantParam(v, `qmatmul(): ${what}`, dt, a, undefined, temps));
    const yz = options.yZeroPoint;
    const ydt = yz instanceof Tensor ? yz.dtype : (options.yDtype ?? 'uint8');
    if (options.aScale === undefined || options.bScale === undefined) {
      throw new TensorPlayError('qmatmul(): options.aScale and options.bScale are required', Status.INVALID_ARG);
    }
    if (options.yDtype !== undefined && options.yDtype !== null && !(options.yDtype in QRANGE)) {
      throw new TensorPlayError(`qmatmul(): yDtype '${options.yDtype}' is not an output dtype (int8 or uint8)`, Status.INVALID_ARG);
    }
    if (!(a.dtype in QRANGE) || !(b.dtype in QRANGE)) {
      throw new TensorPlayError(`qmatmul(): a and b must be int8 or uint8, got ${a.dtype} and ${b.dtype}`, Status.INVALID_ARG);
    }
    const ins = [a, b, zp(options.aZeroPoint, a.dtype, 'aZeroPoint'), zp(options.bZeroPoint, b.dtype, 'bZeroPoint'),
      f32(options.aScale, 'aScale'), f32(options.bScale, 'bScale'), f32(options.bias, 'bias'), f32(options.yScale, 'yScale'),
      yz === undefined || yz === null ? null : zp(yz, ydt in QRANGE ? ydt : 'uint8', 'yZeroPoint')];
    return callOp('qmatmul', ins, { keepdim: options.relu ? 1 : 0 });
  } finally {
    for (const t of temps) t.dispose();
  }
}
