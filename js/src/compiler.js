// compiler.js - tp.compiler.compile(fn, options): JS functions become
// callables the core captures (tracer) and replays (backend). The core calls
// back into JS through the import env.tp_host_call(fn_id, in_ptr, nin,
// out_ptr, max_out) (wasm/abi.h); guards, caching, graph breaks and the
// backend are decided in C.

import { TensorPlayError, DisposedError, Status, check, throwLast } from './errors.js';
import {
  Tensor,
  borrowTensor,
  wrapHandle,
  runInScope,
  disposeExcept,
  getCore,
} from './tensor.js';

const MAX_OUT = 64; // tp_trace_result.outs

/** fn_id -> entry { fn, template, error, name } */
const table = new Map();
let nextId = 1;

const registry =
  typeof FinalizationRegistry !== 'undefined'
    ? new FinalizationRegistry(({ id, handle }) => {
        const core = getCore();
        try {
          core.exports.tpw_compiled_free(handle);
        } catch {
          /* ignore */
        }
        table.delete(id);
      })
    : null;

// ---- output structure ------------------------------------------------------
// A template mirrors the returned value with tensors replaced by their index
// in the flat list of handles: { t: i } | { a: [...] } | { o: [[k, tpl]...] }
// | { v: constant }.

function flattenOutput(v, tensors) {
  if (v instanceof Tensor) {
    tensors.push(v);
    return { t: tensors.length - 1 };
  }
  if (Array.isArray(v)) return { a: v.map((x) => flattenOutput(x, tensors)) };
  if (v !== null && typeof v === 'object') {
    const proto = Object.getPrototypeOf(v);
    if (proto === Object.prototype || proto === null) {
      return { o: Object.keys(v).map((k) => [k, flattenOutput(v[k], tensors)]) };
    }
    throw new TypeError(
      'a compiled function must return a Tensor, or arrays / plain objects of Tensors ' +
        `(got ${proto && proto.constructor ? proto.constructor.name : 'an object'})`);
  }
  if (typeof v === 'function' || typeof v === 'symbol') {
    throw new TypeError(`a compiled function cannot return a ${typeof v}`);
  }
  return { v };
}

function countTensors(tpl) {
  if ('t' in tpl) return 1;
  if ('a' in tpl) return tpl.a.reduce((n, x) => n + countTensors(x), 0);
  if ('o' in tpl) return tpl.o.reduce((n, [, x]) => n + countTensors(x), 0);
  return 0;
}

function rebuild(tpl, tensors) {
  if ('t' in tpl) return tensors[tpl.t];
  if ('a' in tpl) return tpl.a.map((x) => rebuild(x, tensors));
  if ('o' in tpl) {
    const o = {};
    for (const [k, x] of tpl.o) o[k] = rebuild(x, tensors);
    return o;
  }
  return tpl.v;
}

// ---- the host call ---------------------------------------------------------

function hostCall(fnId, inPtr, nin, outPtr, maxOut) {
  const core = getCore();
  const ex = core.exports;
  const entry = table.get(fnId);
  if (!entry) {
    setHostError(core, `tp_host_call: no JS function with id ${fnId}`);
    return -1;
  }
  const u32 = core.views().u32;
  const inputs = [];
  for (let i = 0; i < nin; i++) inputs.push(borrowTensor(u32[(inPtr >> 2) + i]));
  let created = [];
  try {
    const r = runInScope(entry.fn, inputs);
    created = r.created;
    const tensors = [];
    const template = flattenOutput(r.result, tensors);
    if (tensors.length > maxOut) {
      throw new TensorPlayError(
        `${entry.name}: the function returned ${tensors.length} tensors; at most ${maxOut} are supported`,
        Status.INVALID_ARG);
    }
    // Hand each output to C as an owned handle: tensors made in this call
    // are transferred once; inputs, outside tensors and repeats are dup'ed.
    const mine = new Set(created);
    const handles = [];
    const moved = [];
    try {
      for (const t of tensors) {
        const h = t._handle();
        if (mine.has(t) && !moved.includes(t)) {
          moved.push(t);
          handles.push(h);
        } else {
          const d = ex.tpw_tensor_dup(h) >>> 0;
          if (d === 0) throwLast(core, `${entry.name}: output`);
          handles.push(d);
        }
      }
    } catch (e) {
      for (let i = 0; i < handles.length; i++) if (!moved.includes(tensors[i])) ex.tpw_tensor_free(handles[i]);
      throw e;
    }
    for (const t of moved) t._release();
    core.views().u32.set(handles, outPtr >> 2);
    entry.template = template;
    disposeExcept(created, null);
    return handles.length;
  } catch (e) {
    try {
      disposeExcept(created, null);
    } catch {
      /* keep the first error */
    }
    entry.error = { value: e };
    setHostError(core, e instanceof Error ? `${e.name}: ${e.message}` : String(e));
    return -1;
  } finally {
    // The inputs were borrowed for the duration of the call only.
    for (const t of inputs) t._release();
  }
}

function setHostError(core, msg) {
  const p = core.mallocCString(msg);
  try {
    core.exports.tpw_set_host_error(p);
  } finally {
    core.free(p);
  }
}

/** Installs the host-call hook on the core (index.js). */
export function bindCompiler(core) {
  core.hostCall = hostCall;
}

// ---- compile ------------------------------------------------------------------

// Placeholder names for the graph text: options.inputNames, else the
// parameter names of fn when they are plain identifiers ("(x, w) => ...",
// "function f(x) {...}", "x => ..."); null when they cannot be read simply.
function paramNames(fn) {
  let src;
  try {
    src = Function.prototype.toString.call(fn);
  } catch {
    return null;
  }
  const m =
    /^\s*(?:async\s+)?([A-Za-z_][\w]*)\s*=>/.exec(src) ||
    /^\s*(?:async\s*)?(?:function\b\s*\*?\s*[\w$]*\s*|[\w$]+\s*)?\(([^)]*)\)/.exec(src);
  if (!m) return null;
  const list = m[1].trim();
  if (list === '') return [];
  const names = list.split(',').map((p) => p.trim());
  return names.every((n) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(n)) ? names : null;
}

const KNOWN_OPTIONS = new Set([
  'fullgraph', 'dynamic', 'backend', 'mode', 'options', 'name', 'disable',
  'recompileLimit', 'isolateRecompiles', 'strictNative', 'dynamicShapes', 'inputNames',
]);

function checkOptions(o) {
  if (o.mode != null && o.options != null) {
    throw new TensorPlayError('compile: either mode or options can be specified, but not both', Status.INVALID_ARG);
  }
  if (o.options != null && (typeof o.options !== 'object' || Array.isArray(o.options))) {
    throw new TypeError(`compile: options must be an object, got ${Array.isArray(o.options) ? 'array' : typeof o.options}`);
  }
  if (o.dynamicShapes != null) {
    if (o.dynamic != null) {
      throw new TensorPlayError('compile: dynamic and dynamicShapes cannot both be specified', Status.INVALID_ARG);
    }
    if (typeof o.dynamicShapes !== 'boolean') throw new TypeError('compile: dynamicShapes currently accepts only a boolean');
  }
  if (o.recompileLimit != null) {
    if (!Number.isInteger(o.recompileLimit)) throw new TypeError('compile: recompileLimit must be an integer');
    if (o.recompileLimit < 1) throw new RangeError('compile: recompileLimit must be positive');
  }
  if (o.dynamic != null && typeof o.dynamic !== 'boolean') throw new TypeError('compile: dynamic must be a boolean or null');
  if (o.backend != null && typeof o.backend !== 'string') {
    throw new TensorPlayError('compile: custom JS backends are not supported yet; pass a backend name', Status.UNSUPPORTED);
  }
  if (o.name != null && typeof o.name !== 'string') throw new TypeError('compile: name must be a string');
  if (o.inputNames != null && (!Array.isArray(o.inputNames) || !o.inputNames.every((n) => typeof n === 'string'))) {
    throw new TypeError('compile: inputNames must be an array of strings');
  }
}

/**
 * compile(fn, options) -> g(...tensors). compile(options) (or
 * compile(null, options)) returns a function that compiles its argument.
 */
export function compile(fn, options = {}) {
  if (fn === null || fn === undefined || (typeof fn === 'object' && !(fn instanceof Tensor))) {
    const opts = fn ?? options;
    return (f) => compile(f, opts);
  }
  if (typeof fn !== 'function') throw new TypeError(`compile() expected a function, got ${typeof fn}`);
  options = { ...options };
  checkOptions(options);
  const core = getCore();
  const ex = core.exports;
  const dyn = options.dynamicShapes ?? options.dynamic;
  const name = options.name ?? (fn.name || 'fn');
  const id = nextId++;
  const entry = { fn, template: null, error: null, name };
  table.set(id, entry);

  // The core copies the backend and name strings.
  const strings = [];
  let handle = 0;
  const mark = core.stackSave();
  try {
    strings.push(options.backend != null ? core.mallocCString(options.backend) : 0);
    strings.push(core.mallocCString(name));
    const optPtr = core.stackAlloc(16);
    core.views().i32.set(
      [options.fullgraph ? 1 : 0, dyn == null ? -1 : dyn ? 1 : 0, options.disable ? 1 : 0, 0],
      optPtr >> 2);
    handle = ex.tpw_compile(id, optPtr, strings[0], strings[1]) >>> 0;
    if (handle === 0) throwLast(core, 'compile');
    const names = options.inputNames ?? paramNames(fn);
    if (names && names.length && typeof ex.tpw_compiled_set_input_names === 'function') {
      const p = core.mallocCString(names.join(','));
      strings.push(p);
      const st = ex.tpw_compiled_set_input_names(handle, p);
      if (st !== Status.OK) {
        ex.tpw_compiled_free(handle);
        check(core, st, 'compile: inputNames');
      }
    }
  } catch (e) {
    table.delete(id);
    throw e;
  } finally {
    core.stackRestore(mark);
    for (const p of strings) core.free(p);
  }

  let disposed = false;
  const live = () => {
    if (disposed) throw new DisposedError(`compiled function ${name} was disposed`);
    return handle;
  };

  const g = function (...args) {
    const h = live();
    args.forEach((a, i) => {
      if (!(a instanceof Tensor)) {
        throw new TypeError(`${name}: argument ${i} must be a Tensor, got ${a === null ? 'null' : typeof a}`);
      }
    });
    const m = core.stackSave();
    entry.error = null;
    try {
      const inPtr = core.stackAlloc(4 * Math.max(args.length, 1));
      const outPtr = core.stackAlloc(4 * MAX_OUT);
      core.views().u32.set(args.map((a) => a._handle()), inPtr >> 2);
      const n = ex.tpw_compiled_call(h, args.length, inPtr, outPtr, MAX_OUT);
      if (n < 0) {
        const kept = entry.error;
        entry.error = null;
        if (kept) throw kept.value;
        throwLast(core, name);
      }
      const u32 = core.views().u32;
      const outs = [];
      for (let i = 0; i < n; i++) outs.push(wrapHandle(u32[(outPtr >> 2) + i]));
      const tpl = entry.template;
      if (tpl && countTensors(tpl) === n) return rebuild(tpl, outs);
      return n === 1 ? outs[0] : outs;
    } finally {
      core.stackRestore(m);
    }
  };

  Object.defineProperties(g, {
    name: { value: name },
    numCaptures: { get: () => ex.tpw_compiled_num_captures(live()) },
    numEntries: { get: () => ex.tpw_compiled_num_entries(live()) },
    options: { value: Object.freeze(options) },
    original: { value: fn },
  });
  /** Text of the last captured graph (null if none, or after a graph break). */
  g.graph = ({ withData = false } = {}) => {
    const p = ex.tpw_compiled_graph_text(live(), withData ? 1 : 0) >>> 0;
    if (p === 0) return null;
    try {
      return core.readCString(p);
    } finally {
      core.free(p);
    }
  };
  g.dispose = () => {
    if (disposed) return;
    disposed = true;
    if (registry) registry.unregister(g);
    table.delete(id);
    check(core, ex.tpw_compiled_free(handle), `${name}.dispose()`);
  };
  if (registry) registry.register(g, { id, handle }, g);
  return g;
}

/** True while the core is capturing a function. */
export function isCompiling() {
  return getCore().exports.tpw_is_compiling() !== 0;
}

export const compiler = Object.freeze({ compile, isCompiling });
export { KNOWN_OPTIONS, paramNames };
