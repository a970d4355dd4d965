// pool_worker.js - one worker of the Wasm core's thread pool (threads.js
// starts it; Node worker_threads or a module Web Worker). It receives the
// compiled threads core and its shared memory, instantiates the module over
// that memory (the main instance has already run the constructors and
// initialized the data segments), sets its own stack and thread block,
// initializes its TLS, says it is ready and enters the pool's loop,
// tpw_pool_worker(slot), which never returns. The pool's tasks are the
// core's own kernels: they call no host import (the tp_host_* imports
// throw here).
import { emscriptenImports } from './threads.js';

const isNode =
  typeof process !== 'undefined' && process.versions != null && typeof process.versions.node === 'string';

async function port() {
  if (!isNode) {
    return { on: (f) => { self.onmessage = (e) => f(e.data); }, post: (m) => self.postMessage(m) };
  }
  const wtModule = 'node:worker_threads';
  const wt = await import(/* webpackIgnore: true */ /* @vite-ignore */ wtModule);
  return { on: (f) => wt.parentPort.once('message', f), post: (m) => wt.parentPort.postMessage(m) };
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

const p = await port();
p.on((msg) => {
  let ex;
  try {
    ex = start(msg);
  } catch (e) {
    p.post({ error: String(e && e.message ? e.message : e) });
    return;
  }
  p.post({ ready: true });
  const r = ex.tpw_pool_worker(msg.slot); // the pool's loop: returns only for a bad slot
  p.post({ error: `the pool's loop returned ${r} (slot ${msg.slot})` });
});
