import { mulberry32 } from './prng.js';

/** Characters of 1, 2, 3 and 4 UTF-8 bytes, none escaped by JSON. */
const CHARS = ['a', 'é', '日', '😀'] as const;

/**
 * `data` with a `notes` field added so that the delivery's body as the sandbox sends it,
 * `JSON.stringify({event, data})`, is exactly `bytes` long in UTF-8: a body at MAX_BODY_BYTES'
 * edge (under it: accepted; over it: 413). The padding mixes characters of every UTF-8 length,
 * so a count of characters or UTF-16 units in place of bytes shows.
 */
export function padToBytes(
  event: string,
  data: Readonly<Record<string, unknown>>,
  bytes: number,
  seed: number,
): Record<string, unknown> {
  const size = (notes: string) =>
    Buffer.byteLength(JSON.stringify({ event, data: { ...data, notes } }));
  let left = bytes - size('');
  if (left < 0) throw new Error(`a body of ${bytes} bytes cannot hold this delivery`);
  const random = mulberry32(seed);
  const parts: string[] = [];
  while (left >= 4) {
    const char = CHARS[random.int(0, 3)] ?? 'a';
    parts.push(char);
    left -= Buffer.byteLength(char);
  }
  parts.push('a'.repeat(left));
  const padded = { ...data, notes: parts.join('') };
  if (size(padded.notes) !== bytes) throw new Error('padding missed its size');
  return padded;
}
