// Cross-build parity on the real ONNX models (../shared/conformance/models,
// TP_CONFORMANCE overrides): for every test_data_set_*, the native build
// (`tpc run MODEL.onnx --input NAME=input_k.pb --output out_k.npy`, eager) and
// this Node process (the Wasm core: tp.onnx.load eager, and the model
// compiled with stax, whose plan computes every call, the first included; outputs
// written as .npy) compute the same outputs; the two .npy files are compared
// with ONNX's tolerance (|wasm - native| <= 1e-7 + 1e-3 |native|) and the
// max abs error is printed. Run: node --test tests/parity/ (TPC=path, TP_WASM=core).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tp from '../../js/index.js';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const tpc = process.env.TPC ?? join(root, 'build', 'native', 'tpc');
const conf = process.env.TP_CONFORMANCE || join(root, '..', 'shared', 'conformance');
const modelsDir = join(conf, 'models');
const models = existsSync(modelsDir)
  ? readdirSync(modelsDir).filter((m) => existsSync(join(modelsDir, m, 'model.onnx'))).sort() : [];

function maxErr(a, b) {
  let abs = 0, bad = 0;
  for (let j = 0; j < a.length; j++) {
    const x = Number(a[j]), y = Number(b[j]);
    if (Number.isNaN(x) && Number.isNaN(y)) continue;
    const d = Math.abs(x - y);
    if (!(d <= abs)) abs = Number.isNaN(d) ? Infinity : d;
    if (!(d <= 1e-7 + 1e-3 * Math.abs(y))) bad++;
  }
  return { abs, bad };
}

const skip = !existsSync(tpc) ? `no ${tpc}` : !models.length ? `no models in ${modelsDir}` : false;

test('real ONNX models: native tpc run and the Wasm core agree', { skip }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'tp-onnx-parity-'));
  const core = process.env.TP_WASM || 'js/wasm/tensorplay.wasm';
  try {
    for (const m of models) {
      const mdir = join(modelsDir, m), mpath = join(mdir, 'model.onnx');
      const model = tp.onnx.load(readFileSync(mpath));
      const stax = tp.compile((...xs) => model.run(xs), { backend: 'stax', name: m.replace(/\W/g, '_') });
      try {
        for (let s = 0; existsSync(join(mdir, `test_data_set_${s}`)); s++) {
          const set = join(mdir, `test_data_set_${s}`);
          const inFiles = model.inputNames.map((_, i) => join(set, `input_${i}.pb`));
          const nout = model.outputNames.length;
          const args = ['run', mpath];
          model.inputNames.forEach((n, i) => args.push('--input', `${n}=${inFiles[i]}`));
          for (let k = 0; k < nout; k++) args.push('--output', join(dir, `${m}_${s}_native_${k}.npy`));
          execFileSync(tpc, args, { stdio: ['ignore', 'ignore', 'pipe'] });
          tp.scope(() => {
            const ins = inFiles.map((f) => tp.onnx.decodeTensor(readFileSync(f)));
            for (const [backend, outs] of [['eager', model.run(ins)], ['stax', [stax(...ins)].flat()]]) {
              assert.equal(outs.length, nout, `${m}: ${backend} output count`);
              outs.forEach((o, k) => {
                const wpath = join(dir, `${m}_${s}_wasm_${backend}_${k}.npy`);
                writeFileSync(wpath, tp.npy.encode(o));
                const w = tp.npy.decode(readFileSync(wpath));
                const n = tp.npy.decode(readFileSync(join(dir, `${m}_${s}_native_${k}.npy`)));
                const what = `${m} test_data_set_${s} output ${k} (${model.outputNames[k]}), wasm ${backend} vs native eager`;
                assert.deepEqual(w.shape, n.shape, `${what}: shape`);
                assert.equal(w.dtype, n.dtype, `${what}: dtype`);
                const e = maxErr(w.toArray(), n.toArray());
                console.log(`${what}: max abs error ${e.abs.toExponential(3)} [${w.dtype}[${w.shape}], core ${core}]`);
                assert.equal(e.bad, 0, `${what}: ${e.bad} elements beyond ONNX tolerance (max abs error ${e.abs})`);
              });
            }
            // every call, the first included, is computed by the plan stax built
            const ex = stax.explain();
            assert.ok(ex.graphs.every((g) => g.graph_break === null) && ex.backend_plans.length >= 1,
              `${m}: stax compiled the model (${JSON.stringify(ex.graphs)})`);
          });
        }
      } finally {
        stax.dispose();
        model.dispose();
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
