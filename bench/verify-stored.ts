import type { Redis } from 'ioredis';
import { DELIVERY_QUEUE } from '../src/queue/delivery-queue.js';
import { deliveryKeys } from '../src/queue/delivery-keys.js';

/**
 * Counts accepted deliveries that are NOT in Redis: for each id, the dedupe mark must point at a
 * job whose hash exists. Pipelined in batches, one round trip per thousand ids.
 */
export async function countLost(
  redis: Redis,
  prefix: string,
  ids: readonly string[],
): Promise<number> {
  let lost = 0;
  for (let i = 0; i < ids.length; i += 1000) {
    const batch = ids.slice(i, i + 1000);
    const jobIds = await redis.mget(
      ...batch.map((id) => deliveryKeys(prefix).pairOf('audio.ready', id).mark),
    );
    const exists = redis.pipeline();
    for (const jobId of jobIds) exists.exists(`${prefix}:${DELIVERY_QUEUE}:${jobId ?? 'missing'}`);
    const answers = (await exists.exec()) ?? [];
    lost += answers.filter(([error, count]) => error !== null || count !== 1).length;
  }
  return lost;
}
