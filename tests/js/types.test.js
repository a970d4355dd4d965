// The TypeScript declarations (js/types/index.d.ts) cover the whole public
// API: every export of js/index.js, every member of its namespace objects
// (compiler, graph, onnx, npy, errors, ops, config, nn, optim, Status) and every public
// Tensor method. A text check (no TypeScript compiler on this machine's
// registries is needed): each name must appear as a declaration in the file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as tp from '../../js/index.js';

const dts = readFileSync(new URL('../../js/types/index.d.ts', import.meta.url), 'utf8');
const esc = (s) => s.replace(/[$]/g, '\\$');
const declared = (name) =>
  new RegExp(`(function|const|class|let|interface|type|namespace|enum)\\s+${esc(name)}\\b`).test(dts) ||
  new RegExp(`(^|[\\s{;,(])(readonly\\s+)?${esc(name)}\\??\\s*[:(<]`, 'm').test(dts);

test('every export of js/index.js is declared', () => {
  const missing = Object.keys(tp).filter((k) => !declared(k));
  assert.deepEqual(missing, [], `not in index.d.ts: ${missing.join(', ')}`);
});

test('every member of the namespace objects is declared', () => {
  const missing = [];
  for (const ns of ['compiler', 'graph', 'onnx', 'npy', 'errors', 'ops', 'config', 'nn', 'optim']) {
    for (const k of Object.keys(tp[ns])) if (!declared(k)) missing.push(`${ns}.${k}`);
  }
  // Status: Record<StatusName, number>, the names a string-literal union
  const union = /type StatusName =([^;]*);/.exec(dts)?.[1] ?? '';
  for (const k of Object.keys(tp.Status)) if (!union.includes(`'${k}'`)) missing.push(`Status.${k}`);
  assert.deepEqual(missing, [], `not in index.d.ts: ${missing.join(', ')}`);
});

test('every public Tensor method and getter is declared', () => {
  const names = Object.getOwnPropertyNames(tp.Tensor.prototype).filter((k) => k !== 'constructor' && !k.startsWith('_'));
  assert.ok(names.includes('conv2d') && names.includes('toArray'), 'the prototype lists methods');
  const missing = names.filter((k) => !declared(k));
  assert.deepEqual(missing, [], `Tensor members not in index.d.ts: ${missing.join(', ')}`);
});
