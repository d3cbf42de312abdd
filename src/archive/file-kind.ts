import { randomBytes } from 'node:crypto';

/*
 * The names of an hour's files, made and recognised here, side by side, so the two never drift:
 * each pattern is relative to its hour folder (archive.ts describes the layouts).
 */

/** `~<bucket>/<writer>.ndjson`: `~` and two hex digits are never a stem. */
const SEGMENT = /^(~[0-9a-f]{2}\/)\d{8}T\d{9}Z-[0-9a-f]{8}\.ndjson$/;
/** The batches' folder in an hour: a `~` stem is `~` and 64 hex digits (storage/file-name.ts). */
export const BATCH_FOLDER = '~batches/';
/** `~batches/<writer>-<sequence>.<buckets>.ndjson`. */
const BATCH = /^~batches\/\d{8}T\d{9}Z-[0-9a-f]{8}-\d{1,15}\.([0-9a-f]{64})\.ndjson$/;
/** `<stem>/<time>_<job id>.json`: neither the time nor a job id holds `_`. */
const ENTRY_FILE = /^[^/]+\/(\d{8}T\d{9}Z)_[A-Za-z0-9-]{1,64}\.json$/;
/** The first layout's `<time>_<job id>_<stem>.json`, directly in the hour. */
const FIRST_LAYOUT_ENTRY_FILE = /^(\d{8}T\d{9}Z)_[A-Za-z0-9-]{1,64}_[^/]+\.json$/;

/** A writer's name for its segments and batches: when it started, and 32 random bits. */
export function writerName(): string {
  return `${compactTime(new Date())}-${randomBytes(4).toString('hex')}`;
}

/** A writer's segment in a bucket's folder (`<hour>~3f/`). */
export function segmentFileName(bucketFolder: string, writer: string): string {
  return `${bucketFolder}${writer}.ndjson`;
}

/** A writer's batch number `sequence` of an hour; `buckets`: its bitmap (folders.ts). */
export function batchFileName(hour: string, writer: string, sequence: number, buckets: Buffer) {
  return `${hour}${BATCH_FOLDER}${writer}-${sequence}.${buckets.toString('hex')}.ndjson`;
}

export type FileKind =
  /** `folder`: its bucket's, `~3f/`. */
  | { readonly kind: 'segment'; readonly folder: string }
  /** `bitmap`: the 64 hex digits of the buckets its lines' ids fall in. */
  | { readonly kind: 'batch'; readonly bitmap: string }
  /** Either layout's; `time`: its receipt time, epoch ms. */
  | { readonly kind: 'entry file'; readonly time: number };

/** What a path within its hour names; undefined if none of the archive's files. */
export function fileKind(inHour: string): FileKind | undefined {
  const segment = SEGMENT.exec(inHour);
  if (segment !== null) return { kind: 'segment', folder: segment[1] ?? '' };
  const batch = BATCH.exec(inHour);
  if (batch !== null) return { kind: 'batch', bitmap: batch[1] ?? '' };
  const time = ENTRY_FILE.exec(inHour)?.[1] ?? FIRST_LAYOUT_ENTRY_FILE.exec(inHour)?.[1];
  return time === undefined ? undefined : { kind: 'entry file', time: fromCompactTime(time) };
}

/** `2026-11-24T09:15:02.123Z` → `20261124T091502123Z`: the time in the archive's file names. */
export function compactTime(date: Date): string {
  return date.toISOString().replace(/[-:.]/g, '');
}

/** `20261124T091502123Z` → its epoch milliseconds. */
export function fromCompactTime(compact: string): number {
  const [, y, mo, d, h, mi, s, ms] =
    /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})(\d{3})Z$/.exec(compact) ?? [];
  return Date.parse(`${y}-${mo}-${d}T${h}:${mi}:${s}.${ms}Z`);
}
