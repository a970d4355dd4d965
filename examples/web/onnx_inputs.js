// onnx_inputs.js - the inputs the web example feeds an ONNX model: shapes
// from the model's declared inputs (tp.onnx.load(...).inputs: dtype, dims
// with null for a symbolic dim, dimNames), a default for every symbolic dim
// that the user can edit, and values that the user can edit for small
// integer inputs (an int64 scalar like Silero VAD's `sr` sets a branch or a
// shape). Pure functions of the declared inputs and the edits, so a test can
// make the same inputs in Node (tests/browser/web_onnx.test.mjs).
//
// A field of the form is keyed:
//   `dim:NAME`           a named symbolic dim (every input that declares NAME shares it)
//   `dim:INPUT:AXIS`     an unnamed symbolic dim ('?' or no name)
//   `value:INPUT`        the values of a small integer input, comma separated

/** Values that some well-known inputs need (the rest: zeros). */
export const VALUE_HINTS = { sr: [16000], sample_rate: [16000], sampling_rate: [16000] };

const INT_DTYPES = new Set(['int64', 'int32', 'int8', 'uint8', 'int16', 'uint16', 'bool']);
/** Integer inputs with at most this many elements get a value field. */
export const MAX_VALUE_FIELD = 16;

const unnamed = (n) => n === null || n === undefined || n === '' || n === '?';

/** The key of the form field for a symbolic dim. */
export function dimKey(input, axis) {
  const n = input.dimNames?.[axis];
  return unnamed(n) ? `dim:${input.name}:${axis}` : `dim:${n}`;
}

/** The default of a symbolic dim: 1 for a batch-like or unknown axis, 64 for
 * an image side (the last two axes of a rank-4 input), 512 for a sequence
 * (the last axis of a rank-2 input, e.g. audio samples). */
export function defaultDim(input, axis) {
  const rank = input.dims.length;
  const n = String(input.dimNames?.[axis] ?? '');
  if (axis === 0 || /batch|^n$/i.test(n)) return 1;
  if (rank === 4 && axis >= 2) return 64;
  if (rank === 2 && axis === 1) return 512;
  return 1;
}

/**
 * The resolved inputs: [{ name, dtype, declared, dims, fields: [{ key, label,
 * value }], values? }] from the declared inputs and `edits` (an object of
 * field key -> string or number, e.g. from the form). Throws a RangeError
 * naming the field for a dim that is not a positive integer or a value that
 * is not an integer.
 */
export function resolveInputs(declared, edits = {}) {
  const shared = new Map(); // dim:NAME -> value
  return declared.map((input) => {
    const fields = [];
    const dims = input.dims.map((d, axis) => {
      if (d !== null && d !== undefined) return d;
      const key = dimKey(input, axis);
      let v = shared.get(key);
      if (v === undefined) {
        v = key in edits ? parseDim(edits[key], key, input, axis) : defaultDim(input, axis);
        shared.set(key, v);
      }
      const name = input.dimNames?.[axis];
      fields.push({ key, label: `${input.name} axis ${axis}${unnamed(name) ? '' : ` (${name})`}`, value: v });
      return v;
    });
    const out = { name: input.name, dtype: input.dtype, declared: input.dims, dimNames: input.dimNames, dims, fields };
    const count = dims.reduce((a, b) => a * b, 1);
    if (INT_DTYPES.has(input.dtype) && count <= MAX_VALUE_FIELD) {
      const key = `value:${input.name}`;
      const def = VALUE_HINTS[input.name] && VALUE_HINTS[input.name].length === count ? VALUE_HINTS[input.name] : new Array(count).fill(0);
      const values = key in edits ? parseValues(edits[key], key, input, count) : def;
      out.values = values;
      fields.push({ key, label: `${input.name} value${count === 1 ? '' : 's'} (${input.dtype}[${dims.join(',')}])`, value: values.join(', '), kind: 'value' });
    }
    return out;
  });
}

function parseDim(v, key, input, axis) {
  const n = typeof v === 'number' ? v : Number(String(v).trim());
  if (!Number.isInteger(n) || n < 1 || n > 2 ** 24) {
    throw new RangeError(`${input.name} axis ${axis} (${key}) must be a positive integer, got ${JSON.stringify(v)}`);
  }
  return n;
}

function parseValues(v, key, input, count) {
  const parts = String(v).split(',').map((s) => s.trim()).filter((s) => s !== '');
  const nums = parts.map((s) => (s === 'true' ? 1 : s === 'false' ? 0 : Number(s)));
  if (nums.some((n) => !Number.isSafeInteger(n))) {
    throw new RangeError(`${input.name} (${key}) must be integers separated by commas, got ${JSON.stringify(v)}`);
  }
  if (nums.length !== count) {
    throw new RangeError(`${input.name} (${key}) needs ${count} value${count === 1 ? '' : 's'} for shape [${input.dims.join(', ')}], got ${nums.length}`);
  }
  return nums;
}

/** Tensors for resolved inputs: float inputs random normal (seed 1 + the
 * input's index), integer inputs their values (or zeros), bool false. */
export function makeInputs(tp, resolved) {
  return resolved.map((r, i) => {
    if (r.dtype === 'float32') return tp.randn(r.dims, { seed: 1 + i });
    if (r.dtype === 'float16' || r.dtype === 'bfloat16') return tp.scope(() => tp.randn(r.dims, { seed: 1 + i }).cast(r.dtype));
    if (r.values) {
      const data = r.dtype === 'int64' ? BigInt64Array.from(r.values, (v) => BigInt(v))
        : r.dtype === 'bool' ? Uint8Array.from(r.values, (v) => (v ? 1 : 0))
          : Int32Array.from(r.values);
      return tp.tensor(data, { shape: r.dims, dtype: r.dtype });
    }
    return tp.zeros(r.dims, { dtype: r.dtype });
  });
}
