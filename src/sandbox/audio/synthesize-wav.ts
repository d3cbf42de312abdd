import { createHash } from 'node:crypto';

export const SAMPLE_RATE = 16_000;
/** Each character of the text becomes a tone this long. */
const SECONDS_PER_CHARACTER = 0.08;
const MAX_SECONDS = 30;

/**
 * A real, playable WAV (PCM, 16-bit, mono, 16 kHz) for a text and a voice: one short tone per
 * character, its pitch from the character and the voice, with a soft envelope so it does not
 * click. Deterministic: the same text and voice give the same bytes (the provider's TTS cache
 * advice can be tested against it). No model and no network: a stand-in, not speech.
 */
export function synthesizeWav(text: string, voice: string): Buffer {
  const seed = createHash('sha256').update(voice).digest();
  const base = 140 + (seed[0] ?? 0); // the voice's pitch, 140–395 Hz
  // Code points, not UTF-16 units: an emoji is one tone. (Segmenting graphemes buys nothing here.)
  // eslint-disable-next-line @typescript-eslint/no-misused-spread
  const characters = [...text];
  const seconds = Math.min(Math.max(characters.length, 1) * SECONDS_PER_CHARACTER, MAX_SECONDS);
  const samples = Math.round(seconds * SAMPLE_RATE);
  const perCharacter = Math.round(SECONDS_PER_CHARACTER * SAMPLE_RATE);
  const wav = Buffer.alloc(44 + samples * 2);
  writeHeader(wav, samples);
  // Samples written through a typed view, from lookup tables: a batch of 10,000 items renders
  // in seconds, not minutes (Math.sin per sample is far slower).
  const pcm = new Int16Array(wav.buffer, wav.byteOffset + 44, samples);
  const envelope = envelopeTable(perCharacter);
  for (let start = 0, index = 0; start < samples; start += perCharacter, index++) {
    const code = characters[index]?.codePointAt(0) ?? 32;
    const step = (base * 2 ** ((code % 24) / 12) * SINE_SIZE) / SAMPLE_RATE;
    let phase = (start * step) % SINE_SIZE;
    const end = Math.min(start + perCharacter, samples);
    for (let i = start; i < end; i++) {
      pcm[i] = Math.round((SINE[phase | 0] ?? 0) * (envelope[i - start] ?? 0));
      phase += step;
      if (phase >= SINE_SIZE) phase -= SINE_SIZE;
    }
  }
  return wav;
}

const SINE_SIZE = 4096;
/** One period of a sine at half of full scale. */
const SINE = Float64Array.from(
  { length: SINE_SIZE },
  (_unused, i) => Math.sin((2 * Math.PI * i) / SINE_SIZE) * 0.5 * 32767,
);

let envelopeCache: Float64Array | undefined;
/** A half-sine rise and fall over one character, so tones do not click. */
function envelopeTable(length: number): Float64Array {
  if (envelopeCache?.length !== length) {
    envelopeCache = Float64Array.from({ length }, (_unused, i) => Math.sin((Math.PI * i) / length));
  }
  return envelopeCache;
}

/** How many characters of text make a WAV of about `bytes` (the benchmark asks for 64 KB). */
export function charactersForBytes(bytes: number): number {
  return Math.max(1, Math.round((bytes - 44) / 2 / (SECONDS_PER_CHARACTER * SAMPLE_RATE)));
}

function writeHeader(wav: Buffer, samples: number): void {
  const dataBytes = samples * 2;
  wav.write('RIFF', 0, 'ascii');
  wav.writeUInt32LE(36 + dataBytes, 4);
  wav.write('WAVE', 8, 'ascii');
  wav.write('fmt ', 12, 'ascii');
  wav.writeUInt32LE(16, 16); // fmt chunk size
  wav.writeUInt16LE(1, 20); // PCM
  wav.writeUInt16LE(1, 22); // mono
  wav.writeUInt32LE(SAMPLE_RATE, 24);
  wav.writeUInt32LE(SAMPLE_RATE * 2, 28); // byte rate
  wav.writeUInt16LE(2, 32); // block align
  wav.writeUInt16LE(16, 34); // bits per sample
  wav.write('data', 36, 'ascii');
  wav.writeUInt32LE(dataBytes, 40);
}
