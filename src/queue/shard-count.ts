import { createCliRedis, dropConnection, type RedisConfig } from '../redis/connections.js';
import type { RedisConnection } from '../redis/connections.js';
import { DeadlineError, withDeadline } from '../util/deadline.js';

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
 * when it was the first). One SET NX GET on Redis 7 and later; Redis before 7 refuses NX with GET
 * as a syntax error, and is asked SET NX then GET, which answers the same (a count is never
 * changed once set, only set where none is).
 */
export async function recordShardCount(
  redis: RedisConnection,
  { queuePrefix, queueShards }: ShardCountSettings,
): Promise<string> {
  const key = shardCountKey(queuePrefix);
  const count = String(queueShards);
  try {
    return (await redis.set(key, count, 'NX', 'GET')) ?? count;
  } catch (error: unknown) {
    if (!(error instanceof Error && /syntax error/i.test(error.message))) throw error;
    await redis.set(key, count, 'NX');
    return (await redis.get(key)) ?? count;
  }
}

/** A refusal when the recorded count is not this process's. */
export function refuseOtherCount(recorded: string, { queueShards }: ShardCountSettings): void {
  if (recorded !== String(queueShards))
    throw new ShardCountError(
      `QUEUE_SHARDS is ${queueShards} but this queue was started with QUEUE_SHARDS=${recorded}: start every process with ${recorded}, or change it by the drain-and-switch of docs/operations.md ("Changing QUEUE_SHARDS")`,
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
 * A Redis that does not answer within `ms` is not checked here: `unchecked` is told why (the
 * caller logs it; the roles' connections report the outage). Any other error is thrown.
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
      // Not reached (no connection, or no answer in time): left to the running roles.
      if (!connected || error instanceof DeadlineError) {
        const reason = cause instanceof Error ? cause.message : String(cause ?? error);
        unchecked(`QUEUE_SHARDS not checked against the recorded count: Redis: ${reason}`);
        return undefined;
      }
      throw error;
    });
    if (recorded !== undefined) refuseOtherCount(recorded, config);
  } finally {
    dropConnection(redis);
  }
}
