// structure.js - argument and result structures: tensors inside arrays and
// plain objects are flattened to a list (their handles cross to the core),
// everything else stays in a template that rebuilds the value.
//
// A template mirrors the value: { t: i } (the i-th tensor) | { a: [...] } |
// { o: [[key, tpl], ...] } | { v: value } (a non-tensor leaf, kept as is).

import { Tensor } from './tensor.js';
import { GraphCaptureError } from './errors.js';
import { isPlainObject, keyOf, typeName } from './host.js';

/** Flattens arguments: { tensors, tpl }. Only arrays and plain objects are entered. */
export function flattenArgs(value, tensors = []) {
  const seen = new Set();
  const walk = (v) => {
    if (v instanceof Tensor) {
      tensors.push(v);
      return { t: tensors.length - 1 };
    }
    if (Array.isArray(v) || isPlainObject(v)) {
      if (seen.has(v)) return { v };
      seen.add(v);
      const r = Array.isArray(v) ? { a: v.map(walk) } : { o: Object.keys(v).map((k) => [k, walk(v[k])]) };
      seen.delete(v);
      return r;
    }
    return { v };
  };
  const tpl = walk(value);
  return { tensors, tpl };
}

/**
 * Flattens a result. strict: only tensors, arrays and plain objects of
 * tensors (an opaque region's outputs); otherwise non-tensor leaves are kept.
 */
export function flattenOutput(v, tensors, strict = false) {
  if (v instanceof Tensor) {
    tensors.push(v);
    return { t: tensors.length - 1 };
  }
  if (Array.isArray(v)) return { a: v.map((x) => flattenOutput(x, tensors, strict)) };
  if (isPlainObject(v)) return { o: Object.keys(v).map((k) => [k, flattenOutput(v[k], tensors, strict)]) };
  if (strict) throw new GraphCaptureError('nested compile regions must return tensors or tensor containers');
  if (v !== null && typeof v === 'object') {
    throw new TypeError(
      'a compiled function must return a Tensor, or arrays / plain objects of Tensors ' +
        `(got ${typeName(v)})`);
  }
  if (typeof v === 'function' || typeof v === 'symbol') {
    throw new TypeError(`a compiled function cannot return a ${typeof v}`);
  }
  return { v };
}

export function countTensors(tpl) {
  if ('t' in tpl) return 1;
  if ('a' in tpl) return tpl.a.reduce((n, x) => n + countTensors(x), 0);
  if ('o' in tpl) return tpl.o.reduce((n, [, x]) => n + countTensors(x), 0);
  return 0;
}

export function rebuild(tpl, tensors) {
  if ('t' in tpl) return tensors[tpl.t];
  if ('a' in tpl) return tpl.a.map((x) => rebuild(x, tensors));
  if ('o' in tpl) {
    const o = {};
    for (const [k, x] of tpl.o) o[k] = rebuild(x, tensors);
    return o;
  }
  return tpl.v;
}

/** Rebuilds a result: the template when its tensor count matches, else the tensor or the list. */
export function rebuildResult(tpl, tensors) {
  if (tpl && countTensors(tpl) === tensors.length) return rebuild(tpl, tensors);
  return tensors.length === 1 ? tensors[0] : tensors;
}

/**
 * The key of the non-tensor parts of a template: numbers, booleans and
 * strings by value, other objects by identity ("obj#7"). "" when the
 * arguments are plain tensors.
 */
export function argsKey(tpls) {
  const part = (t) => {
    if ('t' in t) return 'T';
    if ('a' in t) return `[${t.a.map(part).join(',')}]`;
    if ('o' in t) return `{${t.o.map(([k, x]) => `${JSON.stringify(k)}:${part(x)}`).join(',')}}`;
    const v = t.v;
    if (v === null) return 'None';
    switch (typeof v) {
      case 'undefined': return 'undefined';
      case 'boolean': return v ? 'True' : 'False';
      case 'number': return Number.isInteger(v) ? `int:${v}` : `float:${v}`;
      case 'bigint': return `int:${v}`;
      case 'string': return `str:${JSON.stringify(v)}`;
      case 'symbol': return `sym:${String(v.description)}`;
      default: return `${typeName(v)}#${keyOf(v)}`;
    }
  };
  const parts = [];
  tpls.forEach((t, i) => {
    if (!('t' in t)) parts.push(`${i}:${part(t)}`);
  });
  return parts.join('|');
}
