import { createCipheriv, createHash } from 'node:crypto';

/**
 * The bytes of the soak CDN's file `n`: AES-128-CTR's keystream under a key made from the seed,
 * so that a file is the same on every request and in every run of the seed, is never held in
 * memory between requests, and costs little to make (megabytes in milliseconds, where a JS PRNG
 * would take tens). Not secret; just reproducible and incompressible.
 */
export function cdnContent(seed: number, n: number, size: number): Buffer {
  const key = createHash('sha256').update(`soak-cdn:${seed}`).digest().subarray(0, 16);
  const iv = Buffer.alloc(16);
  iv.writeUInt32BE(n >>> 0, 0);
  const cipher = createCipheriv('aes-128-ctr', key, iv);
  return Buffer.concat([cipher.update(Buffer.alloc(size)), cipher.final()]);
}

export function sha256Hex(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Content types by the URL's extension; none: the worker takes one from the type. */
export function contentTypeOf(ext: string): string {
  switch (ext.toLowerCase()) {
    case '.mp3':
      return 'audio/mpeg';
    case '.ogg':
      return 'audio/ogg';
    case '.flac':
      return 'audio/flac';
    default:
      return 'audio/wav';
  }
}
