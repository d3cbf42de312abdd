import { createHash } from 'node:crypto';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  UploadPartCommand,
} from '@aws-sdk/client-s3';
import { itemFields, type ObjectItem, s3ReplaceableObject } from './s3-item-object.js';
import type { S3Location } from './s3-location.js';

/**
 * Parts of a multipart upload, and how many are in flight: one upload holds PARTS_IN_FLIGHT + 1
 * part buffers (16 MiB: the part being sent and the one being filled), whatever the file's size.
 * 8 MiB parts take a file up to 80 GB within S3's 10,000 parts; DOWNLOAD_MAX_BYTES is far below.
 */
export const PART_BYTES = 8 * 1024 * 1024;
const PARTS_IN_FLIGHT = 1;

/**
 * A multipart upload of `source`. The object is looked for first, since Ceph
 * ignores If-None-Match on CompleteMultipartUpload: this item's is replaced by the completed
 * upload (atomic, as completing one is); another item's is a collision before any part is sent.
 * Resolves to the completed object's ETag.
 *
 * Written here rather than with lib-storage's Upload: Upload gathers each part's chunks in a
 * list, then copies them into a fresh buffer, so a part lived twice and every part was new
 * garbage, which grows the process by a good part of the file. Here each chunk is copied once, as it arrives, into one of PARTS_IN_FLIGHT + 1
 * part buffers allocated for the upload and reused: what it holds is those buffers, whatever
 * the file's size. A part is a Buffer, so the SDK's own retries can send it again.
 */
export async function s3MultipartUpload(
  s3: S3Location,
  name: string,
  source: AsyncIterable<Uint8Array>,
  item: ObjectItem,
): Promise<string | undefined> {
  const { client } = s3;
  const existing = await s3ReplaceableObject(s3, name, item?.id);
  const target = { Bucket: s3.bucket, Key: s3.key(name) };
  const created = await client.send(
    new CreateMultipartUploadCommand({ ...target, ...itemFields(item) }),
  );
  const uploadId = created.UploadId ?? '';
  const parts: { PartNumber: number; ETag: string | undefined }[] = [];
  const free: Buffer[] = [];
  const inFlight = new Set<Promise<void>>();
  let failure: { error: unknown } | undefined;
  const send = (part: Buffer, bytes: number) => {
    const PartNumber = parts.length + 1;
    parts.push({ PartNumber, ETag: undefined });
    const sending: Promise<void> = client
      .send(
        new UploadPartCommand({
          ...target,
          UploadId: uploadId,
          PartNumber,
          Body: part.subarray(0, bytes),
          ContentLength: bytes,
        }),
      )
      .then(
        (answer) => {
          parts[PartNumber - 1] = { PartNumber, ETag: answer.ETag };
          free.push(part);
        },
        (error: unknown) => {
          failure ??= { error };
        },
      )
      .finally(() => inFlight.delete(sending));
    inFlight.add(sending);
  };
  const settle = async (room: number) => {
    while (inFlight.size > room) await Promise.race(inFlight);
    if (failure !== undefined) throw failure.error;
  };
  try {
    let part: Buffer = Buffer.allocUnsafeSlow(PART_BYTES);
    let filled = 0;
    const take = async (chunk: Uint8Array) => {
      for (let at = 0; at < chunk.length;) {
        const copied = Math.min(chunk.length - at, PART_BYTES - filled);
        part.set(chunk.subarray(at, at + copied), filled);
        filled += copied;
        at += copied;
        if (filled < PART_BYTES) continue;
        await settle(PARTS_IN_FLIGHT - 1);
        send(part, filled);
        part = free.pop() ?? Buffer.allocUnsafeSlow(PART_BYTES);
        filled = 0;
      }
    };
    for await (const chunk of source) await take(chunk);
    // At least one whole part was read before a multipart upload is chosen.
    if (filled > 0) send(part, filled);
    await settle(0);
    const completed = await client.send(
      new CompleteMultipartUploadCommand({
        ...target,
        UploadId: uploadId,
        MultipartUpload: { Parts: parts },
        ...(existing === undefined ? { IfNoneMatch: '*' } : {}),
      }),
    );
    // `||`: Ceph's answer holds an empty ETag.
    return completed.ETag || multipartEtag(parts);
  } catch (error: unknown) {
    await Promise.allSettled(inFlight);
    await client
      .send(new AbortMultipartUploadCommand({ ...target, UploadId: uploadId }))
      .catch(() => undefined);
    throw error;
  }
}

/**
 * The ETag a completed multipart upload gets: the MD5 of its parts' MD5s (each part's ETag),
 * then `-` and their count, as S3 and Ceph make it. Ceph RGW answers CompleteMultipartUpload
 * without one, and a HEAD made after it may already see another run's object; undefined when a
 * part's ETag is not an MD5 (AWS with SSE-KMS, which does send its own).
 */
export function multipartEtag(
  parts: readonly { readonly ETag: string | undefined }[],
): string | undefined {
  const md5s = parts.map((part) => part.ETag?.replace(/"/g, '') ?? '');
  if (md5s.length === 0 || md5s.some((md5) => !/^[0-9a-f]{32}$/i.test(md5))) return undefined;
  const hash = createHash('md5');
  for (const md5 of md5s) hash.update(Buffer.from(md5, 'hex'));
  return `"${hash.digest('hex')}-${md5s.length}"`;
}
