// train_lib.js - the training demo's data and trainer, shared by the page's
// worker (train_worker.js), the Node example (examples/node/train.mjs) and
// the tests (tests/browser/web_train.test.mjs, tests/js/train_example.test.js),
// so that all of them train exactly the same thing.
//
// Data: built-in digit-like images. Each digit 0-9 is a 5x7 bitmap glyph
// drawn into a 10x10 image at a random offset (0-5 columns, 0-3 rows) with
// random stroke intensity and pixel noise, from a seeded generator: the
// same seed gives the same images everywhere.
// Models: an MLP 100-64-10 and a small CNN (conv 3x3 8 channels, ReLU, max
// pool 2, conv 3x3 16, ReLU, global average, linear 16-10), tp.nn modules
// with seeded initialization, cross-entropy loss, Adam.
// Modes: 'eager' (autograd op by op) and 'compiled' (tp.compile of the loss
// on stax: a forward and a backward plan with generated Wasm; docs/training.md).

export const SIDE = 10;
export const CLASSES = 10;

// 5x7 glyphs, one string per row ('#': ink)
const GLYPHS = [
  [' ### ', '#   #', '#  ##', '# # #', '##  #', '#   #', ' ### '],
  ['  #  ', ' ##  ', '  #  ', '  #  ', '  #  ', '  #  ', ' ### '],
  [' ### ', '#   #', '    #', '   # ', '  #  ', ' #   ', '#####'],
  ['#####', '   # ', '  #  ', '   # ', '    #', '#   #', ' ### '],
  ['   # ', '  ## ', ' # # ', '#  # ', '#####', '   # ', '   # '],
  ['#####', '#    ', '#### ', '    #', '    #', '#   #', ' ### '],
  ['  ## ', ' #   ', '#    ', '#### ', '#   #', '#   #', ' ### '],
  ['#####', '    #', '   # ', '  #  ', ' #   ', ' #   ', ' #   '],
  [' ### ', '#   #', '#   #', ' ### ', '#   #', '#   #', ' ### '],
  [' ### ', '#   #', '#   #', ' ####', '    #', '   # ', ' ##  '],
];

/** A seeded generator of uniform numbers in [0, 1) (32-bit LCG, Numerical Recipes). */
export function rng(seed) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
}

/** n images: x Float32Array [n, SIDE*SIDE] in [0, 1], y Int32Array [n] (digits). */
export function makeDigits(n, seed) {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`makeDigits: n must be a positive integer, got ${n}`);
  const r = rng(seed);
  const x = new Float32Array(n * SIDE * SIDE), y = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    const d = Math.floor(r() * CLASSES);
    y[i] = d;
    const ox = Math.floor(r() * (SIDE - 5 + 1)), oy = Math.floor(r() * (SIDE - 7 + 1));
    const ink = 0.6 + 0.4 * r();
    const img = x.subarray(i * SIDE * SIDE, (i + 1) * SIDE * SIDE);
    for (let p = 0; p < img.length; p++) img[p] = 0.15 * r(); // background noise
    GLYPHS[d].forEach((row, gy) => {
      for (let gx = 0; gx < 5; gx++) {
        if (row[gx] === '#') img[(oy + gy) * SIDE + ox + gx] = Math.min(1, ink + 0.1 * r());
      }
    });
  }
  return { x, y, n };
}

export const MODELS = {
  mlp: {
    label: 'MLP 100-64-10',
    build(tp, seed) {
      return tp.nn.mlp([SIDE * SIDE, 64, CLASSES], { seed });
    },
    shape: (b) => [b, SIDE * SIDE],
  },
  cnn: {
    label: 'CNN (conv 3x3x8, pool, conv 3x3x16, global average, linear)',
    build(tp, seed) {
      const { nn } = tp;
      class GlobalAverage extends nn.Module {
        forward(x) {
          return tp.mean(x, { dim: [2, 3] });
        }
      }
      return new nn.Sequential(
        new nn.Conv2d(1, 8, 3, { padding: 1, seed }), new nn.ReLU(), new nn.MaxPool2d(2),
        new nn.Conv2d(8, 16, 3, { padding: 1, seed: seed + 1 }), new nn.ReLU(), new GlobalAverage(),
        new nn.Linear(16, CLASSES, { seed: seed + 2 }));
    },
    shape: (b) => [b, 1, SIDE, SIDE],
  },
};

/**
 * A trainer: { step(i) -> loss, accuracy(data) -> fraction, stepMs, dispose() }.
 * options: model ('mlp' | 'cnn'), mode ('eager' | 'compiled'), batch (32),
 * lr (0.01), seed (1; the model's initialization), data (makeDigits' result).
 * Step i trains on batch i of the data (wrapping around).
 */
export function createTrainer(tp, options) {
  const { model = 'mlp', mode = 'compiled', batch = 32, lr = 0.01, seed = 1, data } = options;
  const M = MODELS[model];
  if (!M) throw new RangeError(`unknown model '${model}' (mlp, cnn)`);
  if (mode !== 'eager' && mode !== 'compiled') throw new RangeError(`unknown mode '${mode}' (eager, compiled)`);
  if (!Number.isInteger(batch) || batch < 1 || batch > data.n) {
    throw new RangeError(`batch must be an integer in 1..${data.n}, got ${batch}`);
  }
  if (!(lr > 0 && lr < 10)) throw new RangeError(`lr must be in (0, 10), got ${lr}`);
  const net = M.build(tp, seed);
  const opt = new tp.optim.Adam(net.parameters(), { lr });
  const lossOf = (x, t) => tp.nn.crossEntropy(net.forward(x), t);
  const loss = mode === 'compiled' ? tp.compile(lossOf, { backend: 'stax', name: `train_${model}` }) : lossOf;
  const D = SIDE * SIDE;
  const nb = Math.floor(data.n / batch);
  const batchOf = (i) => {
    const k = i % nb;
    return [
      tp.tensor(data.x.subarray(k * batch * D, (k + 1) * batch * D), { shape: M.shape(batch) }),
      tp.tensor(data.y.subarray(k * batch, (k + 1) * batch), { dtype: 'int32' }),
    ];
  };
  const trainer = {
    stepMs: [],
    /** One step (forward, backward, Adam) on batch i; returns the loss. */
    step(i) {
      const t0 = performance.now();
      let v = NaN;
      tp.scope(() => {
        opt.zeroGrad();
        const [x, t] = batchOf(i);
        const l = loss(x, t);
        l.backward();
        opt.step();
        v = l.item();
      });
      trainer.stepMs.push(performance.now() - t0);
      return v;
    },
    /** The fraction of data classified right (under noGrad). */
    accuracy(test) {
      return tp.scope(() => tp.noGrad(() => {
        const x = tp.tensor(test.x, { shape: M.shape(test.n) });
        const logits = net.forward(x).toArray();
        let ok = 0;
        for (let i = 0; i < test.n; i++) {
          let best = 0;
          for (let c = 1; c < CLASSES; c++) if (logits[i * CLASSES + c] > logits[i * CLASSES + best]) best = c;
          if (best === test.y[i]) ok++;
        }
        return ok / test.n;
      }));
    },
    explain: () => (mode === 'compiled' ? loss.explain() : null),
    dispose() {
      opt.dispose();
      if (mode === 'compiled') loss.dispose();
      for (const p of net.parameters()) p.dispose();
    },
  };
  return trainer;
}

/** The median of an array of numbers. */
export function median(a) {
  const s = [...a].sort((p, q) => p - q);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}
