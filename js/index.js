// tensorplay-wasm: the package entry. Loads the Wasm core (top-level await)
// and re-exports the API. In Node, TP_WASM selects another core file.

import { loadCore } from './src/loader.js';
import { bindCore } from './src/tensor.js';
import { bindCompiler } from './src/compiler.js';
import * as E from './src/errors.js';
import { compiler } from './src/compiler.js';
// Modules that are otherwise only imported by the ones above: named here so
// that a browser finds every file of the package in one round of requests
// instead of one round per level of the import graph.
import './src/host.js';
import './src/structure.js';
import './src/jit.js';
import './src/ops.js';
import './src/ops_gen.js';
import './src/autograd.js';
import './src/nn.js';
import './src/control.js';

// globalThis.tensorplayWasm, when set before this module is imported: where
// the core comes from (a URL or path, bytes, a WebAssembly.Module, or a
// Promise of any of these). A page or worker can start fetching and compiling
// the core, e.g. with WebAssembly.compileStreaming(fetch(url)), before the
// browser has loaded this package's modules (docs/web.md).
const core = await loadCore(await globalThis.tensorplayWasm);
bindCore(core);
bindCompiler(core);

export { Tensor, DTYPES, scope, liveTensors, memoryStats } from './src/tensor.js';
export { tensor, zeros, ones, full, arange, randn, rand, scalar } from './src/creation.js';
export { float16ToFloat32, float32ToFloat16, bfloat16ToFloat32, float32ToBfloat16 } from './src/half.js';
export { quantization } from './src/quantization.js';
// Every operator (add, ..., floor, erf, conv2d) and `ops`: generated from
// src/ops/ops.def by scripts/gen-ops.mjs, so this file lists none.
export * from './src/ops_gen.js';
export { topk } from './src/ops.js';
export { noGrad, enableGrad, isGradEnabled, grad, valueAndGrad } from './src/autograd.js';
export { nn, optim } from './src/nn.js';
export { cond, whileLoop } from './src/control.js';
export { compiler, compile, isCompiling, explain, reset } from './src/compiler.js';
export { config } from './src/config.js';
export {
  allowInGraph,
  disallowInGraph,
  nonstrictTrace,
  disable,
  assumeConstantResult,
  substituteInGraph,
  nestedCompileRegion,
  NestedCompileRegionOptions,
  markStatic,
  exportFn,
  exportFn as export,
  unused,
  overloadMethod,
  isExporting,
  disableCapture,
  Final,
  annotate,
  isinstance,
} from './src/frontend.js';
export {
  registerBackend,
  registerDebugBackend,
  registerExperimentalBackend,
  unregisterBackend,
  listBackends,
  lookupBackend,
  setDefaultBackend,
  getDefaultBackend,
  getBackendCapabilities,
  declaresCapabilities,
  listModeOptions,
  BackendCapabilities,
} from './src/backends.js';
export { graph, Graph } from './src/graph.js';
export { npy } from './src/npy.js';
export { onnx } from './src/onnx.js';
export {
  TensorPlayError,
  GraphCaptureError,
  DisposedError,
  ValueError,
  RuntimeError,
  AssertionError,
  InvalidBackend,
  STATUS_NAMES,
  Status,
} from './src/errors.js';
export { WasiExit } from './src/loader.js';

/** The error classes and status names. */
export const errors = Object.freeze({
  TensorPlayError: E.TensorPlayError,
  GraphCaptureError: E.GraphCaptureError,
  DisposedError: E.DisposedError,
  ValueError: E.ValueError,
  RuntimeError: E.RuntimeError,
  AssertionError: E.AssertionError,
  InvalidBackend: E.InvalidBackend,
  STATUS_NAMES: E.STATUS_NAMES,
  Status: E.Status,
  errorFromStatus: E.errorFromStatus,
});

/** Version string of the core ("0.1.0"). */
export const version = core.readCString(core.exports.tpw_version());

/** Kernel ISA of the core ("wasm-simd128", "scalar"). */
export const isa = core.readCString(core.exports.tpw_isa());

/**
 * Resolves when the Wasm threads core's workers run (at once with the
 * one-thread core, and in Node, where loading waits for them; in a page they
 * start in parallel with it, docs/build.md "Threads in Wasm").
 */
export const threadsReady = core.threadsReady ?? Promise.resolve();

/** Current size of the core's linear memory in bytes. */
export function memoryBytes() {
  return core.memory.buffer.byteLength;
}

/** The backend contract version of this core (1). */
export const CORE_BACKEND_CONTRACT_VERSION = compiler.CORE_BACKEND_CONTRACT_VERSION;

/** Names of the operators the core provides (from ops.def, in order). */
export const opNames = Object.freeze(core.opNames.slice());
