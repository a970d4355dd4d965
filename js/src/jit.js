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
// Compiled modules are cached by the core's hash of their bytes, so recompiling the
// same graph skips the engine's compile (bypassed by forceDisableCaches).

const cache = new Map(); // hash -> WebAssembly.Module
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

function install(core, module, nexports) {
  // env.tp_jit_kernel: the run entry's callback into the core's executor
  // (a Wasm export passed as a Wasm import: a direct call, no JS in between)
  const inst = new WebAssembly.Instance(module, { env: { memory: core.memory, tp_jit_kernel: core.exports.tpw_jit_kernel } });
  const table = core.exports.__indirect_function_table;
  if (!(table instanceof WebAssembly.Table)) throw new Error('the core does not export its function table');
  const base = table.grow(nexports);
  for (let i = 0; i < nexports; i++) {
    const f = inst.exports[`f${i}`];
    if (typeof f !== 'function') throw new Error(`the generated module does not export f${i}`);
    table.set(base + i, f);
  }
  return base;
}

// On a page's main thread a synchronous compile blocks the page, and
// browsers refuse large ones (Chromium: over 8 MB, RangeError); there,
// modules over 4 KB (Chromium's limit until 2024) compile asynchronously and
// the plan runs on the executor until the module is installed.
const onMainThread = typeof window !== 'undefined' && typeof document !== 'undefined';
const MAIN_THREAD_SYNC_MAX = 4096;
const SYNC_ONLY = 0x40000000;

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
    let module = useCache ? cache.get(key) : undefined;
    if (!module && !(onMainThread && len > MAIN_THREAD_SYNC_MAX)) {
      try {
        module = new WebAssembly.Module(bytes());
      } catch (e) {
        if (!(e instanceof RangeError)) throw e; // a browser refused a synchronous compile: below
      }
      if (module && useCache) cache.set(key, module);
    }
    if (!module) { // compile asynchronously
      if (syncOnly) throw new Error('it would compile asynchronously here and the core needs it now');
      const token = nextToken++;
      pending.add(token);
      WebAssembly.compile(bytes()).then((m) => {
        if (useCache) cache.set(key, m);
        const base = install(core, m, nexports);
        pending.delete(token);
        core.exports.tpw_jit_ready(token, base);
      }).catch((err) => {
        pending.delete(token);
        console.error(`tensorplay: a generated module (${len} bytes) failed to compile: ${err.message}`);
        core.exports.tpw_jit_ready(token, -1);
      });
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

/** Resolves when no generated module is still compiling. */
export async function whenReady() {
  while (pending.size) await new Promise((r) => setTimeout(r, 1));
}

/** Number of distinct generated modules compiled (cache size). */
export function cachedModules() {
  return cache.size;
}
