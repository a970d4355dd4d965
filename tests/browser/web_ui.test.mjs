// The web example (examples/web) as a tool people keep open, in headless
// Chromium: the page's state machine under input changes mid-run, progress
// and Cancel, a 348-node graph within the viewport (desktop and phone),
// keyboard-only use, every output of a multi-output model, and the "Copy as
// Node.js code" button, whose code is run here with node and must print the
// page's numbers. Waits are on the page's state (body[data-state]), never
// on sleeps, so a loaded 2-core machine only makes it slower.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tp from '../../js/index.js';
import { MODELS, summarize } from '../../examples/web/models.js';
import { OnnxGraph } from '../../bench/lib/onnx_write.mjs';
import { skipReason, startServer, launch, newPage, outDir, ROOT } from './_browser.mjs';

const skip = await skipReason();
const SETTLED = ['idle', 'cancelled', 'failed'];
const ULTRAFACE = join(ROOT, '../shared/conformance/models/ultraface-rfb-320/model.onnx');

const state = (page) => page.getAttribute('body', 'data-state');
const waitState = (page, states, timeout = 60000) =>
  page.waitForFunction((s) => s.includes(document.body.dataset.state), [].concat(states), { timeout });
const waitSettled = (page, timeout) => waitState(page, SETTLED, timeout);

function reference(model, batch) {
  const M = MODELS[model];
  const m = M.build(tp, { batch: batch ?? M.defaultBatch });
  try {
    const y = tp.scope(() => m.fn(m.x));
    const out = { shape: y.shape, summary: summarize(y.toArray()) };
    y.dispose();
    return out;
  } finally {
    m.dispose();
  }
}

function assertClose(got, ref, what) {
  assert.deepEqual(got.shape, ref.shape, `${what}: shape`);
  assert.equal(got.summary.count, ref.summary.count, `${what}: count`);
  ref.summary.head.forEach((b, i) => {
    const a = got.summary.head[i];
    assert.ok(Math.abs(a - b) <= 1e-4 + 1e-3 * Math.abs(b), `${what}: y[${i}] = ${a} on the page, ${b} in Node`);
  });
  assert.ok(Math.abs(got.summary.sum - ref.summary.sum) <= 1e-4 * ref.summary.absSum + 1e-6, `${what}: sum ${got.summary.sum} vs ${ref.summary.sum}`);
}

const outputs = (page) => page.evaluate(() => JSON.parse(document.getElementById('output').dataset.outputs ?? '[]'));
const stale = (page) => page.evaluate(() => ({
  compile: document.getElementById('compile-panel').dataset.stale === 'true',
  run: document.getElementById('run-panel').dataset.stale === 'true',
}));

async function runToIdle(page, how = () => page.click('#run')) {
  const seq = await page.getAttribute('#chart', 'data-seq');
  await how();
  await page.waitForFunction((s) => document.body.dataset.state !== 'idle' || document.getElementById('chart').dataset.seq !== s, seq);
  await waitSettled(page);
  assert.equal(await state(page), 'idle', `the run ended in ${await state(page)}: ${await page.textContent('#error')}`);
}

test('examples/web as a tool: state, progress, layout, keyboard, outputs, code', { skip: skip ?? false, timeout: 240000 }, async (t) => {
  const server = await startServer();
  const browser = await launch();
  const dir = outDir();
  const url = `${server.url}examples/web/`;
  try {
    await t.test('results go stale when an input changes, even mid-run; Run recompiles', async () => {
      const page = await newPage(browser.context);
      await page.goto(`${url}?model=mlp&runs=30`);
      await waitSettled(page);
      await runToIdle(page); // Run with nothing compiled compiles first
      assertClose((await outputs(page))[0], reference('mlp', 64), 'mlp batch 64');
      assert.deepEqual(await stale(page), { compile: false, run: false });
      // the batch field edited: stale at once, and Run compiles again at batch 8
      await page.fill('#batch', '8');
      assert.deepEqual(await stale(page), { compile: true, run: true }, 'stale after editing the batch');
      assert.equal(await page.isEnabled('#run'), true);
      await runToIdle(page);
      assertClose((await outputs(page))[0], reference('mlp', 8), 'mlp batch 8 after Run');
      assert.deepEqual(await stale(page), { compile: false, run: false });
      // a run started, and in the same task the backend changes: the page stays
      // busy (no Compile, no Run), the shown results are stale
      const during = await page.evaluate(() => {
        document.getElementById('run').click();
        const s1 = document.body.dataset.state;
        const b = document.getElementById('backend');
        b.value = 'eager';
        b.dispatchEvent(new Event('change'));
        document.querySelector('input[name=model][value=cnn]').click(); // the model too
        return { s1, s2: document.body.dataset.state, compile: document.getElementById('compile').disabled,
          run: document.getElementById('run').disabled, cancel: document.getElementById('cancel').hidden,
          stale: document.getElementById('compile-panel').dataset.stale };
      });
      assert.deepEqual(during, { s1: 'running', s2: 'running', compile: true, run: true, cancel: false, stale: 'true' });
      await waitSettled(page);
      const labels = JSON.parse(await page.getAttribute('#chart', 'data-json')).map((x) => x.label);
      assert.ok(labels.some((l) => /backend: stax/.test(l)), `the finished run is the stax one: ${labels}`);
      assert.deepEqual(await stale(page), { compile: true, run: true }, 'its results are shown as stale');
      // Run now compiles the CNN with eager
      await runToIdle(page);
      assertClose((await outputs(page))[0], reference('cnn', 16), 'cnn after Run');
      assert.match(await page.textContent('#wasm-size'), /backend eager generates no code/);
      assert.deepEqual(await stale(page), { compile: false, run: false });
      const timings = JSON.parse(await page.getAttribute('#chart', 'data-json'));
      assert.equal(timings.length, 3, 'eager, compiled with eager, stax');
      for (const tm of timings) {
        assert.ok(tm.lo <= tm.median && tm.median <= tm.hi, `CI around the median: ${JSON.stringify(tm)}`);
        assert.ok(tm.n >= 1 && tm.n <= 30, `runs within the cap: ${JSON.stringify(tm)}`);
        if (tm.converged) assert.ok(tm.hi <= tm.median * 1.05 + 1e-9 && tm.lo >= tm.median * 0.95 - 1e-9, `converged within 5%: ${JSON.stringify(tm)}`);
      }
      assert.deepEqual(page.errors, [], 'console errors');
      await page.close();
    });

    await t.test('progress (phase, elapsed) streams from the worker; Cancel restarts it without reloading the core', async () => {
      const page = await newPage(browser.context);
      let coreFetches = 0;
      await page.route('**/js/wasm/tensorplay.wasm', (r) => { coreFetches++; return r.continue(); });
      await page.goto(`${url}?model=transformer&backend=reference&budget=60000&runs=10000`);
      await waitSettled(page);
      await page.click('#run');
      // timing the reference backend takes seconds: the progress line shows
      await page.waitForFunction(() => /timing/.test(document.getElementById('progress').dataset.phase ?? ''), null, { timeout: 60000 });
      const e1 = Number(await page.getAttribute('#progress', 'data-elapsed'));
      await page.waitForFunction((e) => Number(document.getElementById('progress').dataset.elapsed) > e, e1);
      assert.ok(await page.isVisible('#progress'), 'progress is visible');
      assert.match(await page.textContent('#progress'), /timing .* — \d+\.\d s/);
      assert.equal(await state(page), 'running');
      await page.click('#cancel');
      assert.equal(await state(page), 'cancelled');
      assert.ok(await page.isHidden('#progress'), 'no progress after Cancel');
      assert.ok(await page.isEnabled('#compile'), 'Compile is enabled after Cancel');
      // the new worker takes the MLP at once and gives Node's numbers
      await page.check('input[name=model][value=mlp]');
      await page.selectOption('#backend', 'stax');
      await runToIdle(page);
      assertClose((await outputs(page))[0], reference('mlp', 64), 'mlp after Cancel');
      assert.equal(coreFetches, 1, 'the restarted worker got the compiled core from the page');
      assert.equal(await page.getAttribute('#status', 'data-restarts'), '1');
      assert.deepEqual(page.errors, [], 'console errors');
      await page.close();
    });

    await t.test('after an out-of-memory compile the memory figure is a fresh worker\'s', async () => {
      const page = await newPage(browser.context);
      await page.goto(`${url}?model=mlp`);
      await waitSettled(page);
      await page.fill('#batch', '1365000');
      await page.click('#compile');
      await waitState(page, 'failed');
      const err = await page.textContent('#error');
      assert.match(err, /OUT_OF_MEMORY|out of memory/i, err);
      assert.match(err, /had grown to \d+(\.\d)? (MiB|KiB)/, `the hint says how far memory grew: ${err}`);
      await page.fill('#batch', '1');
      await runToIdle(page, () => page.click('#compile'));
      const bytes = Number(await page.getAttribute('#memory', 'data-bytes'));
      assert.ok(bytes < 256 * 2 ** 20, `memory after the OOM and a batch-1 compile: ${bytes} bytes`);
      assert.deepEqual(page.errors, [], 'console errors');
      await page.close();
    });

    // ---- a big graph: ultraface (348 nodes) when ../shared has it, else a synthetic one of that size
    let big, bigName;
    if (existsSync(ULTRAFACE)) {
      big = readFileSync(ULTRAFACE);
      bigName = 'ultraface.onnx';
    } else {
      const g = new OnnxGraph('big');
      let h = g.input('x', [4, 32]);
      for (let i = 0; i < 115; i++) {
        const w = g.init(`w${i}`, Float32Array.from({ length: 32 * 32 }, (_, k) => Math.sin(i + k) * 0.1), [32, 32]);
        h = g.op('Tanh', [g.op('Add', [g.op('MatMul', [h, w]), h])]);
      }
      g.op('Identity', [h], {}, 'y');
      g.output('y', [4, 32]);
      big = g.model({ opset: 17 });
      bigName = 'synthetic-big.onnx';
    }
    for (const [vw, vh] of [[1280, 900], [390, 844]]) {
      await t.test(`${bigName} stays within a ${vw}x${vh} viewport`, { skip: typeof tp.onnx?.load === 'function' ? false : 'no ONNX import' }, async () => {
        const page = await newPage(browser.context);
        await page.setViewportSize({ width: vw, height: vh });
        await page.goto(url);
        await waitSettled(page);
        await page.setInputFiles('#file', { name: bigName, mimeType: 'application/octet-stream', buffer: Buffer.from(big) });
        await runToIdle(page, () => page.click('#compile'));
        const m = await page.evaluate(() => {
          const svg = document.querySelector('#graph-before svg');
          const box = document.getElementById('graph-before').getBoundingClientRect();
          return { scroll: document.documentElement.scrollWidth, inner: innerWidth, nodes: Number(svg.dataset.nodes),
            boxes: Number(svg.dataset.boxes), collapsed: svg.dataset.collapsed, panelW: box.width, panelH: box.height,
            plan: document.querySelector('#graph-after svg')?.getBoundingClientRect().width ?? 0 };
        });
        assert.ok(m.nodes >= 340, `graph nodes: ${m.nodes}`);
        assert.ok(m.scroll <= m.inner, `page width ${m.scroll} px in a ${m.inner} px viewport`);
        assert.equal(m.collapsed, 'true', 'chains collapsed');
        assert.ok(m.boxes < m.nodes / 2, `${m.boxes} boxes for ${m.nodes} nodes`);
        assert.ok(m.panelH <= 470 && m.panelW <= vw, `the graph panel is ${m.panelW}x${m.panelH}`);
        assert.ok(m.plan >= Math.min(300, vw - 80), `the plan is drawn ${m.plan} px wide`);
        const plan = JSON.parse(await page.getAttribute('#kernels', 'data-json'));
        assert.equal(await page.locator('#graph-after li[data-kernel]').count(), plan.kernels, 'one list item per kernel');
        await page.screenshot({ path: join(dir, `web-big-${vw}.png`), fullPage: true });
        assert.deepEqual(page.errors, [], 'console errors');
        await page.close();
      });
    }

    await t.test('keyboard only: file chooser from the drop zone, Enter in the batch field, focus kept', async () => {
      const page = await newPage(browser.context);
      // listening before the page loads: Playwright turns on file chooser
      // interception when the first listener is added, asynchronously, and a
      // chooser opened before that is not reported
      const chosen = new Promise((resolve) => page.once('filechooser', resolve));
      await page.goto(`${url}?model=cnn&runs=20`);
      await waitSettled(page);
      assert.notEqual(await page.$eval('#file', (e) => getComputedStyle(e).display), 'none', 'the file input can take focus');
      // the drop zone opens the chooser with Enter
      const m = new OnnxGraph('kb');
      m.op('Relu', [m.input('x', [2, 3])], {}, 'y');
      m.output('y', [2, 3]);
      // Enter opens the chooser; the file chosen there is taken
      await page.focus('#drop');
      await page.keyboard.press('Enter');
      const chooser = await chosen;
      await chooser.setFiles({ name: 'kb.onnx', mimeType: 'application/octet-stream', buffer: Buffer.from(m.model({ opset: 17 })) });
      await page.waitForFunction(() => document.querySelector('input[name=model][value=onnx]').checked);
      assert.match(await page.textContent('#onnx-name'), /kb\.onnx/);
      // Space on the drop zone clicks the file input (the click is counted and
      // its dialog prevented: Chromium sometimes ignores a second chooser soon
      // after the first)
      await page.evaluate(() => {
        window.fileClicks = 0;
        window.countClick = (e) => { window.fileClicks++; e.preventDefault(); };
        document.getElementById('file').addEventListener('click', window.countClick);
      });
      await page.focus('#drop');
      await page.keyboard.press('Space');
      assert.equal(await page.evaluate(() => window.fileClicks), 1, 'Space on the drop zone opens the chooser');
      await page.evaluate(() => document.getElementById('file').removeEventListener('click', window.countClick));
      await page.check('input[name=model][value=cnn]');
      // Compile by keyboard: focus stays on the button
      await page.focus('#compile');
      await page.keyboard.press('Enter'); // the click clears #compile-time[data-ms] at once
      await page.waitForFunction(() => document.body.dataset.state === 'idle' && document.getElementById('compile-time').dataset.ms);
      assert.equal(await page.evaluate(() => document.activeElement.id), 'compile', 'focus after Compile');
      // Enter in the batch field: compiles at the new batch and runs
      await page.focus('#batch');
      await page.keyboard.press('Control+A');
      await page.keyboard.type('3');
      await runToIdle(page, () => page.keyboard.press('Enter'));
      assertClose((await outputs(page))[0], reference('cnn', 3), 'cnn batch 3 by Enter');
      assert.equal(await page.evaluate(() => document.activeElement.id), 'batch', 'focus after Enter in the batch field');
      assert.match(await page.textContent('#model-desc'), /input \[3, 1, 28, 28\]/);
      // the conv boxes show stride, groups, depthwise / pointwise
      const subs = await page.$$eval('#graph-before g.node[data-op=conv2d] text.sub', (es) => es.map((e) => e.textContent));
      assert.ok(subs.some((s) => /depthwise 3×3 g16 s2 p1/.test(s)), subs.join(' | '));
      assert.ok(subs.some((s) => /pointwise 1×1 s1/.test(s)), subs.join(' | '));
      assert.deepEqual(page.errors, [], 'console errors');
      await page.close();
    });

    await t.test('every output of a multi-output model is shown', { skip: typeof tp.onnx?.load === 'function' ? false : 'no ONNX import' }, async () => {
      const g = new OnnxGraph('two');
      const x = g.input('x', [3, 4]);
      const W = g.init('W', Float32Array.from({ length: 4 * 5 }, (_, i) => Math.cos(i) * 0.5), [4, 5]);
      g.op('MatMul', [x, W], {}, 'y1');
      g.op('Sigmoid', [x], {}, 'y2');
      g.output('y1', [3, 5]);
      g.output('y2', [3, 4]);
      const bytes = g.model({ opset: 17 });
      const m = tp.onnx.load(bytes);
      const xin = tp.randn([3, 4], { seed: 1 });
      const refs = m(xin).map((y) => { const r = { shape: y.shape, summary: summarize(y.toArray()) }; y.dispose(); return r; });
      xin.dispose();
      m.dispose?.();
      const page = await newPage(browser.context);
      await page.goto(url);
      await waitSettled(page);
      await page.setInputFiles('#file', { name: 'two.onnx', mimeType: 'application/octet-stream', buffer: Buffer.from(bytes) });
      await runToIdle(page);
      const outs = await outputs(page);
      assert.equal(outs.length, 2, 'two outputs');
      outs.forEach((o, k) => assertClose(o, refs[k], `output ${k}`));
      assert.equal(await page.locator('#output .out').count(), 2);
      assert.deepEqual(page.errors, [], 'console errors');
      await page.close();
    });

    await t.test('hovering or focusing a kernel of the plan marks its graph nodes (explain().kernel_nodes)', async () => {
      // Node's plan for the same model: ops of each kernel's nodes
      const M = MODELS.mlp;
      const m = M.build(tp, { batch: 64 });
      const g = tp.compile(m.fn, { backend: 'stax' });
      g(m.x).dispose();
      const ops = new Map([...g.graph().matchAll(/^%(\S+) = (\w+)/gm)].map((r) => [r[1], r[2]]));
      const want = g.explain().backend_plans[0].kernel_nodes.map((ks) => ks.map((n) => ops.get(n)).sort());
      g.dispose();
      m.dispose();
      assert.deepEqual(want[0], ['add', 'matmul', 'relu'], 'Node: the first GEMM takes add and relu');
      const page = await newPage(browser.context);
      await page.goto(`${url}?model=mlp`);
      await waitSettled(page);
      await runToIdle(page, () => page.click('#compile'));
      assert.equal(await page.locator('#graph-after li[data-kernel]').count(), want.length, 'one list item per kernel');
      const marked = () => page.$$eval('#graph-before g.node.hl', (gs) => gs.map((x) => x.dataset.op).sort());
      await page.hover('#graph-after li[data-kernel="0"]');
      assert.deepEqual(await marked(), want[0], 'hover kernel 0');
      await page.focus('#graph-after li[data-kernel="2"]'); // focus wins over the hover
      assert.deepEqual(await marked(), want[2], 'focus kernel 2');
      await page.mouse.move(1, 1);
      assert.deepEqual(await marked(), want[2], 'still focused after the mouse leaves');
      await page.focus('#compile');
      assert.deepEqual(await marked(), [], 'nothing marked after the kernel loses focus');
      assert.deepEqual(page.errors, [], 'console errors');
      await page.close();
    });

    await t.test('the CNN\'s 1x1 convs, rewritten as GEMMs, are marked from their kernels; each kernel says whether it is generated code', async () => {
      // Node: the GEMM kernels that compute a conv2d (the pointwise 1x1 convs; at batch 1, as
      // 2-D GEMMs: a larger batch runs them as batched matmul op kernels)
      const M = MODELS.cnn;
      const m = M.build(tp, { batch: 1 });
      const g = tp.compile(m.fn, { backend: 'stax' });
      g(m.x).dispose();
      const ops = new Map([...g.graph().matchAll(/^%(\S+) = (\w+)/gm)].map((r) => [r[1], r[2]]));
      const p = g.explain().backend_plans[0];
      g.dispose();
      m.dispose();
      const convGemms = p.kernel_nodes.map((ks, k) => [k, ks]).filter(([k, ks]) => p.kernel_kinds[k] === 'gemm' && ks.some((n) => ops.get(n) === 'conv2d'));
      assert.ok(convGemms.length >= 2, `Node: the pointwise convs run as GEMM kernels named by their conv2d nodes: ${JSON.stringify(p.kernel_nodes)}`);
      const page = await newPage(browser.context);
      await page.goto(`${url}?model=cnn&batch=1`);
      await waitSettled(page);
      await runToIdle(page, () => page.click('#compile'));
      const [k, ks] = convGemms[0];
      await page.hover(`#graph-after li[data-kernel="${k}"]`);
      const marked = await page.$$eval('#graph-before g.node.hl', (gs) => gs.map((x) => x.dataset.op));
      assert.ok(marked.includes('conv2d'), `hovering GEMM kernel ${k} (${ks.map((n) => ops.get(n))}) marks its conv2d box: ${JSON.stringify(marked)}`);
      const plan = JSON.parse(await page.getAttribute('#kernels', 'data-json'));
      const flags = await page.$$eval('#graph-after li[data-kernel]', (lis) => lis.map((li) => li.dataset.generated));
      assert.equal(flags.length, plan.kernels);
      assert.ok(flags.every((f) => f === 'true' || f === 'false'), JSON.stringify(flags));
      assert.equal(flags.filter((f) => f === 'true').length, plan.generated, 'as many generated kernels as the count says');
      assert.equal(await page.locator('#graph-after li[data-generated="true"] .tag.gen').count(), plan.generated);
      assert.deepEqual(page.errors, [], 'console errors');
      await page.close();
    });

    await t.test('"Copy as Node.js code" runs in Node and prints the page\'s numbers', async () => {
      const page = await newPage(browser.context);
      await page.goto(`${url}?model=cnn&batch=4&runs=20`);
      await waitSettled(page);
      await runToIdle(page);
      await page.click('#copy-code');
      await page.waitForFunction(() => document.getElementById('node-code').textContent.length > 0);
      const code = await page.textContent('#node-code');
      const [out] = await outputs(page);
      const work = join(dir, 'copied-code');
      rmSync(work, { recursive: true, force: true });
      mkdirSync(join(work, 'node_modules'), { recursive: true });
      symlinkSync(join(ROOT, 'js'), join(work, 'node_modules', 'tensorplay-wasm'), 'dir');
      writeFileSync(join(work, 'repro.mjs'), code);
      const printed = execFileSync(process.execPath, ['repro.mjs'], { cwd: work, encoding: 'utf8', env: { ...process.env, TP_WASM: '' } });
      assert.match(printed, /output 0: shape \[4, 10\] float32/, printed);
      const head = /first values: (.*)/.exec(printed)[1].split(', ').map(Number);
      head.forEach((v, i) => assert.ok(Math.abs(v - out.summary.head[i]) <= 1e-5 + 1e-4 * Math.abs(v), `y[${i}] ${v} in Node, ${out.summary.head[i]} on the page`));
      const sum = Number(/^sum (\S+),/m.exec(printed)[1]);
      assert.ok(Math.abs(sum - out.summary.sum) <= 1e-4 * out.summary.absSum, `sum ${sum} in Node, ${out.summary.sum} on the page`);
      assert.deepEqual(page.errors, [], 'console errors');
      await page.close();
    });
  } finally {
    await browser.close();
    await server.stop();
  }
});
