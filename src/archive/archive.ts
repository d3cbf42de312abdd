import { Counter, type Registry } from 'prom-client';
import type { Logger } from 'pino';
import type { StorageSettings } from '../config/storage-settings.js';
import type { Delivery } from '../provider-spec/delivery.js';
import { withDeadline } from '../util/deadline.js';
import { fileAreaOf, type AudioStore, type FileArea } from '../storage/audio-store.js';
import {
  queryRange,
  type ArchiveQuery,
  type Accepted,
  type ArchivedDelivery,
} from './archived-delivery.js';
import { BATCH_LINGER_MS, type BatchedLine } from './batch-writer.js';
import { entryWriter } from './entry-writer.js';
import { findEntries } from './find-entries.js';
import { listHours, listDays } from './list-hours.js';
import type { UnreadableEntry } from './parse-entry.js';
import { DAY_MS, HOUR_MS } from './folders.js';

// What the service's importers (index.ts, cli/, tests) take from here, wherever it is declared.
export type { ArchiveQuery } from './archived-delivery.js';
export type { ArchivedDelivery } from './archived-delivery.js';
export type { BatchedLine } from './batch-writer.js';
export { hourFolder } from './folders.js';
export type { UnreadableEntry } from './parse-entry.js';

/**
 * The archive of accepted deliveries, for `replay`, in the audio store's files area (`.archive/`
 * under AUDIO_DIR or S3_PREFIX), laid out by the hour each was received (UTC), so a time range
 * is found by listing a few hour folders, never an hour's millions of names. Inside the hour
 * (the names: file-kind.ts):
 *
 * - **Segments**, in an area that can append (the local store): one line of JSON per delivery,
 *   appended to its writer's file of the hour and of one of 256 buckets of the id's SHA-256:
 *
 *       .archive/2026-11-24/09/~3f/20261125T061502123Z-1a2b3c4d.ndjson
 *
 *   Each writer (a worker process) appends only to its own files, so lines never interleave; an
 *   append that fails moves the writer to new files, so a torn line is only ever a file's last.
 *   An id is found by reading its bucket's files in each hour (1/256 of the hour). An entry costs
 *   one append to a file that exists, where a file per entry cost two new inodes (a folder and
 *   the file), the largest part of the archive's price in the bench (docs/performance.md).
 *   (entry-writer.ts)
 * - **Batches**, in an area that writes whole objects only (S3; a custom store's): the entries a
 *   writer archives close together, as lines of one object of the hour, written by one PUT,
 *   whose name says which of the 256 buckets its lines' ids fall in (a bitmap, in hex):
 *
 *       .archive/2026-11-24/09/~batches/20261125T061502123Z-1a2b3c4d-17.<64 hex>.ndjson
 *
 *   An entry costs a share of one PUT, where an object per entry cost a PUT each: on S3 every
 *   request is paid for twice, in the worker's CPU (the SDK's signing and middleware) and in the
 *   store's (docs/performance.md). The write starts with the job; its batch is put once one of
 *   its jobs waits for it (a group commit: while a PUT of the writer's is in flight, the batch
 *   gathers), at the latest after the linger. An id is found by listing each
 *   hour's batches and reading those whose name holds its bucket. (batch-writer.ts)
 * - **Entry files**, written by versions before the batches (still read): one small JSON file per
 *   delivery, by item: `.archive/2026-11-24/09/<file stem>/20261124T091502123Z_<job id>.json`.
 *
 * Paths are made of the receipt time, the job id, the id's hash or file stem
 * (storage/file-name.ts) and a writer's random name, never of a delivery's text. The same
 * delivery archived twice (a job re-run) is read once: entry files by their path, lines by their
 * job id within their bucket (segments) or hour (batches). Entries of the first layout
 * (`<hour>/<time>_<job id>_<stem>.json`) are still read by ranges.
 */
export interface Archive {
  /**
   * Archives one accepted delivery (the worker calls this; replays are not archived again).
   * Resolves once the entry is written (appended to its segment, or its batch put).
   */
  record(entry: Accepted): Promise<void>;
  /**
   * Starts archiving one accepted delivery, and says when the caller waits for it (`written()`):
   * a batch does not linger for others once one of its lines is waited for (batch-writer.ts).
   */
  begin(entry: Accepted): BatchedLine;
  /** The hour folders a query's time range touches, oldest first (`2026-11-24/09/`). */
  hours(query: ArchiveQuery): Promise<string[]>;
  /**
   * The entries a query selects, hour by hour, oldest hour first (inside an hour, in the order
   * the store lists); memory is bounded by a listing page and a round of reads, never an hour.
   */
  find(
    query: ArchiveQuery,
    onUnreadable?: (entry: UnreadableEntry) => void,
  ): AsyncGenerator<ArchivedDelivery>;
  /**
   * Removes the hours wholly older than `retentionHours` before `now`: an entry lives its
   * retention and at most one hour more. Returns the folders removed.
   */
  sweep(retentionHours: number, now?: Date): Promise<string[]>;
}

export interface ArchiveOptions {
  /**
   * How long a batch gathers lines while none of them is waited for (areas without append;
   * batch-writer.ts). @defaultValue 50 ms
   */
  readonly batchLingerMs?: number;
}

export function createArchive(area: FileArea, options: ArchiveOptions = {}): Archive {
  const begin = entryWriter(area, options.batchLingerMs ?? BATCH_LINGER_MS);
  return {
    record: (entry) => begin(entry).written(),
    begin,
    hours(query) {
      const { since, until } = queryRange(query);
      return listHours(area, since, until);
    },
    find: (query, onUnreadable) => findEntries(area, query, onUnreadable),
    sweep: (retentionHours, now = new Date()) => sweepArchive(area, retentionHours, now),
  };
}

/** Removes the hour folders that end at or before `cutoff`; returns them. */
async function removeHoursBefore(area: FileArea, cutoff: number): Promise<string[]> {
  const removed: string[] = [];
  for (const folder of await listHours(area, -Infinity, cutoff)) {
    const [day = '', hour = ''] = folder.split('/');
    if (Date.parse(`${day}T${hour}:00:00Z`) + HOUR_MS > cutoff) continue;
    await area.remove(folder);
    removed.push(folder);
  }
  return removed;
}

async function isEmpty(listing: AsyncIterable<string>): Promise<boolean> {
  // Returning from the loop closes the listing (a directory handle, a paged request).
  for await (const _name of listing) return false;
  return true;
}

/** A day folder left empty goes too (another sweeper may be removing it as well). */
async function removeEmptyDaysBefore(area: FileArea, cutoff: number): Promise<void> {
  for (const day of await listDays(area)) {
    if (Date.parse(`${day}T00:00:00Z`) + DAY_MS > cutoff) continue;
    if (await isEmpty(area.list(`${day}/`))) await area.remove(`${day}/`);
  }
}

/** Archive['sweep']: removes the hours wholly older than `retentionHours`, and emptied days. */
export async function sweepArchive(
  area: FileArea,
  retentionHours: number,
  now: Date,
): Promise<string[]> {
  const cutoff = now.getTime() - retentionHours * HOUR_MS;
  const removed = await removeHoursBefore(area, cutoff);
  await removeEmptyDaysBefore(area, cutoff);
  return removed;
}

/** An archive write that has not answered by then is counted failed, and the job retried. */
const WRITE_DEADLINE_MS = 10_000;
/** How often each worker removes expired hours (also once at start): entries are kept by the hour. */
const SWEEP_EVERY_MS = 15 * 60 * 1000;

/** The delivery was not archived: its job fails this attempt, after its handling ran. */
export class ArchiveWriteError extends Error {
  override name = 'ArchiveWriteError';
  constructor(cause: unknown) {
    super(`archive write failed: ${cause instanceof Error ? cause.message : String(cause)}`, {
      cause,
    });
  }
}

export interface DeliveryArchiver {
  /**
   * Starts archiving a job's delivery (a replay's is archived already); `written()`, called once
   * the job waits for it, resolves within its deadline from then. A failure is logged and
   * counted, and rejects: every accepted delivery is archived (docs/replay.md), so the job is retried
   * until it is: a job completed without its archive entry leaves a delivery no replay can bring
   * back.
   */
  record(job: {
    readonly delivery: Delivery;
    readonly jobId: string;
    readonly receivedAt: string;
    readonly replay: boolean;
  }): BatchedLine;
  /** Stops the sweeps. */
  stop(): void;
}

/**
 * The worker's side of the archive (createArchive, above): every delivery a worker takes is
 * archived in the store while it is handled, so the receiver's route does nothing more and
 * needs no store. Undefined when ARCHIVE_RETENTION_HOURS is 0 or the store keeps no archive.
 */
export function startArchiving(
  config: Pick<StorageSettings, 'archiveRetentionHours'>,
  store: AudioStore,
  logger: Logger,
  registers: readonly Registry[],
): DeliveryArchiver | undefined {
  if (config.archiveRetentionHours === 0) return undefined;
  const area = fileAreaOf(store);
  if (area === undefined) {
    logger.warn('the audio store keeps no archive (no `files` area): replay will find nothing');
    return undefined;
  }
  const archive = createArchive(area);
  const writes = new Counter({
    name: 'webhook_archive_writes_total',
    help: 'Deliveries archived for replay, by result: archived, or failed (logged; the job is retried until it is archived)',
    labelNames: ['result'],
    registers: [...registers],
  });
  writes.inc({ result: 'archived' }, 0);
  writes.inc({ result: 'failed' }, 0);

  let sweeping: Promise<void> | undefined;
  const sweep = () => {
    sweeping ??= archive
      .sweep(config.archiveRetentionHours)
      .then(
        (removed) => {
          if (removed.length > 0)
            logger.info({ removed }, 'archive: removed the hours past ARCHIVE_RETENTION_HOURS');
        },
        (error: unknown) => {
          logger.warn({ err: error }, 'archive: removing expired hours failed; will try again');
        },
      )
      .finally(() => {
        sweeping = undefined;
      });
  };
  sweep();
  const timer = setInterval(sweep, SWEEP_EVERY_MS);
  timer.unref();

  return {
    record({ delivery, jobId, receivedAt, replay }) {
      if (replay) return { written: () => Promise.resolve() };
      const line = archive.begin({ delivery, jobId, receivedAt });
      return {
        async written() {
          try {
            await withDeadline(line.written(), WRITE_DEADLINE_MS, 'the archive write');
            writes.inc({ result: 'archived' });
          } catch (error: unknown) {
            writes.inc({ result: 'failed' });
            logger.error(
              { err: error, jobId, event: delivery.event, id: delivery.data.id },
              'archive write failed; the job is retried until its delivery is archived',
            );
            throw new ArchiveWriteError(error);
          }
        },
      };
    },
    stop() {
      clearInterval(timer);
    },
  };
}
