// ONNX export (tp.onnx.save): functions traced on example inputs, saved,
// loaded back with tp.onnx.load and (when onnxruntime-node loads) run in
// ONNX Runtime; both must match our eager results. Also the errors: opaque
// regions are UNSUPPORTED naming the node, disposed inputs DISPOSED.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as tp from '../../js/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const confRoot = process.env.TP_CONFORMANCE || join(here, '..', '..', '..', 'shared', 'conformance');

const C = tp.compiler;
const live0 = tp.liveTensors();

import { ort, ortWhy, needOrt } from './_ort.mjs';

const ORT_TYPE = { float32: 'float32', int32: 'int32', int64: 'int64', bool: 'bool' };

function close(got, want, name, rtol = 1e-4) {
  assert.deepEqual(Array.from(got.shape ?? got.dims), Array.from(want.shape), `${name}: shape`);
  const g = got.toArray ? got.toArray() : got.data;
  const w = want.toArray();
  assert.equal(g.length, w.length, `${name}: size`);
  for (let i = 0; i < w.length; i++) {
    const a = Number(g[i]), b = Number(w[i]);
    if (Number.isNaN(a) && Number.isNaN(b)) continue;
    if (want.dtype === 'float32') {
      assert.ok(Math.abs(a - b) <= 1e-6 + rtol * Math.abs(b), `${name}[${i}]: ${a} vs ${b}`);
    } else {
      assert.equal(a, b, `${name}[${i}]`);
    }
  }
}

/** eager outputs of fn on inputs, as an array of Tensors */
function eager(fn, inputs) {
  const r = fn(...inputs);
  return Array.isArray(r) ? r : [r];
}

async function checkExport(name, fn, inputs) {
  const bytes = tp.onnx.save(fn, inputs);
  assert.ok(bytes instanceof Uint8Array && bytes.length > 16, `${name}: bytes`);
  tp.scope(() => {
    const want = eager(fn, inputs);
    const model = tp.onnx.load(bytes);
    try {
      assert.equal(model.inputNames.length, inputs.length, `${name}: inputs`);
      const got = model(...inputs);
      assert.equal(got.length, want.length, `${name}: outputs`);
      got.forEach((g, i) => close(g, want[i], `${name} (tp.onnx.load) output ${i}`));
    } finally {
      model.dispose();
    }
  });
  needOrt();
  const session = await ort.InferenceSession.create(bytes);
  const feeds = {};
  session.inputNames.forEach((n, i) => {
    const t = inputs[i];
    let data = t.toArray();
    if (t.dtype === 'bool') data = Uint8Array.from(data, (v) => (v ? 1 : 0));
    feeds[n] = new ort.Tensor(ORT_TYPE[t.dtype], data, t.shape);
  });
  const res = await session.run(feeds);
  tp.scope(() => {
    const want = eager(fn, inputs);
    assert.equal(session.outputNames.length, want.length, `${name}: ORT outputs`);
    session.outputNames.forEach((n, i) => close(res[n], want[i], `${name} (onnxruntime) output ${i}`));
  });
  if (session.release) await session.release();
}

test('a small MLP: save, load back, onnxruntime', async () => {
  const w1 = tp.randn([16, 8], { seed: 1 });
  const b1 = tp.randn([16], { seed: 2 });
  const w2 = tp.randn([3, 16], { seed: 3 });
  const x = tp.randn([4, 8], { seed: 4 });
  const mlp = (x) => {
    const h = tp.linear(x, w1, b1).relu();
    const o = tp.linear(h, w2);
    return [o.softmax(-1), o];
  };
  try {
    await checkExport('mlp', mlp, [x]);
  } finally {
    for (const t of [w1, b1, w2, x]) t.dispose();
  }
});

test('a small CNN (dense, strided, depthwise, grouped convs, max and average pools): save, load back, onnxruntime', async () => {
  const w1 = tp.randn([8, 3, 3, 3], { seed: 11 }), b1 = tp.randn([8], { seed: 12 });
  const w2 = tp.randn([8, 1, 3, 3], { seed: 13 });
  const w3 = tp.randn([12, 4, 1, 1], { seed: 14 }), b3 = tp.randn([12], { seed: 15 });
  const x = tp.randn([2, 3, 12, 10], { seed: 16 });
  const cnn = (x) => {
    const h = tp.conv2d(x, w1, b1, { padding: 1 }).relu();
    const d = tp.conv2d(h, w2, null, { stride: 2, padding: [1, 1, 0, 0], groups: 8, dilation: [1, 2] }).relu();
    const g = tp.conv2d(d, w3, b3, { groups: 2 });
    const p = tp.maxPool2d(g, 2, { stride: 1, padding: [1, 0, 0, 1] }).add(tp.avgPool2d(g, [2, 3], { padding: [1, 1], countIncludePad: false }).mean({ dims: [2, 3], keepdim: true }));
    return [g.mean({ dims: [2, 3] }), tp.avgPool2d(p, 2)];
  };
  try {
    await checkExport('cnn', cnn, [x]);
  } finally {
    for (const t of [w1, b1, w2, w3, b3, x]) t.dispose();
  }
});

test('layer_norm / softmax / transpose / slice / reductions: save, load back, onnxruntime', async () => {
  const g = tp.randn([6], { seed: 5 });
  const b = tp.randn([6], { seed: 6 });
  const x = tp.randn([2, 4, 6], { seed: 7 });
  const y = tp.randn([6], { seed: 8 });
  const f = (x, y) => {
    const n = tp.layerNorm(x, [6], g, b, { eps: 1e-5 });
    const s = n.add(y).mul(1.5).softmax(1);
    const t = s.transpose(0, 2);
    const sl = t.slice(0, 1, 5, 2);
    const r = sl.reshape([-1, 4]);
    return [r, s.logSoftmax(-1), x.gelu({ approximate: 'tanh' }), x.gelu(), x.sum({ dim: [1], keepdim: true }), x.mean(), x.max({ dim: -1 }), t.permute([1, 0, 2]).exp()];
  };
  try {
    await checkExport('mix', f, [x, y]);
  } finally {
    for (const t of [g, b, x, y]) t.dispose();
  }
});

// Every exported op, including int/bool operands, weak scalars and the
// rank-3 linear (MatMul with the transposed constant), from graph text.
const MANY = `tpgraph v1
%x = placeholder : f32[2,3,4]
%y = placeholder : f32[4]
%i = placeholder : i32[2,3,4]
%w = get_attr "w" : f32[2,4]
%0 = layer_norm(%x, none, none, normalized_shape=[3,4], eps=0.001) : f32[2,3,4]
%1 = div(%i, 3) : f32[2,3,4]
%2 = linear(%x, %w, none) : f32[2,3,2]
%3 = linear(%y, %w, none) : f32[2]
%4 = slice(%x, dim=-1, start=-3, end=-1, step=1) : f32[2,3,2]
%5 = min(%i, dims=[1], keepdim=true) : i32[2,1,4]
%6 = sum(%i, dims=[2], keepdim=false) : i64[2,3]
%7 = neg(%i) : i32[2,3,4]
%8 = abs(%x) : f32[2,3,4]
%9 = add(%8, 1) : f32[2,3,4]
%10 = rsqrt(%9) : f32[2,3,4]
%11 = log(%9) : f32[2,3,4]
%12 = sqrt(%9) : f32[2,3,4]
%13 = mul(%x, 3) : f32[2,3,4]
%14 = floor(%13) : f32[2,3,4]
%15 = ceil(%13) : f32[2,3,4]
%16 = round(%13) : f32[2,3,4]
%17 = erf(%x) : f32[2,3,4]
%18 = gt(%x, 0) : b8[2,3,4]
%19 = lt(%i, %x) : b8[2,3,4]
%20 = eq(%i, 2) : b8[2,3,4]
%21 = where(%18, %x, 0.5) : f32[2,3,4]
%22 = cast(%18, dtype=f32) : f32[2,3,4]
%23 = cast(%13, dtype=i64) : i64[2,3,4]
%24 = relu(%i) : i32[2,3,4]
%25 = matmul(%x, %y) : f32[2,3]
%26 = add(%i, 1.5) : f32[2,3,4]
%27 = mul(%i, 2) : i32[2,3,4]
%28 = max(%18, dims=[1], keepdim=false) : b8[2,4]
%29 = sigmoid(%x) : f32[2,3,4]
%30 = tanh(%x) : f32[2,3,4]
%31 = concat(%4, %x, dim=2) : f32[2,3,6]
%32 = reshape(%31, shape=[-1]) : f32[36]
%33 = sub(%x, %y) : f32[2,3,4]
%34 = log_softmax(%33, dim=0) : f32[2,3,4]
output(%0, %1, %2, %3, %5, %6, %7, %10, %11, %12, %14, %15, %16, %17, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %32, %34, %y, %0)
data %w f32[2,4] AACAPwAAAMAAAEBAAACAwAAAAD8AAAA/AAAgQQAAAAA=
`;

test('every exported op from graph text: saveGraph, load back, onnxruntime', async () => {
  const graph = tp.graph.parse(MANY);
  const x = tp.randn([2, 3, 4], { seed: 11 });
  const y = tp.randn([4], { seed: 12 });
  const i = tp.scope(() => x.mul(3).cast('int32'));
  const inputs = [x, y, i];
  try {
    const bytes = tp.onnx.saveGraph(graph);
    const fn = (...ins) => graph.run(ins);
    tp.scope(() => {
      const want = fn(...inputs);
      const model = tp.onnx.load(bytes);
      try {
        const got = model(...inputs);
        got.forEach((g, k) => close(g, want[k], `many (tp.onnx.load) output ${k}`));
      } finally {
        model.dispose();
      }
    });
    needOrt();
    const session = await ort.InferenceSession.create(bytes);
    const feeds = {};
    session.inputNames.forEach((n, k) => {
      feeds[n] = new ort.Tensor(ORT_TYPE[inputs[k].dtype], inputs[k].toArray(), inputs[k].shape);
    });
    const res = await session.run(feeds);
    tp.scope(() => {
      const want = fn(...inputs);
      assert.equal(session.outputNames.length, want.length);
      session.outputNames.forEach((n, k) => {
        const r = res[n];
        const data = r.type === 'int64' ? Array.from(r.data, Number) : r.type === 'bool' ? Array.from(r.data, (v) => (v ? 1 : 0)) : r.data;
        const w = want[k].dtype === 'bool' ? { shape: want[k].shape, dtype: 'bool', toArray: () => Array.from(want[k].toArray(), (v) => (v ? 1 : 0)) } : want[k];
        close({ dims: r.dims, data }, w, `many (onnxruntime) output ${k}`);
      });
    });
    if (session.release) await session.release();
  } finally {
    graph.dispose();
    for (const t of inputs) t.dispose();
  }
});

for (const name of ['mnist-8', 'mnist-mlp-onnx-mlir', 'ultraface-rfb-320']) {
  const dir = join(confRoot, 'models', name);
  test(`${name}: import, export (saveGraph), onnxruntime matches the reference`,
    { skip: !existsSync(join(dir, 'model.onnx')) && `no ${dir}` }, async () => {
      const model = tp.onnx.load(readFileSync(join(dir, 'model.onnx')));
      const x = tp.onnx.decodeTensor(readFileSync(join(dir, 'test_data_set_0', 'input_0.pb')));
      const want = tp.onnx.decodeTensor(readFileSync(join(dir, 'test_data_set_0', 'output_0.pb')));
      try {
        const bytes = tp.onnx.saveGraph(model.graph);
        tp.scope(() => {
          const again = tp.onnx.load(bytes);
          try {
            close(again(x)[0], want, `${name} (re-imported)`, 1e-3);
          } finally {
            again.dispose();
          }
        });
        needOrt();
        const session = await ort.InferenceSession.create(bytes);
        const res = await session.run({ [session.inputNames[0]]: new ort.Tensor('float32', x.toArray(), x.shape) });
        close(res[session.outputNames[0]], want, `${name} (onnxruntime)`, 1e-3);
        if (session.release) await session.release();
      } finally {
        model.dispose();
        x.dispose();
        want.dispose();
      }
    });
}

// Recurrent layers: rnn / gru / lstm export as ONNX's RNN / GRU / LSTM (the
// op's packed result rebuilt from Y, Y_h, Y_c); every option that maps to an
// attribute or input, checked against our eager results through
// tp.onnx.load and onnxruntime-node.
test('rnn / gru / lstm: save (RNN, GRU, LSTM), load back, onnxruntime', async () => {
  const T = 5, B = 2, I = 3, H = 4;
  const r = (shape, seed) => tp.scope(() => tp.randn(shape, { seed }).mul(0.5));
  const x = r([T, B, I], 31), h0 = r([2, B, H], 32), c0 = r([2, B, H], 33);
  const seqLens = tp.tensor(Int32Array.from([5, 3]), { shape: [B] });
  const consts = [];
  const k = (shape, seed) => { const t = r(shape, seed); consts.push(t); return t; };
  const lw = k([2, 4 * H, I], 34), lr = k([2, 4 * H, H], 35), lb = k([2, 8 * H], 36), lp = k([2, 3 * H], 37);
  const gw = k([1, 3 * H, I], 38), gr = k([1, 3 * H, H], 39), gb = k([1, 6 * H], 40);
  const rw = k([1, H, I], 41), rr = k([1, H, H], 42);
  const lw1 = lw.slice(0, 0, 1), lr1 = lr.slice(0, 0, 1);
  consts.push(lw1, lr1);
  try {
    await checkExport('lstm bidirectional (bias, sequence lengths, initial h and c, peepholes)',
      (x, s, h, c) => { const o = tp.lstm(x, lw, lr, { direction: 'bidirectional', bias: lb, sequenceLens: s, initialH: h, initialC: c, peepholes: lp }); return [o.y, o.h, o.c]; },
      [x, seqLens, h0, c0]);
    await checkExport('lstm forward, clip, input_forget, activations',
      (x) => { const o = tp.lstm(x, lw1, lr1, { clip: 0.7, inputForget: true, activations: ['HardSigmoid', 'Tanh', 'Softsign'], activationParams: [0.3, 0.4, 0, 0, 0, 0] }); return [o.y, o.h, o.c]; },
      [x]);
    await checkExport('gru reverse, linear_before_reset',
      (x) => { const o = tp.gru(x, gw, gr, { direction: 'reverse', bias: gb, linearBeforeReset: true }); return [o.y, o.h]; },
      [x]);
    await checkExport('rnn, LeakyRelu (alpha 0.2)',
      (x) => { const o = tp.rnn(x, rw, rr, { activations: ['LeakyRelu'], activationParams: [0.2, 0] }); return [o.y.tanh(), o.h]; },
      [x]);
  } finally {
    for (const t of [x, h0, c0, seqLens, ...consts]) t.dispose();
  }
});

test('an lstm whose cell states before the last step are read is UNSUPPORTED naming the node', () => {
  const graph = tp.graph.parse('tpgraph v1\n%x = placeholder : f32[3,1,2]\n%w = placeholder : f32[1,16,2]\n' +
    '%r = placeholder : f32[1,16,4]\n%p = lstm(%x, %w, %r, none, none, none, none, none, hidden_size=4, direction=0, activations=[], act_params=[], clip=0.0, input_forget=false) : f32[2,4,1,1,4]\noutput(%p)\n');
  try {
    assert.throws(() => tp.onnx.saveGraph(graph), (e) => {
      assert.equal(e.status, 'UNSUPPORTED');
      assert.match(e.message, /node 'p' \(lstm\): cannot be exported: the whole packed result is read/);
      return true;
    });
  } finally {
    graph.dispose();
  }
});

test('an opaque region is TensorPlayError UNSUPPORTED naming the node', () => {
  const inner = C.allowInGraph((t) => t.exp());
  const x = tp.randn([3], { seed: 9 });
  try {
    assert.throws(() => tp.onnx.save((x) => inner(x).add(1), [x]), (e) => {
      assert.ok(e instanceof tp.TensorPlayError, String(e));
      assert.equal(e.status, 'UNSUPPORTED');
      assert.match(e.message, /node '[^']+' \(call_host\)/);
      return true;
    });
  } finally {
    x.dispose();
  }
});

test('disposed example inputs give the disposed error', () => {
  const x = tp.randn([3], { seed: 10 });
  x.dispose();
  assert.throws(() => tp.onnx.save((x) => x.relu(), [x]),
    (e) => e instanceof tp.DisposedError && e.status === 'DISPOSED');
  assert.throws(() => tp.onnx.save('nope', []), TypeError);
});

test('gridSample and roiAlign: save (GridSample, RoiAlign), load back, onnxruntime', async () => {
  const x = tp.randn([2, 3, 6, 5], { seed: 21 });
  const r = tp.rand([2, 4, 3, 2], { seed: 22 }), r2 = r.mul(2.4), g = r2.sub(1.2); // in [-1.2, 1.2)
  r.dispose();
  r2.dispose();
  const rois = tp.tensor([0, 0, 3, 4, 1.5, 0.5, 4.2, 5.1, -1, -1, 2, 2], { shape: [3, 4] });
  const bi = tp.tensor([0, 1, 1], { dtype: 'int64' });
  const f = (x, g, rois, bi) => [
    tp.gridSample(x, g, { alignCorners: true, paddingMode: 'reflection' }),
    tp.gridSample(x, g, { mode: 'nearest' }),
    tp.roiAlign(x, rois, bi, { outputHeight: 2, outputWidth: 3, samplingRatio: 2, spatialScale: 0.5, mode: 'max' }),
    tp.roiAlign(x, rois, bi, { outputHeight: 3, outputWidth: 2, halfPixel: false }),
  ];
  try {
    await checkExport('grid_sample / roi_align', f, [x, g, rois, bi]);
  } finally {
    for (const t of [x, g, rois, bi]) t.dispose();
  }
});

test('a graph break is GraphCaptureError (save captures with fullgraph)', () => {
  const x = tp.randn([3], { seed: 13 });
  try {
    assert.throws(() => tp.onnx.save((x) => (x.sum().item() > 0 ? x.relu() : x.neg()), [x]),
      (e) => e instanceof tp.GraphCaptureError);
  } finally {
    x.dispose();
  }
});

test('onnxruntime-node availability', { skip: ort ? false : ortWhy }, () => {
  assert.ok(ort.InferenceSession);
});

test('no tensors leaked by the tests above', () => {
  assert.equal(tp.liveTensors(), live0);
});
