import { randomUUID } from 'node:crypto';
import type { Config } from '../config/config.js';
import type { RedisConnection } from '../redis/connections.js';
import { webStoreDeadlineMs } from '../redis/connections.js';
import { withDeadline } from '../util/deadline.js';
import { createReplicaWait } from '../redis/replica-wait.js';
import type { Delivery } from '../webhooks/delivery.js';
import { deliveryJobData, type DeliveryQueue } from './delivery-queue.js';
import { classifyStoreError, StorageUnavailableError } from './store-errors.js';

export interface EnqueueResult {
  readonly jobId: string;
  /** True when the same `event` + `data.id` was accepted within the dedupe window. */
  readonly duplicate: boolean;
}

/**
 * Stores one delivery: resolves once it is in Redis (and on the replicas REDIS_WAIT_REPLICAS
 * asks for), or throws StorageUnavailableError (retry later) or UnstorableDeliveryError (never).
 */
export type StoreDelivery = (delivery: Delivery, body: string) => Promise<EnqueueResult>;

/**
 * The web side's one way to store a delivery, and the one owner of its deadline: the queue's
 * connection must be up (a request made while it is down fails at once instead of queuing), and
 * the whole store, replica acknowledgements included, must answer within the web connection's
 * command timeout. Commands queued behind a stalled pipeline each get ioredis's own timeout
 * only once sent, which let a paused Redis hold requests for about 2 s; this bounds the request.
 */
export function createDeliveryStore(
  queue: DeliveryQueue,
  redis: RedisConnection,
  config: Pick<Config, 'dedupeTtlSeconds' | 'redisWaitReplicas' | 'redisWaitTimeoutMs'>,
): StoreDelivery {
  const deadlineMs = webStoreDeadlineMs(config);
  const confirm =
    config.redisWaitReplicas > 0
      ? createReplicaWait(redis, config.redisWaitReplicas, config.redisWaitTimeoutMs)
      : undefined;
  return async (delivery, body) => {
    if (redis.status !== 'ready') throw new StorageUnavailableError('Redis is not connected');
    const added = enqueueDelivery(queue, delivery, body, config.dedupeTtlSeconds);
    // Without replicas to wait for, the add is the whole store: no step added per delivery.
    const stored = confirm === undefined ? added : added.then(confirmed(confirm, config));
    try {
      return await withDeadline(stored, deadlineMs, 'Redis');
    } catch (error: unknown) {
      throw classifyStoreError(error);
    }
  };
}

/** Passes the result on once enough replicas acknowledged it (Redis WAIT, group-committed). */
function confirmed(
  confirm: () => Promise<number>,
  { redisWaitReplicas }: Pick<Config, 'redisWaitReplicas'>,
): (result: EnqueueResult) => Promise<EnqueueResult> {
  return async (result) => {
    const acknowledged = await confirm();
    if (acknowledged < redisWaitReplicas) {
      throw new StorageUnavailableError(
        `${acknowledged} of ${redisWaitReplicas} replicas acknowledged in time; the delivery may be stored, so a retry may be a duplicate`,
      );
    }
    return result;
  };
}

/** The dedupe key: the sender re-sends the same event for the same item on every retry. */
export function dedupeId(event: string, id: string): string {
  return `${event}:${id}`;
}

/**
 * Stores the body as sent (`delivery`, its parse, gives the dedupe id) and its dedupe mark in ONE
 * atomic Redis script (BullMQ's deduplication in throttle mode): no moment exists in which a
 * delivery is marked seen but not queued, so a crash can never swallow one. The key outlives the
 * job (removeOnComplete does not clear a key with a ttl), so a retry after processing is still
 * recognised. A fresh jobId per call tells the outcome: BullMQ returns the earlier job's id when
 * it deduplicated.
 */
async function enqueueDelivery(
  queue: DeliveryQueue,
  delivery: Delivery,
  body: string,
  dedupeTtlSeconds: number,
): Promise<EnqueueResult> {
  const jobId = randomUUID();
  const job = await queue.add(delivery.event, deliveryJobData(body, new Date()), {
    jobId,
    deduplication: {
      id: dedupeId(delivery.event, delivery.data.id),
      ttl: dedupeTtlSeconds * 1000,
    },
  });
  return { jobId: job.id ?? jobId, duplicate: job.id !== jobId };
}
