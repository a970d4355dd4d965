// shims/nodetest.mjs - the part of `node:test` the JS API tests use, for
// running tests/js/*.test.js in a browser page (examples/web/test.html maps
// 'node:test' here with an import map). test(name, [options], fn) records the
// test; run() executes them in order and returns the results.
const queue = [];

export function test(name, options, fn) {
  if (typeof options === 'function') {
    fn = options;
    options = {};
  }
  queue.push({ name, options: options ?? {}, fn });
}
test.skip = (name, options, fn) => test(name, { ...(typeof options === 'object' ? options : {}), skip: true }, fn ?? options);
test.todo = test.skip;
export const it = test;
export default test;

/** Runs the queued tests (and empties the queue); `skipIf(error)` returns a reason to count a failure as a skip. */
export async function run(file, skipIf = () => null) {
  const tests = queue.splice(0);
  const results = [];
  for (const t of tests) {
    if (t.options.skip) {
      results.push({ file, name: t.name, status: 'skip', reason: String(t.options.skip) });
      continue;
    }
    const t0 = performance.now();
    try {
      const ctx = { name: t.name, diagnostic() {}, skip() {}, todo() {} };
      await t.fn(ctx);
      results.push({ file, name: t.name, status: 'pass', ms: performance.now() - t0 });
    } catch (e) {
      const reason = skipIf(e, t);
      results.push({
        file,
        name: t.name,
        status: reason ? 'skip' : 'fail',
        reason: reason ?? undefined,
        error: reason ? undefined : `${e?.name ?? 'Error'}: ${e?.message ?? e}\n${e?.stack ?? ''}`.slice(0, 2000),
        ms: performance.now() - t0,
      });
    }
  }
  return results;
}
