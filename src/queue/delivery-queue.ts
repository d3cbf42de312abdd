import {
  Queue,
  SpanKind,
  type ConnectionOptions,
  type IRedisTransaction,
  type JobsOptions,
  TelemetryAttributes,
  type Telemetry,
} from 'bullmq';
import type { Delivery } from '../provider-spec/delivery.js';

/** One queue for every event: the dispatcher picks the handler by job name (= event name). */
export const DELIVERY_QUEUE = 'deliveries';

/**
 * Attempts a job may have at the most. The worker, not the receiver, decides how many it gets
 * (DOWNLOAD_ATTEMPTS, applied in jobs/retry-policy.ts): a setting read at enqueue time would
 * be the web process's, and setting it on the workers would do nothing.
 */
export const JOB_ATTEMPTS_CEILING = 100;

export interface DeliveryJobData {
  /**
   * The body as the provider sent it (its UTF-8 text); the worker parses it and checks it
   * against the event's schema. Not a re-serialised object: `[1e20,…]` grew 4.6 times as one
   * (1e20 is written as 21 digits), in a Redis that refuses every delivery once it is full.
   * Absent once the job is handled (`handled`).
   */
  readonly body?: string;
  /** The parsed delivery, as versions before `body` queued it: still read, never written. */
  readonly event?: Delivery;
  /** When this receiver accepted the delivery, ISO 8601 (a replay keeps the original's). */
  readonly receivedAt: string;
  /**
   * Set, in place of `body`, once the job's handling, forwarding and archiving are done: a
   * completed job is kept a day for the dashboard, and what it keeps is this record, not the
   * payload (the archive has that). A job run again after this (its worker died before BullMQ
   * marked it completed) has nothing left to do.
   */
  readonly handled?: HandledRecord;
  /**
   * Set when a run forwarded the message and then failed for its archive write alone: the runs
   * after it do not forward it again (run-delivery.ts).
   */
  readonly forwarded?: true;
  /** Set on a job `replay` made (archive/replay.ts): never archived again. */
  readonly replay?: {
    /** The job that first handled the delivery. */
    readonly of: string;
    /** When the replay was asked for, ISO 8601. */
    readonly at: string;
  };
}

/** What a handled job keeps: at most about 300 bytes, whatever the body (handledRecord). */
export interface HandledRecord {
  readonly event: string;
  /** data.id, cut to its first 200 characters (an id may be as long as the body). */
  readonly id: string;
  readonly at: string;
}

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

/** The job data the receiver queues for a body it accepted. */
export function deliveryJobData(body: string, receivedAt: Date): DeliveryJobData {
  return { body, receivedAt: receivedAt.toISOString() };
}

/** The delivery a job carries, or undefined for a job already handled. */
export function deliveryOf(data: DeliveryJobData): Delivery | undefined {
  if (data.body !== undefined) return JSON.parse(data.body) as Delivery;
  return data.event;
}

/** An id as records and log lines show it: its first 200 characters (an id may be 1 MB). */
export function shownId(id: string): string {
  return id.length <= 200 ? id : Array.from(id).slice(0, 200).join('');
}

/** The item's data.id (a handled job's record has its first 200 characters). */
export function jobItemId(data: DeliveryJobData): string | undefined {
  if (data.handled !== undefined) return data.handled.id;
  try {
    const id: unknown = deliveryOf(data)?.data.id;
    return typeof id === 'string' ? id : undefined;
  } catch {
    return undefined; // not JSON: a job from elsewhere than our receiver (dispatch refuses it)
  }
}

/**
 * A payload longer than this is replaced, once its job has done its work, by a record
 * (handledData): one more Redis call. A shorter one costs less to keep than that call: a job
 * completed with a 512-byte body holds under 2 KB (MEMORY USAGE), and the provider's own
 * bodies are about 200 to 400 bytes, so the common job pays nothing.
 */
export const PAYLOAD_KEPT_BELOW = 512;

/** Whether a job done with `payload` should replace it by a record before it completes. */
export function payloadTooBigToKeep(payload: string | undefined): boolean {
  return payload !== undefined && payload.length > PAYLOAD_KEPT_BELOW;
}

/** The data a handled job keeps in place of its payload. */
export function handledData(data: DeliveryJobData, delivery: Delivery): DeliveryJobData {
  const { receivedAt, replay } = data;
  return {
    receivedAt,
    ...(replay === undefined ? {} : { replay }),
    handled: {
      event: delivery.event,
      id: shownId(delivery.data.id),
      at: new Date().toISOString(),
    },
  };
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
