// bench/workloads/web-start.mjs - page load to first result in headless
// Chromium (the web issue's figure: the MLP within 150 ms, the transformer
// block within 400 ms), against an anchor measured in the same run: a page
// that starts an empty module worker the same way (bench/web/empty-worker.html),
// i.e. what the browser charges any worker-based page on this machine. The
// MLP is also loaded with the package as ES modules (?pkg=modules) instead of
// its one-file bundle (js/dist/tensorplay.mjs, the page's default), and
// with the Wasm threads core and 2 threads (?threads=2; the threads issue's
// figure: no more than 20 ms later than on one thread).
//
// Serves the repository with examples/web/serve.mjs, loads each page in
// blocks of BLOCK reloads (the first of each block is dropped), alternating
// pages between blocks, every reload SETTLE_MS after the previous page
// settled. Each result is read with one page.evaluate that awaits the
// attribute the page sets (waitForAttribute): Playwright's waitForSelector
// would inject its 330 KB selector engine into the page mid-load, 14 ms of
// the main thread that the page needs for its worker. Prints one JSON line
// per case (bench/run.sh's format).
//
//   node bench/workloads/web-start.mjs [--reloads N]    (default 16 per page)
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { launch, newPage, skipReason, startServer, waitForAttribute } from '../../tests/browser/_browser.mjs';


const argv = process.argv.slice(2);
const RELOADS = Number(argv[argv.indexOf('--reloads') + 1] || 16) || 16;
const BLOCK = 4;
const SETTLE_MS = 2500;

const skip = await skipReason();
if (skip && !/is not built/.test(skip)) {
  console.error(`web-start: skipped: ${skip}`);
  process.exit(1);
}
// what the page loads: the wasi core (js/wasm), the threads core for
// ?threads=2 (js/wasm/tensorplay-mt.wasm) and the bundle (js/dist)
execFileSync('bash', ['scripts/build.sh', 'wasi', 'emscripten-mt', 'bundle'], { cwd: fileURLToPath(new URL('../..', import.meta.url)), stdio: ['ignore', 2, 2] });

const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const median = s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  return { median_ms: +median.toFixed(2), min_ms: +s[0].toFixed(2), max_ms: +s[s.length - 1].toFixed(2), samples: s.map((x) => +x.toFixed(1)) };
};

// The phases of a load, in ms after navigation start: the page's
// performance marks (index.html: coreCompiled) and resource timings, and
// the worker's (worker.js: workerJs, request, coreCompiled, imported,
// built, firstCall, posting; its timeOrigin is #status[data-worker-start]).
const PHASES = [
  ['core bytes received on the page (tensorplay.wasm responseEnd)', 'coreBytes'],
  ['the worker\'s global scope exists', 'workerStart'],
  ['the worker script runs (workerJs)', 'w.workerJs'],
  ['the page has compiled the core (coreCompiled)', 'coreCompiled'],
  ['the worker has the core and the compile request (w.coreCompiled)', 'w.coreCompiled'],
  ['core instantiated and initialized, package ready (imported)', 'w.imported'],
  ['model weights and input built (built)', 'w.built'],
  ['first call: capture, lowering, code generation, run (firstCall)', 'w.firstCall'],
  ['outputs summarized, explain(), posted (posting)', 'w.posting'],
  ['the page shows the first result', 'result'],
];
const phases = { mlp: [], transformer: [] };
async function readPhases(page) {
  const ws = Number(await page.getAttribute('#status', 'data-worker-start'));
  const pg = await page.evaluate(() => ({
    marks: Object.fromEntries(performance.getEntriesByType('mark').map((m) => [m.name, m.startTime])),
    core: performance.getEntriesByType('resource').find((e) => /tensorplay(-mt)?\.wasm$/.test(e.name))?.responseEnd,
    result: Number(document.querySelector('#first-result').dataset.ms),
  }));
  const wk = await page.workers()[0]?.evaluate(() =>
    Object.fromEntries(performance.getEntriesByType('mark').map((m) => [m.name, m.startTime]))).catch(() => ({})) ?? {};
  const at = { coreBytes: pg.core, workerStart: ws, coreCompiled: pg.marks.coreCompiled, result: pg.result };
  for (const [k, v] of Object.entries(wk)) at[`w.${k}`] = v + ws;
  return at;
}
function phaseTable(rows) {
  const med = (xs) => stats(xs.filter(Number.isFinite)).median_ms;
  let prev = null;
  return PHASES.filter(([, k]) => rows.some((r) => Number.isFinite(r[k]))).map(([label, k]) => {
    const at = med(rows.map((r) => r[k]));
    // the step: the median over loads of (this event - the previous one in this list)
    const step = prev ? med(rows.map((r) => r[k] - r[prev])) : null;
    prev = k;
    return { phase: label, at_ms: +at.toFixed(1), step_ms: step === null ? null : +step.toFixed(1) };
  });
}

// the host's load (1-minute load average) at the start and the end: this
// 2-core host is shared, and a loaded one moves these figures by 50-100 ms
const loadavg = () => { try { return Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0]); } catch { return null; } };
const loadAtStart = loadavg();
const server = await startServer();
const browser = await launch();
try {
  const page = await newPage(browser.context);
  const pages = {
    anchor: {
      url: `${server.url}bench/web/empty-worker.html`,
      read: async () => {
        return Number(await waitForAttribute(page, 'html', 'data-ready'));
      },
    },
  };
  // mlp-modules: the same page with the package as ES modules (?pkg=modules)
  // instead of its one-file bundle, to show what the bundle saves
  for (const [key, model, extra] of [['mlp', 'mlp', ''], ['mlp-modules', 'mlp', '&pkg=modules'], ['mlp-threads', 'mlp', '&threads=2'],
    ['transformer', 'transformer', '']]) {
    const want = extra === '&pkg=modules' ? 'modules' : 'bundle';
    pages[key] = {
      // runs=10: the page's timed runs after the first result are capped at
      // 10, as the page did before its run counts became adaptive (up to 200
      // samples or 3 s per variant). The longer run's leftovers (the worker's
      // teardown, V8's background work) landed on the next load despite the
      // 2.5 s settle: 163.4 against 137.4 ms for main's page in an
      // interleaved A/B, 137.1 against 132.0 with the cap (docs/benchmarks-web.md).
      url: `${server.url}examples/web/?model=${model}&auto=1&runs=10${extra}`,
      read: async () => {
        const ms = Number(await waitForAttribute(page, '#first-result', 'data-ms'));
        const pkg = await page.getAttribute('#status', 'data-package');
        if (pkg !== want) throw new Error(`web-start: ${key} loaded the package as ${pkg}, not ${want}`);
        const threads = await page.getAttribute('#compile-time', 'data-threads');
        if (extra === '&threads=2' && !/^Wasm threads/.test(threads ?? '')) throw new Error(`web-start: ${key} did not load the threads core: ${threads}`);
        // the load's phases (read after the result, so they do not disturb it)
        if (phases[key]) phases[key].push(await readPhases(page));
        await page.waitForSelector('#chart[data-seq]', { timeout: 60000 }); // the page settled
        return ms;
      },
    };
  }
  const got = Object.fromEntries(Object.keys(pages).map((k) => [k, []]));
  const order = Object.keys(pages);
  for (let b = 0; b < RELOADS / BLOCK; b++) {
    for (const k of b % 2 ? [...order].reverse() : order) {
      for (let i = 0; i <= BLOCK; i++) {
        await page.goto(pages[k].url);
        const ms = await pages[k].read();
        if (i > 0) got[k].push(ms);
        await new Promise((r) => setTimeout(r, SETTLE_MS));
      }
    }
  }
  const load = [loadAtStart, loadavg()];
  const anchor = { name: 'empty module worker page (anchor)', ...stats(got.anchor) };
  for (const [model, figure] of [['mlp', 150], ['transformer', 400]]) {
    const ours = { name: `examples/web ${model}: first result`, ...stats(got[model]) };
    const impls = [ours, anchor];
    if (got[`${model}-modules`]) impls.splice(1, 0, { name: `examples/web ${model}, package as ES modules (?pkg=modules)`, ...stats(got[`${model}-modules`]) });
    let threaded = null;
    if (got[`${model}-threads`]) {
      threaded = { name: `examples/web ${model}, Wasm threads core with 2 threads (?threads=2)`, ...stats(got[`${model}-threads`]) };
      impls.splice(1, 0, threaded);
    }
    console.log(JSON.stringify({
      case: `page load to first result: ${model} (issue figure ${figure} ms)`,
      reps: got[model].length,
      baseline: anchor.name,
      impls,
      ours_minus_anchor_ms: +(ours.median_ms - anchor.median_ms).toFixed(1),
      ...(threaded ? { threads_minus_one_thread_ms: +(threaded.median_ms - ours.median_ms).toFixed(1), threads_figure_ms: 20 } : {}),
      figure_ms: figure,
      phases: phaseTable(phases[model]),
      loadavg_start_end: load,
      notes: `reloads in blocks of ${BLOCK} (first of each dropped), pages alternating between blocks, ${SETTLE_MS} ms after the previous page settled; ms after navigation start`,
    }));
    console.error(`web-start ${model}: median ${ours.median_ms} ms (min ${ours.min_ms}), anchor ${anchor.median_ms} ms, ours - anchor ${(ours.median_ms - anchor.median_ms).toFixed(1)} ms, load average ${load.join(' -> ')}` +
      (threaded ? `; with 2 threads ${threaded.median_ms} ms (${(threaded.median_ms - ours.median_ms).toFixed(1)} ms later; issue figure 20 ms)` : ''));
    for (const p of phaseTable(phases[model])) console.error(`  ${String(p.at_ms).padStart(6)} ms ${p.step_ms === null ? '      ' : `+${String(p.step_ms).padStart(5)}`}  ${p.phase}`);
  }
} finally {
  await browser.close();
  await server.stop();
}
