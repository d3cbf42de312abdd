import { HeadObjectCommand } from '@aws-sdk/client-s3';
import type { WriteOptions } from '../audio-store.js';
import { itemRecord } from './item-record.js';
import { statusOf } from './s3-storage-error.js';
import type { S3Location } from './s3-location.js';

/** The object's own record of the item it holds (user metadata, `x-amz-meta-item-id`). */
const ITEM_ID = 'item-id';

/** An object as a HEAD shows it. */
export interface StoredObject {
  readonly bytes: number;
  /** Its record of the item it holds (storage/s3/item-record.ts); undefined when it has none. */
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
