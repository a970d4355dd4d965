// app.js - the main thread of the web example: UI only. Every compile and run
// happens in worker.js (a module Web Worker), so the page never freezes.
//
// The page follows one state machine (body[data-state]):
//   loading -> idle | compiling (auto=1) | stopped
//   idle / cancelled / failed -> compiling | running      (the settled states)
//   compiling -> running (Run asked for it) | idle | cancelled | failed | stopped
//   running -> idle | cancelled | failed | stopped
// Every control is set from the state alone (render()). Inputs stay editable
// while the worker is busy; what is on the page is marked stale
// ([data-stale] on the panels) the moment an input that produced it changes,
// and Run recompiles when the compiled function is not the inputs' one.
//
// URL parameters (used by the browser tests, handy by hand too):
//   ?model=mlp|cnn|transformer  preselect a model
//   &backend=..&mode=..&batch=..&runs=..  (runs: the cap on timed runs)
//   &auto=1                       compile (and then run) as soon as the core is loaded
//   &pkg=modules                  the worker imports js/index.js, not the bundle js/dist/tensorplay.mjs
// With auto=1 the page records when the first result appeared, in ms since
// navigation start (performance.now()), in #first-result[data-ms]; after a
// click, in ms since the click.
import { el, fmtMs, fmtBytes, parseGraph, drawGraph, drawPlan, drawChart, drawKernelList, highlightNodes } from './view.js';
// models.js (descriptions) and nodecode.js load after start-up, off the
// path to the first result (bench/workloads/web-start.mjs)
let MODELS = {};

const $ = (id) => document.getElementById(id);
const MODEL_BATCH = { mlp: 64, cnn: 16, transformer: 1 };
const PROGRESS_AFTER_MS = 300;

const ui = {
  form: $('form'), compile: $('compile'), run: $('run'), cancel: $('cancel'), progress: $('progress'), status: $('status'),
  error: $('error'), batch: $('batch'), backend: $('backend'), mode: $('mode'), runs: $('runs'),
  file: $('file'), drop: $('drop'), onnxName: $('onnx-name'), onnxNote: $('onnx-note'), onnxRadio: $('model-onnx'), onnxInputs: $('onnx-inputs'),
  modelDesc: $('model-desc'), backendDesc: $('backend-desc'),
  compileTime: $('compile-time'), firstResult: $('first-result'), kernels: $('kernels'), wasmSize: $('wasm-size'),
  memory: $('memory'), before: $('graph-before'), after: $('graph-after'), loweredNote: $('lowered-note'),
  graphText: $('graph-text'), output: $('output'), chart: $('chart'), chartNote: $('chart-note'),
  compilePanel: $('compile-panel'), runPanel: $('run-panel'), copy: $('copy-code'), code: $('node-code'),
};

// ---- the state machine -------------------------------------------------------------------------
const NEXT = {
  loading: ['idle', 'compiling', 'stopped'],
  idle: ['compiling', 'running'],
  cancelled: ['compiling', 'running'],
  failed: ['compiling', 'running'],
  compiling: ['running', 'idle', 'cancelled', 'failed', 'stopped'],
  running: ['idle', 'cancelled', 'failed', 'stopped'],
  stopped: [],
};
const SETTLED = new Set(['idle', 'cancelled', 'failed']);
let state = 'loading';
let seq = 0;

function go(next) {
  if (next === state) return;
  if (!NEXT[state].includes(next)) {
    console.error(`web example: no transition ${state} -> ${next}`);
    return;
  }
  state = next;
  render();
}

function render() {
  const settled = SETTLED.has(state);
  const busy = state === 'compiling' || state === 'running';
  document.body.dataset.state = state;
  ui.compile.disabled = !settled;
  ui.run.disabled = !settled;
  ui.cancel.disabled = !busy;
  ui.cancel.hidden = !busy;
  if (!busy) hideProgress();
  ui.batch.disabled = currentModel() === 'onnx';
  ui.copy.disabled = !lastRun;
}

let worker = null;
let workerBundleMissing = false; // dist/worker.mjs failed to load: worker.js from then on
let coreReady = false;
let hasOnnx = false;
let nextId = 1;
let req = null; // the request under way: { id, kind, key, thenRun, t0, auto, phase }
let compiledKey = null; // the inputs of the compiled function live in the worker (null: none)
let shown = { compile: null, run: null }; // the inputs of what the panels show
let onnxFile = null; // { name, bytes: ArrayBuffer, serial }
let fileSerial = 0;
let firstResultShown = false;
let wasmUrl = null;
let lastRun = null; // { key, settings, outputs, onnxInputs, via } for "copy as Node.js code"
let lastCompiled = null; // { onnxInputs, via } of the last compile
const params = new URLSearchParams(location.search);

function currentModel() {
  return new FormData(ui.form).get('model');
}

/** The inputs that decide a compile, as a string (equal strings: the same compiled function). */
function currentSettings() {
  const model = currentModel();
  return {
    model,
    batch: model === 'onnx' ? null : Number(ui.batch.value),
    backend: ui.backend.value,
    mode: ui.mode.value,
    file: model === 'onnx' && onnxFile ? `${onnxFile.name}#${onnxFile.serial}` : null,
    edits: model === 'onnx' ? onnxEdits() : null,
  };
}

// ---- the inputs of an ONNX model (onnx_inputs.js): a field per symbolic dim
// and per small integer input, filled from the worker's answer to the first
// compile; an edit marks the results stale and the next Run recompiles.
function onnxEdits() {
  const edits = {};
  for (const f of ui.onnxInputs.querySelectorAll('input[data-key]')) edits[f.dataset.key] = f.value.trim();
  return edits;
}

function showOnnxInputs(resolved) {
  if (!resolved) return;
  const keys = resolved.flatMap((r) => r.fields.map((f) => f.key)).join('\n');
  if (ui.onnxInputs.dataset.keys === keys) return false; // the same form: keep what the user typed
  ui.onnxInputs.dataset.keys = keys;
  const seen = new Set();
  const rows = resolved.map((r) => {
    const declared = r.declared.map((d, i) => d ?? r.dimNames?.[i] ?? '?').join(', ');
    const fields = r.fields.filter((f) => !seen.has(f.key) && seen.add(f.key)).map((f) =>
      el('label', { class: 'inline' }, `${f.kind === 'value' ? 'value' : f.key.split(':').length === 2 ? f.key.slice(4) : `axis ${f.key.split(':').pop()}`} `,
        el('input', { type: 'text', size: f.kind === 'value' ? 12 : 5, value: String(f.value), 'data-key': f.key, 'aria-label': f.label, inputmode: 'numeric' })));
    return el('div', { class: 'onnx-input', 'data-name': r.name },
      el('span', { class: 'mono' }, `${r.name}: ${r.dtype}[${declared}]`), ' ', ...fields);
  });
  ui.onnxInputs.replaceChildren(el('div', { class: 'note' }, 'Inputs from the model\'s declared shapes: edit a symbolic dim or an integer input, then Run (it recompiles). Float inputs are random normal (seed 1, 2, … by input).'), ...rows);
  ui.onnxInputs.hidden = false;
  for (const f of ui.onnxInputs.querySelectorAll('input[data-key]')) {
    f.addEventListener('input', markStale);
    f.addEventListener('keydown', (ev) => {
      if (ev.key !== 'Enter') return;
      ev.preventDefault();
      remember(f);
      doRun();
    });
  }
  return true;
}

function clearOnnxInputs() {
  ui.onnxInputs.replaceChildren();
  ui.onnxInputs.hidden = true;
  delete ui.onnxInputs.dataset.keys;
}
const currentKey = () => JSON.stringify(currentSettings());

function markStale() {
  const key = currentKey();
  for (const [panel, k] of [[ui.compilePanel, shown.compile], [ui.runPanel, shown.run]]) {
    if (k && k !== key) panel.dataset.stale = 'true';
    else delete panel.dataset.stale;
  }
  describeModel();
  render();
}

function describeModel() {
  const m = currentModel();
  const M = MODELS[m];
  ui.modelDesc.textContent = M ? `${M.describe(Number(ui.batch.value) || M.defaultBatch)}.`
    : m !== 'onnx' ? '' // models.js is still loading
    : onnxFile ? `${onnxFile.name}: inputs from the model's declared shapes (random, seed 1, 2, …).` : 'Choose or drop an .onnx file.';
  const b = ui.backend.value;
  ui.backendDesc.textContent = {
    stax: 'stax lowers the graph: fusion, memory planning, generated Wasm SIMD128 kernels.',
    eager: 'eager replays the captured graph node by node on the core kernels: no lowering, no code generation.',
    reference: 'reference runs every node on the scalar reference kernels with double accumulation (slow; to tell a miscompile from rounding). No lowering, no code generation.',
  }[b] ?? '';
}

// ---- messages and errors -----------------------------------------------------------------------
function showError(err, context) {
  const e = err || {};
  const parts = [];
  const title = context ? `${context} failed` : 'Error';
  const kind = e.status ? `${e.name} (${e.status})` : e.name || 'Error';
  parts.push(el('strong', {}, title + ': '), `${kind}: ${e.message ?? String(err)}`);
  if (e.cause) parts.push(el('br'), `caused by: ${e.cause}`);
  const hint = hintFor(e);
  if (hint) parts.push(el('br'), el('span', { class: 'hint' }, hint));
  ui.error.replaceChildren(...parts);
  ui.error.hidden = false;
  ui.error.dataset.name = e.name ?? 'Error';
  ui.error.dataset.seq = String(++seq);
}

function hintFor(e) {
  const m = `${e.name} ${e.status ?? ''} ${e.message ?? ''}`;
  if (e.fatal && e.phase !== 'load') return 'The core trapped, so its worker was stopped and a fresh one started: the page is ready for the next try.';
  if (e.name === 'TooLarge') return 'A Wasm32 memory addresses at most 4 GiB. Try a smaller batch.';
  if (e.oom) {
    return `The Wasm memory had grown to ${fmtBytes(e.memoryBytes ?? 0)} when an allocation failed (the browser may allow less than the 4 GiB a Wasm32 memory can address). ` +
      'A Wasm memory never shrinks, so the worker was restarted to give it back. Try a smaller batch.';
  }
  if (/\((dim|value):[^)]*\)/.test(e.message ?? '')) return 'Correct that field of the model\'s inputs above, then Run.';
  if (/model\.run: onnx: node/.test(e.message ?? '') && /INVALID_ARG/.test(m)) {
    return 'The model cannot take inputs of these shapes or values (the message names the node that refused them): edit the inputs above, then Run.';
  }
  if (/onnx/i.test(m) && /Unsupported|not available/i.test(m)) return 'Try one of the built-in models.';
  if (/onnx|PARSE|truncated|protobuf/i.test(m)) return 'The file is not a valid ONNX model, or uses something the importer does not support.';
  if (/UNSUPPORTED|not supported/i.test(m)) return 'The model uses an operator or attribute this version does not support.';
  return '';
}

function clearError() {
  ui.error.hidden = true;
  ui.error.replaceChildren();
}

// ---- progress: phase and elapsed time, shown after 300 ms --------------------------------------------
let tick = 0;
function startProgress() {
  clearInterval(tick);
  ui.progress.hidden = true;
  tick = setInterval(updateProgress, 100);
}
function updateProgress() {
  if (!req) return hideProgress();
  const ms = performance.now() - req.t0;
  if (ms < PROGRESS_AFTER_MS) return;
  const p = req.phase;
  ui.progress.hidden = false;
  ui.progress.dataset.phase = p?.phase ?? 'waiting for the worker';
  ui.progress.dataset.elapsed = (ms / 1000).toFixed(1);
  ui.progress.textContent = `${p?.phase ?? 'waiting for the worker'}${p?.n ? (p.i ? ` (run ${p.i} of at most ${p.n})` : ' (warm-up)') : ''} — ${(ms / 1000).toFixed(1)} s`;
}
function hideProgress() {
  clearInterval(tick);
  tick = 0;
  ui.progress.hidden = true;
}

// ---- the worker ------------------------------------------------------------------------------
function startWorker() {
  coreReady = false;
  compiledKey = null;
  // The first worker is started by the inline script in index.html's <head>,
  // before this module loads; messages it sent meanwhile are replayed.
  // A restarted worker gets the same compiled core (window.tpCore, a
  // promise of a WebAssembly.Module or null) when the page has one, so a
  // restart does not fetch or compile the core again.
  const early = window.tpEarlyWorker;
  window.tpEarlyWorker = null;
  // dist/worker.mjs (worker.js with the package bundled in: index.html) unless
  // ?pkg= asks for worker.js or the bundle turned out not to be built
  const pkg = params.get('pkg');
  const bundled = early ? early.bundled : !workerBundleMissing && pkg !== 'modules' && pkg !== 'bundle';
  const url = new URL(bundled ? './dist/worker.mjs' : './worker.js', import.meta.url);
  if (window.tpCore) url.searchParams.set('core', 'page');
  if (!bundled && (pkg === 'modules' || pkg === 'bundle')) url.searchParams.set('pkg', pkg);
  if (params.get('threads') !== null) url.searchParams.set('threads', params.get('threads'));
  if (early) {
    worker = early.worker;
  } else {
    const w = new Worker(url, { type: 'module' });
    if (window.tpCore) window.tpCore.then((module) => w.postMessage({ type: 'core', module }));
    worker = w;
  }
  const me = worker;
  let heard = early ? early.messages.length > 0 : false; // anything from this worker yet
  worker.onmessage = (ev) => { heard = true; if (worker === me) onMessage(ev.data); };
  worker.onerror = (ev) => {
    ev.preventDefault?.();
    if (worker !== me || state === 'stopped') return; // its load error (sent before it threw) is on the page already
    if (bundled && !heard) {
      // dist/worker.mjs did not load (not built: bash scripts/build.sh bundle):
      // worker.js, which the request under way (?auto=1) is sent to again
      console.warn('web example: examples/web/dist/worker.mjs did not load (bash scripts/build.sh bundle); starting worker.js');
      workerBundleMissing = true;
      try { me.terminate(); } catch { /* ignore */ }
      startWorker();
      if (req?.msg) worker.postMessage({ ...req.msg, type: req.kind, id: req.id });
      return;
    }
    showError({ name: 'WorkerError', message: ev.message || 'the worker failed to start (see the console)' }, 'Loading');
    stopped();
  };
  if (early) {
    if (early.error) worker.onerror(early.error);
    for (const m of early.messages) onMessage(m);
  }
}

// The worker cannot load (or stopped): say so; nothing more is sent to it.
function stopped(what = 'The worker stopped') {
  ui.status.textContent = `${what}. Reload the page to try again.`;
  req = null;
  go('stopped');
}

function restartWorker(reason) {
  try { worker?.terminate(); } catch { /* ignore */ }
  worker = null;
  ui.status.textContent = `Restarting the worker (${reason})…`;
  ui.status.dataset.restarts = String(Number(ui.status.dataset.restarts ?? 0) + 1);
  startWorker();
}

function send(kind, msg, extra = {}) {
  const id = nextId++;
  // msg is kept to send again if the worker turns out not to load (above),
  // except an ONNX file's bytes, which are transferred
  req = { id, kind, phase: null, ...extra, t0: extra.t0 ?? performance.now(), msg: msg.onnx ? null : msg };
  worker.postMessage({ ...msg, type: kind, id }, msg.onnx ? [msg.onnx] : []);
  startProgress();
  return req;
}

function onMessage(m) {
  if (m.type === 'ready') {
    coreReady = true;
    hasOnnx = m.hasOnnx;
    ui.status.textContent = `Core ${m.version} (${m.isa}) loaded in the worker in ${fmtMs(m.loadMs)} (package: ${m.package === 'bundle' ? 'one-file bundle' : 'ES modules'}${m.worker === 'bundle' ? ', in the worker\'s own bundle' : ''}).`;
    ui.status.dataset.package = m.package;
    ui.status.dataset.worker = m.worker ?? 'source';
    ui.status.dataset.loadMs = m.loadMs.toFixed(2);
    // when the worker started, and when it had the core, in page time
    ui.status.dataset.workerStart = (m.timeOrigin - performance.timeOrigin).toFixed(1);
    ui.status.dataset.readyAt = performance.now().toFixed(1);
    ui.memory.textContent = `${fmtBytes(m.memoryBytes)} of Wasm memory (a fresh worker)`;
    ui.onnxNote.textContent = hasOnnx ? '' : 'ONNX import is not in this build of the package (tp.onnx.load is missing): dropping a file will say so.';
    if (state === 'loading') go('idle'); // an auto=1 compile may be under way already
    return;
  }
  if (!req || m.id !== req.id) {
    // a load error (id 0) is for the page; anything else is an answer nobody waits for
    if (m.type === 'error' && m.id === 0) onError(m.error, 'Loading the core');
    return;
  }
  switch (m.type) {
    case 'progress':
      req.phase = m;
      updateProgress();
      return;
    case 'compiled':
      compiledKey = req.key;
      showCompiled(m);
      return;
    case 'wasm':
      showWasm(m);
      if (req.thenRun) return sendRun(req.t0);
      req = null;
      go('idle');
      return;
    case 'ran':
      showRun(m);
      req = null;
      go('idle');
      return;
    case 'error':
      onError(m.error, req.kind === 'compile' ? 'Compile' : 'Run');
      return;
    default:
      console.warn('unknown message from the worker', m);
  }
}

function onError(err, context) {
  showError(err, context);
  req = null;
  if (context === 'Compile') {
    ui.compileTime.textContent = 'failed (see the message above)';
    compiledKey = null;
  }
  if (err.phase === 'load') {
    stopped('The core could not be loaded'); // a new worker would fail the same way
    return;
  }
  go('failed');
  if (err.fatal) restartWorker(`${err.name}: ${err.message}`);
  else if (err.oom) {
    restartWorker('out of memory: a new worker gives the grown memory back');
    ui.memory.textContent = `${fmtBytes(err.memoryBytes ?? 0)} when the allocation failed; the worker was restarted, which frees it`;
  }
}

// ---- actions ------------------------------------------------------------------------------------
function clearResults() {
  ui.compileTime.textContent = 'compiling…';
  delete ui.compileTime.dataset.ms;
  for (const e of [ui.kernels, ui.wasmSize]) {
    e.textContent = '–';
    delete e.dataset.json;
    delete e.dataset.bytes;
  }
  for (const e of [ui.before, ui.after, ui.chart]) e.replaceChildren();
  ui.loweredNote.textContent = '';
  ui.chartNote.textContent = '';
  ui.graphText.textContent = '';
  ui.output.textContent = '–';
  delete ui.output.dataset.summary;
  delete ui.output.dataset.outputs;
  delete ui.chart.dataset.json;
  shown = { compile: null, run: null };
  lastRun = null;
  markStale();
}

function doCompile(thenRun = false, { auto = false, t0 } = {}) {
  if (!(SETTLED.has(state) || (auto && state === 'loading'))) return;
  clearError();
  const s = currentSettings();
  const msg = { model: s.model, backend: s.backend, mode: s.mode, batch: s.batch };
  if (s.model === 'onnx') {
    if (!onnxFile) {
      showError({ name: 'Error', message: 'no .onnx file chosen' }, 'Compile');
      return;
    }
    msg.onnx = onnxFile.bytes.slice(0); // a copy: the page keeps the file for the next compile
    msg.onnxName = onnxFile.name;
    msg.edits = s.edits;
  } else if (!Number.isInteger(s.batch) || s.batch < 1) {
    showError({ name: 'RangeError', message: `batch must be a positive integer, got ${JSON.stringify(ui.batch.value)}` }, 'Compile');
    return;
  }
  clearResults(); // results of the previous compile must not pass for this one's
  send('compile', msg, { key: JSON.stringify(s), settings: s, thenRun, auto, t0 });
  go('compiling');
}

function maxRuns() {
  const n = Number(ui.runs.value);
  return Number.isInteger(n) && n >= 1 ? Math.min(n, 10000) : 200;
}

function sendRun(t0) {
  send('run', { maxRuns: maxRuns(), budgetMs: Number(params.get('budget')) || 3000 }, { key: compiledKey, settings: JSON.parse(compiledKey), t0 });
  go('running');
}

// Run: on the compiled function when it is the inputs' one, else compile first.
function doRun() {
  if (!SETTLED.has(state)) return;
  clearError();
  if (compiledKey !== currentKey()) return doCompile(true);
  sendRun();
}

function doCancel() {
  if (!req) return;
  const ms = performance.now() - req.t0;
  const what = req.kind === 'compile' ? 'compile' : 'run';
  req = null;
  restartWorker(`${what} cancelled`);
  if (what === 'compile') clearResults();
  ui.compileTime.textContent = what === 'compile' ? `cancelled after ${fmtMs(ms)}` : ui.compileTime.textContent;
  ui.status.textContent = `The ${what} was cancelled after ${(ms / 1000).toFixed(1)} s: its worker was stopped and a new one started (with the core already compiled on the page).`;
  go('cancelled');
}

// Focus stays where the user was: a button disabled while it works loses
// focus to <body>; it gets it back when the work ends.
let focusBack = null;
function remember(elm) { focusBack = elm; }
new MutationObserver(() => {
  if (SETTLED.has(state) && focusBack && (document.activeElement === document.body || !document.activeElement)) {
    focusBack.focus();
    focusBack = null;
  }
}).observe(document.body, { attributes: true, attributeFilter: ['data-state'] });

ui.compile.addEventListener('click', () => { remember(ui.compile); doCompile(false); });
ui.run.addEventListener('click', () => { remember(ui.run); doRun(); });
ui.cancel.addEventListener('click', () => doCancel());
ui.batch.addEventListener('keydown', (ev) => {
  if (ev.key !== 'Enter') return;
  ev.preventDefault();
  remember(ui.batch);
  doRun(); // compiles first when needed
});
ui.form.addEventListener('submit', (ev) => ev.preventDefault());

for (const r of ui.form.elements.model) {
  r.addEventListener('change', () => {
    const m = currentModel();
    if (MODEL_BATCH[m]) ui.batch.value = MODEL_BATCH[m];
    markStale();
  });
}
for (const input of [ui.batch, ui.backend, ui.mode]) input.addEventListener('input', markStale);
for (const input of [ui.backend, ui.mode]) input.addEventListener('change', markStale);

async function takeFile(file) {
  if (!file) return;
  clearError();
  try {
    const bytes = await file.arrayBuffer();
    onnxFile = { name: file.name, bytes, serial: ++fileSerial };
    clearOnnxInputs(); // the new model's inputs come with its first compile
    ui.onnxName.textContent = `${file.name} (${fmtBytes(bytes.byteLength)})`;
    ui.onnxRadio.disabled = false;
    ui.onnxRadio.checked = true;
    markStale();
  } catch (e) {
    showError({ name: e.name, message: `cannot read ${file.name}: ${e.message}` }, 'Reading the file');
  }
}

ui.file.addEventListener('change', () => takeFile(ui.file.files[0]));
ui.drop.addEventListener('keydown', (ev) => {
  if (ev.target !== ui.drop || (ev.key !== 'Enter' && ev.key !== ' ')) return;
  ev.preventDefault();
  ui.file.click();
});
ui.drop.addEventListener('dragover', (ev) => {
  ev.preventDefault();
  ui.drop.classList.add('over');
});
ui.drop.addEventListener('dragleave', () => ui.drop.classList.remove('over'));
ui.drop.addEventListener('drop', (ev) => {
  ev.preventDefault();
  ui.drop.classList.remove('over');
  takeFile(ev.dataTransfer?.files?.[0]);
});
// a file dropped elsewhere on the page must not navigate away
window.addEventListener('dragover', (ev) => ev.preventDefault());
window.addEventListener('drop', (ev) => ev.preventDefault());

// a kernel of the plan, focused or hovered (focus first): its nodes marked in the graph
const kernelLi = (e) => (e && ui.after.contains(e) ? e.closest?.('li[data-kernel]') : null) ?? null;
function markKernel(ev) {
  const focused = kernelLi(ev.type === 'focusout' ? ev.relatedTarget : document.activeElement);
  const hovered = ev.type === 'mouseover' ? kernelLi(ev.target)
    : ev.type === 'mouseout' ? kernelLi(ev.relatedTarget) : ui.after.querySelector('li[data-kernel]:hover');
  const li = focused ?? hovered;
  if (!li) {
    highlightNodes(ui.before, []);
    delete ui.before.dataset.highlight;
    delete ui.before.dataset.highlighted;
    return;
  }
  if (ui.before.dataset.highlight === li.dataset.kernel) return;
  const n = highlightNodes(ui.before, li.dataset.nodes ? li.dataset.nodes.split(' ') : []);
  ui.before.dataset.highlight = li.dataset.kernel;
  ui.before.dataset.highlighted = String(n);
  ui.before.querySelector('g.node.hl')?.scrollIntoView?.({ block: 'nearest', inline: 'nearest' });
}
for (const type of ['mouseover', 'mouseout', 'focusin', 'focusout']) ui.after.addEventListener(type, markKernel);

// zoom of the graph panels: fit the width, or a factor of the drawn size
for (const b of document.querySelectorAll('button[data-zoom]')) {
  b.addEventListener('click', () => {
    const box = $(b.dataset.for);
    const svg = box.querySelector('svg');
    if (!svg) return;
    const cur = Number(svg.dataset.zoom ?? 1);
    zoom(box, b.dataset.zoom === 'fit' ? 'fit' : cur * Number(b.dataset.zoom));
  });
}
function zoom(box, z) {
  const svg = box.querySelector('svg');
  if (!svg) return;
  const w = Number(svg.getAttribute('width')), h = Number(svg.getAttribute('height'));
  if (z === 'fit') z = Math.max(0.45, Math.min(1, (box.clientWidth - 4) / w)); // below 0.45 the text is unreadable: the panel scrolls
  z = Math.max(0.1, Math.min(4, z));
  svg.dataset.zoom = z.toFixed(3);
  svg.style.width = `${w * z}px`;
  svg.style.height = `${h * z}px`;
}

ui.copy.addEventListener('click', async () => {
  if (!lastRun) return;
  const { nodeCode } = await import('./nodecode.js');
  const code = nodeCode(lastRun.settings, { onnxName: onnxFile?.name, onnxInputs: lastRun.onnxInputs, via: lastRun.via });
  ui.code.textContent = code;
  ui.code.parentElement.open = true;
  try {
    await navigator.clipboard.writeText(code);
    ui.copy.textContent = 'copied';
  } catch {
    ui.copy.textContent = 'code shown below (the clipboard is not available here)';
  }
  setTimeout(() => { ui.copy.textContent = 'Copy as Node.js code'; }, 2000);
});

// ---- results ----------------------------------------------------------------------------------------
function showCompiled(m) {
  const now = performance.now();
  shown.compile = req.key;
  if (req.auto && !firstResultShown) {
    ui.firstResult.dataset.ms = now.toFixed(1);
    ui.firstResult.dataset.postedAt = (m.postedAt - performance.timeOrigin).toFixed(1);
    ui.firstResult.textContent = `${fmtMs(now)} after navigation (auto=1: no click; ${m.model}, ${m.backend})`;
  } else {
    ui.firstResult.dataset.fromClick = (now - req.t0).toFixed(1);
    ui.firstResult.textContent = `${fmtMs(now - req.t0)} after the click (${m.model}, ${m.backend})`;
  }
  if (!firstResultShown) ui.firstResult.dataset.model = m.model;
  firstResultShown = true;
  const what = m.backend === 'stax'
    ? 'compile() + first call: capture, which computes the result, then lowering and code generation'
    : `compile() + first call: capture, which computes the result; ${m.backend} replays the graph, with no lowering or code generation`;
  ui.compileTime.textContent = `${fmtMs(m.compileMs)} (${what})` + (m.buildMs > 0.5 ? `; building weights/inputs ${fmtMs(m.buildMs)}` : '');
  ui.compileTime.dataset.ms = m.compileMs.toFixed(3);
  // ?threads=N: explain().threads says what ran ("Wasm threads: 2 threads ...")
  if (m.explain?.threads) ui.compileTime.dataset.threads = m.explain.threads;
  if (params.get('threads') && m.explain?.threads) ui.compileTime.textContent += `; ${m.explain.threads}`;
  ui.memory.textContent = `${fmtBytes(m.memoryBytes)} of Wasm memory (it grows, never shrinks), ${m.liveTensors} live tensors`;
  ui.memory.dataset.bytes = String(m.memoryBytes);
  ui.graphText.textContent = m.graphText ?? '(no graph captured)';
  ui.wasmSize.textContent = m.backend === 'stax' ? 'emitting…' : '–';

  const parsed = m.graphText ? parseGraph(m.graphText) : null;
  ui.before.replaceChildren(parsed ? drawGraph(parsed) : el('p', { class: 'note' }, 'No graph was captured (a graph break?): the function ran eagerly.'));
  if (parsed) zoom(ui.before, 'fit');

  lastCompiled = { onnxInputs: m.onnxInputs, via: m.via };
  if (showOnnxInputs(m.onnxInputs) && req.settings.model === 'onnx') {
    // a new form shows the values this compile used: they are its inputs
    req.settings = { ...req.settings, edits: onnxEdits() };
    req.key = compiledKey = shown.compile = JSON.stringify(req.settings);
  }
  const plans = m.explain?.backend_plans ?? [];
  const plan = plans[plans.length - 1];
  if (m.via === 'model') {
    // capture stopped (an input's value sets a shape): the model runs on the backend itself
    ui.kernels.textContent = `the model runs through tp.onnx.load(bytes, { backend: '${m.backend}' }), specialized on its inputs' shapes and values; ` +
      `tp.compile cannot capture it (${m.viaWhy}), so no kernel plan is reported` +
      (m.mode && m.mode !== 'default' ? `; mode ${m.mode} does not apply (it is a tp.compile option)` : '');
    delete ui.kernels.dataset.json;
    ui.after.replaceChildren(el('pre', { class: 'mono explain' }, m.modelExplain ?? ''));
    ui.loweredNote.textContent = 'model.explain() of the loaded model: its inputs, the value inputs it specializes on, and its specializations.';
  } else if (plan) {
    ui.kernels.textContent = `${plan.kernels} kernels: ${['gemm', 'conv', 'pointwise', 'row', 'op'].filter((k) => plan[k]).map((k) => `${plan[k]} ${k}`).join(', ')}` +
      `; ${plan.generated} run as generated Wasm` + (plan.autotuned ? `; ${plan.autotuned} autotuned` : '') +
      `; arena ${fmtBytes(plan.arena_bytes)}`;
    ui.kernels.dataset.json = JSON.stringify(plan);
    ui.after.replaceChildren(drawPlan(plan, parsed));
    if (Array.isArray(plan.kernel_nodes)) {
      ui.after.append(drawKernelList(plan, parsed));
      ui.loweredNote.textContent = 'Kernels in run order with the captured graph\'s nodes each computes (explain().backend_plans[i].kernel_nodes; ' +
        'a node the lowering rewrote, e.g. a 1x1 conv as a GEMM, counts as the node it came from): hover or focus one to mark its nodes. ' +
        (Array.isArray(plan.kernel_generated)
          ? 'Each says whether it runs as generated Wasm or as a core kernel (kernel_generated).'
          : 'Which kernels run as generated code is not reported by this core, only how many.') +
        ' Natively: tpc compile GRAPH.tpg --dump=graph,passes,kernels.';
    } else {
      ui.loweredNote.textContent = 'explain().backend_plans reports the kernels by kind and how many run as generated code ' +
        '(natively: tpc compile GRAPH.tpg --dump=graph,passes,kernels).';
    }
  } else {
    ui.kernels.textContent = `none: backend ${m.backend} does not lower the graph (it replays it node by node)`;
    delete ui.kernels.dataset.json;
    ui.after.replaceChildren(el('p', { class: 'note' }, `Backend ${m.backend} runs the captured graph as it is: no lowering, no kernels, no generated code. Choose stax to see the plan.`));
    ui.loweredNote.textContent = '';
  }
  showOutputs(m.outputs, 'output of the compiling call');
  markStale();
}

function showWasm(m) {
  if (wasmUrl) URL.revokeObjectURL(wasmUrl);
  wasmUrl = null;
  if (m.none) {
    ui.wasmSize.textContent = `none: ${m.none}`;
    ui.wasmSize.dataset.bytes = '0';
    return;
  }
  if (m.error) {
    const why = /no kernel to emit/.test(m.error.message)
      ? 'no module: every kernel of this graph is a core kernel (GEMMs with fused epilogues), nothing left to generate'
      : `no module: ${m.error.message}`;
    ui.wasmSize.textContent = why;
    ui.wasmSize.dataset.bytes = '0';
    return;
  }
  wasmUrl = URL.createObjectURL(new Blob([m.bytes], { type: 'application/wasm' }));
  ui.wasmSize.replaceChildren(
    `${fmtBytes(m.size)} (${m.valid ? 'validates' : 'DOES NOT validate'}; emitted in ${fmtMs(m.ms)}) `,
    el('a', { href: wasmUrl, download: 'stax-kernels.wasm' }, 'download'),
  );
  ui.wasmSize.dataset.bytes = String(m.size);
}

function showOutputs(outs, what) {
  if (!outs?.length) {
    ui.output.textContent = 'no tensor output';
    return;
  }
  const blocks = outs.map((out, k) => {
    const s = out.summary;
    const head = s.head.slice(0, 8).map((v) => v.toFixed(5)).join(', ');
    return el('div', { class: 'out', 'data-index': k },
      el('div', {}, el('strong', {}, `${outs.length > 1 ? `output ${k}: ` : ''}shape [${out.shape.join(', ')}] ${out.dtype}`)),
      el('div', { class: 'mono' }, `first values: ${head}${s.count > 8 ? ', …' : ''}`),
      el('div', { class: 'mono' }, `sum ${s.sum.toPrecision(7)}, sum |y| ${s.absSum.toPrecision(7)}${s.finite ? '' : ' (NOT FINITE)'}`));
  });
  ui.output.replaceChildren(el('div', { class: 'note' }, `${outs.length} output${outs.length > 1 ? 's' : ''} (${what})`), ...blocks);
  ui.output.dataset.shape = JSON.stringify(outs[0].shape);
  ui.output.dataset.summary = JSON.stringify(outs[0].summary);
  ui.output.dataset.outputs = JSON.stringify(outs);
  ui.output.dataset.seq = String(++seq);
}

function showRun(m) {
  shown.run = req.key;
  lastRun = { key: req.key, settings: req.settings, outputs: m.outputs, onnxInputs: lastCompiled?.onnxInputs, via: lastCompiled?.via };
  showOutputs(m.outputs, 'after the timed runs');
  ui.memory.textContent = `${fmtBytes(m.memoryBytes)} of Wasm memory (it grows, never shrinks), ${m.liveTensors} live tensors`;
  ui.memory.dataset.bytes = String(m.memoryBytes);
  ui.chart.replaceChildren(drawChart(m.timings));
  const noisy = m.timings.filter((t) => !t.converged);
  ui.chartNote.textContent = noisy.length
    ? `Noisy: ${noisy.map((t) => t.label).join(', ')} did not get within ±5% in ${m.maxRuns} runs or ${(m.budgetMs / 1000).toFixed(0)} s; read those numbers as rough.`
    : '';
  ui.chart.dataset.json = JSON.stringify(m.timings.map(({ label, median, min, lo, hi, n, converged }) => ({ label, median, min, lo, hi, n, converged })));
  ui.chart.dataset.seq = String(++seq);
  markStale();
}

// ---- start -------------------------------------------------------------------------------------------------------------
for (const [k, input] of [['backend', ui.backend], ['mode', ui.mode], ['runs', ui.runs]]) {
  if (params.get(k)) input.value = params.get(k);
}
if (params.get('model') && MODEL_BATCH[params.get('model')]) {
  ui.form.elements.model.value = params.get('model');
  ui.batch.value = MODEL_BATCH[params.get('model')];
}
if (params.get('batch')) ui.batch.value = params.get('batch');
render();
startWorker();
// ?auto=1: compile (then run) now; the worker holds requests that arrive
// while it loads, so the compile starts the moment the core is ready
// instead of a round trip through this page later. Its first result is
// timed from navigation start (there is no click).
if (params.get('auto')) doCompile(true, { auto: true, t0: 0 });
import('./models.js').then((m) => { MODELS = m.MODELS; describeModel(); });
