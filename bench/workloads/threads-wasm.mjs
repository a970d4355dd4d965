// bench/workloads/threads-wasm.mjs - the Wasm threads core in Node (issue
// 20, item 3): W1 (GEMM 1024^3, B a constant), W2, W4 and R1
// (bench/lib/models_wasm_defs.mjs, the same models as models-wasm) with
// config.threads 1 vs 2 in one process on js/wasm/tensorplay-mt.wasm
// (`bash scripts/build.sh emscripten-mt`), started with 2 threads (one
// worker). The counts take turns in REPS rounds (the order alternating);
// each round times RUNS calls end to end (g(x), then the output disposed)
// and keeps their median. Reported per case and count: the median over
// rounds, the min and max; and the chunks the worker ran with 2 threads
// (work that reached it). Not pinned: the threads need both cores. One JSON
// line per case (bench/run.sh's contract), a table on stderr.
//
// --sizing: the work sizing of generated GEMMs (SPLIT_GEMM_FLOPS,
// src/codegen/plan_jit.c): square GEMMs with a constant B from 2 to 34
// MFLOP (those under 8 MFLOP are not split: the control), config.threads 1
// vs 2 in one process; per size the median wall time and the process's
// CPU time per call (process.cpuUsage: the caller and the worker), whose
// ratio is the split's overhead and hardly moves with other load.
//
//   node bench/workloads/threads-wasm.mjs [--reps R] [--runs N] [--cases "W1 W2 W4 R1"] [--processes] [--sizing]
//   (R1 needs ultraface-rfb-320: BENCH_R1=path/to/R1.onnx, else it is skipped)
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

const argv = process.argv.slice(2);
const arg = (k, d) => (argv.includes(k) ? argv[argv.indexOf(k) + 1] : d);
const REPS = Number(arg('--reps', process.env.BENCH_REPS || 7));
const RUNS = Number(arg('--runs', 10));
const CASES = String(arg('--cases', 'W1 W2 W4 R1')).split(/\s+/).filter(Boolean);
const root = process.env.BENCH_ROOT || join(import.meta.dirname, '..', '..');
const median = (v) => { const s = [...v].sort((p, q) => p - q); return s[s.length >> 1]; };
const mt = join(root, 'js', 'wasm', 'tensorplay-mt.wasm');
if (!existsSync(mt)) { // bench/run.sh builds only the native library: build the threads core
  execFileSync('bash', [join(root, 'scripts', 'build.sh'), 'emscripten-mt'], { cwd: root, stdio: ['ignore', 'ignore', 'inherit'] });
}
// --processes: per round three Node processes per case (the one-thread
// wasi core; the threads core with config.threads 1; with 2), each timing
// RUNS calls after 3 warm-ups and printing the median: the comparison with
// the package's default core, which cannot share a process with the
// threads core. (--child CONFIG CASE is one such process.)
const childIdx = argv.indexOf('--child');
if (argv.includes('--processes') && childIdx < 0) {
  const { execFileSync: run } = await import('node:child_process');
  const configs = ['wasi 1 thread', 'threads core, 1 thread', 'threads core, 2 threads'];
  for (const id of CASES) {
    if (id === 'R1' && !(process.env.BENCH_R1 && existsSync(process.env.BENCH_R1))) continue;
    const ms = configs.map(() => []);
    for (let r = 0; r < REPS; r++) {
      for (let c = 0; c < 3; c++) {
        const out = run(process.execPath, [import.meta.filename, '--child', String(c), id, '--runs', String(RUNS)],
          { encoding: 'utf8', env: { ...process.env, TP_WASM: '', TP_WASM_THREADS: '' } });
        ms[c].push(Number(out.trim().split('\n').pop()));
      }
    }
    const impls = configs.map((name, c) => ({ name, median_ms: median(ms[c]), min_ms: Math.min(...ms[c]), max_ms: Math.max(...ms[c]), samples_ms: ms[c] }));
    console.log(JSON.stringify({ case: `${id} (processes)`, impls, baseline: impls[0].name, reps: REPS, runs_per_rep: RUNS }));
    process.stderr.write(`${id.padEnd(4)} ` + impls.map((i, c) => `${i.name}: ${i.median_ms.toFixed(3)} ms [${i.min_ms.toFixed(3)}-${i.max_ms.toFixed(3)}]` +
      (c ? ` = ${(impls[0].median_ms / i.median_ms).toFixed(2)}x` : '')).join('  ') + '\n');
  }
  process.exit(0);
}
const childConfig = childIdx >= 0 ? Number(argv[childIdx + 1]) : -1;
if (childConfig !== 0) {
  globalThis.tensorplayWasm = mt;
  globalThis.tensorplayThreads = 2;
}
const tp = await import(join(root, 'js', 'index.js'));
const { getCore } = await import(join(root, 'js', 'src', 'tensor.js'));
const { workerChunks } = await import(join(root, 'js', 'src', 'threads.js'));
const D = await import(join(root, 'bench', 'lib', 'models_wasm_defs.mjs'));

const r1 = process.env.BENCH_R1;
const models = [];
for (const id of childIdx >= 0 ? [argv[childIdx + 2]] : CASES) {
  if (id === 'W1') models.push(['W1 GEMM 1024^3, B constant', D.makeW1(tp, 1024, 1024, 1024)]);
  else if (id === 'W2') models.push(['W2 MLP 64x784-512-512-10', D.makeW2(tp)]);
  else if (id === 'W3') models.push(['W3 elementwise 4M', D.makeW3(tp)]);
  else if (id === 'W4') models.push(['W4 encoder block [1,128,256]', D.makeW4(tp)]);
  else if (id === 'R1' && r1 && existsSync(r1)) models.push(['R1 ultraface-rfb-320', D.makeR1(tp, readFileSync(r1))]);
  else if (id === 'R1') process.stderr.write('threads-wasm: R1 skipped (set BENCH_R1 to ultraface-rfb-320.onnx)\n');
}
if (childConfig >= 0) { // one process of --processes
  const m = models.find(([, mm]) => mm.id === argv[childIdx + 2])[1];
  if (childConfig === 1) tp.config.threads = 1;
  const g = tp.compiler.compile((x) => m.f(x), { name: m.id });
  for (let i = 0; i < 3; i++) g(m.x).dispose();
  const s = [];
  for (let i = 0; i < RUNS; i++) { const t0 = performance.now(); g(m.x).dispose(); s.push(performance.now() - t0); }
  console.log(median(s).toFixed(4));
  process.exit(0);
}
process.stderr.write(`threads-wasm: ${tp.explain((x) => x.add(1), tp.zeros([2])).threads}\n`);
if (argv.includes('--sizing')) {
  for (const n of [96, 128, 160, 192, 224, 256]) {
    const m = D.makeW1(tp, n, n, n);
    const g = tp.compiler.compile((x) => m.f(x), { name: `gemm${n}` });
    const runs = Math.max(RUNS, Math.round(4e8 / (2 * n * n * n)));
    const wall = { 1: [], 2: [] }, cpu = { 1: [], 2: [] };
    for (const t of [1, 2]) { tp.config.threads = t; for (let i = 0; i < 5; i++) g(m.x).dispose(); }
    for (let r = 0; r < REPS; r++) for (const t of (r % 2 ? [2, 1] : [1, 2])) {
      tp.config.threads = t;
      const s = [], c0 = process.cpuUsage();
      for (let i = 0; i < runs; i++) { const t0 = performance.now(); g(m.x).dispose(); s.push(performance.now() - t0); }
      const c = process.cpuUsage(c0);
      wall[t].push(median(s));
      cpu[t].push((c.user + c.system) / 1000 / runs);
    }
    const mf = (2 * n * n * n) / 1e6;
    const impls = [1, 2].map((t) => ({ name: `stax wasm ${t} thread${t === 1 ? '' : 's'}`, median_ms: median(wall[t]),
      min_ms: Math.min(...wall[t]), max_ms: Math.max(...wall[t]), cpu_ms: median(cpu[t]) }));
    console.log(JSON.stringify({ case: `sizing GEMM ${n}^3 (${mf.toFixed(1)} MFLOP)`, impls, baseline: impls[0].name, reps: REPS, runs_per_rep: runs }));
    process.stderr.write(`GEMM ${n}^3 ${mf.toFixed(1).padStart(5)} MFLOP: 1 thread ${impls[0].median_ms.toFixed(3)} ms (cpu ${impls[0].cpu_ms.toFixed(3)}), ` +
      `2 threads ${impls[1].median_ms.toFixed(3)} ms (cpu ${impls[1].cpu_ms.toFixed(3)}) = ${(impls[0].median_ms / impls[1].median_ms).toFixed(2)}x wall, ` +
      `${(impls[1].cpu_ms / impls[0].cpu_ms).toFixed(2)}x cpu\n`);
    g.dispose?.();
  }
  tp.config.threads = null;
  process.exit(0);
}
for (const [name, m] of models) {
  const g = tp.compiler.compile((x) => m.f(x), { name: m.id });
  const once = () => { const y = g(m.x); y.dispose(); };
  for (const t of [1, 2]) { tp.config.threads = t; for (let i = 0; i < 3; i++) once(); }
  const ms = { 1: [], 2: [] };
  let chunks = 0;
  for (let r = 0; r < REPS; r++) for (const t of (r % 2 ? [2, 1] : [1, 2])) {
    tp.config.threads = t;
    const c0 = workerChunks(getCore()), s = [];
    for (let i = 0; i < RUNS; i++) { const t0 = performance.now(); once(); s.push(performance.now() - t0); }
    if (t === 2) chunks += workerChunks(getCore()) - c0;
    ms[t].push(median(s));
  }
  const impls = [1, 2].map((t) => ({
    name: `stax wasm ${t} thread${t === 1 ? '' : 's'}`, median_ms: median(ms[t]),
    min_ms: Math.min(...ms[t]), max_ms: Math.max(...ms[t]), samples_ms: ms[t],
  }));
  console.log(JSON.stringify({ case: name, impls, baseline: impls[0].name, reps: REPS, runs_per_rep: RUNS,
    worker_chunks_per_call: chunks / (REPS * RUNS) }));
  process.stderr.write(`${name.padEnd(30)} ` + impls.map((i, k) =>
    `${i.name}: ${i.median_ms.toFixed(3)} ms [${i.min_ms.toFixed(3)}-${i.max_ms.toFixed(3)}]` +
    (k ? ` = ${(impls[0].median_ms / i.median_ms).toFixed(2)}x` : '')).join('  ') +
    `  (worker chunks per call ${(chunks / (REPS * RUNS)).toFixed(1)})\n`);
  tp.config.threads = null;
}
process.exit(0);
