import { Queue, type ConnectionOptions, type Telemetry } from 'bullmq';
import type { Delivery } from '../webhooks/define-event.js';

/** One queue for every event: the dispatcher picks the handler by job name (= event name). */
export const DELIVERY_QUEUE = 'deliveries';

/**
 * Attempts a job may have at the most. The worker, not the receiver, decides how many it gets
 * (DOWNLOAD_ATTEMPTS, applied in workers/retry-policy.ts): a setting read at enqueue time would
 * be the web process's, and setting it on the workers would do nothing.
 */
export const JOB_ATTEMPTS_CEILING = 100;

export interface DeliveryJobData {
  /** As the receiver parsed it; the worker checks it again against the event's schema. */
  readonly event: Delivery;
  /** When this receiver accepted the delivery, ISO 8601 (a replay keeps the original's). */
  readonly receivedAt: string;
  /** Set on a job `replay` made (archive/replay.ts): never archived again. */
  readonly replay?: {
    /** The job that first handled the delivery. */
    readonly of: string;
    /** When the replay was asked for, ISO 8601. */
    readonly at: string;
  };
}

export type DeliveryQueue = Queue<DeliveryJobData>;

export interface DeliveryQueueOptions {
  readonly connection: ConnectionOptions;
  readonly prefix: string;
  /** bullmq-otel, when tracing is on: the add's span, and the context carried into the job. */
  readonly telemetry?: Telemetry | undefined;
}

export function createDeliveryQueue(options: DeliveryQueueOptions): DeliveryQueue {
  return new Queue<DeliveryJobData>(DELIVERY_QUEUE, {
    connection: options.connection,
    prefix: options.prefix,
    ...(options.telemetry === undefined ? {} : { telemetry: options.telemetry }),
    defaultJobOptions: {
      attempts: JOB_ATTEMPTS_CEILING,
      // The delay is the worker's (backoffStrategy in retry-policy.ts); only the type is stored.
      backoff: { type: 'retry-delay' },
      // Retention is the worker's setting too, not packed into every job.
    },
  });
}
