// npy.js - .npy bytes <-> tensors (the format is decoded and encoded in C).

import { takeBytes } from './errors.js';
import { Tensor, wrapHandle, getCore } from './tensor.js';

/** A Tensor from .npy file bytes (Uint8Array, ArrayBuffer or any ArrayBufferView). */
export function decode(bytes) {
  const core = getCore();
  let u8;
  if (bytes instanceof ArrayBuffer) u8 = new Uint8Array(bytes);
  else if (ArrayBuffer.isView(bytes)) u8 = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  else throw new TypeError('npy.decode: expected bytes (Uint8Array or ArrayBuffer)');
  const p = core.malloc(u8.length);
  try {
    core.views().u8.set(u8, p);
    return wrapHandle(core.exports.tpw_npy_decode(p, u8.length), 'npy.decode');
  } finally {
    core.free(p);
  }
}

/** The .npy bytes of a tensor (a Uint8Array copy). */
export function encode(t) {
  if (!(t instanceof Tensor)) throw new TypeError('npy.encode: expected a Tensor');
  const core = getCore();
  const h = t._handle();
  return takeBytes(core, (out) => core.exports.tpw_npy_encode(h, out), 'npy.encode');
}

export const npy = Object.freeze({ decode, encode });
