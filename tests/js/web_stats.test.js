// examples/web/stats.js: the page's timing statistics (median, its 95%
// interval by order statistics, adaptive run counts) against hand-computed
// values and a scripted clock.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { median, medianCI, measure, ratioRange } from '../../examples/web/stats.js';

test('median and the order-statistic 95% interval of the median', () => {
  assert.equal(median([3, 1, 2]), 2);
  assert.equal(median([4, 1, 3, 2]), 2.5);
  // n = 20: half = 1.96 * sqrt(20) / 2 = 4.383; r = floor(10 - 4.383) = 5, s = ceil(11 + 4.383) = 16
  const xs = Array.from({ length: 20 }, (_, i) => i + 1); // 1..20, shuffled below
  const shuffled = [...xs].sort((a, b) => ((a * 7) % 20) - ((b * 7) % 20));
  const ci = medianCI(shuffled);
  assert.equal(ci.median, 10.5);
  assert.equal(ci.lo, 5);
  assert.equal(ci.hi, 16);
  assert.equal(ci.n, 20);
  assert.ok(Math.abs(ci.rel - 5.5 / 10.5) < 1e-12);
  // n = 5: the interval is the whole range (r clamps to 1, s to 5)
  const c5 = medianCI([10, 11, 12, 13, 30]);
  assert.deepEqual([c5.lo, c5.median, c5.hi], [10, 12, 30]);
  // n = 100: r = floor(50 - 9.8) = 40, s = ceil(51 + 9.8) = 61
  const c100 = medianCI(Array.from({ length: 100 }, (_, i) => i));
  assert.deepEqual([c100.lo, c100.hi], [39, 60]);
  assert.equal(medianCI([]).n, 0);
});

test('measure() stops when the interval is within 5%, or at its caps, and says which', () => {
  // a scripted clock: each call of fn advances it by the next duration
  const run = (durations, opts) => {
    let t = 0, k = 0;
    const fn = () => { t += durations[k++ % durations.length]; };
    return measure(fn, { now: () => t, minSampleMs: 0, ...opts });
  };
  const steady = run([1.0, 1.01, 0.99, 1.0], { maxRuns: 500 });
  assert.equal(steady.converged, true);
  assert.equal(steady.n, 8, 'converges at minRuns when the samples agree within 1%');
  assert.ok(Math.abs(steady.median - 1.0) < 1e-12);
  // alternating 1 and 2: the median's interval never gets within 5%
  const noisy = run([1, 2], { maxRuns: 40, budgetMs: 1e9 });
  assert.equal(noisy.converged, false);
  assert.equal(noisy.stop, 'cap');
  assert.equal(noisy.n, 40);
  const timed = run([1, 2], { maxRuns: 1e6, budgetMs: 50 });
  assert.equal(timed.stop, 'time');
  assert.ok(timed.n < 60, `stopped by time after ${timed.n} samples`);
  // calls shorter than minSampleMs are batched: 0.1 ms calls, 2 ms samples -> 20 calls a sample
  let t = 0;
  const fast = measure(() => { t += 0.1; }, { now: () => t, minSampleMs: 2 });
  assert.equal(fast.reps, 20);
  assert.ok(Math.abs(fast.median - 0.1) < 1e-9);
  assert.throws(() => measure(() => {}, { maxRuns: 0 }), /maxRuns must be at least 1/);
});

test('ratioRange: the ratio of medians with the range the two intervals allow', () => {
  const r = ratioRange({ median: 10, lo: 9, hi: 11 }, { median: 5, lo: 4, hi: 6 });
  assert.equal(r.ratio, 2);
  assert.equal(r.lo, 9 / 6);
  assert.equal(r.hi, 11 / 4);
});
