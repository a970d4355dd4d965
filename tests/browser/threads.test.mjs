// The Wasm threads core in a real browser (headless Chromium): the page
// tests/browser/threads.html asks for 2 threads. Served cross-origin
// isolated (COOP/COEP, examples/web/serve.mjs) it runs the threads core with
// a worker, and compiled kernels that split over the pool (a generated
// GEMM's panels among them) give the same bits with config.threads 1 and 2; served without isolation (?coi=0) the
// package falls back to the one-thread core and explain() says why.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { skipReason, startServer, launch, newPage, waitForAttribute } from './_browser.mjs';

const skip = (await skipReason()) ??
  (!existsSync(new URL('../../js/wasm/tensorplay-mt.wasm', import.meta.url)) &&
    'js/wasm/tensorplay-mt.wasm is not built (bash scripts/build.sh emscripten-mt)');

async function runPage(query) {
  const server = await startServer();
  const browser = await launch();
  try {
    const page = await newPage(browser.context);
    await page.goto(`${server.url}tests/browser/threads.html${query}`);
    const r = JSON.parse(await waitForAttribute(page, 'body', 'data-result', 60000));
    assert.deepEqual(page.errors, []);
    return r;
  } finally {
    await browser.close();
    await server.stop();
  }
}

test('cross-origin isolated: the threads core, 2 threads, the same bits as 1', { skip: skip || false, timeout: 90000 }, async () => {
  const r = await runPage('');
  assert.equal(r.error, undefined);
  assert.equal(r.isolated, true);
  assert.equal(r.threads, 'Wasm threads: 2 threads (workers; 1 worker running)');
  assert.deepEqual(r.threads2, r.threads1);
  assert.equal(r.chunks1, 0); // config.threads = 1: the page's thread alone
  assert.ok(r.chunks2 > 0, 'no work reached the worker with 2 threads');
  assert.ok(r.worst <= 1, `GEMM error ${r.worst} x the bound`);
  // the generated GEMM (installed in the worker's table too): its panels
  // ran on the worker, the same bits with 1 and 2 threads
  assert.equal(r.genGemm, 1, 'the constant-weight GEMM is generated code');
  assert.ok(r.genChunks > 0, 'no chunk of the generated GEMM ran on the worker');
  assert.ok(r.genSame2, 'generated GEMM bits with 1 and 2 threads');
});

test('not isolated: one thread, and explain() says why', { skip: skip || false, timeout: 90000 }, async () => {
  const r = await runPage('?coi=0');
  assert.equal(r.error, undefined);
  assert.equal(r.isolated, false);
  assert.match(r.threads, /^single-threaded Wasm build: 1 thread \(threads requested, but SharedArrayBuffer is unavailable/);
  assert.deepEqual(r.threads2, r.threads1);
  assert.equal(r.chunks2, 0);
  assert.equal(r.genChunks, 0);
  assert.ok(r.genSame2);
  assert.ok(r.worst <= 1, `GEMM error ${r.worst} x the bound`);
});
