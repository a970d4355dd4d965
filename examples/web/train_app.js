// train_app.js - the training page (train.html): options, the worker
// (train_worker.js), the live loss curve and the results. body[data-state]:
// loading -> idle -> training -> done | stopped | failed (tests wait on it);
// #curve's data-losses holds every loss received, by mode.
const $ = (id) => document.getElementById(id);
const setState = (s) => { document.body.dataset.state = s; };
const losses = { eager: [], compiled: [] };
const ms = { eager: [], compiled: [] };
let worker = null;

function fmtMs(v) {
  return v >= 10 ? v.toFixed(1) : v >= 1 ? v.toFixed(2) : v.toFixed(3);
}

function draw() {
  const all = [...losses.eager, ...losses.compiled];
  const n = Math.max(losses.eager.length, losses.compiled.length);
  const top = all.length ? Math.max(...all) : 1;
  const X0 = 50, W = 540, Y0 = 10, H = 220;
  const span = Math.max(n - 1, 1);
  const pts = (a) => a.map((v, i) => `${(X0 + (W * i) / span).toFixed(1)},${(Y0 + H - (H * v) / top).toFixed(1)}`).join(' ');
  $('line-eager').setAttribute('points', pts(losses.eager));
  $('line-compiled').setAttribute('points', pts(losses.compiled));
  const ticks = $('ticks');
  ticks.textContent = '';
  const label = (x, y, text, anchor) => {
    const t = document.createElementNS('http://www.w3.org/2000/svg', 'text');
    t.setAttribute('x', x);
    t.setAttribute('y', y);
    t.setAttribute('text-anchor', anchor);
    t.textContent = text;
    ticks.append(t);
  };
  label(45, Y0 + 4, top.toFixed(2), 'end');
  label(45, Y0 + H, '0', 'end');
  label(X0, Y0 + H + 16, '1', 'middle');
  label(X0 + W, Y0 + H + 16, String(n), 'middle');
  label(X0 + W / 2, Y0 + H + 28, 'step', 'middle');
  $('curve').dataset.losses = JSON.stringify(losses);
}

function showError(e) {
  const box = $('error');
  box.hidden = false;
  box.textContent = `${e.name}: ${e.message}`;
}

function readOptions() {
  const num = (id) => Number($(id).value);
  const o = { model: $('model').value, mode: $('mode').value, steps: num('steps'), batch: num('batch'), lr: num('lr'), seed: 1 };
  if (!Number.isInteger(o.steps) || o.steps < 1 || o.steps > 20000) throw new RangeError(`steps must be an integer in 1..20000, got ${$('steps').value}`);
  if (!Number.isInteger(o.batch) || o.batch < 1 || o.batch > 2048) throw new RangeError(`batch must be an integer in 1..2048, got ${$('batch').value}`);
  if (!(o.lr > 0 && o.lr <= 1)) throw new RangeError(`the learning rate must be in (0, 1], got ${$('lr').value}`);
  return o;
}

function start() {
  let o;
  try {
    o = readOptions();
  } catch (e) {
    showError(e);
    return;
  }
  $('error').hidden = true;
  for (const k of ['eager', 'compiled']) losses[k] = [], ms[k] = [];
  for (const id of ['f-steps', 'f-loss', 'f-ms', 'f-acc', 'f-diff', 'f-plans']) $(id).textContent = '–';
  draw();
  $('start').disabled = true;
  $('stop').disabled = false;
  $('status').textContent = `Training ${o.model} (${o.mode})…`;
  setState('training');
  worker.postMessage({ type: 'start', ...o });
}

function onMessage(ev) {
  const m = ev.data;
  if (m.type === 'ready') {
    $('status').textContent = `Ready: tensorplay-wasm ${m.version} (${m.isa}).`;
    $('start').disabled = false;
    setState('idle');
    if (new URLSearchParams(location.search).get('auto') === '1') start();
  } else if (m.type === 'steps') {
    for (const k of Object.keys(m.losses)) losses[k].push(...m.losses[k]), ms[k].push(...m.ms[k]);
    const n = Math.max(losses.eager.length, losses.compiled.length);
    $('f-steps').textContent = String(n);
    $('f-loss').textContent = Object.entries(losses).filter(([, a]) => a.length).map(([k, a]) => `${k} ${a[a.length - 1].toFixed(4)}`).join(', ');
    draw();
  } else if (m.type === 'done') {
    $('start').disabled = false;
    $('stop').disabled = true;
    const modes = Object.keys(m.medianMs);
    $('f-ms').textContent = modes.map((k) => `${k} ${fmtMs(m.medianMs[k])} ms`).join(', ') +
      (modes.length === 2 ? ` (compiled ${(m.medianMs.eager / m.medianMs.compiled).toFixed(2)}x the speed of eager)` : '');
    $('f-ms').dataset.ms = JSON.stringify(m.medianMs);
    $('f-acc').textContent = modes.map((k) => `${k} ${(100 * m.accuracy[k]).toFixed(1)}%`).join(', ');
    $('f-acc').dataset.accuracy = JSON.stringify(m.accuracy);
    $('f-diff').textContent = m.maxLossDiff === null ? 'train both to compare' : `largest loss difference ${m.maxLossDiff.toExponential(2)}`;
    if (m.maxLossDiff !== null) $('f-diff').dataset.maxLossDiff = String(m.maxLossDiff);
    $('f-plans').textContent = m.plans
      ? `forward ${m.plans.forward?.kernels ?? '?'} kernels (${m.plans.forward?.generated ?? 0} generated), backward ${m.plans.backward?.kernels ?? '?'} kernels (${m.plans.backward?.generated ?? 0} generated); ${m.plans.saved} values saved, ${m.plans.recomputed} recomputed`
      : 'eager only';
    $('status').textContent = `${m.stopped ? 'Stopped' : 'Done'} after ${m.steps} steps.`;
    setState(m.stopped ? 'stopped' : 'done');
  } else if (m.type === 'error') {
    showError(m.error);
    $('start').disabled = false;
    $('stop').disabled = true;
    $('status').textContent = 'Failed.';
    setState('failed');
  }
}

worker = new Worker('train_worker.js', { type: 'module' });
worker.onmessage = onMessage;
worker.onerror = (ev) => {
  ev.preventDefault();
  showError({ name: 'Error', message: `the worker failed to load: ${ev.message ?? 'unknown error'}` });
  setState('failed');
};
$('start').addEventListener('click', start);
$('stop').addEventListener('click', () => {
  worker.postMessage({ type: 'stop' });
  $('stop').disabled = true;
});
draw();
