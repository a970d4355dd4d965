// ort.js - an onnxruntime-web compatible surface over tensorplay-wasm
// (tensorplay-wasm/ort): InferenceSession.create(bytes | url | path,
// options), session.run(feeds) returning { name: Tensor }, inputNames /
// outputNames, release(), and a Tensor(type, data, dims) with ORT's fields.
// An application written for onnxruntime-web switches by changing its
// import (or with an import map / npm alias): docs/js-api.md, "onnxruntime
// compatibility". Sessions are backed by tp.onnx.load with the stax backend:
// each new input shape (or value of an input that sets a shape) is a
// specialization made on first use (docs/onnx.md, "Models").
import * as tp from './index.js';

// ORT's element types and arrays: float16 is a Uint16Array of bit patterns
// (tp.float16ToFloat32 converts), as in onnxruntime-web
const ARRAYS = {
  float32: Float32Array, int32: Int32Array, int64: BigInt64Array, bool: Uint8Array,
  float16: Uint16Array, int8: Int8Array, uint8: Uint8Array,
};
// inference as onnxruntime-web's: Uint8Array is uint8 (bool needs the type)
const INFER = { float32: Float32Array, int32: Int32Array, int64: BigInt64Array, int8: Int8Array, uint8: Uint8Array };

function typeOfArray(data) {
  for (const [t, A] of Object.entries(INFER)) if (data instanceof A) return t;
  throw new TypeError(`Tensor: cannot infer the type of ${data?.constructor?.name ?? typeof data}`);
}

/** ORT's Tensor: type, data (a typed array), dims, size, location 'cpu'. */
export class Tensor {
  constructor(type, data, dims) {
    if (typeof type !== 'string') { // new Tensor(data, dims)
      dims = data;
      data = type;
      type = typeOfArray(data);
    }
    const A = ARRAYS[type];
    if (!A) {
      throw new TypeError(`Tensor: type '${type}' is not supported (${Object.keys(ARRAYS).join(', ')})`);
    }
    if (Array.isArray(data)) data = type === 'int64' ? BigInt64Array.from(data, (v) => BigInt(v)) : type === 'float16' ? tp.float32ToFloat16(data) : A.from(data, (v) => (type === 'bool' ? (v ? 1 : 0) : v));
    if (!(data instanceof A)) throw new TypeError(`Tensor: ${type} data must be a ${A.name}, got ${data?.constructor?.name ?? typeof data}`);
    dims = dims === undefined ? [data.length] : Array.from(dims);
    for (const d of dims) {
      if (!Number.isInteger(d) || d < 0) throw new TypeError(`Tensor: dims must be non-negative integers, got [${dims}]`);
    }
    const size = dims.reduce((a, b) => a * b, 1);
    if (size !== data.length) throw new RangeError(`Tensor: dims [${dims}] hold ${size} elements, the data has ${data.length}`);
    this.type = type;
    this.data = data;
    this.dims = Object.freeze(dims);
    this.size = size;
    this.location = 'cpu';
  }

  getData() { return this.data; }
  dispose() {}
}

async function readSource(source) {
  if (source instanceof Uint8Array) return source;
  if (source instanceof ArrayBuffer) return new Uint8Array(source);
  if (ArrayBuffer.isView(source)) return new Uint8Array(source.buffer, source.byteOffset, source.byteLength);
  if (typeof source !== 'string') throw new TypeError('InferenceSession.create: expected model bytes, a URL or a file path');
  const isUrl = /^(https?|file|blob|data):/.test(source) || typeof process === 'undefined' || !process.versions?.node;
  if (isUrl && typeof fetch === 'function' && !source.startsWith('file:')) {
    const r = await fetch(source);
    if (!r.ok) throw new Error(`InferenceSession.create: fetching ${source} failed: HTTP ${r.status}`);
    return new Uint8Array(await r.arrayBuffer());
  }
  const { readFile } = await import('node:fs/promises');
  return new Uint8Array(await readFile(source.startsWith('file:') ? new URL(source) : source));
}

/** ORT's InferenceSession over a tensorplay model. */
export class InferenceSession {
  /**
   * options: ORT's session options are accepted (executionProviders,
   * graphOptimizationLevel, ... have no effect here), plus
   * { tensorplay: { backend } } ('stax' by default; 'eager' runs the graph
   * node by node).
   */
  static async create(source, options = {}) {
    if (options === null || typeof options !== 'object') throw new TypeError('InferenceSession.create: options must be an object');
    const bytes = await readSource(source);
    const backend = options.tensorplay?.backend ?? 'stax';
    return new InferenceSession(tp.onnx.load(bytes, { backend: backend === 'eager' ? '' : backend }));
  }

  constructor(model) {
    this._model = model;
    this.inputNames = Object.freeze([...model.inputNames]);
    this.outputNames = Object.freeze([...model.outputNames]);
    this._scalar = new Set((model.inputs ?? []).filter((i) => Array.isArray(i.dims) && i.dims.length === 0).map((i) => i.name));
  }

  /** feeds: { inputName: Tensor }; fetches: output names (optional). */
  async run(feeds, fetches) {
    if (!this._model || this._model.disposed) throw new Error('InferenceSession.run: the session was released');
    if (feeds === null || typeof feeds !== 'object') throw new TypeError('InferenceSession.run: feeds must be an object');
    for (const k of Object.keys(feeds)) {
      if (!this.inputNames.includes(k)) throw new TypeError(`InferenceSession.run: '${k}' is not an input of the model (${this.inputNames.join(', ')})`);
    }
    const names = fetches === undefined || fetches === null ? this.outputNames
      : Array.isArray(fetches) ? fetches : Object.keys(fetches);
    for (const n of names) {
      if (!this.outputNames.includes(n)) throw new TypeError(`InferenceSession.run: '${n}' is not an output of the model (${this.outputNames.join(', ')})`);
    }
    return tp.scope(() => {
      const ins = {};
      for (const n of this.inputNames) {
        const t = feeds[n];
        if (t === undefined) throw new TypeError(`InferenceSession.run: input '${n}' is missing from the feeds`);
        if (!(t && typeof t.type === 'string' && ArrayBuffer.isView(t.data) && Array.isArray(t.dims ? [...t.dims] : null))) {
          throw new TypeError(`InferenceSession.run: feed '${n}' must be a Tensor`);
        }
        if (!ARRAYS[t.type]) throw new TypeError(`InferenceSession.run: feed '${n}' has type '${t.type}', which is not supported`);
        let dims = [...t.dims];
        // As onnxruntime does: an input declared as a scalar accepts any
        // one-element tensor ([1], [1, 1]); @ricky0123/vad-web feeds its
        // `sr` as new Tensor('int64', [16000n]), dims [1].
        if (this._scalar.has(n) && dims.length && t.data.length === 1) dims = [];
        ins[n] = tp.tensor(t.data, { dtype: t.type, shape: dims });
      }
      const outs = this._model.run(ins);
      const result = {};
      for (const n of names) {
        const o = outs[n];
        const data = o.toArray();
        result[n] = new Tensor(o.dtype, o.dtype === 'bool' ? Uint8Array.from(data, (v) => (v ? 1 : 0)) : data, o.shape);
      }
      return result;
    });
  }

  async release() {
    if (this._model && !this._model.disposed) this._model.dispose();
  }
}

/** ORT's env: accepted for compatibility; tensorplay runs on one thread. */
export const env = { wasm: { numThreads: 1, simd: true, proxy: false }, logLevel: 'warning' };

export default { InferenceSession, Tensor, env };
