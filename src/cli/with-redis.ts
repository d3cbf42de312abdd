import type { Config } from '../settings.js';
import {
  createCliRedis,
  dropConnection,
  redisTarget,
  type RedisConnection,
} from '../redis/connections.js';
import { messageOf, OperationalError } from './cli-errors.js';
import { checkRecordedShardCount } from '../queue/shard-count.js';

/**
 * One connection that gives up at once: an unreachable Redis is one clear line, not a hang. For
 * a command that reads the queue (`queue`, the default), a QUEUE_SHARDS other than the queue's
 * recorded count is refused (ShardCountError); the provider's commands never read it.
 */
export async function withRedis<T>(
  config: Config,
  work: (redis: RedisConnection) => Promise<T>,
  { queue = true } = {},
): Promise<T> {
  const redis = createCliRedis(config);
  // ioredis reports the cause (ECONNREFUSED, ENOTFOUND) as an event, then rejects vaguely.
  let cause: unknown;
  redis.on('error', (error: unknown) => (cause ??= error));
  try {
    await redis.connect();
  } catch (error: unknown) {
    dropConnection(redis);
    const reason = messageOf(cause ?? error);
    throw new OperationalError(`cannot reach Redis at ${redisTarget(config)}: ${reason}`);
  }
  try {
    // A CLI started with another QUEUE_SHARDS would read and write other shards' queues.
    if (queue) await checkRecordedShardCount(redis, config);
    return await work(redis);
  } finally {
    await redis.quit().catch(() => undefined);
  }
}
