// bench/web/ab-start.mjs - an interleaved A/B of page loads: the same page
// (default examples/web/?model=mlp&auto=1&runs=10) with two query suffixes,
// or two pages, loaded in alternating blocks of 4 reloads (the first of each
// block dropped) in one browser, each reload 2.5 s after the previous page
// settled. Per variant: the first result's median [min-max] and the median
// of every step between the worker's performance marks (worker.js:
// workerJs, request, coreCompiled, imported, built, firstCall, posting),
// so that a change is judged against the other variant under the same
// host load, not against a run made at another time (docs/benchmarks-web.md).
//   node bench/web/ab-start.mjs [--reloads N] [--a '&x=1'] [--b '&x=2'] [--page examples/web/?model=mlp&auto=1&runs=10]
//   --url-a / --url-b: whole paths instead of suffixes
import { launch, newPage, startServer, waitForAttribute } from '../../tests/browser/_browser.mjs';

const argv = process.argv.slice(2);
const opt = (k, d) => (argv.includes(k) ? argv[argv.indexOf(k) + 1] : d);
const N = Number(opt('--reloads', 12)) || 12;
const PAGE = opt('--page', 'examples/web/?model=mlp&auto=1&runs=10');
const BLOCK = 4;
const variants = { A: opt('--url-a', PAGE + opt('--a', '')), B: opt('--url-b', PAGE + opt('--b', '')) };

const server = await startServer();
const browser = await launch();
const rows = { A: [], B: [] };
const med = (xs) => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (!s.length) return NaN;
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
try {
  const page = await newPage(browser.context);
  for (let b = 0; b < N / BLOCK; b++) {
    for (const v of b % 2 ? ['B', 'A'] : ['A', 'B']) {
      for (let i = 0; i <= BLOCK; i++) {
        await page.goto(server.url + variants[v]);
        const isAnchor = variants[v].includes('empty-worker');
        const ms = Number(await waitForAttribute(page, isAnchor ? 'html' : '#first-result', isAnchor ? 'data-ready' : 'data-ms'));
        let marks = {};
        if (!isAnchor) {
          marks = await page.workers()[0]?.evaluate(() =>
            Object.fromEntries(performance.getEntriesByType('mark').map((m) => [m.name, m.startTime]))).catch(() => ({})) ?? {};
          const ws = Number(await page.getAttribute('#status', 'data-worker-start'));
          for (const k of Object.keys(marks)) marks[k] += ws;
          await page.waitForSelector('#chart[data-seq]', { timeout: 60000 });
        }
        if (i > 0) rows[v].push({ ms, marks });
        await new Promise((r) => setTimeout(r, 2500));
      }
    }
  }
} finally {
  await browser.close();
  await server.stop();
}
const STEPS = ['workerJs', 'imported', 'built', 'firstCall', 'posting'];
for (const v of ['A', 'B']) {
  const ms = rows[v].map((r) => r.ms);
  const parts = [`first result ${med(ms).toFixed(1)} [${Math.min(...ms).toFixed(1)}-${Math.max(...ms).toFixed(1)}]`];
  let prev = null;
  for (const k of STEPS) {
    const at = med(rows[v].map((r) => r.marks[k]));
    if (!Number.isFinite(at)) continue;
    parts.push(prev ? `${k} +${med(rows[v].map((r) => r.marks[k] - r.marks[prev])).toFixed(1)}` : `${k} ${at.toFixed(1)}`);
    prev = k;
  }
  console.log(`${v} (${variants[v]}, ${ms.length} loads): ${parts.join(', ')}`);
}
console.log(JSON.stringify({ A: rows.A.map((r) => +r.ms.toFixed(1)), B: rows.B.map((r) => +r.ms.toFixed(1)) }));
