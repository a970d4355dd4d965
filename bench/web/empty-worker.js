// bench/web/empty-worker.js: the worker of empty-worker.html (no imports).
self.postMessage(0);
