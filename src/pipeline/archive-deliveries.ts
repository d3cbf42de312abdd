import { Counter, type Registry } from 'prom-client';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { createArchive } from '../archive/archive.js';
import type { Delivery } from '../webhooks/delivery.js';
import { withDeadline } from '../util/deadline.js';
import type { AudioStore } from '../storage/audio-store.js';

/** An archive write that has not answered by then is counted failed; the job goes on. */
const WRITE_DEADLINE_MS = 10_000;
/** How often each worker removes expired hours (also once at start): entries are kept by the hour. */
const SWEEP_EVERY_MS = 15 * 60 * 1000;

export interface DeliveryArchiver {
  /**
   * Archives a job's delivery (a replay's is archived already). Never rejects and never waits
   * past its deadline: a failure is logged and counted, and the delivery is handled anyway.
   */
  record(job: {
    readonly delivery: Delivery;
    readonly jobId: string;
    readonly receivedAt: string;
    readonly replay: boolean;
  }): Promise<void>;
  /** Stops the sweeps. */
  stop(): void;
}

/**
 * The worker's side of the archive (archive/archive.ts): every delivery a worker takes is
 * archived in the store while it is handled, so the receiver's route does nothing more and
 * needs no store. Undefined when ARCHIVE_RETENTION_HOURS is 0 or the store keeps no archive.
 */
export function startArchiving(
  config: Pick<Config, 'archiveRetentionHours'>,
  store: AudioStore,
  logger: Logger,
  registers: readonly Registry[],
): DeliveryArchiver | undefined {
  if (config.archiveRetentionHours === 0) return undefined;
  if (store.archive === undefined) {
    logger.warn('the audio store keeps no archive (no `archive` on it): replay will find nothing');
    return undefined;
  }
  const archive = createArchive(store.archive);
  const writes = new Counter({
    name: 'webhook_archive_writes_total',
    help: 'Deliveries archived for replay, by result: archived, or failed (logged; the delivery was handled anyway)',
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
    async record({ delivery, jobId, receivedAt, replay }) {
      if (replay) return;
      try {
        await withDeadline(
          archive.record({ delivery, jobId, receivedAt }),
          WRITE_DEADLINE_MS,
          'the archive write',
        );
        writes.inc({ result: 'archived' });
      } catch (error: unknown) {
        writes.inc({ result: 'failed' });
        logger.error(
          { err: error, jobId, event: delivery.event, id: delivery.data.id },
          'archive write failed; the delivery is handled anyway, but replay will not find it',
        );
      }
    },
    stop() {
      clearInterval(timer);
    },
  };
}
