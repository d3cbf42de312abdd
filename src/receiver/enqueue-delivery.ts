import { randomUUID } from 'node:crypto';
import type { Config } from '../config/config.js';
import type { RedisConnection } from '../redis/connections.js';
import { webStoreDeadlineMs } from '../redis/connections.js';
import { withDeadline } from '../util/deadline.js';
import { createReplicaWait } from '../redis/replica-wait.js';
import type { WriteGate } from '../redis/write-gate.js';
import type { Delivery } from '../provider-spec/delivery.js';
import { deliveryJobData, type DeliveryJobData } from '../queue/delivery-job-data.js';
import { type DeliveryQueue } from '../queue/delivery-queue.js';
import {
  defineTimelineCommands,
  markKeyOf,
  pairDigest,
  type DeliveryTimeline,
} from '../records/delivery-timeline.js';
import { classifyEnqueueError, EnqueueUnavailableError } from './enqueue-errors.js';

export interface EnqueueResult {
  readonly jobId: string;
  /** True when the same `event` + `data.id` was accepted within the dedupe window. */
  readonly duplicate: boolean;
}

/**
 * Stores one delivery: resolves once it is in Redis (and on the replicas REDIS_WAIT_REPLICAS
 * asks for), or throws EnqueueUnavailableError (retry later) or UnqueueableDeliveryError (never).
 */
export type StoreDelivery = (
  delivery: Delivery,
  body: string,
  /** Which of WEBHOOK_SECRETS verified it, by index (0: the first), for its timeline. */
  secret?: number,
  /** Its W3C `traceparent`, which its job carries to its forwards (telemetry/trace-context.ts). */
  traceparent?: string,
) => Promise<EnqueueResult>;

/**
 * The web side's one way to store a delivery, and the one owner of its deadline: the queue's
 * connection must be up (a request made while it is down fails at once instead of queuing), and
 * the whole store, replica acknowledgements included, must answer within the web connection's
 * command timeout. Commands queued behind a stalled pipeline each get ioredis's own timeout
 * only once sent, which let a paused Redis hold requests for about 2 s; this bounds the request.
 */
/**
 * What a queued delivery costs Redis, an upper bound: its body rounded up to the allocator's
 * size class (jemalloc's classes are up to 25 % apart; a large body also keeps the slack of the
 * query buffer it arrived in), plus the job's fields, its mark and its event, and its timeline
 * record (under 512 bytes when it starts). Counting less let a burst between two readings of
 * INFO memory carry Redis past the reserve (docs/capacity.md).
 */
const storedBytes = (bodyBytes: number) => Math.ceil(bodyBytes * 1.25) + 2048 + 512;

export function createDeliveryStore(
  queue: DeliveryQueue,
  redis: RedisConnection,
  config: Pick<Config, 'dedupeTtlSeconds' | 'redisWaitReplicas' | 'redisWaitTimeoutMs'>,
  /** Holds deliveries back while Redis may evict, is in the workers' reserve, or refuses. */
  gate?: WriteGate,
  /** Where the inspector reads what became of it: written in the same transaction. */
  timeline?: DeliveryTimeline,
): StoreDelivery {
  const deadlineMs = webStoreDeadlineMs(config);
  const confirm =
    config.redisWaitReplicas > 0
      ? createReplicaWait(redis, config.redisWaitReplicas, config.redisWaitTimeoutMs)
      : undefined;
  return async (delivery, body, secret, traceparent) => {
    if (redis.status !== 'ready') throw new EnqueueUnavailableError('Redis is not connected');
    if (gate?.holding !== undefined) throw new EnqueueUnavailableError(gate.detail);
    const received =
      timeline === undefined
        ? undefined
        : { timeline, detail: receivedDetail(secret, body, traceparent) };
    const data = deliveryJobData(body, new Date(), traceparent);
    const added = enqueueDelivery(queue, delivery, data, config.dedupeTtlSeconds, received);
    // Without replicas to wait for, the add is the whole store: no step added per delivery.
    const stored = confirm === undefined ? added : added.then(confirmed(confirm, config));
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
 * base64url (22 characters, not 32 hex: the record is kept for the archive's retention).
 */
const receivedDetail = (secret: number | undefined, body: string, traceparent?: string) =>
  `${secret ?? 0} ${Buffer.byteLength(body)}${traceparent === undefined ? '' : ` ${Buffer.from(traceparent.slice(3, 35), 'hex').toString('base64url')}`}`;

/** Passes the result on once enough replicas acknowledged it (Redis WAIT, group-committed). */
function confirmed(
  confirm: () => Promise<number>,
  { redisWaitReplicas }: Pick<Config, 'redisWaitReplicas'>,
): (result: EnqueueResult) => Promise<EnqueueResult> {
  return async (result) => {
    const acknowledged = await confirm();
    if (acknowledged < redisWaitReplicas) {
      throw new EnqueueUnavailableError(
        `${acknowledged} of ${redisWaitReplicas} replicas acknowledged in time; the delivery may be stored, so a retry may be a duplicate`,
      );
    }
    return result;
  };
}

/** Where the receiver remembers that it accepted an `event` + `data.id` pair. */
export interface DedupeKeys {
  /** The service's own mark: the accepted job's id, kept DEDUPE_TTL_SECONDS. */
  readonly mark: string;
  /** The same pair as BullMQ's deduplication id (a digest: an id may be as long as a body). */
  readonly digest: string;
}

/**
 * The sender re-sends the same event for the same item on every retry; that pair is what is
 * accepted once. Length-prefixed, so no event and id pair spells another's, then hashed: the
 * key stays 90 bytes whatever the id. Under the queue prefix (its hash tag, on a Cluster, puts
 * the mark in the queue's slot, which a MULTI needs) but outside the queue's own keys, so no
 * BullMQ call (remove, clean, obliterate) deletes it.
 */
export function dedupeKeys(prefix: string, event: string, id: string): DedupeKeys {
  const digest = pairDigest(event, id);
  return { mark: markKeyOf(prefix, digest), digest };
}

/**
 * How long BullMQ's own deduplication key lives. The mark is what remembers; BullMQ's key only
 * hands the mark's answer to the add that follows it in the same MULTI, so it need not outlive
 * that transaction by much, and does not double the per-delivery cost for days.
 */
const HANDOFF_MS = 10_000;

/**
 * Runs before the add in its MULTI. A pair not seen: the mark is set to the new job's id and the
 * add goes ahead, BullMQ's key deleted so that a handoff outliving the mark (a re-send in the
 * mark's last seconds) does not answer for it: the mark alone decides. A pair seen: BullMQ's deduplication key is set to the job the mark names, so
 * the add that follows deduplicates to it, whether or not that job (or BullMQ's key, which
 * removing a job deletes) still exists. A BullMQ key written before the mark existed (a receiver
 * of an earlier version) counts as seen, and becomes a mark.
 * KEYS: mark, BullMQ's key, BullMQ's key as earlier versions named it. ARGV: new job id, mark
 * ttl (ms), handoff ttl (ms). Returns 1 when the pair was seen.
 */
const MARK = `
local held = redis.call('GET', KEYS[1])
if not held then
  held = redis.call('GET', KEYS[3])
  if not held then
    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
    redis.call('DEL', KEYS[2])
    return 0
  end
  local left = redis.call('PTTL', KEYS[3])
  redis.call('SET', KEYS[1], held, 'PX', left > 0 and left or ARGV[2])
end
redis.call('SET', KEYS[2], held, 'PX', ARGV[3])
return 1`;

/** The script's name on the queue's connection. */
const MARK_COMMAND = 'markDelivery';
/** Connections the script is defined on: before a transaction is made, which copies them. */
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
  queue: DeliveryQueue,
  delivery: Delivery,
  jobData: DeliveryJobData,
  dedupeTtlSeconds: number,
  received?: { readonly timeline: DeliveryTimeline; readonly detail: string },
): Promise<EnqueueResult> {
  const jobId = randomUUID();
  const { event, data } = delivery;
  const keys = dedupeKeys(queue.opts.prefix ?? 'bull', event, data.id);
  const legacy = `${queue.qualifiedName}:de:${event}:${data.id}`;
  const client = await queue.getBackend().client;
  if (!defined.has(client)) {
    client.defineCommand(MARK_COMMAND, { numberOfKeys: 3, lua: MARK });
    defineTimelineCommands(client);
    defined.add(client);
  }
  const added = await queue.addAfter(
    event,
    jobData,
    { jobId, deduplication: { id: keys.digest, ttl: HANDOFF_MS } },
    (transaction) => {
      transaction.runCommand(MARK_COMMAND, [
        keys.mark,
        `${queue.qualifiedName}:de:${keys.digest}`,
        legacy,
        jobId,
        dedupeTtlSeconds * 1000,
        HANDOFF_MS,
      ]);
      // After the mark, which it reads: a new delivery's record starts, a re-send is counted.
      received?.timeline.received(
        transaction,
        keys,
        jobId,
        { event, id: data.id },
        received.detail,
      );
    },
  );
  return { jobId: added.id, duplicate: added.id !== jobId };
}
