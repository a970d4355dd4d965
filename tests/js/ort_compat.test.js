// The onnxruntime-compatible surface (js/ort.js, tensorplay-wasm/ort): the
// same calls made on onnxruntime-node and on tensorplay give the same
// outputs by name, on the real models of ../shared/conformance (their
// test_data_set_0 inputs, fed at run time), and bad calls fail clearly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tp from '../../js/index.js';
import * as ours from '../../js/ort.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = process.env.TP_CONFORMANCE || join(here, '..', '..', '..', 'shared', 'conformance');
const requireData = !!process.env.TP_REQUIRE_DATA && process.env.TP_REQUIRE_DATA !== '0';
const ort = await import('onnxruntime-node');

for (const name of ['mnist-8', 'mnist-mlp-onnx-mlir', 'ultraface-rfb-320']) {
  const dir = join(root, 'models', name);
  const have = existsSync(join(dir, 'model.onnx'));
  test(`${name}: tensorplay-wasm/ort gives onnxruntime-node's outputs`, { skip: !have && !requireData && `no ${dir}` }, async () => {
    assert.ok(have, `${dir} is missing and TP_REQUIRE_DATA is set`);
    const bytes = readFileSync(join(dir, 'model.onnx'));
    const [a, b] = await Promise.all([ours.InferenceSession.create(bytes), ort.InferenceSession.create(bytes)]);
    try {
      assert.deepEqual([...a.inputNames], [...b.inputNames]);
      assert.deepEqual([...a.outputNames], [...b.outputNames]);
      const x = tp.scope(() => tp.onnx.decodeTensor(readFileSync(join(dir, 'test_data_set_0', 'input_0.pb'))).toArray());
      const dims = b.inputNames.length && tp.scope(() => tp.onnx.decodeTensor(readFileSync(join(dir, 'test_data_set_0', 'input_0.pb'))).shape);
      for (let call = 0; call < 2; call++) {
        const ra = await a.run({ [a.inputNames[0]]: new ours.Tensor('float32', x, dims) });
        const rb = await b.run({ [b.inputNames[0]]: new ort.Tensor('float32', x, dims) });
        for (const n of b.outputNames) {
          assert.equal(ra[n].type, rb[n].type);
          assert.deepEqual([...ra[n].dims], [...rb[n].dims]);
          assert.ok(ra[n].data instanceof Float32Array);
          let worst = 0;
          ra[n].data.forEach((v, i) => {
            const w = rb[n].data[i];
            worst = Math.max(worst, Math.abs(v - w) / (1e-4 + 1e-3 * Math.abs(w)));
          });
          assert.ok(worst <= 1, `${n}: an element is off by ${worst.toFixed(2)}x the tolerance 1e-4 + 1e-3|ref|`);
        }
      }
      // fetches select outputs
      const one = await a.run({ [a.inputNames[0]]: new ours.Tensor('float32', x, dims) }, [a.outputNames[0]]);
      assert.deepEqual(Object.keys(one), [a.outputNames[0]]);
    } finally {
      await a.release();
      await b.release();
    }
  });
}

test('ort surface: Tensor checks, unknown feeds and fetches, released sessions', async () => {
  assert.throws(() => new ours.Tensor('uint16', new Uint16Array(2), [2]), /type 'uint16' is not supported/);
  assert.throws(() => new ours.Tensor('float32', new Float32Array(3), [2, 2]), /hold 4 elements, the data has 3/);
  assert.throws(() => new ours.Tensor('int64', new Int32Array(2), [2]), /must be a BigInt64Array/);
  const t = new ours.Tensor(new Int32Array([1, 2, 3]), [3]);
  assert.equal(t.type, 'int32');
  assert.equal(t.size, 3);
  const bytes = tp.onnx.save((a, b) => [a.add(b)], [tp.tensor([1, 2]), tp.tensor([3, 4])], { inputNames: ['a', 'b'] });
  const s = await ours.InferenceSession.create(bytes, { executionProviders: ['wasm'] });
  const a = new ours.Tensor('float32', new Float32Array([1, 2]), [2]);
  await assert.rejects(s.run({ a, c: a }), /'c' is not an input of the model \(a, b\)/);
  await assert.rejects(s.run({ a }), /input 'b' is missing from the feeds/);
  await assert.rejects(s.run({ a, b: a }, ['nope']), /'nope' is not an output/);
  const r = await s.run({ a, b: new ours.Tensor('float32', new Float32Array([10, 20]), [2]) });
  assert.deepEqual([...r[s.outputNames[0]].data], [11, 22]);
  await s.release();
  await assert.rejects(s.run({ a, b: a }), /released/);
  await assert.rejects(ours.InferenceSession.create(new Uint8Array([0x0a, 0xff])), (e) => e.status === 'PARSE');
});
