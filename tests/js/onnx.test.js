// ONNX import through the Wasm core: conformance models (when
// ../shared/conformance exists) and malformed bytes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tp from '../../js/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = process.env.TP_CONFORMANCE || join(here, '..', '..', '..', 'shared', 'conformance');
const nodeDir = join(root, 'onnx-node');
const haveData = existsSync(join(nodeDir, 'MANIFEST.tsv'));

function close(got, want, name) {
  assert.deepEqual(got.shape, want.shape, `${name}: shape`);
  assert.equal(got.dtype, want.dtype, `${name}: dtype`);
  const g = got.toArray(), w = want.toArray();
  for (let i = 0; i < w.length; i++) {
    const a = Number(g[i]), b = Number(w[i]);
    if (Number.isNaN(a) && Number.isNaN(b)) continue;
    if (got.dtype === 'float32') assert.ok(Math.abs(a - b) <= 1e-7 + 1e-3 * Math.abs(b), `${name}[${i}]: ${a} vs ${b}`);
    else assert.equal(a, b, `${name}[${i}]`);
  }
}

const CASES = ['test_add_bcast', 'test_gemm_all_attributes', 'test_softmax_axis_1', 'test_matmul_3d',
  'test_layer_normalization_4d_axis1', 'test_relu', 'test_transpose_all_permutations_2',
  'test_sigmoid_example', 'test_concat_3d_axis_1', 'test_clip_example', 'test_gelu_tanh_1'];

test('conformance node tests run in Wasm', { skip: !haveData && 'no ../shared/conformance' }, () => {
  for (const name of CASES) {
    const dir = join(nodeDir, name);
    if (!existsSync(dir)) continue;
    tp.scope(() => {
      const model = tp.onnx.load(readFileSync(join(dir, 'model.onnx')));
      try {
        assert.equal(typeof model, 'function');
        assert.ok(model.outputNames.length >= 1);
        const ins = model.inputNames.map((_, i) =>
          tp.onnx.decodeTensor(readFileSync(join(dir, 'test_data_set_0', `input_${i}.pb`))));
        const outs = model(...ins);
        assert.equal(outs.length, model.outputNames.length);
        outs.forEach((o, i) =>
          close(o, tp.onnx.decodeTensor(readFileSync(join(dir, 'test_data_set_0', `output_${i}.pb`))), `${name} output ${i}`));
      } finally {
        model.dispose();
      }
    });
  }
});

test('malformed bytes give TensorPlayError PARSE', () => {
  const bad = [new Uint8Array([0x3a, 0x50, 0x01]), new Uint8Array([0xff, 0xff, 0xff]), new Uint8Array([0x08])];
  for (const b of bad) {
    assert.throws(() => tp.onnx.load(b), (e) => e instanceof tp.TensorPlayError && e.status === 'PARSE');
  }
  assert.throws(() => tp.onnx.decodeTensor(new Uint8Array([0x0a, 0x05, 0x01])),
    (e) => e instanceof tp.TensorPlayError && e.status === 'PARSE');
});

test('unsupported ops give TensorPlayError UNSUPPORTED naming the node',
  { skip: !haveData && 'no ../shared/conformance' }, () => {
    // Conv is supported now: rename the node's op_type (NodeProto field 4,
    // same length, so the bytes stay valid) to an op that does not exist.
    const b = new Uint8Array(readFileSync(join(nodeDir, 'test_basic_conv_with_padding', 'model.onnx')));
    const pat = [0x22, 0x04, 0x43, 0x6f, 0x6e, 0x76]; // field 4, len 4, "Conv"
    const at = b.findIndex((_, i) => pat.every((v, k) => b[i + k] === v));
    assert.ok(at >= 0, 'op_type "Conv" not found in the model');
    b[at + 3] = 0x78; // "Cxnv"
    assert.throws(() => tp.onnx.load(b),
      (e) => e instanceof tp.TensorPlayError && e.status === 'UNSUPPORTED' && /\(Cxnv\) is not supported/.test(e.message));
  });
