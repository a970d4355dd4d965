// _onnx_pb.mjs - protobuf helpers for the ONNX tests beyond tp.onnx (which
// decodes TensorProtos and loads models in the Wasm core): a TensorProto's
// name, and tiny ModelProtos built from a description (makeModel), an
// independent writer for models with symbolic dims and shape inputs. Not a
// test (files starting with _ are helpers).

function readVarint(b, pos) {
  let v = 0n, shift = 0n;
  for (;;) {
    if (pos >= b.length) throw new Error('protobuf: truncated varint');
    const c = b[pos++];
    v |= BigInt(c & 0x7f) << shift;
    if (!(c & 0x80)) return [v, pos];
    shift += 7n;
    if (shift > 63n) throw new Error('protobuf: varint too long');
  }
}

function encodeVarint(n) {
  const out = [];
  let v = BigInt(n);
  do {
    let c = Number(v & 0x7fn);
    v >>= 7n;
    if (v) c |= 0x80;
    out.push(c);
  } while (v);
  return out;
}

/** Top-level fields: [{ num, wire, start, end, data }] (data: the payload of length-delimited fields). */
export function fields(b) {
  const out = [];
  let pos = 0;
  while (pos < b.length) {
    const start = pos;
    let key;
    [key, pos] = readVarint(b, pos);
    const num = Number(key >> 3n), wire = Number(key & 7n);
    let data = null;
    if (wire === 0) [, pos] = readVarint(b, pos);
    else if (wire === 1) pos += 8;
    else if (wire === 5) pos += 4;
    else if (wire === 2) {
      let len;
      [len, pos] = readVarint(b, pos);
      data = b.subarray(pos, pos + Number(len));
      pos += Number(len);
    } else throw new Error(`protobuf: wire type ${wire} at byte ${start}`);
    if (pos > b.length) throw new Error(`protobuf: truncated field ${num} at byte ${start}`);
    out.push({ num, wire, start, end: pos, data });
  }
  return out;
}

/** The name (field 8) of a serialized TensorProto, or null. */
export function tensorName(bytes) {
  const f = fields(bytes).find((x) => x.num === 8 && x.wire === 2);
  return f ? new TextDecoder().decode(f.data) : null;
}

function lenField(num, payload) {
  const head = [...encodeVarint((num << 3) | 2), ...encodeVarint(payload.length)];
  const out = new Uint8Array(head.length + payload.length);
  out.set(head, 0);
  out.set(payload, head.length);
  return out;
}

function concatBytes(parts) {
  const n = parts.reduce((s, p) => s + p.length, 0);
  const out = new Uint8Array(n);
  let o = 0;
  for (const p of parts) out.set(p, o), (o += p.length);
  return out;
}

function varintField(num, v) {
  return new Uint8Array([...encodeVarint(num << 3), ...encodeVarint(v)]);
}
const utf8 = (s) => new TextEncoder().encode(s);

/** ValueInfoProto: elem 1 float, 7 int64; dims like [3, 'batch', '?'] or null (no shape). */
function valueInfo(name, elem, dims) {
  const tt = [varintField(1, elem)];
  if (dims) {
    const ds = dims.map((d) => lenField(1, typeof d === 'number' ? varintField(1, d)
      : d === '?' ? new Uint8Array(0) : lenField(2, utf8(d))));
    tt.push(lenField(2, concatBytes(ds)));
  }
  return concatBytes([lenField(1, utf8(name)), lenField(2, lenField(1, concatBytes(tt)))]);
}

/**
 * A ModelProto (opset 17, or `opset`) from a small description:
 *   { nodes: [['Relu', ['x'], ['y']]], inputs: [['x', 1, ['batch', 3]]], outputs: [['y', 1, null]] }
 * A node may carry int, ints, string, strings (an array of strings), float
 * ({ float: 0.2 }) and floats (a Float32Array) attributes:
 * ['LSTM', ins, outs, { hidden_size: 4 }], ['LpPool', ins, outs, { kernel_shape: [2, 2] }],
 * ['TfIdfVectorizer', ins, outs, { mode: 'TF', weights: new Float32Array([1, 2]) }],
 * and graph attributes: ['Scan', ins, outs, { body: { nodes, inputs, outputs } }].
 * Tests build models with symbolic dims and shape inputs with it.
 * initializers: [['w', 3, [4, 2], Int8Array.of(...)]] (name, elem type,
 * dims, a typed array as raw_data) are constants of the graph.
 */
export function makeModel(desc) {
  return concatBytes([varintField(1, 8), lenField(8, concatBytes([lenField(1, new Uint8Array(0)), varintField(2, desc.opset ?? 17)])),
    lenField(7, graphProto(desc, 'test'))]);
}

/** A GraphProto; an attribute whose value is { nodes, inputs, outputs } is a
 * graph attribute (a Scan or Loop body, an If branch). */
function float32Field(num, v) {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setFloat32(0, v, true);
  return concatBytes([new Uint8Array(encodeVarint((num << 3) | 5)), b]);
}

function graphProto({ nodes, inputs, outputs, initializers = [] }, name) {
  const g = [];
  for (const [op, ins, outs, attrs = {}] of nodes) {
    const as = Object.entries(attrs).map(([k, v]) => lenField(5, concatBytes([lenField(1, utf8(k)),
      ...(typeof v === 'string' ? [lenField(4, utf8(v)), varintField(20, 3)]
        : v instanceof Float32Array ? [lenField(7, new Uint8Array(v.buffer, v.byteOffset, v.byteLength)), varintField(20, 6)]
        : Array.isArray(v) && typeof v[0] === 'string' ? [...v.map((e) => lenField(9, utf8(e))), varintField(20, 8)]
        : Array.isArray(v) ? [...v.map((e) => varintField(8, e)), varintField(20, 7)]
        : typeof v === 'object' && typeof v.float === 'number' ? [float32Field(2, v.float), varintField(20, 1)]
        : typeof v === 'object' ? [lenField(6, graphProto(v, k)), varintField(20, 5)]
        : [varintField(3, v), varintField(20, 2)])])));
    g.push(lenField(1, concatBytes([...ins.map((n) => lenField(1, utf8(n))), ...outs.map((n) => lenField(2, utf8(n))),
      lenField(3, utf8(outs[0])), lenField(4, utf8(op)), ...as])));
  }
  g.push(lenField(2, utf8(name)));
  for (const [n, e, d, v] of initializers) { /* TensorProto: dims 1, data_type 2, name 8, raw_data 9 */
    g.push(lenField(5, concatBytes([...d.map((x) => varintField(1, x)), varintField(2, e), lenField(8, utf8(n)),
      lenField(9, new Uint8Array(v.buffer, v.byteOffset, v.byteLength))])));
  }
  for (const [n, e, d] of inputs) g.push(lenField(11, valueInfo(n, e, d)));
  for (const [n, e, d] of outputs) g.push(lenField(12, valueInfo(n, e, d)));
  return concatBytes(g);
}
