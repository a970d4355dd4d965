// stats.js - the web example's timing statistics, shared by worker.js and
// the Node tests (tests/js/web_stats.test.js). Plain ES module, no imports.
//
// A run time is reported as the median of n samples with a distribution-free
// 95% confidence interval for the median (order statistics of the binomial
// B(n, 1/2), normal approximation): the interval is [x_(r), x_(s)] with
//   r = floor(n/2 - 1.96 sqrt(n)/2),  s = ceil(1 + n/2 + 1.96 sqrt(n)/2)
// (1-based ranks, clamped to 1..n). measure() keeps sampling until both
// ends of that interval are within `target` (5%) of the median, or until a
// cap on samples or time, and says which (converged: false = noisy).

const Z95 = 1.959964;

export function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  if (!s.length) return NaN;
  return s.length % 2 ? s[s.length >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

/** { median, lo, hi, n, rel } of the samples: rel = max distance of lo/hi from the median, relative. */
export function medianCI(samples) {
  const s = [...samples].sort((a, b) => a - b);
  const n = s.length;
  if (!n) return { median: NaN, lo: NaN, hi: NaN, n: 0, rel: Infinity };
  const m = median(s);
  const half = (Z95 * Math.sqrt(n)) / 2;
  const r = Math.min(n, Math.max(1, Math.floor(n / 2 - half)));
  const k = Math.min(n, Math.max(1, Math.ceil(1 + n / 2 + half)));
  const lo = s[r - 1], hi = s[k - 1];
  const rel = m > 0 ? Math.max(hi - m, m - lo) / m : Infinity;
  return { median: m, lo, hi, n, rel };
}

/**
 * Times fn() adaptively. Each sample times `reps` calls (chosen so a sample
 * takes at least minSampleMs, above the clock's resolution) and records
 * the time per call. Stops when the median's 95% CI is within `target`
 * (after minRuns samples), or at maxRuns samples, or after budgetMs.
 * `now` is the clock (performance.now); onSample(i, maxRuns) reports progress.
 */
export function measure(fn, { minRuns = 8, maxRuns = 200, budgetMs = 3000, target = 0.05, minSampleMs = 2, now = () => performance.now(), onSample } = {}) {
  if (!(maxRuns >= 1)) throw new RangeError(`maxRuns must be at least 1, got ${maxRuns}`);
  minRuns = Math.min(minRuns, maxRuns);
  const tw = now();
  fn(); // warm-up, also a first estimate of the time per call
  const first = now() - tw;
  const reps = first >= minSampleMs ? 1 : Math.min(1000, Math.ceil(minSampleMs / Math.max(first, 0.005)));
  const samples = [];
  const t0 = now();
  let ci = null;
  let stop = 'cap';
  while (samples.length < maxRuns) {
    const t = now();
    for (let r = 0; r < reps; r++) fn();
    samples.push((now() - t) / reps);
    onSample?.(samples.length, maxRuns);
    if (samples.length >= minRuns) {
      ci = medianCI(samples);
      if (ci.rel <= target) { stop = 'converged'; break; }
    }
    if (now() - t0 > budgetMs) { stop = 'time'; break; }
  }
  ci = medianCI(samples);
  return { ...ci, min: Math.min(...samples), max: Math.max(...samples), reps, samples, converged: stop === 'converged', stop };
}

/** base/best as a ratio with the range its two intervals allow: { ratio, lo, hi }. */
export function ratioRange(base, best) {
  return { ratio: base.median / best.median, lo: base.lo / best.hi, hi: base.hi / best.lo };
}
