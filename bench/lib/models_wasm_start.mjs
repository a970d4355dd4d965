// bench/lib/models_wasm_start.mjs - time from process start to the first W2
// result, for one runtime, in a fresh `node` process (bench/lib/models_wasm.mjs
// spawns it). performance.now() counts from the process's time origin.
//
//   node models_wasm_start.mjs ours|ours-executor|onnxruntime-web|tfjs-wasm
//
// Each runtime: import the library (dynamic import, after this line), build
// W2 (x[64,784] -> 512 ReLU -> 512 ReLU -> 10) from the same JS Float32Array
// weights, compute once, read the output into JS. Prints one JSON line:
// t_script (this module starts), t_imported, t_result (ms since process
// start) and the output (for a cross-check).
const t_script = performance.now();
const rt = process.argv[2];

// deterministic weights, identical for every runtime
let s = 12345 >>> 0;
const rnd = () => { s = (Math.imul(s, 1664525) + 1013904223) >>> 0; return s / 4294967296 - 0.5; };
const arr = (n, scale) => { const a = new Float32Array(n); for (let i = 0; i < n; i++) a[i] = rnd() * scale; return a; };
const dims = [[784, 512], [512, 512], [512, 10]];
const W = dims.map(([i, o]) => arr(i * o, 2 * Math.sqrt(3 / i)));
const b = dims.map(([, o]) => arr(o, 0.2));
const x = arr(64 * 784, 2);

let t_imported, y;
if (rt === 'ours' || rt === 'ours-executor') {
  const tp = await import('../../js/index.js');
  t_imported = performance.now();
  const Wt = W.map((w, k) => tp.tensor(w).reshape(...dims[k]));
  const bt = b.map((v) => tp.tensor(v));
  const f = (xx) => {
    const h1 = tp.relu(tp.matmul(xx, Wt[0]).add(bt[0]));
    const h2 = tp.relu(tp.matmul(h1, Wt[1]).add(bt[1]));
    return tp.matmul(h2, Wt[2]).add(bt[2]);
  };
  const g = tp.compiler.compile(f, rt === 'ours' ? {} : { options: { 'stax.codegen': false } });
  y = g(tp.tensor(x).reshape(64, 784)).toArray();
} else if (rt === 'onnxruntime-web') {
  const ort = await import('onnxruntime-web');
  const { OnnxGraph } = await import('./onnx_write.mjs');
  t_imported = performance.now();
  ort.env.wasm.numThreads = 1; ort.env.wasm.simd = true; ort.env.wasm.proxy = false;
  const g = new OnnxGraph('w2');
  let h = g.input('x', [64, 784]);
  for (let k = 0; k < 3; k++) {
    h = g.op('Add', [g.op('MatMul', [h, g.init(`W${k}`, W[k], dims[k])]), g.init(`b${k}`, b[k], [dims[k][1]])], {}, k === 2 ? 'y' : null);
    if (k < 2) h = g.op('Relu', [h]);
  }
  g.output('y', [64, 10]);
  const sess = await ort.InferenceSession.create(g.model({ opset: 17 }), { executionProviders: ['wasm'], graphOptimizationLevel: 'all', intraOpNumThreads: 1 });
  y = (await sess.run({ x: new ort.Tensor('float32', x, [64, 784]) })).y.data;
} else if (rt === 'tfjs-wasm') {
  const tf = await import('@tensorflow/tfjs-core');
  const { setWasmPaths } = await import('@tensorflow/tfjs-backend-wasm');
  t_imported = performance.now();
  setWasmPaths(new URL('../../node_modules/@tensorflow/tfjs-backend-wasm/dist/', import.meta.url).pathname);
  tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', false);
  await tf.setBackend('wasm');
  const Wt = W.map((w, k) => tf.tensor(w, dims[k]));
  const bt = b.map((v) => tf.tensor(v));
  const yt = tf.tidy(() => {
    const h1 = tf.relu(tf.add(tf.matMul(tf.tensor(x, [64, 784]), Wt[0]), bt[0]));
    const h2 = tf.relu(tf.add(tf.matMul(h1, Wt[1]), bt[1]));
    return tf.add(tf.matMul(h2, Wt[2]), bt[2]);
  });
  y = yt.dataSync();
  if (!tf.env().getBool('WASM_HAS_SIMD_SUPPORT') || tf.env().getBool('WASM_HAS_MULTITHREAD_SUPPORT')) throw new Error('tfjs: not SIMD without threads');
} else {
  throw new Error(`unknown runtime ${rt}`);
}
const t_result = performance.now();
process.stdout.write(JSON.stringify({ runtime: rt, t_script, t_imported, t_result, y: Array.from(y) }) + '\n');
