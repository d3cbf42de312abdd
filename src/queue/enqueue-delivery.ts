import { randomUUID } from 'node:crypto';
import type { WebhookEvent } from '../webhooks/events.js';
import type { DeliveryQueue } from './delivery-queue.js';
import { withDeadline } from '../redis/deadline.js';
import { classifyStoreError, StorageUnavailableError } from './store-errors.js';

export interface EnqueueResult {
  readonly jobId: string;
  /** True when the same `event` + `data.id` was accepted within the dedupe window. */
  readonly duplicate: boolean;
}

export interface EnqueueOptions {
  readonly dedupeTtlSeconds: number;
  /**
   * The whole store must answer within this; past it the delivery is not acknowledged. Commands
   * queued behind a stalled pipeline each get ioredis's own timeout only once sent, which let a
   * paused Redis hold requests for about 2 s; this bounds the request itself.
   */
  readonly deadlineMs: number;
  readonly receivedAt?: Date;
  /** Replicas that must acknowledge the write (REDIS_WAIT_REPLICAS), and how to ask them. */
  readonly replicas?: { readonly count: number; readonly confirm: () => Promise<number> };
}

/** The dedupe key: the sender re-sends the same event for the same item on every retry. */
export function dedupeId(event: string, id: string): string {
  return `${event}:${id}`;
}

/**
 * Stores the delivery and its dedupe mark in ONE atomic Redis script (BullMQ's deduplication in
 * throttle mode): no moment exists in which a delivery is marked seen but not queued, so a crash
 * can never swallow one. The key outlives the job (removeOnComplete does not clear a key with a
 * ttl), so a retry after processing is still recognised. A fresh jobId per call tells the
 * outcome: BullMQ returns the earlier job's id when it deduplicated. Failures are classified:
 * StorageUnavailableError (retry later), UnstorableDeliveryError (never), anything else a defect.
 */
export async function enqueueDelivery(
  queue: DeliveryQueue,
  event: WebhookEvent,
  { dedupeTtlSeconds, deadlineMs, receivedAt = new Date(), replicas }: EnqueueOptions,
): Promise<EnqueueResult> {
  const jobId = randomUUID();
  const add = queue.add(
    event.event,
    { event, receivedAt: receivedAt.toISOString() },
    {
      jobId,
      deduplication: { id: dedupeId(event.event, event.data.id), ttl: dedupeTtlSeconds * 1000 },
    },
  );
  const stored = add.then(async (job) => {
    if (replicas !== undefined) {
      const acknowledged = await replicas.confirm();
      if (acknowledged < replicas.count) {
        throw new StorageUnavailableError(
          `${acknowledged} of ${replicas.count} replicas acknowledged in time; the delivery may be stored, so a retry may be a duplicate`,
        );
      }
    }
    return job;
  });
  try {
    const job = await withDeadline(stored, deadlineMs, 'Redis');
    return { jobId: job.id ?? jobId, duplicate: job.id !== jobId };
  } catch (error: unknown) {
    throw classifyStoreError(error);
  }
}
