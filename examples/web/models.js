// models.js - the built-in models of the web example. Plain ES module with no
// imports: every builder takes the `tp` namespace, so the page's worker and
// the Node tests (tests/browser/web.test.mjs, for the reference outputs)
// build exactly the same weights and inputs from the same seeds.
//
//   const m = MODELS.mlp.build(tp, { batch: 64 });
//   m.fn(m.x)            // eager (op by op); tp.compile(m.fn, ...) to compile
//   m.dispose()          // frees weights and input
//

function makeParams(tp, seed0) {
  let seed = seed0;
  const owned = [];
  const keep = (t) => {
    owned.push(t);
    return t;
  };
  // Uniform initialization as PyTorch's nn.Linear / nn.Conv2d do by default
  // (bound 1/sqrt(fan_in)): the core's tp.rand, scaled. On a fresh page the
  // core's code is compiled already (the page hands the worker a compiled
  // core, docs/web.md), while a JS loop over the 670,000 weights of the MLP
  // starts in V8's interpreter: building the MLP took 1.6 and 4.4 ms less
  // (medians of two A/B runs in Chromium).
  // Each temporary is freed as soon as the next tensor exists, so the next
  // allocation of its size reuses its memory: a fresh page of Wasm memory
  // costs a page fault on first touch (about 0.5-3 ms per MB on this host),
  // and a scope would free them only at its end (three fresh buffers for
  // the MLP's 784x512 weight instead of two).
  const uniform = (shape, lo, hi) => {
    const r = tp.rand(shape, { seed: seed++ });
    const s = r.mul(hi - lo);
    r.dispose();
    const u = s.add(lo);
    s.dispose();
    return keep(u);
  };
  return {
    owned,
    weight(shape, fanIn) {
      const b = 1 / Math.sqrt(fanIn);
      return uniform(shape, -b, b);
    },
    vec(n, scale = 0.1) {
      return uniform([n], -scale, scale);
    },
    gamma(n) {
      return uniform([n], 0.9, 1.1);
    },
    input(shape) {
      return keep(tp.randn(shape, { seed: 1 }));
    },
  };
}

function finish(p, fields) {
  return {
    ...fields,
    dispose() {
      for (const t of p.owned) t.dispose();
      p.owned.length = 0;
    },
  };
}

/** MLP 784 -> 512 -> 512 -> 10 (as bench W2): y = relu(x W1 + b1) ... */
function buildMlp(tp, { batch = 64 } = {}) {
  const p = makeParams(tp, 100);
  const W1 = p.weight([784, 512], 784), b1 = p.vec(512);
  const W2 = p.weight([512, 512], 512), b2 = p.vec(512);
  const W3 = p.weight([512, 10], 512), b3 = p.vec(10);
  const mlp = (x) => {
    const h1 = tp.relu(tp.matmul(x, W1).add(b1));
    const h2 = tp.relu(tp.matmul(h1, W2).add(b2));
    return tp.matmul(h2, W3).add(b3);
  };
  return finish(p, { fn: mlp, x: p.input([batch, 784]), params: 784 * 512 + 512 * 512 + 512 * 10 + 1034 });
}

/**
 * A small MobileNet-style CNN on 28x28 grey images: a dense 3x3 conv
 * (1 -> 16), then two depthwise-separable blocks (3x3 depthwise with
 * stride 2, then a 1x1 pointwise conv: 16 -> 32 at 14x14, 32 -> 64 at
 * 7x7), ReLU after each, global average pool and a linear head to 10.
 */
function buildCnn(tp, { batch = 16 } = {}) {
  const p = makeParams(tp, 200);
  const W0 = p.weight([16, 1, 3, 3], 9), b0 = p.vec(16);
  const D1 = p.weight([16, 1, 3, 3], 9), P1 = p.weight([32, 16, 1, 1], 16), b1 = p.vec(32);
  const D2 = p.weight([32, 1, 3, 3], 9), P2 = p.weight([64, 32, 1, 1], 32), b2 = p.vec(64);
  const Wh = p.weight([10, 64], 64), bh = p.vec(10);
  const cnn = (img) => {
    const h0 = tp.conv2d(img, W0, b0, { padding: 1 }).relu(); // [B,16,28,28]
    const d1 = tp.conv2d(h0, D1, null, { stride: 2, padding: 1, groups: 16 }); // [B,16,14,14]
    const h1 = tp.conv2d(d1, P1, b1).relu(); // [B,32,14,14]
    const d2 = tp.conv2d(h1, D2, null, { stride: 2, padding: 1, groups: 32 }); // [B,32,7,7]
    const h2 = tp.conv2d(d2, P2, b2).relu(); // [B,64,7,7]
    return tp.linear(h2.mean({ dims: [2, 3] }), Wh, bh); // [B,10]
  };
  return finish(p, {
    fn: cnn,
    x: p.input([batch, 1, 28, 28]),
    params: 16 * 9 + 16 + 16 * 9 + 32 * 16 + 32 + 32 * 9 + 64 * 32 + 64 + 640 + 10,
  });
}

/** Pre-LN transformer encoder block (bench W4): seq 128, d 256, 4 heads, FFN 1024. */
function buildTransformer(tp, { batch = 1 } = {}) {
  const S = 128, D = 256, H = 4, Dh = D / H, F = 1024;
  const p = makeParams(tp, 300);
  const ln1g = p.gamma(D), ln1b = p.vec(D);
  const ln2g = p.gamma(D), ln2b = p.vec(D);
  const Wq = p.weight([D, D], D), bq = p.vec(D);
  const Wk = p.weight([D, D], D), bk = p.vec(D);
  const Wv = p.weight([D, D], D), bv = p.vec(D);
  const Wo = p.weight([D, D], D), bo = p.vec(D);
  const W1 = p.weight([D, F], D), b1 = p.vec(F);
  const W2 = p.weight([F, D], F), b2 = p.vec(D);
  const scale = 1 / Math.sqrt(Dh);
  const encoder = (x) => {
    const B = x.shape[0];
    const a = tp.layerNorm(x, [D], ln1g, ln1b, { eps: 1e-5 });
    const heads = (t) => t.reshape(B, S, H, Dh).permute(0, 2, 1, 3); // [B,H,S,Dh]
    const q = heads(tp.matmul(a, Wq).add(bq));
    const kT = tp.matmul(a, Wk).add(bk).reshape(B, S, H, Dh).permute(0, 2, 3, 1); // [B,H,Dh,S]
    const v = heads(tp.matmul(a, Wv).add(bv));
    const pr = tp.softmax(tp.matmul(q, kT).mul(scale), -1);
    const o = tp.matmul(pr, v).permute(0, 2, 1, 3).reshape(B, S, D);
    const h = x.add(tp.matmul(o, Wo).add(bo));
    const c = tp.layerNorm(h, [D], ln2g, ln2b, { eps: 1e-5 });
    const u = tp.gelu(tp.matmul(c, W1).add(b1), { approximate: 'tanh' });
    return h.add(tp.matmul(u, W2).add(b2));
  };
  return finish(p, { fn: encoder, x: p.input([batch, S, D]), params: 4 * D * D + 2 * D * F + 9 * D + F });
}

export const MODELS = Object.freeze({
  mlp: {
    label: 'MLP 784-512-512-10',
    batchLabel: 'batch',
    defaultBatch: 64,
    describe: (b) => `input [${b}, 784], 3 matmul+add layers with ReLU`,
    build: buildMlp,
  },
  cnn: {
    label: 'Small CNN (28x28, conv 3x3 + 2 depthwise-separable blocks)',
    batchLabel: 'batch',
    defaultBatch: 16,
    describe: (b) => `input [${b}, 1, 28, 28]: conv 3x3 (16), depthwise 3x3 s2 + 1x1 (32), depthwise 3x3 s2 + 1x1 (64), global mean, linear to 10`,
    build: buildCnn,
  },
  transformer: {
    label: 'Transformer encoder block (seq 128, d 256, 4 heads, FFN 1024)',
    batchLabel: 'batch',
    defaultBatch: 1,
    describe: (b) => `input [${b}, 128, 256], pre-LN attention + GELU FFN (bench W4)`,
    build: buildTransformer,
  },
});

/** Summary numbers of a Float32Array output, the same on page and in Node. */
export function summarize(values, head = 16) {
  let sum = 0, abs = 0, finite = true;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (!Number.isFinite(v)) finite = false;
    sum += v;
    abs += Math.abs(v);
  }
  return { head: Array.from(values.subarray(0, head)), sum, absSum: abs, count: values.length, finite };
}

/** The builders' source, for the page's "copy as Node.js code" (nodecode.js). */
export const SOURCES = Object.freeze({ makeParams, finish, summarize, build: { mlp: buildMlp, cnn: buildCnn, transformer: buildTransformer } });
