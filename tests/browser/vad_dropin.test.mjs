// The onnxruntime-web drop-in in Chromium: @ricky0123/vad-web's own browser
// build (dist/bundle.min.js, a UMD script that takes onnxruntime-web from the
// global `ort`), unchanged, on one page with the real onnxruntime-web
// (node_modules/onnxruntime-web/dist/ort.min.js) and on another with
// `window.ort = await import('/js/ort.js')` (tensorplay-wasm/ort). Each runs
// NonRealTimeVAD (Silero legacy) on the same test audio
// (tests/js/_vad_audio.mjs); the speech segments must be identical. The
// package comes from `npm pack` (skipped with the npm error when offline).
// The Node twin, which also compares every frame's probability:
// tests/js/vad_dropin.test.js.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, existsSync } from 'node:fs';
import { join, normalize, sep } from 'node:path';
import { skipReason, startServer, launch, newPage } from './_browser.mjs';
import { fetchPackage } from '../js/_npm_pack.mjs';

const vad = fetchPackage('@ricky0123/vad-web@0.0.31', 'ricky0123-vad-web-0.0.31');
const skip = (await skipReason()) ?? vad.why ?? false;

// The page, served by a route at /__vad/page.html (same origin as the repo
// root that serve.mjs serves, so /js/ort.js and /node_modules/ resolve).
const PAGE = `<!doctype html><meta charset="utf-8"><title>vad drop-in</title>
<script type="module">
const which = new URLSearchParams(location.search).get('ort');
const script = (src) => new Promise((ok, fail) => {
  const s = document.createElement('script');
  s.src = src; s.onload = ok; s.onerror = () => fail(new Error('cannot load ' + src));
  document.head.append(s);
});
try {
  if (which === 'tensorplay') {
    window.ort = await import('/js/ort.js');
  } else {
    await script('/node_modules/onnxruntime-web/dist/ort.min.js');
    ort.env.wasm.wasmPaths = '/node_modules/onnxruntime-web/dist/';
    ort.env.wasm.numThreads = 1;
  }
  await script('/__vad/dist/bundle.min.js'); // the package's own build, unchanged
  const { vadTestAudio } = await import('/tests/js/_vad_audio.mjs');
  const t0 = performance.now();
  const v = await vad.NonRealTimeVAD.new({ modelURL: '/__vad/dist/silero_vad_legacy.onnx' });
  const segments = [];
  for await (const s of v.run(vadTestAudio(), 16000)) segments.push({ start: s.start, end: s.end, samples: s.audio.length });
  window.result = { segments, ms: performance.now() - t0, ours: typeof ort.InferenceSession.create === 'function' && which === 'tensorplay' };
} catch (e) {
  window.result = { error: String(e && e.stack || e) };
}
document.body.dataset.done = '1';
</script><body></body>`;

test('@ricky0123/vad-web (browser build) on tensorplay-wasm/ort finds the segments onnxruntime-web finds, in Chromium',
  { skip, timeout: 180000 }, async (t) => {
    const server = await startServer();
    const browser = await launch();
    try {
      await browser.context.route('**/__vad/**', (route) => {
        const path = decodeURIComponent(new URL(route.request().url()).pathname.replace(/^\/__vad\//, ''));
        if (path === 'page.html') return route.fulfill({ body: PAGE, contentType: 'text/html', headers: { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' } });
        const file = normalize(join(vad.dir, path));
        if (!file.startsWith(vad.dir + sep) || !existsSync(file)) return route.fulfill({ status: 404, body: 'not found' });
        const type = file.endsWith('.js') ? 'text/javascript' : 'application/octet-stream';
        return route.fulfill({ body: readFileSync(file), contentType: type });
      });
      const results = {};
      for (const which of ['onnxruntime-web', 'tensorplay']) {
        const page = await newPage(browser.context);
        await page.goto(`${server.url}__vad/page.html?ort=${which}`);
        await page.waitForSelector('body[data-done="1"]', { state: 'attached', timeout: 150000 });
        results[which] = await page.evaluate(() => window.result);
        assert.equal(results[which].error, undefined, `${which}: ${results[which].error}`);
        assert.deepEqual(page.errors, [], `${which}: console errors`);
        await page.close();
      }
      const [ref, got] = [results['onnxruntime-web'], results.tensorplay];
      t.diagnostic(`onnxruntime-web ${ref.ms.toFixed(0)} ms, tensorplay-wasm/ort ${got.ms.toFixed(0)} ms; segments ${JSON.stringify(got.segments)}`);
      assert.ok(got.ours, 'the page ran on tensorplay-wasm/ort');
      assert.ok(ref.segments.length >= 1, 'onnxruntime-web finds speech in the test audio');
      assert.deepEqual(got.segments, ref.segments);
    } finally {
      await browser.close();
      await server.stop();
    }
  });
