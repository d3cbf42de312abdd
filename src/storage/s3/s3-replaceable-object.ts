import { recordsItem } from './item-record.js';
import { s3ItemObject, type StoredObject } from './s3-item-object.js';
import type { S3Location } from './s3-location.js';
import { NameCollisionError } from '../storage-errors.js';

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
