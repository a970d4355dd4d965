// worker.js - the module Web Worker of the web example: loads tensorplay-wasm
// and does all compiling and running, so the page's main thread never blocks.
//
// Messages in (from app.js), each with an `id` echoed in the answer:
//   { type: 'compile', id, model: 'mlp'|'cnn'|'transformer'|'onnx', batch,
//     backend, mode, onnx?: ArrayBuffer, onnxName? }
//   { type: 'run', id, maxRuns, budgetMs }   adaptive run counts (stats.js)
//   { type: 'core', module }   with ?core=page: the page's compiled core, first
// Requests sent before 'ready' wait until the package has loaded.
// Messages out:
//   { type: 'ready', loadMs, version, package: 'bundle'|'modules', worker: 'bundle'|'source', isa, memoryBytes,
//     hasOnnx, backends }
//   { type: 'progress', id, phase, i?, n? }  the phase that starts now (the page
//                                     shows it with the elapsed time, and can cancel)
//   { type: 'compiled', id, ... }     compile time, graph text, explain(), outputs
//   { type: 'wasm', id, ... }         the generated module (bytes) or why there is none
//   { type: 'ran', id, ... }          medians with 95% CIs of eager / compiled / stax, outputs
//   { type: 'error', id, error: { name, message, code, status, fatal } }
// `fatal`: the core trapped (WebAssembly.RuntimeError) or exited; its state
// cannot be trusted, so the page terminates this worker and starts a new one.

const t0 = performance.now();
performance.mark('workerJs');
// The Wasm core, ready before the package's JS modules have loaded
// (js/index.js reads globalThis.tensorplayWasm): with ?core=page, the
// WebAssembly.Module the page compiled and posts as { type: 'core', module }
// (index.html; null: load it here after all); otherwise fetched and
// compiled here. On any failure the package fetches the core itself and
// reports the error.
// The performance marks (workerJs, request, coreCompiled, imported, built,
// firstCall, posting) are the worker's timeline; tests/browser/web.test.mjs
// records them, bench/web/probe-start.mjs splits a load with them.
const params = new URL(self.location.href).searchParams; // ?core=page, ?pkg=modules, ?threads=N
// This file runs as it is, or bundled as examples/web/dist/worker.mjs
// (scripts/bundle.mjs, `bash scripts/build.sh bundle`), which index.html
// starts by default: it imports what it needs before its first result (the
// package, models.js, stats.js: worker_deps.js) as one file beside it,
// dist/worker_deps.mjs, one request instead of three (each a revalidation
// round trip to the server). TP_WORKER_BUNDLE is defined only in that
// build. ROOT: the repository's root either way.
// (spelled out in each test, so that esbuild drops the unbundled branches)
const BUNDLED = typeof TP_WORKER_BUNDLE !== 'undefined';
const ROOT = new URL(BUNDLED ? '../../../' : '../../', import.meta.url);
// ?threads=N: the Wasm threads core with N threads where the page is
// cross-origin isolated (SharedArrayBuffer); elsewhere the package runs on
// one thread and explain().threads says why
// (anything else than a whole number from 1 to 256 is a load error naming
// it: never a silent single thread, nor the default count for ?threads=0)
const threadsArg = params.get('threads');
const threads = threadsArg === null ? 0 : Number(threadsArg);
const threadsBad = threadsArg !== null && !(/^\d+$/.test(threadsArg) && threads >= 1 && threads <= 256)
  ? `?threads=${threadsArg} is not a thread count: give a whole number from 1 to 256` : null;
if (threads && !threadsBad) globalThis.tensorplayThreads = threads;
// Generated modules compile asynchronously (js/src/jit.js): the first call
// (capture, lowering, code generation, run) runs the plan's kernels on the
// core's executor, whose code the page's compiled core brings optimized,
// while the engine compiles the module on its own threads; compile() waits
// for it (g.ready) before explain(), so the page shows the installed plan.
// Compiling it synchronously put that compile on the first call and ran the
// kernels once on the engine's baseline code: the first call took about
// 13 ms longer (docs/benchmarks-web.md).
globalThis.tensorplayJitAsync = true;
const coreFile = threads && self.crossOriginIsolated ? 'tensorplay-mt.wasm' : 'tensorplay.wasm';
// the package's own default (undefined), or in the bundle, whose
// import.meta.url is not the package's, the core's URL
const fallback = BUNDLED ? new URL(`js/wasm/${coreFile}`, ROOT) : undefined;
globalThis.tensorplayWasm = params.get('core') === 'page'
  ? new Promise((resolve) => {
    const on = (ev) => {
      if (ev.data?.type !== 'core') return;
      self.removeEventListener('message', on);
      performance.mark('coreCompiled');
      resolve(ev.data.module instanceof WebAssembly.Module ? ev.data.module : fallback);
    };
    self.addEventListener('message', on);
  })
  : WebAssembly.compileStreaming(fetch(new URL(`js/wasm/${coreFile}`, ROOT)))
    .then((m) => {
      performance.mark('coreCompiled');
      return m;
    }).catch(() => fallback);
// Requests that arrive while the package loads wait here (a message event
// with no listener is lost) and run in order once it has loaded: the page
// may send its first request right away (app.js with ?auto=1).
const held = [];
const hold = (ev) => {
  if (ev.data?.type === 'core') return;
  if (!held.length) performance.mark('request');
  held.push(ev);
};
self.addEventListener('message', hold);

// The package: by default its one-file build (js/dist/tensorplay.mjs, made by
// `bash scripts/build.sh bundle`), one request instead of the 14 of
// js/index.js and its modules (docs/web.md, "Start-up"). With ?pkg=modules,
// or where the bundle was not built (the server answers 404), the ES
// modules; any other failure of the bundle is reported as it is.
const BUNDLE = new URL('js/dist/tensorplay.mjs', ROOT);
// (not in dist/worker.mjs, whose package is in its chunk: below)
const importPackage = typeof TP_WORKER_BUNDLE !== 'undefined' ? null : async () => {
  if (params.get('pkg') !== 'modules') {
    try {
      return [await import(BUNDLE.href), 'bundle'];
    } catch (e) {
      // a failed fetch and a failed evaluation can both be TypeErrors: ask
      const missing = e instanceof TypeError &&
        await fetch(BUNDLE, { method: 'HEAD', cache: 'no-store' }).then((r) => r.status === 404, () => false);
      if (!missing) throw e;
      console.warn(`tensorplay-wasm: ${BUNDLE.pathname} is not built (bash scripts/build.sh bundle); loading js/index.js`);
    }
  }
  return [await import('../../js/index.js'), 'modules'];
};
let tp, pkg, MODELS, summarize, measure, resolveInputs, makeInputs;
try {
  if (threadsBad) throw new RangeError(threadsBad);
  // the package (which instantiates the core), the models and the statistics, in parallel
  if (typeof TP_WORKER_BUNDLE !== 'undefined') { // one chunk beside dist/worker.mjs (worker_deps.js)
    ({ tp, MODELS, summarize, measure } = await import('./worker_deps.js'));
    pkg = 'bundle';
  } else {
    [[tp, pkg], { MODELS, summarize }, { measure }] = await Promise.all([importPackage(), import('./models.js'), import('./stats.js')]);
  }
} catch (e) {
  self.postMessage({ type: 'error', id: 0, error: { ...describe(e), fatal: true, phase: 'load' } });
  throw e;
}
performance.mark('imported');
const loadMs = performance.now() - t0;

// Wasm32 has a 4 GiB address space, so a tensor of 4 GiB or more cannot
// exist: the core refuses it with OUT_OF_MEMORY; the page checks first to
// word the message in terms of the batch size the user typed.
const WASM32_LIMIT = 2 ** 32;
const BYTES_PER_SAMPLE = { mlp: 784 * 4, cnn: 16 * 28 * 28 * 4 * 2, transformer: 4 * 128 * 128 * 4 };

let state = null; // { key, model, g, gStax, name, backend, mode }

function describe(e) {
  if (e === null || typeof e !== 'object') return { name: 'Error', message: String(e) };
  const out = {
    name: e.name || e.constructor?.name || 'Error',
    message: String(e.message ?? e),
    code: e.code,
    status: e.status,
  };
  if (e.cause) out.cause = String(e.cause.message ?? e.cause);
  return out;
}

function hashBytes(u8) {
  let h = 0x811c9dc5;
  for (let i = 0; i < u8.length; i++) h = Math.imul(h ^ u8[i], 0x01000193) >>> 0;
  return `${u8.length}:${h.toString(16)}`;
}

function isFatal(e) {
  return e instanceof WebAssembly.RuntimeError || e?.name === 'WasiExit';
}

function isOom(e) {
  return /OUT_OF_MEMORY|out of memory/i.test(`${e?.status ?? ''} ${e?.name ?? ''} ${e?.message ?? ''}`);
}

const progress = (id, phase, extra = {}) => self.postMessage({ type: 'progress', id, phase, ...extra });

// Every tensor of an output (a tensor, or arrays / objects of them), in order.
function tensorsOf(out, acc = []) {
  if (out instanceof tp.Tensor) acc.push(out);
  else if (Array.isArray(out)) out.forEach((v) => tensorsOf(v, acc));
  else if (out && typeof out === 'object') Object.values(out).forEach((v) => tensorsOf(v, acc));
  return acc;
}

/** Shape, dtype and summary of every output tensor. */
function outputInfo(out) {
  return tensorsOf(out).map((t) => {
    let values = t.toArray();
    if (t.dtype === 'float16') values = tp.float16ToFloat32(values); // toArray gives the bits
    else if (t.dtype === 'bfloat16') values = tp.bfloat16ToFloat32(values);
    else if (!(values instanceof Float32Array)) values = Float32Array.from(values, Number);
    return { shape: t.shape, dtype: t.dtype, summary: summarize(values) };
  });
}

function disposeOut(out) {
  if (out instanceof tp.Tensor) out.dispose();
  else if (Array.isArray(out)) out.forEach(disposeOut);
  else if (out && typeof out === 'object') Object.values(out).forEach(disposeOut);
}

function dropCompiled() {
  if (!state) return;
  for (const g of [state.g, state.gStax]) {
    try { g?.dispose?.(); } catch { /* already gone */ }
  }
  state.g = state.gStax = null;
}

function dropModel() {
  dropCompiled();
  try { state?.model?.dispose(); } catch { /* ignore */ }
  state = null;
}

// ---- ONNX (tp.onnx.load, when the package has it) --------------------------------
// The model is loaded eagerly once per file; its inputs come from its
// declared shapes (onnx_inputs.js: symbolic dims get an editable default,
// small integer inputs like Silero VAD's `sr` an editable value). The
// compiled variant is tp.compile over the eager model (its capture gives the
// graph, the plan and the generated module) unless capture breaks on an
// input whose value sets a shape (`sr`): then the model itself is loaded on
// the chosen backend, tp.onnx.load(bytes, { backend }), which specializes
// on that value as an application's call would.
async function loadOnnx(bytes, name) {
  if (typeof tp.onnx?.load !== 'function') {
    const e = new Error('ONNX loading is not available in this build of tensorplay-wasm (tp.onnx.load is missing). ' +
      'Pick a built-in model, or update the package to a version with ONNX import.');
    e.name = 'Unsupported';
    throw e;
  }
  const u8 = new Uint8Array(bytes);
  if (u8.length === 0) throw new Error(`${name}: the file is empty`);
  // loaded with the first ONNX model, off the start-up path
  if (!resolveInputs) ({ resolveInputs, makeInputs } = await import('./onnx_inputs.js'));
  const eager = tp.onnx.load(u8);
  const onnx = { bytes: u8, eager, declared: eager.inputs, inputs: [], inputsKey: null, resolved: null };
  return {
    fn: (...xs) => eager.run(xs),
    onnx,
    dispose() {
      onnx.inputs.forEach((t) => t.dispose());
      try { eager.dispose(); } catch { /* ignore */ }
    },
  };
}

/** The inputs for the form's edits (made again only when they change). */
function onnxInputs(onnx, edits) {
  const resolved = resolveInputs(onnx.declared, edits ?? {});
  const key = JSON.stringify(resolved.map((r) => [r.dims, r.values]));
  if (key !== onnx.inputsKey) {
    onnx.inputs.forEach((t) => t.dispose());
    onnx.inputs = [];
    onnx.inputs = makeInputs(tp, resolved);
    onnx.inputsKey = key;
  }
  onnx.resolved = resolved;
  return onnx.inputs;
}

/** A compiled variant of the loaded ONNX model on `backend`: { g, via }. */
// (On an error nothing is left behind: what it made is disposed.)
function compileOnnx(onnx, fn, opts, inputs) {
  const g = tp.compile(fn, opts);
  let y, broke;
  try {
    y = g(...inputs);
    broke = (g.explain?.().graphs ?? []).find((q) => q.graph_break);
  } catch (e) {
    g.dispose?.();
    throw e;
  }
  if (!broke) return { g, y, via: 'compile' };
  disposeOut(y);
  g.dispose?.();
  const m = tp.onnx.load(onnx.bytes, { backend: opts.backend });
  const call = (...xs) => m.run(xs);
  call.dispose = () => m.dispose();
  call.model = m;
  call.why = broke.graph_break;
  try {
    return { g: call, y: call(...inputs), via: 'model' };
  } catch (e) {
    m.dispose();
    throw e;
  }
}

// ---- compile / run ----------------------------------------------------------------------
async function compile(msg) {
  const { model, backend, mode } = msg;
  let key, name;
  if (model === 'onnx') {
    key = `onnx:${msg.onnxName}:${hashBytes(new Uint8Array(msg.onnx ?? new ArrayBuffer(0)))}`;
    name = 'onnx_model';
  } else {
    const M = MODELS[model];
    if (!M) throw new Error(`unknown model ${JSON.stringify(model)}`);
    const batch = Number(msg.batch ?? M.defaultBatch);
    if (!Number.isInteger(batch) || batch < 1) throw new RangeError(`batch must be a positive integer, got ${JSON.stringify(msg.batch)}`);
    const need = batch * BYTES_PER_SAMPLE[model];
    if (need >= WASM32_LIMIT) {
      const e = new RangeError(`model too large: batch ${batch} needs tensors of ${(need / 2 ** 30).toFixed(1)} GiB, ` +
        'more than the 4 GiB a Wasm32 memory can address');
      e.name = 'TooLarge';
      throw e;
    }
    key = `${model}:${batch}`;
    name = model;
  }

  const tBuild = performance.now();
  if (state?.key !== key) {
    progress(msg.id, model === 'onnx' ? 'loading the ONNX model' : 'building weights and inputs');
    dropModel();
    if (model === 'onnx') {
      const m = await loadOnnx(msg.onnx, msg.onnxName ?? 'model.onnx');
      state = { key, model: m, inputs: [], fn: m.fn, onnx: m.onnx };
    } else {
      const m = MODELS[model].build(tp, { batch: Number(msg.batch ?? MODELS[model].defaultBatch) });
      state = { key, model: m, inputs: [m.x], fn: m.fn };
    }
  } else {
    dropCompiled();
  }
  if (state.onnx) state.inputs = onnxInputs(state.onnx, msg.edits); // the form's edits (dims, values)
  const buildMs = performance.now() - tBuild;
  performance.mark('built');

  const opts = { backend, name };
  if (mode && mode !== 'default') opts.mode = mode;
  progress(msg.id, backend === 'stax'
    ? 'first call: capture (computes the result), lowering, code generation' + (mode === 'max-autotune' ? ', autotuning' : '')
    : `first call: capture (computes the result); ${backend} does no lowering or code generation`);
  const tc = performance.now();
  let g, y, via = 'compile';
  if (state.onnx) {
    ({ g, y, via } = compileOnnx(state.onnx, state.fn, opts, state.inputs));
  } else {
    g = tp.compile(state.fn, opts);
    y = g(...state.inputs); // capture (it computes y) + lowering + code generation
  }
  state.g = g;
  state.via = via;
  state.backend = backend;
  state.mode = mode;
  const compileMs = performance.now() - tc;
  performance.mark('firstCall');
  const out = outputInfo(y);
  disposeOut(y);
  await g.ready; // the generated module installed (above; undefined: nothing to wait for)
  const report = via === 'compile' && typeof g.explain === 'function' ? g.explain() : null;
  const graphText = via === 'model' ? g.model.graph.print() : typeof g.graph === 'function' ? g.graph() : null;
  performance.mark('posting');
  self.postMessage({
    type: 'compiled',
    id: msg.id,
    model,
    backend,
    mode,
    buildMs,
    compileMs,
    postedAt: performance.timeOrigin + performance.now(),
    graphText,
    explain: report,
    inputs: state.inputs.map((t) => ({ shape: t.shape, dtype: t.dtype })),
    // ONNX: every input with its declared and used shape and the form's fields
    onnxInputs: state.onnx?.resolved ?? null,
    // 'model': capture broke (graph_break), so the model runs on the backend itself
    via,
    viaWhy: via === 'model' ? g.why : null,
    modelExplain: via === 'model' ? g.model.explain() : null,
    outputs: out,
    memoryBytes: tp.memoryBytes(),
    liveTensors: tp.liveTensors(),
  });

  // The module stax generates for this graph (after the first result is
  // out): with stax, the one it installed (g.wasmModule()); with the other
  // backends, emitted from the captured graph with its weights.
  // eager and reference generate no code: nothing to emit or download
  if (backend !== 'stax') {
    self.postMessage({ type: 'wasm', id: msg.id, size: 0, none: `backend ${backend} generates no code (it replays the captured graph); choose stax to see the module` });
    return;
  }
  progress(msg.id, 'emitting the generated module for download');
  const tw = performance.now();
  let wasm;
  try {
    let bytes;
    if (via === 'model') {
      bytes = tp.graph.emitWasm(g.model.graph);
    } else if (typeof g.wasmModule === 'function') {
      bytes = g.wasmModule();
      if (!bytes) {
        throw new Error(g.graph() ? 'no kernel to emit: stax runs every kernel of this graph in the core'
          : 'no graph was captured (graph break?)');
      }
    } else {
      const text = g.graph({ withData: true });
      if (!text) throw new Error('no graph was captured (graph break?)');
      const parsed = tp.graph.parse(text);
      try {
        bytes = tp.graph.emitWasm(parsed);
      } finally {
        parsed.dispose();
      }
    }
    wasm = { bytes, size: bytes.length, valid: WebAssembly.validate(bytes) };
  } catch (e) {
    wasm = { size: 0, error: describe(e) };
  }
  wasm.ms = performance.now() - tw;
  self.postMessage({ type: 'wasm', id: msg.id, ...wasm }, wasm.bytes ? [wasm.bytes.buffer] : []);
}

// One variant, timed adaptively (stats.js): samples until the median's 95%
// interval is within 5%, at most maxRuns samples or budgetMs.
function timeIt(id, label, fn, { maxRuns, budgetMs }) {
  let last = performance.now();
  progress(id, `timing ${label}`, { i: 0, n: maxRuns });
  const r = measure(() => tp.scope(() => { fn(); }), {
    maxRuns,
    budgetMs,
    onSample: (i, n) => {
      const t = performance.now();
      if (t - last > 100) { last = t; progress(id, `timing ${label}`, { i, n }); }
    },
  });
  delete r.samples;
  return { label, ...r };
}

async function run(msg) {
  if (!state?.g) throw new Error('compile a model first');
  const maxRuns = Number(msg.maxRuns ?? 200);
  if (!Number.isInteger(maxRuns) || maxRuns < 1 || maxRuns > 10000) throw new RangeError(`max runs must be an integer from 1 to 10000, got ${JSON.stringify(msg.maxRuns)}`);
  const budgetMs = Math.max(100, Number(msg.budgetMs) || 3000);
  const lim = { maxRuns, budgetMs };
  const { fn, inputs, g } = state;
  const timings = [];
  const modeLabel = state.mode && state.mode !== 'default' ? `, ${state.mode}` : '';
  timings.push(timeIt(msg.id, 'eager (op by op, not compiled)', () => fn(...inputs), lim));
  timings.push(timeIt(msg.id, `compile(backend: ${state.backend}${modeLabel})`, () => g(...inputs), lim));
  if (state.backend !== 'stax') {
    if (!state.gStax) {
      progress(msg.id, 'compiling with stax for comparison');
      const opts = { backend: 'stax', name: `${g.name || 'onnx_model'}_stax` };
      if (state.mode && state.mode !== 'default') opts.mode = state.mode;
      if (state.onnx) {
        const c = compileOnnx(state.onnx, fn, opts, inputs);
        disposeOut(c.y);
        state.gStax = c.g;
      } else {
        state.gStax = tp.compile(fn, opts);
        disposeOut(state.gStax(...inputs)); // capture, lowering, code generation
      }
      await state.gStax.ready; // timed with its generated module installed
    }
    const gs = state.gStax;
    timings.push(timeIt(msg.id, `compile(backend: stax${modeLabel})`, () => gs(...inputs), lim));
  }
  const y = g(...inputs);
  const out = outputInfo(y);
  disposeOut(y);
  self.postMessage({ type: 'ran', id: msg.id, maxRuns, budgetMs, timings, outputs: out, memoryBytes: tp.memoryBytes(), liveTensors: tp.liveTensors() });
}

async function handle(ev) {
  const msg = ev.data;
  if (msg?.type === 'core') return; // the page's compiled core (above)
  try {
    if (msg.type === 'compile') await compile(msg);
    else if (msg.type === 'run') await run(msg);
    else throw new Error(`unknown message type ${msg.type}`);
  } catch (e) {
    const fatal = isFatal(e);
    if (!fatal && msg.type === 'compile') dropCompiled();
    // an allocation failure: the Wasm memory has grown as far as it could and
    // never shrinks; the page restarts this worker to give it back
    const oom = isOom(e);
    self.postMessage({ type: 'error', id: msg.id, error: { ...describe(e), fatal, oom, memoryBytes: tp.memoryBytes() } });
  }
}

self.postMessage({
  type: 'ready',
  loadMs,
  timeOrigin: performance.timeOrigin,
  version: tp.version,
  package: pkg,
  worker: BUNDLED ? 'bundle' : 'source', // dist/worker.mjs or worker.js
  isa: tp.isa,
  memoryBytes: tp.memoryBytes(),
  hasOnnx: typeof tp.onnx?.load === 'function',
  backends: ['stax', 'eager', 'reference'],
});
// the held requests, in order; requests that arrive meanwhile join the queue
while (held.length) await handle(held.shift());
self.removeEventListener('message', hold);
self.onmessage = handle;
