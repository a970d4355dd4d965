// jit.js - the host side of the modules the core generates at run time
// (issue: the SIMD128 code generator). The core hands over the bytes of a
// Wasm module that imports its memory (env.memory); the host compiles and
// instantiates it, grows the core's function table and installs the module's
// exports f0..f(n-1) there, so C calls them through function pointers: the
// kernels, and last the run entry that calls them all in order (one call
// per run; kernels it does not generate go back to the core through the
// import env.tp_jit_kernel = the core's export tpw_jit_kernel).
//
//   env.tp_host_load_module(bytes_ptr, len, nexports, out_ptr) -> 0 | 1 | -1
//     out_ptr: int32[3]; [0] is TP_JIT_HASHED, [1] and [2] hold the low
//     and high half of the core's 64-bit FNV-1a hash of the bytes (the
//     cache key, with len); without the mark the load fails
//     0: installed, the first table index is written at out_ptr
//     1: pending (a browser main thread refuses synchronous compiles of
//        large modules): the module compiles asynchronously; when it is
//        installed the host calls tpw_jit_ready(token, base) with the token
//        written at out_ptr, and the core switches to it
//    -1: failed (tpw_set_host_error has the message, naming the module)
//   nexports | 0x40000000 (TP_JIT_SYNC_ONLY): fail (-1) instead of pending
//   env.tp_host_features() -> bit 0: SIMD128, bit 1: relaxed SIMD
//
//   env.tp_host_unload_module(base, n): the core released the module
//     installed at table slots base..base+n-1 (its compiled function was
//     disposed): the slots are cleared (the instance can be collected) and
//     go on a free list that later installs reuse before the table grows.
//
// Compiled modules are cached by the core's hash of their bytes, so recompiling the
// same graph skips the engine's compile (bypassed by forceDisableCaches). The
// cache is an LRU bounded by MODULE_CACHE_BYTES of module bytes and
// MODULE_CACHE_MAX modules: least recently used modules are dropped first.

/** Bounds of the module cache (bytes of the cached modules' Wasm, count). */
export const MODULE_CACHE_BYTES = 32 << 20, MODULE_CACHE_MAX = 256;
const cache = new Map(); // hash -> { module, bytes }, least recently used first
let cacheBytes = 0;

function cacheGet(key) {
  const e = cache.get(key);
  if (!e) return undefined;
  cache.delete(key); // most recently used: to the end
  cache.set(key, e);
  return e.module;
}

function cachePut(key, module, bytes) {
  if (cache.has(key)) return;
  cache.set(key, { module, bytes });
  cacheBytes += bytes;
  for (const [k, e] of cache) {
    if (cacheBytes <= MODULE_CACHE_BYTES && cache.size <= MODULE_CACHE_MAX) break;
    if (k === key) break; // never the one just added
    cache.delete(k);
    cacheBytes -= e.bytes;
  }
}

// Free table slots per core's table: runs [base, n], sorted by base.
const freeSlots = new WeakMap();

function takeSlots(table, n) {
  const runs = freeSlots.get(table);
  if (runs) {
    for (let i = 0; i < runs.length; i++) {
      const r = runs[i];
      if (r[1] < n) continue;
      const base = r[0];
      if (r[1] === n) runs.splice(i, 1);
      else { r[0] += n; r[1] -= n; }
      return base;
    }
  }
  return table.grow(n);
}

/** The env.tp_host_unload_module import (see the top of this file). */
export function hostUnloadModule(core, base, n) {
  const table = core.exports.__indirect_function_table;
  if (!(table instanceof WebAssembly.Table) || base < 0 || n <= 0 || base + n > table.length) return;
  for (let i = 0; i < n; i++) table.set(base + i, null);
  if (core.threaded) postToWorkers(core, { unload: { base, n } });
  let runs = freeSlots.get(table);
  if (!runs) freeSlots.set(table, (runs = []));
  let i = 0;
  while (i < runs.length && runs[i][0] < base) i++;
  runs.splice(i, 0, [base, n]);
  // merge with the neighbours
  if (i + 1 < runs.length && runs[i][0] + runs[i][1] === runs[i + 1][0]) {
    runs[i][1] += runs[i + 1][1];
    runs.splice(i + 1, 1);
  }
  if (i > 0 && runs[i - 1][0] + runs[i - 1][1] === runs[i][0]) {
    runs[i - 1][1] += runs[i][1];
    runs.splice(i, 1);
  }
}

/** Free function-table slots (on the free list) of a core. */
export function freeTableSlots(core) {
  const runs = freeSlots.get(core.exports.__indirect_function_table) ?? [];
  return runs.reduce((a, r) => a + r[1], 0);
}
const pending = new Set();
let nextToken = 1;
let features = -1;
const JIT_HASHED = 0x31485054; // TP_JIT_HASHED (src/codegen/jit.h)

// (module (func (param v128 v128 v128) (result v128) local.get 0 local.get 1 local.get 2 f32x4.relaxed_madd))
const RELAXED_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x01, 0x60, 0x03, 0x7b, 0x7b, 0x7b,
  0x01, 0x7b, 0x03, 0x02, 0x01, 0x00, 0x0a, 0x0d, 0x01, 0x0b, 0x00, 0x20, 0x00, 0x20, 0x01, 0x20,
  0x02, 0xfd, 0x85, 0x02, 0x0b,
]);
const SIMD_PROBE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, 0x01, 0x05, 0x01, 0x60, 0x00, 0x01, 0x7b, 0x03,
  0x02, 0x01, 0x00, 0x0a, 0x16, 0x01, 0x14, 0x00, 0xfd, 0x0c, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
  0, 0, 0, 0, 0x0b,
]);

// The bits of env.tp_host_features, as src/codegen/jit.h names them.
export const FEATURE_SIMD128 = 1 << 0, FEATURE_RELAXED_SIMD = 1 << 1;

/** Host features the emitter may use (FEATURE_SIMD128, FEATURE_RELAXED_SIMD). */
export function hostFeatures() {
  if (features < 0) {
    features = 0;
    try { if (WebAssembly.validate(SIMD_PROBE)) features |= FEATURE_SIMD128; } catch { /* no SIMD */ }
    try { if (WebAssembly.validate(RELAXED_PROBE)) features |= FEATURE_RELAXED_SIMD; } catch { /* no relaxed SIMD */ }
  }
  return features;
}

// The instance of each cached module per core: its functions depend only on
// the bytes and the core's imports, so a recompile of the same graph reuses
// it (a fresh instance per compile kept V8's RSS growing for thousands of
// cycles after the instances were unreachable).
const instances = new WeakMap(); // module -> WeakMap(core -> instance)

function install(core, module, nexports) {
  // env.tp_jit_kernel: the run entry's callback into the core's executor
  // (a Wasm export passed as a Wasm import: a direct call, no JS in between)
  let per = instances.get(module);
  if (!per) instances.set(module, (per = new WeakMap()));
  let inst = per.get(core);
  if (!inst) {
    inst = new WebAssembly.Instance(module, { env: { memory: core.memory, tp_jit_kernel: core.exports.tpw_jit_kernel } });
    per.set(core, inst);
  }
  const table = core.exports.__indirect_function_table;
  if (!(table instanceof WebAssembly.Table)) throw new Error('the core does not export its function table');
  const base = takeSlots(table, nexports);
  for (let i = 0; i < nexports; i++) {
    const f = inst.exports[`f${i}`];
    if (typeof f !== 'function') throw new Error(`the generated module does not export f${i}`);
    table.set(base + i, f);
  }
  if (core.threaded) postToWorkers(core, { install: { module, base, n: nexports } });
  return base;
}

// The threads core: every worker installs each generated module at the
// main thread's table slots (pool_worker.js) before it runs another chunk
// (the pool's handshake, tp_pool_jit_published in src/runtime/pool.c).
// core.jitLive keeps the installed ones for workers that start later.
function postToWorkers(core, msg) {
  const live = (core.jitLive ??= new Map()); // base -> { module, n }
  if (msg.install) live.set(msg.install.base, msg.install);
  else live.delete(msg.unload.base);
  const gen = (core.exports.tpw_pool_jit_gen() + 1) | 0;
  for (const w of core.poolWorkers ?? []) w.postMessage({ ...msg, gen });
  core.exports.tpw_pool_jit_published();
}

// On a page's main thread a synchronous compile blocks the page, and
// browsers refuse large ones (Chromium: over 8 MB, RangeError); there,
// modules over 4 KB (Chromium's limit until 2024) compile asynchronously and
// the plan runs on the executor until the module is installed.
// globalThis.tensorplayJitAsync = true (read at each load, anywhere, e.g. a
// page's worker): every generated module compiles asynchronously, except
// those the core needs at once (TP_JIT_SYNC_ONLY). The call that generated
// it runs on the executor, whose code is the core's, while the engine
// compiles the module on its own threads; a synchronous compile would put
// that compile on the call, and the new module's first run on the engine's
// baseline code (examples/web/worker.js: the first result; docs/web.md).
const onMainThread = typeof window !== 'undefined' && typeof document !== 'undefined';
const MAIN_THREAD_SYNC_MAX = 4096;
const SYNC_ONLY = 0x40000000;
const asyncWanted = (len) => (onMainThread && len > MAIN_THREAD_SYNC_MAX) || globalThis.tensorplayJitAsync === true;

/** The env.tp_host_load_module import (see the top of this file). */
export function hostLoadModule(core, setHostError, bytesPtr, len, nexports, outPtr, useCache) {
  const syncOnly = (nexports & SYNC_ONLY) !== 0; // TP_JIT_SYNC_ONLY (src/codegen/jit.h)
  nexports &= ~SYNC_ONLY;
  const i32 = core.views().i32;
  // a copy of the bytes, made only when they are compiled
  let copy = null;
  const bytes = () => copy ?? (copy = core.views().u8.slice(bytesPtr, bytesPtr + len));
  // the cache key: the module's length and the 64-bit hash the core wrote
  // at out_ptr + 4, marked by TP_JIT_HASHED at out_ptr (every core sets it)
  if (i32[outPtr >> 2] !== JIT_HASHED) {
    setHostError(`generated module (${len} bytes): the core did not mark its hash (TP_JIT_HASHED)`);
    return -1;
  }
  const key = `${len}:${(i32[(outPtr >> 2) + 2] >>> 0).toString(16)}:${(i32[(outPtr >> 2) + 1] >>> 0).toString(16)}`;
  try {
    let module = useCache ? cacheGet(key) : undefined;
    if (!module && !(asyncWanted(len) && !syncOnly)) {
      try {
        module = new WebAssembly.Module(bytes());
      } catch (e) {
        if (!(e instanceof RangeError)) throw e; // a browser refused a synchronous compile: below
      }
      if (module && useCache) cachePut(key, module, len);
    }
    if (!module) { // compile asynchronously
      if (syncOnly) throw new Error('it would compile asynchronously here and the core needs it now');
      const token = nextToken++;
      pending.add(token);
      WebAssembly.compile(bytes()).then((m) => {
        if (useCache) cachePut(key, m, len);
        const base = install(core, m, nexports);
        pending.delete(token);
        core.exports.tpw_jit_ready(token, base);
      }).catch((err) => {
        pending.delete(token);
        console.error(`tensorplay: a generated module (${len} bytes) failed to compile: ${err.message}`);
        core.exports.tpw_jit_ready(token, -1);
      }).finally(settled);
      core.views().i32[outPtr >> 2] = token;
      return 1;
    }
    core.views().i32[outPtr >> 2] = install(core, module, nexports);
    return 0;
  } catch (e) {
    setHostError(`generated module (${len} bytes, ${nexports} kernels) failed: ${e.message}`);
    return -1;
  }
}

// whenReady()'s waiters, resolved when the last pending module settles
// (installed or failed), in the same task (no polling delay)
let waiters = [];
function settled() {
  if (pending.size) return;
  const w = waiters;
  waiters = [];
  for (const r of w) r();
}

/** Resolves when no generated module is still compiling. */
export function whenReady() {
  if (!pending.size) return Promise.resolve();
  return new Promise((r) => waiters.push(r));
}

/** Number of generated modules in the cache (at most MODULE_CACHE_MAX). */
export function cachedModules() {
  return cache.size;
}
