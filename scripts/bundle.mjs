#!/usr/bin/env node
// scripts/bundle.mjs - the package's one-file browser build: bundles js/index.js
// and its modules (js/src/*.js) with esbuild into js/dist/tensorplay.mjs
// (+ .map), exported as `tensorplay-wasm/bundle`.
//
// Same ES module, same API, same core (it loads ../wasm/tensorplay.wasm
// relative to its own import.meta.url, like js/src/loader.js does): only
// the delivery differs. A page that imports js/index.js makes 17 requests in
// two rounds (the entry, then its modules), over HTTP/1.1's 6 connections per
// host; the bundle, one. The web example's first result came a median of
// 19-38 ms sooner with it (docs/benchmarks.md, web-start). Minified with
// names kept: classes and functions keep their names (esbuild keepNames).
//
//   node scripts/bundle.mjs            # or: bash scripts/build.sh bundle
//   node scripts/bundle.mjs --out DIR  # elsewhere (tests)
import { build } from 'esbuild';
import { mkdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);
const outIdx = argv.indexOf('--out');
const outDir = outIdx >= 0 ? resolve(argv[outIdx + 1] ?? '') : join(ROOT, 'js/dist');
if (outIdx >= 0 && !argv[outIdx + 1]) {
  console.error('bundle.mjs: --out needs a directory');
  process.exit(2);
}
const { version } = JSON.parse(readFileSync(join(ROOT, 'js/package.json'), 'utf8'));

mkdirSync(outDir, { recursive: true });
const t0 = performance.now();
const result = await build({
  entryPoints: [join(ROOT, 'js/index.js')],
  outfile: join(outDir, 'tensorplay.mjs'),
  bundle: true,
  format: 'esm',
  platform: 'neutral', // no Node built-ins bundled; the loader's node: import stays dynamic
  target: 'es2022', // top-level await
  minify: true,
  keepNames: true,
  sourcemap: 'linked',
  sourcesContent: true,
  legalComments: 'none',
  banner: { js: `// tensorplay-wasm ${version}: js/index.js bundled by scripts/bundle.mjs (esbuild). Do not edit; the sources are js/src/.` },
  logLevel: 'warning',
  metafile: true,
}).catch((e) => {
  console.error(`bundle.mjs: esbuild failed: ${e.message}`);
  process.exit(1);
});
const out = Object.entries(result.metafile.outputs).find(([k]) => k.endsWith('.mjs'));
const inputs = Object.keys(result.metafile.inputs).length;
console.error(`bundle: ${inputs} modules -> ${join(outDir, 'tensorplay.mjs')} (${out[1].bytes} bytes, ${(performance.now() - t0).toFixed(0)} ms)`);
