import type { Readable } from 'node:stream';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { itemFields, type ObjectItem, type StoredObject } from './s3-item-object.js';
import type { S3Location } from './s3-location.js';

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
