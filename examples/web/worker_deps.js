// worker_deps.js - what worker.js needs before its first result (the package,
// models.js, stats.js), as one module: in examples/web/dist, worker.js's
// bundle (scripts/bundle.mjs) imports it as one chunk of its own, one
// request, which Chromium's code cache then serves compiled (the worker's
// own script gets no code cache there: a trace showed it parsed on every
// load). worker.js itself imports the three files (below) when it runs
// unbundled.
export * as tp from '../../js/index.js';
export { MODELS, summarize } from './models.js';
export { measure } from './stats.js';
