// bench/workloads/threads-native.mjs - the thread pool's figure (issue 20):
// the stax plan natively with 1 vs 2 threads (tpc bench --threads), on W1
// (GEMM 1024^3, B a constant packed once, and B an input) and W2, W3, W4,
// R1 (bench/lib/models_gen.mjs's graphs, the same as models-native). The
// thread counts take turns in REPS rounds; each round is one tpc process
// per count (RUNS timed runs after 3 warm-ups; tpc prints their median).
// Reported per case and count: the median over rounds of those medians, and
// the min and max (the spread). Not pinned: the threads need both cores,
// so other load on the machine shows up as spread. Prints one JSON line per
// case (bench/run.sh's contract) and a table on stderr.
//
//   node bench/workloads/threads-native.mjs [--reps R] [--runs N] [--threads 1,2]
//   (standalone: TPC=build/native/tpc BENCH_OUT=/tmp/x node ...)
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const argv = process.argv.slice(2);
const arg = (k, d) => (argv.includes(k) ? argv[argv.indexOf(k) + 1] : d);
const REPS = Number(arg('--reps', process.env.BENCH_REPS || 7));
const RUNS = Number(arg('--runs', 20));
const COUNTS = String(arg('--threads', '1,2')).split(',').map(Number);
const root = process.env.BENCH_ROOT || join(import.meta.dirname, '..', '..');
const out = process.env.BENCH_OUT || '/tmp/tp-bench-threads';
mkdirSync(out, { recursive: true });

let tpc = process.env.TPC;
if (!tpc) { // bench/run.sh builds only the library: add tpc to its tree
  const build = process.env.BENCH_BUILD || join(root, 'build', 'bench');
  execFileSync('cmake', ['--build', build, '-j2', '--target', 'tpc'], { stdio: ['ignore', 'ignore', 'inherit'] });
  tpc = join(build, 'tpc');
}

// W1: 1024^3 with B an input (split by columns, each thread packs its own)
// and with B a constant (packed once per plan, shared: split by rows).
const N = 1024;
const g1 = join(out, 'W1-input-B.tpg'), g1c = join(out, 'W1-const-B.tpg');
writeFileSync(g1, `tpgraph v1\n%x = placeholder : f32[${N},${N}]\n%w = placeholder : f32[${N},${N}]\n` +
  `%y = matmul(%x, %w) : f32[${N},${N}]\noutput(%y)\n`);
const w = new Float32Array(N * N);
for (let i = 0; i < w.length; i++) w[i] = ((i * 2654435761) % 1000) * 1e-3 - 0.5;
writeFileSync(g1c, `tpgraph v1\n%x = placeholder : f32[${N},${N}]\n%w = get_attr "w" : f32[${N},${N}]\n` +
  `%y = matmul(%x, %w) : f32[${N},${N}]\noutput(%y)\n` +
  `data %w f32[${N},${N}] ${Buffer.from(w.buffer).toString('base64')}\n`);

const graphs = join(out, 'graphs');
if (!existsSync(join(graphs, 'W4.tpg')))
  execFileSync('node', [join(root, 'bench', 'lib', 'models_gen.mjs'), graphs], { stdio: ['ignore', 'ignore', 'inherit'] });

const cases = [
  ['W1 GEMM 1024^3, B constant (packed once)', g1c],
  ['W1 GEMM 1024^3, B an input', g1],
  ['W2 MLP 64x784-512-512-10', join(graphs, 'W2.tpg')],
  ['W3 elementwise 4M', join(graphs, 'W3.tpg')],
  ['W4 encoder block [1,128,256]', join(graphs, 'W4.tpg')],
  ['R1 ultraface-rfb-320', join(graphs, 'R1.tpg')],
];

const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[s.length >> 1]; };
function once(g, t) {
  const text = execFileSync(tpc, ['bench', g, '--backend=stax', '--runs', String(RUNS), '--threads', String(t)],
    { encoding: 'utf8' });
  const m = text.match(/stax\s+median ([0-9.]+) ms\s+min ([0-9.]+) ms/);
  if (!m || !text.includes(`, ${t} thread`)) throw new Error(`tpc bench ${g} --threads ${t}: ${text}`);
  return Number(m[1]);
}

for (const [name, g] of cases) {
  const ms = Object.fromEntries(COUNTS.map((t) => [t, []]));
  for (let r = 0; r < REPS; r++) for (const t of COUNTS) ms[t].push(once(g, t));
  const impls = COUNTS.map((t) => ({
    name: `stax ${t} thread${t === 1 ? '' : 's'}`, median_ms: median(ms[t]),
    min_ms: Math.min(...ms[t]), max_ms: Math.max(...ms[t]), samples_ms: ms[t],
  }));
  const base = impls[0];
  console.log(JSON.stringify({ case: name, impls, baseline: base.name, reps: REPS, runs_per_rep: RUNS }));
  process.stderr.write(`${name.padEnd(42)} ` + impls.map((i) =>
    `${i.name}: ${i.median_ms.toFixed(3)} ms [${i.min_ms.toFixed(3)}-${i.max_ms.toFixed(3)}]` +
    (i === base ? '' : ` = ${(base.median_ms / i.median_ms).toFixed(2)}x`)).join('  ') + '\n');
}
