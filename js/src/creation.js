// creation.js - tensors from data, shapes and values: tensor(), zeros(),
// ones(), full(), arange(), randn(), rand(), scalar().

import { TensorPlayError, Status } from './errors.js';
import { scalarValue } from './ops.js';
import { float16Bits, bfloat16Bits } from './half.js';
import { Tensor, ARRAY_TYPES, MAX_DIMS, core, ex, dtypeCode, wrapHandle as wrap } from './tensor.js';

/** The most elements one tensor may have (TP_MAX_NUMEL, 2^40); no dim may exceed it. */
export const MAX_NUMEL = 2 ** 40;

/**
 * A shape argument as an array of numbers: every dim an integer in
 * 0..2^40 (or -1 when allowInfer, reshape's inferred dim; up to 2^53 - 1
 * beside a 0 dim: an empty tensor); anything else throws naming `what` and
 * the dim (never a wrapped or truncated value). The core checks the
 * element count (at most 2^40) and the bytes.
 */
export function checkShape(shape, what = 'shape', allowInfer = false) {
  if (typeof shape === 'number') shape = [shape];
  if (!Array.isArray(shape) && !ArrayBuffer.isView(shape)) {
    throw new TypeError(`${what} must be an array of integers, got ${shape === null ? 'null' : typeof shape}`);
  }
  shape = Array.from(shape);
  if (shape.length > MAX_DIMS) {
    throw new TensorPlayError(`${what}: at most ${MAX_DIMS} dims, got ${shape.length}`, Status.INVALID_ARG);
  }
  for (let i = 0; i < shape.length; i++) {
    let s = shape[i];
    if (typeof s === 'bigint') s = Number(s); // past 2^53 it is past 2^40 too: refused below
    if (typeof s !== 'number' || !Number.isInteger(s)) {
      throw new TypeError(`${what}: dim ${i} must be an integer, got ${describe(shape[i])}`);
    }
    if (s < 0 && !(allowInfer && s === -1)) {
      throw new TensorPlayError(`${what}: dim ${i} is negative (${s})${allowInfer ? '; only -1 (inferred) is allowed' : ''}`,
        Status.INVALID_ARG);
    }
    if (s > MAX_NUMEL && !(s <= Number.MAX_SAFE_INTEGER && shape.includes(0))) {
      throw new TensorPlayError(`${what}: dim ${i} is ${s}, more than a tensor may hold (2^40 elements)`, Status.INVALID_ARG);
    }
  }
  return shape;
}

function describe(v) {
  if (typeof v === 'string') return JSON.stringify(v);
  if (typeof v === 'bigint') return `${v}n`;
  if (v === null || typeof v === 'object' || typeof v === 'function') return v === null ? 'null' : typeof v;
  return String(v);
}

/** Calls fn(p) with shape written at p as int64[ndim] (the ABI's shapes). */
function withShape(shape, fn) {
  const mark = core.stackSave();
  try {
    const p = core.stackAlloc(8 * Math.max(shape.length, 1) + 8);
    const q = (p + 7) & ~7;
    const i64 = core.views().i64;
    for (let i = 0; i < shape.length; i++) i64[(q >> 3) + i] = BigInt(shape[i]);
    return fn(q);
  } finally {
    core.stackRestore(mark);
  }
}

function typedDtype(a) {
  if (a instanceof Float32Array || a instanceof Float64Array) return 0;
  if (a instanceof BigInt64Array || a instanceof BigUint64Array) return 2;
  if (a instanceof Uint8Array || a instanceof Uint8ClampedArray) return 3; // bool (dtype: 'uint8' for bytes)
  if (a instanceof Int8Array) return 6;
  return 1; // other integer arrays (Uint16Array too: float16 bits need dtype: 'float16')
}

function inferShape(data) {
  const shape = [];
  let v = data;
  while (Array.isArray(v) || ArrayBuffer.isView(v)) {
    shape.push(v.length);
    if (v.length === 0) break;
    v = v[0];
  }
  return shape;
}

function flatten(data, shape, k, out, path) {
  const isArr = Array.isArray(data) || ArrayBuffer.isView(data);
  if (k === shape.length) {
    if (isArr) {
      throw new TensorPlayError(`tensor(): data is not rectangular (extra nesting at ${path || 'top'})`, Status.INVALID_ARG);
    }
    out.push(data);
    return;
  }
  if (!isArr || data.length !== shape[k]) {
    throw new TensorPlayError(
      `tensor(): data is not rectangular: expected length ${shape[k]} at ${path || 'top'}, got ${isArr ? data.length : typeof data}`,
      Status.INVALID_ARG);
  }
  for (let i = 0; i < data.length; i++) flatten(data[i], shape, k + 1, out, `${path}[${i}]`);
}

const I32_MIN = -(2 ** 31);
const I32_LIMIT = 2 ** 31;
const I64_MIN = -(2n ** 63n);
const I64_LIMIT = 2n ** 63n;

/**
 * One element for dtype d (docs/reliability.md, "Numbers: promotion and
 * overflow"): numbers, booleans and bigints only. Integer dtypes truncate
 * toward zero and refuse NaN, +-Inf and values that do not fit (PyTorch's
 * "cannot be converted without overflow"); float32 rounds (past its range:
 * +-Infinity); bool is value != 0.
 */
function whereOf(what, index) {
  return index < 0 ? what : `${what}: element ${index}`;
}

function element(v, d, what, index = -1) {
  const t = typeof v;
  if (t !== 'number' && t !== 'boolean' && t !== 'bigint') {
    throw new TypeError(`${whereOf(what, index)} must be a number, boolean or bigint, got ${describe(v)}`);
  }
  if (t === 'boolean') v = v ? 1 : 0;
  if (d === 3) return t === 'bigint' ? v !== 0n : v !== 0;
  if (d === 0 || d === 4 || d === 5) return Number(v);
  if (d === 6 || d === 7) {
    const lo = d === 6 ? -128 : 0, hi = d === 6 ? 128 : 256;
    const w = t === 'bigint' ? v : Math.trunc(v);
    if (t !== 'bigint' && !Number.isFinite(v)) {
      throw new TensorPlayError(`${whereOf(what, index)} (${v}) cannot be converted to ${d === 6 ? 'int8' : 'uint8'}`, Status.INVALID_ARG);
    }
    if (w >= lo && w < hi) return Number(w);
    throw new TensorPlayError(`${whereOf(what, index)} (${describe(v)}) cannot be converted to ${d === 6 ? 'int8' : 'uint8'} without overflow`,
      Status.INVALID_ARG);
  }
  const dt = d === 1 ? 'int32' : 'int64';
  if (t === 'bigint') {
    if (d === 1 ? v >= -2147483648n && v < 2147483648n : v >= I64_MIN && v < I64_LIMIT) return d === 1 ? Number(v) : v;
  } else {
    if (!Number.isFinite(v)) {
      throw new TensorPlayError(`${whereOf(what, index)} (${v}) cannot be converted to ${dt}`, Status.INVALID_ARG);
    }
    const w = Math.trunc(v); // powers of two are exact doubles: the bounds compare exactly
    if (d === 1 ? w >= I32_MIN && w < I32_LIMIT : w >= -(2 ** 63) && w < 2 ** 63) return d === 1 ? w : BigInt(w);
  }
  throw new TensorPlayError(`${whereOf(what, index)} (${describe(v)}) cannot be converted to ${dt} without overflow`,
    Status.INVALID_ARG);
}

function toTypedArray(values, d, what) {
  const Ctor = ARRAY_TYPES[d];
  if (values instanceof Ctor) return values;
  const out = new Ctor(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = element(values[i], d, what, i);
    out[i] = d === 3 ? (v ? 1 : 0) : d === 4 ? float16Bits(v) : d === 5 ? bfloat16Bits(v) : v;
  }
  return out;
}

/**
 * A tensor from data: a number, a (nested) array, or a typed array.
 * options.dtype: inferred from the typed array type (Float32Array/Float64Array
 * float32, Int32Array int32, BigInt64Array int64, Uint8Array bool, Int8Array
 * int8; a Uint16Array with dtype 'float16'/'bfloat16' is taken as bit
 * patterns, numbers are rounded to them), from
 * booleans (bool) or bigints (int64), else float32. options.shape reshapes
 * flat data.
 */
export function tensor(data, options = {}) {
  let fromDtype = null; // a Tensor's own dtype: its array's type does not say it (uint8, float16 bits)
  if (data instanceof Tensor) {
    if (options.dtype !== undefined && dtypeCode(options.dtype) !== dtypeCode(data.dtype)) {
      const c = data.cast(options.dtype);
      if (options.shape === undefined) return c;
      try {
        return tensor(c, { shape: options.shape });
      } finally {
        c.dispose();
      }
    }
    fromDtype = dtypeCode(data.dtype);
    data = data.toArray();
  }
  let shape;
  let flat;
  let d;
  if (ArrayBuffer.isView(data) && !(data instanceof DataView)) {
    d = fromDtype ?? typedDtype(data);
    shape = [data.length];
    flat = data;
  } else if (Array.isArray(data)) {
    shape = inferShape(data);
    const vals = [];
    flatten(data, shape, 0, vals, '');
    flat = vals;
    d = 0;
    if (vals.length && vals.every((v) => typeof v === 'boolean')) d = 3;
    else if (vals.length && vals.some((v) => typeof v === 'bigint')) d = 2;
  } else if (typeof data === 'number' || typeof data === 'boolean' || typeof data === 'bigint') {
    shape = [];
    flat = [data];
    d = typeof data === 'boolean' ? 3 : typeof data === 'bigint' ? 2 : 0;
  } else {
    throw new TypeError(`tensor(): unsupported data of type ${data === null ? 'null' : typeof data}`);
  }
  if (options.dtype !== undefined) d = dtypeCode(options.dtype);
  if (options.shape !== undefined) {
    const s = checkShape(options.shape, 'tensor(): options.shape');
    const n = s.reduce((a, b) => a * b, 1);
    if (n !== flat.length) {
      throw new TensorPlayError(
        `tensor(): shape [${s.join(', ')}] holds ${n} elements but the data has ${flat.length}`,
        Status.INVALID_ARG);
    }
    shape = s;
  }
  if (shape.length > MAX_DIMS) {
    throw new TensorPlayError(`tensor(): at most ${MAX_DIMS} dims, got ${shape.length}`, Status.INVALID_ARG);
  }
  const typed = toTypedArray(flat, d, 'tensor()');
  const bytes = typed.byteLength;
  let p = 0;
  try {
    p = bytes ? core.malloc(bytes) : 0;
  } catch (e) {
    if (e.code !== Status.OUT_OF_MEMORY) throw e;
    throw new TensorPlayError(`tensor(): ${e.message.replace(/^tensorplay: /, '')}`, Status.OUT_OF_MEMORY);
  }
  try {
    if (bytes) core.views().u8.set(new Uint8Array(typed.buffer, typed.byteOffset, bytes), p);
    return wrap(withShape(shape, (sp) => ex.tpw_tensor_new(d, shape.length, sp, p)), 'tensor()');
  } finally {
    core.free(p);
  }
}

export function zeros(shape, options = {}) {
  const s = checkShape(shape, 'zeros(): shape');
  const d = dtypeCode(options.dtype ?? 'float32');
  return wrap(withShape(s, (sp) => ex.tpw_tensor_new(d, s.length, sp, 0)), 'zeros()');
}

export function full(shape, value, options = {}) {
  const s = checkShape(shape, 'full(): shape');
  const d = dtypeCode(options.dtype ?? 'float32');
  let v = element(value, d, 'full(): value');
  if (typeof v === 'bigint') {
    if (BigInt(Number(v)) !== v) {
      throw new TensorPlayError(`full(): value ${v}n is not exactly a double; use tensor() with a BigInt64Array`,
        Status.INVALID_ARG);
    }
    v = Number(v);
  }
  return wrap(withShape(s, (sp) => ex.tpw_full(d, s.length, sp, Number(v))), 'full()');
}

export function ones(shape, options = {}) {
  return full(shape, 1, options);
}

/**
 * arange(end), arange(start, end), arange(start, end, step); a trailing
 * options object may give { dtype } (default float32).
 */
export function arange(start, end, step, options) {
  const args = [start, end, step, options];
  let opts = {};
  const last = args.findIndex((a) => a !== null && typeof a === 'object');
  if (last >= 0) {
    opts = args[last];
    args.length = last;
  }
  let [s, e, st] = args;
  if (e === undefined) {
    e = s;
    s = 0;
  }
  if (st === undefined) st = 1;
  const d = dtypeCode(opts.dtype ?? 'float32');
  const num = (v, what) => {
    if (typeof v === 'number') return v;
    if (typeof v === 'bigint' && BigInt(Number(v)) === v) return Number(v);
    throw new TypeError(`arange(): ${what} must be a number, got ${describe(v)}`);
  };
  return wrap(ex.tpw_arange(num(s, 'start'), num(e, 'end'), num(st, 'step'), d), 'arange()');
}

let seedCounter = 0;
function random(kind, shape, options = {}) {
  const s = checkShape(shape, `${kind === 0 ? 'randn' : 'rand'}(): shape`);
  let seed = options.seed ?? seedCounter++;
  seed = BigInt.asUintN(64, BigInt(seed));
  const lo = Number(seed & 0xffffffffn);
  const hi = Number(seed >> 32n);
  return wrap(
    withShape(s, (sp) => ex.tpw_random(kind, s.length, sp, lo, hi)),
    kind === 0 ? 'randn()' : 'rand()');
}

/** Standard normal float32, reproducible from options.seed (default: a counter). */
export function randn(shape, options) {
  return random(0, shape, options);
}

/** Uniform [0, 1) float32, reproducible from options.seed. */
export function rand(shape, options) {
  return random(1, shape, options);
}

/** A 0-d "weak" scalar tensor (follows the other operand's dtype). */
export function scalar(value) {
  const [v, isInt] = scalarValue(value, 'scalar()');
  return wrap(ex.tpw_scalar(v, isInt), 'scalar');
}
