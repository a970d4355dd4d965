// nodecode.js - the page's "Copy as Node.js code": a self-contained Node
// script that builds the same model from the same seeds (models.js's own
// source), compiles it with the same options, prints the outputs the way the
// page does (shape, first values, sums) and a median time. The browser test
// runs it with node and compares its numbers with the page's.
import { SOURCES } from './models.js';

/** settings: { model, batch, backend, mode }; for an ONNX model its file
 * name, its inputs as the page made them (onnx_inputs.js resolveInputs:
 * name, dtype, dims, values) and `via` ('model' when capture broke and the
 * model runs on the backend itself, tp.onnx.load(bytes, { backend })). */
export function nodeCode(settings, { onnxName, onnxInputs, via } = {}) {
  const { model, batch, backend, mode } = settings;
  const opts = { backend, name: model === 'onnx' ? 'onnx_model' : model };
  if (mode && mode !== 'default') opts.mode = mode;
  const lines = [
    `// Reproduces the tensorplay-wasm web example: ${model === 'onnx' ? onnxName : `${model}, batch ${batch}`}, ` +
      `backend ${backend}, mode ${mode ?? 'default'}.`,
    '// npm install tensorplay-wasm, save as repro.mjs, then: node repro.mjs' + (model === 'onnx' ? ` ${onnxName}` : ''),
    "import * as tp from 'tensorplay-wasm';",
  ];
  if (model === 'onnx') {
    lines.push(
      "import { readFileSync } from 'node:fs';",
      '',
      SOURCES.summarize.toString(),
      '',
      `const file = process.argv[2] ?? ${JSON.stringify(onnxName)};`,
      'const loaded = tp.onnx.load(readFileSync(file));',
      '// the inputs the page made from the declared shapes and its form: float inputs random',
      '// normal (seed 1, 2, ... by input), integer inputs the values shown (else zeros)',
      `const specs = ${JSON.stringify((onnxInputs ?? []).map(({ name, dtype, dims, values }) => ({ name, dtype, dims, values })))};`,
      'const inputs = specs.map((s, i) => {',
      "  if (s.dtype === 'float32') return tp.randn(s.dims, { seed: 1 + i });",
      "  if (s.dtype === 'float16' || s.dtype === 'bfloat16') return tp.randn(s.dims, { seed: 1 + i }).cast(s.dtype);",
      "  if (!s.values) return tp.zeros(s.dims, { dtype: s.dtype });",
      "  const data = s.dtype === 'int64' ? BigInt64Array.from(s.values, BigInt) : s.dtype === 'bool' ? Uint8Array.from(s.values) : Int32Array.from(s.values);",
      '  return tp.tensor(data, { shape: s.dims, dtype: s.dtype });',
      '});',
      'const fn = (...xs) => loaded(...xs);',
    );
    if (via === 'model') {
      lines.push(
        `// tp.compile cannot capture this model (an input's value sets a shape): load it on ${backend} instead`,
        `const onBackend = tp.onnx.load(readFileSync(file), { backend: '${backend}' });`,
        'const g = (...xs) => onBackend(...xs);',
      );
    }
  } else {
    const build = SOURCES.build[model];
    lines.push(
      '',
      SOURCES.makeParams.toString(),
      '',
      SOURCES.finish.toString(),
      '',
      build.toString(),
      '',
      SOURCES.summarize.toString(),
      '',
      `const m = ${build.name}(tp, { batch: ${batch} });`,
      'const fn = m.fn;',
      'const inputs = [m.x];',
    );
  }
  if (via !== 'model' || model !== 'onnx') lines.push(`const g = tp.compile(fn, ${JSON.stringify(opts).replace(/"(\w+)":/g, '$1: ').replace(/"/g, "'")});`);
  lines.push(
    'const t0 = performance.now();',
    'const outs = [g(...inputs)].flat();',
    "console.log(`compile + first call: ${(performance.now() - t0).toFixed(1)} ms`);",
    'outs.forEach((y, k) => {',
    "  const s = summarize(y.dtype === 'float16' ? tp.float16ToFloat32(y.toArray()) : Float32Array.from(y.toArray(), Number));",
    "  console.log(`output ${k}: shape [${y.shape.join(', ')}] ${y.dtype}`);",
    "  console.log(`first values: ${s.head.slice(0, 8).map((v) => v.toFixed(5)).join(', ')}`);",
    "  console.log(`sum ${s.sum.toPrecision(7)}, sum |y| ${s.absSum.toPrecision(7)}`);",
    '  y.dispose();',
    '});',
    'const ms = [];',
    'for (let i = 0; i < 20; i++) {',
    '  const t = performance.now();',
    '  tp.scope(() => { g(...inputs); });',
    '  ms.push(performance.now() - t);',
    '}',
    'ms.sort((a, b) => a - b);',
    "console.log(`median of 20 runs: ${((ms[9] + ms[10]) / 2).toFixed(3)} ms`);",
  );
  return lines.join('\n') + '\n';
}
