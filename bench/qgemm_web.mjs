// qgemm_web.mjs - runs bench/qgemm_bench.c's wasm32-wasi command (built by
// bench/workloads/qgemm-wasm.sh) in headless Chromium, where relaxed SIMD
// is on by default: the page validates the relaxed-SIMD tile module the
// bench emits, installs its kernel (env.qgemm_host_relaxed, as
// bench/qgemm_wasm.mjs does in Node) and
// runs the bench's selftest and timings with a minimal WASI (arguments,
// clocks, stdout/stderr). Prints the bench's stdout (JSON lines) on stdout
// and its table on stderr.
//   node bench/qgemm_web.mjs qgemm_bench.wasm [bench args...]
// Timing: performance.now() in a page that is not cross-origin isolated is
// coarsened to 0.1 ms, so use --sample-ms 10 or more (the bench repeats
// each call within a sample).
import { readFileSync } from 'node:fs';
import process from 'node:process';
import { launch, newPage, skipReason } from '../tests/browser/_browser.mjs';

const [file, ...args] = process.argv.slice(2);
if (!file) {
  console.error('usage: node bench/qgemm_web.mjs qgemm_bench.wasm [args]');
  process.exit(2);
}
const skip = await skipReason();
if (skip && !/is not built/.test(skip)) {
  console.error(`qgemm_web: skipped: ${skip}`);
  process.exit(1);
}
const browser = await launch();
try {
  const page = await newPage(browser.context);
  await page.goto('about:blank');
  const res = await page.evaluate(async ({ wasm, argv, warmArgv }) => {
    const bytes = Uint8Array.from(atob(wasm), (c) => c.charCodeAt(0));
    const module = await WebAssembly.compile(bytes);
    let kmodule; // the tile module, compiled once (the same bytes every run)
    // two instances of the same compiled modules: the first run warms the
    // engine up (its tier-up to optimized code is shared), the second is timed
    const runOnce = async (argv) => {
    const out = { 1: '', 2: '' };
    let inst, mem;
    const dv = () => new DataView(mem.buffer);
    const enc = new TextEncoder(), dec = new TextDecoder();
    const argBufs = argv.map((a) => enc.encode(a + '\0'));
    class Exit { constructor(code) { this.code = code; } }
    const wasi = {
      args_sizes_get(pc, ps) {
        dv().setUint32(pc, argBufs.length, true);
        dv().setUint32(ps, argBufs.reduce((s, b) => s + b.length, 0), true);
        return 0;
      },
      args_get(pv, pb) {
        for (const b of argBufs) {
          dv().setUint32(pv, pb, true);
          new Uint8Array(mem.buffer, pb, b.length).set(b);
          pv += 4, pb += b.length;
        }
        return 0;
      },
      clock_time_get(id, prec, p) {
        const ns = id === 0 ? BigInt(Date.now()) * 1000000n
          : BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6));
        dv().setBigUint64(p, ns, true);
        return 0;
      },
      fd_write(fd, iov, n, pw) {
        let w = 0;
        for (let i = 0; i < n; i++) {
          const ptr = dv().getUint32(iov + 8 * i, true), len = dv().getUint32(iov + 8 * i + 4, true);
          out[fd] = (out[fd] ?? '') + dec.decode(new Uint8Array(mem.buffer, ptr, len));
          w += len;
        }
        dv().setUint32(pw, w, true);
        return 0;
      },
      fd_fdstat_get(fd, p) {
        new Uint8Array(mem.buffer, p, 24).fill(0);
        dv().setUint8(p, 2); // character device
        return fd <= 2 ? 0 : 8;
      },
      fd_prestat_get: () => 8, fd_prestat_dir_name: () => 8, fd_close: () => 8, fd_seek: () => 8,
      fd_read: () => 8, fd_fdstat_set_flags: () => 8, path_open: () => 8,
      proc_exit(code) { throw new Exit(code); },
    };
    let relaxedOk = false;
    const env = {
      qgemm_host_relaxed(ptr, len) {
        const kbytes = new Uint8Array(mem.buffer, ptr, len).slice();
        if (kmodule === undefined) kmodule = WebAssembly.validate(kbytes) ? new WebAssembly.Module(kbytes) : null;
        if (!kmodule) return -1;
        relaxedOk = true;
        const k = new WebAssembly.Instance(kmodule, { env: { memory: mem } });
        const table = inst.exports.__indirect_function_table;
        const idx = table.grow(1);
        table.set(idx, k.exports.f0);
        return idx;
      },
    };
    inst = await WebAssembly.instantiate(module, { wasi_snapshot_preview1: wasi, env });
    mem = inst.exports.memory;
    let code = 0;
    try { inst.exports._start(); } catch (e) { if (e instanceof Exit) code = e.code; else throw e; }
    return { code, stdout: out[1], stderr: out[2], relaxedOk, ua: navigator.userAgent };
    };
    const warm = await runOnce(warmArgv);
    if (warm.code) return warm;
    return runOnce(argv);
  }, { wasm: readFileSync(file).toString('base64'),
       argv: ['qgemm_bench', ...args],
       warmArgv: ['qgemm_bench', '--reps', '15', '--sample-ms', '2', ...args.filter((a) => /^\d+,\d+,\d+$/.test(a))] });
  process.stderr.write(`qgemm_web: ${res.ua}; relaxed SIMD ${res.relaxedOk ? 'validates' : 'does not validate'}\n`);
  process.stderr.write(res.stderr);
  process.stdout.write(res.stdout);
  process.exitCode = res.code;
} finally {
  await browser.close();
}
