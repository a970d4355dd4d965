// Type declarations of tensorplay-wasm (js/index.js).

export type DType = 'float32' | 'int32' | 'int64' | 'bool' | 'float16' | 'bfloat16' | 'int8' | 'uint8';
/** Accepted dtype spellings: the names above and 'f32' | 'i32' | 'i64' | 'b8' | 'f16' | 'bf16' | 'i8' | 'u8'. */
export type DTypeLike = DType | 'f32' | 'i32' | 'i64' | 'b8' | 'f16' | 'bf16' | 'i8' | 'u8';
export type Shape = readonly number[];
/** A Tensor, or a JS scalar (weak: follows the other operand's dtype); whole numbers, bigints (exactly a double) and booleans are integer scalars (docs/reliability.md). */
export type Operand = Tensor | number | boolean | bigint;
export type TypedArrayFor<D extends DType> = D extends 'float32'
  ? Float32Array
  : D extends 'int32'
    ? Int32Array
    : D extends 'int64'
      ? BigInt64Array
      : D extends 'float16' | 'bfloat16'
        ? Uint16Array
        : D extends 'int8'
          ? Int8Array
          : Uint8Array;
/** float16/bfloat16 elements are Uint16Array bit patterns (float16ToFloat32 converts). */
export type AnyTypedArray = Float32Array | Int32Array | BigInt64Array | Uint8Array | Uint16Array | Int8Array;
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
  /**
   * Copies the elements in C order into `out` and returns it: `out` must be
   * the tensor's array type (Float32Array for float32, Int32Array, BigInt64Array,
   * Uint8Array for bool) with exactly `size` elements (TypeError / INVALID_ARG
   * otherwise). Allocates nothing per call: reuse one buffer across calls.
   */
  toArray<T extends AnyTypedArray>(out: T): T;
  /** Nested JS arrays (bigint for int64, boolean for bool). */
  toList(): any;
  /** The value of a one-element tensor: bool a boolean; int64 a number, or a bigint past 2^53 (exact). */
  item(): number | boolean | bigint;
  /** Frees the handle. Idempotent; later use throws DisposedError. */
  dispose(): void;
  toString(): string;

  // autograd (js/src/autograd.js, docs/training.md)
  /** Whether ops on this tensor are recorded for backward(); only float32 tensors can (a leaf may be set; a recorded result cannot be cleared). */
  requiresGrad: boolean;
  /** Sets requiresGrad and returns this tensor. */
  requiresGrad_(requiresGrad?: boolean): this;
  /** The accumulated gradient (a new Tensor per read) or null; null clears it. */
  grad: Tensor | null;
  /** True when no recorded op made this tensor. */
  readonly isLeaf: boolean;
  /** The storage's version; in-place writes (assign) bump it. */
  readonly version: number;
  /** Accumulates d(this)/d(leaf) into each leaf's grad; grad is required unless this has one element. */
  backward(grad?: Tensor | null, options?: { retainGraph?: boolean }): void;
  /** A leaf sharing this tensor's storage that requires no grad. */
  detach(): Tensor;
  /** In place: copy src (same shape) into this tensor; bumps version. Refused on a leaf that requires grad (outside noGrad). */
  assign(src: Tensor): this;

  // BEGIN generated ops (scripts/gen-ops.mjs from src/ops/ops.def; do not edit)
  add(b: Operand): Tensor;
  sub(b: Operand): Tensor;
  mul(b: Operand): Tensor;
  div(b: Operand): Tensor;
  eq(b: Operand): Tensor;
  lt(b: Operand): Tensor;
  gt(b: Operand): Tensor;
  neg(): Tensor;
  abs(): Tensor;
  exp(): Tensor;
  log(): Tensor;
  sqrt(): Tensor;
  rsqrt(): Tensor;
  tanh(): Tensor;
  sigmoid(): Tensor;
  relu(): Tensor;
  matmul(b: Tensor): Tensor;
  floor(): Tensor;
  ceil(): Tensor;
  round(): Tensor;
  erf(): Tensor;
  sin(): Tensor;
  cos(): Tensor;
  tan(): Tensor;
  asin(): Tensor;
  acos(): Tensor;
  atan(): Tensor;
  sinh(): Tensor;
  cosh(): Tensor;
  asinh(): Tensor;
  acosh(): Tensor;
  atanh(): Tensor;
  mod(b: Operand): Tensor;
  fmod(b: Operand): Tensor;
  bitwiseAnd(b: Operand): Tensor;
  bitwiseOr(b: Operand): Tensor;
  bitwiseXor(b: Operand): Tensor;
  bitwiseNot(): Tensor;
  det(): Tensor;
  // END generated ops
  /** torch style: x.where(cond, y) = where(cond, x, y). */
  where(cond: Tensor, other: Operand): Tensor;
  gelu(options?: { approximate?: 'none' | 'tanh' }): Tensor;
  /** x @ w^T + b; w is [out, in]. */
  linear(w: Tensor, b?: Tensor | null): Tensor;
  /** 2-D convolution of this [N, C, H, W] tensor; see {@link conv2d}. */
  conv2d(weight: Tensor, bias?: Tensor | null | Conv2dOptions, options?: Conv2dOptions): Tensor;
  /** 2-D max pooling of this [N, C, H, W] tensor; see {@link maxPool2d}. */
  maxPool2d(kernelSize: number | [number, number], options?: Pool2dOptions): Tensor;
  /** 2-D average pooling of this [N, C, H, W] tensor; see {@link avgPool2d}. */
  avgPool2d(kernelSize: number | [number, number], options?: Pool2dOptions & { countIncludePad?: boolean }): Tensor;
  /** samples this [N, C, H, W] tensor at a grid; see {@link gridSample}. */
  gridSample(grid: Tensor, options?: GridSampleOptions): Tensor;
  sum(options?: ReduceArg): Tensor;
  mean(options?: ReduceArg): Tensor;
  max(options?: ReduceArg): Tensor;
  min(options?: ReduceArg): Tensor;
  softmax(dim?: number): Tensor;
  gather(indices: Tensor, dim?: number): Tensor;
  gatherElements(indices: Tensor, dim: number): Tensor;
  gatherND(indices: Tensor, options?: { batchDims?: number }): Tensor;
  argtopk(k: number, options?: { dim?: number; largest?: boolean }): Tensor;
  scatterElements(indices: Tensor, updates: Tensor, dim: number, options?: { reduction?: ScatterReduction }): Tensor;
  scatterND(indices: Tensor, updates: Tensor, options?: { reduction?: ScatterReduction }): Tensor;
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
  /** the same bytes as dtype (same element size) */
  bitcast(dtype: DTypeLike): Tensor;
  quantize(scale: number | Tensor, zeroPoint?: number | Tensor | null, options?: QuantizeOptions): Tensor;
  dequantize(scale: number | Tensor, zeroPoint?: number | Tensor | null, options?: { axis?: number }): Tensor;
  /** (this - aZeroPoint) @ (b - bZeroPoint), int32 (ONNX MatMulInteger). */
  matmulInt(b: Tensor, aZeroPoint?: number | Tensor | null, bZeroPoint?: number | Tensor | null): Tensor;
}

export declare const DTYPES: readonly DType[];
/** float16 bit patterns -> numbers (round trip exact); one number gives one number. */
export declare function float16ToFloat32(bits: ArrayLike<number>): Float32Array;
export declare function float16ToFloat32(bits: number): number;
/** numbers -> float16 bit patterns: round to nearest even, overflow to +-Infinity, NaN kept. */
export declare function float32ToFloat16(values: ArrayLike<number>): Uint16Array;
export declare function float32ToFloat16(values: number): number;
export declare function bfloat16ToFloat32(bits: ArrayLike<number>): Float32Array;
export declare function bfloat16ToFloat32(bits: number): number;
export declare function float32ToBfloat16(values: ArrayLike<number>): Uint16Array;
export declare function float32ToBfloat16(values: number): number;

// ---- creation ----
export interface TensorOptions {
  dtype?: DTypeLike;
  /** Reshape flat data to this shape. */
  shape?: Shape;
}
export declare function tensor(data: NestedData | Tensor, options?: TensorOptions): Tensor;
export declare function zeros(shape: number | Shape, options?: { dtype?: DTypeLike }): Tensor;
export declare function ones(shape: number | Shape, options?: { dtype?: DTypeLike }): Tensor;
export declare function full(shape: number | Shape, value: number | boolean | bigint, options?: { dtype?: DTypeLike }): Tensor;
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
// BEGIN generated ops (scripts/gen-ops.mjs from src/ops/ops.def; do not edit)
export declare function add(a: Operand, b: Operand): Tensor;
export declare function sub(a: Operand, b: Operand): Tensor;
export declare function mul(a: Operand, b: Operand): Tensor;
export declare function div(a: Operand, b: Operand): Tensor;
export declare function eq(a: Operand, b: Operand): Tensor;
export declare function lt(a: Operand, b: Operand): Tensor;
export declare function gt(a: Operand, b: Operand): Tensor;
export declare function neg(a: Tensor): Tensor;
export declare function abs(a: Tensor): Tensor;
export declare function exp(a: Tensor): Tensor;
export declare function log(a: Tensor): Tensor;
export declare function sqrt(a: Tensor): Tensor;
export declare function rsqrt(a: Tensor): Tensor;
export declare function tanh(a: Tensor): Tensor;
export declare function sigmoid(a: Tensor): Tensor;
export declare function relu(a: Tensor): Tensor;
export declare function matmul(a: Tensor, b: Tensor): Tensor;
export declare function floor(a: Tensor): Tensor;
export declare function ceil(a: Tensor): Tensor;
export declare function round(a: Tensor): Tensor;
export declare function erf(a: Tensor): Tensor;
export declare function sin(a: Tensor): Tensor;
export declare function cos(a: Tensor): Tensor;
export declare function tan(a: Tensor): Tensor;
export declare function asin(a: Tensor): Tensor;
export declare function acos(a: Tensor): Tensor;
export declare function atan(a: Tensor): Tensor;
export declare function sinh(a: Tensor): Tensor;
export declare function cosh(a: Tensor): Tensor;
export declare function asinh(a: Tensor): Tensor;
export declare function acosh(a: Tensor): Tensor;
export declare function atanh(a: Tensor): Tensor;
export declare function mod(a: Operand, b: Operand): Tensor;
export declare function fmod(a: Operand, b: Operand): Tensor;
export declare function bitwiseAnd(a: Operand, b: Operand): Tensor;
export declare function bitwiseOr(a: Operand, b: Operand): Tensor;
export declare function bitwiseXor(a: Operand, b: Operand): Tensor;
export declare function bitwiseNot(a: Tensor): Tensor;
export declare function det(a: Tensor): Tensor;
/** Every operator by its JS name. */
export declare const ops: Readonly<{
  add: typeof add;
  sub: typeof sub;
  mul: typeof mul;
  div: typeof div;
  eq: typeof eq;
  lt: typeof lt;
  gt: typeof gt;
  where: typeof where;
  neg: typeof neg;
  abs: typeof abs;
  exp: typeof exp;
  log: typeof log;
  sqrt: typeof sqrt;
  rsqrt: typeof rsqrt;
  tanh: typeof tanh;
  sigmoid: typeof sigmoid;
  relu: typeof relu;
  gelu: typeof gelu;
  matmul: typeof matmul;
  linear: typeof linear;
  sum: typeof sum;
  mean: typeof mean;
  max: typeof max;
  min: typeof min;
  softmax: typeof softmax;
  logSoftmax: typeof logSoftmax;
  layerNorm: typeof layerNorm;
  reshape: typeof reshape;
  transpose: typeof transpose;
  permute: typeof permute;
  slice: typeof slice;
  concat: typeof concat;
  rnn: typeof rnn;
  gru: typeof gru;
  lstm: typeof lstm;
  gather: typeof gather;
  gatherElements: typeof gatherElements;
  gatherND: typeof gatherND;
  argtopk: typeof argtopk;
  scatterElements: typeof scatterElements;
  scatterND: typeof scatterND;
  cast: typeof cast;
  bitcast: typeof bitcast;
  floor: typeof floor;
  ceil: typeof ceil;
  round: typeof round;
  erf: typeof erf;
  sin: typeof sin;
  cos: typeof cos;
  tan: typeof tan;
  asin: typeof asin;
  acos: typeof acos;
  atan: typeof atan;
  sinh: typeof sinh;
  cosh: typeof cosh;
  asinh: typeof asinh;
  acosh: typeof acosh;
  atanh: typeof atanh;
  mod: typeof mod;
  fmod: typeof fmod;
  bitwiseAnd: typeof bitwiseAnd;
  bitwiseOr: typeof bitwiseOr;
  bitwiseXor: typeof bitwiseXor;
  bitwiseNot: typeof bitwiseNot;
  det: typeof det;
  conv2d: typeof conv2d;
  maxPool2d: typeof maxPool2d;
  avgPool2d: typeof avgPool2d;
  gridSample: typeof gridSample;
  roiAlign: typeof roiAlign;
  quantize: typeof quantize;
  dequantize: typeof dequantize;
  matmulInt: typeof matmulInt;
  qmatmul: typeof qmatmul;
  conv2dInt: typeof conv2dInt;
  qconv2d: typeof qconv2d;
}>;
// END generated ops
export declare function where(cond: Tensor, a: Operand, b: Operand): Tensor;
export declare function gelu(a: Tensor, options?: { approximate?: 'none' | 'tanh' }): Tensor;
export declare function linear(x: Tensor, w: Tensor, b?: Tensor | null): Tensor;
/** Window options of conv2d. */
export interface Conv2dOptions {
  /** an integer or [h, w]; default 1 */
  stride?: number | [number, number];
  /** an integer, [h, w], [top, left, bottom, right], 'valid' (0) or 'same' (stride 1 only); default 0 */
  padding?: number | [number, number] | [number, number, number, number] | 'valid' | 'same';
  /** an integer or [h, w]; default 1 */
  dilation?: number | [number, number];
  /** default 1; C and M must be multiples of it (groups = C: depthwise) */
  groups?: number;
}
/** Window options of maxPool2d and avgPool2d. */
export interface Pool2dOptions {
  /** a number or [h, w]; default: the kernel size */
  stride?: number | [number, number];
  /** a number, [h, w] or [top, left, bottom, right]; each smaller than the kernel; default 0 */
  padding?: number | [number, number] | [number, number, number, number];
}
/** 2-D max pooling, NCHW; padding never wins. */
export declare function maxPool2d(x: Tensor, kernelSize: number | [number, number], options?: Pool2dOptions): Tensor;
/** 2-D average pooling, NCHW; countIncludePad (default true, as PyTorch) divides by the kernel size, else by the input elements in each window. */
export declare function avgPool2d(x: Tensor, kernelSize: number | [number, number], options?: Pool2dOptions & { countIncludePad?: boolean }): Tensor;
/** ONNX RoiAlign: x [N, C, H, W], rois [R, 4] (x1, y1, x2, y2), batchIndices [R] int32/int64 -> [R, C, outputHeight, outputWidth]; samplingRatio 0 is adaptive; halfPixel false is ONNX's output_half_pixel. */
export declare function roiAlign(x: Tensor, rois: Tensor, batchIndices: Tensor, options?: {
  outputHeight?: number; outputWidth?: number; samplingRatio?: number; spatialScale?: number; mode?: 'avg' | 'max'; halfPixel?: boolean;
}): Tensor;
/** Options of gridSample (torch.nn.functional.grid_sample's names). */
export interface GridSampleOptions {
  /** default 'bilinear' */
  mode?: 'bilinear' | 'nearest' | 'bicubic';
  /** what a position outside x reads; default 'zeros' */
  paddingMode?: 'zeros' | 'border' | 'reflection';
  /** -1 and 1 are the corner pixels' centers (true) or their outer edges (false, the default) */
  alignCorners?: boolean;
}
/** ONNX GridSample: x [N, C, H, W] (or [N, C, D, H, W]) read at grid [N, oH, oW, 2] (or [N, oD, oH, oW, 3]) of normalized (x, y[, z]); the result is [N, C, oH, oW] (or [N, C, oD, oH, oW]). */
export declare function gridSample(x: Tensor, grid: Tensor, options?: GridSampleOptions): Tensor;
/** 2-D convolution, NCHW: x [N, C, H, W], weight [M, C/groups, KH, KW], bias [M]. */
export declare function conv2d(x: Tensor, weight: Tensor, bias?: Tensor | null | Conv2dOptions, options?: Conv2dOptions): Tensor;
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
/** Options of rnn / gru / lstm (ONNX RNN / GRU / LSTM semantics). */
export interface RecurrentOptions {
  bias?: Tensor | null; sequenceLens?: Tensor | null; initialH?: Tensor | null;
  initialC?: Tensor | null; peepholes?: Tensor | null;
  direction?: 'forward' | 'reverse' | 'bidirectional';
  /** ONNX's activation names, any case: Sigmoid Tanh Relu Affine LeakyRelu ThresholdedRelu ScaledTanh HardSigmoid Elu Softsign Softplus */
  activations?: string[];
  /** an alpha and a beta per activation (absent: ONNX's defaults) */
  activationParams?: number[];
  clip?: number;
  linearBeforeReset?: boolean; inputForget?: boolean;
}
/** x [seq, batch, input], w [dirs, hidden, input], r [dirs, hidden, hidden] -> y [seq, dirs, batch, hidden], h [dirs, batch, hidden]. */
export declare function rnn(x: Tensor, w: Tensor, r: Tensor, options?: RecurrentOptions): { y: Tensor; h: Tensor };
/** GRU, gates z r h: w [dirs, 3*hidden, input]. */
export declare function gru(x: Tensor, w: Tensor, r: Tensor, options?: RecurrentOptions): { y: Tensor; h: Tensor };
/** LSTM, gates i o f c: w [dirs, 4*hidden, input]; peepholes [dirs, 3*hidden]. */
export declare function lstm(x: Tensor, w: Tensor, r: Tensor, options?: RecurrentOptions): { y: Tensor; h: Tensor; c: Tensor };
/** numpy's take along dim (ONNX Gather): int32/int64 indices of any shape, negative from the end; out of range throws. */
export declare function gather(x: Tensor, indices: Tensor, dim?: number): Tensor;
/** torch.gather / ONNX GatherElements: the result has indices' shape. */
export declare function gatherElements(x: Tensor, indices: Tensor, dim: number): Tensor;
/** int64 indices of the k largest (or smallest) along dim, in order; ties: the lower index first. */
export declare function argtopk(x: Tensor, k: number, options?: { dim?: number; largest?: boolean }): Tensor;
/** ONNX TopK: the k largest (or smallest) values along dim and their indices. */
export declare function topk(x: Tensor, k: number, options?: { dim?: number; largest?: boolean }): { values: Tensor; indices: Tensor };
/** ONNX GatherND: indices [..., k] address x's dims after batchDims. */
export declare function gatherND(x: Tensor, indices: Tensor, options?: { batchDims?: number }): Tensor;
export type ScatterReduction = 'none' | 'add' | 'mul' | 'max' | 'min';
/** ONNX ScatterElements: a copy of x with updates written (or reduced) at indices along dim. */
export declare function scatterElements(x: Tensor, indices: Tensor, updates: Tensor, dim: number, options?: { reduction?: ScatterReduction }): Tensor;
/** ONNX ScatterND: indices [..., k] address x's first k dims. */
export declare function scatterND(x: Tensor, indices: Tensor, updates: Tensor, options?: { reduction?: ScatterReduction }): Tensor;
export declare function cast(a: Tensor, dtype: DTypeLike): Tensor;
/** ONNX BitCast: the same bytes read as dtype, of the same element size; to bool only from bool. */
export declare function bitcast(a: Tensor, dtype: DTypeLike): Tensor;
export interface QuantizeOptions {
  /** a 1-D scale / zero point runs along this dim of x (per channel) */
  axis?: number;
  /** the result's dtype without a zero-point tensor: 'uint8' (default) or 'int8' */
  dtype?: 'int8' | 'uint8';
}
/** ONNX QuantizeLinear: saturate(round half to even(x / scale) + zeroPoint) as int8/uint8; scales finite and > 0. */
export declare function quantize(x: Tensor, scale: number | Tensor, zeroPoint?: number | Tensor | null, options?: QuantizeOptions): Tensor;
export interface Quantized {
  q: Tensor;
  scale: Tensor;
  zeroPoint: Tensor;
}
/** A parameter container (tp.nn.Module). */
declare class NNModule {
  /** Its parameters and its children's (leaves that require grad). */
  parameters(): Tensor[];
  /** Clears every parameter's grad. */
  zeroGrad(): void;
  /** Frees the parameters. */
  dispose(): void;
  forward(x: Tensor): Tensor;
}
declare class NNLinear extends NNModule {
  constructor(inFeatures: number, outFeatures: number, options?: { bias?: boolean; seed?: number });
  readonly weight: Tensor;
  readonly bias: Tensor | null;
}
declare class NNConv2d extends NNModule {
  constructor(inChannels: number, outChannels: number, kernelSize: number | [number, number],
    options?: { stride?: number | [number, number]; padding?: number | [number, number] | [number, number, number, number] | 'valid' | 'same'; dilation?: number | [number, number]; groups?: number; bias?: boolean; seed?: number });
  readonly weight: Tensor;
  readonly bias: Tensor | null;
}
declare class NNPool2d extends NNModule {
  constructor(kernelSize: number | [number, number], options?: { stride?: number | [number, number]; padding?: number | [number, number] | [number, number, number, number]; countIncludePad?: boolean });
}
declare class NNLayerNorm extends NNModule {
  constructor(normalizedShape: number | number[], options?: { eps?: number });
  readonly weight: Tensor;
  readonly bias: Tensor;
}
declare class NNTransformerEncoderLayer extends NNModule {
  constructor(dModel: number, nHeads: number, dFF: number, options?: { seed?: number });
}
declare class NNSequential extends NNModule {
  constructor(...modules: NNModule[]);
  readonly layers: NNModule[];
}
type LossReduction = 'none' | 'mean' | 'sum';
/** Training helpers (docs/training.md). */
export declare const nn: Readonly<{
  Module: typeof NNModule;
  /** y = x @ weight^T + bias, PyTorch's uniform init. */
  Linear: typeof NNLinear;
  /** NCHW tp.conv2d with PyTorch's init. */
  Conv2d: typeof NNConv2d;
  MaxPool2d: typeof NNPool2d;
  AvgPool2d: typeof NNPool2d;
  /** [N, ...] -> [N, prod(...)] */
  Flatten: new () => NNModule;
  /** weight ones, bias zeros */
  LayerNorm: typeof NNLayerNorm;
  /** a pre-LN encoder block (self-attention, tanh-GELU FFN) on [B, S, dModel] */
  TransformerEncoderLayer: typeof NNTransformerEncoderLayer;
  ReLU: new () => NNModule;
  Tanh: new () => NNModule;
  Sigmoid: new () => NNModule;
  GELU: new () => NNModule;
  Sequential: typeof NNSequential;
  /** Linear layers of the given sizes with the activation (default 'relu') between them. */
  mlp(sizes: number[], options?: { activation?: 'relu' | 'tanh' | 'sigmoid' | 'gelu'; seed?: number }): NNSequential;
  /** (pred - target)^2, reduced (default 'mean'). */
  mseLoss(pred: Tensor, target: Tensor, options?: { reduction?: LossReduction }): Tensor;
  /** Cross-entropy from logits [N, C] and int32/int64 targets [N]. */
  crossEntropy(logits: Tensor, target: Tensor, options?: { ignoreIndex?: number; labelSmoothing?: number; reduction?: LossReduction }): Tensor;
}>;
declare class Optimizer {
  readonly params: Tensor[];
  /** Updates every parameter that has a grad: one fused in-place pass each (bumps versions). */
  step(): void;
  zeroGrad(): void;
  /** Frees the optimizer state. */
  dispose(): void;
}
/** Optimizers with PyTorch's update rules (docs/training.md). */
export declare const optim: Readonly<{
  SGD: new (params: Tensor[] | NNModule, options?: { lr?: number; momentum?: number; weightDecay?: number }) => Optimizer;
  Adam: new (params: Tensor[] | NNModule, options?: { lr?: number; betas?: [number, number]; eps?: number; weightDecay?: number }) => Optimizer;
  AdamW: new (params: Tensor[] | NNModule, options?: { lr?: number; betas?: [number, number]; eps?: number; weightDecay?: number }) => Optimizer;
}>;

/** Helpers that choose scales and zero points (docs/quantization.md). */
export declare const quantization: Readonly<{
  /** per-channel (axis, default 0) weight quantization: int8 symmetric (default) or uint8 asymmetric */
  quantizeWeight(w: Tensor, options?: { axis?: number; dtype?: 'int8' | 'uint8' }): Quantized;
  /** ONNX DynamicQuantizeLinear over all of x: uint8 */
  dynamicQuantize(x: Tensor): Quantized;
}>;
/** ONNX DequantizeLinear: (q - zeroPoint) * scale for int8/uint8/int32 q; float32 (float16 with a float16 scale). */
export declare function dequantize(q: Tensor, scale: number | Tensor, zeroPoint?: number | Tensor | null, options?: { axis?: number }): Tensor;
/** The quantized linear layer on the integer GEMM: (a - aZeroPoint) @ (b - bZeroPoint) scaled by aScale * bScale (+ bias) as float32, or requantized with yScale / yZeroPoint to int8/uint8; relu. */
export declare function qmatmul(a: Tensor, b: Tensor, options: { aScale: number | Tensor; bScale: number | Tensor; aZeroPoint?: number | Tensor | null; bZeroPoint?: number | Tensor | null; bias?: Tensor | null; yScale?: number | Tensor | null; yZeroPoint?: number | Tensor | null; yDtype?: 'int8' | 'uint8'; relu?: boolean }): Tensor;
/** (a - aZeroPoint) @ (b - bZeroPoint) with numpy matmul rules, int8/uint8/int32 operands, int32 result (ONNX MatMulInteger); zero points: one value, or one per row of a / column of b. */
export declare function matmulInt(a: Tensor, b: Tensor, aZeroPoint?: number | Tensor | null, bZeroPoint?: number | Tensor | null): Tensor;
/** ONNX ConvInteger: sum (x - xZeroPoint) (weight - wZeroPoint) over each window of int8/uint8 x and weight, int32; conv2d's window options. */
/** QLinearConv: conv2dInt with qmatmul's epilogue per output channel (scales, int32 or float32 bias, requantization, relu). */
export declare function qconv2d(x: Tensor, weight: Tensor, options: Conv2dOptions & { xScale: number | Tensor; wScale: number | Tensor; xZeroPoint?: number | Tensor | null; wZeroPoint?: number | Tensor | null; bias?: Tensor | null; yScale?: number | Tensor | null; yZeroPoint?: number | Tensor | null; yDtype?: 'int8' | 'uint8'; relu?: boolean }): Tensor;
export declare function conv2dInt(x: Tensor, weight: Tensor, options?: Conv2dOptions & { xZeroPoint?: number | Tensor | null; wZeroPoint?: number | Tensor | null }): Tensor;


// ---- memory ----
/**
 * Runs fn (synchronously) and disposes every tensor created during it except
 * those reachable from its return value, which move to the enclosing scope.
 */
export declare function scope<T>(fn: () => T): T;
/** Runs fn with grad mode off: nothing is recorded for backward(). */
/**
 * torch.cond / jax.lax.cond: thenFn(...operands) when pred (a one-value bool
 * or integer Tensor, or a boolean) is true, else elseFn(...operands). Inside
 * a compiled function both branches are traced (same structure, dtypes and
 * shapes required) and the choice is made at run time.
 */
export declare function cond<R>(pred: Tensor | boolean, thenFn: (...operands: Tensor[]) => R,
  elseFn: (...operands: Tensor[]) => R, operands?: Tensor[]): R;
/**
 * torch's while_loop: carried = init; while condFn(...carried, ...additional)
 * carried = bodyFn(...carried, ...additional). Returns the final carried values.
 */
export declare function whileLoop(condFn: (...values: Tensor[]) => Tensor,
  bodyFn: (...values: Tensor[]) => Tensor | Tensor[], init: Tensor[], additional?: Tensor[]): Tensor[];
export declare function noGrad<T>(fn: () => T): T;
/** Runs fn with grad mode on. */
export declare function enableGrad<T>(fn: () => T): T;
export declare function isGradEnabled(): boolean;
/** The gradient of fn (returning a one-element Tensor) with respect to args[argnums] (default 0; an array gives an array). */
export declare function grad(fn: (...args: any[]) => Tensor, options?: { argnums?: number }): (...args: any[]) => Tensor;
export declare function grad(fn: (...args: any[]) => Tensor, options: { argnums: number[] }): (...args: any[]) => Tensor[];
/** [fn(...args), its gradient(s)], as grad. */
export declare function valueAndGrad(fn: (...args: any[]) => Tensor, options?: { argnums?: number }): (...args: any[]) => [Tensor, Tensor];
export declare function valueAndGrad(fn: (...args: any[]) => Tensor, options: { argnums: number[] }): (...args: any[]) => [Tensor, Tensor[]];
/** Number of live tensors in the core. */
export declare function liveTensors(): number;
/** Tensor storage bytes live now, and the most live at once since the last reset (resetPeak: start the next period now). */
export declare function memoryStats(options?: { resetPeak?: boolean }): { liveBytes: number; peakBytes: number };
/** Current size of the core's linear memory in bytes. */
export declare function memoryBytes(): number;
/** Resolves when the Wasm threads core's workers run (at once otherwise; docs/build.md "Threads in Wasm"). */
export declare const threadsReady: Promise<void>;

// ---- compiler ----
export interface CompileOptions {
  /** A graph break or a specialization-limit hit throws instead of falling back. */
  fullgraph?: boolean;
  /** true: guard only ranks (plus exact shapes of inputs whose .shape was read). */
  dynamic?: boolean | null;
  /** A backend name ('stax' default, 'eager', ...) or a JS backend function. */
  backend?: string | BackendFn;
  /** 'default' | 'reduce-overhead' | 'max-autotune-no-cudagraphs' | 'max-autotune' */
  mode?: string | null;
  /** Option keys ('stax.fusion', ...) and boolean values; not together with mode. */
  options?: Record<string, boolean> | null;
  name?: string;
  /** Placeholder names in the graph text (default: fn's parameter names when plain identifiers). */
  inputNames?: string[];
  /** compile() returns fn itself. */
  disable?: boolean;
  /** Live specializations before compiling again without storing (default config.recompileLimit). */
  recompileLimit?: number | null;
  isolateRecompiles?: boolean;
  strictNative?: boolean;
  /** Only a boolean (the seed's rule); not together with dynamic. */
  dynamicShapes?: boolean | null;
}
export type TensorTree = Tensor | number | string | boolean | null | undefined | TensorTree[] | { [key: string]: TensorTree };

export interface ExplainReport {
  name: string;
  backend: string;
  dynamic: boolean;
  captures: number;
  entries: number;
  /** The thread pool: "pthreads: 2 threads (cores)" natively; the Wasm builds
   * say "single-threaded Wasm build: 1 thread" (and name an ignored setting). */
  threads: string;
  graphs: Array<{
    ops: number;
    constants: number;
    opaque_regions?: Array<{ node: string; mode: string; reason?: string }>;
    graph_break: string | null;
    shape_guards: string[];
  }>;
  /** One per specialization whose backend describes its plan (stax; null
   * for a backend without a description): kernel counts by kind, how many
   * kernels run as generated Wasm, the arena size, autotuned GEMMs, and
   * kernel_kinds: each kernel's kind; kernel_generated: whether each runs
   * as generated Wasm (false natively and until the module is installed);
   * kernel_nodes: for each kernel in run order, the names in graph()
   * (`%name`) of the captured nodes it computes (fused in); a node a
   * lowering pass rewrote (a 1x1 conv as a GEMM, a decomposed softmax) is
   * named by the captured node it came from. null when the lists would
   * not fit in 256 KiB. */
  backend_plans: Array<{
    kernels: number; pointwise: number; row: number; gemm: number; conv: number; op: number;
    generated: number; arena_bytes: number; autotuned: number;
    kernel_kinds: Array<'pointwise' | 'row' | 'gemm' | 'op'> | null;
    kernel_generated: boolean[] | null;
    kernel_nodes: string[][] | null;
  } | null>;
  recompile_reasons: string[];
  /** explain(fn, ...args) only: the text of the last graph. */
  graphText?: string | null;
}

export interface CompiledFunction<F extends (...args: any[]) => any> {
  (...args: Parameters<F>): ReturnType<F>;
  readonly name: string;
  /** Captures done so far (accumulated; reset() clears). */
  readonly numCaptures: number;
  /** Cached specializations. */
  readonly numEntries: number;
  readonly options: Readonly<CompileOptions>;
  readonly original: F;
  /** Text of the last captured graph; null if none or after a graph break. */
  graph(options?: { withData?: boolean; backward?: boolean }): string | null;
  /** One failed guard per recompile, e.g. "inputs[0].shape == (4, 8)". */
  recompileReasons(): string[];
  explain(): ExplainReport;
  /** The Wasm module stax generated for the last specialization (a copy), or null when there is none. */
  wasmModule(): Uint8Array | null;
  /** Resolves when the generated Wasm modules are installed (browsers compile large ones asynchronously). */
  readonly ready: Promise<void>;
  dispose(): void;
}

export declare function compile<F extends (...args: any[]) => TensorTree>(fn: F, options?: CompileOptions): CompiledFunction<F> | F;
/** compile, one call with the example arguments, then wait for generated modules. */
export declare function compileAsync<F extends (...args: any[]) => TensorTree>(fn: F, options?: CompileOptions, ...exampleArgs: Parameters<F>): Promise<CompiledFunction<F> | F>;
export declare function compile(options?: CompileOptions): <F extends (...args: any[]) => TensorTree>(fn: F) => CompiledFunction<F> | F;
export declare function compile(fn: undefined | null, options: CompileOptions): <F extends (...args: any[]) => TensorTree>(fn: F) => CompiledFunction<F> | F;
export declare function isCompiling(): boolean;
export declare function explain(fn: (...args: any[]) => TensorTree, ...args: any[]): ExplainReport;
export declare function reset(): void;

export interface CompilerConfig {
  assumeStaticByDefault: boolean;
  verbose: boolean;
  failOnRecompileLimitHit: boolean;
  forceDisableCaches: boolean;
  dynamicShapes: boolean | null;
  recompileLimit: number | null;
  accumulatedRecompileLimit: number;
  /** Threads that kernels split their work over natively (1..256; null: env
   * TP_NUM_THREADS, else the number of cores); checked when set (ValueError).
   * The Wasm builds are single-threaded and ignore it; explain().threads says so. */
  threads: number | null;
  reset(): void;
  keys(): string[];
  toJSON(): Record<string, unknown>;
}
export declare const config: CompilerConfig;

/** A backend: (graph, exampleInputs, opts) -> the function to run the graph. */
export type BackendFn = (
  graph: Graph,
  exampleInputs: Tensor[],
  opts: { mode?: string; options?: Record<string, boolean>; name?: string; dynamic?: boolean; strictNative?: boolean },
) => (...inputs: Tensor[]) => Tensor | Tensor[];
export declare class BackendCapabilities {
  constructor(init?: { optionalDeps?: string[]; contractVersion?: number; minCoreVersion?: string | null; maxCoreVersion?: string | null });
  readonly optionalDeps: readonly string[];
  readonly contractVersion: number;
  readonly minCoreVersion: string | null;
  readonly maxCoreVersion: string | null;
}
export interface RegisterBackendOptions {
  name?: string;
  tags?: string[];
  capabilities?: BackendCapabilities | ConstructorParameters<typeof BackendCapabilities>[0];
}
export declare function registerBackend<B extends BackendFn>(fn: B, options?: RegisterBackendOptions): B;
export declare function registerBackend(options: RegisterBackendOptions): <B extends BackendFn>(fn: B) => B;
export declare function registerDebugBackend<B extends BackendFn>(fn: B, options?: RegisterBackendOptions): B;
export declare function registerExperimentalBackend<B extends BackendFn>(fn: B, options?: RegisterBackendOptions): B;
export declare function unregisterBackend(name: string): void;
export declare function listBackends(options?: { excludeTags?: string[] | null; includeUnavailable?: boolean }): string[];
export declare function lookupBackend(backend: string | BackendFn): string | BackendFn;
export declare function setDefaultBackend(backend: string | BackendFn | null): void;
export declare function getDefaultBackend(): string;
export declare function getBackendCapabilities(backend: string | BackendFn): BackendCapabilities;
export declare function declaresCapabilities(backend: string | BackendFn): boolean;
export declare function listModeOptions(mode?: string | null): Record<string, any>;
export declare const CORE_BACKEND_CONTRACT_VERSION: number;

export type Fn = (...args: any[]) => any;
export declare class NestedCompileRegionOptions {
  constructor(init?: { fwCompiler?: BackendFn | null; bwCompiler?: BackendFn | null });
  readonly fwCompiler: BackendFn | null;
  readonly bwCompiler: BackendFn | null;
}
export interface SignatureDescriptor {
  positional?: string[];
  keywordOnly?: string[];
  /** Default values (compared as source text when read from a function). */
  defaults?: Record<string, unknown>;
  wildcard?: boolean;
}
export declare function allowInGraph<F extends Fn>(fn: F): F;
export declare function allowInGraph<F extends Fn>(fns: F[]): F[];
export declare function disallowInGraph<F extends Fn>(fn: F): F;
export declare function nonstrictTrace<F extends Fn>(fn: F): F;
export declare function disable<F extends Fn>(fn: F, options?: { recursive?: boolean; reason?: string | null } | boolean): F;
export declare function disable(options?: { recursive?: boolean; reason?: string | null }): <F extends Fn>(fn: F) => F;
export declare function assumeConstantResult<F extends Fn>(fn: F): F;
export declare function substituteInGraph<F extends Fn>(
  original: F,
  options?: { canConstantFoldThrough?: boolean; skipSignatureCheck?: boolean; signature?: SignatureDescriptor | null; replacementSignature?: SignatureDescriptor | null },
): (replacement: F) => F;
export declare function nestedCompileRegion<F extends Fn>(fn: F, options?: { options?: NestedCompileRegionOptions | null; maxReuseEntries?: number; reuseHashFn?: Fn | null }): F;
export declare function nestedCompileRegion(options?: { options?: NestedCompileRegionOptions | null; maxReuseEntries?: number; reuseHashFn?: Fn | null }): <F extends Fn>(fn: F) => F;
export declare function markStatic<T>(tensor: T, dim?: number): T;
export declare function exportFn<F extends Fn>(fn: F): F;
export declare function exportFn(): <F extends Fn>(fn: F) => F;
export { exportFn as export };
export declare function unused<F extends Fn>(fn: F): F;
export declare function overloadMethod<F extends Fn>(fn: F): F;
export declare function isExporting(): boolean;
export declare function disableCapture<T>(fn: () => T): T;
export declare const Final: (<T>(value: T) => T) & { of(type: unknown): { origin: unknown; args: unknown[] } };
export declare function annotate<T>(type: unknown, value: T): T;
export declare function isinstance(value: unknown, target: unknown): boolean;
export declare function signatureOf(fn: Fn): Required<SignatureDescriptor> | null;

export declare const compiler: Readonly<{
  compile: typeof compile;
  compileAsync: typeof compileAsync;
  config: CompilerConfig;
  reset: typeof reset;
  explain: typeof explain;
  isCompiling: typeof isCompiling;
  isExporting: typeof isExporting;
  allowInGraph: typeof allowInGraph;
  disallowInGraph: typeof disallowInGraph;
  nonstrictTrace: typeof nonstrictTrace;
  disable: typeof disable;
  assumeConstantResult: typeof assumeConstantResult;
  substituteInGraph: typeof substituteInGraph;
  nestedCompileRegion: typeof nestedCompileRegion;
  NestedCompileRegionOptions: typeof NestedCompileRegionOptions;
  markStatic: typeof markStatic;
  export: typeof exportFn;
  unused: typeof unused;
  overloadMethod: typeof overloadMethod;
  disableCapture: typeof disableCapture;
  Final: typeof Final;
  annotate: typeof annotate;
  isinstance: typeof isinstance;
  signatureOf: typeof signatureOf;
  MARKERS: Readonly<{ mode: symbol; export: symbol; unused: symbol; overload: symbol; original: symbol }>;
  registerBackend: typeof registerBackend;
  registerDebugBackend: typeof registerDebugBackend;
  registerExperimentalBackend: typeof registerExperimentalBackend;
  unregisterBackend: typeof unregisterBackend;
  listBackends: typeof listBackends;
  lookupBackend: typeof lookupBackend;
  setDefaultBackend: typeof setDefaultBackend;
  getDefaultBackend: typeof getDefaultBackend;
  getBackendCapabilities: typeof getBackendCapabilities;
  declaresCapabilities: typeof declaresCapabilities;
  listModeOptions: typeof listModeOptions;
  BackendCapabilities: typeof BackendCapabilities;
  CORE_BACKEND_CONTRACT_VERSION: number;
  InvalidBackend: typeof InvalidBackend;
  GraphCaptureError: typeof GraphCaptureError;
  ValueError: typeof ValueError;
  RuntimeError: typeof RuntimeError;
  AssertionError: typeof AssertionError;
}>;

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
  /** The Wasm module stax generates for the graph on a Wasm host. */
  emitWasm(graph: Graph | number): Uint8Array;
  free(graph: Graph | number): void;
  Graph: typeof Graph;
}>;

// ---- onnx ----
/** A graph input's declared type: dims[i] null for a dynamic dim (its dim_param in dimNames[i]); dims null for an unknown rank. */
export interface OnnxInputInfo {
  readonly name: string;
  readonly dtype: DType | 'unsupported';
  readonly dims: (number | null)[] | null;
  readonly dimNames: (string | null)[] | null;
}
/**
 * A loaded ONNX model: call it (or .run) with Tensors in inputNames order,
 * or with feeds by name ({ x: Tensor }) to get outputs by name. Inputs may
 * have dynamic dims and may set shapes: each new shape (or value of an
 * input that sets a shape) makes a specialization (docs/onnx.md, "Models").
 */
export interface OnnxModel {
  (...inputs: Tensor[]): Tensor[];
  (feeds: Record<string, Tensor>): Record<string, Tensor>;
  run(...inputs: Tensor[] | [Tensor[]]): Tensor[];
  run(feeds: Record<string, Tensor>): Record<string, Tensor>;
  readonly inputNames: string[];
  readonly outputNames: string[];
  readonly inputs: OnnxInputInfo[];
  /** The graph of the most recent specialization (owned by the model). */
  readonly graph: Graph;
  /** Dynamic dims, value inputs, specializations and why the last was made. */
  explain(): string;
  specializations(): number;
  /** At most this many specializations are kept (default 16; least recently used out). */
  setSpecializationLimit(limit: number): void;
  /**
   * Fine-tuning (docs/training.md): the named float32, float16 or bfloat16
   * initializers (default: every one whose value the import does not need as
   * a constant) become trainable parameters that require grad (float32; a
   * float16 / bfloat16 one as its float32 master copy, saved back in its
   * dtype, the model then computing in float32); runs record the tape while
   * grad mode is on. Returns parameters(). Unknown, duplicate, integer or
   * shape-setting names throw TensorPlayError naming them.
   */
  setTrainable(names?: string[]): Tensor[];
  /** The trainable parameters (shared with the model, disposed with it). */
  parameters(): Tensor[];
  namedParameters(): [string, Tensor][];
  /** The model as loaded with the trainable initializers' current values. */
  save(): Uint8Array;
  readonly disposed: boolean;
  dispose(): void;
}
export declare const onnx: Readonly<{
  /**
   * A serialized ModelProto -> a callable model (TensorPlayError PARSE /
   * UNSUPPORTED naming the node). backend: a registered backend name that
   * compiles each specialization ('stax', ...); default: run eagerly.
   */
  load(bytes: Uint8Array | ArrayBuffer | ArrayBufferView, options?: { backend?: string }): OnnxModel;
  /**
   * Traces fn on exampleInputs (fullgraph, static shapes) and returns the
   * captured graph as a serialized ModelProto (ir_version 8, opset 17).
   * Opaque regions throw TensorPlayError UNSUPPORTED naming the node;
   * disposed inputs throw DisposedError; graph breaks GraphCaptureError.
   */
  save(fn: (...args: any[]) => any, exampleInputs?: unknown[] | Tensor,
       options?: { inputNames?: string[] }): Uint8Array;
  /** A Graph as a serialized ModelProto. */
  saveGraph(graph: Graph): Uint8Array;
  /** A serialized TensorProto -> a Tensor. */
  decodeTensor(bytes: Uint8Array | ArrayBuffer | ArrayBufferView): Tensor;
}>;

// ---- npy ----
export declare const npy: Readonly<{
  decode(bytes: Uint8Array | ArrayBuffer | ArrayBufferView): Tensor;
  encode(t: Tensor): Uint8Array;
}>;

// ---- errors ----
export type StatusName =
  | 'OK' | 'INVALID_ARG' | 'UNSUPPORTED' | 'OUT_OF_MEMORY' | 'CAPTURE'
  | 'PARSE' | 'IO' | 'DISPOSED' | 'HOST' | 'INTERNAL'
  | 'TYPE' | 'VALUE' | 'RUNTIME' | 'ASSERTION' | 'INVALID_BACKEND';
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
/** Python's ValueError (status VALUE). */
export declare class ValueError extends TensorPlayError {
  constructor(message: string, options?: ErrorOptions);
}
/** Python's RuntimeError (status RUNTIME). */
export declare class RuntimeError extends TensorPlayError {
  constructor(message: string, options?: ErrorOptions);
}
/** Python's AssertionError (status ASSERTION). */
export declare class AssertionError extends TensorPlayError {
  constructor(message: string, options?: ErrorOptions);
}
/** An unknown or unavailable backend (status INVALID_BACKEND), with suggestions. */
export declare class InvalidBackend extends TensorPlayError {
  constructor(message: string, options?: ErrorOptions);
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
