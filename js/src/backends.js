// backends.js - the backend registry (the seed's register_backend,
// list_backends, lookup_backend, ...). The registry lives in the core; a JS
// backend is a host function id, called through the import
// env.tp_host_backend(fnId, graphHandle, inPtr, nin, optsJsonPtr): it gets
// (graph, exampleInputs, opts) and must return a function, which is
// registered in the host function table (then called through tp_host_call)
// until the core releases it (env.tp_host_release).

import { Tensor, borrowTensor, getCore, wrapHandle, MAX_OPERANDS } from './tensor.js';
import { Graph } from './graph.js';
import { DisposedError } from './errors.js';
import {
  checkStatus,
  hostEntry,
  hostRegister,
  isPlainObject,
  keyedEntry,
  need,
  reportHostError,
  takeString,
  throwCore,
  typeRepr,
  withScratch,
} from './host.js';

/** name -> JS backend function (for lookupBackend / getDefaultBackend). */
const jsBackends = new Map();

/**
 * What a backend declares it needs and supports (the seed's
 * BackendCapabilities). optionalDeps: host features ("simd128", "threads");
 * a backend whose optional deps are missing is hidden by listBackends()
 * unless includeUnavailable, and selecting it says what is missing.
 */
export class BackendCapabilities {
  constructor({ optionalDeps = [], contractVersion, minCoreVersion = null, maxCoreVersion = null } = {}) {
    if (!Array.isArray(optionalDeps) || !optionalDeps.every((d) => typeof d === 'string')) {
      throw new TypeError('optionalDeps must be an array of strings');
    }
    if (contractVersion === undefined || contractVersion === null) contractVersion = coreContractVersion();
    if (!Number.isInteger(contractVersion)) throw new TypeError('contractVersion must be an integer');
    for (const [k, v] of [['minCoreVersion', minCoreVersion], ['maxCoreVersion', maxCoreVersion]]) {
      if (v !== null && typeof v !== 'string') throw new TypeError(`${k} must be a string or null`);
    }
    this.optionalDeps = Object.freeze(optionalDeps.slice());
    this.contractVersion = contractVersion;
    this.minCoreVersion = minCoreVersion;
    this.maxCoreVersion = maxCoreVersion;
    Object.freeze(this);
  }
}

export function coreContractVersion() {
  return getCore().exports.tpw_core_backend_contract_version();
}

function csv(list, what) {
  if (list === undefined || list === null) return null;
  if (typeof list === 'string') list = [list];
  if (!Array.isArray(list) || !list.every((t) => typeof t === 'string')) {
    throw new TypeError(`${what} must be an array of strings`);
  }
  for (const t of list) {
    if (t.includes(',')) throw new TypeError(`${what}: '${t}' contains a comma`);
  }
  return list.join(',');
}

function registerImpl(fn, opts, extraTags) {
  if (typeof opts === 'string') opts = { name: opts };
  opts = opts ?? {};
  const name = opts.name ?? (typeof fn === 'function' ? fn.name : undefined);
  if (typeof fn !== 'function') {
    throw new TypeError(`backend '${name ?? ''}' must be callable, got ${typeRepr(fn)}`);
  }
  if (typeof name !== 'string') {
    throw new TypeError(`backend name must be a string, got ${typeRepr(name)}`);
  }
  const tags = [...(Array.isArray(opts.tags) ? opts.tags : opts.tags ? [opts.tags] : []), ...extraTags];
  const tagsCsv = csv([...new Set(tags)], 'tags');
  let caps = opts.capabilities;
  if (caps !== undefined && caps !== null && !(caps instanceof BackendCapabilities)) {
    if (typeof caps !== 'object') {
      throw new TypeError(`capabilities must be a BackendCapabilities, got ${typeRepr(caps)}`);
    }
    caps = new BackendCapabilities(caps);
  }
  const id = keyedEntry(fn, 'backend', { name });
  withScratch((a) => {
    const f = need('tpw_register_backend');
    const st = f(
      id,
      a.str(name),
      tags.length ? a.str(tagsCsv) : 0,
      caps ? 1 : 0,
      caps && caps.optionalDeps.length ? a.str(csv(caps.optionalDeps, 'optionalDeps')) : 0,
      caps ? caps.contractVersion : coreContractVersion(),
      caps ? a.str(caps.minCoreVersion) : 0,
      caps ? a.str(caps.maxCoreVersion) : 0);
    checkStatus(st);
  });
  jsBackends.set(name, fn);
  return fn;
}

function decoratorOr(fn, opts, tags) {
  if (fn === undefined || fn === null || (typeof fn === 'object' && typeof fn !== 'function')) {
    const o = fn ?? opts;
    return (f) => registerImpl(f, o, tags);
  }
  return registerImpl(fn, opts, tags);
}

/**
 * registerBackend(fn, { name = fn.name, tags = [], capabilities }) -> fn.
 * registerBackend({ name, ... }) returns a decorator. A duplicate name throws
 * ValueError.
 */
export function registerBackend(fn, opts) {
  return decoratorOr(fn, opts, []);
}

/** registerBackend with the tag 'debug' (hidden by listBackends() by default). */
export function registerDebugBackend(fn, opts) {
  return decoratorOr(fn, opts, ['debug']);
}

/** registerBackend with the tag 'experimental' (hidden by default). */
export function registerExperimentalBackend(fn, opts) {
  return decoratorOr(fn, opts, ['experimental']);
}

/** Removes a backend by name; unknown names are ignored. */
export function unregisterBackend(name) {
  if (typeof name !== 'string') throw new TypeError(`backend name must be a string, got ${typeRepr(name)}`);
  withScratch((a) => need('tpw_unregister_backend')(a.str(name)));
  jsBackends.delete(name);
}

/**
 * Sorted backend names compile() accepts. excludeTags: default
 * ['debug', 'experimental']; [] or null excludes nothing.
 * includeUnavailable: also list backends whose optional deps are missing.
 */
export function listBackends({ excludeTags, includeUnavailable = false } = {}) {
  if (Array.isArray(arguments[0])) excludeTags = arguments[0];
  const ex = excludeTags === undefined ? undefined : csv(excludeTags ?? [], 'excludeTags');
  const text = withScratch((a) =>
    takeString(need('tpw_list_backends')(ex === undefined ? 0 : a.str(ex), includeUnavailable ? 1 : 0)));
  if (text === null) throwCore('listBackends');
  return text.split('\n').filter((s) => s.length > 0);
}

/**
 * Validates a backend and returns it as a callable (the seed's
 * lookup_backend): a function is returned as is; a name gives the JS
 * function of a JS backend, or for a built-in backend ('stax', 'eager',
 * ...) a function (graph, exampleInputs, opts) => compiledFn, so a custom
 * backend can delegate to it. An unknown name throws InvalidBackend (with
 * .suggestions); any other type throws TypeError.
 */
export function lookupBackend(backend) {
  if (typeof backend === 'function') return backend;
  if (typeof backend !== 'string') {
    throw new TypeError(`backend must be a string or a function, got ${typeRepr(backend)}`);
  }
  withScratch((a) => checkStatus(need('tpw_lookup_backend')(a.str(backend))));
  return jsBackends.get(backend) ?? builtinBackend(backend);
}

// ---- built-in backends as callables ------------------------------------------------

const BUILTIN = Symbol('tensorplay.builtinBackend');
const RELEASE = Symbol('tensorplay.releaseRunner');
const builtinFns = new Map();
const runnerFinalizer =
  typeof FinalizationRegistry !== 'undefined'
    ? new FinalizationRegistry((h) => {
        try {
          getCore().exports.tpw_runner_free(h);
        } catch {
          /* ignore */
        }
      })
    : null;

function runnerOpts(opts) {
  if (opts === undefined || opts === null) opts = {};
  if (!isPlainObject(opts)) throw new TypeError(`backend options must be a plain object, got ${typeRepr(opts)}`);
  const known = new Set(['mode', 'dynamic', 'name', 'strictNative', 'options']);
  for (const k of Object.keys(opts)) {
    if (!known.has(k)) throw new TypeError(`backend options: unexpected key '${k}'`);
  }
  const { mode = null, dynamic = null, name = null, strictNative = false, options = null } = opts;
  if (mode !== null && typeof mode !== 'string') throw new TypeError(`mode must be a str or None, got ${typeRepr(mode)}`);
  if (name !== null && typeof name !== 'string') throw new TypeError(`name must be a str or None, got ${typeRepr(name)}`);
  if (dynamic !== null && typeof dynamic !== 'boolean') {
    throw new TypeError(`dynamic must be a bool or None, got ${typeRepr(dynamic)}`);
  }
  if (typeof strictNative !== 'boolean') throw new TypeError(`strict_native must be a bool, got ${typeRepr(strictNative)}`);
  if (options !== null && !isPlainObject(options)) throw new TypeError(`options must be a dict, got ${typeRepr(options)}`);
  const keys = options ? Object.keys(options) : [];
  for (const k of keys) {
    if (typeof options[k] !== 'boolean') throw new TypeError(`options['${k}'] must be a bool, got ${typeRepr(options[k])}`);
  }
  return { mode, dynamic, name, strictNative, options, keys };
}

/** lookupBackend(name) for a backend that runs inside the core. */
function builtinBackend(backendName) {
  const known = builtinFns.get(backendName);
  if (known) return known;
  const compileWith = function (graph, exampleInputs = [], opts = {}) {
    const gh = graph instanceof Graph ? graph.handle : null;
    if (gh === null) throw new TypeError(`${backendName}: expected a Graph, got ${typeRepr(graph)}`);
    if (!Array.isArray(exampleInputs) || !exampleInputs.every((t) => t instanceof Tensor)) {
      throw new TypeError(`${backendName}: exampleInputs must be an array of Tensors`);
    }
    if (exampleInputs.length > MAX_OPERANDS) {
      throw new RangeError(`${backendName}: ${exampleInputs.length} example inputs (at most ${MAX_OPERANDS})`);
    }
    const o = runnerOpts(opts);
    const ex = getCore().exports;
    const h = withScratch((a) => need('tpw_backend_compile')(
      a.str(backendName), gh, exampleInputs.length, a.u32(exampleInputs.map((t) => t._handle())),
      a.str(o.mode), o.dynamic === null ? -1 : o.dynamic ? 1 : 0, a.str(o.name), o.strictNative ? 1 : 0,
      o.keys.length, o.options ? a.ptrs(o.keys.map((k) => a.str(k))) : 0,
      a.u32(o.keys.map((k) => (o.options[k] ? 1 : 0))))) >>> 0;
    if (h === 0) throwCore(backendName);
    let freed = false;
    const release = () => {
      if (freed) return;
      freed = true;
      if (runnerFinalizer) runnerFinalizer.unregister(compiled);
      ex.tpw_runner_free(h);
    };
    /** The compiled function: runs on Tensors, returns an array of Tensors. */
    const compiled = function (...inputs) {
      if (freed) throw new DisposedError(`${backendName} runner was disposed`);
      if (!inputs.every((t) => t instanceof Tensor)) throw new TypeError(`${backendName} runner: inputs must be Tensors`);
      if (inputs.length > MAX_OPERANDS) throw new RangeError(`${backendName} runner: ${inputs.length} inputs (at most ${MAX_OPERANDS})`);
      const core = getCore();
      const m = core.stackSave();
      try {
        const inPtr = core.stackAlloc(4 * Math.max(inputs.length, 1));
        const outPtr = core.stackAlloc(4 * MAX_OPERANDS);
        core.views().u32.set(inputs.map((t) => t._handle()), inPtr >> 2);
        const n = ex.tpw_runner_call(h, inputs.length, inPtr, outPtr, MAX_OPERANDS);
        if (n < 0) throwCore(`${backendName} runner`);
        const u32 = core.views().u32;
        const outs = [];
        for (let i = 0; i < n; i++) outs.push(wrapHandle(u32[(outPtr >> 2) + i]));
        return outs;
      } finally {
        core.stackRestore(m);
      }
    };
    Object.defineProperty(compiled, 'name', { value: `${backendName}_compiled` });
    compiled.dispose = release;
    compiled[RELEASE] = release;
    if (runnerFinalizer) runnerFinalizer.register(compiled, h, compiled);
    return compiled;
  };
  Object.defineProperty(compileWith, 'name', { value: backendName });
  compileWith[BUILTIN] = backendName;
  builtinFns.set(backendName, compileWith);
  return compileWith;
}

function nameOf(backend) {
  if (typeof backend === 'function' && backend[BUILTIN]) return backend[BUILTIN];
  if (typeof backend === 'function') {
    for (const [n, f] of jsBackends) if (f === backend) return n;
    throw new TypeError('setDefaultBackend: register the function with registerBackend() first');
  }
  return backend;
}

/** Sets the backend compile() uses when given none; null restores 'stax'. */
export function setDefaultBackend(backend) {
  const name = backend === null || backend === undefined ? null : nameOf(backend);
  if (name !== null && typeof name !== 'string') {
    throw new TypeError(`backend must be a string, a registered function or null, got ${typeRepr(name)}`);
  }
  withScratch((a) => checkStatus(need('tpw_set_default_backend')(a.str(name))));
}

/** The default backend's name ('stax' unless changed). */
export function getDefaultBackend() {
  return getCore().readCString(need('tpw_get_default_backend')());
}

/** What a backend declares (unknown names give the default capabilities). */
export function getBackendCapabilities(backend) {
  const name = nameOf(backend);
  const text = withScratch((a) => takeString(need('tpw_backend_capabilities')(a.str(name))));
  if (text === null) throwCore('getBackendCapabilities');
  const o = JSON.parse(text);
  const pick = (...ks) => {
    for (const k of ks) if (o[k] !== undefined) return o[k];
    return undefined;
  };
  return new BackendCapabilities({
    optionalDeps: pick('optionalDeps', 'optional_deps') ?? [],
    contractVersion: pick('contractVersion', 'contract_version'),
    minCoreVersion: pick('minCoreVersion', 'min_core_version') || null,
    maxCoreVersion: pick('maxCoreVersion', 'max_core_version') || null,
  });
}

/** True when the backend was registered with explicit capabilities. */
export function declaresCapabilities(backend) {
  const name = nameOf(backend);
  return withScratch((a) => need('tpw_declares_capabilities')(a.str(name))) !== 0;
}

/**
 * The options each compile mode selects: listModeOptions() gives the whole
 * mapping, listModeOptions('max-autotune') that mode's patch. Unknown modes
 * throw RuntimeError.
 */
export function listModeOptions(mode) {
  if (mode !== undefined && mode !== null && typeof mode !== 'string') {
    throw new TypeError(`mode must be a string, got ${typeRepr(mode)}`);
  }
  const text = withScratch((a) => takeString(need('tpw_list_mode_options')(a.str(mode ?? null))));
  if (text === null) throwCore();
  return JSON.parse(text);
}

// ---- the host import -------------------------------------------------------------

const camelKeys = (o) => {
  const r = {};
  for (const [k, v] of Object.entries(o)) r[k.replace(/_([a-z])/g, (_, c) => c.toUpperCase())] = v;
  return r;
};

/**
 * env.tp_host_backend: calls JS backend fnId with (graph, exampleInputs,
 * opts); returns the host id of the function it returned, or -1.
 */
export function hostBackend(fnId, graphHandle, inPtr, nin, optsPtr) {
  const core = getCore();
  const entry = hostEntry(fnId);
  const graph = new Graph(graphHandle >>> 0);
  const freeGraph = () => {
    try {
      graph.dispose();
    } catch {
      /* ignore */
    }
  };
  if (!entry || typeof entry.fn !== 'function') {
    freeGraph();
    reportHostError(new TypeError(`tp_host_backend: no JS backend with id ${fnId}`));
    return -1;
  }
  const u32 = core.views().u32;
  const examples = [];
  for (let i = 0; i < nin; i++) examples.push(borrowTensor(u32[(inPtr >> 2) + i]));
  try {
    const text = optsPtr ? core.readCString(optsPtr >>> 0) : '';
    const opts = text ? camelKeys(JSON.parse(text)) : {};
    const runner = entry.fn(graph, examples, opts);
    if (typeof runner !== 'function') {
      throw new TypeError(
        `compiler backend '${entry.name}' returned ${typeRepr(runner)}; a backend must return a callable`);
    }
    // a built-in backend's runner returned as is is freed with this one
    const release = runner[RELEASE];
    const onRelease = release ? () => { freeGraph(); release(); } : freeGraph;
    return hostRegister({ kind: 'runner', fn: runner, name: `${entry.name} runner`, onRelease, graph });
  } catch (e) {
    freeGraph();
    reportHostError(e, e instanceof TypeError ? e.message : undefined);
    return -1;
  } finally {
    for (const t of examples) t._release();
  }
}

/** The name of a built-in backend's lookupBackend() callable, else null. */
export function builtinName(fn) {
  return typeof fn === 'function' && fn[BUILTIN] ? fn[BUILTIN] : null;
}

export function backendNames() {
  return [...jsBackends.keys()];
}

export { jsBackends };
