import { Readable } from 'node:stream';
import type { WriteOptions } from '../audio-store.js';
import { s3ConditionalPut } from './s3-conditional-put.js';
import type { S3Location } from './s3-location.js';
import { PART_BYTES, s3MultipartUpload } from './s3-multipart-upload.js';
import { NameCollisionError, StorageError } from '../storage-errors.js';
import { type ObjectItem, s3PutCommand, s3ReplaceableObject } from './s3-item-object.js';

/** S3's largest single PUT: a longer file, or one of unknown length, is a multipart upload. */
const MAX_PUT_BYTES = 5 * 1024 ** 3;

/**
 * AudioStore.write of the S3 store, resolving to the ETag of the object written. Up to one part
 * is read first: a smaller body is one conditional PUT from memory; a larger one is one streamed
 * PUT when its length is known (the CDN declared it), else a multipart upload.
 */
export async function s3WriteObject(
  s3: S3Location,
  name: string,
  source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  options: WriteOptions | undefined,
): Promise<string | undefined> {
  const iterator = toAsyncIterator(source);
  const first: Uint8Array[] = [];
  let bytes = 0;
  let ended = false;
  while (bytes < PART_BYTES) {
    const next = await iterator.next();
    if (next.done === true) {
      ended = true;
      break;
    }
    first.push(next.value);
    bytes += next.value.length;
  }
  let sourceFailure: { error: unknown } | undefined;
  try {
    if (ended) return await s3ConditionalPut(s3, name, Buffer.concat(first), options);
    else {
      const rest = recordFailure(
        { [Symbol.asyncIterator]: () => iterator },
        (error) => (sourceFailure = { error }),
      );
      const whole = (async function* () {
        // Handed on and let go of: the first part's chunks are not kept for the whole upload.
        for (let chunk = first.shift(); chunk !== undefined; chunk = first.shift()) yield chunk;
        yield* rest;
      })();
      const known = options?.bytes;
      return known !== undefined && known <= MAX_PUT_BYTES
        ? await s3StreamedPut(s3, name, whole, known, options)
        : await s3MultipartUpload(s3, name, whole, options);
    }
  } catch (error: unknown) {
    // The source is closed at once (the CDN's connection), not left open until its timeout.
    await iterator.return?.().catch(() => undefined);
    // A source that failed (the CDN, the size cap) keeps its own error.
    if (sourceFailure !== undefined) throw sourceFailure.error;
    if (error instanceof NameCollisionError || error instanceof StorageError) throw error;
    throw s3.fail(error, `writing ${name}`);
  }
}

function toAsyncIterator(
  source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
): AsyncIterator<Uint8Array> {
  if (Symbol.asyncIterator in source) return source[Symbol.asyncIterator]();
  const sync = source[Symbol.iterator]();
  return { next: () => Promise.resolve(sync.next()) };
}

/** The source as it is, telling `failed` when reading it throws (the upload rethrows it). */
async function* recordFailure(
  source: AsyncIterable<Uint8Array>,
  failed: (error: unknown) => void,
): AsyncGenerator<Uint8Array> {
  try {
    yield* source;
  } catch (error: unknown) {
    failed(error);
    throw error;
  }
}

/**
 * One PUT streaming `source`, when its length is known before it is read (the CDN's
 * content-length): the gateway takes the bytes as they come, as `curl -T` sends a file, and
 * holds nothing of them until the PUT is whole (a killed worker leaves nothing, not even an
 * incomplete upload). Looked for first, as a multipart upload is: a streamed body
 * cannot be sent again after a 412, so this item's object is replaced with `If-Match` on its
 * ETag, and a race with another run of the item fails the write, to be retried. The SDK does
 * not retry a streamed body either; the job's own retries do. A source that fails, ends short
 * or runs long aborts the PUT, which then stores nothing. Resolves to the ETag the PUT answered.
 */
export async function s3StreamedPut(
  s3: S3Location,
  name: string,
  source: AsyncIterable<Uint8Array>,
  bytes: number,
  item: ObjectItem,
): Promise<string | undefined> {
  const existing = await s3ReplaceableObject(s3, name, item?.id);
  const abort = new AbortController();
  const counted = async function* () {
    let sent = 0;
    try {
      for await (const chunk of source) {
        sent += chunk.length;
        if (sent > bytes) throw new Error(`the source ran past its ${bytes} bytes`);
        yield chunk;
      }
      if (sent !== bytes) throw new Error(`the source ended after ${sent} of its ${bytes} bytes`);
    } catch (error: unknown) {
      // The body is piped into the request, which a failing body alone would leave waiting.
      abort.abort(error);
      throw error;
    }
  };
  const body = Readable.from(counted(), { objectMode: false });
  // pipe() gives the body no 'error' listener: its failure is reported through the abort.
  body.on('error', () => undefined);
  try {
    const answer = await s3.client.send(s3PutCommand(s3, name, body, bytes, existing, item), {
      abortSignal: abort.signal,
    });
    return answer.ETag;
  } catch (error: unknown) {
    body.destroy();
    throw abort.signal.aborted && abort.signal.reason instanceof Error
      ? s3.fail(abort.signal.reason, `writing ${name}`)
      : error;
  }
}
