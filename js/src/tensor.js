// tensor.js - the Tensor class (a u32 handle of the core) and memory safety
// (scope, dispose, a FinalizationRegistry safety net). Creation functions
// are in creation.js; the operators, and the Tensor methods that call them,
// in ops.js and ops_gen.js (generated from src/ops/ops.def). JS only
// marshals and checks argument types; shape rules, dim normalization,
// broadcasting and dtype promotion are decided in C.

import { DisposedError, TensorPlayError, Status, check, throwLast } from './errors.js';
import { float16ToFloat32, bfloat16ToFloat32 } from './half.js';

// The loaded core and its exports: live bindings that creation.js and
// ops.js import too (set once by bindCore).
/** @type {import('./loader.js').Core} */
export let core = null;
export let ex = null;

// the core's tp_dtype order; float16/bfloat16 elements are Uint16Array bit
// patterns (tp.float16ToFloat32 / tp.float32ToFloat16 convert, src/half.js)
export const DTYPES = Object.freeze(['float32', 'int32', 'int64', 'bool', 'float16', 'bfloat16', 'int8', 'uint8']);
const ITEMSIZE = [4, 4, 8, 1, 2, 2, 1, 1];
export const ARRAY_TYPES = [Float32Array, Int32Array, BigInt64Array, Uint8Array, Uint16Array, Uint16Array, Int8Array, Uint8Array];
const DTYPE_ALIASES = new Map([
  ['float32', 0], ['f32', 0],
  ['int32', 1], ['i32', 1],
  ['int64', 2], ['i64', 2],
  ['bool', 3], ['b8', 3],
  ['float16', 4], ['f16', 4],
  ['bfloat16', 5], ['bf16', 5],
  ['int8', 6], ['i8', 6],
  ['uint8', 7], ['u8', 7],
]);
export const MAX_DIMS = 8; // TP_MAX_DIMS
export const MAX_OPERANDS = 64; // TP_MAX_OPERANDS: operands of an op, results of a call or graph

/** Called once by index.js after the core is loaded. */
export function bindCore(c) {
  core = c;
  ex = c.exports;
}

// ---- shape reads during capture ---------------------------------------------
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
    if (ex.tpw_is_compiling() !== 0) noteShapeRead(h);
    return this._shapeArray(h).slice();
  }

  /** The shape without reporting a read (internal: printing, toList). */
  _shapeArray(h = this._handle()) {
    if (this._shape === null) {
      const nd = ex.tpw_tensor_ndim(h);
      if (nd < 0) throwLast(core, 'shape');
      const mark = core.stackSave();
      try {
        const p = (core.stackAlloc(8 * Math.max(nd, 1) + 8) + 7) & ~7; // int64[nd]
        check(core, ex.tpw_tensor_shape(h, p), 'shape');
        const i64 = core.views().i64;
        this._shape = Object.freeze(Array.from(i64.subarray(p >> 3, (p >> 3) + nd), Number)); // dims <= 2^40
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
    if (ex.tpw_is_compiling() !== 0) noteShapeRead(h);
    const n = ex.tpw_tensor_numel(h);
    if (n < 0) throwLast(core, 'size');
    return n;
  }

  /**
   * The elements in C order. toArray(): a new Float32Array, Int32Array,
   * BigInt64Array, Uint8Array (bool and uint8), Int8Array, or Uint16Array
   * (float16/bfloat16 bit patterns; toList gives numbers). toArray(out):
   * copies into the caller's typed array (of the tensor's array type and
   * exactly its element count) and returns it; nothing is allocated per call
   * (a contiguous tensor is copied straight out of the core's memory), so a
   * loop can reuse one output buffer.
   */
  toArray(out) {
    const h = this._handle();
    const d = dtypeCode(this.dtype);
    const n = ex.tpw_tensor_numel(h);
    if (n < 0) throwLast(core, 'toArray()');
    if (out !== undefined) return this._readInto(h, d, n, out);
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

  _readInto(h, d, n, out) {
    const T = ARRAY_TYPES[d];
    if (!(out instanceof T)) {
      const got = out === null ? 'null' : ArrayBuffer.isView(out) ? out.constructor.name : typeof out;
      throw new TypeError(`toArray(out): out must be a ${T.name} for a ${DTYPES[d]} tensor, got ${got}`);
    }
    if (out.length !== n) {
      throw new TensorPlayError(
        `toArray(out): out has ${out.length} elements, the tensor has ${n} (shape [${this._shapeArray(h).join(', ')}])`,
        Status.INVALID_ARG);
    }
    if (n === 0) return out;
    const bytes = n * ITEMSIZE[d];
    // outside a capture, a contiguous tensor is read in place; otherwise
    // through tpw_tensor_read (a graph break inside a capture; gathers views)
    const p = ex.tpw_is_compiling() === 0 ? ex.tpw_tensor_data_ptr(h) >>> 0 : 0;
    if (p !== 0) {
      out.set(new T(core.views().u8.buffer, p, n));
      return out;
    }
    const q = core.malloc(bytes);
    try {
      check(core, ex.tpw_tensor_read(h, q, bytes), 'toArray(out)');
      out.set(new T(core.views().u8.buffer, q, n));
    } finally {
      core.free(q);
    }
    return out;
  }

  /** Nested JS arrays (numbers, bigints for int64, booleans for bool). */
  toList() {
    let flat = this.toArray();
    if (this.dtype === 'float16') flat = float16ToFloat32(flat);
    else if (this.dtype === 'bfloat16') flat = bfloat16ToFloat32(flat);
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
    if (this.dtype === 'int64') {
      // exact: a number up to 2^53, a bigint past it (a double would round)
      if (ex.tpw_tensor_numel(h) !== 1) this._itemF64(h); // throws the core's error (no shape-read note)
      const b = this.toArray()[0];
      const n = Number(b);
      return Number.isSafeInteger(n) ? n : b;
    }
    const v = this._itemF64(h);
    return this.dtype === 'bool' ? v !== 0 : v;
  }

  _itemF64(h) {
    const mark = core.stackSave();
    try {
      const p = core.stackAlloc(8);
      check(core, ex.tpw_tensor_item(h, p), 'item()');
      return core.views().f64[p >> 3];
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

  // The operator methods (x.add(y), ...) are installed by ops_gen.js.
}

/** A Tensor that borrows a handle owned by the core (host calls). */
export function borrowTensor(handle) {
  return new Tensor(TOKEN, handle, true);
}

/** Wraps a new handle returned by the core (0 = failure: throws). */
export function wrapHandle(h, context) {
  h >>>= 0;
  if (h === 0) throwLast(core, context);
  return new Tensor(TOKEN, h, false);
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

/** Internal: takes t out of every open scope (long-lived tensors: parameters, optimizer state). */
export function keepOutOfScopes(t) {
  for (const list of scopes) {
    const i = list.lastIndexOf(t);
    if (i >= 0) list.splice(i, 1);
  }
  return t;
}

/** Number of live tensors in the core (leak checks). */
/**
 * memoryStats({ resetPeak }) -> { liveBytes, peakBytes }: the core's tensor
 * storage bytes live now and the most live at once since the last reset
 * (resetPeak: true starts the next period from liveBytes). Plans' arenas
 * are not tensor storage (explain() gives their arena_bytes).
 */
export function memoryStats(opts = {}) {
  if (opts === null || typeof opts !== 'object') throw new TypeError(`memoryStats: options must be an object, got ${opts === null ? 'null' : typeof opts}`);
  const peakBytes = ex.tpw_live_storage_peak(opts.resetPeak ? 1 : 0);
  return { liveBytes: ex.tpw_live_storage_bytes(), peakBytes };
}

export function liveTensors() {
  return ex.tpw_live_tensors();
}
