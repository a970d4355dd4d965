// The onnxruntime-web drop-in (js/ort.js; as CommonJS js/dist/ort.cjs) under
// a real npm package's own code, unchanged: @ricky0123/vad-web 0.0.31 (ISC),
// a voice-activity detector written for onnxruntime-web. The package is
// fetched with `npm pack` (tests/js/_npm_pack.mjs; skipped with the npm error
// when the registry cannot be reached) and set up twice in a temporary
// project: once with the real onnxruntime-web (node_modules), once with the
// two-file `onnxruntime-web` shim over tensorplay-wasm/ort that
// docs/js-api.md ("onnxruntime compatibility") describes. Each runs
// tests/js/fixtures/vad_dropin.cjs in its own Node process; the speech
// segments must be identical and every frame's speech probability must
// agree (|err| <= 1e-4 + 1e-3 |ref|). The same in Chromium:
// tests/browser/vad_dropin.test.mjs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fetchPackage } from './_npm_pack.mjs';
import { vadTestAudio } from './_vad_audio.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..', '..');
const ortCjs = join(repo, 'js', 'dist', 'ort.cjs');
const ortWeb = join(repo, 'node_modules', 'onnxruntime-web');
const vad = fetchPackage('@ricky0123/vad-web@0.0.31', 'ricky0123-vad-web-0.0.31');
const skip = vad.why
  || (!existsSync(ortCjs) && process.env.TP_REQUIRE_BUNDLE !== '1' && 'js/dist/ort.cjs is not built (bash scripts/build.sh bundle)')
  || (!existsSync(ortWeb) && 'onnxruntime-web is not installed (npm install)');

/** A project folder with the package and the given onnxruntime-web; returns its path. */
function project(root, name, ortDir) {
  const dir = join(root, name);
  const nm = join(dir, 'node_modules');
  mkdirSync(join(nm, '@ricky0123'), { recursive: true });
  cpSync(vad.dir, join(nm, '@ricky0123', 'vad-web'), { recursive: true });
  if (ortDir) {
    symlinkSync(ortDir, join(nm, 'onnxruntime-web'));
    symlinkSync(join(repo, 'node_modules', 'onnxruntime-common'), join(nm, 'onnxruntime-common'));
  } else {
    // the shim: what `onnxruntime-web` becomes when an application switches
    mkdirSync(join(nm, 'onnxruntime-web'));
    writeFileSync(join(nm, 'onnxruntime-web', 'package.json'), JSON.stringify({
      name: 'onnxruntime-web', version: '0.0.0-tensorplay', main: 'index.js',
      exports: { '.': './index.js', './wasm': './index.js', './webgpu': './index.js', './all': './index.js' },
    }));
    writeFileSync(join(nm, 'onnxruntime-web', 'index.js'), `module.exports = require(${JSON.stringify(ortCjs)});\n`);
  }
  writeFileSync(join(dir, 'index.js'), '');
  return dir;
}

function run(dir, audioPath) {
  const out = join(dir, 'out.json');
  execFileSync(process.execPath, [join(here, 'fixtures', 'vad_dropin.cjs'), dir, audioPath, out],
    { stdio: ['ignore', 'pipe', 'pipe'], timeout: 240000, env: { ...process.env, ORT_LOG_LEVEL: 'error' } });
  return JSON.parse(readFileSync(out, 'utf8'));
}

function closeList(got, want, what) {
  assert.equal(got.length, want.length, `${what}: frame count`);
  for (let i = 0; i < want.length; i++) {
    const err = Math.abs(got[i] - want[i]), tol = 1e-4 + 1e-3 * Math.abs(want[i]);
    assert.ok(err <= tol, `${what}: frame ${i}: tensorplay ${got[i]}, onnxruntime-web ${want[i]} (|err| ${err.toExponential(2)} > ${tol.toExponential(2)})`);
  }
}

test('@ricky0123/vad-web runs unchanged on tensorplay-wasm/ort with the results of onnxruntime-web', { skip, timeout: 300000 }, (t) => {
  const root = mkdtempSync(join(tmpdir(), 'tp-vad-dropin-'));
  try {
    const audioPath = join(root, 'audio.f32');
    const x = vadTestAudio();
    writeFileSync(audioPath, new Uint8Array(x.buffer));
    const ref = run(project(root, 'onnxruntime-web', ortWeb), audioPath);
    const got = run(project(root, 'tensorplay', null), audioPath);
    t.diagnostic(`onnxruntime-web: ${ref.ms} ms, tensorplay-wasm/ort: ${got.ms} ms (whole package run, model loads included); segments ${JSON.stringify(got.segments)}`);
    assert.ok(ref.segments.length >= 1, 'the test audio has speech for onnxruntime-web (else the comparison says little)');
    assert.deepEqual(got.segments, ref.segments, 'NonRealTimeVAD speech segments');
    closeList(got.legacy, ref.legacy, 'silero_vad_legacy frame probabilities');
    closeList(got.v5, ref.v5, 'silero_vad_v5 frame probabilities');
    assert.ok(Math.max(...ref.v5) > 0.5 && Math.min(...ref.v5) < 0.1, 'the v5 probabilities span speech and silence');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
