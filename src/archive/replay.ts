import { randomUUID } from 'node:crypto';
import { queueOf, type DeliveryQueue } from '../queue/delivery-queue.js';
import { withDeadline } from '../util/deadline.js';
import type { ArchivedDelivery } from './archived-delivery.js';
import type { DeliveryTimeline } from '../history/delivery-timeline.js';

/** Jobs put on the queue in one round trip. */
export const REPLAY_BATCH = 500;
/**
 * While this many jobs wait to be taken, a replay waits before its next batch: a large replay
 * neither fills the queue's Redis (noeviction: a full one refuses deliveries) nor buries new
 * deliveries, which are taken first anyway (see REPLAY_PRIORITY).
 */
export const REPLAY_MAX_BACKLOG = 10_000;
/**
 * BullMQ takes jobs without a priority before prioritized ones: the provider's new deliveries
 * go before a replay's, however large the replay. Any value works; all replays share it.
 */
const REPLAY_PRIORITY = 100;
/** A backlog that has not gone down in this long: the workers are not running. */
const STALLED_BACKLOG_MS = 120_000;
const BACKLOG_POLL_MS = 1_000;
/** Each Redis call of a replay answers within this, or the replay stops with one line. */
const REDIS_DEADLINE_MS = 10_000;

export interface ReplayProgress {
  /** Archive entries looked at so far. */
  readonly seen: number;
  /** Put on the queue again. */
  readonly queued: number;
  /** Already on the queue from a replay still running: not queued twice. */
  readonly alreadyQueued: number;
  /** The backlog a batch is waiting on, when it is waiting. */
  readonly waitingOnBacklog?: number;
}

export interface ReplayOptions {
  /** @defaultValue REPLAY_BATCH */
  readonly batchSize?: number;
  /** @defaultValue REPLAY_MAX_BACKLOG */
  readonly maxBacklog?: number;
  /** A backlog that has not gone down for this long stops the replay. @defaultValue 120 s */
  readonly stalledAfterMs?: number;
  /** Called after every batch, and while waiting on the backlog. @defaultValue none */
  readonly onProgress?: (progress: ReplayProgress) => void;
  /** @defaultValue the current time */
  readonly now?: () => Date;
  /**
   * The command that resumes this replay from `from` (ISO 8601, the start of the hour it stopped
   * in), for the message of a stalled replay; it keeps to the range asked (that hour may begin
   * before it). @defaultValue `--since <from>` alone
   */
  readonly resumeCommand?: (from: string) => string;
  /** Where each replay queued is noted (`replayed`), for the inspector. @defaultValue none */
  readonly timeline?: DeliveryTimeline | undefined;
}

/**
 * The start of the hour `at` lies in: the archive lists an hour's entries by item, not by time,
 * so a resume takes the whole hour again (a delivery replayed twice, never one left out).
 */
function hourStart(at: string): string {
  return `${new Date(at).toISOString().slice(0, 13)}:00:00.000Z`;
}

/** A replay stopped before its end (the workers are not taking jobs); says where to resume. */
export class ReplayStalledError extends Error {
  override name = 'ReplayStalledError';
}

/** The dedupe id of a replay of the delivery first handled by `jobId`. */
function replayDedupeId(jobId: string): string {
  // The provider's are the pair's digest (queue/delivery-keys.ts), base64url, which holds no
  // colon, so this can never be one of them.
  return `:replay:${jobId}`;
}

/**
 * Puts archived deliveries on the queue again, in batches, as new jobs: a fresh job id, the
 * original receipt time, `replay` set (the hooks see `context.delivery.replay`), and no mark of
 * the provider's deduplication, which a replay never reads nor writes. A delivery whose replay
 * is still waiting or running (another `replay` of the same range) is not queued twice: BullMQ's
 * deduplication in simple mode keeps its id until that job completes or fails. Each delivery
 * goes to its own shard's queue among `queues` (each shard's, by index), where its first copy
 * was and a worker serves; the backlog is every shard's.
 */
export async function replayDeliveries(
  queues: readonly DeliveryQueue[],
  entries: AsyncIterable<ArchivedDelivery> | Iterable<ArchivedDelivery>,
  options: ReplayOptions = {},
): Promise<ReplayProgress> {
  const batchSize = options.batchSize ?? REPLAY_BATCH;
  const maxBacklog = options.maxBacklog ?? REPLAY_MAX_BACKLOG;
  const now = options.now ?? (() => new Date());
  const stalledAfterMs = options.stalledAfterMs ?? STALLED_BACKLOG_MS;
  const resume = options.resumeCommand ?? ((from: string) => `--since ${from}`);
  const at = now().toISOString();
  let progress: ReplayProgress = { seen: 0, queued: 0, alreadyQueued: 0 };
  const report = (next: ReplayProgress) => {
    progress = next;
    options.onProgress?.(progress);
  };
  const shards = queues;
  const backlog = async () => {
    const counts = await withDeadline(
      Promise.all(shards.map((queue) => queue.getJobCounts('wait', 'prioritized'))),
      REDIS_DEADLINE_MS,
      'Redis',
    );
    return counts.reduce((sum, each) => sum + (each.wait ?? 0) + (each.prioritized ?? 0), 0);
  };

  /** Waits while the backlog is at the bound; stops the replay if it does not go down. */
  async function roomFor(first: ArchivedDelivery): Promise<void> {
    let waiting = await backlog();
    let lowest = waiting;
    let movedAt = Date.now();
    while (waiting >= maxBacklog) {
      report({ ...progress, waitingOnBacklog: waiting });
      if (Date.now() - movedAt > stalledAfterMs) {
        throw new ReplayStalledError(
          `${waiting} jobs have waited ${stalledAfterMs / 1000} s without going down (are the workers running?); ` +
            `${progress.queued} replayed so far. Resume with: ${resume(hourStart(first.received_at))}`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, BACKLOG_POLL_MS));
      waiting = await backlog();
      if (waiting < lowest) {
        lowest = waiting;
        movedAt = Date.now();
      }
    }
  }

  async function add(batch: readonly ArchivedDelivery[]): Promise<void> {
    const first = batch[0];
    if (first === undefined) return;
    await roomFor(first);
    const jobs = batch.map((entry) => ({
      name: entry.event,
      data: {
        body: JSON.stringify(entry.delivery),
        receivedAt: entry.received_at,
        replay: { of: entry.job_id, at },
      },
      opts: {
        jobId: randomUUID(),
        priority: REPLAY_PRIORITY,
        deduplication: { id: replayDedupeId(entry.job_id) },
      },
    }));
    const added = await withDeadline(addByShard(shards, batch, jobs), REDIS_DEADLINE_MS, 'Redis');
    const queued = added.filter((job, index) => job.id === jobs[index]?.opts.jobId).length;
    await noteReplays(options.timeline, batch, added, jobs);
    report({
      seen: progress.seen + batch.length,
      queued: progress.queued + queued,
      alreadyQueued: progress.alreadyQueued + batch.length - queued,
    });
  }

  let batch: ArchivedDelivery[] = [];
  for await (const entry of entries) {
    batch.push(entry);
    if (batch.length >= batchSize) {
      await add(batch);
      batch = [];
    }
  }
  await add(batch);
  return { seen: progress.seen, queued: progress.queued, alreadyQueued: progress.alreadyQueued };
}

/** Each job added to its delivery's shard's queue, one addBulk per shard; answers in order. */
async function addByShard(
  shards: readonly DeliveryQueue[],
  batch: readonly ArchivedDelivery[],
  jobs: Parameters<DeliveryQueue['addBulk']>[0],
): Promise<{ readonly id?: string | undefined }[]> {
  const byQueue = new Map<DeliveryQueue, number[]>();
  batch.forEach((entry, index) => {
    const queue = queueOf(shards, entry.event, entry.id);
    byQueue.set(queue, [...(byQueue.get(queue) ?? []), index]);
  });
  const added: { readonly id?: string | undefined }[] = [];
  await Promise.all(
    [...byQueue].map(async ([queue, indexes]) => {
      const done = await queue.addBulk(indexes.flatMap((index) => jobs[index] ?? []));
      indexes.forEach((index, at) => {
        added[index] = done[at] ?? {};
      });
    }),
  );
  return added;
}

/** `replayed` in the timeline of each delivery of a batch that was queued again. */
async function noteReplays(
  timeline: DeliveryTimeline | undefined,
  batch: readonly ArchivedDelivery[],
  added: readonly { readonly id?: string | undefined }[],
  jobs: readonly { readonly opts: { readonly jobId: string } }[],
): Promise<void> {
  if (timeline === undefined) return;
  await Promise.all(
    batch.map(async (entry, index) => {
      const jobId = jobs[index]?.opts.jobId;
      if (jobId === undefined || added[index]?.id !== jobId) return;
      const subject = {
        event: entry.event,
        id: entry.id,
        receivedAt: Date.parse(entry.received_at),
      };
      // A replay is queued whatever becomes of its note: never a reason to stop one.
      await timeline
        .write(subject, {
          code: 'P',
          detail: jobId,
          state: 'q',
          failedIndex: '-',
        })
        .catch(() => undefined);
    }),
  );
}
