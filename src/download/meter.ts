import { createHash, type Hash } from 'node:crypto';
import { formatBytes } from './format-bytes.js';
import { PermanentDownloadError } from './download-errors.js';

/**
 * Counts and hashes bytes as they stream past, and stops the transfer the moment it exceeds
 * `maxBytes`: a server may lie about Content-Length or send none.
 */
export class Meter {
  #bytes = 0;
  readonly #hash: Hash = createHash('sha256');

  constructor(private readonly maxBytes: number) {}

  get bytes(): number {
    return this.#bytes;
  }

  /** Hex SHA-256 of everything that passed; call once, after the stream finished. */
  sha256(): string {
    return this.#hash.digest('hex');
  }

  /** Passes `source` through, measuring it; throws (ending the transfer) past the cap. */
  async *measure(source: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
    for await (const chunk of source) {
      this.#bytes += chunk.length;
      if (this.#bytes > this.maxBytes) {
        const limit = formatBytes(this.maxBytes);
        throw new PermanentDownloadError(
          `audio is over the ${limit} limit (DOWNLOAD_MAX_BYTES); transfer stopped`,
        );
      }
      this.#hash.update(chunk);
      yield chunk;
    }
  }
}
