// loader.js - finds, compiles and instantiates the Wasm core (no Emscripten
// glue). The same code runs in Node 20 and in browsers; Node-only modules are
// imported dynamically and only when running in Node.
//
// The core is a reactor (wasm32-wasi with clang, or Emscripten
// STANDALONE_WASM): it exports `memory`, `_initialize` and the tpw_* ABI of
// wasm/abi.h. The imports are built generically from
// WebAssembly.Module.imports(): a small WASI preview1 shim, `env.tp_host_call`
// (the JS-function callback the compiler uses), `env.tp_host_backend` (JS
// backends), `env.tp_host_release` (the core dropped a host function),
// `env.tp_host_load_module` / `env.tp_host_features` (generated modules,
// jit.js), and
// `env.emscripten_notify_memory_growth`; anything else becomes a stub that
// throws an error naming the import when it is called.
import { CORE_EXPORTS } from './exports.js';
import { isThreadedModule, threadsUnavailable, defaultThreads, sharedMemory, emscriptenImports, startWorkers } from './threads.js';

const isNode =
  typeof process !== 'undefined' &&
  process.versions != null &&
  typeof process.versions.node === 'string';

// WASI errno values used below.
const ERRNO_SUCCESS = 0;
const ERRNO_BADF = 8;
const ERRNO_NOSYS = 52;
const ERRNO_SPIPE = 70;

/** Thrown when the core calls proc_exit. */
export class WasiExit extends Error {
  constructor(code) {
    super(`tensorplay core called proc_exit(${code})`);
    this.name = 'WasiExit';
    this.code = code;
  }
}

async function readWasmBytes(source) {
  if (source instanceof WebAssembly.Module) return source;
  if (source instanceof ArrayBuffer || ArrayBuffer.isView(source)) return source;
  if (isNode) {
    // The specifier is a variable (and marked ignore) so that bundlers
    // building for browsers (webpack, Vite, esbuild) do not try to resolve a
    // node: module that the browser path never loads.
    const fsModule = 'node:fs/promises';
    const fs = await import(/* webpackIgnore: true */ /* @vite-ignore */ fsModule);
    let where = source;
    if (where === undefined) {
      const env = process.env.TP_WASM;
      where = env ? env : new URL('../wasm/tensorplay.wasm', import.meta.url);
    }
    try {
      return await fs.readFile(where);
    } catch (e) {
      const err = new Error(
        `tensorplay: cannot read the Wasm core at ${String(where)} (${e.code || e.message}); ` +
          'build it (js/wasm/tensorplay.wasm) or set TP_WASM to a built core');
      err.cause = e;
      throw err;
    }
  }
  return null; // browsers: fetched in compileCore
}

async function compileCore(source) {
  const bytes = await readWasmBytes(source);
  if (bytes instanceof WebAssembly.Module) return bytes;
  if (bytes) return WebAssembly.compile(bytes);
  // Browser path. compileStreaming (the streaming analogue of
  // instantiateStreaming) is used because the import object is built from the
  // module's declared imports, which are known only after compiling.
  const url = source === undefined ? new URL('../wasm/tensorplay.wasm', import.meta.url) : source;
  const response = await fetch(url);
  if (!response.ok) {
    throw new Error(`tensorplay: fetching ${String(url)} failed: HTTP ${response.status}`);
  }
  if (typeof WebAssembly.compileStreaming === 'function') {
    try {
      return await WebAssembly.compileStreaming(response.clone());
    } catch (e) {
      // Wrong MIME type and similar: fall back to the plain path below.
    }
  }
  return WebAssembly.compile(await response.arrayBuffer());
}

/**
 * The loaded core: exports, memory views re-made after growth, C string
 * helpers, a small stack for call arguments, and the op table.
 */
export class Core {
  constructor() {
    this.module = null;
    this.instance = null;
    this.exports = null;
    this.memory = null;
    /** Set by compiler.js: (fnId, inPtr, nin, outPtr, maxOut) => count | -1 */
    this.hostCall = null;
    /** Set by compiler.js: (fnId, graphHandle, inPtr, nin, optsJsonPtr) => runner id | -1 */
    this.hostBackend = null;
    /** Set by compiler.js: (fnId) => void (the core dropped a host function) */
    this.hostRelease = null;
    /** Set by compiler.js: (bytesPtr, len, nexports, outPtr) => 0 | 1 | -1 (jit.js) */
    this.hostLoadModule = null;
    /** Set by compiler.js: () => feature bits (jit.js) */
    this.hostFeatures = null;
    /** Set by compiler.js: (base, n) => void: free a module's table slots (jit.js) */
    this.hostUnloadModule = null;
    this._buf = null;
    this._views = null;
    this._enc = new TextEncoder();
    this._dec = new TextDecoder('utf-8');
    // argument stack
    this._stackBase = 0;
    this._stackEnd = 0;
    this._sp = 0;
    this._spill = [];
    this.ops = new Map();
    this.opNames = [];
    this.opArity = [];
  }

  /** Typed-array views over memory.buffer, re-made when the buffer changed. */
  views() {
    const buf = this.memory.buffer;
    if (buf !== this._buf || this._views === null || this._views.u8.byteLength !== buf.byteLength) {
      this._buf = buf;
      this._views = {
        u8: new Uint8Array(buf),
        i32: new Int32Array(buf),
        u32: new Uint32Array(buf),
        f32: new Float32Array(buf),
        f64: new Float64Array(buf),
        i64: new BigInt64Array(buf),
        dv: new DataView(buf),
      };
    }
    return this._views;
  }

  /** A NUL-terminated UTF-8 string at ptr ("" for ptr 0). */
  readCString(ptr) {
    ptr >>>= 0;
    if (ptr === 0) return '';
    const u8 = this.views().u8;
    let end = ptr;
    while (end < u8.length && u8[end] !== 0) end++;
    // (a browser's TextDecoder refuses views of a SharedArrayBuffer: the threads build copies)
    return this._dec.decode(this.threaded ? u8.slice(ptr, end) : u8.subarray(ptr, end));
  }

  /** Copies s into tpw_malloc'ed memory; the caller frees with tpw_free. */
  mallocCString(s) {
    const bytes = this._enc.encode(String(s));
    const p = this.malloc(bytes.length + 1);
    const u8 = this.views().u8;
    u8.set(bytes, p);
    u8[p + bytes.length] = 0;
    return p;
  }

  malloc(n) {
    // tpw_malloc takes an int32: larger sizes (and 4 GiB, which would wrap
    // to 0) are refused here
    const p = n <= 0x7fffffff ? this.exports.tpw_malloc(Math.max(1, n)) >>> 0 : 0;
    if (p === 0) {
      const mem = this.memory ? this.memory.buffer.byteLength : 0;
      const why = n <= 0x7fffffff
        ? `its Wasm memory has ${mem} bytes and can grow to at most 4 GiB`
        : 'one buffer passed between JS and the core is at most 2 GiB - 1 bytes';
      const e = new Error(`tensorplay: out of memory: the core could not allocate ${n} bytes (${why})`);
      e.code = 3; // OUT_OF_MEMORY
      throw e;
    }
    return p;
  }

  free(p) {
    if (p) this.exports.tpw_free(p);
  }

  // ---- argument stack: small LIFO allocations for one call -------------
  // Re-entrant (a host call made while an outer call's arguments are live
  // allocates above them). Large requests spill to tpw_malloc.
  stackSave() {
    return [this._sp, this._spill.length];
  }

  stackAlloc(n) {
    n = (n + 7) & ~7;
    if (n === 0) n = 8;
    if (this._sp + n <= this._stackEnd) {
      const p = this._sp;
      this._sp += n;
      return p;
    }
    const p = this.malloc(n);
    this._spill.push(p);
    return p;
  }

  stackRestore(mark) {
    this._sp = mark[0];
    while (this._spill.length > mark[1]) this.free(this._spill.pop());
  }

  _init() {
    const ex = this.exports;
    const STACK = 64 * 1024;
    this._stackBase = this.malloc(STACK);
    this._stackBase = (this._stackBase + 7) & ~7;
    this._sp = this._stackBase;
    this._stackEnd = this._stackBase + STACK - 8;
    const n = ex.tpw_op_count();
    for (let i = 0; i < n; i++) {
      const name = this.readCString(ex.tpw_op_name(i));
      this.ops.set(name, i);
      this.opNames.push(name);
      this.opArity.push(ex.tpw_op_arity(i));
    }
  }
}

function makeWasi(core, envVars) {
  const dec = [new TextDecoder(), new TextDecoder(), new TextDecoder()];
  const pending = ['', '', ''];
  const emit = (fd, line) => {
    if (fd === 2) console.error(line);
    else console.log(line);
  };
  const envBytes = envVars.map((s) => new TextEncoder().encode(s + '\0'));
  const now = () => (typeof performance !== 'undefined' ? performance.now() : Date.now());

  return {
    fd_write(fd, iovs, iovsLen, nwrittenPtr) {
      const { u8, dv } = core.views();
      let total = 0;
      let text = '';
      const d = dec[fd] || dec[1];
      for (let i = 0; i < iovsLen; i++) {
        const p = dv.getUint32(iovs + i * 8, true);
        const len = dv.getUint32(iovs + i * 8 + 4, true);
        text += d.decode(core.threaded ? u8.slice(p, p + len) : u8.subarray(p, p + len), { stream: true });
        total += len;
      }
      if (fd === 1 || fd === 2) {
        let s = pending[fd] + text;
        let nl;
        while ((nl = s.indexOf('\n')) >= 0) {
          emit(fd, s.slice(0, nl));
          s = s.slice(nl + 1);
        }
        pending[fd] = s;
      } else {
        return ERRNO_BADF;
      }
      core.views().dv.setUint32(nwrittenPtr, total, true);
      return ERRNO_SUCCESS;
    },
    fd_read(fd, iovs, iovsLen, nreadPtr) {
      if (fd !== 0) return ERRNO_BADF;
      core.views().dv.setUint32(nreadPtr, 0, true); // stdin is empty
      return ERRNO_SUCCESS;
    },
    fd_close(fd) {
      return fd <= 2 ? ERRNO_SUCCESS : ERRNO_BADF;
    },
    fd_seek(fd) {
      return fd <= 2 ? ERRNO_SPIPE : ERRNO_BADF;
    },
    fd_sync() {
      return ERRNO_SUCCESS;
    },
    fd_fdstat_get(fd, ptr) {
      if (fd > 2) return ERRNO_BADF;
      const { dv } = core.views();
      dv.setUint8(ptr, 2); // filetype: character device
      dv.setUint16(ptr + 2, 0, true); // flags
      dv.setBigUint64(ptr + 8, 0xffffffffffffffffn, true);
      dv.setBigUint64(ptr + 16, 0xffffffffffffffffn, true);
      return ERRNO_SUCCESS;
    },
    fd_fdstat_set_flags() {
      return ERRNO_NOSYS;
    },
    fd_prestat_get() {
      return ERRNO_BADF; // no preopened directories
    },
    fd_prestat_dir_name() {
      return ERRNO_BADF;
    },
    proc_exit(code) {
      for (const fd of [1, 2]) if (pending[fd]) { emit(fd, pending[fd]); pending[fd] = ''; }
      throw new WasiExit(code);
    },
    proc_raise(sig) {
      throw new WasiExit(128 + sig);
    },
    sched_yield() {
      return ERRNO_SUCCESS;
    },
    clock_res_get(id, resPtr) {
      core.views().dv.setBigUint64(resPtr, 1000n, true);
      return ERRNO_SUCCESS;
    },
    clock_time_get(id, precision, timePtr) {
      let ns;
      if (id === 0) ns = BigInt(Date.now()) * 1000000n;
      else ns = BigInt(Math.round(now() * 1e6));
      core.views().dv.setBigUint64(timePtr, ns, true);
      return ERRNO_SUCCESS;
    },
    random_get(ptr, len) {
      const { u8 } = core.views();
      for (let off = 0; off < len; off += 65536) {
        const n = Math.min(65536, len - off);
        crypto.getRandomValues(u8.subarray(ptr + off, ptr + off + n));
      }
      return ERRNO_SUCCESS;
    },
    environ_sizes_get(countPtr, sizePtr) {
      const { dv } = core.views();
      dv.setUint32(countPtr, envBytes.length, true);
      dv.setUint32(sizePtr, envBytes.reduce((a, b) => a + b.length, 0), true);
      return ERRNO_SUCCESS;
    },
    environ_get(environPtr, bufPtr) {
      const { dv, u8 } = core.views();
      let p = bufPtr;
      envBytes.forEach((b, i) => {
        dv.setUint32(environPtr + i * 4, p, true);
        u8.set(b, p);
        p += b.length;
      });
      return ERRNO_SUCCESS;
    },
    args_sizes_get(countPtr, sizePtr) {
      const { dv } = core.views();
      dv.setUint32(countPtr, 0, true);
      dv.setUint32(sizePtr, 0, true);
      return ERRNO_SUCCESS;
    },
    args_get() {
      return ERRNO_SUCCESS;
    },
  };
}

function missingImport(module, name) {
  return () => {
    throw new Error(`tensorplay: the core called the import ${module}.${name}, which this host does not provide`);
  };
}

/** The import object for a compiled core module (exported for tests). */
export function buildImports(core, module) {
  const envVars = [];
  if (isNode && process.env.TP_LOGS) envVars.push(`TP_LOGS=${process.env.TP_LOGS}`);
  // the old partition rule for comparison (docs/training.md "The partitioner")
  if (isNode && process.env.TP_PARTITIONER) envVars.push(`TP_PARTITIONER=${process.env.TP_PARTITIONER}`);
  // the bytes one loop scan output may take (docs/kernel-ir.md "Control flow in the plan")
  if (isNode && process.env.TP_LOOP_STACK_MAX) envVars.push(`TP_LOOP_STACK_MAX=${process.env.TP_LOOP_STACK_MAX}`);
  const wasi = makeWasi(core, envVars);
  const env = {
    tp_host_call(fnId, inPtr, nin, outPtr, maxOut) {
      if (!core.hostCall) return -1;
      return core.hostCall(fnId, inPtr >>> 0, nin, outPtr >>> 0, maxOut);
    },
    tp_host_backend(fnId, graphHandle, inPtr, nin, optsPtr) {
      if (!core.hostBackend) return -1;
      return core.hostBackend(fnId, graphHandle >>> 0, inPtr >>> 0, nin, optsPtr >>> 0);
    },
    tp_host_release(fnId) {
      if (core.hostRelease) core.hostRelease(fnId);
    },
    tp_host_load_module(bytesPtr, len, nexports, outPtr) {
      if (!core.hostLoadModule) return -1;
      return core.hostLoadModule(bytesPtr >>> 0, len, nexports, outPtr >>> 0);
    },
    tp_host_unload_module(base, n) {
      if (core.hostUnloadModule) core.hostUnloadModule(base, n);
    },
    tp_host_features() {
      return core.hostFeatures ? core.hostFeatures() : 0;
    },
    emscripten_notify_memory_growth() {
      core.views(); // re-make the views now; views() also checks on every use
    },
  };
  const imports = {};
  if (isThreadedModule(module)) { // the threads build: a shared memory and Emscripten's imports
    core.memory = sharedMemory();
    const em = emscriptenImports(core.memory, () => core.exports, 'main');
    for (const k of Object.keys(em)) env[k] ??= em[k];
  }
  for (const imp of WebAssembly.Module.imports(module)) {
    if (imp.kind === 'memory' && imp.module === 'env' && core.memory) {
      (imports.env ??= {})[imp.name] = core.memory;
      continue;
    }
    if (imp.kind !== 'function') {
      throw new Error(`tensorplay: the core imports a ${imp.kind} ${imp.module}.${imp.name}; only function imports are supported`);
    }
    const ns = (imports[imp.module] ??= {});
    let fn;
    if (imp.module === 'wasi_snapshot_preview1') {
      fn = wasi[imp.name] ?? (() => ERRNO_NOSYS);
    } else if (imp.module === 'env') {
      fn = env[imp.name];
    }
    ns[imp.name] = fn ?? missingImport(imp.module, imp.name);
  }
  return imports;
}

/**
 * Loads the core. source: undefined (default location; in Node TP_WASM
 * overrides it), a path or URL, bytes, or a compiled WebAssembly.Module.
 */
export async function loadCore(source, options = {}) {
  const core = new Core();
  let want = options.threads ?? globalThis.tensorplayThreads;
  if (want === undefined && isNode && process.env.TP_WASM_THREADS) want = process.env.TP_WASM_THREADS;
  let note = null; // why a threads request runs on one thread (explain())
  if (want !== undefined && want !== null && source === undefined && !(isNode && process.env.TP_WASM)) {
    // the threads core when this host can run it, else the default one
    note = threadsUnavailable();
    if (!note) source = new URL('../wasm/tensorplay-mt.wasm', import.meta.url);
  }
  let module;
  if (!note && source instanceof URL && source.href.endsWith('/tensorplay-mt.wasm') && want !== undefined) {
    try {
      module = await compileCore(source);
    } catch (e) { // e.g. a package without the threads core: the default one
      note = `the threads core could not be loaded (${e.message})`;
      module = await compileCore(undefined);
    }
  } else {
    module = await compileCore(source);
  }
  if (isThreadedModule(module)) {
    const why = threadsUnavailable();
    if (why) throw new Error(`tensorplay: this core is the Wasm threads build, which cannot run here: ${why}; load tensorplay.wasm instead`);
  }
  const instance = await WebAssembly.instantiate(module, buildImports(core, module));
  startCore(core, module, instance);
  if (core.threaded) {
    const auto = want === undefined || want === null || want === true || want === 'auto' || want === '';
    const n = auto ? await defaultThreads() : Number(want);
    if (!Number.isInteger(n) || n < 1 || n > 256) {
      throw new Error(`tensorplay: threads=${String(want)} is not a thread count: give a whole number from 1 to 256`);
    }
    // Node waits for the workers (about 30 ms); a page does not, so their
    // start overlaps the page's own loading: the pool uses each worker from
    // the moment it enters its loop (core.threadsReady: all have)
    // a worker that fails to start (e.g. the one-file bundle, which does not
    // carry pool_worker.js) leaves fewer threads, never a failed load:
    // explain() says why
    const started = startWorkers(core, n - 1).then(
      (w) => { core.workers = w; },
      (e) => { core.threadsNote = `${e.message}: running on the threads that started`; });
    core.threadsReady = started;
    if (isNode) await started;
  } else if (note) {
    core.threadsNote = `threads requested, but ${note}`;
  }
  return core;
}

/**
 * Loads the core synchronously (Node only, for the CommonJS build
 * js/dist/ort.cjs, whose require() cannot await): source is bytes, a
 * compiled WebAssembly.Module, or a path read with readFileSync (`fs`: the
 * caller's node:fs, which a CommonJS bundle can require).
 */
export function loadCoreSync(source, fs) {
  let bytes = source;
  if (!(source instanceof WebAssembly.Module) && !(source instanceof ArrayBuffer) && !ArrayBuffer.isView(source)) {
    try {
      bytes = fs.readFileSync(source);
    } catch (e) {
      const err = new Error(
        `tensorplay: cannot read the Wasm core at ${String(source)} (${e.code || e.message}); ` +
          'build it (js/wasm/tensorplay.wasm) or set TP_WASM to a built core');
      err.cause = e;
      throw err;
    }
  }
  const module = bytes instanceof WebAssembly.Module ? bytes : new WebAssembly.Module(bytes);
  const core = new Core();
  const instance = new WebAssembly.Instance(module, buildImports(core, module));
  return startCore(core, module, instance);
}

function startCore(core, module, instance) {
  core.module = module;
  core.instance = instance;
  core.exports = instance.exports;
  core.threaded = isThreadedModule(module);
  if (!core.threaded) core.memory = instance.exports.memory;
  if (!(core.memory instanceof WebAssembly.Memory)) {
    throw new Error('tensorplay: the core does not export its memory');
  }
  if (typeof core.exports._initialize === 'function') core.exports._initialize();
  else if (core.threaded) core.exports.__wasm_call_ctors(); // Emscripten -pthread: no _initialize
  const missing = CORE_EXPORTS.filter((name) => typeof core.exports[name] !== 'function');
  if (missing.length) {
    throw new Error(`tensorplay: the core does not export ${missing.join(', ')} (it does not match this package; rebuild it: bash scripts/build.sh wasi)`);
  }
  core._init();
  return core;
}
