// onnx.js - ONNX models and TensorProtos. The importer is C (src/onnx,
// docs/onnx.md); this file marshals bytes and wraps the graph handle.

import { throwLast, lastError, takeBytes, check, DisposedError } from './errors.js';
import { wrapHandle, getCore, collectTensors, keepOutOfScopes } from './tensor.js';
import { Graph, runOnHandles } from './graph.js';
import { compile } from './compiler.js';

function toU8(bytes, what) {
  if (bytes instanceof ArrayBuffer) return new Uint8Array(bytes);
  if (ArrayBuffer.isView(bytes)) return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  throw new TypeError(`${what}: expected bytes (Uint8Array or ArrayBuffer)`);
}

function withBytes(core, u8, fn) {
  const p = core.malloc(Math.max(u8.length, 1));
  try {
    core.views().u8.set(u8, p);
    return fn(p, u8.length);
  } finally {
    core.free(p);
  }
}

/** A plain object of feeds by name ({ input: Tensor }), as onnxruntime takes. */
function isFeeds(v) {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** Feeds by name -> the graph's positional inputs; every input named once. */
function feedsToList(feeds, inputNames) {
  const known = new Set(inputNames);
  for (const k of Object.keys(feeds)) {
    if (!known.has(k)) {
      throw new TypeError(`model.run: no input named '${k}' (the model's inputs: ${inputNames.join(', ') || 'none'})`);
    }
  }
  return inputNames.map((n) => {
    if (!Object.prototype.hasOwnProperty.call(feeds, n)) {
      throw new TypeError(`model.run: input '${n}' is missing from the feeds (the model's inputs: ${inputNames.join(', ')})`);
    }
    return feeds[n];
  });
}


function takeCString(core, p, what) {
  p >>>= 0;
  if (p === 0) throwLast(core, what);
  try {
    return core.readCString(p);
  } finally {
    core.free(p);
  }
}

/**
 * Loads a serialized ONNX model as applications ship it. Returns a callable
 * model (docs/onnx.md, "Models"):
 *   const model = tp.onnx.load(bytes, { backend: 'stax' });   // default: eager
 *   const [y] = model(x);            // or model.run(x), model.run([x])
 *   const { y } = model.run({ x });  // feeds by name -> outputs by name
 *   model.inputNames, model.outputNames, model.inputs (dtype, dims with null
 *   for a dynamic dim, dimNames), model.graph, model.explain(), model.dispose()
 * Inputs may have symbolic dims and may set shapes (a Reshape's shape fed at
 * run time): each call is checked against the declared types and served by
 * the specialization for its shapes (and the values of the inputs that set
 * shapes), made on first use. Malformed bytes throw a TensorPlayError with
 * status 'PARSE'; ops, dtypes or attributes the importer does not support
 * throw one with status 'UNSUPPORTED' naming the node.
 */
export function load(bytes, options = {}) {
  const core = getCore();
  const u8 = toU8(bytes, 'onnx.load');
  if (options === null || typeof options !== 'object') throw new TypeError('onnx.load: options must be an object');
  const backend = options.backend ?? '';
  if (typeof backend !== 'string') throw new TypeError(`onnx.load: backend must be a string, got ${typeof backend}`);
  const opts = options.options ?? {};
  if (opts === null || typeof opts !== 'object' || Array.isArray(opts)) throw new TypeError('onnx.load: options.options must be an object of backend options');
  const optEntries = Object.entries(opts);
  for (const [k, v] of optEntries) {
    if (typeof v !== 'boolean' && typeof v !== 'number') throw new TypeError(`onnx.load: backend option '${k}' must be a boolean or a number, got ${typeof v}`);
  }
  if (optEntries.length && !backend) throw new TypeError('onnx.load: backend options need a backend (e.g. { backend: \'stax\' })');
  const ex = core.exports;
  // with options: load eagerly, set them, then pick the backend (which
  // compiles a static model's specialization once, with the options)
  const bp = core.mallocCString(optEntries.length ? '' : backend);
  let h;
  try {
    h = withBytes(core, u8, (p, n) => ex.tpw_onnx_model_load(p, n, bp) >>> 0);
  } finally {
    core.free(bp);
  }
  if (h === 0) throwLast(core, 'onnx.load');
  if (optEntries.length) {
    const fail = () => {
      const err = lastError(core, 'onnx.load');
      ex.tpw_onnx_model_free(h);
      throw err;
    };
    for (const [k, v] of optEntries) {
      const kp = core.mallocCString(k);
      let st;
      try {
        st = ex.tpw_onnx_model_set_option(h, kp, typeof v === 'boolean' ? 0 : Number.isInteger(v) ? 1 : 2, Number(v));
      } finally {
        core.free(kp);
      }
      if (st !== 0) fail();
    }
    const np = core.mallocCString(backend);
    let st;
    try {
      st = ex.tpw_onnx_model_use_backend(h, np);
    } finally {
      core.free(np);
    }
    if (st !== 0) fail();
  }
  let disposed = false;
  const live = () => {
    if (disposed) throw new DisposedError('onnx model was disposed');
    return h;
  };
  let info;
  try {
    info = JSON.parse(takeCString(core, ex.tpw_onnx_model_info(h), 'onnx.load'));
  } catch (e) {
    ex.tpw_onnx_model_free(h);
    throw e;
  }
  const inputNames = info.inputs.map((i) => i.name);
  const outputNames = info.outputs;
  const graphs = []; // copies handed out by model.graph, freed with the model
  let runs = 0, graphRuns = -1;
  const runPositional = (inputs) => {
    const mh = live();
    const outs = runOnHandles('model.run', inputs, (n, ip, op, max) => ex.tpw_onnx_model_run(mh, n, ip, op, max));
    runs++;
    return outs;
  };
  const model = (...inputs) => model.run(...inputs);
  model.inputNames = inputNames;
  model.outputNames = outputNames;
  model.inputs = info.inputs;
  model.run = (...inputs) => {
    if (inputs.length === 1 && Array.isArray(inputs[0])) inputs = inputs[0];
    if (inputs.length === 1 && isFeeds(inputs[0])) {
      const outs = runPositional(feedsToList(inputs[0], inputNames));
      const named = {};
      outs.forEach((t, i) => { named[outputNames[i] ?? `output_${i}`] = t; });
      return named;
    }
    return runPositional(inputs);
  };
  /** The graph of the most recent specialization (a static model's is made
   * at load; a model with symbolic dims has one after its first run). */
  Object.defineProperty(model, 'graph', {
    get() {
      const mh = live();
      if (graphs.length && graphRuns === runs) return graphs[graphs.length - 1];
      const gh = ex.tpw_onnx_model_graph(mh) >>> 0;
      if (gh === 0) throwLast(core, 'model.graph');
      graphs.push(new Graph(gh));
      graphRuns = runs;
      return graphs[graphs.length - 1];
    },
  });
  /** Text: the inputs with their dynamic dims, the value inputs, the
   * specializations and why the last one was made. */
  model.explain = () => takeCString(core, ex.tpw_onnx_model_explain(live()), 'model.explain');
  model.specializations = () => {
    const n = ex.tpw_onnx_model_num_specializations(live());
    if (n < 0) throwLast(core, 'model.specializations');
    return n;
  };
  model.setSpecializationLimit = (limit) => {
    if (!Number.isInteger(limit)) throw new TypeError('model.setSpecializationLimit: expected an integer');
    check(core, ex.tpw_onnx_model_set_limit(live(), limit), 'model.setSpecializationLimit');
  };
  // ---- fine-tuning (docs/training.md, "Fine-tuning an ONNX model") ----
  let params = []; // [[name, Tensor]] after setTrainable
  const dropParams = () => {
    for (const [, t] of params) if (!t.disposed) t.dispose();
    params = [];
  };
  /** Makes initializers trainable parameters: names (an array), or every
   * float32, float16 or bfloat16 initializer whose value the import does not
   * need as a constant when omitted (float16 / bfloat16 ones: float32 master
   * copies, saved back in their dtype; docs/training.md). Returns model.parameters(). While grad mode is on a run
   * records the tape, so loss.backward() fills each parameter's .grad and
   * tp.optim updates them in place; under tp.noGrad the backend serves. */
  model.setTrainable = (names) => {
    const mh = live();
    let list = [];
    if (names !== undefined && names !== null) {
      if (!Array.isArray(names) || names.some((n) => typeof n !== 'string' || n.includes('\0'))) {
        throw new TypeError('model.setTrainable: names must be an array of strings (initializer names)');
      }
      if (names.length === 0) {
        throw new TypeError('model.setTrainable: names is empty (omit it to train every float32, float16 or bfloat16 initializer)');
      }
      list = names;
    }
    const enc = new TextEncoder();
    const parts = list.map((n) => enc.encode(n));
    const buf = new Uint8Array(parts.reduce((a, b) => a + b.length + 1, 0));
    let at = 0;
    for (const b of parts) {
      buf.set(b, at);
      at += b.length + 1; // the NUL is already 0
    }
    const st = withBytes(core, buf, (p) => ex.tpw_onnx_model_set_trainable(mh, list.length, p));
    check(core, st, 'model.setTrainable');
    dropParams();
    const n = ex.tpw_onnx_model_num_params(mh);
    if (n < 0) throwLast(core, 'model.setTrainable');
    for (let i = 0; i < n; i++) {
      const name = takeCString(core, ex.tpw_onnx_model_param_name(mh, i), 'model.setTrainable');
      const t = keepOutOfScopes(wrapHandle(ex.tpw_onnx_model_param(mh, i), 'model.setTrainable'));
      params.push([name, t]);
    }
    return model.parameters();
  };
  /** The trainable parameters (Tensors shared with the model; [] before setTrainable). */
  model.parameters = () => {
    live();
    return params.map(([, t]) => t);
  };
  /** [name, Tensor] pairs, in the order of parameters(). */
  model.namedParameters = () => {
    live();
    return params.map(([n, t]) => [n, t]);
  };
  /** The model as loaded with each trainable initializer replaced by its
   * current value (Uint8Array; every other byte unchanged). */
  model.save = () => {
    const mh = live();
    return takeBytes(core, (p) => ex.tpw_onnx_model_save(mh, p), 'model.save');
  };
  Object.defineProperty(model, 'disposed', { get: () => disposed });
  model.dispose = () => {
    if (disposed) return;
    disposed = true;
    dropParams();
    for (const g of graphs) g.dispose();
    check(core, ex.tpw_onnx_model_free(h), 'model.dispose()');
  };
  return model;
}

/** A Tensor from a serialized ONNX TensorProto (the test data .pb files). */
export function decodeTensor(bytes) {
  const core = getCore();
  const u8 = toU8(bytes, 'onnx.decodeTensor');
  return withBytes(core, u8, (p, n) =>
    wrapHandle(core.exports.tpw_onnx_tensor_decode(p, n), 'onnx.decodeTensor'));
}

/**
 * Traces fn on exampleInputs (as compile() does: fullgraph, static shapes)
 * and returns the captured graph as a serialized ONNX ModelProto
 * (Uint8Array; ir_version 8, opset 17). The graph inputs are fn's tensor
 * arguments (named after its parameters, or options.inputNames), the
 * outputs its returned tensors in order. A graph break throws
 * GraphCaptureError; an opaque region (allowInGraph, nonstrictTrace,
 * disable, nestedCompileRegion) throws TensorPlayError UNSUPPORTED naming
 * the node; a disposed example input throws DisposedError.
 *   const bytes = tp.onnx.save((x) => x.relu().sum(), [x]);
 */
export function save(fn, exampleInputs = [], options = {}) {
  if (typeof fn !== 'function') throw new TypeError('onnx.save: expected a function');
  const args = Array.isArray(exampleInputs) ? exampleInputs : [exampleInputs];
  const inputs = new Set();
  collectTensors(args, inputs);
  for (const t of inputs) t._handle(); // DisposedError for a disposed input
  const opts = { fullgraph: true, dynamic: false, backend: 'eager', name: fn.name || 'onnx.save' };
  if (options && options.inputNames !== undefined) opts.inputNames = options.inputNames;
  const g = compile(fn, opts);
  if (typeof g._coreHandle !== 'number') {
    throw new TypeError('onnx.save: the function is disabled for capture (compiler.disable)');
  }
  try {
    const out = g(...args);
    const made = new Set();
    collectTensors(out, made);
    for (const t of made) if (!inputs.has(t) && !t.disposed) t.dispose();
    const core = getCore();
    const h = g._coreHandle;
    return takeBytes(core, (p) => core.exports.tpw_compiled_onnx_save(h, p), 'onnx.save');
  } finally {
    g.dispose();
  }
}

/** A Graph (tp.graph.parse, model.graph) as ONNX ModelProto bytes. */
export function saveGraph(graph) {
  if (!(graph instanceof Graph)) throw new TypeError('onnx.saveGraph: expected a Graph');
  const core = getCore();
  const h = graph.handle;
  return takeBytes(core, (p) => core.exports.tpw_graph_onnx_save(h, p), 'onnx.saveGraph');
}

export const onnx = Object.freeze({ load, save, saveGraph, decodeTensor });
