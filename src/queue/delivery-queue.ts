import { Queue, type ConnectionOptions } from 'bullmq';
import type { WebhookEvent } from '../webhooks/events.js';

/** One queue for every event: the dispatcher picks the handler by job name (= event name). */
export const DELIVERY_QUEUE = 'deliveries';

export interface DeliveryJobData {
  readonly event: WebhookEvent;
  /** When this receiver accepted the delivery, ISO 8601. */
  readonly receivedAt: string;
}

export type DeliveryQueue = Queue<DeliveryJobData>;

export interface DeliveryQueueOptions {
  readonly connection: ConnectionOptions;
  readonly prefix: string;
  /** Attempts per job, the first included. */
  readonly attempts: number;
  /** First retry delay in ms; the worker's backoff strategy grows it (src/workers/retry-delay.ts). */
  readonly backoffMs: number;
}

/** Completed jobs are only kept for a day (they are on disk); failed ones for replay, bounded. */
export const KEEP_COMPLETED = { age: 24 * 3600, count: 10_000 } as const;
export const KEEP_FAILED = { count: 50_000 } as const;

export function createDeliveryQueue(options: DeliveryQueueOptions): DeliveryQueue {
  return new Queue<DeliveryJobData>(DELIVERY_QUEUE, {
    connection: options.connection,
    prefix: options.prefix,
    defaultJobOptions: {
      attempts: options.attempts,
      backoff: { type: 'retry-delay', delay: options.backoffMs },
      removeOnComplete: KEEP_COMPLETED,
      removeOnFail: KEEP_FAILED,
    },
  });
}
