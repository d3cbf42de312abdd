import { createCliRedis, dropConnection, type RedisConfig } from '../redis/connections.js';
import type { RedisConnection } from '../redis/connections.js';
import { withDeadline } from '../util/deadline.js';

/** A process started with another QUEUE_SHARDS than the queue's: refused, one line. */
export class ShardCountError extends Error {
  override name = 'ShardCountError';
}

/** Where the queue's shard count is kept: under QUEUE_PREFIX itself (its slot, not a shard's). */
export const shardCountKey = (prefix: string) => `${prefix}:queue-shards`;

/** The count's settings: QUEUE_PREFIX and QUEUE_SHARDS. */
export interface ShardCountSettings {
  readonly queuePrefix: string;
  readonly queueShards: number;
}

/**
 * Records QUEUE_SHARDS when the queue has no count yet and answers the count recorded (this one,
 * when it was the first). The count is read first: a Redis that refuses writes (full, a replica
 * during a failover) still answers a read, so a process that finds its count starts whatever
 * else Redis refuses. Only when none is recorded is it set, NX: the first process's count is kept
 * (a count is never changed once set).
 */
export async function recordShardCount(
  redis: RedisConnection,
  { queuePrefix, queueShards }: ShardCountSettings,
): Promise<string> {
  const key = shardCountKey(queuePrefix);
  const recorded = await redis.get(key);
  if (recorded !== null) return recorded;
  await redis.set(key, String(queueShards), 'NX');
  return (await redis.get(key)) ?? String(queueShards);
}

/** A refusal when the recorded count is not this process's. */
export function refuseOtherCount(recorded: string, { queueShards }: ShardCountSettings): void {
  if (recorded === String(queueShards)) return;
  // What Redis holds is shown as a count, or quoted and cut: it is printed on a terminal.
  const shown = /^\d{1,6}$/.test(recorded) ? recorded : JSON.stringify(recorded.slice(0, 20));
  throw new ShardCountError(
    `QUEUE_SHARDS is ${queueShards} but this queue was started with QUEUE_SHARDS=${shown}: start every process with ${shown}, or change it by the drain-and-switch of docs/operations.md ("Changing QUEUE_SHARDS")`,
  );
}

/**
 * The CLI's check: refuses a QUEUE_SHARDS other than the one recorded, as a service process is
 * refused; it records none (a queue with no count yet is the service's to start).
 */
export async function checkRecordedShardCount(
  redis: RedisConnection,
  settings: ShardCountSettings,
): Promise<void> {
  const recorded = await redis.get(shardCountKey(settings.queuePrefix));
  if (recorded !== null) refuseOtherCount(recorded, settings);
}

/**
 * At start: records QUEUE_SHARDS when the queue has no count yet, and refuses a count other than
 * the one recorded. A delivery's shard follows from the count, so processes that disagree would
 * look for a re-send's dedupe mark in another slot than its first copy's, and answer it as new.
 * A key that holds no count (another type) is refused in one line. Anything else that keeps the
 * check from an answer (no connection, no answer within `ms`, a refusal: a full Redis, a
 * failover under way) leaves it unchecked, `unchecked` told why: a process that cannot start
 * while Redis is full could never drain it (the roles' connections report the outage).
 */
export async function checkShardCount(
  config: RedisConfig & ShardCountSettings,
  ms: number,
  unchecked: (reason: string) => void = () => undefined,
): Promise<void> {
  const redis = createCliRedis(config);
  // ioredis reports why it cannot connect as an event, then rejects vaguely: keep the cause.
  let cause: unknown;
  redis.on('error', (error: unknown) => (cause ??= error));
  try {
    let connected = false;
    const recorded = await withDeadline(
      redis.connect().then(async () => {
        connected = true;
        return await recordShardCount(redis, config);
      }),
      ms,
      'Redis',
    ).catch((error: unknown) => {
      if (connected && error instanceof Error && /^WRONGTYPE/.test(error.message))
        throw new ShardCountError(
          `${shardCountKey(config.queuePrefix)} in Redis holds no count (${messageOf(error)}): delete it, then start again`,
        );
      const reason = messageOf(connected ? error : (cause ?? error));
      unchecked(`QUEUE_SHARDS not checked against the recorded count: Redis: ${reason}`);
      return undefined;
    });
    if (recorded !== undefined) refuseOtherCount(recorded, config);
  } finally {
    dropConnection(redis);
  }
}

/** An error's first line. */
const messageOf = (error: unknown) =>
  (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '';
