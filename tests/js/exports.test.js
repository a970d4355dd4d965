// The Wasm exports the package calls are listed once (js/src/exports.js,
// checked at load by the loader): the list must be exactly the tpw_ names
// used in js/src, each declared in wasm/abi.h and exported by the core.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tp from '../../js/index.js';
import { CORE_EXPORTS } from '../../js/src/exports.js';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

test('CORE_EXPORTS is exactly what js/ calls, and abi.h declares each', () => {
  const used = new Set();
  const files = readdirSync(join(repo, 'js', 'src')).filter((n) => n.endsWith('.js') && n !== 'exports.js')
    .map((n) => join(repo, 'js', 'src', n)).concat([join(repo, 'js', 'index.js')]);
  for (const f of files) {
    const text = readFileSync(f, 'utf8').replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
    // a call tpw_x(...), a member ex.tpw_x / exports.tpw_x, or a name in quotes
    for (const m of text.matchAll(/(?:\bex(?:ports)?\.|['"])(tpw_[a-z0-9_]*[a-z0-9])|\b(tpw_[a-z0-9_]*[a-z0-9])\s*\(/g))
      used.add(m[1] ?? m[2]);
  }
  assert.deepEqual([...used].sort(), [...CORE_EXPORTS].sort());
  const abi = readFileSync(join(repo, 'wasm', 'abi.h'), 'utf8');
  for (const n of CORE_EXPORTS) assert.match(abi, new RegExp(`\\b${n}\\s*\\(`), `${n} is not declared in wasm/abi.h`);
  assert.equal(typeof tp.version, 'string'); // the core loaded, so the loader's check passed
});
