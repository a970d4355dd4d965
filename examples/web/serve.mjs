#!/usr/bin/env node
// serve.mjs - a tiny static server for the web example. Serves the repo root
// (so /js/index.js, /js/wasm/tensorplay.wasm and /examples/web/ resolve) on
// 127.0.0.1 only, with correct MIME types (application/wasm for .wasm, which
// WebAssembly.compileStreaming requires).
//
//   node examples/web/serve.mjs [PORT]      # or PORT=... ; default 8080
//   then open http://127.0.0.1:8080/examples/web/
//
// Pages are served cross-origin isolated (COOP/COEP: SharedArrayBuffer for
// the Wasm threads core, and a 5 us performance.now() in workers); a URL
// with ?coi=0 is served without. Port 0 picks a free port. The first line printed is
// "serving ROOT at http://127.0.0.1:PORT/" (tests read the port from it).
// Importable too: `const { server, port } = await serve({ port: 0 })`.
import { createServer } from 'node:http';
import { stat, readFile } from 'node:fs/promises';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = resolve(fileURLToPath(new URL('../../', import.meta.url)));

const MIME = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.md': 'text/markdown; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.ts': 'text/plain; charset=utf-8',
  '.onnx': 'application/octet-stream',
  '.npy': 'application/octet-stream',
  '.tpg': 'text/plain; charset=utf-8',
};

async function handle(req, res, root) {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain' });
    res.end('method not allowed\n');
    return;
  }
  let path;
  try {
    path = decodeURIComponent(new URL(req.url, 'http://localhost').pathname);
  } catch {
    res.writeHead(400, { 'Content-Type': 'text/plain' });
    res.end('bad request\n');
    return;
  }
  if (path === '/') {
    res.writeHead(302, { Location: '/examples/web/' });
    res.end();
    return;
  }
  if (path === '/favicon.ico') {
    res.writeHead(204); // no icon (and no 404 in the console)
    res.end();
    return;
  }
  let file = normalize(join(root, path));
  if (file !== root && !file.startsWith(root + sep)) {
    res.writeHead(403, { 'Content-Type': 'text/plain' });
    res.end('forbidden\n');
    return;
  }
  try {
    let st = await stat(file);
    if (st.isDirectory()) {
      if (!path.endsWith('/')) {
        res.writeHead(301, { Location: path + '/' });
        res.end();
        return;
      }
      file = join(file, 'index.html');
      st = await stat(file);
    }
    // validators, so that reloads revalidate (304) and the browser can reuse
    // its cached copy and its compiled-Wasm code cache
    const etag = `"${st.size.toString(16)}-${Math.floor(st.mtimeMs).toString(16)}"`;
    const common = {
      ETag: etag,
      'Last-Modified': st.mtime.toUTCString(),
      'Cache-Control': 'no-cache',
    };
    // cross-origin isolation: SharedArrayBuffer, so the Wasm threads core
    // can run (globalThis.tensorplayThreads), and performance.now() at 5 us
    // instead of 100 us (the timings of small models). ?coi=0 on a URL
    // serves it without (the threads tests' non-isolated page).
    if (!/[?&]coi=0(&|$)/.test(req.url)) {
      common['Cross-Origin-Opener-Policy'] = 'same-origin';
      common['Cross-Origin-Embedder-Policy'] = 'require-corp';
    }
    if (req.headers['if-none-match'] === etag) {
      res.writeHead(304, common);
      res.end();
      return;
    }
    const body = await readFile(file);
    res.writeHead(200, {
      ...common,
      'Content-Type': MIME[extname(file).toLowerCase()] ?? 'application/octet-stream',
      'Content-Length': body.length,
      'X-Content-Type-Options': 'nosniff',
    });
    res.end(req.method === 'HEAD' ? undefined : body);
  } catch (e) {
    const code = e.code === 'ENOENT' || e.code === 'ENOTDIR' ? 404 : 500;
    res.writeHead(code, { 'Content-Type': 'text/plain; charset=utf-8' });
    res.end(code === 404 ? `not found: ${path}\n` : `error: ${e.message}\n`);
  }
}

/** Why js/dist/tensorplay.mjs (the package's bundle) or examples/web/dist/
 * worker.mjs (the web example's worker with the package in it, which
 * index.html starts) is older than its sources, or null: the page would run
 * the old code. */
export function staleBundle(root = ROOT) {
  const pkg = [join(root, 'js/index.js'), ...readdirSync(join(root, 'js/src')).map((f) => join(root, 'js/src', f))];
  const web = ['worker.js', 'worker_deps.js', 'models.js', 'stats.js', 'onnx_inputs.js'].map((f) => join(root, 'examples/web', f));
  const why = [];
  for (const [rel, sources] of [['js/dist/tensorplay.mjs', pkg], ['examples/web/dist/worker.mjs', [...pkg, ...web]]]) {
    const bundle = join(root, rel);
    if (!existsSync(bundle)) continue;
    const built = statSync(bundle).mtimeMs;
    const newer = sources.filter((f) => f.endsWith('.js') && existsSync(f) && statSync(f).mtimeMs > built);
    if (newer.length) why.push(`${rel} is older than ${newer.map((f) => f.slice(root.length + 1)).join(', ')}`);
  }
  if (!why.length) return null;
  return `${why.join('; ')}: the page runs the old code (bash scripts/build.sh bundle, or open the page with ?pkg=modules)`;
}

/** Starts the server; resolves to { server, port, url, close() }. */
export function serve({ port = 8080, host = '127.0.0.1', root = ROOT, quiet = false } = {}) {
  return new Promise((resolveP, reject) => {
    const server = createServer((req, res) => {
      handle(req, res, root).catch((e) => {
        try {
          res.writeHead(500, { 'Content-Type': 'text/plain' });
          res.end(`error: ${e.message}\n`);
        } catch {
          /* headers already sent */
        }
      });
    });
    server.on('error', reject);
    server.listen(port, host, () => {
      const actual = server.address().port;
      const url = `http://${host}:${actual}/`;
      if (!quiet) console.log(`serving ${root} at ${url} (open ${url}examples/web/)`);
      try {
        const stale = staleBundle(root);
        if (stale && !quiet) console.error(`serve.mjs: warning: ${stale}`);
      } catch {
        /* a root without js/src: nothing to compare */
      }
      resolveP({ server, port: actual, url, close: () => new Promise((r) => server.close(() => r())) });
    });
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const arg = process.argv[2] ?? process.env.PORT ?? '8080';
  const port = Number(arg);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    console.error(`serve.mjs: bad port ${JSON.stringify(arg)}`);
    process.exit(2);
  }
  serve({ port }).catch((e) => {
    console.error(`serve.mjs: ${e.message}`);
    process.exit(1);
  });
}
