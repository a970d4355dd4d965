// compiler.js - tp.compiler: compile(fn, options), explain, reset, and the
// host calls the core makes into JS. Decisions are made in C (wasm/abi.h,
// "the frontend"): option validation in the seed's order, guards, caching,
// recompile limits, graph breaks, backends and records. JS encodes values
// as tpw_value, passes callables as ids, binds non-tensor arguments in the
// host closure and summarizes them in the call's extra key.

import {
  AssertionError,
  DisposedError,
  GraphCaptureError,
  InvalidBackend,
  RuntimeError,
  Status,
  ValueError,
  takeBytes,
} from './errors.js';
import { borrowTensor, wrapHandle, runInScope, disposeExcept, collectTensors, getCore, MAX_OPERANDS } from './tensor.js';
import {
  checkStatus,
  clearPending,
  coreError,
  describeValue,
  envVar,
  hostEntry,
  hostRegister,
  hostRelease,
  isPlainObject,
  keyedEntry,
  need,
  reportHostError,
  takeString,
  throwCore,
  typeRepr,
  withScratch,
  KIND,
} from './host.js';
import { argsKey, flattenArgs, flattenOutput, rebuild, rebuildResult } from './structure.js';
import { config } from './config.js';
import * as B from './backends.js';
import * as F from './frontend.js';
import * as J from './jit.js';

const MAX_OUT = MAX_OPERANDS; // TP_MAX_OPERANDS results at most

const finalizer =
  typeof FinalizationRegistry !== 'undefined'
    ? new FinalizationRegistry(({ id, handle }) => {
        try {
          getCore().exports.tpw_compiled_free(handle);
        } catch {
          /* ignore */
        }
        hostRelease(id);
      })
    : null;

// ---- the host calls ------------------------------------------------------------

/** env.tp_host_call: runs host function fnId on borrowed tensor handles. */
function hostCall(fnId, inPtr, nin, outPtr, maxOut) {
  const core = getCore();
  const ex = core.exports;
  const entry = hostEntry(fnId);
  if (!entry) {
    reportHostError(new Error(`tp_host_call: no JS function with id ${fnId}`));
    return -1;
  }
  const u32 = core.views().u32;
  const inputs = [];
  for (let i = 0; i < nin; i++) inputs.push(borrowTensor(u32[(inPtr >> 2) + i]));
  let created = [];
  try {
    const call = entry.invoke ? (...ts) => entry.invoke(ts) : entry.fn;
    const r = runInScope(call, inputs);
    created = r.created;
    const tensors = [];
    const template = flattenOutput(r.result, tensors, entry.strict === true);
    if (tensors.length > maxOut) {
      throw new RangeError(`${entry.name}: the function returned ${tensors.length} tensors; at most ${maxOut} are supported`);
    }
    // Hand each output to C as an owned handle: tensors made in this call
    // are transferred once; inputs, outside tensors and repeats are dup'ed.
    const mine = new Set(created);
    const handles = [];
    const moved = new Set();
    try {
      for (const t of tensors) {
        const h = t._handle();
        if (mine.has(t) && !moved.has(t)) {
          moved.add(t);
          handles.push(h);
        } else {
          const d = ex.tpw_tensor_dup(h) >>> 0;
          if (d === 0) throwCore(`${entry.name}: output`);
          handles.push(d);
        }
      }
    } catch (e) {
      handles.forEach((h, i) => {
        if (!moved.has(tensors[i])) ex.tpw_tensor_free(h);
      });
      throw e;
    }
    for (const t of moved) t._release();
    core.views().u32.set(handles, outPtr >> 2);
    entry.template = template;
    if (entry.onTemplate) entry.onTemplate(template);
    disposeExcept(created, null);
    return handles.length;
  } catch (e) {
    try {
      disposeExcept(created, null);
    } catch {
      /* keep the first error */
    }
    reportHostError(e);
    return -1;
  } finally {
    for (const t of inputs) t._release();
  }
}

/** Installs the host imports on the core (index.js). */
export function bindCompiler(core) {
  core.hostCall = hostCall;
  core.hostBackend = B.hostBackend;
  core.hostRelease = hostRelease;
  core.hostLoadModule = (bytesPtr, len, nexports, outPtr) =>
    J.hostLoadModule(core, (msg) => reportHostError(new Error(msg)), bytesPtr, len, nexports, outPtr,
      !config.forceDisableCaches);
  core.hostFeatures = J.hostFeatures;
  core.hostUnloadModule = (base, n) => J.hostUnloadModule(core, base, n);
}

// ---- compile -----------------------------------------------------------------------

// Placeholder names for the graph text: options.inputNames, else the
// parameter names of fn when they are plain identifiers.
function paramNames(fn) {
  const d = F.signatureOf(fn);
  if (!d) return null;
  return d.positional.every((n) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(n)) ? d.positional : null;
}

/** compile() options, in the order of TPW_OPT_* (wasm/abi.h), with their defaults. */
const OPTIONS = Object.freeze([
  ['fullgraph', false],
  ['dynamic', null],
  ['backend', null],
  ['mode', null],
  ['options', null],
  ['name', null],
  ['disable', false],
  ['recompileLimit', null],
  ['isolateRecompiles', false],
  ['strictNative', false],
  ['dynamicShapes', null],
  ['inputNames', null],
]);
const KNOWN_OPTIONS = new Set(OPTIONS.map(([k]) => k));

function encodeOptions(o, inputNames) {
  const descs = OPTIONS.map(([k, def]) => {
    const v = o[k] === undefined ? def : o[k];
    if (k === 'backend' && B.builtinName(v)) return describeValue(B.builtinName(v));
    if (k === 'backend' && typeof v === 'function') {
      return { kind: KIND.OTHER, id: keyedEntry(v, 'backend', { name: v.name || 'backend' }), type: 'function' };
    }
    if (k === 'options' && isPlainObject(v)) return { kind: KIND.OTHER, type: 'dict' };
    if (k === 'inputNames') return describeValue(inputNames === null ? null : inputNames.join(','));
    return describeValue(v);
  });
  const optKeys = isPlainObject(o.options) ? Object.keys(o.options) : [];
  const optVals = optKeys.map((k) => describeValue(o.options[k]));
  return { descs, optKeys, optVals };
}

function callWithOptions(f, o, inputNames, ...lead) {
  const { descs, optKeys, optVals } = encodeOptions(o, inputNames);
  return withScratch((a) => {
    const vals = a.values(descs);
    const keys = a.ptrs(optKeys.map((k) => a.str(k)));
    const ov = a.values(optVals);
    return f(...lead, vals, optKeys.length, keys, ov);
  });
}

function checkInputNames(names) {
  if (names !== undefined && names !== null &&
      (!Array.isArray(names) || !names.every((n) => typeof n === 'string' && !n.includes(',')))) {
    throw new TypeError('inputNames must be an array of strings');
  }
}

/**
 * compile(fn, options) -> g(...args). compile(options), compile() and
 * compile(undefined, options) return a decorator. Options are validated by
 * the core, in the seed's order, before the decorator form is returned.
 */
export function compile(fn, options) {
  if (isPlainObject(fn) && options === undefined) {
    options = fn;
    fn = undefined;
  }
  options = options ?? {};
  if (!isPlainObject(options)) throw new TypeError(`compile() options must be a plain object, got ${typeRepr(options)}`);
  for (const k of Object.keys(options)) {
    if (!KNOWN_OPTIONS.has(k)) throw new TypeError(`compile() got an unexpected keyword argument '${k}'`);
  }
  checkInputNames(options.inputNames);
  clearPending();
  const st = callWithOptions(need('tpw_compile_check'), options, options.inputNames ?? null);
  if (st !== Status.OK) checkStatus(st, undefined);
  if (fn === undefined || fn === null) {
    const opts = { ...options };
    return (f) => compile(f, opts);
  }
  if (typeof fn !== 'function') throw new TypeError(`compile() expected a callable, got ${typeRepr(fn)}`);
  if (options.disable) return fn;
  const { fn: target, disabled } = F.unwrapForCompile(fn);
  if (disabled) return target;
  return makeWrapper(target, { ...options });
}

function makeWrapper(fn, options) {
  const core = getCore();
  const ex = core.exports;
  const name = options.name ?? (fn.name || 'fn');
  const declared = options.inputNames ?? paramNames(fn);
  const entry = {
    kind: 'compiled',
    fn,
    name,
    binding: null,
    template: null,
    templates: new Map(),
    invoke(ts) {
      const b = this.binding;
      if (!b) return fn(...ts);
      return fn.apply(b.self, rebuild(b.tpl, ts).slice());
    },
    onTemplate(t) {
      if (this.binding) this.templates.set(this.binding.key, t);
    },
  };
  const id = hostRegister(entry);
  let handle = 0;
  try {
    clearPending();
    handle = callWithOptions(need('tpw_compile_v'), options, declared ?? null, id) >>> 0;
    if (handle === 0) throwCore();
  } catch (e) {
    hostRelease(id);
    throw e;
  }

  let disposed = false;
  let namesSet = declared ? declared.join(',') : '';
  const live = () => {
    if (disposed) throw new DisposedError(`compiled function ${name} was disposed`);
    return handle;
  };

  // Placeholder names of this call's tensors: the parameter name for a
  // top-level tensor, name_i / name_key for tensors inside containers.
  const namesFor = (tpl) => {
    if (!declared) return null;
    const out = [];
    const walk = (t, base) => {
      if ('t' in t) out.push(base);
      else if ('a' in t) t.a.forEach((x, i) => walk(x, `${base}_${i}`));
      else if ('o' in t) for (const [k, x] of t.o) walk(x, `${base}_${k}`);
    };
    tpl.a.forEach((t, i) => walk(t, declared[i] ?? `x${i}`));
    return out;
  };

  const g = function (...args) {
    const h = live();
    const { tensors, tpl } = flattenArgs(args);
    const key = argsKey(tpl.a);
    const names = namesFor(tpl);
    if (names && names.length === tensors.length) {
      const joined = names.join(',');
      if (joined !== namesSet) {
        namesSet = joined;
        withScratch((a) => checkStatus(ex.tpw_compiled_set_input_names(h, a.str(joined)), name));
      }
    }
    const logging = logEnabled();
    const before = logging ? ex.tpw_compiled_num_captures(h) : 0;
    const prevBinding = entry.binding;
    entry.binding = { tpl, self: this, key };
    const m = core.stackSave();
    const strings = [];
    try {
      const inPtr = core.stackAlloc(4 * Math.max(tensors.length, 1));
      const outPtr = core.stackAlloc(4 * MAX_OUT);
      core.views().u32.set(tensors.map((t) => t._handle()), inPtr >> 2);
      let kp = 0;
      if (key) {
        kp = core.mallocCString(key);
        strings.push(kp);
      }
      clearPending();
      const n = ex.tpw_compiled_call_keyed(h, tensors.length, inPtr, kp, outPtr, MAX_OUT);
      if (n < 0) throw coreError(name);
      const u32 = core.views().u32;
      const outs = [];
      for (let i = 0; i < n; i++) outs.push(wrapHandle(u32[(outPtr >> 2) + i]));
      return rebuildResult(entry.templates.get(key) ?? entry.template, outs);
    } finally {
      entry.binding = prevBinding;
      core.stackRestore(m);
      for (const p of strings) core.free(p);
      if (logging) logCaptures(g, h, before);
    }
  };

  Object.defineProperties(g, {
    name: { value: name },
    numCaptures: { get: () => ex.tpw_compiled_num_captures(live()) },
    numEntries: { get: () => ex.tpw_compiled_num_entries(live()) },
    options: { value: Object.freeze({ ...options }) },
    original: { value: fn },
    // internal (tp.onnx.save): the core handle of this wrapper
    _coreHandle: { get: () => live() },
  });
  /** Text of the last captured graph (null if none, or after a graph break);
   * a training entry's forward graph, or with { backward: true } its backward
   * graph (an error when the last call did not compile for training). With
   * { withData: true } constants carry their values: `tpc run` runs the text
   * natively (docs/training.md, "Native parity of a training step"). */
  g.graph = ({ withData = false, backward = false } = {}) => {
    const text = takeString(ex.tpw_compiled_graph_text(live(), (withData ? 1 : 0) | (backward ? 2 : 0)));
    if (text === null && backward) throwCore(`${name}.graph({ backward: true })`);
    return text;
  };
  /** The recompile reasons so far, one failed guard per recompile. */
  g.recompileReasons = () => {
    const text = takeString(need('tpw_compiled_reasons')(live()));
    if (text === null) throwCore(`${name}.recompileReasons()`);
    return text.split('\n').filter((s) => s.length > 0);
  };
  /** The explain() report of this wrapper (parsed JSON). */
  g.explain = () => {
    const text = takeString(need('tpw_compiled_explain')(live()));
    if (text === null) throwCore(`${name}.explain()`);
    const report = JSON.parse(text);
    // threads were asked for but this host cannot run the threads core
    if (core.threadsNote && typeof report.threads === 'string') report.threads += ` (${core.threadsNote})`;
    return report;
  };
  /** The Wasm module stax generated for the last specialization (a copy of
   * its bytes), or null (another backend, nothing generated, a host
   * without SIMD128, or a module the host failed to compile). */
  g.wasmModule = () => {
    const bytes = takeBytes(core, (out) => need('tpw_compiled_last_module')(live(), out), `${name}.wasmModule()`);
    return bytes.length ? bytes : null;
  };
  /** Resolves when every generated Wasm module of this process is installed
   * (browsers compile large modules asynchronously; until then the kernels
   * run in the executor). */
  Object.defineProperty(g, 'ready', { get: () => J.whenReady() });
  g.dispose = () => {
    if (disposed) return;
    disposed = true;
    if (finalizer) finalizer.unregister(g);
    hostRelease(id);
    checkStatus(ex.tpw_compiled_free(handle), `${name}.dispose()`);
  };
  if (finalizer) finalizer.register(g, { id, handle }, g);
  return g;
}

// ---- logging (TP_LOGS / TP_LOG_RECOMPILES in Node) ------------------------------------

function logEnabled() {
  return !!(envVar('TP_LOGS') || (envVar('TP_LOG_RECOMPILES') && envVar('TP_LOG_RECOMPILES') !== '0'));
}

function logCaptures(g, h, before) {
  try {
    const ex = getCore().exports;
    const after = ex.tpw_compiled_num_captures(h);
    if (after <= before) return;
    if (envVar('TP_LOGS')) console.warn(`tensorplay: captured ${g.name} (capture ${after})`);
    // the core prints recompiles itself when config.verbose is set
    if (config.verbose === true) return;
    const reasons = g.recompileReasons();
    const fresh = reasons.slice(Math.max(0, reasons.length - (after - before)));
    if (before > 0 || reasons.length) {
      for (const r of fresh) console.warn(`tensorplay: recompiling ${g.name}: guard failed: ${r}`);
    }
  } catch {
    /* logging never throws */
  }
}

// ---- explain / reset ---------------------------------------------------------------------

/**
 * explain(fn, ...args): compiles fn with the default backend, calls it once
 * and returns the report: graphs captured (ops, constants, graph breaks,
 * opaque regions and reasons), guards, recompiles and why, plus the text
 * of the last graph (graphText).
 */
export function explain(fn, ...args) {
  const g = compile(fn);
  if (typeof g.explain !== 'function') {
    // compile() returned fn itself (a disabled function)
    const out = g(...args);
    const keep = new Set();
    collectTensors(out, keep);
    for (const t of keep) if (!args.includes(t)) t.dispose();
    return { name: fn.name || 'fn', disabled: true, captures: 0, entries: 0, graphs: [], recompile_reasons: [] };
  }
  try {
    const out = g(...args);
    const keep = new Set();
    collectTensors(out, keep);
    for (const t of keep) if (!args.includes(t) && !t.disposed) t.dispose();
    const report = g.explain();
    report.graphText = g.graph();
    return report;
  } finally {
    g.dispose();
  }
}

/** reset(): clears every specialization, guard, reason and constant value, and resets the backends. */
export function reset() {
  need('tpw_reset')();
  F.resetRecords();
}

/** True while the core is capturing a function (and capture is not disabled). */
export const isCompiling = F.isCompiling;

/**
 * compile(), then one call with the example arguments (capture, lowering,
 * code generation), then wait until generated modules are installed. The
 * path for browsers' main threads, where large modules compile
 * asynchronously: `const g = await compiler.compileAsync(f, {}, x)`.
 */
export async function compileAsync(fn, options = {}, ...exampleArgs) {
  const g = compile(fn, options);
  if (exampleArgs.length) {
    const out = g(...exampleArgs);
    const made = new Set();
    collectTensors(out, made);
    disposeExcept(made, null);
  }
  await J.whenReady();
  return g;
}

export const compiler = Object.freeze({
  compile,
  compileAsync,
  config,
  reset,
  explain,
  isCompiling: F.isCompiling,
  isExporting: F.isExporting,
  allowInGraph: F.allowInGraph,
  disallowInGraph: F.disallowInGraph,
  nonstrictTrace: F.nonstrictTrace,
  disable: F.disable,
  assumeConstantResult: F.assumeConstantResult,
  substituteInGraph: F.substituteInGraph,
  nestedCompileRegion: F.nestedCompileRegion,
  NestedCompileRegionOptions: F.NestedCompileRegionOptions,
  markStatic: F.markStatic,
  export: F.exportFn,
  unused: F.unused,
  overloadMethod: F.overloadMethod,
  disableCapture: F.disableCapture,
  Final: F.Final,
  annotate: F.annotate,
  isinstance: F.isinstance,
  signatureOf: F.signatureOf,
  MARKERS: F.MARKERS,
  registerBackend: B.registerBackend,
  registerDebugBackend: B.registerDebugBackend,
  registerExperimentalBackend: B.registerExperimentalBackend,
  unregisterBackend: B.unregisterBackend,
  listBackends: B.listBackends,
  lookupBackend: B.lookupBackend,
  setDefaultBackend: B.setDefaultBackend,
  getDefaultBackend: B.getDefaultBackend,
  getBackendCapabilities: B.getBackendCapabilities,
  declaresCapabilities: B.declaresCapabilities,
  listModeOptions: B.listModeOptions,
  BackendCapabilities: B.BackendCapabilities,
  get CORE_BACKEND_CONTRACT_VERSION() {
    return B.coreContractVersion();
  },
  InvalidBackend,
  GraphCaptureError,
  ValueError,
  RuntimeError,
  AssertionError,
});

export { KNOWN_OPTIONS, paramNames };
