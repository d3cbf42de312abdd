import { randomUUID } from 'node:crypto';
import type { WebhookEvent } from '../webhooks/events.js';
import type { DeliveryQueue } from './delivery-queue.js';

export interface EnqueueResult {
  readonly jobId: string;
  /** True when the same `event` + `data.id` was accepted within the dedupe window. */
  readonly duplicate: boolean;
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
 * outcome: BullMQ returns the earlier job's id when it deduplicated.
 */
export async function enqueueDelivery(
  queue: DeliveryQueue,
  event: WebhookEvent,
  dedupeTtlSeconds: number,
  receivedAt = new Date(),
): Promise<EnqueueResult> {
  const jobId = randomUUID();
  const job = await queue.add(
    event.event,
    { event, receivedAt: receivedAt.toISOString() },
    {
      jobId,
      deduplication: { id: dedupeId(event.event, event.data.id), ttl: dedupeTtlSeconds * 1000 },
    },
  );
  return { jobId: job.id ?? jobId, duplicate: job.id !== jobId };
}
