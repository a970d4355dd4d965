// frontend.js - the capture modes of the seed (allowInGraph, nonstrictTrace,
// disable, assumeConstantResult, substituteInGraph, nestedCompileRegion),
// markers, disableCapture, isExporting and the annotations.
//
// The records registry lives in the core (tpw_rec_*). JS cannot intercept a
// plain call, so each mode returns an ADAPTER: calling it flattens the
// tensor arguments to handles, registers this call site (the original bound
// to the same non-tensor arguments) in the host function table, and asks
// the core what to do (tpw_rec_invoke): call the original, call the
// replacement, compute/reuse a constant, or use the outputs of the opaque
// region the core recorded.

import { AssertionError, GraphCaptureError, RuntimeError, ValueError } from './errors.js';
import { getCore, wrapHandle, MAX_OPERANDS } from './tensor.js';
import { scalar } from './creation.js';
import {
  checkStatus,
  fnRepr,
  hostRegister,
  hostRelease,
  isPlainObject,
  keyOf,
  keyedEntry,
  need,
  throwCore,
  typeRepr,
  withScratch,
} from './host.js';
import { argsKey, countTensors, flattenArgs, flattenOutput, rebuild, rebuildResult } from './structure.js';

const MAX_OUT = MAX_OPERANDS; // TP_MAX_OPERANDS results at most

/** Symbols set on marked callables (the seed's __tensorplay_compiler_*__ attributes). */
export const MARKERS = Object.freeze({
  mode: Symbol.for('tensorplay.compiler.mode'),
  export: Symbol.for('tensorplay.compiler.export'),
  unused: Symbol.for('tensorplay.compiler.unused'),
  overload: Symbol.for('tensorplay.compiler.overload'),
  original: Symbol.for('tensorplay.compiler.original'),
});

/** Record modes, in the order of tp_rec_mode (src/capture/records.h). */
export const MODES = Object.freeze(['allow', 'nonstrict', 'disabled', 'constant', 'substitute', 'nested']);
const M = Object.freeze(Object.fromEntries(MODES.map((m, i) => [m, i])));

const CALL_ORIGINAL = -2;
const CALL_REPLACEMENT = -3;
const NEED_CONSTANT = -4;
const CONSTANT_READY = -5;

/** record id -> JS state { id, mode, original, adapter, replacement, templates, lastTemplate } */
const records = new Map();
/** record id -> the JS side of a constant result { tpl } (tensors live in the core) */
const constants = new Map();

function setMarker(fn, sym, value) {
  try {
    Object.defineProperty(fn, sym, { value, configurable: true, enumerable: false, writable: true });
  } catch {
    /* frozen: the seed ignores it too */
  }
}

function isClass(fn) {
  try {
    return /^class\b/.test(Function.prototype.toString.call(fn));
  } catch {
    return false;
  }
}

// ---- registration ---------------------------------------------------------------

function register(fn, mode, params = {}) {
  const p = new Int32Array(10);
  p[0] = params.replacement ? keyOf(params.replacement) : 0;
  p[1] = params.canConstantFoldThrough ? 1 : 0;
  p[2] = params.skipSignatureCheck ? 1 : 0;
  p[3] = params.recursive === false ? 0 : 1;
  p[4] = params.options ? 1 : 0;
  p[5] = params.fwCompiler ? keyedEntry(params.fwCompiler, 'backend') : 0;
  p[6] = params.bwCompiler ? keyedEntry(params.bwCompiler, 'backend') : 0;
  p[7] = params.maxReuseEntries ?? 8;
  p[8] = params.reuseHashFn ? hashKey(params.reuseHashFn) : 0;
  const id = withScratch((a) => {
    const pp = a.bytes(40);
    getCore().views().i32.set(p, pp >> 2);
    const reason = params.reason === undefined || params.reason === null ? 0 : a.str(String(params.reason));
    return need('tpw_rec_register')(keyOf(fn), a.str(fnRepr(fn)), M[mode], pp, reason);
  });
  if (id <= 0) throwCore();
  let st = records.get(id);
  if (!st) {
    st = {
      id,
      mode,
      original: fn,
      adapter: null,
      replacement: params.replacement ?? null,
      reason: params.reason ?? null,
      reuseHashFn: params.reuseHashFn ?? null,
      templates: new Map(),
      lastTemplate: null,
    };
    records.set(id, st);
  }
  setMarker(fn, MARKERS.mode, MODES[need('tpw_rec_mode')(id)] ?? mode);
  return st;
}

// reuseHashFn: called by the core (if it does) through tp_host_call with the
// call site's tensors; its integer result goes back as a 0-d int tensor.
const hashBindings = [];
function hashKey(fn) {
  return keyedEntry(fn, 'hash', {
    invoke(tensors) {
      const b = hashBindings[hashBindings.length - 1];
      const args = b ? rebuild(b.tpl, tensors) : tensors;
      let v;
      try {
        v = fn(...args);
      } catch (e) {
        throw new GraphCaptureError('nested compile region reuse_hash_fn failed', { cause: e });
      }
      if (typeof v === 'bigint') v = Number(v);
      if (typeof v !== 'number' || !Number.isInteger(v)) {
        throw new GraphCaptureError('nested compile region reuse_hash_fn must return an integer');
      }
      return scalar(v);
    },
  });
}

// ---- adapters -------------------------------------------------------------------

function templateKey(tpl, n) {
  return `${argsKey(tpl.a ?? [tpl])}#${n}`;
}

function adapterFor(st) {
  if (st.adapter) return st.adapter;
  const original = st.original;
  const name = original.name || 'anonymous';
  const adapter = {
    [name](...args) {
      const { tensors, tpl } = flattenArgs(args);
      if (tensors.length === 0) return original.apply(this, args);
      const self = this;
      const site = {
        kind: 'site',
        name,
        strict: true,
        template: null,
        invoke(ts) {
          return original.apply(self, rebuild(tpl, ts));
        },
      };
      const callId = hostRegister(site);
      const ex = getCore().exports;
      const core = getCore();
      const mark = core.stackSave();
      let n;
      hashBindings.push({ tpl });
      site.sampling = true;
      if (st.mode === 'nested' && ex.tpw_is_compiling()) setNestedKey(st, args, tpl);
      try {
        const inPtr = core.stackAlloc(4 * tensors.length);
        const outPtr = core.stackAlloc(4 * MAX_OUT);
        core.views().u32.set(tensors.map((t) => t._handle()), inPtr >> 2);
        n = need('tpw_rec_invoke')(st.id, callId, tensors.length, inPtr, outPtr, MAX_OUT);
        if (n >= 0) {
          const u32 = core.views().u32;
          const outs = [];
          for (let i = 0; i < n; i++) outs.push(wrapHandle(u32[(outPtr >> 2) + i]));
          const key = templateKey(tpl, n);
          let t = site.template;
          if (t) st.templates.set(key, t);
          else t = st.templates.get(key) ?? st.lastTemplate;
          if (t) st.lastTemplate = t;
          return rebuildResult(t, outs);
        }
        if (n === -1 || n < CONSTANT_READY) throwCore(name);
        // the core keeps no reference to the call site in these cases
      } finally {
        site.sampling = false;
        hashBindings.pop();
        core.stackRestore(mark);
        if (n === undefined || n < 0) hostRelease(callId);
      }
      switch (n) {
        case CALL_ORIGINAL:
          return original.apply(this, args);
        case CALL_REPLACEMENT: {
          // substitute: trace the replacement; nested regions are traced
          // inline by this core (the original is "replaced" by itself)
          if (st.mode === 'nested') return original.apply(this, args);
          const r = st.replacement;
          if (typeof r !== 'function') throw new RuntimeError('substitution has no implementation');
          return r.apply(this, args);
        }
        case NEED_CONSTANT:
          return computeConstant(st, original.apply(this, args));
        case CONSTANT_READY:
          return readConstant(st);
        default:
          throw new Error(`tpw_rec_invoke returned ${n}`);
      }
    },
  }[name];
  setMarker(adapter, MARKERS.original, original);
  setMarker(adapter, MARKERS.mode, st.mode);
  st.adapter = adapter;
  checkStatus(need('tpw_rec_set_adapter')(st.id, keyOf(adapter)));
  return adapter;
}

// The reuse key of a nested region call (the core adds shapes, dtypes and a
// digest of the tensors' bytes): the integer reuseHashFn returns, or the
// key of the non-tensor arguments (values and identities).
function setNestedKey(st, args, tpl) {
  let key;
  if (st.reuseHashFn) {
    let v;
    try {
      v = st.reuseHashFn(...args);
    } catch (e) {
      throw new GraphCaptureError('nested compile region reuse_hash_fn failed', { cause: e });
    }
    if (typeof v === 'bigint') v = Number(v);
    if (typeof v !== 'number' || !Number.isInteger(v)) {
      throw new GraphCaptureError('nested compile region reuse_hash_fn must return an integer');
    }
    key = `hash:${v}`;
  } else {
    key = argsKey(tpl.a ?? [tpl]);
  }
  withScratch((a) => need('tpw_rec_set_key')(a.str(key)));
}

function computeConstant(st, value) {
  const tensors = [];
  const tpl = flattenOutput(value, tensors, false);
  const core = getCore();
  const mark = core.stackSave();
  try {
    const p = core.stackAlloc(4 * Math.max(tensors.length, 1));
    core.views().u32.set(tensors.map((t) => t._handle()), p >> 2);
    checkStatus(need('tpw_rec_set_constant')(st.id, tensors.length, p), 'assumeConstantResult');
  } finally {
    core.stackRestore(mark);
  }
  // The first value wins (as in the seed): read back what the core keeps.
  if (!constants.has(st.id)) constants.set(st.id, { tpl });
  return readConstant(st);
}

function readConstant(st) {
  const c = constants.get(st.id);
  const core = getCore();
  const mark = core.stackSave();
  try {
    const p = core.stackAlloc(4 * MAX_OUT);
    const n = need('tpw_rec_get_constant')(st.id, p, MAX_OUT);
    if (n < 0) throwCore('assumeConstantResult');
    const u32 = core.views().u32;
    const outs = [];
    for (let i = 0; i < n; i++) outs.push(wrapHandle(u32[(p >> 2) + i]));
    if (!c) return rebuildResult(null, outs);
    if (countTensors(c.tpl) !== n) return rebuildResult(null, outs);
    return rebuild(c.tpl, outs);
  } finally {
    core.stackRestore(mark);
  }
}

/** reset(): the core forgot the constants; forget their JS side. */
export function resetRecords() {
  constants.clear();
}

// ---- lookups for compile() --------------------------------------------------------

/** What compile(fn) compiles: { fn, disabled } following the seed's _unwrap_callable. */
export function unwrapForCompile(fn) {
  const id = getCore().exports.tpw_rec_lookup(keyOf(fn));
  if (id <= 0) return { fn, disabled: false };
  const st = records.get(id);
  if (!st) return { fn, disabled: false };
  const mode = MODES[getCore().exports.tpw_rec_mode(id)] ?? st.mode;
  if (mode === 'substitute') return { fn: adapterFor(st), disabled: false };
  return { fn: st.original, disabled: mode === 'disabled' };
}

// ---- the public functions ----------------------------------------------------------

/**
 * allowInGraph(fn) -> adapter (an array gives an array): calls through the
 * adapter become one opaque node in a captured graph. JS users must call
 * the returned adapter (the seed returns fn itself).
 */
export function allowInGraph(fn) {
  if (Array.isArray(fn)) return fn.map((f) => allowInGraph(f));
  if (typeof fn !== 'function') throw new AssertionError('allow_in_graph expects a callable');
  return adapterFor(register(fn, 'allow'));
}

/** disallowInGraph(fn) -> fn (inert metadata in eager, as in the seed). */
export function disallowInGraph(fn) {
  if (typeof fn !== 'function') throw new AssertionError('disallow_in_graph expects a callable');
  return fn;
}

/** markStatic(tensor, dim?) -> tensor (inert, as in the seed). */
export function markStatic(tensor, dim) { // eslint-disable-line no-unused-vars
  return tensor;
}

/** nonstrictTrace(fn) -> adapter: one opaque node with structured arguments. */
export function nonstrictTrace(fn) {
  if (typeof fn !== 'function') throw new AssertionError('nonstrict_trace expects a callable');
  return adapterFor(register(fn, 'nonstrict'));
}

/**
 * assumeConstantResult(fn) -> adapter: evaluated once during capture, the
 * value is baked into the graph and kept across captures until reset().
 */
export function assumeConstantResult(fn) {
  if (typeof fn !== 'function') throw new TypeError(`expected a callable, got ${typeRepr(fn)}`);
  return adapterFor(register(fn, 'constant'));
}

/**
 * disable(fn, { recursive = true, reason }) -> adapter: captured as one
 * opaque node that runs fn eagerly (capture suspended inside when
 * recursive). disable({ recursive, reason }) and disable() return a
 * decorator; disable(fn, false) is the positional form.
 */
export function disable(fn, opts) {
  if (isPlainObject(fn) && opts === undefined) {
    opts = fn;
    fn = undefined;
  }
  let recursive = true;
  let reason = null;
  if (typeof opts === 'boolean' || (opts !== undefined && opts !== null && !isPlainObject(opts))) {
    recursive = opts;
  } else if (opts) {
    if ('recursive' in opts) recursive = opts.recursive;
    reason = opts.reason ?? null;
  }
  if (typeof recursive !== 'boolean') throw new TypeError('recursive must be a bool');
  const decorate = (actual) => {
    if (typeof actual !== 'function') throw new AssertionError('fn must be callable');
    return adapterFor(register(actual, 'disabled', { reason, recursive }));
  };
  if (fn === undefined || fn === null) return decorate;
  return decorate(fn);
}

/**
 * nestedCompileRegion(fn, { options, maxReuseEntries = 8, reuseHashFn })
 * -> adapter: traced into a child graph once per input key and reused.
 * nestedCompileRegion({ ... }) and nestedCompileRegion() return a decorator.
 */
export function nestedCompileRegion(fn, opts) {
  if (isPlainObject(fn) && opts === undefined) {
    opts = fn;
    fn = undefined;
  }
  const { options = null, maxReuseEntries = 8, reuseHashFn = null } = opts ?? {};
  if (typeof maxReuseEntries !== 'number' || !Number.isInteger(maxReuseEntries)) {
    throw new TypeError('max_reuse_entries must be an integer');
  }
  if (maxReuseEntries < 1) throw new ValueError('max_reuse_entries must be positive');
  if (maxReuseEntries > 0x7fffffff) throw new ValueError('max_reuse_entries is too large');
  if (reuseHashFn !== null && reuseHashFn !== undefined && typeof reuseHashFn !== 'function') {
    throw new TypeError('reuse_hash_fn must be callable');
  }
  if (options !== null && options !== undefined && !(options instanceof NestedCompileRegionOptions)) {
    throw new TypeError('options must be a NestedCompileRegionOptions instance or None');
  }
  if (options && [options.fwCompiler, options.bwCompiler].some((c) => c !== null && c !== undefined && typeof c !== 'function')) {
    throw new TypeError('nested region compiler options must be callable or None');
  }
  const decorate = (actual) => {
    if (typeof actual !== 'function') throw new TypeError(`expected a callable, got ${typeRepr(actual)}`);
    return adapterFor(register(actual, 'nested', {
      options,
      fwCompiler: options?.fwCompiler ?? null,
      bwCompiler: options?.bwCompiler ?? null,
      maxReuseEntries,
      reuseHashFn: reuseHashFn ?? null,
    }));
  };
  if (fn === undefined || fn === null) return decorate;
  return decorate(fn);
}

/** Backend selections for a nested compile region (frozen, as the seed's dataclass). */
export class NestedCompileRegionOptions {
  constructor({ fwCompiler = null, bwCompiler = null } = {}) {
    this.fwCompiler = fwCompiler;
    this.bwCompiler = bwCompiler;
    Object.freeze(this);
  }
}

// ---- substitute_in_graph and signatures -------------------------------------------

/** Splits a parameter list at top-level commas. */
function splitTop(s) {
  const out = [];
  let depth = 0;
  let cur = '';
  let quote = null;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (quote) {
      cur += c;
      if (c === '\\') cur += s[++i] ?? '';
      else if (c === quote) quote = null;
      continue;
    }
    if (c === '"' || c === "'" || c === '`') quote = c;
    else if ('([{'.includes(c)) depth++;
    else if (')]}'.includes(c)) depth--;
    if (c === ',' && depth === 0) {
      out.push(cur.trim());
      cur = '';
    } else {
      cur += c;
    }
  }
  if (cur.trim()) out.push(cur.trim());
  return out;
}

function paramListOf(fn) {
  let src;
  try {
    src = Function.prototype.toString.call(fn);
  } catch {
    return null;
  }
  if (/\[native code\]/.test(src)) return null;
  let m = /^\s*(?:async\s+)?([A-Za-z_$][\w$]*)\s*=>/.exec(src);
  if (m) return m[1];
  // the balanced (...) after "function name", a method name, or an arrow
  const start = src.indexOf('(');
  if (start < 0) return null;
  const head = src.slice(0, start);
  if (/=>/.test(head) || /^\s*class\b/.test(head)) return null;
  let depth = 0;
  for (let i = start; i < src.length; i++) {
    const c = src[i];
    if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return src.slice(start + 1, i);
  }
  return null;
}

/**
 * The signature descriptor of a simple JS function, read from its source:
 * { positional, keywordOnly, defaults, wildcard }. A trailing destructured
 * object parameter ({ a, b = 2 } = {}) counts as keyword-only parameters;
 * `...args` alone is the wildcard. Defaults are compared as source text.
 * null when the source cannot be read simply (native or complex patterns).
 */
export function signatureOf(fn) {
  const list = paramListOf(fn);
  if (list === null) return null;
  const parts = splitTop(list.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/[^\n]*/g, ''));
  const positional = [];
  const keywordOnly = [];
  const defaults = {};
  let rest = false;
  for (let i = 0; i < parts.length; i++) {
    const p = parts[i];
    const last = i === parts.length - 1;
    if (p.startsWith('...')) {
      if (!/^\.\.\.\s*[A-Za-z_$][\w$]*$/.test(p)) return null;
      rest = true;
      continue;
    }
    if (p.startsWith('{') && last) {
      let depth = 0;
      let close = -1;
      for (let k = 0; k < p.length && close < 0; k++) {
        if (p[k] === '{') depth++;
        else if (p[k] === '}' && --depth === 0) close = k;
      }
      if (close < 0 || !/^\s*(?:=\s*\{\s*\})?$/.test(p.slice(close + 1))) return null;
      for (const q of splitTop(p.slice(1, close))) {
        const mm = /^([A-Za-z_$][\w$]*)\s*(?:=\s*([\s\S]+))?$/.exec(q);
        if (!mm) return null;
        keywordOnly.push(mm[1]);
        if (mm[2] !== undefined) defaults[mm[1]] = mm[2].trim();
      }
      continue;
    }
    const mm = /^([A-Za-z_$][\w$]*)\s*(?:=\s*([\s\S]+))?$/.exec(p);
    if (!mm) return null;
    positional.push(mm[1]);
    if (mm[2] !== undefined) defaults[mm[1]] = mm[2].trim();
  }
  return normalizeSignature({ positional, keywordOnly, defaults, wildcard: rest && !positional.length && !keywordOnly.length });
}

function normalizeSignature(d) {
  if (d === null || typeof d !== 'object') throw new TypeError('a signature descriptor must be an object');
  const positional = Array.from(d.positional ?? []);
  const keywordOnly = Array.from(d.keywordOnly ?? []);
  const defaults = { ...(d.defaults ?? {}) };
  if (![...positional, ...keywordOnly].every((n) => typeof n === 'string')) {
    throw new TypeError('signature descriptor: parameter names must be strings');
  }
  const wildcard = !!d.wildcard || (positional.length === 0 && keywordOnly.length === 0);
  return { positional, keywordOnly, defaults, wildcard };
}

function fmtDefault(v) {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

/** Python-style text of a descriptor: "(x, y=1, *, z)". */
export function formatSignature(d) {
  if (d.wildcard && !d.positional.length && !d.keywordOnly.length) return '(*args, **kwargs)';
  const items = d.positional.map((n) => (n in d.defaults ? `${n}=${fmtDefault(d.defaults[n])}` : n));
  if (d.keywordOnly.length) {
    items.push('*');
    for (const n of d.keywordOnly) items.push(n in d.defaults ? `${n}=${fmtDefault(d.defaults[n])}` : n);
  }
  return `(${items.join(', ')})`;
}

function sameSignature(a, b) {
  if (a.positional.length !== b.positional.length || a.positional.some((n, i) => n !== b.positional[i])) return false;
  const ka = new Set(a.keywordOnly);
  if (ka.size !== new Set(b.keywordOnly).size || b.keywordOnly.some((n) => !ka.has(n))) return false;
  const da = Object.keys(a.defaults);
  if (da.length !== Object.keys(b.defaults).length) return false;
  return da.every((k) => k in b.defaults && fmtDefault(a.defaults[k]) === fmtDefault(b.defaults[k]));
}

function checkSubstitutionSignature(original, replacement, { signature, replacementSignature }) {
  const os = signature ? normalizeSignature(signature) : signatureOf(original);
  if (os === null) return; // the original cannot be inspected: no check (as in the seed)
  const rs = replacementSignature ? normalizeSignature(replacementSignature) : signatureOf(replacement);
  if (rs === null) throw new TypeError('unable to inspect the replacement signature');
  if (!sameSignature(os, rs) && !os.wildcard && !rs.wildcard) {
    throw new TypeError(`substitution signature ${formatSignature(rs)} does not match ${formatSignature(os)}`);
  }
}

/**
 * substituteInGraph(original, { canConstantFoldThrough, skipSignatureCheck,
 * signature, replacementSignature })(replacement) -> wrapper: during capture
 * the replacement is traced; outside capture the wrapper calls the original.
 */
export function substituteInGraph(originalFn, opts = {}) {
  if (typeof originalFn !== 'function' || isClass(originalFn)) {
    throw new TypeError(`substitute_in_graph expects a function but got ${isClass(originalFn) ? "<class 'type'>" : typeRepr(originalFn)}`);
  }
  const { canConstantFoldThrough = false, skipSignatureCheck = false, signature = null, replacementSignature = null } = opts ?? {};
  if (typeof canConstantFoldThrough !== 'boolean') throw new TypeError('can_constant_fold_through must be a bool');
  if (typeof skipSignatureCheck !== 'boolean') throw new TypeError('skip_signature_check must be a bool');
  return function decorator(replacement) {
    if (typeof replacement !== 'function' || isClass(replacement)) {
      throw new TypeError(
        `@substitute_in_graph(...) expects a function but got ${isClass(replacement) ? "<class 'type'>" : typeRepr(replacement)}`);
    }
    if (!skipSignatureCheck) checkSubstitutionSignature(originalFn, replacement, { signature, replacementSignature });
    const st = register(originalFn, 'substitute', { replacement, canConstantFoldThrough, skipSignatureCheck });
    st.replacement = replacement;
    const wrapped = adapterFor(st);
    checkStatus(need('tpw_rec_add_alias')(st.id, keyOf(wrapped)));
    return wrapped;
  };
}

// ---- markers ------------------------------------------------------------------------

function markCallable(fn, sym) {
  if (typeof fn !== 'function') throw new TypeError(`expected a callable, got ${typeRepr(fn)}`);
  setMarker(fn, sym, true);
  return fn;
}

/** export(fn) marks fn as an entry point visible to capture; export() returns a decorator. */
export function exportFn(fn) {
  if (fn === undefined || fn === null) return (actual) => markCallable(actual, MARKERS.export);
  return markCallable(fn, MARKERS.export);
}

/** unused(fn): marks an eager-only helper. */
export function unused(fn) {
  return markCallable(fn, MARKERS.unused);
}

/** overloadMethod(fn): marks an overload declaration. */
export function overloadMethod(fn) {
  return markCallable(fn, MARKERS.overload);
}

// ---- capture state --------------------------------------------------------------------

/** True while a capture runs (and disableCapture is not active). */
export function isCompiling() {
  return getCore().exports.tpw_is_compiling() !== 0;
}

/** True while an export capture session is active. */
export function isExporting() {
  return getCore().exports.tpw_is_exporting() !== 0;
}

/**
 * disableCapture(fn): runs fn() with the capture state suspended (the
 * seed's context manager as a callback) and returns its result. Inside,
 * isCompiling() is false, and an operation on traced values throws
 * GraphCaptureError. fn must be synchronous.
 */
export function disableCapture(fn) {
  if (typeof fn !== 'function') throw new TypeError(`disableCapture expects a callable, got ${typeRepr(fn)}`);
  const set = need('tpw_set_capture_disabled');
  const prev = set(1);
  try {
    const r = fn();
    if (r !== null && typeof r === 'object' && typeof r.then === 'function') {
      throw new TypeError('disableCapture(fn): fn must be synchronous (it returned a Promise)');
    }
    return r;
  } finally {
    set(prev ? 1 : 0);
  }
}

// ---- annotations (typing helpers) -------------------------------------------------------

const FINAL = Symbol.for('tensorplay.compiler.Final');

/**
 * Final: marks a value as a constant attribute (Python's typing.Final).
 * Final(value) returns value unchanged; Final.of(T) gives a type marker
 * that isinstance() treats as T (the origin-only rule).
 */
export const Final = Object.freeze(Object.assign(function Final(value) {
  return value;
}, {
  of(type) {
    return Object.freeze({ [FINAL]: true, origin: type, args: [] });
  },
}));

/** annotate(type, value) -> value (a type hint for capture; no runtime effect). */
export function annotate(type, value) { // eslint-disable-line no-unused-vars
  return value;
}

const PRIMITIVES = new Map([
  [Number, 'number'], [String, 'string'], [Boolean, 'boolean'], [BigInt, 'bigint'], [Symbol, 'symbol'],
]);

/**
 * isinstance(value, target): target is a constructor, a typeof name
 * ('number', 'string', 'function', ...), null (matches null/undefined), an
 * array of targets (any matches), or a generic form { origin, args } of
 * which only the origin is checked (the origin-only rule: isinstance([1],
 * { origin: Array, args: [Number] }) is true).
 */
export function isinstance(value, target) {
  if (Array.isArray(target)) return target.some((t) => isinstance(value, t));
  if (target === null || target === undefined) return value === null || value === undefined;
  if (typeof target === 'string') {
    if (target === 'null' || target === 'None') return value === null || value === undefined;
    if (target === 'array' || target === 'list') return Array.isArray(value);
    return typeof value === target;
  }
  if (typeof target === 'object' && 'origin' in target) return isinstance(value, target.origin);
  if (typeof target === 'function') {
    const prim = PRIMITIVES.get(target);
    if (prim && typeof value === prim) return true;
    if (target === Object) return value !== null && (typeof value === 'object' || typeof value === 'function');
    return value instanceof target;
  }
  throw new TypeError(`isinstance() arg 2 must be a type, a type name, an array of types or { origin }, got ${typeRepr(target)}`);
}

