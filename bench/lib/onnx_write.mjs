// bench/lib/onnx_write.mjs - a minimal hand-written ONNX (protobuf) writer,
// enough for the benchmark models: ModelProto, GraphProto, NodeProto,
// AttributeProto, TensorProto (float32 / int64, raw_data), ValueInfoProto.
// Field numbers from onnx/onnx.proto3. No dependency.
//
//   const g = new OnnxGraph('w2');
//   const x = g.input('x', [64, 784]);
//   const w = g.init('w1', Float32Array, [784, 512]);     // initializer
//   const y = g.op('MatMul', [x, w]);                      // returns output name
//   g.output(y, [64, 10]);
//   writeFileSync('w2.onnx', g.model({ opset: 17 }));

const enc = new TextEncoder();

class Writer {
  constructor() { this.parts = []; this.len = 0; }
  bytes(b) { this.parts.push(b); this.len += b.length; }
  varint(v) {
    let x = BigInt.asUintN(64, BigInt(v));
    const out = [];
    do {
      let b = Number(x & 0x7fn);
      x >>= 7n;
      if (x) b |= 0x80;
      out.push(b);
    } while (x);
    this.bytes(Uint8Array.from(out));
  }
  tag(field, wire) { this.varint((field << 3) | wire); }
  int(field, v) { this.tag(field, 0); this.varint(v); }
  float(field, v) {
    this.tag(field, 5);
    const b = new Uint8Array(4);
    new DataView(b.buffer).setFloat32(0, v, true);
    this.bytes(b);
  }
  lenDelim(field, b) { this.tag(field, 2); this.varint(b.length); this.bytes(b); }
  string(field, s) { this.lenDelim(field, enc.encode(s)); }
  msg(field, w) { this.lenDelim(field, w.finish()); }
  finish() {
    const out = new Uint8Array(this.len);
    let o = 0;
    for (const p of this.parts) { out.set(p, o); o += p.length; }
    return out;
  }
}

const DT = { float32: 1, uint8: 2, int8: 3, int32: 6, int64: 7, float16: 10 };

function tensorProto(name, dtype, dims, data) {
  const w = new Writer();
  for (const d of dims) w.int(1, d);            // dims
  w.int(2, DT[dtype]);                          // data_type
  w.string(8, name);                            // name
  const raw = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  w.lenDelim(9, raw);                           // raw_data (little-endian)
  return w;
}

function valueInfo(name, dims, dtype = 'float32') {
  const shape = new Writer();
  // a number is dim_value; a string is a symbolic dim (dim_param; '' for an unnamed one)
  for (const d of dims) { const dim = new Writer(); if (typeof d === 'string') { if (d) dim.string(2, d); } else dim.int(1, d); shape.msg(1, dim); }
  const tt = new Writer();
  tt.int(1, DT[dtype]);                         // elem_type
  tt.msg(2, shape);                             // shape
  const type = new Writer();
  type.msg(1, tt);                              // TypeProto.tensor_type
  const w = new Writer();
  w.string(1, name);
  w.msg(2, type);
  return w;
}

function attribute(name, v) {
  const w = new Writer();
  w.string(1, name);
  if (typeof v === 'number' && Number.isInteger(v) && !Object.is(v, -0) && !(v instanceof Float)) {
    w.int(3, v); w.int(20, 2);                  // i, type INT
  } else if (v instanceof Float || typeof v === 'number') {
    w.float(2, +v); w.int(20, 1);               // f, type FLOAT
  } else if (typeof v === 'string') {
    w.lenDelim(4, enc.encode(v)); w.int(20, 3); // s, type STRING
  } else if (Array.isArray(v)) {
    for (const x of v) w.int(8, x);             // ints (unpacked is accepted)
    w.int(20, 7);                               // type INTS
  } else throw new Error(`onnx_write: unsupported attribute ${name}`);
  return w;
}

/** Wrap a number to force a FLOAT attribute (e.g. Float(1) for epsilon). */
export class Float { constructor(v) { this.v = v; } valueOf() { return this.v; } }

export class OnnxGraph {
  constructor(name) {
    this.name = name;
    this.nodes = []; this.inits = []; this.inputs = []; this.outputs = [];
    this.n = 0;
  }
  input(name, dims, dtype = 'float32') { this.inputs.push(valueInfo(name, dims, dtype)); return name; }
  output(name, dims, dtype = 'float32') { this.outputs.push(valueInfo(name, dims, dtype)); return name; }
  /** An initializer: data is a Float32Array, BigInt64Array, Int32Array, Int8Array, Uint8Array or Uint16Array (float16 bits). */
  init(name, data, dims) {
    const dtype = data instanceof BigInt64Array ? 'int64' : data instanceof Int32Array ? 'int32' : data instanceof Int8Array ? 'int8' : data instanceof Uint8Array ? 'uint8'
      : data instanceof Uint16Array ? 'float16' : 'float32';
    this.inits.push(tensorProto(name, dtype, dims, data));
    return name;
  }
  scalar(v) { return this.init(`c${this.n++}`, Float32Array.of(v), []); }
  ints(a) { return this.init(`c${this.n++}`, BigInt64Array.from(a.map(BigInt)), [a.length]); }
  /** A node; returns its (first) output name. out: a name, or an array of names (several outputs). */
  op(type, inputs, attrs = {}, out = null) {
    const w = new Writer();
    const outs = Array.isArray(out) ? out : [out ?? `t${this.n++}`];
    const o = outs[0];
    for (const i of inputs) w.string(1, i);
    for (const x of outs) w.string(2, x);
    w.string(3, `${type}_${this.nodes.length}`);
    w.string(4, type);
    for (const [k, v] of Object.entries(attrs)) w.msg(5, attribute(k, v));
    this.nodes.push(w);
    return o;
  }
  /** Serialized ModelProto. */
  model({ opset = 17, irVersion = 8, producer = 'tensorplay-bench' } = {}) {
    const g = new Writer();
    for (const n of this.nodes) g.msg(1, n);
    g.string(2, this.name);
    for (const t of this.inits) g.msg(5, t);
    for (const i of this.inputs) g.msg(11, i);
    for (const o of this.outputs) g.msg(12, o);
    const m = new Writer();
    m.int(1, irVersion);
    m.string(2, producer);
    m.msg(7, g);
    const os = new Writer();
    os.string(1, '');
    os.int(2, opset);
    m.msg(8, os);
    return m.finish();
  }
}
