import { createHash } from 'node:crypto';
import type { IRedisTransaction, Job, JobsOptions } from 'bullmq';
import calculateSlot from 'cluster-key-slot';
import type { DeliveryJobData } from './delivery-job-data.js';

/**
 * The one owner of where a delivery lives in Redis: its `event` + `data.id` pair's digest, the
 * prefix its keys sit under, the dedupe mark (its key, its script, its lifetime), the key
 * through which BullMQ's deduplication hands the mark's answer to the add, and the handled
 * job's write. Nothing outside queue/ builds or reads any of these keys: it asks this module.
 */

/**
 * A pair's digest. Length-prefixed, so no event and id pair spells another's; base64url of
 * SHA-256, so a key stays short whatever the id (an id may be as long as a body).
 */
export function pairDigest(event: string, id: string): string {
  return createHash('sha256').update(`${event.length}:${event}:${id}`).digest('base64url');
}

/** Where a pair's keys live: its shard, the prefix they sit under, and the pair's digest. */
export interface DeliveryPlace {
  /** Its shard's index, 0 to QUEUE_SHARDS - 1. */
  readonly shard: number;
  /** The prefix of the pair's queue: its hash tag puts all of them in one slot on a Cluster. */
  readonly prefix: string;
  readonly digest: string;
}

/** A pair's keys: its place, its dedupe mark, and BullMQ's deduplication keys for it. */
export interface DeliveryPair extends DeliveryPlace {
  /**
   * The service's own mark: the pair's first job's id, kept DEDUPE_TTL_SECONDS. Under the
   * queue's prefix (its slot, which the add's MULTI needs) but outside the queue's own keys, so
   * no BullMQ call (remove, clean, obliterate) deletes it.
   */
  readonly mark: string;
  /** BullMQ's deduplication key for the pair's digest: where the mark hands its answer on. */
  readonly handoff: string;
  /** BullMQ's deduplication key as versions before the mark named it (event and raw id). */
  readonly legacy: string;
}

/** The keys of the deliveries queue under QUEUE_PREFIX, over QUEUE_SHARDS shards. */
export interface DeliveryKeys {
  /** Each shard's prefix, by index: a delivery's keys sit under its shard's. */
  readonly prefixes: readonly string[];
  /** The pair's keys. */
  readonly pairOf: (event: string, id: string) => DeliveryPair;
  /** The pair's place, for what keeps what became of it (the timeline). */
  readonly placeOf: (event: string, id: string) => DeliveryPlace;
}

/** The deliveries queue's name, under each prefix. */
export const DELIVERY_QUEUE = 'deliveries';

/** Redis Cluster's slots. */
const SLOTS = 16_384;

/**
 * Each shard's prefix. One shard keeps QUEUE_PREFIX as it is. Shard n of N gets a hash tag of
 * its own whose slot lies in the n-th of N equal ranges of the slots, so a Cluster whose slots
 * are split evenly holds the shards evenly, and slot migration moves them when primaries are
 * added: QUEUE_PREFIX's tag (or the prefix itself, when it has none) then `.n.i`, with the first
 * i (from 0) that lands in range. Every process computes the same tags from the same settings.
 */
export function shardPrefixes(prefix: string, shards: number): string[] {
  if (shards === 1) return [prefix];
  const tagged = /\{([^{}]+)\}/.exec(prefix);
  const base = tagged?.[1] ?? prefix;
  return Array.from({ length: shards }, (_, n) => {
    const low = Math.floor((n * SLOTS) / shards);
    const high = Math.floor(((n + 1) * SLOTS) / shards);
    for (let i = 0; ; i++) {
      const tag = `${base}.${n}.${i}`;
      const slot = calculateSlot(tag);
      if (slot >= low && slot < high)
        return tagged === null ? `${prefix}{${tag}}` : prefix.replace(tagged[0], `{${tag}}`);
    }
  });
}

/**
 * Each shard's wait list, by index: BullMQ's list where a new delivery waits for a worker (what
 * KEDA's Redis trigger measures; `queue keys` prints them).
 */
export function waitLists(prefix: string, shards: number): string[] {
  return shardPrefixes(prefix, shards).map((shard) => waitListOf(shard, DELIVERY_QUEUE));
}

/** BullMQ's list of a queue's jobs waiting to run (what KEDA's Redis trigger counts). */
export function waitListOf(prefix: string, queue: string): string {
  return `${prefix}:${queue}:wait`;
}

/** A pair's shard: from its digest alone, so a re-send lands where its first copy did. */
const shardOf = (digest: string, shards: number) =>
  Buffer.from(digest, 'base64url').readUInt32BE(0) % shards;

export function deliveryKeys(prefix: string, shards = 1): DeliveryKeys {
  const prefixes = shardPrefixes(prefix, shards);
  const placeOf = (event: string, id: string): DeliveryPlace => {
    const digest = pairDigest(event, id);
    const shard = shardOf(digest, shards);
    return { shard, prefix: prefixes[shard] ?? prefix, digest };
  };
  return {
    prefixes,
    placeOf,
    pairOf: (event, id) => {
      const place = placeOf(event, id);
      const queue = `${place.prefix}:${DELIVERY_QUEUE}`;
      return {
        ...place,
        mark: `${place.prefix}:seen:${place.digest}`,
        handoff: `${queue}:de:${place.digest}`,
        legacy: `${queue}:de:${event}:${id}`,
      };
    },
  };
}

/**
 * How long BullMQ's own deduplication key lives. The mark is what remembers; BullMQ's key only
 * hands the mark's answer to the add that follows it in the same MULTI, so it need not outlive
 * that transaction by much, and does not double the per-delivery cost for days.
 */
const HANDOFF_MS = 10_000;

/** The add's deduplication option: by the pair's digest, answered from the mark. */
export function deduplicationOf(pair: DeliveryPair): Pick<JobsOptions, 'deduplication'> {
  return { deduplication: { id: pair.digest, ttl: HANDOFF_MS } };
}

/**
 * Runs before the add in its MULTI. A pair not seen: the mark is set to the new job's id and the
 * add goes ahead, BullMQ's key deleted so that a hand-off outliving the mark (a re-send in the
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

/** What the mark's script is defined on: a connection, before it makes transactions. */
interface Scripted {
  defineCommand(name: string, definition: { numberOfKeys: number; lua: string }): void;
}

/** Defines the mark's script on a connection (a transaction made from it after copies it). */
export function defineMark(client: Scripted): void {
  client.defineCommand(MARK_COMMAND, { numberOfKeys: 3, lua: MARK });
}

/** Queues the pair's mark on a MULTI, to run before its add (defineMark first). */
export function markPair(
  transaction: IRedisTransaction,
  pair: DeliveryPair,
  jobId: string,
  dedupeTtlSeconds: number,
): void {
  void transaction.runCommand(MARK_COMMAND, [
    pair.mark,
    pair.handoff,
    pair.legacy,
    jobId,
    dedupeTtlSeconds * 1000,
    HANDOFF_MS,
  ]);
}

/** A job's data replaced in the same call as a step of its timeline (handledJobWrite). */
export interface JobDataWrite {
  /** The job's hash. */
  readonly key: string;
  readonly data: string;
  /** A field of the hash to delete with it, '' none. */
  readonly dropField: string;
}

/**
 * The handled job's write: its data becomes `handled` (delivery-job-data.ts's summary), and a
 * provider's delivery drops its spent deduplication id, which a completed job kept a day need
 * not carry. A replay's is kept: BullMQ frees the replay's key by it when the job ends
 * (archive/replay.ts).
 */
export function handledJobWrite(job: Job<DeliveryJobData>, handled: DeliveryJobData): JobDataWrite {
  return {
    key: `${job.queueQualifiedName}:${job.id}`,
    data: JSON.stringify(handled),
    dropField: job.data.replay === undefined ? 'deid' : '',
  };
}
