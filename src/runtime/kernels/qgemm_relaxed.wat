;; qgemm_relaxed.wat - the relaxed-SIMD integer GEMM micro-kernel (2x8 tile),
;; a module of its own: a module using relaxed SIMD does not validate on a
;; host without it, so the core cannot contain it. The host validates it
;; (WebAssembly.validate), instantiates it on the core's memory and puts f0
;; in the core's function table; tp_qgemm_install_variant makes it the best
;; qgemm variant (docs/quantization-kernels.md).
;;
;; f0(kgroups: i64, a: i32, b: i32, c: i32) is tp_qgemm_ukernel.tile of the
;; dot4 layout: a[g][r][0..4) u8 activations, b[g][j][0..4) weights stored
;; as B + 64 (7-bit: packed only when every B is in [-64, 63]), c the tile
;; row-major (row stride 8 int32). It computes
;;   c[r][j] = sum_k (A[r,k] - 128) (B[k,j] + 64)
;; with i32x4.relaxed_dot_i8x16_i7x16_add_s (signed i8 x 7-bit, exact: the
;; second operand is in [0, 127], so every engine gives the same result);
;; the epilogue removes the offsets (+64 rowsum, -128 colsum, K terms).
;; Assembled with: wat2wasm --enable-relaxed-simd (wabt 1.0.32 spells the
;; instruction i32x4.dot_i8x16_i7x16_add_s; opcode 0xfd 0x113).
;; 2 rows, not 4: Node 20's baseline compiler (Liftoff, V8 11.3, relaxed SIMD
;; behind --experimental-wasm-relaxed-simd) gives wrong sums for this
;; instruction once more than about 7 v128 locals are live (4x8: rows 2 and
;; 3 wrong; TurboFan is right); 2x8 is right in both tiers
;; (bench/qgemm_bench.c's selftest checks it in the host before timing).
(module
  (import "env" "memory" (memory 0))
  (func (export "f0") (param $n i64) (param $a i32) (param $b i32) (param $c i32)
    (local $c00 v128) (local $c01 v128)
    (local $c10 v128) (local $c11 v128)
    (local $b0 v128) (local $b1 v128) (local $x v128)
    (if (i64.gt_s (local.get $n) (i64.const 0)) (then
      (loop $L
        (local.set $b0 (v128.load offset=0 (local.get $b)))
        (local.set $b1 (v128.load offset=16 (local.get $b)))
        (local.set $x (v128.xor (v128.load32_splat offset=0 (local.get $a)) (v128.const i32x4 0x80808080 0x80808080 0x80808080 0x80808080)))
        (local.set $c00 (i32x4.dot_i8x16_i7x16_add_s (local.get $x) (local.get $b0) (local.get $c00)))
        (local.set $c01 (i32x4.dot_i8x16_i7x16_add_s (local.get $x) (local.get $b1) (local.get $c01)))
        (local.set $x (v128.xor (v128.load32_splat offset=4 (local.get $a)) (v128.const i32x4 0x80808080 0x80808080 0x80808080 0x80808080)))
        (local.set $c10 (i32x4.dot_i8x16_i7x16_add_s (local.get $x) (local.get $b0) (local.get $c10)))
        (local.set $c11 (i32x4.dot_i8x16_i7x16_add_s (local.get $x) (local.get $b1) (local.get $c11)))
        (local.set $a (i32.add (local.get $a) (i32.const 8)))
        (local.set $b (i32.add (local.get $b) (i32.const 32)))
        (br_if $L (i64.gt_s (local.tee $n (i64.sub (local.get $n) (i64.const 1))) (i64.const 0))))))
    (v128.store offset=0 (local.get $c) (local.get $c00))
    (v128.store offset=16 (local.get $c) (local.get $c01))
    (v128.store offset=32 (local.get $c) (local.get $c10))
    (v128.store offset=48 (local.get $c) (local.get $c11))
  ))
