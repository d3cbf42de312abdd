import { Readable } from 'node:stream';
import type { ObjectItem } from './s3-item-object.js';
import { s3PutCommand } from './s3-put-command.js';
import type { S3Location } from './s3-location.js';
import { s3ReplaceableObject } from './s3-replaceable-object.js';

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
