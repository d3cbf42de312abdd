import { createCliRedis, dropConnection, type RedisConfig } from '../redis/connections.js';
import { withDeadline } from '../util/deadline.js';

/** A process started with another QUEUE_SHARDS than the queue's: refused, one line. */
export class ShardCountError extends Error {
  override name = 'ShardCountError';
}

/** Where the queue's shard count is kept: under QUEUE_PREFIX itself (its slot, not a shard's). */
export const shardCountKey = (prefix: string) => `${prefix}:queue-shards`;

/**
 * At start: records QUEUE_SHARDS when the queue has no count yet, and refuses a count other than
 * the one recorded. A delivery's shard follows from the count, so processes that disagree would
 * look for a re-send's dedupe mark in another slot than its first copy's, and answer it as new.
 * A Redis that does not answer within `ms` is not checked here (the roles' connections report it).
 */
export async function checkShardCount(
  config: RedisConfig & { readonly queuePrefix: string; readonly queueShards: number },
  ms: number,
): Promise<void> {
  const redis = createCliRedis(config);
  redis.on('error', () => undefined); // unreachable: the roles' own connections report it
  try {
    const recorded = await withDeadline(
      redis
        .connect()
        .then(() =>
          redis.set(shardCountKey(config.queuePrefix), String(config.queueShards), 'NX', 'GET'),
        ),
      ms,
      'Redis',
    ).catch(() => undefined);
    if (recorded !== undefined && recorded !== null && recorded !== String(config.queueShards))
      throw new ShardCountError(
        `QUEUE_SHARDS is ${config.queueShards} but this queue was started with QUEUE_SHARDS=${recorded}: start every process with ${recorded}, or change it by the drain-and-switch of docs/operations.md ("Changing QUEUE_SHARDS")`,
      );
  } finally {
    dropConnection(redis);
  }
}
