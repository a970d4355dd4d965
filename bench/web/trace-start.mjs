// bench/web/trace-start.mjs - a Chromium trace (CDP Tracing on the page's
// session: renderer main thread, the worker's thread, the thread pool) of
// one MLP load of examples/web after 3 warm-up loads; writes
// /tmp/start-trace.json (open it in chrome://tracing or Perfetto).
//   node bench/web/trace-start.mjs ['&pkg=modules']
import { writeFileSync } from 'node:fs';
import { launch, newPage, startServer, waitForAttribute } from '../../tests/browser/_browser.mjs';
const Q = process.argv[2] ?? '';
const server = await startServer();
const browser = await launch();
try {
  const page = await newPage(browser.context);
  const url = `${server.url}examples/web/?model=mlp&auto=1&runs=10${Q}`;
  for (let i = 0; i < 3; i++) {
    await page.goto(url); await waitForAttribute(page, '#first-result', 'data-ms');
    await page.waitForSelector('#chart[data-seq]', { timeout: 60000 });
    await new Promise((r) => setTimeout(r, 2500));
  }
  const cdp = await browser.context.newCDPSession(page);
  const events = [];
  cdp.on('Tracing.dataCollected', (e) => events.push(...e.value));
  const done = new Promise((r) => cdp.once('Tracing.tracingComplete', r));
  await cdp.send('Tracing.start', { transferMode: 'ReportEvents', traceConfig: { includedCategories: ['devtools.timeline', 'v8', 'v8.wasm', 'disabled-by-default-devtools.timeline', 'blink', 'loading', 'navigation', 'toplevel', 'disabled-by-default-v8.compile', 'worker', 'netlog', 'disabled-by-default-network'] } });
  await page.goto(url);
  const ms = await waitForAttribute(page, '#first-result', 'data-ms');
  await cdp.send('Tracing.end');
  await done;
  writeFileSync('/tmp/start-trace.json', JSON.stringify({ traceEvents: events }));
  console.log('first result', ms, 'events', events.length);
} finally { await browser.close(); await server.stop(); }
