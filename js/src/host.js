// host.js - what the frontend modules share: the host function table (the
// ids the core calls back through env.tp_host_call / env.tp_host_backend),
// stable identity keys for JS callables, tpw_value encoding (wasm/abi.h),
// Python-style type names for messages, and the "pending host error" that
// lets a JS exception thrown inside a callback surface unchanged.

import { Status, STATUS_NAMES, errorFromStatus } from './errors.js';
import { getCore } from './tensor.js';

// ---- the host function table ------------------------------------------------
// id -> entry. Entry kinds:
//   'compiled' the function given to compile(); invoke(tensors) rebuilds its
//              arguments from the current call's binding
//   'runner'   a function returned by a JS backend (called with the tensors)
//   'site'     one call site of a marked callable (arguments bound)
//   'backend'  a JS backend (called through env.tp_host_backend)
//   'hash'     a nestedCompileRegion reuseHashFn
// Identity keys (keyOf) come from the same counter, so a key is also a valid
// table id when the callable was registered in the table.
const table = new Map();
let nextId = 1;
const keys = new WeakMap();

export function newId() {
  return nextId++;
}

/** Registers an entry; returns its id. */
export function hostRegister(entry, id = nextId++) {
  table.set(id, entry);
  return id;
}

export function hostEntry(id) {
  return table.get(id);
}

export function hostRelease(id) {
  const e = table.get(id);
  if (!e) return;
  table.delete(id);
  if (e.onRelease) {
    try {
      e.onRelease();
    } catch {
      /* releasing must not throw into the core */
    }
  }
}

export function hostTableSize() {
  return table.size;
}

/** The stable host identity of a callable (or any object). */
export function keyOf(fn) {
  let k = keys.get(fn);
  if (k === undefined) {
    k = nextId++;
    keys.set(fn, k);
  }
  return k;
}

/** keyOf(fn) and an entry of `kind` under that key (used when the core may call it). */
export function keyedEntry(fn, kind, extra = {}) {
  const k = keyOf(fn);
  if (!table.has(k)) table.set(k, { kind, fn, name: fn.name || 'anonymous', ...extra });
  return k;
}

// ---- errors raised inside callbacks ------------------------------------------
// A JS exception thrown in a callback is reported to the core with
// tpw_set_host_error (status HOST). When the failing core call comes back with
// status HOST and that message, the original JS exception is rethrown;
// when the core turned it into its own error (a GraphCaptureError, say), the
// core's error is thrown with the JS exception as its cause.
let pending = null;

export function hostErrorText(e) {
  if (e instanceof Error) return e.name && e.name !== 'Error' ? `${e.name}: ${e.message}` : e.message;
  return String(e);
}

/** Reports e to the core (tpw_set_host_error) and remembers it. */
export function reportHostError(e, text = hostErrorText(e)) {
  const core = getCore();
  pending = { error: e, text };
  const p = core.mallocCString(text);
  try {
    core.exports.tpw_set_host_error(p);
  } finally {
    core.free(p);
  }
}

export function clearPending() {
  pending = null;
}

/** The error of the last failed core call, preferring the original JS exception. */
export function coreError(context) {
  const core = getCore();
  const ex = core.exports;
  let code = ex.tpw_last_status();
  let msg = core.readCString(ex.tpw_last_error());
  const p = pending;
  pending = null;
  if (p && code === Status.HOST && msg.includes(p.text)) return p.error;
  if (code === Status.OK) {
    code = Status.INTERNAL;
    msg = msg || 'the core reported a failure without a status';
  }
  if (context) msg = `${context}: ${msg}`;
  const err = errorFromStatus(code, msg);
  if (p && msg.includes(p.text) && err.cause === undefined) {
    try {
      Object.defineProperty(err, 'cause', { value: p.error, configurable: true, writable: true });
    } catch {
      /* ignore */
    }
  }
  return err;
}

export function throwCore(context) {
  throw coreError(context);
}

/** Throws the core's error when status is not OK. */
export function checkStatus(status, context) {
  if (status !== Status.OK) {
    const e = coreError(context);
    if (e.code !== undefined && e.code !== status && status > 0 && status < STATUS_NAMES.length &&
        !(e.code === Status.HOST)) {
      throw errorFromStatus(status, e.message);
    }
    throw e;
  }
}

/** The core's export `name` (every export the package calls is checked once at load: loader.js, CORE_EXPORTS). */
export function need(name) {
  return getCore().exports[name];
}

// ---- Python-style type names ---------------------------------------------------

/** The host type name of a JS value, as the core prints it ("<class 'int'>"). */
export function typeName(v) {
  if (v === null || v === undefined) return 'NoneType';
  switch (typeof v) {
    case 'boolean': return 'bool';
    case 'number': return Number.isInteger(v) ? 'int' : 'float';
    case 'bigint': return 'int';
    case 'string': return 'str';
    case 'symbol': return 'symbol';
    case 'function': return 'function';
    default: break;
  }
  if (Array.isArray(v)) return 'list';
  const proto = Object.getPrototypeOf(v);
  if (proto === Object.prototype || proto === null) return 'dict';
  return (proto && proto.constructor && proto.constructor.name) || 'object';
}

export function typeRepr(v) {
  return `<class '${typeName(v)}'>`;
}

export function isPlainObject(v) {
  if (v === null || typeof v !== 'object') return false;
  const p = Object.getPrototypeOf(v);
  return p === Object.prototype || p === null;
}

export function fnRepr(fn) {
  return `<function ${(typeof fn === 'function' && fn.name) || 'anonymous'}>`;
}

// ---- tpw_value ------------------------------------------------------------------
// struct tpw_value { i32 kind; i32 id; f64 num; const char *str; const char *type; } = 24 bytes.
export const VALUE_SIZE = 24;
export const KIND = Object.freeze({ NONE: 0, BOOL: 1, INT: 2, FLOAT: 3, STR: 4, OTHER: 5 });

/**
 * Describes a JS value as a tpw_value: booleans -> bool, integral numbers ->
 * int (JS cannot tell 1 from 1.0), other numbers -> float, bigints -> int,
 * strings -> str, null/undefined -> None, anything else -> other with its
 * type name (functions also carry their host id when `fnId` is given).
 */
export function describeValue(v, { fnId = 0, typeOverride } = {}) {
  if (v === null || v === undefined) return { kind: KIND.NONE };
  switch (typeof v) {
    case 'boolean': return { kind: KIND.BOOL, num: v ? 1 : 0 };
    case 'number': return Number.isInteger(v) ? { kind: KIND.INT, num: v } : { kind: KIND.FLOAT, num: v };
    case 'bigint': return { kind: KIND.INT, num: Number(v) };
    case 'string': return { kind: KIND.STR, str: v };
    default: return { kind: KIND.OTHER, id: fnId, type: typeOverride ?? typeName(v) };
  }
}

/**
 * Writes descriptors at ptr (VALUE_SIZE each); strings are malloc'ed and
 * pushed to `strings` (the caller frees them after the call).
 */
export function writeValues(ptr, descs, strings) {
  const core = getCore();
  for (let i = 0; i < descs.length; i++) {
    const d = descs[i];
    const base = ptr + i * VALUE_SIZE;
    const s = d.str !== undefined ? core.mallocCString(d.str) : 0;
    if (s) strings.push(s);
    const t = d.type !== undefined ? core.mallocCString(d.type) : 0;
    if (t) strings.push(t);
    const v = core.views();
    v.i32[base >> 2] = d.kind;
    v.i32[(base >> 2) + 1] = d.id ?? 0;
    v.f64[(base + 8) >> 3] = d.num ?? 0;
    v.u32[(base + 16) >> 2] = s;
    v.u32[(base + 20) >> 2] = t;
  }
}

/** Reads a tpw_value at ptr: { kind, id, num, str, type } and its JS value. */
export function readValue(ptr) {
  const core = getCore();
  const v = core.views();
  const kind = v.i32[ptr >> 2];
  const id = v.i32[(ptr >> 2) + 1];
  const num = v.f64[(ptr + 8) >> 3];
  const sp = v.u32[(ptr + 16) >> 2];
  const tp = v.u32[(ptr + 20) >> 2];
  const str = sp ? core.readCString(sp) : '';
  const type = tp ? core.readCString(tp) : '';
  let value;
  switch (kind) {
    case KIND.NONE: value = null; break;
    case KIND.BOOL: value = num !== 0; break;
    case KIND.INT:
    case KIND.FLOAT: value = num; break;
    case KIND.STR: value = str; break;
    default: value = undefined; break;
  }
  return { kind, id, num, str, type, value };
}

/**
 * Runs fn(alloc) with a scratch area: alloc.str(s) -> C string (0 for
 * null/undefined), alloc.bytes(n) -> stack memory, alloc.values(descs) ->
 * tpw_value array, alloc.ptrs(list) -> array of u32 pointers. Everything
 * is freed after fn returns.
 */
export function withScratch(fn) {
  const core = getCore();
  const mark = core.stackSave();
  const strings = [];
  const alloc = {
    str(s) {
      if (s === null || s === undefined) return 0;
      const p = core.mallocCString(s);
      strings.push(p);
      return p;
    },
    bytes(n) {
      return core.stackAlloc(n);
    },
    values(descs) {
      const p = core.stackAlloc(VALUE_SIZE * Math.max(descs.length, 1));
      writeValues(p, descs, strings);
      return p;
    },
    ptrs(list) {
      const p = core.stackAlloc(4 * Math.max(list.length, 1));
      core.views().u32.set(list, p >> 2);
      return p;
    },
    u32(list) {
      const p = core.stackAlloc(4 * Math.max(list.length, 1));
      core.views().u32.set(list, p >> 2);
      return p;
    },
  };
  try {
    return fn(alloc);
  } finally {
    core.stackRestore(mark);
    for (const p of strings) core.free(p);
  }
}

/** Reads and frees a malloc'ed C string returned by the core (0 -> null). */
export function takeString(p) {
  p >>>= 0;
  if (p === 0) return null;
  const core = getCore();
  try {
    return core.readCString(p);
  } finally {
    core.free(p);
  }
}

/** The env var of the host (Node), or undefined. */
export function envVar(name) {
  try {
    if (typeof process !== 'undefined' && process.env) return process.env[name];
  } catch {
    /* browsers */
  }
  return undefined;
}
