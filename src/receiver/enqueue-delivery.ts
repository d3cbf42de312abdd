import { randomUUID } from 'node:crypto';
import type { RedisSettings } from '../config/redis-settings.js';
import type { RedisConnection } from '../redis/connections.js';
import { webStoreDeadlineMs } from '../redis/connections.js';
import { withDeadline } from '../util/deadline.js';
import type { WriteGate } from '../redis/write-gate.js';
import type { Delivery } from '../provider-spec/delivery.js';
import { deliveryJobData, type DeliveryJobData } from '../queue/delivery-job-data.js';
import { type DeliveryQueue } from '../queue/delivery-queue.js';
import { deduplicationOf, defineMark, markPair } from '../queue/delivery-keys.js';
import { defineTimelineCommands, type DeliveryTimeline } from '../history/delivery-timeline.js';
import { classifyEnqueueError, EnqueueUnavailableError } from './enqueue-errors.js';

export interface EnqueueResult {
  readonly jobId: string;
  /** True when the same `event` + `data.id` was accepted within the dedupe window. */
  readonly duplicate: boolean;
  /** Replicas that acknowledged its write in time, when REDIS_WAIT_REPLICAS asks for any. */
  readonly acknowledged?: number;
}

/**
 * Stores one delivery: resolves once it is in Redis (and on the replicas REDIS_WAIT_REPLICAS
 * asks for), or throws EnqueueUnavailableError (retry later) or UnqueueableDeliveryError (never).
 */
export type QueueDelivery = (
  delivery: Delivery,
  body: string,
  /** Which of WEBHOOK_SECRETS verified it, by index (0: the first), for its timeline. */
  secret?: number,
  /** Its W3C `traceparent`, which its job carries to its forwards (telemetry/trace-context.ts). */
  traceparent?: string,
) => Promise<EnqueueResult>;

/**
 * What a queued delivery costs Redis, an upper bound: its body rounded up to the allocator's
 * size class (jemalloc's classes are up to 25 % apart; a large body also keeps the slack of the
 * query buffer it arrived in), plus the job's fields, its mark and its event, and its timeline
 * (under 512 bytes when it starts). Counting less let a burst between two readings of
 * INFO memory carry Redis past the reserve (docs/capacity.md).
 */
const storedBytes = (bodyBytes: number) => Math.ceil(bodyBytes * 1.25) + 2048 + 512;

/**
 * The web side's one way to queue a delivery, and the one owner of its deadline: the queue's
 * connection must be up (a request made while it is down fails at once instead of queuing), and
 * the whole enqueue, replica acknowledgements included, must answer within the web connection's
 * command timeout. Commands queued behind a stalled pipeline each get ioredis's own timeout
 * only once sent, which let a paused Redis hold requests past it; this bounds the request.
 */
export function createQueueDelivery(
  /** Each shard's queue, by index (createDeliveryQueues). */
  queues: readonly [DeliveryQueue, ...DeliveryQueue[]],
  redis: RedisConnection,
  config: Pick<RedisSettings, 'dedupeTtlSeconds' | 'redisWaitReplicas' | 'redisWaitTimeoutMs'>,
  /** Holds deliveries back while Redis may evict, is in the workers' reserve, or refuses. */
  gate?: WriteGate,
  /** Where the inspector reads what became of it: written in the same transaction. */
  timeline?: DeliveryTimeline,
): QueueDelivery {
  const deadlineMs = webStoreDeadlineMs(config);
  return async (delivery, body, secret, traceparent) => {
    if (redis.status !== 'ready') throw new EnqueueUnavailableError('Redis is not connected');
    if (gate?.holding !== undefined) throw new EnqueueUnavailableError(gate.detail);
    const received =
      timeline === undefined
        ? undefined
        : { timeline, detail: receivedDetail(secret, body, traceparent) };
    const data = deliveryJobData(body, new Date(), traceparent);
    const added = enqueueDelivery(queues, delivery, data, config.dedupeTtlSeconds, received);
    // Without replicas to wait for, the add is the whole enqueue: no step added per delivery.
    const stored = config.redisWaitReplicas > 0 ? added.then(confirmed(config)) : added;
    try {
      const result = await withDeadline(stored, deadlineMs, 'Redis');
      if (!result.duplicate) gate?.wrote(storedBytes(body.length));
      return result;
    } catch (error: unknown) {
      gate?.refused(error);
      throw classifyEnqueueError(error);
    }
  };
}

/**
 * The `received` step's detail: which secret verified it, its size and its trace id, the id in
 * base64url (22 characters, not 32 hex: the timeline is kept for the archive's retention).
 */
const receivedDetail = (secret: number | undefined, body: string, traceparent?: string) =>
  `${secret ?? 0} ${Buffer.byteLength(body)}${traceparent === undefined ? '' : ` ${Buffer.from(traceparent.slice(3, 35), 'hex').toString('base64url')}`}`;

/**
 * Passes the result on once enough replicas acknowledged it: the queue sends WAIT after the
 * MULTI that stored it, over the same connection (queue/delivery-queue.ts).
 */
function confirmed({
  redisWaitReplicas,
}: Pick<RedisSettings, 'redisWaitReplicas'>): (result: EnqueueResult) => EnqueueResult {
  return (result) => {
    const acknowledged = result.acknowledged ?? 0;
    if (acknowledged < redisWaitReplicas) {
      throw new EnqueueUnavailableError(
        `${acknowledged} of ${redisWaitReplicas} replicas acknowledged in time; the delivery may be stored, so a retry may be a duplicate`,
      );
    }
    return result;
  };
}

/** Connections the mark's and the timeline's scripts are defined on, before any transaction. */
const defined = new WeakSet<object>();

/**
 * Stores the body as sent (`jobData`; `delivery`, its parse, names the pair) and the pair's dedupe mark in
 * ONE transaction: no moment exists in which a delivery is marked seen but not queued, so a
 * crash can never swallow one. The mark is the service's own key, outside BullMQ's job
 * lifecycle: a job removed or cleaned by an operator leaves it, so the provider's retry of that
 * delivery is still answered "duplicate" and no handler runs twice. A fresh jobId per call tells
 * the outcome: BullMQ answers the earlier job's id when it deduplicated.
 */
async function enqueueDelivery(
  queues: readonly [DeliveryQueue, ...DeliveryQueue[]],
  delivery: Delivery,
  jobData: DeliveryJobData,
  dedupeTtlSeconds: number,
  received?: { readonly timeline: DeliveryTimeline; readonly detail: string },
): Promise<EnqueueResult> {
  const jobId = randomUUID();
  const { event, data } = delivery;
  const [first] = queues;
  const pair = first.layout.pairOf(event, data.id);
  // The mark, the job and the timeline share the shard's slot: one MULTI holds them.
  const queue = queues[pair.shard] ?? first;
  const client = await queue.getBackend().client;
  if (!defined.has(client)) {
    defineMark(client);
    defineTimelineCommands(client);
    defined.add(client);
  }
  const added = await queue.addAfter(
    event,
    jobData,
    { jobId, ...deduplicationOf(pair) },
    (transaction) => {
      markPair(transaction, pair, jobId, dedupeTtlSeconds);
      // After the mark, which it reads: a new delivery's timeline starts, a re-send is counted.
      received?.timeline.received(
        transaction,
        pair,
        jobId,
        { event, id: data.id },
        received.detail,
      );
    },
  );
  const { acknowledged } = added;
  return {
    jobId: added.id,
    duplicate: added.id !== jobId,
    ...(acknowledged === undefined ? {} : { acknowledged }),
  };
}
