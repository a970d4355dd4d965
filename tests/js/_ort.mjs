// _ort.mjs - onnxruntime-node, the independent reference of the JS tests,
// loaded once: `ort` (null when it cannot load, the reason in `ortWhy`), and
// needOrt(), which returns it or fails the calling test naming the reason (a
// missing reference is a failure, never a skip).
import assert from 'node:assert/strict';

let ort = null;
let ortWhy = '';
try {
  ort = await import('onnxruntime-node');
  if (!ort.InferenceSession) throw new Error('no InferenceSession export');
} catch (e) {
  ort = null;
  ortWhy = `onnxruntime-node cannot be loaded (${String(e && e.message).split('\n')[0]})`;
}

export { ort, ortWhy };

export function needOrt() {
  assert.ok(ort, `onnxruntime-node is the reference and must load: ${ortWhy}`);
  return ort;
}
