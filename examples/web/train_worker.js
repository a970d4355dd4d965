// train_worker.js - the training page's module Web Worker: loads the package
// (its ES modules) and trains (train_lib.js), so the page never blocks.
//
// Messages in:  { type: 'start', model, mode: 'eager'|'compiled'|'compare', steps, batch, lr, seed }
//               { type: 'stop' }                  ends the run after the current chunk
// Messages out: { type: 'ready', version, isa }
//               { type: 'steps', from, losses: { eager?: [...], compiled?: [...] }, ms: {...} }
//               { type: 'done', stopped, steps, accuracy: {...}, medianMs: {...}, maxLossDiff, plans }
//               { type: 'error', error: { name, message, status } }
// 'compare' trains two copies of the model from the same initialization,
// eager and compiled, taking turns step by step on the same batches: their
// losses must agree (float32 rounding only) and their step times compare
// the two on the same work.

let tp, lib;
try {
  [tp, lib] = await Promise.all([import('../../js/index.js'), import('./train_lib.js')]);
} catch (e) {
  self.postMessage({ type: 'error', error: describe(e) });
  throw e;
}
self.postMessage({ type: 'ready', version: tp.version, isa: tp.isa });

function describe(e) {
  return { name: e?.name ?? 'Error', message: String(e?.message ?? e), status: e?.status };
}

let stopRequested = false;
let running = false;
const CHUNK_MS = 50; // post losses and look at messages this often

async function train(msg) {
  const { model, mode, steps, batch, lr, seed } = msg;
  const data = lib.makeDigits(2048, 7), test = lib.makeDigits(512, 99);
  const modes = mode === 'compare' ? ['eager', 'compiled'] : [mode];
  const trainers = {};
  try {
    for (const m of modes) trainers[m] = lib.createTrainer(tp, { model, mode: m, batch, lr, seed, data });
    const all = Object.fromEntries(modes.map((m) => [m, []]));
    let i = 0;
    while (i < steps && !stopRequested) {
      const from = i, losses = Object.fromEntries(modes.map((m) => [m, []])), t0 = performance.now();
      while (i < steps && performance.now() - t0 < CHUNK_MS) {
        for (const m of modes) {
          const l = trainers[m].step(i);
          if (!Number.isFinite(l)) throw new Error(`the ${m} loss is ${l} at step ${i} (lower the learning rate)`);
          losses[m].push(l);
          all[m].push(l);
        }
        i++;
      }
      const ms = Object.fromEntries(modes.map((m) => [m, trainers[m].stepMs.slice(from)]));
      self.postMessage({ type: 'steps', from, losses, ms });
      await new Promise((r) => setTimeout(r, 0)); // let 'stop' in
    }
    const accuracy = {}, medianMs = {};
    for (const m of modes) {
      accuracy[m] = trainers[m].accuracy(test);
      const warm = trainers[m].stepMs.slice(Math.min(3, trainers[m].stepMs.length - 1)); // the first steps compile
      medianMs[m] = lib.median(warm);
    }
    let maxLossDiff = null;
    if (modes.length === 2) {
      maxLossDiff = 0;
      all.eager.forEach((v, k) => { maxLossDiff = Math.max(maxLossDiff, Math.abs(v - all.compiled[k])); });
    }
    let plans = null;
    if (trainers.compiled) {
      const tr = trainers.compiled.explain().training?.[0];
      if (tr) plans = { forward: tr.forward_plan, backward: tr.backward_plan, saved: tr.saved.length, recomputed: tr.recomputed.length };
    }
    self.postMessage({ type: 'done', stopped: stopRequested, steps: i, accuracy, medianMs, maxLossDiff, plans,
      liveTensors: tp.liveTensors(), memoryBytes: tp.memoryBytes() });
  } finally {
    for (const t of Object.values(trainers)) t.dispose();
  }
}

self.onmessage = async (ev) => {
  const msg = ev.data;
  if (msg?.type === 'stop') {
    stopRequested = true;
    return;
  }
  if (msg?.type !== 'start') return;
  if (running) {
    self.postMessage({ type: 'error', error: { name: 'Error', message: 'a run is already going: stop it first' } });
    return;
  }
  running = true;
  stopRequested = false;
  try {
    await train(msg);
  } catch (e) {
    self.postMessage({ type: 'error', error: describe(e) });
  } finally {
    running = false;
  }
};
