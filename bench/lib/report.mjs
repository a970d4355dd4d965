// bench/lib/report.mjs - collect a workload's JSON lines into one result file
// and a markdown table (shared by every workload; see bench/run.sh).
//
//   node report.mjs --workload W --date D --machine JSON --command C
//                   --seconds S cases.jsonl out.json out.md
//
// Ratios are taken against the case's "baseline" impl, from medians:
//   time ratio  = median(impl) / median(baseline)   (< 1: impl is faster)
//   throughput  = median(baseline) / median(impl)   (> 1: impl is faster)
import { readFileSync, writeFileSync } from "node:fs";

const args = process.argv.slice(2);
const opt = {};
const pos = [];
for (let i = 0; i < args.length; i++) {
  if (args[i].startsWith("--")) opt[args[i].slice(2)] = args[++i];
  else pos.push(args[i]);
}
const [jsonl, outJson, outMd] = pos;
const cases = readFileSync(jsonl, "utf8").split("\n").filter((l) => l.trim().startsWith("{"))
  .map((l) => JSON.parse(l));
const machine = opt.machine ? JSON.parse(opt.machine) : {};

// A case without "impls" (e.g. {"case": "summary", "md": "..."}) is kept in
// the JSON and only contributes its "md" text (appended) to the markdown.
const timed = cases.filter((c) => Array.isArray(c.impls));
for (const c of timed) {
  const base = c.impls.find((i) => i.name === c.baseline);
  for (const i of c.impls) {
    if (!base) continue;
    i.time_ratio_vs_baseline = +(i.median_ms / base.median_ms).toFixed(4);
    i.throughput_vs_baseline = +(base.median_ms / i.median_ms).toFixed(4);
  }
}

const result = {
  workload: opt.workload, date: opt.date, machine, command: opt.command,
  wall_seconds: +opt.seconds, cases,
};
writeFileSync(outJson, JSON.stringify(result, null, 2) + "\n");

const f = (x, d) => (x === undefined || x === null ? "" : Number(x).toFixed(d));
let md = `### ${opt.workload} — ${opt.date}\n\n`;
md += `Machine: ${machine.cpu ?? "?"}, ${machine.cpus ?? "?"} CPUs, L1d ${machine.l1d ?? "?"}, ` +
  `L2 ${machine.l2 ?? "?"}${machine.hypervisor ? `, ${machine.hypervisor} guest` : ""}; ` +
  `kernel ${machine.kernel ?? "?"}. Command: \`${opt.command}\`.\n\n`;
const hasGf = timed.some((c) => c.impls.some((i) => i.gflops !== undefined));
md += `| case | isa (baseline) | impl | median ms | min ms |${hasGf ? " GFLOP/s |" : ""} time / baseline | throughput vs baseline |\n`;
md += `|---|---|---|---:|---:|${hasGf ? "---:|" : ""}---:|---:|\n`;
for (const c of timed)
  for (const i of c.impls)
    md += `| ${c.case} | ${c.isa ?? ""}${c.baseline_variant ? ` (${c.baseline_variant})` : ""} | ${i.name}${i.name === c.baseline ? " (baseline)" : ""} | ` +
      `${f(i.median_ms, 4)} | ${f(i.min_ms, 4)} |${hasGf ? ` ${f(i.gflops, 1)} |` : ""} ` +
      `${f(i.time_ratio_vs_baseline, 3)} | ${f(i.throughput_vs_baseline, 3)}x |\n`;
const reps = [...new Set(timed.map((c) => c.reps))].join(", ");
md += `\nMedians of ${reps} interleaved samples per impl after warm-up.\n`;
const notes = cases.filter((c) => c.notes).map((c) => `- ${c.notes}`);
if (notes.length) md += `\n${notes.join('\n')}\n`;
for (const c of cases) if (typeof c.md === "string") md += c.md;
writeFileSync(outMd, md);
