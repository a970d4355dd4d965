// The training page (examples/web/train.html) in headless Chromium: it
// trains the MLP eager and compiled side by side from the same start, the
// loss curve fills in live, both losses match the same run in Node (the same
// train_lib.js on the same Wasm core) step for step, the held-out accuracy
// is reported, Stop stops a run, and bad options give an error naming them.
// Waits are on body[data-state], never on sleeps.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as tp from '../../js/index.js';
import { makeDigits, createTrainer } from '../../examples/web/train_lib.js';
import { skipReason, startServer, launch, newPage } from './_browser.mjs';

const skip = (await skipReason()) ?? false;
const waitState = (page, states, timeout = 120000) =>
  page.waitForFunction((s) => s.includes(document.body.dataset.state), [].concat(states), { timeout });

function nodeLosses(opts, steps) {
  const data = makeDigits(2048, 7);
  const tr = createTrainer(tp, { ...opts, data });
  try {
    return Array.from({ length: steps }, (_, i) => tr.step(i));
  } finally {
    tr.dispose();
  }
}

test('training page: eager and compiled side by side, live curve, same losses as Node, accuracy, stop, errors',
  { skip, timeout: 300000 }, async () => {
    const server = await startServer();
    const browser = await launch();
    try {
      const page = await newPage(browser.context);
      await page.goto(`${server.url}examples/web/train.html`);
      await waitState(page, 'idle');
      // bad options: an error naming the field, the page stays usable
      await page.fill('#batch', '0');
      await page.click('#start');
      assert.match(await page.textContent('#error'), /batch must be an integer in 1\.\.2048, got 0/);
      assert.equal(await page.getAttribute('body', 'data-state'), 'idle');

      const STEPS = 60;
      await page.fill('#batch', '32');
      await page.fill('#steps', String(STEPS));
      await page.selectOption('#mode', 'compare');
      await page.click('#start');
      await waitState(page, 'done');
      const losses = JSON.parse(await page.getAttribute('#curve', 'data-losses'));
      assert.equal(losses.eager.length, STEPS);
      assert.equal(losses.compiled.length, STEPS);
      const points = (await page.getAttribute('#line-compiled', 'points')).trim().split(' ');
      assert.equal(points.length, STEPS, 'one point per step on the curve');
      // the same training in Node: same data, same initialization, same core
      const ref = nodeLosses({ model: 'mlp', mode: 'compiled', batch: 32, lr: 0.01, seed: 1 }, STEPS);
      for (let i = 0; i < STEPS; i++) {
        for (const k of ['eager', 'compiled']) {
          assert.ok(Math.abs(losses[k][i] - ref[i]) <= 1e-4 * (1 + Math.abs(ref[i])), `${k} loss at step ${i}: ${losses[k][i]} on the page, ${ref[i]} in Node`);
        }
      }
      assert.ok(losses.compiled[STEPS - 1] < 0.8 * losses.compiled[0], `the loss goes down: ${losses.compiled[0]} -> ${losses.compiled[STEPS - 1]}`);
      const acc = JSON.parse(await page.getAttribute('#f-acc', 'data-accuracy'));
      assert.ok(acc.compiled > 0.3 && acc.eager > 0.3, `held-out accuracy after ${STEPS} steps: ${JSON.stringify(acc)} (chance is 0.1)`);
      const ms = JSON.parse(await page.getAttribute('#f-ms', 'data-ms'));
      assert.ok(ms.eager > 0 && ms.compiled > 0, JSON.stringify(ms));
      assert.ok(Number(await page.getAttribute('#f-diff', 'data-max-loss-diff')) <= 1e-4);
      assert.match(await page.textContent('#f-plans'), /forward \d+ kernels .*backward \d+ kernels/);

      // Stop: a long CNN run ends early
      await page.selectOption('#model', 'cnn');
      await page.selectOption('#mode', 'compiled');
      await page.fill('#steps', '20000');
      await page.click('#start');
      await page.waitForFunction(() => JSON.parse(document.getElementById('curve').dataset.losses || '{}').compiled?.length >= 3, null, { timeout: 120000 });
      await page.click('#stop');
      await waitState(page, 'stopped');
      const n = JSON.parse(await page.getAttribute('#curve', 'data-losses')).compiled.length;
      assert.ok(n >= 3 && n < 20000, `stopped after ${n} steps`);
      assert.deepEqual(page.errors, []);
    } finally {
      await browser.close();
      await server.stop();
    }
  });
