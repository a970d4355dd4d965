// pool_worker.js - one worker of the Wasm core's thread pool (threads.js
// starts it; Node worker_threads or a module Web Worker). It receives the
// compiled threads core and its shared memory, instantiates the module over
// that memory (the main instance has already run the constructors and
// initialized the data segments), sets its own stack and thread block,
// initializes its TLS, says it is ready and enters the pool's loop,
// tpw_pool_worker(slot, gen). The loop returns 1 when the main thread
// installed a generated module this worker has not (gen: the count this
// worker installed): the worker then installs the modules posted to it
// (install / unload messages, each with the count it brings the worker
// to) in its own table at the main thread's slots, and enters the loop
// again once it caught up. A trap out of the loop is reported to the core
// (tpw_pool_worker_trapped) and to the main thread. The pool's tasks call
// no host import (the tp_host_* imports throw here).
import { emscriptenImports } from './threads.js';

const isNode =
  typeof process !== 'undefined' && process.versions != null && typeof process.versions.node === 'string';

async function port() {
  if (!isNode) {
    return { on: (f) => { self.onmessage = (e) => f(e.data); }, post: (m) => self.postMessage(m) };
  }
  const wtModule = 'node:worker_threads';
  const wt = await import(/* webpackIgnore: true */ /* @vite-ignore */ wtModule);
  return { on: (f) => wt.parentPort.on('message', f), post: (m) => wt.parentPort.postMessage(m) };
}

function start({ module, memory, slot, stackTop, stackBase, tb }) {
  let ex = null;
  const em = emscriptenImports(memory, () => ex, `pool worker ${slot}`);
  const dec = new TextDecoder();
  const imports = {};
  for (const imp of WebAssembly.Module.imports(module)) {
    const ns = (imports[imp.module] ??= {});
    if (imp.kind === 'memory') {
      ns[imp.name] = memory;
    } else if (imp.module === 'env' && em[imp.name]) {
      ns[imp.name] = em[imp.name];
    } else if (imp.module === 'wasi_snapshot_preview1' && imp.name === 'fd_write') {
      ns[imp.name] = (fd, iovs, n, nwritten) => { // the core's messages (TP_LOGS) on stderr
        const dv = new DataView(memory.buffer);
        let text = '', total = 0;
        for (let i = 0; i < n; i++) {
          const p = dv.getUint32(iovs + i * 8, true), len = dv.getUint32(iovs + i * 8 + 4, true);
          text += dec.decode(new Uint8Array(memory.buffer).slice(p, p + len));
          total += len;
        }
        if (text) console.error(text.replace(/\n$/, ''));
        dv.setUint32(nwritten, total, true);
        return 0;
      };
    } else if (imp.module === 'wasi_snapshot_preview1') {
      ns[imp.name] = () => 52; // ENOSYS
    } else {
      ns[imp.name] = () => {
        throw new Error(`tensorplay: pool worker ${slot} called the import ${imp.module}.${imp.name}, which only the main thread provides`);
      };
    }
  }
  const instance = new WebAssembly.Instance(module, imports);
  ex = instance.exports;
  ex.__stack_pointer.value = stackTop;
  if (typeof ex.emscripten_stack_set_limits === 'function') ex.emscripten_stack_set_limits(stackTop, stackBase);
  ex._emscripten_thread_init(tb, 0, 0, 1); // not the main thread; may block (memory.atomic.wait32)
  ex.emscripten_tls_init();
  return ex;
}

// A generated module at the main thread's table slots (jit.js install).
function install(ex, memory, { module, base, n }) {
  const inst = new WebAssembly.Instance(module, { env: { memory, tp_jit_kernel: ex.tpw_jit_kernel } });
  const table = ex.__indirect_function_table;
  if (table.length < base + n) table.grow(base + n - table.length);
  for (let i = 0; i < n; i++) table.set(base + i, inst.exports[`f${i}`]);
}

function unload(ex, { base, n }) {
  const table = ex.__indirect_function_table;
  for (let i = 0; i < n && base + i < table.length; i++) table.set(base + i, null);
}

const p = await port();
let ex = null, slot = 0, installed = 0, memory = null, stopped = false;

// The pool's loop until the core says this worker's table is behind (and
// it has not received the modules yet: wait for the messages) or it stops.
function enter() {
  for (;;) {
    let r;
    try {
      r = ex.tpw_pool_worker(slot, installed);
    } catch (e) {
      stopped = true;
      try { ex.tpw_pool_worker_trapped(slot); } catch { /* the report is best effort */ }
      p.post({ trapped: true, error: String(e && e.message ? e.message : e) });
      return;
    }
    if (r === 1 && ((ex.tpw_pool_jit_gen() - installed) | 0) > 0) return; // install first
    if (r !== 1) {
      stopped = true;
      if (r !== 2) p.post({ error: `the pool's loop returned ${r} (slot ${slot})` });
      return;
    }
  }
}

p.on((msg) => {
  if (ex === null) {
    try {
      ex = start(msg);
      slot = msg.slot, memory = msg.memory;
      for (const m of msg.installs ?? []) install(ex, memory, m);
      installed = msg.gen | 0;
    } catch (e) {
      p.post({ error: String(e && e.message ? e.message : e) });
      return;
    }
    p.post({ ready: true });
  } else {
    if (stopped) return;
    try {
      if (msg.install) install(ex, memory, msg.install);
      else if (msg.unload) unload(ex, msg.unload);
    } catch (e) { // (out of its loop) it never re-enters: the other threads run its share
      stopped = true;
      p.post({ lost: true, error: `installing a generated module failed: ${e && e.message ? e.message : e}` });
      return;
    }
    installed = msg.gen | 0;
    if (((ex.tpw_pool_jit_gen() - installed) | 0) > 0) return; // more messages to come
  }
  enter();
});
