import { createHash } from 'node:crypto';

/**
 * An id's bucket, 0–255: the first byte of its SHA-256. A query for an id reads only its bucket's
 * segments and the batches whose names hold its bucket.
 */
export function idBucket(id: string): number {
  return createHash('sha256').update(id, 'utf8').digest()[0] ?? 0;
}

/** The folder of an id's bucket within its hour: `~` and its bucket in two hex digits. */
export function bucketFolder(id: string): string {
  return `~${idBucket(id).toString(16).padStart(2, '0')}/`;
}

/** A batch's bitmap of buckets: bucket b at bit b % 8 of byte b / 8 (64 hex digits in its name). */
export function addBucket(bitmap: Buffer, bucket: number): void {
  bitmap[bucket >> 3] = (bitmap[bucket >> 3] ?? 0) | (1 << (bucket & 7));
}

/** Whether a batch's bitmap, as the 64 hex digits of its name, holds `bucket`. */
export function holdsBucket(bitmap: string, bucket: number): boolean {
  const byte = Number.parseInt(bitmap.slice((bucket >> 3) * 2, (bucket >> 3) * 2 + 2), 16);
  return (byte & (1 << (bucket & 7))) !== 0;
}

export const HOUR_MS = 3600 * 1000;
export const DAY_MS = 24 * HOUR_MS;

/** The hour folder a time falls in: `2026-11-24T09:15:02.123Z` → `2026-11-24/09/`. */
export function hourFolder(time: string): string {
  const iso = new Date(time).toISOString();
  return `${iso.slice(0, 10)}/${iso.slice(11, 13)}/`;
}
