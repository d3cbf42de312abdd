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

export function createDeliveryQueue(options: DeliveryQueueOptions): DeliveryQueue {
  return new Queue<DeliveryJobData>(DELIVERY_QUEUE, {
    connection: options.connection,
    prefix: options.prefix,
    defaultJobOptions: {
      attempts: options.attempts,
      backoff: { type: 'retry-delay', delay: options.backoffMs },
      // Retention is the worker's setting (start-workers.ts), not packed into every job.
    },
  });
}
