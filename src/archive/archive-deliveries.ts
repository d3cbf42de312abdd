import { Counter, type Registry } from 'prom-client';
import type { Logger } from 'pino';
import type { StorageSettings } from '../config/storage-settings.js';
import { createArchive, type BatchedLine } from './archive.js';
import type { Delivery } from '../provider-spec/delivery.js';
import { withDeadline } from '../util/deadline.js';
import { fileAreaOf, type AudioStore } from '../storage/audio-store.js';

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
   * until it is (the soak found deliveries handled while the store was full, completed, and
   * missing from the archive for good).
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
 * The worker's side of the archive (archive/archive.ts): every delivery a worker takes is
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
