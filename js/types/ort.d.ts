// tensorplay-wasm/ort: an onnxruntime-web compatible surface (docs/js-api.md).
export type OrtTensorType = 'float32' | 'int32' | 'int64' | 'bool' | 'float16' | 'int8' | 'uint8';
/** float16 data is a Uint16Array of bit patterns, as in onnxruntime-web. */
export type OrtTensorData = Float32Array | Int32Array | BigInt64Array | Uint8Array | Uint16Array | Int8Array;
export declare class Tensor {
  constructor(type: OrtTensorType, data: OrtTensorData | number[], dims?: readonly number[]);
  constructor(data: Float32Array | Int32Array | BigInt64Array | Int8Array | Uint8Array, dims?: readonly number[]);
  readonly type: OrtTensorType;
  readonly data: OrtTensorData;
  readonly dims: readonly number[];
  readonly size: number;
  readonly location: 'cpu';
  getData(): OrtTensorData;
  dispose(): void;
}
export interface SessionOptions {
  executionProviders?: unknown[];
  graphOptimizationLevel?: string;
  /** tensorplay's own: the backend each specialization is compiled with ('stax' default, 'eager'). */
  tensorplay?: { backend?: string };
  [key: string]: unknown;
}
export declare class InferenceSession {
  static create(source: Uint8Array | ArrayBuffer | ArrayBufferView | string, options?: SessionOptions): Promise<InferenceSession>;
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  run(feeds: Record<string, Tensor>, fetches?: readonly string[] | Record<string, unknown>): Promise<Record<string, Tensor>>;
  release(): Promise<void>;
}
export declare const env: { wasm: { numThreads: number; simd: boolean; proxy: boolean }; logLevel: string };
declare const _default: { InferenceSession: typeof InferenceSession; Tensor: typeof Tensor; env: typeof env };
export default _default;
