// _vad_audio.mjs - a deterministic 4 s, 16 kHz test signal for the VAD
// drop-in tests (Node and Chromium): near-silence, then 1.6 s of a voiced,
// vowel-like sound (a 110 Hz glottal pitch with vibrato, formants near 700,
// 1200 and 2500 Hz, 4 Hz syllable rate), then near-silence. Silero VAD
// marks the voiced part as speech. Not a test (helper).
export const SAMPLE_RATE = 16000;

export function vadTestAudio(seconds = 4) {
  const sr = SAMPLE_RATE, n = Math.round(sr * seconds), x = new Float32Array(n);
  let phase = 0;
  for (let i = 0; i < n; i++) {
    const t = i / sr;
    const f0 = 110 + 20 * Math.sin(2 * Math.PI * 3 * t);
    phase += (2 * Math.PI * f0) / sr;
    if (t > 1 && t < 2.6) {
      let v = 0;
      for (let k = 1; k < 30; k++) {
        const f = k * f0;
        const env = Math.exp(-((f - 700) ** 2) / 2e5) + 0.6 * Math.exp(-((f - 1200) ** 2) / 3e5) + 0.3 * Math.exp(-((f - 2500) ** 2) / 5e5);
        v += env * Math.sin(k * phase);
      }
      x[i] = 0.2 * v * (0.6 + 0.4 * Math.sin(2 * Math.PI * 4 * t));
    } else {
      x[i] = 0.001 * Math.sin(i * 12.9898);
    }
  }
  return x;
}
