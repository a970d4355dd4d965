// app.js - the main thread of the web example: UI only. Every compile and run
// happens in worker.js (a module Web Worker), so the page never freezes.
//
// URL parameters (used by the browser tests, handy by hand too):
//   ?model=mlp|cnn|transformer  preselect a model
//   &backend=..&mode=..&batch=..&runs=..
//   &auto=1                       compile (and then run) as soon as the core is loaded
//   &pkg=modules                  the worker imports js/index.js, not the bundle js/dist/tensorplay.mjs
// The page records when the first result appeared, in ms since navigation
// start (performance.now()), in #first-result[data-ms].

const $ = (id) => document.getElementById(id);
const SVG_NS = 'http://www.w3.org/2000/svg';
const MODEL_BATCH = { mlp: 64, cnn: 16, transformer: 1 };

const ui = {
  form: $('form'), compile: $('compile'), run: $('run'), busy: $('busy'), status: $('status'),
  error: $('error'), batch: $('batch'), backend: $('backend'), mode: $('mode'), runs: $('runs'),
  file: $('file'), drop: $('drop'), onnxName: $('onnx-name'), onnxNote: $('onnx-note'), onnxRadio: $('model-onnx'),
  compileTime: $('compile-time'), firstResult: $('first-result'), kernels: $('kernels'), wasmSize: $('wasm-size'),
  memory: $('memory'), before: $('graph-before'), after: $('graph-after'), loweredNote: $('lowered-note'),
  graphText: $('graph-text'), output: $('output'), chart: $('chart'),
};

let worker = null;
let ready = false;
let hasOnnx = false;
let nextId = 1;
let pendingId = 0;
let compiled = false; // a compiled model is live in the worker
let workerFailed = false; // the worker could not load, or stopped: nothing is sent to it
let onnxFile = null; // { name, bytes: ArrayBuffer }
let firstResultMs = null;
let wasmUrl = null;
let seq = 0;
const params = new URLSearchParams(location.search);

// ---- small helpers ------------------------------------------------------------------------
const fmtMs = (ms) => (ms >= 100 ? ms.toFixed(0) : ms >= 10 ? ms.toFixed(1) : ms.toFixed(2)) + ' ms';
const fmtBytes = (n) => n >= 2 ** 20 ? `${(n / 2 ** 20).toFixed(1)} MiB` : n >= 1024 ? `${(n / 1024).toFixed(1)} KiB` : `${n} bytes`;

function el(tag, attrs = {}, ...children) {
  const ns = ['svg', 'g', 'rect', 'text', 'path', 'line', 'defs', 'marker', 'title', 'tspan'].includes(tag);
  const e = ns ? document.createElementNS(SVG_NS, tag) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) if (v !== undefined && v !== null) e.setAttribute(k, String(v));
  for (const c of children) if (c !== null && c !== undefined) e.append(c instanceof Node ? c : String(c));
  return e;
}

function currentModel() {
  return new FormData(ui.form).get('model');
}

function setBusy(on) {
  ui.busy.hidden = !on;
  ui.compile.disabled = on || !ready;
  ui.run.disabled = on || !ready || !compiled;
  document.body.dataset.state = !ready ? 'loading' : on ? 'busy' : 'ready';
}

function showError(err, context) {
  const e = err || {};
  const parts = [];
  let title = context ? `${context} failed` : 'Error';
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
  if (e.fatal) return 'The core trapped, so its worker was stopped and a fresh one started: the page is ready for the next try.';
  if (/OUT_OF_MEMORY|out of memory|TooLarge|too large/i.test(m)) return 'The model or batch does not fit in the Wasm memory (at most 4 GiB). Try a smaller batch.';
  if (/onnx/i.test(m) && /Unsupported|not available/i.test(m)) return 'Try one of the built-in models.';
  if (/onnx|PARSE|truncated|protobuf/i.test(m)) return 'The file is not a valid ONNX model, or uses something the importer does not support.';
  if (/UNSUPPORTED|not supported/i.test(m)) return 'The model uses an operator or attribute this version does not support.';
  return '';
}

function clearError() {
  ui.error.hidden = true;
  ui.error.replaceChildren();
}

// ---- the worker ------------------------------------------------------------------------------
function startWorker() {
  ready = false;
  compiled = false;
  setBusy(false);
  // The first worker is started by the inline script in index.html's <head>,
  // before this module loads; messages it sent meanwhile are replayed.
  // A restarted worker gets the same compiled core (window.tpCore, a
  // promise of a WebAssembly.Module or null) when the page has one.
  // ?pkg=modules (for the page too): the worker imports js/index.js, not the bundle.
  const early = window.tpEarlyWorker;
  window.tpEarlyWorker = null;
  const url = new URL('./worker.js', import.meta.url);
  if (window.tpCore) url.searchParams.set('core', 'page');
  if (params.get('pkg') === 'modules') url.searchParams.set('pkg', 'modules');
  workerFailed = false;
  if (early) {
    worker = early.worker;
  } else {
    const w = new Worker(url, { type: 'module' });
    if (window.tpCore) window.tpCore.then((module) => w.postMessage({ type: 'core', module }));
    worker = w;
  }
  worker.onmessage = (ev) => onMessage(ev.data);
  worker.onerror = (ev) => {
    ev.preventDefault?.();
    if (workerFailed) return; // its load error (sent before it threw) is on the page already
    showError({ name: 'WorkerError', message: ev.message || 'the worker failed to start (see the console)' }, 'Loading');
    stopped();
  };
  if (early) {
    if (early.error) worker.onerror(early.error);
    for (const m of early.messages) onMessage(m);
  }
}

// The worker cannot load (or stopped): say so; requests are not sent to it.
function stopped(what = 'The worker stopped') {
  workerFailed = true;
  ui.status.textContent = `${what}. Reload the page to try again.`;
  pendingId = 0;
  setBusy(false);
}

function restartWorker(reason) {
  try { worker?.terminate(); } catch { /* ignore */ }
  ui.status.textContent = `Restarting the core (${reason})…`;
  pendingId = 0;
  startWorker();
}

function send(msg, transfer = []) {
  const id = nextId++;
  pendingId = id;
  setBusy(true);
  worker.postMessage({ ...msg, id }, transfer);
  return id;
}

function onMessage(m) {
  switch (m.type) {
    case 'ready':
      ready = true;
      hasOnnx = m.hasOnnx;
      ui.status.textContent = `Core ${m.version} (${m.isa}) loaded in the worker in ${fmtMs(m.loadMs)} (package: ${m.package === 'bundle' ? 'one-file bundle' : 'ES modules'}); memory ${fmtBytes(m.memoryBytes)}.`;
      ui.status.dataset.package = m.package;
      ui.status.dataset.loadMs = m.loadMs.toFixed(2);
      // when the worker started, and when it had the core, in page time
      ui.status.dataset.workerStart = (m.timeOrigin - performance.timeOrigin).toFixed(1);
      ui.status.dataset.readyAt = performance.now().toFixed(1);
      ui.onnxNote.textContent = hasOnnx ? '' : 'ONNX import is not in this build of the package (tp.onnx.load is missing): dropping a file will say so.';
      setBusy(pendingId !== 0); // an auto=1 compile may be under way already
      return;
    case 'compiled':
      if (m.id !== pendingId) return;
      compiled = true;
      showCompiled(m);
      return;
    case 'wasm':
      if (m.id !== pendingId) return;
      showWasm(m);
      setBusy(false);
      if (autoRun && m.id === autoRun) {
        autoRun = 0;
        doRun();
      }
      return;
    case 'ran':
      if (m.id !== pendingId) return;
      showRun(m);
      setBusy(false);
      return;
    case 'error': {
      const err = m.error;
      const context = m.id === 0 ? 'Loading the core' : lastAction;
      if (m.id !== 0 && m.id !== pendingId) return;
      showError(err, context);
      if (context === 'Compile') ui.compileTime.textContent = 'failed (see the message above)';
      if (err.phase === 'load') {
        stopped('The core could not be loaded'); // a new worker would fail the same way
      } else if (err.fatal) {
        restartWorker(`${err.name}: ${err.message}`);
      } else {
        if (lastAction === 'Compile') compiled = false;
        setBusy(false);
      }
      return;
    }
    default:
      console.warn('unknown message from the worker', m);
  }
}

// ---- actions ------------------------------------------------------------------------------------
let lastAction = '';
let autoRun = 0;

function doCompile(thenRun = false, beforeReady = false) {
  if ((!ready && !beforeReady) || workerFailed) return;
  clearError();
  lastAction = 'Compile';
  const model = currentModel();
  const msg = { type: 'compile', model, backend: ui.backend.value, mode: ui.mode.value, batch: Number(ui.batch.value) };
  if (model === 'onnx') {
    if (!onnxFile) {
      showError({ name: 'Error', message: 'no .onnx file chosen' }, 'Compile');
      return;
    }
    msg.onnx = onnxFile.bytes.slice(0); // a copy: the page keeps the file for the next compile
    msg.onnxName = onnxFile.name;
  }
  // results of the previous compile must not pass for this one's
  ui.compileTime.textContent = 'compiling…';
  delete ui.compileTime.dataset.ms;
  for (const e of [ui.kernels, ui.wasmSize]) {
    e.textContent = '–';
    delete e.dataset.json;
    delete e.dataset.bytes;
  }
  for (const e of [ui.before, ui.after, ui.chart]) e.replaceChildren();
  ui.loweredNote.textContent = '';
  ui.graphText.textContent = '';
  ui.output.textContent = '–';
  delete ui.output.dataset.summary;
  delete ui.chart.dataset.json;
  const id = send(msg, msg.onnx ? [msg.onnx] : []);
  if (thenRun) autoRun = id;
}

function doRun() {
  if (!ready || !compiled || workerFailed) return;
  clearError();
  lastAction = 'Run';
  send({ type: 'run', runs: Number(ui.runs.value) || 10 });
}

ui.compile.addEventListener('click', () => doCompile(false));
ui.run.addEventListener('click', () => doRun());

for (const r of ui.form.elements.model) {
  r.addEventListener('change', () => {
    const m = currentModel();
    if (MODEL_BATCH[m]) ui.batch.value = MODEL_BATCH[m];
    ui.batch.disabled = m === 'onnx';
    compiled = false;
    setBusy(false);
  });
}

async function takeFile(file) {
  if (!file) return;
  clearError();
  try {
    const bytes = await file.arrayBuffer();
    onnxFile = { name: file.name, bytes };
    ui.onnxName.textContent = `${file.name} (${fmtBytes(bytes.byteLength)})`;
    ui.onnxRadio.disabled = false;
    ui.onnxRadio.checked = true;
    ui.batch.disabled = true;
    compiled = false;
    setBusy(false);
  } catch (e) {
    showError({ name: e.name, message: `cannot read ${file.name}: ${e.message}` }, 'Reading the file');
  }
}

ui.file.addEventListener('change', () => takeFile(ui.file.files[0]));
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

// ---- results ----------------------------------------------------------------------------------------
function showCompiled(m) {
  const now = performance.now();
  if (firstResultMs === null) {
    firstResultMs = now;
    ui.firstResult.dataset.ms = now.toFixed(1);
    ui.firstResult.dataset.model = m.model;
    ui.firstResult.dataset.postedAt = (m.postedAt - performance.timeOrigin).toFixed(1);
    ui.firstResult.textContent = `${fmtMs(now)} after page load (${m.model}, ${m.backend})`;
  }
  ui.compileTime.textContent = `${fmtMs(m.compileMs)} (compile() + first call: capture, which computes the result, then lowering and code generation)` +
    (m.buildMs > 0.5 ? `; building weights/inputs ${fmtMs(m.buildMs)}` : '');
  ui.compileTime.dataset.ms = m.compileMs.toFixed(3);
  ui.memory.textContent = fmtBytes(m.memoryBytes);
  ui.graphText.textContent = m.graphText ?? '(no graph captured)';
  ui.wasmSize.textContent = 'emitting…';

  const parsed = m.graphText ? parseGraph(m.graphText) : null;
  ui.before.replaceChildren(parsed ? drawGraph(parsed) : el('p', { class: 'note' }, 'No graph was captured (a graph break?): the function ran eagerly.'));

  const plans = m.explain?.backend_plans ?? [];
  const plan = plans[plans.length - 1];
  if (plan) {
    ui.kernels.textContent = `${plan.kernels} kernels: ${['gemm', 'pointwise', 'row', 'op'].filter((k) => plan[k]).map((k) => `${plan[k]} ${k}`).join(', ')}` +
      `; ${plan.generated} run as generated Wasm` + (plan.autotuned ? `; ${plan.autotuned} autotuned` : '') +
      `; arena ${fmtBytes(plan.arena_bytes)}`;
    ui.kernels.dataset.json = JSON.stringify(plan);
    ui.after.replaceChildren(drawPlan(plan, parsed));
    ui.loweredNote.textContent = 'explain().backend_plans reports the kernels by kind and how many run as generated code; ' +
      'which graph nodes each kernel fuses, their order, and the text of the lowering passes are not reachable from JS ' +
      '(natively: tpc compile GRAPH.tpg --dump=graph,passes,kernels).';
  } else {
    ui.kernels.textContent = `none: backend ${m.backend} does not lower the graph (it replays it node by node)`;
    delete ui.kernels.dataset.json;
    ui.after.replaceChildren(el('p', { class: 'note' }, `Backend ${m.backend} runs the captured graph as it is: no lowering, no kernels, no generated code. Choose stax to see the plan.`));
    ui.loweredNote.textContent = '';
  }
  showOutput(m.output, 'output of the compiling call');
}

function showWasm(m) {
  if (wasmUrl) URL.revokeObjectURL(wasmUrl);
  wasmUrl = null;
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

function showOutput(out, what) {
  if (!out?.summary) {
    ui.output.textContent = 'no tensor output';
    return;
  }
  const s = out.summary;
  const head = s.head.slice(0, 8).map((v) => v.toFixed(5)).join(', ');
  ui.output.replaceChildren(
    el('div', {}, el('strong', {}, `shape [${out.shape.join(', ')}] ${out.dtype}`), ` (${what})`),
    el('div', { class: 'mono' }, `first values: ${head}${s.count > 8 ? ', …' : ''}`),
    el('div', { class: 'mono' }, `sum ${s.sum.toPrecision(7)}, sum |y| ${s.absSum.toPrecision(7)}${s.finite ? '' : ' (NOT FINITE)'}`),
  );
  ui.output.dataset.shape = JSON.stringify(out.shape);
  ui.output.dataset.summary = JSON.stringify(s);
  ui.output.dataset.seq = String(++seq);
}

function showRun(m) {
  showOutput(m.output, `after ${m.runs} timed runs`);
  ui.memory.textContent = `${fmtBytes(m.memoryBytes)}, ${m.liveTensors} live tensors`;
  ui.chart.replaceChildren(drawChart(m.timings, m.runs));
  ui.chart.dataset.json = JSON.stringify(m.timings.map(({ label, median, min }) => ({ label, median, min })));
  ui.chart.dataset.seq = String(++seq);
}

// ---- the graph text -> nodes -------------------------------------------------------------------------
export function parseGraph(text) {
  const nodes = [];
  const byName = new Map();
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#') || line.startsWith('tpgraph') || line.startsWith('data ')) continue;
    let m = /^%([A-Za-z0-9_.]+) = (\w+)(?:\((.*)\))?(?: "([^"]*)")? : ([a-z0-9]+\[[0-9,]*\])/.exec(line);
    let node;
    if (m) {
      const [, name, op, inner, target, type] = m;
      node = { name, op, type, args: [], attrs: '', target };
      if (inner !== undefined) splitOperands(inner, node);
    } else if ((m = /^output\((.*)\)/.exec(line))) {
      node = { name: 'output', op: 'output', type: '', args: [], attrs: '' };
      splitOperands(m[1], node);
    } else continue;
    node.index = nodes.length;
    nodes.push(node);
    byName.set(node.name, node);
  }
  for (const n of nodes) n.inputs = n.args.map((a) => byName.get(a)).filter(Boolean);
  return nodes;
}

function splitOperands(inner, node) {
  // operands are %names, none, numbers; attributes are name=value (lists in [..])
  const parts = [];
  let depth = 0, cur = '';
  for (const ch of inner) {
    if (ch === '[') depth++;
    if (ch === ']') depth--;
    if (ch === ',' && depth === 0) { parts.push(cur.trim()); cur = ''; } else cur += ch;
  }
  if (cur.trim()) parts.push(cur.trim());
  const attrs = [];
  for (const p of parts) {
    if (p.startsWith('%')) node.args.push(p.slice(1));
    else if (p.includes('=')) attrs.push(p);
    else if (p !== 'none') attrs.push(p); // an immediate scalar
  }
  node.attrs = attrs.join(', ');
}

// ---- layout by topological rank, drawn as SVG ------------------------------------------------------------
function drawGraph(nodes) {
  // rank = 1 + max rank of the inputs; constants sit just above their first consumer
  for (const n of nodes) {
    const calc = n.inputs.filter((i) => i.op !== 'get_attr');
    n.rank = n.op === 'placeholder' || n.op === 'get_attr' ? 0 : 1 + Math.max(0, ...calc.map((i) => i.rank));
  }
  for (const n of nodes) {
    if (n.op !== 'get_attr') continue;
    const users = nodes.filter((u) => u.inputs.includes(n));
    n.rank = users.length ? Math.max(0, Math.min(...users.map((u) => u.rank)) - 1) : 0;
  }
  const ranks = [];
  for (const n of nodes) (ranks[n.rank] ??= []).push(n);
  // one barycenter pass (by the inputs' order in the rank above) to cut crossings
  for (let r = 1; r < ranks.length; r++) {
    if (!ranks[r]) { ranks[r] = []; continue; }
    const pos = (n) => (n.inputs.length ? n.inputs.reduce((a, i) => a + (i.order ?? 0), 0) / n.inputs.length : n.index);
    ranks[0].forEach((n, i) => { n.order ??= i; });
    ranks[r].sort((a, b) => pos(a) - pos(b) || a.index - b.index).forEach((n, i) => { n.order = i; });
  }
  const CH = 6.6, H = 34, VGAP = 30, HGAP = 14, PAD = 10;
  for (const n of nodes) {
    n.label = n.op === 'get_attr' ? `const ${n.target ?? n.name}` : n.op === 'placeholder' ? `input %${n.name}` : n.op;
    n.sub = n.op === 'output' ? '' : n.type + (n.attrs && n.attrs.length < 28 ? `  ${n.attrs}` : '');
    n.w = Math.max(60, Math.ceil(Math.max(n.label.length, n.sub.length) * CH) + 14);
    n.h = n.op === 'output' ? 24 : H;
  }
  let width = 0;
  const rowW = ranks.map((row) => row.reduce((a, n) => a + n.w, 0) + HGAP * Math.max(0, row.length - 1));
  width = Math.max(...rowW, 200) + 2 * PAD;
  ranks.forEach((row, r) => {
    let x = PAD + (width - 2 * PAD - rowW[r]) / 2;
    for (const n of row) {
      n.x = x;
      n.y = PAD + r * (H + VGAP);
      x += n.w + HGAP;
    }
  });
  const height = PAD * 2 + ranks.length * (H + VGAP) - VGAP;
  const svg = el('svg', { xmlns: SVG_NS, viewBox: `0 0 ${width} ${height}`, width, height, class: 'graph', role: 'img',
    'aria-label': `graph of ${nodes.length} nodes`, 'data-nodes': nodes.length });
  svg.append(el('defs', {}, el('marker', { id: 'arrow', viewBox: '0 0 8 8', refX: 8, refY: 4, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
    el('path', { d: 'M0,0 L8,4 L0,8 z', class: 'arrowhead' }))));
  const edges = el('g', { class: 'edges' });
  for (const n of nodes) {
    for (const i of n.inputs) {
      const x1 = i.x + i.w / 2, y1 = i.y + i.h, x2 = n.x + n.w / 2, y2 = n.y;
      const my = (y1 + y2) / 2;
      edges.append(el('path', { d: `M${x1},${y1} C${x1},${my} ${x2},${my} ${x2},${y2}`, class: i.op === 'get_attr' ? 'edge const' : 'edge', 'marker-end': 'url(#arrow)' }));
    }
  }
  svg.append(edges);
  for (const n of nodes) {
    const kind = n.op === 'placeholder' ? 'input' : n.op === 'get_attr' ? 'const' : n.op === 'output' ? 'output' : 'op';
    const g = el('g', { class: `node ${kind}`, transform: `translate(${n.x},${n.y})`, 'data-op': n.op });
    g.append(el('title', {}, `%${n.name} = ${n.op}${n.attrs ? ` (${n.attrs})` : ''} : ${n.type}`));
    g.append(el('rect', { width: n.w, height: n.h, rx: 5 }));
    g.append(el('text', { x: n.w / 2, y: n.sub ? 14 : 16, class: 'label' }, n.label));
    if (n.sub) g.append(el('text', { x: n.w / 2, y: 28, class: 'sub' }, n.sub));
    svg.append(g);
  }
  return svg;
}

// The plan: what explain().backend_plans reports (counts by kind, and how
// many kernels run as generated code), drawn as the captured graph's ops
// flowing into kernel groups. Which kernels are the generated ones is not
// reported, so the generated module hangs off the whole kernel column.
function drawPlan(plan, nodes) {
  const ops = nodes ? nodes.filter((n) => !['placeholder', 'get_attr', 'output'].includes(n.op)).length : null;
  const kinds = [
    ['gemm', 'core SIMD128 GEMM'],
    ['pointwise', 'fused elementwise'],
    ['row', 'reductions, softmax, norms'],
    ['op', 'core op kernels'],
  ].filter(([k]) => plan[k] > 0);
  const W = 520, PAD = 10, BH = 38, GAP = 10, SW = 110, KX = 160, KW = 190, GX = 400;
  const colH = Math.max(BH, kinds.length * (BH + GAP) - GAP);
  const height = PAD * 2 + colH + 46;
  const svg = el('svg', { xmlns: SVG_NS, viewBox: `0 0 ${W} ${height}`, width: W, height, class: 'graph plan', role: 'img',
    'aria-label': `plan of ${plan.kernels} kernels`, 'data-kernels': plan.kernels, 'data-generated': plan.generated });
  svg.append(el('defs', {}, el('marker', { id: 'arrow2', viewBox: '0 0 8 8', refX: 8, refY: 4, markerWidth: 7, markerHeight: 7, orient: 'auto' },
    el('path', { d: 'M0,0 L8,4 L0,8 z', class: 'arrowhead' }))));
  const midY = PAD + colH / 2;
  svg.append(el('g', { class: 'node op', transform: `translate(${PAD},${PAD})` },
    el('rect', { width: SW, height: colH, rx: 5 }),
    el('text', { x: SW / 2, y: colH / 2 - 4, class: 'label' }, 'captured graph'),
    el('text', { x: SW / 2, y: colH / 2 + 12, class: 'sub' }, ops === null ? '' : `${ops} ops`)));
  kinds.forEach(([k, desc], i) => {
    const y = PAD + i * (BH + GAP);
    svg.append(el('path', { d: `M${PAD + SW},${midY} C${KX - 20},${midY} ${KX - 30},${y + BH / 2} ${KX},${y + BH / 2}`, class: 'edge', 'marker-end': 'url(#arrow2)' }));
    svg.append(el('g', { class: `node kernel ${k}`, transform: `translate(${KX},${y})`, 'data-kind': k, 'data-count': plan[k] },
      el('title', {}, `${plan[k]} ${k} kernel(s): ${desc}`),
      el('rect', { width: KW, height: BH, rx: 5 }),
      el('text', { x: KW / 2, y: 15, class: 'label' }, `${plan[k]} × ${k}`),
      el('text', { x: KW / 2, y: 30, class: 'sub' }, desc)));
  });
  if (plan.generated > 0) {
    // a bracket over the kernel column, then the generated module
    const bx = KX + KW + 8;
    svg.append(el('path', { d: `M${bx},${PAD} h6 V${PAD + colH} h-6 M${bx + 6},${midY} H${GX}`, class: 'edge gen', 'marker-end': 'url(#arrow2)' }));
    svg.append(el('g', { class: 'node generated', transform: `translate(${GX},${midY - BH / 2})` },
      el('title', {}, 'the plan reports how many kernels run as generated code, not which'),
      el('rect', { width: W - GX - PAD, height: BH, rx: 5 }),
      el('text', { x: (W - GX - PAD) / 2, y: 15, class: 'label' }, 'generated Wasm'),
      el('text', { x: (W - GX - PAD) / 2, y: 30, class: 'sub' }, `${plan.generated} of ${plan.kernels} kernels`)));
  }
  const ty = PAD + colH + 18;
  svg.append(el('text', { x: PAD, y: ty, class: 'caption' }, `${plan.kernels} kernels; ${plan.generated} run as generated SIMD128 code (which ones is not reported),`));
  svg.append(el('text', { x: PAD, y: ty + 17, class: 'caption' }, `the others as the core's kernels; arena ${fmtBytes(plan.arena_bytes)}${plan.autotuned ? `; ${plan.autotuned} GEMM shape(s) autotuned` : ''}.`));
  return svg;
}

// ---- timings bar chart ----------------------------------------------------------------------------------------
function drawChart(timings, runs) {
  const W = 640, LW = 230, BH = 26, GAP = 10, PAD = 10, RW = 90;
  const max = Math.max(...timings.map((t) => t.median), 1e-6);
  const height = PAD * 2 + timings.length * (BH + GAP) + 22;
  const svg = el('svg', { xmlns: SVG_NS, viewBox: `0 0 ${W} ${height}`, width: W, height, class: 'chart', role: 'img',
    'aria-label': 'median run time per variant' });
  const scale = (W - LW - RW - PAD) / max;
  timings.forEach((t, i) => {
    const y = PAD + i * (BH + GAP);
    const cls = t.label.startsWith('eager') ? 'bar eager' : t.label.includes('stax') ? 'bar stax' : 'bar other';
    svg.append(el('text', { x: LW - 8, y: y + BH / 2 + 4, class: 'barlabel' }, t.label));
    svg.append(el('rect', { x: LW, y, width: Math.max(1, t.median * scale), height: BH, class: cls },
      el('title', {}, `${t.label}: median ${t.median.toFixed(3)} ms, min ${t.min.toFixed(3)} ms over ${runs} runs`)));
    svg.append(el('line', { x1: LW + t.min * scale, x2: LW + t.min * scale, y1: y + 3, y2: y + BH - 3, class: 'minmark' }));
    svg.append(el('text', { x: LW + Math.max(1, t.median * scale) + 6, y: y + BH / 2 + 4, class: 'barvalue' }, fmtMs(t.median)));
  });
  const base = timings.find((t) => t.label.startsWith('eager'));
  const best = timings.filter((t) => !t.label.startsWith('eager')).sort((a, b) => a.median - b.median)[0];
  const res = globalThis.crossOriginIsolated ? '' : ' (clock resolution 0.1 ms: serve with COOP/COEP for 5 µs)';
  const note = base && best && best.median > 0
    ? `median of ${runs} runs (tick: min); ${best.label} is ${(base.median / best.median).toFixed(2)}× eager${res}`
    : `median of ${runs} runs; too fast to compare at this clock's resolution${res}`;
  svg.append(el('text', { x: PAD, y: height - 8, class: 'caption' }, note));
  return svg;
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
startWorker();
// ?auto=1: compile (then run) now; the worker holds requests that arrive
// while it loads, so the compile starts the moment the core is ready
// instead of a round trip through this page later
if (params.get('auto')) doCompile(true, true);
