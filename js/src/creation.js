// creation.js - tensors from data, shapes and values: tensor(), zeros(),
// ones(), full(), arange(), randn(), rand(), scalar().

import { TensorPlayError, Status } from './errors.js';
import { Tensor, ARRAY_TYPES, MAX_DIMS, core, ex, dtypeCode, wrapHandle as wrap } from './tensor.js';

export function checkShape(shape, what = 'shape') {
  if (typeof shape === 'number') shape = [shape];
  if (!Array.isArray(shape) && !ArrayBuffer.isView(shape)) {
    throw new TypeError(`${what} must be an array of integers, got ${typeof shape}`);
  }
  shape = Array.from(shape);
  if (shape.length > MAX_DIMS) {
    throw new TensorPlayError(`${what}: at most ${MAX_DIMS} dims, got ${shape.length}`, Status.INVALID_ARG);
  }
  for (const s of shape) {
    if (!Number.isInteger(s)) throw new TypeError(`${what} must hold integers, got [${shape.join(', ')}]`);
  }
  return shape;
}

function withShape(shape, fn) {
  const mark = core.stackSave();
  try {
    const p = core.stackAlloc(4 * Math.max(shape.length, 1));
    core.views().i32.set(shape, p >> 2);
    return fn(p);
  } finally {
    core.stackRestore(mark);
  }
}

function typedDtype(a) {
  if (a instanceof Float32Array || a instanceof Float64Array) return 0;
  if (a instanceof BigInt64Array || a instanceof BigUint64Array) return 2;
  if (a instanceof Uint8Array || a instanceof Uint8ClampedArray) return 3;
  return 1; // other integer arrays
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

function toTypedArray(values, d) {
  const Ctor = ARRAY_TYPES[d];
  if (values instanceof Ctor) return values;
  const out = new Ctor(values.length);
  for (let i = 0; i < values.length; i++) {
    let v = values[i];
    if (d === 2) {
      out[i] = typeof v === 'bigint' ? v : BigInt(Math.trunc(Number(v)));
    } else if (d === 3) {
      out[i] = v ? 1 : 0;
    } else {
      if (typeof v === 'boolean') v = v ? 1 : 0;
      else if (typeof v === 'bigint') v = Number(v);
      else if (typeof v !== 'number') {
        throw new TypeError(`tensor(): elements must be numbers, booleans or bigints, got ${typeof v}`);
      }
      out[i] = v;
    }
  }
  return out;
}

/**
 * A tensor from data: a number, a (nested) array, or a typed array.
 * options.dtype: inferred from the typed array type (Float32Array/Float64Array
 * float32, Int32Array int32, BigInt64Array int64, Uint8Array bool), from
 * booleans (bool) or bigints (int64), else float32. options.shape reshapes
 * flat data.
 */
export function tensor(data, options = {}) {
  if (data instanceof Tensor) {
    data = data.toArray();
  }
  let shape;
  let flat;
  let d;
  if (ArrayBuffer.isView(data) && !(data instanceof DataView)) {
    d = typedDtype(data);
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
    const s = checkShape(options.shape);
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
  const typed = toTypedArray(flat, d);
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
  const s = checkShape(shape);
  const d = dtypeCode(options.dtype ?? 'float32');
  return wrap(withShape(s, (sp) => ex.tpw_tensor_new(d, s.length, sp, 0)), 'zeros()');
}

export function full(shape, value, options = {}) {
  const s = checkShape(shape);
  const d = dtypeCode(options.dtype ?? 'float32');
  return wrap(withShape(s, (sp) => ex.tpw_full(d, s.length, sp, Number(value))), 'full()');
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
  return wrap(ex.tpw_arange(Number(s), Number(e), Number(st), d), 'arange()');
}

let seedCounter = 0;
function random(kind, shape, options = {}) {
  const s = checkShape(shape);
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
  if (typeof value === 'boolean') value = value ? 1 : 0;
  return wrap(ex.tpw_scalar(Number(value), Number.isInteger(value) ? 1 : 0), 'scalar');
}
