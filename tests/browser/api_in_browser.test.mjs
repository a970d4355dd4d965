// The JS API in a real browser (headless Chromium, on a page's main thread):
// examples/web/test.html runs its own checks (tensor ops, compile with stax
// and its generated code, errors as exceptions, scope/dispose, memory growth
// past 256 MB) and the tests/js files that do not need Node, through a small
// node:test / node:assert shim (tests/browser/shims). Each result becomes a
// subtest here.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { skipReason, startServer, launch, newPage, outDir } from './_browser.mjs';

// tests/js files that run in a browser: they import only node:test,
// node:assert/strict, js/ and _ref.mjs. Left out, because they need Node:
// codegen (child_process, fs), onnx (fs, path), scope (v8, vm for the GC),
// wasm_writer (fs). A test in these files that needs `process` is reported
// as a skip with that reason.
const FILES = ['tensor', 'ops', 'errors', 'compile', 'compiled_path', 'backends', 'memory', 'npy_graph', 'loader', 'frontend'];

const skip = await skipReason();

// Twice: on the package's ES modules (js/index.js) and on its one-file build
// (js/dist/tensorplay.mjs, which test.html's import map substitutes for
// js/index.js with ?pkg=bundle).
// Without js/dist (only `scripts/build.sh wasi`), the bundle run is skipped
// unless TP_REQUIRE_BUNDLE=1 (scripts/test.sh, once build:bundle passed).
const noBundle = !existsSync(new URL('../../js/dist/tensorplay.mjs', import.meta.url)) && process.env.TP_REQUIRE_BUNDLE !== '1' &&
  'js/dist is not built (bash scripts/build.sh bundle)';
for (const pkg of ['modules', 'bundle']) {
  test(`JS API in the browser (examples/web/test.html), package as ${pkg}`, { skip: skip ?? (pkg === 'bundle' && noBundle) ?? false, timeout: 60000 }, async (t) => {
    const server = await startServer();
    const browser = await launch();
    try {
      const page = await newPage(browser.context);
      await page.goto(`${server.url}examples/web/test.html?files=${FILES.join(',')}${pkg === 'bundle' ? '&pkg=bundle' : ''}`);
      await page.waitForSelector('body[data-done="1"]', { timeout: 45000 });
      const results = await page.evaluate(() => window.tpResults);
      const suffix = pkg === 'bundle' ? '-bundle' : '';
      await page.screenshot({ path: join(outDir(), `api-in-browser${suffix}.png`), fullPage: true });
      writeFileSync(join(outDir(), `api-in-browser${suffix}.json`), JSON.stringify(results, null, 1));

      const byFile = new Map();
      for (const r of results) {
        if (!byFile.has(r.file)) byFile.set(r.file, []);
        byFile.get(r.file).push(r);
      }
      // every listed file ran at least one test, plus the page's own checks
      for (const f of FILES) assert.ok(byFile.has(`${f}.test.js`), `no results from tests/js/${f}.test.js`);
      assert.ok(byFile.has('test.js'), 'no results from the page checks');
      const info = results.find((r) => /package loads/.test(r.name))?.info ?? {};
      assert.match(info.entry ?? '', pkg === 'bundle' ? /\/js\/dist\/tensorplay\.mjs$/ : /\/js\/index\.js$/, 'the package file the import map gives');
      assert.deepEqual(info.fetched, [pkg === 'bundle' ? '/js/dist/tensorplay.mjs' : '/js/index.js'], 'the package files the page fetched');
      for (const [file, rs] of byFile) {
        await t.test(file, async (tf) => {
          for (const r of rs) {
            await tf.test(r.name, { skip: r.status === 'skip' ? r.reason : false }, () => {
              if (r.info) tf.diagnostic(`${r.name}: ${JSON.stringify(r.info)}`);
              assert.equal(r.status, 'pass', r.error);
            });
          }
        });
      }
      const growth = results.find((r) => /256 MB/.test(r.name));
      assert.ok(growth?.info?.peakMB > 256, `memory did not grow past 256 MB: ${JSON.stringify(growth)}`);
      t.diagnostic(`memory growth: ${JSON.stringify(growth.info)}`);
      assert.deepEqual(page.errors, [], 'console errors');
    } finally {
      await browser.close();
      await server.stop();
    }
  });
}
