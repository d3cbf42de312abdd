import {
  Queue,
  SpanKind,
  type ConnectionOptions,
  type IRedisTransaction,
  type JobsOptions,
  TelemetryAttributes,
  type Telemetry,
} from 'bullmq';
import type { Job } from 'bullmq';
import { Cluster } from 'ioredis';
import type { DeliveryJobData } from './delivery-job-data.js';
import { execThenWait, NilExecError, openMulti } from '../redis/replica-wait.js';
import { DELIVERY_QUEUE, deliveryKeys, type DeliveryKeys } from './delivery-keys.js';

/** One queue for every event: the dispatcher picks the handler by job name (= event name). */
export { DELIVERY_QUEUE };

/**
 * Attempts a job may have at the most. The worker, not the receiver, decides how many it gets
 * (DOWNLOAD_ATTEMPTS, applied in jobs/retry-policy.ts): a setting read at enqueue time would
 * be the web process's, and setting it on the workers would do nothing.
 */
export const JOB_ATTEMPTS_CEILING = 100;

/** Commands to run in the add's transaction, before the add; each gets its reply back. */
export type BeforeAdd = (transaction: IRedisTransaction) => void;

type AddedJob = {
  readonly id: string;
  readonly replies: readonly unknown[];
  /** Replicas that acknowledged the add's write in time, when the queue waits for them. */
  readonly acknowledged?: number;
};

/** What a flush answers each add: its commands' replies, and the replicas' acknowledgements. */
type Flushed = { readonly values: unknown[]; readonly acknowledged?: number };

/** An add waiting for the turn's transaction. */
interface PendingAdd {
  readonly job: Job<DeliveryJobData>;
  readonly before: BeforeAdd;
  resolve(flushed: Flushed): void;
  reject(error: unknown): void;
}

/**
 * The deliveries queue: BullMQ's Queue, plus an add that runs in one MULTI with commands of
 * the caller's (the receiver's dedupe mark), so Redis applies both or neither.
 *
 * The adds asked for in one turn of the event loop share one MULTI: a transaction is a new
 * ioredis Pipeline, whose constructor copies every script the connection defines (BullMQ's
 * fifty and ours), and one write and one EXEC per delivery was most of the receiver's cost
 * under load (docs/performance-history.md). Each delivery's commands are still applied with
 * its add or not at all, and each caller gets its own replies and its own error.
 */
export class DeliveryQueue extends Queue<DeliveryJobData> {
  #pending: PendingAdd[] = [];
  /**
   * REDIS_WAIT_REPLICAS: each flush's MULTI is followed, in the same pipeline, by WAIT, so WAIT
   * goes over the connection that wrote the deliveries, to the primary that holds their slot
   * (on a Cluster, the shard's). Undefined: no WAIT.
   */
  replicaWait: { readonly replicas: number; readonly timeoutMs: number } | undefined;
  /** Where each delivery's mark and timeline live, over every shard (delivery-keys.ts). */
  layout: DeliveryKeys = deliveryKeys(this.opts.prefix ?? 'bull');

  /**
   * Adds a job as `add` does (same defaults, same producer span and trace context), after
   * `before`'s commands in the same transaction. Resolves to the id BullMQ answered (another
   * job's, when BullMQ deduplicated) and the replies of `before`'s commands; rejects when any
   * command of its part failed, or the transaction did (a MULTI that Redis refused applied
   * none of them).
   */
  async addAfter(
    name: string,
    data: DeliveryJobData,
    opts: JobsOptions & { readonly jobId: string },
    before: BeforeAdd,
  ): Promise<AddedJob> {
    return await this.trace(
      SpanKind.PRODUCER,
      'add',
      `${this.name}.${name}`,
      async (span, context) => {
        const telemetry = context === undefined ? {} : { telemetry: { metadata: context } };
        const merged = { ...this.jobsOpts, ...opts, ...telemetry };
        const job = new this.Job(this, name, data, merged, opts.jobId);
        const { values, acknowledged } = await new Promise<Flushed>((resolve, reject) => {
          this.#pending.push({ job, before, resolve, reject });
          if (this.#pending.length === 1) setImmediate(() => void this.#flush());
        });
        const id = String(values.at(-1));
        span?.setAttributes({
          [TelemetryAttributes.JobName]: name,
          [TelemetryAttributes.JobId]: id,
        });
        return {
          id,
          replies: values.slice(0, -1),
          ...(acknowledged === undefined ? {} : { acknowledged }),
        };
      },
    );
  }

  /** Sends the turn's adds in one MULTI and hands each caller its part of the replies. */
  async #flush(): Promise<void> {
    const batch = this.#pending;
    this.#pending = [];
    try {
      const client = await this.getBackend().client;
      const wait = this.replicaWait;
      const { transaction, parts } = build(
        wait === undefined ? client : { multi: () => openMulti(client) },
        batch,
      );
      if (parts.length === 0) return;
      // Without WAIT, a MOVED after a failover is ioredis's to follow: every command of its own
      // transaction is redirected alike, so it sends the MULTI again whole and re-reads the slots.
      const { replies, acknowledged } =
        wait === undefined
          ? { replies: nilRefused(await transaction.exec()), acknowledged: undefined }
          : await execThenWait(transaction, wait.replicas, wait.timeoutMs, () =>
              refreshedSlots(client),
            );
      for (const { add, from, to } of parts) {
        const own = replies.slice(from, to);
        const failed = own.find(([error]) => error !== null)?.[0];
        if (failed) add.reject(failed);
        else
          add.resolve({
            values: own.map(([, value]): unknown => value),
            ...(acknowledged === undefined ? {} : { acknowledged }),
          });
      }
    } catch (error: unknown) {
      for (const add of batch) add.reject(error);
    }
  }
}

export interface DeliveryQueueOptions {
  readonly connection: ConnectionOptions;
  /** QUEUE_PREFIX: each shard's queue is under a prefix of its own made from it. */
  readonly prefix: string;
  /** QUEUE_SHARDS. @defaultValue 1 */
  readonly shards?: number;
  /** bullmq-otel, when tracing is on: the add's span, and the context carried into the job. */
  readonly telemetry?: Telemetry | undefined;
  /** REDIS_WAIT_REPLICAS (0: the adds wait for none) and REDIS_WAIT_TIMEOUT_MS. */
  readonly wait?: { readonly redisWaitReplicas: number; readonly redisWaitTimeoutMs: number };
  /** Told each queue's errors (BullMQ repeats its connection's). */
  readonly onError?: (error: unknown) => void;
}

/** The first shard's queue (the only one, with one shard). */
export function createDeliveryQueue(options: DeliveryQueueOptions): DeliveryQueue {
  return createDeliveryQueues({ ...options, shards: 1 })[0];
}

/** One queue per shard, by index, sharing one layout. */
export function createDeliveryQueues(
  options: DeliveryQueueOptions,
): [DeliveryQueue, ...DeliveryQueue[]] {
  const layout = deliveryKeys(options.prefix, options.shards ?? 1);
  const [first = options.prefix, ...others] = layout.prefixes;
  return [first, ...others].map((prefix) => {
    const queue = shardQueue(options, prefix);
    queue.layout = layout;
    const { redisWaitReplicas: replicas = 0, redisWaitTimeoutMs: timeoutMs = 0 } =
      options.wait ?? {};
    queue.replicaWait = replicas > 0 ? { replicas, timeoutMs } : undefined;
    if (options.onError !== undefined) queue.on('error', options.onError);
    return queue;
  }) as [DeliveryQueue, ...DeliveryQueue[]];
}

/**
 * The queue of a pair's shard among each shard's, by index (createDeliveryQueues): where its
 * job, mark and timeline are, and where a retry or a replay of it goes (never a queue no worker
 * serves).
 */
export function queueOf(
  queues: readonly DeliveryQueue[],
  event: string,
  id: string,
): DeliveryQueue {
  const [first] = queues;
  const queue = first === undefined ? undefined : queues[first.layout.placeOf(event, id).shard];
  if (queue === undefined)
    throw new Error(
      `${String(queues.length)} queues given for ${String(first?.layout.prefixes.length)} shards`,
    );
  return queue;
}

function shardQueue(options: DeliveryQueueOptions, prefix: string): DeliveryQueue {
  return new DeliveryQueue(DELIVERY_QUEUE, {
    connection: options.connection,
    prefix,
    ...(options.telemetry === undefined ? {} : { telemetry: options.telemetry }),
    defaultJobOptions: {
      attempts: JOB_ATTEMPTS_CEILING,
      // The delay is the worker's (backoffStrategy in jobs/retry-policy.ts); only the type is stored.
      backoff: { type: 'retry-delay' },
      // Retention is the worker's setting too, not packed into every job.
    },
  });
}

/** Resolves once a Cluster has read its slot map again (at once for one server). */
function refreshedSlots(client: unknown): Promise<void> {
  if (!(client instanceof Cluster)) return Promise.resolve();
  return new Promise((resolve) => {
    // A refresh that fails leaves the map as it was: the next redirection asks again.
    client.refreshSlotsCache(() => {
      resolve();
    });
  });
}

/** A transaction's replies; nil (nothing applied) refused, never read as no replies. */
function nilRefused<T>(replies: T[] | null): T[] {
  if (replies === null) throw new NilExecError();
  return replies;
}

/** ioredis's transaction, which counts its queued commands (BullMQ's type does not say so). */
type CountedTransaction = IRedisTransaction & { readonly length: number };

interface Part {
  readonly add: PendingAdd;
  /** Its replies' place among the transaction's. */
  readonly from: number;
  readonly to: number;
}

/**
 * One MULTI holding each add's commands, and where each add's replies are. An add BullMQ
 * refuses while it is queued (its options, its data) is rejected alone and the transaction is
 * built again without it: its `before` commands must not run without its add.
 */
function build(
  client: { multi(): IRedisTransaction },
  batch: PendingAdd[],
): { transaction: IRedisTransaction; parts: Part[] } {
  for (;;) {
    const transaction = client.multi() as CountedTransaction;
    const parts: Part[] = [];
    // The MULTI itself is the first queued command; the replies start after it.
    const base = transaction.length;
    const refused = batch.findIndex((add) => {
      const from = transaction.length - base;
      try {
        add.before(transaction);
        const queued = transaction.length;
        // Queued synchronously (as BullMQ's own addJobs relies on); its answer, or its error,
        // comes back in exec's replies.
        const adding = add.job.addJob(transaction).catch((error: unknown) => error);
        if (transaction.length === queued) {
          // Refused before its command was queued: the promise holds the reason.
          void adding.then((reason) => {
            add.reject(reason);
          });
          return true;
        }
      } catch (error: unknown) {
        add.reject(error);
        return true;
      }
      parts.push({ add, from, to: transaction.length - base });
      return false;
    });
    if (refused === -1) return { transaction, parts };
    batch.splice(refused, 1);
  }
}
