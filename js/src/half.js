// half.js - float16 and bfloat16 bit patterns <-> numbers (docs/js-api.md,
// docs/quantization.md). float16/bfloat16 tensors hold their elements as
// Uint16Array bit patterns; these helpers convert. To the 16-bit formats:
// round to nearest, ties to even, from the double directly (one rounding);
// past the largest finite value +-Infinity; NaN stays NaN.

function roundEven(q) {
  const f = Math.floor(q);
  const r = q - f;
  return f + (r > 0.5 || (r === 0.5 && f % 2 === 1) ? 1 : 0);
}

// a >= 2^-126 (normal range): a = 2^e * x, x in [1, 2)
function exponentOf(a) {
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e--;
  if (2 ** (e + 1) <= a) e++;
  return e;
}

/** The float16 bit pattern of one number. */
export function float16Bits(v) {
  v = Number(v);
  if (Number.isNaN(v)) return 0x7e00;
  const sign = v < 0 || Object.is(v, -0) ? 0x8000 : 0;
  const a = Math.abs(v);
  if (a >= 65520) return sign | 0x7c00; // max 65504 + half an ulp: ties to even -> Infinity
  if (a < 2 ** -14) return sign | roundEven(a * 2 ** 24); // subnormals (1024 = the smallest normal)
  let e = exponentOf(a);
  let m = roundEven((a / 2 ** e) * 1024);
  if (m === 2048) { m = 1024; e++; }
  if (e + 15 >= 31) return sign | 0x7c00;
  return sign | ((e + 15) << 10) | (m - 1024);
}

/** The number a float16 bit pattern stands for. */
export function float16Value(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0x1f) return m ? NaN : sign * Infinity;
  if (e === 0) return sign * m * 2 ** -24;
  return sign * (1024 + m) * 2 ** (e - 25);
}

/** The bfloat16 bit pattern of one number. */
export function bfloat16Bits(v) {
  v = Number(v);
  if (Number.isNaN(v)) return 0x7fc0;
  const sign = v < 0 || Object.is(v, -0) ? 0x8000 : 0;
  const a = Math.abs(v);
  if (a === 0) return sign;
  if (a >= (2 - 2 ** -8) * 2 ** 127) return sign | 0x7f80;
  if (a < 2 ** -126) return sign | roundEven(a * 2 ** 133);
  let e = exponentOf(a);
  let m = roundEven((a / 2 ** e) * 128);
  if (m === 256) { m = 128; e++; }
  if (e + 127 >= 255) return sign | 0x7f80;
  return sign | ((e + 127) << 7) | (m - 128);
}

/** The number a bfloat16 bit pattern stands for. */
export function bfloat16Value(h) {
  const f = new Float32Array(new Uint32Array([(h & 0xffff) << 16]).buffer);
  return f[0];
}

function mapArray(values, fn, Out, what) {
  if (typeof values === 'number') return fn(values);
  if (!values || typeof values.length !== 'number') {
    throw new TypeError(`${what}: expected a number, an array or a typed array`);
  }
  const out = new Out(values.length);
  for (let i = 0; i < values.length; i++) out[i] = fn(values[i]);
  return out;
}

/** float16 bits (Uint16Array, array or one number) -> Float32Array (or a number). */
export function float16ToFloat32(bits) { return mapArray(bits, float16Value, Float32Array, 'float16ToFloat32'); }
/** numbers (Float32Array, array or one number) -> float16 bits as a Uint16Array (or a number). */
export function float32ToFloat16(values) { return mapArray(values, float16Bits, Uint16Array, 'float32ToFloat16'); }
/** bfloat16 bits -> Float32Array (or a number). */
export function bfloat16ToFloat32(bits) { return mapArray(bits, bfloat16Value, Float32Array, 'bfloat16ToFloat32'); }
/** numbers -> bfloat16 bits as a Uint16Array (or a number). */
export function float32ToBfloat16(values) { return mapArray(values, bfloat16Bits, Uint16Array, 'float32ToBfloat16'); }
