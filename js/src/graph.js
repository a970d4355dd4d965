// graph.js - graphs as text (docs/graph-format.md): parse, print and run a
// graph on the eager kernels. Used by the parity tests and the demo.

import { DisposedError, check, throwLast, takeBytes } from './errors.js';
import { Tensor, wrapHandle, getCore, MAX_OPERANDS } from './tensor.js';

const MAX_OUT = MAX_OPERANDS; // TP_MAX_OPERANDS results at most

export class Graph {
  constructor(handle) {
    this._h = handle >>> 0;
    this._disposed = false;
  }

  get handle() {
    if (this._disposed) throw new DisposedError('graph was disposed');
    return this._h;
  }

  /** Runs the graph on the inputs (Tensors, in placeholder order); returns an array of Tensors. */
  run(inputs = []) {
    return run(this, inputs);
  }

  /** The stable text form; withData also writes constant tensor bytes. */
  print({ withData = false } = {}) {
    return print(this, { withData });
  }

  dispose() {
    if (this._disposed) return;
    this._disposed = true;
    const core = getCore();
    check(core, core.exports.tpw_graph_free(this._h), 'graph.dispose()');
  }
}

function handleOf(g) {
  if (g instanceof Graph) return g.handle;
  if (typeof g === 'number') return g >>> 0;
  throw new TypeError('expected a Graph (from tp.graph.parse) or a graph handle');
}

/** Parses graph text; returns a Graph (dispose() it when done). */
export function parse(text) {
  const core = getCore();
  const bytes = new TextEncoder().encode(String(text));
  const p = core.malloc(bytes.length + 1);
  try {
    const u8 = core.views().u8;
    u8.set(bytes, p);
    u8[p + bytes.length] = 0;
    const h = core.exports.tpw_graph_parse(p, bytes.length) >>> 0;
    if (h === 0) throwLast(core, 'graph.parse');
    return new Graph(h);
  } finally {
    core.free(p);
  }
}

/**
 * Calls an export of the form f(nin, in_handles, out_handles, max_out) ->
 * count (tpw_graph_run, tpw_onnx_model_run) on Tensors: checks them, passes
 * their handles and wraps the results. what names the call in errors.
 */
export function runOnHandles(what, inputs, call) {
  const core = getCore();
  const handles = inputs.map((t, i) => {
    if (!(t instanceof Tensor)) throw new TypeError(`${what}: input ${i} must be a Tensor`);
    return t._handle();
  });
  const mark = core.stackSave();
  try {
    const inPtr = core.stackAlloc(4 * Math.max(handles.length, 1));
    const outPtr = core.stackAlloc(4 * MAX_OUT);
    core.views().u32.set(handles, inPtr >> 2);
    const n = call(handles.length, inPtr, outPtr, MAX_OUT);
    if (n < 0) throwLast(core, what);
    const u32 = core.views().u32;
    const outs = [];
    for (let i = 0; i < n; i++) outs.push(wrapHandle(u32[(outPtr >> 2) + i]));
    return outs;
  } finally {
    core.stackRestore(mark);
  }
}

/** run(graph, inputs) -> Tensor[] */
export function run(g, inputs = []) {
  const h = handleOf(g);
  return runOnHandles('graph.run', inputs, (n, ip, op, max) => getCore().exports.tpw_graph_run(h, n, ip, op, max));
}

/**
 * The Wasm module stax generates for this graph on a Wasm host (a
 * Uint8Array), for inspection and validation; throws TensorPlayError
 * (UNSUPPORTED) when the graph has no kernel to generate.
 */
export function emitWasm(g) {
  const core = getCore();
  return takeBytes(core, (out) => core.exports.tpw_graph_emit_wasm(handleOf(g), out), 'graph.emitWasm');
}

export function print(g, { withData = false } = {}) {
  const core = getCore();
  const p = core.exports.tpw_graph_print(handleOf(g), withData ? 1 : 0) >>> 0;
  if (p === 0) throwLast(core, 'graph.print');
  try {
    return core.readCString(p);
  } finally {
    core.free(p);
  }
}

export function free(g) {
  if (g instanceof Graph) return g.dispose();
  const core = getCore();
  check(core, core.exports.tpw_graph_free(handleOf(g)), 'graph.free');
}

export const graph = Object.freeze({ parse, run, print, free, emitWasm, Graph });
