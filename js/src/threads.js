// threads.js - the Wasm threads build (docs/build.md "Threads in Wasm"):
// its shared memory, the Emscripten imports it needs without Emscripten's
// JS glue, and the workers of the core's thread pool.
//
// The threads core (tensorplay-mt.wasm, `bash scripts/build.sh
// emscripten-mt`) imports a shared env.memory. The main instance runs the
// constructors; then each worker (Node worker_threads or a Web Worker, the
// script pool_worker.js) instantiates the same module over the same memory,
// gets its own stack (__stack_pointer) and thread block, initializes its TLS
// (emscripten_tls_init) and enters tpw_pool_worker(slot), the pool's loop,
// which sleeps on memory.atomic.wait32 between jobs and never returns.
// Generated modules (jit.js) are installed in every worker's table at the
// main thread's slots: jit.js posts each one to the workers (and the
// modules installed so far go with a worker's start message); a worker
// leaves the pool's loop to install them when the core says its table is
// behind (tpw_pool_worker returns 1) and runs no chunk until it has.
// A worker that traps tells the core (tpw_pool_worker_trapped: the call
// fails, the pool runs on the calling thread from then on) and the main
// thread (core.threadsNote, for explain()).

const isNode =
  typeof process !== 'undefined' && process.versions != null && typeof process.versions.node === 'string';

export const WORKER_STACK = 1 << 20; // bytes per worker (the main stack is 1 MiB too)
const THREAD_BLOCK = 1024; // a worker's struct pthread (112 bytes) and its key table (512)

/** 1 when module is the threads build (it imports a memory). */
export function isThreadedModule(module) {
  return WebAssembly.Module.imports(module).some((i) => i.kind === 'memory');
}

/** null when this host can run the threads build, else why not (for explain()). */
export function threadsUnavailable() {
  if (typeof SharedArrayBuffer !== 'function') {
    return 'SharedArrayBuffer is unavailable (the page is not cross-origin isolated: serve it with COOP/COEP headers)';
  }
  if (!isNode && globalThis.crossOriginIsolated === false) {
    return 'the page is not cross-origin isolated (serve it with COOP/COEP headers)';
  }
  if (!isNode && typeof Worker !== 'function') return 'this context cannot start Workers';
  return null;
}

/** The default thread count: the cores, at most 4 (as onnxruntime-web caps numThreads). */
export async function defaultThreads() {
  if (isNode) {
    const osModule = 'node:os'; // a variable: bundlers for browsers do not resolve it
    const os = await import(/* webpackIgnore: true */ /* @vite-ignore */ osModule);
    const n = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
    return Math.max(1, Math.min(4, n));
  }
  const n = globalThis.navigator?.hardwareConcurrency ?? 1;
  return Math.max(1, Math.min(4, n));
}

/** The threads core's shared memory: the limits it was linked with
 * (CMakeLists.txt: TP_INITIAL_MEMORY 32 MiB, -sMAXIMUM_MEMORY=4GB). */
export function sharedMemory() {
  return new WebAssembly.Memory({ initial: 512, maximum: 65536, shared: true });
}

/**
 * The env imports of the threads build that Emscripten's glue would give
 * (the ones it calls; the pthread-creation ones are never called, as the
 * workers are ours). role: 'main' or 'worker'; exports(): the instance's
 * exports once it exists.
 */
export function emscriptenImports(memory, exports, role) {
  let u8 = null;
  const heap = () => (u8 && u8.buffer === memory.buffer ? u8 : (u8 = new Uint8Array(memory.buffer)));
  const i32 = () => new Int32Array(memory.buffer);
  const now = () => performance.now();
  return {
    memory,
    emscripten_get_now: now,
    clock_gettime(clk, tp) {
      const t = clk === 0 ? Date.now() : now();
      const v = i32();
      v[tp >>> 2] = (t / 1e3) | 0;
      v[(tp + 4) >>> 2] = ((t % 1e3) * 1e6) | 0;
      return 0;
    },
    emscripten_memcpy_big(dest, src, num) {
      heap().copyWithin(dest >>> 0, src >>> 0, (src >>> 0) + (num >>> 0));
    },
    emscripten_resize_heap(requested) {
      requested >>>= 0;
      const old = memory.buffer.byteLength;
      if (requested <= old) return 0;
      const max = 65536 * 65536;
      for (const grow of [1.25, 1]) { // over-allocate a little, as Emscripten does
        const want = Math.min(max, Math.max(requested, Math.ceil(old * grow)));
        try {
          memory.grow(Math.ceil((want - memory.buffer.byteLength) / 65536));
          return 1;
        } catch {
          // the engine refused: try the exact size, then give up (malloc returns 0)
        }
      }
      return 0;
    },
    __emscripten_init_main_thread_js(tb) {
      // the main instance's thread block: (tb, main browser thread, main
      // runtime thread, may block: Node yes, a page's main thread no)
      const ex = exports();
      ex._emscripten_thread_init(tb, isNode ? 0 : 1, 1, isNode ? 1 : 0);
      ex.emscripten_tls_init();
    },
    _emscripten_notify_thread_queue() {},
    emscripten_receive_on_main_thread_js() { return 0; },
    __emscripten_thread_cleanup() {},
    __pthread_create_js() { return 6; }, // EAGAIN: threads are the pool's workers only
    emscripten_unwind_to_js_event_loop() { throw new Error(`tensorplay: the ${role} thread unwound to the event loop`); },
    __assert_fail(cond, file, line) { throw new Error(`tensorplay: assertion failed in the core (line ${line})`); },
    abort() { throw new Error('tensorplay: the core aborted'); },
    exit(code) { throw new Error(`tensorplay: the core called exit(${code})`); },
    setTempRet0() {},
  };
}

// A worker's struct pthread (Emscripten 3.1.6, musl's pthread_impl.h, wasm32
// offsets): a copy of the main thread's with its own self pointer, a unique
// tid (stdio's and the allocator's locks compare owners by tid: 0 or the
// main thread's would let two threads hold one lock), stack, key table
// (tsd, the block's second half) and robust list.
const PT = { self: 0, tid: 16, stack: 44, stackSize: 48, tsd: 64, robustHead: 68, size: 112 };
function initThreadBlock(core, tb, stack, stackSize) {
  const v = core.views();
  const main = core.exports.pthread_self() >>> 0;
  v.u8.fill(0, tb, tb + THREAD_BLOCK);
  v.u8.copyWithin(tb, main, main + PT.size);
  const w = (off, x) => { v.u32[(tb + off) >>> 2] = x >>> 0; };
  w(PT.self, tb);
  w(PT.tid, tb); // unique and never the main thread's (its pid, 42)
  w(PT.stack, (stack + stackSize) & ~15);
  w(PT.stackSize, stackSize);
  w(PT.tsd, tb + THREAD_BLOCK / 2); // 128 keys x 4 bytes, zeroed
  w(PT.robustHead, tb + PT.robustHead);
}

/**
 * Starts nworkers workers for a threads core (the main instance already
 * runs). Resolves when every worker entered the pool's loop; rejects with
 * the first worker's error.
 */
export async function startWorkers(core, nworkers) {
  if (nworkers <= 0) return [];
  const ex = core.exports;
  const workers = [];
  const url = new URL('./pool_worker.js', import.meta.url);
  let WorkerCtor;
  if (isNode) {
    const wtModule = 'node:worker_threads'; // a variable: bundlers for browsers do not resolve it
    const wt = await import(/* webpackIgnore: true */ /* @vite-ignore */ wtModule);
    WorkerCtor = wt.Worker;
  } else {
    WorkerCtor = globalThis.Worker;
  }
  const ready = [];
  for (let slot = 1; slot <= nworkers; slot++) {
    const stack = core.malloc(WORKER_STACK + 16);
    const tb = core.malloc(THREAD_BLOCK);
    initThreadBlock(core, tb, stack, WORKER_STACK);
    // (Node: none of the parent's flags, which may name its own entry, e.g.
    // --input-type=module -e; V8 flags apply to the whole process anyway)
    const w = isNode ? new WorkerCtor(url, { execArgv: [] }) : new WorkerCtor(url, { type: 'module' });
    const msg = { module: core.module, memory: core.memory, slot, stackTop: (stack + WORKER_STACK) & ~15, stackBase: stack, tb,
      installs: [...(core.jitLive?.values() ?? [])], gen: ex.tpw_pool_jit_gen() };
    ready.push(new Promise((resolve, reject) => {
      const onMessage = (d) => {
        const data = isNode ? d : d.data;
        if (data && data.ready) {
          if (isNode) w.unref(); // from now on the workers never keep the process alive
          resolve();
        } else if (data && data.trapped) {
          core.threadsNote = `pool worker ${slot} trapped (${data.error}): running on 1 thread from now on`;
        } else if (data && data.lost) {
          core.threadsNote = `pool worker ${slot} stopped (${data.error}): running on the threads left`;
        } else if (data && data.error) reject(new Error(`tensorplay: pool worker ${slot}: ${data.error}`));
      };
      const onError = (e) => reject(new Error(`tensorplay: pool worker ${slot} failed to start: ${e.message ?? e}`));
      if (isNode) {
        w.on('message', onMessage);
        w.on('error', onError);
      } else {
        w.onmessage = onMessage;
        w.onerror = onError;
      }
    }));
    w.postMessage(msg);
    workers.push(w);
    (core.poolWorkers ??= []).push(w); // jit.js posts generated modules to these
  }
  await Promise.all(ready);
  // the workers count themselves on entering the loop: wait until all have
  // (a few microseconds after their ready message)
  const t0 = performance.now();
  while (ex.tpw_pool_has_threads() !== 1 && performance.now() - t0 < 1000) await new Promise((r) => setTimeout(r, 1));
  return workers;
}

/** Chunks of parallel work the core's workers have run so far (0 on the one-thread core). */
export function workerChunks(core) {
  return core.exports.tpw_pool_worker_chunks();
}
