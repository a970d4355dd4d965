// _ref.mjs - a plain-JS reference for the JS tests: small strided-free
// arrays { shape, data } computed in float64, and closeness checks.
import assert from 'node:assert/strict';

export const RTOL = 1e-5;
export const ATOL = 1e-6;

export function numel(shape) {
  return shape.reduce((a, b) => a * b, 1);
}

export function strides(shape) {
  const s = new Array(shape.length);
  let acc = 1;
  for (let i = shape.length - 1; i >= 0; i--) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

/** Deterministic pseudo-random values in [lo, hi). */
export function seq(n, seed = 1, lo = -2, hi = 2) {
  let x = seed >>> 0 || 1;
  const out = new Array(n);
  for (let i = 0; i < n; i++) {
    x ^= x << 13; x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5; x >>>= 0;
    out[i] = Math.fround(lo + ((x % 100000) / 100000) * (hi - lo));
  }
  return out;
}

export function arr(shape, data) {
  return { shape: shape.slice(), data: Array.from(data, Number) };
}

function unravel(i, shape) {
  const idx = new Array(shape.length);
  for (let k = shape.length - 1; k >= 0; k--) {
    idx[k] = i % shape[k];
    i = Math.floor(i / shape[k]);
  }
  return idx;
}

export function broadcastShape(a, b) {
  const n = Math.max(a.length, b.length);
  const out = [];
  for (let i = 0; i < n; i++) {
    const x = a[a.length - n + i] ?? 1;
    const y = b[b.length - n + i] ?? 1;
    if (x !== y && x !== 1 && y !== 1) throw new Error(`ref: cannot broadcast [${a}] [${b}]`);
    out.push(x === 1 ? y : x);
  }
  return out;
}

function at(a, idx) {
  // idx is in the broadcast shape; a is right-aligned with size-1 dims
  const off = idx.length - a.shape.length;
  const st = strides(a.shape);
  let p = 0;
  for (let k = 0; k < a.shape.length; k++) p += (a.shape[k] === 1 ? 0 : idx[off + k]) * st[k];
  return a.data[p];
}

export function nary(fn, ...xs) {
  const shape = xs.map((x) => x.shape).reduce(broadcastShape);
  const n = numel(shape);
  const data = new Array(n);
  for (let i = 0; i < n; i++) {
    const idx = unravel(i, shape);
    data[i] = fn(...xs.map((x) => at(x, idx)));
  }
  return { shape, data };
}

export const map = (a, fn) => ({ shape: a.shape.slice(), data: a.data.map(fn) });

export function matmul2(a, b) {
  const [m, k] = a.shape;
  const n = b.shape[1];
  const data = new Array(m * n).fill(0);
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let t = 0; t < k; t++) s += a.data[i * k + t] * b.data[t * n + j];
      data[i * n + j] = s;
    }
  return { shape: [m, n], data };
}

export function transpose2(a) {
  const [m, n] = a.shape;
  const data = new Array(m * n);
  for (let i = 0; i < m; i++) for (let j = 0; j < n; j++) data[j * m + i] = a.data[i * n + j];
  return { shape: [n, m], data };
}

export function permute(a, perm) {
  const shape = perm.map((p) => a.shape[p]);
  const st = strides(a.shape);
  const n = numel(shape);
  const data = new Array(n);
  for (let i = 0; i < n; i++) {
    const idx = unravel(i, shape);
    let p = 0;
    for (let k = 0; k < perm.length; k++) p += idx[k] * st[perm[k]];
    data[i] = a.data[p];
  }
  return { shape, data };
}

/** Reduce over dims with fn(values array) -> number. */
export function reduce(a, dims, keepdim, fn) {
  const nd = a.shape.length;
  dims = (dims.length ? dims : a.shape.map((_, i) => i)).map((d) => (d < 0 ? d + nd : d));
  const outShapeKeep = a.shape.map((s, i) => (dims.includes(i) ? 1 : s));
  const groups = new Map();
  for (let i = 0; i < a.data.length; i++) {
    const idx = unravel(i, a.shape).map((v, k) => (dims.includes(k) ? 0 : v));
    const key = idx.reduce((acc, v, k) => acc * outShapeKeep[k] + v, 0);
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(a.data[i]);
  }
  const n = numel(outShapeKeep);
  const data = new Array(n);
  for (let i = 0; i < n; i++) data[i] = fn(groups.get(i));
  const shape = keepdim ? outShapeKeep : a.shape.filter((_, i) => !dims.includes(i));
  return { shape, data };
}

/** Apply fn(vector) -> vector along dim. */
export function alongDim(a, dim, fn) {
  const nd = a.shape.length;
  if (dim < 0) dim += nd;
  const perm = [...a.shape.keys()].filter((k) => k !== dim).concat([dim]);
  const p = permute(a, perm);
  const len = a.shape[dim];
  const out = [];
  for (let i = 0; i < p.data.length; i += len) out.push(...fn(p.data.slice(i, i + len)));
  const inv = new Array(nd);
  perm.forEach((q, i) => (inv[q] = i));
  return permute({ shape: p.shape, data: out }, inv);
}

export function softmaxVec(v) {
  const m = Math.max(...v);
  const e = v.map((x) => Math.exp(x - m));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / s);
}

export function erf(x) {
  // Abramowitz-Stegun 7.1.26 is too coarse for 1e-5; use a series / continued fraction.
  const sign = x < 0 ? -1 : 1;
  x = Math.abs(x);
  if (x < 3) {
    let sum = x, term = x, n = 0;
    while (Math.abs(term) > 1e-17 * Math.abs(sum)) {
      n++;
      term *= (-x * x) / n;
      sum += term / (2 * n + 1);
      if (n > 200) break;
    }
    return sign * (2 / Math.sqrt(Math.PI)) * sum;
  }
  // erfc continued fraction for large x
  let f = 0;
  for (let k = 60; k >= 1; k--) f = (k / 2) / (x + f);
  const erfc = Math.exp(-x * x) / Math.sqrt(Math.PI) / (x + f);
  return sign * (1 - erfc);
}

/** Asserts the tensor's values are close to expected (array or {shape,data}). */
export function assertClose(actual, expected, { rtol = RTOL, atol = ATOL, msg = '' } = {}) {
  const exp = Array.isArray(expected) || ArrayBuffer.isView(expected) ? Array.from(expected, Number) : expected.data;
  const act = Array.from(actual, Number);
  assert.equal(act.length, exp.length, `${msg} length ${act.length} != ${exp.length}`);
  for (let i = 0; i < exp.length; i++) {
    const a = act[i];
    const e = exp[i];
    if (Number.isNaN(e)) {
      assert.ok(Number.isNaN(a), `${msg} [${i}]: expected NaN, got ${a}`);
      continue;
    }
    if (!Number.isFinite(e)) {
      assert.equal(a, e, `${msg} [${i}]`);
      continue;
    }
    const tol = atol + rtol * Math.abs(e);
    assert.ok(Math.abs(a - e) <= tol, `${msg} [${i}]: got ${a}, expected ${e} (tol ${tol})`);
  }
}

export function assertTensor(t, expected, opts = {}) {
  if (expected.shape) assert.deepEqual(t.shape, expected.shape, `${opts.msg ?? ''} shape`);
  assertClose(t.toArray(), expected, opts);
}

/** conv2d by its definition (NCHW; pads [top, left, bottom, right]). */
export function conv2d(x, w, b, { stride = [1, 1], pads = [0, 0, 0, 0], dilation = [1, 1], groups = 1 } = {}) {
  const [N, C, H, W] = x.shape, [M, Cg, KH, KW] = w.shape, Mg = M / groups;
  const OH = Math.floor((H + pads[0] + pads[2] - (dilation[0] * (KH - 1) + 1)) / stride[0]) + 1;
  const OW = Math.floor((W + pads[1] + pads[3] - (dilation[1] * (KW - 1) + 1)) / stride[1]) + 1;
  const out = [];
  for (let n = 0; n < N; n++)
    for (let m = 0; m < M; m++)
      for (let i = 0; i < OH; i++)
        for (let j = 0; j < OW; j++) {
          let acc = b ? b.data[m] : 0;
          for (let c = 0; c < Cg; c++)
            for (let kh = 0; kh < KH; kh++)
              for (let kw = 0; kw < KW; kw++) {
                const ih = i * stride[0] - pads[0] + kh * dilation[0], iw = j * stride[1] - pads[1] + kw * dilation[1];
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                const cx = Math.floor(m / Mg) * Cg + c;
                acc += x.data[((n * C + cx) * H + ih) * W + iw] * w.data[((m * Cg + c) * KH + kh) * KW + kw];
              }
          out.push(acc);
        }
  return { shape: [N, M, OH, OW], data: out };
}

/** max / avg pooling by definition (NCHW; pads [top, left, bottom, right]). */
export function pool2d(x, kind, k, stride, pads, countIncludePad) {
  const [N, C, H, W] = x.shape;
  const OH = Math.floor((H + pads[0] + pads[2] - k[0]) / stride[0]) + 1;
  const OW = Math.floor((W + pads[1] + pads[3] - k[1]) / stride[1]) + 1;
  const out = [];
  for (let nc = 0; nc < N * C; nc++)
    for (let i = 0; i < OH; i++)
      for (let j = 0; j < OW; j++) {
        let acc = kind === 'max' ? -Infinity : 0, cnt = 0;
        for (let a = 0; a < k[0]; a++)
          for (let b = 0; b < k[1]; b++) {
            const ih = i * stride[0] - pads[0] + a, iw = j * stride[1] - pads[1] + b;
            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
            const v = x.data[(nc * H + ih) * W + iw];
            acc = kind === 'max' ? Math.max(acc, v) : acc + v;
            cnt++;
          }
        out.push(kind === 'max' ? acc : acc / (countIncludePad ? k[0] * k[1] : cnt));
      }
  return { shape: [N, C, OH, OW], data: out };
}
