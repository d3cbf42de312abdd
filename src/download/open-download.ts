import { createHash, type Hash } from 'node:crypto';
import { pipeline, type Readable, type Transform } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import { errors, request, type Dispatcher } from 'undici';
import { formatBytes } from './format-bytes.js';
import { PermanentDownloadError, TransientDownloadError } from './download-errors.js';
import { parseRetryAfter } from './parse-retry-after.js';

export interface OpenDownloadOptions {
  /** Normalised origins (CDN_URL) that every hop must stay within. */
  readonly allowedOrigins: readonly string[];
  readonly dispatcher: Dispatcher;
  readonly maxBytes: number;
  /** Aborts everything, the body included: the whole-download deadline. */
  readonly signal: AbortSignal;
  /**
   * Redirects followed, each hop checked again.
   * @defaultValue 5
   */
  readonly maxRedirects?: number;
}

export interface OpenedDownload {
  readonly body: Readable;
  readonly url: URL;
  /** The media type without parameters, lower case. */
  readonly contentType: string;
  /**
   * The body's length as the CDN declared it (`content-length`), when it did and sends the bytes
   * as they are (no content encoding); undefined otherwise. A body that ends short fails.
   */
  readonly bytes?: number;
}

const ACCEPTABLE_TYPE = /^(audio\/[\w.+-]+|application\/octet-stream)$/;
const REDIRECT = new Set([301, 302, 303, 307, 308]);

/**
 * We ask for `identity`, but a CDN may compress anyway; its bytes stored as `.mp3` would not be
 * the audio. The common encodings are decoded (the meter then caps the decoded size, so a
 * compression bomb stops at DOWNLOAD_MAX_BYTES); anything else is refused.
 */
const DECODERS: Readonly<Record<string, () => Transform>> = {
  gzip: createGunzip,
  'x-gzip': createGunzip,
  deflate: createInflate,
  br: createBrotliDecompress,
};

function decoded(body: Readable, header: string | string[] | undefined): Readable {
  const encoding = String(header ?? 'identity')
    .trim()
    .toLowerCase();
  if (encoding === 'identity' || encoding === '') return body;
  const decoder = DECODERS[encoding];
  if (decoder === undefined) {
    throw new PermanentDownloadError(
      `content encoding "${encoding}" is not supported; only gzip, deflate and br are decoded`,
    );
  }
  // pipeline carries an error of either side to the other and out of the returned stream.
  return pipeline(body, decoder(), () => undefined);
}

/** Throws PermanentDownloadError unless the URL is https and its origin is allowed. */
export function checkUrl(url: URL, allowedOrigins: readonly string[]): void {
  if (url.protocol !== 'https:')
    throw new PermanentDownloadError(`${url.protocol} URL refused: only https`);
  if (url.username !== '' || url.password !== '') {
    throw new PermanentDownloadError('URL with credentials refused');
  }
  if (!allowedOrigins.includes(url.origin)) {
    throw new PermanentDownloadError(`origin ${url.origin} not in CDN_URL`);
  }
}

/** Reads a little of an unwanted body (so the connection can be reused), then drops it. */
async function discard(body: { dump(options?: { limit: number }): Promise<void> }): Promise<void> {
  await body.dump({ limit: 64 * 1024 }).catch(() => undefined);
}

/** 408, 429 and 5xx are worth retrying; any other failure status is final. */
export function statusError(status: number, retryAfter: string | string[] | undefined): Error {
  const transient = status === 408 || status === 429 || status >= 500;
  if (!transient) return new PermanentDownloadError(`${status}: the CDN refused the download`);
  const header = Array.isArray(retryAfter) ? retryAfter[0] : retryAfter;
  return new TransientDownloadError(
    `${status}: the CDN failed; will retry`,
    parseRetryAfter(header),
  );
}

/**
 * GETs the audio, following at most `maxRedirects` redirects by hand so that every hop is checked
 * against CDN_URL again, and returns the open body once status, type and declared length pass.
 */
export async function openDownload(
  rawUrl: string,
  options: OpenDownloadOptions,
): Promise<OpenedDownload> {
  const maxRedirects = options.maxRedirects ?? 5;
  let url = new URL(rawUrl);
  for (let hop = 0; hop <= maxRedirects; hop++) {
    checkUrl(url, options.allowedOrigins);
    const res = await request(url, {
      dispatcher: options.dispatcher,
      signal: options.signal,
      headers: { accept: 'audio/*, application/octet-stream', 'accept-encoding': 'identity' },
    }).catch((error: unknown) => {
      throw classifyNetworkError(error, options.signal);
    });
    const location = res.headers.location;
    if (REDIRECT.has(res.statusCode) && typeof location === 'string') {
      await discard(res.body);
      url = new URL(location, url);
      continue;
    }
    if (res.statusCode < 200 || res.statusCode > 299) {
      await discard(res.body);
      throw statusError(res.statusCode, res.headers['retry-after']);
    }
    const contentType =
      String(res.headers['content-type'] ?? '')
        .split(';')[0]
        ?.trim()
        .toLowerCase() ?? '';
    if (!ACCEPTABLE_TYPE.test(contentType)) {
      await discard(res.body);
      throw new PermanentDownloadError(`content type "${contentType || 'none'}" is not audio`);
    }
    const declared = Number(res.headers['content-length']);
    if (Number.isFinite(declared) && declared > options.maxBytes) {
      await discard(res.body);
      throw new PermanentDownloadError(
        `audio of ${formatBytes(declared)} is over the ${formatBytes(options.maxBytes)} limit (DOWNLOAD_MAX_BYTES)`,
      );
    }
    const encoding = res.headers['content-encoding'];
    const identity = encoding === undefined || encoding === 'identity';
    try {
      return {
        body: decoded(res.body, encoding),
        url,
        contentType,
        ...(identity && Number.isSafeInteger(declared) && declared >= 0 ? { bytes: declared } : {}),
      };
    } catch (error: unknown) {
      await discard(res.body);
      throw error;
    }
  }
  throw new PermanentDownloadError(`more than ${maxRedirects} redirects`);
}

/**
 * Our own refusals stay permanent; timeouts, resets and aborts are transient. The deadline is
 * recognised by its signal, whatever shape the error it caused has taken on the way up.
 */
export function classifyNetworkError(error: unknown, deadline?: AbortSignal): Error {
  if (error instanceof PermanentDownloadError || error instanceof TransientDownloadError)
    return error;
  const cause = error instanceof Error ? error.cause : undefined;
  if (cause instanceof PermanentDownloadError) return cause;
  if (deadline?.aborted === true) {
    return new TransientDownloadError(
      'download deadline (DOWNLOAD_TIMEOUT_MS) exceeded',
      undefined,
      { cause: error },
    );
  }
  if (error instanceof errors.HeadersTimeoutError || error instanceof errors.BodyTimeoutError) {
    return new TransientDownloadError(`CDN timed out: ${error.message}`, undefined, {
      cause: error,
    });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new TransientDownloadError(`download failed: ${message}`, undefined, { cause: error });
}

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
