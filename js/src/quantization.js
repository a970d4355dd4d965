// quantization.js - tp.quantization: helpers that choose scales and zero
// points and call tp.quantize (docs/quantization.md). They compute with the
// core's ops, so a captured function sees ordinary graph nodes.
import { TensorPlayError, Status } from './errors.js';
import { Tensor, scope } from './tensor.js';
import { where, max, min, quantize } from './ops.js';

function need(x, what) {
  if (!(x instanceof Tensor)) throw new TypeError(`${what} must be a Tensor`);
  if (x.dtype !== 'float32' && x.dtype !== 'float16' && x.dtype !== 'bfloat16') {
    throw new TensorPlayError(`${what} has dtype ${x.dtype}; a float tensor is required`, Status.INVALID_ARG);
  }
}

/**
 * quantizeWeight(w, { axis = 0, dtype = 'int8' }): per-channel quantization
 * of a weight along axis (the output channels of a linear [out, in] or a
 * conv [out, in/g, kh, kw]). int8: symmetric, scale = max|w_c| / 127, zero
 * point 0; uint8: scale = (max(w_c, 0) - min(w_c, 0)) / 255, zero point
 * round(-min / scale). An all-zero channel gets scale 1. Returns
 * { q, scale, zeroPoint } (scale [C] float32, zeroPoint [C] of dtype), for
 * tp.dequantize(q, scale, zeroPoint, { axis }).
 */
export function quantizeWeight(w, options = {}) {
  need(w, 'quantizeWeight(): w');
  const dtype = options.dtype ?? 'int8';
  if (dtype !== 'int8' && dtype !== 'uint8') {
    throw new TensorPlayError(`quantizeWeight(): dtype ${JSON.stringify(dtype)} is not supported (int8, uint8)`, Status.INVALID_ARG);
  }
  const nd = w.ndim;
  let axis = options.axis ?? 0;
  if (!Number.isInteger(axis) || axis < -nd || axis >= nd) {
    throw new TensorPlayError(`quantizeWeight(): axis ${axis} is out of range for w of rank ${nd}`, Status.INVALID_ARG);
  }
  if (axis < 0) axis += nd;
  const dims = [...Array(nd).keys()].filter((d) => d !== axis);
  return scope(() => {
    const wf = w.cast('float32');
    const hi = dims.length ? max(wf, { dim: dims }) : wf;
    const lo = dims.length ? min(wf, { dim: dims }) : wf;
    let scale, zeroPoint;
    if (dtype === 'int8') {
      const m = where(hi.abs().gt(lo.abs()), hi.abs(), lo.abs());
      scale = m.div(127);
      zeroPoint = scale.mul(0).cast('int8');
    } else {
      const h = where(hi.gt(0), hi, 0), l = where(lo.lt(0), lo, 0);
      scale = h.sub(l).div(255);
      const safe = where(scale.eq(0), 1, scale);
      zeroPoint = l.neg().div(safe).round().cast('uint8');
    }
    scale = where(scale.eq(0), 1, scale);
    const q = quantize(w, scale, zeroPoint, { axis });
    return { q, scale, zeroPoint };
  });
}

/**
 * dynamicQuantize(x): ONNX DynamicQuantizeLinear: uint8 with scale =
 * (max(x, 0) - min(x, 0)) / 255 and zero point round(-min / scale) over all
 * of x. Returns { q, scale, zeroPoint } (0-d scale and zero point). An
 * all-zero x gives zeros with scale 1 (ONNX gives scale 0 there).
 */
export function dynamicQuantize(x) {
  need(x, 'dynamicQuantize(): x');
  return scope(() => {
    const xf = x.cast('float32');
    const hi = max(xf), lo = min(xf);
    const h = where(hi.gt(0), hi, 0), l = where(lo.lt(0), lo, 0);
    const s0 = h.sub(l).div(255);
    const scale = where(s0.eq(0), 1, s0);
    const zeroPoint = l.neg().div(scale).round().cast('uint8');
    const q = quantize(x, scale, zeroPoint);
    return { q, scale, zeroPoint };
  });
}

export const quantization = Object.freeze({ quantizeWeight, dynamicQuantize });
