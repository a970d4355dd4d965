// _onnx_pb.mjs - the few protobuf helpers the ONNX conformance runner needs
// beyond tp.onnx (which decodes TensorProtos and loads models in the Wasm
// core): a TensorProto's name, and a ModelProto with some graph inputs
// bound to constants (appended as initializers of the same name, which the
// importer reads as constants: docs/onnx.md), the JS counterpart of the C
// runner's tp_onnx_load_with. Not a test (files starting with _ are helpers).

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

/**
 * ModelProto bytes with each TensorProto in `tensors` (serialized, named
 * after a graph input) appended to the graph's initializers (GraphProto
 * field 5; ModelProto.graph is field 7).
 */
export function bindInputs(modelBytes, tensors) {
  const parts = [];
  let found = false;
  for (const f of fields(modelBytes)) {
    if (f.num === 7 && f.wire === 2 && !found) {
      found = true;
      parts.push(lenField(7, concatBytes([f.data, ...tensors.map((t) => lenField(5, t))])));
    } else {
      parts.push(modelBytes.subarray(f.start, f.end));
    }
  }
  if (!found) throw new Error('onnx: the model has no graph');
  return concatBytes(parts);
}
