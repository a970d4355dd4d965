// onnx.js - ONNX models and TensorProtos. The importer is C (src/onnx,
// docs/onnx.md); this file marshals bytes and wraps the graph handle.

import { throwLast, takeBytes } from './errors.js';
import { wrapHandle, getCore, collectTensors } from './tensor.js';
import { Graph, run as runGraph } from './graph.js';
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

/**
 * Loads a serialized ONNX model. Returns a callable model:
 *   const model = tp.onnx.load(bytes);
 *   const [y] = model(x);            // or model.run(x), model.run([x])
 *   const { y } = model.run({ x });  // feeds by name -> outputs by name
 *   model.inputNames, model.outputNames, model.graph, model.dispose()
 * Malformed bytes throw a TensorPlayError with status 'PARSE'; ops the
 * importer does not support throw one with status 'UNSUPPORTED'.
 */
export function load(bytes) {
  const core = getCore();
  const u8 = toU8(bytes, 'onnx.load');
  const h = withBytes(core, u8, (p, n) => core.exports.tpw_onnx_load(p, n) >>> 0);
  if (h === 0) throwLast(core, 'onnx.load');
  const graph = new Graph(h);
  const ex = core.exports;
  const nin = ex.tpw_graph_num_inputs(h);
  const inputNames = [];
  for (let i = 0; i < nin; i++) inputNames.push(core.readCString(ex.tpw_graph_input_name(h, i)));
  const op = ex.tpw_onnx_output_names(h);
  const outputNames = op ? core.readCString(op).split(',') : [];
  const model = (...inputs) => model.run(...inputs);
  model.inputNames = inputNames;
  model.outputNames = outputNames;
  model.graph = graph;
  model.run = (...inputs) => {
    if (inputs.length === 1 && Array.isArray(inputs[0])) inputs = inputs[0];
    if (inputs.length === 1 && isFeeds(inputs[0])) {
      const outs = runGraph(graph, feedsToList(inputs[0], inputNames));
      const named = {};
      outs.forEach((t, i) => { named[outputNames[i] ?? `output_${i}`] = t; });
      return named;
    }
    return runGraph(graph, inputs);
  };
  model.dispose = () => graph.dispose();
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
