// Type declarations of tensorplay-wasm (js/index.js).

export type DType = 'float32' | 'int32' | 'int64' | 'bool';
/** Accepted dtype spellings: the names above and 'f32' | 'i32' | 'i64' | 'b8'. */
export type DTypeLike = DType | 'f32' | 'i32' | 'i64' | 'b8';
export type Shape = readonly number[];
/** A Tensor, or a JS number used as a weak scalar (follows the other operand's dtype). */
export type Operand = Tensor | number | boolean;
export type TypedArrayFor<D extends DType> = D extends 'float32'
  ? Float32Array
  : D extends 'int32'
    ? Int32Array
    : D extends 'int64'
      ? BigInt64Array
      : Uint8Array;
export type AnyTypedArray = Float32Array | Int32Array | BigInt64Array | Uint8Array;
export type NestedData =
  | number
  | boolean
  | bigint
  | ArrayLike<number>
  | BigInt64Array
  | NestedData[];

export interface ReduceOptions {
  /** Dims to reduce (negative counts from the end). Omitted: all dims. */
  dim?: number | number[];
  keepdim?: boolean;
}
export type ReduceArg = ReduceOptions | number | number[];

export declare class Tensor {
  private constructor();
  /** Wraps a raw core handle the Tensor then owns (tests and internals). */
  static _fromHandle(handle: number): Tensor;
  /** The core handle; throws DisposedError after dispose(). */
  readonly handle: number;
  readonly disposed: boolean;
  readonly shape: number[];
  readonly dtype: DType;
  /** Number of elements. */
  readonly size: number;
  readonly ndim: number;

  /** A copy of the elements in C order. */
  toArray(): AnyTypedArray;
  /** Nested JS arrays (bigint for int64, boolean for bool). */
  toList(): any;
  /** The value of a one-element tensor (boolean for bool tensors). */
  item(): number | boolean;
  /** Frees the handle. Idempotent; later use throws DisposedError. */
  dispose(): void;
  toString(): string;

  add(b: Operand): Tensor;
  sub(b: Operand): Tensor;
  mul(b: Operand): Tensor;
  div(b: Operand): Tensor;
  eq(b: Operand): Tensor;
  lt(b: Operand): Tensor;
  gt(b: Operand): Tensor;
  /** torch style: x.where(cond, y) = where(cond, x, y). */
  where(cond: Tensor, other: Operand): Tensor;
  neg(): Tensor;
  abs(): Tensor;
  exp(): Tensor;
  log(): Tensor;
  sqrt(): Tensor;
  rsqrt(): Tensor;
  tanh(): Tensor;
  sigmoid(): Tensor;
  relu(): Tensor;
  gelu(options?: { approximate?: 'none' | 'tanh' }): Tensor;
  matmul(b: Tensor): Tensor;
  /** x @ w^T + b; w is [out, in]. */
  linear(w: Tensor, b?: Tensor | null): Tensor;
  sum(options?: ReduceArg): Tensor;
  mean(options?: ReduceArg): Tensor;
  max(options?: ReduceArg): Tensor;
  min(options?: ReduceArg): Tensor;
  softmax(dim?: number): Tensor;
  logSoftmax(dim?: number): Tensor;
  layerNorm(
    normalizedShape: number | Shape,
    weight?: Tensor | null,
    bias?: Tensor | null,
    options?: { eps?: number },
  ): Tensor;
  reshape(shape: Shape): Tensor;
  reshape(...shape: number[]): Tensor;
  transpose(dim0: number, dim1: number): Tensor;
  permute(perm: Shape): Tensor;
  permute(...perm: number[]): Tensor;
  /** Python slicing rules; end omitted or null: to the end. */
  slice(dim: number, start?: number | null, end?: number | null, step?: number | null): Tensor;
  cast(dtype: DTypeLike): Tensor;
}

export declare const DTYPES: readonly DType[];

// ---- creation ----
export interface TensorOptions {
  dtype?: DTypeLike;
  /** Reshape flat data to this shape. */
  shape?: Shape;
}
export declare function tensor(data: NestedData | Tensor, options?: TensorOptions): Tensor;
export declare function zeros(shape: number | Shape, options?: { dtype?: DTypeLike }): Tensor;
export declare function ones(shape: number | Shape, options?: { dtype?: DTypeLike }): Tensor;
export declare function full(shape: number | Shape, value: number, options?: { dtype?: DTypeLike }): Tensor;
/** arange(end) | arange(start, end, step?); default dtype float32. */
export declare function arange(end: number, options?: { dtype?: DTypeLike }): Tensor;
export declare function arange(start: number, end: number, options?: { dtype?: DTypeLike }): Tensor;
export declare function arange(start: number, end: number, step: number, options?: { dtype?: DTypeLike }): Tensor;
/** Standard normal float32; seed defaults to a counter. */
export declare function randn(shape: number | Shape, options?: { seed?: number | bigint }): Tensor;
/** Uniform [0, 1) float32. */
export declare function rand(shape: number | Shape, options?: { seed?: number | bigint }): Tensor;
/** A 0-d weak scalar tensor. */
export declare function scalar(value: number | boolean): Tensor;

// ---- operators ----
export declare function add(a: Operand, b: Operand): Tensor;
export declare function sub(a: Operand, b: Operand): Tensor;
export declare function mul(a: Operand, b: Operand): Tensor;
export declare function div(a: Operand, b: Operand): Tensor;
export declare function eq(a: Operand, b: Operand): Tensor;
export declare function lt(a: Operand, b: Operand): Tensor;
export declare function gt(a: Operand, b: Operand): Tensor;
export declare function where(cond: Tensor, a: Operand, b: Operand): Tensor;
export declare function neg(a: Tensor): Tensor;
export declare function abs(a: Tensor): Tensor;
export declare function exp(a: Tensor): Tensor;
export declare function log(a: Tensor): Tensor;
export declare function sqrt(a: Tensor): Tensor;
export declare function rsqrt(a: Tensor): Tensor;
export declare function tanh(a: Tensor): Tensor;
export declare function sigmoid(a: Tensor): Tensor;
export declare function relu(a: Tensor): Tensor;
export declare function gelu(a: Tensor, options?: { approximate?: 'none' | 'tanh' }): Tensor;
export declare function matmul(a: Tensor, b: Tensor): Tensor;
export declare function linear(x: Tensor, w: Tensor, b?: Tensor | null): Tensor;
export declare function sum(a: Tensor, options?: ReduceArg): Tensor;
export declare function mean(a: Tensor, options?: ReduceArg): Tensor;
export declare function max(a: Tensor, options?: ReduceArg): Tensor;
export declare function min(a: Tensor, options?: ReduceArg): Tensor;
export declare function softmax(a: Tensor, dim?: number): Tensor;
export declare function logSoftmax(a: Tensor, dim?: number): Tensor;
export declare function layerNorm(
  x: Tensor,
  normalizedShape: number | Shape,
  weight?: Tensor | null,
  bias?: Tensor | null,
  options?: { eps?: number },
): Tensor;
export declare function reshape(a: Tensor, shape: Shape): Tensor;
export declare function reshape(a: Tensor, ...shape: number[]): Tensor;
export declare function transpose(a: Tensor, dim0: number, dim1: number): Tensor;
export declare function permute(a: Tensor, perm: Shape): Tensor;
export declare function permute(a: Tensor, ...perm: number[]): Tensor;
export declare function slice(a: Tensor, dim: number, start?: number | null, end?: number | null, step?: number | null): Tensor;
export declare function concat(tensors: Tensor[], dim?: number): Tensor;
export declare function cast(a: Tensor, dtype: DTypeLike): Tensor;

export declare const ops: Readonly<{
  add: typeof add; sub: typeof sub; mul: typeof mul; div: typeof div;
  eq: typeof eq; lt: typeof lt; gt: typeof gt; where: typeof where;
  neg: typeof neg; abs: typeof abs; exp: typeof exp; log: typeof log;
  sqrt: typeof sqrt; rsqrt: typeof rsqrt; tanh: typeof tanh; sigmoid: typeof sigmoid;
  relu: typeof relu; gelu: typeof gelu; matmul: typeof matmul; linear: typeof linear;
  sum: typeof sum; mean: typeof mean; max: typeof max; min: typeof min;
  softmax: typeof softmax; logSoftmax: typeof logSoftmax; layerNorm: typeof layerNorm;
  reshape: typeof reshape; transpose: typeof transpose; permute: typeof permute;
  slice: typeof slice; concat: typeof concat; cast: typeof cast;
}>;

// ---- memory ----
/**
 * Runs fn (synchronously) and disposes every tensor created during it except
 * those reachable from its return value, which move to the enclosing scope.
 */
export declare function scope<T>(fn: () => T): T;
/** Number of live tensors in the core. */
export declare function liveTensors(): number;
/** Current size of the core's linear memory in bytes. */
export declare function memoryBytes(): number;

// ---- compiler ----
export interface CompileOptions {
  /** A graph break throws GraphCaptureError instead of falling back. */
  fullgraph?: boolean;
  dynamic?: boolean | null;
  /** Backend name: 'eager', 'stax' (default: the core's default). */
  backend?: string;
  /** Accepted and stored; not used yet. */
  mode?: string | null;
  /** Accepted and stored; not used yet. */
  options?: Record<string, unknown> | null;
  name?: string;
  /** Placeholder names in the graph text (default: fn's parameter names when plain identifiers, else x0, x1, ...). */
  inputNames?: string[];
  disable?: boolean;
  /** Accepted and stored; not used yet. */
  recompileLimit?: number | null;
  isolateRecompiles?: boolean;
  strictNative?: boolean;
  dynamicShapes?: boolean | null;
}
export type TensorTree = Tensor | number | string | boolean | null | undefined | TensorTree[] | { [key: string]: TensorTree };

export interface CompiledFunction<F extends (...args: Tensor[]) => any> {
  (...args: Parameters<F>): ReturnType<F>;
  readonly name: string;
  /** Number of captures done so far. */
  readonly numCaptures: number;
  /** Number of cached specializations. */
  readonly numEntries: number;
  readonly options: Readonly<CompileOptions>;
  readonly original: F;
  /** Text of the last captured graph; null if none or after a graph break. */
  graph(options?: { withData?: boolean }): string | null;
  dispose(): void;
}

export declare function compile<F extends (...args: Tensor[]) => TensorTree>(fn: F, options?: CompileOptions): CompiledFunction<F>;
export declare function compile(options: CompileOptions): <F extends (...args: Tensor[]) => TensorTree>(fn: F) => CompiledFunction<F>;
export declare function isCompiling(): boolean;
export declare const compiler: Readonly<{ compile: typeof compile; isCompiling: typeof isCompiling }>;

// ---- graphs ----
export declare class Graph {
  private constructor();
  readonly handle: number;
  run(inputs?: Tensor[]): Tensor[];
  print(options?: { withData?: boolean }): string;
  dispose(): void;
}
export declare const graph: Readonly<{
  parse(text: string): Graph;
  run(graph: Graph | number, inputs?: Tensor[]): Tensor[];
  print(graph: Graph | number, options?: { withData?: boolean }): string;
  free(graph: Graph | number): void;
  Graph: typeof Graph;
}>;

// ---- npy ----
export declare const npy: Readonly<{
  decode(bytes: Uint8Array | ArrayBuffer | ArrayBufferView): Tensor;
  encode(t: Tensor): Uint8Array;
}>;

// ---- errors ----
export type StatusName =
  | 'OK' | 'INVALID_ARG' | 'UNSUPPORTED' | 'OUT_OF_MEMORY' | 'CAPTURE'
  | 'PARSE' | 'IO' | 'DISPOSED' | 'HOST' | 'INTERNAL';
export declare const STATUS_NAMES: readonly StatusName[];
export declare const Status: Readonly<Record<StatusName, number>>;
export declare class TensorPlayError extends Error {
  constructor(message: string, code?: number, options?: ErrorOptions);
  /** tp_status code. */
  readonly code: number;
  /** tp_status name. */
  readonly status: StatusName | string;
}
export declare class GraphCaptureError extends TensorPlayError {
  constructor(message: string, options?: ErrorOptions);
}
export declare class DisposedError extends TensorPlayError {
  constructor(message?: string, options?: ErrorOptions);
}
/** Thrown when the core calls proc_exit. */
export declare class WasiExit extends Error {
  readonly code: number;
}
export declare const errors: Readonly<{
  TensorPlayError: typeof TensorPlayError;
  GraphCaptureError: typeof GraphCaptureError;
  DisposedError: typeof DisposedError;
  STATUS_NAMES: typeof STATUS_NAMES;
  Status: typeof Status;
  errorFromStatus(code: number, message: string): TensorPlayError;
}>;

// ---- info ----
/** Core version, e.g. "0.1.0". */
export declare const version: string;
/** Kernel ISA of the core, e.g. "wasm-simd128". */
export declare const isa: string;
/** Operator names of the core (ops.def order). */
export declare const opNames: readonly string[];
