// bench/web/probe-start.mjs - the split of an MLP page load (examples/web
// ?model=mlp&auto=1&runs=10, as bench/workloads/web-start.mjs loads it): per
// load, the page's and the worker's performance marks (index.html:
// coreCompiled; worker.js: workerJs, request, coreCompiled, imported, built,
// firstCall, posting) and resource timings, in ms after the page's
// navigation start; prints each one's median [min-max] over the loads (the
// first load dropped), in time order, then the first-result times.
//   node bench/web/probe-start.mjs [--reloads N] [--q '&pkg=modules']
import { launch, newPage, startServer, waitForAttribute } from '../../tests/browser/_browser.mjs';
const argv = process.argv.slice(2);
const N = Number(argv[argv.indexOf('--reloads') + 1] || 8) || 8;
const Q = argv.includes('--q') ? argv[argv.indexOf('--q') + 1] : '';
const server = await startServer();
const browser = await launch();
const rows = [];
try {
  const page = await newPage(browser.context);
  for (let i = 0; i <= N; i++) {
    await page.goto(`${server.url}examples/web/?model=mlp&auto=1&runs=10${Q}`);
    const ms = Number(await waitForAttribute(page, '#first-result', 'data-ms'));
    const ws = Number(await page.getAttribute('#status', 'data-worker-start'));
    const posted = Number(await page.getAttribute('#first-result', 'data-posted-at'));
    const pg = await page.evaluate(() => ({
      marks: Object.fromEntries(performance.getEntriesByType('mark').map((m) => [m.name, +m.startTime.toFixed(1)])),
      res: performance.getEntriesByType('resource').map((e) => [e.name.replace(/.*\//, ''), +e.startTime.toFixed(1), +e.responseEnd.toFixed(1), e.transferSize]),
      nav: (() => { const n = performance.getEntriesByType('navigation')[0]; return { resEnd: +n.responseEnd.toFixed(1), dcl: +n.domContentLoadedEventEnd.toFixed(1) }; })(),
    }));
    const wk = await page.workers()[0]?.evaluate(() => ({
      marks: Object.fromEntries(performance.getEntriesByType('mark').map((m) => [m.name, +m.startTime.toFixed(1)])),
      res: performance.getEntriesByType('resource').map((e) => [e.name.replace(/.*\//, ''), +e.startTime.toFixed(1), +e.responseEnd.toFixed(1)]),
    })).catch(() => null);
    await page.waitForSelector('#chart[data-seq]', { timeout: 60000 });
    if (i > 0) rows.push({ ms, ws, posted, pg, wk });
    await new Promise((r) => setTimeout(r, 2500));
  }
} finally { await browser.close(); await server.stop(); }
const med = (xs) => { const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b); return s.length ? s[s.length >> 1] : NaN; };
const cols = {};
for (const r of rows) {
  const add = (k, v) => (cols[k] ??= []).push(v);
  add('firstResult', r.ms); add('workerOrigin', r.ws); add('posted', r.posted);
  for (const [k, v] of Object.entries(r.pg.marks)) add('page.' + k, v);
  for (const [n, s, e] of r.pg.res) { add('page.res.' + n + '.start', s); add('page.res.' + n + '.end', e); }
  add('page.nav.resEnd', r.pg.nav.resEnd); add('page.nav.dcl', r.pg.nav.dcl);
  if (r.wk) {
    for (const [k, v] of Object.entries(r.wk.marks)) add('w.' + k, v + r.ws);
    for (const [n, s, e] of r.wk.res) { add('w.res.' + n + '.start', s + r.ws); add('w.res.' + n + '.end', e + r.ws); }
  }
}
const out = Object.entries(cols).map(([k, v]) => [k, med(v), Math.min(...v), Math.max(...v)]).sort((a, b) => a[1] - b[1]);
for (const [k, m, lo, hi] of out) console.log(`${k.padEnd(40)} ${m.toFixed(1).padStart(7)}  [${lo.toFixed(1)}-${hi.toFixed(1)}]`);
console.log(JSON.stringify(rows.map((r) => r.ms)));
