import {
  Queue,
  SpanKind,
  type ConnectionOptions,
  type IRedisTransaction,
  type JobsOptions,
  TelemetryAttributes,
  type Telemetry,
} from 'bullmq';
import type { DeliveryJobData } from './delivery-job-data.js';

/** One queue for every event: the dispatcher picks the handler by job name (= event name). */
export const DELIVERY_QUEUE = 'deliveries';

/**
 * Attempts a job may have at the most. The worker, not the receiver, decides how many it gets
 * (DOWNLOAD_ATTEMPTS, applied in jobs/retry-policy.ts): a setting read at enqueue time would
 * be the web process's, and setting it on the workers would do nothing.
 */
export const JOB_ATTEMPTS_CEILING = 100;

/** Commands to run in the add's transaction, before the add; each gets its reply back. */
export type BeforeAdd = (transaction: IRedisTransaction) => void;

/**
 * The deliveries queue: BullMQ's Queue, plus an add that runs in one MULTI with commands of
 * the caller's (the receiver's dedupe mark), so Redis applies both or neither.
 */
export class DeliveryQueue extends Queue<DeliveryJobData> {
  /**
   * Adds a job as `add` does (same defaults, same producer span and trace context), after
   * `before`'s commands in the same transaction. Resolves to the id BullMQ answered (another
   * job's, when BullMQ deduplicated) and the replies of `before`'s commands; rejects when any
   * command of the transaction failed (a MULTI that Redis refused applied none of them).
   */
  async addAfter(
    name: string,
    data: DeliveryJobData,
    opts: JobsOptions & { readonly jobId: string },
    before: BeforeAdd,
  ): Promise<{ readonly id: string; readonly replies: readonly unknown[] }> {
    return await this.trace(
      SpanKind.PRODUCER,
      'add',
      `${this.name}.${name}`,
      async (span, context) => {
        const telemetry = context === undefined ? {} : { telemetry: { metadata: context } };
        const merged = { ...this.jobsOpts, ...opts, ...telemetry };
        const job = new this.Job(this, name, data, merged, opts.jobId);
        const client = await this.getBackend().client;
        const transaction = client.multi();
        before(transaction);
        // Queued synchronously on the transaction (as BullMQ's own addBulk relies on); the
        // answer comes from exec.
        void job.addJob(transaction);
        const replies = (await transaction.exec()) ?? [];
        const failed = replies.find(([error]) => error !== null)?.[0];
        if (failed) throw failed;
        const values = replies.map(([, value]): unknown => value);
        const id = String(values.at(-1));
        span?.setAttributes({
          [TelemetryAttributes.JobName]: name,
          [TelemetryAttributes.JobId]: id,
        });
        return { id, replies: values.slice(0, -1) };
      },
    );
  }
}

export interface DeliveryQueueOptions {
  readonly connection: ConnectionOptions;
  readonly prefix: string;
  /** bullmq-otel, when tracing is on: the add's span, and the context carried into the job. */
  readonly telemetry?: Telemetry | undefined;
}

export function createDeliveryQueue(options: DeliveryQueueOptions): DeliveryQueue {
  return new DeliveryQueue(DELIVERY_QUEUE, {
    connection: options.connection,
    prefix: options.prefix,
    ...(options.telemetry === undefined ? {} : { telemetry: options.telemetry }),
    defaultJobOptions: {
      attempts: JOB_ATTEMPTS_CEILING,
      // The delay is the worker's (backoffStrategy in jobs/retry-policy.ts); only the type is stored.
      backoff: { type: 'retry-delay' },
      // Retention is the worker's setting too, not packed into every job.
    },
  });
}
