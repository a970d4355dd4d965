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
// 19-38 ms sooner with it (docs/benchmarks-web.md, web-start). Minified with
// names kept: classes and functions keep their names (esbuild keepNames).
//
//   node scripts/bundle.mjs            # or: bash scripts/build.sh bundle
//   node scripts/bundle.mjs --out DIR  # elsewhere (tests)
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
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

// js/dist/pool_worker.js: the Wasm threads core's worker script
// (js/src/pool_worker.js with threads.js), which the bundle's threads.js
// starts from beside itself (new URL('./pool_worker.js', import.meta.url)).
await build({
  entryPoints: [join(ROOT, 'js/src/pool_worker.js')],
  outfile: join(outDir, 'pool_worker.js'),
  bundle: true,
  format: 'esm',
  platform: 'neutral',
  target: 'es2022',
  minify: true,
  legalComments: 'none',
  banner: { js: `// tensorplay-wasm ${version}: js/src/pool_worker.js bundled by scripts/bundle.mjs (esbuild). Do not edit.` },
  logLevel: 'warning',
}).catch((e) => {
  console.error(`bundle.mjs: esbuild (pool_worker.js) failed: ${e.message}`);
  process.exit(1);
});

// js/dist/ort.cjs: the onnxruntime-compatible surface (js/ort.js) as one
// CommonJS file for Node packages that `require('onnxruntime-web')` (e.g.
// @ricky0123/vad-web): a require() cannot await, so this build loads the
// core synchronously (loader.js loadCoreSync) from ../wasm/tensorplay.wasm
// beside it, or TP_WASM. The one line of js/index.js that awaits the core is
// replaced at bundle time (and the build fails if that line changes).
const AWAIT_LINE = 'const core = await loadCore(await globalThis.tensorplayWasm);';
const syncCore = {
  name: 'sync-core',
  setup(b) {
    b.onLoad({ filter: /[\\/]js[\\/]index\.js$/ }, (args) => {
      const src = readFileSync(args.path, 'utf8');
      if (!src.includes(AWAIT_LINE)) {
        return { errors: [{ text: `js/index.js no longer has the line "${AWAIT_LINE}" that the CommonJS build replaces` }] };
      }
      const sync = "import { loadCoreSync } from './src/loader.js';\n" + src.replace(AWAIT_LINE,
        "const core = loadCoreSync(globalThis.tensorplayWasm ?? (process.env.TP_WASM || require('node:path').join(__dirname, '..', 'wasm', 'tensorplay.wasm')), require('node:fs'));");
      return { contents: sync, loader: 'js' };
    });
  },
};
const t1 = performance.now();
await build({
  entryPoints: [join(ROOT, 'js/ort.js')],
  outfile: join(outDir, 'ort.cjs'),
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20',
  minify: true,
  keepNames: true,
  sourcemap: 'linked',
  sourcesContent: true,
  legalComments: 'none',
  banner: { js: `// tensorplay-wasm ${version}: js/ort.js as CommonJS, bundled by scripts/bundle.mjs (esbuild). Do not edit; the sources are js/.\nconst __tpModuleUrl = require('node:url').pathToFileURL(__filename).href;` },
  define: { 'import.meta.url': '__tpModuleUrl' }, // js/dist/ort.cjs: '..' is js/, as for js/src/*.js
  logLevel: 'error',
  plugins: [syncCore],
}).catch((e) => {
  console.error(`bundle.mjs: esbuild (ort.cjs) failed: ${e.message}`);
  process.exit(1);
});
console.error(`bundle: js/ort.js -> ${join(outDir, 'ort.cjs')} (CommonJS, ${(performance.now() - t1).toFixed(0)} ms)`);

// examples/web/dist/worker.mjs: the web example's worker (examples/web/
// worker.js, 12 KB, onnx_inputs.js in it), which imports worker_deps.mjs
// beside it (worker_deps.js: the package, models.js and stats.js in one
// file), and pool_worker.js beside them for ?threads=N (threads.js starts it
// from beside the file that holds it). examples/web/index.html starts it by
// default: the worker makes one request before its first result, where
// worker.js with js/dist/tensorplay.mjs made three (the bundle, models.js,
// stats.js), each a revalidation round trip to the server on a reload. Not
// one file: Chromium's code cache serves an imported module compiled, but
// not a worker's own script, which it parsed on every load (the package's
// 125 KB; docs/benchmarks-web.md). TP_WORKER_BUNDLE tells worker.js where it is.
// Not made with --out (the package's build only).
if (outIdx < 0) {
  const webDist = join(ROOT, 'examples/web/dist');
  rmSync(webDist, { recursive: true, force: true }); // nothing of earlier builds
  mkdirSync(webDist, { recursive: true });
  const t2 = performance.now();
  const common = {
    bundle: true,
    format: 'esm',
    platform: 'neutral',
    target: 'es2022',
    minify: true,
    keepNames: true,
    sourcemap: 'linked',
    sourcesContent: true,
    legalComments: 'none',
    define: { TP_WORKER_BUNDLE: 'true' },
    banner: { js: `// tensorplay-wasm ${version}: the web example's worker, bundled by scripts/bundle.mjs (esbuild). Do not edit; the sources are examples/web/ and js/.` },
    logLevel: 'warning',
    metafile: true,
  };
  // worker.mjs imports worker_deps.mjs, built on its own (not as a shared
  // chunk: esbuild's splitting moved its helpers into a third file that
  // worker.mjs imported statically, a round trip before it could run)
  const deps = {
    name: 'worker-deps',
    setup(b) {
      b.onResolve({ filter: /^\.\/worker_deps\.js$/ }, () => ({ path: './worker_deps.mjs', external: true }));
    },
  };
  const outs = [];
  for (const [entry, out, plugins] of [['worker.js', 'worker.mjs', [deps]], ['worker_deps.js', 'worker_deps.mjs', []]]) {
    const r = await build({ ...common, entryPoints: [join(ROOT, 'examples/web', entry)], outfile: join(webDist, out), plugins }).catch((e) => {
      console.error(`bundle.mjs: esbuild (examples/web/${entry}) failed: ${e.message}`);
      process.exit(1);
    });
    outs.push(...Object.entries(r.metafile.outputs).filter(([k]) => k.endsWith('.mjs')).map(([k, o]) => `${k.replace(/.*\//, '')} ${o.bytes} bytes`));
  }
  copyFileSync(join(outDir, 'pool_worker.js'), join(webDist, 'pool_worker.js'));
  console.error(`bundle: examples/web/worker.js -> ${webDist}: ${outs.join(', ')} (${(performance.now() - t2).toFixed(0)} ms), pool_worker.js beside them`);
}
