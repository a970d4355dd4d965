// models.js - the built-in models of the web example. Plain ES module with no
// imports: every builder takes the `tp` namespace, so the page's worker and
// the Node tests (tests/browser/web.test.mjs, for the reference outputs)
// build exactly the same weights and inputs from the same seeds.
//
//   const m = MODELS.mlp.build(tp, { batch: 64 });
//   m.fn(m.x)            // eager (op by op); tp.compile(m.fn, ...) to compile
//   m.dispose()          // frees weights and input
//
// The core has no convolution op yet (src/ops/ops.def), so the "small CNN" of
// the issue is an MLP-Mixer block instead: its patch embedding is what a
// 7x7 / stride 7 convolution computes, written as reshape + permute + matmul.

function makeParams(tp, seed0) {
  let seed = seed0;
  const owned = [];
  const keep = (t) => {
    owned.push(t);
    return t;
  };
  return {
    owned,
    weight(shape, fanIn) {
      return keep(tp.scope(() => tp.randn(shape, { seed: seed++ }).mul(1 / Math.sqrt(fanIn))));
    },
    vec(n, scale = 0.1) {
      return keep(tp.scope(() => tp.randn([n], { seed: seed++ }).mul(scale)));
    },
    gamma(n) {
      return keep(tp.scope(() => tp.randn([n], { seed: seed++ }).mul(0.1).add(1)));
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
 * MLP-Mixer block on 28x28 images: 16 patches of 7x7 embedded to C=64
 * (patchify = reshape/permute + matmul), one token-mixing MLP (16 -> 64 -> 16,
 * GELU) and one channel-mixing MLP (64 -> 256 -> 64, GELU), both pre-LN with
 * residuals, mean over tokens, linear head to 10 classes.
 */
function buildMixer(tp, { batch = 16 } = {}) {
  const P = 7, G = 4, T = G * G, C = 64, TH = 64, CH = 256;
  const p = makeParams(tp, 200);
  const We = p.weight([P * P, C], P * P), be = p.vec(C);
  const ln1g = p.gamma(C), ln1b = p.vec(C);
  const Wt1 = p.weight([T, TH], T), bt1 = p.vec(TH);
  const Wt2 = p.weight([TH, T], TH), bt2 = p.vec(T);
  const ln2g = p.gamma(C), ln2b = p.vec(C);
  const Wc1 = p.weight([C, CH], C), bc1 = p.vec(CH);
  const Wc2 = p.weight([CH, C], CH), bc2 = p.vec(C);
  const lnfg = p.gamma(C), lnfb = p.vec(C);
  const Wh = p.weight([C, 10], C), bh = p.vec(10);
  const mixer = (img) => {
    const B = img.shape[0];
    // [B,28,28] -> [B,4,7,4,7] -> [B,4,4,7,7] -> [B,16,49]: the patches
    const patches = img.reshape(B, G, P, G, P).permute(0, 1, 3, 2, 4).reshape(B, T, P * P);
    const x = tp.matmul(patches, We).add(be); // [B,16,C]
    // token mixing: MLP over the 16 tokens, per channel
    const a = tp.layerNorm(x, [C], ln1g, ln1b).transpose(1, 2); // [B,C,16]
    const t = tp.matmul(tp.gelu(tp.matmul(a, Wt1).add(bt1), { approximate: 'tanh' }), Wt2).add(bt2);
    const h = x.add(t.transpose(1, 2));
    // channel mixing: MLP over the channels, per token
    const c = tp.layerNorm(h, [C], ln2g, ln2b);
    const u = tp.matmul(tp.gelu(tp.matmul(c, Wc1).add(bc1), { approximate: 'tanh' }), Wc2).add(bc2);
    const z = tp.layerNorm(h.add(u), [C], lnfg, lnfb).mean({ dim: 1 }); // [B,C]
    return tp.matmul(z, Wh).add(bh); // [B,10]
  };
  return finish(p, { fn: mixer, x: p.input([batch, 28, 28]), params: 49 * 64 + 16 * 64 * 2 + 64 * 256 * 2 + 64 * 10 });
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
  mixer: {
    label: 'MLP-Mixer block (28x28, 7x7 patches; stands in for a small CNN: no conv op yet)',
    batchLabel: 'batch',
    defaultBatch: 16,
    describe: (b) => `input [${b}, 28, 28]: patchify (reshape/permute + matmul), token- and channel-mixing MLPs, head to 10`,
    build: buildMixer,
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
