// tensor.js - the Tensor class (a u32 handle of the core), tensor creation,
// the operators, and memory safety (scope, dispose, a FinalizationRegistry
// safety net). JS only marshals and checks argument types; shape rules, dim
// normalization, broadcasting and dtype promotion are decided in C.

import { DisposedError, TensorPlayError, Status, check, throwLast } from './errors.js';

/** @type {import('./loader.js').Core} */
let core = null;
let ex = null;

export const DTYPES = Object.freeze(['float32', 'int32', 'int64', 'bool']);
const ITEMSIZE = [4, 4, 8, 1];
const ARRAY_TYPES = [Float32Array, Int32Array, BigInt64Array, Uint8Array];
const DTYPE_ALIASES = new Map([
  ['float32', 0], ['f32', 0],
  ['int32', 1], ['i32', 1],
  ['int64', 2], ['i64', 2],
  ['bool', 3], ['b8', 3],
]);
const ATTR_LEN = 20;
const SLICE_END_MAX = 9.2e18; // "to the end": C clamps it (INT64_MAX in spirit)
const MAX_DIMS = 8;

/** Called once by index.js after the core is loaded. */
export function bindCore(c) {
  core = c;
  ex = c.exports;
  noteShapes = typeof ex.tpw_note_shape_read === 'function' && typeof ex.tpw_is_compiling === 'function';
}

// ---- shape reads during capture ---------------------------------------------
let noteShapes = false;
// Frames in files under js/ (this package) are skipped: `where` is the
// user's line that read the shape.
const PKG_DIR = new URL('..', import.meta.url).href; // .../js/

function userFrame() {
  const limit = Error.stackTraceLimit;
  let stack = '';
  try {
    Error.stackTraceLimit = 40;
    stack = new Error().stack || '';
  } catch {
    return null;
  } finally {
    Error.stackTraceLimit = limit;
  }
  for (const line of stack.split('\n').slice(1)) {
    const m = /\(?((?:file|https?|node):[^)\s]*?|\/[^)\s]*?):(\d+):(\d+)\)?\s*$/.exec(line);
    if (!m) continue;
    let url = m[1];
    if (url.startsWith('/')) url = `file://${url}`;
    if (url.startsWith(PKG_DIR) || url.startsWith('node:')) continue;
    const fn = /^\s*at\s+(?:async\s+)?([^\s(]+)\s+\(/.exec(line);
    const file = url.slice(url.lastIndexOf('/') + 1);
    const where = `${file}:${m[2]}${fn && fn[1] !== '<anonymous>' ? ` in ${fn[1]}` : ''}`;
    return where.length > 95 ? where.slice(0, 95) : where;
  }
  return null;
}

function noteShapeRead(h) {
  const where = userFrame();
  const p = where ? core.mallocCString(where) : 0;
  try {
    ex.tpw_note_shape_read(h, p);
  } finally {
    core.free(p);
  }
}

export function getCore() {
  return core;
}

/** dtype name -> code. Throws TensorPlayError(INVALID_ARG) for unknown names. */
export function dtypeCode(name) {
  if (typeof name === 'number' && DTYPES[name] !== undefined) return name;
  const code = DTYPE_ALIASES.get(name);
  if (code === undefined) {
    throw new TensorPlayError(
      `unknown dtype ${JSON.stringify(name)} (expected one of ${DTYPES.join(', ')})`,
      Status.INVALID_ARG);
  }
  return code;
}

// ---- lifetime ------------------------------------------------------------

const registry =
  typeof FinalizationRegistry !== 'undefined'
    ? new FinalizationRegistry((h) => {
        // A Tensor was garbage-collected without dispose(): free its handle.
        try {
          if (ex) ex.tpw_tensor_free(h);
        } catch {
          /* the core may be gone */
        }
      })
    : null;

/** Stack of open scopes; each is the list of tensors created inside it. */
const scopes = [];
const TOKEN = Symbol('tensorplay.internal');

export class Tensor {
  constructor(token, handle, borrowed = false) {
    if (token !== TOKEN) {
      throw new TypeError('Tensor cannot be constructed directly; use tp.tensor(), tp.zeros(), ...');
    }
    this._h = handle >>> 0;
    this._borrowed = borrowed;
    this._disposed = false;
    this._shape = null;
    this._dtype = -1;
    if (!borrowed) {
      if (registry) registry.register(this, this._h, this);
      if (scopes.length) scopes[scopes.length - 1].push(this);
    }
  }

  /** Wraps a raw handle (testing and internal use). The Tensor owns it. */
  static _fromHandle(handle) {
    return new Tensor(TOKEN, handle, false);
  }

  /** The handle; throws DisposedError after dispose(). */
  _handle() {
    if (this._disposed) throw new DisposedError('tensor was disposed');
    return this._h;
  }

  get disposed() {
    return this._disposed;
  }

  get handle() {
    return this._handle();
  }

  /** The rank (not a shape read: ranks are always guarded). */
  get ndim() {
    const h = this._handle();
    if (this._shape !== null) return this._shape.length;
    const nd = ex.tpw_tensor_ndim(h);
    if (nd < 0) throwLast(core, 'ndim');
    return nd;
  }

  /**
   * The shape, as a new array. Inside a capture the read is reported to the
   * core (tpw_note_shape_read, with the user's source line), which then
   * guards this input's exact shape even when compiling with dynamic: true.
   */
  get shape() {
    const h = this._handle();
    if (noteShapes && ex.tpw_is_compiling() !== 0) noteShapeRead(h);
    return this._shapeArray(h).slice();
  }

  /** The shape without reporting a read (internal: printing, toList). */
  _shapeArray(h = this._handle()) {
    if (this._shape === null) {
      const nd = ex.tpw_tensor_ndim(h);
      if (nd < 0) throwLast(core, 'shape');
      const mark = core.stackSave();
      try {
        const p = core.stackAlloc(4 * Math.max(nd, 1));
        check(core, ex.tpw_tensor_shape(h, p), 'shape');
        const i32 = core.views().i32;
        this._shape = Object.freeze(Array.from(i32.subarray(p >> 2, (p >> 2) + nd)));
      } finally {
        core.stackRestore(mark);
      }
    }
    return this._shape;
  }

  get dtype() {
    const h = this._handle();
    if (this._dtype < 0) {
      const d = ex.tpw_tensor_dtype(h);
      if (d < 0) throwLast(core, 'dtype');
      this._dtype = d;
    }
    return DTYPES[this._dtype];
  }

  /** Number of elements (a shape read inside a capture, like .shape). */
  get size() {
    const h = this._handle();
    if (noteShapes && ex.tpw_is_compiling() !== 0) noteShapeRead(h);
    const n = ex.tpw_tensor_numel(h);
    if (n < 0) throwLast(core, 'size');
    return n;
  }

  /** A copy of the elements in C order: Float32Array, Int32Array, BigInt64Array or Uint8Array (bool). */
  toArray() {
    const h = this._handle();
    const d = dtypeCode(this.dtype);
    const n = ex.tpw_tensor_numel(h);
    if (n < 0) throwLast(core, 'toArray()');
    const bytes = n * ITEMSIZE[d];
    const p = core.malloc(bytes);
    try {
      check(core, ex.tpw_tensor_read(h, p, bytes), 'toArray()');
      const copy = core.views().u8.slice(p, p + bytes);
      return new ARRAY_TYPES[d](copy.buffer, 0, n);
    } finally {
      core.free(p);
    }
  }

  /** Nested JS arrays (numbers, bigints for int64, booleans for bool). */
  toList() {
    const flat = this.toArray();
    const isBool = this.dtype === 'bool';
    const shape = this._shapeArray();
    let i = 0;
    const build = (k) => {
      if (k === shape.length) {
        const v = flat[i++];
        return isBool ? v !== 0 : v;
      }
      const out = new Array(shape[k]);
      for (let j = 0; j < shape[k]; j++) out[j] = build(k + 1);
      return out;
    };
    return build(0);
  }

  /** The value of a one-element tensor (boolean for bool tensors). */
  item() {
    const h = this._handle();
    const mark = core.stackSave();
    try {
      const p = core.stackAlloc(8);
      check(core, ex.tpw_tensor_item(h, p), 'item()');
      const v = core.views().f64[p >> 3];
      return this.dtype === 'bool' ? v !== 0 : v;
    } finally {
      core.stackRestore(mark);
    }
  }

  /** Frees the handle. Idempotent; any later use throws DisposedError. */
  dispose() {
    if (this._disposed) return;
    this._disposed = true;
    if (this._borrowed) return; // the core owns borrowed handles
    if (registry) registry.unregister(this);
    check(core, ex.tpw_tensor_free(this._h), 'dispose()');
  }

  /** Marks the handle as handed over to the core (no free). */
  _release() {
    this._disposed = true;
    if (!this._borrowed && registry) registry.unregister(this);
  }

  toString() {
    if (this._disposed) return 'Tensor(<disposed>)';
    return `Tensor(shape=[${this._shapeArray().join(', ')}], dtype=${this.dtype})`;
  }

  [Symbol.for('nodejs.util.inspect.custom')]() {
    return this.toString();
  }

  // ---- operators as methods ----
  add(b) { return add(this, b); }
  sub(b) { return sub(this, b); }
  mul(b) { return mul(this, b); }
  div(b) { return div(this, b); }
  eq(b) { return eq(this, b); }
  lt(b) { return lt(this, b); }
  gt(b) { return gt(this, b); }
  /** torch style: x.where(cond, y) = where(cond, x, y) */
  where(cond, other) { return where(cond, this, other); }
  neg() { return neg(this); }
  abs() { return abs(this); }
  exp() { return exp(this); }
  log() { return log(this); }
  sqrt() { return sqrt(this); }
  rsqrt() { return rsqrt(this); }
  tanh() { return tanh(this); }
  sigmoid() { return sigmoid(this); }
  relu() { return relu(this); }
  gelu(opts) { return gelu(this, opts); }
  matmul(b) { return matmul(this, b); }
  linear(w, b) { return linear(this, w, b); }
  conv2d(weight, bias, opts) { return conv2d(this, weight, bias, opts); }
  maxPool2d(kernelSize, opts) { return maxPool2d(this, kernelSize, opts); }
  avgPool2d(kernelSize, opts) { return avgPool2d(this, kernelSize, opts); }
  sum(opts) { return sum(this, opts); }
  mean(opts) { return mean(this, opts); }
  max(opts) { return max(this, opts); }
  min(opts) { return min(this, opts); }
  softmax(dim) { return softmax(this, dim); }
  logSoftmax(dim) { return logSoftmax(this, dim); }
  layerNorm(normalizedShape, weight, bias, opts) { return layerNorm(this, normalizedShape, weight, bias, opts); }
  reshape(...shape) { return reshape(this, ...shape); }
  transpose(d0, d1) { return transpose(this, d0, d1); }
  permute(...perm) { return permute(this, ...perm); }
  slice(dim, start, end, step) { return slice(this, dim, start, end, step); }
  cast(dtype) { return cast(this, dtype); }
}

/** A Tensor that borrows a handle owned by the core (host calls). */
export function borrowTensor(handle) {
  return new Tensor(TOKEN, handle, true);
}

function wrap(h, context) {
  h >>>= 0;
  if (h === 0) throwLast(core, context);
  return new Tensor(TOKEN, h, false);
}

/** Wraps a new handle returned by the core (0 = failure: throws). */
export function wrapHandle(h, context) {
  return wrap(h, context);
}

/**
 * Runs fn and disposes every tensor created during it, except those reachable
 * from its return value (arrays, plain objects, Maps/Sets are searched); the
 * kept tensors move to the enclosing scope. Scopes nest. fn must be
 * synchronous: a returned Promise is rejected with a TypeError.
 */
export function scope(fn) {
  const { result, created } = runInScope(fn, []);
  const keep = new Set();
  collectTensors(result, keep);
  disposeExcept(created, keep);
  if (scopes.length) {
    const parent = scopes[scopes.length - 1];
    for (const t of created) if (keep.has(t) && !t._disposed) parent.push(t);
  }
  return result;
}

/** Internal: runs fn(...args) in a new scope; returns the result and the tensors created. */
export function runInScope(fn, args) {
  const created = [];
  scopes.push(created);
  let result;
  try {
    result = fn(...args);
  } catch (e) {
    scopes.pop();
    disposeExcept(created, null);
    throw e;
  }
  scopes.pop();
  if (result !== null && typeof result === 'object' && typeof result.then === 'function') {
    disposeExcept(created, null);
    throw new TypeError('tp.scope(fn): fn must be synchronous (it returned a Promise)');
  }
  return { result, created };
}

export function disposeExcept(list, keep) {
  let first = null;
  for (const t of list) {
    if (t._disposed || (keep && keep.has(t))) continue;
    try {
      t.dispose();
    } catch (e) {
      first ??= e;
    }
  }
  if (first) throw first;
}

export function collectTensors(v, out, seen = new Set()) {
  if (v instanceof Tensor) {
    out.add(v);
    return;
  }
  if (v === null || typeof v !== 'object' || seen.has(v)) return;
  seen.add(v);
  if (Array.isArray(v)) for (const x of v) collectTensors(x, out, seen);
  else if (v instanceof Map) for (const x of v.values()) collectTensors(x, out, seen);
  else if (v instanceof Set) for (const x of v) collectTensors(x, out, seen);
  else if (Object.getPrototypeOf(v) === Object.prototype || Object.getPrototypeOf(v) === null) {
    for (const k of Object.keys(v)) collectTensors(v[k], out, seen);
  }
}

/** Number of live tensors in the core (leak checks). */
export function liveTensors() {
  return ex.tpw_live_tensors();
}

// ---- creation -------------------------------------------------------------

function checkShape(shape, what = 'shape') {
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

// ---- operators ------------------------------------------------------------

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

function packAttrs(f64, base, a) {
  f64.fill(0, base, base + ATTR_LEN);
  const ints = a.ints ?? [];
  f64[base] = ints.length;
  for (let i = 0; i < ints.length; i++) f64[base + 1 + i] = ints[i];
  f64[base + 9] = a.dim ?? 0;
  f64[base + 10] = a.dim1 ?? 0;
  f64[base + 11] = a.start ?? 0;
  f64[base + 12] = a.end ?? SLICE_END_MAX;
  f64[base + 13] = a.step ?? 1;
  f64[base + 14] = a.eps ?? 1e-5;
  f64[base + 15] = a.keepdim ? 1 : 0;
  f64[base + 16] = a.approximate ?? 0;
  f64[base + 17] = a.dtype ?? 0;
}

/**
 * Calls operator `name` on inputs (Tensors, numbers -> weak scalars, or
 * null for an absent optional operand) with attributes `attrs`.
 */
export function callOp(name, inputs, attrs = {}) {
  const id = opId(name);
  if (attrs.ints && attrs.ints.length > MAX_DIMS) {
    throw new TensorPlayError(`${name}: at most ${MAX_DIMS} dims, got ${attrs.ints.length}`, Status.INVALID_ARG);
  }
  const temps = [];
  const mark = core.stackSave();
  try {
    const handles = inputs.map((t, i) => {
      if (t === null || t === undefined) return 0;
      if (t instanceof Tensor) return t._handle();
      if (typeof t === 'number' || typeof t === 'boolean') {
        const v = Number(t);
        const h = ex.tpw_scalar(v, Number.isInteger(v) ? 1 : 0) >>> 0;
        if (h === 0) throwLast(core, `${name}: scalar operand`);
        temps.push(h);
        return h;
      }
      throw new TypeError(`${name}: operand ${i} must be a Tensor or a number, got ${t === null ? 'null' : typeof t}`);
    });
    const inPtr = core.stackAlloc(4 * Math.max(handles.length, 1));
    const aPtr = core.stackAlloc(8 * ATTR_LEN);
    const v = core.views();
    v.u32.set(handles, inPtr >> 2);
    packAttrs(v.f64, aPtr >> 3, attrs);
    return wrap(ex.tpw_op(id, handles.length, inPtr, aPtr), null);
  } finally {
    core.stackRestore(mark);
    for (const h of temps) ex.tpw_tensor_free(h);
  }
}

const bin = (name) => (a, b) => callOp(name, [a, b]);
const un = (name) => (a) => callOp(name, [a]);

export const add = bin('add');
export const sub = bin('sub');
export const mul = bin('mul');
export const div = bin('div');
export const eq = bin('eq');
export const lt = bin('lt');
export const gt = bin('gt');
export const matmul = bin('matmul');
export const neg = un('neg');
export const abs = un('abs');
export const exp = un('exp');
export const log = un('log');
export const sqrt = un('sqrt');
export const rsqrt = un('rsqrt');
export const tanh = un('tanh');
export const sigmoid = un('sigmoid');
export const relu = un('relu');

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
  const stride = pairArg(options.stride ?? 1, 'conv2d: stride', 1);
  const dilation = pairArg(options.dilation ?? 1, 'conv2d: dilation', 1);
  const groups = options.groups ?? 1;
  if (!Number.isInteger(groups) || groups < 1) {
    throw new TensorPlayError(`conv2d: groups must be an integer >= 1, got ${JSON.stringify(groups)}`, Status.INVALID_ARG);
  }
  let pad = options.padding ?? 0;
  if (pad === 'valid') pad = 0;
  if (pad === 'same') {
    if (stride[0] !== 1 || stride[1] !== 1) {
      throw new TensorPlayError("conv2d: padding 'same' needs stride 1", Status.INVALID_ARG);
    }
    if (!(weight instanceof Tensor)) throw new TypeError('conv2d: weight must be a Tensor');
    const k = weight.shape.slice(-2);
    const tot = [0, 1].map((i) => dilation[i] * ((k[i] ?? 1) - 1));
    pad = [Math.floor(tot[0] / 2), Math.floor(tot[1] / 2), tot[0] - Math.floor(tot[0] / 2), tot[1] - Math.floor(tot[1] / 2)];
  } else if (Array.isArray(pad) && pad.length === 4) {
    if (!pad.every((e) => Number.isInteger(e) && e >= 0)) {
      throw new TensorPlayError(`conv2d: padding must hold integers >= 0, got ${JSON.stringify(pad)}`, Status.INVALID_ARG);
    }
  } else {
    const p = pairArg(pad, "conv2d: padding (or 'same', 'valid', [top, left, bottom, right])", 0);
    pad = [p[0], p[1], p[0], p[1]];
  }
  return callOp('conv2d', [x, weight, bias ?? null], { ints: [...stride, ...pad, ...dilation], dim: groups });
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

function dimsArg(args, what) {
  const dims = args.length === 1 && (Array.isArray(args[0]) || ArrayBuffer.isView(args[0])) ? Array.from(args[0]) : args;
  return checkShape(dims, what);
}

/** reshape(x, shape) or reshape(x, ...dims); one -1 allowed. */
export function reshape(x, ...shape) {
  return callOp('reshape', [x], { ints: dimsArg(shape, 'reshape: shape') });
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
    end: end === undefined || end === null ? SLICE_END_MAX : intArg(end, 'slice: end'),
    step: step === undefined || step === null ? 1 : intArg(step, 'slice: step'),
  });
}

/** concat(list, dim = 0) */
export function concat(list, dim = 0) {
  if (!Array.isArray(list)) throw new TypeError('concat: expected an array of tensors');
  return callOp('concat', list, { dim: intArg(dim, 'concat: dim') });
}

export function cast(x, dtype) {
  return callOp('cast', [x], { dtype: dtypeCode(dtype) });
}

/** Every operator by its JS name (functional forms). */
export const ops = Object.freeze({
  add, sub, mul, div, eq, lt, gt, where, neg, abs, exp, log, sqrt, rsqrt, tanh,
  sigmoid, relu, gelu, matmul, linear, conv2d, maxPool2d, avgPool2d, sum, mean, max, min, softmax, logSoftmax,
  layerNorm, reshape, transpose, permute, slice, concat, cast,
});
