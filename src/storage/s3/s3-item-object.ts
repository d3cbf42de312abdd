import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import { HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import type { WriteOptions } from '../audio-store.js';
import { statusOf } from './s3-storage-error.js';
import type { S3Location } from './s3-location.js';
import { NameCollisionError } from '../storage-errors.js';

/** The object's own record of the item it holds (user metadata, `x-amz-meta-item-id`). */
const ITEM_ID = 'item-id';

/** An object as a HEAD shows it. */
export interface StoredObject {
  readonly bytes: number;
  /** Its record of the item it holds (itemRecord, below); undefined when it has none. */
  readonly record: string | undefined;
  readonly etag: string | undefined;
}

/** The object under `name`, with the item it records; undefined when there is none. */
export async function s3ItemObject(
  s3: S3Location,
  name: string,
): Promise<StoredObject | undefined> {
  try {
    const found = await s3.client.send(
      new HeadObjectCommand({ Bucket: s3.bucket, Key: s3.key(name) }),
    );
    return {
      bytes: found.ContentLength ?? 0,
      record: found.Metadata?.[ITEM_ID],
      etag: found.ETag,
    };
  } catch (error: unknown) {
    if (statusOf(error) === 404) return undefined;
    throw s3.fail(error, `looking for ${name}`);
  }
}

/** What a write records with its object: the item it holds, the media type it is served as. */
export type ObjectItem = Pick<WriteOptions, 'id' | 'contentType'> | undefined;

/**
 * What a write of an item's object adds to its request: the item's record, so that the object
 * records its item, and its `Content-Type` (else S3 serves it as `application/octet-stream`).
 */
export const itemFields = (item: ObjectItem) => ({
  ...(item?.contentType === undefined ? {} : { ContentType: item.contentType }),
  ...(item?.id === undefined ? {} : { Metadata: { [ITEM_ID]: itemRecord(item.id) } }),
});

/** The longest record that is the id itself: a tenth of AWS's 2 KB of user metadata in all. */
const MAX_PLAIN = 200;

/**
 * How an object records in a header which item it holds (S3's `x-amz-meta-item-id`): the id
 * percent-encoded when that is at most 200 characters, else `sha256:` and the SHA-256 hex of the
 * id's UTF-8. The receiver accepts any well-formed Unicode id up to its 1 MiB body, and a header
 * carries neither non-ASCII nor controls, nor length: Ceph answers 400 to a 20,000-character
 * one, AWS to 2 KB of user metadata. Percent-encoding never writes `:`, so the two forms never
 * meet; the id itself is in the item's metadata file. An id that is not well-formed (a lone
 * surrogate, which encodeURIComponent refuses) is hashed as its UTF-8 (with U+FFFD).
 */
export function itemRecord(id: string): string {
  const encoded = percentEncoded(id);
  if (encoded !== undefined && encoded.length <= MAX_PLAIN) return encoded;
  return `sha256:${createHash('sha256').update(id, 'utf8').digest('hex')}`;
}

/**
 * True when `recorded` is this id's record: the current form, or the one written before records
 * were bounded (the whole id percent-encoded), so an item stored then is still its own.
 */
export function recordsItem(recorded: string, id: string): boolean {
  return recorded === itemRecord(id) || recorded === percentEncoded(id);
}

function percentEncoded(id: string): string | undefined {
  try {
    return encodeURIComponent(id);
  } catch {
    return undefined;
  }
}

/**
 * The object under `name` when it may be replaced by a write of `id`: undefined when there is
 * none; itself when it is this item's (whole, as every object under its key is: an earlier
 * run, or one running now); a collision when it is another item's or records no item at all
 * (not written by this service, so not ours to replace). Nothing is ever deleted to make room:
 * the object may be a finished run's, and the write that follows replaces it atomically.
 */
export async function s3ReplaceableObject(
  s3: S3Location,
  name: string,
  id: string | undefined,
): Promise<StoredObject | undefined> {
  const existing = await s3ItemObject(s3, name);
  if (existing === undefined) return undefined;
  // Compared as recorded, never decoded: another tool's record need not decode at all.
  if (id === undefined || existing.record === undefined || !recordsItem(existing.record, id))
    throw new NameCollisionError(name, existing.record ?? '(none recorded)', id ?? '(none given)');
  return existing;
}

/**
 * A PUT of an item's object that creates it when `onto` is undefined (nothing of the item was
 * there), and otherwise replaces exactly the object looked at: never another run's newer one.
 */
export function s3PutCommand(
  s3: S3Location,
  name: string,
  body: Buffer | Readable,
  bytes: number,
  onto: StoredObject | undefined,
  item: ObjectItem,
): PutObjectCommand {
  return new PutObjectCommand({
    Bucket: s3.bucket,
    Key: s3.key(name),
    Body: body,
    ContentLength: bytes,
    // Unquoted: Ceph RGW (and DigitalOcean Spaces, built on it) answer 412 to the quoted form
    // HeadObject returns; AWS S3 takes either.
    ...(onto?.etag === undefined ? { IfNoneMatch: '*' } : { IfMatch: onto.etag.replace(/"/g, '') }),
    ...itemFields(item),
  });
}
