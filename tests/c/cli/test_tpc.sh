#!/usr/bin/env bash
# test_tpc.sh - the tpc CLI end to end. Usage: test_tpc.sh PATH/TO/tpc
# Inputs are written byte by byte with printf (no python, no xxd); outputs are
# checked with od against hand-computed float32 bytes.
set -u
TPC=${1:?usage: test_tpc.sh PATH/TO/tpc}
[ -x "$TPC" ] || { echo "tpc not found at $TPC"; exit 77; }
command -v od >/dev/null || { echo "od missing"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/tp_test_tpc.XXXXXX")
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# npy FILE DESCR SHAPE DATA: a version 1.0 .npy; DATA is a printf format of
# \xHH escapes. The header is padded so 10 + header is a multiple of 64.
npy() {
  local dict="{'descr': '$2', 'fortran_order': False, 'shape': $3, }"
  local pad=$(( (10 + ${#dict} + 1 + 63) / 64 * 64 - 10 - ${#dict} - 1 ))
  local hlen=$(( ${#dict} + pad + 1 ))
  {
    printf '\x93NUMPY\x01\x00'
    printf "\\x$(printf %02x $((hlen & 255)))\\x$(printf %02x $((hlen >> 8)))"
    printf '%s' "$dict"
    printf "%${pad}s" ''
    printf '\n'
    printf "$4"
  } > "$1"
}
hex() { od -An -v -tx1 "$1" | tr -d ' \n'; }
# the last N bytes of a file, as hex
tailhex() { tail -c "$2" "$1" | od -An -v -tx1 | tr -d ' \n'; }

# run CMD...: sets rc, out, err
run() {
  "$@" > "$T/stdout" 2> "$T/stderr"
  rc=$?
  out=$(cat "$T/stdout")
  err=$(cat "$T/stderr")
}
expect() { # expect RC SUBSTRING-IN-STDERR DESCRIPTION
  if [ "$rc" != "$1" ]; then fail "$3: exit $rc, want $1 (stderr: $err)"; return; fi
  case "$err" in *"$2"*) ;; *) fail "$3: stderr lacks '$2': $err";; esac
}

F1=00,00,80,3f; F2=00,00,00,40; F3=00,00,40,40; F4=00,00,80,40
esc() { local s=""; for b in $(echo "$*" | tr ',' ' '); do s="$s\\x$b"; done; printf '%s' "$s"; }

# ---- the graph: y = sum((x + y) * 2 + w, dim 1) ----
cat > "$T/g.tpg" <<'G'
tpgraph v1
# a comment
%x = placeholder : f32[2,2]
%y = placeholder : f32[2,2]
%w = get_attr "w" : f32[2]
%0 = add(%x, %y) : f32[2,2]
%1 = mul(%0, 2) : f32[2,2]
%2 = add(%1, %w) : f32[2,2]
%3 = sum(%2, dims=[1], keepdim=false) : f32[2]
output(%2, %3)
data %w f32[2] AAAAPwAAgL8=
G
# x = [[1,2],[3,4]], y = [[0.5,0.5],[-1,-2]], w = [0.5,-1]
npy "$T/x.npy" '<f4' '(2, 2)' "$(esc $F1,$F2,$F3,$F4)"
npy "$T/y.npy" '<f4' '(2, 2)' "$(esc 00,00,00,3f,00,00,00,3f,00,00,80,bf,00,00,00,c0)"
[ "$(wc -c < "$T/x.npy")" = 144 ] || fail "the test's own x.npy is $(wc -c < "$T/x.npy") bytes, want 144"

# ---- version, help ----
run "$TPC" version
[ $rc = 0 ] || fail "version: exit $rc"
[[ "$out" =~ ^tpc\ 0\.1\.0\ \(isa:\ [a-z0-9-]+\)$ ]] || fail "version prints '$out'"
run "$TPC" --help
[ $rc = 0 ] && [[ "$out" == *"run GRAPH.tpg"* ]] && [[ "$out" == *"graph GRAPH.tpg"* ]] || fail "--help: $rc $out"
run "$TPC" help
[ $rc = 0 ] || fail "help: exit $rc"
run "$TPC"
expect 2 "usage: tpc" "no arguments"
run "$TPC" frobnicate
expect 2 "tpc: unknown command 'frobnicate'" "unknown command"

# ---- run: both outputs to files ----
run "$TPC" run "$T/g.tpg" --input x="$T/x.npy" --input "y=$T/y.npy" --output "$T/o0.npy" --output "$T/o1.npy"
[ $rc = 0 ] || fail "run: exit $rc: $err"
# (x+y)*2 + w = [[3.5, 4], [4.5, 3]]; row sums [7.5, 7.5]
want0=00006040000080400000904000004040
[ "$(tailhex "$T/o0.npy" 16)" = "$want0" ] || fail "output 0 bytes: $(tailhex "$T/o0.npy" 16), want $want0"
[ "$(tailhex "$T/o1.npy" 8)" = 0000f0400000f040 ] || fail "output 1 bytes: $(tailhex "$T/o1.npy" 8)"
[ "$(wc -c < "$T/o0.npy")" = 144 ] || fail "o0.npy is $(wc -c < "$T/o0.npy") bytes, want 144"
head -c 10 "$T/o0.npy" | od -An -tx1 | tr -d ' \n' | grep -q '^934e554d505901007600$' || fail "o0.npy magic/header length"
grep -a -q "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2), }" "$T/o0.npy" || fail "o0.npy header dict"
grep -a -q "'shape': (2,), }" "$T/o1.npy" || fail "o1.npy header dict"
# the output file reads back as an input (round trip through tpc itself)
cat > "$T/id.tpg" <<'G'
tpgraph v1
%a = placeholder : f32[2,2]
%r = relu(%a) : f32[2,2]
output(%r)
G
run "$TPC" run "$T/id.tpg" --input "a=$T/o0.npy" --output "$T/o2.npy"
[ $rc = 0 ] && [ "$(hex "$T/o2.npy")" = "$(hex "$T/o0.npy")" ] || fail "relu of o0.npy differs: $err"

# ---- fewer --output than outputs: the rest are summarized; --print ----
run "$TPC" run "$T/g.tpg" --input "x=$T/x.npy" --input "y=$T/y.npy" --output "$T/p0.npy"
[ $rc = 0 ] || fail "run one output: exit $rc: $err"
[[ "$out" == *"output 1: f32[2] = [7.5, 7.5]"* ]] || fail "summary of output 1: '$out'"
[[ "$out" != *"output 0"* ]] || fail "output 0 is summarized without --print: '$out'"
run "$TPC" run "$T/g.tpg" --input "x=$T/x.npy" --input "y=$T/y.npy" --print
[ $rc = 0 ] || fail "run --print: exit $rc: $err"
[[ "$out" == *"output 0: f32[2,2] = [3.5, 4, 4.5, 3]"* ]] || fail "--print output 0: '$out'"

# ---- input errors: exit 2 with a message ----
npy "$T/f8.npy" '<f8' '(2, 2)' "$(esc 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0)"
run "$TPC" run "$T/g.tpg" --input "x=$T/f8.npy" --input "y=$T/y.npy"
expect 2 "f8.npy: unsupported dtype '<f8' (supported: <f4, <i4, <i8, |b1, <f2, |i1, |u1)" "bad .npy dtype"
printf 'not a numpy file' > "$T/junk.npy"
run "$TPC" run "$T/g.tpg" --input "x=$T/junk.npy" --input "y=$T/y.npy"
expect 2 "not a .npy file" "junk .npy"
run "$TPC" run "$T/g.tpg" --input "x=$T/x.npy" --input "y=$T/nonexistent.npy"
expect 2 "nonexistent.npy: cannot open" "missing .npy file"
run "$TPC" run "$T/g.tpg" --input "x=$T/x.npy"
expect 2 "tpc: missing input 'y'" "missing input"
run "$TPC" run "$T/g.tpg" --input "x=$T/x.npy" --input "y=$T/y.npy" --input "z=$T/y.npy"
expect 2 "the graph has no input named 'z' (its inputs: x, y)" "unknown input"
run "$TPC" run "$T/g.tpg" --input "x=$T/x.npy" --input "x=$T/y.npy"
expect 2 "input 'x' is given twice" "duplicate input"
npy "$T/x3.npy" '<f4' '(3,)' "$(esc $F1,$F2,$F3)"
run "$TPC" run "$T/g.tpg" --input "x=$T/x3.npy" --input "y=$T/y.npy"
expect 2 "is f32[3], but the graph expects f32[2,2]" "wrong shape"
npy "$T/xi.npy" '<i4' '(2, 2)' "$(esc 01,00,00,00,02,00,00,00,03,00,00,00,04,00,00,00)"
run "$TPC" run "$T/g.tpg" --input "x=$T/xi.npy" --input "y=$T/y.npy"
expect 2 "is i32[2,2], but the graph expects f32[2,2]" "wrong dtype"
run "$TPC" run "$T/g.tpg" --input "x=$T/x.npy" --input "y=$T/y.npy" -o "$T/a" -o "$T/b" -o "$T/c"
expect 2 "3 --output files given, but the graph has 2 outputs" "too many outputs"
run "$TPC" run "$T/g.tpg" --input "x" --input "y=$T/y.npy"
expect 2 "--input expects NAME=FILE.npy" "bad --input"
run "$TPC" run "$T/g.tpg" --bogus
expect 2 "unknown option '--bogus'" "unknown option"
run "$TPC" run
expect 2 "missing GRAPH.tpg" "no graph"
run "$TPC" run "$T/none.tpg"
expect 2 "none.tpg: cannot open" "missing graph file"

# ---- malformed graph: exit 2, message names the line ----
sed 's/relu/relux/' "$T/id.tpg" > "$T/bad.tpg"
run "$TPC" run "$T/bad.tpg" --input "a=$T/x.npy"
expect 2 "bad.tpg: graph text line 3: unknown operator 'relux'" "malformed graph (run)"
run "$TPC" graph "$T/bad.tpg"
expect 2 "graph text line 3: unknown operator 'relux'" "malformed graph (graph)"
printf 'tpgraph v1\n%%a = placeholder : f32[2,2]\n%%r = add(%%a, %%b) : f32[2,2]\noutput(%%r)\n' > "$T/bad2.tpg"
run "$TPC" graph "$T/bad2.tpg"
expect 2 "line 3: %b is used before it is defined" "use before definition"
printf 'tpgraph v1\n%%a = placeholder : f32[2,2]\n%%r = relu(%%a) : f32[3]\noutput(%%r)\n' > "$T/bad3.tpg"
run "$TPC" graph "$T/bad3.tpg"
expect 2 "graph text: graph: node %r is declared f32[3]" "wrong declared type"

# ---- runtime failure: exit 1 (a constant without data) ----
grep -v '^data' "$T/g.tpg" > "$T/nodata.tpg"
run "$TPC" run "$T/nodata.tpg" --input "x=$T/x.npy" --input "y=$T/y.npy"
expect 1 "constant %w has no data" "runtime failure"

# compile says the same (issue 15, defect 8: was "contiguous: NULL tensor")
run "$TPC" compile "$T/nodata.tpg"
expect 1 "constant %w has no data" "compile: constant without data"
# unknown option values are refused with the valid ones (issue 15, defect 9)
run "$TPC" compile "$T/g.tpg" --dump-after=NOPASS
expect 1 "unknown pass 'NOPASS' (shapes, conv_gemm, decompose, simplify, qlinear, fold, conv_bn, cse, dce, qlayout, all)" "compile --dump-after=NOPASS"
run "$TPC" compile "$T/g.tpg" --dump-after=fold
[ $rc = 0 ] && [[ "$out" == *"# after fold"* ]] || fail "compile --dump-after=fold (rc $rc): $err"
run "$TPC" bench "$T/g.tpg" --backend=nope --runs 1
expect 2 "unknown backend 'nope' (eager, stax, both)" "bench --backend=nope"

# ---- threads: TP_NUM_THREADS and bench --threads are checked ----
for v in "abc:'abc' is not a thread count: give a whole number from 1 to 256" \
         "0:TP_NUM_THREADS=0: the thread count must be at least 1" \
         "-3:'-3' is not a thread count" "2x:'2x' is not a thread count" \
         "100000:TP_NUM_THREADS=100000 is more than 256 threads"; do
  TP_NUM_THREADS=${v%%:*} run "$TPC" bench "$T/g.tpg" --runs 1 --backend=stax
  expect 1 "${v#*:}" "TP_NUM_THREADS=${v%%:*}"
done
run "$TPC" bench "$T/g.tpg" --runs 1 --threads 0
expect 2 "--threads: config.threads must be from 1 to 256 (None: the default), got 0" "bench --threads 0"
run "$TPC" bench "$T/g.tpg" --runs 1 --threads=lots
expect 2 "--threads: 'lots' is not a whole number" "bench --threads=lots"
run "$TPC" bench "$T/g.tpg" --runs 1 --threads 3 --backend=stax
[ $rc = 0 ] && [[ "$out" == *", 3 threads, "* ]] || fail "bench --threads 3 (rc $rc): $out $err"
TP_NUM_THREADS=2 run "$TPC" bench "$T/g.tpg" --runs 1 --backend=stax
[ $rc = 0 ] && [[ "$out" == *", 2 threads, "* ]] || fail "bench with TP_NUM_THREADS=2 (rc $rc): $out $err"

# ---- tpc graph: reprints without data, stable ----
run "$TPC" graph "$T/g.tpg"
[ $rc = 0 ] || fail "graph: exit $rc: $err"
want_text='tpgraph v1
%x = placeholder : f32[2,2]
%y = placeholder : f32[2,2]
%w = get_attr "w" : f32[2]
%0 = add(%x, %y) : f32[2,2]
%1 = mul(%0, 2) : f32[2,2]
%2 = add(%1, %w) : f32[2,2]
%3 = sum(%2, dims=[1], keepdim=false) : f32[2]
output(%2, %3)'
[ "$out" = "$want_text" ] || fail "tpc graph prints:
$out"
printf '%s\n' "$out" > "$T/re.tpg"
run "$TPC" graph "$T/re.tpg"
[ $rc = 0 ] && [ "$out" = "$want_text" ] || fail "tpc graph is not stable: $err"
run "$TPC" graph
expect 2 "graph: expects exactly one GRAPH.tpg" "graph without a file"

# tpc parity (docs/onnx.md): a real model when the conformance data is there
CONF=${TP_CONFORMANCE:-${TP_SOURCE_DIR:-.}/../shared/conformance}
M8="$CONF/models/mnist-8"
if [ -f "$M8/model.onnx" ]; then
  run "$TPC" parity "$M8/model.onnx"
  [ $rc = 0 ] && [[ "$out" == *"test_data_set_0"* ]] && [[ "$out" == *"stax/exp"* ]] &&
    [[ "$out" == *"parity: ok"* ]] || fail "tpc parity mnist-8 (rc $rc): $out $err"
  cp "$M8/model.onnx" "$T/m8.onnx"
  run "$TPC" parity "$T/m8.onnx"   # no test_data_set_0 next to it: random inputs
  [ $rc = 0 ] && [[ "$out" == *"random inputs (seeded)"* ]] || fail "tpc parity random inputs (rc $rc): $out $err"
  run "$TPC" parity "$T/m8.onnx" --input "Input3=$M8/test_data_set_0/input_0.pb"
  [ $rc = 0 ] && [[ "$out" == *"--input files"* ]] || fail "tpc parity --input .pb (rc $rc): $out $err"
  run "$TPC" parity "$T/m8.onnx" --input "Input3=$M8/test_data_set_0/output_0.pb"
  expect 2 "input 'Input3' ($M8/test_data_set_0/output_0.pb) is f32[1,10], but the model expects f32[1,1,28,28]" "parity: wrong input shape"
  run "$TPC" parity "$T/m8.onnx" --input "foo=$M8/test_data_set_0/input_0.pb"
  expect 2 "the model has no input named 'foo'" "parity: unknown input"
  run "$TPC" parity "$T/m8.onnx" --input "Input3=$T/none.npy"
  expect 2 "none.npy: cannot open" "parity: missing input file"
  head -c 3000 "$M8/model.onnx" > "$T/cut.onnx"
  run "$TPC" parity "$T/cut.onnx"
  expect 2 "onnx: truncated field 7 in ModelProto" "parity: corrupt model"
  run "$TPC" run "$T/m8.onnx" --input "Input3=$M8/test_data_set_0/input_0.pb" --output "$T/y.pb"
  [ $rc = 0 ] && [ -s "$T/y.pb" ] || fail "tpc run MODEL.onnx --output y.pb (rc $rc): $err"
  run "$TPC" bench "$T/m8.onnx" --runs 2 --cold 3
  [ $rc = 0 ] && [[ "$out" == *"cold (median of 3): load "* ]] || fail "tpc bench --cold (rc $rc): $out $err"
  # a shape fed at run time: parity checks the specialization for the given inputs
  RS="$CONF/onnx-node/test_reshape_reordered_all_dims"
  run "$TPC" parity "$RS/model.onnx"
  expect 2 "the shape input must be a constant (computed only from initializers and shapes) (symbolic dims and inputs that set shapes need the inputs: pass every input with --input NAME=FILE.npy|FILE.pb)" "parity: a shape input without --input"
  run "$TPC" parity "$RS/model.onnx" --input "data=$RS/test_data_set_0/input_0.pb" --input "shape=$RS/test_data_set_0/input_1.pb"
  [ $rc = 0 ] && [[ "$out" == *"reshaped                 f32[4,2,3]       stax"* ]] && [[ "$out" == *"parity: ok"* ]] ||
    fail "tpc parity with a shape input fed at run time (rc $rc): $out $err"
  run "$TPC" parity "$RS/model.onnx" --input "data=$RS/test_data_set_0/input_0.pb"
  expect 2 "parity: missing input 'shape': pass --input shape=FILE.npy|FILE.pb" "parity: a shape input missing"
else
  echo "note: $M8 not found; tpc parity on a real model not tested"
fi
run "$TPC" parity "$T/nope.onnx"
expect 2 "nope.onnx: cannot open" "parity: missing model"
printf 'junk' > "$T/junk.onnx"
run "$TPC" parity "$T/junk.onnx"
expect 2 "onnx:" "parity: junk model"
run "$TPC" parity
expect 2 "parity: missing MODEL.onnx" "parity without a model"
run "$TPC" parity "$T/junk.onnx" --bogus
expect 2 "unknown option '--bogus'" "parity: unknown option"

if [ $fails -ne 0 ]; then
  echo "test_tpc.sh: $fails failure(s)"
  exit 1
fi
echo "test_tpc.sh: ok"
